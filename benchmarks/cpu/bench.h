/*
 * bench.h - shared parts of cpu_benchmark (benchmarks/README.md, "CPU").
 *
 * Every figure is a ratio measured in this process: each table row times
 * kernelbridge and its baseline (OpenBLAS, a naive composition, a copy of
 * the same traffic, ...) in interleaved rounds, so that the noise of a shared
 * machine falls on both sides alike.
 */
#ifndef KB_CPU_BENCH_H
#define KB_CPU_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "kernelbridge.h"

#define BENCH_MAX_SIDES 4
#define BENCH_MAX_ROUNDS 31

struct bench_options {
  int quick;          /* smaller sizes, shorter rounds */
  int smoke;          /* tiny sizes, one call per side, correctness checks */
  double min_round;   /* seconds per side and round, at least */
  int rounds;         /* timing rounds; median and min are over these */
  int threads;        /* "all threads": online CPUs unless --threads */
  const char *only;   /* NULL, or one section: limits, gemm, attention, memory */
};

extern struct bench_options bench_opt;

/* Measurements or checks that failed; the exit status is 1 if any. */
extern int bench_failures;

/* One call of the thing timed: 0 on success; otherwise it sets the message
 * with bench_error() and returns nonzero. */
typedef int (*bench_fn)(void *arg);

/* One side of a comparison.  measure() fills med and min (seconds per call;
 * negative when the side failed). */
struct side {
  const char *label;
  bench_fn fn;
  void *arg;
  double med, min;
};

/* Times the sides in interleaved rounds: a warm-up call each, a number of
 * calls per side chosen so that one batch lasts bench_opt.min_round, then
 * bench_opt.rounds rounds in which every side runs its batch (the order
 * reversed every other round; 3 rounds at most when a warm-up call of some
 * side lasted 5 × min_round or more).  Returns 0 when every side succeeded. */
int measure(struct side *sides, int count);

/* Records a failure message (printf format) for the side being timed. */
void bench_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a failed kernelbridge call through bench_error; returns 1. */
int kb_fail(kb_context *ctx, const char *fn, kb_status st);

/* A failed check outside measure(): message on stderr, bench_failures++. */
void bench_check_failed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

double now_seconds(void);

/* v as "%.<decimals>f<suffix>" in buf, or "n/a" when !valid; returns buf. */
const char *fmtv(char *buf, size_t len, int decimals, double v, int valid, const char *suffix);

/* 64-byte aligned, zero-filled memory (exits the program when there is none). */
void *bench_alloc(size_t bytes);

/* Uniform random float32 values in [lo, hi). */
void fill_uniform(float *x, size_t n, float lo, float hi, uint64_t seed);
/* The same values rounded to bfloat16 / float16 (nearest, ties to even). */
void fill_uniform_bf16(uint16_t *x, size_t n, float lo, float hi, uint64_t seed);
void fill_uniform_f16(uint16_t *x, size_t n, float lo, float hi, uint64_t seed);
/* Uniform int32 values in [0, bound). */
void fill_ids(int32_t *x, size_t n, int32_t bound, uint64_t seed);

/* Runs fn(arg, i, count) for i in [0, count) on count threads (the caller is
 * thread 0; the others are persistent threads of the benchmark that sleep
 * when idle).  count <= 64. */
void pool_run(int count, void (*fn)(void *arg, int index, int count), void *arg);
void pool_shutdown(void);

/* Copies bytes from src to dst split into count contiguous slices on count
 * threads: with glibc's memcpy, or (use_memcpy = 0) with a loop of plain
 * vector loads and stores, the store policy of the kernels: "the copy". */
void parallel_copy(void *dst, const void *src, size_t bytes, int count, int use_memcpy);

/* Machine limits measured at start-up (bench_limits.c).  Index [0] is one
 * thread, [1] is bench_opt.threads threads. */
struct machine_limits {
  double copy_gbs[2];     /* the copy loop: bytes read + bytes written per second */
  double memcpy_gbs[2];   /* glibc memcpy, the same way */
  double read_gbs[2];     /* read-only stream (a vector sum) */
  double write_gbs[2];    /* write-only stream (memset) */
  double peak_gflops[3][2]; /* FMA peak per ISA level: scalar, avx2, avx512; 0 when unsupported */
  int kb_isa;             /* 0 scalar, 1 avx2, 2 avx512: what kb_cpu_isa() says */
};

extern struct machine_limits limits;

/* Index of an ISA name ("scalar", "avx2", "avx512"); -1 when unknown. */
int isa_index(const char *name);

/* Sections. */
void print_machine(void);
void bench_limits(void);
void bench_gemm(void);
void bench_attention(void);
void bench_model(void);
void bench_memory(void);

/* kernelbridge contexts with 1 and bench_opt.threads threads. */
extern kb_context *ctx_one, *ctx_all;

#endif /* KB_CPU_BENCH_H */
