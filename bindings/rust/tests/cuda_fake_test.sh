#!/bin/sh
# The CUDA code paths of the Rust binding without a GPU: builds the core's
# fake CUDA backend (core/testing/fake_cuda.c, host memory posing as device 0)
# into a backend library with tests/fake_cuda_shim.c and runs
# kernelbridge/tests/cuda_fake.rs with KB_CUDA_LIBRARY naming it: device
# queries, CUDA contexts, device buffers, memory-kind errors and DEVICE_LOST
# through the safe API.  (The fake computes no kernel results; tests/cuda.rs
# checks those on a real GPU.)
if [ -n "${TEST_SRCDIR:-}" ]; then
  . "$TEST_SRCDIR/${TEST_WORKSPACE:-kernelbridge}/bindings/rust/tests/rust_env.sh"
else
  . "$(dirname "$0")/rust_env.sh"
fi

step "fake CUDA backend library"
lib="$WORK/libkb_fake_cuda.so"
${CC:-cc} -std=c99 -D_POSIX_C_SOURCE=200809L -O1 -shared -fPIC -fvisibility=hidden \
  -I"$ROOT/core/src" -I"$ROOT/core/include" -I"$ROOT/core/testing" \
  "$ROOT/core/testing/fake_cuda.c" "$ROOT/bindings/rust/tests/fake_cuda_shim.c" \
  -o "$lib" -lpthread -lm
export KB_CUDA_LIBRARY="$lib"

src="$WORK/src"
copy_crates "$src"
cd "$src"
step "cargo test --test cuda_fake (KB_CUDA_LIBRARY=$lib)"
cargo test --offline -p kernelbridge --test cuda_fake -- --nocapture
