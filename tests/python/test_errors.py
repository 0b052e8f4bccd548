"""Bad arrays, options and files raise the exception of their kind with the CLI's message."""

import pickle

import numpy as np
import pytest
import scipy.sparse

import shardopt
from conftest import classification, write_csv


def test_wrong_shapes_raise_value_error():
    X, y = classification(rows=20)
    with pytest.raises(ValueError, match="X must be 2-D"):
        shardopt.train(X[:, 0], y)
    with pytest.raises(ValueError, match="y has 19 labels but X has 20 rows"):
        shardopt.train(X, y[:-1])
    with pytest.raises(ValueError, match=r"y must be 1-D"):
        shardopt.train(X, np.stack([y, y], axis=1))
    with pytest.raises(ValueError, match="X_test and y_test come together"):
        shardopt.train(X, y, X_test=X)
    with pytest.raises(ValueError, match="dimension mismatch"):
        shardopt.train(X, y, X_test=X[:, :3], y_test=y)


def test_non_finite_entries_name_the_entry():
    X, y = classification(rows=20)
    X[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X\[4, 2\]: expected a finite number, got nan$"):
        shardopt.train(X, y)
    X[4, 2] = 0
    y[7] = np.inf
    with pytest.raises(ValueError, match=r"^y\[7\]: expected a finite number, got inf$"):
        shardopt.train(X, y)


def test_a_label_out_of_range_has_the_cli_message(tmp_path, cli_error):
    X, y = classification(rows=20)
    y[5] = -1
    csv = write_csv(tmp_path / "bad.csv", X, y)
    expected = cli_error("train", "--data", csv, "--model", "softmax", "--quiet")
    with pytest.raises(ValueError) as raised:
        shardopt.train(X, y, model="softmax")
    # The same message, with the array's record where the CLI names the file's line.
    assert expected.startswith(csv + ":6: ")
    assert str(raised.value) == "y: record 5: " + expected[len(csv + ":6: "):]


def test_bad_option_values_have_the_cli_message(cli_error):
    expected = cli_error("train", "--solver", "newton")
    with pytest.raises(ValueError) as raised:
        shardopt.train(solver="newton")
    assert str(raised.value).endswith(expected)
    assert str(raised.value).startswith("option 'solver': ")
    with pytest.raises(ValueError, match="^option 'max-iter': Could not convert: --max-iter = many$"):
        shardopt.train(max_iter="many")


def test_unknown_options_raise_type_error():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'max_iterations'.*--max-iterations"):
        shardopt.train(max_iterations=5)
    with pytest.raises(TypeError, match="expected a bool, int, float or str"):
        shardopt.train(max_iter={"a": 1})


def test_refusals_of_the_cli_come_through():
    X, y = classification(rows=40)
    with pytest.raises(ValueError, match="newton-cg takes the linear models"):
        shardopt.train(X, y, model="mlp", solver="newton-cg")
    with pytest.raises(ValueError, match="node-local"):
        shardopt.train(X, y, nodes=["127.0.0.1:1"], data_placement="node-local")


def test_missing_files_raise_file_not_found(tmp_path, cli_error):
    missing = str(tmp_path / "nope.csv")
    expected = cli_error("train", "--data", missing)
    with pytest.raises(FileNotFoundError) as raised:
        shardopt.train(data=missing)
    assert str(raised.value) == expected == missing + ": no such file"
    with pytest.raises(FileNotFoundError, match="no such file"):
        shardopt.load_model(str(tmp_path / "none.bin"))


def test_an_unreachable_node_is_a_runtime_error():
    X, y = classification(rows=40)
    # Port 1 on loopback: nothing listens there, the connection is refused at once.
    with pytest.raises(RuntimeError, match="127.0.0.1:1"):
        shardopt.train(X, y, nodes=["127.0.0.1:1"], shards=2)


def test_sparse_structure_is_checked_through_the_module():
    # SciPy does not check column indices by default: the module does, naming the row.
    bad = scipy.sparse.csr_matrix((np.array([1.0, 2.0]), np.array([0, 5]), np.array([0, 1, 2])), shape=(2, 3))
    with pytest.raises(ValueError, match=r"^X: row 1 has column 5, outside 0..2$"):
        shardopt.train(bad, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="real numbers"):
        shardopt.train(scipy.sparse.csr_matrix(np.eye(3) * 1j), np.array([0.0, 1.0, 2.0]))


def test_unpickled_arrays_and_strided_views_are_accepted():
    X, y = classification(rows=60, features=6)
    expected = shardopt.train(np.ascontiguousarray(X[:, ::2]), y, shards=2, max_iter=10)
    view = shardopt.train(X[:, ::2], y, shards=2, max_iter=10)  # a view, not copied by Python
    assert view.objective == expected.objective
    thawed = pickle.loads(pickle.dumps(np.ascontiguousarray(X[:, ::2])))  # an equal, separate dtype
    assert shardopt.train(thawed, y, shards=2, max_iter=10).objective == expected.objective


def test_reading_options_are_refused_with_arrays():
    X, y = classification(rows=20)
    with pytest.raises(ValueError, match="option 'limit' is about reading files"):
        shardopt.train(X, y, limit=10)
