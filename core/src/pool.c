/* pool.c - the persistent worker threads of a CPU context.
 *
 * A context with num_threads = T > 1 owns T - 1 worker threads, started the
 * first time a call splits its work (never for T = 1, never for calls small
 * enough to run inline) and joined by kb_context_destroy.  A job is one
 * kb__parallel_for of c chunks: the caller runs chunk 0 itself and hands
 * chunk w to worker w (w < c) through that worker's own slot, so a job
 * costs c - 1 hand-overs, no thread creation and no allocation, and workers
 * beyond c are not disturbed.
 *
 * Waiting spins briefly (a job usually follows another within microseconds
 * inside one model step) and then sleeps on a condition variable, so an idle
 * context costs no CPU.  The spin/sleep hand-over uses sequentially
 * consistent atomics on both sides (announce, then check the other side's
 * flag), so no wake-up is lost.
 *
 * fork(): only the forking thread exists in the child, so a pool started
 * before the fork has no workers there.  A fork handler (registered once per
 * process) bumps a generation counter; a pool started in an older generation
 * forgets its threads and starts new ones on its next job.
 *
 * A kb__parallel_for issued from inside a job (a kernel calling another on
 * the same context) runs inline: the workers are busy with the outer job.
 *
 * One job at a time: a context may be shared by threads (calls.c), and a
 * caller that finds the pool held by another thread's job runs its whole
 * range inline instead of waiting.  What an index computes never depends on
 * the split, so its results are the same bits; two threads sharing a
 * two-thread context each keep a core busy rather than queue. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Iterations of the spin loop before sleeping (each is a pause instruction,
 * tens of nanoseconds): about 50-100 microseconds. */
#define KB_POOL_SPIN 4000

/* One worker: its own job slot and condition variable, so a job of c
 * chunks reaches exactly the c - 1 workers it needs, and a worker never
 * looks at a job it has no part in (the job's fields may be rewritten for
 * the next job as soon as its own workers are done). */
struct kb_worker {
  pthread_t thread;
  pthread_cond_t wake;
  uint64_t assigned; /* atomic: generation of the last job given to this worker */
  int sleeping;      /* atomic: asleep (or about to sleep) on wake */
};

struct kb_pool {
  pthread_mutex_t mu;
  pthread_cond_t done; /* the caller sleeps here until a job completes */
  int64_t workers;     /* worker threads wanted: num_threads - 1 */
  int64_t running;     /* worker threads started (0 until the first job) */
  struct kb_worker *w; /* [workers] */
  int spin;            /* spin iterations before sleeping; 0 when oversubscribed */
  uint64_t fork_gen;   /* generation in which the threads were started */
  bool failed;         /* starting threads failed once: run inline from now on */

  /* The current job, written by the caller before it assigns the job to
   * its workers, unchanged until they are all done. */
  void (*body)(void *arg, int64_t begin, int64_t end);
  void *arg;
  int64_t n, chunks;
  uint64_t job_gen;    /* jobs started (caller only) */
  int64_t pending;     /* atomic: workers of the job not finished */
  int caller_sleeping; /* atomic */
  int stopping;        /* atomic */
  int held;            /* atomic: 1 while a caller runs a job (or starts the workers) */
};

struct worker_arg {
  struct kb_pool *pool;
  int64_t index; /* 1 .. workers */
};

/* True on threads currently running a chunk of some job. */
static __thread int in_job;

static uint64_t fork_generation; /* atomic */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void) { __atomic_add_fetch(&fork_generation, 1, __ATOMIC_SEQ_CST); }

static void register_fork_handler(void) { pthread_atfork(NULL, NULL, after_fork_in_child); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* The same balanced split everywhere (also kb__task_range), without n * w. */
static void chunk_range(int64_t n, int64_t chunks, int64_t w, int64_t *begin, int64_t *end) {
  int64_t base = n / chunks, extra = n % chunks;
  *begin = w * base + (w < extra ? w : extra);
  *end = *begin + base + (w < extra ? 1 : 0);
}

static void run_chunk(struct kb_pool *p, int64_t w) {
  if (w >= p->chunks) return;
  int64_t begin, end;
  chunk_range(p->n, p->chunks, w, &begin, &end);
  in_job = 1;
  p->body(p->arg, begin, end);
  in_job = 0;
}

static void *worker_main(void *argp) {
  struct worker_arg wa = *(struct worker_arg *)argp;
  free(argp);
  struct kb_pool *p = wa.pool;
  struct kb_worker *me = &p->w[wa.index - 1];
  /* Slots start at 0 (calloc) and only the caller changes them: the first
   * job is whatever differs from 0, even if it came before this line. */
  uint64_t seen = 0;
  for (;;) {
    uint64_t job = seen;
    for (int spin = 0; spin < p->spin; spin++) {
      job = __atomic_load_n(&me->assigned, __ATOMIC_ACQUIRE);
      if (job != seen || __atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) break;
      cpu_relax();
    }
    if (job == seen && !__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) {
      pthread_mutex_lock(&p->mu);
      __atomic_store_n(&me->sleeping, 1, __ATOMIC_SEQ_CST);
      while ((job = __atomic_load_n(&me->assigned, __ATOMIC_SEQ_CST)) == seen &&
             !__atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&me->wake, &p->mu);
      __atomic_store_n(&me->sleeping, 0, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&p->mu);
    }
    if (__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) break;
    seen = job;
    run_chunk(p, wa.index);
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&p->caller_sleeping, __ATOMIC_SEQ_CST)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

static bool init_sync(struct kb_pool *p) {
  if (pthread_mutex_init(&p->mu, NULL) != 0) return false;
  if (pthread_cond_init(&p->done, NULL) != 0) {
    pthread_mutex_destroy(&p->mu);
    return false;
  }
  return true;
}

static void destroy_sync(struct kb_pool *p) {
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
}

static int64_t online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int64_t)n : 1;
}

struct kb_pool *kb__pool_create(int64_t num_threads) {
  if (num_threads <= 1) return NULL;
  struct kb_pool *p = (struct kb_pool *)calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  if (!init_sync(p)) {
    free(p);
    return NULL;
  }
  p->workers = num_threads - 1;
  /* More threads than CPUs: a spinning thread would only steal the time of
   * the one it waits for, so sleep at once. */
  p->spin = num_threads <= online_cpus() ? KB_POOL_SPIN : 0;
  pthread_once(&fork_once, register_fork_handler);
  p->fork_gen = __atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST);
  return p;
}

/* Asks the running workers to exit, joins them and frees their slots. */
static void stop_workers(struct kb_pool *p) {
  if (p->running > 0) {
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stopping, 1, __ATOMIC_SEQ_CST);
    for (int64_t i = 0; i < p->running; i++) pthread_cond_signal(&p->w[i].wake);
    pthread_mutex_unlock(&p->mu);
    for (int64_t i = 0; i < p->running; i++) pthread_join(p->w[i].thread, NULL);
    for (int64_t i = 0; i < p->running; i++) pthread_cond_destroy(&p->w[i].wake);
  }
  p->running = 0;
  __atomic_store_n(&p->stopping, 0, __ATOMIC_SEQ_CST);
  free(p->w);
  p->w = NULL;
}

void kb__pool_destroy(struct kb_pool *p) {
  if (p == NULL) return;
  if (p->fork_gen == __atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST)) {
    stop_workers(p);
  } else {
    /* In a child of fork() the threads belong to the parent: nothing to
     * join, and their condition variables may be in any state. */
    free(p->w);
  }
  destroy_sync(p);
  free(p);
}

/* Starts the workers; false (and the pool runs everything inline) when a
 * thread or its bookkeeping cannot be had.  Workers block every signal, so
 * signals go to the application's own threads. */
static bool start_workers(struct kb_pool *p) {
  pthread_once(&fork_once, register_fork_handler);
  uint64_t gen = __atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST);
  if (p->fork_gen != gen) {
    /* Forked since the pool was set up: the workers do not exist here, and
     * the parent may have held the mutex at the fork.  Start afresh. */
    free(p->w);
    p->w = NULL;
    p->running = 0;
    p->fork_gen = gen;
    __atomic_store_n(&p->caller_sleeping, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&p->stopping, 0, __ATOMIC_SEQ_CST);
    if (!init_sync(p)) {
      p->failed = true;
      return false;
    }
  }
  if (p->running > 0) return true;
  if (p->failed) return false;
  p->w = (struct kb_worker *)calloc((size_t)p->workers, sizeof *p->w);
  if (p->w == NULL) {
    p->failed = true;
    return false;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int64_t i = 0; i < p->workers; i++) {
    struct worker_arg *wa = (struct worker_arg *)malloc(sizeof *wa);
    if (wa == NULL) break;
    wa->pool = p;
    wa->index = i + 1;
    if (pthread_cond_init(&p->w[i].wake, NULL) != 0) {
      free(wa);
      break;
    }
    if (pthread_create(&p->w[i].thread, NULL, worker_main, wa) != 0) {
      pthread_cond_destroy(&p->w[i].wake);
      free(wa);
      break;
    }
    p->running++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (p->running < p->workers) {
    /* Partial start: chunk w must have worker w, so give up on threads. */
    stop_workers(p);
    p->failed = true;
    return false;
  }
  return true;
}

/* kb__pool_run's job (p->body, arg, n, chunks), with the pool held. */
static bool run_job(struct kb_pool *p) {
  if (!start_workers(p)) return false;
  int64_t chunks = p->chunks;
  uint64_t job = ++p->job_gen;
  __atomic_store_n(&p->pending, chunks - 1, __ATOMIC_SEQ_CST);
  bool locked = false;
  for (int64_t i = 0; i < chunks - 1; i++) {
    /* Publishes the job's fields to worker i + 1 (seq_cst, paired with the
     * worker's sleeping flag: either it sees the job or we see it asleep). */
    __atomic_store_n(&p->w[i].assigned, job, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&p->w[i].sleeping, __ATOMIC_SEQ_CST)) continue;
    if (!locked) pthread_mutex_lock(&p->mu);
    locked = true;
    pthread_cond_signal(&p->w[i].wake);
  }
  if (locked) pthread_mutex_unlock(&p->mu);
  run_chunk(p, 0);
  for (int spin = 0; spin < p->spin; spin++) {
    if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) == 0) return true;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  __atomic_store_n(&p->caller_sleeping, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&p->pending, __ATOMIC_SEQ_CST) != 0) pthread_cond_wait(&p->done, &p->mu);
  __atomic_store_n(&p->caller_sleeping, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&p->mu);
  return true;
}

bool kb__pool_run(struct kb_pool *p, int64_t chunks, int64_t n, void (*body)(void *arg, int64_t begin, int64_t end),
                  void *arg) {
  if (p == NULL || in_job || chunks < 2 || chunks - 1 > p->workers) return false;
  /* Held by another thread's job (or, in a child of fork(), by a thread that
   * was inside a job at the fork and does not exist here): run inline. */
  int expected = 0;
  if (!__atomic_compare_exchange_n(&p->held, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return false;
  p->body = body;
  p->arg = arg;
  p->n = n;
  p->chunks = chunks;
  bool ran = run_job(p);
  __atomic_store_n(&p->held, 0, __ATOMIC_RELEASE);
  return ran;
}

int64_t kb__pool_threads_running(const struct kb_pool *p) {
  if (p == NULL) return 0;
  if (p->fork_gen != __atomic_load_n(&fork_generation, __ATOMIC_SEQ_CST)) return 0;
  return p->running;
}
