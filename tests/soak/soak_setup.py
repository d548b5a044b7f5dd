"""What the soak adds to start-cluster's cluster, and how it changes
sources and kept copies between jobs.

  soak-src/ptree     300 files of 1-40 KB in 6 classes (root's, readable)
  soak-src/pfile.bin 16 MiB
  pfs-soak/          pfssim serving soak-src on the host and every node,
                     40 MB/s per stream, 1 ms per metadata operation,
                     faults from soak-faults (read_errno=, extra_latency_ms=)
  soak/<user>/       each user's job output; soak/job.sh, soak/node.sh

The datasets soak-ptree (with a manifest: `dlstage catalog scan`) and
soak-pfile are appended to dlstage.toml."""

import os
import random
import re
import shutil
import time

from soak_cluster import run
from soak_jobs import JOB_SCRIPT, NODE_SCRIPT

STALL_BOUND = 15  # site.stall_timeout: soak_faults' stalls must end their jobs within it and 30 s

SOAK_TOML = """
# The soak's datasets (tests/soak): behind pfssim, which the soak makes
# fail or go slow; soak-ptree also has a manifest.
[datasets.soak-ptree]
source = "{pfs}/ptree"
tiers  = ["shm", "cache", "scratch"]

[datasets.soak-pfile]
source = "{pfs}/pfile.bin"
tiers  = ["shm", "cache"]
"""


def prepare(soak, users):
    cluster = soak.cluster
    base = cluster.dir
    soak_dir = os.path.join(base, "soak")
    os.makedirs(soak_dir, exist_ok=True)
    os.chmod(soak_dir, 0o755)
    for name, text in (("job.sh", JOB_SCRIPT), ("node.sh", NODE_SCRIPT)):
        path = os.path.join(soak_dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
    soak.script = os.path.join(soak_dir, "job.sh")
    soak.node_script = os.path.join(soak_dir, "node.sh")
    for user in users:
        d = os.path.join(soak_dir, user)
        os.makedirs(d, exist_ok=True)
        shutil.chown(d, user)
        soak.workdirs[user] = d
    make_sources(os.path.join(base, "soak-src"))
    soak.set_pfs_faults("")
    mount_pfs(cluster, soak.pfs_faults)
    with open(cluster.config) as f:
        toml = f.read()
    with open(cluster.config, "w") as f:
        # soak_faults' stalls end their jobs within this bound (300 s by default)
        f.write(re.sub(r"^\[site\]$", f"[site]\nstall_timeout = {STALL_BOUND}", toml, count=1, flags=re.M))
        f.write(SOAK_TOML.format(pfs=os.path.join(base, "pfs-soak")))
    run([cluster.dlstage, "--config", cluster.config, "catalog", "scan", "soak-ptree"], check=True)


def make_sources(src):
    rng = random.Random(25)
    shutil.rmtree(src, ignore_errors=True)
    for i in range(300):
        d = os.path.join(src, "ptree", f"class{i % 6}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"img{i:04d}.bin"), "wb") as f:
            f.write(rng.randbytes(rng.randrange(1 << 10, 40 << 10)))
    with open(os.path.join(src, "pfile.bin"), "wb") as f:
        f.write(rng.randbytes(16 << 20))
    for dirpath, dirnames, filenames in os.walk(src):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def pfs_argv(cluster, faults):
    base = cluster.dir
    return [os.path.join(base, "bin", "pfssim"), os.path.join(base, "soak-src"), os.path.join(base, "pfs-soak"),
            "--bandwidth", "0", "--stream-bandwidth", "40", "--meta-latency-ms", "1", "--faults", faults,
            "-o", "allow_other"]


def mount_pfs(cluster, faults):
    os.makedirs(os.path.join(cluster.dir, "pfs-soak"), exist_ok=True)
    argv = pfs_argv(cluster, faults)
    run(argv, check=True)
    for node in cluster.nodes:
        mount_pfs_on(cluster, node, faults)


def mount_pfs_on(cluster, node, faults):
    """pfssim on NODE (again, after a reboot took it away)."""
    where = os.path.join(cluster.dir, "pfs-soak")
    rc, _, _ = cluster.on_node(node, ["mountpoint", "-q", where])
    if rc == 0 and cluster.on_node(node, ["stat", where])[0] == 0:
        return
    cluster.on_node(node, ["umount", "-l", where])  # a server the reboot killed leaves its mount dead
    rc, _, err = cluster.on_node(node, pfs_argv(cluster, faults))
    if rc != 0:
        raise RuntimeError(f"soak: pfssim did not mount on {node}: {err.strip()}")
    for _ in range(50):
        if cluster.on_node(node, ["mountpoint", "-q", where])[0] == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"soak: pfssim did not mount on {node}")


def unmount_pfs(cluster):
    where = os.path.join(cluster.dir, "pfs-soak")
    for node in cluster.nodes:
        cluster.on_node(node, ["fusermount3", "-u", where], timeout=20)
    run(["fusermount3", "-u", where], timeout=20)


def files_below(path):
    if os.path.isfile(path):
        return [path]
    found = []
    for dirpath, _, filenames in os.walk(path):
        found.extend(os.path.join(dirpath, n) for n in filenames)
    return sorted(found)


def change_tree(rng, path):
    """A source changes between jobs: one file gets new bytes (a new size
    too, half the time), and half the time a file is added."""
    files = [f for f in files_below(path) if not os.path.islink(f)]
    victim = rng.choice(files)
    size = os.path.getsize(victim)
    if rng.random() < 0.5:
        size += rng.randrange(1, 4096)
    mode = os.stat(victim).st_mode & 0o7777
    with open(victim, "wb") as f:
        f.write(rng.randbytes(size))
    os.chmod(victim, mode)
    if rng.random() < 0.5 and os.path.isdir(path):
        added = os.path.join(os.path.dirname(victim), f"added-{rng.randrange(1 << 30)}.bin")
        with open(added, "wb") as f:
            f.write(rng.randbytes(rng.randrange(100, 9000)))
        os.chmod(added, 0o644)


def half_purge(rng, copy):
    """A site purger removes about half of a kept copy's files (as root)."""
    files = files_below(copy)
    removed = 0
    for i, f in enumerate(files):
        if rng.random() < 0.5 or i == len(files) - 1 and not removed:
            try:
                os.unlink(f)
                removed += 1
            except OSError:
                pass
    return removed


def user_touch(rng, cluster, user, copy):
    """The copy's user writes into it: one file's bytes change, its size kept."""
    files = files_below(copy)
    if not files:
        return "nothing to change"
    victim = rng.choice(files)
    rc, _, err = run(["bash", "-c", 'chmod u+w "$1" 2>/dev/null; printf "soak" | dd of="$1" conv=notrunc '
                                    'status=none', "-", victim], user=user)
    return f"{os.path.relpath(victim, copy)} rewritten" + (f" (failed: {err.strip()})" if rc else "")


def forget_kept_copy(user_dir, name):
    """A kept copy gone with its markers (as a purge or an admin would)."""
    for p in (name, f".ready-{name}.toml", f".contents-{name}", f".lock-{name}", f".partial-{name}"):
        path = os.path.join(user_dir, p)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
