#!/usr/bin/env bats
# examples/pytorch/split_shards.py, the example reader of a dataset staged
# split (--stage-data=NAME:TIER:split), without a cluster: 5 tar shards
# placed round robin on 2 "nodes" as dlstage lays them out (a directory of
# each node's shards and its index), read by 2 tasks per node with 2
# DataLoader workers each, as srun would start them.  Every sample must be
# read exactly once: a task or worker that reads another's shards repeats keys.
load helpers

# SPLIT_PY points the test at another copy of the script (to see it fail).
SPLIT="${SPLIT_PY:-$top_srcdir/examples/pytorch/split_shards.py}"

setup() {
    make_work
    # Samples per shard are uneven; every other sample has a .cls besides its
    # .jpg (2 members, 1 sample); shard 3 is gzip'd; keys are unique over the
    # dataset and in class directories, as WebDataset shards of an ImageFolder.
    /usr/bin/python3 - "$work" <<'PY'
import io, json, os, sys, tarfile
work = sys.argv[1]
counts, nodes, hosts = [3, 7, 1, 5, 4], 2, ["n1", "n2"]
parts, keys, n = [], [], 0
for node in range(nodes):
    os.makedirs(f"{work}/node-{node}")
for i, count in enumerate(counts):
    node = i % nodes  # round robin in node order
    name = f"shard-{i:06d}.tar" + (".gz" if i == 3 else "")
    path = f"{work}/node-{node}/{name}"
    with tarfile.open(path, "w:gz" if name.endswith(".gz") else "w") as tar:
        folder = tarfile.TarInfo(f"c{i % 2}")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for _ in range(count):
            key = f"c{i % 2}/{n:06d}"
            members = [("jpg", b"\xff\xd8" + bytes(n))] + ([("cls", str(n % 2).encode())] if n % 2 else [])
            for ext, data in members:
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            keys.append(key)
            n += 1
    parts.append({"path": name, "node": node, "bytes": os.path.getsize(path)})
shares = [{"node": k, "host": hosts[k], "bytes": sum(p["bytes"] for p in parts if p["node"] == k),
           "files": sum(1 for p in parts if p["node"] == k)} for k in range(nodes)]
for node in range(nodes):
    index = {"dataset": "x", "tier": "shm", "placement": "split", "nodes": nodes, "node": node,
             "bytes": sum(p["bytes"] for p in parts), "files": len(parts), "shares": shares, "parts": parts}
    with open(f"{work}/index-{node}.json", "w") as f:
        json.dump(index, f)
with open(f"{work}/all-keys", "w") as f:
    f.write("".join(f"key={k}\n" for k in sorted(keys)))
PY
}

need_torch() {
    /usr/bin/python3 -c 'import torch' 2>/dev/null || skip "no python3-torch (scripts/install-deps installs it)"
}

# task NODE LOCALID [VAR=VALUE...]: runs the script as task LOCALID of NODE
# (2 tasks per node unless a VAR says otherwise: a VAR= empty counts as
# unset); stdout in $work/out-NODE-LOCALID.
task() {
    local node=$1 local_id=$2
    shift 2
    env SLURM_TASKS_PER_NODE= SLURM_NTASKS_PER_NODE=2 SLURM_LOCALID="$local_id" \
        SLURM_PROCID=$((node * 2 + local_id)) SLURM_NODEID="$node" \
        DLSTAGE_X="$work/node-$node" DLSTAGE_X_INDEX="$work/index-$node.json" "$@" \
        "$SPLIT" --dataset x --workers "${workers:-2}" --batch-size 3 --list-keys \
        >"$work/out-$node-$local_id" 2>"$work/err-$node-$local_id"
}

# all_tasks [VAR=VALUE...]: the 4 tasks at once, as srun starts them; each must
# end well with its count and rank, and the keys of all 4 are every key once.
# (It returns at its first failure: the test calls it in an if, too, where
# bats' errexit does not stop it.)
all_tasks() {
    local node local_id rc
    for node in 0 1; do
        for local_id in 0 1; do
            { task "$node" "$local_id" "$@" && rc=0 || rc=$?; echo "$rc" >"$work/rc-$node-$local_id"; } &
        done
    done
    wait
    for node in 0 1; do
        for local_id in 0 1; do
            out=$(cat "$work/out-$node-$local_id")
            err=$(cat "$work/err-$node-$local_id")
            rc=$(cat "$work/rc-$node-$local_id")
            [ "$rc" -eq 0 ] || fail "task $local_id of node $node: exit $rc" || return
            local keys
            keys=$(grep -c '^key=' <<<"$out" || true)
            tail -n1 <<<"$out" | grep -Eq "^epoch_s=[0-9.]+ samples=$keys rank=$((node * 2 + local_id)) node=$node$" ||
                fail "last line of node $node local $local_id" || return
        done
    done
    out=$(cat "$work"/out-* | grep '^key=' | sort)
    err=
    # sort, not sort -u: a key read twice shows as a difference.
    diff <(printf '%s\n' "$out") "$work/all-keys" >&2 || fail "the keys read are not every key once (diff above: < read, > expected)"
}

@test "2 nodes x 2 tasks x 2 workers read every sample exactly once" {
    need_torch
    [ "$(wc -l <"$work/all-keys")" -eq 20 ] || fail "the fixture has $(wc -l <"$work/all-keys") samples, not 20"
    all_tasks
}

@test "the node's task count from SLURM_TASKS_PER_NODE (2(x2)), no workers" {
    need_torch
    workers=0 all_tasks SLURM_NTASKS_PER_NODE= SLURM_TASKS_PER_NODE='2(x2)'
}

@test "the check fails when a node's tasks do not split its share" {
    need_torch
    # Each task told it is alone on its node reads the node's share whole:
    # every key twice, which the check must refuse.
    if all_tasks SLURM_NTASKS_PER_NODE=1 SLURM_LOCALID=0 2>"$work/check"; then
        fail "the check passed with every key read twice"
    fi
    grep -q '^FAIL: the keys read are not every key once' "$work/check" || fail "failed otherwise: $(cat "$work/check")"
}

@test "without the job's variables: one line naming --stage-data=NAME:TIER:split, exit non-zero" {
    need_torch  # the script imports torch first
    env -u DLSTAGE_X -u DLSTAGE_X_INDEX "$SPLIT" --dataset x >"$work/out" 2>"$work/err" && status=0 || status=$?
    out=$(cat "$work/out")
    err=$(cat "$work/err")
    [ "$status" -ne 0 ] || fail "exit 0"
    expect_no_out
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "not one line"
    [ "$err" = "split_shards.py: DLSTAGE_X or DLSTAGE_X_INDEX is not set: run this under a job staged with --stage-data=x:TIER:split" ] ||
        fail "unexpected message"
}

@test "an unreadable index and a missing part of this node: one line each, exit non-zero" {
    need_torch
    DLSTAGE_X="$work/node-1" DLSTAGE_X_INDEX="$work/no-index.json" "$SPLIT" --dataset x >"$work/out" 2>"$work/err" &&
        status=0 || status=$?
    err=$(cat "$work/err")
    [ "$status" -ne 0 ] && [ "$(wc -l <"$work/err")" -eq 1 ] || fail "exit $status"
    expect_err "split_shards.py: cannot read the index $work/no-index.json: "
    rm "$work/node-1/shard-000003.tar.gz"
    DLSTAGE_X="$work/node-1" DLSTAGE_X_INDEX="$work/index-1.json" "$SPLIT" --dataset x >"$work/out" 2>"$work/err" &&
        status=0 || status=$?
    err=$(cat "$work/err")
    [ "$status" -ne 0 ] && [ "$(wc -l <"$work/err")" -eq 1 ] || fail "exit $status"
    expect_err "split_shards.py: $work/node-1/shard-000003.tar.gz is missing: the index places it on this node (node 1)"
}
