/*
 * tolerance.c - the docs/cuda.md tolerance table and the 16-bit formats.
 */
#include "tolerance.h"

#include <math.h>
#include <string.h>

struct row {
  const char *kernel;
  struct tol tol;
};

/* docs/cuda.md, "Numerics and GPU tolerances", float32 rows.  The tiny
 * absolute floors (1e-37) are kernels/cuda/cuda_kernels_test.c's: they only
 * let values near zero of opposite sign pass. */
static const struct row f32_rows[] = {
    {"add", {TOL_BITS_NAN, 0, 0, 0, "bitwise (any NaN matches any NaN)"}},
    {"mul", {TOL_BITS_NAN, 0, 0, 0, "bitwise (any NaN matches any NaN)"}},
    {"scale", {TOL_BITS_NAN, 0, 0, 0, "bitwise (any NaN matches any NaN)"}},
    {"add_bias", {TOL_BITS_NAN, 0, 0, 0, "bitwise (any NaN matches any NaN)"}},
    {"embedding", {TOL_BITWISE, 0, 0, 0, "bitwise"}},
    {"adamw_step", {TOL_BITS_NAN, 0, 0, 0, "bitwise (any NaN matches any NaN)"}},
    {"argmax", {TOL_BITWISE, 0, 0, 0, "identical indices"}},
    {"sample", {TOL_BITWISE, 0, 0, 0, "identical token ids"}},
    {"topk_sample", {TOL_BITWISE, 0, 0, 0, "identical token ids"}},
    {"topp_sample", {TOL_BITWISE, 0, 0, 0, "identical token ids"}},
    {"gemm", {TOL_BOUND, 0, 0, 0, "|gpu-cpu| <= (k+2) 2^-23 (|alpha| sum|a b| + |beta c|)"}},
    {"silu", {TOL_ULP, 3, 0, 0, "<= 3 ulp"}},
    {"gelu", {TOL_ULP, 1, 0, 0, "<= 1 ulp"}},
    {"gelu_tanh", {TOL_ULP, 1, 0, 0, "<= 1 ulp"}},
    {"rope", {TOL_ULP, 1, 1e-37, 0, "<= 1 ulp"}},
    {"softmax", {TOL_ULP, 2, 1e-37, 0, "<= 2 ulp or |diff| <= 1e-37"}},
    {"log_softmax", {TOL_ULP, 2, 1e-37, 0, "<= 2 ulp or |diff| <= 1e-37"}},
    {"rmsnorm", {TOL_ULP, 2, 1e-37, 0, "<= 2 ulp"}},
    {"layernorm", {TOL_ULP, 2, 1e-6, 0, "<= 2 ulp or |diff| <= 1e-6"}},
    {"cross_entropy", {TOL_ULP, 4, 1e-6, 0, "<= 4 ulp or |diff| <= 1e-6"}},
    {"cross_entropy_backward", {TOL_ULP, 2, 1e-37, 0, "<= 2 ulp"}},
    /* abs is for |v| <= 1; the runner multiplies it by max(1, max |v|). */
    {"attention", {TOL_BOUND, 0, 2e-5, 1e-4, "|diff| <= 2e-5 max(1,|v|) + 1e-4 |cpu|"}},
};

struct tol gpu_tol_f32(const char *kernel) {
  for (size_t i = 0; i < sizeof f32_rows / sizeof f32_rows[0]; i++)
    if (strcmp(f32_rows[i].kernel, kernel) == 0) return f32_rows[i].tol;
  struct tol none = {TOL_BITWISE, 0, 0, 0, "bitwise (kernel not in docs/cuda.md)"};
  return none;
}

/* The bf16 / f16 row: |diff| <= atol + r |cpu|. */
struct tol gpu_tol_lowp(const char *kernel, enum lowp dt) {
  struct tol t = {TOL_BOUND, 0, 1e-3, dt == LOWP_F16 ? 2e-3 : 1.6e-2,
                  "|diff| <= atol + r |cpu| (docs/cuda.md), or the CPU result rounded"};
  if (strcmp(kernel, "add") == 0 || strcmp(kernel, "mul") == 0 || strcmp(kernel, "scale") == 0) t.abs = 0;
  if (strcmp(kernel, "add_bias") == 0 || strcmp(kernel, "softmax") == 0) t.abs = 1e-6;
  /* gemm: the float32 cuBLASLt bound comes as `extra`, r covers the output
   * rounding; attention: atol = r (times max(1, max |v|), as above). */
  if (strcmp(kernel, "gemm") == 0) t.abs = 0;
  if (strcmp(kernel, "attention") == 0) t.abs = t.rel;
  return t;
}

/* Distance in float32 ulps (representable values between a and b). */
static double ulps(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return (double)(oa > ob ? oa - ob : ob - oa);
}

static double element_ratio(const struct tol *t, float g, float w, double extra) {
  if (memcmp(&g, &w, 4) == 0) return 0.0;
  if (t->kind == TOL_BITS_NAN && isnan(g) && isnan(w)) return 0.0;
  if (t->kind == TOL_BITWISE || t->kind == TOL_BITS_NAN) return INFINITY;
  if (isnan(g) && isnan(w)) return 0.0;
  if (g == w) return 0.0;
  if (!isfinite(g) || !isfinite(w)) return INFINITY;
  double diff = fabs((double)g - (double)w);
  if (t->kind == TOL_ULP) {
    double r = ulps(g, w) / t->ulp;
    if (t->abs > 0 && diff / t->abs < r) r = diff / t->abs;
    return r;
  }
  double allowed = t->abs + t->rel * fabs((double)w) + extra;
  return allowed > 0 ? diff / allowed : INFINITY;
}

double tol_compare(const struct tol *t, const float *got, const float *cpu, const double *extra, int64_t n,
                   int64_t *first) {
  double worst = 0.0;
  *first = -1;
  for (int64_t i = 0; i < n; i++) {
    double r = element_ratio(t, got[i], cpu[i], extra != NULL ? extra[i] : 0.0);
    if (!(r <= 1.0) && *first < 0) *first = i;
    if (!(r <= worst)) worst = r;
  }
  return worst;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t to_half(enum lowp dt, float f) {
  uint32_t u = bits_of(f);
  if (dt == LOWP_BF16) {
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* carries into the exponent: overflow gives infinity */
    return (uint16_t)(u >> 16);
  }
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* |f| >= 65520 */
  if (a >= 0x38800000u) {                                   /* normal: |f| >= 2^-14 */
    uint32_t r = a - 0x38000000u;                           /* rebias the exponent by 127 - 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  /* Subnormal or zero: units of 2^-24; the scaling is exact, the rounding is
   * the default (nearest even) mode's; 1024 is the smallest normal's bits. */
  return (uint16_t)(sign | (uint16_t)nearbyintf(float_of(a) * 16777216.0f));
}

float from_half(enum lowp dt, uint16_t h) {
  if (dt == LOWP_BF16) return float_of((uint32_t)h << 16);
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return float_of(sign | bits_of((float)m / 16777216.0f));
  if (e == 31) return float_of(sign | 0x7f800000u | (m << 13));
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}
