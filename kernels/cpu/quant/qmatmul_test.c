/* qmatmul_test.c - kb_linear_w, kb_quantize, kb_dequantize, kb_embedding_w,
 * kb_dtype_bytes.
 *
 * - Every vector variant of the quantized products (AVX2, AVX-VNNI,
 *   AVX512-VNNI: whichever this CPU runs) against the scalar reference, bit
 *   for bit: quantized activations, lane sums and outputs, on random rows
 *   and on blocks of zeros, NaN, infinities and extreme scales.
 * - kb_linear_w with Q8_0 / Q4_0 weights at m = 1, 7, 64 against the float64
 *   product of the dequantized weights and x, within the bound of
 *   docs/kernels.md; and the same bits for 1, 2 and 3 threads.
 * - kb_linear_w with F32 / F16 / BF16 weights: kb_linear's bits on the
 *   widened weights (m = 1, 7, 64, the small-m and the blocked paths).
 * - Bad inputs: each a clear error naming the argument, nothing written. */
#include <float.h>
#include <stdio.h>

#include "../dispatch.h"
#include "../half.h"
#include "kernels/cpu/testutil/cpu_test.h"
#include "qdot.h"

static const kb_dtype kFormats[2] = {KB_DTYPE_Q8_0, KB_DTYPE_Q4_0};

static unsigned char *quantized(kb_dtype type, int64_t rows, int64_t cols, const float *w, int64_t *bytes) {
  CHECK_OK(kb_dtype_bytes(type, rows, cols, bytes));
  unsigned char *q = (unsigned char *)malloc((size_t)(*bytes > 0 ? *bytes : 1));
  CHECK_OK(kb_quantize(NULL, type, rows, cols, w, q, *bytes));
  return q;
}

/* ---- the variants against the scalar reference ---- */

struct qvariant {
  const char *name;
  const struct kb_quant_ops *ops;
};

/* The variants this CPU can run (qdot.h's tables; dispatch.c picks one). */
static int variants(struct qvariant v[3]) {
  int n = 0;
  const struct kb_cpu_ops *avx2 = kb__cpu_ops_for(KB_ISA_AVX2);
  if (avx2 == NULL) return 0;
  v[n++] = (struct qvariant){"avx2", &kb__quant_ops_avx2};
  int vnni = kb__cpu_vnni();
  if ((vnni & 1) && kb__quant_ops_avx2_vnni.dot != NULL) v[n++] = (struct qvariant){"avx-vnni", &kb__quant_ops_avx2_vnni};
  if ((vnni & 2) && kb__quant_ops_avx512_vnni.dot != NULL)
    v[n++] = (struct qvariant){"avx512-vnni", &kb__quant_ops_avx512_vnni};
  return n;
}

struct qact_buf {
  struct kb_qact act;
  void *mem;
};

static void qact_alloc(struct qact_buf *b, int64_t rows, int64_t nb) {
  int64_t blocks = rows * nb;
  size_t qb = (size_t)blocks * 32, sb = (size_t)blocks * 32, db = (size_t)blocks * 4;
  CHECK(posix_memalign(&b->mem, 64, qb + sb + db + 64) == 0);
  b->act.nb = nb;
  b->act.q = (int8_t *)b->mem;
  b->act.s = (int32_t *)((char *)b->mem + qb);
  b->act.d = (float *)((char *)b->mem + qb + sb);
}

/* Activation rows exercising every branch: random, zeros, a NaN block, an
 * infinite element, tiny and huge scales, exact ties of x / d. */
static void special_rows(float *x, int64_t rows, int64_t k) {
  rand_fill(x, rows * k, 7, -3.0f, 3.0f);
  if (rows > 1)
    for (int64_t e = 0; e < 32; e++) x[1 * k + e] = 0.0f;
  if (rows > 2) x[2 * k + 40] = NAN;
  if (rows > 3) x[3 * k + 5] = -INFINITY;
  if (rows > 4)
    for (int64_t e = 0; e < k; e++) x[4 * k + e] *= 1e-30f;
  if (rows > 5)
    for (int64_t e = 0; e < k; e++) x[5 * k + e] *= 1e30f;
  if (rows > 6)
    for (int64_t e = 0; e < 32; e++) x[6 * k + e] = (float)(e % 5) * 63.5f - 127.0f; /* x / d hits .5 */
  if (rows > 7) /* tiny blocks: scales below FLT_MIN, 1 / d would overflow */
    for (int64_t e = 0; e < k; e++) x[7 * k + e] *= 1e-37f;
  if (rows > 8) /* subnormal elements */
    for (int64_t e = 0; e < k; e++) x[8 * k + e] *= 1e-43f;
}

static void test_variants_match_scalar(void) {
  struct qvariant v[3];
  int nv = variants(v);
  if (nv == 0) {
    printf("no vector level on this CPU: the scalar reference only\n");
    return;
  }
  const int64_t m = 9, k = 256, n = 37, nb = k / 32;
  float *x = alloc_f(m * k), *w = alloc_f(n * k);
  special_rows(x, m, k);
  rand_fill(w, n * k, 11, -1.0f, 1.0f);
  for (int64_t e = 0; e < 32; e++) w[3 * k + e] = 0.0f; /* a zero weight block */
  struct qact_buf ref, got;
  qact_alloc(&ref, m, nb);
  qact_alloc(&got, m, nb);
  kb__quant_ops_scalar.quantize_act(0, m, x, k, &ref.act);
  for (int f = 0; f < 2; f++) {
    int64_t bytes;
    unsigned char *wq = quantized(kFormats[f], n, k, w, &bytes);
    float *y_ref = alloc_f(m * n), *y = alloc_f(m * n);
    kb__quant_ops_scalar.dot((int)kFormats[f], m, n, &ref.act, wq, bytes / n, y_ref, n);
    for (int i = 0; i < nv; i++) {
      v[i].ops->quantize_act(0, m, x, k, &got.act);
      CHECK(memcmp(got.act.q, ref.act.q, (size_t)(m * nb * 32)) == 0);
      CHECK(memcmp(got.act.s, ref.act.s, (size_t)(m * nb * 32)) == 0);
      CHECK(memcmp(got.act.d, ref.act.d, (size_t)(m * nb * 4)) == 0);
      fill_f(y, m * n, SENTINEL_F);
      v[i].ops->dot((int)kFormats[f], m, n, &ref.act, wq, bytes / n, y, n);
      bool same = memcmp(y, y_ref, (size_t)(m * n) * sizeof(float)) == 0;
      if (!same) fprintf(stderr, "%s, format %d: outputs differ from the scalar reference\n", v[i].name, (int)kFormats[f]);
      CHECK(same);
    }
    /* Rows with a NaN or infinity give NaN everywhere; others are finite. */
    for (int64_t j = 0; j < n; j++) {
      CHECK(isnan(y_ref[2 * n + j]) && isnan(y_ref[3 * n + j]));
      CHECK(!isnan(y_ref[0 * n + j]) && y_ref[1 * n + j] == y_ref[1 * n + j]);
    }
    printf("format %d: %d vector variant(s) give the scalar bits\n", (int)kFormats[f], nv);
    free(wq);
    free(y_ref);
    free(y);
  }
  free(ref.mem);
  free(got.mem);
  free(x);
  free(w);
}

/* ---- accuracy against float64 ---- */

/* The documented bound (docs/kernels.md, "kb_linear_w"): for output (i, j)
 *   |y - sum_e W[j,e] x[i,e]| <= sum_b (dx_b / 2) (1 + 2^-20) sum_{e in b} |W[j,e]|
 *                                 + (nb / 8 + 5) 2^-23 sum_e |W[j,e]| (|x[i,e]| + dx_b)
 *                                 + 2^-143 sum_e |W[j,e]| + 2^-147 sum_b (|dw_b| + 1)
 * with dx_b = max_{e in b} |x[i,e]| / 127: half a step of each activation
 * times the weights, plus the float32 roundings of the block sums. */
static void check_accuracy(kb_context *ctx, kb_dtype type, int64_t m, int64_t k, int64_t n, float xscale) {
  float *x = alloc_f(m * k), *w = alloc_f(n * k), *wd = alloc_f(n * k), *y = alloc_f(m * n);
  rand_fill(x, m * k, 100 + (uint64_t)m, -2.0f, 2.0f);
  for (int64_t e = 0; e < m * k; e++) x[e] *= xscale;
  rand_fill(w, n * k, 200 + (uint64_t)n, -0.5f, 0.5f);
  int64_t bytes;
  unsigned char *wq = quantized(type, n, k, w, &bytes);
  CHECK_OK(kb_dequantize(NULL, type, n, k, wq, bytes, wd));
  CHECK_OK(kb_linear_w(ctx, m, k, n, x, type, wq, bytes, NULL, KB_ACTIVATION_NONE, y));
  int bad = 0;
  double worst = 0.0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double exact = 0.0, quant = 0.0, mag = 0.0, under = 0.0;
      for (int64_t b = 0; b < k / 32; b++) {
        double amax = 0.0, wsum = 0.0;
        const unsigned char *blk = wq + j * (bytes / n) + b * (type == KB_DTYPE_Q8_0 ? 34 : 18);
        under += 0x1p-147 * (fabs((double)kb_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8))) + 1);
        for (int64_t e = b * 32; e < b * 32 + 32; e++) amax = fmax(amax, fabs((double)x[i * k + e]));
        double dx = amax / 127.0;
        for (int64_t e = b * 32; e < b * 32 + 32; e++) {
          double we = wd[j * k + e], xe = x[i * k + e];
          exact += we * xe;
          wsum += fabs(we);
          mag += fabs(we) * (fabs(xe) + dx);
        }
        quant += dx / 2 * (1 + 0x1p-20) * wsum;
        under += 0x1p-143 * wsum;
      }
      double bound = quant + ((double)(k / 32) / 8 + 5) * 0x1p-23 * mag + under;
      double err = fabs((double)y[i * n + j] - exact);
      if (bound > 0) worst = fmax(worst, err / bound);
      if (!(err <= bound) && bad++ < 3)
        fprintf(stderr, "type %d m=%lld (%lld,%lld): %.9g vs %.9g, error %.3g > bound %.3g\n", (int)type, (long long)m,
                (long long)i, (long long)j, y[i * n + j], exact, err, bound);
    }
  CHECK(bad == 0);
  printf("type %d, m = %lld, k = %lld, n = %lld, x scaled by %g: largest error %.2f of the bound\n", (int)type,
         (long long)m, (long long)k, (long long)n, (double)xscale, worst);
  free(x);
  free(w);
  free(wd);
  free(y);
  free(wq);
}

static void test_quantized_accuracy(void) {
  kb_context *c2 = make_ctx(2);
  for (int f = 0; f < 2; f++) {
    check_accuracy(NULL, kFormats[f], 1, 512, 70, 1.0f);
    check_accuracy(c2, kFormats[f], 7, 256, 33, 1.0f);
    check_accuracy(c2, kFormats[f], 64, 128, 50, 1.0f);
    /* Tiny and subnormal activations: the underflow terms of the bound. */
    check_accuracy(c2, kFormats[f], 3, 256, 20, 1e-37f);
    check_accuracy(c2, kFormats[f], 3, 256, 20, 1e-42f);
  }
  kb_context_destroy(c2);
}

/* The same bits for 1, 2 and 3 threads, with bias and activation. */
static void test_quantized_threads(void) {
  const int64_t m = 5, k = 1024, n = 300;
  float *x = alloc_f(m * k), *w = alloc_f(n * k), *bias = alloc_f(n), *y1 = alloc_f(m * n), *y = alloc_f(m * n);
  rand_fill(x, m * k, 1, -1.0f, 1.0f);
  rand_fill(w, n * k, 2, -1.0f, 1.0f);
  rand_fill(bias, n, 3, -1.0f, 1.0f);
  for (int f = 0; f < 2; f++) {
    int64_t bytes;
    unsigned char *wq = quantized(kFormats[f], n, k, w, &bytes);
    CHECK_OK(kb_linear_w(NULL, m, k, n, x, kFormats[f], wq, bytes, bias, KB_ACTIVATION_SILU, y1));
    for (int64_t t = 1; t <= 3; t++) {
      kb_context *ctx = make_ctx(t);
      fill_f(y, m * n, SENTINEL_F);
      CHECK_OK(kb_linear_w(ctx, m, k, n, x, kFormats[f], wq, bytes, bias, KB_ACTIVATION_SILU, y));
      CHECK(same_bits_f(y, y1, m * n));
      kb_context_destroy(ctx);
    }
    /* The epilogue is kb_linear's: bias, then the activation kernel. */
    float *plain = alloc_f(m * n);
    CHECK_OK(kb_linear_w(NULL, m, k, n, x, kFormats[f], wq, bytes, NULL, KB_ACTIVATION_NONE, plain));
    CHECK_OK(kb_add_bias(NULL, m, n, plain, bias, plain));
    CHECK_OK(kb_silu(NULL, m * n, plain, plain));
    CHECK(same_bits_f(plain, y1, m * n));
    free(plain);
    free(wq);
  }
  free(x);
  free(w);
  free(bias);
  free(y1);
  free(y);
}

/* ---- float weights: kb_linear on the widened weights ---- */

static void test_float_weights_are_kb_linear(void) {
  static const kb_dtype types[3] = {KB_DTYPE_F32, KB_DTYPE_F16, KB_DTYPE_BF16};
  /* The small-m path, and the blocked one swapped (16-bit weights widened
   * a tile's rows at a time: 12, 16 and 30 rows against 2 x 100 columns;
   * 18 and 34, whose last 2 columns avx512 computes with the rows as
   * lanes; 24 and 40, whose last 8 it computes as a vector of 8; 27) and
   * not (64 rows). */
  enum { NM = 11 };
  static const int64_t ms[NM] = {1, 7, 12, 16, 18, 24, 27, 30, 34, 40, 64};
  /* Tails of every tile depth (8, 16, 32 steps), odd ones included; more
   * than one K block (512 steps on a 32 KiB L1: bfloat16 weights read in
   * place then read the element before a block's first), and rows 4 KiB
   * apart as bfloat16 (2048: the tiles that would crowd an L1 set). */
  enum { NK = 7 };
  static const int64_t ks[NK] = {1, 13, 45, 96, 100, 1100, 2048};
  const int64_t n = 200;
  kb_context *c2 = make_ctx(2);
  for (int t = 0; t < 3; t++)
    for (int mk = 0; mk < NM * NK; mk++) {
      int64_t m = ms[mk % NM], k = ks[mk / NM];
      float *x = alloc_f(m * k), *w = alloc_f(n * k), *wide = alloc_f(n * k), *bias = alloc_f(n);
      float *want = alloc_f(m * n), *y = alloc_f(m * n);
      rand_fill(x, m * k, 5, -1.0f, 1.0f);
      rand_fill(w, n * k, 6, -1.0f, 1.0f);
      rand_fill(bias, n, 8, -1.0f, 1.0f);
      int64_t bytes;
      unsigned char *wt = quantized(types[t], n, k, w, &bytes);
      CHECK_OK(kb_dequantize(NULL, types[t], n, k, wt, bytes, wide));
      CHECK_OK(kb_linear(c2, m, k, n, x, wide, bias, KB_ACTIVATION_GELU, want));
      CHECK_OK(kb_linear_w(c2, m, k, n, x, types[t], wt, bytes, bias, KB_ACTIVATION_GELU, y));
      CHECK(same_bits_f(y, want, m * n));
      /* Rows do not depend on the batch: row 0 alone gives the same bits. */
      CHECK_OK(kb_linear_w(NULL, 1, k, n, x, types[t], wt, bytes, bias, KB_ACTIVATION_GELU, y));
      CHECK(same_bits_f(y, want, n));
      free(x);
      free(w);
      free(wide);
      free(bias);
      free(want);
      free(y);
      free(wt);
    }
  kb_context_destroy(c2);
}

/* ---- conversions ---- */

static void test_conversions(void) {
  int64_t bytes = -1;
  CHECK_OK(kb_dtype_bytes(KB_DTYPE_Q4_0, 3, 64, &bytes));
  CHECK(bytes == 3 * 2 * 18);
  CHECK_OK(kb_dtype_bytes(KB_DTYPE_Q8_0, 2, 32, &bytes));
  CHECK(bytes == 2 * 34);
  CHECK_OK(kb_dtype_bytes(KB_DTYPE_BF16, 5, 7, &bytes));
  CHECK(bytes == 70);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_dtype_bytes(KB_DTYPE_Q4_0, 1, 33, &bytes));
  CHECK_STR_CONTAINS(kb_last_error(), "cols must be a multiple of 32 for Q4_0");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_dtype_bytes((kb_dtype)7, 1, 32, &bytes));
  CHECK_STR_CONTAINS(kb_last_error(), "type must be a kb_dtype");
  CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, kb_dtype_bytes(KB_DTYPE_F32, INT64_MAX / 2, 3, &bytes));

  /* Round trips: float16 / bfloat16 of representable values, exact. */
  float x[64], back[64];
  for (int e = 0; e < 64; e++) x[e] = (float)(e - 32) * 0.25f;
  uint16_t h[64];
  CHECK_OK(kb_quantize(NULL, KB_DTYPE_F16, 2, 32, x, h, sizeof h));
  CHECK_OK(kb_dequantize(NULL, KB_DTYPE_F16, 2, 32, h, sizeof h, back));
  CHECK(same_bits_f(back, x, 64));
  CHECK_OK(kb_quantize(NULL, KB_DTYPE_BF16, 2, 32, x, h, sizeof h));
  CHECK_OK(kb_dequantize(NULL, KB_DTYPE_BF16, 2, 32, h, sizeof h, back));
  CHECK(same_bits_f(back, x, 64));

  /* Embedding rows: kb_dequantize of the rows the ids name. */
  const int64_t vocab = 10, dim = 64;
  float table[10 * 64], rows[3 * 64], want[64];
  rand_fill(table, vocab * dim, 9, -1.0f, 1.0f);
  int32_t ids[3] = {9, 0, 4};
  for (int f = 0; f < 2; f++) {
    unsigned char *tq = quantized(kFormats[f], vocab, dim, table, &bytes);
    CHECK_OK(kb_embedding_w(NULL, 3, vocab, dim, ids, kFormats[f], tq, bytes, rows));
    for (int i = 0; i < 3; i++) {
      CHECK_OK(kb_dequantize(NULL, kFormats[f], 1, dim, tq + ids[i] * (bytes / vocab), bytes / vocab, want));
      CHECK(same_bits_f(rows + i * dim, want, dim));
    }
    int32_t bad_ids[2] = {1, 10};
    fill_f(rows, 3 * dim, SENTINEL_F);
    kb_context *ctx = make_ctx(1);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[1] = 10 is out of range [0, 10)",
                kb_embedding_w(ctx, 2, vocab, dim, bad_ids, kFormats[f], tq, bytes, rows));
    CHECK(all_f(rows, 3 * dim, SENTINEL_F));
    kb_context_destroy(ctx);
    free(tq);
  }
}

/* ---- bad inputs ---- */

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  const int64_t m = 2, k = 64, n = 3;
  float x[2 * 64], w[3 * 64], y[2 * 3];
  rand_fill(x, m * k, 1, -1, 1);
  rand_fill(w, n * k, 2, -1, 1);
  int64_t bytes;
  unsigned char *wq = quantized(KB_DTYPE_Q4_0, n, k, w, &bytes);
  fill_f(y, m * n, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight_type must be a kb_dtype",
              kb_linear_w(ctx, m, k, n, x, (kb_dtype)3, wq, bytes, NULL, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "weight_bytes must be 108 (weight [3, 64] as Q4_0), got 107",
              kb_linear_w(ctx, m, k, n, x, KB_DTYPE_Q4_0, wq, bytes - 1, NULL, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "in_features must be a multiple of 32 for Q4_0 weight",
              kb_linear_w(ctx, m, 48, n, x, KB_DTYPE_Q4_0, wq, bytes, NULL, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight must not be NULL",
              kb_linear_w(ctx, m, k, n, x, KB_DTYPE_Q4_0, NULL, bytes, NULL, KB_ACTIVATION_NONE, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "act must be a kb_activation",
              kb_linear_w(ctx, m, k, n, x, KB_DTYPE_Q4_0, wq, bytes, NULL, (kb_activation)9, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "y",
              kb_linear_w(ctx, 1, 32, 1, x, KB_DTYPE_F32, x + 16, 128, NULL, KB_ACTIVATION_NONE, x + 8));
  CHECK(all_f(y, m * n, SENTINEL_F));

  /* kb_quantize refuses what a block cannot hold, before writing. */
  unsigned char out[2 * 34];
  memset(out, 0xAB, sizeof out);
  float row[64];
  rand_fill(row, 64, 3, -1, 1);
  row[37] = NAN;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x[0, 37] is nan", kb_quantize(ctx, KB_DTYPE_Q8_0, 1, 64, row, out, 68));
  row[37] = 1e9f;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x[0, 37] = 1e+09 is too large for Q8_0",
              kb_quantize(ctx, KB_DTYPE_Q8_0, 1, 64, row, out, 68));
  for (size_t e = 0; e < sizeof out; e++) CHECK(out[e] == 0xAB);
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "y_bytes must be 68", kb_quantize(ctx, KB_DTYPE_Q8_0, 1, 64, x, out, 34));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "x_bytes must be 36",
              kb_dequantize(ctx, KB_DTYPE_Q4_0, 1, 64, out, 35, row));
  free(wq);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_variants_match_scalar);
  KB_RUN(test_quantized_accuracy);
  KB_RUN(test_quantized_threads);
  KB_RUN(test_float_weights_are_kb_linear);
  KB_RUN(test_conversions);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
