/*
 * backend.h - the runner's --backend modes other than plain CPU.
 *
 *   cpu          host memory on a CPU context (the original runner)
 *   cpu-buffers  every tensor staged into kb_buffers of a CPU context (host
 *                buffers run the CPU kernels: results must be bit-identical)
 *   cuda         every tensor staged into kb_buffers of a CUDA context
 *
 * In the buffer modes each call runs twice: on a CPU context with host
 * memory (the reference) and on the tested context with buffers.  The
 * tested run's outputs are downloaded into the call's host storage, so the
 * golden metric and the hashes are computed as in cpu mode.
 */
#ifndef KB_CONFORMANCE_BACKEND_H
#define KB_CONFORMANCE_BACKEND_H

#include <stddef.h>

#include "npy.h"
#include "runner.h"

enum mode { MODE_CPU = 0, MODE_CPU_BUFFERS = 1, MODE_CUDA = 2 };

/* The result of one comparison with the CPU run of the same call. */
struct versus {
  kb_status status; /* the tested run's status */
  bool ok;          /* same status as the CPU, every output within the rule */
  double worst;     /* largest difference relative to the rule (0: identical) */
  char rule[96];    /* "bitwise", "exact rounding of the CPU result", a docs/cuda.md row */
  char why[512];    /* the first problem, "" when ok */
};

struct staged_result {
  kb_status cpu_status;
  double cpu_max_ulp;          /* the CPU run against the golden values */
  struct versus f32;           /* the case itself */
  int nlowp;                   /* 0, or 2 when the kernel has bf16/f16 variants */
  struct versus lowp[2];       /* kb_<kernel>_bf16, kb_<kernel>_f16 */
};

/* Golden case c, outputs already allocated in host storage: CPU run on ref,
 * staged run on ctx, reduced-precision variants.  Returns -1 (message in
 * err) when the runner itself failed (staging, unknown kernel). */
int staged_golden(kb_context *ctx, kb_context *ref, enum mode mode, struct call *c, struct npy_array *want,
                  struct staged_result *r, char *err, size_t err_len);

/* Bad-input case c, set up in host storage: status and message of the CPU
 * run on ref and of the staged run on ctx; the tested run's outputs end up in
 * host storage for the "untouched" check. */
int staged_bad(kb_context *ctx, kb_context *ref, struct call *c, kb_status *st, char *msg, size_t msg_len,
               kb_status *cpu_st, char *cpu_msg, size_t cpu_msg_len, char *err, size_t err_len);

/* The golden metric of docs/conformance.md over c's outputs (runner.c). */
double golden_max_error(struct call *c, const struct npy_array *want);

#endif /* KB_CONFORMANCE_BACKEND_H */
