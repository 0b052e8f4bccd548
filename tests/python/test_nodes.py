"""A run over node processes on loopback, started and stopped by the test."""

import re
import subprocess

import pytest

import shardopt
from conftest import classification


@pytest.fixture
def nodes(binary):
    """Two `shardopt node` processes on 127.0.0.1, each on a free port; stopped at the end."""
    processes, endpoints = [], []
    try:
        for _ in range(2):
            process = subprocess.Popen([binary, "node", "--bind", "127.0.0.1", "--port", "0", "--threads", "2"],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(process)
            line = process.stdout.readline()
            match = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
            assert match, line
            endpoints.append(match.group(1))
        yield endpoints
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


def test_nodes_on_loopback_give_the_local_bits(nodes):
    X, y = classification(rows=500, features=8, seed=9)
    local = shardopt.train(X, y, lam=1e-3, shards=4, max_iter=30)
    remote = shardopt.train(X, y, lam=1e-3, shards=4, max_iter=30, nodes=nodes)
    assert remote.nodes == 2 and remote.shards == 4
    assert remote.objective == local.objective
    assert (remote.theta == local.theta).all()
