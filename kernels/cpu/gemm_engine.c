/* gemm_engine.c - the engine of the float32 matrix multiply (gemm_engine.h):
 * blocking, packing, threading and the matrix-vector path around the
 * instruction-set-specific microkernels of gemm_kernels.h.
 *
 * Every element of C is the fma chain of gemm_kernels.h (p increasing, one
 * rounding per step) followed by the alpha / beta epilogue, whatever the
 * path: so results are identical for every thread count, every blocking and
 * every instruction-set level.
 *
 * The blocked path follows the classic packed-panel scheme: for a block of
 * MC rows and KC steps of p, A is packed into micro-panels of MR rows (read
 * from L1 by the microkernel) and for every NC columns op(B) is packed into
 * micro-panels of NR columns (the KC x NC block stays in L2); the
 * microkernel then sweeps the NR-panels for each MR-panel.  Sums cross K
 * blocks through C itself (or a saved copy of C_old when beta != 0).
 * Threads split C into rectangles of whole tiles (rows first, then columns)
 * and each packs what its rectangle needs: no thread ever splits a sum.
 * m == 1 and n == 1 use matrix-vector kernels that read the matrix once at
 * memory speed.  bf16 / f16 operands are widened while they are packed.
 *
 * A few rows against wide weights stored [n, k] (a linear layer's prefill
 * or an expert's tokens) run swapped: C^T = op(B)^T op(A)^T, the weights as
 * the microkernel's A and the few rows packed as its B, each finished block
 * of C^T transposed into C.  Packing (a transposition) then touches the
 * small operand, not the weights: float32 weights are read in place, so
 * are bfloat16 ones where the level has kernel_bf16a (each weight widened
 * as it is broadcast), and other 16-bit ones are widened a tile's rows at
 * a time into float32 rows (no transposition); the next tile's rows are
 * prefetched meanwhile.  The products
 * are the same (a * b == b * a in every fma), so are the bits. */
#include "gemm_engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "half.h"

/* Multiply-adds per task below which another thread is not worth waking. */
#define KB_GEMM_MIN_WORK ((int64_t)1 << 18)
/* Elements of B (k * n) up to which float32 B is read in place, unpacked:
 * 64 KiB, which stays in L2 between its uses. */
#define KB_GEMM_DIRECT_B ((int64_t)16384)
/* Matrix elements per task of the matrix-vector path (memory bound). */
#define KB_GEMV_MIN_WORK ((int64_t)1 << 16)
/* Bytes of B per task of the small-m path: reading 64 KiB takes a few
 * microseconds, about what handing a task to a worker costs, so a smaller
 * share is not worth a thread. */
#define KB_SMALL_MIN_BYTES ((int64_t)64 * 1024)
/* Floats between the widened rows of a swapped product's 16-bit weights
 * beyond the row itself: 64 bytes, so that the rows never share an L1 set. */
#define KB_GEMM_WIDEN_PAD 16
/* Most rows of A run swapped (C^T = op(B)^T op(A)^T; kb__gemm_plan). */
#define KB_GEMM_SWAP_ROWS 192
/* Outputs per kernel call of the small-m path: the m x S tile of sums waits
 * on the stack (16 KiB at most) for its epilogue. */
#define KB_SMALL_TILE 256


/* ---- blocking ---- */

static int64_t cache_bytes(int level, int64_t fallback) {
  long v = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  v = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
#else
  (void)level;
#endif
  /* Implausible answers (0, -1, a shared cache reported whole) fall back. */
  if (v < 16 * 1024 || v > 64 * 1024 * 1024) return fallback;
  return (int64_t)v;
}

static int64_t l1_bytes, l2_bytes;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

/* Asked once: sysconf's cache queries may run CPUID, which traps to the
 * hypervisor in a virtual machine. */
static void read_caches(void) {
  l1_bytes = cache_bytes(1, 32 * 1024);
  l2_bytes = cache_bytes(2, 512 * 1024);
}

/* Block sizes for a microkernel of mr x nr: an A micro-panel (mr x kc)
 * fills three quarters of L1 (long K blocks amortise loading and storing
 * the C tile), a packed B block (kc x nc) half of L2, an A block
 * (mc x kc) all of L2 (it is read once per NC block, so it may spill to L3). */
static struct kb_gemm_blocking blocking_for(int64_t mr, int64_t nr) {
  pthread_once(&caches_once, read_caches);
  int64_t l1 = l1_bytes, l2 = l2_bytes;
  if (l1 > 64 * 1024) l1 = 64 * 1024;
  if (l2 > 4 * 1024 * 1024) l2 = 4 * 1024 * 1024;
  struct kb_gemm_blocking b;
  b.kc = l1 * 3 / 4 / (4 * mr) / 16 * 16;
  if (b.kc < 64) b.kc = 64;
  if (b.kc > 512) b.kc = 512;
  b.nc = l2 / 2 / (4 * b.kc) / nr * nr;
  if (b.nc < nr) b.nc = nr;
  b.mc = l2 / (4 * b.kc) / mr * mr;
  if (b.mc < mr) b.mc = mr;
  return b;
}

static int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

/* ---- element access in any storage type ---- */

static inline float load_elem(const void *base, int dt, int64_t idx) {
  switch (dt) {
    case KB_GEMM_BF16:
      return kb_bf16_to_f32(((const uint16_t *)base)[idx]);
    case KB_GEMM_F16:
      return kb_f16_to_f32(((const uint16_t *)base)[idx]);
    default:
      return ((const float *)base)[idx];
  }
}

/* ---- kb_linear's epilogue: bias, then activation ---- */

/* y[j] = act(y[j] + bias[col0 + j]) for j < len: the float32 values of
 * output columns col0 .. col0+len of one row.  The activation is the public
 * kernel itself (NULL context: inline, nothing recorded), so kb_linear
 * gives exactly kb_gemm, + bias, then kb_<activation>. */
void kb__linear_row(const struct kb_linear_epilogue *e, int dt, float *y, int64_t len, int64_t col0) {
  if (e->bias != NULL)
    for (int64_t j = 0; j < len; j++) y[j] = y[j] + load_elem(e->bias, dt, col0 + j);
  switch (e->act) {
    case KB_ACTIVATION_RELU:
      /* NaN stays NaN; -0.0 and negatives become +0. */
      for (int64_t j = 0; j < len; j++) y[j] = y[j] > 0.0f || y[j] != y[j] ? y[j] : 0.0f;
      break;
    case KB_ACTIVATION_GELU:
      kb_gelu(NULL, len, y, y);
      break;
    case KB_ACTIVATION_GELU_TANH:
      kb_gelu_tanh(NULL, len, y, y);
      break;
    case KB_ACTIVATION_SILU:
      kb_silu(NULL, len, y, y);
      break;
    default:
      break;
  }
}

/* ---- the job: a plan plus its operands ---- */

enum { KIND_K0 = 0, KIND_GEMV = 1, KIND_BLOCKED = 2, KIND_SMALL = 3 };

struct gemm_job {
  const struct kb_gemm_plan *p;
  const struct kb_gemm_ops *ops;
  int dt, dt_b;
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const void *a, *b;
  int64_t lda, ldb;
  void *c;
  int64_t ldc;
  float *scratch;
  const struct kb_linear_epilogue *lin;
  int dt_a; /* storage type of the product's A: dt, or the weights' type when swapped */
};

/* Rows [*lo, *hi) of part `t` of `parts` over `count` elements in units of
 * `unit` (only the last part is ragged). */
static void split_units(int64_t count, int64_t unit, int64_t parts, int64_t t, int64_t *lo, int64_t *hi) {
  int64_t units = (count + unit - 1) / unit, b, e;
  kb__task_range(units, parts, t, &b, &e);
  *lo = b * unit < count ? b * unit : count;
  *hi = e * unit < count ? e * unit : count;
}

/* op(A)[i0 .. i0+rows) x [p0 .. p0+kc) into dst[p * mr + i], zero rows past `rows`. */
static void pack_a(const struct gemm_job *g, int64_t i0, int64_t rows, int64_t p0, int64_t kc, float *dst) {
  int64_t mr = g->ops->mr;
  for (int64_t i = 0; i < mr; i++) {
    if (i >= rows) {
      for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = 0.0f;
      continue;
    }
    int64_t base = g->trans_a ? p0 * g->lda + (i0 + i) : (i0 + i) * g->lda + p0;
    int64_t step = g->trans_a ? g->lda : 1;
    if (g->dt_a == KB_GEMM_F32) {
      const float *src = (const float *)g->a + base;
      for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = src[p * step];
    } else {
      for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = load_elem(g->a, g->dt_a, base + p * step);
    }
  }
}

/* op(B)[p0 .. p0+kc) x [j0 .. j0+cols) into nr-column micro-panels. */
static void pack_b(const struct gemm_job *g, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float *dst) {
  int64_t nr = g->ops->nr;
  if (g->trans_b && g->dt_b == KB_GEMM_F32) {
    g->ops->pack_bt(kc, cols, (const float *)g->b + j0 * g->ldb + p0, g->ldb, dst, nr);
    return;
  }
  if (g->trans_b) {
    g->ops->pack_bt_half(g->dt_b, kc, cols, (const uint16_t *)g->b + j0 * g->ldb + p0, g->ldb, dst, nr);
    return;
  }
  for (int64_t q = 0; q * nr < cols; q++) {
    float *panel = dst + q * kc * nr;
    int64_t jb = j0 + q * nr, w = cols - q * nr < nr ? cols - q * nr : nr;
    for (int64_t p = 0; p < kc; p++) {
      float *out = panel + p * nr;
      if (!g->trans_b && g->dt_b == KB_GEMM_F32) {
        memcpy(out, (const float *)g->b + (p0 + p) * g->ldb + jb, (size_t)w * sizeof(float));
      } else if (!g->trans_b) {
        for (int64_t jj = 0; jj < w; jj++) out[jj] = load_elem(g->b, g->dt_b, (p0 + p) * g->ldb + jb + jj);
      } else {
        for (int64_t jj = 0; jj < w; jj++) out[jj] = load_elem(g->b, g->dt_b, (jb + jj) * g->ldb + p0 + p);
      }
      for (int64_t jj = w; jj < nr; jj++) out[jj] = 0.0f;
    }
  }
}

/* Prefetches columns [p0, p0 + kc) of rows [r0, r1) of A (elements of
 * elem bytes, rows lda apart, not transposed): the next tile's rows of A
 * read in place or widened, so that they come from memory while this tile
 * computes.  Only data moves.  kb_linear_w [3584, 1024] float32 on a Zen 4
 * (the weights from memory, swapped): 9-48 rows 5-9% faster, 128-192 rows
 * unchanged.  Always inlined: out of line, GCC 12 judged the function free
 * of side effects and dropped its calls. */
__attribute__((always_inline)) static inline void prefetch_next_rows(const struct gemm_job *g, int64_t elem,
                                                                   int64_t r0, int64_t r1, int64_t p0, int64_t kc) {
  for (int64_t r = r0; r < r1; r++) {
    const char *row = (const char *)g->a + (r * g->lda + p0) * elem;
    for (int64_t off = 0; off < kc * elem; off += 64) __builtin_prefetch(row + off, 0, 2);
  }
}

/* The sequential packed-panel algorithm on rectangle [i0, i1) x [j0, j1). */
static void gemm_rect(const struct gemm_job *g, float *scratch, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const struct kb_gemm_ops *ops = g->ops;
  int64_t mr = ops->mr, nr = ops->nr, kc = g->p->bl.kc, mc = g->p->bl.mc, nc = g->p->bl.nc;
  int64_t rows = i1 - i0, cols = j1 - j0;
  float *apack = scratch, *bpack = scratch + g->p->a_pack, *cbuf = scratch + g->p->a_pack + g->p->b_pack;
  bool f32 = g->dt == KB_GEMM_F32;
  bool split_k = g->k > kc;

  bool swapped = g->p->swapped;
  /* Where the sums go: C itself (f32) or the rectangle's float32 buffer
   * (16-bit C; a swapped product's block of C^T, transposed into C below). */
  float *sums = f32 && !swapped ? (float *)g->c + i0 * g->ldc + j0 : cbuf;
  int64_t ld_sums = f32 && !swapped ? g->ldc : cols;
  /* C_old for the epilogue of a float32 C split along K. */
  const float *c_old = swapped ? cbuf : (const float *)g->c + i0 * g->ldc + j0;
  int64_t ld_old = swapped ? cols : g->ldc;
  /* The first row of the rectangle that sums holds (a swapped product's
   * buffer holds the current MC block). */
  int64_t srow = 0;
  if (f32 && split_k && g->beta != 0.0f) {
    for (int64_t i = 0; i < rows; i++) memcpy(cbuf + i * cols, c_old + i * ld_old, (size_t)cols * sizeof(float));
    c_old = cbuf;
    ld_old = cols;
  }

  for (int64_t ic = 0; ic < rows; ic += mc) {
    int64_t mcur = rows - ic < mc ? rows - ic : mc;
    if (swapped) srow = ic;
    for (int64_t pc = 0; pc < g->k; pc += kc) {
      int64_t kcur = g->k - pc < kc ? g->k - pc : kc;
      int first = pc == 0, is_last = pc + kcur >= g->k;
      if (!g->p->direct_a && !g->p->widen_a && !g->p->bf16_a)
        for (int64_t ir = 0; ir < mcur; ir += mr)
          pack_a(g, i0 + ic + ir, mcur - ir < mr ? mcur - ir : mr, pc, kcur, apack + (ir / mr) * mr * kcur);
      for (int64_t jc = 0; jc < cols; jc += nc) {
        int64_t ncur = cols - jc < nc ? cols - jc : nc;
        /* In place, only a ragged last panel needs a zero-padded copy. */
        int64_t full_cols = g->p->direct_b ? ncur / nr * nr : 0;
        if (full_cols < ncur)
          pack_b(g, pc, kcur, j0 + jc + full_cols, ncur - full_cols, bpack + (full_cols / nr) * kcur * nr);
        for (int64_t ir = 0; ir < mcur; ir += mr) {
          int64_t mrows = mcur - ir < mr ? mcur - ir : mr;
          const float *ap;
          int64_t a_rs = 1, a_cs = mr;
          int64_t gi = i0 + ic + ir;
          /* The next tile's rows, which an A read in place or widened
           * prefetches. */
          int64_t next_end = gi + 2 * mr < i1 ? gi + 2 * mr : i1;
          /* bfloat16 weights the level's kernel reads in place. */
          const uint16_t *a16 = NULL;
          if (g->p->bf16_a) {
            a16 = (const uint16_t *)g->a + gi * g->lda + pc;
            prefetch_next_rows(g, 2, gi + mrows, next_end, pc, kcur);
            ap = NULL;
            a_rs = g->lda;
            a_cs = 1;
          } else if (g->p->widen_a) {
            /* The tile's rows of 16-bit weights as padded float32 rows. */
            int64_t ld = kcur + KB_GEMM_WIDEN_PAD;
            for (int64_t i = 0; i < mrows; i++)
              ops->widen(g->dt_a, kcur, (const uint16_t *)g->a + (gi + i) * g->lda + pc, apack + i * ld);
            /* Without the prefetch the widening waits on memory, and the
             * swapped product was slower than packing the weights
             * (kb_linear_w [3584, 1024] bf16 at 32 rows on a Zen 4:
             * 3.5-3.7 ms packed, 3.6-3.75 swapped without it, 2.7-2.9
             * with it). */
            prefetch_next_rows(g, 2, gi + mrows, next_end, pc, kcur);
            ap = apack;
            a_rs = ld;
            a_cs = 1;
          } else if (!g->p->direct_a) {
            ap = apack + (ir / mr) * mr * kcur;
          } else if (g->trans_a) {
            ap = (const float *)g->a + pc * g->lda + gi;
            a_rs = 1;
            a_cs = g->lda;
          } else {
            ap = (const float *)g->a + gi * g->lda + pc;
            a_rs = g->lda;
            a_cs = 1;
            prefetch_next_rows(g, 4, gi + mrows, next_end, pc, kcur);
          }
          for (int64_t jr = 0; jr < ncur; jr += nr) {
            int64_t ncols = ncur - jr < nr ? ncur - jr : nr;
            int64_t ri = ic + ir, cj = jc + jr; /* within the rectangle */
            const float *bp = bpack + (jr / nr) * kcur * nr;
            int64_t b_rs = nr;
            if (jr < full_cols) {
              bp = (const float *)g->b + pc * g->ldb + j0 + cj;
              b_rs = g->ldb;
            }
            struct kb_gemm_epilogue e = {g->alpha, g->beta, c_old + (ri - srow) * ld_old + cj, ld_old};
            if (a16 != NULL)
              ops->kernel_bf16a(kcur, a16, a_rs, bp, b_rs, sums + (ri - srow) * ld_sums + cj, ld_sums, mrows, ncols,
                                first, is_last && f32 ? &e : NULL);
            else
              ops->kernel(kcur, ap, a_rs, a_cs, bp, b_rs, sums + (ri - srow) * ld_sums + cj, ld_sums, mrows, ncols,
                          first, is_last && f32 ? &e : NULL);
          }
          /* kb_linear: bias and activation on the finished rows of this
           * block while they are in cache. */
          if (is_last && g->lin != NULL && !swapped)
            for (int64_t i = 0; i < mrows; i++)
              kb__linear_row(g->lin, g->dt, sums + (ic + ir + i) * ld_sums + jc, ncur, j0 + jc);
        }
      }
    }
    if (swapped) {
      /* Rows ic.. of the rectangle are output columns i0 + ic.. of C, its
       * columns the rows j0.. of C. */
      float *cdst = (float *)g->c + j0 * g->ldc + i0 + ic;
      ops->transpose(mcur, cols, cbuf, cols, cdst, g->ldc);
      if (g->lin != NULL)
        for (int64_t j = 0; j < cols; j++) kb__linear_row(g->lin, g->dt, cdst + j * g->ldc, mcur, i0 + ic);
    }
  }

  if (!f32) {
    /* c = narrow(alpha * sum (+ beta * widen(c))), the float32 epilogue. */
    uint16_t *c16 = (uint16_t *)g->c;
    for (int64_t i = 0; i < rows; i++) {
      uint16_t *crow = c16 + (i0 + i) * g->ldc + j0;
      for (int64_t j = 0; j < cols; j++) {
        float v = g->alpha * cbuf[i * cols + j];
        if (g->beta != 0.0f) v = v + g->beta * load_elem(crow, g->dt, j);
        crow[j] = g->dt == KB_GEMM_F16 ? kb_f32_to_f16(v) : kb_f32_to_bf16(v);
      }
    }
  }
}

static void gemm_body(void *arg, int64_t begin, int64_t end) {
  const struct gemm_job *g = (const struct gemm_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t i0, i1, j0, j1;
    split_units(g->m, g->ops->mr, g->p->tm, t / g->p->tn, &i0, &i1);
    split_units(g->n, g->ops->nr, g->p->tn, t % g->p->tn, &j0, &j1);
    if (i0 < i1 && j0 < j1) gemm_rect(g, g->scratch + t * g->p->per_task, i0, i1, j0, j1);
  }
}

/* k == 0: every sum is 0, C = alpha * 0 (+ beta * C). */
static void gemm_k0(struct gemm_job *g) {
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      int64_t idx = i * g->ldc + j;
      float v = g->alpha * 0.0f;
      if (g->beta != 0.0f) v = v + g->beta * load_elem(g->c, g->dt, idx);
      if (g->lin != NULL) kb__linear_row(g->lin, g->dt, &v, 1, j);
      if (g->dt == KB_GEMM_F32)
        ((float *)g->c)[idx] = v;
      else
        ((uint16_t *)g->c)[idx] = g->dt == KB_GEMM_F16 ? kb_f32_to_f16(v) : kb_f32_to_bf16(v);
    }
  }
}

/* ---- matrix-vector path (float32, m == 1 or n == 1) ---- */

struct gemv_job {
  const struct kb_gemm_ops *ops;
  bool dot;           /* mat rows run along p (gemv_dot) or along the output (gemv_axpy) */
  int64_t k, len;     /* sum length, outputs */
  const float *x;     /* k elements */
  const float *mat;
  int64_t ldm;
  float alpha, beta;
  float *out;         /* output j at out[j * inc] */
  int64_t inc;
  float *sums;        /* len floats of scratch */
  int64_t tasks;
  const struct kb_linear_epilogue *lin;
  bool outputs_are_columns; /* m == 1: output j is column j of C (else row j) */
};

static void gemv_body(void *arg, int64_t begin, int64_t end) {
  const struct gemv_job *g = (const struct gemv_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t j0, j1;
    split_units(g->len, 32, g->tasks, t, &j0, &j1);
    if (j0 >= j1) continue;
    float *s = g->sums + j0;
    if (g->dot)
      g->ops->gemv_dot(g->k, j1 - j0, g->x, g->mat + j0 * g->ldm, g->ldm, s);
    else
      g->ops->gemv_axpy(g->k, j1 - j0, g->x, g->mat + j0, g->ldm, s);
    for (int64_t j = j0; j < j1; j++) {
      float v = g->alpha * g->sums[j];
      if (g->beta != 0.0f) v = v + g->beta * g->out[j * g->inc];
      g->out[j * g->inc] = v;
    }
    if (g->lin != NULL) {
      if (g->outputs_are_columns)
        kb__linear_row(g->lin, KB_GEMM_F32, g->out + j0, j1 - j0, j0);
      else /* one output column: every row uses bias[0] */
        for (int64_t j = j0; j < j1; j++) kb__linear_row(g->lin, KB_GEMM_F32, g->out + j * g->inc, 1, 0);
    }
  }
}

/* The matrix-vector product of a job on plan->gemv_* (m == 1 or n == 1). */
static void gemv_exec(const kb_context *ctx, const struct gemm_job *j, float *scratch) {
  const struct kb_gemm_plan *p = j->p;
  struct gemv_job g;
  g.ops = j->ops;
  g.lin = j->lin;
  g.k = j->k;
  g.alpha = j->alpha;
  g.beta = j->beta;
  g.len = p->gemv_len;
  g.tasks = p->gemv_tasks;
  /* The vector operand, read with stride xs from x0. */
  const float *x0;
  int64_t xs;
  if (j->m == 1) {
    /* C[0, j] = sum_p op(A)[0, p] * op(B)[p, j] */
    x0 = (const float *)j->a;
    xs = j->trans_a ? j->lda : 1;
    g.mat = (const float *)j->b;
    g.ldm = j->ldb;
    g.dot = j->trans_b;
    g.out = (float *)j->c;
    g.inc = 1;
    g.outputs_are_columns = true;
  } else {
    /* C[i, 0] = sum_p op(A)[i, p] * op(B)[p, 0] */
    x0 = (const float *)j->b;
    xs = j->trans_b ? 1 : j->ldb;
    g.mat = (const float *)j->a;
    g.ldm = j->lda;
    g.dot = !j->trans_a;
    g.out = (float *)j->c;
    g.inc = j->ldc;
    g.outputs_are_columns = false;
  }
  g.sums = scratch;
  if (xs != 1) {
    float *x = scratch + g.len;
    for (int64_t q = 0; q < j->k; q++) x[q] = x0[q * xs];
    g.x = x;
  } else {
    g.x = x0;
  }
  kb__parallel_for(ctx, g.tasks, 1, gemv_body, &g);
}

/* ---- small-m path (m <= KB_GEMM_SMALL_M: decode, small batches) ---- */

struct small_job {
  const struct gemm_job *g;
  const float *a;   /* op(A) as float32 rows */
  int64_t lda;
};

/* Outputs [j0, j0 + len) of every row: the kernel's chains into tile, then
 * the epilogue (alpha, beta, the linear epilogue) and the store in C's type,
 * as the blocked path does. */
static void small_range(const struct small_job *s, int64_t j0, int64_t len, float *tile) {
  const struct gemm_job *g = s->g;
  int64_t eb = g->dt_b == KB_GEMM_F32 ? 4 : 2;
  const char *b = (const char *)g->b + (g->trans_b ? j0 * g->ldb * eb : j0 * eb);
  kb_gemm_small_fn kernel = g->trans_b ? g->ops->small_dot : g->ops->small_axpy;
  kernel(g->dt_b, g->m, len, g->k, s->a, s->lda, b, g->ldb, tile, len);
  for (int64_t i = 0; i < g->m; i++) {
    float *row = tile + i * len;
    int64_t base = i * g->ldc + j0;
    for (int64_t j = 0; j < len; j++) {
      float v = g->alpha * row[j];
      if (g->beta != 0.0f) v = v + g->beta * load_elem(g->c, g->dt, base + j);
      row[j] = v;
    }
    if (g->lin != NULL) kb__linear_row(g->lin, g->dt, row, len, j0);
    if (g->dt == KB_GEMM_F32) {
      memcpy((float *)g->c + base, row, (size_t)len * sizeof(float));
    } else {
      uint16_t *crow = (uint16_t *)g->c + base;
      for (int64_t j = 0; j < len; j++) crow[j] = g->dt == KB_GEMM_F16 ? kb_f32_to_f16(row[j]) : kb_f32_to_bf16(row[j]);
    }
  }
}

static void small_body(void *arg, int64_t begin, int64_t end) {
  const struct small_job *s = (const struct small_job *)arg;
  const struct kb_gemm_plan *p = s->g->p;
  float tile[KB_GEMM_SMALL_M * KB_SMALL_TILE];
  for (int64_t t = begin; t < end; t++) {
    int64_t j0, j1;
    split_units(p->n, p->small_unit, p->small_tasks, t, &j0, &j1);
    for (int64_t j = j0; j < j1; j += KB_SMALL_TILE) small_range(s, j, j1 - j < KB_SMALL_TILE ? j1 - j : KB_SMALL_TILE, tile);
  }
}

/* The small-m product of a job: op(A) made float32 rows first when it is
 * transposed or 16-bit (m x k floats of scratch), then tasks over the
 * outputs, each output computed by one task. */
static void small_exec(const kb_context *ctx, const struct gemm_job *g, float *scratch) {
  struct small_job s = {g, (const float *)g->a, g->lda};
  if (g->p->small_copy_a) {
    /* Rows past m (when m > 8: the kernels' padding) are zeros. */
    int64_t rows = g->m > 8 ? KB_GEMM_SMALL_M : g->m;
    for (int64_t i = 0; i < rows; i++)
      for (int64_t q = 0; q < g->k; q++)
        scratch[i * g->k + q] =
            i < g->m ? load_elem(g->a, g->dt, g->trans_a ? q * g->lda + i : i * g->lda + q) : 0.0f;
    s.a = scratch;
    s.lda = g->k;
  }
  kb__parallel_for(ctx, g->p->small_tasks, 1, small_body, &s);
}

/* ---- planning and running ---- */

/* Whether the blocked path runs a product swapped (the header comment):
 * weights stored [n, k] (float32, or 16-bit ones widened a tile's rows at a
 * time), float32 C and no C_old, and rows that fit one NC block
 * of the swapped product, so that the weights are never packed, with each
 * task's share of the weights at least twice as many rows as A, so that
 * packing A costs less than packing those weights.  Measured on AVX-512
 * (docs/performance.md): 0.55-0.9x the time from 17 to 192 rows, even at
 * 224, 1.03-1.07x at 256-512 (the packed rows then crowd L2).  16-bit
 * weights take it on the same terms: since the tiles compute a few columns
 * past 16 without a full vector, widening in place beat packing at every
 * count of 20-44 rows measured (AVX-512 and AVX2 levels, Zen 4, 2026-12-07),
 * and bfloat16 read in place (kernel_bf16a) is faster still. */
static bool swaps(const kb_context *threads_ctx, const struct kb_gemm_blocking *bl, const struct kb_gemm_ops *ops,
                  int dt, bool trans_b, float beta, int64_t m, int64_t n) {
  return dt == KB_GEMM_F32 && trans_b && beta == 0.0f && m <= KB_GEMM_SWAP_ROWS &&
         round_up(m, ops->nr) <= bl->nc && n / kb__threads(threads_ctx) >= 2 * m;
}

kb_status kb__gemm_plan(kb_context *ctx, const char *fn, const kb_context *threads_ctx, int dt, int dt_b,
                        bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                        const struct kb_linear_epilogue *lin, struct kb_gemm_plan *p) {
  memset(p, 0, sizeof *p);
  p->ops = &kb__cpu_ops()->gemm;
  p->dt = dt;
  p->dt_b = dt_b;
  p->trans_a = trans_a;
  p->trans_b = trans_b;
  p->m = m;
  p->n = n;
  p->k = k;
  p->alpha = alpha;
  p->beta = beta;
  p->lin = lin;
  if (k == 0) {
    p->kind = KIND_K0;
    return KB_STATUS_OK;
  }
  const struct kb_gemm_ops *ops = p->ops;
  p->bl = blocking_for(ops->mr, ops->nr);
  /* Against weights stored [n, k] that the blocked path would run swapped
   * the level says up to how many rows the small-m dot beats it
   * (gemm_kernels.h). */
  int64_t small_max = KB_GEMM_SMALL_M;
  if (trans_b && swaps(threads_ctx, &p->bl, ops, dt, trans_b, beta, m, n))
    small_max = dt_b == KB_GEMM_F32 ? ops->small_dot_rows_f32 : ops->small_dot_rows_half;
  /* float32 with one row of A stays on the matrix-vector kernels below:
   * the same chain per output as the small-m kernels (so the same bits),
   * but they read [k, n] rows whole and one 16-row block of [n, k] at a
   * time, which measured faster for 1-64 MB matrices (docs/performance.md,
   * "Decoding"). */
  if (m <= small_max && !(m == 1 && dt == KB_GEMM_F32 && dt_b == KB_GEMM_F32)) {
    /* Few rows of A (decode): every element of B read once, in its own
     * type, by tasks over the outputs whose number follows B's bytes. */
    p->kind = KIND_SMALL;
    /* A is copied when it is not float32 rows, and when m > 8 (the kernels
     * then read 16 rows: gemm_kernels.h). */
    p->small_copy_a = dt != KB_GEMM_F32 || trans_a || (m > 8 && m < KB_GEMM_SMALL_M);
    p->small_unit = trans_b ? 32 : 64;
    p->small_units = (n + p->small_unit - 1) / p->small_unit;
    int64_t unit_bytes = p->small_unit * k * (dt_b == KB_GEMM_F32 ? 4 : 2);
    p->small_tasks = kb__task_count(threads_ctx, p->small_units,
                                    unit_bytes >= KB_SMALL_MIN_BYTES ? 1 : KB_SMALL_MIN_BYTES / unit_bytes + 1);
    int64_t dims[2] = {m > 8 ? KB_GEMM_SMALL_M : m, k};
    if (!p->small_copy_a) return KB_STATUS_OK;
    return kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims, &p->scratch_floats);
  }
  if (dt == KB_GEMM_F32 && dt_b == KB_GEMM_F32 && (m == 1 || n == 1)) {
    p->kind = KIND_GEMV;
    p->gemv_len = m == 1 ? n : m;
    /* The vector operand is gathered when it is strided. */
    p->gemv_gather = m == 1 ? trans_a : !trans_b;
    int64_t units = (p->gemv_len + 31) / 32, per_unit = 32 * k;
    p->gemv_tasks = kb__task_count(threads_ctx, units, per_unit >= KB_GEMV_MIN_WORK ? 1 : KB_GEMV_MIN_WORK / per_unit + 1);
    int64_t dims[1] = {p->gemv_len + (p->gemv_gather ? k : 0)};
    return kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 1, dims, &p->scratch_floats);
  }
  p->kind = KIND_BLOCKED;
  int64_t mr = ops->mr, nr = ops->nr;
  p->swapped = swaps(threads_ctx, &p->bl, ops, dt, trans_b, beta, m, n);
  if (p->swapped) {
    int64_t t = m;
    m = n;
    n = t;
    trans_b = !trans_a;
    trans_a = false;
    p->m = m;
    p->n = n;
    p->trans_a = trans_a;
    p->trans_b = trans_b;
  }
  /* Threads: as many rectangles as there is work for, tm x tn of them.
   * A rectangle reads its rows of op(A) and its columns of op(B) (each K
   * long), so the grid reads A tn times and B tm times: of the grids with
   * the most rectangles, the one with the least tn * m + tm * n, rows first
   * on a tie.  (A few rows against a wide B, an expert's or a prefill's
   * product of weights, then splits the columns and each weight is read
   * from memory once, not once per thread.)  The rectangles change nothing
   * but who computes what: every element's chain is the same. */
  int64_t mb = (m + mr - 1) / mr, nb = (n + nr - 1) / nr;
  int64_t work_per_tile = mr * nr * k;
  int64_t tasks = kb__task_count(threads_ctx, mb * nb,
                                 work_per_tile >= KB_GEMM_MIN_WORK ? 1 : KB_GEMM_MIN_WORK / work_per_tile + 1);
  int64_t best_tm = 1, best_tn = 1;
  for (int64_t tm = tasks; tm >= 1; tm--) {
    int64_t tn = tasks / tm;
    if (tm > mb || tn > nb) continue;
    /* In double: tn * m may exceed int64 for absurd shapes; equal costs
     * (m == n) are the same operations, so they still compare equal. */
    int64_t have = best_tm * best_tn;
    double cost = (double)tn * (double)m + (double)tm * (double)n;
    double best = (double)best_tn * (double)m + (double)best_tm * (double)n;
    if (tm * tn > have || (tm * tn == have && cost < best)) {
      best_tm = tm;
      best_tn = tn;
    }
  }
  p->tm = best_tm;
  p->tn = best_tn;
  p->tasks = tasks = best_tm * best_tn;
  /* The largest rectangle decides the scratch of every task. */
  int64_t rect_rows = round_up((mb + p->tm - 1) / p->tm * mr, mr), rect_cols = ((nb + p->tn - 1) / p->tn) * nr;
  if (rect_rows > round_up(m, mr)) rect_rows = round_up(m, mr);
  if (rect_cols > round_up(n, nr)) rect_cols = round_up(n, nr);
  int64_t kc = k < p->bl.kc ? k : p->bl.kc;
  int64_t mcb = rect_rows < p->bl.mc ? rect_rows : p->bl.mc;
  int64_t ncb = rect_cols < p->bl.nc ? rect_cols : p->bl.nc;
  /* A is read in place when it is float32 and each micro-panel serves a
   * single NC block: packing would cost more than it saves. */
  int dt_a = p->swapped ? dt_b : dt, dt_bb = p->swapped ? dt : dt_b;
  p->direct_a = dt_a == KB_GEMM_F32 && rect_cols <= p->bl.nc;
  p->bf16_a = p->swapped && dt_a == KB_GEMM_BF16 && ops->kernel_bf16a != NULL;
  p->widen_a = p->swapped && dt_a != KB_GEMM_F32 && !p->bf16_a;
  /* B is read in place when it is float32 rows of op(B) and small enough
   * to stay in L2 between the micro-panels of A that reuse it. */
  p->direct_b = dt_bb == KB_GEMM_F32 && !trans_b && k * n <= KB_GEMM_DIRECT_B;
  /* Each part starts on a 64-byte boundary: the microkernel's aligned loads. */
  p->a_pack = p->widen_a                ? round_up(mr * (kc + KB_GEMM_WIDEN_PAD), 16)
             : p->direct_a || p->bf16_a ? 0
                                        : round_up(mcb * kc, 16);
  p->b_pack = round_up(kc * round_up(ncb, nr), 16);
  bool need_cbuf = dt != KB_GEMM_F32 || (k > p->bl.kc && beta != 0.0f);
  p->c_buf = need_cbuf ? rect_rows * rect_cols : 0;
  /* A swapped product's sums wait in one MC block of C^T. */
  if (p->swapped) p->c_buf = mcb * rect_cols;
  /* Keep every task's block on its own cache lines. */
  p->per_task = round_up(p->a_pack + p->b_pack + p->c_buf, 16);
  int64_t dims[2] = {tasks, p->per_task};
  return kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims, &p->scratch_floats);
}

bool kb__gemm_plan_is_small(const struct kb_gemm_plan *plan) { return plan->kind == KIND_SMALL; }

void kb__gemm_exec(const kb_context *threads_ctx, const struct kb_gemm_plan *p, const void *a, int64_t lda,
                   const void *b, int64_t ldb, void *c, int64_t ldc, float *scratch) {
  struct gemm_job g = {p, p->ops, p->dt, p->dt_b, p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha, p->beta,
                       a, b,      lda,   ldb,     c,          ldc,        scratch, p->lin, p->dt};
  if (p->swapped) {
    /* The weights (stored as dt_b) are the product's A, the float32 rows
     * its B. */
    g.dt_a = p->dt_b;
    g.dt_b = p->dt;
    /* op(B)^T, the weights, is the product's A; op(A)^T its B. */
    g.a = b;
    g.lda = ldb;
    g.b = a;
    g.ldb = lda;
  }
  switch (p->kind) {
    case KIND_K0:
      gemm_k0(&g);
      break;
    case KIND_GEMV:
      gemv_exec(threads_ctx, &g, scratch);
      break;
    case KIND_SMALL:
      small_exec(threads_ctx, &g, scratch);
      break;
    default:
      kb__parallel_for(threads_ctx, p->tasks, 1, gemm_body, &g);
      break;
  }
}

float *kb__gemm_scratch(kb_context *ctx, const char *fn, int64_t floats) {
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)(floats > 0 ? floats : 1) * sizeof(float)) != 0 || mem == NULL) {
    kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch",
             (long long)(floats * (int64_t)sizeof(float)));
    return NULL;
  }
  return (float *)mem;
}

kb_status kb__gemm_run(kb_context *ctx, const char *fn, int dt, int dt_b, bool trans_a, bool trans_b, int64_t m,
                       int64_t n, int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                       float beta, void *c, int64_t ldc, const struct kb_linear_epilogue *lin) {
  struct kb_gemm_plan plan;
  KB_TRY(kb__gemm_plan(ctx, fn, ctx, dt, dt_b, trans_a, trans_b, m, n, k, alpha, beta, lin, &plan));
  float *scratch = NULL;
  if (plan.scratch_floats > 0) {
    scratch = kb__gemm_scratch(ctx, fn, plan.scratch_floats);
    if (scratch == NULL) return KB_STATUS_OUT_OF_MEMORY;
  }
  kb__gemm_exec(ctx, &plan, a, lda, b, ldb, c, ldc, scratch);
  free(scratch);
  return KB_STATUS_OK;
}
