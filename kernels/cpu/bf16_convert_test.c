/* The avx512 level's float -> bfloat16 narrowing with AVX-512 BF16
 * (vec_lanes_avx512.h, kv_to_bf16 under KV_AVX512_BF16: vcvtneps2bf16, with
 * float32 subnormals on the integer path) against the library's scalar
 * reference kb_f32_to_bf16 (half.c) for all 2^32 float32 bit patterns, on
 * two threads.  The two avx512 vector tables differ in nothing else, so this
 * and vec_levels_test (which compares whichever table this CPU uses with the
 * scalar level) prove they give the same bits.  Skipped (and says so) on a
 * CPU or compiler without AVX-512 BF16. */
#include <pthread.h>
#include <stdio.h>

#include "kernels/cpu/half.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/testutil/cpu_test.h"
#include "core/src/internal.h"

#if KB_HAVE_X86_SIMD && KB_HAVE_AVX512_BF16

#define KV_AVX512_BF16 1
#include "kernels/cpu/vec_lanes_avx512.h"

struct range {
  uint64_t lo, hi; /* bit patterns [lo, hi) */
  uint64_t mismatches;
  uint32_t first_bad;
};

/* Compares 16 patterns per step; the scalar reference goes element by element. */
KV_ATTR static void check_range(struct range *r) {
  uint16_t got[16];
  for (uint64_t base = r->lo; base < r->hi; base += 16) {
    __m512i u = _mm512_add_epi32(_mm512_set1_epi32((int)(uint32_t)base),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    _mm256_storeu_si256((__m256i *)got, kv_to_bf16(_mm512_castsi512_ps(u)));
    for (int i = 0; i < 16; i++) {
      uint32_t bits = (uint32_t)base + (uint32_t)i;
      float f;
      memcpy(&f, &bits, sizeof f);
      if (got[i] != kb_f32_to_bf16(f)) {
        if (r->mismatches++ == 0) r->first_bad = bits;
      }
    }
  }
}

static void *run(void *arg) {
  check_range(arg);
  return NULL;
}

static void test_all_patterns(void) {
  struct range halves[2] = {{0, 1ull << 31, 0, 0}, {1ull << 31, 1ull << 32, 0, 0}};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, run, &halves[1]) == 0);
  run(&halves[0]);
  CHECK(pthread_join(t, NULL) == 0);
  for (int h = 0; h < 2; h++) {
    if (halves[h].mismatches) printf("  %llu mismatches, first 0x%08x\n", (unsigned long long)halves[h].mismatches, halves[h].first_bad);
    CHECK(halves[h].mismatches == 0);
  }
}

int main(void) {
  if (!kb__cpu_has_avx512_bf16()) {
    printf("SKIPPED: this CPU has no AVX-512 BF16\n");
    return 0;
  }
  KB_RUN(test_all_patterns);
  return kb_test_summary();
}

#else

int main(void) {
  printf("SKIPPED: this compiler cannot build AVX-512 BF16 code\n");
  return 0;
}

#endif
