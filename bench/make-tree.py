#!/usr/bin/env python3
"""make-tree.py DIR FILES: an ImageNet-like tree for the benchmark.

FILES image files spread over 100 class directories (n00000000 ...), sizes
drawn from a log-normal distribution with a median near 40 KB and a mean near
50 KB (ImageNet's JPEGs average ~110 KB; the issue asks for ~1 GB in 20,000
files), deterministic (fixed seed), contents incompressible.
"""
import os
import random
import sys


def main() -> None:
    root, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(20261121)
    pool = rng.randbytes(4 << 20)  # sliced at random offsets: cheap and incompressible
    classes = 100
    for c in range(classes):
        os.makedirs(os.path.join(root, f"n{c:08d}"), exist_ok=True)
    for i in range(count):
        size = min(int(rng.lognormvariate(10.6, 0.6)), len(pool))
        start = rng.randrange(0, len(pool) - size + 1)
        path = os.path.join(root, f"n{i % classes:08d}", f"img_{i:08d}.JPEG")
        with open(path, "wb") as out:
            out.write(pool[start:start + size])


if __name__ == "__main__":
    main()
