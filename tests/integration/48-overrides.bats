#!/usr/bin/env bats
# Overrides and memory: an [[overrides]] table shown by
# check-config --explain and applied at submit (the hidden partition
# "small" of the vcluster gets a smaller shm max_bytes) and, where submit
# cannot know the partition, by the prolog; a --mem smaller than what goes to
# /dev/shm refused at submit, and --mem-per-cpu (not known at submit) refused
# by `dlstage stage` before anything is written.  The tables are added to
# the cluster's configuration for this file only.

load helpers

CONFIG="$DLSTAGE_TEST_DIR/dlstage.toml"

setup_file() {
    cp -p "$CONFIG" "$CONFIG.before-48"
    cat >>"$CONFIG" <<TOML

[[overrides]]
partition = "small"
tier      = "shm"
max_bytes = "10M"

[[overrides]]
partition = "debug"
user      = "$OTHER_USER"
tier      = "shm"
max_bytes = "10M"
TOML
}

teardown_file() {
    mv "$CONFIG.before-48" "$CONFIG"
}

# fails_before_script AS_FN SBATCH_ARGS...: submits a job (as_user or
# as_other) whose script echoes SCRIPT-RAN, waits for it, and checks it
# FAILED without running the script; sets $job and $joblog (its output).
fails_before_script() {
    local as=$1 d
    shift
    d=$(user_workdir)
    [ "$as" = as_other ] && d="$d-other"
    run "$as" sbatch --parsable -N1 -o out.txt "$@" --wrap 'echo SCRIPT-RAN'
    echo "$output"
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_job_gone "$job" 60
    joblog=$(cat "$d/out.txt")
    echo "$joblog"
    [ "$(job_state "$job")" = FAILED ]
    ! grep -q SCRIPT-RAN <<<"$joblog" || false
}

# The line of the Nth (from 0) [[overrides]] table.
table_line() {
    grep -n '^\[\[overrides\]\]' "$CONFIG" | sed -n "$(($1 + 1))p" | cut -d: -f1
}

@test "check-config --explain shows the partition's override and where it comes from" {
    run "$DLSTAGE_BIN" check-config --explain --partition small "$CONFIG"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^max_bytes += 10.0 MiB +# overrides\[0\] \(partition=small, line $(table_line 0)\)$" <<<"$output"
    run "$DLSTAGE_BIN" check-config --explain --partition debug "$CONFIG"
    grep -Eq '^max_bytes += 80.0 MiB +# tiers.shm$' <<<"$output"
}

@test "sbatch -p small: the override refuses at submit what the tier takes, no job" {
    local before
    before=$(job_ids)
    run as_user sbatch -p small -N1 --stage-data=big:shm --wrap true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: dataset 'big' needs 64.0 MiB but tier 'shm' allows at most 10.0 MiB (max_bytes = 10.0 MiB, set by overrides[0] (partition=small, line $(table_line 0))); allowed tiers: ssd, scratch"* ]]
    # the partition from Slurm's own input variable, as sbatch parses it
    run as_user env SBATCH_PARTITION=small sbatch -N1 --stage-data=big:shm --wrap true
    [ "$status" -ne 0 ]
    [[ "$output" == *"set by overrides[0] (partition=small"* ]]
    # and from the script's #SBATCH lines
    printf '#!/bin/bash\n#SBATCH -p small\ntrue\n' >"$(user_workdir)/small.sh"
    run as_user sbatch -N1 --stage-data=big:shm small.sh
    [ "$status" -ne 0 ]
    [[ "$output" == *"set by overrides[0] (partition=small"* ]]
    [ -z "$(new_job_ids "$before")" ]
    # the default partition keeps the tier's own limit
    run as_user sbatch --parsable -N1 -w n1 --stage-data=big:shm --wrap true
    [ "$status" -eq 0 ]
    wait_job_gone "${output%%;*}" 60
    [ "$(job_state "${output%%;*}")" = COMPLETED ]
}

@test "srun -p small and salloc -p small: refused at submit too" {
    local client
    for client in srun salloc; do
        run as_user timeout 60 "$client" -p small -N1 --stage-data=big:shm true
        echo "$output"
        [ "$status" -ne 0 ]
        [[ "$output" == *"$client: error: dlstage: dataset 'big' needs 64.0 MiB but tier 'shm' allows at most 10.0 MiB (max_bytes = 10.0 MiB, set by overrides[0] (partition=small"* ]]
    done
}

@test "a partition submit does not know: the prolog applies the override, the job fails with the reason, no drain" {
    fails_before_script as_other -w n1 --stage-data=big:shm
    grep -qF "dataset 'big' needs 64.0 MiB but tier 'shm' allows at most 10.0 MiB (max_bytes = 10.0 MiB, set by overrides[1] (partition=debug, user=$OTHER_USER, line $(table_line 1)))" <<<"$joblog"
    doc_says "$ADMIN_GUIDE" "allows at most 10.0 MiB .*overrides\[1\]" bob="$OTHER_USER" <<<"$joblog"
    assert_healthy
}

@test "--mem smaller than what goes to /dev/shm: refused at submit with the fix" {
    local before
    before=$(job_ids)
    run as_user sbatch -N1 --mem=16M --stage-data=big:shm --wrap true
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"dlstage: big (64.0 MiB) does not fit in the job's memory on tier 'shm' (--mem=16M per node; /dev/shm pages count against it): ask for --mem=2G or stage to 'ssd' or 'scratch'"* ]]
    run as_user srun -N1 --mem=16M --stage-data=big:shm true
    [ "$status" -ne 0 ]
    [[ "$output" == *"big (64.0 MiB) does not fit in the job's memory"* ]]
    [ -z "$(new_job_ids "$before")" ]
    # ssd is not memory: accepted
    run as_user sbatch --parsable -N1 -w n1 --mem=16M --stage-data=big:ssd --wrap true
    [ "$status" -eq 0 ]
    wait_job_gone "${output%%;*}" 60
}

@test "--mem-per-cpu, not known at submit: dlstage stage refuses before writing, the script does not run" {
    fails_before_script as_user -w n2 --mem-per-cpu=8M --stage-data=big:shm
    grep -Eq "big \(64.0 MiB\) does not fit in the job's memory on tier 'shm' \(--mem-per-cpu=8M x [0-9]+ CPUs = [0-9]+M per node; /dev/shm pages count against it\)" <<<"$joblog"
    ! on_node n2 test -e "/dev/shm/dlstage/$job/big" || false
    assert_healthy
}
