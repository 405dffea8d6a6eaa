/* alloc_fail_test.c - allocation-failure injection (docs/reliability.md).
 *
 * The test is linked with -Wl,--wrap=malloc,calloc,realloc,posix_memalign,
 * free,pthread_create against the library's static archive, so every
 * allocation the library makes goes through the wrappers below, which can
 * fail the N-th one.  For every entry point that may allocate, on shapes
 * that take each of its allocating paths, the test calls it with the N-th
 * allocation failing, for N = 0, 1, 2, ... until a call makes fewer than
 * N + 1 allocations, and checks each time:
 *   - the status is OUT_OF_MEMORY and the message names what could not be
 *     allocated (or the call succeeded with the right result, for a failure
 *     the library is documented to absorb);
 *   - no output byte changed;
 *   - every block the call allocated was freed (counted by the wrappers; a
 *     --config=asan build checks again with LeakSanitizer);
 *   - the same context then computes the right result.
 * The last, uninjected call must give exactly the result of a call without
 * any injection.  The worker pool is tested the same way: its bookkeeping
 * allocations and pthread_create fail, and the context must run the work
 * inline and stay usable.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels/cpu/testutil/cpu_test.h"

/* ---- the wrappers ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void __real_free(void *p);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void __wrap_free(void *p);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#define MAX_LIVE 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool armed;         /* count (and maybe fail) allocations */
static long fail_at = -1;  /* index of the allocation to fail, -1 none */
static long allocations;   /* allocations seen since arming */
static long failed;        /* allocations failed since arming */
static bool fail_threads;  /* pthread_create fails while armed */
static long threads_failed;
static void *live[MAX_LIVE]; /* blocks allocated while armed and not freed */
static int nlive;

/* Decides the fate of one allocation; true: fail it. */
static bool next_fails(void) {
  pthread_mutex_lock(&lock);
  bool fail = false;
  if (armed) {
    fail = allocations == fail_at;
    allocations++;
    failed += fail;
  }
  pthread_mutex_unlock(&lock);
  return fail;
}

static void track(void *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&lock);
  if (armed && nlive < MAX_LIVE) live[nlive++] = p;
  pthread_mutex_unlock(&lock);
}

static void untrack(void *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nlive; i++)
    if (live[i] == p) {
      live[i] = live[--nlive];
      break;
    }
  pthread_mutex_unlock(&lock);
}

void *__wrap_malloc(size_t n) {
  if (next_fails()) return NULL;
  void *p = __real_malloc(n);
  track(p);
  return p;
}

void *__wrap_calloc(size_t count, size_t n) {
  if (next_fails()) return NULL;
  void *p = __real_calloc(count, n);
  track(p);
  return p;
}

void *__wrap_realloc(void *p, size_t n) {
  if (next_fails()) return NULL;
  void *q = __real_realloc(p, n);
  if (q != NULL) {
    untrack(p);
    track(q);
  }
  return q;
}

int __wrap_posix_memalign(void **p, size_t align, size_t n) {
  if (next_fails()) return ENOMEM;
  int r = __real_posix_memalign(p, align, n);
  if (r == 0) track(*p);
  return r;
}

void __wrap_free(void *p) {
  untrack(p);
  __real_free(p);
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  pthread_mutex_lock(&lock);
  bool fail = armed && fail_threads;
  threads_failed += fail;
  pthread_mutex_unlock(&lock);
  if (fail) return EAGAIN;
  return __real_pthread_create(t, attr, fn, arg);
}

static void arm(long at, bool threads) {
  pthread_mutex_lock(&lock);
  armed = true;
  fail_at = at;
  allocations = 0;
  failed = 0;
  fail_threads = threads;
  threads_failed = 0;
  nlive = 0;
  pthread_mutex_unlock(&lock);
}

static void disarm(void) {
  pthread_mutex_lock(&lock);
  armed = false;
  fail_at = -1;
  fail_threads = false;
  pthread_mutex_unlock(&lock);
}

static int live_blocks(void) {
  pthread_mutex_lock(&lock);
  int n = nlive;
  pthread_mutex_unlock(&lock);
  return n;
}

/* ---- entry points and their buffers ---- */

#define MAX_BUFS 6

/* One entry point on fixed shapes: its buffers (inputs filled with data,
 * outputs with a sentinel) and the call. */
struct icase {
  const char *name;
  int nbuf;
  int64_t elems[MAX_BUFS];
  int elem_size[MAX_BUFS]; /* 4: float or int32, 2: bf16/f16 */
  bool output[MAX_BUFS];
  int int_range[MAX_BUFS]; /* > 0: an int32 input with values in [0, range) */
  kb_status (*call)(kb_context *ctx, void **b);
  int min_allocations; /* the call must allocate at least this often */
};

static void fill_buffers(const struct icase *c, void **b) {
  for (int i = 0; i < c->nbuf; i++) {
    uint64_t s = 1000 + (uint64_t)i;
    if (c->output[i] && c->elem_size[i] == 4) {
      fill_f((float *)b[i], c->elems[i], SENTINEL_F);
    } else if (c->int_range[i] > 0) {
      for (int64_t j = 0; j < c->elems[i]; j++)
        ((int32_t *)b[i])[j] = (int32_t)(test_next(&s) % (uint64_t)c->int_range[i]);
    } else if (c->elem_size[i] == 4) {
      rand_fill((float *)b[i], c->elems[i], s, -2.0f, 2.0f);
    } else {
      /* 16-bit: a sign, a small exponent, a random mantissa. */
      for (int64_t j = 0; j < c->elems[i]; j++) ((uint16_t *)b[i])[j] = (uint16_t)(0x3800 | (test_next(&s) & 0x83ff));
    }
  }
}

/* Shapes.  Large enough that the packed gemm path, attention's K packing
 * (several row blocks) and decode split (many keys, one query) are taken. */
#define EN 1000
#define RR 7
#define RC 33
#define GM 70
#define GN 90
#define GK 600
#define VN 300
#define VK 70
#define AB 1
#define AH 4
#define AKV 2
#define AQ 100
#define AKEY 150
#define AD 16
#define DKEY 1100
#define LR 20 /* more rows than the small-m path takes: the packed path */
#define LF 5  /* few rows: the small-m path */
#define QI 64
#define LI 40
#define LO 24
#define BB 6
#define BM 20
#define BNN 9
#define BK 10
#define XB 3
#define XM 128
#define XN 128
#define XK 64
#define SROWS 3
#define SCOLS 50

static kb_status c_silu(kb_context *x, void **b) { return kb_silu(x, EN, b[0], b[1]); }
static kb_status c_silu_bf16(kb_context *x, void **b) { return kb_silu_bf16(x, EN, b[0], b[1]); }
static kb_status c_gelu_f16(kb_context *x, void **b) { return kb_gelu_f16(x, EN, b[0], b[1]); }
static kb_status c_gelu_tanh_bf16(kb_context *x, void **b) { return kb_gelu_tanh_bf16(x, EN, b[0], b[1]); }
static kb_status c_add_f16(kb_context *x, void **b) { return kb_add_f16(x, EN, b[0], b[1], b[2]); }
static kb_status c_mul_bf16(kb_context *x, void **b) { return kb_mul_bf16(x, EN, b[0], b[1], b[2]); }
static kb_status c_scale_f16(kb_context *x, void **b) { return kb_scale_f16(x, EN, 0.5f, b[0], b[1]); }
static kb_status c_add_bias_bf16(kb_context *x, void **b) { return kb_add_bias_bf16(x, RR, RC, b[0], b[1], b[2]); }
static kb_status c_softmax(kb_context *x, void **b) { return kb_softmax(x, RR, RC, b[0], b[1]); }
static kb_status c_softmax_f16(kb_context *x, void **b) { return kb_softmax_f16(x, RR, RC, b[0], b[1]); }
static kb_status c_log_softmax_bf16(kb_context *x, void **b) { return kb_log_softmax_bf16(x, RR, RC, b[0], b[1]); }
static kb_status c_rmsnorm_f16(kb_context *x, void **b) { return kb_rmsnorm_f16(x, RR, RC, b[0], b[1], 1e-5f, b[2]); }
static kb_status c_layernorm(kb_context *x, void **b) {
  return kb_layernorm(x, RR, RC, b[0], b[1], b[2], 1e-5f, b[3]);
}
static kb_status c_layernorm_bf16(kb_context *x, void **b) {
  return kb_layernorm_bf16(x, RR, RC, b[0], b[1], b[2], 1e-5f, b[3]);
}
static kb_status c_gemm(kb_context *x, void **b) {
  return kb_gemm(x, false, false, GM, GN, GK, 1.0f, b[0], GK, b[1], GN, 0.5f, b[2], GN);
}
static kb_status c_gemm_tt(kb_context *x, void **b) {
  return kb_gemm(x, true, true, GM, GN, GK, 1.0f, b[0], GM, b[1], GK, 0.0f, b[2], GN);
}
static kb_status c_gemv(kb_context *x, void **b) {
  return kb_gemm(x, false, true, 1, VN, VK, 1.0f, b[0], VK, b[1], VK, 0.0f, b[2], VN);
}
/* One row of A stored transposed: the small-m path copies it into scratch. */
static kb_status c_gemv_ta(kb_context *x, void **b) {
  return kb_gemm(x, true, true, 1, VN, VK, 1.0f, b[0], 1, b[1], VK, 0.0f, b[2], VN);
}
static kb_status c_gemm_bf16(kb_context *x, void **b) {
  return kb_gemm_bf16(x, false, false, GM, GN, GK, 1.0f, b[0], GK, b[1], GN, 0.5f, b[2], GN);
}
static kb_status c_gemm_f16(kb_context *x, void **b) {
  return kb_gemm_f16(x, true, false, 1, VN, VK, 2.0f, b[0], 1, b[1], VN, 0.0f, b[2], VN);
}
static kb_status c_batched_small(kb_context *x, void **b) {
  return kb_gemm_batched(x, false, false, BB, BM, BNN, BK, 1.0f, b[0], BK, BM * BK, b[1], BNN, 0, 0.0f, b[2], BNN,
                         BM * BNN);
}
static kb_status c_batched_big(kb_context *x, void **b) {
  return kb_gemm_batched(x, false, true, XB, XM, XN, XK, 1.0f, b[0], XK, XM * XK, b[1], XK, XN * XK, 1.0f, b[2], XN,
                         XM * XN);
}
static kb_status c_batched_bf16(kb_context *x, void **b) {
  return kb_gemm_batched_bf16(x, false, false, BB, BM, BNN, BK, 1.0f, b[0], BK, BM * BK, b[1], BNN, 0, 0.0f, b[2],
                              BNN, BM * BNN);
}
static kb_status c_batched_f16(kb_context *x, void **b) {
  return kb_gemm_batched_f16(x, false, true, XB, XM, XN, XK, 1.0f, b[0], XK, XM * XK, b[1], XK, XN * XK, 1.0f, b[2],
                             XN, XM * XN);
}
static kb_status c_attention(kb_context *x, void **b) {
  return kb_attention(x, AB, AH, AKV, AQ, AKEY, AD, b[0], b[1], b[2], true, 0.0f, b[3]);
}
static kb_status c_attention_decode(kb_context *x, void **b) {
  return kb_attention(x, AB, AH, AKV, 1, DKEY, AD, b[0], b[1], b[2], false, 0.0f, b[3]);
}
static kb_status c_attention_bf16(kb_context *x, void **b) {
  return kb_attention_bf16(x, AB, AH, AKV, AQ, AKEY, AD, b[0], b[1], b[2], false, 0.25f, b[3]);
}
static kb_status c_attention_f16(kb_context *x, void **b) {
  return kb_attention_f16(x, AB, AH, AKV, 1, DKEY, AD, b[0], b[1], b[2], true, 0.0f, b[3]);
}
static kb_status c_attention_ex(kb_context *x, void **b) {
  return kb_attention_ex(x, AB, AH, AKV, AQ, AKEY, AD, true, b[0], b[1], b[2], b[3], 1, 1, AQ, b[4], true, true,
                         0.0f, b[5]);
}
static kb_status c_attention_ex_f16(kb_context *x, void **b) {
  return kb_attention_ex_f16(x, AB, AH, AKV, AQ, AKEY, AD, false, b[0], b[1], b[2], b[3], 1, AH, 1, b[4], false,
                             false, 0.0f, b[5]);
}
static kb_status c_attention_ex_bf16(kb_context *x, void **b) {
  return kb_attention_ex_bf16(x, AB, AH, AKV, AQ, AKEY, AD, false, b[0], b[1], b[2], NULL, 0, 0, 0, NULL, true,
                              false, 0.0f, b[5]);
}
static kb_status c_linear(kb_context *x, void **b) {
  return kb_linear(x, LR, LI, LO, b[0], b[1], b[2], KB_ACTIVATION_GELU, b[3]);
}
static kb_status c_linear_few(kb_context *x, void **b) {
  return kb_linear(x, LF, LI, LO, b[0], b[1], b[2], KB_ACTIVATION_GELU, b[3]);
}
/* Q8_0 weights [LO, QI]: the quantized activations are the allocation. */
static kb_status c_linear_w_q8(kb_context *x, void **b) {
  return kb_linear_w(x, LF, QI, LO, b[0], KB_DTYPE_Q8_0, b[1], LO * QI / 32 * 34, b[2], KB_ACTIVATION_SILU, b[3]);
}
static kb_status c_linear_bf16(kb_context *x, void **b) {
  return kb_linear_bf16(x, LR, LI, LO, b[0], b[1], b[2], KB_ACTIVATION_SILU, b[3]);
}
static kb_status c_linear_f16(kb_context *x, void **b) {
  return kb_linear_f16(x, 1, LI, LO, b[0], b[1], NULL, KB_ACTIVATION_RELU, b[3]);
}
static kb_status c_embedding(kb_context *x, void **b) { return kb_embedding(x, SROWS, SCOLS, RC, b[0], b[1], b[2]); }
static kb_status c_rope(kb_context *x, void **b) { return kb_rope(x, SROWS, 2, 8, b[0], b[1], 10000.0f, b[2]); }
static kb_status c_cross_entropy(kb_context *x, void **b) {
  return kb_cross_entropy(x, SROWS, SCOLS, b[0], b[1], -100, b[2], b[3]);
}
static kb_status c_cross_entropy_backward(kb_context *x, void **b) {
  return kb_cross_entropy_backward(x, SROWS, SCOLS, b[0], b[1], -100, 1.0f, b[2]);
}
static kb_status c_adamw(kb_context *x, void **b) {
  return kb_adamw_step(x, EN, b[0], b[1], b[2], b[3], 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3);
}
static kb_status c_argmax(kb_context *x, void **b) { return kb_argmax(x, SROWS, SCOLS, b[0], b[1]); }
static kb_status c_sample(kb_context *x, void **b) { return kb_sample(x, SROWS, SCOLS, b[0], 0.8f, 42, b[1]); }
static kb_status c_topk(kb_context *x, void **b) { return kb_topk_sample(x, SROWS, SCOLS, b[0], 7, 0.8f, 42, b[1]); }
static kb_status c_topp(kb_context *x, void **b) { return kb_topp_sample(x, SROWS, SCOLS, b[0], 0.9f, 1.2f, 42, b[1]); }
static kb_status c_embedding_bf16(kb_context *x, void **b) {
  return kb_embedding_bf16(x, SROWS, SCOLS, RC, b[0], b[1], b[2]);
}
static kb_status c_argmax_f16(kb_context *x, void **b) { return kb_argmax_f16(x, SROWS, SCOLS, b[0], b[1]); }
static kb_status c_sample_bf16(kb_context *x, void **b) { return kb_sample_bf16(x, SROWS, SCOLS, b[0], 0.8f, 42, b[1]); }
static kb_status c_topk_bf16(kb_context *x, void **b) {
  return kb_topk_sample_bf16(x, SROWS, SCOLS, b[0], 7, 0.8f, 42, b[1]);
}
static kb_status c_topp_f16(kb_context *x, void **b) {
  return kb_topp_sample_f16(x, SROWS, SCOLS, b[0], 0.9f, 1.2f, 42, b[1]);
}

#define F32 4
#define H16 2
#define ATT_Q (AB * AH * AQ * AD)
#define ATT_K (AB * AKV * AKEY * AD)
#define DEC_Q (AB * AH * 1 * AD)
#define DEC_K (AB * AKV * DKEY * AD)

/* name, buffers (elements, element size, output?, int range), call, minimum
 * number of allocations. */
static const struct icase cases[] = {
    {"kb_silu (no scratch)", 2, {EN, EN}, {F32, F32}, {false, true}, {0}, c_silu, 0},
    {"kb_silu_bf16 (no scratch)", 2, {EN, EN}, {H16, H16}, {false, true}, {0}, c_silu_bf16, 0},
    {"kb_gelu_f16 (no scratch)", 2, {EN, EN}, {H16, H16}, {false, true}, {0}, c_gelu_f16, 0},
    {"kb_gelu_tanh_bf16 (no scratch)", 2, {EN, EN}, {H16, H16}, {false, true}, {0}, c_gelu_tanh_bf16, 0},
    {"kb_add_f16 (no scratch)", 3, {EN, EN, EN}, {H16, H16, H16}, {false, false, true}, {0}, c_add_f16, 0},
    {"kb_mul_bf16 (no scratch)", 3, {EN, EN, EN}, {H16, H16, H16}, {false, false, true}, {0}, c_mul_bf16, 0},
    {"kb_scale_f16 (no scratch)", 2, {EN, EN}, {H16, H16}, {false, true}, {0}, c_scale_f16, 0},
    {"kb_add_bias_bf16 (no scratch)", 3, {RR * RC, RC, RR * RC}, {H16, H16, H16}, {false, false, true}, {0}, c_add_bias_bf16, 0},
    {"kb_softmax (no scratch)", 2, {RR * RC, RR * RC}, {F32, F32}, {false, true}, {0}, c_softmax, 0},
    {"kb_softmax_f16 (no scratch)", 2, {RR * RC, RR * RC}, {H16, H16}, {false, true}, {0}, c_softmax_f16, 0},
    {"kb_log_softmax_bf16 (no scratch)", 2, {RR * RC, RR * RC}, {H16, H16}, {false, true}, {0}, c_log_softmax_bf16, 0},
    {"kb_rmsnorm_f16 (no scratch)", 3, {RR * RC, RC, RR * RC}, {H16, H16, H16}, {false, false, true}, {0}, c_rmsnorm_f16, 0},
    {"kb_layernorm (no scratch)", 4, {RR * RC, RC, RC, RR * RC}, {F32, F32, F32, F32}, {false, false, false, true},
     {0}, c_layernorm, 0},
    {"kb_layernorm_bf16 (no scratch)", 4, {RR * RC, RC, RC, RR * RC}, {H16, H16, H16, H16}, {false, false, false, true}, {0},
     c_layernorm_bf16, 0},
    {"kb_gemm (packed)", 3, {GM * GK, GK * GN, GM * GN}, {F32, F32, F32}, {false, false, true}, {0}, c_gemm, 1},
    {"kb_gemm (packed, both transposed)", 3, {GK * GM, GN * GK, GM * GN}, {F32, F32, F32}, {false, false, true}, {0},
     c_gemm_tt, 1},
    {"kb_gemm (one row, no scratch)", 3, {VK, VN * VK, VN}, {F32, F32, F32}, {false, false, true}, {0}, c_gemv, 0},
    {"kb_gemm (one row of A transposed)", 3, {VK, VN * VK, VN}, {F32, F32, F32}, {false, false, true}, {0}, c_gemv_ta, 1},
    {"kb_gemm_bf16", 3, {GM * GK, GK * GN, GM * GN}, {H16, H16, H16}, {false, false, true}, {0}, c_gemm_bf16, 1},
    {"kb_gemm_f16 (one row)", 3, {VK, VK * VN, VN}, {H16, H16, H16}, {false, false, true}, {0}, c_gemm_f16, 1},
    {"kb_gemm_batched (an item per thread)", 3, {BB * BM * BK, BK * BNN, BB * BM * BNN}, {F32, F32, F32},
     {false, false, true}, {0}, c_batched_small, 1},
    {"kb_gemm_batched (items one after another)", 3, {XB * XM * XK, XB * XN * XK, XB * XM * XN}, {F32, F32, F32},
     {false, false, true}, {0}, c_batched_big, 1},
    {"kb_gemm_batched_bf16", 3, {BB * BM * BK, BK * BNN, BB * BM * BNN}, {H16, H16, H16}, {false, false, true}, {0},
     c_batched_bf16, 1},
    {"kb_gemm_batched_f16", 3, {XB * XM * XK, XB * XN * XK, XB * XM * XN}, {H16, H16, H16}, {false, false, true},
     {0}, c_batched_f16, 1},
    {"kb_attention (row blocks, packed K)", 4, {ATT_Q, ATT_K, ATT_K, ATT_Q}, {F32, F32, F32, F32},
     {false, false, false, true}, {0}, c_attention, 1},
    {"kb_attention (decode chunks)", 4, {DEC_Q, DEC_K, DEC_K, DEC_Q}, {F32, F32, F32, F32},
     {false, false, false, true}, {0}, c_attention_decode, 1},
    {"kb_attention_bf16", 4, {ATT_Q, ATT_K, ATT_K, ATT_Q}, {H16, H16, H16, H16}, {false, false, false, true}, {0},
     c_attention_bf16, 1},
    {"kb_attention_f16 (decode chunks)", 4, {DEC_Q, DEC_K, DEC_K, DEC_Q}, {H16, H16, H16, H16},
     {false, false, false, true}, {0}, c_attention_f16, 1},
    {"kb_attention_ex (lengths, mask)", 6, {ATT_Q, ATT_K, ATT_K, AB, AQ * AKEY, ATT_Q}, {F32, F32, F32, F32, F32, F32},
     {false, false, false, false, false, true}, {0, 0, 0, AKEY + 1, 0, 0}, c_attention_ex, 1},
    {"kb_attention_ex_f16 (lengths, mask)", 6, {ATT_Q, ATT_K, ATT_K, AB, AH * AKEY, ATT_Q},
     {H16, H16, H16, F32, H16, H16}, {false, false, false, false, false, true}, {0, 0, 0, AKEY + 1, 0, 0},
     c_attention_ex_f16, 1},
    {"kb_attention_ex_bf16", 6, {ATT_Q, ATT_K, ATT_K, 1, 1, ATT_Q}, {H16, H16, H16, F32, H16, H16},
     {false, false, false, false, false, true}, {0}, c_attention_ex_bf16, 1},
    {"kb_linear", 4, {LR * LI, LO * LI, LO, LR * LO}, {F32, F32, F32, F32}, {false, false, false, true}, {0}, c_linear,
     1},
    {"kb_linear (few rows, no scratch)", 4, {LF * LI, LO * LI, LO, LF * LO}, {F32, F32, F32, F32},
     {false, false, false, true}, {0}, c_linear_few, 0},
    {"kb_linear_w (Q8_0)", 4, {LF * QI, LO * QI / 32 * 17, LO, LF * LO}, {F32, H16, F32, F32},
     {false, false, false, true}, {0}, c_linear_w_q8, 1},
    {"kb_linear_bf16", 4, {LR * LI, LO * LI, LO, LR * LO}, {H16, H16, H16, H16}, {false, false, false, true}, {0},
     c_linear_bf16, 1},
    {"kb_linear_f16 (one row, no bias)", 4, {LI, LO * LI, 1, LO}, {H16, H16, H16, H16}, {false, false, false, true},
     {0}, c_linear_f16, 1},
    {"kb_embedding (no scratch)", 3, {SROWS, SCOLS * RC, SROWS * RC}, {F32, F32, F32}, {false, false, true},
     {SCOLS, 0, 0}, c_embedding, 0},
    {"kb_rope (no scratch)", 3, {SROWS * 16, SROWS, SROWS * 16}, {F32, F32, F32}, {false, false, true}, {0, 100, 0},
     c_rope, 0},
    {"kb_cross_entropy (no scratch)", 4, {SROWS * SCOLS, SROWS, SROWS, 1}, {F32, F32, F32, F32},
     {false, false, true, true}, {0, SCOLS, 0, 0}, c_cross_entropy, 0},
    {"kb_cross_entropy_backward (no scratch)", 3, {SROWS * SCOLS, SROWS, SROWS * SCOLS}, {F32, F32, F32},
     {false, false, true}, {0, SCOLS, 0}, c_cross_entropy_backward, 0},
    {"kb_adamw_step (no scratch)", 4, {EN, EN, EN, EN}, {F32, F32, F32, F32}, {true, false, true, true}, {0}, c_adamw,
     0},
    {"kb_argmax (no scratch)", 2, {SROWS * SCOLS, SROWS}, {F32, F32}, {false, true}, {0}, c_argmax, 0},
    {"kb_sample (no scratch)", 2, {SROWS * SCOLS, SROWS}, {F32, F32}, {false, true}, {0}, c_sample, 0},
    {"kb_topk_sample", 2, {SROWS * SCOLS, SROWS}, {F32, F32}, {false, true}, {0}, c_topk, 1},
    {"kb_topp_sample", 2, {SROWS * SCOLS, SROWS}, {F32, F32}, {false, true}, {0}, c_topp, 1},
    /* The 16-bit variants widen blocks on the stack: no more scratch than
     * the float32 calls. */
    {"kb_embedding_bf16 (no scratch)", 3, {SROWS, SCOLS * RC, SROWS * RC}, {F32, H16, H16}, {false, false, true},
     {SCOLS, 0, 0}, c_embedding_bf16, 0},
    {"kb_argmax_f16 (no scratch)", 2, {SROWS * SCOLS, SROWS}, {H16, F32}, {false, true}, {0}, c_argmax_f16, 0},
    {"kb_sample_bf16 (no scratch)", 2, {SROWS * SCOLS, SROWS}, {H16, F32}, {false, true}, {0}, c_sample_bf16, 0},
    {"kb_topk_sample_bf16", 2, {SROWS * SCOLS, SROWS}, {H16, F32}, {false, true}, {0}, c_topk_bf16, 1},
    {"kb_topp_sample_f16", 2, {SROWS * SCOLS, SROWS}, {H16, F32}, {false, true}, {0}, c_topp_f16, 1},
};

/* adamw's params, m and v are inout: they hold data, not the sentinel. */
static void prepare(const struct icase *c, void **b) {
  fill_buffers(c, b);
  if (c->call == c_adamw) {
    rand_fill((float *)b[0], EN, 7, -1.0f, 1.0f);
    rand_fill((float *)b[2], EN, 8, -0.1f, 0.1f);
    rand_fill((float *)b[3], EN, 9, 0.0f, 0.1f);
  }
}

static size_t bytes_of(const struct icase *c, int i) { return (size_t)c->elems[i] * (size_t)c->elem_size[i]; }

/* Runs one entry point with the N-th allocation failing for every N. */
static void run_case(const struct icase *c) {
  void *b[MAX_BUFS] = {0}, *want[MAX_BUFS] = {0}, *before[MAX_BUFS] = {0};
  for (int i = 0; i < c->nbuf; i++) {
    b[i] = __real_malloc(bytes_of(c, i));
    want[i] = __real_malloc(bytes_of(c, i));
    before[i] = __real_malloc(bytes_of(c, i));
  }
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  /* The result without any injection. */
  prepare(c, b);
  CHECK_OK(c->call(ctx, b));
  for (int i = 0; i < c->nbuf; i++) memcpy(want[i], b[i], bytes_of(c, i));

  long n = 0;
  for (;; n++) {
    prepare(c, b);
    for (int i = 0; i < c->nbuf; i++) memcpy(before[i], b[i], bytes_of(c, i));
    arm(n, false);
    kb_status st = c->call(ctx, b);
    long made = allocations, fails = failed;
    int leaked = live_blocks();
    disarm();
    if (fails == 0) {
      /* Fewer than n + 1 allocations: the plain call, which must succeed. */
      CHECK_OK(st);
      for (int i = 0; i < c->nbuf; i++)
        if (memcmp(b[i], want[i], bytes_of(c, i)) != 0) {
          fprintf(stderr, "%s: %ld allocations, result differs from the reference in buffer %d\n", c->name, made, i);
          CHECK(false);
        }
      break;
    }
    if (st != KB_STATUS_OUT_OF_MEMORY) {
      fprintf(stderr, "%s: allocation %ld failed, status %s (%s)\n", c->name, n, kb_status_string(st),
              kb_context_last_error(ctx));
      CHECK(false);
    } else {
      const char *msg = kb_context_last_error(ctx);
      size_t fl = strcspn(c->name, " ");
      if (strncmp(msg, c->name, fl) != 0 || msg[fl] != ':' || (!strstr(msg, "scratch") && !strstr(msg, "memory"))) {
        fprintf(stderr, "%s: allocation %ld failed, message \"%s\"\n", c->name, n, msg);
        CHECK(false);
      }
    }
    for (int i = 0; i < c->nbuf; i++)
      if (memcmp(b[i], before[i], bytes_of(c, i)) != 0) {
        fprintf(stderr, "%s: allocation %ld failed and buffer %d was written\n", c->name, n, i);
        CHECK(false);
      }
    if (leaked != 0) {
      fprintf(stderr, "%s: allocation %ld failed and %d block(s) were not freed\n", c->name, n, leaked);
      CHECK(false);
    }
    /* The context still works. */
    prepare(c, b);
    CHECK_OK(c->call(ctx, b));
    for (int i = 0; i < c->nbuf; i++)
      if (memcmp(b[i], want[i], bytes_of(c, i)) != 0) {
        fprintf(stderr, "%s: after a failed allocation %ld, the next call's buffer %d differs\n", c->name, n, i);
        CHECK(false);
      }
    if (n > 64) {
      fprintf(stderr, "%s: more than 64 allocations in one call\n", c->name);
      CHECK(false);
      break;
    }
  }
  printf("%-44s %ld allocation(s), each failure reported cleanly\n", c->name, n);
  if (n < c->min_allocations) {
    fprintf(stderr, "%s: expected at least %d allocation(s), saw %ld\n", c->name, c->min_allocations, n);
    CHECK(false);
  }
  kb_context_destroy(ctx);
  for (int i = 0; i < c->nbuf; i++) {
    __real_free(b[i]);
    __real_free(want[i]);
    __real_free(before[i]);
  }
}

static void test_every_entry_point(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* kb_context_create: the context (and its pool's bookkeeping) fail; no
 * handle is written on failure and nothing leaks; a context whose pool could
 * not be allocated still works (single-threaded). */
static void test_context_create(void) {
  /* A destroyed context's memory is kept for the next create (calls.c), so
   * after this pair the creates below allocate only their pools: the
   * injection covers the pool, and "nothing left after destroy" holds. */
  kb_context *warm = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &warm));
  kb_context_destroy(warm);
  for (int64_t threads = 1; threads <= 4; threads += 3) {
    long n = 0;
    for (;; n++) {
      kb_context *ctx = (kb_context *)(uintptr_t)0x1234;
      arm(n, false);
      kb_status st = kb_context_create(KB_BACKEND_CPU, threads, &ctx);
      long fails = failed;
      disarm();
      if (st == KB_STATUS_OK) {
        float x[4] = {1, 2, 3, 4}, y[4];
        CHECK_OK(kb_scale(ctx, 4, 2.0f, x, y));
        CHECK(y[3] == 8.0f);
        /* Destroying it frees everything it allocated (also when its pool
         * could not be had): the blocks tracked during the call are gone. */
        kb_context_destroy(ctx);
        int leaked = live_blocks();
        if (leaked != 0) fprintf(stderr, "kb_context_create(%lld threads): %d block(s) left after destroy\n",
                                 (long long)threads, leaked);
        CHECK(leaked == 0);
        if (fails == 0) break;
      } else {
        CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, st);
        CHECK(ctx == (kb_context *)(uintptr_t)0x1234);
        CHECK_STR_CONTAINS(kb_last_error(), "kb_context_create: ");
        CHECK(live_blocks() == 0);
      }
      if (n > 16) break;
    }
    printf("kb_context_create (%lld thread(s))              %ld allocation(s)\n", (long long)threads, n);
    CHECK(n >= (threads > 1 ? 1 : 0));
  }
}

/* kb_buffer_create: the handle and the memory; *out untouched on failure. */
static void test_buffer_create(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  long n = 0;
  for (;; n++) {
    kb_buffer *buf = (kb_buffer *)(uintptr_t)0x5678;
    arm(n, false);
    kb_status st = kb_buffer_create(ctx, 4096, &buf);
    long fails = failed;
    int leaked = live_blocks();
    disarm();
    if (fails == 0) {
      CHECK_OK(st);
      CHECK(kb_buffer_size(buf) == 4096);
      CHECK_OK(kb_buffer_fill(ctx, buf, 0, 4096, 9));
      kb_buffer_destroy(buf);
      break;
    }
    CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, st);
    CHECK(buf == (kb_buffer *)(uintptr_t)0x5678);
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_buffer_create: ");
    CHECK(leaked == 0);
  }
  printf("kb_buffer_create                              %ld allocation(s)\n", n);
  CHECK(n == 2);
  kb_context_destroy(ctx);
}

/* The worker pool: when its first job cannot start the workers (their slots
 * or argument blocks cannot be allocated, or pthread_create fails), the job
 * runs inline on the calling thread with the same result, later jobs too,
 * and destroying the context frees everything. */
static void test_pool_start_failures(void) {
  enum { N = 1 << 18 };
  float *x = (float *)__real_malloc(N * sizeof(float)), *y = (float *)__real_malloc(N * sizeof(float));
  float *want = (float *)__real_malloc(N * sizeof(float));
  rand_fill(x, N, 5, -3.0f, 3.0f);
  CHECK_OK(kb_silu(NULL, N, x, want));
  int cases_run = 0;
  for (int threads_fail = 0; threads_fail <= 1; threads_fail++) {
    for (long n = 0; n < 16; n++) {
      kb_context *ctx = NULL;
      CHECK_OK(kb_context_create(KB_BACKEND_CPU, 4, &ctx));
      if (ctx == NULL) return;
      arm(threads_fail ? -1 : n, threads_fail != 0);
      fill_f(y, N, SENTINEL_F);
      kb_status st = kb_silu(ctx, N, x, y); /* large enough to split over 4 threads */
      long fails = failed, tfails = threads_failed;
      disarm();
      CHECK_OK(st);
      CHECK(memcmp(y, want, N * sizeof(float)) == 0);
      if (fails > 0 || tfails > 0) {
        CHECK(kb__pool_threads_running(ctx->pool) == 0);
        cases_run++;
      } else {
        CHECK(kb__pool_threads_running(ctx->pool) == 3);
      }
      fill_f(y, N, SENTINEL_F);
      CHECK_OK(kb_silu(ctx, N, x, y));
      CHECK(memcmp(y, want, N * sizeof(float)) == 0);
      /* Blocks the call allocated (the worker slots) go with the context. */
      kb_context_destroy(ctx);
      CHECK(live_blocks() == 0);
      if (threads_fail || fails == 0) break;
    }
  }
  printf("worker pool start                             %d failure(s) absorbed (run inline)\n", cases_run);
  CHECK(cases_run >= 3); /* slots, an argument block, pthread_create */
  __real_free(x);
  __real_free(y);
  __real_free(want);
}

int main(void) {
  KB_RUN(test_every_entry_point);
  KB_RUN(test_context_create);
  KB_RUN(test_buffer_create);
  KB_RUN(test_pool_start_failures);
  return kb_test_summary();
}
