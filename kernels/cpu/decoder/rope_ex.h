/* rope_ex.h - kb_rope_ex's inverse frequencies (rope_ex.c), internal to
 * kernels/cpu; declared here so that rope_ex_test.c can check them against
 * hand-derived values. */
#ifndef KB_CPU_DECODER_ROPE_EX_H
#define KB_CPU_DECODER_ROPE_EX_H

#include <stdint.h>

/* The frequency parameters of one kb_rope_ex call, widened to double. */
struct kb_rope_freq {
  int64_t rotary_dim;  /* even, > 0 */
  int scaling;         /* a kb_rope_scaling */
  double theta, factor, low_freq_factor, high_freq_factor, original_max_position;
};

/* inv_freq[i] for i < rotary_dim / 2, in double, as docs/kernels.md
 * ("rope_ex") writes it. */
double kb__rope_inv_freq(const struct kb_rope_freq *f, int64_t i);

#endif /* KB_CPU_DECODER_ROPE_EX_H */
