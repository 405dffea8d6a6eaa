/* vendored by tools/vendor_c.py from kernels/cpu/rowwise.h; do not edit */
/* rowwise.h - helpers shared by the row-wise CPU kernels (softmax, norms,
 * cross-entropy).  Internal to kernels/cpu. */
#ifndef KB_CPU_ROWWISE_H
#define KB_CPU_ROWWISE_H

#include <math.h>
#include <stdint.h>

/* Smallest number of elements a thread should get in a row-wise kernel. */
#define KB_ROW_MIN_ELEMS 16384

/* Rows per thread so that each thread gets at least KB_ROW_MIN_ELEMS elements. */
static inline int64_t kb_cpu_min_rows(int64_t cols) { return cols > 0 ? KB_ROW_MIN_ELEMS / cols + 1 : 1; }

/*
 * Row maximum, ignoring NaN (a NaN then propagates through the exp sum).
 * Starts from -inf so that a row of -inf yields m = -inf and hence
 * (-inf) - (-inf) = NaN downstream, as PyTorch.
 */
static inline double kb_cpu_row_max(const float *x, int64_t cols) {
  float m = -INFINITY;
  for (int64_t c = 0; c < cols; c++)
    if (x[c] > m) m = x[c];
  return (double)m;
}

/* sum_c exp(x[c] - m), accumulated sequentially in double. */
static inline double kb_cpu_sum_exp(const float *x, int64_t cols, double m) {
  double s = 0.0;
  for (int64_t c = 0; c < cols; c++) s += exp((double)x[c] - m);
  return s;
}

#endif /* KB_CPU_ROWWISE_H */
