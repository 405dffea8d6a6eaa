/* dispatch.c - builds the table of each instruction-set level once and
 * hands out the one of the process's level (dispatch.h). */
#include "dispatch.h"

#include <pthread.h>

#include "simd.h"

static struct kb_cpu_ops tables[KB_ISA_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build(void) {
  struct kb_cpu_ops t[KB_ISA_COUNT];
  t[KB_ISA_SCALAR].isa = KB_ISA_SCALAR;
  t[KB_ISA_SCALAR].vec = kb__vec_ops_scalar;
  t[KB_ISA_SCALAR].gemm = kb__gemm_ops_scalar;
  t[KB_ISA_SCALAR].attn = kb__attn_ops_scalar;
  t[KB_ISA_SCALAR].quant = kb__quant_ops_scalar;
#if KB_HAVE_X86_SIMD
  t[KB_ISA_AVX2].isa = KB_ISA_AVX2;
  t[KB_ISA_AVX2].vec = kb__vec_ops_avx2;
  t[KB_ISA_AVX2].gemm = kb__gemm_ops_avx2;
  t[KB_ISA_AVX2].attn = kb__attn_ops_avx2;
  /* Same bits with any integer dot product (qdot.h): the fastest the CPU
   * has that the level allows (AVX512-VNNI only at the avx512 level). */
  int vnni = kb__cpu_vnni();
  t[KB_ISA_AVX2].quant = kb__quant_ops_avx2;
  if ((vnni & 1) && kb__quant_ops_avx2_vnni.dot != NULL) t[KB_ISA_AVX2].quant = kb__quant_ops_avx2_vnni;
  t[KB_ISA_AVX512].isa = KB_ISA_AVX512;
  t[KB_ISA_AVX512].vec = kb__vec_ops_avx512;
#if KB_HAVE_AVX512_BF16
  /* Same bits, faster float -> bfloat16 (vec_avx512_bf16.c). */
  if (kb__cpu_has_avx512_bf16()) t[KB_ISA_AVX512].vec = kb__vec_ops_avx512_bf16;
#endif
  t[KB_ISA_AVX512].gemm = kb__gemm_ops_avx512;
  t[KB_ISA_AVX512].attn = kb__attn_ops_avx512;
  t[KB_ISA_AVX512].quant = t[KB_ISA_AVX2].quant;
  if ((vnni & 2) && kb__quant_ops_avx512_vnni.dot != NULL) t[KB_ISA_AVX512].quant = kb__quant_ops_avx512_vnni;
#else
  t[KB_ISA_AVX2] = t[KB_ISA_SCALAR];
  t[KB_ISA_AVX512] = t[KB_ISA_SCALAR];
#endif
  for (int i = 0; i < KB_ISA_COUNT; i++) tables[i] = t[i];
}

const struct kb_cpu_ops *kb__cpu_ops_for(kb_isa isa) {
  if ((int)isa < 0 || (int)isa >= KB_ISA_COUNT) return NULL;
  if (!KB_HAVE_X86_SIMD && isa != KB_ISA_SCALAR) return NULL;
  /* A level above what the CPU runs would crash on its first instruction. */
  kb_isa best = kb__isa_best();
  if (isa > best) return NULL;
  pthread_once(&tables_once, build);
  return &tables[isa];
}

const struct kb_cpu_ops *kb__cpu_ops(void) {
  pthread_once(&tables_once, build);
  return &tables[kb__isa()];
}
