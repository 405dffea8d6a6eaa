/* dispatch.h - the one table of instruction-set-specific CPU kernels of the
 * process.  Internal to kernels/cpu.
 *
 * Each op family that has vector code keeps its pieces in files named by
 * level (<family>_scalar.c, <family>_avx2.c, <family>_avx512.c) behind a
 * struct of its own; this table holds one of each, all of the level kb__isa()
 * chose.  The scalar level is the reference: every vector level computes the
 * same bits. */
#ifndef KB_CPU_DISPATCH_H
#define KB_CPU_DISPATCH_H

#include "attention_kernels.h"
#include "gemm_kernels.h"
#include "internal.h"
#include "quant/qdot.h"
#include "vec_kernels.h"

struct kb_cpu_ops {
  kb_isa isa;
  struct kb_vec_ops vec;
  struct kb_gemm_ops gemm;
  struct kb_attn_ops attn;
  struct kb_quant_ops quant;
};

/* The table of the process's level (kb__isa()); never NULL.  One atomic
 * load after the first call. */
const struct kb_cpu_ops *kb__cpu_ops(void);

/* The table of a given level, for tests comparing levels; NULL when this
 * build or this CPU cannot run it. */
const struct kb_cpu_ops *kb__cpu_ops_for(kb_isa isa);

#endif /* KB_CPU_DISPATCH_H */
