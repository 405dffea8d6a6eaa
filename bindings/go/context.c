/* vendored by tools/vendor_c.py from core/src/context.c; do not edit */
/* context.c - creation and queries of kb_context. */
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* Upper bound on threads a context will use, whatever the caller asks. */
#define KB_MAX_THREADS 256

static int64_t online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int64_t)n : 1;
}

kb_status kb_context_create(kb_backend backend, int64_t num_threads, kb_context **out) {
  static const char fn[] = "kb_context_create";
  if (out == NULL) return kb__fail(NULL, KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  if (num_threads < 0 || num_threads > KB_MAX_THREADS) return KB_STATUS_INVALID_ARGUMENT;
  kb_backend chosen;
  switch (backend) {
    case KB_BACKEND_CPU:
    case KB_BACKEND_AUTO:
      /* The CUDA backend is not part of this build; AUTO falls back to CPU. */
      chosen = KB_BACKEND_CPU;
      break;
    case KB_BACKEND_CUDA:
      return KB_STATUS_BACKEND_UNAVAILABLE;
    default:
      return KB_STATUS_INVALID_ARGUMENT;
  }
  kb_context *ctx = (kb_context *)calloc(1, sizeof *ctx);
  if (ctx == NULL) return KB_STATUS_OUT_OF_MEMORY;
  ctx->backend = chosen;
  ctx->num_threads = num_threads == 0 ? online_cpus() : num_threads;
  if (ctx->num_threads > KB_MAX_THREADS) ctx->num_threads = KB_MAX_THREADS;
  *out = ctx;
  return KB_STATUS_OK;
}

void kb_context_destroy(kb_context *ctx) { free(ctx); }

kb_backend kb_context_backend(const kb_context *ctx) { return ctx == NULL ? KB_BACKEND_CPU : ctx->backend; }

int64_t kb_context_num_threads(const kb_context *ctx) { return ctx == NULL ? 1 : ctx->num_threads; }

const char *kb_context_last_error(const kb_context *ctx) { return ctx == NULL ? "" : ctx->message; }

int64_t kb__threads(const kb_context *ctx) { return kb_context_num_threads(ctx); }
