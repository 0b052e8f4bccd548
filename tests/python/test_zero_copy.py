"""float32 C-order X is used where it is: no copy, kept alive while the run needs it."""

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np

import shardopt
from conftest import classification

# A run over 200 MB of float32 features in a fresh interpreter: the growth of its peak resident
# set during train(), as a fraction of X's bytes. X is filled in slices so that making it leaves
# no peak of its own behind.
PEAK_GROWTH = textwrap.dedent("""
    import gc, sys
    import numpy as np
    import shardopt

    def peak():
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))

    n, d = 100_000, 500
    X = np.empty((n, d), dtype=np.float32, order=sys.argv[1])
    rng = np.random.default_rng(0)
    for i in range(0, n, 5000):
        X[i:i + 5000] = rng.standard_normal((5000, d), dtype=np.float32)
    y = (X[:, :10].sum(axis=1) > 0).astype(np.float64)
    shardopt.train(X[:100], y[:100], model="logistic", max_iter=1)  # threads, pools
    gc.collect()
    before = peak()
    shardopt.train(X, y, model="logistic", lam=1e-3, shards=2, max_iter=5)
    print((peak() - before) / X.nbytes)
""")


def peak_growth(order):
    done = subprocess.run([sys.executable, "-c", PEAK_GROWTH, order], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return float(done.stdout)


def test_c_order_float32_is_not_copied_and_fortran_order_is():
    assert peak_growth("C") < 0.10
    assert peak_growth("F") > 0.90  # the measurement sees a copy when there is one


def test_the_dataset_holds_a_reference_to_x_for_the_run_and_drops_it_after():
    X, y = classification(rows=3000, features=40, classes=3)
    arrays = {"C": np.ascontiguousarray(X, dtype=np.float32), "F": np.asfortranarray(X, dtype=np.float32)}
    during, results = {}, {}
    for order, array in arrays.items():
        before = sys.getrefcount(array)
        seen = []
        results[order] = shardopt.train(array, y, lam=1e-3, shards=2, max_iter=15,
                                        callback=lambda info: seen.append(sys.getrefcount(array)))
        gc.collect()
        assert sys.getrefcount(array) == before  # nothing keeps X once the run is over
        during[order] = seen[0] - before
    # The copy (F) is held by nobody; the C-order array by the run's dataset, once more.
    assert during["C"] == during["F"] + 1
    assert results["C"].objective == results["F"].objective
    np.testing.assert_array_equal(results["C"].theta, results["F"].theta)


def test_dropping_x_during_the_run_changes_nothing():
    X, y = classification(rows=3000, features=40, classes=3)
    X = np.ascontiguousarray(X, dtype=np.float32)
    reference = shardopt.train(X.copy(), y, lam=1e-3, shards=2, max_iter=15)
    held = [X]
    gone = weakref.ref(X)
    del X

    def drop(info):
        if info.iteration == 1:
            held.clear()
            gc.collect()

    result = shardopt.train(held[0], y, lam=1e-3, shards=2, max_iter=15, callback=drop)
    assert result.objective == reference.objective
    np.testing.assert_array_equal(result.theta, reference.theta)
    gc.collect()
    assert gone() is None
