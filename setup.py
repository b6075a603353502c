"""`pip install .`: builds the extension saltus._saltus with Saltus's own CMake build (static
Saltus libraries, position-independent, linked into the module; SUNDIALS, yaml-cpp, urdfdom, NLopt and
fmt stay the system's shared libraries), then packages it with python/saltus/__init__.py.
The CMake build directory is build-pip/ (SALTUS_PIP_BUILD_DIR overrides it), reused by later
installs; CMAKE_BUILD_PARALLEL_LEVEL sets its jobs (default: all cores)."""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = pathlib.Path(os.environ.get("SALTUS_PIP_BUILD_DIR", ROOT / "build-pip"))
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF",
            "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            "-DSALTUS_PYTHON=ON",
            "-DSALTUS_BUILD_TESTS=OFF",
            "-DSALTUS_BUILD_BENCH=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_saltus", "-j", jobs], check=True)
        built = next((build_dir / "python" / "saltus").glob("_saltus*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


setup(ext_modules=[CMakeExtension("saltus._saltus")], cmdclass={"build_ext": CMakeBuild})
