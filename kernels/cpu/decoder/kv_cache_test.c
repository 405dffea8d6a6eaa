/* Tests of kb_kv_cache_append (+ _bf16, _f16, _to_bf16, _to_f16): placement
 * in both layouts against the index formula of the header, attention over
 * the cache against attention over the same keys stored contiguously, a
 * float32 model over a 16-bit cache (kb_attention_ex_kv_*) against
 * kb_attention_ex on the widened cache, bad inputs, threads. */
#include "../half.h"
#include "kernels/cpu/testutil/cpu_test.h"

/* Element offset of (b, h, p, x) in a cache of the given layout: the header's
 * formula, written out here independently of kv_cache.c. */
static int64_t cache_at(bool seq_major, int64_t kvh, int64_t cap, int64_t d, int64_t b, int64_t h, int64_t p,
                        int64_t x) {
  return seq_major ? ((b * cap + p) * kvh + h) * d + x : ((b * kvh + h) * cap + p) * d + x;
}

static void test_placement(void) {
  enum { B = 3, KVH = 2, T = 4, CAP = 9, D = 5 };
  for (int sm = 0; sm < 2; sm++) {
    float kn[B * T * KVH * D], vn[B * T * KVH * D], kc[B * KVH * CAP * D], vc[B * KVH * CAP * D];
    rand_fill(kn, B * T * KVH * D, 11, -1.0f, 1.0f);
    rand_fill(vn, B * T * KVH * D, 12, -1.0f, 1.0f);
    fill_f(kc, B * KVH * CAP * D, SENTINEL_F);
    fill_f(vc, B * KVH * CAP * D, SENTINEL_F);
    int32_t pos[B] = {0, 5, 2}; /* 5 + 4 == CAP: the last slot */
    CHECK_OK(kb_kv_cache_append(NULL, B, KVH, T, CAP, D, sm, kn, vn, pos, kc, vc));
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < KVH; h++)
        for (int64_t p = 0; p < CAP; p++)
          for (int64_t x = 0; x < D; x++) {
            int64_t at = cache_at(sm, KVH, CAP, D, b, h, p, x), t = p - pos[b];
            bool written = t >= 0 && t < T;
            float wk = written ? kn[((b * T + t) * KVH + h) * D + x] : SENTINEL_F;
            float wv = written ? vn[((b * T + t) * KVH + h) * D + x] : SENTINEL_F;
            CHECK(same_bits_f(&kc[at], &wk, 1));
            CHECK(same_bits_f(&vc[at], &wv, 1));
          }
  }
}

/* Decoding with the cache: attention of one new query over the cache (in
 * place, kv_lengths) gives the bits of attention over the same keys held in
 * a tensor of exactly that length. */
static void test_attention_reads_the_cache(void) {
  enum { B = 2, H = 4, KVH = 2, CAP = 40, D = 16, PRE = 13 };
  for (int sm = 0; sm < 2; sm++) {
    float *kc = alloc_f(B * KVH * CAP * D), *vc = alloc_f(B * KVH * CAP * D);
    float *kall = alloc_f(B * PRE * KVH * D), *vall = alloc_f(B * PRE * KVH * D);
    rand_fill(kall, B * PRE * KVH * D, 21, -1.0f, 1.0f);
    rand_fill(vall, B * PRE * KVH * D, 22, -1.0f, 1.0f);
    /* Prefill 7 tokens of both sequences in one call, then 2 more of
     * sequence 0 alone, then single-token steps of both at different
     * positions until each holds PRE. */
    float kt[B * 7 * KVH * D], vt[B * 7 * KVH * D];
    int64_t have[B] = {0, 0};
    static const int steps[][B] = {{7, 7}, {2, 0}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 1}, {0, 1}};
    for (int s = 0; s < (int)(sizeof steps / sizeof steps[0]); s++) {
      for (int64_t b = 0; b < B; b++) {
        if (steps[s][b] == 0) continue;
        int64_t n = steps[s][b];
        memcpy(kt, kall + (b * PRE + have[b]) * KVH * D, sizeof(float) * (size_t)(n * KVH * D));
        memcpy(vt, vall + (b * PRE + have[b]) * KVH * D, sizeof(float) * (size_t)(n * KVH * D));
        int32_t p1 = (int32_t)have[b];
        /* batch row b alone: a cache of one sequence starts at b's slice */
        int64_t off = b * KVH * CAP * D;
        CHECK_OK(kb_kv_cache_append(NULL, 1, KVH, n, CAP, D, sm, kt, vt, &p1, kc + off, vc + off));
        have[b] += n;
      }
    }
    CHECK(have[0] == PRE && have[1] == PRE);
    /* Both sequences now hold PRE tokens. */
    float q[B * H * D], o_cache[B * H * D], o_dense[B * H * D];
    rand_fill(q, B * H * D, 23, -1.0f, 1.0f);
    int32_t lens[B] = {PRE, PRE};
    /* seq_major q/out of one token are [b, 1, h, d] == [b, h, 1, d]. */
    CHECK_OK(kb_attention_ex(NULL, B, H, KVH, 1, CAP, D, sm, q, kc, vc, lens, 0, 0, 0, NULL, true, true, 0.0f,
                             o_cache));
    float *kd = alloc_f(B * PRE * KVH * D), *vd = alloc_f(B * PRE * KVH * D);
    for (int64_t b = 0; b < B; b++)
      for (int64_t t = 0; t < PRE; t++)
        for (int64_t h = 0; h < KVH; h++) {
          int64_t src = ((b * PRE + t) * KVH + h) * D;
          int64_t dst = sm ? src : ((b * KVH + h) * PRE + t) * D;
          memcpy(kd + dst, kall + src, sizeof(float) * D);
          memcpy(vd + dst, vall + src, sizeof(float) * D);
        }
    CHECK_OK(kb_attention_ex(NULL, B, H, KVH, 1, PRE, D, sm, q, kd, vd, NULL, 0, 0, 0, NULL, true, true, 0.0f,
                             o_dense));
    CHECK(same_bits_f(o_cache, o_dense, B * H * D));
    free(kc);
    free(vc);
    free(kall);
    free(vall);
    free(kd);
    free(vd);
  }
}

static void test_half_variants_copy_bits(void) {
  enum { N = 2 * 3 * 4 };
  uint16_t kn[N], vn[N], kc[2 * 3 * 6 * 4], vc[2 * 3 * 6 * 4];
  for (int i = 0; i < N; i++) {
    kn[i] = (uint16_t)(0x7fc1 + i * 977); /* NaN payloads and everything else pass through */
    vn[i] = (uint16_t)(0xfc00 ^ (i * 31));
  }
  int32_t pos[2] = {2, 5};
  for (int f = 0; f < 2; f++) {
    memset(kc, 0xab, sizeof kc);
    memset(vc, 0xab, sizeof vc);
    if (f == 0)
      CHECK_OK(kb_kv_cache_append_bf16(NULL, 2, 3, 1, 6, 4, false, kn, vn, pos, kc, vc));
    else
      CHECK_OK(kb_kv_cache_append_f16(NULL, 2, 3, 1, 6, 4, false, kn, vn, pos, kc, vc));
    for (int64_t b = 0; b < 2; b++)
      for (int64_t h = 0; h < 3; h++)
        for (int64_t x = 0; x < 4; x++) {
          CHECK(kc[cache_at(false, 3, 6, 4, b, h, pos[b], x)] == kn[(b * 3 + h) * 4 + x]);
          CHECK(vc[cache_at(false, 3, 6, 4, b, h, pos[b], x)] == vn[(b * 3 + h) * 4 + x]);
        }
    CHECK(kc[cache_at(false, 3, 6, 4, 0, 0, 1, 0)] == 0xabab);
  }
}

/* Values worth narrowing: ordinary, ties, subnormal in either format,
 * beyond either format's range, signed zeros, infinities, NaNs. */
static void fill_special(float *p, int64_t n, uint64_t seed) {
  static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                                     0xffa00000u, 0x3f808000u, 0x3f818000u, 0x33800000u, 0x00000001u,
                                     0x477ff000u, 0x7f7fffffu, 0x387fc000u, 0xc7800000u};
  rand_fill(p, n, seed, -3.0f, 3.0f);
  for (int64_t i = 0; i < n; i += 3) {
    uint32_t bits = special[(i / 3) % (int64_t)(sizeof special / sizeof special[0])];
    memcpy(&p[i], &bits, sizeof bits);
  }
}

/* _to_bf16 / _to_f16: each cache element is the reference narrowing
 * (half.c, checked over all 2^32 inputs by bf16_convert_test) of the float32
 * value placed there; untouched slots keep their bits. */
static void test_narrowing_variants(void) {
  enum { B = 2, KVH = 3, T = 4, CAP = 7, D = 20, NEW = B * T * KVH * D, CACHE = B * KVH * CAP * D };
  kb_context *c1 = make_ctx(1), *c2 = make_ctx(2);
  float kn[NEW], vn[NEW];
  uint16_t want_k[NEW], want_v[NEW], kc[CACHE], vc[CACHE], kc2[CACHE], vc2[CACHE];
  fill_special(kn, NEW, 51);
  fill_special(vn, NEW, 52);
  int32_t pos[B] = {3, 0};
  for (int f16 = 0; f16 < 2; f16++)
    for (int sm = 0; sm < 2; sm++) {
      kb_half_narrow(f16, kn, want_k, NEW);
      kb_half_narrow(f16, vn, want_v, NEW);
      memset(kc, 0xab, sizeof kc);
      memset(vc, 0xab, sizeof vc);
      memset(kc2, 0xab, sizeof kc2);
      memset(vc2, 0xab, sizeof vc2);
      if (f16) {
        CHECK_OK(kb_kv_cache_append_to_f16(c1, B, KVH, T, CAP, D, sm, kn, vn, pos, kc, vc));
        CHECK_OK(kb_kv_cache_append_to_f16(c2, B, KVH, T, CAP, D, sm, kn, vn, pos, kc2, vc2));
      } else {
        CHECK_OK(kb_kv_cache_append_to_bf16(c1, B, KVH, T, CAP, D, sm, kn, vn, pos, kc, vc));
        CHECK_OK(kb_kv_cache_append_to_bf16(c2, B, KVH, T, CAP, D, sm, kn, vn, pos, kc2, vc2));
      }
      CHECK(memcmp(kc, kc2, sizeof kc) == 0 && memcmp(vc, vc2, sizeof vc) == 0);
      for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < KVH; h++)
          for (int64_t p = 0; p < CAP; p++)
            for (int64_t x = 0; x < D; x++) {
              int64_t at = cache_at(sm, KVH, CAP, D, b, h, p, x), t = p - pos[b];
              bool written = t >= 0 && t < T;
              int64_t src = ((b * T + t) * KVH + h) * D + x;
              CHECK(kc[at] == (written ? want_k[src] : 0xabab));
              CHECK(vc[at] == (written ? want_v[src] : 0xabab));
            }
    }
  kb_context_destroy(c1);
  kb_context_destroy(c2);
}

/* kb_attention_ex_kv_*: exactly kb_attention_ex on the cache widened to
 * float32, in decode (K and V read as stored) and in prefill (widened into
 * scratch), both layouts, with key lengths, a mask, grouped heads and
 * bottom-right causal alignment; 1 and 3 threads give the same bits. */
static void test_attention_over_half_cache(void) {
  enum { B = 2, H = 4, KVH = 2, CAP = 600, D = 32, SQMAX = 12 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  int64_t kvn = B * CAP * KVH * D, qn = B * SQMAX * H * D, mn = B * SQMAX * CAP;
  float *kf = alloc_f(kvn), *vf = alloc_f(kvn), *kw = alloc_f(kvn), *vw = alloc_f(kvn);
  float *q = alloc_f(qn), *mask = alloc_f(mn), *o_ref = alloc_f(qn), *o1 = alloc_f(qn), *o3 = alloc_f(qn);
  uint16_t *kh = (uint16_t *)calloc((size_t)kvn, 2), *vh = (uint16_t *)calloc((size_t)kvn, 2);
  rand_fill(kf, kvn, 61, -2.0f, 2.0f);
  rand_fill(vf, kvn, 62, -2.0f, 2.0f);
  rand_fill(q, qn, 63, -1.0f, 1.0f);
  rand_fill(mask, mn, 64, -1.0f, 0.0f);
  int32_t lens[B] = {CAP, 201}; /* 600 keys: two chunks of the decode split */
  static const int64_t seq_qs[] = {1, 3, SQMAX}; /* 2, 6 rows per kv head: in place; 24: widened */
  for (int f16 = 0; f16 < 2; f16++) {
    kb_half_narrow(f16, kf, kh, kvn);
    kb_half_narrow(f16, vf, vh, kvn);
    kb_half_widen(f16, kh, kw, kvn);
    kb_half_widen(f16, vh, vw, kvn);
    for (int sm = 0; sm < 2; sm++)
      for (int si = 0; si < 3; si++) {
        int64_t sq = seq_qs[si];
        const float *m = si == 1 ? mask : NULL;
        CHECK_OK(kb_attention_ex(c1, B, H, KVH, sq, CAP, D, sm, q, kw, vw, lens, B, 1, sq, m, true, true, 0.0f,
                                 o_ref));
        fill_f(o1, qn, SENTINEL_F);
        fill_f(o3, qn, SENTINEL_F);
        if (f16) {
          CHECK_OK(kb_attention_ex_kv_f16(c1, B, H, KVH, sq, CAP, D, sm, q, kh, vh, lens, B, 1, sq, m, true, true,
                                          0.0f, o1));
          CHECK_OK(kb_attention_ex_kv_f16(c3, B, H, KVH, sq, CAP, D, sm, q, kh, vh, lens, B, 1, sq, m, true, true,
                                          0.0f, o3));
        } else {
          CHECK_OK(kb_attention_ex_kv_bf16(c1, B, H, KVH, sq, CAP, D, sm, q, kh, vh, lens, B, 1, sq, m, true, true,
                                           0.0f, o1));
          CHECK_OK(kb_attention_ex_kv_bf16(c3, B, H, KVH, sq, CAP, D, sm, q, kh, vh, lens, B, 1, sq, m, true, true,
                                           0.0f, o3));
        }
        CHECK(same_bits_f(o1, o_ref, B * sq * H * D));
        CHECK(same_bits_f(o3, o_ref, B * sq * H * D));
      }
  }
  free(kf);
  free(vf);
  free(kw);
  free(vw);
  free(q);
  free(mask);
  free(o_ref);
  free(o1);
  free(o3);
  free(kh);
  free(vh);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_threads_bitwise_identical(void) {
  enum { B = 3, KVH = 8, T = 300, CAP = 400, D = 64 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *kn = alloc_f(B * T * KVH * D), *vn = alloc_f(B * T * KVH * D);
  float *k1 = alloc_f(B * KVH * CAP * D), *v1 = alloc_f(B * KVH * CAP * D);
  float *k3 = alloc_f(B * KVH * CAP * D), *v3 = alloc_f(B * KVH * CAP * D);
  rand_fill(kn, B * T * KVH * D, 31, -1.0f, 1.0f);
  rand_fill(vn, B * T * KVH * D, 32, -1.0f, 1.0f);
  int32_t pos[B] = {0, 100, 17};
  CHECK_OK(kb_kv_cache_append(c1, B, KVH, T, CAP, D, false, kn, vn, pos, k1, v1));
  CHECK_OK(kb_kv_cache_append(c3, B, KVH, T, CAP, D, false, kn, vn, pos, k3, v3));
  CHECK(same_bits_f(k1, k3, B * KVH * CAP * D));
  CHECK(same_bits_f(v1, v3, B * KVH * CAP * D));
  free(kn);
  free(vn);
  free(k1);
  free(v1);
  free(k3);
  free(v3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(2);
  float kn[2 * 2 * 2 * 4], vn[2 * 2 * 2 * 4], kc[2 * 2 * 5 * 4], vc[2 * 2 * 5 * 4];
  rand_fill(kn, 32, 41, -1.0f, 1.0f);
  rand_fill(vn, 32, 42, -1.0f, 1.0f);
  fill_f(kc, 40, SENTINEL_F);
  fill_f(vc, 40, SENTINEL_F);
  int32_t pos[2] = {0, 4};
  /* batch 2, kv_heads 2, seq_new 1, capacity 5, head_dim 4 */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_kv_cache_append: batch must be >= 0, got -1",
              kb_kv_cache_append(ctx, -1, 2, 1, 5, 4, false, kn, vn, pos, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "capacity must be >= 0",
              kb_kv_cache_append(ctx, 2, 2, 1, -5, 4, false, kn, vn, pos, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of k_new overflows",
              kb_kv_cache_append(ctx, 2, HUGE_DIM, 1, 5, 4, false, kn, vn, pos, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of k_cache overflows",
              kb_kv_cache_append(ctx, 2, 2, 1, HUGE_DIM, 4, false, kn, vn, pos, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v_new must not be NULL",
              kb_kv_cache_append(ctx, 2, 2, 1, 5, 4, false, kn, NULL, pos, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions must not be NULL",
              kb_kv_cache_append(ctx, 2, 2, 1, 5, 4, false, kn, vn, NULL, kc, vc));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "k_cache",
              kb_kv_cache_append(ctx, 1, 2, 1, 2, 4, false, kn, vn, pos, kn, vc));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v_cache",
              kb_kv_cache_append(ctx, 1, 2, 1, 2, 4, false, kn, vn, pos, kc, kc + 4));
  /* Position checks: sequence 1 is full (4 + 2 > 5); nothing written. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions[1] = 4: 2 new tokens from there do not fit in capacity 5",
              kb_kv_cache_append(ctx, 2, 2, 2, 5, 4, false, kn, vn, pos, kc, vc));
  int32_t neg[2] = {1, -1};
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions[1] = -1",
              kb_kv_cache_append(ctx, 2, 2, 1, 5, 4, false, kn, vn, neg, kc, vc));
  /* ... even when there is nothing to copy. */
  int32_t far[2] = {0, 6};
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "positions[1] = 6",
              kb_kv_cache_append(ctx, 2, 2, 0, 5, 4, false, kn, vn, far, kc, vc));
  CHECK(all_f(kc, 40, SENTINEL_F));
  CHECK(all_f(vc, 40, SENTINEL_F));
  /* Empty calls. */
  CHECK_OK(kb_kv_cache_append(ctx, 0, 2, 1, 5, 4, false, NULL, NULL, NULL, NULL, NULL));
  int32_t end[2] = {5, 5};
  CHECK_OK(kb_kv_cache_append(ctx, 2, 2, 0, 5, 4, true, NULL, NULL, end, kc, vc));
  CHECK(all_f(kc, 40, SENTINEL_F));
  /* The 16-bit cache of the _to_ variants: 2-byte elements in its checks. */
  uint16_t hk[2 * 2 * 5 * 4], hv[2 * 2 * 5 * 4];
  memset(hk, 0x5a, sizeof hk);
  memset(hv, 0x5a, sizeof hv);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_kv_cache_append_to_bf16: k_cache must not be NULL",
              kb_kv_cache_append_to_bf16(ctx, 2, 2, 1, 5, 4, false, kn, vn, pos, NULL, hv));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_kv_cache_append_to_f16: positions[1] = 4",
              kb_kv_cache_append_to_f16(ctx, 2, 2, 2, 5, 4, false, kn, vn, pos, hk, hv));
  /* k_new's bytes start inside v_cache: an overlap of 16-bit cache bytes. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v_cache",
              kb_kv_cache_append_to_bf16(ctx, 1, 2, 1, 2, 4, false, (const float *)(void *)(hv + 4), vn, pos, hk,
                                         hv));
  for (size_t i = 0; i < sizeof hk / sizeof hk[0]; i++) CHECK(hk[i] == 0x5a5a && hv[i] == 0x5a5a);
  /* kb_attention_ex_kv_*: a 16-bit k / v, float32 q and out. */
  float q[2 * 2 * 4], out[2 * 2 * 4];
  rand_fill(q, 16, 43, -1.0f, 1.0f);
  fill_f(out, 16, SENTINEL_F);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_attention_ex_kv_bf16: v must not be NULL",
              kb_attention_ex_kv_bf16(ctx, 2, 2, 2, 1, 5, 4, false, q, hk, NULL, NULL, 0, 0, 0, NULL, false, false,
                                      0.0f, out));
  int32_t long_len[2] = {5, 6};
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_attention_ex_kv_f16: kv_lengths[1] = 6 is out of range [0, 5]",
              kb_attention_ex_kv_f16(ctx, 2, 2, 1, 1, 5, 4, false, q, hk, hv, long_len, 0, 0, 0, NULL, false, false,
                                     0.0f, out));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kv_heads (3) must divide heads (2)",
              kb_attention_ex_kv_f16(ctx, 2, 2, 3, 1, 5, 4, false, q, hk, hv, NULL, 0, 0, 0, NULL, false, false, 0.0f,
                                     out));
  /* out overlapping the 16-bit k (its 2-byte extent counts). */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "out",
              kb_attention_ex_kv_bf16(ctx, 1, 1, 1, 1, 5, 4, false, q, hk, hv, NULL, 0, 0, 0, NULL, false, false,
                                      0.0f, (float *)(void *)(hk + 8)));
  CHECK(all_f(out, 16, SENTINEL_F));
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_placement);
  KB_RUN(test_attention_reads_the_cache);
  KB_RUN(test_half_variants_copy_bits);
  KB_RUN(test_narrowing_variants);
  KB_RUN(test_attention_over_half_cache);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
