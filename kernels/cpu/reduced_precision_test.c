/* Tests of the bf16 / f16 conversions (half.h) and of the 26 reduced-precision
 * kernels on the CPU.
 *
 * The expectations come from this file's own model of the two formats,
 * written differently from the library's bit manipulation: a pattern's value
 * is decoded from its fields with ldexp, and rounding is done in double
 * arithmetic with frexp and rint (round-half-even in the default rounding
 * mode).  A kernel's expected output is round(kb_<op>(widened inputs)). */
#include <float.h>

#include "half.h"
#include "kernels/cpu/testutil/cpu_test.h"

/* ---- the test's model of bfloat16 and binary16 ---- */

struct fmt {
  int mbits; /* stored fraction bits */
  int ebits; /* exponent bits */
  int bias;
};
static const struct fmt kFmt[2] = {{7, 8, 127}, {10, 5, 15}}; /* [0] bf16, [1] f16 */
static const char *const kFmtName[2] = {"bf16", "f16"};

static int emax_field(int f16) { return (1 << kFmt[f16].ebits) - 1; }

static bool ref_is_nan(int f16, uint16_t h) {
  int m = kFmt[f16].mbits;
  return ((h >> m) & emax_field(f16)) == emax_field(f16) && (h & ((1 << m) - 1)) != 0;
}

/* A NaN whose quiet bit (the top fraction bit) is set. */
static bool ref_is_quiet_nan(int f16, uint16_t h) {
  return ref_is_nan(f16, h) && ((h >> (kFmt[f16].mbits - 1)) & 1) != 0;
}

/* The value of a pattern, from its fields. */
static double ref_value(int f16, uint16_t h) {
  const struct fmt *f = &kFmt[f16];
  int e = (h >> f->mbits) & emax_field(f16), m = h & ((1 << f->mbits) - 1);
  double v;
  if (e == emax_field(f16))
    v = m != 0 ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  else
    v = ldexp((double)(m + (1 << f->mbits)), e - f->bias - f->mbits);
  return (h & 0x8000) ? -v : v;
}

/* The pattern of a value the format represents exactly (or infinity). */
static uint16_t ref_encode(int f16, double v) {
  const struct fmt *f = &kFmt[f16];
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (a == 0.0) return sign;
  if (isinf(a)) return (uint16_t)(sign | (emax_field(f16) << f->mbits));
  int e;
  frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1): the leading bit is 2^(e-1) */
  int lead = e - 1, emin = 1 - f->bias;
  if (lead < emin) /* subnormal: a multiple of 2^(emin - mbits) */
    return (uint16_t)(sign | (uint16_t)ldexp(a, f->mbits - emin));
  uint32_t frac = (uint32_t)((ldexp(a, -lead) - 1.0) * ldexp(1.0, f->mbits));
  return (uint16_t)(sign | ((uint32_t)(lead + f->bias) << f->mbits) | frac);
}

/* Round to nearest, ties to even, in double arithmetic.  NaN is not
 * handled here (callers check NaN separately). */
static uint16_t ref_round(int f16, float x) {
  const struct fmt *f = &kFmt[f16];
  double a = fabs((double)x);
  if (a == 0.0 || isinf(a)) return ref_encode(f16, (double)x);
  int e;
  frexp(a, &e);
  int lead = e - 1, emin = 1 - f->bias;
  if (lead < emin) lead = emin; /* the subnormal range has the quantum of the smallest binade */
  double quantum = ldexp(1.0, lead - f->mbits);
  double r = rint(a / quantum) * quantum; /* a / quantum is exact: a power-of-two scaling */
  double max_finite = ldexp(2.0 - ldexp(1.0, -f->mbits), emax_field(f16) - 1 - f->bias);
  if (r > max_finite) r = INFINITY;
  return ref_encode(f16, signbit(x) ? -r : r);
}

static uint16_t lib_narrow(int f16, float x) { return f16 ? kb_f32_to_f16(x) : kb_f32_to_bf16(x); }
static float lib_widen(int f16, uint16_t h) { return f16 ? kb_f16_to_f32(h) : kb_bf16_to_f32(h); }

/* ---- conversions ---- */

/* Every one of the 65536 patterns of each format: widening gives the value of
 * the fields (NaN: a quiet NaN of the same sign), and narrowing the widened
 * value gives the pattern back (NaN: a quiet NaN of the same sign). */
static void test_exhaustive_round_trip(void) {
  for (int f16 = 0; f16 < 2; f16++) {
    int bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
      uint16_t h = (uint16_t)i;
      float w = lib_widen(f16, h);
      uint16_t back = lib_narrow(f16, w);
      bool ok;
      if (ref_is_nan(f16, h)) {
        ok = isnan(w) && (kb_test_bits(w) & 0x00400000u) != 0 && (signbit(w) != 0) == ((h & 0x8000) != 0) &&
             ref_is_quiet_nan(f16, back) && (back & 0x8000) == (h & 0x8000);
      } else {
        double want = ref_value(f16, h);
        ok = (double)w == want && (signbit(w) != 0) == (signbit(want) != 0) && back == h;
      }
      if (!ok && bad++ < 5)
        fprintf(stderr, "%s 0x%04x: widened %.9g (0x%08x), back 0x%04x\n", kFmtName[f16], (unsigned)h, (double)w,
                (unsigned)kb_test_bits(w), (unsigned)back);
    }
    CHECK(bad == 0);
  }
}

/* Narrowing matches the double-arithmetic model on many float bit patterns,
 * uniformly over all patterns and concentrated on the f16 / bf16 ranges. */
static void test_narrow_random(void) {
  uint64_t s = 12345;
  for (int f16 = 0; f16 < 2; f16++) {
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
      uint32_t u = (uint32_t)test_next(&s);
      if (i % 2 == 1) {
        /* Exponents 2^-30 .. 2^20 (f16 subnormals to overflow); any sign and fraction. */
        uint32_t e = 97u + (uint32_t)(test_next(&s) % 51);
        u = (u & 0x807fffffu) | (e << 23);
      }
      float x = kb_test_float(u);
      uint16_t got = lib_narrow(f16, x);
      bool ok = isnan(x) ? ref_is_quiet_nan(f16, got) && (got & 0x8000) == ((u >> 16) & 0x8000)
                         : got == ref_round(f16, x);
      if (!ok && bad++ < 5)
        fprintf(stderr, "%s narrow 0x%08x (%.9g): got 0x%04x want 0x%04x\n", kFmtName[f16], (unsigned)u, (double)x,
                (unsigned)got, (unsigned)ref_round(f16, x));
    }
    CHECK(bad == 0);
  }
}

/* Every midpoint between two adjacent finite positive values of a format (a
 * float: it needs one more bit than the format has) rounds to the one with
 * the even pattern; one float ulp either side rounds to the nearer one. */
static void test_narrow_ties_exhaustive(void) {
  for (int f16 = 0; f16 < 2; f16++) {
    int bad = 0;
    uint16_t max_finite = (uint16_t)((emax_field(f16) << kFmt[f16].mbits) - 1);
    for (uint32_t h = 0; h < max_finite; h++) {
      double lo = ref_value(f16, (uint16_t)h), hi = ref_value(f16, (uint16_t)(h + 1));
      float mid = (float)((lo + hi) / 2);
      if ((double)mid != (lo + hi) / 2) {
        bad++;
        continue;
      }
      uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
      if (lib_narrow(f16, mid) != even) bad++;
      if (lib_narrow(f16, nextafterf(mid, 0.0f)) != h) bad++;
      if (lib_narrow(f16, nextafterf(mid, INFINITY)) != h + 1) bad++;
      if (lib_narrow(f16, -mid) != (uint16_t)(even | 0x8000)) bad++;
    }
    if (bad) fprintf(stderr, "%s: %d tie cases wrong\n", kFmtName[f16], bad);
    CHECK(bad == 0);
  }
}

/* Selected values against bit patterns derived by hand. */
static void test_narrow_hand_values(void) {
  static const struct {
    uint32_t in;
    uint16_t bf16, f16;
  } cases[] = {
      {0x00000000u, 0x0000, 0x0000}, /* +0 */
      {0x80000000u, 0x8000, 0x8000}, /* -0 */
      {0x3f800000u, 0x3f80, 0x3c00}, /* 1 */
      {0xc0000000u, 0xc000, 0xc000}, /* -2 */
      {0x3dcccccdu, 0x3dcd, 0x2e66}, /* 0.1f: bf16 rounds up, f16 down */
      /* 1 + 2^-8: bf16 tie between 0x3f80 and 0x3f81 -> even 0x3f80; f16 exact. */
      {0x3f808000u, 0x3f80, 0x3c04},
      /* 1 + 3 * 2^-8: bf16 tie -> even 0x3f82. */
      {0x3f818000u, 0x3f82, 0x3c0c},
      /* just above the bf16 tie: up (f16: the extra 2^-23 rounds away). */
      {0x3f808001u, 0x3f81, 0x3c04},
      /* 1 + 2^-11: f16 tie between 0x3c00 and 0x3c01 -> 0x3c00; 1 + 3 * 2^-11 -> 0x3c02. */
      {0x3f801000u, 0x3f80, 0x3c00},
      {0x3f803000u, 0x3f80, 0x3c02},
      /* 65504, the largest finite f16; 65519 still rounds to it; 65520 is the tie to 2^16 -> inf. */
      {0x477fe000u, 0x4780, 0x7bff},
      {0x477fef00u, 0x4780, 0x7bff},
      {0x477ff000u, 0x4780, 0x7c00},
      {0xc77ff000u, 0xc780, 0xfc00},
      /* The largest finite bf16 (0x1.fep127), the tie above it (-> inf), FLT_MAX (-> inf). */
      {0x7f7f0000u, 0x7f7f, 0x7c00},
      {0x7f7f7fffu, 0x7f7f, 0x7c00},
      {0x7f7f8000u, 0x7f80, 0x7c00},
      {0x7f7fffffu, 0x7f80, 0x7c00},
      {0xff7fffffu, 0xff80, 0xfc00},
      /* infinities */
      {0x7f800000u, 0x7f80, 0x7c00},
      {0xff800000u, 0xff80, 0xfc00},
      /* f16: 2^-14 smallest normal, 2^-24 smallest subnormal, 2^-25 the tie to 0 -> 0, a little
       * more -> 2^-24, 3 * 2^-25 the tie between 1 and 2 units -> 2, 2^-14 - 2^-25 the tie between
       * 0x3ff and 0x400 -> 0x400. */
      {0x38800000u, 0x3880, 0x0400},
      {0x33800000u, 0x3380, 0x0001},
      {0xb3800000u, 0xb380, 0x8001},
      {0x33000000u, 0x3300, 0x0000},
      {0x33000001u, 0x3300, 0x0001},
      {0x33c00000u, 0x33c0, 0x0002},
      {0x387fe000u, 0x3880, 0x0400},
      /* bf16 subnormals: 2^-133 is the smallest (0x0001); float's smallest subnormal rounds to 0;
       * 2^-134 is the tie between 0 and 0x0001 -> 0; above it -> 0x0001. */
      {0x00010000u, 0x0001, 0x0000},
      {0x00000001u, 0x0000, 0x0000},
      {0x80000001u, 0x8000, 0x8000},
      {0x00008000u, 0x0000, 0x0000},
      {0x00008001u, 0x0001, 0x0000},
      {0x00018000u, 0x0002, 0x0000},
      /* the smallest normal float: bf16 exact (0x0080), f16 flushes to 0 by rounding */
      {0x00800000u, 0x0080, 0x0000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float x = kb_test_float(cases[i].in);
    uint16_t b = kb_f32_to_bf16(x), h = kb_f32_to_f16(x);
    if (b != cases[i].bf16 || h != cases[i].f16) {
      fprintf(stderr, "0x%08x: bf16 0x%04x (want 0x%04x), f16 0x%04x (want 0x%04x)\n", (unsigned)cases[i].in,
              (unsigned)b, (unsigned)cases[i].bf16, (unsigned)h, (unsigned)cases[i].f16);
      CHECK(false);
    }
  }
}

/* NaN stays NaN of the same sign, quiet, in both directions; a NaN whose
 * payload lies only in the bits cut off must not become infinity. */
static void test_nan(void) {
  CHECK(kb_f32_to_bf16(kb_test_float(0x7fc00000u)) == 0x7fc0);
  CHECK(kb_f32_to_bf16(kb_test_float(0xffc00000u)) == 0xffc0);
  CHECK(kb_f32_to_bf16(kb_test_float(0x7f800001u)) == 0x7fc0); /* signalling, low payload */
  CHECK(kb_f32_to_bf16(kb_test_float(0x7fa00000u)) == 0x7fe0); /* signalling, payload kept */
  CHECK(kb_f32_to_f16(kb_test_float(0x7fc00000u)) == 0x7e00);
  CHECK(kb_f32_to_f16(kb_test_float(0xffc00000u)) == 0xfe00);
  CHECK(kb_f32_to_f16(kb_test_float(0x7f800001u)) == 0x7e00);
  CHECK(kb_f32_to_f16(kb_test_float(0x7f802000u)) == 0x7e01); /* signalling, payload kept */
  CHECK(kb_test_bits(kb_bf16_to_f32(0x7f81)) == 0x7fc10000u);
  CHECK(kb_test_bits(kb_bf16_to_f32(0xffc0)) == 0xffc00000u);
  CHECK(kb_test_bits(kb_f16_to_f32(0x7c01)) == 0x7fc02000u);
  CHECK(kb_test_bits(kb_f16_to_f32(0xfe00)) == 0xffc00000u);
  CHECK(kb_test_bits(kb_f16_to_f32(0x7c00)) == 0x7f800000u);
  CHECK(kb_test_bits(kb_f16_to_f32(0x0001)) == 0x33800000u);
  CHECK(kb_test_bits(kb_f16_to_f32(0x8000)) == 0x80000000u);
}

/* ---- kernels ---- */

typedef kb_status (*unary_dt_fn)(kb_context *, int64_t, const uint16_t *, uint16_t *);
typedef kb_status (*unary_f32_fn)(kb_context *, int64_t, const float *, float *);
typedef kb_status (*binary_dt_fn)(kb_context *, int64_t, const uint16_t *, const uint16_t *, uint16_t *);
typedef kb_status (*binary_f32_fn)(kb_context *, int64_t, const float *, const float *, float *);
typedef kb_status (*rows_dt_fn)(kb_context *, int64_t, int64_t, const uint16_t *, uint16_t *);
typedef kb_status (*rows_f32_fn)(kb_context *, int64_t, int64_t, const float *, float *);

/* A reduced-precision input: its patterns and their values as floats (from
 * the test's model, not the library's widening). */
struct dt_in {
  uint16_t *h;
  float *f;
  int64_t n;
};

/* Values of uniform [lo, hi) floats rounded to the format; with specials,
 * the first elements are NaN, +inf, -inf, -0, the smallest subnormal and
 * the largest finite value. */
static struct dt_in make_in(int f16, int64_t n, uint64_t seed, float lo, float hi, bool specials) {
  struct dt_in t = {(uint16_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(uint16_t)), alloc_f(n), n};
  rand_fill(t.f, n, seed, lo, hi);
  for (int64_t i = 0; i < n; i++) t.h[i] = ref_round(f16, t.f[i]);
  if (specials) {
    uint16_t sp[6] = {(uint16_t)(f16 ? 0x7e00 : 0x7fc0), (uint16_t)(f16 ? 0x7c00 : 0x7f80),
                      (uint16_t)(f16 ? 0xfc00 : 0xff80), 0x8000, 0x0001, (uint16_t)(f16 ? 0x7bff : 0x7f7f)};
    for (int i = 0; i < 6 && i < n; i++) t.h[i] = sp[i];
  }
  for (int64_t i = 0; i < n; i++) t.f[i] = (float)ref_value(f16, t.h[i]);
  return t;
}

static void free_in(struct dt_in *t) {
  free(t->h);
  free(t->f);
}

static uint16_t *alloc_h(int64_t n) { return (uint16_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(uint16_t)); }

/* got[i] == round(want[i]) for i < n (NaN: any NaN); prints the first misses. */
static int mismatches(int f16, const uint16_t *got, const float *want, int64_t n, const char *what) {
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    bool ok = isnan(want[i]) ? ref_is_nan(f16, got[i]) : got[i] == ref_round(f16, want[i]);
    if (!ok && bad++ < 3)
      fprintf(stderr, "%s %s[%lld]: got 0x%04x (%.9g), want round(%.9g) = 0x%04x\n", what, kFmtName[f16],
              (long long)i, (unsigned)got[i], ref_value(f16, got[i]), (double)want[i],
              (unsigned)ref_round(f16, want[i]));
  }
  return bad;
}

static void test_unary_kernels(void) {
  static const unary_dt_fn dt[3][2] = {
      {kb_silu_bf16, kb_silu_f16}, {kb_gelu_bf16, kb_gelu_f16}, {kb_gelu_tanh_bf16, kb_gelu_tanh_f16}};
  static const unary_f32_fn f32[3] = {kb_silu, kb_gelu, kb_gelu_tanh};
  /* Two of the bf16 activations' 256-element chunks, whole vectors and a
   * partial one (vec_body.h, KV_MAP1). */
  enum { N = 700 };
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in x = make_in(f16, N, 3 + (uint64_t)f16, -12.0f, 12.0f, true);
    uint16_t *y = alloc_h(N), *y2 = alloc_h(N);
    float *want = alloc_f(N);
    for (int op = 0; op < 3; op++) {
      CHECK_OK(f32[op](NULL, N, x.f, want));
      CHECK_OK(dt[op][f16](NULL, N, x.h, y));
      CHECK(mismatches(f16, y, want, N, "activation") == 0);
      CHECK(ref_is_nan(f16, y[0])); /* NaN in, NaN out */
      /* In place: y == x. */
      memcpy(y2, x.h, N * sizeof(uint16_t));
      CHECK_OK(dt[op][f16](NULL, N, y2, y2));
      CHECK(memcmp(y2, y, N * sizeof(uint16_t)) == 0);
    }
    free_in(&x);
    free(y);
    free(y2);
    free(want);
  }
}

static void test_arith_kernels(void) {
  static const binary_dt_fn dt[2][2] = {{kb_add_bf16, kb_add_f16}, {kb_mul_bf16, kb_mul_f16}};
  static const binary_f32_fn f32[2] = {kb_add, kb_mul};
  enum { N = 77, R = 7, C = 11 };
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in a = make_in(f16, N, 10 + (uint64_t)f16, -300.0f, 300.0f, true);
    struct dt_in b = make_in(f16, N, 20 + (uint64_t)f16, -300.0f, 300.0f, false);
    uint16_t *y = alloc_h(N), *y2 = alloc_h(N);
    float *want = alloc_f(N);
    for (int op = 0; op < 2; op++) {
      CHECK_OK(f32[op](NULL, N, a.f, b.f, want));
      CHECK_OK(dt[op][f16](NULL, N, a.h, b.h, y));
      CHECK(mismatches(f16, y, want, N, op ? "mul" : "add") == 0);
      CHECK(ref_is_nan(f16, y[0]));
      memcpy(y2, b.h, N * sizeof(uint16_t)); /* y == b */
      CHECK_OK(dt[op][f16](NULL, N, a.h, y2, y2));
      CHECK(memcmp(y2, y, N * sizeof(uint16_t)) == 0);
    }
    /* The largest finite value doubled overflows to infinity in the format. */
    uint16_t big = (uint16_t)(f16 ? 0x7bff : 0x7f7f), sum;
    CHECK_OK(dt[0][f16](NULL, 1, &big, &big, &sum));
    CHECK(sum == (uint16_t)(f16 ? 0x7c00 : 0x7f80));

    const float alphas[2] = {1.7f, 0.0f}; /* 0 * inf = NaN, 0 * -x = -0 */
    for (int i = 0; i < 2; i++) {
      CHECK_OK(kb_scale(NULL, N, alphas[i], a.f, want));
      CHECK_OK((f16 ? kb_scale_f16 : kb_scale_bf16)(NULL, N, alphas[i], a.h, y));
      CHECK(mismatches(f16, y, want, N, "scale") == 0);
    }
    CHECK_OK(kb_add_bias(NULL, R, C, a.f, b.f, want));
    CHECK_OK((f16 ? kb_add_bias_f16 : kb_add_bias_bf16)(NULL, R, C, a.h, b.h, y));
    CHECK(mismatches(f16, y, want, R * C, "add_bias") == 0);
    memcpy(y2, a.h, N * sizeof(uint16_t)); /* y == x */
    CHECK_OK((f16 ? kb_add_bias_f16 : kb_add_bias_bf16)(NULL, R, C, y2, b.h, y2));
    CHECK(memcmp(y2, y, R * C * sizeof(uint16_t)) == 0);
    free_in(&a);
    free_in(&b);
    free(y);
    free(y2);
    free(want);
  }
}

static void test_softmax_kernels(void) {
  static const rows_dt_fn dt[2][2] = {{kb_softmax_bf16, kb_softmax_f16}, {kb_log_softmax_bf16, kb_log_softmax_f16}};
  static const rows_f32_fn f32[2] = {kb_softmax, kb_log_softmax};
  enum { R = 5, C = 33 };
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in x = make_in(f16, R * C, 30 + (uint64_t)f16, -9.0f, 9.0f, false);
    /* Row 1 holds NaN (whole row NaN); row 2 a -inf entry (probability 0). */
    x.h[C + 4] = (uint16_t)(f16 ? 0x7e00 : 0x7fc0);
    x.h[2 * C + 7] = (uint16_t)(f16 ? 0xfc00 : 0xff80);
    for (int64_t i = 0; i < R * C; i++) x.f[i] = (float)ref_value(f16, x.h[i]);
    uint16_t *y = alloc_h(R * C), *y2 = alloc_h(R * C);
    float *want = alloc_f(R * C);
    for (int op = 0; op < 2; op++) {
      CHECK_OK(f32[op](NULL, R, C, x.f, want));
      CHECK_OK(dt[op][f16](NULL, R, C, x.h, y));
      CHECK(mismatches(f16, y, want, R * C, op ? "log_softmax" : "softmax") == 0);
      for (int c = 0; c < C; c++) CHECK(ref_is_nan(f16, y[C + c]));
      memcpy(y2, x.h, R * C * sizeof(uint16_t));
      CHECK_OK(dt[op][f16](NULL, R, C, y2, y2));
      CHECK(memcmp(y2, y, R * C * sizeof(uint16_t)) == 0);
    }
    free_in(&x);
    free(y);
    free(y2);
    free(want);
  }
}

/* Rows on both sides of the 16-bit softmax's kept-exponential limit
 * (2048: kept on the stack; longer: recomputed) and over several online
 * maximum blocks: still exactly the float32 kernel's result rounded (enough
 * elements, all of them normal in both formats, that a one-ulp float32
 * difference shows in the rounding). */
static void test_softmax_long_rows(void) {
  static const int64_t shapes[][2] = {{64, 2048}, {16, 2049}, {8, 5000}};
  for (int f16 = 0; f16 < 2; f16++) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      int64_t R = shapes[i][0], C = shapes[i][1];
      struct dt_in x = make_in(f16, R * C, 70 + (uint64_t)(f16 * 10) + i, -2.0f, 2.0f, false);
      uint16_t *y = alloc_h(R * C);
      float *want = alloc_f(R * C);
      CHECK_OK(kb_softmax(NULL, R, C, x.f, want));
      CHECK_OK((f16 ? kb_softmax_f16 : kb_softmax_bf16)(NULL, R, C, x.h, y));
      CHECK(mismatches(f16, y, want, R * C, "softmax") == 0);
      CHECK_OK(kb_log_softmax(NULL, R, C, x.f, want));
      CHECK_OK((f16 ? kb_log_softmax_f16 : kb_log_softmax_bf16)(NULL, R, C, x.h, y));
      CHECK(mismatches(f16, y, want, R * C, "log_softmax") == 0);
      free_in(&x);
      free(y);
      free(want);
    }
  }
}

static void test_norm_kernels(void) {
  enum { R = 4, C = 19 };
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in x = make_in(f16, R * C, 40 + (uint64_t)f16, -3.0f, 5.0f, false);
    struct dt_in w = make_in(f16, C, 50 + (uint64_t)f16, 0.5f, 1.5f, false);
    struct dt_in b = make_in(f16, C, 60 + (uint64_t)f16, -1.0f, 1.0f, false);
    uint16_t *y = alloc_h(R * C), *y2 = alloc_h(R * C);
    float *want = alloc_f(R * C);
    CHECK_OK(kb_rmsnorm(NULL, R, C, x.f, w.f, 1e-5f, want));
    CHECK_OK((f16 ? kb_rmsnorm_f16 : kb_rmsnorm_bf16)(NULL, R, C, x.h, w.h, 1e-5f, y));
    CHECK(mismatches(f16, y, want, R * C, "rmsnorm") == 0);
    memcpy(y2, x.h, R * C * sizeof(uint16_t));
    CHECK_OK((f16 ? kb_rmsnorm_f16 : kb_rmsnorm_bf16)(NULL, R, C, y2, w.h, 1e-5f, y2));
    CHECK(memcmp(y2, y, R * C * sizeof(uint16_t)) == 0);
    /* layernorm with weight and bias, and without either (NULL: 1 and 0). */
    const uint16_t *wh[2] = {w.h, NULL}, *bh[2] = {b.h, NULL};
    const float *wf[2] = {w.f, NULL}, *bf[2] = {b.f, NULL};
    for (int i = 0; i < 2; i++) {
      CHECK_OK(kb_layernorm(NULL, R, C, x.f, wf[i], bf[i], 1e-5f, want));
      CHECK_OK((f16 ? kb_layernorm_f16 : kb_layernorm_bf16)(NULL, R, C, x.h, wh[i], bh[i], 1e-5f, y));
      CHECK(mismatches(f16, y, want, R * C, "layernorm") == 0);
    }
    memcpy(y2, x.h, R * C * sizeof(uint16_t));
    CHECK_OK((f16 ? kb_layernorm_f16 : kb_layernorm_bf16)(NULL, R, C, y2, NULL, NULL, 1e-5f, y2));
    CHECK(memcmp(y2, y, R * C * sizeof(uint16_t)) == 0);
    free_in(&x);
    free_in(&w);
    free_in(&b);
    free(y);
    free(y2);
    free(want);
  }
}

/* All transposes, padded strides, beta 0 (C holding NaN must not leak) and
 * beta != 0 (C is an input); C's padding is never written. */
static void test_gemm_kernels(void) {
  enum { M = 5, N = 7, K = 9, PAD = 3 };
  const uint16_t pad_bits = 0x1234;
  for (int f16 = 0; f16 < 2; f16++) {
    for (int t = 0; t < 4; t++) {
      bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
      int64_t lda = a_cols + PAD, ldb = b_cols + PAD, ldc = N + PAD;
      struct dt_in a = make_in(f16, a_rows * lda, 70 + (uint64_t)t, -2.0f, 2.0f, false);
      struct dt_in b = make_in(f16, b_rows * ldb, 80 + (uint64_t)t, -2.0f, 2.0f, false);
      for (int bi = 0; bi < 2; bi++) {
        float beta = bi ? 0.5f : 0.0f;
        struct dt_in c = make_in(f16, M * ldc, 90 + (uint64_t)t, -1.0f, 1.0f, false);
        for (int64_t i = 0; i < M; i++) {
          for (int64_t j = N; j < ldc; j++) c.h[i * ldc + j] = pad_bits; /* padding */
          if (!bi) c.h[i * ldc] = (uint16_t)(f16 ? 0x7e00 : 0x7fc0);  /* NaN, not read */
        }
        for (int64_t i = 0; i < M * ldc; i++) c.f[i] = (float)ref_value(f16, c.h[i]);
        float *want = alloc_f(M * ldc);
        memcpy(want, c.f, (size_t)(M * ldc) * sizeof(float));
        CHECK_OK(kb_gemm(NULL, ta, tb, M, N, K, 1.25f, a.f, lda, b.f, ldb, beta, want, ldc));
        CHECK_OK((f16 ? kb_gemm_f16 : kb_gemm_bf16)(NULL, ta, tb, M, N, K, 1.25f, a.h, lda, b.h, ldb, beta, c.h, ldc));
        for (int64_t i = 0; i < M; i++) {
          CHECK(mismatches(f16, c.h + i * ldc, want + i * ldc, N, "gemm") == 0);
          for (int64_t j = N; j < ldc; j++) CHECK(c.h[i * ldc + j] == pad_bits);
          if (!bi) CHECK(!ref_is_nan(f16, c.h[i * ldc]));
        }
        free_in(&c);
        free(want);
      }
      free_in(&a);
      free_in(&b);
    }
  }
}

static void test_attention_kernels(void) {
  enum { B = 2, H = 4, KVH = 2, SQ = 3, SKV = 5, D = 8 };
  const int64_t qn = B * H * SQ * D, kvn = B * KVH * SKV * D;
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in q = make_in(f16, qn, 100 + (uint64_t)f16, -1.0f, 1.0f, false);
    struct dt_in k = make_in(f16, kvn, 110 + (uint64_t)f16, -1.0f, 1.0f, false);
    struct dt_in v = make_in(f16, kvn, 120 + (uint64_t)f16, -1.0f, 1.0f, false);
    uint16_t *out = alloc_h(qn);
    float *want = alloc_f(qn);
    for (int causal = 0; causal < 2; causal++) {
      const float scales[2] = {0.0f, 0.3f};
      for (int s = 0; s < 2; s++) {
        CHECK_OK(kb_attention(NULL, B, H, KVH, SQ, SKV, D, q.f, k.f, v.f, causal, scales[s], want));
        CHECK_OK((f16 ? kb_attention_f16 : kb_attention_bf16)(NULL, B, H, KVH, SQ, SKV, D, q.h, k.h, v.h, causal,
                                                              scales[s], out));
        CHECK(mismatches(f16, out, want, qn, "attention") == 0);
      }
    }
    free_in(&q);
    free_in(&k);
    free_in(&v);
    free(out);
    free(want);
  }
}

/* Results do not depend on the thread count (conversions are threaded too). */
static void test_threads_bitwise_identical(void) {
  enum { N = 200003 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  for (int f16 = 0; f16 < 2; f16++) {
    struct dt_in x = make_in(f16, N, 130, -6.0f, 6.0f, true);
    uint16_t *y1 = alloc_h(N), *y3 = alloc_h(N);
    CHECK_OK((f16 ? kb_gelu_f16 : kb_gelu_bf16)(c1, N, x.h, y1));
    CHECK_OK((f16 ? kb_gelu_f16 : kb_gelu_bf16)(c3, N, x.h, y3));
    CHECK(memcmp(y1, y3, N * sizeof(uint16_t)) == 0);
    float *want = alloc_f(N);
    CHECK_OK(kb_gelu(c3, N, x.f, want));
    CHECK(mismatches(f16, y3, want, N, "gelu threads") == 0);
    CHECK_OK((f16 ? kb_softmax_f16 : kb_softmax_bf16)(c1, 1000, 200, x.h, y1));
    CHECK_OK((f16 ? kb_softmax_f16 : kb_softmax_bf16)(c3, 1000, 200, x.h, y3));
    CHECK(memcmp(y1, y3, 200000 * sizeof(uint16_t)) == 0);
    free_in(&x);
    free(y1);
    free(y3);
    free(want);
  }
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_empty(void) {
  kb_context *ctx = make_ctx(2);
  CHECK_OK(kb_silu_bf16(ctx, 0, NULL, NULL));
  CHECK_OK(kb_add_f16(ctx, 0, NULL, NULL, NULL));
  CHECK_OK(kb_scale_bf16(ctx, 0, 2.0f, NULL, NULL));
  uint16_t bias[3] = {0x3f80, 0x3f80, 0x3f80};
  CHECK_OK(kb_add_bias_f16(ctx, 0, 3, NULL, bias, NULL));
  CHECK_OK(kb_softmax_f16(ctx, 0, 0, NULL, NULL));
  CHECK_OK(kb_rmsnorm_bf16(ctx, 0, 4, NULL, bias, 1e-5f, NULL));
  CHECK_OK(kb_layernorm_f16(ctx, 0, 0, NULL, NULL, NULL, 1e-5f, NULL));
  CHECK_OK(kb_gemm_bf16(ctx, false, false, 0, 0, 0, 1.0f, NULL, 1, NULL, 1, 0.0f, NULL, 1));
  CHECK_OK(kb_attention_f16(ctx, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, false, 0.0f, NULL));
  CHECK(kb_context_last_error(ctx)[0] == '\0');
  kb_context_destroy(ctx);
}

/* Validation follows the float32 rules with the dt function's name in the
 * message and 2-byte elements, and leaves every output untouched. */
static void test_validation(void) {
  kb_context *ctx = make_ctx(1);
  uint16_t buf[64], y[64], keep[64];
  for (int i = 0; i < 64; i++) buf[i] = (uint16_t)(0x3c00 + i);
  for (int i = 0; i < 64; i++) y[i] = 0x7777;
  memcpy(keep, buf, sizeof buf);

  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_silu_bf16: n must be >= 0, got -3", kb_silu_bf16(ctx, -3, buf, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_gelu_f16: x must not be NULL", kb_gelu_f16(ctx, 4, NULL, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_gelu_tanh_bf16: y must not be NULL",
              kb_gelu_tanh_bf16(ctx, 4, buf, NULL));
  /* Extents are 2 bytes per element: y right after x's 4 elements is fine ... */
  CHECK_OK(kb_silu_f16(ctx, 4, buf, buf + 4));
  memcpy(buf, keep, sizeof buf);
  /* ... one element earlier it overlaps. */
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_silu_f16: y partially overlaps x",
              kb_silu_f16(ctx, 4, buf, buf + 3));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_add_f16: y partially overlaps b",
              kb_add_f16(ctx, 4, buf + 8, buf, buf + 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_mul_bf16: b must not be NULL", kb_mul_bf16(ctx, 4, buf, NULL, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_scale_f16: alpha must be finite",
              kb_scale_f16(ctx, 4, NAN, buf, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_add_bias_bf16: y must not overlap bias",
              kb_add_bias_bf16(ctx, 2, 4, buf + 16, buf + 2, buf));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_softmax_f16: cols must be > 0 when rows > 0",
              kb_softmax_f16(ctx, 2, 0, buf, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_log_softmax_bf16: rows must be >= 0",
              kb_log_softmax_bf16(ctx, -1, 4, buf, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_rmsnorm_f16: weight must not be NULL",
              kb_rmsnorm_f16(ctx, 2, 4, buf, NULL, 1e-5f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_layernorm_bf16: eps must be >= 0",
              kb_layernorm_bf16(ctx, 2, 4, buf, NULL, NULL, -1.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_layernorm_f16: y must not overlap weight",
              kb_layernorm_f16(ctx, 1, 4, buf + 16, buf + 3, NULL, 1e-5f, buf));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH,
              "kb_gemm_bf16: lda must be >= 4 (the stored row length, at least 1), got 3",
              kb_gemm_bf16(ctx, false, false, 2, 2, 4, 1.0f, buf, 3, buf + 16, 2, 0.0f, y, 2));
  /* c (2 x 2, 8 bytes) right after a (2 x 4, 16 bytes) is fine; one element earlier it is not. */
  CHECK_OK(kb_gemm_f16(ctx, false, false, 2, 2, 4, 1.0f, buf, 4, buf + 16, 2, 0.0f, buf + 8, 2));
  memcpy(buf, keep, sizeof buf);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_gemm_f16: c must not overlap a",
              kb_gemm_f16(ctx, false, false, 2, 2, 4, 1.0f, buf, 4, buf + 16, 2, 0.0f, buf + 7, 2));
  CHECK_FAILS(ctx, KB_STATUS_SHAPE_MISMATCH, "kb_attention_bf16: kv_heads (3) must divide heads (2)",
              kb_attention_bf16(ctx, 1, 2, 3, 1, 1, 2, buf, buf, buf, false, 0.0f, y));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_attention_f16: out must not overlap v",
              kb_attention_f16(ctx, 1, 1, 1, 2, 2, 2, buf, buf + 8, buf + 16, false, 0.0f, buf + 19));
  /* Size overflow with 2-byte elements: 2^62 elements overflow (2^62 - 1
   * would not: the elementwise and row kernels convert in registers and
   * need no float32 copy), before anything is written. */
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "kb_silu_bf16: size of x overflows",
              kb_silu_bf16(ctx, INT64_MAX / 2 + 1, buf, buf));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "kb_softmax_f16: size of x overflows",
              kb_softmax_f16(ctx, INT64_MAX / 4, 3, buf, y));
  CHECK(memcmp(buf, keep, sizeof buf) == 0);
  for (int i = 0; i < 64; i++) CHECK(y[i] == 0x7777);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_exhaustive_round_trip);
  KB_RUN(test_narrow_random);
  KB_RUN(test_narrow_ties_exhaustive);
  KB_RUN(test_narrow_hand_values);
  KB_RUN(test_nan);
  KB_RUN(test_unary_kernels);
  KB_RUN(test_arith_kernels);
  KB_RUN(test_softmax_kernels);
  KB_RUN(test_softmax_long_rows);
  KB_RUN(test_norm_kernels);
  KB_RUN(test_gemm_kernels);
  KB_RUN(test_attention_kernels);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_empty);
  KB_RUN(test_validation);
  return kb_test_summary();
}
