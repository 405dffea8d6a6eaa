/*
 * tolerance_test.c - the runner's comparison rules and 16-bit conversions
 * (tolerance.c).  The cuda backend's comparisons only run on a GPU, which
 * the project rarely has: a mistake here must show up on every machine.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tolerance.h"

static int failures;

#define CHECK(cond, ...)            \
  do {                              \
    if (!(cond)) {                  \
      failures++;                   \
      printf("FAIL line %d: ", __LINE__); \
      printf(__VA_ARGS__);          \
      printf("\n");                 \
    }                               \
  } while (0)

static float f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t u32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* bfloat16 reference by brute force: the nearer of the two neighbouring
 * bfloat16 values (ties to the even one), compared in double. */
static uint16_t bf16_reference(float f) {
  uint32_t lo = u32(f) & 0xffff0000u, hi = lo + 0x10000u; /* hi: next in magnitude */
  /* IEEE rounds as if the exponent were unbounded: infinity stands for
   * 2^128 (hence overflow from 0x1.ffp127 on). */
  double vhi = isinf(f32(hi)) ? ldexp(1.0, 128) : fabs((double)f32(hi));
  double dlo = fabs((double)f - (double)f32(lo)), dhi = vhi - fabs((double)f);
  if (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1u) == 0)) return (uint16_t)(lo >> 16);
  return (uint16_t)(hi >> 16);
}

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint32_t next_random(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (uint32_t)(state >> 32);
}

static void test_bf16(void) {
  for (int i = 0; i < 2000000; i++) {
    float f = f32(next_random());
    if (isnan(f) || isinf(f)) continue;
    uint16_t got = to_half(LOWP_BF16, f), want = bf16_reference(f);
    if (got != want) {
      CHECK(0, "bf16(%a) = %04x, want %04x", (double)f, got, want);
      break;
    }
    CHECK(from_half(LOWP_BF16, got) == f32((uint32_t)got << 16), "bf16 widening of %04x", got);
  }
  CHECK(to_half(LOWP_BF16, FLT_MAX) == 0x7f80, "FLT_MAX rounds to bf16 infinity");
  CHECK(isnan(from_half(LOWP_BF16, to_half(LOWP_BF16, f32(0x7f800001u)))), "a NaN with low payload stays NaN");
  CHECK(to_half(LOWP_BF16, -0.0f) == 0x8000, "-0 keeps its sign");
}

static void test_f16(void) {
#ifdef __FLT16_MAX__
  for (int i = 0; i < 2000000; i++) {
    float f = f32(next_random());
    /* Bias towards the f16 range: keep the sign and mantissa, pick an
     * exponent around [2^-27, 2^17]. */
    if (i & 1) f = f32((u32(f) & 0x807fffffu) | ((uint32_t)(100 + next_random() % 45) << 23));
    if (isnan(f)) continue;
    _Float16 h = (_Float16)f;
    uint16_t want;
    memcpy(&want, &h, 2);
    uint16_t got = to_half(LOWP_F16, f);
    if (got != want) {
      CHECK(0, "f16(%a) = %04x, want %04x", (double)f, got, want);
      break;
    }
    CHECK(from_half(LOWP_F16, got) == (float)h, "f16 widening of %04x", got);
  }
#else
  printf("no _Float16 in this compiler: f16 checked on fixed values only\n");
#endif
  CHECK(to_half(LOWP_F16, 65504.0f) == 0x7bff, "65504 is the largest f16");
  CHECK(to_half(LOWP_F16, 65519.99f) == 0x7bff, "below 65520 rounds down");
  CHECK(to_half(LOWP_F16, 65520.0f) == 0x7c00, "65520 rounds to infinity");
  CHECK(to_half(LOWP_F16, ldexpf(1.0f, -24)) == 0x0001, "2^-24 is the smallest subnormal");
  CHECK(to_half(LOWP_F16, ldexpf(1.0f, -25)) == 0x0000, "2^-25 ties to even (zero)");
  CHECK(to_half(LOWP_F16, ldexpf(3.0f, -25)) == 0x0002, "3 * 2^-25 ties to even (2 * 2^-24)");
  CHECK(from_half(LOWP_F16, 0x0001) == ldexpf(1.0f, -24), "subnormal widening");
  CHECK(from_half(LOWP_F16, 0x8400) == -ldexpf(1.0f, -14), "smallest normal, negative");
  CHECK(isnan(from_half(LOWP_F16, to_half(LOWP_F16, f32(0x7f800001u)))), "a NaN with low payload stays NaN");
}

static double one(const struct tol *t, float got, float cpu, double extra) {
  int64_t first;
  return tol_compare(t, &got, &cpu, &extra, 1, &first);
}

static void test_compare(void) {
  struct tol ulp1 = gpu_tol_f32("gelu"), bits = gpu_tol_f32("add"), attn = gpu_tol_f32("attention");
  float x = 1.0f, x1 = nextafterf(x, 2.0f), x2 = nextafterf(x1, 2.0f);
  CHECK(one(&ulp1, x1, x, 0) == 1.0, "1 ulp is the gelu limit");
  CHECK(one(&ulp1, x2, x, 0) == 2.0, "2 ulps are twice the gelu limit");
  CHECK(one(&ulp1, -0.0f, 0.0f, 0) == 0.0, "signed zeros are equal under ulp rules");
  CHECK(one(&ulp1, nextafterf(0.0f, 1.0f), nextafterf(0.0f, -1.0f), 0) == 2.0, "ulps across zero");
  CHECK(one(&ulp1, f32(0x7fc00001u), f32(0x7fc00000u), 0) == 0.0, "two NaNs match");
  CHECK(isinf(one(&ulp1, NAN, 1.0f, 0)), "NaN against a number fails");
  CHECK(one(&ulp1, INFINITY, INFINITY, 0) == 0.0, "equal infinities match");
  CHECK(isinf(one(&ulp1, INFINITY, FLT_MAX, 0)), "infinity against FLT_MAX fails");
  CHECK(isinf(one(&bits, -0.0f, 0.0f, 0)), "bitwise distinguishes -0 and 0");
  CHECK(isinf(one(&bits, x1, x, 0)), "bitwise rejects 1 ulp");
  CHECK(one(&bits, f32(0x7fc00001u), f32(0x7fc00001u), 0) == 0.0, "identical NaN bits are bitwise equal");
  /* add's rule: a GPU returns the canonical NaN (0x7fffffff) where x86 keeps
   * an operand's payload and sign (seen on an H100: y = nan, CPU -nan). */
  CHECK(one(&bits, f32(0x7fffffffu), f32(0xffc00000u), 0) == 0.0, "add: any NaN matches any NaN");
  CHECK(isinf(one(&bits, NAN, 1.0f, 0)), "add: NaN against a number fails");
  struct tol embed = gpu_tol_f32("embedding");
  CHECK(isinf(one(&embed, f32(0x7fffffffu), f32(0xffc00000u), 0)), "embedding copies bits: NaN payloads must match");
  /* silu: 3 ulp (the CPU's float32 silu, 1.59 ulp, against the GPU's). */
  struct tol silu = gpu_tol_f32("silu");
  CHECK(one(&silu, x2, x, 0) == 2.0 / 3.0, "2 ulps are two thirds of the silu limit");
  /* attention: 2e-5 + 1e-4 |cpu|. */
  CHECK(fabs(one(&attn, 1.0f + 6e-5f, 1.0f, 0) - 6e-5 / 1.2e-4) < 1e-3, "attention bound at 1");
  /* gemm: the per-element bound comes as extra. */
  struct tol gemm = gpu_tol_f32("gemm");
  CHECK(fabs(one(&gemm, 2.0f, 2.001f, 2e-3) - 0.5) < 1e-3, "gemm bound from extra");
  CHECK(isinf(one(&gemm, 2.0f, 2.001f, 0.0)), "gemm with a zero bound must be exact");
  /* bf16 rows: add has atol 0, r = 1.6e-2; softmax atol 1e-6. */
  struct tol add16 = gpu_tol_lowp("add", LOWP_BF16), sm16 = gpu_tol_lowp("softmax", LOWP_F16);
  CHECK(add16.abs == 0 && add16.rel == 1.6e-2, "bf16 add row");
  CHECK(sm16.abs == 1e-6 && sm16.rel == 2e-3, "f16 softmax row");
  CHECK(gpu_tol_lowp("attention", LOWP_BF16).abs == 1.6e-2, "attention atol = r");
  /* Every kernel of the corpus has a row of its own. */
  static const char *const kernels[] = {
      "silu",     "gelu",      "gelu_tanh", "add",           "mul",           "scale",
      "add_bias", "softmax",   "log_softmax", "rmsnorm",     "layernorm",     "gemm",
      "embedding", "rope",     "attention", "cross_entropy", "cross_entropy_backward",
      "adamw_step", "argmax",  "sample",    "topk_sample",   "topp_sample"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    CHECK(strstr(gpu_tol_f32(kernels[i]).rule, "not in docs") == NULL, "no docs/cuda.md row for %s", kernels[i]);
  CHECK(strstr(gpu_tol_f32("no_such_kernel").rule, "not in docs") != NULL, "unknown kernels are bitwise");
  /* first points at the first failing element. */
  float got[3] = {1.0f, x2, x2}, cpu[3] = {1.0f, x, x};
  int64_t first;
  tol_compare(&ulp1, got, cpu, NULL, 3, &first);
  CHECK(first == 1, "first failing element is 1, got %lld", (long long)first);
}

int main(void) {
  test_bf16();
  test_f16();
  test_compare();
  printf("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
