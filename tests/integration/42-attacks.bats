#!/usr/bin/env bats
# A hostile user against root's code: the other test user squats tier
# roots, fills a tier, leaves a stopped FUSE server in a job directory,
# plants fifos and escape sequences among records, and an admin leaves the
# configuration writable.  Each time: no node drained, the other user's
# jobs run with correct data or fail with a reason, nothing is left behind.

load helpers

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scancel -u "$OTHER_USER" 2>/dev/null || true
}

# squat NODE SCRIPT: removes NODE's /dev/shm tier root (as after a reboot),
# then lets the other user run SCRIPT there; prints the squatter's job id.
squat() {
    on_node "$1" rm -rf /dev/shm/dlstage
    run as_other srun -w "$1" -N1 bash -c "$2; echo SQUATTER-JOB \$SLURM_JOB_ID"
    echo "$output" >&2
    [ "$status" -eq 0 ]
    squatter_job=$(grep -oE 'SQUATTER-JOB [0-9]+' <<<"$output" | cut -d' ' -f2)
}

# victim_reads NODE: the test user's job stages `sample` to shm on NODE and
# prints what it sees; sets $output.
victim_reads() {
    run as_user srun -w "$1" -N1 --stage-data=sample:shm bash -c \
        'echo "CONTENT $(cat "$DLSTAGE_SAMPLE/a.txt")"; echo "ROOT $(stat -c "%U %a %F" /dev/shm/dlstage)"'
    echo "$output"
}

# the_squatter_cannot_write NODE: the other user cannot create anything in
# NODE's tier root now.
the_squatter_cannot_write() {
    run as_other srun -w "$1" -N1 bash -c 'mkdir /dev/shm/dlstage/9999999 && echo WROTE'
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"Permission denied"* ]]
    ! grep -q WROTE <<<"$output" || false
}

@test "a tier root planted as a symlink after a reboot: moved aside, the other user's job gets its data, no drain" {
    squat n1 'mkdir -m 0777 /dev/shm/trap && ln -s /dev/shm/trap /dev/shm/dlstage'
    victim_reads n1
    [ "$status" -eq 0 ]
    grep -qx "CONTENT hello" <<<"$output"
    grep -qx "ROOT root 755 directory" <<<"$output"
    # the link was moved aside, not followed: its target got nothing
    on_node n1 sh -c 'test -L /dev/shm/dlstage.untrusted-*'
    [ -z "$(on_node n1 ls -A /dev/shm/trap)" ]
    grep -q "dlstage: .*tier root /dev/shm/dlstage is a symlink; moved it aside to /dev/shm/dlstage.untrusted-" \
        "$VCLUSTER_DIR/log/slurmd-n1.log"
    the_squatter_cannot_write n1
    assert_no_leftovers
    assert_healthy
    on_node n1 sh -c 'rm -rf /dev/shm/trap /dev/shm/dlstage.untrusted-*'
}

@test "a squatter's 0777 tier root with planted job dirs and ready markers: replaced, the victim reads its own data" {
    # The squatter prepares the next job ids with a fake dataset and a
    # ready marker pointing DLSTAGE_SAMPLE at it.
    squat n2 'mkdir -m 0777 /dev/shm/dlstage
        for j in $(seq $((SLURM_JOB_ID + 1)) $((SLURM_JOB_ID + 5))); do
            mkdir -p /dev/shm/dlstage/$j/sample && echo evil > /dev/shm/dlstage/$j/sample/a.txt
            printf "dataset = \"sample\"\npath = \"/dev/shm/dlstage/$j/sample\"\n" > /dev/shm/dlstage/$j/.ready-sample.toml
            chmod -R a+rwX /dev/shm/dlstage/$j
        done'
    victim_reads n2
    [ "$status" -eq 0 ]
    grep -qx "CONTENT hello" <<<"$output"
    ! grep -q evil <<<"$output" || false
    grep -qx "ROOT root 755 directory" <<<"$output"
    grep -q "tier root /dev/shm/dlstage belongs to uid $(id -u "$OTHER_USER") (mode 0777), not uid 0; moved it aside to /dev/shm/dlstage.untrusted-" \
        "$VCLUSTER_DIR/log/slurmd-n2.log"
    the_squatter_cannot_write n2
    assert_no_leftovers
    assert_healthy
    on_node n2 sh -c 'rm -rf /dev/shm/dlstage.untrusted-*'
}

@test "a squatter's FUSE mount on the tier root, its server gone: detached and moved aside, never a drain" {
    # FUSE denies root (EACCES) on a mount without allow_other, and a dead
    # server answers ENOTCONN: neither may read as a fault of the node.
    squat n3 "mkdir /dev/shm/dlstage && squashfuse $DATA/tree.sqfs /dev/shm/dlstage &&
        pkill -KILL -u \$USER -f 'squashfuse .* /dev/shm/dlstage\$'"
    on_node n3 grep -q ' /dev/shm/dlstage .* fuse.squashfuse ' /proc/self/mountinfo   # still mounted, dead
    victim_reads n3
    [ "$status" -eq 0 ]
    grep -qx "CONTENT hello" <<<"$output"
    grep -qx "ROOT root 755 directory" <<<"$output"
    grep -q "tier root /dev/shm/dlstage is a mount point (fuse.squashfuse): detached the mount on it" \
        "$VCLUSTER_DIR/log/slurmd-n3.log"
    ! on_node n3 grep -q ' /dev/shm/dlstage .* fuse.squashfuse ' /proc/self/mountinfo || false
    assert_no_leftovers
    assert_healthy
    on_node n3 sh -c 'rm -rf /dev/shm/dlstage.untrusted-*'
}

@test "a tier out of inodes: the job fails with dlstage's reason, the node stays up, the epilog still cleans" {
    local used total
    used=$(on_node n2 df --output=iused /dev/shm | tail -n1 | tr -d ' ')
    total=$(on_node n2 df --output=itotal /dev/shm | tail -n1 | tr -d ' ')
    on_node n2 mount -o remount,nr_inodes=$((used + 100)) /dev/shm
    run as_other srun -w n2 -N1 bash -c 'mkdir /dev/shm/fill; i=0; while touch /dev/shm/fill/$i 2>/dev/null; do i=$((i + 1)); done; echo filled $i'
    echo "$output"
    run as_user srun -w n2 -N1 --stage-data=sample:shm bash -c 'echo $SLURM_JOB_ID; echo TASK-RAN'
    echo "$output"
    on_node n2 rm -rf /dev/shm/fill
    on_node n2 mount -o remount,nr_inodes="$total" /dev/shm  # as before the test
    [ "$status" -ne 0 ]
    ! grep -q TASK-RAN <<<"$output" || false
    # the tier root (if no job made it yet on n2) or the job's directory
    grep -Eq "^dlstage: staging sample to shm failed on n2: cannot create (tier root /dev/shm/dlstage|/dev/shm/dlstage/[0-9]+): No space left on device \(the tier is full \(no space or no inodes left\)\)" <<<"$output"
    job=$(squeue -h -t all -u "$VCLUSTER_USER" -o %i | sort -n | tail -n1)
    assert_epilogs_cleaned "$job" n2
    [ "$(record_value "$STATE/jobs/$job/n2.prolog.toml" 'r["status"]')" = failed ]
    assert_no_leftovers
    assert_healthy
}

@test "a stopped FUSE server (allow_other) mounted in a job directory: the job ends, no drain, the directory is removed" {
    run as_user sbatch --parsable -w n1 -N1 -o out.txt --stage-data=sample:shm --wrap '
        mnt=$(dirname "$DLSTAGE_SAMPLE")/mnt
        mkdir "$mnt" && squashfuse -o allow_other '"$DATA/tree.sqfs"' "$mnt" && ls "$mnt" >/dev/null &&
        pkill -STOP -u "$USER" -f "squashfuse -o allow_other .*/$SLURM_JOB_ID/mnt" && echo STOPPED'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_job_gone "$job" 60
    cat "$(user_workdir)/out.txt"
    grep -qx STOPPED "$(user_workdir)/out.txt"
    [ "$(job_state "$job")" = COMPLETED ]
    assert_epilogs_cleaned "$job" n1
    [ "$(epilog_value "$job" n1 'r["unmounted"]')" -ge 1 ]
    ! on_node n1 test -e "/dev/shm/dlstage/$job" || false
    ! on_node n1 grep -q "/dev/shm/dlstage/$job" /proc/self/mountinfo || false
    pkill -KILL -u "$VCLUSTER_USER" -x squashfuse || true
    assert_no_leftovers
    assert_healthy
}

@test "another user's data moved into a job directory: the epilog (as the job's user) leaves it, no drain" {
    # The squatter owns a sticky shared directory the victim keeps results in;
    # they cannot delete the victim's files, but can move the whole directory
    # into their own job directory for root's epilog to remove.
    run as_other srun -w n1 -N1 bash -c 'mkdir -m 1777 /dev/shm/team'
    [ "$status" -eq 0 ]
    run as_user srun -w n1 -N1 bash -c 'mkdir -m 0755 /dev/shm/team/victim && echo precious > /dev/shm/team/victim/results.txt'
    [ "$status" -eq 0 ]
    run as_other srun -w n1 -N1 --stage-data=sample:shm bash -c 'mv /dev/shm/team "$(dirname "$DLSTAGE_SAMPLE")/" && echo JOB $SLURM_JOB_ID'
    echo "$output"
    [ "$status" -eq 0 ]
    job=$(grep -oE '^JOB [0-9]+' <<<"$output" | cut -d' ' -f2)
    [ "$(epilog_value "$job" n1 'r["status"]')" = incomplete ]
    epilog_value "$job" n1 'r["problems"][0]' | grep -q "cannot remove /dev/shm/dlstage/$job/team/victim/results.txt: Permission denied"
    [ "$(on_node n1 cat "/dev/shm/dlstage/$job/team/victim/results.txt")" = precious ]
    ! on_node n1 test -e "/dev/shm/dlstage/$job/sample" || false   # the job's own data is gone
    assert_healthy
    on_node n1 rm -rf "/dev/shm/dlstage/$job"
}

@test "a configuration others can write: refused at submit, and by the prolog if it changes after" {
    local conf="$DLSTAGE_TEST_DIR/dlstage.toml"
    chmod 0666 "$conf"
    run as_user sbatch -N1 --stage-data=sample --wrap true
    chmod 0644 "$conf"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: refusing the site configuration: configuration file '$conf' is writable by group or others (mode 0666)"* ]]

    # Accepted while it was fine; made writable before the job starts.
    run as_user sbatch --parsable -H -N1 -w n3 -o out.txt --stage-data=sample --wrap 'echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    chmod 0666 "$conf"
    scontrol release "$job"
    wait_job_gone "$job" 60
    chmod 0644 "$conf"
    cat "$(user_workdir)/out.txt"
    [ "$(job_state "$job")" = FAILED ]
    ! grep -q SCRIPT-RAN "$(user_workdir)/out.txt" || false
    grep -q "refusing the site configuration" "$(user_workdir)/out.txt"
    grep -q "dlstage: job $job on n3: refusing the site configuration" "$VCLUSTER_DIR/log/slurmd-n3.log"
    ! on_node n3 test -e "/dev/shm/dlstage/$job" || false  # root did nothing for it
    assert_healthy
}

@test "a fifo and escape sequences among a job's records: root's dlstage status neither blocks nor prints them raw" {
    run as_other srun -N1 -w n1 --stage-data=sample:shm bash -c '
        u='"$STATE"'/jobs/$SLURM_JOB_ID/user
        mkfifo "$u/progress-zz.toml"
        ln -s /etc/shadow "$u/progress-shadow.toml"
        printf "node = \"n1\"\nmessage = \"x\\\\u001b[2Jy\\\\nforged line\"\n" > "$u/failure-n9.toml"
        echo JOB $SLURM_JOB_ID'
    echo "$output"
    [ "$status" -eq 0 ]
    job=$(grep -oE '^JOB [0-9]+' <<<"$output" | cut -d' ' -f2)
    run timeout 20 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status "$job"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qF 'job '"$job"': failed on n1: x\x1b[2Jy\x0aforged line' <<<"$output"
    ! grep -q $'\x1b' <<<"$output" || false
    ! grep -q root: <<<"$output" || false   # nothing of /etc/shadow
}

@test "malformed tuning knobs: one line naming the knob, the job fails, no drain" {
    for knob in DLSTAGE_CHUNK_SIZE=4Mx DLSTAGE_WINDOW=-1 DLSTAGE_READERS=99999999999999999999 DLSTAGE_PROGRESS=soon; do
        run as_user env "$knob" srun -N1 --stage-data=sample:shm bash -c 'echo TASK-RAN'
        echo "$output"
        [ "$status" -ne 0 ]
        ! grep -q TASK-RAN <<<"$output" || false
        grep -q "^dlstage: ${knob%%=*}: " <<<"$output"
        ! grep -Eq 'terminate called|Aborted|core dumped' <<<"$output" || false
    done
    assert_no_leftovers
    assert_healthy
}
