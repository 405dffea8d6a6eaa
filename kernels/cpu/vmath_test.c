/* Tests of the vector math layer (vmath.h): the documented error bounds on
 * 2^24 inputs spread over every exponent and sign (the exhaustive 2^32 run
 * is testutil/vmath_exhaustive.c), special values, and the same bits on
 * every instruction-set level this CPU runs, for every array length. */
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/testutil/cpu_test.h"
#include "kernels/cpu/testutil/vmath_check.h"

#define N_SAMPLE ((int64_t)1 << 24)
#define M_LN2_VALUE 0.69314718055994530942
#define BLOCK 4096

/* Input i of the sample: the bit pattern i * 256 plus a pseudo-random low
 * byte, so every sign and exponent gets 2^15 inputs (2^24 in all). */
static uint32_t sample_bits(int64_t i) {
  uint64_t s = (uint64_t)i;
  return (uint32_t)(i << 8) | (uint32_t)(test_next(&s) & 0xff);
}

static const struct kb_cpu_ops *levels[KB_ISA_COUNT];

static void find_levels(void) {
  for (int l = 0; l < KB_ISA_COUNT; l++) levels[l] = kb__cpu_ops_for((kb_isa)l);
}

/* Every level's output must be the scalar level's, bit for bit. */
static int64_t mismatches(const char *name, enum kb_vm_fn fn, const float *x, const float *y_scalar, int64_t n, float *scratch) {
  int64_t bad = 0;
  for (int l = 1; l < KB_ISA_COUNT; l++) {
    if (levels[l] == NULL) continue;
    levels[l]->vec.math[fn](n, x, scratch);
    for (int64_t i = 0; i < n; i++)
      if (vmc_bits(scratch[i]) != vmc_bits(y_scalar[i]) && bad++ < 3)
        fprintf(stderr, "  %s level %s: x = %a gives %a, scalar %a\n", name, kb__isa_name((kb_isa)l),
                (double)x[i], (double)scratch[i], (double)y_scalar[i]);
  }
  return bad;
}

static void test_sampled_bounds_and_levels(void) {
  float *x = alloc_f(BLOCK), *y = alloc_f(BLOCK), *z = alloc_f(BLOCK);
  for (int c = 0; c < VMC_NCASES; c++) {
    const struct vmc_case *fc = &vmc_cases[c];
    struct vmc_stats st = {0};
    int64_t bad = 0;
    for (int64_t b = 0; b < N_SAMPLE; b += BLOCK) {
      for (int64_t i = 0; i < BLOCK; i++) x[i] = vmc_float(sample_bits(b + i));
      levels[KB_ISA_SCALAR]->vec.math[fc->fn](BLOCK, x, y);
      for (int64_t i = 0; i < BLOCK; i++) vmc_add(&st, x[i], y[i], fc->ref((double)x[i]));
      bad += mismatches(fc->name, fc->fn, x, y, BLOCK, z);
    }
    printf("%s: %llu inputs, max %.4f ulp (normal results, at %a), %.4f ulp (subnormal, at %a)\n", fc->name,
           (unsigned long long)st.count, st.max_normal, (double)st.worst_normal, st.max_subnormal,
           (double)st.worst_subnormal);
    CHECK(st.max_normal <= fc->bound_normal);
    CHECK(st.max_subnormal <= fc->bound_subnormal);
    if (fc->bound_rel > 0) {
      printf("%s: max relative error %.4f x 2^-23 (normal results, at %a)\n", fc->name, st.max_rel,
             (double)st.worst_rel);
      CHECK(st.max_rel <= fc->bound_rel);
    }
    CHECK(bad == 0);
  }
  free(x);
  free(y);
  free(z);
}

/* Tails: every length up to 3 vectors, at an odd offset, and y == x. */
static void test_lengths_and_in_place(void) {
  float x[64], want[64], got[64];
  rand_fill(x, 64, 7, -30.0f, 30.0f);
  for (int c = 0; c < VMC_NCASES; c++) {
    enum kb_vm_fn fn = vmc_cases[c].fn;
    for (int64_t n = 0; n <= 49; n++) {
      levels[KB_ISA_SCALAR]->vec.math[fn](n, x + 1, want);
      for (int l = 0; l < KB_ISA_COUNT; l++) {
        if (levels[l] == NULL) continue;
        fill_f(got, 64, SENTINEL_F);
        memcpy(got + 1, x + 1, (size_t)n * sizeof(float));
        levels[l]->vec.math[fn](n, got + 1, got + 1);
        CHECK(same_bits_f(got + 1, want, n));
        CHECK(all_f(got + 1 + n, 63 - n, SENTINEL_F) && got[0] == SENTINEL_F);
      }
    }
  }
}

/* f(x) on every level: the scalar level's bits, returned. */
static float eval_all(enum kb_vm_fn fn, float x) {
  float y0;
  levels[KB_ISA_SCALAR]->vec.math[fn](1, &x, &y0);
  for (int l = 1; l < KB_ISA_COUNT; l++) {
    if (levels[l] == NULL) continue;
    float y;
    levels[l]->vec.math[fn](1, &x, &y);
    CHECK(vmc_bits(y) == vmc_bits(y0));
  }
  return y0;
}

static void test_exp_special_values(void) {
  CHECK(eval_all(KB_VM_EXP, 0.0f) == 1.0f);
  CHECK(eval_all(KB_VM_EXP, -0.0f) == 1.0f);
  CHECK(eval_all(KB_VM_EXP, INFINITY) == INFINITY);
  float z = eval_all(KB_VM_EXP, -INFINITY);
  CHECK(z == 0.0f && !signbit(z));
  /* The largest input with a finite result, and the next float. */
  CHECK(eval_all(KB_VM_EXP, 0x1.62e42ep+6f) == 0x1.ffff08p+127f);
  CHECK(eval_all(KB_VM_EXP, 0x1.62e430p+6f) == INFINITY);
  CHECK(eval_all(KB_VM_EXP, 1e30f) == INFINITY);
  /* Subnormal results are not flushed; below half the smallest one, +0. */
  CHECK(eval_all(KB_VM_EXP, -100.0f) == (float)exp(-100.0));
  CHECK(eval_all(KB_VM_EXP, -103.9f) == 0x1p-149f);
  CHECK(eval_all(KB_VM_EXP, -104.0f) == 0.0f);
  CHECK(eval_all(KB_VM_EXP, -1e30f) == 0.0f);
  CHECK(eval_all(KB_VM_EXP, 1.0f) == 0x1.5bf0a8p+1f);
  /* Tiny arguments: 1 + x rounds to 1 or to the neighbours of 1 exactly. */
  CHECK(eval_all(KB_VM_EXP, 0x1p-30f) == 1.0f);
  CHECK(eval_all(KB_VM_EXP, 0x1p-23f) == 0x1.000002p+0f);
  CHECK(eval_all(KB_VM_EXP, -0x1p-24f) == 0x1.fffffep-1f);
  /* NaN: the same sign and payload, made quiet. */
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u, 0x7fbfffffu};
  for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
    CHECK(vmc_bits(eval_all(KB_VM_EXP, vmc_float(nans[i]))) == (nans[i] | 0x00400000u));
}

/* The special values of log, tanh, erf and the activations (vmath.h,
 * docs/kernels.md), on every level. */
static void test_other_special_values(void) {
  float v;
  CHECK(eval_all(KB_VM_LOG, 0.0f) == -INFINITY && eval_all(KB_VM_LOG, -0.0f) == -INFINITY);
  CHECK(isnan(eval_all(KB_VM_LOG, -1.0f)) && isnan(eval_all(KB_VM_LOG, -INFINITY)));
  CHECK(eval_all(KB_VM_LOG, INFINITY) == INFINITY && eval_all(KB_VM_LOG, 1.0f) == 0.0f);
  CHECK(eval_all(KB_VM_LOG, 0x1p-149f) == (float)(-149.0 * M_LN2_VALUE));
  CHECK(eval_all(KB_VM_LOG, 0x1p100f) == (float)(100.0 * M_LN2_VALUE));
  v = eval_all(KB_VM_TANH, -0.0f);
  CHECK(v == 0.0f && signbit(v));
  CHECK(eval_all(KB_VM_TANH, INFINITY) == 1.0f && eval_all(KB_VM_TANH, -INFINITY) == -1.0f);
  CHECK(eval_all(KB_VM_TANH, 0x1p-140f) == 0x1p-140f && eval_all(KB_VM_TANH, 20.0f) == 1.0f);
  v = eval_all(KB_VM_ERF, -0.0f);
  CHECK(v == 0.0f && signbit(v));
  CHECK(eval_all(KB_VM_ERF, INFINITY) == 1.0f && eval_all(KB_VM_ERF, -INFINITY) == -1.0f);
  CHECK(eval_all(KB_VM_ERF, 0x1p-140f) == (float)(0x1p-140 * 1.1283791670955126));
  const enum kb_vm_fn acts[] = {KB_VM_SILU, KB_VM_GELU, KB_VM_GELU_TANH};
  for (int a = 0; a < 3; a++) {
    CHECK(eval_all(acts[a], INFINITY) == INFINITY);
    CHECK(isnan(eval_all(acts[a], -INFINITY)));
    v = eval_all(acts[a], -0.0f);
    CHECK(v == 0.0f && signbit(v));
    v = eval_all(acts[a], 0.0f);
    CHECK(v == 0.0f && !signbit(v));
    v = eval_all(acts[a], -200.0f); /* underflows to -0 */
    CHECK(v == 0.0f && signbit(v));
    CHECK(eval_all(acts[a], 1e30f) == 1e30f);
  }
  /* NaN in, the same NaN made quiet out (sign and payload kept). */
  const enum kb_vm_fn all[] = {KB_VM_LOG, KB_VM_TANH, KB_VM_ERF, KB_VM_SILU, KB_VM_GELU, KB_VM_GELU_TANH};
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff812345u};
  for (int f = 0; f < 6; f++)
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++)
      CHECK(vmc_bits(eval_all(all[f], vmc_float(nans[i]))) == (nans[i] | 0x00400000u));
}

/* The 16-bit storage of the vector kernels against half.c, the definition:
 * widening every one of the 65536 patterns of each format, narrowing 2^24
 * floats spread over every exponent (testutil/vmath_exhaustive.c does all
 * 2^32), on every level. */
static void test_half_conversions(void) {
  static uint16_t h[65536], h2[BLOCK];
  static float f[65536], want_f[65536];
  static uint16_t want_h[BLOCK];
  float *x = alloc_f(BLOCK);
  for (int fmt = 0; fmt < 2; fmt++) {
    int dt = fmt ? KB_VEC_F16 : KB_VEC_BF16;
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    kb_half_widen(fmt, h, want_f, 65536);
    for (int l = 0; l < KB_ISA_COUNT; l++) {
      if (levels[l] == NULL) continue;
      levels[l]->vec.convert(dt, 0, 65536, h, f);
      CHECK(memcmp(f, want_f, sizeof f) == 0);
    }
    int64_t bad = 0;
    for (int64_t b = 0; b < N_SAMPLE; b += BLOCK) {
      for (int64_t i = 0; i < BLOCK; i++) x[i] = vmc_float(sample_bits(b + i));
      kb_half_narrow(fmt, x, want_h, BLOCK);
      for (int l = 0; l < KB_ISA_COUNT; l++) {
        if (levels[l] == NULL) continue;
        levels[l]->vec.convert(dt, 1, BLOCK, x, h2);
        if (memcmp(h2, want_h, sizeof want_h) != 0) bad++;
      }
    }
    CHECK(bad == 0);
  }
  free(x);
}

/* The double-precision exp (vmath.h): within 2 double ulps of the C
 * library's over 2^20 arguments spread over [-746, 711] and the same bits on
 * every level; the ends of the range and special values. */
static void test_exp_f64(void) {
  enum { M = 1 << 20 };
  double *x = (double *)malloc(M * sizeof(double)), *y = (double *)malloc(M * sizeof(double));
  double *z = (double *)malloc(M * sizeof(double));
  uint64_t s = 99;
  for (int64_t i = 0; i < M; i++) {
    double u = (double)(test_next(&s) >> 11) * (1.0 / 9007199254740992.0);
    x[i] = -746.0 + 1457.0 * u;
    if (i % 4 == 1) x[i] *= 1e-3; /* small arguments too */
    if (i % 4 == 2) x[i] *= 1e-12;
  }
  levels[KB_ISA_SCALAR]->vec.exp_f64(M, x, y);
  double worst = 0.0;
  for (int64_t i = 0; i < M; i++) {
    double w = exp(x[i]);
    if (w < 0x1p-1022 || isinf(w)) continue; /* subnormal or overflowing results: checked below */
    double ulp = ldexp(1.0, ilogb(w) - 52), e = fabs(y[i] - w) / ulp;
    if (e > worst) worst = e;
  }
  printf("exp in double: max %.2f double ulps against the C library\n", worst);
  CHECK(worst <= 2.0);
  for (int l = 1; l < KB_ISA_COUNT; l++) {
    if (levels[l] == NULL) continue;
    levels[l]->vec.exp_f64(M, x, z);
    CHECK(memcmp(y, z, M * sizeof(double)) == 0);
  }
  const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, 709.78, 709.79, 710.0, -745.0, -745.2, -746.0, -1e300, 1e300};
  double out[12];
  levels[KB_ISA_SCALAR]->vec.exp_f64(12, sp, out);
  CHECK(out[0] == 1.0 && out[1] == 1.0 && out[2] == INFINITY && out[3] == 0.0);
  CHECK(isfinite(out[4]) && out[4] > 1.79e308 && out[5] == INFINITY && out[6] == INFINITY);
  CHECK(out[7] == 0x1p-1074 && out[8] == 0.0 && out[9] == 0.0 && out[10] == 0.0 && out[11] == INFINITY);
  double nan_in = NAN, nan_out;
  levels[KB_ISA_SCALAR]->vec.exp_f64(1, &nan_in, &nan_out);
  CHECK(isnan(nan_out));
  free(x);
  free(y);
  free(z);
}

int main(void) {
  find_levels();
  CHECK(levels[KB_ISA_SCALAR] != NULL);
  for (int l = 0; l < KB_ISA_COUNT; l++) printf("level %s: %s\n", kb__isa_name((kb_isa)l), levels[l] ? "tested" : "not run by this CPU");
  KB_RUN(test_sampled_bounds_and_levels);
  KB_RUN(test_lengths_and_in_place);
  KB_RUN(test_exp_special_values);
  KB_RUN(test_other_special_values);
  KB_RUN(test_half_conversions);
  KB_RUN(test_exp_f64);
  return kb_test_summary();
}
