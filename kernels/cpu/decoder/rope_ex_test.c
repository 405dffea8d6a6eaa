/* Tests of kb_rope_ex, kb_rope_ex_bf16, kb_rope_ex_f16. */
#include "kernels/cpu/decoder/rope_ex.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/testutil/cpu_test.h"

#define HALF KB_ROPE_STYLE_HALF
#define ADJ KB_ROPE_STYLE_ADJACENT
#define PI_D 3.14159265358979323846

/* The test's own inverse frequencies, from the formulas of docs/kernels.md
 * (written apart from rope_ex.c, with separate branches per band). */
static double test_inv_freq(int scaling, int64_t rd, int64_t i, double theta, double factor, double lo, double hi,
                            double orig) {
  double base = 1.0 / pow(theta, (double)(2 * i) / (double)rd);
  if (scaling == KB_ROPE_SCALING_LINEAR) return base / factor;
  if (scaling != KB_ROPE_SCALING_LLAMA3) return base;
  double wl = 2 * PI_D / base;
  if (wl > orig / lo) return base / factor;
  if (wl < orig / hi) return base;
  double s = (orig / wl - lo) / (hi - lo);
  return base * ((1 - s) / factor + s);
}

/* One head row rotated in double by the header's formula. */
static void ref_row(const float *x, double *y, int64_t hd, int64_t rd, int style, int32_t pos, int scaling,
                    double theta, double factor, double lo, double hi, double orig) {
  for (int64_t e = 0; e < hd; e++) y[e] = x[e];
  for (int64_t i = 0; i < rd / 2; i++) {
    double a = pos * test_inv_freq(scaling, rd, i, theta, factor, lo, hi, orig);
    int64_t iu = style == ADJ ? 2 * i : i, iv = style == ADJ ? 2 * i + 1 : i + rd / 2;
    y[iu] = x[iu] * cos(a) - x[iv] * sin(a);
    y[iv] = x[iv] * cos(a) + x[iu] * sin(a);
  }
}

/* Llama 3 inverse frequencies worked out by hand.  theta 10^6, rotary_dim
 * 6: unscaled 1, 10^-2, 10^-4, wavelengths 2 pi, 200 pi, 20000 pi.  With
 * original 1000, low 1, high 4 the band edges are 1000 / 4 = 250 and 1000 /
 * 1 = 1000: 2 pi < 250 keeps 1; 20000 pi > 1000 gives 10^-4 / 8; 200 pi is
 * inside, smooth = (1000 / (200 pi) - 1) / (4 - 1) = (5 / pi - 1) / 3, and
 * inv = (1 - smooth) 10^-2 / 8 + smooth 10^-2.  The kernel's exponents
 * -2i/6 are rounded to double before pow, which moves 10^6^(-2i/6) by up to
 * 13.8 * 2^-53 relative (a few double ulps): hence 2e-15 below, far tighter
 * than any formula slip (the smallest, (1 - smooth) 10^-2 against its
 * division by 8, changes the value by 70 %). */
static void test_llama3_inv_freq_by_hand(void) {
  struct kb_rope_freq f = {6, KB_ROPE_SCALING_LLAMA3, 1e6, 8.0, 1.0, 4.0, 1000.0};
  double smooth = (5.0 / PI_D - 1.0) / 3.0;
  double want[3] = {1.0, (1.0 - smooth) * 0.01 / 8.0 + smooth * 0.01, 1e-4 / 8.0};
  CHECK(smooth > 0.19 && smooth < 0.2); /* inside the band, as claimed */
  for (int i = 0; i < 3; i++) CHECK_CLOSE(kb__rope_inv_freq(&f, i), want[i], 0, 2e-15);
  /* Linear divides every frequency, none keeps theta^(-2i/d). */
  f.scaling = KB_ROPE_SCALING_LINEAR;
  for (int i = 0; i < 3; i++) CHECK_CLOSE(kb__rope_inv_freq(&f, i), pow(10.0, -2.0 * i) / 8.0, 0, 2e-15);
  f.scaling = KB_ROPE_SCALING_NONE;
  for (int i = 0; i < 3; i++) CHECK_CLOSE(kb__rope_inv_freq(&f, i), pow(10.0, -2.0 * i), 0, 2e-15);

  /* The same through the public API: the pair (1, 0) at position 1 becomes
   * (cos inv, sin inv). */
  float q[6] = {1, 1, 1, 0, 0, 0};
  int32_t pos = 1;
  CHECK_OK(kb_rope_ex(NULL, 1, 1, 1, 0, 6, 6, HALF, &pos, 1e6f, KB_ROPE_SCALING_LLAMA3, 8.0f, 1.0f, 4.0f, 1000, q,
                      NULL));
  for (int i = 0; i < 3; i++) {
    CHECK_CLOSE(q[i], cos(want[i]), 1e-7, 1e-7);
    CHECK_CLOSE(q[3 + i], sin(want[i]), 1e-7, 1e-7);
  }
}

/* kb_rope's case (half style, full head, no scaling, k NULL) gives kb_rope's
 * bits, with the tokens in one batch row or spread over several; k rotated
 * with q is kb_rope of k. */
static void test_same_bits_as_kb_rope(void) {
  static const int64_t hds[] = {2, 8, 18, 34, 64, 640};
  for (int t = 0; t < 6; t++) {
    int64_t hd = hds[t], n = 12 * 3 * hd, nk = 12 * 2 * hd;
    float *x = alloc_f(n), *want = alloc_f(n), *q = alloc_f(n), *kx = alloc_f(nk), *kwant = alloc_f(nk),
          *k = alloc_f(nk);
    int32_t pos[12] = {0, 1, 2, 7, 100, 4095, 17, 33, 65535, 1 << 20, 123456789, 5};
    rand_fill(x, n, 3 + (uint64_t)hd, -2.0f, 2.0f);
    rand_fill(kx, nk, 5 + (uint64_t)hd, -3.0f, 3.0f);
    x[5] = NAN;
    CHECK_OK(kb_rope(NULL, 12, 3, hd, x, pos, 500000.0f, want));
    CHECK_OK(kb_rope(NULL, 12, 2, hd, kx, pos, 500000.0f, kwant));
    memcpy(q, x, (size_t)n * sizeof(float));
    CHECK_OK(kb_rope_ex(NULL, 1, 12, 3, 7, hd, hd, HALF, pos, 500000.0f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, q, NULL));
    CHECK(same_bits_f(q, want, n));
    memcpy(q, x, (size_t)n * sizeof(float));
    memcpy(k, kx, (size_t)nk * sizeof(float));
    CHECK_OK(kb_rope_ex(NULL, 4, 3, 3, 2, hd, hd, HALF, pos, 500000.0f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, q, k));
    CHECK(same_bits_f(q, want, n));
    CHECK(same_bits_f(k, kwant, nk));
    free(x);
    free(want);
    free(q);
    free(kx);
    free(kwant);
    free(k);
  }
}

/* Every style, partial rotary and scaling against the double formula; the
 * features past rotary_dim keep their bits. */
static void test_against_formula(void) {
  enum { B = 2, S = 3, QH = 4, KH = 2 };
  static const int64_t shapes[][2] = {{8, 8}, {10, 4}, {64, 32}, {80, 32}, {256, 64}, {20, 18}, {600, 600}};
  int32_t pos[B * S] = {0, 1, 9, 4000, 8191, 131071};
  for (int sh = 0; sh < 7; sh++)
    for (int style = 0; style < 2; style++)
      for (int scaling = 0; scaling < 3; scaling++) {
        int64_t hd = shapes[sh][0], rd = shapes[sh][1], nq = B * S * QH * hd, nk = B * S * KH * hd;
        float *xq = alloc_f(nq), *xk = alloc_f(nk), *q = alloc_f(nq), *k = alloc_f(nk);
        double *ref = (double *)calloc((size_t)hd, sizeof(double));
        rand_fill(xq, nq, 100 + (uint64_t)(sh * 7 + style * 3 + scaling), -2.0f, 2.0f);
        rand_fill(xk, nk, 200 + (uint64_t)(sh * 7 + style * 3 + scaling), -2.0f, 2.0f);
        memcpy(q, xq, (size_t)nq * sizeof(float));
        memcpy(k, xk, (size_t)nk * sizeof(float));
        /* theta 10^4, factor 8, Llama 3.1's band with a short original
         * context so that every band has frequencies here. */
        CHECK_OK(kb_rope_ex(NULL, B, S, QH, KH, hd, rd, (kb_rope_style)style, pos, 10000.0f,
                            (kb_rope_scaling)scaling, 8.0f, 1.0f, 4.0f, 64, q, k));
        for (int which = 0; which < 2; which++) {
          int64_t heads = which ? KH : QH;
          const float *x = which ? xk : xq, *y = which ? k : q;
          for (int64_t r = 0; r < B * S * heads; r++) {
            ref_row(x + r * hd, ref, hd, rd, style, pos[r / heads], scaling, 10000.0, 8.0, 1.0, 4.0, 64.0);
            for (int64_t e = 0; e < hd; e++) CHECK_CLOSE(y[r * hd + e], ref[e], 2e-6, 1e-6);
            CHECK(same_bits_f(y + r * hd + rd, x + r * hd + rd, hd - rd));
          }
        }
        free(xq);
        free(xk);
        free(q);
        free(k);
        free(ref);
      }
}

/* GGUF stores llama's q and k weights permuted so that the half-rotation
 * pair (i, i + d/2) of Hugging Face's layout becomes the adjacent pair
 * (2i, 2i + 1) (convert_hf_to_gguf's permute: each head's rows reshaped
 * [2, d/2] and transposed).  Adjacent rope on the permuted head must equal
 * the permuted half rope, bit for bit: that is what the style is for. */
static void test_adjacent_is_permuted_half(void) {
  enum { S = 5, H = 3 };
  static const int64_t shapes[][2] = {{64, 64}, {128, 128}, {96, 32}, {600, 520}};
  int32_t pos[S] = {0, 3, 77, 4096, 100000};
  for (int sh = 0; sh < 4; sh++)
    for (int scaling = 0; scaling < 3; scaling++) {
      int64_t hd = shapes[sh][0], rd = shapes[sh][1], n = S * H * hd;
      float *x = alloc_f(n), *half = alloc_f(n), *perm = alloc_f(n), *adj = alloc_f(n);
      rand_fill(x, n, 7 + (uint64_t)sh, -1.0f, 1.0f);
      /* perm = P x: the first rotary_dim features of each head interleaved
       * (2i <- i, 2i + 1 <- i + rd/2), the rest in place. */
      for (int64_t r = 0; r < S * H; r++) {
        memcpy(perm + r * hd, x + r * hd, (size_t)hd * sizeof(float));
        for (int64_t i = 0; i < rd / 2; i++) {
          perm[r * hd + 2 * i] = x[r * hd + i];
          perm[r * hd + 2 * i + 1] = x[r * hd + i + rd / 2];
        }
      }
      memcpy(half, x, (size_t)n * sizeof(float));
      memcpy(adj, perm, (size_t)n * sizeof(float));
      CHECK_OK(kb_rope_ex(NULL, 1, S, H, 0, hd, rd, HALF, pos, 500000.0f, (kb_rope_scaling)scaling, 8.0f, 1.0f, 4.0f,
                          8192, half, NULL));
      CHECK_OK(kb_rope_ex(NULL, 1, S, H, 0, hd, rd, ADJ, pos, 500000.0f, (kb_rope_scaling)scaling, 8.0f, 1.0f, 4.0f,
                          8192, adj, NULL));
      int ok = 1;
      for (int64_t r = 0; r < S * H; r++) {
        for (int64_t i = 0; i < rd / 2; i++) {
          ok &= kb_test_bits(adj[r * hd + 2 * i]) == kb_test_bits(half[r * hd + i]);
          ok &= kb_test_bits(adj[r * hd + 2 * i + 1]) == kb_test_bits(half[r * hd + i + rd / 2]);
        }
        ok &= same_bits_f(adj + r * hd + rd, half + r * hd + rd, hd - rd);
      }
      CHECK(ok);
      /* and the two styles really differ on the same data. */
      memcpy(adj, x, (size_t)n * sizeof(float));
      CHECK_OK(kb_rope_ex(NULL, 1, S, H, 0, hd, rd, ADJ, pos, 500000.0f, (kb_rope_scaling)scaling, 8.0f, 1.0f, 4.0f,
                          8192, adj, NULL));
      CHECK(!same_bits_f(adj, half, n));
      free(x);
      free(half);
      free(perm);
      free(adj);
    }
}

/* 1 and 3 threads give the same bits (tokens split over threads). */
static void test_threads_bitwise_identical(void) {
  enum { B = 3, S = 67, QH = 8, KH = 2, D = 96, R = 64 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  int64_t nq = B * S * QH * D, nk = B * S * KH * D;
  float *q1 = alloc_f(nq), *q3 = alloc_f(nq), *k1 = alloc_f(nk), *k3 = alloc_f(nk);
  int32_t pos[B * S];
  for (int t = 0; t < B * S; t++) pos[t] = (t * 37) % 5000;
  for (int style = 0; style < 2; style++) {
    rand_fill(q1, nq, 11, -1.0f, 1.0f);
    rand_fill(k1, nk, 12, -1.0f, 1.0f);
    memcpy(q3, q1, (size_t)nq * sizeof(float));
    memcpy(k3, k1, (size_t)nk * sizeof(float));
    CHECK_OK(kb_rope_ex(c1, B, S, QH, KH, D, R, (kb_rope_style)style, pos, 500000.0f, KB_ROPE_SCALING_LLAMA3, 8.0f,
                        1.0f, 4.0f, 1024, q1, k1));
    CHECK_OK(kb_rope_ex(c3, B, S, QH, KH, D, R, (kb_rope_style)style, pos, 500000.0f, KB_ROPE_SCALING_LLAMA3, 8.0f,
                        1.0f, 4.0f, 1024, q3, k3));
    CHECK(same_bits_f(q1, q3, nq));
    CHECK(same_bits_f(k1, k3, nk));
  }
  free(q1);
  free(q3);
  free(k1);
  free(k3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

typedef kb_status (*rope16_fn)(kb_context *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, kb_rope_style,
                               const int32_t *, float, kb_rope_scaling, float, float, float, int64_t, uint16_t *,
                               uint16_t *);

/* 16-bit variants: round(kb_rope_ex(widen(q), widen(k))), and the
 * features past rotary_dim keep their bits (a NaN payload included). */
static void test_16bit(void) {
  enum { B = 2, S = 3, QH = 3, KH = 1, D = 40, R = 24 };
  int64_t nq = B * S * QH * D, nk = B * S * KH * D;
  int32_t pos[B * S] = {0, 5, 1000, 7, 8, 65536};
  float *fq = alloc_f(nq), *fk = alloc_f(nk), *wq = alloc_f(nq), *wk = alloc_f(nk);
  uint16_t *hq = (uint16_t *)calloc((size_t)nq, 2), *hk = (uint16_t *)calloc((size_t)nk, 2);
  uint16_t *eq = (uint16_t *)calloc((size_t)nq, 2), *ek = (uint16_t *)calloc((size_t)nk, 2);
  for (int f16 = 0; f16 < 2; f16++)
    for (int style = 0; style < 2; style++) {
      rope16_fn fn = f16 ? kb_rope_ex_f16 : kb_rope_ex_bf16;
      rand_fill(fq, nq, 21 + (uint64_t)f16, -4.0f, 4.0f);
      rand_fill(fk, nk, 23 + (uint64_t)style, -4.0f, 4.0f);
      kb_half_narrow(f16, fq, hq, nq);
      kb_half_narrow(f16, fk, hk, nk);
      hq[R + 1] = f16 ? 0x7d01 : 0x7f81; /* a signalling NaN that must stay as it is */
      kb_half_widen(f16, hq, wq, nq);
      kb_half_widen(f16, hk, wk, nk);
      CHECK_OK(kb_rope_ex(NULL, B, S, QH, KH, D, R, (kb_rope_style)style, pos, 10000.0f, KB_ROPE_SCALING_LINEAR, 2.0f,
                          0, 0, 0, wq, wk));
      kb_half_narrow(f16, wq, eq, nq);
      kb_half_narrow(f16, wk, ek, nk);
      for (int64_t r = 0; r < B * S * QH; r++) memcpy(eq + r * D + R, hq + r * D + R, (D - R) * 2);
      for (int64_t r = 0; r < B * S * KH; r++) memcpy(ek + r * D + R, hk + r * D + R, (D - R) * 2);
      CHECK_OK(fn(NULL, B, S, QH, KH, D, R, (kb_rope_style)style, pos, 10000.0f, KB_ROPE_SCALING_LINEAR, 2.0f, 0, 0, 0,
                  hq, hk));
      CHECK(memcmp(hq, eq, (size_t)nq * 2) == 0);
      CHECK(memcmp(hk, ek, (size_t)nk * 2) == 0);
      CHECK(hq[R + 1] == (f16 ? 0x7d01 : 0x7f81));
    }
  free(fq);
  free(fk);
  free(wq);
  free(wk);
  free(hq);
  free(hk);
  free(eq);
  free(ek);
}

static void test_empty(void) {
  int32_t pos[2] = {0, 1};
  CHECK_OK(kb_rope_ex(NULL, 0, 0, 0, 0, 0, 0, HALF, NULL, 1e4f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, NULL, NULL));
  CHECK_OK(kb_rope_ex(NULL, 1, 2, 0, 0, 4, 2, HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, NULL, NULL));
  CHECK_OK(kb_rope_ex(NULL, 2, 1, 3, 2, 0, 0, ADJ, pos, 1e4f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, NULL, NULL));
  CHECK_OK(kb_rope_ex(NULL, 2, 0, 3, 2, 8, 8, HALF, NULL, 1e4f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, NULL, NULL));
  /* positions are checked even when no head has features. */
  pos[1] = -1;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
               kb_rope_ex(NULL, 1, 2, 0, 0, 4, 2, HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 0, 0, 0, 0, NULL, NULL));
}

#define CALL(ctx, b, s, qh, kh, hd, rd, st, pos, th, sc, f, lo, hi, orig, q, k) \
  kb_rope_ex(ctx, b, s, qh, kh, hd, rd, (kb_rope_style)(st), pos, th, (kb_rope_scaling)(sc), f, lo, hi, orig, q, k)

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float q[16], k[8], buf[32];
  int32_t pos[2] = {0, 1};
  fill_f(q, 16, SENTINEL_F);
  fill_f(k, 8, SENTINEL_F);
  const int IA = KB_STATUS_INVALID_ARGUMENT, SM = KB_STATUS_SHAPE_MISMATCH;
  CHECK_FAILS(ctx, IA, "kb_rope_ex: batch must be >= 0, got -1", CALL(ctx, -1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "seq must be >= 0", CALL(ctx, 1, -2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "q_heads must be >= 0", CALL(ctx, 1, 2, -2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "kv_heads must be >= 0", CALL(ctx, 1, 2, 2, -1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "head_dim must be >= 0", CALL(ctx, 1, 2, 2, 1, -4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "rotary_dim must be >= 0", CALL(ctx, 1, 2, 2, 1, 4, -4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "rotary_dim must be > 0 when head_dim > 0",
              CALL(ctx, 1, 2, 2, 1, 4, 0, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, SM, "rotary_dim must be even, got 3", CALL(ctx, 1, 2, 2, 1, 4, 3, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, SM, "rotary_dim (6) must be <= head_dim (4)",
              CALL(ctx, 1, 2, 2, 1, 4, 6, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "style must be a kb_rope_style (0 half, 1 adjacent), got 2",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 2, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "got -1", CALL(ctx, 1, 2, 2, 1, 4, 4, -1, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "scaling must be a kb_rope_scaling (0 none, 1 linear, 2 llama3), got 3",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 3, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of positions overflows",
              CALL(ctx, HUGE_DIM, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of q overflows",
              CALL(ctx, 1, 2, HUGE_DIM, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of k overflows",
              CALL(ctx, 1, 2, 2, HUGE_DIM, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  /* A NULL k has no elements, so its size cannot overflow. */
  CHECK_OK(CALL(ctx, 1, 2, 0, HUGE_DIM, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, NULL, NULL));
  CHECK_FAILS(ctx, IA, "positions must not be NULL", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, NULL, 1e4f, 0, 1, 1, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "q must not be NULL", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, NULL, k));
  static const float bad[] = {0.0f, -1.0f, NAN, INFINITY};
  for (int i = 0; i < 4; i++) {
    CHECK_FAILS(ctx, IA, "theta must be finite and > 0", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, bad[i], 0, 1, 1, 4, 8, q, k));
    CHECK_FAILS(ctx, IA, "factor must be finite and > 0", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 1, bad[i], 1, 4, 8, q, k));
    CHECK_FAILS(ctx, IA, "factor must be finite and > 0", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, bad[i], 1, 4, 8, q, k));
    CHECK_FAILS(ctx, IA, "low_freq_factor must be finite and > 0",
                CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, bad[i], 4, 8, q, k));
    CHECK_FAILS(ctx, IA, "high_freq_factor must be finite and > 0",
                CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, 1, bad[i], 8, q, k));
  }
  CHECK_FAILS(ctx, IA, "low_freq_factor (4) must be < high_freq_factor (4)",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, 4, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "low_freq_factor (5) must be < high_freq_factor (4)",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, 5, 4, 8, q, k));
  CHECK_FAILS(ctx, IA, "original_max_position must be > 0, got 0",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, 1, 4, 0, q, k));
  CHECK_FAILS(ctx, IA, "original_max_position must be > 0, got -5",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 2, 8, 1, 4, -5, q, k));
  pos[1] = -3;
  CHECK_FAILS(ctx, IA, "positions[1] must be >= 0, got -3", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, q, k));
  pos[1] = 1;
  CHECK(all_f(q, 16, SENTINEL_F));
  CHECK(all_f(k, 8, SENTINEL_F));
  /* Parameters a scaling does not use are not read. */
  CHECK_OK(CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, NAN, NAN, NAN, -1, q, k));
  CHECK_OK(CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 1, 2, NAN, -1, -1, q, k));
  /* Overlaps: q and k are both outputs, neither may touch the other. */
  fill_f(buf, 32, 1.0f);
  CHECK_FAILS(ctx, IA, "q must not overlap k", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, buf, buf + 8));
  CHECK_FAILS(ctx, IA, "q must not overlap k", CALL(ctx, 1, 2, 2, 1, 4, 4, 0, pos, 1e4f, 0, 1, 1, 4, 8, buf, buf));
  CHECK_FAILS(ctx, IA, "q must not overlap positions",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, (const int32_t *)(void *)(buf + 3), 1e4f, 0, 1, 1, 4, 8, buf, NULL));
  CHECK_FAILS(ctx, IA, "k must not overlap positions",
              CALL(ctx, 1, 2, 2, 1, 4, 4, 0, (const int32_t *)(void *)(buf + 17), 1e4f, 0, 1, 1, 4, 8, buf, buf + 16));
  CHECK(all_f(buf, 32, 1.0f));
  /* The 16-bit variants name themselves and count 2-byte elements. */
  uint16_t h[16] = {0};
  CHECK_FAILS(ctx, SM, "kb_rope_ex_bf16: rotary_dim must be even",
              kb_rope_ex_bf16(ctx, 1, 2, 2, 1, 4, 1, HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8, h, NULL));
  CHECK_FAILS(ctx, IA, "kb_rope_ex_f16: q must not overlap k",
              kb_rope_ex_f16(ctx, 1, 2, 2, 1, 4, 4, HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8, h, h + 15));
  CHECK_OK(kb_rope_ex_f16(ctx, 1, 2, 1, 1, 4, 4, HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8, h, h + 8));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_llama3_inv_freq_by_hand);
  KB_RUN(test_same_bits_as_kb_rope);
  KB_RUN(test_against_formula);
  KB_RUN(test_adjacent_is_permuted_half);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_16bit);
  KB_RUN(test_empty);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
