/* gemm.c - C = alpha * op(A) * op(B) + beta * C, row-major, in float32 and
 * in bf16 / f16 storage: validation, blocking, threading and packing around
 * the instruction-set-specific microkernels of gemm_kernels.h.
 *
 * Every element of C is the fma chain of gemm_kernels.h (p increasing, one
 * rounding per step) followed by the alpha / beta epilogue, whatever the
 * path: so results are identical for every thread count, every blocking and
 * every instruction-set level.
 *
 * The general path follows the classic packed-panel scheme: for a block of
 * MC rows and KC steps of p, A is packed into micro-panels of MR rows (read
 * from L1 by the microkernel: MR x KC floats take half of L1) and for every
 * NC columns op(B) is packed into micro-panels of NR columns (the KC x NC
 * block stays in L2); the microkernel then sweeps the NR-panels for each
 * MR-panel.  Sums cross K blocks through C itself (or a saved copy of C_old
 * when beta != 0).  Threads split C into rectangles of whole tiles (rows
 * first, then columns) and each packs what its rectangle needs: no thread
 * ever splits a sum.  m == 1 and n == 1 use matrix-vector kernels that read
 * the matrix once at memory speed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "half.h"
#include "internal.h"
#include "reduced.h"

/* Multiply-adds per task below which another thread is not worth waking. */
#define KB_GEMM_MIN_WORK ((int64_t)1 << 18)
/* Elements of B (k * n) up to which float32 B is read in place, unpacked:
 * 64 KiB, which stays in L2 between its uses. */
#define KB_GEMM_DIRECT_B ((int64_t)16384)
/* Matrix elements per task of the matrix-vector path (memory bound). */
#define KB_GEMV_MIN_WORK ((int64_t)1 << 16)

enum { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2 };

/* ---- blocking ---- */

struct blocking {
  int64_t kc, mc, nc;
};

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
static struct blocking blocking_for(int64_t mr, int64_t nr) {
  pthread_once(&caches_once, read_caches);
  int64_t l1 = l1_bytes, l2 = l2_bytes;
  if (l1 > 64 * 1024) l1 = 64 * 1024;
  if (l2 > 4 * 1024 * 1024) l2 = 4 * 1024 * 1024;
  struct blocking b;
  b.kc = l1 * 3 / 4 / (4 * mr) / 16 * 16;
  if (b.kc < 64) b.kc = 64;
  if (b.kc > 512) b.kc = 512;
  b.nc = l2 / 2 / (4 * b.kc) / nr * nr;
  if (b.nc < nr) b.nc = nr;
  b.mc = l2 / (4 * b.kc) / mr * mr;
  if (b.mc < mr) b.mc = mr;
  return b;
}

/* ---- element access in any storage type ---- */

static inline float load_elem(const void *base, int dt, int64_t idx) {
  switch (dt) {
    case DT_BF16:
      return kb_bf16_to_f32(((const uint16_t *)base)[idx]);
    case DT_F16:
      return kb_f16_to_f32(((const uint16_t *)base)[idx]);
    default:
      return ((const float *)base)[idx];
  }
}

/* ---- kb_linear's epilogue: bias, then activation ---- */

struct linear_epilogue {
  const void *bias; /* [n] in the job's storage type, or NULL */
  kb_activation act;
};

/* y[j] = act(y[j] + bias[col0 + j]) for j < len: the float32 values of
 * output columns col0 .. col0+len of one row.  The activation is the public
 * kernel itself (NULL context: inline, nothing recorded), so kb_linear
 * gives exactly kb_gemm, + bias, then kb_<activation>. */
static void linear_row(const struct linear_epilogue *e, int dt, float *y, int64_t len, int64_t col0) {
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

/* ---- the job ---- */

struct gemm_job {
  const struct kb_gemm_ops *ops;
  struct blocking bl;
  int dt; /* storage type of A, B and C */
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const void *a, *b;
  int64_t lda, ldb;
  void *c;
  int64_t ldc;
  /* Threads: a tm x tn grid of rectangles, cut at tile boundaries. */
  int64_t tm, tn;
  /* Per-task scratch, floats: packed A block, packed B block, then a
   * rectangle-sized buffer (C_old when beta != 0 and K is split, or the
   * float32 sums of a 16-bit C). */
  float *scratch;
  int64_t a_pack, b_pack, c_buf, per_task;
  bool direct_a; /* A read in place (float32, each micro-panel used by one NC block) */
  bool direct_b; /* full B micro-panels read in place (float32, not transposed, small) */
  const struct linear_epilogue *lin; /* kb_linear's bias and activation, or NULL */
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
    if (g->dt == DT_F32) {
      const float *src = (const float *)g->a + base;
      for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = src[p * step];
    } else {
      for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = load_elem(g->a, g->dt, base + p * step);
    }
  }
}

/* op(B)[p0 .. p0+kc) x [j0 .. j0+cols) into nr-column micro-panels. */
static void pack_b(const struct gemm_job *g, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float *dst) {
  int64_t nr = g->ops->nr;
  if (g->trans_b && g->dt == DT_F32) {
    g->ops->pack_bt(kc, cols, (const float *)g->b + j0 * g->ldb + p0, g->ldb, dst, nr);
    return;
  }
  for (int64_t q = 0; q * nr < cols; q++) {
    float *panel = dst + q * kc * nr;
    int64_t jb = j0 + q * nr, w = cols - q * nr < nr ? cols - q * nr : nr;
    for (int64_t p = 0; p < kc; p++) {
      float *out = panel + p * nr;
      if (!g->trans_b && g->dt == DT_F32) {
        memcpy(out, (const float *)g->b + (p0 + p) * g->ldb + jb, (size_t)w * sizeof(float));
      } else if (!g->trans_b) {
        for (int64_t jj = 0; jj < w; jj++) out[jj] = load_elem(g->b, g->dt, (p0 + p) * g->ldb + jb + jj);
      } else {
        for (int64_t jj = 0; jj < w; jj++) out[jj] = load_elem(g->b, g->dt, (jb + jj) * g->ldb + p0 + p);
      }
      for (int64_t jj = w; jj < nr; jj++) out[jj] = 0.0f;
    }
  }
}

/* The sequential packed-panel algorithm on rectangle [i0, i1) x [j0, j1). */
static void gemm_rect(const struct gemm_job *g, float *scratch, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const struct kb_gemm_ops *ops = g->ops;
  int64_t mr = ops->mr, nr = ops->nr, kc = g->bl.kc, mc = g->bl.mc, nc = g->bl.nc;
  int64_t rows = i1 - i0, cols = j1 - j0;
  float *apack = scratch, *bpack = scratch + g->a_pack, *cbuf = scratch + g->a_pack + g->b_pack;
  bool f32 = g->dt == DT_F32;
  bool split_k = g->k > kc;

  /* Where the sums go: C itself (f32) or the rectangle's float32 buffer. */
  float *sums = f32 ? (float *)g->c + i0 * g->ldc + j0 : cbuf;
  int64_t ld_sums = f32 ? g->ldc : cols;
  /* C_old for the epilogue of a float32 C split along K. */
  const float *c_old = (const float *)g->c + i0 * g->ldc + j0;
  int64_t ld_old = g->ldc;
  if (f32 && split_k && g->beta != 0.0f) {
    for (int64_t i = 0; i < rows; i++) memcpy(cbuf + i * cols, c_old + i * ld_old, (size_t)cols * sizeof(float));
    c_old = cbuf;
    ld_old = cols;
  }

  for (int64_t ic = 0; ic < rows; ic += mc) {
    int64_t mcur = rows - ic < mc ? rows - ic : mc;
    for (int64_t pc = 0; pc < g->k; pc += kc) {
      int64_t kcur = g->k - pc < kc ? g->k - pc : kc;
      int first = pc == 0, is_last = pc + kcur >= g->k;
      if (!g->direct_a)
        for (int64_t ir = 0; ir < mcur; ir += mr)
          pack_a(g, i0 + ic + ir, mcur - ir < mr ? mcur - ir : mr, pc, kcur, apack + (ir / mr) * mr * kcur);
      for (int64_t jc = 0; jc < cols; jc += nc) {
        int64_t ncur = cols - jc < nc ? cols - jc : nc;
        /* In place, only a ragged last panel needs a zero-padded copy. */
        int64_t full_cols = g->direct_b ? ncur / nr * nr : 0;
        if (full_cols < ncur)
          pack_b(g, pc, kcur, j0 + jc + full_cols, ncur - full_cols, bpack + (full_cols / nr) * kcur * nr);
        for (int64_t ir = 0; ir < mcur; ir += mr) {
          int64_t mrows = mcur - ir < mr ? mcur - ir : mr;
          const float *ap;
          int64_t a_rs = 1, a_cs = mr;
          int64_t gi = i0 + ic + ir;
          if (!g->direct_a) {
            ap = apack + (ir / mr) * mr * kcur;
          } else if (g->trans_a) {
            ap = (const float *)g->a + pc * g->lda + gi;
            a_rs = 1;
            a_cs = g->lda;
          } else {
            ap = (const float *)g->a + gi * g->lda + pc;
            a_rs = g->lda;
            a_cs = 1;
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
            struct kb_gemm_epilogue e = {g->alpha, g->beta, c_old + ri * ld_old + cj, ld_old};
            ops->kernel(kcur, ap, a_rs, a_cs, bp, b_rs, sums + ri * ld_sums + cj, ld_sums, mrows, ncols, first,
                        is_last && f32 ? &e : NULL);
          }
          /* kb_linear: bias and activation on the finished rows of this
           * block while they are in cache. */
          if (is_last && g->lin != NULL)
            for (int64_t i = 0; i < mrows; i++)
              linear_row(g->lin, g->dt, sums + (ic + ir + i) * ld_sums + jc, ncur, j0 + jc);
        }
      }
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
        crow[j] = g->dt == DT_F16 ? kb_f32_to_f16(v) : kb_f32_to_bf16(v);
      }
    }
  }
}

static void gemm_body(void *arg, int64_t begin, int64_t end) {
  const struct gemm_job *g = (const struct gemm_job *)arg;
  for (int64_t t = begin; t < end; t++) {
    int64_t i0, i1, j0, j1;
    split_units(g->m, g->ops->mr, g->tm, t / g->tn, &i0, &i1);
    split_units(g->n, g->ops->nr, g->tn, t % g->tn, &j0, &j1);
    if (i0 < i1 && j0 < j1) gemm_rect(g, g->scratch + t * g->per_task, i0, i1, j0, j1);
  }
}

/* k == 0: every sum is 0, C = alpha * 0 (+ beta * C). */
static void gemm_k0(struct gemm_job *g) {
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t j = 0; j < g->n; j++) {
      int64_t idx = i * g->ldc + j;
      float v = g->alpha * 0.0f;
      if (g->beta != 0.0f) v = v + g->beta * load_elem(g->c, g->dt, idx);
      if (g->lin != NULL) linear_row(g->lin, g->dt, &v, 1, j);
      if (g->dt == DT_F32)
        ((float *)g->c)[idx] = v;
      else
        ((uint16_t *)g->c)[idx] = g->dt == DT_F16 ? kb_f32_to_f16(v) : kb_f32_to_bf16(v);
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
  const struct linear_epilogue *lin;
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
        linear_row(g->lin, DT_F32, g->out + j0, j1 - j0, j0);
      else /* one output column: every row uses bias[0] */
        for (int64_t j = j0; j < j1; j++) linear_row(g->lin, DT_F32, g->out + j * g->inc, 1, 0);
    }
  }
}

static kb_status gemv(kb_context *ctx, const char *fn, const struct kb_gemm_ops *ops, bool trans_a, bool trans_b,
                      int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc, const struct linear_epilogue *lin) {
  struct gemv_job g;
  g.ops = ops;
  g.lin = lin;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  /* The vector operand, read with stride xs from x0. */
  const float *x0;
  int64_t xs;
  if (m == 1) {
    /* C[0, j] = sum_p op(A)[0, p] * op(B)[p, j] */
    x0 = a;
    xs = trans_a ? lda : 1;
    g.len = n;
    g.mat = b;
    g.ldm = ldb;
    g.dot = trans_b;
    g.out = c;
    g.inc = 1;
    g.outputs_are_columns = true;
  } else {
    /* C[i, 0] = sum_p op(A)[i, p] * op(B)[p, 0] */
    x0 = b;
    xs = trans_b ? 1 : ldb;
    g.len = m;
    g.mat = a;
    g.ldm = lda;
    g.dot = !trans_a;
    g.out = c;
    g.inc = ldc;
    g.outputs_are_columns = false;
  }
  int64_t need = g.len + (xs != 1 ? k : 0), sums_count;
  int64_t dims[1] = {need};
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 1, dims, &sums_count));
  float *scratch = (float *)malloc((size_t)(sums_count > 0 ? sums_count : 1) * sizeof(float));
  if (scratch == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch",
                    (long long)(sums_count * (int64_t)sizeof(float)));
  g.sums = scratch;
  if (xs != 1) {
    float *x = scratch + g.len;
    for (int64_t p = 0; p < k; p++) x[p] = x0[p * xs];
    g.x = x;
  } else {
    g.x = x0;
  }
  int64_t units = (g.len + 31) / 32;
  int64_t per_unit = 32 * (k > 0 ? k : 1);
  g.tasks = kb__task_count(ctx, units, per_unit >= KB_GEMV_MIN_WORK ? 1 : KB_GEMV_MIN_WORK / per_unit + 1);
  kb__parallel_for(ctx, g.tasks, 1, gemv_body, &g);
  free(scratch);
  return KB_STATUS_OK;
}

/* ---- the general path ---- */

static int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

/* Runs the validated multiply with m * n > 0 (dt: storage type). */
static kb_status compute(kb_context *ctx, const char *fn, int dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                         int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                         void *c, int64_t ldc, const struct linear_epilogue *lin) {
  const struct kb_cpu_ops *cpu = kb__cpu_ops();
  const struct kb_gemm_ops *ops = &cpu->gemm;
  struct gemm_job g;
  memset(&g, 0, sizeof g);
  g.ops = ops;
  g.dt = dt;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  g.a = a;
  g.b = b;
  g.lda = lda;
  g.ldb = ldb;
  g.c = c;
  g.ldc = ldc;
  g.lin = lin;
  if (k == 0) {
    gemm_k0(&g);
    return KB_STATUS_OK;
  }
  if (dt == DT_F32 && (m == 1 || n == 1))
    return gemv(ctx, fn, ops, trans_a, trans_b, m, n, k, alpha, (const float *)a, lda, (const float *)b, ldb, beta,
                (float *)c, ldc, lin);

  int64_t mr = ops->mr, nr = ops->nr;
  g.bl = blocking_for(mr, nr);
  /* Threads: as many rectangles as there is work for, rows first. */
  int64_t mb = (m + mr - 1) / mr, nb = (n + nr - 1) / nr;
  int64_t work_per_tile = mr * nr * k;
  int64_t tasks = kb__task_count(ctx, mb * nb, work_per_tile >= KB_GEMM_MIN_WORK ? 1 : KB_GEMM_MIN_WORK / work_per_tile + 1);
  if (mb >= tasks) {
    g.tm = tasks;
    g.tn = 1;
  } else {
    g.tm = mb;
    g.tn = tasks / mb;
    tasks = g.tm * g.tn;
  }
  /* The largest rectangle decides the scratch of every task. */
  int64_t rect_rows = round_up((mb + g.tm - 1) / g.tm * mr, mr), rect_cols = ((nb + g.tn - 1) / g.tn) * nr;
  if (rect_rows > round_up(m, mr)) rect_rows = round_up(m, mr);
  if (rect_cols > round_up(n, nr)) rect_cols = round_up(n, nr);
  int64_t kc = k < g.bl.kc ? k : g.bl.kc;
  int64_t mcb = rect_rows < g.bl.mc ? rect_rows : g.bl.mc;
  int64_t ncb = rect_cols < g.bl.nc ? rect_cols : g.bl.nc;
  /* A is read in place when it is float32 and each micro-panel serves a
   * single NC block: packing would cost more than it saves. */
  g.direct_a = dt == DT_F32 && rect_cols <= g.bl.nc;
  /* B is read in place when it is float32 rows of op(B) and small enough
   * to stay in L2 between the micro-panels of A that reuse it. */
  g.direct_b = dt == DT_F32 && !trans_b && k * n <= KB_GEMM_DIRECT_B;
  /* Each part starts on a 64-byte boundary: the microkernel's aligned loads. */
  g.a_pack = g.direct_a ? 0 : round_up(mcb * kc, 16);
  g.b_pack = round_up(kc * round_up(ncb, nr), 16);
  bool need_cbuf = dt != DT_F32 || (k > g.bl.kc && beta != 0.0f);
  g.c_buf = need_cbuf ? rect_rows * rect_cols : 0;
  /* Keep every task's block on its own cache lines. */
  g.per_task = round_up(g.a_pack + g.b_pack + g.c_buf, 16);
  int64_t dims[2] = {tasks, g.per_task}, total;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims, &total));
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)total * sizeof(float)) != 0 || mem == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch",
                    (long long)(total * (int64_t)sizeof(float)));
  g.scratch = (float *)mem;
  kb__parallel_for(ctx, tasks, 1, gemm_body, &g);
  free(mem);
  return KB_STATUS_OK;
}

/* Fails with SHAPE_MISMATCH unless ld >= max(1, row_len). */
static kb_status check_ld(kb_context *ctx, const char *fn, const char *name, int64_t ld, int64_t row_len) {
  int64_t need = row_len > 1 ? row_len : 1;
  if (ld < need)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be >= %lld (the stored row length, at least 1), got %lld",
                    name, (long long)need, (long long)ld);
  return KB_STATUS_OK;
}

/* Validation of every entry point (elem: element size in bytes), ending with
 * the memory-kind check.  The counts are the strided extents in elements. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb, const void *c, int64_t ldc,
                       int64_t *a_count, int64_t *b_count, int64_t *c_count) {
  KB_TRY(kb__check_dim(ctx, fn, "m", m));
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  KB_TRY(kb__check_dim(ctx, fn, "k", k));
  KB_TRY(kb__check_dim(ctx, fn, "lda", lda));
  KB_TRY(kb__check_dim(ctx, fn, "ldb", ldb));
  KB_TRY(kb__check_dim(ctx, fn, "ldc", ldc));
  /* Stored shapes: A is [m, k] or, transposed, [k, m]; likewise B. */
  int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  KB_TRY(check_ld(ctx, fn, "lda", lda, a_cols));
  KB_TRY(check_ld(ctx, fn, "ldb", ldb, b_cols));
  KB_TRY(check_ld(ctx, fn, "ldc", ldc, n));
  KB_TRY(kb__count_strided(ctx, fn, "a", elem, a_rows, a_cols, lda, a_count));
  KB_TRY(kb__count_strided(ctx, fn, "b", elem, b_rows, b_cols, ldb, b_count));
  KB_TRY(kb__count_strided(ctx, fn, "c", elem, m, n, ldc, c_count));
  KB_TRY(kb__check_ptr(ctx, fn, "a", a, *a_count));
  KB_TRY(kb__check_ptr(ctx, fn, "b", b, *b_count));
  KB_TRY(kb__check_ptr(ctx, fn, "c", c, *c_count));
  /* Extents are the bounding ranges [first, last] of each strided matrix. */
  int64_t ab = *a_count * elem, bb = *b_count * elem, cb = *c_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "a", a, ab, false));
  KB_TRY(kb__check_overlap(ctx, fn, "c", c, cb, "b", b, bb, false));
  const struct kb_mem_ref refs[] = {{"a", a, ab}, {"b", b, bb}, {"c", c, cb}};
  return kb__check_memory(ctx, fn, 3, refs);
}

kb_status kb_gemm(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  static const char fn[] = "kb_gemm";
  kb__begin(ctx);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count,
               &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm(ctx->cuda_ctx, fn, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha, a, lda,
                                           b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  return compute(ctx, fn, DT_F32, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL);
}

/* bf16 / f16: panels are widened while they are packed and the sums kept
 * in float32 per rectangle, so the result is exactly kb_gemm on the widened
 * inputs, rounded once; only the m x n elements of C are written, never the
 * padding between its rows. */
static kb_status gemm_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, bool trans_a, bool trans_b, int64_t m,
                         int64_t n, int64_t k, float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
                         int64_t ldb, float beta, uint16_t *c, int64_t ldc) {
  kb__begin(ctx);
  int64_t a_count, b_count, c_count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, &a_count, &b_count, &c_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->gemm_dt(ctx->cuda_ctx, fn, dt, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha,
                                              a, lda, b, ldb, beta, c, ldc));
  if (c_count == 0) return KB_STATUS_OK;
  return compute(ctx, fn, dt == KBCUDA_F16 ? DT_F16 : DT_BF16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
                 c, ldc, NULL);
}

kb_status kb_gemm_bf16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                       int64_t ldc) {
  return gemm_dt(ctx, "kb_gemm_bf16", KBCUDA_BF16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

kb_status kb_gemm_f16(kb_context *ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta, uint16_t *c,
                      int64_t ldc) {
  return gemm_dt(ctx, "kb_gemm_f16", KBCUDA_F16, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- kb_linear: y = act(x W^T + b) ---- */

static kb_status linear_dt(kb_context *ctx, const char *fn, int dt, int64_t rows, int64_t in_features,
                           int64_t out_features, const void *x, const void *weight, const void *bias, kb_activation act,
                           void *y) {
  kb__begin(ctx);
  int64_t elem = dt == DT_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  KB_TRY(kb__check_dim(ctx, fn, "rows", rows));
  KB_TRY(kb__check_dim(ctx, fn, "in_features", in_features));
  KB_TRY(kb__check_dim(ctx, fn, "out_features", out_features));
  if ((int)act < (int)KB_ACTIVATION_NONE || (int)act > (int)KB_ACTIVATION_SILU)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "act must be a kb_activation (0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 silu), got %d", (int)act);
  int64_t xd[2] = {rows, in_features}, wd[2] = {out_features, in_features}, yd[2] = {rows, out_features};
  int64_t xn, wn, yn, bn = out_features;
  KB_TRY(kb__count(ctx, fn, "x", elem, 2, xd, &xn));
  KB_TRY(kb__count(ctx, fn, "weight", elem, 2, wd, &wn));
  KB_TRY(kb__count(ctx, fn, "y", elem, 2, yd, &yn));
  KB_TRY(kb__check_ptr(ctx, fn, "x", x, xn));
  KB_TRY(kb__check_ptr(ctx, fn, "weight", weight, wn));
  KB_TRY(kb__check_ptr(ctx, fn, "y", y, yn));
  int64_t bb = bias != NULL ? bn * elem : 0;
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "x", x, xn * elem, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "weight", weight, wn * elem, false));
  KB_TRY(kb__check_overlap(ctx, fn, "y", y, yn * elem, "bias", bias, bb, false));
  const struct kb_mem_ref refs[] = {{"x", x, xn * elem}, {"weight", weight, wn * elem}, {"bias", bias, bb}, {"y", y, yn * elem}};
  KB_TRY(kb__check_memory(ctx, fn, 4, refs));
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  if (yn == 0) return KB_STATUS_OK;
  struct linear_epilogue lin = {bias, act};
  /* x [rows, in] times weight^T: the trans_b gemm. */
  return compute(ctx, fn, dt, false, true, rows, out_features, in_features, 1.0f, x, in_features > 0 ? in_features : 1,
                 weight, in_features > 0 ? in_features : 1, 0.0f, y, out_features, &lin);
}

kb_status kb_linear(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const float *x,
                    const float *weight, const float *bias, kb_activation act, float *y) {
  return linear_dt(ctx, "kb_linear", DT_F32, rows, in_features, out_features, x, weight, bias, act, y);
}

kb_status kb_linear_bf16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const uint16_t *x,
                         const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y) {
  return linear_dt(ctx, "kb_linear_bf16", DT_BF16, rows, in_features, out_features, x, weight, bias, act, y);
}

kb_status kb_linear_f16(kb_context *ctx, int64_t rows, int64_t in_features, int64_t out_features, const uint16_t *x,
                        const uint16_t *weight, const uint16_t *bias, kb_activation act, uint16_t *y) {
  return linear_dt(ctx, "kb_linear_f16", DT_F16, rows, in_features, out_features, x, weight, bias, act, y);
}
