/* isa_outputs.c - prints a hash of the output of kernels whose vector code
 * differs by instruction-set level, on shapes that cross every blocking
 * boundary, once with 1 thread and once with 3.  isa_test.sh runs it under
 * KB_CPU_ISA=scalar, avx2 and avx512 and requires identical lines: the same
 * bits on every level and every thread count.
 *
 * Output: "isa LEVEL" then one "NAME HASH" line per case; exit status 2
 * when kb_context_create refuses the forced level as UNSUPPORTED (the CPU
 * lacks it), 1 when it fails otherwise ("STATUS: message" on stderr), a
 * call fails or the thread counts disagree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"

static uint64_t state;

static float next_uniform(void) {
  /* splitmix64, uniform in [-1, 1) */
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 40) * (1.0 / 8388608.0) - 1.0);
}

static float *random_floats(int64_t n, uint64_t seed) {
  float *p = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (p == NULL) exit(1);
  state = seed;
  for (int64_t i = 0; i < n; i++) p[i] = next_uniform();
  return p;
}

static uint64_t fnv1a(const void *data, size_t bytes) {
  const unsigned char *b = (const unsigned char *)data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static int failures;

static void check(kb_status s, kb_context *ctx, const char *what) {
  if (s != KB_STATUS_OK) {
    fprintf(stderr, "%s: %s: %s\n", what, kb_status_string(s), kb_context_last_error(ctx));
    failures++;
  }
}

/* One gemm case on both contexts; prints its hash, compares thread counts. */
static void gemm_case(kb_context *c1, kb_context *c3, const char *name, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      int64_t pad, float alpha, float beta) {
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  int64_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
  float *a = random_floats(ar * lda, 11 + (uint64_t)m), *b = random_floats(br * ldb, 13 + (uint64_t)n);
  float *c0 = random_floats(m * ldc, 17);
  float *x = (float *)malloc((size_t)(m * ldc) * sizeof(float)), *y = (float *)malloc((size_t)(m * ldc) * sizeof(float));
  if (x == NULL || y == NULL) exit(1);
  memcpy(x, c0, (size_t)(m * ldc) * sizeof(float));
  memcpy(y, c0, (size_t)(m * ldc) * sizeof(float));
  check(kb_gemm(c1, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, x, ldc), c1, name);
  check(kb_gemm(c3, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, y, ldc), c3, name);
  if (memcmp(x, y, (size_t)(m * ldc) * sizeof(float)) != 0) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  printf("%s %016llx\n", name, (unsigned long long)fnv1a(x, (size_t)(m * ldc) * sizeof(float)));
  free(a);
  free(b);
  free(c0);
  free(x);
  free(y);
}

static void gemm_half_case(kb_context *c1, kb_context *c3, const char *name, bool f16, bool ta, bool tb, int64_t m,
                           int64_t n, int64_t k, float beta) {
  int64_t na = m * k, nb = k * n, nc = m * n;
  uint16_t *a = (uint16_t *)malloc((size_t)na * 2), *b = (uint16_t *)malloc((size_t)nb * 2);
  uint16_t *x = (uint16_t *)malloc((size_t)nc * 2), *y = (uint16_t *)malloc((size_t)nc * 2);
  if (a == NULL || b == NULL || x == NULL || y == NULL) exit(1);
  /* Finite bit patterns of both formats: small magnitudes. */
  state = 99 + (uint64_t)k;
  for (int64_t i = 0; i < na; i++) a[i] = (uint16_t)((f16 ? 0x3000u : 0x3e00u) + (uint16_t)(fabsf(next_uniform()) * 1000.0f)) ^ (i % 3 == 0 ? 0x8000u : 0u);
  for (int64_t i = 0; i < nb; i++) b[i] = (uint16_t)((f16 ? 0x3000u : 0x3e00u) + (uint16_t)(fabsf(next_uniform()) * 1000.0f)) ^ (i % 5 == 0 ? 0x8000u : 0u);
  for (int64_t i = 0; i < nc; i++) x[i] = y[i] = f16 ? 0x3c00u : 0x3f80u; /* 1.0 */
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (f16) {
    check(kb_gemm_f16(c1, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, beta, x, n), c1, name);
    check(kb_gemm_f16(c3, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, beta, y, n), c3, name);
  } else {
    check(kb_gemm_bf16(c1, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, beta, x, n), c1, name);
    check(kb_gemm_bf16(c3, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, beta, y, n), c3, name);
  }
  if (memcmp(x, y, (size_t)nc * 2) != 0) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  printf("%s %016llx\n", name, (unsigned long long)fnv1a(x, (size_t)nc * 2));
  free(a);
  free(b);
  free(x);
  free(y);
}

static void attention_case(kb_context *c1, kb_context *c3, const char *name, int64_t batch, int64_t heads,
                           int64_t kv_heads, int64_t sq, int64_t skv, int64_t d, bool causal) {
  int64_t nq = batch * heads * sq * d, nkv = batch * kv_heads * skv * d;
  float *q = random_floats(nq, 1 + (uint64_t)sq), *k = random_floats(nkv, 2 + (uint64_t)skv),
        *v = random_floats(nkv, 3 + (uint64_t)d);
  /* Larger scores than N(0, 1) inputs give, so the softmax is not flat. */
  for (int64_t i = 0; i < nq; i++) q[i] *= 3.0f;
  float *x = (float *)malloc((size_t)nq * sizeof(float)), *y = (float *)malloc((size_t)nq * sizeof(float));
  if (x == NULL || y == NULL) exit(1);
  check(kb_attention(c1, batch, heads, kv_heads, sq, skv, d, q, k, v, causal, 0.0f, x), c1, name);
  check(kb_attention(c3, batch, heads, kv_heads, sq, skv, d, q, k, v, causal, 0.0f, y), c3, name);
  if (memcmp(x, y, (size_t)nq * sizeof(float)) != 0) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  printf("%s %016llx\n", name, (unsigned long long)fnv1a(x, (size_t)nq * sizeof(float)));
  free(q);
  free(k);
  free(v);
  free(x);
  free(y);
}

/* kb_linear_w with weights of `type` (quantized from random floats): the
 * small-m float path, the 16-bit pair tiles and every integer dot product
 * variant of the quantized path. */
static void linear_w_case(kb_context *c1, kb_context *c3, const char *name, kb_dtype type, int64_t m, int64_t k,
                          int64_t n) {
  float *x = random_floats(m * k, 31 + (uint64_t)m), *w = random_floats(n * k, 37 + (uint64_t)k);
  float *bias = random_floats(n, 41), *y1 = (float *)malloc((size_t)(m * n) * sizeof(float));
  float *y3 = (float *)malloc((size_t)(m * n) * sizeof(float));
  int64_t bytes = 0;
  check(kb_dtype_bytes(type, n, k, &bytes), NULL, name);
  void *wq = malloc((size_t)(bytes > 0 ? bytes : 1));
  if (y1 == NULL || y3 == NULL || wq == NULL) exit(1);
  check(kb_quantize(c1, type, n, k, w, wq, bytes), c1, name);
  check(kb_linear_w(c1, m, k, n, x, type, wq, bytes, bias, KB_ACTIVATION_SILU, y1), c1, name);
  check(kb_linear_w(c3, m, k, n, x, type, wq, bytes, bias, KB_ACTIVATION_SILU, y3), c3, name);
  if (memcmp(y1, y3, (size_t)(m * n) * sizeof(float)) != 0) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  printf("%s %016llx\n", name, (unsigned long long)fnv1a(y1, (size_t)(m * n) * sizeof(float)));
  free(x);
  free(w);
  free(bias);
  free(y1);
  free(y3);
  free(wq);
}

int main(void) {
  kb_context *c1 = NULL, *c3 = NULL;
  kb_status s = kb_context_create(KB_BACKEND_CPU, 1, &c1);
  if (s == KB_STATUS_UNSUPPORTED) {
    printf("SKIPPED: %s\n", kb_last_error());
    return 2;
  }
  if (s != KB_STATUS_OK || kb_context_create(KB_BACKEND_CPU, 3, &c3) != KB_STATUS_OK) {
    fprintf(stderr, "%s: %s\n", kb_status_string(s), kb_last_error());
    return 1;
  }
  printf("isa %s\n", kb_cpu_isa());
  /* Blocks: K beyond one K block (512 at most), N beyond one N block, M
   * beyond one M block; ragged edges everywhere; every transpose. */
  static const struct {
    int64_t m, n, k;
  } shapes[] = {{1, 1, 1}, {13, 37, 29}, {64, 64, 64}, {70, 300, 1100}, {530, 45, 600}, {1, 333, 700}, {333, 1, 700}};
  char name[64];
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      snprintf(name, sizeof name, "gemm_%lldx%lldx%lld_%c%c", (long long)shapes[i].m, (long long)shapes[i].n,
               (long long)shapes[i].k, ta ? 't' : 'n', tb ? 't' : 'n');
      gemm_case(c1, c3, name, ta, tb, shapes[i].m, shapes[i].n, shapes[i].k, 0, 1.0f, 0.0f);
      snprintf(name + strlen(name), sizeof name - strlen(name), "_ab");
      gemm_case(c1, c3, name, ta, tb, shapes[i].m, shapes[i].n, shapes[i].k, 3, -0.75f, 0.5f);
    }
  gemm_half_case(c1, c3, "gemm_bf16_nt", false, false, true, 40, 70, 600, 0.0f);
  gemm_half_case(c1, c3, "gemm_f16_tn_beta", true, true, false, 40, 70, 600, 2.0f);
  attention_case(c1, c3, "attention_1x4x100x100x64", 1, 4, 4, 100, 100, 64, false);
  attention_case(c1, c3, "attention_causal_2x6x2x77x77x32", 2, 6, 2, 77, 77, 32, true);
  attention_case(c1, c3, "attention_decode_1x4x1x1x3000x64", 1, 4, 1, 1, 3000, 64, false);
  attention_case(c1, c3, "attention_causal_kv_2x2x2x5x300x16", 2, 2, 2, 5, 300, 16, true);
  /* One or two query rows per key/value head (the decode product O += P V
   * of attention_<isa>.c), head dims that leave partial vectors and column
   * chunks on every level. */
  attention_case(c1, c3, "attention_decode_row_1x3x3x1x1500x80", 1, 3, 3, 1, 1500, 80, false);
  attention_case(c1, c3, "attention_decode_pair_1x4x2x1x700x136", 1, 4, 2, 1, 700, 136, false);
  attention_case(c1, c3, "attention_decode_pair_causal_2x2x1x2x300x40", 2, 2, 1, 2, 300, 40, true);
  /* Three and four query rows per key/value head (pv's wider row tiles). */
  attention_case(c1, c3, "attention_decode_rows3_1x3x1x1x900x72", 1, 3, 1, 1, 900, 72, false);
  attention_case(c1, c3, "attention_decode_rows4_causal_2x8x2x1x600x100", 2, 8, 2, 1, 600, 100, true);
  /* Six and eight query rows per key/value head: scores from the small-m
   * product at the avx512 level, from packed K at avx2 (dot_rows of
   * attention_kernels.h); eight rows take float32 V's pv in two passes. */
  attention_case(c1, c3, "attention_decode_rows6_1x12x2x1x900x72", 1, 12, 2, 1, 900, 72, false);
  attention_case(c1, c3, "attention_decode_rows8_causal_1x8x1x1x1100x136", 1, 8, 1, 1, 1100, 136, true);
  static const struct {
    const char *name;
    kb_dtype type;
  } types[] = {{"f32", KB_DTYPE_F32}, {"f16", KB_DTYPE_F16}, {"bf16", KB_DTYPE_BF16}, {"q8_0", KB_DTYPE_Q8_0},
               {"q4_0", KB_DTYPE_Q4_0}};
  static const int64_t rows[] = {1, 5, 12, 16, 40};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
      snprintf(name, sizeof name, "linear_w_%s_%lldx416x300", types[t].name, (long long)rows[r]);
      linear_w_case(c1, c3, name, types[t].type, rows[r], 416, 300);
    }
  /* Weights of 1024 columns, rows 4 KiB apart: the avx512 tile takes 8 + 4
   * rows (gemm_avx512.c), the others their usual tiles. */
  linear_w_case(c1, c3, "linear_w_f32_40x1024x200", KB_DTYPE_F32, 40, 1024, 200);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
  return failures == 0 ? 0 : 1;
}
