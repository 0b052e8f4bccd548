#!/usr/bin/env python3
"""The Python module's overhead against the CLI on the demo job.

Runs the same training job (Fashion-MNIST softmax, lambda 1e-4, 4 shards, a fixed number of
iterations) through `shardopt train` and through `shardopt.train(...)`, each in a fresh process,
alternating, and compares the medians of (a) the optimizer's own seconds (the summary's `seconds`)
and (b) the process's wall time end to end. Prints a table and writes JSON.

    PYTHONPATH=build/python python3 bench/python_bench.py build/apps/shardopt [--repeat 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

JOB = dict(model="softmax", data="fashion-mnist", lam=1e-4, shards=4, max_iter=300, epsilon=0)


def cli_run(binary):
    args = [binary, "train", "--model", JOB["model"], "--data", JOB["data"], "--lambda", str(JOB["lam"]),
            "--shards", str(JOB["shards"]), "--max-iter", str(JOB["max_iter"]), "--epsilon", "0",
            "--json", "--quiet"]
    start = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    wall = time.monotonic() - start
    return json.loads(done.stdout), wall


PYTHON_JOB = """
import json, shardopt
r = shardopt.train(model={model!r}, data={data!r}, lam={lam!r}, shards={shards!r}, max_iter={max_iter!r}, epsilon=0)
print(json.dumps(r.summary))
"""


def python_run():
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PYTHON_JOB.format(**JOB)], capture_output=True, text=True,
                          check=True, env=dict(os.environ))
    wall = time.monotonic() - start
    return json.loads(done.stdout), wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="bench/results/python.json")
    args = parser.parse_args()
    runs = {"cli": [], "python": []}
    for _ in range(args.repeat):
        for name, run in (("cli", lambda: cli_run(args.binary)), ("python", python_run)):
            summary, wall = run()
            runs[name].append({"seconds": summary["seconds"], "total_seconds": summary["total_seconds"],
                               "wall": wall, "objective": summary["objective"],
                               "iterations": summary["iterations"]})
    assert len({r["objective"] for r in runs["cli"] + runs["python"]}) == 1, "the two paths disagree"
    table = {}
    for name, rows in runs.items():
        table[name] = {key: statistics.median(r[key] for r in rows) for key in ("seconds", "total_seconds", "wall")}
    overhead = {key: table["python"][key] / table["cli"][key] - 1 for key in ("seconds", "total_seconds", "wall")}
    print(f"demo job: {JOB}, {args.repeat} runs each, medians")
    print(f"{'':8} {'optimizer s':>12} {'train() s':>10} {'process s':>10}")
    for name in ("cli", "python"):
        t = table[name]
        print(f"{name:8} {t['seconds']:12.3f} {t['total_seconds']:10.3f} {t['wall']:10.3f}")
    print(f"{'overhead':8} {overhead['seconds']:+12.1%} {overhead['total_seconds']:+10.1%} {overhead['wall']:+10.1%}"
          "   (target: under 2%)")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"job": JOB, "runs": runs, "medians": table, "overhead": overhead}, out, indent=2)


if __name__ == "__main__":
    main()
