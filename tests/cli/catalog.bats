#!/usr/bin/env bats
# dlstage catalog list: every dataset with its source facts, as a table
# and as JSON.
load helpers

setup() {
    make_work
    mkdir -p "$work/tree/sub" "$work/shards"
    printf 'abc' > "$work/tree/sub/f"
    head -c 3000 /dev/zero > "$work/one.bin"
    head -c 1000 /dev/zero > "$work/shards/s-0.tar"
    head -c 2000 /dev/zero > "$work/shards/s-1.tar"
    cat > "$work/dlstage.toml" <<TOML
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[tiers.ssd]
path = "/local/dlstage/%j"
[datasets.tree]
source = "$work/tree"
tiers = ["shm", "ssd"]
[datasets.one]
source = "$work/one.bin"
tiers = ["ssd"]
[datasets.shards]
source = "$work/shards/s-*.tar"
mode = "extract"
tiers = ["ssd"]
[datasets.gone]
source = "$work/nothing-here"
tiers = ["shm"]
TOML
}

# line NAME: the table row of dataset NAME, blanks squeezed.
line() { printf '%s\n' "$out" | grep "^$1 " | tr -s ' '; }

@test "the table: a header and a row per dataset" {
    run_dlstage --config "$work/dlstage.toml" catalog list
    expect_status 0
    expect_out "NAME    SOURCE"
    [ "$(line tree)" = "tree $work/tree dir copy shm,ssd - -" ] || fail "tree row: $(line tree)"
    [ "$(line one)" = "one $work/one.bin file copy ssd 2.9 KiB 1" ] || fail "file row: $(line one)"
    [ "$(line shards)" = "shards $work/shards/s-*.tar tar extract ssd 2.9 KiB -" ] || fail "shards row: $(line shards)"
    [ "$(line gone)" = "gone $work/nothing-here auto copy shm missing -" ] || fail "missing row: $(line gone)"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "4 datasets and a header"
}

@test "JSON, with the options after the command as with Slurm's commands" {
    run_dlstage catalog list --json --config "$work/dlstage.toml"
    expect_status 0
    printf '%s' "$out" | python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
assert rows["one"]["bytes"] == 3000 and rows["one"]["files"] == 1, rows["one"]
assert rows["shards"]["bytes"] == 3000 and "files" not in rows["shards"], rows["shards"]
assert rows["gone"]["available"] is False and "No such file" in rows["gone"]["problem"], rows["gone"]
assert rows["tree"]["tiers"] == ["shm", "ssd"], rows["tree"]
' || fail "json content"
}

@test "a broken configuration: its first problems and a pointer to check-config" {
    run_dlstage --config "$DATA/broken.toml" catalog list
    expect_status 1
    expect_err "and 5 more: run 'dlstage check-config'"
}
