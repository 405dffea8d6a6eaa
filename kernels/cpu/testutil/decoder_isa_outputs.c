/*
 * decoder_isa_outputs - the outputs of the decoder kernels built on the
 * vector layer (kb_glu, kb_add_rmsnorm and their bf16 / f16 variants) and
 * on the products (kb_linear_glu_w, kb_moe_experts, every weight format),
 * and a float32 model's 16-bit KV cache (kb_kv_cache_append_to_*,
 * kb_attention_ex_kv_*) through the public API, as one FNV-1a hash per kernel, for
 * vec_isa_test.sh to compare across KB_CPU_ISA levels.  Each kernel runs with
 * 1 and 3 threads on sizes that split (rows longer than glu's tile, NaN,
 * infinities, signed zeros and subnormals among the inputs); the two must
 * agree bit for bit (else exit 1).
 *
 * Prints "isa LEVEL" first.  Exit status: 0 ok, 1 a failure, 2 the level
 * KB_CPU_ISA names is not supported here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"

#define ROWS 24
#define FFN 2100 /* glu: two full tiles of 1024 and a partial one per row */
#define COLS 3000

static float h[ROWS * 2 * FFN], xa[ROWS * COLS], res[ROWS * COLS], w[COLS];
static uint16_t hh[ROWS * 2 * FFN], hx[ROWS * COLS], hres[ROWS * COLS], hw[COLS];

static uint64_t fnv(uint64_t hash, const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) hash = (hash ^ c[i]) * 0x100000001b3ull;
  return hash;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
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
    if (specials && i < n / 8 && r % 5 == 0)
      memcpy(&x[i], &kSpecial[r % 7], 4);
    else
      x[i] = ((float)(r % 200001) / 100000.0f - 1.0f) * scale;
  }
}

static void top_halves(const float *x, uint16_t *hx_, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    hx_[i] = (uint16_t)(u >> 16);
  }
}

static int failures;

static void report(const char *name, kb_status s1, kb_status s3, const void *o1, const void *o3, size_t bytes,
                   const void *r1, const void *r3, size_t rbytes) {
  if (s1 != KB_STATUS_OK || s3 != KB_STATUS_OK) {
    fprintf(stderr, "%s: status %s / %s\n", name, kb_status_string(s1), kb_status_string(s3));
    failures++;
  } else if (memcmp(o1, o3, bytes) != 0 || (rbytes > 0 && memcmp(r1, r3, rbytes) != 0)) {
    fprintf(stderr, "%s: 1 and 3 threads differ\n", name);
    failures++;
  }
  uint64_t hash = fnv(0xcbf29ce484222325ull, o1, bytes);
  if (rbytes > 0) hash = fnv(hash, r1, rbytes);
  printf("%-22s %016llx\n", name, (unsigned long long)hash);
}

static void run_glu(kb_context *c1, kb_context *c3, int dt, kb_activation act, const char *name) {
  size_t es = dt == 0 ? 4 : 2, bytes = es * ROWS * FFN;
  void *o1 = calloc(1, bytes), *o3 = calloc(1, bytes);
  if (o1 == NULL || o3 == NULL) exit(1);
  kb_status s1, s3;
  if (dt == 0) {
    s1 = kb_glu(c1, ROWS, FFN, h, 2 * FFN, h + FFN, 2 * FFN, act, o1);
    s3 = kb_glu(c3, ROWS, FFN, h, 2 * FFN, h + FFN, 2 * FFN, act, o3);
  } else if (dt == 1) {
    s1 = kb_glu_bf16(c1, ROWS, FFN, hh, 2 * FFN, hh + FFN, 2 * FFN, act, o1);
    s3 = kb_glu_bf16(c3, ROWS, FFN, hh, 2 * FFN, hh + FFN, 2 * FFN, act, o3);
  } else {
    s1 = kb_glu_f16(c1, ROWS, FFN, hh, 2 * FFN, hh + FFN, 2 * FFN, act, o1);
    s3 = kb_glu_f16(c3, ROWS, FFN, hh, 2 * FFN, hh + FFN, 2 * FFN, act, o3);
  }
  report(name, s1, s3, o1, o3, bytes, NULL, NULL, 0);
  free(o1);
  free(o3);
}

static void run_add_rmsnorm(kb_context *c1, kb_context *c3, int dt, const char *name) {
  size_t es = dt == 0 ? 4 : 2, bytes = es * ROWS * COLS;
  void *o1 = calloc(1, bytes), *o3 = calloc(1, bytes), *r1 = malloc(bytes), *r3 = malloc(bytes);
  if (o1 == NULL || o3 == NULL || r1 == NULL || r3 == NULL) exit(1);
  memcpy(r1, dt == 0 ? (void *)res : (void *)hres, bytes);
  memcpy(r3, r1, bytes);
  kb_status s1, s3;
  if (dt == 0) {
    s1 = kb_add_rmsnorm(c1, ROWS, COLS, xa, r1, w, 1e-5f, o1);
    s3 = kb_add_rmsnorm(c3, ROWS, COLS, xa, r3, w, 1e-5f, o3);
  } else if (dt == 1) {
    s1 = kb_add_rmsnorm_bf16(c1, ROWS, COLS, hx, r1, hw, 1e-5f, o1);
    s3 = kb_add_rmsnorm_bf16(c3, ROWS, COLS, hx, r3, hw, 1e-5f, o3);
  } else {
    s1 = kb_add_rmsnorm_f16(c1, ROWS, COLS, hx, r1, hw, 1e-5f, o1);
    s3 = kb_add_rmsnorm_f16(c3, ROWS, COLS, hx, r3, hw, 1e-5f, o3);
  }
  report(name, s1, s3, o1, o3, bytes, r1, r3, bytes);
  free(o1);
  free(o3);
  free(r1);
  free(r3);
}

/* kb_linear_glu_w and kb_moe_experts with weights of type: 40 rows (over the
 * small-m limit) and 3 rows of the fused pair, 20 tokens over 4 experts. */
enum { E_HID = 64, E_FFN = 96, E_EXP = 4, E_TOK = 20, E_K = 2 };

static void *stored_w(kb_dtype type, int64_t rows, int64_t cols, const float *src, int64_t *bytes) {
  if (kb_dtype_bytes(type, rows, cols, bytes) != KB_STATUS_OK) exit(1);
  void *p = malloc((size_t)*bytes);
  if (p == NULL || kb_quantize(NULL, type, rows, cols, src, p, *bytes) != KB_STATUS_OK) exit(1);
  return p;
}

static void run_ffn(kb_context *c1, kb_context *c3, kb_dtype type, const char *label) {
  int64_t gb, db;
  /* Weights from res and x from w: finite values (a product's NaN
   * payloads are not part of the contract). */
  void *g = stored_w(type, E_EXP * E_FFN, E_HID, res, &gb), *u = stored_w(type, E_EXP * E_FFN, E_HID, res + 7, &gb);
  void *d = stored_w(type, E_EXP * E_HID, E_FFN, res + 13, &db);
  char name[64];
  static const int64_t kRows[] = {3, 40};
  for (int r = 0; r < 2; r++) {
    size_t bytes = sizeof(float) * (size_t)(kRows[r] * E_FFN);
    float *o1 = calloc(1, bytes), *o3 = calloc(1, bytes);
    if (o1 == NULL || o3 == NULL) exit(1);
    kb_status s1 = kb_linear_glu_w(c1, kRows[r], E_HID, E_FFN, w, type, g, gb / E_EXP, u, gb / E_EXP,
                                   KB_ACTIVATION_SILU, o1);
    kb_status s3 = kb_linear_glu_w(c3, kRows[r], E_HID, E_FFN, w, type, g, gb / E_EXP, u, gb / E_EXP,
                                   KB_ACTIVATION_SILU, o3);
    snprintf(name, sizeof name, "linear_glu_w_%s_%lld", label, (long long)kRows[r]);
    report(name, s1, s3, o1, o3, bytes, NULL, NULL, 0);
    free(o1);
    free(o3);
  }
  int32_t ids[E_TOK * E_K];
  float wt[E_TOK * E_K];
  for (int t = 0; t < E_TOK * E_K; t++) {
    ids[t] = (int32_t)(next32() % E_EXP);
    wt[t] = (float)(next32() % 1000) / 1000.0f;
  }
  size_t bytes = sizeof(float) * E_TOK * E_HID;
  float *o1 = calloc(1, bytes), *o3 = calloc(1, bytes);
  if (o1 == NULL || o3 == NULL) exit(1);
  kb_status s1 = kb_moe_experts(c1, E_TOK, E_HID, E_FFN, E_EXP, E_K, w, ids, wt, type, g, gb, u, gb, d, db,
                                KB_ACTIVATION_GELU, o1);
  kb_status s3 = kb_moe_experts(c3, E_TOK, E_HID, E_FFN, E_EXP, E_K, w, ids, wt, type, g, gb, u, gb, d, db,
                                KB_ACTIVATION_GELU, o3);
  snprintf(name, sizeof name, "moe_experts_%s", label);
  report(name, s1, s3, o1, o3, bytes, NULL, NULL, 0);
  free(o1);
  free(o3);
  free(g);
  free(u);
  free(d);
}

/* A float32 model over a 16-bit cache: kb_kv_cache_append_to_<t> of rows
 * with special values, then kb_attention_ex_kv_<t> over a cache of finite
 * values in decode (one query, 8 heads over 2 kv heads, 1100 keys: three
 * chunks, K and V read as stored; three queries: 12 rows per kv head, V
 * read by pv in three passes) and in prefill (8 queries: 32 rows per kv
 * head, widened into scratch). */
enum { C_KVH = 2, C_H = 8, C_D = 32, C_CAP = 1100, C_SQ = 8 }; /* the cache: 70400 floats of res */

static void run_half_cache(kb_context *c1, kb_context *c3, int f16) {
  const char *dt = f16 ? "f16" : "bf16";
  char name[64];
  int64_t cache_n = (int64_t)C_KVH * C_CAP * C_D, new_n = (int64_t)C_SQ * C_KVH * C_D;
  size_t cbytes = 2 * (size_t)cache_n;
  uint16_t *k1 = calloc(1, cbytes), *v1 = calloc(1, cbytes), *k3 = calloc(1, cbytes), *v3 = calloc(1, cbytes);
  if (k1 == NULL || v1 == NULL || k3 == NULL || v3 == NULL) exit(1);
  kb_status (*append)(kb_context *, int64_t, int64_t, int64_t, int64_t, int64_t, bool, const float *, const float *,
                      const int32_t *, uint16_t *, uint16_t *) =
      f16 ? kb_kv_cache_append_to_f16 : kb_kv_cache_append_to_bf16;
  /* Rows of xa (special values among them) at position 3. */
  int32_t pos = 3;
  kb_status s1 = append(c1, 1, C_KVH, C_SQ, C_CAP, C_D, false, xa, xa + new_n, &pos, k1, v1);
  kb_status s3 = append(c3, 1, C_KVH, C_SQ, C_CAP, C_D, false, xa, xa + new_n, &pos, k3, v3);
  snprintf(name, sizeof name, "kv_cache_append_to_%s", dt);
  report(name, s1, s3, k1, k3, cbytes, v1, v3, cbytes);
  /* The whole cache from res (finite) for attention. */
  pos = 0;
  if (append(c1, 1, C_KVH, C_CAP, C_CAP, C_D, true, res, res + 7, &pos, k1, v1) != KB_STATUS_OK) exit(1);
  kb_status (*attend)(kb_context *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, const float *,
                      const uint16_t *, const uint16_t *, const int32_t *, int64_t, int64_t, int64_t, const float *,
                      bool, bool, float, float *) = f16 ? kb_attention_ex_kv_f16 : kb_attention_ex_kv_bf16;
  /* 4, 8, 12 and 32 query rows per kv head: the small-m product on K up
   * to a level's dot_rows (4 or 8), the microkernel on packed K above. */
  static const int64_t kSeqQ[] = {1, 2, 3, C_SQ};
  for (int i = 0; i < 4; i++) {
    size_t obytes = sizeof(float) * (size_t)(kSeqQ[i] * C_H * C_D);
    float *o1 = calloc(1, obytes), *o3 = calloc(1, obytes);
    if (o1 == NULL || o3 == NULL) exit(1);
    int32_t len = C_CAP - 37;
    s1 = attend(c1, 1, C_H, C_KVH, kSeqQ[i], C_CAP, C_D, true, w, k1, v1, &len, 0, 0, 0, NULL, true, true, 0.0f, o1);
    s3 = attend(c3, 1, C_H, C_KVH, kSeqQ[i], C_CAP, C_D, true, w, k1, v1, &len, 0, 0, 0, NULL, true, true, 0.0f, o3);
    snprintf(name, sizeof name, "attention_ex_kv_%s_%lld", dt, (long long)kSeqQ[i]);
    report(name, s1, s3, o1, o3, obytes, NULL, NULL, 0);
    free(o1);
    free(o3);
  }
  free(k1);
  free(v1);
  free(k3);
  free(v3);
}

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
  fill(h, ROWS * 2 * FFN, 10.0f, 1);
  fill(xa, ROWS * COLS, 3.0f, 1);
  fill(res, ROWS * COLS, 20.0f, 0);
  fill(w, COLS, 2.0f, 0);
  top_halves(h, hh, ROWS * 2 * FFN);
  top_halves(xa, hx, ROWS * COLS);
  top_halves(res, hres, ROWS * COLS);
  top_halves(w, hw, COLS);
  static const char *const kDt[] = {"", "_bf16", "_f16"};
  static const struct {
    kb_activation act;
    const char *name;
  } kActs[] = {{KB_ACTIVATION_NONE, "none"},
               {KB_ACTIVATION_RELU, "relu"},
               {KB_ACTIVATION_GELU, "gelu"},
               {KB_ACTIVATION_GELU_TANH, "gelu_tanh"},
               {KB_ACTIVATION_SILU, "silu"}};
  char name[64];
  for (int dt = 0; dt < 3; dt++) {
    for (int a = 0; a < 5; a++) {
      snprintf(name, sizeof name, "glu%s_%s", kDt[dt], kActs[a].name);
      run_glu(c1, c3, dt, kActs[a].act, name);
    }
    snprintf(name, sizeof name, "add_rmsnorm%s", kDt[dt]);
    run_add_rmsnorm(c1, c3, dt, name);
  }
  static const struct {
    kb_dtype type;
    const char *name;
  } kTypes[] = {{KB_DTYPE_F32, "f32"}, {KB_DTYPE_F16, "f16"}, {KB_DTYPE_BF16, "bf16"}, {KB_DTYPE_Q8_0, "q8_0"},
                {KB_DTYPE_Q4_0, "q4_0"}};
  for (int t = 0; t < 5; t++) run_ffn(c1, c3, kTypes[t].type, kTypes[t].name);
  for (int f16 = 0; f16 < 2; f16++) run_half_cache(c1, c3, f16);
  kb_context_destroy(c1);
  kb_context_destroy(c3);
  return failures == 0 ? 0 : 1;
}
