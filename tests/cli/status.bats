#!/usr/bin/env bats
# dlstage status: the stager's progress and failure records of jobs, as a
# table and as JSON; explicit job ids without records are an error.  Slurm
# is a stand-in squeue on PATH (what it prints: $work/squeue.txt, its exit
# status: $work/squeue.rc); the real one is asked in
# tests/integration/49-status.bats.
load helpers

# Job 12: one dataset half way, one ready; job 7: a failed node; job 9: no
# records.
setup() {
    make_work
    unset SLURM_JOB_ID   # outside a job unless a test says otherwise
    me=$(id -un)
    state="$work/state"
    mkdir -p "$work/bin"
    cat > "$work/bin/squeue" <<SH
#!/bin/sh
cat "$work/squeue.txt"
exit \$(cat "$work/squeue.rc" 2>/dev/null || echo 0)
SH
    chmod +x "$work/bin/squeue"
    PATH="$work/bin:$PATH"
    printf '%s\n' '7|N/A|N/A|RUNNING|n[1-4]' '12|N/A|N/A|RUNNING|n[1-4]' '31|N/A|N/A|RUNNING|n1' \
        '32|N/A|N/A|RUNNING|n1' > "$work/squeue.txt"
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
row() { printf '%s\n' "$out" | grep "^$1 *[^ ]* *$2 " | tr -s ' '; }

# The output format follows squeue (its columns,
# Slurm's units); the failure lines stay under the table.
@test "all jobs: 7 before 12, a row per dataset, a line per failure" {
    show_status
    expect_status 0
    [ "$(printf '%s\n' "$out" | head -n1 | tr -s ' ')" = "JOBID USER DATASET TIER NODES STATE DONE RATE SIZE FILES TIME NODELIST(REASON)" ] ||
        fail "header: $(printf '%s\n' "$out" | head -n1)"
    [ "$(row 12 imagenet)" = "12 $me imagenet shm 4 staging 50% 256M/s 2G 1281167 0:04 n[1-4]" ] ||
        fail "staging row: $(row 12 imagenet)"
    [ "$(row 12 val)" = "12 $me val ssd 4 ready 100% 2M/s 1M 10 0:00 n[1-4]" ] || fail "ready row: $(row 12 val)"
    [ "$(row 7 -)" = "7 $me - - 0 failed - - - - 0:00 (n3: staging big to shm failed on n3: no room)" ] ||
        fail "failed row: $(row 7 -)"
    [ "$(printf '%s\n' "$out" | sed -n 2p | cut -d' ' -f1)" = 7 ] || fail "7 first"
    expect_out "job 7: failed on n3: staging big to shm failed on n3: no room"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "header, 3 rows, 1 failure"
}

@test "inside a job: that job only" {
    SLURM_JOB_ID=7 show_status
    expect_status 0
    [ "$(printf '%s\n' "$out" | sed -n 2p | tr -s ' ' | cut -d' ' -f1,6)" = "7 failed" ] || fail "only job 7"
    [ "$(printf '%s\n' "$out" | tail -n1)" = "job 7: failed on n3: staging big to shm failed on n3: no room" ] ||
        fail "the failure line"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] || fail "only job 7"
}

@test "JSON: meta and one record per job and dataset, ids as numbers" {
    show_status --json 12
    expect_status 0
    printf '%s' "$out" | python3 -c '
import json, sys, time
doc = json.load(sys.stdin)
assert doc["meta"]["dlstage"]["version"], doc
assert abs(doc["meta"]["time"] - time.time()) < 60, doc
assert doc["meta"]["slurm"]["asked"] is True, doc
jobs = doc["jobs"]
assert [j["job_id"] for j in jobs] == [12, 12], jobs
assert [j["dataset"] for j in jobs] == ["imagenet", "val"], jobs
j = jobs[0]
assert (j["state"], j["percent"], j["bytes_total"], j["bytes_done"], j["files"], j["nodes"]) == \
    ("staging", 50, 2147483648, 1073741824, 1281167, 4), j
assert j["nodelist"] == "n[1-4]" and j["reason"] == "" and isinstance(j["updated"], int), j
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
    expect_out 'job 31: failed on n1: forged\x0aline \x1b[31mred'
    expect_out '(n1: forged\x0aline \x1b[31mred)'
    if printf '%s' "$out" | grep -q $'\x1b'; then fail "an escape printed raw"; fi
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] || fail "header, row, failure line: nothing forged"
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
    "32 $me odd shm 0 staging - "*" - - 0:00 n1") ;;
    *) fail "hand-written record row: $(row 32 odd)" ;;
    esac
}

@test "a job id that is no number is a usage error" {
    show_status nope
    expect_status 2
    expect_err "dlstage: status: 'nope' is not a job id"
}

@test "malformed job ids are usage errors" {
    for bad in 12x 99999999999999999999 0; do
        show_status "$bad"
        expect_status 2
        expect_err "dlstage: status: '$bad' is not a job id"
    done
    # As with any getopt command: a leading '-' is an option, unless after "--".
    show_status -12
    expect_status 2
    expect_err "dlstage: status: unknown option '-1'"
    show_status -- -12
    expect_status 2
    expect_err "dlstage: status: '-12' is not a job id"
}

@test "options the getopt way: --opt=value, --opt value, abbreviations, bundles, did-you-mean" {
    show_status --format=%i -h
    expect_status 0
    show_status --form %i --nohead
    expect_status 0
    show_status -ha
    expect_status 0
    show_status --jsn
    expect_status 2
    expect_err "dlstage: status: unknown option '--jsn' (did you mean '--json'?)"
    show_status --format
    expect_status 2
    expect_err "dlstage: status: option '--format' needs a value"
    show_status --json=yes
    expect_status 2
    expect_err "dlstage: status: option '--json' takes no value"
    show_status --no
    expect_status 2
    expect_err "dlstage: status: option '--no' is ambiguous (--noheader, --node)"
    show_status -z
    expect_status 2
    expect_err "dlstage: status: unknown option '-z'"
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

# --- squeue's ways --------------------------------------------------------------

@test "-h drops the header (and the failure lines); -o picks columns with squeue's widths" {
    show_status -h -o '%.4i|%8d|%T|%p|%M' 12
    expect_status 0
    [ "$out" = "$(printf '%s\n' '  12|imagenet|staging|50%|0:04' '  12|val     |ready|100%|0:00')" ] || fail "-h -o rows"
    show_status --format='%i %d %R' --noheader 7
    [ "$out" = "7 - (n3: staging big to shm failed on n3: no room)" ] || fail "--format= --noheader"
    show_status -o '%i %Q'
    expect_status 2
    expect_err "dlstage: status: format '%i %Q': unknown field %Q (known: %i %A %u"
}

@test "-t picks states, -u users, a list of jobs" {
    show_status -h -o '%i %d' -t failed,ready
    [ "$out" = "$(printf '%s\n' '7 -' '12 val')" ] || fail "-t failed,ready"
    show_status -h -o '%i %d' -j 7,12 -t staging
    [ "$out" = "12 imagenet" ] || fail "-j 7,12 -t staging"
    show_status -h -o '%i' -u nobody-such
    [ -z "$out" ] || fail "-u another user"
    show_status -h -o '%i' -u "$me" -t failed
    [ "$out" = 7 ] || fail "-u me"
    show_status -t sleeping
    expect_status 2
    expect_err "dlstage: status: unknown state 'sleeping' (known: pending, staging, ready, reused, cache-hit, failed, cleaned, stale, unknown)"
}

@test "a job Slurm no longer knows, or that ended without an epilog record, is stale" {
    printf '%s\n' '7|N/A|N/A|RUNNING|n1' '12|N/A|N/A|CANCELLED|n[1-4]' > "$work/squeue.txt"
    show_status -h -o '%i %d %T %r' 12
    [ "$out" = "$(printf '%s\n' '12 imagenet stale the job ended (CANCELLED); no epilog record' \
        '12 val stale the job ended (CANCELLED); no epilog record')" ] || fail "ended"
    : > "$work/squeue.txt"
    show_status -h -o '%i %d %T %r' -t stale
    expect_out "12 val stale Slurm no longer knows the job; no epilog record"
    # a failure is no claim of data: it stays failed
    show_status -h -o '%i %T' 7
    [ "$out" = "7 failed" ] || fail "failed stays failed"
}

@test "Slurm cannot be asked: unknown, never a guess" {
    echo 1 > "$work/squeue.rc"
    echo "squeue: error: slurm_load_jobs error: Unable to contact slurm controller" > "$work/squeue.txt"
    show_status -h -o '%i %d %T|%r' 12
    expect_status 0
    expect_out "12 imagenet unknown|cannot ask Slurm (squeue exited with status 1"
    expect_out "the records say staging"
    show_status --json 12
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["meta"]["slurm"]["asked"] is False and "status 1" in d["meta"]["slurm"]["problem"]' <<<"$out" ||
        fail "meta.slurm"
}

# Root's outcomes in the user dir (the epilog's, the prolog's) count only
# when root wrote them: only root can make such a file here.
@test "pending from the prolog's plan, cleaned after the epilog, array task ids" {
    [ "$(id -u)" -eq 0 ] || skip "outcome records must be root's"
    mkdir -p "$state/jobs/40/user" "$state/jobs/41/user"
    cat > "$state/jobs/40/user/prolog-n1.toml" <<TOML
node = 'n1'
status = 'ready'
message = ''
user = '$me'
uid = $(id -u)
time = $now
array_job_id = '39'
array_task_id = '2'
datasets = [ { name = 'coco', tier = 'shm' } ]
TOML
    cp "$state/jobs/12/user/progress-val.toml" "$state/jobs/41/user/"
    printf "node = 'n1'\nstatus = 'cleaned'\nmessage = ''\ntime = $now\n" > "$state/jobs/41/user/epilog-n1.toml"
    echo '40|39|2|RUNNING|n1' >> "$work/squeue.txt"
    show_status -h -o '%i %A %d %T %N' -j 39,41
    [ "$out" = "$(printf '%s\n' '39_2 40 coco pending n1' '41 41 val cleaned n1')" ] || fail "pending, cleaned"
    show_status -h -o '%i' 39_2
    [ "$out" = 39_2 ] || fail "39_2"
    show_status -h -o '%i' 39_3
    expect_status 1
    expect_err "dlstage: no staging records for job 39_3"
    # Slurm forgot job 40: the prolog's record still knows its array ids
    grep -v '^40|' "$work/squeue.txt" > "$work/squeue.new" && mv "$work/squeue.new" "$work/squeue.txt"
    show_status -h -o '%i %T' 39_2
    [ "$out" = "39_2 stale" ] || fail "array ids from the record"
    # the user's own file under root's name is not the epilog's word
    chown nobody "$state/jobs/41/user/epilog-n1.toml"
    show_status -h -o '%i %T' 41
    [ "$out" = "41 stale" ] || fail "a user's epilog file counted"
}

@test "--all as a user is said to show their own only" {
    [ "$(id -u)" -ne 0 ] || skip "as a user"
    show_status --all -h -o '%i'
    expect_status 0
    expect_err "dlstage: status: the records of other users' jobs are theirs (mode 0700): showing your own only"
}

@test "--node: each tier's space, limits and entries on this node; another node is refused" {
    [ "$(id -u)" -eq 0 ] || skip "tier roots must be root's"
    cat >> "$work/dlstage.toml" <<TOML
max_bytes = "1G"
max_inodes = 1000
[tiers.ssd]
path = "$work/ssd/%j"
TOML
    sed -i "s|^path = \"/dev/shm/dlstage/%j\"|path = \"$work/shm/%j\"|" "$work/dlstage.toml"
    mkdir -p "$work/shm/77" "$work/shm/78"
    chown nobody "$work/shm/78"
    SLURMD_NODENAME=n5 show_status --node n5
    expect_status 0
    printf '%s\n' "$out" | tr -s ' ' | grep -q "^shm node $work/shm [0-9.]*[KMGT]* [0-9.]*[KMGT] 1G [0-9-]* [0-9-]* 1000 2 0$" ||
        fail "shm row"
    printf '%s\n' "$out" | tr -s ' ' | grep -q "^ssd node $work/ssd - - - - - - - 0$" || fail "ssd row"
    expect_out "tier ssd: $work/ssd does not exist"
    printf '%s\n' "$out" | tr -s ' ' | grep -qx "shm 78 nobody directory" || fail "entry 78"
    SLURMD_NODENAME=n5 show_status --node n5 --json
    python3 -c '
import json,sys
d = json.load(sys.stdin)
assert d["node"] == "n5" and d["meta"]["dlstage"]["version"], d
shm = [t for t in d["tiers"] if t["tier"] == "shm"][0]
assert shm["bytes_limit"] == 2**30 and shm["inodes_limit"] == 1000, shm
assert [e["name"] for e in shm["entries"]] == ["77", "78"] and shm["entries"][1]["owner"] == "nobody", shm
assert shm["cache_entries"] == [], shm
' <<<"$out" || fail "node JSON"
    SLURMD_NODENAME=n5 show_status --node n6
    expect_status 1
    expect_err "dlstage: status --node n6: this is n5, and a node's tiers are seen on the node itself: run 'srun -w n6 dlstage status --node n6'"
}

@test "status --help names every state and every -o field; -h is --noheader, not help" {
    show_status --help
    expect_status 0
    expect_out "pending, staging (DONE percent, RATE), ready, reused, cache-hit, failed (with the"
    expect_out "Fields for -o: %i JOBID %A JOBID %u USER %d DATASET %P TIER %D NODES %T STATE"
    show_status -h 12
    expect_status 0
    printf '%s\n' "$out" | { ! grep -q '^JOBID'; } || fail "-h printed the header"
}

@test "a split dataset: its tier with :split, each node's share in the JSON" {
    mkdir -p "$state/jobs/40/user"
    printf '%s\n' '40|N/A|N/A|RUNNING|n[1-3]' >> "$work/squeue.txt"
    cat > "$state/jobs/40/user/progress-in21k.toml" <<TOML
dataset = 'in21k'
tier = 'shm'
state = 'ready'
nodes = 3
bytes_total = 3145728
bytes_done = 3145728
files_total = 25
elapsed_s = 1.0
bytes_per_s = 3145728.0
eta_s = 0.0
time = $now
placement = 'split'
shares = [1048576, 1048576, 1048576]
TOML
    show_status 40
    expect_status 0
    [ "$(row 40 in21k)" = "40 $me in21k shm:split 3 ready 100% 3M/s 3M 25 0:01 n[1-3]" ] || fail "split row: $(row 40 in21k)"
    show_status --json 40 12
    expect_status 0
    printf '%s' "$out" | python3 -c '
import json, sys
jobs = {(j["job_id"], j["dataset"]): j for j in json.load(sys.stdin)["jobs"]}
j = jobs[(40, "in21k")]
assert (j["tier"], j["placement"], j["shares"]) == ("shm", "split", [1048576] * 3), j
assert jobs[(12, "val")]["placement"] == "whole" and "shares" not in jobs[(12, "val")], jobs
' || fail "json content"
}
