/*
 * bench_util.c - timing and test data for cuda_benchmark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

int bench_failures;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double time_per_call(const struct bench *b, bench_call fn, void *arg, char *err, size_t err_len) {
  /* Three warm-up calls: first-call costs (cuBLASLt handle and heuristics, module
   * loading, allocator growth) are not what is measured. */
  for (int i = 0; i < 3; i++) {
    if (fn(arg, err, err_len) != 0) {
      bench_failures++;
      return -1.0;
    }
  }
  double t0 = now();
  if (fn(arg, err, err_len) != 0) {
    bench_failures++;
    return -1.0;
  }
  double one = now() - t0;
  long n = one > 0 ? (long)(b->min_round / one) : 1000;
  if (n < 1) n = 1;
  if (n > 10000) n = 10000;
  double per[16];
  int rounds = b->rounds < 16 ? b->rounds : 16;
  for (int r = 0; r < rounds; r++) {
    t0 = now();
    for (long i = 0; i < n; i++) {
      if (fn(arg, err, err_len) != 0) {
        bench_failures++;
        return -1.0;
      }
    }
    per[r] = (now() - t0) / (double)n;
  }
  qsort(per, (size_t)rounds, sizeof per[0], cmp_double);
  return per[rounds / 2];
}

int kb_failed(const struct bench *b, const char *fn, kb_status st, char *err, size_t err_len) {
  snprintf(err, err_len, "%s: %s: %s", fn, kb_status_string(st), kb_context_last_error(b->ctx));
  return -1;
}

/* One block of random values per element size, generated once and tiled:
 * generating hundreds of MiB per buffer would cost more than the
 * measurements, and repetition does not change a kernel's speed. */
#define BLOCK_ELEMS (1 << 22)

static const unsigned char *random_block(int elem) {
  static unsigned char *blocks[2];
  unsigned char **blk = &blocks[elem == 2];
  if (*blk != NULL) return *blk;
  *blk = (unsigned char *)malloc((size_t)BLOCK_ELEMS * (size_t)elem);
  if (*blk == NULL) return NULL;
  uint64_t s = 0x9E3779B97F4A7C15ull + (uint64_t)elem;
  for (int64_t i = 0; i < BLOCK_ELEMS; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    float f = (float)((double)(s >> 40) * (2.0 / 16777216.0) - 1.0); /* uniform in [-1, 1) */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (elem == 2) {
      uint16_t h = (uint16_t)(u >> 16); /* bfloat16 by truncation: fine for test data */
      memcpy(*blk + 2 * i, &h, 2);
    } else {
      memcpy(*blk + 4 * i, &u, 4);
    }
  }
  return *blk;
}

kb_buffer *random_buffer(const struct bench *b, int64_t n, int elem, uint64_t seed, char *err, size_t err_len) {
  int64_t bytes = n * elem, block = (int64_t)BLOCK_ELEMS * elem;
  const unsigned char *host = random_block(elem);
  kb_buffer *buf = NULL;
  if (host == NULL) {
    snprintf(err, err_len, "out of host memory");
    bench_failures++;
    return NULL;
  }
  kb_status st = kb_buffer_create(b->ctx, bytes, &buf);
  /* Each buffer starts at a different place in the block. */
  int64_t start = (int64_t)(seed % 97) * 4099 * elem % block;
  for (int64_t off = 0; st == KB_STATUS_OK && off < bytes;) {
    int64_t len = block - start < bytes - off ? block - start : bytes - off;
    st = kb_buffer_upload(b->ctx, buf, off, len, host + start);
    off += len;
    start = 0;
  }
  if (st != KB_STATUS_OK) {
    kb_failed(b, "kb_buffer_create/upload", st, err, err_len);
    bench_failures++;
    kb_buffer_destroy(buf);
    buf = NULL;
  }
  return buf;
}
