#!/usr/bin/env bats
# A shared tier (SCRATCH): one copy made by all nodes of a job together,
# reused by the user's later jobs after a cheap check, repaired after the
# site's purge, staged again when the source changed, one transfer for two
# jobs at once, and nobody else's to change.  SCRATCH here is a directory
# every virtual node sees; the purge is faked with `touch -d`.

load helpers

SCRATCH="$DLSTAGE_TEST_DIR/scratch/dlstage"
MUTABLE="$DLSTAGE_TEST_DIR/data/mutable"

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scancel -u "$OTHER_USER" 2>/dev/null || true
}

mine() { echo "$SCRATCH/$VCLUSTER_USER"; }

# forget NAME: the test user's copy of NAME and its record go (as a fresh start).
forget() {
    forget_kept_copy "$(mine)" "$1"
}

# on_all NAME SPEC: a 3-node srun staging SPEC; each node prints
# "NODE PATH DIGEST" of $DLSTAGE_<NAME>.
on_all() {
    run as_user srun -N3 --stage-data="$2" bash -c "p=DLSTAGE_$1; echo \"\$(hostname) \${!p} \$('$DIGEST' \"\${!p}\")\""
    echo "$output"
}

copy_value() { record_value "$(mine)/.ready-$1.toml" "$2"; }

@test "one copy made by all nodes together: each byte read once, every node sees it, the copy is the user's" {
    forget tree
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/tree $("$DIGEST" "$DATA/tree")"
    grep -q "staged tree to scratch (one shared copy) by 3 nodes" <<<"$output"
    doc_says "$USER_GUIDE" 'staged imagenet to scratch' imagenet=tree <<<"$output"
    doc_says "$MAN1" 'staged imagenet to scratch' imagenet=tree <<<"$output"
    grep -Eq "source bytes read [^ ]+ [^ ]+ \(1\.00x\)" <<<"$output"
    [ "$(stat -c '%U %a' "$(mine)")" = "$VCLUSTER_USER 700" ]
    [ "$(stat -c '%U %a' "$SCRATCH")" = "root 755" ]
    [ "$(copy_value tree 'r["uses"]')" = 1 ]
    [ ! -e "$(mine)/.lock-tree" ]
    assert_healthy
}

@test "a later job reuses the copy and reads nothing from the source" {
    forget mutable
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    want=$("$DIGEST" "$MUTABLE")
    # An atime older than a day: any read would move it (relatime).
    find "$MUTABLE" -type f -exec touch -a -d '3 days ago' {} +
    before=$(find "$MUTABLE" -type f -printf '%A@ %p\n' | sort)
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/mutable $want"
    grep -q "mutable: reused the copy in $(mine)/mutable" <<<"$output"
    doc_says "$USER_GUIDE" 'imagenet: reused the copy' imagenet=mutable <<<"$output"
    doc_says "$MAN1" 'imagenet: reused the copy' imagenet=mutable <<<"$output"
    ! grep -q "staging mutable" <<<"$output" || false
    diff <(echo "$before") <(find "$MUTABLE" -type f -printf "%A@ %p\n" | sort)
    [ "$(copy_value mutable 'r["uses"]')" = 2 ]
}

@test "files the purge took are fetched again; the copy is whole after" {
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    rm "$(mine)/mutable/d1/f2.bin" "$(mine)/mutable/d2/f1.bin" "$(mine)/mutable/link"
    truncate -s 10 "$(mine)/mutable/d2/f3.bin"
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    grep -q "mutable: repaired and reused the copy" <<<"$output"
    grep -q "found 3 missing, 1 changed and 0 added entries: 4 fetched again, 0 removed" <<<"$output"
    each_node_says "$output" "$(mine)/mutable $("$DIGEST" "$MUTABLE")"
}

@test "a source changed since the copy was made: only what changed is fetched again, never stale data" {
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    printf 'more' >> "$MUTABLE/d1/f4.bin"
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    grep -Eq "mutable: the source changed since the copy was made: 0 missing, 1 truncated or changed and 0 added of [0-9]+ entries: fetching them again" <<<"$output" || { echo "$output"; false; }
    doc_says "$USER_GUIDE" 'the source changed since the copy was made: 0 missing' imagenet=mutable <<<"$output"
    grep -q "mutable: repaired and reused the copy .*found 0 missing, 1 changed and 0 added entries: 1 fetched again" <<<"$output"
    each_node_says "$output" "$(mine)/mutable $("$DIGEST" "$MUTABLE")"
    ls -a "$(mine)" | { ! grep -q '^\.retired-mutable\|^\.partial-mutable'; }
}

@test "changes a stat of the copy cannot see (a chmod, a symlink's target, a same-second rewrite) and new types: never stale" {
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    chmod 0444 "$MUTABLE/d2/f1.bin"
    ln -sfn d1/f6.bin "$MUTABLE/link"
    # Same size, new bytes, the same mtime second (only its nanoseconds differ).
    python3 - "$MUTABLE/d2/f3.bin" <<'PY'
import os, sys
path = sys.argv[1]
was = os.stat(path).st_mtime_ns
with open(path, "r+b") as f:
    f.write(os.urandom(os.path.getsize(path)))
second, ns = divmod(was, 10**9)
os.utime(path, ns=(was, second * 10**9 + (ns + 1) % 10**9))
PY
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    grep -Eq "mutable: the source changed since the copy was made: 0 missing, 3 truncated or changed and 0 added of [0-9]+ entries" <<<"$output" || { echo "$output"; false; }
    each_node_says "$output" "$(mine)/mutable $("$DIGEST" "$MUTABLE")"
    # A file that became a directory: no repair makes that, the copy is made again.
    rm "$MUTABLE/d2/f5.bin"
    mkdir "$MUTABLE/d2/f5.bin"
    echo inside >"$MUTABLE/d2/f5.bin/x"
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    grep -q "mutable: the source changed since the copy was made (1 entry of another type or directory mode): staging it again" <<<"$output" || { echo "$output"; false; }
    each_node_says "$output" "$(mine)/mutable $("$DIGEST" "$MUTABLE")"
    # The source as it was, for the tests after this one.
    rm -r "$MUTABLE/d2/f5.bin"
    head -c 15000 /dev/urandom >"$MUTABLE/d2/f5.bin"
    chmod 0644 "$MUTABLE/d2/f1.bin"
    ln -sfn d1/f2.bin "$MUTABLE/link"
}

@test "a job reading the copy in place keeps one version while a change is made beside it; the old copy goes after" {
    forget mutable
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    old=$("$DIGEST" "$MUTABLE")
    work=$(user_workdir)
    go="$work/go"
    rm -f "$go"
    # The reader: a digest of its copy, then (once told) every byte again.
    script=$(reader_script MUTABLE "$go")
    reader=$(as_user sbatch --parsable -N1 --stage-data=mutable:scratch -o "$work/r-%j.out" "$script")
    for _ in $(seq 150); do grep -q '^first' "$work/r-$reader.out" 2>/dev/null && break; sleep 0.2; done
    grep -q "^first $(mine)/mutable $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    [ "$(head -n1 "$(mine)/.readers-mutable/$reader")" = mutable ]
    # The source changes while it runs: a file appended to, one added.
    printf 'again' >>"$MUTABLE/d1/f4.bin"
    head -c 5000 /dev/urandom >"$MUTABLE/d1/new.bin"
    chmod 0644 "$MUTABLE/d1/new.bin"
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    beside="$(mine)/$(grep -oE '\.version-mutable-[0-9-]+' <<<"$output" | head -n1)"
    [ "$beside" != "$(mine)/" ]
    grep -q "mutable: $(mine)/mutable is read in place by a running job: the new copy is made beside it, in $beside$" <<<"$output" ||
        { echo "$output"; false; }
    doc_says "$USER_GUIDE" 'is read in place by a running job: the new copy is made beside it' imagenet=mutable <<<"$output"
    grep -q "found 1 missing, 1 changed and 0 added entries: 2 fetched again" <<<"$output" || { echo "$output"; false; }
    each_node_says "$output" "$beside $("$DIGEST" "$MUTABLE")"
    [ "$(copy_value mutable 'r["path"]')" = "$beside" ]
    # The reader still sees the copy it began with, whole.
    touch "$go"
    wait_job_gone "$reader" 60
    [ "$(job_state "$reader")" = COMPLETED ]
    grep -q "^second $(mine)/mutable $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    # A later step of the job too: it gets the copy the job was given.
    grep -q "^step $(mine)/mutable $old$" "$work/r-$reader.out" || { cat "$work/r-$reader.out"; false; }
    # Its reader gone, the next job's staging removes the old copy.
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$beside $("$DIGEST" "$MUTABLE")"
    [ ! -e "$(mine)/mutable" ]
    [ ! -e "$(mine)/.readers-mutable/$reader" ]
    # The source as it was, and no copy, for the tests after this one.
    rm "$MUTABLE/d1/new.bin"
    forget mutable
    assert_healthy
}

@test "a copy near its purge date: a warning at submit with the date, and the date in status" {
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    find "$(mine)/mutable" -type f -exec touch -a -d '80 days ago' {} +
    # The next use sees the old access times and records them.
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    date=$(date -d "@$(( $(copy_value mutable 'r["oldest"]') + 90 * 86400 ))" +%F)
    run as_user sbatch --parsable -N1 --stage-data=mutable:scratch --wrap true
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "dlstage: warning: the copy of 'mutable' in tier 'scratch' will be purged from $date" <<<"$output"
    doc_says "$USER_GUIDE" "warning: the copy of 'imagenet'" imagenet=mutable <<<"$output"
    doc_says "$MAN5" "warning: the copy of 'imagenet'" imagenet=mutable <<<"$output"
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --dataset mutable
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^mutable +scratch +$VCLUSTER_USER .* $date +$(mine)/mutable$" <<<"$output"
    # The columns the user guide and dlstage(1) show.
    for doc in "$USER_GUIDE" "$MAN1"; do
        shown=$(doc_transcript "$doc" 'dlstage status --dataset imagenet')
        [ "$(head -n1 <<<"$shown" | tr -s ' ')" = "$(head -n1 <<<"$output" | tr -s ' ')" ] || { echo "$doc shows: $shown"; false; }
    done
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --dataset mutable --json
    [ "$(python3 -c 'import json,sys; c=json.load(sys.stdin)["copies"][0]; print(c["path"], c["uses"] >= 2)' <<<"$output")" = \
        "$(mine)/mutable True" ]
}

@test "two jobs staging one dataset at once make one copy: the second waits and reuses it" {
    forget big
    run as_user sbatch --parsable -N3 -o first.txt --export=ALL,DLSTAGE_RATE_LIMIT=3M \
        --stage-data=big:scratch --wrap 'echo "FIRST $("'"$DIGEST"'" "$DLSTAGE_BIG")"'
    [ "$status" -eq 0 ]
    first=$output
    wait_for_file "$(mine)/.lock-big" 60
    run as_user sbatch --parsable -N2 -o second.txt --stage-data=big:scratch \
        --wrap 'echo "SECOND $("'"$DIGEST"'" "$DLSTAGE_BIG")"'
    [ "$status" -eq 0 ]
    second=$output
    wait_job_gone "$first" 120
    wait_job_gone "$second" 120
    want=$("$DIGEST" "$DATA/file64.bin")
    cat "$(user_workdir)/first.txt" "$(user_workdir)/second.txt"
    grep -q "FIRST $want" "$(user_workdir)/first.txt"
    grep -q "SECOND $want" "$(user_workdir)/second.txt"
    grep -q "staged big to scratch" "$(user_workdir)/first.txt"
    grep -q "big: waiting: job $first on n[0-9] (pid [0-9]*) is staging it" "$(user_workdir)/second.txt"
    doc_says "$MAN1" 'imagenet: waiting: job' imagenet=big <"$(user_workdir)/second.txt"
    doc_says "$USER_GUIDE" 'imagenet: waiting: job' imagenet=big <"$(user_workdir)/second.txt"
    grep -q "big: reused the copy" "$(user_workdir)/second.txt"
    ! grep -q "staged big" "$(user_workdir)/second.txt" || false
    [ "$(copy_value big 'r["uses"]')" = 2 ]
}

@test "a lock left by a job that is gone is broken, and the job stages" {
    rm -f "$(mine)/.lock-mutable"
    install -d -o "$VCLUSTER_USER" -m 0700 "$(mine)"
    printf 'job 999999\nhost n2\npid 1\nsince 1\n' > "$(mine)/.lock-mutable"
    chown "$VCLUSTER_USER" "$(mine)/.lock-mutable"
    on_all MUTABLE mutable:scratch
    [ "$status" -eq 0 ]
    grep -q "broke the lock $(mine)/.lock-mutable: its holder's job 999999 has ended" <<<"$output"
    [ ! -e "$(mine)/.lock-mutable" ]
}

@test "another user can neither read nor change the copy; their job makes their own" {
    on_all TREE tree:scratch
    [ "$status" -eq 0 ]
    run as_other ls "$(mine)/tree"
    [ "$status" -ne 0 ]
    run as_other touch "$(mine)/tree/planted"
    [ "$status" -ne 0 ]
    run as_other rm -rf "$(mine)/tree"
    [ "$status" -ne 0 ]
    [ -d "$(mine)/tree" ]
    run as_other srun -N2 --stage-data=tree:scratch bash -c 'echo "$(hostname) $DLSTAGE_TREE"'
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "n1 $SCRATCH/$OTHER_USER/tree" <<<"$output"
    grep -q "staged tree to scratch" <<<"$output"
    [ "$(stat -c '%U %a' "$SCRATCH/$OTHER_USER")" = "$OTHER_USER 700" ]
    on_all TREE tree:scratch
    each_node_says "$output" "$(mine)/tree $("$DIGEST" "$DATA/tree")"
}

@test "a first copy too large for its kept shared tier is refused part-way and leaves nothing behind" {
    # tree (26 MiB) is walked while it is copied, so the tier's 4 MiB is
    # found too small only once some of it is written.
    run as_user srun -N2 --stage-data=tree:tightkept true
    [ "$status" -ne 0 ]
    echo "$output"
    grep -q "dataset 'tree' needs .* but tier 'tightkept' allows at most 4.0 MiB" <<<"$output"
    # The node that did not walk says rank 0's reason too, in case rank 0's line is lost.
    grep -q "failed on n2: the node walking the source stopped: dataset 'tree' needs .* but tier 'tightkept'" <<<"$output"
    grep -q "staging tree from .* to tightkept (one shared copy) by 2 nodes, walking it meanwhile" <<<"$output"
    ls -a "$DLSTAGE_TEST_DIR/scratch/tightkept/$VCLUSTER_USER" |
        { ! grep -q '^tree$\|^\.partial-tree$\|^\.resume-tree\|^\.walked-tree$'; }
    assert_healthy
}

@test "a shared tier with cleanup job-end: one copy for the job, removed once when it ends" {
    on_all TREE tree:jobscratch
    [ "$status" -eq 0 ]
    job=$(squeue -h -t all -u "$VCLUSTER_USER" -o %i | sort -n | tail -1)
    each_node_says "$output" "$DLSTAGE_TEST_DIR/scratch/jobs/$job/tree $("$DIGEST" "$DATA/tree")"
    wait_job_gone "$job"
    assert_epilogs_cleaned "$job"
    removed=0
    for node in n1 n2 n3; do
        removed=$((removed + $(epilog_value "$job" "$node" 'r["removed"]')))
    done
    [ "$removed" -gt 0 ]
    [ -z "$(ls -A "$DLSTAGE_TEST_DIR/scratch/jobs")" ]
}

@test "extracted tar shards in a shared tier: one unpacked copy, reused" {
    forget shards-x
    on_all SHARDS_X shards-x:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/shards-x $("$DIGEST" "$DATA/tree")"
    # Three shards on three nodes: each node unpacked one.
    grep -Eq "extracted 3 archives in [0-9.]+ s on 3 nodes" <<<"$output"
    doc_says "$USER_GUIDE" 'imagenet: extracted 64 archives' imagenet=shards-x <<<"$output"
    on_all SHARDS_X shards-x:scratch
    [ "$status" -eq 0 ]
    grep -q "shards-x: reused the copy" <<<"$output"
}

@test "shards that overlap, unpacked by every node: unpacked again in order, the later shard wins" {
    run as_user srun -N3 --stage-data=overlap-x:jobscratch bash -c \
        'cat "$DLSTAGE_OVERLAP_X/d/a.txt" "$DLSTAGE_OVERLAP_X/d/b.txt"; stat -c "mtime %Y" "$DLSTAGE_OVERLAP_X/d/a.txt"'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^second$' <<<"$output")" -eq 3 ]
    [ "$(grep -c '^only in 0$' <<<"$output")" -eq 3 ]
    [ "$(grep -c '^mtime 1600000000$' <<<"$output")" -eq 3 ]
    ! grep -q '^first$' <<<"$output"
    grep -Eq "overlap-x: extracted 2 archives in [0-9.]+ s on one node" <<<"$output"
}

@test "a shard that expands past its node's share of the budget: unpacked by one node with the whole, not refused" {
    run as_user srun -N2 --stage-data=lopsided-x:tightscratch bash -c \
        'stat -c "%n %s" "$DLSTAGE_LOPSIDED_X/z/zeros.bin" "$DLSTAGE_LOPSIDED_X/r/random.bin"'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '/z/zeros.bin 3145728$' <<<"$output")" -eq 2 ]
    [ "$(grep -c '/r/random.bin 262144$' <<<"$output")" -eq 2 ]
    grep -Eq "lopsided-x: extracted 2 archives in [0-9.]+ s on one node" <<<"$output"
}

@test "a bad shard another node unpacks: unpacked again in order by one node, which names it; nothing left, no drain" {
    forget badshard-x
    run as_user srun -N3 --stage-data=badshard-x:scratch true
    echo "$output"
    [ "$status" -ne 0 ]
    # Shard i is node i+1's: the second shard, n2's, fails there; n1 unpacks
    # all three again in order and fails on it as tar -x would.
    grep -q "dlstage: staging badshard-x to scratch failed on n1: unsafe entry '../escaped.txt' in $DLSTAGE_TEST_DIR/data/badshard/shard-1.tar: its path leaves the destination" <<<"$output"
    [ "$(grep -c 'failed on' <<<"$output")" -eq 1 ]
    [ ! -e "$(mine)/escaped.txt" ]
    # Neither what the nodes unpacked, nor the archives, nor a copy, nor the lock.
    [ -z "$(ls -A "$(mine)" | grep -E 'badshard-x')" ]
    assert_healthy
}
