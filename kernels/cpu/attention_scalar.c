/* attention_scalar.c - the portable level of the attention pieces
 * (attention_kernels.h): the reference the vector levels reproduce bit for
 * bit, operation by operation. */
#include <math.h>
#include <string.h>

#include "attention_kernels.h"
#include "gemm_kernels.h"
#include "half.h"

/* exp(x) for the softmax weights, where x = s - max <= 0 (or NaN):
 * n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two fma
 * steps, exp(r) by its Taylor polynomial of degree 7 (truncation below
 * 5e-9 relative for |r| <= ln 2 / 2), times 2^n by adding n to the exponent
 * bits.  Results below 2^-125 (x < -87) are 0: such a weight is below any
 * float32 sum it joins.  The vector levels run these exact operations. */
float kb__attn_exp(float x) {
  const float magic = 12582912.0f; /* 1.5 * 2^23 */
  float t = fmaf(x, 1.44269502e+00f, magic);
  float n = t - magic;
  float r = fmaf(n, -6.93145752e-01f, x);
  r = fmaf(n, -1.42860677e-06f, r);
  float p = 1.98412698e-04f;
  p = fmaf(p, r, 1.38888889e-03f);
  p = fmaf(p, r, 8.33333333e-03f);
  p = fmaf(p, r, 4.16666667e-02f);
  p = fmaf(p, r, 1.66666667e-01f);
  p = fmaf(p, r, 5.00000000e-01f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  uint32_t tb, mb, pb;
  memcpy(&tb, &t, sizeof tb);
  memcpy(&mb, &magic, sizeof mb);
  memcpy(&pb, &p, sizeof pb);
  pb += (tb - mb) << 23;
  float e;
  memcpy(&e, &pb, sizeof e);
  return x < -87.0f ? 0.0f : e;
}

static void softmax_block(const float *s, int64_t len, float m_old, float *p, float *m_new, float *sum) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < len; j++) mx = s[j] > mx ? s[j] : mx;
  float m = m_old > mx ? m_old : mx;
  float part[16];
  for (int l = 0; l < 16; l++) part[l] = 0.0f;
  for (int64_t j = 0; j < len; j++) {
    p[j] = kb__attn_exp(s[j] - m);
    part[j % 16] += p[j];
  }
  for (int l = 0; l < 8; l++) part[l] += part[l + 8];
  for (int l = 0; l < 4; l++) part[l] += part[l + 4];
  for (int l = 0; l < 2; l++) part[l] += part[l + 2];
  *sum = part[0] + part[1];
  *m_new = m;
}

/* The reference of the vector levels' pv: one element at a time. */
static void pv(int vdt, int64_t rows, int64_t len, int64_t d, const float *p, int64_t ldp, const void *v, int64_t ldv,
               float *o, int64_t ldo, int first) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t x = 0; x < d; x++) {
      float acc = first ? 0.0f : o[i * ldo + x];
      for (int64_t j = 0; j < len; j++) {
        int64_t at = j * ldv + x;
        float vx = vdt == KB_GEMM_BF16  ? kb_bf16_to_f32(((const uint16_t *)v)[at])
                   : vdt == KB_GEMM_F16 ? kb_f16_to_f32(((const uint16_t *)v)[at])
                                        : ((const float *)v)[at];
        acc = fmaf(p[i * ldp + j], vx, acc);
      }
      o[i * ldo + x] = acc;
    }
}

const struct kb_attn_ops kb__attn_ops_scalar = {softmax_block, pv, 4, 4};
