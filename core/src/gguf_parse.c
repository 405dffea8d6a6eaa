/* gguf_parse.c - validates a GGUF file (versions 2 and 3, little-endian)
 * held in memory and indexes its keys and tensors.  The bytes are untrusted:
 * every length and count is compared with the bytes that remain before it is
 * used, every product is checked for overflow, and nothing is allocated from
 * a count that the file's size does not bound. */
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

/* Where the parser is in the file, and whom to blame in messages. */
struct reader {
  kb_context *ctx;
  const char *fn;
  const uint8_t *p;
  int64_t size;
  int64_t pos;
};

static int64_t remaining(const struct reader *r) { return r->size - r->pos; }

static uint64_t load_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Reads an n-byte little-endian unsigned integer (n <= 8). */
static kb_status read_uint(struct reader *r, int n, const char *what, uint64_t *v) {
  *v = 0; /* defined on failure too */
  if (remaining(r) < n)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "the file ends inside %s (byte %lld of %lld)", what,
                    (long long)r->pos, (long long)r->size);
  *v = load_le(r->p + r->pos, n);
  r->pos += n;
  return KB_STATUS_OK;
}

/* A GGUF string: u64 length, then the bytes.  what names it in messages. */
static kb_status read_string(struct reader *r, const char *what, const uint8_t **s, int64_t *len) {
  uint64_t n = 0;
  KB_TRY(read_uint(r, 8, what, &n));
  if (n > (uint64_t)remaining(r))
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn,
                    "%s at byte %lld has length %llu, past the end of the file (%lld bytes)", what,
                    (long long)(r->pos - 8), (unsigned long long)n, (long long)r->size);
  *s = r->p + r->pos;
  *len = (int64_t)n;
  r->pos += (int64_t)n;
  return KB_STATUS_OK;
}

/* A name must be non-empty, hold no NUL (bindings pass names as C strings)
 * and be at most max bytes. */
static kb_status check_name(struct reader *r, const char *what, const uint8_t *s, int64_t len, int64_t max) {
  if (len == 0)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%s at byte %lld is empty", what, (long long)r->pos);
  if (len > max)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%s '%.40s...' is %lld bytes long (at most %lld)", what,
                    (const char *)s, (long long)len, (long long)max);
  if (memchr(s, 0, (size_t)len) != NULL)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%s '%.*s' holds a NUL byte", what, (int)(len > 64 ? 64 : len),
                    (const char *)s);
  return KB_STATUS_OK;
}

const char *kb__gguf_type_name(uint32_t type) {
  static const char *const names[] = {"UINT8", "INT8",  "UINT16", "INT16",  "UINT32", "INT32", "FLOAT32",
                                      "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
  return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

/* Bytes of one value of a fixed-size type; 0 for STRING, ARRAY and unknown types. */
static int64_t fixed_size(uint32_t type) {
  static const int8_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return type < sizeof sizes / sizeof sizes[0] ? sizes[type] : 0;
}

/* Block size (elements) and bytes per block of every GGML type this reader
 * can size, so files holding types kernels do not take can still be listed.
 * A type missing here (name NULL) makes the file unreadable: its tensors'
 * extents, hence the file's layout, are unknown. */
static const struct {
  const char *name;
  int32_t block;
  int32_t size;
} ggml_types[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},        [2] = {"Q4_0", 32, 18},     [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},     [8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 36},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},  [12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},  [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},  [20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},        [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},       [28] = {"F64", 1, 8},       [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},  [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
};

const char *kb__ggml_type_name(uint32_t type) {
  return type < sizeof ggml_types / sizeof ggml_types[0] ? ggml_types[type].name : NULL;
}

/* Up to 64 bytes of a key or name, for "%.*s". */
static int shown(int64_t len) { return len > 64 ? 64 : (int)len; }

/* The value of kv (type already read): checks it lies in the file, records
 * where, and moves past it.  Arrays of arrays are refused (GGUF allows them;
 * no model key uses them, and refusing keeps the parser free of recursion). */
static kb_status read_value(struct reader *r, struct kb_gguf_kv *kv) {
  const int ks = shown(kv->key_len);
  const char *k = (const char *)kv->key;
  kv->count = 1;
  if (kv->type == KB_GGUF_TYPE_STRING) {
    const uint8_t *s;
    KB_TRY(read_string(r, "a string value", &s, &kv->bytes));
    kv->value = (int64_t)(s - r->p);
    return KB_STATUS_OK;
  }
  if (kv->type != KB_GGUF_TYPE_ARRAY) {
    int64_t size = fixed_size(kv->type);
    if (size == 0)
      return kb__fail(r->ctx, KB_STATUS_UNSUPPORTED, r->fn, "key '%.*s' has value type %u, which GGUF does not define",
                      ks, k, (unsigned)kv->type);
    if (remaining(r) < size)
      return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "the value of key '%.*s' lies past the end of the file",
                      ks, k);
    if (kv->type == KB_GGUF_TYPE_BOOL && r->p[r->pos] > 1)
      return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "key '%.*s' is a BOOL of value %u (not 0 or 1)", ks, k,
                      (unsigned)r->p[r->pos]);
    kv->value = r->pos;
    r->pos += size;
    return KB_STATUS_OK;
  }
  uint64_t elem, n;
  KB_TRY(read_uint(r, 4, "an array's element type", &elem));
  KB_TRY(read_uint(r, 8, "an array's length", &n));
  if (elem == KB_GGUF_TYPE_ARRAY)
    return kb__fail(r->ctx, KB_STATUS_UNSUPPORTED, r->fn, "key '%.*s' is an array of arrays, which this reader refuses",
                    ks, k);
  kv->elem_type = (uint32_t)elem;
  kv->value = r->pos;
  kv->bytes = 0;
  if (elem == KB_GGUF_TYPE_STRING) {
    /* Each string takes at least its 8-byte length. */
    if (n > (uint64_t)remaining(r) / 8)
      return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn,
                      "key '%.*s': an array of %llu strings cannot fit in the %lld bytes left", ks, k,
                      (unsigned long long)n, (long long)remaining(r));
    for (uint64_t i = 0; i < n; i++) {
      const uint8_t *s;
      int64_t len;
      KB_TRY(read_string(r, "a string of an array", &s, &len));
      kv->bytes += len; /* <= the file size: no overflow */
    }
    kv->count = (int64_t)n;
    return KB_STATUS_OK;
  }
  int64_t size = elem <= UINT32_MAX ? fixed_size((uint32_t)elem) : 0;
  if (size == 0)
    return kb__fail(r->ctx, KB_STATUS_UNSUPPORTED, r->fn, "key '%.*s' is an array of value type %llu, which GGUF does not define",
                    ks, k, (unsigned long long)elem);
  if (n > (uint64_t)(remaining(r) / size))
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn,
                    "key '%.*s': an array of %llu %s values lies past the end of the file", ks, k,
                    (unsigned long long)n, kb__gguf_type_name((uint32_t)elem));
  if (elem == KB_GGUF_TYPE_BOOL)
    for (uint64_t i = 0; i < n; i++)
      if (r->p[r->pos + (int64_t)i] > 1)
        return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "key '%.*s': BOOL element %llu is %u (not 0 or 1)",
                        ks, k, (unsigned long long)i, (unsigned)r->p[r->pos + (int64_t)i]);
  kv->count = (int64_t)n;
  r->pos += (int64_t)n * size;
  return KB_STATUS_OK;
}

static int name_cmp(const void *a, const void *b) {
  const struct kb_gguf_name *x = (const struct kb_gguf_name *)a, *y = (const struct kb_gguf_name *)b;
  int64_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, (size_t)n);
  if (c != 0) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

int64_t kb__gguf_lookup(const struct kb_gguf_name *sorted, int64_t n, const uint8_t *name, int64_t len) {
  struct kb_gguf_name key = {name, len, -1};
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = name_cmp(&sorted[mid], &key);
    if (c == 0) return sorted[mid].index;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Sorts n names (what: "key", "tensor") and refuses duplicates. */
static kb_status sort_names(struct reader *r, const char *what, struct kb_gguf_name *names, int64_t n) {
  if (n < 2) return KB_STATUS_OK;
  qsort(names, (size_t)n, sizeof *names, name_cmp);
  for (int64_t i = 1; i < n; i++)
    if (name_cmp(&names[i - 1], &names[i]) == 0)
      return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%s '%.*s' appears twice", what, shown(names[i].len),
                      (const char *)names[i].s);
  return KB_STATUS_OK;
}

static kb_status read_kvs(struct reader *r, kb_gguf *g, uint64_t n) {
  /* A key takes at least 8 (length) + 1 (name) + 4 (type) + 1 (a UINT8) bytes. */
  if (n > (uint64_t)remaining(r) / 14)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%llu keys cannot fit in a file of %lld bytes",
                    (unsigned long long)n, (long long)r->size);
  if (n == 0) return KB_STATUS_OK;
  g->kv = (struct kb_gguf_kv *)calloc((size_t)n, sizeof *g->kv);
  g->kv_sorted = (struct kb_gguf_name *)calloc((size_t)n, sizeof *g->kv_sorted);
  if (g->kv == NULL || g->kv_sorted == NULL)
    return kb__fail(r->ctx, KB_STATUS_OUT_OF_MEMORY, r->fn, "out of memory for %llu keys", (unsigned long long)n);
  g->n_kv = (int64_t)n;
  for (int64_t i = 0; i < g->n_kv; i++) {
    struct kb_gguf_kv *kv = &g->kv[i];
    uint64_t type;
    KB_TRY(read_string(r, "a key name", &kv->key, &kv->key_len));
    KB_TRY(check_name(r, "key", kv->key, kv->key_len, KB_GGUF_MAX_KEY));
    KB_TRY(read_uint(r, 4, "a value type", &type));
    kv->type = (uint32_t)type;
    KB_TRY(read_value(r, kv));
    g->kv_sorted[i] = (struct kb_gguf_name){kv->key, kv->key_len, i};
  }
  return sort_names(r, "key", g->kv_sorted, g->n_kv);
}

/* general.alignment, when present: an integer, a power of two.  GGUF says
 * UINT32; any unsigned type holding such a value is taken. */
static kb_status read_alignment(struct reader *r, kb_gguf *g) {
  static const char name[] = "general.alignment";
  g->alignment = KB_GGUF_DEFAULT_ALIGNMENT;
  int64_t i = kb__gguf_lookup(g->kv_sorted, g->n_kv, (const uint8_t *)name, (int64_t)sizeof name - 1);
  if (i < 0) return KB_STATUS_OK;
  const struct kb_gguf_kv *kv = &g->kv[i];
  int64_t size = kv->type == KB_GGUF_TYPE_UINT8 || kv->type == KB_GGUF_TYPE_UINT16 || kv->type == KB_GGUF_TYPE_UINT32 ||
                         kv->type == KB_GGUF_TYPE_UINT64
                     ? fixed_size(kv->type)
                     : 0;
  if (size == 0)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "key '%s' is a %s, not an unsigned integer", name,
                    kb__gguf_type_name(kv->type));
  uint64_t a = load_le(r->p + kv->value, (int)size);
  if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 30))
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "key '%s' is %llu, not a power of two up to 2^30", name,
                    (unsigned long long)a);
  g->alignment = (int64_t)a;
  return KB_STATUS_OK;
}

static kb_status read_tensor_info(struct reader *r, struct kb_gguf_tensor *t) {
  uint64_t n_dims, type, offset;
  KB_TRY(read_string(r, "a tensor name", &t->name, &t->name_len));
  KB_TRY(check_name(r, "tensor name", t->name, t->name_len, KB_GGUF_MAX_NAME));
  const int ns = shown(t->name_len);
  const char *nm = (const char *)t->name;
  KB_TRY(read_uint(r, 4, "a tensor's dimension count", &n_dims));
  if (n_dims < 1 || n_dims > KB_GGUF_MAX_DIMS)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "tensor '%.*s' has %llu dimensions (1 to %d allowed)", ns,
                    nm, (unsigned long long)n_dims, KB_GGUF_MAX_DIMS);
  t->n_dims = (int32_t)n_dims;
  for (int d = 0; d < KB_GGUF_MAX_DIMS; d++) {
    uint64_t ne = 1;
    if (d < t->n_dims) KB_TRY(read_uint(r, 8, "a tensor's dimensions", &ne));
    if (ne == 0 || ne > (uint64_t)INT64_MAX)
      return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "tensor '%.*s': ne[%d] is %llu (must be in [1, 2^63))",
                      ns, nm, d, (unsigned long long)ne);
    t->ne[d] = (int64_t)ne;
  }
  KB_TRY(read_uint(r, 4, "a tensor's type", &type));
  KB_TRY(read_uint(r, 8, "a tensor's offset", &offset));
  if (kb__ggml_type_name((uint32_t)type) == NULL)
    return kb__fail(r->ctx, KB_STATUS_UNSUPPORTED, r->fn, "tensor '%.*s' has GGML type %llu, unknown to this reader", ns,
                    nm, (unsigned long long)type);
  t->type = (uint32_t)type;
  if (offset > (uint64_t)INT64_MAX)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "tensor '%.*s' has offset %llu, past the end of the file",
                    ns, nm, (unsigned long long)offset);
  t->offset = (int64_t)offset; /* relative to the data section until place_tensor */
  return KB_STATUS_OK;
}

/* Sizes tensor t and places its data inside the file. */
static kb_status place_tensor(struct reader *r, const kb_gguf *g, struct kb_gguf_tensor *t) {
  const int ns = shown(t->name_len);
  const char *nm = (const char *)t->name;
  const int64_t block = ggml_types[t->type].block, size = ggml_types[t->type].size;
  if (t->ne[0] % block != 0)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn,
                    "tensor '%.*s' of type %s: ne[0] = %lld is not a multiple of its block size %lld", ns, nm,
                    ggml_types[t->type].name, (long long)t->ne[0], (long long)block);
  int64_t bytes = t->ne[0] / block;
  if (bytes > INT64_MAX / size) goto overflow;
  bytes *= size;
  for (int d = 1; d < KB_GGUF_MAX_DIMS; d++) {
    if (bytes > INT64_MAX / t->ne[d]) goto overflow;
    bytes *= t->ne[d];
  }
  if (t->offset % g->alignment != 0)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "tensor '%.*s': offset %lld is not a multiple of the alignment %lld",
                    ns, nm, (long long)t->offset, (long long)g->alignment);
  /* [data_offset + offset, ... + bytes) inside [0, size), without overflow. */
  if (g->data_offset > r->size || t->offset > r->size - g->data_offset ||
      bytes > r->size - g->data_offset - t->offset)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn,
                    "tensor '%.*s' data [%lld, +%lld) lies past the end of the file (%lld bytes)", ns, nm,
                    (long long)t->offset, (long long)bytes, (long long)r->size);
  t->offset += g->data_offset;
  t->bytes = bytes;
  return KB_STATUS_OK;
overflow:
  return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "tensor '%.*s': its size in bytes overflows", ns, nm);
}

static kb_status read_tensors(struct reader *r, kb_gguf *g, uint64_t n) {
  /* A tensor info takes at least 8 + 1 (name) + 4 + 8 (one dimension) + 4 + 8 bytes. */
  if (n > (uint64_t)remaining(r) / 33)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "%llu tensors cannot fit in a file of %lld bytes",
                    (unsigned long long)n, (long long)r->size);
  if (n == 0) return KB_STATUS_OK;
  g->tensors = (struct kb_gguf_tensor *)calloc((size_t)n, sizeof *g->tensors);
  g->tensor_sorted = (struct kb_gguf_name *)calloc((size_t)n, sizeof *g->tensor_sorted);
  if (g->tensors == NULL || g->tensor_sorted == NULL)
    return kb__fail(r->ctx, KB_STATUS_OUT_OF_MEMORY, r->fn, "out of memory for %llu tensors", (unsigned long long)n);
  g->n_tensors = (int64_t)n;
  for (int64_t i = 0; i < g->n_tensors; i++) {
    KB_TRY(read_tensor_info(r, &g->tensors[i]));
    g->tensor_sorted[i] = (struct kb_gguf_name){g->tensors[i].name, g->tensors[i].name_len, i};
  }
  return sort_names(r, "tensor", g->tensor_sorted, g->n_tensors);
}

static kb_status parse(struct reader *r, kb_gguf *g) {
  uint64_t magic, version, n_tensors, n_kv;
  if (r->size < 4 || memcmp(r->p, "GGUF", 4) != 0)
    return kb__fail(r->ctx, KB_STATUS_INVALID_ARGUMENT, r->fn, "not a GGUF file (it does not start with \"GGUF\")");
  KB_TRY(read_uint(r, 4, "the magic", &magic));
  KB_TRY(read_uint(r, 4, "the version", &version));
  if (version != 2 && version != 3) {
    const char *why = version == 1 ? " (version 1 is not supported)"
                      : (version & 0xFFFFu) == 0 ? " (a big-endian file? only little-endian files are supported)"
                                                  : "";
    return kb__fail(r->ctx, KB_STATUS_UNSUPPORTED, r->fn, "GGUF version %llu; versions 2 and 3 are supported%s",
                    (unsigned long long)version, why);
  }
  g->version = (uint32_t)version;
  KB_TRY(read_uint(r, 8, "the tensor count", &n_tensors));
  KB_TRY(read_uint(r, 8, "the key count", &n_kv));
  KB_TRY(read_kvs(r, g, n_kv));
  KB_TRY(read_alignment(r, g));
  KB_TRY(read_tensors(r, g, n_tensors));
  /* The data section starts at the next multiple of the alignment.  pos <=
   * size < 2^63 and alignment <= 2^30: the sum cannot overflow. */
  g->data_offset = (r->pos + g->alignment - 1) / g->alignment * g->alignment;
  for (int64_t i = 0; i < g->n_tensors; i++) KB_TRY(place_tensor(r, g, &g->tensors[i]));
  return KB_STATUS_OK;
}

void kb__gguf_free_parsed(kb_gguf *g) {
  free(g->kv);
  free(g->kv_sorted);
  free(g->tensors);
  free(g->tensor_sorted);
  g->kv = NULL;
  g->kv_sorted = NULL;
  g->tensors = NULL;
  g->tensor_sorted = NULL;
  g->n_kv = 0;
  g->n_tensors = 0;
}

kb_status kb__gguf_parse(kb_context *ctx, const char *fn, kb_gguf *g) {
  struct reader r = {ctx, fn, g->data, g->size, 0};
  kb_status s = parse(&r, g);
  if (s != KB_STATUS_OK) kb__gguf_free_parsed(g);
  return s;
}
