/* gemm_engine.h - the float32 matrix multiply engine behind kb_gemm,
 * kb_gemm_batched and kb_linear (gemm_engine.c): planning (path, blocking,
 * thread split, scratch size) separated from running, so that a caller can
 * allocate every byte of scratch before it writes anything.  Internal to
 * kernels/cpu. */
#ifndef KB_CPU_GEMM_ENGINE_H
#define KB_CPU_GEMM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "gemm_kernels.h"
#include "internal.h"

/* kb_linear's epilogue: y = act(y + bias[column]) on the finished sums. */
struct kb_linear_epilogue {
  const void *bias; /* [n] in the storage type, or NULL */
  kb_activation act;
};

/* y[j] = act(y[j] + bias[col0 + j]) for j < len: kb_linear's epilogue on
 * the float32 sums of output columns col0 .. col0+len of one row (the bias
 * stored as dt), the activation being the public kernel itself. */
void kb__linear_row(const struct kb_linear_epilogue *e, int dt, float *y, int64_t len, int64_t col0);

/* Cache blocking of the packed path (from the L1 and L2 sizes). */
struct kb_gemm_blocking {
  int64_t kc, mc, nc;
};

/* Everything decided before running; see gemm_engine.c. */
struct kb_gemm_plan {
  const struct kb_gemm_ops *ops;
  int kind; /* k == 0, matrix-vector, small m, or blocked */
  int dt;   /* storage type of A and C */
  int dt_b; /* storage type of B (the weights of a mixed-precision product) */
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const struct kb_linear_epilogue *lin;
  /* blocked path */
  struct kb_gemm_blocking bl;
  int64_t tm, tn, tasks;
  int64_t a_pack, b_pack, c_buf, per_task;
  bool direct_a, direct_b;
  bool widen_a; /* a swapped product of 16-bit weights: each tile's rows of them widened to float32 rows */
  bool bf16_a;  /* a swapped product of bfloat16 weights that the level's kernel_bf16a reads in place */
  bool swapped; /* run as C^T = op(B)^T op(A)^T: m, n, trans_a, trans_b are the swapped product's */
  /* matrix-vector path */
  int64_t gemv_len, gemv_tasks;
  bool gemv_gather;
  /* small-m path: A as float32 rows (a copy when A is transposed or 16-bit) */
  bool small_copy_a;
  int64_t small_units, small_unit, small_tasks;
  int64_t scratch_floats; /* what kb__gemm_exec needs, 64-byte aligned */
};

/*
 * Plans C = alpha op(A) op(B) + beta C (then the linear epilogue, if any)
 * for validated sizes with m * n > 0; A and C are stored as dt, B as dt_b
 * (every operand is widened to float32 exactly, so the result is the
 * float32 product of the widened values whatever the types).  threads_ctx decides the thread
 * split (NULL: one thread); ctx receives the message of a failure
 * (OUT_OF_MEMORY when the scratch size overflows).
 */
kb_status kb__gemm_plan(kb_context *ctx, const char *fn, const kb_context *threads_ctx, int dt, int dt_b,
                        bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                        const struct kb_linear_epilogue *lin, struct kb_gemm_plan *plan);

/* Whether a plan takes the small-m path (few rows of A, every element of B
 * read once) rather than the blocked one. */
bool kb__gemm_plan_is_small(const struct kb_gemm_plan *plan);

/* Runs a plan on threads_ctx's threads (the context it was planned for)
 * with plan->scratch_floats floats of 64-byte aligned scratch.  Cannot fail. */
void kb__gemm_exec(const kb_context *threads_ctx, const struct kb_gemm_plan *plan, const void *a, int64_t lda,
                   const void *b, int64_t ldb, void *c, int64_t ldc, float *scratch);

/* 64-byte aligned scratch of `floats` floats, or NULL with OUT_OF_MEMORY
 * recorded in ctx.  Free with free(). */
float *kb__gemm_scratch(kb_context *ctx, const char *fn, int64_t floats);

/* Plan, scratch, run: one validated multiply with m * n > 0 (A and C of
 * storage type dt, B of dt_b). */
kb_status kb__gemm_run(kb_context *ctx, const char *fn, int dt, int dt_b, bool trans_a, bool trans_b, int64_t m,
                       int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                       float beta, void *c, int64_t ldc, const struct kb_linear_epilogue *lin);

#endif /* KB_CPU_GEMM_ENGINE_H */
