#!/usr/bin/env bats
# A job's life does not always go to plan: its time limit hits while it
# stages, the epilog runs twice, slurmd restarts under it, it is requeued.
# Each time: a clear outcome, nothing left on any node, no node drained.

load helpers

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
}

# slow_staging_job EXTRA_SBATCH_ARGS...: a 3-node batch job staging `big`
# at RATE bytes/s per reading node (default 2M); sets $job once n1 writes.
slow_staging_job() {
    run as_user sbatch --parsable -N3 -o out.txt \
        --export=ALL,DLSTAGE_RATE_LIMIT=${RATE:-2M},DLSTAGE_PROGRESS=1 "$@" \
        --stage-data=big:shm --wrap 'echo SCRIPT-RAN; test "$(stat -c %s "$DLSTAGE_BIG")" = 67108864 && echo SIZE-OK'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_for_partial n1 "$job" big
}

out() { cat "$(user_workdir)/out.txt"; }

# first_run_over JOBID: every node's epilog recorded, 3 seconds or more ago.
first_run_over() {
    local node last=0 time
    for node in n1 n2 n3; do
        [ -e "$STATE/jobs/$1/$node.epilog.toml" ] || return 1
        time=$(record_value "$STATE/jobs/$1/$node.epilog.toml" 'r["time"]') || return 1
        ((time > last)) && last=$time
    done
    (($(date +%s) >= last + 3))
}

# second_run_ended JOBID: requeued at least once and in a final state now.
second_run_ended() {
    local info
    info=$(scontrol show job "$1") || return 1
    grep -qE 'Restarts=[1-9]' <<<"$info" &&
        ! grep -qE 'JobState=(PENDING|CONFIGURING|RUNNING|COMPLETING|REQUEUED|SUSPENDED)' <<<"$info"
}

# job_story JOBID: what Slurm says of the job, for a failure's report.
job_story() {
    scontrol show job "$1" || true
    grep -E "JobId=$1[^0-9]|job $1[^0-9]|StepId=$1[.]" "$VCLUSTER_DIR"/log/slurmctld.log "$VCLUSTER_DIR"/log/slurmd-*.log | tail -40 || true
}

@test "the time limit hits while staging: the job times out, the script never runs, nothing is left" {
    RATE=200K slow_staging_job --time=1
    # The limit ends now, while n1 writes: slurmctld's next time-limit check
    # (every 30 s) ends the job as its minute running out would, without
    # waiting out the minute (the test took 83 s so).
    end_limit_now "$job"
    on_node n1 test -e "/dev/shm/dlstage/$job/.partial-big"
    wait_job_gone "$job" 180
    out
    [ "$(job_state "$job")" = TIMEOUT ]
    ! out | grep -q SCRIPT-RAN || false
    out | grep -q "DUE TO TIME LIMIT"
    out | grep -qx "dlstage: staging was cut off by this job's time limit: ask for more time (--time)"
    assert_no_leftovers
    assert_healthy
}

@test "the time limit hits while staging to scratch: TIMEOUT, saying so, and the next job goes on from its copy" {
    local mine="$DLSTAGE_TEST_DIR/scratch/dlstage/$VCLUSTER_USER"
    forget_kept_copy "$mine" big
    run as_user sbatch --parsable -N3 --time=1 -o out.txt --export=ALL,DLSTAGE_RATE_LIMIT=200K \
        --stage-data=big:scratch --wrap 'echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    for _ in $(seq 300); do
        [ -n "$(find "$mine/.partial-big" -type f -size +0 2>/dev/null)" ] && break
        sleep 0.2
    done
    end_limit_now "$job"
    wait_job_gone "$job" 180
    out
    [ "$(job_state "$job")" = TIMEOUT ]
    ! out | grep -q SCRIPT-RAN || false
    out | grep -qx "dlstage: staging was cut off by this job's time limit: ask for more time (--time); what it copied of big in scratch is kept, and the next staging goes on from it"
    out | grep "cut off by this job's time limit" | doc_says "$USER_GUIDE" "cut off by this job's time limit"
    run as_user srun -N3 --stage-data=big:scratch bash -c 'test "$(stat -c %s "$DLSTAGE_BIG")" = 67108864 && echo SIZE-OK'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"dlstage: big: going on from the copy job $job began; "* ]]
    [ "$(grep -c SIZE-OK <<<"$output")" -eq 3 ]
    assert_healthy
}

@test "the epilog run a second time (by hand, as slurmd would): harmless, nothing removed twice, no error" {
    run as_user srun -N3 --stage-data=tree:shm,sample:ssd bash -c 'echo $SLURM_JOB_ID'
    [ "$status" -eq 0 ]
    job=${lines[-1]}
    wait_job_gone "$job"
    for node in n1 n2 n3; do
        [ "$(epilog_value "$job" "$node" 'r["removed"] > 0')" = True ]
    done
    assert_no_leftovers
    for node in n1 n2 n3; do
        run on_node "$node" env SLURM_JOB_ID="$job" SLURM_JOB_UID="$(id -u "$VCLUSTER_USER")" \
            SLURM_JOB_GID="$(id -g "$VCLUSTER_USER")" SLURM_JOB_USER="$VCLUSTER_USER" SLURMD_NODENAME="$node" \
            "$DLSTAGE_TEST_DIR/bin/run-job-script" "$DLSTAGE_PLUGIN" epilog "tree:shm,sample:ssd" \
            "config=$DLSTAGE_TEST_DIR/dlstage.toml"
        echo "$output"
        [ "$status" -eq 0 ]
        ! grep -q error <<<"$output" || false
        [ "$(record_value "$STATE/jobs/$job/$node.epilog.toml" 'r["status"], r["removed"]')" = "('cleaned', 0)" ]
    done
    assert_healthy
}

@test "slurmd restarted on a node while staging: the job completes, the new slurmd's epilog cleans up" {
    slow_staging_job
    wait_for_partial n2 "$job" big
    "$VCLUSTER" restart --dir "$VCLUSTER_DIR" n2
    wait_job_gone "$job" 120
    out
    [ "$(job_state "$job")" = COMPLETED ]
    out | grep -q SIZE-OK
    assert_epilogs_cleaned "$job"
    assert_no_leftovers
    assert_healthy
}

@test "a job requeued while staging: the first run is cleaned up, the second stages again and runs" {
    slow_staging_job --requeue
    scontrol requeue "$job"
    # The first run's epilog, then a second run (same job id, same paths).
    for _ in $(seq 600); do
        second_run_ended "$job" && break
        # slurmctld holds a requeued job back for cred_expire (120 s): let it
        # go sooner, but only once every node's epilog of the first run is
        # done and 3 seconds have passed.  Each slurmd revoked the first
        # run's credential before its epilog; a new one made in that same
        # second counts as revoked too, and slurmctld kills the job for it.
        # And Slurm 22.05's slurmd forgets the revoked credential only with
        # a scan it skips if it scanned under 2 s ago (the epilog's end
        # scans): then it takes the second run for the first and runs no
        # prolog (a CI run failed so; job/job_layout.hpp).
        [ "$(job_state "$job")" = PENDING ] && first_run_over "$job" &&
            { scontrol update jobid="$job" starttime=now 2>/dev/null || true; }
        sleep 0.5
    done
    out
    [ "$(job_state "$job")" = COMPLETED ] || { job_story "$job"; false; }
    out | grep -q SIZE-OK
    [ "$(out | grep -c '^dlstage: staged big to shm on 3 nodes')" -eq 1 ]
    assert_no_leftovers
    assert_healthy
}
