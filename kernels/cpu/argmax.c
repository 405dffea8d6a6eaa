/* argmax.c - index of the largest element of each row.
 *
 * Ties go to the first index; NaN counts as larger than every number, so the
 * first NaN of a row wins (torch.argmax).  -0.0 and +0.0 compare equal and
 * tie.  The scan is the vector layer's (vec_body.h): 16 lanes each keep the
 * first maximum of their columns, combined by the same rule. */
#include "dispatch.h"
#include "internal.h"
#include "rowwise.h"

struct argmax_job {
  const struct kb_vec_ops *ops;
  int64_t cols;
  const float *x;
  int32_t *out;
};

static void argmax_body(void *arg, int64_t begin, int64_t end) {
  const struct argmax_job *j = (const struct argmax_job *)arg;
  j->ops->argmax(end - begin, j->cols, j->x + begin * j->cols, j->out + begin);
}

kb_status kb_argmax(kb_context *ctx, int64_t rows, int64_t cols, const float *x, int32_t *out) {
  static const char fn[] = "kb_argmax";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  if (cols > INT32_MAX)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cols must be <= %ld (indices are int32), got %lld",
                    (long)INT32_MAX, (long long)cols);
  int64_t dims[2] = {rows, cols}, count, out_count;
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 2, dims, &count));
  KB_TRY(kb__count(ctx, fn, "out", (int64_t)sizeof(int32_t), 1, &rows, &out_count));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, out_count));
  int64_t ob = out_count * (int64_t)sizeof(int32_t), xb = count * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "x", x, xb, false));
  const struct kb_mem_ref refs[] = {{"x", x, xb}, {"out", out, ob}};
  KB_TRY(kb__check_memory(ctx, fn, 2, refs));
  if (kb__on_cuda(ctx)) return kb__cuda_finish(ctx, fn, ctx->cuda->argmax(ctx->cuda_ctx, fn, rows, cols, x, out));
  if (count == 0) return KB_STATUS_OK;
  struct argmax_job job = {&kb__cpu_ops()->vec, cols, x, out};
  kb__parallel_for(ctx, rows, kb_cpu_min_rows(cols), argmax_body, &job);
  return KB_STATUS_OK;
}
