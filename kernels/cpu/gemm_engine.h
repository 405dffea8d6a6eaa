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

/* Storage type of A, B, C (and a kb_linear bias). */
enum { KB_GEMM_F32 = 0, KB_GEMM_BF16 = 1, KB_GEMM_F16 = 2 };

/* kb_linear's epilogue: y = act(y + bias[column]) on the finished sums. */
struct kb_linear_epilogue {
  const void *bias; /* [n] in the storage type, or NULL */
  kb_activation act;
};

/* Cache blocking of the packed path (from the L1 and L2 sizes). */
struct kb_gemm_blocking {
  int64_t kc, mc, nc;
};

/* Everything decided before running; see gemm_engine.c. */
struct kb_gemm_plan {
  const struct kb_gemm_ops *ops;
  int kind; /* k == 0, matrix-vector, or blocked */
  int dt;
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const struct kb_linear_epilogue *lin;
  /* blocked path */
  struct kb_gemm_blocking bl;
  int64_t tm, tn, tasks;
  int64_t a_pack, b_pack, c_buf, per_task;
  bool direct_a, direct_b;
  /* matrix-vector path */
  int64_t gemv_len, gemv_tasks;
  bool gemv_gather;
  int64_t scratch_floats; /* what kb__gemm_exec needs, 64-byte aligned */
};

/*
 * Plans C = alpha op(A) op(B) + beta C (then the linear epilogue, if any)
 * for validated sizes with m * n > 0.  threads_ctx decides the thread
 * split (NULL: one thread); ctx receives the message of a failure
 * (OUT_OF_MEMORY when the scratch size overflows).
 */
kb_status kb__gemm_plan(kb_context *ctx, const char *fn, const kb_context *threads_ctx, int dt, bool trans_a,
                        bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                        const struct kb_linear_epilogue *lin, struct kb_gemm_plan *plan);

/* Runs a plan on threads_ctx's threads (the context it was planned for)
 * with plan->scratch_floats floats of 64-byte aligned scratch.  Cannot fail. */
void kb__gemm_exec(const kb_context *threads_ctx, const struct kb_gemm_plan *plan, const void *a, int64_t lda,
                   const void *b, int64_t ldb, void *c, int64_t ldc, float *scratch);

/* 64-byte aligned scratch of `floats` floats, or NULL with OUT_OF_MEMORY
 * recorded in ctx.  Free with free(). */
float *kb__gemm_scratch(kb_context *ctx, const char *fn, int64_t floats);

/* Plan, scratch, run: one validated multiply with m * n > 0. */
kb_status kb__gemm_run(kb_context *ctx, const char *fn, int dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                       void *c, int64_t ldc, const struct kb_linear_epilogue *lin);

#endif /* KB_CPU_GEMM_ENGINE_H */
