/* kv_cache.c - kb_kv_cache_append (+ _bf16, _f16, and _to_bf16 / _to_f16):
 * new keys and values into a preallocated cache at each sequence's position.
 *
 * The same-type variants are a copy, so they are exact and one code path
 * serves the three element types (only the element size differs).  The _to_
 * variants take float32 keys and values into a 16-bit cache (a float32 model
 * with a cache of half the bytes): each value is narrowed with the vector
 * layer's conversion, the bits of kb_f32_to_bf16 / kb_f32_to_f16 (round to
 * nearest even).  Every position is checked before the first row is
 * written: a bad position anywhere leaves both caches untouched. */
#include <string.h>

#include "../dispatch.h"
#include "../reduced.h"
#include "internal.h"

/* Rows (of kv_heads * head_dim elements) per thread below which a thread is
 * not worth starting: a decode step appends one row per sequence. */
#define KB_KV_MIN_BYTES 262144

struct kv_job {
  int64_t kv_heads, seq_new, capacity, head_dim;
  int64_t elem;       /* bytes per element of the new rows */
  int64_t cache_elem; /* bytes per element of the cache */
  /* Narrowing (float32 rows into a 16-bit cache): the vector layer's
   * conversion and storage code; NULL for a copy. */
  const struct kb_vec_ops *narrow;
  int narrow_dt;
  bool seq_major;
  const char *k_new, *v_new;
  const int32_t *positions;
  char *k_cache, *v_cache;
};

/* Stores count elements of src (new rows) at dst (cache): a copy, or narrowed. */
static void kv_put(const struct kv_job *g, char *dst, const char *src, int64_t count) {
  if (g->narrow != NULL)
    g->narrow->convert(g->narrow_dt, 1, count, (const float *)(const void *)src, (uint16_t *)(void *)dst);
  else
    memcpy(dst, src, (size_t)(count * g->elem));
}

/* Stores new tokens [begin, end) of the flattened (batch, seq_new) axis. */
static void kv_body(void *arg, int64_t begin, int64_t end) {
  const struct kv_job *g = (const struct kv_job *)arg;
  int64_t row = g->head_dim * g->elem, crow = g->head_dim * g->cache_elem; /* bytes of one head's vector */
  for (int64_t i = begin; i < end; i++) {
    int64_t b = i / g->seq_new, t = i % g->seq_new;
    int64_t p = (int64_t)g->positions[b] + t;
    const char *ks = g->k_new + i * g->kv_heads * row, *vs = g->v_new + i * g->kv_heads * row;
    if (g->seq_major) {
      /* [batch, capacity, kv_heads, head_dim]: the token's heads are contiguous
       * on both sides, one store. */
      int64_t dst = (b * g->capacity + p) * g->kv_heads * crow;
      kv_put(g, g->k_cache + dst, ks, g->kv_heads * g->head_dim);
      kv_put(g, g->v_cache + dst, vs, g->kv_heads * g->head_dim);
    } else {
      /* [batch, kv_heads, capacity, head_dim]: one store per head. */
      for (int64_t h = 0; h < g->kv_heads; h++) {
        int64_t dst = ((b * g->kv_heads + h) * g->capacity + p) * crow;
        kv_put(g, g->k_cache + dst, ks + h * row, g->head_dim);
        kv_put(g, g->v_cache + dst, vs + h * row, g->head_dim);
      }
    }
  }
}

/* elem: bytes per element of the new rows; narrow_to: KBCUDA_BF16 / KBCUDA_F16
 * for a float32 -> 16-bit store (then elem is 4 and the cache has 2-byte
 * elements), or -1 for a copy (the cache has elem-byte elements). */
static kb_status kv_append(kb_context *ctx, const char *fn, int64_t elem, int narrow_to, int64_t batch,
                           int64_t kv_heads, int64_t seq_new, int64_t capacity, int64_t head_dim, bool seq_major,
                           const void *k_new, const void *v_new, const int32_t *positions, void *k_cache,
                           void *v_cache) {
  KB_BEGIN(ctx, fn);
  KB_TRY(kb__check_dim(ctx, fn, "batch", batch));
  KB_TRY(kb__check_dim(ctx, fn, "kv_heads", kv_heads));
  KB_TRY(kb__check_dim(ctx, fn, "seq_new", seq_new));
  KB_TRY(kb__check_dim(ctx, fn, "capacity", capacity));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", head_dim));
  int64_t nd[4] = {batch, seq_new, kv_heads, head_dim}, cd[4] = {batch, kv_heads, capacity, head_dim};
  int64_t new_count, cache_count, pos_count, celem = narrow_to >= 0 ? KB_HALF_SIZE : elem;
  KB_TRY(kb__count(ctx, fn, "k_new", elem, 4, nd, &new_count));
  KB_TRY(kb__count(ctx, fn, "v_new", elem, 4, nd, &new_count));
  KB_TRY(kb__count(ctx, fn, "positions", (int64_t)sizeof(int32_t), 1, &batch, &pos_count));
  KB_TRY(kb__count(ctx, fn, "k_cache", celem, 4, cd, &cache_count));
  KB_TRY(kb__count(ctx, fn, "v_cache", celem, 4, cd, &cache_count));
  KB_TRY(kb__check_ptr(ctx, fn, "k_new", k_new, new_count));
  KB_TRY(kb__check_ptr(ctx, fn, "v_new", v_new, new_count));
  KB_TRY(kb__check_ptr(ctx, fn, "positions", positions, pos_count));
  KB_TRY(kb__check_ptr(ctx, fn, "k_cache", k_cache, cache_count));
  KB_TRY(kb__check_ptr(ctx, fn, "v_cache", v_cache, cache_count));
  int64_t nb = new_count * elem, cb = cache_count * celem, pb = pos_count * (int64_t)sizeof(int32_t);
  /* The caches are written: neither may overlap any input or each other. */
  KB_TRY(kb__check_overlap(ctx, fn, "k_cache", k_cache, cb, "k_new", k_new, nb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "k_cache", k_cache, cb, "v_new", v_new, nb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "k_cache", k_cache, cb, "positions", positions, pb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "v_cache", v_cache, cb, "k_new", k_new, nb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "v_cache", v_cache, cb, "v_new", v_new, nb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "v_cache", v_cache, cb, "positions", positions, pb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "v_cache", v_cache, cb, "k_cache", k_cache, cb, false));
  const struct kb_mem_ref refs[] = {{"k_new", k_new, nb},
                                    {"v_new", v_new, nb},
                                    {"positions", positions, pb},
                                    {"k_cache", k_cache, cb},
                                    {"v_cache", v_cache, cb}};
  KB_TRY(kb__check_memory(ctx, fn, 5, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  /* Positions are checked even when nothing is copied (seq_new or the row
   * width 0): a position outside the cache is a caller bug either way. */
  for (int64_t b = 0; b < batch; b++) {
    if (positions[b] < 0 || (int64_t)positions[b] + seq_new > capacity)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                      "positions[%lld] = %ld: %lld new tokens from there do not fit in capacity %lld", (long long)b,
                      (long)positions[b], (long long)seq_new, (long long)capacity);
  }
  if (new_count == 0) return KB_STATUS_OK;
  struct kv_job job = {kv_heads,
                       seq_new,
                       capacity,
                       head_dim,
                       elem,
                       celem,
                       narrow_to >= 0 ? &kb__cpu_ops()->vec : NULL,
                       narrow_to >= 0 ? kb_vec_dt_of((kbcuda_dtype)narrow_to) : 0,
                       seq_major,
                       (const char *)k_new,
                       (const char *)v_new,
                       positions,
                       (char *)k_cache,
                       (char *)v_cache};
  int64_t token_bytes = 2 * kv_heads * head_dim * elem; /* of the new rows */
  kb__parallel_for(ctx, batch * seq_new, KB_KV_MIN_BYTES / token_bytes + 1, kv_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_kv_cache_append(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new, int64_t capacity,
                             int64_t head_dim, bool seq_major, const float *k_new, const float *v_new,
                             const int32_t *positions, float *k_cache, float *v_cache) {
  return kv_append(ctx, "kb_kv_cache_append", (int64_t)sizeof(float), -1, batch, kv_heads, seq_new, capacity, head_dim,
                   seq_major, k_new, v_new, positions, k_cache, v_cache);
}

kb_status kb_kv_cache_append_bf16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                  int64_t capacity, int64_t head_dim, bool seq_major, const uint16_t *k_new,
                                  const uint16_t *v_new, const int32_t *positions, uint16_t *k_cache,
                                  uint16_t *v_cache) {
  return kv_append(ctx, "kb_kv_cache_append_bf16", 2, -1, batch, kv_heads, seq_new, capacity, head_dim, seq_major,
                   k_new, v_new, positions, k_cache, v_cache);
}

kb_status kb_kv_cache_append_f16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new, int64_t capacity,
                                 int64_t head_dim, bool seq_major, const uint16_t *k_new, const uint16_t *v_new,
                                 const int32_t *positions, uint16_t *k_cache, uint16_t *v_cache) {
  return kv_append(ctx, "kb_kv_cache_append_f16", 2, -1, batch, kv_heads, seq_new, capacity, head_dim, seq_major,
                   k_new, v_new, positions, k_cache, v_cache);
}

kb_status kb_kv_cache_append_to_bf16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                     int64_t capacity, int64_t head_dim, bool seq_major, const float *k_new,
                                     const float *v_new, const int32_t *positions, uint16_t *k_cache,
                                     uint16_t *v_cache) {
  return kv_append(ctx, "kb_kv_cache_append_to_bf16", (int64_t)sizeof(float), KBCUDA_BF16, batch, kv_heads, seq_new,
                   capacity, head_dim, seq_major, k_new, v_new, positions, k_cache, v_cache);
}

kb_status kb_kv_cache_append_to_f16(kb_context *ctx, int64_t batch, int64_t kv_heads, int64_t seq_new,
                                    int64_t capacity, int64_t head_dim, bool seq_major, const float *k_new,
                                    const float *v_new, const int32_t *positions, uint16_t *k_cache,
                                    uint16_t *v_cache) {
  return kv_append(ctx, "kb_kv_cache_append_to_f16", (int64_t)sizeof(float), KBCUDA_F16, batch, kv_heads, seq_new,
                   capacity, head_dim, seq_major, k_new, v_new, positions, k_cache, v_cache);
}
