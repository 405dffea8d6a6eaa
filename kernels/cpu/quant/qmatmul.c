/* qmatmul.c - the quantized path of kb_linear_w: x quantized per block to
 * int8 once (qdot.h, step 1), then tasks over the weight rows, each output
 * computed whole by one task (step 2) and finished by kb_linear's epilogue.
 * What an output computes never depends on the split, so the bits are the
 * same for every thread count. */
#include "qmatmul.h"

#include <stdlib.h>

#include "../dispatch.h"
#include "../gemm_engine.h"

/* Weight bytes per task: about what handing a task to a worker costs to
 * read (see gemm_engine.c's KB_SMALL_MIN_BYTES). */
#define KB_QLINEAR_MIN_BYTES ((int64_t)64 * 1024)
/* Weight rows per unit of work (a multiple of the kernels' 4 rows). */
#define KB_QLINEAR_UNIT 16

struct qlinear_job {
  const struct kb_quant_ops *ops;
  int type;
  int64_t rows, out;
  const struct kb_qact *act;
  const unsigned char *w;
  int64_t row_bytes;
  float *y;
  const struct kb_linear_epilogue *lin;
  int64_t tasks;
};

static void qlinear_body(void *arg, int64_t begin, int64_t end) {
  const struct qlinear_job *g = (const struct qlinear_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t units = (g->out + KB_QLINEAR_UNIT - 1) / KB_QLINEAR_UNIT, u0, u1;
    kb__task_range(units, g->tasks, t, &u0, &u1);
    int64_t j0 = u0 * KB_QLINEAR_UNIT, j1 = u1 * KB_QLINEAR_UNIT < g->out ? u1 * KB_QLINEAR_UNIT : g->out;
    if (j0 >= j1) continue;
    g->ops->dot(g->type, g->rows, j1 - j0, g->act, g->w + j0 * g->row_bytes, g->row_bytes, g->y + j0, g->out);
    if (g->lin->bias != NULL || g->lin->act != KB_ACTIVATION_NONE)
      for (int64_t i = 0; i < g->rows; i++) kb__linear_row(g->lin, KB_GEMM_F32, g->y + i * g->out + j0, j1 - j0, j0);
  }
}

struct qact_job {
  const struct kb_quant_ops *ops;
  const float *x;
  int64_t ldx;
  const struct kb_qact *act;
};

static void qact_body(void *arg, int64_t begin, int64_t end) {
  const struct qact_job *j = (const struct qact_job *)arg;
  j->ops->quantize_act(begin, end, j->x, j->ldx, j->act);
}

kb_status kb__qlinear_prepare(kb_context *ctx, const char *fn, int64_t rows, int64_t in, const float *x, int64_t ldx,
                              struct kb_qlinear_x *qx) {
  const struct kb_quant_ops *ops = &kb__cpu_ops()->quant;
  int64_t nb = in / KB_QK;
  /* One block for the quantized activations: q (32-byte aligned), s, d. */
  int64_t blocks = rows * nb;
  if (blocks > INT64_MAX / 128)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of the quantized x overflows");
  size_t q_bytes = (size_t)blocks * KB_QK, s_bytes = (size_t)blocks * 8 * sizeof(int32_t);
  size_t d_bytes = (size_t)blocks * sizeof(float);
  void *mem = NULL;
  if (posix_memalign(&mem, 64, q_bytes + s_bytes + d_bytes + 64) != 0 || mem == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch for the quantized x",
                    (long long)(q_bytes + s_bytes + d_bytes));
  qx->mem = mem;
  qx->act.nb = nb;
  qx->act.q = (int8_t *)mem;
  qx->act.s = (int32_t *)((char *)mem + q_bytes);
  qx->act.d = (float *)((char *)mem + q_bytes + s_bytes);
  struct qact_job aj = {ops, x, ldx, &qx->act};
  kb__parallel_for(ctx, rows, in >= 16384 ? 1 : 16384 / (in > 0 ? in : 1), qact_body, &aj);
  return KB_STATUS_OK;
}

void kb__qlinear_columns(int type, int64_t rows, const struct kb_qlinear_x *qx, const void *w, int64_t row_bytes,
                         int64_t n, float *y, int64_t ldy) {
  kb__cpu_ops()->quant.dot(type, rows, n, &qx->act, w, row_bytes, y, ldy);
}

void kb__qlinear_release(struct kb_qlinear_x *qx) {
  free(qx->mem);
  qx->mem = NULL;
}

kb_status kb__qlinear_run(kb_context *ctx, const char *fn, int type, int64_t rows, int64_t in, int64_t out,
                          const float *x, const void *w, int64_t row_bytes, const struct kb_linear_epilogue *lin,
                          float *y) {
  struct kb_qlinear_x qx;
  KB_TRY(kb__qlinear_prepare(ctx, fn, rows, in, x, in, &qx));
  int64_t units = (out + KB_QLINEAR_UNIT - 1) / KB_QLINEAR_UNIT;
  int64_t unit_bytes = KB_QLINEAR_UNIT * row_bytes;
  int64_t per_task = unit_bytes >= KB_QLINEAR_MIN_BYTES ? 1 : KB_QLINEAR_MIN_BYTES / (unit_bytes > 0 ? unit_bytes : 1) + 1;
  int64_t tasks = kb__task_count(ctx, units, per_task);
  struct qlinear_job g = {&kb__cpu_ops()->quant, type, rows, out, &qx.act, (const unsigned char *)w, row_bytes, y, lin,
                          tasks};
  kb__parallel_for(ctx, tasks, 1, qlinear_body, &g);
  kb__qlinear_release(&qx);
  return KB_STATUS_OK;
}
