#!/usr/bin/env bats
# The transcripts of the docs ("$ command" and what it prints) are what
# the command prints: each is read from the README or the man page with
# tests/cli/doc-transcript and compared with a run of the command.  Those
# that need Slurm (sbatch, dlstage status) are in
# tests/integration/56-doc-transcripts.bats.
load helpers

transcript() { "$top_srcdir/tests/cli/doc-transcript" "$@"; }

# columns TEXT: each line's columns (separated by two spaces or more) joined
# by '|', for tables whose widths follow their content.
columns() { sed -E 's/ {2,}/|/g'; }

@test "README: a mistyped command gets the did-you-mean line and the usage line" {
    expected=$(transcript "$top_srcdir/README.md" 'dlstage stauts') || fail "$expected"
    "$DLSTAGE" stauts >"$work/out" 2>&1 && status=0 || status=$?
    expect_status 2
    out=$(cat "$work/out")
    [ "$out" = "$expected" ] || fail "README shows: $expected"
}

@test "dlstage(1): check-config names a mistyped key of the example configuration, line and all" {
    expected=$(transcript "$top_srcdir/man/dlstage.1" 'dlstage check-config /etc/dlstage/dlstage.toml') || fail "$expected"
    line=$(grep -oE 'toml:[0-9]+:' <<<"$expected" | head -n1 | tr -dc 0-9)
    # The example configuration with that line's max_bytes mistyped.
    sed -n "${line}p" "$top_srcdir/etc/dlstage.toml" | grep -q '^max_bytes ' || fail "line $line of etc/dlstage.toml is not a max_bytes line"
    sed "${line}s/^max_bytes /max_byte  /" "$top_srcdir/etc/dlstage.toml" >"$work/dlstage.toml"
    "$DLSTAGE" check-config "$work/dlstage.toml" >"$work/out" 2>&1 && status=0 || status=$?
    expect_status 1
    out=$(sed "s|$work/dlstage.toml|/etc/dlstage/dlstage.toml|g" "$work/out")
    [ "$out" = "$expected" ] || fail "dlstage(1) shows: $expected"
}

@test "dlstage(1): catalog list of the example configuration has the columns and rows shown" {
    expected=$(transcript "$top_srcdir/man/dlstage.1" 'dlstage catalog list') || fail "$expected"
    run_dlstage --config "$top_srcdir/etc/dlstage.toml" catalog list
    expect_status 0
    # Header and every column but SIZE and FILES (this machine has no datasets).
    [ "$(head -n1 <<<"$out" | columns)" = "$(head -n1 <<<"$expected" | columns)" ] || fail "header: $expected"
    [ "$(columns <<<"$out" | cut -d'|' -f1-5)" = "$(columns <<<"$expected" | cut -d'|' -f1-5)" ] ||
        fail "rows: $expected"
}

@test "doc-transcript fails on a transcript the docs do not show" {
    run "$top_srcdir/tests/cli/doc-transcript" "$top_srcdir/README.md" 'dlstage frobnicate'
    [ "$status" -eq 1 ]
    [[ "$output" == *"shows no transcript of 'dlstage frobnicate'"* ]]
}
