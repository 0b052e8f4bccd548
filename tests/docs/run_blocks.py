#!/usr/bin/env python3
"""Runs every command block of the documentation as written, at small sizes.

usage: run_blocks.py SHARDOPT_BINARY SOURCE_DIR BUILD_DIR

Every ```sh block of README.md, CONTRIBUTING.md and docs/*.md either runs here or is listed in
NOT_RUN with the reason it cannot (it needs a cluster, it is the CI command itself, ...); a block
that is neither fails the test, so a new block is run or explained. So does an indented command
with concrete arguments (not a synopsis such as `shardopt run CONFIG.toml`): nothing would run it. Blocks run in order, each under
`bash -e` in a fresh temporary folder holding a copy of experiments/ and scripts/, with only these
changes:
- `shardopt` and `build/apps/shardopt` name the binary under test, `PYTHONPATH=build/python` the
  build's module, `python3` is Debian's;
- small sizes: Fashion-MNIST runs read 3,000 training and 500 test images (`--limit`, in commands,
  TOML files and Python calls), `--max-iter`/`max-iter` at most 20, `--last-step` at most 200,
  `--rows` at most 20,000, WordNet's nouns (`/usr/share/wordnet/data.noun`) their first 20,000 lines;
- the ports 2222-2229 become free ones.
Whatever a block leaves running is killed when it ends.
"""

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Blocks that cannot run here, by file and the start of their first line, with the reason.
NOT_RUN = {
    ("README.md", "./scripts/demo"): "installs packages and builds from scratch: what CI's clean clone does",
    ("README.md", "scripts/make-certs certs"): "needs a cluster: nodes on hostA and hostB (TLS is tested in test_connections)",
    ("CONTRIBUTING.md", "cmake --preset dev"): "a full build: what the test command itself does",
    ("CONTRIBUTING.md", "scripts/test"): "the test command itself",
    ("CONTRIBUTING.md", "scripts/fuzz --short"): "run by the test command itself",
    ("CONTRIBUTING.md", "scripts/bench"): "the benchmarks: about 25 minutes on 2 cores",
    ("docs/benchmarks.md", "scripts/bench"): "the benchmarks: about 25 minutes on 2 cores",
    ("docs/testing.md", "scripts/test"): "the test command itself",
    ("docs/testing.md", "scripts/fuzz"): "every fuzz target for a minute each; --short runs in the test command",
    ("docs/cluster.md", "scripts/make-certs certs"): "needs a cluster: nodes on several hosts (TLS is tested in test_connections)",
    ("docs/cluster.md", "scripts/netns-cluster"): "needs root and network namespaces: the netns tests run it",
    ("docs/cluster.md", "$ shardopt status"): "a transcript (command and its output); `status` is tested in metrics_endpoint",
    ("docs/parameter-server.md", "# needs a cluster"): "needs a cluster: hostA to hostD",
    ("docs/python.md", "scripts/install-deps"): "installs packages and a virtual environment: the pip_install test does",
}


def blocks(root):
    files = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    for path in files:
        for block in re.findall(r"^```sh\n(.*?)^```", path.read_text(), re.S | re.M):
            yield str(path.relative_to(root)), block


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def small_toml(text):
    text = re.sub(r"(?m)^(max-iter\s*=\s*)(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 20)), text)
    text = re.sub(r"(?m)^(last-step\s*=\s*)(\d+)", lambda m: m.group(1) + str(min(int(m.group(2)), 200)), text)
    if re.search(r'(?m)^data\s*=\s*"fashion-mnist"', text) and not re.search(r"(?m)^limit\s*=", text):
        text = re.sub(r'(?m)^(data\s*=\s*"fashion-mnist")', r"\1\nlimit = 3000\ntest-limit = 500", text, count=1)
    return text


def adapted(block, binary, build):
    ports = {str(p): str(free_port()) for p in range(2222, 2230)}
    block = re.sub(r"\b(222[2-9])\b", lambda m: ports[m.group(1)], block)
    block = re.sub(r"--last-step (\d+)", lambda m: f"--last-step {min(int(m.group(1)), 200)}", block)
    block = re.sub(r"--max-iter (\d+)", lambda m: f"--max-iter {min(int(m.group(1)), 20)}", block)
    block = re.sub(r"--rows (\d+)", lambda m: f"--rows {min(int(m.group(1)), 20000)}", block)
    block = re.sub(r"max_iter=(\d+)", lambda m: f"max_iter={min(int(m.group(1)), 20)}", block)
    # Fashion-MNIST at 3,000 images: after --data in a command without --limit, in Python calls.
    lines = []
    for line in block.split("\n"):
        if "--limit" not in block:
            line = line.replace("--data fashion-mnist", "--data fashion-mnist --limit 3000 --test-limit 500")
        line = line.replace('data="fashion-mnist"', 'data="fashion-mnist", limit=3000, test_limit=500')
        lines.append(line)
    block = "\n".join(lines)
    # `run FILE` takes flags after the file; a sweep reads the copied (small) files.
    block = block.replace("build/apps/shardopt", binary)
    block = re.sub(r"(?m)(^|[\s;&|(])shardopt ", lambda m: m.group(1) + binary + " ", block)
    block = block.replace("PYTHONPATH=build/python", f"PYTHONPATH={build}/python")
    block = block.replace(WORDNET_NOUNS, "wordnet-nouns")  # prepare()'s first lines of it
    block = re.sub(r"(?<![/\w.-])python3 ", "/usr/bin/python3 ", block)
    return block


def prepare(folder, root, binary, build):
    """The temporary folder: small copies of experiments/, scripts/ and a build/apps/shardopt link."""
    shutil.copytree(root / "experiments", folder / "experiments")
    for toml in (folder / "experiments").glob("*.toml"):
        toml.write_text(small_toml(toml.read_text()))
    shutil.copytree(root / "scripts", folder / "scripts")
    (folder / "build" / "apps").mkdir(parents=True)
    os.symlink(binary, folder / "build" / "apps" / "shardopt")
    os.symlink(pathlib.Path(build) / "python", folder / "build" / "python")
    if os.path.exists(WORDNET_NOUNS):
        with open(WORDNET_NOUNS, encoding="latin-1") as nouns:
            head = [line for _, line in zip(range(20000), nouns)]
        (folder / "wordnet-nouns").write_text("".join(head), encoding="latin-1")


WORDNET_NOUNS = "/usr/share/wordnet/data.noun"


# An indented line that is a shardopt command with concrete arguments (no PLACEHOLDER, as in a
# synopsis) is a command block that nothing would run.
INDENTED_COMMAND = re.compile(r"^    (?:\$ )?(?:shardopt|(?:\./)?scripts/\S+|python3)(?: |$)(?!.*\b[A-Z_]{3,}\b)")


def indented_commands(root):
    files = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    for path in files:
        fenced = False
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and INDENTED_COMMAND.match(line):
                yield f"{path.relative_to(root)}:{number}: an indented command block; make it a ```sh block"


def main():
    binary, root, build = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    failed = ran = skipped = 0
    for problem in indented_commands(root):
        print(problem)
        failed += 1
    for name, block in blocks(root):
        first = block.splitlines()[0] if block.strip() else ""
        reason = next((why for (f, start), why in NOT_RUN.items() if f == name and first.startswith(start)), None)
        if reason:
            print(f"{name}: '{first[:60]}': not run: {reason}")
            skipped += 1
            continue
        script = adapted(block, binary, build)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="shardopt-docs-") as folder:
            prepare(pathlib.Path(folder), root, binary, build)
            process = subprocess.Popen(["/bin/bash", "-e", "-c", script], cwd=folder, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                       env={**os.environ, "SHARDOPT_BINARY": binary})
            try:
                out, _ = process.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                out = "timed out after 600 s"
                process.returncode = -1
            finally:
                try:  # whatever the block left running
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        ran += 1
        status = "ok" if process.returncode == 0 else f"FAILED (exit {process.returncode})"
        print(f"{name}: '{first[:60]}': {status} ({time.monotonic() - started:.1f} s)")
        if process.returncode != 0:
            failed += 1
            print("--- script ---\n" + script + "\n--- output (end) ---\n" + out[-4000:])
    print(f"{ran} blocks run, {failed} failed, {skipped} not run (reasons above)")
    return 1 if failed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
