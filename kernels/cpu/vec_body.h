/* vec_body.h - the vector kernels of vec_kernels.h, written once over the
 * 16-lane vocabulary.  Included by vec_scalar.c, vec_avx2.c and
 * vec_avx512.c right after their vec_lanes_<isa>.h, which defines the lane
 * types (kvf: 16 floats, kvi: 16 int32, kvm: 16 flags, kvd: 16 doubles),
 * the operations kv_* / kvi_* / kvd_*, and the attributes KV_FN (inlined
 * helpers) and KV_ATTR (the table's entries).  Every operation means the
 * same IEEE operation on each lane at every level, so this file computes the
 * same bits everywhere; the scalar level is the reference.
 *
 * NaN outputs: an operation with two NaN operands may return either
 * payload (compilers commute additions and multiplications), so wherever
 * two NaNs can meet, the kernel picks the result explicitly (the first
 * operand made quiet, or the canonical quiet NaN 0x7fc00000), and single
 * NaN inputs of the activations come out as the input made quiet.
 *
 * Defines KV_OPS_INIT, the initializer of the level's struct kb_vec_ops. */

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "vec_kernels.h"
#include "vmath_tables.h"

/* ---- storage ---- */

KV_FN kvf ld(int dt, const void *p, int64_t i) {
  if (dt == KB_VEC_F32) return kv_load((const float *)p + i);
  return kv_load_h(dt == KB_VEC_F16, (const uint16_t *)p + i);
}

/* Lanes n.. are 0 and their memory is not read. */
KV_FN kvf ld_n(int dt, const void *p, int64_t i, int64_t n) {
  if (dt == KB_VEC_F32) return kv_load_n((const float *)p + i, n);
  return kv_load_h_n(dt == KB_VEC_F16, (const uint16_t *)p + i, n);
}

KV_FN void st(int dt, void *p, int64_t i, kvf v) {
  if (dt == KB_VEC_F32)
    kv_store((float *)p + i, v);
  else
    kv_store_h(dt == KB_VEC_F16, (uint16_t *)p + i, v);
}

KV_FN void st_n(int dt, void *p, int64_t i, kvf v, int64_t n) {
  if (dt == KB_VEC_F32)
    kv_store_n((float *)p + i, v, n);
  else
    kv_store_h_n(dt == KB_VEC_F16, (uint16_t *)p + i, v, n);
}

/* st, returning the stored values as ld would read them back (a 16-bit
 * type's rounding, widened) without reading them. */
KV_FN kvf st_back(int dt, void *p, int64_t i, kvf v) {
  if (dt == KB_VEC_F32) {
    kv_store((float *)p + i, v);
    return v;
  }
  return kv_store_h_back(dt == KB_VEC_F16, (uint16_t *)p + i, v);
}

/* The canonical quiet NaN. */
KV_FN kvf qnan(void) { return kv_from_bits(kvi_set(0x7fc00000)); }

/* NaN lanes of y become the canonical NaN. */
KV_FN kvf canon(kvf y) { return kv_sel(kv_unord(y, y), qnan(), y); }

/* st(dt, p, i, canon(v)), with bfloat16 narrowed by the level's shorter
 * sequence for canonical values where it has one (kv_store_bf16_canon: one
 * instruction on AVX-512 BF16, no NaN step on avx2): the same bits. */
KV_FN void st_canon(int dt, void *p, int64_t i, kvf v) {
#if defined(KV_HAVE_BF16_CANON_STORE)
  if (dt == KB_VEC_BF16 && kv_store_bf16_canon((uint16_t *)p + i, v)) return;
#endif
  st(dt, p, i, canon(v));
}

/* Fixed-order horizontal reductions of 16 lanes (the same on every level;
 * the double sums are each lanes header's kvd_hsum16, a tree over adjacent
 * lanes).  The maximum of lanes holding no NaN, as a tree (four dependent
 * steps instead of sixteen), with -0 made +0: its value then does not
 * depend on the order at all. */
KV_FN float kv_hmax16(const float l[16]) {
  float m[8];
  for (int i = 0; i < 8; i++) m[i] = l[2 * i + 1] > l[2 * i] ? l[2 * i + 1] : l[2 * i];
  for (int w = 4; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) m[i] = m[i + w] > m[i] ? m[i + w] : m[i];
  return m[0] + 0.0f;
}

/* y[0..n) = v. */
KV_FN void fill_row(int dt, void *y, int64_t cols, kvf v) {
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) st(dt, y, c, v);
  if (c < cols) st_n(dt, y, c, v, cols - c);
}

/* Bytes ahead of the element being computed that the activation loops
 * fetch (one prefetch per 16 elements).  They are arithmetic on data
 * streamed from memory, and with the hardware's prefetch alone the loads
 * still wait: 1 KiB ahead made silu over 16M floats 1.3x faster on one
 * avx512 core (1, 4 and 16 KiB gave about the same; docs/performance.md). */
#ifndef KV_AHEAD_BYTES
#define KV_AHEAD_BYTES 1024
#endif

/* bfloat16 results of the long activations are narrowed in a pass of
 * their own over KV_NARROW_CHUNK floats kept in L1: the narrowing's dozen
 * integer operations per 8 lanes, in the same loop as the activation's
 * long dependency chain, left fewer iterations of the chain in flight
 * (glu bf16 0.90 -> 0.78 ns per element on an AVX2 Zen 3; float16's one
 * conversion instruction gained nothing).  Same operations, same bits. */
#define KV_NARROW_CHUNK 256

/* y[i_ + c] = EXPR for c < KV_NARROW_CHUNK (EXPR a kvf of c_, the offset
 * within the chunk), through t_: computed first, then stored as dt. */
#define KV_CHUNK_THEN_STORE(dt, y, i_, EXPR)                                             \
  do {                                                                                 \
    float t_[KV_NARROW_CHUNK];                                                         \
    for (int64_t c_ = 0; c_ < KV_NARROW_CHUNK; c_ += 16) kv_store(t_ + c_, (EXPR));    \
    for (int64_t c_ = 0; c_ < KV_NARROW_CHUNK; c_ += 16) st(dt, y, i_ + c_, kv_load(t_ + c_)); \
  } while (0)

/* Applies F to every 16-lane vector of x into y (any n; y may be x: each
 * chunk is read before it is written). */
#define KV_MAP1(dt, n, x, y, F)                                  \
  do {                                                           \
    int64_t i_ = 0;                                              \
    uintptr_t pf_ = (uintptr_t)(x) + KV_AHEAD_BYTES;             \
    if ((dt) == KB_VEC_BF16)                                     \
      for (; i_ + KV_NARROW_CHUNK <= (n); i_ += KV_NARROW_CHUNK) \
        KV_CHUNK_THEN_STORE(dt, y, i_, (kv_prefetch(pf_ + (uintptr_t)(i_ + c_) * kb_vec_size(dt)), F(ld(dt, x, i_ + c_)))); \
    for (; i_ + 16 <= (n); i_ += 16) {                           \
      kv_prefetch(pf_ + (uintptr_t)i_ * kb_vec_size(dt));        \
      st(dt, y, i_, F(ld(dt, x, i_)));                           \
    }                                                            \
    if (i_ < (n)) st_n(dt, y, i_, F(ld_n(dt, x, i_, (n)-i_)), (n)-i_); \
  } while (0)

/* ---- activations and the float functions of the math layer ---- */

/* e^x in double for results that are rounded to float: the degree-10
 * polynomial (truncation below 2^-42); NaN lanes meaningless. */
KV_FN kvd exp_d_fast(kvd x) {
  kvd s, kf;
  kvd_exp_core(x, 3, &s, &kf);
  return kvd_ldexp_k(kvd_add(kvd_set(1.0), s), kf);
}

/* Whether every lane of e is in [-126, 127], where 2^e is a normal float
 * and q * 2^e is one multiply, rounded once, as kv_ldexp computes it there
 * (to the same bits); kv_ldexp's general form (two factors, for the
 * subnormal powers) costs 12 more operations per 8 lanes on avx2.  The exp
 * callers below take the multiply when this holds: e <= 0 there, and below
 * -126 only for results near the float underflow. */
KV_FN int e_normal(kvi e) {
  /* Where kv_ldexp is itself one operation (KV_LDEXP_CHEAP: avx512), the
   * check would cost more than it saves: always kv_ldexp, the same bits. */
  if (KV_LDEXP_CHEAP) return 0;
  return !kv_m_any(kv_m_or(kvi_gt(kvi_set(-126), e), kvi_gt(e, kvi_set(127))));
}

/* 2^e for e in [-126, 127]. */
KV_FN kvf pow2_normal(kvi e) { return kv_from_bits(kvi_slli(kvi_add(e, kvi_set(127)), 23)); }

/* Lanes not ok (NaN or +-inf, or for silu NaN and -inf) get
 * x * (x > 0 ? 1 : 0): NaN made quiet, +inf, and NaN for -inf (-inf * 0),
 * as the formulas' limits. */
KV_FN kvf act_special(kvf x, kvm ok, kvf y) {
  /* Every lane finite (all but rare vectors): nothing to fix, and testing
   * the mask costs no vector operation; either way the same bits. */
  if (!kv_m_any(kv_m_andnot(kv_mask_first(16), ok))) return y;
  kvf fix = kv_mul(x, kv_sel(kv_gt(x, kv_set(0.0f)), kv_set(1.0f), kv_set(0.0f)));
  return kv_sel(ok, y, fix);
}

/* The sign of x on |y|. */
KV_FN kvf with_sign_of(kvf x, kvf y) {
  return kv_from_bits(kvi_or(kv_bits(kv_abs(y)), kvi_and(kv_bits(x), kvi_set(INT32_MIN))));
}

/*
 * silu(x) = x / (1 + e^-x) in float32 arithmetic, one exp and one division,
 * in the folded form: kb_silu's for |x| >= 87 and the special values
 * (silu_fast_v below; silu_normal_v, the shorter form, covers the rest),
 * and gelu_tanh's through x_sigmoid for every input.
 * E = e^-|x| = (th + tt) 2^e from the exp core (th + tt unrounded),
 * d = 1 + E rounded once, and
 *   x >= 0:  silu(x) = x / d
 *   x < 0:   silu(x) = x E / (1 + E) = (x (th + tt') / d) 2^e,
 * the 2^e applied last so that results near the underflow keep full
 * precision.  For x < 0 the rounding error dl = (1 + E) - d (exact:
 * Fast2Sum, 1 >= E) is folded into the numerator's low part,
 * tt' = tt - th dl h with h = 1.5 - d/2 ~ 1/d (within 12%, enough for a
 * term of 2^-24), and the numerator x th + x tt' takes one fused step: one
 * rounding there, one in the division, so the relative error stays near
 * 2^-23 (exhaustive bounds in docs/kernels.md; x >= 0 has an exact
 * numerator and needs no fold).  x is clamped to -160 first: silu(-160)
 * rounds to -0, and the exp core clamps its argument there, so numerator
 * and exponent agree.  Non-finite x: +inf comes out of the formula; -inf
 * and NaN lanes get x * 0 (NaN for -inf, as -inf * 0, and a NaN input made
 * quiet).  Zeros keep their sign (x / 2).
 */
/* The end of silu's evaluation, shared with gelu_tanh: xc / (1 + E) with
 * E = e^-|z| = (th + tt) 2^e from the exp core, xc the clamped input (its
 * sign that of z): as the comment above describes. */
KV_FN kvf x_sigmoid(kvf xc, kvf th, kvf tt, kvi e) {
  kvf one = kv_set(1.0f);
  int nrm = e_normal(e); /* false only where some |z| > 87 */
  kvf p2 = nrm ? pow2_normal(e) : one;
  kvf E = nrm ? kv_mul(kv_add(th, tt), p2) : kv_ldexp(kv_add(th, tt), e);
  kvf d = kv_add(one, E);
  kvf dl = kv_sub(E, kv_sub(d, one));
  kvf h = kv_fma(d, kv_set(-0.5f), kv_set(1.5f));
  kvf tt2 = kv_fnma(th, kv_mul(dl, h), tt);
  kvm neg = kv_lt(xc, kv_set(0.0f));
  kvf q = kv_div(kv_sel(neg, kv_fma(xc, th, kv_mul(xc, tt2)), xc), d);
  return kv_sel(neg, nrm ? kv_mul(q, p2) : kv_ldexp(q, e), q);
}

KV_FN kvf silu_v(kvf x) {
  kvf xs = kv_max(kv_set(-160.0f), x);
  kvf th, tt;
  kvi e;
  kv_exp_core(kv_from_bits(kvi_or(kv_bits(xs), kvi_set(INT32_MIN))), &th, &tt, &e); /* -|xs| */
  return act_special(x, kv_gt(x, kv_set(-INFINITY)), x_sigmoid(xs, th, tt, e));
}

/*
 * silu for |x| < 87 (kb_silu's and kb_glu's evaluation there), with one
 * exp core and no correction step: E = e^-x = (th + tt) 2^e, and
 * silu(x) = x / d, d = s + (tt 2^e + sl) rounded, where s + sl =
 * th 2^e + 1 exactly (Fast2Sum with the larger of the two terms first:
 * th 2^e >= 1 for x < 0, <= 1 for x >= 0) and tt 2^e + sl takes one fused
 * step whose rounding is at most |tt / th| <= 2^-4.4 of the last one's: d
 * is within about 1.05 half-ulps of 1 + E, so one rounding in d and one in
 * the division (exhaustive bounds in docs/kernels.md).
 * For |x| < 87 the exponent e = floor(k / 8), |k| = |round(8 x / ln 2)|
 * <= 1004, lies in [-126, 126], so 2^e is a normal float, every product by
 * it is exact, the exp core's clamps do nothing (kv_exp_core_neg leaves
 * them out), and the result x e^x >= 87 e^-87 is a normal float.  The lanes
 * beyond (|x| >= 87, infinities, NaN) get meaningless values here;
 * silu_fast_v gives them silu_v's.
 */
KV_FN kvf silu_normal_v(kvf x) {
  kvf th, tt;
  kvi e;
  kv_exp_core_neg(x, &th, &tt, &e);
  kvf one = kv_set(1.0f);
  kvf p2 = pow2_normal(e);
  kvf a = kv_mul(th, p2);
  kvf big = kv_max(a, one), small = kv_min(a, one);
  kvf sh = kv_add(big, small);
  kvf sl = kv_sub(small, kv_sub(sh, big));
  return kv_div(x, kv_add(sh, kv_fma(tt, p2, sl)));
}

/* The lanes silu_normal_v covers: |x| < 87 (false for infinities and NaN). */
KV_FN kvm silu_normal_lanes(kvf x) { return kv_lt(kv_abs(x), kv_set(87.0f)); }

/* kb_silu per lane: silu_normal_v where |x| < 87, silu_v elsewhere (each
 * lane's result depends on that lane alone). */
KV_FN kvf silu_fast_v(kvf x) {
  kvf y = silu_normal_v(x);
  kvm ok = silu_normal_lanes(x);
  if (!kv_m_all(ok)) y = kv_sel(ok, y, silu_v(x));
  return y;
}

/* G(a) = Phi(-a) e^(a^2/2) for a in [0, 16) (vmath_tables.h), in double. */
KV_FN kvd gtail_d(kvd a, kvi idx) {
  kvd t = kvd_sub(a, kvd_lookup8(kb_vm_g_center, idx));
  kvd g = kvd_lookup8(kb_vm_g_coef[0], idx);
  for (int j = 1; j <= KB_VM_G_DEGREE; j++) g = kvd_fma(g, t, kvd_lookup8(kb_vm_g_coef[j], idx));
  return g;
}

/*
 * gelu(x) = x Phi(x) in float32 arithmetic.  With a = |x| (clamped to 14.5:
 * beyond, gelu(-a) rounds to -0 and Phi(-a) is invisible beside x),
 *   n = a Phi(-a) = a e^(-a^2/2) G(a) = -gelu(-a),
 *   gelu(x) = -n for x < 0,  x - n for x >= 0  (x Phi(x) = x - x Phi(-x)),
 * so both signs need n to about 2^-27 relative and nothing cancels:
 *   - a^2 = sh + sl exactly (fms), e^(-a^2/2) = (th + tt) 2^e from the exp
 *     core with the argument as that pair (its error near 2^-28);
 *   - G from kb_vm_gf (vmath_tables.h): a degree-9 polynomial in t = a - c
 *     (exact, but for a < 0.25 on the first interval, whose rounding error
 *     tl is carried: Fast2Sum), c0 and c1 as float pairs; everything above
 *     c1 t rounds in float, where it is at most 0.34 of G; G = gh + gl;
 *   - n = a (gh + gl)(th + tt) as a pair nh + nl (the products' errors by
 *     fms; the terms below 2^-24 of n rounded once).
 * x < 0: -(nh + nl) rounded, then scaled by 2^e (exact unless the result is
 * subnormal: one more rounding there).  x >= 0: x - (nh + nl) 2^e by Fast2Sum
 * (x >= n), one final rounding; n / (x - n) = Phi(-a) / Phi(a) <= 1 bounds how
 * much n's error shows.  Bounds in docs/kernels.md (exhaustive).  Signed
 * zeros: -0 takes the negative side (-0 out).  NaN, +-inf: act_special.
 */
KV_FN kvf gelu_v(kvf x) {
  kvf one = kv_set(1.0f);
  kvf a = kv_min(kv_set(14.5f), kv_abs(x));
  kvf sh = kv_mul(a, a);
  kvf sl = kv_fms(a, a, sh);
  kvf th, tt;
  kvi e;
  kv_exp_core2(kv_mul(sh, kv_set(-0.5f)), kv_mul(sl, kv_set(-0.5f)), &th, &tt, &e);
  /* interval: [0,1) -> 0, [1,2) -> 1, then [2k-2, 2k) -> k, [12,16) -> 7 */
  kvf v = kv_min(kv_min(a, kv_fma(a, kv_set(0.5f), one)), kv_set(7.0f));
  kvi idx = kv_to_int(v);
  kvf c = kv_lookup8(kb_vm_gf[KB_VM_GF_CENTRE], idx);
  kvf t = kv_sub(a, c);
  kvf tl = kv_sub(a, kv_add(t, c));
  kvf p = kv_lookup8(kb_vm_gf[1], idx);
  for (int j = 2; j < KB_VM_GF_DEGREE; j++) p = kv_fma(p, t, kv_lookup8(kb_vm_gf[j], idx));
  kvf c1 = kv_lookup8(kb_vm_gf[KB_VM_GF_C1_HI], idx);
  kvf c0 = kv_lookup8(kb_vm_gf[KB_VM_GF_C0_HI], idx);
  p = kv_fma(p, t, c1);
  kvf wh = kv_mul(t, p);
  kvf low = kv_add(kv_fms(t, p, wh), kv_lookup8(kb_vm_gf[KB_VM_GF_C0_LO], idx));
  low = kv_fma(t, kv_lookup8(kb_vm_gf[KB_VM_GF_C1_LO], idx), low);
  low = kv_fma(c1, tl, low);
  kvf gh = kv_add(c0, wh);
  kvf gl = kv_add(kv_add(kv_sub(c0, gh), wh), low);
  kvf mh = kv_mul(gh, th);
  kvf ml = kv_fma(gh, tt, kv_fma(gl, th, kv_fms(gh, th, mh)));
  kvf nh = kv_mul(a, mh);
  kvf nl = kv_fma(a, ml, kv_fms(a, mh, nh));
  kvf q = kv_add(nh, nl);
  int nrm = e_normal(e); /* false only where some |x| > 13.2 */
  kvf p2 = nrm ? pow2_normal(e) : one;
  kvf neg = nrm ? kv_mul(q, p2) : kv_ldexp(q, e);
  kvf n2h = nrm ? kv_mul(nh, p2) : kv_ldexp(nh, e);
  kvf n2l = nrm ? kv_mul(nl, p2) : kv_ldexp(nl, e);
  kvf s = kv_sub(x, n2h);
  kvf pos = kv_add(s, kv_sub(kv_sub(kv_sub(x, s), n2h), n2l));
  kvm sign = kvi_gt(kvi_set(0), kv_bits(x));
  kvf y = kv_sel(sign, kv_sub(kv_set(-0.0f), neg), pos);
  return act_special(x, kv_lt(kv_abs(x), kv_set(INFINITY)), y);
}

/* k1 = 2 sqrt(2/pi) and k3 = 0.044715 k1 as float pairs (hi + lo within
 * 2^-49 relative): gelu_tanh's exponent is z = 2u = x (k1 + k3 x^2). */
#define KV_GT_K1_HI 0x1.988454p+0f
#define KV_GT_K1_LO (-0x1.857936p-25f)
#define KV_GT_K3_HI 0x1.2444f2p-4f
#define KV_GT_K3_LO 0x1.49b16ap-29f

/*
 * gelu_tanh(x) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), in
 * float32 arithmetic: silu's evaluation (one exp, one division, the
 * rounding of 1 + E folded into the numerator) with the exponent
 * z = 2u = x (k1 + k3 x^2) in place of x.  For x < 0 the result is about
 * x e^z, so an absolute error in z is a relative error in the result (z
 * reaches -100 before the result underflows): -|z| is formed as an
 * unevaluated pair, a = |x| clamped to 14 (beyond, the result is x or
 * rounds to -0), a^2 = sh + sl exactly (fms), k3h sh = ph + pl exactly,
 * k1h + ph = wh + we exactly (TwoSum), wl = we + pl + k3l sh + k3h sl +
 * k1l (terms below 2^-23 of w), and -a (wh + wl) = zh + zl (the product's
 * error by fms): held to about 2^-44 relative, which the exp core (taking
 * its argument as that pair) turns into under 2^-36 of the result.
 * Then E = e^(-|z|) = (th + tt) 2^e and, as in silu, x / (1 + E) for
 * x >= 0 and (x (th + tt') / d) 2^e for x < 0 (x clamped to -14 there:
 * the result rounds to -0 below).  Bounds in docs/kernels.md
 * (exhaustive).  Zeros keep their sign (x / 2); NaN, +-inf: act_special.
 */
KV_FN kvf gelu_tanh_v(kvf x) {
  kvf lim = kv_set(14.0f);
  kvf a = kv_min(lim, kv_abs(x));
  kvf sh = kv_mul(a, a);
  kvf sl = kv_fms(a, a, sh);
  kvf k3 = kv_set(KV_GT_K3_HI);
  kvf ph = kv_mul(k3, sh);
  kvf pl = kv_fms(k3, sh, ph);
  kvf k1 = kv_set(KV_GT_K1_HI);
  kvf wh = kv_add(k1, ph);
  kvf bb = kv_sub(wh, k1);
  kvf we = kv_add(kv_sub(k1, kv_sub(wh, bb)), kv_sub(ph, bb));
  kvf wl = kv_fma(k3, sl, kv_fma(kv_set(KV_GT_K3_LO), sh, kv_set(KV_GT_K1_LO)));
  wl = kv_add(kv_add(we, pl), wl);
  kvf na = kv_sub(kv_set(0.0f), a);
  kvf zh = kv_mul(na, wh);
  kvf zl = kv_fma(na, wl, kv_fms(na, wh, zh));
  kvf th, tt;
  kvi e;
  kv_exp_core2(zh, zl, &th, &tt, &e);
  /* x clamped below at -14 (the result rounds to -0 there); x >= 0 as is. */
  kvf y = x_sigmoid(kv_max(kv_sub(kv_set(0.0f), lim), x), th, tt, e);
  return act_special(x, kv_lt(kv_abs(x), kv_set(INFINITY)), y);
}

/*
 * log(x) in double: x = 2^e m with m in [sqrt(1/2), sqrt 2) (subnormal x
 * scaled by 2^24 first), log m = 2 atanh(s) = 2 s (1 + s^2/3 + ... +
 * s^18/19), s = (m - 1) / (m + 1) (|s| < 0.172), log x = e ln2 + log m
 * (one fused step), one rounding.  log(+-0) = -inf, log(x < 0) = NaN
 * (canonical), log(+inf) = +inf, NaN made quiet.
 */
KV_FN kvf log_v(kvf x) {
  kvm sub = kv_lt(x, kv_set(0x1p-126f));
  kvf xs = kv_sel(sub, kv_mul(x, kv_set(0x1p24f)), x);
  kvi u = kv_bits(xs);
  kvi e = kvi_sub(kvi_srli(u, 23), kvi_set(127));
  e = kvi_sel(sub, kvi_sub(e, kvi_set(24)), e);
  kvf m = kv_from_bits(kvi_or(kvi_and(u, kvi_set(0x007fffff)), kvi_set(0x3f800000)));
  kvm big = kv_gt(m, kv_set(1.41421356f));
  m = kv_sel(big, kv_mul(m, kv_set(0.5f)), m);
  e = kvi_sel(big, kvi_add(e, kvi_set(1)), e);
  kvd f = kvd_sub(kvd_from(m), kvd_set(1.0));
  kvd s = kvd_div(f, kvd_add(kvd_set(2.0), f));
  kvd s2 = kvd_mul(s, s);
  kvd q = kvd_set(1.0 / 19.0);
  for (int k = 8; k >= 0; k--) q = kvd_fma(q, s2, kvd_set(1.0 / (double)(2 * k + 1)));
  kvd r = kvd_fma(kvd_from(kvi_to_f(e)), kvd_set(0x1.62e42fefa39efp-1), kvd_mul(kvd_add(s, s), q));
  kvf y = kvd_to_f(r);
  kvf zero = kv_set(0.0f);
  kvm ok = kv_m_and(kv_gt(x, zero), kv_lt(x, kv_set(INFINITY)));
  kvf fix = kv_sel(kv_eq(x, zero), kv_set(-INFINITY), kv_sel(kv_lt(x, zero), qnan(), kv_add(x, x)));
  return kv_sel(ok, y, fix);
}

/*
 * tanh(x) in double: with y = -2|x| (|x| clamped to 10, where tanh rounds
 * to 1), m = e^y - 1 = 2^k s + (2^k - 1) from the exp core (accurate for
 * small |x| too), tanh|x| = -m / (2 + m); the sign of x is put back.
 */
KV_FN kvf tanh_v(kvf x) {
  kvf a = kv_min(kv_set(10.0f), kv_abs(x));
  kvd s, kf;
  kvd_exp_core(kvd_mul(kvd_set(-2.0), kvd_from(a)), 3, &s, &kf);
  kvd p = kvd_ldexp_k(kvd_set(1.0), kf);
  kvd m = kvd_fma(p, s, kvd_sub(p, kvd_set(1.0)));
  kvf y = kvd_to_f(kvd_div(kvd_sub(kvd_set(0.0), m), kvd_add(kvd_set(2.0), m)));
  return kv_sel(kv_unord(x, x), kv_add(x, x), with_sign_of(x, y));
}

/* 2/sqrt(pi) (-1)^n / (n! (2n + 1)), n = 11 down to 0: erf(z) = z P(z^2)
 * for |z| < 0.5 (truncation below 2^-52). */
static const double kv_erf_small[12] = {
    -2.0 / 1.7724538509055160273 / (39916800.0 * 23.0), 2.0 / 1.7724538509055160273 / (3628800.0 * 21.0),
    -2.0 / 1.7724538509055160273 / (362880.0 * 19.0),   2.0 / 1.7724538509055160273 / (40320.0 * 17.0),
    -2.0 / 1.7724538509055160273 / (5040.0 * 15.0),     2.0 / 1.7724538509055160273 / (720.0 * 13.0),
    -2.0 / 1.7724538509055160273 / (120.0 * 11.0),      2.0 / 1.7724538509055160273 / (24.0 * 9.0),
    -2.0 / 1.7724538509055160273 / (6.0 * 7.0),         2.0 / 1.7724538509055160273 / (2.0 * 5.0),
    -2.0 / 1.7724538509055160273 / (1.0 * 3.0),         2.0 / 1.7724538509055160273,
};

/*
 * erf(x) in double: z P(z^2) for |z| < 0.5, else 1 - erfc(z) with
 * erfc(z) = 2 e^(-z^2) G(z sqrt 2) (z^2 exact); |z| clamped to 6 (erf
 * rounds to 1); the sign of x is put back (erf(-0) = -0).
 */
KV_FN kvf erf_v(kvf x) {
  kvf ac = kv_min(kv_set(6.0f), kv_abs(x));
  kvd z = kvd_from(ac), z2 = kvd_mul(z, z);
  kvd q = kvd_set(kv_erf_small[0]);
  for (int n = 1; n < 12; n++) q = kvd_fma(q, z2, kvd_set(kv_erf_small[n]));
  kvd small = kvd_mul(z, q);
  kvd b = kvd_mul(z, kvd_set(1.4142135623730950488));
  kvi idx = kv_to_int(kv_mul(kvd_to_f(b), kv_set(0.5f)));
  kvd erfc = kvd_mul(kvd_set(2.0), kvd_mul(exp_d_fast(kvd_sub(kvd_set(0.0), z2)), gtail_d(b, idx)));
  kvd r = kvd_sel(kv_lt(ac, kv_set(0.5f)), small, kvd_sub(kvd_set(1.0), erfc));
  return kv_sel(kv_unord(x, x), kv_add(x, x), with_sign_of(x, kvd_to_f(r)));
}

#define KV_MATH_ENTRY(name, F)                                                                 \
  KV_ATTR static void name(int64_t n, const float *x, float *y) { KV_MAP1(KB_VEC_F32, n, x, y, F); }
KV_MATH_ENTRY(math_exp, kv_exp)
KV_MATH_ENTRY(math_log, log_v)
KV_MATH_ENTRY(math_tanh, tanh_v)
KV_MATH_ENTRY(math_erf, erf_v)
KV_MATH_ENTRY(math_silu, silu_fast_v)
KV_MATH_ENTRY(math_gelu, gelu_v)
KV_MATH_ENTRY(math_gelu_tanh, gelu_tanh_v)

KV_ATTR static void math_exp_f64(int64_t n, const double *x, double *y) {
  for (int64_t i = 0; i < n; i += 16) {
    int64_t len = n - i < 16 ? n - i : 16;
    double in[16] = {0}, out[16];
    memcpy(in, x + i, (size_t)len * sizeof(double));
    kvd v;
    kvd_load16(in, &v);
    kvd_lanes(out, kvd_exp(v));
    memcpy(y + i, out, (size_t)len * sizeof(double));
  }
}

/* One instance per dtype, so the storage branches fold away. */
#define KV_PER_DT(name, call_f32, call_bf16, call_f16) \
  switch (dt) {                                       \
    case KB_VEC_BF16:                                 \
      call_bf16;                                      \
      break;                                          \
    case KB_VEC_F16:                                  \
      call_f16;                                       \
      break;                                          \
    default:                                          \
      call_f32;                                       \
  }

/* The bf16 loop is a function of its own: in one function with the
 * others, its chunk buffer changed the float32 loop's registers and made
 * float32 silu 4% slower (AVX2 Zen 3). */
#define KV_UNARY_DT(F)                                                                        \
  KV_ATTR __attribute__((noinline)) static void F##_bf16(int64_t n, const void *x, void *y) { \
    KV_MAP1(KB_VEC_BF16, n, x, y, F);                                                         \
  }                                                                                           \
  KV_ATTR static void F##_dt(int dt, int64_t n, const void *x, void *y) {                     \
    KV_PER_DT(F, KV_MAP1(KB_VEC_F32, n, x, y, F), F##_bf16(n, x, y), KV_MAP1(KB_VEC_F16, n, x, y, F)) \
  }
KV_UNARY_DT(silu_fast_v)
KV_UNARY_DT(gelu_v)
KV_UNARY_DT(gelu_tanh_v)

KV_ATTR static void unary(int fn, int dt, int64_t n, const void *x, void *y) {
  if (fn == KB_VM_GELU)
    gelu_v_dt(dt, n, x, y);
  else if (fn == KB_VM_GELU_TANH)
    gelu_tanh_v_dt(dt, n, x, y);
  else
    silu_fast_v_dt(dt, n, x, y);
}

/* ---- add, mul, scale, add_bias, conversions ---- */

/* a op b; where both are NaN, a made quiet. */
KV_FN kvf binop(int op, kvf a, kvf b) {
  kvf y = op == KB_VEC_MUL ? kv_mul(a, b) : kv_add(a, b);
  /* Both operands are NaN only in lanes where y is: one compare decides
   * whether the choice can arise (rarely), the same bits either way. */
  if (!kv_m_any(kv_unord(y, y))) return y;
  return kv_sel(kv_m_and(kv_unord(a, a), kv_unord(b, b)), kv_add(a, a), y);
}

/* st_back(dt, p, i, binop(KB_VEC_ADD, a, b)): where the level has a
 * bfloat16 narrowing for NaN-free vectors, the sum's one NaN test (binop's)
 * also chooses it. */
KV_FN kvf add_st_back(int dt, void *p, int64_t i, kvf a, kvf b) {
#if defined(KV_HAVE_STORE_BF16_BACK_NONAN)
  if (dt == KB_VEC_BF16) {
    kvf y = kv_add(a, b);
    if (!kv_m_any(kv_unord(y, y))) return kv_store_bf16_back_nonan((uint16_t *)p + i, y);
  }
#endif
  return st_back(dt, p, i, binop(KB_VEC_ADD, a, b));
}

/* binop(KB_VEC_MUL, silu_fast_v(g), u) (glu's SwiGLU).  Where every lane
 * of g is in silu_normal_v's range, silu_fast_v(g) is silu_normal_v(g), a
 * finite number, so binop's choice between two NaN operands does not arise
 * and the plain product is its bits. */
KV_FN kvf silu_mul_v(kvf g, kvf u) {
  if (kv_m_all(silu_normal_lanes(g))) return kv_mul(silu_normal_v(g), u);
  return binop(KB_VEC_MUL, silu_fast_v(g), u);
}

KV_FN kvf gelu_mul_v(kvf g, kvf u) { return binop(KB_VEC_MUL, gelu_v(g), u); }
KV_FN kvf gelu_tanh_mul_v(kvf g, kvf u) { return binop(KB_VEC_MUL, gelu_tanh_v(g), u); }

/* y = G(g, u) per vector (glu), G one of the *_mul_v above: unary's
 * function, then binary's product with the activation as first operand,
 * so the bits of unary followed by binary (MUL), with g and u read and y
 * written once, 16-bit storage widened and narrowed in the same pass. */
#define KV_GATED_LOOP(dt, n, g, u, y, G)                                                        \
  do {                                                                                         \
    int64_t i_ = 0;                                                                            \
    uintptr_t pg_ = (uintptr_t)(g) + KV_AHEAD_BYTES, pu_ = (uintptr_t)(u) + KV_AHEAD_BYTES;     \
    if ((dt) == KB_VEC_BF16)                                                                   \
      for (; i_ + KV_NARROW_CHUNK <= (n); i_ += KV_NARROW_CHUNK)                               \
        KV_CHUNK_THEN_STORE(dt, y, i_,                                                         \
                            (kv_prefetch(pg_ + (uintptr_t)(i_ + c_) * kb_vec_size(dt)),        \
                             kv_prefetch(pu_ + (uintptr_t)(i_ + c_) * kb_vec_size(dt)),        \
                             G(ld(dt, g, i_ + c_), ld(dt, u, i_ + c_))));                      \
    for (; i_ + 16 <= (n); i_ += 16) {                                                         \
      kv_prefetch(pg_ + (uintptr_t)i_ * kb_vec_size(dt));                                      \
      kv_prefetch(pu_ + (uintptr_t)i_ * kb_vec_size(dt));                                      \
      st(dt, y, i_, G(ld(dt, g, i_), ld(dt, u, i_)));                                          \
    }                                                                                          \
    if (i_ < (n))                                                                              \
      st_n(dt, y, i_, G(ld_n(dt, g, i_, (n)-i_), ld_n(dt, u, i_, (n)-i_)), (n)-i_);             \
  } while (0)

#define KV_GATED_DT(F)                                                                                      \
  KV_ATTR __attribute__((noinline)) static void F##_gated_bf16(int64_t n, const void *g, const void *u, void *y) { \
    KV_GATED_LOOP(KB_VEC_BF16, n, g, u, y, F);                                                              \
  }                                                                                                         \
  KV_ATTR static void F##_gated(int dt, int64_t n, const void *g, const void *u, void *y) {                 \
    KV_PER_DT(F, KV_GATED_LOOP(KB_VEC_F32, n, g, u, y, F), F##_gated_bf16(n, g, u, y),                      \
              KV_GATED_LOOP(KB_VEC_F16, n, g, u, y, F))                                                     \
  }
KV_GATED_DT(silu_mul_v)
KV_GATED_DT(gelu_mul_v)
KV_GATED_DT(gelu_tanh_mul_v)

KV_ATTR static void gated(int fn, int dt, int64_t n, const void *g, const void *u, void *y) {
  if (fn == KB_VM_GELU)
    gelu_mul_v_gated(dt, n, g, u, y);
  else if (fn == KB_VM_GELU_TANH)
    gelu_tanh_mul_v_gated(dt, n, g, u, y);
  else
    silu_mul_v_gated(dt, n, g, u, y);
}

KV_FN void binary_loop(int op, int dt, int64_t n, const void *a, const void *b, void *y) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) st(dt, y, i, binop(op, ld(dt, a, i), ld(dt, b, i)));
  if (i < n) st_n(dt, y, i, binop(op, ld_n(dt, a, i, n - i), ld_n(dt, b, i, n - i)), n - i);
}

KV_ATTR static void binary(int op, int dt, int64_t n, const void *a, const void *b, void *y) {
  if (op == KB_VEC_MUL) {
    KV_PER_DT(mul, binary_loop(KB_VEC_MUL, KB_VEC_F32, n, a, b, y), binary_loop(KB_VEC_MUL, KB_VEC_BF16, n, a, b, y),
              binary_loop(KB_VEC_MUL, KB_VEC_F16, n, a, b, y))
  } else {
    KV_PER_DT(add, binary_loop(KB_VEC_ADD, KB_VEC_F32, n, a, b, y), binary_loop(KB_VEC_ADD, KB_VEC_BF16, n, a, b, y),
              binary_loop(KB_VEC_ADD, KB_VEC_F16, n, a, b, y))
  }
}

KV_FN void scale_loop(int dt, int64_t n, float alpha, const void *x, void *y) {
  kvf al = kv_set(alpha);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) st(dt, y, i, kv_mul(al, ld(dt, x, i)));
  if (i < n) st_n(dt, y, i, kv_mul(al, ld_n(dt, x, i, n - i)), n - i);
}

KV_ATTR static void scale(int dt, int64_t n, float alpha, const void *x, void *y) {
  KV_PER_DT(scale, scale_loop(KB_VEC_F32, n, alpha, x, y), scale_loop(KB_VEC_BF16, n, alpha, x, y),
            scale_loop(KB_VEC_F16, n, alpha, x, y))
}

KV_FN void bias_loop(int dt, int64_t rows, int64_t cols, const void *x, const void *bias, void *y) {
  int64_t es = kb_vec_size(dt);
  for (int64_t r = 0; r < rows; r++) {
    const void *xr = (const char *)x + r * cols * es;
    void *yr = (char *)y + r * cols * es;
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) st(dt, yr, c, binop(KB_VEC_ADD, ld(dt, xr, c), ld(dt, bias, c)));
    if (c < cols) st_n(dt, yr, c, binop(KB_VEC_ADD, ld_n(dt, xr, c, cols - c), ld_n(dt, bias, c, cols - c)), cols - c);
  }
}

KV_ATTR static void add_bias(int dt, int64_t rows, int64_t cols, const void *x, const void *bias, void *y) {
  KV_PER_DT(bias, bias_loop(KB_VEC_F32, rows, cols, x, bias, y), bias_loop(KB_VEC_BF16, rows, cols, x, bias, y),
            bias_loop(KB_VEC_F16, rows, cols, x, bias, y))
}

KV_FN void convert_loop(int dt, int narrow, int64_t n, const void *src, void *dst) {
  int64_t i = 0;
  if (narrow) {
    for (; i + 16 <= n; i += 16) st(dt, dst, i, kv_load((const float *)src + i));
    if (i < n) st_n(dt, dst, i, kv_load_n((const float *)src + i, n - i), n - i);
  } else {
    /* v + v makes a signalling NaN quiet (half.h) and changes nothing else. */
    for (; i + 16 <= n; i += 16) {
      kvf v = ld(dt, src, i);
      kv_store((float *)dst + i, kv_sel(kv_unord(v, v), kv_add(v, v), v));
    }
    if (i < n) {
      kvf v = ld_n(dt, src, i, n - i);
      kv_store_n((float *)dst + i, kv_sel(kv_unord(v, v), kv_add(v, v), v), n - i);
    }
  }
}

KV_ATTR static void convert(int dt, int narrow, int64_t n, const void *src, void *dst) {
  if (dt == KB_VEC_F16)
    convert_loop(KB_VEC_F16, narrow, n, src, dst);
  else
    convert_loop(KB_VEC_BF16, narrow, n, src, dst);
}

/* ---- softmax, log_softmax, cross-entropy: max and sum of exponentials ---- */

/* Most blocks per row: the block length grows with the row beyond 64 x 1024
 * elements, so the per-block maxima fit on the stack. */
#define KV_MAX_BLOCKS 64

/* Elements per block of the online maximum: 4 KiB of float32 (still in L1
 * when the block is read again for its exponentials), more for rows longer
 * than KV_MAX_BLOCKS such blocks.  A function of cols only. */
static int64_t kv_block_len(int64_t cols) {
  int64_t b = (cols + KV_MAX_BLOCKS - 1) / KV_MAX_BLOCKS;
  b = (b + 15) / 16 * 16;
  return b < 1024 ? 1024 : b;
}

/*
 * e^(x - m) for the elements of a row with maximum m, as (th + tt) 2^e
 * (see kb_vm_exp_core_scalar) with the difference x - m never rounded:
 * k_x = round(8x / ln2) and k_m = round(8m / ln2) come from the shifter,
 * x - k_x ln2_hi/8 and m - k_m ln2_hi/8 are exact (fused), and
 * x - m = (k_x - k_m) ln2/8 + r with r their difference (|r| <= ln2/8,
 * rounded once, about 2^-29) plus (k_x - k_m) times the low part.  The
 * polynomial has degree 5 for the wider r.  x is clamped below at m - 160
 * (the result is 0 there and the shifter stays in range).  Rows whose
 * maximum exceeds KV_HUGE_M in magnitude use the TwoSum form instead
 * (exp_shift).  The results depend on (x, m) only.
 */
#define KV_HUGE_M 3.0e5f

struct kv_mref {
  float m, lo;    /* the maximum; the clamp */
  float kmf, mrh; /* k_m as a float; m - k_m ln2_hi/8 */
  int32_t kbits;  /* the shifter's bit pattern holding k_m */
  int huge;       /* |m| > KV_HUGE_M (or m not finite): TwoSum form */
};

KV_FN struct kv_mref kv_mref_of(float m) {
  struct kv_mref r;
  r.m = m;
  r.huge = !(fabsf(m) <= KV_HUGE_M);
  r.lo = m - 160.0f;
  float t = fmaf(r.huge ? 0.0f : m, KB_VM_EXP_INV_STEP, KB_VM_EXP_SHIFTER);
  r.kmf = t - KB_VM_EXP_SHIFTER;
  r.mrh = fmaf(r.kmf, KB_VM_EXP_NSTEP_HI, r.huge ? 0.0f : m);
  uint32_t u;
  memcpy(&u, &t, sizeof u);
  r.kbits = (int32_t)u;
  return r;
}

/* a + b as the exact pair s + e (Knuth's TwoSum: no condition on the
 * magnitudes; s = a + b rounded, e what the rounding lost). */
KV_FN void two_sum(kvf a, kvf b, kvf *s, kvf *e) {
  kvf h = kv_add(a, b);
  kvf bb = kv_sub(h, a);
  *s = h;
  *e = kv_add(kv_sub(a, kv_sub(h, bb)), kv_sub(b, bb));
}

/* x - m as the exact pair dh + dl (TwoSum), x clamped below at -2^100 so
 * that -inf gives a finite (hugely negative) difference. */
KV_FN void diff_exact(kvf v, float m, kvf *dh, kvf *dl) {
  two_sum(kv_max(kv_set(-0x1p100f), v), kv_set(-m), dh, dl);
}

KV_FN void exp_rel(kvf v, const struct kv_mref *mr, int huge, kvf *th, kvf *tt, kvi *e) {
  if (huge) {
    kvf dh, dl;
    diff_exact(v, mr->m, &dh, &dl);
    kv_exp_core2(dh, dl, th, tt, e);
    return;
  }
  kvf xc = kv_max(kv_set(mr->lo), v);
  kvf shifter = kv_set(KB_VM_EXP_SHIFTER);
  kvf t = kv_fma(xc, kv_set(KB_VM_EXP_INV_STEP), shifter);
  kvf kxf = kv_sub(t, shifter);
  kvf a = kv_sub(kv_fma(kxf, kv_set(KB_VM_EXP_NSTEP_HI), xc), kv_set(mr->mrh));
  kvf r = kv_fma(kv_sub(kxf, kv_set(mr->kmf)), kv_set(KB_VM_EXP_NSTEP_LO), a);
  kvi k = kvi_sub(kv_bits(t), kvi_set(mr->kbits));
  kvf q = kv_fma(kv_set(KB_VM_EXP_C5), r, kv_set(KB_VM_EXP_C4));
  q = kv_fma(q, r, kv_set(KB_VM_EXP_C3));
  q = kv_fma(q, r, kv_set(KB_VM_EXP_C2));
  kvf s = kv_fma(q, kv_mul(r, r), r);
  kvf hi = kv_lookup8(kb_vm_exp_tab_hi, k);
  *th = hi;
  *tt = kv_fma(hi, s, kv_lookup8(kb_vm_exp_tab_lo, k));
  *e = kvi_srai(k, 3);
}

/* f = e^(x - m) rounded to float, and the part of the unrounded value
 * that f lost (Fast2Sum on the mantissa pair, both scaled by 2^e). */
KV_FN kvf exp_rel_f(kvf v, const struct kv_mref *mr, int huge, kvf *lost) {
  kvf th, tt;
  kvi e;
  exp_rel(v, mr, huge, &th, &tt, &e);
  kvf mh = kv_add(th, tt);
  kvf l = kv_sub(tt, kv_sub(mh, th));
  if (e_normal(e)) { /* all but elements more than 87 under the maximum */
    kvf p = pow2_normal(e);
    *lost = kv_mul(l, p);
    return kv_mul(mh, p);
  }
  *lost = kv_ldexp(l, e);
  return kv_ldexp(mh, e);
}

struct kv_rowsum {
  float m;  /* the row maximum, NaN ignored */
  double s;  /* sum of e^(x - m) */
  double l;  /* log s */
  int bad;  /* NaN in the row, or m = +-inf: every output is NaN */
  int64_t blen, nblocks;
  float mb[KV_MAX_BLOCKS]; /* the running maximum each block was exponentiated against */
};

/* Sums of exponentials: doubles for the rounded values, floats for what
 * rounding lost (each below 2^-24 of its value, so their float sum is
 * far more accurate than needed), and apart, the count of elements equal
 * to the running maximum, whose exponential is exactly 1: the other terms
 * are then summed among themselves before the 1s are added, so that s
 * carries them to double precision even when the maximum dominates. */
struct kv_acc {
  kvd f;
  kvf lost;
  kvi ones;
};

/* Adds the exponentials of the n (<= 16) elements of v; with keep, also
 * stores them there rounded to float (softmax's second pass scales them).
 * ones_apart: count the elements equal to the maximum apart (log_softmax
 * and the cross-entropy loss, whose log s needs s - 1 beyond double
 * precision); softmax adds their 1s with the other terms. */
KV_FN void acc_exps(struct kv_acc *a, kvf v, int64_t n, const struct kv_mref *mr, int huge, float *keep,
                    int ones_apart) {
  kvf lost, f = exp_rel_f(v, mr, huge, &lost);
  if (keep) {
    if (n == 16)
      st(KB_VEC_F32, keep, 0, f);
    else
      st_n(KB_VEC_F32, keep, 0, f, n);
  }
  if (!ones_apart) {
    if (n < 16) {
      kvm tail = kv_mask_first(n);
      f = kv_sel(tail, f, kv_set(0.0f));
      lost = kv_sel(tail, lost, kv_set(0.0f));
    }
    a->f = kvd_add(a->f, kvd_from(f));
    a->lost = kv_add(a->lost, lost);
    return;
  }
  kvm one = kv_eq(v, kv_set(mr->m));
  if (n < 16) one = kv_m_and(one, kv_mask_first(n));
  kvm drop = one;
  if (n < 16) drop = kv_m_or(drop, kv_m_andnot(kv_mask_first(16), kv_mask_first(n)));
  f = kv_sel(drop, kv_set(0.0f), f);
  lost = kv_sel(drop, kv_set(0.0f), lost);
  a->f = kvd_add(a->f, kvd_from(f));
  a->lost = kv_add(a->lost, lost);
  a->ones = kvi_add(a->ones, kvi_sel(one, kvi_set(1), kvi_set(0)));
}

/* The lanes of ones, summed (each below 2^31). */
static int64_t kv_hsumi(const int32_t l[16]) {
  int64_t s = 0;
  for (int i = 0; i < 16; i++) s += l[i];
  return s;
}

/* The maximum of x[b0, b1), NaN ignored (-inf when there is nothing
 * else): kv_max(v, vm) keeps vm where v is NaN.  Four independent chains:
 * one would wait on each maximum's latency (a sixth of softmax's time,
 * profiled); the maximum of a set does not depend on the grouping
 * (kv_hmax16 makes -0 +0). */
KV_FN float block_max(int dt, const void *x, int64_t b0, int64_t b1) {
  kvf ninf = kv_set(-INFINITY);
  int64_t full = b0 + (b1 - b0) / 16 * 16;
  kvf vm = ninf, vm1 = ninf, vm2 = ninf, vm3 = ninf;
  int64_t c4 = b0;
  for (; c4 + 64 <= full; c4 += 64) {
    vm = kv_max(ld(dt, x, c4), vm);
    vm1 = kv_max(ld(dt, x, c4 + 16), vm1);
    vm2 = kv_max(ld(dt, x, c4 + 32), vm2);
    vm3 = kv_max(ld(dt, x, c4 + 48), vm3);
  }
  for (; c4 < full; c4 += 16) vm = kv_max(ld(dt, x, c4), vm);
  if (full < b1) vm = kv_max(kv_sel(kv_mask_first(b1 - full), ld_n(dt, x, full, b1 - full), ninf), vm);
  float lanes[16];
  kv_lanes(lanes, kv_max(kv_max(vm, vm1), kv_max(vm2, vm3)));
  return kv_hmax16(lanes);
}

/*
 * One read of the row: per block, its maximum, then (the block still in
 * cache) e^(x - m_b) against the running maximum m_b, added into 16 double
 * lanes (the rounding remainders into 16 float lanes, the exact ones
 * counted); when a block raises the maximum the sums so far (the ones
 * included) are scaled by e^(old - new) (the C library's exp, in double).
 * The lanes are summed in kvd_hsum16's order.  With keep (cols floats),
 * each e^(x - m_b) is also stored there rounded to float; keep may be x
 * itself (every vector is read before it is written).
 */
KV_FN void row_reduce(int dt, const void *x, int64_t cols, struct kv_rowsum *r, float *keep, int ones_apart,
                      void *y) {
  float m = -INFINITY;
  struct kv_acc acc = {kvd_set(0.0), kv_set(0.0f), kvi_set(0)};
  double extra = 0.0; /* former ones, scaled */
  int nan = 0;
  r->blen = kv_block_len(cols);
  r->nblocks = 0;
  for (int64_t b0 = 0; b0 < cols; b0 += r->blen) {
    int64_t b1 = cols - b0 < r->blen ? cols : b0 + r->blen;
    int64_t full = b0 + (b1 - b0) / 16 * 16;
    /* NaN is ignored here and detected through the sum (a NaN exponential
     * makes it NaN). */
    float bm = block_max(dt, x, b0, b1);
    if (bm > m) {
      if (m > -INFINITY) {
        double f = exp((double)m - (double)bm);
        int32_t on[16];
        kvi_lanes(on, acc.ones);
        extra = (extra + (double)kv_hsumi(on)) * f;
        acc.ones = kvi_set(0);
        acc.f = kvd_mul(acc.f, kvd_set(f));
        acc.lost = kv_mul(acc.lost, kv_set((float)f));
      }
      m = bm;
    }
    r->mb[r->nblocks++] = m;
    if (m == -INFINITY) {
      /* Nothing but -inf (and perhaps NaN) so far: no exponentials to add,
       * but a NaN must still make the row bad. */
      for (int64_t c = b0; c < b1; c += 16) {
        kvf v = ld_n(dt, x, c, b1 - c < 16 ? b1 - c : 16);
        nan |= kv_m_any(kv_unord(v, v));
      }
      continue;
    }
    if (m == INFINITY) continue; /* the row is bad */
    struct kv_mref mr = kv_mref_of(m);
    /* keep + c is only formed when keep is a row (a NULL pointer plus an
     * offset is undefined behaviour). */
#define KV_KEEP(c) (keep ? keep + (c) : NULL)
    /* The exponentials are arithmetic on a block already in cache: the
     * memory reads the next block (or the next row) needs are started
     * meanwhile, one line per 16 elements, instead of stalling its max. */
    uintptr_t es = (uintptr_t)kb_vec_size(dt);
    uintptr_t ahead = (uintptr_t)x + (uintptr_t)r->blen * es;
    /* y: the row a second pass will write (log_softmax), fetched too. */
    uintptr_t warm = y ? (uintptr_t)y : ahead;
    if (mr.huge) {
      for (int64_t c = b0; c < full; c += 16) acc_exps(&acc, ld(dt, x, c), 16, &mr, 1, KV_KEEP(c), ones_apart);
      if (full < b1) acc_exps(&acc, ld_n(dt, x, full, b1 - full), b1 - full, &mr, 1, KV_KEEP(full), ones_apart);
    } else {
      for (int64_t c = b0; c < full; c += 16) {
        kv_prefetch(ahead + (uintptr_t)c * es);
        kv_prefetch(warm + (uintptr_t)c * es);
        acc_exps(&acc, ld(dt, x, c), 16, &mr, 0, KV_KEEP(c), ones_apart);
      }
      if (full < b1) acc_exps(&acc, ld_n(dt, x, full, b1 - full), b1 - full, &mr, 0, KV_KEEP(full), ones_apart);
    }
#undef KV_KEEP
  }
  int32_t on[16];
  kvi_lanes(on, acc.ones);
  int64_t ones = kv_hsumi(on);
  double rest = (kvd_hsum16(acc.f) + kvd_hsum16(kvd_from(acc.lost))) + extra;
  r->m = m;
  r->s = (double)ones + rest;
  r->l = log(r->s);
  r->bad = nan || r->s != r->s || !(m > -INFINITY && m < INFINITY);
}

/* c = rh + rl as floats (rh = c rounded; rl what it lost). */
static void kv_split2(double c, float *rh, float *rl) {
  *rh = (float)c;
  *rl = (float)(c - (double)*rh);
}

/*
 * The second pass of softmax and of the cross-entropy gradient:
 * y = f c_b, with f = e^(x - m_b) rounded to float as the first pass formed
 * it and the double c_b = e^(m_b - m) coef / s; the product is rounded once
 * to float (then, for 16-bit rows, once more to
 * the format: the float32 kernel's result rounded, as docs/kernels.md
 * promises).  f comes from kept (the first pass stored it: one read of
 * cols floats) or, when kept is NULL, is recomputed from x, the same
 * function of (x, m_b), to the same bits.  y may be x or kept.
 */
KV_FN void scale_row(int dt, const void *x, const float *kept, void *y, int64_t cols, const struct kv_rowsum *rs,
                     double coef) {
  for (int64_t b = 0; b < rs->nblocks; b++) {
    int64_t b0 = b * rs->blen, b1 = cols - b0 < rs->blen ? cols : b0 + rs->blen;
    double cb = exp((double)rs->mb[b] - (double)rs->m) * coef / rs->s;
    if (!(rs->mb[b] > -INFINITY) || cb == 0.0) {
      /* A block of -inf (before the maximum was finite: nothing was kept
       * there), or weights below every double: zeros of coef's sign. */
      fill_row(dt, (char *)y + b0 * kb_vec_size(dt), b1 - b0, kv_set(0.0f * (float)coef));
      continue;
    }
    kvd c = kvd_set(cb);
    /* Float32 arithmetic where c_b is far from the float limits:
     * ch + cl = c_b 2^64 to 2^-48 (the float pair), fma(f, ch, f * cl)
     * rounds f (ch + cl) once, and the product by 2^-64 is exact unless the
     * result is subnormal (then one more rounding, on a value already held
     * to 2^-24: docs/kernels.md).  The 2^64 keeps f * cl out of the
     * subnormal range wherever the result is a normal float.  Elsewhere the
     * product in double, rounded once. */
    int fast = fabs(cb) >= 0x1p-100 && fabs(cb) <= 0x1p60;
    float chf = 0.0f, clf = 0.0f;
    if (fast) kv_split2(cb * 0x1p64, &chf, &clf);
    kvf ch = kv_set(chf), cl = kv_set(clf);
    struct kv_mref mr = kv_mref_of(rs->mb[b]);
    for (int64_t i = b0; i < b1; i += 16) {
      int64_t n = b1 - i < 16 ? b1 - i : 16;
      kvf f;
      if (kept) {
        f = n == 16 ? ld(KB_VEC_F32, kept, i) : ld_n(KB_VEC_F32, kept, i, n);
      } else {
        kvf lost;
        f = exp_rel_f(n == 16 ? ld(dt, x, i) : ld_n(dt, x, i, n), &mr, mr.huge, &lost);
      }
      kvf v = fast ? kv_mul(kv_fma(f, ch, kv_mul(f, cl)), kv_set(0x1p-64f)) : kvd_to_f(kvd_mul(kvd_from(f), c));
      if (n == 16)
        st(dt, y, i, v);
      else
        st_n(dt, y, i, v, n);
    }
  }
}

/* (x - m) - L in float32: x - m rounded, then L (log s rounded to float)
 * subtracted and the result rounded.  Both terms are <= 0, so nothing
 * cancels and each of the three roundings is at most half an ulp of the
 * result: <= 1.5 ulp in all (docs/kernels.md; the corpus allows 2).  -inf
 * gives -inf; a difference beyond the float range rounds to -inf, as the
 * exact value would. */
KV_FN kvf log_softmax_v(kvf v, kvf m, kvf l) { return kv_sub(kv_sub(v, m), l); }

/* Longest 16-bit softmax row whose exponentials are kept on the stack
 * (8 KiB) rather than recomputed; float32 rows keep them in y itself. */
#define KV_KEEP_STACK 2048

KV_FN void softmax_row(int dt, int want_log, const void *x, void *y, int64_t cols) {
  struct kv_rowsum rs;
  if (!want_log) {
    float stack[KV_KEEP_STACK];
    float *keep = dt == KB_VEC_F32 ? (float *)y : cols <= KV_KEEP_STACK ? stack : NULL;
    row_reduce(dt, x, cols, &rs, keep, 0, NULL);
    if (rs.bad)
      fill_row(dt, y, cols, qnan());
    else
      scale_row(dt, x, keep, y, cols, &rs, 1.0);
    return;
  }
  row_reduce(dt, x, cols, &rs, NULL, 1, y);
  if (rs.bad) {
    fill_row(dt, y, cols, qnan());
    return;
  }
  int64_t c = 0;
  kvf m = kv_set(rs.m), l = kv_set((float)rs.l);
  for (; c + 16 <= cols; c += 16) st(dt, y, c, log_softmax_v(ld(dt, x, c), m, l));
  if (c < cols) st_n(dt, y, c, log_softmax_v(ld_n(dt, x, c, cols - c), m, l), cols - c);
}

KV_FN void softmax_rows(int dt, int want_log, int64_t rows, int64_t cols, const void *x, void *y) {
  int64_t stride = cols * kb_vec_size(dt);
  for (int64_t r = 0; r < rows; r++) softmax_row(dt, want_log, (const char *)x + r * stride, (char *)y + r * stride, cols);
}

KV_ATTR static void softmax(int dt, int want_log, int64_t rows, int64_t cols, const void *x, void *y) {
  KV_PER_DT(softmax, softmax_rows(KB_VEC_F32, want_log, rows, cols, x, y),
            softmax_rows(KB_VEC_BF16, want_log, rows, cols, x, y), softmax_rows(KB_VEC_F16, want_log, rows, cols, x, y))
}

/* e^(x - m) for the first n lanes of v (x - m exact: exp_rel), rounded
 * once to float; 0 in the other lanes. */
KV_FN kvf ce_term(kvf v, int64_t n, const struct kv_mref *mr, int huge) {
  kvf lost; /* unused here: the compiler drops its arithmetic */
  kvf f = exp_rel_f(v, mr, huge, &lost);
  return n < 16 ? kv_sel(kv_mask_first(n), f, kv_set(0.0f)) : f;
}

/* a plus the terms of the (at most 16) elements from *c on, below end,
 * and *c moved past them; a as is when none are left. */
KV_FN kvf ce_add_next(kvf a, const float *x, int64_t *c, int64_t end, const struct kv_mref *mr, int huge) {
  if (*c >= end) return a;
  int64_t n = end - *c < 16 ? end - *c : 16;
  a = kv_add(a, ce_term(kv_load_n(x + *c, n), n, mr, huge));
  *c += 16;
  return a;
}

/*
 * The cross-entropy's sum s = sum e^(x - m) in float32 arithmetic (issue
 * 28's contract; the bound is in docs/kernels.md, "cross_entropy"): each
 * term with its argument exact and rounded once; per group of 256
 * elements the terms are added in four float chains (vector j of the
 * group into chain j mod 4) combined as (a0 + a1) + (a2 + a3), so a term
 * passes at most five rounded additions; the groups' sums go into 16
 * double lanes, summed by kvd_hsum16.  The row is read twice (its maximum,
 * then the terms); a 32000-class row is 125 KiB, in L2 for the second read.
 */
KV_FN double ce_sum_exp(const float *x, int64_t cols, const struct kv_mref *mr, int huge) {
  kvd acc = kvd_set(0.0);
  kvf zero = kv_set(0.0f);
  uintptr_t ahead = (uintptr_t)(x + cols); /* a prefetch past the end does not fault */
  for (int64_t g = 0; g < cols; g += 256) {
    int64_t end = cols - g < 256 ? cols : g + 256;
    kvf a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    int64_t c = g;
    for (; c + 64 <= end; c += 64) {
      /* The next row's four lines, fetched while these exponentials are
       * computed (its maximum then reads from cache). */
      for (int64_t l = 0; l < 64; l += 16) kv_prefetch(ahead + (uintptr_t)(c + l) * sizeof(float));
      a0 = kv_add(a0, ce_term(kv_load(x + c), 16, mr, huge));
      a1 = kv_add(a1, ce_term(kv_load(x + c + 16), 16, mr, huge));
      a2 = kv_add(a2, ce_term(kv_load(x + c + 32), 16, mr, huge));
      a3 = kv_add(a3, ce_term(kv_load(x + c + 48), 16, mr, huge));
    }
    /* Under 64 elements left: vectors j = 0, 1, 2, 3 of them into chains
     * 0, 1, 2, 3 (continuing the round), the last one partial. */
    a0 = ce_add_next(a0, x, &c, end, mr, huge);
    a1 = ce_add_next(a1, x, &c, end, mr, huge);
    a2 = ce_add_next(a2, x, &c, end, mr, huge);
    a3 = ce_add_next(a3, x, &c, end, mr, huge);
    acc = kvd_add(acc, kvd_from(kv_add(kv_add(a0, a1), kv_add(a2, a3))));
  }
  return kvd_hsum16(acc);
}

KV_ATTR static void ce_forward(int64_t rows, int64_t cols, const float *logits, const int32_t *targets,
                               int32_t ignore_index, float *losses) {
  for (int64_t r = 0; r < rows; r++) {
    int32_t t = targets[r];
    if (t == ignore_index) {
      losses[r] = 0.0f;
      continue;
    }
    const float *x = logits + r * cols;
    float m = block_max(KB_VEC_F32, x, 0, cols);
    if (!(m > -INFINITY && m < INFINITY)) { /* all -inf or NaN, or +inf */
      losses[r] = NAN;
      continue;
    }
    struct kv_mref mr = kv_mref_of(m);
    double s = mr.huge ? ce_sum_exp(x, cols, &mr, 1) : ce_sum_exp(x, cols, &mr, 0);
    /* A NaN element makes s NaN: the loss is then the canonical NaN. */
    losses[r] = s == s ? (float)(((double)m - (double)x[t]) + log(s)) : NAN;
  }
}

KV_ATTR static void ce_backward(int64_t rows, int64_t cols, const float *logits, const int32_t *targets,
                                int32_t ignore_index, double scale, float *dlogits) {
  for (int64_t r = 0; r < rows; r++) {
    int32_t t = targets[r];
    const float *x = logits + r * cols;
    float *g = dlogits + r * cols;
    if (t == ignore_index) {
      fill_row(KB_VEC_F32, g, cols, kv_set(0.0f));
      continue;
    }
    /* Read before the row is overwritten (dlogits may be logits). */
    double xt = (double)x[t];
    struct kv_rowsum rs;
    row_reduce(KB_VEC_F32, x, cols, &rs, g, 0, NULL);
    if (rs.bad) {
      fill_row(KB_VEC_F32, g, cols, qnan());
      continue;
    }
    scale_row(KB_VEC_F32, NULL, g, g, cols, &rs, scale);
    /* The target: (p - 1) * scale in double, p = e^(x_t - m) / s. */
    g[t] = (float)((exp(xt - (double)rs.m) / rs.s - 1.0) * scale);
  }
}

/* ---- rmsnorm, layernorm ---- */

/* 16-bit rows and weights up to KV_KEEP_STACK elements are widened to float
 * once (the weights once per call, each row once) and the row kernels then
 * read float32 from L1, instead of widening the row on every pass and the
 * weights on every row.  Widening is exact, so the results are the same. */
KV_FN void widen_row(int dt, const void *src, int64_t n, float *dst) {
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) kv_store(dst + c, ld(dt, src, c));
  if (c < n) kv_store_n(dst + c, ld_n(dt, src, c, n - c), n - c);
}

/* 1 / sqrt(v) of a row's statistic in double, as the float pair ih + il
 * (il: what rounding ih lost), and whether the float32 output pass may use
 * it: inv within [2^-60, 2^60] and the row's largest |x - centre| below
 * 2^100 (so neither the pair nor any product over- or underflows).  Rows
 * outside (all-zero rows with eps = 0, values near the float limits, NaN)
 * take the output pass in double, to the same formula. */
struct kv_inv {
  double inv;
  float ih, il;
  int fast;
};

KV_FN struct kv_inv inv_pair(double var, double eps, int64_t cols) {
  struct kv_inv r;
  r.inv = 1.0 / sqrt(var + eps);
  r.fast = r.inv >= 0x1p-60 && r.inv <= 0x1p60 && var * (double)cols < 0x1p200;
  r.ih = r.fast ? (float)r.inv : 0.0f;
  r.il = r.fast ? (float)(r.inv - (double)r.ih) : 0.0f;
  return r;
}

/* x * inv in float32 arithmetic, rounded once: fma(x, ih, x * il) (the
 * small product's rounding is below 2^-48 of the result). */
KV_FN kvf mul_inv(kvf x, kvf ih, kvf il) { return kv_fma(x, ih, kv_mul(x, il)); }

/* The output pass of rmsnorm_row: t = x * inv rounded once, y = t * w
 * rounded once (float32; docs/kernels.md: within 0.5 ulp of y plus 2^-24
 * |y|), or in double rounded once for the rows inv_pair sends there. */
KV_FN void rmsnorm_out(int xdt, const void *xr, int wdt, const void *w, int ydt, void *yr, int64_t cols,
                       struct kv_inv iv, uintptr_t next) {
  int64_t full = cols / 16 * 16, n = cols - full;
  if (!iv.fast) {
    kvd inv = kvd_set(iv.inv);
    for (int64_t c = 0; c < full; c += 16)
      st(ydt, yr, c, canon(kvd_to_f(kvd_mul(kvd_mul(kvd_from(ld(xdt, xr, c)), inv), kvd_from(ld(wdt, w, c))))));
    if (n > 0)
      st_n(ydt, yr, full,
           canon(kvd_to_f(kvd_mul(kvd_mul(kvd_from(ld_n(xdt, xr, full, n)), inv), kvd_from(ld_n(wdt, w, full, n))))),
           n);
    return;
  }
  kvf ih = kv_set(iv.ih), il = kv_set(iv.il);
  uintptr_t es = (uintptr_t)kb_vec_size(ydt);
  for (int64_t c = 0; c < full; c += 16) {
    kv_prefetch(next + (uintptr_t)c * es);
    st_canon(ydt, yr, c, kv_mul(mul_inv(ld(xdt, xr, c), ih, il), ld(wdt, w, c)));
  }
  if (n > 0) st_n(ydt, yr, full, canon(kv_mul(mul_inv(ld_n(xdt, xr, full, n), ih, il), ld_n(wdt, w, full, n))), n);
}

/* One row: x of dtype dt, w of wdt (compile-time constants at every call).
 * With add (add_rmsnorm), the first pass is exactly binary(KB_VEC_ADD, x,
 * add -> x) and the norm is of what it stored: each sum is stored in place
 * (xr is then the caller's writable residual row) and the sum of squares
 * is of the stored value (rounded to the 16-bit type, widened back from
 * the register: st_back), so it needs no pass of its own.  With keep (16-bit rows), the first pass also stores
 * the row widened there and the output pass reads it.  The memory the
 * passes will need is fetched while the other pass computes: the row of y
 * (and add's next row) during the first pass, the next row of x (next: its
 * address; any address when there is none, a prefetch does not fault)
 * during the output pass. */
KV_FN void rmsnorm_row(int dt, const void *xr, const void *add, int wdt, const void *w, void *yr, int64_t cols,
                       float eps, float *keep, uintptr_t next, uintptr_t next_add) {
  int64_t full = cols / 16 * 16, n = cols - full;
  kvd acc = kvd_set(0.0);
  uintptr_t es = (uintptr_t)kb_vec_size(dt);
  for (int64_t c = 0; c < full; c += 16) {
    kv_prefetch((uintptr_t)yr + (uintptr_t)c * es);
    kvf v;
    if (add) {
      kv_prefetch(next_add + (uintptr_t)c * es);
      v = add_st_back(dt, (void *)xr, c, ld(dt, xr, c), ld(dt, add, c)); /* the stored, rounded sum */
    } else {
      v = ld(dt, xr, c);
    }
    if (keep) kv_store(keep + c, v);
    kvd d = kvd_from(v);
    acc = kvd_fma(d, d, acc);
  }
  if (n > 0) {
    kvf v;
    if (add) {
      v = binop(KB_VEC_ADD, ld_n(dt, xr, full, n), ld_n(dt, add, full, n));
      st_n(dt, (void *)xr, full, v, n);
      if (dt != KB_VEC_F32) v = ld_n(dt, xr, full, n);
    } else {
      v = ld_n(dt, xr, full, n);
    }
    if (keep) kv_store_n(keep + full, v, n);
    kvd d = kvd_from(v);
    acc = kvd_fma(d, d, acc);
  }
  struct kv_inv inv = inv_pair(kvd_hsum16(acc) / (double)cols, (double)eps, cols);
  if (keep)
    rmsnorm_out(KB_VEC_F32, keep, wdt, w, dt, yr, cols, inv, next);
  else
    rmsnorm_out(dt, xr, wdt, w, dt, yr, cols, inv, next);
}

/* Row r of rows stride bytes apart from base, or NULL without base. */
KV_FN const char *row_or_null(const void *base, int64_t r, int64_t stride) {
  return base ? (const char *)base + r * stride : NULL;
}

/* rmsnorm's rows, and add_rmsnorm's with add (rows of the same shape as
 * x; x written): 16-bit weights are widened once per call. */
KV_FN void rmsnorm_rows(int dt, int64_t rows, int64_t cols, const void *x, const void *add, const void *w, float eps,
                        void *y) {
  int64_t stride = cols * kb_vec_size(dt);
  const char *xp = (const char *)x;
  char *yp = (char *)y;
  if (dt != KB_VEC_F32 && cols <= KV_KEEP_STACK) {
    float wf[KV_KEEP_STACK], xf[KV_KEEP_STACK];
    widen_row(dt, w, cols, wf);
    for (int64_t r = 0; r < rows; r++)
      rmsnorm_row(dt, xp + r * stride, row_or_null(add, r, stride), KB_VEC_F32, wf, yp + r * stride, cols, eps, xf,
                  (uintptr_t)(xp + (r + 1) * stride), (uintptr_t)row_or_null(add, r + 1, stride));
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    rmsnorm_row(dt, xp + r * stride, row_or_null(add, r, stride), dt, w, yp + r * stride, cols, eps, NULL,
                (uintptr_t)(xp + (r + 1) * stride), (uintptr_t)row_or_null(add, r + 1, stride));
}

KV_ATTR static void rmsnorm(int dt, int64_t rows, int64_t cols, const void *x, const void *w, float eps, void *y) {
  KV_PER_DT(rmsnorm, rmsnorm_rows(KB_VEC_F32, rows, cols, x, NULL, w, eps, y),
            rmsnorm_rows(KB_VEC_BF16, rows, cols, x, NULL, w, eps, y),
            rmsnorm_rows(KB_VEC_F16, rows, cols, x, NULL, w, eps, y))
}

/* Per row binary(KB_VEC_ADD, residual, x -> residual), then rmsnorm of the
 * stored row, in one pass over memory (rmsnorm_row with add). */
KV_ATTR static void add_rmsnorm(int dt, int64_t rows, int64_t cols, void *residual, const void *x, const void *w,
                                float eps, void *y) {
  KV_PER_DT(add_rmsnorm, rmsnorm_rows(KB_VEC_F32, rows, cols, residual, x, w, eps, y),
            rmsnorm_rows(KB_VEC_BF16, rows, cols, residual, x, w, eps, y),
            rmsnorm_rows(KB_VEC_F16, rows, cols, residual, x, w, eps, y))
}

/* Elements per block of layernorm's statistics: 4 KiB of float32, in L1
 * for the second look at the block. */
#define KV_LN_BLOCK 1024

/*
 * Mean and biased variance of a row without catastrophic cancellation, in
 * one read: per block of KV_LN_BLOCK elements, d = x - K with K the block's
 * first element, S1 = sum d and S2 = sum d^2 (16 double lanes each, summed
 * by kvd_hsum16); the block's mean is K + S1 / nb and its sum of squares
 * about it S2 - S1^2 / nb.  That subtraction cancels at most a factor nb:
 * (K - mean_b)^2 <= M2_b because K is one of the block's elements, so the
 * relative error of M2_b stays below nb * (nb / 16 + 4) * 2^-53 (2^-37 for
 * full blocks).  Blocks are merged in order with Chan et al.'s pairwise
 * update, M2 += M2_b + d^2 n n_b / (n + n_b).
 */
KV_FN void row_moments(int dt, const void *x, int64_t cols, double *mean, double *var, uintptr_t warm, uintptr_t warm_es) {
  double n = 0.0, mu = 0.0, m2 = 0.0;
  for (int64_t b0 = 0; b0 < cols; b0 += KV_LN_BLOCK) {
    int64_t b1 = cols - b0 < KV_LN_BLOCK ? cols : b0 + KV_LN_BLOCK;
    int64_t full = b0 + (b1 - b0) / 16 * 16, tail = b1 - full;
    double nb = (double)(b1 - b0);
    float first[16];
    kv_lanes(first, ld_n(dt, x, b0, 1)); /* x[b0] widened (exact) */
    double kk = (double)first[0];
    kvd k = kvd_set(kk);
    kvd s1 = kvd_set(0.0), s2 = kvd_set(0.0);
    for (int64_t c = b0; c < full; c += 16) {
      kv_prefetch(warm + (uintptr_t)c * warm_es);
      kvd d = kvd_sub(kvd_from(ld(dt, x, c)), k);
      s1 = kvd_add(s1, d);
      s2 = kvd_fma(d, d, s2);
    }
    if (tail > 0) {
      kvd d = kvd_sel(kv_mask_first(tail), kvd_sub(kvd_from(ld_n(dt, x, full, tail)), k), kvd_set(0.0));
      s1 = kvd_add(s1, d);
      s2 = kvd_fma(d, d, s2);
    }
    double t1 = kvd_hsum16(s1), t2 = kvd_hsum16(s2);
    double mb = kk + t1 / nb, m2b = t2 - t1 * (t1 / nb), nn = n + nb, d = mb - mu;
    if (m2b < 0.0) m2b = 0.0;
    mu = mu + d * (nb / nn);
    m2 = m2 + m2b + d * d * (n * nb / nn);
    n = nn;
  }
  *mean = mu;
  *var = m2 / n;
}

/* ((x - mean) * inv) [* w] [+ b] in double, rounded once: the rows
 * inv_pair keeps off the float32 pass. */
KV_FN kvf ln_v_f64(kvf v, kvd mean, kvd inv, int has_w, kvf w, int has_b, kvf b) {
  kvd t = kvd_mul(kvd_sub(kvd_from(v), mean), inv);
  if (has_w) t = kvd_mul(t, kvd_from(w));
  if (has_b) t = kvd_add(t, kvd_from(b));
  return canon(kvd_to_f(t));
}

/* The float32 output: x - mh as the exact pair h + l (TwoSum), l less ml
 * (mean = mh + ml); t = (h + l) * (ih + il) rounded once; then t * w + b
 * as one fused multiply-add (t * w, or t + b, alone without the other).
 * NaN lanes are left as they are: the caller stores the result canonical
 * (st_canon). */
KV_FN kvf ln_v(kvf v, kvf nmh, kvf ml, kvf ih, kvf il, int has_w, kvf w, int has_b, kvf b) {
  kvf h, l;
  two_sum(v, nmh, &h, &l);
  l = kv_sub(l, ml);
  kvf t = kv_fma(h, ih, kv_fma(l, ih, kv_mul(h, il)));
  if (has_w && has_b) return kv_fma(t, w, b);
  if (has_w) return kv_mul(t, w);
  if (has_b) return kv_add(t, b);
  return t;
}

/* One row; dtypes and prefetches (next: the next row of x, in ydt) as
 * rmsnorm_row's. */
KV_FN void layernorm_row(int xdt, const void *xr, int wdt, int has_w, const void *w, int has_b, const void *b, int ydt,
                         void *yr, int64_t cols, float eps, uintptr_t next) {
  int64_t full = cols / 16 * 16, n = cols - full;
  kvf zero = kv_set(0.0f);
  double mean, var;
  uintptr_t es = (uintptr_t)kb_vec_size(ydt);
  row_moments(xdt, xr, cols, &mean, &var, (uintptr_t)yr, es);
  struct kv_inv iv = inv_pair(var, (double)eps, cols);
  if (!iv.fast) {
    kvd vm = kvd_set(mean), inv = kvd_set(iv.inv);
    for (int64_t c = 0; c < full; c += 16)
      st(ydt, yr, c,
         ln_v_f64(ld(xdt, xr, c), vm, inv, has_w, has_w ? ld(wdt, w, c) : zero, has_b, has_b ? ld(wdt, b, c) : zero));
    if (n > 0)
      st_n(ydt, yr, full,
           ln_v_f64(ld_n(xdt, xr, full, n), vm, inv, has_w, has_w ? ld_n(wdt, w, full, n) : zero, has_b,
                    has_b ? ld_n(wdt, b, full, n) : zero),
           n);
    return;
  }
  float mh = (float)mean;
  kvf nmh = kv_set(-mh), ml = kv_set((float)(mean - (double)mh)), ih = kv_set(iv.ih), il = kv_set(iv.il);
  for (int64_t c = 0; c < full; c += 16) {
    kv_prefetch(next + (uintptr_t)c * es);
    st_canon(ydt, yr, c,
             ln_v(ld(xdt, xr, c), nmh, ml, ih, il, has_w, has_w ? ld(wdt, w, c) : zero, has_b,
                  has_b ? ld(wdt, b, c) : zero));
  }
  if (n > 0)
    st_n(ydt, yr, full,
         canon(ln_v(ld_n(xdt, xr, full, n), nmh, ml, ih, il, has_w, has_w ? ld_n(wdt, w, full, n) : zero, has_b,
                    has_b ? ld_n(wdt, b, full, n) : zero)),
         n);
}

KV_FN void layernorm_rows(int dt, int has_w, int has_b, int64_t rows, int64_t cols, const void *x, const void *w,
                          const void *b, float eps, void *y) {
  int64_t stride = cols * kb_vec_size(dt);
  if (dt != KB_VEC_F32 && cols <= KV_KEEP_STACK) {
    float wf[KV_KEEP_STACK], bf[KV_KEEP_STACK], xf[KV_KEEP_STACK];
    if (has_w) widen_row(dt, w, cols, wf);
    if (has_b) widen_row(dt, b, cols, bf);
    for (int64_t r = 0; r < rows; r++) {
      widen_row(dt, (const char *)x + r * stride, cols, xf);
      layernorm_row(KB_VEC_F32, xf, KB_VEC_F32, has_w, wf, has_b, bf, dt, (char *)y + r * stride, cols, eps,
                    (uintptr_t)x + (uintptr_t)((r + 1) * stride));
    }
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    layernorm_row(dt, (const char *)x + r * stride, dt, has_w, w, has_b, b, dt, (char *)y + r * stride, cols, eps,
                  (uintptr_t)x + (uintptr_t)((r + 1) * stride));
}

#define KV_LN_DT(DT)                                                                                   \
  do {                                                                                                 \
    if (w != NULL && b != NULL)                                                                        \
      layernorm_rows(DT, 1, 1, rows, cols, x, w, b, eps, y);                                           \
    else if (w != NULL)                                                                                \
      layernorm_rows(DT, 1, 0, rows, cols, x, w, b, eps, y);                                           \
    else if (b != NULL)                                                                                \
      layernorm_rows(DT, 0, 1, rows, cols, x, w, b, eps, y);                                           \
    else                                                                                               \
      layernorm_rows(DT, 0, 0, rows, cols, x, w, b, eps, y);                                           \
  } while (0)

KV_ATTR static void layernorm(int dt, int64_t rows, int64_t cols, const void *x, const void *w, const void *b, float eps,
                              void *y) {
  KV_PER_DT(layernorm, KV_LN_DT(KB_VEC_F32), KV_LN_DT(KB_VEC_BF16), KV_LN_DT(KB_VEC_F16))
}

/* ---- argmax ---- */

static const int32_t kv_iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/*
 * Each lane keeps the first largest element of its column c = lane (mod
 * 16), a NaN beating every number and the first NaN staying; the lanes are
 * then combined with the same rule and ties to the lower index, which is the
 * sequential definition (first index of the maximum, first NaN wins).
 */
KV_ATTR static void argmax(int64_t rows, int64_t cols, const float *x, int32_t *out) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    kvf best = kv_set(-INFINITY);
    kvi bi = kvi_load(kv_iota), idx = bi;
    kvi step = kvi_set(16);
    int64_t c = 0;
    for (; c < cols; c += 16) {
      kvf v = cols - c >= 16 ? kv_load(xr + c) : kv_sel(kv_mask_first(cols - c), kv_load_n(xr + c, cols - c), best);
      kvm vn = kv_unord(v, v), bn = kv_unord(best, best);
      kvm upd = kv_m_or(kv_gt(v, best), kv_m_andnot(vn, bn));
      best = kv_sel(upd, v, best);
      bi = kvi_sel(upd, idx, bi);
      idx = kvi_add(idx, step);
    }
    float bv[16];
    int32_t bx[16];
    kv_lanes(bv, best);
    kvi_lanes(bx, bi);
    /* Lanes past cols (rows shorter than 16) never left their start. */
    int32_t win = -1;
    float wv = 0.0f;
    for (int i = 0; i < 16; i++) {
      if (bx[i] >= cols) continue;
      bool nan_i = bv[i] != bv[i], nan_w = wv != wv, take;
      if (win < 0)
        take = true;
      else if (nan_i != nan_w)
        take = nan_i;
      else if (nan_i)
        take = bx[i] < win;
      else
        take = bv[i] > wv || (bv[i] == wv && bx[i] < win);
      if (take) {
        win = bx[i];
        wv = bv[i];
      }
    }
    out[r] = win;
  }
}

/* ---- rope ---- */

/* pi/2 = P1 + P2 + P3; 2/pi; the Taylor coefficients of sin (-1/3! ..
 * -1/15!) and cos (-1/2! .. 1/16!). */
#define KV_PIO2_1 0x1.921fb54442d18p+0
#define KV_PIO2_2 0x1.1a62633145c07p-54
#define KV_PIO2_3 (-0x1.f1976b7ed8fbcp-110)
#define KV_2OPI 0x1.45f306dc9c883p-1
static const double kv_sin_c[7] = {-0x1.5555555555555p-3, 0x1.1111111111111p-7,  -0x1.a01a01a01a01ap-13,
                                   0x1.71de3a556c734p-19, -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33,
                                   -0x1.ae7f3e733b81fp-41};
static const double kv_cos_c[8] = {-0x1p-1,           0x1.5555555555555p-5,  -0x1.6c16c16c16c17p-10,
                                   0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29,
                                   -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45};
/* sin(r + q pi/2) = S[q] sin r + C[q] cos r, cos(r + q pi/2) likewise:
 * each a selection (one product is an exact zero), indexed by q mod 4
 * (repeated to 8 entries for kvd_lookup8). */
static const double kv_sin_s[8] = {1, 0, -1, 0, 1, 0, -1, 0}, kv_sin_c2[8] = {0, 1, 0, -1, 0, 1, 0, -1};
static const double kv_cos_s[8] = {0, -1, 0, 1, 0, -1, 0, 1}, kv_cos_c2[8] = {1, 0, -1, 0, 1, 0, -1, 0};

/*
 * sin a and cos a in double for 0 <= a < 2^31 (rope's angles): q =
 * round(a 2/pi), r = a - q pi/2 in three fused steps (the first exact, the
 * rest below 2^-100 relative for these q), Taylor polynomials on
 * |r| <= pi/4 (truncation below 2^-54), and the quadrant by selection.
 * Within a few double ulps of the exact values.
 */
KV_FN void sincos_d(kvd a, kvd *sn, kvd *cs) {
  kvd sh = kvd_set(KB_VM_EXPD_SHIFTER);
  kvd q = kvd_sub(kvd_fma(a, kvd_set(KV_2OPI), sh), sh);
  kvd r = kvd_fma(q, kvd_set(-KV_PIO2_1), a);
  r = kvd_fma(q, kvd_set(-KV_PIO2_2), r);
  r = kvd_fma(q, kvd_set(-KV_PIO2_3), r);
  kvd r2 = kvd_mul(r, r);
  kvd ps = kvd_set(kv_sin_c[6]);
  for (int i = 5; i >= 0; i--) ps = kvd_fma(ps, r2, kvd_set(kv_sin_c[i]));
  kvd pc = kvd_set(kv_cos_c[7]);
  for (int i = 6; i >= 0; i--) pc = kvd_fma(pc, r2, kvd_set(kv_cos_c[i]));
  kvd s = kvd_fma(kvd_mul(r, r2), ps, r);
  kvd c = kvd_fma(r2, pc, kvd_set(1.0));
  kvi qi = kvd_to_int(q);
  *sn = kvd_fma(kvd_lookup8(kv_sin_s, qi), s, kvd_mul(kvd_lookup8(kv_sin_c2, qi), c));
  *cs = kvd_fma(kvd_lookup8(kv_cos_s, qi), s, kvd_mul(kvd_lookup8(kv_cos_c2, qi), c));
}

/* Pairs of the half-rotation per block of 256: the angles of one position. */
#define KV_ROPE_CHUNK 256

/* y0 = x0 cos - x1 sin, y1 = x1 cos + x0 sin for 16 pairs, in double
 * (products and sums each rounded, as docs/kernels.md writes them), one
 * rounding to float; NaN canonical (two NaN inputs may meet). */
KV_FN void rope_pairs(const float *x, float *y, int64_t h, int64_t n, kvd c, kvd s) {
  /* Whole vectors take plain loads and stores: avx2's masked store costs
   * several times a plain one on some cores (AMD Zen). */
  kvf a = n == 16 ? kv_load(x) : kv_load_n(x, n), b = n == 16 ? kv_load(x + h) : kv_load_n(x + h, n);
  kvd a0 = kvd_from(a), b0 = kvd_from(b);
  kvf ya = canon(kvd_to_f(kvd_sub(kvd_mul(a0, c), kvd_mul(b0, s))));
  kvf yb = canon(kvd_to_f(kvd_add(kvd_mul(b0, c), kvd_mul(a0, s))));
  if (n == 16) {
    kv_store(y, ya);
    kv_store(y + h, yb);
  } else {
    kv_store_n(y, ya, n);
    kv_store_n(y + h, yb, n);
  }
}

KV_ATTR static void rope(int64_t s0, int64_t s1, int64_t heads, int64_t head_dim, const float *x,
                         const int32_t *positions, double theta, float *y) {
  int64_t h = head_dim / 2, row = heads * head_dim;
  double invf[KV_ROPE_CHUNK], cs[KV_ROPE_CHUNK], sn[KV_ROPE_CHUNK];
  for (int64_t i0 = 0; i0 < h; i0 += KV_ROPE_CHUNK) {
    int64_t ni = h - i0 < KV_ROPE_CHUNK ? h - i0 : KV_ROPE_CHUNK;
    for (int64_t i = 0; i < ni; i++) invf[i] = pow(theta, -(double)(2 * (i0 + i)) / (double)head_dim);
    for (int64_t s = s0; s < s1; s++) {
      kvd pos = kvd_set((double)positions[s]);
      for (int64_t i = 0; i < ni; i += 16) {
        double l[16];
        for (int k = 0; k < 16; k++) l[k] = i + k < ni ? invf[i + k] : 0.0;
        kvd a, sv, cv;
        kvd_load16(l, &a);
        sincos_d(kvd_mul(pos, a), &sv, &cv);
        kvd_lanes(sn + i, sv);
        kvd_lanes(cs + i, cv);
      }
      for (int64_t hh = 0; hh < heads; hh++) {
        const float *xr = x + s * row + hh * head_dim + i0;
        float *yr = y + s * row + hh * head_dim + i0;
        for (int64_t i = 0; i < ni; i += 16) {
          kvd c, sv;
          kvd_load16(cs + i, &c);
          kvd_load16(sn + i, &sv);
          rope_pairs(xr + i, yr + i, h, ni - i < 16 ? ni - i : 16, c, sv);
        }
      }
    }
  }
}

/* sn[i] = sin a[i], cs[i] = cos a[i] in double, i < n, 0 <= a[i] < 2^31:
 * rope's sincos_d, for kb_rope_ex (kernels/cpu/decoder/rope_ex.c), which
 * forms its angles itself and must get kb_rope's bits for kb_rope's angles. */
KV_ATTR static void sincos_f64(int64_t n, const double *a, double *sn, double *cs) {
  for (int64_t i = 0; i < n; i += 16) {
    int64_t len = n - i < 16 ? n - i : 16;
    double l[16], ls[16], lc[16];
    for (int k = 0; k < 16; k++) l[k] = k < len ? a[i + k] : 0.0;
    kvd av, sv, cv;
    kvd_load16(l, &av);
    sincos_d(av, &sv, &cv);
    kvd_lanes(ls, sv);
    kvd_lanes(lc, cv);
    memcpy(sn + i, ls, (size_t)len * sizeof(double));
    memcpy(cs + i, lc, (size_t)len * sizeof(double));
  }
}

/* ---- sampling weights ---- */

KV_ATTR static void exp_weights(int64_t n, const float *x, double m, double temperature, double *w) {
  kvd vm = kvd_set(m), vt = kvd_set(temperature);
  for (int64_t i = 0; i < n; i += 16) {
    int64_t len = n - i < 16 ? n - i : 16;
    double l[16];
    /* -inf - m = -inf, and e^-inf = 0 (the exp's clamp). */
    kvd_lanes(l, kvd_exp(kvd_div(kvd_sub(kvd_from(kv_load_n(x + i, len)), vm), vt)));
    memcpy(w + i, l, (size_t)len * sizeof(double));
  }
}

/* ---- AdamW ---- */

KV_FN void adamw_vec(int small_w1, float *p, const float *g, float *m, float *v, int64_t len,
                     const struct kb_adamw_coef *k) {
  kvf gv = kv_load_n(g, len), pv = kv_load_n(p, len), mv = kv_load_n(m, len), vv = kv_load_n(v, len);
  pv = kv_mul(pv, kv_set(k->decay));
  kvf gm = kv_sub(gv, mv);
  mv = small_w1 ? kv_add(mv, kv_mul(kv_set(k->w1), gm)) : kv_sub(gv, kv_mul(gm, kv_set(k->one_minus_w1)));
  vv = kv_mul(vv, kv_set(k->beta2));
  vv = kv_add(vv, kv_mul(kv_mul(kv_set(k->w2), gv), gv));
  kvf denom = kv_add(kv_div(kv_sqrt(vv), kv_set(k->bc2_sqrt)), kv_set(k->eps));
  pv = kv_add(pv, kv_div(kv_mul(kv_set(k->step_size), mv), denom));
  kv_store_n(p, canon(pv), len);
  kv_store_n(m, canon(mv), len);
  kv_store_n(v, canon(vv), len);
}

/* adamw.c's sequence, one rounding per operation, no fused steps. */
KV_FN void adamw_loop(int small_w1, int64_t n, float *p, const float *g, float *m, float *v,
                      const struct kb_adamw_coef *k) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) adamw_vec(small_w1, p + i, g + i, m + i, v + i, 16, k);
  if (i < n) adamw_vec(small_w1, p + i, g + i, m + i, v + i, n - i, k);
}

KV_ATTR static void adamw(int64_t n, float *p, const float *g, float *m, float *v, const struct kb_adamw_coef *k) {
  if (k->small_w1)
    adamw_loop(1, n, p, g, m, v, k);
  else
    adamw_loop(0, n, p, g, m, v, k);
}

#define KV_OPS_INIT                                                                                             \
  {                                                                                                             \
    .math = {[KB_VM_EXP] = math_exp,                                                                            \
             [KB_VM_LOG] = math_log,                                                                            \
             [KB_VM_TANH] = math_tanh,                                                                          \
             [KB_VM_ERF] = math_erf,                                                                            \
             [KB_VM_SILU] = math_silu,                                                                          \
             [KB_VM_GELU] = math_gelu,                                                                          \
             [KB_VM_GELU_TANH] = math_gelu_tanh},                                                               \
    .exp_f64 = math_exp_f64,                                                                                    \
    .unary = unary, .gated = gated, .binary = binary, .scale = scale, .add_bias = add_bias, .convert = convert,                \
    .softmax = softmax, .rmsnorm = rmsnorm, .add_rmsnorm = add_rmsnorm, .layernorm = layernorm, .ce_forward = ce_forward,                  \
    .ce_backward = ce_backward, .argmax = argmax, .rope = rope, .sincos_f64 = sincos_f64, .exp_weights = exp_weights, .adamw = adamw,                                              \
  }
