#!/usr/bin/env python3
"""The sparse benchmark: shardopt against LIBLINEAR 2.50 (the newest release, built from
../shared/peers/liblinear-2.50 into BUILD/peers on first use) and Debian's LIBLINEAR 2.3
(liblinear-tools) on the same data, to 2.50's objective, in one run.

Sets (written by `shardopt generate`, kept in build/bench-data and made again only when missing):
  logistic  2,000,000 rows x 2^20 features, 40 non-zeros a row, lambda 1e-5  (liblinear -s 0)
  svm       1,000,000 rows x 2^18 features, 100 non-zeros a row, lambda 1e-5 (liblinear -s 2: the
            squared hinge, as shardopt's svm model)
  l1        the logistic set with an L1 weight of 1e-6 and no L2 (liblinear -s 6; shardopt --l1 with
            OWL-QN on 1 core, 2 shards and the binary dataset, and with orthant-wise Newton-CG,
            --solver newton-cg, on 1 core and 2 shards)

Common objective: LIBLINEAR's final weights (no bias: it runs without -B) evaluated here exactly
under shardopt's normalisation, f = mean loss + lambda/2 ||w||^2 (LIBLINEAR's f / (C n) with
C = 1 / (lambda n)), or f = mean loss + l1 ||w||_1 (C = 1 / (l1 n)) for the l1 set. shardopt's unregularised bias can only lower its optimum; its time is the
load, setup and solve seconds to its first iterate at or below that value.

Runs: LIBLINEAR 2.50 and 2.3 (1 core, as they are); shardopt with 1 shard pinned to one core (taskset -c 0: its
reader then parses with one thread too), with 2 shards, and with 2 shards from the binary dataset
(`shardopt convert`). Columns: load, solve, passes (evaluations plus Hessian-vector products; for
LIBLINEAR, function evaluations plus CG steps from its log, or for -s 6 outer iterations plus
coordinate-descent cycles), ns per non-zero per pass (solve seconds
/ (passes x non-zeros)), end-to-end seconds and the ratio to LIBLINEAR's, peak RSS and its ratio.
LIBLINEAR's load is its run stopped after one pass (-e 1e30) less one pass.

    python3 bench/sparse_bench.py BUILD/apps/shardopt [--out bench/results/sparse.json] [--sets logistic,svm]
        [--build BUILD]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse

SETS = {
    "logistic": {"rows": 2000000, "features": 1 << 20, "nonzeros": 40, "seed": 1, "lambda": 1e-5,
                 "model": "logistic", "liblinear": "0"},
    "svm": {"rows": 1000000, "features": 1 << 18, "nonzeros": 100, "seed": 2, "lambda": 1e-5,
            "model": "svm", "liblinear": "2"},
    "l1": {"rows": 2000000, "features": 1 << 20, "nonzeros": 40, "seed": 1, "lambda": 0.0, "l1": 1e-6,
           "model": "logistic", "liblinear": "6", "file": "logistic"},
}


# A command's peak RSS is read by a small launcher (Python without site, about 10 MB) that forks
# it and waits for it, not by this script: Linux gives a process the peak of the memory it was
# forked from (ru_maxrss keeps the old image's high-water mark across exec), so a child of this
# script, which holds NumPy and SciPy (40 to 90 MB), would never report less than this script.
# The launcher writes the command's pid, then its peak RSS in KiB, to the file it is given.
LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
with open(sys.argv[1], "w") as report:
    report.write(f"{pid}\n")
    report.flush()
    _, status, usage = os.wait4(pid, 0)
    report.write(f"{usage.ru_maxrss}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def launched(command, report):
    """`command` run through the launcher, which writes its pid and peak RSS to `report`."""
    return [sys.executable, "-S", "-c", LAUNCHER, report, *command]


def launched_report(report):
    """(pid, peak RSS bytes or None) from a launcher's report file."""
    with open(report) as f:
        lines = f.read().split()
    pid = int(lines[0]) if lines else None
    return pid, (int(lines[1]) * 1024 if len(lines) > 1 else None)


def timed_rss(command):
    """Runs `command`; returns (wall seconds, its peak RSS bytes, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as report:
        started = time.monotonic()
        process = subprocess.Popen(launched(command, report.name), stdout=out, stderr=err)
        process.wait()
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
        _, rss = launched_report(report.name)
    if process.returncode != 0 or rss is None:
        sys.exit(f"sparse_bench: {' '.join(command)} failed:\n{stderr}")
    return seconds, rss, stdout, stderr


def dataset(binary, name, spec, folder):
    """The set's LIBSVM file and its binary dataset, made when missing."""
    name = spec.get("file", name)
    text = os.path.join(folder, f"{name}.svm")
    cache = os.path.join(folder, f"{name}.shoptbin")
    if not os.path.exists(text):
        subprocess.run([binary, "generate", "-o", text, "--rows", str(spec["rows"]), "--features",
                        str(spec["features"]), "--nonzeros", str(spec["nonzeros"]), "--seed",
                        str(spec["seed"])], check=True)
    if not os.path.exists(cache) or os.path.getmtime(cache) < os.path.getmtime(text):
        subprocess.run([binary, "convert", "--data", text, "-o", cache, "--features",
                        str(spec["features"])], check=True)
    return text, cache


def read_binary(path):
    """A binary dataset's labels and CSR matrix, memory-mapped (io/binary_cache.hpp's layout)."""
    header = np.fromfile(path, dtype=np.uint8, count=152)
    fields = lambda at, kind: np.frombuffer(header[at:at + 8], dtype=kind)[0]
    rows, cols, nnz = (int(fields(24, np.int64)), int(fields(32, np.int64)), int(fields(40, np.int64)))
    labels_at, starts_at, indices_at, values_at = (int(fields(at, np.uint64)) for at in (48, 64, 72, 80))
    m = np.memmap(path, dtype=np.uint8, mode="r")
    labels = np.frombuffer(m, dtype=np.float64, count=rows, offset=labels_at)
    starts = np.frombuffer(m, dtype=np.int32, count=rows + 1, offset=starts_at)
    indices = np.frombuffer(m, dtype=np.int32, count=nnz, offset=indices_at)
    values = np.frombuffer(m, dtype=np.float32, count=nnz, offset=values_at)
    return labels, scipy.sparse.csr_matrix((values, indices, starts), shape=(rows, cols))


def liblinear_objective(model_path, cache, spec):
    """LIBLINEAR's final weights under shardopt's objective (bias 0), with the set's penalty."""
    with open(model_path) as f:
        lines = f.read().split("\n")
    label_line = next(line for line in lines if line.startswith("label "))
    first_label = float(label_line.split()[1])
    w = np.array([float(line.split()[0]) for line in lines[lines.index("w") + 1:] if line.strip()])
    # -B B: the last weight is the bias's, over a feature of value B (its penalty is left out).
    bias_line = next((line for line in lines if line.startswith("bias ")), "bias -1")
    scale = float(bias_line.split()[1])
    bias = 0.0
    if scale > 0:
        bias, w = w[-1] * scale, w[:-1]
    labels, x = read_binary(cache)
    y = np.where(labels == first_label, 1.0, -1.0)  # LIBLINEAR's decision is positive for label[0]
    w = np.pad(w, (0, x.shape[1] - w.size))
    z = x @ w + bias
    if spec["model"] == "logistic":
        loss = np.logaddexp(0.0, -y * z)
    else:
        loss = np.maximum(0.0, 1.0 - y * z) ** 2
    return float(loss.mean() + 0.5 * spec["lambda"] * (w @ w) + spec.get("l1", 0.0) * np.abs(w).sum())


PEER_SOURCE = os.path.join("..", "shared", "peers", "liblinear-2.50")


def liblinear_250(build):
    """The path of LIBLINEAR 2.50's train, built into build/peers on first use."""
    folder = os.path.join(build, "peers", "liblinear-2.50")
    train = os.path.join(folder, "train")
    if not os.path.exists(train):
        if not os.path.isdir(PEER_SOURCE):
            sys.exit(f"bench: LIBLINEAR 2.50's source is not at {PEER_SOURCE}")
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        subprocess.run(["cp", "-r", PEER_SOURCE, folder], check=True)
        subprocess.run(["make", "-C", folder, "-j2"], check=True, capture_output=True)
    return train


def run_liblinear(spec, text, cache, scratch, train="liblinear-train", label="LIBLINEAR 2.3 (1 core)"):
    c = 1.0 / ((spec.get("l1") or spec["lambda"]) * spec["rows"])
    model = os.path.join(scratch, "liblinear.model")
    common = [train, "-s", spec["liblinear"], "-c", repr(c)]
    seconds, rss, out, _ = timed_rss(common + [text, model])
    iterations = re.findall(r"iter\s+\d+.*?CG\s+(\d+)", out)
    newest = label.startswith("LIBLINEAR 2.50")
    # 2.3 (TRON): an evaluation at the start and one a step, besides its CG steps; 2.50 (Newton
    # with a line search) two at the start and half a pass each for a step's diagonal, X s and
    # gradient (bench/real_bench.py counts them the same way).
    passes = sum(int(cg) for cg in iterations) + (1.5 * len(iterations) + 2 if newest else len(iterations) + 1)
    if spec["liblinear"] == "6":  # newGLMNET: a gradient pass per outer iteration, and its CD cycles
        passes = 1 + sum(int(cd) + 1 for cd in re.findall(r"iter\s+\d+\s+#CD cycles\s+(\d+)", out))
    first, _, _, _ = timed_rss(common + ["-e", "1e30", text, os.path.join(scratch, "once.model")])
    pass_seconds = max(seconds - first, 0.0) / max(passes - 1, 1)
    load = max(first - pass_seconds, 0.0)
    # In a process of its own: a child inherits its parent's peak RSS across exec, so the
    # benchmark's own process must stay small for the runs' peaks to be theirs.
    objective = float(subprocess.run([sys.executable, os.path.abspath(__file__), "--objective", model, cache,
                                      spec["model"], repr(spec["lambda"]), repr(spec.get("l1", 0.0))],
                                     check=True, capture_output=True, text=True).stdout)
    return {"tool": label, "end_to_end": seconds, "load": load, "solve": seconds - load,
            "passes": passes, "rss": rss, "objective": objective}


def run_shardopt(binary, spec, data, target, shards, pinned, scratch, l1_solver="owlqn"):
    metrics = os.path.join(scratch, "metrics.jsonl")
    solver = (["--l1", repr(spec["l1"]), "--solver", l1_solver, "--epsilon", "1e-9",
               "--max-iter", "3000" if l1_solver == "owlqn" else "300"]
              if "l1" in spec else ["--solver", "newton-cg", "--epsilon", "1e-12", "--max-iter", "100"])
    command = (["taskset", "-c", "0"] if pinned else []) + [
        binary, "train", "--model", spec["model"], "--data", data, "--scale", "none", "--features",
        str(spec["features"]), "--lambda", repr(spec["lambda"])] + solver + [
        "--shards", str(shards), "--metrics", metrics, "--json", "--quiet"]
    seconds, rss, out, _ = timed_rss(command)
    summary = json.loads(out)
    with open(metrics) as f:
        rows = [json.loads(line) for line in f]
    reached = next((row for row in rows if row["objective"] <= target), None)
    if reached is None:
        sys.exit(f"sparse_bench: shardopt never reached LIBLINEAR's objective {target!r} ({summary['objective']!r})")
    passes = reached["evaluations"] + reached["hessian_products"]
    to_target = summary["load_seconds"] + summary["setup_seconds"] + reached["seconds"]
    return {"end_to_end": to_target, "load": summary["load_seconds"], "solve": reached["seconds"],
            "passes": passes, "rss": rss, "objective": reached["objective"], "process_seconds": seconds,
            "final_objective": summary["objective"]}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--objective":
        model, cache, kind, lam, l1 = sys.argv[2:7]
        print(repr(liblinear_objective(model, cache, {"model": kind, "lambda": float(lam), "l1": float(l1)})))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--out", default="bench/results/sparse.json")
    parser.add_argument("--sets", default="logistic,svm,l1")
    parser.add_argument("--data", default="build/bench-data")
    parser.add_argument("--build", default="build")
    options = parser.parse_args()
    os.makedirs(options.data, exist_ok=True)
    scratch = os.path.join(options.data, "scratch")
    os.makedirs(scratch, exist_ok=True)
    newest = liblinear_250(options.build)
    results = {}
    for name in options.sets.split(","):
        spec = SETS[name]
        text, cache = dataset(options.binary, name, spec, options.data)
        nnz = spec["rows"] * spec["nonzeros"]
        # LIBLINEAR 2.50 (built from ../shared/peers on first use) sets the objective every run is
        # timed to; Debian's 2.3 runs beside it.
        peer = run_liblinear(spec, text, cache, scratch, newest, "LIBLINEAR 2.50 (1 core)")
        runs = [peer, run_liblinear(spec, text, cache, scratch)]
        for label, data, shards, pinned in (("shardopt, 1 shard (1 core)", text, 1, True),
                                            ("shardopt, 2 shards (2 cores)", text, 2, False),
                                            ("shardopt, 2 shards, binary dataset", cache, 2, False)):
            row = run_shardopt(options.binary, spec, data, peer["objective"], shards, pinned, scratch)
            row["tool"] = label + (", OWL-QN" if "l1" in spec else "")
            runs.append(row)
        if "l1" in spec:  # the second-order L1 solver beside OWL-QN
            for label, shards, pinned in (("shardopt, 1 shard (1 core), Newton-CG", 1, True),
                                          ("shardopt, 2 shards (2 cores), Newton-CG", 2, False)):
                row = run_shardopt(options.binary, spec, text, peer["objective"], shards, pinned, scratch,
                                   l1_solver="newton-cg")
                row["tool"] = label
                runs.append(row)
        for row in runs:
            row["ns_per_nnz_pass"] = row["solve"] / (row["passes"] * nnz) * 1e9
            row["time_ratio"] = row["end_to_end"] / peer["end_to_end"]
            row["rss_ratio"] = row["rss"] / peer["rss"]
        by_tool = {row["tool"]: row for row in runs}
        text_two = by_tool["shardopt, 2 shards (2 cores)" + (", OWL-QN" if "l1" in spec else "")]
        binary_two = by_tool["shardopt, 2 shards, binary dataset" + (", OWL-QN" if "l1" in spec else "")]
        results[name] = {"set": spec, "liblinear_objective": peer["objective"], "runs": runs,
                         "cache_load_over_text": binary_two["load"] / text_two["load"]}

    date = time.strftime("%Y-%m-%d")
    print(f"sparse benchmark, {date}: shardopt (Newton-CG; OWL-QN and orthant-wise Newton-CG for l1) against "
          f"LIBLINEAR 2.50 (Newton; newGLMNET for l1) and 2.3 (TRON; newGLMNET), to LIBLINEAR 2.50's objective")
    header = (f"{'set':<9} {'run':<44} {'load s':>7} {'solve s':>8} {'passes':>6} {'ns/nnz/pass':>11} "
              f"{'total s':>8} {'vs LL':>6} {'RSS GB':>7} {'vs LL':>6}")
    print(header)
    for name, result in results.items():
        for row in result["runs"]:
            print(f"{name:<9} {row['tool']:<44} {row['load']:>7.2f} {row['solve']:>8.2f} {row['passes']:>6} "
                  f"{row['ns_per_nnz_pass']:>11.2f} {row['end_to_end']:>8.2f} {row['time_ratio']:>6.2f} "
                  f"{row['rss'] / 1e9:>7.2f} {row['rss_ratio']:>6.2f}")
        print(f"{name:<9} {'binary dataset load / text load (2 cores)':<44} {result['cache_load_over_text']:>7.3f}"
              f"   (LIBLINEAR's objective {result['liblinear_objective']:.10g})")
    print("targets: 1 core <= 1.0x LIBLINEAR 2.50 end to end; 2 cores <= 0.5x; RSS <= 1.0x; cache load <= 0.1x text")
    os.makedirs(os.path.dirname(os.path.abspath(options.out)), exist_ok=True)
    with open(options.out, "w") as f:
        json.dump({"date": date, "results": results}, f, indent=2)
    print(f"written to {options.out}")


if __name__ == "__main__":
    main()
