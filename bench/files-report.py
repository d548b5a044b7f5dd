#!/usr/bin/env python3
"""files-report.py CSV OUTDIR: bench/files' Markdown table, target checks,
phase table and gnuplot figure (OUTDIR/files.md, OUTDIR/files.png)."""
import csv
import os
import statistics
import subprocess
import sys
from collections import defaultdict

csv_path, outdir = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(csv_path)))
runs = defaultdict(list)  # (files, nodes, tier, what) -> rows
for r in rows:
    runs[(int(r["files"]), int(r["nodes"]), r["tier"], r["what"])].append(r)
cases = sorted({k[:3] for k in runs})


def median(case, what, field):
    got = [float(r[field]) for r in runs.get(case + (what,), []) if r[field] not in ("", "nan")]
    return statistics.median(got) if got else float("nan")


def revisions(case):
    return ", ".join(sorted({r["revision"] for w in ("tar-x", "cp-r", "dlstage") for r in runs.get(case + (w,), [])}))


def dates(case):
    return ", ".join(sorted({r["date"] for w in ("tar-x", "cp-r", "dlstage") for r in runs.get(case + (w,), [])}))


out = ["# Many tiny files (bench/files)", "",
       "Trees of 0.5-3 KB files in 1,000 directories, staged from a plain local directory by "
       "`dlstage stage`, against each node unpacking a tar of the same tree (`tar -x`, the node's "
       "file-creation limit) and each node running `cp -r`, on the same tier of every node at once, "
       f"in the same run.  Medians of the rounds; {os.cpu_count()} cores shared by all virtual nodes.", "",
       "| files | N | tier | tar -x s | cp -r s | dlstage s | dlstage / tar -x | dlstage cpu s | "
       "cpu µs per file and node | peak MiB per rank | revision | date |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|"]
checks = []
for case in cases:
    files, n, tier = case
    tar, cp, dl = (median(case, w, "seconds") for w in ("tar-x", "cp-r", "dlstage"))
    cpu, peak = median(case, "dlstage", "cpu_s"), median(case, "dlstage", "peak_mib")
    ratio = dl / tar if tar == tar and tar > 0 else float("nan")
    per_file = cpu / (files * n) * 1e6
    out.append(f"| {files:,} | {n} | {tier} | {tar:.1f} | {cp:.1f} | {dl:.1f} | {ratio:.2f} | {cpu:.1f} | "
               f"{per_file:.1f} | {peak:.0f} | {revisions(case)} | {dates(case)} |")
    if files >= 1280000:
        ok = ratio <= 1.5 and peak <= 256
        checks.append(f"- {files:,} files, N = {n}: dlstage / tar -x = {ratio:.2f} (target 1.5), "
                      f"peak {peak:.0f} MiB per rank (target 256): {'met' if ok else 'NOT met'}")
if checks:
    out += ["", "Targets (issue 26):", ""] + checks

phases_path = os.path.join(outdir, "files-phases.csv")
if os.path.exists(phases_path) and os.path.getsize(phases_path) > 0:
    out += ["", "dlstage's time by phase (slowest node), as its phases line says:", "",
            "| files | N | tier | revision | phases |", "|---|---|---|---|---|"]
    for line in open(phases_path):
        f, n, tier, rev, phases = line.rstrip("\n").split(",", 4)
        out.append(f"| {int(f):,} | {n} | {tier} | {rev} | {phases.replace(';', ',')} |")
open(os.path.join(outdir, "files.md"), "w").write("\n".join(out) + "\n")

# One group of bars per (files, N): tar -x, cp -r, dlstage.
data = os.path.join(outdir, "plot-files.dat")
with open(data, "w") as f:
    for case in cases:
        label = f"{case[0] // 1000}k N={case[1]} {case[2]}"
        vals = [median(case, w, "seconds") for w in ("tar-x", "cp-r", "dlstage")]
        f.write(f'"{label}" ' + " ".join("NaN" if v != v else f"{v:.2f}" for v in vals) + "\n")
revs = ", ".join(sorted({r["revision"] for r in rows}))
plot = [
    "set terminal pngcairo size 900,500",
    f"set output '{os.path.join(outdir, 'files.png')}'",
    f"set title 'Many tiny files: seconds to a copy on every node (revision {revs})'",
    "set style data histograms", "set style histogram clustered gap 1", "set style fill solid 0.8 border -1",
    "set ylabel 'seconds'", "set key top left", "set grid ytics",
    f"plot '{data}' using 2:xtic(1) title 'tar -x (each node)', '' using 3 title 'cp -r (each node)', "
    "'' using 4 title 'dlstage stage'",
]
subprocess.run(["gnuplot"], input="\n".join(plot), text=True, check=True)
