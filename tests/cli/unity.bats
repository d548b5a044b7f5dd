#!/usr/bin/env bats
# The unit tests' parts (docs/testing.md, "Unit tests"): tests/check-unity
# holds every unit test file to exactly one part of tests/unit/unity/.
load helpers

unity() { run_merged /usr/bin/python3 "$top_srcdir/tests/check-unity" "$1"; }

# A tree of its own: one program of two parts and three test files.
small_tree() {
    mkdir -p "$work/src/tests/unit/unity" "$work/src/tests/unit/support" "$work/src/tests/unit/a"
    touch "$work/src/tests/unit/support/unit_main.cpp" "$work/src/tests/unit/a/test_one.cpp" \
        "$work/src/tests/unit/a/test_two.cpp" "$work/src/tests/unit/a/test_three.cpp"
    printf '#include "tests/unit/support/unit_main.cpp"\n\n#include "tests/unit/a/test_one.cpp"\n' \
        >"$work/src/tests/unit/unity/test_a_1.cpp"
    printf '#include "tests/unit/a/test_three.cpp"\n#include "tests/unit/a/test_two.cpp"\n' \
        >"$work/src/tests/unit/unity/test_a_2.cpp"
    cat >"$work/src/Makefile.am" <<'EOF'
UNIT_TEST_FILES = tests/unit/support/unit_main.cpp tests/unit/a/test_one.cpp tests/unit/a/test_two.cpp \
	tests/unit/a/test_three.cpp
tests_unit_test_a_SOURCES = tests/unit/unity/test_a_1.cpp tests/unit/unity/test_a_2.cpp
EOF
}

@test "unity: every unit test file of the tree is in exactly one part" {
    unity "$top_srcdir"
    [ "$status" -eq 0 ] || fail "check-unity: $out"
    [ -z "$out" ] || fail "it said something: $out"
}

@test "unity: a test file no part includes is named, and fails" {
    small_tree
    unity "$work/src"
    [ "$status" -eq 0 ] || fail "the small tree should hold: $out"
    sed -i '/test_two/d' "$work/src/tests/unit/unity/test_a_2.cpp"
    unity "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [ "$out" = "check-unity: tests/unit/a/test_two.cpp: no part of tests/unit/unity/ includes it, so it never runs; add it to its program's part" ] ||
        fail "not named: $out"
}

@test "unity: a file in two parts, a second main, a missing file and one Makefile.am lacks are named" {
    small_tree
    printf '#include "tests/unit/support/unit_main.cpp"\n#include "tests/unit/a/test_one.cpp"\n#include "tests/unit/a/gone.cpp"\n' \
        >>"$work/src/tests/unit/unity/test_a_2.cpp"
    touch "$work/src/tests/unit/a/test_four.cpp"
    printf '#include "tests/unit/a/test_four.cpp"\n' >>"$work/src/tests/unit/unity/test_a_1.cpp"
    unity "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [[ "$out" == *"check-unity: tests/unit/a/test_one.cpp: included by tests/unit/unity/test_a_1.cpp and tests/unit/unity/test_a_2.cpp; keep it in one part"* ]] ||
        fail "twice not named: $out"
    [[ "$out" == *"check-unity: tests/unit/unity/test_a_2.cpp: only a program's first part may include tests/unit/support/unit_main.cpp (a second main)"* ]] ||
        fail "second main not named: $out"
    [[ "$out" == *"check-unity: tests/unit/unity/test_a_2.cpp:5: includes tests/unit/a/gone.cpp, which does not exist; remove the line or fix the path"* ]] ||
        fail "missing file not named: $out"
    [[ "$out" == *"check-unity: tests/unit/a/test_four.cpp: Makefile.am does not name it; add it (a part to its program's _SOURCES, a test file to UNIT_TEST_FILES)"* ]] ||
        fail "Makefile.am's gap not named: $out"
}

@test "unity: a first part that does not begin with unit_main.cpp fails" {
    small_tree
    printf '#include "tests/unit/a/test_one.cpp"\n#include "tests/unit/support/unit_main.cpp"\n' \
        >"$work/src/tests/unit/unity/test_a_1.cpp"
    unity "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [ "$out" = "check-unity: tests/unit/unity/test_a_1.cpp: a program's first part must include tests/unit/support/unit_main.cpp first (it defines main)" ] ||
        fail "not named: $out"
}
