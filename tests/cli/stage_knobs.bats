#!/usr/bin/env bats
# dlstage stage checks every DLSTAGE_* tuning knob, and the job id and node
# count Slurm gave it, before it launches anything: a malformed value is one
# line naming the variable and exit 1.  A fake launcher records whether it
# ran and with which options.
load helpers

setup() {
    make_work
    launched="$work/launched"
    cat > "$work/launcher" <<SH2
#!/bin/sh
printf '%s\n' "\$@" > "$launched"
SH2
    chmod +x "$work/launcher"
    cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$work/state"
launcher = "$work/launcher"
[tiers.shm]
path = "$work/shm/%j"
[datasets.ds]
source = "$work/ds"
tiers = ["shm"]
TOML
}

stage() { SLURM_JOB_ID=${JOB:-42} SLURM_JOB_NUM_NODES=${NODES:-2} run_dlstage --config "$work/dlstage.toml" stage --quiet ds; }

@test "valid knobs reach the stager as options" {
    DLSTAGE_CHUNK_SIZE=8M DLSTAGE_WINDOW=8 DLSTAGE_READERS=2 DLSTAGE_WRITERS=3 DLSTAGE_RATE_LIMIT=200M \
        DLSTAGE_PROGRESS=0.5 DLSTAGE_EXCHANGE=bcast stage
    expect_status 0
    [ -f "$launched" ] || fail "the launcher did not run"
    opts=$(tr '\n' ' ' < "$launched")
    case "$opts" in
    *"--jobid=42 --nodes=2 "*"--chunk-size 8M --window 8 --readers 2 --writers 3 --rate-limit 200M --progress 0.5 --exchange bcast ds ") ;;
    *) fail "launcher got: $opts" ;;
    esac
}

# refused VARIABLE VALUE EXPECTED-MESSAGE: a malformed knob is refused,
# naming the variable, and nothing is launched.
refused() {
    export "$1=$2"
    stage
    unset "$1"
    expect_status 1
    expect_err "dlstage: $1: $3"
    [ ! -e "$launched" ] || fail "$1=$2: the launcher ran"
}

@test "DLSTAGE_WINDOW=4x is refused, with the line the user guide and dlstage(1) show" {
    refused DLSTAGE_WINDOW 4x "invalid value '4x': expected a whole number from 1 to 256"
    expected=$(doc_transcript --message "$top_srcdir/docs/user-guide.md" '^dlstage: DLSTAGE_WINDOW: invalid value')
    [ "$err" = "$expected" ] || fail "the user guide shows: $expected"
    expected=$(doc_transcript --message "$top_srcdir/man/dlstage.1" '^dlstage: DLSTAGE_WINDOW: invalid value')
    [ "$err" = "$expected" ] || fail "dlstage(1) shows: $expected"
}
@test "DLSTAGE_WINDOW=0 is refused" {
    refused DLSTAGE_WINDOW 0 "invalid value '0': expected a whole number from 1 to 256"
}
@test "DLSTAGE_READERS=-1 is refused" {
    refused DLSTAGE_READERS -1 "invalid value '-1': expected a whole number from 1 to 256"
}
@test "DLSTAGE_WRITERS beyond 64 bits is refused" {
    refused DLSTAGE_WRITERS 99999999999999999999 "invalid value '99999999999999999999': expected a whole number from 1 to 256"
}
@test "DLSTAGE_CHUNK_SIZE=4Mx is refused" {
    refused DLSTAGE_CHUNK_SIZE 4Mx "invalid size '4Mx': unknown unit 'Mx'"
}
@test "DLSTAGE_CHUNK_SIZE=2G is refused" {
    refused DLSTAGE_CHUNK_SIZE 2G "invalid size '2G': expected a size from 4.0 KiB to 1.0 GiB"
}
@test "DLSTAGE_RATE_LIMIT=200 is refused" {
    refused DLSTAGE_RATE_LIMIT 200 "invalid size '200': expected a size of at least 64.0 KiB"
}
@test "DLSTAGE_PROGRESS=1e1 is refused" {
    refused DLSTAGE_PROGRESS 1e1 "invalid value '1e1': expected a number of seconds from 0.1 to 86400"
}
@test "DLSTAGE_PROGRESS=nan is refused" {
    refused DLSTAGE_PROGRESS nan "invalid value 'nan': expected a number of seconds"
}
@test "DLSTAGE_EXCHANGE=rings is refused" {
    refused DLSTAGE_EXCHANGE rings "invalid value 'rings': expected ring or bcast"
}

# The job id and node count go into paths and srun's options: checked too.
@test "a malformed SLURM_JOB_ID is refused" {
    JOB=42x stage
    expect_status 1
    expect_err "dlstage: SLURM_JOB_ID: invalid value '42x': expected a whole number"
    [ ! -e "$launched" ] || fail "the launcher ran"
}

@test "a malformed SLURM_JOB_NUM_NODES is refused" {
    NODES=-3 stage
    expect_status 1
    expect_err "dlstage: SLURM_JOB_NUM_NODES: invalid value '-3': expected a whole number"
    [ ! -e "$launched" ] || fail "the launcher ran"
}
