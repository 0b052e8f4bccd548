#!/usr/bin/env python3
"""L1 by placement: OWL-QN with and without shrinking (`--l1`, `--no-shrinking`), its 2 shards local
or on 2 node processes on loopback (one thread each, started and stopped here), shipped there or
read there (`--data-placement node-local`, the nodes' data root the data folder), on the real sets of
bench/real_sets.py (made on first use in build/bench-data, as real_bench.py makes them). The same
problem as real_bench.py --l1: logistic, no bias, alpha = 1/n, no L2; a fixed iteration count
(--max-iter, default 300), so that every row is the same work. Shrinking's rows must be the same
bits on nodes, shipped or node-local, as locally (the objective is compared to the last digit);
plain OWL-QN's too.

Columns: total (load, setup, solve) and solve seconds, the solve's seconds in rounds (waiting on
the shards), the serial share (the solve's time outside rounds, the driver's alone), passes (evaluations, inner ones reading only the working set's columns), objective,
non-zero weights, and the ratio to the local shrinking run.

    /usr/bin/python3 bench/l1_placement_bench.py BUILD/apps/shardopt [--sets spam,wordnet,debian-en]
        [--max-iter N] [--out FILE]   (default: bench/results/l1_placement.json)
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_bench  # noqa: E402


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_node(binary, root):
    port = free_port()
    node = subprocess.Popen([binary, "node", "--port", str(port), "--threads", "1", "--data-root", root],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in node.stdout:
        if "listening on" in line:
            return node, f"127.0.0.1:{port}"
    node.kill()
    sys.exit(f"l1_placement_bench: a node on port {port} did not start")


def run(binary, text, meta, iterations, extra):
    command = [binary, "train", "--model", "logistic", "--data", text, "--scale", "none", "--features",
               str(meta["features"]), "--lambda", "0", "--l1", repr(1.0 / meta["rows"]), "--epsilon", "1e-9",
               "--no-bias", "--max-iter", str(iterations), "--shards", "2", "--json", "--quiet", *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"l1_placement_bench: {' '.join(command)} failed: {done.stderr.strip()}")
    s = json.loads(done.stdout)
    return {"total": s["total_seconds"], "solve": s["seconds"], "rounds": s["round_seconds"],
            "serial_share": 1 - s["round_seconds"] / s["seconds"] if s["seconds"] > 0 else 0.0,
            "passes": s["passes"], "iterations": s["iterations"], "objective": s["objective"],
            "nonzeros": s["nonzero_weights"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--sets", default="spam,wordnet,debian-en")
    parser.add_argument("--data", default="build/bench-data")
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--out", default="bench/results/l1_placement.json")
    args = parser.parse_args()
    nodes = [start_node(args.binary, os.path.abspath(args.data)) for _ in range(2)]
    results = []
    try:
        at = ",".join(where for _, where in nodes)
        node_local = ["--nodes", at, "--data-placement", "node-local"]
        configs = [("local, shrinking", []), ("2 nodes, shrinking", ["--nodes", at]),
                   ("2 nodes node-local, shrinking", node_local),
                   ("local, --no-shrinking", ["--no-shrinking"]),
                   ("2 nodes, --no-shrinking", ["--nodes", at, "--no-shrinking"]),
                   ("2 nodes node-local, plain", node_local + ["--no-shrinking"])]
        for name in args.sets.split(","):
            text, _, meta = real_bench.dataset(args.binary, name, args.data)
            rows = []
            for label, extra in configs:
                row = run(args.binary, os.path.abspath(text), meta, args.max_iter, extra)
                row["run"] = label
                rows.append(row)
            base = rows[0]["total"]
            print(f"\n{name}: {meta['rows']:,} rows x {meta['features']:,} features, {meta['nonzeros']:,} "
                  f"non-zeros; alpha = 1/n, {args.max_iter} iterations, 2 shards")
            print(f"{'run':<30} {'total s':>8} {'solve s':>8} {'rounds s':>9} {'serial':>7} {'passes':>7} "
                  f"{'objective':>20} {'nnz':>6} {'vs local':>9}")
            for row in rows:
                row["vs_local_shrinking"] = row["total"] / base
                print(f"{row['run']:<30} {row['total']:8.2f} {row['solve']:8.2f} {row['rounds']:9.2f} "
                      f"{row['serial_share']:6.0%} "
                      f"{row['passes']:7d} {row['objective']:20.15g} {row['nonzeros']:6d} "
                      f"{row['vs_local_shrinking']:8.2f}x")
            same = all(row["objective"] == rows[0]["objective"] for row in rows[:3]) and all(
                row["objective"] == rows[3]["objective"] for row in rows[3:])
            print("nodes give the local bits: " + ("yes" if same else "NO"))
            results.append({"set": meta, "max_iter": args.max_iter, "same_bits": same, "rows": rows})
    finally:
        for node, _ in nodes:
            node.kill()
            node.wait()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "cores": os.cpu_count(), "sets": results}, out,
                  indent=1)
    print(f"\nwrote {args.out}")
    if not all(r["same_bits"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
