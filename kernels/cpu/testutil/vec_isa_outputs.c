/*
 * vec_isa_outputs - the outputs of the kernels of the vector layer through
 * the public API (every dtype), as one FNV-1a hash per kernel, for
 * vec_isa_test.sh to compare across KB_CPU_ISA levels.  Each kernel runs
 * with 1 and with 3 threads on sizes that split; the two must agree bit for
 * bit (else exit 1).  Inputs hold special values (NaN, +-inf, +-0,
 * subnormals) in some rows and none in others.
 *
 * Prints "isa LEVEL" first.  Exit status: 0 ok, 1 a failure, 2 the level
 * KB_CPU_ISA names is not supported here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"

#define N 40000
#define ROWS 64
#define COLS 625

static float xa[N], xb[N], w[COLS], bias[COLS];
static uint16_t ha[N], hb[N], hw[COLS], hbias[COLS];
static int32_t ids[ROWS], tgt[ROWS], pos[ROWS];

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static void fill(float *x, int64_t n, float scale, int specials) {
  static const uint32_t kSpecial[] = {0x7fc00000u, 0xff800001u, 0x7f800000u, 0xff800000u,
                                      0x80000000u, 0x00000003u, 0x7f7fffffu};
  for (int64_t i = 0; i < n; i++) {
    uint32_t r = next32();
    if (specials && i < n / 8 && r % 5 == 0) {
      memcpy(&x[i], &kSpecial[r % 7], 4);
    } else {
      x[i] = ((float)(r % 200001) / 100000.0f - 1.0f) * scale;
    }
  }
}

typedef int (*runner)(kb_context *ctx, void *out);

static int failures;

/* Runs f with 1 and 3 threads into out1 / out3 (bytes each) and prints one
 * hash; a difference between the thread counts is a failure. */
static void run(const char *name, kb_context *c1, kb_context *c3, size_t bytes, runner f) {
  void *o1 = calloc(1, bytes), *o3 = calloc(1, bytes);
  if (o1 == NULL || o3 == NULL) exit(1);
  int s1 = f(c1, o1), s3 = f(c3, o3);
  if (s1 != KB_STATUS_OK || s3 != KB_STATUS_OK) {
    fprintf(stderr, "%s: status %s / %s\n", name, kb_status_string((kb_status)s1), kb_status_string((kb_status)s3));
    failures++;
  } else if (memcmp(o1, o3, bytes) != 0) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  printf("%-22s %016llx\n", name, (unsigned long long)fnv(o1, bytes));
  free(o1);
  free(o3);
}

#define F32 ((float *)out)
#define H16 ((uint16_t *)out)

static int r_silu(kb_context *c, void *out) { return kb_silu(c, N, xa, F32); }
static int r_gelu(kb_context *c, void *out) { return kb_gelu(c, N, xa, F32); }
static int r_gelu_tanh(kb_context *c, void *out) { return kb_gelu_tanh(c, N, xa, F32); }
static int r_add(kb_context *c, void *out) { return kb_add(c, N, xa, xb, F32); }
static int r_mul(kb_context *c, void *out) { return kb_mul(c, N, xa, xb, F32); }
static int r_scale(kb_context *c, void *out) { return kb_scale(c, N, 0.3f, xa, F32); }
static int r_add_bias(kb_context *c, void *out) { return kb_add_bias(c, N / COLS, COLS, xa, bias, F32); }
static int r_softmax(kb_context *c, void *out) { return kb_softmax(c, ROWS, COLS, xa, F32); }
static int r_log_softmax(kb_context *c, void *out) { return kb_log_softmax(c, ROWS, COLS, xa, F32); }
static int r_rmsnorm(kb_context *c, void *out) { return kb_rmsnorm(c, ROWS, COLS, xa, w, 1e-5f, F32); }
static int r_layernorm(kb_context *c, void *out) { return kb_layernorm(c, ROWS, COLS, xa, w, bias, 1e-5f, F32); }
static int r_ce(kb_context *c, void *out) { return kb_cross_entropy(c, ROWS, COLS, xb, tgt, -100, F32, F32 + ROWS); }
static int r_ce_backward(kb_context *c, void *out) {
  return kb_cross_entropy_backward(c, ROWS, COLS, xb, tgt, -100, 0.5f, F32);
}
static int r_argmax(kb_context *c, void *out) { return kb_argmax(c, ROWS, COLS, xa, (int32_t *)out); }
static int r_rope(kb_context *c, void *out) { return kb_rope(c, ROWS, 5, 124, xb, pos, 10000.0f, F32); }
/* kb_rope_ex in place: q [2, 32, 4, 120] then k [2, 32, 1, 120] in out,
 * 96 features rotated as adjacent pairs with Llama 3 scaling; the float16
 * variant on the same shapes. */
#define ROPE_Q (ROWS * 4 * 120)
#define ROPE_K (ROWS * 120)
static int r_rope_ex(kb_context *c, void *out) {
  memcpy(F32, xb, sizeof(float) * (ROPE_Q + ROPE_K));
  return kb_rope_ex(c, 2, ROWS / 2, 4, 1, 120, 96, KB_ROPE_STYLE_ADJACENT, pos, 500000.0f, KB_ROPE_SCALING_LLAMA3, 8.0f,
                    1.0f, 4.0f, 64, F32, F32 + ROPE_Q);
}
static int r_rope_ex_f16(kb_context *c, void *out) {
  memcpy(H16, hb, sizeof(uint16_t) * (ROPE_Q + ROPE_K));
  return kb_rope_ex_f16(c, 2, ROWS / 2, 4, 1, 120, 96, KB_ROPE_STYLE_HALF, pos, 10000.0f, KB_ROPE_SCALING_LINEAR,
                        4.0f, 0.0f, 0.0f, 0, H16, H16 + ROPE_Q);
}
static int r_adamw(kb_context *c, void *out) {
  float *p = F32, *m = F32 + N, *v = F32 + 2 * N;
  memcpy(p, xb, sizeof xb);
  for (int i = 0; i < N; i++) {
    m[i] = xb[(i * 7) % N] * 0.1f;
    v[i] = xb[(i * 13) % N] * xb[(i * 13) % N] * 0.01f;
  }
  return kb_adamw_step(c, N, p, xa, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7);
}
static int r_embedding(kb_context *c, void *out) { return kb_embedding(c, ROWS, ROWS, N / ROWS, ids, xa, F32); }
static int r_sample(kb_context *c, void *out) { return kb_sample(c, ROWS, COLS, xb, 0.8f, 99, (int32_t *)out); }
static int r_topk(kb_context *c, void *out) { return kb_topk_sample(c, ROWS, COLS, xb, 40, 0.8f, 99, (int32_t *)out); }
static int r_topp(kb_context *c, void *out) { return kb_topp_sample(c, ROWS, COLS, xb, 0.9f, 0.8f, 99, (int32_t *)out); }
/* The router: ids then weights in one buffer (ROWS x MOE_K each); its 16-bit
 * logits are the finite halves of xb (hr: f16 with the exponent's top bit
 * cleared, so no NaN or inf, which the router refuses). */
#define MOE_K 8
static uint16_t hr[N];
#define MOE_RUNNER(name, fn, k, routing, x)                                                      \
  static int name(kb_context *c, void *out) {                                                   \
    return fn(c, ROWS, COLS, k, routing, x, (int32_t *)out, (float *)out + ROWS * (k));        \
  }
MOE_RUNNER(r_moe_softmax_topk, kb_moe_route, MOE_K, KB_MOE_ROUTING_SOFTMAX_TOPK, xb)
MOE_RUNNER(r_moe_softmax_topk_norm, kb_moe_route, MOE_K, KB_MOE_ROUTING_SOFTMAX_TOPK_NORM, xb)
MOE_RUNNER(r_moe_topk_softmax, kb_moe_route, 5 * MOE_K, KB_MOE_ROUTING_TOPK_SOFTMAX, xb)
MOE_RUNNER(r_moe_norm_bf16, kb_moe_route_bf16, MOE_K, KB_MOE_ROUTING_SOFTMAX_TOPK_NORM, hb)
MOE_RUNNER(r_moe_norm_f16, kb_moe_route_f16, MOE_K, KB_MOE_ROUTING_SOFTMAX_TOPK_NORM, hr)

#define HALF_RUNNERS(dt)                                                                                              \
  static int r_silu_##dt(kb_context *c, void *out) { return kb_silu_##dt(c, N, ha, H16); }                          \
  static int r_gelu_##dt(kb_context *c, void *out) { return kb_gelu_##dt(c, N, ha, H16); }                          \
  static int r_gelu_tanh_##dt(kb_context *c, void *out) { return kb_gelu_tanh_##dt(c, N, ha, H16); }                \
  static int r_add_##dt(kb_context *c, void *out) { return kb_add_##dt(c, N, ha, hb, H16); }                        \
  static int r_mul_##dt(kb_context *c, void *out) { return kb_mul_##dt(c, N, ha, hb, H16); }                        \
  static int r_scale_##dt(kb_context *c, void *out) { return kb_scale_##dt(c, N, 0.3f, ha, H16); }                  \
  static int r_add_bias_##dt(kb_context *c, void *out) { return kb_add_bias_##dt(c, N / COLS, COLS, ha, hbias, H16); } \
  static int r_softmax_##dt(kb_context *c, void *out) { return kb_softmax_##dt(c, ROWS, COLS, ha, H16); }           \
  static int r_log_softmax_##dt(kb_context *c, void *out) { return kb_log_softmax_##dt(c, ROWS, COLS, ha, H16); }   \
  static int r_rmsnorm_##dt(kb_context *c, void *out) { return kb_rmsnorm_##dt(c, ROWS, COLS, ha, hw, 1e-5f, H16); } \
  static int r_layernorm_##dt(kb_context *c, void *out) {                                                           \
    return kb_layernorm_##dt(c, ROWS, COLS, ha, hw, hbias, 1e-5f, H16);                                             \
  }
HALF_RUNNERS(bf16)
HALF_RUNNERS(f16)

int main(void) {
  kb_context *c1 = NULL, *c3 = NULL;
  kb_status st = kb_context_create(KB_BACKEND_CPU, 1, &c1);
  if (st == KB_STATUS_UNSUPPORTED) {
    printf("%s\n", kb_last_error());
    return 2;
  }
  if (st != KB_STATUS_OK || kb_context_create(KB_BACKEND_CPU, 3, &c3) != KB_STATUS_OK) {
    fprintf(stderr, "%s: %s\n", kb_status_string(st), kb_last_error());
    return 1;
  }
  printf("isa %s\n", kb_cpu_isa());
  fill(xa, N, 12.0f, 1);
  fill(xb, N, 6.0f, 0);
  fill(w, COLS, 2.0f, 0);
  fill(bias, COLS, 1.0f, 0);
  /* 16-bit patterns: the top halves of the floats (as f16 they are
   * arbitrary patterns, NaN and inf included). */
  for (int i = 0; i < N; i++) {
    uint32_t u, v;
    memcpy(&u, &xa[i], 4);
    memcpy(&v, &xb[i], 4);
    ha[i] = (uint16_t)(u >> 16);
    hb[i] = (uint16_t)(v >> 16);
  }
  for (int i = 0; i < COLS; i++) {
    uint32_t u, v;
    memcpy(&u, &w[i], 4);
    memcpy(&v, &bias[i], 4);
    hw[i] = (uint16_t)(u >> 16);
    hbias[i] = (uint16_t)(v >> 16);
  }
  for (int r = 0; r < ROWS; r++) {
    ids[r] = (r * 17) % ROWS;
    tgt[r] = r % 9 == 0 ? -100 : (r * 31) % COLS;
    pos[r] = r * r * 1000;
  }
  run("silu", c1, c3, sizeof(float) * N, r_silu);
  run("gelu", c1, c3, sizeof(float) * N, r_gelu);
  run("gelu_tanh", c1, c3, sizeof(float) * N, r_gelu_tanh);
  run("add", c1, c3, sizeof(float) * N, r_add);
  run("mul", c1, c3, sizeof(float) * N, r_mul);
  run("scale", c1, c3, sizeof(float) * N, r_scale);
  run("add_bias", c1, c3, sizeof(float) * N, r_add_bias);
  run("softmax", c1, c3, sizeof(float) * ROWS * COLS, r_softmax);
  run("log_softmax", c1, c3, sizeof(float) * ROWS * COLS, r_log_softmax);
  run("rmsnorm", c1, c3, sizeof(float) * ROWS * COLS, r_rmsnorm);
  run("layernorm", c1, c3, sizeof(float) * ROWS * COLS, r_layernorm);
  run("cross_entropy", c1, c3, sizeof(float) * (ROWS + 1), r_ce);
  run("cross_entropy_backward", c1, c3, sizeof(float) * ROWS * COLS, r_ce_backward);
  run("argmax", c1, c3, sizeof(int32_t) * ROWS, r_argmax);
  run("rope", c1, c3, sizeof(float) * ROWS * 5 * 124, r_rope);
  run("rope_ex", c1, c3, sizeof(float) * (ROPE_Q + ROPE_K), r_rope_ex);
  run("rope_ex_f16", c1, c3, sizeof(uint16_t) * (ROPE_Q + ROPE_K), r_rope_ex_f16);
  run("adamw_step", c1, c3, sizeof(float) * 3 * N, r_adamw);
  run("embedding", c1, c3, sizeof(float) * N / ROWS * ROWS, r_embedding);
  run("sample", c1, c3, sizeof(int32_t) * ROWS, r_sample);
  run("topk_sample", c1, c3, sizeof(int32_t) * ROWS, r_topk);
  run("topp_sample", c1, c3, sizeof(int32_t) * ROWS, r_topp);
  for (int i = 0; i < N; i++) hr[i] = (uint16_t)(hb[i] & 0xbfffu);
  run("moe_route_softmax_topk", c1, c3, 8 * ROWS * MOE_K, r_moe_softmax_topk);
  run("moe_route_softmax_topk_norm", c1, c3, 8 * ROWS * MOE_K, r_moe_softmax_topk_norm);
  run("moe_route_topk_softmax", c1, c3, 8 * ROWS * 5 * MOE_K, r_moe_topk_softmax);
  run("moe_route_bf16", c1, c3, 8 * ROWS * MOE_K, r_moe_norm_bf16);
  run("moe_route_f16", c1, c3, 8 * ROWS * MOE_K, r_moe_norm_f16);
#define HALF_RUNS(dt)                                                                                   \
  run("silu_" #dt, c1, c3, 2 * N, r_silu_##dt);                                                         \
  run("gelu_" #dt, c1, c3, 2 * N, r_gelu_##dt);                                                         \
  run("gelu_tanh_" #dt, c1, c3, 2 * N, r_gelu_tanh_##dt);                                               \
  run("add_" #dt, c1, c3, 2 * N, r_add_##dt);                                                           \
  run("mul_" #dt, c1, c3, 2 * N, r_mul_##dt);                                                           \
  run("scale_" #dt, c1, c3, 2 * N, r_scale_##dt);                                                       \
  run("add_bias_" #dt, c1, c3, 2 * N, r_add_bias_##dt);                                                 \
  run("softmax_" #dt, c1, c3, 2 * ROWS * COLS, r_softmax_##dt);                                         \
  run("log_softmax_" #dt, c1, c3, 2 * ROWS * COLS, r_log_softmax_##dt);                                 \
  run("rmsnorm_" #dt, c1, c3, 2 * ROWS * COLS, r_rmsnorm_##dt);                                         \
  run("layernorm_" #dt, c1, c3, 2 * ROWS * COLS, r_layernorm_##dt);
  HALF_RUNS(bf16)
  HALF_RUNS(f16)
  kb_context_destroy(c1);
  kb_context_destroy(c3);
  return failures == 0 ? 0 : 1;
}
