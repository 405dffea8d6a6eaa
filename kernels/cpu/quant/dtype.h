/* dtype.h - the storage formats of kb_dtype (kernelbridge.h): names, byte
 * sizes, validation and widening of rows.  Internal to kernels/cpu. */
#ifndef KB_CPU_DTYPE_H
#define KB_CPU_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* "F32", "F16", "BF16", "Q8_0", "Q4_0", or NULL for a value kb_dtype does
 * not define. */
const char *kb__dtype_name(int type);

/* Whether type stores blocks of 32 elements (Q8_0, Q4_0). */
bool kb__dtype_blocked(int type);

/*
 * Checks that type is a kb_dtype and that a [rows, cols] tensor of it is
 * possible (cols a multiple of 32 for a block format), and gives its byte
 * count and the bytes of one row.  Failures record "fn: ..." in ctx with
 * INVALID_ARGUMENT (type_name for the type, cols_name for cols) or
 * OUT_OF_MEMORY (the size of `what` overflows).  rows and cols are >= 0.
 */
kb_status kb__dtype_size(kb_context *ctx, const char *fn, const char *type_name, int type, const char *what,
                         int64_t rows, int64_t cols, const char *cols_name, int64_t *bytes, int64_t *row_bytes);

/* Fails with INVALID_ARGUMENT unless bytes_arg (named bytes_name) equals
 * the expected byte count of `what`, a [rows, cols] tensor of type. */
kb_status kb__dtype_check_bytes(kb_context *ctx, const char *fn, const char *bytes_name, int64_t bytes_arg,
                                int64_t expected, const char *what, int type, int64_t rows, int64_t cols);

/* Fails with INVALID_ARGUMENT unless p (the tensor `name` of type) is
 * aligned as an array of its elements: 4 bytes for F32, 2 for F16 and
 * BF16; block formats (34- and 18-byte blocks) may start anywhere.  NULL
 * passes (kb__check_ptr decides about it). */
kb_status kb__dtype_check_align(kb_context *ctx, const char *fn, const char *name, const void *p, int type, bool empty);

/* dst[0 .. cols) = the row at src (cols elements of type) as float32,
 * exactly. */
void kb__dtype_widen_row(int type, const void *src, int64_t cols, float *dst);

#endif /* KB_CPU_DTYPE_H */
