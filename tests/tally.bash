# Sourced by the check scripts that end with "N passed, N failed" (the line
# scripts/test counts): scripts/check-packages and tests/check-demo.
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
# tally: the summary line; true when nothing failed.
tally() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
