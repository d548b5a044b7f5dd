# vcluster: starting, finding and stopping daemons; the cluster's files. Sourced by tests/cluster/vcluster, which sets
# PROG, DIR and the other globals; not run on its own.

# ---------------------------------------------------------------- processes

# True if PID is a live process (a zombie is dead: it only awaits reaping).
is_alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }                  # drop "pid (comm) ": comm may hold spaces
    [[ ${stat%% *} != [ZX] ]]
}

# live_pid PIDFILE MARKER: print the pid in PIDFILE if that process is alive and
# its command line holds the word MARKER. The marker (a path inside DIR) guards
# against a stale pid file whose pid now belongs to someone else.
live_pid() {
    local pid="" cmd
    [[ -r $1 ]] || return 1
    read -r pid <"$1" || [[ -n $pid ]] || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    [[ " $cmd" == *" $2 "* ]] || return 1
    is_alive "$pid" || return 1
    echo "$pid"
}

# spawn LOG CMD...: start CMD in the background in a new session, stdio on LOG,
# every other fd closed. Callers capture our stdout (eval "$(vcluster up)") and
# bats waits on fd 3: a daemon holding either would hang them.
spawn() {
    local log=$1; shift
    (
        close_extra_fds
        exec setsid "$@" </dev/null >>"$log" 2>&1
    ) &
}

close_extra_fds() {
    local fd
    for fd in "/proc/$BASHPID/fd/"*; do
        fd=${fd##*/}
        if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
}

# wait_pidfile FILE SECONDS: wait until FILE holds a pid.
wait_pidfile() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ -s $1 ]] && return 0
        sleep 0.1
    done
    return 1
}

# terminate SECONDS PID...: SIGTERM, wait up to SECONDS, then SIGKILL.
terminate() {
    local grace=$1 pid i left; shift
    (($#)) || return 0
    kill -TERM "$@" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        left=()
        for pid; do is_alive "$pid" && left+=("$pid"); done
        ((${#left[@]})) || return 0
        sleep 0.1
    done
    say "still alive after ${grace}s, sending SIGKILL: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null || true
}

# ---------------------------------------------------------------- cluster files

conf() { echo "$DIR/slurm.conf"; }
munge_sock() { echo "$DIR/munge/munge.socket"; }

node_list() { cat "$DIR/run/nodes" 2>/dev/null || true; }

slurmctld_pid() { live_pid "$DIR/run/slurmctld.pid" "$(conf)"; }
slurmd_pid() { live_pid "$DIR/run/slurmd-$1.pid" "$(conf)"; }
munged_pid() { live_pid "$DIR/munge/munged.pid" "--socket=$(munge_sock)"; }

# Print "name pid" for every live daemon of the cluster in DIR.
live_daemons() {
    local n pid
    pid=$(slurmctld_pid) && echo "slurmctld $pid"
    for n in $(node_list); do
        pid=$(slurmd_pid "$n") && echo "slurmd-$n $pid"
    done
    pid=$(munged_pid) && echo "munged $pid"
    return 0
}

# Slurm client commands, bounded: a dead slurmctld must not hang `down`.
sl() { SLURM_CONF=$(conf) timeout 10 "$@"; }
