#!/usr/bin/env bats
# Two-hop staging: datasets with reach = "mover" live on LARGEDATA, which
# only the mover node (n4, partition mover) sees.  A job asking for one
# waits (Slurm's afterok, holding no nodes) for a mover job that copies it
# into scratch; then the job's own nodes stage from that copy.  LARGEDATA
# is served on n4 by pfssim here, so that what the mover reads is counted.

load helpers

SCRATCH="$DLSTAGE_TEST_DIR/scratch/dlstage"
PFS="$DLSTAGE_TEST_DIR/largedata"
SRC="$DLSTAGE_TEST_DIR/largedata-src/data"
PFSSIM="$DLSTAGE_TEST_DIR/bin/pfssim"
MOVER_NODE=${DLSTAGE_TEST_MOVER_NODE:-n4}

stats_of() { echo "$DLSTAGE_TEST_DIR/pfs-stats-mover-$1"; }

setup_file() {
    mount_pfs "$MOVER_NODE"
}

teardown_file() {
    unmount_pfs "$MOVER_NODE"
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scontrol update partitionname=mover state=up 2>/dev/null || true
    scontrol update nodename="$MOVER_NODE" state=resume 2>/dev/null || true
}

mine() { echo "$SCRATCH/$VCLUSTER_USER"; }
copy_value() { record_value "$(mine)/.ready-$1.toml" "$2"; }

dlstage() { as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" "$@"; }

forget() { forget_kept_copy "$(mine)" "$1"; }

# Bytes the mover node's pfssim has served so far.
pfs_bytes_read() {
    local pid
    pid=$(pgrep -f -- "--stats $(stats_of "$MOVER_NODE")" | head -n1)
    [ -n "$pid" ] || { echo "no pfssim on $MOVER_NODE" >&2; return 1; }
    kill -USR1 "$pid"
    sleep 0.3
    sed -n 's/^bytes_read=//p' "$(stats_of "$MOVER_NODE")"
}

# The user's mover jobs Slurm knows of, for a dataset (live: queued or running).
movers_of() { squeue -h -t all -u "$VCLUSTER_USER" -n "dlstage-mover-$1" -o %i | sort -n | tr '\n' ' '; }
live_movers_of() { squeue -h -t pending,running,configuring -u "$VCLUSTER_USER" -n "dlstage-mover-$1" -o %i | tr '\n' ' '; }

# A job that prints, on each of its 3 nodes, "NODE DIGEST" of $DLSTAGE_<NAME>.
digest_job() {
    cat >"$(user_workdir)/digest.sh" <<SH
#!/bin/bash
srun -N3 --ntasks-per-node=1 bash -c 'p=DLSTAGE_$1; echo "\$(hostname) \$("$DIGEST" "\${!p}")"'
SH
    chmod 0755 "$(user_workdir)/digest.sh"
    echo "$(user_workdir)/digest.sh"
}

# submit ENV... -- SBATCH ARGS...: sbatch as the user, keeping stderr (the
# plugin's lines) in $submitted and the job id in $job.
submit() {
    local env=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    submitted=$(as_user env "${env[@]}" sbatch --parsable "$@" 2>&1)
    job=$(grep -E '^[0-9]+$' <<<"$submitted")
    [ -n "$job" ] || { echo "no job id from sbatch: $submitted"; return 1; }
}

mover_in() { grep -oE 'mover job [0-9]+' <<<"$1" | head -n1 | grep -oE '[0-9]+'; }

# slow_mover NAME RATE SBATCH_ARGS...: no copy of NAME; a job (SBATCH_ARGS)
# whose mover job reads at RATE; $job, $mover; returns once it wrote a
# file's bytes (its first chunk, 4 MiB, comes at once).
slow_mover() {
    local name=$1 rate=$2 written=
    shift 2
    forget "$name"
    submit DLSTAGE_RATE_LIMIT="$rate" -- "$@" --stage-data="$name:shm" --wrap true
    mover=$(mover_in "$submitted")
    for _ in $(seq 150); do
        written=$(find "$(mine)/.partial-$name" -type f -size +0 2>/dev/null | head -n1)
        [ -n "$written" ] && break
        sleep 0.2
    done
    [ -n "$written" ] || { echo "the mover job $mover of $name did not begin to write"; return 1; }
}

@test "the compute nodes cannot see LARGEDATA; the mover node can" {
    for node in n1 n2 n3; do
        [ -z "$(on_node "$node" ls -A "$PFS")" ]
    done
    on_node "$MOVER_NODE" test -d "$PFS/in21k"
    ! as_user ls "$SRC"
}

@test "a job waits for its mover job, then every node holds the exact bytes, read once on the mover node" {
    forget in21k
    want=$("$DIGEST" "$SRC/in21k")
    files_bytes=$(find "$SRC/in21k" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
    before=$(pfs_bytes_read)
    script=$(digest_job IN21K)
    submit DLSTAGE_RATE_LIMIT=2M -- -N3 --stage-data=in21k:shm -o "$(user_workdir)/w-%j.out" "$script"
    mover=$(mover_in "$submitted")
    [ -n "$mover" ]
    grep -q "in21k: there is no complete copy in scratch yet: mover job $mover copies it there; this job waits for it" <<<"$submitted"
    doc_says "$USER_GUIDE" 'no complete copy in scratch yet: mover job [0-9]+ copies it there' <<<"$submitted"
    # Slurm's own dependency: the job holds no nodes while it waits.
    [[ "$(squeue -h -j "$job" -o '%T %E')" == "PENDING afterok:$mover"* ]]
    [ "$(squeue -h -j "$mover" -o '%P %j')" = "mover dlstage-mover-in21k" ]
    run dlstage status -j "$job"
    [[ "$output" == *"waits for mover job $mover"* ]]
    run dlstage status --dataset in21k
    grep -Eq "^mover job $mover (PENDING|RUNNING|CONFIGURING): copying in21k to scratch \(output: $(mine)/.mover-in21k.out\)$" <<<"$output"
    wait_job_gone "$job" 120
    [ "$(job_state "$mover")" = COMPLETED ]
    [ "$(job_state "$job")" = COMPLETED ]
    out=$(cat "$(user_workdir)/w-$job.out")
    each_node_says "$out" "$want"
    grep -q "from $(mine)/in21k to shm on 3 nodes" <<<"$out"
    # Read once, on the mover node alone (the compute nodes see no source):
    # every byte, and not 1% more (pfssim counts what the kernel asked for).
    after=$(pfs_bytes_read)
    read=$((after - before))
    [ "$read" -ge "$files_bytes" ] && [ "$read" -le $((files_bytes * 101 / 100)) ] ||
        { echo "read $read of $files_bytes"; false; }
    grep -q "staged in21k to scratch (one shared copy) by 1 nodes" "$(mine)/.mover-in21k.out"
    # The first copy: staged while its source is walked, no identity first.
    grep -qx "dlstage: staging in21k from $PFS/in21k to scratch (one shared copy) by 1 nodes, walking it meanwhile" \
        "$(mine)/.mover-in21k.out"
    doc_says "$USER_GUIDE" 'scratch \(one shared copy\) by [0-9]+ nodes, walking it meanwhile' \
        <"$(mine)/.mover-in21k.out"
    # A mover job only makes the copy: it is no reader that keeps one alive.
    [ ! -e "$(mine)/.readers-in21k/$mover" ]
    assert_healthy
    assert_no_leftovers
    [ -z "$(on_node "$MOVER_NODE" find /dev/shm/dlstage /local/dlstage -mindepth 1 -maxdepth 2 2>/dev/null)" ]
}

@test "a later job's mover job checks the copy against the source, reading no bytes; an immutable one needs none" {
    before=$(pfs_bytes_read)
    script=$(digest_job IN21K)
    submit -- -N3 --stage-data=in21k:ssd -o "$(user_workdir)/w-%j.out" "$script"
    grep -q "in21k: the source may have changed since the copy in scratch was made: mover job [0-9]* copies it there" <<<"$submitted"
    doc_says "$USER_GUIDE" 'the source may have changed since' <<<"$submitted"
    mover=$(mover_in "$submitted")
    wait_job_gone "$job" 60
    [ "$(job_state "$job")" = COMPLETED ]
    each_node_says "$(cat "$(user_workdir)/w-$job.out")" "$("$DIGEST" "$SRC/in21k")"
    grep -q "in21k: reused the copy in $(mine)/in21k" "$(mine)/.mover-in21k.out"
    [ "$(pfs_bytes_read)" -eq "$before" ]
    # The via tier itself: the job uses the mover's copy, stages nothing.
    run as_user srun -N1 --stage-data=in21k:scratch bash -c 'echo "path $DLSTAGE_IN21K"'
    [ "$status" -eq 0 ]
    grep -qx "path $(mine)/in21k" <<<"$output"
    grep -q "in21k: using the copy in scratch its mover job made" <<<"$output"
    srun_job=$(squeue -h -t all -u "$VCLUSTER_USER" -n bash -o %i | sort -n | tail -n1)
    run dlstage status -j "$srun_job" -h -o '%T %f'
    [[ "$output" == "cleaned 301" || "$output" == "reused 301" ]] || { echo "status: $output"; false; }
    [ "$(pfs_bytes_read)" -eq "$before" ]
    # immutable = true: the site vouches for the source; its copy serves as it is.
    run dlstage prefetch far-file
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -z "$id" ] || wait_job_gone "$id" 60
    movers=$(movers_of far-file)
    submit -- -N1 --stage-data=far-file:shm --wrap 'test -s "$DLSTAGE_FAR_FILE"'
    grep -q "far-file: its copy in scratch is current: no mover job needed" <<<"$submitted"
    doc_says "$USER_GUIDE" 'no mover job needed' in21k=far-file <<<"$submitted"
    wait_job_gone "$job" 60
    [ "$(job_state "$job")" = COMPLETED ]
    [ "$(movers_of far-file)" = "$movers" ]
}

@test "a copy the purge may have reached is checked and repaired by a mover job, never read as complete" {
    # A complete copy, then the site's purge: the copy's files unused for
    # 95 days (its record says so), one of them gone.
    run dlstage prefetch in21k
    [ "$status" -eq 0 ]
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -z "$id" ] || wait_job_gone "$id" 60
    old=$(($(date +%s) - 95 * 86400))
    as_user sed -i "s/^oldest = .*/oldest = $old/" "$(mine)/.ready-in21k.toml"
    victim=$(find "$(mine)/in21k" -type f -size +1k | sort | head -n1)
    rm "$victim"
    script=$(digest_job IN21K)
    submit -- -N3 --stage-data=in21k:shm -o "$(user_workdir)/w-%j.out" "$script"
    grep -q "in21k: the site's purge may have taken files of the copy in scratch: mover job [0-9]* copies it there" <<<"$submitted"
    mover=$(mover_in "$submitted")
    wait_job_gone "$job" 60
    [ "$(job_state "$job")" = COMPLETED ]
    grep -q "repaired and reused the copy" "$(mine)/.mover-in21k.out"
    each_node_says "$(cat "$(user_workdir)/w-$job.out")" "$("$DIGEST" "$SRC/in21k")"
    [ -f "$victim" ]
}

@test "a copy its user changed is never staged: the job stops, saying so; the next one's mover job repairs it" {
    # far-file is immutable: no mover job looks at its copy before a job.
    run dlstage prefetch far-file
    [ "$status" -eq 0 ]
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -z "$id" ] || wait_job_gone "$id" 60
    # The user writes into the copy: same size, new bytes (submit's look at
    # the record cannot tell; the job's nodes check the copy itself).
    victim="$(mine)/far-file/one.bin"
    as_user bash -c 'chmod u+w "$1" && printf XXXX | dd of="$1" conv=notrunc status=none' - "$victim"
    want="sum $(cksum <"$SRC/one.bin")"
    for tier in shm scratch; do
        submit -- -N3 --stage-data=far-file:$tier -o "$(user_workdir)/c-%j.out" \
            --wrap 'srun -N3 bash -c "echo sum \$(cksum <\$DLSTAGE_FAR_FILE)"'
        grep -q "far-file: its copy in scratch is current: no mover job needed" <<<"$submitted"
        wait_job_gone "$job" 60
        [ "$(job_state "$job")" = FAILED ]
        out=$(cat "$(user_workdir)/c-$job.out")
        grep -q "far-file: the copy in scratch its mover job made has changed since (1 entry written to): it is not used; submit the job again, and a mover job repairs it from its source" <<<"$out" || { echo "$out"; false; }
        doc_says "$USER_GUIDE" 'has changed since' shm="$tier" in21k=far-file <<<"$out"
        ! grep -q '^sum ' <<<"$out" || false  # the script never ran
        [ "$(copy_value far-file 'r["found_changed"] > 0')" = True ]  # the next submission gets a mover job
        # Submitted again: a mover job repairs the copy, and the job gets the source's bytes.
        before=$(pfs_bytes_read)
        submit -- -N3 --stage-data=far-file:$tier -o "$(user_workdir)/c-%j.out" \
            --wrap 'srun -N3 bash -c "echo sum \$(cksum <\$DLSTAGE_FAR_FILE)"'
        grep -q "far-file: a job found the copy in scratch changed since its mover job made it: mover job [0-9]* copies it there" <<<"$submitted"
        doc_says "$USER_GUIDE" 'found the copy in scratch changed since' in21k=far-file <<<"$submitted"
        wait_job_gone "$job" 90
        grep -q "far-file: repaired and reused the copy" "$(mine)/.mover-far-file.out"
        [ "$(copy_value far-file 'r["found_changed"]')" = 0 ]
        [ "$(job_state "$job")" = COMPLETED ]
        [ "$(grep -c "^$want\$" "$(user_workdir)/c-$job.out")" -eq 3 ] || { cat "$(user_workdir)/c-$job.out"; false; }
        # ... and the user changes it once more, for the next tier
        as_user bash -c 'chmod u+w "$1" && printf YYYY | dd of="$1" conv=notrunc status=none' - "$victim"
    done
}

@test "two jobs submitted together share one mover job (and --test-only submits none)" {
    forget far-file
    run as_user sbatch --test-only -N1 --stage-data=far-file:shm --wrap true
    [[ "$output" == *"far-file: --test-only: no mover job is submitted"* ]]
    [ -z "$(live_movers_of far-file)" ]
    submit DLSTAGE_RATE_LIMIT=1M -- -N1 --stage-data=far-file:shm --wrap 'cmp "$DLSTAGE_FAR_FILE" /dev/null || true'
    first=$job
    mover=$(mover_in "$submitted")
    submit -- -N2 --stage-data=far-file:shm --wrap 'test -s "$DLSTAGE_FAR_FILE"'
    second=$job
    grep -q "mover job $mover is already copying it there; this job waits for it" <<<"$submitted"
    doc_says "$USER_GUIDE" 'is already copying it there' <<<"$submitted"
    [[ "$(squeue -h -j "$second" -o %E)" == "afterok:$mover"* ]]
    [ "$(live_movers_of far-file)" = "$mover " ]
    wait_job_gone "$first" 60
    wait_job_gone "$second" 60
    [ "$(job_state "$first")" = COMPLETED ]
    [ "$(job_state "$second")" = COMPLETED ]
    cmp "$(mine)/far-file/one.bin" "$SRC/one.bin"
}

@test "an srun that creates its job waits too, its own --dependency kept beside the mover's" {
    forget in21k
    first=$(as_user sbatch --parsable -N1 --wrap 'sleep 8')
    as_user env DLSTAGE_RATE_LIMIT=2M srun -N2 --dependency=afterany:"$first" --stage-data=in21k:shm \
        bash -c 'echo "$(hostname) $(find "$DLSTAGE_IN21K" -type f | wc -l)"' >"$(user_workdir)/srun.out" 2>&1 &
    srun_pid=$!
    mover=""
    for _ in $(seq 100); do mover=$(live_movers_of in21k); [ -n "$mover" ] && break; sleep 0.2; done
    mover=${mover% }
    [ -n "$mover" ]
    waiting=""
    for _ in $(seq 50); do
        waiting=$(squeue -h -t pending -u "$VCLUSTER_USER" -o '%i %E' | grep "afterok:$mover" || true)
        [ -n "$waiting" ] && break
        sleep 0.2
    done
    [[ "$waiting" == *"afterok:$mover"*"afterany:$first"* ]] || { echo "waiting: $waiting"; false; }
    wait "$srun_pid"
    grep -q "mover job $mover copies it there; this job waits for it" "$(user_workdir)/srun.out"
    [ "$(grep -cE '^n[123] 301$' "$(user_workdir)/srun.out")" -eq 2 ] || { cat "$(user_workdir)/srun.out"; false; }
}

@test "a mover job that cannot read the source ends the waiting job, and status says why" {
    forget far-bad
    submit -- -N3 --stage-data=far-bad:shm --wrap true
    mover=$(mover_in "$submitted")
    wait_job_gone "$mover" 60
    wait_job_gone "$job" 30
    [ "$(job_state "$mover")" = FAILED ]
    [ "$(job_state "$job")" = CANCELLED ]
    [[ "$(squeue -h -t all -j "$job" -o %k)" == "dlstage: mover job $mover for far-bad failed: "*"locked.bin: Permission denied" ]]
    run dlstage status -j "$job"
    [[ "$output" == *"failed"*"(mover job $mover failed: staging far-bad to scratch failed on $MOVER_NODE: cannot read"*"Permission denied)"* ]]
    [ ! -e "$(mine)/.ready-far-bad.toml" ]
    # Bad input, not a copy cut off: nothing half-written is left (its
    # first copy was staged while its source was walked).
    ls -a "$(mine)" | { ! grep -q '^\.partial-far-bad$\|^\.resume-far-bad\|^\.walked-far-bad$'; }
    assert_healthy
}

@test "a cancelled mover job ends the jobs waiting for it (salloc too) and leaves no copy a job trusts" {
    # The salloc asks while the mover job is pending (it shares only a
    # pending one: never stale), which then runs and is cancelled mid-copy.
    forget in21k
    scontrol update partitionname=mover state=down
    submit DLSTAGE_RATE_LIMIT=300K -- -N3 --stage-data=in21k:shm --wrap true
    mover=$(mover_in "$submitted")
    as_user salloc -N1 --stage-data=in21k:shm true >"$(user_workdir)/salloc.out" 2>&1 &
    salloc_pid=$!
    for _ in $(seq 50); do [ -n "$(squeue -h -t pending -n interactive -o %i)" ] && break; sleep 0.2; done
    scontrol update partitionname=mover state=up
    for _ in $(seq 100); do [ -e "$(mine)/.partial-in21k" ] && break; sleep 0.2; done
    [ -e "$(mine)/.partial-in21k" ]
    waiting=$(squeue -h -t pending -o '%i %E' | awk -v m="afterok:$mover" 'index($2, m) == 1 { print $1 }' | sort -n)
    [ "$(wc -l <<<"$waiting")" -eq 2 ]
    scancel "$mover"
    wait_job_gone "$mover" 60
    for w in $waiting; do
        wait_job_gone "$w" 30
        [ "$(job_state "$w")" = CANCELLED ]
        [[ "$(squeue -h -t all -j "$w" -o %k)" == "dlstage: mover job $mover for in21k failed: it was cancelled"* ]]
    done
    wait "$salloc_pid" || true
    grep -q "Job allocation .* has been revoked" "$(user_workdir)/salloc.out"
    [ ! -e "$(mine)/.ready-in21k.toml" ]
    # The next job does not trust the half copy: a new mover job makes it.
    submit -- -N1 --stage-data=in21k:shm --wrap true
    grep -q "there is no complete copy in scratch yet" <<<"$submitted"
    wait_job_gone "$job" 60
    [ "$(job_state "$job")" = COMPLETED ]
    [ "$("$DIGEST" "$(mine)/in21k")" = "$("$DIGEST" "$SRC/in21k")" ]
}

@test "dlstage prefetch: the mover job ahead of time, its id for --dependency" {
    forget far-file
    run dlstage prefetch far-file
    [ "$status" -eq 0 ]
    id=$(grep -E '^[0-9]+$' <<<"$output")
    [ -n "$id" ]
    grep -q "far-file: there is no complete copy in scratch yet: mover job $id copies it there" <<<"$output"
    doc_says "$MAN1" 'mover job [0-9]+ copies it there' in21k=far-file <<<"$output"
    run dlstage prefetch far-file
    [ "$status" -eq 0 ]
    grep -qx "$id" <<<"$output" || [ -z "$(grep -E '^[0-9]+$' <<<"$output")" ]
    wait_job_gone "$id" 60
    [ "$(job_state "$id")" = COMPLETED ]
    run dlstage prefetch far-file
    [ "$status" -eq 0 ]
    [ "$output" = "dlstage: far-file: your copy in scratch is current: no mover job needed" ]
    run dlstage prefetch sample
    [ "$status" -eq 1 ]
    [[ "$output" == *"'sample' is read on the compute nodes"* ]]
}

# Bytes of in21k's files at LARGEDATA.
in21k_bytes() { find "$SRC/in21k" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }'; }

# read_at_most BEFORE FACTOR10: LARGEDATA served no more than FACTOR10/10
# of in21k's bytes since BEFORE (pfs_bytes_read).
read_at_most() {
    local read size
    read=$(($(pfs_bytes_read) - $1))
    size=$(in21k_bytes)
    [ "$read" -ge "$size" ] && [ "$((read * 10))" -le "$((size * $2))" ] ||
        { echo "LARGEDATA served $read bytes for in21k's $size"; cat "$(mine)/.mover-in21k.out"; return 1; }
}

# let_requeued_run_go MOVER SINCE: once MOVER, requeued after SINCE (epoch
# seconds), is pending again, its next run goes at once.  Slurm holds a
# requeued job back for cred_expire (120 s): it is let go once its last
# run's epilog is 3 s old (44-lifecycle says why).
let_requeued_run_go() {
    local epilog="$STATE/jobs/$1/$MOVER_NODE.epilog.toml" at
    for _ in $(seq 240); do
        case $(job_state "$1") in RUNNING | COMPLETING | COMPLETED) return 0 ;; esac
        at=$(record_value "$epilog" 'r["time"]' 2>/dev/null || echo 0)
        if [ "$(job_state "$1")" = PENDING ] && ((at >= $2 && $(date +%s) >= at + 3)); then
            scontrol update jobid="$1" starttime=now 2>/dev/null || true
        fi
        sleep 0.5
    done
    echo "the requeued mover job $1 did not run again: $(job_state "$1")"
    return 1
}

# requeue_at_limit NAME SINCE [LINE]: once the running $mover's progress
# record says its run (begun after SINCE, epoch seconds) wrote bytes of
# NAME (and its output says LINE, a regex), its time limit comes in 30 s
# (EndTime); it requeues itself before it, saying so, its waiting $job
# stays pending (and so does a job submitted as it ends when $while_ending
# names a function that submits it), and its next run goes ($since: when).
requeue_at_limit() {
    local name=$1 line=${3:-} restarts out="$(mine)/.mover-$1.out" written=0
    local progress="$STATE/jobs/$mover/user/progress-$1.toml"
    for _ in $(seq 300); do
        written=$(record_value "$progress" "r['bytes_done'] if r['time'] >= $2 else 0" 2>/dev/null || echo 0)
        [ "$written" -gt 0 ] && { [ -z "$line" ] || grep -Eq "$line" "$out"; } && break
        sleep 0.2
    done
    [ "$written" -gt 0 ] || { echo "the mover job $mover of $name wrote nothing since $2"; cat "$out"; return 1; }
    [ -z "$line" ] || grep -Eq "$line" "$out" || { cat "$out"; return 1; }
    since=$(date +%s)
    restarts=$(scontrol show job "$mover" | grep -oE 'Restarts=[0-9]+')
    for _ in $(seq 20); do
        scontrol update jobid="$mover" EndTime=now+30 2>/dev/null && break
        sleep 0.5
    done
    for _ in $(seq 120); do
        [ "$(scontrol show job "$mover" | grep -oE 'Restarts=[0-9]+')" != "$restarts" ] && break
        sleep 0.5
    done
    [ -z "${while_ending:-}" ] || "$while_ending"
    grep -Eq "^dlstage: this mover job is requeued [0-9]+ s before its time limit \([0-9]+ min\): its next run goes on from the copy, and the jobs waiting for it wait for that$" "$out" ||
        { echo "mover job $mover: $(job_state "$mover"), $restarts before"; cat "$out"; return 1; }
    grep "is requeued" "$out" | doc_says "$USER_GUIDE" 'this mover job is requeued [0-9]+ s before its time limit'
    [ "$(job_state "$job")" = PENDING ] || { echo "job $job: $(job_state "$job")"; return 1; }
    let_requeued_run_go "$mover" "$since"
}

@test "a mover job at its time limit mid-copy requeues itself: the job waiting for it waits, and starts after" {
    before=$(pfs_bytes_read)
    # 100 KB/s in chunks of 4 MiB: the first chunk at once, the next after
    # 40 s; the limit, 30 s ahead, comes before it.
    since=$(date +%s)
    # The job itself stages from the copy at full speed.
    slow_mover in21k 100K -N3 --export=ALL,DLSTAGE_RATE_LIMIT=1G
    requeue_at_limit in21k "$since"
    requeued_mover_finishes
    doc_says "$USER_GUIDE" 'going on from the copy job [0-9]+ began; [0-9]+ of [0-9]+ files \([^)]*\) are there whole, attempt' \
        <"$(mine)/.mover-in21k.out"
    assert_healthy
}

# submit_beside: a second job for far-big, submitted as its mover job ends
# a run; it waits for the mover's next run ($beside).
submit_beside() {
    local first=$job
    submit -- -N1 --stage-data=far-big:shm --wrap true
    beside=$job
    job=$first
    [[ "$submitted" == *"mover job $mover is already copying it there; this job waits for it"* ]] ||
        { echo "$submitted"; return 1; }
}

@test "a one-file dataset cut by two mover time limits goes on within the file; no waiting job is ended, and it is read once" {
    # The baseline, in this run: what LARGEDATA serves for a copy not cut
    # off, its chunks read one after another as the cut ones are (pfssim's
    # FUSE mount drops a file's cache at each open, so the kernel's
    # readahead past a 4 MiB chunk is read again with the next).
    forget far-big
    before=$(pfs_bytes_read)
    submit DLSTAGE_RATE_LIMIT=2M -- -N1 --stage-data=far-big:shm --wrap true
    wait_job_gone "$job" 120
    [ "$(job_state "$job")" = COMPLETED ]
    whole=$(($(pfs_bytes_read) - before))
    forget far-big
    before=$(pfs_bytes_read)
    # 100 KB/s in chunks of 4 MiB: each run writes its first chunk at once,
    # and its limit comes before the next.
    since=$(date +%s)
    slow_mover far-big 100K -N1 --export=ALL,DLSTAGE_RATE_LIMIT=1G
    requeue_at_limit far-big "$since"
    while_ending=submit_beside requeue_at_limit far-big "$since" \
        "far-big: going on from the copy job $mover began; 0 of 1 files \(0 B\) are there whole, and the first 4\.0 MiB of 1 file cut off mid-way, attempt 2$"
    # The third run goes on from the 8 MiB the first two wrote.
    wait_job_gone "$job" 120
    wait_job_gone "$beside" 60
    [ "$(job_state "$mover")" = COMPLETED ] && [ "$(job_state "$job")" = COMPLETED ] &&
        [ "$(job_state "$beside")" = COMPLETED ] ||
        { echo "mover $(job_state "$mover"), job $(job_state "$job"), beside $(job_state "$beside")"; false; }
    scontrol show job "$mover" | grep -q 'Restarts=2'
    grep -Eq "far-big: going on from the copy job $mover began; 0 of 1 files \(0 B\) are there whole, and the first 8\.0 MiB of 1 file cut off mid-way, attempt 3$" \
        "$(mine)/.mover-far-big.out" || { cat "$(mine)/.mover-far-big.out"; false; }
    doc_says "$USER_GUIDE" 'are there whole, and the first [0-9.]+ [KMGT]iB of 1 file cut off mid-way' cc12m=far-big <"$(mine)/.mover-far-big.out"
    cmp "$(mine)/far-big/big.bin" "$SRC/big.bin"
    read=$(($(pfs_bytes_read) - before))
    size=$(stat -c %s "$SRC/big.bin")
    [ "$read" -ge "$size" ] && [ "$((read * 10))" -le "$((whole * 12))" ] ||
        { echo "LARGEDATA served $read bytes for big.bin ($size bytes), $whole for a copy not cut off"; false; }
    echo "# far-big: $read bytes served when cut twice, $whole when not" >&3
    [ ! -e "$(mine)/.resume-far-big.toml" ] && [ ! -e "$(mine)/.pieces-far-big" ] && [ ! -e "$(mine)/.partial-far-big" ]
    assert_healthy
}

# requeued_mover_finishes: the requeued $mover runs again and $job after it;
# the second run went on from the first one's copy, and LARGEDATA served
# in21k at most 1.2x since $before.
requeued_mover_finishes() {
    for _ in $(seq 600); do
        [ "$(job_state "$job")" = COMPLETED ] && break
        # Slurm holds a requeued job back for cred_expire (120 s): let the
        # mover go once its first run's epilog is 3 s old (44-lifecycle).
        epilog="$STATE/jobs/$mover/$MOVER_NODE.epilog.toml"
        if [ "$(job_state "$mover")" = PENDING ] && [ -e "$epilog" ] &&
            (($(date +%s) >= $(record_value "$epilog" 'r["time"]') + 3)); then
            scontrol update jobid="$mover" starttime=now 2>/dev/null || true
        fi
        sleep 0.5
    done
    [ "$(job_state "$job")" = COMPLETED ] || {
        echo "after 300 s: job $job $(job_state "$job"), mover job $mover $(job_state "$mover")"
        scontrol show job "$mover"
        scontrol show job "$job"
        cat "$(mine)/.mover-in21k.out"
        false
    }
    [ "$(job_state "$mover")" = COMPLETED ]
    scontrol show job "$mover" | grep -q 'Restarts=1'
    [ "$(squeue -h -t all -j "$job" -o %k)" = "dlstage: waits for mover job $mover (in21k:shm)" ]
    [ "$("$DIGEST" "$(mine)/in21k")" = "$("$DIGEST" "$SRC/in21k")" ]
    grep -Eq "in21k: going on from the copy job $mover began; [0-9]+ of 301 files .* attempt 2$" \
        "$(mine)/.mover-in21k.out" || { cat "$(mine)/.mover-in21k.out"; false; }
    read_at_most "$before" 12
}

@test "a requeued mover job goes on from its first run's copy, and the job waiting for it starts after" {
    before=$(pfs_bytes_read)
    slow_mover in21k 1M -N1
    scontrol requeue "$mover"
    requeued_mover_finishes
    assert_healthy
}

# A first copy is staged while its source is walked: its resume record has
# no identity yet, but a walked list, compared entry by entry.
@test "a first copy cut off while its source was walked goes on from it; a chmod since is not kept stale" {
    before=$(pfs_bytes_read)
    slow_mover in21k 1M -N1
    # The first slice of files is whole once the walked list holds it.
    for _ in $(seq 150); do
        [ "$(stat -c %s "$(mine)/.walked-in21k" 2>/dev/null || echo 0)" -gt 2000 ] && break
        sleep 0.2
    done
    [ "$(record_value "$(mine)/.resume-in21k.toml" 'r["walked"]')" = True ]
    [ "$(record_value "$(mine)/.resume-in21k.toml" 'r["identity"]')" = "" ]
    whole=
    for copy in $(find "$(mine)/.partial-in21k" -type f -size +0); do
        source=$SRC/in21k/${copy#"$(mine)/.partial-in21k/"}
        [ "$(stat -c '%s %Y' "$copy")" = "$(stat -c '%s %Y' "$source")" ] && whole=$source && break
    done
    [ -n "$whole" ] || { echo "no whole file in the cut-off copy"; false; }
    # A change its stat cannot show (size and mtime stay): only the walked
    # list, compared with the source now, tells it.
    chmod 0444 "$whole"
    scontrol requeue "$mover"
    requeued_mover_finishes
    [ "$(stat -c %a "$(mine)/in21k/${whole#"$SRC/in21k/"}")" = 444 ]
    [ ! -e "$(mine)/.walked-in21k" ] && [ ! -e "$(mine)/.resume-in21k.toml" ]
    chmod 0644 "$whole"
    assert_healthy
}

@test "a mover job lost with its node is run again by Slurm and goes on from its copy; its waiter starts after" {
    before=$(pfs_bytes_read)
    slow_mover in21k 1M -N1
    # What slurmctld does when a node stops answering: NODE_FAIL for its
    # jobs, and a batch job submitted with --requeue queued again.
    scontrol update nodename="$MOVER_NODE" state=down reason="dlstage test: the node is lost"
    for _ in $(seq 60); do scontrol show job "$mover" | grep -q 'Restarts=1' && break; sleep 0.5; done
    scontrol update nodename="$MOVER_NODE" state=resume 2>/dev/null || true
    [ "$(job_state "$job")" = PENDING ]
    requeued_mover_finishes
    assert_healthy
}

@test "a submission Slurm refuses after the plugin's checks leaves no mover job (sbatch, salloc, srun)" {
    forget far-file
    run as_user sbatch -N1 -p nosuchpart --stage-data=far-file:shm --wrap true
    [ "$status" -ne 0 ]
    [[ "$output" == *"far-file: there is no complete copy in scratch yet: mover job "* ]]
    mover=$(mover_in "$output")
    [[ "$output" == *"far-file: mover job $mover is cancelled: no job waits for it"* ]] || { echo "$output"; false; }
    doc_says "$USER_GUIDE" 'is cancelled: no job waits for it' in21k=far-file <<<"$(grep 'is cancelled' <<<"$output")"
    [ -z "$(live_movers_of far-file)" ]
    # A dependency slurmctld rejects (the plugin merges it with the mover's).
    run as_user sbatch -N1 --dependency=afterok:abc --stage-data=far-file:shm --wrap true
    [ "$status" -ne 0 ]
    [[ "$output" == *"is cancelled: no job waits for it"* ]] || { echo "$output"; false; }
    [ -z "$(live_movers_of far-file)" ]
    for client in salloc srun; do
        run as_user timeout 60 "$client" -N1 -p nosuchpart --stage-data=far-file:shm true
        [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
        [[ "$output" == *"is cancelled: no job waits for it"* ]] || { echo "$client: $output"; false; }
        [ -z "$(live_movers_of far-file)" ]
    done
    # An srun given up while it waits (Ctrl-C) leaves none either.
    scontrol update partitionname=mover state=down
    as_user srun -N1 --stage-data=far-file:shm true >"$(user_workdir)/given-up.out" 2>&1 &
    for _ in $(seq 100); do [ -n "$(squeue -h -t pending -u "$VCLUSTER_USER" -n true -o %i)" ] && break; sleep 0.2; done
    mover=$(live_movers_of far-file)
    [ -n "$mover" ]
    given_up=$(this_clusters "$VCLUSTER_USER" srun)
    [ -n "$given_up" ]
    # shellcheck disable=SC2086  # one pid a word
    kill -INT $given_up
    for _ in $(seq 100); do [ -z "$(live_movers_of far-file)" ] && break; sleep 0.2; done
    [ -z "$(live_movers_of far-file)" ] || { squeue -a; cat "$(user_workdir)/given-up.out"; false; }
    scontrol update partitionname=mover state=up
    # An accepted job keeps its mover job.
    submit -- -N1 --stage-data=far-file:shm --wrap true
    mover=$(mover_in "$submitted")
    [[ "$submitted" != *"is cancelled"* ]]
    wait_job_gone "$job" 60
    [ "$(job_state "$mover")" = COMPLETED ]
    [ "$(job_state "$job")" = COMPLETED ]
}

# waiters_of MOVER: the pending jobs whose dependency names it.
waiters_of() { squeue -h -t pending -o '%i %E' | awk -v m="afterok:$1" 'index($2, m) == 1 { print $1 }' | sort -n; }

@test "a mover job cancelled while pending ends its sbatch, salloc and srun waiters, and says why" {
    forget in21k
    # The mover partition is down: the mover job stays pending.
    scontrol update partitionname=mover state=down
    submit -- -N1 --stage-data=in21k:shm --wrap true
    batch=$job
    mover=$(mover_in "$submitted")
    as_user srun -N1 --stage-data=in21k:shm true >"$(user_workdir)/srun.out" 2>&1 &
    srun_pid=$!
    as_user salloc -N1 --stage-data=in21k:shm true >"$(user_workdir)/salloc.out" 2>&1 &
    salloc_pid=$!
    for _ in $(seq 100); do [ "$(waiters_of "$mover" | wc -l)" -eq 3 ] && break; sleep 0.2; done
    waiting=$(waiters_of "$mover")
    [ "$(wc -l <<<"$waiting")" -eq 3 ] || { squeue -a; false; }
    [ "$(job_state "$mover")" = PENDING ]
    scancel "$mover"
    # Each waiter ends within a bound (the watch asks every 5 s; Slurm's
    # kill-on-invalid-dep ends the batch job).
    for w in $waiting; do
        wait_job_gone "$w" 60
        [ "$(job_state "$w")" = CANCELLED ]
    done
    for w in $waiting; do
        [ "$w" = "$batch" ] && continue
        [ "$(squeue -h -t all -j "$w" -o %k)" = "dlstage: mover job $mover for in21k failed: it was cancelled" ]
    done
    for _ in $(seq 150); do kill -0 "$srun_pid" 2>/dev/null || kill -0 "$salloc_pid" 2>/dev/null || break; sleep 0.2; done
    # The first watch to see it ends both (the other's client may be gone
    # before it looks again): its client says why.
    said=$(cat "$(user_workdir)/srun.out" "$(user_workdir)/salloc.out" | grep 'without a copy' | head -n1)
    [[ "$said" == *"in21k: mover job $mover ended without a copy (it was cancelled): this job is ended"* ]] ||
        { cat "$(user_workdir)/srun.out" "$(user_workdir)/salloc.out"; false; }
    doc_says "$USER_GUIDE" 'ended without a copy' <<<"$said"
    # Slurm's kill-on-invalid-dep and the watch beside salloc and srun race
    # for the batch job: ended by Slurm (status then reads the mover's end)
    # or by the watch (its comment says why).  Either way status says why.
    run dlstage status -j "$batch"
    [[ "$output" == *"ended CANCELLED while it waited for mover job $mover, which ended CANCELLED without a copy"* ||
        "$output" == *"(mover job $mover failed: it was cancelled)"* ]] ||
        { echo "$output"; false; }
    # No watch is left behind.
    [ -z "$(pgrep -u "$VCLUSTER_USER" -f 'watch-movers' || true)" ]
}

@test "a held mover job holds its waiters, which are told so, and go on once it is released" {
    forget far-file
    scontrol update partitionname=mover state=down
    as_user srun -N1 --stage-data=far-file:shm bash -c 'echo "sum $(cksum <"$DLSTAGE_FAR_FILE")"' \
        >"$(user_workdir)/srun.out" 2>&1 &
    srun_pid=$!
    mover=""
    for _ in $(seq 100); do mover=$(live_movers_of far-file); [ -n "$mover" ] && break; sleep 0.2; done
    mover=${mover% }
    [ -n "$mover" ]
    scontrol hold "$mover"
    scontrol update partitionname=mover state=up
    for _ in $(seq 100); do grep -q "is held" "$(user_workdir)/srun.out" && break; sleep 0.2; done
    grep -q "far-file: mover job $mover is held (JobHeldAdmin): this job waits until it is released" \
        "$(user_workdir)/srun.out" || { cat "$(user_workdir)/srun.out"; false; }
    doc_says "$USER_GUIDE" 'this job waits until it is released' in21k=far-file <<<"$(grep 'is held' "$(user_workdir)/srun.out")"
    waiter=$(waiters_of "$mover")
    [ -n "$waiter" ]
    # dlstage status gives the mover job's reason too.
    run dlstage status -j "$waiter"
    [[ "$output" == *"waits for mover job $mover (PENDING: JobHeldAdmin)"* ]] || { echo "$output"; false; }
    scontrol release "$mover"
    for _ in $(seq 600); do kill -0 "$srun_pid" 2>/dev/null || break; sleep 0.2; done
    grep -qx "sum $(cksum <"$SRC/one.bin")" "$(user_workdir)/srun.out" || { cat "$(user_workdir)/srun.out"; false; }
    [ "$(job_state "$mover")" = COMPLETED ]
}

@test "never stale: a source changed since the copy (appended, rewritten, a file added, one removed) reaches every node" {
    run dlstage prefetch in21k
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -z "$id" ] || wait_job_gone "$id" 60
    script=$(digest_job IN21K)
    files=($(find "$SRC/in21k" -type f -size +1k | sort | head -n2))
    size() { stat -c %s "$1"; }
    # change:what the mover job should read of LARGEDATA (the changed file, whole)
    changes=(
        "appended:printf more >>${files[0]}:${files[0]}"
        "rewritten:printf ZZZZ | dd of=${files[1]} conv=notrunc status=none:${files[1]}"
        "added:head -c 5000 /dev/urandom >$SRC/in21k/class0/new-file.bin:$SRC/in21k/class0/new-file.bin"
        "removed:rm $SRC/in21k/class0/new-file.bin:"
    )
    for change in "${changes[@]}"; do
        IFS=: read -r what command fetched <<<"$change"
        bash -c "$command"
        want=0
        [ -z "$fetched" ] || want=$(size "$fetched")
        before=$(pfs_bytes_read)
        submit -- -N3 --stage-data=in21k:shm -o "$(user_workdir)/s-%j.out" "$script"
        grep -q "in21k: the source may have changed since the copy in scratch was made: mover job [0-9]* copies it there" <<<"$submitted"
        mover=$(mover_in "$submitted")
        wait_job_gone "$job" 90
        [ "$(job_state "$job")" = COMPLETED ] || { echo "$what"; cat "$(user_workdir)/s-$job.out"; false; }
        each_node_says "$(cat "$(user_workdir)/s-$job.out")" "$("$DIGEST" "$SRC/in21k")" || { echo "$what"; false; }
        # Only what changed was read again (pfssim counts whole pages).
        read=$(($(pfs_bytes_read) - before))
        [ "$read" -ge "$want" ] && [ "$read" -le $((want + 8192)) ] || { echo "$what: read $read, want $want"; false; }
        grep -q "in21k: repaired and reused the copy" "$(mine)/.mover-in21k.out" ||
            { echo "$what"; cat "$(mine)/.mover-in21k.out"; false; }
        # dlstage prefetch tells the same: a mover job checks it first.
        run dlstage prefetch in21k
        [[ "$output" == *"the source may have changed since the copy in scratch was made: mover job "* ]]
        id=$(grep -E '^[0-9]+$' <<<"$output")
        wait_job_gone "$id" 60
    done
}

@test "a file the purge took from the copy is fetched again alone" {
    run dlstage prefetch in21k
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -z "$id" ] || wait_job_gone "$id" 60
    victim=$(find "$(mine)/in21k" -type f -size +1k | sort | tail -n1)
    want=$(stat -c %s "$victim")
    rm "$victim"
    before=$(pfs_bytes_read)
    script=$(digest_job IN21K)
    submit -- -N3 --stage-data=in21k:shm -o "$(user_workdir)/p-%j.out" "$script"
    wait_job_gone "$job" 90
    [ "$(job_state "$job")" = COMPLETED ]
    each_node_says "$(cat "$(user_workdir)/p-$job.out")" "$("$DIGEST" "$SRC/in21k")"
    read=$(($(pfs_bytes_read) - before)); echo "# far-big read $read of $size" >&3
    [ "$read" -ge "$want" ] && [ "$read" -le $((want + 8192)) ] || { echo "read $read, want $want"; false; }
    grep -q "found 1 missing, 0 changed and 0 added entries: 1 fetched again" "$(mine)/.mover-in21k.out"
    [ -f "$victim" ]
}

@test "submits from several login nodes at once (each its own lock) leave one mover job, and LARGEDATA is read once" {
    forget in21k
    # The mover partition is down while they submit: every one finds the others queued.
    scontrol update partitionname=mover state=down
    want=$(find "$SRC/in21k" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
    before=$(pfs_bytes_read)
    # A slow squeue, its answer a second old: every submit asks before any
    # has submitted (the race two login nodes run into).
    shim="$(user_workdir)/slow-squeue"
    mkdir -p "$shim"
    printf '#!/bin/sh\nout=$(%s "$@")\nrc=$?\nsleep 1\nprintf "%%s\\n" "$out"\nexit $rc\n' "$(command -v squeue)" >"$shim/squeue"
    chmod 0755 "$shim/squeue"
    chown "$VCLUSTER_USER" "$shim"
    pids=()
    for host in 1 2 3 4; do
        lockdir="$(user_workdir)/runtime-$host"
        mkdir -p "$lockdir" && chown "$VCLUSTER_USER" "$lockdir" && chmod 0700 "$lockdir"
        as_user env XDG_RUNTIME_DIR="$lockdir" PATH="$shim:$PATH" sbatch --parsable -N1 --stage-data=in21k:shm --wrap true \
            >"$(user_workdir)/host-$host.out" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    movers=$(live_movers_of in21k)
    [ "$(wc -w <<<"$movers")" -eq 1 ] || { cat "$(user_workdir)"/host-*.out; squeue -a; false; }
    mover=${movers% }
    # Every job waits for the one that is left.
    for host in 1 2 3 4; do
        job=$(grep -E '^[0-9]+$' "$(user_workdir)/host-$host.out")
        [[ "$(squeue -h -j "$job" -o %E)" == "afterok:$mover"* ]] || { cat "$(user_workdir)/host-$host.out"; false; }
    done
    scontrol update partitionname=mover state=up
    for host in 1 2 3 4; do
        job=$(grep -E '^[0-9]+$' "$(user_workdir)/host-$host.out")
        wait_job_gone "$job" 90
        [ "$(job_state "$job")" = COMPLETED ]
    done
    read=$(($(pfs_bytes_read) - before)); echo "# far-big read $read of $size" >&3
    [ "$read" -ge "$want" ] && [ "$read" -le $((want * 101 / 100)) ] || { echo "read $read of $want"; false; }
}

@test "a comment another user sets cannot forge a status row of yours" {
    victim=$(as_user sbatch --parsable --hold -N1 --wrap true)
    forged=$'x\n'"$victim|$VCLUSTER_USER|PENDING|dlstage: mover job 1 for in21k failed: call 555"
    attacker=$(cd /tmp && runuser -u "$OTHER_USER" -- env SLURM_CONF="$SLURM_CONF" \
        sbatch --parsable --hold -N1 --comment="$forged" --wrap true)
    [[ "$(squeue -h -j "$attacker" -o %k)" == *"call 555"* ]] || skip "this Slurm keeps no newline in a comment"
    run "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status -a
    [[ "$output" != *"call 555"* ]] || { echo "$output"; false; }
    scancel "$victim" "$attacker"
}

@test "a job reading the mover's copy in place keeps it while the next mover job makes a new one beside it" {
    forget in21k
    run dlstage prefetch in21k
    id=$(grep -E '^[0-9]+$' <<<"$output" || true)
    [ -n "$id" ] && wait_job_gone "$id" 90
    old=$("$DIGEST" "$SRC/in21k")
    work=$(user_workdir)
    go="$work/go"
    rm -f "$go"
    script=$(reader_script IN21K "$go")
    submit -- -N1 --stage-data=in21k:scratch -o "$work/r-%j.out" "$script"
    reader=$job
    for _ in $(seq 300); do grep -q '^first' "$work/r-$reader.out" 2>/dev/null && break; sleep 0.2; done
    grep -q "^first $(mine)/in21k $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    [ "$(head -n1 "$(mine)/.readers-in21k/$reader")" = in21k ]
    # The source changes; the next job's mover job brings the copy up to it.
    victim=$(find "$SRC/in21k" -type f -size +1k | sort | head -n1)
    printf 'appended' >>"$victim"
    script=$(digest_job IN21K)
    submit -- -N3 --stage-data=in21k:shm -o "$work/w-%j.out" "$script"
    wait_job_gone "$job" 120
    [ "$(job_state "$job")" = COMPLETED ]
    grep -q "in21k: $(mine)/in21k is read in place by a running job: the new copy is made beside it, in $(mine)/.version-in21k-" \
        "$(mine)/.mover-in21k.out" || { cat "$(mine)/.mover-in21k.out"; false; }
    each_node_says "$(cat "$work/w-$job.out")" "$("$DIGEST" "$SRC/in21k")"
    # The reader, and a later step of it, still read the copy they began with.
    touch "$go"
    wait_job_gone "$reader" 60
    [ "$(job_state "$reader")" = COMPLETED ]
    grep -q "^second $(mine)/in21k $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    grep -q "^step $(mine)/in21k $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    [ "$("$DIGEST" "$(mine)/in21k")" = "$old" ]
    forget in21k
    assert_healthy
}

@test "[mover] memory no mover node has: check-config names it, and so does the refused mover submit" {
    local config="$DLSTAGE_TEST_DIR/dlstage.toml" checked submitted_to
    forget far-file
    cp -p "$config" "$config.before-memory"
    sed -i 's/^memory     = "1G"$/memory     = "8G"/' "$config"
    checked=$("$DLSTAGE_BIN" check-config "$config" 2>&1) && checked_status=0 || checked_status=$?
    submitted_to=$(as_user sbatch --parsable -N1 --stage-data=far-file:shm --wrap true 2>&1) || true
    mv "$config.before-memory" "$config"
    echo "$checked"
    echo "$submitted_to"
    [ "$checked_status" -eq 1 ]
    [[ "$checked" == "dlstage: $config: [mover] memory = \"8G\" (8192 MiB) is more than any node of partition 'mover' has (at most 4000 MiB, on $MOVER_NODE): set it to 4000M or less" ]]
    doc_says "$ADMIN_GUIDE" 'is more than any node of partition' xfer=mover x1="$MOVER_NODE" <<<"$checked"
    [[ "$submitted_to" == *"sbatch: error: dlstage: cannot submit a mover job for 'far-file': Slurm refused it (Requested node configuration is not available): [mover] memory = \"8G\" (8192 MiB) is more than any node of partition 'mover' has (at most 4000 MiB, on $MOVER_NODE): set it to 4000M or less in $config; ask your site admins"* ]]
    [ -z "$(live_movers_of far-file)" ]
    # As the cluster has it, the mover settings fit.
    run "$DLSTAGE_BIN" check-config "$config"
    [ "$status" -eq 0 ]
}
