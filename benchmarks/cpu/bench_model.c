/*
 * bench_model.c - the model-ready entry points on a transformer layer's
 * shapes, each against what a user would otherwise write:
 *   - kb_linear (x·Wᵀ + b, GELU) against OpenBLAS sgemm + a bias loop + an
 *     erff GELU loop, and against the unfused kernelbridge composition
 *     (kb_gemm, kb_add_bias, kb_gelu): three passes over y instead of one;
 *   - kb_attention_ex on a padded batch in the [batch, seq, heads, head_dim]
 *     layout with per-row key lengths, against the naive composition on the
 *     same layout (OpenBLAS sgemm with row strides, masked row softmax, sgemm).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench.h"

/* ---- fused linear ---- */

struct lin_case {
  int64_t rows, in, out;
};

static const struct lin_case lin_full[] = {{512, 384, 1536}, {512, 1536, 384}, {1, 4096, 4096}};
static const struct lin_case lin_smoke[] = {{5, 7, 9}, {1, 33, 17}};

struct lin_arg {
  kb_context *ctx;
  const struct lin_case *c;
  int threads;
  const float *x, *w, *b;
  float *y_fused, *y_parts, *y_blas;
};

static int run_fused(void *p) {
  const struct lin_arg *a = (const struct lin_arg *)p;
  kb_status st = kb_linear(a->ctx, a->c->rows, a->c->in, a->c->out, a->x, a->w, a->b, KB_ACTIVATION_GELU, a->y_fused);
  return st == KB_STATUS_OK ? 0 : kb_fail(a->ctx, "kb_linear", st);
}

static int run_parts(void *p) {
  const struct lin_arg *a = (const struct lin_arg *)p;
  const struct lin_case *c = a->c;
  kb_status st = kb_gemm(a->ctx, false, true, c->rows, c->out, c->in, 1.0f, a->x, c->in, a->w, c->in, 0.0f,
                         a->y_parts, c->out);
  if (st == KB_STATUS_OK) st = kb_add_bias(a->ctx, c->rows, c->out, a->y_parts, a->b, a->y_parts);
  if (st == KB_STATUS_OK) st = kb_gelu(a->ctx, c->rows * c->out, a->y_parts, a->y_parts);
  return st == KB_STATUS_OK ? 0 : kb_fail(a->ctx, "kb_gemm + kb_add_bias + kb_gelu", st);
}

static void bias_gelu_rows(void *p, int index, int count) {
  const struct lin_arg *a = (const struct lin_arg *)p;
  const struct lin_case *c = a->c;
  for (int64_t r = index; r < c->rows; r += count) {
    float *y = a->y_blas + r * c->out;
    for (int64_t j = 0; j < c->out; j++) {
      float v = y[j] + a->b[j];
      y[j] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
  }
}

static int run_blas(void *p) {
  struct lin_arg *a = (struct lin_arg *)p;
  const struct lin_case *c = a->c;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)c->rows, (blasint)c->out, (blasint)c->in, 1.0f, a->x,
              (blasint)c->in, a->w, (blasint)c->in, 0.0f, a->y_blas, (blasint)c->out);
  pool_run(a->threads, bias_gelu_rows, a);
  return 0;
}

static void bench_linear(void) {
  const struct lin_case *cases = bench_opt.smoke ? lin_smoke : lin_full;
  size_t count = bench_opt.smoke ? sizeof lin_smoke / sizeof lin_smoke[0] : sizeof lin_full / sizeof lin_full[0];
  int tcounts[2] = {1, bench_opt.threads};
  kb_context *ctxs[2] = {ctx_one, ctx_all};
  int nt = bench_opt.threads > 1 ? 2 : 1;
  printf("### fused linear: kb_linear (GELU) vs OpenBLAS + bias + GELU, and vs kb_gemm + kb_add_bias + kb_gelu\n\n");
  printf("y = GELU(x·Wᵀ + b), W stored [out, in] as in PyTorch.  OpenBLAS: cblas_sgemm, then one loop adding the bias "
         "and applying 0.5·v·(1 + erff(v/√2)) (rows split over the same threads).  × = other time ÷ kb_linear time.\n\n");
  printf("| rows × in → out | threads | kb_linear ms | GFLOP/s | OpenBLAS+loop ms | × | kb unfused ms | × |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t ci = 0; ci < count; ci++) {
    const struct lin_case *c = &cases[ci];
    size_t nx = (size_t)(c->rows * c->in), nw = (size_t)(c->out * c->in), ny = (size_t)(c->rows * c->out);
    float *x = (float *)bench_alloc(nx * 4), *w = (float *)bench_alloc(nw * 4), *b = (float *)bench_alloc((size_t)c->out * 4);
    float *y1 = (float *)bench_alloc(ny * 4), *y2 = (float *)bench_alloc(ny * 4), *y3 = (float *)bench_alloc(ny * 4);
    fill_uniform(x, nx, -1, 1, 31);
    fill_uniform(w, nw, -0.1f, 0.1f, 32);
    fill_uniform(b, (size_t)c->out, -0.5f, 0.5f, 33);
    for (int t = 0; t < nt; t++) {
      openblas_set_num_threads(tcounts[t]);
      struct lin_arg arg = {ctxs[t], c, tcounts[t], x, w, b, y1, y2, y3};
      struct side sides[3] = {{"kb_linear", run_fused, &arg, 0, 0},
                              {"OpenBLAS + bias + GELU", run_blas, &arg, 0, 0},
                              {"kb unfused", run_parts, &arg, 0, 0}};
      measure(sides, 3);
      double maxdiff = 0;
      for (size_t i = 0; i < ny; i++) {
        double d = fabs((double)y1[i] - (double)y3[i]);
        if (!(d <= maxdiff)) maxdiff = d;
        if (memcmp(&y1[i], &y2[i], 4) != 0) maxdiff = INFINITY; /* fused and unfused are the same bits */
      }
      if (!(maxdiff <= 1e-4))
        bench_check_failed("linear %lld×%lld→%lld: kb_linear differs (unfused bits or OpenBLAS by %.3g)",
                           (long long)c->rows, (long long)c->in, (long long)c->out, maxdiff);
      char ms[32], gf[32], bms[32], bx[32], ums[32], ux[32];
      fmtv(ms, sizeof ms, 3, 1e3 * sides[0].med, sides[0].med > 0, "");
      fmtv(gf, sizeof gf, 1, 2.0 * (double)c->rows * (double)c->in * (double)c->out / sides[0].med * 1e-9,
           sides[0].med > 0, "");
      fmtv(bms, sizeof bms, 3, 1e3 * sides[1].med, sides[1].med > 0, "");
      fmtv(bx, sizeof bx, 2, sides[1].med / sides[0].med, sides[0].med > 0 && sides[1].med > 0, "");
      fmtv(ums, sizeof ums, 3, 1e3 * sides[2].med, sides[2].med > 0, "");
      fmtv(ux, sizeof ux, 2, sides[2].med / sides[0].med, sides[0].med > 0 && sides[2].med > 0, "");
      printf("| %lld × %lld → %lld | %d | %s | %s | %s | %s | %s | %s |\n", (long long)c->rows, (long long)c->in,
             (long long)c->out, tcounts[t], ms, gf, bms, bx, ums, ux);
      fflush(stdout);
    }
    openblas_set_num_threads(bench_opt.threads);
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
    free(y3);
  }
  printf("\n");
}

/* ---- masked attention on a padded batch ---- */

struct mask_case {
  int64_t batch, heads, seq, d;
};

static const struct mask_case mask_full[] = {{8, 12, 128, 64}, {4, 12, 512, 64}};
static const struct mask_case mask_smoke[] = {{3, 2, 9, 8}};

struct mask_arg {
  kb_context *ctx;
  const struct mask_case *c;
  int threads;
  const float *q, *k, *v;
  const int32_t *lengths;
  float *out_kb, *out_naive, *scores;
};

static int run_masked_kb(void *p) {
  const struct mask_arg *a = (const struct mask_arg *)p;
  const struct mask_case *c = a->c;
  kb_status st = kb_attention_ex(a->ctx, c->batch, c->heads, c->heads, c->seq, c->seq, c->d, true, a->q, a->k, a->v,
                                 a->lengths, 1, 1, 1, NULL, false, false, 0.0f, a->out_kb);
  return st == KB_STATUS_OK ? 0 : kb_fail(a->ctx, "kb_attention_ex", st);
}

/* Per (batch, head), in the seq-major layout (row stride heads·d): S =
 * scale·Q·Kᵀ, softmax over the row's first lengths[b] keys, O = P·V. */
static void masked_naive_pairs(void *p, int index, int count) {
  const struct mask_arg *a = (const struct mask_arg *)p;
  const struct mask_case *c = a->c;
  int64_t s = c->seq, d = c->d, ld = c->heads * c->d;
  float *sc = a->scores + (size_t)index * (size_t)(s * s);
  float scale = 1.0f / sqrtf((float)d);
  for (int64_t bh = index; bh < c->batch * c->heads; bh += count) {
    int64_t b = bh / c->heads, h = bh % c->heads, len = a->lengths[b];
    const float *q = a->q + b * s * ld + h * d, *k = a->k + b * s * ld + h * d, *v = a->v + b * s * ld + h * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)s, (blasint)len, (blasint)d, scale, q, (blasint)ld,
                k, (blasint)ld, 0.0f, sc, (blasint)s);
    for (int64_t i = 0; i < s; i++) {
      float *row = sc + i * s;
      float mx = row[0], sum = 0;
      for (int64_t j = 1; j < len; j++) mx = row[j] > mx ? row[j] : mx;
      for (int64_t j = 0; j < len; j++) sum += (row[j] = expf(row[j] - mx));
      for (int64_t j = 0; j < len; j++) row[j] /= sum;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)s, (blasint)d, (blasint)len, 1.0f, sc, (blasint)s,
                v, (blasint)ld, 0.0f, a->out_naive + b * s * ld + h * d, (blasint)ld);
  }
}

static int run_masked_naive(void *p) {
  struct mask_arg *a = (struct mask_arg *)p;
  pool_run(a->threads, masked_naive_pairs, a);
  return 0;
}

static void bench_masked_attention(void) {
  const struct mask_case *cases = bench_opt.smoke ? mask_smoke : mask_full;
  size_t count = bench_opt.smoke ? sizeof mask_smoke / sizeof mask_smoke[0] : sizeof mask_full / sizeof mask_full[0];
  int tcounts[2] = {1, bench_opt.threads};
  kb_context *ctxs[2] = {ctx_one, ctx_all};
  int nt = bench_opt.threads > 1 ? 2 : 1;
  printf("### masked attention: kb_attention_ex on a padded batch vs the naive composition\n\n");
  printf("q, k, v in the [batch, seq, heads, head_dim] layout a linear layer produces; key lengths from seq/2 to seq "
         "per batch row (kv_lengths).  Naive: per (batch, head) OpenBLAS sgemm over the row's keys with row stride "
         "heads·head_dim, a row softmax, sgemm; pairs split over the same threads.  Padded query rows are compared "
         "too.  × = naive time ÷ kb time.\n\n");
  printf("| batch × heads × seq × d | threads | kb ms | naive ms | × |\n|---|---|---|---|---|\n");
  for (size_t ci = 0; ci < count; ci++) {
    const struct mask_case *c = &cases[ci];
    size_t n = (size_t)(c->batch * c->seq * c->heads * c->d);
    float *q = (float *)bench_alloc(n * 4), *k = (float *)bench_alloc(n * 4), *v = (float *)bench_alloc(n * 4);
    float *o1 = (float *)bench_alloc(n * 4), *o2 = (float *)bench_alloc(n * 4);
    float *scores = (float *)bench_alloc((size_t)bench_opt.threads * (size_t)(c->seq * c->seq) * 4);
    int32_t *lengths = (int32_t *)bench_alloc((size_t)c->batch * 4);
    for (int64_t b = 0; b < c->batch; b++) lengths[b] = (int32_t)(c->seq / 2 + (c->seq / 2) * b / (c->batch > 1 ? c->batch - 1 : 1));
    fill_uniform(q, n, -1, 1, 41);
    fill_uniform(k, n, -1, 1, 42);
    fill_uniform(v, n, -1, 1, 43);
    openblas_set_num_threads(1);
    for (int t = 0; t < nt; t++) {
      struct mask_arg arg = {ctxs[t], c, tcounts[t], q, k, v, lengths, o1, o2, scores};
      struct side sides[2] = {{"kb_attention_ex", run_masked_kb, &arg, 0, 0},
                              {"naive masked attention", run_masked_naive, &arg, 0, 0}};
      measure(sides, 2);
      double maxdiff = 0;
      for (size_t i = 0; i < n; i++) {
        double d = fabs((double)o1[i] - (double)o2[i]);
        if (!(d <= maxdiff)) maxdiff = d;
      }
      if (!(maxdiff <= 1e-4))
        bench_check_failed("masked attention %lld×%lld×%lld×%lld: kb differs from the naive composition by %.3g",
                           (long long)c->batch, (long long)c->heads, (long long)c->seq, (long long)c->d, maxdiff);
      char kbms[32], nvms[32], ratio[32];
      fmtv(kbms, sizeof kbms, 3, 1e3 * sides[0].med, sides[0].med > 0, "");
      fmtv(nvms, sizeof nvms, 3, 1e3 * sides[1].med, sides[1].med > 0, "");
      fmtv(ratio, sizeof ratio, 2, sides[1].med / sides[0].med, sides[0].med > 0 && sides[1].med > 0, "");
      printf("| %lld × %lld × %lld × %lld | %d | %s | %s | %s |\n", (long long)c->batch, (long long)c->heads,
             (long long)c->seq, (long long)c->d, tcounts[t], kbms, nvms, ratio);
      fflush(stdout);
    }
    openblas_set_num_threads(bench_opt.threads);
    free(q);
    free(k);
    free(v);
    free(o1);
    free(o2);
    free(scores);
    free(lengths);
  }
  printf("\n");
}

void bench_model(void) {
  bench_linear();
  fflush(stdout);
  bench_masked_attention();
}
