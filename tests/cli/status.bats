#!/usr/bin/env bats
# dlstage status: the stager's progress and failure records of jobs, as a
# table and as JSON; explicit job ids without records are an error.
load helpers

# Job 12: one dataset half way, one ready; job 7: a failed node; job 9: no
# records.
setup() {
    make_work
    unset SLURM_JOB_ID   # outside a job unless a test says otherwise
    state="$work/state"
    cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$state"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
TOML
    now=$(date +%s)
    mkdir -p "$state/jobs/7/user" "$state/jobs/12/user" "$state/jobs/9"
    cat > "$state/jobs/12/user/progress-imagenet.toml" <<TOML
dataset = 'imagenet'
tier = 'shm'
state = 'staging'
nodes = 4
bytes_total = 2147483648
bytes_done = 1073741824
files_total = 1281167
elapsed_s = 4.0
bytes_per_s = 268435456.0
eta_s = 4.0
time = $((now - 3))
TOML
    cat > "$state/jobs/12/user/progress-val.toml" <<TOML
dataset = 'val'
tier = 'ssd'
state = 'ready'
nodes = 4
bytes_total = 1048576
bytes_done = 1048576
files_total = 10
elapsed_s = 0.5
bytes_per_s = 2097152.0
eta_s = 0.0
time = $((now - 60))
TOML
    cat > "$state/jobs/7/user/failure-n3.toml" <<TOML
node = 'n3'
message = "staging big to shm failed on n3: no room"
TOML
    printf 'garbage [' > "$state/jobs/7/user/progress-broken.toml"   # being rewritten: skipped
}

show_status() { run_dlstage --config "$work/dlstage.toml" status "$@"; }
# row JOB DATASET: the table row, blanks squeezed.
row() { printf '%s\n' "$out" | grep "^$1 *$2 " | tr -s ' '; }

@test "all jobs: 7 before 12, a row per dataset, a line per failure" {
    show_status
    expect_status 0
    [ "$(printf '%s\n' "$out" | head -n1 | tr -s ' ')" = "JOB DATASET TIER STATE NODES DONE FILES RATE ETA UPDATED" ] ||
        fail "header: $(printf '%s\n' "$out" | head -n1)"
    case "$(row 12 imagenet)" in
    "12 imagenet shm staging 4 1.0 GiB / 2.0 GiB (50%) 1281167 0.27 GB/s 4 s "[0-9]" s ago") ;;
    *) fail "staging row: $(row 12 imagenet)" ;;
    esac
    case "$(row 12 val)" in
    "12 val ssd ready 4 1.0 MiB / 1.0 MiB (100%) 10 0.00 GB/s - "6[0-9]" s ago") ;;
    *) fail "ready row: $(row 12 val)" ;;
    esac
    expect_out "job 7: failed on n3: staging big to shm failed on n3: no room"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 4 ] || fail "header, 2 rows, 1 failure"
}

@test "inside a job: that job only" {
    SLURM_JOB_ID=7 show_status
    expect_status 0
    [ "$out" = "job 7: failed on n3: staging big to shm failed on n3: no room" ] || fail "only job 7"
}

@test "JSON" {
    show_status --json 12
    expect_status 0
    printf '%s' "$out" | python3 -c '
import json, sys
jobs = json.load(sys.stdin)
assert [j["job_id"] for j in jobs] == ["12"], jobs
assert sorted(d["dataset"] for d in jobs[0]["datasets"]) == ["imagenet", "val"]
assert jobs[0]["failures"] == []
' || fail "json content"
}

@test "explicit jobs without records: an error naming them, the known job still shown" {
    show_status 12 9 404
    expect_status 1
    expect_err "dlstage: no staging records for job 9, 404 in $state/jobs"
    [ -n "$(row 12 imagenet)" ] || fail "known job still shown"
}

@test "no records in the current job" {
    SLURM_JOB_ID=404 show_status
    expect_status 0
    [ "$out" = "no staging records for job 404 in $state/jobs" ] || fail "empty message"
}

# A job's user owns its records: a fifo, a device-like name, a symlink to
# a secret, names and values with control characters.  Status (as root too)
# must neither block nor print them raw.
plant_hostile_records() {
    mkdir -p "$state/jobs/31/user" "$state/jobs/$(printf 'x\ny')/user"
    mkfifo "$state/jobs/31/user/progress-fifo.toml"
    ln -s /etc/shadow "$state/jobs/31/user/progress-shadow.toml"
    cat > "$state/jobs/31/user/failure-n1.toml" <<'TOML'
node = 'n1'
message = "forged\nline \u001b[31mred"
TOML
}
# show_status_bounded ARGS...: show_status, but a dlstage that blocks is stopped after 10 s.
show_status_bounded() {
    timeout 10 "$DLSTAGE" --config "$work/dlstage.toml" status "$@" >"$work/out" 2>"$work/err" && status=0 || status=$?
    out=$(cat "$work/out"); err=$(cat "$work/err")
    [ "$status" -ne 124 ] || fail "status blocked on a fifo among the records"
}

@test "hostile records: no blocking on a fifo, control characters escaped" {
    plant_hostile_records
    show_status_bounded 31
    expect_status 0
    [ "$out" = 'job 31: failed on n1: forged\x0aline \x1b[31mred' ] || fail "control characters not escaped"
}

@test "hostile records: odd job directory names are skipped" {
    plant_hostile_records
    show_status_bounded
    expect_status 0
    if printf '%s\n' "$out" | grep -q '^y'; then fail "a job directory name printed raw"; fi
}

# A record its user wrote by hand: odd values print, never crash (in the
# sanitizer build an overflow here would abort).
@test "a hand-written record with odd values" {
    mkdir -p "$state/jobs/32/user"
    cat > "$state/jobs/32/user/progress-odd.toml" <<TOML
dataset = 'odd'
tier = 'shm'
state = 'staging'
nodes = 'many'
bytes_total = 1e300
bytes_done = -5
files_total = 9223372036854775807
bytes_per_s = 1e308
eta_s = -1e308
time = -9223372036854775808
TOML
    show_status 32
    expect_status 0
    case "$(row 32 odd)" in
    "32 odd shm staging 0 0 B / 0 B (100%) 9223372036854775807 "*) ;;
    *) fail "hand-written record row: $(row 32 odd)" ;;
    esac
}

@test "a job id that is no number is a usage error" {
    show_status nope
    expect_status 2
    expect_err "dlstage: status: 'nope' is not a job id"
}

@test "malformed job ids are usage errors" {
    for bad in 12x -12 99999999999999999999 0; do
        show_status "$bad"
        expect_status 2
        expect_err "dlstage: status: '$bad' is not a job id"
    done
}

@test "a job id with a leading zero" {
    show_status 012
    expect_status 0
    [ -n "$(row 12 imagenet)" ] || fail "012 is job 12"
}

@test "a malformed SLURM_JOB_ID is refused" {
    SLURM_JOB_ID=../12 show_status
    expect_status 1
    expect_err "dlstage: SLURM_JOB_ID: invalid value '../12': expected a whole number"
}
