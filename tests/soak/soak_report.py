"""The soak's table (Markdown): jobs and how they ended, faults by kind,
invariant checks and violations, wall time and jobs per minute."""

import collections
import subprocess

from soak_faults import ALL


def revision(root):
    p = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def render(soak, checks, wall, args):
    jobs = [j for j in soak.jobs if j.id]
    outcomes = collections.Counter(j.outcome for j in jobs)
    touched = sum(1 for j in jobs if j.touched)
    faults = collections.Counter(kind for _, kind, _, _ in soak.faults)
    refused = collections.Counter(what for what, *_ in soak.refused)
    lines = [
        f"## Soak: seed {args.seed}, {len(jobs)} jobs, revision {revision(soak.root)}",
        "",
        "| jobs | exact bytes | ended by a fault, with its reason | touched by a fault | refused at submit "
        "| faults | invariant checks | violations | wall time | jobs/min |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(jobs)} | {outcomes['ok']} | {outcomes['fault']} | {touched} | {len(soak.refused)} "
        f"| {len(soak.faults)} | {len(checks)} | {len(soak.violations)} | {wall / 60:.1f} min "
        f"| {len(jobs) / (wall / 60):.1f} |",
        "",
        "| fault | injected | jobs touched | missed its moment |",
        "|---|---:|---:|---:|",
    ]
    touched_by = collections.Counter()
    for j in jobs:
        for kind in {k for k, _ in j.touched}:
            touched_by[kind] += 1
    for f in ALL:
        lines.append(f"| {f.kind} | {faults[f.kind]} | {touched_by[f.kind]} | {soak.missed.get(f.kind, 0)} |")
    lines += ["", "| invariant | held |", "|---|---|"]
    for name, passed, detail in checks:
        lines.append(f"| {name} | {'yes' if passed else 'NO: ' + detail[:300]} |")
    if refused:
        lines += ["", "Bad requests refused at submit: " + ", ".join(f"{k} {v}" for k, v in sorted(refused.items()))]
    reasons = collections.Counter(j.reason.split(":")[0] for j in jobs if j.outcome == "fault")
    if reasons:
        lines += ["", "Why faulted jobs ended: " + "; ".join(f"{k} ({v})" for k, v in reasons.most_common())]
    if soak.violations:
        lines += ["", "Violations:"] + [f"- {what}: {detail}" for what, detail in soak.violations]
    held = sum(1 for _, passed, _ in checks if passed)
    lines += ["", f"{held} passed, {len(checks) - held} failed"]
    return "\n".join(lines) + "\n"
