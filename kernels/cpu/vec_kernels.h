/* vec_kernels.h - the instruction-set-specific pieces of the memory-bound
 * kernels (elementwise, row-wise) and of the vector math layer, one table
 * per level (vec_scalar.c, vec_avx2.c, vec_avx512.c), driven by the kernel
 * files (activation.c, softmax.c, ...).  Internal to kernels/cpu.
 *
 * Every entry computes the same bits on every level (the scalar level is
 * the reference), and what it computes for an element or a row never
 * depends on where a thread's range starts or ends. */
#ifndef KB_CPU_VEC_KERNELS_H
#define KB_CPU_VEC_KERNELS_H

#include <stdint.h>

/* The functions of the math layer (vmath.h), as array entries. */
enum kb_vm_fn { KB_VM_EXP = 0, KB_VM_FN_COUNT };

/* y[i] = f(x[i]) for i < n (any n >= 0; y may be x). */
typedef void (*kb_vm_array_fn)(int64_t n, const float *x, float *y);

struct kb_vec_ops {
  kb_vm_array_fn math[KB_VM_FN_COUNT];
};

/* The tables of each level (vec_<isa>.c).  The vector ones exist only where
 * simd.h says the compiler can build them. */
extern const struct kb_vec_ops kb__vec_ops_scalar;
extern const struct kb_vec_ops kb__vec_ops_avx2;
extern const struct kb_vec_ops kb__vec_ops_avx512;

#endif /* KB_CPU_VEC_KERNELS_H */
