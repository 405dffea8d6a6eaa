/* specs.c - every kernel entry point of kernelbridge.h as a fuzz spec:
 * its parameters (in C order), the declared size of each tensor, the call
 * and its postconditions.  Families group the entry points into fuzz
 * targets (one binary per family).  tests/fuzz/coverage_test.py checks that
 * every kernel of the header has a spec here. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

/* Not in kernelbridge.h yet (kernels/cpu/gemm_engine.h declares them until
 * the header can annotate batch strides); defined by the library with
 * hidden visibility, so only static links (these targets) reach them. */
kb_status kb_gemm_batched(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, int64_t stride_a, const float *b, int64_t ldb,
                          int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c);
kb_status kb_gemm_batched_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                               int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                               const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                               int64_t stride_c);
kb_status kb_gemm_batched_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
                              int64_t k, float alpha, const uint16_t *a, int64_t lda, int64_t stride_a,
                              const uint16_t *b, int64_t ldb, int64_t stride_b, float beta, uint16_t *c, int64_t ldc,
                              int64_t stride_c);

#define D(name) fz_dim(c, name)
#define FL(name) fz_flag(c, name)
#define F(name) fz_f32(c, name)
#define I(name) fz_int(c, name)
#define U(name) fz_u64(c, name)
#define P(name) fz_ptr(c, name)

/* The float32, bfloat16 or float16 variant of an entry point. */
#define DT3(fn, ...)                                          \
  (c->spec->dtype == FZ_F32    ? fn(__VA_ARGS__)              \
   : c->spec->dtype == FZ_BF16 ? fn##_bf16(__VA_ARGS__)       \
                               : fn##_f16(__VA_ARGS__))

static int64_t sat_add(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return 0;
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t work_of(int64_t v) { return v < 0 ? 0 : v; }

/* ---- elementwise ---- */

static void shape_n(fz_call *c) {
  int64_t n = D("n");
  for (int i = 0; i < c->nt; i++) c->t[i].extent = n < 0 ? FZ_NEG : n;
  c->work = work_of(n);
}

static kb_status call_silu(fz_call *c, kb_context *ctx) { return DT3(kb_silu, ctx, D("n"), P("x"), P("y")); }
static kb_status call_gelu(fz_call *c, kb_context *ctx) { return DT3(kb_gelu, ctx, D("n"), P("x"), P("y")); }
static kb_status call_gelu_tanh(fz_call *c, kb_context *ctx) { return DT3(kb_gelu_tanh, ctx, D("n"), P("x"), P("y")); }
static kb_status call_add(fz_call *c, kb_context *ctx) { return DT3(kb_add, ctx, D("n"), P("a"), P("b"), P("y")); }
static kb_status call_mul(fz_call *c, kb_context *ctx) { return DT3(kb_mul, ctx, D("n"), P("a"), P("b"), P("y")); }
static kb_status call_scale(fz_call *c, kb_context *ctx) {
  return DT3(kb_scale, ctx, D("n"), F("alpha"), P("x"), P("y"));
}

/* ---- row-wise ---- */

static void shape_rows(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols"), all = fz_prod2(rows, cols);
  for (int i = 0; i < c->nt; i++) {
    const char *n = c->t[i].p->name;
    c->t[i].extent = strcmp(n, "bias") == 0 || strcmp(n, "weight") == 0 ? (cols < 0 ? FZ_NEG : cols) : all;
  }
  if (rows < 0) {
    for (int i = 0; i < c->nt; i++) c->t[i].extent = FZ_NEG;
  }
  c->work = work_of(all);
}

static kb_status call_add_bias(fz_call *c, kb_context *ctx) {
  return DT3(kb_add_bias, ctx, D("rows"), D("cols"), P("x"), P("bias"), P("y"));
}
static kb_status call_softmax(fz_call *c, kb_context *ctx) {
  return DT3(kb_softmax, ctx, D("rows"), D("cols"), P("x"), P("y"));
}
static kb_status call_log_softmax(fz_call *c, kb_context *ctx) {
  return DT3(kb_log_softmax, ctx, D("rows"), D("cols"), P("x"), P("y"));
}
static kb_status call_rmsnorm(fz_call *c, kb_context *ctx) {
  return DT3(kb_rmsnorm, ctx, D("rows"), D("cols"), P("x"), P("weight"), F("eps"), P("y"));
}
static kb_status call_layernorm(fz_call *c, kb_context *ctx) {
  return DT3(kb_layernorm, ctx, D("rows"), D("cols"), P("x"), P("weight"), P("bias"), F("eps"), P("y"));
}

/* ---- gemm ---- */

static void shape_gemm(fz_call *c) {
  bool ta = FL("trans_a"), tb = FL("trans_b");
  int64_t m = D("m"), n = D("n"), k = D("k");
  fz_extent(c, "a", fz_strided(ta ? k : m, ta ? m : k, D("lda")));
  fz_extent(c, "b", fz_strided(tb ? n : k, tb ? k : n, D("ldb")));
  fz_extent(c, "c", fz_strided(m, n, D("ldc")));
  c->work = work_of(fz_prod(3, (int64_t[]){m, n, k}));
  c->work = sat_add(c->work, work_of(fz_prod2(m, n)));
}

static kb_status call_gemm(fz_call *c, kb_context *ctx) {
  return DT3(kb_gemm, ctx, FL("trans_a"), FL("trans_b"), D("m"), D("n"), D("k"), F("alpha"), P("a"), D("lda"), P("b"),
             D("ldb"), F("beta"), P("c"), D("ldc"));
}

/* Only the m x n elements of each C are written: the padding between rows
 * (ldc > n) and between items (stride_c > extent) keeps its bytes. */
static void check_c_padding(fz_call *c, int64_t batch, int64_t stride) {
  int64_t m = D("m"), n = D("n"), ldc = D("ldc"), e = c->spec->dtype == FZ_F32 ? 4 : 2;
  fz_tensor *t = fz_tensor_of(c, "c");
  if (t->extent <= 0 || m == 0 || n == 0) return;
  for (int64_t i = 0; i < batch; i++) {
    int64_t base = i * stride;
    for (int64_t r = 0; r + 1 < m; r++)
      if (!fz_unchanged(c, "c", (base + r * ldc + n) * e, (base + (r + 1) * ldc) * e))
        fz_fail(c, "the padding of row %lld of c (item %lld) was written", (long long)r, (long long)i);
    int64_t end = base + (m - 1) * ldc + n, next = i + 1 < batch ? base + stride : end;
    if (!fz_unchanged(c, "c", end * e, next * e)) fz_fail(c, "the gap after item %lld of c was written", (long long)i);
  }
}

static void post_gemm(fz_call *c) { check_c_padding(c, 1, 0); }

static void shape_gemm_batched(fz_call *c) {
  bool ta = FL("trans_a"), tb = FL("trans_b");
  int64_t batch = D("batch"), m = D("m"), n = D("n"), k = D("k");
  fz_extent(c, "a", fz_batched(batch, D("stride_a"), fz_strided(ta ? k : m, ta ? m : k, D("lda"))));
  fz_extent(c, "b", fz_batched(batch, D("stride_b"), fz_strided(tb ? n : k, tb ? k : n, D("ldb"))));
  fz_extent(c, "c", fz_batched(batch, D("stride_c"), fz_strided(m, n, D("ldc"))));
  c->work = work_of(fz_prod4(batch, m, n, k > 0 ? k : 1));
}

static kb_status call_gemm_batched(fz_call *c, kb_context *ctx) {
  return DT3(kb_gemm_batched, ctx, FL("trans_a"), FL("trans_b"), D("batch"), D("m"), D("n"), D("k"), F("alpha"),
             P("a"), D("lda"), D("stride_a"), P("b"), D("ldb"), D("stride_b"), F("beta"), P("c"), D("ldc"),
             D("stride_c"));
}

static void post_gemm_batched(fz_call *c) { check_c_padding(c, D("batch"), D("stride_c")); }

/* ---- attention ---- */

static void shape_attention_common(fz_call *c) {
  int64_t batch = D("batch"), heads = D("heads"), kvh = D("kv_heads"), sq = D("seq_q"), skv = D("seq_kv"),
          hd = D("head_dim");
  int64_t q = fz_prod4(batch, heads, sq, hd), kv = fz_prod4(batch, kvh, skv, hd);
  fz_extent(c, "q", q);
  fz_extent(c, "k", kv);
  fz_extent(c, "v", kv);
  fz_extent(c, "out", q);
  int64_t w = fz_prod4(batch, heads, sq, skv);
  if (w == FZ_NEG || hd < 0) c->work = 0;
  else if (w == FZ_OVER || hd >= INT64_MAX - 1 || w > INT64_MAX / (hd + 1)) c->work = INT64_MAX;
  else c->work = w * (hd + 1);
  c->work = sat_add(c->work, work_of(kv));
}

static kb_status call_attention(fz_call *c, kb_context *ctx) {
  return DT3(kb_attention, ctx, D("batch"), D("heads"), D("kv_heads"), D("seq_q"), D("seq_kv"), D("head_dim"), P("q"),
             P("k"), P("v"), FL("causal"), F("scale"), P("out"));
}

static void shape_attention_ex(fz_call *c) {
  shape_attention_common(c);
  int64_t batch = D("batch"), skv = D("seq_kv");
  fz_extent(c, "kv_lengths", batch < 0 ? FZ_NEG : batch);
  fz_extent(c, "mask", fz_prod4(D("mask_batch"), D("mask_heads"), D("mask_q"), skv));
  fz_range(c, "kv_lengths", 0, skv >= 0 && skv < INT32_MAX ? (int32_t)skv + 1 : 1, -1);
}

static kb_status call_attention_ex(fz_call *c, kb_context *ctx) {
  return DT3(kb_attention_ex, ctx, D("batch"), D("heads"), D("kv_heads"), D("seq_q"), D("seq_kv"), D("head_dim"),
             FL("seq_major"), P("q"), P("k"), P("v"), P("kv_lengths"), D("mask_batch"), D("mask_heads"), D("mask_q"),
             P("mask"), FL("causal"), FL("causal_bottom_right"), F("scale"), P("out"));
}

/* ---- linear ---- */

static void shape_linear(fz_call *c) {
  int64_t rows = D("rows"), in = D("in_features"), out = D("out_features");
  fz_extent(c, "x", fz_prod2(rows, in));
  fz_extent(c, "weight", fz_prod2(out, in));
  fz_extent(c, "bias", out < 0 ? FZ_NEG : out);
  fz_extent(c, "y", fz_prod2(rows, out));
  c->work = sat_add(work_of(fz_prod(3, (int64_t[]){rows, in, out})), work_of(fz_prod2(rows, out)));
}

static kb_status call_linear(fz_call *c, kb_context *ctx) {
  return DT3(kb_linear, ctx, D("rows"), D("in_features"), D("out_features"), P("x"), P("weight"), P("bias"),
             (kb_activation)I("act"), P("y"));
}

/* ---- decoder kernels: glu, add_rmsnorm ---- */

static void shape_glu(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols");
  fz_extent(c, "gate", fz_strided(rows, cols, D("ld_gate")));
  fz_extent(c, "up", fz_strided(rows, cols, D("ld_up")));
  fz_extent(c, "y", fz_prod2(rows, cols));
  c->work = work_of(fz_prod2(rows, cols));
}

static kb_status call_glu(fz_call *c, kb_context *ctx) {
  return DT3(kb_glu, ctx, D("rows"), D("cols"), P("gate"), D("ld_gate"), P("up"), D("ld_up"),
             (kb_activation)I("act"), P("y"));
}

static kb_status call_add_rmsnorm(fz_call *c, kb_context *ctx) {
  return DT3(kb_add_rmsnorm, ctx, D("rows"), D("cols"), P("x"), P("residual"), P("weight"), F("eps"), P("y"));
}

/* ---- embedding, rope ---- */

static void shape_embedding(fz_call *c) {
  int64_t n_ids = D("n_ids"), vocab = D("vocab"), dim = D("dim");
  fz_extent(c, "ids", n_ids < 0 ? FZ_NEG : n_ids);
  fz_extent(c, "table", fz_prod2(vocab, dim));
  fz_extent(c, "out", fz_prod2(n_ids, dim));
  fz_range(c, "ids", 0, vocab > 0 && vocab < INT32_MAX ? (int32_t)vocab : 1, vocab < INT32_MAX ? (int32_t)vocab : -1);
  c->work = sat_add(work_of(fz_prod2(n_ids, dim)), work_of(n_ids));
}

static kb_status call_embedding(fz_call *c, kb_context *ctx) {
  return DT3(kb_embedding, ctx, D("n_ids"), D("vocab"), D("dim"), P("ids"), P("table"), P("out"));
}

/* Every output row is a copy of the table row its id names (bytes for
 * bytes, in every element type). */
static void post_embedding(fz_call *c) {
  int64_t n_ids = D("n_ids"), dim = D("dim"), row = dim * (c->spec->dtype == FZ_F32 ? 4 : 2);
  const int32_t *ids = (const int32_t *)P("ids");
  const char *table = (const char *)P("table"), *out = (const char *)P("out");
  if (dim == 0) return;
  for (int64_t i = 0; i < n_ids; i++)
    if (memcmp(out + i * row, table + (int64_t)ids[i] * row, (size_t)row) != 0)
      fz_fail(c, "out row %lld is not table row %d", (long long)i, ids[i]);
}

static void shape_rope(fz_call *c) {
  int64_t seq = D("seq"), all = fz_prod(3, (int64_t[]){seq, D("heads"), D("head_dim")});
  fz_extent(c, "x", all);
  fz_extent(c, "y", all);
  fz_extent(c, "positions", seq < 0 ? FZ_NEG : seq);
  fz_range(c, "positions", 0, 4096, INT32_MAX);
  c->work = sat_add(work_of(all), work_of(seq));
}

static kb_status call_rope(fz_call *c, kb_context *ctx) {
  return kb_rope(ctx, D("seq"), D("heads"), D("head_dim"), P("x"), P("positions"), F("theta"), P("y"));
}

/* kb_rope_ex: q and k rotated in place, positions per (batch, token). */
static void shape_rope_ex(fz_call *c) {
  int64_t batch = D("batch"), seq = D("seq"), head_dim = D("head_dim");
  int64_t tokens = fz_prod2(batch, seq);
  int64_t qn = fz_prod(4, (int64_t[]){batch, seq, D("q_heads"), head_dim});
  int64_t kn = fz_prod(4, (int64_t[]){batch, seq, D("kv_heads"), head_dim});
  fz_extent(c, "positions", tokens);
  fz_extent(c, "q", qn);
  fz_extent(c, "k", kn);
  fz_range(c, "positions", 0, 4096, INT32_MAX);
  c->work = sat_add(sat_add(work_of(qn), work_of(kn)), work_of(tokens));
}

static kb_status call_rope_ex(fz_call *c, kb_context *ctx) {
  return DT3(kb_rope_ex, ctx, D("batch"), D("seq"), D("q_heads"), D("kv_heads"), D("head_dim"), D("rotary_dim"),
             (kb_rope_style)I("style"), P("positions"), F("theta"), (kb_rope_scaling)I("scaling"), F("factor"),
             F("low_freq_factor"), F("high_freq_factor"), I("original_max_position"), P("q"), P("k"));
}

/* ---- cross-entropy ---- */

static void shape_cross_entropy(fz_call *c) {
  int64_t rows = D("rows"), classes = D("classes"), all = fz_prod2(rows, classes);
  fz_extent(c, "logits", all);
  fz_extent(c, "targets", rows < 0 ? FZ_NEG : rows);
  fz_range(c, "targets", 0, classes > 0 && classes < INT32_MAX ? (int32_t)classes : 1, (int32_t)I("ignore_index"));
  if (strcmp(c->spec->fn, "kb_cross_entropy_backward") == 0) {
    fz_extent(c, "dlogits", all);
  } else {
    fz_extent(c, "losses", rows < 0 ? FZ_NEG : rows);
    fz_extent(c, "mean_loss", 1);
  }
  c->work = work_of(all);
}

static kb_status call_cross_entropy(fz_call *c, kb_context *ctx) {
  return kb_cross_entropy(ctx, D("rows"), D("classes"), P("logits"), P("targets"), (int32_t)I("ignore_index"),
                          P("losses"), P("mean_loss"));
}

/* Ignored rows have loss 0; others are finite, +inf or NaN but never
 * negative beyond rounding. */
static void post_cross_entropy(fz_call *c) {
  const int32_t *targets = (const int32_t *)P("targets");
  const float *losses = (const float *)P("losses");
  for (int64_t r = 0; r < D("rows"); r++)
    if (targets[r] == (int32_t)I("ignore_index") && losses[r] != 0.0f)
      fz_fail(c, "losses[%lld] = %g for an ignored row", (long long)r, (double)losses[r]);
}

static kb_status call_cross_entropy_backward(fz_call *c, kb_context *ctx) {
  return kb_cross_entropy_backward(ctx, D("rows"), D("classes"), P("logits"), P("targets"), (int32_t)I("ignore_index"),
                                   F("dloss"), P("dlogits"));
}

/* ---- adamw ---- */

static kb_status call_adamw(fz_call *c, kb_context *ctx) {
  return kb_adamw_step(ctx, D("n"), P("params"), P("grads"), P("m"), P("v"), F("lr"), F("beta1"), F("beta2"), F("eps"),
                       F("weight_decay"), I("step"));
}

/* ---- argmax and sampling ---- */

/* kb_argmax or one of its 16-bit variants (their logits are named x). */
static bool is_argmax(const fz_call *c) { return strncmp(c->spec->fn, "kb_argmax", 9) == 0; }

static void shape_rows_out(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols"), all = fz_prod2(rows, cols);
  fz_extent(c, is_argmax(c) ? "x" : "logits", all);
  fz_extent(c, "out", rows < 0 ? FZ_NEG : rows);
  int64_t lg = 1;
  while (lg < 62 && ((int64_t)1 << lg) < cols) lg++;
  c->work = work_of(all) == 0 ? work_of(rows) : work_of(all) > INT64_MAX / lg ? INT64_MAX : work_of(all) * lg;
}

/* Every token is a column index; the sampling kernels never return a token
 * whose logit is -inf (it has weight 0). */
/* Whether element i of the logits is -inf, in the spec's element type. */
static bool neg_inf_at(const fz_call *c, const void *x, int64_t i) {
  if (c->spec->dtype == FZ_F32) return ((const float *)x)[i] == -INFINITY;
  return ((const uint16_t *)x)[i] == (c->spec->dtype == FZ_BF16 ? 0xff80 : 0xfc00);
}

static void post_tokens(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols");
  bool argmax = is_argmax(c);
  const void *x = P(argmax ? "x" : "logits");
  const int32_t *out = (const int32_t *)P("out");
  for (int64_t r = 0; r < rows; r++) {
    if (out[r] < 0 || out[r] >= cols) fz_fail(c, "out[%lld] = %d is not a column", (long long)r, out[r]);
    if (!argmax && neg_inf_at(c, x, r * cols + out[r]))
      fz_fail(c, "out[%lld] = %d has logit -inf", (long long)r, out[r]);
  }
}

static kb_status call_argmax(fz_call *c, kb_context *ctx) {
  return DT3(kb_argmax, ctx, D("rows"), D("cols"), P("x"), P("out"));
}
static kb_status call_sample(fz_call *c, kb_context *ctx) {
  return DT3(kb_sample, ctx, D("rows"), D("cols"), P("logits"), F("temperature"), U("seed"), P("out"));
}
static kb_status call_topk(fz_call *c, kb_context *ctx) {
  return DT3(kb_topk_sample, ctx, D("rows"), D("cols"), P("logits"), D("k"), F("temperature"), U("seed"), P("out"));
}
static kb_status call_topp(fz_call *c, kb_context *ctx) {
  return DT3(kb_topp_sample, ctx, D("rows"), D("cols"), P("logits"), F("p"), F("temperature"), U("seed"), P("out"));
}

/* ---- mixture-of-experts routing ---- */

static void shape_moe_route(fz_call *c) {
  int64_t tokens = D("tokens"), experts = D("experts"), k = D("top_k"), routing = I("routing");
  fz_extent(c, "logits", fz_prod2(tokens, experts));
  fz_extent(c, "ids", fz_prod2(tokens, k));
  fz_extent(c, "weights", fz_prod2(tokens, k));
  if (!c->must_fail && (routing < KB_MOE_ROUTING_SOFTMAX_TOPK || routing > KB_MOE_ROUTING_TOPK_SOFTMAX)) {
    c->must_fail = true;
    snprintf(c->why, sizeof c->why, "routing = %lld is not a kb_moe_routing", (long long)routing);
  }
  int64_t lg = 1;
  while (lg < 62 && ((int64_t)1 << lg) < k) lg++;
  int64_t all = work_of(fz_prod2(tokens, experts));
  c->work = all > INT64_MAX / lg ? INT64_MAX : all * lg;
}

static kb_status call_moe_route(fz_call *c, kb_context *ctx) {
  return DT3(kb_moe_route, ctx, D("tokens"), D("experts"), D("top_k"), (kb_moe_routing)I("routing"), P("logits"),
             P("ids"), P("weights"));
}

/* Per token: top_k distinct experts in [0, experts), weights in [0, 1]
 * (float32 logits: ranked by decreasing logit, equal ones by index), and
 * for the renormalising routings weights summing to 1 within rounding. */
static void post_moe_route(fz_call *c) {
  int64_t tokens = D("tokens"), experts = D("experts"), k = D("top_k"), routing = I("routing");
  const int32_t *ids = (const int32_t *)P("ids");
  const float *w = (const float *)P("weights");
  const float *x = c->spec->dtype == FZ_F32 ? (const float *)P("logits") : NULL;
  for (int64_t t = 0; t < tokens; t++) {
    double sum = 0.0;
    for (int64_t j = 0; j < k; j++) {
      int32_t id = ids[t * k + j];
      float wj = w[t * k + j];
      if (id < 0 || id >= experts) fz_fail(c, "ids[%lld, %lld] = %d is not an expert", (long long)t, (long long)j, id);
      for (int64_t i = 0; i < j; i++)
        if (ids[t * k + i] == id) fz_fail(c, "expert %d appears twice in token %lld", id, (long long)t);
      if (!(wj >= 0.0f && wj <= 1.0f))
        fz_fail(c, "weights[%lld, %lld] = %g is not in [0, 1]", (long long)t, (long long)j, (double)wj);
      sum += wj;
      if (x != NULL && j > 0) {
        float a = x[t * experts + ids[t * k + j - 1]], b = x[t * experts + id];
        if (a < b || (a == b && ids[t * k + j - 1] > id))
          fz_fail(c, "token %lld: rank %lld (expert %d) after expert %d", (long long)t, (long long)j, id,
                  ids[t * k + j - 1]);
      }
    }
    if (routing != KB_MOE_ROUTING_SOFTMAX_TOPK && fabs(sum - 1.0) > 1e-5 * (double)k)
      fz_fail(c, "token %lld: the weights sum to %.9g", (long long)t, sum);
  }
}

/* ---- weights in storage formats ---- */

/* The formats of kb_dtype as kernelbridge.h describes them, written here
 * without the library: `unit` bytes per `per` elements of a row. */
static bool dtype_layout(int64_t type, int64_t *unit, int64_t *per) {
  switch (type) {
    case KB_DTYPE_F32:
      *unit = 4, *per = 1;
      return true;
    case KB_DTYPE_F16:
    case KB_DTYPE_BF16:
      *unit = 2, *per = 1;
      return true;
    case KB_DTYPE_Q8_0:
      *unit = 34, *per = 32;
      return true;
    case KB_DTYPE_Q4_0:
      *unit = 18, *per = 32;
      return true;
    default:
      return false;
  }
}

static bool blocked(int64_t type) { return type == KB_DTYPE_Q8_0 || type == KB_DTYPE_Q4_0; }

/* Bytes of one row of cols elements (a valid type and cols).  Computed
 * before the checks see whether any row is read, so a count that cannot
 * exist (huge cols with no rows: a call that succeeds) saturates instead
 * of overflowing; it is only used when rows are read, where the library
 * has checked the size. */
static int64_t row_bytes(int64_t type, int64_t cols) {
  int64_t unit, per;
  if (!dtype_layout(type, &unit, &per)) return 0;
  return cols / per > INT64_MAX / unit ? INT64_MAX : cols / per * unit;
}

/* The byte tensor `tensor` is `bytes` long, whatever the fuzzer chose, so
 * that wrong counts are exercised.  The call must fail when no count can be
 * right (the type is not a kb_dtype, cols not a multiple of a block
 * format's 32, the count overflows) or this one is not kb_dtype_bytes(type,
 * rows, cols).  Negative sizes are the engine's rule. */
static void shape_bytes(fz_call *c, const char *type_name, const char *tensor, const char *bytes_name, int64_t rows,
                        int64_t cols, const char *cols_name) {
  int64_t type = I(type_name), bytes = D(bytes_name), unit, per;
  fz_extent(c, tensor, bytes < 0 ? FZ_NEG : bytes);
  if (c->must_fail || rows < 0 || cols < 0) return;
  if (!dtype_layout(type, &unit, &per)) {
    snprintf(c->why, sizeof c->why, "%s = %lld is not a kb_dtype", type_name, (long long)type);
  } else if (cols % per != 0) {
    snprintf(c->why, sizeof c->why, "%s = %lld is not a multiple of 32 (%s = %lld)", cols_name, (long long)cols,
             type_name, (long long)type);
  } else {
    int64_t units = fz_prod2(rows, cols / per);
    if (units == FZ_OVER || units > INT64_MAX / unit) {
      snprintf(c->why, sizeof c->why, "the byte count of %s overflows", tensor);
    } else if (units * unit != bytes) {
      snprintf(c->why, sizeof c->why, "%s = %lld, but %s takes %lld bytes", bytes_name, (long long)bytes, tensor,
               (long long)(units * unit));
    } else {
      return;
    }
  }
  c->must_fail = true;
}

static unsigned le16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* binary16 -> float32, from the format's definition. */
static float ref_f16(unsigned h) {
  unsigned e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m != 0 ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), (int)e - 25);
  return h & 0x8000 ? -v : v;
}

/* float32 -> binary16, round to nearest even; NaN -> a NaN. */
static unsigned ref_to_f16(float f) {
  uint32_t x = f32_to_bits(f), a = x & 0x7fffffff;
  unsigned sign = (x >> 16) & 0x8000;
  if (a > 0x7f800000) return sign | 0x7e00;
  if (a >= 0x477ff000) return sign | 0x7c00; /* 65520 and beyond round to infinity */
  if (a < 0x38800000) /* below 2^-14: a multiple of 2^-24, rint rounds half to even */
    return sign | (unsigned)rint((double)bits_to_f32(a) * 16777216.0);
  unsigned h = (((a >> 23) - 112) << 10) | ((a >> 13) & 1023), rest = a & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* a carry into the exponent is right */
  return sign | h;
}

/* float32 -> bfloat16, round to nearest even; NaN -> a NaN. */
static unsigned ref_to_bf16(float f) {
  uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return (x >> 16) | 0x40;
  return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

static bool f16_is_nan(unsigned h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

/* Element e of a row stored as type (scales and elements little-endian). */
static float ref_elem(int64_t type, const unsigned char *row, int64_t e) {
  switch (type) {
    case KB_DTYPE_F32: {
      const unsigned char *p = row + 4 * e;
      return bits_to_f32((uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16);
    }
    case KB_DTYPE_F16:
      return ref_f16(le16(row + 2 * e));
    case KB_DTYPE_BF16:
      return bits_to_f32((uint32_t)le16(row + 2 * e) << 16);
    case KB_DTYPE_Q8_0: {
      const unsigned char *b = row + e / 32 * 34;
      int q = b[2 + e % 32];
      return ref_f16(le16(b)) * (float)(q < 128 ? q : q - 256);
    }
    default: { /* Q4_0 */
      const unsigned char *b = row + e / 32 * 18;
      int j = (int)(e % 32), q = j < 16 ? b[2 + j] & 15 : b[2 + j - 16] >> 4;
      return ref_f16(le16(b)) * (float)(q - 8);
    }
  }
}

static bool same_value(float a, float b) { return (isnan(a) && isnan(b)) || f32_to_bits(a) == f32_to_bits(b); }

static void *fz_alloc(int64_t bytes) {
  void *p = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (p == NULL) abort();
  return p;
}

static void shape_quantize(fz_call *c) {
  int64_t all = fz_prod2(D("rows"), D("cols"));
  fz_extent(c, "x", all);
  shape_bytes(c, "type", "y", "y_bytes", D("rows"), D("cols"), "cols");
  c->work = work_of(all);
}

static kb_status call_quantize(fz_call *c, kb_context *ctx) {
  return kb_quantize(ctx, (kb_dtype)I("type"), D("rows"), D("cols"), P("x"), P("y"), D("y_bytes"));
}

/* GGML's reference quantization of one block of 32 (kernelbridge.h,
 * kb_quantize), checked against the stored block: the scale bit for bit,
 * and the codes unless 1 / d overflows (|d| < 2^-128, where the scale is 0
 * and the codes mean nothing).  Fails the call when the block could not be
 * quantized (an element not finite, a scale beyond binary16). */
static void check_block(fz_call *c, int64_t type, const float *x, const unsigned char *b, int64_t r, int64_t col) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; j++) {
    if (!isfinite(x[j])) fz_fail(c, "OK, but x[%lld, %lld] = %g", (long long)r, (long long)(col + j), (double)x[j]);
    if (type == KB_DTYPE_Q8_0) {
      amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    } else if (amax < fabsf(x[j])) { /* Q4_0: the first element of largest magnitude */
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  float d = type == KB_DTYPE_Q8_0 ? amax / 127.0f : max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  unsigned scale = ref_to_f16(d);
  if ((scale & 0x7fff) == 0x7c00)
    fz_fail(c, "OK, but the scale of the block at x[%lld, %lld] (%g) overflows binary16", (long long)r, (long long)col,
            (double)d);
  if (le16(b) != scale)
    fz_fail(c, "the block at y row %lld, column %lld has scale 0x%04x, not 0x%04x (d = %g)", (long long)r,
            (long long)col, le16(b), scale, (double)d);
  if (isinf(id)) return;
  for (int j = 0; j < 32; j++) {
    unsigned want, got;
    if (type == KB_DTYPE_Q8_0) {
      want = (unsigned)(int)roundf(x[j] * id) & 0xff;
      got = b[2 + j];
    } else {
      float v = x[j] * id + 8.5f; /* in [0.5, 16.5]: trunc, then at most 15 */
      want = v >= 15.0f ? 15 : (unsigned)(int)v;
      got = j < 16 ? b[2 + j] & 15 : b[2 + j - 16] >> 4;
    }
    if (want != got)
      fz_fail(c, "x[%lld, %lld] = %.9g is stored as code %u, GGML's reference gives %u", (long long)r,
              (long long)(col + j), (double)x[j], got, want);
  }
}

/* F32 copies, F16 and BF16 round to nearest even, Q8_0 and Q4_0 are GGML's
 * reference; and kb_dequantize brings block formats back within half a
 * step d (Q8_0; one step for Q4_0, whose largest code is 7 while the scale
 * maps the block's extreme to -8) plus what rounding the scale to binary16
 * moved, or as zeros where the scale rounds to binary16 zero. */
static void post_quantize(fz_call *c) {
  int64_t type = I("type"), rows = D("rows"), cols = D("cols"), rb = row_bytes(type, cols);
  const float *x = (const float *)P("x");
  const unsigned char *y = (const unsigned char *)P("y");
  if (rows == 0 || cols == 0) return;
  for (int64_t r = 0; r < rows; r++) {
    const unsigned char *row = y + r * rb;
    for (int64_t e = 0; e < cols; e++) {
      float v = x[r * cols + e];
      if (type == KB_DTYPE_F32 && f32_to_bits(ref_elem(type, row, e)) != f32_to_bits(v))
        fz_fail(c, "y[%lld, %lld] is not x's bytes", (long long)r, (long long)e);
      if (type == KB_DTYPE_F16 || type == KB_DTYPE_BF16) {
        unsigned got = le16(row + 2 * e), want = type == KB_DTYPE_F16 ? ref_to_f16(v) : ref_to_bf16(v);
        bool nan = type == KB_DTYPE_F16 ? f16_is_nan(got) : isnan(bits_to_f32((uint32_t)got << 16));
        if (isnan(v) ? !nan : got != want)
          fz_fail(c, "x[%lld, %lld] = %.9g is stored as 0x%04x, not 0x%04x", (long long)r, (long long)e, (double)v,
                  got, want);
      }
    }
    if (blocked(type))
      for (int64_t b = 0; b < cols / 32; b++)
        check_block(c, type, x + r * cols + b * 32, row + b * row_bytes(type, 32), r, b * 32);
  }
  if (!blocked(type)) return;
  float *back = (float *)fz_alloc(rows * cols * (int64_t)sizeof(float));
  kb_status st = kb_dequantize(NULL, (kb_dtype)type, rows, cols, y, D("y_bytes"), back);
  if (st != KB_STATUS_OK) fz_fail(c, "kb_dequantize of the result: %s", kb_status_string(st));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 0; b < cols / 32; b++) {
      const float *xb = x + r * cols + b * 32;
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < 32; j++)
        if (amax < fabsf(xb[j])) amax = fabsf(xb[j]), max = xb[j];
      double d = type == KB_DTYPE_Q8_0 ? amax / 127.0f : max / -8.0f;
      double d16 = ref_f16(le16(y + r * rb + b * row_bytes(type, 32)));
      /* A scale that rounds to binary16 zero (the block is 0, or below
       * 2^-25 * 127 in magnitude) makes the block come back as zeros. */
      double bound = d16 == 0 ? 0.0
                              : (type == KB_DTYPE_Q8_0 ? 0.5 : 1.0) * fabs(d) * (1 + ldexp(1, -14)) +
                                    (type == KB_DTYPE_Q8_0 ? 127 : 8) * fabs(d - d16);
      for (int j = 0; j < 32; j++) {
        double err = d16 == 0 ? fabs((double)back[r * cols + b * 32 + j])
                              : fabs((double)xb[j] - (double)back[r * cols + b * 32 + j]);
        if (!(err <= bound))
          fz_fail(c, "x[%lld, %lld] = %.9g comes back as %.9g, %g away (bound %g, scale %g)", (long long)r,
                  (long long)(b * 32 + j), (double)xb[j], (double)back[r * cols + b * 32 + j], err, bound, d);
      }
    }
  free(back);
}

static void shape_dequantize(fz_call *c) {
  int64_t all = fz_prod2(D("rows"), D("cols"));
  fz_extent(c, "y", all);
  shape_bytes(c, "type", "x", "x_bytes", D("rows"), D("cols"), "cols");
  c->work = work_of(all);
}

static kb_status call_dequantize(fz_call *c, kb_context *ctx) {
  return kb_dequantize(ctx, (kb_dtype)I("type"), D("rows"), D("cols"), P("x"), D("x_bytes"), P("y"));
}

/* Every element is the format's value of the stored bytes, exactly (F32:
 * the bytes themselves). */
static void post_dequantize(fz_call *c) {
  int64_t type = I("type"), rows = D("rows"), cols = D("cols"), rb = row_bytes(type, cols);
  const unsigned char *x = (const unsigned char *)P("x");
  const float *y = (const float *)P("y");
  if (cols == 0) return; /* rows may be huge */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t e = 0; e < cols; e++) {
      float want = ref_elem(type, x + r * rb, e), got = y[r * cols + e];
      if (!same_value(got, want) || (type == KB_DTYPE_F32 && f32_to_bits(got) != f32_to_bits(want)))
        fz_fail(c, "y[%lld, %lld] = %.9g, the stored element is %.9g", (long long)r, (long long)e, (double)got,
                (double)want);
    }
}

/* act must be a kb_activation (kb_linear_w, kb_linear_glu_w, kb_moe_experts). */
static void check_act(fz_call *c) {
  int64_t act = I("act");
  if (!c->must_fail && (act < KB_ACTIVATION_NONE || act > KB_ACTIVATION_SILU)) {
    c->must_fail = true;
    snprintf(c->why, sizeof c->why, "act = %lld is not a kb_activation", (long long)act);
  }
}

static void shape_linear_w(fz_call *c) {
  int64_t rows = D("rows"), in = D("in_features"), out = D("out_features");
  fz_extent(c, "x", fz_prod2(rows, in));
  fz_extent(c, "bias", out < 0 ? FZ_NEG : out);
  fz_extent(c, "y", fz_prod2(rows, out));
  shape_bytes(c, "weight_type", "weight", "weight_bytes", out, in, "in_features");
  check_act(c);
  c->work = sat_add(work_of(fz_prod(3, (int64_t[]){rows, in, out})), work_of(fz_prod2(rows, out)));
}

static kb_status call_linear_w(fz_call *c, kb_context *ctx) {
  return kb_linear_w(ctx, D("rows"), D("in_features"), D("out_features"), P("x"), (kb_dtype)I("weight_type"),
                     P("weight"), D("weight_bytes"), P("bias"), (kb_activation)I("act"), P("y"));
}

/* Block formats (kernelbridge.h, docs/kernels.md): a row of x with a NaN or
 * infinity gives NaN everywhere; otherwise, without an activation or with
 * relu (1-Lipschitz), every output lies within the documented bound of the
 * float64 product of the stored weights and x (plus the bias's rounding,
 * and 2^-149 per float operation, which the relative bound leaves out for
 * results that underflow), unless something overflows. */
static void post_linear_q(fz_call *c) {
  int64_t rows = D("rows"), in = D("in_features"), out = D("out_features"), act = I("act"), nb = in / 32;
  int64_t type = I("weight_type"), rb = row_bytes(type, in);
  const float *x = (const float *)P("x"), *bias = (const float *)P("bias"), *y = (const float *)P("y");
  const unsigned char *w = (const unsigned char *)P("weight");
  if (out == 0) return; /* rows may be huge */
  float *dx = (float *)fz_alloc(nb * (int64_t)sizeof(float));
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * in;
    bool finite = true;
    double t_max = 0;
    for (int64_t b = 0; b < nb; b++) {
      float amax = 0.0f;
      for (int j = 0; j < 32; j++) {
        finite = finite && isfinite(xr[b * 32 + j]);
        amax = fabsf(xr[b * 32 + j]) > amax ? fabsf(xr[b * 32 + j]) : amax;
      }
      dx[b] = amax / 127.0f;
      if (dx[b] * 65024.0 > t_max) t_max = dx[b] * 65024.0; /* 4 * 128 * 127: the largest lane sum */
    }
    for (int64_t o = 0; o < out; o++) {
      float got = y[r * out + o];
      if (!finite) {
        if (!isnan(got)) fz_fail(c, "row %lld of x is not finite, but y[%lld, %lld] = %g", (long long)r,
                                 (long long)r, (long long)o, (double)got);
        continue;
      }
      if (act != KB_ACTIVATION_NONE && act != KB_ACTIVATION_RELU) continue;
      double z = 0, quant = 0, mag = 0, under = 0;
      bool weights_finite = true;
      for (int64_t b = 0; b < nb; b++) {
        double wsum = 0;
        const unsigned char *blk = w + o * rb + b * (type == KB_DTYPE_Q8_0 ? 34 : 18);
        under += fabs((double)ref_f16(le16(blk))) + 1;
        for (int j = 0; j < 32; j++) {
          double wv = ref_elem(type, w + o * rb, b * 32 + j), xv = xr[b * 32 + j];
          weights_finite = weights_finite && isfinite(wv);
          z += wv * xv;
          wsum += fabs(wv);
          mag += fabs(wv) * (fabs(xv) + dx[b]);
        }
        quant += dx[b] / 2 * (1 + ldexp(1, -20)) * wsum;
        under += 16 * wsum; /* 2^-143 sum |W| = 2^-147 * 16 sum |W| */
      }
      if (!weights_finite) continue;
      double bv = bias != NULL ? bias[o] : 0.0, want = z + bv;
      /* Gradual underflow (docs/kernels.md): 2^-143 sum |W| + 2^-147 sum_b (|dw_b| + 1). */
      double tol = quant + ((double)nb / 8 + 5) * ldexp(1, -23) * mag + (16.0 * (double)nb + 8) * ldexp(1, -149) +
                   ldexp(1, -147) * under;
      if (bias != NULL) tol = tol * (1 + ldexp(1, -23)) + ldexp(1, -23) * fabs(want) + ldexp(1, -149);
      if (act == KB_ACTIVATION_RELU) want = want > 0 ? want : 0;
      /* An overflow leaves a non-finite sum, which relu may turn into 0. */
      bool may_overflow = !(mag + fabs(bv) < FLT_MAX / 4 && t_max < FLT_MAX / 4);
      if (!isfinite(got) && !may_overflow)
        fz_fail(c, "y[%lld, %lld] = %g, but nothing can overflow (the product is %g)", (long long)r, (long long)o,
                (double)got, z);
      if (may_overflow && (!isfinite(got) || act == KB_ACTIVATION_RELU)) continue;
      if (!(fabs(got - want) <= tol))
        fz_fail(c, "y[%lld, %lld] = %.9g, the float64 product of the stored weights is %.9g: %g away, bound %g",
                (long long)r, (long long)o, (double)got, want, fabs(got - want), tol);
    }
  }
  free(dx);
}

/* F32, F16, BF16: kb_linear on the widened weights, bit for bit (NaN for
 * NaN); block formats: post_linear_q. */
static void post_linear_w(fz_call *c) {
  int64_t rows = D("rows"), in = D("in_features"), out = D("out_features"), type = I("weight_type");
  if (blocked(type)) {
    post_linear_q(c);
    return;
  }
  if (rows == 0 || out == 0) return;
  int64_t rb = row_bytes(type, in);
  const unsigned char *w = (const unsigned char *)P("weight");
  const float *y = (const float *)P("y");
  float *wide = (float *)fz_alloc(out * in * (int64_t)sizeof(float));
  float *ref = (float *)fz_alloc(rows * out * (int64_t)sizeof(float));
  for (int64_t o = 0; o < out; o++)
    for (int64_t i = 0; i < in; i++) wide[o * in + i] = ref_elem(type, w + o * rb, i);
  kb_status st = kb_linear(NULL, rows, in, out, (const float *)P("x"), wide, (const float *)P("bias"),
                           (kb_activation)I("act"), ref);
  if (st != KB_STATUS_OK) fz_fail(c, "kb_linear on the widened weights: %s", kb_status_string(st));
  for (int64_t k = 0; k < rows * out; k++)
    if (!same_value(y[k], ref[k]))
      fz_fail(c, "y[%lld, %lld] = %.9g, kb_linear on the widened weights gives %.9g", (long long)(k / out),
              (long long)(k % out), (double)y[k], (double)ref[k]);
  free(wide);
  free(ref);
}

static void shape_embedding_w(fz_call *c) {
  int64_t n_ids = D("n_ids"), vocab = D("vocab"), dim = D("dim");
  fz_extent(c, "ids", n_ids < 0 ? FZ_NEG : n_ids);
  fz_extent(c, "out", fz_prod2(n_ids, dim));
  shape_bytes(c, "table_type", "table", "table_bytes", vocab, dim, "dim");
  fz_range(c, "ids", 0, vocab > 0 && vocab < INT32_MAX ? (int32_t)vocab : 1, vocab < INT32_MAX ? (int32_t)vocab : -1);
  c->work = sat_add(work_of(fz_prod2(n_ids, dim)), work_of(n_ids));
}

static kb_status call_embedding_w(fz_call *c, kb_context *ctx) {
  return kb_embedding_w(ctx, D("n_ids"), D("vocab"), D("dim"), P("ids"), (kb_dtype)I("table_type"), P("table"),
                        D("table_bytes"), P("out"));
}

/* Every id is in [0, vocab) and its output row is the stored table row,
 * widened exactly (what post_dequantize checks of kb_dequantize). */
static void post_embedding_w(fz_call *c) {
  int64_t n_ids = D("n_ids"), vocab = D("vocab"), dim = D("dim"), type = I("table_type"), rb = row_bytes(type, dim);
  const int32_t *ids = (const int32_t *)P("ids");
  const unsigned char *table = (const unsigned char *)P("table");
  const float *out = (const float *)P("out");
  for (int64_t i = 0; i < n_ids; i++) {
    if (ids[i] < 0 || ids[i] >= vocab)
      fz_fail(c, "OK, but ids[%lld] = %d is outside [0, %lld)", (long long)i, ids[i], (long long)vocab);
    for (int64_t e = 0; e < dim; e++) {
      float want = ref_elem(type, table + ids[i] * rb, e), got = out[i * dim + e];
      if (!same_value(got, want))
        fz_fail(c, "out[%lld, %lld] = %.9g, element %lld of table row %d is %.9g", (long long)i, (long long)e,
                (double)got, (long long)e, ids[i], (double)want);
    }
  }
}

/* ---- known defects ---- */

/* Calls that hit a known, not yet fixed library defect (docs/reliability.md,
 * "Known defects"): the engine skips them so that fuzzing goes on finding
 * new ones, unless KB_FUZZ_KNOWN_DEFECTS=1.  The reproducers of the fixed
 * ones (D3, D4; D7, D8, D10 to D12) are the seed-fixed_* seeds of the gemm
 * and quant corpora; of open ones, seeds named seed-open_*. */
const char *fz_known_defect(fz_call *c) {
  (void)c;
  return NULL; /* none is open: D7, D8, D10, D11 and D12 are fixed, their seeds are seed-fixed_* */
}

/* ---- the table ---- */

/* One entry point in float32 (in `fam`) and its bfloat16 and float16
 * variants (in the "half" family). */
/* ---- decoder: KV cache ---- */

static void shape_kv_cache(fz_call *c) {
  int64_t batch = D("batch"), t = D("seq_new"), cap = D("capacity");
  int64_t rows_new = fz_prod4(batch, t, D("kv_heads"), D("head_dim"));
  int64_t rows_cache = fz_prod4(batch, cap, D("kv_heads"), D("head_dim"));
  fz_extent(c, "k_new", rows_new);
  fz_extent(c, "v_new", rows_new);
  fz_extent(c, "positions", batch < 0 ? FZ_NEG : batch);
  fz_extent(c, "k_cache", rows_cache);
  fz_extent(c, "v_cache", rows_cache);
  /* Mostly positions that fit ([0, capacity - seq_new]), sometimes -1. */
  int64_t room = cap >= 0 && t >= 0 && cap - t >= 0 && cap - t < INT32_MAX ? cap - t + 1 : 1;
  fz_range(c, "positions", 0, (int32_t)room, -1);
  c->work = sat_add(work_of(rows_new), work_of(batch));
}

static kb_status call_kv_cache(fz_call *c, kb_context *ctx) {
  return DT3(kb_kv_cache_append, ctx, D("batch"), D("kv_heads"), D("seq_new"), D("capacity"), D("head_dim"),
             FL("seq_major"), P("k_new"), P("v_new"), P("positions"), P("k_cache"), P("v_cache"));
}

/* Every new token's row is in the cache at its position (k and v), bytes
 * for bytes. */
static void post_kv_cache(fz_call *c) {
  int64_t batch = D("batch"), t = D("seq_new"), cap = D("capacity"), kvh = D("kv_heads"), d = D("head_dim");
  int64_t es = c->spec->dtype == FZ_F32 ? 4 : 2, row = d * es;
  const int32_t *pos = (const int32_t *)P("positions");
  const char *names[2][2] = {{"k_new", "k_cache"}, {"v_new", "v_cache"}};
  for (int kv = 0; kv < 2; kv++) {
    const char *src = (const char *)P(names[kv][0]), *dst = (const char *)P(names[kv][1]);
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < t; i++)
        for (int64_t h = 0; h < kvh; h++) {
          int64_t p = (int64_t)pos[b] + i;
          if (pos[b] < 0 || p >= cap) fz_fail(c, "OK, but positions[%lld] = %d does not fit", (long long)b, pos[b]);
          int64_t at = FL("seq_major") ? ((b * cap + p) * kvh + h) * row : ((b * kvh + h) * cap + p) * row;
          if (row > 0 && memcmp(dst + at, src + ((b * t + i) * kvh + h) * row, (size_t)row) != 0)
            fz_fail(c, "%s row (%lld, %lld, %lld) is not the new one", names[kv][1], (long long)b, (long long)p,
                    (long long)h);
        }
  }
}

/* ---- decoder: a float32 model over a 16-bit KV cache ---- */

static kb_status call_kv_cache_to16(fz_call *c, kb_context *ctx) {
  return (c->spec->dtype == FZ_BF16 ? kb_kv_cache_append_to_bf16 : kb_kv_cache_append_to_f16)(
      ctx, D("batch"), D("kv_heads"), D("seq_new"), D("capacity"), D("head_dim"), FL("seq_major"), P("k_new"),
      P("v_new"), P("positions"), P("k_cache"), P("v_cache"));
}

/* The float32 value of a 16-bit element of the spec's dtype (exact). */
static float wide16(const fz_call *c, uint16_t h) {
  uint32_t bits;
  if (c->spec->dtype == FZ_BF16) {
    bits = (uint32_t)h << 16;
  } else {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) {
      bits = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
      bits = sign | ((e + 112) << 23) | (m << 13);
    } else {
      float v = (float)m * 0x1p-24f; /* subnormal: exact in float32 */
      return sign ? -v : v;
    }
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Every new token's element is in the cache at its position, rounded to
 * the cache's format: NaN stays NaN, and otherwise the stored value is
 * one of the two format values around the float32 one (or infinity past
 * the format's range), with the same sign. */
static void post_kv_cache_to16(fz_call *c) {
  int64_t batch = D("batch"), t = D("seq_new"), cap = D("capacity"), kvh = D("kv_heads"), d = D("head_dim");
  const int32_t *pos = (const int32_t *)P("positions");
  const char *names[2][2] = {{"k_new", "k_cache"}, {"v_new", "v_cache"}};
  float rel = c->spec->dtype == FZ_BF16 ? 0x1p-7f : 0x1p-10f;
  float tiny = c->spec->dtype == FZ_BF16 ? 0x1p-133f : 0x1p-24f;
  for (int kv = 0; kv < 2; kv++) {
    const float *src = (const float *)P(names[kv][0]);
    const uint16_t *dst = (const uint16_t *)P(names[kv][1]);
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < t; i++)
        for (int64_t h = 0; h < kvh; h++)
          for (int64_t x = 0; x < d; x++) {
            int64_t p = (int64_t)pos[b] + i;
            int64_t at = (FL("seq_major") ? (b * cap + p) * kvh + h : (b * kvh + h) * cap + p) * d + x;
            float want = src[((b * t + i) * kvh + h) * d + x], got = wide16(c, dst[at]);
            bool ok = isnan(want) ? isnan(got)
                      : isinf(got) ? signbit(got) == signbit(want) && fabsf(want) >= 0x1p15f
                                   : fabsf(got - want) <= fmaxf(fabsf(want) * rel, tiny) &&
                                         (got == 0.0f || signbit(got) == signbit(want));
            if (!ok)
              fz_fail(c, "%s element (%lld, %lld, %lld, %lld) holds %g for %g", names[kv][1], (long long)b,
                      (long long)p, (long long)h, (long long)x, (double)got, (double)want);
          }
  }
}

static kb_status call_attention_ex_kv(fz_call *c, kb_context *ctx) {
  return (c->spec->dtype == FZ_BF16 ? kb_attention_ex_kv_bf16 : kb_attention_ex_kv_f16)(
      ctx, D("batch"), D("heads"), D("kv_heads"), D("seq_q"), D("seq_kv"), D("head_dim"), FL("seq_major"), P("q"),
      P("k"), P("v"), P("kv_lengths"), D("mask_batch"), D("mask_heads"), D("mask_q"), P("mask"), FL("causal"),
      FL("causal_bottom_right"), F("scale"), P("out"));
}

/* ---- decoder: gated feed-forward blocks on storage-format weights ---- */

static void shape_linear_glu_w(fz_call *c) {
  int64_t rows = D("rows"), in = D("in_features"), out = D("out_features");
  fz_extent(c, "x", fz_prod2(rows, in));
  fz_extent(c, "y", fz_prod2(rows, out));
  shape_bytes(c, "weight_type", "gate_weight", "gate_bytes", out, in, "in_features");
  shape_bytes(c, "weight_type", "up_weight", "up_bytes", out, in, "in_features");
  check_act(c);
  c->work = sat_add(work_of(fz_prod(3, (int64_t[]){rows, in, out})), work_of(fz_prod(3, (int64_t[]){rows, in, out})));
}

static kb_status call_linear_glu_w(fz_call *c, kb_context *ctx) {
  return kb_linear_glu_w(ctx, D("rows"), D("in_features"), D("out_features"), P("x"), (kb_dtype)I("weight_type"),
                         P("gate_weight"), D("gate_bytes"), P("up_weight"), D("up_bytes"), (kb_activation)I("act"),
                         P("y"));
}

static void shape_moe_experts(fz_call *c) {
  int64_t tokens = D("tokens"), hidden = D("hidden"), ffn = D("ffn"), experts = D("experts"), k = D("top_k");
  fz_extent(c, "x", fz_prod2(tokens, hidden));
  fz_extent(c, "ids", fz_prod2(tokens, k));
  fz_extent(c, "weights", fz_prod2(tokens, k));
  fz_extent(c, "y", fz_prod2(tokens, hidden));
  /* The experts' tensors stacked: [experts * ffn, hidden] and [experts *
   * hidden, ffn] take the bytes of experts [ffn, hidden] / [hidden, ffn]. */
  shape_bytes(c, "weight_type", "gate_weight", "gate_bytes", fz_prod2(experts, ffn), hidden, "hidden");
  shape_bytes(c, "weight_type", "up_weight", "up_bytes", fz_prod2(experts, ffn), hidden, "hidden");
  shape_bytes(c, "weight_type", "down_weight", "down_bytes", fz_prod2(experts, hidden), ffn, "ffn");
  check_act(c);
  /* Mostly ids in [0, experts), sometimes -1. */
  fz_range(c, "ids", 0, experts > 0 && experts < INT32_MAX ? (int32_t)experts : 1, -1);
  int64_t rows = fz_prod2(tokens, k);
  c->work = sat_add(work_of(fz_prod(4, (int64_t[]){rows, hidden, ffn, 3})), work_of(fz_prod2(tokens, hidden)));
}

static kb_status call_moe_experts(fz_call *c, kb_context *ctx) {
  return kb_moe_experts(ctx, D("tokens"), D("hidden"), D("ffn"), D("experts"), D("top_k"), P("x"), P("ids"),
                        P("weights"), (kb_dtype)I("weight_type"), P("gate_weight"), D("gate_bytes"), P("up_weight"),
                        D("up_bytes"), P("down_weight"), D("down_bytes"), (kb_activation)I("act"), P("y"));
}

/* Every id of a successful call lies in [0, experts). */
static void post_moe_experts(fz_call *c) {
  int64_t n = fz_prod2(D("tokens"), D("top_k")), experts = D("experts");
  const int32_t *ids = (const int32_t *)P("ids");
  for (int64_t p = 0; p < n; p++)
    if (ids[p] < 0 || ids[p] >= experts)
      fz_fail(c, "OK, but ids[%lld] = %d is not in [0, %lld)", (long long)p, ids[p], (long long)experts);
}

#define SPEC3(fam, name, sig, shape, call, post)                     \
  {fam, name, sig, FZ_F32, shape, call, post},                       \
      {"half", name "_bf16", sig, FZ_BF16, shape, call, post},       \
      {"half", name "_f16", sig, FZ_F16, shape, call, post}

/* Only the bfloat16 and float16 variants (in "half"), of an entry point
 * whose float32 spec came before them, so that appending them at the end
 * keeps every earlier spec's index in its family. */
#define SPEC16(fam, name, sig, shape, call, post)                    \
  {fam, name "_bf16", sig, FZ_BF16, shape, call, post},              \
      {fam, name "_f16", sig, FZ_F16, shape, call, post}

#define ATTN_SIG "d:batch d:heads d:kv_heads d:seq_q d:seq_kv d:head_dim"

const fz_spec fz_specs[] = {
    SPEC3("elementwise", "kb_silu", "d:n t:x:$:in t:y:$:out:alias=x", shape_n, call_silu, NULL),
    SPEC3("elementwise", "kb_gelu", "d:n t:x:$:in t:y:$:out:alias=x", shape_n, call_gelu, NULL),
    SPEC3("elementwise", "kb_gelu_tanh", "d:n t:x:$:in t:y:$:out:alias=x", shape_n, call_gelu_tanh, NULL),
    SPEC3("elementwise", "kb_add", "d:n t:a:$:in t:b:$:in t:y:$:out:alias=a,b", shape_n, call_add, NULL),
    SPEC3("elementwise", "kb_mul", "d:n t:a:$:in t:b:$:in t:y:$:out:alias=a,b", shape_n, call_mul, NULL),
    SPEC3("elementwise", "kb_scale", "d:n s:alpha:f32 t:x:$:in t:y:$:out:alias=x", shape_n, call_scale, NULL),
    SPEC3("rowwise", "kb_add_bias", "d:rows d:cols t:x:$:in t:bias:$:in t:y:$:out:alias=x", shape_rows,
          call_add_bias, NULL),
    SPEC3("rowwise", "kb_softmax", "d:rows d:cols t:x:$:in t:y:$:out:alias=x", shape_rows, call_softmax, NULL),
    SPEC3("rowwise", "kb_log_softmax", "d:rows d:cols t:x:$:in t:y:$:out:alias=x", shape_rows, call_log_softmax,
          NULL),
    SPEC3("rowwise", "kb_rmsnorm", "d:rows d:cols t:x:$:in t:weight:$:in s:eps:f32 t:y:$:out:alias=x", shape_rows,
          call_rmsnorm, NULL),
    SPEC3("rowwise", "kb_layernorm",
          "d:rows d:cols t:x:$:in t:weight:$:in:null t:bias:$:in:null s:eps:f32 t:y:$:out:alias=x", shape_rows,
          call_layernorm, NULL),
    SPEC3("gemm", "kb_gemm",
          "f:trans_a f:trans_b d:m d:n d:k s:alpha:f32 t:a:$:in d:lda t:b:$:in d:ldb s:beta:f32 t:c:$:inout d:ldc",
          shape_gemm, call_gemm, post_gemm),
    {"embedding_rope", "kb_embedding", "d:n_ids d:vocab d:dim t:ids:i32:in t:table:f32:in t:out:f32:out", FZ_F32,
     shape_embedding, call_embedding, post_embedding},
    {"embedding_rope", "kb_rope", "d:seq d:heads d:head_dim t:x:f32:in t:positions:i32:in s:theta:f32 t:y:f32:out:alias=x",
     FZ_F32, shape_rope, call_rope, NULL},
    SPEC3("attention", "kb_attention",
          ATTN_SIG " t:q:$:in t:k:$:in t:v:$:in f:causal s:scale:f32 t:out:$:out", shape_attention_common,
          call_attention, NULL),
    {"cross_entropy", "kb_cross_entropy",
     "d:rows d:classes t:logits:f32:in t:targets:i32:in s:ignore_index:i32 t:losses:f32:out t:mean_loss:f32:out",
     FZ_F32, shape_cross_entropy, call_cross_entropy, post_cross_entropy},
    {"cross_entropy", "kb_cross_entropy_backward",
     "d:rows d:classes t:logits:f32:in t:targets:i32:in s:ignore_index:i32 s:dloss:f32 t:dlogits:f32:out:alias=logits",
     FZ_F32, shape_cross_entropy, call_cross_entropy_backward, NULL},
    {"adamw", "kb_adamw_step",
     "d:n t:params:f32:inout t:grads:f32:in t:m:f32:inout t:v:f32:inout s:lr:f32 s:beta1:f32 s:beta2:f32 s:eps:f32 "
     "s:weight_decay:f32 s:step:i64",
     FZ_F32, shape_n, call_adamw, NULL},
    {"sampling", "kb_argmax", "d:rows d:cols t:x:f32:in t:out:i32:out", FZ_F32, shape_rows_out, call_argmax,
     post_tokens},
    {"sampling", "kb_sample", "d:rows d:cols t:logits:f32:in s:temperature:f32 s:seed:u64 t:out:i32:out", FZ_F32,
     shape_rows_out, call_sample, post_tokens},
    {"sampling", "kb_topk_sample",
     "d:rows d:cols t:logits:f32:in d:k s:temperature:f32 s:seed:u64 t:out:i32:out", FZ_F32, shape_rows_out,
     call_topk, post_tokens},
    {"sampling", "kb_topp_sample",
     "d:rows d:cols t:logits:f32:in s:p:f32 s:temperature:f32 s:seed:u64 t:out:i32:out", FZ_F32, shape_rows_out,
     call_topp, post_tokens},
    SPEC3("linear", "kb_linear",
          "d:rows d:in_features d:out_features t:x:$:in t:weight:$:in t:bias:$:in:null s:act:i32 t:y:$:out",
          shape_linear, call_linear, NULL),
    SPEC3("attention", "kb_attention_ex",
          ATTN_SIG " f:seq_major t:q:$:in t:k:$:in t:v:$:in t:kv_lengths:i32:in:null d:mask_batch d:mask_heads "
                   "d:mask_q t:mask:$:in:null f:causal f:causal_bottom_right s:scale:f32 t:out:$:out",
          shape_attention_ex, call_attention_ex, NULL),
    SPEC3("gemm", "kb_gemm_batched",
          "f:trans_a f:trans_b d:batch d:m d:n d:k s:alpha:f32 t:a:$:in d:lda d:stride_a t:b:$:in d:ldb d:stride_b "
          "s:beta:f32 t:c:$:inout d:ldc d:stride_c",
          shape_gemm_batched, call_gemm_batched, post_gemm_batched),
    SPEC3("elementwise", "kb_glu",
          "d:rows d:cols t:gate:$:in d:ld_gate t:up:$:in d:ld_up s:act:i32 t:y:$:out", shape_glu, call_glu, NULL),
    SPEC3("rowwise", "kb_add_rmsnorm",
          "d:rows d:cols t:x:$:in t:residual:$:inout t:weight:$:in s:eps:f32 t:y:$:out:alias=x", shape_rows,
          call_add_rmsnorm, NULL),
    {"quant", "kb_quantize", "s:type:dtype d:rows d:cols t:x:f32:in t:y:u8:out d:y_bytes", FZ_F32, shape_quantize,
     call_quantize, post_quantize},
    {"quant", "kb_dequantize", "s:type:dtype d:rows d:cols t:x:u8:in d:x_bytes t:y:f32:out", FZ_F32, shape_dequantize,
     call_dequantize, post_dequantize},
    {"quant", "kb_linear_w",
     "d:rows d:in_features d:out_features t:x:f32:in s:weight_type:dtype t:weight:u8:in d:weight_bytes "
     "t:bias:f32:in:null s:act:i32 t:y:f32:out",
     FZ_F32, shape_linear_w, call_linear_w, post_linear_w},
    SPEC3("sampling", "kb_moe_route",
          "d:tokens d:experts d:top_k s:routing:i32 t:logits:$:in t:ids:i32:out t:weights:f32:out", shape_moe_route,
          call_moe_route, post_moe_route),
    {"quant", "kb_embedding_w",
     "d:n_ids d:vocab d:dim t:ids:i32:in s:table_type:dtype t:table:u8:in d:table_bytes t:out:f32:out", FZ_F32,
     shape_embedding_w, call_embedding_w, post_embedding_w},
    /* Appended last: a spec's index in its family is part of the seeds'
     * encoding, so new entry points go at the end. */
    SPEC3("embedding_rope", "kb_rope_ex",
          "d:batch d:seq d:q_heads d:kv_heads d:head_dim d:rotary_dim s:style:i32 t:positions:i32:in s:theta:f32 "
          "s:scaling:i32 s:factor:f32 s:low_freq_factor:f32 s:high_freq_factor:f32 s:original_max_position:i64 "
          "t:q:$:inout t:k:$:inout:null",
          shape_rope_ex, call_rope_ex, NULL),
    SPEC3("decoder", "kb_kv_cache_append",
          "d:batch d:kv_heads d:seq_new d:capacity d:head_dim f:seq_major t:k_new:$:in t:v_new:$:in "
          "t:positions:i32:in t:k_cache:$:inout t:v_cache:$:inout",
          shape_kv_cache, call_kv_cache, post_kv_cache),
    {"decoder", "kb_linear_glu_w",
     "d:rows d:in_features d:out_features t:x:f32:in s:weight_type:dtype t:gate_weight:u8:in d:gate_bytes "
     "t:up_weight:u8:in d:up_bytes s:act:i32 t:y:f32:out",
     FZ_F32, shape_linear_glu_w, call_linear_glu_w, NULL},
    {"decoder", "kb_moe_experts",
     "d:tokens d:hidden d:ffn d:experts d:top_k t:x:f32:in t:ids:i32:in t:weights:f32:in s:weight_type:dtype "
     "t:gate_weight:u8:in d:gate_bytes t:up_weight:u8:in d:up_bytes t:down_weight:u8:in d:down_bytes s:act:i32 "
     "t:y:f32:out",
     FZ_F32, shape_moe_experts, call_moe_experts, post_moe_experts},
    SPEC16("half", "kb_embedding", "d:n_ids d:vocab d:dim t:ids:i32:in t:table:$:in t:out:$:out", shape_embedding,
           call_embedding, post_embedding),
    SPEC16("half", "kb_argmax", "d:rows d:cols t:x:$:in t:out:i32:out", shape_rows_out, call_argmax, post_tokens),
    SPEC16("half", "kb_sample", "d:rows d:cols t:logits:$:in s:temperature:f32 s:seed:u64 t:out:i32:out",
           shape_rows_out, call_sample, post_tokens),
    SPEC16("half", "kb_topk_sample", "d:rows d:cols t:logits:$:in d:k s:temperature:f32 s:seed:u64 t:out:i32:out",
           shape_rows_out, call_topk, post_tokens),
    SPEC16("half", "kb_topp_sample", "d:rows d:cols t:logits:$:in s:p:f32 s:temperature:f32 s:seed:u64 t:out:i32:out",
           shape_rows_out, call_topp, post_tokens),
    /* A float32 model over a 16-bit cache: the spec's dtype is the cache's. */
    SPEC16("decoder", "kb_kv_cache_append_to",
           "d:batch d:kv_heads d:seq_new d:capacity d:head_dim f:seq_major t:k_new:f32:in t:v_new:f32:in "
           "t:positions:i32:in t:k_cache:$:inout t:v_cache:$:inout",
           shape_kv_cache, call_kv_cache_to16, post_kv_cache_to16),
    SPEC16("decoder", "kb_attention_ex_kv",
           ATTN_SIG " f:seq_major t:q:f32:in t:k:$:in t:v:$:in t:kv_lengths:i32:in:null d:mask_batch d:mask_heads "
                    "d:mask_q t:mask:f32:in:null f:causal f:causal_bottom_right s:scale:f32 t:out:f32:out",
           shape_attention_ex, call_attention_ex_kv, NULL),
};

const int fz_nspecs = (int)(sizeof fz_specs / sizeof fz_specs[0]);
