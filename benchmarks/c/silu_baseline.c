/*
 * silu_baseline.c - the C baseline of the binding overhead benchmarks: a
 * 16-element kb_silu called from C on a one-thread CPU context.  The Go and
 * Java benchmarks (benchmarks/{go,java}/run.sh) compile it next to their own
 * measurements so every language is compared with the same C loop.
 *
 *   silu_baseline [RUNS [ITERS]]   prints "c_baseline  MIN MEDIAN" in ns/call
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernelbridge.h"

#define MAX_RUNS 100

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
  long iters = argc > 2 ? atol(argv[2]) : 2000000L;
  if (runs < 1 || runs > MAX_RUNS || iters < 1) {
    fprintf(stderr, "usage: silu_baseline [RUNS (1..%d) [ITERS]]\n", MAX_RUNS);
    return 2;
  }
  float x[16], y[16];
  for (int i = 0; i < 16; i++) x[i] = (float)(i - 8) * 0.37f;
  kb_context *ctx = NULL;
  if (kb_context_create(KB_BACKEND_CPU, 1, &ctx) != KB_STATUS_OK) return 1;
  for (long k = 0; k < iters; k++) kb_silu(ctx, 16, x, y); /* warm-up */
  double ns[MAX_RUNS];
  for (int r = 0; r < runs; r++) {
    double t0 = now_ns();
    for (long k = 0; k < iters; k++) {
      if (kb_silu(ctx, 16, x, y) != KB_STATUS_OK) return 1;
      /* keep the compiler from hoisting or dropping the calls */
      __asm__ __volatile__("" : : "r"(y) : "memory");
    }
    ns[r] = (now_ns() - t0) / (double)iters;
  }
  qsort(ns, (size_t)runs, sizeof ns[0], cmp);
  printf("c_baseline        %8.1f %8.1f\n", ns[0], ns[runs / 2]);
  kb_context_destroy(ctx);
  return 0;
}
