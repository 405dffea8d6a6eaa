/* argmax.c - index of the largest element of each row.
 *
 * Ties go to the first index; NaN counts as larger than every number, so the
 * first NaN of a row wins (torch.argmax).  -0.0 and +0.0 compare equal and
 * tie.  The scan is the vector layer's (vec_body.h): 16 lanes each keep the
 * first maximum of their columns, combined by the same rule.
 *
 * kb_argmax_bf16 / _f16 widen a block of a row at a time (exact) into a
 * buffer on the stack, scan it with the same vector kernel and combine the
 * blocks' winners in column order by the same rule; the rule defines one
 * index per row, so the result is kb_argmax's on the widened row without a
 * widened copy of the logits. */
#include <math.h>

#include "dispatch.h"
#include "internal.h"
#include "reduced.h"
#include "rowwise.h"

/* Columns widened per step of the 16-bit variants (16 KiB of stack). */
#define KB_ARGMAX_BLOCK 4096

struct argmax_job {
  const struct kb_vec_ops *ops;
  int dt; /* KB_VEC_F32, KB_VEC_BF16 or KB_VEC_F16 */
  int64_t cols;
  const void *x;
  int32_t *out;
};

/* The index of one 16-bit row: block winners combined in column order, a
 * later block winning only with NaN over a number or a strictly larger
 * number (so the first NaN, else the first maximum, as within a block). */
static int32_t argmax_row_16(const struct kb_vec_ops *ops, int dt, int64_t cols, const uint16_t *x) {
  float w[KB_ARGMAX_BLOCK];
  float best = 0.0f;
  int64_t best_at = 0;
  for (int64_t b = 0; b < cols; b += KB_ARGMAX_BLOCK) {
    int64_t n = cols - b < KB_ARGMAX_BLOCK ? cols - b : KB_ARGMAX_BLOCK;
    int32_t j;
    ops->convert(dt, 0, n, x + b, w);
    ops->argmax(1, n, w, &j);
    float v = w[j];
    if (b == 0 || (!isnan(best) && (isnan(v) || v > best))) {
      best = v;
      best_at = b + j;
    }
  }
  return (int32_t)best_at;
}

static void argmax_body(void *arg, int64_t begin, int64_t end) {
  const struct argmax_job *j = (const struct argmax_job *)arg;
  if (j->dt == KB_VEC_F32) {
    j->ops->argmax(end - begin, j->cols, (const float *)j->x + begin * j->cols, j->out + begin);
    return;
  }
  for (int64_t r = begin; r < end; r++)
    j->out[r] = argmax_row_16(j->ops, j->dt, j->cols, (const uint16_t *)j->x + r * j->cols);
}

/* elem: 4 (float32) or 2 (dt says which 16-bit format). */
static kb_status run(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t cols, const void *x,
                     int32_t *out) {
  int64_t elem = dt == KB_VEC_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  if (cols > INT32_MAX)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cols must be <= %ld (indices are int32), got %lld",
                    (long)INT32_MAX, (long long)cols);
  int64_t dims[2] = {rows, cols}, count, out_count;
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, dims, &count));
  KB_TRY(kb__count(ctx, fn, "out", (int64_t)sizeof(int32_t), 1, &rows, &out_count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, out_count));
  int64_t ob = out_count * (int64_t)sizeof(int32_t), xb = count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "x", x, xb, false));
  const struct kb_mem_ref refs[] = {{"x", x, xb}, {"out", out, ob}};
  KB_TRY(kb__check_memory(ctx, fn, 2, refs));
  if (kb__on_cuda(ctx)) {
    if (dt != KB_VEC_F32)
      return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
    return kb__cuda_finish(ctx, fn, ctx->cuda->argmax(ctx->cuda_ctx, fn, rows, cols, (const float *)x, out));
  }
  if (count == 0) return KB_STATUS_OK;
  struct argmax_job job = {&kb__cpu_ops()->vec, dt, cols, x, out};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), argmax_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_argmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, int32_t *out) {
  return run(ctx, "kb_argmax", KB_VEC_F32, rows, cols, x, out);
}

kb_status kb_argmax_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, int32_t *out) {
  return run(ctx, "kb_argmax_bf16", KB_VEC_BF16, rows, cols, x, out);
}

kb_status kb_argmax_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, int32_t *out) {
  return run(ctx, "kb_argmax_f16", KB_VEC_F16, rows, cols, x, out);
}
