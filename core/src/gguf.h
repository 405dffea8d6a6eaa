/*
 * gguf.h - the parsed form of a GGUF file, shared by the parser
 * (gguf_parse.c) and the public functions (gguf.c).  Not installed.
 */
#ifndef KB_GGUF_H
#define KB_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* GGML's limits: at most 4 dimensions, names shorter than 64 bytes. */
#define KB_GGUF_MAX_DIMS 4
#define KB_GGUF_MAX_NAME 63
/* The GGUF format's limit on key names. */
#define KB_GGUF_MAX_KEY 65535
#define KB_GGUF_DEFAULT_ALIGNMENT 32

/* One metadata key and where its value lies in the file.  Everything here
 * was checked by the parser: the bytes it points at are inside the file. */
struct kb_gguf_kv {
  const uint8_t *key; /* not NUL-terminated */
  int64_t key_len;
  uint32_t type;      /* kb_gguf_type */
  uint32_t elem_type; /* arrays: the element type (never ARRAY) */
  int64_t count;      /* arrays: the element count; 1 otherwise */
  int64_t value;      /* file offset of the value (arrays: of the first element; strings: of the bytes) */
  int64_t bytes;      /* strings: their length; arrays of strings: the sum of their lengths */
};

struct kb_gguf_tensor {
  const uint8_t *name; /* not NUL-terminated */
  int64_t name_len;
  uint32_t type; /* GGML type number */
  int32_t n_dims;
  int64_t ne[KB_GGUF_MAX_DIMS]; /* GGUF order: ne[0] innermost; 1 past n_dims */
  int64_t offset;               /* from the start of the file */
  int64_t bytes;
};

/* A name and its index, sorted by name: lookups and the duplicate check. */
struct kb_gguf_name {
  const uint8_t *s;
  int64_t len;
  int64_t index;
};

struct kb_gguf {
  const uint8_t *data; /* the whole file */
  int64_t size;
  void *map;       /* the mapping holding data, or NULL */
  size_t map_size;
  void *owned;     /* the heap copy holding data, or NULL */
  uint32_t version;
  int64_t alignment;
  int64_t data_offset; /* start of the data section */
  int64_t n_kv;
  struct kb_gguf_kv *kv;
  struct kb_gguf_name *kv_sorted;
  int64_t n_tensors;
  struct kb_gguf_tensor *tensors;
  struct kb_gguf_name *tensor_sorted;
};

/*
 * Parses and validates g->data[0, g->size) into the other fields of g.  On
 * failure records "fn: <what is wrong>" in ctx, frees what it allocated and
 * leaves those fields NULL / 0.
 */
kb_status kb__gguf_parse(kb_context *ctx, const char *fn, kb_gguf *g);

/* Frees what kb__gguf_parse allocated (not the data). */
void kb__gguf_free_parsed(kb_gguf *g);

/* Index of `name` (len bytes) among n sorted names, or -1. */
int64_t kb__gguf_lookup(const struct kb_gguf_name *sorted, int64_t n, const uint8_t *name, int64_t len);

/* Name of a value type ("UINT8", ..., "FLOAT64"), "?" for others. */
const char *kb__gguf_type_name(uint32_t type);

/* Name of a GGML tensor type ("F32", "Q4_K", ...), NULL when unknown. */
const char *kb__ggml_type_name(uint32_t type);

#endif /* KB_GGUF_H */
