/*
 * cuda_benchmark.c - kernelbridge's CUDA kernels against cuBLAS and the
 * device's copy bandwidth (benchmarks/README.md).
 *
 *   cuda_benchmark [--cuda-library PATH] [--quick] [--only gemm|memory|attention]
 *                  [--min-round SECONDS] [--rounds N] [--cpu-context]
 *
 * Prints markdown to stdout.  Without a usable GPU it prints
 * "SKIPPED: <reason>" and exits 0; a failed measurement shows as n/a in its
 * table (the reason goes to stderr) and makes the exit status 1.
 *
 * cuBLAS and the CUDA runtime are linked into this program only, never into
 * kernelbridge, which loads its own CUDA backend at run time.  The program
 * links kernelbridge statically, so the backend is not next to "its"
 * library: pass --cuda-library (or set $KB_CUDA_LIBRARY).
 *
 * --cpu-context runs the kernelbridge side on a CPU context, without the
 * baselines: a smoke test of this program's own calls (arguments, buffer
 * sizes) on machines without a GPU.  Its figures mean nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void usage(void) {
  fprintf(stderr,
          "usage: cuda_benchmark [--cuda-library PATH] [--quick] [--only gemm|memory|attention] "
          "[--min-round SECONDS] [--rounds N] [--cpu-context]\n");
}

/* The device, library and toolkit versions heading the tables. */
static void header(const struct bench *b) {
  char name[256] = "?";
  int64_t dev = kb_context_device(b->ctx), cc = 0, mem = 0;
  int drv = 0, rt = 0, blas = 0;
  kb_cuda_device_name(dev, name, sizeof name);
  kb_cuda_device_compute_capability(dev, &cc);
  kb_cuda_device_total_memory(dev, &mem);
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  if (b->blas != NULL) cublasGetVersion(b->blas, &blas);
  printf("## kernelbridge %s CUDA benchmark: %s\n\n", kb_version_string(), name);
  printf("device %lld: %s, compute capability %lld.%lld, %.1f GiB; driver CUDA %d.%d, benchmark's runtime %d.%d, "
         "cuBLAS %d\n\n",
         (long long)dev, name, (long long)(cc / 10), (long long)(cc % 10), (double)mem / (1 << 30), drv / 1000,
         drv % 1000 / 10, rt / 1000, rt % 1000 / 10, blas);
  printf("Every figure: median over %d rounds of back-to-back calls (each round at least %.2f s), host clock, one "
         "stream synchronisation per call on both sides (kernelbridge's kernels wait before returning).\n",
         b->rounds, b->min_round);
}

int main(int argc, char **argv) {
  struct bench b;
  memset(&b, 0, sizeof b);
  b.min_round = 0.05;
  b.rounds = 5;
  const char *only = NULL;
  int cpu = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cuda-library") == 0 && i + 1 < argc) {
      /* Read by kernelbridge's loader on the first CUDA call. */
      setenv("KB_CUDA_LIBRARY", argv[++i], 1);
    } else if (strcmp(argv[i], "--cpu-context") == 0) {
      cpu = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      b.quick = 1;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--min-round") == 0 && i + 1 < argc) {
      b.min_round = atof(argv[++i]);
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      b.rounds = atoi(argv[++i]);
      if (b.rounds < 1) b.rounds = 1;
    } else {
      usage();
      return 2;
    }
  }
  if (cpu) {
    kb_status st = kb_context_create(KB_BACKEND_CPU, 0, &b.ctx);
    if (st != KB_STATUS_OK) return 1;
    snprintf(b.blas_error, sizeof b.blas_error, "--cpu-context");
    b.no_baselines = 1;
    printf("## smoke test on a CPU context (--cpu-context): no baselines, figures meaningless\n");
    if (only == NULL || strcmp(only, "gemm") == 0) bench_gemm(&b);
    if (only == NULL || strcmp(only, "memory") == 0) bench_memory(&b);
    if (only == NULL || strcmp(only, "attention") == 0) bench_attention(&b);
    kb_context_destroy(b.ctx);
    return bench_failures == 0 ? 0 : 1;
  }
  kb_status st = kb_context_create_cuda(0, &b.ctx);
  if (st == KB_STATUS_BACKEND_UNAVAILABLE) {
    printf("SKIPPED: %s\n", kb_last_error());
    return 0;
  }
  if (st != KB_STATUS_OK) {
    fprintf(stderr, "kb_context_create_cuda: %s: %s\n", kb_status_string(st), kb_last_error());
    return 1;
  }
  /* kernelbridge found a usable device 0: the baselines' runtime must too. */
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    fprintf(stderr, "CUDA runtime of the benchmark: %s\n", cudaGetErrorString(e));
    kb_context_destroy(b.ctx);
    return 1;
  }
  cublasStatus_t bs = cublasCreate(&b.blas);
  if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(b.blas, b.stream);
  if (bs != CUBLAS_STATUS_SUCCESS) {
    snprintf(b.blas_error, sizeof b.blas_error, "cublasCreate/cublasSetStream: status %d", (int)bs);
    if (b.blas != NULL) cublasDestroy(b.blas);
    b.blas = NULL;
  }
  header(&b);
  if (only == NULL || strcmp(only, "gemm") == 0) bench_gemm(&b);
  if (only == NULL || strcmp(only, "memory") == 0) bench_memory(&b);
  if (only == NULL || strcmp(only, "attention") == 0) bench_attention(&b);
  if (b.blas != NULL) cublasDestroy(b.blas);
  cudaStreamDestroy(b.stream);
  kb_context_destroy(b.ctx);
  return bench_failures == 0 ? 0 : 1;
}
