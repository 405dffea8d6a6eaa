/* Fuzz target: the GGUF reader.  An input is a GGUF file.  It is opened with
 * kb_gguf_open_memory; a failure must come with a message naming the
 * function and leave the output handle alone.  A file that opens is walked
 * through every getter, and what they say must agree with itself and with
 * the file's size: every key and tensor name is found again under its
 * index, every value of a key of each type converts (or fails with a
 * message), string-array offsets add up to the blob's size, every tensor's
 * data lies inside the file and every tensor of a kernel type is read
 * (into a heap block of exactly its size, so AddressSanitizer sees any
 * overrun). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

static const char *op_name = "";

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void fail(const char *fmt, ...) {
  fprintf(stderr, "\nFUZZ CHECK FAILED in %s: ", op_name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  abort();
}

/* A call's status: OK, or a failure whose message starts with its name. */
static bool ok(kb_context *ctx, const char *fn, kb_status st) {
  op_name = fn;
  if (st == KB_STATUS_OK) {
    if (kb_context_last_error(ctx)[0] != '\0') fail("success with the message \"%s\"", kb_context_last_error(ctx));
    return true;
  }
  const char *msg = kb_context_last_error(ctx);
  size_t n = strlen(fn);
  if (strncmp(msg, fn, n) != 0 || msg[n] != ':') fail("status %s with the message \"%s\"", kb_status_string(st), msg);
  return false;
}

#define MUST(call, fn)                                                \
  do {                                                                \
    if (!ok(ctx, fn, call)) fail("failed: %s", kb_context_last_error(ctx)); \
  } while (0)

/* One block of exactly n bytes (at least 1, so malloc never returns NULL for 0). */
static void *block(int64_t n) {
  void *p = malloc(n > 0 ? (size_t)n : 1);
  if (p == NULL) abort();
  return p;
}

static void walk_key(kb_context *ctx, const kb_gguf *g, int64_t i, int64_t file_size) {
  static char name[65536 + 1];
  int64_t v = 0, type = -1, again = -2;
  MUST(kb_gguf_key_name(ctx, g, i, name, (int64_t)sizeof name), "kb_gguf_key_name");
  MUST(kb_gguf_find_key(ctx, g, name, &again), "kb_gguf_find_key");
  if (again != i) fail("key '%s' (index %lld) is found at %lld", name, (long long)i, (long long)again);
  MUST(kb_gguf_key_type(ctx, g, i, &type), "kb_gguf_key_type");
  if (type < 0 || type > 12) fail("key '%s' has type %lld", name, (long long)type);
  int64_t count = 1, elem = type;
  if (type == KB_GGUF_TYPE_ARRAY) {
    MUST(kb_gguf_array_type(ctx, g, i, &elem), "kb_gguf_array_type");
    MUST(kb_gguf_array_length(ctx, g, i, &count), "kb_gguf_array_length");
    if (elem < 0 || elem > 12 || elem == KB_GGUF_TYPE_ARRAY || count < 0 || count > file_size)
      fail("key '%s': array of %lld elements of type %lld", name, (long long)count, (long long)elem);
  } else {
    ok(ctx, "kb_gguf_array_length", kb_gguf_array_length(ctx, g, i, &v));
  }
  bool is_int = type != KB_GGUF_TYPE_ARRAY && type != KB_GGUF_TYPE_STRING && type != KB_GGUF_TYPE_FLOAT32 &&
                type != KB_GGUF_TYPE_FLOAT64;
  bool got = ok(ctx, "kb_gguf_get_int64", kb_gguf_get_int64(ctx, g, i, &v));
  if (is_int && type != KB_GGUF_TYPE_UINT64 && !got) fail("key '%s': an integer that get_int64 refuses", name);
  if (!is_int && got) fail("key '%s' of type %lld read as an integer", name, (long long)type);
  if (elem == KB_GGUF_TYPE_STRING) {
    int64_t bytes = -1;
    if (type == KB_GGUF_TYPE_STRING) {
      MUST(kb_gguf_string_bytes(ctx, g, i, &bytes), "kb_gguf_string_bytes");
      if (bytes < 0 || bytes > file_size) fail("key '%s': a string of %lld bytes", name, (long long)bytes);
      void *s = block(bytes);
      MUST(kb_gguf_get_string(ctx, g, i, bytes, s), "kb_gguf_get_string");
      free(s);
    } else {
      MUST(kb_gguf_string_array_bytes(ctx, g, i, &bytes), "kb_gguf_string_array_bytes");
      if (bytes < 0 || bytes > file_size) fail("key '%s': strings of %lld bytes", name, (long long)bytes);
      void *blob = block(bytes);
      int32_t *offsets = (int32_t *)block((count + 1) * 4);
      MUST(kb_gguf_get_string_array_data(ctx, g, i, bytes, blob), "kb_gguf_get_string_array_data");
      if (ok(ctx, "kb_gguf_get_string_array_offsets", kb_gguf_get_string_array_offsets(ctx, g, i, count + 1, offsets))) {
        if (offsets[0] != 0 || offsets[count] != bytes) fail("key '%s': offsets do not span the blob", name);
        for (int64_t k = 0; k < count; k++)
          if (offsets[k + 1] < offsets[k]) fail("key '%s': offsets decrease at %lld", name, (long long)k);
      }
      free(blob);
      free(offsets);
    }
    float f;
    if (ok(ctx, "kb_gguf_get_f32", kb_gguf_get_f32(ctx, g, i, count, &f))) fail("key '%s': strings read as numbers", name);
    return;
  }
  /* Numbers: float32 always converts unless a float64 is out of range; int32
   * unless a value is a float or out of range. */
  float *f = (float *)block(count * 4);
  int32_t *n32 = (int32_t *)block(count * 4);
  bool f_ok = ok(ctx, "kb_gguf_get_f32", kb_gguf_get_f32(ctx, g, i, count, f));
  if (!f_ok && elem != KB_GGUF_TYPE_FLOAT64) fail("key '%s': numbers of type %lld refused as float32", name, (long long)elem);
  bool i_ok = ok(ctx, "kb_gguf_get_i32", kb_gguf_get_i32(ctx, g, i, count, n32));
  if (i_ok && (elem == KB_GGUF_TYPE_FLOAT32 || elem == KB_GGUF_TYPE_FLOAT64)) fail("key '%s': floats read as int32", name);
  if (i_ok && f_ok)
    for (int64_t k = 0; k < count; k++)
      if (f[k] != (float)n32[k]) fail("key '%s': element %lld is %d and %g", name, (long long)k, (int)n32[k], f[k]);
  /* A wrong count is a shape mismatch, whatever the values. */
  if (kb_gguf_get_f32(ctx, g, i, count + 1, f) != KB_STATUS_SHAPE_MISMATCH) fail("key '%s': count + 1 accepted", name);
  free(f);
  free(n32);
}

static bool kernel_type(int64_t t) { return t == 0 || t == 1 || t == 2 || t == 8 || t == 30; }

static void walk_tensor(kb_context *ctx, const kb_gguf *g, int64_t i, int64_t file_size) {
  char name[64];
  int64_t again = -2, type = -1, n_dims = 0, bytes = -1, offset = -1, elems = 1;
  MUST(kb_gguf_tensor_name(ctx, g, i, name, (int64_t)sizeof name), "kb_gguf_tensor_name");
  MUST(kb_gguf_find_tensor(ctx, g, name, &again), "kb_gguf_find_tensor");
  if (again != i) fail("tensor '%s' (index %lld) is found at %lld", name, (long long)i, (long long)again);
  MUST(kb_gguf_tensor_type(ctx, g, i, &type), "kb_gguf_tensor_type");
  MUST(kb_gguf_tensor_n_dims(ctx, g, i, &n_dims), "kb_gguf_tensor_n_dims");
  if (n_dims < 1 || n_dims > 4) fail("tensor '%s' has %lld dimensions", name, (long long)n_dims);
  for (int64_t d = 0; d < n_dims; d++) {
    int64_t size = 0;
    MUST(kb_gguf_tensor_dim(ctx, g, i, d, &size), "kb_gguf_tensor_dim");
    if (size < 1) fail("tensor '%s': axis %lld has size %lld", name, (long long)d, (long long)size);
    elems = size > INT64_MAX / elems ? INT64_MAX : elems * size;
  }
  if (ok(ctx, "kb_gguf_tensor_dim", kb_gguf_tensor_dim(ctx, g, i, n_dims, &again))) fail("axis n_dims accepted");
  MUST(kb_gguf_tensor_bytes(ctx, g, i, &bytes), "kb_gguf_tensor_bytes");
  MUST(kb_gguf_tensor_offset(ctx, g, i, &offset), "kb_gguf_tensor_offset");
  if (bytes < 0 || offset < 0 || offset > file_size || bytes > file_size - offset)
    fail("tensor '%s': data [%lld, +%lld) outside a file of %lld bytes", name, (long long)offset, (long long)bytes,
         (long long)file_size);
  if (type == 0 && bytes != elems * 4) fail("tensor '%s': F32 of %lld elements in %lld bytes", name, (long long)elems,
                                            (long long)bytes);
  void *data = block(bytes);
  bool read = ok(ctx, "kb_gguf_tensor_read", kb_gguf_tensor_read(ctx, g, i, bytes, data));
  if (read != kernel_type(type)) fail("tensor '%s' of type %lld: read %s", name, (long long)type, read ? "works" : "fails");
  free(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kb_context *ctx = NULL;
  if (kb_context_create(KB_BACKEND_CPU, 1, &ctx) != KB_STATUS_OK) abort();
  kb_gguf *sentinel = (kb_gguf *)(uintptr_t)0x5a5a5a50u, *g = sentinel;
  if (!ok(ctx, "kb_gguf_open_memory", kb_gguf_open_memory(ctx, (int64_t)size, data, &g))) {
    if (g != sentinel) fail("a failed open wrote the handle");
    kb_context_destroy(ctx);
    return 0;
  }
  int64_t version = 0, n_kv = -1, n_tensors = -1;
  MUST(kb_gguf_version(ctx, g, &version), "kb_gguf_version");
  if (version != 2 && version != 3) fail("version %lld", (long long)version);
  MUST(kb_gguf_key_count(ctx, g, &n_kv), "kb_gguf_key_count");
  MUST(kb_gguf_tensor_count(ctx, g, &n_tensors), "kb_gguf_tensor_count");
  if (n_kv < 0 || n_tensors < 0 || n_kv > (int64_t)size || n_tensors > (int64_t)size) fail("counts %lld, %lld", (long long)n_kv, (long long)n_tensors);
  for (int64_t i = 0; i < n_kv; i++) walk_key(ctx, g, i, (int64_t)size);
  for (int64_t i = 0; i < n_tensors; i++) walk_tensor(ctx, g, i, (int64_t)size);
  int64_t v = 0;
  if (ok(ctx, "kb_gguf_key_type", kb_gguf_key_type(ctx, g, n_kv, &v))) fail("key index n_kv accepted");
  if (ok(ctx, "kb_gguf_tensor_type", kb_gguf_tensor_type(ctx, g, -1, &v))) fail("tensor index -1 accepted");
  kb_gguf_destroy(g);
  kb_context_destroy(ctx);
  return 0;
}
