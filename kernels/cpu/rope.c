/* rope.c - rotary position embedding, half-rotation (GPT-NeoX / Llama)
 * convention, on x of shape [seq, heads, head_dim].
 *
 * For position p and pair i < h = head_dim / 2 the angle is
 * p * theta^(-2i / head_dim), with the exponent -(double)(2i) / head_dim and
 * pow (once per call and i), the product, and cos/sin in double (the vector
 * layer's, vec_body.h: within a few double ulps).  The angles of a position
 * are shared by all its heads.  Each output pair is computed in double from
 * the two inputs of its pair and rounded once; both inputs are read before
 * either output is written, so y may be x. */
#include <math.h>

#include "dispatch.h"
#include "internal.h"

/* Elements per thread below which a thread is not worth starting. */
#define KB_ROPE_MIN_ELEMS 16384

struct rope_job {
  const struct kb_vec_ops *ops;
  int64_t heads, head_dim;
  const float *x;
  const int32_t *positions;
  double theta;
  float *y;
};

static void rope_body(void *arg, int64_t begin, int64_t end) {
  const struct rope_job *j = (const struct rope_job *)arg;
  j->ops->rope(begin, end, j->heads, j->head_dim, j->x, j->positions, j->theta, j->y);
}

/* The message of a negative position, shared by the CPU and CUDA paths. */
static kb_status bad_position(kb_context *ctx, const char *fn, int64_t s, int32_t position) {
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "positions[%lld] must be >= 0, got %ld", (long long)s,
                  (long)position);
}

kb_status kb_rope(kb_context *ctx, int64_t seq, int64_t heads, int64_t head_dim, const float *x,
                  const int32_t *positions, float theta, float *y) {
  static const char fn[] = "kb_rope";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "seq", seq));
  KB_TRY(kb__check_dim(ctx, fn, "heads", heads));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", head_dim));
  if (head_dim % 2 != 0)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "head_dim must be even, got %lld", (long long)head_dim);
  int64_t dims[3] = {seq, heads, head_dim}, count, pos_count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 3, dims, &count));
  KB_TRY(kb__count(ctx, fn, "positions", (int64_t)sizeof(int32_t), 1, &seq, &pos_count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "positions", positions, pos_count));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, count));
  if (!isfinite(theta) || theta <= 0.0f)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "theta must be finite and > 0, got %g", (double)theta);
  int64_t bytes = count * (int64_t)sizeof(float), pos_bytes = pos_count * (int64_t)sizeof(int32_t);
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, bytes, true));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "positions", positions, pos_bytes, false));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"positions", positions, pos_bytes}, {"y", y, bytes}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx)) {
    /* The device finds the first negative position (the host cannot read
     * device memory): [0, INT32_MAX] is every int32 >= 0. */
    if (seq > 0) {
      int64_t bad;
      int32_t value;
      kbcuda_status st = ctx->cuda->validate_index(ctx->cuda_ctx, fn, seq, positions, 0, (int64_t)INT32_MAX + 1, 0, 0,
                                                   &bad, &value);
      if (st != KBCUDA_STATUS_OK) return kb__cuda_finish(ctx, fn, st);
      if (bad >= 0) return bad_position(ctx, fn, bad, value);
    }
    return kb__cuda_finish(ctx, fn, ctx->cuda->rope(ctx->cuda_ctx, fn, seq, heads, head_dim, x, positions, theta, y));
  }
  for (int64_t s = 0; s < seq; s++) {
    if (positions[s] < 0) return bad_position(ctx, fn, s, positions[s]);
  }
  if (count == 0) return KB_STATUS_OK;
  struct rope_job job = {&kb__cpu_ops()->vec, heads, head_dim, x, positions, (double)theta, y};
  kb__parallel_for(ctx, seq, KB_ROPE_MIN_ELEMS / (heads * head_dim) + 1, rope_body, &job);
  return KB_STATUS_OK;
}
