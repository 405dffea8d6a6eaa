/* vec_lanes_avx2.h - the 16-lane vocabulary of the vector kernels
 * (vec_lanes.h) at the avx2 level: two __m256 per 16 floats (lanes 0-7,
 * 8-15).  Included by vec_avx2.c alone. */
/* No include guard: it is included once, and the amalgamation expands it
 * inside vec_avx2.c, where its names (kvf, kv_add, ...) are that file's. */

#include <string.h>

#include "simd.h"
#include "vmath_avx2.h"

#define KV_ATTR KB_TARGET_AVX2
#define KV_FN KB_TARGET_AVX2 __attribute__((always_inline, unused)) static inline

typedef struct {
  __m256 a, b;
} kvf;
typedef struct {
  __m256i a, b;
} kvi;
typedef struct {
  __m256 a, b; /* all-ones lanes are true */
} kvm;
/* Four named members, not an array: GCC keeps an array member of a struct
 * in memory (each operation a store and a reload through the stack, about
 * 4x the time of the row kernels on a Zen 3), named members in registers. */
typedef struct {
  __m256d q0, q1, q2, q3; /* lanes 0-3, 4-7, 8-11, 12-15 */
} kvd;

/* Applies a two-operand __m256 intrinsic to both halves. */
#define KV_F2(name, expr)                        \
  KV_FN kvf name(kvf x, kvf y) {                 \
    kvf r;                                       \
    __m256 a = x.a, b = y.a;                     \
    r.a = (expr);                                \
    a = x.b;                                     \
    b = y.b;                                     \
    r.b = (expr);                                \
    return r;                                    \
  }
#define KV_M2(name, expr)                        \
  KV_FN kvm name(kvf x, kvf y) {                 \
    kvm r;                                       \
    __m256 a = x.a, b = y.a;                     \
    r.a = (expr);                                \
    a = x.b;                                     \
    b = y.b;                                     \
    r.b = (expr);                                \
    return r;                                    \
  }

/* ---- floats ---- */

KV_FN kvf kv_set(float v) {
  kvf r = {_mm256_set1_ps(v), _mm256_set1_ps(v)};
  return r;
}
KV_FN kvm kv_mask_first(int64_t n) {
  kvm r = {_mm256_castsi256_ps(kb_first8_lanes(n)), _mm256_castsi256_ps(kb_first8_lanes(n - 8))};
  return r;
}
KV_FN kvf kv_load(const float *p) {
  kvf r = {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  return r;
}
KV_FN kvf kv_load_n(const float *p, int64_t n) {
  kvf r = {_mm256_maskload_ps(p, kb_first8_lanes(n)), _mm256_maskload_ps(p + 8, kb_first8_lanes(n - 8))};
  return r;
}
/* A hint that the 64-byte line holding address p will be read soon; no
 * effect on any result, and p need not point into an object (a prefetch
 * does not fault). */
KV_FN void kv_prefetch(uintptr_t p) { KB_PREFETCH_STREAM(p); }

KV_FN void kv_store(float *p, kvf v) {
  _mm256_storeu_ps(p, v.a);
  _mm256_storeu_ps(p + 8, v.b);
}
KV_FN void kv_store_n(float *p, kvf v, int64_t n) {
  _mm256_maskstore_ps(p, kb_first8_lanes(n), v.a);
  _mm256_maskstore_ps(p + 8, kb_first8_lanes(n - 8), v.b);
}

KV_F2(kv_add, _mm256_add_ps(a, b))
KV_F2(kv_sub, _mm256_sub_ps(a, b))
KV_F2(kv_mul, _mm256_mul_ps(a, b))
KV_F2(kv_div, _mm256_div_ps(a, b))
KV_F2(kv_max, _mm256_max_ps(a, b))
KV_F2(kv_min, _mm256_min_ps(a, b))
KV_FN kvf kv_sqrt(kvf x) {
  kvf r = {_mm256_sqrt_ps(x.a), _mm256_sqrt_ps(x.b)};
  return r;
}
KV_FN kvf kv_fma(kvf x, kvf y, kvf z) {
  kvf r = {_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)};
  return r;
}
KV_FN kvf kv_fms(kvf x, kvf y, kvf z) {
  kvf r = {_mm256_fmsub_ps(x.a, y.a, z.a), _mm256_fmsub_ps(x.b, y.b, z.b)};
  return r;
}
KV_FN kvf kv_fnma(kvf x, kvf y, kvf z) {
  kvf r = {_mm256_fnmadd_ps(x.a, y.a, z.a), _mm256_fnmadd_ps(x.b, y.b, z.b)};
  return r;
}
KV_FN kvf kv_abs(kvf x) {
  __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  kvf r = {_mm256_and_ps(x.a, m), _mm256_and_ps(x.b, m)};
  return r;
}

KV_M2(kv_lt, _mm256_cmp_ps(a, b, _CMP_LT_OQ))
KV_M2(kv_gt, _mm256_cmp_ps(a, b, _CMP_GT_OQ))
KV_M2(kv_eq, _mm256_cmp_ps(a, b, _CMP_EQ_OQ))
KV_M2(kv_unord, _mm256_cmp_ps(a, b, _CMP_UNORD_Q))
KV_FN kvm kv_m_or(kvm x, kvm y) {
  kvm r = {_mm256_or_ps(x.a, y.a), _mm256_or_ps(x.b, y.b)};
  return r;
}
KV_FN kvm kv_m_and(kvm x, kvm y) {
  kvm r = {_mm256_and_ps(x.a, y.a), _mm256_and_ps(x.b, y.b)};
  return r;
}
KV_FN kvm kv_m_andnot(kvm x, kvm y) {
  kvm r = {_mm256_andnot_ps(y.a, x.a), _mm256_andnot_ps(y.b, x.b)};
  return r;
}
KV_FN kvm kv_m_none(void) {
  kvm r = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  return r;
}
KV_FN int kv_m_any(kvm x) { return _mm256_movemask_ps(_mm256_or_ps(x.a, x.b)) != 0; }
/* Whether all 16 lanes are set. */
KV_FN int kv_m_all(kvm x) { return _mm256_movemask_ps(_mm256_and_ps(x.a, x.b)) == 0xff; }
KV_FN kvf kv_sel(kvm m, kvf x, kvf y) {
  kvf r = {_mm256_blendv_ps(y.a, x.a, m.a), _mm256_blendv_ps(y.b, x.b, m.b)};
  return r;
}
KV_FN void kv_lanes(float out[16], kvf v) { kv_store(out, v); }

/* ---- 16-bit storage ---- */

/* bfloat16 -> float: the bits shifted up (a signalling NaN stays
 * signalling, as at the avx512 level). */
KV_FN __m256 kv_from_bf16_8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

/* 8 floats -> 8 bfloat16 in the low 16 bits of each 32-bit lane, rounded
 * to nearest even; right for every lane that is not NaN. */
KV_FN __m256i kv_to_bf16_8_rne(__m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
}

/* 8 floats -> 8 bfloat16 in the low 16 bits of each 32-bit lane: NaN keeps
 * its sign and top payload bits and is made quiet. */
KV_FN __m256i kv_to_bf16_8(__m256 v) {
  __m256i q = _mm256_or_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 16), _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(kv_to_bf16_8_rne(v), q, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* Stores 16 bfloat16, lanes 0-7 in the low 16 bits of a's lanes, 8-15 of
 * b's.  packus works within 128-bit halves: a0-3 b0-3 a4-7 b4-7, reordered. */
KV_FN void kv_store_bf16_16(uint16_t *p, __m256i a, __m256i b) {
  _mm256_storeu_si256((__m256i *)p, _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8));
}

/* Stores canon(v) as bfloat16 and returns 1: canon's select, then the
 * rounding without kv_to_bf16_8's NaN step, which the canonical NaN does
 * not need (0x7fc00000 rounds to 0x7fc0, the pattern that step would
 * give), so the same bits as st(canon(v)) in three fewer operations per 8
 * lanes (vec_body.h's st_canon). */
#define KV_HAVE_BF16_CANON_STORE 1
KV_FN int kv_store_bf16_canon(uint16_t *p, kvf v) {
  __m256 qn = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
  __m256 a = _mm256_blendv_ps(v.a, qn, _mm256_cmp_ps(v.a, v.a, _CMP_UNORD_Q));
  __m256 b = _mm256_blendv_ps(v.b, qn, _mm256_cmp_ps(v.b, v.b, _CMP_UNORD_Q));
  kv_store_bf16_16(p, kv_to_bf16_8_rne(a), kv_to_bf16_8_rne(b));
  return 1;
}

KV_FN kvf kv_load_h(int f16, const uint16_t *p) {
  __m128i h0 = _mm_loadu_si128((const __m128i *)p), h1 = _mm_loadu_si128((const __m128i *)(p + 8));
  kvf r;
  if (f16) {
    r.a = _mm256_cvtph_ps(h0);
    r.b = _mm256_cvtph_ps(h1);
  } else {
    r.a = kv_from_bf16_8(h0);
    r.b = kv_from_bf16_8(h1);
  }
  return r;
}

KV_FN void kv_store_h(int f16, uint16_t *p, kvf v) {
  if (f16) {
    _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v.a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm_storeu_si128((__m128i *)(p + 8), _mm256_cvtps_ph(v.b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    kv_store_bf16_16(p, kv_to_bf16_8(v.a), kv_to_bf16_8(v.b));
  }
}

/* Stores 16 bfloat16 (kv_store_bf16_16's a, b) and returns them widened. */
KV_FN kvf kv_store_bf16_16_back(uint16_t *p, __m256i a, __m256i b) {
  kv_store_bf16_16(p, a, b);
  kvf r = {_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16))};
  return r;
}

/* kv_store_h, returning what kv_load_h would read back (the stored values
 * widened) from the registers: a load of a store's halves just after it
 * does not take the store's data on Zen 3 and waits for it to retire. */
KV_FN kvf kv_store_h_back(int f16, uint16_t *p, kvf v) {
  if (!f16) return kv_store_bf16_16_back(p, kv_to_bf16_8(v.a), kv_to_bf16_8(v.b));
  __m128i h0 = _mm256_cvtps_ph(v.a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m128i h1 = _mm256_cvtps_ph(v.b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_storeu_si128((__m128i *)p, h0);
  _mm_storeu_si128((__m128i *)(p + 8), h1);
  kvf r = {_mm256_cvtph_ps(h0), _mm256_cvtph_ps(h1)};
  return r;
}

/* kv_store_h_back of bfloat16 for a v with no NaN lane: without
 * kv_to_bf16_8's NaN step (three operations per 8 lanes; float16's
 * conversion has no such step to skip). */
#define KV_HAVE_STORE_BF16_BACK_NONAN 1
KV_FN kvf kv_store_bf16_back_nonan(uint16_t *p, kvf v) {
  return kv_store_bf16_16_back(p, kv_to_bf16_8_rne(v.a), kv_to_bf16_8_rne(v.b));
}

KV_FN kvf kv_load_h_n(int f16, const uint16_t *p, int64_t n) {
  uint16_t tmp[16] = {0};
  memcpy(tmp, p, (size_t)n * sizeof(uint16_t));
  return kv_load_h(f16, tmp);
}

KV_FN void kv_store_h_n(int f16, uint16_t *p, kvf v, int64_t n) {
  uint16_t tmp[16];
  kv_store_h(f16, tmp, v);
  memcpy(p, tmp, (size_t)n * sizeof(uint16_t));
}

/* ---- exp (vmath.h) ---- */

KV_FN void kv_exp_core(kvf x, kvf *th, kvf *tt, kvi *e) {
  kb_vm_exp_core_avx2(x.a, &th->a, &tt->a, &e->a);
  kb_vm_exp_core_avx2(x.b, &th->b, &tt->b, &e->b);
}
KV_FN void kv_exp_core_neg(kvf x, kvf *th, kvf *tt, kvi *e) {
  kb_vm_exp_core_neg_avx2(x.a, &th->a, &tt->a, &e->a);
  kb_vm_exp_core_neg_avx2(x.b, &th->b, &tt->b, &e->b);
}
KV_FN kvf kv_ldexp(kvf q, kvi e) {
  kvf r = {kb_vm_ldexp_avx2(q.a, e.a), kb_vm_ldexp_avx2(q.b, e.b)};
  return r;
}
/* kv_ldexp takes two factors here (subnormal powers): the exp callers of
 * vec_body.h multiply by the normal power where every lane allows it. */
#define KV_LDEXP_CHEAP 0
KV_FN void kv_exp_core2(kvf xh, kvf xl, kvf *th, kvf *tt, kvi *e) {
  kb_vm_exp_core2_avx2(xh.a, xl.a, &th->a, &tt->a, &e->a);
  kb_vm_exp_core2_avx2(xh.b, xl.b, &th->b, &tt->b, &e->b);
}
KV_FN kvf kv_exp(kvf x) {
  kvf r = {kb_exp_avx2(x.a), kb_exp_avx2(x.b)};
  return r;
}

/* ---- doubles ---- */

KV_FN kvd kvd_set(double a) {
  __m256d v = _mm256_set1_pd(a);
  kvd r = {v, v, v, v};
  return r;
}
KV_FN kvd kvd_from(kvf x) {
  kvd r = {_mm256_cvtps_pd(_mm256_castps256_ps128(x.a)), _mm256_cvtps_pd(_mm256_extractf128_ps(x.a, 1)),
           _mm256_cvtps_pd(_mm256_castps256_ps128(x.b)), _mm256_cvtps_pd(_mm256_extractf128_ps(x.b, 1))};
  return r;
}
KV_FN kvf kvd_to_f(kvd x) {
  kvf r = {_mm256_set_m128(_mm256_cvtpd_ps(x.q1), _mm256_cvtpd_ps(x.q0)),
           _mm256_set_m128(_mm256_cvtpd_ps(x.q3), _mm256_cvtpd_ps(x.q2))};
  return r;
}
#define KV_D2(op)                                                   \
  KV_FN kvd kvd_##op(kvd x, kvd y) {                                \
    kvd r = {_mm256_##op##_pd(x.q0, y.q0), _mm256_##op##_pd(x.q1, y.q1), \
             _mm256_##op##_pd(x.q2, y.q2), _mm256_##op##_pd(x.q3, y.q3)}; \
    return r;                                                       \
  }
KV_D2(add)
KV_D2(sub)
KV_D2(mul)
KV_D2(div)
#undef KV_D2
KV_FN kvd kvd_fma(kvd x, kvd y, kvd z) {
  kvd r = {_mm256_fmadd_pd(x.q0, y.q0, z.q0), _mm256_fmadd_pd(x.q1, y.q1, z.q1), _mm256_fmadd_pd(x.q2, y.q2, z.q2),
           _mm256_fmadd_pd(x.q3, y.q3, z.q3)};
  return r;
}
/* 2^e as doubles from 4 int32 lanes (e + 1023 in the exponent field). */
KV_FN __m256d kvd_pow2_4(__m128i e) {
  __m256i b = _mm256_cvtepi32_epi64(_mm_add_epi32(e, _mm_set1_epi32(1023)));
  return _mm256_castsi256_pd(_mm256_slli_epi64(b, 52));
}
/* v * 2^e, exact (e in [-1000, 1000] and no underflow: the callers' ranges). */
KV_FN kvd kvd_ldexp(kvd x, kvi e) {
  kvd r = {_mm256_mul_pd(x.q0, kvd_pow2_4(_mm256_castsi256_si128(e.a))),
           _mm256_mul_pd(x.q1, kvd_pow2_4(_mm256_extracti128_si256(e.a, 1))),
           _mm256_mul_pd(x.q2, kvd_pow2_4(_mm256_castsi256_si128(e.b))),
           _mm256_mul_pd(x.q3, kvd_pow2_4(_mm256_extracti128_si256(e.b, 1)))};
  return r;
}
/* A 32-bit lane mask widened to 64-bit lanes 0-3 (lo) or 4-7 (hi). */
KV_FN __m256d kvd_mask_lo(__m256 m) { return _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(_mm256_castps_si256(m)))); }
KV_FN __m256d kvd_mask_hi(__m256 m) { return _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(_mm256_castps_si256(m), 1))); }
KV_FN kvd kvd_sel(kvm m, kvd x, kvd y) {
  kvd r = {_mm256_blendv_pd(y.q0, x.q0, kvd_mask_lo(m.a)), _mm256_blendv_pd(y.q1, x.q1, kvd_mask_hi(m.a)),
           _mm256_blendv_pd(y.q2, x.q2, kvd_mask_lo(m.b)), _mm256_blendv_pd(y.q3, x.q3, kvd_mask_hi(m.b))};
  return r;
}
KV_FN void kvd_lanes(double out[16], kvd x) {
  _mm256_storeu_pd(out, x.q0);
  _mm256_storeu_pd(out + 4, x.q1);
  _mm256_storeu_pd(out + 8, x.q2);
  _mm256_storeu_pd(out + 12, x.q3);
}
/* The scalar level's tree in registers: hadd gives the adjacent sums of
 * two quarters, the swapped halves their pairs, then the two quads (each
 * addition has the same two operands as there, so the same result). */
KV_FN double kvd_hsum8_tree(__m256d q0, __m256d q1) {
  __m256d h = _mm256_hadd_pd(q0, q1); /* s0 s2 s1 s3 */
  h = _mm256_add_pd(h, _mm256_permute2f128_pd(h, h, 1)); /* t0 t1 t0 t1 */
  __m128d t = _mm256_castpd256_pd128(h);
  return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}
KV_FN double kvd_hsum16(kvd x) { return kvd_hsum8_tree(x.q0, x.q1) + kvd_hsum8_tree(x.q2, x.q3); }

#undef KV_F2
#undef KV_M2

/* ---- int32 lanes ---- */

#define KV_I2(name, expr)        \
  KV_FN kvi name(kvi x, kvi y) { \
    kvi r;                       \
    __m256i a = x.a, b = y.a;    \
    r.a = (expr);                \
    a = x.b;                     \
    b = y.b;                     \
    r.b = (expr);                \
    return r;                    \
  }
KV_FN kvi kv_bits(kvf v) {
  kvi r = {_mm256_castps_si256(v.a), _mm256_castps_si256(v.b)};
  return r;
}
KV_FN kvf kv_from_bits(kvi v) {
  kvf r = {_mm256_castsi256_ps(v.a), _mm256_castsi256_ps(v.b)};
  return r;
}
KV_FN kvi kvi_set(int32_t v) {
  kvi r = {_mm256_set1_epi32(v), _mm256_set1_epi32(v)};
  return r;
}
KV_FN kvi kvi_load(const int32_t *p) {
  kvi r = {_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)(p + 8))};
  return r;
}
KV_FN void kvi_lanes(int32_t out[16], kvi v) {
  _mm256_storeu_si256((__m256i *)out, v.a);
  _mm256_storeu_si256((__m256i *)(out + 8), v.b);
}
KV_I2(kvi_add, _mm256_add_epi32(a, b))
KV_I2(kvi_sub, _mm256_sub_epi32(a, b))
KV_I2(kvi_and, _mm256_and_si256(a, b))
KV_I2(kvi_or, _mm256_or_si256(a, b))
#undef KV_I2
#define KV_ISHIFT(name, op)            \
  KV_FN kvi name(kvi x, int n) {       \
    kvi r = {op(x.a, n), op(x.b, n)};  \
    return r;                          \
  }
KV_ISHIFT(kvi_srai, _mm256_srai_epi32)
KV_ISHIFT(kvi_srli, _mm256_srli_epi32)
KV_ISHIFT(kvi_slli, _mm256_slli_epi32)
#undef KV_ISHIFT
KV_FN kvm kvi_gt(kvi x, kvi y) {
  kvm r = {_mm256_castsi256_ps(_mm256_cmpgt_epi32(x.a, y.a)), _mm256_castsi256_ps(_mm256_cmpgt_epi32(x.b, y.b))};
  return r;
}
KV_FN kvi kvi_sel(kvm m, kvi x, kvi y) {
  kvi r = {_mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(y.a), _mm256_castsi256_ps(x.a), m.a)),
           _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(y.b), _mm256_castsi256_ps(x.b), m.b))};
  return r;
}
KV_FN kvi kv_to_int(kvf v) {
  kvi r = {_mm256_cvttps_epi32(v.a), _mm256_cvttps_epi32(v.b)};
  return r;
}
KV_FN kvf kvi_to_f(kvi v) {
  kvf r = {_mm256_cvtepi32_ps(v.a), _mm256_cvtepi32_ps(v.b)};
  return r;
}

KV_FN void kvd_load16(const double *p, kvd *v) {
  v->q0 = _mm256_loadu_pd(p);
  v->q1 = _mm256_loadu_pd(p + 4);
  v->q2 = _mm256_loadu_pd(p + 8);
  v->q3 = _mm256_loadu_pd(p + 12);
}

/* Doubles holding integers in int32 range -> int32 (nearest; exact here). */
KV_FN kvi kvd_to_int(kvd v) {
  kvi r = {_mm256_set_m128i(_mm256_cvtpd_epi32(v.q1), _mm256_cvtpd_epi32(v.q0)),
           _mm256_set_m128i(_mm256_cvtpd_epi32(v.q3), _mm256_cvtpd_epi32(v.q2))};
  return r;
}

/* tab[idx & 7] per lane (tab holds 16 floats: the 8 entries twice). */
KV_FN kvf kv_lookup8(const float *tab, kvi idx) {
  __m256 t = _mm256_loadu_ps(tab);
  kvf r = {_mm256_permutevar8x32_ps(t, idx.a), _mm256_permutevar8x32_ps(t, idx.b)};
  return r;
}

/* ---- more doubles ---- */

KV_FN void kvd_exp_core(kvd x, int first, kvd *s, kvd *kf) {
  kb_vm_expd_core_avx2(x.q0, first, &s->q0, &kf->q0);
  kb_vm_expd_core_avx2(x.q1, first, &s->q1, &kf->q1);
  kb_vm_expd_core_avx2(x.q2, first, &s->q2, &kf->q2);
  kb_vm_expd_core_avx2(x.q3, first, &s->q3, &kf->q3);
}
KV_FN kvd kvd_ldexp_k(kvd q, kvd kf) {
  kvd r = {kb_vm_ldexp_f64_avx2(q.q0, kf.q0), kb_vm_ldexp_f64_avx2(q.q1, kf.q1), kb_vm_ldexp_f64_avx2(q.q2, kf.q2),
           kb_vm_ldexp_f64_avx2(q.q3, kf.q3)};
  return r;
}
KV_FN kvd kvd_exp(kvd x) {
  kvd r = {kb_exp_f64_avx2(x.q0), kb_exp_f64_avx2(x.q1), kb_exp_f64_avx2(x.q2), kb_exp_f64_avx2(x.q3)};
  return r;
}
/* tab[idx & 7] for 4 lanes: vpermps moves the two 32-bit halves of each
 * double from one of the two 4-double halves of the table. */
KV_FN __m256d kvd_lookup8_4(__m256 t0, __m256 t1, __m128i idx) {
  __m256i i64 = _mm256_cvtepi32_epi64(idx);
  __m256i j = _mm256_slli_epi64(_mm256_and_si256(i64, _mm256_set1_epi64x(3)), 1);
  __m256i pairs = _mm256_or_si256(j, _mm256_slli_epi64(_mm256_add_epi64(j, _mm256_set1_epi64x(1)), 32));
  __m256d v0 = _mm256_castps_pd(_mm256_permutevar8x32_ps(t0, pairs));
  __m256d v1 = _mm256_castps_pd(_mm256_permutevar8x32_ps(t1, pairs));
  return _mm256_blendv_pd(v0, v1, _mm256_castsi256_pd(_mm256_slli_epi64(i64, 61)));
}
KV_FN kvd kvd_lookup8(const double *tab, kvi idx) {
  __m256 t0 = _mm256_loadu_ps((const float *)tab), t1 = _mm256_loadu_ps((const float *)(tab + 4));
  kvd r = {kvd_lookup8_4(t0, t1, _mm256_castsi256_si128(idx.a)), kvd_lookup8_4(t0, t1, _mm256_extracti128_si256(idx.a, 1)),
           kvd_lookup8_4(t0, t1, _mm256_castsi256_si128(idx.b)), kvd_lookup8_4(t0, t1, _mm256_extracti128_si256(idx.b, 1))};
  return r;
}

