/*
 * fuzz.h - the engine shared by kernelbridge's fuzz targets (tests/fuzz).
 *
 * A fuzz input describes one call of one entry point: which entry point of
 * the target's family, which context (NULL, one thread, three threads), and
 * then every parameter in the order of its C declaration (sizes, flags,
 * scalars, and for each tensor how it is passed: its own buffer, NULL, or
 * placed inside another tensor's buffer at some offset; a byte tensor's own
 * buffer may start 0 to 3 bytes past an aligned address), followed by the
 * contents of the tensors.  The encoding is described in docs/reliability.md
 * and implemented by fz_run (fuzz.c) and tests/fuzz/make_seeds.py.
 *
 * Every tensor that is passed gets a heap buffer of exactly its declared
 * size, so AddressSanitizer's red zones catch any access past its end.  The
 * engine then checks what the header promises for every call:
 *   - the status is OK or one of the documented error statuses;
 *   - a call that cannot be valid (a negative size, a non-empty tensor that
 *     is NULL, an output partially overlapping another tensor, a size that
 *     overflows) fails;
 *   - on a context, a failure leaves a message "<function>: ..." naming one
 *     of the function's parameters, and a success an empty message;
 *   - a failure writes nothing (every buffer is compared with a copy made
 *     before the call); a success modifies no buffer that holds only inputs;
 *   - a success gives bit-identical outputs on a context with another
 *     thread count (when the input asks for the comparison);
 *   - per entry point: postconditions such as gemm's untouched row padding.
 * A violated check prints the call and aborts (a crash for libFuzzer, a
 * failed test for the replay).
 */
#ifndef KB_FUZZ_H
#define KB_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelbridge.h"

/* libFuzzer's entry point; each target defines it (one line: fz_run). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Element types of tensors.  FZ_U8 is raw bytes (a weight in a storage
 * format, `void *`): its extent counts bytes. */
enum { FZ_F32 = 0, FZ_BF16 = 1, FZ_F16 = 2, FZ_I32 = 3, FZ_U8 = 4 };
/* Tensor roles. */
enum { FZ_IN = 0, FZ_OUT = 1, FZ_INOUT = 2 };
/* Scalar types.  FZ_S_DTYPE is an int32 holding a kb_dtype: decoded with
 * a palette of its values (0, 1, 2, 8, 30) and of values next to them, so
 * that the non-contiguous enum is hit without raw bytes. */
enum { FZ_S_F32 = 0, FZ_S_I32 = 1, FZ_S_I64 = 2, FZ_S_U64 = 3, FZ_S_DTYPE = 4 };

/* Extents that are not a number of elements. */
#define FZ_NEG (-1)        /* a size involved is negative */
#define FZ_OVER INT64_MAX  /* the element count (or its bytes) overflows */

#define FZ_MAX_PARAMS 24
#define FZ_MAX_TENSORS 8
#define FZ_NAME 24

/* One parameter of an entry point (after ctx), parsed from a spec's
 * signature string. */
typedef struct fz_param {
  char kind; /* 'd' size (dim), 'f' flag, 's' scalar, 't' tensor */
  char name[FZ_NAME];
  int type;  /* scalar: FZ_S_*; tensor: FZ_F32 ... FZ_U8 */
  int role;  /* tensor: FZ_IN, FZ_OUT, FZ_INOUT */
  bool nullable;
  int nalias;
  char alias[2][FZ_NAME]; /* inputs an output may be exactly */
} fz_param;

struct fz_call;

/*
 * One entry point.  sig lists the parameters after ctx in C order, separated
 * by spaces:
 *   d:NAME                  a size (int64_t, the header's "dim")
 *   f:NAME                  a flag (bool)
 *   s:NAME:f32|i32|i64|u64|dtype  a scalar (dtype: a kb_dtype, read as int32)
 *   t:NAME:TYPE:ROLE[:null][:alias=A[,B]]
 *                           a tensor; TYPE f32, bf16, f16, i32 or u8, or $
 *                           for the spec's float type; ROLE in, out or inout
 * shape() sets every tensor's extent (fz_extent) and may set index ranges
 * and the work estimate; call() makes the call; post() (optional) checks
 * postconditions after a successful call.
 */
typedef struct fz_spec {
  const char *family;
  const char *fn;
  const char *sig;
  int dtype; /* the float type that replaces $ */
  void (*shape)(struct fz_call *c);
  kb_status (*call)(struct fz_call *c, kb_context *ctx);
  void (*post)(struct fz_call *c);
} fz_spec;

typedef struct fz_tensor {
  const fz_param *p;
  int64_t extent; /* elements; FZ_NEG or FZ_OVER */
  int32_t lo, hi; /* int tensors: the valid range [lo, hi) the generator favours */
  int32_t extra;  /* int tensors: one more value it favours (ignore_index) */
  int mode;       /* FZ_MODE_* below */
  int target;     /* placed: index of the tensor whose buffer holds this one */
  int64_t offset; /* placed: byte offset from the target's first byte */
  int misalign;   /* own u8 buffer: bytes past a 4-byte aligned address (0..3) */
  int storage;    /* index into the call's storages, -1 for NULL */
  size_t at;      /* byte offset inside the storage */
  size_t bytes;   /* bytes the buffer has (the declared size, or a dummy's) */
  void *ptr;
} fz_tensor;

typedef struct fz_storage {
  unsigned char *mem;
  unsigned char *before; /* copy made before the call */
  unsigned char *result; /* copy of the first run's result (rerun check) */
  size_t size;
  int64_t lo, hi; /* byte range of the tensors it holds, relative to the owner */
  bool has_output;
} fz_storage;

typedef struct fz_call {
  const fz_spec *spec;
  int np;
  const fz_param *p;
  int64_t iv[FZ_MAX_PARAMS]; /* sizes, flags, integer scalars (u64 as bits) */
  float fv[FZ_MAX_PARAMS];   /* float scalars */
  int nt;
  fz_tensor t[FZ_MAX_TENSORS];
  int ns;
  fz_storage s[FZ_MAX_TENSORS];
  int64_t work;     /* multiply-adds (or elements) the call would do; shape() sets it */
  bool must_fail;   /* the call cannot be valid */
  char why[160];    /* why it must fail */
} fz_call;

/* Runs one input against the entry points of `family` (every spec whose
 * family matches). */
int fz_run(const char *family, const uint8_t *data, size_t size);

/* Accessors by parameter name (abort on an unknown name: a spec bug). */
int64_t fz_dim(const fz_call *c, const char *name);
bool fz_flag(const fz_call *c, const char *name);
float fz_f32(const fz_call *c, const char *name);
int64_t fz_int(const fz_call *c, const char *name);
uint64_t fz_u64(const fz_call *c, const char *name);
void *fz_ptr(const fz_call *c, const char *name);
fz_tensor *fz_tensor_of(fz_call *c, const char *name);

/* shape() helpers.  Products of sizes: FZ_NEG when one is negative, 0 when
 * one is 0, FZ_OVER when the product overflows. */
int64_t fz_prod(int n, const int64_t *dims);
int64_t fz_prod2(int64_t a, int64_t b);
int64_t fz_prod4(int64_t a, int64_t b, int64_t c, int64_t d);
/* A strided matrix: (rows - 1) * ld + cols elements, 0 when empty. */
int64_t fz_strided(int64_t rows, int64_t cols, int64_t ld);
/* count items of `one` elements every `stride` elements. */
int64_t fz_batched(int64_t count, int64_t stride, int64_t one);
void fz_extent(fz_call *c, const char *name, int64_t extent);
void fz_range(fz_call *c, const char *name, int32_t lo, int32_t hi, int32_t extra);

/* Post-condition helper: the bytes of tensor `name` in [from, to) (bytes
 * from its first byte) are what they were before the call. */
bool fz_unchanged(const fz_call *c, const char *name, int64_t from, int64_t to);

/* Prints the call and aborts. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
void fz_fail(const fz_call *c, const char *fmt, ...);

/* The name of a known library defect the call would hit, or NULL (specs.c). */
const char *fz_known_defect(fz_call *c);

/* Every spec, in the order of kernelbridge.h (specs.c). */
extern const fz_spec fz_specs[];
extern const int fz_nspecs;

#endif /* KB_FUZZ_H */
