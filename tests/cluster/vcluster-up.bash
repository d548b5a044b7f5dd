# vcluster: `up`: munged, slurmctld and one slurmd per node namespace. Sourced by tests/cluster/vcluster, which sets
# PROG, DIR and the other globals; not run on its own.

# ---------------------------------------------------------------- up

# A DIR we did not create must not lose its /tmp or /run to our cleanup.
check_dir_is_ours() {
    local e
    [[ -e $DIR/.vcluster ]] && return 0
    for e in "${MANAGED[@]}"; do
        [[ -e $DIR/$e ]] &&
            die "$DIR holds '$e' but is not a vcluster directory (no .vcluster); refusing to use it"
    done
    return 0
}

make_dirs() {
    local e n
    for e in "${MANAGED[@]}"; do rm -rf "${DIR:?}/$e"; done
    install -d -m 0755 "$DIR" "$DIR/ctld" "$DIR/run" "$DIR/log" "$DIR/spool" "$DIR/tmp" "$DIR/nodes"
    touch "$DIR/.vcluster"
    for n in "${NODES[@]}"; do
        install -d -m 0755 "$DIR/spool/$n" "$DIR/nodes/$n"
        # Like /tmp on a real node: jobs of any user may write there.
        install -d -m 1777 "$DIR/tmp/$n" "$DIR/nodes/$n/local"
    done
    printf '%s\n' "${NODES[@]}" >"$DIR/run/nodes"
    mkdir -p /local                    # bind-mount target inside each node
}

# The private munged: its own key, socket, pid, log and seed under DIR/munge.
# DIR/munge is 0755 so the test user can reach the socket; munged insists that
# it be owned by munge and not writable by others.
start_munged() {
    local m=$DIR/munge key
    install -d -o munge -g munge -m 0755 "$m"
    key=$m/munge.key
    (umask 077; dd if=/dev/urandom of="$key" bs=1024 count=1 status=none)
    chown munge:munge "$key"
    chmod 0400 "$key"
    # munged forks and its parent exits once the daemon is ready: no polling.
    (
        close_extra_fds
        exec runuser -u munge -- /usr/sbin/munged --key-file="$key" \
            --socket="$(munge_sock)" --pid-file="$m/munged.pid" \
            --log-file="$m/munged.log" --seed-file="$m/munged.seed"
    ) </dev/null >>"$DIR/log/munged.out" 2>&1 || die "munged failed to start (see $m/munged.log)"
    munge -n -S "$(munge_sock)" | unmunge -S "$(munge_sock)" >/dev/null ||
        die "private munged does not answer on $(munge_sock)"
    say "munged pid $(munged_pid)"
}

# Pick COUNT consecutive TCP ports on loopback, none in use in any state (a
# TIME_WAIT left by an earlier cluster blocks a bind too). Random base so that
# two clusters started at once are unlikely to pick the same block; below 32768
# so that no outgoing connection's ephemeral port takes one before the daemon
# binds it.
pick_ports() {
    local count=$1 used base p try ok
    used=" $(ss -Htan | awk '{ n = split($4, a, ":"); printf "%s ", a[n] }') "
    for ((try = 0; try < 100; try++)); do
        base=$((20000 + (RANDOM * 32768 + RANDOM) % (12500 - count)))
        ok=1
        for ((p = base; p < base + count; p++)); do
            [[ $used == *" $p "* ]] && { ok=0; break; }
        done
        ((ok)) && { echo "$base"; return 0; }
    done
    die "no block of $count free TCP ports found in 20000-32500"
}

# node_range nA ... nB: consecutive nodes as Slurm writes them, nA or n[A-B].
node_range() {
    local last=${!#}
    (($# > 1)) || { echo "$1"; return; }
    echo "n[${1#n}-${last#n}]"
}

write_slurm_conf() {
    local ctld_port=$1 node_port=$2 nn=${#NODES[@]} cpus mem
    # Every slurmd checks the host against its node's line: promising more
    # CPUs or memory than the host has makes the node INVAL, never idle.
    cpus=$(nproc); ((cpus <= 2)) || cpus=2
    mem=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo); ((mem <= 4000)) || mem=4000
    cat >"$(conf)" <<EOF
# Written by tests/cluster/vcluster; rewritten by every 'vcluster up'.
ClusterName=vc
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Used by both auth/munge and cred/munge: our private munged.
AuthInfo=socket=$(munge_sock)
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/plugstack.conf
# One TmpFS per slurmd: otherwise the PMIx dirs of the slurmds collide.
TmpFS=$DIR/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# No backfill cycle. srun/salloc jobs start at submit; batch jobs wait for the
# once-a-second background scheduler, after batch_sched_delay (default 3 s).
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
PrologFlags=Alloc
PrologEpilogTimeout=120
JobRequeue=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
# Short timeouts so that failures and cleanup are quick in tests.
SlurmctldTimeout=10
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
UnkillableStepTimeout=60
InactiveLimit=0
# Finished jobs stay visible to scontrol this long (there is no accounting).
MinJobAge=300
# NodeHostname is each node's own hostname (what hostname -s says there), as
# on a real cluster: Slurm's commands run on a node (scontrol listpids) find
# which node they are on by it; with one NodeHostname for all they all guess
# the first node.  NodeAddr is the same loopback address for every node.
$(for ((i = 1; i <= nn; i++)); do
    echo "NodeName=n$i NodeHostname=n$i NodeAddr=127.0.0.1 Port=$((node_port + i - 1)) CPUs=$cpus RealMemory=$mem"
done)
PartitionName=debug Nodes=$(node_range "${NODES[@]:0:NODE_COUNT}") Default=YES MaxTime=INFINITE State=UP
# A second partition on the same nodes, for per-partition [[overrides]]
# (48-overrides.bats). Hidden: a user's sinfo lists each node once (root's
# lists it once per partition).
PartitionName=small Nodes=$(node_range "${NODES[@]:0:NODE_COUNT}") MaxTime=INFINITE State=UP Hidden=YES
$( ((${#MOVER_NODES[@]})) || exit 0
    echo "# The mover nodes (--mover-nodes), in no other partition: jobs that do not"
    echo "# ask for partition mover never land there."
    echo "PartitionName=mover Nodes=$(node_range "${MOVER_NODES[@]}") MaxTime=INFINITE State=UP")
EOF
    chmod 0644 "$(conf)"
}

write_plugstack() {
    if [[ -n $PLUGIN ]]; then
        echo "required $PLUGIN config=$CONFIG${PLUGIN_ARGS[*]+ ${PLUGIN_ARGS[*]}}" >"$DIR/plugstack.conf"
    else
        : >"$DIR/plugstack.conf"
    fi
    chmod 0644 "$DIR/plugstack.conf"
}

# slurmctld runs in the foreground (-D) under a shell that writes its own pid
# and execs: the pid file is right from the first moment, whatever setsid does.
start_slurmctld() {
    local pidf=$DIR/run/slurmctld.pid
    rm -f "$pidf"                      # a restart's old one
    # shellcheck disable=SC2016  # expanded by the inner shell
    spawn "$DIR/log/slurmctld.out" bash -c 'echo $$ >"$1"; exec slurmctld -D -f "$2"' \
        vc-slurmctld "$pidf" "$(conf)"
    wait_pidfile "$pidf" 10 || die "slurmctld did not start"
    say "slurmctld pid $(<"$pidf")"
}

# The nodes' /etc/hosts: the host's, and every node name on loopback.  On a
# real cluster every node resolves the node names; Slurm's commands resolve
# their own node's hostname (slurm_conf_get_aliased_nodename), and an
# unresolvable one costs 10 s of retries (get_addr_info) each time.
write_hosts() {
    local n
    {
        cat /etc/hosts
        echo "# vcluster nodes"
        for n in "${NODES[@]}"; do echo "127.0.0.1 $n"; done
    } >"$DIR/hosts"
    chmod 0644 "$DIR/hosts"
}

# Each node is a UTS + mount namespace held by a process of its own (the
# holder, `sleep infinity`), so that slurmd can be restarted inside it while
# the node's jobs, /dev/shm and mounts live on.  The holder's shell sets the
# hostname and mounts before it execs; `unshare` does not fork, so the pid
# the shell writes is the holder's.  The node's --node-mount pairs (SRC DST
# after the fixed arguments) are bound there last: private propagation keeps
# them out of the host and every other node.
start_node_namespace() {
    local n=$1 size=$2 pidf=$DIR/run/holder-$1.pid fuse_conf="" m node src dst
    local binds=()
    [[ $ALLOW_OTHER == 1 ]] && fuse_conf=$DIR/fuse.conf
    for m in "${NODE_MOUNTS[@]}"; do
        IFS=: read -r node src dst <<<"$m"
        [[ $node == "$n" ]] && binds+=("$src" "$dst")
    done
    # shellcheck disable=SC2016  # expanded by the inner shell
    spawn "$DIR/log/holder-$n.out" unshare --uts --mount --propagation private \
        bash -c 'set -e
            hostname "$2"
            mount -t tmpfs -o size="$3",mode=1777 tmpfs /dev/shm
            mount --bind "$4" /local
            if [ -n "$5" ]; then mount --bind "$5" /etc/fuse.conf; fi
            mount --bind "$6" /etc/hosts
            pidf=$1
            shift 6
            while [ $# -ge 2 ]; do mount --bind "$1" "$2"; shift 2; done
            echo $$ >"$pidf"
            exec sleep infinity' \
        vc-holder "$pidf" "$n" "$size" "$DIR/nodes/$n/local" "$fuse_conf" "$DIR/hosts" ${binds[@]+"${binds[@]}"}
    wait_pidfile "$pidf" 10 || die "node $n: its namespace did not start"
    local i
    for ((i = 0; i < 100; i++)); do    # until the shell has become the holder
        holder_pid "$n" >/dev/null && return 0
        sleep 0.05
    done
    die "node $n: its namespace holder did not start (see $DIR/log/holder-$n.out)"
}

holder_pid() { live_pid "$DIR/run/holder-$1.pid" infinity; }

# slurmd runs in the foreground (-D) as the last exec of a shell that writes
# its own pid, then nsenter (which does not fork either) into the node's
# namespace: the pid file is right from the first moment.  A node that
# `reboot` has rebooted has a boot clock, DIR/run/boot-NODE: the boottime
# offset that makes its uptime count from that reboot.  Its slurmd (and all
# it starts) runs in a time namespace of its own with that offset (`unshare`
# does not fork either), so that slurmd reports the uptime of a node that has
# just booted, and every later slurmd the same one.
start_slurmd() {
    local n=$1 pidf=$DIR/run/slurmd-$1.pid holder clock=()
    holder=$(holder_pid "$n") || die "node $n: no namespace to start slurmd in"
    [[ -s $DIR/run/boot-$n ]] && clock=(unshare --time --boottime "$(<"$DIR/run/boot-$n")")
    rm -f "$pidf"
    # shellcheck disable=SC2016  # expanded by the inner shell
    spawn "$DIR/log/slurmd-$n.out" bash -c 'echo $$ >"$1"; shift; exec nsenter -t "$1" -m -u -- "${@:4}" slurmd -D -f "$2" -N "$3"' \
        vc-slurmd "$pidf" "$holder" "$(conf)" "$n" ${clock[@]+"${clock[@]}"}
    wait_pidfile "$pidf" 10 || die "slurmd $n did not start"
}

# Record a node's namespaces so that `down` can find processes left in them
# (e.g. a slurmstepd outliving slurmd). Never record the host's own namespaces:
# `down` kills what it finds in a recorded one.
record_namespaces() {
    local n=$1 pid mnt uts i
    pid=$(<"$DIR/run/holder-$n.pid")
    for ((i = 0; i < 50; i++)); do         # until the shell has set the hostname
        is_alive "$pid" || die "node $n: its namespace holder exited during startup (see $DIR/log/holder-$n.out)"
        uts=$(nsenter -t "$pid" -u hostname 2>/dev/null) || uts=""
        [[ $uts == "$n" ]] && break
        sleep 0.1
    done
    [[ $uts == "$n" ]] || die "node $n: hostname not set in its namespace (see $DIR/log/holder-$n.out)"
    mnt=$(readlink "/proc/$pid/ns/mnt")
    uts=$(readlink "/proc/$pid/ns/uts")
    [[ $mnt != "$(readlink /proc/self/ns/mnt)" && $uts != "$(readlink /proc/self/ns/uts)" ]] ||
        die "node $n: its holder shares the host namespaces"
    echo "$mnt $uts" >"$DIR/run/$n.ns"
}

# all_idle: true if every node is idle. Fails fast if a daemon has died.
all_idle() {
    local n idle
    slurmctld_pid >/dev/null || { say "slurmctld died"; return 2; }
    for n in "${NODES[@]}"; do
        slurmd_pid "$n" >/dev/null || { say "slurmd $n died"; return 2; }
    done
    idle=$(sl sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle" { print $1 }' | sort -u | wc -l) || true
    ((idle == ${#NODES[@]}))
}

wait_for_nodes() {
    local deadline=$((SECONDS + UP_TIMEOUT)) rc
    while ((SECONDS < deadline)); do
        rc=0; all_idle || rc=$?
        ((rc == 0)) && return 0
        ((rc == 2)) && return 1
        sleep 0.25
    done
    say "nodes not idle after ${UP_TIMEOUT}s:"
    sl sinfo -N >&2 || true
    return 1
}

dump_logs() {
    local f
    for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmd-*.log "$DIR"/munge/munged.log "$DIR"/log/*.out; do
        [[ -s $f ]] || continue
        echo "==> $f (last 30 lines) <==" >&2
        tail -n 30 "$f" >&2
    done
}

ensure_test_user() {
    id -u "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$TEST_USER"
    say "test user: $TEST_USER"
}

# EXIT trap of `up`: on failure, show why and leave nothing running.
up_cleanup() {
    local rc=$?
    ((rc == 0)) && return 0
    say "up failed; logs follow, then the cluster is stopped"
    dump_logs
    do_down >/dev/null 2>&1 || true
    exit "$rc"
}

cmd_up() {
    local n size base running
    [[ -n $CONFIG ]] || CONFIG=$DIR/dlstage.toml
    [[ -z $PLUGIN || -r $PLUGIN ]] || die "--plugin $PLUGIN: not a readable file"
    ((${#DIR} + 20 < 108)) || die "--dir $DIR: too long for a unix socket path"

    running=$(live_daemons)
    [[ -z $running ]] ||
        die "$DIR already holds a running cluster (${running//$'\n'/, }); run '$PROG down --dir $DIR' first"
    check_dir_is_ours
    # Processes may linger in the namespaces of a cluster that died without
    # `down` (which removes the pid files and namespace records).
    if compgen -G "$DIR/run/*.ns" >/dev/null || compgen -G "$DIR/run/*.pid" >/dev/null; then
        say "clearing what is left of an earlier cluster in $DIR"
        do_down
    fi

    local t0=$SECONDS
    trap up_cleanup EXIT
    make_dirs
    start_munged
    base=$(pick_ports $((${#NODES[@]} + 1)))
    write_slurm_conf "$base" $((base + 1))
    write_plugstack
    start_slurmctld
    write_hosts
    [[ $ALLOW_OTHER == 1 ]] && printf '# vcluster --user-allow-other\nuser_allow_other\n' >"$DIR/fuse.conf"
    for n in "${NODES[@]}"; do
        size=${SMALL[$n]:-$SHM_SIZE}
        start_node_namespace "$n" "$size"
    done
    for n in "${NODES[@]}"; do record_namespaces "$n"; done
    for n in "${NODES[@]}"; do start_slurmd "$n"; done
    say "slurmctld on 127.0.0.1:$base, slurmd n1..n${#NODES[@]} on :$((base + 1))-$((base + ${#NODES[@]}))${MOVER_NODES[*]+ (mover: ${MOVER_NODES[*]})}"
    wait_for_nodes || die "cluster did not come up"
    ensure_test_user
    trap - EXIT
    say "up: ${#NODES[@]} nodes idle in $((SECONDS - t0))s"
    printf 'export SLURM_CONF=%q\n' "$(conf)"
    printf 'export VCLUSTER_DIR=%q\n' "$DIR"
    printf 'export VCLUSTER_USER=%q\n' "$TEST_USER"
}
