/* embedding.c - out[i, :] = table[ids[i], :] (kb_embedding, and
 * kb_embedding_bf16 / _f16 on 16-bit tables).
 *
 * All ids are checked against [0, vocab) before the first row is copied, so a
 * bad id anywhere leaves out untouched.  The copy is exact (memcpy), so the
 * three element types share one body: only the element size differs. */
#include <string.h>

#include "internal.h"

/* Bytes per thread below which a thread is not worth starting (65536
 * floats, as before the 16-bit variants shared this code). */
#define KB_EMB_MIN_BYTES 262144

struct emb_job {
  int64_t row_bytes;
  const int32_t *ids;
  const char *table;
  char *out;
};

static void emb_body(void *arg, int64_t begin, int64_t end) {
  const struct emb_job *job = (const struct emb_job *)arg;
  for (int64_t i = begin; i < end; i++)
    memcpy(job->out + i * job->row_bytes, job->table + (int64_t)job->ids[i] * job->row_bytes, (size_t)job->row_bytes);
}

/* The message of an id outside [0, vocab), shared by the CPU and CUDA paths. */
static kb_status bad_id(kb_context *ctx, const char *fn, int64_t i, int32_t id, int64_t vocab) {
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "ids[%lld] = %ld is out of range [0, %lld)", (long long)i,
                  (long)id, (long long)vocab);
}

/* elem: 4 (float32) or 2 (bfloat16 / float16 bits). */
static kb_status embed(kb_context *ctx, const char *fn, int64_t elem, int64_t n_ids, int64_t vocab, int64_t dim,
                       const int32_t *ids, const void *table, void *out) {
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "n_ids", n_ids));
  KB_TRY(kb__check_dim(ctx, fn, "vocab", vocab));
  KB_TRY(kb__check_dim(ctx, fn, "dim", dim));
  int64_t tdims[2] = {vocab, dim}, odims[2] = {n_ids, dim}, ids_count, table_count, out_count;
  KB_TRY(kb__count(ctx, fn, "ids", (int64_t)sizeof(int32_t), 1, &n_ids, &ids_count));
  KB_TRY(kb__count(ctx, fn, "table", elem, 2, tdims, &table_count));
  KB_TRY(kb__count(ctx, fn, "out", elem, 2, odims, &out_count));
  KB_TRY(kb__check_ptr(ctx, fn, "ids", ids, ids_count));
  KB_TRY(kb__check_ptr(ctx, fn, "table", table, table_count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, out_count));
  int64_t ob = out_count * elem, tb = table_count * elem;
  int64_t ib = ids_count * (int64_t)sizeof(int32_t);
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "table", table, tb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, ob, "ids", ids, ib, false));
  const struct kb_mem_ref refs[] = {{"ids", ids, ib}, {"table", table, tb}, {"out", out, ob}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  /* Ids are validated even when dim == 0 (nothing to copy): an id outside
   * the vocabulary is a caller bug whatever the row width.  On CUDA the
   * device scans them (the host cannot read device memory) and reports the
   * first offender, so the message is the CPU's. */
  if (kb__on_cuda(ctx)) {
    if (elem != (int64_t)sizeof(float))
      return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
    if (n_ids > 0) {
      int64_t bad;
      int32_t value;
      kbcuda_status st = ctx->cuda->validate_index(ctx->cuda_ctx, fn, n_ids, ids, 0, vocab, 0, 0, &bad, &value);
      if (st != KBCUDA_STATUS_OK) return kb__cuda_finish(ctx, fn, st);
      if (bad >= 0) return bad_id(ctx, fn, bad, value, vocab);
    }
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->embedding(ctx->cuda_ctx, fn, n_ids, vocab, dim, ids, (const float *)table,
                                                (float *)out));
  }
  for (int64_t i = 0; i < n_ids; i++) {
    if (ids[i] < 0 || (int64_t)ids[i] >= vocab) return bad_id(ctx, fn, i, ids[i], vocab);
  }
  if (out_count == 0) return KB_STATUS_OK;
  struct emb_job job = {dim * elem, ids, (const char *)table, (char *)out};
  kb__parallel_for(ctx, n_ids, KB_EMB_MIN_BYTES / (dim * elem) + 1, emb_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_embedding(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                       const float *table, float *out) {
  return embed(ctx, "kb_embedding", (int64_t)sizeof(float), n_ids, vocab, dim, ids, table, out);
}

kb_status kb_embedding_bf16(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                            const uint16_t *table, uint16_t *out) {
  return embed(ctx, "kb_embedding_bf16", 2, n_ids, vocab, dim, ids, table, out);
}

kb_status kb_embedding_f16(kb_context *ctx, int64_t n_ids, int64_t vocab, int64_t dim, const int32_t *ids,
                           const uint16_t *table, uint16_t *out) {
  return embed(ctx, "kb_embedding_f16", 2, n_ids, vocab, dim, ids, table, out);
}
