#!/usr/bin/env bats
# Node caches (cleanup = "cache" on a node tier): a later job of the user on
# the same node uses the dataset with no transfer after a check; only the
# nodes that miss take part in a transfer, and they read the source once;
# a changed source is staged again; what a job does to its copy never
# reaches the next job, nor another user's; two jobs at once share one
# transfer.  The sources are served by pfssim on every node (and on the
# host, where sbatch looks at them), so reads from the "PFS" are counted.

load helpers

PFS="$DLSTAGE_TEST_DIR/pfs-cache"
SRC="$DLSTAGE_TEST_DIR/data/cache-src"
PFSSIM="$DLSTAGE_TEST_DIR/bin/pfssim"

# pfssim NODE ...: its stats file (one instance per node, "host" on the host).
stats_of() { echo "$DLSTAGE_TEST_DIR/pfs-stats-$1"; }

# remount_pfs [MS]: pfssim again on the host and every node, MS (0) per metadata operation.
remount_pfs() {
    local where
    for where in host n1 n2 n3; do unmount_pfs "$where"; mount_pfs "$where" "${1:-0}"; done
}

setup_file() {
    for where in host n1 n2 n3; do mount_pfs "$where"; done
}

teardown_file() {
    for where in host n1 n2 n3; do unmount_pfs "$where"; done
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scancel -u "$OTHER_USER" 2>/dev/null || true
}

cache_of() { echo "/local/dlcache/.cache/$1"; }

# forget_on NODE USER NAME: the user's entry of NAME on NODE goes.
forget_on() {
    forget_kept_copy "$(cache_of "$2")" "$3" "$1"
}

forget_everywhere() {
    forget_kept_copy "$(cache_of "$1")" "$2" n1 n2 n3
}

# on_nodes NODES NAME SPEC [as_user|as_other]: an srun on NODES (n1,n2)
# staging SPEC; each node prints "NODE PATH DIGEST" of $DLSTAGE_<NAME>.
on_nodes() {
    local who=${4:-as_user}
    run "$who" srun -w "$1" -N "$(tr , '\n' <<<"$1" | wc -l)" --stage-data="$3" bash -c "p=DLSTAGE_$2; echo \"\$(hostname) \${!p} \$('$DIGEST' \"\${!p}\")\""
    echo "$output"
}

# The digest a cached copy of PATH must have: the source's bytes, names and
# modes, with the write bits of files taken away (cached files are read-only).
cached_digest() {
    local tmp
    tmp=$(mktemp -d)
    cp -a "$1" "$tmp/x"
    find "$tmp/x" -type f -exec chmod a-w {} +
    "$DIGEST" "$tmp/x"
    rm -rf "$tmp"
}

tree_size() { find "$SRC/tree" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }'; }

@test "a first job stages into every node's cache; the next one hits and reads nothing from the source" {
    forget_everywhere "$VCLUSTER_USER" cached
    want=$(cached_digest "$SRC/tree")
    on_nodes n1,n2,n3 CACHED cached
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(cache_of "$VCLUSTER_USER")/cached $want"
    grep -q "staged cached to cache on 3 nodes" <<<"$output"
    grep -Eq "source bytes read [^ ]+ [^ ]+ \(1\.00x\)" <<<"$output"
    on_node n1 stat -c '%U %a' "$(cache_of "$VCLUSTER_USER")" | grep -qx "$VCLUSTER_USER 700"
    # Cached files are read-only: a job cannot change them by mistake.
    [ -z "$(on_node n2 find "$(cache_of "$VCLUSTER_USER")/cached" -type f -perm /222)" ]

    before=$(pfs_bytes_read)
    on_nodes n1,n2,n3 CACHED cached
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(cache_of "$VCLUSTER_USER")/cached $want"
    grep -q "cached: cache hit on 3 of 3 nodes" <<<"$output"
    doc_says "$USER_GUIDE" 'imagenet: cache hit on 4 of 4' imagenet=cached <<<"$output"
    ! grep -q "staging cached" <<<"$output" || false
    after=$(pfs_bytes_read)
    [ "$after" -eq "$before" ] || { echo "read $((after - before)) bytes on a cache hit"; false; }
    # status shows the hit while the job runs.
    run as_user sbatch --parsable -w n1 -o /dev/null --stage-data=cached --wrap 'sleep 60'
    [ "$status" -eq 0 ]
    job=$output
    for _ in $(seq 150); do
        run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status -h -o '%i %d %T' "$job"
        [[ "$output" == "$job cached cache-hit"* ]] && break
        sleep 0.2
    done
    [[ "$output" == "$job cached cache-hit"* ]] || { echo "status: $output"; false; }
    scancel "$job"
    assert_healthy
}

@test "only the nodes that miss take part, and they read the source once" {
    on_nodes n1,n2,n3 CACHED cached
    [ "$status" -eq 0 ]
    forget_on n2 "$VCLUSTER_USER" cached
    forget_on n3 "$VCLUSTER_USER" cached
    before=$(pfs_bytes_read)
    on_nodes n1,n2,n3 CACHED cached
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(cache_of "$VCLUSTER_USER")/cached $(cached_digest "$SRC/tree")"
    grep -q "cached: cache hit on 1 of 3 nodes" <<<"$output"
    grep -q "staged cached to cache on 2 nodes" <<<"$output"
    doc_says "$USER_GUIDE" 'imagenet: cache hit on 3 of 4' imagenet=cached <<<"$output"
    doc_says "$USER_GUIDE" '^staged imagenet to ssd' imagenet=cached ssd=cache <<<"$output"
    after=$(pfs_bytes_read)
    [ "$((after - before))" -eq "$(tree_size)" ] || { echo "read $((after - before)) of $(tree_size)"; false; }
}

@test "a changed source is staged again" {
    on_nodes n1,n2 CACHED cached
    [ "$status" -eq 0 ]
    f=$(find "$SRC/tree" -type f | head -n1)
    keep=$(mktemp)
    cp -p "$f" "$keep"
    head -c 5000 /dev/urandom >"$f"
    on_nodes n1,n2 CACHED cached
    status_changed=$status
    out=$output
    cp -p "$keep" "$f"
    rm -f "$keep"
    [ "$status_changed" -eq 0 ]
    grep -q "the source changed since it was cached" <<<"$out"
    doc_says "$USER_GUIDE" '\.\.\. the source changed since' <<<"$out"
    grep -q "staged cached to cache on 2 nodes" <<<"$out"
    # The new copy holds the changed file: restaging again now gives the original back.
    on_nodes n1,n2 CACHED cached
    [ "$status" -eq 0 ]
    grep -q "the source changed since it was cached" <<<"$output"
    for n in n1 n2; do grep -Eqx "$n .* $(cached_digest "$SRC/tree")" <<<"$output"; done
}

@test "a job that alters its copy does not change what the next job sees, nor another user's" {
    want=$(cached_digest "$SRC/tree")
    on_nodes n1 CACHED cached
    [ "$status" -eq 0 ]
    # The job changes its copy: a file rewritten (after a chmod back), one added, one removed.
    run as_user srun -N1 -w n1 --stage-data=cached bash -c '
        d=$DLSTAGE_CACHED; f=$(find "$d" -type f | sort | head -n1)
        ! echo x >>"$f" 2>/dev/null || { echo "a cached file was writable"; exit 1; }
        chmod u+w "$f" && head -c $(stat -c %s "$f") /dev/zero >"$f" && chmod a-w "$f"
        echo planted >"$d/planted.txt"
        rm -f "$(find "$d" -type f | sort | tail -n1)"'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    on_nodes n1 CACHED cached
    [ "$status" -eq 0 ]
    grep -q "cached: staging it on n1:" <<<"$output"
    grep -Eqx "n1 .* $want" <<<"$output"
    # A chmod alone (same names, same bytes) moves the file's ctime: staged again, saying so.
    run as_user srun -N1 -w n1 --stage-data=cached bash -c \
        'f=$(find "$DLSTAGE_CACHED" -type f | sort | head -n1); chmod u+w "$f" && chmod a-w "$f"'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    on_nodes n1 CACHED cached
    [ "$status" -eq 0 ]
    grep -q "cached: staging it on n1: 1 entries changed since it was cached" <<<"$output"
    doc_says "$USER_GUIDE" 'entries changed since it was cached' <<<"$output"
    grep -Eqx "n1 .* $want" <<<"$output"
    # Another user gets the source's exact bytes, in an entry of their own.
    forget_everywhere "$OTHER_USER" cached
    on_nodes n1 CACHED cached as_other
    [ "$status" -eq 0 ]
    grep -Eqx "n1 $(cache_of "$OTHER_USER")/cached $want" <<<"$output"
    on_node n1 stat -c '%U %a' "$(cache_of "$OTHER_USER")" | grep -qx "$OTHER_USER 700"
}

@test "a file dataset and unpacked shards are cached too" {
    forget_everywhere "$VCLUSTER_USER" cached-file
    forget_everywhere "$VCLUSTER_USER" cached-x
    for pass in 1 2; do
        on_nodes n1,n2 CACHED_FILE cached-file
        [ "$status" -eq 0 ]
        for n in n1 n2; do grep -Eqx "$n $(cache_of "$VCLUSTER_USER")/cached-file/one.bin .*" <<<"$output"; done
        [ "$pass" = 1 ] || grep -q "cached-file: cache hit on 2 of 2 nodes" <<<"$output"
        on_nodes n1,n2 CACHED_X cached-x
        [ "$status" -eq 0 ]
        [ "$pass" = 1 ] || grep -q "cached-x: cache hit on 2 of 2 nodes" <<<"$output"
    done
}

@test "two jobs at once on the same nodes share one transfer" {
    forget_everywhere "$VCLUSTER_USER" cached
    before=$(pfs_bytes_read)
    run as_user sbatch --parsable -N2 -w n1,n2 -o first.txt --export=ALL,DLSTAGE_RATE_LIMIT=1M \
        --stage-data=cached --wrap 'echo "FIRST $("'"$DIGEST"'" "$DLSTAGE_CACHED")"'
    [ "$status" -eq 0 ]
    first=$output
    for _ in $(seq 300); do on_node n1 test -e "$(cache_of "$VCLUSTER_USER")/.lock-cached" && break; sleep 0.1; done
    run as_user sbatch --parsable -N2 -w n1,n2 -o second.txt --stage-data=cached \
        --wrap 'echo "SECOND $("'"$DIGEST"'" "$DLSTAGE_CACHED")"'
    [ "$status" -eq 0 ]
    second=$output
    wait_job_gone "$first" 120
    wait_job_gone "$second" 120
    d=$(user_workdir)
    cat "$d/first.txt" "$d/second.txt"
    want=$(cached_digest "$SRC/tree")
    grep -q "FIRST $want" "$d/first.txt"
    grep -q "SECOND $want" "$d/second.txt"
    grep -q "staged cached to cache on 2 nodes" "$d/first.txt"
    grep -q "cached: cache hit on 2 of 2 nodes" "$d/second.txt"
    after=$(pfs_bytes_read)
    [ "$((after - before))" -eq "$(tree_size)" ] || { echo "read $((after - before)) of $(tree_size)"; false; }
    assert_healthy
}

@test "a job waiting for one node's lock holds none of the others: a job on those goes through" {
    forget_everywhere "$VCLUSTER_USER" cached
    # Another job of the user "stages" cached on n2: its lock, alive (its job runs, its pid is there).
    run as_user sbatch --parsable -w n2 -o /dev/null --wrap 'sleep 300'
    [ "$status" -eq 0 ]
    holder=$output
    for _ in $(seq 100); do [ "$(job_state "$holder")" = RUNNING ] && break; sleep 0.1; done
    on_node n2 runuser -u "$VCLUSTER_USER" -- bash -c \
        "printf 'job $holder\nhost n2\npid 1\nsince %s\n' \$(date +%s) > '$(cache_of "$VCLUSTER_USER")/.lock-cached'"
    run as_user sbatch --parsable -w n1,n2 -o waiter.txt --stage-data=cached \
        --wrap 'echo "WAITER $("'"$DIGEST"'" "$DLSTAGE_CACHED")"'
    [ "$status" -eq 0 ]
    waiter=$output
    d=$(user_workdir)
    for _ in $(seq 300); do grep -q "waiting: job $holder" "$d/waiter.txt" 2>/dev/null && break; sleep 0.1; done
    grep -q "cached: waiting: job $holder on n2" "$d/waiter.txt"
    # n1 alone: not blocked by the waiter, which holds n1's lock only between its tries.
    run as_user timeout 90 srun -w n1 -N1 --stage-data=cached bash -c 'echo "ALONE $('"$DIGEST"' "$DLSTAGE_CACHED")"'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    grep -q "staged cached to cache on 1 nodes" <<<"$output"
    [ "$(job_state "$waiter")" = RUNNING ]  # still waiting for n2
    scancel "$holder"
    wait_job_gone "$waiter" 120
    cat "$d/waiter.txt"
    grep -q "WAITER $(cached_digest "$SRC/tree")" "$d/waiter.txt"
    grep -q "cached: cache hit on 1 of 2 nodes" "$d/waiter.txt"
    grep -q "staged cached to cache on 1 nodes" "$d/waiter.txt"
    assert_healthy
}

# ---- what root does: directories, eviction, status --node, gc ----------------

entries_on() { on_node "$1" ls "$(cache_of "$VCLUSTER_USER")"; }

@test "the prolog makes the cache directories, and replaces a symlink planted at .cache" {
    on_node n3 rm -rf /local/dlcache/.cache
    on_node n3 ln -s /tmp /local/dlcache/.cache
    on_nodes n3 CACHED cached
    [ "$status" -eq 0 ]
    on_node n3 stat -c '%U %a %F' /local/dlcache/.cache | grep -qx "root 755 directory"
    on_node n3 stat -c '%U %a' "$(cache_of "$VCLUSTER_USER")" | grep -qx "$VCLUSTER_USER 700"
    on_node n3 bash -c 'ls -d /local/dlcache/.cache.untrusted-*' | grep -q untrusted
    [ -z "$(on_node n3 bash -c 'ls /local/dlcache | grep -Ev "^(\.cache.*|[0-9]+)$"')" ]
    # The job's directory went with the job; the entry stays.
    [ -z "$(on_node n3 bash -c 'ls /local/dlcache | grep -E "^[0-9]+$"')" ]
    on_node n3 test -d "$(cache_of "$VCLUSTER_USER")/cached"
    assert_healthy
}

@test "LRU eviction keeps a small tier under its watermark: the least recently used unused entry goes" {
    on_node n1 bash -c 'rm -rf /local/dlcache/.cache/*/* /local/dlcache/.cache/*/.[!.]*'
    for ds in lru1 lru2 lru1 lru3; do
        on_nodes n1 "$(tr a-z A-Z <<<"$ds")" "$ds"
        [ "$status" -eq 0 ]
        sleep 1.1  # last uses a second apart
    done
    grep -q "lru3: staging it on n1: not in the node cache" <<<"$output"
    doc_says "$USER_GUIDE" 'staging it on n7' imagenet=lru3 <<<"$output"
    entries=$(entries_on n1)
    echo "$entries"
    grep -qx lru1 <<<"$entries"
    grep -qx lru3 <<<"$entries"
    ! grep -qx lru2 <<<"$entries" || false
    [ -z "$(on_node n1 ls -a "$(cache_of "$VCLUSTER_USER")" | grep -- '-lru2')" ]  # its record went too
    # Under the high watermark (90% of 48M = 43.2 MiB), as root measures it.
    used=$(on_node n1 bash -c "du -s --block-size=1 /local/dlcache/.cache | cut -f1")
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    assert_healthy
}

@test "status --node lists the node's cache entries with size, files, last use, user and jobs" {
    on_nodes n1 LRU1 lru1
    [ "$status" -eq 0 ]
    wait_epilogs  # JOBS is '-' once the job's epilog has released the entry
    run on_node n1 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n1
    [ "$status" -eq 0 ]
    echo "$output"
    grep -Eq "^TIER +DATASET +USER +SIZE +FILES +LAST_USE +JOBS$" <<<"$output"
    grep -Eq "^cache +lru1 +$VCLUSTER_USER +15\.0[0-9]*M +1 +20[0-9-]+T[0-9:]+ +-$" <<<"$output"
    run on_node n1 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n1 --json
    [ "$status" -eq 0 ]
    python3 - "$output" "$VCLUSTER_USER" <<'PY'
import json, sys
text = sys.argv[1]
doc = json.loads(text[text.index("{"):text.rindex("}") + 1])
cache = next(t for t in doc["tiers"] if t["tier"] == "cache")["cache_entries"]
lru1 = next(e for e in cache if e["dataset"] == "lru1" and e["users"] == [sys.argv[2]])
assert lru1["files"] == 1 and lru1["bytes"] >= 15 << 20 and lru1["last_use"] > 0 and lru1["jobs"] == [], lru1
PY
    # A user sees their own entries; root's records (last use, jobs) are root's.
    run as_user srun -w n1 -N1 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n1 --json
    [ "$status" -eq 0 ]
    python3 - "$output" "$VCLUSTER_USER" <<'PY'
import json, sys
text = sys.argv[1]
doc = json.loads(text[text.index("{"):text.rindex("}") + 1])  # srun's own lines around it
cache = next(t for t in doc["tiers"] if t["tier"] == "cache")["cache_entries"]
assert all(e["users"] == [sys.argv[2]] for e in cache), cache
lru1 = next(e for e in cache if e["dataset"] == "lru1")
assert lru1["files"] == 1 and lru1["bytes"] >= 15 << 20 and "last_use" not in lru1 and "jobs" not in lru1, lru1
PY
}

@test "gc removes a cache entry unused too long and spares one a running job uses" {
    on_nodes n1 LRU3 lru3
    [ "$status" -eq 0 ]
    on_nodes n1 LRU1 lru1
    [ "$status" -eq 0 ]
    run as_user sbatch --parsable -w n1 -o /dev/null --stage-data=lru1 --wrap 'sleep 120'
    [ "$status" -eq 0 ]
    job=$output
    for _ in $(seq 150); do [ "$(job_state "$job")" = RUNNING ] && break; sleep 0.2; done
    sleep 2  # its staging (a hit) is done
    last="$DLSTAGE_TEST_DIR/state/cache/n1/last-use"
    uid=$(id -u "$VCLUSTER_USER")
    touch -d "3 days ago" "$last/cache.$uid.lru1" "$last/cache.$uid.lru3"
    conf="$DLSTAGE_TEST_DIR/gc-cache.toml"
    sed '/^\[site\]/a cache_idle_days = 1' "$DLSTAGE_TEST_DIR/dlstage.toml" > "$conf"
    run on_node n1 "$DLSTAGE_BIN" -c "$conf" gc --tier cache --dry-run
    echo "$output"
    grep -q "would remove cache entry $VCLUSTER_USER/lru3 (tier 'cache', .*): unused for 3 d" <<<"$output"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru3"
    run on_node n1 "$DLSTAGE_BIN" -c "$conf" gc --tier cache -v
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "removed cache entry $VCLUSTER_USER/lru3 (tier 'cache', .*): unused for 3 d" <<<"$output"
    grep -q "keep cache entry $VCLUSTER_USER/lru1 (tier 'cache', .*): in use by a running job" <<<"$output"
    doc_says "$MAN1" '^removed cache entry alice/' alice="$VCLUSTER_USER" imagenet=lru3 ssd=cache <<<"$output"
    doc_says "$MAN1" '^keep cache entry' bob="$VCLUSTER_USER" coco=lru1 ssd=cache <<<"$output"
    ! on_node n1 test -e "$(cache_of "$VCLUSTER_USER")/lru3" || false
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    scancel "$job"
    wait_job_gone "$job" 60
    assert_healthy
}

@test "a tree copied to shm is walked while it moves: what is staged so far is said, the copy is exact" {
    # 20 ms per metadata operation: its 6 class directories are walked one
    # segment after another, each copied while the next is walked.
    remount_pfs 20
    run as_user env DLSTAGE_PROGRESS=0.2 srun -N3 --stage-data=walked bash -c "echo \"\$(hostname) \$('$DIGEST' \"\$DLSTAGE_WALKED\")\""
    remount_pfs
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx "dlstage: staging walked from $PFS/tree to shm on 3 nodes, walking it meanwhile" <<<"$output"
    grep -Eq "^dlstage: walked: [0-9.]+ ([KMGT]i)?B in [0-9]+ files staged, [0-9.]+ GB/s; still walking the source$" <<<"$output"
    grep -Eq "^dlstage: staged walked to shm on 3 nodes .*source bytes read [^ ]+ [^ ]+ \(1\.00x\)" <<<"$output"
    doc_says "$USER_GUIDE" 'still walking the source' imagenet=walked <<<"$output"
    doc_says "$MAN1" 'walking it meanwhile' tree=walked <<<"$output"
    each_node_says "$output" "$("$DIGEST" "$SRC/tree")"
    assert_healthy
}

@test "while rank 0 walks a slow source, the job output says how far the walk got" {
    forget_everywhere "$VCLUSTER_USER" cached
    # 20 ms per metadata operation: the walk of its 126 entries takes seconds.
    remount_pfs 20
    run as_user env DLSTAGE_PROGRESS=0.2 srun -N3 --stage-data=cached true
    remount_pfs
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^dlstage: cached: walking $PFS/tree: [0-9]+ entries found so far$" <<<"$output"
    doc_says "$USER_GUIDE" 'walking .* entries found so far' imagenet=cached <<<"$output"
}
