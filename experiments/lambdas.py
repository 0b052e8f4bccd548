#!/usr/bin/env python3
"""Softmax regression on Fashion-MNIST for a few lambdas, from Python: the objective curves, the
test accuracies, and (with matplotlib installed) a plot of the curves.

    PYTHONPATH=build/python python3 experiments/lambdas.py [--max-iter 200] [--plot out/lambdas.png]
"""

import argparse
import sys

import numpy as np

import shardopt


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lambdas", type=float, nargs="+", default=[1e-2, 1e-3, 1e-4])
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--shards", type=int, default=0, help="0: one per hardware thread")
    parser.add_argument("--plot", default="out/lambdas.png", help="PNG to write if matplotlib is installed")
    args = parser.parse_args()

    runs = {}
    for lam in args.lambdas:
        result = shardopt.train(data="fashion-mnist", model="softmax", solver="lbfgs", lam=lam, shards=args.shards,
                                max_iter=args.max_iter, epsilon=1e-6)
        runs[lam] = result
        norms = np.linalg.norm(result.weights, axis=0)  # one weight vector per class
        print(f"lambda {lam:g}: objective {result.objective:.6f} after {result.iterations} iterations "
              f"({result.stop_reason}, {result.seconds:.1f} s); test accuracy {result.test_accuracy:.4f}; "
              f"largest class weight norm {norms.max():.2f}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (apt install python3-matplotlib)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for lam, result in runs.items():
        ax.semilogy(result.history["iteration"], result.history["objective"] - result.objective + 1e-12,
                    label=f"lambda {lam:g}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("f - f(last)")
    ax.set_title("Fashion-MNIST softmax, L-BFGS")
    ax.legend()
    import os
    os.makedirs(os.path.dirname(args.plot) or ".", exist_ok=True)
    fig.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
