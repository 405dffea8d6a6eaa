/* Tests of kb_argmax. */
#include "kernels/cpu/testutil/cpu_test.h"

static void test_hand_values(void) {
  const float ninf = -INFINITY;
  float x[] = {1, 5, 3, 5, /* tie: first */
               ninf, ninf, ninf, ninf, /* all -inf: index 0 */
               1, NAN, 9, NAN, /* first NaN wins over larger numbers */
               -0.0f, 0.0f, -1, -2, /* -0 and +0 tie */
               NAN, 1, 2, 3,
               -3, -2, INFINITY, 1e38f};
  int32_t out[6];
  CHECK_OK(kb_argmax(NULL, 6, 4, x, out));
  CHECK(out[0] == 1);
  CHECK(out[1] == 0);
  CHECK(out[2] == 1);
  CHECK(out[3] == 0);
  CHECK(out[4] == 0);
  CHECK(out[5] == 2);
}

static void test_edge_sizes(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int s = 0; s < 5; s++) {
    int64_t cols = sizes[s];
    for (int64_t pos = 0; pos < cols; pos += (cols > 8 ? 5 : 1)) {
      float *x = alloc_f(cols);
      int32_t out = -1;
      rand_fill(x, cols, 3 + (uint64_t)pos, -1, 1);
      x[pos] = 2.0f;
      CHECK_OK(kb_argmax(NULL, 1, cols, x, &out));
      CHECK(out == pos);
      free(x);
    }
  }
}

static void test_empty(void) {
  CHECK_OK(kb_argmax(NULL, 0, 0, NULL, NULL));
  CHECK_OK(kb_argmax(NULL, 0, 7, NULL, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { R = 401, C = 777 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *x = alloc_f(R * C);
  int32_t o1[R], o3[R];
  rand_fill(x, R * C, 5, -1, 1);
  CHECK_OK(kb_argmax(c1, R, C, x, o1));
  CHECK_OK(kb_argmax(c3, R, C, x, o3));
  CHECK(memcmp(o1, o3, sizeof o1) == 0);
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) CHECK(x[r * C + c] <= x[r * C + o1[r]]);
  free(x);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, buf[8];
  int32_t out[2];
  fill_i(out, 2, SENTINEL_I);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_argmax: rows must be >= 0, got -1", kb_argmax(ctx, -1, 4, x, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be >= 0, got -4", kb_argmax(ctx, 2, -4, x, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", kb_argmax(ctx, 2, 0, x, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be <= 2147483647",
              kb_argmax(ctx, 1, (int64_t)INT32_MAX + 1, x, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", kb_argmax(ctx, HUGE_DIM, 4, x, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", kb_argmax(ctx, 2, 4, NULL, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", kb_argmax(ctx, 2, 4, x, NULL));
  CHECK(all_i(out, 2, SENTINEL_I));
  memcpy(buf, x, sizeof x);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap x",
              kb_argmax(ctx, 2, 4, buf, (int32_t *)(void *)(buf + 7)));
  CHECK(memcmp(buf, x, sizeof x) == 0);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_edge_sizes);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
