/* vec_scalar.c - the scalar level of the vector kernels (vec_kernels.h):
 * the reference every vector level reproduces bit for bit. */
#include "vec_kernels.h"
#include "vmath_scalar.h"

static void exp_array(int64_t n, const float *x, float *y) {
  for (int64_t i = 0; i < n; i++) y[i] = kb_exp_scalar(x[i]);
}

const struct kb_vec_ops kb__vec_ops_scalar = {
    .math = {[KB_VM_EXP] = exp_array},
};
