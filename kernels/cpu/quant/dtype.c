/* dtype.c - the storage formats of kb_dtype (dtype.h), and the public entry
 * points that only convert: kb_dtype_bytes, kb_quantize, kb_dequantize and
 * kb_embedding_w. */
#include "dtype.h"

#include <string.h>

#include "../half.h"
#include "quant.h"

const char *kb__dtype_name(int type) {
  switch (type) {
    case KB_DTYPE_F32:
      return "F32";
    case KB_DTYPE_F16:
      return "F16";
    case KB_DTYPE_BF16:
      return "BF16";
    case KB_DTYPE_Q8_0:
      return "Q8_0";
    case KB_DTYPE_Q4_0:
      return "Q4_0";
    default:
      return NULL;
  }
}

bool kb__dtype_blocked(int type) { return type == KB_DTYPE_Q8_0 || type == KB_DTYPE_Q4_0; }

/* Bytes of one stored unit of a kb_dtype: an element, or for a block
 * format a block of KB_QK elements. */
static int64_t unit_bytes(int type) {
  switch (type) {
    case KB_DTYPE_F32:
      return 4;
    case KB_DTYPE_Q8_0:
      return KB_Q8_0_BLOCK_BYTES;
    case KB_DTYPE_Q4_0:
      return KB_Q4_0_BLOCK_BYTES;
    default:
      return 2; /* F16, BF16 */
  }
}

kb_status kb__dtype_size(kb_context *ctx, const char *fn, const char *type_name, int type, const char *what,
                         int64_t rows, int64_t cols, const char *cols_name, int64_t *bytes, int64_t *row_bytes) {
  const char *name = kb__dtype_name(type);
  if (name == NULL)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "%s must be a kb_dtype (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16), got %d", type_name, type);
  if (kb__dtype_blocked(type) && cols % KB_QK != 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must be a multiple of 32 for %s %s (blocks of 32), got %lld",
                    cols_name, name, what, (long long)cols);
  int64_t unit = unit_bytes(type), per = kb__dtype_blocked(type) ? cols / KB_QK : cols;
  int64_t dims[2] = {rows, per};
  KB_TRY(kb__count(ctx, fn, what, unit, 2, dims, bytes));
  *bytes *= unit; /* kb__count checked the byte count too */
  /* With rows > 0 kb__count's check of rows * per * unit covers per * unit;
     with no rows it checked nothing, and a row is never read. */
  *row_bytes = rows > 0 ? per * unit : 0;
  return KB_STATUS_OK;
}

kb_status kb__dtype_check_bytes(kb_context *ctx, const char *fn, const char *bytes_name, int64_t bytes_arg,
                                int64_t expected, const char *what, int type, int64_t rows, int64_t cols) {
  if (bytes_arg != expected)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be %lld (%s [%lld, %lld] as %s), got %lld", bytes_name,
                    (long long)expected, what, (long long)rows, (long long)cols, kb__dtype_name(type),
                    (long long)bytes_arg);
  return KB_STATUS_OK;
}

kb_status kb__dtype_check_align(kb_context *ctx, const char *fn, const char *name, const void *p, int type, bool empty) {
  /* A float format is an array of its elements; a block may start at any byte. */
  int64_t align = kb__dtype_blocked(type) ? 1 : unit_bytes(type);
  /* An empty tensor is never read: any pointer (Rust's dangling 0x1) passes. */
  if (p != NULL && (uintptr_t)p % (uintptr_t)align != 0 && !empty)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "%s must be aligned to %lld bytes for %s elements (as an array of them is), got address %p", name,
                    (long long)align, kb__dtype_name(type), p);
  return KB_STATUS_OK;
}

void kb__dtype_widen_row(int type, const void *src, int64_t cols, float *dst) {
  switch (type) {
    case KB_DTYPE_F32:
      memcpy(dst, src, (size_t)cols * sizeof(float));
      break;
    case KB_DTYPE_F16:
    case KB_DTYPE_BF16:
      kb_half_widen(type == KB_DTYPE_F16, (const uint16_t *)src, dst, cols);
      break;
    case KB_DTYPE_Q8_0:
      kb__dequantize_row_q8_0(src, dst, cols);
      break;
    default:
      kb__dequantize_row_q4_0(src, dst, cols);
      break;
  }
}

/* ---- kb_dtype_bytes ---- */

kb_status kb_dtype_bytes(kb_dtype type, int64_t rows, int64_t cols, int64_t *bytes) {
  static const char fn[] = "kb_dtype_bytes";
  kb__begin_thread();
  if (bytes == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "bytes must not be NULL");
  if (rows < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "rows must be >= 0, got %lld", (long long)rows);
  if (cols < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "cols must be >= 0, got %lld", (long long)cols);
  /* The context-free form of kb__dtype_size: its message goes to the thread. */
  const char *name = kb__dtype_name((int)type);
  if (name == NULL)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn,
                           "type must be a kb_dtype (0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 30 BF16), got %d", (int)type);
  if (kb__dtype_blocked((int)type) && cols % KB_QK != 0)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn, "cols must be a multiple of 32 for %s (blocks of 32), got %lld",
                           name, (long long)cols);
  int64_t unit = unit_bytes((int)type);
  int64_t per = kb__dtype_blocked((int)type) ? cols / KB_QK : cols;
  if (rows != 0 && per != 0 && (rows > INT64_MAX / per || rows * per > INT64_MAX / unit))
    return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, fn,
                           "rows * cols overflows: a [%lld, %lld] %s tensor takes more than INT64_MAX bytes",
                           (long long)rows, (long long)cols, name);
  *bytes = rows * per * unit;
  return KB_STATUS_OK;
}

/* ---- kb_quantize / kb_dequantize ---- */

struct convert_job {
  int type;
  int64_t cols, row_bytes;
  const float *x; /* quantize: source rows */
  const unsigned char *src; /* dequantize: source bytes */
  unsigned char *y;
  float *out;
  bool to_type;
};

static void convert_body(void *arg, int64_t begin, int64_t end) {
  const struct convert_job *j = (const struct convert_job *)arg;
  for (int64_t r = begin; r < end; r++) {
    if (!j->to_type) {
      kb__dtype_widen_row(j->type, j->src + r * j->row_bytes, j->cols, j->out + r * j->cols);
      continue;
    }
    const float *x = j->x + r * j->cols;
    unsigned char *y = j->y + r * j->row_bytes;
    switch (j->type) {
      case KB_DTYPE_F32:
        memcpy(y, x, (size_t)j->cols * sizeof(float));
        break;
      case KB_DTYPE_F16:
      case KB_DTYPE_BF16:
        kb_half_narrow(j->type == KB_DTYPE_F16, x, (uint16_t *)y, j->cols);
        break;
      case KB_DTYPE_Q8_0:
        kb__quantize_row_q8_0(x, y, j->cols);
        break;
      default:
        kb__quantize_row_q4_0(x, y, j->cols);
        break;
    }
  }
}

/* Rows per task: about 64 KiB of input each. */
static int64_t rows_per_task(int64_t row_bytes) { return row_bytes >= 65536 ? 1 : 65536 / (row_bytes > 0 ? row_bytes : 1); }

kb_status kb_quantize(kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols, const float *x, void *y,
                      int64_t y_bytes) {
  static const char fn[] = "kb_quantize";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_dim(ctx, fn, "y_bytes", y_bytes));
  int64_t bytes, row_bytes, xn, xd[2] = {rows, cols};
  KB_TRY(kb__dtype_size(ctx, fn, "type", (int)type, "y", rows, cols, "cols", &bytes, &row_bytes));
  KB_TRY(kb__count(ctx, fn, "x", (int64_t)sizeof(float), 2, xd, &xn));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "y_bytes", y_bytes, bytes, "y", (int)type, rows, cols));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, bytes));
  KB_TRY(kb__dtype_check_align(ctx, fn, "y", y, (int)type, bytes == 0));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, bytes, "x", x, xn * (int64_t)sizeof(float), false));
  const struct kb_mem_ref refs[] = {{"x", x, xn * (int64_t)sizeof(float)}, {"y", y, bytes}};
  KB_TRY(kb__check_memory(ctx, fn, 2, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (kb__dtype_blocked((int)type) && cols > 0) {
    /* Every row is checked before any byte of y is written (rows of no
       element hold nothing to check). */
    for (int64_t r = 0; r < rows; r++) {
      int64_t bad = kb__quant_check_row((int)type, x + r * cols, cols);
      if (bad < 0) continue;
      float v = x[r * cols + bad];
      if (v != v || v - v != 0.0f)
        return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "x[%lld, %lld] is %g: %s cannot hold it", (long long)r,
                        (long long)bad, (double)v, kb__dtype_name((int)type));
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                      "x[%lld, %lld] = %g is too large for %s: its block's scale overflows binary16", (long long)r,
                      (long long)bad, (double)v, kb__dtype_name((int)type));
    }
  }
  if (bytes == 0) return KB_STATUS_OK;
  struct convert_job j = {(int)type, cols, row_bytes, x, NULL, (unsigned char *)y, NULL, true};
  kb__parallel_for(ctx, rows, rows_per_task(cols * 4), convert_body, &j);
  return KB_STATUS_OK;
}

kb_status kb_dequantize(kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols, const void *x, int64_t x_bytes,
                        float *y) {
  static const char fn[] = "kb_dequantize";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_dim(ctx, fn, "x_bytes", x_bytes));
  int64_t bytes, row_bytes, yn, yd[2] = {rows, cols};
  KB_TRY(kb__dtype_size(ctx, fn, "type", (int)type, "x", rows, cols, "cols", &bytes, &row_bytes));
  KB_TRY(kb__count(ctx, fn, "y", (int64_t)sizeof(float), 2, yd, &yn));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "x_bytes", x_bytes, bytes, "x", (int)type, rows, cols));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, bytes));
  KB_TRY(kb__dtype_check_align(ctx, fn, "x", x, (int)type, bytes == 0));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * (int64_t)sizeof(float), "x", x, bytes, false));
  const struct kb_mem_ref refs[] = {{"x", x, bytes}, {"y", y, yn * (int64_t)sizeof(float)}};
  KB_TRY(kb__check_memory(ctx, fn, 2, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  struct convert_job j = {(int)type, cols, row_bytes, NULL, (const unsigned char *)x, NULL, y, false};
  kb__parallel_for(ctx, rows, rows_per_task(row_bytes), convert_body, &j);
  return KB_STATUS_OK;
}

/* ---- kb_embedding_w ---- */

struct embed_job {
  int type;
  int64_t dim, row_bytes;
  const int32_t *ids;
  const unsigned char *table;
  float *out;
};

static void embed_body(void *arg, int64_t begin, int64_t end) {
  const struct embed_job *j = (const struct embed_job *)arg;
  for (int64_t i = begin; i < end; i++)
    kb__dtype_widen_row(j->type, j->table + (int64_t)j->ids[i] * j->row_bytes, j->dim, j->out + i * j->dim);
}

kb_status kb_embedding_w(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                         kb_dtype table_type, const void *table, int64_t table_bytes, float *out) {
  static const char fn[] = "kb_embedding_w";
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "n_ids", n_ids));
  KB_TRY(kb__check_dim(ctx, fn, "vocab", vocab));
  KB_TRY(kb__check_dim(ctx, fn, "dim", dim));
  KB_TRY(kb__check_dim(ctx, fn, "table_bytes", table_bytes));
  int64_t bytes, row_bytes, on, od[2] = {n_ids, dim}, idn, idd[1] = {n_ids};
  KB_TRY(kb__dtype_size(ctx, fn, "table_type", (int)table_type, "table", vocab, dim, "dim", &bytes, &row_bytes));
  KB_TRY(kb__count(ctx, fn, "ids", (int64_t)sizeof(int32_t), 1, idd, &idn));
  KB_TRY(kb__count(ctx, fn, "out", (int64_t)sizeof(float), 2, od, &on));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "table_bytes", table_bytes, bytes, "table", (int)table_type, vocab, dim));
  KB_TRY(kb__check_ptr(ctx, fn, "ids", ids, idn));
  KB_TRY(kb__check_ptr(ctx, fn, "table", table, bytes));
  KB_TRY(kb__dtype_check_align(ctx, fn, "table", table, (int)table_type, bytes == 0));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, on));
  int64_t ob = on * (int64_t)sizeof(float);
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "ids", ids, idn * (int64_t)sizeof(int32_t), false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "table", table, bytes, false));
  const struct kb_mem_ref refs[] = {{"ids", ids, idn * (int64_t)sizeof(int32_t)}, {"table", table, bytes}, {"out", out, ob}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  for (int64_t i = 0; i < n_ids; i++)
    if (ids[i] < 0 || ids[i] >= vocab)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "ids[%lld] = %d is out of range [0, %lld)", (long long)i,
                      (int)ids[i], (long long)vocab);
  if (on == 0) return KB_STATUS_OK;
  struct embed_job j = {(int)table_type, dim, row_bytes, ids, (const unsigned char *)table, out};
  kb__parallel_for(ctx, n_ids, rows_per_task(dim * 4), embed_body, &j);
  return KB_STATUS_OK;
}
