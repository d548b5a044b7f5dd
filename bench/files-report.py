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
    return ", ".join(sorted({r["revision"] for k, rs in runs.items() if k[:3] == case for r in rs}))


def dates(case):
    return ", ".join(sorted({r["date"] for k, rs in runs.items() if k[:3] == case for r in rs}))


out = ["# Many tiny files (bench/files)", "",
       "Trees of 0.5-3 KB files in 1,000 directories, staged from a plain local directory by "
       "`dlstage stage`, against each node unpacking a tar of the same tree (`tar -x`, the node's "
       "file-creation limit) and each node running `cp -r`, on the same tier of every node at once, "
       f"in the same run.  Medians of the rounds; {os.cpu_count()} cores shared by all virtual nodes.", "",
       "| files | N | tier | tar -x s | cp -r s | dlstage s | dlstage / tar -x | dlstage cpu s | "
       "cpu µs per file and node | peak MiB per rank | revision | date |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|"]
# dlstage with the thread knobs set (bench/files names them: "dlstage-r1-w1")
# gets a row of its own, after the defaults' "dlstage".
# From a cold source, "dlstage-cold" (and "dlstage-cold-r1-w1").
def dlstage_variants(case, cold=False):
    found = {k[3] for k in runs if k[:3] == case and k[3].startswith("dlstage")
             and k[3].startswith("dlstage-cold") == cold}
    first = "dlstage-cold" if cold else "dlstage"
    return sorted(found, key=lambda w: (w != first, w)) or [first]


def knobs(variant):
    parts = [k for k in variant.split("-")[1:] if k != "cold"]
    return "" if not parts else " (" + ", ".join(
        {"r": "readers ", "w": "writers "}[k[0]] + k[1:] for k in parts) + ")"


checks = []
for case in cases:
    files, n, tier = case
    tar, cp = (median(case, w, "seconds") for w in ("tar-x", "cp-r"))
    for variant in dlstage_variants(case):
        dl = median(case, variant, "seconds")
        cpu, peak = median(case, variant, "cpu_s"), median(case, variant, "peak_mib")
        ratio = dl / tar if tar == tar and tar > 0 else float("nan")
        per_file = cpu / (files * n) * 1e6
        out.append(f"| {files:,} | {n} | {tier}{knobs(variant)} | {tar:.1f} | {cp:.1f} | {dl:.1f} | {ratio:.2f} | "
                   f"{cpu:.1f} | {per_file:.1f} | {peak:.0f} | {revisions(case)} | {dates(case)} |")
        if files >= 1280000 and dl == dl:
            ok = ratio <= 1.5 and peak <= 256
            checks.append(f"- {files:,} files, N = {n}{knobs(variant)}: dlstage / tar -x = {ratio:.2f} (target 1.5), "
                          f"peak {peak:.0f} MiB per rank (target 256): {'met' if ok else 'NOT met'}")
if checks:
    out += ["", "Targets (issue 26):", ""] + checks

# From a cold source: against the larger of the read limit (every file read
# once, cold, by 32 readers) and the creation limit (tar -x on every node).
cold_cases = [c for c in cases if any(k[:3] == c and k[3].startswith("dlstage-cold") for k in runs)]
if cold_cases:
    out += ["", "From a cold source (the page cache dropped first), against the larger of the two limits "
            "of the same run: reading every file once (32 readers) and `tar -x` on every node:", "",
            "| files | N | tier | read once s | tar -x s | dlstage s | dlstage / larger limit | dlstage cpu s | "
            "peak MiB per rank | revision | date |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    cold_checks = []
    for case in cold_cases:
        files, n, tier = case
        read, tar = median(case, "read-once", "seconds"), median(case, "tar-x", "seconds")
        limit = max(x for x in (read, tar, 0.0) if x == x)
        for variant in dlstage_variants(case, cold=True):
            dl = median(case, variant, "seconds")
            cpu, peak = median(case, variant, "cpu_s"), median(case, variant, "peak_mib")
            ratio = dl / limit if limit > 0 else float("nan")
            out.append(f"| {files:,} | {n} | {tier}{knobs(variant)} | {read:.1f} | {tar:.1f} | {dl:.1f} | "
                       f"{ratio:.2f} | {cpu:.1f} | {peak:.0f} | {revisions(case)} | {dates(case)} |")
            if files >= 1280000 and n == 2 and dl == dl:
                ok = ratio <= 1.2 and peak <= 256
                cold_checks.append(f"- {files:,} files, N = {n}{knobs(variant)}, cold: dlstage / larger limit = "
                                   f"{ratio:.2f} (target 1.2), peak {peak:.0f} MiB per rank (target 256): "
                                   f"{'met' if ok else 'NOT met'}")
    if cold_checks:
        out += ["", "Targets (issue 58):", ""] + cold_checks

phases_path = os.path.join(outdir, "files-phases.csv")
if os.path.exists(phases_path) and os.path.getsize(phases_path) > 0:
    out += ["", "dlstage's time by phase (slowest node), as its phases line says, and how long the busiest "
            "node read, wrote and did both at once:", "",
            "| files | N | tier | revision | phases |", "|---|---|---|---|---|"]
    for line in open(phases_path):
        f, n, tier, variant, rev, phases = line.rstrip("\n").split(",", 5)
        cold = ", cold" if variant.startswith("dlstage-cold") else ""
        out.append(f"| {int(f):,} | {n} | {tier}{cold}{knobs(variant)} | {rev} | {phases.replace(';', ',')} |")
open(os.path.join(outdir, "files.md"), "w").write("\n".join(out) + "\n")

# One group of bars per (files, N): tar -x, cp -r, dlstage (each method
# measured at least once: gnuplot refuses a column of nothing but NaN).
methods = [("tar-x", "tar -x (each node)"), ("cp-r", "cp -r (each node)"), ("dlstage", "dlstage stage"),
           ("read-once", "read once, cold"), ("dlstage-cold", "dlstage, cold")]
methods = [m for m in methods if any(k[3] == m[0] for k in runs)]
data = os.path.join(outdir, "plot-files.dat")
with open(data, "w") as f:
    for case in cases:
        label = f"{case[0] // 1000}k N={case[1]} {case[2]}"
        vals = [median(case, w, "seconds") for w, _ in methods]
        f.write(f'"{label}" ' + " ".join("NaN" if v != v else f"{v:.2f}" for v in vals) + "\n")
revs = ", ".join(sorted({r["revision"] for r in rows}))
plot = [
    "set terminal pngcairo size 900,500",
    f"set output '{os.path.join(outdir, 'files.png')}'",
    f"set title 'Many tiny files: seconds to a copy on every node (revision {revs})'",
    "set style data histograms", "set style histogram clustered gap 1", "set style fill solid 0.8 border -1",
    "set ylabel 'seconds'", "set key top left", "set grid ytics",
    f"plot '{data}' using 2:xtic(1) title '{methods[0][1]}'"
    + "".join(f", '' using {i + 2} title '{t}'" for i, (_, t) in enumerate(methods) if i > 0),
]
subprocess.run(["gnuplot"], input="\n".join(plot), text=True, check=True)
