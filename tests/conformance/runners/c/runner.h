/*
 * runner.h - what the C conformance runner's files share: one kernel call
 * read from the corpus (struct call) and the dispatchers that turn it into a
 * public API call.
 */
#ifndef KB_CONFORMANCE_RUNNER_H
#define KB_CONFORMANCE_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "kernelbridge.h"

#define MAX_ITEMS 24
#define NAME_LEN 64

/* u8: raw bytes of a tensor in a storage format (kb_dtype). */
/* DT_U16: bfloat16 / float16 bit patterns (the 16-bit decoding kernels). */
enum dtype { DT_F32 = 0, DT_I32 = 1, DT_U8 = 2, DT_U16 = 3 };

/* Bytes per element of a dtype. */
int64_t dtype_size(enum dtype dt);

/* A tensor either owns host storage (owned != NULL, alloc units of 4 bytes:
 * elements for f32 / i32, a u8 tensor's bytes rounded up) or is a view: an
 * alias or overlap pointing into another tensor's storage (owned == NULL,
 * ptr != NULL, at a multiple of 4 bytes from its start), or absent (ptr ==
 * NULL).  Counting storage in 4-byte units lets the buffer backends and the
 * bf16 / f16 staging treat every storage alike. */
struct tensor {
  char name[NAME_LEN];
  enum dtype dtype;
  void *ptr;          /* what the kernel gets (NULL for a null tensor) */
  void *owned;        /* storage to free */
  int64_t alloc;      /* 4-byte units allocated in owned */
  int64_t count;      /* elements of dtype visible through ptr */
  void *before;       /* copy of the contents before the call (bad inputs) */
  char expected[512]; /* golden: expected file, "" when the tensor is not an output */
};

struct call {
  char name[256];
  char kernel[NAME_LEN];
  double tol_ulp, tol_abs;
  char expected_status[NAME_LEN];
  char requires[256];
  int ndims, nflags, nscalars, ntensors;
  char dim_names[MAX_ITEMS][NAME_LEN];
  int64_t dims[MAX_ITEMS];
  char flag_names[MAX_ITEMS][NAME_LEN];
  int flags[MAX_ITEMS];
  char scalar_names[MAX_ITEMS][NAME_LEN];
  char scalars[MAX_ITEMS][NAME_LEN];
  struct tensor tensors[MAX_ITEMS];
  char missing[NAME_LEN]; /* first parameter the dispatcher could not find */
};

/* Argument lookup by name (dispatch.c); a missing name is recorded in
 * c->missing and gives 0 / false / NULL. */
int64_t call_dim(struct call *c, const char *name);
bool call_flag(struct call *c, const char *name);
float call_scalar_f32(struct call *c, const char *name);
struct tensor *find_tensor(struct call *c, const char *name);

/* Calls c->kernel (float32 / int32 form) with the arguments in c.  Returns 0
 * and the status, or -1 for an unknown kernel. */
int dispatch(kb_context *ctx, struct call *c, kb_status *st);

/* Reduced-precision variants (kb_<kernel>_bf16 / _f16) of the kernels that
 * have them: every tensor pointer of c then points at 16-bit data. */
enum lowp { LOWP_BF16 = 0, LOWP_F16 = 1 };
bool has_lowp_variant(const char *kernel);
int dispatch_lowp(kb_context *ctx, struct call *c, enum lowp dt, kb_status *st);
const char *lowp_name(enum lowp dt);

#endif /* KB_CONFORMANCE_RUNNER_H */
