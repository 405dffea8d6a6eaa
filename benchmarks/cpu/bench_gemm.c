/*
 * bench_gemm.c - kb_gemm against OpenBLAS cblas_sgemm (and cblas_sgemv for
 * m = 1) on 1 and on all threads.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "bench.h"

struct gemm_case {
  int64_t m, n, k;
  bool trans_b;
  int quick;         /* also in --quick */
  const char *note;  /* shown after the shape */
};

static const struct gemm_case full_cases[] = {
    {64, 64, 64, false, 1, ""},
    {128, 128, 128, false, 1, ""},
    {256, 256, 256, false, 1, ""},
    {512, 512, 512, false, 1, ""},
    {1024, 1024, 1024, false, 0, ""},
    {2048, 2048, 2048, false, 0, ""},
    {512, 384, 1536, false, 1, ""},
    {512, 384, 1536, true, 1, " (linear layer)"},
    {1, 4096, 4096, false, 1, " (gemv)"},
    {1, 4096, 4096, true, 1, " (gemv, linear layer)"},
    /* 4096 x 4096 x 11008 with m divided by 64: 64 tokens through a
     * 11008 -> 4096 projection stored as a linear layer's [n, k] weight. */
    {64, 4096, 11008, true, 0, " (4096×4096×11008 with m/64)"},
    /* A prefill's (or an expert's) few rows through wide weights: the
     * swapped path of gemm_engine.c. */
    {32, 4096, 4096, true, 0, " (linear layer, 32 rows)"},
    {128, 3584, 1024, true, 1, " (linear layer, 128 rows)"},
    {128, 1024, 3584, true, 0, " (linear layer, 128 rows)"},
    /* An expert's rows at 64-128 tokens (top 2 of 8): 1-4 rows past 16 or
     * 32, the last columns of the swapped tile computed with its rows as
     * the lanes. */
    {17, 3584, 1024, true, 0, " (linear layer, 17 rows)"},
    {34, 3584, 1024, true, 0, " (linear layer, 34 rows)"},
    /* 8 rows past 16 (and 8 past 32): the swapped tile's last columns as a
     * vector of 8. */
    {24, 3584, 1024, true, 0, " (linear layer, 24 rows)"},
    {40, 3584, 1024, true, 0, " (linear layer, 40 rows)"},
};

/* Odd sizes, both layouts, the m = 1 path: plumbing, not speed. */
static const struct gemm_case smoke_cases[] = {
    {5, 7, 9, false, 1, ""},       {5, 7, 9, true, 1, " (linear layer)"}, {33, 17, 65, false, 1, ""},
    {64, 64, 64, false, 1, ""},    {1, 33, 17, false, 1, " (gemv)"},      {1, 33, 17, true, 1, " (gemv, linear layer)"},
    {3, 40, 70, true, 1, " (linear layer)"},
};

struct gemm_arg {
  kb_context *ctx;
  const struct gemm_case *g;
  const float *a, *b;
  float *c_kb, *c_blas, *c_gemv;
};

static int run_kb(void *p) {
  const struct gemm_arg *x = (const struct gemm_arg *)p;
  const struct gemm_case *g = x->g;
  kb_status st = kb_gemm(x->ctx, false, g->trans_b, g->m, g->n, g->k, 1.0f, x->a, g->k, x->b, g->trans_b ? g->k : g->n,
                         0.0f, x->c_kb, g->n);
  return st == KB_STATUS_OK ? 0 : kb_fail(x->ctx, "kb_gemm", st);
}

static int run_sgemm(void *p) {
  const struct gemm_arg *x = (const struct gemm_arg *)p;
  const struct gemm_case *g = x->g;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, (blasint)g->m, (blasint)g->n,
              (blasint)g->k, 1.0f, x->a, (blasint)g->k, x->b, (blasint)(g->trans_b ? g->k : g->n), 0.0f, x->c_blas,
              (blasint)g->n);
  return 0;
}

/* m = 1: y[n] = x[k] op(B).  B stored [k, n] is B^T x; stored [n, k] is B x. */
static int run_sgemv(void *p) {
  const struct gemm_arg *x = (const struct gemm_arg *)p;
  const struct gemm_case *g = x->g;
  if (g->trans_b)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)g->n, (blasint)g->k, 1.0f, x->b, (blasint)g->k, x->a, 1, 0.0f,
                x->c_gemv, 1);
  else
    cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)g->k, (blasint)g->n, 1.0f, x->b, (blasint)g->n, x->a, 1, 0.0f,
                x->c_gemv, 1);
  return 0;
}

/* kernelbridge's result against OpenBLAS's: both sum the same products in
 * float32, so they differ by rounding only. */
static void check(const struct gemm_case *g, const float *kb, const float *ref, const char *what, int threads) {
  double maxref = 0, maxdiff = 0;
  int64_t len = g->m * g->n;
  for (int64_t i = 0; i < len; i++) {
    double r = fabs((double)ref[i]), d = fabs((double)kb[i] - (double)ref[i]);
    if (r > maxref) maxref = r;
    if (!(d <= maxdiff)) maxdiff = d; /* NaN counts as a difference */
  }
  double tol = 1e-5 * sqrt((double)g->k) * (1.0 + maxref);
  if (!(maxdiff <= tol))
    bench_check_failed("gemm %lld×%lld×%lld trans_b=%d, %d threads: kb_gemm differs from %s by %.3g (tolerance %.3g)",
                       (long long)g->m, (long long)g->n, (long long)g->k, (int)g->trans_b, threads, what, maxdiff, tol);
}

void bench_gemm(void) {
  const struct gemm_case *cases = bench_opt.smoke ? smoke_cases : full_cases;
  size_t count = bench_opt.smoke ? sizeof smoke_cases / sizeof smoke_cases[0] : sizeof full_cases / sizeof full_cases[0];
  int tcounts[2] = {1, bench_opt.threads};
  kb_context *ctxs[2] = {ctx_one, ctx_all};
  int nt = bench_opt.threads > 1 ? 2 : 1;
  int isa = limits.kb_isa;

  /* Measured first, printed as two tables. */
  char gemm_rows[64][512], gemv_rows[16][512];
  int ngemm = 0, ngemv = 0;

  for (size_t ci = 0; ci < count; ci++) {
    const struct gemm_case *g = &cases[ci];
    if (bench_opt.quick && !bench_opt.smoke && !g->quick) continue;
    float *a = (float *)bench_alloc((size_t)(g->m * g->k) * 4);
    float *b = (float *)bench_alloc((size_t)(g->k * g->n) * 4);
    float *c_kb = (float *)bench_alloc((size_t)(g->m * g->n) * 4);
    float *c_blas = (float *)bench_alloc((size_t)(g->m * g->n) * 4);
    float *c_gemv = (float *)bench_alloc((size_t)(g->m * g->n) * 4);
    fill_uniform(a, (size_t)(g->m * g->k), -1, 1, 11);
    fill_uniform(b, (size_t)(g->k * g->n), -1, 1, 12);
    char shape[96];
    snprintf(shape, sizeof shape, "%lld×%lld×%lld%s", (long long)g->m, (long long)g->n, (long long)g->k, g->note);
    const char *layout = g->trans_b ? "[n, k] (trans_b)" : "[k, n]";

    for (int t = 0; t < nt; t++) {
      struct gemm_arg arg = {ctxs[t], g, a, b, c_kb, c_blas, c_gemv};
      openblas_set_num_threads(tcounts[t]);
      char r1[32], r2[32], r3[32], r4[32], r5[32], r6[32], r7[32];
      if (g->m == 1) {
        struct side sides[3] = {{"kb_gemm", run_kb, &arg, 0, 0}, {"cblas_sgemv", run_sgemv, &arg, 0, 0},
                                {"cblas_sgemm", run_sgemm, &arg, 0, 0}};
        measure(sides, 3);
        check(g, c_kb, c_gemv, "cblas_sgemv", tcounts[t]);
        check(g, c_kb, c_blas, "cblas_sgemm", tcounts[t]);
        double bytes = (double)g->n * (double)g->k * 4;
        double best = sides[1].med > 0 && (sides[2].med <= 0 || sides[1].med <= sides[2].med) ? sides[1].med : sides[2].med;
        double copy = limits.copy_gbs[t];
        fmtv(r1, sizeof r1, 1, bytes / sides[0].med * 1e-9, sides[0].med > 0, "");
        fmtv(r2, sizeof r2, 1, bytes / sides[1].med * 1e-9, sides[1].med > 0, "");
        fmtv(r3, sizeof r3, 1, bytes / sides[2].med * 1e-9, sides[2].med > 0, "");
        fmtv(r4, sizeof r4, 2, best / sides[0].med, best > 0 && sides[0].med > 0, "");
        fmtv(r5, sizeof r5, 0, 100 * bytes / sides[0].med * 1e-9 / copy, sides[0].med > 0 && copy > 0, "%");
        fmtv(r6, sizeof r6, 0, 100 * bytes / best * 1e-9 / copy, best > 0 && copy > 0, "%");
        fmtv(r7, sizeof r7, 3, 1e3 * sides[0].med, sides[0].med > 0, "");
        if (ngemv < 16)
          snprintf(gemv_rows[ngemv++], sizeof gemv_rows[0], "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |", shape,
                   layout, tcounts[t], r7, r1, r2, r3, r4, r5, r6);
      } else {
        struct side sides[2] = {{"kb_gemm", run_kb, &arg, 0, 0}, {"cblas_sgemm", run_sgemm, &arg, 0, 0}};
        measure(sides, 2);
        check(g, c_kb, c_blas, "cblas_sgemm", tcounts[t]);
        double flop = 2.0 * (double)g->m * (double)g->n * (double)g->k;
        double peak = isa >= 0 ? limits.peak_gflops[isa][t] : 0;
        fmtv(r1, sizeof r1, 1, flop / sides[0].med * 1e-9, sides[0].med > 0, "");
        fmtv(r2, sizeof r2, 1, flop / sides[1].med * 1e-9, sides[1].med > 0, "");
        fmtv(r3, sizeof r3, 2, sides[1].med / sides[0].med, sides[1].med > 0 && sides[0].med > 0, "");
        fmtv(r4, sizeof r4, 0, 100 * flop / sides[0].med * 1e-9 / peak, sides[0].med > 0 && peak > 0, "%");
        fmtv(r5, sizeof r5, 0, 100 * flop / sides[1].med * 1e-9 / peak, sides[1].med > 0 && peak > 0, "%");
        fmtv(r6, sizeof r6, 3, 1e3 * sides[0].med, sides[0].med > 0, "");
        if (ngemm < 64)
          snprintf(gemm_rows[ngemm++], sizeof gemm_rows[0], "| %s | %s | %d | %s | %s | %s | %s | %s | %s |", shape,
                   layout, tcounts[t], r6, r1, r2, r3, r4, r5);
      }
    }
    free(a);
    free(b);
    free(c_kb);
    free(c_blas);
    free(c_gemv);
  }
  openblas_set_num_threads(bench_opt.threads);

  printf("### gemm: kb_gemm vs OpenBLAS cblas_sgemm\n\n");
  printf("Row-major C = A·op(B), alpha 1, beta 0, A stored [m, k]; GFLOP/s = 2mnk / median time.  "
         "× = OpenBLAS time ÷ kernelbridge time (> 1: kernelbridge faster).  "
         "Peak: the FMA peak of kernelbridge's ISA level (`%s`) on the same thread count, measured above.\n\n",
         kb_cpu_isa());
  printf("| m×n×k | B stored | threads | kb ms | kb GFLOP/s | OpenBLAS GFLOP/s | × | kb %% of peak | OpenBLAS %% of peak |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < ngemm; i++) printf("%s\n", gemm_rows[i]);
  printf("\n### gemv (m = 1): kb_gemm vs OpenBLAS cblas_sgemv and cblas_sgemm\n\n");
  printf("GB/s of the weight matrix B (n·k·4 bytes) per call.  × = the faster OpenBLAS call's time ÷ kernelbridge's.  "
         "%% of copy: against the copy bandwidth (read + write, the copy loop) on the same thread count, measured above.\n\n");
  printf("| m×n×k | B stored | threads | kb ms | kb GB/s | sgemv GB/s | sgemm GB/s | × | kb %% of copy | OpenBLAS best %% of copy |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < ngemv; i++) printf("%s\n", gemv_rows[i]);
  printf("\n");
}
