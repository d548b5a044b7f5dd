# Shared by the integration tests: the cluster started by start-cluster
# (scripts/test does that and sets DLSTAGE_CLUSTER_DIR).
: "${DLSTAGE_CLUSTER_DIR:?run through scripts/test, or set DLSTAGE_CLUSTER_DIR to a start-cluster DIR}"
# shellcheck disable=SC1091
source "$DLSTAGE_CLUSTER_DIR/env.sh"
VCLUSTER="$BATS_TEST_DIRNAME/../cluster/vcluster"
STATE="$DLSTAGE_TEST_DIR/state"

# A directory the test user owns, for job output files.
user_workdir() {
    local d
    d="$DLSTAGE_TEST_DIR/work/$(basename "$BATS_TEST_FILENAME" .bats)-${BATS_TEST_NUMBER:-setup}"
    mkdir -p "$d"
    chown "$VCLUSTER_USER" "$d"
    echo "$d"
}

# The docs whose examples the tests hold to what the programs print
# (tests/cli/doc-coverage names each by its variable here).
README="$BATS_TEST_DIRNAME/../../README.md"
USER_GUIDE="$BATS_TEST_DIRNAME/../../docs/user-guide.md"
ADMIN_GUIDE="$BATS_TEST_DIRNAME/../../docs/admin-guide.md"
SECURITY_DOC="$BATS_TEST_DIRNAME/../../docs/security.md"
PERFORMANCE_DOC="$BATS_TEST_DIRNAME/../../docs/performance.md"
ARCHITECTURE_DOC="$BATS_TEST_DIRNAME/../../docs/ARCHITECTURE.md"
TESTING_DOC="$BATS_TEST_DIRNAME/../../docs/testing.md"
# 89-harness runs 56-doc-transcripts' cluster by hand against a copy it broke.
[ -z "${DLSTAGE_TESTING_DOC:-}" ] || TESTING_DOC=$DLSTAGE_TESTING_DOC
MAN1="$BATS_TEST_DIRNAME/../../man/dlstage.1"
MAN5="$BATS_TEST_DIRNAME/../../man/dlstage.toml.5"
MAN8="$BATS_TEST_DIRNAME/../../man/spank-dlstage.8"

# doc_transcript ARGS...: tests/cli/doc-transcript, which reads the docs'
# examples: DOC COMMAND (a transcript's output), --block DOC REGEX,
# --commands DOC REGEX (a block's lines without their comments).
doc_transcript() {
    "$BATS_TEST_DIRNAME/../cli/doc-transcript" "$@"
}

# this_clusters USER NAME: the pids of USER's processes called NAME that
# belong to this test cluster (their SLURM_CONF is its): the other cluster on
# the machine runs jobs of the same users at the same time (a pkill by user
# and name once interrupted the other cluster's srun in another test).
this_clusters() {
    local pid
    for pid in $(pgrep -u "$1" -x "$2"); do
        tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" && echo "$pid"
    done
    return 0
}

# doc_says DOC REGEX [DOC_WORD=TEST_WORD ...] <<<"$output": the output has a
# line saying what DOC's example message matching REGEX says, numbers and
# paths aside (doc-transcript --same-message).
doc_says() {
    doc_transcript --same-message "$@"
}

# The test cluster lives on loopback: keep MPI's TCP traffic there too.
export OMPI_MCA_btl_tcp_if_include=lo

# as_user CMD...: run a Slurm client command as the unprivileged test user.
as_user() {
    (cd "$(user_workdir)" && runuser -u "$VCLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
        OMPI_MCA_btl_tcp_if_include=lo "$@")
}

# The other unprivileged user (tests/make-test-users; start-cluster's
# DLSTAGE_TEST_USERS): in the attack tests, the one who squats tier roots,
# fills tiers and plants files.
OTHER_USER=${DLSTAGE_OTHER_USER:-dlstest2}


# A third unprivileged user (tests/make-test-users): a second victim, whose
# jobs must run whatever the other user does.
THIRD_USER=${DLSTAGE_THIRD_USER:-dlstest3}

# as_other CMD...: as_user, for the other user, in a directory of theirs.
as_other() {
    as_someone "$OTHER_USER" other "$@"
}

# as_third CMD...: as_user, for the third user, in a directory of theirs.
as_third() {
    as_someone "$THIRD_USER" third "$@"
}

# as_someone USER SUFFIX CMD...: as_user, for USER, in the test's work
# directory with -SUFFIX, theirs.
as_someone() {
    local who=$1 d
    d="$(user_workdir)-$2"
    shift 2
    mkdir -p "$d"
    chown "$who" "$d"
    (cd "$d" && runuser -u "$who" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
        OMPI_MCA_btl_tcp_if_include=lo "$@")
}

# The node cache tests' "parallel file system": pfssim serving SRC at PFS
# on the host (where sbatch looks) and every node, so that reads are
# counted.  The file sets PFS, SRC and PFSSIM, and stats_of WHERE: where
# that instance writes its counts.
#
# mount_pfs WHERE [MS [OPTION...]]: pfssim on WHERE, MS (0) per metadata
# operation, and pfssim's OPTIONs (--direct-io: it counts exactly what
# readers ask for, no readahead).
mount_pfs() {
    local where=$1 latency=${2:-0}
    shift $(($# < 2 ? $# : 2))
    local run=()
    [ "$where" = host ] || run=("$VCLUSTER" exec "$where")
    "${run[@]}" "$PFSSIM" "$SRC" "$PFS" --bandwidth 0 --stream-bandwidth 0 --meta-latency-ms "$latency" \
        --stats "$(stats_of "$where")" "$@" -o allow_other 2>/dev/null
    for _ in $(seq 50); do "${run[@]}" mountpoint -q "$PFS" && return 0; sleep 0.1; done
    echo "pfssim did not mount on $where" >&2
    return 1
}

unmount_pfs() {
    local where=$1
    local run=()
    [ "$where" = host ] || run=("$VCLUSTER" exec "$where")
    "${run[@]}" fusermount3 -u "$PFS" 2>/dev/null || "${run[@]}" umount -l "$PFS" 2>/dev/null || true
}

# pfs_bytes_read: bytes the nodes' (n1-n3) pfssim instances (mount_pfs) instances have served so far (SIGUSR1 dumps).
pfs_bytes_read() {
    local total=0 node pid n
    for node in n1 n2 n3; do
        pid=$(pgrep -f -- "--stats $(stats_of "$node")" | head -n1)
        [ -n "$pid" ] || { echo "no pfssim for $node" >&2; return 1; }
        kill -USR1 "$pid"
    done
    sleep 0.3
    for node in n1 n2 n3; do
        n=$(sed -n 's/^bytes_read=//p' "$(stats_of "$node")")
        total=$((total + ${n:-0}))
    done
    echo "$total"
}

# wait_epilogs: until slurmctld has heard every epilog's outcome: a job
# stays completing, and so do its nodes, until each node's epilog has
# reported.  Up to 30 s, not a fixed second.  An srun that made its own
# allocation returns before its job's epilog has run.
wait_epilogs() {
    local i
    for ((i = 0; i < 150; i++)); do
        [ -z "$(squeue -h -t completing -o %i)" ] && ! sinfo -h -o %T | grep -qi 'comp' && return 0
        sleep 0.2
    done
}

# assert_healthy: no node drained or down, once every epilog has reported
# (a failed one drains its node), then looks at the nodes.
assert_healthy() {
    wait_epilogs
    ! sinfo -h -o %T | grep -Eiq 'drain|down' || { sinfo -N -o '%N %T %E'; return 1; }
}

# The ids of all jobs slurmctld knows (finished ones stay for MinJobAge).
job_ids() {
    squeue -h -t all -o %i | sort -n | tr '\n' ' '
}

# end_limit_now JOB: the running JOB's time limit ends now (EndTime=now), so
# that slurmctld's next time-limit check (every 30 s) ends it TIMEOUT.
# slurmctld may refuse it for a moment ("Invalid time specified", seen on
# a loaded CI machine with the job already writing): asked again for 10 s.
end_limit_now() {
    local _
    for _ in $(seq 20); do
        scontrol update jobid="$1" EndTime=now 2>/dev/null && return 0
        sleep 0.5
    done
    scontrol update jobid="$1" EndTime=now
}

# new_job_ids BEFORE: the ids slurmctld knows now that BEFORE (job_ids)
# did not hold; empty when nothing was submitted since.  Not an equality:
# a job that ended earlier may age out of squeue meanwhile (MinJobAge).
new_job_ids() {
    local id
    for id in $(job_ids); do
        [[ " $1 " == *" $id "* ]] || printf '%s ' "$id"
    done
}

# wait_for_file FILE [SECONDS]
wait_for_file() {
    local i
    for ((i = 0; i < ${2:-30} * 10; i++)); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    echo "timed out waiting for $1" >&2
    return 1
}

# record_value FILE EXPR: a value of a TOML state record, EXPR in Python
# over the parsed table r, e.g. 'r["datasets"][0]["directory"]'.
record_value() {
    python3 -c 'import sys, tomllib; r = tomllib.load(open(sys.argv[1], "rb")); print(eval(sys.argv[2]))' "$1" "$2"
}

# epilog_value JOBID NODE EXPR: a value of NODE's epilog record for the job
# (record_value's EXPR), once the epilog has written it.
epilog_value() {
    wait_for_file "$STATE/jobs/$1/$2.epilog.toml" 30 || return 1
    record_value "$STATE/jobs/$1/$2.epilog.toml" "$3"
}

# assert_epilogs_cleaned JOBID [NODE...]: each node's epilog (n1 n2 n3 by
# default) recorded a complete cleanup.
assert_epilogs_cleaned() {
    local job=$1 node nodes
    shift
    nodes=("$@")
    ((${#nodes[@]})) || nodes=(n1 n2 n3)
    for node in "${nodes[@]}"; do
        [ "$(epilog_value "$job" "$node" 'r["status"]')" = cleaned ] ||
            { cat "$STATE/jobs/$job/$node.epilog.toml"; return 1; }
    done
}

# assert_refused SPEC MESSAGE: sbatch refuses SPEC with MESSAGE and creates no job.
assert_refused() {
    local before after
    before=$(job_ids)
    run as_user sbatch -N1 --stage-data="$1" --wrap true
    after=$(new_job_ids "$before")
    [ "$status" -ne 0 ] || { echo "sbatch accepted --stage-data=$1: $output"; return 1; }
    [[ "$output" == *"dlstage: $2"* ]] || { echo "expected 'dlstage: $2' in: $output"; return 1; }
    [ -z "$after" ] || { echo "a job was created: $after"; return 1; }
}

DIGEST="$DLSTAGE_TEST_DIR/bin/tree-digest"
DATA="$DLSTAGE_TEST_DIR/data/m"

# each_node_says TEXT REGEX: TEXT has a line "NODE REGEX" (the whole line,
# extended regex) for each of n1 n2 n3; says which node is missing.
each_node_says() {
    local node
    for node in n1 n2 n3; do
        grep -Eqx "$node $2" <<<"$1" || { echo "no line '$node $2' in: $1"; return 1; }
    done
}

# on_node NODE CMD...: run CMD in a node's mount namespace (its /dev/shm, /local).
on_node() {
    "$VCLUSTER" exec "$@"
}

# forget_kept_copy DIR NAME [NODE...]: the kept copy of NAME in DIR (a user's
# directory of a shared tier, or of a node cache) goes with its record,
# contents list, lock and unfinished transfer; on each NODE given, else here.
forget_kept_copy() {
    local dir=$1 name=$2 node
    shift 2
    local paths=("$dir/$name" "$dir/.ready-$name.toml" "$dir/.contents-$name" "$dir/.lock-$name" "$dir/.partial-$name"
        "$dir/.resume-$name.toml" "$dir/.walked-$name" "$dir/.pieces-$name" "$dir/.readers-$name" "$dir/.version-$name-"*)
    [ "$#" -gt 0 ] || { rm -rf "${paths[@]}"; return; }
    for node in "$@"; do on_node "$node" rm -rf "${paths[@]}"; done
}

# reader_script NAME GO: the path of a job script that prints "first PATH
# DIGEST" of $DLSTAGE_<NAME>, waits for the file GO, then prints the same
# again ("second ...") and from a later step of the job ("step ...").
reader_script() {
    local var="DLSTAGE_$1" go=$2 script
    script="$(user_workdir)/reader.sh"
    cat >"$script" <<SH
#!/bin/bash
echo "first \$$var \$("$DIGEST" "\$$var")"
for _ in \$(seq 600); do [ -e "$go" ] && break; sleep 0.2; done
echo "second \$$var \$("$DIGEST" "\$$var")"
srun -N1 bash -c 'echo "step \$$var \$("$DIGEST" "\$$var")"'
SH
    chmod 0755 "$script"
    echo "$script"
}

# assert_no_leftovers: every node's tiers hold no job data.  The epilog runs
# after the job has ended, asynchronously to the client: allow it 20 s.
assert_no_leftovers() {
    local node left i
    for ((i = 0; i < 100; i++)); do
        left=""
        for node in n1 n2 n3; do
            # a tier root no job has used yet is missing: find fails, nothing is left there
            left+=$(on_node "$node" find /dev/shm/dlstage /local/dlstage -mindepth 1 -maxdepth 2 2>/dev/null || true)
        done
        [ -z "$left" ] && return 0
        sleep 0.2
    done
    echo "leftovers: $left"
    return 1
}

# wait_job_gone JOBID [SECONDS]: until the job is no longer pending, running or completing.
wait_job_gone() {
    local i
    for ((i = 0; i < ${2:-60} * 5; i++)); do
        [ -z "$(squeue -h -j "$1" -t pending,running,completing,configuring -o %i 2>/dev/null)" ] && return 0
        sleep 0.2
    done
    echo "job $1 did not end" >&2
    return 1
}

# sbatch_wait CMD...: CMD (an `sbatch --parsable` command line, through
# as_user or runuser) as if it had --wait: prints the job id, then returns
# once every record of the job (each array task) has ended, with the highest
# of their exit codes (1 for one a signal ended), as sbatch --wait does.  But
# it looks every 0.2 s: sbatch --wait sleeps 2, 8, then 32 s between looks
# (with MinJobAge=300), so a job of 11 s kept it 42 s.  It also waits for
# the epilogs (COMPLETING), which sbatch --wait does not.
sbatch_wait() {
    local out rc=0 i states code
    out=$("$@") || rc=$?
    echo "$out"
    [ "$rc" -eq 0 ] || return "$rc"
    [[ $out =~ ^[0-9]+(;.*)?$ ]] || { echo "sbatch_wait: no job id from: $*" >&2; return 1; }
    for ((i = 0; i < 3000; i++)); do
        states=$(scontrol show job -o "${out%%;*}" 2>/dev/null) || states=""
        if [ -n "$states" ] && ! grep -vqE ' JobState=(COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY) ' <<<"$states"; then
            for code in $(grep -oE ' ExitCode=[0-9]+:[0-9]+' <<<"$states" | cut -d= -f2); do
                [ "${code#*:}" -eq 0 ] || code=1:0
                [ "${code%:*}" -le "$rc" ] || rc=${code%:*}
            done
            return "$rc"
        fi
        sleep 0.2
    done
    echo "sbatch_wait: job ${out%%;*} did not end in 600 s" >&2
    return 1
}

# job_state JOBID: COMPLETED, FAILED, CANCELLED, ...
job_state() {
    scontrol show job "$1" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2
}

# wait_for_partial NODE JOBID DATASET [TIER_ROOT]: until the stager is
# writing on NODE (in shm's root, /dev/shm/dlstage, unless told).
wait_for_partial() {
    local i
    for ((i = 0; i < 300; i++)); do
        on_node "$1" test -e "${4:-/dev/shm/dlstage}/$2/.partial-$3" && return 0
        sleep 0.1
    done
    echo "no partial data of $3 appeared on $1" >&2
    return 1
}
