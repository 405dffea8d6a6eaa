/*
 * bare_launch.cu - the baseline of the GPU call-overhead benchmark: what a
 * tiny kernel costs when launched by hand, against the same tiny call made
 * through kernelbridge from C.
 *
 *   c-bare-launch-sync  a silu kernel on 16 floats launched with <<<>>> on a
 *                       non-blocking stream, then cudaStreamSynchronize
 *   c-kb_silu           kb_silu(ctx, 16, x, y) on a CUDA context with x and y
 *                       in kb_buffers on device 0 (kb_silu returns when its
 *                       outputs are ready, so it is also launch + wait)
 *
 * Both sides run on device 0, warm up first, then take turns: each run times
 * ITERS calls of one side, RUNS runs each, interleaved so that clock or load
 * changes hit both alike.  Prints one line per side:
 *   overhead SIDE MIN_NS MEDIAN_NS        (ns per call over the runs)
 * Without a usable GPU (no driver, no device, no CUDA backend for
 * kernelbridge) it prints "SKIPPED: reason" and exits 0.
 *
 *   bare_launch [RUNS [ITERS]]        (default 7 runs of 20000 calls)
 *
 * The kernelbridge backend is found through $KB_CUDA_LIBRARY
 * (libkernelbridge_cuda.so), as for every other caller.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernelbridge.h"

#define N 16
#define MAX_RUNS 100

/* The same function as kb_silu, so that the two sides differ only in how the
 * kernel is reached, not in what it computes. */
__global__ void silu16(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Everything one side needs; a side is one call of `call`. */
struct side {
  const char *name;
  int (*call)(struct side *);
  cudaStream_t stream;   /* bare side */
  float *dx, *dy;        /* bare side: cudaMalloc'ed */
  kb_context *ctx;       /* kernelbridge side */
  float *kx, *ky;        /* kernelbridge side: kb_buffer_data of device buffers */
  double ns[MAX_RUNS];
};

static int bare_call(struct side *s) {
  silu16<<<1, 32, 0, s->stream>>>(s->dx, s->dy, N);
  /* cudaGetLastError catches a failed launch; the synchronize reports a
   * fault while running.  Both are part of what a careful caller pays. */
  if (cudaGetLastError() != cudaSuccess) return 1;
  return cudaStreamSynchronize(s->stream) != cudaSuccess;
}

static int kb_call(struct side *s) { return kb_silu(s->ctx, N, s->kx, s->ky) != KB_STATUS_OK; }

/* ns per call of `iters` calls; negative when a call failed. */
static double time_side(struct side *s, long iters) {
  double t0 = now_ns();
  for (long k = 0; k < iters; k++)
    if (s->call(s)) return -1.0;
  return (now_ns() - t0) / (double)iters;
}

static int setup_bare(struct side *s, const float *host) {
  s->name = "c-bare-launch-sync";
  s->call = bare_call;
  /* kernelbridge's contexts also own a non-blocking stream (docs/cuda.md). */
  if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  if (cudaMalloc((void **)&s->dx, N * sizeof(float)) != cudaSuccess) return 1;
  if (cudaMalloc((void **)&s->dy, N * sizeof(float)) != cudaSuccess) return 1;
  return cudaMemcpy(s->dx, host, N * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess;
}

/* Returns 0 when ready, 1 on failure, 2 when kernelbridge has no CUDA here. */
static int setup_kb(struct side *s, const float *host, kb_buffer **bx, kb_buffer **by) {
  s->name = "c-kb_silu";
  s->call = kb_call;
  if (kb_context_create_cuda(0, &s->ctx) != KB_STATUS_OK) {
    printf("SKIPPED: c-kb_silu: %s\n", kb_last_error());
    return 2;
  }
  if (kb_buffer_create(s->ctx, N * sizeof(float), bx) != KB_STATUS_OK ||
      kb_buffer_create(s->ctx, N * sizeof(float), by) != KB_STATUS_OK ||
      kb_buffer_upload(s->ctx, *bx, 0, N * sizeof(float), host) != KB_STATUS_OK) {
    fprintf(stderr, "bare_launch: %s\n", kb_context_last_error(s->ctx));
    return 1;
  }
  s->kx = (float *)kb_buffer_data(*bx);
  s->ky = (float *)kb_buffer_data(*by);
  return 0;
}

/* The two sides must compute the same thing, or the comparison is moot. */
static int same_results(struct side *bare, struct side *kb) {
  float a[N], b[N];
  if (cudaMemcpy(a, bare->dy, sizeof a, cudaMemcpyDeviceToHost) != cudaSuccess) return 0;
  if (cudaMemcpy(b, kb->ky, sizeof b, cudaMemcpyDeviceToHost) != cudaSuccess) return 0;
  for (int i = 0; i < N; i++) {
    float d = a[i] - b[i];
    if (d < 0) d = -d;
    if (d > 1e-5f * (1.0f + (a[i] < 0 ? -a[i] : a[i]))) {
      fprintf(stderr, "bare_launch: element %d: bare %g, kb_silu %g\n", i, a[i], b[i]);
      return 0;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  long iters = argc > 2 ? atol(argv[2]) : 20000L;
  if (runs < 1 || runs > MAX_RUNS || iters < 1) {
    fprintf(stderr, "usage: bare_launch [RUNS (1..%d) [ITERS]]\n", MAX_RUNS);
    return 2;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count < 1) {
    printf("SKIPPED: c-bare-launch-sync, c-kb_silu: no usable CUDA device (%s)\n",
           err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount found none");
    return 0;
  }
  float host[N];
  for (int i = 0; i < N; i++) host[i] = (float)(i - 8) * 0.37f;

  struct side sides[2] = {};
  kb_buffer *bx = NULL, *by = NULL;
  if (cudaSetDevice(0) != cudaSuccess || setup_bare(&sides[0], host)) {
    fprintf(stderr, "bare_launch: CUDA setup failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  int nsides = 2;
  switch (setup_kb(&sides[1], host, &bx, &by)) {
    case 0: break;
    case 2: nsides = 1; break; /* the baseline alone still says something */
    default: return 1;
  }

  /* Warm-up: module loading, first-launch costs, clocks ramping up. */
  for (int i = 0; i < nsides; i++)
    if (time_side(&sides[i], iters / 4 + 1) < 0) {
      fprintf(stderr, "bare_launch: %s failed in warm-up\n", sides[i].name);
      return 1;
    }
  if (nsides == 2 && !same_results(&sides[0], &sides[1])) return 1;
  for (int r = 0; r < runs; r++)
    for (int k = 0; k < nsides; k++) {
      struct side *s = &sides[(r + k) % nsides]; /* alternate which goes first */
      if ((s->ns[r] = time_side(s, iters)) < 0) {
        fprintf(stderr, "bare_launch: %s failed\n", s->name);
        return 1;
      }
    }
  for (int i = 0; i < nsides; i++) {
    qsort(sides[i].ns, (size_t)runs, sizeof(double), cmp_double);
    printf("overhead %s %.1f %.1f\n", sides[i].name, sides[i].ns[0], sides[i].ns[runs / 2]);
  }
  kb_buffer_destroy(bx);
  kb_buffer_destroy(by);
  kb_context_destroy(sides[1].ctx);
  cudaFree(sides[0].dx);
  cudaFree(sides[0].dy);
  cudaStreamDestroy(sides[0].stream);
  return 0;
}
