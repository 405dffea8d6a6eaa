/* vendored by tools/vendor_c.py from kernels/cpu/gemm_kernels.h; do not edit */
/* gemm_kernels.h - the instruction-set-specific pieces of the float32 matrix
 * multiply (gemm_scalar.c, gemm_avx2.c, gemm_avx512.c), driven by gemm.c.
 * Internal to kernels/cpu.
 *
 * The arithmetic contract, identical on every level: every element of C is
 *   acc = 0;  for p = 0 .. k-1:  acc = fma(op(A)[i,p], op(B)[p,j], acc)
 * (one rounding per step, p strictly increasing), then the epilogue
 *   C = alpha * acc                      (beta == 0: C is not read)
 *   C = alpha * acc + beta * C_old       (two products and a sum, each rounded)
 * Partial sums that cross a K block are stored in C (or a float32 buffer)
 * and reloaded: exact, since acc is a float32.  So blocking, packing, the
 * instruction set and the thread count never change a result bit. */
#ifndef KB_CPU_GEMM_KERNELS_H
#define KB_CPU_GEMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Largest register tile of any level (for stack buffers of edge tiles). */
#define KB_GEMM_MAX_MR 12
#define KB_GEMM_MAX_NR 32

/* What the last K block does with the sums (see above).  c0 is C_old with
 * row stride ldc0; it is read only when beta != 0. */
struct kb_gemm_epilogue {
  float alpha, beta;
  const float *c0;
  int64_t ldc0;
};

/*
 * The microkernel: one tile of rows x cols of C (at most mr x nr; row
 * stride ldc).  For i < rows, j < cols:
 *   acc(i, j) = first ? 0 : c[i * ldc + j]
 *   for p < kc:  acc(i, j) = fma(a[i * a_rs + p * a_cs], b[p * b_rs + j], acc(i, j))
 *   c[i * ldc + j] = last ? epilogue(acc(i, j)) : acc(i, j)
 * Nothing outside the rows x cols tile of C (or of last->c0) is touched.
 * a is a packed micro-panel (a_rs = 1, a_cs = mr) or A itself (its row and
 * column strides); b has nr readable columns per row: a packed micro-panel
 * (b_rs = nr, zero-padded past cols) or B itself when cols == nr.  kc >= 0.
 */
typedef void (*kb_gemm_kernel_fn)(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
                                  int64_t b_rs, float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
                                  const struct kb_gemm_epilogue *last);

/*
 * Packs a kc x nc block of op(B) with op(B)[p, j] = b[j * ldb + p] (B
 * transposed: the PyTorch weight layout) into micro-panels of nr columns:
 * panel q holds dst[q * kc * nr + p * nr + jj] = op(B)[p, q * nr + jj],
 * zero for columns past nc.
 */
typedef void (*kb_gemm_pack_bt_fn)(int64_t kc, int64_t nc, const float *b, int64_t ldb, float *dst, int64_t nr);

/*
 * Matrix-vector products, the m == 1 / n == 1 cases.  x has k elements.
 *   axpy: y[j] = chain over p of x[p] * mat[p * ldm + j]    (rows of mat along j)
 *   dot:  y[j] = chain over p of x[p] * mat[j * ldm + p]    (rows of mat along p)
 * for j < n, each y[j] the fma chain of the contract above (no epilogue).
 */
typedef void (*kb_gemv_fn)(int64_t k, int64_t n, const float *x, const float *mat, int64_t ldm, float *y);

struct kb_gemm_ops {
  int mr, nr; /* register tile: rows, columns (mr <= KB_GEMM_MAX_MR, nr <= KB_GEMM_MAX_NR) */
  kb_gemm_kernel_fn kernel;
  kb_gemm_pack_bt_fn pack_bt;
  kb_gemv_fn gemv_axpy;
  kb_gemv_fn gemv_dot;
};

/* The tables of each level (gemm_<isa>.c).  The vector ones exist only where
 * simd.h says the compiler can build them. */
extern const struct kb_gemm_ops kb__gemm_ops_scalar;
extern const struct kb_gemm_ops kb__gemm_ops_avx2;
extern const struct kb_gemm_ops kb__gemm_ops_avx512;

#endif /* KB_CPU_GEMM_KERNELS_H */
