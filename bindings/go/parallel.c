/* vendored by tools/vendor_c.py from core/src/parallel.c; do not edit */
/* parallel.c - fork-join loops over index ranges on the context's worker
 * pool (pool.c). */
#include "internal.h"

/* Chunks of one loop at most: the same cap as a context's thread count. */
#define KB_MAX_WORKERS 256

void kb__parallel_for(const kb_context *ctx, int64_t n, int64_t min_chunk, void (*body)(void *arg, int64_t begin, int64_t end),
                      void *arg) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  int64_t workers = kb__threads(ctx);
  if (workers > n / min_chunk) workers = n / min_chunk;
  if (workers > KB_MAX_WORKERS) workers = KB_MAX_WORKERS;
  /* One chunk, or a pool that cannot run (no threads could be started, or
   * this is a nested call inside a job): the whole range inline.  What an
   * index computes never depends on the split, so this is always correct. */
  if (workers <= 1 || !kb__pool_run(ctx->pool, workers, n, body, arg)) body(arg, 0, n);
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
  /* The pool's balanced split, written without n * t. */
  int64_t base = n / tasks, extra = n % tasks;
  *begin = t * base + (t < extra ? t : extra);
  *end = *begin + base + (t < extra ? 1 : 0);
}
