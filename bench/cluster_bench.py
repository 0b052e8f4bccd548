#!/usr/bin/env python3
"""Star against reduction tree on shaped links: time and driver bytes per evaluation.

For N nodes (default 1, 2, 4, 8, 16), each in a network namespace of its own behind a switch whose
every port is shaped to --rate (scripts/netns-cluster), trains sparse logistic regression on
2^20 features (2^20 + 1 parameters) from node-local LIBSVM data, the same rows per node (weak
scaling), once with --topology star and once with --topology tree. Then Fashion-MNIST softmax at
N = 4 (7,850 parameters: latency, not bandwidth).

Each configuration runs two trainings, of --short and --long iterations, and reports the
differences: seconds per evaluation, bytes through the driver's link and the busiest node's link
per evaluation (read from their interface counters), so connecting, reading and building the tree
cancel out. Prints a table
and writes --out (JSON). All nodes share this machine's cores: with 16 nodes on 2 cores, compute
is 8x oversubscribed, which the table says.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def link_bytes():
    """Bytes sent and received on this namespace's interfaces (loopback excluded)."""
    total = 0
    for name in os.listdir("/sys/class/net"):
        if name == "lo":
            continue
        for way in ("rx_bytes", "tx_bytes"):
            with open(f"/sys/class/net/{name}/statistics/{way}") as f:
                total += int(f.read())
    return total


def node_link_bytes():
    """Bytes sent and received on each node's link (its namespace's interfaces, loopback excluded),
    from the namespaces netns-cluster lists in NODE_PIDS_FILE."""
    totals = []
    with open(os.environ["NODE_PIDS_FILE"]) as f:
        for line in f:
            namespace = line.split()[2]
            links = json.loads(subprocess.run(["ip", "-n", namespace, "-s", "-j", "link", "show"],
                                              check=True, capture_output=True, text=True).stdout)
            totals.append(sum(link["stats64"]["rx"]["bytes"] + link["stats64"]["tx"]["bytes"]
                              for link in links if link["ifname"] != "lo"))
    return totals


def inside(short, long_, train):
    """Runs in the driver's namespace: two trainings, the differences as one JSON line."""
    runs = []
    for iterations in (short, long_):
        before, nodes_before = link_bytes(), node_link_bytes()
        out = subprocess.run(train + ["--max-iter", str(iterations), "--nodes", os.environ["NODES"]],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"cluster_bench: training failed: {out.stderr.strip()[-2000:]}")
        summary = json.loads(out.stdout)
        nodes_after = node_link_bytes()
        runs.append((summary, link_bytes() - before,
                     [after - before for before, after in zip(nodes_before, nodes_after)]))
    (short, short_bytes, short_nodes), (long, long_bytes, long_nodes) = runs
    evaluations = long["evaluations"] - short["evaluations"]
    print(json.dumps({
        "evaluations": evaluations,
        "seconds_per_evaluation": (long["seconds"] - short["seconds"]) / evaluations,
        "driver_bytes_per_evaluation": (long_bytes - short_bytes) / evaluations,
        "max_node_bytes_per_evaluation": max(b - a for a, b in zip(short_nodes, long_nodes)) / evaluations,
        "objective": long["objective"],
        "objective_hex": float(long["objective"]).hex(),
        "lost_nodes": long.get("lost_nodes", 0),
    }))


def run_cluster(args, nodes, root, train):
    command = [os.path.join(ROOT, "scripts/netns-cluster"), str(nodes), "--rate", args.rate,
               "--node-arg", "--data-root", "--node-arg", root, "--",
               sys.executable, os.path.abspath(__file__), "--inside", str(args.short), str(args.long),
               "--"] + train
    pids = os.path.join(tempfile.mkdtemp(prefix="shardopt-cluster-pids-"), "nodes")
    out = subprocess.run(command, capture_output=True, text=True,
                         env=dict(os.environ, SHARDOPT=args.binary, NODE_PIDS_FILE=pids))
    if os.path.exists(pids):
        os.remove(pids)
    os.rmdir(os.path.dirname(pids))
    if out.returncode == 77:
        sys.exit("cluster_bench: " + out.stdout.strip())
    if out.returncode != 0:
        sys.exit(f"cluster_bench: {nodes} nodes failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 4 and sys.argv[1] == "--inside":
        return inside(int(sys.argv[2]), int(sys.argv[3]), sys.argv[5:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build/apps/shardopt"))
    parser.add_argument("--nodes", default="1,2,4,8,16", help="node counts, comma-separated")
    parser.add_argument("--rate", default="1gbit", help="every link's rate (tc tbf)")
    parser.add_argument("--rows-per-node", type=int, default=20000)
    parser.add_argument("--short", type=int, default=2, help="iterations of the shorter training")
    parser.add_argument("--long", type=int, default=8, help="iterations of the longer training")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench/results/cluster.json"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="shardopt-cluster-bench-")
    rows = []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        data = os.path.join(work, f"n{nodes}.svm")
        subprocess.run([args.binary, "generate", "-o", data, "--rows", str(nodes * args.rows_per_node),
                        "--features", str(1 << 20), "--nonzeros", "40", "--seed", "7", "--quiet"],
                       check=True)
        for topology in ("star", "tree"):
            train = [args.binary, "train", "--solver", "lbfgs", "--model", "logistic", "--data", os.path.basename(data),
                     "--features", str(1 << 20), "--data-placement", "node-local", "--lambda", "1e-5",
                     "--topology", topology, "--json", "--quiet"]
            result = run_cluster(args, nodes, work, train)
            result.update({"set": "sparse logistic, 2^20 + 1 parameters", "nodes": nodes, "topology": topology})
            rows.append(result)
            print(f"{nodes:>3} nodes {topology:<5} {result['seconds_per_evaluation'] * 1000:9.1f} ms/eval "
                  f"{result['driver_bytes_per_evaluation'] / 1e6:9.2f} MB/eval at the driver", flush=True)
        os.remove(data)
    for topology in ("star", "tree"):
        train = [args.binary, "train", "--solver", "lbfgs", "--model", "softmax", "--data", "fashion-mnist",
                 "--data-placement", "node-local", "--lambda", "1e-4", "--topology", topology,
                 "--fan-in", "0", "--json", "--quiet"]
        result = run_cluster(args, 4, "/", train)
        result.update({"set": "Fashion-MNIST softmax, 7,850 parameters", "nodes": 4, "topology": topology})
        rows.append(result)

    print()
    print(f"links: {args.rate} per port (tc tbf), {os.cpu_count()} cores shared by every node and the driver")
    print(f"{'set':<42} {'nodes':>5} {'topology':<8} {'ms/eval':>9} {'driver MB/eval':>15} "
          f"{'x 17 x dim':>10} {'max node x':>10} {'tree/star':>9}  objective")
    star = {}
    for row in rows:
        dim = (1 << 20) + 1 if row["set"].startswith("sparse") else 7850
        key = (row["set"], row["nodes"])
        if row["topology"] == "star":
            star[key] = row
        ratio = ""
        if row["topology"] == "tree" and key in star:
            ratio = f"{row['seconds_per_evaluation'] / star[key]['seconds_per_evaluation']:.2f}"
            row["time_ratio_to_star"] = float(ratio)
            row["same_bits_as_star"] = row["objective_hex"] == star[key]["objective_hex"]
        print(f"{row['set']:<42} {row['nodes']:>5} {row['topology']:<8} "
              f"{row['seconds_per_evaluation'] * 1000:>9.1f} {row['driver_bytes_per_evaluation'] / 1e6:>15.2f} "
              f"{row['driver_bytes_per_evaluation'] / (17 * dim):>10.2f} "
              f"{row['max_node_bytes_per_evaluation'] / (17 * dim):>10.2f} {ratio:>9}  {row['objective_hex']}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"rate": args.rate, "cores": os.cpu_count(), "rows_per_node": args.rows_per_node,
                   "rows": rows}, f, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
