#!/usr/bin/python3
"""Real JPEGs for bench/latency and bench/epoch: COUNT images, deterministic.

usage: make-jpegs.py DIR COUNT [--size WxH] [--classes K]

Default: DIR/00000.jpg ... at 500x375 (the size of an ImageNet photo,
quality 85), about 115 KB each.  With --classes K the images go into an
ImageFolder, DIR/class00/ ... DIR/class{K-1}/, in turn.  Each image is
different: blurred colour noise under a tint, so they decode like
photographs.  The same arguments give the same files.
"""
import argparse
import os
import random

from PIL import Image, ImageFilter


def main():
    parser = argparse.ArgumentParser(description="deterministic JPEGs that decode like photographs")
    parser.add_argument("dir")
    parser.add_argument("count", type=int)
    parser.add_argument("--size", default="500x375", help="WIDTHxHEIGHT (default 500x375)")
    parser.add_argument("--classes", type=int, default=0, help="K class directories (default: none)")
    args = parser.parse_args()
    try:
        size = tuple(int(x) for x in args.size.split("x"))
        assert len(size) == 2 and min(size) > 0
    except (ValueError, AssertionError):
        parser.error(f"--size must be WIDTHxHEIGHT, not {args.size!r}")
    if args.count < 0 or args.classes < 0:
        parser.error("COUNT and --classes must be 0 or more")

    os.makedirs(args.dir, exist_ok=True)
    for k in range(args.classes):
        os.makedirs(os.path.join(args.dir, f"class{k:02d}"), exist_ok=True)
    rng = random.Random(1600)
    base = Image.effect_noise(size, 80).convert("RGB")
    for i in range(args.count):
        sigma = rng.uniform(50, 90)
        noise = Image.effect_noise(size, sigma).filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.7)))
        tint = Image.new("RGB", size, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        img = Image.blend(Image.merge("RGB", (noise, base.getchannel(i % 3), noise)), tint, 0.3)
        where = os.path.join(args.dir, f"class{i % args.classes:02d}") if args.classes else args.dir
        img.save(os.path.join(where, f"{i:05d}.jpg"), quality=85)


if __name__ == "__main__":
    main()
