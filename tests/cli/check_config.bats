#!/usr/bin/env bats
# dlstage check-config: exit 0 for a valid file, else every problem with
# file, line and key, and exit 1.
load helpers

@test "the shipped example is valid" {
    run_dlstage check-config "$top_srcdir/etc/dlstage.toml"
    expect_status 0
    expect_out "OK (3 tiers, 3 datasets)"
}

@test "a broken file: every problem with file, line and key" {
    run_dlstage check-config "$DATA/broken.toml"
    expect_status 1
    expect_no_out
    expect_err "broken.toml:3: site.launchr: unknown key (did you mean 'launcher'?)"
    expect_err "broken.toml:7: tiers.shm.scope: must be one of node, shared, not 'nod'"
    expect_err "broken.toml:8: tiers.shm.max_bytes: invalid size '10Q'"
    expect_err "broken.toml:10: tiers.ssd.path: missing required key"
    expect_err "broken.toml:16: datasets.imagenet.tiers: unknown tier 'nvme'"
    expect_err "broken.toml:19: datasets.coco.source: must be a string, not an integer"
    expect_err "broken.toml: 6 problems"
}

@test "a syntax error names its line" {
    run_dlstage check-config "$DATA/syntax.toml"
    expect_status 1
    expect_err "syntax.toml:4:"
}

@test "a missing file" {
    run_dlstage check-config /nonexistent/dlstage.toml
    expect_status 1
    expect_err "dlstage: cannot read configuration file /nonexistent/dlstage.toml: No such file or directory"
}

# A file (or a directory above it) others can change is refused: root code
# would act on whatever they wrote into it.
copy_example() {
    mkdir "$work/etc"
    cp "$top_srcdir/etc/dlstage.toml" "$work/etc/open.toml"
}

@test "a world-writable file is refused" {
    copy_example
    chmod 0666 "$work/etc/open.toml"
    run_dlstage check-config "$work/etc/open.toml"
    expect_status 1
    expect_err "dlstage: refusing the site configuration: configuration file '$work/etc/open.toml' is writable by group or others (mode 0666); run chmod go-w $work/etc/open.toml"
}

@test "a group-writable directory above the file is refused, and fixed it is accepted" {
    copy_example
    chmod 0775 "$work/etc"
    run_dlstage check-config "$work/etc/open.toml"
    expect_status 1
    expect_err "directory '$work/etc' is writable by group or others (mode 0775)"
    chmod 0755 "$work/etc"
    run_dlstage check-config "$work/etc/open.toml"
    expect_status 0
}

@test "a directory is not a configuration file" {
    copy_example
    run_dlstage check-config "$work/etc"
    expect_status 1
    expect_err "configuration file '$work/etc' is not a regular file but a directory: give the path of the TOML file"
}

@test "a file of another owner is refused, by root's other commands too" {
    [ "$(id -u)" -eq 0 ] || skip "needs root"
    copy_example
    chown nobody "$work/etc/open.toml"
    run_dlstage check-config "$work/etc/open.toml"
    expect_status 1
    expect_err "configuration file '$work/etc/open.toml' belongs to uid $(id -u nobody); make it root's"
    run_dlstage --config "$work/etc/open.toml" catalog list
    expect_status 1
    expect_err "belongs to uid $(id -u nobody)"
}

@test "a fifo is refused without waiting for a writer" {
    mkfifo "$work/fifo.toml"
    run_dlstage check-config "$work/fifo.toml"
    expect_status 1
    expect_err "configuration file '$work/fifo.toml' is not a regular file"
}

@test "the default file: --config" {
    run_dlstage --config "$DATA/broken.toml" check-config
    expect_status 1
}

@test "the default file: \$DLSTAGE_CONFIG" {
    DLSTAGE_CONFIG="$top_srcdir/etc/dlstage.toml" run_dlstage check-config
    expect_status 0
}

@test "a dataset only mover nodes reach needs a shared via tier and a mover partition, one line each" {
    mkdir "$work/etc"
    cat >"$work/etc/mover.toml" <<'TOML'
[tiers.shm]
path = "/dev/shm/dlstage/%j"

[tiers.scratch]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"

[datasets.in21k]
source = "/p/largedata/in21k"
tiers = ["shm", "scratch"]
reach = "mover"

[datasets.far]
source = "/p/largedata/far"
tiers = ["shm", "scratch"]
reach = "mover"
via = "shm"
TOML
    run_dlstage check-config "$work/etc/mover.toml"
    expect_status 1
    expect_err "mover.toml:12: datasets.in21k.reach: reach = \"mover\" needs a [mover] table with the partition mover jobs run on, e.g. partition = \"xfer\""
    expect_err "mover.toml:12: datasets.in21k.via: reach = \"mover\" needs via, the shared tier the mover job copies into, e.g. via = \"scratch\""
    expect_err "mover.toml:18: datasets.far.via: must name a tier with scope = \"shared\", not 'shm'"
    sed -i 's/^via = "shm"/via = "scratch"/; s/^reach = "mover"$/reach = "mover"\nvia = "scratch"/' "$work/etc/mover.toml"
    sed -i '0,/^via = "scratch"$/!{/^via = "scratch"$/{N;/\nvia = "scratch"/s/\n.*//}}' "$work/etc/mover.toml"
    printf '\n[mover]\npartition = "xfer"\n' >>"$work/etc/mover.toml"
    run_dlstage check-config "$work/etc/mover.toml"
    expect_status 0
    expect_out "OK (2 tiers, 2 datasets, mover partition xfer)"
}
