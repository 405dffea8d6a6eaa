/* Tests of kb_sample, kb_topk_sample, kb_topp_sample and the Philox
 * generator behind them. */
#include "kernels/cpu/testutil/cpu_test.h"
#include "philox.h"

/* Known answers of Philox4x32-10 from Random123's tests/kat_vectors
 * (counter, key -> output); also reproduced by an independent Python
 * implementation written from the SC'11 paper. */
static void test_philox_known_answers(void) {
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
       0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
       0x24126ea1},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    kb_philox4x32_10(kat[i], kat[i] + 4, out);
    for (int w = 0; w < 4; w++) CHECK(out[w] == kat[i][6 + w]);
  }
}

/* The (seed, row) -> (key, counter) mapping: word 0 for seed
 * 0x0123456789abcdef, from the same independent Python implementation. */
static void test_philox_uniform_mapping(void) {
  static const struct {
    uint64_t row;
    uint32_t word0;
  } cases[] = {{0, 0xb850222e}, {1, 0xadca1466}, {5, 0x5765db8a}, {(1ull << 32) + 3, 0x86cebf5e}};
  for (int i = 0; i < 4; i++) {
    double u = kb_philox_uniform(0x0123456789abcdefull, cases[i].row);
    CHECK(u == (double)(cases[i].word0 >> 8) / 16777216.0);
  }
  CHECK(kb_philox_uniform(0, 0) == (double)(0x6627e8d5u >> 8) / 16777216.0);
}

/* Token ids computed by the numpy float64 reference printed in
 * docs/kernels.md, on logits ((r*37 + c*11) % 17 - 8) / 4 (exact floats). */
static void test_matches_documented_reference(void) {
  enum { R = 8, C = 10 };
  float x[R * C];
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) x[r * C + c] = (float)((r * 37 + c * 11) % 17 - 8) * 0.25f;
  static const int32_t want_sample[R] = {9, 0, 4, 5, 5, 3, 1, 4};
  static const int32_t want_topk[R] = {9, 1, 4, 5, 8, 3, 6, 4};
  static const int32_t want_topp[R] = {9, 1, 4, 5, 8, 3, 6, 4};
  int32_t out[R];
  CHECK_OK(kb_sample(NULL, R, C, x, 0.7f, 12345, out));
  CHECK(memcmp(out, want_sample, sizeof out) == 0);
  CHECK_OK(kb_topk_sample(NULL, R, C, x, 3, 1.3f, 12345, out));
  CHECK(memcmp(out, want_topk, sizeof out) == 0);
  CHECK_OK(kb_topp_sample(NULL, R, C, x, 0.6f, 0.9f, 12345, out));
  CHECK(memcmp(out, want_topp, sizeof out) == 0);
}

static void test_determinism(void) {
  enum { R = 64, C = 1000 };
  float *x = alloc_f(R * C);
  fill_f(x, R * C, 0.0f); /* uniform over 1000 tokens, every row the same */
  int32_t a[R], b[R], c[R];
  CHECK_OK(kb_sample(NULL, R, C, x, 1.0f, 42, a));
  CHECK_OK(kb_sample(NULL, R, C, x, 1.0f, 42, b));
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK_OK(kb_sample(NULL, R, C, x, 1.0f, 43, c));
  CHECK(memcmp(a, c, sizeof a) != 0);
  int distinct = 0;
  for (int r = 1; r < R; r++) distinct += a[r] != a[0];
  CHECK(distinct > R / 2); /* identical rows draw different tokens */
  free(x);
}

/* Empirical frequencies of many independent rows. */
static void frequencies(int kind, const float *row, int64_t cols, float param, float temperature, double *freq) {
  enum { R = 40000 };
  float *x = alloc_f(R * cols);
  int32_t *out = alloc_i(R);
  for (int r = 0; r < R; r++) memcpy(x + r * cols, row, (size_t)cols * sizeof(float));
  if (kind == 0) CHECK_OK(kb_sample(NULL, R, cols, x, temperature, 7, out));
  if (kind == 1) CHECK_OK(kb_topk_sample(NULL, R, cols, x, (int64_t)param, temperature, 7, out));
  if (kind == 2) CHECK_OK(kb_topp_sample(NULL, R, cols, x, param, temperature, 7, out));
  for (int64_t c = 0; c < cols; c++) freq[c] = 0;
  for (int r = 0; r < R; r++) freq[out[r]] += 1.0 / R;
  free(x);
  free(out);
}

static void test_distributions(void) {
  /* probabilities 0.1 0.2 0.3 0.4, plus a -inf token that must never appear */
  float row[5] = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f), -INFINITY};
  double f[5];
  frequencies(0, row, 5, 0, 1.0f, f);
  CHECK_CLOSE(f[0], 0.1, 0.01, 0);
  CHECK_CLOSE(f[1], 0.2, 0.01, 0);
  CHECK_CLOSE(f[2], 0.3, 0.01, 0);
  CHECK_CLOSE(f[3], 0.4, 0.01, 0);
  CHECK(f[4] == 0.0);
  /* temperature 2: p^(1/2), normalised */
  frequencies(0, row, 5, 0, 2.0f, f);
  double z = sqrt(0.1) + sqrt(0.2) + sqrt(0.3) + sqrt(0.4);
  for (int c = 0; c < 4; c++) CHECK_CLOSE(f[c], sqrt(0.1 * (c + 1)) / z, 0.01, 0);
  /* top-2: 0.3 / 0.7 and 0.4 / 0.7 */
  frequencies(1, row, 5, 2, 1.0f, f);
  CHECK(f[0] == 0.0 && f[1] == 0.0 && f[4] == 0.0);
  CHECK_CLOSE(f[2], 3.0 / 7.0, 0.01, 0);
  CHECK_CLOSE(f[3], 4.0 / 7.0, 0.01, 0);
  /* top-p 0.65: nucleus {3, 2} (0.4 < 0.65 <= 0.7) */
  frequencies(2, row, 5, 0.65f, 1.0f, f);
  CHECK(f[0] == 0.0 && f[1] == 0.0 && f[4] == 0.0);
  CHECK_CLOSE(f[2], 3.0 / 7.0, 0.01, 0);
  CHECK_CLOSE(f[3], 4.0 / 7.0, 0.01, 0);
  /* top-p 1: everything with positive probability */
  frequencies(2, row, 5, 1.0f, 1.0f, f);
  CHECK_CLOSE(f[0], 0.1, 0.01, 0);
  CHECK(f[4] == 0.0);
}

static void test_topk1_and_tiny_p_equal_argmax(void) {
  enum { R = 50, C = 33 };
  float x[R * C];
  rand_fill(x, R * C, 9, -4, 4);
  x[3 * C + 5] = x[3 * C + 20] = 10.0f; /* a tie: the lower index wins */
  x[7 * C + 0] = -INFINITY;
  int32_t am[R], tk[R], tp[R];
  CHECK_OK(kb_argmax(NULL, R, C, x, am));
  for (uint64_t seed = 0; seed < 5; seed++) {
    CHECK_OK(kb_topk_sample(NULL, R, C, x, 1, 1.0f, seed, tk));
    CHECK_OK(kb_topp_sample(NULL, R, C, x, 1e-6f, 1.0f, seed, tp));
    CHECK(memcmp(am, tk, sizeof am) == 0);
    CHECK(memcmp(am, tp, sizeof am) == 0);
  }
  CHECK(am[3] == 5);
  /* k = cols is plain sampling over the sorted candidates: same support. */
  CHECK_OK(kb_topk_sample(NULL, R, C, x, C, 1.0f, 3, tk));
  for (int r = 0; r < R; r++) CHECK(tk[r] >= 0 && tk[r] < C);
}

static void test_edge_sizes_and_empty(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int s = 0; s < 5; s++) {
    int64_t cols = sizes[s];
    float *x = alloc_f(3 * cols);
    int32_t out[3];
    rand_fill(x, 3 * cols, 1, -2, 2);
    CHECK_OK(kb_sample(NULL, 3, cols, x, 1.0f, 5, out));
    for (int r = 0; r < 3; r++) CHECK(out[r] >= 0 && out[r] < cols);
    CHECK_OK(kb_topk_sample(NULL, 3, cols, x, cols > 3 ? 3 : cols, 1.0f, 5, out));
    for (int r = 0; r < 3; r++) CHECK(out[r] >= 0 && out[r] < cols);
    CHECK_OK(kb_topp_sample(NULL, 3, cols, x, 0.9f, 1.0f, 5, out));
    for (int r = 0; r < 3; r++) CHECK(out[r] >= 0 && out[r] < cols);
    free(x);
  }
  /* cols == 1: always token 0. */
  float one = 3.0f;
  int32_t t = -1;
  CHECK_OK(kb_sample(NULL, 1, 1, &one, 0.5f, 9, &t));
  CHECK(t == 0);
  CHECK_OK(kb_sample(NULL, 0, 0, NULL, 1.0f, 1, NULL));
  CHECK_OK(kb_topk_sample(NULL, 0, 0, NULL, 1, 1.0f, 1, NULL));
  CHECK_OK(kb_topk_sample(NULL, 0, 5, NULL, 9, 1.0f, 1, NULL)); /* k > cols is fine without rows */
  CHECK_OK(kb_topp_sample(NULL, 0, 0, NULL, 0.5f, 1.0f, 1, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { R = 97, C = 1000 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(R * C);
  int32_t a[R], b[R];
  rand_fill(x, R * C, 77, -6, 6);
  CHECK_OK(kb_sample(c1, R, C, x, 0.8f, 1234, a));
  CHECK_OK(kb_sample(c3, R, C, x, 0.8f, 1234, b));
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK_OK(kb_topk_sample(c1, R, C, x, 40, 0.8f, 1234, a));
  CHECK_OK(kb_topk_sample(c3, R, C, x, 40, 0.8f, 1234, b));
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK_OK(kb_topp_sample(c1, R, C, x, 0.9f, 0.8f, 1234, a));
  CHECK_OK(kb_topp_sample(c3, R, C, x, 0.9f, 0.8f, 1234, b));
  CHECK(memcmp(a, b, sizeof a) == 0);
  free(x);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

/* Bad inputs common to the three samplers; kind 0 sample, 1 top-k, 2 top-p. */
static kb_status call(kb_context *ctx, int kind, int64_t rows, int64_t cols, const float *x, float temperature,
                      int32_t *out) {
  if (kind == 0) return kb_sample(ctx, rows, cols, x, temperature, 1, out);
  if (kind == 1) return kb_topk_sample(ctx, rows, cols, x, 1, temperature, 1, out);
  return kb_topp_sample(ctx, rows, cols, x, 0.5f, temperature, 1, out);
}

static void test_bad_inputs(void) {
  static const char *names[] = {"kb_sample:", "kb_topk_sample:", "kb_topp_sample:"};
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, buf[8];
  int32_t out[2];
  fill_i(out, 2, SENTINEL_I);
  for (int kind = 0; kind < 3; kind++) {
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0, got -1", call(ctx, kind, -1, 4, x, 1, out));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), names[kind]);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0", call(ctx, kind, 2, -4, x, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", call(ctx, kind, 2, 0, x, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be <= 2147483647",
                call(ctx, kind, 1, (int64_t)INT32_MAX + 1, x, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of logits overflows", call(ctx, kind, HUGE_DIM, 4, x, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits must not be NULL", call(ctx, kind, 2, 4, NULL, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", call(ctx, kind, 2, 4, x, 1, NULL));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "temperature must be finite and > 0", call(ctx, kind, 2, 4, x, 0, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "temperature must be finite and > 0", call(ctx, kind, 2, 4, x, -1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "temperature must be finite and > 0",
                call(ctx, kind, 2, 4, x, NAN, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "temperature must be finite and > 0",
                call(ctx, kind, 2, 4, x, INFINITY, out));
    /* Bad logits in the second row: the first row's token is not written either. */
    float bad[8] = {1, 2, 3, 4, 1, NAN, 3, 4};
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds NaN", call(ctx, kind, 2, 4, bad, 1, out));
    bad[5] = INFINITY;
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds +inf", call(ctx, kind, 2, 4, bad, 1, out));
    for (int c = 4; c < 8; c++) bad[c] = -INFINITY;
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 is all -inf", call(ctx, kind, 2, 4, bad, 1, out));
    CHECK(all_i(out, 2, SENTINEL_I));
    memcpy(buf, x, sizeof x);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap logits",
                call(ctx, kind, 2, 4, buf, 1, (int32_t *)(void *)(buf + 3)));
    CHECK(memcmp(buf, x, sizeof x) == 0);
  }
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be >= 1, got 0", kb_topk_sample(ctx, 2, 4, x, 0, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be >= 1, got -2", kb_topk_sample(ctx, 0, 4, x, -2, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be <= cols (4), got 5", kb_topk_sample(ctx, 2, 4, x, 5, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1], got 0", kb_topp_sample(ctx, 2, 4, x, 0.0f, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", kb_topp_sample(ctx, 2, 4, x, -0.5f, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", kb_topp_sample(ctx, 2, 4, x, 1.0001f, 1, 1, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", kb_topp_sample(ctx, 2, 4, x, NAN, 1, 1, out));
  CHECK(all_i(out, 2, SENTINEL_I));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_philox_known_answers);
  KB_RUN(test_philox_uniform_mapping);
  KB_RUN(test_matches_documented_reference);
  KB_RUN(test_determinism);
  KB_RUN(test_distributions);
  KB_RUN(test_topk1_and_tiny_p_equal_argmax);
  KB_RUN(test_edge_sizes_and_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
