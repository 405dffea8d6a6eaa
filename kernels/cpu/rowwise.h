/* rowwise.h - helpers shared by the row-wise CPU kernels (softmax, norms,
 * cross-entropy).  Internal to kernels/cpu. */
#ifndef KB_CPU_ROWWISE_H
#define KB_CPU_ROWWISE_H

#include <stdint.h>

/* Smallest number of elements a thread should get in a row-wise kernel. */
#define KB_ROW_MIN_ELEMS 16384

/* Rows per thread so that each thread gets at least KB_ROW_MIN_ELEMS elements. */
static inline int64_t kb_cpu_min_rows(int64_t cols) { return cols > 0 ? KB_ROW_MIN_ELEMS / cols + 1 : 1; }

#endif /* KB_CPU_ROWWISE_H */
