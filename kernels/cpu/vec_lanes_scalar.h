/* vec_lanes_scalar.h - the 16-lane vocabulary of the vector kernels
 * (vec_lanes.h) at the scalar level: arrays of 16 floats handled one lane at
 * a time, with exactly the semantics of the x86 instructions the vector
 * levels use (maxps is a > b ? a : b, fmaf is one rounding, ...).  The
 * reference level; included by vec_scalar.c alone. */
/* No include guard: it is included once, and the amalgamation expands it
 * inside vec_scalar.c, where its names (kvf, kv_add, ...) are that file's. */

#include <math.h>
#include <string.h>

#include "half.h"
#include "vmath_scalar.h"

#define KV_ATTR
/* Not always_inline, unlike the vector levels: forcing every 16-lane loop
 * inline makes gcc take about 50 s on vec_scalar.c (3 s without), and the
 * scalar level is the reference, not the fast path on x86. */
#define KV_FN __attribute__((unused)) static inline

typedef struct {
  float v[16];
} kvf;
typedef struct {
  int32_t v[16];
} kvi;
typedef uint32_t kvm; /* bit i: lane i */
typedef struct {
  double v[16];
} kvd;

#define KV_EACH(i) for (int i = 0; i < 16; i++)

/* ---- floats ---- */

KV_FN kvf kv_set(float a) {
  kvf r;
  KV_EACH(i) r.v[i] = a;
  return r;
}
KV_FN kvm kv_mask_first(int64_t n) { return n >= 16 ? 0xffffu : (n <= 0 ? 0u : (1u << n) - 1u); }
KV_FN kvf kv_load(const float *p) {
  kvf r;
  memcpy(r.v, p, sizeof r.v);
  return r;
}
KV_FN kvf kv_load_n(const float *p, int64_t n) {
  kvf r = kv_set(0.0f);
  memcpy(r.v, p, (size_t)(n < 16 ? n : 16) * sizeof(float));
  return r;
}
/* A hint that the 64-byte line holding address p will be read soon; no
 * effect on any result, and p need not point into an object (a prefetch
 * does not fault). */
KV_FN void kv_prefetch(uintptr_t p) { (void)p; }

KV_FN void kv_store(float *p, kvf v) { memcpy(p, v.v, sizeof v.v); }
KV_FN void kv_store_n(float *p, kvf v, int64_t n) { memcpy(p, v.v, (size_t)(n < 16 ? n : 16) * sizeof(float)); }

#define KV_F2(name, expr)        \
  KV_FN kvf name(kvf x, kvf y) { \
    kvf r;                       \
    KV_EACH(i) {                 \
      float a = x.v[i];          \
      float b = y.v[i];          \
      r.v[i] = (expr);           \
    }                            \
    return r;                    \
  }
#define KV_F3(name, expr)               \
  KV_FN kvf name(kvf x, kvf y, kvf z) { \
    kvf r;                              \
    KV_EACH(i) {                        \
      float a = x.v[i];                 \
      float b = y.v[i];                 \
      float c = z.v[i];                 \
      r.v[i] = (expr);                  \
    }                                   \
    return r;                           \
  }
#define KV_M2(name, expr)        \
  KV_FN kvm name(kvf x, kvf y) { \
    kvm r = 0;                   \
    KV_EACH(i) {                 \
      float a = x.v[i];          \
      float b = y.v[i];          \
      if (expr) r |= 1u << i;    \
    }                            \
    return r;                    \
  }

KV_F2(kv_add, a + b)
KV_F2(kv_sub, a - b)
KV_F2(kv_mul, a * b)
KV_F2(kv_div, a / b)
KV_F2(kv_max, a > b ? a : b)
KV_F2(kv_min, a < b ? a : b)
KV_F3(kv_fma, fmaf(a, b, c))
KV_F3(kv_fms, fmaf(a, b, -c))
KV_F3(kv_fnma, fmaf(-a, b, c))
KV_FN kvf kv_sqrt(kvf x) {
  kvf r;
  KV_EACH(i) r.v[i] = sqrtf(x.v[i]);
  return r;
}
KV_FN kvf kv_abs(kvf x) {
  kvf r;
  KV_EACH(i) r.v[i] = kb_vm_float_scalar(kb_vm_bits_scalar(x.v[i]) & 0x7fffffffu);
  return r;
}

KV_M2(kv_lt, a < b)
KV_M2(kv_gt, a > b)
KV_M2(kv_eq, a == b)
KV_M2(kv_unord, a != a || b != b)
KV_FN kvm kv_m_or(kvm a, kvm b) { return a | b; }
KV_FN kvm kv_m_and(kvm a, kvm b) { return a & b; }
KV_FN kvm kv_m_andnot(kvm a, kvm b) { return a & ~b; }
KV_FN kvm kv_m_none(void) { return 0; }
KV_FN int kv_m_any(kvm a) { return a != 0; }
/* Whether all 16 lanes are set. */
KV_FN int kv_m_all(kvm a) { return (a & 0xffffu) == 0xffffu; }
KV_FN kvf kv_sel(kvm m, kvf a, kvf b) {
  kvf r;
  KV_EACH(i) r.v[i] = (m >> i) & 1u ? a.v[i] : b.v[i];
  return r;
}
KV_FN void kv_lanes(float out[16], kvf v) { memcpy(out, v.v, sizeof v.v); }

/* ---- 16-bit storage (half.h's conversions, the definition) ---- */

KV_FN kvf kv_load_h_n(int f16, const uint16_t *p, int64_t n) {
  kvf r = kv_set(0.0f);
  for (int64_t i = 0; i < n && i < 16; i++) r.v[i] = f16 ? kb_f16_to_f32(p[i]) : kb_bf16_to_f32(p[i]);
  return r;
}
KV_FN kvf kv_load_h(int f16, const uint16_t *p) { return kv_load_h_n(f16, p, 16); }
KV_FN void kv_store_h_n(int f16, uint16_t *p, kvf v, int64_t n) {
  for (int64_t i = 0; i < n && i < 16; i++) p[i] = f16 ? kb_f32_to_f16(v.v[i]) : kb_f32_to_bf16(v.v[i]);
}
KV_FN void kv_store_h(int f16, uint16_t *p, kvf v) { kv_store_h_n(f16, p, v, 16); }
/* kv_store_h, returning what kv_load_h reads back: the definition. */
KV_FN kvf kv_store_h_back(int f16, uint16_t *p, kvf v) {
  kv_store_h(f16, p, v);
  return kv_load_h(f16, p);
}

/* ---- exp (vmath.h) ---- */

KV_FN void kv_exp_core(kvf x, kvf *th, kvf *tt, kvi *e) {
  KV_EACH(i) kb_vm_exp_core_scalar(x.v[i], &th->v[i], &tt->v[i], &e->v[i]);
}
KV_FN void kv_exp_core_neg(kvf x, kvf *th, kvf *tt, kvi *e) {
  KV_EACH(i) kb_vm_exp_core_neg_scalar(x.v[i], &th->v[i], &tt->v[i], &e->v[i]);
}
KV_FN kvf kv_ldexp(kvf q, kvi e) {
  kvf r;
  KV_EACH(i) r.v[i] = kb_vm_ldexp_scalar(q.v[i], e.v[i]);
  return r;
}
/* As avx2 (the reference takes both of vec_body.h's paths, which give the
 * same bits; the avx512 level takes kv_ldexp's only). */
#define KV_LDEXP_CHEAP 0
KV_FN void kv_exp_core2(kvf xh, kvf xl, kvf *th, kvf *tt, kvi *e) {
  KV_EACH(i) kb_vm_exp_core2_scalar(xh.v[i], xl.v[i], &th->v[i], &tt->v[i], &e->v[i]);
}
KV_FN kvf kv_exp(kvf x) {
  kvf r;
  KV_EACH(i) r.v[i] = kb_exp_scalar(x.v[i]);
  return r;
}

/* ---- doubles ---- */

KV_FN kvd kvd_set(double a) {
  kvd r;
  KV_EACH(i) r.v[i] = a;
  return r;
}
KV_FN kvd kvd_from(kvf x) {
  kvd r;
  KV_EACH(i) r.v[i] = (double)x.v[i];
  return r;
}
KV_FN kvf kvd_to_f(kvd x) {
  kvf r;
  KV_EACH(i) r.v[i] = (float)x.v[i];
  return r;
}
#define KV_D2(name, op)          \
  KV_FN kvd name(kvd x, kvd y) { \
    kvd r;                       \
    KV_EACH(i) r.v[i] = x.v[i] op y.v[i]; \
    return r;                    \
  }
KV_D2(kvd_add, +)
KV_D2(kvd_sub, -)
KV_D2(kvd_mul, *)
KV_D2(kvd_div, /)
#undef KV_D2
KV_FN kvd kvd_fma(kvd x, kvd y, kvd z) {
  kvd r;
  KV_EACH(i) r.v[i] = fma(x.v[i], y.v[i], z.v[i]);
  return r;
}
/* v * 2^e, exact (e in [-1000, 1000] and no underflow: the callers' ranges). */
KV_FN kvd kvd_ldexp(kvd x, kvi e) {
  kvd r;
  KV_EACH(i) {
    uint64_t bits = (uint64_t)(uint32_t)(e.v[i] + 1023) << 52;
    double p;
    memcpy(&p, &bits, sizeof p);
    r.v[i] = x.v[i] * p;
  }
  return r;
}
KV_FN kvd kvd_sel(kvm m, kvd a, kvd b) {
  kvd r;
  KV_EACH(i) r.v[i] = (m >> i) & 1u ? a.v[i] : b.v[i];
  return r;
}
KV_FN void kvd_lanes(double out[16], kvd x) { memcpy(out, x.v, sizeof x.v); }
/* The sum of the 16 lanes as a binary tree over adjacent lanes:
 * ((l0 + l1) + (l2 + l3)) + ..., the order every level reproduces. */
KV_FN double kvd_hsum16(kvd x) {
  double s[16];
  memcpy(s, x.v, sizeof s);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) s[i] = s[2 * i] + s[2 * i + 1];
  return s[0];
}

#undef KV_F2
#undef KV_F3
#undef KV_M2

/* ---- int32 lanes (computed as uint32: wrap-around as the vector units) ---- */

#define KV_I2(name, expr)        \
  KV_FN kvi name(kvi x, kvi y) { \
    kvi r;                       \
    KV_EACH(i) {                 \
      uint32_t a = (uint32_t)x.v[i]; \
      uint32_t b = (uint32_t)y.v[i]; \
      r.v[i] = (int32_t)(expr);  \
    }                            \
    return r;                    \
  }
KV_FN kvi kv_bits(kvf v) {
  kvi r;
  KV_EACH(i) r.v[i] = (int32_t)kb_vm_bits_scalar(v.v[i]);
  return r;
}
KV_FN kvf kv_from_bits(kvi v) {
  kvf r;
  KV_EACH(i) r.v[i] = kb_vm_float_scalar((uint32_t)v.v[i]);
  return r;
}
KV_FN kvi kvi_set(int32_t a) {
  kvi r;
  KV_EACH(i) r.v[i] = a;
  return r;
}
KV_FN kvi kvi_load(const int32_t *p) {
  kvi r;
  memcpy(r.v, p, sizeof r.v);
  return r;
}
KV_FN void kvi_lanes(int32_t out[16], kvi v) { memcpy(out, v.v, sizeof v.v); }
KV_I2(kvi_add, a + b)
KV_I2(kvi_sub, a - b)
KV_I2(kvi_and, a & b)
KV_I2(kvi_or, a | b)
#undef KV_I2
/* Arithmetic shift right, written without shifting a negative number. */
KV_FN kvi kvi_srai(kvi x, int n) {
  kvi r;
  KV_EACH(i) {
    uint32_t u = (uint32_t)x.v[i];
    uint32_t s = u >> n;
    if (u >> 31) s |= ~(0xffffffffu >> n);
    r.v[i] = (int32_t)s;
  }
  return r;
}
KV_FN kvi kvi_srli(kvi x, int n) {
  kvi r;
  KV_EACH(i) r.v[i] = (int32_t)((uint32_t)x.v[i] >> n);
  return r;
}
KV_FN kvi kvi_slli(kvi x, int n) {
  kvi r;
  KV_EACH(i) r.v[i] = (int32_t)((uint32_t)x.v[i] << n);
  return r;
}
KV_FN kvm kvi_gt(kvi x, kvi y) {
  kvm r = 0;
  KV_EACH(i) if (x.v[i] > y.v[i]) r |= 1u << i;
  return r;
}
KV_FN kvi kvi_sel(kvm m, kvi a, kvi b) {
  kvi r;
  KV_EACH(i) r.v[i] = (m >> i) & 1u ? a.v[i] : b.v[i];
  return r;
}
/* cvttps2dq: truncation; NaN and out of range give INT32_MIN. */
KV_FN kvi kv_to_int(kvf v) {
  kvi r;
  KV_EACH(i) r.v[i] = v.v[i] >= -2147483648.0f && v.v[i] < 2147483648.0f ? (int32_t)v.v[i] : INT32_MIN;
  return r;
}
KV_FN kvf kvi_to_f(kvi v) {
  kvf r;
  KV_EACH(i) r.v[i] = (float)v.v[i];
  return r;
}

KV_FN void kvd_load16(const double *p, kvd *v) { memcpy(v->v, p, sizeof v->v); }

/* Doubles holding integers in int32 range -> int32 (cvtpd2dq: out of range
 * and NaN give INT32_MIN). */
KV_FN kvi kvd_to_int(kvd v) {
  kvi r;
  KV_EACH(i) r.v[i] = v.v[i] >= -2147483648.0 && v.v[i] < 2147483648.0 ? (int32_t)v.v[i] : INT32_MIN;
  return r;
}

/* tab[idx & 7] per lane (tab holds 16 floats: the 8 entries twice). */
KV_FN kvf kv_lookup8(const float *tab, kvi idx) {
  kvf r;
  KV_EACH(i) r.v[i] = tab[idx.v[i] & 7];
  return r;
}

/* ---- more doubles ---- */

KV_FN void kvd_exp_core(kvd x, int first, kvd *s, kvd *kf) {
  KV_EACH(i) kb_vm_expd_core_scalar(x.v[i], first, &s->v[i], &kf->v[i]);
}
KV_FN kvd kvd_ldexp_k(kvd q, kvd kf) {
  kvd r;
  KV_EACH(i) r.v[i] = kb_vm_ldexp_f64_scalar(q.v[i], kf.v[i] == kf.v[i] ? kf.v[i] : 0.0);
  return r;
}
KV_FN kvd kvd_exp(kvd x) {
  kvd r;
  KV_EACH(i) r.v[i] = kb_exp_f64_scalar(x.v[i]);
  return r;
}
KV_FN kvd kvd_lookup8(const double *tab, kvi idx) {
  kvd r;
  KV_EACH(i) r.v[i] = tab[idx.v[i] & 7];
  return r;
}

