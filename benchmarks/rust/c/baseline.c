/* The C baseline of the Rust call-overhead benchmark: kb_silu called from C
 * in a loop, timed in C.  Compiled by build.rs with the library's flags and
 * linked against the same static library as the Rust code. */
#include <stdint.h>
#include <time.h>

#include "kernelbridge.h"

int64_t kb_bench_c_silu(kb_context *ctx, int64_t n, const float *x, float *y, int64_t iters, int32_t *failures);

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs kb_silu `iters` times; returns the elapsed nanoseconds. */
int64_t kb_bench_c_silu(kb_context *ctx, int64_t n, const float *x, float *y, int64_t iters, int32_t *failures) {
  int32_t bad = 0;
  int64_t t0 = now_ns();
  for (int64_t i = 0; i < iters; i++) {
    if (kb_silu(ctx, n, x, y) != KB_STATUS_OK) bad++;
  }
  int64_t t1 = now_ns();
  *failures = bad;
  return t1 - t0;
}
