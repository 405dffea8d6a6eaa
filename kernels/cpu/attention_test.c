/* Tests of kb_attention. */
#include "kernels/cpu/testutil/cpu_test.h"

/* Naive reference: materialises each score row in double. */
static void ref_attention(int64_t B, int64_t H, int64_t KVH, int64_t SQ, int64_t SKV, int64_t D, const float *q,
                          const float *k, const float *v, bool causal, double scale, double *out) {
  double *s = (double *)calloc((size_t)SKV, sizeof(double));
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++) {
      int64_t kh = h / (H / KVH);
      for (int64_t i = 0; i < SQ; i++) {
        const float *qi = q + ((b * H + h) * SQ + i) * D;
        double m = -INFINITY, z = 0;
        for (int64_t j = 0; j < SKV; j++) {
          const float *kj = k + ((b * KVH + kh) * SKV + j) * D;
          double dot = 0;
          for (int64_t d = 0; d < D; d++) dot += (double)qi[d] * kj[d];
          s[j] = (causal && j > i) ? -INFINITY : dot * scale;
          if (s[j] > m) m = s[j];
        }
        for (int64_t j = 0; j < SKV; j++) z += (s[j] = exp(s[j] - m));
        for (int64_t d = 0; d < D; d++) {
          double acc = 0;
          for (int64_t j = 0; j < SKV; j++) acc += s[j] * v[((b * KVH + kh) * SKV + j) * D + d];
          out[((b * H + h) * SQ + i) * D + d] = acc / z;
        }
      }
    }
  free(s);
}

static void run_case(kb_context *ctx, int64_t B, int64_t H, int64_t KVH, int64_t SQ, int64_t SKV, int64_t D,
                     bool causal, float scale) {
  int64_t nq = B * H * SQ * D, nk = B * KVH * SKV * D;
  float *q = alloc_f(nq), *k = alloc_f(nk), *v = alloc_f(nk), *out = alloc_f(nq);
  double *ref = (double *)calloc((size_t)(nq > 0 ? nq : 1), sizeof(double));
  rand_fill(q, nq, 1 + (uint64_t)(SQ * 31 + D), -2.0f, 2.0f);
  rand_fill(k, nk, 2 + (uint64_t)(SKV * 17 + D), -2.0f, 2.0f);
  rand_fill(v, nk, 3 + (uint64_t)H, -1.0f, 1.0f);
  CHECK_OK(kb_attention(ctx, B, H, KVH, SQ, SKV, D, q, k, v, causal, scale, out));
  ref_attention(B, H, KVH, SQ, SKV, D, q, k, v, causal, scale == 0.0f ? 1.0 / sqrt((double)D) : (double)scale, ref);
  int bad = 0;
  for (int64_t i = 0; i < nq; i++)
    if (!(fabs(out[i] - ref[i]) <= 1e-6 + 1e-6 * fabs(ref[i])) && bad++ < 3)
      fprintf(stderr, "attention case SQ=%lld SKV=%lld D=%lld causal=%d [%lld]: %.9g vs %.9g\n", (long long)SQ,
              (long long)SKV, (long long)D, causal, (long long)i, out[i], ref[i]);
  CHECK(bad == 0);
  free(q);
  free(k);
  free(v);
  free(out);
  free(ref);
}

static void test_hand_values(void) {
  /* One key: the output is its value, whatever the scores. */
  float q[2] = {3, -1}, k[2] = {0.5f, 2}, v[2] = {7, -8}, out[2];
  CHECK_OK(kb_attention(NULL, 1, 1, 1, 1, 1, 2, q, k, v, false, 0.0f, out));
  CHECK(out[0] == 7.0f && out[1] == -8.0f);
  /* Equal scores: the mean of the values.  Causal row 0 sees only key 0. */
  float q2[2] = {0, 0}, k2[4] = {1, 2, 3, 4}, v2[4] = {1, 10, 3, 20}, o2[2];
  CHECK_OK(kb_attention(NULL, 1, 1, 1, 1, 2, 2, q2, k2, v2, false, 1.0f, o2));
  CHECK(o2[0] == 2.0f && o2[1] == 15.0f);
  CHECK_OK(kb_attention(NULL, 1, 1, 1, 1, 2, 2, q2, k2, v2, true, 1.0f, o2));
  CHECK(o2[0] == 1.0f && o2[1] == 10.0f);
}

static void test_against_reference(void) {
  static const int64_t seqs[] = {1, 7, 9, 17, 33};
  for (int a = 0; a < 5; a++)
    for (int c = 0; c < 2; c++) {
      run_case(NULL, 2, 2, 2, seqs[a], seqs[(a + 2) % 5], 8, c, 0.0f); /* seq_q != seq_kv */
      run_case(NULL, 1, 3, 3, seqs[a], seqs[a], seqs[(a + 1) % 5], c, 0.3f);
    }
  /* Grouped-query: 4 query heads over 2 and over 1 key/value head. */
  run_case(NULL, 2, 4, 2, 9, 9, 16, true, 0.0f);
  run_case(NULL, 2, 4, 1, 7, 17, 16, false, 0.0f);
  run_case(NULL, 1, 6, 3, 17, 7, 4, true, 0.5f);
}

/* Shapes that reach every path of the blocked kernel: several key blocks
 * (64 keys) with the running maximum moving between them, several query
 * row blocks, grouped-query rows sharing a key/value head, and the decode
 * path (at most 16 query rows per key/value head and more than 512 keys),
 * whose key chunks are merged afterwards, with causal limits that leave
 * later chunks empty. */
static void test_blocked_paths(void) {
  kb_context *c2 = make_ctx(2);
  run_case(c2, 1, 2, 2, 150, 200, 64, false, 0.0f);   /* 3+ row blocks of the group, 4 key blocks */
  run_case(c2, 1, 2, 2, 150, 200, 64, true, 0.0f);    /* causal: blocks past the diagonal skipped */
  run_case(c2, 1, 8, 2, 40, 130, 24, true, 0.0f);     /* 4 query heads per key/value head */
  run_case(c2, 2, 4, 4, 1, 1300, 32, false, 0.0f);    /* decode: 3 key chunks merged */
  run_case(c2, 1, 8, 1, 2, 1100, 16, false, 0.0f);    /* decode with 16 rows per key/value head */
  run_case(c2, 1, 2, 1, 3, 1100, 8, true, 0.0f);      /* decode rows that see only the first keys */
  run_case(c2, 1, 1, 1, 17, 700, 20, true, 0.25f);    /* 17 rows: not the decode path */
  kb_context_destroy(c2);
}

/* Scores that grow along the keys: every key block raises the running
 * maximum, so the earlier blocks' sums are rescaled each time. */
static void test_rising_maximum(void) {
  enum { SKV = 300, D = 4 };
  float q[D] = {1, 0, 0, 0}, k[SKV * D], v[SKV * D], out[D];
  for (int j = 0; j < SKV; j++) {
    k[j * D] = (float)j * 0.05f;
    k[j * D + 1] = k[j * D + 2] = k[j * D + 3] = 0;
    v[j * D] = (float)(j % 7);
    v[j * D + 1] = 1.0f;
    v[j * D + 2] = (float)j;
    v[j * D + 3] = -1.0f;
  }
  CHECK_OK(kb_attention(NULL, 1, 1, 1, 1, SKV, D, q, k, v, false, 1.0f, out));
  double z = 0, acc[D] = {0, 0, 0, 0};
  for (int j = 0; j < SKV; j++) {
    double w = exp((double)k[j * D] - (double)k[(SKV - 1) * D]);
    z += w;
    for (int d = 0; d < D; d++) acc[d] += w * v[j * D + d];
  }
  for (int d = 0; d < D; d++) CHECK_CLOSE(out[d], acc[d] / z, 4e-7, 1e-6);
}

/* Large scores: the max subtraction keeps exp finite. */
static void test_large_scores(void) {
  float q[4] = {100, 0, 0, 0}, k[8] = {100, 0, 0, 0, 99.9f, 0, 0, 0}, v[8] = {1, 0, 0, 0, 0, 1, 0, 0}, out[4];
  CHECK_OK(kb_attention(NULL, 1, 1, 1, 1, 2, 4, q, k, v, false, 1.0f, out));
  double w = 1.0 / (1.0 + exp(-(double)(100.0f * 100.0f - 100.0f * 99.9f)));
  CHECK_CLOSE(out[0], w, 1e-7, 1e-6);
  CHECK(!isnan(out[1]));
}

static void test_empty(void) {
  CHECK_OK(kb_attention(NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, false, 0.0f, NULL));
  CHECK_OK(kb_attention(NULL, 2, 4, 2, 0, 0, 8, NULL, NULL, NULL, true, 0.0f, NULL));
  float k[4] = {1, 2, 3, 4};
  CHECK_OK(kb_attention(NULL, 1, 2, 1, 0, 2, 2, NULL, k, k, false, 0.0f, NULL)); /* no queries */
}

static void test_threads_bitwise_identical(void) {
  enum { B = 2, H = 4, KVH = 2, SQ = 40, SKV = 64, D = 16 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *q = alloc_f(B * H * SQ * D), *k = alloc_f(B * KVH * SKV * D), *v = alloc_f(B * KVH * SKV * D);
  float *o1 = alloc_f(B * H * SQ * D), *o3 = alloc_f(B * H * SQ * D);
  rand_fill(q, B * H * SQ * D, 1, -1, 1);
  rand_fill(k, B * KVH * SKV * D, 2, -1, 1);
  rand_fill(v, B * KVH * SKV * D, 3, -1, 1);
  for (int c = 0; c < 2; c++) {
    CHECK_OK(kb_attention(c1, B, H, KVH, SQ, SKV, D, q, k, v, c, 0.0f, o1));
    CHECK_OK(kb_attention(c3, B, H, KVH, SQ, SKV, D, q, k, v, c, 0.0f, o3));
    CHECK(same_bits_f(o1, o3, B * H * SQ * D));
  }
  run_case(c3, B, H, KVH, SQ, SKV, D, true, 0.0f);
  free(q);
  free(k);
  free(v);
  free(o1);
  free(o3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  /* batch 1, heads 2, kv_heads 1, seq_q 2, seq_kv 2, head_dim 2 */
  float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4}, out[8], buf[32];
  fill_f(out, 8, SENTINEL_F);
#define ATT(b, h, kvh, sq, skv, d, Q, K, V, sc, O) kb_attention(ctx, b, h, kvh, sq, skv, d, Q, K, V, false, sc, O)
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_attention: batch must be >= 0", ATT(-1, 2, 1, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "heads must be >= 0", ATT(1, -2, 1, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kv_heads must be >= 0", ATT(1, 2, -1, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "seq_q must be >= 0", ATT(1, 2, 1, -2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "seq_kv must be >= 0", ATT(1, 2, 1, 2, -2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "head_dim must be >= 0", ATT(1, 2, 1, 2, 2, -2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kv_heads (3) must divide heads (2)", ATT(1, 2, 3, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kv_heads (0) must divide heads (2)", ATT(1, 2, 0, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of q overflows", ATT(HUGE_DIM, 2, 1, 2, 2, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of k overflows", ATT(1, 2, 1, 2, HUGE_DIM, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "seq_kv must be > 0 when there are queries",
              ATT(1, 2, 1, 2, 0, 2, q, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "q must not be NULL", ATT(1, 2, 1, 2, 2, 2, NULL, k, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must not be NULL", ATT(1, 2, 1, 2, 2, 2, q, NULL, v, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v must not be NULL", ATT(1, 2, 1, 2, 2, 2, q, k, NULL, 0, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", ATT(1, 2, 1, 2, 2, 2, q, k, v, 0, NULL));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "scale must be >= 0", ATT(1, 2, 1, 2, 2, 2, q, k, v, -0.5f, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "scale must be finite", ATT(1, 2, 1, 2, 2, 2, q, k, v, NAN, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "scale must be finite", ATT(1, 2, 1, 2, 2, 2, q, k, v, INFINITY, out));
  CHECK(all_f(out, 8, SENTINEL_F));
  fill_f(buf, 32, 0.5f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap q", ATT(1, 2, 1, 2, 2, 2, buf, k, v, 0, buf));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap k", ATT(1, 2, 1, 2, 2, 2, q, buf + 7, v, 0, buf));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap v", ATT(1, 2, 1, 2, 2, 2, q, k, buf + 4, 0, buf));
  CHECK(all_f(buf, 32, 0.5f));
#undef ATT
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_values);
  KB_RUN(test_against_reference);
  KB_RUN(test_blocked_paths);
  KB_RUN(test_rising_maximum);
  KB_RUN(test_large_scores);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
