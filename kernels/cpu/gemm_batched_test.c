/* Tests of kb_gemm_batched: every item is exactly kb_gemm on its matrices
 * (bit for bit), with padded strides, broadcast operands (stride 0), small
 * items shared out one per thread and large items run one after another,
 * on 1 and 3 threads; the 16-bit variants against kb_gemm_bf16 / _f16 per
 * item; bad input. */
#include "kernels/cpu/testutil/cpu_test.h"

static void run_case(kb_context *ctx, bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t pad,
                     bool broadcast_a, bool broadcast_b, float alpha, float beta) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
  int64_t sa = broadcast_a ? 0 : ar * lda + pad, sb = broadcast_b ? 0 : br * ldb + 2 * pad, sc = m * ldc + pad;
  int64_t na = (broadcast_a ? 1 : batch) * (ar * lda + pad), nb = (broadcast_b ? 1 : batch) * (br * ldb + 2 * pad);
  int64_t nc = batch * sc;
  float *a = alloc_f(na), *b = alloc_f(nb), *c = alloc_f(nc), *want = alloc_f(nc);
  rand_fill(a, na, 3 + (uint64_t)m, -1, 1);
  rand_fill(b, nb, 4 + (uint64_t)n, -1, 1);
  rand_fill(c, nc, 5, -1, 1);
  memcpy(want, c, (size_t)nc * sizeof(float));
  CHECK_OK(kb_gemm_batched(ctx, ta, tb, batch, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc));
  for (int64_t i = 0; i < batch; i++)
    CHECK_OK(kb_gemm(NULL, ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, want + i * sc, ldc));
  /* Every item as kb_gemm computes it; the gaps between items untouched. */
  CHECK(same_bits_f(c, want, nc));
  free(a);
  free(b);
  free(c);
  free(want);
}

static void test_items_are_gemms(void) {
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    run_case(c1, ta, tb, 5, 7, 9, 11, 2, false, false, 1.0f, 0.0f);     /* small items */
    run_case(c3, ta, tb, 37, 12, 33, 20, 1, false, false, 0.5f, 2.0f); /* one item per thread */
    run_case(c3, ta, tb, 6, 8, 5, 64, 0, true, false, 1.0f, 1.0f);     /* A broadcast */
    run_case(c3, ta, tb, 6, 8, 5, 64, 3, false, true, -1.0f, 0.0f);    /* B broadcast */
    run_case(c3, ta, tb, 3, 150, 140, 130, 1, false, false, 1.0f, 0.5f); /* items on every thread */
    run_case(c3, ta, tb, 4, 1, 300, 90, 0, false, true, 1.0f, 0.0f);  /* matrix-vector items */
  }
  run_case(c3, false, false, 0, 5, 5, 5, 0, false, false, 1.0f, 0.0f); /* no items */
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_half_variants(void) {
  enum { BATCH = 9, M = 6, N = 10, K = 40 };
  kb_context *ctx = make_ctx(2);
  uint16_t a[BATCH * M * K], b[K * N], c[BATCH * M * N], want[BATCH * M * N];
  for (int f16 = 0; f16 < 2; f16++) {
    for (int i = 0; i < BATCH * M * K; i++) a[i] = (uint16_t)((f16 ? 0x3800 : 0x3f00) + (i * 37) % 200);
    for (int i = 0; i < K * N; i++) b[i] = (uint16_t)((f16 ? 0xb400 : 0xbe80) + (i * 11) % 150);
    for (int i = 0; i < BATCH * M * N; i++) c[i] = want[i] = (uint16_t)(f16 ? 0x3c00 : 0x3f80);
    if (f16) {
      CHECK_OK(kb_gemm_batched_f16(ctx, false, false, BATCH, M, N, K, 0.5f, a, K, M * K, b, N, 0, 2.0f, c, N, M * N));
      for (int i = 0; i < BATCH; i++)
        CHECK_OK(kb_gemm_f16(NULL, false, false, M, N, K, 0.5f, a + i * M * K, K, b, N, 2.0f, want + i * M * N, N));
    } else {
      CHECK_OK(kb_gemm_batched_bf16(ctx, false, false, BATCH, M, N, K, 0.5f, a, K, M * K, b, N, 0, 2.0f, c, N, M * N));
      for (int i = 0; i < BATCH; i++)
        CHECK_OK(kb_gemm_bf16(NULL, false, false, M, N, K, 0.5f, a + i * M * K, K, b, N, 2.0f, want + i * M * N, N));
    }
    CHECK(memcmp(c, want, sizeof c) == 0);
  }
  kb_context_destroy(ctx);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  /* batch 2 of 2 x 3 times 3 x 2 */
  float a[12], b[12], c[8], buf[64];
  fill_f(a, 12, 1.0f);
  fill_f(b, 12, 1.0f);
  fill_f(c, 8, SENTINEL_F);
#define BG(batch, sa, sb, sc, A, B, C) kb_gemm_batched(ctx, false, false, batch, 2, 2, 3, 1.0f, A, 3, sa, B, 2, sb, 0.0f, C, 2, sc)
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_gemm_batched: batch must be >= 0", BG(-1, 6, 6, 4, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "stride_a must be >= 0", BG(2, -6, 6, 4, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "stride_b must be >= 0", BG(2, 6, -1, 4, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "stride_c must be >= 0", BG(2, 6, 6, -4, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "stride_c must be >= 4 (the extent of one C", BG(2, 6, 6, 3, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "stride_c must be >= 4", BG(2, 6, 6, 0, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of a overflows", BG(3, HUGE_DIM, 6, 4, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of c overflows", BG(3, 6, 6, HUGE_DIM, a, b, c));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "a must not be NULL", BG(2, 6, 6, 4, NULL, b, c));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not be NULL", BG(2, 6, 6, 4, a, b, NULL));
  CHECK(all_f(c, 8, SENTINEL_F));
  /* C (all of its items) must not overlap A or B (all of theirs). */
  fill_f(buf, 64, 1.0f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not overlap a", BG(2, 6, 0, 4, buf, b, buf + 10));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "c must not overlap b", BG(2, 0, 6, 4, a, buf + 20, buf + 14));
  CHECK(all_f(buf, 64, 1.0f));
  /* A single item may use stride_c 0; no items need no buffers. */
  CHECK_OK(BG(1, 0, 0, 0, a, b, c));
  CHECK_OK(BG(0, 6, 6, 4, NULL, NULL, NULL));
#undef BG
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_items_are_gemms);
  KB_RUN(test_half_variants);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
