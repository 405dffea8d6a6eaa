/* Makes core/testing/fake_cuda.c (the core's host-memory imitation of the
 * CUDA backend table) a loadable backend library for
 * //bindings/rust:cuda_fake_test: the loader finds kbcuda_get_table in it
 * through $KB_CUDA_LIBRARY, as in libkernelbridge_cuda.so. */
#include <stdint.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const struct kbcuda_table *kbcuda_get_table(uint32_t abi_version) {
  return abi_version == KBCUDA_ABI_VERSION ? kb_fake_cuda_table() : 0;
}

/* The next kernel entry (or synchronize) fails with DEVICE_LOST, as after an
 * illegal address on a GPU; the fake latches it in that context. */
EXPORT void kb_rust_test_fail_next_device_lost(void) {
  kb_fake_cuda_fail_next(KBCUDA_STATUS_DEVICE_LOST, "device lost: illegal address (injected by the test)");
}

/* Kernel entries called since the last reset (the fake computes nothing). */
EXPORT int kb_rust_test_kernel_calls(void) { return kb_fake_cuda_calls(); }
