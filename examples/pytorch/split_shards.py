#!/usr/bin/python3
"""One epoch over this node's share of a dataset of tar shards staged split.

usage: split_shards.py --dataset NAME [--workers N] [--batch-size B] [--list-keys]

With --stage-data=NAME:TIER:split, dlstage places the dataset's tar shards
(WebDataset style) over the job's nodes: each node holds only its share, in
the directory $DLSTAGE_<NAME>, and $DLSTAGE_<NAME>_INDEX is a JSON file
naming every shard ("parts") and the node that holds it ("node" is this
node's index).  <NAME> is the dataset's name upper-cased, every character
other than a letter or digit made "_" (in21k -> DLSTAGE_IN21K).

This node's shards are split across its tasks (SLURM_LOCALID of the node's
task count, as DistributedSampler splits by rank), then across each task's
DataLoader workers, so every sample is read exactly once per epoch by one
worker of one task.  The split is by whole shard: give a node at least
(tasks per node x workers) shards or some workers have nothing to read.

A sample is a run of tar members with the same key, the member name up to
the first dot of its base name ("a/000123.jpg" + "a/000123.cls" -> key
"a/000123"), as WebDataset groups them.  No model runs: the last line is

    epoch_s=SECONDS samples=COUNT rank=GLOBALRANK node=NODE

and with --list-keys every sample's key comes first, one "key=KEY" a line.

Shuffling caveat: a node only ever has its own share, so shuffling happens
only within it.  Unlike a DistributedSampler over the whole dataset, a task
never sees the other nodes' samples: that changes SGD's randomness (each
node's gradient comes from the same fixed subset every epoch).  Reshuffle
the shard order every epoch (ShardShare.set_epoch) and shuffle samples in a
buffer if you need more; whether the fixed split hurts your model is for you
to check against a run with the whole dataset on every node.

Run it with Debian's interpreter (/usr/bin/python3 and python3-torch):
examples/pytorch/train-split.sbatch runs it with srun.
"""
import argparse
import json
import os
import random
import re
import sys
import tarfile
import time

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

PROG = "split_shards.py"


def die(message):
    sys.exit(f"{PROG}: {message}")


def env_name(dataset):
    # dlstage's own rule for the variable's name (dataset_env_name).
    return "DLSTAGE_" + "".join(c.upper() if c.isascii() and c.isalnum() else "_" for c in dataset)


def tasks_on_this_node():
    """The number of tasks on this node: SLURM_NTASKS_PER_NODE when the job
    asked for a fixed count, else this node's entry of SLURM_TASKS_PER_NODE
    ("2(x3),1" is 2, 2, 2, 1 in node order)."""
    if os.environ.get("SLURM_NTASKS_PER_NODE"):
        return int(os.environ["SLURM_NTASKS_PER_NODE"])
    counts = []
    for entry in os.environ.get("SLURM_TASKS_PER_NODE", "").split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", entry.strip())
        if match:
            counts += [int(match.group(1))] * int(match.group(2) or 1)
    if not counts:
        return 1
    node = int(os.environ.get("SLURM_NODEID", "0"))
    return counts[node] if node < len(counts) else counts[0]


def samples_of(path):
    """The samples of one tar shard, in order: dicts of extension -> bytes
    with the key under "__key__".  Streaming ("r|*") reads the shard once,
    front to back, and opens .tar.gz as well."""
    sample = None
    with tarfile.open(path, "r|*") as tar:
        for member in tar:
            if not member.isfile():
                continue  # directories and links carry no sample data
            folder, base = os.path.split(member.name)
            stem, _, ext = base.partition(".")
            key = os.path.join(folder, stem)
            if sample is None or sample["__key__"] != key:
                if sample is not None:
                    yield sample
                sample = {"__key__": key}
            # In a stream a member's data must be read before the next one.
            sample[ext] = tar.extractfile(member).read()
    if sample is not None:
        yield sample


def load_share(dataset):
    """This node's index entry (its node number) and the paths of its shards,
    checked to be there before any worker starts."""
    var = env_name(dataset)
    directory, index_path = os.environ.get(var), os.environ.get(var + "_INDEX")
    if not directory or not index_path:
        die(f"{var} or {var}_INDEX is not set: run this under a job staged with "
            f"--stage-data={dataset}:TIER:split")
    try:
        with open(index_path) as f:
            index = json.load(f)
        node = index["node"]
        if "parts" not in index:
            die(f"the index {index_path} lists no parts: {dataset} was split by file, not as tar shards")
        mine = [part["path"] for part in index["parts"] if part["node"] == node]
    except (OSError, ValueError, KeyError, TypeError) as e:
        die(f"cannot read the index {index_path}: {type(e).__name__}: {e}")
    paths = [os.path.join(directory, part) for part in mine]
    for path in paths:
        if not os.path.isfile(path):
            die(f"{path} is missing: the index places it on this node (node {node})")
    return node, paths


class ShardShare(IterableDataset):
    """An IterableDataset over one task's shards of this node's share; every
    DataLoader worker reads its own shards of those."""

    def __init__(self, shards, local_rank, local_tasks, shuffle=True, seed=0):
        self.shards, self.local_rank, self.local_tasks = shards, local_rank, local_tasks
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def set_epoch(self, epoch):
        # A new shard order each epoch, as DistributedSampler.set_epoch does;
        # the workers get a copy of the dataset when the epoch's iterator starts.
        self.epoch = epoch

    def __iter__(self):
        shards = list(self.shards)
        if self.shuffle:
            # The same seed on every task of the node, so that the tasks
            # shuffle alike and their strided shares still cover every shard once.
            random.Random(self.seed + self.epoch).shuffle(shards)
        shards = shards[self.local_rank::self.local_tasks]  # this task's, like DistributedSampler
        worker = get_worker_info()
        if worker is not None:
            shards = shards[worker.id::worker.num_workers]  # this worker's
        for path in shards:
            yield from samples_of(path)


def collate(samples):
    # Keep the keys (a default collate would try to stack the raw bytes);
    # the byte lengths stand in for decoded tensors.
    return {"keys": [s["__key__"] for s in samples],
            "bytes": torch.tensor([sum(len(v) for k, v in s.items() if k != "__key__") for s in samples])}


def main():
    parser = argparse.ArgumentParser(prog=PROG, description="one DataLoader epoch over this node's tar shards")
    parser.add_argument("--dataset", required=True, help="the name given to --stage-data")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--list-keys", action="store_true", help="print every sample's key as key=KEY")
    args = parser.parse_args()
    if args.workers < 0 or args.batch_size < 1:
        die("--workers must be 0 or more and --batch-size 1 or more")

    node, shards = load_share(args.dataset)
    local_rank = int(os.environ.get("SLURM_LOCALID", "0"))
    local_tasks = tasks_on_this_node()
    if not 0 <= local_rank < local_tasks:
        die(f"SLURM_LOCALID {local_rank} is not below the node's task count {local_tasks}")

    # Reading and decoding are the workers' work; PyTorch's own threads would
    # only fight the worker processes for the cores.
    torch.set_num_threads(1)
    dataset = ShardShare(shards, local_rank, local_tasks)
    start = time.monotonic()
    dataset.set_epoch(0)
    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers, collate_fn=collate)
    samples = 0
    for batch in loader:
        samples += len(batch["keys"])
        if args.list_keys:
            for key in batch["keys"]:
                print(f"key={key}")
    seconds = time.monotonic() - start
    print(f"epoch_s={seconds:.3f} samples={samples} rank={os.environ.get('SLURM_PROCID', '0')} node={node}")


if __name__ == "__main__":
    main()
