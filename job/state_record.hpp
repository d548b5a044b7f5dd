// State records: small TOML files that the prolog, the stager and the
// epilog write about a job, and `dlstage status` reads.  Each is
// written whole or not at all: a temporary file in the same directory,
// fsync, rename.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include <toml++/toml.h>

namespace dlstage {

// <state_dir>/jobs, and <state_dir>/jobs/<job_id>
std::string jobs_dir(const std::string& state_dir);
std::string job_state_dir(const std::string& state_dir, const std::string& job_id);

// <state_dir>/jobs/<job_id>/<node>.<event>.toml, e.g. n1.prolog.toml
std::string node_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node,
                             const std::string& event);
std::string node_record_name(const std::string& node, const std::string& event);  // <node>.<event>.toml

// <state_dir>/jobs/<job_id>/user: made by the prolog for the job's user,
// where the stager (running as that user) writes what it is doing.
std::string job_user_dir(const std::string& state_dir, const std::string& job_id);

// <job user dir>/progress-<dataset>.toml
std::string progress_record_path(const std::string& state_dir, const std::string& job_id, const std::string& dataset);

// <job user dir>/failure-<node>.toml: why staging failed on a node, for
// when the launcher lost the stager's last words.
std::string failure_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node);

// Writes failure-<node>.toml {node, message} (write_record), best effort:
// false if it could not be written (the caller has said the message
// already).
bool write_failure_record(const std::string& state_dir, const std::string& job_id, const std::string& node,
                          const std::string& message) noexcept;

// Which records of a job's user dir: progress-<dataset>.toml,
// failure-<node>.toml (the stager's), prolog-<node>.toml and
// epilog-<node>.toml (root's: the outcome on each node).
enum class UserRecord { Progress, Failure, PrologOutcome, EpilogOutcome };

// The paths of this kind of record in the job's user dir, sorted; none if
// the dir is missing, mounted over (see read_user_records) or not readable
// by the caller.
std::vector<std::string> user_record_paths(const std::string& state_dir, const std::string& job_id, UserRecord kind);

// One record read from a job's user dir.
struct UserRecordFile {
    std::string name;  // e.g. failure-n2.toml
    uid_t owner = 0;
    toml::table record;
};

// The records of this kind in the job's user dir, by name, read through
// descriptors (root runs this for `dlstage status`, in a directory the
// job's user owns): the dir is looked up from state_dir/jobs/JOB with
// O_PATH, must be on that directory's file system (a mount the user put
// there is never entered, so a stopped FUSE server cannot hang the
// caller), and is opened as "." of the lookup; each record is opened
// relative to it, without following a link or blocking on a fifo.
// Records that cannot be read (being replaced, not a regular file) are
// skipped; none if the dir is missing, mounted over or not readable.
std::vector<UserRecordFile> read_user_records(const std::string& state_dir, const std::string& job_id, UserRecord kind);

// The prolog's outcome on this node (user dir, prolog-NODE.toml), only if
// root wrote it: a file the job's user left there from an earlier job with
// the same id is not the prolog's word.  Nothing if there is none.
std::optional<toml::table> read_prolog_outcome(const std::string& state_dir, const std::string& job_id,
                                               const std::string& node);

// <job user dir>/prolog-<node>.toml: the prolog's outcome on a node, where
// the job's user (the stager) can read it; the node record itself is root's.
std::string prolog_outcome_name(const std::string& node);

// <job user dir>/epilog-<node>.toml: the epilog's outcome on a node, where
// the job's user (`dlstage status`) can read it.
std::string epilog_outcome_name(const std::string& node);

// Root writes an outcome (0644, root's) into the job's user dir, reached as
// read_user_records reaches it (never into a mount the user put there).
// Throws Error if the dir is missing or cannot be written.
void write_user_outcome(const std::string& state_dir, const std::string& job_id, const std::string& name,
                        const toml::table& record);

// Replaces `name` in dir_fd atomically with the record: a new temporary file
// (O_EXCL, O_NOFOLLOW: never one a user planted), fsync, renameat.  Throws
// Error naming `shown` (the directory as the message should say it).
void write_record_at(int dir_fd, const std::string& shown, const std::string& name, const toml::table& record,
                     mode_t mode);

// The same by path, for records in directories the caller owns (the
// stager's, in the user dir the prolog made): the directory must exist and
// belong to the caller, or nothing is written (Error).
void write_record(const std::string& path, const toml::table& record);

// Parses a record's text; `name` is for the message.  Throws Error.
toml::table parse_record(std::string_view text, const std::string& name);

// Reads a record without following a symlink and without blocking on a fifo
// or device a user put in its place: anything but a regular file of at most
// kMaxRecordBytes is an Error naming the path.
toml::table read_record(const std::string& path);

inline constexpr std::size_t kMaxRecordBytes = 1 << 20;

}  // namespace dlstage
