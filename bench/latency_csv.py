"""The measurements of bench/latency and bench/epoch: CSV rows of
nodes,latency_ms,what,seconds,meta_ops, read for their reports."""
import csv
import math
from collections import defaultdict


def load_runs(path):
    """(nodes, latency_ms, what) -> every run's seconds, and -> the last
    run's metadata operations; rows without a number of seconds skipped."""
    runs = defaultdict(list)
    ops = {}
    for row in csv.DictReader(open(path)):
        try:
            seconds = float(row["seconds"])
        except ValueError:
            continue
        if math.isnan(seconds):
            continue
        key = (int(row["nodes"]), float(row["latency_ms"]), row["what"])
        runs[key].append(seconds)
        ops[key] = row["meta_ops"]
    return runs, ops
