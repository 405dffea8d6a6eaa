/* Tests of the CUDA dispatch of every public kernel, through core's fake
 * CUDA backend (core/testing/fake_cuda.h): its "device memory" is host
 * memory it tracks, its validate_* entries really scan, and its kernel
 * entries only record the call.  So this checks the host side of the CUDA
 * path on any machine: which table entry a kernel calls (and with which dtype
 * and op), that memory of the wrong kind is rejected naming the argument
 * before any device call, that validation still comes first, that content
 * checks on the device give the CPU's messages, and that device errors and
 * the lost-device latch reach the caller. */
#include <stdlib.h>

#include "fake_cuda.h"
#include "internal.h" /* kb__cuda_use_table_for_testing */
#include "kb_test.h"
#include "kernelbridge.h"

/* Every tensor of every case fits in one slot: at most 16 floats. */
#define SLOT_BYTES 64
#define MAX_ARGS 4

/* A kernel called with its tensors in p[0..nargs) and the first dimension
 * scaled by d (1: a valid call, -1: a negative first dimension). */
typedef kb_status (*call_fn)(kb_context *c, void *const *p, int64_t d);

/* Shapes: n = 8; rows = 2, cols = 4; gemm 2 x 2 x 2; attention batch 1,
 * heads 2, kv_heads 1, seq 2, head_dim 2; embedding 2 ids, vocab 3, dim 4;
 * rope seq 2, heads 2, head_dim 2.  All-zero data is valid for every kernel
 * (ids, targets and positions 0, finite logits). */
#define W_UNARY(f) \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) { return f(c, 8 * d, p[0], p[1]); }
#define W_BINARY(f) \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) { return f(c, 8 * d, p[0], p[1], p[2]); }
#define W_SCALE(f) \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) { return f(c, 8 * d, 2.0f, p[0], p[1]); }
#define W_BIAS(f) \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) { return f(c, 2 * d, 4, p[0], p[1], p[2]); }
#define W_ROWS(f) \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) { return f(c, 2 * d, 4, p[0], p[1]); }
#define W_RMS(f)                                                      \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) {  \
    return f(c, 2 * d, 4, p[0], p[1], 1e-5f, p[2]);                   \
  }
#define W_LN(f)                                                       \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) {  \
    return f(c, 2 * d, 4, p[0], p[1], p[2], 1e-5f, p[3]);             \
  }
#define W_GEMM(f)                                                            \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) {         \
    return f(c, false, true, 2 * d, 2, 2, 1.0f, p[0], 2, p[1], 2, 0.5f, p[2], 2); \
  }
#define W_ATTN(f)                                                            \
  static kb_status w_##f(kb_context *c, void *const *p, int64_t d) {         \
    return f(c, d, 2, 1, 2, 2, 2, p[0], p[1], p[2], true, 0.0f, p[3]);       \
  }
#define TRIPLE(W, op) W(kb_##op) W(kb_##op##_bf16) W(kb_##op##_f16)

TRIPLE(W_UNARY, silu)
TRIPLE(W_UNARY, gelu)
TRIPLE(W_UNARY, gelu_tanh)
TRIPLE(W_BINARY, add)
TRIPLE(W_BINARY, mul)
TRIPLE(W_SCALE, scale)
TRIPLE(W_BIAS, add_bias)
TRIPLE(W_ROWS, softmax)
TRIPLE(W_ROWS, log_softmax)
TRIPLE(W_RMS, rmsnorm)
TRIPLE(W_LN, layernorm)
TRIPLE(W_GEMM, gemm)
TRIPLE(W_ATTN, attention)

static kb_status w_kb_embedding(kb_context *c, void *const *p, int64_t d) {
  return kb_embedding(c, 2 * d, 3, 4, p[0], p[1], p[2]);
}
static kb_status w_kb_rope(kb_context *c, void *const *p, int64_t d) {
  return kb_rope(c, 2 * d, 2, 2, p[0], p[1], 10000.0f, p[2]);
}
static kb_status w_kb_cross_entropy(kb_context *c, void *const *p, int64_t d) {
  return kb_cross_entropy(c, 2 * d, 4, p[0], p[1], -100, p[2], p[3]);
}
static kb_status w_kb_cross_entropy_backward(kb_context *c, void *const *p, int64_t d) {
  return kb_cross_entropy_backward(c, 2 * d, 4, p[0], p[1], -100, 1.0f, p[2]);
}
static kb_status w_kb_adamw_step(kb_context *c, void *const *p, int64_t d) {
  return kb_adamw_step(c, 8 * d, p[0], p[1], p[2], p[3], 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
}
static kb_status w_kb_argmax(kb_context *c, void *const *p, int64_t d) { return kb_argmax(c, 2 * d, 4, p[0], p[1]); }
static kb_status w_kb_sample(kb_context *c, void *const *p, int64_t d) {
  return kb_sample(c, 2 * d, 4, p[0], 1.0f, 7, p[1]);
}
static kb_status w_kb_topk_sample(kb_context *c, void *const *p, int64_t d) {
  return kb_topk_sample(c, 2 * d, 4, p[0], 2, 1.0f, 7, p[1]);
}
static kb_status w_kb_topp_sample(kb_context *c, void *const *p, int64_t d) {
  return kb_topp_sample(c, 2 * d, 4, p[0], 0.9f, 1.0f, 7, p[1]);
}

struct kcase {
  const char *fn;    /* public name */
  call_fn call;
  const char *entry; /* table field the fake records */
  int32_t dtype;     /* dt argument, -1 for float32 entries */
  int32_t op;        /* op / log flag of unary_dt, binary_dt, softmax_dt; else -1 */
  int calls;         /* table calls of a valid call: validate_* first, then the kernel */
  const char *dim;   /* name of the first dimension */
  int nargs;
  const char *args[MAX_ARGS];
};

#define K(f, entry, dt, op, calls, dim, nargs, ...) {#f, w_##f, entry, dt, op, calls, dim, nargs, {__VA_ARGS__}}
#define K3(op, entry_f32, entry_dt, opnum, dim, nargs, ...)                                 \
  K(kb_##op, entry_f32, -1, -1, 1, dim, nargs, __VA_ARGS__),                                \
      K(kb_##op##_bf16, entry_dt, KBCUDA_BF16, opnum, 1, dim, nargs, __VA_ARGS__),          \
      K(kb_##op##_f16, entry_dt, KBCUDA_F16, opnum, 1, dim, nargs, __VA_ARGS__)

static const struct kcase kCases[] = {
    K3(silu, "silu", "unary_dt", KBCUDA_OP_SILU, "n", 2, "x", "y"),
    K3(gelu, "gelu", "unary_dt", KBCUDA_OP_GELU, "n", 2, "x", "y"),
    K3(gelu_tanh, "gelu_tanh", "unary_dt", KBCUDA_OP_GELU_TANH, "n", 2, "x", "y"),
    K3(add, "add", "binary_dt", KBCUDA_OP_ADD, "n", 3, "a", "b", "y"),
    K3(mul, "mul", "binary_dt", KBCUDA_OP_MUL, "n", 3, "a", "b", "y"),
    K3(scale, "scale", "scale_dt", -1, "n", 2, "x", "y"),
    K3(add_bias, "add_bias", "add_bias_dt", -1, "rows", 3, "x", "bias", "y"),
    K3(softmax, "softmax", "softmax_dt", 0, "rows", 2, "x", "y"),
    K3(log_softmax, "log_softmax", "softmax_dt", 1, "rows", 2, "x", "y"),
    K3(rmsnorm, "rmsnorm", "rmsnorm_dt", -1, "rows", 3, "x", "weight", "y"),
    K3(layernorm, "layernorm", "layernorm_dt", -1, "rows", 4, "x", "weight", "bias", "y"),
    K3(gemm, "gemm", "gemm_dt", -1, "m", 3, "a", "b", "c"),
    K3(attention, "attention", "attention_dt", -1, "batch", 4, "q", "k", "v", "out"),
    K(kb_embedding, "embedding", -1, -1, 2, "n_ids", 3, "ids", "table", "out"),
    K(kb_rope, "rope", -1, -1, 2, "seq", 3, "x", "positions", "y"),
    K(kb_cross_entropy, "cross_entropy", -1, -1, 2, "rows", 4, "logits", "targets", "losses", "mean_loss"),
    K(kb_cross_entropy_backward, "cross_entropy_backward", -1, -1, 2, "rows", 3, "logits", "targets", "dlogits"),
    K(kb_adamw_step, "adamw_step", -1, -1, 1, "n", 4, "params", "grads", "m", "v"),
    K(kb_argmax, "argmax", -1, -1, 1, "rows", 2, "x", "out"),
    K(kb_sample, "sample", -1, -1, 2, "rows", 2, "logits", "out"),
    K(kb_topk_sample, "topk_sample", -1, -1, 2, "rows", 2, "logits", "out"),
    K(kb_topp_sample, "topp_sample", -1, -1, 2, "rows", 2, "logits", "out"),
};
#define NCASES ((int)(sizeof kCases / sizeof kCases[0]))

/* ---- fixtures ---- */

static kb_context *g_cuda; /* a context on the fake device 0 */
static kb_context *g_cpu;  /* a CPU context, created after the fake probed */
static kb_buffer *g_buf[MAX_ARGS];
static void *g_dev[MAX_ARGS];                               /* device slots (zeros) */
static float g_host[MAX_ARGS][SLOT_BYTES / sizeof(float)]; /* host slots */

static void zero_host(void) { memset(g_host, 0, sizeof g_host); }

static void zero_device(void) {
  for (int i = 0; i < MAX_ARGS; i++) CHECK_OK(kb_buffer_fill(g_cuda, g_buf[i], 0, SLOT_BYTES, 0));
}

/* "fn: name " starts the message: the failure names the argument. */
static void check_names(const kb_context *ctx, const char *fn, const char *name) {
  char want[96];
  snprintf(want, sizeof want, "%s: %s ", fn, name);
  const char *msg = kb_context_last_error(ctx);
  if (strncmp(msg, want, strlen(want)) != 0) {
    fprintf(stderr, "message \"%s\" does not start with \"%s\"\n", msg, want);
    CHECK(false);
  }
}

static void setup(void) {
  kb__cuda_use_table_for_testing(kb_fake_cuda_table());
  if (kb_context_create_cuda(0, &g_cuda) != KB_STATUS_OK ||
      kb_context_create(KB_BACKEND_CPU, 1, &g_cpu) != KB_STATUS_OK) {
    fprintf(stderr, "cannot create contexts: %s\n", kb_last_error());
    exit(2);
  }
  for (int i = 0; i < MAX_ARGS; i++) {
    if (kb_buffer_create(g_cuda, SLOT_BYTES, &g_buf[i]) != KB_STATUS_OK) {
      fprintf(stderr, "cannot create a device buffer: %s\n", kb_context_last_error(g_cuda));
      exit(2);
    }
    g_dev[i] = kb_buffer_data(g_buf[i]);
  }
  zero_device();
}

static void teardown(void) {
  for (int i = 0; i < MAX_ARGS; i++) kb_buffer_destroy(g_buf[i]);
  kb_context_destroy(g_cuda);
  kb_context_destroy(g_cpu);
}

/* ---- every kernel ---- */

/* With device memory each kernel calls its own entry, with the right dtype
 * and op, after the validate_* entry of the kernels that read contents. */
static void test_dispatches_to_entry(void) {
  CHECK(NCASES == 48);
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    kb_fake_cuda_reset();
    kb_status st = k->call(g_cuda, g_dev, 1);
    if (st != KB_STATUS_OK || strcmp(kb_fake_cuda_last_entry(), k->entry) != 0 || kb_fake_cuda_calls() != k->calls ||
        kb_fake_cuda_last_dtype() != k->dtype || kb_fake_cuda_last_op() != k->op) {
      fprintf(stderr, "%s: %s \"%s\"; entry %s, %d calls, dtype %d, op %d\n", k->fn, kb_status_string(st),
              kb_context_last_error(g_cuda), kb_fake_cuda_last_entry(), kb_fake_cuda_calls(),
              (int)kb_fake_cuda_last_dtype(), (int)kb_fake_cuda_last_op());
      CHECK(false);
    }
    CHECK(kb_context_last_error(g_cuda)[0] == '\0');
  }
}

/* A host pointer for any one tensor on a CUDA context: INVALID_ARGUMENT
 * naming it, and no table call. */
static void test_host_pointer_rejected(void) {
  zero_host();
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    for (int a = 0; a < k->nargs; a++) {
      void *p[MAX_ARGS];
      memcpy(p, g_dev, sizeof p);
      p[a] = g_host[a];
      kb_fake_cuda_reset();
      CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, k->call(g_cuda, p, 1));
      check_names(g_cuda, k->fn, k->args[a]);
      CHECK(kb_fake_cuda_calls() == 0);
    }
  }
}

/* Argument validation (here a negative first dimension) comes before any
 * device call, with the CPU's message. */
static void test_validation_before_device(void) {
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    kb_fake_cuda_reset();
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, k->call(g_cuda, g_dev, -1));
    char want[96];
    snprintf(want, sizeof want, "%s: %s must be >= 0, got -", k->fn, k->dim);
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), want);
    CHECK(kb_fake_cuda_calls() == 0);
    /* The CPU context reports the same message. */
    zero_host();
    void *p[MAX_ARGS] = {g_host[0], g_host[1], g_host[2], g_host[3]};
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, k->call(g_cpu, p, -1));
    CHECK(strcmp(kb_context_last_error(g_cpu), kb_context_last_error(g_cuda)) == 0);
  }
}

/* A failure of the device entry reaches the caller with its message,
 * prefixed once with the public name. */
static void test_device_error(void) {
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    kb_fake_cuda_reset();
    kb_fake_cuda_fail_next(KBCUDA_STATUS_DEVICE_ERROR, "injected failure");
    CHECK_STATUS(KB_STATUS_DEVICE_ERROR, k->call(g_cuda, g_dev, 1));
    char want[96];
    snprintf(want, sizeof want, "%s: injected failure", k->fn);
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), want);
    /* The context is not lost: the next call works. */
    kb_fake_cuda_reset();
    CHECK_OK(k->call(g_cuda, g_dev, 1));
  }
}

/* On a CPU context (the backend is loaded, so device memory can exist) a
 * device pointer for any one tensor is rejected naming it; all-host calls
 * run on the CPU without touching the table. */
static void test_cpu_context_rejects_device_memory(void) {
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    for (int a = 0; a < k->nargs; a++) {
      zero_host();
      void *p[MAX_ARGS] = {g_host[0], g_host[1], g_host[2], g_host[3]};
      p[a] = g_dev[a];
      kb_fake_cuda_reset();
      CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, k->call(g_cpu, p, 1));
      check_names(g_cpu, k->fn, k->args[a]);
      CHECK(kb_fake_cuda_calls() == 0);
    }
    zero_host();
    void *p[MAX_ARGS] = {g_host[0], g_host[1], g_host[2], g_host[3]};
    kb_fake_cuda_reset();
    kb_status st = k->call(g_cpu, p, 1);
    if (st != KB_STATUS_OK) fprintf(stderr, "%s on the CPU: %s\n", k->fn, kb_context_last_error(g_cpu));
    CHECK(st == KB_STATUS_OK);
    CHECK(kb_fake_cuda_calls() == 0);
  }
}

/* A lost device is latched: the call that hit it returns DEVICE_LOST, and
 * every later kernel call on that context fails fast without a table call. */
static void test_device_lost_latches(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  if (ctx == NULL) return;
  kb_fake_cuda_reset();
  kb_fake_cuda_fail_next(KBCUDA_STATUS_DEVICE_LOST, "cudaErrorIllegalAddress");
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb_silu(ctx, 8, g_dev[0], g_dev[1]));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_silu: cudaErrorIllegalAddress");
  for (int i = 0; i < NCASES; i++) {
    const struct kcase *k = &kCases[i];
    kb_fake_cuda_reset();
    CHECK_STATUS(KB_STATUS_DEVICE_LOST, k->call(ctx, g_dev, 1));
    CHECK_STR_CONTAINS(kb_context_last_error(ctx), k->fn);
    CHECK(kb_fake_cuda_calls() == 0);
  }
  /* Other contexts are unaffected. */
  kb_fake_cuda_reset();
  CHECK_OK(kb_silu(g_cuda, 8, g_dev[0], g_dev[1]));
  kb_context_destroy(ctx);
}

/* ---- content checks on the device ---- */

/* Runs call on the CPU with host tensors and on CUDA with the same bytes in
 * device memory: both fail with the same status and message, which contains
 * want, and CUDA stops after the validate entry (no kernel call). */
static void same_failure(const char *what, call_fn call, const void *const *data, const size_t *bytes, int nargs,
                         const char *validate_entry, const char *want) {
  zero_host();
  zero_device();
  void *hp[MAX_ARGS] = {g_host[0], g_host[1], g_host[2], g_host[3]};
  for (int a = 0; a < nargs; a++) {
    if (data[a] == NULL) continue;
    memcpy(g_host[a], data[a], bytes[a]);
    CHECK_OK(kb_buffer_upload(g_cuda, g_buf[a], 0, (int64_t)bytes[a], data[a]));
  }
  kb_status cpu = call(g_cpu, hp, 1);
  kb_fake_cuda_reset();
  kb_status gpu = call(g_cuda, g_dev, 1);
  if (cpu != KB_STATUS_INVALID_ARGUMENT || gpu != cpu ||
      strcmp(kb_context_last_error(g_cpu), kb_context_last_error(g_cuda)) != 0) {
    fprintf(stderr, "%s: CPU %s \"%s\", CUDA %s \"%s\"\n", what, kb_status_string(cpu), kb_context_last_error(g_cpu),
            kb_status_string(gpu), kb_context_last_error(g_cuda));
    CHECK(false);
  }
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), want);
  CHECK(strcmp(kb_fake_cuda_last_entry(), validate_entry) == 0);
  CHECK(kb_fake_cuda_calls() == 1);
  zero_device();
}

static void test_device_index_checks(void) {
  const int32_t ids[2] = {0, 5}; /* vocab 3 */
  const void *emb[3] = {ids, NULL, NULL};
  const size_t emb_bytes[3] = {sizeof ids, 0, 0};
  same_failure("embedding", w_kb_embedding, emb, emb_bytes, 3, "validate_index",
               "kb_embedding: ids[1] = 5 is out of range [0, 3)");

  const int32_t pos[2] = {0, -3};
  const void *rope[3] = {NULL, pos, NULL};
  const size_t rope_bytes[3] = {0, sizeof pos, 0};
  same_failure("rope", w_kb_rope, rope, rope_bytes, 3, "validate_index", "kb_rope: positions[1] must be >= 0, got -3");

  /* The ignored row 0 is skipped; row 1 is out of range. */
  const int32_t targets[2] = {-100, 7};
  const void *ce[4] = {NULL, targets, NULL, NULL};
  const size_t ce_bytes[4] = {0, sizeof targets, 0, 0};
  same_failure("cross_entropy", w_kb_cross_entropy, ce, ce_bytes, 4, "validate_index",
               "kb_cross_entropy: targets[1] = 7 is out of range [0, 4) and is not ignore_index (-100)");
  const int32_t targets_b[2] = {-1, 2};
  const void *ceb[3] = {NULL, targets_b, NULL};
  const size_t ceb_bytes[3] = {0, sizeof targets_b, 0};
  same_failure("cross_entropy_backward", w_kb_cross_entropy_backward, ceb, ceb_bytes, 3, "validate_index",
               "kb_cross_entropy_backward: targets[0] = -1 is out of range");
}

static void test_device_logits_checks(void) {
  static const call_fn fns[3] = {w_kb_sample, w_kb_topk_sample, w_kb_topp_sample};
  static const char *names[3] = {"kb_sample", "kb_topk_sample", "kb_topp_sample"};
  /* 2 x 4 logits: row 1 holds NaN; holds +inf after a -inf; row 0 all -inf. */
  const float nan_rows[8] = {0, 1, 2, 3, 0, 1, NAN, 3};
  const float inf_rows[8] = {0, 1, 2, 3, -INFINITY, INFINITY, 0, NAN};
  const float neg_rows[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, NAN, 0, 0, 0};
  const float *cases[3] = {nan_rows, inf_rows, neg_rows};
  const char *want[3] = {"logits row 1 holds NaN", "logits row 1 holds +inf", "logits row 0 is all -inf"};
  for (int f = 0; f < 3; f++) {
    for (int c = 0; c < 3; c++) {
      const void *data[2] = {cases[c], NULL};
      const size_t bytes[2] = {8 * sizeof(float), 0};
      char msg[96];
      snprintf(msg, sizeof msg, "%s: %s", names[f], want[c]);
      same_failure(names[f], fns[f], data, bytes, 2, "validate_logits", msg);
    }
  }
}

/* Empty calls still go through the memory check (NULL is fine for empty
 * tensors) and, on CUDA, to the entry (cross_entropy writes mean_loss). */
static void test_empty_calls(void) {
  kb_fake_cuda_reset();
  CHECK_OK(kb_silu(g_cuda, 0, NULL, NULL));
  CHECK_OK(kb_gemm_bf16(g_cuda, false, false, 0, 0, 0, 1.0f, NULL, 1, NULL, 1, 0.0f, NULL, 1));
  CHECK_OK(kb_cross_entropy(g_cuda, 0, 0, NULL, NULL, -100, NULL, g_dev[0]));
  CHECK(strcmp(kb_fake_cuda_last_entry(), "cross_entropy") == 0);
  /* mean_loss must still be device memory. */
  float mean = 0.0f;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cross_entropy(g_cuda, 0, 0, NULL, NULL, -100, NULL, &mean));
  check_names(g_cuda, "kb_cross_entropy", "mean_loss");
}

/* kb_rope_ex (variant v: 0 f32, 1 bf16, 2 f16) with batch b, seq 2,
 * q_heads 2, kv_heads 1, head_dim 2: positions, q, k in p[0..2]. */
static kb_status rope_ex_call(int v, kb_context *c, void *const *p, int64_t b) {
  const int32_t *pos = (const int32_t *)p[0];
  if (v == 0)
    return kb_rope_ex(c, b, 2, 2, 1, 2, 2, KB_ROPE_STYLE_HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8192,
                      (float *)p[1], (float *)p[2]);
  if (v == 1)
    return kb_rope_ex_bf16(c, b, 2, 2, 1, 2, 2, KB_ROPE_STYLE_HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8192,
                           (uint16_t *)p[1], (uint16_t *)p[2]);
  return kb_rope_ex_f16(c, b, 2, 2, 1, 2, 2, KB_ROPE_STYLE_HALF, pos, 1e4f, KB_ROPE_SCALING_NONE, 1, 1, 4, 8192,
                        (uint16_t *)p[1], (uint16_t *)p[2]);
}

/* kb_rope_ex has no CUDA kernel: on a CUDA context it validates as on the
 * CPU (dimensions, memory kinds) and then fails with UNSUPPORTED, never
 * calling the table.  Not in kCases, which lists the table's entries. */
static void test_rope_ex_unsupported(void) {
  static const char *const names[3] = {"kb_rope_ex:", "kb_rope_ex_bf16:", "kb_rope_ex_f16:"};
  for (int v = 0; v < 3; v++) {
    void *host_q[MAX_ARGS] = {g_dev[0], g_host[1], g_dev[2], g_dev[3]};
    kb_fake_cuda_reset();
    CHECK_STATUS(KB_STATUS_UNSUPPORTED, rope_ex_call(v, g_cuda, g_dev, 1));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), names[v]);
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "not implemented by the CUDA backend");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, rope_ex_call(v, g_cuda, g_dev, -1));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "batch must be >= 0");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, rope_ex_call(v, g_cuda, host_q, 1));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), ": q ");
    CHECK(kb_fake_cuda_calls() == 0);
  }
}

/* The decoder kernels (kernels/cpu/decoder/) have no CUDA implementation:
 * after full validation (the memory-kind check included, so host memory is
 * still named) a CUDA context gets UNSUPPORTED, and no table entry runs. */
static void test_cpu_only_decoder_kernels(void) {
  kb_fake_cuda_reset();
  CHECK_STATUS(KB_STATUS_UNSUPPORTED,
               kb_glu(g_cuda, 2, 4, g_dev[0], 4, g_dev[1], 4, KB_ACTIVATION_SILU, g_dev[2]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_glu: not implemented by the CUDA backend");
  CHECK_STATUS(KB_STATUS_UNSUPPORTED,
               kb_glu_bf16(g_cuda, 2, 4, g_dev[0], 4, g_dev[1], 4, KB_ACTIVATION_GELU, g_dev[2]));
  CHECK_STATUS(KB_STATUS_UNSUPPORTED, kb_add_rmsnorm(g_cuda, 2, 4, g_dev[0], g_dev[1], g_dev[2], 1e-5f, g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_add_rmsnorm: not implemented by the CUDA backend");
  CHECK_STATUS(KB_STATUS_UNSUPPORTED,
               kb_add_rmsnorm_f16(g_cuda, 2, 4, g_dev[0], g_dev[1], g_dev[2], 1e-5f, g_dev[3]));
  CHECK(kb_fake_cuda_calls() == 0);
  /* Validation first: host memory is named, a bad act is refused. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
               kb_glu(g_cuda, 2, 4, g_dev[0], 4, g_host[1], 4, KB_ACTIVATION_SILU, g_dev[2]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "up");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_glu(g_cuda, 2, 4, g_dev[0], 4, g_dev[1], 4, (kb_activation)6, g_dev[2]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "act");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
               kb_add_rmsnorm(g_cuda, 2, 4, g_dev[0], g_host[1], g_dev[2], 1e-5f, g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "residual");
  CHECK(kb_fake_cuda_calls() == 0);
  /* The gated feed-forward blocks: F32 weights of [2, 4] (32 bytes), two
   * experts of them for kb_moe_experts (inputs may share a slot; the ids,
   * device memory, are not read on a CUDA context). */
  CHECK_STATUS(KB_STATUS_UNSUPPORTED, kb_linear_glu_w(g_cuda, 2, 4, 2, g_dev[0], KB_DTYPE_F32, g_dev[1], 32, g_dev[2],
                                                      32, KB_ACTIVATION_SILU, g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_linear_glu_w: not implemented by the CUDA backend");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_linear_glu_w(g_cuda, 2, 4, 2, g_dev[0], KB_DTYPE_F32, g_host[1], 32,
                                                           g_dev[2], 32, KB_ACTIVATION_SILU, g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "gate_weight");
  CHECK_STATUS(KB_STATUS_UNSUPPORTED,
               kb_moe_experts(g_cuda, 1, 4, 2, 2, 1, g_dev[0], g_dev[1], g_dev[2], KB_DTYPE_F32, g_dev[1], 64,
                              g_dev[2], 64, g_dev[0], 64, KB_ACTIVATION_SILU, g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_moe_experts");
  CHECK(kb_fake_cuda_calls() == 0);
  /* A float32 model over a 16-bit cache: batch 1, 2 kv heads, one new
   * token, capacity 4, head_dim 4; k_new and v_new share a slot, inputs may
   * (the positions, device memory, are not
   * read on a CUDA context). */
  CHECK_STATUS(KB_STATUS_UNSUPPORTED, kb_kv_cache_append_to_bf16(g_cuda, 1, 2, 1, 4, 4, false, g_dev[0], g_dev[0],
                                                                 g_dev[1], g_dev[2], g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_kv_cache_append_to_bf16: not implemented by the CUDA backend");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_kv_cache_append_to_f16(g_cuda, 1, 2, 1, 4, 4, true, g_dev[0], g_dev[0],
                                                                     g_dev[1], (uint16_t *)(void *)g_host[2],
                                                                     g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "k_cache");
  CHECK_STATUS(KB_STATUS_UNSUPPORTED, kb_attention_ex_kv_f16(g_cuda, 1, 2, 1, 1, 4, 4, false, g_dev[0], g_dev[1],
                                                             g_dev[2], NULL, 0, 0, 0, NULL, false, false, 0.0f,
                                                             g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "kb_attention_ex_kv_f16: not implemented by the CUDA backend");
  const uint16_t *host_k = (const uint16_t *)(const void *)g_host[1];
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_attention_ex_kv_bf16(g_cuda, 1, 2, 1, 1, 4, 4, false, g_dev[0], host_k,
                                                                   g_dev[2], NULL, 0, 0, 0, NULL, false, false, 0.0f,
                                                                   g_dev[3]));
  CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "k");
  CHECK(kb_fake_cuda_calls() == 0);
}

/* The 16-bit embedding, argmax and samplers have no CUDA kernel: after the
 * CPU's validation (memory kinds, k, p, temperature) a CUDA context gets
 * UNSUPPORTED, before any device scan of the ids or logits. */
static void test_decode_16bit_unsupported(void) {
  const int32_t *ids = (const int32_t *)g_dev[0];
  const uint16_t *h = (const uint16_t *)g_dev[1];
  uint16_t *o = (uint16_t *)g_dev[2];
  int32_t *tok = (int32_t *)g_dev[2];
  for (int dt = 0; dt < 2; dt++) {
    kb_fake_cuda_reset();
    CHECK_STATUS(KB_STATUS_UNSUPPORTED, (dt ? kb_embedding_f16 : kb_embedding_bf16)(g_cuda, 2, 3, 4, ids, h, o));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), dt ? "kb_embedding_f16: not implemented by the CUDA backend"
                                                         : "kb_embedding_bf16: not implemented by the CUDA backend");
    CHECK_STATUS(KB_STATUS_UNSUPPORTED, (dt ? kb_argmax_f16 : kb_argmax_bf16)(g_cuda, 2, 4, h, tok));
    CHECK_STATUS(KB_STATUS_UNSUPPORTED, (dt ? kb_sample_f16 : kb_sample_bf16)(g_cuda, 2, 4, h, 1.0f, 7, tok));
    CHECK_STATUS(KB_STATUS_UNSUPPORTED,
                 (dt ? kb_topk_sample_f16 : kb_topk_sample_bf16)(g_cuda, 2, 4, h, 2, 1.0f, 7, tok));
    CHECK_STATUS(KB_STATUS_UNSUPPORTED,
                 (dt ? kb_topp_sample_f16 : kb_topp_sample_bf16)(g_cuda, 2, 4, h, 0.9f, 1.0f, 7, tok));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "not implemented by the CUDA backend");
    CHECK(kb_fake_cuda_calls() == 0);
    /* Validation first: host memory is named, bad scalars are refused. */
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
                 (dt ? kb_embedding_f16 : kb_embedding_bf16)(g_cuda, 2, 3, 4, ids, (const uint16_t *)(void *)g_host[1], o));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "table");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, (dt ? kb_argmax_f16 : kb_argmax_bf16)(g_cuda, 2, 4, h, (int32_t *)(void *)g_host[2]));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "out");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, (dt ? kb_sample_f16 : kb_sample_bf16)(g_cuda, 2, 4, h, 0.0f, 7, tok));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "temperature");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
                 (dt ? kb_topk_sample_f16 : kb_topk_sample_bf16)(g_cuda, 2, 4, h, 5, 1.0f, 7, tok));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "k must be <= cols");
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
                 (dt ? kb_topp_sample_f16 : kb_topp_sample_bf16)(g_cuda, 2, 4, h, 0.0f, 1.0f, 7, tok));
    CHECK_STR_CONTAINS(kb_context_last_error(g_cuda), "p must be in (0, 1]");
    CHECK(kb_fake_cuda_calls() == 0);
  }
}

int main(void) {
  setup();
  KB_RUN(test_dispatches_to_entry);
  KB_RUN(test_host_pointer_rejected);
  KB_RUN(test_validation_before_device);
  KB_RUN(test_device_error);
  KB_RUN(test_cpu_context_rejects_device_memory);
  KB_RUN(test_device_index_checks);
  KB_RUN(test_device_logits_checks);
  KB_RUN(test_empty_calls);
  KB_RUN(test_cpu_only_decoder_kernels);
  KB_RUN(test_device_lost_latches);
  KB_RUN(test_rope_ex_unsupported);
  KB_RUN(test_decode_16bit_unsupported);
  teardown();
  return kb_test_summary();
}
