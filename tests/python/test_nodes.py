"""Runs over node processes on loopback, plain and with mutual TLS; every node the tests start,
they stop."""

import contextlib
import pathlib
import re
import subprocess

import pytest

import shardopt
from conftest import classification

MAKE_CERTS = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "make-certs"


@contextlib.contextmanager
def nodes(binary, count, *extra):
    """`count` `shardopt node` processes on 127.0.0.1, each on a free port; yields their endpoints."""
    processes, endpoints = [], []
    try:
        for _ in range(count):
            process = subprocess.Popen([binary, "node", "--bind", "127.0.0.1", "--port", "0", "--threads", "2", *extra],
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


def test_nodes_on_loopback_give_the_local_bits(binary):
    X, y = classification(rows=500, features=8, seed=9)
    local = shardopt.train(X, y, lam=1e-3, shards=4, max_iter=30)
    with nodes(binary, 2) as endpoints:
        remote = shardopt.train(X, y, lam=1e-3, shards=4, max_iter=30, nodes=endpoints)
    assert remote.nodes == 2 and remote.shards == 4
    assert remote.objective == local.objective
    assert (remote.theta == local.theta).all()


def test_mutual_tls_from_python(binary, tmp_path):
    subprocess.run(["/bin/bash", str(MAKE_CERTS), str(tmp_path)], check=True, capture_output=True)
    c = lambda name: str(tmp_path / name)  # noqa: E731
    X, y = classification(rows=300, features=6, seed=10)
    local = shardopt.train(X, y, shards=2, max_iter=20)
    with nodes(binary, 1, "--tls-cert", c("node.pem"), "--tls-key", c("node.key"),
               "--tls-ca", c("ca-driver.pem")) as endpoints:
        remote = shardopt.train(X, y, shards=2, max_iter=20, nodes=endpoints, tls_cert=c("driver.pem"),
                                tls_key=c("driver.key"), tls_ca=c("ca-node.pem"))
        assert remote.objective == local.objective
        # A node's certificate cannot drive a node: refused in the handshake, a failed run.
        with pytest.raises(RuntimeError, match=endpoints[0]):
            shardopt.train(X, y, shards=2, max_iter=20, nodes=endpoints, tls_cert=c("node.pem"),
                           tls_key=c("node.key"), tls_ca=c("ca-node.pem"))
    with pytest.raises(FileNotFoundError, match="missing.pem"):
        shardopt.train(X, y, nodes=["127.0.0.1:1"], tls_cert=c("missing.pem"), tls_key=c("node.key"),
                       tls_ca=c("ca-node.pem"))
