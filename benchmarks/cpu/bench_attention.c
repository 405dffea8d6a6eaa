/*
 * bench_attention.c - kb_attention against the naive composition on the same
 * thread count: per head, S = scale·Q·Kᵀ (OpenBLAS sgemm), a row softmax in C
 * (causal: keys j <= i), O = S·V (sgemm).  The naive side splits the heads
 * over T threads of the benchmark, each calling single-threaded OpenBLAS
 * (faster than one head at a time with T-threaded OpenBLAS).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "bench.h"

struct att_case {
  const char *label;
  int64_t heads, seq_q, seq_kv, head_dim;
  bool causal;
};

static const struct att_case full_cases[] = {
    {"prefill", 12, 512, 512, 64, false},
    {"prefill, causal", 12, 512, 512, 64, true},
    {"decode", 12, 1, 4096, 64, false},
};

static const struct att_case smoke_cases[] = {
    {"prefill", 3, 9, 9, 8, false},
    {"prefill, causal", 3, 9, 9, 8, true},
    {"causal, seq_q < seq_kv", 3, 5, 11, 8, true},
    {"decode", 3, 1, 33, 8, false},
};

struct att_arg {
  kb_context *ctx;
  const struct att_case *c;
  int threads;
  const float *q, *k, *v;
  float *out_kb, *out_naive;
  float *scores; /* threads × seq_q × seq_kv */
};

static int run_kb(void *p) {
  const struct att_arg *x = (const struct att_arg *)p;
  const struct att_case *c = x->c;
  kb_status st = kb_attention(x->ctx, 1, c->heads, c->heads, c->seq_q, c->seq_kv, c->head_dim, x->q, x->k, x->v,
                              c->causal, 0.0f, x->out_kb);
  return st == KB_STATUS_OK ? 0 : kb_fail(x->ctx, "kb_attention", st);
}

static void naive_heads(void *p, int index, int count) {
  const struct att_arg *x = (const struct att_arg *)p;
  const struct att_case *c = x->c;
  int64_t sq = c->seq_q, skv = c->seq_kv, d = c->head_dim;
  float *s = x->scores + (size_t)index * (size_t)(sq * skv);
  float scale = 1.0f / sqrtf((float)d);
  for (int64_t h = index; h < c->heads; h += count) {
    const float *q = x->q + h * sq * d, *k = x->k + h * skv * d, *v = x->v + h * skv * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)sq, (blasint)skv, (blasint)d, scale, q, (blasint)d,
                k, (blasint)d, 0.0f, s, (blasint)skv);
    for (int64_t i = 0; i < sq; i++) {
      float *row = s + i * skv;
      int64_t len = c->causal ? (i + 1 < skv ? i + 1 : skv) : skv;
      float mx = row[0];
      for (int64_t j = 1; j < len; j++) mx = row[j] > mx ? row[j] : mx;
      float sum = 0;
      for (int64_t j = 0; j < len; j++) {
        row[j] = expf(row[j] - mx);
        sum += row[j];
      }
      float inv = 1.0f / sum;
      for (int64_t j = 0; j < len; j++) row[j] *= inv;
      for (int64_t j = len; j < skv; j++) row[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)sq, (blasint)d, (blasint)skv, 1.0f, s,
                (blasint)skv, v, (blasint)d, 0.0f, x->out_naive + h * sq * d, (blasint)d);
  }
}

static int run_naive(void *p) {
  struct att_arg *x = (struct att_arg *)p;
  pool_run(x->threads, naive_heads, x);
  return 0;
}

/* Useful flops: two products of 2·d flops per (query, key) pair attended. */
static double att_flops(const struct att_case *c) {
  double pairs = 0;
  for (int64_t i = 0; i < c->seq_q; i++) pairs += (double)(c->causal ? (i + 1 < c->seq_kv ? i + 1 : c->seq_kv) : c->seq_kv);
  return 4.0 * (double)c->heads * (double)c->head_dim * pairs;
}

void bench_attention(void) {
  const struct att_case *cases = bench_opt.smoke ? smoke_cases : full_cases;
  size_t count = bench_opt.smoke ? sizeof smoke_cases / sizeof smoke_cases[0] : sizeof full_cases / sizeof full_cases[0];
  int tcounts[2] = {1, bench_opt.threads};
  kb_context *ctxs[2] = {ctx_one, ctx_all};
  int nt = bench_opt.threads > 1 ? 2 : 1;

  printf("### attention: kb_attention vs the naive composition\n\n");
  printf("batch 1, kv_heads = heads, scale 1/sqrt(head_dim).  Naive: per head OpenBLAS sgemm Q·Kᵀ, a row softmax in C "
         "(expf), sgemm P·V; heads split over the same number of threads, OpenBLAS single-threaded inside.  "
         "× = naive time ÷ kernelbridge time.  GFLOP/s counts 4·d flops per (query, key) pair attended.\n\n");
  printf("| case | heads × seq_q × seq_kv × d | causal | threads | kb ms | naive ms | × | kb GFLOP/s |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t ci = 0; ci < count; ci++) {
    const struct att_case *c = &cases[ci];
    size_t qn = (size_t)(c->heads * c->seq_q * c->head_dim), kvn = (size_t)(c->heads * c->seq_kv * c->head_dim);
    float *q = (float *)bench_alloc(qn * 4), *k = (float *)bench_alloc(kvn * 4), *v = (float *)bench_alloc(kvn * 4);
    float *out_kb = (float *)bench_alloc(qn * 4), *out_naive = (float *)bench_alloc(qn * 4);
    float *scores = (float *)bench_alloc((size_t)bench_opt.threads * (size_t)(c->seq_q * c->seq_kv) * 4);
    fill_uniform(q, qn, -1, 1, 21);
    fill_uniform(k, kvn, -1, 1, 22);
    fill_uniform(v, kvn, -1, 1, 23);
    openblas_set_num_threads(1);
    for (int t = 0; t < nt; t++) {
      struct att_arg arg = {ctxs[t], c, tcounts[t], q, k, v, out_kb, out_naive, scores};
      struct side sides[2] = {{"kb_attention", run_kb, &arg, 0, 0}, {"naive attention", run_naive, &arg, 0, 0}};
      measure(sides, 2);
      double maxdiff = 0;
      for (size_t i = 0; i < qn; i++) {
        double dd = fabs((double)out_kb[i] - (double)out_naive[i]);
        if (!(dd <= maxdiff)) maxdiff = dd;
      }
      if (!(maxdiff <= 1e-4))
        bench_check_failed("attention %s, %d threads: kb_attention differs from the naive composition by %.3g",
                           c->label, tcounts[t], maxdiff);
      char kbms[32], nvms[32], ratio[32], gf[32];
      fmtv(kbms, sizeof kbms, 3, 1e3 * sides[0].med, sides[0].med > 0, "");
      fmtv(nvms, sizeof nvms, 3, 1e3 * sides[1].med, sides[1].med > 0, "");
      fmtv(ratio, sizeof ratio, 2, sides[1].med / sides[0].med, sides[0].med > 0 && sides[1].med > 0, "");
      fmtv(gf, sizeof gf, 1, att_flops(c) / sides[0].med * 1e-9, sides[0].med > 0, "");
      printf("| %s | %lld × %lld × %lld × %lld | %s | %d | %s | %s | %s | %s |\n", c->label, (long long)c->heads,
             (long long)c->seq_q, (long long)c->seq_kv, (long long)c->head_dim, c->causal ? "yes" : "no", tcounts[t],
             kbms, nvms, ratio, gf);
      fflush(stdout);
    }
    openblas_set_num_threads(bench_opt.threads);
    free(q);
    free(k);
    free(v);
    free(out_kb);
    free(out_naive);
    free(scores);
  }
  printf("\n");
}
