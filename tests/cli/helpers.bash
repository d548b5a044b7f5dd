# Shared by the command-line tests (tests/cli/*.bats; make check runs them
# through automake's TAP driver, one result per @test): run the just-built
# dlstage and check its exit status and output.
top_srcdir=$(cd "${top_srcdir:-$BATS_TEST_DIRNAME/../..}" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
DLSTAGE="$top_builddir/dlstage"
DATA="$top_srcdir/tests/cli/data"

# doc_transcript ARGS...: tests/cli/doc-transcript, the reader of the docs'
# examples (a transcript's output, a block, its commands, a message).
doc_transcript() { "$top_srcdir/tests/cli/doc-transcript" "$@"; }

# doc_says DOC REGEX [DOC_WORD=TEST_WORD ...] <<<"$err": a line says what
# the example message of DOC (relative to the source tree) matching REGEX
# says, numbers and paths aside (doc-transcript --same-message).
doc_says() {
    local doc=$1
    shift
    doc_transcript --same-message "$top_srcdir/$doc" "$@"
}

# A fresh directory per test under /tmp, as the configuration checks want:
# every directory above a configuration file must be writable by root only
# (or sticky).  A file that needs more in its setup calls make_work itself.
make_work() { work=$(mktemp -d /tmp/dlstage-cli-XXXXXX); }
setup() { make_work; }
teardown() { rm -rf "$work"; }

# run_dlstage ARGS...: runs dlstage, sets $status, $out (stdout) and $err
# (stderr); its exit status is for the checks below, not for bats.
run_dlstage() {
    "$DLSTAGE" "$@" >"$work/out" 2>"$work/err" && status=0 || status=$?
    out=$(cat "$work/out")
    err=$(cat "$work/err")
}

# run_merged COMMAND...: runs one of the tree's checkers, sets $status and
# $out (its stdout and stderr together, the lines it names problems with).
run_merged() {
    "$@" >"$work/out" 2>&1 && status=0 || status=$?
    out=$(cat "$work/out")
}

# fail MESSAGE: the check failed; say why and what dlstage printed.
fail() {
    printf 'FAIL: %s\n  stdout: %s\n  stderr: %s\n' "$*" "${out-}" "${err-}" >&2
    return 1
}

expect_status() { [ "$status" -eq "$1" ] || fail "exit $status, expected $1"; }
expect_out() { printf '%s\n' "$out" | grep -qF -- "$1" || fail "stdout lacks '$1'"; }
expect_err() { printf '%s\n' "$err" | grep -qF -- "$1" || fail "stderr lacks '$1'"; }
expect_no_out() { [ -z "$out" ] || fail "unexpected stdout"; }
