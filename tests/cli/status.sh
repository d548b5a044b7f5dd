#!/bin/sh
# dlstage status: the stager's progress and failure records of jobs, as a
# table and as JSON; explicit job ids without records are an error.
. "${top_srcdir:-.}/tests/cli/lib.sh"
set -e

state="$work/state"
cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$state"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
TOML
now=$(date +%s)
mkdir -p "$state/jobs/7/user" "$state/jobs/12/user" "$state/jobs/9"
# job 12: one dataset half way, one ready; job 7: a failed node
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

# all jobs (outside a job): 7 before 12, job 9 has no records
unset SLURM_JOB_ID || true
run --config "$work/dlstage.toml" status
expect_status 0 "status of all jobs"
row() { printf '%s\n' "$out" | grep "^$1 *$2 " | tr -s ' '; }
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
expect_out "job 7: failed on n3: staging big to shm failed on n3: no room" "failure line"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 4 ] || fail "header, 2 rows, 1 failure"

# inside a job: that job only
SLURM_JOB_ID=7 run --config "$work/dlstage.toml" status
expect_status 0 "current job"
[ "$out" = "job 7: failed on n3: staging big to shm failed on n3: no room" ] || fail "only job 7"

# JSON
run --config "$work/dlstage.toml" status --json 12
expect_status 0 "json"
printf '%s' "$out" | python3 -c '
import json, sys
jobs = json.load(sys.stdin)
assert [j["job_id"] for j in jobs] == ["12"], jobs
assert sorted(d["dataset"] for d in jobs[0]["datasets"]) == ["imagenet", "val"]
assert jobs[0]["failures"] == []
' || fail "json content"

# explicit jobs without records: an error naming them
run --config "$work/dlstage.toml" status 12 9 404
expect_status 1 "unknown jobs"
expect_err "dlstage: no staging records for job 9, 404 in $state/jobs" "names the jobs"
[ -n "$(row 12 imagenet)" ] || fail "known job still shown"

# nothing at all
SLURM_JOB_ID=404 run --config "$work/dlstage.toml" status
expect_status 0 "no records in the current job"
[ "$out" = "no staging records for job 404 in $state/jobs" ] || fail "empty message"

# A job's user owns its records: a fifo, a device-like name, a symlink to
# a secret, names and values with control characters.  Status (as root too)
# must neither block nor print them raw.
mkdir -p "$state/jobs/31/user" "$state/jobs/$(printf 'x\ny')/user"
mkfifo "$state/jobs/31/user/progress-fifo.toml"
ln -s /etc/shadow "$state/jobs/31/user/progress-shadow.toml"
cat > "$state/jobs/31/user/failure-n1.toml" <<'TOML'
node = 'n1'
message = "forged\nline \u001b[31mred"
TOML
# run_bounded ARGS...: run, but a dlstage that blocks is stopped after 10 s.
run_bounded() {
    set +e
    timeout 10 "$DLSTAGE" "$@" >"$work/out" 2>"$work/err"
    status=$?
    set -e
    out=$(cat "$work/out"); err=$(cat "$work/err")
    [ "$status" -ne 124 ] || fail "status blocked on a fifo among the records"
}
run_bounded --config "$work/dlstage.toml" status 31
expect_status 0 "hostile records"
[ "$out" = 'job 31: failed on n1: forged\x0aline \x1b[31mred' ] || fail "control characters not escaped"
run_bounded --config "$work/dlstage.toml" status
expect_status 0 "odd job directory names are skipped"
printf '%s\n' "$out" | grep -q '^y' && fail "a job directory name printed raw"

# A record its user wrote by hand: odd values print, never crash (in the
# sanitizer build an overflow here would abort).
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
run --config "$work/dlstage.toml" status 32
expect_status 0 "a hand-written record"
case "$(row 32 odd)" in
"32 odd shm staging 0 0 B / 0 B (100%) 9223372036854775807 "*) ;;
*) fail "hand-written record row: $(row 32 odd)" ;;
esac

run --config "$work/dlstage.toml" status nope
expect_status 2 "bad argument"
expect_err "dlstage: status: 'nope' is not a job id" "usage"
for bad in 12x -12 99999999999999999999 0; do
    run --config "$work/dlstage.toml" status "$bad"
    expect_status 2 "job id $bad"
    expect_err "dlstage: status: '$bad' is not a job id" "job id $bad"
done
run --config "$work/dlstage.toml" status 012
expect_status 0 "job id with a leading zero"
[ -n "$(row 12 imagenet)" ] || fail "012 is job 12"
SLURM_JOB_ID=../12 run --config "$work/dlstage.toml" status
expect_status 1 "malformed SLURM_JOB_ID"
expect_err "dlstage: SLURM_JOB_ID: invalid value '../12': expected a whole number" "malformed SLURM_JOB_ID"

finish
