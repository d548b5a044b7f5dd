#!/usr/bin/env bats
# dlstage catalog scan / show: a dataset's manifest, written once and
# compared with the source later.
load helpers

setup() {
    make_work
    mkdir -p "$work/tree/sub dir" "$work/state"
    printf 'hello\n' > "$work/tree/a.txt"
    printf 'x' > "$work/tree/sub dir/b.txt"
    ln -s a.txt "$work/tree/link"
    cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$work/state"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[datasets.tree]
source = "$work/tree"
tiers = ["shm"]
[datasets.elsewhere]
source = "$work/tree"
tiers = ["shm"]
TOML
}

scan() { run_dlstage --config "$work/dlstage.toml" catalog scan "$@"; }
show() { run_dlstage --config "$work/dlstage.toml" catalog show "$@"; }

@test "scan writes NAME.manifest under state_dir/manifests and says what it read" {
    scan tree
    expect_status 0
    expect_err "dlstage: scanned tree: 3 files, 7 B in"
    expect_err "manifest $work/state/manifests/tree.manifest"
    head -n 1 "$work/state/manifests/tree.manifest" | grep -qx 'dlstage-manifest 2' || fail "no manifest header"
    grep -q $'^f\t644\t6\t' "$work/state/manifests/tree.manifest" || fail "a.txt not listed with its size"
}

@test "site.manifest_dir moves the manifests" {
    mkdir "$work/manifests"
    sed -i "/^state_dir/a manifest_dir = \"$work/manifests\"" "$work/dlstage.toml"
    scan tree
    expect_status 0
    [ -f "$work/manifests/tree.manifest" ] || fail "not in site.manifest_dir"
}

@test "show: counts, bytes, age, and an unchanged source" {
    scan tree
    show tree
    expect_status 0
    expect_out "files     3"
    expect_out "bytes     7 B"
    expect_out "changed   no: every entry's type, size and mtime as scanned"
}

@test "show: a changed source names what changed" {
    scan tree
    printf 'hello again\n' > "$work/tree/a.txt"
    rm "$work/tree/link"
    show tree
    expect_status 0
    expect_out "changed   yes: 2 differences; scan again"
    expect_out "a.txt: size 6 -> 12"
    expect_out "link: removed"
}

@test "show --json: the same facts for scripts" {
    scan tree
    touch -d '2001-01-01' "$work/tree/sub dir/b.txt"
    show tree --json
    expect_status 0
    printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
m = json.load(sys.stdin)
assert m["dataset"] == "tree" and m["files"] == 3 and m["bytes"] == 7, m
assert m["source_changed"] is True and m["changes"] == 1, m
assert m["change_examples"] == ["sub dir/b.txt: modified"], m
' || fail "unexpected JSON: $out"
}

@test "show without a manifest says who makes one" {
    show elsewhere
    expect_status 1
    expect_err "dlstage: no manifest of elsewhere in $work/state/manifests (an admin makes one with 'dlstage catalog scan elsewhere')"
}

@test "a manifest cut short is refused with its line and the fix" {
    scan tree
    head -c -10 "$work/state/manifests/tree.manifest" > "$work/cut" && mv "$work/cut" "$work/state/manifests/tree.manifest"
    show tree
    expect_status 1
    expect_err "tree.manifest:"
    expect_err "run 'dlstage catalog scan tree' again"
}

@test "unknown dataset, missing NAME, stray option: one line each" {
    scan nope
    expect_status 1
    expect_err "dlstage: unknown dataset 'nope' (known: elsewhere, tree; see dlstage catalog list)"
    scan
    expect_status 2
    expect_err "dlstage: catalog scan needs a dataset NAME"
    show tree --threads 4
    expect_status 2
    expect_err "dlstage: catalog show: unknown option '--threads'"
}

@test "a scan that refuses the source writes no manifest" {
    mkfifo "$work/tree/pipe"
    scan tree
    expect_status 1
    expect_err "pipe"
    expect_err "is a fifo"
    [ ! -e "$work/state/manifests/tree.manifest" ] || fail "a manifest was written"
}

@test "show: current while no directory changed; a file added below the root makes it stale" {
    scan tree
    show tree
    expect_out "current   yes: jobs plan from it without a walk"
    # Rewritten in place: directories unchanged (the stager's check at open
    # catches the file); still current.
    printf 'HELLO\n' > "$work/tree/a.txt"
    show tree
    expect_out "current   yes"
    touch "$work/tree/sub dir/new"
    show tree
    expect_status 0
    expect_out "current   no: $work/tree/sub dir changed at"
    expect_out ", after the scan"
}

@test "show: a manifest others can write is not trusted" {
    scan tree
    chmod 0664 "$work/state/manifests/tree.manifest"
    show tree --json
    expect_status 0
    printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
m = json.load(sys.stdin)
assert m["trusted"] is False and m["current"] is True, m
' || fail "unexpected JSON: $out"
    show tree
    expect_out "trusted   no: manifest '$work/state/manifests/tree.manifest' is writable by group or others (mode 0664)"
}

@test "a manifest of the format before directory times is refused with the fix" {
    scan tree
    sed -i '1s/.*/dlstage-manifest 1/' "$work/state/manifests/tree.manifest"
    show tree
    expect_status 1
    expect_err "tree.manifest:1: a manifest of an older dlstage (no directory times); run 'dlstage catalog scan NAME' again"
}
