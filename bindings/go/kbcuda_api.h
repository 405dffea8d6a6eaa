/* vendored by tools/vendor_c.py from core/src/kbcuda_api.h; do not edit */
/*
 * kbcuda_api.h - the internal C ABI between the kernelbridge core and the
 * CUDA backend library libkernelbridge_cuda.so.
 *
 * Not installed, not part of the public API.  Lives in core/src because both
 * sides compile it: the core (C99) and kernels/cuda (nvcc, with -Icore/src).
 * The core never links the CUDA library: it dlopen()s it at run time
 * (core/src/cuda_loader.c) and calls the one exported symbol
 *
 *     const struct kbcuda_table *kbcuda_get_table(uint32_t abi_version);
 *
 * which returns a table of function pointers, or NULL when the library cannot
 * serve the requested ABI version.  Everything else in the library is hidden.
 *
 * This header is plain C99 and includes no CUDA header, so the core compiles
 * without the CUDA toolkit.  CUDA objects cross the boundary as opaque
 * pointers (struct kbcuda_ctx, void *stream).
 *
 * Versioning: KBCUDA_ABI_VERSION is bumped whenever a field of struct
 * kbcuda_table changes meaning, type or position.  Appending a field at the
 * end keeps the version but increases struct_size, so a newer core can test
 * for it with KBCUDA_TABLE_HAS(table, f) and work with an older library
 * (the loader accepts any struct_size >= KBCUDA_TABLE_V1_SIZE).
 *
 * Conventions of every entry point
 * - Return value: a kbcuda_status, numerically equal to the public kb_status
 *   values of kernelbridge.h (0..8, KBCUDA_STATUS_DEVICE_LOST included).
 * - Entry points taking a kbcuda_ctx record a message on failure (read it
 *   with ctx_message; "" after success); the others write it into (msg, cap)
 *   when msg is not NULL.  Messages have no "kb_xxx: " prefix unless the
 *   caller passed a function name (kernel entries take `fn`).
 * - Kernel entries take device pointers only and do NOT validate their
 *   arguments: the core validates sizes, pointers, scalars and overlaps with
 *   its CPU validation code first, and uses the validate_* entries for the
 *   checks that must read tensor contents (ids, targets, positions, logits).
 * - Kernels are enqueued on the context's stream and return once launched;
 *   errors of the launch itself are returned at once, errors of the
 *   execution by the next ctx_synchronize (or a later call).  D2H copies and
 *   the validate_* entries synchronise the stream before returning.
 * - After a sticky device error (illegal address, launch failure, ...) the
 *   CUDA context of the process is unusable: the entry returns
 *   KBCUDA_STATUS_DEVICE_LOST, the ctx latches it (ctx_lost returns 1) and
 *   every later call on that ctx returns DEVICE_LOST without touching the
 *   device.  Only ctx_destroy remains valid.
 * - A kbcuda_ctx is used by one thread at a time (as kb_context); different
 *   contexts may be used concurrently.  Each entry makes the ctx's device
 *   current on the calling thread.
 */
#ifndef KBCUDA_API_H
#define KBCUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KBCUDA_ABI_VERSION 1u

/* File name of the backend library, as searched by the loader. */
#define KBCUDA_LIBRARY_NAME "libkernelbridge_cuda.so"
/* The one exported symbol. */
#define KBCUDA_GET_TABLE_SYMBOL "kbcuda_get_table"

/* Status values: equal to the public kb_status values (static_assert in
 * kernels/cuda/table.cu). */
typedef int32_t kbcuda_status;
#define KBCUDA_STATUS_OK 0
#define KBCUDA_STATUS_INVALID_ARGUMENT 1
#define KBCUDA_STATUS_SHAPE_MISMATCH 2
#define KBCUDA_STATUS_UNSUPPORTED 3
#define KBCUDA_STATUS_OUT_OF_MEMORY 4
#define KBCUDA_STATUS_BACKEND_UNAVAILABLE 5
#define KBCUDA_STATUS_DEVICE_ERROR 6
#define KBCUDA_STATUS_INTERNAL 7
/* KB_STATUS_DEVICE_LOST: a sticky device error; the ctx latches it and the
 * core latches it in its kb_context too. */
#define KBCUDA_STATUS_DEVICE_LOST 8

/* Element types of the *_dt entries. */
typedef int32_t kbcuda_dtype;
#define KBCUDA_F32 0
#define KBCUDA_BF16 1
#define KBCUDA_F16 2

/* Result of pointer_kind. */
typedef int32_t kbcuda_ptr_kind;
#define KBCUDA_PTR_HOST 0        /* ordinary (pageable, unregistered) host memory, or NULL */
#define KBCUDA_PTR_HOST_PINNED 1 /* cudaMallocHost / cudaHostRegister memory */
#define KBCUDA_PTR_DEVICE 2      /* cudaMalloc memory of *device */
#define KBCUDA_PTR_MANAGED 3     /* cudaMallocManaged memory */

/* Unary activations of unary_dt. */
#define KBCUDA_OP_SILU 0
#define KBCUDA_OP_GELU 1
#define KBCUDA_OP_GELU_TANH 2
/* Binary ops of binary_dt. */
#define KBCUDA_OP_ADD 0
#define KBCUDA_OP_MUL 1

/* GEMM implementation choice (ctx_set_gemm_impl). */
#define KBCUDA_GEMM_AUTO 0     /* cuBLASLt when it loads and has an algorithm, else tiled */
#define KBCUDA_GEMM_CUBLASLT 1 /* cuBLASLt only; UNSUPPORTED when it is missing or refuses the problem */
#define KBCUDA_GEMM_TILED 2    /* the library's own tiled kernel (bitwise equal to the CPU for f32) */

/* Reasons reported by validate_logits. */
#define KBCUDA_LOGITS_OK 0
#define KBCUDA_LOGITS_NAN 1
#define KBCUDA_LOGITS_POS_INF 2
#define KBCUDA_LOGITS_ALL_NEG_INF 3

/* Longest message a ctx keeps, terminator included (as KB_MESSAGE_CAPACITY). */
#define KBCUDA_MESSAGE_CAPACITY 256

struct kbcuda_device_info {
  char name[256];
  int32_t major, minor;         /* compute capability */
  int32_t multiprocessors;
  int32_t pci_bus_id;
  uint64_t total_memory;        /* bytes */
};

/* Per-kb_context CUDA state: device, stream, cuBLASLt handle and workspace,
 * message, lost latch.  Opaque to the core. */
typedef struct kbcuda_ctx kbcuda_ctx;

struct kbcuda_table {
  uint32_t abi_version; /* KBCUDA_ABI_VERSION of the library */
  uint32_t struct_size; /* sizeof(struct kbcuda_table) in the library */
  /* "kernelbridge CUDA backend: CUDA runtime 13.0 (static), sm_80 sm_90 compute_90" */
  const char *(*build_info)(void);

  /* ---- devices (no context) ---- */
  /* No driver / no device -> BACKEND_UNAVAILABLE with a message saying which.
   * *count is 0 on failure. */
  kbcuda_status (*device_count)(int32_t *count, char *msg, size_t cap);
  kbcuda_status (*device_info)(int32_t device, struct kbcuda_device_info *info, char *msg, size_t cap);
  kbcuda_status (*device_memory)(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes, char *msg, size_t cap);
  /* Driver and runtime versions as 1000 * major + 10 * minor (0 when unknown). */
  kbcuda_status (*versions)(int32_t *driver, int32_t *runtime, char *msg, size_t cap);

  /* ---- contexts ---- */
  /* Creates a non-blocking stream on `device`; fails with BACKEND_UNAVAILABLE
   * when the device's compute capability is below 8.0 (no code for it). */
  kbcuda_status (*ctx_create)(int32_t device, kbcuda_ctx **out, char *msg, size_t cap);
  /* Synchronises, then frees the stream, handle and workspace.  NULL is fine. */
  void (*ctx_destroy)(kbcuda_ctx *ctx);
  kbcuda_status (*ctx_synchronize)(kbcuda_ctx *ctx);
  void *(*ctx_stream)(const kbcuda_ctx *ctx); /* the cudaStream_t */
  int32_t (*ctx_device)(const kbcuda_ctx *ctx);
  const char *(*ctx_message)(const kbcuda_ctx *ctx); /* valid until the next call on ctx */
  int32_t (*ctx_lost)(const kbcuda_ctx *ctx);
  kbcuda_status (*ctx_set_gemm_impl)(kbcuda_ctx *ctx, int32_t impl);
  /* Which implementation the last successful gemm used (KBCUDA_GEMM_CUBLASLT
   * or KBCUDA_GEMM_TILED; AUTO before the first gemm). */
  int32_t (*ctx_last_gemm_impl)(const kbcuda_ctx *ctx);

  /* ---- memory (device = the ctx's device) ---- */
  kbcuda_status (*dev_malloc)(kbcuda_ctx *ctx, size_t bytes, void **out); /* *out = NULL for 0 bytes */
  kbcuda_status (*dev_free)(kbcuda_ctx *ctx, void *ptr);                  /* NULL is fine; synchronises */
  kbcuda_status (*memcpy_h2d)(kbcuda_ctx *ctx, void *dst, const void *src, size_t bytes);
  kbcuda_status (*memcpy_d2h)(kbcuda_ctx *ctx, void *dst, const void *src, size_t bytes); /* synchronises */
  kbcuda_status (*memcpy_d2d)(kbcuda_ctx *ctx, void *dst, const void *src, size_t bytes);
  kbcuda_status (*dev_memset)(kbcuda_ctx *ctx, void *dst, int32_t byte, size_t bytes);
  /* Kind of memory ptr points to (cudaPointerGetAttributes); *device is the
   * owning device or -1.  Needs no context: works before any ctx exists. */
  kbcuda_status (*pointer_kind)(const void *ptr, kbcuda_ptr_kind *kind, int32_t *device, char *msg, size_t cap);

  /* ---- content validation (device data; synchronises) ----
   * First i in [0, n) with values[i] != ignore (when has_ignore) and values[i]
   * outside [lo, hi); *first_bad = -1 when none, else its index and value. */
  kbcuda_status (*validate_index)(kbcuda_ctx *ctx, const char *fn, int64_t n, const int32_t *values, int64_t lo,
                                  int64_t hi, int32_t has_ignore, int32_t ignore, int64_t *first_bad,
                                  int32_t *bad_value);
  /* First row holding NaN (reason NAN), +inf (POS_INF) or only -inf
   * (ALL_NEG_INF), as the CPU scans: within a row NaN/+inf at the lowest
   * column wins.  *first_bad_row = -1 when every row is fine. */
  kbcuda_status (*validate_logits)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                   int64_t *first_bad_row, int32_t *reason);

  /* ---- float32 kernels: the public kernels' semantics, minus validation.
   * `fn` is the public name used in messages ("kb_silu"). ---- */
  kbcuda_status (*silu)(kbcuda_ctx *ctx, const char *fn, int64_t n, const float *x, float *y);
  kbcuda_status (*gelu)(kbcuda_ctx *ctx, const char *fn, int64_t n, const float *x, float *y);
  kbcuda_status (*gelu_tanh)(kbcuda_ctx *ctx, const char *fn, int64_t n, const float *x, float *y);
  kbcuda_status (*add)(kbcuda_ctx *ctx, const char *fn, int64_t n, const float *a, const float *b, float *y);
  kbcuda_status (*mul)(kbcuda_ctx *ctx, const char *fn, int64_t n, const float *a, const float *b, float *y);
  kbcuda_status (*scale)(kbcuda_ctx *ctx, const char *fn, int64_t n, float alpha, const float *x, float *y);
  kbcuda_status (*add_bias)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x,
                            const float *bias, float *y);
  kbcuda_status (*softmax)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x, float *y);
  kbcuda_status (*log_softmax)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x, float *y);
  kbcuda_status (*rmsnorm)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x,
                           const float *weight, float eps, float *y);
  kbcuda_status (*layernorm)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x,
                             const float *weight, const float *bias, float eps, float *y);
  kbcuda_status (*gemm)(kbcuda_ctx *ctx, const char *fn, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        float *c, int64_t ldc);
  kbcuda_status (*embedding)(kbcuda_ctx *ctx, const char *fn, int64_t n_ids, int64_t vocab, int64_t dim,
                             const int32_t *ids, const float *table, float *out);
  kbcuda_status (*rope)(kbcuda_ctx *ctx, const char *fn, int64_t seq, int64_t heads, int64_t head_dim,
                        const float *x, const int32_t *positions, float theta, float *y);
  kbcuda_status (*attention)(kbcuda_ctx *ctx, const char *fn, int64_t batch, int64_t heads, int64_t kv_heads,
                             int64_t seq_q, int64_t seq_kv, int64_t head_dim, const float *q, const float *k,
                             const float *v, int32_t causal, float scale, float *out);
  kbcuda_status (*cross_entropy)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t classes, const float *logits,
                                 const int32_t *targets, int32_t ignore_index, float *losses, float *mean_loss);
  kbcuda_status (*cross_entropy_backward)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t classes,
                                          const float *logits, const int32_t *targets, int32_t ignore_index,
                                          float dloss, float *dlogits);
  kbcuda_status (*adamw_step)(kbcuda_ctx *ctx, const char *fn, int64_t n, float *params, const float *grads, float *m,
                              float *v, float lr, float beta1, float beta2, float eps, float weight_decay,
                              int64_t step);
  kbcuda_status (*argmax)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *x, int32_t *out);
  kbcuda_status (*sample)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *logits,
                          float temperature, uint64_t seed, int32_t *out);
  kbcuda_status (*topk_sample)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *logits,
                               int64_t k, float temperature, uint64_t seed, int32_t *out);
  kbcuda_status (*topp_sample)(kbcuda_ctx *ctx, const char *fn, int64_t rows, int64_t cols, const float *logits,
                               float p, float temperature, uint64_t seed, int32_t *out);

  /* ---- dtype variants (KBCUDA_F32, KBCUDA_BF16, KBCUDA_F16): every tensor
   * argument has the given dtype (norm weights and biases too); arithmetic
   * is float32 with one rounding to the dtype at the end (see docs/cuda.md).
   * With KBCUDA_F32 they compute exactly what the entries above compute. ---- */
  kbcuda_status (*unary_dt)(kbcuda_ctx *ctx, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *x,
                            void *y);
  kbcuda_status (*binary_dt)(kbcuda_ctx *ctx, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *a,
                             const void *b, void *y);
  kbcuda_status (*scale_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int64_t n, float alpha, const void *x,
                            void *y);
  kbcuda_status (*add_bias_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                               const void *x, const void *bias, void *y);
  kbcuda_status (*softmax_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int32_t log, int64_t rows,
                              int64_t cols, const void *x, void *y);
  kbcuda_status (*rmsnorm_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                              const void *x, const void *weight, float eps, void *y);
  kbcuda_status (*layernorm_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                const void *x, const void *weight, const void *bias, float eps, void *y);
  /* A, B and C in dt; alpha, beta and accumulation in float32. */
  kbcuda_status (*gemm_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int32_t trans_a, int32_t trans_b,
                           int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                           int64_t ldb, float beta, void *c, int64_t ldc);
  kbcuda_status (*attention_dt)(kbcuda_ctx *ctx, const char *fn, kbcuda_dtype dt, int64_t batch, int64_t heads,
                                int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const void *q,
                                const void *k, const void *v, int32_t causal, float scale, void *out);

  /* ---- appended after ABI version 1's first table (test each with
   * KBCUDA_TABLE_HAS before use) ---- */

  /* Frees device memory of `device` without a ctx: kb_buffer outlives the
   * kb_context that allocated it.  Waits for the device (cudaFree) and leaves
   * the calling thread's current device as it was.  NULL is fine. */
  kbcuda_status (*dev_free_on_device)(int32_t device, void *ptr, char *msg, size_t cap);
};

/* Size of ABI version 1's first table (everything up to attention_dt): the
 * smallest table the loader accepts. */
#define KBCUDA_TABLE_V1_SIZE offsetof(struct kbcuda_table, dev_free_on_device)

/* True when `table` (a library's, possibly older than this header) has the
 * appended entry `field`. */
#define KBCUDA_TABLE_HAS(table, field) \
  (offsetof(struct kbcuda_table, field) + sizeof((table)->field) <= (size_t)(table)->struct_size)

/* The library's only exported symbol.  NULL when abi_version is not
 * KBCUDA_ABI_VERSION. */
typedef const struct kbcuda_table *(*kbcuda_get_table_fn)(uint32_t abi_version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KBCUDA_API_H */
