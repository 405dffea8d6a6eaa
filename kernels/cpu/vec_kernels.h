/* vec_kernels.h - the instruction-set-specific pieces of the memory-bound
 * kernels (elementwise, row-wise, the optimizer step) and of the vector
 * math layer, one table per level (vec_scalar.c, vec_avx2.c, vec_avx512.c),
 * driven by the kernel files (activation.c, softmax.c, ...), which keep
 * validation and threading.  Internal to kernels/cpu.
 *
 * Every entry is written once (vec_body.h) over a 16-lane vocabulary that
 * each level implements with the same IEEE operations (vec_lanes_*.h), so
 * every level computes the same bits; the scalar level is the reference.
 * Reductions keep 16 partial sums (element c of a row goes to lane c mod 16,
 * added in increasing c) and combine them in one fixed order, so a row's
 * result never depends on the level or on how rows are split over threads.
 * Elementwise entries compute each element from its own inputs only.
 *
 * Storage: `dt` is KB_VEC_F32 (float) or a 16-bit format (uint16_t bit
 * patterns, half.h), widened exactly in registers and rounded once when
 * stored; weights and biases have the dtype of x. */
#ifndef KB_CPU_VEC_KERNELS_H
#define KB_CPU_VEC_KERNELS_H

#include <stdint.h>

enum kb_vec_dt { KB_VEC_F32 = 0, KB_VEC_BF16 = 1, KB_VEC_F16 = 2 };

/* Bytes per element of a dtype. */
static inline int64_t kb_vec_size(int dt) { return dt == KB_VEC_F32 ? 4 : 2; }

/* The functions of the math layer (vmath.h) and the activations, as array
 * entries (tests and tools run them over all float inputs). */
enum kb_vm_fn {
  KB_VM_EXP = 0,
  KB_VM_LOG,
  KB_VM_TANH,
  KB_VM_ERF,
  KB_VM_SILU,
  KB_VM_GELU,
  KB_VM_GELU_TANH,
  KB_VM_FN_COUNT
};

enum kb_vec_binop { KB_VEC_ADD = 0, KB_VEC_MUL = 1 };

/* y[i] = f(x[i]) for i < n (any n >= 0; y may be x). */
typedef void (*kb_vm_array_fn)(int64_t n, const float *x, float *y);

/* AdamW's per-call coefficients (adamw.c). */
struct kb_adamw_coef {
  float decay, w1, one_minus_w1, beta2, w2, step_size, bc2_sqrt, eps;
  int small_w1;
};

struct kb_vec_ops {
  kb_vm_array_fn math[KB_VM_FN_COUNT];
  /* y[i] = e^x[i] in double (kb_exp_f64_<level>), i < n: for tests. */
  void (*exp_f64)(int64_t n, const double *x, double *y);

  /* y[i] = f(x[i]), i < n, f one of KB_VM_SILU, KB_VM_GELU, KB_VM_GELU_TANH.
   * y may be x. */
  void (*unary)(int fn, int dt, int64_t n, const void *x, void *y);
  /* y[i] = f(g[i]) * u[i], f as in unary: exactly unary into a float32
   * temporary, then binary (MUL) with it as a, in one pass.  y may be g or u. */
  void (*gated)(int fn, int dt, int64_t n, const void *g, const void *u, void *y);
  /* y[i] = a[i] op b[i] (float32 arithmetic).  y may be a or b. */
  void (*binary)(int op, int dt, int64_t n, const void *a, const void *b, void *y);
  /* y[i] = alpha * x[i]. */
  void (*scale)(int dt, int64_t n, float alpha, const void *x, void *y);
  /* y[r, c] = x[r, c] + bias[c] for rows rows of cols. */
  void (*add_bias)(int dt, int64_t rows, int64_t cols, const void *x, const void *bias, void *y);
  /* Widen (narrow = 0: 16-bit src, float dst) or narrow n elements. */
  void (*convert)(int dt, int narrow, int64_t n, const void *src, void *dst);

  /* Row kernels over rows rows of cols > 0 (y may be x; docs/kernels.md). */
  void (*softmax)(int dt, int want_log, int64_t rows, int64_t cols, const void *x, void *y);
  void (*rmsnorm)(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, float eps, void *y);
  /* Per row, exactly binary (ADD, residual first) into residual, then
   * rmsnorm of the stored row into y, in one pass over memory.  y may be x
   * exactly; residual overlaps nothing. */
  void (*add_rmsnorm)(int dt, int64_t rows, int64_t cols, void *residual, const void *x, const void *weight, float eps,
                      void *y);
  /* weight and bias may be NULL (1 and 0). */
  void (*layernorm)(int dt, int64_t rows, int64_t cols, const void *x, const void *weight, const void *bias, float eps,
                    void *y);
  /* losses[r] for rows rows (targets checked by the caller). */
  void (*ce_forward)(int64_t rows, int64_t cols, const float *logits, const int32_t *targets, int32_t ignore_index,
                     float *losses);
  /* dlogits = (softmax - onehot) * scale per row, ignored rows 0; dlogits may be logits. */
  void (*ce_backward)(int64_t rows, int64_t cols, const float *logits, const int32_t *targets, int32_t ignore_index,
                      double scale, float *dlogits);
  void (*argmax)(int64_t rows, int64_t cols, const float *x, int32_t *out);
  /* Rotary embedding of rows s in [s0, s1) of x [seq, heads, head_dim]
   * (rope.c); positions already checked; y may be x. */
  void (*rope)(int64_t s0, int64_t s1, int64_t heads, int64_t head_dim, const float *x, const int32_t *positions,
               double theta, float *y);
  /* sn[i], cs[i] = sin, cos of a[i] in double (rope's, within a few double
   * ulps for 0 <= a[i] < 2^31), i < n: kb_rope_ex's angles. */
  void (*sincos_f64)(int64_t n, const double *a, double *sn, double *cs);
  /* w[i] = e^((x[i] - m) / temperature) in double (the math layer's exp,
   * within 2 double ulps; -inf gives 0), i < n: the sampling weights. */
  void (*exp_weights)(int64_t n, const float *x, double m, double temperature, double *w);
  /* One AdamW step over n elements (adamw.c's order of operations). */
  void (*adamw)(int64_t n, float *params, const float *grads, float *m, float *v, const struct kb_adamw_coef *c);
};

/* The tables of each level (vec_<isa>.c).  The vector ones exist only where
 * simd.h says the compiler can build them. */
extern const struct kb_vec_ops kb__vec_ops_scalar;
extern const struct kb_vec_ops kb__vec_ops_avx2;
extern const struct kb_vec_ops kb__vec_ops_avx512;
/* The avx512 table for CPUs with AVX-512 BF16 (where simd.h says KB_HAVE_AVX512_BF16). */
extern const struct kb_vec_ops kb__vec_ops_avx512_bf16;

#endif /* KB_CPU_VEC_KERNELS_H */
