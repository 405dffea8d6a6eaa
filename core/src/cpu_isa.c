/* cpu_isa.c - the instruction-set level of the CPU kernels, chosen once per
 * process.
 *
 * Three levels exist: scalar (portable C, the reference every vector path is
 * tested against), avx2 (AVX2 + FMA + F16C) and avx512 (the avx2 level plus
 * AVX-512F).  The best level the CPU and the operating system support is
 * used, unless the environment variable KB_CPU_ISA names a lower one (for
 * tests and bug reports).  The vector paths are compiled with function-level
 * target attributes, so every build of these sources (Bazel, cgo, cargo's cc,
 * setuptools), whatever its global flags, contains all three paths.
 *
 * Detection reads CPUID and XGETBV directly rather than trusting the
 * compiler's runtime (__builtin_cpu_supports), so that the OS check of the
 * register state (XCR0) is explicit and the same with every compiler. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define KB_X86 1
#include <cpuid.h>
#else
#define KB_X86 0
#endif

static const char *const isa_names[] = {"scalar", "avx2", "avx512"};

#if KB_X86
/* XCR0, the register state the OS saves on a context switch.  Only called
 * when CPUID says OSXSAVE, so XGETBV exists. */
static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static kb_isa detect(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return KB_ISA_SCALAR;
  bool fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!(fma && osxsave && avx && f16c)) return KB_ISA_SCALAR;
  uint64_t xcr0 = read_xcr0();
  /* SSE (bit 1) and AVX (bit 2) state saved by the OS. */
  if ((xcr0 & 0x6) != 0x6) return KB_ISA_SCALAR;
  if (__get_cpuid_max(0, NULL) < 7) return KB_ISA_SCALAR;
  __cpuid_count(7, 0, a, b, c, d);
  bool avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1;
  if (!avx2) return KB_ISA_SCALAR;
  /* AVX-512 needs the opmask, ZMM_Hi256 and Hi16_ZMM state (bits 5-7). */
  if (avx512f && (xcr0 & 0xe0) == 0xe0) return KB_ISA_AVX512;
  return KB_ISA_AVX2;
}

bool kb__cpu_has_avx512_bf16(void) {
  if (detect() != KB_ISA_AVX512) return false;
  unsigned a, b, c, d;
  __cpuid_count(7, 0, a, b, c, d);
  bool bw = (b >> 30) & 1, dq = (b >> 17) & 1;
  if (!(bw && dq) || a < 1) return false; /* leaf 7 subleaf 1 exists when EAX of subleaf 0 >= 1 */
  __cpuid_count(7, 1, a, b, c, d);
  return (a >> 5) & 1;
}

int kb__cpu_vnni(void) {
  if (detect() < KB_ISA_AVX2) return 0;
  unsigned a, b, c, d;
  __cpuid_count(7, 0, a, b, c, d);
  unsigned max_sub = a;
  int has = 0;
  /* AVX512_VNNI (leaf 7 ECX bit 11) with AVX512VL (EBX bit 31) gives the
   * 256-bit vpdpbusd; it needs the AVX-512 state the avx512 level checks. */
  if (detect() == KB_ISA_AVX512 && ((b >> 31) & 1) && ((c >> 11) & 1)) has |= 2;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    if ((a >> 4) & 1) has |= 1; /* AVX-VNNI: the VEX-encoded vpdpbusd */
  }
  return has;
}
#else
static kb_isa detect(void) { return KB_ISA_SCALAR; }
bool kb__cpu_has_avx512_bf16(void) { return false; }
int kb__cpu_vnni(void) { return 0; }
#endif

/* The process's choice: computed on first use, then read-only.  Racing first
 * calls compute the same values, so plain relaxed atomics suffice. */
static int chosen_isa = -1;   /* kb_isa, or -1 before the first call */
static int detected_isa = -1; /* what the CPU supports */
static int env_problem = 0;   /* 0 none, 1 unknown name, 2 unsupported level */

static void choose(void) {
  if (__atomic_load_n(&chosen_isa, __ATOMIC_ACQUIRE) >= 0) return;
  kb_isa best = detect();
  kb_isa use = best;
  int problem = 0;
  const char *env = getenv("KB_CPU_ISA");
  if (env != NULL && env[0] != '\0') {
    int want = -1;
    for (int i = 0; i < KB_ISA_COUNT; i++)
      if (strcmp(env, isa_names[i]) == 0) want = i;
    if (want < 0)
      problem = 1;
    else if (want > (int)best)
      problem = 2;
    else
      use = (kb_isa)want;
  }
  __atomic_store_n(&detected_isa, (int)best, __ATOMIC_RELAXED);
  __atomic_store_n(&env_problem, problem, __ATOMIC_RELAXED);
  __atomic_store_n(&chosen_isa, (int)use, __ATOMIC_RELEASE);
}

kb_isa kb__isa(void) {
  int isa = __atomic_load_n(&chosen_isa, __ATOMIC_ACQUIRE);
  if (isa < 0) {
    choose();
    isa = __atomic_load_n(&chosen_isa, __ATOMIC_ACQUIRE);
  }
  return (kb_isa)isa;
}

kb_isa kb__isa_best(void) {
  kb__isa();
  return (kb_isa)__atomic_load_n(&detected_isa, __ATOMIC_RELAXED);
}

const char *kb__isa_name(kb_isa isa) { return (int)isa >= 0 && (int)isa < KB_ISA_COUNT ? isa_names[isa] : "unknown"; }

kb_status kb__isa_check_env(const char *fn) {
  kb__isa();
  int problem = __atomic_load_n(&env_problem, __ATOMIC_RELAXED);
  if (problem == 0) return KB_STATUS_OK;
  const char *env = getenv("KB_CPU_ISA");
  kb_isa best = (kb_isa)__atomic_load_n(&detected_isa, __ATOMIC_RELAXED);
  if (problem == 1)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, fn,
                           "KB_CPU_ISA=\"%.40s\" is not an instruction-set level (expected scalar, avx2 or avx512, "
                           "or unset for the best this CPU supports)",
                           env != NULL ? env : "");
  return kb__fail_thread(KB_STATUS_UNSUPPORTED, fn,
                         "KB_CPU_ISA=%s is not supported by this CPU and operating system (the best level here is %s)",
                         env != NULL ? env : "", isa_names[best]);
}

const char *kb_cpu_isa(void) { return isa_names[kb__isa()]; }
