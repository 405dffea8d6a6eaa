/* parallel_test.c - kb__parallel_for visits every index exactly once. */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"
#include "kb_test.h"

#define MAX_CHUNKS 1024

/* What one kb__parallel_for call did: per-index visit counts and the chunks. */
struct record {
  pthread_mutex_t lock;
  int64_t n;
  int *visits;
  int64_t chunk_begin[MAX_CHUNKS];
  int64_t chunk_end[MAX_CHUNKS];
  int chunks;
  int bad_range;
};

static void body(void *arg, int64_t begin, int64_t end) {
  struct record *r = (struct record *)arg;
  pthread_mutex_lock(&r->lock);
  if (begin < 0 || end > r->n || begin >= end || r->chunks >= MAX_CHUNKS) {
    r->bad_range = 1;
  } else {
    r->chunk_begin[r->chunks] = begin;
    r->chunk_end[r->chunks] = end;
    r->chunks++;
    for (int64_t i = begin; i < end; i++) r->visits[i]++;
  }
  pthread_mutex_unlock(&r->lock);
}

/* Runs one loop and checks coverage, chunk count and chunk sizes. */
static void check_loop(const kb_context *ctx, int64_t threads, int64_t n, int64_t min_chunk) {
  struct record r;
  memset(&r, 0, sizeof r);
  pthread_mutex_init(&r.lock, NULL);
  r.n = n;
  r.visits = (int *)calloc((size_t)(n > 0 ? n : 1), sizeof *r.visits);
  CHECK(r.visits != NULL);
  if (r.visits == NULL) return;

  kb__parallel_for(ctx, n, min_chunk, body, &r);

  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += r.visits[i] != 1;
  if (wrong != 0 || r.bad_range)
    fprintf(stderr, "threads=%lld n=%lld min_chunk=%lld: %lld indices not visited exactly once\n", (long long)threads,
            (long long)n, (long long)min_chunk, (long long)wrong);
  CHECK(wrong == 0);
  CHECK(!r.bad_range);

  if (n <= 0) {
    CHECK(r.chunks == 0);
  } else {
    int64_t effective_min = min_chunk < 1 ? 1 : min_chunk;
    CHECK(r.chunks >= 1);
    CHECK(r.chunks <= threads);
    /* Chunks are only split off when each is worth a thread. */
    if (r.chunks > 1) {
      for (int c = 0; c < r.chunks; c++) CHECK(r.chunk_end[c] - r.chunk_begin[c] >= effective_min);
    }
  }
  free(r.visits);
  pthread_mutex_destroy(&r.lock);
}

static void test_covers_every_index_once(void) {
  const int64_t thread_counts[] = {1, 2, 3, 4, 7, 8, 16, 64};
  const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 8, 63, 64, 65, 1000, 4097};
  const int64_t min_chunks[] = {1, 2, 3, 100};
  for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
    kb_context *ctx = NULL;
    CHECK_OK(kb_context_create(KB_BACKEND_CPU, thread_counts[t], &ctx));
    if (ctx == NULL) continue;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t m = 0; m < sizeof min_chunks / sizeof min_chunks[0]; m++)
        check_loop(ctx, thread_counts[t], sizes[s], min_chunks[m]);
    kb_context_destroy(ctx);
  }
}

static void test_null_context_runs_inline(void) {
  const int64_t sizes[] = {0, 1, 10, 1000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) check_loop(NULL, 1, sizes[s], 1);
}

static void test_non_positive_min_chunk(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 4, &ctx));
  check_loop(ctx, 4, 100, 0);
  check_loop(ctx, 4, 100, -5);
  check_loop(ctx, 4, 3, INT64_MIN);
  kb_context_destroy(ctx);
}

static void test_negative_n_does_nothing(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 4, &ctx));
  check_loop(ctx, 4, -1, 1);
  check_loop(ctx, 4, INT64_MIN, 1);
  kb_context_destroy(ctx);
}

static void test_all_online_cpus(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 0, &ctx));
  if (ctx == NULL) return;
  check_loop(ctx, kb_context_num_threads(ctx), 100000, 1);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_covers_every_index_once);
  KB_RUN(test_null_context_runs_inline);
  KB_RUN(test_non_positive_min_chunk);
  KB_RUN(test_negative_n_does_nothing);
  KB_RUN(test_all_online_cpus);
  return kb_test_summary();
}
