/* gemm_small_prefetch.h - the software prefetch of the next block of rows
 * in the products that read rows of B in blocks (small_dot in
 * gemm_small_avx2.c / gemm_small_avx512.c, gemv_dot in gemm_avx2.c /
 * gemm_avx512.c).
 *
 * Short rows of B (k <= KB_SMALL_PREFETCH floats: attention's keys, 128 of
 * one head) make the 8-32 rows of a block as many streams of a few cache
 * lines each, which the hardware prefetchers of AMD EPYCs (Zen 3 and Zen 4)
 * did not fetch ahead: decode attention from memory ran markedly faster with
 * the next block's rows fetched while this block is computed (docs/
 * performance.md, "Decode attention on an AVX2 EPYC" and "on an AVX-512
 * EPYC").  A prefetch only moves data, so the results are the same bits. */
#ifndef KB_CPU_GEMM_SMALL_PREFETCH_H
#define KB_CPU_GEMM_SMALL_PREFETCH_H

#include <stdint.h>

#include "simd.h"

#if KB_HAVE_X86_SIMD

/* Floats (of B's rows) ahead of the current step that small_dot prefetches
 * along long rows; rows of at most this many floats take
 * kb_small_prefetch_next_rows instead. */
#define KB_SMALL_PREFETCH 256

/* Rows [0, count) from `next` on (the block after the current one), spread
 * over the `steps` steps of p of the current block: step s fetches rows
 * [s * per, (s + 1) * per), every cache line of their row_bytes.  Attention
 * calls small_dot per block of 128 keys and the keys go on after it, so
 * rows past B's end are fetched too: the address is computed as an integer
 * (a prefetch reads nothing and never faults).  Into L2, as every stream's
 * prefetch (simd.h, KB_PREFETCH_STREAM). */
__attribute__((always_inline)) static inline void kb_small_prefetch_next_rows(const char *next, int64_t ld_bytes,
                                                                             int64_t row_bytes, int64_t count,
                                                                             int64_t step, int64_t steps) {
  int64_t per = (count + steps - 1) / steps;
  for (int64_t l = step * per; l < (step + 1) * per && l < count; l++)
    for (int64_t off = 0; off < row_bytes; off += 64)
      KB_PREFETCH_STREAM((uintptr_t)next + (uintptr_t)(l * ld_bytes + off));
}

/* Long rows: each step of a block fetches its own rows some distance
 * ahead, and in the block's last stretch, where that distance runs past
 * the rows' ends, the same line of each of the next block's `count` rows
 * from `next` (off_bytes into them) instead.  Without it every block's
 * rows started cold: on an AVX-512 Zen 4 the decode of a bfloat16 model
 * ran 1.3-1.55x faster with it, a float32 one 1.0-1.1x on one thread
 * (docs/performance.md, "Prefetching into L2").  count is 0 for a
 * matrix's last block (the bytes after it are someone else's data, which
 * it would only pollute the cache with). */
__attribute__((always_inline)) static inline void kb_small_prefetch_next_starts(const char *next, int64_t ld_bytes,
                                                                               int64_t count, int64_t off_bytes) {
  for (int64_t l = 0; l < count; l++)
    KB_PREFETCH_STREAM((uintptr_t)next + (uintptr_t)(l * ld_bytes + off_bytes));
}

/* Rows of the block after rows [j0, j0 + count) of n: 0 to count. */
static inline int64_t kb_small_next_rows(int64_t n, int64_t j0, int64_t count) {
  int64_t left = n - j0 - count;
  return left <= 0 ? 0 : left < count ? left : count;
}

#endif /* KB_HAVE_X86_SIMD */

#endif /* KB_CPU_GEMM_SMALL_PREFETCH_H */
