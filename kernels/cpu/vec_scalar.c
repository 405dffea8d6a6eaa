/* vec_scalar.c - the scalar level of the vector kernels (vec_kernels.h):
 * vec_body.h over 16 lanes of plain C, the reference every vector level
 * reproduces bit for bit. */
#include "vec_lanes_scalar.h"

#include "vec_body.h"

const struct kb_vec_ops kb__vec_ops_scalar = KV_OPS_INIT;
