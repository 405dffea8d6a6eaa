//! bfloat16 and float16 values as the `u16` bit patterns the `_bf16` and
//! `_f16` kernels take.
//!
//! Hand-written; no dependency (the `half` crate is not needed).
//!
//! - **bfloat16**: 1 sign bit, 8 exponent bits, 7 fraction bits: the upper
//!   16 bits of an `f32` (`f32::from_bits(u32::from(b) << 16)` is its value).
//! - **float16** (IEEE 754 binary16): 1 sign bit (bit 15), 5 exponent bits
//!   (bias 15), 10 fraction bits; largest finite value 65504.
//!
//! Bits are native-endian `u16` values, as in C's `uint16_t` arrays.
//! Widening (`*_to_f32`) is exact.  Narrowing (`f32_to_*`) rounds to nearest,
//! ties to even, into the subnormals and to infinity beyond the largest
//! finite value, exactly as the C library rounds kernel results: a kernel's
//! `_bf16` result equals `f32_to_bf16` of the `f32` kernel on the widened
//! inputs.  NaN stays NaN (made quiet, sign kept).
//!
//! ```
//! use kernelbridge::half;
//! let x = half::to_bf16(&[1.0, -2.5, 3.140625]);
//! assert_eq!(x, [0x3f80, 0xc020, 0x4049]);
//! let mut y = vec![0u16; 3];
//! kernelbridge::silu_bf16(&x, &mut y)?;
//! assert_eq!(half::bf16_to_f32(y[0]), 0.73046875); // silu(1) = 0.7310586 in bf16
//! # Ok::<(), kernelbridge::Error>(())
//! ```

/// The `f32` value of bfloat16 bits (exact).
pub fn bf16_to_f32(bits: u16) -> f32 {
    let mut u = u32::from(bits) << 16;
    if u & 0x7fff_ffff > 0x7f80_0000 {
        u |= 0x0040_0000; // NaN: quiet
    }
    f32::from_bits(u)
}

/// `x` rounded to bfloat16 (nearest, ties to even).
pub fn f32_to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    if u & 0x7fff_ffff > 0x7f80_0000 {
        // NaN: truncation could leave no fraction bit (infinity); set the quiet bit.
        return (u >> 16) as u16 | 0x0040;
    }
    // Adding 0x7fff (+1 when the kept lsb is odd) carries into the kept bits
    // exactly when the dropped half exceeds a half ulp, or equals it on an odd
    // value; a carry out of the fraction correctly bumps the exponent (up to
    // infinity).  No overflow: the largest non-NaN u32 here is 0xff80_0000.
    ((u + 0x7fff + ((u >> 16) & 1)) >> 16) as u16
}

/// The `f32` value of float16 bits (exact).
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exp = u32::from((bits >> 10) & 0x1f);
    let frac = u32::from(bits & 0x3ff);
    match exp {
        0x1f => {
            // Infinity, or NaN (payload kept, made quiet).
            let quiet = if frac != 0 { 0x0040_0000 } else { 0 };
            f32::from_bits(sign | 0x7f80_0000 | (frac << 13) | quiet)
        }
        0 => {
            // Zero or subnormal: frac * 2^-24, exact in f32.
            let magnitude = frac as f32 * f32::from_bits(0x3380_0000);
            f32::from_bits(sign | magnitude.to_bits())
        }
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (frac << 13)),
    }
}

/// `x` rounded to float16 (nearest, ties to even; 65520 and beyond become
/// infinity).
pub fn f32_to_f16(x: f32) -> u16 {
    let u = x.to_bits();
    let sign = ((u >> 16) & 0x8000) as u16;
    let a = u & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        // NaN: the top 9 payload bits below the quiet bit, quiet bit set.
        return sign | 0x7e00 | ((a >> 13) & 0x1ff) as u16;
    }
    if a >= 0x477f_f000 {
        return sign | 0x7c00; // >= 65520 (halfway to 2^16): infinity
    }
    if a >= 0x3880_0000 {
        // Normal in float16 (>= 2^-14): rebias the exponent (127 -> 15), then
        // round the 13 dropped fraction bits as in f32_to_bf16.
        let v = a - (112 << 23);
        return sign | ((v + 0x0fff + ((v >> 13) & 1)) >> 13) as u16;
    }
    if a <= 0x3300_0000 {
        return sign; // <= 2^-25, half the smallest subnormal: rounds to (even) zero
    }
    // Subnormal result: the value in units of 2^-24 is m * 2^(e - 126), with
    // m the 24-bit significand and e the biased exponent (102..=112).
    let e = a >> 23;
    let m = (a & 0x007f_ffff) | 0x0080_0000;
    let shift = 126 - e; // 14..=24
    let q = m >> shift;
    let rest = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let q = if rest > half || (rest == half && q & 1 == 1) { q + 1 } else { q };
    sign | q as u16 // q == 0x400 is the smallest normal: the encoding carries over
}

/// Every value rounded to bfloat16.
pub fn to_bf16(values: &[f32]) -> Vec<u16> {
    values.iter().map(|&x| f32_to_bf16(x)).collect()
}

/// Every bfloat16 value widened to `f32`.
pub fn from_bf16(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| bf16_to_f32(b)).collect()
}

/// Every value rounded to float16.
pub fn to_f16(values: &[f32]) -> Vec<u16> {
    values.iter().map(|&x| f32_to_f16(x)).collect()
}

/// Every float16 value widened to `f32`.
pub fn from_f16(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| f16_to_f32(b)).collect()
}
