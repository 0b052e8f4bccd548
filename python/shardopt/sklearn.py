"""scikit-learn estimators over `shardopt.train`: fit, predict, GridSearchCV and Pipeline.

    from shardopt.sklearn import LogisticRegression
    clf = LogisticRegression(C=1.0, shards=4).fit(X, y)     # NumPy or SciPy sparse X, any labels
    clf.predict(X_new), clf.predict_proba(X_new), clf.coef_, clf.intercept_

Each estimator trains with `shardopt.train` (so local shards, `nodes=` and the exact sums behave
as they do there) and predicts with the trained `Model.predict`. shardopt minimises the mean loss
over the n training rows plus lambda/2 ||W||^2 + l1 ||W||_1, biases unpenalised; the estimators
take scikit-learn's regularisation parameters and map them onto lambda:

- LogisticRegression, LinearSVC: C as scikit-learn's (C * sum of losses + 1/2 ||W||^2), so
  lambda = 1 / (C n); C = inf is no L2 penalty.
- Ridge, MLPClassifier: alpha as scikit-learn's Ridge (||y - Xw||^2 + alpha ||w||^2) and
  MLPClassifier (mean loss + alpha / (2 n) ||W||^2), so lambda = alpha / n.
- LinearRegression: lambda = 0.
- l1 is shardopt's `--l1` as it is: the weight of ||W||_1 beside the mean loss (OWL-QN, or
  orthant-wise Newton-CG with solver="newton-cg"). C, alpha and l1 combine as an elastic net.

Other parameters are `shardopt train`'s options by their Python names (solver, max_iter, epsilon,
shards, nodes, ...), with the command line's defaults; `options` passes any further keyword of
`shardopt.train` (tls_cert, newton_step, threads, callback, ...). The linear estimators take
fit_intercept (True): False is `shardopt train --no-bias`, the biases held at 0 (intercept_ is
then 0), which makes LinearSVC, and LogisticRegression on two classes, solve LIBLINEAR's problem
without -B (on more, LogisticRegression is multinomial, LIBLINEAR's -s 0 one-vs-rest).
Labels of any kind are mapped through `classes_` to the codes shardopt takes (0/1 for a binary
model, 0..K-1 for K classes).

decision_function and predict_proba are the trained model's own (`Model.decision_function`,
`Model.predict_proba`): the numbers `shardopt eval --predictions` writes for the same rows.
"""

import os as _os
import tempfile as _tempfile
import warnings as _warnings

import numpy as _np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import hash_text, load_model, train

__all__ = ["LogisticRegression", "LinearRegression", "Ridge", "LinearSVC", "MLPClassifier", "HashingVectorizer"]

# Keywords of `shardopt.train` the estimators set from their parameters and the data; `options`
# may not name them (nor any estimator parameter).
_SET_BY_ESTIMATOR = {"model", "lam", "lambda", "classes", "loss", "data", "X_test", "y_test", "no_bias"}

# Below this many rows a fit runs on one shard when `shards` is not given: shards own whole
# canonical blocks, and a handful of rows has fewer blocks than a machine has threads. The sums,
# and so the result, are the same bits for any shard count.
_FEW_ROWS = 64

# The solver ran out of iterations or could not find a step: a result, worth a warning.
_UNCONVERGED = {"max_iterations", "line_search_failed"}


def _lambda_from_c(C, n, name):
    if not C > 0:
        raise ValueError(f"{name}: C must be positive (np.inf for no L2 penalty), got {C!r}")
    return 0.0 if _np.isinf(C) else 1.0 / (C * n)


def _lambda_from_alpha(alpha, n, name):
    if not alpha >= 0:
        raise ValueError(f"{name}: alpha must be 0 or more, got {alpha!r}")
    return alpha / n


class _ShardoptEstimator(BaseEstimator):
    """What every estimator shares: the call to `shardopt.train`, the fitted model, pickling."""

    def _fit_model(self, X, y, model, lam, **settings):
        """Trains on (X, y) with the estimator's parameters plus `settings`; keeps the result."""
        name = type(self).__name__
        options = dict(self.options or {})
        named = {key.replace("-", "_") for key in options}  # train's keywords take dashes too
        taken = sorted(named & (_SET_BY_ESTIMATOR | set(self.get_params()) | set(settings)))
        if taken:
            advice = "use its parameter"
            if taken[0] == "no_bias":
                advice = ("use fit_intercept" if "fit_intercept" in self.get_params()
                          else "a network keeps its biases")
            raise ValueError(f"{name}: options={{'{taken[0]}': ...}} is set by the estimator; {advice}")
        shards = self.shards
        if shards is None and X.shape[0] < _FEW_ROWS:
            shards = 1
        settings.update(max_iter=self.max_iter, epsilon=self.epsilon, shards=shards,
                        nodes=self.nodes)
        if not getattr(self, "fit_intercept", True):  # MLPClassifier has none, as scikit-learn's
            settings.update(no_bias=True)
        result = train(X, y, model=model, lam=lam, **settings, **options)
        reason = result.stop_reason
        if reason in _UNCONVERGED:
            message = result.summary.get("stop_message") or reason
            _warnings.warn(f"{name}: shardopt stopped before converging ({message}); raise "
                           "max_iter or loosen epsilon", ConvergenceWarning)
        self.model_ = result.model
        self.summary_ = result.summary
        self.history_ = result.history
        self.n_iter_ = int(result.iterations if result.iterations is not None else result.steps)
        return result

    def _check_X(self, X):
        check_is_fitted(self, "model_")
        return self._validate_data(X, accept_sparse="csr", dtype=[_np.float64, _np.float32],
                                   reset=False)

    def __getstate__(self):
        # The native Model does not pickle: it travels as the model file `Model.save` writes.
        state = dict(super().__getstate__())  # a copy: the base may hand over __dict__ itself
        model = state.get("model_")
        if model is not None:
            with _tempfile.TemporaryDirectory() as folder:
                path = _os.path.join(folder, "model.bin")
                model.save(path)
                with open(path, "rb") as saved:
                    state["model_"] = saved.read()
        return state

    def __setstate__(self, state):
        saved = state.get("model_")
        if isinstance(saved, bytes):
            with _tempfile.TemporaryDirectory() as folder:
                path = _os.path.join(folder, "model.bin")
                with open(path, "wb") as out:
                    out.write(saved)
                state = dict(state, model_=load_model(path))
        super().__setstate__(state)


class _Classifier(ClassifierMixin, _ShardoptEstimator):
    """A classifier: labels mapped through classes_ to the codes 0..K-1, predictions back."""

    def _validate_classes(self, X, y):
        """Validated X and the codes of y's labels (float64); sets classes_."""
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=[_np.float64, _np.float32])
        check_classification_targets(y)
        self.classes_, codes = _np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs examples of at least two classes; y has "
                             f"one class: {self.classes_[0]!r}")
        return X, codes.astype(_np.float64)

    def predict(self, X):
        """The classes `Model.predict` gives, spelled as the training labels were."""
        X = self._check_X(X)
        return self.classes_[self.model_.predict(X).astype(_np.intp)]


class _LinearClassifier(_Classifier):
    """A linear classifier: one output for two classes, K for K classes."""

    def _fit_linear(self, X, y, binary_model, multiclass_model):
        X, codes = self._validate_classes(X, y)
        k = len(self.classes_)
        lam = _lambda_from_c(self.C, X.shape[0], type(self).__name__)
        if k == 2:
            self._fit_model(X, codes, binary_model, lam, l1=self.l1, solver=self.solver)
        else:
            self._fit_model(X, codes, multiclass_model, lam, l1=self.l1, solver=self.solver,
                            classes=k)
        W, b = self.model_.layers[-1]
        self.coef_ = _np.array(W.T)        # (1 or K) x features
        self.intercept_ = _np.array(b)     # (1 or K,)
        return self

    def decision_function(self, X):
        """Scores X W + b: (n,) for two classes (positive: classes_[1]), (n, K) for K; the model's
        own (Model.decision_function)."""
        X = self._check_X(X)  # NotFittedError before the model is looked at
        return self.model_.decision_function(X)


class LogisticRegression(_LinearClassifier):
    """Logistic regression by shardopt: model "logistic" for two classes, "softmax" (multinomial)
    for more.

    Objective: the mean log-loss over the n rows + lambda/2 ||W||^2 + l1 ||W||_1 with
    lambda = 1 / (C n), which is scikit-learn's C * sum of losses + 1/2 ||W||^2 divided by C n.
    Biases are not penalised.

    Parameters: C (1.0; np.inf: no L2), l1 (0: shardopt's --l1), solver ("auto": newton-cg, or
    owlqn with l1; "lbfgs", "newton-cg", "owlqn"), max_iter (1000), epsilon (1e-6: stop at this
    gradient norm), shards (None: one per hardware thread), nodes (None: local shards; a list of
    "host:port" runs them on `shardopt node` processes), options (a dict of further
    `shardopt.train` keywords), fit_intercept (True; False: no biases, `--no-bias`).

    Attributes: classes_, coef_ ((1 or K) x features), intercept_, n_iter_, n_features_in_,
    model_ (the shardopt Model), summary_ (the `--json` summary), history_ (per iteration).
    """

    def __init__(self, C=1.0, *, l1=0.0, solver="auto", max_iter=1000, epsilon=1e-6, shards=None,
                 nodes=None, options=None, fit_intercept=True):
        self.C = C
        self.fit_intercept = fit_intercept
        self.l1 = l1
        self.solver = solver
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.shards = shards
        self.nodes = nodes
        self.options = options

    def fit(self, X, y):
        return self._fit_linear(X, y, "logistic", "softmax")

    def predict_proba(self, X):
        """Class probabilities, (n, K), columns in classes_ order: the model's own
        (Model.predict_proba), the numbers `shardopt eval --predictions` writes."""
        X = self._check_X(X)
        return self.model_.predict_proba(X)

    def predict_log_proba(self, X):
        return _np.log(self.predict_proba(X))


class LinearSVC(_LinearClassifier):
    """A linear SVM with the squared hinge loss by shardopt (model "svm"): binary for two classes,
    one-vs-rest over K classes (the K losses summed), as scikit-learn's LinearSVC.

    Objective: the mean over the n rows of the squared hinge (summed over the classes) +
    lambda/2 ||W||^2 + l1 ||W||_1 with lambda = 1 / (C n). Unlike LIBLINEAR's, the biases are
    not penalised. No predict_proba.

    Parameters and attributes as LogisticRegression's.
    """

    def __init__(self, C=1.0, *, l1=0.0, solver="auto", max_iter=1000, epsilon=1e-6, shards=None,
                 nodes=None, options=None, fit_intercept=True):
        self.C = C
        self.fit_intercept = fit_intercept
        self.l1 = l1
        self.solver = solver
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.shards = shards
        self.nodes = nodes
        self.options = options

    def fit(self, X, y):
        return self._fit_linear(X, y, "svm", "svm")


class _LeastSquares(RegressorMixin, _ShardoptEstimator):
    """Least squares (model "linear") with a given lambda."""

    def _fit_least_squares(self, X, y, lam_of_n):
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=[_np.float64, _np.float32],
                                   y_numeric=True)
        self._fit_model(X, _np.asarray(y, dtype=_np.float64), "linear", lam_of_n(X.shape[0]),
                        l1=self.l1, solver=self.solver)
        W, b = self.model_.layers[-1]
        self.coef_ = _np.array(W[:, 0])    # (features,)
        self.intercept_ = float(b[0])
        return self

    def predict(self, X):
        """`Model.predict`: X W + b."""
        X = self._check_X(X)
        return self.model_.predict(X)


class LinearRegression(_LeastSquares):
    """Ordinary least squares by shardopt (model "linear", lambda = 0): the mean of
    1/2 (x w + b - y)^2 over the rows, + l1 ||w||_1 when l1 > 0 (a lasso with scikit-learn's
    Lasso alpha = l1).

    Parameters: l1, solver, max_iter, epsilon, shards, nodes, options, fit_intercept as
    LogisticRegression's.
    Attributes: coef_ (features,), intercept_ (a float), n_iter_, n_features_in_, model_,
    summary_, history_.
    """

    def __init__(self, *, l1=0.0, solver="auto", max_iter=1000, epsilon=1e-6, shards=None,
                 nodes=None, options=None, fit_intercept=True):
        self.fit_intercept = fit_intercept
        self.l1 = l1
        self.solver = solver
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.shards = shards
        self.nodes = nodes
        self.options = options

    def fit(self, X, y):
        return self._fit_least_squares(X, y, lambda n: 0.0)


class Ridge(_LeastSquares):
    """Ridge regression by shardopt (model "linear"): the mean of 1/2 (x w + b - y)^2 +
    lambda/2 ||w||^2 + l1 ||w||_1 with lambda = alpha / n, which is scikit-learn's
    ||y - Xw - b||^2 + alpha ||w||^2 divided by 2n. The bias is not penalised, as in scikit-learn.

    Parameters: alpha (1.0), and l1, solver, max_iter, epsilon, shards, nodes, options,
    fit_intercept as LogisticRegression's. Attributes as LinearRegression's.
    """

    def __init__(self, alpha=1.0, *, l1=0.0, solver="auto", max_iter=1000, epsilon=1e-6,
                 shards=None, nodes=None, options=None, fit_intercept=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.l1 = l1
        self.solver = solver
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.shards = shards
        self.nodes = nodes
        self.options = options

    def fit(self, X, y):
        name = type(self).__name__
        return self._fit_least_squares(X, y, lambda n: _lambda_from_alpha(self.alpha, n, name))


class MLPClassifier(_Classifier):
    """A multilayer perceptron by shardopt (model "mlp", cross-entropy over a softmax output of
    one unit per class, also for two classes), trained by L-BFGS over the shards or, with
    mode="ps", by parameter servers and workers (docs/parameter-server.md).

    Objective: the mean cross-entropy + lambda/2 ||W||^2 over every layer's weights with
    lambda = alpha / n, scikit-learn's MLPClassifier's alpha.

    Parameters: hidden ((100,): the hidden layer widths, --hidden), activation ("relu" or
    "tanh"), alpha (1e-4), seed (0: the initial weights, and the PS minibatch order), max_iter
    (1000), epsilon (1e-6), shards, nodes, l1 (0: --l1 on the weights, by OWL-QN), solver ("auto",
    "lbfgs" or "owlqn") (mode "lbfgs"); mode ("lbfgs" or "ps"); and for mode
    "ps" workers, ps, optimizer, lr, batch_size, sync, last_step (None: the command line's
    defaults: one worker per hardware thread, 1 PS, "sgd", 0.01, 128, asynchronous, 1000);
    options (further `shardopt.train` keywords).

    Attributes: classes_, coefs_ and intercepts_ (every layer's W, inputs x outputs, and b),
    n_iter_ (iterations, or PS steps), n_features_in_, model_, summary_, history_.
    """

    def __init__(self, hidden=(100,), *, activation="relu", alpha=1e-4, seed=0, max_iter=1000,
                 epsilon=1e-6, shards=None, nodes=None, l1=0.0, solver="auto", mode="lbfgs",
                 workers=None, ps=None, optimizer=None, lr=None, batch_size=None, sync=None,
                 last_step=None, options=None):
        self.hidden = hidden
        self.activation = activation
        self.alpha = alpha
        self.seed = seed
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.shards = shards
        self.nodes = nodes
        self.l1 = l1
        self.solver = solver
        self.mode = mode
        self.workers = workers
        self.ps = ps
        self.optimizer = optimizer
        self.lr = lr
        self.batch_size = batch_size
        self.sync = sync
        self.last_step = last_step
        self.options = options

    def fit(self, X, y):
        name = type(self).__name__
        X, codes = self._validate_classes(X, y)
        lam = _lambda_from_alpha(self.alpha, X.shape[0], name)
        solving = {}
        if self.l1 != 0 or self.solver != "auto":
            if self.mode == "ps":
                raise ValueError(f"{name}: l1 and solver are for mode='lbfgs'; parameter servers "
                                 "use optimizer, lr and batch_size")
            solving = dict(l1=self.l1, solver=self.solver)
        self._fit_model(X, codes, "mlp", lam, **solving, classes=len(self.classes_), loss="cross-entropy",
                        hidden=self.hidden, activation=self.activation, seed=self.seed,
                        mode=self.mode, workers=self.workers, ps=self.ps, optimizer=self.optimizer,
                        lr=self.lr, batch_size=self.batch_size, sync=self.sync,
                        last_step=self.last_step)
        self.coefs_ = [_np.array(W) for W, _ in self.model_.layers]
        self.intercepts_ = [_np.array(b) for _, b in self.model_.layers]
        return self

    def predict_proba(self, X):
        """Class probabilities, (n, K): the softmax of the network's output scores (the model's
        own, Model.predict_proba)."""
        X = self._check_X(X)
        return self.model_.predict_proba(X)

    def predict_log_proba(self, X):
        return _np.log(self.predict_proba(X))


class HashingVectorizer(TransformerMixin, BaseEstimator):
    """Raw text to hashed word counts, as `shardopt train --text COLUMN` hashes a CSV column
    (docs/data.md): MurmurHash3 with the column's name as the namespace, 2^hash_bits columns, words
    lower-cased, `word_pairs` adding each two adjacent words. Stateless: `fit` learns nothing. A
    model trained from a CSV file with `--text review --hash-bits 20` predicts on raw strings
    through `HashingVectorizer(column="review", hash_bits=20)`, or
    `HashingVectorizer.for_model(model, "review")` which reads the model's hashing.
    """

    def __init__(self, column="text", hash_bits=18, word_pairs=False):
        self.column = column
        self.hash_bits = hash_bits
        self.word_pairs = word_pairs

    @classmethod
    def for_model(cls, model, column):
        """The vectorizer of a model (a `Model`) trained on a CSV file of a label and one text
        column, `column` (its header name, or its 0-based index as the training options gave it).
        Refused when the model's rows had other columns too: their features would be missing."""
        hashing = model.hashing
        names = (hashing or {}).get("columns", [])

        def resolve(c):  # a column as a header name (an index names the column at that place)
            c = str(c)
            return names[int(c)] if c.isdigit() and int(c) < len(names) and c not in names else c

        if hashing is None or not names or resolve(column) not in [resolve(t) for t in hashing["text"]]:
            raise ValueError(f"the model was not trained on a hashed text column {column!r} of a CSV file")
        if len(names) != 2:
            raise ValueError(f"the model's rows had other columns too ({', '.join(names)}); read raw rows "
                             "with shardopt.read_data, which hashes every column as training did")
        return cls(column=resolve(column), hash_bits=hashing["hash_bits"], word_pairs=hashing["word_pairs"])

    def fit(self, X, y=None):
        self._strings(X)
        return self

    def transform(self, X):
        return hash_text(self._strings(X), column=self.column, hash_bits=self.hash_bits,
                         word_pairs=self.word_pairs)

    def _strings(self, X):
        if isinstance(X, str):
            raise ValueError("HashingVectorizer takes an iterable of strings, got one string")
        return [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in X]

    def _more_tags(self):
        return {"X_types": ["string"], "stateless": True, "requires_y": False}
