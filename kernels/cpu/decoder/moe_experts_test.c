/* Tests of kb_linear_glu_w and kb_moe_experts:
 * - kb_linear_glu_w against kb_linear_w on each weight followed by kb_glu,
 *   bit for bit, for every storage format and activation, row counts on
 *   both sides of the small-m limit, output widths on both sides of the
 *   chunk sizes, 1 and 3 threads;
 * - kb_linear_glu_w (float32 weights) against a float64 evaluation;
 * - kb_moe_experts against each token's own composition of public calls
 *   (kb_linear_glu_w and kb_linear_w on that row alone, then the fma chain
 *   over the slots), bit for bit: every format, repeated experts, experts
 *   without tokens, top_k = 0, 1 and 3 threads;
 * - kb_moe_experts (float32 weights) against a float64 evaluation;
 * - bad inputs: typed status, message naming the argument, y untouched. */
#include <math.h>

#include "kernels/cpu/testutil/cpu_test.h"

static const kb_activation kActs[] = {KB_ACTIVATION_NONE, KB_ACTIVATION_RELU, KB_ACTIVATION_GELU,
                                      KB_ACTIVATION_GELU_TANH, KB_ACTIVATION_SILU};
static const kb_dtype kTypes[] = {KB_DTYPE_F32, KB_DTYPE_F16, KB_DTYPE_BF16, KB_DTYPE_Q8_0, KB_DTYPE_Q4_0};

/* A [rows, cols] float tensor stored as type (kb_quantize), its byte count
 * in *bytes.  Caller frees. */
static unsigned char *stored(kb_dtype type, int64_t rows, int64_t cols, const float *w, int64_t *bytes) {
  CHECK_OK(kb_dtype_bytes(type, rows, cols, bytes));
  unsigned char *p = malloc((size_t)(*bytes > 0 ? *bytes : 1));
  CHECK_OK(kb_quantize(NULL, type, rows, cols, w, p, *bytes));
  return p;
}

/* y = kb_linear_w(gate), kb_linear_w(up), kb_glu: the sequence the fused
 * call must reproduce. */
static void three_calls(kb_context *ctx, int64_t rows, int64_t in, int64_t out, const float *x, kb_dtype type,
                        const void *wg, const void *wu, int64_t bytes, kb_activation act, float *y) {
  float *g = alloc_f(rows * out), *u = alloc_f(rows * out);
  CHECK_OK(kb_linear_w(ctx, rows, in, out, x, type, wg, bytes, NULL, KB_ACTIVATION_NONE, g));
  CHECK_OK(kb_linear_w(ctx, rows, in, out, x, type, wu, bytes, NULL, KB_ACTIVATION_NONE, u));
  CHECK_OK(kb_glu(ctx, rows, out, g, out, u, out, act, y));
  free(g);
  free(u);
}

static void test_linear_glu_bits(void) {
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  static const int64_t kRows[] = {1, 3, 6, 16, 17, 40};
  static const int64_t kOut[] = {1, 63, 64, 65, 300};
  uint64_t seed = 1;
  for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++)
    for (size_t ri = 0; ri < sizeof kRows / sizeof kRows[0]; ri++)
      for (size_t oi = 0; oi < sizeof kOut / sizeof kOut[0]; oi++) {
        kb_dtype type = kTypes[ti];
        int64_t rows = kRows[ri], out = kOut[oi], in = ri % 2 == 0 ? 64 : 96;
        kb_activation act = kActs[(ri + oi + ti) % 5];
        float *x = alloc_f(rows * in), *wg = alloc_f(out * in), *wu = alloc_f(out * in);
        rand_fill(x, rows * in, seed++, -2.0f, 2.0f);
        rand_fill(wg, out * in, seed++, -0.5f, 0.5f);
        rand_fill(wu, out * in, seed++, -0.5f, 0.5f);
        int64_t bytes;
        unsigned char *sg = stored(type, out, in, wg, &bytes), *su = stored(type, out, in, wu, &bytes);
        float *want = alloc_f(rows * out), *y1 = alloc_f(rows * out), *y3 = alloc_f(rows * out);
        three_calls(c1, rows, in, out, x, type, sg, su, bytes, act, want);
        CHECK_OK(kb_linear_glu_w(c1, rows, in, out, x, type, sg, bytes, su, bytes, act, y1));
        CHECK_OK(kb_linear_glu_w(c3, rows, in, out, x, type, sg, bytes, su, bytes, act, y3));
        if (!same_bits_f(y1, want, rows * out) || !same_bits_f(y3, want, rows * out))
          fprintf(stderr, "type %d rows %lld out %lld act %d differs\n", (int)type, (long long)rows, (long long)out,
                  (int)act);
        CHECK(same_bits_f(y1, want, rows * out));
        CHECK(same_bits_f(y3, want, rows * out));
        free(x), free(wg), free(wu), free(sg), free(su), free(want), free(y1), free(y3);
      }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

/* A prefill-sized product with several chunks per thread on both engines. */
static void test_linear_glu_large(void) {
  enum { R = 70, I = 256, O = 700 };
  kb_context *c2 = make_ctx(2);
  float *x = alloc_f(R * I), *wg = alloc_f(O * I), *wu = alloc_f(O * I);
  rand_fill(x, R * I, 71, -1.0f, 1.0f);
  rand_fill(wg, O * I, 72, -0.2f, 0.2f);
  rand_fill(wu, O * I, 73, -0.2f, 0.2f);
  for (int q = 0; q < 2; q++) {
    kb_dtype type = q == 0 ? KB_DTYPE_F32 : KB_DTYPE_Q4_0;
    int64_t bytes;
    unsigned char *sg = stored(type, O, I, wg, &bytes), *su = stored(type, O, I, wu, &bytes);
    float *want = alloc_f(R * O), *y = alloc_f(R * O);
    three_calls(c2, R, I, O, x, type, sg, su, bytes, KB_ACTIVATION_SILU, want);
    CHECK_OK(kb_linear_glu_w(c2, R, I, O, x, type, sg, bytes, su, bytes, KB_ACTIVATION_SILU, y));
    CHECK(same_bits_f(y, want, R * O));
    free(sg), free(su), free(want), free(y);
  }
  free(x), free(wg), free(wu);
  kb_context_destroy(c2);
}

static double act64(kb_activation act, double v) {
  switch (act) {
    case KB_ACTIVATION_RELU:
      return v > 0 ? v : 0;
    case KB_ACTIVATION_GELU:
      return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case KB_ACTIVATION_GELU_TANH:
      return 0.5 * v * (1 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    case KB_ACTIVATION_SILU:
      return v / (1 + exp(-v));
    default:
      return v;
  }
}

/* float32 weights: each output within a relative 1e-5 of the float64 value
 * plus an absolute 1e-5 of the sizes of the terms (sums of 96 products of
 * terms below 1 in magnitude, float32 fma chains). */
static void test_linear_glu_float64(void) {
  enum { R = 5, I = 96, O = 70 };
  float x[R * I], wg[O * I], wu[O * I], y[R * O];
  rand_fill(x, R * I, 5, -1.0f, 1.0f);
  rand_fill(wg, O * I, 6, -1.0f, 1.0f);
  rand_fill(wu, O * I, 7, -1.0f, 1.0f);
  for (int a = 0; a < 5; a++) {
    CHECK_OK(kb_linear_glu_w(NULL, R, I, O, x, KB_DTYPE_F32, wg, sizeof wg, wu, sizeof wu, kActs[a], y));
    for (int r = 0; r < R; r++)
      for (int o = 0; o < O; o++) {
        double g = 0, u = 0, mg = 0, mu = 0;
        for (int i = 0; i < I; i++) {
          g += (double)x[r * I + i] * wg[o * I + i];
          u += (double)x[r * I + i] * wu[o * I + i];
          mg += fabs((double)x[r * I + i] * wg[o * I + i]);
          mu += fabs((double)x[r * I + i] * wu[o * I + i]);
        }
        double want = act64(kActs[a], g) * u;
        double tol = 1e-5 * fabs(want) + 2e-6 * (mg * fabs(u) + mu * (fabs(g) + mg));
        CHECK(fabs((double)y[r * O + o] - want) <= tol);
      }
  }
}

/* One token's expert output and weighted sum through public calls. */
static void moe_by_token(int64_t hidden, int64_t ffn, int64_t top_k, const float *xt, const int32_t *ids,
                         const float *w, kb_dtype type, const unsigned char *g, const unsigned char *u,
                         const unsigned char *d, int64_t up1, int64_t down1, kb_activation act, float *yt) {
  float *h = alloc_f(ffn), *o = alloc_f(hidden);
  for (int64_t c = 0; c < hidden; c++) yt[c] = 0.0f;
  for (int64_t j = 0; j < top_k; j++) {
    int64_t e = ids[j];
    if (ffn > 0) CHECK_OK(kb_linear_glu_w(NULL, 1, hidden, ffn, xt, type, g + e * up1, up1, u + e * up1, up1, act, h));
    CHECK_OK(kb_linear_w(NULL, 1, ffn, hidden, h, type, d + e * down1, down1, NULL, KB_ACTIVATION_NONE, o));
    for (int64_t c = 0; c < hidden; c++) yt[c] = fmaf(w[j], o[c], yt[c]);
  }
  free(h);
  free(o);
}

struct moe_case {
  int64_t tokens, hidden, ffn, experts, top_k;
};

static void test_moe_bits(void) {
  static const struct moe_case kCases[] = {
      {1, 64, 96, 4, 2},    /* decode */
      {7, 64, 32, 8, 2},    /* some experts without tokens */
      {33, 96, 64, 4, 3},   /* more rows than the small-m limit per expert */
      {5, 32, 64, 3, 1},
      {4, 32, 32, 2, 0},    /* top_k = 0: zeros */
  };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  uint64_t seed = 100;
  for (size_t ci = 0; ci < sizeof kCases / sizeof kCases[0]; ci++)
    for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++) {
      struct moe_case mc = kCases[ci];
      kb_dtype type = kTypes[ti];
      kb_activation act = kActs[(ci + ti) % 5];
      int64_t T = mc.tokens, H = mc.hidden, F = mc.ffn, E = mc.experts, K = mc.top_k;
      float *x = alloc_f(T * H), *w = alloc_f(T * K), *wg = alloc_f(E * F * H), *wu = alloc_f(E * F * H),
            *wd = alloc_f(E * H * F);
      int32_t *ids = alloc_i(T * K);
      rand_fill(x, T * H, seed++, -1.0f, 1.0f);
      rand_fill(w, T * K, seed++, 0.0f, 1.0f);
      rand_fill(wg, E * F * H, seed++, -0.3f, 0.3f);
      rand_fill(wu, E * F * H, seed++, -0.3f, 0.3f);
      rand_fill(wd, E * H * F, seed++, -0.3f, 0.3f);
      uint64_t s = seed++;
      /* Experts 0 and 1 only in the second case (the others get no token);
       * the third case names an expert twice in some rows. */
      for (int64_t p = 0; p < T * K; p++)
        ids[p] = (int32_t)(ci == 1 ? test_next(&s) % 2 : test_next(&s) % (uint64_t)E);
      int64_t gb, db;
      unsigned char *sg = stored(type, E * F, H, wg, &gb), *su = stored(type, E * F, H, wu, &gb);
      unsigned char *sd = stored(type, E * H, F, wd, &db);
      float *want = alloc_f(T * H), *y1 = alloc_f(T * H), *y3 = alloc_f(T * H);
      for (int64_t t = 0; t < T; t++)
        moe_by_token(H, F, K, x + t * H, ids + t * K, w + t * K, type, sg, su, sd, gb / E, db / E, act, want + t * H);
      CHECK_OK(kb_moe_experts(c1, T, H, F, E, K, x, ids, w, type, sg, gb, su, gb, sd, db, act, y1));
      CHECK_OK(kb_moe_experts(c3, T, H, F, E, K, x, ids, w, type, sg, gb, su, gb, sd, db, act, y3));
      if (!same_bits_f(y1, want, T * H) || !same_bits_f(y3, want, T * H))
        fprintf(stderr, "moe case %zu type %d differs\n", ci, (int)type);
      CHECK(same_bits_f(y1, want, T * H));
      CHECK(same_bits_f(y3, want, T * H));
      if (K == 0)
        for (int64_t i = 0; i < T * H; i++) CHECK(y1[i] == 0.0f && !signbit(y1[i]));
      free(x), free(w), free(wg), free(wu), free(wd), free(ids), free(sg), free(su), free(sd);
      free(want), free(y1), free(y3);
    }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

/* float32 weights against float64: y within the sum of each slot's
 * |weight| times the bound of test_linear_glu_float64 carried through the
 * down product (generous: 1e-5 relative to the sum of magnitudes). */
static void test_moe_float64(void) {
  enum { T = 6, H = 32, F = 48, E = 3, K = 2 };
  float x[T * H], w[T * K], wg[E * F * H], wu[E * F * H], wd[E * H * F], y[T * H];
  int32_t ids[T * K] = {0, 1, 2, 0, 1, 1, 2, 1, 0, 2, 1, 0};
  rand_fill(x, T * H, 21, -1.0f, 1.0f);
  rand_fill(w, T * K, 22, 0.0f, 1.0f);
  rand_fill(wg, E * F * H, 23, -0.5f, 0.5f);
  rand_fill(wu, E * F * H, 24, -0.5f, 0.5f);
  rand_fill(wd, E * H * F, 25, -0.5f, 0.5f);
  CHECK_OK(kb_moe_experts(NULL, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, sizeof wg, wu, sizeof wu, wd, sizeof wd,
                          KB_ACTIVATION_SILU, y));
  for (int t = 0; t < T; t++)
    for (int c = 0; c < H; c++) {
      double want = 0, mag = 0;
      for (int j = 0; j < K; j++) {
        int e = ids[t * K + j];
        double o = 0, om = 0;
        for (int f = 0; f < F; f++) {
          double g = 0, u = 0;
          for (int i = 0; i < H; i++) {
            g += (double)x[t * H + i] * wg[(e * F + f) * H + i];
            u += (double)x[t * H + i] * wu[(e * F + f) * H + i];
          }
          double hv = g / (1 + exp(-g)) * u;
          o += hv * wd[(e * H + c) * F + f];
          om += fabs(hv * wd[(e * H + c) * F + f]);
        }
        want += w[t * K + j] * o;
        mag += fabs(w[t * K + j]) * (fabs(o) + om);
      }
      CHECK(fabs((double)y[t * H + c] - want) <= 1e-5 * mag + 1e-30);
    }
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  enum { T = 2, H = 32, F = 32, E = 2, K = 2 };
  static float x[T * H], w[T * K], wg[E * F * H], wu[E * F * H], wd[E * H * F];
  float y[T * H];
  int32_t ids[T * K] = {0, 1, 1, 0};
  int64_t gb = sizeof wg, db = sizeof wd;
  fill_f(y, T * H, SENTINEL_F);
  ids[3] = 2;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[1, 1] must be in [0, experts) = [0, 2), got 2",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU,
                             y));
  ids[3] = -1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "got -1",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU,
                             y));
  ids[3] = 0;
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "up_bytes must be 8192 (up_weight [2, 32, 32] as F32), got 8188",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb - 4, wd, db,
                             KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "down_bytes",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db + 4,
                             KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ffn must be a multiple of 32 for Q8_0 down_weight",
              kb_moe_experts(ctx, T, H, 40, E, K, x, ids, w, KB_DTYPE_Q8_0, wg, gb, wu, gb, wd, db,
                             KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight_type must be a kb_dtype",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, (kb_dtype)3, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU,
                             y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "act must be a kb_activation",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, (kb_activation)7,
                             y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weights must not be NULL",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, NULL, KB_DTYPE_F32, wg, gb, wu, gb, wd, db,
                             KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "top_k",
              kb_moe_experts(ctx, T, H, F, E, -1, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db,
                             KB_ACTIVATION_SILU, y));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "gate_weight",
              kb_moe_experts(ctx, T, H, F, HUGE_DIM, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db,
                             KB_ACTIVATION_SILU, y));
  /* y overlapping an input. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x",
              kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU,
                             x));
  CHECK(all_f(y, T * H, SENTINEL_F));
  /* kb_linear_glu_w */
  float yl[2 * F];
  fill_f(yl, 2 * F, SENTINEL_F);
  int64_t b1 = (int64_t)F * H * 4;
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "gate_bytes must be 4096 (gate_weight [32, 32] as F32), got 4092",
              kb_linear_glu_w(ctx, 2, H, F, x, KB_DTYPE_F32, wg, b1 - 4, wu, b1, KB_ACTIVATION_SILU, yl));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "up_bytes",
              kb_linear_glu_w(ctx, 2, H, F, x, KB_DTYPE_F32, wg, b1, wu, b1 + 4, KB_ACTIVATION_SILU, yl));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "in_features must be a multiple of 32 for Q4_0",
              kb_linear_glu_w(ctx, 2, 40, F, x, KB_DTYPE_Q4_0, wg, b1, wu, b1, KB_ACTIVATION_SILU, yl));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "up_weight must not be NULL",
              kb_linear_glu_w(ctx, 2, H, F, x, KB_DTYPE_F32, wg, b1, NULL, b1, KB_ACTIVATION_SILU, yl));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "gate_weight",
              kb_linear_glu_w(ctx, 2, H, F, x, KB_DTYPE_F32, wg, b1, wu, b1, KB_ACTIVATION_SILU, wg + 8));
  CHECK(all_f(yl, 2 * F, SENTINEL_F));
  /* Empty calls succeed and write nothing. */
  CHECK_OK(kb_linear_glu_w(ctx, 0, H, F, x, KB_DTYPE_F32, wg, b1, wu, b1, KB_ACTIVATION_SILU, yl));
  CHECK_OK(kb_moe_experts(ctx, 0, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU, y));
  CHECK(all_f(y, T * H, SENTINEL_F));
  /* A successful call clears the message. */
  CHECK_OK(kb_moe_experts(ctx, T, H, F, E, K, x, ids, w, KB_DTYPE_F32, wg, gb, wu, gb, wd, db, KB_ACTIVATION_SILU, y));
  CHECK(kb_context_last_error(ctx)[0] == '\0');
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_linear_glu_bits);
  KB_RUN(test_linear_glu_large);
  KB_RUN(test_linear_glu_float64);
  KB_RUN(test_moe_bits);
  KB_RUN(test_moe_float64);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
