/* sampling.c - multinomial, top-k and top-p (nucleus) sampling of one token
 * per row.
 *
 * The algorithm is specified exactly in docs/kernels.md ("Sampling kernels")
 * so that other implementations reproduce the token ids: one Philox uniform u
 * per row (counter = row index, so results do not depend on threads), weights
 * w = exp((x - max) / T) in double, running sums S in candidate order, and the
 * token is the first candidate with S > u * total.  The weights come from
 * the vector layer a block at a time (its double exp, within 2 double ulps
 * of the C library's, so a token changes only if the threshold lands within
 * about 1e-15 relative of a running sum); the sums stay sequential.
 * Weights are recomputed (kb_sample) or stored (top-k/top-p) but always
 * summed in the same order, so the final running sum equals the total bit
 * for bit.
 *
 * The bfloat16 / float16 variants read the logits a block at a time through
 * block_of, which widens the block (exactly) into a buffer on the stack; the
 * float32 calls get a pointer into the logits instead.  Everything after
 * that is shared, so a 16-bit call does the float32 call's arithmetic on the
 * widened values and returns its tokens, without a widened copy of the
 * logits (vocabularies reach 256k). */
#include <math.h>
#include <stdlib.h>

#include "dispatch.h"
#include "internal.h"
#include "philox.h"
#include "reduced.h"

/* Weights computed per block (vector exp), then added in order. */
#define KB_SAMP_BLOCK 256

enum mode { MODE_SAMPLE, MODE_TOPK, MODE_TOPP };

/* A candidate: its logit and column.  Sorting (value, index) pairs needs no
 * comparison context, so plain qsort works; the order is total (indices are
 * unique), so every correct sort algorithm gives the same permutation. */
struct cand {
  float v;
  int32_t i;
};

/* Negative when a ranks before b: larger logit first, then lower index. */
static int cand_cmp(const void *pa, const void *pb) {
  const struct cand *a = (const struct cand *)pa, *b = (const struct cand *)pb;
  if (a->v > b->v) return -1;
  if (a->v < b->v) return 1;
  return (a->i > b->i) - (a->i < b->i);
}

static bool ranks_before(struct cand a, struct cand b) { return a.v > b.v || (a.v == b.v && a.i < b.i); }

/* Logits [b, b + n) of row x as float32: a pointer into x (dt KB_VEC_F32)
 * or buf, n <= KB_SAMP_BLOCK values widened from the 16-bit row. */
static const float *block_of(const struct kb_vec_ops *ops, int dt, const void *x, int64_t b, int64_t n, float *buf) {
  if (dt == KB_VEC_F32) return (const float *)x + b;
  ops->convert(dt, 0, n, (const uint16_t *)x + b, buf);
  return buf;
}

struct samp_job {
  const struct kb_vec_ops *ops;
  enum mode mode;
  int dt; /* KB_VEC_F32, KB_VEC_BF16 or KB_VEC_F16 */
  int64_t rows, cols, k;
  const void *logits;
  double p, temperature;
  uint64_t seed;
  int32_t *out;
  /* Per task: `width` candidates and `width` running sums (top-k: k, top-p: cols). */
  struct cand *cands;
  double *sums;
  int64_t width, tasks;
};

static int32_t sample_row(const struct kb_vec_ops *ops, int dt, const void *x, int64_t cols, double temperature,
                          double u) {
  double m = -INFINITY, w[KB_SAMP_BLOCK];
  float buf[KB_SAMP_BLOCK];
  for (int64_t b = 0; b < cols; b += KB_SAMP_BLOCK) {
    int64_t n = cols - b < KB_SAMP_BLOCK ? cols - b : KB_SAMP_BLOCK;
    const float *xb = block_of(ops, dt, x, b, n, buf);
    for (int64_t i = 0; i < n; i++)
      if ((double)xb[i] > m) m = (double)xb[i];
  }
  double total = 0.0;
  for (int64_t b = 0; b < cols; b += KB_SAMP_BLOCK) {
    int64_t n = cols - b < KB_SAMP_BLOCK ? cols - b : KB_SAMP_BLOCK;
    ops->exp_weights(n, block_of(ops, dt, x, b, n, buf), m, temperature, w);
    for (int64_t i = 0; i < n; i++) total += w[i];
  }
  /* The same weights again, summed in the same order up to the token. */
  double t = u * total, s = 0.0;
  int64_t last_positive = 0;
  for (int64_t b = 0; b < cols; b += KB_SAMP_BLOCK) {
    int64_t n = cols - b < KB_SAMP_BLOCK ? cols - b : KB_SAMP_BLOCK;
    ops->exp_weights(n, block_of(ops, dt, x, b, n, buf), m, temperature, w);
    for (int64_t i = 0; i < n; i++) {
      s += w[i];
      if (s > t) return (int32_t)(b + i);
      if (w[i] > 0.0) last_positive = b + i;
    }
  }
  return (int32_t)last_positive; /* unreachable: s ends at total > t */
}

/* Keeps the k best candidates in a binary heap whose root is the worst kept,
 * so each column costs O(log k); the survivors are then sorted. */
static void select_topk(const struct kb_vec_ops *ops, int dt, const void *x, int64_t cols, int64_t k,
                        struct cand *heap) {
  int64_t size = 0;
  float buf[KB_SAMP_BLOCK];
  const float *xb = NULL;
  for (int64_t c = 0; c < cols; c++) {
    if (c % KB_SAMP_BLOCK == 0) xb = block_of(ops, dt, x, c, cols - c < KB_SAMP_BLOCK ? cols - c : KB_SAMP_BLOCK, buf);
    struct cand e = {xb[c % KB_SAMP_BLOCK], (int32_t)c};
    int64_t pos;
    if (size < k) {
      /* Sift up: parents must rank after (be worse than) their children. */
      pos = size++;
      while (pos > 0) {
        int64_t parent = (pos - 1) / 2;
        if (!ranks_before(heap[parent], e)) break;
        heap[pos] = heap[parent];
        pos = parent;
      }
      heap[pos] = e;
      continue;
    }
    if (!ranks_before(e, heap[0])) continue;
    /* Replace the worst kept candidate and sift down. */
    pos = 0;
    for (;;) {
      int64_t child = 2 * pos + 1;
      if (child >= size) break;
      if (child + 1 < size && ranks_before(heap[child], heap[child + 1])) child++;
      if (!ranks_before(e, heap[child])) break;
      heap[pos] = heap[child];
      pos = child;
    }
    heap[pos] = e;
  }
  qsort(heap, (size_t)k, sizeof *heap, cand_cmp);
}

/* Token from candidates cand[0..n) ranked best first, with the row maximum
 * cand[0].v; for top-p the prefix is first cut to the nucleus. */
static int32_t pick(const struct kb_vec_ops *ops, const struct cand *cand, double *sums, int64_t n, double temperature,
                    double u, bool nucleus, double p) {
  double m = (double)cand[0].v, s = 0.0;
  float v[KB_SAMP_BLOCK];
  for (int64_t b = 0; b < n; b += KB_SAMP_BLOCK) {
    int64_t len = n - b < KB_SAMP_BLOCK ? n - b : KB_SAMP_BLOCK;
    for (int64_t i = 0; i < len; i++) v[i] = cand[b + i].v;
    ops->exp_weights(len, v, m, temperature, sums + b);
    for (int64_t i = 0; i < len; i++) {
      s += sums[b + i];
      sums[b + i] = s;
    }
  }
  int64_t len = n;
  if (nucleus) {
    double need = p * sums[n - 1];
    for (len = 1; len < n; len++)
      if (sums[len - 1] >= need) break;
  }
  double t = u * sums[len - 1];
  for (int64_t i = 0; i < len; i++)
    if (sums[i] > t) return cand[i].i;
  /* Unreachable guard: the last candidate of the prefix with a positive weight. */
  for (int64_t i = len - 1; i > 0; i--)
    if (sums[i] > sums[i - 1]) return cand[i].i;
  return cand[0].i;
}

/* The element at offset `at` of float32 or 16-bit logits. */
static const void *row_of(int dt, const void *logits, int64_t at) {
  return dt == KB_VEC_F32 ? (const void *)((const float *)logits + at) : (const void *)((const uint16_t *)logits + at);
}

static void samp_body(void *arg, int64_t tbegin, int64_t tend) {
  const struct samp_job *g = (const struct samp_job *)arg;
  for (int64_t t = tbegin; t < tend; t++) {
    int64_t begin, end;
    kb__task_range(g->rows, g->tasks, t, &begin, &end);
    struct cand *cands = g->cands != NULL ? g->cands + t * g->width : NULL;
    double *sums = g->sums != NULL ? g->sums + t * g->width : NULL;
    for (int64_t r = begin; r < end; r++) {
      const void *x = row_of(g->dt, g->logits, r * g->cols);
      double u = kb_philox_uniform(g->seed, (uint64_t)r);
      if (g->mode == MODE_SAMPLE) {
        g->out[r] = sample_row(g->ops, g->dt, x, g->cols, g->temperature, u);
      } else if (g->mode == MODE_TOPK) {
        select_topk(g->ops, g->dt, x, g->cols, g->k, cands);
        g->out[r] = pick(g->ops, cands, sums, g->k, g->temperature, u, false, 0.0);
      } else {
        float buf[KB_SAMP_BLOCK];
        for (int64_t b = 0; b < g->cols; b += KB_SAMP_BLOCK) {
          int64_t n = g->cols - b < KB_SAMP_BLOCK ? g->cols - b : KB_SAMP_BLOCK;
          const float *xb = block_of(g->ops, g->dt, x, b, n, buf);
          for (int64_t i = 0; i < n; i++) {
            cands[b + i].v = xb[i];
            cands[b + i].i = (int32_t)(b + i);
          }
        }
        qsort(cands, (size_t)g->cols, sizeof *cands, cand_cmp);
        g->out[r] = pick(g->ops, cands, sums, g->cols, g->temperature, u, true, g->p);
      }
    }
  }
}

/* The message of a bad logits row (reason: KBCUDA_LOGITS_*), shared by the
 * CPU and CUDA paths. */
static kb_status bad_row(kb_context *ctx, const char *fn, int64_t r, int32_t reason) {
  const char *what = reason == KBCUDA_LOGITS_NAN       ? "holds NaN"
                     : reason == KBCUDA_LOGITS_POS_INF ? "holds +inf"
                                                       : "is all -inf";
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "logits row %lld %s", (long long)r, what);
}

/* Rejects NaN, +inf and all -inf rows; the first offending row is reported
 * (within a row, the first NaN or +inf decides the reason).  On CUDA the
 * device scans (the host cannot read device memory) by the same rule. */
static kb_status check_logits(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t cols,
                              const void *logits) {
  if (kb__on_cuda(ctx)) {
    if (rows == 0 || cols == 0) return KB_STATUS_OK;
    int64_t bad;
    int32_t reason;
    kbcuda_status st = ctx->cuda->validate_logits(ctx->cuda_ctx, fn, rows, cols, (const float *)logits, &bad, &reason);
    if (st != KBCUDA_STATUS_OK) return kb__cuda_finish(ctx, fn, st);
    if (bad >= 0) return bad_row(ctx, fn, bad, reason);
    return KB_STATUS_OK;
  }
  const struct kb_vec_ops *ops = &kb__cpu_ops()->vec;
  float buf[KB_SAMP_BLOCK];
  for (int64_t r = 0; r < rows; r++) {
    const void *x = row_of(dt, logits, r * cols);
    bool finite_or_neg_inf_seen = false;
    for (int64_t b = 0; b < cols; b += KB_SAMP_BLOCK) {
      int64_t n = cols - b < KB_SAMP_BLOCK ? cols - b : KB_SAMP_BLOCK;
      const float *xb = block_of(ops, dt, x, b, n, buf);
      for (int64_t i = 0; i < n; i++) {
        float v = xb[i];
        if (isnan(v)) return bad_row(ctx, fn, r, KBCUDA_LOGITS_NAN);
        if (v == INFINITY) return bad_row(ctx, fn, r, KBCUDA_LOGITS_POS_INF);
        if (v != -INFINITY) finite_or_neg_inf_seen = true;
      }
    }
    if (!finite_or_neg_inf_seen) return bad_row(ctx, fn, r, KBCUDA_LOGITS_ALL_NEG_INF);
  }
  return KB_STATUS_OK;
}

static kbcuda_status cuda_sample(kb_context *ctx, const char *fn, enum mode mode, int64_t rows, int64_t cols,
                                 const float *logits, int64_t k, float p, float temperature, uint64_t seed,
                                 int32_t *out) {
  const struct kbcuda_table *t = ctx->cuda;
  switch (mode) {
    case MODE_TOPK:
      return t->topk_sample(ctx->cuda_ctx, fn, rows, cols, logits, k, temperature, seed, out);
    case MODE_TOPP:
      return t->topp_sample(ctx->cuda_ctx, fn, rows, cols, logits, p, temperature, seed, out);
    default:
      return t->sample(ctx->cuda_ctx, fn, rows, cols, logits, temperature, seed, out);
  }
}

/* dt: KB_VEC_F32 (logits are float) or the 16-bit format of the logits. */
static kb_status run(kb_context *ctx, const char *fn, enum mode mode, int dt, int64_t rows, int64_t cols,
                     const void *logits, int64_t k, float p, float temperature, uint64_t seed, int32_t *out) {
  int64_t elem = dt == KB_VEC_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_inner(ctx, fn, "cols", cols, "rows", rows));
  if (cols > INT32_MAX)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cols must be <= %ld (tokens are int32), got %lld",
                    (long)INT32_MAX, (long long)cols);
  if (mode == MODE_TOPK) {
    if (k < 1) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "k must be >= 1, got %lld", (long long)k);
    if (rows > 0 && k > cols)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "k must be <= cols (%lld), got %lld", (long long)cols,
                      (long long)k);
  }
  int64_t dims[2] = {rows, cols}, count, out_count;
  KB_TRY(kb__count(ctx, fn, "logits", elem, 2, dims, &count));
  KB_TRY(kb__count(ctx, fn, "out", (int64_t)sizeof(int32_t), 1, &rows, &out_count));
  KB_TRY(kb__check_ptr(ctx, fn, "logits", logits, count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, out_count));
  if (!isfinite(temperature) || temperature <= 0.0f)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "temperature must be finite and > 0, got %g",
                    (double)temperature);
  if (mode == MODE_TOPP && !(p > 0.0f && p <= 1.0f))
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "p must be in (0, 1], got %g", (double)p);
  int64_t ob = out_count * (int64_t)sizeof(int32_t), xb = count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "logits", logits, xb, false));
  const struct kb_mem_ref refs[] = {{"logits", logits, xb}, {"out", out, ob}};
  KB_TRY(kb__check_memory(ctx, fn, 2, refs));
  if (kb__on_cuda(ctx) && dt != KB_VEC_F32)
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  KB_TRY(check_logits(ctx, fn, dt, rows, cols, logits));
  /* The CUDA path allocates no host scratch: the device has its own. */
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           cuda_sample(ctx, fn, mode, rows, cols, (const float *)logits, k, p, temperature, seed, out));
  if (rows == 0) return KB_STATUS_OK;

  struct samp_job g = {&kb__cpu_ops()->vec, mode, dt, rows, cols, k, logits, (double)p, (double)temperature, seed,
                       out, NULL, NULL, 0, 0};
  /* Work per row is about cols exps (plus a sort for top-p). */
  g.tasks = kb__task_count(ctx, rows, 16384 / cols + 1);
  if (mode != MODE_SAMPLE) {
    g.width = mode == MODE_TOPK ? k : cols;
    int64_t sdims[2] = {g.tasks, g.width}, slots;
    KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)(sizeof(struct cand) + sizeof(double)), 2, sdims, &slots));
    g.cands = (struct cand *)malloc((size_t)slots * sizeof(struct cand));
    g.sums = (double *)malloc((size_t)slots * sizeof(double));
    if (g.cands == NULL || g.sums == NULL) {
      free(g.cands);
      free(g.sums);
      return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate scratch for %lld candidates", (long long)slots);
    }
  }
  kb__parallel_for(ctx, g.tasks, 1, samp_body, &g);
  free(g.cands);
  free(g.sums);
  return KB_STATUS_OK;
}

kb_status kb_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, float temperature, uint64_t seed,
                    int32_t *out) {
  return run(ctx, "kb_sample", MODE_SAMPLE, KB_VEC_F32, rows, cols, logits, 1, 1.0f, temperature, seed, out);
}

kb_status kb_topk_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, int64_t k, float temperature,
                         uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topk_sample", MODE_TOPK, KB_VEC_F32, rows, cols, logits, k, 1.0f, temperature, seed, out);
}

kb_status kb_topp_sample(kb_context *ctx, int64_t rows, int64_t cols, const float *logits, float p, float temperature,
                         uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topp_sample", MODE_TOPP, KB_VEC_F32, rows, cols, logits, 1, p, temperature, seed, out);
}

/* ---- bfloat16 / float16 logits ---- */

kb_status kb_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float temperature,
                         uint64_t seed, int32_t *out) {
  return run(ctx, "kb_sample_bf16", MODE_SAMPLE, KB_VEC_BF16, rows, cols, logits, 1, 1.0f, temperature, seed, out);
}

kb_status kb_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float temperature,
                        uint64_t seed, int32_t *out) {
  return run(ctx, "kb_sample_f16", MODE_SAMPLE, KB_VEC_F16, rows, cols, logits, 1, 1.0f, temperature, seed, out);
}

kb_status kb_topk_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, int64_t k,
                              float temperature, uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topk_sample_bf16", MODE_TOPK, KB_VEC_BF16, rows, cols, logits, k, 1.0f, temperature, seed, out);
}

kb_status kb_topk_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, int64_t k,
                             float temperature, uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topk_sample_f16", MODE_TOPK, KB_VEC_F16, rows, cols, logits, k, 1.0f, temperature, seed, out);
}

kb_status kb_topp_sample_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float p,
                              float temperature, uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topp_sample_bf16", MODE_TOPP, KB_VEC_BF16, rows, cols, logits, 1, p, temperature, seed, out);
}

kb_status kb_topp_sample_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *logits, float p,
                             float temperature, uint64_t seed, int32_t *out) {
  return run(ctx, "kb_topp_sample_f16", MODE_TOPP, KB_VEC_F16, rows, cols, logits, 1, p, temperature, seed, out);
}
