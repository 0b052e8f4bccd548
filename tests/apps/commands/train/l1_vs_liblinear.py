#!/usr/bin/python3
"""`train --l1` (OWL-QN, and orthant-wise Newton-CG) against LIBLINEAR's L1-regularised logistic regression (-s 6), on the same
data to the same objective: real data (scikit-learn's breast_cancer, standardised; Fashion-MNIST's
T-shirts against shirts) and a synthetic sparse set.

Objective, in shardopt's normalisation: F(w, b) = mean_i log(1 + exp(-t_i (w.x_i + b))) + a ||w||_1,
the bias b unpenalised. LIBLINEAR minimises ||w||_1 + C sum_i loss_i, the same with C = 1 / (n a),
but LIBLINEAR 2.3 penalises its bias too (-B B adds a feature of value B whose weight is penalised):
with B = 1000 that adds a |b| / 1000 to F, so its optimum lies within that of shardopt's.
LIBLINEAR's weights are evaluated here under F; shardopt's F is its summary's objective.

Checks: the two objectives agree to 1e-6 relative; shardopt's is not above LIBLINEAR's by more than
that; the non-zero counts agree within 2%; 1 shard and 3 shards give the same bits.

Without a bias (`--no-bias`, LIBLINEAR without -B) the two problems are the same: the objectives
agree to 1e-6 relative and the non-zero counts within 1%.

    l1_vs_liblinear.py SHARDOPT SCRATCH_DIR     (exit 0: passed; 1: failed)
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import scipy.sparse

SKLEARN = "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv"
FASHION = "/usr/share/datasets/fashion-mnist"
BIAS_FEATURE = 1000.0


def write_libsvm(path, x, t):
    with open(path, "w") as f:
        for row, label in zip(x, t):
            nz = np.flatnonzero(row)
            f.write(("+1" if label > 0 else "-1") + "".join(f" {j + 1}:{row[j]!r}" for j in nz) + "\n")


def read_libsvm(path, features):
    t, starts, columns, values = [], [0], [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            t.append(float(parts[0]))
            for item in parts[1:]:
                j, v = item.split(":")
                columns.append(int(j) - 1)
                values.append(float(v))
            starts.append(len(columns))
    x = scipy.sparse.csr_matrix((values, columns, starts), shape=(len(t), features))
    return x, np.array(t)


def breast_cancer(folder):
    data = np.loadtxt(SKLEARN, delimiter=",", skiprows=1)
    x, label = data[:, :-1], data[:, -1]
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    path = os.path.join(folder, "breast_cancer.svm")
    write_libsvm(path, x, np.where(label > 0, 1, -1))
    return path, x.shape[1]


def fashion_shirts(folder, rows=4000):
    with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 784)
    keep = np.flatnonzero((labels == 0) | (labels == 6))[:rows]
    path = os.path.join(folder, "shirts.svm")
    write_libsvm(path, images[keep] / 255.0, np.where(labels[keep] == 0, 1, -1))
    return path, 784


def synthetic(binary, folder):
    path = os.path.join(folder, "synthetic.svm")
    subprocess.run([binary, "generate", "-o", path, "--rows", "20000", "--features", "5000",
                    "--nonzeros", "30", "--seed", "3"], check=True, capture_output=True)
    return path, 5000


def shardopt(binary, path, features, a, shards, solver, bias=True):
    out = subprocess.run([binary, "train", "--model", "logistic", "--data", path, "--scale", "none",
                          "--features", str(features), "--lambda", "0", "--l1", repr(a), "--solver", solver,
                          "--epsilon", "1e-9", "--max-iter", "20000", "--shards", str(shards),
                          "--json", "--quiet"] + ([] if bias else ["--no-bias"]),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def liblinear(path, folder, x, t, a, bias=True):
    model = os.path.join(folder, "liblinear.model")
    subprocess.run(["liblinear-train", "-s", "6", "-c", repr(1.0 / (len(t) * a))]
                   + (["-B", repr(BIAS_FEATURE)] if bias else []) + ["-e", "1e-6", "-q", path, model], check=True)
    with open(model) as f:
        lines = f.read().split("\n")
    first = float(next(line for line in lines if line.startswith("label ")).split()[1])
    w = np.array([float(line.split()[0]) for line in lines[lines.index("w") + 1:] if line.strip()])
    weights, bias = (w[:-1], w[-1] * BIAS_FEATURE) if bias else (w, 0.0)
    sign = np.where(t == first, 1.0, -1.0)  # LIBLINEAR's decision is positive for its first label
    z = x[:, :weights.size] @ weights + bias
    return float(np.logaddexp(0.0, -sign * z).mean() + a * np.abs(weights).sum()), int(np.count_nonzero(weights))


def main():
    binary, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    sets = [("breast_cancer", *breast_cancer(scratch), 1e-2),
            ("fashion-mnist shirts", *fashion_shirts(scratch), 1e-2),
            ("synthetic", *synthetic(binary, scratch), 2e-5)]
    failures = []
    print(f"{'set':<34} {'l1':>7} {'shardopt F':>18} {'LIBLINEAR F':>18} {'rel. gap':>10} {'nnz':>6} {'LL nnz':>6}")
    for name, path, features, a in sets:
        x, t = read_libsvm(path, features)
        theirs, their_nnz = liblinear(path, scratch, x, t, a)
        for solver in ("owlqn", "newton-cg"):  # auto's, and orthant-wise Newton-CG
            ours = shardopt(binary, path, features, a, 3, solver)
            single = shardopt(binary, path, features, a, 1, solver)
            f = ours["objective"]
            gap = (theirs - f) / f
            label = f"{name} ({solver})"
            print(f"{label:<34} {a:>7g} {f:>18.12f} {theirs:>18.12f} {gap:>10.2e} {ours['nonzero_weights']:>6} "
                  f"{their_nnz:>6}")
            if ours["solver"] != solver or ours["stop_reason"] not in ("converged", "line_search_failed"):
                failures.append(f"{label}: solver {ours['solver']}, stop {ours['stop_reason']}")
            if abs(gap) > 1e-6:
                failures.append(f"{label}: objectives differ by {gap:.3e} relative")
            if abs(ours["nonzero_weights"] - their_nnz) > 0.02 * their_nnz + 2:
                failures.append(f"{label}: {ours['nonzero_weights']} non-zero weights, LIBLINEAR {their_nnz}")
            if ours["nonzero_weights"] >= features:
                failures.append(f"{label}: the penalty set no weight to 0")
            if single["objective"].hex() != f.hex() or single["nonzero_weights"] != ours["nonzero_weights"]:
                failures.append(f"{label}: 1 shard gave {single['objective']!r}, 3 shards {f!r}")
        # No bias on either side: the same problem, so the same sparsity.
        theirs, their_nnz = liblinear(path, scratch, x, t, a, bias=False)
        for solver in ("owlqn", "newton-cg"):
            ours = shardopt(binary, path, features, a, 3, solver, bias=False)
            f = ours["objective"]
            gap = (theirs - f) / f
            label = f"{name} ({solver}, no bias)"
            print(f"{label:<34} {a:>7g} {f:>18.12f} {theirs:>18.12f} {gap:>10.2e} {ours['nonzero_weights']:>6} "
                  f"{their_nnz:>6}")
            if ours["biases"] is not False or ours["stop_reason"] not in ("converged", "line_search_failed"):
                failures.append(f"{label}: biases {ours['biases']}, stop {ours['stop_reason']}")
            if abs(gap) > 1e-6:
                failures.append(f"{label}: objectives differ by {gap:.3e} relative")
            if abs(ours["nonzero_weights"] - their_nnz) > 0.01 * their_nnz:
                failures.append(f"{label}: {ours['nonzero_weights']} non-zero weights, LIBLINEAR {their_nnz}")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
