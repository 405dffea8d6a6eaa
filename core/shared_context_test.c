/* shared_context_test.c - one context shared by many threads, and destroyed
 * while they use it (run under ThreadSanitizer by .ci/run).
 *
 * - 8 threads x 1,500 mixed calls on one CPU context (2 worker threads, so
 *   the calls contend for its pool; and one with a thread per CPU): every
 *   result is bit-identical to the same call made alone beforehand, and a
 *   failing call made between them (each thread with its own bad argument)
 *   reports its own message, not another thread's.
 * - Host buffers on the shared context from all threads.
 * - kb_context_destroy while 8 threads are inside calls on the context:
 *   destroy waits for the calls inside; each call either gives the right
 *   bits or fails with INVALID_ARGUMENT saying the context was destroyed;
 *   none crashes or hangs.  A call that takes long is finished before
 *   destroy returns.
 * - A second destroy of the same handle does nothing.
 * - CUDA contexts (on the fake backend): calls from 8 threads are
 *   serialised (the fake counts overlapping entries), and destroy waits.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda.h"
#include "internal.h"
#include "kb_test.h"
#include "kernelbridge.h"

#define THREADS 8
#define CALLS 1500
#define KINDS 7
#define BIG 96

static float x[BIG * BIG], w[BIG * BIG], logits[4 * 100];
static uint32_t want[KINDS][BIG * BIG];

static void fill(float *p, int n, uint32_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((int32_t)(seed >> 8) % 2000) / 500.0f;
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Call `kind` on ctx; the output's bits in out (BIG * BIG words).  Kinds 1,
 * 3 and 6 are large enough to use the context's worker pool. */
static kb_status call(kb_context *ctx, int kind, uint32_t *out) {
  static __thread float y[BIG * BIG];
  int32_t tokens[4];
  kb_status st;
  memset(y, 0, sizeof y);
  memset(tokens, 0, sizeof tokens);
  switch (kind) {
    case 0:
      st = kb_gelu(ctx, BIG, x, y);
      break;
    case 1:
      st = kb_gemm(ctx, false, true, BIG, BIG, BIG, 1.0f, x, BIG, w, BIG, 0.0f, y, BIG);
      break;
    case 2:
      st = kb_layernorm(ctx, 8, BIG, x, w, NULL, 1e-5f, y);
      break;
    case 3:
      st = kb_attention(ctx, 1, 4, 2, 32, 32, 32, x, w, w + 2048, true, 0.0f, y);
      break;
    case 4:
      st = kb_topp_sample(ctx, 4, 100, logits, 0.9f, 0.7f, 99, tokens);
      memcpy(y, tokens, sizeof tokens);
      break;
    case 5:
      st = kb_softmax(ctx, BIG, BIG, x, y);
      break;
    default:
      st = kb_linear(ctx, BIG, BIG, BIG, x, w, w + BIG, KB_ACTIVATION_SILU, y);
      break;
  }
  memcpy(out, y, sizeof y);
  return st;
}

static void compute_wanted(void) {
  fill(x, BIG * BIG, 1);
  fill(w, BIG * BIG, 2);
  fill(logits, 400, 3);
  for (int kind = 0; kind < KINDS; kind++) CHECK_OK(call(NULL, kind, want[kind]));
}

/* ---- many threads, one context ---- */

struct shared_job {
  kb_context *ctx;
  long id;
  pthread_barrier_t *start;
  long bad;
};

static void *shared_worker(void *arg) {
  struct shared_job *j = (struct shared_job *)arg;
  static __thread uint32_t got[BIG * BIG];
  pthread_barrier_wait(j->start);
  for (int c = 0; c < CALLS && j->bad == 0; c++) {
    int kind = (int)((j->id + c) % KINDS);
    if (call(j->ctx, kind, got) != KB_STATUS_OK || memcmp(got, want[kind], sizeof got) != 0) {
      fprintf(stderr, "thread %ld call %d (kind %d) differs from the call made alone\n", j->id, c, kind);
      j->bad++;
    }
    if (c % 50 == 0) {
      /* A failing call: this thread's own bad value, its own message. */
      float y[4];
      int64_t bad_cols = -(j->id + 1);
      char wanted[80];
      snprintf(wanted, sizeof wanted, "kb_softmax: cols must be >= 0, got %lld", (long long)bad_cols);
      if (kb_softmax(j->ctx, 1, bad_cols, x, y) != KB_STATUS_INVALID_ARGUMENT ||
          strcmp(kb_context_last_error(j->ctx), wanted) != 0) {
        fprintf(stderr, "thread %ld: message \"%s\", expected \"%s\"\n", j->id, kb_context_last_error(j->ctx), wanted);
        j->bad++;
      }
      /* A successful call clears it (for this thread). */
      if (kb_gelu(j->ctx, 4, x, y) != KB_STATUS_OK || kb_context_last_error(j->ctx)[0] != '\0') j->bad++;
    }
    if (c % 100 == 0) {
      /* Host buffers on the shared context. */
      kb_buffer *b = NULL;
      float back[BIG];
      if (kb_buffer_create(j->ctx, sizeof back, &b) != KB_STATUS_OK ||
          kb_buffer_upload(j->ctx, b, 0, sizeof back, x + j->id) != KB_STATUS_OK ||
          kb_buffer_download(j->ctx, b, 0, sizeof back, back) != KB_STATUS_OK ||
          memcmp(back, x + j->id, sizeof back) != 0) {
        fprintf(stderr, "thread %ld: buffer round trip failed\n", j->id);
        j->bad++;
      }
      kb_buffer_destroy(b);
    }
  }
  return NULL;
}

static void run_shared(int64_t threads) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, threads, &ctx));
  pthread_barrier_t start;
  CHECK(pthread_barrier_init(&start, NULL, THREADS) == 0);
  struct shared_job jobs[THREADS];
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) {
    jobs[i] = (struct shared_job){ctx, i, &start, 0};
    CHECK(pthread_create(&t[i], NULL, shared_worker, &jobs[i]) == 0);
  }
  long bad = 0;
  for (int i = 0; i < THREADS; i++) {
    CHECK(pthread_join(t[i], NULL) == 0);
    bad += jobs[i].bad;
  }
  CHECK(bad == 0);
  pthread_barrier_destroy(&start);
  kb_context_destroy(ctx);
}

static void test_shared_two_threads(void) { run_shared(2); }
static void test_shared_all_cpus(void) { run_shared(0); }

/* ---- destroy while in use ---- */

struct destroy_job {
  kb_context *ctx;
  long id;
  int *go;          /* atomic: 0 until the threads may start */
  int *started;     /* atomic: threads that have finished a call */
  long done, refused, bad;
};

static void *destroy_worker(void *arg) {
  struct destroy_job *j = (struct destroy_job *)arg;
  static __thread uint32_t got[BIG * BIG];
  while (!__atomic_load_n(j->go, __ATOMIC_ACQUIRE)) {
  }
  /* Calls until the context is gone, then a few more on the stale handle. */
  for (int c = 0, after = 0; after < 20 && c < 100000; c++) {
    int kind = (int)((j->id + c) % KINDS);
    kb_status st = call(j->ctx, kind, got);
    if (st == KB_STATUS_OK) {
      if (j->done++ == 0) __atomic_add_fetch(j->started, 1, __ATOMIC_RELEASE);
      if (memcmp(got, want[kind], sizeof got) != 0) j->bad++;
    } else if (st == KB_STATUS_INVALID_ARGUMENT && strstr(kb_context_last_error(j->ctx), "destroyed context") != NULL) {
      j->refused++;
      after++;
    } else {
      fprintf(stderr, "thread %ld: %s \"%s\"\n", j->id, kb_status_string(st), kb_context_last_error(j->ctx));
      j->bad++;
      if (j->done == 0) __atomic_add_fetch(j->started, 1, __ATOMIC_RELEASE);
      break;
    }
  }
  return NULL;
}

static void test_destroy_while_in_use(void) {
  for (int round = 0; round < 3; round++) {
    kb_context *ctx = NULL;
    CHECK_OK(kb_context_create(KB_BACKEND_CPU, 2, &ctx));
    int go = 0, started = 0;
    struct destroy_job jobs[THREADS];
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) {
      jobs[i] = (struct destroy_job){ctx, i, &go, &started, 0, 0, 0};
      CHECK(pthread_create(&t[i], NULL, destroy_worker, &jobs[i]) == 0);
    }
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    /* Destroy only once every thread has finished a call, so that the
       destroy lands among calls however late the threads start (under TSan
       on a loaded machine they can start after a fixed pause has ended). */
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < THREADS) sched_yield();
    struct timespec pause = {0, 2000000 * (round + 1)};
    nanosleep(&pause, NULL);
    kb_context_destroy(ctx);
    long done = 0, refused = 0, bad = 0;
    for (int i = 0; i < THREADS; i++) {
      CHECK(pthread_join(t[i], NULL) == 0);
      done += jobs[i].done;
      refused += jobs[i].refused;
      bad += jobs[i].bad;
    }
    CHECK(bad == 0);
    CHECK(refused >= THREADS * 20); /* every thread saw the destroy */
    CHECK(done > 0);
    printf("destroy while in use, round %d: %ld calls done, %ld refused\n", round, done, refused);
    /* Destroying it again does nothing. */
    kb_context_destroy(ctx);
  }
}

/* A call that takes a while is finished when destroy returns. */
struct long_job {
  kb_context *ctx;
  int *inside; /* atomic */
  float *c;
  double finished;
  kb_status st;
};

#define LONG_N 640

static void *long_call(void *arg) {
  struct long_job *j = (struct long_job *)arg;
  static float a[LONG_N * LONG_N];
  for (int i = 0; i < LONG_N * LONG_N; i++) a[i] = (float)(i % 7) - 3.0f;
  __atomic_store_n(j->inside, 1, __ATOMIC_RELEASE);
  j->st = kb_gemm(j->ctx, false, false, LONG_N, LONG_N, LONG_N, 1.0f, a, LONG_N, a, LONG_N, 0.0f, j->c, LONG_N);
  j->finished = now();
  return NULL;
}

static void test_destroy_waits(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 2, &ctx));
  int inside = 0;
  float *c = (float *)calloc(LONG_N * LONG_N, sizeof(float));
  CHECK(c != NULL);
  struct long_job j = {ctx, &inside, c, 0.0, KB_STATUS_INTERNAL};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, long_call, &j) == 0);
  while (!__atomic_load_n(&inside, __ATOMIC_ACQUIRE)) {
  }
  struct timespec pause = {0, 1000000};
  nanosleep(&pause, NULL);
  kb_context_destroy(ctx);
  double destroyed = now();
  CHECK(pthread_join(t, NULL) == 0);
  /* Either the gemm ran (and finished before destroy returned) or it came
   * after destroy began and was refused. */
  if (j.st == KB_STATUS_OK) {
    CHECK(j.finished <= destroyed);
    float want0 = 0.0f; /* c[0] = sum_k a[0][k] * a[k][0] */
    for (int k = 0; k < LONG_N; k++) want0 += ((float)(k % 7) - 3.0f) * ((float)((k * LONG_N) % 7) - 3.0f);
    CHECK_CLOSE(c[0], want0, 1e-3, 1e-5);
  } else {
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, j.st);
  }
  free(c);
}

/* ---- CUDA contexts (fake backend) ---- */

struct cuda_job {
  kb_context *ctx;
  kb_buffer *in, *out;
  int calls;
  long done, refused, bad;
};

static void *cuda_worker(void *arg) {
  struct cuda_job *j = (struct cuda_job *)arg;
  for (int c = 0; c < j->calls; c++) {
    kb_status st = c % 10 == 9 ? kb_context_synchronize(j->ctx)
                               : kb_silu(j->ctx, 16, (const float *)kb_buffer_data(j->in), (float *)kb_buffer_data(j->out));
    if (st == KB_STATUS_OK)
      j->done++;
    else if (st == KB_STATUS_INVALID_ARGUMENT && strstr(kb_context_last_error(j->ctx), "destroyed context") != NULL)
      j->refused++;
    else
      j->bad++;
  }
  return NULL;
}

/* 8 threads on one CUDA context; destroy_after_ms >= 0: destroy it while
 * they run.  Returns the calls refused. */
static long run_cuda(int calls, int destroy_after_ms) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  kb_buffer *in = NULL, *out = NULL;
  CHECK_OK(kb_buffer_create(ctx, 64, &in));
  CHECK_OK(kb_buffer_create(ctx, 64, &out));
  int before = kb_fake_cuda_overlaps();
  struct cuda_job jobs[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    jobs[i] = (struct cuda_job){ctx, in, out, calls, 0, 0, 0};
    CHECK(pthread_create(&t[i], NULL, cuda_worker, &jobs[i]) == 0);
  }
  if (destroy_after_ms >= 0) {
    struct timespec pause = {0, 1000000L * destroy_after_ms};
    nanosleep(&pause, NULL);
    kb_context_destroy(ctx);
  }
  long done = 0, refused = 0, bad = 0;
  for (int i = 0; i < THREADS; i++) {
    CHECK(pthread_join(t[i], NULL) == 0);
    done += jobs[i].done;
    refused += jobs[i].refused;
    bad += jobs[i].bad;
  }
  CHECK(kb_fake_cuda_overlaps() == before); /* never two entries on the ctx at once */
  CHECK(bad == 0);
  CHECK(done + refused == (long)THREADS * calls);
  if (destroy_after_ms < 0) kb_context_destroy(ctx);
  kb_buffer_destroy(in);
  kb_buffer_destroy(out);
  return refused;
}

static void test_cuda_calls_serialised(void) {
  kb__cuda_use_table_for_testing(kb_fake_cuda_table());
  CHECK(run_cuda(300, -1) == 0);
  /* Enough calls that some are still to come when destroy runs. */
  long refused = run_cuda(20000, 2);
  CHECK(refused > 0);
  printf("CUDA context destroyed while in use: %ld calls refused\n", refused);
  kb__cuda_use_table_for_testing(NULL);
}

int main(void) {
  compute_wanted();
  KB_RUN(test_shared_two_threads);
  KB_RUN(test_shared_all_cpus);
  KB_RUN(test_destroy_while_in_use);
  KB_RUN(test_destroy_waits);
  KB_RUN(test_cuda_calls_serialised);
  /* Again where calls fence on entry (no membarrier: other kernels,
   * valgrind). */
  kb__calls_use_fences_for_testing();
  KB_RUN(test_shared_two_threads);
  KB_RUN(test_destroy_while_in_use);
  KB_RUN(test_destroy_waits);
  return kb_test_summary();
}
