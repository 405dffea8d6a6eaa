/* glu.c - gated linear units: kb_glu, kb_glu_bf16, kb_glu_f16,
 * y[r, c] = act(gate[r, c]) * up[r, c] (SwiGLU, GeGLU, ReGLU, bilinear).
 *
 * The activation is the vector layer's own (the arithmetic of the `unary`
 * entry behind kb_silu / kb_gelu / kb_gelu_tanh), followed by the layer's
 * float32 multiply (the `binary` entry behind kb_mul): every element is
 * exactly kb_<act> followed by kb_mul, on every instruction-set level.
 * silu, gelu and gelu_tanh go through the layer's `gated` entry, which does
 * both per vector, 16-bit storage widened and narrowed in the same pass, so
 * gate and up are read once and y written once.  relu and none keep the
 * two steps on a tile (KB_GLU_TILE elements, in L1 between them): for
 * float32 in y's tile itself (y never overlaps gate or up), for 16-bit
 * storage in two float tiles on the stack, the product narrowed once.
 *
 * Work is split over (row, tile) pairs; each element depends only on its
 * own two inputs, so the split cannot change any bit. */
#include "glu.h"

#include "../dispatch.h"
#include "../reduced.h"
#include "internal.h"

/* Elements per tile: 4 KiB of float32, two of them fit L1 next to the
 * inputs' lines.  A multiple of 16 so that only a row's last tile has a
 * partial vector. */
#define KB_GLU_TILE 1024
/* Elements per thread below which starting a thread costs more than it saves
 * (the elementwise kernels' threshold). */
#define KB_GLU_MIN_CHUNK 16384

struct glu_job {
  const struct kb_vec_ops *ops;
  int dt;   /* KB_VEC_F32, KB_VEC_BF16 or KB_VEC_F16 */
  int act;  /* kb_activation */
  int64_t cols, tiles_per_row, ld_gate, ld_up;
  const char *gate, *up;
  char *y;
};

/* dst[i] = relu(src[i]) as kb_linear's epilogue (NaN stays NaN, -0.0 and
 * negatives become +0); dst may be src. */
static void relu_tile(const float *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = src[i] > 0.0f || src[i] != src[i] ? src[i] : 0.0f;
}

/* The vector layer's function behind act for its `gated` entry, or -1 for
 * relu and none (which take the tile path). */
static int gated_fn(int act) {
  switch (act) {
    case KB_ACTIVATION_SILU:
      return KB_VM_SILU;
    case KB_ACTIVATION_GELU:
      return KB_VM_GELU;
    case KB_ACTIVATION_GELU_TANH:
      return KB_VM_GELU_TANH;
    default:
      return -1;
  }
}

void kb__glu_tile(const struct kb_vec_ops *ops, int act, float *gate, const float *up, float *y, int64_t n) {
  /* glu_body's float32 path, step for step. */
  int fn = gated_fn(act);
  if (fn >= 0) {
    ops->gated(fn, KB_VEC_F32, n, gate, up, y);
    return;
  }
  if (act == KB_ACTIVATION_RELU) relu_tile(gate, gate, n);
  ops->binary(KB_VEC_MUL, KB_VEC_F32, n, gate, up, y);
}

static void glu_body(void *arg, int64_t begin, int64_t end) {
  const struct glu_job *j = (const struct glu_job *)arg;
  const struct kb_vec_ops *ops = j->ops;
  int64_t es = kb_vec_size(j->dt);
  float wg[KB_GLU_TILE], wu[KB_GLU_TILE];
  int fn = gated_fn(j->act);
  for (int64_t t = begin; t < end; t++) {
    int64_t r = t / j->tiles_per_row, c0 = (t % j->tiles_per_row) * KB_GLU_TILE;
    int64_t n = j->cols - c0 < KB_GLU_TILE ? j->cols - c0 : KB_GLU_TILE;
    const char *g = j->gate + (r * j->ld_gate + c0) * es;
    const char *u = j->up + (r * j->ld_up + c0) * es;
    char *y = j->y + (r * j->cols + c0) * es;
    if (fn >= 0) {
      ops->gated(fn, j->dt, n, g, u, y);
    } else if (j->dt == KB_VEC_F32) {
      if (j->act == KB_ACTIVATION_NONE) {
        ops->binary(KB_VEC_MUL, KB_VEC_F32, n, g, u, y);
      } else {
        relu_tile((const float *)g, (float *)y, n);
        ops->binary(KB_VEC_MUL, KB_VEC_F32, n, y, u, y);
      }
    } else {
      /* Widening is exact, so wg / wu hold the values kb_glu would see. */
      ops->convert(j->dt, 0, n, g, wg);
      ops->convert(j->dt, 0, n, u, wu);
      if (j->act == KB_ACTIVATION_RELU) relu_tile(wg, wg, n);
      ops->binary(KB_VEC_MUL, KB_VEC_F32, n, wg, wu, wg);
      ops->convert(j->dt, 1, n, wg, y);
    }
  }
}

static kb_status glu(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t cols, const void *gate,
                     int64_t ld_gate, const void *up, int64_t ld_up, kb_activation act, void *y) {
  KB_BEGIN(ctx, fn);
  int64_t elem = kb_vec_size(dt);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "cols", cols));
  KB_TRY(kb__check_dim(ctx, fn, "ld_gate", ld_gate));
  KB_TRY(kb__check_dim(ctx, fn, "ld_up", ld_up));
  KB_TRY(kb__check_ld(ctx, fn, "ld_gate", ld_gate, cols));
  KB_TRY(kb__check_ld(ctx, fn, "ld_up", ld_up, cols));
  /* Counts are the strided extents ((rows - 1) * ld + cols elements). */
  int64_t gn, un, yn, yd[2] = {rows, cols};
  KB_TRY(kb__count_strided(ctx, fn, "gate", elem, rows, cols, ld_gate, &gn));
  KB_TRY(kb__count_strided(ctx, fn, "up", elem, rows, cols, ld_up, &un));
  KB_TRY(kb__count(ctx, fn, "y", elem, 2, yd, &yn));
  KB_TRY(kb__check_ptr(ctx, fn, "gate", gate, gn));
  KB_TRY(kb__check_ptr(ctx, fn, "up", up, un));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  /* The activation is a scalar: checked after the pointers (rule 5). */
  KB_TRY(kb__check_activation(ctx, fn, act));
  int64_t gb = gn * elem, ub = un * elem, yb = yn * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yb, "gate", gate, gb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yb, "up", up, ub, false));
  const struct kb_mem_ref refs[] = {{"gate", gate, gb}, {"up", up, ub}, {"y", y, yb}};
  KB_TRY(kb__check_memory(ctx, fn, 3, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  int64_t tiles_per_row = (cols + KB_GLU_TILE - 1) / KB_GLU_TILE;
  struct glu_job job = {&kb__cpu_ops()->vec, dt, (int)act, cols, tiles_per_row, ld_gate, ld_up,
                        (const char *)gate, (const char *)up, (char *)y};
  /* rows * tiles_per_row <= rows * cols, which fits (y's count did). */
  kb__parallel_for(ctx, rows * tiles_per_row, KB_GLU_MIN_CHUNK / KB_GLU_TILE, glu_body, &job);
  return KB_STATUS_OK;
}

kb_status kb_glu(kb_context *ctx, int64_t rows, int64_t cols, const float *gate, int64_t ld_gate, const float *up,
                 int64_t ld_up, kb_activation act, float *y) {
  return glu(ctx, "kb_glu", KB_VEC_F32, rows, cols, gate, ld_gate, up, ld_up, act, y);
}

kb_status kb_glu_bf16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *gate, int64_t ld_gate,
                      const uint16_t *up, int64_t ld_up, kb_activation act, uint16_t *y) {
  return glu(ctx, "kb_glu_bf16", KB_VEC_BF16, rows, cols, gate, ld_gate, up, ld_up, act, y);
}

kb_status kb_glu_f16(kb_context *ctx, int64_t rows, int64_t cols, const uint16_t *gate, int64_t ld_gate,
                     const uint16_t *up, int64_t ld_up, kb_activation act, uint16_t *y) {
  return glu(ctx, "kb_glu_f16", KB_VEC_F16, rows, cols, gate, ld_gate, up, ld_up, act, y);
}
