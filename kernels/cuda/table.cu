/* table.cu - the kbcuda_table and the library's only exported symbol,
 * kbcuda_get_table.  Each kernel entry makes the ctx's device current,
 * refuses a lost ctx, calls the launcher on the ctx's stream and translates
 * the CUDA error (runtime.cu). */
#include <pthread.h>
#include <stdio.h>

#include "kbcuda_runtime.cuh"
#include "kernelbridge.h"

/* The status values of kbcuda_api.h are the public ones. */
static_assert(KBCUDA_STATUS_OK == (int)KB_STATUS_OK, "status values");
static_assert(KBCUDA_STATUS_INVALID_ARGUMENT == (int)KB_STATUS_INVALID_ARGUMENT, "status values");
static_assert(KBCUDA_STATUS_SHAPE_MISMATCH == (int)KB_STATUS_SHAPE_MISMATCH, "status values");
static_assert(KBCUDA_STATUS_UNSUPPORTED == (int)KB_STATUS_UNSUPPORTED, "status values");
static_assert(KBCUDA_STATUS_OUT_OF_MEMORY == (int)KB_STATUS_OUT_OF_MEMORY, "status values");
static_assert(KBCUDA_STATUS_BACKEND_UNAVAILABLE == (int)KB_STATUS_BACKEND_UNAVAILABLE, "status values");
static_assert(KBCUDA_STATUS_DEVICE_ERROR == (int)KB_STATUS_DEVICE_ERROR, "status values");
static_assert(KBCUDA_STATUS_INTERNAL == (int)KB_STATUS_INTERNAL, "status values");
static_assert(KBCUDA_STATUS_DEVICE_LOST == (int)KB_STATUS_DEVICE_LOST, "status values");

#define KBCUDA_ENTRY(call)                                         \
  do {                                                             \
    kbcuda_status s_ = kbcuda_enter(c, fn);                        \
    if (s_ != KBCUDA_STATUS_OK) return s_;                         \
    return kbcuda_leave(c, fn, "the kernel launch", (call));       \
  } while (0)

static const char *build_info(void) {
  return "kernelbridge CUDA backend: CUDA runtime " KBCUDA_STR(CUDART_VERSION) " (static), sm_80 sm_90 compute_90";
}

static void *ctx_stream(const kbcuda_ctx *c) { return (void *)c->stream; }
static int32_t ctx_device(const kbcuda_ctx *c) { return c->device; }
static const char *ctx_message(const kbcuda_ctx *c) { return c->message; }
static int32_t ctx_lost(const kbcuda_ctx *c) { return c->lost; }
static int32_t ctx_last_gemm_impl(const kbcuda_ctx *c) { return c->last_gemm_impl; }
static kbcuda_status ctx_set_gemm_impl(kbcuda_ctx *c, int32_t impl) {
  c->message[0] = '\0';
  if (impl != KBCUDA_GEMM_AUTO && impl != KBCUDA_GEMM_CUBLASLT && impl != KBCUDA_GEMM_TILED) {
    kbcuda_msg(c->message, sizeof c->message, "unknown gemm implementation %d", (int)impl);
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  c->gemm_impl = impl;
  return KBCUDA_STATUS_OK;
}

/* ---- validation ---- */

static kbcuda_status validate_index(kbcuda_ctx *c, const char *fn, int64_t n, const int32_t *values, int64_t lo,
                                    int64_t hi, int32_t has_ignore, int32_t ignore, int64_t *first_bad,
                                    int32_t *bad_value) {
  KBCUDA_ENTRY(kbcuda_validate_index(n, values, lo, hi, has_ignore != 0, ignore, first_bad, bad_value, c->stream));
}
static kbcuda_status validate_logits(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                     int64_t *first_bad_row, int32_t *reason) {
  KBCUDA_ENTRY(kbcuda_validate_logits(rows, cols, logits, first_bad_row, reason, c->stream));
}

/* ---- float32 kernels ---- */

static kbcuda_status silu(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_unary(KBCUDA_OP_SILU, KBCUDA_F32, n, x, y, c->stream));
}
static kbcuda_status gelu(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_unary(KBCUDA_OP_GELU, KBCUDA_F32, n, x, y, c->stream));
}
static kbcuda_status gelu_tanh(kbcuda_ctx *c, const char *fn, int64_t n, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_unary(KBCUDA_OP_GELU_TANH, KBCUDA_F32, n, x, y, c->stream));
}
static kbcuda_status add(kbcuda_ctx *c, const char *fn, int64_t n, const float *a, const float *b, float *y) {
  KBCUDA_ENTRY(kbcuda_binary(KBCUDA_OP_ADD, KBCUDA_F32, n, a, b, y, c->stream));
}
static kbcuda_status mul(kbcuda_ctx *c, const char *fn, int64_t n, const float *a, const float *b, float *y) {
  KBCUDA_ENTRY(kbcuda_binary(KBCUDA_OP_MUL, KBCUDA_F32, n, a, b, y, c->stream));
}
static kbcuda_status scale(kbcuda_ctx *c, const char *fn, int64_t n, float alpha, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_scale(KBCUDA_F32, n, alpha, x, y, c->stream));
}
static kbcuda_status add_bias(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                              const float *bias, float *y) {
  KBCUDA_ENTRY(kbcuda_add_bias(KBCUDA_F32, rows, cols, x, bias, y, c->stream));
}
static kbcuda_status softmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_softmax(KBCUDA_F32, false, rows, cols, x, y, c->stream));
}
static kbcuda_status log_softmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x, float *y) {
  KBCUDA_ENTRY(kbcuda_softmax(KBCUDA_F32, true, rows, cols, x, y, c->stream));
}
static kbcuda_status rmsnorm(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                             const float *weight, float eps, float *y) {
  KBCUDA_ENTRY(kbcuda_rmsnorm(KBCUDA_F32, rows, cols, x, weight, eps, y, c->stream));
}
static kbcuda_status layernorm(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x,
                               const float *weight, const float *bias, float eps, float *y) {
  KBCUDA_ENTRY(kbcuda_layernorm(KBCUDA_F32, rows, cols, x, weight, bias, eps, y, c->stream));
}

static kbcuda_status gemm_any(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int32_t trans_a, int32_t trans_b,
                              int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                              int64_t ldb, float beta, void *cc, int64_t ldc) {
  kbcuda_status s = kbcuda_enter(c, fn);
  if (s != KBCUDA_STATUS_OK) return s;
  char why[160] = "";
  struct kbcuda_gemm_env env = {c->gemm_impl, &c->lt_handle, &c->lt_workspace, &c->lt_workspace_bytes,
                                KBCUDA_GEMM_AUTO, why, sizeof why};
  cudaError_t e = kbcuda_gemm(&env, dt, trans_a != 0, trans_b != 0, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc,
                              c->stream);
  if (e == cudaErrorNotSupported && c->gemm_impl == KBCUDA_GEMM_CUBLASLT) {
    (void)cudaGetLastError();
    kbcuda_msg(c->message, sizeof c->message, "%s: cuBLASLt was required but cannot run this gemm: %s", fn, why);
    return KBCUDA_STATUS_UNSUPPORTED;
  }
  if (e == cudaSuccess) c->last_gemm_impl = env.used;
  return kbcuda_leave(c, fn, env.used == KBCUDA_GEMM_CUBLASLT ? "cublasLtMatmul" : "the kernel launch", e);
}

static kbcuda_status gemm(kbcuda_ctx *c, const char *fn, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                          int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *cc, int64_t ldc) {
  return gemm_any(c, fn, KBCUDA_F32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
}
static kbcuda_status embedding(kbcuda_ctx *c, const char *fn, int64_t n_ids, int64_t vocab, int64_t dim,
                               const int32_t *ids, const float *table, float *out) {
  (void)vocab;
  KBCUDA_ENTRY(kbcuda_embedding(n_ids, dim, ids, table, out, c->stream));
}
static kbcuda_status rope(kbcuda_ctx *c, const char *fn, int64_t seq, int64_t heads, int64_t head_dim, const float *x,
                          const int32_t *positions, float theta, float *y) {
  KBCUDA_ENTRY(kbcuda_rope(seq, heads, head_dim, x, positions, theta, y, c->stream));
}
static kbcuda_status attention(kbcuda_ctx *c, const char *fn, int64_t batch, int64_t heads, int64_t kv_heads,
                               int64_t seq_q, int64_t seq_kv, int64_t head_dim, const float *q, const float *k,
                               const float *v, int32_t causal, float sc, float *out) {
  KBCUDA_ENTRY(kbcuda_attention(KBCUDA_F32, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, causal != 0, sc,
                                out, c->stream));
}
static kbcuda_status cross_entropy(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t classes, const float *logits,
                                   const int32_t *targets, int32_t ignore_index, float *losses, float *mean_loss) {
  KBCUDA_ENTRY(kbcuda_cross_entropy(rows, classes, logits, targets, ignore_index, losses, mean_loss, c->stream));
}
static kbcuda_status cross_entropy_backward(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t classes,
                                            const float *logits, const int32_t *targets, int32_t ignore_index,
                                            float dloss, float *dlogits) {
  KBCUDA_ENTRY(kbcuda_cross_entropy_backward(rows, classes, logits, targets, ignore_index, dloss, dlogits, c->stream));
}
static kbcuda_status adamw_step(kbcuda_ctx *c, const char *fn, int64_t n, float *params, const float *grads, float *m,
                                float *v, float lr, float beta1, float beta2, float eps, float weight_decay,
                                int64_t step) {
  KBCUDA_ENTRY(kbcuda_adamw_step(n, params, grads, m, v, lr, beta1, beta2, eps, weight_decay, step, c->stream));
}
static kbcuda_status argmax(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *x, int32_t *out) {
  KBCUDA_ENTRY(kbcuda_argmax(rows, cols, x, out, c->stream));
}
static kbcuda_status sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                            float temperature, uint64_t seed, int32_t *out) {
  KBCUDA_ENTRY(kbcuda_sample(0, rows, cols, logits, 1, 1.0f, temperature, seed, out, c->stream));
}
static kbcuda_status topk_sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                 int64_t k, float temperature, uint64_t seed, int32_t *out) {
  KBCUDA_ENTRY(kbcuda_sample(1, rows, cols, logits, k, 1.0f, temperature, seed, out, c->stream));
}
static kbcuda_status topp_sample(kbcuda_ctx *c, const char *fn, int64_t rows, int64_t cols, const float *logits,
                                 float p, float temperature, uint64_t seed, int32_t *out) {
  KBCUDA_ENTRY(kbcuda_sample(2, rows, cols, logits, 1, p, temperature, seed, out, c->stream));
}

/* ---- dtype variants ---- */

static kbcuda_status bad_dtype(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt) {
  c->message[0] = '\0';
  if (dt == KBCUDA_F32 || dt == KBCUDA_BF16 || dt == KBCUDA_F16) return KBCUDA_STATUS_OK;
  kbcuda_msg(c->message, sizeof c->message, "%s: unknown dtype %d", fn, (int)dt);
  return KBCUDA_STATUS_INVALID_ARGUMENT;
}

#define KBCUDA_DT_ENTRY(call)                              \
  do {                                                     \
    kbcuda_status d_ = bad_dtype(c, fn, dt);               \
    if (d_ != KBCUDA_STATUS_OK) return d_;                 \
    KBCUDA_ENTRY(call);                                    \
  } while (0)

static kbcuda_status unary_dt(kbcuda_ctx *c, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *x,
                              void *y) {
  if (op != KBCUDA_OP_SILU && op != KBCUDA_OP_GELU && op != KBCUDA_OP_GELU_TANH) {
    kbcuda_msg(c->message, sizeof c->message, "%s: unknown unary op %d", fn, (int)op);
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  KBCUDA_DT_ENTRY(kbcuda_unary(op, dt, n, x, y, c->stream));
}
static kbcuda_status binary_dt(kbcuda_ctx *c, const char *fn, int32_t op, kbcuda_dtype dt, int64_t n, const void *a,
                               const void *b, void *y) {
  if (op != KBCUDA_OP_ADD && op != KBCUDA_OP_MUL) {
    kbcuda_msg(c->message, sizeof c->message, "%s: unknown binary op %d", fn, (int)op);
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  KBCUDA_DT_ENTRY(kbcuda_binary(op, dt, n, a, b, y, c->stream));
}
static kbcuda_status scale_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t n, float alpha, const void *x,
                              void *y) {
  KBCUDA_DT_ENTRY(kbcuda_scale(dt, n, alpha, x, y, c->stream));
}
static kbcuda_status add_bias_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                 const void *x, const void *bias, void *y) {
  KBCUDA_DT_ENTRY(kbcuda_add_bias(dt, rows, cols, x, bias, y, c->stream));
}
static kbcuda_status softmax_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int32_t log, int64_t rows,
                                int64_t cols, const void *x, void *y) {
  KBCUDA_DT_ENTRY(kbcuda_softmax(dt, log != 0, rows, cols, x, y, c->stream));
}
static kbcuda_status rmsnorm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                const void *x, const void *weight, float eps, void *y) {
  KBCUDA_DT_ENTRY(kbcuda_rmsnorm(dt, rows, cols, x, weight, eps, y, c->stream));
}
static kbcuda_status layernorm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t rows, int64_t cols,
                                  const void *x, const void *weight, const void *bias, float eps, void *y) {
  KBCUDA_DT_ENTRY(kbcuda_layernorm(dt, rows, cols, x, weight, bias, eps, y, c->stream));
}
static kbcuda_status gemm_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int32_t trans_a, int32_t trans_b,
                             int64_t m, int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                             int64_t ldb, float beta, void *cc, int64_t ldc) {
  kbcuda_status d = bad_dtype(c, fn, dt);
  if (d != KBCUDA_STATUS_OK) return d;
  return gemm_any(c, fn, dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
}
static kbcuda_status attention_dt(kbcuda_ctx *c, const char *fn, kbcuda_dtype dt, int64_t batch, int64_t heads,
                                  int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const void *q,
                                  const void *k, const void *v, int32_t causal, float sc, void *out) {
  KBCUDA_DT_ENTRY(kbcuda_attention(dt, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, causal != 0, sc, out,
                                   c->stream));
}

/* ---- the table ---- */

static struct kbcuda_table g_table;
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

static void fill_table(void) {
  struct kbcuda_table *t = &g_table;
  t->abi_version = KBCUDA_ABI_VERSION;
  t->struct_size = (uint32_t)sizeof *t;
  t->build_info = build_info;
  t->device_count = kbcuda_device_count;
  t->device_info = kbcuda_device_info;
  t->device_memory = kbcuda_device_memory;
  t->versions = kbcuda_versions;
  t->ctx_create = kbcuda_ctx_create;
  t->ctx_destroy = kbcuda_ctx_destroy;
  t->ctx_synchronize = kbcuda_ctx_synchronize;
  t->ctx_stream = ctx_stream;
  t->ctx_device = ctx_device;
  t->ctx_message = ctx_message;
  t->ctx_lost = ctx_lost;
  t->ctx_set_gemm_impl = ctx_set_gemm_impl;
  t->ctx_last_gemm_impl = ctx_last_gemm_impl;
  t->dev_malloc = kbcuda_dev_malloc;
  t->dev_free = kbcuda_dev_free;
  t->memcpy_h2d = kbcuda_memcpy_h2d;
  t->memcpy_d2h = kbcuda_memcpy_d2h;
  t->memcpy_d2d = kbcuda_memcpy_d2d;
  t->dev_memset = kbcuda_dev_memset;
  t->pointer_kind = kbcuda_pointer_kind;
  t->validate_index = validate_index;
  t->validate_logits = validate_logits;
  t->silu = silu;
  t->gelu = gelu;
  t->gelu_tanh = gelu_tanh;
  t->add = add;
  t->mul = mul;
  t->scale = scale;
  t->add_bias = add_bias;
  t->softmax = softmax;
  t->log_softmax = log_softmax;
  t->rmsnorm = rmsnorm;
  t->layernorm = layernorm;
  t->gemm = gemm;
  t->embedding = embedding;
  t->rope = rope;
  t->attention = attention;
  t->cross_entropy = cross_entropy;
  t->cross_entropy_backward = cross_entropy_backward;
  t->adamw_step = adamw_step;
  t->argmax = argmax;
  t->sample = sample;
  t->topk_sample = topk_sample;
  t->topp_sample = topp_sample;
  t->unary_dt = unary_dt;
  t->binary_dt = binary_dt;
  t->scale_dt = scale_dt;
  t->add_bias_dt = add_bias_dt;
  t->softmax_dt = softmax_dt;
  t->rmsnorm_dt = rmsnorm_dt;
  t->layernorm_dt = layernorm_dt;
  t->gemm_dt = gemm_dt;
  t->attention_dt = attention_dt;
  /* appended after ABI version 1's first table */
  t->dev_free_on_device = kbcuda_dev_free_on_device;
}

/* No CUDA call happens here: getting the table works without a driver, and
 * device_count then says why CUDA cannot be used. */
extern "C" __attribute__((visibility("default"))) const struct kbcuda_table *kbcuda_get_table(uint32_t abi_version) {
  if (abi_version != KBCUDA_ABI_VERSION) return NULL;
  pthread_once(&g_table_once, fill_table);
  return &g_table;
}
