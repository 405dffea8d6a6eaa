/* silu_bench.c - the C baseline for benchmarks/go: times kb_silu on 16
 * elements called from C, RUNS runs of ITERS calls each (arguments), and
 * prints ns/call per run and the min and median.  Built by run.sh from the
 * sources vendored in bindings/go with the library's flags. */
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
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  long iters = argc > 2 ? atol(argv[2]) : 5000000L;
  if (runs < 1 || runs > 100 || iters < 1) return 2;
  float x[16], y[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i / 2.0f - 4.0f;
  kb_context *ctx = NULL;
  if (kb_context_create(KB_BACKEND_CPU, 1, &ctx) != KB_STATUS_OK) return 1;
  double ns[100];
  for (int r = 0; r < runs; r++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
      if (kb_silu(ctx, 16, x, y) != KB_STATUS_OK) return 1;
      /* keep the compiler from hoisting or dropping the calls */
      __asm__ __volatile__("" : : "r"(y) : "memory");
    }
    ns[r] = (now_ns() - t0) / (double)iters;
    printf("run %d  %-30s %8.1f ns/call\n", r + 1, "C kb_silu (from C)", ns[r]);
  }
  qsort(ns, (size_t)runs, sizeof ns[0], cmp);
  printf("\n%-30s min %8.1f  median %8.1f ns/call\n", "C kb_silu (from C)", ns[0], ns[runs / 2]);
  kb_context_destroy(ctx);
  return 0;
}
