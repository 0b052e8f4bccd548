"""Many runs in one process do not grow its memory: no references or actor systems left behind."""

import gc
import weakref

import shardopt
from conftest import classification


def resident_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_a_hundred_runs_do_not_grow_the_resident_set():
    X, y = classification(rows=2000, features=50, classes=5)
    seen = []

    def run():
        result = shardopt.train(X, y, lam=1e-3, shards=2, max_iter=5, callback=lambda info: seen.append(info))
        return float(result.weights.sum()) + result.model.predict(X[:10]).sum()

    for _ in range(10):  # warm up: allocator pools, thread stacks, first imports
        run()
    # Nothing keeps a result's model (and the theta its views share) alive once the result is gone.
    result = shardopt.train(X, y, lam=1e-3, shards=2, max_iter=5, callback=lambda info: None)
    model, weights = weakref.ref(result.model), result.weights
    del result
    assert model() is not None  # the weights view holds its model
    del weights
    gc.collect()
    assert model() is None
    gc.collect()
    before = resident_kib()
    for _ in range(100):
        run()
    seen.clear()
    gc.collect()
    grown = resident_kib() - before
    # One run's data is X (800 KB as float64) and its float32 copy; a leak of either per run, or of
    # an actor system, would add tens of megabytes over 100 runs.
    assert grown < 8 * 1024, f"resident set grew by {grown} KiB over 100 runs"
