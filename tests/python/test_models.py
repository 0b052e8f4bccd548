"""Saved models from Python: load_model, predict, evaluate and save agree with the CLI's eval."""

import json
import subprocess

import numpy as np
import pytest

import shardopt
from conftest import classification, write_csv


def test_a_saved_model_evaluates_as_the_cli_does(tmp_path, binary):
    X, y = classification(rows=240, seed=3)
    y = np.where(y == 2, 7.0, np.where(y == 1, 3.0, -1.0))  # labels spelled by the data, not 0..K-1
    X2 = X[:, :4]
    path = str(tmp_path / "model.bin")
    result = shardopt.train(X2[:200], y[:200] > 0, model="logistic", lam=1e-2, shards=2, save=path)
    model = shardopt.load_model(path)
    np.testing.assert_array_equal(model.theta, result.theta)
    assert model.kind == "logistic" and model.features == 4 and model.classes == [0.0, 1.0]

    held_out = (y[200:] > 0).astype(float)
    csv = write_csv(tmp_path / "test.csv", X2[200:], held_out)
    done = subprocess.run([binary, "eval", "--model-file", path, "--data", csv, "--json"],
                          capture_output=True, text=True, check=True)
    expected = json.loads(done.stdout)
    got = model.evaluate(X2[200:], held_out)
    assert got == expected
    predicted = model.predict(X2[200:])
    assert set(np.unique(predicted)) <= {0.0, 1.0}
    assert np.mean(predicted == held_out) == pytest.approx(expected["accuracy"])


def test_predictions_spell_the_training_labels():
    X, y = classification(rows=200, classes=2, seed=4)
    labels = np.where(y > 0, 5.0, -3.0)
    result = shardopt.train(X, labels, model="svm", lam=1e-3, shards=2)
    assert set(np.unique(result.model.predict(X))) <= {5.0, -3.0}
    assert result.model.classes == [-3.0, 5.0]


def test_save_round_trips_and_refuses_a_bad_path(tmp_path):
    X, y = classification(rows=100)
    model = shardopt.train(X, y, shards=2, max_iter=10).model
    path = str(tmp_path / "again.bin")
    model.save(path)
    np.testing.assert_array_equal(shardopt.load_model(path).theta, model.theta)
    with pytest.raises(RuntimeError, match="again.bin"):
        model.save(str(tmp_path / "missing-dir" / "again.bin"))
    with pytest.raises(ValueError, match="dimension mismatch"):
        model.predict(X[:, :2])


def test_a_file_that_is_not_a_model_is_a_value_error(tmp_path):
    path = tmp_path / "junk.bin"
    path.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a shardopt model file"):
        shardopt.load_model(str(path))
