/* Every entry of the vector kernels' table (vec_kernels.h) on every
 * instruction-set level this CPU runs gives the scalar level's bits: all
 * dtypes, lengths around the 16-lane vectors and the row blocks, in place,
 * and inputs full of special values (NaN with payloads, +-inf, +-0,
 * subnormals, the largest floats, wide and narrow magnitudes). */
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/testutil/cpu_test.h"

static const struct kb_cpu_ops *levels[KB_ISA_COUNT];
static const struct kb_vec_ops *scalar;

/* Inputs: magnitudes around `scale`, and with `specials` one element in 8
 * special. */
static void fill_mixed(float *x, int64_t n, uint64_t seed, float scale, bool specials) {
  static const uint32_t kSpecial[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u, 0xff800000u,
                                      0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu,
                                      0xff7fffffu, 0x00800000u, 0x3f800000u, 0xbf800000u};
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = test_next(&s);
    if (specials && (r & 7) == 0) {
      uint32_t u = kSpecial[(r >> 3) % (sizeof kSpecial / sizeof kSpecial[0])];
      memcpy(&x[i], &u, sizeof u);
    } else {
      double g = ((double)(r >> 11) * (1.0 / 9007199254740992.0)) * 2.0 - 1.0;
      x[i] = (float)(g * scale);
    }
  }
}

/* The 16-bit patterns of x in dtype dt (F32: copied as floats). */
static void to_dt(int dt, const float *x, void *out, int64_t n) {
  if (dt == KB_VEC_F32)
    memcpy(out, x, (size_t)n * sizeof(float));
  else
    kb_half_narrow(dt == KB_VEC_F16, x, (uint16_t *)out, n);
}

static int64_t bad_total;

/* A level's output must be the scalar level's, byte for byte. */
static void compare(const char *what, int64_t n, const void *want, const void *got, size_t bytes, int level) {
  if (memcmp(want, got, bytes) == 0) return;
  CHECK(!"a level's output differs from the scalar level's");
  if (bad_total++ < 10)
    fprintf(stderr, "  %s (n = %lld): level %s differs from scalar\n", what, (long long)n, kb__isa_name((kb_isa)level));
}

#define MAXN 72000
static float xa[MAXN], xb[MAXN], xc[MAXN];
static unsigned char in1[MAXN * 4], in2[MAXN * 4], in3[MAXN * 4], want[MAXN * 4], got[MAXN * 4];
static int32_t tg[MAXN], iw[MAXN], ig[MAXN];

static const int64_t kLens[] = {0, 1, 2, 7, 15, 16, 17, 31, 33, 100, 1023, 1024, 1025, 3000};

static void test_elementwise(void) {
  for (int dt = 0; dt < 3; dt++) {
    size_t es = (size_t)kb_vec_size(dt);
    for (size_t li = 0; li < sizeof kLens / sizeof kLens[0]; li++) {
      int64_t n = kLens[li];
      for (int sp = 0; sp < 2; sp++) {
        fill_mixed(xa, n, 11 + (uint64_t)n, sp ? 3.0f : 40.0f, sp);
        fill_mixed(xb, n, 12 + (uint64_t)n, 5.0f, sp);
        to_dt(dt, xa, in1, n);
        to_dt(dt, xb, in2, n);
        /* gated is unary then binary (MUL) on the widened values, narrowed
         * once: the contract kb_glu relies on, checked on the scalar level
         * (the loop below holds every level to the scalar level's bits). */
        for (int f = KB_VM_SILU; f <= KB_VM_GELU_TANH; f++) {
          float *wa = (float *)(void *)want, *wb = (float *)(void *)in3;
          if (dt == KB_VEC_F32) {
            memcpy(wa, in1, (size_t)n * 4);
            memcpy(wb, in2, (size_t)n * 4);
          } else {
            scalar->convert(dt, 0, n, in1, wa);
            scalar->convert(dt, 0, n, in2, wb);
          }
          scalar->unary(f, KB_VEC_F32, n, wa, wa);
          scalar->binary(KB_VEC_MUL, KB_VEC_F32, n, wa, wb, wa);
          if (dt != KB_VEC_F32) {
            scalar->convert(dt, 1, n, wa, wb);
            memcpy(want, wb, (size_t)n * es);
          }
          scalar->gated(f, dt, n, in1, in2, got);
          compare("gated = unary + binary", n, want, got, (size_t)n * es, KB_ISA_SCALAR);
        }
        for (int l = 1; l < KB_ISA_COUNT; l++) {
          if (levels[l] == NULL) continue;
          const struct kb_vec_ops *v = &levels[l]->vec;
          const int fns[] = {KB_VM_SILU, KB_VM_GELU, KB_VM_GELU_TANH};
          for (int f = 0; f < 3; f++) {
            scalar->unary(fns[f], dt, n, in1, want);
            memcpy(got, in1, (size_t)n * es); /* in place */
            v->unary(fns[f], dt, n, got, got);
            compare("unary", n, want, got, (size_t)n * es, l);
          }
          for (int f = 0; f < 3; f++) {
            scalar->gated(fns[f], dt, n, in1, in2, want);
            memcpy(got, in2, (size_t)n * es); /* in place, over u */
            v->gated(fns[f], dt, n, in1, got, got);
            compare("gated", n, want, got, (size_t)n * es, l);
          }
          for (int op = 0; op < 2; op++) {
            scalar->binary(op, dt, n, in1, in2, want);
            v->binary(op, dt, n, in1, in2, got);
            compare("binary", n, want, got, (size_t)n * es, l);
          }
          scalar->scale(dt, n, -1.75f, in1, want);
          v->scale(dt, n, -1.75f, in1, got);
          compare("scale", n, want, got, (size_t)n * es, l);
          if (n > 0 && n % 3 == 0) {
            scalar->add_bias(dt, 3, n / 3, in1, in2, want);
            v->add_bias(dt, 3, n / 3, in1, in2, got);
            compare("add_bias", n, want, got, (size_t)n * es, l);
          }
          if (dt != KB_VEC_F32) {
            scalar->convert(dt, 0, n, in1, want);
            v->convert(dt, 0, n, in1, got);
            compare("widen", n, want, got, (size_t)n * 4, l);
            scalar->convert(dt, 1, n, xa, want);
            v->convert(dt, 1, n, xa, got);
            compare("narrow", n, want, got, (size_t)n * es, l);
          }
          if (dt == KB_VEC_F32) {
            for (int f = 0; f < KB_VM_FN_COUNT; f++) {
              scalar->math[f](n, xa, (float *)want);
              v->math[f](n, xa, (float *)got);
              compare("math", n, want, got, (size_t)n * 4, l);
            }
            double *wd = (double *)(void *)want, *gd = (double *)(void *)got;
            int64_t m = n < MAXN / 2 ? n : MAXN / 2;
            for (int64_t i = 0; i < m; i++) xc[i] = isnan(xb[i]) || xb[i] == INFINITY ? -INFINITY : xb[i];
            scalar->exp_weights(m, xc, 3.0, 0.7, wd);
            v->exp_weights(m, xc, 3.0, 0.7, gd);
            compare("exp_weights", m, wd, gd, (size_t)m * 8, l);
          }
        }
      }
    }
  }
}

/* Rows: softmax, log_softmax, the norms; widths around the vectors and the
 * blocks, one row long enough for longer blocks; rows with special values,
 * rows with a maximum beyond 3e5 (the TwoSum form), all -inf prefixes. */
static void test_rows(void) {
  const int64_t cols_list[] = {1, 7, 16, 17, 100, 1024, 1025, 2100, 70000};
  for (int dt = 0; dt < 3; dt++) {
    size_t es = (size_t)kb_vec_size(dt);
    for (size_t ci = 0; ci < sizeof cols_list / sizeof cols_list[0]; ci++) {
      int64_t cols = cols_list[ci], rows = cols > 5000 ? 1 : 4, n = rows * cols;
      for (int variant = 0; variant < 4; variant++) {
        float scale = variant == 2 ? 1e6f : 30.0f;
        fill_mixed(xa, n, 100 + (uint64_t)(cols * 4 + variant), scale, variant == 1);
        if (variant == 3) /* leading -inf blocks, then finite values */
          for (int64_t i = 0; i < n; i++)
            if (i % cols < cols / 2 + 1) xa[i] = -INFINITY;
        fill_mixed(xb, cols, 7, 2.0f, false);
        fill_mixed(xc, cols, 8, 2.0f, false);
        to_dt(dt, xa, in1, n);
        to_dt(dt, xb, in2, cols);
        to_dt(dt, xc, in3, cols);
        for (int l = 1; l < KB_ISA_COUNT; l++) {
          if (levels[l] == NULL) continue;
          const struct kb_vec_ops *v = &levels[l]->vec;
          for (int lg = 0; lg < 2; lg++) {
            scalar->softmax(dt, lg, rows, cols, in1, want);
            memcpy(got, in1, (size_t)n * es);
            v->softmax(dt, lg, rows, cols, got, got);
            compare(lg ? "log_softmax" : "softmax", cols, want, got, (size_t)n * es, l);
          }
          scalar->rmsnorm(dt, rows, cols, in1, in2, 1e-5f, want);
          v->rmsnorm(dt, rows, cols, in1, in2, 1e-5f, got);
          compare("rmsnorm", cols, want, got, (size_t)n * es, l);
          for (int wb = 0; wb < 4; wb++) {
            const void *w = wb & 1 ? in2 : NULL, *b = wb & 2 ? in3 : NULL;
            scalar->layernorm(dt, rows, cols, in1, w, b, 1e-5f, want);
            v->layernorm(dt, rows, cols, in1, w, b, 1e-5f, got);
            compare("layernorm", cols, want, got, (size_t)n * es, l);
          }
          if (dt == KB_VEC_F32) {
            for (int64_t r = 0; r < rows; r++) tg[r] = r == 1 ? -100 : (int32_t)((r * 7919) % cols);
            scalar->ce_forward(rows, cols, xa, tg, -100, (float *)want);
            v->ce_forward(rows, cols, xa, tg, -100, (float *)got);
            compare("ce_forward", cols, want, got, (size_t)rows * 4, l);
            scalar->ce_backward(rows, cols, xa, tg, -100, -0.37, (float *)want);
            memcpy(got, xa, (size_t)n * 4);
            v->ce_backward(rows, cols, (float *)got, tg, -100, -0.37, (float *)got);
            compare("ce_backward", cols, want, got, (size_t)n * 4, l);
            scalar->argmax(rows, cols, xa, iw);
            v->argmax(rows, cols, xa, ig);
            compare("argmax", cols, iw, ig, (size_t)rows * 4, l);
          }
        }
      }
    }
  }
}

static void test_rope_adamw(void) {
  const int64_t dims[] = {2, 8, 30, 32, 34, 96, 600};
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
    int64_t hd = dims[d], heads = 3, seq = 5, n = seq * heads * hd;
    int32_t pos[5] = {0, 1, 7, 4096, 2000000000};
    fill_mixed(xa, n, 31 + (uint64_t)hd, 4.0f, hd == 30);
    for (int l = 1; l < KB_ISA_COUNT; l++) {
      if (levels[l] == NULL) continue;
      scalar->rope(0, seq, heads, hd, xa, pos, 10000.0, (float *)want);
      memcpy(got, xa, (size_t)n * 4);
      levels[l]->vec.rope(0, seq, heads, hd, (float *)got, pos, 10000.0, (float *)got);
      compare("rope", hd, want, got, (size_t)n * 4, l);
    }
  }
  /* kb_rope_ex's sin and cos: angles over [0, 2^31), odd lengths. */
  for (size_t li = 0; li < sizeof kLens / sizeof kLens[0]; li++) {
    int64_t n = kLens[li] < 2000 ? kLens[li] : 2000;
    double *a = (double *)(void *)in1, *sw = (double *)(void *)want, *cw = sw + n, *sg = (double *)(void *)got,
           *cg = sg + n;
    for (int64_t i = 0; i < n; i++)
      a[i] = i % 3 == 0 ? (double)i * 0.37 : ldexp((double)(i * 2654435761u % 1000003), (int)(i % 11));
    for (int l = 1; l < KB_ISA_COUNT; l++) {
      if (levels[l] == NULL) continue;
      scalar->sincos_f64(n, a, sw, cw);
      levels[l]->vec.sincos_f64(n, a, sg, cg);
      compare("sincos_f64", n, want, got, (size_t)n * 16, l);
    }
  }
  for (size_t li = 0; li < sizeof kLens / sizeof kLens[0]; li++) {
    int64_t n = kLens[li];
    struct kb_adamw_coef k = {0.999f, 0.1f, 0.9f, 0.999f, 0.001f, -0.01f, 0.03f, 1e-8f, 1};
    for (int small = 0; small < 2; small++) {
      k.small_w1 = small;
      float *p0 = (float *)(void *)in1, *g = (float *)(void *)in2, *m0 = (float *)(void *)in3;
      fill_mixed(p0, n, 41, 1.0f, true);
      fill_mixed(g, n, 42, 0.1f, true);
      fill_mixed(m0, n, 43, 0.01f, false);
      fill_mixed(xc, n, 44, 0.01f, false);
      for (int64_t i = 0; i < n; i++) xc[i] = fabsf(xc[i]);
      float *pw = alloc_f(n), *mw = alloc_f(n), *vw = alloc_f(n), *pg = alloc_f(n), *mg = alloc_f(n), *vg = alloc_f(n);
      for (int l = 1; l < KB_ISA_COUNT; l++) {
        if (levels[l] == NULL) continue;
        memcpy(pw, p0, (size_t)n * 4);
        memcpy(mw, m0, (size_t)n * 4);
        memcpy(vw, xc, (size_t)n * 4);
        memcpy(pg, p0, (size_t)n * 4);
        memcpy(mg, m0, (size_t)n * 4);
        memcpy(vg, xc, (size_t)n * 4);
        scalar->adamw(n, pw, g, mw, vw, &k);
        levels[l]->vec.adamw(n, pg, g, mg, vg, &k);
        compare("adamw p", n, pw, pg, (size_t)n * 4, l);
        compare("adamw m", n, mw, mg, (size_t)n * 4, l);
        compare("adamw v", n, vw, vg, (size_t)n * 4, l);
      }
      free(pw);
      free(mw);
      free(vw);
      free(pg);
      free(mg);
      free(vg);
    }
  }
}

int main(void) {
  for (int l = 0; l < KB_ISA_COUNT; l++) {
    levels[l] = kb__cpu_ops_for((kb_isa)l);
    printf("level %s: %s\n", kb__isa_name((kb_isa)l), levels[l] ? "compared" : "not run by this CPU");
  }
  scalar = &levels[KB_ISA_SCALAR]->vec;
  KB_RUN(test_elementwise);
  KB_RUN(test_rows);
  KB_RUN(test_rope_adamw);
  return kb_test_summary();
}
