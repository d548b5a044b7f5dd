#!/usr/bin/python3
"""One training-style epoch over an image folder: what a job does with its data.

usage: epoch.py DIR [--workers N] [--batch-size B] [--shard]

DIR is an ImageFolder tree (DIR/CLASS/IMAGE).  Every image is opened, read and decoded by a PyTorch
DataLoader with N worker processes, as a training loop's input pipeline
would, and resized to 64x64 so that batches stack; no model runs, so the
time is the input pipeline's alone.  The line before the last says how
long ImageFolder took to list DIR (list_s=SECONDS, the class directories
read once per job); the last line is

    epoch_s=SECONDS images=COUNT

With --shard, each of the srun tasks reads its share of the images, as a
data-parallel job's DistributedSampler gives it (rank SLURM_PROCID of
SLURM_NTASKS).

Run it with Debian's interpreter (/usr/bin/python3, python3-torch and
python3-torchvision); dlstage's benchmark (bench/latency) runs it against
the parallel file system and against the staged copy.
"""
import argparse
import sys
import time


def main():
    parser = argparse.ArgumentParser(description="one DataLoader epoch over an image folder")
    parser.add_argument("dir")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--shard", action="store_true",
                        help="read this srun task's share (SLURM_PROCID of SLURM_NTASKS)")
    args = parser.parse_args()
    if args.workers < 0 or args.batch_size < 1:
        sys.exit("epoch.py: --workers must be 0 or more and --batch-size 1 or more")

    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from torchvision import datasets, transforms

    # Decoding is the job's CPU work; PyTorch's own threads would only fight
    # the worker processes for the cores.
    torch.set_num_threads(1)
    transform = transforms.Compose([transforms.Resize((64, 64)), transforms.ToTensor()])
    root = args.dir
    listing = time.monotonic()
    dataset = datasets.ImageFolder(root, transform=transform)
    if len(dataset) == 0:
        sys.exit(f"epoch.py: no images in {root}")
    print(f"list_s={time.monotonic() - listing:.3f} classes={len(dataset.classes)}", flush=True)

    sampler = None
    if args.shard:
        import os
        rank, tasks = int(os.environ.get("SLURM_PROCID", "0")), int(os.environ.get("SLURM_NTASKS", "1"))
        sampler = DistributedSampler(dataset, num_replicas=tasks, rank=rank, shuffle=True)
    start = time.monotonic()  # the listing above is not part of the epoch
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler,
                        num_workers=args.workers)
    images = 0
    for batch, _ in loader:
        images += batch.shape[0]
    seconds = time.monotonic() - start
    print(f"epoch_s={seconds:.3f} images={images}")


if __name__ == "__main__":
    main()
