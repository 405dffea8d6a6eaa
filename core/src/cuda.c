/* cuda.c - the core's side of the CUDA backend: the process-wide probe
 * (load the library, count devices), device queries, CUDA contexts, and the
 * helpers the kernels use to dispatch to CUDA (kb__check_memory,
 * kb__cuda_finish).  The backend itself is libkernelbridge_cuda.so, reached
 * only through its function table (kbcuda_api.h). */
/* strnlen is POSIX.1-2008: ask for it here too, so that vendored builds
 * with a strict -std and no -D_POSIX_C_SOURCE still compile. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_loader.h"
#include "internal.h"

/* ---- the probe ---- */

/* Guarded by probe_lock.  A mutex rather than pthread_once because the
 * testing hook must be able to start over. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static bool probe_done;
static kb_status probe_status;
static char probe_message[KB_THREAD_MESSAGE_CAPACITY];
static const struct kbcuda_table *probe_table;
static int32_t probe_count;
static const struct kbcuda_table *testing_table; /* kb__cuda_use_table_for_testing */

/* The table once a probe succeeded, read without the lock by every CPU
 * kernel (kb__check_memory): device memory can only exist after that. */
static const struct kbcuda_table *usable_table;

#if defined(__GNUC__)
static const struct kbcuda_table *load_usable(void) { return __atomic_load_n(&usable_table, __ATOMIC_ACQUIRE); }
static void store_usable(const struct kbcuda_table *t) { __atomic_store_n(&usable_table, t, __ATOMIC_RELEASE); }
#else
/* Without GCC-style atomics, take the lock (correct, slower). */
static const struct kbcuda_table *load_usable(void) {
  pthread_mutex_lock(&probe_lock);
  const struct kbcuda_table *t = usable_table;
  pthread_mutex_unlock(&probe_lock);
  return t;
}
static void store_usable(const struct kbcuda_table *t) { usable_table = t; } /* called with probe_lock held */
#endif

/* Runs the probe; called with probe_lock held. */
static void run_probe(void) {
  char msg[KB_THREAD_MESSAGE_CAPACITY];
  msg[0] = '\0';
  const struct kbcuda_table *t = testing_table != NULL ? testing_table : kb__cuda_load(msg, sizeof msg);
  probe_table = NULL;
  probe_count = 0;
  if (t == NULL) {
    /* The loader's message lists every candidate it tried and why each one
     * failed. */
    probe_status = KB_STATUS_BACKEND_UNAVAILABLE;
    snprintf(probe_message, sizeof probe_message, "%s", msg[0] != '\0' ? msg : "cannot load the CUDA backend");
    return;
  }
  int32_t n = 0;
  msg[0] = '\0';
  kbcuda_status s = t->device_count(&n, msg, sizeof msg);
  if (s != KBCUDA_STATUS_OK || n <= 0) {
    /* The backend says which part is missing: the driver, a new enough
     * driver, a device ... */
    probe_status = KB_STATUS_BACKEND_UNAVAILABLE;
    snprintf(probe_message, sizeof probe_message, "%s", msg[0] != '\0' ? msg : "no CUDA device");
    return;
  }
  probe_status = KB_STATUS_OK;
  probe_message[0] = '\0';
  probe_table = t;
  probe_count = n;
  store_usable(t);
}

kb_status kb__cuda_probe(const char *fn, bool quiet, const struct kbcuda_table **table, int32_t *count) {
  pthread_mutex_lock(&probe_lock);
  if (!probe_done) {
    run_probe();
    probe_done = true;
  }
  kb_status status = probe_status;
  *table = probe_table;
  *count = probe_count;
  if (status != KB_STATUS_OK && !quiet) kb__fail_thread(status, fn, "%s", probe_message);
  pthread_mutex_unlock(&probe_lock);
  return status;
}

const struct kbcuda_table *kb__cuda_usable(void) { return load_usable(); }

void kb__cuda_use_table_for_testing(const struct kbcuda_table *table) {
  pthread_mutex_lock(&probe_lock);
  testing_table = table;
  probe_done = false;
  store_usable(NULL);
  pthread_mutex_unlock(&probe_lock);
}

/* ---- status and message translation ---- */

/* kbcuda_status values are the public ones (table.cu asserts it); anything
 * else from a library is a broken invariant. */
static kb_status map_status(kbcuda_status s) {
  if (s >= KBCUDA_STATUS_OK && s <= KBCUDA_STATUS_DEVICE_LOST) return (kb_status)s;
  return KB_STATUS_INTERNAL;
}

/* The backend's message without its own "fn: " or "kbcuda_xxx: " prefix, so
 * the caller can prefix the public function name exactly once. */
static const char *strip_prefix(const char *msg, const char *fn) {
  size_t n = strlen(fn);
  if (strncmp(msg, fn, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') return msg + n + 2;
  if (strncmp(msg, "kbcuda", 6) == 0) {
    size_t word = strcspn(msg, ": ");
    if (msg[word] == ':' && msg[word + 1] == ' ') return msg + word + 2;
  }
  return msg;
}

/* Records a failed context-free table call as the thread's message. */
static kb_status fail_thread_table(bool quiet, const char *fn, kbcuda_status s, const char *msg) {
  kb_status status = map_status(s);
  if (!quiet) {
    if (msg[0] != '\0')
      kb__fail_thread(status, fn, "%s", strip_prefix(msg, fn));
    else
      kb__fail_thread(status, fn, "the CUDA backend failed with status %d and no message", (int)s);
  }
  return status;
}

kb_status kb__cuda_fail(kb_context *ctx, const char *fn, kbcuda_status s) {
  if (s == KBCUDA_STATUS_OK) return KB_STATUS_OK;
  kb_status status = map_status(s);
  const char *msg = ctx->cuda->ctx_message(ctx->cuda_ctx);
  if (msg != NULL && msg[0] != '\0')
    kb__fail(ctx, status, fn, "%s", strip_prefix(msg, fn));
  else
    kb__fail(ctx, status, fn, "the CUDA backend failed with status %d and no message", (int)s);
  /* A sticky error poisons the CUDA context: every later call on ctx must
   * fail fast instead of touching the device. */
  if (status == KB_STATUS_DEVICE_LOST || ctx->cuda->ctx_lost(ctx->cuda_ctx)) ctx->lost = true;
  return status;
}

kb_status kb__cuda_finish(kb_context *ctx, const char *fn, kbcuda_status status) {
  if (status != KBCUDA_STATUS_OK) return kb__cuda_fail(ctx, fn, status);
  /* Kernels are blocking (@blocking yes): wait for the stream, which is also
   * where execution errors of the launched kernels surface. */
  return kb__cuda_fail(ctx, fn, ctx->cuda->ctx_synchronize(ctx->cuda_ctx));
}

kb_status kb__check_lost(kb_context *ctx, const char *fn) {
  if (!kb__on_cuda(ctx)) return KB_STATUS_OK;
  if (!ctx->lost && ctx->cuda->ctx_lost(ctx->cuda_ctx)) ctx->lost = true;
  if (ctx->lost)
    return kb__fail(ctx, KB_STATUS_DEVICE_LOST, fn,
                    "the CUDA device was lost earlier on this context (a sticky device error); destroy the context");
  return KB_STATUS_OK;
}

/* ---- memory checks ---- */

/* Is [ptr, ptr + bytes) memory the CUDA context can use?  Device memory of
 * its device (first and last byte, which catches a range running past the
 * end of its block) or managed memory. */
static kb_status check_cuda_ref(kb_context *ctx, const char *fn, const struct kb_mem_ref *r) {
  const struct kbcuda_table *t = ctx->cuda;
  char msg[KBCUDA_MESSAGE_CAPACITY];
  for (int end = 0; end < 2; end++) {
    const void *p = end ? (const void *)((const char *)r->ptr + (r->bytes - 1)) : r->ptr;
    kbcuda_ptr_kind kind = KBCUDA_PTR_HOST;
    int32_t dev = -1;
    msg[0] = '\0';
    kbcuda_status s = t->pointer_kind(p, &kind, &dev, msg, sizeof msg);
    if (s != KBCUDA_STATUS_OK)
      return kb__fail(ctx, map_status(s), fn, "cannot tell what memory %s is: %s", r->name,
                      msg[0] != '\0' ? msg : "pointer_kind failed");
    if (kind == KBCUDA_PTR_MANAGED) continue;
    if (kind == KBCUDA_PTR_DEVICE && (int64_t)dev == ctx->device) continue;
    if (end)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                      "%s (%lld bytes) runs past the end of its block of device memory", r->name,
                      (long long)r->bytes);
    if (kind == KBCUDA_PTR_DEVICE)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s is memory of CUDA device %d; the context is on CUDA device %lld",
                      r->name, (int)dev, (long long)ctx->device);
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "%s is host memory; a CUDA context needs memory of its device %lld (a kb_buffer, cudaMalloc or "
                    "managed memory)",
                    r->name, (long long)ctx->device);
  }
  return KB_STATUS_OK;
}

kb_status kb__check_memory(kb_context *ctx, const char *fn, int count, const struct kb_mem_ref *refs) {
  if (kb__on_cuda(ctx)) {
    KB_TRY(kb__check_lost(ctx, fn));
    for (int i = 0; i < count; i++)
      if (refs[i].bytes > 0) KB_TRY(check_cuda_ref(ctx, fn, &refs[i]));
    return KB_STATUS_OK;
  }
  /* CPU: device memory can only exist once a backend probed successfully;
   * until then this is the whole cost. */
  if (kb__cuda_usable() == NULL) return KB_STATUS_OK;
  for (int i = 0; i < count; i++) {
    if (refs[i].bytes <= 0) continue;
    int32_t dev = kb__device_memory_of(refs[i].ptr);
    if (dev >= 0)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                      "%s is memory of CUDA device %d; a CPU context needs host (or managed) memory", refs[i].name,
                      (int)dev);
  }
  return KB_STATUS_OK;
}

int32_t kb__device_memory_of(const void *ptr) {
  const struct kbcuda_table *t = kb__cuda_usable();
  if (t == NULL) return -1;
  kbcuda_ptr_kind kind = KBCUDA_PTR_HOST;
  int32_t dev = -1;
  if (t->pointer_kind(ptr, &kind, &dev, NULL, 0) != KBCUDA_STATUS_OK) return -1;
  return kind == KBCUDA_PTR_DEVICE ? dev : -1;
}

/* ---- device queries ---- */

/* Probes, then checks device against the device count. */
static kb_status get_device(const char *fn, bool quiet, int64_t device, const struct kbcuda_table **t) {
  int32_t n = 0;
  KB_TRY(kb__cuda_probe(fn, quiet, t, &n));
  if (device < 0 || device >= n) {
    if (!quiet)
      kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "device must be in [0, %d), got %lld", (int)n,
                      (long long)device);
    return KB_STATUS_INVALID_ARGUMENT;
  }
  return KB_STATUS_OK;
}

static kb_status query_device_info(const char *fn, int64_t device, struct kbcuda_device_info *info) {
  const struct kbcuda_table *t;
  KB_TRY(get_device(fn, false, device, &t));
  char msg[KBCUDA_MESSAGE_CAPACITY];
  msg[0] = '\0';
  kbcuda_status s = t->device_info((int32_t)device, info, msg, sizeof msg);
  if (s != KBCUDA_STATUS_OK) return fail_thread_table(false, fn, s, msg);
  return KB_STATUS_OK;
}

kb_status kb_cuda_device_count(int64_t *count) {
  static const char fn[] = "kb_cuda_device_count";
  kb__begin_thread();
  if (count == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "count must not be NULL");
  const struct kbcuda_table *t;
  int32_t n = 0;
  KB_TRY(kb__cuda_probe(fn, false, &t, &n));
  *count = n;
  return KB_STATUS_OK;
}

kb_status kb_cuda_device_name(int64_t device, char *name, int64_t name_capacity) {
  static const char fn[] = "kb_cuda_device_name";
  kb__begin_thread();
  if (name == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "name must not be NULL");
  if (name_capacity <= 0)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "name_capacity must be > 0, got %lld",
                           (long long)name_capacity);
  struct kbcuda_device_info info;
  KB_TRY(query_device_info(fn, device, &info));
  size_t len = strnlen(info.name, sizeof info.name - 1);
  if ((uint64_t)len > (uint64_t)(name_capacity - 1)) len = (size_t)(name_capacity - 1);
  memcpy(name, info.name, len);
  name[len] = '\0';
  return KB_STATUS_OK;
}

kb_status kb_cuda_device_compute_capability(int64_t device, int64_t *capability) {
  static const char fn[] = "kb_cuda_device_compute_capability";
  kb__begin_thread();
  if (capability == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "capability must not be NULL");
  struct kbcuda_device_info info;
  KB_TRY(query_device_info(fn, device, &info));
  *capability = 10 * (int64_t)info.major + info.minor;
  return KB_STATUS_OK;
}

kb_status kb_cuda_device_total_memory(int64_t device, int64_t *bytes) {
  static const char fn[] = "kb_cuda_device_total_memory";
  kb__begin_thread();
  if (bytes == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "bytes must not be NULL");
  struct kbcuda_device_info info;
  KB_TRY(query_device_info(fn, device, &info));
  *bytes = info.total_memory > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)info.total_memory;
  return KB_STATUS_OK;
}

kb_status kb_cuda_device_free_memory(int64_t device, int64_t *bytes) {
  static const char fn[] = "kb_cuda_device_free_memory";
  kb__begin_thread();
  if (bytes == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "bytes must not be NULL");
  const struct kbcuda_table *t;
  KB_TRY(get_device(fn, false, device, &t));
  uint64_t free_bytes = 0, total_bytes = 0;
  char msg[KBCUDA_MESSAGE_CAPACITY];
  msg[0] = '\0';
  kbcuda_status s = t->device_memory((int32_t)device, &free_bytes, &total_bytes, msg, sizeof msg);
  if (s != KBCUDA_STATUS_OK) return fail_thread_table(false, fn, s, msg);
  *bytes = free_bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)free_bytes;
  return KB_STATUS_OK;
}

/* ---- contexts ---- */

kb_status kb__context_create_cuda(const char *fn, bool quiet, int64_t device, int64_t num_threads, kb_context **out) {
  const struct kbcuda_table *t;
  KB_TRY(get_device(fn, quiet, device, &t));
  kb_context *ctx = kb__context_alloc(num_threads);
  if (ctx == NULL) {
    if (!quiet) kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, fn, "out of memory allocating the context");
    return KB_STATUS_OUT_OF_MEMORY;
  }
  kbcuda_ctx *cc = NULL;
  char msg[KBCUDA_MESSAGE_CAPACITY];
  msg[0] = '\0';
  kbcuda_status s = t->ctx_create((int32_t)device, &cc, msg, sizeof msg);
  if (s != KBCUDA_STATUS_OK || cc == NULL) {
    kb__context_discard(ctx); /* never published: back to the free list */
    return fail_thread_table(quiet, fn, s != KBCUDA_STATUS_OK ? s : KBCUDA_STATUS_INTERNAL, msg);
  }
  ctx->backend = KB_BACKEND_CUDA;
  ctx->device = device;
  ctx->cuda = t;
  ctx->cuda_ctx = cc;
  ctx->lost = false;
  kb__context_publish(ctx);
  *out = ctx;
  return KB_STATUS_OK;
}

kb_status kb_context_create_cuda(int64_t device, kb_context **out) {
  static const char fn[] = "kb_context_create_cuda";
  kb__begin_thread();
  if (out == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  return kb__context_create_cuda(fn, false, device, 0, out);
}

kb_status kb_context_synchronize(kb_context *ctx) {
  static const char fn[] = "kb_context_synchronize";
  KB_BEGIN(ctx, fn);
  if (!kb__on_cuda(ctx)) return KB_STATUS_OK; /* CPU kernels finish before returning */
  KB_TRY(kb__check_lost(ctx, fn));
  return kb__cuda_finish(ctx, fn, KBCUDA_STATUS_OK);
}
