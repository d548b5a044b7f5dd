"""The soak's jobs: the datasets they stage (and the digest each must see),
the job script, a random job, and what a job's end means.

A job's script runs tree-digest (tests/integration/tree-digest) on every
node over each $DLSTAGE_<NAME>, and prints who owns what it found: the
digests are compared here with the source's own, computed by root from the
source, never with anything dlstage says."""

import glob
import os
import random
import re
import subprocess
import tempfile
import threading

from soak_cluster import ENDED

NODE_REBOOTED = "node rebooted (shm and local emptied)"  # soak_faults.RebootNode's kind, judged here too
# soak_faults.MoverTimeLimit's kind: the jobs it touches must complete (their
# mover job requeues itself before its limit; they wait for its next run).
MOVER_TIME_LIMIT = "mover job at its time limit"
SLURMD_STOPPED = "slurmd stopped for 20 s (under SlurmdTimeout)"  # soak_faults.StopSlurmd's kind

JOB_SCRIPT = r"""#!/bin/bash
# A soak job: on every node (NODE_SCRIPT), each staged dataset's digest and owners.
export SOAK_RUN=${SLURM_RESTART_COUNT:-0}
echo "SOAK-RUN restart=$SOAK_RUN $(date +%s.%N)"
srun --ntasks-per-node=1 -N "$SLURM_JOB_NUM_NODES" "$SOAK_NODE_SCRIPT"
rc=$?
echo "SOAK-DIGESTS rc=$rc"
sleep "$SOAK_PAUSE"
echo "SOAK-END"
exit $rc
"""

NODE_SCRIPT = r"""#!/bin/bash
# One node's part of a soak job: SOAK_PAIRS holds NAME:VARIABLE[:split]
# pairs.  A split dataset's share is listed (tree-digest --list) in a file
# beside the job's output, share-JOB-RESTART-NODE-NAME, whole or not at all;
# its DIGEST says "split".
rc=0
for pair in $SOAK_PAIRS; do
    IFS=: read -r name var split <<<"$pair"
    path=${!var}
    if [ -n "$split" ]; then
        list=$SLURM_SUBMIT_DIR/share-$SLURM_JOB_ID-$SOAK_RUN-$(hostname)-$name
        d=$("$SOAK_DIGEST" --list "$path" 2>&1 >"$list.part") && mv "$list.part" "$list" && d=split
    else
        d=$("$SOAK_DIGEST" "$path" 2>&1)
    fi
    if [ $? -eq 0 ]; then
        owners=$(find "$path" -printf '%u\n' 2>/dev/null | sort -u | paste -sd, -)
        echo "DIGEST $(hostname) $name $d ${owners:-none}"
    else
        echo "DIGEST-ERROR $(hostname) $name $(echo "$d" | tr '\n' ' ')"
        rc=1
    fi
done
exit $rc
"""


class Dataset:
    """A catalog dataset the soak stages: TIERS it may go to, the host path
    whose digest a staged copy must have, its MODE (copy, mount), whether
    it is behind the soak's pfssim (PFS) or reached in two hops (MOVER)."""

    def __init__(self, name, digest_path, tiers, mode="copy", pfs=False, mover=False, ours=False,
                 tailored_only=False, split_in=(), catalog_split=False):
        self.name = name
        self.digest_path = digest_path
        self.tiers = tiers
        self.mode = mode
        self.pfs = pfs
        self.mover = mover
        self.ours = ours  # the soak may change its source (source_changed)
        self.tailored_only = tailored_only  # only a fault's own job stages it
        self.split_in = split_in  # node tiers a job may stage it to split (NAME:TIER:split)
        self.catalog_split = catalog_split  # split there by the catalog's placement, unasked
        self.digest = None
        self.version = 0

    @property
    def env(self):
        return "DLSTAGE_" + re.sub(r"[^A-Z0-9]", "_", self.name.upper())


def catalog(cluster_dir):
    """The datasets of start-cluster's dlstage.toml the soak uses, plus its own (soak_setup)."""
    data = os.path.join(cluster_dir, "data")
    m = os.path.join(data, "m")
    far = os.path.join(cluster_dir, "largedata-src", "data")
    soak = os.path.join(cluster_dir, "soak-src")
    return [
        Dataset("big", f"{m}/file64.bin", ["shm", "ssd", "scratch"]),
        Dataset("blob", f"{data}/blob.bin", ["ssd"]),
        Dataset("sample", f"{data}/sample", ["shm", "ssd"]),
        Dataset("tree", f"{m}/tree", ["shm", "ssd", "scratch", "jobscratch"], split_in=("shm", "ssd")),
        Dataset("shards", f"{m}/shards", ["shm", "ssd"]),
        Dataset("shards-x", f"{m}/tree", ["shm", "ssd", "scratch"], split_in=("shm", "ssd")),
        Dataset("splittree", f"{m}/tree", ["shm"], split_in=("shm",), catalog_split=True),
        Dataset("image", f"{m}/tree.sqfs", ["shm", "ssd"]),
        Dataset("image-x", f"{m}/tree", ["shm", "ssd"]),
        Dataset("image-m", f"{m}/tree", ["shm", "ssd"], mode="mount"),
        Dataset("imagenet", f"{data}/imagenet", ["shm", "ssd", "scratch", "cache"]),
        Dataset("mutable", f"{data}/mutable", ["scratch", "jobscratch"], ours=True),
        Dataset("in21k", f"{far}/in21k", ["shm", "ssd", "scratch"], mover=True, split_in=("shm", "ssd")),
        Dataset("far-file", f"{far}/one.bin", ["shm", "scratch"], mover=True),
        # Holds a file the user may not read: its mover job fails (mover job failed).
        Dataset("far-bad", f"{far}/badtree", ["shm", "scratch"], mover=True, tailored_only=True),
        Dataset("soak-ptree", f"{soak}/ptree", ["shm", "cache", "scratch"], pfs=True, ours=True),
        Dataset("soak-pfile", f"{soak}/pfile.bin", ["shm", "cache"], pfs=True),
    ]


def digest_of(tree_digest, path, read_only=False):
    """PATH's tree-digest; READ_ONLY: as a node cache keeps it, every
    file's write bits taken away (cached files are read-only)."""
    if read_only:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "x")
            subprocess.run(["cp", "-a", path, copy], check=True)
            subprocess.run(["find", copy, "-type", "f", "-exec", "chmod", "a-w", "{}", "+"], check=True)
            return digest_of(tree_digest, copy)
    p = subprocess.run([tree_digest, path], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"soak: tree-digest {path}: {p.stderr.strip()}")
    return p.stdout.strip()


def source_files(tree_digest, path):
    """PATH's file entries (tree-digest --list): what a split staging's
    shares must hold between them."""
    p = subprocess.run([tree_digest, "--list", path], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"soak: tree-digest --list {path}: {p.stderr.strip()}")
    return frozenset(file_entries(p.stdout))


# Requests sbatch must refuse at submission, with a one-line "dlstage:" error.
BAD_REQUESTS = [
    ("unknown dataset", "no-such-dataset"),
    ("unknown tier", "tree:no-such-tier"),
    ("too big for the tier", "huge:shm"),
    ("source not readable", "secret:shm"),
]


class Job:
    """One soak job: who, what, where, and what happened to it."""

    _lock = threading.Lock()

    def __init__(self, user, items, nodes, requeue, pause, tailored_for=None):
        self.id = None
        self.user = user
        self.items = items  # [(Dataset, tier)]
        self.nodes = nodes
        self.requeue = requeue
        self.pause = pause
        self.tailored_for = tailored_for
        self.versions = {}  # dataset name -> the version its source had at submission
        self.touched = []  # [(fault kind, seconds into the soak)]
        self.info = {}  # the last scontrol view
        self.submit_err = ""  # what sbatch said on stderr (the plugin's lines)
        self.ended = False
        self.outcome = None
        self.reason = None
        self.output = None
        self.submitted_at = None
        self.ended_at = None
        self.seen_nodes = set()
        self.failure_records = []  # the messages of its failure-NODE.toml records
        self.hurried = 0  # the restart whose requeue delay the soak cut short
        self.requeue_seen = None  # when the soak first saw it wait after a requeue
        self.env = {}  # more environment for sbatch (and so for its mover job)
        self.split = set()  # names of the datasets it stages split, each node its share
        self.workdir = None  # where its output and its nodes' share listings are

    @property
    def spec(self):
        return ",".join(f"{d.name}:{t}" + (":split" if d.name in self.split and not d.catalog_split else "")
                        for d, t in self.items)

    @property
    def datasets(self):
        return {d.name for d, _ in self.items}

    def touch(self, kind, at):
        with Job._lock:
            self.touched.append((kind, at))

    def state(self):
        return self.info.get("state", "")

    def __repr__(self):
        return f"job {self.id} ({self.user}, -N{self.nodes}, {self.spec})"


def random_job(rng, datasets, users, compute_nodes, want=None, tiers=()):
    """A random job: 1-2 datasets (WANT first when given, to one of TIERS when
    given), a tier each, on 1..all compute nodes."""
    user = rng.choice(users)
    usable = [d for d in datasets if not d.tailored_only]
    first = want or rng.choice(usable)
    chosen = [first]
    if want is None and rng.random() < 0.3:
        chosen.append(rng.choice([d for d in usable if d is not first and not d.mover]))
    items = []
    split = set()
    for d in chosen:
        allowed = [t for t in d.tiers if t in tiers] if (tiers and d is want) else d.tiers
        tier = rng.choice(allowed or d.tiers)
        items.append((d, tier))
        if tier in d.split_in and (d.catalog_split or rng.random() < 0.4):
            split.add(d.name)
    nodes = rng.randint(1, len(compute_nodes))
    job = Job(user, items, nodes, requeue=rng.random() < 0.5, pause=round(rng.uniform(1, 4), 1))
    job.split = split
    return job


def submit(cluster, job, workdir, script, node_script, tree_digest):
    """sbatch JOB as its user from WORKDIR; the job id, or None with sbatch's stderr."""
    pairs = " ".join(f"{d.name}:{d.env}" + (":split" if d.name in job.split else "") for d, _ in job.items)
    job.workdir = workdir
    argv = ["env", f"SOAK_PAIRS={pairs}", f"SOAK_DIGEST={tree_digest}", f"SOAK_PAUSE={job.pause}",
            f"SOAK_NODE_SCRIPT={node_script}"] + [f"{k}={v}" for k, v in job.env.items()] + [
            "sbatch", "--parsable", f"-N{job.nodes}", "-t", "8", "-o", "soak-%j.out", "--open-mode=append",
            f"--stage-data={job.spec}", "--export=ALL"]
    if job.requeue:
        argv.append("--requeue")
    argv.append(script)
    rc, out, err = cluster.as_user(job.user, argv, cwd=workdir)
    if rc != 0:
        return None, err
    return int(out.strip().split(";")[0]), err


def is_error_line(line):
    """A dlstage line that says why something stopped (not a progress or 'staged' line)."""
    return line.startswith("dlstage:") and any(w in line for w in (
        "failed", "cannot", "refused", "error", "lost", "killed", "ended", "too ", "denied"))


def judge(job, datasets_by_name, expected):
    """A finished job's outcome: ('ok'|'fault'|'violation', reason).  EXPECTED maps
    (dataset, version, cached) -> the source's digest (cached: as a node cache keeps it)."""
    out = job.output or ""
    state = job.state()
    problems = []
    digests = [line.split() for line in out.splitlines() if line.startswith("DIGEST ")]
    runs = out.count("SOAK-RUN ")
    # A node rebooted under a running job empties its tiers while the job may
    # be reading its copy: a job that did not complete may print a digest of
    # what was half gone.  One that completed never may.
    emptied_under_it = state != "COMPLETED" and any(k == NODE_REBOOTED for k, _ in job.touched)
    for parts in digests:
        if len(parts) < 5:
            problems.append(f"a short DIGEST line: {' '.join(parts)}")
            continue
        _, node, name, got, owners = parts[:5]
        tier = dict((d.name, t) for d, t in job.items).get(name)
        want = expected.get((name, job.versions.get(name), tier == "cache"))
        if (got == "split") != (name in job.split):
            problems.append(f"{name} on {node} was {'' if got == 'split' else 'not '}listed as a share")
        elif got != want and got != "split" and not emptied_under_it:
            problems.append(f"{name} on {node} is not the source's content (stale or partial)")
        d = datasets_by_name.get(name)
        owner_set = set(owners.split(","))
        if d and d.mode == "copy" and owner_set != {job.user}:
            problems.append(f"{name} on {node} holds files owned by {','.join(sorted(owner_set - {job.user}))}")
    shares = read_shares(job)
    if not emptied_under_it:
        problems += stray_in_shares(job, shares, expected)
    if problems:
        return "violation", "; ".join(problems)
    last_run = out.rsplit("SOAK-RUN ", 1)[-1] if runs else ""
    last_digests = [line for line in last_run.splitlines() if line.startswith("DIGEST ")]
    complete = len(last_digests) == job.nodes * len(job.items) and "SOAK-END" in last_run
    if state == "COMPLETED" and job.info.get("exit") == "0:0":
        if complete:
            restart = re.findall(r"^SOAK-RUN restart=(\d+)", out, re.M)[-1]
            unlike = shares_unlike_source(job, shares, expected, restart)
            if unlike:
                return "violation", "; ".join(unlike)
            return "ok", "exact bytes on every node" + (" (split: the shares together)" if job.split else "")
        return "violation", f"completed without every digest ({len(last_digests)} of {job.nodes * len(job.items)})"
    reason = fault_reason(job, out)
    if job.touched and all(k == MOVER_TIME_LIMIT for k, _ in job.touched):
        return "violation", f"its mover job's time limit ended it ({state}): {reason or 'no reason given'}"
    if not job.touched:
        return "violation", f"no fault touched it, yet it ended {state}: {reason or 'no reason given'}"
    if reason:
        return "fault", reason
    return "violation", f"a fault touched it; it ended {state} without a clear reason"


# A file's line in a tree-digest --list listing: its repr'd path, then "file".
FILE_ENTRY = re.compile(r"""^(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*") file """)


def file_entries(listing):
    """The file lines of a tree-digest --list listing: a split dataset's
    files are each on one node, its directories on any number of them."""
    return [line for line in listing.splitlines() if FILE_ENTRY.match(line)]


def read_shares(job):
    """{(restart, node, dataset): [file lines]} of the share listings JOB's
    nodes wrote (NODE_SCRIPT: share-JOB-RESTART-NODE-NAME; no node name has
    a dash)."""
    shares = {}
    prefix = f"share-{job.id}-"
    for path in glob.glob(os.path.join(job.workdir or "/nonexistent", prefix + "*")):
        if path.endswith(".part"):
            continue  # a listing cut short (the job ended under it)
        restart, _, rest = os.path.basename(path)[len(prefix):].partition("-")
        node, _, name = rest.partition("-")
        try:
            with open(path, errors="replace") as f:
                shares[(restart, node, name)] = file_entries(f.read())
        except OSError:
            continue
    return shares


def stray_in_shares(job, shares, expected):
    """Files a node's share held that its source has not: never allowed."""
    problems = []
    for (_, node, name), lines in sorted(shares.items()):
        want = expected.get((name, job.versions.get(name), "files"), frozenset())
        stray = [line for line in lines if line not in want]
        if stray:
            problems.append(f"{name}'s share on {node} holds {len(stray)} files unlike the source's "
                            f"(stale or partial), e.g. {stray[0][:120]}")
    return problems


def shares_unlike_source(job, shares, expected, restart):
    """For a job that completed: each split dataset's shares in its last run
    (RESTART), together, are its source's files, each on one node."""
    problems = []
    for name in sorted(job.split):
        lines = [line for (run, _, n), ls in shares.items() if run == restart and n == name for line in ls]
        want = expected.get((name, job.versions.get(name), "files"), frozenset())
        if len(lines) != len(set(lines)):
            problems.append(f"{name}: {len(lines) - len(set(lines))} files on more than one node")
        missing = want - set(lines)
        if missing:
            problems.append(f"{name}: the shares together miss {len(missing)} of the source's {len(want)} files")
    return problems


# Faults of Slurm's own daemons and of job control: Slurm's state is the reason.
SLURM_SIDE_FAULTS = {"requeue while running", "slurmctld restarted while jobs stage", "slurmd restarted mid-staging",
                     NODE_REBOOTED, SLURMD_STOPPED}


def last_run_ended(job, out):
    """Whether the job's last run (Slurm's restart count) printed its end.  A
    run Slurm requeued after a node failed and then killed before its script
    ("Job credential revoked") leaves the earlier run's end as the last line."""
    runs = [int(m) for m in re.findall(r"^SOAK-RUN restart=(\d+)", out, re.M)]
    if not runs or runs[-1] < job.info.get("restarts", 0):
        return False
    return out.rstrip().endswith("SOAK-END")


def fault_reason(job, out):
    """Why a job ended other than COMPLETED, most telling first: the comment
    of a failed mover, Slurm's own end for a fault (cancelled, timed out, a
    node failed), dlstage's line in the output, what dlstage recorded for
    `dlstage status` (a mount's server died), the job's own read error."""
    comment = job.info.get("comment", "")
    if comment.startswith("dlstage: mover job"):
        return comment
    state = job.state()
    if state in ("CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE"):
        return f"Slurm ended it: {state}"
    # A requeue meeting a controller or slurmd restart can end a job FAILED
    # before its run printed anything: Slurm's word, after Slurm's fault.
    slurm_faults = {k for k, _ in job.touched} & SLURM_SIDE_FAULTS
    if state == "FAILED" and slurm_faults and not last_run_ended(job, out):
        return f"Slurm ended it: FAILED ({job.info.get('reason') or 'no reason'}) after {', '.join(sorted(slurm_faults))}"
    for line in out.splitlines():
        if is_error_line(line):
            return line.strip()
    if job.failure_records:
        return "dlstage status: " + job.failure_records[0]
    for line in out.splitlines():
        if line.startswith("DIGEST-ERROR "):
            return "the job's own read failed: " + line.split(" ", 3)[-1]
    for line in out.splitlines():
        if "slurmstepd: error:" in line or line.startswith("srun: error:"):
            return line.strip()
    return None


def read_output(soak, job):
    try:
        with open(os.path.join(soak.workdirs[job.user], f"soak-{job.id}.out"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def read_failure_records(state_dir, job):
    messages = []
    for path in sorted(glob.glob(os.path.join(state_dir, "jobs", str(job.id), "**", "failure-*.toml"),
                                 recursive=True)):
        try:
            with open(path) as f:
                m = re.search(r"^message = ['\"](.*)['\"]$", f.read(), re.M)
        except OSError:
            continue
        if m:
            messages.append(m.group(1))
    return messages


def is_final(job):
    return job.state() in ENDED
