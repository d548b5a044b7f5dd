#!/usr/bin/python3
"""bench/mover's report: two-hop staging against its limit and by hand.

usage: mover-report.py CSV OUT_MD SETUP_LINE

CSV rows: dataset,round,what,seconds,pfs_bytes,load1,note (round 0: the dataset's
size, in pfs_bytes, and file count, in note; "all,0,bench-seconds": the run's
length).  Each figure is the median over the rounds; each ratio the median
of the rounds' own ratios (the measurements of one round ran minutes apart,
under the same load), with their range in brackets.
"""
import csv
import math
import sys
from collections import defaultdict

TARGET_HOP1 = 1.2


def median(xs):
    xs = sorted(x for x in xs if x == x)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def f(x, digits=2):
    return "-" if x != x else f"{x:.{digits}f}"


def main():
    path, out, setup = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = defaultdict(dict)  # (dataset, what) -> round -> seconds
    served = defaultdict(dict)  # (dataset, what) -> round -> pfssim bytes
    size, files, took, loads = {}, {}, None, []
    for row in csv.DictReader(open(path)):
        ds, rnd, what = row["dataset"], int(row["round"]), row["what"]
        if what == "size":
            size[ds], files[ds] = int(row["pfs_bytes"]), row["note"]
            continue
        if what == "bench-seconds":
            took = int(row["seconds"])
            continue
        try:
            seconds = float(row["seconds"])
        except ValueError:
            seconds = float("nan")
        runs[(ds, what)][rnd] = seconds
        try:
            loads.append(float(row["load1"]))
        except (KeyError, ValueError):
            pass
        if row["pfs_bytes"] not in ("", "-"):
            served[(ds, what)][rnd] = int(row["pfs_bytes"])

    def med(ds, what):
        return median(runs[(ds, what)].values())

    def ratio(ds, a, b):
        """median and range of round-by-round a/b."""
        ra, rb = runs[(ds, a)], runs[(ds, b)]
        rs = [ra[r] / rb[r] for r in ra if r in rb and rb[r] and rb[r] == rb[r] and ra[r] == ra[r]]
        if not rs:
            return float("nan"), ""
        return median(rs), (f" ({min(rs):.2f}-{max(rs):.2f})" if len(rs) > 1 else "")

    def rounds_of(ds, a, b):
        """the rounds' own a/b, as text."""
        ra, rb = runs[(ds, a)], runs[(ds, b)]
        return ", ".join(f"{ra[r] / rb[r]:.2f}" for r in sorted(ra) if r in rb and rb[r] == rb[r] and rb[r] and ra[r] == ra[r])

    def spread(ds, what):
        xs = [x for x in runs[(ds, what)].values() if x == x]
        return f" ({min(xs):.2f}-{max(xs):.2f})" if len(xs) > 1 else ""

    def read_x(ds, what):
        b = [x for x in served[(ds, what)].values()]
        if not b or not size.get(ds):
            return "-"
        return f"{median(b) / size[ds]:.2f}x"

    datasets = [d for d in ("file", "tree") if d in size] + sorted(d for d in size if d not in ("file", "tree"))
    nrounds = max((len(v) for v in runs.values()), default=0)
    L = ["# Two-hop staging (LARGEDATA): bench/mover", "", setup + ".", "",
         "Seconds, the median of the rounds (their range in brackets). `limit`: the source read once "
         "through pfssim on the mover node with 16 streams (inside the job step). `two-hop`: from "
         "`sbatch -N3 --stage-data=NAME:shm` (no copy in scratch) to the job script's first line; "
         "`hop 1`, `hop 2`: the stager's own time in the mover job and in the job (their "
         "\"staged ... in S s\" lines: the copy once planned, the walk of the source left out); "
         "`hop 1 step`: the mover job's batch step from its launch (slurmd's log) to the copy's ready "
         "record, the walk in; `copy ready`: from sbatch to the copy's appearing in scratch. "
         "`again`: a second job, the copy current. `by hand`: `srun -p mover -N1 cp -r` into scratch, "
         "then `sbatch -N3 --stage-data=PATH:shm`, to the script's first line; `cp`: the first "
         "command alone; `its staging`: that job's \"staged\" line. Read: bytes pfssim served / the "
         "dataset's size.", ""]
    L += ["| dataset | size | limit | two-hop | hop 1 | hop 1 step | copy ready | hop 2 | read | again | its hop 2 "
          "| read | by hand | cp | its staging | read |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for ds in datasets:
        L.append(
            f"| {ds} | {size[ds] / 2**30:.2f} GiB, {files[ds].replace('1 files', '1 file')} | {f(med(ds, 'limit'))}{spread(ds, 'limit')} | "
            f"{f(med(ds, 'two-hop'))}{spread(ds, 'two-hop')} | {f(med(ds, 'hop1'))} | {f(med(ds, 'hop1-step'))} | "
            f"{f(med(ds, 'hop1-ready'))} | "
            f"{f(med(ds, 'hop2'))} | {read_x(ds, 'two-hop')} | {f(med(ds, 'again'))}{spread(ds, 'again')} | "
            f"{f(med(ds, 'again-stage'))} | {read_x(ds, 'again')} | {f(med(ds, 'by-hand'))}{spread(ds, 'by-hand')} | "
            f"{f(med(ds, 'by-hand-cp'))} | {f(med(ds, 'by-hand-stage'))} | {read_x(ds, 'by-hand')} |")
    L += ["", "Ratios, each the median of the rounds' own ratios (range in brackets):", "",
          "| dataset | two-hop / by hand | hop 1 / limit | hop 1 step / limit | copy ready / limit "
          "| hop 2 / its staging by hand | again / two-hop | two-hop - hop 1 - hop 2 |",
          "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for ds in datasets:
        th, th_r = ratio(ds, "two-hop", "by-hand")
        h1, h1_r = ratio(ds, "hop1", "limit")
        cr, cr_r = ratio(ds, "hop1-ready", "limit")
        hs, hs_r = ratio(ds, "hop1-step", "limit")
        h2, h2_r = ratio(ds, "hop2", "by-hand-stage")
        ag, ag_r = ratio(ds, "again", "two-hop")
        rest = [runs[(ds, "two-hop")][r] - runs[(ds, "hop1")].get(r, math.nan) - runs[(ds, "hop2")].get(r, math.nan)
                for r in runs[(ds, "two-hop")]]
        L.append(f"| {ds} | {f(th)}{th_r} | {f(h1)}{h1_r} | {f(hs)}{hs_r} | {f(cr)}{cr_r} | {f(h2)}{h2_r} | {f(ag)}{ag_r} | "
                 f"{f(median(rest))} s |")
        if h1 == h1:
            verdicts.append(f"- {ds}: hop 1 {f(med(ds, 'hop1'))} s / read-once limit {f(med(ds, 'limit'))} s = "
                            f"{f(h1)}x (rounds: {rounds_of(ds, 'hop1', 'limit')}): "
                            f"{'met' if h1 <= TARGET_HOP1 else 'NOT met'} (target: at most {TARGET_HOP1}x)")
        if hs == hs:
            verdicts.append(f"  - the mover job's whole batch step, the walk of the source in: {f(med(ds, 'hop1-step'))} s "
                            f"= {f(hs)}x (rounds: {rounds_of(ds, 'hop1-step', 'limit')}): "
                            f"{'within' if hs <= TARGET_HOP1 else 'NOT within'} {TARGET_HOP1}x")
    L += ["", f"## Target: hop 1 within {TARGET_HOP1}x of the mover node's read-once limit", ""]
    L += verdicts or ["- no hop 1 measured"]
    L += ["", f"{nrounds} rounds" + (f"; the whole run took {took} s" if took else "")
          + (f"; the machine's 1-minute load average after each measurement: {min(loads):.2f} to {max(loads):.2f} "
             f"(median {median(loads):.2f}; 2 cores)" if loads else "") + "."]
    open(out, "w").write("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
