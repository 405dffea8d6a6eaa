/*
 * internal.h - definitions shared by the core and the kernel sources.  Not
 * installed, not part of the API.
 */
#ifndef KB_INTERNAL_H
#define KB_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "kernelbridge.h"
#include "kbcuda_api.h"

/* Longest message kept by a context, terminator included. */
#define KB_MESSAGE_CAPACITY 256

struct kb_pool;

/* Lifecycle of a context's memory (kb_context.state).  The memory of a
 * context is never returned to malloc: kb_context_destroy puts it on a free
 * list that kb_context_create reuses, so a call that races with destroy
 * (or comes after it) reads a context that exists, sees it is not live and
 * fails with a clear message instead of reading freed memory (calls.c). */
enum { KB_CTX_FREE = 0, KB_CTX_LIVE = 1, KB_CTX_DYING = 2 };

struct kb_context {
  /* Atomic: KB_CTX_*.  Set to LIVE (release) only after every other field is
   * written, so a call that reads LIVE (acquire) sees a complete context. */
  int state;
  /* Atomic (relaxed): this incarnation's number, unique in the process; the
   * per-thread messages name their context by it (calls.c). */
  uint64_t id;
  kb_backend backend;
  int64_t num_threads;
  /* The worker threads (pool.c); NULL when num_threads == 1 or when the
   * pool's bookkeeping could not be allocated (then every call runs inline).
   * One call at a time uses it; a concurrent call runs on its own thread. */
  struct kb_pool *pool;
  /* CUDA contexts only (all NULL / -1 / false on the CPU): */
  int64_t device;                   /* CUDA device ordinal, -1 on the CPU */
  const struct kbcuda_table *cuda;  /* the loaded backend's table */
  kbcuda_ctx *cuda_ctx;             /* device, stream, cuBLASLt state */
  bool lost;                        /* KB_STATUS_DEVICE_LOST latched (under cuda_lock) */
  /* Serialises the calls on a CUDA context (its stream and cuBLASLt state
   * belong to one call at a time).  Initialised once, when the memory is
   * first allocated; unused on the CPU. */
  pthread_mutex_t cuda_lock;
  bool cuda_lock_ready;
  struct kb_context *next_free; /* the free list (context.c) */
};

/* ---- Calls in progress on a context (calls.c) ---- */

/* Contexts whose last message a thread keeps at once (the most recently
 * failed ones): enough for a caller comparing a few contexts' messages. */
#define KB_THREAD_MESSAGES 4

/* What a thread keeps (calls.c): its hazard slot, its place in the registry
 * of threads and the messages of its last failed calls on contexts. */
struct kb_thread_state {
  kb_context *inside; /* atomic: the context of the call this thread is in, or NULL */
  struct kb_thread_state *next, *prev;
  bool registered;
  uint32_t next_message;                    /* the entry the next new context's message replaces */
  uint32_t unread;                          /* bit i: message[i] is not empty (so most calls skip the scan) */
  uint64_t message_ctx[KB_THREAD_MESSAGES]; /* id of the context of each message; 0: none */
  char message[KB_THREAD_MESSAGES][KB_MESSAGE_CAPACITY];
};

/* Clears t's message for the context numbered id, if it has one. */
static inline void kb__clear_message(struct kb_thread_state *t, uint64_t id) {
  if (t->unread == 0) return; /* every call after a success: one test */
  for (int i = 0; i < KB_THREAD_MESSAGES; i++)
    if (t->message_ctx[i] == id) {
      t->message[i][0] = '\0';
      t->unread &= ~(1u << i);
    }
}

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define KB_THREAD_LOCAL _Thread_local
#else
#define KB_THREAD_LOCAL __thread
#endif

/* The calling thread's state (calls.c). */
extern KB_THREAD_LOCAL struct kb_thread_state kb__self;


/* Atomic: 1 when kb__enter must fence (no process-wide barrier available). */
extern int kb__fence_on_enter;

/*
 * What kb__enter did for one call, undone by kb__leave.  Every public
 * function that takes a context opens its body with KB_BEGIN(ctx, fn), which
 * declares one of these with a cleanup handler, so every return path leaves.
 */
struct kb_call {
  kb_context *ctx;             /* the context entered, NULL when nothing was done */
  struct kb_thread_state *self; /* the calling thread's state, when ctx != NULL */
  bool cuda_locked;            /* holds ctx->cuda_lock */
};

/* kb__enter's rare paths (calls.c): the thread's first call on a context
 * (registration), a context that is not live, and a CUDA context's lock. */
kb_status kb__enter_slow(kb_context *ctx, const char *fn, struct kb_call *call);
void kb__leave_cuda(struct kb_call *call);

/*
 * Marks the calling thread as inside a call on ctx (a per-thread slot that
 * kb_context_destroy scans before it tears the context down), clears the
 * thread's message for ctx and, on a CUDA context, takes its lock.  Fails
 * with INVALID_ARGUMENT ("fn: ctx ...") when the context is being destroyed
 * or was destroyed.  NULL ctx: nothing to do.  A call made from inside
 * another call of this thread (the library's own nested calls) is covered by
 * the outer one.  Inline: this is every call's cost of sharing contexts
 * (calls.c explains why a compiler barrier is enough).
 */
static inline kb_status kb__enter(kb_context *ctx, const char *fn, struct kb_call *call) {
  call->ctx = NULL;
  call->cuda_locked = false;
  if (ctx == NULL) return KB_STATUS_OK;
  struct kb_thread_state *t = &kb__self;
  if (__atomic_load_n(&t->inside, __ATOMIC_RELAXED) != NULL) return KB_STATUS_OK; /* nested */
  if (!t->registered || __atomic_load_n(&kb__fence_on_enter, __ATOMIC_RELAXED)) return kb__enter_slow(ctx, fn, call);
  __atomic_store_n(&t->inside, ctx, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* destroy's membarrier is the other half */
  if (__atomic_load_n(&ctx->state, __ATOMIC_ACQUIRE) != KB_CTX_LIVE || ctx->cuda_ctx != NULL) {
    __atomic_store_n(&t->inside, NULL, __ATOMIC_RELAXED);
    return kb__enter_slow(ctx, fn, call);
  }
  call->ctx = ctx;
  call->self = t;
  kb__clear_message(t, __atomic_load_n(&ctx->id, __ATOMIC_RELAXED));
  return KB_STATUS_OK;
}

/* Ends what kb__enter began (cleanup handler of KB_BEGIN). */
static inline void kb__leave(struct kb_call *call) {
  if (call->ctx == NULL) return;
  if (call->cuda_locked) kb__leave_cuda(call);
  /* Release: everything this call did to ctx happens before a destroy that
   * sees the slot empty. */
  __atomic_store_n(&call->self->inside, NULL, __ATOMIC_RELEASE);
}

#if defined(__GNUC__) || defined(__clang__)
#define KB_CLEANUP(f) __attribute__((cleanup(f)))
#else
#error "kernelbridge needs the cleanup attribute of GCC or Clang"
#endif

/* Opens a public function's body: enters ctx (see kb__enter) for the rest of
 * the enclosing block, or returns kb__enter's failure. */
#define KB_BEGIN(ctx, fn)                                       \
  struct kb_call kb_call_ KB_CLEANUP(kb__leave);                \
  do {                                                          \
    kb_status kb_enter_ = kb__enter((ctx), (fn), &kb_call_);    \
    if (kb_enter_ != KB_STATUS_OK) return kb_enter_;            \
  } while (0)

/*
 * Blocks until no thread is inside a call on ctx (whose state the caller has
 * set to KB_CTX_DYING, so no new call starts).  kb_context_destroy.
 */
void kb__wait_for_calls(kb_context *ctx);

/* Decides, once per process, how calls announce themselves (a process-wide
 * memory barrier on destroy when the OS offers one, else a fence per call).
 * kb__context_alloc calls it before the first context exists. */
void kb__calls_init(void);

/* Testing hook: calls fence on entry from now on, as where the OS has no
 * process-wide barrier.  Call it while no other thread uses the library. */
void kb__calls_use_fences_for_testing(void);

/* The calling thread's message for ctx (kb_context_last_error). */
const char *kb__context_message(const kb_context *ctx);

/* True when kernels on ctx run on CUDA (NULL is a CPU context). */
static inline bool kb__on_cuda(const kb_context *ctx) { return ctx != NULL && ctx->cuda_ctx != NULL; }

/* One tensor argument for kb__check_memory: its name, first byte and byte
 * extent.  Empty tensors (bytes == 0) are not checked. */
struct kb_mem_ref {
  const char *name;
  const void *ptr;
  int64_t bytes;
};

/*
 * Checks, after the usual validation, that every non-empty tensor is memory
 * the context's backend can touch.  CUDA context: fails fast with
 * KB_STATUS_DEVICE_LOST when the context latched it; a pointer that is not
 * device or managed memory of the context's device fails with
 * INVALID_ARGUMENT naming it.  CPU context (or NULL): when the CUDA backend
 * is loaded in this process, device memory fails with INVALID_ARGUMENT naming
 * it (a CPU kernel would crash reading it); otherwise nothing is checked and
 * the call costs one atomic load.
 */
kb_status kb__check_memory(kb_context *ctx, const char *fn, int count, const struct kb_mem_ref *refs);

/*
 * Completes a kernel call on a CUDA context: `status` is what the table entry
 * returned.  On success waits for the stream (kernels are blocking).  On
 * failure copies the backend's message into ctx, maps the status to
 * kb_status and latches KB_STATUS_DEVICE_LOST.
 */
kb_status kb__cuda_finish(kb_context *ctx, const char *fn, kbcuda_status status);

/* Calls without a context: clear / record the calling thread's message
 * (kb_last_error). */
void kb__begin_thread(void);
kb_status kb__fail_thread(kb_status status, const char *fn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Capacity of the per-thread message (kb_last_error), terminator included.
 * Larger than a context's: a loader failure lists every candidate path it
 * tried and why each failed, which is what a user needs to fix it. */
#define KB_THREAD_MESSAGE_CAPACITY 1024

/* ---- CUDA backend (core/src/cuda.c) ---- */

/*
 * The process-wide CUDA probe: loads the backend (kb__cuda_load) and asks its
 * device count, once; the outcome is remembered.  On success sets *table and
 * *count (> 0) and returns OK.  On failure returns BACKEND_UNAVAILABLE and,
 * unless quiet, records "fn: <why>" as the calling thread's message
 * (kb_last_error): the loader's list of candidates tried, or the backend's
 * "no NVIDIA driver ..." / "no CUDA device ...".
 */
kb_status kb__cuda_probe(const char *fn, bool quiet, const struct kbcuda_table **table, int32_t *count);

/*
 * The table of a backend that probed successfully, else NULL.  One atomic
 * load and never triggers a probe: the CPU path uses it to decide whether
 * device memory can exist in this process at all.
 */
const struct kbcuda_table *kb__cuda_usable(void);

/*
 * The CUDA device whose memory ptr points to, or -1: host or managed memory,
 * a failed query (which cannot mean device memory a host access would crash
 * on: that needs a working driver), or no backend probed successfully (then
 * no device memory exists, and this costs one atomic load).  The host-side
 * check of kb__check_memory and of the buffer copies.
 */
int32_t kb__device_memory_of(const void *ptr);

/*
 * Creates a CUDA kb_context on `device` (the work of kb_context_create_cuda;
 * kb_context_create uses it for KB_BACKEND_CUDA and KB_BACKEND_AUTO).  With
 * quiet, failures leave the thread's message alone (AUTO falls back to the
 * CPU silently); otherwise they record "fn: ..." with kb__fail_thread.
 */
kb_status kb__context_create_cuda(const char *fn, bool quiet, int64_t device, int64_t num_threads, kb_context **out);

/* A new context with the CPU defaults (backend CPU, device -1, no CUDA
 * state) and num_threads resolved (0 = one per online CPU); NULL when out of
 * memory.  The one place contexts are allocated (context.c).  Not live until
 * kb__context_publish (after the caller's last write to it); a context that
 * is never published goes back with kb__context_discard. */
kb_context *kb__context_alloc(int64_t num_threads);
void kb__context_publish(kb_context *ctx);
void kb__context_discard(kb_context *ctx);

/*
 * Maps a failed table status to kb_status for a call on a CUDA ctx: copies
 * the backend's message into ctx with the prefix "fn: " (replacing the
 * backend's own "kbcuda_xxx: " prefix, adding one when missing) and latches
 * KB_STATUS_DEVICE_LOST.  kb__cuda_finish without the stream synchronise, for
 * entries that synchronise themselves.  Returns OK for KBCUDA_STATUS_OK.
 */
kb_status kb__cuda_fail(kb_context *ctx, const char *fn, kbcuda_status status);

/*
 * Records "fn: <formatted message>" in ctx (when not NULL) and returns
 * KB_STATUS_DEVICE_LOST when the CUDA ctx latched a lost device; else OK.
 * Every call on a CUDA context checks it after validating its arguments.
 */
kb_status kb__check_lost(kb_context *ctx, const char *fn);

/*
 * Testing hook (hidden, like every internal symbol; tests link the archive):
 * makes `table` the process's CUDA backend instead of the library the loader
 * would dlopen, and forgets the previous probe so the next CUDA call probes
 * `table`.  NULL goes back to the loader for later probes (the loader itself
 * loads once per process).  Call it before creating CUDA contexts or buffers,
 * or after destroying all of them: objects made with one table must not be
 * handed to another.  Not thread-safe against concurrent CUDA calls.
 */
void kb__cuda_use_table_for_testing(const struct kbcuda_table *table);

/* Records "fn: <formatted message>" as the calling thread's message for ctx
 * (when not NULL; kb_context_last_error) and returns status. */
kb_status kb__fail(kb_context *ctx, kb_status status, const char *fn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Fails with INVALID_ARGUMENT unless value >= 0. */
kb_status kb__check_dim(kb_context *ctx, const char *fn, const char *name, int64_t value);

/* Fails with INVALID_ARGUMENT unless value > 0. */
kb_status kb__check_positive(kb_context *ctx, const char *fn, const char *name, int64_t value);

/*
 * Multiplies non-negative sizes; fails with OUT_OF_MEMORY naming `what` when
 * the product of the byte size does not fit in int64_t/size_t.  elem_size is
 * the element size in bytes, so the check covers the byte count too.
 */
kb_status kb__count(kb_context *ctx, const char *fn, const char *what, int64_t elem_size, int ndims, const int64_t *dims,
                    int64_t *count);

/*
 * Fails with INVALID_ARGUMENT when ptr is NULL although count > 0.  A NULL
 * pointer is accepted for an empty tensor.
 */
kb_status kb__check_ptr(kb_context *ctx, const char *fn, const char *name, const void *ptr, int64_t count);

/* Fails with INVALID_ARGUMENT unless x is finite (and, with nonneg, >= 0). */
kb_status kb__check_finite(kb_context *ctx, const char *fn, const char *name, double x, bool nonneg);

/* ---- CPU instruction-set level (cpu_isa.c) ---- */

/* Instruction-set levels of the CPU kernels, lowest first. */
typedef enum kb_isa { KB_ISA_SCALAR = 0, KB_ISA_AVX2 = 1, KB_ISA_AVX512 = 2, KB_ISA_COUNT = 3 } kb_isa;

/* The level the CPU kernels of this process use: the best the CPU and OS
 * support, or the lower one KB_CPU_ISA names.  Decided on the first call,
 * then fixed; one atomic load. */
kb_isa kb__isa(void);

/* The best level the CPU and OS support, whatever KB_CPU_ISA says. */
kb_isa kb__isa_best(void);

/* "scalar", "avx2", "avx512". */
const char *kb__isa_name(kb_isa isa);

/* Whether the CPU has AVX-512 BF16 with AVX-512 BW and DQ, and the OS saves
 * the AVX-512 state: the avx512 level then narrows float to bfloat16 with
 * vcvtneps2bf16 (same results).  Not a level of its own. */
bool kb__cpu_has_avx512_bf16(void);

/* Which 256-bit vpdpbusd (u8 x s8 dot products into int32) the CPU has,
 * for the quantized products (their integer sums are exact, so every path
 * gives the same bits), as a mask: 1 AVX-VNNI (VEX), 2 AVX512-VNNI with
 * AVX512VL (usable at the avx512 level only); 0 for neither, or below the
 * avx2 level (vpmaddubsw does the work then). */
int kb__cpu_vnni(void);

/* OK, or (recording "fn: ..." as the thread's message) INVALID_ARGUMENT when
 * KB_CPU_ISA names no level and UNSUPPORTED when it names a level this CPU
 * cannot run.  kb_context_create calls it; kernels with a NULL context then
 * use the best supported level. */
kb_status kb__isa_check_env(const char *fn);

/* ---- Worker pool (pool.c) ---- */

/* A pool for a context of num_threads threads; NULL when num_threads <= 1 or
 * out of memory.  No thread starts until the first kb__pool_run. */
struct kb_pool *kb__pool_create(int64_t num_threads);

/* Joins the workers and frees the pool.  Accepts NULL. */
void kb__pool_destroy(struct kb_pool *pool);

/*
 * Runs body(arg, begin, end) for `chunks` balanced chunks of [0, n) (chunk 0
 * on the calling thread, chunk w on worker w) and waits for all of them.
 * Returns false without running anything when the pool cannot: pool NULL,
 * chunks < 2 or more than the threads, worker threads unavailable, a call
 * from inside a running job, or the pool held by another thread's job; the
 * caller then runs the range inline.
 */
bool kb__pool_run(struct kb_pool *pool, int64_t chunks, int64_t n, void (*body)(void *arg, int64_t begin, int64_t end),
                  void *arg);

/* Worker threads currently alive for this pool (0 before the first job, for
 * NULL, and in a child of fork() until its first job).  For tests. */
int64_t kb__pool_threads_running(const struct kb_pool *pool);

/* Number of threads to use for a call on ctx (1 for NULL). */
int64_t kb__threads(const kb_context *ctx);

/*
 * Runs body(arg, begin, end) over [0, n) split into contiguous chunks on up to
 * kb__threads(ctx) threads; runs inline when one thread suffices or threads
 * cannot be created.  min_chunk is the smallest chunk worth a thread.  The
 * split never changes what a given index computes, so results are identical
 * for every thread count.
 */
void kb__parallel_for(const kb_context *ctx, int64_t n, int64_t min_chunk, void (*body)(void *arg, int64_t begin, int64_t end),
                      void *arg);

/* Returns the status of expr from the enclosing function unless it is OK. */
#define KB_TRY(expr)                          \
  do {                                        \
    kb_status kb_try_ = (expr);               \
    if (kb_try_ != KB_STATUS_OK) return kb_try_; \
  } while (0)

/*
 * Fails with INVALID_ARGUMENT when `inner` is 0 although `outer` > 0, e.g. a
 * row-wise kernel asked to normalise rows of zero columns.  Message:
 * "<name> must be > 0 when <outer_name> > 0".
 */
kb_status kb__check_inner(kb_context *ctx, const char *fn, const char *name, int64_t inner, const char *outer_name,
                          int64_t outer);

/*
 * Fails with SHAPE_MISMATCH unless a row stride ld >= max(1, row_len).
 * Message: "<name> must be >= N (the stored row length, at least 1), got L".
 */
kb_status kb__check_ld(kb_context *ctx, const char *fn, const char *name, int64_t ld, int64_t row_len);

/*
 * Fails with INVALID_ARGUMENT unless act is one of kb_activation's values
 * (the `act` of kb_linear*, kb_linear_w and kb_glu*).
 */
kb_status kb__check_activation(kb_context *ctx, const char *fn, kb_activation act);

/*
 * Number of elements spanned by a [rows, cols] matrix with row stride ld
 * ((rows - 1) * ld + cols, or 0 when rows * cols == 0); OUT_OF_MEMORY naming
 * `what` when the byte size overflows.  ld >= cols is checked by the caller.
 */
kb_status kb__count_strided(kb_context *ctx, const char *fn, const char *what, int64_t elem_size, int64_t rows,
                            int64_t cols, int64_t ld, int64_t *count);

/*
 * Overlap check between an output (or inout) tensor and another tensor, each
 * given by its first byte and its byte extent.  Empty tensors never overlap.
 * With may_alias, `out` may be exactly the same pointer and extent as
 * `other` (in-place use, the header's alias(...)); any other overlap fails
 * with INVALID_ARGUMENT naming both tensors.  Addresses are compared as
 * integers, which is what every supported platform does for flat memory.
 */
kb_status kb__check_overlap(kb_context *ctx, const char *fn, const char *out_name, const void *out, int64_t out_bytes,
                            const char *other_name, const void *other, int64_t other_bytes, bool may_alias);

/*
 * Task splitting for kernels that need per-worker scratch memory.  The caller
 * asks for kb__task_count(ctx, n, min_chunk) tasks, allocates one scratch slot
 * per task before writing any output (so an allocation failure leaves outputs
 * untouched), then runs kb__parallel_for(ctx, tasks, 1, body, arg) where body
 * handles tasks [begin, end) and task t covers indices kb__task_range(n,
 * tasks, t).  What an index computes never depends on the split.
 */
int64_t kb__task_count(const kb_context *ctx, int64_t n, int64_t min_chunk);
void kb__task_range(int64_t n, int64_t tasks, int64_t t, int64_t *begin, int64_t *end);

#endif /* KB_INTERNAL_H */
