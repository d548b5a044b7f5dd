#!/usr/bin/env bats
# Every C++ source is laid out as .clang-format says (tests/check-format;
# `make format` lays them out).  Without clang-format the check fails, as
# make check does without bats: scripts/install-deps installs both.  A
# clang-format of another major version than 14 (Debian 12's) is skipped,
# the reason said: its layout differs in places from the one the sources
# keep.
load helpers

# check_format [--fix] SRCDIR: tests/check-format; its output in $out, its
# exit in $status.  A version it does not hold the sources to skips the test.
check_format() {
    run_merged "$top_srcdir/tests/check-format" "$@"
    [ "$status" -ne 77 ] || skip "$out"
}

@test "every C++ source is formatted as .clang-format says" {
    check_format "$top_srcdir"
    [ -z "$out" ] || fail "check-format said something"
    expect_status 0
}

@test "a source clang-format would change is named, and fails the check; --fix formats it" {
    mkdir -p "$work/src/lib"
    cp "$top_srcdir/.clang-format" "$work/src/"
    printf 'int twice(int x)\n{\n    return 2 * x;\n}\n' >"$work/src/lib/fine.cpp"
    printf 'int half(int x) {\n    return x / 2;\n}\n' >"$work/src/lib/brace.cpp"
    check_format "$work/src"
    expect_status 1
    [ "$out" = "check-format: lib/brace.cpp is not formatted as .clang-format says (first at line 1); run 'make format'" ] ||
        fail "not named alone"
    check_format --fix "$work/src"
    expect_status 0
    [ "$(cat "$work/src/lib/brace.cpp")" = "$(printf 'int half(int x)\n{\n    return x / 2;\n}')" ] || fail "not formatted"
    check_format "$work/src"
    expect_status 0
}

@test "without clang-format the check fails and says what to install" {
    mkdir -p "$work/src"
    cp "$top_srcdir/.clang-format" "$work/src/"
    CLANG_FORMAT="$work/no-such-clang-format" check_format "$work/src"
    expect_status 1
    [ "$out" = "check-format: $work/no-such-clang-format not found: install the Debian package clang-format (scripts/install-deps does), or run configure with CLANG_FORMAT=PROGRAM" ] ||
        fail "not said"
}

@test "without .clang-format the check fails rather than use clang-format's own style" {
    mkdir -p "$work/src"
    printf 'int one() { return 1; }\n' >"$work/src/one.cpp"
    check_format "$work/src"
    expect_status 1
    [ "$out" = "check-format: no .clang-format in $work/src" ] || fail "not said"
}
