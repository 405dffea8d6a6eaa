/* C baseline for benchmarks/java: kb_silu on 16 floats called from C, with a
 * CPU context of one thread (what the Java thread default uses). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernelbridge.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  long iters = argc > 2 ? atol(argv[2]) : 2000000;
  float x[16], y[16];
  double t[64];
  kb_context *ctx;
  int i, r;
  if (runs < 1 || runs > 64) runs = 7;
  for (i = 0; i < 16; i++) x[i] = (float)(i - 8) * 0.37f;
  if (kb_context_create(KB_BACKEND_CPU, 1, &ctx) != KB_STATUS_OK) return 1;
  for (long k = 0; k < iters; k++) kb_silu(ctx, 16, x, y); /* warm-up */
  for (r = 0; r < runs; r++) {
    double t0 = now_ns();
    for (long k = 0; k < iters; k++) {
      kb_silu(ctx, 16, x, y);
      __asm__ __volatile__("" : : "r"(y) : "memory");
    }
    t[r] = (now_ns() - t0) / (double)iters;
  }
  qsort(t, (size_t)runs, sizeof t[0], cmp);
  printf("c_baseline        %8.1f %8.1f\n", t[0], t[runs / 2]);
  kb_context_destroy(ctx);
  return 0;
}
