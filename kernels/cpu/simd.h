/* simd.h - what the instruction-set-specific kernel files (*_avx2.c,
 * *_avx512.c) need: whether this compiler can build them, and the
 * function-level target attributes that enable each level.
 *
 * No file of the library is compiled with -mavx2 or -mavx512f: the vector
 * code lives in functions carrying these attributes, so every build of the
 * same sources (Bazel, cgo, cargo's cc, setuptools) contains every level,
 * and dispatch.c picks one at run time (kb__isa()).  A function with an
 * attribute may only be called after the dispatch chose its level.
 * Internal to kernels/cpu. */
#ifndef KB_CPU_SIMD_H
#define KB_CPU_SIMD_H

/* x86 with a compiler that has target attributes and <immintrin.h>. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define KB_HAVE_X86_SIMD 1
#else
#define KB_HAVE_X86_SIMD 0
#endif

#if KB_HAVE_X86_SIMD
#include <immintrin.h>
#include <stdint.h>
/* The avx2 level: AVX2, FMA and F16C (every AVX2 CPU has the other two). */
#define KB_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
/* The avx512 level: AVX-512F on top of the avx2 level. */
#define KB_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
/* The avx512 level's vector kernels on a CPU that also has AVX-512 BF16 (and
 * the BW and DQ it implies here): the same code, with float -> bfloat16
 * narrowing by vcvtneps2bf16 (vec_lanes_avx512.h, kv_to_bf16).  Compilers
 * older than gcc 10 / clang 9 do not know the feature: no such variant. */
#if defined(__clang__) ? __clang_major__ >= 9 : __GNUC__ >= 10
#define KB_HAVE_AVX512_BF16 1
#define KB_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512bf16,avx2,fma,f16c")))
#else
#define KB_HAVE_AVX512_BF16 0
#endif

/* The software prefetch of what a kernel streams through once: weights of
 * the small-m and quantized products, K and V of decode attention, the
 * inputs of the row kernels.  Into L2 (T1), not L1 (T0): on an AVX-512
 * Zen 4 the same prefetches into L1 left those streams well short of the
 * memory's speed (with T1 the decode of a float32 model ran up to 1.25x
 * faster, of a bfloat16 one 1.45-1.6x, decode attention from memory
 * 1.2-1.9x; docs/performance.md, "Prefetching into L2"), and the demand
 * load that follows finds the line in L2, a latency the out-of-order core
 * hides.  Only data moves: the results are the same bits either way. */
#define KB_PREFETCH_STREAM(p) _mm_prefetch((const char *)(p), _MM_HINT_T1)

/* Lanes [0, count) of an 8-lane vector as the all-ones masks of the AVX2
 * masked loads and stores (_mm256_maskload_ps / _mm256_maskstore_ps), which
 * neither read nor write the other lanes; count is clamped to [0, 8]. */
KB_TARGET_AVX2 static inline __m256i kb_first8_lanes(int64_t count) {
  int c = count >= 8 ? 8 : count <= 0 ? 0 : (int)count;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Lanes [0, count) of a 16-lane vector as an AVX-512 mask (the masked
 * loads and stores neither read nor write the other lanes); count is
 * clamped to [0, 16]. */
static inline __mmask16 kb_first16_lanes(int64_t count) {
  return count >= 16 ? (__mmask16)0xffff : count <= 0 ? (__mmask16)0 : (__mmask16)((1u << count) - 1u);
}
#endif

#endif /* KB_CPU_SIMD_H */
