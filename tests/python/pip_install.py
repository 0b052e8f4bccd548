#!/usr/bin/python3
"""`pip install .` as the README gives it, into a fresh virtual environment made with
`python3 -m venv --system-site-packages`, with the build isolation off (nothing is downloaded).
The module is built from the build tree these tests run in (SHARDOPT_BUILD_DIR), so the test costs
seconds; a clean `pip install .` configures build/pip and builds the same target.

Checks: the module imported is the venv's installed copy (not the build tree's), it trains from
NumPy arrays, and it gives the bits the build tree's module gives.

    pip_install.py SOURCE_DIR BUILD_DIR SCRATCH_DIR     (exit 0: passed)
"""

import json
import os
import shutil
import subprocess
import sys

SOURCE, BUILD, SCRATCH = sys.argv[1:4]

RUN = """
import json, sys
import numpy as np
import shardopt
rng = np.random.default_rng(3)
X = rng.standard_normal((2000, 20)).astype(np.float32)
y = (X @ rng.standard_normal(20) > 0).astype(np.float64)
r = shardopt.train(X, y, model="logistic", lam=1e-3, shards=2, max_iter=30)
print(json.dumps({"module": shardopt.__file__, "objective": r.objective, "stop": r.stop_reason}))
"""


def run(python, env):
    done = subprocess.run([python, "-c", RUN], capture_output=True, text=True, cwd=SCRATCH, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    venv = os.path.join(SCRATCH, "venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True,
                   timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                                "--no-index", "--quiet", SOURCE],
                               capture_output=True, text=True, timeout=1800,
                               env=dict(env, SHARDOPT_BUILD_DIR=BUILD, CMAKE_BUILD_PARALLEL_LEVEL="2"))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    from_venv = run(os.path.join(venv, "bin", "python"), env)
    assert from_venv["module"].startswith(os.path.join(venv, "lib")), from_venv
    from_tree = run("/usr/bin/python3", dict(env, PYTHONPATH=os.path.join(BUILD, "python")))
    assert from_tree["module"].startswith(BUILD), from_tree
    assert from_venv["stop"] == from_tree["stop"] == "converged", (from_venv, from_tree)
    assert from_venv["objective"] == from_tree["objective"], (from_venv, from_tree)
    shutil.rmtree(venv)
    print("ok: pip install . into a fresh venv, imported from", from_venv["module"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
