/* reduced.c - scratch and threaded conversions of the reduced-precision CPU
 * entry points that still widen whole tensors (gemm, attention; see
 * reduced.h).  The conversions are the vector layer's (vec_kernels.h,
 * bit for bit half.h's). */
#include "reduced.h"

#include <stdlib.h>

#include "dispatch.h"

/* Elements per thread below which a thread is not worth starting: a
 * conversion moves 6 bytes per element at memory speed. */
#define KB_DT_MIN_CHUNK 65536

kb_status kb_dt_alloc(kb_context *ctx, const char *fn, int n, const int64_t *counts, struct kb_dt_scratch *s) {
  /* Each count fits in int64 as 2-byte elements (validated), but the float
   * total of several tensors may not: check the sum in bytes. */
  uint64_t limit = (uint64_t)INT64_MAX;
  if ((uint64_t)SIZE_MAX < limit) limit = (uint64_t)SIZE_MAX;
  limit /= sizeof(float);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    if ((uint64_t)counts[i] > limit - total)
      return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of scratch overflows");
    total += (uint64_t)counts[i];
  }
  s->block = NULL;
  for (int i = 0; i < KB_DT_MAX_TENSORS; i++) s->t[i] = NULL;
  if (total == 0) return KB_STATUS_OK;
  float *block = (float *)malloc((size_t)total * sizeof(float));
  if (block == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %llu bytes of scratch",
                    (unsigned long long)(total * sizeof(float)));
  s->block = block;
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    if (counts[i] > 0) s->t[i] = block + at;
    at += (uint64_t)counts[i];
  }
  return KB_STATUS_OK;
}

void kb_dt_free(struct kb_dt_scratch *s) {
  free(s->block);
  s->block = NULL;
}

/* One conversion job: `rows` rows of `cols` elements with the given strides;
 * a flat array is one row (split by elements), a matrix is split by rows. */
struct conv_job {
  const struct kb_vec_ops *ops;
  int dt;
  int64_t cols, src_ld, dst_ld;
  const void *src;
  void *dst;
  bool narrow;
};

static void conv_flat_body(void *arg, int64_t begin, int64_t end) {
  const struct conv_job *j = (const struct conv_job *)arg;
  if (j->narrow)
    j->ops->convert(j->dt, 1, end - begin, (const float *)j->src + begin, (uint16_t *)j->dst + begin);
  else
    j->ops->convert(j->dt, 0, end - begin, (const uint16_t *)j->src + begin, (float *)j->dst + begin);
}

static void conv_rows_body(void *arg, int64_t begin, int64_t end) {
  const struct conv_job *j = (const struct conv_job *)arg;
  for (int64_t r = begin; r < end; r++) {
    if (j->narrow)
      j->ops->convert(j->dt, 1, j->cols, (const float *)j->src + r * j->src_ld, (uint16_t *)j->dst + r * j->dst_ld);
    else
      j->ops->convert(j->dt, 0, j->cols, (const uint16_t *)j->src + r * j->src_ld, (float *)j->dst + r * j->dst_ld);
  }
}

static void convert(const kb_context *ctx, kbcuda_dtype dt, bool narrow, int64_t rows, int64_t cols,
                    const void *src, int64_t src_ld, void *dst, int64_t dst_ld) {
  if (rows == 0 || cols == 0) return;
  struct conv_job j = {&kb__cpu_ops()->vec, kb_vec_dt_of(dt), cols, src_ld, dst_ld, src, dst, narrow};
  if (rows == 1)
    kb__parallel_for(ctx, cols, KB_DT_MIN_CHUNK, conv_flat_body, &j);
  else
    kb__parallel_for(ctx, rows, KB_DT_MIN_CHUNK / cols + 1, conv_rows_body, &j);
}

void kb_dt_widen(const kb_context *ctx, kbcuda_dtype dt, const uint16_t *src, float *dst, int64_t count) {
  convert(ctx, dt, false, 1, count, src, count, dst, count);
}

void kb_dt_narrow(const kb_context *ctx, kbcuda_dtype dt, const float *src, uint16_t *dst, int64_t count) {
  convert(ctx, dt, true, 1, count, src, count, dst, count);
}

void kb_dt_widen_rows(const kb_context *ctx, kbcuda_dtype dt, int64_t rows, int64_t cols, const uint16_t *src,
                      int64_t src_ld, float *dst, int64_t dst_ld) {
  convert(ctx, dt, false, rows, cols, src, src_ld, dst, dst_ld);
}

void kb_dt_narrow_rows(const kb_context *ctx, kbcuda_dtype dt, int64_t rows, int64_t cols, const float *src,
                       int64_t src_ld, uint16_t *dst, int64_t dst_ld) {
  convert(ctx, dt, true, rows, cols, src, src_ld, dst, dst_ld);
}
