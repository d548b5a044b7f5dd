#!/usr/bin/env bats
# Split staging (--stage-data=NAME:TIER:split): a dataset larger than one
# node's tier is laid over the job's nodes, each holding its share (shard i
# on node i mod N, largest first when sizes differ), the source read once
# in all; DLSTAGE_<NAME>_INDEX says which node holds which part.  The shard
# sets are served by pfssim on every node, so reads are counted; two-hop
# staging's LARGEDATA by pfssim on the mover node.

load helpers

SRC="$DLSTAGE_TEST_DIR/data/splitsrc"
PFS="$DLSTAGE_TEST_DIR/pfs-split"
PFSSIM="$DLSTAGE_TEST_DIR/bin/pfssim"
MOVER_NODE=${DLSTAGE_TEST_MOVER_NODE:-n4}
SCRATCH="$DLSTAGE_TEST_DIR/scratch/dlstage"

stats_of() { echo "$DLSTAGE_TEST_DIR/pfs-stats-split-$1"; }

# LARGEDATA on the mover node, as 58-mover.bats serves it.
mount_largedata() {
    on_node "$MOVER_NODE" "$PFSSIM" "$DLSTAGE_TEST_DIR/largedata-src/data" "$DLSTAGE_TEST_DIR/largedata" \
        --bandwidth 0 --stream-bandwidth 0 --stats "$(stats_of mover)" -o allow_other 2>/dev/null
    for _ in $(seq 50); do on_node "$MOVER_NODE" mountpoint -q "$DLSTAGE_TEST_DIR/largedata" && return 0; sleep 0.1; done
    echo "pfssim did not mount LARGEDATA on $MOVER_NODE" >&2
    return 1
}

setup_file() {
    # The nodes' without the page cache: pfssim drops a file's cached pages
    # at every open, so two readers of one shard (a chunk each) with the
    # kernel's readahead made it count up to a shard more than was asked.
    mount_pfs host
    for where in n1 n2 n3; do mount_pfs "$where" 0 --direct-io; done
    mount_largedata
}

teardown_file() {
    for where in host n1 n2 n3; do unmount_pfs "$where"; done
    on_node "$MOVER_NODE" fusermount3 -u "$DLSTAGE_TEST_DIR/largedata" 2>/dev/null || true
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
}

# lister DIR: a script printing "PATH SIZE SHA256" for each file below its
# working directory, sorted (the nodes and the test run it).
lister() {
    cat >"$1/list-files.py" <<'PY'
import hashlib, os, sys
rows = []
for d, _, files in os.walk(b"."):
    for f in files:
        p = os.path.join(d, f)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            rows.append(b"%s %d %s\n" % (os.path.relpath(p), os.path.getsize(p), digest.encode()))
sys.stdout.buffer.write(b"".join(sorted(rows)))
PY
    chmod a+r "$1/list-files.py"
}

# A job script: on each node, the node's id, its host, what it holds (one
# "PATH SIZE SHA256" a line, files only) and its index, into the work dir.
parts_job() {
    local var=DLSTAGE_$1 dir
    dir=$(user_workdir)
    lister "$dir"
    cat >"$dir/parts.sh" <<SH
#!/bin/bash
srun -N\$SLURM_NNODES --ntasks-per-node=1 bash -c '
    out=$dir/node-\$SLURM_NODEID
    echo "\$(hostname) \$$var \$${var}_INDEX" > \$out.where
    cd "\$$var" && /usr/bin/python3 $dir/list-files.py > \$out.files
    [ -z "\$${var}_INDEX" ] || cp "\$${var}_INDEX" \$out.json'
SH
    chmod 0755 "$dir/parts.sh"
    echo "$dir/parts.sh"
}

# The source's files as parts_job lists them (below DIR).
listing_of() {
    (cd "$1" && /usr/bin/python3 "$(user_workdir)/list-files.py")
}

# json_get FILE EXPR: a Python expression over the index `i`.
json_get() {
    /usr/bin/python3 -c 'import json, sys; i = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

@test "a shard set 2.5 times a node's tier, split on 3 nodes: each its share, the union the source, read once" {
    local dir script job out before read total node
    dir=$(user_workdir)
    script=$(parts_job SPLIT)
    before=$(pfs_bytes_read)
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=split:splitshm:split -o "$dir/out.txt" "$script"
    job=${output%%;*}
    out=$(cat "$dir/out.txt")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    read=$(($(pfs_bytes_read) - before))
    total=$(du -cb "$SRC"/split/shard-* | tail -n1 | cut -f1)
    # 25 shards of about 1 MiB: 9, 8 and 8 of them, none over 10 MiB.
    grep -Eq "^dlstage: staging split \(25\.[0-9] MiB in 25 files\) from $PFS/split/shard-\* to splitshm split over 3 nodes, 8\.[0-9] MiB to 9\.[0-9] MiB each$" <<<"$out" || { echo "$out"; false; }
    grep -Eq "^dlstage: staged split to splitshm split over 3 nodes in [0-9.]+ s \([^)]* in all\); source bytes read 25\.[0-9] MiB \(1\.00x\)" <<<"$out" || { echo "$out"; false; }
    doc_says "$USER_GUIDE" '^dlstage: staging in21k .* split over 8' in21k=split shm=splitshm <<<"$out"
    doc_says "$USER_GUIDE" '^dlstage: staged in21k to shm split over' in21k=split shm=splitshm <<<"$out"
    # Read once in all, as pfssim counts it (no readahead: setup_file).
    [ "$read" -eq "$total" ] || { echo "read $read of $total"; false; }
    # Each node: exactly the shards the index gives it, shard i on node i mod 3.
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$SRC/split" > "$dir/source"
    diff "$dir/source" "$dir/union"
    for node in 0 1 2; do
        grep -Eq "^n$((node + 1)) /dev/shm/dlsplit/$job/split /dev/shm/dlsplit/$job/\.index-split\.json$" "$dir/node-$node.where"
        [ "$(json_get "$dir/node-$node.json" 'i["node"]')" = "$node" ]
        [ "$(json_get "$dir/node-$node.json" '" ".join(sorted(p["path"] for p in i["parts"] if p["node"] == i["node"]))')" = \
          "$(cut -d' ' -f1 "$dir/node-$node.files" | tr '\n' ' ' | sed 's/ $//')" ]
        [ "$(json_get "$dir/node-$node.json" 'all(int(p["path"][6:12]) % 3 == p["node"] for p in i["parts"])')" = True ]
        [ "$(json_get "$dir/node-$node.json" 'i["shares"][i["node"]]["host"]')" = "n$((node + 1))" ]
        [ "$(json_get "$dir/node-$node.json" 'sum(s["bytes"] for s in i["shares"])')" = "$total" ]
    done
    assert_healthy
}

@test "refused whole with the one-line advice, and split on too few nodes; one file cannot be split" {
    local before
    before=$(job_ids)
    run as_user sbatch -N3 --stage-data=split:splitshm --wrap true
    [ "$status" -ne 0 ]
    grep -q "sbatch: error: dlstage: dataset 'split' needs 25.4 MiB but tier 'splitshm' allows at most 10.0 MiB (max_bytes = 10.0 MiB); allowed tiers: splitcache, scratch; it would fit split on 3 or more nodes: --stage-data=split:splitshm:split with -N 3 or more$" <<<"$output" || { echo "$output"; false; }
    doc_says "$USER_GUIDE" "dataset 'in21k' needs 1.2 TiB" in21k=split shm=splitshm ssd=splitcache <<<"$output"
    run as_user sbatch -N2 --stage-data=split:splitshm:split --wrap true
    [ "$status" -ne 0 ]
    grep -q "dlstage: dataset 'split' (25.4 MiB) split over 2 nodes needs more than the 10.0 MiB tier 'splitshm' takes per node; it fits split on 3 or more nodes: ask for -N 3 or more" <<<"$output" || { echo "$output"; false; }
    doc_says "$USER_GUIDE" "dataset 'in21k' \(1.2 TiB\) split over 4" in21k=split shm=splitshm <<<"$output"
    run as_user sbatch -N3 --stage-data=big:ssd:split --wrap true
    [ "$status" -ne 0 ]
    grep -q "dlstage: dataset 'big' is one file ($DATA/file64.bin): it cannot be split; stage it whole, or pack it into tar shards with 'dlstage pack --format tar'" <<<"$output" || { echo "$output"; false; }
    run as_user sbatch -N3 --stage-data=splittree:scratch:split --wrap true
    [ "$status" -ne 0 ]
    grep -q "dlstage: dataset 'splittree' cannot be split in tier 'scratch': a shared tier holds one copy every node reads" <<<"$output" || { echo "$output"; false; }
    run as_user sbatch -N3 --stage-data=split:split --wrap true
    [ "$status" -ne 0 ]
    grep -q "dlstage: missing tier before ':split' in 'split:split'" <<<"$output" || { echo "$output"; false; }
    [ -z "$(new_job_ids "$before")" ]
}

@test "uneven shards: largest first, every node's share within one shard of another's" {
    local dir script out job shares
    dir=$(user_workdir)
    script=$(parts_job UNEVEN)
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=uneven:splitshm:split -o "$dir/out.txt" "$script"
    out=$(cat "$dir/out.txt")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$SRC/uneven" > "$dir/source"
    diff "$dir/source" "$dir/union"
    # Round robin would give node 0 the three 3 MiB shards (0, 3, 6): over
    # the tier's 10 MiB with the rest.  Each node holds one of them.
    for node in 0 1 2; do
        [ "$(grep -cE '^shard-[036]\.tar ' "$dir/node-$node.files")" -eq 1 ] || { cat "$dir/node-$node.files"; false; }
    done
    shares=$(json_get "$dir/node-0.json" '" ".join(str(s["bytes"]) for s in i["shares"])')
    /usr/bin/python3 -c 'import sys; s = [int(x) for x in sys.argv[1:]]; sys.exit(max(s) - min(s) > (3 << 20) + 8192)' $shares
}

@test "a tree split by file (the catalog's placement = \"split\"); :whole stages it whole" {
    local dir script out merged node
    dir=$(user_workdir)
    script=$(parts_job SPLITTREE)
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=splittree:shm -o "$dir/out.txt" "$script"
    out=$(cat "$dir/out.txt")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    grep -q "^dlstage: staged splittree to shm split over 3 nodes" <<<"$out" || { echo "$out"; false; }
    # Every file on exactly one node; together, the tree's files.
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$DATA/tree" > "$dir/source"
    diff "$dir/source" "$dir/union"
    for node in 0 1 2; do
        [ "$(wc -l < "$dir/node-$node.files")" -gt 0 ]
        [ "$(json_get "$dir/node-$node.json" '"parts" in i')" = False ]  # a tree's files are not listed
        [ "$(json_get "$dir/node-$node.json" 'i["files"]')" -ge "$(wc -l < "$dir/node-$node.files")" ]
    done
    rm "$dir"/node-*
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=splittree:shm:whole -o "$dir/whole.txt" "$script"
    [ "$status" -eq 0 ] || { cat "$dir/whole.txt"; false; }
    grep -q "^dlstage: staged splittree to shm on 3 nodes" "$dir/whole.txt"
    for node in 0 1 2; do diff "$dir/source" "$dir/node-$node.files"; [ ! -e "$dir/node-$node.json" ]; done
    assert_healthy
}

@test "tar shards extracted split: each node unpacks only its own; together they are the tree" {
    local dir script out
    dir=$(user_workdir)
    script=$(parts_job SHARDS_X)
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=shards-x:shm:split -o "$dir/out.txt" "$script"
    out=$(cat "$dir/out.txt")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    grep -Eq "^dlstage: shards-x: extracted 1 archive in [0-9.]+ s on each node, its share" <<<"$out" || { echo "$out"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$DATA/tree" > "$dir/source"
    diff "$dir/source" "$dir/union"
    for node in 0 1 2; do
        [ "$(json_get "$dir/node-$node.json" '[p["path"] for p in i["parts"] if p["node"] == i["node"]]')" = \
          "$(json_get "$dir/node-$node.json" '[sorted(p["path"] for p in i["parts"])[i["node"]]]')" ]
    done
    assert_healthy
}

@test "a squashfs image set: split, each node unpacks its own images; whole, every image into one directory" {
    local dir script out node
    dir=$(user_workdir)
    script=$(parts_job IMGSET)
    listing_of "$DATA/tree" > "$dir/source"
    run sbatch_wait as_user sbatch --parsable -N3 --stage-data=imgset:shm:split -o "$dir/out.txt" "$script"
    out=$(cat "$dir/out.txt")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    grep -Eq "^dlstage: imgset: extracted 1 archive in [0-9.]+ s on each node, its share" <<<"$out" || { echo "$out"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    diff "$dir/source" "$dir/union"
    for node in 0 1 2; do
        [ "$(json_get "$dir/node-$node.json" '[p["path"] for p in i["parts"] if p["node"] == i["node"]]')" = "['part-$node.sqfs']" ]
    done
    rm "$dir"/node-*
    run sbatch_wait as_user sbatch --parsable -N1 --stage-data=imgset:shm -o "$dir/whole.txt" "$script"
    [ "$status" -eq 0 ] || { cat "$dir/whole.txt"; false; }
    grep -Eq "^dlstage: imgset: extracted 3 archives" "$dir/whole.txt" || { cat "$dir/whole.txt"; false; }
    diff "$dir/source" "$dir/node-0.files"
    assert_healthy
}

@test "two-hop and split: the mover job's copy in scratch, split over the job's nodes" {
    local dir script out job mover
    dir=$(user_workdir)
    forget_kept_copy "$SCRATCH/$VCLUSTER_USER" in21k
    script=$(parts_job IN21K)
    run as_user sbatch --parsable -N3 --stage-data=in21k:shm:split -o "$dir/out.txt" "$script"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    job=$(grep -E '^[0-9]+$' <<<"$output")
    mover=$(grep -oE 'mover job [0-9]+' <<<"$output" | head -n1 | grep -oE '[0-9]+')
    [ -n "$job" ] && [ -n "$mover" ] || { echo "$output"; false; }
    wait_job_gone "$job" 240
    out=$(cat "$dir/out.txt")
    grep -q "^dlstage: staged in21k to shm split over 3 nodes" <<<"$out" || { echo "$out"; false; }
    grep -q "from $SCRATCH/$VCLUSTER_USER/in21k to shm" <<<"$out" || { echo "$out"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$SCRATCH/$VCLUSTER_USER/in21k" > "$dir/source"
    [ "$(wc -l < "$dir/source")" -ge 300 ]
    diff "$dir/source" "$dir/union"
    assert_healthy
}

@test "a node cache keeps each node's share: the next job on the same nodes reads nothing" {
    local dir script out before read
    dir=$(user_workdir)
    for node in n1 n2 n3; do
        for i in 0 1 2; do forget_kept_copy "/local/dlsplitcache/.cache/$VCLUSTER_USER" "split.split-$i-of-3" "$node"; done
    done
    script=$(parts_job SPLIT)
    run sbatch_wait as_user sbatch --parsable -N3 -w n1,n2,n3 --stage-data=split:splitcache:split -o "$dir/first.txt" "$script"
    [ "$status" -eq 0 ] || { cat "$dir/first.txt"; false; }
    grep -q "^dlstage: staged split to splitcache split over 3 nodes" "$dir/first.txt" || { cat "$dir/first.txt"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    listing_of "$SRC/split" > "$dir/source"
    diff "$dir/source" "$dir/union"
    rm "$dir"/node-*
    before=$(pfs_bytes_read)
    run sbatch_wait as_user sbatch --parsable -N3 -w n1,n2,n3 --stage-data=split:splitcache:split -o "$dir/second.txt" "$script"
    [ "$status" -eq 0 ] || { cat "$dir/second.txt"; false; }
    read=$(($(pfs_bytes_read) - before))
    grep -q "^dlstage: split: cache hit on 3 of 3 nodes" "$dir/second.txt" || { cat "$dir/second.txt"; false; }
    [ "$read" -eq 0 ] || { echo "read $read"; false; }
    cat "$dir"/node-*.files | sort > "$dir/union"
    diff "$dir/source" "$dir/union"
    # Each node's entry is its share, named for it: n1 holds the first of 3.
    on_node n1 test -d "/local/dlsplitcache/.cache/$VCLUSTER_USER/split.split-0-of-3"
    on_node n3 test -d "/local/dlsplitcache/.cache/$VCLUSTER_USER/split.split-2-of-3"
    on_node n1 test ! -e "/local/dlsplitcache/.cache/$VCLUSTER_USER/split"
    assert_healthy
}

@test "ranks out of the job's node order: split caching refused with a line, no share cached under another's name" {
    local dir script
    dir=$(user_workdir)
    for node in n1 n2 n3; do
        for i in 0 1 2; do forget_kept_copy "/local/dlsplitcache/.cache/$VCLUSTER_USER" "split.split-$i-of-3" "$node"; done
    done
    # The job's srun puts rank 0 on n3 (the user's own environment: an
    # arbitrary distribution from a host file, as a launcher might order
    # ranks).  n3's prolog recorded the use of share 2, of its place in
    # the job's node list: the share rank 0 would write there, 0, would
    # have no use record, and another user's prolog could evict it while
    # this job reads it.
    printf 'n3\nn2\nn1\n' >"$dir/reversed-hosts"
    chmod 0644 "$dir/reversed-hosts"
    script=$(parts_job SPLIT)
    run sbatch_wait as_user env SLURM_DISTRIBUTION=arbitrary SLURM_HOSTFILE="$dir/reversed-hosts" \
        sbatch --parsable -N3 -w n1,n2,n3 --stage-data=split:splitcache:split -o "$dir/reversed.txt" "$script"
    cat "$dir/reversed.txt"
    [ "$status" -ne 0 ]
    grep -q "^dlstage: staging split to splitcache failed on n[123]: split: its node cache shares cannot be kept: rank 0 runs on n3, the job's node 2 in its list, so its share would not be the one that node's prolog keeps from eviction: launch one rank per node in the job's node order, or stage it whole or to a job-end tier$" \
        "$dir/reversed.txt"
    for node in n1 n2 n3; do
        [ -z "$(on_node "$node" find /local/dlsplitcache/.cache/"$VCLUSTER_USER" -maxdepth 1 -name 'split.split-*')" ]
    done
    assert_healthy
}

@test "examples/pytorch/split_shards.py under srun: every sample read exactly once per epoch over 3 nodes x 2 tasks" {
    local dir out
    dir=$(user_workdir)
    cp "$BATS_TEST_DIRNAME/../../examples/pytorch/split_shards.py" "$dir/"
    chmod a+rx "$dir/split_shards.py"
    cat >"$dir/epoch.sh" <<SH
#!/bin/bash
srun -N3 --ntasks-per-node=2 --cpus-per-task=1 /usr/bin/python3 $dir/split_shards.py --dataset split --workers 1 --list-keys
SH
    chmod 0755 "$dir/epoch.sh"
    run sbatch_wait as_user sbatch --parsable -N3 --ntasks-per-node=2 --cpus-per-task=1 --mem=0 \
        --stage-data=split:splitshm:split -o "$dir/epoch.out" "$dir/epoch.sh"
    out=$(cat "$dir/epoch.out")
    [ "$status" -eq 0 ] || { echo "$output"; echo "$out"; false; }
    # 25 shards of 8 samples: 200 keys, each once, over 6 tasks.
    [ "$(grep -c '^key=' <<<"$out")" -eq 200 ] || { echo "$out" | grep -v '^key='; false; }
    [ "$(grep '^key=' <<<"$out" | sort -u | wc -l)" -eq 200 ]
    [ "$(grep -cE '^epoch_s=[0-9.]+ samples=[0-9]+ rank=[0-5] node=[0-2]$' <<<"$out")" -eq 6 ]
    assert_healthy
}
