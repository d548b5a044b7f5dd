# Shared by the integration tests: the cluster started by start-cluster
# (scripts/test does that and sets DLSTAGE_CLUSTER_DIR).
: "${DLSTAGE_CLUSTER_DIR:?run through scripts/test, or set DLSTAGE_CLUSTER_DIR to a start-cluster DIR}"
# shellcheck disable=SC1091
source "$DLSTAGE_CLUSTER_DIR/env.sh"
VCLUSTER="$BATS_TEST_DIRNAME/../cluster/vcluster"
STATE="$DLSTAGE_TEST_DIR/state"

# A directory the test user owns, for job output files.
user_workdir() {
    local d="$DLSTAGE_TEST_DIR/work/$BATS_TEST_NUMBER"
    mkdir -p "$d"
    chown "$VCLUSTER_USER" "$d"
    echo "$d"
}

# as_user CMD...: run a Slurm client command as the unprivileged test user.
as_user() {
    (cd "$(user_workdir)" && runuser -u "$VCLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@")
}

# The ids of all jobs slurmctld knows (finished ones stay for MinJobAge).
job_ids() {
    squeue -h -t all -o %i | sort -n | tr '\n' ' '
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

# assert_refused SPEC MESSAGE: sbatch refuses SPEC with MESSAGE and creates no job.
assert_refused() {
    local before after
    before=$(job_ids)
    run as_user sbatch -N1 --stage-data="$1" --wrap true
    after=$(job_ids)
    [ "$status" -ne 0 ] || { echo "sbatch accepted --stage-data=$1: $output"; return 1; }
    [[ "$output" == *"dlstage: $2"* ]] || { echo "expected 'dlstage: $2' in: $output"; return 1; }
    [ "$before" = "$after" ] || { echo "a job was created: before '$before' after '$after'"; return 1; }
}
