/* attention.c - scaled dot-product attention with optional causal mask and
 * grouped-query heads, in float32 and in bf16 / f16 storage.
 *
 * Flash-style: for a block of query rows the keys are visited in blocks of
 * KB_ATTN_BK = 128.  Per key block, the scores S = scale * Q K^T come from the
 * gemm microkernel (K packed like a transposed B), each row's running
 * maximum, weights p = exp(s - max) and sum are updated (online softmax,
 * attention_kernels.h), the row's accumulator is rescaled by exp(old max -
 * new max) and O += P V runs on the microkernel again.  At the end
 * out = O / sum.  The [seq_q, seq_kv] score matrix never exists: memory per
 * task is a few blocks.
 *
 * When a key/value head has several row blocks, K is transposed into packed
 * panels once, before the row blocks run, instead of once per row block.
 *
 * Rows: the query rows of all heads that share a key/value head are one
 * sequence of group * seq_q rows (row r is query r / group of head
 * kv_head * group + r % group), so grouped-query heads read K and V once per
 * row block.  With causal, query i sees keys j <= i (top-left aligned, as
 * PyTorch's is_causal): key blocks past a row block's last query are
 * skipped, and inside a block masked scores are -inf (weight 0).
 *
 * Decode (at most KB_ATTN_SPLIT_ROWS query rows per key/value head and a
 * long key sequence): the keys are cut into chunks of KB_ATTN_CHUNK keys,
 * each chunk's (max, sum, O) is computed by its own task, and the chunks
 * are merged in order, so one query's keys are spread over the threads.
 * A block of at most the level's dot_rows query rows (attention_kernels.h)
 * takes its scores from the small-m product, which reads K in place: the
 * same fma chain per score as the microkernel on K packed block by block
 * (16-bit K widened as it is packed), which larger blocks take.  A block of
 * at most the level's pv_rows rows of a float32 V, or of a 16-bit V, takes
 * O += P V from the attention pv kernel (attention_kernels.h), which reads
 * each row of V once per strip of columns: the same fma chain per output
 * as the microkernel.  The 16-bit entry points leave K and V as stored on
 * this path (kv_in_place).
 *
 * Determinism: every row's result is a fixed sequence of float32 operations
 * that depends on the shapes only (the key blocks and chunks are fixed
 * sizes), never on the thread count, the task order or the instruction set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "internal.h"
#include "reduced.h"

/* Keys per block: fixed, since the online rescaling points are part of
 * every row's sequence of operations. */
#define KB_ATTN_BK 128
/* Query rows per task (the microkernel splits them into its row tiles). */
#define KB_ATTN_BQ 96
/* Decode: key chunks of this many keys, when a key/value head has at most
 * KB_ATTN_SPLIT_ROWS query rows and more than one chunk of keys. */
#define KB_ATTN_CHUNK 512
#define KB_ATTN_SPLIT_ROWS 16
/* Query rows per call of the pv kernel (its register tiles' limit). */
#define KB_ATTN_PV_PASS 4

struct attn_job {
  const struct kb_cpu_ops *ops;
  int64_t heads, kv_heads, group, seq_q, seq_kv, d;
  const float *q;
  /* float32, or (decode, see kv_in_place) 16-bit values of storage type
   * kv_dt, read in place. */
  const void *k, *v;
  int kv_dt;
  int64_t kv_es; /* bytes per element of k and v */
  float *out;
  /* Strides in elements of q / out (q_*) and k / v (k_*): batch, head, row. */
  int64_t q_sb, q_sh, q_ss, k_sb, k_sh, k_ss;
  const int32_t *kv_lengths; /* [batch] or NULL */
  const float *mask;         /* additive, or NULL; strides 0 where it broadcasts */
  int64_t m_sb, m_sh, m_sq;
  bool causal, bottom_right;
  float scale;
  int64_t rows;      /* per key/value head: group * seq_q */
  int64_t q_blocks;  /* per key/value head */
  int64_t chunks;    /* key chunks per row block (1 unless decode) */
  int64_t tasks;     /* batch * kv_heads * q_blocks * chunks */
  int64_t next_task; /* atomic: tasks are taken in order by whichever thread is free */
  /* Scratch: per worker, per task result (chunked only). */
  float *work;
  int64_t work_floats;
  float *partial; /* chunked: per task, [prows] max, [prows] sum, [prows * d] O */
  int64_t partial_floats;
  int64_t prows; /* rows of a full row block: min(rows, KB_ATTN_BQ) */
  /* K packed once for all row blocks (when a head has several), key block
   * kb of key/value head bk at kpack + (bk * kblocks + kb) * kblock_floats. */
  float *kpack;
  int64_t kblocks, kblock_floats;
};

static int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

/* Per-worker scratch layout, in floats (each part 64-byte aligned). */
struct attn_work {
  float *qbuf; /* [BQ, d] the block's query rows, gathered */
  float *kp;   /* K block packed as a transposed B: d x BK in nr panels */
  float *vp;   /* V block packed as B: BK x d in nr panels */
  float *s;    /* [BQ, BK] scores, then weights */
  float *o;    /* [BQ, d] accumulators */
  float *m, *l; /* [BQ] running max and sum */
};

static int64_t work_layout(int64_t d, int64_t nr, float *base, struct attn_work *w) {
  int64_t at = 0;
#define TAKE(field, count)                     \
  do {                                         \
    if (w != NULL) w->field = base + at;       \
    at += round_up((count), 16);               \
  } while (0)
  TAKE(qbuf, KB_ATTN_BQ * d);
  TAKE(kp, d * round_up(KB_ATTN_BK, nr));
  TAKE(vp, KB_ATTN_BK * round_up(d, nr));
  TAKE(s, KB_ATTN_BQ * KB_ATTN_BK);
  TAKE(o, KB_ATTN_BQ * d);
  TAKE(m, KB_ATTN_BQ);
  TAKE(l, KB_ATTN_BQ);
#undef TAKE
  return at;
}

/* V block rows [0, len) (row stride ld) into nr-column panels, zero-padded. */
static void pack_v(const float *v, int64_t len, int64_t d, int64_t ld, int64_t nr, float *dst) {
  for (int64_t q = 0; q * nr < d; q++) {
    int64_t w = d - q * nr < nr ? d - q * nr : nr;
    float *panel = dst + q * len * nr;
    for (int64_t j = 0; j < len; j++) {
      memcpy(panel + j * nr, v + j * ld + q * nr, (size_t)w * sizeof(float));
      for (int64_t c = w; c < nr; c++) panel[j * nr + c] = 0.0f;
    }
  }
}

/* C[rows x cols] (ld ldc) = the gemm tiles of one small product: A rows
 * of stride a_rs; B as nr-column panels, panel q at b + q * b_step with row
 * stride b_rs (packed: b_rs = nr, b_step = kc * nr; in place: b_rs = the
 * row length, b_step = nr).  first: start from 0; epi: the last-block
 * epilogue (or NULL to keep the sums). */
static void small_gemm(const struct kb_gemm_ops *g, int64_t rows, int64_t cols, int64_t kc, const float *a,
                       int64_t a_rs, const float *b, int64_t b_rs, int64_t b_step, float *c, int64_t ldc, int first,
                       const struct kb_gemm_epilogue *epi) {
  for (int64_t i = 0; i < rows; i += g->mr) {
    int64_t h = rows - i < g->mr ? rows - i : g->mr;
    for (int64_t j = 0; j < cols; j += g->nr) {
      int64_t w = cols - j < g->nr ? cols - j : g->nr;
      g->kernel(kc, a + i * a_rs, a_rs, 1, b + (j / g->nr) * b_step, b_rs, c + i * ldc + j, ldc, h, w, first, epi);
    }
  }
}

/* Query row r of key/value head (b, kvh): its q / out offset, its key
 * limit (keys j < limit take part) and its mask row (or NULL). */
static int64_t row_offset(const struct attn_job *g, int64_t b, int64_t kvh, int64_t r) {
  int64_t i = r / g->group, h = kvh * g->group + r % g->group;
  return b * g->q_sb + h * g->q_sh + i * g->q_ss;
}

static int64_t row_limit(const struct attn_job *g, int64_t b, int64_t r) {
  int64_t keys = g->kv_lengths != NULL ? g->kv_lengths[b] : g->seq_kv;
  if (!g->causal) return keys;
  int64_t i = r / g->group;
  /* Top-left: query i sees keys 0..i; bottom-right: the last query sees
   * every key, so query i sees keys up to i + keys - seq_q. */
  int64_t lim = g->bottom_right ? i + 1 + keys - g->seq_q : i + 1;
  if (lim < 0) lim = 0;
  return lim < keys ? lim : keys;
}

static const float *mask_row(const struct attn_job *g, int64_t b, int64_t kvh, int64_t r) {
  if (g->mask == NULL) return NULL;
  int64_t i = r / g->group, h = kvh * g->group + r % g->group;
  return g->mask + b * g->m_sb + h * g->m_sh + i * g->m_sq;
}

static void run_task(struct attn_job *g, int64_t t, struct attn_work *w) {
  const struct kb_gemm_ops *gm = &g->ops->gemm;
  int64_t d = g->d, nr = gm->nr;
  int64_t chunk = t % g->chunks, rest = t / g->chunks;
  int64_t qb = rest % g->q_blocks, bk = rest / g->q_blocks; /* bk = b * kv_heads + kvh */
  int64_t b = bk / g->kv_heads, kvh = bk % g->kv_heads;
  int64_t r0 = qb * KB_ATTN_BQ, nrows = g->rows - r0 < KB_ATTN_BQ ? g->rows - r0 : KB_ATTN_BQ;
  /* k and v may be NULL when there are no keys at all.  kh, vh: float32
   * K and V (the float32 paths); kb, vb: their bytes (the decode path). */
  int64_t ks = g->k_ss, head = b * g->k_sb + kvh * g->k_sh;
  const char *kb = g->k != NULL ? (const char *)g->k + head * g->kv_es : NULL;
  const char *vb = g->v != NULL ? (const char *)g->v + head * g->kv_es : NULL;
  const float *kh = (const float *)(const void *)kb, *vh = (const float *)(const void *)vb;

  for (int64_t r = 0; r < nrows; r++) {
    memcpy(w->qbuf + r * d, g->q + row_offset(g, b, kvh, r0 + r), (size_t)d * sizeof(float));
    w->m[r] = -INFINITY;
    w->l[r] = 0.0f;
  }
  /* small_dot computes 9 .. 16 rows as 16: defined padding rows. */
  if (nrows > 8 && nrows < KB_GEMM_SMALL_M)
    memset(w->qbuf + nrows * d, 0, (size_t)((KB_GEMM_SMALL_M - nrows) * d) * sizeof(float));
  /* Keys of this task: the chunk, cut at the block's largest limit. */
  int64_t k0 = chunk * KB_ATTN_CHUNK, k1 = g->chunks == 1 ? g->seq_kv : k0 + KB_ATTN_CHUNK;
  if (k1 > g->seq_kv) k1 = g->seq_kv;
  int64_t max_limit = 0;
  for (int64_t r = 0; r < nrows; r++) {
    int64_t lim = row_limit(g, b, r0 + r);
    if (lim > max_limit) max_limit = lim;
  }
  if (k1 > max_limit) k1 = max_limit;

  struct kb_gemm_epilogue scale = {g->scale, 0.0f, NULL, 0};
  bool started = false;
  for (int64_t j0 = k0; j0 < k1; j0 += KB_ATTN_BK) {
    int64_t len = k1 - j0 < KB_ATTN_BK ? k1 - j0 : KB_ATTN_BK;
    /* S = scale * Q K^T for this block. */
    if (g->kpack == NULL && nrows <= g->ops->attn.dot_rows) {
      /* Few query rows (decode): the small-m product reads the K rows in
       * place (as stored, 16-bit ones too), each score the same fma chain
       * over the head dimension as the microkernel's (so the same bits),
       * without transposing the block into a packed panel first, which cost
       * more than the product. */
      gm->small_dot(g->kv_dt, nrows, len, d, w->qbuf, d, kb + j0 * ks * g->kv_es, ks, w->s, KB_ATTN_BK);
      for (int64_t r = 0; r < nrows; r++)
        for (int64_t j = 0; j < len; j++) w->s[r * KB_ATTN_BK + j] = g->scale * w->s[r * KB_ATTN_BK + j];
    } else {
      const float *kp = w->kp;
      if (g->kpack != NULL) {
        kp = g->kpack + (bk * g->kblocks + j0 / KB_ATTN_BK) * g->kblock_floats;
      } else if (g->kv_dt != KB_GEMM_F32) {
        /* 16-bit K, widened exactly as it is packed. */
        gm->pack_bt_half(g->kv_dt, d, len, (const uint16_t *)(const void *)(kb + j0 * ks * g->kv_es), ks, w->kp, nr);
      } else {
        gm->pack_bt(d, len, kh + j0 * ks, ks, w->kp, nr);
      }
      small_gemm(gm, nrows, len, d, w->qbuf, d, kp, nr, d * nr, w->s, KB_ATTN_BK, 1, &scale);
    }
    for (int64_t r = 0; r < nrows; r++) {
      float *srow = w->s + r * KB_ATTN_BK;
      int64_t lim = row_limit(g, b, r0 + r), valid = lim - j0 < 0 ? 0 : lim - j0 < len ? lim - j0 : len;
      const float *mrow = mask_row(g, b, kvh, r0 + r);
      if (mrow != NULL)
        for (int64_t j = 0; j < valid; j++) srow[j] = srow[j] + mrow[j0 + j];
      for (int64_t j = valid; j < len; j++) srow[j] = -INFINITY;
      float m_new, sum;
      g->ops->attn.softmax_block(srow, len, w->m[r], srow, &m_new, &sum);
      if (m_new == -INFINITY) {
        /* No key of this row so far (past its limit, or masked with -inf):
         * weights 0, and the row stays empty. */
        for (int64_t j = 0; j < len; j++) srow[j] = 0.0f;
        sum = 0.0f;
      }
      if (!started) {
        w->l[r] = sum;
      } else {
        /* exp(old max - new max) <= 1 rescales what the earlier blocks
         * summed (0 while the row was empty). */
        /* e(0) == 1 exactly, so an unchanged maximum needs no exponential. */
        float c = w->m[r] == m_new ? 1.0f : kb__attn_exp(w->m[r] - m_new);
        w->l[r] = w->l[r] * c + sum;
        /* c == 1 (the maximum did not move, the usual case after the first
         * blocks) would multiply every accumulator by 1: exact, skipped. */
        if (c != 1.0f) {
          float *orow = w->o + r * d;
          for (int64_t x = 0; x < d; x++) orow[x] = orow[x] * c;
        }
      }
      w->m[r] = m_new;
    }
    /* O += P V; V's rows are read in place when they are whole panels. */
    if (nrows <= g->ops->attn.pv_rows || g->kv_dt != KB_GEMM_F32) {
      /* Decode: each row of V is read once for a wide strip of the head
       * dimension, into several independent chains per row (the
       * microkernel's tiles with few rows are nr columns wide: two chains,
       * waiting on the fma latency, and V walked once per nr columns); a
       * 16-bit V is widened as it is read.  pv's register tiles take up to
       * KB_ATTN_PV_PASS rows: more rows take more passes over the block of
       * V, then read from the cache. */
      for (int64_t i0 = 0; i0 < nrows; i0 += KB_ATTN_PV_PASS) {
        int64_t rr = nrows - i0 < KB_ATTN_PV_PASS ? nrows - i0 : KB_ATTN_PV_PASS;
        g->ops->attn.pv(g->kv_dt, rr, len, d, w->s + i0 * KB_ATTN_BK, KB_ATTN_BK, vb + j0 * ks * g->kv_es, ks,
                        w->o + i0 * d, d, !started);
      }
    } else if (d % nr == 0) {
      small_gemm(gm, nrows, d, len, w->s, KB_ATTN_BK, vh + j0 * ks, ks, nr, w->o, d, !started, NULL);
    } else {
      pack_v(vh + j0 * ks, len, d, ks, nr, w->vp);
      small_gemm(gm, nrows, d, len, w->s, KB_ATTN_BK, w->vp, nr, len * nr, w->o, d, !started, NULL);
    }
    started = true;
  }

  if (g->chunks == 1) {
    /* A row without any key (sum 0) gives zeros. */
    for (int64_t r = 0; r < nrows; r++) {
      float *dst = g->out + row_offset(g, b, kvh, r0 + r);
      const float *orow = w->o + r * d;
      if (!started || w->l[r] == 0.0f)
        memset(dst, 0, (size_t)d * sizeof(float));
      else
        for (int64_t x = 0; x < d; x++) dst[x] = orow[x] / w->l[r];
    }
  } else {
    /* A chunk's (max, sum, O); merge_chunks skips chunks past a row's limit. */
    float *part = g->partial + t * g->partial_floats;
    for (int64_t r = 0; r < nrows; r++) {
      part[r] = w->m[r];
      part[g->prows + r] = started ? w->l[r] : 0.0f;
      float *po = part + 2 * g->prows + r * d;
      if (started)
        memcpy(po, w->o + r * d, (size_t)d * sizeof(float));
      else
        memset(po, 0, (size_t)d * sizeof(float));
    }
  }
}

/* Merges the chunks of row block (bk, qb) in chunk order:
 *   M = max of the chunk maxima; c_i = exp(m_i - M)
 *   sum = sum_i sum_i * c_i;  O = sum_i O_i * c_i  (i increasing);  out = O / sum. */
static void merge_chunks(struct attn_job *g, int64_t bq, struct attn_work *w) {
  int64_t d = g->d;
  int64_t qb = bq % g->q_blocks, bk = bq / g->q_blocks;
  int64_t b = bk / g->kv_heads, kvh = bk % g->kv_heads;
  int64_t r0 = qb * KB_ATTN_BQ, nrows = g->rows - r0 < KB_ATTN_BQ ? g->rows - r0 : KB_ATTN_BQ;
  const float *first = g->partial + bq * g->chunks * g->partial_floats;
  for (int64_t r = 0; r < nrows; r++) {
    /* Chunks starting at or past the row's limit hold no key of it. */
    int64_t lim = row_limit(g, b, r0 + r);
    int64_t used = (lim + KB_ATTN_CHUNK - 1) / KB_ATTN_CHUNK;
    float mx = -INFINITY;
    for (int64_t c = 0; c < used; c++) {
      const float *part = first + c * g->partial_floats;
      if (part[r] > mx) mx = part[r];
    }
    float sum = 0.0f;
    float *acc = w->o;
    memset(acc, 0, (size_t)d * sizeof(float));
    for (int64_t c = 0; c < used; c++) {
      const float *part = first + c * g->partial_floats;
      float f = kb__attn_exp(part[r] - mx);
      sum = sum + part[g->prows + r] * f;
      const float *po = part + 2 * g->prows + r * d;
      for (int64_t x = 0; x < d; x++) acc[x] = acc[x] + po[x] * f;
    }
    float *dst = g->out + row_offset(g, b, kvh, r0 + r);
    if (mx == -INFINITY || sum == 0.0f) /* no key left: zeros */
      memset(dst, 0, (size_t)d * sizeof(float));
    else
      for (int64_t x = 0; x < d; x++) dst[x] = acc[x] / sum;
  }
}

/* Packs key block t (of all key/value heads) into g->kpack. */
static void pack_k_block(struct attn_job *g, int64_t t) {
  int64_t bk = t / g->kblocks, j0 = (t % g->kblocks) * KB_ATTN_BK;
  int64_t b = bk / g->kv_heads, kvh = bk % g->kv_heads;
  int64_t len = g->seq_kv - j0 < KB_ATTN_BK ? g->seq_kv - j0 : KB_ATTN_BK;
  g->ops->gemm.pack_bt(g->d, len, (const float *)g->k + b * g->k_sb + kvh * g->k_sh + j0 * g->k_ss, g->k_ss,
                       g->kpack + t * g->kblock_floats, g->ops->gemm.nr);
}

enum attn_step { STEP_PACK_K, STEP_ROWS, STEP_MERGE };

struct attn_phase {
  struct attn_job *g;
  enum attn_step step;
  int64_t count;
};

/* Each worker takes the next task until none is left: the order tasks run
 * in changes nothing in the results. */
static void attn_body(void *arg, int64_t begin, int64_t end) {
  struct attn_phase *ph = (struct attn_phase *)arg;
  struct attn_job *g = ph->g;
  for (int64_t worker = begin; worker < end; worker++) {
    struct attn_work w;
    work_layout(g->d, g->ops->gemm.nr, g->work + worker * g->work_floats, &w);
    for (;;) {
      int64_t t = __atomic_fetch_add(&g->next_task, 1, __ATOMIC_RELAXED);
      if (t >= ph->count) break;
      if (ph->step == STEP_PACK_K)
        pack_k_block(g, t);
      else if (ph->step == STEP_MERGE)
        merge_chunks(g, t, &w);
      else
        run_task(g, t, &w);
    }
  }
}

/* Validation of every entry point (elem: element size in bytes), ending with
 * the memory-kind check. */
static kb_status check(kb_context *ctx, const char *fn, int64_t elem, int64_t batch, int64_t heads, int64_t kv_heads,
                       int64_t seq_q, int64_t seq_kv, int64_t head_dim, const void *q, const void *k, const void *v,
                       float scale, const void *out, int64_t *q_count, int64_t *kv_count) {
  KB_TRY(kb__check_dim(ctx, fn, "batch", batch));
  KB_TRY(kb__check_dim(ctx, fn, "heads", heads));
  KB_TRY(kb__check_dim(ctx, fn, "kv_heads", kv_heads));
  KB_TRY(kb__check_dim(ctx, fn, "seq_q", seq_q));
  KB_TRY(kb__check_dim(ctx, fn, "seq_kv", seq_kv));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", head_dim));
  if (heads > 0 && (kv_heads == 0 || heads % kv_heads != 0))
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "kv_heads (%lld) must divide heads (%lld)", (long long)kv_heads,
                    (long long)heads);
  /* A query with no key to attend has no defined softmax.  Tested without
   * multiplying, so that it comes before the overflow checks like every
   * other size rule. */
  if (batch > 0 && heads > 0 && seq_q > 0 && head_dim > 0 && seq_kv == 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "seq_kv must be > 0 when there are queries, got 0");
  int64_t qdims[4] = {batch, heads, seq_q, head_dim}, kdims[4] = {batch, kv_heads, seq_kv, head_dim};
  KB_TRY(kb__count(ctx, fn, "q", elem, 4, qdims, q_count));
  KB_TRY(kb__count(ctx, fn, "k", elem, 4, kdims, kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "q", q, *q_count));
  KB_TRY(kb__check_ptr(ctx, fn, "k", k, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "v", v, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", out, *q_count));
  KB_TRY(kb__check_finite(ctx, fn, "scale", (double)scale, true));
  int64_t qb = *q_count * elem, kvb = *kv_count * elem;
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "q", q, qb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "k", k, kvb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", out, qb, "v", v, kvb, false));
  const struct kb_mem_ref refs[] = {{"q", q, qb}, {"k", k, kvb}, {"v", v, kvb}, {"out", out, qb}};
  return kb__check_memory(ctx, fn, 4, refs);
}

/* One validated call, in float32: shapes, layout, tensors and options. */
struct attn_call {
  int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
  bool seq_major;
  const float *q, *k, *v;
  const int32_t *kv_lengths;
  const float *mask;
  int64_t mask_batch, mask_heads, mask_q;
  bool causal, bottom_right;
  float scale;
  float *out;
  /* Storage of k and v: KB_GEMM_F32, or 16-bit for a decode call
   * (attention_dt, attention_ex_dt). */
  int kv_dt;
};

/* The float32 computation on a validated call with at least one query
 * element.  Allocates all scratch first: OUT_OF_MEMORY leaves out untouched. */
static kb_status compute(kb_context *ctx, const char *fn, const struct attn_call *c) {
  int64_t batch = c->batch, heads = c->heads, kv_heads = c->kv_heads, seq_q = c->seq_q, seq_kv = c->seq_kv;
  int64_t head_dim = c->head_dim;
  struct attn_job g;
  memset(&g, 0, sizeof g);
  g.ops = kb__cpu_ops();
  g.heads = heads;
  g.kv_heads = kv_heads;
  g.group = heads / kv_heads;
  g.seq_q = seq_q;
  g.seq_kv = seq_kv;
  g.d = head_dim;
  g.q = c->q;
  g.k = c->k;
  g.v = c->v;
  g.kv_dt = c->kv_dt;
  g.kv_es = c->kv_dt == KB_GEMM_F32 ? (int64_t)sizeof(float) : KB_HALF_SIZE;
  g.out = c->out;
  if (c->seq_major) { /* [batch, seq, heads, head_dim] */
    g.q_sb = seq_q * heads * head_dim;
    g.q_sh = head_dim;
    g.q_ss = heads * head_dim;
    g.k_sb = seq_kv * kv_heads * head_dim;
    g.k_sh = head_dim;
    g.k_ss = kv_heads * head_dim;
  } else { /* [batch, heads, seq, head_dim] */
    g.q_sb = heads * seq_q * head_dim;
    g.q_sh = seq_q * head_dim;
    g.q_ss = head_dim;
    g.k_sb = kv_heads * seq_kv * head_dim;
    g.k_sh = seq_kv * head_dim;
    g.k_ss = head_dim;
  }
  g.kv_lengths = c->kv_lengths;
  g.mask = c->mask;
  if (c->mask != NULL) {
    /* A dimension of size 1 broadcasts: its stride is 0. */
    g.m_sq = c->mask_q == 1 ? 0 : seq_kv;
    g.m_sh = c->mask_heads == 1 ? 0 : c->mask_q * seq_kv;
    g.m_sb = c->mask_batch == 1 ? 0 : c->mask_heads * c->mask_q * seq_kv;
  }
  g.causal = c->causal;
  g.bottom_right = c->bottom_right;
  g.scale = c->scale == 0.0f ? (float)(1.0 / sqrt((double)head_dim)) : c->scale;
  g.rows = g.group * seq_q;
  g.q_blocks = (g.rows + KB_ATTN_BQ - 1) / KB_ATTN_BQ;
  g.chunks = g.rows <= KB_ATTN_SPLIT_ROWS && seq_kv > KB_ATTN_CHUNK ? (seq_kv + KB_ATTN_CHUNK - 1) / KB_ATTN_CHUNK : 1;
  g.tasks = batch * kv_heads * g.q_blocks * g.chunks;
  /* Workers: enough work each to be worth waking (multiply-adds). */
  int64_t per_task = 2 * (g.rows < KB_ATTN_BQ ? g.rows : KB_ATTN_BQ) * (g.chunks > 1 ? KB_ATTN_CHUNK : seq_kv) * head_dim;
  if (per_task < 1) per_task = 1; /* no keys: every row is zeros */
  int64_t workers = kb__task_count(ctx, g.tasks, per_task >= (1 << 16) ? 1 : (1 << 16) / per_task + 1);
  g.work_floats = work_layout(head_dim, g.ops->gemm.nr, NULL, NULL);
  /* Chunked results are sized by the rows a block really has (decode: a
   * few), not by KB_ATTN_BQ: a call with many chunks would otherwise
   * allocate, and fault in, megabytes it never uses. */
  g.prows = g.rows < KB_ATTN_BQ ? g.rows : KB_ATTN_BQ;
  g.partial_floats = g.chunks > 1 ? round_up(2 * g.prows + g.prows * head_dim, 16) : 0;
  /* Several row blocks read each key block: transpose K once, up front. */
  bool prepack = g.q_blocks > 1;
  g.kblocks = (seq_kv + KB_ATTN_BK - 1) / KB_ATTN_BK;
  g.kblock_floats = round_up(head_dim * round_up(KB_ATTN_BK, g.ops->gemm.nr), 16);
  int64_t dims_w[2] = {workers, g.work_floats}, dims_p[2] = {g.tasks, g.partial_floats};
  int64_t dims_k[3] = {batch * kv_heads, prepack ? g.kblocks : 0, g.kblock_floats}, nw, np, nk;
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims_w, &nw));
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 2, dims_p, &np));
  KB_TRY(kb__count(ctx, fn, "scratch", (int64_t)sizeof(float), 3, dims_k, &nk));
  if (nw > INT64_MAX / (int64_t)sizeof(float) - np || nw + np > INT64_MAX / (int64_t)sizeof(float) - nk)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "size of scratch overflows");
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)(nw + np + nk) * sizeof(float)) != 0 || mem == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot allocate %lld bytes of scratch",
                    (long long)((nw + np + nk) * (int64_t)sizeof(float)));
  g.work = (float *)mem;
  g.partial = g.work + nw;
  g.kpack = prepack ? g.partial + np : NULL;
  struct attn_phase ph = {&g, STEP_PACK_K, batch * kv_heads * g.kblocks};
  if (prepack) kb__parallel_for(ctx, workers, 1, attn_body, &ph);
  g.next_task = 0;
  ph.step = STEP_ROWS;
  ph.count = g.tasks;
  kb__parallel_for(ctx, workers, 1, attn_body, &ph);
  if (g.chunks > 1) {
    g.next_task = 0;
    ph.step = STEP_MERGE;
    ph.count = batch * kv_heads * g.q_blocks;
    kb__parallel_for(ctx, workers < ph.count ? workers : ph.count, 1, attn_body, &ph);
  }
  free(mem);
  return KB_STATUS_OK;
}

kb_status kb_attention(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q, int64_t seq_kv,
                       int64_t head_dim, const float *q, const float *k, const float *v, bool causal, float scale,
                       float *out) {
  static const char fn[] = "kb_attention";
  KB_BEGIN(ctx, fn);
  int64_t q_count, kv_count;
  KB_TRY(check(ctx, fn, (int64_t)sizeof(float), batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, scale, out,
               &q_count, &kv_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->attention(ctx->cuda_ctx, fn, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q,
                                                k, v, causal ? 1 : 0, scale, out));
  if (q_count == 0) return KB_STATUS_OK;
  struct attn_call c = {batch, heads, kv_heads, seq_q, seq_kv, head_dim, false, q, k, v, NULL, NULL, 1, 1, 1,
                        causal, false, scale, out, KB_GEMM_F32};
  return compute(ctx, fn, &c);
}

/* A 16-bit call whose key/value heads have at most KB_GEMM_SMALL_M query
 * rows each (decode, grouped heads included) takes the decode path of
 * run_task everywhere: K is read as stored by the small-m product (or
 * widened block by block into the task's panel for more rows), V by pv,
 * each value widened exactly as it is read: the same bits as widening the
 * whole cache into scratch first, without writing and reading back twice
 * its bytes. */
static bool kv_in_place(int64_t heads, int64_t kv_heads, int64_t seq_q) {
  return heads / kv_heads * seq_q <= KB_GEMM_SMALL_M;
}

static void kv_as_stored(struct attn_call *c, kbcuda_dtype dt, const uint16_t *k, const uint16_t *v) {
  c->k = (const float *)(const void *)k;
  c->v = (const float *)(const void *)v;
  c->kv_dt = dt == KBCUDA_F16 ? KB_GEMM_F16 : KB_GEMM_BF16;
}

/* bf16 / f16: q, k, v widened into scratch (k and v not in decode, see
 * kv_in_place), the float32 kernel writes a float32 out in scratch, which is
 * narrowed into out last. */
static kb_status attention_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, int64_t batch, int64_t heads,
                              int64_t kv_heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const uint16_t *q,
                              const uint16_t *k, const uint16_t *v, bool causal, float scale, uint16_t *out) {
  KB_BEGIN(ctx, fn);
  int64_t q_count, kv_count;
  KB_TRY(check(ctx, fn, KB_HALF_SIZE, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v, scale, out, &q_count,
               &kv_count));
  if (kb__on_cuda(ctx))
    return kb__cuda_finish(ctx, fn,
                           ctx->cuda->attention_dt(ctx->cuda_ctx, fn, dt, batch, heads, kv_heads, seq_q, seq_kv,
                                                   head_dim, q, k, v, causal ? 1 : 0, scale, out));
  if (q_count == 0) return KB_STATUS_OK;
  bool in_place = kv_in_place(heads, kv_heads, seq_q);
  struct kb_dt_scratch s;
  const int64_t counts[4] = {q_count, in_place ? 0 : kv_count, in_place ? 0 : kv_count, q_count};
  KB_TRY(kb_dt_alloc(ctx, fn, 4, counts, &s));
  kb_dt_widen(ctx, dt, q, s.t[0], q_count);
  if (!in_place) {
    kb_dt_widen(ctx, dt, k, s.t[1], kv_count);
    kb_dt_widen(ctx, dt, v, s.t[2], kv_count);
  }
  struct attn_call c = {batch, heads, kv_heads, seq_q, seq_kv, head_dim, false, s.t[0], s.t[1], s.t[2], NULL, NULL, 1,
                        1, 1, causal, false, scale, s.t[3], KB_GEMM_F32};
  if (in_place) kv_as_stored(&c, dt, k, v);
  kb_status st = compute(ctx, fn, &c);
  if (st == KB_STATUS_OK) kb_dt_narrow(ctx, dt, s.t[3], out, q_count);
  kb_dt_free(&s);
  return st;
}

kb_status kb_attention_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                            int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                            bool causal, float scale, uint16_t *out) {
  return attention_dt(ctx, "kb_attention_bf16", KBCUDA_BF16, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v,
                      causal, scale, out);
}

kb_status kb_attention_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                           int64_t seq_kv, int64_t head_dim, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                           bool causal, float scale, uint16_t *out) {
  return attention_dt(ctx, "kb_attention_f16", KBCUDA_F16, batch, heads, kv_heads, seq_q, seq_kv, head_dim, q, k, v,
                      causal, scale, out);
}

/* ---- kb_attention_ex: layouts, key lengths, additive mask, bottom-right causal ---- */

/* Validation of every _ex entry point (elem: element size in bytes of q,
 * mask and out; kv_elem: of k and v), ending with the memory-kind check.
 * Every kv_lengths value is checked before anything is written. */
static kb_status check_ex(kb_context *ctx, const char *fn, int64_t elem, int64_t kv_elem, const struct attn_call *c,
                          int64_t *q_count, int64_t *kv_count, int64_t *mask_count) {
  KB_TRY(kb__check_dim(ctx, fn, "batch", c->batch));
  KB_TRY(kb__check_dim(ctx, fn, "heads", c->heads));
  KB_TRY(kb__check_dim(ctx, fn, "kv_heads", c->kv_heads));
  KB_TRY(kb__check_dim(ctx, fn, "seq_q", c->seq_q));
  KB_TRY(kb__check_dim(ctx, fn, "seq_kv", c->seq_kv));
  KB_TRY(kb__check_dim(ctx, fn, "head_dim", c->head_dim));
  KB_TRY(kb__check_dim(ctx, fn, "mask_batch", c->mask_batch));
  KB_TRY(kb__check_dim(ctx, fn, "mask_heads", c->mask_heads));
  KB_TRY(kb__check_dim(ctx, fn, "mask_q", c->mask_q));
  if (c->heads > 0 && (c->kv_heads == 0 || c->heads % c->kv_heads != 0))
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "kv_heads (%lld) must divide heads (%lld)",
                    (long long)c->kv_heads, (long long)c->heads);
  if (c->mask != NULL) {
    static const char *const names[3] = {"mask_batch", "mask_heads", "mask_q"};
    static const char *const full[3] = {"batch", "heads", "seq_q"};
    int64_t got[3] = {c->mask_batch, c->mask_heads, c->mask_q}, want[3] = {c->batch, c->heads, c->seq_q};
    for (int i = 0; i < 3; i++)
      if (got[i] != 1 && got[i] != want[i])
        return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "%s must be 1 or %s (%lld), got %lld", names[i], full[i],
                        (long long)want[i], (long long)got[i]);
  }
  if (c->bottom_right && !c->causal)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "causal_bottom_right needs causal");
  int64_t qdims[4] = {c->batch, c->heads, c->seq_q, c->head_dim};
  int64_t kdims[4] = {c->batch, c->kv_heads, c->seq_kv, c->head_dim};
  int64_t mdims[4] = {c->mask != NULL ? c->mask_batch : 0, c->mask_heads, c->mask_q, c->seq_kv};
  KB_TRY(kb__count(ctx, fn, "q", elem, 4, qdims, q_count));
  KB_TRY(kb__count(ctx, fn, "k", kv_elem, 4, kdims, kv_count));
  KB_TRY(kb__count(ctx, fn, "mask", elem, 4, mdims, mask_count));
  int64_t lengths = c->kv_lengths != NULL ? c->batch : 0;
  KB_TRY(kb__check_ptr(ctx, fn, "q", c->q, *q_count));
  KB_TRY(kb__check_ptr(ctx, fn, "k", c->k, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "v", c->v, *kv_count));
  KB_TRY(kb__check_ptr(ctx, fn, "out", c->out, *q_count));
  KB_TRY(kb__check_finite(ctx, fn, "scale", (double)c->scale, true));
  int64_t qb = *q_count * elem, kvb = *kv_count * kv_elem, mb = *mask_count * elem, lb = lengths * 4;
  KB_TRY(kb__check_overlap(ctx, fn, "out", c->out, qb, "q", c->q, qb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", c->out, qb, "k", c->k, kvb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", c->out, qb, "v", c->v, kvb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", c->out, qb, "kv_lengths", c->kv_lengths, lb, false));
  KB_TRY(kb__check_overlap(ctx, fn, "out", c->out, qb, "mask", c->mask, mb, false));
  const struct kb_mem_ref refs[] = {{"q", c->q, qb},           {"k", c->k, kvb},       {"v", c->v, kvb},
                                    {"kv_lengths", c->kv_lengths, lb}, {"mask", c->mask, mb}, {"out", c->out, qb}};
  KB_TRY(kb__check_memory(ctx, fn, 6, refs));
  /* Before the values are read: on a CUDA context kv_lengths is device
   * memory, which the host must not touch. */
  if (kb__on_cuda(ctx))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "not implemented by the CUDA backend yet (use a CPU context)");
  for (int64_t b = 0; b < lengths; b++)
    if (c->kv_lengths[b] < 0 || c->kv_lengths[b] > c->seq_kv)
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "kv_lengths[%lld] = %d is out of range [0, %lld]",
                      (long long)b, (int)c->kv_lengths[b], (long long)c->seq_kv);
  return KB_STATUS_OK;
}

kb_status kb_attention_ex(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                          int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q, const float *k,
                          const float *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                          int64_t mask_q, const float *mask, bool causal, bool causal_bottom_right, float scale,
                          float *out) {
  static const char fn[] = "kb_attention_ex";
  KB_BEGIN(ctx, fn);
  struct attn_call c = {batch, heads, kv_heads, seq_q, seq_kv, head_dim, seq_major, q, k, v, kv_lengths, mask,
                        mask_batch, mask_heads, mask_q, causal, causal_bottom_right, scale, out, KB_GEMM_F32};
  int64_t q_count, kv_count, mask_count;
  KB_TRY(check_ex(ctx, fn, (int64_t)sizeof(float), (int64_t)sizeof(float), &c, &q_count, &kv_count, &mask_count));
  if (q_count == 0) return KB_STATUS_OK;
  return compute(ctx, fn, &c);
}

/* bf16 / f16: q, k, v and the mask widened into scratch (the layout kept;
 * k and v not in decode, see kv_in_place), the float32 kernel writes a
 * float32 out in scratch, narrowed into out last. */
static kb_status attention_ex_dt(kb_context *ctx, const char *fn, kbcuda_dtype dt, const struct attn_call *call16,
                                 const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *mask,
                                 uint16_t *out) {
  KB_BEGIN(ctx, fn);
  int64_t q_count, kv_count, mask_count;
  KB_TRY(check_ex(ctx, fn, KB_HALF_SIZE, KB_HALF_SIZE, call16, &q_count, &kv_count, &mask_count));
  if (q_count == 0) return KB_STATUS_OK;
  bool in_place = kv_in_place(call16->heads, call16->kv_heads, call16->seq_q);
  struct kb_dt_scratch s, sm;
  const int64_t counts[4] = {q_count, in_place ? 0 : kv_count, in_place ? 0 : kv_count, q_count};
  KB_TRY(kb_dt_alloc(ctx, fn, 4, counts, &s));
  kb_status st = kb_dt_alloc(ctx, fn, 1, &mask_count, &sm);
  if (st != KB_STATUS_OK) {
    kb_dt_free(&s);
    return st;
  }
  kb_dt_widen(ctx, dt, q, s.t[0], q_count);
  if (!in_place) {
    kb_dt_widen(ctx, dt, k, s.t[1], kv_count);
    kb_dt_widen(ctx, dt, v, s.t[2], kv_count);
  }
  if (mask != NULL) kb_dt_widen(ctx, dt, mask, sm.t[0], mask_count);
  struct attn_call c = *call16;
  c.q = s.t[0];
  c.k = s.t[1];
  c.v = s.t[2];
  c.kv_dt = KB_GEMM_F32;
  if (in_place) kv_as_stored(&c, dt, k, v);
  c.mask = mask != NULL ? sm.t[0] : NULL;
  c.out = s.t[3];
  st = compute(ctx, fn, &c);
  if (st == KB_STATUS_OK) kb_dt_narrow(ctx, dt, s.t[3], out, q_count);
  kb_dt_free(&sm);
  kb_dt_free(&s);
  return st;
}

/* The 16-bit tensors of a call, as opaque pointers for validation (only
 * their addresses and extents are looked at before widening). */
#define EX_CALL16(q, k, v, mask, out)                                                                              \
  {batch,  heads, kv_heads, seq_q, seq_kv, head_dim, seq_major, (const float *)(const void *)(q),               \
   (const float *)(const void *)(k), (const float *)(const void *)(v), kv_lengths,                              \
   (const float *)(const void *)(mask), mask_batch, mask_heads, mask_q, causal, causal_bottom_right, scale,     \
   (float *)(void *)(out), KB_GEMM_F32}

kb_status kb_attention_ex_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                               int64_t seq_kv, int64_t head_dim, bool seq_major, const uint16_t *q, const uint16_t *k,
                               const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                               int64_t mask_q, const uint16_t *mask, bool causal, bool causal_bottom_right,
                               float scale, uint16_t *out) {
  struct attn_call c = EX_CALL16(q, k, v, mask, out);
  return attention_ex_dt(ctx, "kb_attention_ex_bf16", KBCUDA_BF16, &c, q, k, v, mask, out);
}

kb_status kb_attention_ex_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                              int64_t seq_kv, int64_t head_dim, bool seq_major, const uint16_t *q, const uint16_t *k,
                              const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch, int64_t mask_heads,
                              int64_t mask_q, const uint16_t *mask, bool causal, bool causal_bottom_right,
                              float scale, uint16_t *out) {
  struct attn_call c = EX_CALL16(q, k, v, mask, out);
  return attention_ex_dt(ctx, "kb_attention_ex_f16", KBCUDA_F16, &c, q, k, v, mask, out);
}

/* ---- float32 queries over a 16-bit K / V (kb_attention_ex_kv_bf16 / _f16) ---- */

/* K and V as stored in decode (kv_in_place), else widened into scratch; q,
 * mask and out are the caller's float32 tensors. */
static kb_status attention_ex_kv(kb_context *ctx, const char *fn, kbcuda_dtype dt, const struct attn_call *call,
                                 const uint16_t *k, const uint16_t *v) {
  KB_BEGIN(ctx, fn);
  int64_t q_count, kv_count, mask_count;
  KB_TRY(check_ex(ctx, fn, (int64_t)sizeof(float), KB_HALF_SIZE, call, &q_count, &kv_count, &mask_count));
  if (q_count == 0) return KB_STATUS_OK;
  struct attn_call c = *call;
  if (kv_in_place(c.heads, c.kv_heads, c.seq_q)) {
    kv_as_stored(&c, dt, k, v);
    return compute(ctx, fn, &c);
  }
  struct kb_dt_scratch s;
  const int64_t counts[2] = {kv_count, kv_count};
  KB_TRY(kb_dt_alloc(ctx, fn, 2, counts, &s));
  kb_dt_widen(ctx, dt, k, s.t[0], kv_count);
  kb_dt_widen(ctx, dt, v, s.t[1], kv_count);
  c.k = s.t[0];
  c.v = s.t[1];
  kb_status st = compute(ctx, fn, &c);
  kb_dt_free(&s);
  return st;
}

/* The call with k and v as opaque pointers (validation looks only at their
 * addresses and extents). */
#define EX_CALL_KV(k, v)                                                                                        \
  {batch, heads, kv_heads, seq_q, seq_kv, head_dim, seq_major, q, (const float *)(const void *)(k),           \
   (const float *)(const void *)(v), kv_lengths, mask, mask_batch, mask_heads, mask_q, causal,                \
   causal_bottom_right, scale, out, KB_GEMM_F32}

kb_status kb_attention_ex_kv_bf16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                  int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q, const uint16_t *k,
                                  const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch,
                                  int64_t mask_heads, int64_t mask_q, const float *mask, bool causal,
                                  bool causal_bottom_right, float scale, float *out) {
  struct attn_call c = EX_CALL_KV(k, v);
  return attention_ex_kv(ctx, "kb_attention_ex_kv_bf16", KBCUDA_BF16, &c, k, v);
}

kb_status kb_attention_ex_kv_f16(kb_context *ctx, int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                                 int64_t seq_kv, int64_t head_dim, bool seq_major, const float *q, const uint16_t *k,
                                 const uint16_t *v, const int32_t *kv_lengths, int64_t mask_batch,
                                 int64_t mask_heads, int64_t mask_q, const float *mask, bool causal,
                                 bool causal_bottom_right, float scale, float *out) {
  struct attn_call c = EX_CALL_KV(k, v);
  return attention_ex_kv(ctx, "kb_attention_ex_kv_f16", KBCUDA_F16, &c, k, v);
}
