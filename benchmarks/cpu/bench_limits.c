/*
 * bench_limits.c - the machine header and the machine's limits, measured in
 * the same run as the kernels: streaming copy / read / write bandwidth and
 * the single-precision FMA peak of every ISA level the CPU runs.
 *
 * Vector code lives only in functions with target attributes; the program is
 * compiled without -m flags, like the library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BENCH_X86 1
#else
#define BENCH_X86 0
#endif

#include <cblas.h>

#include "bench.h"

struct machine_limits limits;

static const char *const isa_names[3] = {"scalar", "avx2", "avx512"};

int isa_index(const char *name) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, isa_names[i]) == 0) return i;
  return -1;
}

/* Highest level the CPU and OS can run: 0, 1 or 2 (as kernelbridge's levels;
 * the scalar loop needs the FMA instruction to be an FMA loop). */
static int cpu_level(void) {
#if BENCH_X86
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0;
  if (!__builtin_cpu_supports("avx512f")) return 1;
  return 2;
#else
  return 0;
#endif
}

static int cpu_has_fma(void) {
#if BENCH_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

/* ------------------------------------------------------------------------ */
/* The header. */

static void read_line(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  if (fgets(buf, (int)len, f) == NULL) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
}

static void cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *v = strchr(line, ':');
      if (v != NULL) {
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(buf, len, "%s", v);
        buf[strcspn(buf, "\n")] = '\0';
      }
      break;
    }
  }
  fclose(f);
}

/* "L1d 32K, L1i 32K, L2 1024K, L3 32768K" from cpu0's sysfs cache entries. */
static void cache_sizes(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < 8; i++) {
    char path[128], level[16], type[32], size[32];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    read_line(path, level, sizeof level);
    if (level[0] == '\0') break;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    read_line(path, type, sizeof type);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    read_line(path, size, sizeof size);
    const char *suffix = strcmp(type, "Data") == 0 ? "d" : strcmp(type, "Instruction") == 0 ? "i" : "";
    int n = snprintf(buf + used, len - used, "%sL%s%s %s", used ? ", " : "", level, suffix, size);
    if (n < 0 || (size_t)n >= len - used) break;
    used += (size_t)n;
  }
  if (used == 0) snprintf(buf, len, "unknown");
}

void print_machine(void) {
  char model[256], caches[256];
  cpu_model(model, sizeof model);
  cache_sizes(caches, sizeof caches);
  const char *forced = getenv("KB_CPU_ISA");
  printf("## kernelbridge CPU benchmark%s\n\n", bench_opt.smoke ? " (smoke: tiny sizes, figures meaningless)"
                                                : bench_opt.quick ? " (quick: smaller sizes, short rounds)" : "");
  printf("| | |\n|---|---|\n");
  printf("| CPU | %s |\n", model);
  printf("| online CPUs | %ld |\n", sysconf(_SC_NPROCESSORS_ONLN));
  printf("| caches (cpu0) | %s |\n", caches);
  printf("| kernelbridge | %s, ISA level `%s`%s%s%s |\n", kb_version_string(), kb_cpu_isa(),
         forced != NULL && forced[0] ? " (KB_CPU_ISA=" : "", forced != NULL && forced[0] ? forced : "",
         forced != NULL && forced[0] ? ")" : "");
  printf("| ISA levels this CPU runs | %s |\n", cpu_level() == 2 ? "scalar, avx2, avx512" : cpu_level() == 1 ? "scalar, avx2" : "scalar");
  printf("| OpenBLAS | %s (core %s) |\n", openblas_get_config(), openblas_get_corename());
  printf("| threads | 1 and %d: kernelbridge `kb_context_create(KB_BACKEND_CPU, T)`, OpenBLAS "
         "`openblas_set_num_threads(T)`, the benchmark's own loops on T threads |\n", bench_opt.threads);
  printf("| method | median of %d interleaved rounds (3 when a call takes >= %.0f ms), each side >= %.0f ms per "
         "round, after a warm-up call; ratios are of medians from the same rounds |\n\n",
         bench_opt.smoke ? 1 : bench_opt.rounds, 5e3 * bench_opt.min_round, 1e3 * bench_opt.min_round);
}

/* ------------------------------------------------------------------------ */
/* Bandwidth. */

struct stream {
  char *dst;
  const char *src;
  size_t bytes;
  int threads;
  double sink;
};

static void slice(size_t bytes, int index, int count, size_t *begin, size_t *len) {
  size_t per = (bytes / (size_t)count + 63) & ~(size_t)63;
  *begin = per * (size_t)index;
  if (*begin >= bytes) {
    *begin = bytes;
    *len = 0;
  } else {
    *len = bytes - *begin < per ? bytes - *begin : per;
  }
}

#if BENCH_X86
__attribute__((target("avx2"))) static float sum_avx2(const float *x, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float total = 0;
  for (int j = 0; j < 8; j++) total += lanes[j];
  for (; i < n; i++) total += x[i];
  return total;
}
#endif

static float sum_scalar(const float *x, size_t n) {
  float a[8] = {0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) a[j] += x[i + (size_t)j];
  float total = 0;
  for (int j = 0; j < 8; j++) total += a[j];
  for (; i < n; i++) total += x[i];
  return total;
}

static float sum_floats(const float *x, size_t n) {
#if BENCH_X86
  if (cpu_level() >= 1) return sum_avx2(x, n);
#endif
  return sum_scalar(x, n);
}

static void read_slice(void *p, int index, int count) {
  struct stream *s = (struct stream *)p;
  size_t begin, len;
  slice(s->bytes, index, count, &begin, &len);
  float r = sum_floats((const float *)(const void *)(s->src + begin), len / 4);
  if (index == 0) s->sink += r; /* keeps the loads */
}

static void write_slice(void *p, int index, int count) {
  struct stream *s = (struct stream *)p;
  size_t begin, len;
  slice(s->bytes, index, count, &begin, &len);
  memset(s->dst + begin, index + 1, len);
}

static int do_copy(void *p) {
  struct stream *s = (struct stream *)p;
  parallel_copy(s->dst, s->src, s->bytes, s->threads, 0);
  return 0;
}

static int do_memcpy(void *p) {
  struct stream *s = (struct stream *)p;
  parallel_copy(s->dst, s->src, s->bytes, s->threads, 1);
  return 0;
}

static int do_read(void *p) {
  struct stream *s = (struct stream *)p;
  pool_run(s->threads, read_slice, s);
  return 0;
}

static int do_write(void *p) {
  struct stream *s = (struct stream *)p;
  pool_run(s->threads, write_slice, s);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* FMA peak: independent accumulator chains held in registers, enough of
 * them to cover the FMA latency on every port (12 ymm / 16 zmm). */

#if BENCH_X86
__attribute__((target("fma"))) static float fma_scalar_loop(long iters) {
  __m128 m = _mm_set_ss(0.999999f), a = _mm_set_ss(1e-6f);
  __m128 c0 = _mm_set_ss(0.1f), c1 = _mm_set_ss(0.2f), c2 = _mm_set_ss(0.3f), c3 = _mm_set_ss(0.4f);
  __m128 c4 = _mm_set_ss(0.5f), c5 = _mm_set_ss(0.6f), c6 = _mm_set_ss(0.7f), c7 = _mm_set_ss(0.8f);
  __m128 c8 = _mm_set_ss(0.9f), c9 = _mm_set_ss(1.0f), c10 = _mm_set_ss(1.1f), c11 = _mm_set_ss(1.2f);
  for (long i = 0; i < iters; i++) {
    c0 = _mm_fmadd_ss(c0, m, a);
    c1 = _mm_fmadd_ss(c1, m, a);
    c2 = _mm_fmadd_ss(c2, m, a);
    c3 = _mm_fmadd_ss(c3, m, a);
    c4 = _mm_fmadd_ss(c4, m, a);
    c5 = _mm_fmadd_ss(c5, m, a);
    c6 = _mm_fmadd_ss(c6, m, a);
    c7 = _mm_fmadd_ss(c7, m, a);
    c8 = _mm_fmadd_ss(c8, m, a);
    c9 = _mm_fmadd_ss(c9, m, a);
    c10 = _mm_fmadd_ss(c10, m, a);
    c11 = _mm_fmadd_ss(c11, m, a);
  }
  __m128 s = _mm_add_ss(_mm_add_ss(_mm_add_ss(c0, c1), _mm_add_ss(c2, c3)),
                        _mm_add_ss(_mm_add_ss(c4, c5), _mm_add_ss(c6, c7)));
  s = _mm_add_ss(s, _mm_add_ss(_mm_add_ss(c8, c9), _mm_add_ss(c10, c11)));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float fma_avx2_loop(long iters) {
  __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  __m256 c0 = _mm256_set1_ps(0.1f), c1 = _mm256_set1_ps(0.2f), c2 = _mm256_set1_ps(0.3f), c3 = _mm256_set1_ps(0.4f);
  __m256 c4 = _mm256_set1_ps(0.5f), c5 = _mm256_set1_ps(0.6f), c6 = _mm256_set1_ps(0.7f), c7 = _mm256_set1_ps(0.8f);
  __m256 c8 = _mm256_set1_ps(0.9f), c9 = _mm256_set1_ps(1.0f), c10 = _mm256_set1_ps(1.1f), c11 = _mm256_set1_ps(1.2f);
  for (long i = 0; i < iters; i++) {
    c0 = _mm256_fmadd_ps(c0, m, a);
    c1 = _mm256_fmadd_ps(c1, m, a);
    c2 = _mm256_fmadd_ps(c2, m, a);
    c3 = _mm256_fmadd_ps(c3, m, a);
    c4 = _mm256_fmadd_ps(c4, m, a);
    c5 = _mm256_fmadd_ps(c5, m, a);
    c6 = _mm256_fmadd_ps(c6, m, a);
    c7 = _mm256_fmadd_ps(c7, m, a);
    c8 = _mm256_fmadd_ps(c8, m, a);
    c9 = _mm256_fmadd_ps(c9, m, a);
    c10 = _mm256_fmadd_ps(c10, m, a);
    c11 = _mm256_fmadd_ps(c11, m, a);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[7];
}

__attribute__((target("avx512f"))) static float fma_avx512_loop(long iters) {
  __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  __m512 c0 = _mm512_set1_ps(0.1f), c1 = _mm512_set1_ps(0.2f), c2 = _mm512_set1_ps(0.3f), c3 = _mm512_set1_ps(0.4f);
  __m512 c4 = _mm512_set1_ps(0.5f), c5 = _mm512_set1_ps(0.6f), c6 = _mm512_set1_ps(0.7f), c7 = _mm512_set1_ps(0.8f);
  __m512 c8 = _mm512_set1_ps(0.9f), c9 = _mm512_set1_ps(1.0f), c10 = _mm512_set1_ps(1.1f), c11 = _mm512_set1_ps(1.2f);
  __m512 c12 = _mm512_set1_ps(1.3f), c13 = _mm512_set1_ps(1.4f), c14 = _mm512_set1_ps(1.5f), c15 = _mm512_set1_ps(1.6f);
  for (long i = 0; i < iters; i++) {
    c0 = _mm512_fmadd_ps(c0, m, a);
    c1 = _mm512_fmadd_ps(c1, m, a);
    c2 = _mm512_fmadd_ps(c2, m, a);
    c3 = _mm512_fmadd_ps(c3, m, a);
    c4 = _mm512_fmadd_ps(c4, m, a);
    c5 = _mm512_fmadd_ps(c5, m, a);
    c6 = _mm512_fmadd_ps(c6, m, a);
    c7 = _mm512_fmadd_ps(c7, m, a);
    c8 = _mm512_fmadd_ps(c8, m, a);
    c9 = _mm512_fmadd_ps(c9, m, a);
    c10 = _mm512_fmadd_ps(c10, m, a);
    c11 = _mm512_fmadd_ps(c11, m, a);
    c12 = _mm512_fmadd_ps(c12, m, a);
    c13 = _mm512_fmadd_ps(c13, m, a);
    c14 = _mm512_fmadd_ps(c14, m, a);
    c15 = _mm512_fmadd_ps(c15, m, a);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15)));
  return _mm512_reduce_add_ps(s);
}
#endif

/* Without the FMA instruction the scalar level is a multiply and an add. */
static float mul_add_scalar_loop(long iters) {
  volatile float mv = 0.999999f, av = 1e-6f;
  float m = mv, a = av;
  float c[12];
  for (int j = 0; j < 12; j++) c[j] = 0.1f * (float)(j + 1);
  for (long i = 0; i < iters; i++)
    for (int j = 0; j < 12; j++) c[j] = c[j] * m + a;
  float s = 0;
  for (int j = 0; j < 12; j++) s += c[j];
  return s;
}

/* Flops of one loop iteration per level. */
static const double fma_flops_per_iter[3] = {12 * 2, 12 * 8 * 2, 16 * 16 * 2};

struct fma_job {
  int level;
  int threads;
  long iters;
  volatile float sink;
};

static void fma_slice(void *p, int index, int count) {
  struct fma_job *job = (struct fma_job *)p;
  float r;
  (void)count;
#if BENCH_X86
  if (job->level == 2)
    r = fma_avx512_loop(job->iters);
  else if (job->level == 1)
    r = fma_avx2_loop(job->iters);
  else if (cpu_has_fma())
    r = fma_scalar_loop(job->iters);
  else
    r = mul_add_scalar_loop(job->iters);
#else
  r = mul_add_scalar_loop(job->iters);
#endif
  if (index == 0) job->sink = r;
}

static int do_fma(void *p) {
  struct fma_job *job = (struct fma_job *)p;
  pool_run(job->threads, fma_slice, job);
  return 0;
}

/* ------------------------------------------------------------------------ */

static double gbs(double bytes, double seconds) { return seconds > 0 ? bytes / seconds * 1e-9 : 0.0; }

void bench_limits(void) {
  size_t bytes = bench_opt.smoke ? ((size_t)1 << 20) : bench_opt.quick ? ((size_t)64 << 20) : ((size_t)128 << 20);
  char *src = (char *)bench_alloc(bytes), *dst = (char *)bench_alloc(bytes);
  memset(src, 1, bytes);
  int tcounts[2] = {1, bench_opt.threads};
  limits.kb_isa = isa_index(kb_cpu_isa());

  printf("### machine limits (measured in this run)\n\n");
  printf("Streams over %zu MiB buffers%s, split evenly over the threads.  A copy counts bytes read + bytes "
         "written.  **copy** (a loop of plain vector loads and stores, the store policy of the kernels) is the copy "
         "bandwidth the later tables refer to; glibc's memcpy may use non-temporal stores for large sizes.\n\n",
         bytes >> 20, bench_opt.smoke ? "" : " (beyond the last-level cache of most CPUs)");
  printf("| stream | threads | GB/s median | GB/s best |\n|---|---|---|---|\n");
  for (int t = 0; t < 2; t++) {
    struct stream s = {dst, src, bytes, tcounts[t], 0};
    struct side sides[4] = {{"**copy**", do_copy, &s, 0, 0}, {"memcpy", do_memcpy, &s, 0, 0},
                            {"read (vector sum)", do_read, &s, 0, 0}, {"write (memset)", do_write, &s, 0, 0}};
    measure(sides, 4);
    double moved[4] = {2.0 * (double)bytes, 2.0 * (double)bytes, (double)bytes, (double)bytes};
    double *out[4] = {&limits.copy_gbs[t], &limits.memcpy_gbs[t], &limits.read_gbs[t], &limits.write_gbs[t]};
    for (int i = 0; i < 4; i++) {
      *out[i] = gbs(moved[i], sides[i].med);
      printf("| %s | %d | %.1f | %.1f |\n", sides[i].label, tcounts[t], *out[i], gbs(moved[i], sides[i].min));
    }
    if (t == 0 && bench_opt.threads == 1) {
      limits.copy_gbs[1] = limits.copy_gbs[0];
      limits.memcpy_gbs[1] = limits.memcpy_gbs[0];
      limits.read_gbs[1] = limits.read_gbs[0];
      limits.write_gbs[1] = limits.write_gbs[0];
      break;
    }
  }
  free(src);
  free(dst);

  printf("\nSingle-precision FMA peak: independent FMA chains held in registers, per ISA level (scalar: one lane "
         "per FMA instruction; avx2: 8; avx512: 16; 2 flops per lane).\n\n");
  printf("| ISA level | threads | GFLOP/s median | GFLOP/s best |\n|---|---|---|---|\n");
  int best = cpu_level();
  long iters = bench_opt.smoke ? 1000 : 1L << 18;
  for (int level = 0; level <= best; level++) {
    for (int t = 0; t < 2; t++) {
      struct fma_job job = {level, tcounts[t], iters, 0};
      struct side side = {isa_names[level], do_fma, &job, 0, 0};
      measure(&side, 1);
      double flops = fma_flops_per_iter[level] * (double)iters * (double)tcounts[t];
      limits.peak_gflops[level][t] = side.med > 0 ? flops / side.med * 1e-9 : 0;
      printf("| %s%s%s | %d | %.1f | %.1f |\n", level == limits.kb_isa ? "**" : "", isa_names[level],
             level == limits.kb_isa ? "** (kernelbridge)" : "", tcounts[t], limits.peak_gflops[level][t],
             side.min > 0 ? flops / side.min * 1e-9 : 0);
      if (bench_opt.threads == 1) {
        limits.peak_gflops[level][1] = limits.peak_gflops[level][0];
        break;
      }
    }
  }
  printf("\n");
  /* Register-only loops scale with the thread count unless other processes
   * hold CPUs: say so, since every all-thread figure below is then suspect. */
  int lv = limits.kb_isa >= 0 && limits.kb_isa <= best ? limits.kb_isa : best;
  double one = limits.peak_gflops[lv][0], all = limits.peak_gflops[lv][1];
  if (!bench_opt.smoke && bench_opt.threads > 1 && one > 0 && all < 0.75 * (double)bench_opt.threads * one)
    printf("> **Warning**: the FMA peak on %d threads is only %.2f× the 1-thread peak: other processes are using "
           "the CPUs, so the %d-thread figures of this run are unreliable (the ratios less so: both sides of a row "
           "share the load).\n\n",
           bench_opt.threads, all / one, bench_opt.threads);
}
