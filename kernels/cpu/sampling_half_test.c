/* Tests of the 16-bit decoding kernels: kb_embedding_bf16 / _f16 (exact row
 * copies), kb_argmax_bf16 / _f16 and the bf16 / f16 samplers.  The contract
 * is "the float32 kernel on the exactly widened logits", so every result is
 * compared with the float32 call on logits widened by this file's own model
 * of the formats (not the library's conversions), bit for bit, over many
 * seeds, rows, widths across the kernels' block boundaries, temperatures, k
 * and p; argmax also against a scalar model of its rule. */
#include <math.h>

#include "kernels/cpu/testutil/cpu_test.h"

enum { BF16 = 0, F16 = 1 };

/* The value of a 16-bit pattern, from the format's definition. */
static float widen(int dt, uint16_t h) {
  if (dt == BF16) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, -24);
  else
    v = ldexp(1024.0 + m, e - 25);
  return (float)(sign ? -v : v);
}

/* A finite pattern with |value| roughly in [2^-3, 2^3] (both formats),
 * sometimes a repeat of a few fixed values so that rows have ties. */
static uint16_t rand_finite(int dt, uint64_t *s) {
  uint64_t r = test_next(s);
  uint16_t sign = (uint16_t)((r >> 8) & 1) << 15;
  if ((r & 15) == 0) return (uint16_t)(sign | 0x4000); /* +-2 in both formats */
  if (dt == BF16) return (uint16_t)(sign | (uint16_t)((124 + (r >> 16) % 6) << 7) | (uint16_t)((r >> 24) & 127));
  return (uint16_t)(sign | (uint16_t)((12 + (r >> 16) % 6) << 10) | (uint16_t)((r >> 24) & 1023));
}

static uint16_t neg_inf(int dt) { return dt == BF16 ? 0xff80 : 0xfc00; }
static uint16_t pos_inf(int dt) { return dt == BF16 ? 0x7f80 : 0x7c00; }
/* A signalling NaN pattern (quiet bit clear) and a quiet one. */
static uint16_t snan(int dt) { return dt == BF16 ? 0x7f81 : 0x7c01; }
static uint16_t qnan(int dt) { return dt == BF16 ? 0xffc0 : 0xfe00; }

static uint16_t *alloc_h(int64_t n) { return (uint16_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(uint16_t)); }

static void widen_all(int dt, const uint16_t *h, float *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) f[i] = widen(dt, h[i]);
}

/* ---- embedding ---- */

static kb_status embed(int dt, kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                       const uint16_t *table, uint16_t *out) {
  return dt == BF16 ? kb_embedding_bf16(ctx, n_ids, vocab, dim, ids, table, out)
                    : kb_embedding_f16(ctx, n_ids, vocab, dim, ids, table, out);
}

/* Rows are copied bit for bit, NaN and infinity patterns included, for
 * widths that are not multiples of any vector width and on 1 and 3
 * threads. */
static void test_embedding_copies_rows(void) {
  static const int64_t dims[] = {1, 7, 64, 129};
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  for (int dt = 0; dt < 2; dt++) {
    for (int d = 0; d < 4; d++) {
      int64_t dim = dims[d], vocab = 13, n = 2000;
      uint16_t *table = alloc_h(vocab * dim), *o1 = alloc_h(n * dim), *o3 = alloc_h(n * dim);
      int32_t *ids = alloc_i(n);
      uint64_t s = 99 + (uint64_t)dim;
      for (int64_t i = 0; i < vocab * dim; i++) table[i] = (uint16_t)test_next(&s);
      table[0] = snan(dt);
      table[vocab * dim - 1] = neg_inf(dt);
      for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)((i * 7 + i / 3) % vocab);
      CHECK_OK(embed(dt, c1, n, vocab, dim, ids, table, o1));
      CHECK_OK(embed(dt, c3, n, vocab, dim, ids, table, o3));
      bool rows_ok = true;
      for (int64_t i = 0; i < n; i++)
        rows_ok = rows_ok && memcmp(o1 + i * dim, table + (int64_t)ids[i] * dim, (size_t)dim * 2) == 0;
      CHECK(rows_ok);
      CHECK(memcmp(o1, o3, (size_t)(n * dim) * 2) == 0);
      free(table);
      free(o1);
      free(o3);
      free(ids);
    }
  }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_embedding_bad_inputs(void) {
  static const char *names[2] = {"kb_embedding_bf16:", "kb_embedding_f16:"};
  kb_context *ctx = make_ctx(1);
  for (int dt = 0; dt < 2; dt++) {
    uint16_t table[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, out[6], keep[6];
    for (int i = 0; i < 6; i++) out[i] = keep[i] = (uint16_t)(0xabc0 + i);
    int32_t ids[3] = {0, 4, 5};
    /* The last id is bad: nothing is written, not even the good rows. */
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[2] = 5 is out of range [0, 5)",
                embed(dt, ctx, 3, 5, 2, ids, table, out));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), names[dt]);
    ids[2] = -1;
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[2] = -1", embed(dt, ctx, 3, 5, 2, ids, table, out));
    CHECK(memcmp(out, keep, sizeof out) == 0);
    /* dim 0: nothing to copy, the ids are still checked. */
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "ids[2] = -1", embed(dt, ctx, 3, 5, 0, ids, NULL, NULL));
    ids[2] = 1;
    CHECK_OK(embed(dt, ctx, 3, 5, 0, ids, NULL, NULL));
    CHECK_OK(embed(dt, ctx, 0, 0, 0, NULL, NULL, NULL));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "n_ids must be >= 0", embed(dt, ctx, -1, 5, 2, ids, table, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "table must not be NULL", embed(dt, ctx, 3, 5, 2, ids, NULL, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", embed(dt, ctx, 3, 5, 2, ids, table, NULL));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of table overflows",
                embed(dt, ctx, 3, HUGE_DIM, 2, ids, table, out));
    /* Overlap is judged in bytes of 2-byte elements: out starting 9
     * elements into the 10-element table overlaps, at 10 it does not. */
    uint16_t both[16];
    memcpy(both, table, sizeof table);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap table",
                embed(dt, ctx, 3, 5, 2, ids, both, both + 9));
    CHECK(memcmp(both, table, sizeof table) == 0);
    CHECK_OK(embed(dt, ctx, 3, 5, 2, ids, both, both + 10));
    CHECK(memcmp(both + 10, table + 0, 4) == 0 && memcmp(both + 12, table + 8, 4) == 0 &&
          memcmp(both + 14, table + 2, 4) == 0);
  }
  kb_context_destroy(ctx);
}

/* ---- argmax ---- */

static kb_status argmax16(int dt, kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x, int32_t *out) {
  return dt == BF16 ? kb_argmax_bf16(ctx, rows, cols, x, out) : kb_argmax_f16(ctx, rows, cols, x, out);
}

/* The rule of the header, one element at a time. */
static int32_t argmax_model(const float *x, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; c++) {
    if (isnan(x[best])) break;
    if (isnan(x[c]) || x[c] > x[best]) best = c;
  }
  return (int32_t)best;
}

/* Rows of several widths (the 16-bit kernel widens 4096 columns at a time)
 * with planted maxima, ties across blocks, NaN before and after the maximum,
 * signed zeros and all -inf rows. */
static void test_argmax_matches_f32(void) {
  static const int64_t widths[] = {1, 5, 17, 300, 4096, 4097, 9000, 12289};
  kb_context *c3 = make_ctx(3);
  for (int dt = 0; dt < 2; dt++) {
    for (int w = 0; w < 8; w++) {
      int64_t cols = widths[w], rows = 24;
      uint16_t *x = alloc_h(rows * cols);
      float *xf = alloc_f(rows * cols);
      int32_t *got = alloc_i(rows), *want = alloc_i(rows), *got3 = alloc_i(rows);
      uint64_t s = 1000 + (uint64_t)cols;
      for (int64_t i = 0; i < rows * cols; i++) x[i] = rand_finite(dt, &s);
      for (int64_t r = 0; r < rows; r++) {
        uint16_t *row = x + r * cols;
        int64_t a = (int64_t)(test_next(&s) % (uint64_t)cols), b = (int64_t)(test_next(&s) % (uint64_t)cols);
        switch (r % 8) {
          case 1: /* the largest value twice: the first wins */
            row[a] = row[b] = (uint16_t)(dt == BF16 ? 0x4200 : 0x5000); /* 32 */
            break;
          case 2: /* NaN somewhere (signalling): it wins */
            row[a] = snan(dt);
            break;
          case 3: /* two NaN: the first */
            row[a] = qnan(dt);
            row[b] = snan(dt);
            break;
          case 4: /* all -inf, then zeros of both signs */
            for (int64_t c = 0; c < cols; c++) row[c] = neg_inf(dt);
            break;
          case 5:
            for (int64_t c = 0; c < cols; c++) row[c] = (uint16_t)((c % 3 == 0) ? 0x8000 : neg_inf(dt));
            row[b] = 0;
            break;
          case 6: /* +inf twice */
            row[a] = row[b] = pos_inf(dt);
            break;
          default:
            break;
        }
      }
      widen_all(dt, x, xf, rows * cols);
      CHECK_OK(argmax16(dt, NULL, rows, cols, x, got));
      CHECK_OK(argmax16(dt, c3, rows, cols, x, got3));
      CHECK_OK(kb_argmax(NULL, rows, cols, xf, want));
      CHECK(memcmp(got, want, (size_t)rows * 4) == 0);
      CHECK(memcmp(got3, want, (size_t)rows * 4) == 0);
      for (int64_t r = 0; r < rows; r++) CHECK(got[r] == argmax_model(xf + r * cols, cols));
      free(x);
      free(xf);
      free(got);
      free(want);
      free(got3);
    }
  }
  kb_context_destroy(c3);
}

/* A tie across the block boundary and a NaN in a later block. */
static void test_argmax_blocks(void) {
  for (int dt = 0; dt < 2; dt++) {
    enum { C = 10000 };
    uint16_t *x = alloc_h(C);
    int32_t out;
    for (int c = 0; c < C; c++) x[c] = (uint16_t)(dt == BF16 ? 0x3f80 : 0x3c00); /* 1.0 */
    x[5000] = x[100] = x[9999] = 0x4000;                                          /* 2.0 in both formats */
    CHECK_OK(argmax16(dt, NULL, 1, C, x, &out));
    CHECK(out == 100);
    x[8191] = snan(dt);
    CHECK_OK(argmax16(dt, NULL, 1, C, x, &out));
    CHECK(out == 8191);
    x[4096] = qnan(dt);
    CHECK_OK(argmax16(dt, NULL, 1, C, x, &out));
    CHECK(out == 4096);
    free(x);
  }
}

static void test_argmax_bad_inputs(void) {
  static const char *names[2] = {"kb_argmax_bf16:", "kb_argmax_f16:"};
  kb_context *ctx = make_ctx(1);
  for (int dt = 0; dt < 2; dt++) {
    uint16_t x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t out[2] = {SENTINEL_I, SENTINEL_I};
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0", argmax16(dt, ctx, -1, 4, x, out));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), names[dt]);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", argmax16(dt, ctx, 2, 0, x, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be <= 2147483647",
                argmax16(dt, ctx, 1, (int64_t)INT32_MAX + 1, x, out));
    CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of x overflows", argmax16(dt, ctx, HUGE_DIM, 4, x, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "x must not be NULL", argmax16(dt, ctx, 2, 4, NULL, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", argmax16(dt, ctx, 2, 4, x, NULL));
    CHECK(all_i(out, 2, SENTINEL_I));
    /* x is 16 bytes: out (8 bytes) overlaps from byte 10, not from 16. */
    uint16_t buf[12];
    memcpy(buf, x, sizeof x);
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap x",
                argmax16(dt, ctx, 2, 4, buf, (int32_t *)(void *)(buf + 6)));
    CHECK(memcmp(buf, x, sizeof x) == 0);
    CHECK_OK(argmax16(dt, ctx, 2, 4, buf, (int32_t *)(void *)(buf + 8)));
    CHECK_OK(argmax16(dt, ctx, 0, 0, NULL, NULL));
  }
  kb_context_destroy(ctx);
}

/* ---- samplers ---- */

/* kind 0 kb_sample, 1 top-k, 2 top-p; the 16-bit variant (dt) or, dt < 0,
 * the float32 kernel on xf. */
static kb_status sample_call(int kind, int dt, kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *x,
                             const float *xf, int64_t k, float p, float temperature, uint64_t seed, int32_t *out) {
  switch (kind) {
    case 0:
      if (dt < 0) return kb_sample(ctx, rows, cols, xf, temperature, seed, out);
      return dt == BF16 ? kb_sample_bf16(ctx, rows, cols, x, temperature, seed, out)
                        : kb_sample_f16(ctx, rows, cols, x, temperature, seed, out);
    case 1:
      if (dt < 0) return kb_topk_sample(ctx, rows, cols, xf, k, temperature, seed, out);
      return dt == BF16 ? kb_topk_sample_bf16(ctx, rows, cols, x, k, temperature, seed, out)
                        : kb_topk_sample_f16(ctx, rows, cols, x, k, temperature, seed, out);
    default:
      if (dt < 0) return kb_topp_sample(ctx, rows, cols, xf, p, temperature, seed, out);
      return dt == BF16 ? kb_topp_sample_bf16(ctx, rows, cols, x, p, temperature, seed, out)
                        : kb_topp_sample_f16(ctx, rows, cols, x, p, temperature, seed, out);
  }
}

/* The same tokens as the float32 samplers on the widened logits, bit for
 * bit: 3 kernels x 2 formats x widths on both sides of the 256-column block
 * x 40 seeds x 3 temperatures x up to 40 rows, with ties, -inf entries and
 * values that round-trip through several binades. */
static void test_samplers_match_f32(void) {
  static const int64_t widths[] = {1, 3, 255, 256, 257, 1000};
  static const float temps[] = {0.3f, 1.0f, 2.5f};
  static const float ps[] = {0.05f, 0.6f, 0.95f, 1.0f};
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  long compared = 0, mismatched = 0;
  int64_t distinct_tokens = 0;
  for (int dt = 0; dt < 2; dt++) {
    for (int w = 0; w < 6; w++) {
      int64_t cols = widths[w], rows = cols >= 1000 ? 12 : 40;
      uint16_t *x = alloc_h(rows * cols);
      float *xf = alloc_f(rows * cols);
      int32_t *got = alloc_i(rows), *want = alloc_i(rows);
      uint64_t s = 7 + (uint64_t)cols * 31 + (uint64_t)dt;
      for (int64_t i = 0; i < rows * cols; i++) x[i] = rand_finite(dt, &s);
      /* Some -inf ("never sample"), never a whole row. */
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 1; c < cols; c += 3 + r % 5) x[r * cols + c] = neg_inf(dt);
      widen_all(dt, x, xf, rows * cols);
      int32_t first = -1;
      for (int kind = 0; kind < 3; kind++) {
        for (uint64_t seed = 0; seed < 40; seed++) {
          float temperature = temps[seed % 3];
          int64_t k = 1 + (int64_t)(seed * 7 % (uint64_t)cols);
          float p = ps[seed % 4];
          kb_context *ctx = seed % 2 ? c3 : c1;
          uint64_t sd = seed * 0x9e3779b97f4a7c15ull;
          CHECK_OK(sample_call(kind, dt, ctx, rows, cols, x, NULL, k, p, temperature, sd, got));
          CHECK_OK(sample_call(kind, -1, c1, rows, cols, NULL, xf, k, p, temperature, sd, want));
          for (int64_t r = 0; r < rows; r++) {
            compared++;
            if (got[r] != want[r]) mismatched++;
            if (first < 0) first = got[r];
            if (got[r] != first) distinct_tokens++;
          }
        }
      }
      free(x);
      free(xf);
      free(got);
      free(want);
    }
  }
  if (mismatched != 0) fprintf(stderr, "%ld of %ld tokens differ from the float32 kernel\n", mismatched, compared);
  CHECK(mismatched == 0);
  CHECK(compared > 30000);
  /* The comparison is not vacuous: the draws vary. */
  CHECK(distinct_tokens > compared / 4);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_samplers_bad_inputs(void) {
  static const char *names[3][2] = {{"kb_sample_bf16:", "kb_sample_f16:"},
                                    {"kb_topk_sample_bf16:", "kb_topk_sample_f16:"},
                                    {"kb_topp_sample_bf16:", "kb_topp_sample_f16:"}};
  kb_context *ctx = make_ctx(1);
  for (int dt = 0; dt < 2; dt++) {
    uint64_t s = 5;
    uint16_t x[8];
    for (int i = 0; i < 8; i++) x[i] = rand_finite(dt, &s);
    int32_t out[2] = {SENTINEL_I, SENTINEL_I};
    for (int kind = 0; kind < 3; kind++) {
#define CALL(rows, cols, xs, temp, o) sample_call(kind, dt, ctx, rows, cols, xs, NULL, 1, 0.5f, temp, 1, o)
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "rows must be >= 0, got -1", CALL(-1, 4, x, 1, out));
      CHECK_STR_CONTAINS(kb_context_last_error(ctx), names[kind][dt]);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be > 0 when rows > 0", CALL(2, 0, x, 1, out));
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "cols must be <= 2147483647",
                  CALL(1, (int64_t)INT32_MAX + 1, x, 1, out));
      CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of logits overflows", CALL(HUGE_DIM, 4, x, 1, out));
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits must not be NULL", CALL(2, 4, NULL, 1, out));
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", CALL(2, 4, x, 1, NULL));
      static const float bad_t[4] = {0.0f, -1.0f, NAN, INFINITY};
      for (int i = 0; i < 4; i++)
        CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "temperature must be finite and > 0",
                    CALL(2, 4, x, bad_t[i], out));
      /* Bad logits in the second row (either NaN pattern, +inf, all -inf):
       * the first row's token is not written either. */
      uint16_t bad[8];
      memcpy(bad, x, sizeof x);
      bad[5] = snan(dt);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds NaN", CALL(2, 4, bad, 1, out));
      bad[5] = qnan(dt);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds NaN", CALL(2, 4, bad, 1, out));
      bad[5] = pos_inf(dt);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds +inf", CALL(2, 4, bad, 1, out));
      for (int c = 4; c < 8; c++) bad[c] = neg_inf(dt);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 is all -inf", CALL(2, 4, bad, 1, out));
      CHECK(all_i(out, 2, SENTINEL_I));
      /* -inf beside a finite value is allowed: the finite one is drawn. */
      bad[6] = x[6];
      CHECK_OK(CALL(2, 4, bad, 1, out));
      CHECK(out[1] == 2);
      out[0] = out[1] = SENTINEL_I;
      /* A bad row far into a wide row (past the first widened block). */
      enum { W = 1000 };
      uint16_t *wide = alloc_h(2 * W);
      for (int i = 0; i < 2 * W; i++) wide[i] = rand_finite(dt, &s);
      wide[W + 700] = pos_inf(dt);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "logits row 1 holds +inf", CALL(2, W, wide, 1, out));
      free(wide);
      uint16_t buf[8];
      memcpy(buf, x, sizeof x);
      CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap logits",
                  CALL(2, 4, buf, 1, (int32_t *)(void *)(buf + 6)));
      CHECK(memcmp(buf, x, sizeof x) == 0);
      CHECK(all_i(out, 2, SENTINEL_I));
      CHECK_OK(CALL(0, 0, NULL, 1, NULL));
#undef CALL
    }
    const uint16_t *h = x;
    kb_status (*topk)(kb_context *, int64_t, int64_t, const uint16_t *, int64_t, float, uint64_t, int32_t *) =
        dt == BF16 ? kb_topk_sample_bf16 : kb_topk_sample_f16;
    kb_status (*topp)(kb_context *, int64_t, int64_t, const uint16_t *, float, float, uint64_t, int32_t *) =
        dt == BF16 ? kb_topp_sample_bf16 : kb_topp_sample_f16;
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be >= 1, got 0", topk(ctx, 2, 4, h, 0, 1, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be >= 1, got -2", topk(ctx, 0, 4, h, -2, 1, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k must be <= cols (4), got 5", topk(ctx, 2, 4, h, 5, 1, 1, out));
    CHECK_OK(topk(ctx, 0, 5, NULL, 9, 1.0f, 1, NULL)); /* k > cols is fine without rows */
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1], got 0", topp(ctx, 2, 4, h, 0.0f, 1, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", topp(ctx, 2, 4, h, -0.5f, 1, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", topp(ctx, 2, 4, h, 1.0001f, 1, 1, out));
    CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "p must be in (0, 1]", topp(ctx, 2, 4, h, NAN, 1, 1, out));
    CHECK(all_i(out, 2, SENTINEL_I));
    /* k == cols and p == 1 are valid boundaries. */
    CHECK_OK(topk(ctx, 2, 4, h, 4, 1, 1, out));
    CHECK_OK(topp(ctx, 2, 4, h, 1.0f, 1, 1, out));
  }
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_embedding_copies_rows);
  KB_RUN(test_embedding_bad_inputs);
  KB_RUN(test_argmax_matches_f32);
  KB_RUN(test_argmax_blocks);
  KB_RUN(test_argmax_bad_inputs);
  KB_RUN(test_samplers_match_f32);
  KB_RUN(test_samplers_bad_inputs);
  return kb_test_summary();
}
