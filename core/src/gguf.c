/* gguf.c - kb_gguf: opening a GGUF file (mapped, or copied from memory) and
 * the getters of its metadata and tensors.  The parser (gguf_parse.c)
 * validated every offset these getters follow. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define KB_GGUF_MMAP 0
#else
#define KB_GGUF_MMAP 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "gguf.h"

/* Parses g (data set) and hands it to *out, or frees it. */
static kb_status finish_open(kb_context *ctx, const char *fn, kb_gguf *g, kb_gguf **out) {
  kb_status s = kb__gguf_parse(ctx, fn, g);
  if (s != KB_STATUS_OK) {
    kb_gguf_destroy(g);
    return s;
  }
  *out = g;
  return KB_STATUS_OK;
}

kb_status kb_gguf_open_memory(kb_context *ctx, int64_t bytes, const void *data, kb_gguf **out) {
  static const char fn[] = "kb_gguf_open_memory";
  KB_BEGIN(ctx, fn);
  if (out == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  KB_TRY(kb__check_ptr(ctx, fn, "data", data, bytes));
  if ((uint64_t)bytes > (uint64_t)SIZE_MAX)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "bytes %lld does not fit in size_t", (long long)bytes);
  kb_gguf *g = (kb_gguf *)calloc(1, sizeof *g);
  void *copy = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (g == NULL || copy == NULL) {
    free(g);
    free(copy);
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "out of memory copying %lld bytes", (long long)bytes);
  }
  if (bytes > 0) memcpy(copy, data, (size_t)bytes);
  g->owned = copy;
  g->data = (const uint8_t *)copy;
  g->size = bytes;
  return finish_open(ctx, fn, g, out);
}

/* Reads the whole of f (size bytes) into g->owned: where mapping fails. */
static kb_status read_whole(kb_context *ctx, const char *fn, const char *path, FILE *f, int64_t size, kb_gguf *g) {
  if ((uint64_t)size > (uint64_t)SIZE_MAX)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "'%s' (%lld bytes) does not fit in memory", path, (long long)size);
  g->owned = malloc(size > 0 ? (size_t)size : 1);
  if (g->owned == NULL)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "out of memory reading '%s' (%lld bytes)", path, (long long)size);
  if (size > 0 && fread(g->owned, 1, (size_t)size, f) != (size_t)size)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cannot read '%s'", path);
  g->data = (const uint8_t *)g->owned;
  g->size = size;
  return KB_STATUS_OK;
}

#if KB_GGUF_MMAP
/* Maps the file read-only; falls back to reading it (a pipe, a file system
 * without mmap). */
static kb_status load_file(kb_context *ctx, const char *fn, const char *path, kb_gguf *g) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "'%s' is not a regular file", path);
  }
  int64_t size = (int64_t)st.st_size;
  if (size > 0 && (uint64_t)size <= (uint64_t)SIZE_MAX) {
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      close(fd);
      g->map = m;
      g->map_size = (size_t)size;
      g->data = (const uint8_t *)m;
      g->size = size;
      return KB_STATUS_OK;
    }
  }
  FILE *f = fdopen(fd, "rb");
  if (f == NULL) {
    close(fd);
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "cannot read '%s'", path);
  }
  kb_status s = read_whole(ctx, fn, path, f, size, g);
  fclose(f);
  return s;
}
#else
static kb_status load_file(kb_context *ctx, const char *fn, const char *path, kb_gguf *g) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cannot open '%s': %s", path, strerror(errno));
  int64_t size = -1;
  if (_fseeki64(f, 0, SEEK_END) == 0) size = _ftelli64(f);
  if (size < 0 || _fseeki64(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "cannot find the size of '%s'", path);
  }
  kb_status s = read_whole(ctx, fn, path, f, size, g);
  fclose(f);
  return s;
}
#endif

kb_status kb_gguf_open(kb_context *ctx, const char *path, kb_gguf **out) {
  static const char fn[] = "kb_gguf_open";
  KB_BEGIN(ctx, fn);
  if (out == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  if (path == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "path must not be NULL");
  kb_gguf *g = (kb_gguf *)calloc(1, sizeof *g);
  if (g == NULL) return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "out of memory for the handle");
  kb_status s = load_file(ctx, fn, path, g);
  if (s != KB_STATUS_OK) {
    kb_gguf_destroy(g);
    return s;
  }
  return finish_open(ctx, fn, g, out);
}

void kb_gguf_destroy(kb_gguf *g) {
  if (g == NULL) return;
  kb__gguf_free_parsed(g);
#if KB_GGUF_MMAP
  if (g->map != NULL) munmap(g->map, g->map_size);
#endif
  free(g->owned);
  free(g);
}

/* ---- getters ---- */

static int shown(int64_t len) { return len > 64 ? 64 : (int)len; }

static uint64_t load_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static kb_status check_g(kb_context *ctx, const char *fn, const kb_gguf *g) {
  if (g == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "g must not be NULL");
  return KB_STATUS_OK;
}

/* Key `index` of g, after checking both. */
static kb_status get_kv(kb_context *ctx, const char *fn, const kb_gguf *g, int64_t index, const struct kb_gguf_kv **kv) {
  KB_TRY(check_g(ctx, fn, g));
  if (index < 0 || index >= g->n_kv)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "index %lld is not a key index (the file has %lld keys)",
                    (long long)index, (long long)g->n_kv);
  *kv = &g->kv[index];
  return KB_STATUS_OK;
}

static kb_status get_tensor(kb_context *ctx, const char *fn, const kb_gguf *g, int64_t index,
                            const struct kb_gguf_tensor **t) {
  KB_TRY(check_g(ctx, fn, g));
  if (index < 0 || index >= g->n_tensors)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "index %lld is not a tensor index (the file has %lld tensors)",
                    (long long)index, (long long)g->n_tensors);
  *t = &g->tensors[index];
  return KB_STATUS_OK;
}

/* Fails naming the key unless kv holds type `want`. */
static kb_status want_type(kb_context *ctx, const char *fn, const struct kb_gguf_kv *kv, uint32_t want) {
  if (kv->type == want) return KB_STATUS_OK;
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' is a %s, not a %s", shown(kv->key_len),
                  (const char *)kv->key, kb__gguf_type_name(kv->type), kb__gguf_type_name(want));
}

static kb_status want_string_array(kb_context *ctx, const char *fn, const struct kb_gguf_kv *kv) {
  if (kv->type == KB_GGUF_TYPE_ARRAY && kv->elem_type == KB_GGUF_TYPE_STRING) return KB_STATUS_OK;
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' is a %s%s%s, not an array of strings",
                  shown(kv->key_len), (const char *)kv->key, kb__gguf_type_name(kv->type),
                  kv->type == KB_GGUF_TYPE_ARRAY ? " of " : "",
                  kv->type == KB_GGUF_TYPE_ARRAY ? kb__gguf_type_name(kv->elem_type) : "");
}

/* Copies a name of len bytes and its NUL into name[capacity]. */
static kb_status put_name(kb_context *ctx, const char *fn, const char *what, const uint8_t *s, int64_t len, char *name,
                          int64_t capacity) {
  KB_TRY(kb__check_dim(ctx, fn, "name_capacity", capacity));
  if (capacity <= len)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "name_capacity %lld is too small for %s '%.*s' (%lld bytes + NUL)",
                    (long long)capacity, what, shown(len), (const char *)s, (long long)len);
  if (name == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "name must not be NULL");
  memcpy(name, s, (size_t)len);
  name[len] = '\0';
  return KB_STATUS_OK;
}

/* A name passed by the caller as a C string. */
static kb_status check_cstring(kb_context *ctx, const char *fn, const char *what, const char *s) {
  if (s == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s must not be NULL", what);
  return KB_STATUS_OK;
}

#define OUT_CHECK(name)                                                                         \
  do {                                                                                          \
    if ((name) == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, #name " must not be NULL"); \
  } while (0)

kb_status kb_gguf_version(kb_context *ctx, const kb_gguf *g, int64_t *version) {
  static const char fn[] = "kb_gguf_version";
  KB_BEGIN(ctx, fn);
  KB_TRY(check_g(ctx, fn, g));
  OUT_CHECK(version);
  *version = g->version;
  return KB_STATUS_OK;
}

kb_status kb_gguf_key_count(kb_context *ctx, const kb_gguf *g, int64_t *count) {
  static const char fn[] = "kb_gguf_key_count";
  KB_BEGIN(ctx, fn);
  KB_TRY(check_g(ctx, fn, g));
  OUT_CHECK(count);
  *count = g->n_kv;
  return KB_STATUS_OK;
}

kb_status kb_gguf_find_key(kb_context *ctx, const kb_gguf *g, const char *key, int64_t *index) {
  static const char fn[] = "kb_gguf_find_key";
  KB_BEGIN(ctx, fn);
  KB_TRY(check_g(ctx, fn, g));
  KB_TRY(check_cstring(ctx, fn, "key", key));
  OUT_CHECK(index);
  *index = kb__gguf_lookup(g->kv_sorted, g->n_kv, (const uint8_t *)key, (int64_t)strlen(key));
  return KB_STATUS_OK;
}

kb_status kb_gguf_key_name(kb_context *ctx, const kb_gguf *g, int64_t index, char *name, int64_t name_capacity) {
  static const char fn[] = "kb_gguf_key_name";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  return put_name(ctx, fn, "key", kv->key, kv->key_len, name, name_capacity);
}

kb_status kb_gguf_key_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type) {
  static const char fn[] = "kb_gguf_key_type";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  OUT_CHECK(type);
  *type = kv->type;
  return KB_STATUS_OK;
}

/* Integer value of a UINT8..INT64 or BOOL element at p: 0 on success, 1 for
 * a type that is not an integer, 2 for a UINT64 above INT64_MAX. */
static int int_value(uint32_t type, const uint8_t *p, int64_t *v) {
  switch (type) {
    case KB_GGUF_TYPE_UINT8:
    case KB_GGUF_TYPE_BOOL:
      *v = p[0];
      return 0;
    case KB_GGUF_TYPE_INT8:
      *v = (int8_t)p[0];
      return 0;
    case KB_GGUF_TYPE_UINT16:
      *v = (int64_t)load_le(p, 2);
      return 0;
    case KB_GGUF_TYPE_INT16:
      *v = (int16_t)(uint16_t)load_le(p, 2);
      return 0;
    case KB_GGUF_TYPE_UINT32:
      *v = (int64_t)load_le(p, 4);
      return 0;
    case KB_GGUF_TYPE_INT32:
      *v = (int32_t)(uint32_t)load_le(p, 4);
      return 0;
    case KB_GGUF_TYPE_UINT64: {
      uint64_t u = load_le(p, 8);
      if (u > (uint64_t)INT64_MAX) return 2;
      *v = (int64_t)u;
      return 0;
    }
    case KB_GGUF_TYPE_INT64: {
      uint64_t u = load_le(p, 8);
      /* Two's complement without implementation-defined conversion. */
      *v = u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
      return 0;
    }
    default:
      return 1;
  }
}

kb_status kb_gguf_get_int64(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *value) {
  static const char fn[] = "kb_gguf_get_int64";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  OUT_CHECK(value);
  int64_t v = 0;
  int r = int_value(kv->type, g->data + kv->value, &v);
  if (r == 1)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' is a %s, not an integer", shown(kv->key_len),
                    (const char *)kv->key, kb__gguf_type_name(kv->type));
  if (r == 2)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' is a UINT64 above INT64_MAX", shown(kv->key_len),
                    (const char *)kv->key);
  *value = v;
  return KB_STATUS_OK;
}

/* The numbers of kv: their type, count and first byte; fails for strings
 * and arrays of strings, and unless n is their count. */
static kb_status numbers(kb_context *ctx, const char *fn, const kb_gguf *g, const struct kb_gguf_kv *kv, int64_t n,
                         uint32_t *type, const uint8_t **p) {
  *type = kv->type == KB_GGUF_TYPE_ARRAY ? kv->elem_type : kv->type;
  if (*type == KB_GGUF_TYPE_STRING)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' holds strings, not numbers", shown(kv->key_len),
                    (const char *)kv->key);
  KB_TRY(kb__check_dim(ctx, fn, "n", n));
  if (n != kv->count)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "n is %lld but key '%.*s' holds %lld value%s", (long long)n,
                    shown(kv->key_len), (const char *)kv->key, (long long)kv->count, kv->count == 1 ? "" : "s");
  *p = g->data + kv->value;
  return KB_STATUS_OK;
}

static double float_value(uint32_t type, const uint8_t *p) {
  if (type == KB_GGUF_TYPE_FLOAT32) {
    uint32_t u = (uint32_t)load_le(p, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  uint64_t u = load_le(p, 8);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

kb_status kb_gguf_get_f32(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n, float *values) {
  static const char fn[] = "kb_gguf_get_f32";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  uint32_t type;
  const uint8_t *p;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(numbers(ctx, fn, g, kv, n, &type, &p));
  KB_TRY(kb__check_ptr(ctx, fn, "values", values, n));
  const int64_t size = (type == KB_GGUF_TYPE_FLOAT32 || type == KB_GGUF_TYPE_FLOAT64) ? (type == KB_GGUF_TYPE_FLOAT32 ? 4 : 8) : 0;
  /* Check every value before writing any: nothing is written on failure. */
  for (int pass = 0; pass < 2; pass++)
    for (int64_t i = 0; i < n; i++) {
      float f;
      if (size != 0) {
        double d = float_value(type, p + i * size);
        if (isfinite(d) && fabs(d) > FLT_MAX)
          return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s': value %lld (%g) is outside the float32 range",
                          shown(kv->key_len), (const char *)kv->key, (long long)i, d);
        f = (float)d;
      } else {
        int64_t v = 0;
        int64_t esz = type == KB_GGUF_TYPE_UINT8 || type == KB_GGUF_TYPE_INT8 || type == KB_GGUF_TYPE_BOOL ? 1
                      : type == KB_GGUF_TYPE_UINT16 || type == KB_GGUF_TYPE_INT16                           ? 2
                      : type == KB_GGUF_TYPE_UINT32 || type == KB_GGUF_TYPE_INT32                           ? 4
                                                                                                            : 8;
        if (type == KB_GGUF_TYPE_UINT64)
          f = (float)load_le(p + i * 8, 8); /* any uint64 fits float32's range */
        else if (int_value(type, p + i * esz, &v) == 0)
          f = (float)v;
        else
          return kb__fail(ctx, KB_STATUS_INTERNAL, fn, "key '%.*s': unexpected type %u", shown(kv->key_len),
                          (const char *)kv->key, (unsigned)type);
      }
      if (pass == 1) values[i] = f;
    }
  return KB_STATUS_OK;
}

kb_status kb_gguf_get_i32(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n, int32_t *values) {
  static const char fn[] = "kb_gguf_get_i32";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  uint32_t type;
  const uint8_t *p;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(numbers(ctx, fn, g, kv, n, &type, &p));
  if (type == KB_GGUF_TYPE_FLOAT32 || type == KB_GGUF_TYPE_FLOAT64)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s' holds %s values, not integers", shown(kv->key_len),
                    (const char *)kv->key, kb__gguf_type_name(type));
  KB_TRY(kb__check_ptr(ctx, fn, "values", values, n));
  const int64_t esz = type == KB_GGUF_TYPE_UINT8 || type == KB_GGUF_TYPE_INT8 || type == KB_GGUF_TYPE_BOOL ? 1
                      : type == KB_GGUF_TYPE_UINT16 || type == KB_GGUF_TYPE_INT16                           ? 2
                      : type == KB_GGUF_TYPE_UINT32 || type == KB_GGUF_TYPE_INT32                           ? 4
                                                                                                            : 8;
  for (int pass = 0; pass < 2; pass++)
    for (int64_t i = 0; i < n; i++) {
      int64_t v = 0;
      int r = int_value(type, p + i * esz, &v);
      if (r != 0 || v < INT32_MIN || v > INT32_MAX)
        return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "key '%.*s': value %lld is outside the int32 range",
                        shown(kv->key_len), (const char *)kv->key, (long long)i);
      if (pass == 1) values[i] = (int32_t)v;
    }
  return KB_STATUS_OK;
}

kb_status kb_gguf_string_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes) {
  static const char fn[] = "kb_gguf_string_bytes";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_type(ctx, fn, kv, KB_GGUF_TYPE_STRING));
  OUT_CHECK(bytes);
  *bytes = kv->bytes;
  return KB_STATUS_OK;
}

kb_status kb_gguf_get_string(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes, void *value) {
  static const char fn[] = "kb_gguf_get_string";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_type(ctx, fn, kv, KB_GGUF_TYPE_STRING));
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  if (bytes != kv->bytes)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "bytes is %lld but the string of key '%.*s' has %lld bytes",
                    (long long)bytes, shown(kv->key_len), (const char *)kv->key, (long long)kv->bytes);
  KB_TRY(kb__check_ptr(ctx, fn, "value", value, bytes));
  if (bytes > 0) memcpy(value, g->data + kv->value, (size_t)bytes);
  return KB_STATUS_OK;
}

kb_status kb_gguf_array_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type) {
  static const char fn[] = "kb_gguf_array_type";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_type(ctx, fn, kv, KB_GGUF_TYPE_ARRAY));
  OUT_CHECK(type);
  *type = kv->elem_type;
  return KB_STATUS_OK;
}

kb_status kb_gguf_array_length(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *length) {
  static const char fn[] = "kb_gguf_array_length";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_type(ctx, fn, kv, KB_GGUF_TYPE_ARRAY));
  OUT_CHECK(length);
  *length = kv->count;
  return KB_STATUS_OK;
}

kb_status kb_gguf_string_array_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes) {
  static const char fn[] = "kb_gguf_string_array_bytes";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_string_array(ctx, fn, kv));
  OUT_CHECK(bytes);
  *bytes = kv->bytes;
  return KB_STATUS_OK;
}

/* Walks the strings of a validated array of strings: length of string i and
 * a pointer to its bytes, from the position *pos (advanced). */
static const uint8_t *next_string(const kb_gguf *g, int64_t *pos, int64_t *len) {
  *len = (int64_t)load_le(g->data + *pos, 8);
  const uint8_t *s = g->data + *pos + 8;
  *pos += 8 + *len;
  return s;
}

kb_status kb_gguf_get_string_array_data(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes, void *blob) {
  static const char fn[] = "kb_gguf_get_string_array_data";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_string_array(ctx, fn, kv));
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  if (bytes != kv->bytes)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "bytes is %lld but the strings of key '%.*s' have %lld bytes",
                    (long long)bytes, shown(kv->key_len), (const char *)kv->key, (long long)kv->bytes);
  KB_TRY(kb__check_ptr(ctx, fn, "blob", blob, bytes));
  int64_t pos = kv->value, at = 0;
  for (int64_t i = 0; i < kv->count; i++) {
    int64_t len;
    const uint8_t *s = next_string(g, &pos, &len);
    if (len > 0) memcpy((uint8_t *)blob + at, s, (size_t)len);
    at += len;
  }
  return KB_STATUS_OK;
}

kb_status kb_gguf_get_string_array_offsets(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t n_offsets,
                                           int32_t *offsets) {
  static const char fn[] = "kb_gguf_get_string_array_offsets";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_kv *kv;
  KB_TRY(get_kv(ctx, fn, g, index, &kv));
  KB_TRY(want_string_array(ctx, fn, kv));
  KB_TRY(kb__check_dim(ctx, fn, "n_offsets", n_offsets));
  if (n_offsets != kv->count + 1)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "n_offsets is %lld but key '%.*s' holds %lld strings (%lld offsets)",
                    (long long)n_offsets, shown(kv->key_len), (const char *)kv->key, (long long)kv->count,
                    (long long)kv->count + 1);
  if (kv->bytes > INT32_MAX)
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn, "the strings of key '%.*s' take %lld bytes, too many for int32 offsets",
                    shown(kv->key_len), (const char *)kv->key, (long long)kv->bytes);
  KB_TRY(kb__check_ptr(ctx, fn, "offsets", offsets, n_offsets));
  int64_t pos = kv->value, at = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < kv->count; i++) {
    int64_t len;
    (void)next_string(g, &pos, &len);
    at += len;
    offsets[i + 1] = (int32_t)at;
  }
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_count(kb_context *ctx, const kb_gguf *g, int64_t *count) {
  static const char fn[] = "kb_gguf_tensor_count";
  KB_BEGIN(ctx, fn);
  KB_TRY(check_g(ctx, fn, g));
  OUT_CHECK(count);
  *count = g->n_tensors;
  return KB_STATUS_OK;
}

kb_status kb_gguf_find_tensor(kb_context *ctx, const kb_gguf *g, const char *name, int64_t *index) {
  static const char fn[] = "kb_gguf_find_tensor";
  KB_BEGIN(ctx, fn);
  KB_TRY(check_g(ctx, fn, g));
  KB_TRY(check_cstring(ctx, fn, "name", name));
  OUT_CHECK(index);
  *index = kb__gguf_lookup(g->tensor_sorted, g->n_tensors, (const uint8_t *)name, (int64_t)strlen(name));
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_name(kb_context *ctx, const kb_gguf *g, int64_t index, char *name, int64_t name_capacity) {
  static const char fn[] = "kb_gguf_tensor_name";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  return put_name(ctx, fn, "tensor", t->name, t->name_len, name, name_capacity);
}

kb_status kb_gguf_tensor_type(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *type) {
  static const char fn[] = "kb_gguf_tensor_type";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  OUT_CHECK(type);
  *type = t->type;
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_n_dims(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *n_dims) {
  static const char fn[] = "kb_gguf_tensor_n_dims";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  OUT_CHECK(n_dims);
  *n_dims = t->n_dims;
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_dim(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t axis, int64_t *size) {
  static const char fn[] = "kb_gguf_tensor_dim";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  if (axis < 0 || axis >= t->n_dims)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "axis %lld is not in [0, %d) for tensor '%.*s'", (long long)axis,
                    (int)t->n_dims, shown(t->name_len), (const char *)t->name);
  OUT_CHECK(size);
  *size = t->ne[t->n_dims - 1 - axis]; /* row-major: the last axis is GGUF's ne[0] */
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_bytes(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *bytes) {
  static const char fn[] = "kb_gguf_tensor_bytes";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  OUT_CHECK(bytes);
  *bytes = t->bytes;
  return KB_STATUS_OK;
}

kb_status kb_gguf_tensor_offset(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t *offset) {
  static const char fn[] = "kb_gguf_tensor_offset";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  OUT_CHECK(offset);
  *offset = t->offset;
  return KB_STATUS_OK;
}

/* The GGML types kernels take (kb_dtype). */
static int is_kb_dtype(uint32_t type) {
  return type == KB_DTYPE_F32 || type == KB_DTYPE_F16 || type == KB_DTYPE_BF16 || type == KB_DTYPE_Q8_0 ||
         type == KB_DTYPE_Q4_0;
}

kb_status kb_gguf_tensor_read(kb_context *ctx, const kb_gguf *g, int64_t index, int64_t bytes, void *data) {
  static const char fn[] = "kb_gguf_tensor_read";
  KB_BEGIN(ctx, fn);
  const struct kb_gguf_tensor *t;
  KB_TRY(get_tensor(ctx, fn, g, index, &t));
  if (!is_kb_dtype(t->type))
    return kb__fail(ctx, KB_STATUS_UNSUPPORTED, fn,
                    "tensor '%.*s' has GGML type %s (%u), which kernels do not take (F32, F16, BF16, Q8_0, Q4_0)",
                    shown(t->name_len), (const char *)t->name, kb__ggml_type_name(t->type), (unsigned)t->type);
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  if (bytes != t->bytes)
    return kb__fail(ctx, KB_STATUS_SHAPE_MISMATCH, fn, "bytes is %lld but tensor '%.*s' has %lld bytes", (long long)bytes,
                    shown(t->name_len), (const char *)t->name, (long long)t->bytes);
  KB_TRY(kb__check_ptr(ctx, fn, "data", data, bytes));
  if (bytes > 0 && kb__device_memory_of(data) >= 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "data is device memory; kb_gguf_tensor_read copies into host memory");
  if (bytes > 0) memcpy(data, g->data + t->offset, (size_t)bytes);
  return KB_STATUS_OK;
}
