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

#endif /* KB_INTERNAL_H */
