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
    if [ -n "${stopped_slurmd:-}" ]; then
        kill -CONT "$stopped_slurmd" 2>/dev/null || true
        stopped_slurmd=""
    fi
    if [ -n "${cut_rules:-}" ]; then
        uncut_links
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

# start_gib_exchange NODE RATE: a 3-node batch job staging `train` (1 GiB
# of random bytes, one file) to ssd, each node reading its third at RATE and
# sending it to the others; sets $job once NODE is writing it.  The
# watchdog's faults strike mid-exchange, as the issue that asked for them
# put it: a 1 GiB exchange on 3 nodes.
start_gib_exchange() {
    with_gib_dataset
    run as_user sbatch --parsable -N3 -o out.txt --export=ALL,DLSTAGE_RATE_LIMIT="$2",DLSTAGE_PROGRESS=1 \
        --stage-data=train:ssd --wrap 'echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_for_partial "$1" "$job" train /local/dlstage
}

# with_gib_dataset: the catalog gains `train`, 1 GiB of random bytes made
# once per cluster (6 s of the machine's time: not in start-cluster, which
# every cluster runs); the catalog is restored in teardown.
with_gib_dataset() {
    local src=$DLSTAGE_TEST_DIR/data/gib.bin
    if [ ! -e "$src" ]; then
        head -c 1G /dev/urandom >"$src.new"
        chmod 0644 "$src.new"
        mv "$src.new" "$src"
    fi
    save_conf
    printf '\n[datasets.train]\nsource = "%s"\ntiers  = ["ssd"]\n' "$src" >>"$DLSTAGE_TEST_DIR/dlstage.toml"
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

# with_crashing_launcher N: the site's launcher becomes a wrapper of srun
# whose first N launches of the stager crash task 1 by SIGSEGV as it starts
# (as Open MPI 4.1 can in MPI_Init); srun ends the other tasks.  The
# catalog is restored in teardown.
with_crashing_launcher() {
    local dir launcher
    dir=$(user_workdir)
    launcher="$dir/crashing-launcher"
    cat >"$launcher" <<'EOF'
#!/bin/bash
# crashing-launcher COUNT_FILE CRASHES SRUN [ARGS...]
count_file=$1 crashes=$2
shift 2
srun_args=()
for arg in "$@"; do
    if [[ $arg == */dlstage-stager ]]; then
        n=$(cat "$count_file" 2>/dev/null || echo 0)
        [ "$n" -lt "$crashes" ] || exec "$@"
        echo $((n + 1)) >"$count_file"
        exec "${srun_args[@]}" /bin/bash -c \
            '[ "$SLURM_PROCID" != 1 ] || kill -SEGV $$; sleep 30'
    fi
    srun_args+=("$arg")
done
exec "$@"
EOF
    chmod 0755 "$launcher"
    rm -f "$dir/launches"
    chown "$VCLUSTER_USER" "$launcher" "$dir"
    save_conf
    sed -i -E "s|^launcher *=.*|launcher = \"$launcher $dir/launches $1 srun --mpi=pmix --overlap --ntasks-per-node=1\"|" \
        "$DLSTAGE_TEST_DIR/dlstage.toml"
}

# staged_with_crashes N: a 3-node batch job staging `tree` through a
# launcher whose first N stager launches crash; sets status, output (the
# job id first) and out (the job's output).
staged_with_crashes() {
    with_crashing_launcher "$1"
    run sbatch_wait as_user sbatch --parsable -N3 -o out.txt --stage-data=tree:shm --wrap 'echo SCRIPT-RAN'
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    # each crash said, then launched again: two relaunches at most
    [ "$(grep -cE '^dlstage: the stager crashed while starting \(n2: task 1: Segmentation fault( \(core dumped\))?\) before it staged anything; launching it once more$' <<<"$out")" -eq 2 ]
    doc_says "$ADMIN_GUIDE" 'the stager crashed while starting' <<<"$out"
    wait_job_gone "${output%%;*}"
}

@test "a stager that crashes as it starts is launched again, three launches in all; then the job fails" {
    local out
    staged_with_crashes 2
    [ "$status" -eq 0 ]
    grep -q "^dlstage: staged tree to shm on 3 nodes" <<<"$out"
    grep -qx SCRIPT-RAN <<<"$out"
    [ "$(cat "$(user_workdir)/launches")" = 2 ]
    # Three crashes: the third is final, the script never runs.
    staged_with_crashes 3
    [ "$status" -ne 0 ]
    grep -qE "^dlstage: staging tree:shm failed on n2: the stager ended early \\(n2: task 1: Segmentation fault" <<<"$out"
    ! grep -q SCRIPT-RAN <<<"$out" || false
    [ "$(job_state "${output%%;*}")" = FAILED ]
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

@test "a walked tree that outgrows one node's room part-way: refused on that node only, nothing left" {
    # 76 MiB in 19 directories (sparse: the copies take the room): under
    # shm's max_bytes (80M), over n3's 72 MiB; walked while it moves, so
    # n3 finds it too large only part-way, while the segments before are
    # still being written (their room is counted as taken).
    local tree
    tree="$(user_workdir)/wide"
    for d in $(seq -w 1 19); do
        mkdir -p "$tree/d$d"
        truncate -s 2M "$tree/d$d/a.bin" "$tree/d$d/b.bin"
    done
    chown -R "$VCLUSTER_USER" "$tree"
    run as_user srun -w n1,n3 -N2 --stage-data="$tree:shm" true
    echo "$output"
    [ "$status" -ne 0 ]
    grep -q "walking it meanwhile" <<<"$output"
    grep -q "dlstage: staging wide to shm failed on n3: dataset 'wide' needs 76.0 MiB but tier 'shm' has only .* free" <<<"$output"
    # As submit would have said, had it known the size: how a split fits.
    grep -q "has only .* free;.*; it would fit split on 2 or more nodes, more if the rest of the tree (not walked yet) is large: --stage-data=$tree:shm:split with -N 2 or more" <<<"$output"
    ! grep -q "failed on n1" <<<"$output" || false
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
    with_stall_bound 8
    start_gib_exchange "$1" 2M
    victim=$(stager_rank_on "$1" "$job")
    kill -STOP "$victim"
    ended_naming "$(date +%s)" \
        "dlstage: staging train to ssd failed on n[1-3]: no word from $1 \\(rank $2\\) for 8 s \\(site.stall_timeout\\)"
    # The line the guides and dlstage.toml(5) show, word for word.
    for doc in "$USER_GUIDE" "$ADMIN_GUIDE" "$MAN5"; do
        doc_says "$doc" "no word from n2" <<<"$out"
    done
}

# connections_of PID: "LOCAL_PORT PEER_PORT" of each TCP connection PID
# holds (on loopback: every node of the test cluster is on 127.0.0.1).
connections_of() {
    "$BATS_TEST_DIRNAME/../cluster/cut-links" of "$1"
}

# cut_links PORT PEER...: the connections (LOCAL_PORT PEER_PORT pairs) go
# silent both ways, as a cut cable or a dead switch port leaves them
# (tests/cluster/cut-links).  Undone by uncut_links (teardown too).
cut_links() {
    cut_rules=dlstage-test-$$
    "$BATS_TEST_DIRNAME/../cluster/cut-links" cut "$cut_rules" "$@"
}

uncut_links() {
    "$BATS_TEST_DIRNAME/../cluster/cut-links" uncut "$cut_rules"
    cut_rules=""
}

# with_stall_bound SECONDS: the site's stall bound cut (300 s by default);
# restored in teardown.
with_stall_bound() {
    save_conf
    sed -i "/^\[site\]/a stall_timeout = $1" "$DLSTAGE_TEST_DIR/dlstage.toml"
}

# save_conf: dlstage.toml as it was before this test's first change, for teardown.
save_conf() {
    [ -z "${restore_conf:-}" ] || return 0
    cp "$DLSTAGE_TEST_DIR/dlstage.toml" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
}

# ended_naming SINCE LINE: the job ended within the stall bound (8 s) and
# 30 s of SINCE, failed, its script not run, its output saying LINE (a
# regex); nothing left, no node drained, and a job on every node works.
ended_naming() {
    wait_job_gone "$job" 60
    took=$(($(date +%s) - $1))
    echo "the job ended $took s after the fault"
    [ "$took" -le $((8 + 30)) ]
    [ -z "${cut_rules:-}" ] || uncut_links
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    [ "$(job_state "$job")" = FAILED ]
    ! grep -q SCRIPT-RAN <<<"$out" || false
    grep -qE "$2" <<<"$out"
    assert_no_leftovers
    assert_healthy
    run as_user srun -N3 --stage-data=sample:shm bash -c 'test -f "$DLSTAGE_SAMPLE/a.txt" && echo OK-$SLURMD_NODENAME'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^OK-n' <<<"$output")" -eq 3 ]
}

@test "a node's network cut mid-transfer: the job ends within the stall bound, naming the node" {
    with_stall_bound 8
    start_gib_exchange n2 2M
    victim_rank=$(stager_rank_on n2 "$job")
    read -ra links <<<"$(connections_of "$victim_rank" | tr '\n' ' ')"
    [ "${#links[@]}" -ge 4 ] || { echo "n2's stager holds ${#links[@]} port numbers: $(ss -tnp)"; false; }
    cut_links "${links[@]}"
    ended_naming "$(date +%s)" \
        "dlstage: staging train to ssd failed on n[1-3]: no word from (n2 \(rank 1\)|any of n1 \(rank 0\), n3 \(rank 2\) for 8 s \(site.stall_timeout\): n2 \(rank 1\) was cut off)"
    # n2's own line, when it came first, as the admin guide shows it.
    ! grep -q "was cut off from the others" <<<"$out" ||
        doc_says "$ADMIN_GUIDE" "was cut off from the others" <<<"$out"
}

@test "the link between two nodes cut mid-transfer (n2 to n3): the job ends within the stall bound, naming them" {
    with_stall_bound 8
    start_gib_exchange n3 2M
    from=$(stager_rank_on n2 "$job")
    to=$(stager_rank_on n3 "$job")
    # n3's stager's ports, and those of n2's connections that lead to them.
    to_ports=" $(connections_of "$to" | awk '{print $1}' | tr '\n' ' ') "
    links=()
    while read -r port peer; do
        [[ "$to_ports" == *" $peer "* ]] && links+=("$port" "$peer")
    done < <(connections_of "$from")
    [ "${#links[@]}" -ge 2 ] || { echo "no connection between n2's and n3's stagers: $(ss -tnp)"; false; }
    cut_links "${links[@]}"
    # Both still reach n1 (rank 0): the ring neighbours' heartbeats tell.
    ended_naming "$(date +%s)" \
        "dlstage: staging train to ssd failed on n[23]: no word from (n3 \(rank 2\)|n2 \(rank 1\)) for 8 s"
}

@test "a node's slurmd stopped mid-transfer for less than SlurmdTimeout: the staging goes on, the job runs" {
    # slurmd is not on the chunks' path: the stagers and their slurmstepds
    # go on while it is stopped, and no heartbeat is missed.
    # 1 GiB at 8 MB/s per reading node: about 45 s, the stop inside it.
    with_stall_bound 8
    start_gib_exchange n2 8M
    slurmd=$(cat "$VCLUSTER_DIR/run/slurmd-n2.pid")
    kill -STOP "$slurmd"
    stopped_slurmd=$slurmd # teardown: never left stopped
    sleep 20               # SlurmdTimeout is 30 s
    kill -CONT "$slurmd"
    stopped_slurmd=""
    wait_job_gone "$job" 180
    out=$(cat "$(user_workdir)/out.txt")
    echo "$out"
    [ "$(job_state "$job")" = COMPLETED ]
    grep -q SCRIPT-RAN <<<"$out"
    grep -q "^dlstage: staged train to ssd on 3 nodes" <<<"$out"
    assert_healthy
}

@test "a stager rank stopped mid-transfer (SIGSTOP): the job ends within the stall bound, naming its node" {
    stall_on n2 1
}

@test "rank 0 stopped mid-transfer: the other ranks end the job, naming its node" {
    stall_on n1 0
}

@test "a stager rank stopped as it starts (in MPI_Init, before the watchdog runs): the job ends within the bound" {
    # MPI_Init waits for every rank, and the watchdog cannot start before
    # it: the soak once stopped a rank there (and one in MPI_Finalize), and
    # the others waited for it for ever.  Stopped the moment it appears.
    with_stall_bound 8
    run as_user sbatch --parsable -N3 -o out.txt --stage-data=big:shm --wrap 'echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    for ((i = 0; i < 2000; i++)); do
        victim=$(stager_rank_on n2 "$job") && break
        sleep 0.005
    done
    [ -n "$victim" ]
    kill -STOP "$victim"
    ended_naming "$(date +%s)" \
        "dlstage: staging (big(:| to )shm )?failed on n[1-3]: (the stagers' start \(MPI_Init\) waited 8 s for the other nodes \(site.stall_timeout\)|no word from n2 \(rank 1\) for 8 s|its stager still ran 8 s after the others had ended)"
    if grep -q "the stagers' start (MPI_Init) waited" <<<"$out"; then
        doc_says "$ADMIN_GUIDE" "the stagers' start" <<<"$out"
    else
        echo "(caught after MPI_Init this time: the watchdog named it)" >&3
    fi
}
