#!/usr/bin/env python3
"""report.py CSV OUTDIR QUICK PFS_DESCRIPTION: the benchmark's Markdown
table, target checks and gnuplot figure from bench/run's measurements."""
import csv
import os
import subprocess
import sys
from collections import defaultdict

csv_path, outdir, quick, pfs = sys.argv[1], sys.argv[2], sys.argv[3] == "yes", sys.argv[4]
rows = list(csv.DictReader(open(csv_path)))
t = defaultdict(dict)  # t[(dataset, method)][nodes] = seconds
extra = {}
for r in rows:
    try:
        secs = float(r["seconds"])
    except ValueError:
        secs = float("nan")
    t[(r["dataset"], r["method"])][int(r["nodes"])] = secs
    extra[(r["dataset"], r["method"], int(r["nodes"]))] = r
nodes = sorted({int(r["nodes"]) for r in rows if int(r["nodes"]) > 0})
datasets = [d for d in ("file", "tree", "shards", "image") if (d, "dlstage") in t]
cores = os.cpu_count() or 1
names = {"file": "one file", "tree": "tree of small files", "shards": "tar shards, extract mode",
         "image": "the tree as a squashfs image, mount mode"}


def get(ds, method, n):
    return t.get((ds, method), {}).get(n, float("nan"))


def limit(ds, n):
    return max(get(ds, "limit-read-once", 0), get(ds, "limit-write-N", n))


def fmt(x, digits=1):
    return "-" if x != x else f"{x:.{digits}f}"


lines = [f"# dlstage benchmark{' (quick)' if quick else ''}", "", f"Source behind {pfs}.",
         "Times in seconds to \"ready on every node\", allocation excluded; all in one run.",
         f"\"stager CPU / machine\": CPU seconds of all stager ranks over ({cores} cores x wall time); near 100%",
         "the stager alone keeps this machine's cores busy (N virtual nodes share them).", ""]
for ds in datasets:
    size = int(extra[(ds, "dlstage", nodes[0])]["bytes"])
    files = int(extra[(ds, "dlstage", nodes[0])]["files"])
    lines += [f"## {names[ds]}: {size / 1e9:.2f} GB, {files} files", "",
              "| N | dlstage | GB/s | files/s | PFS bytes read | peak RSS/rank | stager CPU / machine | bcast baseline | per-node copies"
              + (" | sbcast" if ds == "file" else "") + " | limit (read once, N writes) | dlstage / limit |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if ds == "file" else "") + "---:|---:|"]
    for n in nodes:
        d = get(ds, "dlstage", n)
        e = extra.get((ds, "dlstage", n), {})
        read_x = int(e.get("pfs_bytes", 0) or 0) / size if size else float("nan")
        rss, _, cpu = e.get("peak_rss", "-/").partition("/")
        try:
            busy = f"{float(cpu) / (cores * d) * 100:.0f}%"
        except ValueError:
            busy = "-"
        row = [str(n), fmt(d, 2), fmt(size / 1e9 / d, 2), fmt(files / d, 0), f"{read_x:.2f}x", rss, busy, fmt(get(ds, "dlstage-bcast", n), 2), fmt(get(ds, "per-node-copy", n), 2)]
        if ds == "file":
            row.append(fmt(get(ds, "sbcast", n), 2))
        row += [f"{fmt(limit(ds, n), 2)} ({fmt(get(ds, 'limit-read-once', 0), 2)}, {fmt(get(ds, 'limit-write-N', n), 2)})",
                fmt(d / limit(ds, n), 2)]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")

# The targets, as ratios within this run.
top = max(nodes)
checks = []


def check(what, ok, detail):
    checks.append(f"| {what} | {'met' if ok else 'MISSED'} | {detail} |")


for ds in ("file", "tree"):
    if ds in datasets:
        r = get(ds, "dlstage", top) / limit(ds, top)
        check(f"{names[ds]}, N={top}: dlstage <= 1.3x limit", r <= 1.3, f"{r:.2f}x")
        s = get(ds, "per-node-copy", top) / get(ds, "dlstage", top)
        check(f"{names[ds]}, N={top}: >= 4x faster than per-node copies", s >= 4, f"{s:.2f}x")
if "file" in datasets and 4 in nodes:
    s = get("file", "sbcast", 4) / get("file", "dlstage", 4)
    check("one file, N=4: >= 3x faster than sbcast", s >= 3, f"{s:.2f}x")
    b = get("file", "dlstage-bcast", 4) / get("file", "dlstage", 4)
    check("one file, N=4: >= 1.5x faster than dbcast's scheme (bcast baseline)", b >= 1.5, f"{b:.2f}x")
for ds in ("file", "tree"):
    if ds in datasets and 1 in nodes:
        grow = get(ds, "dlstage", top) - get(ds, "dlstage", 1)
        allowed = get(ds, "limit-write-N", top)
        check(f"{names[ds]}: growth N=1 -> N={top} <= local-write part of the limit", grow <= allowed,
              f"+{grow:.2f} s vs {allowed:.2f} s")
if "shards" in datasets:
    x = get("shards", "dlstage-extract-alone", 1)
    tar = get("shards", "gnu-tar-extract", 1)
    check("extraction per node >= 1.5x GNU tar one shard at a time (same node, same shards, best of 3)",
          tar / x >= 1.5, f"{tar / x:.2f}x ({x:.2f} s vs {tar:.2f} s)")
lines += ["## Targets" + (" (quick run: indicative only)" if quick else ""), "", "| target | result | measured |",
          "|---|---|---|"] + checks + [""]
if "image" in datasets:
    img, tree_copy, tree_nodes = get("image", "dlstage", top), get("tree", "dlstage", top), get("tree", "per-node-copy", top)
    mount_read, shm_read = get("image", "read-from-mount", 1), get("image", "read-from-shm-tree", 1)
    files = int(extra[("image", "dlstage", nodes[0])]["files"])
    lines += ["## squashfs image, mount mode", "",
              "The same tree packed by `dlstage pack` (one inode on the node instead of "
              f"{files}), staged as one file and mounted with squashfuse on every node.", "",
              "| comparison | measured |", "|---|---|",
              f"| N={top}: ready (staged and mounted) | {fmt(img, 2)} s, {fmt(img / limit('image', top), 2)}x its limit |",
              f"| N={top}: the tree staged file by file / the image | {fmt(tree_copy / img, 2)}x |",
              f"| N={top}: per-node copies of the tree / the image | {fmt(tree_nodes / img, 2)}x |",
              f"| a job reading every file once (16 readers, N=1): from the mount / from the tree in /dev/shm | "
              f"{fmt(mount_read, 2)} s / {fmt(shm_read, 2)} s = {fmt(mount_read / shm_read, 2)}x "
              f"({fmt(files / mount_read, 0)} files/s from the mount) |", ""]
open(os.path.join(outdir, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

# Figure: one panel per dataset, time against nodes.
methods = [("dlstage", "dlstage"), ("dlstage-bcast", "bcast baseline (dbcast scheme)"),
           ("per-node-copy", "per-node copies"), ("sbcast", "sbcast"), ("limit", "limit")]
plot = [f"set terminal pngcairo size {375 * len(datasets)},520 font ',10'", f"set output '{os.path.join(outdir, 'results.png')}'",
        "set multiplot layout 1,%d" % len(datasets), "set xlabel 'nodes'", "set ylabel 'seconds to ready on every node'",
        "set logscale x 2", "set yrange [0:*]", "set grid",
        # Below the panels: inside, a key covers some curve of some panel.
        "set key outside below horizontal"]
for ds in datasets:
    data = os.path.join(outdir, f"plot-{ds}.dat")
    with open(data, "w") as f:
        for n in nodes:
            vals = [get(ds, m, n) if m != "limit" else limit(ds, n) for m, _ in methods]
            f.write(f"{n} " + " ".join("NaN" if v != v else f"{v:.3f}" for v in vals) + "\n")
    series = [f"'{data}' using 1:{i + 2} with linespoints title '{title}'"
              for i, (m, title) in enumerate(methods) if not (m == "sbcast" and ds != "file")]
    plot += [f"set title '{names[ds]}'", "plot " + ", ".join(series)]
plot.append("unset multiplot")
subprocess.run(["gnuplot"], input="\n".join(plot), text=True, check=True)
