#!/usr/bin/env bats
# Data locality ([locality] node_features): what a node's cache holds is a
# node feature of dlstage's, set by the epilog once the entry is whole,
# gone when the entry goes (gc), put back by gc after a slurmctld restart;
# the site's own features are never touched, and with the setting off no
# feature changes.

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
