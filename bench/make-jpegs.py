#!/usr/bin/python3
"""Small real JPEGs for bench/latency: COUNT images of about 100 KB.

usage: make-jpegs.py DIR COUNT

Writes DIR/00000.jpg ... (500x375, the size of an ImageNet photo, quality
85), each different: blurred colour noise under a tint, so they decode
like photographs and compress to about 115 KB.  Deterministic: the same
COUNT gives the same files.
"""
import os
import random
import sys

from PIL import Image, ImageFilter


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make-jpegs.py DIR COUNT")
    out, count = sys.argv[1], int(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1600)
    base = Image.effect_noise((500, 375), 80).convert("RGB")
    for i in range(count):
        sigma = rng.uniform(50, 90)
        noise = Image.effect_noise((500, 375), sigma).filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.7)))
        tint = Image.new("RGB", (500, 375), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        img = Image.blend(Image.merge("RGB", (noise, base.getchannel(i % 3), noise)), tint, 0.3)
        img.save(os.path.join(out, f"{i:05d}.jpg"), quality=85)


if __name__ == "__main__":
    main()
