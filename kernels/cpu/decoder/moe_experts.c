/* moe_experts.c - kb_moe_experts: the expert step of a mixture-of-experts
 * feed-forward block, given the routing (kb_moe_route's ids and weights):
 *   y[t] = sum over j < top_k of weights[t, j] * E_e(x[t]), e = ids[t, j],
 *   E_e(v) = Wd_e . (act(Wg_e . v) * (Wu_e . v)).
 *
 * The (token, slot) pairs are grouped by expert (a counting sort, pairs of
 * one expert in token order), and each expert with work runs its three
 * linear layers once on the rows of just its tokens, gathered into one
 * matrix: grouped products on the gemm / quantized engines with as many
 * rows as the expert has tokens, not a product per token.  The expert
 * outputs wait in scratch, one row per pair; y is written last, each
 * element as a float32 fma chain over the slots in order, so y has the
 * same bits whatever the grouping, the thread count or the instruction set
 * (a row of a product never depends on the other rows). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../linear.h"
#include "../quant/dtype.h"
#include "internal.h"
#include "linear_glu.h"

/* Elements of y per task of the final weighted sum. */
#define KB_MOE_MIN_CHUNK 16384

struct moe_sum_job {
  int64_t top_k, hidden;
  const float *weights;
  const int64_t *slot_row; /* [tokens * top_k]: the pair's row of out */
  const float *out;        /* [tokens * top_k, hidden] expert outputs */
  float *y;
};

static void moe_sum_body(void *arg, int64_t begin, int64_t end) {
  const struct moe_sum_job *j = (const struct moe_sum_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    float *yt = j->y + t * j->hidden;
    for (int64_t c = 0; c < j->hidden; c++) yt[c] = 0.0f;
    for (int64_t s = 0; s < j->top_k; s++) {
      float w = j->weights[t * j->top_k + s];
      const float *o = j->out + j->slot_row[t * j->top_k + s] * j->hidden;
      for (int64_t c = 0; c < j->hidden; c++) yt[c] = fmaf(w, o[c], yt[c]);
    }
  }
}

/* Fails with SHAPE_MISMATCH unless bytes_arg is `expected`, the bytes of
 * `what`, experts stacked [rows, cols] tensors of type. */
static kb_status moe_check_bytes(kb_context *ctx, const char *fn, const char *bytes_name, int64_t bytes_arg,
                                 int64_t expected, const char *what, int64_t experts, int64_t rows, int64_t cols,
                                 int type) {
  if (bytes_arg != expected)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be %lld (%s [%lld, %lld, %lld] as %s), got %lld",
                    bytes_name, (long long)expected, what, (long long)experts, (long long)rows, (long long)cols,
                    kb__dtype_name(type), (long long)bytes_arg);
  return KB_STATUS_OK;
}

/* Runs the experts and the weighted sum; validated arguments, tokens *
 * hidden > 0.  Everything the call allocates is allocated here, and y is
 * written only once every expert has run. */
static kb_status moe_run(kb_context *ctx, const char *fn, int type, int64_t tokens, int64_t hidden, int64_t ffn,
                         int64_t experts, int64_t top_k, const float *x, const int32_t *ids, const float *weights,
                         const unsigned char *gate, const unsigned char *up, const unsigned char *down,
                         int64_t expert_up_bytes, int64_t up_row_bytes, int64_t expert_down_bytes,
                         int64_t down_row_bytes, int act, float *y) {
  int64_t pairs = tokens * top_k; /* ids' count: fits */
  int64_t *count = calloc((size_t)experts + 1, sizeof *count);
  int64_t *order = malloc((size_t)(pairs > 0 ? pairs : 1) * sizeof *order);
  int64_t *slot_row = malloc((size_t)(pairs > 0 ? pairs : 1) * sizeof *slot_row);
  kb_status st = KB_STATUS_OK;
  float *out = NULL, *xg = NULL, *h = NULL;
  if (count == NULL || order == NULL || slot_row == NULL) {
    st = kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate the routing tables of %lld pairs",
                  (long long)pairs);
    goto done;
  }
  /* Counting sort of the pairs by expert; pairs of an expert stay in
   * (token, slot) order. */
  for (int64_t p = 0; p < pairs; p++) count[ids[p] + 1]++;
  int64_t most = 0;
  for (int64_t e = 0; e < experts; e++) {
    if (count[e + 1] > most) most = count[e + 1];
    count[e + 1] += count[e];
  }
  for (int64_t p = 0; p < pairs; p++) {
    int64_t r = count[ids[p]]++;
    order[r] = p;
    slot_row[p] = r;
  }
  /* count[e] is now the end of expert e's rows, count[e - 1] its start. */
  int64_t od[2] = {pairs, hidden}, xd[2] = {most, hidden}, hd[2] = {most, ffn}, on, xn, hn;
  if ((st = kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, od, &on)) != KB_STATUS_OK ||
      (st = kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, xd, &xn)) != KB_STATUS_OK ||
      (st = kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, hd, &hn)) != KB_STATUS_OK)
    goto done;
  out = malloc((size_t)(on > 0 ? on : 1) * sizeof(float));
  xg = malloc((size_t)(xn > 0 ? xn : 1) * sizeof(float));
  h = malloc((size_t)(hn > 0 ? hn : 1) * sizeof(float));
  if (out == NULL || xg == NULL || h == NULL) {
    st = kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch for the expert rows",
                  (long long)((on + xn + hn) * (int64_t)sizeof(float)));
    goto done;
  }
  struct kb_linear_epilogue none = {NULL, KB_ACTIVATION_NONE};
  for (int64_t e = 0; e < experts; e++) {
    int64_t r0 = e > 0 ? count[e - 1] : 0, n = count[e] - r0;
    if (n == 0) continue;
    for (int64_t i = 0; i < n; i++)
      memcpy(xg + i * hidden, x + (order[r0 + i] / top_k) * hidden, (size_t)hidden * sizeof(float));
    if (ffn > 0) {
      st = kb__linear_glu_run(ctx, fn, type, n, hidden, ffn, xg, gate + e * expert_up_bytes,
                              up + e * expert_up_bytes, up_row_bytes, act, h, ffn);
      if (st != KB_STATUS_OK) goto done;
    }
    st = kb__linear_w_run(ctx, fn, type, n, ffn, hidden, h, down + e * expert_down_bytes, down_row_bytes, &none,
                          out + r0 * hidden);
    if (st != KB_STATUS_OK) goto done;
  }
  struct moe_sum_job sj = {top_k, hidden, weights, slot_row, out, y};
  int64_t per = KB_MOE_MIN_CHUNK / (hidden * (top_k > 0 ? top_k : 1)) + 1;
  kb__parallel_for(ctx, tokens, per, moe_sum_body, &sj);
done:
  free(count);
  free(order);
  free(slot_row);
  free(out);
  free(xg);
  free(h);
  return st;
}

kb_status kb_moe_experts(kb_context *ctx, int64_t tokens, int64_t hidden, int64_t ffn, int64_t experts, int64_t top_k,
                         const float *x, const int32_t *ids, const float *weights, kb_dtype weight_type,
                         const void *gate_weight, int64_t gate_bytes, const void *up_weight, int64_t up_bytes,
                         const void *down_weight, int64_t down_bytes, kb_activation act, float *y) {
  static const char fn[] = "kb_moe_experts";
  KB_BEGIN(ctx, fn);
  const int64_t f = (int64_t)sizeof(float);
  KB_TRY(kb__check_dim(ctx, fn, "tokens", tokens));
  KB_TRY(kb__check_dim(ctx, fn, "hidden", hidden));
  KB_TRY(kb__check_dim(ctx, fn, "ffn", ffn));
  KB_TRY(kb__check_dim(ctx, fn, "experts", experts));
  KB_TRY(kb__check_dim(ctx, fn, "top_k", top_k));
  KB_TRY(kb__check_dim(ctx, fn, "gate_bytes", gate_bytes));
  KB_TRY(kb__check_dim(ctx, fn, "up_bytes", up_bytes));
  KB_TRY(kb__check_dim(ctx, fn, "down_bytes", down_bytes));
  KB_TRY(kb__check_activation(ctx, fn, act));
  /* One expert's tensors, then all of them stacked: [experts, ffn, hidden]
   * for gate and up, [experts, hidden, ffn] for down. */
  int64_t up1, up_row, down1, down_row, upn, downn;
  KB_TRY(kb__dtype_size(ctx, fn, "weight_type", (int)weight_type, "gate_weight", ffn, hidden, "hidden", &up1, &up_row));
  KB_TRY(kb__dtype_size(ctx, fn, "weight_type", (int)weight_type, "down_weight", hidden, ffn, "ffn", &down1,
                        &down_row));
  int64_t ud[2] = {experts, up1}, dd[2] = {experts, down1};
  KB_TRY(kb__count(ctx, fn, "gate_weight", 1, 2, ud, &upn));
  KB_TRY(kb__count(ctx, fn, "down_weight", 1, 2, dd, &downn));
  int64_t xd[2] = {tokens, hidden}, rd[2] = {tokens, top_k}, xn, rn, yn;
  KB_TRY(kb__count(ctx, fn, "x", f, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "ids", (int64_t)sizeof(int32_t), 2, rd, &rn));
  KB_TRY(kb__count(ctx, fn, "weights", f, 2, rd, &rn));
  KB_TRY(kb__count(ctx, fn, "y", f, 2, xd, &yn));
  KB_TRY(moe_check_bytes(ctx, fn, "gate_bytes", gate_bytes, upn, "gate_weight", experts, ffn, hidden,
                             (int)weight_type));
  KB_TRY(moe_check_bytes(ctx, fn, "up_bytes", up_bytes, upn, "up_weight", experts, ffn, hidden, (int)weight_type));
  KB_TRY(moe_check_bytes(ctx, fn, "down_bytes", down_bytes, downn, "down_weight", experts, hidden, ffn,
                             (int)weight_type));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "ids", ids, rn));
  KB_TRY(kb__check_ptr(ctx, fn, "weights", weights, rn));
  KB_TRY(kb__check_ptr(ctx, fn, "gate_weight", gate_weight, upn));
  KB_TRY(kb__check_ptr(ctx, fn, "up_weight", up_weight, upn));
  KB_TRY(kb__check_ptr(ctx, fn, "down_weight", down_weight, downn));
  KB_TRY(kb__dtype_check_align(ctx, fn, "gate_weight", gate_weight, (int)weight_type, upn == 0));
  KB_TRY(kb__dtype_check_align(ctx, fn, "up_weight", up_weight, (int)weight_type, upn == 0));
  KB_TRY(kb__dtype_check_align(ctx, fn, "down_weight", down_weight, (int)weight_type, downn == 0));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "x", x, xn * f, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "ids", ids, rn * (int64_t)sizeof(int32_t), false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "weights", weights, rn * f, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "gate_weight", gate_weight, upn, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "up_weight", up_weight, upn, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "down_weight", down_weight, downn, false));
  const struct kb_mem_ref refs[] = {{"x", x, xn * f},
                                    {"ids", ids, rn * (int64_t)sizeof(int32_t)},
                                    {"weights", weights, rn * f},
                                    {"gate_weight", gate_weight, upn},
                                    {"up_weight", up_weight, upn},
                                    {"down_weight", down_weight, downn},
                                    {"y", y, yn * f}};
  KB_TRY(kb__check_memory(ctx, fn, 7, refs));
  /* Before ids is read: on a CUDA context it is device memory. */
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  /* Every id before anything is written (a router's output, but the caller
   * may build its own). */
  for (int64_t p = 0; p < rn; p++)
    if (ids[p] < 0 || ids[p] >= experts)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "ids[%lld, %lld] must be in [0, experts) = [0, %lld), got %d",
                      (long long)(p / top_k), (long long)(p % top_k), (long long)experts, (int)ids[p]);
  if (yn == 0) return KB_STATUS_OK;
  return moe_run(ctx, fn, (int)weight_type, tokens, hidden, ffn, experts, top_k, x, ids, weights,
                 (const unsigned char *)gate_weight, (const unsigned char *)up_weight,
                 (const unsigned char *)down_weight, up1, up_row, down1, down_row, (int)act, y);
}
