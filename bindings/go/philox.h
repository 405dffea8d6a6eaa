/* vendored by tools/vendor_c.py from kernels/cpu/philox.h; do not edit */
/* philox.h - the Philox4x32-10 counter-based generator (Salmon, Moraes, Dror
 * and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11), used by
 * the sampling kernels.  Internal to kernels/cpu. */
#ifndef KB_CPU_PHILOX_H
#define KB_CPU_PHILOX_H

#include <stdint.h>

/* out = Philox4x32 with 10 rounds applied to counter ctr under key. */
void kb_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The sampling kernels' uniform for one row: key {seed lo, seed hi}, counter
 * {row lo, row hi, 0, 0}, u = (word 0 >> 8) * 2^-24, in [0, 1). */
double kb_philox_uniform(uint64_t seed, uint64_t row);

#endif /* KB_CPU_PHILOX_H */
