/* status.c - status names, the per-thread message of calls without a
 * context, and argument checks.  (The messages of calls on a context are
 * per thread too: calls.c.) */
#include <math.h>
#include <stdio.h>

#include "internal.h"

const char *kb_status_string(kb_status status) {
  switch (status) {
    case KB_STATUS_OK:
      return "OK";
    case KB_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case KB_STATUS_SHAPE_MISMATCH:
      return "SHAPE_MISMATCH";
    case KB_STATUS_UNSUPPORTED:
      return "UNSUPPORTED";
    case KB_STATUS_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case KB_STATUS_BACKEND_UNAVAILABLE:
      return "BACKEND_UNAVAILABLE";
    case KB_STATUS_DEVICE_ERROR:
      return "DEVICE_ERROR";
    case KB_STATUS_INTERNAL:
      return "INTERNAL";
    case KB_STATUS_DEVICE_LOST:
      return "DEVICE_LOST";
  }
  return "UNKNOWN";
}

/* The message of calls without a context.  Per thread, so concurrent callers
 * never see each other's text and no lock is needed.  __thread where the
 * compiler is C99-only (GCC and Clang accept it in -std=c99); C11's keyword
 * otherwise. */
static KB_THREAD_LOCAL char kb_thread_message[KB_THREAD_MESSAGE_CAPACITY];

const char *kb_last_error(void) { return kb_thread_message; }

void kb__begin_thread(void) { kb_thread_message[0] = '\0'; }

kb_status kb__fail_thread(kb_status status, const char *fn, const char *fmt, ...) {
  int used = snprintf(kb_thread_message, sizeof kb_thread_message, "%s: ", fn);
  if (used < 0 || (size_t)used >= sizeof kb_thread_message) used = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(kb_thread_message + used, sizeof kb_thread_message - (size_t)used, fmt, ap);
  va_end(ap);
  return status;
}

kb_status kb__check_dim(kb_context *ctx, const char *fn, const char *name, int64_t value) {
  if (value < 0) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be >= 0, got %lld", name, (long long)value);
  return KB_STATUS_OK;
}

kb_status kb__check_positive(kb_context *ctx, const char *fn, const char *name, int64_t value) {
  if (value <= 0) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be > 0, got %lld", name, (long long)value);
  return KB_STATUS_OK;
}

kb_status kb__count(kb_context *ctx, const char *fn, const char *what, int64_t elem_size, int ndims, const int64_t *dims,
                    int64_t *count) {
  /* The byte count must fit in both int64_t and size_t. */
  *count = 0; /* defined on every path, failure included */
  uint64_t limit = (uint64_t)INT64_MAX;
  if ((uint64_t)SIZE_MAX < limit) limit = (uint64_t)SIZE_MAX;
  uint64_t n = 1;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] == 0) {
      *count = 0;
      return KB_STATUS_OK;
    }
  }
  for (int i = 0; i < ndims; i++) {
    uint64_t d = (uint64_t)dims[i];
    if (n > limit / d) return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of %s overflows", what);
    n *= d;
  }
  if (n > limit / (uint64_t)elem_size) return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of %s overflows", what);
  *count = (int64_t)n;
  return KB_STATUS_OK;
}

kb_status kb__check_ptr(kb_context *ctx, const char *fn, const char *name, const void *ptr, int64_t count) {
  if (ptr == NULL && count > 0) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must not be NULL", name);
  return KB_STATUS_OK;
}

kb_status kb__check_finite(kb_context *ctx, const char *fn, const char *name, double x, bool nonneg) {
  if (!isfinite(x)) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be finite, got %g", name, x);
  if (nonneg && x < 0) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be >= 0, got %g", name, x);
  return KB_STATUS_OK;
}
