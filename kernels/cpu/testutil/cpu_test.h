/*
 * cpu_test.h - helpers shared by the CPU kernel tests (kernels/cpu/<family>_test.c):
 * deterministic random data, sentinel-filled outputs and the "this call must
 * fail, name the argument and leave the outputs alone" check.
 */
#ifndef KB_CPU_TEST_H
#define KB_CPU_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_test.h"
#include "kernelbridge.h"

/* A value no kernel produces from the test inputs, so untouched outputs are
 * recognisable; compared bitwise. */
#define SENTINEL_F (-31415.926f)
#define SENTINEL_I ((int32_t)-777)

/* A size whose byte count overflows int64 when multiplied by 4 or more. */
#define HUGE_DIM (INT64_MAX / 2)

static inline void fill_f(float *p, int64_t n, float v) {
  for (int64_t i = 0; i < n; i++) p[i] = v;
}

static inline void fill_i(int32_t *p, int64_t n, int32_t v) {
  for (int64_t i = 0; i < n; i++) p[i] = v;
}

static inline bool all_f(const float *p, int64_t n, float v) {
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&p[i], &v, sizeof v) != 0) return false;
  return true;
}

static inline bool all_i(const int32_t *p, int64_t n, int32_t v) {
  for (int64_t i = 0; i < n; i++)
    if (p[i] != v) return false;
  return true;
}

/* splitmix64: a small, well-mixed, reproducible generator for test data. */
static inline uint64_t test_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline void rand_fill(float *p, int64_t n, uint64_t seed, float lo, float hi) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) {
    double u = (double)(test_next(&s) >> 11) * (1.0 / 9007199254740992.0);
    p[i] = (float)(lo + (hi - lo) * u);
  }
}

static inline float *alloc_f(int64_t n) { return (float *)calloc((size_t)(n > 0 ? n : 1), sizeof(float)); }
static inline int32_t *alloc_i(int64_t n) { return (int32_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t)); }

static inline kb_context *make_ctx(int64_t threads) {
  kb_context *ctx = NULL;
  if (kb_context_create(KB_BACKEND_CPU, threads, &ctx) != KB_STATUS_OK) {
    fprintf(stderr, "cannot create a context\n");
    exit(2);
  }
  return ctx;
}

static inline bool same_bits_f(const float *a, const float *b, int64_t n) {
  return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* The call fails with `status` and the context's message names `needle`.
 * (Callers check afterwards that the outputs still hold the sentinel.) */
#define CHECK_FAILS(ctx, status, needle, call)                  \
  do {                                                          \
    CHECK_STATUS(status, call);                                 \
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), needle);     \
  } while (0)

#endif /* KB_CPU_TEST_H */
