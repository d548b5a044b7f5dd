#!/usr/bin/env bats
# Never stale: a kept copy, a node cache entry or a shared tier's
# copy, is reused only when it matches the source file by file.  A manifest
# is current as far as directories go, so a file rewritten in place after
# the scan must still make the next job stage it again (and the job after
# that reuse the new copy, the manifest still stale); what a job wrote
# into a shared copy (files changed, files and directories added) must not
# reach the next job.  A site may promise a source immutable, and then gets
# what it asked for; without a manifest the walk finds the change as before.
# Five catalog trees are added to the cluster's configuration for this file
# only, in the manner of 47-manifests.bats.

load helpers

CONFIG="$DLSTAGE_TEST_DIR/dlstage.toml"
SRCS="$DLSTAGE_TEST_DIR/work/57-never-stale-data"
SCRATCH="$DLSTAGE_TEST_DIR/scratch/dlstage"
CACHE="/local/dlcache/.cache"

# make_tree DIR DIRS FILES MODE: FILES small random files spread over DIRS
# directories d0, d1, ... of DIR, each file of mode MODE.
make_tree() {
    python3 - "$@" <<'PY'
import os, random, sys
root, dirs, files, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 8)
rng = random.Random(57)
for i in range(files):
    d = os.path.join(root, f"d{i % dirs}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"f{i:03d}.bin")
    with open(path, "wb") as f:
        f.write(rng.randbytes(rng.randrange(100, 5000)))
    os.chmod(path, mode)
PY
}

setup_file() {
    cp -p "$CONFIG" "$CONFIG.before-57"
    rm -rf "$SRCS"
    mkdir -p "$SRCS"
    # The node cache trees' files are read-only, as a cached copy's are: a
    # copy's digest is then the source's.  The scratch trees' are the
    # user's to write in their copy (ns-added's job writes into it).
    for ds in ns-cache ns-immutable ns-walk ns-shm; do make_tree "$SRCS/$ds" 3 24 0444; done
    : >"$SRCS/ns-shm/d0/empty"  # no read opens it (ns-shm's test of an empty file)
    chmod 0444 "$SRCS/ns-shm/d0/empty"
    make_tree "$SRCS/ns-scratch" 3 24 0644
    make_tree "$SRCS/ns-added" 3 30 0644
    chmod -R a+rX "$SRCS"
    chmod 0755 "$SRCS"
    cat >>"$CONFIG" <<TOML

[datasets.ns-cache]
source = "$SRCS/ns-cache"
tiers  = ["cache"]

[datasets.ns-scratch]
source = "$SRCS/ns-scratch"
tiers  = ["scratch"]

[datasets.ns-added]
source = "$SRCS/ns-added"
tiers  = ["scratch"]

# The site's promise: never rewritten in place.
[datasets.ns-immutable]
source    = "$SRCS/ns-immutable"
tiers     = ["cache"]
immutable = true

[datasets.ns-walk]
source = "$SRCS/ns-walk"
tiers  = ["cache"]

[datasets.ns-shm]
source = "$SRCS/ns-shm"
tiers  = ["shm"]
TOML
    # ns-added and ns-walk have no manifest: their jobs walk the source.
    for ds in ns-cache ns-scratch ns-immutable ns-shm; do
        "$DLSTAGE_BIN" --config "$CONFIG" catalog scan "$ds"
    done
}

teardown_file() {
    mv "$CONFIG.before-57" "$CONFIG"
    rm -f "$STATE"/manifests/ns-{cache,scratch,immutable,shm}.manifest
    for ds in ns-scratch ns-added; do forget_kept_copy "$SCRATCH/$VCLUSTER_USER" "$ds"; done
    for ds in ns-cache ns-immutable ns-walk; do forget_kept_copy "$CACHE/$VCLUSTER_USER" "$ds" n1 n2 n3; done
    rm -rf "$SRCS"
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
}

mine() { echo "$SCRATCH/$VCLUSTER_USER"; }

# stage_on NODES NAME SPEC: an srun on NODES (n1,n2) staging SPEC; each
# node prints "NODE PATH DIGEST FILES" of $DLSTAGE_<NAME>.
stage_on() {
    run as_user srun -w "$1" -N "$(tr , '\n' <<<"$1" | wc -l)" --stage-data="$3" bash -c \
        "p=DLSTAGE_$2; echo \"\$(hostname) \${!p} \$('$DIGEST' \"\${!p}\") \$(find \"\${!p}\" -type f | wc -l)\""
    echo "$output"
}

# nodes_say TEXT REGEX NODE...: TEXT has the whole line "NODE REGEX" for each NODE.
nodes_say() {
    local text=$1 regex=$2 node
    shift 2
    for node in "$@"; do
        grep -Eqx "$node $regex" <<<"$text" || { echo "no line '$node $regex' in: $text"; return 1; }
    done
}

# grow FILE: FILE rewritten in place as root (4 bytes appended): its
# directory does not change, so the manifest's directory check holds.
# Prints "OLD NEW", its sizes.
grow() {
    local old
    old=$(stat -c %s "$1")
    printf more >>"$1"
    echo "$old $(stat -c %s "$1")"
}

# The job output line of a manifest NAME that a file rewritten in place
# made stale: FILE's size went from OLD to NEW.
in_place_line() {
    echo "dlstage: manifest of $1 is older than its source (1 files changed in place since the scan, e.g. $2: size $3 -> $4): planning from a walk; run 'dlstage catalog scan $1'"
}

# staged_then_grown VAR SPEC FILE: a first staging of SPEC on n1,n2, from
# its manifest, then FILE grown in place; sets $old and $new (FILE's sizes)
# and $want (the source's digest now).
staged_then_grown() {
    local name=${2%%:*}
    stage_on n1,n2 "$1" "$2"
    [ "$status" -eq 0 ] || return 1
    grep -q "dlstage: $name: planned from its manifest (no walk of the source)" <<<"$output" || return 1
    read -r old new < <(grow "$3")
    want=$("$DIGEST" "$SRCS/$name")
}

@test "node tier + manifest: a file rewritten in place after the scan is found as it is read, and staged from a walk" {
    f="$SRCS/ns-shm/d1/f007.bin"
    staged_then_grown NS_SHM ns-shm "$f"
    stage_on n1,n2 NS_SHM ns-shm
    [ "$status" -eq 0 ]
    found_while_reading ns-shm "$f"
    # The copy the reads made is discarded and the walk's plan staged.
    [ "$(grep -c "dlstage: staging ns-shm (" <<<"$output")" -eq 2 ]
    grep -q "staged ns-shm to shm on 2 nodes" <<<"$output"
    nodes_say "$output" "/dev/shm/dlstage/[0-9]+/ns-shm $want 25" n1 n2
    assert_healthy
}

@test "node tier + manifest: an empty file written to after the scan is found too, though no read opens it" {
    rescan ns-shm
    f="$SRCS/ns-shm/d0/empty"
    read -r old new < <(grow "$f")
    want=$("$DIGEST" "$SRCS/ns-shm")
    stage_on n1,n2 NS_SHM ns-shm
    [ "$status" -eq 0 ]
    found_while_reading ns-shm "$f"
    nodes_say "$output" "/dev/shm/dlstage/[0-9]+/ns-shm $want 25" n1 n2
    rescan ns-shm
    assert_healthy
}

@test "split + manifest: a file rewritten in place after the scan is found by the node that reads it; all stage from a walk" {
    local total
    rescan ns-shm
    f="$SRCS/ns-shm/d1/f007.bin"
    read -r old new < <(grow "$f")
    stage_on n1,n2 NS_SHM ns-shm:shm:split
    [ "$status" -eq 0 ]
    # One node read the file and found it changed; rank 0 says so for all,
    # and every node stages its share of the walk's plan.
    found_while_reading ns-shm "$f"
    [ "$(grep -c "dlstage: staging ns-shm (" <<<"$output")" -eq 2 ]
    grep -q "staged ns-shm to shm split over 2 nodes" <<<"$output"
    total=$(grep -E '^n[12] /dev/shm/dlstage/[0-9]+/ns-shm ' <<<"$output" | awk '{ s += $4 } END { print s }')
    [ "$total" -eq 25 ] || { echo "files over the nodes: $total"; false; }
    rescan ns-shm
    assert_healthy
}

@test "node cache + manifest: a file rewritten in place after the scan is staged again, not a cache hit" {
    forget_kept_copy "$CACHE/$VCLUSTER_USER" ns-cache n1 n2
    f="$SRCS/ns-cache/d1/f004.bin"
    staged_then_grown NS_CACHE ns-cache "$f"
    stage_on n1,n2 NS_CACHE ns-cache
    [ "$status" -eq 0 ]
    [[ "$output" == *"$(in_place_line ns-cache "$f" "$old" "$new")"* ]]
    doc_says "$ADMIN_GUIDE" 'files changed in place' imagenet=ns-cache <<<"$output"
    ! grep -q "cache hit" <<<"$output" || false
    for n in n1 n2; do grep -q "ns-cache: staging it on $n: the source changed since it was cached" <<<"$output"; done
    # Every node has the new bytes.
    nodes_say "$output" "$CACHE/$VCLUSTER_USER/ns-cache $want 24" n1 n2
    for n in n1 n2; do [ "$(on_node "$n" tail -c 4 "$CACHE/$VCLUSTER_USER/ns-cache/d1/f004.bin")" = more ]; done
    assert_healthy
}

# rescan NAME: NAME's manifest made current again, as root.
rescan() {
    "$DLSTAGE_BIN" --config "$CONFIG" catalog scan "$1" >/dev/null
}

# found_while_reading NAME FILE: the job output ($output) says the manifest
# of NAME was stale for FILE (grown from $old to $new) after its staging
# began: the reads found it, no stat of every file before.
found_while_reading() {
    local stale first found
    stale=$(in_place_line "$1" "$2" "$old" "$new")
    first=$(grep -n "dlstage: staging $1 (" <<<"$output" | head -n1 | cut -d: -f1)
    found=$(grep -nF "$stale" <<<"$output" | head -n1 | cut -d: -f1)
    [ -n "$first" ] && [ -n "$found" ] && [ "$first" -lt "$found" ]
}

# nothing_kept_then_found VAR SPEC FILE KEPT FILES [NODE...]: SPEC's
# dataset, its manifest made current and nothing of it kept in KEPT (on
# each NODE given), staged on n1,n2 after FILE grew in place: the reads
# find FILE changed, and every node holds the source's bytes ($want, FILES
# files) in KEPT.
nothing_kept_then_found() {
    local name=${2%%:*} var=$1 spec=$2 file=$3 kept=$4 files=$5
    shift 5
    rescan "$name"  # what the tests before grew is in it
    forget_kept_copy "$kept" "$name" "$@"
    read -r old new < <(grow "$file")
    want=$("$DIGEST" "$SRCS/$name")
    stage_on n1,n2 "$var" "$spec"
    [ "$status" -eq 0 ] || return 1
    found_while_reading "$name" "$file" || return 1
    nodes_say "$output" "$kept/$name $want $files" n1 n2
}

@test "node cache + manifest, nothing cached yet: the reads find a file rewritten since the scan" {
    nothing_kept_then_found NS_CACHE ns-cache "$SRCS/ns-cache/d2/f014.bin" "$CACHE/$VCLUSTER_USER" 24 n1 n2
    # The entry is the walk's: the next job hits, the manifest still stale.
    stage_on n1,n2 NS_CACHE ns-cache
    [ "$status" -eq 0 ]
    grep -q "ns-cache: cache hit on 2 of 2 nodes" <<<"$output"
    rescan ns-cache
    assert_healthy
}

@test "shared tier + manifest, no copy yet: the reads find a file rewritten since the scan" {
    nothing_kept_then_found NS_SCRATCH ns-scratch:scratch "$SRCS/ns-scratch/d0/f009.bin" "$(mine)" 24
    rescan ns-scratch  # for the next test, a manifest current but for what it grows
    assert_healthy
}

@test "shared tier + manifest: a file rewritten in place after the scan is fetched again, alone" {
    forget_kept_copy "$(mine)" ns-scratch
    f="$SRCS/ns-scratch/d2/f011.bin"
    staged_then_grown NS_SCRATCH ns-scratch:scratch "$f"
    stage_on n1,n2 NS_SCRATCH ns-scratch:scratch
    [ "$status" -eq 0 ]
    stale=$(in_place_line ns-scratch "$f" "$old" "$new")
    [[ "$output" == *"$stale"* ]]
    # The manifest is found stale first, then the walk's plan says what of the copy changed.
    first=$(grep -nF "$stale" <<<"$output" | head -n1 | cut -d: -f1)
    then=$(grep -nF "ns-scratch: the source changed since the copy was made: 0 missing, 1 truncated or changed" <<<"$output" | head -n1 | cut -d: -f1)
    [ -n "$then" ] && [ "$first" -lt "$then" ]
    grep -q "ns-scratch: repaired and reused the copy .*1 fetched again" <<<"$output"
    nodes_say "$output" "$(mine)/ns-scratch $want 24" n1 n2
    [ "$(tail -c 4 "$(mine)/ns-scratch/d2/f011.bin")" = more ]
    assert_healthy
}

@test "after the restage, the next job reuses the new copy: the manifest still stale does not fail it" {
    # Found writing these tests: the restaging job (as in the two tests
    # above) makes its copy from a walk; the next one planned from the
    # manifest, still stale, found that copy not of its plan, staged from
    # the manifest's plan and failed ("changed since it was planned ...:
    # run again"), and so did every job after it until a scan.
    for ds in ns-cache ns-scratch; do "$DLSTAGE_BIN" --config "$CONFIG" catalog scan "$ds"; done
    forget_kept_copy "$CACHE/$VCLUSTER_USER" ns-cache n1 n2
    forget_kept_copy "$(mine)" ns-scratch
    for spec in ns-cache ns-scratch:scratch; do
        name=${spec%%:*}
        var=$(tr a-z- A-Z_ <<<"$name")
        stage_on n1,n2 "$var" "$spec"
        [ "$status" -eq 0 ]
        grow "$SRCS/$name/d0/f003.bin" >/dev/null
        stage_on n1,n2 "$var" "$spec"
        [ "$status" -eq 0 ]
        grep -q "manifest of $name is older than its source (1 files changed in place" <<<"$output"
        want=$("$DIGEST" "$SRCS/$name")
        stage_on n1,n2 "$var" "$spec"
        [ "$status" -eq 0 ]
        ! grep -q "changed since it was planned" <<<"$output" || false
        case $name in
        ns-cache) grep -q "ns-cache: cache hit on 2 of 2 nodes" <<<"$output"
                  nodes_say "$output" "$CACHE/$VCLUSTER_USER/ns-cache $want 24" n1 n2 ;;
        *)        grep -q "ns-scratch: reused the copy in $(mine)/ns-scratch" <<<"$output"
                  nodes_say "$output" "$(mine)/ns-scratch $want 24" n1 n2 ;;
        esac
    done
}

# change_copy SCRIPT: a job of the user reuses ns-added's copy on scratch,
# then runs SCRIPT (bash) in it, as the user, with d its path.
change_copy() {
    run as_user srun -N1 -w n1 --stage-data=ns-added:scratch bash -c "set -e; d=\$DLSTAGE_NS_ADDED; $1"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "ns-added: reused the copy in $(mine)/ns-added" <<<"$output"
}

@test "a copy a job wrote into and added to: the changed files fetched again, what was added removed" {
    forget_kept_copy "$(mine)" ns-added
    want=$("$DIGEST" "$SRCS/ns-added")
    stage_on n1,n2,n3 NS_ADDED ns-added:scratch
    [ "$status" -eq 0 ]
    each_node_says "$output" "$(mine)/ns-added $want 30"
    # 20 files written to (d0's 10 and d1's 10), a file added in d2, and a
    # directory with a file in it.
    change_copy 'for f in $(find "$d/d0" "$d/d1" -type f | sort); do printf x >>"$f"; done
        echo planted >"$d/d2/planted.bin"
        mkdir "$d/extra"; echo planted >"$d/extra/inside.bin"'
    [ "$(find "$(mine)/ns-added" -type f | wc -l)" -eq 32 ]
    stage_on n1,n2,n3 NS_ADDED ns-added:scratch
    [ "$status" -eq 0 ]
    grep -q "dlstage: ns-added: repaired and reused the copy in $(mine)/ns-added " <<<"$output"
    grep -q "; found 0 missing, 20 changed and 2 added entries: 20 fetched again, 2 removed" <<<"$output"
    doc_says "$MAN1" 'repaired and reused the copy' imagenet=ns-added <<<"$output"
    doc_says "$USER_GUIDE" 'repaired and reused the copy' imagenet=ns-added <<<"$output"
    ! grep -q "staging ns-added\|staging it again" <<<"$output" || false
    each_node_says "$output" "$(mine)/ns-added $want 30"
    [ ! -e "$(mine)/ns-added/extra" ] && [ ! -e "$(mine)/ns-added/d2/planted.bin" ]
    assert_healthy
}

@test "a copy a job deleted a file of and renamed another in: both fetched again, the new name removed" {
    forget_kept_copy "$(mine)" ns-added
    want=$("$DIGEST" "$SRCS/ns-added")
    stage_on n1,n2,n3 NS_ADDED ns-added:scratch
    [ "$status" -eq 0 ]
    change_copy 'rm "$d/d0/f000.bin"; mv "$d/d1/f001.bin" "$d/d1/renamed.bin"'
    stage_on n1,n2,n3 NS_ADDED ns-added:scratch
    [ "$status" -eq 0 ]
    grep -q "dlstage: ns-added: repaired and reused the copy in $(mine)/ns-added " <<<"$output"
    grep -q "; found 2 missing, 0 changed and 1 added entries: 2 fetched again, 1 removed" <<<"$output"
    each_node_says "$output" "$(mine)/ns-added $want 30"
    [ ! -e "$(mine)/ns-added/d1/renamed.bin" ]
}

@test "immutable = true, the site's promise: a cache hit on a manifest's plan checks no source file" {
    forget_kept_copy "$CACHE/$VCLUSTER_USER" ns-immutable n1 n2
    want=$("$DIGEST" "$SRCS/ns-immutable")
    stage_on n1,n2 NS_IMMUTABLE ns-immutable
    [ "$status" -eq 0 ]
    grep -q "dlstage: ns-immutable: planned from its manifest (no walk of the source)" <<<"$output"
    # The site broke its promise: the job trusts it, and gets the copy as cached.
    grow "$SRCS/ns-immutable/d0/f000.bin" >/dev/null
    stage_on n1,n2 NS_IMMUTABLE ns-immutable
    [ "$status" -eq 0 ]
    grep -q "ns-immutable: cache hit on 2 of 2 nodes" <<<"$output"
    ! grep -q "older than its source" <<<"$output" || false
    nodes_say "$output" "$CACHE/$VCLUSTER_USER/ns-immutable $want 24" n1 n2
}

@test "without a manifest nothing changes: the walk finds a file rewritten in place in the node cache's source" {
    forget_kept_copy "$CACHE/$VCLUSTER_USER" ns-walk n1 n2
    stage_on n1,n2 NS_WALK ns-walk
    [ "$status" -eq 0 ]
    ! grep -q "planned from its manifest" <<<"$output" || false
    grow "$SRCS/ns-walk/d2/f005.bin" >/dev/null
    want=$("$DIGEST" "$SRCS/ns-walk")
    stage_on n1,n2 NS_WALK ns-walk
    [ "$status" -eq 0 ]
    for n in n1 n2; do grep -q "ns-walk: staging it on $n: the source changed since it was cached" <<<"$output"; done
    ! grep -q "cache hit\|older than its source" <<<"$output" || false
    nodes_say "$output" "$CACHE/$VCLUSTER_USER/ns-walk $want 24" n1 n2
}
