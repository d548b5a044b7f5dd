#!/usr/bin/env bats
# The harness itself: a test that fails midway leaves nothing running.
# testing.md's cluster by hand (56-doc-transcripts), run against a copy of
# the doc whose srun line fails once the cluster is up: the test fails, and
# its teardown takes that cluster down (tests/check-leftovers finds none of
# its daemons).  Before the teardown existed, its munged, slurmctld and
# slurmd outlived the run.

load helpers

@test "a test that fails with its own cluster up leaves none of its daemons running" {
    local doc="$DLSTAGE_TEST_DIR/broken-testing.md" by_hand="$DLSTAGE_TEST_DIR/by-hand"
    sed 's/srun -N3 hostname /srun -N3 false /' "$TESTING_DOC" >"$doc"
    grep -q 'srun -N3 false .*# n1 n2 n3$' "$doc" || { echo "testing.md's srun line changed"; false; }
    run env DLSTAGE_TESTING_DOC="$doc" bats --tap -f 'testing.md: the test cluster by hand' \
        "$BATS_TEST_DIRNAME/56-doc-transcripts.bats"
    echo "$output"
    grep -q '^not ok 1 testing.md: the test cluster by hand' <<<"$output"
    # It got as far as a cluster of its own.
    [ -e "$by_hand/slurm.conf" ] || [ -n "$(find "$by_hand" -name slurm.conf -print -quit)" ]
    run "$BATS_TEST_DIRNAME/../check-leftovers" --under "$by_hand" --wait 15
    echo "$output"
    [ "$status" -eq 0 ]
    assert_healthy  # the test cluster did not notice
}
