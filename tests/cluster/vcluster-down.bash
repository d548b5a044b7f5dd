# vcluster: `down`: jobs cancelled, daemons and namespace leftovers stopped. Sourced by tests/cluster/vcluster, which sets
# PROG, DIR and the other globals; not run on its own.

# ---------------------------------------------------------------- down

# Cancel all jobs and give slurmd a bounded time (KillWait=5) to clean them up.
cancel_jobs() {
    local jobs deadline=$((SECONDS + 15))
    jobs=$(sl squeue -h -o %A 2>/dev/null) || return 0
    [[ -n $jobs ]] || return 0
    say "cancelling jobs: ${jobs//$'\n'/ }"
    # shellcheck disable=SC2086
    sl scancel $jobs 2>/dev/null || true
    while ((SECONDS < deadline)); do
        jobs=$(sl squeue -h -o %A 2>/dev/null) || return 0
        [[ -z $jobs ]] && return 0
        sleep 0.25
    done
    say "jobs still listed after 15s: ${jobs//$'\n'/ }"
}

# namespace_pids [NODE]: print the pids of all processes in this cluster's node
# namespaces (in NODE's alone if given; its holder is one of them).
# Candidates are found by the namespace ids recorded at `up` (mount AND UTS
# must match; one `find` rather than a readlink per process). Namespace ids are
# reused once a namespace dies, so a record may be stale and now name another
# cluster's node: a namespace only counts if the /local seen inside it is this
# cluster's DIR/nodes/NODE/local (same device and inode).
# shellcheck disable=SC2120  # reboot (vcluster-faults.bash) passes NODE
namespace_pids() {
    local only=${1:-} f want="" pid node seen here
    local -A verdict=()
    for f in "$DIR"/run/*.ns; do
        [[ -r $f ]] || continue
        node=${f##*/}
        [[ -z $only || ${node%.ns} == "$only" ]] || continue
        want+="$(<"$f") ${node%.ns}"$'\n'
    done
    [[ -n $want ]] || return 0
    while read -r pid node; do
        if [[ -z ${verdict[$node]:-} ]]; then
            seen=$(stat -L -c %d:%i "/proc/$pid/root/local" 2>/dev/null) || continue  # exited
            here=$(stat -c %d:%i "$DIR/nodes/$node/local" 2>/dev/null) || here=none
            [[ $seen == "$here" ]] && verdict[$node]=ours || verdict[$node]=stranger
        fi
        [[ ${verdict[$node]} == ours ]] && echo "$pid"
    done < <(find /proc/[0-9]*/ns/mnt /proc/[0-9]*/ns/uts -maxdepth 0 -printf '%p %l\n' 2>/dev/null |
        awk -v want="$want" -v self="$$" '
            BEGIN { n = split(want, w, "\n")
                    for (i = 1; i <= n; i++) if (split(w[i], f, " ") == 3) node[f[1] " " f[2]] = f[3] }
            { split($1, p, "/"); ns[p[3], p[5]] = $2; pids[p[3]] = 1 }
            END { for (pid in pids) {
                      key = ns[pid, "mnt"] " " ns[pid, "uts"]
                      if (pid != self && (key in node)) print pid, node[key] } }')
    return 0
}

# Kill whatever is left in the node namespaces once the daemons are gone:
# orphaned slurmstepds (they ignore SIGTERM without slurmd) and job processes.
# The cluster is going away, so the grace period is short.
kill_namespace_leftovers() {
    local pids i
    mapfile -t pids < <(namespace_pids)
    ((${#pids[@]})) || return 0
    say "killing ${#pids[@]} processes left in node namespaces: ${pids[*]}"
    terminate 2 "${pids[@]}"
    for ((i = 0; i < 20; i++)); do      # and whatever they forked meanwhile
        mapfile -t pids < <(namespace_pids)
        ((${#pids[@]})) || return 0
        kill -KILL "${pids[@]}" 2>/dev/null || true
        sleep 0.1
    done
    say "processes survive in node namespaces: ${pids[*]}"
}

do_down() {
    local pids=() n pid
    # Without our marker, DIR/run/*.pid could be someone else's (think /var).
    if [[ ! -e $DIR/.vcluster || ! -d $DIR/run ]]; then
        say "no cluster in $DIR"
        return 0
    fi
    slurmctld_pid >/dev/null && cancel_jobs
    for n in $(node_list); do
        pid=$(slurmd_pid "$n") && pids+=("$pid")
    done
    pid=$(slurmctld_pid) && pids+=("$pid")
    terminate "$STOP_TIMEOUT" "${pids[@]}"
    kill_namespace_leftovers
    # Namespaces now empty are gone: their ids may be handed out again.
    [[ -z $(namespace_pids) ]] && rm -f "$DIR"/run/*.ns
    # munged last: slurmstepds that outlived slurmd may still need it on exit.
    pid=$(munged_pid) && terminate "$STOP_TIMEOUT" "$pid"
    rm -f "$DIR"/run/*.pid "$DIR"/munge/munged.pid
    say "down: $DIR"
}
