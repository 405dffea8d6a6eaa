/* vendored by tools/vendor_c.py from kernels/cpu/attention.c; do not edit */
/* attention.c - scaled dot-product attention with optional causal mask and
 * grouped-query heads, in float32 and in bf16 / f16 storage.
 *
 * Work is split over the batch * heads * seq_q query rows.  For one query row
 * the kernel fills a buffer of seq_kv scores, so scratch is O(seq_kv +
 * head_dim) per thread and the [seq_q, seq_kv] matrix never exists:
 *   s_j = scale * sum_d q[d] * k[j, d]        (double, d increasing)
 *   m   = max_j s_j,  w_j = exp(s_j - m),  Z = sum_j w_j   (double, j increasing)
 *   out[d] = (sum_j w_j * v[j, d]) / Z         (double, j increasing), rounded once.
 * With causal, only keys j <= i take part (top-left alignment, PyTorch's
 * is_causal), so every query row has at least key 0.  A row's result depends
 * on nothing but its own inputs, so any split gives identical bits. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "reduced.h"

/* Multiply-adds per task below which a thread is not worth starting. */
#define KB_ATTN_MIN_WORK 32768

struct attn_job {
  int64_t heads, group, kv_heads, seq_q, seq_kv, head_dim;
  const float *q, *k, *v;
  bool causal;
  double scale;
  float *out;
  double *scratch; /* per task: seq_kv scores, then head_dim accumulators */
  int64_t rows, tasks;
};

static void attn_row(const struct attn_job *g, int64_t row, double *sc, double *acc) {
  int64_t hd = g->head_dim;
  int64_t i = row % g->seq_q, bh = row / g->seq_q;
  int64_t h = bh % g->heads, b = bh / g->heads;
  int64_t kvh = h / g->group;
  const float *q = g->q + row * hd; /* q and out share the [batch, heads, seq_q] row order */
  const float *kb = g->k + (b * g->kv_heads + kvh) * g->seq_kv * hd;
  const float *vb = g->v + (b * g->kv_heads + kvh) * g->seq_kv * hd;
  int64_t nk = g->seq_kv;
  if (g->causal && i + 1 < nk) nk = i + 1;

  double m = -INFINITY;
  for (int64_t j = 0; j < nk; j++) {
    const float *kj = kb + j * hd;
    double dot = 0.0;
    for (int64_t d = 0; d < hd; d++) dot += (double)q[d] * (double)kj[d];
    sc[j] = dot * g->scale;
    if (sc[j] > m) m = sc[j];
  }
  double z = 0.0;
  for (int64_t j = 0; j < nk; j++) {
    sc[j] = exp(sc[j] - m);
    z += sc[j];
  }
  for (int64_t d = 0; d < hd; d++) acc[d] = 0.0;
  for (int64_t j = 0; j < nk; j++) {
    const float *vj = vb + j * hd;
    double w = sc[j];
    for (int64_t d = 0; d < hd; d++) acc[d] += w * (double)vj[d];
  }
  float *o = g->out + row * hd;
  for (int64_t d = 0; d < hd; d++) o[d] = (float)(acc[d] / z);
}

static void attn_body(void *arg, int64_t tbegin, int64_t tend) {
  const struct attn_job *g = (const struct attn_job *)arg;
  for (int64_t t = tbegin; t < tend; t++) {
    double *sc = g->scratch + t * (g->seq_kv + g->head_dim);
    double *acc = sc + g->seq_kv;
    int64_t begin, end;
    kb__task_range(g->rows, g->tasks, t, &begin, &end);
    for (int64_t row = begin; row < end; row++) attn_row(g, row, sc, acc);
  }
}

/* Validation of every entry point (elem: element size in bytes), ending with
 * the memory-kind check. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, int64_t batch, int64_t heads, int64_t kv_heads,
                       int64_t seq_q, int64_t seq_kv, int64_t head_dim, const void *q, const void *k, const void *v,
                       float scale, const void *out, int64_t *q_count, int64_t *kv_count) {
  KB_TRY(kb__check_dim(ctx, fn, "batch", batch));
  KB_TRY(kb__check_dim(ctx, fn, "heads", heads));
  KB_TRY(kb__check_dim(ctx, fn, "kv_heads", kv_heads));
  KB_TRY(kb__check_dim(ctx, fn, "seq_q", seq_q));
  KB_TRY(kb__check_dim(ctx, fn, "seq_kv", seq_kv));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", head_dim));
  if (heads > 0 && (kv_heads == 0 || heads % kv_heads != 0))
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "kv_heads (%lld) must divide heads (%lld)", (long long)kv_heads,
                    (long long)heads);
  /* A query with no key to attend has no defined softmax.  Tested without
   * multiplying, so that it comes before the overflow checks like every
   * other size rule. */
  if (batch > 0 && heads > 0 && seq_q > 0 && head_dim > 0 && seq_kv == 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "seq_kv must be > 0 when there are queries, got 0");
  int64_t qdims[4] = {batch, heads, seq_q, head_dim}, kdims[4] = {batch, kv_heads, seq_kv, head_dim};
  KB_TRY(kb__count(ctx, fn, "q", elem, 4, qdims, q_count));
  KB_TRY(kb__count(ctx, fn, "k", elem, 4, kdims, kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "q", q, *q_count));
  KB_TRY(kb__check_ptr(ctx, fn, "k", k, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "v", v, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, *q_count));
  KB_TRY(kb__check_finite(ctx, fn, "scale", (double)scale, true));
  int64_t qb = *q_count * elem, kvb = *kv_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "q", q, qb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "k", k, kvb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "v", v, kvb, false));
  const struct kb_mem_ref refs[] = {{"q", q, qb}, {"k", k, kvb}, {"v", v, kvb}, {"out", out, qb}};
  return kb__check_memory(ctx, fn, 4, refs);
}

/* The float32 computation on validated arguments with at least one query
 * element.  Allocates its double scratch first: OUT_OF_MEMORY leaves out
 * untouched. */
static kb_status compute(kb_context *ctx, const char *fn, int64_t batch, int64_t heads, int64_t kv_heads,
                         int64_t seq_q, int64_t seq_kv, int64_t head_dim, const float *q, const float *k,
                         const float *v, bool causal, float scale, float *out) {
  int64_t rows = batch * heads * seq_q;
  int64_t per_row = seq_kv * head_dim * 2;
  int64_t tasks = kb__task_count(ctx, rows, per_row >= KB_ATTN_MIN_WORK ? 1 : KB_ATTN_MIN_WORK / per_row + 1);
  int64_t sdims[2] = {tasks, seq_kv + head_dim}, s_count;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(double), 2, sdims, &s_count));
  double *scratch = (double *)malloc((size_t)s_count * sizeof(double));
  if (scratch == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch",
                    (long long)(s_count * (int64_t)sizeof(double)));
  struct attn_job g = {heads,     heads / kv_heads, kv_heads, seq_q, seq_kv, head_dim, q,    k,    v,
                       causal,    scale == 0.0f ? 1.0 / sqrt((double)head_dim) : (double)scale,
                       out,       scratch,          rows,     tasks};
  kb__parallel_for(ctx, tasks, 1, attn_body, &g);
  free(scratch);
  return KB_STATUS_OK;
}

kb_status kb_attention(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                       int64_t head_dim, const float *q, const float *k, const float *v, bool causal, float scale,
                       float *out) {
  static const char fn[] = "kb_attention";
  kb__begin(ctx);
  int64_t q_count, kv_count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, scale, out,
               &q_count, &kv_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->attention(ctx->cuda_ctx, fn, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q,
                                                k, v, causal ? 1 : 0, scale, out));
  if (q_count == 0) return KB_STATUS_OK;
  return compute(ctx, fn, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, causal, scale, out);
}

/* bf16 / f16: q, k, v widened into scratch, the float32 kernel writes a
 * float32 out in scratch, which is narrowed into out last. */
static kb_status attention_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t batch, int64_t heads,
                              int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const uint16_t *q,
                              const uint16_t *k, const uint16_t *v, bool causal, float scale, uint16_t *out) {
  kb__begin(ctx);
  int64_t q_count, kv_count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, scale, out, &q_count,
               &kv_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->attention_dt(ctx->cuda_ctx, fn, dt, batch, heads, kv_heads, seq_q, seq_kv,
                                                   head_dim, q, k, v, causal ? 1 : 0, scale, out));
  if (q_count == 0) return KB_STATUS_OK;
  struct kb_dt_scratch s;
  const int64_t counts[4] = {q_count, kv_count, kv_count, q_count};
  KB_TRY(kb_dt_alloc(ctx, fn, 4, counts, &s));
  kb_dt_widen(ctx, dt, q, s.t[0], q_count);
  kb_dt_widen(ctx, dt, k, s.t[1], kv_count);
  kb_dt_widen(ctx, dt, v, s.t[2], kv_count);
  kb_status st = compute(ctx, fn, batch, heads, kv_heads, seq_q, seq_kv, head_dim, s.t[0], s.t[1], s.t[2], causal,
                         scale, s.t[3]);
  if (st == KB_STATUS_OK) kb_dt_narrow(ctx, dt, s.t[3], out, q_count);
  kb_dt_free(&s);
  return st;
}

kb_status kb_attention_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                            int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                            bool causal, float scale, uint16_t *out) {
  return attention_dt(ctx, "kb_attention_bf16", KBCUDA_BF16, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v,
                      causal, scale, out);
}

kb_status kb_attention_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                           int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                           bool causal, float scale, uint16_t *out) {
  return attention_dt(ctx, "kb_attention_f16", KBCUDA_F16, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v,
                      causal, scale, out);
}
