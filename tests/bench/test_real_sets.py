"""The real-data suite's builders (bench/real_sets.py) on small samples of each source: the rows,
labels and hashed features they build, against hand-counted tokens and MurmurHash3 values."""

import os
import sys
import tempfile

import pytest
from sklearn.utils import murmurhash3_32

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import real_sets  # noqa: E402

PACKAGES = """Package: libfoo1
Version: 1.0-1
Section: libs
Description-md5: 0001

Package: foo-utils
Section: utils
Description-md5: 0002

Package: pyfoo
Section: contrib/python
"""

TRANSLATION_EN = """Package: libfoo1
Description-md5: 0001
Description-en: Foo library
 Shared objects of the Foo library.
 .
 Foo foo.

Package: foo-utils
Description-md5: 0002
Description-en: Tools for Foo
 Command line tools.

Package: not-in-packages
Description-md5: 0003
Description-en: Orphan
 Never listed.
"""

TRANSLATION_FR = """Package: foo-utils
Description-md5: 0002
Description-fr: Outils pour Foo
 Outils en ligne de commande.
"""

WORDNET_NOUN = """  1 This software and database is being provided to you, the LICENSEE, by  
  2 Princeton University under the following license.  
02691156 06 n 01 airplane 0 001 @ 02686568 n 0000 | an aircraft that has a fixed wing; "he flew an airplane"  
09366317 17 n 01 natural_object 0 000 | an object occurring naturally  
"""

EMAIL = b"From: someone@example.org\nSubject: Cheap MEDS now\nX-Other: ignored header words\n\nBuy cheap meds. Cheap!\n"


def test_tokens_and_features_of_each_kind():
    assert real_sets.tokens("Hello, WORLD: hello-again 42") == ["hello", "world", "hello", "again", "42"]
    assert real_sets.features_of("New York new", "words+pairs") == ["new", "york", "new", "new york", "york new"]
    assert real_sets.features_of("ab", "chars") == [" ab", "ab ", " ab "]
    with pytest.raises(ValueError):
        real_sets.features_of("x", "trigrams")


def test_feature_index_is_murmurhash3_modulo_the_dimension_from_one():
    for feature in ["new", "new york", " ab ", "élan", ""]:
        h = murmurhash3_32(feature.encode("utf-8"), seed=0, positive=True)
        assert real_sets.feature_index(feature, 18) == (h % (1 << 18)) + 1
    # A value computed independently (MurmurHash3_x86_32("hello", seed 0) = 0x248bfa47).
    assert murmurhash3_32(b"hello", seed=0, positive=True) == 0x248BFA47
    assert real_sets.feature_index("hello", 20) == (0x248BFA47 & ((1 << 20) - 1)) + 1


def test_rows_count_binary_and_tf_values_and_collisions_add_up():
    index_of = real_sets.hasher(20)
    row = real_sets.hashed_row("cheap cheap meds", "words", "tf", index_of)
    assert row == sorted([(index_of("cheap"), 2), (index_of("meds"), 1)])
    row = real_sets.hashed_row("cheap cheap meds", "words", "binary", index_of)
    assert row == sorted([(index_of("cheap"), 1), (index_of("meds"), 1)])
    # In one column, every feature hashes alike: their counts add up.
    assert real_sets.hashed_row("a b c a", "words", "binary", lambda feature: 1) == [(1, 3)]
    assert real_sets.hashed_row("a b c a", "words", "tf", lambda feature: 1) == [(1, 4)]


def test_debian_descriptions_take_their_sections_from_packages():
    documents = real_sets.debian_documents(PACKAGES, [("en", TRANSLATION_EN), ("fr", TRANSLATION_FR)])
    assert documents == [
        ("en", "libs", "Foo library Shared objects of the Foo library. Foo foo."),
        ("en", "utils", "Tools for Foo Command line tools."),
        ("fr", "utils", "Outils pour Foo Outils en ligne de commande."),
    ]
    assert real_sets.sections_of(PACKAGES)["pyfoo"] == "python"  # the archive area is dropped
    labels = [1 if section in real_sets.LIBRARY_SECTIONS else -1 for _, section, _ in documents]
    assert labels == [1, -1, -1]
    assert [1 if language in real_sets.ROMANCE else -1 for language, _, _ in documents] == [-1, -1, 1]


def test_wordnet_glosses_with_their_lexicographer_files():
    documents = real_sets.wordnet_documents([WORDNET_NOUN])
    assert documents == [(6, 'an aircraft that has a fixed wing; "he flew an airplane"'),
                         (17, "an object occurring naturally")]
    assert [1 if lexfile == real_sets.ARTIFACT else -1 for lexfile, _ in documents] == [1, -1]


def test_spam_takes_subject_and_body_and_labels_by_folder():
    with tempfile.TemporaryDirectory() as folder:
        for name, spam in (("easy-ham-1", False), ("spam-2", True)):
            os.makedirs(os.path.join(folder, name))
            with open(os.path.join(folder, name, "00001.abc.txt"), "wb") as f:
                f.write(EMAIL)
            with open(os.path.join(folder, name, "00001.abc.json"), "wb") as f:
                f.write(b'{"ignored": true}')
        documents = real_sets.spam_documents(folder)
    assert [spam for spam, _ in documents] == [False, True]
    assert documents[0][1] == "Cheap MEDS now\nBuy cheap meds. Cheap!\n"
    index_of = real_sets.hasher(18)
    row = real_sets.hashed_row(documents[0][1], "words+pairs", "tf", index_of)
    expected = {}
    for feature in ["cheap", "meds", "now", "buy", "cheap", "meds", "cheap",
                    "cheap meds", "meds now", "now buy", "buy cheap", "cheap meds", "meds cheap"]:
        expected[index_of(feature)] = expected.get(index_of(feature), 0) + 1
    assert row == sorted(expected.items())


def test_a_set_is_written_as_libsvm_with_its_description(monkeypatch):
    with tempfile.TemporaryDirectory() as folder:
        monkeypatch.setitem(real_sets.SETS, "sample", {"source": "wordnet", "features": "words", "values": "binary",
                                                       "bits": 10})
        monkeypatch.setattr(real_sets, "wordnet_texts", lambda: [WORDNET_NOUN])
        path, meta = real_sets.build("sample", folder)
        with open(path) as f:
            lines = f.read().splitlines()
    assert meta["rows"] == 2 and meta["positives"] == 1 and meta["features"] == 1024
    assert meta["nonzeros"] == sum(len(line.split()) - 1 for line in lines)
    labels = sorted(line.split()[0] for line in lines)
    assert labels == ["+1", "-1"]
    for line in lines:
        indices = [int(pair.split(":")[0]) for pair in line.split()[1:]]
        assert indices == sorted(set(indices)) and all(1 <= i <= 1024 for i in indices)


@pytest.mark.parametrize("arguments, message", [
    (["--sets", "debian"], "--sets: unknown set 'debian' (expected some of spam, wordnet, debian-en"),
    (["--sets", "spam,", "--l1"], "--sets: unknown set ''"),
    (["--reg", "medium"], "--reg: unknown regularisation 'medium'"),
])
def test_the_benchmark_refuses_unknown_sets_and_regularisations_before_any_run(arguments, message):
    import subprocess
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "real_bench.py")
    with tempfile.TemporaryDirectory() as data:
        done = subprocess.run([sys.executable, script, "/nonexistent/shardopt", "--data", data, *arguments],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert message in done.stderr
        assert os.listdir(data) == []  # nothing built or run
