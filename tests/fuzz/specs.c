/* specs.c - every kernel entry point of kernelbridge.h as a fuzz spec:
 * its parameters (in C order), the declared size of each tensor, the call
 * and its postconditions.  Families group the entry points into fuzz
 * targets (one binary per family).  tests/fuzz/coverage_test.py checks that
 * every kernel of the header has a spec here. */
#include <math.h>
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
  return kb_embedding(ctx, D("n_ids"), D("vocab"), D("dim"), P("ids"), P("table"), P("out"));
}

/* Every output row is a copy of the table row its id names. */
static void post_embedding(fz_call *c) {
  int64_t n_ids = D("n_ids"), dim = D("dim");
  const int32_t *ids = (const int32_t *)P("ids");
  const float *table = (const float *)P("table"), *out = (const float *)P("out");
  if (dim == 0) return;
  for (int64_t i = 0; i < n_ids; i++)
    if (memcmp(out + i * dim, table + (int64_t)ids[i] * dim, (size_t)dim * sizeof(float)) != 0)
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

static void shape_rows_out(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols"), all = fz_prod2(rows, cols);
  fz_extent(c, strcmp(c->spec->fn, "kb_argmax") == 0 ? "x" : "logits", all);
  fz_extent(c, "out", rows < 0 ? FZ_NEG : rows);
  int64_t lg = 1;
  while (lg < 62 && ((int64_t)1 << lg) < cols) lg++;
  c->work = work_of(all) == 0 ? work_of(rows) : work_of(all) > INT64_MAX / lg ? INT64_MAX : work_of(all) * lg;
}

/* Every token is a column index; the sampling kernels never return a token
 * whose logit is -inf (it has weight 0). */
static void post_tokens(fz_call *c) {
  int64_t rows = D("rows"), cols = D("cols");
  bool argmax = strcmp(c->spec->fn, "kb_argmax") == 0;
  const float *x = (const float *)P(argmax ? "x" : "logits");
  const int32_t *out = (const int32_t *)P("out");
  for (int64_t r = 0; r < rows; r++) {
    if (out[r] < 0 || out[r] >= cols) fz_fail(c, "out[%lld] = %d is not a column", (long long)r, out[r]);
    if (!argmax && isinf(x[r * cols + out[r]]) && x[r * cols + out[r]] < 0)
      fz_fail(c, "out[%lld] = %d has logit -inf", (long long)r, out[r]);
  }
}

static kb_status call_argmax(fz_call *c, kb_context *ctx) {
  return kb_argmax(ctx, D("rows"), D("cols"), P("x"), P("out"));
}
static kb_status call_sample(fz_call *c, kb_context *ctx) {
  return kb_sample(ctx, D("rows"), D("cols"), P("logits"), F("temperature"), U("seed"), P("out"));
}
static kb_status call_topk(fz_call *c, kb_context *ctx) {
  return kb_topk_sample(ctx, D("rows"), D("cols"), P("logits"), D("k"), F("temperature"), U("seed"), P("out"));
}
static kb_status call_topp(fz_call *c, kb_context *ctx) {
  return kb_topp_sample(ctx, D("rows"), D("cols"), P("logits"), F("p"), F("temperature"), U("seed"), P("out"));
}

/* ---- known defects ---- */

/* Calls that hit a known, not yet fixed library defect (docs/reliability.md,
 * "Known defects"): the engine skips them so that fuzzing goes on finding
 * new ones, unless KB_FUZZ_KNOWN_DEFECTS=1.  None is open: the reproducers
 * of the fixed ones (D3, D4) are seeds of the gemm corpus. */
const char *fz_known_defect(fz_call *c) {
  (void)c;
  return NULL;
}

/* ---- the table ---- */

/* One entry point in float32 (in `fam`) and its bfloat16 and float16
 * variants (in the "half" family). */
#define SPEC3(fam, name, sig, shape, call, post)                     \
  {fam, name, sig, FZ_F32, shape, call, post},                       \
      {"half", name "_bf16", sig, FZ_BF16, shape, call, post},       \
      {"half", name "_f16", sig, FZ_F16, shape, call, post}

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
};

const int fz_nspecs = (int)(sizeof fz_specs / sizeof fz_specs[0]);
