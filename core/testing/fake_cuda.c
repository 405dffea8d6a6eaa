/* fake_cuda.c - the fake CUDA backend of fake_cuda.h: a kbcuda_table whose
 * "device" is host memory, so the core's CUDA paths (contexts, buffers,
 * kb__check_memory, kb__cuda_finish, kernel dispatch) run on any machine. */
#include "fake_cuda.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_TOTAL_MEMORY ((uint64_t)1 << 30)

struct kbcuda_ctx {
  int32_t device;
  int32_t lost;
  int32_t gemm_impl, last_gemm_impl;
  int inside; /* atomic: entries running on this ctx (see enter) */
  char message[KBCUDA_MESSAGE_CAPACITY];
};

/* A block's device address is its host allocation with bit 62 flipped: a
 * non-canonical x86-64 address (elsewhere at least not the host's), so host
 * code that dereferences a device pointer faults here as it would on a GPU,
 * instead of silently reading host memory.  Only this file translates. */
struct block {
  char *ptr;  /* device address handed out */
  char *host; /* the malloc'ed memory behind it */
  size_t bytes;
};
#define FAKE_DEVICE_TAG ((uintptr_t)1 << 62)

/* Everything below is guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;
static size_t nblocks, cap_blocks;
static uint64_t live_bytes;
static kbcuda_status fail_status;
static char fail_message[KBCUDA_MESSAGE_CAPACITY];
static char last_entry[32];
static int calls;
static int32_t last_dtype = -1, last_op = -1;
static int overlaps; /* atomic: entries that found another call inside their ctx */

static void msg_printf(char *msg, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void msg_printf(char *msg, size_t cap, const char *fmt, ...) {
  if (msg == NULL || cap == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, cap, fmt, ap);
  va_end(ap);
}

/* The live block holding [p, p + bytes), or NULL; with lock held. */
static struct block *find_block(const void *p, size_t bytes) {
  const char *c = (const char *)p;
  for (size_t i = 0; i < nblocks; i++) {
    struct block *b = &blocks[i];
    if (c >= b->ptr && c < b->ptr + b->bytes && bytes <= (size_t)(b->ptr + b->bytes - c)) return b;
  }
  return NULL;
}

/* The host memory behind device address p (which must be in a block), or
 * NULL. */
static void *host_of(const void *p) {
  pthread_mutex_lock(&lock);
  struct block *b = find_block(p, 1);
  void *h = b != NULL ? b->host + ((const char *)p - b->ptr) : NULL;
  pthread_mutex_unlock(&lock);
  return h;
}

static bool is_device(const void *p, size_t bytes) {
  pthread_mutex_lock(&lock);
  bool yes = find_block(p, bytes) != NULL;
  pthread_mutex_unlock(&lock);
  return yes;
}

/* Starts an entry on ctx: clears its message, refuses a lost ctx (as the
 * real backend does). */
static kbcuda_status enter(kbcuda_ctx *c, const char *fn) {
  /* Two calls inside one ctx at once would share its stream and message:
   * count it when it happens (the core serialises them).  The short wait
   * gives an overlap time to show. */
  if (__atomic_add_fetch(&c->inside, 1, __ATOMIC_SEQ_CST) > 1) __atomic_add_fetch(&overlaps, 1, __ATOMIC_SEQ_CST);
  for (volatile int i = 0; i < 2000; i++) {
  }
  __atomic_sub_fetch(&c->inside, 1, __ATOMIC_SEQ_CST);
  c->message[0] = '\0';
  if (c->lost) {
    msg_printf(c->message, sizeof c->message, "%s: device lost earlier on this context; destroy it", fn);
    return KBCUDA_STATUS_DEVICE_LOST;
  }
  return KBCUDA_STATUS_OK;
}

/* Takes the injected failure, if any, for an entry on c named fn. */
static kbcuda_status take_failure(kbcuda_ctx *c, const char *fn) {
  pthread_mutex_lock(&lock);
  kbcuda_status s = fail_status;
  char text[KBCUDA_MESSAGE_CAPACITY];
  snprintf(text, sizeof text, "%s", fail_message);
  fail_status = KBCUDA_STATUS_OK;
  fail_message[0] = '\0';
  pthread_mutex_unlock(&lock);
  if (s != KBCUDA_STATUS_OK) {
    msg_printf(c->message, sizeof c->message, "%s: %s", fn, text);
    if (s == KBCUDA_STATUS_DEVICE_LOST) c->lost = 1;
  }
  return s;
}

/* Every kernel and validate entry: log the call, then as the real backend
 * would: lost ctx, injected failure, or OK. */
static kbcuda_status record(kbcuda_ctx *c, const char *entry, const char *fn, int32_t dt, int32_t op) {
  pthread_mutex_lock(&lock);
  snprintf(last_entry, sizeof last_entry, "%s", entry);
  calls++;
  last_dtype = dt;
  last_op = op;
  pthread_mutex_unlock(&lock);
  kbcuda_status s = enter(c, fn != NULL ? fn : entry);
  if (s != KBCUDA_STATUS_OK) return s;
  return take_failure(c, fn != NULL ? fn : entry);
}

int kb_fake_cuda_overlaps(void) { return __atomic_load_n(&overlaps, __ATOMIC_SEQ_CST); }

/* ---- devices ---- */

static const char *build_info(void) { return "kernelbridge fake CUDA backend (host memory, for tests)"; }

static kbcuda_status device_count(int32_t *count, char *msg, size_t cap) {
  (void)msg;
  (void)cap;
  *count = 1;
  return KBCUDA_STATUS_OK;
}

static kbcuda_status check_device(int32_t device, char *msg, size_t cap) {
  if (device != 0) {
    msg_printf(msg, cap, "device %d does not exist (1 CUDA device)", (int)device);
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  return KBCUDA_STATUS_OK;
}

static kbcuda_status device_info(int32_t device, struct kbcuda_device_info *info, char *msg, size_t cap) {
  memset(info, 0, sizeof *info);
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  snprintf(info->name, sizeof info->name, "Fake GPU");
  info->major = 9;
  info->minor = 0;
  info->multiprocessors = 1;
  info->pci_bus_id = 0;
  info->total_memory = FAKE_TOTAL_MEMORY;
  return KBCUDA_STATUS_OK;
}

static kbcuda_status device_memory(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes, char *msg,
                                   size_t cap) {
  *free_bytes = *total_bytes = 0;
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  pthread_mutex_lock(&lock);
  uint64_t used = live_bytes;
  pthread_mutex_unlock(&lock);
  *total_bytes = FAKE_TOTAL_MEMORY;
  *free_bytes = used < FAKE_TOTAL_MEMORY ? FAKE_TOTAL_MEMORY - used : 0;
  return KBCUDA_STATUS_OK;
}

static kbcuda_status versions(int32_t *driver, int32_t *runtime, char *msg, size_t cap) {
  (void)msg;
  (void)cap;
  *driver = 13000;
  *runtime = 13000;
  return KBCUDA_STATUS_OK;
}

/* ---- contexts ---- */

static kbcuda_status ctx_create(int32_t device, kbcuda_ctx **out, char *msg, size_t cap) {
  *out = NULL;
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  kbcuda_ctx *c = (kbcuda_ctx *)calloc(1, sizeof *c);
  if (c == NULL) {
    msg_printf(msg, cap, "out of host memory");
    return KBCUDA_STATUS_OUT_OF_MEMORY;
  }
  c->device = device;
  *out = c;
  return KBCUDA_STATUS_OK;
}

static void ctx_destroy(kbcuda_ctx *c) { free(c); }

static kbcuda_status ctx_synchronize(kbcuda_ctx *c) {
  kbcuda_status s = enter(c, "kbcuda_ctx_synchronize");
  if (s != KBCUDA_STATUS_OK) return s;
  return take_failure(c, "kbcuda_ctx_synchronize");
}

static void *ctx_stream(const kbcuda_ctx *c) { return (void *)c; }
static int32_t ctx_device(const kbcuda_ctx *c) { return c->device; }
static const char *ctx_message(const kbcuda_ctx *c) { return c->message; }
static int32_t ctx_lost(const kbcuda_ctx *c) { return c->lost; }
static int32_t ctx_last_gemm_impl(const kbcuda_ctx *c) { return c->last_gemm_impl; }
static kbcuda_status ctx_set_gemm_impl(kbcuda_ctx *c, int32_t impl) {
  c->message[0] = '\0';
  if (impl != KBCUDA_GEMM_AUTO && impl != KBCUDA_GEMM_CUBLASLT && impl != KBCUDA_GEMM_TILED) {
    msg_printf(c->message, sizeof c->message, "unknown gemm implementation %d", (int)impl);
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  c->gemm_impl = impl;
  return KBCUDA_STATUS_OK;
}

/* ---- memory ---- */

static kbcuda_status fake_malloc(kbcuda_ctx *c, size_t bytes, void **out) {
  *out = NULL;
  kbcuda_status s = enter(c, "kbcuda_malloc");
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  pthread_mutex_lock(&lock);
  if (bytes > FAKE_TOTAL_MEMORY - (live_bytes < FAKE_TOTAL_MEMORY ? live_bytes : FAKE_TOTAL_MEMORY)) {
    pthread_mutex_unlock(&lock);
    msg_printf(c->message, sizeof c->message, "out of device memory allocating %zu bytes on device %d", bytes,
               (int)c->device);
    return KBCUDA_STATUS_OUT_OF_MEMORY;
  }
  if (nblocks == cap_blocks) {
    size_t n = cap_blocks ? 2 * cap_blocks : 16;
    struct block *grown = (struct block *)realloc(blocks, n * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&lock);
      msg_printf(c->message, sizeof c->message, "out of host memory for the fake's block list");
      return KBCUDA_STATUS_OUT_OF_MEMORY;
    }
    blocks = grown;
    cap_blocks = n;
  }
  char *p = (char *)malloc(bytes);
  if (p == NULL) {
    pthread_mutex_unlock(&lock);
    msg_printf(c->message, sizeof c->message, "out of device memory allocating %zu bytes on device %d", bytes,
               (int)c->device);
    return KBCUDA_STATUS_OUT_OF_MEMORY;
  }
  char *dev = (char *)((uintptr_t)p ^ FAKE_DEVICE_TAG);
  blocks[nblocks].ptr = dev;
  blocks[nblocks].host = p;
  blocks[nblocks].bytes = bytes;
  nblocks++;
  live_bytes += bytes;
  pthread_mutex_unlock(&lock);
  *out = dev;
  return KBCUDA_STATUS_OK;
}

/* Frees a block that starts at ptr; INVALID_ARGUMENT (as cudaFree) for
 * anything else. */
static kbcuda_status free_block(void *ptr, char *msg, size_t cap) {
  if (ptr == NULL) return KBCUDA_STATUS_OK;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < nblocks; i++) {
    if (blocks[i].ptr == ptr) {
      live_bytes -= blocks[i].bytes;
      free(blocks[i].host);
      blocks[i] = blocks[nblocks - 1];
      nblocks--;
      pthread_mutex_unlock(&lock);
      return KBCUDA_STATUS_OK;
    }
  }
  pthread_mutex_unlock(&lock);
  msg_printf(msg, cap, "CUDA error in cudaFree: cudaErrorInvalidValue (%p is not a device allocation)", ptr);
  return KBCUDA_STATUS_DEVICE_ERROR;
}

static kbcuda_status fake_free(kbcuda_ctx *c, void *ptr) {
  kbcuda_status s = enter(c, "kbcuda_free");
  if (s != KBCUDA_STATUS_OK) return s;
  return free_block(ptr, c->message, sizeof c->message);
}

static kbcuda_status dev_free_on_device(int32_t device, void *ptr, char *msg, size_t cap) {
  if (ptr == NULL) return KBCUDA_STATUS_OK;
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  return free_block(ptr, msg, cap);
}

/* Copies after checking each side is the memory the entry's name promises,
 * so a test catches the core passing a wrong pointer or range. */
static kbcuda_status copy(kbcuda_ctx *c, const char *what, void *dst, bool dst_device, const void *src,
                          bool src_device, size_t bytes) {
  kbcuda_status s = enter(c, what);
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  if (is_device(dst, bytes) != dst_device || is_device(src, bytes) != src_device) {
    msg_printf(c->message, sizeof c->message, "%s: CUDA error: cudaErrorInvalidValue (dst %s, src %s)", what,
               is_device(dst, bytes) ? "device" : "not device", is_device(src, bytes) ? "device" : "not device");
    return KBCUDA_STATUS_DEVICE_ERROR;
  }
  memmove(dst_device ? host_of(dst) : dst, src_device ? host_of(src) : src, bytes);
  return KBCUDA_STATUS_OK;
}

static kbcuda_status memcpy_h2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  return copy(c, "memcpy host to device", dst, true, src, false, bytes);
}
static kbcuda_status memcpy_d2h(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  return copy(c, "memcpy device to host", dst, false, src, true, bytes);
}
static kbcuda_status memcpy_d2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  return copy(c, "memcpy device to device", dst, true, src, true, bytes);
}

static kbcuda_status dev_memset(kbcuda_ctx *c, void *dst, int32_t byte, size_t bytes) {
  kbcuda_status s = enter(c, "kbcuda_memset");
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  if (!is_device(dst, bytes)) {
    msg_printf(c->message, sizeof c->message, "CUDA error in cudaMemsetAsync: cudaErrorInvalidValue (not device memory)");
    return KBCUDA_STATUS_DEVICE_ERROR;
  }
  memset(host_of(dst), byte, bytes);
  return KBCUDA_STATUS_OK;
}

static kbcuda_status pointer_kind(const void *ptr, kbcuda_ptr_kind *kind, int32_t *device, char *msg, size_t cap) {
  (void)msg;
  (void)cap;
  bool dev = ptr != NULL && is_device(ptr, 1);
  *kind = dev ? KBCUDA_PTR_DEVICE : KBCUDA_PTR_HOST;
  *device = dev ? 0 : -1;
  return KBCUDA_STATUS_OK;
}

/* ---- content validation: really computed ---- */

static kbcuda_status validate_index(kbcuda_ctx *c, const char *fn, int64_t n, const int32_t *values, int64_t lo,
                                    int64_t hi, int32_t has_ignore, int32_t ignore, int64_t *first_bad,
                                    int32_t *bad_value) {
  kbcuda_status s = record(c, "validate_index", fn, -1, -1);
  if (s != KBCUDA_STATUS_OK) return s;
  *first_bad = -1;
  *bad_value = 0;
  if (n > 0) values = (const int32_t *)host_of(values);
  for (int64_t i = 0; i < n; i++) {
    int32_t v = values[i];
    if (has_ignore && v == ignore) continue;
    if (v < lo || v >= hi) {
      *first_bad = i;
      *bad_value = v;
      break;
    }
  }
  return KBCUDA_STATUS_OK;
}

static kbcuda_status validate_logits(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                     int64_t *first_bad_row, int32_t *reason) {
  kbcuda_status s = record(c, "validate_logits", fn, -1, -1);
  if (s != KBCUDA_STATUS_OK) return s;
  *first_bad_row = -1;
  *reason = KBCUDA_LOGITS_OK;
  if (rows > 0 && cols > 0) logits = (const float *)host_of(logits);
  for (int64_t r = 0; r < rows; r++) {
    const float *row = logits + r * cols;
    int32_t why = KBCUDA_LOGITS_ALL_NEG_INF;
    for (int64_t j = 0; j < cols; j++) {
      float v = row[j];
      if (isnan(v)) {
        why = KBCUDA_LOGITS_NAN;
        break;
      }
      if (isinf(v) && v > 0) {
        why = KBCUDA_LOGITS_POS_INF;
        break;
      }
      if (!(isinf(v) && v < 0)) why = KBCUDA_LOGITS_OK; /* keep scanning for a later NaN or +inf */
    }
    if (why != KBCUDA_LOGITS_OK) {
      *first_bad_row = r;
      *reason = why;
      break;
    }
  }
  return KBCUDA_STATUS_OK;
}

/* ---- kernels: record only ---- */

#define UNUSED(x) (void)(x)

static kbcuda_status silu(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  UNUSED(n), UNUSED(x), UNUSED(y);
  return record(c, "silu", fn, -1, -1);
}
static kbcuda_status gelu(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  UNUSED(n), UNUSED(x), UNUSED(y);
  return record(c, "gelu", fn, -1, -1);
}
static kbcuda_status gelu_tanh(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  UNUSED(n), UNUSED(x), UNUSED(y);
  return record(c, "gelu_tanh", fn, -1, -1);
}
static kbcuda_status add(kbcuda_ctx *c, const char *fn, int64_t n, const float *a, const float *b, float *y) {
  UNUSED(n), UNUSED(a), UNUSED(b), UNUSED(y);
  return record(c, "add", fn, -1, -1);
}
static kbcuda_status mul(kbcuda_ctx *c, const char *fn, int64_t n, const float *a, const float *b, float *y) {
  UNUSED(n), UNUSED(a), UNUSED(b), UNUSED(y);
  return record(c, "mul", fn, -1, -1);
}
static kbcuda_status scale(kbcuda_ctx *c, const char *fn, int64_t n, float alpha, const float *x, float *y) {
  UNUSED(n), UNUSED(alpha), UNUSED(x), UNUSED(y);
  return record(c, "scale", fn, -1, -1);
}
static kbcuda_status add_bias(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                              const float *bias, float *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(bias), UNUSED(y);
  return record(c, "add_bias", fn, -1, -1);
}
static kbcuda_status softmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x, float *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(y);
  return record(c, "softmax", fn, -1, -1);
}
static kbcuda_status log_softmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                                 float *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(y);
  return record(c, "log_softmax", fn, -1, -1);
}
static kbcuda_status rmsnorm(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                             const float *weight, float eps, float *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(weight), UNUSED(eps), UNUSED(y);
  return record(c, "rmsnorm", fn, -1, -1);
}
static kbcuda_status layernorm(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                               const float *weight, const float *bias, float eps, float *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(weight), UNUSED(bias), UNUSED(eps), UNUSED(y);
  return record(c, "layernorm", fn, -1, -1);
}
static kbcuda_status gemm(kbcuda_ctx *c, const char *fn, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                          int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *cc, int64_t ldc) {
  UNUSED(trans_a), UNUSED(trans_b), UNUSED(m), UNUSED(n), UNUSED(k), UNUSED(alpha), UNUSED(a), UNUSED(lda);
  UNUSED(b), UNUSED(ldb), UNUSED(beta), UNUSED(cc), UNUSED(ldc);
  return record(c, "gemm", fn, -1, -1);
}
static kbcuda_status embedding(kbcuda_ctx *c, const char *fn, int64_t n_ids, int64_t vocab, int64_t dim,
                               const int32_t *ids, const float *table, float *out) {
  UNUSED(n_ids), UNUSED(vocab), UNUSED(dim), UNUSED(ids), UNUSED(table), UNUSED(out);
  return record(c, "embedding", fn, -1, -1);
}
static kbcuda_status rope(kbcuda_ctx *c, const char *fn, int64_t seq, int64_t heads, int64_t head_dim,
                          const float *x, const int32_t *positions, float theta, float *y) {
  UNUSED(seq), UNUSED(heads), UNUSED(head_dim), UNUSED(x), UNUSED(positions), UNUSED(theta), UNUSED(y);
  return record(c, "rope", fn, -1, -1);
}
static kbcuda_status attention(kbcuda_ctx *c, const char *fn, int64_t batch, int64_t heads, int64_t kv_heads,
                               int64_t seq_q, int64_t seq_kv, int64_t head_dim, const float *q, const float *k,
                               const float *v, int32_t causal, float scale_, float *out) {
  UNUSED(batch), UNUSED(heads), UNUSED(kv_heads), UNUSED(seq_q), UNUSED(seq_kv), UNUSED(head_dim);
  UNUSED(q), UNUSED(k), UNUSED(v), UNUSED(causal), UNUSED(scale_), UNUSED(out);
  return record(c, "attention", fn, -1, -1);
}
static kbcuda_status cross_entropy(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t classes, const float *logits,
                                   const int32_t *targets, int32_t ignore_index, float *losses, float *mean_loss) {
  UNUSED(rows), UNUSED(classes), UNUSED(logits), UNUSED(targets), UNUSED(ignore_index), UNUSED(losses);
  UNUSED(mean_loss);
  return record(c, "cross_entropy", fn, -1, -1);
}
static kbcuda_status cross_entropy_backward(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t classes,
                                            const float *logits, const int32_t *targets, int32_t ignore_index,
                                            float dloss, float *dlogits) {
  UNUSED(rows), UNUSED(classes), UNUSED(logits), UNUSED(targets), UNUSED(ignore_index), UNUSED(dloss);
  UNUSED(dlogits);
  return record(c, "cross_entropy_backward", fn, -1, -1);
}
static kbcuda_status adamw_step(kbcuda_ctx *c, const char *fn, int64_t n, float *params, const float *grads, float *m,
                                float *v, float lr, float beta1, float beta2, float eps, float weight_decay,
                                int64_t step) {
  UNUSED(n), UNUSED(params), UNUSED(grads), UNUSED(m), UNUSED(v), UNUSED(lr), UNUSED(beta1), UNUSED(beta2);
  UNUSED(eps), UNUSED(weight_decay), UNUSED(step);
  return record(c, "adamw_step", fn, -1, -1);
}
static kbcuda_status argmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x, int32_t *out) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(out);
  return record(c, "argmax", fn, -1, -1);
}
static kbcuda_status sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                            float temperature, uint64_t seed, int32_t *out) {
  UNUSED(rows), UNUSED(cols), UNUSED(logits), UNUSED(temperature), UNUSED(seed), UNUSED(out);
  return record(c, "sample", fn, -1, -1);
}
static kbcuda_status topk_sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                 int64_t k, float temperature, uint64_t seed, int32_t *out) {
  UNUSED(rows), UNUSED(cols), UNUSED(logits), UNUSED(k), UNUSED(temperature), UNUSED(seed), UNUSED(out);
  return record(c, "topk_sample", fn, -1, -1);
}
static kbcuda_status topp_sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                 float p, float temperature, uint64_t seed, int32_t *out) {
  UNUSED(rows), UNUSED(cols), UNUSED(logits), UNUSED(p), UNUSED(temperature), UNUSED(seed), UNUSED(out);
  return record(c, "topp_sample", fn, -1, -1);
}

static kbcuda_status unary_dt(kbcuda_ctx *c, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *x,
                              void *y) {
  UNUSED(n), UNUSED(x), UNUSED(y);
  return record(c, "unary_dt", fn, dt, op);
}
static kbcuda_status binary_dt(kbcuda_ctx *c, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *a,
                               const void *b, void *y) {
  UNUSED(n), UNUSED(a), UNUSED(b), UNUSED(y);
  return record(c, "binary_dt", fn, dt, op);
}
static kbcuda_status scale_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t n, float alpha, const void *x,
                              void *y) {
  UNUSED(n), UNUSED(alpha), UNUSED(x), UNUSED(y);
  return record(c, "scale_dt", fn, dt, -1);
}
static kbcuda_status add_bias_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                 const void *x, const void *bias, void *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(bias), UNUSED(y);
  return record(c, "add_bias_dt", fn, dt, -1);
}
static kbcuda_status softmax_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int32_t log, int64_t rows,
                                int64_t cols, const void *x, void *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(y);
  return record(c, "softmax_dt", fn, dt, log);
}
static kbcuda_status rmsnorm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                const void *x, const void *weight, float eps, void *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(weight), UNUSED(eps), UNUSED(y);
  return record(c, "rmsnorm_dt", fn, dt, -1);
}
static kbcuda_status layernorm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                  const void *x, const void *weight, const void *bias, float eps, void *y) {
  UNUSED(rows), UNUSED(cols), UNUSED(x), UNUSED(weight), UNUSED(bias), UNUSED(eps), UNUSED(y);
  return record(c, "layernorm_dt", fn, dt, -1);
}
static kbcuda_status gemm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                             int64_t ldb, float beta, void *cc, int64_t ldc) {
  UNUSED(trans_a), UNUSED(trans_b), UNUSED(m), UNUSED(n), UNUSED(k), UNUSED(alpha), UNUSED(a), UNUSED(lda);
  UNUSED(b), UNUSED(ldb), UNUSED(beta), UNUSED(cc), UNUSED(ldc);
  return record(c, "gemm_dt", fn, dt, -1);
}
static kbcuda_status attention_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t batch, int64_t heads,
                                  int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const void *q,
                                  const void *k, const void *v, int32_t causal, float scale_, void *out) {
  UNUSED(batch), UNUSED(heads), UNUSED(kv_heads), UNUSED(seq_q), UNUSED(seq_kv), UNUSED(head_dim);
  UNUSED(q), UNUSED(k), UNUSED(v), UNUSED(causal), UNUSED(scale_), UNUSED(out);
  return record(c, "attention_dt", fn, dt, -1);
}

/* ---- the table ---- */

static const struct kbcuda_table fake_table = {
    .abi_version = KBCUDA_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(struct kbcuda_table),
    .build_info = build_info,
    .device_count = device_count,
    .device_info = device_info,
    .device_memory = device_memory,
    .versions = versions,
    .ctx_create = ctx_create,
    .ctx_destroy = ctx_destroy,
    .ctx_synchronize = ctx_synchronize,
    .ctx_stream = ctx_stream,
    .ctx_device = ctx_device,
    .ctx_message = ctx_message,
    .ctx_lost = ctx_lost,
    .ctx_set_gemm_impl = ctx_set_gemm_impl,
    .ctx_last_gemm_impl = ctx_last_gemm_impl,
    .dev_malloc = fake_malloc,
    .dev_free = fake_free,
    .memcpy_h2d = memcpy_h2d,
    .memcpy_d2h = memcpy_d2h,
    .memcpy_d2d = memcpy_d2d,
    .dev_memset = dev_memset,
    .pointer_kind = pointer_kind,
    .validate_index = validate_index,
    .validate_logits = validate_logits,
    .silu = silu,
    .gelu = gelu,
    .gelu_tanh = gelu_tanh,
    .add = add,
    .mul = mul,
    .scale = scale,
    .add_bias = add_bias,
    .softmax = softmax,
    .log_softmax = log_softmax,
    .rmsnorm = rmsnorm,
    .layernorm = layernorm,
    .gemm = gemm,
    .embedding = embedding,
    .rope = rope,
    .attention = attention,
    .cross_entropy = cross_entropy,
    .cross_entropy_backward = cross_entropy_backward,
    .adamw_step = adamw_step,
    .argmax = argmax,
    .sample = sample,
    .topk_sample = topk_sample,
    .topp_sample = topp_sample,
    .unary_dt = unary_dt,
    .binary_dt = binary_dt,
    .scale_dt = scale_dt,
    .add_bias_dt = add_bias_dt,
    .softmax_dt = softmax_dt,
    .rmsnorm_dt = rmsnorm_dt,
    .layernorm_dt = layernorm_dt,
    .gemm_dt = gemm_dt,
    .attention_dt = attention_dt,
    .dev_free_on_device = dev_free_on_device,
};

const struct kbcuda_table *kb_fake_cuda_table(void) { return &fake_table; }

void kb_fake_cuda_reset(void) {
  pthread_mutex_lock(&lock);
  fail_status = KBCUDA_STATUS_OK;
  fail_message[0] = '\0';
  last_entry[0] = '\0';
  calls = 0;
  last_dtype = -1;
  last_op = -1;
  pthread_mutex_unlock(&lock);
}

void kb_fake_cuda_fail_next(kbcuda_status status, const char *message) {
  pthread_mutex_lock(&lock);
  fail_status = status;
  snprintf(fail_message, sizeof fail_message, "%s", message != NULL ? message : "");
  pthread_mutex_unlock(&lock);
}

const char *kb_fake_cuda_last_entry(void) { return last_entry; }

int kb_fake_cuda_calls(void) {
  pthread_mutex_lock(&lock);
  int n = calls;
  pthread_mutex_unlock(&lock);
  return n;
}

int32_t kb_fake_cuda_last_dtype(void) {
  pthread_mutex_lock(&lock);
  int32_t d = last_dtype;
  pthread_mutex_unlock(&lock);
  return d;
}

int32_t kb_fake_cuda_last_op(void) {
  pthread_mutex_lock(&lock);
  int32_t o = last_op;
  pthread_mutex_unlock(&lock);
  return o;
}
