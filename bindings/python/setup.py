"""Builds kernelbridge: the generated wrappers plus two extensions: the cffi
extension kernelbridge._native, which compiles the library (csrc/kernelbridge.c,
the amalgamation, with csrc/kernelbridge.h) in, and kernelbridge._fastcall
(src/fastcall.c, hand-written C against the numpy C API), which runs the common
case of a kernel call without the Python-level argument handling.

Inside the kernelbridge repository that pair is first written into csrc/ with
tools/vendor_c.py, so it always matches core/ and kernels/cpu/; an sdist
carries csrc/ and builds without the repository.
"""

import os
import subprocess
import sys

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR = os.path.join(HERE, "..", "..", "tools", "vendor_c.py")

if os.path.exists(VENDOR) and os.path.exists(os.path.join(HERE, "..", "..", "core", "include", "kernelbridge.h")):
    subprocess.check_call([sys.executable, VENDOR, "sync", os.path.join(HERE, "csrc")], stdout=subprocess.DEVNULL)

fastcall = Extension(
    "kernelbridge._fastcall",
    sources=["src/fastcall.c"],
    include_dirs=["src", numpy.get_include()],
    # Binaries built against numpy 2 headers also run with numpy 1.x.
    define_macros=[("NPY_TARGET_VERSION", "NPY_1_20_API_VERSION")],
    extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"],
)

setup(cffi_modules=["kernelbridge_build.py:ffibuilder"], ext_modules=[fastcall])
