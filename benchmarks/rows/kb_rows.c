/* kb_rows.c - one kernelbridge row kernel or activation on one shape, best
 * of 5 rounds, in its own process (run.sh here runs it beside PyTorch's
 * torch_rows.py, each side in its own process).
 *   kb_rows KERNEL ROWS COLS CALLS THREADS
 * KERNEL: softmax log_softmax layernorm rmsnorm ce ce_backward gelu gelu_tanh
 * silu glu glu_fused rope copy, and softmax log_softmax layernorm rmsnorm
 * gelu gelu_tanh silu glu with a _bf16 or _f16 suffix (the 16-bit entry
 * points on the same values rounded to that type).
 * (rope: ROWS positions of COLS / 128 heads of 128; glu: SwiGLU with gate
 * and up as separate [ROWS, COLS] tensors; glu_fused: both in one
 * [ROWS, 2 COLS] tensor, as a fused gate_up layer writes them; copy: memcpy
 * of the same bytes.)  Prints ms per call and GB/s of the bytes the call
 * must move (x read, y written; glu: gate and up read; ce: the logits read;
 * ce_backward: the logits read, the gradient written).  Exits 1 when a call
 * fails, 2 on an unknown kernel. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernelbridge.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One call of the 16-bit kernel named k (bf: bfloat16, else f16); -1 for
 * an unknown name. */
static int call16(kb_context *ctx, const char *k, int bf, long rows, long cols, const uint16_t *x,
                  const uint16_t *u, const uint16_t *w, const uint16_t *b, uint16_t *y) {
  long n = rows * cols;
  if (!strcmp(k, "softmax")) return (bf ? kb_softmax_bf16 : kb_softmax_f16)(ctx, rows, cols, x, y);
  if (!strcmp(k, "log_softmax")) return (bf ? kb_log_softmax_bf16 : kb_log_softmax_f16)(ctx, rows, cols, x, y);
  if (!strcmp(k, "layernorm"))
    return (bf ? kb_layernorm_bf16 : kb_layernorm_f16)(ctx, rows, cols, x, w, b, 1e-5f, y);
  if (!strcmp(k, "rmsnorm")) return (bf ? kb_rmsnorm_bf16 : kb_rmsnorm_f16)(ctx, rows, cols, x, w, 1e-5f, y);
  if (!strcmp(k, "gelu")) return (bf ? kb_gelu_bf16 : kb_gelu_f16)(ctx, n, x, y);
  if (!strcmp(k, "gelu_tanh")) return (bf ? kb_gelu_tanh_bf16 : kb_gelu_tanh_f16)(ctx, n, x, y);
  if (!strcmp(k, "silu")) return (bf ? kb_silu_bf16 : kb_silu_f16)(ctx, n, x, y);
  if (!strcmp(k, "glu"))
    return (bf ? kb_glu_bf16 : kb_glu_f16)(ctx, rows, cols, x, cols, u, cols, KB_ACTIVATION_SILU, y);
  return -1;
}

/* One call of the float32 kernel named k; -1 for an unknown name. */
static int call32(kb_context *ctx, const char *k, long rows, long cols, const float *x, const float *u,
                  const float *h, const float *w, const float *b, const int32_t *t, float *l, float *y) {
  long n = rows * cols;
  float ml;
  if (!strcmp(k, "layernorm")) return kb_layernorm(ctx, rows, cols, x, w, b, 1e-5f, y);
  if (!strcmp(k, "rmsnorm")) return kb_rmsnorm(ctx, rows, cols, x, w, 1e-5f, y);
  if (!strcmp(k, "softmax")) return kb_softmax(ctx, rows, cols, x, y);
  if (!strcmp(k, "log_softmax")) return kb_log_softmax(ctx, rows, cols, x, y);
  if (!strcmp(k, "ce")) return kb_cross_entropy(ctx, rows, cols, x, t, -100, l, &ml);
  if (!strcmp(k, "ce_backward")) return kb_cross_entropy_backward(ctx, rows, cols, x, t, -100, 1.0f, y);
  if (!strcmp(k, "gelu")) return kb_gelu(ctx, n, x, y);
  if (!strcmp(k, "gelu_tanh")) return kb_gelu_tanh(ctx, n, x, y);
  if (!strcmp(k, "silu")) return kb_silu(ctx, n, x, y);
  if (!strcmp(k, "glu")) return kb_glu(ctx, rows, cols, x, cols, u, cols, KB_ACTIVATION_SILU, y);
  if (!strcmp(k, "glu_fused")) return kb_glu(ctx, rows, cols, h, 2 * cols, h + cols, 2 * cols, KB_ACTIVATION_SILU, y);
  if (!strcmp(k, "rope")) return kb_rope(ctx, rows, cols / 128, 128, x, t, 10000.0, y);
  if (!strcmp(k, "copy")) {
    memcpy(y, x, (size_t)n * sizeof(float));
    return 0;
  }
  return -1;
}

int main(int argc, char **argv) {
  const char *k = argc > 1 ? argv[1] : "layernorm";
  long rows = argc > 2 ? atol(argv[2]) : 32, cols = argc > 3 ? atol(argv[3]) : 1024;
  int reps = argc > 4 ? atoi(argv[4]) : 2000, th = argc > 5 ? atoi(argv[5]) : 1;
  if (rows < 1 || cols < 1 || reps < 1 || th < 1) {
    fprintf(stderr, "usage: kb_rows KERNEL ROWS COLS CALLS THREADS\n");
    return 2;
  }
  kb_context *ctx;
  if (kb_context_create(KB_BACKEND_CPU, th, &ctx) != KB_STATUS_OK) return 1;
  /* 16-bit variants: k16 is the kernel's name without the suffix. */
  char k16[64];
  snprintf(k16, sizeof k16, "%s", k);
  char *suf = strrchr(k16, '_');
  int bf = suf && !strcmp(suf, "_bf16"), hf = suf && !strcmp(suf, "_f16");
  if (bf || hf) *suf = 0;

  long n = rows * cols;
  float *x = malloc((size_t)n * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
  float *u = malloc((size_t)n * sizeof(float)), *h = malloc((size_t)(2 * n) * sizeof(float));
  float *w = malloc((size_t)cols * sizeof(float)), *b = malloc((size_t)cols * sizeof(float));
  float *l = malloc((size_t)rows * sizeof(float));
  int32_t *t = malloc((size_t)rows * sizeof(int32_t));
  uint16_t *hx = malloc((size_t)n * 2), *hy = malloc((size_t)n * 2), *hu = malloc((size_t)n * 2);
  uint16_t *hw = malloc((size_t)cols * 2), *hb = malloc((size_t)cols * 2);
  srand(1);
  for (long i = 0; i < n; i++) {
    x[i] = (float)((rand() / (double)RAND_MAX - 0.5) * 8);
    u[i] = (float)(i % 7) - 3.0f;
  }
  for (long i = 0; i < 2 * n; i++) h[i] = (float)(i % 11) - 5.0f;
  for (long i = 0; i < cols; i++) {
    w[i] = 1.0f + 0.1f * (float)i / (float)cols;
    b[i] = 0.01f * (float)i / (float)cols;
  }
  for (long r = 0; r < rows; r++) t[r] = (int32_t)(r % cols);
  /* The same values rounded to the 16-bit type by the library itself. */
  kb_dtype hdt = bf ? KB_DTYPE_BF16 : KB_DTYPE_F16;
  if (kb_quantize(ctx, hdt, rows, cols, x, hx, 2 * n) || kb_quantize(ctx, hdt, rows, cols, u, hu, 2 * n) ||
      kb_quantize(ctx, hdt, 1, cols, w, hw, 2 * cols) || kb_quantize(ctx, hdt, 1, cols, b, hb, 2 * cols)) {
    printf("err %s\n", kb_context_last_error(ctx));
    return 1;
  }

  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (int i = 0; i < reps; i++) {
      int s = bf || hf ? call16(ctx, k16, bf, rows, cols, hx, hu, hw, hb, hy)
                       : call32(ctx, k, rows, cols, x, u, h, w, b, t, l, y);
      if (s < 0) {
        fprintf(stderr, "kb_rows: unknown kernel %s\n", k);
        return 2;
      }
      if (s != 0) {
        printf("err %d %s\n", s, kb_context_last_error(ctx));
        return 1;
      }
    }
    double dt = (now() - t0) / reps;
    if (dt < best) best = dt;
  }
  double per = !strcmp(k, "ce") ? 4.0 : !strncmp(k, "glu", 3) ? 12.0 : 8.0;
  printf("%s %ldx%ld th%d: %.3f ms, %.2f GB/s\n", k, rows, cols, th, best * 1e3,
         per * (double)n / best / 1e9 / (bf || hf ? 2 : 1));
  kb_context_destroy(ctx);
  void *bufs[] = {x, y, u, h, w, b, l, t, hx, hy, hu, hw, hb};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
  return 0;
}
