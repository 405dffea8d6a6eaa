/* attention_kernels.h - the instruction-set-specific pieces of attention
 * (attention_scalar.c, attention_avx2.c, attention_avx512.c), driven by
 * attention.c.  Internal to kernels/cpu.
 *
 * The matrix products of attention run on the gemm microkernels; what is
 * left per instruction set is the online softmax of one row of a key block.
 * Every level computes the same bits: the maximum is exact, the exponential
 * is one fixed sequence of float32 operations (attn_exp in each file), and
 * the row sum uses 16 partial sums (key j goes to partial j mod 16, keys in
 * increasing order) reduced by the fixed tree
 *   s8[l] = p[l] + p[l+8], s4[l] = s8[l] + s8[l+4], s2[l] = s4[l] + s4[l+2],
 *   sum = s2[0] + s2[1]. */
#ifndef KB_CPU_ATTENTION_KERNELS_H
#define KB_CPU_ATTENTION_KERNELS_H

#include <stdint.h>

/*
 * One row of a key block of `len` scores s (masked keys hold -inf):
 *   m = max(m_old, max_j s[j])   (NaN scores do not take part; they make p NaN)
 *   p[j] = exp(s[j] - m) for j < len
 *   *sum = the 16-partial sum of p (see above), *m_new = m.
 * len <= 128 (the block size of attention.c).
 */
typedef void (*kb_attn_softmax_block_fn)(const float *s, int64_t len, float m_old, float *p, float *m_new, float *sum);

/*
 * O += P V for the few query rows of a decode block (1 <= rows <= 4; the
 * caller passes more rows in groups), reading each row of V once per strip
 * of columns:
 *   o[i * ldo + x] = chain over j < len of p[i * ldp + j] * V(j, x)
 * with V(j, x) = v[j * ldv + x] of storage type vdt (KB_GEMM_F32, _BF16,
 * _F16 of gemm_kernels.h) widened exactly to float32 (a 16-bit cache is
 * read as it is stored, not widened into scratch first),
 * for x < d, each element the gemm contract's fma chain (gemm_kernels.h)
 * started from 0 (first) or from o's value, j increasing: the bits of the
 * microkernel's product with first / !first.  len >= 1.
 */
typedef void (*kb_attn_pv_fn)(int vdt, int64_t rows, int64_t len, int64_t d, const float *p, int64_t ldp, const void *v,
                              int64_t ldv, float *o, int64_t ldo, int first);

struct kb_attn_ops {
  kb_attn_softmax_block_fn softmax_block;
  kb_attn_pv_fn pv;
  /* Query rows per decode block up to which the scores come from the
   * small-m product on K in place rather than from the microkernel on K
   * packed block by block: the same bits either way, so a per-level choice
   * of speed (docs/performance.md, "Decode attention: the K and V routes per
   * level").  At most 8: attention_ex_test's reference takes 9-16 rows
   * through the microkernel on every level. */
  int dot_rows;
  /* Query rows per decode block up to which O += P V of a float32 V comes
   * from pv (4 rows per call) rather than the microkernel on
   * V in place; a 16-bit V always takes pv (faster than widening the block
   * into scratch for the microkernel at 8, 12 and 16 rows).  At most 8, for
   * the same reason as dot_rows. */
  int pv_rows;
};

/* The exponential of the softmax weights for one value (attention_scalar.c):
 * the same bits as each level's vector version.  Used on every level for
 * the per-row rescale factors and the merge of decode chunks. */
float kb__attn_exp(float x);

extern const struct kb_attn_ops kb__attn_ops_scalar;
extern const struct kb_attn_ops kb__attn_ops_avx2;
extern const struct kb_attn_ops kb__attn_ops_avx512;

#endif /* KB_CPU_ATTENTION_KERNELS_H */
