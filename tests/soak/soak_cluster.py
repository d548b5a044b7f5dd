"""The soak's hands on the test cluster: Slurm commands as root and as a
user, a node's namespace, the processes of a job, the vcluster's fault
commands.  Nothing here decides anything; soak_faults and soak_checks do."""

import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VCLUSTER = os.path.join(ROOT, "tests", "cluster", "vcluster")
START_CLUSTER = os.path.join(ROOT, "tests", "integration", "start-cluster")

# What Slurm calls a job that has ended (squeue -t all keeps them for MinJobAge).
ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY"}


def run(argv, env=None, timeout=120, check=False, user=None, cwd=None, input_text=None):
    """argv's (rc, stdout, stderr); as USER through runuser when given."""
    if user:
        argv = ["runuser", "-u", user, "--"] + list(argv)
    try:
        p = subprocess.run(argv, env=env, cwd=cwd, input=input_text, capture_output=True, text=True,
                           timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        if check:
            raise RuntimeError(f"soak: {' '.join(argv)} did not end in {timeout} s")
        return 124, "", f"timed out after {timeout} s"
    if check and p.returncode != 0:
        raise RuntimeError(f"soak: {' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.returncode, p.stdout, p.stderr


class Cluster:
    """A start-cluster DIR: its environment (env.sh's exports), nodes and users."""

    def __init__(self, cluster_dir, exports, compute_nodes, mover_node):
        self.dir = cluster_dir
        self.env = dict(os.environ)
        self.env.update(exports)
        self.env["OMPI_MCA_btl_tcp_if_include"] = "lo"
        self.vc = exports["VCLUSTER_DIR"]
        self.config = os.path.join(cluster_dir, "dlstage.toml")
        self.dlstage = exports["DLSTAGE_BIN"]
        self.compute_nodes = compute_nodes
        self.mover_node = mover_node
        self.nodes = compute_nodes + ([mover_node] if mover_node else [])

    # --- starting and stopping -------------------------------------------
    @staticmethod
    def start(cluster_dir, build, compute_nodes):
        env = dict(os.environ, DLSTAGE_TEST_NODES=str(compute_nodes), DLSTAGE_TEST_MOVER_NODES="1",
                   DLSTAGE_TEST_SMALL_NODE="")
        with open(os.path.join(cluster_dir, "env.sh"), "w") as out:
            p = subprocess.run([START_CLUSTER, cluster_dir, build], env=env, stdout=out, text=True)
        if p.returncode != 0:
            raise RuntimeError("soak: tests/integration/start-cluster failed")
        return Cluster.attach(cluster_dir)

    @staticmethod
    def attach(cluster_dir):
        exports = {}
        with open(os.path.join(cluster_dir, "env.sh")) as f:
            for line in f:
                m = re.match(r"export (\w+)=(.*)$", line.strip())
                if m:
                    exports[m.group(1)] = m.group(2).strip("'\"")
        with open(os.path.join(exports["VCLUSTER_DIR"], "run", "nodes")) as f:
            names = f.read().split()
        mover = exports.get("DLSTAGE_TEST_MOVER_NODE") or None
        return Cluster(cluster_dir, exports, [n for n in names if n != mover], mover)

    def stop(self):
        run([VCLUSTER, "down", "--dir", self.vc], env=self.env, timeout=180)

    # --- Slurm ------------------------------------------------------------
    def slurm(self, argv, timeout=30):
        return run(argv, env=self.env, timeout=timeout)

    def as_user(self, user, argv, cwd=None, timeout=60):
        env = {k: self.env[k] for k in ("SLURM_CONF", "PATH", "OMPI_MCA_btl_tcp_if_include") if k in self.env}
        argv = ["env"] + [f"{k}={v}" for k, v in env.items()] + list(argv)
        return run(argv, user=user, cwd=cwd, timeout=timeout)

    def jobs(self):
        """{job id: (state, reason, comment, nodes, restarts)} of every job slurmctld knows."""
        rc, out, _ = self.slurm(["scontrol", "show", "job", "-o"])
        jobs = {}
        if rc != 0:
            return None
        for line in out.splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            comment = re.search(r" Comment=(.*?) (?:\w+=)", line)
            if "JobId" not in fields:
                continue
            jobs[int(fields["JobId"])] = {
                "state": fields.get("JobState", ""),
                "reason": fields.get("Reason", ""),
                "comment": comment.group(1) if comment else "",
                "nodes": expand_nodes(fields.get("NodeList", "")),
                "restarts": int(fields.get("Restarts", "0") or 0),
                "exit": fields.get("ExitCode", ""),
                "name": fields.get("JobName", ""),
                "user": fields.get("UserId", "").split("(")[0],
            }
        return jobs

    def node_states(self):
        rc, out, _ = self.slurm(["sinfo", "-h", "-N", "-o", "%N|%T|%E"])
        states = {}
        for line in out.splitlines():
            node, state, reason = (line.split("|") + ["", ""])[:3]
            states[node] = (state, reason)
        return states

    # --- nodes ------------------------------------------------------------
    def on_node(self, node, argv, timeout=60, user=None):
        if user:
            argv = ["runuser", "-u", user, "--"] + list(argv)
        return run([VCLUSTER, "exec", "--dir", self.vc, node] + list(argv), env=self.env, timeout=timeout)

    def vcluster(self, argv, timeout=180):
        return run([VCLUSTER] + list(argv[:1]) + ["--dir", self.vc] + list(argv[1:]), env=self.env,
                   timeout=timeout)


def expand_nodes(nodelist):
    """n[1-3],n5 -> [n1, n2, n3, n5] (the vcluster's names only)."""
    nodes = []
    for m in re.finditer(r"([a-z]+)(?:\[([^\]]*)\]|(\d+))", nodelist or ""):
        prefix = m.group(1)
        if m.group(3):
            nodes.append(prefix + m.group(3))
            continue
        for part in m.group(2).split(","):
            lo, _, hi = part.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                nodes.append(f"{prefix}{i}")
    return nodes


def live_processes(names, job_id=None):
    """[(pid, comm, cmdline)] of every live process called one of NAMES (and,
    given JOB_ID, whose environment names that job).  The vcluster's nodes
    share the host's pid namespace, so /proc here sees them all."""
    found = []
    want = f"SLURM_JOB_ID={job_id}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if comm not in names:
                continue
            if job_id is not None:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if want not in f.read().split(b"\0"):
                        continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(pid), comm, cmdline))
    return found


def processes_of_job(job_id, names):
    return live_processes(names, job_id)


def node_of_process(pid):
    """The vcluster node a process runs on (slurmstepd gives its tasks
    SLURMD_NODENAME), or "" when it is gone or says none."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith(b"SLURMD_NODENAME="):
                    return var.split(b"=", 1)[1].decode()
    except OSError:
        pass
    return ""


def wait_until(predicate, timeout, step=0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None
