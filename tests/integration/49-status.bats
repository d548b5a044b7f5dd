#!/usr/bin/env bats
# dlstage status as squeue shows jobs, against the real Slurm of
# the test cluster: a job seen staging (percent, rate), then ready, then
# cleaned after its epilog; a failed job with its reason; a record of a job
# Slurm never had seen as stale; array tasks by their ids; --node on the
# node itself; every view's --json parsed.

load helpers

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    rm -rf "$STATE/jobs/4000000000"
}

status_as_user() {
    run as_user "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status "$@"
    echo "$output"
}

# until_state JOB STATE: status -h -o '%i %T' says STATE for JOB within 60 s.
until_state() {
    local i
    for ((i = 0; i < 300; i++)); do
        status_as_user -h -o '%i %T' "$1" >/dev/null
        [ "$output" = "$1 $2" ] && return 0
        sleep 0.2
    done
    echo "job $1 never became $2: $output" >&2
    return 1
}

@test "a staging job: staging with percent and rate, then ready, then cleaned after its epilog" {
    run as_user sbatch --parsable -N3 -o out.txt --export=ALL,DLSTAGE_RATE_LIMIT=4M,DLSTAGE_PROGRESS=1 \
        --stage-data=big:shm --wrap 'sleep 6; echo SCRIPT-RAN'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_for_partial n1 "$job" big
    until_state "$job" staging
    for _ in $(seq 100); do
        status_as_user -h -o '%i|%u|%d|%P|%D|%T|%p|%b|%z|%f|%M|%N' "$job"
        [[ "$output" =~ \|[1-9][0-9]?%\| ]] && break
        sleep 0.2
    done
    [[ "$output" =~ ^$job\|$VCLUSTER_USER\|big\|shm\|3\|staging\|[1-9][0-9]?%\|[0-9.]+[KM]/s\|64M\|1\|0:[0-9]{2}\|n\[1-3\]$ ]]
    status_as_user -o '%i %T %e'
    [ "$(head -n1 <<<"$output")" = "JOBID STATE ETA" ]
    until_state "$job" ready
    status_as_user --json "$job"
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
[j] = d["jobs"]
assert j["job_id"] == int(sys.argv[2]) and j["state"] == "ready" and j["percent"] == 100, j
assert j["bytes_total"] == j["bytes_done"] == 64 * 2**20 and j["nodes"] == 3, j
assert j["user"] == sys.argv[3] and d["meta"]["slurm"]["asked"] is True, d
' "$output" "$job" "$VCLUSTER_USER"
    wait_job_gone "$job"
    assert_epilogs_cleaned "$job"
    until_state "$job" cleaned
    grep -q SCRIPT-RAN "$(user_workdir)/out.txt"
}

@test "a failed job: failed, with the reason, in the table, in -o %r and in JSON" {
    run sbatch_wait as_user sbatch --parsable -N3 -o out.txt --stage-data=hostile --wrap 'echo SCRIPT-RAN'
    [ "$status" -ne 0 ]
    job=${output%%;*}
    wait_job_gone "$job"
    status_as_user "$job"
    [ "$status" -eq 0 ]
    grep -Eq "^$job +$VCLUSTER_USER +hostile +shm +3 +failed .*\(n[1-3]: staging hostile to shm failed on n[1-3]: unsafe entry" <<<"$output"
    grep -q "^job $job: failed on n[1-3]: staging hostile to shm failed on n[1-3]: unsafe entry '../escape.txt'" <<<"$output"
    status_as_user -h -o '%T|%r' "$job"
    [[ "$output" == "failed|n"[1-3]": staging hostile to shm failed on n"* ]]
    status_as_user --json -t failed -j "$job"
    python3 -c '
import json, sys
[j] = json.loads(sys.argv[1])["jobs"]
assert j["state"] == "failed" and "unsafe entry" in j["reason"], j
' "$output"
}

@test "a record of a job Slurm never had is stale, not live" {
    dir="$STATE/jobs/4000000000/user"
    mkdir -p "$dir"
    chown "$VCLUSTER_USER" "$dir"
    chmod 700 "$dir"
    runuser -u "$VCLUSTER_USER" -- sh -c "printf '%s\n' \"dataset = 'ghost'\" \"tier = 'shm'\" \"state = 'ready'\" \
        'nodes = 2' 'bytes_total = 10' 'bytes_done = 10' 'files_total = 1' 'time = 1' > '$dir/progress-ghost.toml'"
    status_as_user -h -o '%i|%d|%T|%r' 4000000000
    [ "$output" = "4000000000|ghost|stale|Slurm no longer knows the job; no epilog record" ]
    status_as_user -h -o '%i' -t stale
    grep -qx 4000000000 <<<"$output"
    # Another user does not see it, even with --all (and is told why)
    run as_other "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --all -h -o '%i'
    echo "$output"
    ! grep -q 4000000000 <<<"$output" || false
    grep -q "dlstage: status: the records of other users' jobs are theirs (mode 0700): showing your own only" <<<"$output"
    # root sees every user's with --all
    run "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --all -h -o '%i %u'
    grep -qx "4000000000 $VCLUSTER_USER" <<<"$output"
}

@test "array tasks: shown as squeue shows them, selected by 123 and 123_4" {
    run sbatch_wait as_user sbatch --parsable --array=1-2 -N1 -o /dev/null --stage-data=sample:shm --wrap true
    [ "$status" -eq 0 ]
    array=${output%%;*}
    status_as_user -h -o '%i %d' -j "$array"
    [ "$output" = "$(printf '%s\n' "${array}_1 sample" "${array}_2 sample")" ]
    status_as_user -h -o '%i' "${array}_2"
    [ "$output" = "${array}_2" ]
    # the stager recorded the ids from the job's environment, for when Slurm has forgotten the job
    task=$(squeue -h -t all -j "${array}_2" -o %A)
    [ "$(record_value "$STATE/jobs/$task/user/progress-sample.toml" 'r["array_job_id"], r["array_task_id"]')" = "('$array', '2')" ]
}

@test "--node on the node: tiers with space and limits, the job directories with their owners" {
    run as_user sbatch --parsable -N1 -w n2 -o /dev/null --stage-data=sample:shm --wrap 'sleep 30'
    [ "$status" -eq 0 ]
    job=${output%%;*}
    until_state "$job" ready
    run as_user srun -N1 -w n2 --overlap --jobid="$job" "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n2
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^shm +node +/dev/shm/dlstage +[0-9.]+[KMG]? +[0-9.]+[KMG] +80M +" <<<"$output"
    grep -Eq "^shm +$job +$VCLUSTER_USER +directory$" <<<"$output"
    # as root, in the node's namespace, as JSON
    run on_node n2 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n2 --json
    [ "$status" -eq 0 ]
    python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["node"] == "n2", d
shm = [t for t in d["tiers"] if t["tier"] == "shm"][0]
assert shm["bytes_limit"] == 80 * 2**20 and shm["bytes_total"] > 0, shm
assert [e["owner"] for e in shm["entries"] if e["name"] == sys.argv[2]] == [sys.argv[3]], shm
assert shm["cache_entries"] == [], shm
' "$output" "$job" "$VCLUSTER_USER"
    # on another node: refused, naming the way
    run on_node n1 "$DLSTAGE_BIN" --config "$DLSTAGE_TEST_DIR/dlstage.toml" status --node n2
    [ "$status" -eq 1 ]
    [[ "$output" == *"dlstage: status --node n2: this is n1, and a node's tiers are seen on the node itself: run 'srun -w n2 dlstage status --node n2'"* ]]
}
