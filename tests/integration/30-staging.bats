#!/usr/bin/env bats
# End-to-end staging on 3 nodes: one batch job stages the whole matrix
# (a 64 MiB file, a ~2,000-file tree, tar shards copied and extracted, a
# squashfs image copied and extracted) before its script starts; the script
# checks on every node that $DLSTAGE_<NAME> holds exactly the source content
# (a digest over paths, types, modes, sizes and bytes).

load helpers

MATRIX="big:ssd,tree:shm,shards:shm,shards-x:ssd,image:shm,image-x:ssd"

setup_file() {
    local work script
    work=$(BATS_TEST_NUMBER=matrix user_workdir)
    script="$work/job.sh"
    cat >"$script" <<SCRIPT
#!/bin/bash
echo "SCRIPT-START \$(date +%s.%N)"
echo "DATASETS=\$DLSTAGE_DATASETS"
srun -N3 --ntasks-per-node=1 bash -c '
  for v in BIG TREE SHARDS SHARDS_X IMAGE IMAGE_X; do
    p=DLSTAGE_\$v
    echo "\$(hostname) \$v \${!p} \$("$DIGEST" "\${!p}")"
  done
  echo "\$(hostname) MTIMES \$("$DIGEST" --mtimes "\$DLSTAGE_TREE") \$("$DIGEST" --mtimes "\$DLSTAGE_SHARDS_X")"'
SCRIPT
    chmod a+rx "$script"
    (cd "$work" && sbatch_wait runuser -u "$VCLUSTER_USER" -- env SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo \
        sbatch --parsable -N3 -o out.txt --stage-data="$MATRIX" "$script") >"$work/job_id" 2>"$work/sbatch.err"
    echo $? >"$work/sbatch.rc"
}

matrix_file() { echo "$DLSTAGE_TEST_DIR/work/30-staging-matrix/$1"; }
matrix_job() { cut -d';' -f1 "$(matrix_file job_id)"; }

# expect_on_all_nodes VAR DIGEST PATH_GLOB
expect_on_all_nodes() {
    local out node line
    out=$(cat "$(matrix_file out.txt)")
    for node in n1 n2 n3; do
        line=$(grep "^$node $1 " <<<"$out") || { echo "no $1 line from $node in: $out"; return 1; }
        [[ "$line" == "$node $1 "$3" $2" ]] || { echo "$node: got '$line', want path $3 digest $2"; return 1; }
    done
}

@test "the batch job with the whole matrix succeeds" {
    cat "$(matrix_file sbatch.err)" "$(matrix_file out.txt)"
    [ "$(cat "$(matrix_file sbatch.rc)")" -eq 0 ]
    job=$(matrix_job)
    wait_job_gone "$job"
    [ "$(job_state "$job")" = COMPLETED ]
}

@test "the script started only after every dataset was staged, and sees DLSTAGE_DATASETS" {
    out=$(cat "$(matrix_file out.txt)")
    [ "$(grep -c '^dlstage: staged ' <<<"$out")" -eq 6 ]
    # every "staged" line comes before the script's first line
    [ "$(grep -n -m1 SCRIPT-START <<<"$out" | cut -d: -f1)" -gt "$(grep -n '^dlstage: staged ' <<<"$out" | tail -n1 | cut -d: -f1)" ]
    grep -qx 'DATASETS=big,tree,shards,shards-x,image,image-x' <<<"$out"
}

@test "every staging read the source once (1.00x) whatever the node count" {
    out=$(cat "$(matrix_file out.txt)")
    [ "$(grep '^dlstage: staged ' <<<"$out" | grep -c 'on 3 nodes .*(1.00x); peak memory per rank [0-9.]* MiB; cpu [0-9.]* s over all nodes$')" -eq 6 ]
    # as the user guide and dlstage(1) show them
    for doc in "$USER_GUIDE" "$MAN1"; do
        doc_says "$doc" '^dlstage: staging tree ' <<<"$out"
        doc_says "$doc" '^dlstage: staged tree ' <<<"$out"
        doc_says "$doc" '^dlstage: tree: time by phase ' <<<"$out"
        doc_says "$doc" '^dlstage: tree: reading and writing ' <<<"$out"
    done
}

@test "every staging says its time by phase, the transfer's included" {
    out=$(cat "$(matrix_file out.txt)")
    phases='plan [0-9.]+ s, check [0-9.]+ s, prepare [0-9.]+ s, skeleton [0-9.]+ s, transfer [0-9.]+ s, finish [0-9.]+ s, extract [0-9.]+ s, publish [0-9.]+ s'
    [ "$(grep -cE "^dlstage: [a-z-]+: time by phase \(slowest node\): $phases\$" <<<"$out")" -eq 6 ]
    # The tree took time to move: its transfer is not all zeros.
    grep -E '^dlstage: tree: time by phase' <<<"$out" | grep -qvE 'transfer 0\.00 s'
}

@test "a copied dataset says how long it read, wrote, and did both at once" {
    out=$(cat "$(matrix_file out.txt)")
    io='reading ([0-9.]+) s, writing ([0-9.]+) s, both at once ([0-9.]+) s'
    for ds in big tree; do
        line=$(grep -E "^dlstage: $ds: reading and writing \(busiest node\): $io\$" <<<"$out")
        [[ $line =~ $io ]]
        read -r reading writing both <<<"${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
        # it took time (64 MiB read warm may round to 0.00 s), and the
        # overlap is no longer than either
        awk -v r="$reading" -v w="$writing" -v b="$both" 'BEGIN { exit !(r + w > 0 && b <= r && b <= w) }'
    done
}

@test "progress records say every dataset is ready, with its size" {
    job=$(matrix_job)
    for ds in big tree shards shards-x image image-x; do
        rec="$STATE/jobs/$job/user/progress-$ds.toml"
        [ "$(record_value "$rec" 'r["state"]')" = ready ]
        [ "$(record_value "$rec" 'r["bytes_done"] == r["bytes_total"] > 0')" = True ]
        [ "$(record_value "$rec" 'r["nodes"]')" = 3 ]
    done
}

@test "dlstage status: every dataset of the job ready on 3 nodes, for its user" {
    job=$(matrix_job)
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status "$job"
    echo "$output"
    [ "$status" -eq 0 ]
    for ds in big:ssd tree:shm shards:shm shards-x:ssd image:shm image-x:ssd; do
        grep -Eq "^$job +[^ ]+ +${ds%%:*} +${ds##*:} +3 +(ready|cleaned) +100% .* [0-9]+:[0-9]{2} +(n\[1-3\]|n1,n2,n3)$" <<<"$output"
    done
    [ "$(wc -l <<<"$output")" -eq 7 ]
}

@test "64 MiB file: exact copy on every node, DLSTAGE_BIG is the file" {
    job=$(matrix_job)
    expect_on_all_nodes BIG "$("$DIGEST" "$DATA/file64.bin")" "/local/dlstage/$job/big/file64.bin"
}

@test "tree of ~2,000 files (symlinks, empty files and dirs, UTF-8 and spaces): exact copy on every node" {
    job=$(matrix_job)
    expect_on_all_nodes TREE "$("$DIGEST" "$DATA/tree")" "/dev/shm/dlstage/$job/tree"
}

@test "tree: mtimes are preserved (copy and extract)" {
    want="$("$DIGEST" --mtimes "$DATA/tree") $("$DIGEST" --mtimes "$DATA/tree")"
    each_node_says "$(cat "$(matrix_file out.txt)")" "MTIMES $want"
}

@test "tar shards (.tar, .tar.gz, .tar.zst), copy mode: the shard files on every node" {
    job=$(matrix_job)
    expect_on_all_nodes SHARDS "$("$DIGEST" "$DATA/shards")" "/dev/shm/dlstage/$job/shards"
}

@test "tar shards, extract mode: all shards unpacked into one directory equal to the tree" {
    job=$(matrix_job)
    expect_on_all_nodes SHARDS_X "$("$DIGEST" "$DATA/tree")" "/local/dlstage/$job/shards-x"
}

@test "squashfs image, copy mode: DLSTAGE_IMAGE is the image file" {
    job=$(matrix_job)
    expect_on_all_nodes IMAGE "$("$DIGEST" "$DATA/tree.sqfs")" "/dev/shm/dlstage/$job/image/tree.sqfs"
}

@test "squashfs image, extract mode: unpacked equal to the tree" {
    job=$(matrix_job)
    expect_on_all_nodes IMAGE_X "$("$DIGEST" "$DATA/tree")" "/local/dlstage/$job/image-x"
}

@test "after the job: no staged data on any node, epilog recorded the cleanup, no node drained" {
    job=$(matrix_job)
    wait_job_gone "$job"
    assert_epilogs_cleaned "$job"
    assert_no_leftovers
    ! sinfo -h -o %T | grep -Eiq 'drain|down' || false
}

@test "srun -N3 --stage-data stages before the tasks start" {
    run as_user srun -N3 --stage-data=tree:ssd bash -c "echo \$(hostname) \$($DIGEST \$DLSTAGE_TREE)"
    echo "$output"
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$DATA/tree")
    each_node_says "$output" "$want"
    grep -q '^dlstage: staged tree to ssd on 3 nodes' <<<"$output"
}

@test "a %n template: each node's DLSTAGE_<NAME> names that node, and is cleaned up" {
    run as_user srun -N3 --stage-data="$DATA/tree:pernode" bash -c "echo \$(hostname) \$DLSTAGE_TREE \$($DIGEST \$DLSTAGE_TREE)"
    echo "$output"
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$DATA/tree")
    for node in n1 n2 n3; do  # each node's own directory
        grep -Eqx "$node /local/dlstage/[0-9]+-$node/tree $want" <<<"$output"
    done
    assert_no_leftovers
}

@test "srun inside a staged job does not stage again" {
    run sbatch_wait as_user sbatch --parsable -N2 -o out.txt --stage-data=tree:shm --wrap "srun -N2 true; srun -N2 true"
    [ "$status" -eq 0 ]
    out=$(cat "$(user_workdir)/out.txt")
    [ "$(grep -c '^dlstage: staging tree' <<<"$out")" -eq 1 ]
}

@test "salloc, then dlstage stage inside the allocation" {
    run as_user salloc -N3 --stage-data=tree bash -c "$DLSTAGE_BIN stage && srun -N3 bash -c 'echo \$(hostname) \$DLSTAGE_TREE \$($DIGEST \$DLSTAGE_TREE)'"
    echo "$output"
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$DATA/tree")
    each_node_says "$output" "/dev/shm/dlstage/[0-9]+/tree $want"
}

@test "dlstage stage twice in one job: the second finds the data staged" {
    run as_user salloc -N2 --stage-data=big:ssd bash -c "$DLSTAGE_BIN stage && $DLSTAGE_BIN stage"
    [ "$status" -eq 0 ]
    grep -q 'dlstage: big is already staged to ssd on 2 nodes' <<<"$output"
}

@test "dlstage stage outside a job says where it must run" {
    run as_user env -u SLURM_JOB_ID "$DLSTAGE_BIN" stage tree
    [ "$status" -eq 1 ]
    [[ "$output" == "dlstage: stage runs inside a Slurm job"* ]]
}
