#!/usr/bin/env bats
# Submit-time validation: sbatch, srun and salloc accept a valid
# --stage-data and refuse a bad one at once, with one line, creating no job.

load helpers

@test "sbatch accepts a valid request" {
    run as_user sbatch --parsable -N3 --stage-data=sample:shm,blob --wrap true
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" =~ ^[0-9]+ ]]
}

@test "sbatch --help lists --stage-data" {
    run as_user sbatch --help
    [[ "$output" == *"--stage-data=NAME[:TIER][,...]"* ]]
}

@test "unknown dataset: refused, known names listed, no job" {
    assert_refused nope "unknown dataset 'nope' (known: b76, badshard-x, big, blob, bomb-sqfs, bomb-tar, broken-m, cached, cached-file, cached-x, far-bad, far-big, far-file, hostile, huge, image, image-m, image-x, imagenet, imgset, in21k, lopsided-x, lru1, lru2, lru3, mutable, near, overlap-x, sample, secret, shards, shards-x, sparse, split, splittree, suid, tree, uneven, walked)"
}

@test "misspelled dataset: a suggestion" {
    assert_refused sampel "unknown dataset 'sampel' (known: b76, badshard-x, big, blob, bomb-sqfs, bomb-tar, broken-m, cached, cached-file, cached-x, far-bad, far-big, far-file, hostile, huge, image, image-m, image-x, imagenet, imgset, in21k, lopsided-x, lru1, lru2, lru3, mutable, near, overlap-x, sample, secret, shards, shards-x, sparse, split, splittree, suid, tree, uneven, walked); did you mean 'sample'?"
}

@test "unknown tier: refused" {
    assert_refused sample:nvme "unknown tier 'nvme' (known: cache, jobscratch, pernode, scratch, shm, splitcache, splitshm, ssd, tightkept, tightscratch)"
}

@test "tier not allowed for the dataset: refused" {
    assert_refused blob:shm "tier 'shm' is not allowed for dataset 'blob' (allowed: ssd)"
}

@test "malformed spec: refused" {
    assert_refused "sample:shm:x" "malformed entry 'sample:shm:x': expected NAME[:TIER[:split|whole]]"
    assert_refused "sample,,blob" "empty entry in --stage-data"
}

@test "dataset requested twice: refused" {
    assert_refused "sample:shm,sample:ssd" "dataset 'sample' is requested twice"
}

@test "source the user cannot read: refused" {
    assert_refused secret "cannot stage 'secret': cannot read $DLSTAGE_TEST_DIR/data/secret.bin: Permission denied"
}

@test "dataset larger than the tier's max_bytes: refused with the alternatives" {
    assert_refused huge:shm "dataset 'huge' needs 100.0 MiB but tier 'shm' allows at most 80.0 MiB (max_bytes = 80.0 MiB); allowed tiers: ssd"
}

@test "absolute path the user can read: accepted; one that does not exist: refused" {
    run as_user sbatch --parsable -N1 --stage-data="$DLSTAGE_TEST_DIR/data/blob.bin:ssd" --wrap true
    [ "$status" -eq 0 ]
    assert_refused "$DLSTAGE_TEST_DIR/data/none.bin:ssd" "cannot stage 'none.bin': cannot read $DLSTAGE_TEST_DIR/data/none.bin: No such file or directory"
}

@test "srun validates too" {
    run as_user srun -N1 --stage-data=nope true
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: unknown dataset 'nope'"* ]]
    run as_user srun -N1 --stage-data=sample true
    [ "$status" -eq 0 ]
}

@test "salloc validates too" {
    run as_user salloc -N1 --stage-data=sample:nvme true
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: unknown tier 'nvme'"* ]]
    run as_user salloc -N1 --stage-data=sample true
    [ "$status" -eq 0 ]
}

@test "--stage-data=help lists the catalog with sizes and tiers and submits nothing (sbatch, srun, salloc)" {
    before=$(job_ids)
    for cmd in "sbatch --stage-data=help --wrap true" "srun -N1 --stage-data=help true" "salloc -N1 --stage-data=help true"; do
        # shellcheck disable=SC2086
        run as_user $cmd
        [ "$status" -eq 0 ] || { echo "$cmd: $output"; false; }
        [[ "$output" == *"Datasets for --stage-data=NAME"* ]] || { echo "$cmd: $output"; false; }
        grep -Eq '^big +shm,ssd,scratch +file +copy +64\.0 MiB +1$' <<<"$output" || { echo "$cmd: $output"; false; }
        grep -Eq '^sample +shm,ssd +dir +copy +- +- +a small tree$' <<<"$output"
        grep -Eq '^secret .* unreadable ' <<<"$output"
        grep -q '^  shm: node, /dev/shm/dlstage/%j, cleanup job-end$' <<<"$output"
    done
    [ -z "$(new_job_ids "$before")" ] || { echo "jobs before: $before, after: $(job_ids)"; false; }
}
