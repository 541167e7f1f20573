"""`pip install .`: builds `import collective` with the project's CMake.

setuptools only packages: CMake configures the library and the binding for
the interpreter running pip (COLLECTIVE_PYTHON), builds the native module and
installs its component `python_wheel` (the module and libcollective beside
it, RPATH $ORIGIN) into the wheel's tree; the pure-Python files come from
libcollective/python/collective. CMAKE_ARGS adds configure arguments,
COLLECTIVE_PIP_BUILD_DIR moves the build folder (default build/pip).
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
BUILD_BASE = Path(os.environ.get("COLLECTIVE_PIP_BUILD_DIR", ROOT / "build" / "pip"))
BUILD_BASE.mkdir(parents=True, exist_ok=True)


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(collective VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("setup.py: no 'project(collective VERSION x.y.z)' in CMakeLists.txt")
    return match.group(1)


class CMakeBuild(build_ext):
    """Runs CMake instead of compiling the (empty) extension's sources."""

    def build_extension(self, ext):
        cmake_dir = BUILD_BASE / "cmake"
        # The package folder of the wheel's tree: build_lib/collective.
        package_root = Path(self.get_ext_fullpath(ext.name)).resolve().parent.parent
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(cmake_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCOLLECTIVE_BUILD_TESTS=OFF",
            "-DCOLLECTIVE_BUILD_BENCH=OFF",
            "-DCOLLECTIVE_BUILD_STRATEGIES=OFF",
            "-DCOLLECTIVE_BUILD_PYTHON=ON",
            "-DCOLLECTIVE_PYTHON_WHEEL=ON",
            f"-DCOLLECTIVE_PYTHON={sys.executable}",
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = str(self.parallel or os.cpu_count() or 1)
        self._run(configure)
        self._run(["cmake", "--build", str(cmake_dir), "--target", "collective_python", "-j", jobs])
        self._run(["cmake", "--install", str(cmake_dir), "--component", "python_wheel",
                   "--prefix", str(package_root)])
        built = Path(self.get_ext_fullpath(ext.name))
        if not built.exists():
            # CMake said ON but built nothing: the binding's prerequisites are
            # missing (its configure line says which).
            raise RuntimeError(f"setup.py: CMake did not produce {built}; see 'libcollective: "
                               "Python binding' in the configure output above")

    @staticmethod
    def _run(command):
        print("setup.py:", " ".join(shlex.quote(c) for c in command), flush=True)
        subprocess.run(command, check=True)


setup(
    name="libcollective",
    version=project_version(),
    description="import collective: libcollective's collectives from Python",
    python_requires=">=3.9",
    packages=["collective"],
    package_dir={"": "libcollective/python"},
    package_data={"collective": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("collective._collective", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(BUILD_BASE)},
             "egg_info": {"egg_base": str(BUILD_BASE)}},
    zip_safe=False,
)
