/* qdot_body.h - the vector quantized products (qdot.h), one template for
 * every format and every variant of the 256-bit integer dot product.
 * Included by qdot_avx2.c once per variant, with
 *   QDOT_TARGET  the function attribute of the variant,
 *   QDOT_VNNI    0 (vpmaddubsw + vpmaddwd), 1 (AVX-VNNI vpdpbusd), or 2
 *                (AVX512-VNNI vpdpbusd on 256-bit registers),
 *   QDOT_OPS     the name of the kb_quant_ops table to define.
 * No include guard: it is meant to be expanded several times.  Every name
 * it defines carries the variant's suffix (QDOT_NAME).
 *
 * A format enters only through wq(): its block's 32 weights as bytes for
 * the dot product, and the offset those bytes carry.  Q4_0 gives its
 * nibbles unsigned (0..15 = weight + 8), whose products with the signed
 * activations are then corrected by 8 * s (the activation block's lane
 * sums); Q8_0 gives signed bytes, multiplied by the sign trick (|w| times q
 * with w's sign).  Both give the exact integers of the contract. */

#define QDOT_CAT2(a, b) a##b
#define QDOT_CAT(a, b) QDOT_CAT2(a, b)
#define QDOT_NAME(x) QDOT_CAT(x, QDOT_OPS)

/* Weight rows handled together (independent accumulator chains), and
 * activation rows that share each unpacked weight block: 4 x 2 accumulators
 * and their operands fit 16 registers, 4 x 4 fit the 32 of AVX-512 (VL). */
#define QDOT_R 4
/* Software prefetch of the weights: the rows of a decoder's matrices are
 * short (576 bytes for 1024 Q4_0 inputs), so the rows of a strip are as
 * many streams of a few cache lines, which the hardware prefetchers of AMD
 * EPYCs (Zen 3, Zen 4) did not fetch ahead: a Q4_0 decode ran at 4.5 GB/s
 * of weights on a Zen 3 (plain AVX2) and 6 GB/s on a Zen 4 (AVX512-VNNI,
 * tile2_), waiting on memory.  Each strip fetches the strip QDOT_AHEAD
 * strips ahead, spread over its blocks (a strip's blocks' bytes per block
 * step), when a strip has at most QDOT_PREFETCH_MAX bytes (longer rows
 * are long streams the hardware follows).  The C driver's decode of the
 * bench models: on the Zen 3 Q4_0 on one thread 1.8x, and 1.1 (Q8_0) to
 * 1.5x (Q4_0, experts) on two (docs/performance.md, "Short weight rows on
 * an AVX2 EPYC"); on the Zen 4 Q8_0 2.1-2.3x and Q4_0 2.4-2.9x on one
 * thread ("Prefetching into L2").  The AVX-VNNI variant (QDOT_VNNI 1)
 * fetches the same way; no machine at hand had it to time.  ahead_ and
 * prefetch_step_ below. */
#define QDOT_AHEAD 2
#define QDOT_PREFETCH_MAX 16384
#ifndef QDOT_MI
#define QDOT_MI 2
#endif

QDOT_TARGET static void QDOT_NAME(quantize_act_)(int64_t i0, int64_t i1, const float *x, int64_t ldx,
                                                const struct kb_qact *act) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 fmax = _mm256_set1_ps(FLT_MAX);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t i = i0; i < i1; i++) {
    for (int64_t b = 0; b < act->nb; b++) {
      const float *blk = x + i * ldx + b * KB_QK;
      int64_t at = i * act->nb + b;
      __m256 v[4], amax = _mm256_setzero_ps();
      int finite = 1;
      for (int r = 0; r < 4; r++) {
        v[r] = _mm256_loadu_ps(blk + 8 * r);
        __m256 a = _mm256_and_ps(v[r], abs_mask);
        /* NaN compares false: a lane that is not <= FLT_MAX is NaN or inf. */
        if (_mm256_movemask_ps(_mm256_cmp_ps(a, fmax, _CMP_LE_OQ)) != 0xff) finite = 0;
        amax = _mm256_max_ps(amax, a);
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
      float am = _mm_cvtss_f32(m4);
      float d = finite ? am / 127.0f : NAN;
      float id = finite && d != 0.0f ? 1.0f / d : 0.0f;
      if (finite && d != 0.0f && d < FLT_MIN) { /* 1 / d may overflow: the tiny block's rule (qdot.h) */
        float ds = am * 0x1p64f / 127.0f;
        id = 1.0f / ds;
        d = ds * 0x1p-64f;
        for (int r = 0; r < 4; r++) v[r] = _mm256_mul_ps(v[r], _mm256_set1_ps(0x1p64f));
      }
      __m256 idv = _mm256_set1_ps(id);
      __m256i qi[4];
      for (int r = 0; r < 4; r++)
        qi[r] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[r], idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      /* int32 -> int8 in element order: the packs interleave 128-bit lanes,
       * the permute undoes it. */
      __m256i q16a = _mm256_packs_epi32(qi[0], qi[1]), q16b = _mm256_packs_epi32(qi[2], qi[3]);
      __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b), order);
      if (!finite) q8 = _mm256_setzero_si256(); /* x * 0 is NaN there: the contract says q = 0 */
      _mm256_store_si256((__m256i *)(act->q + at * KB_QK), q8);
      act->d[at] = d;
      /* s[l] = q[4l] + .. + q[4l+3]: bytes to pairs (1 * q), pairs to quads. */
      __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q8), ones16);
      _mm256_storeu_si256((__m256i *)(act->s + at * 8), s);
    }
  }
}

/* The exact int32 lanes p[l] of one block: weight bytes wv (signed, or for
 * Q4_0 unsigned nibbles = weight + 8), activation bytes q; init is where
 * the sums start (Q4_0: -8 * s, the correction of the nibbles' offset). */
QDOT_TARGET __attribute__((always_inline)) static inline __m256i QDOT_NAME(lanes_)(const int TYPE, __m256i wv,
                                                                                 __m256i q, __m256i init) {
  if (TYPE == KB_QTYPE_Q4_0) {
#if QDOT_VNNI == 1
    return _mm256_dpbusd_avx_epi32(init, wv, q);
#elif QDOT_VNNI == 2
    return _mm256_dpbusd_epi32(init, wv, q);
#else
    /* nibble * q <= 15 * 127: the pair sums of vpmaddubsw never saturate. */
    __m256i pairs = _mm256_maddubs_epi16(wv, q);
    return _mm256_add_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), init);
#endif
  }
  /* Q8_0: |w| (unsigned) times q with w's sign; |w| * |q| <= 127 * 127. */
  __m256i aw = _mm256_sign_epi8(wv, wv), sq = _mm256_sign_epi8(q, wv);
  (void)init;
#if QDOT_VNNI == 1
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), aw, sq);
#elif QDOT_VNNI == 2
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, sq);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sq), _mm256_set1_epi16(1));
#endif
}

/* Block b's weights as bytes for lanes_: Q4_0's 16 bytes become 32
 * nibbles (elements 0..15 from the low halves, 16..31 from the high). */
QDOT_TARGET __attribute__((always_inline)) static inline __m256i QDOT_NAME(wq_)(const int TYPE, const unsigned char *blk) {
  if (TYPE == KB_QTYPE_Q4_0) {
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
    v = _mm256_blend_epi32(v, _mm256_srli_epi16(v, 4), 0xf0);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
  }
  return _mm256_loadu_si256((const __m256i *)(blk + 2));
}

/* The contract's horizontal sum of the 8 lanes. */
QDOT_TARGET __attribute__((always_inline)) static inline float QDOT_NAME(hsum_)(__m256 acc) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)); /* l + (l+4) */
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                              /* (0+2), (1+3) */
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/* The scale of the weight block at blk, widened through the table (two
 * loads, no arithmetic) and broadcast. */
QDOT_TARGET __attribute__((always_inline)) static inline __m256 QDOT_NAME(wscale_)(const float *f16,
                                                                                const unsigned char *blk) {
  uint16_t h;
  memcpy(&h, blk, 2); /* the scale, little-endian (x86) */
  return _mm256_broadcast_ss(f16 + h);
}

/* Where the integer sums against activation block `at` start: for Q4_0,
 * whose nibbles are weight + 8, at -8 * s (the block's lane sums). */
QDOT_TARGET __attribute__((always_inline)) static inline __m256i QDOT_NAME(init_)(const int TYPE,
                                                                               const struct kb_qact *act,
                                                                               int64_t at) {
  if (TYPE != KB_QTYPE_Q4_0) return _mm256_setzero_si256();
  return _mm256_sub_epi32(_mm256_setzero_si256(),
                          _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(act->s + at * 8)), 3));
}

/* The strip QDOT_AHEAD strips after the strip at row j (strips of `rows`
 * rows, rows of row_bytes), for the strip at j to prefetch; NULL when a
 * strip has more than QDOT_PREFETCH_MAX bytes, or when that strip would lie
 * past row n (only rows of this call's matrix are addressed). */
static inline const unsigned char *QDOT_NAME(ahead_)(const unsigned char *wb, int64_t j, int64_t rows, int64_t n,
                                                     int64_t row_bytes) {
  if (rows * row_bytes > QDOT_PREFETCH_MAX || j + (QDOT_AHEAD + 1) * rows > n) return NULL;
  return wb + (j + QDOT_AHEAD * rows) * row_bytes;
}

/* Block step b of a strip's prefetch of `ahead` (nothing when NULL): its
 * b-th `bytes` (the strip's blocks' bytes for one block step). */
__attribute__((always_inline)) static inline void QDOT_NAME(prefetch_step_)(const unsigned char *ahead, int64_t b,
                                                                          int64_t bytes) {
  if (ahead == NULL) return;
  const char *at = (const char *)ahead + b * bytes;
  _Pragma("GCC unroll 8") for (int64_t off = 0; off < bytes; off += 64) KB_PREFETCH_STREAM(at + off);
}

/* R weight rows from w0 times MI activation rows from i0 (both constants):
 * per block, each weight block is unpacked once for the MI rows, each
 * activation block loaded once for the R rows; y[i * ldy + r] gets output
 * (i0 + i, r).  The R weight blocks are unpacked first and the
 * activation rows then visited one at a time, so that what stays live is
 * the accumulators, the R unpacked blocks and one activation block: 29
 * registers at R = MI = 4 (the other order, every activation block live
 * across the weight rows, spilled to the stack).  ahead: the bytes to
 * prefetch meanwhile (R blocks' worth per block step), or NULL. */
QDOT_TARGET __attribute__((always_inline)) static inline void QDOT_NAME(tile_)(const int TYPE, const int R, const int MI,
                                                                             const struct kb_qact *act, int64_t i0,
                                                                             const unsigned char *w0,
                                                                             int64_t row_bytes, const float *f16,
                                                                             float *y, int64_t ldy,
                                                                             const unsigned char *ahead) {
  const int64_t block_bytes = TYPE == KB_QTYPE_Q8_0 ? KB_Q8_0_BLOCK_BYTES : KB_Q4_0_BLOCK_BYTES;
  const int64_t nb = act->nb;
  __m256 acc[QDOT_MI][QDOT_R];
  _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++)
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) acc[i][r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    QDOT_NAME(prefetch_step_)(ahead, b, R * block_bytes);
    __m256i wv[QDOT_R];
    __m256 dw[QDOT_R];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {
      const unsigned char *blk = w0 + r * row_bytes + b * block_bytes;
      wv[r] = QDOT_NAME(wq_)(TYPE, blk);
      dw[r] = QDOT_NAME(wscale_)(f16, blk);
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++) {
      int64_t at = (i0 + i) * nb + b;
      __m256i q = _mm256_load_si256((const __m256i *)(act->q + at * KB_QK));
      __m256 dx = _mm256_broadcast_ss(act->d + at);
      __m256i init = QDOT_NAME(init_)(TYPE, act, at);
      _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {
        __m256i p = QDOT_NAME(lanes_)(TYPE, wv[r], q, init);
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(p), dx);
        acc[i][r] = _mm256_fmadd_ps(dw[r], t, acc[i][r]);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++)
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) y[i * ldy + r] = QDOT_NAME(hsum_)(acc[i][r]);
}

#if QDOT_VNNI == 2
/* The AVX-512 tile: two weight rows per 512-bit register, lanes 0-7 the
 * 8 lanes of row r and 8-15 those of row r + 1, each lane the very
 * operations of tile_'s 256-bit lane (the same integers from vpdpbusd, the
 * same product by dx, the same fma into its own accumulator, the same
 * horizontal sum per row), so the bits are tile_'s; half the instructions
 * per output.  RP pairs of weight rows (R = 2 RP) times MI activation rows:
 * 16 accumulators, RP unpacked pairs and their scales, one activation
 * block: 27 registers at RP = MI = 4. */
#define QDOT_RP 4

/* Blocks b of rows r and r + 1 (at blk0, blk1) as tile_'s wq_ bytes, one
 * row per 256-bit half. */
QDOT_TARGET __attribute__((always_inline)) static inline __m512i QDOT_NAME(wq2_)(const int TYPE,
                                                                               const unsigned char *blk0,
                                                                               const unsigned char *blk1) {
  if (TYPE == KB_QTYPE_Q4_0) {
    __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk0 + 2)));
    __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk1 + 2)));
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    v = _mm512_mask_blend_epi32((__mmask16)0xf0f0, v, _mm512_srli_epi16(v, 4));
    return _mm512_and_si512(v, _mm512_set1_epi8(15));
  }
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(blk0 + 2))),
                            _mm256_loadu_si256((const __m256i *)(blk1 + 2)), 1);
}

/* init_ in both halves (broadcast from memory, then shifted: a load, not
 * a shuffle of init_'s register, which measured 4% slower for Q4_0). */
QDOT_TARGET __attribute__((always_inline)) static inline __m512i QDOT_NAME(init2_)(const int TYPE,
                                                                                const struct kb_qact *act,
                                                                                int64_t at) {
  if (TYPE != KB_QTYPE_Q4_0) return _mm512_setzero_si512();
  __m512i s = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(act->s + at * 8)));
  return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s, 3));
}

/* lanes_ on both halves: q and init hold one activation block twice. */
QDOT_TARGET __attribute__((always_inline)) static inline __m512i QDOT_NAME(lanes2_)(const int TYPE, __m512i wv,
                                                                                  __m512i q, __m512i init) {
  if (TYPE == KB_QTYPE_Q4_0) return _mm512_dpbusd_epi32(init, wv, q);
  /* Q8_0: |w| times q with w's sign (where w == 0 the product is 0 whatever
   * the sign given to q), as lanes_'s vpsignb pair. */
  __m512i aw = _mm512_abs_epi8(wv);
  __m512i sq = _mm512_mask_sub_epi8(q, _mm512_movepi8_mask(wv), _mm512_setzero_si512(), q);
  (void)init;
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), aw, sq);
}

/* tile_ for 2 QDOT_RP weight rows in pairs; ahead: as tile_'s (the 2
 * QDOT_RP blocks' bytes per block step). */
QDOT_TARGET __attribute__((always_inline)) static inline void QDOT_NAME(tile2_)(const int TYPE, const int MI,
                                                                              const struct kb_qact *act, int64_t i0,
                                                                              const unsigned char *w0,
                                                                              int64_t row_bytes, const float *f16,
                                                                              float *y, int64_t ldy,
                                                                              const unsigned char *ahead) {
  const int64_t block_bytes = TYPE == KB_QTYPE_Q8_0 ? KB_Q8_0_BLOCK_BYTES : KB_Q4_0_BLOCK_BYTES;
  const int64_t nb = act->nb;
  __m512 acc[QDOT_MI][QDOT_RP];
  _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++)
    _Pragma("GCC unroll 8") for (int r = 0; r < QDOT_RP; r++) acc[i][r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b++) {
    QDOT_NAME(prefetch_step_)(ahead, b, 2 * QDOT_RP * block_bytes);
    __m512i wv[QDOT_RP];
    __m512 dw[QDOT_RP];
    _Pragma("GCC unroll 8") for (int r = 0; r < QDOT_RP; r++) {
      const unsigned char *blk0 = w0 + 2 * r * row_bytes + b * block_bytes, *blk1 = blk0 + row_bytes;
      wv[r] = QDOT_NAME(wq2_)(TYPE, blk0, blk1);
      __m512d lo = _mm512_castps_pd(_mm512_castps256_ps512(QDOT_NAME(wscale_)(f16, blk0)));
      dw[r] = _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(QDOT_NAME(wscale_)(f16, blk1)), 1));
    }
    _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++) {
      int64_t at = (i0 + i) * nb + b;
      __m512i q = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i *)(act->q + at * KB_QK)));
      __m512 dx = _mm512_set1_ps(act->d[at]);
      __m512i init = QDOT_NAME(init2_)(TYPE, act, at);
      _Pragma("GCC unroll 8") for (int r = 0; r < QDOT_RP; r++) {
        __m512i p = QDOT_NAME(lanes2_)(TYPE, wv[r], q, init);
        __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(p), dx);
        acc[i][r] = _mm512_fmadd_ps(dw[r], t, acc[i][r]);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int i = 0; i < MI; i++)
    _Pragma("GCC unroll 8") for (int r = 0; r < QDOT_RP; r++) {
      __m512d a = _mm512_castps_pd(acc[i][r]);
      y[i * ldy + 2 * r] = QDOT_NAME(hsum_)(_mm256_castpd_ps(_mm512_castpd512_pd256(a)));
      y[i * ldy + 2 * r + 1] = QDOT_NAME(hsum_)(_mm256_castpd_ps(_mm512_extractf64x4_pd(a, 1)));
    }
}
#endif

QDOT_TARGET __attribute__((always_inline)) static inline void QDOT_NAME(dot_type_)(const int TYPE, int64_t m, int64_t n,
                                                                                 const struct kb_qact *act,
                                                                                 const void *w, int64_t row_bytes,
                                                                                 float *y, int64_t ldy) {
  const unsigned char *wb = (const unsigned char *)w;
  const float *f16 = kb__f16_to_f32_table();
  int64_t j = 0;
#if QDOT_VNNI == 2
  /* Strips of 2 QDOT_RP rows in pairs first (tile2_), each prefetching
   * (ahead_) during its first group of activation rows, as the strips
   * below. */
  const int64_t rows2 = 2 * QDOT_RP;
  for (; j + rows2 <= n; j += rows2) {
    int64_t i = 0;
    const unsigned char *ahead = QDOT_NAME(ahead_)(wb, j, rows2, n, row_bytes);
    const unsigned char *wj = wb + j * row_bytes;
    for (; i + QDOT_MI <= m; i += QDOT_MI)
      QDOT_NAME(tile2_)(TYPE, QDOT_MI, act, i, wj, row_bytes, f16, y + i * ldy + j, ldy, i == 0 ? ahead : NULL);
    for (; i < m; i++) QDOT_NAME(tile2_)(TYPE, 1, act, i, wj, row_bytes, f16, y + i * ldy + j, ldy, i == 0 ? ahead : NULL);
  }
#endif
  /* Strips of QDOT_R weight rows (read from L1 again for each group of
   * activation rows), then the remaining rows one at a time. */
  for (; j + QDOT_R <= n; j += QDOT_R) {
    int64_t i = 0;
    const unsigned char *ahead = QDOT_NAME(ahead_)(wb, j, QDOT_R, n, row_bytes);
    for (; i + QDOT_MI <= m; i += QDOT_MI)
      QDOT_NAME(tile_)(TYPE, QDOT_R, QDOT_MI, act, i, wb + j * row_bytes, row_bytes, f16, y + i * ldy + j, ldy, i == 0 ? ahead : NULL);
    for (; i < m; i++) QDOT_NAME(tile_)(TYPE, QDOT_R, 1, act, i, wb + j * row_bytes, row_bytes, f16, y + i * ldy + j, ldy, i == 0 ? ahead : NULL);
  }
  for (; j < n; j++)
    for (int64_t i = 0; i < m; i++) QDOT_NAME(tile_)(TYPE, 1, 1, act, i, wb + j * row_bytes, row_bytes, f16, y + i * ldy + j, ldy, NULL);
}

QDOT_TARGET static void QDOT_NAME(dot_)(int type, int64_t m, int64_t n, const struct kb_qact *act, const void *w,
                                       int64_t row_bytes, float *y, int64_t ldy) {
  if (type == KB_QTYPE_Q4_0)
    QDOT_NAME(dot_type_)(KB_QTYPE_Q4_0, m, n, act, w, row_bytes, y, ldy);
  else
    QDOT_NAME(dot_type_)(KB_QTYPE_Q8_0, m, n, act, w, row_bytes, y, ldy);
}

const struct kb_quant_ops QDOT_OPS = {QDOT_NAME(quantize_act_), QDOT_NAME(dot_)};
#ifdef QDOT_RP
#undef QDOT_RP
#endif

#undef QDOT_R
#undef QDOT_MI
#undef QDOT_AHEAD
#undef QDOT_PREFETCH_MAX
#undef QDOT_NAME
#undef QDOT_CAT
#undef QDOT_CAT2
