/* pool_race_test.c - REGRESSION TEST FOR A KNOWN POOL DEFECT (tagged manual
 * in core/BUILD until it is fixed; docs/reliability.md).
 *
 * A worker whose index is beyond a job's chunk count takes no part in that
 * job, but it decides so by reading p->chunks after it has seen the job's
 * generation.  When such a worker wakes late, the caller may already be
 * preparing the next job: the worker then reads the next job's (larger)
 * chunk count, runs its chunk of the next job before that job is announced,
 * decrements its pending count, and runs the same chunk again once the job
 * is announced.  The chunk runs twice and the caller can return while
 * another chunk is still running.
 *
 * The test alternates narrow loops (2 chunks) with wide ones (16 chunks) on
 * a 16-thread context and checks that every index of every wide loop is
 * visited exactly once by the time kb__parallel_for returns.  It stops at the
 * first wrong loop; a run without the defect takes a few seconds.  The same
 * race can also leave the pending count wrong so that the caller sleeps
 * forever: a watchdog thread fails the test when one pair of loops takes
 * more than 10 seconds. */
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
    if (wrong > 0 || now.tv_sec - start.tv_sec >= 4) break;
  }
  printf("%ld pairs of loops, %ld wrong\n", loops, wrong);
  CHECK(wrong == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_narrow_then_wide_loops);
  return kb_test_summary();
}
