"""shardopt.sklearn: scikit-learn's own estimator checks, the C and alpha mappings against
scikit-learn's solvers, the bits of shardopt.train, GridSearchCV and Pipeline on Fashion-MNIST,
probabilities against `shardopt eval`, string labels, pickling, and nodes on loopback."""

import gzip
import json
import os
import pickle
import subprocess
import warnings

import numpy as np
import pytest
import scipy.sparse
import sklearn.linear_model
import sklearn.svm
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import shardopt
from conftest import classification, write_csv
from shardopt.sklearn import LinearRegression, LinearSVC, LogisticRegression, MLPClassifier, Ridge
from test_nodes import nodes

FASHION = "/usr/share/datasets/fashion-mnist"
NAMES = np.array(["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                  "Sneaker", "Bag", "Ankle boot"])


def fashion(split, rows):
    """The first `rows` images of a Fashion-MNIST split as float32 pixels / 255, and the labels."""
    with gzip.open(os.path.join(FASHION, f"{split}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(8 + rows), dtype=np.uint8, offset=8)
    with gzip.open(os.path.join(FASHION, f"{split}-images-idx3-ubyte.gz")) as f:
        pixels = np.frombuffer(f.read(16 + rows * 784), dtype=np.uint8, offset=16)
    return (pixels.reshape(rows, 784) / np.float32(255)).astype(np.float32), labels


def two_classes(split, rows, a, b):
    """Fashion-MNIST's classes a and b among the first `rows`, labelled by name."""
    X, y = fashion(split, rows)
    keep = (y == a) | (y == b)
    return X[keep], NAMES[y[keep]]


def standardized_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32).astype(np.float64), y


@parametrize_with_checks([LogisticRegression(), LinearSVC(), LinearRegression(), Ridge(),
                          MLPClassifier(hidden=(20,))])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


# The mappings: C, alpha and lambda = 0 give scikit-learn's own solutions.

def test_c_is_scikit_learns_c_for_logistic_regression():
    X, y = standardized_breast_cancer()
    for C in (0.1, 1.0):
        ours = LogisticRegression(C=C, epsilon=1e-10).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = sklearn.linear_model.LogisticRegression(C=C, solver="newton-cg", tol=1e-8).fit(X, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-7)
        np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=0, atol=1e-7)
        assert ours.summary_["lambda"] == 1.0 / (C * len(y))
    X, y = load_iris(return_X_y=True)  # three classes: softmax, scikit-learn's multinomial
    ours = LogisticRegression(C=1.0, epsilon=1e-10).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sklearn.linear_model.LogisticRegression(C=1.0, solver="newton-cg", tol=1e-8).fit(X, y)
    assert ours.summary_["model"] == "softmax" and ours.coef_.shape == (3, 4)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-6)


def test_alpha_is_scikit_learns_for_ridge_lambda_0_is_least_squares_and_l1_is_lasso():
    X, y = standardized_breast_cancer()
    target = 2 * X[:, 0] - X[:, 3] + y
    for alpha in (1.0, 100.0):
        ours = Ridge(alpha=alpha, epsilon=1e-10).fit(X, target)
        theirs = sklearn.linear_model.Ridge(alpha=alpha).fit(X, target)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-7)
        assert ours.intercept_ == pytest.approx(theirs.intercept_, abs=1e-9)
    ours = LinearRegression(epsilon=1e-10).fit(X, target)
    theirs = sklearn.linear_model.LinearRegression().fit(X, target)
    assert ours.summary_["lambda"] == 0
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)
    assert ours.score(X, target) == pytest.approx(theirs.score(X, target), abs=1e-12)
    # l1 beside the mean of 1/2 (x w + b - y)^2 is scikit-learn's Lasso alpha.
    ours = LinearRegression(l1=0.1, solver="newton-cg", epsilon=1e-10).fit(X, target)
    theirs = sklearn.linear_model.Lasso(alpha=0.1, tol=1e-12, max_iter=100000).fit(X, target)
    assert ours.summary_["stop_reason"] == "converged"
    np.testing.assert_array_equal(ours.coef_ != 0, theirs.coef_ != 0)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-9)


def test_linear_svc_minimises_scikit_learns_objective():
    # LIBLINEAR penalises the bias (scaled by intercept_scaling) and shardopt does not, so the
    # solutions differ a little: shardopt's must be at least as good under the unpenalised bias.
    X, y = standardized_breast_cancer()
    t = np.where(y == 1, 1.0, -1.0)

    def objective(w, b, C):
        margins = np.maximum(0, 1 - t * (X @ w + b))
        return np.mean(margins ** 2) + w @ w / (2 * C * len(y))

    for C in (0.1, 1.0):
        ours = LinearSVC(C=C, epsilon=1e-10).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = sklearn.svm.LinearSVC(C=C, tol=1e-12, max_iter=100000,
                                           intercept_scaling=100).fit(X, y)
        mine = objective(ours.coef_[0], ours.intercept_[0], C)
        assert mine == pytest.approx(ours.summary_["objective"], rel=1e-12)
        assert mine <= objective(theirs.coef_[0], theirs.intercept_[0], C) + 1e-12
        assert np.mean(ours.predict(X) == y) >= np.mean(theirs.predict(X) == y) - 0.005


def test_fit_intercept_false_solves_liblinears_problem_and_least_squares_through_0():
    # Without a bias, LIBLINEAR's problem (no -B) is shardopt's exactly: the same solutions.
    X, y = standardized_breast_cancer()
    # Columns not centred, so that a missing bias changes the solution; floats, as shardopt reads them.
    shifted = (X + 0.5).astype(np.float32).astype(np.float64)
    for C in (0.1, 1.0):
        ours = LogisticRegression(C=C, epsilon=1e-10, fit_intercept=False).fit(shifted, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = sklearn.linear_model.LogisticRegression(C=C, solver="liblinear", tol=1e-12,
                                                             max_iter=100000,
                                                             fit_intercept=False).fit(shifted, y)
        assert ours.summary_["biases"] is False and ours.intercept_.tolist() == [0.0]
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)
        fitted = LogisticRegression(C=C, epsilon=1e-10).fit(shifted, y)
        assert np.abs(fitted.coef_ - ours.coef_).max() > 1e-3  # the bias mattered
    for C in (0.1, 1.0):
        ours = LinearSVC(C=C, epsilon=1e-10, fit_intercept=False).fit(shifted, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # (the primal solver: its dual one stops 1e-2 away here)
            theirs = sklearn.svm.LinearSVC(C=C, tol=1e-12, max_iter=1000000, dual=False,
                                           fit_intercept=False).fit(shifted, y)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)
    X, y = load_iris(return_X_y=True)  # softmax: every class's bias held at 0
    ours = LogisticRegression(C=1.0, epsilon=1e-10, fit_intercept=False).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sklearn.linear_model.LogisticRegression(C=1.0, solver="newton-cg", tol=1e-10,
                                                         fit_intercept=False).fit(X, y)
    assert ours.intercept_.tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)
    # Least squares through the origin: the normal equations.
    X, y = standardized_breast_cancer()
    shifted = (X + 0.5).astype(np.float32).astype(np.float64)
    target = 2 * X[:, 0] - X[:, 3] + y
    exact = np.linalg.lstsq(shifted, target, rcond=None)[0]
    ours = LinearRegression(epsilon=1e-10, solver="newton-cg", fit_intercept=False).fit(shifted, target)
    assert ours.intercept_ == 0.0
    np.testing.assert_allclose(ours.coef_, exact, rtol=0, atol=1e-6)
    # (L-BFGS creeps along this problem's long valley: the objective, not every weight, to 1e-10.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = LinearRegression(epsilon=1e-10, solver="lbfgs", fit_intercept=False).fit(shifted, target)
    assert ours.intercept_ == 0.0
    assert ours.summary_["objective"] == pytest.approx(0.5 * np.mean((shifted @ exact - target) ** 2), rel=1e-10)
    # With l1 (OWL-QN and orthant-wise Newton-CG): scikit-learn's Lasso without an intercept.
    theirs = sklearn.linear_model.Lasso(alpha=0.1, tol=1e-12, max_iter=100000,
                                        fit_intercept=False).fit(shifted, target)
    for solver in ("owlqn", "newton-cg"):
        ours = LinearRegression(l1=0.1, solver=solver, epsilon=1e-10,
                                fit_intercept=False).fit(shifted, target)
        assert ours.intercept_ == 0.0
        np.testing.assert_array_equal(ours.coef_ != 0, theirs.coef_ != 0)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-6)


# The estimators are shardopt.train, to the bit.

def test_attributes_are_the_bits_of_shardopt_train():
    X, y = classification(rows=400, features=7, classes=3, seed=5)
    n = len(y)
    softmax = LogisticRegression(C=0.5, shards=3, max_iter=50).fit(X, y)
    direct = shardopt.train(X, y, model="softmax", lam=1 / (0.5 * n), shards=3, max_iter=50)
    np.testing.assert_array_equal(softmax.coef_, direct.weights.T)
    np.testing.assert_array_equal(softmax.intercept_, direct.biases)
    assert softmax.n_iter_ == direct.iterations and softmax.n_features_in_ == 7

    binary = y > 0
    svm = LinearSVC(C=2.0, l1=1e-3, shards=2).fit(X, binary)
    direct = shardopt.train(X, binary.astype(float), model="svm", lam=1 / (2.0 * n), l1=1e-3,
                            shards=2)
    np.testing.assert_array_equal(svm.coef_, direct.weights.T)
    np.testing.assert_array_equal(svm.intercept_, direct.biases)
    assert svm.summary_["solver"] == "owlqn" and list(svm.classes_) == [False, True]

    ridge = Ridge(alpha=3.0, solver="lbfgs").fit(X, X[:, 0] - y)
    direct = shardopt.train(X, X[:, 0] - y, model="linear", lam=3.0 / n, solver="lbfgs")
    np.testing.assert_array_equal(ridge.coef_, direct.weights[:, 0])
    assert ridge.intercept_ == direct.biases[0]
    np.testing.assert_array_equal(ridge.predict(X), direct.model.predict(X))

    mlp = MLPClassifier(hidden=(6, 5), activation="tanh", alpha=0.2, seed=3, max_iter=40).fit(X, y)
    direct = shardopt.train(X, y, model="mlp", hidden=[6, 5], activation="tanh", lam=0.2 / n,
                            seed=3, max_iter=40, classes=3)
    np.testing.assert_array_equal(mlp.model_.theta, direct.theta)
    assert [W.shape for W in mlp.coefs_] == [(7, 6), (6, 5), (5, 3)]

    sparse_mlp = MLPClassifier(hidden=(6,), alpha=0.2, l1=1e-2, solver="owlqn", max_iter=40).fit(X, y)
    direct = shardopt.train(X, y, model="mlp", hidden=[6], lam=0.2 / n, l1=1e-2, solver="owlqn",
                            max_iter=40, classes=3)
    np.testing.assert_array_equal(sparse_mlp.model_.theta, direct.theta)
    assert sparse_mlp.summary_["solver"] == "owlqn" and sparse_mlp.summary_["l1"] == 1e-2
    with pytest.raises(ValueError, match="l1 and solver are for mode='lbfgs'"):
        MLPClassifier(hidden=(6,), l1=1e-2, mode="ps").fit(X, y)


def test_scores_and_probabilities_agree_with_model_predict():
    X, y = fashion("train", 2000)
    Xt, _ = fashion("t10k", 500)
    softmax = LogisticRegression(C=0.1, max_iter=20).fit(X, y)
    np.testing.assert_array_equal(softmax.classes_[softmax.decision_function(Xt).argmax(axis=1)],
                                  softmax.predict(Xt))
    np.testing.assert_array_equal(softmax.predict(Xt), softmax.model_.predict(Xt))
    binary = LinearSVC(C=0.1, max_iter=20).fit(X, y == 7)
    np.testing.assert_array_equal(binary.classes_[(binary.decision_function(Xt) > 0).astype(int)],
                                  binary.predict(Xt))
    mlp = MLPClassifier(hidden=(16,), max_iter=30).fit(X, y)
    np.testing.assert_array_equal(mlp.classes_[mlp.predict_proba(Xt).argmax(axis=1)], mlp.predict(Xt))
    # CSR rows give the dense rows' predictions and scores.
    sparse = scipy.sparse.csr_matrix(Xt)
    np.testing.assert_array_equal(softmax.predict(sparse), softmax.predict(Xt))
    np.testing.assert_allclose(softmax.decision_function(sparse), softmax.decision_function(Xt),
                               rtol=1e-12, atol=1e-12)


def eval_cli(binary, model_path, data_path, predictions=None):
    extra = ["--predictions", predictions] if predictions else []
    done = subprocess.run([binary, "eval", "--model-file", model_path, "--data", data_path, "--json", *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_probabilities_give_the_objective_and_accuracy_of_shardopt_eval(tmp_path, binary):
    # `shardopt eval` prints the mean loss (+ lambda/2 ||W||^2) and the accuracy of a saved model
    # (the loss is -log of predict_proba's probability of the true class), and with --predictions
    # each row's probabilities: predict_proba's, to the bit.
    X, y = two_classes("train", 6000, 2, 4)
    Xt, yt = two_classes("t10k", 2000, 2, 4)
    Xk, yk = fashion("train", 2000)
    Xtk, ytk = fashion("t10k", 400)
    cases = [(LogisticRegression(C=0.3, max_iter=30).fit(X, y), Xt, yt),
             (LogisticRegression(C=0.3, max_iter=30).fit(Xk, NAMES[yk]), Xtk, NAMES[ytk]),
             (MLPClassifier(hidden=(16,), alpha=1e-3, max_iter=30).fit(Xk, NAMES[yk]), Xtk, NAMES[ytk])]
    for i, (estimator, Xe, ye) in enumerate(cases):
        codes = np.searchsorted(estimator.classes_, ye)
        assert (estimator.classes_[codes] == ye).all()
        model = str(tmp_path / f"model{i}.bin")
        estimator.model_.save(model)
        written = str(tmp_path / f"predictions{i}.csv")
        expected = eval_cli(binary, model, write_csv(tmp_path / f"test{i}.csv", Xe, codes), written)
        # predict_proba is the CLI's: the probabilities `eval --predictions` writes, to the bit.
        with open(written) as f:
            header = f.readline().strip().split(",")
            table = np.loadtxt(f, delimiter=",", ndmin=2)
        assert header == ["prediction"] + [f"p_{k}" for k in range(len(estimator.classes_))]
        np.testing.assert_array_equal(estimator.predict_proba(Xe), table[:, 1:])
        np.testing.assert_array_equal(estimator.classes_[table[:, 0].astype(int)], estimator.predict(Xe))
        probability = estimator.predict_proba(Xe)[np.arange(len(codes)), codes]
        penalty = sum((W ** 2).sum() for W, _ in estimator.model_.layers) * estimator.model_.lam / 2
        assert np.mean(-np.log(probability)) + penalty == pytest.approx(expected["objective"], rel=1e-9)
        assert estimator.score(Xe, ye) == expected["accuracy"]
        assert expected["examples"] == len(ye)


# scikit-learn's machinery: GridSearchCV, Pipeline, labels, pickling.

def test_grid_search_over_c_and_l1_on_fashion_mnist():
    X, y = two_classes("train", 10000, 2, 4)      # pullovers and coats, about 2,000
    Xt, yt = two_classes("t10k", 4000, 2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(LogisticRegression(max_iter=300), {"C": [0.01, 1.0], "l1": [0.0, 1e-3]},
                              cv=3).fit(X, y)
        refit = LogisticRegression(max_iter=300, **search.best_params_).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    # The refit best estimator is a fresh fit with the best parameters, to the bit.
    np.testing.assert_array_equal(search.best_estimator_.coef_, refit.coef_)
    assert search.best_estimator_ is not search.estimator and search.estimator.C == 1.0
    # L1 zeroes weights: every l1 > 0 candidate refit is sparser than its l1 = 0 twin.
    for C in (0.01, 1.0):
        dense = LogisticRegression(C=C, max_iter=300).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sparse = LogisticRegression(C=C, l1=1e-3, max_iter=300).fit(X, y)
        assert np.count_nonzero(sparse.coef_) < 0.75 * np.count_nonzero(dense.coef_)
    # On the held-out images, as good as scikit-learn's own solver at the best C (to 1.5 points).
    theirs = sklearn.linear_model.LogisticRegression(C=search.best_params_["C"], max_iter=3000)
    theirs.fit(X, y)
    assert search.score(Xt, yt) >= theirs.score(Xt, yt) - 0.015
    assert set(search.predict(Xt)) == {"Pullover", "Coat"}


def test_pipeline_with_a_standard_scaler():
    X, y = fashion("train", 2000)
    Xt, yt = fashion("t10k", 1000)
    pipeline = make_pipeline(StandardScaler(), LogisticRegression(C=0.05)).fit(X, NAMES[y])
    estimator = pipeline[-1]
    codes = np.searchsorted(estimator.classes_, NAMES[y])   # classes_ sorts the names
    scaled = StandardScaler().fit(X)
    direct = shardopt.train(scaled.transform(X), codes, model="softmax", lam=1 / (0.05 * len(y)))
    np.testing.assert_array_equal(estimator.coef_, direct.weights.T)
    assert estimator.summary_["stop_reason"] == "converged"
    accuracy = pipeline.score(Xt, NAMES[yt])
    test_codes = np.searchsorted(estimator.classes_, NAMES[yt])
    assert accuracy == direct.model.evaluate(scaled.transform(Xt), test_codes)["accuracy"]
    assert accuracy > 0.78   # softmax on 2,000 Fashion-MNIST images: about 0.80
    # clone makes an unfitted twin with the same parameters.
    twin = clone(pipeline)
    assert twin[-1].get_params() == estimator.get_params() and not hasattr(twin[-1], "coef_")


def test_string_labels_round_trip_and_pickle():
    X, y = classification(rows=300, features=5, classes=3, seed=8)
    words = np.array(["zebra", "ant", "moth"], dtype=object)[y.astype(int)]
    for estimator in (LogisticRegression(C=2.0), LinearSVC(), MLPClassifier(hidden=(8,), max_iter=50)):
        named = clone(estimator).fit(X, words)
        coded = clone(estimator).fit(X, np.searchsorted(["ant", "moth", "zebra"], words))
        assert list(named.classes_) == ["ant", "moth", "zebra"]
        np.testing.assert_array_equal(named.model_.theta, coded.model_.theta)
        predicted = named.predict(X)
        np.testing.assert_array_equal(predicted, named.classes_[coded.predict(X)])
        assert named.score(X, words) > 0.8
        again = pickle.loads(pickle.dumps(named))
        np.testing.assert_array_equal(again.predict(X), predicted)
        np.testing.assert_array_equal(again.model_.theta, named.model_.theta)
    binary = np.where(y > 0, "yes", "no")
    clf = LogisticRegression().fit(X, binary)
    assert list(clf.classes_) == ["no", "yes"] and clf.coef_.shape == (1, 5)
    assert set(clf.predict(X)) == {"no", "yes"}
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1] > 0.5, clf.predict(X) == "yes")


def test_options_warnings_and_refusals():
    X, y = classification(rows=300, features=5, classes=2, seed=9)
    clf = LogisticRegression(options={"newton_step": "line-search"}).fit(X, y)
    assert clf.summary_["newton_step"] == "line-search"
    with pytest.raises(ValueError, match="options=.'lam'"):
        LogisticRegression(options={"lam": 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="options=.'max_iter'"):
        LogisticRegression(options={"max_iter": 3}).fit(X, y)
    with pytest.raises(ValueError, match="options=.'max_iter'"):  # spelled with dashes, as train takes too
        LogisticRegression(options={"max-iter": 3}).fit(X, y)
    with pytest.raises(ValueError, match="options=.'no_bias'.*fit_intercept"):
        LogisticRegression(options={"no-bias": True}).fit(X, y)
    with pytest.raises(ValueError, match="C must be positive"):
        LogisticRegression(C=0).fit(X, y)
    with pytest.raises(ValueError, match="solver"):   # shardopt's own check of its options
        LogisticRegression(solver="sag").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="max_iterations"):
        MLPClassifier(hidden=(8,), max_iter=2).fit(X, y)
    unpenalised = LogisticRegression(C=np.inf, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert unpenalised.fit(X, y).summary_["lambda"] == 0


def test_parameter_server_mode_is_shardopt_train_in_ps_mode():
    X, y = fashion("train", 3000)
    Xt, yt = fashion("t10k", 1000)
    settings = dict(workers=2, ps=2, sync=True, optimizer="adam", lr=1e-3, batch_size=50,
                    last_step=600)
    mlp = MLPClassifier(hidden=(32,), mode="ps", **settings).fit(X, NAMES[y])
    codes = np.searchsorted(mlp.classes_, NAMES[y])
    direct = shardopt.train(X, codes, model="mlp", hidden=[32], mode="ps", lam=1e-4 / len(y), **settings)
    assert mlp.summary_["mode"] == "ps" and mlp.n_iter_ == 600
    np.testing.assert_array_equal(mlp.model_.theta, direct.theta)  # synchronous: the same bits
    assert mlp.score(Xt, NAMES[yt]) > 0.75   # a 784-32-10 network after 600 steps: about 0.80


def test_two_loopback_nodes_give_the_local_bits(binary):
    X, y = classification(rows=600, features=8, classes=3, seed=11)
    local = [LogisticRegression(C=0.5, shards=4).fit(X, y),
             MLPClassifier(hidden=(10,), shards=4, max_iter=40).fit(X, y)]
    with nodes(binary, 2) as endpoints:
        remote = [clone(estimator).set_params(nodes=endpoints).fit(X, y) for estimator in local]
    for here, there in zip(local, remote):
        assert there.summary_["nodes"] == 2 and there.summary_["shards"] == 4
        assert here.summary_["nodes"] == 0
        np.testing.assert_array_equal(there.model_.theta, here.model_.theta)
        np.testing.assert_array_equal(there.predict_proba(X), here.predict_proba(X))
    np.testing.assert_array_equal(remote[0].coef_, local[0].coef_)
