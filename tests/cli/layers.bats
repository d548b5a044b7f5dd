#!/usr/bin/env bats
# The rooms' layers (docs/ARCHITECTURE.md, "The rooms"): tests/check-layers
# holds every #include of the tree to the diagram.
load helpers

layers() { run_merged /usr/bin/python3 "$top_srcdir/tests/check-layers" "$1"; }

# A tree of its own: the diagram and three rooms of one file each.
small_tree() {
    mkdir -p "$work/src/docs" "$work/src/facts" "$work/src/policies" "$work/src/lib/sys"
    cp "$top_srcdir/docs/ARCHITECTURE.md" "$work/src/docs/"
    printf '#pragma once\n#include "lib/size.hpp"\n' >"$work/src/facts/thing.hpp"
    printf '#include "facts/thing.hpp"\n#include "policies/rule.hpp"\n' >"$work/src/policies/rule.cpp"
    printf '#pragma once\n' >"$work/src/policies/rule.hpp"
}

@test "layers: every include of the tree goes down the diagram" {
    layers "$top_srcdir"
    [ "$status" -eq 0 ] || fail "check-layers: $out"
    [ -z "$out" ] || fail "it said something: $out"
}

@test "layers: an include up a layer is named with its line, and fails" {
    small_tree
    layers "$work/src"
    [ "$status" -eq 0 ] || fail "the small tree should hold: $out"
    printf '#include "policies/rule.hpp"\n' >>"$work/src/facts/thing.hpp"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [ "$out" = "check-layers: facts/thing.hpp:3: includes policies/rule.hpp: facts/ (layer 0) may use only lower layers, and policies/ is layer 1" ] ||
        fail "not named: $out"
}

@test "layers: a rule that uses the system layer, and a room not on the diagram, are named" {
    small_tree
    printf '#include "lib/sys/fd.hpp"\n' >>"$work/src/policies/rule.cpp"
    mkdir "$work/src/newroom" && printf 'int x;\n' >"$work/src/newroom/x.cpp"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [[ "$out" == *"check-layers: newroom/x.cpp: room newroom/ is not on the layer diagram of docs/ARCHITECTURE.md; add it there"* ]] ||
        fail "new room not named"
    [[ "$out" == *"check-layers: policies/rule.cpp:3: includes lib/sys/fd.hpp: the policies are pure rules and may not use the system layer or the log"* ]] ||
        fail "system layer not named"
}

# The tree's own sources and its ARCHITECTURE.md, to plant an include in.
whole_tree() {
    mkdir -p "$work/src/docs"
    cp "$top_srcdir/docs/ARCHITECTURE.md" "$work/src/docs/"
    (cd "$top_srcdir" && find . \( -path ./tests -o -path ./bench -o -path './_*' -o -path './.*' \) -prune -o \
        \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -print) | tar -C "$top_srcdir" -cf - -T - | tar -C "$work/src" -xf -
}

@test "layers: an include that climbs or goes sideways inside stager/ is named with its line, and fails" {
    whole_tree
    layers "$work/src"
    [ "$status" -eq 0 ] || fail "the copied tree should hold: $out"
    printf '#include "stager/copies/copy_check.hpp"\n' >>"$work/src/stager/plan/plan.cpp"
    printf '#include "stager/plan/plan.hpp"\n' >>"$work/src/stager/extract/entry_rules.cpp"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    local climb sideways
    climb="check-layers: stager/plan/plan.cpp:$(wc -l <"$work/src/stager/plan/plan.cpp"): includes stager/copies/copy_check.hpp: inside stager/, stager/plan (layer 0) may use only lower layers, and stager/copies is layer 3"
    sideways="check-layers: stager/extract/entry_rules.cpp:$(wc -l <"$work/src/stager/extract/entry_rules.cpp"): includes stager/plan/plan.hpp: inside stager/, stager/extract (layer 0) may use only lower layers, and stager/plan is layer 0"
    [ "$out" = "$sideways"$'\n'"$climb" ] || fail "not named as expected: $out"
}

@test "layers: a sub-room not on the diagram, and a line of the diagram with no file, are named" {
    whole_tree
    mkdir "$work/src/stager/newroom" && printf 'int x;\n' >"$work/src/stager/newroom/x.cpp"
    rm -r "$work/src/stager/extract"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [[ "$out" == *"check-layers: stager/newroom/x.cpp: not on the diagram inside stager/ of docs/ARCHITECTURE.md (neither stager/newroom nor stager/newroom/x); add it there"* ]] ||
        fail "new sub-room not named"
    [[ "$out" == *"check-layers: stager/extract: on the diagram inside stager/ of docs/ARCHITECTURE.md, but no file is there; take it off"* ]] ||
        fail "empty line of the diagram not named"
}

@test "layers: inside tier/, the walk including safe_fs (the arrow that climbed) is named, and fails" {
    whole_tree
    printf '#include "tier/safe_fs.hpp"\n' >>"$work/src/tier/tier_walk.hpp"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [ "$out" = "check-layers: tier/tier_walk.hpp:$(wc -l <"$work/src/tier/tier_walk.hpp"): includes tier/safe_fs.hpp: inside tier/, tier/tier_walk (layer 1) may use only lower layers, and tier/safe_fs is layer 2" ] ||
        fail "not named as expected: $out"
}

@test "layers: a folder holding more than 15% of the code is named, and fails" {
    whole_tree
    layers "$work/src"
    [ "$status" -eq 0 ] || fail "the copied tree should hold: $out"
    # Lines enough to make facts/ a fifth of the code.
    local total
    total=$(find "$work/src" -name '*.[ch]pp' -exec cat {} + | wc -l)
    yes 'int filler;' | head -n $((total / 3)) >"$work/src/facts/filler.cpp"
    layers "$work/src"
    [ "$status" -eq 1 ] || fail "exit $status"
    [[ "$out" =~ ^check-layers:\ facts/\ holds\ [0-9.]+%\ of\ the\ code\ \(over\ 15%\):\ give\ it\ sub-rooms\ by\ concern,\ or\ move\ a\ concern\ out$ ]] ||
        fail "not named as expected: $out"
}
