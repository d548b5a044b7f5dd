#!/usr/bin/env bats
# The documentation's examples work: every configuration example of the
# README, the guides (docs/*.md), dlstage.toml(5) and etc/dlstage.toml passes
# check-config, and every `dlstage SUB --opt` line of the README and the
# guides uses options SUB has (tests/cli/doc-toml-examples).
load helpers

checker() { "$top_srcdir/tests/cli/doc-toml-examples" "$DLSTAGE" "$work" "$@"; }

@test "every configuration example and every command line of the docs" {
    out=$(checker "$top_srcdir/README.md" "$top_srcdir"/docs/*.md "$top_srcdir/man/dlstage.toml.5" "$top_srcdir/man/spank-dlstage.8" \
        "$top_srcdir/man/dlstage.1" "$top_srcdir/etc/dlstage.toml" 2>&1) && status=0 || status=$?
    expect_status 0
    grep -Eq '^[0-9]+ configuration examples, 0 refused; [0-9]+ command lines, 0 with unknown options$' <<<"$out" ||
        fail "$out"
}

@test "the checker refuses a broken example and an unknown option" {
    printf '# x\n\n```toml\n[tiers.shm]\npath = "relative/%%j"\n```\n\n```sh\ndlstage status --frobnicate\n```\n' \
        > "$work/bad.md"
    out=$(checker "$work/bad.md" 2>&1) && status=0 || status=$?
    expect_status 1
    grep -q "FAIL bad.md example 1: dlstage: .*tiers.shm.path" <<<"$out" || fail "$out"
    grep -q "FAIL bad.md: 'dlstage status --frobnicate': dlstage status has no --frobnicate" <<<"$out" || fail "$out"
}

@test "examples/pytorch/train-split.sbatch: valid bash, and its --stage-data splits a dataset of the example config" {
    bash -n "$top_srcdir/examples/pytorch/train-split.sbatch" || fail "not valid bash"
    spec=$(sed -n 's/^#SBATCH --stage-data=//p' "$top_srcdir/examples/pytorch/train-split.sbatch")
    [ "$spec" = "in21k:shm:split" ] || fail "stage-data line: '$spec'"
    cp "$top_srcdir/etc/dlstage.toml" "$work/dlstage.toml"
    run_dlstage --config "$work/dlstage.toml" catalog list --names
    expect_status 0
    grep -Eq "^in21k	([a-z]+,)*shm(,|$)" <<<"$out" || fail "in21k on shm not in the example catalog: $out"
}

@test "examples/pytorch/train.sbatch: valid bash, and its --stage-data names a dataset and tier of the example config" {
    bash -n "$top_srcdir/examples/pytorch/train.sbatch" || fail "not valid bash"
    spec=$(sed -n 's/^#SBATCH --stage-data=//p' "$top_srcdir/examples/pytorch/train.sbatch")
    [ "$spec" = "imagenet:shm" ] || fail "stage-data line: '$spec'"
    cp "$top_srcdir/etc/dlstage.toml" "$work/dlstage.toml"
    run_dlstage --config "$work/dlstage.toml" catalog list --names
    expect_status 0
    grep -Eq "^imagenet	([a-z]+,)*shm(,|$)" <<<"$out" || fail "imagenet on shm not in the example catalog: $out"
}
