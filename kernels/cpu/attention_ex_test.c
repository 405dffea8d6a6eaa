/* Tests of kb_attention_ex: layouts, key lengths, additive masks with
 * broadcasting, bottom-right causal alignment, rows with no key, the 16-bit
 * variants, and bad input. */
#include "kernels/cpu/testutil/cpu_test.h"
#include "half.h"

/* x rounded to the 16-bit format: the bits, and the float they stand for. */
static float round16(int f16, float x, uint16_t *bits) {
  *bits = f16 ? kb_f32_to_f16(x) : kb_f32_to_bf16(x);
  return f16 ? kb_f16_to_f32(*bits) : kb_bf16_to_f32(*bits);
}

/* Everything one call is given, in the [batch, heads, seq, head_dim] layout
 * (seq_major copies are made from these). */
struct ex_case {
  int64_t B, H, KVH, SQ, SKV, D;
  const int32_t *lengths;      /* [B] or NULL */
  const float *mask;           /* [MB, MH, MQ, SKV] or NULL */
  int64_t MB, MH, MQ;
  bool causal, bottom_right;
  float scale;
};

/* Naive float64 reference from the header's definition. */
static void ref_ex(const struct ex_case *c, const float *q, const float *k, const float *v, double *out) {
  double *s = (double *)calloc((size_t)(c->SKV > 0 ? c->SKV : 1), sizeof(double));
  double scale = c->scale == 0.0f ? 1.0 / sqrt((double)c->D) : (double)c->scale;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->H; h++) {
      int64_t kh = h / (c->H / c->KVH);
      int64_t keys = c->lengths != NULL ? c->lengths[b] : c->SKV;
      for (int64_t i = 0; i < c->SQ; i++) {
        const float *qi = q + ((b * c->H + h) * c->SQ + i) * c->D;
        int64_t lim = keys;
        if (c->causal) {
          int64_t cl = c->bottom_right ? i + 1 + keys - c->SQ : i + 1;
          if (cl < lim) lim = cl;
        }
        double m = -INFINITY;
        for (int64_t j = 0; j < c->SKV; j++) {
          s[j] = -INFINITY;
          if (j >= lim) continue;
          const float *kj = k + ((b * c->KVH + kh) * c->SKV + j) * c->D;
          double dot = 0;
          for (int64_t d = 0; d < c->D; d++) dot += (double)qi[d] * kj[d];
          s[j] = dot * scale;
          if (c->mask != NULL) {
            int64_t mb = c->MB == 1 ? 0 : b, mh = c->MH == 1 ? 0 : h, mq = c->MQ == 1 ? 0 : i;
            s[j] += c->mask[((mb * c->MH + mh) * c->MQ + mq) * c->SKV + j];
          }
          if (s[j] > m) m = s[j];
        }
        double *o = out + ((b * c->H + h) * c->SQ + i) * c->D;
        if (m == -INFINITY) { /* no key left: zeros */
          for (int64_t d = 0; d < c->D; d++) o[d] = 0.0;
          continue;
        }
        double z = 0;
        for (int64_t j = 0; j < c->SKV; j++) z += (s[j] = exp(s[j] - m));
        for (int64_t d = 0; d < c->D; d++) {
          double acc = 0;
          for (int64_t j = 0; j < c->SKV; j++) acc += s[j] * v[((b * c->KVH + kh) * c->SKV + j) * c->D + d];
          o[d] = acc / z;
        }
      }
    }
  free(s);
}

/* [B, N, S, D] -> [B, S, N, D] */
static float *to_seq_major(const float *x, int64_t B, int64_t N, int64_t S, int64_t D) {
  float *y = alloc_f(B * N * S * D);
  for (int64_t b = 0; b < B; b++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t s = 0; s < S; s++)
        memcpy(y + ((b * S + s) * N + n) * D, x + ((b * N + n) * S + s) * D, (size_t)D * sizeof(float));
  return y;
}

static kb_status call_ex(kb_context *ctx, const struct ex_case *c, bool seq_major, const float *q, const float *k,
                         const float *v, float *out) {
  return kb_attention_ex(ctx, c->B, c->H, c->KVH, c->SQ, c->SKV, c->D, seq_major, q, k, v, c->lengths, c->MB, c->MH,
                         c->MQ, c->mask, c->causal, c->bottom_right, c->scale, out);
}

/* Runs a case in both layouts: against the float64 reference, and the two
 * layouts bit for bit (the same rows, the same operations). */
static void run_ex(kb_context *ctx, const struct ex_case *c, uint64_t seed) {
  int64_t nq = c->B * c->H * c->SQ * c->D, nk = c->B * c->KVH * c->SKV * c->D;
  float *q = alloc_f(nq), *k = alloc_f(nk), *v = alloc_f(nk), *out = alloc_f(nq);
  double *ref = (double *)calloc((size_t)(nq > 0 ? nq : 1), sizeof(double));
  rand_fill(q, nq, seed, -2.0f, 2.0f);
  rand_fill(k, nk, seed + 1, -2.0f, 2.0f);
  rand_fill(v, nk, seed + 2, -1.0f, 1.0f);
  fill_f(out, nq, SENTINEL_F);
  CHECK_OK(call_ex(ctx, c, false, q, k, v, out));
  ref_ex(c, q, k, v, ref);
  int bad = 0;
  for (int64_t i = 0; i < nq; i++)
    if (!(fabs(out[i] - ref[i]) <= 1e-6 + 2e-6 * fabs(ref[i])) && bad++ < 3)
      fprintf(stderr, "attention_ex B=%lld H=%lld SQ=%lld SKV=%lld causal=%d br=%d mask=%d lengths=%d [%lld]: %.9g vs %.9g\n",
              (long long)c->B, (long long)c->H, (long long)c->SQ, (long long)c->SKV, c->causal, c->bottom_right,
              c->mask != NULL, c->lengths != NULL, (long long)i, out[i], ref[i]);
  CHECK(bad == 0);
  /* seq_major: the same bits, transposed. */
  float *qs = to_seq_major(q, c->B, c->H, c->SQ, c->D), *ks = to_seq_major(k, c->B, c->KVH, c->SKV, c->D);
  float *vs = to_seq_major(v, c->B, c->KVH, c->SKV, c->D), *os = alloc_f(nq);
  CHECK_OK(call_ex(ctx, c, true, qs, ks, vs, os));
  float *want = to_seq_major(out, c->B, c->H, c->SQ, c->D);
  CHECK(same_bits_f(os, want, nq));
  free(qs);
  free(ks);
  free(vs);
  free(os);
  free(want);
  free(q);
  free(k);
  free(v);
  free(out);
  free(ref);
}

/* Without lengths, mask or bottom-right, _ex is kb_attention bit for bit. */
static void test_plain_is_kb_attention(void) {
  kb_context *ctx = make_ctx(2);
  enum { B = 2, H = 4, KVH = 2, SQ = 37, SKV = 300, D = 24 };
  float *q = alloc_f(B * H * SQ * D), *k = alloc_f(B * KVH * SKV * D), *v = alloc_f(B * KVH * SKV * D);
  float *o1 = alloc_f(B * H * SQ * D), *o2 = alloc_f(B * H * SQ * D);
  rand_fill(q, B * H * SQ * D, 5, -1, 1);
  rand_fill(k, B * KVH * SKV * D, 6, -1, 1);
  rand_fill(v, B * KVH * SKV * D, 7, -1, 1);
  for (int causal = 0; causal < 2; causal++) {
    CHECK_OK(kb_attention(ctx, B, H, KVH, SQ, SKV, D, q, k, v, causal, 0.0f, o1));
    CHECK_OK(kb_attention_ex(ctx, B, H, KVH, SQ, SKV, D, false, q, k, v, NULL, 0, 0, 0, NULL, causal, false, 0.0f, o2));
    CHECK(same_bits_f(o1, o2, B * H * SQ * D));
  }
  free(q);
  free(k);
  free(v);
  free(o1);
  free(o2);
  kb_context_destroy(ctx);
}

static void test_lengths_masks_alignment(void) {
  kb_context *ctx = make_ctx(2);
  int32_t lengths[3] = {5, 0, 9};
  struct ex_case c = {3, 4, 2, 6, 9, 8, lengths, NULL, 1, 1, 1, false, false, 0.0f};
  run_ex(ctx, &c, 10); /* padded keys; batch 1 has none: zeros */
  c.causal = true;
  run_ex(ctx, &c, 11); /* top-left within each row's keys */
  c.bottom_right = true;
  run_ex(ctx, &c, 12); /* bottom-right to each row's length: early queries of short rows see nothing */
  c.lengths = NULL;
  c.SQ = 3;
  run_ex(ctx, &c, 13); /* KV cache: 3 new queries after 6 cached keys */
  /* Additive masks of every broadcast shape, with -inf entries and whole
   * rows removed. */
  static const int64_t shapes[4][3] = {{1, 1, 1}, {2, 1, 1}, {2, 3, 5}, {1, 3, 5}};
  for (int s = 0; s < 4; s++) {
    struct ex_case m = {2, 3, 3, 5, 70, 16, NULL, NULL, shapes[s][0], shapes[s][1], shapes[s][2], s == 2, false, 0.5f};
    int64_t n = m.MB * m.MH * m.MQ * m.SKV;
    float *mask = alloc_f(n);
    rand_fill(mask, n, 20 + (uint64_t)s, -3.0f, 1.0f);
    for (int64_t i = 0; i < n; i += 7) mask[i] = -INFINITY;
    if (s == 2)
      for (int64_t j = 0; j < m.SKV; j++) mask[(1 * m.MQ + 2) * m.SKV + j] = -INFINITY; /* (b0, h1, q2): no key */
    m.mask = mask;
    run_ex(ctx, &m, 30 + (uint64_t)s);
    free(mask);
  }
  /* Long keys (several blocks, and the decode path's chunks) with lengths. */
  int32_t long_len[2] = {1300, 700};
  struct ex_case d = {2, 4, 4, 1, 1400, 32, long_len, NULL, 1, 1, 1, false, false, 0.0f};
  run_ex(ctx, &d, 40);
  d.SQ = 20;
  d.causal = d.bottom_right = true;
  run_ex(ctx, &d, 41);
  kb_context_destroy(ctx);
}

/* The 16-bit variants are the float32 call on the widened inputs, rounded. */
static void test_half_variants(void) {
  kb_context *ctx = make_ctx(2);
  enum { B = 2, H = 2, SQ = 5, SKV = 40, D = 8 };
  int64_t nq = B * H * SQ * D, nk = B * H * SKV * D, nm = B * SKV;
  uint16_t q16[B * H * SQ * D], k16[B * H * SKV * D], v16[B * H * SKV * D], m16[B * SKV], o16[B * H * SQ * D];
  float q[B * H * SQ * D], k[B * H * SKV * D], v[B * H * SKV * D], mk[B * SKV], o[B * H * SQ * D];
  int32_t lengths[B] = {33, 40};
  for (int f16 = 0; f16 < 2; f16++) {
    rand_fill(q, nq, 50, -2, 2);
    rand_fill(k, nk, 51, -2, 2);
    rand_fill(v, nk, 52, -1, 1);
    rand_fill(mk, nm, 53, -1, 0);
    mk[3] = -INFINITY;
    for (int64_t i = 0; i < nq; i++) q[i] = round16(f16, q[i], q16 + i);
    for (int64_t i = 0; i < nk; i++) k[i] = round16(f16, k[i], k16 + i);
    for (int64_t i = 0; i < nk; i++) v[i] = round16(f16, v[i], v16 + i);
    for (int64_t i = 0; i < nm; i++) mk[i] = round16(f16, mk[i], m16 + i);
    CHECK_OK(kb_attention_ex(ctx, B, H, H, SQ, SKV, D, true, q, k, v, lengths, B, 1, 1, mk, true, true, 0.0f, o));
    if (f16)
      CHECK_OK(kb_attention_ex_f16(ctx, B, H, H, SQ, SKV, D, true, q16, k16, v16, lengths, B, 1, 1, m16, true, true,
                                   0.0f, o16));
    else
      CHECK_OK(kb_attention_ex_bf16(ctx, B, H, H, SQ, SKV, D, true, q16, k16, v16, lengths, B, 1, 1, m16, true, true,
                                    0.0f, o16));
    int bad = 0;
    for (int64_t i = 0; i < nq; i++) {
      uint16_t want;
      round16(f16, o[i], &want);
      bad += want != o16[i];
    }
    CHECK(bad == 0);
  }
  kb_context_destroy(ctx);
}

/* Decode (at most 16 query rows per key/value head): the 16-bit variants
 * read K and V as stored instead of widening them first, and must still be
 * the float32 call on the widened inputs, rounded; both layouts, lengths
 * that end inside a chunk, head dimensions with and without partial
 * vectors and panels. */
static void test_half_decode(void) {
  kb_context *ctx = make_ctx(2);
  enum { B = 2, KVH = 2, SKV = 700, DMAX = 32, HMAX = 20, SQMAX = 3 };
  int32_t lengths[B] = {650, 300};
  const size_t kmax = B * KVH * SKV * DMAX;
  float *k = (float *)malloc(kmax * sizeof(float)), *v = (float *)malloc(kmax * sizeof(float));
  uint16_t *k16 = (uint16_t *)malloc(kmax * sizeof(uint16_t)), *v16 = (uint16_t *)malloc(kmax * sizeof(uint16_t));
  CHECK(k != NULL && v != NULL && k16 != NULL && v16 != NULL);
  /* heads, seq_q: rows per key/value head 1, 2 (grouped), 2 (two queries),
   * 4, 8, 10 (computed as 16 by the small-m product) and 9. */
  const int64_t shapes[7][2] = {{2, 1}, {4, 1}, {2, 2}, {8, 1}, {16, 1}, {20, 1}, {6, 3}};
  static float q[B * HMAX * SQMAX * DMAX], o[B * HMAX * SQMAX * DMAX];
  static uint16_t q16[B * HMAX * SQMAX * DMAX], o16[B * HMAX * SQMAX * DMAX];
  for (int f16 = 0; f16 < 2; f16++)
    for (int sh = 0; sh < 7; sh++)
      for (int64_t D = 24; D <= DMAX; D += 8)
        for (int seq_major = 0; seq_major < 2; seq_major++) {
          int64_t H = shapes[sh][0], SQ = shapes[sh][1], nq = B * H * SQ * D, nk = B * KVH * SKV * D;
          rand_fill(q, nq, 60 + (uint64_t)sh, -2, 2);
          rand_fill(k, nk, 61, -2, 2);
          rand_fill(v, nk, 62, -1, 1);
          for (int64_t i = 0; i < nq; i++) q[i] = round16(f16, q[i], q16 + i);
          for (int64_t i = 0; i < nk; i++) k[i] = round16(f16, k[i], k16 + i);
          for (int64_t i = 0; i < nk; i++) v[i] = round16(f16, v[i], v16 + i);
          CHECK_OK(kb_attention_ex(ctx, B, H, KVH, SQ, SKV, D, seq_major, q, k, v, lengths, 0, 0, 0, NULL, true, true,
                                   0.0f, o));
          if (f16)
            CHECK_OK(kb_attention_ex_f16(ctx, B, H, KVH, SQ, SKV, D, seq_major, q16, k16, v16, lengths, 0, 0, 0, NULL,
                                         true, true, 0.0f, o16));
          else
            CHECK_OK(kb_attention_ex_bf16(ctx, B, H, KVH, SQ, SKV, D, seq_major, q16, k16, v16, lengths, 0, 0, 0, NULL,
                                          true, true, 0.0f, o16));
          int bad = 0;
          for (int64_t i = 0; i < nq; i++) {
            uint16_t want;
            round16(f16, o[i], &want);
            bad += want != o16[i];
          }
          CHECK(bad == 0);
          /* The plain 16-bit entry point (no lengths, head-major). */
          CHECK_OK(kb_attention(ctx, B, H, KVH, SQ, SKV, D, q, k, v, false, 0.0f, o));
          CHECK_OK((f16 ? kb_attention_f16 : kb_attention_bf16)(ctx, B, H, KVH, SQ, SKV, D, q16, k16, v16, false, 0.0f,
                                                                o16));
          bad = 0;
          for (int64_t i = 0; i < nq; i++) {
            uint16_t want;
            round16(f16, o[i], &want);
            bad += want != o16[i];
          }
          CHECK(bad == 0);
        }
  free(k);
  free(v);
  free(k16);
  free(v16);
  kb_context_destroy(ctx);
}

/* Decode with up to the level's dot_rows (4 or 8) query rows per key/value
 * head takes its scores from the small-m product on K in place, with more
 * rows from the microkernel on K packed block by block (16-bit K widened as
 * packed); O += P V comes from the attention pv kernel, four rows per
 * pass, up to the level's pv_rows (8 or 4) of a float32 V and for every
 * 16-bit V, else from the microkernel.  The contract is the same fma chain
 * per element on every path: the same query repeated over 1, 5-8 and 16
 * rows must give the bits of the float32 call with 9-16 rows (the
 * microkernel for both products; at most 16 rows, so the key chunks stay
 * the same), for float32 K/V and K/V stored as bf16 and f16 (read in
 * place), at head dims that leave partial vectors and partial column
 * strips on every level. */
static void test_decode_rows_same_bits(void) {
  kb_context *ctx = make_ctx(2);
  enum { SKV = 700, DMAX = 136, RMAX = 4, SQMAX = 16 };
  static float q1[RMAX * DMAX], qn[RMAX * SQMAX * DMAX], want[RMAX * SQMAX * DMAX], o[RMAX * SQMAX * DMAX];
  static float k[SKV * DMAX], v[SKV * DMAX];
  static uint16_t k16[SKV * DMAX], v16[SKV * DMAX];
  static const int64_t dims[] = {40, 80, 136};
  for (int dt = 0; dt < 3; dt++) /* float32, bf16, f16 K/V */
    for (int di = 0; di < 3; di++)
      for (int64_t R = 1; R <= RMAX; R++) {
        /* R * mid in 5..8 rows, R * ref in 9..16 */
        int64_t D = dims[di], mid = (5 + R - 1) / R, ref = (9 + R - 1) / R;
        const int64_t sqs[3] = {1, mid, 16 / R};
        rand_fill(q1, R * D, 70 + (uint64_t)R, -2, 2);
        rand_fill(k, SKV * D, 71, -2, 2);
        rand_fill(v, SKV * D, 72, -1, 1);
        for (int64_t i = 0; dt > 0 && i < SKV * D; i++) {
          k[i] = round16(dt == 2, k[i], k16 + i);
          v[i] = round16(dt == 2, v[i], v16 + i);
        }
        for (int64_t h = 0; h < R; h++)
          for (int64_t t = 0; t < SQMAX; t++) memcpy(qn + (h * SQMAX + t) * D, q1 + h * D, (size_t)D * sizeof(float));
        /* The reference bits: the float32 call with R * ref rows (more than
         * 8: the microkernel for both products), on K and V as the 16-bit
         * ones widen. */
        static float qs[RMAX * SQMAX * DMAX];
        for (int64_t h = 0; h < R; h++) memcpy(qs + h * ref * D, qn + h * SQMAX * D, (size_t)(ref * D) * sizeof(float));
        CHECK_OK(kb_attention(ctx, 1, R, 1, ref, SKV, D, qs, k, v, false, 0.0f, want));
        for (int c = 0; c < 3; c++) {
          int64_t SQ = sqs[c];
          for (int64_t h = 0; h < R; h++) memcpy(qs + h * SQ * D, qn + h * SQMAX * D, (size_t)(SQ * D) * sizeof(float));
          if (dt == 0)
            CHECK_OK(kb_attention(ctx, 1, R, 1, SQ, SKV, D, qs, k, v, false, 0.0f, o));
          else if (dt == 1)
            CHECK_OK(kb_attention_ex_kv_bf16(ctx, 1, R, 1, SQ, SKV, D, false, qs, k16, v16, NULL, 0, 0, 0, NULL, false,
                                             false, 0.0f, o));
          else
            CHECK_OK(kb_attention_ex_kv_f16(ctx, 1, R, 1, SQ, SKV, D, false, qs, k16, v16, NULL, 0, 0, 0, NULL, false,
                                            false, 0.0f, o));
          int bad = 0;
          for (int64_t h = 0; h < R; h++)
            for (int64_t t = 0; t < SQ; t++) bad += !same_bits_f(want + h * ref * D, o + (h * SQ + t) * D, D);
          if (bad)
            fprintf(stderr, "decode rows: dtype %d D=%lld heads %lld seq_q %lld: %d rows differ\n", dt, (long long)D,
                    (long long)R, (long long)SQ, bad);
          CHECK(bad == 0);
        }
      }
  kb_context_destroy(ctx);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  /* batch 2, heads 2, kv_heads 1, seq_q 2, seq_kv 3, head_dim 2 */
  float q[16], k[12], v[12], mask[12], out[16], buf[64];
  int32_t lengths[2] = {3, 1};
  fill_f(q, 16, 1.0f);
  fill_f(k, 12, 1.0f);
  fill_f(v, 12, 1.0f);
  fill_f(mask, 12, 0.0f);
  fill_f(out, 16, SENTINEL_F);
#define EX(mb, mh, mq, M, L, causal, br, sc, O) \
  kb_attention_ex(ctx, 2, 2, 1, 2, 3, 2, false, q, k, v, L, mb, mh, mq, M, causal, br, sc, O)
  CHECK_OK(EX(2, 1, 1, mask, lengths, true, true, 0.0f, out));
  fill_f(out, 16, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kb_attention_ex: mask_batch must be 1 or batch (2), got 3",
              EX(3, 1, 1, mask, NULL, false, false, 0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "mask_heads must be 1 or heads (2), got 0",
              EX(1, 0, 1, mask, NULL, false, false, 0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "mask_q must be 1 or seq_q (2), got 3",
              EX(1, 1, 3, mask, NULL, false, false, 0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "mask_q must be >= 0", EX(1, 1, -1, NULL, NULL, false, false, 0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "causal_bottom_right needs causal",
              EX(1, 1, 1, NULL, NULL, false, true, 0.0f, out));
  lengths[1] = 4;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kv_lengths[1] = 4 is out of range [0, 3]",
              EX(1, 1, 1, NULL, lengths, false, false, 0.0f, out));
  lengths[1] = -1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kv_lengths[1] = -1 is out of range [0, 3]",
              EX(1, 1, 1, NULL, lengths, false, false, 0.0f, out));
  lengths[1] = 1;
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "scale must be finite", EX(1, 1, 1, NULL, NULL, false, false, NAN, out));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not be NULL", EX(1, 1, 1, NULL, NULL, false, false, 0, NULL));
  CHECK(all_f(out, 16, SENTINEL_F));
  /* The output must not overlap any input, the mask and lengths included. */
  fill_f(buf, 64, 0.25f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap mask",
              EX(2, 1, 1, buf, NULL, false, false, 0.0f, buf + 4));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out must not overlap kv_lengths",
              EX(1, 1, 1, NULL, (int32_t *)(void *)(buf + 40), false, false, 0.0f, buf + 30));
  CHECK(all_f(buf, 64, 0.25f));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kv_heads (3) must divide heads (2)",
              kb_attention_ex(ctx, 2, 2, 3, 2, 3, 2, false, q, k, v, NULL, 1, 1, 1, NULL, false, false, 0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of k overflows",
              kb_attention_ex(ctx, 2, 2, 1, 2, HUGE_DIM, 2, false, q, k, v, NULL, 1, 1, 1, mask, false, false, 0.0f, out));
#undef EX
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_plain_is_kb_attention);
  KB_RUN(test_lengths_masks_alignment);
  KB_RUN(test_half_variants);
  KB_RUN(test_half_decode);
  KB_RUN(test_decode_rows_same_bits);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
