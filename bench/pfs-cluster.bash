# bench/pfs-cluster.bash — what bench/latency and bench/epoch share: pfssim
# mounted at WORK/pfs over WORK/backing, the build installed for a vcluster,
# jobs run inside one salloc as the test user, measurements recorded in one
# CSV (read by latency_csv.py).  Sourced; the caller sets here, root, build,
# work, log, csv, slots, vc, user, python and say(), and PFS_BW, PFS_STREAM,
# PFS_CACHE_S.

cleanup() {
    "$root/tests/cluster/vcluster" down --dir "$vc" >/dev/null 2>&1 || true
    stop_pfs
}

# A vcluster's node namespaces keep their copy of the mount (and with it
# the FUSE connection) beyond fusermount -u on the host: pfssim is stopped
# by its pid (SIGTERM: it writes its final stats and exits).
pfssim_pid=
stop_pfs() {
    fusermount3 -u "$work/pfs" 2>/dev/null || umount -l "$work/pfs" 2>/dev/null || true
    [ -n "$pfssim_pid" ] || return 0
    kill -TERM "$pfssim_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pfssim_pid" 2>/dev/null || break; sleep 0.1; done
    pfssim_pid=
}

install_build() {  # BUILD_DIR DEST
    rm -rf "$2"
    make -C "$1" -s install DESTDIR="$2" >/dev/null
    chmod -R a+rX "$2"
}

# The build installed in WORK/inst for the vcluster, with pfssim and the
# epoch script in WORK; sets plugin and dlstage_bin.  TARGETS: more of the
# build's programs the caller installs itself.
install_cluster_build() {  # [TARGETS...]
    say "installing the build from $build, with pfssim"
    make -C "$build" -s -j2 all tests/pfssim/pfssim "$@" >/dev/null
    install_build "$build" "$work/inst"
    plugin=$(find "$work/inst" -name dlstage.so)
    dlstage_bin=$(find "$work/inst" -path '*/bin/dlstage')
    install -m 0755 "$build/tests/pfssim/pfssim" "$work/pfssim"
    install -m 0644 "$root/examples/pytorch/epoch.py" "$work/epoch.py"
}

# WORK/backing/DIR: JPEGs made by make-jpegs.py with ARGS, kept while the
# arguments stay the same (generating thousands takes a while).
make_jpegs() {  # DIR ARGS...
    local backing="$work/backing" stamp="$*"
    if [ "$(cat "$backing/.stamp" 2>/dev/null)" = "$stamp" ]; then
        say "images present ($stamp)"
        return
    fi
    say "generating JPEGs: $stamp"
    rm -rf "$backing"
    "$python" "$here/make-jpegs.py" "$backing/$1" "${@:2}"
    chmod -R a+rX "$backing"
    echo "$stamp" >"$backing/.stamp"
}

# --direct-io: every reader pays for every byte, as bench/run's pfs mount:
# the nodes of this machine share one page cache.
mount_pfs() {  # LATENCY_MS
    stop_pfs  # the last one gone first: its final stats must not overwrite the new one's
    mkdir -p "$work/pfs"
    "$work/pfssim" "$work/backing" "$work/pfs" --bandwidth "$PFS_BW" --stream-bandwidth "$PFS_STREAM" \
        --meta-latency-ms "$1" --meta-slots "$slots" --stats "$work/pfs-stats" \
        --entry-timeout "$PFS_CACHE_S" --attr-timeout "$PFS_CACHE_S" --direct-io -o allow_other 2>>"$log"
    for _ in $(seq 50); do mountpoint -q "$work/pfs" && break; sleep 0.1; done
    mountpoint -q "$work/pfs" || { say "pfssim did not mount"; exit 1; }
    pfssim_pid=$(pgrep -n -f "pfssim $work/backing $work/pfs ")
}

# Metadata operations pfssim has served so far.
meta_ops() {
    kill -USR1 "$pfssim_pid"
    sleep 0.2
    sed -n 's/^meta_ops=//p' "$work/pfs-stats"
}

# A site configuration with one dataset, jpegs, at WORK/pfs/jpegs, to
# /dev/shm; WORK/jobs is where the test user's jobs start.
write_config() {
    cat >"$work/dlstage.toml" <<TOML
[site]
state_dir = "$work/state"
default_tier = "shm"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[datasets.jpegs]
source = "$work/pfs/jpegs"
tiers = ["shm"]
TOML
    chmod 0644 "$work/dlstage.toml"
    mkdir -p "$work/state" "$work/jobs"
    chown "$user" "$work/jobs"
}

# SCRIPT inside one salloc of N nodes, as the test user, after an untimed
# srun (the allocation and the first step's start are not measured); PFS
# and EPOCH (examples/pytorch/epoch.py under Debian's python) are set.
in_alloc() {  # N SCRIPT [SALLOC_ARGS...]
    local n=$1 script=$2
    shift 2
    (cd "$work/jobs" && runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" OMPI_MCA_btl_tcp_if_include=lo \
        PFS="$work/pfs" EPOCH="$python $work/epoch.py" \
        salloc -Q -N"$n" "$@" bash -c "srun -N$n true; $script" 2>>"$log")
}

# A vcluster of N nodes loading the plugin of DLSTAGE_BIN's install, with
# pfssim mounted first (the nodes see the mounts there were when they
# started, each its own mount namespace).
cluster_up() {  # N LATENCY_MS PLUGIN DLSTAGE_BIN
    "$root/tests/cluster/vcluster" down --dir "$vc" >/dev/null 2>&1 || true
    mount_pfs "$2"
    # shellcheck disable=SC1090
    eval "$("$root/tests/cluster/vcluster" up --nodes "$1" --dir "$vc" --shm-size 2g \
        --plugin "$3" --plugin-arg "dlstage=$4" --config "$work/dlstage.toml" 2>>"$log")"
}

new_csv() {
    echo "nodes,latency_ms,what,seconds,meta_ops" >"$csv"
}

record() {  # N LATENCY WHAT SECONDS META_OPS
    echo "$*" | tr ' ' ',' >>"$csv"
    say "N=$1 ${2} ms $3: $4 s ($5 metadata ops)"
}
