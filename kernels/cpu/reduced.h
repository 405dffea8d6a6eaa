/* reduced.h - CPU support of the reduced-precision (bf16 / f16) entry points.
 * Internal to kernels/cpu.
 *
 * The elementwise and row kernels widen and narrow in registers (the vector
 * layer's 16-bit storage, vec_kernels.h) and need nothing from here but
 * KB_HALF_SIZE and kb_vec_dt_of.  gemm and attention instead widen whole
 * tensors: such a call validates like kb_<op> (2-byte elements), allocates
 * all its scratch, widens the inputs, runs the float32 computation on the
 * scratch and narrows the result into the caller's output last, so an
 * allocation failure leaves every output untouched. */
#ifndef KB_CPU_REDUCED_H
#define KB_CPU_REDUCED_H

#include <stdint.h>

#include "internal.h"
#include "vec_kernels.h"

/* The vector kernels' storage code of a 16-bit dtype. */
static inline int kb_vec_dt_of(kbcuda_dtype dt) { return dt == KBCUDA_F16 ? KB_VEC_F16 : KB_VEC_BF16; }

/* Element size of the bf16 / f16 tensors, for the shared validation code. */
#define KB_HALF_SIZE ((int64_t)sizeof(uint16_t))

/* Most tensors one call widens (attention: q, k, v, out). */
#define KB_DT_MAX_TENSORS 4

/* One allocation holding the float32 copies of a call's tensors. */
struct kb_dt_scratch {
  float *t[KB_DT_MAX_TENSORS]; /* t[i] has counts[i] floats (NULL when 0) */
  void *block;
};

/*
 * Allocates counts[i] floats for each of the n tensors (n <= KB_DT_MAX_TENSORS)
 * in one block.  OUT_OF_MEMORY ("size of scratch overflows" or "cannot
 * allocate N bytes of scratch") when it cannot; then nothing is allocated.
 */
kb_status kb_dt_alloc(kb_context *ctx, const char *fn, int n, const int64_t *counts, struct kb_dt_scratch *s);
void kb_dt_free(struct kb_dt_scratch *s);

/* dst[i] = src[i] widened / narrowed for i < count, split over ctx's threads. */
void kb_dt_widen(const kb_context *ctx, kbcuda_dtype dt, const uint16_t *src, float *dst, int64_t count);
void kb_dt_narrow(const kb_context *ctx, kbcuda_dtype dt, const float *src, uint16_t *dst, int64_t count);

/* The same for a [rows, cols] matrix with row strides (in elements)
 * src_ld and dst_ld: only the cols elements of each row are touched, never
 * the padding between rows (which may be other data of the caller). */
void kb_dt_widen_rows(const kb_context *ctx, kbcuda_dtype dt, int64_t rows, int64_t cols, const uint16_t *src,
                      int64_t src_ld, float *dst, int64_t dst_ld);
void kb_dt_narrow_rows(const kb_context *ctx, kbcuda_dtype dt, int64_t rows, int64_t cols, const float *src,
                       int64_t src_ld, uint16_t *dst, int64_t dst_ld);

#endif /* KB_CPU_REDUCED_H */
