#!/usr/bin/env python3
"""Runs command blocks of the documentation as written, at small sizes.

usage: run_blocks.py SHARDOPT_BINARY SOURCE_DIR BUILD_DIR FILE:N [FILE:N ...]

FILE:N is the N-th ```sh block (1-based) of FILE (relative to SOURCE_DIR). Each block runs under
`bash -e` in a fresh temporary folder, with only these changes: `shardopt` and
`build/apps/shardopt` name the binary under test, `PYTHONPATH=build/python` the build's module,
`python3` is Debian's, the ports 2222-2229 become free ones, and `--last-step N` at most 200 (small
sizes). A block whose first line says "needs a cluster" cannot run here and is refused by name.
Every process a block starts in the background is waited for (`wait`) or killed at the end.
"""

import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile


def blocks_of(path):
    text = path.read_text()
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def adapted(block, binary, build):
    ports = {str(p): str(free_port()) for p in range(2222, 2230)}
    block = re.sub(r"\b(222[2-9])\b", lambda m: ports[m.group(1)], block)
    block = re.sub(r"--last-step (\d+)", lambda m: f"--last-step {min(int(m.group(1)), 200)}", block)
    block = block.replace("build/apps/shardopt", binary)
    block = re.sub(r"(?m)(^|[\s;&|(])shardopt ", lambda m: m.group(1) + binary + " ", block)
    block = block.replace("PYTHONPATH=build/python", f"PYTHONPATH={build}/python")
    block = re.sub(r"(?<![/\w.-])python3 ", "/usr/bin/python3 ", block)
    return block


def main():
    binary, root, build = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
    failed = 0
    for spec in sys.argv[4:]:
        name, number = spec.rsplit(":", 1)
        blocks = blocks_of(root / name)
        block = blocks[int(number) - 1]
        if "needs a cluster" in block.splitlines()[0]:
            print(f"{spec}: needs a cluster; not runnable here")
            failed += 1
            continue
        script = adapted(block, binary, build)
        with tempfile.TemporaryDirectory(prefix="shardopt-docs-") as folder:
            process = subprocess.Popen(["/bin/bash", "-e", "-c", script], cwd=folder, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, start_new_session=True)
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
        status = "ok" if process.returncode == 0 else f"FAILED (exit {process.returncode})"
        print(f"{spec}: {status}")
        if process.returncode != 0:
            failed += 1
            print("--- script ---\n" + script + "--- output (end) ---\n" + out[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
