"""The faults the soak injects.  Each kind says which job it needs (a
tailored one: WANTS names the datasets the job must stage), the phase the
job must be in (pending, staging, running; None: no job, the fault picks
its own moment and nodes), and what it does.  Every fault is logged with
its time, its jobs and nodes; the jobs it may have hurt are marked touched,
so that their end is judged as a faulted job's.

Faults that change a kept copy or its source between jobs (source_changed,
copy_half_purged, copy_touched_by_user) touch no job: the job after them
must still see exactly the source."""

import os
import signal
import subprocess
import time

import soak_setup
from soak_cluster import ROOT, node_of_process, processes_of_job, wait_until
from soak_jobs import MOVER_TIME_LIMIT, NODE_REBOOTED, SLURMD_STOPPED


CUT_LINKS = os.path.join(ROOT, "tests", "cluster", "cut-links")


class Fault:
    kind = ""
    phase = None  # the job's phase it fires in: "pending", "staging", "running" or None
    wants = ()  # dataset names a tailored job stages (one is picked)
    tiers = ()  # the tiers it stages them to (one is picked; () = any of the dataset's)
    exclusive = False  # runs alone (no other exclusive fault at the same time)
    min_nodes = 1  # the least nodes its tailored job asks for
    rate = None  # its tailored job's DLSTAGE_RATE_LIMIT: staging slow enough to be caught at it

    def fire(self, soak, job):
        raise NotImplementedError


def node_of(soak, job):
    """One of the nodes the job runs on (None: it has none yet)."""
    nodes = job.info.get("nodes", [])
    return soak.rng.choice(nodes) if nodes else None


def on_node(node):
    return lambda job: node in job.info.get("nodes", [])


def stages_from_pfs(job):
    return any(d.pfs for d, _ in job.items)


# --- a job's own faults --------------------------------------------------------

def kill_one(soak, job, processes):
    """SIGKILL to one of PROCESSES ((pid, comm, cmdline)); None when there is none (left)."""
    if not processes:
        return None
    pid, comm, _ = soak.rng.choice(processes)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return None
    return [job], [f"{comm} pid {pid}"]


class CancelPending(Fault):
    kind, phase, wants = "scancel while pending", "pending", ("in21k", "far-file")

    def fire(self, soak, job):
        soak.cluster.slurm(["scancel", str(job.id)])
        return [job], []


class CancelStaging(Fault):
    kind, phase, wants = "scancel while staging", "staging", ("big", "tree", "shards-x", "soak-pfile")

    def fire(self, soak, job):
        soak.cluster.slurm(["scancel", str(job.id)])
        return [job], job.info.get("nodes", [])


class CancelRunning(Fault):
    kind, phase = "scancel while running", "running"

    def fire(self, soak, job):
        soak.cluster.slurm(["scancel", str(job.id)])
        return [job], job.info.get("nodes", [])


class KillStager(Fault):
    kind, phase, wants = "stager rank killed", "staging", ("big", "tree", "shards-x", "image-x")

    def fire(self, soak, job):
        return kill_one(soak, job, processes_of_job(job.id, ("dlstage-stager",)))


class KillMountHolder(Fault):
    kind, phase, wants = "mount holder killed", "running", ("image-m",)

    def fire(self, soak, job):
        holders = [p for p in processes_of_job(job.id, ("dlstage", "squashfuse", "squashfuse_ll"))
                   if "hold-mounts" in p[2] or p[1].startswith("squashfuse")]
        return kill_one(soak, job, holders)


class Requeue(Fault):
    kind, phase = "requeue while running", "running"

    def fire(self, soak, job):
        rc, _, err = soak.cluster.slurm(["scontrol", "requeue", str(job.id)])
        if rc != 0:
            return None  # a job sbatch'ed without --requeue: not requeueable
        return [job], job.info.get("nodes", [])

    @staticmethod
    def suits(job):
        return job.requeue


class TimeLimitWhileStaging(Fault):
    kind, phase, wants = "time limit hit while staging", "staging", ("big", "tree", "image-x")

    def fire(self, soak, job):
        soak.cluster.slurm(["scontrol", "update", f"jobid={job.id}", "EndTime=now"])
        return [job], job.info.get("nodes", [])


# --- the nodes', slurmctld's and the source's faults ----------------------------

class NodeFault(Fault):
    """A fault of one of the job's nodes (STRIKE(soak, node) does it and
    returns more details): every job on the node is touched while it lasts."""

    def strike(self, soak, node):
        raise NotImplementedError

    def fire(self, soak, job):
        node = node_of(soak, job)
        if not node:
            return None
        with soak.hazard(self.kind, on_node(node)) as touched:
            details = self.strike(soak, node)
        return touched, [node] + details


class RestartSlurmd(NodeFault):
    kind, phase, wants = "slurmd restarted mid-staging", "staging", ("big", "tree", "shards-x")
    exclusive = True

    def strike(self, soak, node):
        rc, _, err = soak.cluster.vcluster(["restart", node])
        return [f"restart failed: {err.strip()}"] if rc else []


class RebootNode(NodeFault):
    """A node crashes and boots again with its /dev/shm and local disk
    empty, while a job of the node cache has an entry there.  It stays off
    long enough (OFF s, over SlurmdTimeout) for slurmctld to set it down and
    end its jobs, as after a real crash; jobs given the node meanwhile are
    touched too."""
    kind, phase, wants, tiers = NODE_REBOOTED, "running", ("soak-ptree", "imagenet"), (
        "cache",)
    exclusive = True
    off = 70

    def strike(self, soak, node):
        rc, _, err = soak.cluster.vcluster(["reboot", "--wipe-local", "--off-for", str(self.off), node], timeout=300)
        soak.rebooted.add(node)
        soak_setup.mount_pfs_on(soak.cluster, node, soak.pfs_faults)  # the reboot took it away
        return [f"reboot failed: {err.strip()}"] if rc else []


class RestartSlurmctld(Fault):
    kind, phase, wants = "slurmctld restarted while jobs stage", "staging", ("big", "tree", "in21k")
    exclusive = True

    def fire(self, soak, job):
        with soak.hazard(self.kind, lambda j: True) as touched:
            rc, _, err = soak.cluster.vcluster(["restart", "slurmctld"], timeout=240)
        return touched, ["slurmctld"] + ([f"restart failed: {err.strip()}"] if rc else [])


class FillTier(NodeFault):
    """Another process fills a node's /dev/shm until ENOSPC, for a while."""
    kind, phase, wants, tiers = "tier filled until ENOSPC", "staging", ("big", "tree", "shards-x"), ("shm",)
    hold = 6

    def strike(self, soak, node):
        filler = "/dev/shm/soak-filler"
        # fallocate what is free; then dd the last blocks fallocate leaves.
        soak.cluster.on_node(node, ["bash", "-c",
                                    f"fallocate -l $(( $(stat -f -c '%a*%S' /dev/shm) )) {filler} 2>/dev/null;"
                                    f" dd if=/dev/zero of={filler}.2 bs=64k 2>/dev/null; true"])
        time.sleep(self.hold)
        soak.cluster.on_node(node, ["rm", "-f", filler, filler + ".2"])
        return []


class SourceFaults(Fault):
    """The soak's pfssim is told FAULTS (its --faults file) for HOLD seconds;
    every job reading it meanwhile is touched."""
    faults = ""
    hold = 4

    def fire(self, soak, job):
        with soak.hazard(self.kind, stages_from_pfs) as touched:
            soak.set_pfs_faults(self.faults)
            time.sleep(self.hold)
            soak.set_pfs_faults("")
        return touched, ["pfssim"]


class SourceFails(SourceFaults):
    kind, phase, wants = "source read fails (EIO)", "staging", ("soak-pfile", "soak-ptree")
    faults, hold = "read_errno=5\n", 4


class SourceSlow(SourceFaults):
    kind, phase, wants = "source slow for a while", "staging", ("soak-pfile", "soak-ptree")
    faults, hold = "extra_latency_ms=40\n", 8


class GcEverywhere(Fault):
    """dlstage gc on every node, twice at once on each: it must hurt no live job."""
    kind = "dlstage gc on every node, concurrently"

    def fire(self, soak, job):
        procs = []
        for node in soak.cluster.nodes:
            for _ in range(2):
                procs.append(subprocess.Popen(
                    ["tests/cluster/vcluster", "exec", "--dir", soak.cluster.vc, node, soak.cluster.dlstage,
                     "--config", soak.cluster.config, "gc"], cwd=soak.root, env=soak.cluster.env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        bad = []
        for p in procs:
            try:
                _, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                bad.append("a gc did not end in 120 s")
                continue
            if p.returncode not in (0, 1):
                bad.append(f"gc exit {p.returncode}: {err.strip()[:200]}")
        soak.gc_runs += len(procs)
        return [], ["all nodes"] + bad


class StopSlurmd(NodeFault):
    """A node's slurmd stops answering (SIGSTOP) for 20 s, under SlurmdTimeout
    (30 s): slurmd is not on the chunks' path, so staging on the node goes on."""
    kind, phase, wants = SLURMD_STOPPED, "staging", ("big", "tree", "in21k")
    exclusive = True
    hold = 20

    def strike(self, soak, node):
        with open(os.path.join(soak.cluster.vc, "run", f"slurmd-{node}.pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(self.hold)
        finally:
            os.kill(pid, signal.SIGCONT)
        return [f"slurmd pid {pid}"]


# --- the watchdog's faults: a rank or a link goes silent mid-exchange ---------------

def ranks_of(job):
    """{node: pid} of the job's live stager ranks."""
    nodes = ((node_of_process(pid), pid) for pid, _, _ in processes_of_job(job.id, ("dlstage-stager",)))
    return {node: pid for node, pid in nodes if node}


class Silence(Fault):
    """One stager rank of a job on two or more nodes goes silent (SILENCE(pid)
    says how; it returns what undoes it) until the job ends: the job must
    end within the stall bound and 30 s, saying so (the watchdog's "no word
    from NODE", or, when the rank went silent as the stagers started or
    ended, the bounded wait's line: both name site.stall_timeout); the
    judge then wants its reason as for any fault."""
    phase, wants = "staging", ("big", "tree", "shards-x", "in21k")
    min_nodes = 2
    rate = "4M"

    def silence(self, soak, pid):
        raise NotImplementedError

    def fire(self, soak, job):
        ranks = ranks_of(job)
        if len(ranks) < 2:
            return None
        node = soak.rng.choice(sorted(ranks))
        undo = self.silence(soak, ranks[node])
        if undo is None:
            return None
        job.touch(self.kind, soak.now())  # before its end, which the judge may meet first
        started = time.monotonic()
        try:
            judged = wait_until(lambda: job.outcome, soak_setup.STALL_BOUND + 30 + 15, step=0.5)
        finally:
            undo()
        took = round(time.monotonic() - started)
        if not judged:
            soak.violation("a stall outlived the watchdog",
                           f"{job}: {node} silent {took} s and the job still runs (bound {soak_setup.STALL_BOUND} s + 30)")
        elif job.state() != "COMPLETED" and {k for k, _ in job.touched} == {self.kind} and \
                "(site.stall_timeout)" not in (job.output or ""):
            soak.violation("a stall not named", f"{job} ended {job.state()} without a line naming the stall bound")
        return [job], [node, f"stager pid {ranks[node]}", f"ended within {took} s"]


class StopStager(Silence):
    kind = "stager rank stopped (SIGSTOP)"

    def silence(self, soak, pid):
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            return None
        return lambda: os.kill(pid, signal.SIGCONT) if os.path.exists(f"/proc/{pid}") else None


class CutLinks(Silence):
    """Every TCP connection of the rank dropped both ways, as a cut cable
    leaves them (tests/cluster/cut-links; its rules carry the soak's tag,
    which the soak takes away at its end whatever happened)."""
    kind = "node's network cut mid-exchange"

    def silence(self, soak, pid):
        links = subprocess.run([CUT_LINKS, "of", str(pid)], capture_output=True, text=True).stdout.split()
        if not links:
            return None
        subprocess.run([CUT_LINKS, "cut", soak.cut_tag] + links, check=True)
        return lambda: subprocess.run([CUT_LINKS, "uncut", soak.cut_tag])


# --- the mover's faults ------------------------------------------------------------

class MoverCancelled(Fault):
    kind, phase, wants = "mover job cancelled", "pending", ("in21k", "far-file")
    fresh_via = True  # the user's via copy goes first, so that a mover job is needed

    def fire(self, soak, job):
        mover = soak.mover_of(job)
        if not mover:
            return None
        soak.cluster.slurm(["scancel", str(mover)])
        return [job] + soak.waiting_on(mover), [f"mover job {mover}"]


class MoverNodeRestarted(Fault):
    kind, phase, wants = "mover node's slurmd restarted", "pending", ("in21k",)
    fresh_via = True
    exclusive = True

    def fire(self, soak, job):
        mover = soak.mover_of(job)
        if not mover or not soak.cluster.mover_node:
            return None
        rc, _, err = soak.cluster.vcluster(["restart", soak.cluster.mover_node])
        return [job] + soak.waiting_on(mover), [soak.cluster.mover_node] + ([err.strip()] if rc else [])


class MoverTimeLimit(Fault):
    """The running mover job's time limit comes in 25 s (EndTime): it
    requeues itself before it, its run having copied something, and the
    jobs waiting for it wait for its next run: each must complete."""
    kind, phase, wants = MOVER_TIME_LIMIT, "pending", ("in21k", "far-file")
    fresh_via = True
    mover_rate = "150K"  # the limit comes mid-copy

    def fire(self, soak, job):
        mover = soak.mover_of(job)
        if not mover:
            return None
        rc, _, _ = soak.cluster.slurm(["scontrol", "update", f"jobid={mover}", "EndTime=now+25"])
        if rc != 0:
            return None  # it ended meanwhile
        soak.hurry_mover(mover)
        return [job] + soak.waiting_on(mover), [f"mover job {mover}"]


class MoverFails(Fault):
    """A mover job that cannot read the whole dataset (far-bad holds a file
    the user may not read): the jobs waiting for it end, saying why."""
    kind, phase, wants = "mover job failed", "pending", ("far-bad",)

    def fire(self, soak, job):
        return [job], []


# --- bad requests --------------------------------------------------------------------

class BadRequest(Fault):
    kind = "bad request"

    def fire(self, soak, job):
        return soak.submit_bad_request(), []


# --- kept copies and sources changed between jobs (touch no job) ---------------------

class SourceChanged(Fault):
    kind = "source changed between jobs"
    gated = ("mutable", "soak-ptree")

    def fire(self, soak, job):
        busy = {n: sum(n in j.datasets for j in soak.in_flight()) for n in self.gated}
        name = min(self.gated, key=lambda n: (busy[n], soak.rng.random()))
        with soak.gate(name) as ok:
            if not ok:
                return None
            soak.change_source(name)
            soak.follow_up(name, "scratch")
        return [], [name]


class CopyChanged(Fault):
    """A kept copy changes between jobs (change(soak, user, name) says how);
    the job after it is the test."""

    def change(self, soak, user, name):
        raise NotImplementedError

    def fire(self, soak, job):
        subject = soak.kept_copy()
        if not subject:
            return None
        user, name = subject
        with soak.gate(name) as ok:
            if not ok:
                return None
            what = self.change(soak, user, name)
            follow_up_change(soak, self.kind, name, user)
        return [], [f"{user}/{name}: {what}"]


class CopyHalfPurged(CopyChanged):
    kind = "kept copy half-purged"

    def change(self, soak, user, name):
        return f"{soak.half_purge(user, name)} files removed"


class CopyTouchedByUser(CopyChanged):
    kind = "kept copy changed by its user"

    def change(self, soak, user, name):
        return soak.user_touch(user, name)


def follow_up_change(soak, kind, name, user):
    """The job after a kept copy changed: a one-hop copy is checked and
    repaired from the source, so it must see the source; a two-hop copy
    cannot be (the job's nodes cannot see the source): that job may stop,
    saying so, and the one after it gets a mover job and the source."""
    two_hop = soak.by_name[name].mover
    soak.follow_up(name, "scratch", user, touched_by=kind if two_hop else None, then_clean=two_hop)


ALL = [CancelPending(), CancelStaging(), CancelRunning(), KillStager(), KillMountHolder(), Requeue(),
       TimeLimitWhileStaging(), RestartSlurmd(), RebootNode(), RestartSlurmctld(), FillTier(), SourceFails(),
       SourceSlow(), GcEverywhere(), StopSlurmd(), StopStager(), CutLinks(), MoverCancelled(), MoverNodeRestarted(),
       MoverTimeLimit(), MoverFails(), BadRequest(), SourceChanged(), CopyHalfPurged(), CopyTouchedByUser()]


def deck(rng):
    """Every kind once, in a random order: a run deals the whole deck before
    it deals a kind twice, so even a short run meets every kind."""
    kinds = list(ALL)
    rng.shuffle(kinds)
    return kinds
