/* gguf_test.c - kb_gguf: files written byte by byte here (an independent
 * little GGUF writer), every getter on a good file, kb_gguf_open on a file
 * on disk, and bad files: each corruption gives its status and a message
 * naming the problem, with nothing written through out. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_test.h"
#include "kernelbridge.h"

/* ---- the writer ---- */

struct w {
  uint8_t *p;
  size_t n, cap;
};

static void put(struct w *w, const void *src, size_t n) {
  if (w->n + n > w->cap) {
    w->cap = (w->n + n) * 2 + 64;
    w->p = (uint8_t *)realloc(w->p, w->cap);
    if (w->p == NULL) abort();
  }
  memcpy(w->p + w->n, src, n);
  w->n += n;
}

static void u8(struct w *w, unsigned v) {
  uint8_t b = (uint8_t)v;
  put(w, &b, 1);
}

static void le(struct w *w, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) u8(w, (unsigned)(v >> (8 * i)) & 0xFF);
}
static void u32(struct w *w, uint64_t v) { le(w, v, 4); }
static void u64(struct w *w, uint64_t v) { le(w, v, 8); }

static void str(struct w *w, const char *s) {
  u64(w, strlen(s));
  put(w, s, strlen(s));
}

static void f32v(struct w *w, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u32(w, u);
}

static void f64v(struct w *w, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  u64(w, u);
}

static void header(struct w *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  put(w, "GGUF", 4);
  u32(w, version);
  u64(w, n_tensors);
  u64(w, n_kv);
}

/* A key and its value type; the caller writes the value. */
static void key(struct w *w, const char *k, uint32_t type) {
  str(w, k);
  u32(w, type);
}

/* A tensor info with dims in GGUF order (ne[0] first). */
static void tensor_info(struct w *w, const char *name, int n_dims, const uint64_t *ne, uint32_t type, uint64_t offset) {
  str(w, name);
  u32(w, (uint32_t)n_dims);
  for (int i = 0; i < n_dims; i++) u64(w, ne[i]);
  u32(w, type);
  u64(w, offset);
}

static void pad(struct w *w, size_t alignment) {
  while (w->n % alignment != 0) u8(w, 0);
}

/* ---- the good file ---- */

/* Tensor data of the good file: byte i of tensor t is (t * 37 + i) & 0xFF. */
static uint8_t tbyte(int t, int64_t i) { return (uint8_t)((t * 37 + i) & 0xFF); }

static const char *const tokens[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81hello", "", "<0x0A>"};
static const float scores[] = {0.0f, -1.0f, -2.0f, -3.5f, -4.0f, -100.25f};
static const int32_t token_types[] = {2, 3, 3, 1, 1, 6};

struct tinfo {
  const char *name;
  int n_dims;
  uint64_t ne[4];
  uint32_t type;
  int64_t bytes;
};

static const struct tinfo good_tensors[] = {
    {"token_embd.weight", 2, {4, 6}, 0, 4 * 6 * 4},    /* F32 [6, 4] */
    {"blk.0.attn_q.weight", 2, {64, 3}, 8, 3 * 2 * 34}, /* Q8_0 [3, 64] */
    {"blk.0.ffn_up.weight", 2, {32, 2}, 2, 2 * 18},     /* Q4_0 [2, 32] */
    {"output_norm.weight", 1, {5}, 1, 10},             /* F16 [5] */
    {"blk.0.ffn_gate_exps.weight", 3, {8, 3, 2}, 30, 8 * 3 * 2 * 2}, /* BF16 [2, 3, 8] */
    {"blk.0.ffn_down.weight", 2, {256, 1}, 12, 144},   /* Q4_K [1, 256]: listed, not readable */
};
#define N_GOOD_TENSORS 6
#define N_GOOD_KEYS 17

/* The good file, GGUF `version`, with general.alignment = alignment (0:
 * no key, the default 32). */
static struct w good_file(uint32_t version, uint32_t alignment) {
  struct w w = {0};
  header(&w, version, N_GOOD_TENSORS, alignment ? N_GOOD_KEYS + 1 : N_GOOD_KEYS);
  key(&w, "general.architecture", 8), str(&w, "llama");
  key(&w, "llama.block_count", 4), u32(&w, 2);
  key(&w, "llama.rope.freq_base", 6), f32v(&w, 10000.0f);
  key(&w, "llama.attention.layer_norm_rms_epsilon", 12), f64v(&w, 1e-5);
  key(&w, "flag", 7), u8(&w, 1);
  key(&w, "i8", 1), u8(&w, 0xFE);          /* -2 */
  key(&w, "i16", 3), le(&w, 0x8000, 2);    /* -32768 */
  key(&w, "u16", 2), le(&w, 0xFFFF, 2);    /* 65535 */
  key(&w, "u64", 10), u64(&w, UINT64_MAX); /* does not fit int64 */
  key(&w, "i64", 11), u64(&w, (uint64_t)-5);
  key(&w, "big", 11), u64(&w, (uint64_t)1 << 40); /* outside int32 */
  key(&w, "huge", 12), f64v(&w, 1e300);           /* outside float32 */
  if (alignment) key(&w, "general.alignment", 4), u32(&w, alignment);
  key(&w, "tokenizer.ggml.tokens", 9), u32(&w, 8), u64(&w, 6);
  for (int i = 0; i < 6; i++) str(&w, tokens[i]);
  key(&w, "tokenizer.ggml.scores", 9), u32(&w, 6), u64(&w, 6);
  for (int i = 0; i < 6; i++) f32v(&w, scores[i]);
  key(&w, "tokenizer.ggml.token_type", 9), u32(&w, 5), u64(&w, 6);
  for (int i = 0; i < 6; i++) u32(&w, (uint32_t)token_types[i]);
  key(&w, "bools", 9), u32(&w, 7), u64(&w, 3), u8(&w, 1), u8(&w, 0), u8(&w, 1);
  key(&w, "empty", 9), u32(&w, 4), u64(&w, 0);
  const uint64_t align = alignment ? alignment : 32;
  uint64_t offset = 0;
  for (int t = 0; t < N_GOOD_TENSORS; t++) {
    const struct tinfo *ti = &good_tensors[t];
    tensor_info(&w, ti->name, ti->n_dims, ti->ne, ti->type, offset);
    offset = (offset + (uint64_t)ti->bytes + align - 1) / align * align;
  }
  pad(&w, align);
  size_t start = w.n;
  for (int t = 0; t < N_GOOD_TENSORS; t++) {
    while (w.n < start + 0) u8(&w, 0);
    for (int64_t i = 0; i < good_tensors[t].bytes; i++) u8(&w, tbyte(t, i));
    pad(&w, align);
  }
  return w;
}

static kb_gguf *open_w(kb_context *ctx, struct w *w) {
  kb_gguf *g = NULL;
  CHECK_OK(kb_gguf_open_memory(ctx, (int64_t)w->n, w->p, &g));
  CHECK(g != NULL);
  return g;
}

static int64_t find_key(kb_context *ctx, kb_gguf *g, const char *k) {
  int64_t i = -2;
  CHECK_OK(kb_gguf_find_key(ctx, g, k, &i));
  return i;
}

/* ---- every getter on the good file ---- */

static void check_good(kb_context *ctx, kb_gguf *g, int64_t version, int with_alignment) {
  int64_t v = 0, n = 0;
  char name[256];
  CHECK_OK(kb_gguf_version(ctx, g, &v));
  CHECK(v == version);
  CHECK_OK(kb_gguf_key_count(ctx, g, &n));
  CHECK(n == N_GOOD_KEYS + with_alignment);
  CHECK_OK(kb_gguf_key_name(ctx, g, 0, name, sizeof name));
  CHECK(strcmp(name, "general.architecture") == 0);
  CHECK(find_key(ctx, g, "general.architecture") == 0);
  CHECK(find_key(ctx, g, "llama.block_count") == 1);
  CHECK(find_key(ctx, g, "no.such.key") == -1);
  CHECK(find_key(ctx, g, "") == -1);
  CHECK(find_key(ctx, g, "general.architectur") == -1);

  /* Types and scalars. */
  int64_t i = find_key(ctx, g, "general.architecture");
  CHECK_OK(kb_gguf_key_type(ctx, g, i, &v));
  CHECK(v == KB_GGUF_TYPE_STRING);
  CHECK_OK(kb_gguf_string_bytes(ctx, g, i, &n));
  CHECK(n == 5);
  char s[8] = {0};
  CHECK_OK(kb_gguf_get_string(ctx, g, i, 5, s));
  CHECK(memcmp(s, "llama", 5) == 0);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "llama.block_count"), &v));
  CHECK(v == 2);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "flag"), &v));
  CHECK(v == 1);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "i8"), &v));
  CHECK(v == -2);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "i16"), &v));
  CHECK(v == -32768);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "u16"), &v));
  CHECK(v == 65535);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "i64"), &v));
  CHECK(v == -5);
  CHECK_OK(kb_gguf_get_int64(ctx, g, find_key(ctx, g, "big"), &v));
  CHECK(v == (int64_t)1 << 40);
  float f = 0;
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "llama.rope.freq_base"), 1, &f));
  CHECK(f == 10000.0f);
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "llama.attention.layer_norm_rms_epsilon"), 1, &f));
  CHECK(f == (float)1e-5);
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "i16"), 1, &f));
  CHECK(f == -32768.0f);
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "u64"), 1, &f));
  CHECK(f == 18446744073709551616.0f);
  int32_t i32 = 0;
  CHECK_OK(kb_gguf_get_i32(ctx, g, find_key(ctx, g, "u16"), 1, &i32));
  CHECK(i32 == 65535);

  /* Arrays: the vocabulary. */
  i = find_key(ctx, g, "tokenizer.ggml.tokens");
  CHECK_OK(kb_gguf_key_type(ctx, g, i, &v));
  CHECK(v == KB_GGUF_TYPE_ARRAY);
  CHECK_OK(kb_gguf_array_type(ctx, g, i, &v));
  CHECK(v == KB_GGUF_TYPE_STRING);
  CHECK_OK(kb_gguf_array_length(ctx, g, i, &n));
  CHECK(n == 6);
  int64_t total = 0;
  for (int t = 0; t < 6; t++) total += (int64_t)strlen(tokens[t]);
  CHECK_OK(kb_gguf_string_array_bytes(ctx, g, i, &n));
  CHECK(n == total);
  char blob[64];
  int32_t offsets[7];
  CHECK_OK(kb_gguf_get_string_array_data(ctx, g, i, total, blob));
  CHECK_OK(kb_gguf_get_string_array_offsets(ctx, g, i, 7, offsets));
  CHECK(offsets[0] == 0 && offsets[6] == total);
  for (int t = 0; t < 6; t++) {
    CHECK(offsets[t + 1] - offsets[t] == (int32_t)strlen(tokens[t]));
    CHECK(memcmp(blob + offsets[t], tokens[t], strlen(tokens[t])) == 0);
  }
  float sc[6];
  int32_t tt[6];
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "tokenizer.ggml.scores"), 6, sc));
  CHECK(memcmp(sc, scores, sizeof sc) == 0);
  CHECK_OK(kb_gguf_get_i32(ctx, g, find_key(ctx, g, "tokenizer.ggml.token_type"), 6, tt));
  CHECK(memcmp(tt, token_types, sizeof tt) == 0);
  CHECK_OK(kb_gguf_get_f32(ctx, g, find_key(ctx, g, "tokenizer.ggml.token_type"), 6, sc));
  CHECK(sc[5] == 6.0f);
  int32_t b[3];
  CHECK_OK(kb_gguf_get_i32(ctx, g, find_key(ctx, g, "bools"), 3, b));
  CHECK(b[0] == 1 && b[1] == 0 && b[2] == 1);
  i = find_key(ctx, g, "empty");
  CHECK_OK(kb_gguf_array_length(ctx, g, i, &n));
  CHECK(n == 0);
  CHECK_OK(kb_gguf_get_i32(ctx, g, i, 0, NULL));

  /* Tensors. */
  CHECK_OK(kb_gguf_tensor_count(ctx, g, &n));
  CHECK(n == N_GOOD_TENSORS);
  for (int t = 0; t < N_GOOD_TENSORS; t++) {
    const struct tinfo *ti = &good_tensors[t];
    int64_t idx = -2;
    CHECK_OK(kb_gguf_find_tensor(ctx, g, ti->name, &idx));
    CHECK(idx == t);
    CHECK_OK(kb_gguf_tensor_name(ctx, g, t, name, sizeof name));
    CHECK(strcmp(name, ti->name) == 0);
    CHECK_OK(kb_gguf_tensor_type(ctx, g, t, &v));
    CHECK(v == ti->type);
    CHECK_OK(kb_gguf_tensor_n_dims(ctx, g, t, &v));
    CHECK(v == ti->n_dims);
    for (int d = 0; d < ti->n_dims; d++) {
      CHECK_OK(kb_gguf_tensor_dim(ctx, g, t, d, &v));
      CHECK(v == (int64_t)ti->ne[ti->n_dims - 1 - d]); /* row-major: outermost first */
    }
    CHECK_OK(kb_gguf_tensor_bytes(ctx, g, t, &v));
    CHECK(v == ti->bytes);
    CHECK_OK(kb_gguf_tensor_offset(ctx, g, t, &v));
    CHECK(v % (with_alignment ? 64 : 32) == 0);
    if (ti->type == 12) continue; /* Q4_K: below */
    uint8_t *data = (uint8_t *)malloc((size_t)ti->bytes);
    CHECK_OK(kb_gguf_tensor_read(ctx, g, t, ti->bytes, data));
    int same = 1;
    for (int64_t k = 0; k < ti->bytes; k++) same &= data[k] == tbyte(t, k);
    CHECK(same);
    free(data);
  }
  int64_t idx = -2;
  CHECK_OK(kb_gguf_find_tensor(ctx, g, "blk.1.attn_q.weight", &idx));
  CHECK(idx == -1);
  /* The data read by kernels: dequantize the Q8_0 tensor's bytes (checks the
   * byte count kb_dtype_bytes expects for the shape the reader reports). */
  int64_t qbytes = 0;
  CHECK_OK(kb_dtype_bytes(KB_DTYPE_Q8_0, 3, 64, &qbytes));
  CHECK(qbytes == good_tensors[1].bytes);
}

static void test_good_file(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  for (uint32_t version = 2; version <= 3; version++)
    for (int with_alignment = 0; with_alignment <= 1; with_alignment++) {
      struct w w = good_file(version, with_alignment ? 64 : 0);
      kb_gguf *g = open_w(ctx, &w);
      /* The handle owns a copy: the caller's bytes may go at once. */
      memset(w.p, 0, w.n);
      free(w.p);
      if (g != NULL) check_good(ctx, g, version, with_alignment);
      kb_gguf_destroy(g);
    }
  kb_gguf_destroy(NULL);
  kb_context_destroy(ctx);
}

/* kb_gguf_open maps a file on disk; the same values. */
static void test_open_file(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  const char *dir = getenv("TEST_TMPDIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/good.gguf", dir ? dir : "/tmp");
  struct w w = good_file(3, 0);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f != NULL) {
    CHECK(fwrite(w.p, 1, w.n, f) == w.n);
    fclose(f);
  }
  free(w.p);
  kb_gguf *g = NULL;
  CHECK_OK(kb_gguf_open(ctx, path, &g));
  if (g != NULL) check_good(ctx, g, 3, 0);
  kb_gguf_destroy(g);
  remove(path);

  kb_gguf *sentinel = (kb_gguf *)(uintptr_t)0x5a5a5a50u;
  g = sentinel;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open(ctx, path, &g));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "cannot open");
  CHECK(g == sentinel);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open(ctx, dir ? dir : "/tmp", &g));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "not a regular file");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open(ctx, NULL, &g));
  CHECK(g == sentinel);
  kb_context_destroy(ctx);
}

/* Getter errors: wrong types, sizes and indices name the key or tensor and
 * write nothing. */
static void test_getter_errors(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  struct w w = good_file(3, 0);
  kb_gguf *g = open_w(ctx, &w);
  free(w.p);
  int64_t v = 77;
  float f[6] = {7, 7, 7, 7, 7, 7};
  int32_t i32[6] = {7, 7, 7, 7, 7, 7};
  char name[16] = "unchanged";
  const int64_t arch = find_key(ctx, g, "general.architecture");

  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, g, arch, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_gguf_get_int64: key 'general.architecture' is a STRING, not an integer");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, g, find_key(ctx, g, "llama.rope.freq_base"), &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "is a FLOAT32, not an integer");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, g, find_key(ctx, g, "u64"), &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'u64' is a UINT64 above INT64_MAX");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, g, 99, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "index 99 is not a key index (the file has 17 keys)");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, g, -1, &v));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(ctx, NULL, 0, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "g must not be NULL");
  CHECK(v == 77);

  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_f32(ctx, g, arch, 1, f));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'general.architecture' holds strings, not numbers");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_f32(ctx, g, find_key(ctx, g, "huge"), 1, f));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'huge': value 0 (1e+300) is outside the float32 range");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_get_f32(ctx, g, find_key(ctx, g, "tokenizer.ggml.scores"), 5, f));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "n is 5 but key 'tokenizer.ggml.scores' holds 6 values");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_f32(ctx, g, find_key(ctx, g, "tokenizer.ggml.tokens"), 6, f));
  CHECK(f[0] == 7);

  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_i32(ctx, g, find_key(ctx, g, "tokenizer.ggml.scores"), 6, i32));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'tokenizer.ggml.scores' holds FLOAT32 values, not integers");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_i32(ctx, g, find_key(ctx, g, "big"), 1, i32));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'big': value 0 is outside the int32 range");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_get_i32(ctx, g, find_key(ctx, g, "u16"), 2, i32));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_i32(ctx, g, find_key(ctx, g, "u16"), -1, i32));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "n must be >= 0, got -1");
  CHECK(i32[0] == 7);

  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_string_bytes(ctx, g, find_key(ctx, g, "flag"), &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'flag' is a BOOL, not a STRING");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_get_string(ctx, g, arch, 4, name));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "bytes is 4 but the string of key 'general.architecture' has 5 bytes");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_array_length(ctx, g, arch, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "is a STRING, not a ARRAY");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_string_array_bytes(ctx, g, find_key(ctx, g, "tokenizer.ggml.scores"), &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key 'tokenizer.ggml.scores' is a ARRAY of FLOAT32, not an array of strings");
  const int64_t toks = find_key(ctx, g, "tokenizer.ggml.tokens");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_get_string_array_offsets(ctx, g, toks, 6, i32));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "n_offsets is 6 but key 'tokenizer.ggml.tokens' holds 6 strings (7 offsets)");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_get_string_array_data(ctx, g, toks, 3, name));
  CHECK(strcmp(name, "unchanged") == 0);
  CHECK(i32[0] == 7);
  CHECK(v == 77);

  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_key_name(ctx, g, toks, name, sizeof name));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx),
                     "name_capacity 16 is too small for key 'tokenizer.ggml.tokens' (21 bytes + NUL)");
  CHECK(strcmp(name, "unchanged") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_find_key(ctx, g, NULL, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "key must not be NULL");

  /* Tensors. */
  CHECK_STATUS(KB_STATUS_UNSUPPORTED, kb_gguf_tensor_read(ctx, g, 5, 144, name));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx),
                     "tensor 'blk.0.ffn_down.weight' has GGML type Q4_K (12), which kernels do not take");
  CHECK_STATUS(KB_STATUS_SHAPE_MISMATCH, kb_gguf_tensor_read(ctx, g, 0, 95, name));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "bytes is 95 but tensor 'token_embd.weight' has 96 bytes");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_tensor_read(ctx, g, 0, 96, NULL));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "data must not be NULL");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_tensor_dim(ctx, g, 3, 1, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "axis 1 is not in [0, 1) for tensor 'output_norm.weight'");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_tensor_type(ctx, g, 6, &v));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "index 6 is not a tensor index (the file has 6 tensors)");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_tensor_name(ctx, g, 4, name, sizeof name));
  CHECK(strcmp(name, "unchanged") == 0);
  CHECK(v == 77);
  kb_gguf_destroy(g);

  /* A NULL context: same statuses, no message. */
  w = good_file(3, 0);
  g = NULL;
  CHECK_OK(kb_gguf_open_memory(NULL, (int64_t)w.n, w.p, &g));
  free(w.p);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_get_int64(NULL, g, 0, &v));
  CHECK_OK(kb_gguf_tensor_count(NULL, g, &v));
  CHECK(v == 6);
  kb_gguf_destroy(g);
  kb_context_destroy(ctx);
}

/* ---- bad files ---- */

/* Opens w (then frees it) expecting `status` and a message containing
 * `needle`; out must stay untouched. */
static void expect_bad(kb_context *ctx, struct w *w, kb_status status, const char *needle, int line) {
  kb_gguf *sentinel = (kb_gguf *)(uintptr_t)0x5a5a5a50u, *g = sentinel;
  kb_status got = kb_gguf_open_memory(ctx, (int64_t)w->n, w->p, &g);
  if (got != status || g != sentinel || strstr(kb_context_last_error(ctx), needle) == NULL) {
    fprintf(stderr, "gguf_test.c:%d: got %s \"%s\", expected %s \"...%s...\"\n", line, kb_status_string(got),
            kb_context_last_error(ctx), kb_status_string(status), needle);
    kb_test_failed_checks++;
  }
  if (got == KB_STATUS_OK && g != sentinel) kb_gguf_destroy(g);
  free(w->p);
  *w = (struct w){0};
}
#define BAD(status, needle) expect_bad(ctx, &w, status, needle, __LINE__)

/* A file of one F32 tensor [ne0] named "t" with the given type and offset,
 * after the standard header; no keys. */
static struct w one_tensor(int n_dims, const uint64_t *ne, uint32_t type, uint64_t offset, size_t data_bytes) {
  struct w w = {0};
  header(&w, 3, 1, 0);
  tensor_info(&w, "t", n_dims, ne, type, offset);
  pad(&w, 32);
  for (size_t i = 0; i < data_bytes; i++) u8(&w, 0);
  return w;
}

static void test_bad_files(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  struct w w = {0};

  /* Header. */
  BAD(KB_STATUS_INVALID_ARGUMENT, "kb_gguf_open_memory: not a GGUF file");
  put(&w, "GGUF", 4), u32(&w, 3);
  BAD(KB_STATUS_INVALID_ARGUMENT, "the file ends inside the tensor count");
  put(&w, "GGML", 4), u32(&w, 3), u64(&w, 0), u64(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "not a GGUF file");
  header(&w, 1, 0, 0);
  BAD(KB_STATUS_UNSUPPORTED, "GGUF version 1; versions 2 and 3 are supported (version 1 is not supported)");
  header(&w, 4, 0, 0);
  BAD(KB_STATUS_UNSUPPORTED, "GGUF version 4");
  header(&w, 0x03000000u, 0, 0);
  BAD(KB_STATUS_UNSUPPORTED, "big-endian");
  header(&w, 3, 0, (uint64_t)1 << 62);
  BAD(KB_STATUS_INVALID_ARGUMENT, "4611686018427387904 keys cannot fit in a file of 24 bytes");
  header(&w, 3, UINT64_MAX, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "18446744073709551615 tensors cannot fit");

  /* Keys. */
  header(&w, 3, 0, 1), u64(&w, 1000), put(&w, "abcdefghijklmnop", 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "a key name at byte 24 has length 1000, past the end of the file (48 bytes)");
  header(&w, 3, 0, 1), u64(&w, UINT64_MAX), put(&w, "abcdefghijklmnop", 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "has length 18446744073709551615, past the end");
  header(&w, 3, 0, 1), key(&w, "", 0), u8(&w, 0), u8(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key at byte 32 is empty");
  header(&w, 3, 0, 1), u64(&w, 3), put(&w, "a\0b", 3), u32(&w, 0), u8(&w, 0), u8(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "holds a NUL byte");
  header(&w, 3, 0, 1), key(&w, "k", 13), u64(&w, 0);
  BAD(KB_STATUS_UNSUPPORTED, "key 'k' has value type 13, which GGUF does not define");
  header(&w, 3, 0, 1), key(&w, "k", 5), u8(&w, 0), u8(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "the value of key 'k' lies past the end of the file");
  header(&w, 3, 0, 1), key(&w, "k", 7), u8(&w, 2);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'k' is a BOOL of value 2 (not 0 or 1)");
  header(&w, 3, 0, 1), key(&w, "k", 8), u64(&w, 100), put(&w, "short", 5);
  BAD(KB_STATUS_INVALID_ARGUMENT, "a string value at byte 37 has length 100, past the end");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 9), u64(&w, 1), u32(&w, 4), u64(&w, 1), u32(&w, 0);
  BAD(KB_STATUS_UNSUPPORTED, "key 'k' is an array of arrays, which this reader refuses");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 77), u64(&w, 1), u64(&w, 0);
  BAD(KB_STATUS_UNSUPPORTED, "key 'k' is an array of value type 77, which GGUF does not define");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 6), u64(&w, (uint64_t)1 << 61), f32v(&w, 1), f32v(&w, 2);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'k': an array of 2305843009213693952 FLOAT32 values lies past the end of the file");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 8), u64(&w, UINT64_MAX / 8), u64(&w, 0), u64(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'k': an array of 2305843009213693951 strings cannot fit in the 16 bytes left");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 8), u64(&w, 2), str(&w, "ab"), u64(&w, 50), put(&w, "xy", 2);
  BAD(KB_STATUS_INVALID_ARGUMENT, "a string of an array at byte");
  header(&w, 3, 0, 1), key(&w, "k", 9), u32(&w, 7), u64(&w, 2), u8(&w, 1), u8(&w, 9);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'k': BOOL element 1 is 9 (not 0 or 1)");
  header(&w, 3, 0, 2), key(&w, "dup", 4), u32(&w, 1), key(&w, "dup", 5), u32(&w, 2);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'dup' appears twice");

  /* general.alignment. */
  header(&w, 3, 0, 1), key(&w, "general.alignment", 4), u32(&w, 48);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'general.alignment' is 48, not a power of two up to 2^30");
  header(&w, 3, 0, 1), key(&w, "general.alignment", 4), u32(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "is 0, not a power of two");
  header(&w, 3, 0, 1), key(&w, "general.alignment", 6), f32v(&w, 32);
  BAD(KB_STATUS_INVALID_ARGUMENT, "key 'general.alignment' is a FLOAT32, not an unsigned integer");

  /* Tensor infos. */
  const uint64_t ne4[1] = {4}, ne5[5] = {1, 1, 1, 1, 1};
  w = one_tensor(0, ne4, 0, 0, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' has 0 dimensions (1 to 4 allowed)");
  w = one_tensor(5, ne5, 0, 0, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' has 5 dimensions");
  const uint64_t ne0[2] = {4, 0};
  w = one_tensor(2, ne0, 0, 0, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't': ne[1] is 0 (must be in [1, 2^63))");
  const uint64_t nebig[1] = {(uint64_t)1 << 63};
  w = one_tensor(1, nebig, 0, 0, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't': ne[0] is 9223372036854775808");
  const uint64_t neover[4] = {(uint64_t)1 << 32, (uint64_t)1 << 32, 1, 1};
  w = one_tensor(4, neover, 0, 0, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't': its size in bytes overflows");
  w = one_tensor(1, ne4, 99, 0, 16);
  BAD(KB_STATUS_UNSUPPORTED, "tensor 't' has GGML type 99, unknown to this reader");
  w = one_tensor(1, ne4, 4, 0, 16); /* Q4_2: removed from GGML */
  BAD(KB_STATUS_UNSUPPORTED, "has GGML type 4, unknown");
  const uint64_t ne33[1] = {33};
  w = one_tensor(1, ne33, 8, 0, 64);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' of type Q8_0: ne[0] = 33 is not a multiple of its block size 32");
  w = one_tensor(1, ne4, 0, 8, 64);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't': offset 8 is not a multiple of the alignment 32");
  w = one_tensor(1, ne4, 0, 0, 15);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' data [0, +16) lies past the end of the file");
  w = one_tensor(1, ne4, 0, (uint64_t)INT64_MAX - 31, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "lies past the end of the file");
  w = one_tensor(1, ne4, 0, UINT64_MAX - 31, 16);
  BAD(KB_STATUS_INVALID_ARGUMENT, "past the end of the file");
  w = one_tensor(1, ne4, 0, 0, 0); /* no data section at all */
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' data [0, +16) lies past the end of the file");
  header(&w, 3, 2, 0), tensor_info(&w, "t", 1, ne4, 0, 0), tensor_info(&w, "t", 1, ne4, 0, 32), pad(&w, 32);
  for (int i = 0; i < 64; i++) u8(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "tensor 't' appears twice");
  header(&w, 3, 1, 0), tensor_info(&w, "0123456789012345678901234567890123456789012345678901234567890123", 1, ne4, 0, 0);
  pad(&w, 32);
  for (int i = 0; i < 16; i++) u8(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "is 64 bytes long (at most 63)");
  header(&w, 3, 1, 0), str(&w, "t"), u32(&w, 1), u64(&w, 4);
  BAD(KB_STATUS_INVALID_ARGUMENT, "1 tensors cannot fit in a file of 45 bytes");
  header(&w, 3, 1, 0), str(&w, "a_name_long_enough_for_the_count"), u32(&w, 1), u64(&w, 4), u32(&w, 0);
  BAD(KB_STATUS_INVALID_ARGUMENT, "the file ends inside a tensor's offset (byte 80 of 80)");

  /* A file that is only a header is a valid empty file; a truncated good file is not. */
  header(&w, 2, 0, 0);
  kb_gguf *g = open_w(ctx, &w);
  int64_t n = -1;
  CHECK_OK(kb_gguf_key_count(ctx, g, &n));
  CHECK(n == 0);
  CHECK_OK(kb_gguf_find_key(ctx, g, "x", &n));
  CHECK(n == -1);
  kb_gguf_destroy(g);
  free(w.p);
  w = good_file(3, 0);
  for (size_t cut = 0; cut + 1 < w.n; cut += 7) {
    kb_gguf *sentinel = (kb_gguf *)(uintptr_t)0x5a5a5a50u;
    g = sentinel;
    kb_status s = kb_gguf_open_memory(ctx, (int64_t)cut, w.p, &g);
    CHECK(s != KB_STATUS_OK || cut >= w.n - 31); /* the last tensor's padding may be cut */
    if (s != KB_STATUS_OK) CHECK(g == sentinel);
    if (s == KB_STATUS_OK) kb_gguf_destroy(g);
  }
  free(w.p);

  /* Arguments. */
  g = NULL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open_memory(ctx, -1, "", &g));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "bytes must be >= 0, got -1");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open_memory(ctx, 4, NULL, &g));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "data must not be NULL");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open_memory(ctx, 0, NULL, NULL));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "out must not be NULL");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_gguf_open_memory(ctx, 0, NULL, &g));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "not a GGUF file");
  CHECK(g == NULL);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_good_file);
  KB_RUN(test_open_file);
  KB_RUN(test_getter_errors);
  KB_RUN(test_bad_files);
  return kb_test_summary();
}
