"""vkdml's Python wheel (pyproject.toml: setuptools, as Debian 12 packages it). The extension is
built by vkdml's CMake build, not by setuptools: `python3 -m pip wheel . --no-build-isolation
--no-deps -w dist` configures <root>/build-wheel (VKDML_WHEEL_BUILD_DIR sets another; at the
depth of <root>/build, ccache finds the test build's objects), builds the module and installs
it, stripped, with libvkdml.so.0 beside it in the package (the module finds it through its
$ORIGIN RPATH). Nothing else is bundled: the Vulkan loader stays the system's.

The wheel's tags say what it needs: the CPython version it was built for (cp311-cp311) and
manylinux_2_N, N the newest glibc that its binaries' symbol versions need or that the libstdc++
they need came with (GLIBCXX_3.4.29: gcc 11, first with glibc 2.34).
Environment: CMAKE_BUILD_PARALLEL_LEVEL (default 2); VKDML_WHEEL_SPIRV_FROM, a configured build
tree whose SPIR-V modules to reuse (.ci/copy-spirv.sh)."""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("VKDML_WHEEL_BUILD_DIR", os.path.join(ROOT, "build-wheel"))

# The first glibc of a manylinux policy whose libstdc++ has GLIBCXX_3.4.N (auditwheel's
# policies: manylinux2014, _2_28 with gcc 8, _2_31 with gcc 9/10, _2_34 with gcc 11, _2_35 with
# gcc 12). Past the table: the glibc of the machine that built it.
GLIBCXX_GLIBC = [(19, 17), (25, 28), (28, 31), (29, 34), (30, 35)]


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(vkdml VERSION ([0-9.]+)", f.read()).group(1)


def needed_versions(path, prefix):
    """The newest PREFIX_x.y (GLIBC, GLIBCXX) symbol version that the ELF file at path needs."""
    out = subprocess.run(["readelf", "--version-info", "--wide", path], check=True,
                         capture_output=True, text=True).stdout
    found = [tuple(int(p) for p in v.split(".")) for v in re.findall(rf"Name: {prefix}_([0-9.]+)",
                                                                      out)]
    return max(found, default=())


def manylinux_tag(files):
    glibc = max(needed_versions(f, "GLIBC") for f in files)
    glibcxx = max(needed_versions(f, "GLIBCXX") for f in files)
    floor = 0
    if glibcxx:
        for last, first_glibc in GLIBCXX_GLIBC:
            if glibcxx[-1] <= last:
                floor = first_glibc
                break
        else:
            floor = int(os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[1])
    minor = max(glibc[1] if len(glibc) > 1 else 0, floor, 17)
    return f"manylinux_2_{minor}_{os.uname().machine}"


class CMakeBuild(build_ext):
    """Builds the module with vkdml's CMake build; puts it, with libvkdml.so.0, in the package."""

    def build_extension(self, ext):
        cmake_build, stage = BUILD, os.path.join(BUILD, "wheel", "stage")
        configure = ["cmake", "-S", ROOT, "-B", cmake_build, "-DVKDML_BUILD_TESTS=OFF",
                     "-DVKDML_BUILD_PYTHON=ON", "-DVKDML_INSTALL_STATIC=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}",
                     # The module and the library both in the package: $ORIGIN finds the library.
                     "-DCMAKE_INSTALL_LIBDIR=vkdml", "-DVKDML_PYTHON_INSTALL_DIR=."]
        subprocess.run(configure, check=True)
        spirv_from = os.environ.get("VKDML_WHEEL_SPIRV_FROM")
        if spirv_from:
            subprocess.run([os.path.join(ROOT, ".ci", "copy-spirv.sh"), spirv_from, cmake_build],
                           check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(["cmake", "--build", cmake_build, "-j", jobs, "--target", "vkdml_python"],
                       check=True)
        shutil.rmtree(stage, ignore_errors=True)
        for component in ("lib", "python"):
            subprocess.run(["cmake", "--install", cmake_build, "--component", component,
                            "--prefix", stage, "--strip"], check=True)
        package = os.path.dirname(self.get_ext_fullpath(ext.name))
        os.makedirs(package, exist_ok=True)
        module = os.path.basename(self.get_ext_fullpath(ext.name))
        shutil.copyfile(os.path.join(stage, "vkdml", module), os.path.join(package, module))
        # libvkdml.so.0 (a link to libvkdml.so.0.x.y in the install; a wheel holds no links).
        shutil.copyfile(os.path.join(stage, "vkdml", "libvkdml.so.0"),
                        os.path.join(package, "libvkdml.so.0"))


class Wheel(bdist_wheel):
    """cpXY-cpXY (a CPython extension module) and the manylinux tag its binaries need."""

    def get_tag(self):
        python, abi, _ = super().get_tag()
        lib = self.get_finalized_command("build").build_lib
        files = [os.path.join(d, f) for d, _, names in os.walk(os.path.join(lib, "vkdml"))
                 for f in names if ".so" in f]
        return python, abi, manylinux_tag(files)


os.makedirs(os.path.join(BUILD, "wheel"), exist_ok=True)
setup(
    version=project_version(),
    packages=["vkdml"],
    package_dir={"": "examples/python"},
    ext_modules=[Extension("vkdml._vkdml", sources=[])],
    cmdclass={"build_ext": CMakeBuild, "bdist_wheel": Wheel},
    options={"build": {"build_base": os.path.join(BUILD, "wheel", "setuptools")},
             "egg_info": {"egg_base": os.path.join(BUILD, "wheel")}},
)
