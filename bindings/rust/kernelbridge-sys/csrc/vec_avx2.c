/* vendored by tools/vendor_c.py from kernels/cpu/vec_avx2.c; do not edit */
/* vec_avx2.c - the avx2 level of the vector kernels (vec_kernels.h). */
#include "vec_kernels.h"
#include "vmath_avx2.h"

#if KB_HAVE_X86_SIMD

KB_TARGET_AVX2 static void exp_array(int64_t n, const float *x, float *y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, kb_exp_avx2(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, mask, kb_exp_avx2(_mm256_maskload_ps(x + i, mask)));
  }
}

const struct kb_vec_ops kb__vec_ops_avx2 = {
    .math = {[KB_VM_EXP] = exp_array},
};

#endif
