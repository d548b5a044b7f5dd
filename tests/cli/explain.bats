#!/usr/bin/env bats
# dlstage check-config --explain: every tier key's value for a job and where
# it comes from (default, tiers.NAME, overrides[N]); and [[overrides]]
# problems reported like any other.
load helpers

write_config() {
    mkdir -p "$work/etc"
    cat >"$work/etc/dlstage.toml" <<'TOML'
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "50%"

[tiers.ssd]
path = "/local/dlstage/%j"
max_inodes = 1000

[[overrides]]
partition = "gpu"
tier = "shm"
max_bytes = "80%"

[[overrides]]
user = "root"
tier = "shm"
max_inodes = 7
charge_memory = false
TOML
    config="$work/etc/dlstage.toml"
}

@test "check-config counts the overrides" {
    write_config
    run_dlstage check-config "$config"
    expect_status 0
    expect_out "OK (2 tiers, 0 datasets, 2 overrides)"
}

@test "--explain without a job: the tiers' own values and defaults" {
    write_config
    run_dlstage check-config --explain "$config"
    expect_status 0
    expect_out "# the tiers of $config for a job with partition=(unknown), account=(unknown), user=(unknown), groups=(none)"
    expect_out "[tiers.shm]"
    expect_out 'max_bytes      = 50%                      # tiers.shm'
    expect_out 'scope          = node                     # default'
    expect_out 'charge_memory  = true                     # default (a node tier under /dev/shm)'
    expect_out 'max_inodes     = 1000                     # tiers.ssd'
    expect_out 'charge_memory  = false                    # default (not under /dev/shm)'
}

@test "--explain --partition: the partition's override, with its place and line" {
    write_config
    run_dlstage check-config --explain --partition gpu "$config"
    expect_status 0
    expect_out 'max_bytes      = 80%                      # overrides[0] (partition=gpu, line 9)'
    expect_out 'max_inodes     = none                     # default'
}

@test "--explain --user: the user's override and the user's groups" {
    write_config
    run_dlstage check-config --explain --partition=gpu --user root "$config"
    expect_status 0
    expect_out "user=root, groups=root"
    expect_out 'max_bytes      = 80%                      # overrides[0] (partition=gpu, line 9)'
    expect_out 'max_inodes     = 7                        # overrides[1] (user=root, line 14)'
    expect_out 'charge_memory  = false                    # overrides[1] (user=root, line 14)'
}

@test "--explain --json" {
    write_config
    run_dlstage check-config --explain --json --partition gpu --group ml "$config"
    expect_status 0
    printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["job"] == {"partition": "gpu", "groups": ["ml"]}, d["job"]
assert d["tiers"]["shm"]["max_bytes"] == {"value": "80%", "origin": "overrides[0] (partition=gpu, line 9)"}, d
assert d["tiers"]["ssd"]["max_inodes"]["origin"] == "tiers.ssd"
' || fail "unexpected JSON"
}

@test "job options without --explain are a usage error" {
    write_config
    run_dlstage check-config --partition gpu "$config"
    expect_status 2
    expect_err "dlstage: check-config: --partition, --account, --user, --group and --json go with --explain"
    run_dlstage check-config --explain "$config" --partition
    expect_status 2
}

@test "an override of a key that shapes the tier is refused with the reason" {
    write_config
    printf '\n[[overrides]]\naccount = "p1"\ntier = "shm"\ncleanup = "keep"\nmax_byte = "1G"\n' >>"$config"
    run_dlstage check-config "$config"
    expect_status 1
    expect_err "dlstage.toml:23: overrides[2].cleanup: cannot be overridden"
    expect_err "dlstage.toml:24: overrides[2].max_byte: unknown key (did you mean 'max_bytes'?)"
    expect_err "overrides[2]: changes nothing: give at least one of max_bytes, max_inodes, charge_memory"
}
