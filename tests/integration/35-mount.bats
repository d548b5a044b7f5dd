#!/usr/bin/env bats
# squashfs images in mode = "mount" on 3 nodes: the image is staged as one
# file, mounted with squashfuse as the user by the holder step, seen by the
# job's steps, and gone (unmounted, removed) after the job on every node.

load helpers

# mounts_on NODE: the squashfuse mounts in NODE's mount namespace.
mounts_on() {
    on_node "$1" grep squashfuse /proc/mounts || true
}

assert_no_mounts() {
    local node
    for node in n1 n2 n3; do
        [ -z "$(mounts_on "$node")" ] || { echo "$node still mounts: $(mounts_on "$node")"; return 1; }
    done
}

assert_cleaned() {
    local node
    wait_job_gone "$1"
    assert_epilogs_cleaned "$1"
    assert_no_leftovers
    assert_no_mounts
    ! sinfo -h -o %T | grep -Eiq 'drain|down' || false
}

# sbatch_image_m WORK: runs WORK/job.sh (from stdin) on 3 nodes with
# --stage-data=image-m and waits; sets job, shows the output, fails on a
# failed job.
sbatch_image_m() {
    cat >"$1/job.sh"
    chmod a+rx "$1/job.sh"
    run sbatch_wait as_user sbatch --parsable -N3 -o out.txt --stage-data=image-m "$1/job.sh"
    echo "$output"
    cat "$1/out.txt"
    [ "$status" -eq 0 ]
    job=${output%%;*}
}

@test "sbatch: the image is staged once, mounted on every node before the script, same tree as the source" {
    work=$(user_workdir)
    sbatch_image_m "$work" <<SCRIPT
#!/bin/bash
echo "SCRIPT-START DATASETS=\$DLSTAGE_DATASETS"
srun -N3 --ntasks-per-node=1 bash -c 'echo "\$(hostname) \$DLSTAGE_IMAGE_M \$("$DIGEST" "\$DLSTAGE_IMAGE_M")"
  grep " \$DLSTAGE_IMAGE_M " /proc/mounts | sed "s/^/\$(hostname) MOUNT /"
  ls -A "\$(dirname "\$DLSTAGE_IMAGE_M")" | sed "s/^/\$(hostname) ENTRY /"'
SCRIPT
    out=$(cat "$work/out.txt")
    grep -q '^dlstage: staged image-m to shm on 3 nodes .*(1.00x)' <<<"$out"
    grep -q '^dlstage: mounted image-m on 3 nodes in [0-9.]* s' <<<"$out"
    doc_says "$USER_GUIDE" '^dlstage: staged imagenet to shm on 4' imagenet=image-m <<<"$out"
    doc_says "$USER_GUIDE" '^dlstage: mounted imagenet' imagenet=image-m <<<"$out"
    # mounted before the script's first line
    [ "$(grep -n -m1 SCRIPT-START <<<"$out" | cut -d: -f1)" -gt "$(grep -n '^dlstage: mounted ' <<<"$out" | cut -d: -f1)" ]
    grep -qx 'SCRIPT-START DATASETS=image-m' <<<"$out"
    want=$("$DIGEST" "$DATA/tree")
    uid=$(id -u "$VCLUSTER_USER")
    for node in n1 n2 n3; do
        grep -qx "$node /dev/shm/dlstage/$job/image-m $want" <<<"$out"
        # squashfuse as the user, nosuid and nodev
        grep -q "^$node MOUNT squashfuse[_a-z]* /dev/shm/dlstage/$job/image-m fuse.squashfuse[_a-z]* .*nosuid,nodev.*user_id=$uid," <<<"$out"
        # one inode for the data: the image, beside the mount point and markers
        [ "$(grep "^$node ENTRY " <<<"$out" | cut -d' ' -f3 | sort | tr '\n' ' ')" = \
          ".image-image-m .ready-image-m.toml .staged-image-m.toml image-m " ]
    done
    assert_cleaned "$job"
}

@test "srun -N3 --stage-data mounts to ssd before the tasks start" {
    run as_user srun -N3 --stage-data=image-m:ssd bash -c "echo \$(hostname) \$DLSTAGE_IMAGE_M \$($DIGEST \$DLSTAGE_IMAGE_M)"
    echo "$output"
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$DATA/tree")
    each_node_says "$output" "/local/dlstage/[0-9]+/image-m $want"
    job=$(grep -oE '/local/dlstage/[0-9]+' <<<"$output" | head -n1 | cut -d/ -f4)
    assert_cleaned "$job"
}

@test "salloc: dlstage stage mounts, a second dlstage stage keeps the mounts, the end of salloc removes them" {
    run as_user salloc -N3 --stage-data=image-m bash -c "
        $DLSTAGE_BIN stage || exit 1
        $DLSTAGE_BIN stage || exit 1
        srun -N3 bash -c 'echo \$(hostname) \$($DIGEST \$DLSTAGE_IMAGE_M) \$(grep -c squashfuse /proc/mounts)'
        echo JOB=\$SLURM_JOB_ID"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q 'dlstage: image-m is already staged to shm on 3 nodes' <<<"$output"
    want=$("$DIGEST" "$DATA/tree")
    each_node_says "$output" "$want 1"  # one mount per node, not two
    job=$(grep -oE '^JOB=[0-9]+' <<<"$output" | cut -d= -f2)
    assert_cleaned "$job"
}

@test "an image squashfuse refuses: one clear line per node naming the source, tasks never start, nothing left" {
    run as_user srun -N3 --stage-data=broken-m bash -c 'echo TASK-RAN'
    echo "$output"
    [ "$status" -ne 0 ]
    ! grep -q TASK-RAN <<<"$output" || false
    grep -q "^dlstage: mounting broken-m failed on n[123]: squashfuse[_a-z]* cannot mount the image $DLSTAGE_TEST_DIR/data/broken.sqfs: .*(rebuild it with 'dlstage pack')$" <<<"$output"
    grep -q "^dlstage: mounting broken-m failed; see the messages above" <<<"$output"
    doc_says "$USER_GUIDE" 'mounting imagenet failed' imagenet=broken-m imagenet.sqfs=broken.sqfs <<<"$output"
    job=$(squeue -h -t all -o '%i %j' | sort -n | tail -n1 | cut -d' ' -f1)
    assert_cleaned "$job"
}

@test "a squashfuse killed during the job: its node drops DLSTAGE_IMAGE_M, the epilog detaches the dead mount" {
    work=$(user_workdir)
    sbatch_image_m "$work" <<'SCRIPT'
#!/bin/bash
# Virtual nodes share one pid space: kill the squashfuse of n2's mount namespace.
srun -N1 -w n2 bash -c 'for p in $(pgrep -u "$(id -u)" squashfuse); do
  [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/self/ns/mnt)" ] && kill -KILL $p && echo "killed $p on $(hostname)"; done'
sleep 2   # the holder looks at its server every second
srun -N3 --ntasks-per-node=1 bash -c 'echo "$(hostname) [${DLSTAGE_IMAGE_M:-unset}]"'
SCRIPT
    grep -q "^killed [0-9]* on n2$" "$work/out.txt"
    grep -qx "n1 \[/dev/shm/dlstage/$job/image-m\]" "$work/out.txt"
    grep -qx "n2 \[unset\]" "$work/out.txt"
    grep -qx "n3 \[/dev/shm/dlstage/$job/image-m\]" "$work/out.txt"
    assert_cleaned "$job"
    [ "$(record_value "$STATE/jobs/$job/n2.epilog.toml" 'r["unmounted"]')" = 1 ]
    # the holder's word on it reaches the user through dlstage status
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status "$job"
    echo "$output"
    grep -q "^job $job: failed on n2: the squashfuse serving image-m on n2 ended (killed by signal .*); DLSTAGE_IMAGE_M no longer works there$" <<<"$output"
}

@test "epilog: a symlink the user put in place of the mount point unmounts nothing outside the job" {
    work=$(user_workdir)
    # On every node: unmount, and point the mount point at the node's /local mount.
    sbatch_image_m "$work" <<'SCRIPT'
#!/bin/bash
srun -N3 --ntasks-per-node=1 --overlap bash -c 'fusermount3 -u "$DLSTAGE_IMAGE_M" && rmdir "$DLSTAGE_IMAGE_M" &&
  ln -s /local "$DLSTAGE_IMAGE_M" && echo "$(hostname) planted"'
SCRIPT
    [ "$(grep -c ' planted$' "$work/out.txt")" -eq 3 ]
    assert_cleaned "$job"
    for node in n1 n2 n3; do
        on_node "$node" mountpoint -q /local
        [ "$(record_value "$STATE/jobs/$job/$node.epilog.toml" 'r.get("unmounted", 0)')" = 0 ]
    done
}
