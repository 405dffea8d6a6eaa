/* qdot_scalar.c - the quantized products in plain C (qdot.h): the reference
 * the vector levels are tested against, written as the contract reads. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../half.h"
#include "qdot.h"

static void quantize_act(int64_t i0, int64_t i1, const float *x, int64_t ldx, const struct kb_qact *act) {
  for (int64_t i = i0; i < i1; i++) {
    for (int64_t b = 0; b < act->nb; b++) {
      const float *blk = x + i * ldx + b * KB_QK;
      int64_t at = i * act->nb + b;
      int8_t *q = act->q + at * KB_QK;
      float amax = 0.0f;
      int finite = 1;
      for (int e = 0; e < KB_QK; e++) {
        float a = fabsf(blk[e]);
        if (!(a <= FLT_MAX)) finite = 0;
        amax = a > amax ? a : amax;
      }
      float d = finite ? amax / 127.0f : NAN;
      float id = finite && d != 0.0f ? 1.0f / d : 0.0f;
      float scale = 1.0f;
      if (finite && d != 0.0f && d < FLT_MIN) { /* 1 / d may overflow: the tiny block's rule */
        scale = 0x1p64f;
        float ds = amax * scale / 127.0f;
        id = 1.0f / ds;
        d = ds * 0x1p-64f;
      }
      for (int e = 0; e < KB_QK; e++) q[e] = (int8_t)(finite ? rintf(blk[e] * scale * id) : 0.0f);
      act->d[at] = d;
      for (int l = 0; l < 8; l++) act->s[at * 8 + l] = q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3];
    }
  }
}

/* The 32 integers of weight block `blk` (type's layout). */
static void weights(int type, const unsigned char *blk, int w[KB_QK]) {
  if (type == KB_QTYPE_Q8_0) {
    for (int e = 0; e < KB_QK; e++) w[e] = blk[2 + e] < 128 ? blk[2 + e] : blk[2 + e] - 256;
  } else {
    for (int e = 0; e < KB_QK / 2; e++) {
      w[e] = (blk[2 + e] & 15) - 8;
      w[e + KB_QK / 2] = (blk[2 + e] >> 4) - 8;
    }
  }
}

static void dot(int type, int64_t m, int64_t n, const struct kb_qact *act, const void *w, int64_t row_bytes, float *y,
                int64_t ldy) {
  int64_t block_bytes = type == KB_QTYPE_Q8_0 ? KB_Q8_0_BLOCK_BYTES : KB_Q4_0_BLOCK_BYTES;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const unsigned char *row = (const unsigned char *)w + j * row_bytes;
      float acc[8] = {0};
      for (int64_t b = 0; b < act->nb; b++) {
        const unsigned char *blk = row + b * block_bytes;
        const int8_t *q = act->q + (i * act->nb + b) * KB_QK;
        int wi[KB_QK];
        weights(type, blk, wi);
        float dw = kb_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
        float dx = act->d[i * act->nb + b];
        for (int l = 0; l < 8; l++) {
          int32_t p = 0;
          for (int e = 4 * l; e < 4 * l + 4; e++) p += wi[e] * q[e];
          float t = (float)p * dx;
          acc[l] = fmaf(dw, t, acc[l]);
        }
      }
      y[i * ldy + j] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
}

const struct kb_quant_ops kb__quant_ops_scalar = {quantize_act, dot};
