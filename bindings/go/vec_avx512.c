/* vendored by tools/vendor_c.py from kernels/cpu/vec_avx512.c; do not edit */
/* vec_avx512.c - the avx512 level of the vector kernels (vec_kernels.h). */
#include "vec_kernels.h"
#include "vmath_avx512.h"

#if KB_HAVE_X86_SIMD

KB_TARGET_AVX512 static void exp_array(int64_t n, const float *x, float *y) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, kb_exp_avx512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, kb_exp_avx512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

const struct kb_vec_ops kb__vec_ops_avx512 = {
    .math = {[KB_VM_EXP] = exp_array},
};

#endif
