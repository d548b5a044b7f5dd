// The process contract: the names by which the plugin, `dlstage stage`,
// the stager, the mount holder, `dlstage status` and the job find each
// other.  Each is spelled here once; a change here is a change for every
// party at the same time (and for jobs and sites: the variables and paths
// are documented in dlstage(1) and spank-dlstage(8)).
//
// The stager's tuning knobs (DLSTAGE_CHUNK_SIZE, DLSTAGE_WINDOW, ...) are
// named once with their rules in config/stager_tuning.cpp.
#pragma once

namespace dlstage {

// --- environment -----------------------------------------------------------
// The job sees DLSTAGE_<NAME> (dataset_env_name) and DLSTAGE_DATASETS.
inline constexpr const char* kDatasetEnvPrefix = "DLSTAGE_";
inline constexpr const char* kDatasetsVar = "DLSTAGE_DATASETS";  // staged names, comma-separated

// The plugin to `dlstage stage`: the job's request and the configuration.
inline constexpr const char* kStageDataVar = "DLSTAGE_STAGE_DATA";
inline constexpr const char* kConfigVar = "DLSTAGE_CONFIG";
// Submit-time source facts, for the prolog (spank/source_facts_env.hpp).
inline constexpr const char* kFactsVar = "DLSTAGE_FACTS";
// "1" on dlstage's own job steps (stager, mount holder): the plugin
// neither checks nor stages there again.
inline constexpr const char* kStagerStepVar = "DLSTAGE_STAGER_STEP";
// The job's name, for the stager (its step's own srun --job-name hides
// SLURM_JOB_NAME): a mover job reads no copy in place (stager/copies/copy_readers).
inline constexpr const char* kJobNameVar = "DLSTAGE_JOB_NAME";

// What Slurm tells a job (and srun, in the plugin, tells `dlstage stage`):
// its id and its node count.
inline constexpr const char* kJobIdVar = "SLURM_JOB_ID";
inline constexpr const char* kJobNodesVar = "SLURM_JOB_NUM_NODES";
// An array task's ids, in the job's environment: recorded with its
// progress so that `dlstage status -j 123_4` finds it after Slurm forgot it.
inline constexpr const char* kArrayJobIdVar = "SLURM_ARRAY_JOB_ID";
inline constexpr const char* kArrayTaskIdVar = "SLURM_ARRAY_TASK_ID";
// How often the job was requeued ("" before its first requeue): a run after
// a requeue may find no job directory (job/job_layout.hpp unprepared_dir).
inline constexpr const char* kRestartCountVar = "SLURM_RESTART_COUNT";

// How Slurm hands on what the plugin sets with spank_job_control_setenv:
// to the prolog and epilog as SPANK_<VAR>, to the job as SLURM_SPANK_<VAR>.
inline constexpr const char* kPrologEnvPrefix = "SPANK_";
inline constexpr const char* kJobEnvPrefix = "SLURM_SPANK_";
// How Slurm exports the plugin's --stage-data into a salloc shell (the
// variable's name ends with this).
inline constexpr const char* kStageDataOptionVar = "SPANK_OPTION_dlstage_stage_data";

// --- programs, steps, lines --------------------------------------------------
inline constexpr const char* kStagerProgram = "dlstage-stager";     // in $(pkglibexecdir)
inline constexpr const char* kStageCommand = "stage";               // `dlstage stage`, run by the plugin too
inline constexpr const char* kHoldMountsCommand = "hold-mounts";    // `dlstage hold-mounts`, internal
inline constexpr const char* kWatchMoversCommand = "watch-movers";  // `dlstage watch-movers`, internal
// Job step names, as sacct shows them.
inline constexpr const char* kStageStep = "dlstage-stage";
inline constexpr const char* kMountStep = "dlstage-mount";
// What a mount holder prints on stdout once every mount on its node is up.
inline constexpr const char* kMountedLine = "dlstage-mounted ";
// How a stager rank says why it stops ("dlstage: WHAT failed on NODE:
// REASON"), and how a holder's such line starts ("dlstage: mounting
// DATASET failed on NODE: ..."): `dlstage stage` watches for both.
inline constexpr const char* kFailedOn = " failed on ";
inline constexpr const char* kMountingWord = "mounting ";

// --- files in a tier's job directory (job/job_layout.hpp) --------------------
inline constexpr const char* kPartialPrefix = ".partial-";    // being written
inline constexpr const char* kIncomingPrefix = ".incoming-";  // archives to extract
inline constexpr const char* kReadyPrefix = ".ready-";        // the ready marker
inline constexpr const char* kImagePrefix = ".image-";        // mode = "mount": the image
inline constexpr const char* kStagedPrefix = ".staged-";      // mode = "mount": the image is complete
inline constexpr const char* kRecordSuffix = ".toml";         // markers and state records
inline constexpr const char* kSplitIndexPrefix = ".index-";   // .index-NAME.json: a split dataset's parts and nodes
inline constexpr const char* kSplitIndexSuffix = ".json";
inline constexpr const char* kSplitIndexVarSuffix = "_INDEX";  // DLSTAGE_<NAME>_INDEX: that index's path
// A shared tier's user directory also holds, per dataset (job/job_layout.hpp):
inline constexpr const char* kLockPrefix = ".lock-";          // who is staging it now
inline constexpr const char* kContentsPrefix = ".contents-";  // what the copy holds (a plan)
inline constexpr const char* kRetiredPrefix = ".retired-";    // a replaced copy, being removed
inline constexpr const char* kResumePrefix = ".resume-";      // .resume-NAME.toml: what .partial-NAME is a copy of
inline constexpr const char* kWalkedPrefix = ".walked-";      // .walked-NAME: what a first copy's walk found so far
inline constexpr const char* kPiecesPrefix = ".pieces-";  // .pieces-NAME/ATTEMPT.RANK: pieces of files written in part
inline constexpr const char* kVersionPrefix = ".version-";    // .version-NAME-JOB: a copy made beside one in use
inline constexpr const char* kReadersPrefix = ".readers-";    // .readers-NAME/JOB: jobs reading a copy in place
inline constexpr const char* kMoverOutputPrefix = ".mover-";  // .mover-NAME.out: the last mover job's output

// --- mover jobs (two-hop staging, mover/mover_job.hpp) ------------------------
// A user's mover job for a dataset is named kMoverJobPrefix + NAME; a job
// that waits for one carries kWaitsComment in its comment, one that a
// failed mover ended kMoverFailedComment; a mover job that will end
// without a copy marks itself with kMoverEndingComment (no job submitted
// from then on waits for it).
inline constexpr const char* kMoverJobPrefix = "dlstage-mover-";
inline constexpr const char* kWaitsComment = "dlstage: waits for mover job ";
inline constexpr const char* kMoverFailedComment = "dlstage: mover job ";
inline constexpr const char* kMoverEndingComment = "dlstage: ends without a copy: ";

// --- state records (job/state_record.hpp) -------------------------------------
inline constexpr const char* kJobsDir = "jobs";                 // state_dir/jobs/<job>
inline constexpr const char* kUserDir = "user";                 // state_dir/jobs/<job>/user, the job user's
inline constexpr const char* kProgressPrefix = "progress-";     // progress-<dataset>.toml
inline constexpr const char* kFailurePrefix = "failure-";       // failure-<node>.toml
inline constexpr const char* kPrologOutcomePrefix = "prolog-";  // prolog-<node>.toml
inline constexpr const char* kEpilogOutcomePrefix = "epilog-";  // epilog-<node>.toml
// States a record's reader acts on: the prolog's outcome (status) for the
// stager, the stager's progress (state) for `dlstage status`.
inline constexpr const char* kReadyState = "ready";
inline constexpr const char* kStagingState = "staging";
// The prolog's outcome when not ready: the node is broken (drained), or
// the request failed (the user's problem; the stager reports it).
inline constexpr const char* kBrokenState = "broken";
inline constexpr const char* kFailedState = "failed";
// A job that found its shared copy complete (or repaired it) read nothing.
inline constexpr const char* kReusedState = "reused";
// The epilog's outcome when every job directory of the node is gone.
inline constexpr const char* kCleanedState = "cleaned";
// A job that found its dataset in the node cache of every node it ran on.
inline constexpr const char* kCacheHitState = "cache-hit";

// A node cache (a node tier with cleanup = "cache") keeps its entries
// below the tier root, one directory per user (see job/job_layout.hpp):
//   <tier root>/.cache/            root's, 0755 (the prolog)
//   <tier root>/.cache/<user>/     the user's, 0700 (the prolog)
// No job id, user name or node name begins with a dot.
inline constexpr const char* kCacheDirName = ".cache";

// --stage-data=help: the catalog is listed and nothing is submitted (as
// --gres=help), so no dataset may be named so.
inline constexpr const char* kStageDataHelp = "help";

}  // namespace dlstage
