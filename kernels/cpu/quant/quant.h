/* quant.h - GGML's Q8_0 and Q4_0 block quantization formats, bit-identical
 * to ggml's reference C code (quantize_row_q8_0_ref, quantize_row_q4_0_ref,
 * dequantize_row_q8_0, dequantize_row_q4_0 in ggml-quants.c), so that
 * tensors read from or written to GGUF files mean the same numbers here as
 * in llama.cpp.  Internal to kernels/cpu; README.md beside this file has the
 * block layouts and where the test's golden data comes from.
 *
 * A row of n floats (n a multiple of KB_QK) is n / KB_QK blocks, each stored
 * as a little-endian binary16 scale followed by the quantized values, with no
 * padding: blocks are 34 or 18 bytes, so a block is generally not aligned;
 * the code accesses them byte by byte (the scale assembled from its two
 * bytes), never through a struct or a wider pointer, which also makes the
 * layout independent of the host's byte order.
 *
 * The functions are pure: they read x, write y, allocate nothing and touch no
 * global state.  x and y must not overlap.  A partial trailing block (n not a
 * multiple of KB_QK) is neither read nor written; callers validate n.
 *
 * Quantizing a row that kb__quant_check_row rejects (NaN, infinity, a scale
 * beyond binary16's range) has no undefined behaviour and is deterministic,
 * but its bytes are not part of the contract: ggml's own output there
 * depends on the platform (this code gives what ggml gives on x86-64).
 *
 * Bit-identity relies on the library's -ffp-contract=off: fusing Q4_0's
 * x * id + 8.5f into one fma changes a code now and then (the goldens
 * include such an element). */
#ifndef KB_CPU_QUANT_H
#define KB_CPU_QUANT_H

#include <stdint.h>

/* Elements per block, for both formats (ggml's QK8_0 and QK4_0). */
#define KB_QK 32

/* Bytes per Q8_0 block: f16 scale d, then int8 qs[32]; element j is d * qs[j]. */
#define KB_Q8_0_BLOCK_BYTES 34

/* Bytes per Q4_0 block: f16 scale d, then uint8 qs[16]; byte j holds element
 * j in its low nibble and element j + 16 in its high nibble, each as an
 * unsigned 4-bit q meaning d * (q - 8). */
#define KB_Q4_0_BLOCK_BYTES 18

/* ggml's type numbers (enum ggml_type), the `type` of kb__quant_check_row;
 * the same numbers appear in GGUF files. */
#define KB_QTYPE_Q4_0 2
#define KB_QTYPE_Q8_0 8

/* Quantizes n floats of x into n / KB_QK Q8_0 blocks at y.  Per block:
 * d = max|x| / 127 in float, id = d != 0 ? 1 / d : 0, qs[j] = roundf(x[j] *
 * id) (half away from zero), and the stored scale is d rounded to the
 * nearest binary16 (ties to even).  The integers come from the float d, not
 * from the rounded one, as in ggml. */
void kb__quantize_row_q8_0(const float *x, void *y, int64_t n);

/* Quantizes n floats of x into n / KB_QK Q4_0 blocks at y.  Per block: max
 * is the first element of largest magnitude (+0.0 when every element is
 * zero: ggml starts its search from +0.0 and only a strictly larger
 * magnitude replaces it, so an all-zero block always stores d = -0.0);
 * d = max / -8, id = d != 0 ? 1 / d : 0, q = min(15, trunc(x * id + 8.5f))
 * (so the max element maps to 0, the one value of range [-8, 7] that has no
 * positive partner), and the stored scale is d rounded to binary16. */
void kb__quantize_row_q4_0(const float *x, void *y, int64_t n);

/* Expands n / KB_QK Q8_0 blocks at x into n floats at y: y[j] = d * qs[j]
 * with d the widened binary16 scale.  The product is exact (an 8-bit integer
 * times an 11-bit significand), so the result does not depend on rounding. */
void kb__dequantize_row_q8_0(const void *x, float *y, int64_t n);

/* Expands n / KB_QK Q4_0 blocks at x into n floats at y: y[j] = d * (q - 8)
 * with q the low nibble of byte j for j < 16 and the high nibble of byte
 * j - 16 otherwise; exact like Q8_0's. */
void kb__dequantize_row_q4_0(const void *x, float *y, int64_t n);

/* Whether the n floats of x can be quantized to `type` (KB_QTYPE_Q4_0 or
 * KB_QTYPE_Q8_0) with a meaningful result.  Returns -1 when they can; else
 * the index of the element that prevents it, in the first block that has
 * one: the block's first NaN or infinity when it has any, otherwise (its
 * stored scale would be infinite: d rounds to binary16 infinity, i.e.
 * |d| >= 65520) its first element of largest magnitude, the one the scale is
 * derived from.  Blocks whose scale rounds to binary16 zero are accepted:
 * they dequantize to zeros, as in ggml.  An unknown type returns 0, so it
 * never reads as valid.  Callers check before quantizing and report the
 * index. */
int64_t kb__quant_check_row(int type, const float *x, int64_t n);

#endif /* KB_CPU_QUANT_H */
