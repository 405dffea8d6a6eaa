/* pool_race_test.c - hand-over of jobs between narrow and wide loops.
 *
 * Regression test of a defect the sanitizer runs found (docs/reliability.md,
 * fixed in pool.c since): a worker whose index was beyond a job's chunk
 * count decided to sit the job out by reading p->chunks after it had seen
 * the job's generation.  Waking late, it could read the next job's (larger)
 * chunk count while the caller was preparing that job, run its chunk of the
 * next job before the job was announced, decrement the pending count, and
 * run the same chunk again once the job was announced: a chunk ran twice,
 * the caller could return while another chunk was still running, and the
 * pending count could end below zero, leaving the caller asleep for ever.
 *
 * The test alternates narrow loops (2 chunks) with wide ones (64 indices,
 * 16 chunks) on a 16-thread context for 3 seconds and checks that every
 * index of every loop was visited exactly once by the time
 * kb__parallel_for returned; a watchdog thread fails the test when one pair
 * of loops takes more than 10 seconds.  With the defect, half of the runs
 * failed within 4 seconds on 2 CPUs. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kb_test.h"

#define WIDE 64

struct visits {
  int count[WIDE];
};

static void visit(void *arg, int64_t begin, int64_t end) {
  struct visits *v = (struct visits *)arg;
  for (int64_t i = begin; i < end; i++) __atomic_add_fetch(&v->count[i], 1, __ATOMIC_RELAXED);
}

static long progress; /* atomic: pairs of loops done */

static void *watchdog(void *arg) {
  (void)arg;
  long last = -1;
  for (;;) {
    sleep(10);
    long now = __atomic_load_n(&progress, __ATOMIC_RELAXED);
    if (now == last) {
      fprintf(stderr, "after %ld pairs of loops, kb__parallel_for has not returned for 10 s: the caller waits for "
              "workers that are all asleep\nFAILED: test_narrow_then_wide_loops\n", now);
      _exit(1);
    }
    last = now;
  }
  return NULL;
}

static void test_narrow_then_wide_loops(void) {
  pthread_t dog;
  CHECK(pthread_create(&dog, NULL, watchdog, NULL) == 0);
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 16, &ctx));
  if (ctx == NULL) return;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  long loops = 0, wrong = 0;
  for (;;) {
    struct visits narrow, wide;
    memset(&narrow, 0, sizeof narrow);
    memset(&wide, 0, sizeof wide);
    kb__parallel_for(ctx, 2, 1, visit, &narrow);
    kb__parallel_for(ctx, WIDE, 1, visit, &wide);
    loops++;
    __atomic_store_n(&progress, loops, __ATOMIC_RELAXED);
    for (int i = 0; i < WIDE; i++) {
      int seen = __atomic_load_n(&wide.count[i], __ATOMIC_RELAXED);
      if (seen != 1) {
        fprintf(stderr, "loop %ld: index %d of the wide loop visited %d times when kb__parallel_for returned\n",
                loops, i, seen);
        wrong++;
      }
    }
    if (narrow.count[0] != 1 || narrow.count[1] != 1) {
      fprintf(stderr, "loop %ld: the narrow loop visited its indices %d and %d times\n", loops, narrow.count[0],
              narrow.count[1]);
      wrong++;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (wrong > 0 || now.tv_sec - start.tv_sec >= 3) break;
  }
  printf("%ld pairs of loops, %ld wrong\n", loops, wrong);
  CHECK(wrong == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_narrow_then_wide_loops);
  return kb_test_summary();
}
