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

/* Storage type of an operand (A, B, C; a kb_linear bias): float32, or
 * 16-bit values widened exactly to float32 when read. */
enum { KB_GEMM_F32 = 0, KB_GEMM_BF16 = 1, KB_GEMM_F16 = 2 };

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
 * The microkernel with A a bfloat16 matrix in rows (a_cs == 1: a swapped
 * product's weights, [n, k] as stored), read in place: a[i * a_rs + p]
 * widened exactly to float32 as it is read, the rest as kb_gemm_kernel_fn.
 * With first not set it also reads the 16-bit element just before each
 * row's a[i * a_rs] (the caller's K block then starts past column 0 of the
 * weights, so that element is the row's previous column).
 */
typedef void (*kb_gemm_kernel_bf16a_fn)(int64_t kc, const uint16_t *a, int64_t a_rs, const float *b, int64_t b_rs,
                                        float *c, int64_t ldc, int64_t rows, int64_t cols, int first,
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

/* Most rows of A the small-m kernels take (decode, small batches). */
#define KB_GEMM_SMALL_M 16

/*
 * Small-m products, the decode case: for i < m <= KB_GEMM_SMALL_M, j < n,
 *   c[i * ldc + j] = chain over p < k of a[i * lda + p] * B(j, p)
 * each the fma chain of the contract above (no epilogue), where B holds
 * values of storage type bdt (KB_GEMM_*) widened exactly to float32:
 *   small_dot:  B(j, p) = b[j * ldb + p]  (rows along p: [n, k], the
 *               PyTorch / GGUF weight layout)
 *   small_axpy: B(j, p) = b[p * ldb + j]  ([k, n])
 * Each element of b is read once per call, as 16-bit values where bdt
 * says so: the weights of a decode step are read once, at memory speed.
 * k >= 1, n >= 1.  When m > 8, a has KB_GEMM_SMALL_M readable rows and c
 * KB_GEMM_SMALL_M writable rows (a level may compute all 16 in one pass;
 * the rows past m are padding the caller ignores).
 */
typedef void (*kb_gemm_small_fn)(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                 const void *b, int64_t ldb, float *c, int64_t ldc);

/* pack_bt for B stored as 16-bit values of storage type bdt (KB_GEMM_BF16
 * or KB_GEMM_F16), widened to float32 exactly while packed. */
typedef void (*kb_gemm_pack_bt_half_fn)(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb, float *dst,
                                        int64_t nr);

/* dst[j] = src[j] widened exactly to float32 for j < n, src stored as bdt
 * (KB_GEMM_BF16 or KB_GEMM_F16): a row of 16-bit weights made the float32
 * row the microkernel reads (a swapped product's A). */
typedef void (*kb_gemm_widen_fn)(int bdt, int64_t n, const uint16_t *src, float *dst);

/* dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols: a copy (no
 * arithmetic), so every level gives the same bits.  Elements of dst outside
 * the rows x cols block are not written. */
typedef void (*kb_gemm_transpose_fn)(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
                                     int64_t ldd);

struct kb_gemm_ops {
  int mr, nr; /* register tile: rows, columns (mr <= KB_GEMM_MAX_MR, nr <= KB_GEMM_MAX_NR) */
  kb_gemm_kernel_fn kernel;
  kb_gemm_pack_bt_fn pack_bt;
  kb_gemv_fn gemv_axpy;
  kb_gemv_fn gemv_dot;
  kb_gemm_small_fn small_dot;
  kb_gemm_small_fn small_axpy;
  kb_gemm_pack_bt_half_fn pack_bt_half;
  kb_gemm_transpose_fn transpose;
  kb_gemm_widen_fn widen;
  /* Most rows of A that take small_dot (B stored [n, k], a linear layer's
   * weights) instead of the blocked path when that would run the product
   * swapped (gemm_engine.c): against float32 B, and against 16-bit B.
   * At most KB_GEMM_SMALL_M; more rows, or other shapes, take the blocked
   * path.  Only speed depends on it: every path computes the same chains. */
  int small_dot_rows_f32, small_dot_rows_half;
  /* kernel with bfloat16 A read in place, or NULL: the level widens the
   * tile's rows first (widen) and runs kernel on them.  The same chains. */
  kb_gemm_kernel_bf16a_fn kernel_bf16a;
};

/* The small-m kernels and the 16-bit pack of each level (gemm_small_<isa>.c). */
void kb__gemm_pack_bt_half_scalar(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb, float *dst,
                                  int64_t nr);
void kb__gemm_pack_bt_half_avx2(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb, float *dst,
                                int64_t nr);
void kb__gemm_pack_bt_half_avx512(int bdt, int64_t kc, int64_t nc, const uint16_t *b, int64_t ldb, float *dst,
                                  int64_t nr);
void kb__gemm_widen_scalar(int bdt, int64_t n, const uint16_t *src, float *dst);
void kb__gemm_widen_avx2(int bdt, int64_t n, const uint16_t *src, float *dst);
void kb__gemm_widen_avx512(int bdt, int64_t n, const uint16_t *src, float *dst);
void kb__gemm_small_dot_scalar(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                               int64_t ldb, float *c, int64_t ldc);
void kb__gemm_small_axpy_scalar(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                                int64_t ldb, float *c, int64_t ldc);
void kb__gemm_small_dot_avx2(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                             int64_t ldb, float *c, int64_t ldc);
void kb__gemm_small_axpy_avx2(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                              int64_t ldb, float *c, int64_t ldc);
void kb__gemm_small_dot_avx512(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                               int64_t ldb, float *c, int64_t ldc);
void kb__gemm_small_axpy_avx512(int bdt, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const void *b,
                                int64_t ldb, float *c, int64_t ldc);

/* The tables of each level (gemm_<isa>.c).  The vector ones exist only where
 * simd.h says the compiler can build them. */
extern const struct kb_gemm_ops kb__gemm_ops_scalar;
extern const struct kb_gemm_ops kb__gemm_ops_avx2;
extern const struct kb_gemm_ops kb__gemm_ops_avx512;

#endif /* KB_CPU_GEMM_KERNELS_H */
