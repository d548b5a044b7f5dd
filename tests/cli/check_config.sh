#!/bin/sh
# dlstage check-config: exit 0 for a valid file, else every problem with
# file, line and key, and exit 1.
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e
data="$top_srcdir/tests/cli/data"

run check-config "$top_srcdir/etc/dlstage.toml"
expect_status 0 "shipped example"
expect_out "OK (2 tiers, 2 datasets)" "shipped example"

run check-config "$data/broken.toml"
expect_status 1 "broken file"
expect_no_out "broken file"
expect_err "broken.toml:3: site.launchr: unknown key (did you mean 'launcher'?)" "typo in site"
expect_err "broken.toml:7: tiers.shm.scope: must be one of node, shared, not 'nod'" "bad enum"
expect_err "broken.toml:8: tiers.shm.max_bytes: invalid size '10Q'" "bad size"
expect_err "broken.toml:10: tiers.ssd.path: missing required key" "missing key"
expect_err "broken.toml:16: datasets.imagenet.tiers: unknown tier 'nvme'" "unknown tier"
expect_err "broken.toml:19: datasets.coco.source: must be a string, not an integer" "wrong type"
expect_err "broken.toml: 6 problems" "problem count"

run check-config "$data/syntax.toml"
expect_status 1 "syntax error"
expect_err "syntax.toml:4:" "syntax error line"

run check-config /nonexistent/dlstage.toml
expect_status 1 "missing file"
expect_err "dlstage: cannot read configuration file /nonexistent/dlstage.toml: No such file or directory" "missing file"

# A file (or a directory above it) others can change is refused: root code
# would act on whatever they wrote into it.
mkdir "$work/etc"
cp "$top_srcdir/etc/dlstage.toml" "$work/etc/open.toml"
chmod 0666 "$work/etc/open.toml"
run check-config "$work/etc/open.toml"
expect_status 1 "world-writable file"
expect_err "dlstage: refusing the site configuration: configuration file '$work/etc/open.toml' is writable by group or others (mode 0666); run chmod go-w $work/etc/open.toml" "world-writable file"
chmod 0644 "$work/etc/open.toml"
chmod 0775 "$work/etc"
run check-config "$work/etc/open.toml"
expect_status 1 "group-writable directory"
expect_err "directory '$work/etc' is writable by group or others (mode 0775)" "group-writable directory"
chmod 0755 "$work/etc"
run check-config "$work/etc/open.toml"
expect_status 0 "fixed"
run check-config "$work/etc"
expect_status 1 "a directory"
expect_err "configuration file '$work/etc' is not a regular file but a directory: give the path of the TOML file" "a directory"
if [ "$(id -u)" -eq 0 ]; then
    chown nobody "$work/etc/open.toml"
    run check-config "$work/etc/open.toml"
    expect_status 1 "another owner"
    expect_err "configuration file '$work/etc/open.toml' belongs to uid $(id -u nobody); make it root's" "another owner"
    # Root's other commands refuse it too.
    run --config "$work/etc/open.toml" catalog list
    expect_status 1 "root's catalog list"
    expect_err "belongs to uid $(id -u nobody)" "root's catalog list"
fi

mkfifo "$work/fifo.toml"
run check-config "$work/fifo.toml"    # must not wait for a writer
expect_status 1 "a fifo"
expect_err "configuration file '$work/fifo.toml' is not a regular file" "a fifo"

# Default file: --config, then $DLSTAGE_CONFIG.
run --config "$data/broken.toml" check-config
expect_status 1 "--config"
DLSTAGE_CONFIG="$top_srcdir/etc/dlstage.toml" run check-config
expect_status 0 "DLSTAGE_CONFIG"

finish
