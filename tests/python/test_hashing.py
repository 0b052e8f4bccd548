"""Feature hashing from Python: the readers' rows equal an independent implementation of the
documented rule (docs/data.md) on scikit-learn's murmurhash3_32, HashingVectorizer equals the CLI's
--text hashing, and a model keeps its hashing for predictions on raw strings."""

import json
import os
import re
import subprocess
from collections import defaultdict

import numpy as np
import pytest

# scikit-learn is installed by scripts/install-deps: a missing one fails these tests, it does not
# skip them.
from sklearn.utils import murmurhash3_32

import shardopt
from shardopt.sklearn import HashingVectorizer


def h(token, seed):
    return murmurhash3_32(token.encode("utf-8"), seed=seed, positive=True)


def seed_of(name):
    return 0 if name == "" else h(name, 0)


def pair(a, b):
    return ((a * 16777619) & 0xFFFFFFFF) ^ b


def rows_of(X):
    X = X.tocsr()
    out = []
    for r in range(X.shape[0]):
        start, end = X.indptr[r], X.indptr[r + 1]
        out.append({int(c): float(v) for c, v in zip(X.indices[start:end], X.data[start:end])})
    return out


def finish(found, bits):
    row = defaultdict(float)
    for hash_, value in found:
        row[hash_ & ((1 << bits) - 1)] += value
    return {c: v for c, v in row.items() if v != 0}


def vw_rows(lines, bits, pairs):
    """VW text hashed by the rule in docs/data.md, written from that page alone."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        found, by_letter = [], []
        for section in line.split("|")[1:]:
            name, _, features = section.partition(" ")
            weight = 1.0
            if ":" in name:
                name, w = name.split(":")
                weight = float(w)
            seed = seed_of(name)
            for token in features.split():
                token_name, _, value = token.partition(":")
                v = (float(value) if value else 1.0) * weight
                found.append((h(token_name, seed), v))
                by_letter.append((name[:1] or " ", h(token_name, seed), v))
        for a, b in pairs:
            for i, (la, ha, va) in enumerate(by_letter):
                if la != a:
                    continue
                for j, (lb, hb, vb) in enumerate(by_letter):
                    if lb == b and (a != b or j >= i):
                        found.append((pair(ha, hb), va * vb))
        out.append(finish(found, bits))
    return out


def words(text):
    return [w.lower() for w in re.findall(rb"[A-Za-z0-9\x80-\xff]+", text.encode("utf-8"))]


def text_features(text, seed, word_pairs):
    ws = [w.decode("utf-8", "surrogateescape") for w in words(text)]
    found = [(murmurhash3_32(w.encode("utf-8", "surrogateescape"), seed=seed, positive=True), 1.0) for w in ws]
    if word_pairs:
        found += [(murmurhash3_32((a + " " + b).encode("utf-8", "surrogateescape"), seed=seed, positive=True), 1.0)
                  for a, b in zip(ws, ws[1:])]
    return found


VW = [
    "1 'first |words The cat sat:2 |city paris |n price:2.5 stars:4",
    "-1 1 |words a dog:2 a |city:0.5 rome",
    "",
    "1 | plain tokens here |words x",
]


def test_vw_rows_equal_an_independent_implementation(tmp_path):
    path = tmp_path / "sample.vw"
    path.write_text("\n".join(VW) + "\n")
    for bits, pairs in [(18, []), (10, ["wc"]), (12, ["ww", "wn", "  "])]:
        X, y = shardopt.read_data(path, hash_bits=bits, pairs=pairs)
        assert X.shape == (3, 1 << bits)
        assert list(y) == [1, -1, 1]
        assert rows_of(X) == vw_rows(VW, bits, pairs)


def test_csv_rows_equal_an_independent_implementation(tmp_path):
    lines = ['label,price,city,review',
             '1,2.5,Paris,"Great food, GREAT view"',
             '0,1,"New ""York""",plain words here',
             '1,0,,naïve café']
    path = tmp_path / "sample.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bits = 16
    X, y = shardopt.read_data(path, categorical=["city"], text=["review"], word_pairs=True, hash_bits=bits)
    expected = []
    for price, city, review in [(2.5, "Paris", "Great food, GREAT view"), (1.0, 'New "York"', "plain words here"),
                                (0.0, "", "naïve café")]:
        found = [(h("price", 0), price)]
        if city:
            found.append((h(city, seed_of("city")), 1.0))
        found += text_features(review, seed_of("review"), True)
        expected.append(finish(found, bits))
    assert rows_of(X) == expected
    assert list(y) == [1, 0, 1]


def test_hashing_vectorizer_equals_the_cli_text_column(tmp_path):
    texts = ["Great food, great view", "plain words here", "naïve café, Ünïcode", "", "x y z x"]
    path = tmp_path / "t.csv"
    path.write_text("label,notes\n" + "".join(f'{i % 2},"{t}"\n' for i, t in enumerate(texts)), encoding="utf-8")
    for word_pairs in (False, True):
        X, _ = shardopt.read_data(path, text=["notes"], word_pairs=word_pairs, hash_bits=14)
        H = HashingVectorizer(column="notes", hash_bits=14, word_pairs=word_pairs).fit_transform(texts)
        assert H.shape == X.shape
        assert rows_of(H) == rows_of(X)


def test_a_model_keeps_its_hashing_and_predicts_raw_strings_as_eval(tmp_path):
    rng = np.random.default_rng(3)
    good, bad = ["good", "great", "fine", "nice"], ["bad", "awful", "poor", "ugly"]
    rows = []
    for i in range(400):
        label = int(rng.integers(2))
        ws = list(rng.choice(good if label else bad, 3)) + list(rng.choice(good + bad, 2))
        rows.append((label, " ".join(ws)))
    path = tmp_path / "reviews.csv"
    path.write_text("label,review\n" + "".join(f'{l},"{t}"\n' for l, t in rows))
    model_path = tmp_path / "reviews.model"
    r = shardopt.train(data=str(path), model="logistic", text=["review"], word_pairs=True, hash_bits=12,
                       lam=1e-3, save=str(model_path))
    assert r.summary["hashing"] == "2^12 hashed columns, text review, word pairs"
    model = shardopt.load_model(str(model_path))
    assert model.hashing == {"hash_bits": 12, "pairs": [], "categorical": [], "text": ["review"], "word_pairs": True,
                             "columns": ["label", "review"]}
    vectorizer = HashingVectorizer.for_model(model, "review")
    predicted = model.predict(vectorizer.transform([t for _, t in rows]))
    accuracy = float(np.mean(predicted == np.array([l for l, _ in rows])))
    cli = subprocess.run([os.environ["SHARDOPT_BINARY"], "eval", "--model-file", str(model_path), "--data", str(path),
                          "--json"], capture_output=True, text=True, check=True)
    assert accuracy == json.loads(cli.stdout)["accuracy"]
    assert accuracy > 0.9


def test_read_data_with_a_model_hashes_raw_vw_and_categorical_rows_as_eval(tmp_path):
    rng = np.random.default_rng(5)
    good, bad = ["good", "great", "fine", "nice"], ["bad", "awful", "poor", "ugly"]
    vw, csv = [], ["city,label,review"]  # the label not first: read_data is told, as train was
    for i in range(300):
        label = int(rng.integers(2))
        words = " ".join(list(rng.choice(good if label else bad, 2)) + list(rng.choice(good + bad, 2)))
        city = ["paris", "rome", "oslo"][i % 3]
        vw.append(f"{2 * label - 1} |w {words} |c {city}")
        csv.append(f'{city},{label},"{words}"')
    cases = [("r.vw", "\n".join(vw), dict(pairs=["wc"], hash_bits=13)),
             ("r.csv", "\n".join(csv), dict(categorical=["city"], text=["review"], hash_bits=13, label_column=1))]
    for name, text, hashing in cases:
        path = tmp_path / name
        path.write_text(text + "\n")
        model_path = tmp_path / (name + ".model")
        shardopt.train(data=str(path), model="logistic", lam=1e-3, save=str(model_path), **hashing)
        model = shardopt.load_model(str(model_path))
        label_column = hashing.get("label_column", 0)
        X, y = shardopt.read_data(path, model=model, label_column=label_column)
        assert X.shape[1] == model.features
        cli = subprocess.run([os.environ["SHARDOPT_BINARY"], "eval", "--model-file", str(model_path), "--data",
                              str(path), "--label-column", str(label_column), "--json"],
                             capture_output=True, text=True, check=True)
        assert float(np.mean(model.predict(X) == y)) == json.loads(cli.stdout)["accuracy"] > 0.9
        with pytest.raises(ValueError, match="the model was trained on features hashed as 2.13"):
            shardopt.read_data(path, model=model, hash_bits=12, label_column=label_column)
    # Another label column than training's: its values are not the model's labels.
    priced = tmp_path / "p.csv"
    priced.write_text("price,label,review\n" + "".join(f'{i % 7 + 0.5},{i % 2},"w{i % 2} x{i % 5}"\n' for i in range(60)))
    shardopt.train(data=str(priced), model="logistic", text=["review"], hash_bits=10, label_column=1,
                   save=str(tmp_path / "p.model"))
    priced_model = shardopt.load_model(str(tmp_path / "p.model"))
    assert shardopt.read_data(priced, model=priced_model, label_column=1)[1][:3].tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match=r"p.csv:2: label 0.5 is not one of the two training labels.*"
                                         r"label_column and header are the training's"):
        shardopt.read_data(priced, model=priced_model)
    # Dense rows of another width than the model's are refused too.
    dense = tmp_path / "d.csv"
    dense.write_text("".join(f"{i % 2},{i},{i * 0.5}\n" for i in range(40)))
    shardopt.train(data=str(dense), model="logistic", max_iter=5, save=str(tmp_path / "d.model"))
    wide = tmp_path / "w.csv"
    wide.write_text("".join(f"{i % 2},{i},{i * 0.5},1\n" for i in range(40)))
    with pytest.raises(ValueError, match="the model"):
        shardopt.read_data(wide, model=shardopt.load_model(str(tmp_path / "d.model")))


def test_predict_names_x_when_its_width_is_wrong():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(float)
    model = shardopt.train(X, y, model="logistic", max_iter=5).model
    with pytest.raises(ValueError, match="the model has 3 features, X has 4"):
        model.predict(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="the model has 3 features, X has 4"):
        model.evaluate(np.zeros((2, 4)), np.zeros(2))


def test_for_model_resolves_an_index_and_refuses_other_columns(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("label,gloss\n" + "".join(f'{i % 2},"{"good fine" if i % 2 else "bad poor"} x{i}"\n' for i in range(60)))
    shardopt.train(data=str(path), model="logistic", text=["1"], hash_bits=10, save=str(tmp_path / "g.model"))
    model = shardopt.load_model(str(tmp_path / "g.model"))
    by_index = HashingVectorizer.for_model(model, "1")
    assert by_index.column == "gloss"  # the namespace is the header's name, as the CLI hashed it
    X, _ = shardopt.read_data(path, text=["1"], hash_bits=10)
    assert rows_of(by_index.transform([f'{"good fine" if i % 2 else "bad poor"} x{i}' for i in range(60)])) == rows_of(X)
    wide = tmp_path / "w.csv"
    wide.write_text("label,price,gloss\n" + "".join(f'{i % 2},{i},"w{i % 3}"\n' for i in range(60)))
    shardopt.train(data=str(wide), model="logistic", text=["gloss"], hash_bits=10, save=str(tmp_path / "w.model"))
    with pytest.raises(ValueError, match="other columns too"):
        HashingVectorizer.for_model(shardopt.load_model(str(tmp_path / "w.model")), "gloss")


def test_non_finite_values_are_refused_with_file_and_line(tmp_path):
    path = tmp_path / "n.vw"
    path.write_text("1 |a x\n1 |n:1e308 a:10 a:-10\n")
    with pytest.raises(ValueError, match=r"n.vw:2: feature 'a:10': its value times the namespace's weight is not finite"):
        shardopt.read_data(path)
    path.write_text("1 |a x:1e300 y:1e300\n")
    with pytest.raises(ValueError, match=r"n.vw:1: a pair of features \(--pairs aa\)"):
        shardopt.read_data(path, pairs=["aa"])
