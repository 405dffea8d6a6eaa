/* calls.c - calls in progress on a context, so that one context can be
 * shared by threads and destroyed while another thread is inside a call;
 * and the per-thread messages of calls on contexts.
 *
 * Sharing.  Nothing a CPU call changes lives in the context except its
 * worker pool, which one call at a time holds (pool.c: a concurrent call
 * runs on its own thread, with the same bits) and the message, which is
 * kept per thread here.  Calls on a CUDA context take the context's lock
 * (its stream and cuBLASLt state serve one call at a time).  So a context
 * may be used by any number of threads at once, and the cost on the CPU is
 * what a single-threaded caller pays anyway: no lock, no atomic
 * read-modify-write per call.
 *
 * Destroying.  Each thread has a slot naming the context it is inside a call
 * on (a hazard pointer).  kb__enter writes the slot, then reads the
 * context's state; kb_context_destroy writes the state (DYING), then reads
 * every thread's slot and waits until none names the context.  Either the
 * caller sees DYING and fails cleanly, or destroy sees the caller and waits:
 * the two sides each store then load, which needs a full barrier on both.
 * The caller's side is the hot one, so where Linux offers it (membarrier
 * PRIVATE_EXPEDITED) destroy issues a barrier on every thread of the
 * process instead and the caller needs only a compiler barrier; elsewhere
 * the caller makes its slot store and state load sequentially consistent.
 *
 * The memory of a destroyed context is never given back to malloc (the free
 * list of context.c), so a call that reads a handle just as another thread
 * destroys it finds a context whose state says so, never unmapped memory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall() */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "internal.h"

KB_THREAD_LOCAL struct kb_thread_state kb__self;

/* Every thread that has made a call on a context and not exited. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kb_thread_state *registry;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ready;
int kb__fence_on_enter = 1;

/* ---- the process-wide barrier ---- */

#if defined(__linux__) && defined(SYS_membarrier)
enum { MB_QUERY = 0, MB_PRIVATE_EXPEDITED = 1 << 3, MB_REGISTER_PRIVATE_EXPEDITED = 1 << 4 };

static bool barrier_register(void) {
  long cmds = syscall(SYS_membarrier, MB_QUERY, 0);
  if (cmds < 0 || !(cmds & MB_PRIVATE_EXPEDITED) || !(cmds & MB_REGISTER_PRIVATE_EXPEDITED)) return false;
  return syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
}

/* A full barrier on every running thread of the process (false if the OS
 * refused, which registration made sure it does not). */
static bool barrier_all_threads(void) { return syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED, 0) == 0; }
#else
static bool barrier_register(void) { return false; }
static bool barrier_all_threads(void) { return false; }
#endif

/* ---- the registry ---- */

static void unlink_locked(struct kb_thread_state *t) {
  if (t->prev != NULL) t->prev->next = t->next;
  else registry = t->next;
  if (t->next != NULL) t->next->prev = t->prev;
  t->next = t->prev = NULL;
  t->registered = false;
}

/* Thread exit: the slot's memory goes away with the thread. */
static void on_thread_exit(void *arg) {
  struct kb_thread_state *t = (struct kb_thread_state *)arg;
  pthread_mutex_lock(&registry_lock);
  if (t->registered) unlink_locked(t);
  pthread_mutex_unlock(&registry_lock);
}

static void before_fork(void) { pthread_mutex_lock(&registry_lock); }
static void after_fork_in_parent(void) { pthread_mutex_unlock(&registry_lock); }

/* Only the forking thread exists in the child: forget the others' slots
 * (their memory is the parent's threads', copied, never freed here). */
static void after_fork_in_child(void) {
  pthread_mutex_init(&registry_lock, NULL);
  registry = NULL;
  if (kb__self.registered) {
    kb__self.next = kb__self.prev = NULL;
    registry = &kb__self;
  }
}

static void init(void) {
  exit_key_ready = pthread_key_create(&exit_key, on_thread_exit) == 0;
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  __atomic_store_n(&kb__fence_on_enter, barrier_register() ? 0 : 1, __ATOMIC_RELAXED);
}

void kb__calls_init(void) { pthread_once(&init_once, init); }

void kb__calls_use_fences_for_testing(void) {
  kb__calls_init();
  __atomic_store_n(&kb__fence_on_enter, 1, __ATOMIC_SEQ_CST);
}

/* Adds the calling thread to the registry (first call on a context).  False
 * when its exit cannot be watched (no key), which would leave a dangling
 * slot behind. */
static bool register_self(void) {
  kb__calls_init();
  if (!exit_key_ready || pthread_setspecific(exit_key, &kb__self) != 0) return false;
  pthread_mutex_lock(&registry_lock);
  kb__self.prev = NULL;
  kb__self.next = registry;
  if (registry != NULL) registry->prev = &kb__self;
  registry = &kb__self;
  kb__self.registered = true;
  pthread_mutex_unlock(&registry_lock);
  return true;
}

/* ---- calls ---- */

kb_status kb__enter_slow(kb_context *ctx, const char *fn, struct kb_call *call) {
  struct kb_thread_state *t = &kb__self;
  if (!t->registered && !register_self())
    return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, fn, "cannot register the calling thread");
  /* Sequentially consistent store and load: with destroy's sequentially
   * consistent state change and slot loads, one side sees the other
   * (needed where no process-wide barrier exists; harmless elsewhere, this
   * is the rare path). */
  __atomic_store_n(&t->inside, ctx, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&ctx->state, __ATOMIC_SEQ_CST) != KB_CTX_LIVE) {
    __atomic_store_n(&t->inside, NULL, __ATOMIC_RELEASE);
    /* The message goes where this thread will look for ctx's. */
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "ctx is a destroyed context (or one being destroyed)");
  }
  call->ctx = ctx;
  call->self = t;
  kb__clear_message(t, __atomic_load_n(&ctx->id, __ATOMIC_RELAXED));
  if (ctx->cuda_ctx != NULL) {
    pthread_mutex_lock(&ctx->cuda_lock);
    call->cuda_locked = true;
  }
  return KB_STATUS_OK;
}

void kb__leave_cuda(struct kb_call *call) { pthread_mutex_unlock(&call->ctx->cuda_lock); }

static bool anyone_inside(const kb_context *ctx) {
  bool found = false;
  pthread_mutex_lock(&registry_lock);
  for (struct kb_thread_state *t = registry; t != NULL && !found; t = t->next)
    found = __atomic_load_n(&t->inside, __ATOMIC_SEQ_CST) == ctx;
  pthread_mutex_unlock(&registry_lock);
  return found;
}

void kb__wait_for_calls(kb_context *ctx) {
  /* The state store (seq_cst, by the caller) is ordered before the slot
   * loads below (seq_cst) against callers that fence (kb__enter_slow's
   * seq_cst store and load); callers that use only a compiler barrier get
   * a full barrier on every thread now. */
  if (!__atomic_load_n(&kb__fence_on_enter, __ATOMIC_RELAXED) && !barrier_all_threads())
    __atomic_store_n(&kb__fence_on_enter, 1, __ATOMIC_RELAXED); /* cannot happen after registration; be safe */
  /* Calls end within a kernel's time; poll with a growing sleep (1 us to
   * 1 ms) rather than keep a wake-up per call on the hot path. */
  long sleep_ns = 1000;
  while (anyone_inside(ctx)) {
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000) sleep_ns *= 2;
  }
}

/* ---- messages ---- */

const char *kb__context_message(const kb_context *ctx) {
  if (ctx == NULL) return "";
  uint64_t id = __atomic_load_n(&ctx->id, __ATOMIC_RELAXED);
  for (int i = 0; i < KB_THREAD_MESSAGES; i++)
    if (kb__self.message_ctx[i] == id) return kb__self.message[i];
  return "";
}

kb_status kb__fail(kb_context *ctx, kb_status status, const char *fn, const char *fmt, ...) {
  if (ctx == NULL) return status;
  struct kb_thread_state *t = &kb__self;
  uint64_t id = __atomic_load_n(&ctx->id, __ATOMIC_RELAXED);
  /* The context's own entry, else the oldest one. */
  int slot = -1;
  for (int i = 0; i < KB_THREAD_MESSAGES && slot < 0; i++)
    if (t->message_ctx[i] == id) slot = i;
  if (slot < 0) {
    slot = (int)(t->next_message % KB_THREAD_MESSAGES);
    t->next_message++;
    t->message_ctx[slot] = id;
  }
  char *m = t->message[slot];
  t->unread |= 1u << slot;
  int used = snprintf(m, KB_MESSAGE_CAPACITY, "%s: ", fn);
  if (used < 0 || used >= KB_MESSAGE_CAPACITY) used = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m + used, KB_MESSAGE_CAPACITY - (size_t)used, fmt, ap);
  va_end(ap);
  return status;
}
