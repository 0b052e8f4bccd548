"""shardopt from Python: sharded L-BFGS, Newton-CG and parameter-server training.

    import shardopt
    result = shardopt.train(X, y, model="softmax", lam=1e-4, shards=4)
    result.objective, result.weights, result.history["objective"]
    result.model.predict(X_new)

`train` takes every option of `shardopt train` by its name, with underscores for dashes
(`max_iter=50` is `--max-iter 50`), checked by the same definitions as the command line and the
TOML files. `lam` stands for `--lambda` (a Python keyword). Lists are joined with commas
(`nodes=["hostA:4242", "hostB:4242"]`, `hidden=[256, 128]`). Errors are the command line's
one-line messages: ValueError for bad input, FileNotFoundError for missing files, RuntimeError for
runs that could not finish, TypeError for unknown options.

scikit-learn estimators over `train` (LogisticRegression, LinearRegression, Ridge, LinearSVC,
MLPClassifier) are in the submodule `shardopt.sklearn`, imported on its own: it needs scikit-learn.
"""

import json as _json
import math as _math

import numpy as _np

from ._core import Model, load_model, _hash_text, _is_option, _read_data, _train

__all__ = ["train", "load_model", "read_data", "hash_text", "Model", "Result", "Info"]


class Info:
    """What the iteration callback receives: one metrics row (the `--metrics` line) as attributes.

    L-BFGS and Newton-CG: iteration, f (= objective), grad_norm, grad_norm_inf, step, evaluations,
    hessian_products, seconds. Parameter-server mode (one per log step): step, loss, seconds,
    steps_per_second, examples_per_second, dropped_gradients, staleness_max, staleness_mean, and
    test_accuracy when evaluated; `iteration` is the step and `f` the loss there.
    """

    def __init__(self, row):
        self.__dict__.update(row)
        self.row = row
        if "iteration" not in row and "step" in row:
            self.iteration = row["step"]
        self.f = row.get("objective", row.get("loss"))
        self.grad_norm = row.get("grad_norm", _math.nan)

    def __repr__(self):
        return f"Info({self.row!r})"


class Result:
    """The outcome of `train`.

    Attributes: `summary` (the dict `shardopt train --json` prints), `model` (a `Model`), `history`
    (dict of NumPy arrays, one entry per metrics row: "objective", "grad_norm", "seconds", ...), and
    the summary's main entries as attributes: objective, grad_norm, stop_reason, iterations,
    evaluations, seconds, train_accuracy, test_accuracy (None without a test set).
    """

    def __init__(self, report):
        self.summary = _json.loads(report.summary)
        self.model = report.model
        rows = _json.loads(report.history)
        keys = []
        for row in rows:
            keys.extend(k for k in row if k not in keys)
        self.history = {
            k: _np.array([row.get(k, _math.nan) for row in rows], dtype=float) for k in keys
        }

    def __getattr__(self, name):
        summary = self.__dict__.get("summary", {})
        if name in summary:
            return summary[name]
        if name in ("train_accuracy", "test_accuracy", "train_rmse", "test_rmse", "iterations",
                    "evaluations", "steps"):
            return None
        raise AttributeError(name)

    @property
    def theta(self):
        """The flat parameter vector (a view of the model's, no copy)."""
        return self.model.theta

    @property
    def weights(self):
        """The output layer's weights, (inputs x outputs): for a linear model column k holds
        output k's weights over the features. A view of theta."""
        return self.model.layers[-1][0]

    @property
    def biases(self):
        """The output layer's biases, (outputs,). A view of theta."""
        return self.model.layers[-1][1]

    @property
    def layers(self):
        """Every dense layer's (W, b), first to last; views of theta."""
        return self.model.layers

    def __repr__(self):
        keys = ("stop_reason", "objective", "grad_norm", "iterations", "train_accuracy",
                "test_accuracy")
        return "Result(" + ", ".join(f"{k}={self.summary.get(k)!r}" for k in keys if k in self.summary) + ")"


def _features(X, name):
    """X as _core takes it: a float32/float64 array (2-D, any order) or a CSR tuple."""
    if getattr(X, "format", None) is not None and hasattr(X, "tocsr"):  # a SciPy sparse matrix
        X = X.tocsr()
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must hold real numbers, not {X.dtype}")
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        indices, indptr = X.indices, X.indptr
        if indices.dtype != indptr.dtype:  # one index type for both, as _core reads them
            indices, indptr = indices.astype(_np.int64), indptr.astype(_np.int64)
        return ("csr", X.data, indices, indptr, tuple(int(n) for n in X.shape))
    X = _np.asarray(X)
    if X.dtype not in (_np.float32, _np.float64):
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name} must hold numbers, not {X.dtype}")
        X = X.astype(_np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (examples x features), got {X.ndim} dimensions")
    return X


def _labels(y, name):
    y = _np.asarray(y)
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, not {y.dtype}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per example), got shape {y.shape}")
    return _np.ascontiguousarray(y, dtype=_np.float64)


def _option_value(name, value):
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, _np.generic):
        return value.item()
    return value


# The reading options of `train`, which have no meaning for arrays in memory (the scaling options,
# scale and standardize, do).
_FILE_OPTIONS = {"test", "format", "label_column", "header", "features", "limit", "test_limit",
                 "max_decompressed_gib"}


def train(X=None, y=None, *, X_test=None, y_test=None, callback=None, lam=None, **options):
    """Trains a model; returns a `Result`.

    Data: arrays `X` (NumPy float32/float64 in C or Fortran order, or a SciPy CSR matrix; other
    dtypes and sparse formats are converted) and labels `y`, with an optional test set `X_test`,
    `y_test`; or `data=` a file path, a MNIST-layout directory or "fashion-mnist" (the default when
    no X is given), read by the command line's readers. Labels are raw: encoded exactly as a file's.

    Every option of `shardopt train` by name (underscores for dashes; `lam` for --lambda). Unlike
    the command line, `quiet` defaults to True. `callback(info)` is called on this thread after
    every iteration (PS mode: every log step) with an `Info`; returning False stops the run with
    stop reason "stopped_by_hook". Ctrl-C stops the run at its next pass over the data and raises
    KeyboardInterrupt with the result so far (last accepted theta) as its `result` attribute.
    """
    if lam is not None:
        options["lambda"] = lam
    options.setdefault("quiet", True)
    if X is not None and "data" in options:
        raise ValueError("pass either arrays (X, y) or data=..., not both")
    if X is not None:
        reading = sorted(k for k in options if k in _FILE_OPTIONS and options[k] is not None)
        if reading:
            raise ValueError(f"option '{reading[0]}' is about reading files; with arrays X and y, "
                             "pass the rows you want (slice them) and the test set as X_test, y_test")
    if X is None and (y is not None or X_test is not None):
        raise ValueError("y and X_test need X")
    if X is not None and y is None:
        raise ValueError("X needs its labels y")
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test come together")
    keywords = []
    for name, value in options.items():
        if value is None:
            continue
        if not _is_option(name):
            raise TypeError(f"train() got an unexpected keyword argument '{name}' "
                            f"(`shardopt train` has no option --{name.replace('_', '-')})")
        keywords.append((name, _option_value(name, value)))
    args = [None, None, None, None]
    if X is not None:
        args = [_features(X, "X"), _labels(y, "y"), None, None]
        if X_test is not None:
            args[2:] = [_features(X_test, "X_test"), _labels(y_test, "y_test")]
    hook = None
    if callback is not None:
        hook = lambda row: callback(Info(row))  # noqa: E731
    report, interrupted = _train(keywords, *args, hook)
    result = Result(report)
    if interrupted:
        error = KeyboardInterrupt("shardopt.train interrupted; the result so far is in .result")
        error.result = result
        raise error
    return result


def _predict(self, X):
    """Predictions for the rows of X (scaled as the training data was): the class labels as the
    training data spelled them, or real values for least squares."""
    return self._predict(_features(X, "X"))


def _evaluate(self, X, y):
    """The model on (X, y): a dict with examples, objective, and accuracy (or rmse)."""
    return _json.loads(self._evaluate(_features(X, "X"), _labels(y, "y")))


def _decision_function(self, X):
    """Decision values of the rows of X (scaled as the training data was): (n,) for a binary model
    (positive: the second class) or least squares, (n, K) for K classes."""
    z = self._scores(_features(X, "X"))
    return z[:, 0] if z.shape[1] == 1 else z


def _predict_proba(self, X):
    """Class probabilities of the rows of X, (n, K), in the order of `classes`: logistic and
    softmax models and networks with a softmax output (ValueError for others). The same numbers as
    `shardopt eval --predictions` writes."""
    return self._proba(_features(X, "X"))


Model.predict = _predict
Model.evaluate = _evaluate
Model.decision_function = _decision_function
Model.predict_proba = _predict_proba


def read_data(data, *, format="auto", label_column=0, header="auto", limit=0, hash_bits=0, pairs=(),
              categorical=(), text=(), word_pairs=False, model=None):
    """Reads a file with the command line's readers and reading options: returns (X, y), X a SciPy
    CSR matrix for sparse rows (LIBSVM, hashed VW, or CSV or TSV with string columns) or a float32 NumPy
    array. Hashing is as `shardopt train` does it (docs/data.md): `hash_bits` (default 18 for VW
    input and with `categorical`/`text`), `pairs` (VW's -q), `categorical`, `text`, `word_pairs`.
    With `model=` (a Model), raw rows are hashed as the model's training rows were, as `shardopt
    eval` does, X has the model's width and y holds only labels the model knows (`label_column` and
    `header` are the training's): `model.predict(read_data(path, model=model)[0])`."""
    read = _read_data(str(data), format, int(label_column), header, int(limit), int(hash_bits),
                      list(pairs), list(categorical), list(text), bool(word_pairs), model)
    if read[0] == "dense":
        return read[1], read[2]
    import scipy.sparse as _sparse

    _, values, indices, indptr, shape, y = read
    return _sparse.csr_matrix((values, indices, indptr), shape=shape), y


def hash_text(texts, *, column="text", hash_bits=18, word_pairs=False):
    """The words of each string hashed as `shardopt train --text COLUMN` hashes a CSV column of that
    name: a SciPy CSR matrix of len(texts) x 2^hash_bits (float64 word counts)."""
    import scipy.sparse as _sparse

    texts = [t if isinstance(t, str) else str(t) for t in texts]
    indptr, indices, values = _hash_text(texts, str(column), int(hash_bits), bool(word_pairs))
    return _sparse.csr_matrix((values, indices, indptr), shape=(len(texts), 1 << int(hash_bits)))
