/* vendored by tools/vendor_c.py from core/include/kernelbridge.h; do not edit */
/*
 * kernelbridge.h - the public C API of kernelbridge.
 *
 * This header is the single source of truth for every language binding: the
 * binding generator (tools/kbgen) reads the declarations below together with
 * the machine-readable annotations in their doc comments.  The annotation
 * grammar is described in docs/annotations.md; kernel semantics in
 * docs/kernels.md.
 *
 * Conventions
 * - Every fallible function returns kb_status; KB_STATUS_OK is 0.
 * - Tensors are dense, row-major float32 (f32) or int32 (i32) arrays.
 * - Sizes are int64_t so that negative values can be detected and reported.
 * - On error nothing the caller owns is modified: every argument is validated
 *   before the first output element is written.
 * - The library never prints, never aborts and keeps no mutable global state.
 *
 * Contexts and errors
 * A kb_context selects the backend and holds per-caller settings (CPU thread
 * count).  A context may be used by any number of threads at once (like an
 * sqlite3 connection in serialized mode): calls on a CPU context run side by
 * side, one of them at a time on the context's worker threads and the others
 * on their calling thread alone, which gives the same bits; calls on a CUDA
 * context take turns on its stream.  kb_context_destroy waits for the calls
 * inside the context to return; a call that starts on it afterwards fails
 * with KB_STATUS_INVALID_ARGUMENT saying the context was destroyed (the
 * memory of a context is kept for reuse, so such a call never reads freed
 * memory; once kb_context_create reuses it, the old handle names the new
 * context).  The message describing a failed call on a context is kept per
 * thread: kb_context_last_error(ctx) on the thread that made the call, right
 * after it (a binding that moves between OS threads, such as a Go goroutine,
 * reads it inside the same foreign call).
 * Every kernel also accepts a NULL context, meaning: CPU backend, one thread,
 * and no message is recorded (the status code is still returned).
 * Functions that take no context (kb_context_create, kb_cuda_*) record their
 * message per thread instead: read it with kb_last_error() on the same thread.
 *
 * CUDA
 * The CUDA kernels live in a separate library, libkernelbridge_cuda.so, that
 * is loaded with dlopen the first time CUDA is asked for (search order: the
 * full path in $KB_CUDA_LIBRARY, the directory of this library, the system
 * search path); this library never links against CUDA.  On a CUDA context
 * every tensor argument must be device memory of the context's device (a
 * kb_buffer, cudaMalloc or managed memory); a host pointer is reported as
 * KB_STATUS_INVALID_ARGUMENT naming the argument, as is device memory passed
 * to a CPU context once the CUDA backend is loaded.  Kernels validate their
 * arguments exactly as on the CPU, then run on the context's stream and wait
 * for it, so a kernel's outputs are ready when it returns.  Results agree
 * with the CPU kernels within the tolerances of docs/cuda.md (the sampling
 * kernels return the same token ids).
 * Apart from the once-per-process loading of the CUDA backend, the
 * per-thread messages, the registry of threads inside calls and the free list
 * of destroyed contexts, the library keeps no global state.
 */
#ifndef KERNELBRIDGE_H
#define KERNELBRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(KB_STATIC_DEFINE)
#define KB_API
#elif defined(_WIN32)
#define KB_API __declspec(dllexport)
#elif defined(__GNUC__) && __GNUC__ >= 4
#define KB_API __attribute__((visibility("default")))
#else
#define KB_API
#endif

#define KB_VERSION_MAJOR 0
#define KB_VERSION_MINOR 2
#define KB_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, as in zstd. */
#define KB_VERSION_NUMBER (KB_VERSION_MAJOR * 10000 + KB_VERSION_MINOR * 100 + KB_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Result of every fallible call.  Values are fixed and append-only: a value,
 * once released, keeps its meaning forever.
 */
typedef enum kb_status {
  /** Success. */
  KB_STATUS_OK = 0,
  /** An argument is invalid: NULL where not allowed, negative size, bad scalar. */
  KB_STATUS_INVALID_ARGUMENT = 1,
  /** Sizes are individually valid but inconsistent with each other. */
  KB_STATUS_SHAPE_MISMATCH = 2,
  /** The operation is not supported by this backend or build. */
  KB_STATUS_UNSUPPORTED = 3,
  /** Memory could not be allocated, or a size product overflows. */
  KB_STATUS_OUT_OF_MEMORY = 4,
  /** The requested backend (driver, library or device) is not available. */
  KB_STATUS_BACKEND_UNAVAILABLE = 5,
  /** The device reported an error. */
  KB_STATUS_DEVICE_ERROR = 6,
  /** An internal invariant failed; please report it. */
  KB_STATUS_INTERNAL = 7,
  /**
   * The device failed in a way that leaves it unusable (illegal address,
   * launch failure, ECC error, ...).  The context latches this status: every
   * later call on it fails fast with KB_STATUS_DEVICE_LOST.  Destroy the
   * context; the process's CUDA state is usually unusable too.
   */
  KB_STATUS_DEVICE_LOST = 8
} kb_status;

/** Compute backend of a context.  Values are fixed and append-only. */
typedef enum kb_backend {
  /** The portable CPU kernels. */
  KB_BACKEND_CPU = 0,
  /** The CUDA kernels (loaded at run time; see docs). */
  KB_BACKEND_CUDA = 1,
  /** CUDA when available, otherwise CPU. */
  KB_BACKEND_AUTO = 2
} kb_backend;

/** Opaque per-caller state: backend, thread count, worker threads; shared
 * by threads freely (see "Contexts and errors"). */
typedef struct kb_context kb_context;

/**
 * Opaque block of memory usable by kernels: device memory on a CUDA context's
 * device, 64-byte aligned host memory for a CPU context.  A buffer does not
 * depend on the context that created it and may outlive it.
 */
typedef struct kb_buffer kb_buffer;

/**
 * Version of the linked library as KB_VERSION_NUMBER; compare with the macro
 * to detect a header/library mismatch.
 * @threadsafe yes
 * @blocking no
 */
KB_API uint32_t kb_version_number(void);

/**
 * Version of the linked library as "MAJOR.MINOR.PATCH".
 * @returns string static
 * @threadsafe yes
 * @blocking no
 */
KB_API const char *kb_version_string(void);

/**
 * Upper-case name of a status code ("OK", "INVALID_ARGUMENT", ...); "UNKNOWN"
 * for a value this version does not know.
 * @arg status scalar
 * @returns string static
 * @threadsafe yes
 * @blocking no
 */
KB_API const char *kb_status_string(kb_status status);

/**
 * Creates a context.  num_threads is the number of CPU threads kernels may
 * use (0 means one per online CPU).  Results do not depend on num_threads.
 * A CPU context with num_threads > 1 keeps num_threads - 1 worker threads,
 * started by the first call that splits its work and joined by
 * kb_context_destroy; a context with one thread never starts a thread.  The
 * workers survive fork(): a child process may use a context made before the
 * fork (new workers start there).  Fails when KB_CPU_ISA is set to a level
 * this CPU cannot run (see kb_cpu_isa).
 * KB_BACKEND_CUDA fails with KB_STATUS_BACKEND_UNAVAILABLE when CUDA cannot
 * be used; KB_BACKEND_AUTO then falls back to the CPU.
 * @arg backend scalar
 * @arg num_threads dim
 * @arg out out handle kb_context
 * @destroy kb_context_destroy
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_context_create(kb_backend backend, int64_t num_threads, kb_context **out);

/**
 * Destroys a context.  Accepts NULL.  Waits for the calls other threads are
 * making on it to return; calls that start on it later fail with
 * KB_STATUS_INVALID_ARGUMENT.  A second destroy of the same handle does
 * nothing (until kb_context_create reuses the context).
 * @arg ctx handle nullable
 * @threadsafe yes
 * @blocking no
 */
KB_API void kb_context_destroy(kb_context *ctx);

/**
 * Backend the context runs on (never KB_BACKEND_AUTO); KB_BACKEND_CPU for NULL.
 * @arg ctx handle nullable
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_backend kb_context_backend(const kb_context *ctx);

/**
 * Number of CPU threads the context uses; 1 for NULL.
 * @arg ctx handle nullable
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_context_num_threads(const kb_context *ctx);

/**
 * Message describing the calling thread's last failed call on this context,
 * such as "kb_softmax: cols must be >= 0, got -3"; "" when its last call on
 * the context succeeded, and for NULL.  Per thread, so threads sharing a
 * context never see each other's messages; a thread keeps the messages of
 * the 4 contexts it most recently failed on.  Valid until the thread's next
 * call on the context.
 * @arg ctx handle nullable
 * @returns string borrowed
 * @threadsafe yes
 * @blocking no
 */
KB_API const char *kb_context_last_error(const kb_context *ctx);

/**
 * Message describing the last failed call without a context (kb_context_create,
 * kb_context_create_cuda, kb_cuda_*) made by the calling thread, such as
 * "kb_context_create_cuda: no NVIDIA driver: libcuda.so.1 cannot be loaded";
 * "" when that call succeeded.  Valid until the thread's next such call.
 * @returns string borrowed
 * @threadsafe yes
 * @blocking no
 */
KB_API const char *kb_last_error(void);

/**
 * Instruction-set level of the CPU kernels in this process: "scalar",
 * "avx2" (AVX2 + FMA + F16C) or "avx512" (the avx2 level plus AVX-512F).  The
 * best level the CPU and operating system support is chosen on first use;
 * the environment variable KB_CPU_ISA (scalar, avx2 or avx512) forces a
 * lower one, and kb_context_create fails when it names a level that does not
 * exist (KB_STATUS_INVALID_ARGUMENT) or that this CPU cannot run
 * (KB_STATUS_UNSUPPORTED); kernels given a NULL context then use the best
 * level.  Every level computes bit-identical results (docs/kernels.md).
 * @returns string static
 * @threadsafe yes
 * @blocking no
 */
KB_API const char *kb_cpu_isa(void);

/* ------------------------------------------------------------------------ */
/* CUDA devices and contexts.  Without a usable CUDA backend (library, NVIDIA
 * driver or device missing) these fail with KB_STATUS_BACKEND_UNAVAILABLE and
 * kb_last_error() says which part is missing. */

/**
 * Number of CUDA devices kernelbridge can use (compute capability 8.0 or
 * newer is needed to run kernels on one).
 * @arg count out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_cuda_device_count(int64_t *count);

/**
 * Name of CUDA device `device` (such as "NVIDIA H100 80GB HBM3"), written as
 * a NUL-terminated string into name; truncated to name_capacity - 1 bytes.
 * device must be in [0, count).
 * @arg device scalar
 * @arg name out string(name_capacity)
 * @arg name_capacity dim
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_cuda_device_name(int64_t device, char *name, int64_t name_capacity);

/**
 * Compute capability of CUDA device `device` as 10 * major + minor (80 for
 * sm_80, 90 for sm_90).
 * @arg device scalar
 * @arg capability out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_cuda_device_compute_capability(int64_t device, int64_t *capability);

/**
 * Total memory of CUDA device `device` in bytes.
 * @arg device scalar
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_cuda_device_total_memory(int64_t device, int64_t *bytes);

/**
 * Memory of CUDA device `device` that is free now, in bytes.
 * @arg device scalar
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_cuda_device_free_memory(int64_t device, int64_t *bytes);

/**
 * Creates a context on CUDA device `device` with its own stream.  Fails with
 * KB_STATUS_BACKEND_UNAVAILABLE (see kb_last_error) when CUDA cannot be used
 * and with KB_STATUS_INVALID_ARGUMENT when device is not in [0, count).
 * kb_context_create(KB_BACKEND_CUDA, ...) is this with device 0.
 * @arg device scalar
 * @arg out out handle kb_context
 * @destroy kb_context_destroy
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_context_create_cuda(int64_t device, kb_context **out);

/**
 * CUDA device of the context; -1 for a CPU context and for NULL.
 * @arg ctx handle nullable
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_context_device(const kb_context *ctx);

/**
 * Waits for all work queued on the context's stream and reports a device
 * error it raised.  Kernels already wait before returning; this is for work
 * queued on the stream by other code.  Does nothing on a CPU context.
 * @arg ctx context
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_context_synchronize(kb_context *ctx);

/* ------------------------------------------------------------------------ */
/* Buffers.  Offsets and sizes are in bytes; a range must lie inside the
 * buffer.  Operations on a device buffer need a CUDA context on the buffer's
 * device; a host buffer works with any context.  Threads may use one buffer
 * at once; as with memcpy, what they write to the same bytes at the same
 * time is unspecified. */

/**
 * Allocates a buffer of `bytes` bytes (contents undefined) for use with
 * contexts like ctx: device memory on a CUDA context's device, host memory for
 * a CPU context or NULL.  0 bytes is allowed.
 * @arg ctx context
 * @arg bytes dim
 * @arg out out handle kb_buffer
 * @destroy kb_buffer_destroy
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_buffer_create(kb_context *ctx, int64_t bytes, kb_buffer **out);

/**
 * Frees a buffer.  Accepts NULL.  No call may be using it (the library
 * cannot know which calls read a buffer's memory: the caller, or its
 * binding, makes sure).
 * @arg buf handle nullable
 * @threadsafe no
 * @blocking yes
 */
KB_API void kb_buffer_destroy(kb_buffer *buf);

/**
 * Size of the buffer in bytes.
 * @arg buf handle
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_buffer_size(const kb_buffer *buf);

/**
 * CUDA device holding the buffer; -1 for a host buffer.
 * @arg buf handle
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_buffer_device(const kb_buffer *buf);

/**
 * Address of the buffer's first byte, to pass as a tensor argument (offset
 * by whole elements) to kernels on a context of the buffer's kind.  NULL for
 * a 0-byte buffer.  Valid until kb_buffer_destroy.
 * @arg buf handle
 * @returns address
 * @threadsafe yes
 * @blocking no
 */
KB_API void *kb_buffer_data(kb_buffer *buf);

/**
 * Copies `bytes` bytes from host memory src into the buffer at offset.
 * @arg ctx context
 * @arg buf handle
 * @arg offset dim
 * @arg bytes dim
 * @arg src in u8[bytes]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_buffer_upload(kb_context *ctx, kb_buffer *buf, int64_t offset, int64_t bytes, const void *src);

/**
 * Copies `bytes` bytes of the buffer, starting at offset, into host memory dst.
 * @arg ctx context
 * @arg buf handle
 * @arg offset dim
 * @arg bytes dim
 * @arg dst out u8[bytes]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_buffer_download(kb_context *ctx, const kb_buffer *buf, int64_t offset, int64_t bytes, void *dst);

/**
 * Sets `bytes` bytes of the buffer, starting at offset, to the byte value
 * (0..255), as memset.
 * @arg ctx context
 * @arg buf handle
 * @arg offset dim
 * @arg bytes dim
 * @arg value scalar
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_buffer_fill(kb_context *ctx, kb_buffer *buf, int64_t offset, int64_t bytes, int32_t value);

/**
 * Copies `bytes` bytes from src at src_offset to dst at dst_offset.  Both
 * buffers must be of the same kind (host, or the same device); the ranges
 * must not overlap unless they are identical.
 * @arg ctx context
 * @arg dst handle
 * @arg dst_offset dim
 * @arg src handle
 * @arg src_offset dim
 * @arg bytes dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_buffer_copy(kb_context *ctx, kb_buffer *dst, int64_t dst_offset, const kb_buffer *src,
                                int64_t src_offset, int64_t bytes);

/* ------------------------------------------------------------------------ */
/* Elementwise kernels.  n may be 0, in which case the pointers may be NULL. */

/**
 * SiLU: y[i] = x[i] * sigmoid(x[i]) = x[i] / (1 + exp(-x[i])).
 * @arg ctx context
 * @arg n dim
 * @arg x in f32[n]
 * @arg y out f32[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_silu(kb_context *ctx, int64_t n, const float *x, float *y);

/**
 * GELU, exact form: y[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2))).
 * @arg ctx context
 * @arg n dim
 * @arg x in f32[n]
 * @arg y out f32[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu(kb_context *ctx, int64_t n, const float *x, float *y);

/**
 * GELU, tanh approximation (PyTorch approximate='tanh'):
 * y[i] = 0.5 * x[i] * (1 + tanh(sqrt(2/pi) * (x[i] + 0.044715 * x[i]^3))).
 * @arg ctx context
 * @arg n dim
 * @arg x in f32[n]
 * @arg y out f32[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu_tanh(kb_context *ctx, int64_t n, const float *x, float *y);

/**
 * Elementwise sum: y[i] = a[i] + b[i].
 * @arg ctx context
 * @arg n dim
 * @arg a in f32[n]
 * @arg b in f32[n]
 * @arg y out f32[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add(kb_context *ctx, int64_t n, const float *a, const float *b, float *y);

/**
 * Elementwise product: y[i] = a[i] * b[i].
 * @arg ctx context
 * @arg n dim
 * @arg a in f32[n]
 * @arg b in f32[n]
 * @arg y out f32[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_mul(kb_context *ctx, int64_t n, const float *a, const float *b, float *y);

/**
 * Scaling: y[i] = alpha * x[i].  alpha must be finite.
 * @arg ctx context
 * @arg n dim
 * @arg alpha scalar
 * @arg x in f32[n]
 * @arg y out f32[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_scale(kb_context *ctx, int64_t n, float alpha, const float *x, float *y);

/**
 * Row-broadcast bias: y[r, c] = x[r, c] + bias[c].
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg bias in f32[cols]
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_bias(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *bias, float *y);

/* ------------------------------------------------------------------------ */
/* Row-wise kernels over a [rows, cols] matrix.  rows may be 0; cols must be
 * > 0 when rows > 0. */

/**
 * Softmax of each row: y[r, c] = exp(x[r, c] - m) / sum_j exp(x[r, j] - m)
 * with m the row maximum (stable for inputs of magnitude 1e4).  A row holding
 * NaN gives NaN in the whole row; a row of -inf gives NaN (as PyTorch).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y);

/**
 * Log-softmax of each row: y[r, c] = x[r, c] - m - log(sum_j exp(x[r, j] - m))
 * with m the row maximum.  NaN propagates to the row as in kb_softmax.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_log_softmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *y);

/**
 * RMSNorm of each row: y[r, c] = x[r, c] / sqrt(mean_j(x[r, j]^2) + eps) * weight[c].
 * eps must be finite and >= 0.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg weight in f32[cols]
 * @arg eps scalar
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rmsnorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight, float eps,
                            float *y);

/**
 * LayerNorm of each row with biased variance:
 * y[r, c] = (x[r, c] - mean) / sqrt(var + eps) * weight[c] + bias[c].
 * weight and bias may be NULL, meaning 1 and 0 (PyTorch elementwise_affine=False).
 * eps must be finite and >= 0.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg weight in f32[cols] nullable
 * @arg bias in f32[cols] nullable
 * @arg eps scalar default(1e-05)
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_layernorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, const float *weight,
                              const float *bias, float eps, float *y);

/* ------------------------------------------------------------------------ */
/* Matrix multiplication. */

/**
 * General matrix multiply, row-major: C = alpha * op(A) * op(B) + beta * C,
 * where op(A) is [m, k] and op(B) is [k, n].  op(A) = A^T when trans_a (A is
 * then stored [k, m]); likewise for B.  lda, ldb and ldc are row strides in
 * elements and must be at least the stored row length (at least 1).  When
 * beta == 0, C is not read (it may hold NaN).  Every element is a float32
 * chain of fused multiply-adds in order of increasing p (one rounding per
 * step), then alpha * acc (+ beta * C), independent of the thread count and
 * of the CPU's instruction set.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in f32[trans_a ? k : m, trans_a ? m : k] ld(lda)
 * @arg lda dim
 * @arg b in f32[trans_b ? n : k, trans_b ? k : n] ld(ldb)
 * @arg ldb dim
 * @arg beta scalar default(0)
 * @arg c inout f32[m, n] ld(ldc)
 * @arg ldc dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* ------------------------------------------------------------------------ */
/* Transformer building blocks. */

/**
 * Embedding lookup: out[i, :] = table[ids[i], :].  Every id must lie in
 * [0, vocab); the ids are all checked before anything is written.
 * @arg ctx context
 * @arg n_ids dim
 * @arg vocab dim
 * @arg dim dim
 * @arg ids in i32[n_ids]
 * @arg table in f32[vocab, dim]
 * @arg out out f32[n_ids, dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_embedding(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                              const float *table, float *out);

/**
 * Rotary position embedding, half-rotation (Llama / GPT-NeoX) convention, on
 * x of shape [seq, heads, head_dim] with head_dim even.  With h = head_dim / 2,
 * for i < h: angle = positions[s] * theta^(-2i / head_dim),
 *   y[.., i]     = x[.., i] * cos(angle) - x[.., i + h] * sin(angle)
 *   y[.., i + h] = x[.., i + h] * cos(angle) + x[.., i] * sin(angle).
 * Angles are computed in double precision.  positions must be >= 0 and theta
 * finite and > 0.
 * @arg ctx context
 * @arg seq dim
 * @arg heads dim
 * @arg head_dim dim
 * @arg x in f32[seq, heads, head_dim]
 * @arg positions in i32[seq]
 * @arg theta scalar default(10000)
 * @arg y out f32[seq, heads, head_dim] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rope(kb_context *ctx, int64_t seq, int64_t heads, int64_t head_dim, const float *x,
                         const int32_t *positions, float theta, float *y);

/**
 * Scaled dot-product attention:
 * out = softmax(q k^T * scale + mask) v per (batch, head), where query head h
 * reads key/value head h / (heads / kv_heads) (grouped-query attention;
 * kv_heads must divide heads).  scale == 0 means 1 / sqrt(head_dim).  With
 * causal, query i attends keys j <= i (top-left aligned, as PyTorch's
 * is_causal).  Computed in float32 with an online softmax over blocks of 128
 * keys (docs/kernels.md); scores are never materialised as a
 * [seq_q, seq_kv] matrix; results do not depend on the thread count or the
 * CPU's instruction set.
 * scale must be finite and >= 0; seq_kv must be > 0 when there are queries.
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg q in f32[batch, heads, seq_q, head_dim]
 * @arg k in f32[batch, kv_heads, seq_kv, head_dim]
 * @arg v in f32[batch, kv_heads, seq_kv, head_dim]
 * @arg causal flag
 * @arg scale scalar default(0)
 * @arg out out f32[batch, heads, seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                              int64_t seq_kv, int64_t head_dim, const float *q, const float *k, const float *v,
                              bool causal, float scale, float *out);

/* ------------------------------------------------------------------------ */
/* Training. */

/**
 * Cross-entropy forward: losses[r] = logsumexp(logits[r, :]) - logits[r, targets[r]],
 * or 0 where targets[r] == ignore_index; mean_loss[0] is the mean over the rows
 * that are not ignored (NaN when every row is ignored, as PyTorch).  Every
 * target other than ignore_index must lie in [0, classes); classes must be
 * > 0 when rows > 0.
 * @arg ctx context
 * @arg rows dim
 * @arg classes dim
 * @arg logits in f32[rows, classes]
 * @arg targets in i32[rows]
 * @arg ignore_index scalar default(-100)
 * @arg losses out f32[rows]
 * @arg mean_loss out f32[1]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_cross_entropy(kb_context *ctx, int64_t rows, int64_t classes, const float *logits,
                                  const int32_t *targets, int32_t ignore_index, float *losses, float *mean_loss);

/**
 * Cross-entropy backward: gradient of dloss * mean_loss (see kb_cross_entropy)
 * with respect to the logits: dlogits[r, c] = dloss * (softmax(logits[r])[c]
 * - (c == targets[r])) / count for rows not ignored, 0 for ignored rows,
 * where count is the number of rows not ignored.  dloss must be finite.
 * @arg ctx context
 * @arg rows dim
 * @arg classes dim
 * @arg logits in f32[rows, classes]
 * @arg targets in i32[rows]
 * @arg ignore_index scalar default(-100)
 * @arg dloss scalar default(1)
 * @arg dlogits out f32[rows, classes] alias(logits)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_cross_entropy_backward(kb_context *ctx, int64_t rows, int64_t classes, const float *logits,
                                           const int32_t *targets, int32_t ignore_index, float dloss, float *dlogits);

/**
 * One AdamW step, exactly as PyTorch's torch.optim.AdamW (single-tensor path):
 *   params *= 1 - lr * weight_decay
 *   m = beta1 * m + (1 - beta1) * grads
 *   v = beta2 * v + (1 - beta2) * grads^2
 *   params -= (lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
 * lr, eps and weight_decay must be finite and >= 0; beta1 and beta2 in [0, 1);
 * step >= 1.
 * @arg ctx context
 * @arg n dim
 * @arg params inout f32[n]
 * @arg grads in f32[n]
 * @arg m inout f32[n]
 * @arg v inout f32[n]
 * @arg lr scalar default(0.001)
 * @arg beta1 scalar default(0.9)
 * @arg beta2 scalar default(0.999)
 * @arg eps scalar default(1e-08)
 * @arg weight_decay scalar default(0.01)
 * @arg step scalar
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_adamw_step(kb_context *ctx, int64_t n, float *params, const float *grads, float *m, float *v,
                               float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step);

/* ------------------------------------------------------------------------ */
/* Decoding.  The sampling kernels draw one uniform number per row from
 * Philox4x32-10 keyed by seed (key = {low 32 bits, high 32 bits}) with counter
 * {row low 32 bits, row high 32 bits, 0, 0}: u = (first output word >> 8) * 2^-24.
 * Weights exp((logits - max) / temperature) are computed in double precision;
 * the token is the first index (in the kernel's candidate order) at which the
 * running sum of weights exceeds u * total.  See docs/kernels.md. */

/**
 * Index of the largest element of each row; the first one on ties.  NaN counts
 * as larger than every number (as torch.argmax).  cols must be > 0 when
 * rows > 0 and fit in int32.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_argmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, int32_t *out);

/**
 * Multinomial sampling from softmax(logits / temperature) per row, candidates
 * in index order.  temperature must be finite and > 0; logits must not hold
 * NaN or +inf, and no row may be all -inf (-inf alone means "never sample").
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f32[rows, cols]
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, float temperature,
                           uint64_t seed, int32_t *out);

/**
 * Top-k sampling: the k largest logits of each row (ties broken by lower
 * index), ordered by decreasing logit, sampled from their softmax at
 * temperature.  k must be in [1, cols] (only k >= 1 when rows == 0);
 * temperature finite and > 0; logits as for kb_sample.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f32[rows, cols]
 * @arg k dim
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topk_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, int64_t k,
                                float temperature, uint64_t seed, int32_t *out);

/**
 * Top-p (nucleus) sampling: candidates ordered by decreasing logit (ties by
 * lower index); the nucleus is the shortest prefix whose probability mass
 * (softmax at temperature, double precision) reaches p; one token is sampled
 * from the nucleus.  p must be in (0, 1]; temperature finite and > 0; logits
 * as for kb_sample.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f32[rows, cols]
 * @arg p scalar
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topp_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, float p,
                                float temperature, uint64_t seed, int32_t *out);

/* ------------------------------------------------------------------------ */
/* Reduced precision.  kb_<op>_bf16 and kb_<op>_f16 are kb_<op> with every
 * tensor (weights and biases included) stored as bfloat16 or IEEE binary16 in
 * uint16_t; scalars stay float.  On the CPU the result is exactly kb_<op> on
 * the inputs widened to float32, rounded once to the dtype (nearest, ties to
 * even; NaN stays NaN); the elementwise and row-wise variants convert in
 * registers, gemm and attention need float32 scratch memory for the widened
 * tensors (KB_STATUS_OUT_OF_MEMORY when it cannot be had, before anything is
 * written).  The CUDA kernels compute in float32 and round once at the end
 * (tolerances in docs/cuda.md). */

/**
 * bfloat16 variant of kb_silu.
 * @arg ctx context
 * @arg n dim
 * @arg x in bf16[n]
 * @arg y out bf16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_silu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_silu.
 * @arg ctx context
 * @arg n dim
 * @arg x in f16[n]
 * @arg y out f16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_silu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_gelu.
 * @arg ctx context
 * @arg n dim
 * @arg x in bf16[n]
 * @arg y out bf16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_gelu.
 * @arg ctx context
 * @arg n dim
 * @arg x in f16[n]
 * @arg y out f16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_gelu_tanh.
 * @arg ctx context
 * @arg n dim
 * @arg x in bf16[n]
 * @arg y out bf16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu_tanh_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_gelu_tanh.
 * @arg ctx context
 * @arg n dim
 * @arg x in f16[n]
 * @arg y out f16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gelu_tanh_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_add.
 * @arg ctx context
 * @arg n dim
 * @arg a in bf16[n]
 * @arg b in bf16[n]
 * @arg y out bf16[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_bf16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_add.
 * @arg ctx context
 * @arg n dim
 * @arg a in f16[n]
 * @arg b in f16[n]
 * @arg y out f16[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_f16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y);

/**
 * bfloat16 variant of kb_mul.
 * @arg ctx context
 * @arg n dim
 * @arg a in bf16[n]
 * @arg b in bf16[n]
 * @arg y out bf16[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_mul_bf16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_mul.
 * @arg ctx context
 * @arg n dim
 * @arg a in f16[n]
 * @arg b in f16[n]
 * @arg y out f16[n] alias(a, b)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_mul_f16(kb_context *ctx, int64_t n, const uint16_t *a, const uint16_t *b, uint16_t *y);

/**
 * bfloat16 variant of kb_scale.
 * @arg ctx context
 * @arg n dim
 * @arg alpha scalar
 * @arg x in bf16[n]
 * @arg y out bf16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_scale_bf16(kb_context *ctx, int64_t n, float alpha, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_scale.
 * @arg ctx context
 * @arg n dim
 * @arg alpha scalar
 * @arg x in f16[n]
 * @arg y out f16[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_scale_f16(kb_context *ctx, int64_t n, float alpha, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_add_bias.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg bias in bf16[cols]
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_bias_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *bias,
                                  uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_add_bias.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg bias in f16[cols]
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_bias_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *bias,
                                 uint16_t *y);

/**
 * bfloat16 variant of kb_softmax.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_softmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_softmax.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_softmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_log_softmax.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_log_softmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_log_softmax.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_log_softmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, uint16_t *y);

/**
 * bfloat16 variant of kb_rmsnorm.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg weight in bf16[cols]
 * @arg eps scalar
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rmsnorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                                 float eps, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_rmsnorm.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg weight in f16[cols]
 * @arg eps scalar
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rmsnorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, const uint16_t *weight,
                                float eps, uint16_t *y);

/**
 * bfloat16 variant of kb_layernorm.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg weight in bf16[cols] nullable
 * @arg bias in bf16[cols] nullable
 * @arg eps scalar default(1e-05)
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_layernorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x,
                                   const uint16_t *weight, const uint16_t *bias, float eps, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_layernorm.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg weight in f16[cols] nullable
 * @arg bias in f16[cols] nullable
 * @arg eps scalar default(1e-05)
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_layernorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x,
                                  const uint16_t *weight, const uint16_t *bias, float eps, uint16_t *y);

/**
 * bfloat16 variant of kb_gemm.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in bf16[trans_a ? k : m, trans_a ? m : k] ld(lda)
 * @arg lda dim
 * @arg b in bf16[trans_b ? n : k, trans_b ? k : n] ld(ldb)
 * @arg ldb dim
 * @arg beta scalar default(0)
 * @arg c inout bf16[m, n] ld(ldc)
 * @arg ldc dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                              const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                              int64_t ldc);

/**
 * float16 (IEEE binary16) variant of kb_gemm.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in f16[trans_a ? k : m, trans_a ? m : k] ld(lda)
 * @arg lda dim
 * @arg b in f16[trans_b ? n : k, trans_b ? k : n] ld(ldb)
 * @arg ldb dim
 * @arg beta scalar default(0)
 * @arg c inout f16[m, n] ld(ldc)
 * @arg ldc dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                             const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                             int64_t ldc);

/**
 * bfloat16 variant of kb_attention.
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg q in bf16[batch, heads, seq_q, head_dim]
 * @arg k in bf16[batch, kv_heads, seq_kv, head_dim]
 * @arg v in bf16[batch, kv_heads, seq_kv, head_dim]
 * @arg causal flag
 * @arg scale scalar default(0)
 * @arg out out bf16[batch, heads, seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                   int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k,
                                   const uint16_t *v, bool causal, float scale, uint16_t *out);

/**
 * float16 (IEEE binary16) variant of kb_attention.
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg q in f16[batch, heads, seq_q, head_dim]
 * @arg k in f16[batch, kv_heads, seq_kv, head_dim]
 * @arg v in f16[batch, kv_heads, seq_kv, head_dim]
 * @arg causal flag
 * @arg scale scalar default(0)
 * @arg out out f16[batch, heads, seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                  int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k,
                                  const uint16_t *v, bool causal, float scale, uint16_t *out);

/* ------------------------------------------------------------------------ */
/* Model-ready entry points: attention with masks, layouts and KV-cache
 * alignment; fused linear layers; batched matrix multiplication.  On a CUDA
 * context they fail with KB_STATUS_UNSUPPORTED (the CUDA backend does not
 * implement them yet). */

/**
 * Activation applied by kb_linear after the bias.  Values are fixed and
 * append-only.
 */
typedef enum kb_activation {
  /** y = x. */
  KB_ACTIVATION_NONE = 0,
  /** y = max(x, 0) (NaN stays NaN). */
  KB_ACTIVATION_RELU = 1,
  /** Exact GELU, as kb_gelu. */
  KB_ACTIVATION_GELU = 2,
  /** Tanh-approximated GELU, as kb_gelu_tanh. */
  KB_ACTIVATION_GELU_TANH = 3,
  /** SiLU, as kb_silu. */
  KB_ACTIVATION_SILU = 4
} kb_activation;

/**
 * Fused linear layer, PyTorch's weight layout:
 *   y[r, o] = act(sum_i x[r, i] * weight[o, i] + bias[o])
 * computed as kb_gemm(x, weight, trans_b) (the same fma chain per element)
 * with the bias added (one rounding) and the activation applied (as the
 * kb_<activation> kernel) while the tile is in cache: one pass over y instead
 * of three.  bias may be NULL (no bias).  act is a kb_activation.
 * @arg ctx context
 * @arg rows dim
 * @arg in_features dim
 * @arg out_features dim
 * @arg x in f32[rows, in_features]
 * @arg weight in f32[out_features, in_features]
 * @arg bias in f32[out_features] nullable
 * @arg act scalar default(KB_ACTIVATION_NONE)
 * @arg y out f32[rows, out_features]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_linear(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features,
                              const float *x, const float *weight, const float *bias, kb_activation act, float *y);

/**
 * bfloat16 variant of kb_linear.
 * @arg ctx context
 * @arg rows dim
 * @arg in_features dim
 * @arg out_features dim
 * @arg x in bf16[rows, in_features]
 * @arg weight in bf16[out_features, in_features]
 * @arg bias in bf16[out_features] nullable
 * @arg act scalar default(KB_ACTIVATION_NONE)
 * @arg y out bf16[rows, out_features]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_linear_bf16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features,
                              const uint16_t *x, const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_linear.
 * @arg ctx context
 * @arg rows dim
 * @arg in_features dim
 * @arg out_features dim
 * @arg x in f16[rows, in_features]
 * @arg weight in f16[out_features, in_features]
 * @arg bias in f16[out_features] nullable
 * @arg act scalar default(KB_ACTIVATION_NONE)
 * @arg y out f16[rows, out_features]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_linear_f16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features,
                              const uint16_t *x, const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y);

/**
 * Scaled dot-product attention for real models: kb_attention plus a choice
 * of layout, key lengths, an additive mask and bottom-right causal
 * alignment.  Per (batch b, head h, query i):
 *   s_j = scale * q . k_j + mask[b, h, i, j]  for the keys j that take part,
 *   out = sum_j softmax(s)_j v_j,
 * query head h reading key/value head h / (heads / kv_heads); scale == 0
 * means 1 / sqrt(head_dim).
 * Layout: with seq_major, q, k, v and out are [batch, seq, heads, head_dim]
 * (what a linear layer's [batch, seq, heads * head_dim] output is, so no
 * transposed copy is needed); otherwise [batch, heads, seq, head_dim] as in
 * kb_attention.
 * Keys taking part: j < kv_lengths[b] when kv_lengths is not NULL (a padded
 * batch: each kv_lengths[b] in [0, seq_kv]), else j < seq_kv; with causal,
 * also j <= i (top-left alignment, PyTorch's is_causal) or, with
 * causal_bottom_right, j <= i + L_b - seq_q where L_b is the row's key count
 * (the KV-cache case: the last query sees every key; FlashAttention's
 * convention).  causal_bottom_right requires causal.
 * mask (nullable) is added to the scaled scores and broadcasts over its
 * dimensions of size 1: mask_batch is 1 or batch, mask_heads 1 or heads,
 * mask_q 1 or seq_q (the dims are ignored when mask is NULL).  -inf removes a
 * key.  A query row with no key left (every key removed by lengths, causal
 * alignment or the mask) gives zeros, not NaN.  scale must be finite and
 * >= 0.  Computed like kb_attention (float32, online softmax over blocks of
 * 128 keys); results do not depend on the thread count or instruction set.
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg q in f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @arg k in f32[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg v in f32[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg kv_lengths in i32[batch] nullable
 * @arg mask_batch dim
 * @arg mask_heads dim
 * @arg mask_q dim
 * @arg mask in f32[mask_batch, mask_heads, mask_q, seq_kv] nullable
 * @arg causal flag default(false)
 * @arg causal_bottom_right flag default(false)
 * @arg scale scalar default(0)
 * @arg out out f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_ex(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                    int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q, const float *k,
                                    const float *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                                    int64_t mask_q, const float *mask, bool causal, bool causal_bottom_right,
                                    float scale, float *out);

/**
 * bfloat16 variant of kb_attention_ex (the mask in bf16 too).
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg q in bf16[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @arg k in bf16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg v in bf16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg kv_lengths in i32[batch] nullable
 * @arg mask_batch dim
 * @arg mask_heads dim
 * @arg mask_q dim
 * @arg mask in bf16[mask_batch, mask_heads, mask_q, seq_kv] nullable
 * @arg causal flag default(false)
 * @arg causal_bottom_right flag default(false)
 * @arg scale scalar default(0)
 * @arg out out bf16[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_ex_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                    int64_t seq_kv, int64_t head_dim, bool seq_major, const uint16_t *q, const uint16_t *k,
                                    const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                                    int64_t mask_q, const uint16_t *mask, bool causal, bool causal_bottom_right,
                                    float scale, uint16_t *out);

/**
 * float16 (IEEE binary16) variant of kb_attention_ex (the mask in f16 too).
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg q in f16[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @arg k in f16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg v in f16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg kv_lengths in i32[batch] nullable
 * @arg mask_batch dim
 * @arg mask_heads dim
 * @arg mask_q dim
 * @arg mask in f16[mask_batch, mask_heads, mask_q, seq_kv] nullable
 * @arg causal flag default(false)
 * @arg causal_bottom_right flag default(false)
 * @arg scale scalar default(0)
 * @arg out out f16[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_ex_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                    int64_t seq_kv, int64_t head_dim, bool seq_major, const uint16_t *q, const uint16_t *k,
                                    const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                                    int64_t mask_q, const uint16_t *mask, bool causal, bool causal_bottom_right,
                                    float scale, uint16_t *out);

/**
 * Batched (strided) matrix multiply: for every item i < batch,
 *   C_i = alpha * op(A_i) * op(B_i) + beta * C_i
 * with A_i = a + i * stride_a, B_i = b + i * stride_b and
 * C_i = c + i * stride_c (strides in elements), each item computed exactly
 * as kb_gemm (the same fma chain per element; C_i is not read when
 * beta == 0).  A stride of 0 uses one matrix for every item (a shared
 * weight); strides must be >= 0 (KB_STATUS_INVALID_ARGUMENT), and when
 * batch > 1 stride_c must be at least the extent of one C matrix,
 * (m - 1) * ldc + n, so that the items of C do not overlap
 * (KB_STATUS_SHAPE_MISMATCH).  lda, ldb and ldc follow kb_gemm's rules.
 * Operand x spans (batch - 1) * stride_x + its matrix extent elements
 * (none when it is empty, and then it may be NULL); a span that overflows is
 * KB_STATUS_OUT_OF_MEMORY.  c must not overlap a or b.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg batch dim
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in f32[batch, trans_a ? k : m, trans_a ? m : k] ld(lda) stride(stride_a)
 * @arg lda dim
 * @arg stride_a dim
 * @arg b in f32[batch, trans_b ? n : k, trans_b ? k : n] ld(ldb) stride(stride_b)
 * @arg ldb dim
 * @arg stride_b dim
 * @arg beta scalar default(0)
 * @arg c inout f32[batch, m, n] ld(ldc) stride(stride_c)
 * @arg ldc dim
 * @arg stride_c dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm_batched(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b,
                                 int64_t ldb, int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c);

/**
 * bfloat16 variant of kb_gemm_batched (A, B and C in bf16; alpha and beta
 * stay float).  Each item is computed as kb_gemm_bf16.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg batch dim
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in bf16[batch, trans_a ? k : m, trans_a ? m : k] ld(lda) stride(stride_a)
 * @arg lda dim
 * @arg stride_a dim
 * @arg b in bf16[batch, trans_b ? n : k, trans_b ? k : n] ld(ldb) stride(stride_b)
 * @arg ldb dim
 * @arg stride_b dim
 * @arg beta scalar default(0)
 * @arg c inout bf16[batch, m, n] ld(ldc) stride(stride_c)
 * @arg ldc dim
 * @arg stride_c dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm_batched_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                                      int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a, const uint16_t *b,
                                      int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc, int64_t stride_c);

/**
 * float16 variant of kb_gemm_batched (A, B and C in f16; alpha and beta
 * stay float).  Each item is computed as kb_gemm_f16.
 * @arg ctx context
 * @arg trans_a flag
 * @arg trans_b flag
 * @arg batch dim
 * @arg m dim
 * @arg n dim
 * @arg k dim
 * @arg alpha scalar default(1)
 * @arg a in f16[batch, trans_a ? k : m, trans_a ? m : k] ld(lda) stride(stride_a)
 * @arg lda dim
 * @arg stride_a dim
 * @arg b in f16[batch, trans_b ? n : k, trans_b ? k : n] ld(ldb) stride(stride_b)
 * @arg ldb dim
 * @arg stride_b dim
 * @arg beta scalar default(0)
 * @arg c inout f16[batch, m, n] ld(ldc) stride(stride_c)
 * @arg ldc dim
 * @arg stride_c dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gemm_batched_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                                     int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a, const uint16_t *b,
                                     int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc, int64_t stride_c);

/* ------------------------------------------------------------------------ */
/* Weights in storage formats: float32, float16, bfloat16, and GGML's block
 * quantizations, as GGUF files hold them.  A weight tensor is passed as its
 * bytes with its kb_dtype; the byte count is checked against the shape
 * (kb_dtype_bytes) before anything is read. */

/**
 * Storage format of a tensor passed as bytes (kb_linear_w, kb_embedding_w,
 * kb_quantize, kb_dequantize).  The values are GGML's type numbers (enum
 * ggml_type, the type field of a GGUF tensor), so a tensor read from a GGUF
 * file passes its type as it is.  A [rows, cols] tensor is rows rows of cols
 * elements, each row stored alone; the block formats store a row as cols / 32
 * blocks (cols must be a multiple of 32) of 32 consecutive elements:
 * Q8_0 (34 bytes): a binary16 scale d, then 32 int8 q; element e = d * q[e].
 * Q4_0 (18 bytes): a binary16 scale d, then 16 bytes, byte e holding q of
 * element e in its low nibble and of element e + 16 in its high nibble;
 * element = d * (q - 8).  Scales are little-endian.  Values are fixed and
 * append-only.
 */
typedef enum kb_dtype {
  /** IEEE binary32, 4 bytes per element. */
  KB_DTYPE_F32 = 0,
  /** IEEE binary16, 2 bytes per element. */
  KB_DTYPE_F16 = 1,
  /** GGML Q4_0: blocks of 32 elements in 18 bytes. */
  KB_DTYPE_Q4_0 = 2,
  /** GGML Q8_0: blocks of 32 elements in 34 bytes. */
  KB_DTYPE_Q8_0 = 8,
  /** bfloat16 (the upper half of a binary32), 2 bytes per element. */
  KB_DTYPE_BF16 = 30
} kb_dtype;

/**
 * Bytes of a [rows, cols] tensor stored as type: rows * cols * 4 (F32),
 * * 2 (F16, BF16), rows * cols / 32 * 34 (Q8_0) or * 18 (Q4_0).  Fails with
 * KB_STATUS_INVALID_ARGUMENT for an unknown type, a negative size or, for a
 * block format, cols not a multiple of 32; KB_STATUS_OUT_OF_MEMORY when the
 * count overflows.  Its message is the calling thread's (kb_last_error).
 * @arg type scalar
 * @arg rows dim
 * @arg cols dim
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_dtype_bytes(kb_dtype type, int64_t rows, int64_t cols, int64_t *bytes);

/**
 * Converts float32 rows into storage type: y holds the [rows, cols] tensor
 * x in type's bytes (y_bytes = kb_dtype_bytes(type, rows, cols)).  Q8_0 and
 * Q4_0 are GGML's reference quantization, bit for bit (quantize_row_q8_0_ref
 * and quantize_row_q4_0_ref: per block d = max|x| / 127, q = x / d rounded
 * half away from zero; for Q4_0 d = -(the element of largest magnitude) / 8,
 * q = min(15, trunc(x / d + 8.5))); F16 and BF16 round to nearest even; F32
 * copies.  For a block format every element must be finite and every
 * block's scale must fit binary16 (KB_STATUS_INVALID_ARGUMENT naming the
 * element, x[row, col], otherwise).
 * @arg ctx context
 * @arg type scalar
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg y out u8[y_bytes]
 * @arg y_bytes dim
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_quantize(kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols, const float *x, void *y,
                             int64_t y_bytes);

/**
 * Widens a [rows, cols] tensor stored as type (x_bytes =
 * kb_dtype_bytes(type, rows, cols)) to float32: exactly (every value of
 * every format is a float32); as GGML's dequantize_row_q8_0 / _q4_0 for the
 * block formats.
 * @arg ctx context
 * @arg type scalar
 * @arg rows dim
 * @arg cols dim
 * @arg x in u8[x_bytes]
 * @arg x_bytes dim
 * @arg y out f32[rows, cols]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_dequantize(kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols, const void *x,
                               int64_t x_bytes, float *y);

/**
 * Fused linear layer with the weight in a storage format, float32
 * activations and output (the decode step of a model read from GGUF):
 *   y[r, o] = act(sum_i x[r, i] * W[o, i] + bias[o])
 * where W is weight, the [out_features, in_features] tensor (PyTorch's and
 * GGUF's layout) stored as weight_type in weight_bytes =
 * kb_dtype_bytes(weight_type, out_features, in_features) bytes.
 * F32, F16, BF16: every sum is kb_linear's fma chain on the exactly widened
 * weights (for F32 it is kb_linear), 16-bit weights read as 16 bits.
 * Q8_0, Q4_0: each row of x is quantized per block of 32 to int8 (scale
 * max|x| / 127, round to nearest even), each block's products are summed in
 * exact integers and the blocks are combined in float32 in a fixed order
 * (docs/kernels.md gives the order and the error bound against the float64
 * product of the dequantized weights and x); a NaN or infinite element of a
 * row makes every output of the row NaN.  The bias is added (one rounding),
 * then the activation applied, as in kb_linear.  Results are identical for
 * every thread count and instruction set.
 * @arg ctx context
 * @arg rows dim
 * @arg in_features dim
 * @arg out_features dim
 * @arg x in f32[rows, in_features]
 * @arg weight_type scalar
 * @arg weight in u8[weight_bytes]
 * @arg weight_bytes dim
 * @arg bias in f32[out_features] nullable
 * @arg act scalar default(KB_ACTIVATION_NONE)
 * @arg y out f32[rows, out_features]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_linear_w(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const float *x,
                             kb_dtype weight_type, const void *weight, int64_t weight_bytes, const float *bias,
                             kb_activation act, float *y);

/**
 * Embedding lookup from a table in a storage format: out[i, :] = row ids[i]
 * of the [vocab, dim] table stored as table_type in table_bytes =
 * kb_dtype_bytes(table_type, vocab, dim) bytes, widened to float32 exactly
 * (kb_dequantize of that row).  Every id must lie in [0, vocab); the ids are
 * all checked before anything is written.
 * @arg ctx context
 * @arg n_ids dim
 * @arg vocab dim
 * @arg dim dim
 * @arg ids in i32[n_ids]
 * @arg table_type scalar
 * @arg table in u8[table_bytes]
 * @arg table_bytes dim
 * @arg out out f32[n_ids, dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_embedding_w(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                                kb_dtype table_type, const void *table, int64_t table_bytes, float *out);

/* ------------------------------------------------------------------------ */
/* Mixture-of-experts routing (kernels/cpu/decoder/moe_route.c).  CPU only:
 * on a CUDA context these fail with KB_STATUS_UNSUPPORTED. */

/**
 * How kb_moe_route turns a token's router logits into its top_k experts and
 * their weights.  Values are fixed and append-only.
 */
typedef enum kb_moe_routing {
  /** softmax over all experts, then the top_k probabilities as they are
   * (Qwen-MoE, DeepSeek-MoE with norm_topk_prob false). */
  KB_MOE_ROUTING_SOFTMAX_TOPK = 0,
  /** softmax over all experts, top_k, the k probabilities divided by their
   * sum (Qwen norm_topk_prob true, OLMoE, Mixtral's reference code). */
  KB_MOE_ROUTING_SOFTMAX_TOPK_NORM = 1,
  /** top_k on the logits, then softmax over those k (Mixtral's effective
   * behaviour: mathematically the same weights as SOFTMAX_TOPK_NORM). */
  KB_MOE_ROUTING_TOPK_SOFTMAX = 2
} kb_moe_routing;

/**
 * Mixture-of-experts router: for each token row of logits, the top_k experts
 * and their routing weights.  The experts are ranked by decreasing logit,
 * equal logits by lower expert index (torch.topk's order on distinct
 * values); ids[t, j] is the expert of rank j and weights[t, j] its weight
 * (equal logits get equal weights).  Per routing (docs/kernels.md gives the
 * exact evaluation and the error bound):
 *   SOFTMAX_TOPK:      p = softmax(logits[t]) with kb_softmax's bits;
 *                      weights[t, j] = p[ids[t, j]]
 *   SOFTMAX_TOPK_NORM: the same p; weights[t, j] = p[ids[t, j]] / S, S the
 *                      double sum of the k selected p in rank order, one
 *                      rounding
 *   TOPK_SOFTMAX:      weights[t] = kb_softmax of the k selected logits in
 *                      rank order (its bits).
 * experts must be > 0 when tokens > 0 and fit in int32; top_k must be in
 * [1, experts] (only top_k >= 1 when tokens == 0).  logits must not hold NaN
 * or +inf, and no row may be all -inf (INVALID_ARGUMENT naming the first
 * offending element or row, before anything is written); a -inf logit is an
 * expert that is never routed to while a finite one remains (weight 0).
 * Results are identical for every thread count and instruction set.
 * @arg ctx context
 * @arg tokens dim
 * @arg experts dim
 * @arg top_k dim
 * @arg routing scalar
 * @arg logits in f32[tokens, experts]
 * @arg ids out i32[tokens, top_k]
 * @arg weights out f32[tokens, top_k]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_moe_route(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k, kb_moe_routing routing,
                              const float *logits, int32_t *ids, float *weights);

/**
 * bfloat16 logits variant of kb_moe_route: the logits are widened to float32
 * (exactly) and routed as kb_moe_route does; ids and weights as there
 * (weights in float32).
 * @arg ctx context
 * @arg tokens dim
 * @arg experts dim
 * @arg top_k dim
 * @arg routing scalar
 * @arg logits in bf16[tokens, experts]
 * @arg ids out i32[tokens, top_k]
 * @arg weights out f32[tokens, top_k]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_moe_route_bf16(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k,
                                   kb_moe_routing routing, const uint16_t *logits, int32_t *ids, float *weights);

/**
 * float16 (IEEE binary16) logits variant of kb_moe_route: the logits are
 * widened to float32 (exactly) and routed as kb_moe_route does; ids and
 * weights as there (weights in float32).
 * @arg ctx context
 * @arg tokens dim
 * @arg experts dim
 * @arg top_k dim
 * @arg routing scalar
 * @arg logits in f16[tokens, experts]
 * @arg ids out i32[tokens, top_k]
 * @arg weights out f32[tokens, top_k]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_moe_route_f16(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k,
                                  kb_moe_routing routing, const uint16_t *logits, int32_t *ids, float *weights);

/* ------------------------------------------------------------------------ */
/* Decoder kernels: rotary embedding of q and k with positions per token,
 * partial rotary, both pair conventions and frequency scaling.  On a CUDA
 * context they fail with KB_STATUS_UNSUPPORTED (CPU only). */

/**
 * Which features kb_rope_ex rotates together.  Values are fixed and
 * append-only.
 */
typedef enum kb_rope_style {
  /** Pairs (i, i + rotary_dim / 2): Llama in Hugging Face transformers,
   * GPT-NeoX, kb_rope. */
  KB_ROPE_STYLE_HALF = 0,
  /** Pairs (2i, 2i + 1): GPT-J, and the permuted q/k weights of GGUF's
   * llama tensors. */
  KB_ROPE_STYLE_ADJACENT = 1
} kb_rope_style;

/**
 * Frequency scaling of kb_rope_ex (transformers' rope_scaling "rope_type").
 * Values are fixed and append-only.
 */
typedef enum kb_rope_scaling {
  /** inv_freq[i] = theta^(-2i / rotary_dim). */
  KB_ROPE_SCALING_NONE = 0,
  /** "linear": inv_freq[i] / factor (positions divided by factor). */
  KB_ROPE_SCALING_LINEAR = 1,
  /** "llama3" (Llama 3.1 and later): factor, low_freq_factor,
   * high_freq_factor, original_max_position; docs/kernels.md states the
   * formula. */
  KB_ROPE_SCALING_LLAMA3 = 2
} kb_rope_scaling;

/**
 * Rotary position embedding of q and k in place, in one call, for a batch of
 * sequences whose tokens each have their own position (decode of sequences
 * at different positions, prefill, or both).  q is [batch, seq, q_heads,
 * head_dim] and k [batch, seq, kv_heads, head_dim] (a linear layer's output
 * layout); k may be NULL (only q is rotated).  Token (b, s) of every head
 * of q and k is rotated by the angles of positions[b, s] (>= 0):
 * angle_i = positions[b, s] * inv_freq[i] for i < rotary_dim / 2, with
 * inv_freq[i] = theta^(-2i / rotary_dim) changed by scaling (factor is used
 * by LINEAR and LLAMA3, low_freq_factor, high_freq_factor and
 * original_max_position by LLAMA3 only; unused ones are not read).  Only
 * the first rotary_dim features (even, 0 < rotary_dim <= head_dim) rotate,
 * the rest are left untouched.  style pairs features (i, i + rotary_dim / 2)
 * (HALF) or (2i, 2i + 1) (ADJACENT); each pair (u, v) becomes
 *   (u cos(angle_i) - v sin(angle_i), v cos(angle_i) + u sin(angle_i)).
 * inv_freq, the angles, cos, sin and the rotation are computed in double
 * and each result rounded once, as kb_rope: with HALF, rotary_dim ==
 * head_dim, NONE and k NULL, q gets exactly kb_rope's bits.  theta finite
 * and > 0; factor, low_freq_factor, high_freq_factor finite and > 0 where
 * used, low_freq_factor < high_freq_factor and original_max_position > 0 for
 * LLAMA3.
 * @arg ctx context
 * @arg batch dim
 * @arg seq dim
 * @arg q_heads dim
 * @arg kv_heads dim
 * @arg head_dim dim
 * @arg rotary_dim dim
 * @arg style scalar default(KB_ROPE_STYLE_HALF)
 * @arg positions in i32[batch, seq]
 * @arg theta scalar default(10000)
 * @arg scaling scalar default(KB_ROPE_SCALING_NONE)
 * @arg factor scalar default(1)
 * @arg low_freq_factor scalar default(1)
 * @arg high_freq_factor scalar default(4)
 * @arg original_max_position scalar default(8192)
 * @arg q inout f32[batch, seq, q_heads, head_dim]
 * @arg k inout f32[batch, seq, kv_heads, head_dim] nullable
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rope_ex(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                            int64_t head_dim, int64_t rotary_dim, kb_rope_style style, const int32_t *positions,
                            float theta, kb_rope_scaling scaling, float factor, float low_freq_factor,
                            float high_freq_factor, int64_t original_max_position, float *q, float *k);

/**
 * bfloat16 variant of kb_rope_ex: each rotated pair is widened exactly, rotated
 * as kb_rope_ex does and its float32 result rounded once to the format.
 * @arg ctx context
 * @arg batch dim
 * @arg seq dim
 * @arg q_heads dim
 * @arg kv_heads dim
 * @arg head_dim dim
 * @arg rotary_dim dim
 * @arg style scalar default(KB_ROPE_STYLE_HALF)
 * @arg positions in i32[batch, seq]
 * @arg theta scalar default(10000)
 * @arg scaling scalar default(KB_ROPE_SCALING_NONE)
 * @arg factor scalar default(1)
 * @arg low_freq_factor scalar default(1)
 * @arg high_freq_factor scalar default(4)
 * @arg original_max_position scalar default(8192)
 * @arg q inout bf16[batch, seq, q_heads, head_dim]
 * @arg k inout bf16[batch, seq, kv_heads, head_dim] nullable
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rope_ex_bf16(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                                 int64_t head_dim, int64_t rotary_dim, kb_rope_style style, const int32_t *positions,
                               float theta, kb_rope_scaling scaling, float factor, float low_freq_factor,
                               float high_freq_factor, int64_t original_max_position, uint16_t *q, uint16_t *k);

/**
 * float16 (IEEE binary16) variant of kb_rope_ex: each rotated pair is
 * widened exactly, rotated as kb_rope_ex does and its float32 result
 * rounded once to the format.
 * @arg ctx context
 * @arg batch dim
 * @arg seq dim
 * @arg q_heads dim
 * @arg kv_heads dim
 * @arg head_dim dim
 * @arg rotary_dim dim
 * @arg style scalar default(KB_ROPE_STYLE_HALF)
 * @arg positions in i32[batch, seq]
 * @arg theta scalar default(10000)
 * @arg scaling scalar default(KB_ROPE_SCALING_NONE)
 * @arg factor scalar default(1)
 * @arg low_freq_factor scalar default(1)
 * @arg high_freq_factor scalar default(4)
 * @arg original_max_position scalar default(8192)
 * @arg q inout f16[batch, seq, q_heads, head_dim]
 * @arg k inout f16[batch, seq, kv_heads, head_dim] nullable
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_rope_ex_f16(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                               int64_t head_dim, int64_t rotary_dim, kb_rope_style style, const int32_t *positions,
                               float theta, kb_rope_scaling scaling, float factor, float low_freq_factor,
                               float high_freq_factor, int64_t original_max_position, uint16_t *q, uint16_t *k);

/* ------------------------------------------------------------------------ */
/* Decoder kernels: gated activations and the fused residual add + RMSNorm
 * (kernels/cpu/decoder/; docs/kernels.md, "Gated activations" and
 * "kb_add_rmsnorm").  CPU only: a CUDA context gets KB_STATUS_UNSUPPORTED. */

/**
 * Gated linear unit: y[r, c] = act(gate[r, c]) * up[r, c], as used by
 * SwiGLU (act = KB_ACTIVATION_SILU) and GeGLU (KB_ACTIVATION_GELU or
 * KB_ACTIVATION_GELU_TANH) feed-forward layers; KB_ACTIVATION_NONE gives the
 * bilinear GLU gate * up and KB_ACTIVATION_RELU ReGLU.  The activation is
 * exactly kb_silu / kb_gelu / kb_gelu_tanh (same bits; ReLU as kb_linear's),
 * followed by one float32 multiply, so y is bit-identical to the activation
 * kernel followed by kb_mul, and its error is the activation's plus 1/2 ulp.
 * gate and up are [rows, cols] matrices with row strides ld_gate and ld_up
 * (>= cols, at least 1), so the [rows, 2 * ffn] output h of one fused gate_up
 * linear layer is used without a copy: gate = h, up = h + ffn, cols = ffn,
 * ld_gate = ld_up = 2 * ffn.  y is dense [rows, cols] and must not overlap
 * gate or up.  act must be one of kb_activation's values.  Results are
 * identical for every thread count and instruction set.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg gate in f32[rows, cols] ld(ld_gate)
 * @arg ld_gate dim
 * @arg up in f32[rows, cols] ld(ld_up)
 * @arg ld_up dim
 * @arg act scalar default(KB_ACTIVATION_SILU)
 * @arg y out f32[rows, cols]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_glu(kb_context *ctx, int64_t rows, int64_t cols, const float *gate, int64_t ld_gate, const float *up,
                        int64_t ld_up, kb_activation act, float *y);

/**
 * bfloat16 variant of kb_glu: each element widened, kb_glu's float32
 * activation and product, rounded once to bfloat16.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg gate in bf16[rows, cols] ld(ld_gate)
 * @arg ld_gate dim
 * @arg up in bf16[rows, cols] ld(ld_up)
 * @arg ld_up dim
 * @arg act scalar default(KB_ACTIVATION_SILU)
 * @arg y out bf16[rows, cols]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_glu_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *gate, int64_t ld_gate,
                             const uint16_t *up, int64_t ld_up, kb_activation act, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_glu: each element widened, kb_glu's
 * float32 activation and product, rounded once to float16.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg gate in f16[rows, cols] ld(ld_gate)
 * @arg ld_gate dim
 * @arg up in f16[rows, cols] ld(ld_up)
 * @arg ld_up dim
 * @arg act scalar default(KB_ACTIVATION_SILU)
 * @arg y out f16[rows, cols]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_glu_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *gate, int64_t ld_gate,
                            const uint16_t *up, int64_t ld_up, kb_activation act, uint16_t *y);

/**
 * Fused residual add and RMSNorm (a pre-norm decoder's "h = h + sublayer;
 * x = norm(h)"): for each row, residual[r, :] += x[r, :] (written back),
 * then y[r, :] = kb_rmsnorm of the updated residual row with weight and eps.
 * Bit-identical to kb_add(residual, x -> residual) followed by
 * kb_rmsnorm(residual -> y), but each row is read from memory once while it
 * is in cache.  eps must be finite and >= 0; cols must be > 0 when rows > 0.
 * y may be x (in place); residual must not overlap x, weight or y.
 * Results are identical for every thread count and instruction set.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f32[rows, cols]
 * @arg residual inout f32[rows, cols]
 * @arg weight in f32[cols]
 * @arg eps scalar
 * @arg y out f32[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_rmsnorm(kb_context *ctx, int64_t rows, int64_t cols, const float *x, float *residual,
                                const float *weight, float eps, float *y);

/**
 * bfloat16 variant of kb_add_rmsnorm: identical to kb_add_bf16 (the sum
 * rounded to bfloat16 into residual) followed by kb_rmsnorm_bf16 on it.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg residual inout bf16[rows, cols]
 * @arg weight in bf16[cols]
 * @arg eps scalar
 * @arg y out bf16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_rmsnorm_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x,
                                     uint16_t *residual, const uint16_t *weight, float eps, uint16_t *y);

/**
 * float16 (IEEE binary16) variant of kb_add_rmsnorm: identical to
 * kb_add_f16 (the sum rounded to float16 into residual) followed by
 * kb_rmsnorm_f16 on it.
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg residual inout f16[rows, cols]
 * @arg weight in f16[cols]
 * @arg eps scalar
 * @arg y out f16[rows, cols] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_add_rmsnorm_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x,
                                    uint16_t *residual, const uint16_t *weight, float eps, uint16_t *y);

/* ------------------------------------------------------------------------ */
/* KV cache. */

/**
 * Appends the keys and values of seq_new new tokens to a preallocated cache of
 * capacity positions per sequence: for batch row b, new token t and key/value
 * head h, with p = positions[b] + t,
 *   k_cache[b, h, p, :] = k_new[b, t, h, :]   (seq_major false)
 *   k_cache[b, p, h, :] = k_new[b, t, h, :]   (seq_major true)
 * and likewise v_cache from v_new.  k_new and v_new have the layout of a
 * linear layer's output ([batch, seq_new, kv_heads * head_dim], after rope);
 * the caches have kb_attention_ex's k/v layout for the same seq_major, so
 * attention reads them in place with seq_kv = capacity and kv_lengths[b] =
 * positions[b] + seq_new.  Positions past those lengths are never read and
 * need no initialisation.  The copy is exact.  Every positions[b] must be
 * >= 0 with positions[b] + seq_new <= capacity; all are checked before
 * anything is written.  The caches must not overlap the inputs or each other.
 * @arg ctx context
 * @arg batch dim
 * @arg kv_heads dim
 * @arg seq_new dim
 * @arg capacity dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg k_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg v_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg positions in i32[batch]
 * @arg k_cache inout f32[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @arg v_cache inout f32[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_kv_cache_append(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                    int64_t capacity, int64_t head_dim, bool seq_major, const float *k_new,
                                    const float *v_new, const int32_t *positions, float *k_cache, float *v_cache);

/**
 * Bfloat16 variant of kb_kv_cache_append (a bfloat16 cache; the copy is exact).
 * @arg ctx context
 * @arg batch dim
 * @arg kv_heads dim
 * @arg seq_new dim
 * @arg capacity dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg k_new in bf16[batch, seq_new, kv_heads, head_dim]
 * @arg v_new in bf16[batch, seq_new, kv_heads, head_dim]
 * @arg positions in i32[batch]
 * @arg k_cache inout bf16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @arg v_cache inout bf16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_kv_cache_append_bf16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                         int64_t capacity, int64_t head_dim, bool seq_major, const uint16_t *k_new,
                                         const uint16_t *v_new, const int32_t *positions, uint16_t *k_cache,
                                         uint16_t *v_cache);

/**
 * Float16 variant of kb_kv_cache_append (a float16 cache; the copy is exact).
 * @arg ctx context
 * @arg batch dim
 * @arg kv_heads dim
 * @arg seq_new dim
 * @arg capacity dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg k_new in f16[batch, seq_new, kv_heads, head_dim]
 * @arg v_new in f16[batch, seq_new, kv_heads, head_dim]
 * @arg positions in i32[batch]
 * @arg k_cache inout f16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @arg v_cache inout f16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_kv_cache_append_f16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                        int64_t capacity, int64_t head_dim, bool seq_major, const uint16_t *k_new,
                                        const uint16_t *v_new, const int32_t *positions, uint16_t *k_cache,
                                        uint16_t *v_cache);

/* ------------------------------------------------------------------------ */
/* Gated feed-forward blocks on storage-format weights: the fused gate / up
 * pair (kernels/cpu/decoder/linear_glu.c) and the mixture-of-experts expert
 * step (kernels/cpu/decoder/moe_experts.c).  CPU only: on a CUDA context
 * these fail with KB_STATUS_UNSUPPORTED. */

/**
 * The gate and up linear layers of a gated feed-forward block and their
 * gated product in one call (SwiGLU with KB_ACTIVATION_SILU, GeGLU with
 * KB_ACTIVATION_GELU):
 *   y[r, o] = act(sum_i x[r, i] * Wg[o, i]) * (sum_i x[r, i] * Wu[o, i])
 * where Wg (gate_weight) and Wu (up_weight) are [out_features, in_features]
 * tensors (PyTorch's and GGUF's layout) stored as weight_type, each
 * kb_dtype_bytes(weight_type, out_features, in_features) bytes.  Each sum
 * is kb_linear_w's (for a block format x is quantized once for both) and
 * the gated product is kb_glu's: y has the bits of kb_linear_w on each
 * weight followed by kb_glu, for every thread count and instruction set,
 * without the two [rows, out_features] products ever existing whole (they
 * are made a few columns at a time and only y is written).
 * @arg ctx context
 * @arg rows dim
 * @arg in_features dim
 * @arg out_features dim
 * @arg x in f32[rows, in_features]
 * @arg weight_type scalar
 * @arg gate_weight in u8[gate_bytes]
 * @arg gate_bytes dim
 * @arg up_weight in u8[up_bytes]
 * @arg up_bytes dim
 * @arg act scalar default(KB_ACTIVATION_SILU)
 * @arg y out f32[rows, out_features]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_linear_glu_w(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features,
                                 const float *x, kb_dtype weight_type, const void *gate_weight, int64_t gate_bytes,
                                 const void *up_weight, int64_t up_bytes, kb_activation act, float *y);

/**
 * The expert step of a mixture-of-experts block, given each token's routing
 * (kb_moe_route's ids and weights):
 *   y[t, :] = sum over j < top_k of weights[t, j] * E_e(x[t, :]),  e = ids[t, j]
 *   E_e(v) = Wd_e . (act(Wg_e . v) * (Wu_e . v))
 * Expert e's gate and up weights are [ffn, hidden] tensors, its down weight
 * a [hidden, ffn] tensor, all stored as weight_type; gate_weight, up_weight
 * and down_weight hold the experts' tensors one after the other
 * ([experts, ffn, hidden] and [experts, hidden, ffn], GGUF's ffn_*_exps
 * layout), so gate_bytes = up_bytes = experts * kb_dtype_bytes(weight_type,
 * ffn, hidden) and down_bytes = experts * kb_dtype_bytes(weight_type,
 * hidden, ffn).  Each expert runs once, on the rows of just the tokens
 * routed to it (grouped products); E_e(x[t]) has the bits of
 * kb_linear_glu_w then kb_linear_w on that token's row alone, and y[t, c] is
 * the float32 fma chain acc = fma(weights[t, j], E(x[t])[c], acc) over j in
 * order from acc = +0.  Every id must lie in [0, experts) (checked before
 * anything is written; a token may name an expert twice); weights are used
 * as given (top_k = 0 gives zeros).  Results are identical for every thread
 * count and instruction set.
 * @arg ctx context
 * @arg tokens dim
 * @arg hidden dim
 * @arg ffn dim
 * @arg experts dim
 * @arg top_k dim
 * @arg x in f32[tokens, hidden]
 * @arg ids in i32[tokens, top_k]
 * @arg weights in f32[tokens, top_k]
 * @arg weight_type scalar
 * @arg gate_weight in u8[gate_bytes]
 * @arg gate_bytes dim
 * @arg up_weight in u8[up_bytes]
 * @arg up_bytes dim
 * @arg down_weight in u8[down_bytes]
 * @arg down_bytes dim
 * @arg act scalar default(KB_ACTIVATION_SILU)
 * @arg y out f32[tokens, hidden]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_moe_experts(kb_context *ctx, int64_t tokens, int64_t hidden, int64_t ffn, int64_t experts,
                                int64_t top_k, const float *x, const int32_t *ids, const float *weights,
                                kb_dtype weight_type, const void *gate_weight, int64_t gate_bytes,
                                const void *up_weight, int64_t up_bytes, const void *down_weight, int64_t down_bytes,
                                kb_activation act, float *y);

/* 16-bit embedding, argmax and sampling.  The bfloat16 / float16 model's
 * embedding table and logits are read in their storage format: the embedding
 * copies 16-bit rows exactly; argmax and the samplers widen each logit
 * exactly to float32 and then do exactly what kb_argmax, kb_sample,
 * kb_topk_sample and kb_topp_sample do (same validation, arithmetic and
 * Philox draws), so a call returns the float32 kernel's index or token on
 * the widened logits, bit for bit, for the same seed.  They widen a block
 * of a row at a time and keep no widened copy of the logits.  CPU only: a
 * CUDA context gets KB_STATUS_UNSUPPORTED after validation. */

/**
 * bfloat16 variant of kb_embedding: out[i, :] = table[ids[i], :], a copy of
 * the 16-bit rows (exact).  Every id must lie in [0, vocab); the ids are all
 * checked before anything is written.
 * @arg ctx context
 * @arg n_ids dim
 * @arg vocab dim
 * @arg dim dim
 * @arg ids in i32[n_ids]
 * @arg table in bf16[vocab, dim]
 * @arg out out bf16[n_ids, dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_embedding_bf16(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                                   const uint16_t *table, uint16_t *out);

/**
 * float16 (IEEE binary16) variant of kb_embedding: out[i, :] = table[ids[i], :], a copy of
 * the 16-bit rows (exact).  Every id must lie in [0, vocab); the ids are all
 * checked before anything is written.
 * @arg ctx context
 * @arg n_ids dim
 * @arg vocab dim
 * @arg dim dim
 * @arg ids in i32[n_ids]
 * @arg table in f16[vocab, dim]
 * @arg out out f16[n_ids, dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_embedding_f16(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                                  const uint16_t *table, uint16_t *out);

/**
 * bfloat16 variant of kb_argmax: kb_argmax of the exactly widened logits (the
 * first index on ties, NaN larger than every number).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in bf16[rows, cols]
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_argmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, int32_t *out);

/**
 * float16 (IEEE binary16) variant of kb_argmax: kb_argmax of the exactly widened logits (the
 * first index on ties, NaN larger than every number).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg x in f16[rows, cols]
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_argmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, int32_t *out);

/**
 * bfloat16 variant of kb_sample: the token kb_sample returns for the exactly
 * widened logits and the same seed (same rules: no NaN or +inf, no row all
 * -inf, temperature finite and > 0).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in bf16[rows, cols]
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float temperature,
                                uint64_t seed, int32_t *out);

/**
 * float16 (IEEE binary16) variant of kb_sample: the token kb_sample returns for the exactly
 * widened logits and the same seed (same rules: no NaN or +inf, no row all
 * -inf, temperature finite and > 0).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f16[rows, cols]
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float temperature,
                               uint64_t seed, int32_t *out);

/**
 * bfloat16 variant of kb_topk_sample: the token kb_topk_sample returns for the
 * exactly widened logits and the same seed (same rules for k, temperature
 * and logits).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in bf16[rows, cols]
 * @arg k dim
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topk_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, int64_t k,
                                     float temperature, uint64_t seed, int32_t *out);

/**
 * float16 (IEEE binary16) variant of kb_topk_sample: the token kb_topk_sample returns for the
 * exactly widened logits and the same seed (same rules for k, temperature
 * and logits).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f16[rows, cols]
 * @arg k dim
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topk_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, int64_t k,
                                    float temperature, uint64_t seed, int32_t *out);

/**
 * bfloat16 variant of kb_topp_sample: the token kb_topp_sample returns for the
 * exactly widened logits and the same seed (same rules for p, temperature
 * and logits).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in bf16[rows, cols]
 * @arg p scalar
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topp_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float p,
                                     float temperature, uint64_t seed, int32_t *out);

/**
 * float16 (IEEE binary16) variant of kb_topp_sample: the token kb_topp_sample returns for the
 * exactly widened logits and the same seed (same rules for p, temperature
 * and logits).
 * @arg ctx context
 * @arg rows dim
 * @arg cols dim
 * @arg logits in f16[rows, cols]
 * @arg p scalar
 * @arg temperature scalar default(1)
 * @arg seed scalar
 * @arg out out i32[rows]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_topp_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float p,
                                    float temperature, uint64_t seed, int32_t *out);

/* ------------------------------------------------------------------------ */
/* Float32 activations over a 16-bit KV cache
 * (kernels/cpu/decoder/kv_cache.c, kernels/cpu/attention.c): a float32
 * model stores its keys and values as bfloat16 or float16 and attends over
 * them without widening the cache.  CPU only: on a CUDA context these fail
 * with KB_STATUS_UNSUPPORTED. */

/**
 * kb_kv_cache_append from float32 keys and values into a bfloat16 cache:
 * the same placement, positions and checks, each value rounded to bfloat16
 * (nearest, ties to even; NaN stays NaN; the conversion of the _bf16
 * kernels).  With kb_attention_ex_kv_bf16 a float32 model keeps its cache
 * in half the bytes.
 * @arg ctx context
 * @arg batch dim
 * @arg kv_heads dim
 * @arg seq_new dim
 * @arg capacity dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg k_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg v_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg positions in i32[batch]
 * @arg k_cache inout bf16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @arg v_cache inout bf16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_kv_cache_append_to_bf16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                            int64_t capacity, int64_t head_dim, bool seq_major, const float *k_new,
                                            const float *v_new, const int32_t *positions, uint16_t *k_cache,
                                            uint16_t *v_cache);

/**
 * kb_kv_cache_append from float32 keys and values into a float16 (IEEE binary16) cache:
 * the same placement, positions and checks, each value rounded to float16 (IEEE binary16)
 * (nearest, ties to even; NaN stays NaN; the conversion of the _f16
 * kernels).  With kb_attention_ex_kv_f16 a float32 model keeps its cache
 * in half the bytes.
 * @arg ctx context
 * @arg batch dim
 * @arg kv_heads dim
 * @arg seq_new dim
 * @arg capacity dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg k_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg v_new in f32[batch, seq_new, kv_heads, head_dim]
 * @arg positions in i32[batch]
 * @arg k_cache inout f16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @arg v_cache inout f16[batch, seq_major ? capacity : kv_heads, seq_major ? kv_heads : capacity, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_kv_cache_append_to_f16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                            int64_t capacity, int64_t head_dim, bool seq_major, const float *k_new,
                                            const float *v_new, const int32_t *positions, uint16_t *k_cache,
                                            uint16_t *v_cache);

/**
 * kb_attention_ex with float32 queries, mask and output over keys and values
 * stored as bfloat16 (a float32 model with a KV cache of half the bytes,
 * filled by kb_kv_cache_append_to_bf16): exactly kb_attention_ex on k and v
 * widened to float32 (widening is exact), the same bits for every thread
 * count and instruction set.  In decode (at most 16 query rows per key/value
 * head: heads / kv_heads * seq_q <= 16) K and V are read as stored, without
 * a float32 copy; otherwise they are widened into scratch memory first
 * (KB_STATUS_OUT_OF_MEMORY, before anything is written, when it cannot be
 * had).
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg q in f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @arg k in bf16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg v in bf16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg kv_lengths in i32[batch] nullable
 * @arg mask_batch dim
 * @arg mask_heads dim
 * @arg mask_q dim
 * @arg mask in f32[mask_batch, mask_heads, mask_q, seq_kv] nullable
 * @arg causal flag default(false)
 * @arg causal_bottom_right flag default(false)
 * @arg scale scalar default(0)
 * @arg out out f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_ex_kv_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                         int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q,
                                         const uint16_t *k, const uint16_t *v, const int32_t *kv_lengths,
                                         int64_t mask_batch, int64_t mask_heads, int64_t mask_q, const float *mask,
                                         bool causal, bool causal_bottom_right, float scale, float *out);

/**
 * kb_attention_ex with float32 queries, mask and output over keys and values
 * stored as float16 (IEEE binary16) (a float32 model with a KV cache of half the bytes,
 * filled by kb_kv_cache_append_to_f16): exactly kb_attention_ex on k and v
 * widened to float32 (widening is exact), the same bits for every thread
 * count and instruction set.  In decode (at most 16 query rows per key/value
 * head: heads / kv_heads * seq_q <= 16) K and V are read as stored, without
 * a float32 copy; otherwise they are widened into scratch memory first
 * (KB_STATUS_OUT_OF_MEMORY, before anything is written, when it cannot be
 * had).
 * @arg ctx context
 * @arg batch dim
 * @arg heads dim
 * @arg kv_heads dim
 * @arg seq_q dim
 * @arg seq_kv dim
 * @arg head_dim dim
 * @arg seq_major flag default(false)
 * @arg q in f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @arg k in f16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg v in f16[batch, seq_major ? seq_kv : kv_heads, seq_major ? kv_heads : seq_kv, head_dim]
 * @arg kv_lengths in i32[batch] nullable
 * @arg mask_batch dim
 * @arg mask_heads dim
 * @arg mask_q dim
 * @arg mask in f32[mask_batch, mask_heads, mask_q, seq_kv] nullable
 * @arg causal flag default(false)
 * @arg causal_bottom_right flag default(false)
 * @arg scale scalar default(0)
 * @arg out out f32[batch, seq_major ? seq_q : heads, seq_major ? heads : seq_q, head_dim]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_attention_ex_kv_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                         int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q,
                                         const uint16_t *k, const uint16_t *v, const int32_t *kv_lengths,
                                         int64_t mask_batch, int64_t mask_heads, int64_t mask_q, const float *mask,
                                         bool causal, bool causal_bottom_right, float scale, float *out);

/* ------------------------------------------------------------------------ */
/* GGUF files (docs/gguf.md).  A kb_gguf is a parsed, validated GGUF file
 * (versions 2 and 3, little-endian): its metadata keys and values and its
 * tensor infos; tensor data stays in the file (mapped read-only) and is
 * copied out by kb_gguf_tensor_read.  The file is untrusted input: every
 * count, length, offset and size is checked before it is used, and a bad
 * file fails kb_gguf_open with KB_STATUS_INVALID_ARGUMENT (or UNSUPPORTED for
 * a version, value type or tensor type this reader does not handle) and a
 * message naming the key or tensor and the problem.  A handle never changes
 * once open, so any number of threads may query it at once.  Keys and
 * tensors are addressed by index, in file order; kb_gguf_find_key and
 * kb_gguf_find_tensor look a name up. */

/**
 * An open GGUF file (kb_gguf_open, kb_gguf_open_memory); read-only.
 */
typedef struct kb_gguf kb_gguf;

/**
 * Type of a GGUF metadata value (kb_gguf_key_type, kb_gguf_array_type): the
 * numbers of the GGUF format.  Values are fixed and append-only.
 */
typedef enum kb_gguf_type {
  /** uint8_t. */
  KB_GGUF_TYPE_UINT8 = 0,
  /** int8_t. */
  KB_GGUF_TYPE_INT8 = 1,
  /** uint16_t. */
  KB_GGUF_TYPE_UINT16 = 2,
  /** int16_t. */
  KB_GGUF_TYPE_INT16 = 3,
  /** uint32_t. */
  KB_GGUF_TYPE_UINT32 = 4,
  /** int32_t. */
  KB_GGUF_TYPE_INT32 = 5,
  /** IEEE binary32. */
  KB_GGUF_TYPE_FLOAT32 = 6,
  /** One byte, 0 or 1. */
  KB_GGUF_TYPE_BOOL = 7,
  /** A string of bytes (UTF-8 by convention; may hold any byte). */
  KB_GGUF_TYPE_STRING = 8,
  /** An array of values of one type (kb_gguf_array_type). */
  KB_GGUF_TYPE_ARRAY = 9,
  /** uint64_t. */
  KB_GGUF_TYPE_UINT64 = 10,
  /** int64_t. */
  KB_GGUF_TYPE_INT64 = 11,
  /** IEEE binary64. */
  KB_GGUF_TYPE_FLOAT64 = 12
} kb_gguf_type;

/**
 * Opens and validates the GGUF file at path (see docs/gguf.md for every
 * check).  The file is mapped read-only (read into memory where it cannot be
 * mapped) and must not be changed while the handle is open.
 * @arg ctx context
 * @arg path in string
 * @arg out out handle kb_gguf
 * @destroy kb_gguf_destroy
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gguf_open(kb_context *ctx, const char *path, kb_gguf **out);

/**
 * Validates a GGUF file held in memory: data, `bytes` bytes long, is copied,
 * so it may be freed once this returns.  Same checks and errors as
 * kb_gguf_open.
 * @arg ctx context
 * @arg bytes dim
 * @arg data in u8[bytes]
 * @arg out out handle kb_gguf
 * @destroy kb_gguf_destroy
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gguf_open_memory(kb_context *ctx, int64_t bytes, const void *data, kb_gguf **out);

/**
 * Closes a GGUF file (unmaps it).  Accepts NULL.  No call may be using it.
 * @arg g handle nullable
 * @threadsafe no
 * @blocking yes
 */
KB_API void kb_gguf_destroy(kb_gguf *g);

/**
 * Version of the GGUF format of the file: 2 or 3.
 * @arg ctx context
 * @arg g handle
 * @arg version out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_version(kb_context *ctx, const kb_gguf *g, int64_t *version);

/**
 * Number of metadata keys.
 * @arg ctx context
 * @arg g handle
 * @arg count out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_key_count(kb_context *ctx, const kb_gguf *g, int64_t *count);

/**
 * Index of the metadata key named `key` (its exact bytes), or -1 when the
 * file has no such key (a success: KB_STATUS_OK with index -1).
 * @arg ctx context
 * @arg g handle
 * @arg key in string
 * @arg index out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_find_key(kb_context *ctx, const kb_gguf *g, const char *key, int64_t *index);

/**
 * Name of metadata key `index` (in [0, kb_gguf_key_count)), written with a
 * terminating NUL into name.  Fails with KB_STATUS_INVALID_ARGUMENT when
 * name_capacity is not larger than the name (never truncates); names hold no
 * NUL byte.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg name out string(name_capacity)
 * @arg name_capacity dim
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_key_name(kb_context *ctx, const kb_gguf *g, int64_t index, char *name, int64_t name_capacity);

/**
 * Type of the value of key `index`, a kb_gguf_type value.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg type out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_key_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type);

/**
 * Value of key `index` as an integer: any integer type, or BOOL (0 or 1).
 * Fails with KB_STATUS_INVALID_ARGUMENT naming the key when the value is
 * another type (a float, a string, an array) or a UINT64 above INT64_MAX.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg value out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_int64(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *value);

/**
 * Values of key `index` as float32: n must be 1 for a number (any integer
 * type, FLOAT32, FLOAT64, BOOL) and the array's length for an array of
 * numbers.  Integers are rounded to the nearest float32; a finite FLOAT64
 * outside the float32 range fails.  Fails with KB_STATUS_INVALID_ARGUMENT
 * naming the key for strings and arrays of strings, and with
 * KB_STATUS_SHAPE_MISMATCH when n is not the number of values.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg n dim
 * @arg values out f32[n]
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_f32(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n, float *values);

/**
 * Values of key `index` as int32: n must be 1 for an integer or BOOL and the
 * array's length for an array of them.  Fails with
 * KB_STATUS_INVALID_ARGUMENT naming the key (and the element) for floats,
 * strings and values outside the int32 range, and with
 * KB_STATUS_SHAPE_MISMATCH when n is not the number of values.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg n dim
 * @arg values out i32[n]
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_i32(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n, int32_t *values);

/**
 * Length in bytes of the STRING value of key `index` (no terminator).
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_string_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes);

/**
 * Copies the STRING value of key `index` into value, whose size `bytes` must
 * be its length (kb_gguf_string_bytes); no terminator is written.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes dim
 * @arg value out u8[bytes]
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_string(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes, void *value);

/**
 * Element type (a kb_gguf_type value, never ARRAY) of the ARRAY value of key
 * `index`.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg type out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_array_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type);

/**
 * Number of elements of the ARRAY value of key `index`.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg length out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_array_length(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *length);

/**
 * Total length in bytes of the strings of the array of strings of key
 * `index`: the size of the blob kb_gguf_get_string_array_data fills.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_string_array_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes);

/**
 * The strings of the array of strings of key `index`, one after the other
 * without separators, into blob (`bytes` = kb_gguf_string_array_bytes).
 * String i is blob[offsets[i], offsets[i + 1]) with the offsets of
 * kb_gguf_get_string_array_offsets: with tokenizer.ggml.scores and
 * tokenizer.ggml.token_type (kb_gguf_get_f32, kb_gguf_get_i32) this is a
 * vocabulary.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes dim
 * @arg blob out u8[bytes]
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_string_array_data(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes,
                                               void *blob);

/**
 * Where each string of the array of strings of key `index` starts in the
 * blob of kb_gguf_get_string_array_data: offsets[0] = 0, offsets[i + 1] =
 * offsets[i] + length of string i, so n_offsets must be the array's length
 * + 1.  Fails with KB_STATUS_UNSUPPORTED when the blob is 2^31 bytes or more.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg n_offsets dim
 * @arg offsets out i32[n_offsets]
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_get_string_array_offsets(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n_offsets,
                                                  int32_t *offsets);

/**
 * Number of tensors.
 * @arg ctx context
 * @arg g handle
 * @arg count out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_count(kb_context *ctx, const kb_gguf *g, int64_t *count);

/**
 * Index of the tensor named `name`, or -1 when the file has none (a success:
 * KB_STATUS_OK with index -1).
 * @arg ctx context
 * @arg g handle
 * @arg name in string
 * @arg index out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_find_tensor(kb_context *ctx, const kb_gguf *g, const char *name, int64_t *index);

/**
 * Name of tensor `index` (in [0, kb_gguf_tensor_count)), at most 63 bytes,
 * written with a terminating NUL into name; fails when name_capacity is not
 * larger than the name.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg name out string(name_capacity)
 * @arg name_capacity dim
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_name(kb_context *ctx, const kb_gguf *g, int64_t index, char *name,
                                     int64_t name_capacity);

/**
 * GGML type number of tensor `index`: a kb_dtype value for the types
 * kernels take (F32, F16, BF16, Q8_0, Q4_0), another GGML type (Q4_K, ...)
 * otherwise, which kb_gguf_tensor_read refuses.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg type out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type);

/**
 * Number of dimensions of tensor `index`: 1 to 4.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg n_dims out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_n_dims(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *n_dims);

/**
 * Size of axis `axis` (in [0, n_dims)) of tensor `index`, in row-major order
 * as kernels take shapes: axis n_dims - 1 is the innermost (contiguous) one,
 * which GGUF stores first (ne[0]).  A GGUF weight of ne = [in, out] is the
 * [out_features, in_features] matrix of kb_linear_w.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg axis scalar
 * @arg size out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_dim(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t axis, int64_t *size);

/**
 * Size in bytes of the data of tensor `index`.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes);

/**
 * Offset of the data of tensor `index` from the start of the file (aligned
 * to general.alignment), for callers that map the file themselves.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg offset out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_gguf_tensor_offset(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *offset);

/**
 * Copies the data of tensor `index` into data, whose size `bytes` must be
 * kb_gguf_tensor_bytes.  Fails with KB_STATUS_UNSUPPORTED naming the tensor
 * and its type when that is not a kb_dtype.
 * @arg ctx context
 * @arg g handle
 * @arg index scalar
 * @arg bytes dim
 * @arg data out u8[bytes]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_gguf_tensor_read(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes, void *data);

/* ------------------------------------------------------------------------ */
/* Tokenizer.  A SentencePiece-style ("llama") tokenizer: the vocabulary of a
 * GGUF file whose tokenizer.ggml.model is "llama", tokenized exactly as
 * llama.cpp's SPM tokenizer does (docs/tokenizer.md gives the algorithm, what
 * is validated and how to decode a stream of tokens).  A kb_tokenizer is
 * immutable once created: any number of threads may use one at once.  These
 * functions take no context: a failure's message is read with kb_last_error()
 * on the calling thread. */

/** Opaque tokenizer: a copy of a vocabulary and its lookup tables. */
typedef struct kb_tokenizer kb_tokenizer;

/**
 * Creates a tokenizer from a vocabulary of n_tokens tokens (> 0), as a GGUF
 * file stores it: token i's piece is the UTF-8 bytes
 * pieces[offsets[i], offsets[i + 1]) (n_offsets must be n_tokens + 1, the
 * offsets non-decreasing and within [0, pieces_bytes]), its score scores[i]
 * (not NaN) and its type types[i] (tokenizer.ggml.token_type: 0 undefined,
 * 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte; a byte
 * token's piece is <0xNN>).  Pieces must be valid UTF-8 and distinct (an
 * empty piece i stands for the text "[EMPTY_i]", as in llama.cpp).  bos_id,
 * eos_id and unk_id are token ids or -1 for none; add_bos needs a bos_id and
 * add_eos an eos_id (tokenizer.ggml.add_bos_token, add_eos_token and
 * add_space_prefix; llama defaults: true, false, true).  Everything is
 * copied: the arrays may be freed once this returns.  Errors name the
 * argument and the token: INVALID_ARGUMENT or SHAPE_MISMATCH (n_offsets),
 * OUT_OF_MEMORY.
 * @arg n_tokens dim
 * @arg pieces_bytes dim
 * @arg pieces in u8[pieces_bytes]
 * @arg n_offsets dim
 * @arg offsets in i32[n_offsets]
 * @arg scores in f32[n_tokens]
 * @arg types in i32[n_tokens]
 * @arg bos_id scalar
 * @arg eos_id scalar
 * @arg unk_id scalar
 * @arg add_bos flag default(true)
 * @arg add_eos flag default(false)
 * @arg add_space_prefix flag default(true)
 * @arg out out handle kb_tokenizer
 * @destroy kb_tokenizer_destroy
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_tokenizer_create(int64_t n_tokens, int64_t pieces_bytes, const void *pieces, int64_t n_offsets,
                                     const int32_t *offsets, const float *scores, const int32_t *types, int64_t bos_id,
                                     int64_t eos_id, int64_t unk_id, bool add_bos, bool add_eos,
                                     bool add_space_prefix, kb_tokenizer **out);

/**
 * Destroys a tokenizer.  Accepts NULL.  No call may be using it.
 * @arg tok handle nullable
 * @threadsafe no
 * @blocking no
 */
KB_API void kb_tokenizer_destroy(kb_tokenizer *tok);

/**
 * Number of tokens in the vocabulary (ids are 0 .. n_tokens - 1).
 * @arg tok handle
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_tokenizer_n_tokens(const kb_tokenizer *tok);

/**
 * Id of the beginning-of-sequence token; -1 when the vocabulary has none.
 * @arg tok handle
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_tokenizer_bos(const kb_tokenizer *tok);

/**
 * Id of the end-of-sequence token; -1 when the vocabulary has none.
 * @arg tok handle
 * @threadsafe yes
 * @blocking no
 */
KB_API int64_t kb_tokenizer_eos(const kb_tokenizer *tok);

/**
 * Tokenizes text_bytes bytes of UTF-8 text as llama.cpp's llama_tokenize
 * does: user-defined tokens found in the text become their ids (control and
 * unknown tokens too with parse_special), the rest is split into pieces by
 * score, and bytes no piece covers become byte tokens <0xNN> (or unk_id when
 * the vocabulary has no such token; the call fails naming the byte when it
 * has neither).  With add_special, the BOS (add_bos) and EOS (add_eos) tokens
 * of the vocabulary are added.  Text that is not valid UTF-8 is accepted and
 * split as llama.cpp splits it (a lead byte's sequence length, cut at the
 * end), so every byte sequence has tokens.  Sets *count to the number of
 * tokens; they are written to ids only when *count <= capacity, else nothing
 * is written (capacity 0 with ids NULL asks for the count alone; the count
 * never exceeds 4 * text_bytes + 5).
 * @arg tok handle
 * @arg text_bytes dim
 * @arg text in u8[text_bytes]
 * @arg add_special flag default(true)
 * @arg parse_special flag default(false)
 * @arg capacity dim
 * @arg ids out i32[capacity]
 * @arg count out scalar
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_tokenize(const kb_tokenizer *tok, int64_t text_bytes, const void *text, bool add_special,
                             bool parse_special, int64_t capacity, int32_t *ids, int64_t *count);

/**
 * The bytes token id stands for, as llama.cpp's llama_token_to_piece: a
 * normal token's piece with U+2581 replaced by a space, a byte token's one
 * byte, a user-defined token's piece; control and unknown tokens give their
 * piece with special and nothing without; unused and undefined tokens give
 * nothing.  A byte token may be part of a UTF-8 sequence: a caller that
 * streams text keeps incomplete sequences until the next pieces complete
 * them (docs/tokenizer.md).  Sets *bytes to the piece's length; the piece is
 * written only when *bytes <= capacity, else nothing is written.
 * @arg tok handle
 * @arg id scalar
 * @arg special flag default(false)
 * @arg capacity dim
 * @arg piece out u8[capacity]
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_tokenizer_piece(const kb_tokenizer *tok, int64_t id, bool special, int64_t capacity, void *piece,
                                    int64_t *bytes);

/**
 * Text of n_ids tokens, as llama.cpp's llama_detokenize: the pieces of
 * kb_tokenizer_piece (special as unparse_special) concatenated, with one
 * leading space removed from the first piece when the vocabulary adds a
 * space prefix; remove_special drops a leading BOS (add_bos) and a trailing
 * EOS (add_eos) first, and then keeps the space.  So decoding the tokens of
 * text t made without add_special gives t back, unless t contains U+2581,
 * special tokens or bytes that became the unknown token.  Sets
 * *bytes to the text's length; the text is written only when
 * *bytes <= capacity, else nothing is written.
 * @arg tok handle
 * @arg n_ids dim
 * @arg ids in i32[n_ids]
 * @arg remove_special flag default(false)
 * @arg unparse_special flag default(false)
 * @arg capacity dim
 * @arg text out u8[capacity]
 * @arg bytes out scalar
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_detokenize(const kb_tokenizer *tok, int64_t n_ids, const int32_t *ids, bool remove_special,
                               bool unparse_special, int64_t capacity, void *text, int64_t *bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KERNELBRIDGE_H */
