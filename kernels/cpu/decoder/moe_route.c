/* moe_route.c - kb_moe_route, kb_moe_route_bf16, kb_moe_route_f16: the
 * mixture-of-experts router (top_k experts per token and their weights).
 *
 * Per token row: the experts are ranked by decreasing logit, equal logits by
 * lower index (a total order, since NaN is refused), the best top_k kept in a
 * binary heap (O(experts log top_k)) and sorted.  The weights come from the
 * vector layer's softmax (the same function kb_softmax runs, so the same
 * bits): over the whole row for the SOFTMAX_TOPK routings, over the k
 * selected logits in rank order for TOPK_SOFTMAX.  16-bit logits are widened
 * exactly to float32 first, so the three variants route alike.  Rows are
 * independent and every row computes the same thing whichever task runs it,
 * so the results do not depend on the thread count; the softmax is
 * bit-identical on every instruction-set level (docs/kernels.md). */
#include <math.h>
#include <stdlib.h>

#include "../dispatch.h"
#include "../half.h"
#include "internal.h"

/* Logit storage of the three entry points. */
enum logit_type { LOGITS_F32, LOGITS_BF16, LOGITS_F16 };

struct cand {
  float v;
  int32_t i;
};

/* True when a ranks before b: larger logit first, then lower index. */
static bool ranks_before(struct cand a, struct cand b) { return a.v > b.v || (a.v == b.v && a.i < b.i); }

static int cand_cmp(const void *pa, const void *pb) {
  struct cand a = *(const struct cand *)pa, b = *(const struct cand *)pb;
  return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

/* The k best of x[0..n) in rank order into out[0..k).  A heap whose root is
 * the worst kept candidate: a column that does not beat it costs one
 * comparison, which is the common case once the heap is full. */
static void select_topk(const float *x, int64_t n, int64_t k, struct cand *out) {
  int64_t size = 0;
  for (int64_t c = 0; c < n; c++) {
    struct cand e = {x[c], (int32_t)c};
    int64_t pos;
    if (size < k) {
      pos = size++;
      while (pos > 0) {
        int64_t parent = (pos - 1) / 2;
        if (!ranks_before(out[parent], e)) break;
        out[pos] = out[parent];
        pos = parent;
      }
      out[pos] = e;
      continue;
    }
    if (!ranks_before(e, out[0])) continue;
    pos = 0;
    for (;;) {
      int64_t child = 2 * pos + 1;
      if (child >= size) break;
      if (child + 1 < size && ranks_before(out[child], out[child + 1])) child++;
      if (!ranks_before(e, out[child])) break;
      out[pos] = out[child];
      pos = child;
    }
    out[pos] = e;
  }
  /* The order is total (indices are unique), so any sort gives the same
     permutation. */
  qsort(out, (size_t)k, sizeof *out, cand_cmp);
}

struct route_job {
  const struct kb_vec_ops *ops;
  enum logit_type lt;
  kb_moe_routing routing;
  int64_t tokens, experts, k, tasks;
  const void *logits;
  int32_t *ids;
  float *weights;
  /* Per task: `experts` floats (widened row), `experts` floats (softmax),
     k floats (selected logits) and k candidates. */
  float *fscratch;
  struct cand *cands;
};

static void route_row(const struct route_job *j, int64_t t, float *wide, float *p, float *sel, struct cand *cands) {
  const int64_t n = j->experts, k = j->k;
  const float *x;
  if (j->lt == LOGITS_F32) {
    x = (const float *)j->logits + t * n;
  } else {
    kb_half_widen(j->lt == LOGITS_F16, (const uint16_t *)j->logits + t * n, wide, n);
    x = wide;
  }
  select_topk(x, n, k, cands);
  int32_t *ids = j->ids + t * k;
  float *w = j->weights + t * k;
  for (int64_t r = 0; r < k; r++) ids[r] = cands[r].i;
  if (j->routing == KB_MOE_ROUTING_TOPK_SOFTMAX) {
    /* kb_softmax of the selected logits in rank order, written into w. */
    for (int64_t r = 0; r < k; r++) sel[r] = cands[r].v;
    j->ops->softmax(KB_VEC_F32, 0, 1, k, sel, w);
    return;
  }
  j->ops->softmax(KB_VEC_F32, 0, 1, n, x, p);
  if (j->routing == KB_MOE_ROUTING_SOFTMAX_TOPK) {
    for (int64_t r = 0; r < k; r++) w[r] = p[cands[r].i];
    return;
  }
  /* SOFTMAX_TOPK_NORM: the sum in double in rank order (exact enough that
     only the p's own roundings and the quotient's count), then one rounding
     per weight.  S >= p[top] = 1/s > 0, so the quotient is defined. */
  double s = 0.0;
  for (int64_t r = 0; r < k; r++) s += (double)p[cands[r].i];
  for (int64_t r = 0; r < k; r++) w[r] = (float)((double)p[cands[r].i] / s);
}

static void route_body(void *arg, int64_t tbegin, int64_t tend) {
  const struct route_job *j = (const struct route_job *)arg;
  const int64_t n = j->experts, k = j->k;
  for (int64_t task = tbegin; task < tend; task++) {
    int64_t begin, end;
    kb__task_range(j->tokens, j->tasks, task, &begin, &end);
    float *f = j->fscratch + task * (2 * n + k);
    struct cand *c = j->cands + task * k;
    for (int64_t t = begin; t < end; t++) route_row(j, t, f, f + n, f + 2 * n, c);
  }
}

/* Logit x[r, c] classified from its bits: 0 finite, 1 NaN, 2 +inf, 3 -inf.
 * Widening is exact and keeps these classes, so the 16-bit variants refuse
 * exactly the rows the float32 kernel refuses on the widened logits. */
static int logit_class(enum logit_type lt, const void *x, int64_t i) {
  if (lt == LOGITS_F32) {
    float v = ((const float *)x)[i];
    if (v != v) return 1;
    if (v == INFINITY) return 2;
    if (v == -INFINITY) return 3;
    return 0;
  }
  uint16_t h = ((const uint16_t *)x)[i], mag = (uint16_t)(h & 0x7fffu);
  uint16_t inf = lt == LOGITS_F16 ? 0x7c00u : 0x7f80u;
  if (mag > inf) return 1;
  if (mag == inf) return (h & 0x8000u) ? 3 : 2;
  return 0;
}

/* Every row is scanned before anything is written: NaN and +inf are refused
 * naming the first such element, a row without a finite logit naming the
 * row (its softmax would be NaN: -inf - -inf). */
static kb_status check_logits(kb_context *ctx, const char *fn, enum logit_type lt, int64_t tokens, int64_t experts,
                              const void *logits) {
  for (int64_t r = 0; r < tokens; r++) {
    bool finite_seen = false;
    for (int64_t c = 0; c < experts; c++) {
      int cls = logit_class(lt, logits, r * experts + c);
      if (cls == 1)
        return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "logits[%lld, %lld] is NaN", (long long)r,
                        (long long)c);
      if (cls == 2)
        return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "logits[%lld, %lld] is +inf", (long long)r,
                        (long long)c);
      if (cls == 0) finite_seen = true;
    }
    if (!finite_seen)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "logits row %lld is all -inf", (long long)r);
  }
  return KB_STATUS_OK;
}

static kb_status route(kb_context *ctx, const char *fn, enum logit_type lt, int64_t tokens, int64_t experts,
                       int64_t top_k, kb_moe_routing routing, const void *logits, int32_t *ids, float *weights) {
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "tokens", tokens));
  KB_TRY(kb__check_dim(ctx, fn, "experts", experts));
  KB_TRY(kb__check_dim(ctx, fn, "top_k", top_k));
  KB_TRY(kb__check_inner(ctx, fn, "experts", experts, "tokens", tokens));
  if (experts > INT32_MAX)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "experts must be <= %ld (ids are int32), got %lld",
                    (long)INT32_MAX, (long long)experts);
  if (top_k < 1) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "top_k must be >= 1, got %lld", (long long)top_k);
  if (tokens > 0 && top_k > experts)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "top_k must be <= experts (%lld), got %lld",
                    (long long)experts, (long long)top_k);
  const int64_t elem = lt == LOGITS_F32 ? (int64_t)sizeof(float) : (int64_t)sizeof(uint16_t);
  int64_t xd[2] = {tokens, experts}, od[2] = {tokens, top_k}, xn, idn, wn;
  KB_TRY(kb__count(ctx, fn, "logits", elem, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "ids", (int64_t)sizeof(int32_t), 2, od, &idn));
  KB_TRY(kb__count(ctx, fn, "weights", (int64_t)sizeof(float), 2, od, &wn));
  KB_TRY(kb__check_ptr(ctx, fn, "logits", logits, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "ids", ids, idn));
  KB_TRY(kb__check_ptr(ctx, fn, "weights", weights, wn));
  if ((int)routing < (int)KB_MOE_ROUTING_SOFTMAX_TOPK || (int)routing > (int)KB_MOE_ROUTING_TOPK_SOFTMAX)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "routing must be a kb_moe_routing (0 softmax_topk, 1 softmax_topk_norm, 2 topk_softmax), got %d",
                    (int)routing);
  const int64_t xb = xn * elem, ib = idn * (int64_t)sizeof(int32_t), wb = wn * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "ids", ids, ib, "logits", logits, xb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "weights", weights, wb, "logits", logits, xb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "weights", weights, wb, "ids", ids, ib, false));
  const struct kb_mem_ref refs[] = {{"logits", logits, xb}, {"ids", ids, ib}, {"weights", weights, wb}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  KB_TRY(check_logits(ctx, fn, lt, tokens, experts, logits));
  if (tokens == 0) return KB_STATUS_OK;

  struct route_job j = {&kb__cpu_ops()->vec, lt, routing, tokens, experts, top_k, 0, logits, ids, weights, NULL, NULL};
  /* Work per row is about `experts` exponentials and comparisons. */
  j.tasks = kb__task_count(ctx, tokens, 16384 / experts + 1);
  int64_t fd[2] = {j.tasks, 2 * experts + top_k}, cd[2] = {j.tasks, top_k}, fcount, ccount;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, fd, &fcount));
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(struct cand), 2, cd, &ccount));
  j.fscratch = (float *)malloc((size_t)fcount * sizeof(float));
  j.cands = (struct cand *)malloc((size_t)ccount * sizeof(struct cand));
  if (j.fscratch == NULL || j.cands == NULL) {
    free(j.fscratch);
    free(j.cands);
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate scratch for %lld experts",
                    (long long)experts);
  }
  kb__parallel_for(ctx, j.tasks, 1, route_body, &j);
  free(j.fscratch);
  free(j.cands);
  return KB_STATUS_OK;
}

kb_status kb_moe_route(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k, kb_moe_routing routing,
                       const float *logits, int32_t *ids, float *weights) {
  return route(ctx, "kb_moe_route", LOGITS_F32, tokens, experts, top_k, routing, logits, ids, weights);
}

kb_status kb_moe_route_bf16(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k, kb_moe_routing routing,
                            const uint16_t *logits, int32_t *ids, float *weights) {
  return route(ctx, "kb_moe_route_bf16", LOGITS_BF16, tokens, experts, top_k, routing, logits, ids, weights);
}

kb_status kb_moe_route_f16(kb_context *ctx, int64_t tokens, int64_t experts, int64_t top_k, kb_moe_routing routing,
                           const uint16_t *logits, int32_t *ids, float *weights) {
  return route(ctx, "kb_moe_route_f16", LOGITS_F16, tokens, experts, top_k, routing, logits, ids, weights);
}
