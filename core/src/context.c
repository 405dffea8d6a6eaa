/* context.c - creation and queries of kb_context (CPU part; CUDA contexts are
 * made in cuda.c). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* Upper bound on threads a context will use, whatever the caller asks. */
#define KB_MAX_THREADS 256

static int64_t online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int64_t)n : 1;
}

/* Destroyed contexts, kept for reuse: a context's memory is never freed,
 * so a handle used after (or while) it is destroyed still points at a
 * context, whose state says it is not live (calls.c).  The list is as long
 * as the most contexts that were alive at once. */
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static kb_context *free_list;
/* Atomic: the last context id handed out (ids start at 1; 0 means none). */
static uint64_t last_id;

/* Allocates a context with the CPU defaults (device -1, no CUDA state) and
 * the thread count resolved (0 = one per online CPU, capped), not yet live
 * (kb__context_publish).  NULL when out of memory.  cuda.c fills in the CUDA
 * fields. */
kb_context *kb__context_alloc(int64_t num_threads) {
  kb__calls_init();
  pthread_mutex_lock(&free_lock);
  kb_context *ctx = free_list;
  if (ctx != NULL) free_list = ctx->next_free;
  pthread_mutex_unlock(&free_lock);
  if (ctx == NULL) {
    ctx = (kb_context *)calloc(1, sizeof *ctx);
    if (ctx == NULL) return NULL;
    ctx->cuda_lock_ready = pthread_mutex_init(&ctx->cuda_lock, NULL) == 0;
  }
  /* A reused context is FREE: calls that still hold its old handle fail
   * without reading the fields rewritten here. */
  ctx->next_free = NULL;
  __atomic_store_n(&ctx->id, __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  ctx->backend = KB_BACKEND_CPU;
  ctx->device = -1;
  ctx->cuda = NULL;
  ctx->cuda_ctx = NULL;
  ctx->lost = false;
  ctx->num_threads = num_threads == 0 ? online_cpus() : num_threads;
  if (ctx->num_threads > KB_MAX_THREADS) ctx->num_threads = KB_MAX_THREADS;
  /* NULL when out of memory: the context still works, single-threaded. */
  ctx->pool = kb__pool_create(ctx->num_threads);
  return ctx;
}

void kb__context_publish(kb_context *ctx) { __atomic_store_n(&ctx->state, KB_CTX_LIVE, __ATOMIC_RELEASE); }

/* Gives an allocated context's memory back to the free list. */
static void release(kb_context *ctx) {
  kb__pool_destroy(ctx->pool);
  ctx->pool = NULL;
  __atomic_store_n(&ctx->state, KB_CTX_FREE, __ATOMIC_RELEASE);
  pthread_mutex_lock(&free_lock);
  ctx->next_free = free_list;
  free_list = ctx;
  pthread_mutex_unlock(&free_lock);
}

void kb__context_discard(kb_context *ctx) { release(ctx); }

kb_status kb_context_create(kb_backend backend, int64_t num_threads, kb_context **out) {
  static const char fn[] = "kb_context_create";
  kb__begin_thread();
  if (out == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  if (num_threads < 0 || num_threads > KB_MAX_THREADS)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "num_threads must be in [0, %d], got %lld",
                           KB_MAX_THREADS, (long long)num_threads);
  /* A KB_CPU_ISA the CPU kernels cannot honour is reported here, where a
   * caller checks a status, rather than silently ignored. */
  KB_TRY(kb__isa_check_env(fn));
  switch (backend) {
    case KB_BACKEND_CPU:
      break;
    case KB_BACKEND_CUDA:
      return kb__context_create_cuda(fn, false, 0, num_threads, out);
    case KB_BACKEND_AUTO:
      /* CUDA device 0 when the backend, a driver and a device are there and
       * a context can be made on it; the CPU otherwise, without a message:
       * falling back is what AUTO asks for. */
      if (kb__context_create_cuda(fn, true, 0, num_threads, out) == KB_STATUS_OK) return KB_STATUS_OK;
      break;
    default:
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn,
                             "unknown backend %d (expected KB_BACKEND_CPU = 0, KB_BACKEND_CUDA = 1 or "
                             "KB_BACKEND_AUTO = 2)",
                             (int)backend);
  }
  kb_context *ctx = kb__context_alloc(num_threads);
  if (ctx == NULL) return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, fn, "out of memory allocating the context");
  kb__context_publish(ctx);
  *out = ctx;
  return KB_STATUS_OK;
}

void kb_context_destroy(kb_context *ctx) {
  if (ctx == NULL) return;
  /* One destroy wins; a second one (or a destroy of a context already
   * destroyed) finds it not LIVE and does nothing. */
  int live = KB_CTX_LIVE;
  if (!__atomic_compare_exchange_n(&ctx->state, &live, KB_CTX_DYING, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return;
  /* New calls now fail; wait for the ones inside to return. */
  kb__wait_for_calls(ctx);
  /* Synchronises and frees the stream and cuBLASLt state; buffers made on
   * this context are independent of it and stay valid. */
  if (ctx->cuda_ctx != NULL) ctx->cuda->ctx_destroy(ctx->cuda_ctx);
  ctx->cuda_ctx = NULL;
  release(ctx);
}

kb_backend kb_context_backend(const kb_context *ctx) { return ctx == NULL ? KB_BACKEND_CPU : ctx->backend; }

int64_t kb_context_num_threads(const kb_context *ctx) { return ctx == NULL ? 1 : ctx->num_threads; }

int64_t kb_context_device(const kb_context *ctx) { return kb__on_cuda(ctx) ? ctx->device : -1; }

const char *kb_context_last_error(const kb_context *ctx) { return kb__context_message(ctx); }

int64_t kb__threads(const kb_context *ctx) { return kb_context_num_threads(ctx); }
