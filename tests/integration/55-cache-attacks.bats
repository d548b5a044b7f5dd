#!/usr/bin/env bats
# A hostile user against root's node cache code.  The other test
# user (the attacker) controls what is in their own cache directory; root
# measures and evicts every user's entries there, and takes the node's cache
# lock to do it.  Each time: the two victims' (dlstest's and dlstest3's)
# jobs run without waiting and keep their entries, gc ends, nothing holds
# the lock afterwards, no node is drained.
# - a FUSE mount in the attacker's cache directory whose server is stopped:
#   root's measuring child once hung in it, holding the lock;
# - the lock held by someone else: gc waits for it with a deadline;
# - a forged size in the job's control environment (SPANK_DLSTAGE_FACTS,
#   which the submitting user's own sbatch/srun sets): root evicted others'
#   entries to make room for a claimed size;
# - an entry name with spaces and a newline: it once forged the measuring
#   child's line-based output;
# - names whose dataset part is empty ("...tmp.x", ".partial-"): neither
#   measured nor evicted once, they took the tier past its watermark.
# The sources are behind pfssim on every node, as in 54-cache.bats.

load helpers

PFS="$DLSTAGE_TEST_DIR/pfs-cache"
SRC="$DLSTAGE_TEST_DIR/data/cache-src"
PFSSIM="$DLSTAGE_TEST_DIR/bin/pfssim"
CONF="$DLSTAGE_TEST_DIR/dlstage.toml"
LOG_N1="$VCLUSTER_DIR/log/slurmd-n1.log"
LOCK_N1="$STATE/cache/n1/lock"

# pfssim's counts (helpers.bash mount_pfs), apart from 54-cache's.
stats_of() { echo "$DLSTAGE_TEST_DIR/pfs-stats-55-$1"; }

setup_file() {
    for where in host n1 n2 n3; do mount_pfs "$where"; done
}

# n1's cache as the tests leave it goes: later files find room there.
teardown_file() {
    for where in host n1 n2 n3; do unmount_pfs "$where"; done
    clear_cache
}

cache_of() { echo "/local/dlcache/.cache/$1"; }

# The attacker's FUSE mount (test a).
ATTACK_MNT=/local/dlcache/.cache/dlstest2/zz

# Whatever a test failed in: the attacker's squashfuse goes (SIGKILL ends a
# stopped process too, and aborts its FUSE connection, so that nothing
# waiting in the mount stays stuck), then the mount (lazily: no stat of
# it) and the attacker's cache directory; a lock holder of test b goes.
teardown() {
    scancel -u "$VCLUSTER_USER" 2>/dev/null || true
    scancel -u "$OTHER_USER" 2>/dev/null || true
    scancel -u "$THIRD_USER" 2>/dev/null || true
    if [ -n "${restore_conf:-}" ]; then
        cp "$BATS_TEST_TMPDIR/dlstage.toml.saved" "$CONF"
        restore_conf=""
    fi
    if [ -n "${gc_pid:-}" ]; then
        kill -CONT "$gc_pid" ${gc_child:+"$gc_child"} 2>/dev/null || true
        wait "$gc_bg" 2>/dev/null || true
    fi
    if [ -n "${slow_pfs:-}" ]; then
        unmount_pfs n1
        mount_pfs n1
        slow_pfs=""
    fi
    if [ -n "${holder:-}" ]; then
        sleeper=$(pgrep -P "$holder" || true)
        # shellcheck disable=SC2086  # none, or one pid
        kill -KILL "$holder" $sleeper 2>/dev/null || true
        wait "$holder" 2>/dev/null || true
    fi
    if [ -n "${held_stage:-}" ]; then
        kill "$held_stage" 2>/dev/null || true
        pkill -CONT -u "$OTHER_USER" -f "dlstage stage --quiet" 2>/dev/null || true
        wait 2>/dev/null || true
        held_stage=""
    fi
    pkill -KILL -u "$OTHER_USER" -x squashfuse 2>/dev/null || true
    for _ in $(seq 50); do pgrep -u "$OTHER_USER" -x squashfuse >/dev/null || break; sleep 0.1; done
    if on_node n1 awk -v m="$ATTACK_MNT" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; then
        on_node n1 umount -l -c "$ATTACK_MNT" || true
    fi
    on_node n1 rm -rf "$(cache_of "$OTHER_USER")" "$(cache_of dlstest4)" "$(cache_of dlstest5)"
}

# clear_cache: n1's cache tier holds no one's entries.
clear_cache() {
    on_node n1 bash -c 'rm -rf /local/dlcache/.cache/*/* /local/dlcache/.cache/*/.[!.]*'
}

# stage_on_n1 WHO DATASET: a job of WHO (as_user, as_other, as_third) on n1
# staging DATASET; prints its output, sets $output, $status and $job.
stage_on_n1() {
    run "$1" timeout 60 srun -w n1 -N1 --stage-data="$2" bash -c 'echo "JOB $SLURM_JOB_ID"'
    echo "$output"
    job=$(grep -oE '^JOB [0-9]+' <<<"$output" | cut -d' ' -f2 || true)
}

# gc_n1 CONF ARGS...: dlstage gc on n1, as root, its stderr in $GC_ERR.
gc_n1() {
    on_node n1 timeout 120 "$DLSTAGE_BIN" -c "$1" gc "${@:2}" 2>"$GC_ERR"
}

# now_ms: the time in milliseconds.
now_ms() {
    local t=${EPOCHREALTIME//[.,]/}
    echo $((t / 1000))
}

# The line root reports for the attacker's mount, as measuring and evicting.
not_entered() {
    echo "$ATTACK_MNT: a mount (fuse.squashfuse) at $ATTACK_MNT; not entered: neither measured nor evicted"
}

@test "a user's hung FUSE mount in their cache directory: two other users' jobs on the node run without waiting, gc ends, nothing holds the lock" {
    clear_cache
    # The attacker's cache directory on n1, by a job of theirs.
    stage_on_n1 as_other cached-file
    [ "$status" -eq 0 ]
    # A squashfuse in it (it daemonizes: it outlives the job), looked at, then stopped.
    run as_other timeout 60 srun -w n1 -N1 bash -c '
        mkdir "$0" && squashfuse -o allow_other "$1" "$0" && ls "$0" >/dev/null &&
        pkill -STOP -u "$USER" -f "^squashfuse .* $0\$" && echo STOPPED' "$ATTACK_MNT" "$DATA/tree.sqfs"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx STOPPED <<<"$output"
    on_node n1 awk -v m="$ATTACK_MNT" '$5 == m && / - fuse\.squashfuse / { f = 1 } END { exit !f }' /proc/self/mountinfo
    server=$(pgrep -u "$OTHER_USER" -x squashfuse)
    [[ $(ps -o stat= -p "$server") == T* ]]

    # Two other users' jobs on n1, one after the other: neither waits for
    # the mount (the measuring step's bound is 15 s), both get their data.
    t0=$SECONDS
    stage_on_n1 as_user lru1
    took=$((SECONDS - t0))
    [ "$status" -eq 0 ]
    [ "$took" -lt 12 ] || { echo "dlstest's job took $took s"; false; }
    first=$job
    t0=$SECONDS
    stage_on_n1 as_third lru2
    took=$((SECONDS - t0))
    [ "$status" -eq 0 ]
    [ "$took" -lt 12 ] || { echo "dlstest3's job took $took s"; false; }
    second=$job
    wait_job_gone "$first" 30
    wait_job_gone "$second" 30
    [ "$(job_state "$first")" = COMPLETED ]
    [ "$(job_state "$second")" = COMPLETED ]
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    on_node n1 test -d "$(cache_of "$THIRD_USER")/lru2"
    # The prologs said why the attacker's entry was left out.
    grep -F "job $first on n1: node cache 'cache': $(not_entered)" "$LOG_N1"
    grep -F "job $second on n1: node cache 'cache': $(not_entered)" "$LOG_N1"

    # gc ends, soon, saying so: a problem.
    GC_ERR="$BATS_TEST_TMPDIR/gc.err"
    t0=$SECONDS
    run gc_n1 "$CONF" --tier cache
    took=$((SECONDS - t0))
    echo "$output"
    cat "$GC_ERR"
    [ "$status" -eq 1 ]
    [ "$took" -lt 30 ] || { echo "gc took $took s"; false; }
    grep -Fx "dlstage: gc: tier 'cache': $(not_entered)" "$GC_ERR"
    doc_says "$MAN1" 'not entered: neither measured nor evicted' mallory=dlstest2 ssd=cache <"$GC_ERR"
    # Nothing of root's waits in the mount holding the lock.
    flock -n "$LOCK_N1" true
    # The mount is still there, its server still stopped: nothing went in.
    [[ $(ps -o stat= -p "$server") == T* ]]
    assert_healthy
}

@test "gc waits for the node cache lock with a deadline" {
    [ -e "$LOCK_N1" ] || { stage_on_n1 as_user cached-file; [ "$status" -eq 0 ]; }
    # The same gc with the lock free: how long it takes on this cluster.
    GC_ERR="$BATS_TEST_TMPDIR/gc-free.err"
    t0=$(now_ms)
    run gc_n1 "$CONF" --tier cache
    base=$(($(now_ms) - t0))
    echo "$output"
    cat "$GC_ERR"
    # Held by another root process (-o: flock alone holds it, not its sleep).
    flock -o "$LOCK_N1" sleep 60 >/dev/null 2>&1 3>&- &
    holder=$!
    for _ in $(seq 50); do flock -n "$LOCK_N1" true || break; sleep 0.1; done
    ! flock -n "$LOCK_N1" true || { echo "the lock is not held"; false; }
    conf="$DLSTAGE_TEST_DIR/gc-lock-55.toml"
    sed '/^\[site\]/a prolog_epilog_timeout = 5' "$CONF" >"$conf"
    GC_ERR="$BATS_TEST_TMPDIR/gc.err"
    t0=$(now_ms)
    run gc_n1 "$conf" --tier cache
    took=$(($(now_ms) - t0))
    echo "$output"
    cat "$GC_ERR"
    [ "$status" -eq 1 ]
    # It waited about 5 s for the lock, on top of what the same gc takes
    # with the lock free (it asks Slurm first: scontrol listpids alone may
    # take seconds on the test cluster).
    waited=$((took - base))
    echo "gc took $took ms, $base ms with the lock free: waited $waited ms"
    [ "$waited" -ge 4000 ] && [ "$waited" -le 10000 ]
    grep -Fx "dlstage: gc: tier 'cache': the node cache lock $LOCK_N1 is still held after 5 s (a prolog, an epilog or another gc on this node); the tier was skipped, run gc again later" "$GC_ERR"
    doc_says "$MAN1" 'the node cache lock .* is still held' ssd=cache <"$GC_ERR"
    kill -0 "$holder"  # it held the lock all along
    sleeper=$(pgrep -P "$holder" || true)
    # shellcheck disable=SC2086  # none, or one pid
    kill -KILL "$holder" $sleeper 2>/dev/null || true
    wait "$holder" 2>/dev/null || true
    holder=""
    flock -w 5 "$LOCK_N1" true
    assert_healthy
}

# victim_fills_n1: n1's cache emptied, then dlstest's lru1 and lru2 in it
# (30 MiB, under the tier's high watermark: 90% of 48M), a second apart.
victim_fills_n1() {
    clear_cache
    for ds in lru1 lru2; do
        stage_on_n1 as_user "$ds"
        [ "$status" -eq 0 ]
        sleep 1.1
    done
}

@test "a forged claimed size makes root evict nothing of others" {
    victim_fills_n1
    # The attacker's sbatch claims 40 MB for a 3 MiB dataset: a shim between
    # the plugin and Slurm rewrites what the plugin puts in the job's
    # control environment.
    shim="$DLSTAGE_TEST_DIR/bin/forge-facts-55.so"
    cat >"$BATS_TEST_TMPDIR/forge.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
int spank_job_control_setenv(void *sp, const char *var, const char *val, int overwrite)
{
    int (*real)(void *, const char *, const char *, int) =
        (int (*)(void *, const char *, const char *, int))dlsym(RTLD_NEXT, "spank_job_control_setenv");
    if (var && strcmp(var, "DLSTAGE_FACTS") == 0)
        val = "cached-file=40000000/1";
    return real ? real(sp, var, val, overwrite) : 1;
}
C
    cc -shared -fPIC -o "$shim" "$BATS_TEST_TMPDIR/forge.c" -ldl
    chmod 0755 "$shim"
    # sbatch: a batch job's environment shows its control environment
    # (SLURM_SPANK_*), an srun's tasks' does not.
    run as_other env LD_PRELOAD="$shim" sbatch --parsable -w n1 -N1 -o forged.txt --stage-data=cached-file \
        --wrap 'echo "FACTS $SLURM_SPANK_DLSTAGE_FACTS"'
    echo "$output"
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_job_gone "$job" 60
    out="$(user_workdir)-other/forged.txt"
    cat "$out"
    [ "$(job_state "$job")" = COMPLETED ]
    # The forged value is what the prolog got: the same control environment.
    grep -qx "FACTS cached-file=40000000/1" "$out"
    entries=$(on_node n1 ls "$(cache_of "$VCLUSTER_USER")")
    echo "$entries"
    grep -qx lru1 <<<"$entries"
    grep -qx lru2 <<<"$entries"
    ! grep -E "job $job on n1: node cache 'cache': evicted $VCLUSTER_USER/" "$LOG_N1" || false
    assert_healthy
}

@test "entry names that would forge the measurement are measured as they are" {
    victim_fills_n1
    # The attacker's entry "x 999999999999 1 1<newline>lru9" (a line of the
    # old measurement: 931 GiB) with a small file in it.
    run as_other env NAME=$'x 999999999999 1 1\nlru9' timeout 60 srun -w n1 -N1 --stage-data=cached-file \
        bash -c 'mkdir "$0/$NAME" && echo small >"$0/$NAME/f" && echo PLANTED' "$(cache_of "$OTHER_USER")"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx PLANTED <<<"$output"
    on_node n1 test -f "$(cache_of "$OTHER_USER")/x 999999999999 1 1"$'\n'"lru9/f"
    # Root's view: no entry of 931 GiB, dlstest's entries as they are.
    run on_node n1 "$DLSTAGE_BIN" -c "$CONF" status --node n1 --json
    [ "$status" -eq 0 ]
    python3 - "$output" "$VCLUSTER_USER" "$OTHER_USER" <<'PY'
import json, sys
text, victim, attacker = sys.argv[1:]
doc = json.loads(text[text.index("{"):text.rindex("}") + 1])
cache = next(t for t in doc["tiers"] if t["tier"] == "cache")["cache_entries"]
for e in cache:
    print(e["users"], repr(e["dataset"]), e["bytes"])
    assert e["bytes"] < 1 << 30, e
mine = {e["dataset"] for e in cache if e["users"] == [victim]}
assert {"lru1", "lru2"} <= mine, mine
# The attacker's entry is one entry, by its whole name, of its real size.
theirs = {e["dataset"]: e["bytes"] for e in cache if e["users"] == [attacker]}
assert "x" not in theirs and "lru9" not in theirs, theirs
assert theirs.get("x 999999999999 1 1\nlru9", 1 << 20) < 1 << 20, theirs
PY
    # dlstest3's 15 MiB on top: real sizes need one entry to go (the least
    # recently used: dlstest's lru1), no more.
    stage_on_n1 as_third lru3
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    entries=$(on_node n1 ls "$(cache_of "$VCLUSTER_USER")")
    echo "$entries"
    grep -qx lru2 <<<"$entries"
    on_node n1 test -d "$(cache_of "$THIRD_USER")/lru3"
    ! grep -E "job $job on n1: node cache 'cache': evicted $VCLUSTER_USER/lru2" "$LOG_N1" || false
    assert_healthy
}

# gc_stopped_after_asking CONF ARGS...: dlstage gc on n1 in the background,
# stopped (SIGSTOP, with its child) once its first part's child is at work:
# Slurm was asked, the node cache not yet looked at.  A user's leftover job
# directory of millions of files holds that window open for minutes; the
# test holds it open by stopping gc.  Sets $gc_pid and $gc_child.
gc_stopped_after_asking() {
    on_node n1 "$DLSTAGE_BIN" -c "$1" gc "${@:2}" >"$BATS_TEST_TMPDIR/gc.out" 2>"$BATS_TEST_TMPDIR/gc.err" &
    gc_bg=$!
    gc_pid="" gc_child=""
    for _ in $(seq 2000); do
        [ -n "$gc_pid" ] || gc_pid=$(pgrep -f "dlstage -c $1 gc" | head -1 || true)
        if [ -n "$gc_pid" ]; then
            gc_child=$(pgrep -P "$gc_pid" -x dlstage || true)
            if [ -n "$gc_child" ]; then
                kill -STOP "$gc_pid"
                kill -STOP "$gc_child" 2>/dev/null || true  # done already: gc stopped before the next part
                return 0
            fi
        fi
        sleep 0.005
    done
    echo "gc's first part never started"
    return 1
}

@test "gc asks Slurm again before the node cache: a job that started meanwhile keeps its use and its unfinished entry" {
    clear_cache
    # A leftover job directory of an ended job in the cache tier, for gc's
    # first part to remove: 20,000 files.
    on_node n1 bash -c 'd=/local/dlcache/99999991 && mkdir -p "$d" && cd "$d" && seq 20000 | xargs touch &&
        chown -R "$0" "$d" && touch -d "2 days ago" "$d"' "$VCLUSTER_USER"
    conf="$DLSTAGE_TEST_DIR/gc-stale-55.toml"
    sed '/^\[site\]/a gc_grace = 1' "$CONF" >"$conf"
    sleep 2.1  # the leftover is past that grace
    gc_stopped_after_asking "$conf" --tier cache -v
    # Meanwhile a job starts on n1: its prolog records its use of lru1, and
    # its stager is still at work on it (no ready record yet: the job's
    # script takes it away, as a stager still writing has none).
    mine=$(cache_of "$VCLUSTER_USER")
    go="$(user_workdir)/started-55"
    rm -f "$go"
    run as_user sbatch --parsable -w n1 -o /dev/null --stage-data=lru1 \
        --wrap "rm $mine/.ready-lru1.toml && touch $go && sleep 120"
    [ "$status" -eq 0 ]
    job=$output
    for _ in $(seq 300); do [ -e "$go" ] && break; sleep 0.2; done
    [ -e "$go" ]
    [ "$(job_state "$job")" = RUNNING ]
    kill -CONT "$gc_child" "$gc_pid"
    wait "$gc_bg" || true
    cat "$BATS_TEST_TMPDIR/gc.out" "$BATS_TEST_TMPDIR/gc.err"
    # The leftover went; the running job's use and entry stayed.
    grep -q "removed /local/dlcache/99999991" "$BATS_TEST_TMPDIR/gc.out"
    ! grep -F "job $job" "$BATS_TEST_TMPDIR/gc.out" | grep -v "^keep" || false
    on_node n1 test -f "$STATE/cache/n1/jobs/$job.toml"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    grep -Fx "keep cache entry $VCLUSTER_USER/lru1 (tier 'cache', 15.0 MiB): in use by a running job" \
        "$BATS_TEST_TMPDIR/gc.out"
    scancel "$job"
    wait_job_gone "$job" 30
    assert_healthy
}

@test "root's node cache records are private: another user learns no one's datasets or jobs from them" {
    clear_cache
    run as_user sbatch --parsable -w n1 -o /dev/null --stage-data=lru1 --wrap 'sleep 120'
    [ "$status" -eq 0 ]
    job=$output
    ready="$(cache_of "$VCLUSTER_USER")/.ready-lru1.toml"
    for _ in $(seq 150); do on_node n1 test -f "$ready" && break; sleep 0.2; done
    on_node n1 test -f "$ready"
    uid=$(id -u "$VCLUSTER_USER")
    [ -f "$STATE/cache/n1/jobs/$job.toml" ]
    [ -f "$STATE/cache/n1/last-use/cache.$uid.lru1" ]
    # The attacker lists and reads root's records: nothing.
    run as_other ls "$STATE/cache/n1/last-use" "$STATE/cache/n1/jobs"
    echo "$output"
    [ "$status" -ne 0 ]
    ! grep -q lru1 <<<"$output" || false
    run as_other cat "$STATE/cache/n1/jobs/$job.toml"
    [ "$status" -ne 0 ]
    ! grep -q lru1 <<<"$output" || false
    for d in "" /jobs /last-use; do [ "$(stat -c %a "$STATE/cache/n1$d")" = 700 ]; done
    [ "$(stat -c %a "$STATE/cache/n1/jobs/$job.toml")" = 600 ]
    [ "$(stat -c %a "$STATE/cache/n1/last-use/cache.$uid.lru1")" = 600 ]
    # The user still sees their own entry, without root's columns, and why.
    run as_user srun -w n1 -N1 "$DLSTAGE_BIN" --config "$CONF" status --node n1
    echo "$output"
    [ "$status" -eq 0 ]
    grep -Eq "^cache +lru1 +$VCLUSTER_USER +15\.0[0-9]*M +1 +- +-$" <<<"$output"
    grep -Fx "LAST_USE and JOBS come from root's records on the node: run dlstage status --node as root to see them" <<<"$output"
    # Root sees them.
    run on_node n1 "$DLSTAGE_BIN" --config "$CONF" status --node n1
    echo "$output"
    grep -Eq "^cache +lru1 +$VCLUSTER_USER +15\.0[0-9]*M +1 +20[0-9-]+T[0-9:]+ +$job$" <<<"$output"
    scancel "$job"
    wait_job_gone "$job" 30
    assert_healthy
}

@test "a cache directory moved aside as untrusted is still measured, gc would collect it, a prolog evicts it first" {
    clear_cache
    on_node n1 bash -c 'rm -rf /local/dlcache/.cache/*.untrusted-*'
    # The attacker's cache directory with 20 MiB in it, then their own FUSE
    # mount on the directory itself: measuring leaves it out.
    stage_on_n1 as_other cached-file
    [ "$status" -eq 0 ]
    run as_other timeout 60 srun -w n1 -N1 bash -c '
        head -c 20M /dev/urandom >"$0/filler" && squashfuse -o allow_other "$1" "$0" && echo MOUNTED' \
        "$(cache_of "$OTHER_USER")" "$DATA/tree.sqfs"
    echo "$output"
    grep -qx MOUNTED <<<"$output"
    # Their next job's prolog detaches the mount and moves the directory
    # aside: 23 MiB (the filler and cached-file) that no entry of today's main holds.
    stage_on_n1 as_other cached-file
    [ "$status" -eq 0 ]
    aside=$(on_node n1 bash -c 'ls -d /local/dlcache/.cache/dlstest2.untrusted-*')
    echo "aside: $aside"
    [ -n "$aside" ]
    on_node n1 test -f "$aside/filler"
    # gc sees it, as an entry of the attacker's (dry run: it stays for now).
    conf="$DLSTAGE_TEST_DIR/gc-aside-55.toml"
    sed '/^\[site\]/a gc_grace = 1' "$CONF" >"$conf"
    sleep 2.1
    GC_ERR="$BATS_TEST_TMPDIR/gc.err"
    run gc_n1 "$conf" --tier cache --dry-run
    echo "$output"
    cat "$GC_ERR"
    grep -Fx "would remove cache entry ${aside##*/} (moved aside) (tier 'cache', 23.0 MiB): a prolog moved it aside as untrusted (it held a mount, or another uid's); no job can use it" <<<"$output"
    # (the man page shows the line gc prints when it removes it)
    sed 's/^would remove /removed /' <<<"$output" |
        doc_says "$MAN1" 'a prolog moved it aside as untrusted' mallory=dlstest2 ssd=cache
    # dlstest's 30 MiB on top is over the high watermark (43.2 MiB) with
    # the aside counted: the aside, never used, goes first.
    for ds in lru1 lru2; do
        stage_on_n1 as_user "$ds"
        [ "$status" -eq 0 ]
    done
    grep -F "node cache 'cache': evicted ${aside##*/} (moved aside)" "$LOG_N1"
    ! on_node n1 test -e "$aside" || false
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru2"
    assert_healthy
}

# n1_slurmd_pid: the pid of n1's slurmd (in n1's mount namespace, seen
# from the host), whose namespace pgrep --ns picks n1's processes by.
n1_slurmd_pid() {
    local n1_ns pid
    n1_ns=$(on_node n1 readlink /proc/self/ns/mnt)
    for pid in $(pgrep -x slurmd); do
        [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" != "$n1_ns" ] || { echo "$pid"; return 0; }
    done
    return 1
}

# hold_measuring UID...: in the background, every measuring child on n1
# acting for one of UIDs (root's real uid, the user's effective one: act_as)
# is stopped as soon as it appears, as a directory of millions of files or a
# slow disk would hold it, until its bound ends it; and n1's eviction count
# keeps changing, as other prologs evicting would, so that a prolog always
# measures again under the lock.  Sets $holder.
# Only n1's processes (its mount namespace, that of its slurmd): the other
# test cluster's slurmstepd also runs as root with a user's effective uid at
# times, and one stopped there never ends its job.  stop-measuring looks at
# new processes about once a millisecond: loops of pgrep let CI runs'
# measuring finish first.
hold_measuring() {
    stop_measuring_on_n1 --bump "$STATE/cache/n1/evictions" "$@"
}

# stop_measuring_on_n1 ARG...: stop-measuring in the background for n1's
# children (its options and the uids in ARGs), once it looks (a child
# forked before it started is never caught: under CI's load one was).
# Sets $holder.
stop_measuring_on_n1() {
    local n1_slurmd ready="$BATS_TEST_TMPDIR/stop-measuring.ready"
    n1_slurmd=$(n1_slurmd_pid) || { echo "no slurmd of n1 found"; return 1; }
    rm -f "$ready"
    "$BATS_TEST_DIRNAME/stop-measuring" "$(readlink "/proc/$n1_slurmd/ns/mnt")" --ready "$ready" "$@" \
        >/dev/null 2>&1 3>&- &
    holder=$!
    for _ in $(seq 100); do [ -e "$ready" ] && return 0; sleep 0.1; done
    echo "stop-measuring did not start"
    return 1
}

@test "everything a prolog does under the node cache lock has one deadline, however many users' directories are slow" {
    clear_cache
    # dlstest's lru2 and lru3 (30 MiB) and three attackers' entries: lru1
    # on top is over the high watermark, so the victim's prolog measures.
    for ds in lru2 lru3; do stage_on_n1 as_user "$ds"; [ "$status" -eq 0 ]; done
    attackers=""
    for who in "$OTHER_USER" dlstest4 dlstest5; do
        # 60,000 names in it: measuring takes long enough to be caught
        # (with 20,000 a CI run once measured all three before the loop
        # below looked).
        run as_someone "$who" "$who" timeout 120 srun -w n1 -N1 --stage-data=cached-file \
            bash -c 'mkdir "$0/many" && cd "$0/many" && seq 60000 | xargs touch' "$(cache_of "$who")"
        [ "$status" -eq 0 ]
        attackers="$attackers $(id -u "$who")"
    done
    # Their epilogs are done (each measures too).
    for _ in $(seq 150); do [ -z "$(squeue -h -u "$OTHER_USER,dlstest4,dlstest5")" ] && break; sleep 0.2; done
    # The site's prolog time cut to 12 s for this test: 2.4 s to measure.
    cp "$CONF" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
    sed -i '/^\[site\]/a prolog_epilog_timeout = 12' "$CONF"
    hold_measuring $attackers
    t0=$SECONDS
    stage_on_n1 as_user lru1
    took=$((SECONDS - t0))
    echo "the victim's job took $took s"
    [ "$status" -eq 0 ]
    # Its prolog finished: measuring took its 2.4 s, under the lock 1.2 s
    # more, then it evicted; not 3 s for each attacker each time (18 s: the
    # prolog's 12 s ran out, the lock held all along).  What was left
    # to evict when its time was up, the epilog or gc evicts.
    ! grep -F "job $job on n1: the prolog " "$LOG_N1" || false
    grep -F "job $job on n1: stage-data=lru1 prepared" "$LOG_N1"
    # Each attacker's directory got its share of those 2.4 s, or none left.
    grep -E "job $job on n1: node cache 'cache': /local/dlcache/.cache/dlstest[245]: (did not finish within [0-9.]+ s|not measured: the [0-9]+ s for measuring the node cache are up; its entries are left out)" "$LOG_N1"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    [ "$took" -lt 12 ]
    assert_healthy
}

@test "a sparse source is counted as the room its copy takes: the stager keeps no holes" {
    clear_cache
    # 20 MiB that take 4 KiB on the source.
    [ "$(stat -c %s "$SRC/sparse.bin")" -eq $((20 << 20)) ]
    [ "$(du -k "$SRC/sparse.bin" | cut -f1)" -le 64 ]
    for ds in lru2 lru3; do stage_on_n1 as_user "$ds"; [ "$status" -eq 0 ]; sleep 1.1; done
    # The attacker's sparse dataset on top (30 + 20 MiB, over the high
    # watermark of 43.2 MiB): the prolog makes room for 20 MiB, the least
    # recently used entry (lru2) goes.
    stage_on_n1 as_other sparse
    [ "$status" -eq 0 ]
    grep -F "job $job on n1: node cache 'cache': evicted $VCLUSTER_USER/lru2" "$LOG_N1"
    # ... and the copy takes those 20 MiB: the room made was needed, no more.
    copy="$(cache_of "$OTHER_USER")/sparse/sparse.bin"
    on_node n1 cmp "$SRC/sparse.bin" "$copy"
    taken=$(on_node n1 du -k "$copy" | cut -f1)
    echo "the copy takes $taken KiB"
    [ "$taken" -ge $((20 * 1024)) ]
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru3"
    assert_healthy
}

# hold_first_measuring UID: hold_measuring, for the first child on n1 acting
# for UID only: it is stopped as soon as it appears (in a prolog, the one
# measuring UID's cache directory), until its bound ends it; then nothing
# more is stopped, so that a later child acting for UID (evicting one of
# their entries) runs as it would.  n1's eviction count is left alone: the
# prolog measures once.  Sets $holder (it exits once it stopped one).
hold_first_measuring() {
    stop_measuring_on_n1 --first "$1"
}

# victim_then_attacker: the victim's lru2, then the attacker's lru3 (15 MiB
# each), each measured whole by its job's epilog: of the two, the victim's
# was used least recently.
victim_then_attacker() {
    stage_on_n1 as_user lru2
    [ "$status" -eq 0 ]
    sleep 1.1
    stage_on_n1 as_other lru3
    [ "$status" -eq 0 ]
}

# attacker_grows_lru3 SCRIPT: a job of the attacker's on n1 runs SCRIPT in
# their lru3 (bash, $0 the directory); then, every job's epilog done (each
# measures the attacker's directory too), the site's prolog time is cut to
# 12 s for the test: 2.4 s for measuring.
attacker_grows_lru3() {
    run as_other timeout 60 srun -w n1 -N1 bash -c "$1" "$(cache_of "$OTHER_USER")/lru3"
    [ "$status" -eq 0 ]
    for _ in $(seq 150); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
    [ -z "$(squeue -h)" ]
    cp "$CONF" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
    sed -i '/^\[site\]/a prolog_epilog_timeout = 12' "$CONF"
}

@test "a user's cache directory too slow to measure is still counted: its unused entries are evicted" {
    clear_cache
    victim_then_attacker
    # 60,000 names in the attacker's entry (1.2 MiB more): measuring their
    # directory takes long enough to be caught (with 20,000 it was done
    # before the loop below looked, one run in two), removing it 0.4 s.
    # The first child acting for the attacker is then the victim's prolog's.
    attacker_grows_lru3 'mkdir "$0/many" && cd "$0/many" && seq 60000 | xargs touch'
    hold_first_measuring "$(id -u "$OTHER_USER")"
    # The victim's lru1 on top: 45 MiB, over the high watermark (90% of
    # 48M: 43.2 MiB).  The attacker's directory, too slow to measure, still
    # holds 15 MiB of the tier: no watermark may overlook them.  Counted,
    # and unmeasured, its entries no running job uses go (not the
    # victim's lru2, though used less recently).
    stage_on_n1 as_user lru1
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    grep -F "job $job on n1: " "$LOG_N1"
    # The prolog did not measure the attacker's directory (the scenario held).
    grep -qF "job $job on n1: node cache 'cache': $(cache_of "$OTHER_USER"): " "$LOG_N1"
    ! on_node n1 test -e "$(cache_of "$OTHER_USER")/lru3" || false
    # Evicted as an entry its child listed, or, caught before it listed,
    # as the attacker's whole directory (renamed aside: no job of theirs
    # runs there).
    grep -qE "job $job on n1: node cache 'cache': evicted ($OTHER_USER/lru3|$OTHER_USER's cache directory \(not listed in time\))" \
        "$LOG_N1"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru2"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    assert_healthy
}

# hold_measuring_midway UID: every child on n1 acting for UID that has
# written twice (a measuring child: its listing, then a first count of
# what it walked) is stopped there until its bound ends it, as a directory
# too large to measure in its owner's share would stop it; a child that
# evicts (it writes once, as it ends) runs.  Sets $holder.
hold_measuring_midway() {
    stop_measuring_on_n1 --after-writes 2 "$1"
}

@test "an entry that grew while too slow to measure counts at least what its measuring counted" {
    clear_cache
    victim_then_attacker  # root records lru3 at 15 MiB
    # Then the attacker's lru3 grows by 30 MiB and 50,000 names, a directory
    # from now on too slow to measure in the attacker's share (the walk of
    # each is stopped after its first count).  Once it counted at the 15
    # MiB root recorded: the victim's job was admitted on 33 MiB of 48
    # while the tier held 63, or, measured whole, the victim's lru2 (used
    # least recently) went with it.
    attacker_grows_lru3 'head -c 30M /dev/urandom >"$0/fill" && mkdir "$0/many" && cd "$0/many" && seq 50000 | xargs touch'
    hold_measuring_midway "$(id -u "$OTHER_USER")"
    stage_on_n1 as_user cached-file
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    grep -F "job $job on n1: " "$LOG_N1"
    # The scenario held: the attacker's directory was not measured whole.
    grep -qF "job $job on n1: node cache 'cache': $(cache_of "$OTHER_USER"): " "$LOG_N1"
    # Counted at least at the 45 MiB seen of it, not measured whole: lru3
    # goes first, and it alone.
    grep -qF "job $job on n1: node cache 'cache': evicted $OTHER_USER/lru3" "$LOG_N1"
    ! on_node n1 test -e "$(cache_of "$OTHER_USER")/lru3" || false
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru2"
    on_node n1 test -e "$(cache_of "$VCLUSTER_USER")/cached-file"
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    assert_healthy
}

@test "an unfinished entry its owner keeps touching is still collected by gc while no job of theirs runs there" {
    clear_cache
    stage_on_n1 as_other lru3
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    theirs=$(cache_of "$OTHER_USER")
    # The attacker takes their ready record away: the entry is unfinished,
    # as a staging that never ended leaves one.
    run as_other timeout 60 srun -w n1 -N1 rm "$theirs/.ready-lru3.toml"
    [ "$status" -eq 0 ]
    # Root's record of its last use (the prolog's), set an hour back, as
    # an entry long unused would have it.  (touch -c: it must be root's.)
    last_use="$STATE/cache/n1/last-use/cache.$(id -u "$OTHER_USER").lru3"
    [ -f "$last_use" ]
    touch -c -d "1 hour ago" "$last_use"
    # Right before gc, the attacker touches a file of the entry: its newest
    # ctime, which is theirs to set, is fresh, as often as they like.
    run as_other timeout 60 srun -w n1 -N1 touch "$theirs/lru3/lru3.bin"
    [ "$status" -eq 0 ]
    conf="$DLSTAGE_TEST_DIR/gc-touched-55.toml"
    sed '/^\[site\]/a gc_grace = 60' "$CONF" >"$conf"
    GC_ERR="$BATS_TEST_TMPDIR/gc.err"
    run gc_n1 "$conf" --tier cache -v
    echo "$output"
    cat "$GC_ERR"
    # Whether a stager may be at an unfinished entry is root's to know (a
    # job of its owner using the tier on n1: none), not the entry's times,
    # which its owner last touched: it goes.
    grep -q "^removed cache entry $OTHER_USER/lru3 " <<<"$output"
    ! on_node n1 test -e "$theirs/lru3" || false
    assert_healthy
}

# cache_json: `dlstage status --node n1 --json` as root, n1's cache tier's
# entries one per line: USER<TAB>DATASET (repr)<TAB>BYTES.
cache_json() {
    on_node n1 "$DLSTAGE_BIN" -c "$CONF" status --node n1 --json | python3 -c '
import json, sys
text = sys.stdin.read()
doc = json.loads(text[text.index("{"):text.rindex("}") + 1])
for e in next(t for t in doc["tiers"] if t["tier"] == "cache")["cache_entries"]:
    print(",".join(e["users"]), repr(e["dataset"]), e["bytes"], sep="\t")'
}

@test "names with no dataset part are entries of their own: measured, and evicted before the tier passes its watermark" {
    clear_cache
    # 30 MiB under names whose dataset part once came out empty, so that
    # neither measuring nor evicting saw them: a record being replaced of
    # no record ("...tmp.x", "..partial-.tmp.x"), a bare prefix
    # (".partial-", ".ready-").
    run as_other timeout 60 srun -w n1 -N1 --stage-data=cached-file bash -c '
        cd "$0" && head -c 10M /dev/zero >...tmp.x && head -c 5M /dev/zero >..partial-.tmp.x &&
        mkdir .partial- && head -c 10M /dev/zero >.partial-/f && head -c 5M /dev/zero >.ready- &&
        echo PLANTED' "$(cache_of "$OTHER_USER")"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qx PLANTED <<<"$output"
    # Root counts each of them, its whole size.
    entries=$(cache_json)
    echo "$entries"
    for name in "'...tmp.x'" "'.partial-'" "'.ready-'"; do
        bytes=$(awk -F'\t' -v u="$OTHER_USER" -v n="$name" '$1 == u && $2 == n { print $3 }' <<<"$entries")
        [ "${bytes:-0}" -ge $((5 * 1048576)) ] || { echo "$name: ${bytes:-no entry}"; false; }
    done
    # The victim's 30 MiB on top: 63 MiB of a 48 MiB tier if the attacker's
    # names were not counted.  Counted, those no job uses go first (no
    # recorded use), and the tier stays under its high watermark.
    for ds in lru1 lru2; do
        stage_on_n1 as_user "$ds"
        [ "$status" -eq 0 ]
        wait_job_gone "$job" 30
    done
    grep -E "job [0-9]+ on n1: node cache 'cache': evicted $OTHER_USER/" "$LOG_N1"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru1"
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru2"
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; on_node n1 ls -la "$(cache_of "$OTHER_USER")"; false; }
    assert_healthy
}

@test "a prolog's node cache steps all at their bounds at once end within its time: the job told why, the node in service" {
    clear_cache
    # dlstest's lru2 and lru3 (30 MiB): lru1 on top is over the high
    # watermark, so the next prolog measures, sizes lru1 and evicts.
    for ds in lru2 lru3; do stage_on_n1 as_user "$ds"; [ "$status" -eq 0 ]; done
    stage_on_n1 as_other cached-file
    [ "$status" -eq 0 ]
    for _ in $(seq 150); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
    # The site's prolog time cut to 12 s for this test.
    cp "$CONF" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
    sed -i '/^\[site\]/a prolog_epilog_timeout = 12' "$CONF"
    # lru1's source answers a stat in 5 s on n1: sizing it as dlstest
    # meets its bound.  Every child acting for a user is held (SIGSTOP, as
    # a slow disk would hold it): measuring both users' directories; and
    # once the first is held, the node's cache lock is taken and kept, as
    # a job array evicting huge entries would keep it.  Every wait of the
    # prolog meets its bound at once: once they summed to 1.75 times the
    # prolog's time, which ended "did not finish".
    unmount_pfs n1
    slow_pfs=1
    mount_pfs n1 5000
    hold_measuring --lock "$LOCK_N1" "$(id -u "$VCLUSTER_USER")" "$(id -u "$OTHER_USER")"
    run as_user sbatch --parsable -w n1 -N1 --stage-data=lru1 -o /dev/null --wrap true
    [ "$status" -eq 0 ]
    job=${output%%;*}
    wait_job_gone "$job" 60
    grep -F "job $job on n1: " "$LOG_N1"
    ! grep -F "job $job on n1: the prolog " "$LOG_N1" || false
    # It ended in its time and said why: the lock still held after its
    # share (3 s of 12), the user's job failed, not the node.
    grep -E "job $job on n1: node cache 'cache': cannot size dataset 'lru1' as $VCLUSTER_USER \(did not finish within" "$LOG_N1"
    grep -E "job $job on n1: the node cache lock $LOCK_N1 is still held after [0-9]+ s" "$LOG_N1"
    [ "$(job_state "$job")" != COMPLETED ]
    kill -KILL "$holder" 2>/dev/null || true
    wait "$holder" 2>/dev/null || true
    holder=""
    flock -w 5 "$LOCK_N1" true
    # Its use was never recorded (that is done holding the lock), so
    # nothing of it pins an entry; its epilog, which could not take the
    # lock either, says so in its cleanup line.
    [ ! -e "$STATE/cache/n1/jobs/$job.toml" ]
    grep -E "job $job on n1: cleanup: the node cache lock $LOCK_N1 is still held" "$LOG_N1"
    assert_healthy
}

@test "another user's entries not measured in time stay while the cache is under its watermark" {
    clear_cache
    # The victim's lru2 (15 MiB), measured by its job's epilog.
    stage_on_n1 as_user lru2
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    for _ in $(seq 150); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
    cp "$CONF" "$BATS_TEST_TMPDIR/dlstage.toml.saved"
    restore_conf=1
    sed -i '/^\[site\]/a prolog_epilog_timeout = 12' "$CONF"
    # The attacker's prolog cannot measure the victim's directory in time
    # (its child held, as a directory of millions of files would hold it).
    # The tier's file system is the host's, far over 48 MiB: once every
    # byte it held beyond the measured entries was charged to the victim's
    # unmeasured ones, and they were evicted, the cache at 3 MiB of 48.
    hold_first_measuring "$(id -u "$VCLUSTER_USER")"
    stage_on_n1 as_other cached-file
    [ "$status" -eq 0 ]
    wait_job_gone "$job" 30
    grep -F "job $job on n1: " "$LOG_N1"
    # The scenario held: the victim's directory was not measured.
    grep -qF "job $job on n1: node cache 'cache': $(cache_of "$VCLUSTER_USER"): " "$LOG_N1"
    ! grep -F "job $job on n1: node cache 'cache': evicted" "$LOG_N1" || false
    on_node n1 test -d "$(cache_of "$VCLUSTER_USER")/lru2"
    on_node n1 test -f "$(cache_of "$VCLUSTER_USER")/.ready-lru2.toml"
    assert_healthy
}

@test "jobs admitted a moment apart count what each other brings: the tier stays under its watermark" {
    clear_cache
    stage_on_n1 as_user lru2  # 15 MiB no job uses from now on
    # The attacker's first job (lru3, 15 MiB) is admitted, its use recorded
    # with what it brings, and its staging held before it writes a byte
    # (its `dlstage stage` stopped as it starts), as a stager slow to start
    # or a source slow to read would hold it.
    (until pkill -STOP -u "$OTHER_USER" -f "dlstage stage --quiet"; do sleep 0.01; done) &
    held_stage=$!
    as_other timeout 120 srun -w n1 -N1 --stage-data=lru3 true >"$BATS_TEST_TMPDIR/first.out" 2>&1 &
    local first=$!
    for _ in $(seq 300); do kill -0 "$held_stage" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$held_stage" 2>/dev/null || { echo "the first job's staging never started"; false; }
    # Its second (lru1, 15 MiB): 15 + 15 coming + 15 = 45 MiB, past the
    # high watermark (43.2 MiB). Once its prolog saw the 15 MiB measured
    # and admitted it on 30, and the tier ended at 45 MiB.
    stage_on_n1 as_other lru1
    [ "$status" -eq 0 ]
    grep -F "job $job on n1: " "$LOG_N1"
    grep -qF "job $job on n1: node cache 'cache': evicted $VCLUSTER_USER/lru2" "$LOG_N1"
    pkill -CONT -u "$OTHER_USER" -f "dlstage stage --quiet"
    held_stage=""
    wait "$first" || { cat "$BATS_TEST_TMPDIR/first.out"; false; }
    on_node n1 test -d "$(cache_of "$OTHER_USER")/lru3"
    on_node n1 test -d "$(cache_of "$OTHER_USER")/lru1"
    used=$(on_node n1 du -s --block-size=1 /local/dlcache/.cache | cut -f1)
    [ "$used" -le $((48 * 1048576 * 9 / 10)) ] || { echo "cache holds $used bytes"; false; }
    assert_healthy
}
