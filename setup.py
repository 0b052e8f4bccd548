"""The native half of `pip install .`: builds `shardopt._core` with CMake and puts it in the wheel.

pyproject.toml holds the metadata. The CMake build goes to build/pip (configured once, then
incremental), or to SHARDOPT_BUILD_DIR when that names a build tree configured already (for
example the one `cmake --preset dev` made): then only the module target is brought up to date.
CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default: the machine's cores).
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = pathlib.Path(__file__).resolve().parent


class cmake_build(build_ext):
    def build_extension(self, extension):
        given = os.environ.get("SHARDOPT_BUILD_DIR")
        build = pathlib.Path(given).resolve() if given else SOURCE / "build" / "pip"
        if not (build / "CMakeCache.txt").exists():
            if given:
                raise RuntimeError(f"SHARDOPT_BUILD_DIR={given}: no configured CMake build tree there")
            subprocess.run(["cmake", "-S", str(SOURCE), "-B", str(build), "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release", "-DSHARDOPT_BUILD_TESTS=OFF",
                            "-DSHARDOPT_BUILD_BENCH=OFF", f"-DPython_EXECUTABLE={sys.executable}"],
                           check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "shardopt_python", "-j", jobs],
                       check=True)
        built = sorted((build / "python" / "shardopt").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _core module in {build}/python/shardopt, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(extension.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[Extension("shardopt._core", sources=[])], cmdclass={"build_ext": cmake_build})
