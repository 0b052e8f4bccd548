#!/usr/bin/env python3
"""The hashing benchmark: raw text to hashed rows inside shardopt's reader, against the same
documents already hashed to LIBSVM (the pre-processing step hashing replaces) and against
scikit-learn's HashingVectorizer (the outside tool a Python user would reach for).

The documents are the real sets' (bench/real_sets.py: SpamAssassin, WordNet glosses, Debian's
package descriptions in English and in 15 languages), written once as a CSV and a TSV of
`label,text` (every field quoted in both, newlines and tabs turned into spaces) in
build/bench-data/real/raw. Every file is read once before the runs (the page cache warm for all),
then each round runs, one after the other, on each set:
  shardopt convert --text text --word-pairs --hash-bits B of the CSV, on every core, and pinned to
      one core (taskset: its reader then parses with one thread), and of the TSV on every core;
  shardopt convert of the set's LIBSVM file (numbers already hashed), on every core;
  scikit-learn's HashingVectorizer (word unigrams and bigrams, counts, no sign, no norm, the same
      2^B columns) over the same CSV read with Python's csv module, one core.
Each is timed end to end as a process (start, read, hash, and for shardopt writing the binary
dataset), over --repeats rounds (default 3), and the median reported; peak RSS from wait4.
Columns: seconds, ns per non-zero (of that run's own output), peak RSS, and the ratio to the
hashed CSV on every core. The non-zero counts differ slightly between shardopt and scikit-learn:
shardopt's words are runs of ASCII letters, digits and non-ASCII bytes, scikit-learn's are Unicode
\\w runs (the token pattern given below).

    /usr/bin/python3 bench/hashing_bench.py BUILD/apps/shardopt [--sets spam,...] [--repeats 3]
        [--out FILE]
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_sets  # noqa: E402
from sparse_bench import timed_rss  # noqa: E402

SETS = ["spam", "wordnet", "debian-en", "debian-i18n"]  # the words+pairs sets of real_sets

# scikit-learn's side, run as its own process so that its time and RSS are its own.
PEER = r"""
import csv, sys, time
started = time.monotonic()
from sklearn.feature_extraction.text import HashingVectorizer
path, bits = sys.argv[1], int(sys.argv[2])
csv.field_size_limit(1 << 30)
with open(path, newline="", encoding="utf-8") as f:
    rows = list(csv.reader(f))[1:]
vectorizer = HashingVectorizer(n_features=1 << bits, ngram_range=(1, 2), alternate_sign=False, norm=None,
                               token_pattern=r"(?u)\w+", lowercase=True, dtype="float32")
x = vectorizer.transform(text for _, text in rows)
print(x.shape[0], x.nnz, time.monotonic() - started)
"""


def raw_files(name, folder):
    """The set's documents as `label,text` CSV and TSV, written when missing."""
    raw = os.path.join(folder, "raw")
    os.makedirs(raw, exist_ok=True)
    paths = {kind: os.path.join(raw, f"{name}.{kind}") for kind in ("csv", "tsv")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    spec = real_sets.SETS[name]
    documents = real_sets.labelled(spec["source"], folder)
    for kind, path in paths.items():
        partial = path + ".partial"
        with open(partial, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, delimiter="," if kind == "csv" else "\t", quoting=csv.QUOTE_ALL,
                                lineterminator="\n")
            writer.writerow(["label", "text"])
            for label, text in documents:
                writer.writerow([1 if label > 0 else -1, re.sub(r"[\t\r\n]+", " ", text)])
        os.replace(partial, path)
    return paths


def convert(binary, data, output, extra, pinned=False):
    """Runs `shardopt convert`; returns (seconds, RSS bytes, rows, non-zeros)."""
    command = (["taskset", "-c", "0"] if pinned else []) + [binary, "convert", "--data", data, "-o", output] + extra
    seconds, rss, _, stderr = timed_rss(command)
    found = re.search(r"(\d+) rows x (\d+) features, (\d+) non-zero values", stderr)
    if not found:
        sys.exit(f"hashing_bench: no summary from {' '.join(command)}:\n{stderr}")
    return seconds, rss, int(found.group(1)), int(found.group(3))


def peer(path, bits):
    """scikit-learn's HashingVectorizer over the CSV; returns (seconds, RSS bytes, rows, non-zeros)."""
    seconds, rss, stdout, _ = timed_rss(["/usr/bin/python3", "-c", PEER, path, str(bits)])
    rows, nonzeros, _ = stdout.split()
    return seconds, rss, int(rows), int(nonzeros)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--data", default="build/bench-data")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", default="bench/results/hashing.json")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    folder = os.path.join(options.data, "real")
    scratch = os.path.join(options.data, "scratch")
    os.makedirs(scratch, exist_ok=True)
    results = []
    header = (f"{'set':<13} {'run':<44} {'s':>7} {'ns/nnz':>7} {'non-zeros':>11} {'RSS MB':>7} {'vs hashed CSV':>13}")
    print(header)
    for name in options.sets.split(","):
        if name not in SETS:
            sys.exit(f"hashing_bench: unknown set {name} (choose from {', '.join(SETS)})")
        bits = real_sets.SETS[name]["bits"]
        paths = raw_files(name, folder)
        libsvm, _ = real_sets.build(name, folder)
        out = os.path.join(scratch, f"{name}-hashed.shoptbin")
        hashing = ["--text", "text", "--word-pairs", "--hash-bits", str(bits)]
        configs = [
            ("shardopt, hashed CSV (2 cores)", lambda: convert(options.binary, paths["csv"], out, hashing)),
            ("shardopt, hashed CSV (1 core)", lambda: convert(options.binary, paths["csv"], out, hashing, pinned=True)),
            ("shardopt, hashed TSV (2 cores)", lambda: convert(options.binary, paths["tsv"], out, hashing)),
            ("shardopt, LIBSVM already hashed (2 cores)",
             lambda: convert(options.binary, libsvm, out, ["--features", str(1 << bits)])),
            ("scikit-learn HashingVectorizer (1 core)", lambda: peer(paths["csv"], bits)),
        ]
        for path in (paths["csv"], paths["tsv"], libsvm):  # warm the page cache for every run alike
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
        rounds = [[run() for _, run in configs] for _ in range(max(options.repeats, 1))]
        runs = []
        for i, (label, _) in enumerate(configs):
            seconds = sorted(r[i][0] for r in rounds)[len(rounds) // 2]
            _, rss, rows, nonzeros = rounds[-1][i]
            runs.append((label, (seconds, max(r[i][1] for r in rounds), rows, nonzeros)))
        os.remove(out)
        base = runs[0][1][0]
        size = os.path.getsize(paths["csv"])
        print(f"{name} (2^{bits}, raw CSV {size / 1e6:.1f} MB, LIBSVM {os.path.getsize(libsvm) / 1e6:.1f} MB)")
        for label, (seconds, rss, rows, nonzeros) in runs:
            print(f"{'':<13} {label:<44} {seconds:>7.2f} {seconds / nonzeros * 1e9:>7.0f} {nonzeros:>11,} "
                  f"{rss / 1e6:>7.0f} {seconds / base:>12.2f}x")
            results.append({"set": name, "bits": bits, "raw_csv_bytes": size, "run": label, "seconds": seconds,
                            "ns_per_nonzero": seconds / nonzeros * 1e9, "rows": rows, "nonzeros": nonzeros,
                            "rss_bytes": rss, "over_hashed_csv": seconds / base})
    os.makedirs(os.path.dirname(options.out) or ".", exist_ok=True)
    with open(options.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"written to {options.out}")


if __name__ == "__main__":
    main()
