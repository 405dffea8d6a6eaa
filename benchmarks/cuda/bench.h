/*
 * bench.h - shared parts of cuda_benchmark (benchmarks/README.md).
 *
 * Kernels of the public API synchronise before returning, and their stream
 * is not reachable through the API, so CUDA events cannot time them: every
 * figure is N back-to-back calls timed with a host clock after warm-up.  The
 * baselines (cuBLAS, cudaMemcpyAsync) are timed the same way, each call
 * followed by cudaStreamSynchronize, so both sides pay one synchronisation
 * per call.
 */
#ifndef KB_CUDA_BENCH_H
#define KB_CUDA_BENCH_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelbridge.h"

struct bench {
  kb_context *ctx;       /* CUDA context of kernelbridge, device 0 */
  cudaStream_t stream;   /* the baselines' stream */
  cublasHandle_t blas;   /* NULL when cuBLAS is unusable (blas_error says why) */
  char blas_error[160];
  double min_round;      /* seconds per timing round, at least */
  int rounds;            /* timing rounds; the median is reported */
  int quick;             /* smallest configurations only (a smoke test) */
  int no_baselines;      /* --cpu-context: kernelbridge calls only */
};

/* Measurements that failed (shown as n/a); the exit status is 1 if any. */
extern int bench_failures;

/* One call of the thing timed; 0 on success, else a message in err. */
typedef int (*bench_call)(void *arg, char *err, size_t err_len);

/* Median seconds per call over b->rounds rounds of N calls each (N chosen so
 * that a round lasts b->min_round), after three warm-up calls.  Negative on
 * failure, with the message in err. */
double time_per_call(const struct bench *b, bench_call fn, void *arg, char *err, size_t err_len);

/* A kb_buffer of n elements of elem bytes on b->ctx, filled with uniform
 * values in [-1, 1) (float32, or bfloat16 when elem == 2).  NULL on
 * failure, with the message in err. */
kb_buffer *random_buffer(const struct bench *b, int64_t n, int elem, uint64_t seed, char *err, size_t err_len);

/* "kb_silu: DEVICE_ERROR: message" for a failed call on b->ctx. */
int kb_failed(const struct bench *b, const char *fn, kb_status st, char *err, size_t err_len);

/* Sections; each prints one markdown table. */
void bench_gemm(const struct bench *b);
void bench_memory(const struct bench *b);
void bench_attention(const struct bench *b);

#endif /* KB_CUDA_BENCH_H */
