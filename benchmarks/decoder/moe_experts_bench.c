/* moe_experts_bench.c - the mixture-of-experts expert step (kb_moe_experts)
 * against the same products done densely, and the fused gate / up pair
 * (kb_linear_glu_w) against its two-call form, in one run.
 *
 *   moe_experts_bench [--threads T] [--reps R] [--hidden H] [--ffn F]
 *                     [--experts E] [--top-k K]
 *
 * Expert step: for each weight format and token count (1, 16, 64, 128, 512),
 * random routing (K distinct experts per token), the best-of-R time of
 * kb_moe_experts, and of the dense equivalent: one kb_linear_glu_w and one
 * kb_linear_w over tokens * K rows through a single expert's weights (the
 * same multiply-adds on the same shapes, with no routing, gathering or
 * weighted sum).  "dense / moe" >= 0.8 is issue 26's target (grouped
 * products at gemm speed).  That dense form reads one expert's weights where
 * the step reads every expert some token picked (up to E times the bytes),
 * so at few tokens, where both are memory bound, it is also timed against
 * the step's own products done densely: for each expert with work, one
 * kb_linear_glu_w and one kb_linear_w over its tokens' rows, gathered
 * beforehand (the gather and the weighted sum not timed) - "per-exp / moe".
 * The weight bytes the step reads per second are printed beside a T-thread
 * copy of as many bytes (up to 64 tokens).  The three are timed in turns.
 * Fused pair: kb_linear_glu_w against kb_linear_w twice + kb_glu on the
 * same weights (1 and 64 rows), the two timed in turns.  Not a test:
 * timings depend on the machine (docs/performance.md records them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_copy.h"
#include "kernelbridge.h"

static void ok(kb_status s, const char *what) {
  if (s != KB_STATUS_OK) {
    fprintf(stderr, "%s: %s (%s)\n", what, kb_status_string(s), kb_last_error());
    exit(1);
  }
}

static void *xalloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes > 0 ? bytes : 1) != 0 || p == NULL) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float next_uniform(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng >> 40) / 16777216.0 - 0.5);
}

/* [rows, cols] random floats stored as type. */
static void *stored(kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols, float scale, int64_t *bytes) {
  ok(kb_dtype_bytes(type, rows, cols, bytes), "kb_dtype_bytes");
  float *w = xalloc((size_t)(rows * cols) * sizeof(float));
  for (int64_t i = 0; i < rows * cols; i++) w[i] = next_uniform() * scale;
  void *s = xalloc((size_t)*bytes);
  ok(kb_quantize(ctx, type, rows, cols, w, s, *bytes), "kb_quantize");
  free(w);
  return s;
}

struct moe_args {
  kb_context *ctx;
  int64_t tokens, hidden, ffn, experts, top_k;
  const float *x, *w;
  const int32_t *ids;
  kb_dtype type;
  const void *g, *u, *d;
  int64_t gb, db;
  float *y;
  /* dense */
  int64_t g1, d1;
  float *h, *yd;
  /* per expert: expert e's rows are xg[first[e] * hidden ...], first[e + 1] - first[e] of them */
  const float *xg;
  const int64_t *first;
};

static void run_moe(const struct moe_args *a) {
  ok(kb_moe_experts(a->ctx, a->tokens, a->hidden, a->ffn, a->experts, a->top_k, a->x, a->ids, a->w, a->type, a->g,
                    a->gb, a->u, a->gb, a->d, a->db, KB_ACTIVATION_SILU, a->y),
     "kb_moe_experts");
}

/* The same products densely: tokens * top_k rows through expert 0. */
static void run_dense(const struct moe_args *a, const float *xr) {
  int64_t rows = a->tokens * a->top_k;
  ok(kb_linear_glu_w(a->ctx, rows, a->hidden, a->ffn, xr, a->type, a->g, a->g1, a->u, a->g1, KB_ACTIVATION_SILU,
                     a->h),
     "kb_linear_glu_w");
  ok(kb_linear_w(a->ctx, rows, a->ffn, a->hidden, a->h, a->type, a->d, a->d1, NULL, KB_ACTIVATION_NONE, a->yd),
     "kb_linear_w");
}

/* The step's own products densely: each expert's gathered rows through its
 * own weights, one expert after the other. */
static void run_per_expert(const struct moe_args *a) {
  for (int64_t e = 0; e < a->experts; e++) {
    int64_t lo = a->first[e], rows = a->first[e + 1] - lo;
    if (rows == 0) continue;
    const char *g = (const char *)a->g + e * a->g1, *u = (const char *)a->u + e * a->g1;
    const char *d = (const char *)a->d + e * a->d1;
    ok(kb_linear_glu_w(a->ctx, rows, a->hidden, a->ffn, a->xg + lo * a->hidden, a->type, g, a->g1, u, a->g1,
                       KB_ACTIVATION_SILU, a->h + lo * a->ffn),
       "kb_linear_glu_w");
    ok(kb_linear_w(a->ctx, rows, a->ffn, a->hidden, a->h + lo * a->ffn, a->type, d, a->d1, NULL, KB_ACTIVATION_NONE,
                   a->yd + lo * a->hidden),
       "kb_linear_w");
  }
}

/* Best of `reps` times of each of n functions, run in turns (one call of
 * each per round, after a warming round: pages faulted in, pool started),
 * so that each meets the caches as the others left them, rather than the
 * first one timed meeting the previous shape's. */
static void best_in_turns(int reps, int n, void (*const fn[])(const void *), const void *const arg[], double best[]) {
  for (int i = 0; i < n; i++) {
    fn[i](arg[i]);
    best[i] = 1e30;
  }
  for (int r = 0; r < reps; r++)
    for (int i = 0; i < n; i++) {
      double t = now();
      fn[i](arg[i]);
      t = now() - t;
      if (t < best[i]) best[i] = t;
    }
}

struct dense_arg {
  const struct moe_args *a;
  const float *xr;
};

static void moe_thunk(const void *p) { run_moe((const struct moe_args *)p); }
static void per_expert_thunk(const void *p) { run_per_expert((const struct moe_args *)p); }
static void dense_thunk(const void *p) {
  const struct dense_arg *d = (const struct dense_arg *)p;
  run_dense(d->a, d->xr);
}

struct pair_arg {
  kb_context *ctx;
  int64_t rows, in, out;
  const float *x;
  kb_dtype type;
  const void *g, *u;
  int64_t bytes;
  float *gt, *ut, *y;
};

static void fused_thunk(const void *p) {
  const struct pair_arg *a = (const struct pair_arg *)p;
  ok(kb_linear_glu_w(a->ctx, a->rows, a->in, a->out, a->x, a->type, a->g, a->bytes, a->u, a->bytes,
                     KB_ACTIVATION_SILU, a->y),
     "kb_linear_glu_w");
}

static void unfused_thunk(const void *p) {
  const struct pair_arg *a = (const struct pair_arg *)p;
  ok(kb_linear_w(a->ctx, a->rows, a->in, a->out, a->x, a->type, a->g, a->bytes, NULL, KB_ACTIVATION_NONE, a->gt),
     "kb_linear_w");
  ok(kb_linear_w(a->ctx, a->rows, a->in, a->out, a->x, a->type, a->u, a->bytes, NULL, KB_ACTIVATION_NONE, a->ut),
     "kb_linear_w");
  ok(kb_glu(a->ctx, a->rows, a->out, a->gt, a->out, a->ut, a->out, KB_ACTIVATION_SILU, a->y), "kb_glu");
}

int main(int argc, char **argv) {
  int threads = 1, reps = 5;
  int64_t hidden = 1024, ffn = 3584, experts = 8, top_k = 2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--hidden") == 0 && i + 1 < argc) hidden = atoll(argv[++i]);
    else if (strcmp(argv[i], "--ffn") == 0 && i + 1 < argc) ffn = atoll(argv[++i]);
    else if (strcmp(argv[i], "--experts") == 0 && i + 1 < argc) experts = atoll(argv[++i]);
    else if (strcmp(argv[i], "--top-k") == 0 && i + 1 < argc) top_k = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--threads T] [--reps R] [--hidden H] [--ffn F] [--experts E] [--top-k K]\n",
              argv[0]);
      return 2;
    }
  }
  if (threads < 1 || threads > 64 || reps < 1 || hidden < 32 || hidden % 32 || ffn < 32 || ffn % 32 || experts < 1 ||
      top_k < 1 || top_k > experts) {
    fprintf(stderr, "threads 1..64, reps >= 1, hidden and ffn multiples of 32, 1 <= top_k <= experts\n");
    return 2;
  }
  static const struct {
    kb_dtype type;
    const char *name;
  } formats[] = {{KB_DTYPE_F32, "F32"}, {KB_DTYPE_BF16, "BF16"}, {KB_DTYPE_Q8_0, "Q8_0"}, {KB_DTYPE_Q4_0, "Q4_0"}};
  static const int64_t kTokens[] = {1, 16, 64, 128, 512};
  const size_t ntok = sizeof kTokens / sizeof kTokens[0];
  kb_context *ctx = NULL;
  ok(kb_context_create(KB_BACKEND_CPU, threads, &ctx), "kb_context_create");
  printf("kb_moe_experts: hidden %lld, ffn %lld, %lld experts, top_k %lld, SiLU; %d thread(s), ISA %s, best of %d\n",
         (long long)hidden, (long long)ffn, (long long)experts, (long long)top_k, threads,
         kb_cpu_isa(), reps);
  printf("%-5s %6s %11s %11s %11s %11s %9s %9s %9s %9s\n", "type", "tokens", "moe us", "dense us", "dense/moe",
         "per-exp/moe", "GFLOP/s", "GB/s", "copy GB/s", "rows/exp");
  int64_t max_rows = kTokens[ntok - 1] * top_k;
  float *x = xalloc((size_t)(kTokens[ntok - 1] * hidden) * sizeof(float));
  float *xr = xalloc((size_t)(max_rows * hidden) * sizeof(float));
  float *w = xalloc((size_t)(max_rows) * sizeof(float));
  int32_t *ids = xalloc((size_t)max_rows * sizeof(int32_t));
  float *y = xalloc((size_t)(kTokens[ntok - 1] * hidden) * sizeof(float));
  float *h = xalloc((size_t)(max_rows * ffn) * sizeof(float));
  float *yd = xalloc((size_t)(max_rows * hidden) * sizeof(float));
  float *xg = xalloc((size_t)(max_rows * hidden) * sizeof(float));
  int64_t *first = xalloc((size_t)(experts + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < kTokens[ntok - 1] * hidden; i++) x[i] = next_uniform() * 2;
  for (int64_t i = 0; i < max_rows * hidden; i++) xr[i] = x[i % (kTokens[ntok - 1] * hidden)];
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    int64_t gb, db;
    void *g = stored(ctx, formats[f].type, experts * ffn, hidden, 0.06f, &gb);
    void *u = stored(ctx, formats[f].type, experts * ffn, hidden, 0.06f, &gb);
    void *d = stored(ctx, formats[f].type, experts * hidden, ffn, 0.03f, &db);
    for (size_t ti = 0; ti < ntok; ti++) {
      int64_t tokens = kTokens[ti];
      /* top_k distinct experts per token, uniformly. */
      for (int64_t t = 0; t < tokens; t++)
        for (int64_t j = 0; j < top_k; j++) {
          int32_t e;
          bool fresh;
          do {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            e = (int32_t)((rng >> 33) % (uint64_t)experts);
            fresh = true;
            for (int64_t q = 0; q < j; q++) fresh = fresh && ids[t * top_k + q] != e;
          } while (!fresh);
          ids[t * top_k + j] = e;
          w[t * top_k + j] = 1.0f / (float)top_k;
        }
      /* Each expert's tokens' rows, gathered in token order. */
      int64_t at = 0;
      for (int64_t e = 0; e < experts; e++) {
        first[e] = at;
        for (int64_t p = 0; p < tokens * top_k; p++)
          if (ids[p] == e) memcpy(xg + (at++) * hidden, x + (p / top_k) * hidden, (size_t)hidden * sizeof(float));
      }
      first[experts] = at;
      struct moe_args a = {ctx, tokens, hidden, ffn, experts, top_k, x, w, ids, formats[f].type, g, u, d, gb, db, y,
                           gb / experts, db / experts, h, yd, xg, first};
      struct dense_arg da = {&a, xr};
      void (*const fns[3])(const void *) = {moe_thunk, dense_thunk, per_expert_thunk};
      const void *const args[3] = {&a, &da, &a};
      double times[3];
      best_in_turns(reps, 3, fns, args, times);
      double tm = times[0], td = times[1], tp = times[2];
      double flops = 2.0 * 3.0 * (double)(tokens * top_k) * (double)hidden * (double)ffn;
      /* Weight bytes the step reads (the experts some token uses), and the
       * fewest and most rows an expert with work gets (its products' sizes). */
      int used = 0;
      int64_t fewest = -1, most = 0;
      for (int64_t e = 0; e < experts; e++) {
        int64_t rows = first[e + 1] - first[e];
        used += rows > 0;
        if (rows > 0 && (fewest < 0 || rows < fewest)) fewest = rows;
        if (rows > most) most = rows;
      }
      double wbytes = (double)used * (double)(2 * gb + db) / (double)experts;
      char gbs[32] = "", copy[32] = "";
      if (tokens <= 64) {
        char *src = xalloc((size_t)wbytes), *dst = xalloc((size_t)wbytes);
        memset(src, 1, (size_t)wbytes);
        memset(dst, 0, (size_t)wbytes);
        double tc = copy_best_seconds(dst, src, (size_t)wbytes, threads, reps);
        snprintf(gbs, sizeof gbs, "%.1f", wbytes / tm * 1e-9);
        snprintf(copy, sizeof copy, "%.1f", wbytes / tc * 1e-9);
        free(src);
        free(dst);
      }
      char spread[48];
      snprintf(spread, sizeof spread, "%lld-%lld", (long long)fewest, (long long)most);
      printf("%-5s %6lld %11.1f %11.1f %11.2f %11.2f %9.1f %9s %9s %9s\n", formats[f].name, (long long)tokens,
             tm * 1e6, td * 1e6, td / tm, tp / tm, flops / tm * 1e-9, gbs, copy, spread);
      fflush(stdout);
    }
    free(g);
    free(u);
    free(d);
  }
  printf("\nkb_linear_glu_w (fused) against kb_linear_w twice + kb_glu, [%lld, %lld] weights, SiLU\n",
         (long long)ffn, (long long)hidden);
  printf("%-5s %6s %11s %11s %11s\n", "type", "rows", "fused us", "3 calls us", "3calls/fused");
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    int64_t bytes;
    void *g = stored(ctx, formats[f].type, ffn, hidden, 0.06f, &bytes);
    void *u = stored(ctx, formats[f].type, ffn, hidden, 0.06f, &bytes);
    static const int64_t kRows[] = {1, 64};
    for (int r = 0; r < 2; r++) {
      float *gt = xalloc((size_t)(kRows[r] * ffn) * sizeof(float)), *ut = xalloc((size_t)(kRows[r] * ffn) * sizeof(float));
      struct pair_arg pa = {ctx, kRows[r], hidden, ffn, x, formats[f].type, g, u, bytes, gt, ut, h};
      void (*const fns[2])(const void *) = {fused_thunk, unfused_thunk};
      const void *const args[2] = {&pa, &pa};
      double times[2];
      best_in_turns(reps, 2, fns, args, times);
      double tf = times[0], tu = times[1];
      printf("%-5s %6lld %11.1f %11.1f %11.2f\n", formats[f].name, (long long)kRows[r], tf * 1e6, tu * 1e6, tu / tf);
      free(gt);
      free(ut);
    }
    free(g);
    free(u);
  }
  free(x), free(xr), free(w), free(ids), free(y), free(h), free(yd), free(xg), free(first);
  kb_context_destroy(ctx);
  return 0;
}
