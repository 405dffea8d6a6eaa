/* gemm_small_prefetch.h - the software prefetch of small_dot's next block of
 * rows when B's rows are short (gemm_small_avx2.c, gemm_small_avx512.c).
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

#endif /* KB_HAVE_X86_SIMD */

#endif /* KB_CPU_GEMM_SMALL_PREFETCH_H */
