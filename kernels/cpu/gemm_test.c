/* Tests of kb_gemm. */
#include "kernels/cpu/testutil/cpu_test.h"

static float elem(const float *a, int64_t ld, bool trans, int64_t i, int64_t p) {
  return trans ? a[p * ld + i] : a[i * ld + p];
}

/* The documented float32 order: acc = 0; acc = fma(a, b, acc) for p
 * increasing; then alpha * acc (+ beta * c), each product and the sum
 * rounded (the test is built with -ffp-contract=off).  This reproduces the
 * kernel bit for bit. */
static float ref_exact(bool ta, bool tb, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                       int64_t ldb, float beta, float c, int64_t i, int64_t j) {
  float acc = 0.0f;
  for (int64_t p = 0; p < k; p++) acc = fmaf(elem(a, lda, ta, i, p), elem(b, ldb, tb, p, j), acc);
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * c;
}

/* Naive triple loop in double: the mathematical value. */
static double ref_double(bool ta, bool tb, int64_t k, double alpha, const float *a, int64_t lda, const float *b,
                         int64_t ldb, double beta, float c, int64_t i, int64_t j, double *abs_sum) {
  double acc = 0.0, mag = 0.0;
  for (int64_t p = 0; p < k; p++) {
    double t = (double)elem(a, lda, ta, i, p) * (double)elem(b, ldb, tb, p, j);
    acc += t;
    mag += fabs(t);
  }
  *abs_sum = fabs(alpha) * mag + (beta == 0.0 ? 0.0 : fabs(beta * c));
  return beta == 0.0 ? alpha * acc : alpha * acc + beta * c;
}

/* One case: all four transposes, strides padded by `pad`, checked bitwise
 * against the float order and within k * eps of the double value; the
 * padding between rows of C must be left alone. */
static void run_case(kb_context *ctx, int64_t m, int64_t n, int64_t k, int64_t pad, float alpha, float beta,
                     bool nan_c) {
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = (ac > 0 ? ac : 1) + pad, ldb = (bc > 0 ? bc : 1) + pad, ldc = (n > 0 ? n : 1) + pad;
    float *a = alloc_f(ar * lda), *b = alloc_f(br * ldb), *c = alloc_f(m * ldc), *c0 = alloc_f(m * ldc);
    rand_fill(a, ar * lda, 100 + (uint64_t)(m * 7 + k), -1.0f, 1.0f);
    rand_fill(b, br * ldb, 200 + (uint64_t)(n * 5 + k), -1.0f, 1.0f);
    rand_fill(c0, m * ldc, 300, -1.0f, 1.0f);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = n; j < ldc; j++) c0[i * ldc + j] = SENTINEL_F; /* padding */
    if (nan_c)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c0[i * ldc + j] = NAN;
    memcpy(c, c0, (size_t)(m * ldc) * sizeof(float));
    CHECK_OK(kb_gemm(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
    int bad = 0;
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) {
        float got = c[i * ldc + j];
        float want = ref_exact(ta, tb, k, alpha, a, lda, b, ldb, beta, c0[i * ldc + j], i, j);
        double mag, exact = ref_double(ta, tb, k, alpha, a, lda, b, ldb, beta, c0[i * ldc + j], i, j, &mag);
        bool ok = memcmp(&got, &want, sizeof got) == 0 && !isnan(got) &&
                  fabs((double)got - exact) <= (double)(k + 2) * 1.2e-7 * mag + 1e-30;
        if (!ok && bad++ < 3)
          fprintf(stderr, "gemm t=%d m=%lld n=%lld k=%lld (%lld,%lld): got %.9g want %.9g exact %.9g\n", t,
                  (long long)m, (long long)n, (long long)k, (long long)i, (long long)j, got, want, exact);
      }
      for (int64_t j = n; j < ldc; j++)
        if (memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float)) != 0) bad++;
    }
    CHECK(bad == 0);
    free(a);
    free(b);
    free(c);
    free(c0);
  }
}

static void test_hand_values(void) {
  /* [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50] */
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {1, 1, 1, 1};
  CHECK_OK(kb_gemm(NULL, false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2));
  CHECK(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
  /* A^T B: [1 3; 2 4] * B = [26 30; 38 44]; alpha 2, beta 1 adds the old C. */
  CHECK_OK(kb_gemm(NULL, true, false, 2, 2, 2, 2.0f, a, 2, b, 2, 1.0f, c, 2));
  CHECK(c[0] == 19 + 52 && c[1] == 22 + 60 && c[2] == 43 + 76 && c[3] == 50 + 88);
  /* A B^T: [1 2; 3 4] * [5 7; 6 8] = [17 23; 39 53] */
  CHECK_OK(kb_gemm(NULL, false, true, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2));
  CHECK(c[0] == 17 && c[1] == 23 && c[2] == 39 && c[3] == 53);
}

static void test_all_transposes_edge_sizes(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      run_case(NULL, sizes[i], sizes[j], sizes[(i + j) % 5], 0, 1.0f, 0.0f, false);
      run_case(NULL, sizes[j], sizes[i], sizes[(i + 2 * j) % 5], 3, -0.75f, 0.5f, false);
    }
  /* Wider than one 256-column accumulator block, and rows not a multiple of 4. */
  run_case(NULL, 6, 300, 20, 1, 1.25f, -2.0f, false);
}

/* Shapes past every block of the packed kernel (K blocks of at most 512,
 * N blocks of a few hundred, M blocks of several hundred), the matrix-vector
 * paths (m == 1, n == 1), and small problems that read A and B in place;
 * on 1 and 2 threads.  Every element must be the documented fma chain. */
static void test_blocked_paths(void) {
  kb_context *c2 = make_ctx(2);
  run_case(NULL, 13, 37, 1100, 2, 1.0f, 0.0f, false);  /* three K blocks */
  run_case(c2, 23, 600, 70, 1, -0.5f, 0.25f, false);    /* several N blocks, packed A */
  run_case(c2, 700, 9, 40, 0, 1.0f, 1.0f, false);       /* several M blocks */
  run_case(c2, 31, 33, 600, 5, 2.0f, -1.0f, false);     /* K split with beta != 0: C_old is kept */
  run_case(NULL, 1, 333, 150, 3, 1.0f, 0.0f, false);    /* row vector times matrix */
  run_case(c2, 1, 1000, 77, 0, 0.5f, 2.0f, false);
  run_case(NULL, 333, 1, 150, 3, 1.0f, 0.0f, false);    /* matrix times column vector */
  run_case(c2, 1000, 1, 77, 2, -1.0f, 0.5f, false);
  run_case(c2, 64, 64, 64, 0, 1.0f, 0.0f, false);       /* small: A and B read in place */
  run_case(c2, 12, 32, 8, 0, 1.0f, 0.0f, true);
  kb_context_destroy(c2);
}

/* A few rows against wide B^T with beta == 0 run swapped (gemm_engine.c:
 * C^T = B A^T, each block of C^T transposed into C): still every element
 * the documented chain, C's padding untouched, on 1 and 2 threads, across
 * K blocks, several MC blocks of the swapped rows and ragged edges. */
static void test_swapped_paths(void) {
  kb_context *c2 = make_ctx(2);
  run_case(c2, 40, 600, 1100, 3, 1.0f, 0.0f, false);  /* three K blocks */
  run_case(NULL, 17, 300, 530, 2, -0.5f, 0.0f, false); /* alpha != 1 */
  run_case(NULL, 19, 2200, 40, 1, 1.0f, 0.0f, false);  /* several MC blocks of C^T */
  run_case(c2, 33, 2500, 24, 0, 1.0f, 0.0f, true);     /* NaN in C ignored */
  run_case(c2, 150, 900, 70, 5, 1.0f, 0.0f, false);  /* ragged rows and columns */
  /* 1-4 columns of C^T past 16 or 32 (avx512 computes them with the
   * weights' rows as lanes): across K blocks, with alpha, on 2 threads. */
  run_case(NULL, 20, 400, 1100, 1, 1.0f, 0.0f, false);
  run_case(NULL, 36, 500, 700, 0, 0.25f, 0.0f, false);
  run_case(c2, 34, 700, 530, 2, 1.0f, 0.0f, true);
  /* 5-8 columns of C^T past 16 or 32 (avx512 computes them as a vector of
   * 8): after a vector of 16 and alone, across K blocks, with alpha. */
  run_case(NULL, 24, 400, 1100, 1, 0.5f, 0.0f, false);
  run_case(c2, 37, 500, 530, 0, 1.0f, 0.0f, true);
  run_case(c2, 40, 800, 70, 3, -2.0f, 0.0f, false);
  kb_context_destroy(c2);
}

static void test_beta_zero_ignores_nan_c(void) {
  run_case(NULL, 5, 9, 7, 2, 1.0f, 0.0f, true);
  float a[1] = {2}, b[1] = {3}, c[1] = {NAN};
  CHECK_OK(kb_gemm(NULL, false, false, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1));
  CHECK(c[0] == 6.0f);
}

static void test_k_zero(void) {
  float c[4] = {1, 2, 3, 4};
  CHECK_OK(kb_gemm(NULL, false, false, 2, 2, 0, 1.0f, NULL, 1, NULL, 2, 0.5f, c, 2));
  CHECK(c[0] == 0.5f && c[1] == 1.0f && c[2] == 1.5f && c[3] == 2.0f);
  CHECK_OK(kb_gemm(NULL, true, true, 2, 2, 0, 1.0f, NULL, 2, NULL, 1, 0.0f, c, 2));
  CHECK(c[0] == 0.0f && c[3] == 0.0f);
}

static void test_empty(void) {
  CHECK_OK(kb_gemm(NULL, false, false, 0, 0, 0, 1.0f, NULL, 1, NULL, 1, 0.0f, NULL, 1));
  CHECK_OK(kb_gemm(NULL, false, false, 0, 0, 3, 1.0f, NULL, 3, NULL, 1, 0.0f, NULL, 1));
  CHECK_OK(kb_gemm(NULL, true, true, 4, 0, 0, 1.0f, NULL, 4, NULL, 1, 0.0f, NULL, 1));
  /* Only tensors without elements may be NULL: B [3, 5] has 15 even when
   * C is empty. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gemm(NULL, false, false, 0, 5, 3, 1.0f, NULL, 3, NULL, 5, 0.0f, NULL, 5));
}

/* C = alpha op(A) op(B) + beta C for every transpose on contexts c1 and
 * c3 (A, B and C_old random from seed): the same bits. */
static void check_threads_same(kb_context *c1, kb_context *c3, int64_t m, int64_t n, int64_t k, float alpha,
                               float beta, uint64_t seed) {
  float *a = alloc_f(m * k), *b = alloc_f(k * n), *y1 = alloc_f(m * n), *y3 = alloc_f(m * n);
  rand_fill(a, m * k, seed, -1.0f, 1.0f);
  rand_fill(b, k * n, seed + 1, -1.0f, 1.0f);
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    rand_fill(y1, m * n, seed + 2, -1.0f, 1.0f);
    memcpy(y3, y1, (size_t)(m * n) * sizeof(float));
    CHECK_OK(kb_gemm(c1, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, y1, n));
    CHECK_OK(kb_gemm(c3, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, y3, n));
    CHECK(same_bits_f(y1, y3, m * n));
  }
  free(a);
  free(b);
  free(y1);
  free(y3);
}

static void test_threads_bitwise_identical(void) {
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  check_threads_same(c1, c3, 67, 45, 300, 0.5f, 0.25f, 1);
  run_case(c3, 33, 17, 250, 1, 1.0f, 0.0f, false);
  /* Few rows against many columns: the threads split the columns (each
   * reads its part of B once) instead of the rows. */
  check_threads_same(c1, c3, 20, 700, 300, 1.0f, 0.0f, 4);
  run_case(c3, 20, 700, 300, 2, 1.0f, 0.0f, false);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, b[12] = {0}, c[12], buf[24];
  fill_f(c, 12, SENTINEL_F);
  /* m = 2, n = 3, k = 4: A [2, 4], B [4, 3], C [2, 3]. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_gemm: m must be >= 0, got -2",
              kb_gemm(ctx, false, false, -2, 3, 4, 1, a, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "n must be >= 0", kb_gemm(ctx, false, false, 2, -3, 4, 1, a, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be >= 0", kb_gemm(ctx, false, false, 2, 3, -4, 1, a, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "lda must be >= 0", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, -4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ldb must be >= 0", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, -3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ldc must be >= 0", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, 3, 0, c, -3));
  /* Strides shorter than the stored rows, for each transpose. */
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "lda must be >= 4", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 3, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "lda must be >= 2", kb_gemm(ctx, true, false, 2, 3, 4, 1, a, 1, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ldb must be >= 3", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, 2, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ldb must be >= 4", kb_gemm(ctx, false, true, 2, 3, 4, 1, a, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ldc must be >= 3", kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, 3, 0, c, 2));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "ldc must be >= 1", kb_gemm(ctx, false, false, 0, 0, 0, 1, a, 1, b, 1, 0, c, 0));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of a overflows",
              kb_gemm(ctx, false, false, HUGE_DIM, 3, 4, 1, a, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of b overflows",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, HUGE_DIM, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "a must not be NULL",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, NULL, 4, b, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "b must not be NULL",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, NULL, 3, 0, c, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not be NULL",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, b, 3, 0, NULL, 3));
  CHECK(all_f(c, 12, SENTINEL_F));
  /* C must not overlap A or B at all (C is written while they are read). */
  fill_f(buf, 24, 1.0f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not overlap a",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, buf, 4, b, 3, 0, buf + 7, 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not overlap b",
              kb_gemm(ctx, false, false, 2, 3, 4, 1, a, 4, buf, 3, 0, buf, 3));
  CHECK(all_f(buf, 24, 1.0f));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_all_transposes_edge_sizes);
  KB_RUN(test_blocked_paths);
  KB_RUN(test_swapped_paths);
  KB_RUN(test_beta_zero_ignores_nan_c);
  KB_RUN(test_k_zero);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
