/* vendored by tools/vendor_c.py from core/src/parallel.c; do not edit */
/* parallel.c - a fork-join loop over index ranges using POSIX threads. */
#include <pthread.h>

#include "internal.h"

#define KB_MAX_WORKERS 256

struct chunk {
  void (*body)(void *arg, int64_t begin, int64_t end);
  void *arg;
  int64_t begin, end;
};

static void *run_chunk(void *p) {
  struct chunk *c = (struct chunk *)p;
  c->body(c->arg, c->begin, c->end);
  return NULL;
}

void kb__parallel_for(const kb_context *ctx, int64_t n, int64_t min_chunk, void (*body)(void *arg, int64_t begin, int64_t end),
                      void *arg) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  int64_t workers = kb__threads(ctx);
  if (workers > n / min_chunk) workers = n / min_chunk;
  if (workers > KB_MAX_WORKERS) workers = KB_MAX_WORKERS;
  if (workers <= 1) {
    body(arg, 0, n);
    return;
  }
  struct chunk chunks[KB_MAX_WORKERS];
  pthread_t threads[KB_MAX_WORKERS];
  bool started[KB_MAX_WORKERS];
  for (int64_t w = 0; w < workers; w++) {
    chunks[w].body = body;
    chunks[w].arg = arg;
    /* Written to avoid overflowing n * w for huge n. */
    int64_t base = n / workers, extra = n % workers;
    chunks[w].begin = w * base + (w < extra ? w : extra);
    chunks[w].end = chunks[w].begin + base + (w < extra ? 1 : 0);
  }
  /* Chunk 0 runs on the calling thread; a chunk whose thread cannot be
   * created also runs here, so the loop always completes. */
  for (int64_t w = 1; w < workers; w++) started[w] = pthread_create(&threads[w], NULL, run_chunk, &chunks[w]) == 0;
  run_chunk(&chunks[0]);
  for (int64_t w = 1; w < workers; w++) {
    if (started[w])
      pthread_join(threads[w], NULL);
    else
      run_chunk(&chunks[w]);
  }
}

int64_t kb__task_count(const kb_context *ctx, int64_t n, int64_t min_chunk) {
  if (n <= 0) return 0;
  if (min_chunk < 1) min_chunk = 1;
  int64_t tasks = kb__threads(ctx);
  if (tasks > n / min_chunk) tasks = n / min_chunk;
  if (tasks > KB_MAX_WORKERS) tasks = KB_MAX_WORKERS;
  return tasks < 1 ? 1 : tasks;
}

void kb__task_range(int64_t n, int64_t tasks, int64_t t, int64_t *begin, int64_t *end) {
  /* Same balanced split as kb__parallel_for, written without n * t. */
  int64_t base = n / tasks, extra = n % tasks;
  *begin = t * base + (t < extra ? t : extra);
  *end = *begin + base + (t < extra ? 1 : 0);
}
