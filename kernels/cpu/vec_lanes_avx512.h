/* vec_lanes_avx512.h - the 16-lane vocabulary of the vector kernels
 * (vec_lanes.h) at the avx512 level: one __m512 per 16 floats, AVX-512F
 * only.  Included by vec_avx512.c alone. */
/* No include guard: it is included once, and the amalgamation expands it
 * inside vec_avx512.c, where its names (kvf, kv_add, ...) are that file's. */

#include <string.h>

#include "simd.h"
#include "vmath_avx512.h"

/* KV_AVX512_BF16 (set by vec_avx512_bf16.c): the same vocabulary for CPUs
 * with AVX-512 BF16, whose only difference is kv_to_bf16. */
#if defined(KV_AVX512_BF16)
#define KV_ATTR KB_TARGET_AVX512_BF16
#define KV_FN KB_TARGET_AVX512_BF16 __attribute__((always_inline, unused)) static inline
#else
#define KV_ATTR KB_TARGET_AVX512
#define KV_FN KB_TARGET_AVX512 __attribute__((always_inline, unused)) static inline
#endif

typedef __m512 kvf;
typedef __m512i kvi;
typedef __mmask16 kvm;
typedef struct {
  __m512d lo, hi; /* lanes 0-7, 8-15 */
} kvd;

/* ---- floats ---- */

KV_FN kvf kv_set(float a) { return _mm512_set1_ps(a); }
KV_FN kvm kv_mask_first(int64_t n) { return n >= 16 ? (kvm)0xffff : (n <= 0 ? (kvm)0 : (kvm)((1u << n) - 1u)); }
KV_FN kvf kv_load(const float *p) { return _mm512_loadu_ps(p); }
KV_FN kvf kv_load_n(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(kv_mask_first(n), p); }
/* A hint that the 64-byte line holding address p will be read soon; no
 * effect on any result, and p need not point into an object (a prefetch
 * does not fault). */
KV_FN void kv_prefetch(uintptr_t p) { KB_PREFETCH_STREAM(p); }

KV_FN void kv_store(float *p, kvf v) { _mm512_storeu_ps(p, v); }
KV_FN void kv_store_n(float *p, kvf v, int64_t n) { _mm512_mask_storeu_ps(p, kv_mask_first(n), v); }

KV_FN kvf kv_add(kvf a, kvf b) { return _mm512_add_ps(a, b); }
KV_FN kvf kv_sub(kvf a, kvf b) { return _mm512_sub_ps(a, b); }
KV_FN kvf kv_mul(kvf a, kvf b) { return _mm512_mul_ps(a, b); }
KV_FN kvf kv_div(kvf a, kvf b) { return _mm512_div_ps(a, b); }
KV_FN kvf kv_sqrt(kvf a) { return _mm512_sqrt_ps(a); }
KV_FN kvf kv_fma(kvf a, kvf b, kvf c) { return _mm512_fmadd_ps(a, b, c); }
KV_FN kvf kv_fms(kvf a, kvf b, kvf c) { return _mm512_fmsub_ps(a, b, c); }
KV_FN kvf kv_fnma(kvf a, kvf b, kvf c) { return _mm512_fnmadd_ps(a, b, c); }
KV_FN kvf kv_max(kvf a, kvf b) { return _mm512_max_ps(a, b); }
KV_FN kvf kv_min(kvf a, kvf b) { return _mm512_min_ps(a, b); }
KV_FN kvf kv_abs(kvf a) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)));
}

KV_FN kvm kv_lt(kvf a, kvf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
KV_FN kvm kv_gt(kvf a, kvf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
KV_FN kvm kv_eq(kvf a, kvf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
KV_FN kvm kv_unord(kvf a, kvf b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
KV_FN kvm kv_m_or(kvm a, kvm b) { return (kvm)(a | b); }
KV_FN kvm kv_m_and(kvm a, kvm b) { return (kvm)(a & b); }
KV_FN kvm kv_m_andnot(kvm a, kvm b) { return (kvm)(a & (kvm)~b); }
KV_FN kvm kv_m_none(void) { return (kvm)0; }
KV_FN int kv_m_any(kvm a) { return a != 0; }
/* Whether all 16 lanes are set. */
KV_FN int kv_m_all(kvm a) { return a == (kvm)0xffff; }
/* m ? a : b, per lane. */
KV_FN kvf kv_sel(kvm m, kvf a, kvf b) { return _mm512_mask_blend_ps(m, b, a); }
KV_FN void kv_lanes(float out[16], kvf v) { _mm512_storeu_ps(out, v); }

/* ---- 16-bit storage ---- */

/* bfloat16 -> float: the bits shifted up.  A signalling NaN stays
 * signalling here; every kernel's first arithmetic on it makes it quiet,
 * and the array conversion quiets it explicitly (vec_body.h, convert). */
KV_FN kvf kv_from_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

/* float -> bfloat16, nearest even (adding 0x7fff plus the kept lsb rounds
 * the 16 dropped bits); NaN keeps its top bits and is made quiet.
 *
 * With AVX-512 BF16, vcvtneps2bf16 does the same in one instruction (nearest
 * even; NaN: top bits, made quiet) except that it treats float32 subnormal
 * inputs as zero.  Those are the only inputs whose result is a bfloat16
 * subnormal, so a vector holding one (fpclass 0x20, rare) takes the integer
 * code below; bf16_convert_test compares the two for all 2^32 inputs. */
KV_FN __m256i kv_to_bf16(kvf v) {
#if defined(KV_AVX512_BF16)
  if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0x20) == 0, 1)) return (__m256i)_mm512_cvtneps_pbh(v);
#endif
  __m512i u = _mm512_castps_si512(v);
  __m512i s16 = _mm512_srli_epi32(u, 16);
  __m512i lsb = _mm512_and_si512(s16, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), s16, _mm512_set1_epi32(0x0040));
  return _mm512_cvtepi32_epi16(r);
}

#if defined(KV_AVX512_BF16)
/* Stores canon(v) as bfloat16 in one vcvtneps2bf16 when no lane is NaN or
 * subnormal (one class test for both, in place of canon's compare and
 * select and kv_to_bf16's own test) and returns 1; else stores nothing and
 * returns 0 (vec_body.h's st_canon then takes the general path). */
#define KV_HAVE_BF16_CANON_STORE 1
KV_FN int kv_store_bf16_canon(uint16_t *p, kvf v) {
  if (__builtin_expect(_mm512_fpclass_ps_mask(v, 0xa1) != 0, 0)) return 0; /* QNaN, subnormal, SNaN */
  _mm256_storeu_si256((__m256i *)p, (__m256i)_mm512_cvtneps_pbh(v));
  return 1;
}
#endif

/* 16 values of a 16-bit format (f16: binary16, else bfloat16). */
KV_FN kvf kv_load_h(int f16, const uint16_t *p) {
  __m256i h = _mm256_loadu_si256((const __m256i *)p);
  return f16 ? _mm512_cvtph_ps(h) : kv_from_bf16(h);
}

KV_FN void kv_store_h(int f16, uint16_t *p, kvf v) {
  __m256i h = f16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : kv_to_bf16(v);
  _mm256_storeu_si256((__m256i *)p, h);
}

/* kv_store_h, returning what kv_load_h would read back (the stored values
 * widened) from the registers rather than from the store just made. */
KV_FN kvf kv_store_h_back(int f16, uint16_t *p, kvf v) {
  __m256i h = f16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : kv_to_bf16(v);
  _mm256_storeu_si256((__m256i *)p, h);
  return f16 ? _mm512_cvtph_ps(h) : kv_from_bf16(h);
}

/* Partial vectors go through a stack copy: AVX-512F has no 16-bit masked
 * loads (that is AVX-512BW), and a tail happens once per row or range. */
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

KV_FN void kv_exp_core(kvf x, kvf *th, kvf *tt, kvi *e) { kb_vm_exp_core_avx512(x, th, tt, e); }
KV_FN void kv_exp_core_neg(kvf x, kvf *th, kvf *tt, kvi *e) { kb_vm_exp_core_neg_avx512(x, th, tt, e); }
KV_FN kvf kv_ldexp(kvf q, kvi e) { return kb_vm_ldexp_avx512(q, e); }
/* kv_ldexp is one vscalefps (and the conversion of e) here: no dearer than
 * the multiply by a normal power of two, so vec_body.h's exp callers do not
 * check for that case (e_normal) at this level. */
#define KV_LDEXP_CHEAP 1
KV_FN kvf kv_exp(kvf x) { return kb_exp_avx512(x); }
KV_FN void kv_exp_core2(kvf xh, kvf xl, kvf *th, kvf *tt, kvi *e) { kb_vm_exp_core2_avx512(xh, xl, th, tt, e); }

/* ---- doubles ---- */

KV_FN kvd kvd_set(double a) {
  kvd r = {_mm512_set1_pd(a), _mm512_set1_pd(a)};
  return r;
}
KV_FN kvd kvd_from(kvf v) {
  kvd r = {_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
           _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))};
  return r;
}
KV_FN kvf kvd_to_f(kvd v) {
  __m256 lo = _mm512_cvtpd_ps(v.lo), hi = _mm512_cvtpd_ps(v.hi);
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
#define KV_D2(op)                                      \
  KV_FN kvd kvd_##op(kvd a, kvd b) {                   \
    kvd r = {_mm512_##op##_pd(a.lo, b.lo), _mm512_##op##_pd(a.hi, b.hi)}; \
    return r;                                          \
  }
KV_D2(add)
KV_D2(sub)
KV_D2(mul)
KV_D2(div)
#undef KV_D2
KV_FN kvd kvd_fma(kvd a, kvd b, kvd c) {
  kvd r = {_mm512_fmadd_pd(a.lo, b.lo, c.lo), _mm512_fmadd_pd(a.hi, b.hi, c.hi)};
  return r;
}
/* v * 2^e, exact (e in [-1000, 1000] and no underflow: the callers' ranges). */
KV_FN kvd kvd_ldexp(kvd v, kvi e) {
  __m512d elo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(e));
  __m512d ehi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(e, 1));
  kvd r = {_mm512_scalef_pd(v.lo, elo), _mm512_scalef_pd(v.hi, ehi)};
  return r;
}
KV_FN kvd kvd_sel(kvm m, kvd a, kvd b) {
  kvd r = {_mm512_mask_blend_pd((__mmask8)m, b.lo, a.lo), _mm512_mask_blend_pd((__mmask8)(m >> 8), b.hi, a.hi)};
  return r;
}
KV_FN void kvd_lanes(double out[16], kvd v) {
  _mm512_storeu_pd(out, v.lo);
  _mm512_storeu_pd(out + 8, v.hi);
}
/* The scalar level's tree in registers: adjacent lanes, then pairs of
 * those, then quads, then the two halves (each addition has the same two
 * operands as there, so the same result). */
KV_FN double kvd_hsum8_tree(__m512d a) {
  a = _mm512_add_pd(a, _mm512_permute_pd(a, 0x55));
  a = _mm512_add_pd(a, _mm512_permutex_pd(a, 0x4e));
  a = _mm512_add_pd(a, _mm512_shuffle_f64x2(a, a, 0x4e));
  return _mm512_cvtsd_f64(a);
}
KV_FN double kvd_hsum16(kvd v) { return kvd_hsum8_tree(v.lo) + kvd_hsum8_tree(v.hi); }

/* ---- int32 lanes ---- */

KV_FN kvi kv_bits(kvf v) { return _mm512_castps_si512(v); }
KV_FN kvf kv_from_bits(kvi v) { return _mm512_castsi512_ps(v); }
KV_FN kvi kvi_set(int32_t a) { return _mm512_set1_epi32(a); }
KV_FN kvi kvi_load(const int32_t *p) { return _mm512_loadu_si512((const void *)p); }
KV_FN void kvi_lanes(int32_t out[16], kvi v) { _mm512_storeu_si512((void *)out, v); }
KV_FN kvi kvi_add(kvi a, kvi b) { return _mm512_add_epi32(a, b); }
KV_FN kvi kvi_sub(kvi a, kvi b) { return _mm512_sub_epi32(a, b); }
KV_FN kvi kvi_and(kvi a, kvi b) { return _mm512_and_si512(a, b); }
KV_FN kvi kvi_or(kvi a, kvi b) { return _mm512_or_si512(a, b); }
#define kvi_srai(a, n) _mm512_srai_epi32((a), (n))
#define kvi_srli(a, n) _mm512_srli_epi32((a), (n))
#define kvi_slli(a, n) _mm512_slli_epi32((a), (n))
KV_FN kvm kvi_gt(kvi a, kvi b) { return _mm512_cmpgt_epi32_mask(a, b); }
KV_FN kvi kvi_sel(kvm m, kvi a, kvi b) { return _mm512_mask_blend_epi32(m, b, a); }
/* Truncating conversion; NaN and out of range give INT32_MIN (cvttps2dq). */
KV_FN kvi kv_to_int(kvf v) { return _mm512_cvttps_epi32(v); }
KV_FN kvf kvi_to_f(kvi v) { return _mm512_cvtepi32_ps(v); }

KV_FN void kvd_load16(const double *p, kvd *v) {
  v->lo = _mm512_loadu_pd(p);
  v->hi = _mm512_loadu_pd(p + 8);
}

/* Doubles holding integers in int32 range -> int32 (nearest; exact here). */
KV_FN kvi kvd_to_int(kvd v) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtpd_epi32(v.lo)), _mm512_cvtpd_epi32(v.hi), 1);
}

/* tab[idx & 7] per lane (tab holds 16 floats: the 8 entries twice). */
KV_FN kvf kv_lookup8(const float *tab, kvi idx) { return _mm512_permutexvar_ps(idx, _mm512_loadu_ps(tab)); }

/* ---- more doubles ---- */

KV_FN void kvd_exp_core(kvd x, int first, kvd *s, kvd *kf) {
  kb_vm_expd_core_avx512(x.lo, first, &s->lo, &kf->lo);
  kb_vm_expd_core_avx512(x.hi, first, &s->hi, &kf->hi);
}
KV_FN kvd kvd_ldexp_k(kvd q, kvd kf) {
  kvd r = {kb_vm_ldexp_f64_avx512(q.lo, kf.lo), kb_vm_ldexp_f64_avx512(q.hi, kf.hi)};
  return r;
}
KV_FN kvd kvd_exp(kvd x) {
  kvd r = {kb_exp_f64_avx512(x.lo), kb_exp_f64_avx512(x.hi)};
  return r;
}
/* tab[idx & 7] per lane. */
KV_FN kvd kvd_lookup8(const double *tab, kvi idx) {
  __m512d t = _mm512_loadu_pd(tab);
  kvd r = {_mm512_permutexvar_pd(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(idx)), t),
           _mm512_permutexvar_pd(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(idx, 1)), t)};
  return r;
}

