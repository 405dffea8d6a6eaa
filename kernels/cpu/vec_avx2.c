/* vec_avx2.c - the avx2 level of the vector kernels (vec_kernels.h):
 * vec_body.h over vec_lanes_avx2.h. */
#include "simd.h"

#if KB_HAVE_X86_SIMD

#include "vec_lanes_avx2.h"

#include "vec_body.h"

const struct kb_vec_ops kb__vec_ops_avx2 = KV_OPS_INIT;

#endif
