/* vec_avx512.c - the avx512 level of the vector kernels (vec_kernels.h):
 * vec_body.h over vec_lanes_avx512.h. */
#include "simd.h"

#if KB_HAVE_X86_SIMD

#include "vec_lanes_avx512.h"

#include "vec_body.h"

const struct kb_vec_ops kb__vec_ops_avx512 = KV_OPS_INIT;

#endif
