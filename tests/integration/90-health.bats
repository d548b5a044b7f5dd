#!/usr/bin/env bats
# After everything above: no node drained or down, no job stuck.

load helpers

@test "no node is drained or down" {
    # one line per node and state: root's sinfo lists a node once per partition
    run bash -c "sinfo -h -N -o '%N %T' | sort -u"
    echo "$output"
    [ "$status" -eq 0 ]
    # every node the cluster has: the compute nodes and the mover node
    [ "${#lines[@]}" -eq "$(wc -l <"$VCLUSTER_DIR/run/nodes")" ]
    ! grep -Eiq 'drain|down|fail' <<<"$output" || false
    # and the compute nodes are still all of the default partition
    run sinfo -h -N -p debug -o %N
    [ "${#lines[@]}" -eq "${DLSTAGE_TEST_NODES:-3}" ]
}

@test "no job is left pending or running" {
    local i
    for ((i = 0; i < 60; i++)); do
        [ -z "$(squeue -h -t pending,running,completing -o %i)" ] && return 0
        sleep 0.5
    done
    squeue
    return 1
}
