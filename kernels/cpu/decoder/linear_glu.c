/* linear_glu.c - kb_linear_glu_w: the gate and up linear layers of a
 * gated feed-forward block and their gated product in one call,
 *   y = act(x . Wg^T) * (x . Wu^T),
 * weights in any kb_dtype.
 *
 * The output columns are cut into chunks; a task computes, for each of its
 * chunks, the gate sums into a [rows, chunk] tile of its own scratch, the up
 * sums straight into y, and then kb_glu's arithmetic on the two (glu.h),
 * while both are still in cache.  Neither [rows, out] product exists whole,
 * and y is written once.
 *
 * The sums are kb_linear_w's: float weights through the gemm engine (each
 * chunk planned for one thread, since the tasks are the parallelism; every
 * output is the engine's fixed fma chain whatever the plan), block formats
 * through qmatmul.c with x quantized once for both products.  So y has the
 * bits of kb_linear_w(gate), kb_linear_w(up), kb_glu, for every chunking,
 * thread count and instruction set. */
#include "linear_glu.h"

#include <stdlib.h>

#include "../dispatch.h"
#include "../gemm_engine.h"
#include "../linear.h"
#include "../quant/dtype.h"
#include "../quant/qmatmul.h"
#include "glu.h"

/* Output columns per chunk: with few rows (decode) a chunk is a slice of
 * the weights read once at memory speed; with many rows (prefill) wider
 * chunks let the gemm engine reuse each block of x longer. */
#define KB_LGLU_CHUNK_FEW 64
#define KB_LGLU_CHUNK_MANY 256
/* Weight bytes per task below which another thread is not worth waking
 * (gemm_engine.c's small-m threshold). */
#define KB_LGLU_MIN_BYTES ((int64_t)64 * 1024)

struct lglu_job {
  const struct kb_vec_ops *vec;
  int type, act;
  bool blocked;
  int64_t rows, in, out, row_bytes, chunk, chunks, tasks;
  const float *x;
  const struct kb_qlinear_x *qx;                      /* block formats */
  const struct kb_gemm_plan *plan_full, *plan_tail;  /* float formats */
  const unsigned char *wg, *wu;
  float *scratch;
  int64_t per_task, tile_floats;
  float *y;
  int64_t ldy;
};

/* The cw sums of columns j0 .. j0+cw of x . W^T into dst (row stride ld). */
static void lglu_sums(const struct lglu_job *j, const unsigned char *w, int64_t j0, int64_t cw, float *dst, int64_t ld,
                      float *plan_scratch) {
  const unsigned char *wj = w + j0 * j->row_bytes;
  if (j->blocked) {
    kb__qlinear_columns(j->type, j->rows, j->qx, wj, j->row_bytes, cw, dst, ld);
  } else {
    int64_t ldx = j->in > 0 ? j->in : 1;
    kb__gemm_exec(NULL, cw == j->chunk ? j->plan_full : j->plan_tail, j->x, ldx, wj, ldx, dst, ld, plan_scratch);
  }
}

static void lglu_body(void *arg, int64_t begin, int64_t end) {
  const struct lglu_job *j = (const struct lglu_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t c0, c1;
    kb__task_range(j->chunks, j->tasks, t, &c0, &c1);
    float *gate = j->scratch + t * j->per_task, *plan_scratch = gate + j->tile_floats;
    for (int64_t c = c0; c < c1; c++) {
      int64_t j0 = c * j->chunk, cw = j->out - j0 < j->chunk ? j->out - j0 : j->chunk;
      lglu_sums(j, j->wg, j0, cw, gate, cw, plan_scratch);
      lglu_sums(j, j->wu, j0, cw, j->y + j0, j->ldy, plan_scratch);
      for (int64_t r = 0; r < j->rows; r++) {
        float *yr = j->y + r * j->ldy + j0;
        kb__glu_tile(j->vec, j->act, gate + r * cw, yr, yr, cw);
      }
    }
  }
}

static int64_t lglu_round16(int64_t v) { return (v + 15) / 16 * 16; }

kb_status kb__linear_glu_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                             const float *x, const void *gate_w, const void *up_w, int64_t row_bytes, int act, float *y,
                             int64_t ldy) {
  struct lglu_job job;
  job.vec = &kb__cpu_ops()->vec;
  job.type = type;
  job.act = act;
  /* With no in_features no weight is read: zero sums, as kb_linear_w. */
  job.blocked = kb__dtype_blocked(type) && in > 0;
  job.rows = rows;
  job.in = in;
  job.out = out;
  job.row_bytes = row_bytes;
  int dt_b = kb__linear_w_gemm_type(type);
  /* Narrow chunks while the products read each weight once (the small-m
   * path, or the quantized engine's few rows), wide ones once they run
   * blocked. */
  job.chunk = rows <= KB_GEMM_SMALL_M ? KB_LGLU_CHUNK_FEW : KB_LGLU_CHUNK_MANY;
  if (!job.blocked && job.chunk == KB_LGLU_CHUNK_FEW) {
    struct kb_gemm_plan probe;
    int64_t cw = job.chunk < out ? job.chunk : out;
    KB_TRY(kb__gemm_plan(ctx, fn, NULL, KB_GEMM_F32, dt_b, false, true, rows, cw, in, 1.0f, 0.0f, NULL, &probe));
    if (!kb__gemm_plan_is_small(&probe) && in > 0) job.chunk = KB_LGLU_CHUNK_MANY;
  }
  if (job.chunk > out) job.chunk = out;
  job.chunks = (out + job.chunk - 1) / job.chunk;
  job.x = x;
  job.wg = (const unsigned char *)gate_w;
  job.wu = (const unsigned char *)up_w;
  job.y = y;
  job.ldy = ldy;
  int64_t chunk_bytes = 2 * job.chunk * (row_bytes > 0 ? row_bytes : 1);
  job.tasks = kb__task_count(ctx, job.chunks, chunk_bytes >= KB_LGLU_MIN_BYTES ? 1 : KB_LGLU_MIN_BYTES / chunk_bytes + 1);
  /* Everything is planned and allocated before y is written. */
  struct kb_gemm_plan plan_full, plan_tail;
  int64_t plan_floats = 0;
  if (!job.blocked) {
    int64_t tail = out - (job.chunks - 1) * job.chunk;
    KB_TRY(kb__gemm_plan(ctx, fn, NULL, KB_GEMM_F32, dt_b, false, true, rows, job.chunk, in, 1.0f, 0.0f, NULL,
                         &plan_full));
    KB_TRY(kb__gemm_plan(ctx, fn, NULL, KB_GEMM_F32, dt_b, false, true, rows, tail, in, 1.0f, 0.0f, NULL, &plan_tail));
    plan_floats = plan_full.scratch_floats > plan_tail.scratch_floats ? plan_full.scratch_floats
                                                                        : plan_tail.scratch_floats;
  }
  job.plan_full = &plan_full;
  job.plan_tail = &plan_tail;
  /* rows * chunk <= rows * out, which y's count showed to fit. */
  job.tile_floats = lglu_round16(rows * job.chunk);
  int64_t per[2] = {job.tasks, 0};
  if (plan_floats > INT64_MAX / 4 - job.tile_floats - 16)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of the scratch overflows");
  job.per_task = job.tile_floats + lglu_round16(plan_floats);
  per[1] = job.per_task;
  int64_t scratch_floats;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, per, &scratch_floats));
  job.scratch = kb__gemm_scratch(ctx, fn, scratch_floats);
  if (job.scratch == NULL) return KB_STATUS_OUT_OF_MEMORY;
  struct kb_qlinear_x qx = {0};
  if (job.blocked) {
    kb_status st = kb__qlinear_prepare(ctx, fn, rows, in, x, in, &qx);
    if (st != KB_STATUS_OK) {
      free(job.scratch);
      return st;
    }
  }
  job.qx = &qx;
  kb__parallel_for(ctx, job.tasks, 1, lglu_body, &job);
  if (job.blocked) kb__qlinear_release(&qx);
  free(job.scratch);
  return KB_STATUS_OK;
}

kb_status kb_linear_glu_w(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const float *x,
                          kb_dtype weight_type, const void *gate_weight, int64_t gate_bytes, const void *up_weight,
                          int64_t up_bytes, kb_activation act, float *y) {
  static const char fn[] = "kb_linear_glu_w";
  KB_BEGIN(ctx, fn);
  const int64_t f = (int64_t)sizeof(float);
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "in_features", in_features));
  KB_TRY(kb__check_dim(ctx, fn, "out_features", out_features));
  KB_TRY(kb__check_dim(ctx, fn, "gate_bytes", gate_bytes));
  KB_TRY(kb__check_dim(ctx, fn, "up_bytes", up_bytes));
  KB_TRY(kb__check_activation(ctx, fn, act));
  int64_t wbytes, row_bytes;
  KB_TRY(kb__dtype_size(ctx, fn, "weight_type", (int)weight_type, "gate_weight", out_features, in_features,
                        "in_features", &wbytes, &row_bytes));
  int64_t xd[2] = {rows, in_features}, yd[2] = {rows, out_features};
  int64_t xn, yn;
  KB_TRY(kb__count(ctx, fn, "x", f, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "y", f, 2, yd, &yn));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "gate_bytes", gate_bytes, wbytes, "gate_weight", (int)weight_type,
                               out_features, in_features));
  KB_TRY(kb__dtype_check_bytes(ctx, fn, "up_bytes", up_bytes, wbytes, "up_weight", (int)weight_type, out_features,
                               in_features));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "gate_weight", gate_weight, wbytes));
  KB_TRY(kb__check_ptr(ctx, fn, "up_weight", up_weight, wbytes));
  KB_TRY(kb__dtype_check_align(ctx, fn, "gate_weight", gate_weight, (int)weight_type, wbytes == 0));
  KB_TRY(kb__dtype_check_align(ctx, fn, "up_weight", up_weight, (int)weight_type, wbytes == 0));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "x", x, xn * f, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "gate_weight", gate_weight, wbytes, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * f, "up_weight", up_weight, wbytes, false));
  const struct kb_mem_ref refs[] = {
      {"x", x, xn * f}, {"gate_weight", gate_weight, wbytes}, {"up_weight", up_weight, wbytes}, {"y", y, yn * f}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  return kb__linear_glu_run(ctx, fn, (int)weight_type, rows, in_features, out_features, x, gate_weight, up_weight,
                            row_bytes, (int)act, y, out_features);
}
