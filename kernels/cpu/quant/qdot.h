/* qdot.h - the products of float32 activations with GGML block-quantized
 * weights (Q8_0, Q4_0): the instruction-set-specific pieces (qdot_scalar.c,
 * qdot_avx2.c) behind kb_linear_w's quantized path (qmatmul.c).  Internal
 * to kernels/cpu.
 *
 * The arithmetic contract, identical on every level (so every level, thread
 * count and language gives the same bits):
 *
 * 1. Each row of activations is quantized per block of 32 (kb_qact_fn): d =
 *    max|x| / 127 (float division), q[e] = x[e] * (1 / d) rounded to the
 *    nearest integer, ties to even (0 when d == 0); a block holding a NaN
 *    or an infinity gets d = NaN and q = 0, so every output of its row is
 *    NaN.  A tiny block, 0 < d < FLT_MIN (1 / d could overflow), is
 *    quantized scaled by 2^64, exactly: ds = (max|x| * 2^64) / 127, q[e] =
 *    rint((x[e] * 2^64) * (1 / ds)), d = ds * 2^-64 (rounded to a
 *    subnormal).  Also kept per block: s[l] = q[4l] + .. + q[4l+3], l < 8.
 *
 * 2. Output (i, j) = activation row i . weight row j:
 *      acc[l] = 0 for l < 8
 *      for each block b, in order:
 *        p[l]   = sum over e in 4l .. 4l+3 of w[e] * q[e]   (exact int32;
 *                 w[e] the weight's integer: Q8_0 qs, Q4_0 nibble - 8)
 *        t[l]   = (float)p[l] * dx(b)                        (rounded)
 *        acc[l] = fma(dw(b), t[l], acc[l])                   (dw: the block's
 *                 binary16 scale widened)
 *      y = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
 *    The 8 lanes are those of a 256-bit register (vpmaddubsw + vpmaddwd, or
 *    vpdpbusd, sum 4 adjacent byte products into one int32 lane), and the
 *    final sum is the usual horizontal sum of such a register, written
 *    down once here so that scalar code reproduces it.
 *
 * The integer sums are exact on every path, so only the float steps above
 * decide the bits; their order is fixed per output, never split across
 * threads.  docs/kernels.md gives the error bound against the float64
 * product of the dequantized weights and the float32 activations. */
#ifndef KB_CPU_QDOT_H
#define KB_CPU_QDOT_H

#include <stdint.h>

#include "quant.h"

/* Quantized activations: row i, block b at index i * nb + b of each array. */
struct kb_qact {
  int64_t nb;        /* blocks per row */
  int8_t *q;         /* [rows * nb][32], 32-byte aligned */
  float *d;          /* [rows * nb] */
  int32_t *s;        /* [rows * nb][8] */
};

/* Quantizes rows [i0, i1) of x ([*, k], row stride ldx; k = nb * 32) into
 * act as step 1 of the contract says. */
typedef void (*kb_qact_fn)(int64_t i0, int64_t i1, const float *x, int64_t ldx, const struct kb_qact *act);

/* y[i * ldy + j] = output (i, j) of step 2 for activation rows [0, m) and
 * weight rows [0, n), the weight rows `row_bytes` apart starting at w, in
 * format type (KB_QTYPE_Q8_0 or KB_QTYPE_Q4_0). */
typedef void (*kb_qdot_fn)(int type, int64_t m, int64_t n, const struct kb_qact *act, const void *w,
                           int64_t row_bytes, float *y, int64_t ldy);

struct kb_quant_ops {
  kb_qact_fn quantize_act;
  kb_qdot_fn dot;
};

/* The 65536 binary16 values widened to float32, indexed by their bits:
 * the vector products widen each block's scale with two loads and no
 * arithmetic.  Built on first use (256 KiB), then read-only. */
const float *kb__f16_to_f32_table(void);

/* The tables: the scalar reference; AVX2 (vpmaddubsw); AVX2 with AVX-VNNI;
 * AVX2 with AVX512-VNNI on 256-bit registers (the avx512 level). */
extern const struct kb_quant_ops kb__quant_ops_scalar;
extern const struct kb_quant_ops kb__quant_ops_avx2;
extern const struct kb_quant_ops kb__quant_ops_avx2_vnni;
extern const struct kb_quant_ops kb__quant_ops_avx512_vnni;

#endif /* KB_CPU_QDOT_H */
