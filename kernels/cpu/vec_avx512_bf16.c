/* vec_avx512_bf16.c - the avx512 level of the vector kernels (vec_kernels.h)
 * for CPUs with AVX-512 BF16: vec_body.h over vec_lanes_avx512.h with
 * KV_AVX512_BF16, which narrows float to bfloat16 with vcvtneps2bf16.  Same
 * results as vec_avx512.c to the bit (vec_lanes_avx512.h, kv_to_bf16);
 * dispatch.c uses it in place of that table where the CPU has the feature. */
#include "simd.h"

#if KB_HAVE_X86_SIMD && KB_HAVE_AVX512_BF16

#define KV_AVX512_BF16 1
#include "vec_lanes_avx512.h"

#include "vec_body.h"

const struct kb_vec_ops kb__vec_ops_avx512_bf16 = KV_OPS_INIT;

#endif
