/* Tests of kb_moe_route, kb_moe_route_bf16, kb_moe_route_f16:
 * - hand rows (ties, -inf, -0 / +0) with their ids and weights worked out;
 * - random rows against this file's own float64 routing (a selection sort
 *   for the ranking, libm exp for the softmax), ids exactly and weights
 *   within docs/kernels.md's bounds (2 ulp; 7 ulp for SOFTMAX_TOPK_NORM);
 * - the weights are kb_softmax's bits (whole row for the SOFTMAX_TOPK
 *   routings, the k selected logits for TOPK_SOFTMAX);
 * - 1 and 3 threads give the same bytes; the 16-bit variants the bytes of
 *   the float32 kernel on the widened logits;
 * - bad inputs: typed status, message naming the argument, outputs untouched.
 * The instruction-set levels are compared by vec_isa_test (its
 * vec_isa_outputs.c runs the router too). */
#include "kernels/cpu/half.h"
#include "kernels/cpu/testutil/cpu_test.h"

#define SOFTMAX_TOPK KB_MOE_ROUTING_SOFTMAX_TOPK
#define NORM KB_MOE_ROUTING_SOFTMAX_TOPK_NORM
#define TOPK_SOFTMAX KB_MOE_ROUTING_TOPK_SOFTMAX

/* |got - want| in float32 ulps of want (2^-149 below the normal range). */
static double ulp_err(float got, double want) {
  if ((double)got == want) return 0.0;
  int e;
  frexp(want, &e); /* want = f * 2^e, f in [0.5, 1) */
  int ex = e - 1 < -126 ? -126 : e - 1;
  return fabs((double)got - want) / ldexp(1.0, ex - 23);
}

/* The float64 routing of one row: ranking by a selection sort (larger logit
 * first, lower index on ties), weights from exp in double. */
static void reference_row(const float *x, int n, int k, kb_moe_routing routing, int32_t *ids, double *w) {
  bool *taken = (bool *)calloc((size_t)n, 1);
  for (int r = 0; r < k; r++) {
    int best = -1;
    for (int c = 0; c < n; c++)
      if (!taken[c] && (best < 0 || x[c] > x[best])) best = c;
    taken[best] = true;
    ids[r] = best;
  }
  free(taken);
  double m = x[ids[0]], s = 0.0;
  if (routing == TOPK_SOFTMAX) {
    for (int r = 0; r < k; r++) s += exp((double)x[ids[r]] - m);
  } else {
    for (int c = 0; c < n; c++) s += exp((double)x[c] - m);
  }
  double sel = 0.0;
  for (int r = 0; r < k; r++) sel += exp((double)x[ids[r]] - m);
  for (int r = 0; r < k; r++) {
    double e = exp((double)x[ids[r]] - m);
    w[r] = routing == NORM ? e / sel : e / s;
  }
}

static void test_hand_rows(void) {
  const float ninf = -INFINITY;
  /* Row 0: 3 ties at 2 (experts 1, 3, 4): lowest index first.
   * Row 1: -inf entries; k = 3 reaches one of them (weight 0).
   * Row 2: -0 and +0 tie (index order), one finite expert. */
  float x[3 * 5] = {1, 2, 0, 2, 2, ninf, 0, ninf, 0.5f, ninf, -0.0f, ninf, 0.0f, ninf, ninf};
  int32_t ids[9];
  float w[9];
  for (int mode = 0; mode < 3; mode++) {
    fill_i(ids, 9, SENTINEL_I);
    CHECK_OK(kb_moe_route(NULL, 3, 5, 3, (kb_moe_routing)mode, x, ids, w));
    CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 4);
    CHECK(ids[3] == 3 && ids[4] == 1 && ids[5] == 0); /* 0.5, 0, then -inf at index 0 */
    CHECK(ids[6] == 0 && ids[7] == 2 && ids[8] == 1);
    /* Equal logits, equal weights; -inf weighs exactly 0. */
    CHECK(w[0] == w[1] && w[1] == w[2]);
    CHECK(w[5] == 0.0f && w[8] == 0.0f);
    if (mode == (int)SOFTMAX_TOPK) {
      /* Row 0: e^1 + 4 e^... : p(2) = e^0 / (e^-1 + 3 + e^-2). */
      CHECK(ulp_err(w[0], 1.0 / (exp(-1.0) + 3.0 + exp(-2.0))) <= 2);
      CHECK(w[6] == 0.5f && w[7] == 0.5f);
    } else {
      /* NORM and TOPK_SOFTMAX: three equal weights of 1/3; row 2 halves. */
      CHECK(ulp_err(w[0], 1.0 / 3.0) <= 2);
      CHECK(w[6] == 0.5f && w[7] == 0.5f);
    }
    CHECK(ulp_err(w[3], 1.0 / (1.0 + exp(-0.5))) <= 2);
  }
  /* k = 1 with NORM or TOPK_SOFTMAX: the weight is exactly 1. */
  CHECK_OK(kb_moe_route(NULL, 3, 5, 1, NORM, x, ids, w));
  CHECK(w[0] == 1.0f && w[1] == 1.0f && w[2] == 1.0f);
  CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 0);
  CHECK_OK(kb_moe_route(NULL, 3, 5, 1, TOPK_SOFTMAX, x, ids, w));
  CHECK(w[0] == 1.0f && w[1] == 1.0f && w[2] == 1.0f);
}

/* Random rows (with repeated values, so ties occur) against reference_row. */
static void test_against_reference(void) {
  static const int shapes[][3] = {{7, 8, 2}, {5, 64, 8}, {3, 60, 4}, {4, 128, 1}, {2, 256, 8}, {3, 16, 16},
                                  {2, 1500, 6}, {2, 9, 9}};
  for (int s = 0; s < 8; s++) {
    int T = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    float *x = alloc_f(T * n), *w = alloc_f(T * k);
    int32_t *ids = alloc_i(T * k), *rid = alloc_i(k);
    double *rw = (double *)calloc((size_t)k, sizeof(double));
    rand_fill(x, T * n, 100 + (uint64_t)s, -4, 4);
    /* Quantize to multiples of 1/8 in some rows: many exact ties. */
    for (int i = 0; i < T * n; i++)
      if ((i / n) % 2 == 1) x[i] = floorf(x[i] * 8) / 8;
    for (int mode = 0; mode < 3; mode++) {
      CHECK_OK(kb_moe_route(NULL, T, n, k, (kb_moe_routing)mode, x, ids, w));
      double bound = mode == (int)NORM ? 7.0 : 2.0, worst = 0.0;
      for (int t = 0; t < T; t++) {
        reference_row(x + t * n, n, k, (kb_moe_routing)mode, rid, rw);
        for (int r = 0; r < k; r++) {
          CHECK(ids[t * k + r] == rid[r]);
          double e = ulp_err(w[t * k + r], rw[r]);
          if (e > worst) worst = e;
          /* Equal logits, equal weights (the same function of the same value). */
          if (r > 0 && x[t * n + rid[r]] == x[t * n + rid[r - 1]]) CHECK(w[t * k + r] == w[t * k + r - 1]);
        }
      }
      if (worst > bound) fprintf(stderr, "shape %d mode %d: %.3f ulp\n", s, mode, worst);
      CHECK(worst <= bound);
    }
    free(x);
    free(w);
    free(ids);
    free(rid);
    free(rw);
  }
}

/* The weights are kb_softmax's bits. */
static void test_softmax_bits(void) {
  enum { T = 6, N = 300, K = 12 };
  float *x = alloc_f(T * N), *p = alloc_f(T * N), *wa = alloc_f(T * N), sel[K], ps[K];
  int32_t *ids = alloc_i(T * N);
  rand_fill(x, T * N, 7, -20, 20);
  x[5] = -INFINITY;
  CHECK_OK(kb_softmax(NULL, T, N, x, p));
  /* SOFTMAX_TOPK with k = experts: every probability, permuted. */
  CHECK_OK(kb_moe_route(NULL, T, N, N, SOFTMAX_TOPK, x, ids, wa));
  for (int t = 0; t < T; t++)
    for (int r = 0; r < N; r++) CHECK(kb_test_bits(wa[t * N + r]) == kb_test_bits(p[t * N + ids[t * N + r]]));
  /* TOPK_SOFTMAX: kb_softmax of the selected logits in rank order. */
  CHECK_OK(kb_moe_route(NULL, T, N, K, TOPK_SOFTMAX, x, ids, wa));
  for (int t = 0; t < T; t++) {
    for (int r = 0; r < K; r++) sel[r] = x[t * N + ids[t * K + r]];
    CHECK_OK(kb_softmax(NULL, 1, K, sel, ps));
    CHECK(same_bits_f(ps, wa + t * K, K));
  }
  /* NORM: p / (double sum of the selected p in rank order), one rounding. */
  CHECK_OK(kb_moe_route(NULL, T, N, K, NORM, x, ids, wa));
  for (int t = 0; t < T; t++) {
    double s = 0.0;
    for (int r = 0; r < K; r++) s += (double)p[t * N + ids[t * K + r]];
    for (int r = 0; r < K; r++) CHECK(wa[t * K + r] == (float)((double)p[t * N + ids[t * K + r]] / s));
  }
  free(x);
  free(p);
  free(wa);
  free(ids);
}

static void test_threads_and_halves(void) {
  enum { T = 301, N = 64, K = 6 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(T * N), *xw = alloc_f(T * N), *w1 = alloc_f(T * K), *w3 = alloc_f(T * K);
  int32_t *i1 = alloc_i(T * K), *i3 = alloc_i(T * K);
  uint16_t *h = (uint16_t *)calloc(T * N, 2);
  rand_fill(x, T * N, 11, -6, 6);
  for (int mode = 0; mode < 3; mode++) {
    CHECK_OK(kb_moe_route(c1, T, N, K, (kb_moe_routing)mode, x, i1, w1));
    CHECK_OK(kb_moe_route(c3, T, N, K, (kb_moe_routing)mode, x, i3, w3));
    CHECK(memcmp(i1, i3, sizeof(int32_t) * T * K) == 0 && same_bits_f(w1, w3, T * K));
    for (int f16 = 0; f16 < 2; f16++) {
      kb_half_narrow(f16, x, h, T * N);
      kb_half_widen(f16, h, xw, T * N);
      CHECK_OK(kb_moe_route(c1, T, N, K, (kb_moe_routing)mode, xw, i1, w1));
      if (f16)
        CHECK_OK(kb_moe_route_f16(c3, T, N, K, (kb_moe_routing)mode, h, i3, w3));
      else
        CHECK_OK(kb_moe_route_bf16(c3, T, N, K, (kb_moe_routing)mode, h, i3, w3));
      CHECK(memcmp(i1, i3, sizeof(int32_t) * T * K) == 0 && same_bits_f(w1, w3, T * K));
    }
  }
  free(x);
  free(xw);
  free(w1);
  free(w3);
  free(i1);
  free(i3);
  free(h);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_empty(void) {
  CHECK_OK(kb_moe_route(NULL, 0, 0, 1, NORM, NULL, NULL, NULL));
  CHECK_OK(kb_moe_route(NULL, 0, 4, 9, NORM, NULL, NULL, NULL)); /* top_k > experts is fine without tokens */
  CHECK_OK(kb_moe_route_bf16(NULL, 0, 4, 2, SOFTMAX_TOPK, NULL, NULL, NULL));
}

#define UNTOUCHED() CHECK(all_i(ids, 8, SENTINEL_I) && all_f(w, 8, SENTINEL_F))

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(2);
  float x[12] = {0}, w[8];
  int32_t ids[8];
  uint16_t h[12] = {0};
  fill_i(ids, 8, SENTINEL_I);
  fill_f(w, 8, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_moe_route: tokens must be >= 0",
              kb_moe_route(ctx, -1, 4, 2, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "experts must be >= 0", kb_moe_route(ctx, 3, -4, 2, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "top_k must be >= 0", kb_moe_route(ctx, 3, 4, -2, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "experts must be > 0 when tokens > 0",
              kb_moe_route(ctx, 3, 0, 2, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "experts must be <= 2147483647",
              kb_moe_route(ctx, 1, (int64_t)INT32_MAX + 1, 2, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "top_k must be >= 1, got 0", kb_moe_route(ctx, 3, 4, 0, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "top_k must be <= experts (4), got 5",
              kb_moe_route(ctx, 2, 4, 5, NORM, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of logits overflows",
              kb_moe_route(ctx, HUGE_DIM, 4, 2, NORM, x, ids, w));
  /* 3 2^57 x 8 bf16 logits fit in int64 bytes, the int32 ids do not. */
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of ids overflows",
              kb_moe_route_bf16(ctx, (int64_t)3 << 57, 8, 8, NORM, h, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits must not be NULL",
              kb_moe_route(ctx, 3, 4, 2, NORM, NULL, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids must not be NULL", kb_moe_route(ctx, 3, 4, 2, NORM, x, NULL, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weights must not be NULL",
              kb_moe_route(ctx, 3, 4, 2, NORM, x, ids, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "routing must be a kb_moe_routing",
              kb_moe_route(ctx, 3, 4, 2, (kb_moe_routing)3, x, ids, w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "got -1", kb_moe_route(ctx, 3, 4, 2, (kb_moe_routing)-1, x, ids, w));
  /* Overlaps: an output inside the logits, the two outputs in each other. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids must not overlap logits",
              kb_moe_route(ctx, 3, 4, 2, NORM, x, (int32_t *)(x + 2), w));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weights must not overlap logits",
              kb_moe_route(ctx, 3, 4, 2, NORM, x, ids, x + 4));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weights must not overlap ids",
              kb_moe_route(ctx, 1, 4, 2, NORM, x, ids, (float *)(ids + 1)));
  UNTOUCHED();
  /* Contents: every row scanned before the first write. */
  x[4 + 2] = NAN;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_moe_route: logits[1, 2] is NaN",
              kb_moe_route(ctx, 3, 4, 2, SOFTMAX_TOPK, x, ids, w));
  x[4 + 2] = INFINITY;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits[1, 2] is +inf", kb_moe_route(ctx, 3, 4, 2, TOPK_SOFTMAX, x, ids, w));
  x[4 + 2] = -INFINITY;
  for (int c = 0; c < 4; c++) x[8 + c] = -INFINITY;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 2 is all -inf", kb_moe_route(ctx, 3, 4, 2, NORM, x, ids, w));
  UNTOUCHED();
  /* 16-bit: the same rules on the bit patterns (bf16 NaN 0x7fc1, f16 +inf
     0x7c00, f16 -inf 0xfc00 row). */
  h[5] = 0x7fc1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_moe_route_bf16: logits[1, 1] is NaN",
              kb_moe_route_bf16(ctx, 3, 4, 2, NORM, h, ids, w));
  h[5] = 0x7c00;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_moe_route_f16: logits[1, 1] is +inf",
              kb_moe_route_f16(ctx, 3, 4, 2, NORM, h, ids, w));
  CHECK_OK(kb_moe_route_bf16(ctx, 3, 4, 2, NORM, h, ids, w)); /* 0x7c00 is a finite bf16 */
  fill_i(ids, 8, SENTINEL_I);
  fill_f(w, 8, SENTINEL_F);
  h[5] = 0;
  for (int c = 0; c < 4; c++) h[c] = 0xfc00;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 0 is all -inf", kb_moe_route_f16(ctx, 3, 4, 2, NORM, h, ids, w));
  UNTOUCHED();
  /* Control: -inf entries beside a finite one are fine (weight 0). */
  h[3] = 0x3c00; /* f16 1.0 */
  CHECK_OK(kb_moe_route_f16(ctx, 2, 4, 4, NORM, h, ids, w));
  CHECK(ids[0] == 3 && w[0] == 1.0f && ids[1] == 0 && w[1] == 0.0f && w[3] == 0.0f);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_rows);
  KB_RUN(test_against_reference);
  KB_RUN(test_softmax_bits);
  KB_RUN(test_threads_and_halves);
  KB_RUN(test_empty);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
