#!/usr/bin/env bats
# Data locality ([locality] node_features): what a node's cache holds is a
# node feature of dlstage's, set by the epilog once the entry is whole,
# gone when the entry goes (gc), put back by gc after a slurmctld restart;
# the site's own features are never touched, and with the setting off no
# feature changes.  A job asking for the dataset prefers (--prefer) the
# node holding it: it lands there and reads nothing from the source, runs
# elsewhere at once when that node is busy or drained, and keeps the
# user's own --prefer; a pending job Slurm holds for a preference only
# drained nodes meet is released by gc.

load helpers

CONFIG="$DLSTAGE_TEST_DIR/dlstage.toml"

setup_file() {
    cp "$CONFIG" "$DLSTAGE_TEST_DIR/dlstage.toml.before-locality"
}

teardown_file() {
    cp "$DLSTAGE_TEST_DIR/dlstage.toml.before-locality" "$CONFIG"
    local node
    for node in n1 n2 n3; do
        scontrol update NodeName=$node AvailableFeatures= ActiveFeatures= || true
        on_node "$node" rm -f "$DLSTAGE_TEST_DIR/state/cache/$node/features"
    done
}

setup() {
    USER_UID=$(id -u "$VCLUSTER_USER")
    FEATURE="dls_near_u$USER_UID"
}

teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scontrol update NodeName=n2 State=RESUME 2>/dev/null || true
    wait_epilogs
}

# near_job [SRUN OPTIONS...]: an unpinned one-node job asking for `near`;
# prints its id (job=ID) and the node it ran on last, after what dlstage
# said.
near_job() {
    run as_user srun "$@" --stage-data=near:cache sh -c 'echo "job=$SLURM_JOB_ID"; hostname'
    echo "$output"
}

# busy NODE: a job of the user's holding all of NODE until cancelled.
busy() {
    run as_user sbatch --parsable -w "$1" --exclusive -o /dev/null --wrap 'sleep 300'
    [ "$status" -eq 0 ]
    local i
    for ((i = 0; i < 100; i++)); do
        [ "$(squeue -h -j "$output" -o %T)" = RUNNING ] && return 0
        sleep 0.2
    done
    return 1
}

locality() {
    sed -i '/^\[locality\]/,/^$/d' "$CONFIG"
    printf '[locality]\nnode_features = %s\n\n' "$1" >>"$CONFIG"
}

# features_of NODE: the node's features as slurmctld has them, one a line.
features_of() {
    sinfo -h -n "$1" -o %f | tr , '\n' | grep -v '^(null)$' | sort
}

gc_on() {
    local node=$1; shift
    run on_node "$node" "$DLSTAGE_BIN" -c "$CONFIG" gc "$@"
    echo "$output"
}

# cache_near_on NODE: a job pinned to NODE stages `near` to its cache.
cache_near_on() {
    run as_user srun -N1 -w "$1" --stage-data=near:cache true
    echo "$output"
    [ "$status" -eq 0 ]
    wait_epilogs
}

forget_near_on() {
    forget_kept_copy "/local/dlcache/.cache/$VCLUSTER_USER" near "$1"
}

@test "with [locality] off a cached dataset changes no node's features" {
    locality false
    forget_near_on n2
    cache_near_on n2
    [ -z "$(sinfo -h -o %f | tr , '\n' | grep '^dls_' || true)" ]
    gc_on n2
    [ "$status" -eq 0 ]
    [ -z "$(sinfo -h -o %f | tr , '\n' | grep '^dls_' || true)" ]
}

@test "a node's cache entry becomes its feature, the site's own features kept" {
    locality true
    forget_near_on n2
    gc_on n2
    scontrol update NodeName=n2 AvailableFeatures=site_a,site_b ActiveFeatures=site_a
    cache_near_on n2
    [ "$(features_of n2 | paste -sd,)" = "$FEATURE,site_a,site_b" ]
    sinfo -h -n n2 -o %b | tr , '\n' | grep -qx "$FEATURE"
    sinfo -h -n n2 -o %b | tr , '\n' | grep -qx site_a
    ! sinfo -h -n n2 -o %b | tr , '\n' | grep -qx site_b
    # Only n2 holds it.
    for node in n1 n3; do ! features_of "$node" | grep -q '^dls_'; done
    # The next job on n2 sends no update: nothing changed.
    scontrol update NodeName=n2 AvailableFeatures=site_a,site_b ActiveFeatures=site_a
    cache_near_on n2
    ! features_of n2 | grep -q '^dls_'
    # gc asks slurmctld and puts it back.
    gc_on n2
    [ "$status" -eq 0 ]
    features_of n2 | grep -qx "$FEATURE"
    features_of n2 | grep -qx site_b
}

@test "an entry gone takes its feature with it at the next gc" {
    locality true
    scontrol update NodeName=n2 AvailableFeatures=site_a ActiveFeatures=site_a
    gc_on n2
    cache_near_on n2
    features_of n2 | grep -qx "$FEATURE"
    forget_near_on n2
    gc_on n2
    [ "$status" -eq 0 ]
    ! features_of n2 | grep -qx "$FEATURE"
    features_of n2 | grep -qx site_a
}

@test "slurmctld restarted loses the features; gc puts them back" {
    locality true
    cache_near_on n2
    features_of n2 | grep -qx "$FEATURE"
    "$VCLUSTER" restart slurmctld
    ! features_of n2 | grep -qx "$FEATURE"
    gc_on n2
    [ "$status" -eq 0 ]
    features_of n2 | grep -qx "$FEATURE"
}

@test "an unpinned job asking for the dataset runs on the node holding it and reads nothing" {
    locality true
    cache_near_on n2
    features_of n2 | grep -qx "$FEATURE"
    near_job
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = n2 ]
    grep -Fq "near: this job prefers the nodes whose cache holds your copy (--prefer=$FEATURE); it runs elsewhere when none of them is free" <<<"$output"
    doc_says "$ADMIN_GUIDE" 'this job prefers the nodes whose cache holds your copy' imagenet=near "dls_imagenet_u1004=$FEATURE" <<<"$output"
    grep -q "near: cache hit on 1 of 1 nodes" <<<"$output"
    ! grep -q "source bytes read" <<<"$output"
    # dlstage status says where it found its data.
    local job
    job=$(sed -n 's/^job=//p' <<<"$output")
    run as_user "$DLSTAGE_BIN" -c "$CONFIG" status -j "$job"
    [ "$status" -eq 0 ]
    grep -qx "near: cache hit on n2 for job $job" <<<"$output" || { echo "$output"; false; }
    doc_says "$USER_GUIDE" 'imagenet: cache hit on n2 for job' imagenet=near <<<"$output"
    run as_user "$DLSTAGE_BIN" -c "$CONFIG" status -h -o '%H' -j "$job"
    [ "$output" = n2 ]
}

@test "with the node holding it busy, the job runs elsewhere at once" {
    locality true
    cache_near_on n2
    busy n2
    SECONDS=0
    near_job
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" != n2 ]
    [ "$SECONDS" -lt 20 ]
}

@test "a user's own --prefer is kept, and nothing is added to it" {
    locality true
    cache_near_on n2
    scontrol update NodeName=n3 AvailableFeatures=site_c ActiveFeatures=site_c
    near_job --prefer=site_c
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = n3 ]
    ! grep -q "this job prefers" <<<"$output"
    scontrol update NodeName=n3 AvailableFeatures= ActiveFeatures=
}

@test "a drained node holding it attracts no job: it runs elsewhere at once" {
    locality true
    cache_near_on n2
    scontrol update NodeName=n2 State=DRAIN Reason=locality-test
    SECONDS=0
    near_job
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" != n2 ]
    ! grep -q "this job prefers" <<<"$output"
    [ "$SECONDS" -lt 20 ]
}

@test "a pending job Slurm holds for a preference only drained nodes meet is released by gc" {
    locality true
    cache_near_on n2
    # Slurm 22.05 holds a job preferring features only unavailable nodes
    # have (ReqNodeNotAvail) instead of running it elsewhere: submit never
    # asks for that (above), but the node may drain at the moment Slurm
    # first looks at the job.  Made here by asking for it by hand, n2 alone
    # holding it.
    for node in n1 n3; do
        forget_near_on "$node"
        gc_on "$node"
    done
    scontrol update NodeName=n2 State=DRAIN Reason=locality-test
    run as_user sbatch --parsable -N1 -o /dev/null --prefer="$FEATURE" --wrap 'hostname'
    [ "$status" -eq 0 ]
    pending=${lines[-1]}
    local i
    for ((i = 0; i < 60; i++)); do
        squeue -h -j "$pending" -o %r | grep -Eq 'ReqNodeNotAvail|BadConstraints' && break
        sleep 0.5
    done
    squeue -h -j "$pending" -o %r | grep -Eq 'ReqNodeNotAvail|BadConstraints'
    gc_on n1
    [ "$status" -eq 0 ]
    grep -q "released 1 pending job" <<<"$output"
    for ((i = 0; i < 120; i++)); do
        [ "$(squeue -h -j "$pending" -t all -o %T)" = COMPLETED ] && break
        sleep 0.5
    done
    [ "$(squeue -h -j "$pending" -t all -o %T)" = COMPLETED ]
    [ "$(squeue -h -j "$pending" -t all -o %N)" != n2 ]
}

@test "after the entry is gone no job is steered to the node for it" {
    locality true
    cache_near_on n2
    for node in n1 n2 n3; do
        forget_near_on "$node"
        gc_on "$node"
        [ "$status" -eq 0 ]
    done
    ! sinfo -h -o %f | tr , '\n' | grep -q "^$FEATURE\$"
    near_job -v
    [ "$status" -eq 0 ]
    ! grep -q "this job prefers" <<<"$output"
    # -v says why.
    grep -q "dlstage: near: no preference for nodes holding your copy: no 1 node(s) of its partition that may take jobs hold it" <<<"$output" || { echo "$output"; false; }
    doc_says "$ADMIN_GUIDE" 'no preference for nodes holding your copy' imagenet=near <<<"$output"
}

@test "a source changed since it was cached stops attracting jobs at the next gc" {
    locality true
    cache_near_on n2
    features_of n2 | grep -qx "$FEATURE"
    sleep 1  # a ctime later than the copy's
    printf 'new\n' >"$DLSTAGE_TEST_DIR/data/near/added-$(date +%s%N).txt"  # a name added: the root changes
    gc_on n2
    [ "$status" -eq 0 ]
    grep -q "$VCLUSTER_USER's near: its source changed since it was cached here: no node feature" <<<"$output"
    doc_says "$ADMIN_GUIDE" "its source changed since it was cached here" ssd=cache "alice=$VCLUSTER_USER" \
        imagenet=near <<<"$output"
    ! features_of n2 | grep -qx "$FEATURE"
    near_job
    [ "$status" -eq 0 ]
    ! grep -q "this job prefers" <<<"$output"
    # The job that staged it again brings its feature back.
    local node=${lines[-1]}
    grep -q "near: staging it on $node" <<<"$output" || { echo "$output"; false; }
    wait_epilogs
    features_of "$node" | grep -qx "$FEATURE"
    gc_on "$node"
    features_of "$node" | grep -qx "$FEATURE"
}

@test "status --node from another host says what the node's features say its caches hold" {
    locality true
    cache_near_on n2
    run as_user "$DLSTAGE_BIN" -c "$CONFIG" status --node n2
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^node n2: node caches, as its features in Slurm say" <<<"$output"
    grep -Eq "^near +$VCLUSTER_USER +whole +$FEATURE\$" <<<"$output"
    run as_user "$DLSTAGE_BIN" -c "$CONFIG" status --node n2 --json
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert "near" in [c["dataset"] for c in d["cached"]], d' <<<"$output"
    # With [locality] off, the node's tiers are seen on the node alone.
    locality false
    run as_user "$DLSTAGE_BIN" -c "$CONFIG" status --node n2
    [ "$status" -ne 0 ]
    grep -q "seen on the node itself" <<<"$output"
}

@test "a job naming or leaving out nodes gets no preference, and Slurm does not refuse it" {
    locality true
    cache_near_on n1
    features_of n1 | grep -qx "$FEATURE"
    for narrowing in "-w n2" "-x n1"; do
        # shellcheck disable=SC2086
        near_job -N1 $narrowing
        [ "$status" -eq 0 ]
        [ "${lines[-1]}" != n1 ]
        ! grep -q "this job prefers" <<<"$output"
    done
}
