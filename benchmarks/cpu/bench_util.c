/*
 * bench_util.c - timing, test data and the benchmark's own thread pool.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

struct bench_options bench_opt;
int bench_failures;

static char error_message[512];

double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_message, sizeof error_message, fmt, ap);
  va_end(ap);
}

int kb_fail(kb_context *ctx, const char *fn, kb_status st) {
  bench_error("%s: %s: %s", fn, kb_status_string(st), ctx != NULL ? kb_context_last_error(ctx) : "");
  return 1;
}

void bench_check_failed(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAILED: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  bench_failures++;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Seconds per call of `calls` back-to-back calls; negative on failure. */
static double run_batch(const struct side *s, long calls) {
  double t0 = now_seconds();
  for (long i = 0; i < calls; i++)
    if (s->fn(s->arg) != 0) return -1.0;
  return (now_seconds() - t0) / (double)calls;
}

static void side_failed(struct side *s) {
  fprintf(stderr, "FAILED: %s: %s\n", s->label, error_message);
  bench_failures++;
  s->med = s->min = -1.0;
}

int measure(struct side *sides, int count) {
  long calls[BENCH_MAX_SIDES];
  double per[BENCH_MAX_SIDES][BENCH_MAX_ROUNDS];
  int ok[BENCH_MAX_SIDES];
  int rounds = bench_opt.smoke ? 1 : bench_opt.rounds;
  if (rounds > BENCH_MAX_ROUNDS) rounds = BENCH_MAX_ROUNDS;
  if (count > BENCH_MAX_SIDES) count = BENCH_MAX_SIDES;
  double slowest = 0;

  /* Warm-up (first-touch of outputs, thread start-up, packing buffers), then
   * the batch size: doubled until a batch lasts a quarter of a round, then
   * scaled to a whole round. */
  for (int i = 0; i < count; i++) {
    struct side *s = &sides[i];
    ok[i] = 1;
    error_message[0] = '\0';
    double warm = run_batch(s, 1);
    if (warm < 0) {
      side_failed(s);
      ok[i] = 0;
      continue;
    }
    calls[i] = 1;
    if (warm > slowest) slowest = warm;
    if (bench_opt.smoke) continue;
    /* A call that lasts a round already needs no calibration. */
    if (warm >= bench_opt.min_round) continue;
    for (;;) {
      double t = run_batch(s, calls[i]);
      if (t < 0) {
        side_failed(s);
        ok[i] = 0;
        break;
      }
      double batch = t * (double)calls[i];
      if (batch >= bench_opt.min_round / 4 || calls[i] >= (1L << 24)) {
        double want = bench_opt.min_round / (t > 0 ? t : 1e-9);
        calls[i] = want < 1 ? 1 : want > (double)(1L << 26) ? (1L << 26) : (long)want;
        break;
      }
      calls[i] *= 2;
    }
  }

  /* Calls of a quarter second and more: three rounds are enough to take a
   * median, and keep the run short. */
  if (slowest >= 5 * bench_opt.min_round && rounds > 3) rounds = 3;

  for (int r = 0; r < rounds; r++) {
    for (int j = 0; j < count; j++) {
      int i = (r % 2 == 0) ? j : count - 1 - j;
      if (!ok[i]) continue;
      double t = run_batch(&sides[i], calls[i]);
      if (t < 0) {
        side_failed(&sides[i]);
        ok[i] = 0;
        continue;
      }
      per[i][r] = t;
    }
  }

  int all_ok = 1;
  for (int i = 0; i < count; i++) {
    if (!ok[i]) {
      all_ok = 0;
      continue;
    }
    qsort(per[i], (size_t)rounds, sizeof per[i][0], cmp_double);
    sides[i].min = per[i][0];
    sides[i].med = (rounds % 2 == 1) ? per[i][rounds / 2] : 0.5 * (per[i][rounds / 2 - 1] + per[i][rounds / 2]);
  }
  return all_ok ? 0 : -1;
}

void *bench_alloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 64;
  if (posix_memalign(&p, 64, bytes) != 0 || p == NULL) {
    fprintf(stderr, "cpu_benchmark: out of memory (%zu bytes)\n", bytes);
    exit(2);
  }
  memset(p, 0, bytes); /* touch every page now, not while timing */
  return p;
}

/* xorshift64*: plenty for test data. */
static uint64_t next_random(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

static float uniform(uint64_t *s, float lo, float hi) {
  double u = (double)(next_random(s) >> 40) * (1.0 / 16777216.0); /* [0, 1) */
  return (float)(lo + (hi - lo) * u);
}

static uint64_t seed_state(uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; }

void fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed_state(seed);
  for (size_t i = 0; i < n; i++) x[i] = uniform(&s, lo, hi);
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static uint16_t to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
  if (mag >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
  if (mag < 0x38800000u) { /* below 2^-14: a float16 subnormal, in units of 2^-24 */
    float a;
    memcpy(&a, &mag, 4);
    return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
  }
  uint32_t h = ((mag >> 23) - 112u) << 10 | ((mag >> 13) & 0x3ffu);
  uint32_t rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | h);
}

void fill_uniform_bf16(uint16_t *x, size_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed_state(seed);
  for (size_t i = 0; i < n; i++) x[i] = to_bf16(uniform(&s, lo, hi));
}

void fill_uniform_f16(uint16_t *x, size_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed_state(seed);
  for (size_t i = 0; i < n; i++) x[i] = to_f16(uniform(&s, lo, hi));
}

void fill_ids(int32_t *x, size_t n, int32_t bound, uint64_t seed) {
  uint64_t s = seed_state(seed);
  for (size_t i = 0; i < n; i++) x[i] = (int32_t)((next_random(&s) >> 33) % (uint64_t)bound);
}

/* ------------------------------------------------------------------------ */
/* The benchmark's thread pool: the machine-limit loops and the naive
 * attention run on it.  Idle workers sleep on a condition variable, so they
 * take no CPU from kernelbridge or OpenBLAS between jobs. */

#define POOL_MAX 64

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static pthread_t pool_threads[POOL_MAX];
static int pool_started;   /* workers 1 .. pool_started */
static unsigned long pool_birth_gen[POOL_MAX]; /* pool_gen when each worker was created */
static unsigned long pool_gen;
static int pool_count, pool_pending, pool_stop;
static void (*pool_fn)(void *, int, int);
static void *pool_arg;

static void *pool_worker(void *p) {
  int index = (int)(intptr_t)p;
  pthread_mutex_lock(&pool_mu);
  /* Not pool_gen: the job that started this worker may already be posted. */
  unsigned long seen = pool_birth_gen[index];
  for (;;) {
    while (pool_gen == seen && !pool_stop) pthread_cond_wait(&pool_start, &pool_mu);
    if (pool_stop) break;
    seen = pool_gen;
    if (index >= pool_count) continue;
    void (*fn)(void *, int, int) = pool_fn;
    void *arg = pool_arg;
    int count = pool_count;
    pthread_mutex_unlock(&pool_mu);
    fn(arg, index, count);
    pthread_mutex_lock(&pool_mu);
    if (--pool_pending == 0) pthread_cond_signal(&pool_done);
  }
  pthread_mutex_unlock(&pool_mu);
  return NULL;
}

void pool_run(int count, void (*fn)(void *arg, int index, int count), void *arg) {
  if (count > POOL_MAX) count = POOL_MAX;
  if (count <= 1) {
    fn(arg, 0, 1);
    return;
  }
  pthread_mutex_lock(&pool_mu);
  while (pool_started < count - 1) {
    int index = pool_started + 1;
    pool_birth_gen[index] = pool_gen;
    if (pthread_create(&pool_threads[index], NULL, pool_worker, (void *)(intptr_t)index) != 0) {
      pthread_mutex_unlock(&pool_mu);
      fprintf(stderr, "cpu_benchmark: pthread_create failed\n");
      exit(2);
    }
    pool_started = index;
  }
  pool_fn = fn;
  pool_arg = arg;
  pool_count = count;
  pool_pending = count - 1;
  pool_gen++;
  pthread_cond_broadcast(&pool_start);
  pthread_mutex_unlock(&pool_mu);
  fn(arg, 0, count);
  pthread_mutex_lock(&pool_mu);
  while (pool_pending > 0) pthread_cond_wait(&pool_done, &pool_mu);
  pthread_mutex_unlock(&pool_mu);
}

void pool_shutdown(void) {
  pthread_mutex_lock(&pool_mu);
  pool_stop = 1;
  pthread_cond_broadcast(&pool_start);
  int started = pool_started;
  pthread_mutex_unlock(&pool_mu);
  for (int i = 1; i <= started; i++) pthread_join(pool_threads[i], NULL);
  pool_started = 0;
  pool_stop = 0;
}

struct copy_job {
  char *dst;
  const char *src;
  size_t bytes;
  int use_memcpy;
};

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Plain loads and stores, as the kernels write their outputs (no
 * non-temporal stores, which memcpy switches to above a size threshold). */
__attribute__((target("avx2"))) static void copy_avx2(char *dst, const char *src, size_t len) {
  size_t i = 0;
  for (; i + 128 <= len; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 64));
    __m256i d = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 96));
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), a);
    _mm256_storeu_si256((__m256i *)(void *)(dst + i + 32), b);
    _mm256_storeu_si256((__m256i *)(void *)(dst + i + 64), c);
    _mm256_storeu_si256((__m256i *)(void *)(dst + i + 96), d);
  }
  if (i < len) memcpy(dst + i, src + i, len - i);
}

static int have_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#else
static void copy_avx2(char *dst, const char *src, size_t len) { memcpy(dst, src, len); }
static int have_avx2(void) { return 0; }
#endif

static void copy_plain(char *dst, const char *src, size_t len) {
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t v;
    memcpy(&v, src + i, 8);
    memcpy(dst + i, &v, 8);
  }
  if (i < len) memcpy(dst + i, src + i, len - i);
}

static void copy_slice(void *p, int index, int count) {
  const struct copy_job *job = (const struct copy_job *)p;
  /* Slices start on 64-byte boundaries. */
  size_t per = (job->bytes / (size_t)count + 63) & ~(size_t)63;
  size_t begin = per * (size_t)index;
  if (begin >= job->bytes) return;
  size_t len = job->bytes - begin < per ? job->bytes - begin : per;
  static int avx2 = -1;
  if (avx2 < 0) avx2 = have_avx2();
  if (job->use_memcpy)
    memcpy(job->dst + begin, job->src + begin, len);
  else if (avx2)
    copy_avx2(job->dst + begin, job->src + begin, len);
  else
    copy_plain(job->dst + begin, job->src + begin, len);
}

void parallel_copy(void *dst, const void *src, size_t bytes, int count, int use_memcpy) {
  struct copy_job job = {(char *)dst, (const char *)src, bytes, use_memcpy};
  pool_run(count, copy_slice, &job);
}

const char *fmtv(char *buf, size_t len, int decimals, double v, int valid, const char *suffix) {
  if (valid && isfinite(v))
    snprintf(buf, len, "%.*f%s", decimals, v, suffix);
  else
    snprintf(buf, len, "n/a");
  return buf;
}
