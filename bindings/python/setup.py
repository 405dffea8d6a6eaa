"""Builds kernelbridge: the generated wrappers plus the cffi extension
kernelbridge._native, which compiles the library (csrc/kernelbridge.c, the
amalgamation, with csrc/kernelbridge.h) in.

Inside the kernelbridge repository that pair is first written into csrc/ with
tools/vendor_c.py, so it always matches core/ and kernels/cpu/; an sdist
carries csrc/ and builds without the repository.
"""

import os
import subprocess
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR = os.path.join(HERE, "..", "..", "tools", "vendor_c.py")

if os.path.exists(VENDOR) and os.path.exists(os.path.join(HERE, "..", "..", "core", "include", "kernelbridge.h")):
    subprocess.check_call([sys.executable, VENDOR, "sync", os.path.join(HERE, "csrc")], stdout=subprocess.DEVNULL)

setup(cffi_modules=["kernelbridge_build.py:ffibuilder"])
