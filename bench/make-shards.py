#!/usr/bin/env python3
"""make-shards.py TREE OUTDIR N: the tree as N tar shards of balanced size
(WebDataset style: files dealt round-robin in sorted order, so every shard
holds every class), shard-000000.tar ... Member names are relative to TREE.
"""
import os
import sys
import tarfile


def main() -> None:
    tree, outdir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    files = sorted(
        os.path.relpath(os.path.join(d, f), tree) for d, _, fs in os.walk(tree) for f in fs
    )
    shards = [files[i::n] for i in range(n)]
    for i, members in enumerate(shards):
        with tarfile.open(os.path.join(outdir, f"shard-{i:06d}.tar"), "w", format=tarfile.PAX_FORMAT) as tar:
            dirs = sorted({os.path.dirname(m) for m in members})
            for d in dirs:
                tar.add(os.path.join(tree, d), arcname=d, recursive=False)
            for m in members:
                tar.add(os.path.join(tree, m), arcname=m, recursive=False)


if __name__ == "__main__":
    main()
