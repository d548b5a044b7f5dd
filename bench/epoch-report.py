#!/usr/bin/python3
"""bench/epoch's table, goal check and plot: an epoch from the parallel file
system against staging and then the epoch.

usage: epoch-report.py CSV OUT_DIR SETUP_LINE   (writes OUT_DIR/epoch.md, epoch.png)
"""
import os
import subprocess
import sys

from latency_csv import load_runs

GOAL = 0.5  # stage + first epoch, as a share of one epoch from the file system
EPOCHS_PLOTTED = 5


def fmt(x, spec="{:.2f}"):
    return "-" if x is None else spec.format(x)


def break_even(stage, pfs, staged):
    """Epochs after which staging has paid for itself: stage + E*staged <= E*pfs."""
    if pfs <= staged:
        return None
    return stage / (pfs - staged)


def main():
    path, outdir, setup = sys.argv[1], sys.argv[2], sys.argv[3]
    runs, ops = load_runs(path)

    def best(n, lat, what):
        values = runs.get((n, lat, what))
        return min(values) if values else None

    cases = sorted({(n, lat) for n, lat, _ in runs})
    rows, checks, curves = [], [], []
    for n, lat in cases:
        pfs, pfs8 = best(n, lat, "epoch-pfs"), best(n, lat, "epoch-pfs-w8")
        stage, staged = best(n, lat, "stage"), best(n, lat, "epoch-staged")
        if None in (pfs, stage, staged):
            rows.append(f"| {lat:g} ms | {n} | {fmt(pfs)} | {fmt(pfs8)} | {fmt(stage)} | {fmt(staged)} | - | - | - |")
            continue
        first = stage + staged
        ratio = first / pfs
        even = break_even(stage, pfs, staged)
        even_cell = "never" if even is None else (f"{even:.2f} (within the first)" if even <= 1 else f"{even:.2f}")
        rows.append(f"| {lat:g} ms | {n} | {pfs:.2f} | {fmt(pfs8)} | {stage:.2f} | {staged:.2f} | {first:.2f} | "
                    f"{ratio:.2f}x | {even_cell} | {pfs / staged:.1f}x | {ops.get((n, lat, 'epoch-pfs'), '-')} |")
        checks.append(f"- N={n}, {lat:g} ms: stage + first epoch {first:.2f} s = {ratio:.2f}x one epoch from pfssim "
                      f"({pfs:.2f} s): {'met' if ratio <= GOAL else 'NOT met'} (goal: at most {GOAL}x)")
        if pfs8 is not None:
            checks.append(f"  - against the epoch with 8 workers ({pfs8:.2f} s): {first / pfs8:.2f}x")
        curves.append((n, lat, pfs, stage, staged))

    md = [
        "# One epoch from the parallel file system against staging and the epoch (bench/epoch)",
        "",
        setup + ".",
        "",
        "Best of the runs (other work on this 2-core machine only adds time), seconds. `epoch pfs`: one PyTorch "
        "DataLoader epoch (examples/pytorch/epoch.py --shard, 2 workers per node, every image decoded, "
        "ImageFolder's listing included) on every node of the job straight from pfssim, each node its "
        "DistributedSampler share; the job's epoch is its slowest node's. `8 workers`: the same with 8 "
        "DataLoader workers (N=1 only), what a user tries first against a slow file system. `stage`: "
        "`dlstage stage` to /dev/shm inside the allocation. `epoch staged`: the same epoch from the staged "
        "copy. `stage + 1st`: staging and the first epoch. Break-even: the number of epochs after which "
        "staging has paid for itself (stage / (epoch pfs - epoch staged)). `per epoch`: epoch pfs / epoch "
        "staged. Metadata ops: what pfssim served for one epoch from it.",
        "",
        "| latency | N | epoch pfs | 8 workers | stage | epoch staged | stage + 1st | stage + 1st / epoch pfs "
        "| break-even epochs | per epoch | metadata ops |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"![cumulative time over epochs](epoch.png)",
        "",
        f"## Goal: staging plus the first epoch in at most {GOAL}x one epoch from the file system",
        "",
        *checks,
        "",
        "## Caveats",
        "",
        "- The virtual nodes share this machine's 2 cores: at N=4 the four nodes' decoding (`epoch staged`) "
        "takes about as long as one node's at N=1, where real nodes would each take a quarter; the epoch "
        "from pfssim, waiting on metadata round trips, does get four times the parallelism.",
        "- Each node reads its share (DistributedSampler), so at N=4 pfssim serves each image once per epoch "
        "in all, as at N=1, with four times the requests in flight; pfssim's 64 slots are this job's alone, "
        "where a loaded metadata server is shared by every job of the machine.",
        "- About 0.5-0.8 s of each staging is srun and MPI start-up (see bench/latency).",
        "",
    ]
    with open(os.path.join(outdir, "epoch.md"), "w") as f:
        f.write("\n".join(md))
    plot(curves, os.path.join(outdir, "epoch.png"))


def plot(curves, png):
    """Cumulative time over epochs, one panel per latency: from pfssim
    (dashed) and with dlstage (staging at epoch 0, then the staged epochs)."""
    latencies = sorted({lat for _, lat, *_ in curves})
    if not latencies:
        return
    script = [f"set terminal pngcairo size {430 * len(latencies)},480 font ',10'", f"set output '{png}'",
              f"set multiplot layout 1,{len(latencies)}", "set key outside below horizontal",
              "set xlabel 'epochs'", "set ylabel 'time since the job started (s)'", "set grid",
              f"set xrange [0:{EPOCHS_PLOTTED}]", "set yrange [0:*]", "set xtics 1"]
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for lat in latencies:
        mine = [c for c in curves if c[1] == lat]
        script.append(f"set title 'metadata latency {lat:g} ms'")
        parts = []
        for i, (n, _, pfs, stage, staged) in enumerate(mine):
            colour = colours[i % len(colours)]
            parts.append(f"{pfs}*x with lines dashtype 2 lw 2 lc rgb '{colour}' title 'N={n} from pfssim'")
            parts.append(f"{stage}+{staged}*x with lines lw 2 lc rgb '{colour}' title 'N={n} dlstage'")
        script.append("plot " + ", ".join(parts))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


if __name__ == "__main__":
    main()
