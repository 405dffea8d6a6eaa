/*
 * vmath_exhaustive - every float32 input (all 2^32 bit patterns) through every
 * function of the math layer (kernels/cpu/vmath.h) on every instruction-set
 * level this CPU runs: the largest error against the double-precision C
 * library (method: testutil/vmath_check.h), separately for normal and for
 * subnormal exact results, and the number of inputs where a vector level's
 * bits differ from the scalar level's.  Also every float narrowed to bf16
 * and f16 by the vector kernels' storage (vec_kernels.h, convert) on every
 * level against half.c.  Exits 1 when a documented bound is exceeded or a
 * level differs.
 *
 *   vmath_exhaustive [--threads N] [FUNCTION ...]     (default: all, one thread per CPU;
 *                                                      the conversions are "bf16" and "f16")
 *
 * tools/vmath_exhaustive.sh builds and runs it; docs/kernels.md records the
 * latest output.  Not part of the library (and not vendored: testutil/).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/testutil/vmath_check.h"

#define BLOCK 4096
#define TOTAL ((uint64_t)1 << 32)

struct worker {
  const struct vmc_case *fc;
  int narrow_dt; /* a KB_VEC_* 16-bit dtype: check narrowing instead of fc */
  const struct kb_cpu_ops *levels[KB_ISA_COUNT];
  uint64_t *next; /* shared: next block start, taken atomically */
  struct vmc_stats st;
  uint64_t mismatch[KB_ISA_COUNT];
  float first_mismatch[KB_ISA_COUNT];
};

static void narrow_block(struct worker *w, const float *x) {
  static __thread uint16_t want[BLOCK], got[BLOCK];
  kb_half_narrow(w->narrow_dt == KB_VEC_F16, x, want, BLOCK);
  for (int l = 0; l < KB_ISA_COUNT; l++) {
    if (w->levels[l] == NULL) continue;
    w->levels[l]->vec.convert(w->narrow_dt, 1, BLOCK, x, got);
    for (int i = 0; i < BLOCK; i++)
      if (got[i] != want[i] && w->mismatch[l]++ == 0) w->first_mismatch[l] = x[i];
  }
  w->st.count += BLOCK;
}

static void *work(void *arg) {
  struct worker *w = (struct worker *)arg;
  static __thread float x[BLOCK], y[BLOCK], z[BLOCK];
  for (;;) {
    uint64_t b = __atomic_fetch_add(w->next, BLOCK, __ATOMIC_RELAXED);
    if (b >= TOTAL) break;
    for (int i = 0; i < BLOCK; i++) x[i] = vmc_float((uint32_t)(b + (uint64_t)i));
    if (w->narrow_dt) {
      narrow_block(w, x);
      continue;
    }
    w->levels[KB_ISA_SCALAR]->vec.math[w->fc->fn](BLOCK, x, y);
    for (int i = 0; i < BLOCK; i++) vmc_add(&w->st, x[i], y[i], w->fc->ref((double)x[i]));
    for (int l = 1; l < KB_ISA_COUNT; l++) {
      if (w->levels[l] == NULL) continue;
      w->levels[l]->vec.math[w->fc->fn](BLOCK, x, z);
      for (int i = 0; i < BLOCK; i++)
        if (vmc_bits(z[i]) != vmc_bits(y[i]) && w->mismatch[l]++ == 0) w->first_mismatch[l] = x[i];
    }
  }
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs one function over all inputs; returns 0 when it meets its bounds. */
static int run_case(const struct vmc_case *fc, int threads) {
  struct worker *ws = (struct worker *)calloc((size_t)threads, sizeof *ws);
  pthread_t *ts = (pthread_t *)calloc((size_t)threads, sizeof *ts);
  if (ws == NULL || ts == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  uint64_t next = 0;
  double t0 = now();
  for (int t = 0; t < threads; t++) {
    ws[t].fc = fc;
    ws[t].next = &next;
    for (int l = 0; l < KB_ISA_COUNT; l++) ws[t].levels[l] = kb__cpu_ops_for((kb_isa)l);
    if (pthread_create(&ts[t], NULL, work, &ws[t]) != 0) {
      fprintf(stderr, "cannot start a thread\n");
      exit(2);
    }
  }
  struct vmc_stats all = {0};
  uint64_t mismatch[KB_ISA_COUNT] = {0};
  float first[KB_ISA_COUNT] = {0};
  for (int t = 0; t < threads; t++) {
    pthread_join(ts[t], NULL);
    vmc_merge(&all, &ws[t].st);
    for (int l = 0; l < KB_ISA_COUNT; l++) {
      if (ws[t].mismatch[l] > 0 && mismatch[l] == 0) first[l] = ws[t].first_mismatch[l];
      mismatch[l] += ws[t].mismatch[l];
    }
  }
  int failed = all.max_normal > fc->bound_normal || all.max_subnormal > fc->bound_subnormal ||
               (fc->bound_rel > 0 && all.max_rel > fc->bound_rel);
  printf("%-6s %llu inputs  max %.4f ulp (normal results; bound %.3g; worst x = %a)  %.4f ulp (subnormal; bound %.3g; "
         "worst x = %a)",
         fc->name, (unsigned long long)all.count, all.max_normal, fc->bound_normal, (double)all.worst_normal,
         all.max_subnormal, fc->bound_subnormal, (double)all.worst_subnormal);
  if (fc->bound_rel > 0)
    printf("  relative %.4f x 2^-23 (normal results; bound %.3g; worst x = %a)", all.max_rel, fc->bound_rel,
           (double)all.worst_rel);
  for (int l = 1; l < KB_ISA_COUNT; l++) {
    if (kb__cpu_ops_for((kb_isa)l) == NULL) {
      printf("  %s: not run by this CPU", kb__isa_name((kb_isa)l));
      continue;
    }
    printf("  %s: %llu differ from scalar", kb__isa_name((kb_isa)l), (unsigned long long)mismatch[l]);
    if (mismatch[l] > 0) {
      printf(" (first at %a)", (double)first[l]);
      failed = 1;
    }
  }
  printf("  [%.0f s]%s\n", now() - t0, failed ? "  FAILED" : "");
  fflush(stdout);
  free(ws);
  free(ts);
  return failed;
}

/* Every float narrowed by each level against half.c; 0 when all agree. */
static int run_narrow(int dt, int threads) {
  struct worker *ws = (struct worker *)calloc((size_t)threads, sizeof *ws);
  pthread_t *ts = (pthread_t *)calloc((size_t)threads, sizeof *ts);
  if (ws == NULL || ts == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  uint64_t next = 0, count = 0, mismatch[KB_ISA_COUNT] = {0};
  float first[KB_ISA_COUNT] = {0};
  double t0 = now();
  for (int t = 0; t < threads; t++) {
    ws[t].narrow_dt = dt;
    ws[t].next = &next;
    for (int l = 0; l < KB_ISA_COUNT; l++) ws[t].levels[l] = kb__cpu_ops_for((kb_isa)l);
    if (pthread_create(&ts[t], NULL, work, &ws[t]) != 0) {
      fprintf(stderr, "cannot start a thread\n");
      exit(2);
    }
  }
  for (int t = 0; t < threads; t++) {
    pthread_join(ts[t], NULL);
    count += ws[t].st.count;
    for (int l = 0; l < KB_ISA_COUNT; l++) {
      if (ws[t].mismatch[l] > 0 && mismatch[l] == 0) first[l] = ws[t].first_mismatch[l];
      mismatch[l] += ws[t].mismatch[l];
    }
  }
  int failed = 0;
  printf("%-6s %llu inputs narrowed", dt == KB_VEC_F16 ? "f16" : "bf16", (unsigned long long)count);
  for (int l = 0; l < KB_ISA_COUNT; l++) {
    if (kb__cpu_ops_for((kb_isa)l) == NULL) continue;
    printf("  %s: %llu differ from half.c", kb__isa_name((kb_isa)l), (unsigned long long)mismatch[l]);
    if (mismatch[l] > 0) {
      printf(" (first at %a)", (double)first[l]);
      failed = 1;
    }
  }
  printf("  [%.0f s]%s\n", now() - t0, failed ? "  FAILED" : "");
  fflush(stdout);
  free(ws);
  free(ts);
  return failed;
}

int main(int argc, char **argv) {
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  int first_name = 1;
  if (argc > 2 && strcmp(argv[1], "--threads") == 0) {
    threads = atoi(argv[2]);
    first_name = 3;
  }
  if (threads < 1) threads = 1;
  printf("vmath_exhaustive: best level %s, %d threads\n", kb__isa_name(kb__isa_best()), threads);
  int failed = 0, ran = 0;
  for (int c = 0; c < VMC_NCASES; c++) {
    int wanted = first_name >= argc;
    for (int a = first_name; a < argc; a++)
      if (strcmp(argv[a], vmc_cases[c].name) == 0) wanted = 1;
    if (!wanted) continue;
    failed |= run_case(&vmc_cases[c], threads);
    ran++;
  }
  const char *conv[2] = {"bf16", "f16"};
  for (int c = 0; c < 2; c++) {
    int wanted = first_name >= argc;
    for (int a = first_name; a < argc; a++)
      if (strcmp(argv[a], conv[c]) == 0) wanted = 1;
    if (!wanted) continue;
    failed |= run_narrow(c ? KB_VEC_F16 : KB_VEC_BF16, threads);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "no such function; known:");
    for (int c = 0; c < VMC_NCASES; c++) fprintf(stderr, " %s", vmc_cases[c].name);
    fprintf(stderr, " bf16 f16\n");
    return 2;
  }
  return failed;
}
