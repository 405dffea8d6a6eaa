/* bench_copy.h - what the decoder benchmarks (decode_bench.c,
 * small_linear_bench.c, attention_decode_bench.c) share: a monotonic clock,
 * a comparator to sort times, and the time the machine
 * takes to copy a number of bytes on T threads, the bandwidth they compare
 * their weight reads with. */
#ifndef KB_BENCH_COPY_H
#define KB_BENCH_COPY_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort's comparator for times in seconds, ascending. */
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct copy_slice {
  char *dst;
  const char *src;
  size_t bytes;
};

static void *copy_body(void *arg) {
  struct copy_slice *c = (struct copy_slice *)arg;
  memcpy(c->dst, c->src, c->bytes);
  return NULL;
}

/* Best of `reps` times of `threads` threads (at most 64) each copying one
 * slice of src into dst, as a kernel's threads each read their share; a
 * thread that cannot be started copies its slice on the caller's. */
static double copy_best_seconds(char *dst, const char *src, size_t bytes, int64_t threads, int reps) {
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64;
  struct copy_slice slices[64];
  pthread_t tid[64];
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = now();
    for (int64_t i = 0; i < threads; i++) {
      size_t lo = (size_t)((uint64_t)bytes * (uint64_t)i / (uint64_t)threads);
      size_t hi = (size_t)((uint64_t)bytes * (uint64_t)(i + 1) / (uint64_t)threads);
      slices[i] = (struct copy_slice){dst + lo, src + lo, hi - lo};
      if (i > 0 && pthread_create(&tid[i], NULL, copy_body, &slices[i]) != 0) copy_body(&slices[i]), tid[i] = 0;
    }
    copy_body(&slices[0]);
    for (int64_t i = 1; i < threads; i++)
      if (tid[i] != 0) pthread_join(tid[i], NULL);
    t = now() - t;
    if (t < best) best = t;
  }
  return best;
}

#endif /* KB_BENCH_COPY_H */
