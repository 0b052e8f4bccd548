#!/usr/bin/env python3
"""The seeds' network in PyTorch, one process, as the peer shardopt's MLP benchmark compares against.

784-100-10 (ReLU hidden layer, softmax output through cross-entropy) on Fashion-MNIST from Debian's
dataset-fashion-mnist, Adam (lr 1e-3) on shuffled minibatches of 100, pixels / 255, the test set
evaluated every quarter epoch. Prints one JSON object: examples/s of training and the training
seconds (evaluations included, data loading excluded) until test accuracy first reaches the target.

    python3 bench/torch_mlp.py [--threads 2] [--epochs 10] [--target 0.86]
"""

import argparse
import gzip
import json
import struct
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    print(json.dumps({"skipped": "PyTorch is not installed (apt-get install python3-torch)"}))
    sys.exit(0)

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, count = struct.unpack(">II", raw[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", raw[8:16])
        return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(count, rows * cols)
    return np.frombuffer(raw, dtype=np.uint8, offset=8)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.86)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    x_train = torch.from_numpy(read_idx(f"{DATA}/train-images-idx3-ubyte.gz").astype(np.float32) / 255)
    y_train = torch.from_numpy(read_idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64))
    x_test = torch.from_numpy(read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz").astype(np.float32) / 255)
    y_test = torch.from_numpy(read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz").astype(np.int64))

    model = torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.ReLU(), torch.nn.Linear(100, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = 100
    n = x_train.shape[0]
    eval_every = n // batch // 4

    def accuracy():
        with torch.no_grad():
            return (model(x_test).argmax(1) == y_test).float().mean().item()

    start = time.perf_counter()
    train_seconds = 0.0
    reached = None
    curve = []
    steps = 0
    for epoch in range(args.epochs):
        order = torch.randperm(n)
        for first in range(0, n, batch):
            rows = order[first:first + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[rows]), y_train[rows])
            loss.backward()
            optimizer.step()
            steps += 1
            if steps % eval_every == 0:
                now = time.perf_counter() - start
                acc = accuracy()
                curve.append({"epoch": steps * batch / n, "seconds": now, "test_accuracy": acc})
                if reached is None and acc >= args.target:
                    reached = now
        train_seconds = time.perf_counter() - start
    print(json.dumps({
        "threads": args.threads,
        "epochs": args.epochs,
        "examples_per_second": args.epochs * n / train_seconds,
        "seconds_to_target": reached,
        "test_accuracy_5_epochs": next((c["test_accuracy"] for c in curve if abs(c["epoch"] - 5) < 1e-9), None),
        "final_test_accuracy": curve[-1]["test_accuracy"] if curve else None,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
