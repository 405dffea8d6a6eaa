/* glu.h - kb_glu's float32 arithmetic on one tile (glu.c), shared with the
 * kernels that produce the gate and up values themselves
 * (linear_glu.c, moe_experts.c) so that they give kb_glu's bits.
 * Internal to kernels/cpu. */
#ifndef KB_CPU_DECODER_GLU_H
#define KB_CPU_DECODER_GLU_H

#include <stdint.h>

#include "../vec_kernels.h"

/* y[i] = act(gate[i]) * up[i] for i < n, exactly as kb_glu; gate is the
 * caller's scratch (relu may overwrite it); y may be up. */
void kb__glu_tile(const struct kb_vec_ops *ops, int act, float *gate, const float *up, float *y, int64_t n);

#endif /* KB_CPU_DECODER_GLU_H */
