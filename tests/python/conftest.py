"""Fixtures of the Python module's tests: the shardopt binary they compare against, and small
datasets whose values are exactly float32, so that arrays and files hold the same numbers."""

import json
import os
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def binary():
    path = os.environ.get("SHARDOPT_BINARY")
    if not path:
        pytest.fail("SHARDOPT_BINARY is not set (run the tests through ctest)")
    return path


@pytest.fixture(scope="session")
def cli(binary):
    """Runs `shardopt train ... --json --quiet` and returns its summary."""

    def run(*args):
        done = subprocess.run([binary, "train", *map(str, args), "--json", "--quiet"],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


@pytest.fixture(scope="session")
def cli_error(binary):
    """Runs a `shardopt` command expected to fail; returns its one-line message: the text after
    "shardopt: error: ", or the first line of an option parsing error."""

    def run(*args):
        done = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=600)
        assert done.returncode != 0, done.stdout
        lines = done.stderr.splitlines()
        errors = [line for line in lines if line.startswith("shardopt: error: ")]
        assert errors or lines, done.stderr
        return errors[-1][len("shardopt: error: "):] if errors else lines[0]

    return run


def classification(rows=300, features=6, classes=3, seed=1):
    """Separable-ish classes with float32-exact features; labels 0..classes-1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=rows)
    centers = rng.normal(size=(classes, features))
    X = (centers[y] + 0.8 * rng.normal(size=(rows, features))).astype(np.float32).astype(np.float64)
    return X, y.astype(np.float64)


def write_csv(path, X, y):
    """Label first, then the features, each written so that it reads back as the same double."""
    with open(path, "w") as out:
        for row, label in zip(X, y):
            out.write(",".join([repr(float(label))] + [repr(float(v)) for v in row]) + "\n")
    return str(path)


def write_libsvm(path, X, y):
    """The non-zero entries of X, 1-based, as LIBSVM."""
    with open(path, "w") as out:
        for row, label in zip(X, y):
            pairs = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
            out.write(f"{float(label)!r} {pairs}\n")
    return str(path)
