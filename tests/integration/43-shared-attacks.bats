#!/usr/bin/env bats
# A hostile user (and a careless one) against the shared tier (SCRATCH,
# every node sees it): the other test user tries to squat or plant in the
# test user's directory and in job directories, swaps a copy its owner left
# writable, plants a lock that would keep the owner's jobs waiting; the test
# user leaves a stopped FUSE server on their own shared directory for root's
# `dlstage status --dataset`, and escape sequences in their record.  Each
# time: root neither hangs nor prints raw control characters, nobody's job
# reads what another user made, no node is drained.

load helpers

SCRATCH="$DLSTAGE_TEST_DIR/scratch/dlstage"
JOBS="$DLSTAGE_TEST_DIR/scratch/jobs"
# The dlstage run as root for status (ATTACK_STATUS_BIN: an older build, to
# see an attack work against it).
STATUS_BIN="${ATTACK_STATUS_BIN:-$DLSTAGE_BIN}"

teardown() {
    pkill -KILL -u "$VCLUSTER_USER" -x squashfuse 2>/dev/null || true
    on_node n1 sh -c "! grep -q ' $SCRATCH/$VCLUSTER_USER ' /proc/self/mountinfo || umount -l '$SCRATCH/$VCLUSTER_USER'"
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scancel -u "$OTHER_USER" 2>/dev/null || true
    if [ -d "$SCRATCH/$VCLUSTER_USER" ]; then chmod 0700 "$SCRATCH/$VCLUSTER_USER"; fi
}

mine() { echo "$SCRATCH/$VCLUSTER_USER"; }

# on_all NAME SPEC: a 3-node srun staging SPEC; each node prints
# "NODE PATH DIGEST" of $DLSTAGE_<NAME>.
on_all() {
    run as_user srun -N3 --stage-data="$2" bash -c "p=DLSTAGE_$1; echo \"\$(hostname) \${!p} \$('$DIGEST' \"\${!p}\")\""
    echo "$output"
}

status_as_root() {
    run timeout 20 "$STATUS_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --dataset "$1"
    echo "status $status (124: timed out): $output"
}

@test "nobody can squat a user's shared directory, nor plant a lock, record or contents file in it" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    for what in "mkdir $SCRATCH/not-yet-a-user" "mkdir $SCRATCH/$VCLUSTER_USER.removing-n1" \
        "touch $(mine)/.lock-tree" "ln -s / $(mine)/.ready-tree.toml" "mkfifo $(mine)/.contents-tree" \
        "mv $(mine) $SCRATCH/stolen"; do
        run as_other $what
        echo "$what: $output"
        [ "$status" -ne 0 ]
    done
    [ "$(stat -c '%U %a' "$SCRATCH")" = "root 755" ]
    [ "$(stat -c '%U %a' "$(mine)")" = "$VCLUSTER_USER 700" ]
}

@test "a job-end shared directory is the job's user's alone: another user can neither enter it nor claim it" {
    run as_user sbatch --parsable -N2 --stage-data=tree:jobscratch --wrap 'sleep 60'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_for_file "$JOBS/$job/tree" 60
    run as_other ls "$JOBS/$job"
    [ "$status" -ne 0 ]
    run as_other mkdir "$JOBS/$job.removing-n1"
    [ "$status" -ne 0 ]
    run as_other mv "$JOBS/$job" "$JOBS/$job.removing-n2"
    [ "$status" -ne 0 ]
    scancel "$job"
    wait_job_gone "$job" 60
    [ ! -e "$JOBS/$job" ]
    [ -z "$(ls -A "$JOBS")" ]
    assert_healthy
}

@test "a user's stopped FUSE server on their shared directory: root's status --dataset neither hangs nor enters it" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    # On n1, the user mounts over their own directory (they own it), open
    # to all (allow_other: else the kernel refuses root without asking the
    # server), and stops the server: any stat into it would hang.
    run as_user sbatch --parsable -w n1 -N1 -o fuse.txt --wrap "
        squashfuse -o allow_other '$DATA/tree.sqfs' '$(mine)' &&
        pkill -STOP -u \$USER -f 'squashfuse -o allow_other .*$(mine)\$' && echo STOPPED && sleep 300"
    [ "$status" -eq 0 ]
    job=${output%%;*}
    for _ in $(seq 100); do grep -q STOPPED "$(user_workdir)/fuse.txt" 2>/dev/null && break; sleep 0.3; done
    grep -q STOPPED "$(user_workdir)/fuse.txt"
    sleep 2  # past FUSE's attribute cache (1 s): a stat now asks the stopped server
    run on_node n1 timeout 20 "$STATUS_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --dataset tree
    echo "status $status (124: timed out): $output"
    [ "$status" -eq 0 ]
    grep -q "unreadable: $(mine) is a mount point; not entered" <<<"$output"
    scancel "$job"
    assert_healthy
}

@test "escape sequences in a user's record: root's status and the stager print them escaped, never raw" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    run as_user sed -i 's|^path = .*|path = "x\\u001b[2Jy\\nforged line"|' "$(mine)/.ready-tree.toml"
    [ "$status" -eq 0 ]
    status_as_root tree
    [ "$status" -eq 0 ]
    grep -qF 'x\x1b[2Jy\x0aforged line' <<<"$output"
    ! grep -q $'\x1b' <<<"$output" || false
    ! grep -q '^forged line' <<<"$output" || false
    # The stager, reusing the copy, names the job that made it: escaped too.
    run as_user sed -i 's|^made_by = .*|made_by = "1\\u001b[2J\\nforged line"|' "$(mine)/.ready-tree.toml"
    [ "$status" -eq 0 ]
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    grep -qF 'made by job 1\x1b[2J\x0aforged line on' <<<"$output"
    ! grep '^dlstage:' <<<"$output" | grep -q $'\x1b' || false
    rm -f "$(mine)/.ready-tree.toml"
}

@test "a copy swapped by another user while its owner left the directory writable is not reused" {
    rm -rf "$(mine)"/tree.theirs "$(mine)"/.retired-tree-*  # an earlier run's
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$DATA/tree")
    # Careless: the owner opens their directory to everyone for a while.
    as_user chmod 0777 "$(mine)"
    # The other user replaces the copy by their own, same names and sizes
    # (the source is readable to them), one file's content changed.
    run as_other bash -c "cd '$(mine)' && mv tree tree.theirs && cp -r '$DATA/tree' tree &&
        f=\$(find tree -type f -size +0 | sort | head -n1) && n=\$(stat -c %s \"\$f\") && head -c \$n /dev/zero | tr '\\0' X > \"\$f\" && echo SWAPPED"
    echo "$output"
    grep -q SWAPPED <<<"$output"
    [ "$("$DIGEST" "$(mine)/tree")" != "$want" ]
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/tree $want"
    ! grep -q "tree: reused the copy" <<<"$output" || false
    grep -q "belong to someone else" <<<"$output"
    [ "$(stat -c '%U %a' "$(mine)")" = "$VCLUSTER_USER 700" ]
    rm -rf "$(mine)"/tree.theirs "$(mine)"/.retired-tree-*
}

@test "a lock planted by another user (naming their own running job) does not keep the owner's jobs waiting" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    run as_other sbatch --parsable -w n1 -N1 --wrap 'sleep 120'
    [ "$status" -eq 0 ]
    theirs=${output%%;*}
    as_user chmod 0777 "$(mine)"
    run as_other bash -c "printf 'job $theirs\nhost n1\npid 1\nsince %s\n' \$(date +%s) > '$(mine)/.lock-tree'"
    [ "$status" -eq 0 ]
    run timeout 90 runuser -u "$VCLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
        OMPI_MCA_btl_tcp_if_include=lo srun -w n1,n2 -N2 --stage-data=tree:scratch bash -c 'echo "$(hostname) READY"'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "n1 READY" <<<"$output"
    grep -q "broke the lock $(mine)/.lock-tree: it belongs to uid" <<<"$output"
    [ ! -e "$(mine)/.lock-tree" ]
    scancel "$theirs"
    assert_healthy
}

@test "a fifo planted as the lock by another user does not fail the owner's jobs" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    as_user chmod 0777 "$(mine)"
    run as_other mkfifo -m 0600 "$(mine)/.lock-tree"
    [ "$status" -eq 0 ]
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/tree $("$DIGEST" "$DATA/tree")"
    grep -q "broke the lock $(mine)/.lock-tree: it is not a lock" <<<"$output"
    [ ! -e "$(mine)/.lock-tree" ]
}

@test "a stopped FUSE server in a job-end shared directory on one node: every node's epilog runs, one removes it, no drain" {
    # The mount exists on n2 only; n1's and n3's epilogs see a plain
    # directory and may claim it before n2's epilog detaches its mount.
    run as_user sbatch --parsable -N3 -o fuse-end.txt --stage-data=tree:jobscratch --wrap '
        mnt=$(dirname "$DLSTAGE_TREE")/mnt
        srun -N1 -w n2 --overlap bash -c "mkdir $mnt && squashfuse -o allow_other '"$DATA/tree.sqfs"' $mnt &&
            ls $mnt >/dev/null && pkill -STOP -u \$USER -f \"squashfuse -o allow_other .*$mnt\\\$\" && echo STOPPED"'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_job_gone "$job" 120
    cat "$(user_workdir)/fuse-end.txt"
    grep -qx STOPPED "$(user_workdir)/fuse-end.txt"
    assert_healthy
    for node in n1 n2 n3; do
        ! on_node "$node" grep -q " $JOBS/$job" /proc/self/mountinfo || { echo "mount left on $node"; false; }
    done
    pkill -KILL -u "$VCLUSTER_USER" -x squashfuse || true
    ls -la "$JOBS"
    [ -z "$(ls -A "$JOBS")" ]
    for node in n1 n2 n3; do
        echo "$node: $(epilog_value "$job" "$node" 'r["status"]') $(epilog_value "$job" "$node" 'r["problems"]')"
    done
    assert_epilogs_cleaned "$job"
}
