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

run check-config "$top_srcdir/etc"
expect_status 1 "a directory"
expect_err "dlstage: configuration file $top_srcdir/etc is a directory: give the path of the TOML file" "a directory"

mkfifo "$work/fifo.toml"
run check-config "$work/fifo.toml"    # must not wait for a writer
expect_status 1 "a fifo"
expect_err "dlstage: configuration file $work/fifo.toml is not a regular file" "a fifo"

# Default file: --config, then $DLSTAGE_CONFIG.
run --config "$data/broken.toml" check-config
expect_status 1 "--config"
DLSTAGE_CONFIG="$top_srcdir/etc/dlstage.toml" run check-config
expect_status 0 "DLSTAGE_CONFIG"

finish
