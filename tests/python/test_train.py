"""shardopt.train on arrays and files: the CLI's objective, the documented layout, the options."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse

import shardopt
from conftest import classification, write_csv, write_libsvm

ORDERS_AND_DTYPES = [("C", np.float64), ("F", np.float64), ("C", np.float32), ("F", np.float32)]


@pytest.mark.parametrize("order,dtype", ORDERS_AND_DTYPES)
def test_dense_arrays_give_the_cli_objective(tmp_path, cli, order, dtype):
    X, y = classification()
    csv = write_csv(tmp_path / "train.csv", X, y)
    expected = cli("--data", csv, "--model", "softmax", "--lambda", "1e-3", "--shards", 3,
                   "--max-iter", 30)
    Xa = np.array(X, dtype=dtype, order=order)
    got = shardopt.train(Xa, y, model="softmax", lam=1e-3, shards=3, max_iter=30)
    assert got.iterations == expected["iterations"]
    assert got.objective == pytest.approx(expected["objective"], rel=1e-12, abs=0)
    assert got.grad_norm == pytest.approx(expected["grad_norm"], rel=1e-9)
    assert got.train_accuracy == expected["train_accuracy"]


def test_scipy_csr_gives_the_cli_objective(tmp_path, cli):
    X, y = classification(features=12, seed=2)
    X[np.abs(X) < 0.7] = 0  # sparse enough to matter
    binary = np.where(y > 0, 1.0, -1.0)
    svm = write_libsvm(tmp_path / "train.svm", X, binary)
    expected = cli("--data", svm, "--features", 12, "--model", "logistic", "--lambda", "1e-2",
                   "--shards", 2, "--max-iter", 40)
    got = shardopt.train(scipy.sparse.csr_matrix(X), binary, model="logistic", lam=1e-2, shards=2,
                         max_iter=40)
    assert got.objective == pytest.approx(expected["objective"], rel=1e-12, abs=0)
    # Another sparse format, and unsorted indices, are made canonical first: the same numbers.
    coo = scipy.sparse.coo_matrix(X)
    order = np.random.default_rng(0).permutation(coo.nnz)
    shuffled = scipy.sparse.csr_matrix((coo.data[order], (coo.row[order], coo.col[order])), shape=X.shape)
    again = shardopt.train(shuffled.tocoo(), binary, model="logistic", lam=1e-2, shards=2, max_iter=40)
    assert again.objective == got.objective


def test_weights_come_back_in_the_documented_layout():
    X, y = classification(features=5, classes=4)
    result = shardopt.train(X, y, model="softmax", lam=1e-2, shards=2, max_iter=200)
    theta = result.theta
    features, outputs = 5, 4
    assert theta.shape == (features * outputs + outputs,)
    W, b = result.weights, result.biases
    assert W.shape == (features, outputs) and b.shape == (outputs,)
    for k in range(outputs):  # column k: output k's weights, theta[k*features:(k+1)*features]
        np.testing.assert_array_equal(W[:, k], theta[k * features:(k + 1) * features])
    np.testing.assert_array_equal(b, theta[features * outputs:])
    assert np.shares_memory(W, theta) and np.shares_memory(b, theta)  # views, not copies
    # The layout is what the model computes with: argmax(X W + b) is its prediction.
    np.testing.assert_array_equal(result.model.predict(X), np.argmax(X @ W + b, axis=1))
    assert np.mean(result.model.predict(X) == y) == pytest.approx(result.train_accuracy)


def test_network_layers_are_views_in_order():
    X, y = classification(features=4, classes=3)
    result = shardopt.train(X, y, model="mlp", hidden=[5, 3], lam=1e-3, shards=2, max_iter=20)
    shapes = [(W.shape, b.shape) for W, b in result.layers]
    assert shapes == [((4, 5), (5,)), ((5, 3), (3,)), ((3, 3), (3,))]
    assert sum(W.size + b.size for W, b in result.layers) == result.theta.size
    assert all(np.shares_memory(W, result.theta) for W, _ in result.layers)


def test_history_holds_the_metrics_rows(tmp_path):
    X, y = classification()
    metrics = tmp_path / "run.jsonl"
    result = shardopt.train(X, y, lam=1e-3, shards=2, max_iter=15, metrics=str(metrics))
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(result.history["objective"]) == result.iterations == len(rows)
    np.testing.assert_array_equal(result.history["objective"], [r["objective"] for r in rows])
    np.testing.assert_array_equal(result.history["iteration"], np.arange(1, len(rows) + 1))
    assert np.all(np.diff(result.history["objective"]) <= 0)  # L-BFGS descends


def test_files_and_the_test_split_through_data(tmp_path, cli):
    X, y = classification(rows=200, seed=5)
    train = write_csv(tmp_path / "train.csv", X[:150], y[:150])
    test = write_csv(tmp_path / "test.csv", X[150:], y[150:])
    expected = cli("--data", train, "--test", test, "--shards", 2, "--max-iter", 25)
    got = shardopt.train(data=train, test=test, shards=2, max_iter=25)
    assert got.objective == expected["objective"]
    assert got.test_accuracy == expected["test_accuracy"]
    arrays = shardopt.train(X[:150], y[:150], X_test=X[150:], y_test=y[150:], shards=2, max_iter=25)
    assert arrays.test_accuracy == expected["test_accuracy"]


def test_newton_cg_through_the_same_options(cli, tmp_path):
    X, y = classification(seed=7)
    csv = write_csv(tmp_path / "train.csv", X, y)
    expected = cli("--data", csv, "--solver", "newton-cg", "--lambda", "1e-2", "--shards", 2)
    got = shardopt.train(X, y, solver="newton-cg", lam=1e-2, shards=2)
    assert got.solver == "newton-cg" and got.hessian_products > 0
    assert got.objective == expected["objective"]


def test_l1_through_the_same_options(cli, tmp_path):
    X, y = classification(features=12, seed=5)
    csv = write_csv(tmp_path / "train.csv", X, y)
    expected = cli("--data", csv, "--l1", "2e-2", "--lambda", "1e-3", "--shards", 2)
    got = shardopt.train(X, y, l1=2e-2, lam=1e-3, shards=2)
    assert got.solver == "owlqn" and got.l1 == 2e-2
    assert got.objective == expected["objective"]
    assert got.nonzero_weights == expected["nonzero_weights"]
    assert 0 < got.nonzero_weights < 12 * 3  # some weights are exactly 0
    weights = got.model.theta[:-3]
    assert np.count_nonzero(weights) == got.nonzero_weights
    # Orthant-wise Newton-CG through the same option, to the same optimum.
    newton = shardopt.train(X, y, l1=2e-2, lam=1e-3, shards=2, solver="newton-cg")
    expected = cli("--data", csv, "--l1", "2e-2", "--lambda", "1e-3", "--shards", 2, "--solver", "newton-cg")
    assert newton.solver == "newton-cg" and newton.hessian_products > 0
    assert newton.objective == expected["objective"]
    assert newton.objective == pytest.approx(got.objective, rel=1e-6)


def test_fashion_mnist_by_name():
    result = shardopt.train(data="fashion-mnist", limit=2000, test_limit=500, max_iter=10, shards=2)
    assert result.features == 784 and result.examples == 2000
    assert 0.5 < result.test_accuracy <= 1


def test_the_example_script_runs(tmp_path):
    script = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "lambdas.py"
    done = subprocess.run([sys.executable, str(script), "--lambdas", "1e-3", "--max-iter", "3", "--shards", "2",
                           "--plot", str(tmp_path / "curves.png")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lambda 0.001: objective ")
    assert "after 3 iterations (max_iterations" in done.stdout
