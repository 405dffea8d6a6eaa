/* linear.c - kb_linear, kb_linear_bf16, kb_linear_f16: y = act(x W^T + b),
 * the trans_b gemm with kb_linear's epilogue (bias, then the activation,
 * applied by the engine to each finished block of rows while it is in
 * cache). */
#include "linear.h"

#include "gemm_engine.h"
#include "internal.h"
#include "quant/dtype.h"
#include "quant/qmatmul.h"
#include "reduced.h"

static kb_status linear_dt(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t in_features,
                           int64_t out_features, const void *x, const void *weight, const void *bias, kb_activation act,
                           void *y) {
  KB_BEGIN(ctx, fn);
  int64_t elem = dt == KB_GEMM_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "in_features", in_features));
  KB_TRY(kb__check_dim(ctx, fn, "out_features", out_features));
  KB_TRY(kb__check_activation(ctx, fn, act));
  int64_t xd[2] = {rows, in_features}, wd[2] = {out_features, in_features}, yd[2] = {rows, out_features};
  int64_t bd[1] = {bias != NULL ? out_features : 0}; /* a NULL bias has no elements */
  int64_t xn, wn, yn, bn;
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "weight", elem, 2, wd, &wn));
  KB_TRY(kb__count(ctx, fn, "bias", elem, 1, bd, &bn));
  KB_TRY(kb__count(ctx, fn, "y", elem, 2, yd, &yn));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, wn));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  int64_t bb = bn * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "x", x, xn * elem, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "weight", weight, wn * elem, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "bias", bias, bb, false));
  const struct kb_mem_ref refs[] = {{"x", x, xn * elem}, {"weight", weight, wn * elem}, {"bias", bias, bb}, {"y", y, yn * elem}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  struct kb_linear_epilogue lin = {bias, act};
  /* x [rows, in] times weight^T: the trans_b gemm. */
  return kb__gemm_run(ctx, fn, dt, dt, false, true, rows, out_features, in_features, 1.0f, x,
                      in_features > 0 ? in_features : 1, weight, in_features > 0 ? in_features : 1, 0.0f, y, out_features,
                      &lin);
}

kb_status kb_linear(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const float *x,
                    const float *weight, const float *bias, kb_activation act, float *y) {
  return linear_dt(ctx, "kb_linear", KB_GEMM_F32, rows, in_features, out_features, x, weight, bias, act, y);
}

kb_status kb_linear_bf16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const uint16_t *x,
                         const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y) {
  return linear_dt(ctx, "kb_linear_bf16", KB_GEMM_BF16, rows, in_features, out_features, x, weight, bias, act, y);
}

kb_status kb_linear_f16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const uint16_t *x,
                        const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y) {
  return linear_dt(ctx, "kb_linear_f16", KB_GEMM_F16, rows, in_features, out_features, x, weight, bias, act, y);
}

/* kb_linear_w: float weights through the gemm engine (B widened in
 * registers, A and C float32), block formats through qmatmul.c. */
kb_status kb_linear_w(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const float *x,
                      kb_dtype weight_type, const void *weight, int64_t weight_bytes, const float *bias,
                      kb_activation act, float *y) {
  static const char fn[] = "kb_linear_w";
  KB_BEGIN(ctx, fn);
  const int64_t f = (int64_t)sizeof(float);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "in_features", in_features));
  KB_TRY(kb__check_dim(ctx, fn, "out_features", out_features));
  KB_TRY(kb__check_dim(ctx, fn, "weight_bytes", weight_bytes));
  KB_TRY(kb__check_activation(ctx, fn, act));
  int64_t wbytes, row_bytes;
  KB_TRY(kb__dtype_size(ctx, fn, "weight_type", (int)weight_type, "weight", out_features, in_features, "in_features",
                        &wbytes, &row_bytes));
  int64_t xd[2] = {rows, in_features}, yd[2] = {rows, out_features}, bd[1] = {bias != NULL ? out_features : 0};
  int64_t xn, yn, bn;
  KB_TRY(kb__count(ctx, fn, "x", f, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "bias", f, 1, bd, &bn));
  KB_TRY(kb__count(ctx, fn, "y", f, 2, yd, &yn));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "weight_bytes", weight_bytes, wbytes, "weight", (int)weight_type, out_features,
                               in_features));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, wbytes));
  KB_TRY(kb__dtype_check_align(ctx, fn, "weight", weight, (int)weight_type, wbytes == 0));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "x", x, xn * f, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "weight", weight, wbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "bias", bias, bn * f, false));
  const struct kb_mem_ref refs[] = {{"x", x, xn * f}, {"weight", weight, wbytes}, {"bias", bias, bn * f}, {"y", y, yn * f}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  struct kb_linear_epilogue lin = {bias, act};
  return kb__linear_w_run(ctx, fn, (int)weight_type, rows, in_features, out_features, x, weight, row_bytes, &lin, y);
}

int kb__linear_w_gemm_type(int type) {
  return type == KB_DTYPE_F16 ? KB_GEMM_F16 : type == KB_DTYPE_BF16 ? KB_GEMM_BF16 : KB_GEMM_F32;
}

kb_status kb__linear_w_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                           const float *x, const void *w, int64_t row_bytes, const struct kb_linear_epilogue *lin,
                           float *y) {
  if (kb__dtype_blocked(type) && in > 0) return kb__qlinear_run(ctx, fn, type, rows, in, out, x, w, row_bytes, lin, y);
  /* With no in_features no weight is read (a block format then holds no
     bytes): y is the epilogue of zero sums, as for float weights. */
  int64_t ld = in > 0 ? in : 1;
  return kb__gemm_run(ctx, fn, KB_GEMM_F32, kb__linear_w_gemm_type(type), false, true, rows, out, in, 1.0f, x, ld, w, ld,
                      0.0f, y, out, lin);
}
