#!/usr/bin/env python3
"""Every option the documentation names exists, and the protocol version it calls current is the code's.

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
    "--repeat": "bench/python_bench.py",
    "--rate": "scripts/netns-cluster",
    "--node-arg": "scripts/netns-cluster",
    "--system-site-packages": "pyproject.toml",  # python3 -m venv
    "--no-build-isolation": "pyproject.toml",    # pip install
    "--no-index": "tests/python/pip_install.py",  # pip install
    "--nofile": "tests/apps/test_connections.cpp",  # prlimit
}


def help_options(binary):
    def help_of(args):
        out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True)
        return out.stdout

    top = help_of([])
    subcommands = re.findall(r"^  ([a-z][a-z-]*)\s{2,}", top.split("Subcommands:", 1)[1], re.M)
    if not subcommands:
        sys.exit("options_in_help: no subcommands in `shardopt --help`")
    options = set(OPTION.findall(top))
    for sub in subcommands:
        options |= set(OPTION.findall(help_of([sub])))
    return options


def main():
    binary, root = sys.argv[1], pathlib.Path(sys.argv[2])
    known = help_options(binary)
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
    version = re.search(r"protocol_version = (\d+)", (root / "actors/messages.hpp").read_text()).group(1)
    stated = 0
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for found in re.findall(r"(?:current version is|[Pp]rotocol version is) \**(\d+)", line):
                stated += 1
                if found != version:
                    problems.append(f"{path.relative_to(root)}:{number}: says the protocol version is {found}; "
                                    f"actors/messages.hpp says {version}")
    if stated == 0:
        problems.append("the documentation states no current protocol version: is the pattern right?")
    for problem in problems:
        print(problem)
    print(f"{checked} option mentions in {len(files)} files, {len(known)} options in --help")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
