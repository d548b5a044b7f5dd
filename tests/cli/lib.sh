# Helpers for the command-line tests: run the just-built dlstage and check
# exit status and output.  Sourced by tests/cli/*.sh (run by `make check`).
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
DLSTAGE="$top_builddir/dlstage"
failures=0
work=$(mktemp -d /tmp/dlstage-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT

# run ARGS...: runs dlstage, sets $status, $out (stdout) and $err (stderr).
run() {
    set +e
    "$DLSTAGE" "$@" >"$work/out" 2>"$work/err"
    status=$?
    set -e
    out=$(cat "$work/out")
    err=$(cat "$work/err")
}

fail() {
    echo "FAIL: $*" >&2
    echo "  stdout: $out" >&2
    echo "  stderr: $err" >&2
    failures=$((failures + 1))
}

expect_status() { [ "$status" -eq "$1" ] || fail "$2: exit $status, expected $1"; }
expect_out() { printf '%s\n' "$out" | grep -qF -- "$1" || fail "$2: stdout lacks '$1'"; }
expect_err() { printf '%s\n' "$err" | grep -qF -- "$1" || fail "$2: stderr lacks '$1'"; }
expect_no_out() { [ -z "$out" ] || fail "$1: unexpected stdout"; }

finish() {
    [ "$failures" -eq 0 ] || { echo "$failures check(s) failed" >&2; exit 1; }
    exit 0
}
