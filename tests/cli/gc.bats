#!/usr/bin/env bats
# dlstage gc on a synthetic tier and state_dir in a temporary directory,
# with stand-ins for squeue and scontrol first on PATH (no Slurm runs in
# make check; the real ones answer in tests/integration/52-gc.bats).  Job
# 12 runs, job 13 completed, job 14 Slurm no longer knows; no job has
# processes on this node.
load helpers

setup() {
    make_work
    tier="$work/tier"
    state="$work/state"
    mkdir -p "$work/bin" "$tier" "$state/jobs"
    cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$state"
gc_grace = 0
gc_records_days = 30
[tiers.shm]
path = "$tier/%j"
[tiers.kept]
path = "$work/kept/%u"
cleanup = "keep"
TOML
    squeue_says '12|N/A|N/A|RUNNING|n1\n13|N/A|N/A|COMPLETED|n1'
    steps_here ''
    for job in 12 13 14; do
        mkdir -m 0700 "$tier/$job" "$state/jobs/$job"
        mkdir "$tier/$job/.partial-imagenet"
        echo data > "$tier/$job/.partial-imagenet/a"
        echo 'event = "epilog"' > "$state/jobs/$job/n1.epilog.toml"
    done
    chmod 0755 "$state/jobs"/*
    touch -d '40 days ago' "$state/jobs/12" "$state/jobs/13"   # 14's records are new
    sleep 1.1   # older than gc_grace = 0 once squeue is asked
}

# squeue_says TEXT: what the stand-in squeue prints (printf format).
squeue_says() {
    printf '#!/bin/sh\nprintf "%s\\n"\n' "$1" > "$work/bin/squeue"
    chmod 0755 "$work/bin/squeue"
}

# steps_here 'PID JOBID ...' rows: what the stand-in scontrol listpids prints.
steps_here() {
    if [ -z "$1" ]; then
        printf '#!/bin/sh\necho "PID JOBID STEPID LOCALID GLOBALID"\necho "No job steps exist on this node."\nexit 1\n'
    else
        printf '#!/bin/sh\necho "PID JOBID STEPID LOCALID GLOBALID"\necho "%s"\n' "$1"
    fi > "$work/bin/scontrol"
    chmod 0755 "$work/bin/scontrol"
}

gc() { PATH="$work/bin:$PATH" run_dlstage -c "$work/dlstage.toml" gc --node n1 "$@"; }

need_root() { [ "$(id -u)" -eq 0 ] || skip "gc needs root"; }

@test "gc: help and usage errors" {
    run_dlstage gc --help
    expect_status 0
    expect_out "Usage: dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]"
    expect_out "3 Slurm could not be asked (nothing removed)"
    run_dlstage gc --bogus
    expect_status 2
    expect_err "dlstage: gc: unknown option '--bogus'"
    run_dlstage gc --dryrun
    expect_status 2
    expect_err "dlstage: gc: unknown option '--dryrun' (did you mean '--dry-run'?)"
    run_dlstage gc --tier
    expect_status 2
    expect_err "dlstage: gc: option '--tier' needs a value"
    run_dlstage gc --tier=
    expect_status 2
    expect_err "dlstage: gc: --node and --tier need a NAME"
}

@test "gc: refused to anyone but root, touching nothing" {
    if [ "$(id -u)" -eq 0 ]; then
        chmod 0755 "$work"
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$DLSTAGE" -c "$work/dlstage.toml" gc \
            >"$work/out" 2>"$work/err" && status=0 || status=$?
        out=$(cat "$work/out"); err=$(cat "$work/err")
    else
        gc
    fi
    expect_status 1
    expect_err "dlstage: gc: must run as root: it removes other users' job directories"
    [ -d "$tier/13" ] || fail "a directory went"
}

@test "gc --dry-run: says what it would remove and why, removes nothing" {
    need_root
    gc --dry-run -v
    expect_status 0
    expect_out "keep $tier/12 (job 12, tier 'shm'): its job is still known to Slurm (pending, running or completing)"
    expect_out "would remove $tier/13 (job 13, tier 'shm'): its job ended (an epilog that did not finish, or a rebooted node)"
    expect_out "would remove $tier/14 (job 14, tier 'shm'): its job ended"
    expect_out "keep $state/jobs/12 (job 12, records): its job is still known to Slurm"
    expect_out "would remove $state/jobs/13 (job 13, records): its job ended; last written 40 d ago (more than 30 d)"
    expect_out "keep $state/jobs/14 (job 14, records): its job ended; last written"
    expect_out "gc on n1 (dry run): would remove 3, kept 3, 0 problems; nothing removed"
    for d in "$tier/12" "$tier/13/.partial-imagenet/a" "$tier/14" "$state/jobs/13/n1.epilog.toml"; do
        [ -e "$d" ] || fail "$d went in a dry run"
    done
}

@test "gc: removes the ended jobs' directories and old records, spares the running job" {
    need_root
    gc
    expect_status 0
    expect_out "removed $tier/13 (job 13, tier 'shm'): its job ended"
    expect_out "removed $tier/14 (job 14, tier 'shm'): its job ended"
    expect_out "removed $state/jobs/13 (job 13, records)"
    expect_out "gc on n1: removed 3, kept 3, 0 problems"
    printf '%s\n' "$out" | grep -q "^keep" && fail "kept lines without -v"
    [ -e "$tier/12/.partial-imagenet/a" ] || fail "the running job's data went"
    [ ! -e "$tier/13" ] && [ ! -e "$tier/14" ] || fail "an ended job's directory stayed"
    [ -d "$state/jobs/12" ] && [ -d "$state/jobs/14" ] && [ ! -e "$state/jobs/13" ] || fail "records: $(ls "$state/jobs")"
    [ -d "$tier" ] || fail "the tier root went"
    gc   # again: nothing left to do
    expect_status 0
    expect_out "gc on n1: removed 0, kept 3, 0 problems"
}

@test "gc: a job with processes on this node keeps its directory, whatever slurmctld says" {
    need_root
    steps_here '4242 13 batch 0 0'
    gc -v --tier shm
    expect_status 0
    expect_out "keep $tier/13 (job 13, tier 'shm'): its job still has processes on this node (scontrol listpids)"
    expect_out "removed $tier/14 (job 14, tier 'shm')"
    [ -e "$tier/13/.partial-imagenet/a" ] || fail "13 went"
}

@test "gc: a step socket a crash left (slurmstepd gone) does not stop gc; a step that answers still keeps its job" {
    need_root
    # scontrol listpids exits 1 for the stale socket, and lists the live steps.
    printf '#!/bin/sh\necho "PID JOBID STEPID LOCALID GLOBALID"\necho "4242 13 batch 0 0"\necho "Unable to connect to slurmstepd: Connection refused" >&2\nexit 1\n' > "$work/bin/scontrol"
    gc -v --tier shm
    expect_status 0
    expect_out "keep $tier/13 (job 13, tier 'shm'): its job still has processes on this node (scontrol listpids)"
    expect_out "removed $tier/14 (job 14, tier 'shm')"
    # Any other failure of listpids still stops gc.
    printf '#!/bin/sh\necho "PID JOBID STEPID LOCALID GLOBALID"\necho "Unable to connect to slurmstepd: Connection timed out" >&2\nexit 1\n' > "$work/bin/scontrol"
    gc
    expect_status 3
    expect_err "dlstage: gc: cannot tell which jobs still run: scontrol listpids exited with status 1: Unable to connect to slurmstepd: Connection timed out; nothing removed"
    [ -d "$tier/13" ] || fail "13 went"
}

@test "gc: without Slurm's answer nothing is removed" {
    need_root
    printf '#!/bin/sh\necho "squeue: error: Unable to contact slurm controller" >&2\nexit 1\n' > "$work/bin/squeue"
    gc
    expect_status 3
    expect_err "dlstage: gc: cannot tell which jobs still run: squeue exited with status 1: squeue: error: Unable to contact slurm controller; nothing removed"
    expect_no_out
    [ -d "$tier/13" ] && [ -d "$tier/14" ] && [ -d "$state/jobs/13" ] || fail "something went"
}

@test "gc: a tier root others may write is skipped, never repaired" {
    need_root
    chmod 0777 "$tier"
    gc --tier shm
    expect_status 1
    expect_err "dlstage: gc: tier 'shm' skipped: tier root $tier is writable by group or others (mode 0777); refusing to use it"
    expect_out "gc on n1: removed 0, kept 0, 1 problem"
    [ -d "$tier/13" ] || fail "removed from an untrusted tier"
    [ "$(stat -c %a "$tier")" = 777 ] || fail "the tier root was repaired"
    [ -d "$state/jobs/13" ] || fail "--tier touched the records"
}

@test "gc --tier: an unknown tier is a usage error, a kept tier is none of gc's" {
    need_root
    gc --tier nope
    expect_status 2
    expect_err "dlstage: gc: no tier 'nope' in $work/dlstage.toml (tiers: kept, shm)"
    mkdir -p "$work/kept/alice"
    gc --tier kept
    expect_status 0
    expect_out "tier 'kept' has cleanup = \"keep\": its data outlives jobs, nothing there is gc's"
    expect_out "gc on n1: removed 0, kept 0, 0 problems"
    [ -d "$work/kept/alice" ] || fail "a kept tier's directory went"
}
