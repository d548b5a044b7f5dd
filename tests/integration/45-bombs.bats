#!/usr/bin/env bats
# Archives a few hundred KiB in size that expand far past shm's max_bytes
# (80M): extraction stops at the tier's limit with one line naming the
# dataset, the limit and what to do; nothing is left on any node, and no
# node is drained.  n3's /dev/shm is smaller than 80M, so there its free
# space is the tighter limit.

load helpers

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
}

# assert_refused_at_the_limit DATASET ARCHIVE: every node that reported a
# failure in $output gave the limit's line, n1 and n2 max_bytes, n3 its
# free space; at least one did.
assert_refused_at_the_limit() {
    local failed line
    failed=$(grep "^dlstage: staging $1 to shm failed on " <<<"$output") || { echo "no failure line"; return 1; }
    while IFS= read -r line; do
        local limit="max_bytes = 80.0 MiB"
        [[ "$line" == *" failed on n3: "* ]] && limit="its free space on this node"
        [[ "$line" == *": dataset '$1' expands to more than "*" MiB in tier 'shm' ($limit) while extracting $2; check the archive"* ]] ||
            { echo "unexpected: $line"; return 1; }
    done <<<"$failed"
}

# assert_bomb_stopped DATASET ARCHIVE: the archive is small; staging it to
# 3 nodes fails with the limit's line, leaves nothing, and drains no node.
assert_bomb_stopped() {
    [ "$(stat -c %s "$2")" -lt $((1024 * 1024)) ]
    run as_user srun -N3 --stage-data="$1" true
    echo "$output"
    [ "$status" -ne 0 ]
    assert_refused_at_the_limit "$1" "$2"
    assert_no_leftovers
    assert_healthy
}

@test "a tar.gz bomb stops at shm's max_bytes on every node: one line, no leftovers, no drain" {
    assert_bomb_stopped bomb-tar "$DLSTAGE_TEST_DIR/data/bomb.tar.gz"
}

@test "the tar.gz bomb's line names max_bytes and asks for a larger one (n1, n2)" {
    run as_user srun -N2 -w n1,n2 --stage-data=bomb-tar true
    echo "$output"
    [ "$status" -ne 0 ]
    grep -q "^dlstage: staging bomb-tar to shm failed on n[12]: dataset 'bomb-tar' expands to more than 80.0 MiB in tier 'shm' (max_bytes = 80.0 MiB) while extracting $DLSTAGE_TEST_DIR/data/bomb.tar.gz; check the archive, or ask your admins for a larger max_bytes$" <<<"$output"
    doc_says "$ARCHITECTURE_DOC" "staging bomb to shm failed" bomb=bomb-tar <<<"$output"
    assert_no_leftovers
    assert_healthy
}

@test "a squashfs bomb is refused before unsquashfs writes: one line, no leftovers, no drain" {
    assert_bomb_stopped bomb-sqfs "$DLSTAGE_TEST_DIR/data/bomb.sqfs"
}
