/* activation.c - the one-input activations silu, gelu and gelu_tanh, in
 * float32 and in bf16 / f16 storage.
 *
 * The arithmetic is the vector layer's (vec_kernels.h, vec_body.h): float32
 * with error-free corrections where a rounding would show, all three within
 * 1.6 ulp of the exact value over every float input (docs/kernels.md,
 * "Vector math").  16-bit inputs
 * are widened and results narrowed in registers, so no scratch memory is
 * needed.  Each element depends only on its own input, so splitting over
 * threads cannot change any result. */
#include "dispatch.h"
#include "internal.h"
#include "reduced.h"

/* Elements per thread below which starting a thread costs more than it saves. */
#define KB_EW_MIN_CHUNK 16384

struct unary_job {
  const struct kb_vec_ops *ops;
  int fn, dt;
  const char *x;
  char *y;
};

static void unary_body(void *arg, int64_t begin, int64_t end) {
  const struct unary_job *job = (const struct unary_job *)arg;
  int64_t es = kb_vec_size(job->dt);
  job->ops->unary(job->fn, job->dt, end - begin, job->x + begin * es, job->y + begin * es);
}

/* The math layer's function for a CUDA op number. */
static int vm_fn(int op) {
  return op == KBCUDA_OP_GELU ? KB_VM_GELU : op == KBCUDA_OP_GELU_TANH ? KB_VM_GELU_TANH : KB_VM_SILU;
}

static void unary_compute(const kb_context *ctx, int op, int dt, int64_t count, const void *x, void *y) {
  struct unary_job job = {&kb__cpu_ops()->vec, vm_fn(op), dt, (const char *)x, (char *)y};
  kb__parallel_for(ctx, count, KB_EW_MIN_CHUNK, unary_body, &job);
}

/* Validation of every activation entry point; elem is the element size (4
 * for float32, 2 for bf16 / f16).  Ends with the memory-kind check. */
static kb_status unary_check(kb_context *ctx, const char *fn, int64_t elem, int64_t n, const void *x, const void *y,
                             int64_t *count) {
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__count(ctx, fn, "x", elem, 1, &n, count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, *count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, *count));
  int64_t bytes = *count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"y", y, bytes}};
  return kb__check_memory(ctx, fn, 2, refs);
}

static kbcuda_status cuda_unary(kb_context *ctx, const char *fn, int op, int64_t n, const float *x, float *y) {
  const struct kbcuda_table *t = ctx->cuda;
  switch (op) {
    case KBCUDA_OP_GELU:
      return t->gelu(ctx->cuda_ctx, fn, n, x, y);
    case KBCUDA_OP_GELU_TANH:
      return t->gelu_tanh(ctx->cuda_ctx, fn, n, x, y);
    default:
      return t->silu(ctx->cuda_ctx, fn, n, x, y);
  }
}

static kb_status unary(kb_context *ctx, const char *fn, int op, int64_t n, const float *x, float *y) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(unary_check(ctx, fn, (int64_t)sizeof(float), n, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, cuda_unary(ctx, fn, op, n, x, y));
  unary_compute(ctx, op, KB_VEC_F32, count, x, y);
  return KB_STATUS_OK;
}

/* bf16 / f16: each element widened, the float32 activation, rounded once
 * into y (which may be x: an element is read before it is written). */
static kb_status unary_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int op, int64_t n, const uint16_t *x,
                          uint16_t *y) {
  KB_BEGIN(ctx, fn);
  int64_t count;
  KB_TRY(unary_check(ctx, fn, KB_HALF_SIZE, n, x, y, &count));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->unary_dt(ctx->cuda_ctx, fn, op, dt, n, x, y));
  unary_compute(ctx, op, kb_vec_dt_of(dt), count, x, y);
  return KB_STATUS_OK;
}

kb_status kb_silu(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_silu", KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_gelu(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_gelu", KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_tanh(kb_context *ctx, int64_t n, const float *x, float *y) {
  return unary(ctx, "kb_gelu_tanh", KBCUDA_OP_GELU_TANH, n, x, y);
}

kb_status kb_silu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_silu_bf16", KBCUDA_BF16, KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_silu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_silu_f16", KBCUDA_F16, KBCUDA_OP_SILU, n, x, y);
}

kb_status kb_gelu_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_bf16", KBCUDA_BF16, KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_f16", KBCUDA_F16, KBCUDA_OP_GELU, n, x, y);
}

kb_status kb_gelu_tanh_bf16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_tanh_bf16", KBCUDA_BF16, KBCUDA_OP_GELU_TANH, n, x, y);
}

kb_status kb_gelu_tanh_f16(kb_context *ctx, int64_t n, const uint16_t *x, uint16_t *y) {
  return unary_dt(ctx, "kb_gelu_tanh_f16", KBCUDA_F16, KBCUDA_OP_GELU_TANH, n, x, y);
}
