#!/bin/sh
# The CUDA path of the Rust binding (kernelbridge/tests/cuda.rs) with the real
# backend library: cuda_test.sh PATH/TO/libkernelbridge_cuda.so
#
# With a GPU (sm_80+, NVIDIA driver for CUDA 13) it checks device queries,
# CUDA contexts, device buffers and kernels on them against the CPU.  Without
# one (no driver, as on the build machine) it checks that every CUDA entry
# point fails with BACKEND_UNAVAILABLE and the reason, then prints
# "SKIPPED: <reason>" (the line CI counts as a skip) and passes.
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi

lib=${1:?usage: cuda_test.sh PATH/TO/libkernelbridge_cuda.so}
KB_CUDA_LIBRARY=$(readlink -f "$lib")
export KB_CUDA_LIBRARY

src="$WORK/src"
copy_crates "$src"
cd "$src"
step "cargo test --test cuda (KB_CUDA_LIBRARY=$KB_CUDA_LIBRARY)"
# --nocapture: the test's "SKIPPED: ..." or per-device lines go to the log.
cargo test --offline -p kernelbridge --test cuda -- --nocapture
