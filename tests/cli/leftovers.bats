#!/usr/bin/env bats
# tests/check-leftovers, which scripts/test runs last: a test cluster's
# daemon or mount that outlived the tests fails the run, named, and is
# stopped.  A stand-in daemon (sleep under a daemon's name, its command
# line naming a directory of this test) plays the leftover.
load helpers

leftovers() { run_merged "$top_srcdir/tests/check-leftovers" --under "$work" --wait "${1:-0}"; }

# plant NAME: a process called NAME whose command line names $work; $planted its pid.
plant() {
    cp /bin/sleep "$work/$1"
    "$work/$1" 300 &
    planted=$!
}

@test "nothing left below the directory: silent, exit 0" {
    leftovers
    [ "$status" -eq 0 ] || fail "exit $status: $out"
    [ -z "$out" ] || fail "it said something: $out"
}

@test "a daemon left running is named on the first line, stopped, and fails the check" {
    plant munged
    leftovers
    [ "$status" -eq 1 ] || fail "exit $status: $out"
    [ "$(head -n1 <<<"$out")" = "left running or mounted: munged x1" ] || fail "$out"
    grep -q "^ *$planted .*$work/munged 300$" <<<"$out" || fail "$out"
    for _ in $(seq 50); do kill -0 "$planted" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$planted" 2>/dev/null || fail "pid $planted still runs"
    wait "$planted" 2>/dev/null || true
    leftovers
    [ "$status" -eq 0 ] || fail "after it stopped: exit $status: $out"
}

@test "a daemon naming the directory as an option's value counts too" {
    # Its program elsewhere, so that only --key-file=DIR/... names $work.
    local elsewhere
    elsewhere=$(mktemp -d /tmp/dlstage-cli-elsewhere-XXXXXX)
    cp /usr/bin/perl "$elsewhere/munged"
    "$elsewhere/munged" -e 'sleep 300' -- "--key-file=$work/munge.key" &
    planted=$!
    leftovers
    rm -rf "$elsewhere"
    [ "$status" -eq 1 ] || fail "exit $status: $out"
    [ "$(head -n1 <<<"$out")" = "left running or mounted: munged x1" ] || fail "$out"
    wait "$planted" 2>/dev/null || true
}

@test "a daemon on its way out is waited for, not named" {
    cp /bin/sleep "$work/pfssim"
    "$work/pfssim" 1 &
    leftovers 5
    [ "$status" -eq 0 ] || fail "exit $status: $out"
}

@test "a process of another name is not a leftover" {
    plant python3-helper
    leftovers
    [ "$status" -eq 0 ] || fail "exit $status: $out"
    kill "$planted"
}

@test "a mount left below the directory is named, unmounted, and fails the check" {
    [ "$(id -u)" -eq 0 ] || skip "mounting takes root"
    mkdir "$work/mnt"
    mount -t tmpfs leftover "$work/mnt" || skip "no tmpfs mount here"
    leftovers
    [ "$status" -eq 1 ] || fail "exit $status: $out"
    [ "$(head -n1 <<<"$out")" = "left running or mounted: no process; mounts: $work/mnt " ] || fail "$out"
    ! grep -q " $work/mnt " /proc/self/mountinfo || fail "still mounted"
}
