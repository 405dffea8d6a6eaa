/* checks.c - argument checks shared by the kernels: inner sizes, row
 * strides, activations, strided extents and overlap between tensors. */
#include <stdint.h>

#include "internal.h"

kb_status kb__check_inner(kb_context *ctx, const char *fn, const char *name, int64_t inner, const char *outer_name,
                          int64_t outer) {
  if (outer > 0 && inner <= 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be > 0 when %s > 0, got %lld", name, outer_name,
                    (long long)inner);
  return KB_STATUS_OK;
}

kb_status kb__check_ld(kb_context *ctx, const char *fn, const char *name, int64_t ld, int64_t row_len) {
  int64_t need = row_len > 1 ? row_len : 1;
  if (ld < need)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be >= %lld (the stored row length, at least 1), got %lld",
                    name, (long long)need, (long long)ld);
  return KB_STATUS_OK;
}

kb_status kb__check_activation(kb_context *ctx, const char *fn, kb_activation act) {
  if ((int)act < (int)KB_ACTIVATION_NONE || (int)act > (int)KB_ACTIVATION_SILU)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "act must be a kb_activation (0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 silu), got %d", (int)act);
  return KB_STATUS_OK;
}

kb_status kb__count_strided(kb_context *ctx, const char *fn, const char *what, int64_t elem_size, int64_t rows,
                            int64_t cols, int64_t ld, int64_t *count) {
  *count = 0; /* defined on every path, failure included */
  if (rows == 0 || cols == 0) {
    *count = 0;
    return KB_STATUS_OK;
  }
  /* (rows - 1) * ld + cols <= rows * ld because ld >= cols, so checking the
   * full rows * ld product (and its byte size) covers the exact extent. */
  int64_t dims[2] = {rows, ld};
  int64_t full;
  KB_TRY(kb__count(ctx, fn, what, elem_size, 2, dims, &full));
  *count = (rows - 1) * ld + cols;
  return KB_STATUS_OK;
}

kb_status kb__check_overlap(kb_context *ctx, const char *fn, const char *out_name, const void *out, int64_t out_bytes,
                            const char *other_name, const void *other, int64_t other_bytes, bool may_alias) {
  if (out == NULL || other == NULL || out_bytes <= 0 || other_bytes <= 0) return KB_STATUS_OK;
  uintptr_t a0 = (uintptr_t)out, b0 = (uintptr_t)other;
  uintptr_t a1 = a0 + (uintptr_t)out_bytes, b1 = b0 + (uintptr_t)other_bytes;
  if (a0 >= b1 || b0 >= a1) return KB_STATUS_OK;
  if (may_alias) {
    if (a0 == b0 && out_bytes == other_bytes) return KB_STATUS_OK;
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "%s partially overlaps %s (only the exact same buffer is allowed)", out_name, other_name);
  }
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must not overlap %s", out_name, other_name);
}
