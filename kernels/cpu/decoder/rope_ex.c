/* rope_ex.c - kb_rope_ex, kb_rope_ex_bf16, kb_rope_ex_f16: rotary position
 * embedding of q and k in place, positions per (batch, token), partial
 * rotary, half or adjacent pairs, frequency scaling (none, linear, Llama 3).
 *
 * Arithmetic (docs/kernels.md "rope_ex"): inv_freq in double
 * (kb__rope_inv_freq), angle = (double)position * inv_freq, cos and sin from
 * the vector layer's double sincos (kb_rope's own, so that kb_rope's case
 * gives kb_rope's bits), then per pair (u, v):
 *   u' = (float)(u * cos - v * sin),  v' = (float)(v * cos + u * sin)
 * with each product and sum rounded in double (-ffp-contract=off: never
 * fused), one rounding to float, NaN made the canonical quiet NaN.  That is
 * kb_rope's rope_pairs (vec_body.h) written in plain C: the rotation is the
 * same C on every instruction-set level, and the sincos entry gives the same
 * bits on every level, so results do not depend on the level.  Threads split
 * tokens; what a token computes never depends on the split.
 *
 * 16-bit variants widen each chunk of a head's rotated features exactly into
 * float32 on the stack, rotate them as above and narrow each result once
 * (half.c), which is round(kb_rope_ex(widen(q), widen(k))).  Features past
 * rotary_dim are never read or written, in every dtype. */
#include "rope_ex.h"

#include <math.h>
#include <string.h>

#include "../dispatch.h"
#include "../half.h"
#include "../reduced.h"
#include "internal.h"

/* Rotated elements per thread below which a thread is not worth starting
 * (kb_rope's). */
#define ROPE_EX_MIN_ELEMS 16384
/* Pairs per block: one block's inverse frequencies, angles, cos and sin sit
 * on the stack (4 x 2 KiB). */
#define ROPE_EX_CHUNK 256

/* 2 pi rounded to double: Python's 2 * math.pi (math.pi doubled exactly). */
#define ROPE_EX_2PI 0x1.921fb54442d18p+2

enum { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2 };

double kb__rope_inv_freq(const struct kb_rope_freq *f, int64_t i) {
  /* kb_rope's expression: the exponent rounded once, then the C library's
   * pow. */
  double inv = pow(f->theta, -(double)(2 * i) / (double)f->rotary_dim);
  switch (f->scaling) {
    case KB_ROPE_SCALING_LINEAR:
      return inv / f->factor;
    case KB_ROPE_SCALING_LLAMA3: {
      /* transformers' _compute_llama3_parameters, in double: wavelengths
       * shorter than original / high_freq_factor keep their frequency,
       * longer than original / low_freq_factor are divided by factor, and
       * the band between interpolates smoothly in original / wavelength. */
      double low_wavelen = f->original_max_position / f->low_freq_factor;
      double high_wavelen = f->original_max_position / f->high_freq_factor;
      double wavelen = ROPE_EX_2PI / inv;
      if (wavelen < high_wavelen) return inv;
      if (wavelen > low_wavelen) return inv / f->factor;
      double smooth = (f->original_max_position / wavelen - f->low_freq_factor) /
                      (f->high_freq_factor - f->low_freq_factor);
      return (1.0 - smooth) * inv / f->factor + smooth * inv;
    }
    default:
      return inv;
  }
}

/* The canonical quiet NaN for a NaN result (kb_rope's canon). */
static inline float canon_nan(float y) {
  if (y != y) {
    uint32_t bits = 0x7fc00000u;
    memcpy(&y, &bits, sizeof y);
  }
  return y;
}

/* n pairs (u[j * st], v[j * st]) rotated in place by (cs[j], sn[j]). */
static void rotate_pairs(int64_t n, float *u, float *v, int64_t st, const double *cs, const double *sn) {
  for (int64_t j = 0; j < n; j++) {
    double a = u[j * st], b = v[j * st];
    float ya = (float)(a * cs[j] - b * sn[j]);
    float yb = (float)(b * cs[j] + a * sn[j]);
    u[j * st] = canon_nan(ya);
    v[j * st] = canon_nan(yb);
  }
}

struct rope_ex_job {
  const struct kb_vec_ops *ops;
  struct kb_rope_freq freq;
  int dt, adjacent;
  int64_t q_heads, kv_heads, head_dim;
  const int32_t *positions;
  void *q, *k;
};

/* Pairs [i0, i0 + n) of one head row (head_dim elements of the job's dtype
 * at `row`), rotated by the block's cos / sin. */
static void rotate_head(const struct rope_ex_job *j, void *row, int64_t i0, int64_t n, const double *cs,
                        const double *sn) {
  int64_t h = j->freq.rotary_dim / 2;
  if (j->dt == DT_F32) {
    float *x = (float *)row;
    if (j->adjacent)
      rotate_pairs(n, x + 2 * i0, x + 2 * i0 + 1, 2, cs, sn);
    else
      rotate_pairs(n, x + i0, x + h + i0, 1, cs, sn);
    return;
  }
  int f16 = j->dt == DT_F16;
  uint16_t *x = (uint16_t *)row;
  float w[2 * ROPE_EX_CHUNK];
  if (j->adjacent) {
    kb_half_widen(f16, x + 2 * i0, w, 2 * n);
    rotate_pairs(n, w, w + 1, 2, cs, sn);
    kb_half_narrow(f16, w, x + 2 * i0, 2 * n);
  } else {
    kb_half_widen(f16, x + i0, w, n);
    kb_half_widen(f16, x + h + i0, w + n, n);
    rotate_pairs(n, w, w + n, 1, cs, sn);
    kb_half_narrow(f16, w, x + i0, n);
    kb_half_narrow(f16, w + n, x + h + i0, n);
  }
}

static void rope_ex_body(void *arg, int64_t t0, int64_t t1) {
  const struct rope_ex_job *j = (const struct rope_ex_job *)arg;
  int64_t h = j->freq.rotary_dim / 2, esize = j->dt == DT_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  int64_t qrow = j->q_heads * j->head_dim * esize, krow = j->kv_heads * j->head_dim * esize;
  double inv[ROPE_EX_CHUNK], ang[ROPE_EX_CHUNK], cs[ROPE_EX_CHUNK], sn[ROPE_EX_CHUNK];
  for (int64_t i0 = 0; i0 < h; i0 += ROPE_EX_CHUNK) {
    int64_t n = h - i0 < ROPE_EX_CHUNK ? h - i0 : ROPE_EX_CHUNK;
    for (int64_t i = 0; i < n; i++) inv[i] = kb__rope_inv_freq(&j->freq, i0 + i);
    for (int64_t t = t0; t < t1; t++) {
      double p = (double)j->positions[t];
      for (int64_t i = 0; i < n; i++) ang[i] = p * inv[i];
      j->ops->sincos_f64(n, ang, sn, cs);
      for (int64_t hh = 0; hh < j->q_heads; hh++)
        rotate_head(j, (char *)j->q + t * qrow + hh * j->head_dim * esize, i0, n, cs, sn);
      if (j->k != NULL)
        for (int64_t hh = 0; hh < j->kv_heads; hh++)
          rotate_head(j, (char *)j->k + t * krow + hh * j->head_dim * esize, i0, n, cs, sn);
    }
  }
}

/* "<name> must be finite and > 0, got <v>" unless it is. */
static kb_status check_positive_f(kb_context *ctx, const char *fn, const char *name, float v) {
  if (!isfinite(v) || v <= 0.0f)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be finite and > 0, got %g", name, (double)v);
  return KB_STATUS_OK;
}

static kb_status rope_ex_dt(kb_context *ctx, const char *fn, int dt, int64_t batch, int64_t seq, int64_t q_heads,
                            int64_t kv_heads, int64_t head_dim, int64_t rotary_dim, kb_rope_style style,
                            const int32_t *positions, float theta, kb_rope_scaling scaling, float factor,
                            float low_freq_factor, float high_freq_factor, int64_t original_max_position, void *q,
                            void *k) {
  KB_BEGIN(ctx, fn);
  int64_t esize = dt == DT_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  /* 1. dimensions, in parameter order. */
  KB_TRY(kb__check_dim(ctx, fn, "batch", batch));
  KB_TRY(kb__check_dim(ctx, fn, "seq", seq));
  KB_TRY(kb__check_dim(ctx, fn, "q_heads", q_heads));
  KB_TRY(kb__check_dim(ctx, fn, "kv_heads", kv_heads));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", head_dim));
  KB_TRY(kb__check_dim(ctx, fn, "rotary_dim", rotary_dim));
  /* 2. their constraints: a head of features has something to rotate. */
  KB_TRY(kb__check_inner(ctx, fn, "rotary_dim", rotary_dim, "head_dim", head_dim));
  if (rotary_dim % 2 != 0)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "rotary_dim must be even, got %lld", (long long)rotary_dim);
  if (rotary_dim > head_dim)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "rotary_dim (%lld) must be <= head_dim (%lld)",
                    (long long)rotary_dim, (long long)head_dim);
  if ((int)style != (int)KB_ROPE_STYLE_HALF && (int)style != (int)KB_ROPE_STYLE_ADJACENT)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "style must be a kb_rope_style (0 half, 1 adjacent), got %d",
                    (int)style);
  if ((int)scaling < (int)KB_ROPE_SCALING_NONE || (int)scaling > (int)KB_ROPE_SCALING_LLAMA3)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "scaling must be a kb_rope_scaling (0 none, 1 linear, 2 llama3), got %d", (int)scaling);
  /* 3. sizes (a NULL k has no elements). */
  int64_t pd[2] = {batch, seq}, qd[4] = {batch, seq, q_heads, head_dim}, kd[4] = {batch, seq, k ? kv_heads : 0, head_dim};
  int64_t pn, qn, kn;
  KB_TRY(kb__count(ctx, fn, "positions", (int64_t)sizeof(int32_t), 2, pd, &pn));
  KB_TRY(kb__count(ctx, fn, "q", esize, 4, qd, &qn));
  KB_TRY(kb__count(ctx, fn, "k", esize, 4, kd, &kn));
  /* 4. pointers. */
  KB_TRY(kb__check_ptr(ctx, fn, "positions", positions, pn));
  KB_TRY(kb__check_ptr(ctx, fn, "q", q, qn));
  /* 5. scalars; the ones the scaling does not use are not read. */
  KB_TRY(check_positive_f(ctx, fn, "theta", theta));
  if (scaling != KB_ROPE_SCALING_NONE) KB_TRY(check_positive_f(ctx, fn, "factor", factor));
  if (scaling == KB_ROPE_SCALING_LLAMA3) {
    KB_TRY(check_positive_f(ctx, fn, "low_freq_factor", low_freq_factor));
    KB_TRY(check_positive_f(ctx, fn, "high_freq_factor", high_freq_factor));
    if (!(low_freq_factor < high_freq_factor))
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "low_freq_factor (%g) must be < high_freq_factor (%g)",
                      (double)low_freq_factor, (double)high_freq_factor);
    if (original_max_position <= 0)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "original_max_position must be > 0, got %lld",
                      (long long)original_max_position);
  }
  /* 6. overlap: q and k are both written, so neither may touch the other
   * or positions. */
  int64_t pb = pn * (int64_t)sizeof(int32_t), qb = qn * esize, kbytes = kn * esize;
  KB_TRY(kb__check_overlap(ctx, fn, "q", q, qb, "k", k, kbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "q", q, qb, "positions", positions, pb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "k", k, kbytes, "positions", positions, pb, false));
  /* 7. memory kinds. */
  const struct kb_mem_ref refs[] = {{"positions", positions, pb}, {"q", q, qb}, {"k", k, kbytes}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  /* 8. contents: every position, before anything is written. */
  for (int64_t t = 0; t < pn; t++)
    if (positions[t] < 0)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "positions[%lld] must be >= 0, got %ld", (long long)t,
                      (long)positions[t]);
  if (pn == 0 || rotary_dim == 0 || (qn == 0 && kn == 0)) return KB_STATUS_OK;
  struct rope_ex_job job = {&kb__cpu_ops()->vec,
                            {rotary_dim, (int)scaling, (double)theta, (double)factor, (double)low_freq_factor,
                             (double)high_freq_factor, (double)original_max_position},
                            dt,
                            style == KB_ROPE_STYLE_ADJACENT,
                            q_heads,
                            kn > 0 ? kv_heads : 0,
                            head_dim,
                            positions,
                            q,
                            kn > 0 ? k : NULL};
  /* Rotated elements per token: both counts fit in int64 (their tensors'
   * sizes do), and so does their sum. */
  int64_t per_token = (q_heads + job.kv_heads) * rotary_dim;
  kb__parallel_for(ctx, pn, ROPE_EX_MIN_ELEMS / (per_token > 0 ? per_token : 1) + 1, rope_ex_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_rope_ex(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                     int64_t rotary_dim, kb_rope_style style, const int32_t *positions, float theta,
                     kb_rope_scaling scaling, float factor, float low_freq_factor, float high_freq_factor,
                     int64_t original_max_position, float *q, float *k) {
  return rope_ex_dt(ctx, "kb_rope_ex", DT_F32, batch, seq, q_heads, kv_heads, head_dim, rotary_dim, style, positions,
                    theta, scaling, factor, low_freq_factor, high_freq_factor, original_max_position, q, k);
}

kb_status kb_rope_ex_bf16(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                          int64_t head_dim, int64_t rotary_dim, kb_rope_style style, const int32_t *positions,
                          float theta, kb_rope_scaling scaling, float factor, float low_freq_factor,
                          float high_freq_factor, int64_t original_max_position, uint16_t *q, uint16_t *k) {
  return rope_ex_dt(ctx, "kb_rope_ex_bf16", DT_BF16, batch, seq, q_heads, kv_heads, head_dim, rotary_dim, style,
                    positions, theta, scaling, factor, low_freq_factor, high_freq_factor, original_max_position, q, k);
}

kb_status kb_rope_ex_f16(kb_context *ctx, int64_t batch, int64_t seq, int64_t q_heads, int64_t kv_heads,
                         int64_t head_dim, int64_t rotary_dim, kb_rope_style style, const int32_t *positions,
                         float theta, kb_rope_scaling scaling, float factor, float low_freq_factor,
                         float high_freq_factor, int64_t original_max_position, uint16_t *q, uint16_t *k) {
  return rope_ex_dt(ctx, "kb_rope_ex_f16", DT_F16, batch, seq, q_heads, kv_heads, head_dim, rotary_dim, style,
                    positions, theta, scaling, factor, low_freq_factor, high_freq_factor, original_max_position, q, k);
}
