/* Tests of kb_adamw_step. */
#include "kernels/cpu/testutil/cpu_test.h"

/* The documented float32 sequence (PyTorch's single-tensor order), which the
 * kernel must reproduce bit for bit (tests build with -ffp-contract=off). */
static void ref_step_f32(float *p, float g, float *m, float *v, float lr, float b1, float b2, float eps, float wd,
                         int64_t step) {
  double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
  float decay = (float)(1.0 - (double)lr * wd), w1 = (float)(1.0 - b1), w2 = (float)(1.0 - b2);
  float ss = (float)(-(lr / bc1)), bc2s = (float)sqrt(bc2);
  *p = *p * decay;
  *m = fabsf(w1) < 0.5f ? *m + w1 * (g - *m) : g - (g - *m) * (1.0f - w1);
  *v = *v * b2;
  *v = *v + w2 * g * g;
  float denom = sqrtf(*v) / bc2s + eps;
  *p = *p + ss * *m / denom;
}

/* The header's formula in double: the mathematical step. */
static void ref_step_f64(double *p, double g, double *m, double *v, double lr, double b1, double b2, double eps,
                         double wd, int64_t step) {
  *p *= 1 - lr * wd;
  *m = b1 * *m + (1 - b1) * g;
  *v = b2 * *v + (1 - b2) * g * g;
  *p -= lr / (1 - pow(b1, (double)step)) * *m / (sqrt(*v) / sqrt(1 - pow(b2, (double)step)) + eps);
}

static void test_hand_step(void) {
  /* p = 1, g = 0.5, lr 0.1, betas (0.9, 0.999), eps 1e-8, wd 0.01, step 1:
   * p = 0.999; m = 0.05; v = 0.00025; bc1 = 0.1, bc2 = 0.001;
   * denom = sqrt(0.00025) / sqrt(0.001) + 1e-8 = 0.50000001;
   * p = 0.999 - (0.1 / 0.1) * 0.05 / 0.50000001 = 0.899000002. */
  float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  CHECK_OK(kb_adamw_step(NULL, 1, &p, &g, &m, &v, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1));
  CHECK_CLOSE(p, 0.899000002, 0, 2e-7);
  /* The betas are the floats nearest 0.9 and 0.999, so 1 - beta is not
   * exactly 0.1 / 0.001: m = 0.5 * (1 - 0.9f), v = 0.25 * (1 - 0.999f). */
  CHECK_CLOSE(m, 0.5 * (1.0 - (double)0.9f), 0, 1e-7);
  CHECK_CLOSE(v, 0.25 * (1.0 - (double)0.999f), 0, 1e-7);
}

static void test_multi_step_against_references(void) {
  static const float betas1[] = {0.9f, 0.3f, 0.0f}; /* 0.3: lerp's large-weight branch */
  for (int bi = 0; bi < 3; bi++) {
    enum { N = 33 };
    float p[N], g[N], m[N], v[N], rp[N], rm[N], rv[N];
    double dp[N], dm[N], dv[N];
    rand_fill(p, N, 1, -1, 1);
    fill_f(m, N, 0);
    fill_f(v, N, 0);
    memcpy(rp, p, sizeof p);
    memcpy(rm, m, sizeof m);
    memcpy(rv, v, sizeof v);
    for (int i = 0; i < N; i++) dp[i] = p[i], dm[i] = 0, dv[i] = 0;
    const float lr = 1e-2f, b1 = betas1[bi], b2 = 0.99f, eps = 1e-6f, wd = 0.1f;
    for (int64_t step = 1; step <= 5; step++) {
      rand_fill(g, N, 10 + (uint64_t)step, -2, 2);
      CHECK_OK(kb_adamw_step(NULL, N, p, g, m, v, lr, b1, b2, eps, wd, step));
      for (int i = 0; i < N; i++) {
        ref_step_f32(&rp[i], g[i], &rm[i], &rv[i], lr, b1, b2, eps, wd, step);
        ref_step_f64(&dp[i], g[i], &dm[i], &dv[i], lr, b1, b2, eps, wd, step);
      }
      CHECK(same_bits_f(p, rp, N) && same_bits_f(m, rm, N) && same_bits_f(v, rv, N));
      for (int i = 0; i < N; i++) {
        CHECK_CLOSE(p[i], dp[i], 1e-6, 1e-5);
        CHECK_CLOSE(m[i], dm[i], 1e-6, 1e-5);
        CHECK_CLOSE(v[i], dv[i], 1e-9, 1e-5);
      }
    }
  }
}

static void test_edge_sizes_and_empty(void) {
  static const int64_t sizes[] = {1, 7, 9, 17, 33};
  for (int s = 0; s < 5; s++) {
    int64_t n = sizes[s];
    float *p = alloc_f(n), *g = alloc_f(n), *m = alloc_f(n), *v = alloc_f(n);
    rand_fill(p, n, 3, -1, 1);
    rand_fill(g, n, 4, -1, 1);
    float p0 = p[n - 1], g0 = g[n - 1], m0 = 0, v0 = 0;
    CHECK_OK(kb_adamw_step(NULL, n, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 3));
    ref_step_f32(&p0, g0, &m0, &v0, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 3);
    CHECK(p[n - 1] == p0 && m[n - 1] == m0 && v[n - 1] == v0);
    free(p);
    free(g);
    free(m);
    free(v);
  }
  CHECK_OK(kb_adamw_step(NULL, 0, NULL, NULL, NULL, NULL, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1));
}

static void test_threads_bitwise_identical(void) {
  enum { N = 100003 };
  kb_context *c1 = make_ctx(1), *c3 = make_ctx(3);
  float *p1 = alloc_f(N), *p3 = alloc_f(N), *g = alloc_f(N), *m1 = alloc_f(N), *m3 = alloc_f(N), *v1 = alloc_f(N),
        *v3 = alloc_f(N);
  rand_fill(p1, N, 1, -1, 1);
  memcpy(p3, p1, N * sizeof(float));
  for (int64_t step = 1; step <= 3; step++) {
    rand_fill(g, N, 2 + (uint64_t)step, -1, 1);
    CHECK_OK(kb_adamw_step(c1, N, p1, g, m1, v1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, step));
    CHECK_OK(kb_adamw_step(c3, N, p3, g, m3, v3, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, step));
  }
  CHECK(same_bits_f(p1, p3, N) && same_bits_f(m1, m3, N) && same_bits_f(v1, v3, N));
  free(p1);
  free(p3);
  free(g);
  free(m1);
  free(m3);
  free(v1);
  free(v3);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
}

static void test_bad_inputs(void) {
  kb_context *ctx = make_ctx(1);
  float p[4], g[4] = {1, 2, 3, 4}, m[4], v[4], buf[16];
  fill_f(p, 4, SENTINEL_F);
  fill_f(m, 4, SENTINEL_F);
  fill_f(v, 4, SENTINEL_F);
#define AW(n, P, G, M, V, lr, b1, b2, eps, wd, step) kb_adamw_step(ctx, n, P, G, M, V, lr, b1, b2, eps, wd, step)
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "kb_adamw_step: n must be >= 0",
              AW(-1, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_OUT_OF_MEMORY, "size of params overflows",
              AW(HUGE_DIM, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "params must not be NULL",
              AW(4, NULL, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "grads must not be NULL",
              AW(4, p, NULL, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "m must not be NULL", AW(4, p, g, NULL, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v must not be NULL", AW(4, p, g, m, NULL, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "lr must be finite", AW(4, p, g, m, v, NAN, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "lr must be finite", AW(4, p, g, m, v, INFINITY, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "lr must be >= 0", AW(4, p, g, m, v, -1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta1 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, 1.0f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta1 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, -0.1f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta1 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, NAN, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta2 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, 0.9f, 1.0f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta2 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, 0.9f, -1.0f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "beta2 must be in [0, 1)", AW(4, p, g, m, v, 1e-3f, 0.9f, NAN, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be >= 0", AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, -1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "eps must be finite", AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, NAN, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight_decay must be >= 0",
              AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, -0.1f, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "weight_decay must be finite",
              AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, INFINITY, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "step must be >= 1, got 0", AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "step must be >= 1, got -3", AW(4, p, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, -3));
  CHECK(all_f(p, 4, SENTINEL_F) && all_f(m, 4, SENTINEL_F) && all_f(v, 4, SENTINEL_F));
  /* No two of params, grads, m, v may overlap (none is an alias of another). */
  fill_f(buf, 16, 0.25f);
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "params must not overlap grads",
              AW(4, buf, buf, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "params must not overlap m",
              AW(4, buf, g, buf + 3, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "params must not overlap v",
              AW(4, buf + 2, g, m, buf, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "m must not overlap grads",
              AW(4, p, buf, buf + 1, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "m must not overlap v",
              AW(4, p, g, buf, buf + 3, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK_FAILS(ctx, KB_STATUS_INVALID_ARGUMENT, "v must not overlap grads",
              AW(4, p, buf + 3, m, buf, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1));
  CHECK(all_f(buf, 16, 0.25f) && all_f(p, 4, SENTINEL_F));
#undef AW
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_hand_step);
  KB_RUN(test_multi_step_against_references);
  KB_RUN(test_edge_sizes_and_empty);
  KB_RUN(test_threads_bitwise_identical);
  KB_RUN(test_bad_inputs);
  return kb_test_summary();
}
