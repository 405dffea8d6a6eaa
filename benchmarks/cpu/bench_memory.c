/*
 * bench_memory.c - the memory-bound kernels: GB/s of the bytes each must
 * move (every input read once, every output written once; an in-out tensor
 * counts twice) against a copy moving the same number of bytes, timed in
 * the same rounds; and ns per call at a small size.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum kind { K_UNARY, K_BINARY, K_SCALE, K_BIAS, K_ROW, K_RMSNORM, K_LAYERNORM, K_CE, K_CE_BWD, K_ARGMAX, K_ADAMW, K_ROPE, K_EMBED,
           K_GLU, K_ADDNORM };
enum dtype { F32, BF16, F16 };

typedef void (*any_fn)(void);

/* The public signatures, by kind, for float32 and for the 16-bit types. */
typedef kb_status (*unary32)(kb_context *, int64_t, const float *, float *);
typedef kb_status (*unary16)(kb_context *, int64_t, const uint16_t *, uint16_t *);
typedef kb_status (*binary32)(kb_context *, int64_t, const float *, const float *, float *);
typedef kb_status (*binary16)(kb_context *, int64_t, const uint16_t *, const uint16_t *, uint16_t *);
typedef kb_status (*scale32)(kb_context *, int64_t, float, const float *, float *);
typedef kb_status (*scale16)(kb_context *, int64_t, float, const uint16_t *, uint16_t *);
typedef kb_status (*bias32)(kb_context *, int64_t, int64_t, const float *, const float *, float *);
typedef kb_status (*bias16)(kb_context *, int64_t, int64_t, const uint16_t *, const uint16_t *, uint16_t *);
typedef kb_status (*row32)(kb_context *, int64_t, int64_t, const float *, float *);
typedef kb_status (*row16)(kb_context *, int64_t, int64_t, const uint16_t *, uint16_t *);
typedef kb_status (*rms32)(kb_context *, int64_t, int64_t, const float *, const float *, float, float *);
typedef kb_status (*rms16)(kb_context *, int64_t, int64_t, const uint16_t *, const uint16_t *, float, uint16_t *);
typedef kb_status (*glu32)(kb_context *, int64_t, int64_t, const float *, int64_t, const float *, int64_t, kb_activation,
                           float *);
typedef kb_status (*glu16)(kb_context *, int64_t, int64_t, const uint16_t *, int64_t, const uint16_t *, int64_t,
                           kb_activation, uint16_t *);
typedef kb_status (*addnorm32)(kb_context *, int64_t, int64_t, const float *, float *, const float *, float, float *);
typedef kb_status (*addnorm16)(kb_context *, int64_t, int64_t, const uint16_t *, uint16_t *, const uint16_t *, float,
                               uint16_t *);
typedef kb_status (*ln32)(kb_context *, int64_t, int64_t, const float *, const float *, const float *, float, float *);
typedef kb_status (*ln16)(kb_context *, int64_t, int64_t, const uint16_t *, const uint16_t *, const uint16_t *, float,
                          uint16_t *);

struct memop {
  const char *name;
  enum kind kind;
  enum dtype dt;
  any_fn fn;
};

#define OP(name, kind, fn) {name, kind, F32, (any_fn)fn}, \
                           {name, kind, BF16, (any_fn)fn##_bf16}, \
                           {name, kind, F16, (any_fn)fn##_f16}
#define OP32(name, kind, fn) {name, kind, F32, (any_fn)fn}

static const struct memop ops[] = {
    OP("silu", K_UNARY, kb_silu),
    OP("gelu", K_UNARY, kb_gelu),
    OP("gelu_tanh", K_UNARY, kb_gelu_tanh),
    OP("add", K_BINARY, kb_add),
    OP("mul", K_BINARY, kb_mul),
    OP("scale", K_SCALE, kb_scale),
    OP("add_bias", K_BIAS, kb_add_bias),
    OP("softmax", K_ROW, kb_softmax),
    OP("log_softmax", K_ROW, kb_log_softmax),
    OP("rmsnorm", K_RMSNORM, kb_rmsnorm),
    OP("layernorm", K_LAYERNORM, kb_layernorm),
    OP32("cross_entropy", K_CE, kb_cross_entropy),
    OP32("cross_entropy_backward", K_CE_BWD, kb_cross_entropy_backward),
    OP32("argmax", K_ARGMAX, kb_argmax),
    OP32("adamw_step", K_ADAMW, kb_adamw_step),
    OP32("rope", K_ROPE, kb_rope),
    OP32("embedding", K_EMBED, kb_embedding),
    /* SwiGLU on the [rows, 2 * ffn] output of a fused gate_up layer (gate
       and up strided inside it), and the fused residual add + RMSNorm. */
    OP("glu", K_GLU, kb_glu),
    OP("add_rmsnorm", K_ADDNORM, kb_add_rmsnorm),
};

static const char *const dtype_names[3] = {"f32", "bf16", "f16"};

/* Shape of one call: d[0..2] by kind (n; rows, cols; seq, heads, head_dim;
 * n_ids, vocab, dim). */
struct shape {
  int64_t d[3];
};

/* LARGE: from memory; SMALL: call overhead; CACHED: every tensor in the
 * L2 cache (a few hundred KiB moved per call), where memory costs nothing. */
enum size_class { LARGE, SMALL, CACHED };

static struct shape shape_of(enum kind k, enum size_class sz) {
  struct shape s = {{0, 0, 0}};
  int smoke = bench_opt.smoke, quick = bench_opt.quick;
  if (sz == CACHED && !smoke) {
    static const struct shape cached[] = {
        [K_UNARY] = {{16384, 0, 0}},  [K_BINARY] = {{16384, 0, 0}}, [K_SCALE] = {{16384, 0, 0}},
        [K_BIAS] = {{32, 1024, 0}},   [K_ROW] = {{32, 1024, 0}},    [K_RMSNORM] = {{32, 1024, 0}},
        [K_LAYERNORM] = {{32, 1024, 0}}, [K_CE] = {{2, 32000, 0}}, [K_CE_BWD] = {{2, 32000, 0}},
        [K_ARGMAX] = {{2, 32000, 0}}, [K_ADAMW] = {{16384, 0, 0}},  [K_ROPE] = {{32, 16, 64}},
        [K_EMBED] = {{32, 32000, 1024}},
        [K_GLU] = {{8, 1024, 0}},     [K_ADDNORM] = {{16, 1024, 0}},
    };
    return cached[k];
  }
  if (sz == CACHED) sz = SMALL; /* the smoke test: any shape will do */
  switch (k) {
    case K_UNARY:
    case K_BINARY:
    case K_SCALE:
    case K_ADAMW:
      s.d[0] = sz == SMALL ? 16 : smoke ? 1031 : quick ? (1 << 20) : (16 << 20);
      break;
    case K_BIAS:
    case K_ROW:
    case K_RMSNORM:
    case K_LAYERNORM:
      s.d[0] = sz == SMALL ? 4 : smoke ? 3 : quick ? 256 : 4096;
      s.d[1] = sz == SMALL ? 64 : smoke ? 37 : 1024;
      break;
    case K_CE:
    case K_CE_BWD:
    case K_ARGMAX:
      s.d[0] = sz == SMALL ? 4 : smoke ? 3 : quick ? 8 : 64;
      s.d[1] = sz == SMALL ? 64 : smoke ? 101 : 32000;
      break;
    case K_ROPE:
      s.d[0] = sz == SMALL ? 4 : smoke ? 3 : quick ? 256 : 4096;
      s.d[1] = sz == SMALL ? 1 : smoke ? 2 : 16;
      s.d[2] = sz == SMALL ? 64 : smoke ? 10 : 64;
      break;
    case K_EMBED:
      s.d[0] = sz == SMALL ? 4 : smoke ? 5 : quick ? 256 : 4096;
      s.d[1] = sz == SMALL ? 64 : smoke ? 50 : quick ? 8000 : 32000;
      s.d[2] = sz == SMALL ? 64 : smoke ? 12 : 1024;
      break;
    case K_GLU: /* rows x ffn (Llama-7B's 11008) */
      s.d[0] = sz == SMALL ? 4 : smoke ? 3 : quick ? 32 : 512;
      s.d[1] = sz == SMALL ? 64 : smoke ? 37 : 11008;
      break;
    case K_ADDNORM: /* rows x hidden (4096) */
      s.d[0] = sz == SMALL ? 4 : smoke ? 3 : quick ? 64 : 1024;
      s.d[1] = sz == SMALL ? 64 : smoke ? 37 : 4096;
      break;
  }
  return s;
}

/* The shape of op's call: shape_of's, except that a 16-bit row of the
 * large table has twice the float32 row's first dimension (elements or
 * rows), so that it moves the same bytes and, like the float32 row, comes
 * from memory: at the float32 element count the 16-bit tensors of several
 * rows fit a 32 MB last-level cache, and kernel and copy then ran from it. */
static struct shape shape_for(const struct memop *op, enum size_class sz) {
  struct shape s = shape_of(op->kind, sz);
  if (sz == LARGE && op->dt != F32) s.d[0] *= 2;
  return s;
}

/* Elements of the main tensor (per-element comparisons). */
static double elements(enum kind k, struct shape s) {
  switch (k) {
    case K_UNARY:
    case K_BINARY:
    case K_SCALE:
    case K_ADAMW:
      return (double)s.d[0];
    case K_ROPE:
      return (double)s.d[0] * (double)s.d[1] * (double)s.d[2];
    case K_EMBED:
      return (double)s.d[0] * (double)s.d[2];
    default:
      return (double)s.d[0] * (double)s.d[1];
  }
}

/* Bytes the kernel must move. */
static double traffic(enum kind k, enum dtype dt, struct shape s) {
  double e = dt == F32 ? 4 : 2, n = elements(k, s);
  switch (k) {
    case K_UNARY:
    case K_SCALE:
    case K_ROW:
      return 2 * n * e;
    case K_BINARY:
      return 3 * n * e;
    case K_BIAS:
    case K_RMSNORM:
      return 2 * n * e + (double)s.d[1] * e;
    case K_LAYERNORM:
      return 2 * n * e + 2 * (double)s.d[1] * e;
    case K_GLU: /* gate and up read, y written */
      return 3 * n * e;
    case K_ADDNORM: /* x read, residual read and written, y written, weight */
      return 4 * n * e + (double)s.d[1] * e;
    case K_CE: /* logits, targets, losses, the mean */
      return 4 * n + 8 * (double)s.d[0] + 4;
    case K_CE_BWD: /* logits, targets, dlogits */
      return 8 * n + 4 * (double)s.d[0];
    case K_ARGMAX:
      return 4 * n + 4 * (double)s.d[0];
    case K_ADAMW: /* params, m, v in and out; grads in */
      return 7 * 4 * n;
    case K_ROPE:
      return 8 * n + 4 * (double)s.d[0];
    case K_EMBED: /* ids, the rows looked up, the output */
      return 4 * (double)s.d[0] + 8 * n;
  }
  return 0;
}

/* Buffers, allocated once for the largest shape. */
static struct {
  float *f[4];       /* f32 tensors */
  uint16_t *h[3];    /* 16-bit tensors (bf16 or f16 bits: random values of that type) */
  uint16_t *hf[3];
  float *w[2];       /* weight, bias (f32) */
  uint16_t *wb[2], *wh[2];
  int32_t *targets, *positions, *ids, *out_ids;
  float *table, *mean;
  char *copy_src, *copy_dst;
  size_t copy_bytes;
} buf;

struct mem_arg {
  const struct memop *op;
  struct shape s;
  kb_context *ctx;
  int threads;       /* for the copy */
  double copy_total; /* bytes the copy side moves (read + write) */
};

static int run_op(void *p) {
  const struct mem_arg *x = (const struct mem_arg *)p;
  const struct memop *op = x->op;
  const int64_t *d = x->s.d;
  kb_context *ctx = x->ctx;
  bool f32 = op->dt == F32;
  uint16_t **h = op->dt == BF16 ? buf.h : buf.hf;
  uint16_t **w16 = op->dt == BF16 ? buf.wb : buf.wh;
  kb_status st = KB_STATUS_INTERNAL;
  switch (op->kind) {
    case K_UNARY:
      st = f32 ? ((unary32)op->fn)(ctx, d[0], buf.f[0], buf.f[2]) : ((unary16)op->fn)(ctx, d[0], h[0], h[2]);
      break;
    case K_BINARY:
      st = f32 ? ((binary32)op->fn)(ctx, d[0], buf.f[0], buf.f[1], buf.f[2])
               : ((binary16)op->fn)(ctx, d[0], h[0], h[1], h[2]);
      break;
    case K_SCALE:
      st = f32 ? ((scale32)op->fn)(ctx, d[0], 0.5f, buf.f[0], buf.f[2]) : ((scale16)op->fn)(ctx, d[0], 0.5f, h[0], h[2]);
      break;
    case K_BIAS:
      st = f32 ? ((bias32)op->fn)(ctx, d[0], d[1], buf.f[0], buf.w[1], buf.f[2])
               : ((bias16)op->fn)(ctx, d[0], d[1], h[0], w16[1], h[2]);
      break;
    case K_ROW:
      st = f32 ? ((row32)op->fn)(ctx, d[0], d[1], buf.f[0], buf.f[2]) : ((row16)op->fn)(ctx, d[0], d[1], h[0], h[2]);
      break;
    case K_RMSNORM:
      st = f32 ? ((rms32)op->fn)(ctx, d[0], d[1], buf.f[0], buf.w[0], 1e-5f, buf.f[2])
               : ((rms16)op->fn)(ctx, d[0], d[1], h[0], w16[0], 1e-5f, h[2]);
      break;
    case K_LAYERNORM:
      st = f32 ? ((ln32)op->fn)(ctx, d[0], d[1], buf.f[0], buf.w[0], buf.w[1], 1e-5f, buf.f[2])
               : ((ln16)op->fn)(ctx, d[0], d[1], h[0], w16[0], w16[1], 1e-5f, h[2]);
      break;
    case K_CE:
      st = kb_cross_entropy(ctx, d[0], d[1], buf.f[0], buf.targets, -100, buf.f[2], buf.mean);
      break;
    case K_CE_BWD:
      st = kb_cross_entropy_backward(ctx, d[0], d[1], buf.f[0], buf.targets, -100, 1.0f, buf.f[2]);
      break;
    case K_ARGMAX:
      st = kb_argmax(ctx, d[0], d[1], buf.f[0], buf.out_ids);
      break;
    case K_ADAMW:
      st = kb_adamw_step(ctx, d[0], buf.f[1], buf.f[0], buf.f[2], buf.f[3], 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
      break;
    case K_ROPE:
      st = kb_rope(ctx, d[0], d[1], d[2], buf.f[0], buf.positions, 10000.0f, buf.f[2]);
      break;
    case K_EMBED:
      st = kb_embedding(ctx, d[0], d[1], d[2], buf.ids, buf.table, buf.f[2]);
      break;
    case K_GLU: /* h = buffer 0 as [rows, 2 * ffn]: gate = h, up = h + ffn */
      st = f32 ? ((glu32)op->fn)(ctx, d[0], d[1], buf.f[0], 2 * d[1], buf.f[0] + d[1], 2 * d[1], KB_ACTIVATION_SILU,
                                 buf.f[2])
               : ((glu16)op->fn)(ctx, d[0], d[1], h[0], 2 * d[1], h[0] + d[1], 2 * d[1], KB_ACTIVATION_SILU, h[2]);
      break;
    case K_ADDNORM: /* the residual (buffer 1) grows by x each call: harmless */
      st = f32 ? ((addnorm32)op->fn)(ctx, d[0], d[1], buf.f[0], buf.f[1], buf.w[0], 1e-5f, buf.f[2])
               : ((addnorm16)op->fn)(ctx, d[0], d[1], h[0], h[1], w16[0], 1e-5f, h[2]);
      break;
  }
  if (st != KB_STATUS_OK) {
    char name[64];
    snprintf(name, sizeof name, "kb_%s%s%s", op->name, f32 ? "" : "_", f32 ? "" : dtype_names[op->dt]);
    return kb_fail(ctx, name, st);
  }
  return 0;
}

/* The copy loop over copy_total / 2 bytes through the copy buffers. */
static int run_copy(void *p) {
  const struct mem_arg *x = (const struct mem_arg *)p;
  size_t left = (size_t)(x->copy_total / 2);
  while (left > 0) {
    size_t len = left < buf.copy_bytes ? left : buf.copy_bytes;
    parallel_copy(buf.copy_dst, buf.copy_src, len, x->threads, 0);
    left -= len;
  }
  return 0;
}

static void allocate(void) {
  size_t nmax = 0;
  for (int k = K_UNARY; k <= K_ADDNORM; k++) {
    double n = elements((enum kind)k, shape_of((enum kind)k, LARGE));
    if (k == K_GLU) n *= 2; /* h holds gate and up */
    if ((size_t)n > nmax) nmax = (size_t)n;
  }
  if (nmax < 4096) nmax = 4096; /* the small shapes */
  for (int i = 0; i < 4; i++) buf.f[i] = (float *)bench_alloc(nmax * 4);
  /* 16-bit tensors: twice the elements (shape_for), the float32 bytes. */
  for (int i = 0; i < 3; i++) {
    buf.h[i] = (uint16_t *)bench_alloc(nmax * 4);
    buf.hf[i] = (uint16_t *)bench_alloc(nmax * 4);
  }
  fill_uniform(buf.f[0], nmax, -4, 4, 1);
  fill_uniform(buf.f[1], nmax, -1, 1, 2);
  fill_uniform(buf.f[2], nmax, -0.01f, 0.01f, 3);
  fill_uniform(buf.f[3], nmax, 0, 1e-4f, 4); /* adamw's v: >= 0 */
  for (int i = 0; i < 3; i++) {
    fill_uniform_bf16(buf.h[i], 2 * nmax, -4, 4, 5 + (uint64_t)i);
    fill_uniform_f16(buf.hf[i], 2 * nmax, -4, 4, 8 + (uint64_t)i);
  }
  size_t wmax = 65536;
  for (int i = 0; i < 2; i++) {
    buf.w[i] = (float *)bench_alloc(wmax * 4);
    buf.wb[i] = (uint16_t *)bench_alloc(wmax * 2);
    buf.wh[i] = (uint16_t *)bench_alloc(wmax * 2);
    fill_uniform(buf.w[i], wmax, 0.5f, 1.5f, 20 + (uint64_t)i);
    fill_uniform_bf16(buf.wb[i], wmax, 0.5f, 1.5f, 22 + (uint64_t)i);
    fill_uniform_f16(buf.wh[i], wmax, 0.5f, 1.5f, 24 + (uint64_t)i);
  }
  buf.targets = (int32_t *)bench_alloc(wmax * 4);
  buf.positions = (int32_t *)bench_alloc(wmax * 4);
  buf.ids = (int32_t *)bench_alloc(wmax * 4);
  buf.out_ids = (int32_t *)bench_alloc(wmax * 4);
  buf.mean = (float *)bench_alloc(64);
  /* targets < the smallest class count used (64); ids < the smallest vocab (50). */
  fill_ids(buf.targets, wmax, 50, 30);
  for (size_t i = 0; i < wmax; i++) buf.positions[i] = (int32_t)i;
  /* The table is shared by every size class: the largest of them (with
   * --quick the large class is smaller than the in-cache one). */
  size_t table = 64 * 64;
  for (int sz = LARGE; sz <= CACHED; sz++) {
    struct shape e = shape_of(K_EMBED, (enum size_class)sz);
    if ((size_t)(e.d[1] * e.d[2]) > table) table = (size_t)(e.d[1] * e.d[2]);
  }
  buf.table = (float *)bench_alloc(table * 4);
  fill_uniform(buf.table, table, -1, 1, 31);
  buf.copy_bytes = bench_opt.smoke ? ((size_t)1 << 20) : bench_opt.quick ? ((size_t)32 << 20) : ((size_t)64 << 20);
  buf.copy_src = (char *)bench_alloc(buf.copy_bytes);
  buf.copy_dst = (char *)bench_alloc(buf.copy_bytes);
  memset(buf.copy_src, 3, buf.copy_bytes);
}

static void release(void) {
  for (int i = 0; i < 4; i++) free(buf.f[i]);
  for (int i = 0; i < 3; i++) {
    free(buf.h[i]);
    free(buf.hf[i]);
  }
  for (int i = 0; i < 2; i++) {
    free(buf.w[i]);
    free(buf.wb[i]);
    free(buf.wh[i]);
  }
  free(buf.targets);
  free(buf.positions);
  free(buf.ids);
  free(buf.out_ids);
  free(buf.mean);
  free(buf.table);
  free(buf.copy_src);
  free(buf.copy_dst);
  memset(&buf, 0, sizeof buf);
}

static void shape_text(char *out, size_t len, enum kind k, struct shape s) {
  switch (k) {
    case K_UNARY:
    case K_BINARY:
    case K_SCALE:
    case K_ADAMW:
      if (s.d[0] >= (1 << 20) && s.d[0] % (1 << 20) == 0)
        snprintf(out, len, "%lldM", (long long)(s.d[0] >> 20));
      else
        snprintf(out, len, "%lld", (long long)s.d[0]);
      break;
    case K_ROPE:
      snprintf(out, len, "%lld×%lld×%lld", (long long)s.d[0], (long long)s.d[1], (long long)s.d[2]);
      break;
    case K_EMBED:
      snprintf(out, len, "%lld ids × %lld of %lld", (long long)s.d[0], (long long)s.d[2], (long long)s.d[1]);
      break;
    default:
      snprintf(out, len, "%lld×%lld", (long long)s.d[0], (long long)s.d[1]);
      break;
  }
}

void bench_memory(void) {
  size_t nops = sizeof ops / sizeof ops[0];
  int nt = bench_opt.threads > 1 ? 2 : 1;
  allocate();

  printf("### memory-bound kernels, large sizes\n\n");
  printf("GB/s of the bytes each kernel must move (inputs read once, outputs written once, in-out tensors twice).  "
         "copy: the copy loop (see machine limits) moving the same bytes (read + write) on the same thread count, timed in the same rounds; "
         "%% of copy = kb GB/s ÷ copy GB/s.  16-bit rows have twice the float32 row's first dimension (the same "
         "bytes, from memory as well); time ÷ f32: their time per element ÷ the f32 kernel's (all threads).\n\n");
  if (nt == 2) {
    printf("| kernel | dtype | shape | MB moved | kb GB/s (%d thr) | copy GB/s | %% of copy | kb GB/s (1 thr) | copy GB/s "
           "| %% of copy | time ÷ f32 |\n",
           bench_opt.threads);
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  } else {
    printf("| kernel | dtype | shape | MB moved | kb GB/s (1 thr) | copy GB/s | %% of copy | time ÷ f32 |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
  }
  double f32_time = 0; /* per element */
  double *from_memory = (double *)calloc(nops, sizeof(double)); /* kb GB/s on 1 thread, large */
  /* The embedding ids lie below the vocabulary of each size class. */
  fill_ids(buf.ids, 65536, (int32_t)shape_of(K_EMBED, LARGE).d[1], 32);
  for (size_t i = 0; i < nops; i++) {
    const struct memop *op = &ops[i];
    struct shape s = shape_for(op, LARGE);
    double bytes = traffic(op->kind, op->dt, s), per_elem = 1 / elements(op->kind, s);
    struct mem_arg all = {op, s, ctx_all, bench_opt.threads, bytes};
    struct mem_arg one = {op, s, ctx_one, 1, bytes};
    struct side sides[4] = {{"kb", run_op, &all, 0, 0}, {"copy", run_copy, &all, 0, 0},
                            {"kb (1 thread)", run_op, &one, 0, 0}, {"copy (1 thread)", run_copy, &one, 0, 0}};
    char label[96];
    snprintf(label, sizeof label, "%s %s", op->name, dtype_names[op->dt]);
    sides[0].label = label;
    measure(sides, nt == 2 ? 4 : 2);
    if (nt == 1) {
      sides[2] = sides[0];
      sides[3] = sides[1];
    }
    if (op->dt == F32) f32_time = sides[0].med * per_elem;
    if (from_memory != NULL && sides[2].med > 0) from_memory[i] = bytes / sides[2].med * 1e-9;
    char shape[64], c[8][32];
    shape_text(shape, sizeof shape, op->kind, s);
    for (int j = 0; j < 4; j++) fmtv(c[j], sizeof c[j], 1, bytes / sides[j].med * 1e-9, sides[j].med > 0, "");
    fmtv(c[4], sizeof c[4], 0, 100 * sides[1].med / sides[0].med, sides[0].med > 0 && sides[1].med > 0, "%");
    fmtv(c[5], sizeof c[5], 0, 100 * sides[3].med / sides[2].med, sides[2].med > 0 && sides[3].med > 0, "%");
    if (op->dt == F32)
      snprintf(c[6], sizeof c[6], "–");
    else
      fmtv(c[6], sizeof c[6], 2, sides[0].med * per_elem / f32_time, sides[0].med > 0 && f32_time > 0, "");
    if (nt == 2)
      printf("| %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s |\n", op->name, dtype_names[op->dt], shape,
             bytes * 1e-6, c[0], c[1], c[4], c[2], c[3], c[5], c[6]);
    else
      printf("| %s | %s | %s | %.1f | %s | %s | %s | %s |\n", op->name, dtype_names[op->dt], shape, bytes * 1e-6, c[0],
             c[1], c[4], c[6]);
    fflush(stdout);
  }

  printf("\n### memory-bound kernels, small sizes\n\n");
  printf("ns per call (median) on a 1-thread context and on a %d-thread context (call overhead: a small call must "
         "not pay for the worker pool); × = %d-thread time ÷ 1-thread time.\n\n",
         bench_opt.threads, bench_opt.threads);
  printf("| kernel | dtype | shape | ns/call (1 thr) | ns/call (%d thr) | × |\n|---|---|---|---|---|---|\n",
         bench_opt.threads);
  fill_ids(buf.ids, 65536, (int32_t)shape_of(K_EMBED, SMALL).d[1], 33);
  for (size_t i = 0; i < nops; i++) {
    const struct memop *op = &ops[i];
    struct shape s = shape_of(op->kind, SMALL);
    struct mem_arg one = {op, s, ctx_one, 1, 0}, all = {op, s, ctx_all, bench_opt.threads, 0};
    char label[96];
    snprintf(label, sizeof label, "%s %s (small)", op->name, dtype_names[op->dt]);
    struct side sides[2] = {{label, run_op, &one, 0, 0}, {label, run_op, &all, 0, 0}};
    measure(sides, 2);
    char shape[64], a[32], b[32], r[32];
    shape_text(shape, sizeof shape, op->kind, s);
    fmtv(a, sizeof a, 0, 1e9 * sides[0].med, sides[0].med > 0, "");
    fmtv(b, sizeof b, 0, 1e9 * sides[1].med, sides[1].med > 0, "");
    fmtv(r, sizeof r, 2, sides[1].med / sides[0].med, sides[0].med > 0 && sides[1].med > 0, "");
    printf("| %s | %s | %s | %s | %s | %s |\n", op->name, dtype_names[op->dt], shape, a, b, r);
    fflush(stdout);
  }

  printf("\n### memory-bound kernels in cache (float32, and the 16-bit glu and add_rmsnorm; one thread)\n\n");
  printf("The same kernels on shapes whose tensors stay in the L2 cache between calls, where moving the bytes "
         "costs next to nothing, beside the large-size GB/s of the first table (1 thread) and the copy loop "
         "over the same in-cache bytes.  in cache ÷ from memory near 1: the kernel's own arithmetic, not memory, "
         "sets its speed (it is compute-bound), so no memory layout or prefetching can bring it closer to copy.\n\n");
  printf("| kernel | shape (in cache) | KiB moved | kb GB/s in cache | kb GB/s from memory | in cache ÷ from memory "
         "| copy GB/s in cache |\n|---|---|---|---|---|---|---|\n");
  fill_ids(buf.ids, 65536, (int32_t)shape_of(K_EMBED, CACHED).d[1], 34);
  for (size_t i = 0; i < nops; i++) {
    const struct memop *op = &ops[i];
    /* The decoder's glu and add_rmsnorm in every dtype: how far their
       arithmetic alone is from copy speed at 16-bit storage too. */
    if (op->dt != F32 && op->kind != K_GLU && op->kind != K_ADDNORM) continue;
    struct shape s = shape_of(op->kind, CACHED);
    double bytes = traffic(op->kind, op->dt, s);
    struct mem_arg one = {op, s, ctx_one, 1, bytes};
    char label[96];
    snprintf(label, sizeof label, "%s (in cache)", op->name);
    struct side sides[2] = {{label, run_op, &one, 0, 0}, {"copy (in cache)", run_copy, &one, 0, 0}};
    measure(sides, 2);
    char shape[64], a[32], m[32], r[32], c[32];
    double in_cache = sides[0].med > 0 ? bytes / sides[0].med * 1e-9 : 0;
    double mem = from_memory != NULL ? from_memory[i] : 0;
    shape_text(shape, sizeof shape, op->kind, s);
    fmtv(a, sizeof a, 1, in_cache, in_cache > 0, "");
    fmtv(m, sizeof m, 1, mem, mem > 0, "");
    fmtv(r, sizeof r, 2, in_cache / mem, in_cache > 0 && mem > 0, "");
    fmtv(c, sizeof c, 1, bytes / sides[1].med * 1e-9, sides[1].med > 0, "");
    printf("| %s%s%s | %s | %.0f | %s | %s | %s | %s |\n", op->name, op->dt == F32 ? "" : " ",
           op->dt == F32 ? "" : dtype_names[op->dt], shape, bytes / 1024, a, m, r, c);
    fflush(stdout);
  }
  free(from_memory);
  printf("\n");
  release();
}
