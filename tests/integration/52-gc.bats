#!/usr/bin/env bats
# dlstage gc on a node of the real cluster, as root, asking the real
# slurmctld: an orphan (the directory of a job that ended, left as a
# crashed epilog or a reboot leaves it) goes, a running job's directory
# stays, --dry-run removes nothing, records older than gc_records_days go,
# a shared tier's unfinished claim goes, and without slurmctld nothing goes.

load helpers

# The site's configuration with gc_grace = 0: the orphans here are made a
# second before gc runs (a directory made after Slurm was asked is still
# spared).  Root's, like the site's, as gc wants.
setup() {
    GC_CONFIG="$DLSTAGE_TEST_DIR/gc.toml"
    sed '/^\[site\]/a gc_grace = 0' "$DLSTAGE_TEST_DIR/dlstage.toml" > "$GC_CONFIG"
    chmod 0644 "$GC_CONFIG"
    USER_UID=$(id -u "$VCLUSTER_USER")
    USER_GID=$(id -g "$VCLUSTER_USER")
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
}

# gc_on NODE ARGS...: dlstage gc inside the node, as root; sets $status, $output.
gc_on() {
    local node=$1; shift
    run on_node "$node" "$DLSTAGE_BIN" -c "$GC_CONFIG" gc "$@"
    echo "$output"
}

# orphan NODE DIR: a job directory as the prolog makes it (the user's, 0700)
# with what a stager killed mid-transfer leaves in it.
orphan() {
    on_node "$1" bash -c "mkdir -p -m 0755 '$(dirname "$2")' && mkdir -m 0700 '$2' && \
        mkdir '$2/.partial-sample' && echo data > '$2/.partial-sample/a.txt' && \
        chown -R $USER_UID:$USER_GID '$2'"
}

# ended_job: the id of a staging job that has run and ended on n1.
ended_job() {
    run as_user srun -N1 -w n1 --stage-data=sample:shm bash -c 'echo $SLURM_JOB_ID'
    [ "$status" -eq 0 ]
    ended=${lines[-1]}
    wait_job_gone "$ended"
    epilog_value "$ended" n1 'r["status"]' >/dev/null
}

# running_job: a job on n1 that staged `sample` to shm and sleeps.
running_job() {
    run as_user sbatch --parsable -N1 -w n1 -o /dev/null --stage-data=sample:shm --wrap 'sleep 600'
    [ "$status" -eq 0 ]
    running=${output%%;*}
    local i
    for ((i = 0; i < 300; i++)); do
        on_node n1 test -e "/dev/shm/dlstage/$running/.ready-sample.toml" && return 0
        sleep 0.2
    done
    echo "job $running staged nothing" >&2
    return 1
}

@test "gc removes an orphan and spares a running job's directory" {
    running_job
    ended_job
    orphan n1 "/dev/shm/dlstage/$ended"       # a job Slurm still lists as COMPLETED
    orphan n1 "/local/dlstage/4000000"         # a job Slurm never heard of (or long forgot)
    sleep 1.1
    gc_on n1
    [ "$status" -eq 0 ]
    [[ $output == *"removed /dev/shm/dlstage/$ended (job $ended, tier 'shm'): its job ended"* ]]
    [[ $output == *"removed /local/dlstage/4000000 (job 4000000, tier 'ssd'): its job ended"* ]]
    [[ $output == *"gc on n1: removed 2, kept "*", 0 problems"* ]]
    doc_says "$MAN1" '^removed /dev/shm/dlstage/' <<<"$output"
    doc_says "$MAN1" '^gc on n12: removed' <<<"$output"
    ! on_node n1 test -e "/dev/shm/dlstage/$ended"
    ! on_node n1 test -e /local/dlstage/4000000
    # The running job's data, its records, and the job itself: untouched.
    on_node n1 test -s "/dev/shm/dlstage/$running/sample/a.txt"
    [ -d "$STATE/jobs/$running/user" ]
    [ "$(job_state "$running")" = RUNNING ]
    gc_on n1 -v
    [[ $output == *"keep /dev/shm/dlstage/$running (job $running, tier 'shm'): its job is still known to Slurm"* ]]
    assert_healthy
}

@test "gc --dry-run says what it would remove and removes nothing" {
    ended_job
    orphan n2 "/dev/shm/dlstage/$ended"
    sleep 1.1
    gc_on n2 --dry-run
    [ "$status" -eq 0 ]
    [[ $output == *"would remove /dev/shm/dlstage/$ended (job $ended, tier 'shm'): its job ended"* ]]
    [[ $output == *"gc on n2 (dry run): would remove 1, "*"; nothing removed"* ]]
    on_node n2 test -s "/dev/shm/dlstage/$ended/.partial-sample/a.txt"
    gc_on n2 --tier shm
    [[ $output == *"removed /dev/shm/dlstage/$ended"* ]]
    ! on_node n2 test -e "/dev/shm/dlstage/$ended"
}

@test "gc removes records older than gc_records_days of ended jobs only" {
    running_job
    ended_job
    touch -d '31 days ago' "$STATE/jobs/$ended" "$STATE/jobs/$running"
    gc_on n3
    [ "$status" -eq 0 ]
    [[ $output == *"removed $STATE/jobs/$ended (job $ended, records): its job ended; last written 31 d ago (more than 30 d)"* ]]
    doc_says "$MAN1" '^removed .*, records\)' <<<"$output"
    [ ! -e "$STATE/jobs/$ended" ]
    [ -d "$STATE/jobs/$running/user" ]
}

@test "gc finishes a shared tier's removal an epilog left (JOB.removing-NODE)" {
    ended_job
    local jobs="$DLSTAGE_TEST_DIR/scratch/jobs"
    orphan n1 "$jobs/$ended.removing-n2"     # n2's epilog ran out of time
    sleep 1.1
    gc_on n1 --tier jobscratch
    [ "$status" -eq 0 ]
    [[ $output == *"removed $jobs/$ended.removing-n2 (job $ended, tier 'jobscratch'): its job ended; an earlier removal of it (an epilog's or gc's) did not finish"* ]]
    [ ! -e "$jobs/$ended.removing-n2" ] && [ ! -e "$jobs/$ended.removing-n1" ]
    [ -d "$jobs" ]
}

@test "gc without slurmctld's answer removes nothing" {
    ended_job
    orphan n1 "/dev/shm/dlstage/$ended"
    sleep 1.1
    # The cluster's slurm.conf with slurmctld's port closed, as when it is
    # down: squeue fails to connect (after 1 s with MessageTimeout=2; the
    # cluster's 10 makes that 9 s).
    local down="$DLSTAGE_TEST_DIR/slurm-ctld-down.conf"
    sed -e 's/^SlurmctldPort=.*/SlurmctldPort=1/' -e 's/^MessageTimeout=.*/MessageTimeout=2/' "$SLURM_CONF" >"$down"
    grep -qx 'SlurmctldPort=1' "$down"
    run on_node n1 env SLURM_CONF="$down" "$DLSTAGE_BIN" -c "$GC_CONFIG" gc
    echo "$output"
    [ "$status" -eq 3 ]
    [[ $output == *"dlstage: gc: cannot tell which jobs still run: squeue "*"Unable to contact slurm controller"*"; nothing removed"* ]]
    on_node n1 test -s "/dev/shm/dlstage/$ended/.partial-sample/a.txt"
    on_node n1 rm -rf "/dev/shm/dlstage/$ended"
}

@test "admin guide: gc --dry-run -v says what the example shows, line by line" {
    local jobs="$DLSTAGE_TEST_DIR/scratch/jobs" printed
    running_job
    ended_job
    orphan n1 "/dev/shm/dlstage/$ended"
    orphan n1 "$jobs/$ended.removing-n2"
    touch -d '31 days ago' "$STATE/jobs/$ended"
    sleep 1.1
    gc_on n1 --dry-run -v
    [ "$status" -eq 0 ]
    printed=$output
    doc_says "$ADMIN_GUIDE" '^keep /dev/shm/dlstage/' <<<"$printed"
    doc_says "$ADMIN_GUIDE" '^would remove /dev/shm/dlstage/' <<<"$printed"
    doc_says "$ADMIN_GUIDE" '^would remove .*\.removing-' <<<"$printed"
    doc_says "$ADMIN_GUIDE" '^would remove .*, records\)' <<<"$printed"
    doc_says "$ADMIN_GUIDE" '^gc on n12 \(dry run\)' <<<"$printed"
    # and each line of the example is one of those
    [ "$(doc_transcript --block "$ADMIN_GUIDE" '^# dlstage gc --dry-run -v' | wc -l)" -eq 6 ]
    gc_on n1
    [ "$status" -eq 0 ]
    ! on_node n1 test -e "/dev/shm/dlstage/$ended"
}

@test "admin guide: the cron line, run as written (this install's dlstage and configuration)" {
    local line command
    line=$(doc_transcript --block "$ADMIN_GUIDE" '^[0-9]+ \* \* \* \* +root ')
    [ "$(wc -l <<<"$line")" -eq 1 ]
    read -r minute hour day month weekday user command <<<"$line"
    [ "$minute" -ge 0 ] && [ "$minute" -le 59 ]
    [ "$hour $day $month $weekday $user" = "* * * * root" ]
    [[ $command == "/usr/bin/dlstage gc >/dev/null" ]]   # where the packages install it (check-packages)
    ended_job
    orphan n1 "/dev/shm/dlstage/$ended"
    sleep 1.1
    run on_node n1 env DLSTAGE_CONFIG="$GC_CONFIG" sh -c "${command/\/usr\/bin\/dlstage/$DLSTAGE_BIN}"
    [ "$status" -eq 0 ]
    [ -z "$output" ]   # cron mails nothing when all went well
    ! on_node n1 test -e "/dev/shm/dlstage/$ended"
}
