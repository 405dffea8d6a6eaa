/* fuzz.c - the fuzz engine: decodes an input into one call of one entry
 * point, gives it exactly-sized buffers, calls it and checks the result (see
 * fuzz.h for the checks, docs/reliability.md for the input encoding). */
#include "tests/fuzz/fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tensor larger than this gets no buffer of its own (NULL, or a small
 * dummy when the call has nothing to write); keeps every call fast. */
#define FZ_TENSOR_CAP ((int64_t)1 << 14) /* bytes */
/* Calls predicted to do more multiply-adds than this are skipped. */
#define FZ_WORK_CAP ((int64_t)1 << 18)
/* Size of the dummy buffer passed for tensors whose size is undefined or
 * too large, when the call must fail or has nothing to write. */
#define FZ_DUMMY 16

enum { FZ_MODE_OWN = 0, FZ_MODE_NULL = 1, FZ_MODE_PLACED = 2, FZ_MODE_DUMMY = 3 };

/* ---- input decoding ---- */

typedef struct fz_in {
  const uint8_t *d;
  size_t n, pos;
} fz_in;

static uint8_t rd8(fz_in *in) { return in->pos < in->n ? in->d[in->pos++] : 0; }

static uint64_t rd_raw(fz_in *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)rd8(in) << (8 * i);
  return v;
}

/* Sizes that sit on an edge: negative, overflowing products, int32 limits,
 * the block sizes of gemm (KC 512) and attention (96 rows, 128 keys, chunks
 * of 512). */
static const int64_t special_dims[48] = {
    -1, -2, -3, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, INT64_MAX / 2,
    INT64_MAX / 4 + 1, (int64_t)1 << 31, ((int64_t)1 << 31) - 1, ((int64_t)1 << 31) + 1, (int64_t)1 << 32,
    ((int64_t)1 << 32) - 1, (int64_t)1 << 62, ((int64_t)1 << 62) + 1, (int64_t)1 << 61, (int64_t)1 << 60,
    (int64_t)1 << 40, (int64_t)1 << 33, 3037000499, 3037000500, (int64_t)1 << 21, (int64_t)1 << 20, 65535, 65536,
    65537, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 95, 96, 97, 16, 17, 48,
    ((int64_t)1 << 62) - 1, (int64_t)1 << 30, 2305843009213693952 /* 2^61 */};

static int64_t rd_dim(fz_in *in) {
  uint8_t b = rd8(in);
  if (b < 0x80) return b % 20;
  if (b < 0xC0) return b - 0x80;
  if (b < 0xF0) return special_dims[b - 0xC0];
  if (b < 0xF8) return (int64_t)rd_raw(in, 2);
  return (int64_t)rd_raw(in, 8);
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Float values with a story: signed zeros, infinities, NaNs, the largest
 * and smallest normals, subnormals, values whose exp over- or underflows,
 * the f16 maximum and a value past it, hyper-parameter-like values. */
#define FZ_NFPAL 32
static float fpal(unsigned i) {
  static const uint32_t bits[FZ_NFPAL] = {
      0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3f000000, 0xc0000000, 0x40400000, 0x3a83126f,
      0xba83126f, 0x42c80000, 0xc2c80000, 0x461c4000, 0xc61c4000, 0x42b16666, 0xc2af0000, 0x7149f2ca,
      0xf149f2ca, 0x7f7fffff, 0xff7fffff, 0x00800000, 0x80800000, 0x000116c2, 0x80000001, 0x7fc00000,
      0xffc00001, 0x7f800000, 0xff800000, 0x477fe000, 0x4788b800, 0x322bcc77, 0x3f666666, 0x3f7fbe77};
  return bits_f32(bits[i % FZ_NFPAL]);
}

static int32_t ipal(unsigned i) {
  static const int32_t v[16] = {0, 1, 2, 3, -1, -2, -100, INT32_MIN, INT32_MAX, 7, 100, 1000, 65536, -65536, 4, 5};
  return v[i % 16];
}

/* kb_dtype values (each twice, so that most draws are valid) and values
 * next to them that are not one: GGML's Q4_1 (3), 7, 29, 31, -1,
 * INT32_MIN. */
static int32_t dpal(unsigned i) {
  static const int32_t v[16] = {0, 1, 2, 8, 30, 0, 1, 2, 8, 30, 3, 7, -1, 31, 29, INT32_MIN};
  return v[i % 16];
}

static int64_t lpal(unsigned i) {
  static const int64_t v[16] = {1, 2, 3, 10, 1000, 0, -1, INT64_MAX, INT64_MIN, (int64_t)1 << 40,
                                (int64_t)1 << 31, 100000, 7, -1000, INT64_MAX - 1, 4};
  return v[i % 16];
}

static float rd_f32(fz_in *in) {
  uint8_t b = rd8(in);
  if (b < 0xE0) return fpal(b);
  return bits_f32((uint32_t)rd_raw(in, 4));
}

static int64_t rd_scalar_int(fz_in *in, int type) {
  uint8_t b = rd8(in);
  switch (type) {
    case FZ_S_I32:
      return b < 0xE0 ? ipal(b) : (int32_t)(uint32_t)rd_raw(in, 4);
    case FZ_S_DTYPE:
      return b < 0xE0 ? dpal(b) : (int32_t)(uint32_t)rd_raw(in, 4);
    case FZ_S_I64:
      return b < 0xE0 ? lpal(b) : (int64_t)rd_raw(in, 8);
    default: /* FZ_S_U64 */
      return b < 0xE0 ? b : (int64_t)rd_raw(in, 8);
  }
}

/* ---- float formats ---- */

static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* NaN stays NaN */
  return (uint16_t)(x >> 16);
}

static uint16_t to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return sign;
    man |= 0x800000;
    return (uint16_t)(sign | (man >> (14 - e)));
  }
  return (uint16_t)(sign | ((uint32_t)e << 10) | (man >> 13));
}

/* ---- signatures ---- */

static const char *type_name(int t) {
  static const char *const names[] = {"f32", "bf16", "f16", "i32", "u8"};
  return names[t];
}

static int elem_size(int t) { return t == FZ_U8 ? 1 : t == FZ_BF16 || t == FZ_F16 ? 2 : 4; }

static void sig_error(const fz_spec *s, const char *what) {
  fprintf(stderr, "fuzz: bad signature of %s (%s): %s\n", s->fn, what, s->sig);
  abort();
}

/* Parses a spec's signature; np parameters into p. */
static int parse_sig(const fz_spec *s, fz_param *p) {
  int np = 0;
  const char *q = s->sig;
  while (*q) {
    while (*q == ' ') q++;
    if (!*q) break;
    char tok[96];
    size_t len = strcspn(q, " ");
    if (len >= sizeof tok || np >= FZ_MAX_PARAMS) sig_error(s, "token too long or too many");
    memcpy(tok, q, len);
    tok[len] = '\0';
    q += len;
    fz_param *pp = &p[np++];
    memset(pp, 0, sizeof *pp);
    char *fields[6];
    int nf = 0;
    for (char *f = strtok(tok, ":"); f != NULL && nf < 6; f = strtok(NULL, ":")) fields[nf++] = f;
    if (nf < 2 || strlen(fields[0]) != 1 || strlen(fields[1]) >= FZ_NAME) sig_error(s, "field");
    pp->kind = fields[0][0];
    strcpy(pp->name, fields[1]);
    if (pp->kind == 's') {
      if (nf != 3) sig_error(s, "scalar");
      if (strcmp(fields[2], "f32") == 0) pp->type = FZ_S_F32;
      else if (strcmp(fields[2], "i32") == 0) pp->type = FZ_S_I32;
      else if (strcmp(fields[2], "i64") == 0) pp->type = FZ_S_I64;
      else if (strcmp(fields[2], "u64") == 0) pp->type = FZ_S_U64;
      else if (strcmp(fields[2], "dtype") == 0) pp->type = FZ_S_DTYPE;
      else sig_error(s, "scalar type");
    } else if (pp->kind == 't') {
      if (nf < 4) sig_error(s, "tensor");
      if (strcmp(fields[2], "$") == 0) pp->type = s->dtype;
      else if (strcmp(fields[2], "f32") == 0) pp->type = FZ_F32;
      else if (strcmp(fields[2], "bf16") == 0) pp->type = FZ_BF16;
      else if (strcmp(fields[2], "f16") == 0) pp->type = FZ_F16;
      else if (strcmp(fields[2], "i32") == 0) pp->type = FZ_I32;
      else if (strcmp(fields[2], "u8") == 0) pp->type = FZ_U8;
      else sig_error(s, "tensor type");
      if (strcmp(fields[3], "in") == 0) pp->role = FZ_IN;
      else if (strcmp(fields[3], "out") == 0) pp->role = FZ_OUT;
      else if (strcmp(fields[3], "inout") == 0) pp->role = FZ_INOUT;
      else sig_error(s, "role");
      for (int i = 4; i < nf; i++) {
        if (strcmp(fields[i], "null") == 0) {
          pp->nullable = true;
        } else if (strncmp(fields[i], "alias=", 6) == 0) {
          char *list = fields[i] + 6;
          for (char *a = list; *a && pp->nalias < 2;) {
            size_t al = strcspn(a, ",");
            if (al >= FZ_NAME) sig_error(s, "alias");
            memcpy(pp->alias[pp->nalias], a, al);
            pp->alias[pp->nalias][al] = '\0';
            pp->nalias++;
            a += al;
            if (*a == ',') a++;
          }
        } else {
          sig_error(s, "tensor option");
        }
      }
    } else if (pp->kind != 'd' && pp->kind != 'f') {
      sig_error(s, "kind");
    }
  }
  return np;
}

/* ---- accessors ---- */

static int param_index(const fz_call *c, const char *name, char kind) {
  for (int i = 0; i < c->np; i++)
    if (c->p[i].kind == kind && strcmp(c->p[i].name, name) == 0) return i;
  fprintf(stderr, "fuzz: %s has no parameter %c:%s\n", c->spec->fn, kind, name);
  abort();
}

int64_t fz_dim(const fz_call *c, const char *name) { return c->iv[param_index(c, name, 'd')]; }
bool fz_flag(const fz_call *c, const char *name) { return c->iv[param_index(c, name, 'f')] != 0; }
float fz_f32(const fz_call *c, const char *name) { return c->fv[param_index(c, name, 's')]; }
int64_t fz_int(const fz_call *c, const char *name) { return c->iv[param_index(c, name, 's')]; }
uint64_t fz_u64(const fz_call *c, const char *name) { return (uint64_t)c->iv[param_index(c, name, 's')]; }

fz_tensor *fz_tensor_of(fz_call *c, const char *name) {
  for (int i = 0; i < c->nt; i++)
    if (strcmp(c->t[i].p->name, name) == 0) return &c->t[i];
  fprintf(stderr, "fuzz: %s has no tensor %s\n", c->spec->fn, name);
  abort();
}

void *fz_ptr(const fz_call *c, const char *name) { return fz_tensor_of((fz_call *)c, name)->ptr; }

/* ---- sizes ---- */

int64_t fz_prod(int n, const int64_t *dims) {
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) return FZ_NEG;
  for (int i = 0; i < n; i++)
    if (dims[i] == 0) return 0;
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    if (dims[i] == FZ_OVER || p > INT64_MAX / dims[i]) return FZ_OVER;
    p *= dims[i];
  }
  return p;
}

int64_t fz_prod2(int64_t a, int64_t b) {
  int64_t d[2] = {a, b};
  return fz_prod(2, d);
}

int64_t fz_prod4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t v[4] = {a, b, c, d};
  return fz_prod(4, v);
}

int64_t fz_strided(int64_t rows, int64_t cols, int64_t ld) {
  if (rows < 0 || cols < 0 || ld < 0) return FZ_NEG;
  if (rows == 0 || cols == 0) return 0;
  if (rows - 1 > 0 && ld > (INT64_MAX - cols) / (rows - 1)) return FZ_OVER;
  return (rows - 1) * ld + cols;
}

int64_t fz_batched(int64_t count, int64_t stride, int64_t one) {
  if (count < 0 || stride < 0 || one < 0) return FZ_NEG;
  if (count == 0 || one == 0) return 0;
  if (one == FZ_OVER) return FZ_OVER;
  if (count - 1 > 0 && stride > (INT64_MAX - one) / (count - 1)) return FZ_OVER;
  return (count - 1) * stride + one;
}

void fz_extent(fz_call *c, const char *name, int64_t extent) { fz_tensor_of(c, name)->extent = extent; }

void fz_range(fz_call *c, const char *name, int32_t lo, int32_t hi, int32_t extra) {
  fz_tensor *t = fz_tensor_of(c, name);
  t->lo = lo;
  t->hi = hi;
  t->extra = extra;
}

/* Bytes of a tensor's declared extent; FZ_NEG / FZ_OVER passed through. */
static int64_t extent_bytes(const fz_tensor *t) {
  if (t->extent == FZ_NEG || t->extent == FZ_OVER) return t->extent;
  int64_t e = elem_size(t->p->type);
  return t->extent > INT64_MAX / e ? FZ_OVER : t->extent * e;
}

/* ---- reporting ---- */

static const char *mode_name(int m) {
  static const char *const names[] = {"own", "NULL", "placed", "dummy"};
  return names[m];
}

static const char *current_step = "";

static void describe(const fz_call *c);

void fz_fail(const fz_call *c, const char *fmt, ...) {
  fprintf(stderr, "\nFUZZ CHECK FAILED (%s) in %s: ", current_step, c->spec->fn);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  describe(c);
  abort();
}

/* The decoded call, on stderr. */
static void describe(const fz_call *c) {
  fprintf(stderr, "\n  call:");
  for (int i = 0; i < c->np; i++) {
    const fz_param *p = &c->p[i];
    if (p->kind == 'd') fprintf(stderr, " %s=%lld", p->name, (long long)c->iv[i]);
    if (p->kind == 'f') fprintf(stderr, " %s=%s", p->name, c->iv[i] ? "true" : "false");
    if (p->kind == 's' && p->type == FZ_S_F32) fprintf(stderr, " %s=%.9g", p->name, (double)c->fv[i]);
    if (p->kind == 's' && p->type != FZ_S_F32) fprintf(stderr, " %s=%lld", p->name, (long long)c->iv[i]);
  }
  fprintf(stderr, "\n");
  for (int i = 0; i < c->nt; i++) {
    const fz_tensor *t = &c->t[i];
    fprintf(stderr, "  tensor %s (%s, %s): extent %lld, %s", t->p->name, type_name(t->p->type),
            t->p->role == FZ_IN ? "in" : t->p->role == FZ_OUT ? "out" : "inout", (long long)t->extent,
            mode_name(t->mode));
    if (t->mode == FZ_MODE_PLACED)
      fprintf(stderr, " in %s's buffer at byte %lld", c->t[t->target].p->name, (long long)t->offset);
    if (t->mode == FZ_MODE_OWN && t->misalign != 0) fprintf(stderr, " (%d bytes past alignment)", t->misalign);
    fprintf(stderr, ", %zu bytes at %p\n", t->bytes, t->ptr);
  }
  if (c->must_fail) fprintf(stderr, "  the call must fail: %s\n", c->why);
}

/* ---- contexts ---- */

static kb_context *ctx_one, *ctx_three;
/* KB_FUZZ_VERBOSE=1: describe every call before making it (to read a
 * sanitizer's report on a crash input). */
static bool verbose;
/* KB_FUZZ_KNOWN_DEFECTS=1: make the calls that hit a known defect too. */
static bool known_defects;

static void init_contexts(void) {
  if (ctx_one != NULL) return;
  if (kb_context_create(KB_BACKEND_CPU, 1, &ctx_one) != KB_STATUS_OK ||
      kb_context_create(KB_BACKEND_CPU, 3, &ctx_three) != KB_STATUS_OK) {
    fprintf(stderr, "fuzz: cannot create the contexts: %s\n", kb_last_error());
    abort();
  }
}

/* ---- filling ---- */

static uint64_t xs_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static float uniform(uint64_t *s) { return (float)((double)(xs_next(s) >> 40) / (double)(1 << 24) * 8.0 - 4.0); }

static void put_float(void *base, int type, int64_t i, float v) {
  if (type == FZ_F32) ((float *)base)[i] = v;
  else if (type == FZ_BF16) ((uint16_t *)base)[i] = to_bf16(v);
  else ((uint16_t *)base)[i] = to_f16(v);
}

/* An element of an int tensor: mostly in its valid range (or a palette
 * value when it has none), sometimes just outside it or an extreme. */
static int32_t gen_int(const fz_tensor *t, unsigned b) {
  if (b < 0xE0) return t->hi > t->lo ? (int32_t)(t->lo + (int64_t)(b % (unsigned)((int64_t)t->hi - t->lo))) : ipal(b);
  switch (b % 8) {
    case 0:
      return t->extra;
    case 1:
      return t->lo - 1;
    case 2:
      return t->hi;
    case 3:
      return t->hi - 1;
    default:
      return ipal(b);
  }
}

/* Bytes with a story in the storage formats: zero, the high byte of a
 * binary16 infinity or NaN (0x7c, 0xfc, 0x7e, 0xff), of a bfloat16 or
 * float32 one (0x7f, 0x80), the Q8_0 code -128 (0x80), two Q4_0 codes 8
 * (0x88). */
static uint8_t special_byte(unsigned i) {
  static const uint8_t v[8] = {0x00, 0x7c, 0xfc, 0x7e, 0xff, 0x7f, 0x80, 0x88};
  return v[i % 8];
}

/* A byte tensor: the same modes, on bytes. */
static void fill_bytes(fz_in *in, uint8_t mode, uint64_t seed, uint8_t constant, uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    switch (mode) {
      case 0: /* one input byte per element */
      case 3:
        p[i] = rd8(in);
        break;
      case 1: /* pseudo-random */
        p[i] = (uint8_t)xs_next(&seed);
        break;
      case 2: /* one value everywhere */
        p[i] = constant;
        break;
      default: /* pseudo-random with special bytes sprinkled in */
        p[i] = (xs_next(&seed) & 15) == 0 ? special_byte((unsigned)xs_next(&seed)) : (uint8_t)xs_next(&seed);
        break;
    }
  }
}

static void fill(fz_in *in, fz_tensor *t) {
  int64_t n = t->extent;
  if (t->mode == FZ_MODE_DUMMY) n = (int64_t)t->bytes / elem_size(t->p->type);
  int type = t->p->type;
  uint8_t mode = rd8(in) % 5;
  uint64_t seed = 0x9E3779B97F4A7C15ull ^ ((uint64_t)rd8(in) << 8) ^ (uint64_t)t->extent;
  uint8_t constant = rd8(in);
  if (type == FZ_U8) {
    fill_bytes(in, mode, seed, constant, (uint8_t *)t->ptr, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    unsigned b;
    switch (mode) {
      case 0: /* one byte per element: a value of the palette / range */
        b = rd8(in);
        break;
      case 1: /* pseudo-random, ordinary values */
        b = 0x100 | (unsigned)(xs_next(&seed) & 0xff);
        break;
      case 2: /* one value everywhere */
        b = constant;
        break;
      case 3: /* raw bits from the input */
        if (type == FZ_F32 || type == FZ_I32) {
          uint32_t u = (uint32_t)rd_raw(in, 4);
          memcpy((char *)t->ptr + 4 * i, &u, 4);
        } else {
          ((uint16_t *)t->ptr)[i] = (uint16_t)rd_raw(in, 2);
        }
        continue;
      default: /* pseudo-random with special values sprinkled in */
        b = (xs_next(&seed) & 15) == 0 ? (unsigned)(xs_next(&seed) & 0xff) : 0x100 | (unsigned)(xs_next(&seed) & 0xff);
        break;
    }
    if (type == FZ_I32) {
      ((int32_t *)t->ptr)[i] = gen_int(t, b & 0x100 ? (b & 0xff) % 0xE0 : b);
    } else {
      put_float(t->ptr, type, i, b & 0x100 ? uniform(&seed) : fpal(b));
    }
  }
}

/* ---- checks ---- */

static bool allowed_status(kb_status s) {
  return s == KB_STATUS_OK || s == KB_STATUS_INVALID_ARGUMENT || s == KB_STATUS_SHAPE_MISMATCH ||
         s == KB_STATUS_OUT_OF_MEMORY;
}

static bool is_word(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

static bool names_word(const char *text, const char *word) {
  size_t wl = strlen(word);
  for (const char *h = strstr(text, word); h != NULL; h = strstr(h + 1, word))
    if ((h == text || !is_word(h[-1])) && !is_word(h[wl])) return true;
  return false;
}

static void check_message(const fz_call *c, kb_context *ctx, kb_status st) {
  if (ctx == NULL) return;
  const char *msg = kb_context_last_error(ctx);
  if (msg == NULL) fz_fail(c, "kb_context_last_error returned NULL");
  if (st == KB_STATUS_OK) {
    if (msg[0] != '\0') fz_fail(c, "OK but the message is \"%s\"", msg);
    return;
  }
  size_t fl = strlen(c->spec->fn);
  if (strncmp(msg, c->spec->fn, fl) != 0 || msg[fl] != ':' || msg[fl + 1] != ' ')
    fz_fail(c, "%s: the message \"%s\" does not start with \"%s: \"", kb_status_string(st), msg, c->spec->fn);
  const char *text = msg + fl + 2;
  for (int i = 0; i < c->np; i++)
    if (names_word(text, c->p[i].name)) return;
  if (st == KB_STATUS_OUT_OF_MEMORY && names_word(text, "scratch")) return;
  fz_fail(c, "%s: the message \"%s\" names no parameter", kb_status_string(st), msg);
}

bool fz_unchanged(const fz_call *c, const char *name, int64_t from, int64_t to) {
  const fz_tensor *t = fz_tensor_of((fz_call *)c, name);
  if (t->storage < 0 || from >= to) return true;
  const fz_storage *s = &c->s[t->storage];
  if (from < 0 || (size_t)to > t->bytes) fz_fail(c, "fz_unchanged: range [%lld, %lld) outside %s", (long long)from,
                                               (long long)to, name);
  return memcmp(s->mem + t->at + from, s->before + t->at + from, (size_t)(to - from)) == 0;
}

static void free_call(fz_call *c) {
  for (int i = 0; i < c->ns; i++) {
    free(c->s[i].mem);
    free(c->s[i].before);
    free(c->s[i].result);
  }
  c->ns = 0;
}

/* ---- one call ---- */

static void run_call(const fz_spec *spec, const fz_param *params, int np, fz_in *in) {
  fz_call c;
  memset(&c, 0, sizeof c);
  c.spec = spec;
  c.p = params;
  c.np = np;
  current_step = "decoding";

  uint8_t cb = rd8(in);
  kb_context *ctx = cb % 3 == 0 ? NULL : cb % 3 == 1 ? ctx_one : ctx_three;
  bool rerun = (cb / 3) % 2 == 1;

  /* Parameters in C order; a tensor's mode byte comes where the tensor is. */
  uint8_t mode_byte[FZ_MAX_TENSORS];
  for (int i = 0; i < np; i++) {
    const fz_param *p = &params[i];
    switch (p->kind) {
      case 'd':
        c.iv[i] = rd_dim(in);
        break;
      case 'f':
        c.iv[i] = rd8(in) & 1;
        break;
      case 's':
        if (p->type == FZ_S_F32) c.fv[i] = rd_f32(in);
        else c.iv[i] = rd_scalar_int(in, p->type);
        break;
      case 't': {
        fz_tensor *t = &c.t[c.nt];
        t->p = p;
        t->storage = -1;
        uint8_t m = rd8(in);
        mode_byte[c.nt] = m;
        t->mode = m % 16 == 12 ? FZ_MODE_NULL : FZ_MODE_OWN;
        /* Bytes may lie anywhere (kernelbridge.h): a byte tensor's own
         * buffer starts up to 3 bytes past an aligned address. */
        if (p->type == FZ_U8) t->misalign = (m >> 4) & 3;
        if (m % 16 == 13 || m % 16 == 14) {
          t->mode = FZ_MODE_PLACED;
          t->target = rd8(in);
          int64_t off = rd_dim(in);
          t->offset = m % 16 == 14 && off > 0 ? -off : off;
        }
        c.nt++;
        break;
      }
    }
  }
  for (int i = 0; i < c.nt; i++) c.t[i].extent = 0;
  spec->shape(&c);

  /* Validation rules that make the call invalid whatever else it holds. */
  for (int i = 0; i < np && !c.must_fail; i++)
    if (params[i].kind == 'd' && c.iv[i] < 0) {
      c.must_fail = true;
      snprintf(c.why, sizeof c.why, "%s is negative", params[i].name);
    }

  bool outputs_empty = true;
  for (int i = 0; i < c.nt; i++)
    if (c.t[i].p->role != FZ_IN && c.t[i].extent != 0) outputs_empty = false;

  /* How each tensor is passed. */
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->mode == FZ_MODE_NULL) continue;
    int64_t b = extent_bytes(t);
    if (b == FZ_NEG) {
      t->mode = FZ_MODE_DUMMY;
    } else if (b == FZ_OVER || b > FZ_TENSOR_CAP) {
      /* No buffer of that size: a dummy when nothing may be written (and
       * the input asks for it), else NULL.  Never for int tensors: their
       * contents are validated (read) even when there is nothing to write. */
      t->mode = outputs_empty && (mode_byte[i] & 1) && t->p->type != FZ_I32 ? FZ_MODE_DUMMY : FZ_MODE_NULL;
    } else if (t->mode == FZ_MODE_PLACED) {
      fz_tensor *o = NULL;
      if (c.nt > 1) {
        int target = (int)(t->target % (c.nt - 1));
        if (target >= i) target++;
        o = &c.t[target];
        t->target = target;
      }
      int e = elem_size(t->p->type), oe = o != NULL ? elem_size(o->p->type) : e;
      /* A byte tensor may start at any byte; others at a multiple of their
       * own and the target's element size from an aligned address. */
      int align = t->p->type == FZ_U8 ? 1 : e > oe ? e : oe;
      /* Only into a tensor that has a buffer of its own (decided earlier:
       * targets before this one; later ones are still "own" if valid). */
      bool ok = o != NULL && o->mode == FZ_MODE_OWN && extent_bytes(o) >= 0 && extent_bytes(o) <= FZ_TENSOR_CAP &&
                t->offset > -FZ_TENSOR_CAP / e && t->offset < FZ_TENSOR_CAP / e;
      if (ok) {
        int64_t k = o->misalign;
        t->offset = (k + t->offset * e) / align * align - k;
      } else {
        t->mode = FZ_MODE_OWN;
      }
    }
  }
  /* A placed tensor's target may itself have been placed or dropped since. */
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->mode == FZ_MODE_PLACED && c.t[t->target].mode != FZ_MODE_OWN) t->mode = FZ_MODE_OWN;
  }

  for (int i = 0; i < c.nt && !c.must_fail; i++) {
    fz_tensor *t = &c.t[i];
    if (t->mode == FZ_MODE_NULL && !t->p->nullable && (t->extent > 0 || t->extent == FZ_OVER)) {
      c.must_fail = true;
      snprintf(c.why, sizeof c.why, "%s is NULL with %lld elements", t->p->name, (long long)t->extent);
    }
    if (t->mode != FZ_MODE_NULL && extent_bytes(t) == FZ_OVER) {
      c.must_fail = true;
      snprintf(c.why, sizeof c.why, "the size of %s overflows", t->p->name);
    }
  }

  /* Storages: one per own or dummy tensor; placed tensors join their
   * target's.  Byte ranges relative to an aligned address; the owner starts
   * `misalign` bytes after it. */
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->mode != FZ_MODE_OWN) t->misalign = 0;
    if (t->mode != FZ_MODE_OWN && t->mode != FZ_MODE_DUMMY) continue;
    t->bytes = t->mode == FZ_MODE_DUMMY ? FZ_DUMMY : (size_t)extent_bytes(t);
    t->storage = c.ns;
    fz_storage *s = &c.s[c.ns++];
    s->lo = 0;
    s->hi = t->misalign + (int64_t)t->bytes;
  }
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->mode != FZ_MODE_PLACED) continue;
    t->bytes = (size_t)extent_bytes(t);
    t->storage = c.t[t->target].storage;
    fz_storage *s = &c.s[t->storage];
    int64_t pos = c.t[t->target].misalign + t->offset;
    if (pos < s->lo) s->lo = pos;
    if (pos + (int64_t)t->bytes > s->hi) s->hi = pos + (int64_t)t->bytes;
  }
  for (int k = 0; k < c.ns; k++) {
    fz_storage *s = &c.s[k];
    int64_t shift = (-s->lo + 3) / 4 * 4;
    s->size = (size_t)(shift + s->hi);
    s->mem = (unsigned char *)malloc(s->size > 0 ? s->size : 0);
    if (s->mem == NULL && s->size > 0) abort();
    if (s->mem == NULL) s->mem = (unsigned char *)malloc(1); /* malloc(0) may give NULL */
    s->lo = shift; /* from now: the aligned address's offset inside mem */
  }
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->storage < 0) continue;
    fz_storage *s = &c.s[t->storage];
    t->at = (size_t)(s->lo + (t->mode == FZ_MODE_PLACED ? c.t[t->target].misalign + t->offset : t->misalign));
    t->ptr = s->mem + t->at;
    if (t->p->role != FZ_IN) s->has_output = true;
  }

  /* Contents: inputs, and outputs with a buffer of their own (stale data). */
  for (int i = 0; i < c.nt; i++) {
    fz_tensor *t = &c.t[i];
    if (t->storage < 0) continue;
    if (t->p->role == FZ_OUT && t->mode == FZ_MODE_PLACED) continue;
    fill(in, t);
  }

  /* Overlap: an output or inout may be exactly an input of its alias list;
   * any other overlap with another tensor is invalid. */
  for (int i = 0; i < c.nt && !c.must_fail; i++) {
    fz_tensor *o = &c.t[i];
    if (o->p->role == FZ_IN || o->ptr == NULL || o->mode == FZ_MODE_DUMMY || o->bytes == 0) continue;
    for (int j = 0; j < c.nt; j++) {
      fz_tensor *x = &c.t[j];
      if (j == i || x->ptr == NULL || x->mode == FZ_MODE_DUMMY || x->bytes == 0) continue;
      uintptr_t a0 = (uintptr_t)o->ptr, a1 = a0 + o->bytes, b0 = (uintptr_t)x->ptr, b1 = b0 + x->bytes;
      if (a0 >= b1 || b0 >= a1) continue;
      bool exact = a0 == b0 && a1 == b1;
      bool listed = false;
      for (int k = 0; k < o->p->nalias; k++) listed |= strcmp(o->p->alias[k], x->p->name) == 0;
      if (exact && listed && x->p->role == FZ_IN) continue;
      c.must_fail = true;
      snprintf(c.why, sizeof c.why, "%s overlaps %s", o->p->name, x->p->name);
      break;
    }
  }

  if ((!c.must_fail && c.work > FZ_WORK_CAP) || (!known_defects && fz_known_defect(&c) != NULL)) {
    free_call(&c);
    return;
  }

  for (int k = 0; k < c.ns; k++) {
    c.s[k].before = (unsigned char *)malloc(c.s[k].size + 1);
    if (c.s[k].before == NULL) abort();
    memcpy(c.s[k].before, c.s[k].mem, c.s[k].size);
  }

  current_step = "call";
  if (verbose) {
    fprintf(stderr, "fuzz: %s on %s%s", spec->fn, ctx == NULL ? "NULL" : ctx == ctx_one ? "1 thread" : "3 threads",
            rerun ? " (and again on the other)" : "");
    describe(&c);
  }
  kb_status st = spec->call(&c, ctx);
  if (!allowed_status(st)) fz_fail(&c, "undocumented status %s (%d)", kb_status_string(st), (int)st);
  if (c.must_fail && st == KB_STATUS_OK) fz_fail(&c, "returned OK");
  check_message(&c, ctx, st);
  for (int k = 0; k < c.ns; k++) {
    fz_storage *s = &c.s[k];
    if ((st != KB_STATUS_OK || !s->has_output) && memcmp(s->mem, s->before, s->size) != 0) {
      const char *names = "";
      for (int i = 0; i < c.nt; i++)
        if (c.t[i].storage == k) names = c.t[i].p->name;
      fz_fail(&c, "%s, and the buffer of %s changed", kb_status_string(st),
              names);
    }
  }
  if (st != KB_STATUS_OK) {
    free_call(&c);
    return;
  }
  if (spec->post != NULL) {
    current_step = "postcondition";
    spec->post(&c);
  }

  if (rerun) {
    current_step = "rerun on another thread count";
    kb_context *other = ctx == ctx_three ? ctx_one : ctx_three;
    for (int k = 0; k < c.ns; k++) {
      fz_storage *s = &c.s[k];
      s->result = (unsigned char *)malloc(s->size + 1);
      if (s->result == NULL) abort();
      memcpy(s->result, s->mem, s->size);
      memcpy(s->mem, s->before, s->size);
    }
    kb_status st2 = spec->call(&c, other);
    if (st2 != KB_STATUS_OK)
      fz_fail(&c, "OK with %lld thread(s) but %s with %lld: %s", (long long)kb_context_num_threads(ctx),
              kb_status_string(st2), (long long)kb_context_num_threads(other), kb_context_last_error(other));
    for (int k = 0; k < c.ns; k++)
      if (memcmp(c.s[k].result, c.s[k].mem, c.s[k].size) != 0)
        fz_fail(&c, "the outputs differ between %lld and %lld threads", (long long)kb_context_num_threads(ctx),
                (long long)kb_context_num_threads(other));
  }
  free_call(&c);
}

/* ---- entry ---- */

#define FZ_MAX_SPECS 96

int fz_run(const char *family, const uint8_t *data, size_t size) {
  static const fz_spec *mine[FZ_MAX_SPECS];
  static fz_param params[FZ_MAX_SPECS][FZ_MAX_PARAMS];
  static int nparams[FZ_MAX_SPECS];
  static int n = -1;
  if (n < 0) {
    n = 0;
    for (int i = 0; i < fz_nspecs; i++) {
      if (strcmp(fz_specs[i].family, family) != 0) continue;
      if (n == FZ_MAX_SPECS) abort();
      mine[n] = &fz_specs[i];
      nparams[n] = parse_sig(&fz_specs[i], params[n]);
      n++;
    }
    if (n == 0) {
      fprintf(stderr, "fuzz: no entry point in family %s\n", family);
      abort();
    }
    init_contexts();
    const char *v = getenv("KB_FUZZ_VERBOSE");
    verbose = v != NULL && v[0] == '1';
    const char *k = getenv("KB_FUZZ_KNOWN_DEFECTS");
    known_defects = k != NULL && k[0] == '1';
  }
  fz_in in = {data, size, 0};
  int which = rd8(&in) % n;
  run_call(mine[which], params[which], nparams[which], &in);
  return 0;
}
