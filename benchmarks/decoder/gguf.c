/* gguf.c - see gguf.h.  GGUF layout (little-endian): "GGUF", u32 version,
 * u64 tensor count, u64 metadata count; the metadata as key (u64 length +
 * bytes), u32 value type, value; the tensor infos as name, u32 dims, u64
 * dims[], u32 type, u64 offset; padding to general.alignment (default 32);
 * the tensor data, each at its offset from there. */
#define _DEFAULT_SOURCE
#include "gguf.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A cursor over the mapping that refuses to move past its end. */
struct cur {
  const unsigned char *p;
  size_t pos, size;
  char *err;
  size_t cap;
  bool bad;
};

static void fail(struct cur *c, const char *fmt, ...) {
  if (c->bad) return;
  c->bad = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, c->cap, fmt, ap);
  va_end(ap);
}

static const unsigned char *take(struct cur *c, uint64_t n, const char *what) {
  if (c->bad) return NULL;
  if (n > c->size - c->pos) {
    fail(c, "truncated file: %s needs %llu bytes at offset %zu, the file has %zu", what, (unsigned long long)n, c->pos,
         c->size);
    return NULL;
  }
  const unsigned char *r = c->p + c->pos;
  c->pos += (size_t)n;
  return r;
}

static uint64_t u64(struct cur *c, const char *what) {
  const unsigned char *b = take(c, 8, what);
  uint64_t v = 0;
  for (int i = 7; b != NULL && i >= 0; i--) v = v << 8 | b[i];
  return v;
}

static uint32_t u32(struct cur *c, const char *what) {
  const unsigned char *b = take(c, 4, what);
  return b == NULL ? 0 : (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* A string: its bytes (not terminated) and length. */
static const char *str(struct cur *c, uint64_t *len, const char *what) {
  *len = u64(c, what);
  return (const char *)take(c, *len, what);
}

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 };

static uint64_t scalar_size(uint32_t t) {
  switch (t) {
    case T_U8: case T_I8: case T_BOOL: return 1;
    case T_U16: case T_I16: return 2;
    case T_U32: case T_I32: case T_F32: return 4;
    case T_U64: case T_I64: case T_F64: return 8;
    default: return 0;
  }
}

/* Reads a number of any numeric type as a double (integers up to 2^53 exactly). */
static double number(struct cur *c, uint32_t t) {
  const unsigned char *b = take(c, scalar_size(t), "a value");
  if (b == NULL) return 0;
  uint64_t u = 0;
  for (int i = (int)scalar_size(t) - 1; i >= 0; i--) u = u << 8 | b[i];
  switch (t) {
    case T_I8: return (int8_t)u;
    case T_I16: return (int16_t)u;
    case T_I32: return (int32_t)u;
    case T_I64: return (double)(int64_t)u;
    case T_F32: { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); return f; }
    case T_F64: { double d; memcpy(&d, &u, 8); return d; }
    default: return (double)u;
  }
}

/* Skips a value of type t (arrays recursively, one level deep as GGUF allows). */
static void skip(struct cur *c, uint32_t t, int depth) {
  if (t == T_STRING) {
    uint64_t n;
    str(c, &n, "a string value");
  } else if (t == T_ARRAY) {
    uint32_t et = u32(c, "an array type");
    uint64_t n = u64(c, "an array length");
    if (depth > 1 || et == T_ARRAY) {
      fail(c, "nested arrays are not supported");
      return;
    }
    if (scalar_size(et) != 0) {
      if (n > (c->size - c->pos) / scalar_size(et)) fail(c, "truncated file: an array of %llu values", (unsigned long long)n);
      else take(c, n * scalar_size(et), "an array");
    } else if (et == T_STRING) {
      for (uint64_t i = 0; i < n && !c->bad; i++) skip(c, T_STRING, depth + 1);
    } else {
      fail(c, "unknown array element type %u", et);
    }
  } else if (scalar_size(t) != 0) {
    take(c, scalar_size(t), "a value");
  } else {
    fail(c, "unknown metadata value type %u", t);
  }
}

/* Bytes of a tensor of ggml type `type` with ne0 contiguous elements per row
 * and `rows` rows; 0 for types this reader does not size. */
static uint64_t tensor_bytes(uint32_t type, uint64_t ne0, uint64_t rows) {
  uint64_t per;
  switch (type) {
    case 0: per = ne0 * 4; break;                                /* F32 */
    case 1: case 30: per = ne0 * 2; break;                       /* F16, BF16 */
    case 2: if (ne0 % 32) return 0; per = ne0 / 32 * 18; break;  /* Q4_0 */
    case 8: if (ne0 % 32) return 0; per = ne0 / 32 * 34; break;  /* Q8_0 */
    default: return 0;
  }
  if (rows != 0 && per > UINT64_MAX / rows) return 0;
  return per * rows;
}

int gguf_open(const char *path, struct gguf_file *f, char *err, size_t err_cap) {
  memset(f, 0, sizeof *f);
  f->n_layer = f->n_embd = f->n_head = f->n_head_kv = f->n_ff = f->n_ctx = f->n_vocab = -1;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    snprintf(err, err_cap, "%s: cannot open", path);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 24) {
    snprintf(err, err_cap, "%s: not a GGUF file (too short)", path);
    close(fd);
    return -1;
  }
  f->size = (size_t)st.st_size;
  f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (f->map == MAP_FAILED) {
    f->map = NULL;
    snprintf(err, err_cap, "%s: cannot map", path);
    return -1;
  }
  struct cur c = {f->map, 0, f->size, err, err_cap, false};
  const unsigned char *magic = take(&c, 4, "the magic");
  if (magic == NULL || memcmp(magic, "GGUF", 4) != 0) fail(&c, "not a GGUF file (bad magic)");
  f->version = u32(&c, "the version");
  if (!c.bad && (f->version < 2 || f->version > 3)) fail(&c, "GGUF version %u is not supported (2 or 3)", f->version);
  uint64_t n_tensors = u64(&c, "the tensor count"), n_kv = u64(&c, "the metadata count");
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv && !c.bad; i++) {
    uint64_t klen;
    const char *key = str(&c, &klen, "a metadata key");
    uint32_t t = u32(&c, "a metadata type");
    if (c.bad) break;
    char k[96];
    snprintf(k, sizeof k, "%.*s", (int)(klen < 95 ? klen : 95), key);
    const char *dot = strchr(k, '.');
    const char *field = dot != NULL ? dot + 1 : k;
    if (strcmp(k, "general.architecture") == 0 && t == T_STRING) {
      uint64_t n;
      const char *v = str(&c, &n, "the architecture");
      if (v != NULL) snprintf(f->arch, sizeof f->arch, "%.*s", (int)(n < 31 ? n : 31), v);
    } else if (strcmp(k, "general.alignment") == 0 && scalar_size(t) != 0 && t != T_F32 && t != T_F64) {
      alignment = (uint64_t)number(&c, t);
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) fail(&c, "general.alignment %llu is not a power of two", (unsigned long long)alignment);
    } else if (dot != NULL && strncmp(k, f->arch, (size_t)(dot - k)) == 0 && f->arch[0] != '\0' &&
               scalar_size(t) != 0) {
      double v = number(&c, t);
      if (strcmp(field, "block_count") == 0) f->n_layer = (int64_t)v;
      else if (strcmp(field, "embedding_length") == 0) f->n_embd = (int64_t)v;
      else if (strcmp(field, "feed_forward_length") == 0) f->n_ff = (int64_t)v;
      else if (strcmp(field, "attention.head_count") == 0) f->n_head = (int64_t)v;
      else if (strcmp(field, "attention.head_count_kv") == 0) f->n_head_kv = (int64_t)v;
      else if (strcmp(field, "context_length") == 0) f->n_ctx = (int64_t)v;
      else if (strcmp(field, "rope.freq_base") == 0) f->rope_theta = v;
      else if (strcmp(field, "attention.layer_norm_rms_epsilon") == 0) f->rms_eps = v;
      else if (strcmp(field, "vocab_size") == 0) f->n_vocab = (int64_t)v;
    } else {
      skip(&c, t, 0);
    }
  }
  if (!c.bad && n_tensors > (c.size - c.pos) / 24) fail(&c, "the tensor count %llu does not fit the file", (unsigned long long)n_tensors);
  if (!c.bad) {
    f->tensors = (struct gguf_tensor *)calloc((size_t)(n_tensors > 0 ? n_tensors : 1), sizeof *f->tensors);
    if (f->tensors == NULL) fail(&c, "out of memory");
  }
  uint64_t *offsets = c.bad ? NULL : (uint64_t *)calloc((size_t)(n_tensors > 0 ? n_tensors : 1), sizeof *offsets);
  if (!c.bad && offsets == NULL) fail(&c, "out of memory");
  for (uint64_t i = 0; i < n_tensors && !c.bad; i++) {
    struct gguf_tensor *t = &f->tensors[i];
    uint64_t nlen;
    const char *name = str(&c, &nlen, "a tensor name");
    if (name != NULL) snprintf(t->name, sizeof t->name, "%.*s", (int)(nlen < 95 ? nlen : 95), name);
    uint32_t nd = u32(&c, "a tensor's dimension count");
    if (!c.bad && (nd < 1 || nd > 4)) fail(&c, "tensor %s has %u dimensions (1 to 4 allowed)", t->name, nd);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < nd && !c.bad; d++) {
      uint64_t v = u64(&c, "a tensor dimension");
      if (v > (uint64_t)INT64_MAX / (elems > 0 ? elems : 1)) fail(&c, "tensor %s: its size overflows", t->name);
      t->dims[d] = (int64_t)v;
      elems *= v;
    }
    t->n_dims = (int)nd;
    t->type = u32(&c, "a tensor type");
    offsets[i] = u64(&c, "a tensor offset");
    if (!c.bad) t->bytes = tensor_bytes(t->type, (uint64_t)t->dims[0], t->dims[0] > 0 ? elems / (uint64_t)t->dims[0] : 0);
  }
  size_t data_start = c.bad ? 0 : (c.pos + (size_t)alignment - 1) / (size_t)alignment * (size_t)alignment;
  if (!c.bad && data_start > c.size) fail(&c, "truncated file: no tensor data");
  for (uint64_t i = 0; i < n_tensors && !c.bad; i++) {
    struct gguf_tensor *t = &f->tensors[i];
    uint64_t room = c.size - data_start;
    if (offsets[i] > room || t->bytes > room - offsets[i])
      fail(&c, "tensor %s: %llu bytes at offset %llu run past the end of the file", t->name,
           (unsigned long long)t->bytes, (unsigned long long)offsets[i]);
    else
      t->data = (const unsigned char *)f->map + data_start + offsets[i];
  }
  free(offsets);
  if (c.bad) {
    gguf_close(f);
    return -1;
  }
  f->n_tensors = (int64_t)n_tensors;
  if (f->rope_theta == 0) f->rope_theta = 10000.0;
  if (f->rms_eps == 0) f->rms_eps = 1e-5;
  return 0;
}

const struct gguf_tensor *gguf_find(const struct gguf_file *f, const char *name) {
  for (int64_t i = 0; i < f->n_tensors; i++)
    if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
  return NULL;
}

void gguf_close(struct gguf_file *f) {
  if (f->map != NULL) munmap(f->map, f->size);
  free(f->tensors);
  memset(f, 0, sizeof *f);
}
