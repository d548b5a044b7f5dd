#!/usr/bin/env bats
# Bad input and faults at job time: each gives a clear message, the user's
# program does not start (or the job fails), nothing is left on any node,
# and no node is drained.

load helpers

teardown() {
    # Whatever a test left running must not spill into the next one.
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    if [ -n "${victim:-}" ]; then
        kill -KILL "$victim" 2>/dev/null || true
        victim=""
    fi
    if [ -n "${restore_conf:-}" ]; then
        cp "$BATS_TEST_TMPDIR/dlstage.toml.saved" "$DLSTAGE_TEST_DIR/dlstage.toml"
        restore_conf=""
    fi
}

# stager_rank_on NODE JOB: the pid of JOB's dlstage-stager rank on NODE: a
# process whose environment says that node, that job and this cluster
# (another cluster on the machine may run the same test user's stagers).
stager_rank_on() {
    local pid environ
    for pid in $(this_clusters "$VCLUSTER_USER" dlstage-stager); do
        environ=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
        if grep -qx "SLURMD_NODENAME=$1" <<<"$environ" && grep -qxF "SLURM_JOB_ID=$2" <<<"$environ"; then
            echo "$pid"
            return 0
        fi
    done
    return 1
}

# start_slow_staging NODE: a 3-node batch job staging `big` slowly (2 MB/s
# per reading node); sets $job once NODE is writing it.
start_slow_staging() {
    run as_user sbatch --parsable -N3 -o out.txt --export=ALL,DLSTAGE_RATE_LIMIT=2M,DLSTAGE_PROGRESS=1 \
        --stage-data=big:shm --wrap 'echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_for_partial "$1" "$job" big
}

@test "hostile tar (../x, /etc/x): refused naming the entry, nothing escapes, no leftovers" {
    run as_user srun -N3 --stage-data=hostile true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: staging hostile to shm failed on n"*": unsafe entry '../escape.txt' in $DATA/hostile.tar: its path leaves the destination"* ]]
    doc_says "$USER_GUIDE" "unsafe entry '../escape.txt'" <<<"$output"
    [ ! -e /etc/dlstage-hostile.txt ]
    for node in n1 n2 n3; do
        ! on_node "$node" sh -c 'ls /dev/shm/escape.txt /dev/shm/dlstage/escape.txt /etc/dlstage-hostile.txt' 2>/dev/null || false
    done
    assert_no_leftovers
    assert_healthy
}

@test "setuid bits in an archive are stripped, and the job is told" {
    run as_user srun -N3 --stage-data=suid bash -c 'echo $(hostname) $(stat -c %a $DLSTAGE_SUID/tool)'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^dlstage: suid: removed setuid/setgid/sticky bits from 1 entries" <<<"$output"
    each_node_says "$output" "755"
}

@test "failed staging in a batch job: the script never runs, the job fails with the reason" {
    run sbatch_wait as_user sbatch --parsable -N3 -o out.txt --stage-data=hostile --wrap 'echo SCRIPT-RAN'
    [ "$status" -ne 0 ]
    job=${output%%;*}
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    ! grep -q SCRIPT-RAN <<<"$out" || false
    grep -q "dlstage: staging hostile to shm failed on n" <<<"$out"
    wait_job_gone "$job"
    [ "$(job_state "$job")" = FAILED ]
    assert_no_leftovers
    assert_healthy
}

@test "one node out of room (ENOSPC on n3 only): the job fails naming n3, no leftovers, no drain" {
    run as_user srun -N3 --stage-data=tree:shm,big:shm true
    echo "$output"
    [ "$status" -ne 0 ]
    grep -q "dlstage: staging big to shm failed on n3: dataset 'big' needs 64.0 MiB but tier 'shm' has only" <<<"$output"
    doc_says "$USER_GUIDE" "staging big to shm failed on n3: .* has only" 'ssd=ssd, scratch' <<<"$output"  # this site has scratch too
    ! grep -q "failed on n[12]" <<<"$output" || false
    assert_no_leftovers
    assert_healthy
}

@test "the prolog's space check (sizes known at submit) fails the job on the full node only" {
    run as_user srun -N3 --stage-data=b76:shm true
    echo "$output"
    [ "$status" -ne 0 ]
    grep -q "dlstage: staging b76 to shm failed on n3: dataset 'b76' needs 76.0 MiB but tier 'shm' has only .* free on n3" <<<"$output"
    ! grep -q "failed on n[12]" <<<"$output" || false
    grep -q "needs 76.0 MiB" "$VCLUSTER_DIR/log/slurmd-n3.log"   # logged by the prolog on n3
    assert_no_leftovers
    assert_healthy
}

@test "scancel while staging: no leftovers, no drained node" {
    start_slow_staging n1
    # Meanwhile the progress record shows a transfer under way.
    rec="$STATE/jobs/$job/user/progress-big.toml"
    wait_for_file "$rec" 20
    for _ in $(seq 100); do
        [ "$(record_value "$rec" 'r["bytes_done"] > 0')" = True ] && break
        sleep 0.2
    done
    cat "$rec"
    [ "$(record_value "$rec" 'r["state"]')" = staging ]
    [ "$(record_value "$rec" '0 < r["bytes_done"] < r["bytes_total"] == 64 * 2**20')" = True ]
    # and so does `dlstage status`, for the job's user, from outside the job
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status "$job"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^$job +[^ ]+ +big +shm +3 +staging +[0-9]+% +([0-9.]+[KMGT]?/s|-) +64M +1 +[0-9]+:[0-9]{2} +n\[1-3\]$" <<<"$output"
    scancel "$job"
    wait_job_gone "$job"
    [ "$(job_state "$job")" = CANCELLED ]
    ! grep -q SCRIPT-RAN "$(user_workdir)/out.txt" || false
    for node in n1 n2 n3; do
        wait_for_file "$STATE/jobs/$job/$node.epilog.toml" 30
    done
    assert_no_leftovers
    assert_healthy
}

@test "a stager rank killed with SIGKILL mid-transfer: the job fails naming the node, nothing hangs" {
    start_slow_staging n2
    victim=$(stager_rank_on n2 "$job")
    kill -9 "$victim"
    victim=""
    wait_job_gone "$job" 60
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    [ "$(job_state "$job")" = FAILED ]
    ! grep -q SCRIPT-RAN <<<"$out" || false
    grep -q "dlstage: staging big:shm failed on n2: the stager ended early" <<<"$out"
    assert_no_leftovers
    assert_healthy
}

# stall_on NODE RANK: a 3-node staging whose rank on NODE (RANK) stops
# answering mid-transfer (SIGSTOP), as a rank stopped, or a node frozen
# under memory pressure, would, with the site's stall bound cut to 8 s (300
# s by default): once the others waited in MPI for it until the job's time
# limit, and nothing said which node it was.  Now the job ends within the
# bound and 30 s, failed, its script not run, the line naming NODE, nothing
# left and no node drained.
stall_on() {
    cp "$DLSTAGE_TEST_DIR/dlstage.toml" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
    sed -i '/^\[site\]/a stall_timeout = 8' "$DLSTAGE_TEST_DIR/dlstage.toml"
    start_slow_staging "$1"
    victim=$(stager_rank_on "$1" "$job")
    kill -STOP "$victim"
    stopped=$(date +%s)
    wait_job_gone "$job" 60
    took=$(($(date +%s) - stopped))
    echo "the job ended $took s after the rank stopped"
    [ "$took" -le $((8 + 30)) ]
    victim=""
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    [ "$(job_state "$job")" = FAILED ]
    ! grep -q SCRIPT-RAN <<<"$out" || false
    grep -qE "dlstage: staging big to shm failed on n[1-3]: no word from $1 \\(rank $2\\) for 8 s \\(site.stall_timeout\\)" \
        <<<"$out"
    # The line the guides and dlstage.toml(5) show, word for word.
    for doc in "$USER_GUIDE" "$ADMIN_GUIDE" "$MAN5"; do
        doc_says "$doc" "no word from n2" <<<"$out"
    done
    assert_no_leftovers
    assert_healthy
}

@test "a stager rank stopped mid-transfer (SIGSTOP): the job ends within the stall bound, naming its node" {
    stall_on n2 1
    # The healthy nodes, and n2 too, take the next job.
    run as_user srun -N3 --stage-data=sample:shm bash -c 'test -f "$DLSTAGE_SAMPLE/a.txt" && echo OK-$SLURMD_NODENAME'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^OK-n' <<<"$output")" -eq 3 ]
}

@test "rank 0 stopped mid-transfer: the other ranks end the job, naming its node" {
    stall_on n1 0
}
