#!/usr/bin/env python3
"""The solver benchmark: passes over the data and seconds until the objective is within 1e-7 of
its best known value, for L-BFGS and Newton-CG on the same sharded objective (2 shards, one
process).

Problems: Fashion-MNIST softmax (lambda 1e-4) and logistic regression on a synthetic dataset
written by `shardopt generate` (planted model; by default the issue's example size, 2,000,000 rows,
2^20 features, 40 non-zeros a row, lambda 1e-5; `--rows 200000` runs in a third of the time, and
there L-BFGS needs only about 20 passes). The best known value is the lower of the two solvers'
final objectives after Newton-CG is run to a gradient norm of 1e-10. A pass is one evaluation (loss and gradient) or one
Hessian-vector product. Prints a table and writes JSON.

    python3 bench/solver_bench.py BUILD/apps/shardopt [--out bench/results/solvers.json]
        [--rows 2000000] [--features 1048576]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

GAP = 1e-7


def train(binary, args, metrics=None):
    command = [binary, "train", "--shards", "2", "--json", "--quiet"] + args
    if metrics:
        command += ["--metrics", metrics]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"solver_bench: {' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def run_solver(binary, problem, solver):
    """A run to a gradient norm of 1e-9: its summary and its per-iteration metrics rows."""
    with tempfile.TemporaryDirectory() as scratch:
        metrics = os.path.join(scratch, "metrics.jsonl")
        summary = train(binary, problem + ["--solver", solver, "--epsilon", "1e-9", "--max-iter", "5000"],
                        metrics)
        with open(metrics) as f:
            return summary, [json.loads(line) for line in f]


def to_target(rows, best):
    """Passes and seconds at the first iteration whose objective is within GAP of `best`."""
    for row in rows:
        if row["objective"] - best <= GAP:
            return {"passes": row["evaluations"] + row.get("hessian_products", 0),
                    "seconds": row["seconds"], "iterations": row["iteration"]}
    return {"passes": None, "seconds": None, "iterations": None}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--out", default="bench/results/solvers.json")
    parser.add_argument("--rows", type=int, default=2000000)
    parser.add_argument("--features", type=int, default=1 << 20)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        synthetic = os.path.join(scratch, "synthetic.svm")
        subprocess.run([options.binary, "generate", "-o", synthetic, "--rows", str(options.rows),
                        "--features", str(options.features), "--nonzeros", "40", "--seed", "1"], check=True)
        problems = {
            "fashion-mnist softmax": ["--data", "fashion-mnist", "--lambda", "1e-4"],
            f"synthetic logistic ({options.rows} x {options.features}, 40 nnz)":
                ["--data", synthetic, "--model", "logistic", "--lambda", "1e-5", "--scale", "none",
                 "--features", str(options.features)],
        }
        results = {}
        for name, problem in problems.items():
            reference = train(options.binary, problem + ["--solver", "newton-cg", "--epsilon", "1e-10",
                                                          "--max-iter", "1000"])
            runs = {solver: run_solver(options.binary, problem, solver) for solver in ("lbfgs", "newton-cg")}
            best = min([reference["objective"]] + [summary["objective"] for summary, _ in runs.values()])
            results[name] = {"best_objective": best,
                             "solvers": {solver: dict(to_target(rows, best), final_objective=summary["objective"],
                                                      seconds_per_pass=summary["seconds"] / summary["passes"])
                                         for solver, (summary, rows) in runs.items()}}

    print(f"{'problem':<52} {'solver':<10} {'passes':>7} {'seconds':>8}   (to f* + {GAP:g})")
    for name, result in results.items():
        for solver, row in result["solvers"].items():
            passes = "-" if row["passes"] is None else str(row["passes"])
            seconds = "-" if row["seconds"] is None else f"{row['seconds']:.2f}"
            print(f"{name:<52} {solver:<10} {passes:>7} {seconds:>8}")
        lbfgs, newton = result["solvers"]["lbfgs"], result["solvers"]["newton-cg"]
        if lbfgs["passes"] and newton["passes"]:
            result["newton_over_lbfgs"] = {"passes": newton["passes"] / lbfgs["passes"],
                                           "seconds": newton["seconds"] / lbfgs["seconds"]}
            print(f"{'':<52} {'ratio':<10} {newton['passes'] / lbfgs['passes']:>7.2f} "
                  f"{newton['seconds'] / lbfgs['seconds']:>8.2f}   (targets: 0.45, 0.5)")
    os.makedirs(os.path.dirname(os.path.abspath(options.out)), exist_ok=True)
    with open(options.out, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
