#!/usr/bin/env bats
# The request reaches job_prolog on every node of the job: each node's
# prolog (root, in that node's namespace) writes a state record.

load helpers

# expect_prolog_records JOBID SPEC NODE...
expect_prolog_records() {
    local job=$1 spec=$2 node record
    shift 2
    for node in "$@"; do
        record="$STATE/jobs/$job/$node.prolog.toml"
        wait_for_file "$record" 30
        [ "$(record_value "$record" 'r["node"]')" = "$node" ]
        [ "$(record_value "$record" 'r["stage_data"]')" = "$spec" ]
        [ "$(record_value "$record" 'r["status"]')" = ready ]
        [ "$(record_value "$record" 'r["user"]')" = "$VCLUSTER_USER" ]
        [ "$(record_value "$record" 'r["uid"]')" = "$(id -u "$VCLUSTER_USER")" ]
        [ "$(record_value "$record" 'r["datasets"][0]["directory"]')" = "/dev/shm/dlstage/$job" ]
        [ "$(record_value "$record" 'r["datasets"][0]["env"]')" = DLSTAGE_SAMPLE ]
        [ "$(record_value "$record" 'r["datasets"][1]["directory"]')" = "/local/dlstage/$job" ]
    done
}

@test "sbatch: the request is visible to job_prolog on all 3 nodes" {
    run as_user sbatch --parsable -N3 --stage-data=sample:shm,blob --wrap true
    [ "$status" -eq 0 ]
    job=${lines[-1]%%;*}
    expect_prolog_records "$job" "sample:shm,blob" n1 n2 n3
    [ "$(ls "$STATE/jobs/$job"/*.prolog.toml | wc -l)" -eq 3 ]
}

@test "srun: the request is visible to job_prolog on all 3 nodes" {
    run as_user srun -N3 --stage-data=sample,blob:ssd bash -c 'echo $SLURM_JOB_ID'
    [ "$status" -eq 0 ]
    job=${lines[-1]}
    expect_prolog_records "$job" "sample,blob:ssd" n1 n2 n3
}

@test "a job without --stage-data leaves no record" {
    run as_user srun -N3 bash -c 'echo $SLURM_JOB_ID'
    [ "$status" -eq 0 ]
    job=${lines[-1]}
    [ ! -e "$STATE/jobs/$job" ]
}

@test "the prolog ran inside each node: its log names the node" {
    run as_user srun -N2 -w n1,n2 --stage-data=sample bash -c 'echo $SLURM_JOB_ID'
    [ "$status" -eq 0 ]
    job=${lines[-1]}
    for node in n1 n2; do
        grep -q "dlstage: job $job on $node: stage-data=sample prepared" "$VCLUSTER_DIR/log/slurmd-$node.log"
    done
}
