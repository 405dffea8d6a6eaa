/* qdot_avx2.c - the quantized products (qdot.h) on 256-bit registers:
 * qdot_body.h expanded once per integer dot product the CPU may have
 * (vpmaddubsw on AVX2; vpdpbusd from AVX-VNNI or from AVX512-VNNI).  The
 * integer sums are exact on all of them, and the float steps are the
 * contract's, so every variant gives the scalar level's bits. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "../simd.h"
#include "qdot.h"

#if KB_HAVE_X86_SIMD

#define QDOT_TARGET KB_TARGET_AVX2
#define QDOT_VNNI 0
#define QDOT_OPS kb__quant_ops_avx2
#include "qdot_body.h"
#undef QDOT_TARGET
#undef QDOT_VNNI
#undef QDOT_OPS

/* vpdpbusd needs gcc 11 / clang 12 for AVX-VNNI, gcc 8 / clang 6 for
 * AVX512-VNNI; older compilers get the tables of the AVX2 variant. */
#if defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11
#define QDOT_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define QDOT_VNNI 1
#define QDOT_OPS kb__quant_ops_avx2_vnni
#include "qdot_body.h"
#undef QDOT_TARGET
#undef QDOT_VNNI
#undef QDOT_OPS

#define QDOT_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,avx2,fma,f16c")))
#define QDOT_VNNI 2
#define QDOT_MI 4 /* 32 vector registers */
#define QDOT_OPS kb__quant_ops_avx512_vnni
#include "qdot_body.h"
#undef QDOT_TARGET
#undef QDOT_VNNI
#undef QDOT_OPS
#else
const struct kb_quant_ops kb__quant_ops_avx2_vnni = {NULL, NULL};
const struct kb_quant_ops kb__quant_ops_avx512_vnni = {NULL, NULL};
#endif

#endif /* KB_HAVE_X86_SIMD */
