/* vendored by tools/vendor_c.py from core/src/internal.h; do not edit */
/*
 * internal.h - definitions shared by the core and the kernel sources.  Not
 * installed, not part of the API.
 */
#ifndef KB_INTERNAL_H
#define KB_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelbridge.h"

/* Longest message kept by a context, terminator included. */
#define KB_MESSAGE_CAPACITY 256

struct kb_context {
  kb_backend backend;
  int64_t num_threads;
  char message[KB_MESSAGE_CAPACITY];
};

/* Clears the context's message at the start of a public call. NULL is fine. */
void kb__begin(kb_context *ctx);

/* Records "fn: <formatted message>" in ctx (when not NULL) and returns status. */
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
