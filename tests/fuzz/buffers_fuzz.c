/* Fuzz target: contexts and buffers, and the other context-free functions.
 * An input is a sequence of operations (create and destroy contexts and
 * buffers, upload, download, fill, copy, status strings, the CUDA queries,
 * a kernel on a buffer, kb_context_synchronize, kb_dtype_bytes) with sizes
 * and offsets chosen by the input.  Every buffer has a shadow copy kept by this
 * program, so the result of every operation is predicted exactly: a call
 * whose arguments are valid must succeed and do what the header says, an
 * invalid one must fail with a message naming an argument and change
 * nothing (the buffer, the host memory, the handle passed for output). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

#define NCTX 3     /* slot 0 is the NULL context */
#define NBUF 4
#define CAP 4096   /* largest buffer or host block made */
#define HUGE_MIN ((int64_t)1 << 48) /* sizes at least this are expected to fail */

typedef struct in_t {
  const uint8_t *d;
  size_t n, pos;
} in_t;

static uint8_t rd8(in_t *in) { return in->pos < in->n ? in->d[in->pos++] : 0; }

static uint64_t rd_raw(in_t *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)rd8(in) << (8 * i);
  return v;
}

/* A size or offset: mostly small, sometimes an edge value. */
static int64_t rd_size(in_t *in) {
  static const int64_t special[16] = {-1, -2, INT64_MIN, INT64_MAX, INT64_MAX - 1, (int64_t)1 << 62, (int64_t)1 << 48,
                                      (int64_t)1 << 32, 4095, 4096, 4097, 63, 64, 65, 1, 0};
  uint8_t b = rd8(in);
  if (b < 0xA0) return b % 80;
  if (b < 0xE0) return special[b % 16];
  if (b < 0xF0) return (int64_t)rd_raw(in, 2) % 4200;
  return (int64_t)rd_raw(in, 8);
}

static int32_t rd_i32(in_t *in) {
  static const int32_t v[12] = {0, 1, 2, 255, 256, -1, INT32_MIN, INT32_MAX, 3, 100, 128, -100};
  uint8_t b = rd8(in);
  return b < 0xF0 ? v[b % 12] : (int32_t)(uint32_t)rd_raw(in, 4);
}

typedef struct state {
  kb_context *ctx[NCTX];
  kb_buffer *buf[NBUF];
  unsigned char *shadow[NBUF];
  int64_t size[NBUF];
} state;

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

static bool is_word(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* The message of a failed call names one of `names` (space separated). */
static void check_names(const char *fn, const char *msg, const char *names) {
  size_t fl = strlen(fn);
  if (msg == NULL || strncmp(msg, fn, fl) != 0 || strncmp(msg + fl, ": ", 2) != 0)
    fail("message \"%s\" does not start with \"%s: \"", msg ? msg : "(null)", fn);
  const char *text = msg + fl + 2;
  char list[128];
  snprintf(list, sizeof list, "%s", names);
  for (char *w = strtok(list, " "); w != NULL; w = strtok(NULL, " ")) {
    size_t wl = strlen(w);
    for (const char *h = strstr(text, w); h != NULL; h = strstr(h + 1, w))
      if ((h == text || !is_word(h[-1])) && !is_word(h[wl])) return;
  }
  fail("message \"%s\" names none of: %s", msg, names);
}

/* After a call on slot ctx: the message is empty on success and names an
 * argument on failure (no message without a context). */
static void check_result(kb_context *ctx, const char *fn, kb_status st, bool valid, const char *names) {
  if (valid && st != KB_STATUS_OK)
    fail("valid call failed: %s: %s", kb_status_string(st), ctx ? kb_context_last_error(ctx) : "");
  if (!valid && st == KB_STATUS_OK) fail("invalid call returned OK");
  if (st != KB_STATUS_OK && st != KB_STATUS_INVALID_ARGUMENT) fail("undocumented status %s", kb_status_string(st));
  if (ctx == NULL) return;
  const char *msg = kb_context_last_error(ctx);
  if (st == KB_STATUS_OK) {
    if (msg == NULL || msg[0] != '\0') fail("OK but the message is \"%s\"", msg ? msg : "(null)");
  } else {
    check_names(fn, msg, names);
  }
}

static void check_buffer(const state *s, int i) {
  if (s->buf[i] == NULL) return;
  if (kb_buffer_size(s->buf[i]) != s->size[i]) fail("buffer %d has size %lld, made with %lld", i,
                                                    (long long)kb_buffer_size(s->buf[i]), (long long)s->size[i]);
  if (kb_buffer_device(s->buf[i]) != -1) fail("host buffer %d reports device %lld", i,
                                              (long long)kb_buffer_device(s->buf[i]));
  const void *data = kb_buffer_data(s->buf[i]);
  if ((data == NULL) != (s->size[i] == 0)) fail("buffer %d of %lld bytes has data %p", i, (long long)s->size[i], data);
  if (s->size[i] > 0 && memcmp(data, s->shadow[i], (size_t)s->size[i]) != 0)
    fail("buffer %d differs from what was written to it", i);
}

/* A range [offset, offset + bytes) inside a buffer of `size` bytes. */
static bool in_range(int64_t size, int64_t offset, int64_t bytes) {
  return offset >= 0 && bytes >= 0 && offset <= size && bytes <= size - offset;
}

/* Host memory for upload/download: exactly `bytes` bytes, NULL, or a range
 * of one of the buffers (upload and download allow that). */
static unsigned char *host_block(in_t *in, state *s, int64_t bytes, unsigned char **owned, bool *inside) {
  *owned = NULL;
  *inside = false;
  uint8_t m = rd8(in) % 8;
  if (m == 0) return NULL;
  if (m == 1) {
    int b = rd8(in) % NBUF;
    int64_t at = rd_size(in);
    if (s->buf[b] != NULL && bytes >= 0 && in_range(s->size[b], at, bytes) && s->size[b] > 0) {
      *inside = true;
      return (unsigned char *)kb_buffer_data(s->buf[b]) + at;
    }
  }
  if (bytes < 0 || bytes > CAP) return NULL;
  *owned = (unsigned char *)malloc(bytes > 0 ? (size_t)bytes : 1);
  if (*owned == NULL) abort();
  for (int64_t i = 0; i < bytes; i++) (*owned)[i] = (unsigned char)(rd8(in) ^ (uint8_t)i);
  return *owned;
}

/* Re-reads a buffer's contents into its shadow after an operation whose
 * effect the model does not compute (a kernel, an upload from itself). */
static void resync(state *s, int i) {
  if (s->buf[i] != NULL && s->size[i] > 0) memcpy(s->shadow[i], kb_buffer_data(s->buf[i]), (size_t)s->size[i]);
}

static void op_context_create(in_t *in, state *s) {
  op_name = "kb_context_create";
  static const int backends[7] = {0, 1, 2, -1, 3, 100, INT32_MIN};
  int slot = 1 + rd8(in) % (NCTX - 1);
  int backend = backends[rd8(in) % 7];
  int64_t threads = rd_size(in);
  bool null_out = rd8(in) % 16 == 0;
  kb_context *made = (kb_context *)(uintptr_t)0x5eed;
  kb_status st = kb_context_create((kb_backend)backend, threads, null_out ? NULL : &made);
  bool valid = !null_out && threads >= 0 && threads <= 256 && backend >= 0 && backend <= 2;
  if (st != KB_STATUS_OK) {
    if (made != (kb_context *)(uintptr_t)0x5eed) fail("failed with %s but wrote *out", kb_status_string(st));
    check_names("kb_context_create", kb_last_error(), "out num_threads backend KB_CPU_ISA CUDA");
    /* CUDA (or AUTO falling back) may be missing; KB_CPU_ISA may forbid. */
    if (valid && backend != 1 && st != KB_STATUS_UNSUPPORTED && st != KB_STATUS_INVALID_ARGUMENT)
      fail("valid call failed: %s: %s", kb_status_string(st), kb_last_error());
    if (valid && backend == 1 && st != KB_STATUS_BACKEND_UNAVAILABLE && st != KB_STATUS_DEVICE_ERROR)
      fail("CUDA context: %s: %s", kb_status_string(st), kb_last_error());
    return;
  }
  if (!valid) fail("invalid call returned OK (backend %d, threads %lld)", backend, (long long)threads);
  if (kb_last_error()[0] != '\0') fail("OK but kb_last_error() is \"%s\"", kb_last_error());
  if (kb_context_backend(made) != KB_BACKEND_CPU) { /* a GPU machine: this target fuzzes host memory */
    kb_context_destroy(made);
    return;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t want = threads == 0 ? (cpus > 0 ? cpus : 1) : threads;
  if (want > 256) want = 256;
  if (kb_context_num_threads(made) != want)
    fail("num_threads %lld, asked %lld", (long long)kb_context_num_threads(made), (long long)threads);
  if (kb_context_device(made) != -1) fail("CPU context on device %lld", (long long)kb_context_device(made));
  if (kb_context_last_error(made)[0] != '\0') fail("a new context has a message");
  kb_context_destroy(s->ctx[slot]);
  s->ctx[slot] = made;
}

static void op_buffer_create(in_t *in, state *s) {
  op_name = "kb_buffer_create";
  int slot = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  int64_t bytes = rd_size(in);
  bool null_out = rd8(in) % 16 == 0;
  if (bytes > CAP && bytes < HUGE_MIN) return; /* real but too large to fuzz quickly */
  kb_buffer *made = (kb_buffer *)(uintptr_t)0xb0f;
  kb_status st = kb_buffer_create(ctx, bytes, null_out ? NULL : &made);
  if (bytes >= HUGE_MIN && !null_out) {
    if (st != KB_STATUS_OUT_OF_MEMORY) fail("%lld bytes: %s, expected OUT_OF_MEMORY", (long long)bytes,
                                            kb_status_string(st));
    if (made != (kb_buffer *)(uintptr_t)0xb0f) fail("failed but wrote *out");
    if (ctx != NULL) check_names("kb_buffer_create", kb_context_last_error(ctx), "bytes");
    return;
  }
  check_result(ctx, "kb_buffer_create", st, !null_out && bytes >= 0, "out bytes");
  if (st != KB_STATUS_OK) {
    if (made != (kb_buffer *)(uintptr_t)0xb0f) fail("failed but wrote *out");
    return;
  }
  kb_buffer_destroy(s->buf[slot]);
  free(s->shadow[slot]);
  s->buf[slot] = made;
  s->size[slot] = bytes;
  s->shadow[slot] = (unsigned char *)malloc(bytes > 0 ? (size_t)bytes : 1);
  if (s->shadow[slot] == NULL) abort();
  /* The contents are undefined: give them a known value first. */
  int value = rd8(in);
  if (kb_buffer_fill(ctx, made, 0, bytes, value) != KB_STATUS_OK) fail("kb_buffer_fill of a new buffer failed");
  memset(s->shadow[slot], value, (size_t)bytes);
  check_buffer(s, slot);
}

static void op_buffer_destroy(in_t *in, state *s) {
  op_name = "kb_buffer_destroy";
  int slot = rd8(in) % (NBUF + 1);
  if (slot == NBUF) {
    kb_buffer_destroy(NULL);
    return;
  }
  kb_buffer_destroy(s->buf[slot]);
  free(s->shadow[slot]);
  s->buf[slot] = NULL;
  s->shadow[slot] = NULL;
  s->size[slot] = 0;
}

static void op_upload(in_t *in, state *s) {
  op_name = "kb_buffer_upload";
  int b = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  int64_t offset = rd_size(in), bytes = rd_size(in);
  unsigned char *owned;
  bool inside;
  unsigned char *src = host_block(in, s, bytes, &owned, &inside);
  unsigned char *copy = NULL;
  if (src != NULL && bytes > 0) {
    copy = (unsigned char *)malloc((size_t)bytes);
    if (copy == NULL) abort();
    memcpy(copy, src, (size_t)bytes);
  }
  kb_buffer *buf = s->buf[b];
  kb_status st = kb_buffer_upload(ctx, buf, offset, bytes, src);
  bool valid = buf != NULL && in_range(s->size[b], offset, bytes) && (src != NULL || bytes == 0);
  check_result(ctx, "kb_buffer_upload", st, valid, "buf offset bytes src");
  if (st == KB_STATUS_OK && bytes > 0) memcpy(s->shadow[b] + offset, copy, (size_t)bytes);
  for (int i = 0; i < NBUF; i++) check_buffer(s, i);
  if (owned != NULL && copy != NULL && memcmp(owned, copy, (size_t)bytes) != 0) fail("src was modified");
  free(copy);
  free(owned);
}

static void op_download(in_t *in, state *s) {
  op_name = "kb_buffer_download";
  int b = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  int64_t offset = rd_size(in), bytes = rd_size(in);
  unsigned char *owned;
  bool inside;
  unsigned char *dst = host_block(in, s, bytes, &owned, &inside);
  unsigned char *before = NULL;
  if (owned != NULL && bytes > 0) {
    before = (unsigned char *)malloc((size_t)bytes);
    if (before == NULL) abort();
    memcpy(before, owned, (size_t)bytes);
  }
  kb_buffer *buf = s->buf[b];
  kb_status st = kb_buffer_download(ctx, buf, offset, bytes, dst);
  bool valid = buf != NULL && in_range(s->size[b], offset, bytes) && (dst != NULL || bytes == 0);
  check_result(ctx, "kb_buffer_download", st, valid, "buf offset bytes dst");
  if (st == KB_STATUS_OK && bytes > 0) {
    if (inside) {
      /* dst lies in a buffer: that buffer now holds the downloaded bytes. */
      for (int i = 0; i < NBUF; i++) resync(s, i);
    } else if (memcmp(dst, s->shadow[b] + offset, (size_t)bytes) != 0) {
      fail("downloaded bytes differ from the buffer's contents");
    }
  } else if (before != NULL && memcmp(owned, before, (size_t)bytes) != 0) {
    fail("failed but wrote dst");
  }
  for (int i = 0; i < NBUF; i++) check_buffer(s, i);
  free(before);
  free(owned);
}

static void op_fill(in_t *in, state *s) {
  op_name = "kb_buffer_fill";
  int b = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  int64_t offset = rd_size(in), bytes = rd_size(in);
  int32_t value = rd_i32(in);
  kb_buffer *buf = s->buf[b];
  kb_status st = kb_buffer_fill(ctx, buf, offset, bytes, value);
  bool valid = buf != NULL && in_range(s->size[b], offset, bytes) && value >= 0 && value <= 255;
  check_result(ctx, "kb_buffer_fill", st, valid, "buf offset bytes value");
  if (st == KB_STATUS_OK && bytes > 0) memset(s->shadow[b] + offset, value, (size_t)bytes);
  for (int i = 0; i < NBUF; i++) check_buffer(s, i);
}

static void op_copy(in_t *in, state *s) {
  op_name = "kb_buffer_copy";
  int d = rd8(in) % NBUF, r = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  int64_t doff = rd_size(in), soff = rd_size(in), bytes = rd_size(in);
  kb_buffer *dst = s->buf[d], *src = s->buf[r];
  kb_status st = kb_buffer_copy(ctx, dst, doff, src, soff, bytes);
  bool valid = dst != NULL && src != NULL && in_range(s->size[d], doff, bytes) && in_range(s->size[r], soff, bytes);
  if (valid && dst == src && bytes > 0 && doff != soff && doff < soff + bytes && soff < doff + bytes) valid = false;
  check_result(ctx, "kb_buffer_copy", st, valid, "dst src dst_offset src_offset bytes");
  if (st == KB_STATUS_OK && bytes > 0) memmove(s->shadow[d] + doff, s->shadow[r] + soff, (size_t)bytes);
  for (int i = 0; i < NBUF; i++) check_buffer(s, i);
}

static void op_status_string(in_t *in) {
  op_name = "kb_status_string";
  int32_t v = rd_i32(in) ^ (int32_t)(rd8(in) % 12);
  const char *name = kb_status_string((kb_status)v);
  if (name == NULL) fail("NULL for %d", (int)v);
  static const char *const known[9] = {"OK", "INVALID_ARGUMENT", "SHAPE_MISMATCH", "UNSUPPORTED", "OUT_OF_MEMORY",
                                       "BACKEND_UNAVAILABLE", "DEVICE_ERROR", "INTERNAL", "DEVICE_LOST"};
  const char *want = v >= 0 && v < 9 ? known[v] : "UNKNOWN";
  if (strcmp(name, want) != 0) fail("%d is \"%s\", expected \"%s\"", (int)v, name, want);
}

static void op_cuda(in_t *in) {
  op_name = "kb_cuda_*";
  uint8_t which = rd8(in) % 6;
  int64_t device = rd_size(in);
  kb_status st;
  const char *fn;
  int64_t value = 12345;
  char name[64];
  memset(name, 'z', sizeof name);
  int64_t cap = rd_size(in);
  bool null_out = rd8(in) % 8 == 0;
  switch (which) {
    case 0:
      fn = "kb_cuda_device_count";
      st = kb_cuda_device_count(null_out ? NULL : &value);
      break;
    case 1:
      fn = "kb_cuda_device_name";
      if (cap > (int64_t)sizeof name) cap = (int64_t)sizeof name;
      st = kb_cuda_device_name(device, null_out ? NULL : name, cap);
      break;
    case 2:
      fn = "kb_cuda_device_compute_capability";
      st = kb_cuda_device_compute_capability(device, null_out ? NULL : &value);
      break;
    case 3:
      fn = "kb_cuda_device_total_memory";
      st = kb_cuda_device_total_memory(device, null_out ? NULL : &value);
      break;
    case 4:
      fn = "kb_cuda_device_free_memory";
      st = kb_cuda_device_free_memory(device, null_out ? NULL : &value);
      break;
    default: {
      fn = "kb_context_create_cuda";
      kb_context *made = (kb_context *)(uintptr_t)0x5eed;
      st = kb_context_create_cuda(device, null_out ? NULL : &made);
      if (st == KB_STATUS_OK) {
        kb_context_destroy(made);
      } else if (made != (kb_context *)(uintptr_t)0x5eed) {
        fail("%s failed but wrote *out", fn);
      }
      break;
    }
  }
  if (st != KB_STATUS_OK) {
    if (st != KB_STATUS_BACKEND_UNAVAILABLE && st != KB_STATUS_INVALID_ARGUMENT && st != KB_STATUS_DEVICE_ERROR)
      fail("%s: undocumented status %s", fn, kb_status_string(st));
    const char *msg = kb_last_error();
    if (msg == NULL || strncmp(msg, fn, strlen(fn)) != 0) fail("%s: message \"%s\"", fn, msg ? msg : "(null)");
    if (value != 12345) fail("%s failed but wrote its output", fn);
    for (size_t i = 0; i < sizeof name; i++)
      if (name[i] != 'z') fail("%s failed but wrote name", fn);
  } else if (null_out && which != 1 && which != 5) {
    fail("%s: OK with a NULL output", fn);
  }
}

/* kb_dtype_bytes, context-free like the CUDA queries, with any type, sizes
 * and a NULL output, against the header's table: a valid call gives rows *
 * cols * 4 (F32), * 2 (F16, BF16), rows * cols / 32 * 34 (Q8_0) or * 18
 * (Q4_0); a count that overflows is OUT_OF_MEMORY, anything else invalid
 * INVALID_ARGUMENT, and a failure names an argument in kb_last_error and
 * leaves *bytes alone. */
static void op_dtype_bytes(in_t *in) {
  op_name = "kb_dtype_bytes";
  static const int32_t types[8] = {0, 1, 2, 8, 30, 3, 7, -1}; /* the five kb_dtype values, then three others */
  uint8_t tb = rd8(in);
  int32_t type = tb < 0xF0 ? types[tb % 8] : rd_i32(in);
  int64_t rows = rd_size(in), cols = rd_size(in);
  /* Whole blocks of 32 most of the time, so that block formats succeed. */
  if (rd8(in) % 4 != 0 && cols > -((int64_t)1 << 57) && cols < ((int64_t)1 << 57)) cols *= 32;
  bool null_out = rd8(in) % 16 == 0;
  int64_t unit = 0, per = 1;
  switch (type) {
    case 0:
      unit = 4;
      break;
    case 1:
    case 30:
      unit = 2;
      break;
    case 8:
      unit = 34, per = 32;
      break;
    case 2:
      unit = 18, per = 32;
      break;
    default:
      break;
  }
  bool valid = !null_out && rows >= 0 && cols >= 0 && unit != 0 && cols % per == 0, over = false;
  int64_t want = 0;
  if (valid && rows != 0 && cols / per != 0) {
    over = rows > INT64_MAX / (cols / per) || rows * (cols / per) > INT64_MAX / unit;
    if (!over) want = rows * (cols / per) * unit;
  }
  int64_t bytes = 12345;
  kb_status st = kb_dtype_bytes((kb_dtype)type, rows, cols, null_out ? NULL : &bytes);
  if (valid && !over) {
    if (st != KB_STATUS_OK) fail("valid call (type %d, rows %lld, cols %lld) failed: %s: %s", (int)type,
                                 (long long)rows, (long long)cols, kb_status_string(st), kb_last_error());
    if (bytes != want) fail("type %d, rows %lld, cols %lld: %lld bytes, expected %lld", (int)type, (long long)rows,
                            (long long)cols, (long long)bytes, (long long)want);
    if (kb_last_error()[0] != '\0') fail("OK but kb_last_error() is \"%s\"", kb_last_error());
    return;
  }
  kb_status expect = valid ? KB_STATUS_OUT_OF_MEMORY : KB_STATUS_INVALID_ARGUMENT;
  if (st != expect)
    fail("type %d, rows %lld, cols %lld%s: %s, expected %s", (int)type, (long long)rows, (long long)cols,
         null_out ? ", bytes NULL" : "", kb_status_string(st), kb_status_string(expect));
  if (bytes != 12345) fail("failed but wrote *bytes");
  /* The overflow message names rows and cols too (D9, fixed). */
  check_names("kb_dtype_bytes", kb_last_error(), "type rows cols bytes");
}

/* A kernel on a buffer's memory (the pool of a context with threads starts
 * and runs here); the model re-reads the buffer afterwards.  Then
 * kb_context_synchronize, which on a CPU context (or NULL) has nothing to
 * wait for: OK, and no message. */
static void op_kernel(in_t *in, state *s) {
  op_name = "kb_scale on a buffer";
  int b = rd8(in) % NBUF;
  kb_context *ctx = s->ctx[rd8(in) % NCTX];
  if (s->buf[b] != NULL) {
    int64_t n = s->size[b] / (int64_t)sizeof(float);
    float *data = (float *)kb_buffer_data(s->buf[b]);
    kb_status st = kb_scale(ctx, n, 0.5f, data, data);
    if (st != KB_STATUS_OK) fail("%s", kb_status_string(st));
    resync(s, b);
  }
  op_name = "kb_context_synchronize";
  check_result(ctx, "kb_context_synchronize", kb_context_synchronize(ctx), true, "ctx");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  in_t in = {data, size, 0};
  state s;
  memset(&s, 0, sizeof s);
  for (int step = 0; step < 24 && in.pos < in.n; step++) {
    switch (rd8(&in) % 12) {
      case 0:
        op_context_create(&in, &s);
        break;
      case 1: {
        int slot = 1 + rd8(&in) % (NCTX - 1);
        kb_context_destroy(s.ctx[slot]);
        s.ctx[slot] = NULL;
        break;
      }
      case 2:
        op_buffer_create(&in, &s);
        break;
      case 3:
        op_buffer_destroy(&in, &s);
        break;
      case 4:
        op_upload(&in, &s);
        break;
      case 5:
        op_download(&in, &s);
        break;
      case 6:
        op_fill(&in, &s);
        break;
      case 7:
        op_copy(&in, &s);
        break;
      case 8:
        op_status_string(&in);
        break;
      case 9:
        op_cuda(&in);
        break;
      case 10:
        op_kernel(&in, &s);
        break;
      default:
        op_dtype_bytes(&in);
        break;
    }
  }
  /* Buffers outlive the context that made them. */
  for (int i = 0; i < NCTX; i++) kb_context_destroy(s.ctx[i]);
  for (int i = 0; i < NBUF; i++) {
    check_buffer(&s, i);
    kb_buffer_destroy(s.buf[i]);
    free(s.shadow[i]);
  }
  return 0;
}
