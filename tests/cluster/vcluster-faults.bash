# vcluster: faults an admin or a crash brings: restart, reboot, resume. Sourced by tests/cluster/vcluster, which sets
# PROG, DIR and the other globals; not run on its own.

# ---------------------------------------------------------------- waiting on slurmctld

# node_field NODE FIELD: print FIELD=value of `scontrol show node NODE`.
node_field() {
    sl scontrol -o show node "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1
}

# wait_node_registered NODE SINCE: wait until slurmctld has heard from a slurmd
# of NODE started at or after epoch second SINCE (its SlurmdStartTime). Until
# SlurmdTimeout runs out slurmctld still calls a node with a dead slurmd up, so
# its state alone does not show that the new slurmd has registered.
wait_node_registered() {
    local n=$1 since=$2 started t i
    for ((i = 0; i < UP_TIMEOUT * 4; i++)); do
        started=$(node_field "$n" SlurmdStartTime) || started=""
        if [[ $started == [0-9]* ]] && t=$(date -d "$started" +%s 2>/dev/null) && ((t >= since)); then
            return 0
        fi
        slurmd_pid "$n" >/dev/null || die "node $n: slurmd died (see $DIR/log/slurmd-$n.log)"
        sleep 0.25
    done
    die "node $n: slurmctld has not heard from its new slurmd after ${UP_TIMEOUT}s (SlurmdStartTime '$started')"
}

# node_state NODE: the node's state as sinfo -N -o %T says it (long, with the
# *, ~, # ... suffixes), or nothing if sinfo fails.
node_state() { sl sinfo -h -N -n "$1" -o %T 2>/dev/null | head -n1 || true; }

node_is_up() { [[ $(node_state "$1") =~ ^(idle|allocated|mixed|completing)$ ]]; }

check_node() {
    [[ " $(node_list | tr '\n' ' ') " == *" $1 "* ]] || die "no node $1 in $DIR (nodes: $(node_list | paste -sd " "))"
    holder_pid "$1" >/dev/null || die "node $1 of $DIR is not running"
}

# ---------------------------------------------------------------- restart

cmd_restart() {
    local node=$1 pid since
    check_node "$node"
    pid=$(slurmd_pid "$node") && terminate "$STOP_TIMEOUT" "$pid"
    since=$(date +%s)
    start_slurmd "$node"
    wait_node_registered "$node" "$since"
    say "restarted slurmd of $node (pid $(<"$DIR/run/slurmd-$node.pid")), state $(node_state "$node")"
}

# restart slurmctld: SIGTERM makes it save its state in DIR/ctld
# (StateSaveLocation); the new one recovers jobs, nodes and reasons from there.
# Running jobs are not disturbed: their slurmstepds do not need slurmctld until
# they end, and they retry their completion messages until it answers (seen:
# a job running across the restart completes, COMPLETED).  The new slurmctld
# calls a node without jobs 'unknown' until its slurmd has registered again
# (seconds here): wait for that too, for every node whose slurmd runs.
restart_slurmctld() {
    local pid i n waiting
    pid=$(slurmctld_pid) && terminate "$STOP_TIMEOUT" "$pid"
    start_slurmctld
    for ((i = 0; i < UP_TIMEOUT * 4; i++)); do
        slurmctld_pid >/dev/null || die "slurmctld died (see $DIR/log/slurmctld.log)"
        waiting=()
        if sl scontrol ping 2>/dev/null | grep -q 'is UP'; then
            for n in $(node_list); do
                slurmd_pid "$n" >/dev/null && [[ $(node_state "$n") == unk* ]] && waiting+=("$n")
            done
            ((${#waiting[@]})) || { say "restarted slurmctld (pid $(slurmctld_pid))"; return 0; }
        else
            waiting=(slurmctld)
        fi
        sleep 0.25
    done
    die "after ${UP_TIMEOUT}s still waiting for ${waiting[*]} (see $DIR/log/slurmctld.log)"
}

# ---------------------------------------------------------------- reboot

# kill_node_processes NODE HOLDER: SIGKILL every process in NODE's namespace
# but its holder, as a crash would, until none is left (they may fork).
kill_node_processes() {
    local n=$1 holder=$2 pid i left
    for ((i = 0; i < 100; i++)); do
        left=()
        while read -r pid; do
            [[ $pid == "$holder" ]] || left+=("$pid")
        done < <(namespace_pids "$n")
        ((${#left[@]})) || return 0
        ((i)) || say "$n: killing ${#left[@]} processes: ${left[*]}"
        kill -KILL "${left[@]}" 2>/dev/null || true
        sleep 0.1
    done
    die "$n: processes survive SIGKILL: ${left[*]}"
}

# node_mounts_below HOLDER DIR...: the mount points strictly below each DIR
# inside the holder's namespace, last mounted first. Not DIR itself: the node's
# /dev/shm lies on a stack of the host's, and a user cannot mount on a sticky
# directory that is not his.
node_mounts_below() {
    local holder=$1; shift
    awk -v dirs="$*" '
        BEGIN { n = split(dirs, d, " ") }
        { for (i = 1; i <= n; i++) if (index($5, d[i] "/") == 1) { m[++k] = $5; break } }
        END { while (k) print m[k--] }' "/proc/$holder/mountinfo"
}

# unmount_node_mounts NODE HOLDER: lazily unmount every mount below /dev/shm
# and /local in the node (FUSE mounts a job left, perhaps with a dead daemon).
# Unmounting a parent takes its children along: repeat until none is left.
unmount_node_mounts() {
    local n=$1 holder=$2 mp mps i
    for ((i = 0; i < 20; i++)); do
        mapfile -t mps < <(node_mounts_below "$holder" /dev/shm /local)
        ((${#mps[@]})) || return 0
        ((i)) || say "$n: unmounting ${mps[*]}"
        for mp in "${mps[@]}"; do
            # mountinfo writes space, tab, newline and backslash as \ooo
            nsenter -t "$holder" -m -- umount -l -- "$(printf '%b' "$mp")" 2>/dev/null || true
        done
    done
    die "$n: cannot unmount ${mps[*]}"
}

# empty_node_dir HOLDER DIR: delete everything in DIR inside the node, DIR
# itself kept; -xdev stays off anything still mounted there.
empty_node_dir() {
    nsenter -t "$1" -m -- find "$2" -xdev -mindepth 1 -delete ||
        say "could not empty $2 of node $(nsenter -t "$1" -u hostname) entirely"
}

# reboot NODE: a crash and a reboot. slurmd and every process in the node
# (slurmstepds, tasks, FUSE daemons) die by SIGKILL, the mounts jobs left below
# /dev/shm and /local go, /dev/shm is emptied (/local, a local disk, keeps its
# files unless --wipe-local), the node stays off --off-for seconds, and slurmd
# starts again with an uptime that counts from now.  What Slurm 22.05 then
# does, seen with this cluster's slurm.conf (ReturnToService=2, JobRequeue=0,
# SlurmdTimeout=30, MessageTimeout=10, BatchStartTimeout's default 10):
# - The node is never left down or drained: ReturnToService=2 skips Slurm's
#   "Node unexpectedly rebooted" (node DOWN) path, so it is idle again (or
#   mixed/allocated for jobs it still thinks run there) as soon as slurmd
#   registers. `resume` is there for nodes an admin or a test set down.
# - A batch job whose batch host rebooted ends NODE_FAIL, Reason=None,
#   ExitCode 0:1, not requeued (slurmctld log: "Batch JobId=N missing from
#   batch node nK (not found BatchStartTime after startup)", "cancelled by
#   node failure"). That happens when slurmd registers if the job started over
#   ~20 s (BatchStartTimeout + MessageTimeout) before; a younger one stays
#   RUNNING until the next registration slurmctld asks for (about a minute).
# - A job whose rebooted node is not its batch host is not noticed at all: it
#   stays RUNNING, its srun waiting for the lost tasks of that node until the
#   job is cancelled or hits its time limit (none in partition debug).
# - With --off-for past SlurmdTimeout the node first goes not responding
#   (mixed*), then slurmctld sets it DOWN and kills its jobs: JobState
#   NODE_FAIL, Reason=NodeDown, ExitCode 0:15 ("Killing JobId=N on failed node
#   nK", "Nodes nK not responding, setting DOWN"); when slurmd registers it
#   is "returned to service", idle, without a resume.
cmd_reboot() {
    local node=$1 wipe_local=$2 off_for=$3 holder pid since
    check_node "$node"
    holder=$(holder_pid "$node")
    # The crash: slurmd first, so that it reports nothing about its jobs.
    if pid=$(slurmd_pid "$node"); then
        kill -KILL "$pid" 2>/dev/null || true
        while is_alive "$pid"; do sleep 0.05; done
    fi
    kill_node_processes "$node" "$holder"
    unmount_node_mounts "$node" "$holder"
    # A reboot empties the /dev/shm tmpfs; a local disk keeps its files.
    empty_node_dir "$holder" /dev/shm
    ((wipe_local)) && empty_node_dir "$holder" /local
    if ((off_for)); then
        say "$node is off for ${off_for}s"
        sleep "$off_for"
    fi
    # The node boots now: its uptime restarts from 0 (see start_slurmd).
    awk '{ printf "-%d\n", $1 }' /proc/uptime >"$DIR/run/boot-$node"
    since=$(date +%s)
    start_slurmd "$node"
    wait_node_registered "$node" "$since"
    say "rebooted $node$( ((wipe_local)) && echo ", /local wiped"): $(sl sinfo -h -N -n "$node" -o '%T %E' | head -n1)"
}

# resume NODE: what an admin does after a node came back down or drained.
cmd_resume() {
    local node=$1 i
    check_node "$node"
    if node_is_up "$node"; then
        say "$node is $(node_state "$node") already"
        return 0
    fi
    sl scontrol update nodename="$node" state=resume || die "scontrol could not resume $node"
    for ((i = 0; i < UP_TIMEOUT * 4; i++)); do
        node_is_up "$node" && { say "$node is $(node_state "$node")"; return 0; }
        sleep 0.25
    done
    die "node $node: not up after ${UP_TIMEOUT}s (state '$(node_state "$node")')"
}
