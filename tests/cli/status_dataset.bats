#!/usr/bin/env bats
# dlstage status --dataset NAME: the copies of a dataset kept in shared
# tiers, with their purge date; as JSON; the caller's own, root's all.
load helpers

# A shared tier in $work/scratch with a copy of 'imagenet' for two users:
# the caller's, last checked with its oldest file 80 days old, and another's.
setup() {
    make_work
    me=$(id -un)
    cat > "$work/dlstage.toml" <<TOML
[site]
state_dir = "$work/state"
[tiers.scratch]
path = "$work/scratch/%u"
scope = "shared"
cleanup = "keep"
purge_days = 90
warn_days = 14
[datasets.imagenet]
source = "/p/imagenet"
tiers = ["scratch"]
[datasets.coco]
source = "/p/coco"
tiers = ["scratch"]
TOML
    now=$(date +%s)
    oldest=$((now - 80 * 86400))
    for user in "$me" zz-other; do
        mkdir -p "$work/scratch/$user"
        cat > "$work/scratch/$user/.ready-imagenet.toml" <<TOML
dataset = 'imagenet'
tier = 'scratch'
source = '/p/imagenet'
path = '$work/scratch/$user/imagenet'
bytes = 1073741824
files = 1281
identity = '0123456789abcdef'
mode = 'copy'
entries = 1300
made = $((now - 86400))
made_by = '41'
uses = 3
last_use = $now
last_job = '44'
oldest = $oldest
repaired = 0
TOML
    done
    purge_day=$(date -d "@$((oldest + 90 * 86400))" +%F)
}

@test "the caller's copy with size, files, uses and the day the purge takes it" {
    run_dlstage --config "$work/dlstage.toml" status --dataset imagenet
    expect_status 0
    expect_out "DATASET   TIER     USER"
    printf '%s\n' "$out" | grep -Eq "^imagenet +scratch +$me +1\.0 GiB +1281 .* 3 +$purge_day +$work/scratch/$me/imagenet$" ||
        fail "no row for $me with purge day $purge_day"
    if [ "$(id -u)" -ne 0 ]; then
        printf '%s\n' "$out" | { ! grep -q zz-other; } || fail "another user's copy shown"
    else
        expect_out "zz-other"  # root sees every user's
    fi
}

@test "as JSON, with the purge date in seconds" {
    run_dlstage --config "$work/dlstage.toml" status --dataset imagenet --json
    expect_status 0
    [ "$(python3 -c 'import json,sys; c=json.load(sys.stdin)["copies"][0]; print(c["uses"], c["purge_date"] - c["made"] > 0, c["files"])' <<<"$out")" = "3 True 1281" ] ||
        fail "unexpected JSON"
}

@test "no copies, an unknown dataset, and --dataset with a job id" {
    run_dlstage --config "$work/dlstage.toml" status --dataset coco
    expect_status 0
    expect_out "no copies of 'coco' in shared tiers"
    run_dlstage --config "$work/dlstage.toml" status --dataset cocoa
    expect_status 2
    expect_err "dlstage: status: no dataset 'cocoa' in the catalog"
    run_dlstage --config "$work/dlstage.toml" status --dataset imagenet 12
    expect_status 2
    expect_err "do not go together"
}

@test "a record that is a fifo is reported, not waited on" {
    rm "$work/scratch/$me/.ready-imagenet.toml"
    mkfifo "$work/scratch/$me/.ready-imagenet.toml"
    run timeout 10 "$DLSTAGE" --config "$work/dlstage.toml" status --dataset imagenet
    [ "$status" -eq 0 ] || fail "status blocked or failed ($status)"
    [[ "$output" == *"unreadable: "*"is not a regular file"* ]] || fail "no problem shown: $output"
}

@test "--dataset also lists the jobs that have it staged, in the table and in JSON" {
    mkdir -p "$work/state/jobs/12/user"
    printf '%s\n' "dataset = 'imagenet'" "tier = 'scratch'" "state = 'reused'" 'nodes = 2' 'bytes_total = 5' \
        'bytes_done = 5' 'files_total = 1' "time = $now" > "$work/state/jobs/12/user/progress-imagenet.toml"
    mkdir -p "$work/bin"
    printf '#!/bin/sh\necho "12|N/A|N/A|RUNNING|n[1-2]"\n' > "$work/bin/squeue"
    chmod +x "$work/bin/squeue"
    PATH="$work/bin:$PATH" run_dlstage --config "$work/dlstage.toml" status --dataset imagenet
    expect_status 0
    printf '%s\n' "$out" | tr -s ' ' | grep -qx "12 $me imagenet scratch 2 reused 100% - 5 1 0:00 n\[1-2\]" ||
        fail "the job's row"
    PATH="$work/bin:$PATH" run_dlstage --config "$work/dlstage.toml" status --dataset imagenet --json
    [ "$(python3 -c 'import json,sys; d=json.load(sys.stdin); print([(j["job_id"], j["state"]) for j in d["jobs"]])' <<<"$out")" = "[(12, 'reused')]" ] ||
        fail "jobs in JSON"
}
