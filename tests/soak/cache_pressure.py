"""The soak with cache pressure (tests/soak/soak --cache-pressure): many
users' jobs on a small node cache (start-cluster's [tiers.cache]: 48 MiB
a node), datasets of many sizes, no faults.  A sampler measures each
node's cache (du, as root) every second, apart from anything dlstage says.

One job in six is the attacker's (dlstest2), which also leaves junk in its
cache directory under names with no dataset part (issue 56, finding 1).

Invariants (docs/testing.md, "The soak with cache pressure"):
- every job ends with the exact bytes on each of its nodes, or is refused
  for want of room with the one line, and then only while the cache held
  more than its high watermark with what the job brought;
- no entry is evicted while the cache, as sampled, with what the job brought,
  was under its high watermark, and none as "its size unknown" (the tier
  shares its file system: its use is not the tier's);
- no node drained, and every node's cache under its high watermark at the end."""

import collections
import datetime
import glob
import json
import os
import pwd
import random
import re
import signal
import subprocess
import threading
import time

from soak_cluster import ENDED, VCLUSTER, run

SIZES_MIB = [1, 2, 4, 7, 11, 16, 23]
CACHE_MAX = 48 << 20  # start-cluster's [tiers.cache] max_bytes
HIGH = 0.9
# du counts what the prolog measured plus what stagings in flight hold; the
# prolog counts what comes in as the sizes probed: a little slack for the
# directories and records du sees.
SLACK = 0.95
CANDIDATE_USERS = ["dlstest", "dlstest2", "dlstest3", "dlstest4", "dlstest5", "dlstest6"]

JOB_SCRIPT = """#!/bin/bash
# One soak job with cache pressure: the staged file compared on every node
# with its source, then held in use a while.  SOAK_JUNK: the user also
# leaves that many MiB in their cache directory under a name with no
# dataset part, as an attacker would (issue 56, finding 1).
srun --ntasks-per-node=1 bash -c 'cmp -s "$1" "$2" && echo "OK $(hostname -s) $SLURMD_NODENAME" \\
    || echo "DIFFERS on $SLURMD_NODENAME"' - "$SOAK_STAGED" "$SOAK_SOURCE"
if [ -n "${SOAK_JUNK:-}" ]; then
    srun --ntasks-per-node=1 bash -c 'head -c "$1M" /dev/zero >"/local/dlcache/.cache/$USER/...tmp.$RANDOM$RANDOM"' \\
        - "$SOAK_JUNK"
fi
sleep "$SOAK_PAUSE"
"""


def users_here():
    found = []
    for user in CANDIDATE_USERS:
        try:
            pwd.getpwnam(user)
            found.append(user)
        except KeyError:
            pass
    return found


def prepare(cluster, users):
    """The datasets soak-cN (N MiB, random bytes, readable by all) for the
    cache tier alone, the job script, each user's work directory."""
    base = os.path.join(cluster.dir, "soak-cache")
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o755)
    rng = random.Random(56)
    toml = ["", "# The soak with cache pressure (tests/soak/cache_pressure.py)."]
    for mib in SIZES_MIB:
        path = os.path.join(base, f"c{mib}.bin")
        with open(path, "wb") as f:
            f.write(rng.randbytes(mib << 20))
        os.chmod(path, 0o644)
        toml += [f"[datasets.soak-c{mib}]", f'source = "{path}"', 'tiers  = ["cache"]', ""]
    with open(cluster.config, "a") as f:
        f.write("\n".join(toml))
    script = os.path.join(base, "job.sh")
    with open(script, "w") as f:
        f.write(JOB_SCRIPT)
    os.chmod(script, 0o755)
    workdirs = {}
    for user in users:
        d = os.path.join(base, user)
        os.makedirs(d, exist_ok=True)
        os.chown(d, pwd.getpwnam(user).pw_uid, -1)
        workdirs[user] = d
    return base, script, workdirs


# On a node, as root: the time and what its cache holds, every 0.2 s, for
# at most the soak's length.
SAMPLE_LOOP = ('end=$(($(date +%s) + $1)); while [ "$(date +%s)" -lt "$end" ]; do '
               'printf "%s %s\\n" "$(date +%s.%N)" "$(du -s -B1 /local/dlcache/.cache 2>/dev/null | cut -f1)"; '
               'sleep 0.2; done')


class Sampler:
    """Each node's cache as du sees it, five times a second, from one loop
    on each node: (epoch seconds, bytes).  A staging fills a node's cache in
    well under a second here: a look every second missed what a prolog saw."""

    def __init__(self, cluster, seconds):
        self.samples = collections.defaultdict(list)
        self.procs, self.threads = [], []
        for node in cluster.compute_nodes:
            p = subprocess.Popen([VCLUSTER, "exec", "--dir", cluster.vc, node, "bash", "-c", SAMPLE_LOOP, "-",
                                  str(int(seconds))], env=cluster.env, stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
            t = threading.Thread(target=self.read, args=(node, p), daemon=True)
            t.start()
            self.procs.append(p)
            self.threads.append(t)

    def read(self, node, proc):
        for line in proc.stdout:
            fields = line.split()
            if len(fields) == 2 and fields[1].isdigit():
                self.samples[node].append((float(fields[0]), int(fields[1])))

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
            p.wait(timeout=30)
        for t in self.threads:
            t.join(timeout=10)

    def most_before(self, node, at, window=5.0):
        """The most the node's cache held in the WINDOW seconds before AT (a
        prolog's line is logged when it ends, after it measured)."""
        seen = [b for t, b in self.samples[node] if at - window <= t <= at]
        return max(seen) if seen else None


ATTACKER = "dlstest2"  # whose jobs leave junk (one in six)


class Job:
    def __init__(self, user, mib, nodes, pause, junk=0):
        self.user, self.mib, self.nodes, self.pause, self.junk = user, mib, nodes, pause, junk
        self.id = None
        self.state = ""
        self.output = ""
        self.outcome = None


LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\] (?:error: )?dlstage: job (\d+) on (\w+): (.*)$")


def log_events(cluster):
    """(epoch seconds, job, node, text) of every dlstage line in the slurmd logs."""
    events = []
    for path in glob.glob(os.path.join(cluster.vc, "log", "slurmd-*.log")):
        with open(path, errors="replace") as f:
            for line in f:
                m = LOG_LINE.match(line.strip())
                if m:
                    at = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                    events.append((at, int(m.group(2)), m.group(3), m.group(4)))
    return events


def run_pressure(cluster, args, say):
    users = users_here()
    base, script, workdirs = prepare(cluster, users)
    rng = random.Random(args.seed)
    sampler = Sampler(cluster, args.minutes * 60 + 600)
    jobs, in_flight = [], []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    say(f"cache pressure: {len(users)} users, datasets of {', '.join(map(str, SIZES_MIB))} MiB, "
        f"{args.jobs} jobs, {args.in_flight} in flight, a {CACHE_MAX >> 20} MiB cache a node")
    while (len(jobs) < args.jobs and time.monotonic() < deadline) or in_flight:
        if len(jobs) < args.jobs and time.monotonic() < deadline and len(in_flight) < args.in_flight:
            job = Job(rng.choice(users), rng.choice(SIZES_MIB), rng.randint(1, 2), round(rng.uniform(0.5, 4), 1))
            if ATTACKER in users and rng.random() < 1 / 6:
                job.user, job.junk = ATTACKER, rng.choice([3, 6, 9])
            name = f"soak-c{job.mib}"
            env = {k: cluster.env[k] for k in ("SLURM_CONF", "PATH", "OMPI_MCA_btl_tcp_if_include")}
            argv = ["env"] + [f"{k}={v}" for k, v in env.items()] + [
                f"SOAK_SOURCE={base}/c{job.mib}.bin", f"SOAK_PAUSE={job.pause}", f"SOAK_JUNK={job.junk or ''}",
                "sbatch", "--parsable", f"-N{job.nodes}", "-t", "5", "-o", "c-%j.out",
                f"--stage-data={name}:cache", "--export=ALL", "--wrap",
                f'SOAK_STAGED="$DLSTAGE_SOAK_C{job.mib}" {script}']
            rc, out, err = run(argv, user=job.user, cwd=workdirs[job.user])
            jobs.append(job)
            if rc != 0:
                job.outcome = f"sbatch refused: {err.strip()}"
                continue
            job.id = int(out.strip().split(";")[0])
            in_flight.append(job)
            if job.junk:
                say(f"job {job.id} of {job.user} leaves {job.junk} MiB of junk on each of its nodes")
        states = cluster.jobs() or {}
        for job in list(in_flight):
            info = states.get(job.id)
            if info and info["state"] in ENDED:
                job.state = info["state"]
                path = os.path.join(workdirs[job.user], f"c-{job.id}.out")
                with open(path, errors="replace") as f:
                    job.output = f.read()
                in_flight.remove(job)
        time.sleep(0.3)
    time.sleep(3)  # the last epilogs' evictions, sampled
    sampler.stop()
    wall = time.monotonic() - started
    rows, counts = judge(cluster, jobs, sampler, say)
    return rows, counts, jobs, sampler, wall


# What du counts that no entry holds: the cache parent and the users'
# directories themselves.
UNCOUNTED_SLACK = 1 << 20


def counted_by_root(cluster, node):
    """The bytes of NODE's cache entries as root measures them (`dlstage
    status --node --json`), or None when it cannot say."""
    rc, out, _ = cluster.on_node(node, [cluster.dlstage, "--config", cluster.config, "status", "--node", node,
                                        "--json"], timeout=120)
    if rc != 0 or "{" not in out:
        return None
    doc = json.loads(out[out.index("{"):out.rindex("}") + 1])
    tier = next((t for t in doc.get("tiers", []) if t.get("tier") == "cache"), None)
    return sum(e.get("bytes", 0) for e in tier.get("cache_entries", [])) if tier else None


def judge(cluster, jobs, sampler, say):
    """The invariants' rows (name, held, detail), and the counts."""
    by_id = {j.id: j for j in jobs if j.id}
    high = HIGH * CACHE_MAX * SLACK
    unknown, early_evictions, early_refusals = [], [], []
    counts = collections.Counter()
    events = log_events(cluster)
    admitted = collections.defaultdict(list)  # node: (when, job) of each prolog that ended
    for at, job_id, node, text in events:
        if job_id in by_id and text.endswith(" prepared"):
            admitted[node].append((at, job_id))

    def still_coming(node, at, job_id, window=5.0):
        """What the jobs admitted on NODE in the WINDOW seconds before AT
        brings, as a prolog counts it (root's record of each use): their
        stagings may not have written it yet."""
        return sum(by_id[j].mib << 20 for t, j in admitted[node] if j != job_id and at - window <= t < at)

    for at, job_id, node, text in events:
        job = by_id.get(job_id)
        if job is None:
            continue
        brings = job.mib << 20
        held = sampler.most_before(node, at)
        under = held is not None and held + brings + still_coming(node, at, job_id) < high
        if "node cache 'cache': evicted " in text:
            counts["evictions"] += 1
            if "its size unknown" in text:
                unknown.append(f"job {job_id} on {node}: {text}")
            if under:
                early_evictions.append(f"job {job_id} on {node}, the cache at {held >> 20} MiB, {job.mib} MiB "
                                       f"coming: {text}")
        if "even with every unused cache entry evicted" in text:
            counts["refusals"] += 1
            if under:
                early_refusals.append(f"job {job_id} on {node}, the cache at {held >> 20} MiB, {job.mib} MiB "
                                      f"coming: {text}")
    bad_jobs = []
    for job in jobs:
        if job.outcome:  # sbatch refused it
            bad_jobs.append(f"{job.user}: {job.outcome}")
            continue
        oks = len(re.findall(r"^OK ", job.output, re.M))
        if job.state == "COMPLETED" and oks == job.nodes and "DIFFERS" not in job.output:
            job.outcome = "ok"
        elif "even with every unused cache entry evicted" in job.output:
            job.outcome = "refused for room"
        else:
            job.outcome = "violation"
            last = job.output.strip().splitlines()[-3:]
            bad_jobs.append(f"job {job.id} ({job.user}, soak-c{job.mib}, -N{job.nodes}): {job.state}, "
                            f"{oks} of {job.nodes} nodes exact: {' | '.join(last)}")
    over, uncounted = [], []
    for node in cluster.compute_nodes:
        rc, out, _ = cluster.on_node(node, ["du", "-s", "-B1", "/local/dlcache/.cache"])
        used = int(out.split()[0]) if rc == 0 and out.strip() else 0
        if used > HIGH * CACHE_MAX:
            over.append(f"{node}: {used >> 20} MiB")
        counted = counted_by_root(cluster, node) if used > UNCOUNTED_SLACK else 0
        if counted is None or used > counted + UNCOUNTED_SLACK:
            uncounted.append(f"{node}: du {used >> 10} KiB, root's entries {counted if counted is None else counted >> 10} KiB")
    drained = [f"{n} {s}" for n, (s, _) in cluster.node_states().items() if "drain" in s or "down" in s]
    sampled = all(sampler.samples[n] for n in cluster.compute_nodes)
    rows = [
        (f"every job ({len(jobs)}) exact on each node, or refused for room", not bad_jobs, "; ".join(bad_jobs)),
        (f"no eviction ({counts['evictions']}) while the cache, with what came in, was under its watermark",
         not early_evictions, "; ".join(early_evictions)),
        ("no entry evicted as of unknown size (the tier shares its file system)", not unknown, "; ".join(unknown)),
        (f"no refusal ({counts['refusals']}) while the cache, with what came in, was under its watermark",
         not early_refusals, "; ".join(early_refusals)),
        ("each node's cache sampled", sampled, ""),
        ("no node drained or down", not drained, ", ".join(drained)),
        ("every node's cache under its high watermark at the end", not over, "; ".join(over)),
        ("every byte in a node's cache is some entry's, by root's measure (status --node)", not uncounted,
         "; ".join(uncounted)),
    ]
    for name, held, detail in rows:
        if not held:
            say(f"VIOLATION {name}: {detail[:1000]}")
    return rows, counts


def report(jobs, sampler, rows, counts, wall, seed):
    outcomes = collections.Counter(j.outcome for j in jobs)
    peak = {n: max((b for _, b in s), default=0) >> 20 for n, s in sampler.samples.items()}
    lines = [
        f"## Soak with cache pressure: seed {seed}, {len(jobs)} jobs",
        "",
        "| jobs | exact bytes | refused for room | leaving junk | evictions | peak cache per node (MiB, of 48) "
        "| wall |",
        "|---:|---:|---:|---:|---:|---|---:|",
        f"| {len(jobs)} | {outcomes['ok']} | {outcomes['refused for room']} | {sum(1 for j in jobs if j.junk)} "
        f"| {counts['evictions']} "
        f"| {', '.join(f'{n} {p}' for n, p in sorted(peak.items()))} | {wall / 60:.1f} min |",
        "",
        "| invariant | held |",
        "|---|---|",
    ]
    for name, held, detail in rows:
        lines.append(f"| {name} | {'yes' if held else 'NO: ' + detail[:300]} |")
    passed = sum(1 for _, held, _ in rows if held)
    lines += ["", f"{passed} passed, {len(rows) - passed} failed"]
    return "\n".join(lines) + "\n"
