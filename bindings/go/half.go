package kernelbridge

import "math"

// Reduced precision.  The bf16 and f16 kernels (SiluBF16, GemmF16, ...) take
// their tensors as []uint16 holding bit patterns:
//
//   - bfloat16: sign bit 15, exponent bits 14-7 (bias 127), fraction bits
//     6-0; the upper half of a float32, so float32 bits >> 16 truncates.
//   - IEEE 754 binary16 (float16): sign bit 15, exponent bits 14-10 (bias
//     15), fraction bits 9-0.
//
// The functions below convert as the C library does: widening is exact;
// narrowing rounds to nearest, ties to even (subnormals included), values
// beyond the largest finite one become infinities, and NaN stays NaN of the
// same sign, made quiet.

// Float32ToBF16 rounds f to the nearest bfloat16 (ties to even) and returns
// its bits.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign and top payload, set the quiet bit
		return uint16(u>>16) | 0x0040
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16ToFloat32 is the float32 value of the bfloat16 bits h (exact; a NaN is
// made quiet).
func BF16ToFloat32(h uint16) float32 {
	u := uint32(h) << 16
	if u&0x7fffffff > 0x7f800000 {
		u |= 0x00400000
	}
	return math.Float32frombits(u)
}

// Float32ToF16 rounds f to the nearest IEEE binary16 value (ties to even)
// and returns its bits.
func Float32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN: keep the top 9 payload bits, set the quiet bit
		return sign | 0x7e00 | uint16(a>>13)&0x1ff
	case a >= 0x477ff000: // >= 65520 (halfway to 2^16) rounds to infinity
		return sign | 0x7c00
	case a >= 0x38800000: // normal in binary16 (>= 2^-14): rebias, round 13 bits
		a += 0xfff + (a>>13)&1 - 112<<23
		return sign | uint16(a>>13)
	}
	// Subnormal in binary16: round(|f| * 2^24) units of 2^-24.
	e := a >> 23
	if e < 102 { // below a quarter of the smallest subnormal: zero
		return sign
	}
	m := a&0x7fffff | 0x800000
	shift := 126 - e // 14 .. 24
	q, rem, half := m>>shift, m&(1<<shift-1), uint32(1)<<(shift-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return sign | uint16(q)
}

// F16ToFloat32 is the float32 value of the binary16 bits h (exact; a NaN is
// made quiet).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp, frac := uint32(h>>10)&0x1f, uint32(h&0x3ff)
	switch exp {
	case 0x1f:
		u := sign | 0x7f800000 | frac<<13
		if frac != 0 {
			u |= 0x00400000
		}
		return math.Float32frombits(u)
	case 0: // zero or subnormal: frac * 2^-24, exact
		return math.Float32frombits(sign | math.Float32bits(float32(frac)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// Float32sToBF16 converts min(len(dst), len(src)) elements with
// Float32ToBF16 and returns that count (like copy).
func Float32sToBF16(dst []uint16, src []float32) int {
	n := minInt(len(dst), len(src))
	for i := 0; i < n; i++ {
		dst[i] = Float32ToBF16(src[i])
	}
	return n
}

// BF16sToFloat32 converts min(len(dst), len(src)) elements with
// BF16ToFloat32 and returns that count.
func BF16sToFloat32(dst []float32, src []uint16) int {
	n := minInt(len(dst), len(src))
	for i := 0; i < n; i++ {
		dst[i] = BF16ToFloat32(src[i])
	}
	return n
}

// Float32sToF16 converts min(len(dst), len(src)) elements with
// Float32ToF16 and returns that count.
func Float32sToF16(dst []uint16, src []float32) int {
	n := minInt(len(dst), len(src))
	for i := 0; i < n; i++ {
		dst[i] = Float32ToF16(src[i])
	}
	return n
}

// F16sToFloat32 converts min(len(dst), len(src)) elements with
// F16ToFloat32 and returns that count.
func F16sToFloat32(dst []float32, src []uint16) int {
	n := minInt(len(dst), len(src))
	for i := 0; i < n; i++ {
		dst[i] = F16ToFloat32(src[i])
	}
	return n
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
