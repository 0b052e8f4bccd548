#!/usr/bin/env python3
"""The MLP benchmark: the seeds' network (784-100-10, ReLU, softmax) trained by shardopt's PS mode
against PyTorch in one process.

For 1, 2 and 4 workers, synchronous and asynchronous, in one process (`train --mode ps`) and as one
process per task on loopback (`ps-task`, 2 PS tasks), it measures training examples/s and the
training seconds until test accuracy first reaches 0.86 (the test set evaluated every quarter
epoch, as bench/torch_mlp.py does for PyTorch). Prints a table and writes JSON.

    python3 bench/mlp_bench.py BUILD/apps/shardopt [--out bench/results/mlp.json] [--epochs 10]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = 60000
BATCH = 100
TARGET = 0.86
NETWORK = ["--data", "fashion-mnist", "--model", "mlp", "--hidden", "100", "--activation", "relu",
           "--lambda", "0", "--seed", "1", "--optimizer", "adam", "--lr", "1e-3",
           "--batch-size", str(BATCH), "--ps", "2"]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def schedule(workers, sync, epochs):
    """Global steps for `epochs` epochs, and steps between test evaluations (a quarter epoch)."""
    per_step = BATCH * (workers if sync else 1)
    return epochs * EXAMPLES // per_step, EXAMPLES // per_step // 4


def outcome(metrics_path, summary):
    reached = None
    with open(metrics_path) as f:
        for line in f:
            row = json.loads(line)
            if reached is None and row.get("test_accuracy", 0) >= TARGET:
                reached = row["seconds"]
    return {"examples_per_second": summary["examples_per_second"], "seconds_to_target": reached,
            "final_test_accuracy": summary["test_accuracy"], "train_seconds": summary["seconds"]}


def run_one_process(binary, workers, sync, epochs):
    steps, every = schedule(workers, sync, epochs)
    with tempfile.TemporaryDirectory() as scratch:
        metrics = os.path.join(scratch, "metrics.jsonl")
        args = [binary, "train", "--mode", "ps", *NETWORK, "--workers", str(workers),
                "--last-step", str(steps), "--eval-steps", str(every), "--log-steps", str(every),
                "--metrics", metrics, "--json", "--quiet"] + (["--sync"] if sync else [])
        done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
        return outcome(metrics, json.loads(done.stdout))


def run_per_task(binary, workers, sync, epochs):
    steps, every = schedule(workers, sync, epochs)
    ports = free_ports(2 + workers)
    ps_hosts = ",".join(f"127.0.0.1:{p}" for p in ports[:2])
    worker_hosts = ",".join(f"127.0.0.1:{p}" for p in ports[2:])
    common = [binary, "ps-task", f"--ps_hosts={ps_hosts}", f"--worker_hosts={worker_hosts}",
              *[a for a in NETWORK if a not in ("--ps", "2")], "--last-step", str(steps),
              "--threads", "1", "--quiet"] + (["--sync"] if sync else [])
    with tempfile.TemporaryDirectory() as scratch:
        metrics = os.path.join(scratch, "metrics.jsonl")
        tasks = [subprocess.Popen(common + ["--job_name=ps", f"--task_index={i}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for i in range(2)]
        tasks += [subprocess.Popen(common + ["--job_name=worker", f"--task_index={i}"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                  for i in range(1, workers)]
        try:
            chief = subprocess.run(common + ["--job_name=worker", "--task_index=0", "--eval-steps", str(every),
                                             "--log-steps", str(every), "--metrics", metrics, "--json"],
                                   capture_output=True, text=True, timeout=1800)
            if chief.returncode != 0:
                raise RuntimeError(f"chief: {chief.stderr.strip()}")
            for task in tasks:
                task.wait(timeout=60)
            return outcome(metrics, json.loads(chief.stdout))
        finally:
            for task in tasks:
                if task.poll() is None:
                    task.kill()
                    task.wait()


def run_torch(epochs):
    done = subprocess.run([sys.executable, os.path.join(HERE, "torch_mlp.py"), "--threads", "2",
                           "--epochs", str(epochs), "--target", str(TARGET)],
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"skipped": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "mlp.json"))
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    rows = []
    for placement, runner in (("one process", run_one_process), ("process per task", run_per_task)):
        for sync in (True, False):
            for workers in (1, 2, 4):
                result = runner(args.binary, workers, sync, args.epochs)
                rows.append({"system": "shardopt", "placement": placement, "mode": "sync" if sync else "async",
                             "workers": workers, **result})
                print(f"measured: shardopt {placement}, {'sync' if sync else 'async'}, {workers} workers",
                      file=sys.stderr)
    torch_row = run_torch(args.epochs)
    rows.append({"system": "pytorch", "placement": "one process, 2 threads", "mode": "-", "workers": 1, **torch_row})

    print(f"{'system':9} {'placement':24} {'mode':5} {'workers':>7} {'examples/s':>11} {'s to 0.86':>10} {'final acc':>9}")
    for row in rows:
        if "skipped" in row:
            print(f"{row['system']:9} {row['placement']:24} skipped: {row['skipped']}")
            continue
        reached = row.get("seconds_to_target")
        print(f"{row['system']:9} {row['placement']:24} {row['mode']:5} {row['workers']:>7} "
              f"{row['examples_per_second']:>11,.0f} {('%.2f' % reached) if reached else 'never':>10} "
              f"{row.get('final_test_accuracy') or 0:>9.4f}")
    best = min((r["seconds_to_target"] for r in rows if r["system"] == "shardopt" and r.get("seconds_to_target")),
               default=None)
    peer = torch_row.get("seconds_to_target")
    verdict = {"best_shardopt_seconds_to_target": best, "pytorch_seconds_to_target": peer,
               "ratio": best / peer if best and peer else None, "target_ratio": 0.5}
    if verdict["ratio"] is not None:
        print(f"best shardopt time to {TARGET}: {best:.2f} s; PyTorch: {peer:.2f} s; ratio {verdict['ratio']:.2f} "
              f"(target <= 0.5: {'met' if verdict['ratio'] <= 0.5 else 'not met'})")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rows": rows, "verdict": verdict, "epochs": args.epochs}, f, indent=2)


if __name__ == "__main__":
    main()
