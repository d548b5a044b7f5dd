"""The invariants the soak checks once every job has ended (the per-job
ones, exact bytes and a clear reason, are soak_jobs.judge).  Each check
appends (name, passed, detail) rows; a failed one is also a violation.

  nodes        no node drained or down but those a fault rebooted (which
               are resumed, as an admin would), and every node idle at the end
  gc           one `dlstage gc` per node after the last epilog
  leftovers    no job directory on any node or in a shared job tier, no
               unfinished transfer or stale lock in a kept copy's directory
  processes    no stager, mount holder or squashfuse process left
  mounts       no FUSE mount left on a node but the soak's own pfssim
  cache        every node cache under its high watermark
  records      no job record left in the staging state
  owners       every file in a user's kept copies is that user's
  kept copies  every kept copy, staged once more by its user, is exactly
               its source (a copy not complete and valid is not trusted); a
               transfer a failed job left (.partial-NAME, the user's, in a
               kept tier root does not enter) is staged once more too, which
               must clear it"""

import glob
import os
import pwd
import time

import soak_faults
import soak_jobs
from soak_cluster import live_processes, wait_until

CACHE_MAX_BYTES = 48 << 20  # start-cluster's [tiers.cache] max_bytes
HIGH_WATERMARK = 0.90  # the default high_watermark


class Checks:
    def __init__(self, soak):
        self.soak = soak
        self.rows = []

    def add(self, name, passed, detail=""):
        self.rows.append((name, passed, detail))
        if not passed:
            self.soak.violation(f"invariant: {name}", detail)


def settle(soak):
    """Until no job or node is completing (every epilog has reported)."""
    def quiet():
        rc, out, _ = soak.cluster.slurm(["squeue", "-h", "-t", "pending,running,completing,configuring", "-o", "%i"])
        states = soak.cluster.node_states()
        return rc == 0 and not out.strip() and not any("comp" in s for s, _ in states.values())
    return wait_until(quiet, 180, 0.5)


def check_nodes(soak, c):
    states = soak.cluster.node_states()
    bad = []
    for node, (state, reason) in states.items():
        if "drain" in state or "down" in state or state.endswith("*"):
            if node in soak.rebooted:
                soak.cluster.slurm(["scontrol", "update", f"nodename={node}", "state=resume"])
                soak.say(f"resumed {node} after its reboot (it was {state}: {reason})")
            else:
                bad.append(f"{node} {state} ({reason})")
    c.add("no node drained or down that a fault did not reboot", not bad, "; ".join(bad))

    def all_idle():
        now = soak.cluster.node_states()
        return all(s == "idle" for s, _ in now.values()) and now

    final = wait_until(all_idle, 90, 0.5)
    c.add("every node idle at the end", bool(final),
          "" if final else "; ".join(f"{n} {s} ({r})" for n, (s, r) in soak.cluster.node_states().items()
                                     if s != "idle"))


def check_gc(soak, c):
    # Every job has ended by now: gc runs with no grace, so that what the
    # faults left (an unfinished cache entry, a job directory) must go now,
    # not after gc_grace.
    config = soak.cluster.config + ".gc"
    with open(soak.cluster.config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("[site]\n", "[site]\ngc_grace = 0\n", 1))
    os.chmod(config, 0o644)
    bad = []
    for node in soak.cluster.nodes:
        rc, out, err = soak.cluster.on_node(node, [soak.cluster.dlstage, "--config", config, "gc"], timeout=120)
        if rc != 0:
            bad.append(f"{node}: exit {rc}: {(err or out).strip()[:300]}")
    c.add("dlstage gc after the last epilog succeeds on every node", not bad, "; ".join(bad))


def check_leftovers(soak, c):
    left = []
    for node in soak.cluster.nodes:
        _, out, _ = soak.cluster.on_node(node, ["find", "/dev/shm/dlstage", "/local/dlstage", "-mindepth", "1",
                                                "-maxdepth", "1"])
        left += [f"{node}:{p}" for p in out.split()]
        _, out, _ = soak.cluster.on_node(node, ["find", "/dev/shm", "/local", "-maxdepth", "4", "-name",
                                                ".partial-*"])
        left += [f"{node}:{p}" for p in out.split()]
    scratch = os.path.join(soak.cluster.dir, "scratch")
    left += glob.glob(os.path.join(scratch, "jobs", "*"))
    for pattern in (".partial-*", ".retired-*", ".lock-*", "*.removing-*"):
        left += glob.glob(os.path.join(scratch, "dlstage", "*", pattern))
    c.add("no job directory, unfinished transfer or lock left", not left, " ".join(left[:20]))


def check_processes(soak, c):
    procs = [p for p in live_processes(("dlstage-stager", "squashfuse", "squashfuse_ll", "dlstage"))
             if p[1] != "dlstage" or "hold-mounts" in p[2] or " stage" in p[2]]
    c.add("no stager, mount holder or squashfuse process left", not procs,
          "; ".join(f"{pid} {cmd}" for pid, _, cmd in procs[:10]))


def check_mounts(soak, c):
    left = []
    for node in soak.cluster.nodes:
        _, out, _ = soak.cluster.on_node(node, ["cat", "/proc/self/mountinfo"])
        for line in out.splitlines():
            fields = line.split()
            if " - fuse" in line and "pfssim" not in line and "pfs-" not in fields[4]:
                left.append(f"{node}:{fields[4]}")
    c.add("no FUSE mount left on any node", not left, " ".join(left))


def check_cache(soak, c):
    over = []
    for node in soak.cluster.compute_nodes:
        rc, out, _ = soak.cluster.on_node(node, ["du", "-s", "-B1", "/local/dlcache/.cache"])
        used = int(out.split()[0]) if rc == 0 and out.strip() else 0
        if used > CACHE_MAX_BYTES * HIGH_WATERMARK:
            over.append(f"{node}: {used} bytes")
    c.add("every node cache under its high watermark", not over, "; ".join(over))


def check_records(soak, c):
    staging = []
    for path in glob.glob(os.path.join(soak.cluster.dir, "state", "jobs", "*", "*", "progress-*.toml")) + \
            glob.glob(os.path.join(soak.cluster.dir, "state", "jobs", "*", "progress-*.toml")):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if 'state = "staging"' in text:
            staging.append(os.path.relpath(path, soak.cluster.dir))
    c.add("no record left in the staging state", not staging, " ".join(staging[:20]))


def check_owners(soak, c, users):
    wrong = []
    base = os.path.join(soak.cluster.dir, "scratch", "dlstage")
    for user in users:
        top = os.path.join(base, user)
        if not os.path.isdir(top):
            continue
        uid = pwd.getpwnam(user).pw_uid
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if st.st_uid != uid:
                    wrong.append(f"{os.path.relpath(p, base)} (uid {st.st_uid})")
    c.add("every file in a user's kept copies is that user's (none root's)", not wrong, " ".join(wrong[:20]))


def check_kept_copies(soak, c):
    """Each kept copy staged once more, by its user: exact bytes or the copy
    was not trusted (and staged again); either way, exact bytes."""
    jobs = []
    for user, name in soak.kept_copies(unfinished_too=True):
        d = soak.by_name[name]
        job = soak_jobs.Job(user, [(d, "scratch")], 1, requeue=False, pause=0)
        job.tailored_for = "the final look at a kept copy"
        soak.submit(job)
        if job.id:
            jobs.append(job)
    end = time.monotonic() + 300
    while time.monotonic() < end and any(not j.ended for j in jobs):
        soak.poll()
        time.sleep(0.5)
    bad = [f"{j.id} {j.user}/{j.spec}: {j.outcome}: {j.reason}" for j in jobs if j.outcome != "ok"]
    c.add(f"every kept copy ({len(jobs)}) staged once more holds exactly its source", not bad, "; ".join(bad))


def run_all(soak, users):
    c = Checks(soak)
    settle(soak)
    check_nodes(soak, c)
    check_kept_copies(soak, c)
    settle(soak)
    check_gc(soak, c)
    check_leftovers(soak, c)
    check_processes(soak, c)
    check_mounts(soak, c)
    check_cache(soak, c)
    check_records(soak, c)
    check_owners(soak, c, users)
    bad_requests = [r for r in soak.refused if r[3] == 0 or not r[4].startswith("dlstage:")]
    c.add(f"every bad request ({len(soak.refused)}) refused at submit with a dlstage: line", not bad_requests,
          "; ".join(f"{spec} as {user}: rc {rc}: {line}" for _, spec, user, rc, line in bad_requests))
    injected = {kind for _, kind, _, _ in soak.faults}
    never = [f.kind for f in soak_faults.ALL if f.kind not in injected]
    c.add(f"every fault kind injected ({len(injected)} of {len(soak_faults.ALL)})", not never, "never: " + ", ".join(never))
    jobs = [j for j in soak.jobs if j.id]
    per_job = sum(1 for j in jobs if j.outcome)
    c.add(f"each job's bytes and end judged ({per_job} jobs)", all(j.outcome != "violation" for j in jobs),
          "; ".join(f"{j.id}: {j.reason}" for j in jobs if j.outcome == "violation")[:2000])
    others = [f"{what}: {detail}" for what, detail in soak.violations if not what.startswith(("invariant:", "job "))]
    c.add("no other violation (a good request refused, a fault the soak could not inject)", not others,
          "; ".join(others)[:2000])
    return c.rows
