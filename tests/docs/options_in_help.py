#!/usr/bin/env python3
"""Every option the documentation names exists, the defaults it states are the ones `--help` shows,
and the protocol version it calls current is the code's.

Collects the options of `shardopt --help` and of every subcommand's `--help`, then scans README.md,
CONTRIBUTING.md and docs/*.md for `--option` tokens. A token must be an option of shardopt, or of
one of the other tools the documentation shows (the scripts and benchmarks of this repository,
whose option must appear in the named file, or cmake/ctest). Exits 1 listing each unknown option
with its file and line.

usage: options_in_help.py SHARDOPT_BINARY SOURCE_DIR
"""

import pathlib
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w/.-])--[a-z][a-z0-9_-]*[a-z0-9]")

# Options of other tools, and where the tool defines them (checked below: a rename there fails this
# test too). cmake and ctest are not in this repository.
ELSEWHERE = {
    "--preset": None, "--build": None, "--output-on-failure": None,  # cmake, ctest
    "--short": "scripts/fuzz",
    "--benchmark_filter": "scripts/bench",  # passed on to Google Benchmark
    "--epochs": "bench/mlp_bench.py",
    "--sets": "bench/sparse_bench.py",
    "--reg": "bench/real_bench.py",
    "--bias": "bench/real_bench.py",
    "--huge-pages": "bench/real_bench.py",
    "--liblinear-eps": "bench/real_bench.py",
    "--repeat": "bench/python_bench.py",
    "--rate": "scripts/netns-cluster",
    "--node-arg": "scripts/netns-cluster",
    "--system-site-packages": "pyproject.toml",  # python3 -m venv
    "--no-build-isolation": "pyproject.toml",    # pip install
    "--no-index": "tests/python/pip_install.py",  # pip install
    "--nofile": "tests/apps/commands/test_connections.cpp",  # prlimit
}


def help_texts(binary):
    def help_of(args):
        out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True)
        return out.stdout

    top = help_of([])
    subcommands = re.findall(r"^  ([a-z][a-z-]*)\s{2,}", top.split("Subcommands:", 1)[1], re.M)
    if not subcommands:
        sys.exit("options_in_help: no subcommands in `shardopt --help`")
    return [top] + [help_of([sub]) for sub in subcommands]


def help_options(texts):
    options = set()
    for text in texts:
        options |= set(OPTION.findall(text))
    return options


# `--option TYPE=DEFAULT` (CLI11's help line); a choice option shows `TYPE:{a,b}=DEFAULT`.
HELP_DEFAULT = re.compile(r"^\s+(?:-\w, ?)?(--[a-z][a-z0-9_-]*)\s+\S*?=(\S+)", re.M)
# A default the documentation states: "`--option` (VALUE ...)" or "`--option` (default VALUE ...)",
# or an options table's row "| `--option` | DEFAULT | meaning |" (a word in backticks, or a number).
DOC_DEFAULT = re.compile(r"`(--[a-z][a-z0-9_-]*)`\s*\((?:default:?\s+)?([^);,/ ]+)[^)/]*\)")
DOC_TABLE_DEFAULT = re.compile(r"^\|\s*`(--[a-z][a-z0-9_-]*)[^`]*`\s*\|\s*`?([^`|\s]+)`?[^|]*\|")


def as_number(text):
    if re.fullmatch(r"2\^\d+", text):
        return float(2 ** int(text[2:]))
    try:
        return float(text)
    except ValueError:
        return None


HELP_CHOICES = re.compile(r"^\s+(?:-\w, ?)?(--[a-z][a-z0-9_-]*)\s+\S*?:\{([^}]*)\}", re.M)


def help_defaults(texts):
    """Every default `--help` shows, by option (an option of several subcommands may have several),
    and the choices of choice options."""
    defaults, choices = {}, {}
    for text in texts:
        for option, value in HELP_DEFAULT.findall(text):
            defaults.setdefault(option, set()).add(value)
        for option, listed in HELP_CHOICES.findall(text):
            choices.setdefault(option, set()).update(listed.split(","))
    return defaults, choices


def default_problems(files, root, shown_by_help):
    """Defaults the documentation states that `--help` does not show. Numbers are compared as
    numbers; a word only for a choice option, when it is one of the choices (else it is prose)."""
    defaults, choices = shown_by_help
    problems, checked = [], 0
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for option, stated in DOC_DEFAULT.findall(line) + DOC_TABLE_DEFAULT.findall(line):
                shown = defaults.get(option)
                if not shown:
                    continue
                value = as_number(stated)
                if value is not None:
                    numbers = {as_number(s) for s in shown}
                    checked += 1
                    if value not in numbers:
                        problems.append(f"{path.relative_to(root)}:{number}: says {option} defaults to {stated}; "
                                        f"--help shows {', '.join(sorted(shown))}")
                elif stated in choices.get(option, ()) or (line.startswith("|") and f"`{stated}`" in line
                                                             and all(as_number(x) is None for x in shown)):
                    checked += 1
                    if stated not in shown:
                        problems.append(f"{path.relative_to(root)}:{number}: says {option} defaults to {stated}; "
                                        f"--help shows {', '.join(sorted(shown))}")
    return problems, checked


def main():
    binary, root = sys.argv[1], pathlib.Path(sys.argv[2])
    texts = help_texts(binary)
    known = help_options(texts)
    problems = []
    for option, where in ELSEWHERE.items():
        if where and option not in (root / where).read_text():
            problems.append(f"{where}: defines no {option}, which the documentation uses")
    files = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    checked = 0
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for option in OPTION.findall(line):
                checked += 1
                if option not in known and option not in ELSEWHERE:
                    problems.append(f"{path.relative_to(root)}:{number}: {option} is not an option of shardopt")
    if checked == 0:
        problems.append("no option found in the documentation: is the pattern right?")
    # The protocol version the documentation calls current is the code's.
    version = re.search(r"protocol_version = (\d+)", (root / "actors/wire/messages.hpp").read_text()).group(1)
    stated = 0
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            # Stated in prose, or in a `shardopt status` transcript's PROTOCOL column.
            for found in re.findall(r"(?:current version is|[Pp]rotocol version is) \**(\d+)", line) + \
                    re.findall(r"^\S+:\d+\s+(?:serving|draining)\s+(\d+)\s", line):
                stated += 1
                if found != version:
                    problems.append(f"{path.relative_to(root)}:{number}: says the protocol version is {found}; "
                                    f"actors/wire/messages.hpp says {version}")
    if stated == 0:
        problems.append("the documentation states no current protocol version: is the pattern right?")
    # The defaults the documentation states are the ones `--help` shows.
    wrong, compared = default_problems(files, root, help_defaults(texts))
    problems += wrong
    if compared == 0:
        problems.append("no stated default found in the documentation: is the pattern right?")
    for problem in problems:
        print(problem)
    print(f"{checked} option mentions in {len(files)} files, {len(known)} options in --help, "
          f"{compared} stated defaults compared")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
