/*
 * bench_gemm.c - kb_gemm / kb_gemm_bf16 against cuBLAS at m = n = k.
 *
 * kernelbridge's float32 gemm is cuBLASLt with CUBLAS_COMPUTE_32F (never
 * TF32: the header promises float32 accumulation), so its baseline is
 * cublasSgemm in the default math mode (no TF32 either); TF32 cuBLAS is
 * printed for reference only, since it computes something less accurate.
 * The bf16 variant is compared with cublasGemmEx on bf16 with float
 * accumulation (CUBLAS_COMPUTE_32F), which is what kb_gemm_bf16 promises.
 * All calls run on the same device buffers.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

enum impl { KB_F32, BLAS_SGEMM, BLAS_TF32, KB_BF16, BLAS_BF16 };

struct gemm_arg {
  const struct bench *b;
  enum impl impl;
  int64_t n;
  void *a, *bm, *c; /* row-major n x n */
};

static int blas_failed(const char *fn, cublasStatus_t st, char *err, size_t err_len) {
  snprintf(err, err_len, "%s: cuBLAS status %d", fn, (int)st);
  return -1;
}

static int sync_stream(const struct bench *b, char *err, size_t err_len) {
  cudaError_t e = cudaStreamSynchronize(b->stream);
  if (e == cudaSuccess) return 0;
  snprintf(err, err_len, "cudaStreamSynchronize: %s", cudaGetErrorString(e));
  return -1;
}

static int gemm_call(void *p, char *err, size_t err_len) {
  struct gemm_arg *g = (struct gemm_arg *)p;
  const struct bench *b = g->b;
  int n = (int)g->n;
  const float one = 1.0f, zero = 0.0f;
  kb_status ks;
  cublasStatus_t bs;
  switch (g->impl) {
    case KB_F32:
      ks = kb_gemm(b->ctx, false, false, g->n, g->n, g->n, 1.0f, (const float *)g->a, g->n, (const float *)g->bm,
                   g->n, 0.0f, (float *)g->c, g->n);
      return ks == KB_STATUS_OK ? 0 : kb_failed(b, "kb_gemm", ks, err, err_len);
    case KB_BF16:
      ks = kb_gemm_bf16(b->ctx, false, false, g->n, g->n, g->n, 1.0f, (const uint16_t *)g->a, g->n,
                        (const uint16_t *)g->bm, g->n, 0.0f, (uint16_t *)g->c, g->n);
      return ks == KB_STATUS_OK ? 0 : kb_failed(b, "kb_gemm_bf16", ks, err, err_len);
    /* Row-major C = A B is column-major C^T = B^T A^T: swap the operands. */
    case BLAS_SGEMM:
      bs = cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)g->bm, n,
                       (const float *)g->a, n, &zero, (float *)g->c, n);
      if (bs != CUBLAS_STATUS_SUCCESS) return blas_failed("cublasSgemm", bs, err, err_len);
      return sync_stream(b, err, err_len);
    case BLAS_TF32:
      bs = cublasGemmEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, g->bm, CUDA_R_32F, n, g->a, CUDA_R_32F, n,
                        &zero, g->c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
      if (bs != CUBLAS_STATUS_SUCCESS) return blas_failed("cublasGemmEx TF32", bs, err, err_len);
      return sync_stream(b, err, err_len);
    case BLAS_BF16:
      bs = cublasGemmEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, g->bm, CUDA_R_16BF, n, g->a, CUDA_R_16BF, n,
                        &zero, g->c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (bs != CUBLAS_STATUS_SUCCESS) return blas_failed("cublasGemmEx bf16", bs, err, err_len);
      return sync_stream(b, err, err_len);
  }
  return -1;
}

/* TFLOP/s of one implementation, or a negative value (message printed). */
static double tflops(const struct bench *b, enum impl impl, int64_t n, kb_buffer *const *bufs) {
  char err[512] = "";
  if ((impl == BLAS_SGEMM || impl == BLAS_TF32 || impl == BLAS_BF16) && b->blas == NULL) return -1.0;
  struct gemm_arg g = {b, impl, n, kb_buffer_data(bufs[0]), kb_buffer_data(bufs[1]), kb_buffer_data(bufs[2])};
  double t = time_per_call(b, gemm_call, &g, err, sizeof err);
  if (t <= 0) {
    fprintf(stderr, "gemm n=%lld impl %d: %s\n", (long long)n, (int)impl, err);
    return -1.0;
  }
  return 2.0 * (double)n * (double)n * (double)n / t * 1e-12;
}

static void cell(double v) {
  if (v > 0)
    printf(" %.1f |", v);
  else
    printf(" n/a |");
}

static void ratio(double a, double b) {
  if (a > 0 && b > 0)
    printf(" %.2f |", a / b);
  else
    printf(" n/a |");
}

void bench_gemm(const struct bench *b) {
  static const int64_t sizes[] = {1024, 2048, 4096, 8192};
  int nsizes = b->quick ? 1 : 4;
  printf("\n### gemm (TFLOP/s, m = n = k, no transposes, alpha 1, beta 0)\n\n");
  if (b->blas == NULL) printf("cuBLAS baselines unavailable: %s\n\n", b->blas_error);
  printf("| m=n=k | kb_gemm f32 | cublasSgemm | kb / cuBLAS | cuBLAS TF32 (reference) "
         "| kb_gemm_bf16 | cublasGemmEx bf16 | kb / cuBLAS |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (int s = 0; s < nsizes; s++) {
    int64_t n = sizes[s];
    char err[512] = "";
    kb_buffer *f32[3] = {NULL, NULL, NULL}, *h16[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
      f32[i] = random_buffer(b, n * n, 4, (uint64_t)(10 * s + i + 1), err, sizeof err);
      h16[i] = random_buffer(b, n * n, 2, (uint64_t)(10 * s + i + 5), err, sizeof err);
      if (f32[i] == NULL || h16[i] == NULL) break;
    }
    if (f32[2] == NULL || h16[2] == NULL) {
      printf("| %lld | %s |||||||\n", (long long)n, err);
    } else {
      double kf = tflops(b, KB_F32, n, f32), bf = tflops(b, BLAS_SGEMM, n, f32), tf = tflops(b, BLAS_TF32, n, f32);
      double kh = tflops(b, KB_BF16, n, h16), bh = tflops(b, BLAS_BF16, n, h16);
      printf("| %lld |", (long long)n);
      cell(kf);
      cell(bf);
      ratio(kf, bf);
      cell(tf);
      cell(kh);
      cell(bh);
      ratio(kh, bh);
      printf("\n");
    }
    fflush(stdout);
    for (int i = 0; i < 3; i++) {
      kb_buffer_destroy(f32[i]);
      kb_buffer_destroy(h16[i]);
    }
  }
}
