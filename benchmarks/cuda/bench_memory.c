/*
 * bench_memory.c - memory-bound kernels as achieved bandwidth, and as a
 * fraction of a device-to-device cudaMemcpyAsync of the same tensor size.
 *
 * Bytes counted are the minimum traffic: every input read once, every
 * output written once (norm weights and biases included).  A copy of B
 * bytes moves 2B, so the copy's bandwidth is 2B / t.  Small sizes can sit
 * in L2 (50 MB on H100), which is why the copy is measured at each size.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

enum op { SILU, ADD, SOFTMAX, RMSNORM, LAYERNORM };
static const char *const op_names[] = {"silu", "add", "softmax", "rmsnorm", "layernorm"};

struct mem_arg {
  const struct bench *b;
  enum op op;
  int bf16;
  int64_t rows, cols; /* elementwise kernels: rows * cols elements */
  void *x, *y, *out, *w, *bias;
};

static int mem_call(void *p, char *err, size_t err_len) {
  struct mem_arg *m = (struct mem_arg *)p;
  kb_context *ctx = m->b->ctx;
  int64_t n = m->rows * m->cols;
  kb_status st = KB_STATUS_OK;
  typedef uint16_t h16;
  switch (m->op) {
    case SILU:
      st = m->bf16 ? kb_silu_bf16(ctx, n, (const h16 *)m->x, (h16 *)m->out)
                   : kb_silu(ctx, n, (const float *)m->x, (float *)m->out);
      break;
    case ADD:
      st = m->bf16 ? kb_add_bf16(ctx, n, (const h16 *)m->x, (const h16 *)m->y, (h16 *)m->out)
                   : kb_add(ctx, n, (const float *)m->x, (const float *)m->y, (float *)m->out);
      break;
    case SOFTMAX:
      st = m->bf16 ? kb_softmax_bf16(ctx, m->rows, m->cols, (const h16 *)m->x, (h16 *)m->out)
                   : kb_softmax(ctx, m->rows, m->cols, (const float *)m->x, (float *)m->out);
      break;
    case RMSNORM:
      st = m->bf16 ? kb_rmsnorm_bf16(ctx, m->rows, m->cols, (const h16 *)m->x, (const h16 *)m->w, 1e-5f, (h16 *)m->out)
                   : kb_rmsnorm(ctx, m->rows, m->cols, (const float *)m->x, (const float *)m->w, 1e-5f,
                                (float *)m->out);
      break;
    case LAYERNORM:
      st = m->bf16 ? kb_layernorm_bf16(ctx, m->rows, m->cols, (const h16 *)m->x, (const h16 *)m->w,
                                       (const h16 *)m->bias, 1e-5f, (h16 *)m->out)
                   : kb_layernorm(ctx, m->rows, m->cols, (const float *)m->x, (const float *)m->w,
                                  (const float *)m->bias, 1e-5f, (float *)m->out);
      break;
  }
  if (st == KB_STATUS_OK) return 0;
  char fn[48];
  snprintf(fn, sizeof fn, "kb_%s%s", op_names[m->op], m->bf16 ? "_bf16" : "");
  return kb_failed(m->b, fn, st, err, err_len);
}

struct copy_arg {
  const struct bench *b;
  void *dst, *src;
  size_t bytes;
};

static int copy_call(void *p, char *err, size_t err_len) {
  struct copy_arg *c = (struct copy_arg *)p;
  cudaError_t e = cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->b->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(c->b->stream);
  if (e == cudaSuccess) return 0;
  snprintf(err, err_len, "cudaMemcpyAsync: %s", cudaGetErrorString(e));
  return -1;
}

/* Minimum bytes the kernel must move. */
static double traffic(enum op op, int64_t rows, int64_t cols, int elem) {
  double n = (double)rows * (double)cols, e = (double)elem;
  switch (op) {
    case SILU:
    case SOFTMAX:
      return 2 * n * e;
    case ADD:
      return 3 * n * e;
    case RMSNORM:
      return (2 * n + (double)cols) * e;
    case LAYERNORM:
      return (2 * n + 2 * (double)cols) * e;
  }
  return 0;
}

static void one(const struct bench *b, enum op op, int bf16, int64_t rows, int64_t cols) {
  int elem = bf16 ? 2 : 4;
  int64_t n = rows * cols;
  char err[512] = "", shape[64];
  if (op == SILU || op == ADD)
    snprintf(shape, sizeof shape, "n = %lld", (long long)n);
  else
    snprintf(shape, sizeof shape, "%lld x %lld", (long long)rows, (long long)cols);
  /* Only add reads y, only the norms read weights and biases. */
  int64_t yn = op == ADD ? n : 1, wn = op == RMSNORM || op == LAYERNORM ? cols : 1;
  kb_buffer *x = random_buffer(b, n, elem, 1, err, sizeof err);
  kb_buffer *y = x ? random_buffer(b, yn, elem, 2, err, sizeof err) : NULL;
  kb_buffer *out = y ? random_buffer(b, n, elem, 3, err, sizeof err) : NULL;
  kb_buffer *w = out ? random_buffer(b, wn, elem, 4, err, sizeof err) : NULL;
  kb_buffer *bias = w ? random_buffer(b, wn, elem, 5, err, sizeof err) : NULL;
  printf("| %s | %s | %s |", op_names[op], bf16 ? "bf16" : "f32", shape);
  if (bias == NULL) {
    printf(" %s | | | |\n", err);
  } else {
    struct mem_arg m = {b, op, bf16, rows, cols, kb_buffer_data(x), kb_buffer_data(y), kb_buffer_data(out),
                        kb_buffer_data(w), kb_buffer_data(bias)};
    struct copy_arg c = {b, kb_buffer_data(out), kb_buffer_data(x), (size_t)n * (size_t)elem};
    double tk = time_per_call(b, mem_call, &m, err, sizeof err);
    if (tk <= 0) fprintf(stderr, "%s: %s\n", op_names[op], err);
    double tc = b->no_baselines ? -1 : time_per_call(b, copy_call, &c, err, sizeof err);
    if (tc <= 0 && !b->no_baselines) fprintf(stderr, "memcpy: %s\n", err);
    double kb_gbs = tk > 0 ? traffic(op, rows, cols, elem) / tk * 1e-9 : -1;
    double cp_gbs = tc > 0 ? 2.0 * (double)c.bytes / tc * 1e-9 : -1;
    if (kb_gbs > 0)
      printf(" %.0f | %.1f |", kb_gbs, tk * 1e6);
    else
      printf(" n/a | n/a |");
    if (cp_gbs > 0)
      printf(" %.0f |", cp_gbs);
    else
      printf(" n/a |");
    if (kb_gbs > 0 && cp_gbs > 0)
      printf(" %.2f |\n", kb_gbs / cp_gbs);
    else
      printf(" n/a |\n");
  }
  fflush(stdout);
  kb_buffer_destroy(x);
  kb_buffer_destroy(y);
  kb_buffer_destroy(out);
  kb_buffer_destroy(w);
  kb_buffer_destroy(bias);
}

void bench_memory(const struct bench *b) {
  /* Elementwise: 2^22 and 2^26 elements; row-wise: short and long rows. */
  static const int64_t shapes[2][2][2] = {{{1, 1 << 22}, {1, 1 << 26}}, {{4096, 1024}, {16384, 4096}}};
  int nsizes = b->quick ? 1 : 2;
  printf("\n### memory-bound kernels (GB/s of minimum traffic; copy = device-to-device cudaMemcpyAsync of one "
         "tensor of the same size, 2 x its bytes / time)\n\n");
  printf("| kernel | dtype | shape | kb GB/s | kb us/call | copy GB/s | kb / copy |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (int op = SILU; op <= LAYERNORM; op++)
    for (int bf16 = 0; bf16 <= 1; bf16++)
      for (int s = 0; s < nsizes; s++) {
        const int64_t *shape = shapes[op == SILU || op == ADD ? 0 : 1][s];
        one(b, (enum op)op, bf16, shape[0], shape[1]);
      }
}
