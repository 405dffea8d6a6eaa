/* concurrency_test.c - many threads using the library at once (run under
 * ThreadSanitizer by .ci/run, docs/reliability.md).
 *
 * 8 threads start together (a barrier) and each: creates contexts (CPU with
 * 1 and 2 threads, and AUTO, whose first use in the process probes for the
 * CUDA backend, so the probe is raced too), asks for the instruction-set
 * level and the thread's last error, then makes 2 000 kernel calls mixing
 * the NULL context, its one-thread context and its two-thread context (the
 * latter's workers start under the race), and destroys everything.  Every
 * result must be bit-identical to the same call made alone before the
 * threads started. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kb_test.h"
#include "kernelbridge.h"

#define THREADS 8
#define CALLS 2000
#define KINDS 5
#define BIG 64

static float x[BIG * BIG], w[BIG * BIG], logits[4 * 100];
static uint32_t want[KINDS][BIG * BIG];
static pthread_barrier_t start;

static void fill(float *p, int n, uint32_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((int32_t)(seed >> 8) % 2000) / 500.0f;
  }
}

/* Call `kind` on ctx; the output's bits in out (BIG * BIG words). */
static kb_status call(kb_context *ctx, int kind, uint32_t *out) {
  float y[BIG * BIG];
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
      st = kb_attention(ctx, 1, 4, 2, 16, 16, 16, x, w, w + 1024, true, 0.0f, y);
      break;
    default:
      st = kb_topp_sample(ctx, 4, 100, logits, 0.9f, 0.7f, 99, tokens);
      memcpy(y, tokens, sizeof tokens);
      break;
  }
  memcpy(out, y, sizeof y);
  return st;
}

static void *worker(void *arg) {
  long id = (long)arg, bad = 0;
  static uint32_t got[THREADS][BIG * BIG];
  pthread_barrier_wait(&start);
  kb_context *one = NULL, *two = NULL, *any = NULL;
  if (kb_context_create(KB_BACKEND_CPU, 1, &one) != KB_STATUS_OK) bad++;
  if (kb_context_create(KB_BACKEND_CPU, 2, &two) != KB_STATUS_OK) bad++;
  if (kb_context_create(KB_BACKEND_AUTO, 2, &any) != KB_STATUS_OK) bad++;
  if (kb_cpu_isa() == NULL || kb_last_error() == NULL) bad++;
  kb_context *on_cpu = kb_context_backend(any) == KB_BACKEND_CPU ? any : two;
  kb_context *ctxs[4] = {NULL, one, two, on_cpu};
  for (int j = 0; j < CALLS && bad == 0; j++) {
    int kind = (int)((id + j) % KINDS);
    if (call(ctxs[(id + j / KINDS) % 4], kind, got[id]) != KB_STATUS_OK ||
        memcmp(got[id], want[kind], sizeof want[kind]) != 0) {
      fprintf(stderr, "thread %ld call %d (kind %d) differs from the call made alone\n", id, j, kind);
      bad++;
    }
  }
  kb_context_destroy(any);
  kb_context_destroy(two);
  kb_context_destroy(one);
  return (void *)bad;
}

static void test_threads_at_once(void) {
  fill(x, BIG * BIG, 1);
  fill(w, BIG * BIG, 2);
  fill(logits, 400, 3);
  for (int kind = 0; kind < KINDS; kind++) CHECK_OK(call(NULL, kind, want[kind]));
  CHECK(pthread_barrier_init(&start, NULL, THREADS) == 0);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
  long bad = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r = NULL;
    CHECK(pthread_join(t[i], &r) == 0);
    bad += (long)r;
  }
  CHECK(bad == 0);
  pthread_barrier_destroy(&start);
}

int main(void) {
  KB_RUN(test_threads_at_once);
  return kb_test_summary();
}
