/* Tests of kb_embedding. */
#include "kernels/cpu/testutil/cpu_test.h"

static void test_lookup(void) {
  static const int64_t dims[] = {1, 7, 9, 17, 33};
  for (int d = 0; d < 5; d++) {
    int64_t dim = dims[d], vocab = 11;
    float *table = alloc_f(vocab * dim), *out = alloc_f(5 * dim);
    rand_fill(table, vocab * dim, 5 + (uint64_t)dim, -1.0f, 1.0f);
    int32_t ids[5] = {3, 0, 10, 3, 7};
    CHECK_OK(kb_embedding(NULL, 5, vocab, dim, ids, table, out));
    for (int i = 0; i < 5; i++) CHECK(same_bits_f(out + i * dim, table + ids[i] * dim, dim));
    free(table);
    free(out);
  }
}

static void test_empty(void) {
  float table[4] = {1, 2, 3, 4};
  int32_t ids[2] = {0, 1};
  CHECK_OK(kb_embedding(NULL, 0, 0, 0, NULL, NULL, NULL));
  CHECK_OK(kb_embedding(NULL, 0, 2, 2, NULL, table, NULL));
  /* dim 0: nothing to copy, but the ids are still checked. */
  CHECK_OK(kb_embedding(NULL, 2, 2, 0, ids, NULL, NULL));
  ids[1] = 2;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_embedding(NULL, 2, 2, 0, ids, NULL, NULL));
}

static void test_threads_bitwise_identical(void) {
  enum { V = 1000, D = 256, N = 3001 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *table = alloc_f(V * D), *o1 = alloc_f(N * D), *o3 = alloc_f(N * D);
  int32_t *ids = alloc_i(N);
  rand_fill(table, V * D, 1, -1.0f, 1.0f);
  for (int i = 0; i < N; i++) ids[i] = (int32_t)((i * 7919) % V);
  CHECK_OK(kb_embedding(c1, N, V, D, ids, table, o1));
  CHECK_OK(kb_embedding(c3, N, V, D, ids, table, o3));
  CHECK(same_bits_f(o1, o3, N * D));
  CHECK(same_bits_f(o3 + 17 * D, table + ids[17] * D, D));
  free(table);
  free(o1);
  free(o3);
  free(ids);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(2);
  float table[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, out[6], buf[24];
  int32_t ids[3] = {0, 1, 2};
  fill_f(out, 6, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_embedding: n_ids must be >= 0, got -1",
              kb_embedding(ctx, -1, 6, 2, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "vocab must be >= 0", kb_embedding(ctx, 3, -6, 2, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "dim must be >= 0", kb_embedding(ctx, 3, 6, -2, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of ids overflows", kb_embedding(ctx, INT64_MAX / 2, 6, 2, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of table overflows", kb_embedding(ctx, 3, HUGE_DIM, 2, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of out overflows", kb_embedding(ctx, 3, 1, INT64_MAX / 8, ids, table, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids must not be NULL", kb_embedding(ctx, 3, 6, 2, NULL, table, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "table must not be NULL", kb_embedding(ctx, 3, 6, 2, ids, NULL, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", kb_embedding(ctx, 3, 6, 2, ids, table, NULL));
  /* A bad id anywhere, even the last one, leaves out untouched. */
  ids[2] = 6;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[2] = 6 is out of range [0, 6)",
              kb_embedding(ctx, 3, 6, 2, ids, table, out));
  ids[2] = -1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[2] = -1", kb_embedding(ctx, 3, 6, 2, ids, table, out));
  ids[2] = 2;
  CHECK(all_f(out, 6, SENTINEL_F));
  fill_f(buf, 24, 2.0f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap table",
              kb_embedding(ctx, 3, 6, 2, ids, buf, buf + 11));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap ids",
              kb_embedding(ctx, 3, 6, 2, (const int32_t *)(void *)(buf + 2), table, buf));
  CHECK(all_f(buf, 24, 2.0f));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_lookup);
  KB_RUN(test_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
