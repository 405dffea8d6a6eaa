//! bfloat16 / float16: the conversions of `kernelbridge::half` and the
//! `_bf16` / `_f16` kernels, against a rounding written here independently:
//! the nearest of all values of the format (found by search in a table built
//! from the format's definition), ties to the even bit pattern.

use kernelbridge::{half, Backend, Context};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fmt {
    Bf16,
    F16,
}

const FORMATS: [Fmt; 2] = [Fmt::Bf16, Fmt::F16];

impl Fmt {
    /// (exponent bits, fraction bits)
    fn layout(self) -> (u32, u32) {
        match self {
            Fmt::Bf16 => (8, 7),
            Fmt::F16 => (5, 10),
        }
    }

    fn inf_bits(self) -> u16 {
        let (e, f) = self.layout();
        (((1u32 << e) - 1) << f) as u16
    }

    /// The value of non-NaN bits, from the format's definition.
    fn value(self, bits: u16) -> f64 {
        let (e, f) = self.layout();
        let bias = (1i32 << (e - 1)) - 1;
        let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> f) & ((1 << e) - 1) as u16);
        let frac = f64::from(bits & ((1 << f) - 1) as u16);
        let scale = 2f64.powi(f as i32);
        if exp == (1 << e) - 1 {
            assert_eq!(frac, 0.0, "NaN has no value");
            return sign * f64::INFINITY;
        }
        if exp == 0 {
            sign * frac / scale * 2f64.powi(1 - bias)
        } else {
            sign * (1.0 + frac / scale) * 2f64.powi(exp - bias)
        }
    }

    fn is_nan(self, bits: u16) -> bool {
        bits & 0x7fff > self.inf_bits()
    }

    /// Non-negative finite values with their bits, increasing, then the
    /// power of two above the largest one standing for infinity.
    fn table(self) -> Vec<(f64, u16)> {
        let mut t: Vec<(f64, u16)> = (0..self.inf_bits()).map(|b| (self.value(b), b)).collect();
        let (e, _) = self.layout();
        let bias = (1i32 << (e - 1)) - 1;
        t.push((2f64.powi(bias + 1), self.inf_bits()));
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
        t
    }

    fn round_with(self, table: &[(f64, u16)], x: f32) -> u16 {
        assert!(!x.is_nan());
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = f64::from(x.abs());
        let bits = match table.iter().position(|&(v, _)| v >= a) {
            None => self.inf_bits(),
            Some(i) if table[i].0 == a || i == 0 => table[i].1,
            Some(i) => {
                let (lo, hi) = (table[i - 1], table[i]);
                let (dlo, dhi) = (a - lo.0, hi.0 - a);
                if dlo < dhi || (dlo == dhi && lo.1 % 2 == 0) {
                    lo.1
                } else {
                    hi.1
                }
            }
        };
        bits | sign
    }

    fn widen(self, bits: u16) -> f32 {
        match self {
            Fmt::Bf16 => half::bf16_to_f32(bits),
            Fmt::F16 => half::f16_to_f32(bits),
        }
    }

    fn narrow(self, x: f32) -> u16 {
        match self {
            Fmt::Bf16 => half::f32_to_bf16(x),
            Fmt::F16 => half::f32_to_f16(x),
        }
    }
}

/// Binary search version of round_with for the many-value sweeps.
fn round_fast(fmt: Fmt, table: &[(f64, u16)], x: f32) -> u16 {
    let a = f64::from(x.abs());
    let i = table.partition_point(|&(v, _)| v < a);
    let lo = i.saturating_sub(1);
    let near = &table[lo..(i + 1).min(table.len())];
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    if i == table.len() {
        return fmt.inf_bits() | sign;
    }
    fmt.round_with(near, x.abs()) | sign
}

#[test]
fn widening_is_exact_for_every_bit_pattern() {
    for fmt in FORMATS {
        for bits in 0..=u16::MAX {
            let got = fmt.widen(bits);
            if fmt.is_nan(bits) {
                assert!(got.is_nan(), "{fmt:?} {bits:#06x}");
                assert_eq!(got.is_sign_negative(), bits >> 15 == 1);
                // Narrowing a widened NaN gives a quiet NaN of the same sign.
                let back = fmt.narrow(got);
                assert!(fmt.is_nan(back) && back >> 15 == bits >> 15, "{fmt:?} {bits:#06x} -> {back:#06x}");
            } else {
                assert_eq!(f64::from(got), fmt.value(bits), "{fmt:?} {bits:#06x}");
                assert_eq!(got.is_sign_negative(), bits >> 15 == 1, "{fmt:?} {bits:#06x}: sign of zero");
                assert_eq!(fmt.narrow(got), bits, "{fmt:?} {bits:#06x}: round trip");
            }
        }
    }
}

#[test]
fn narrowing_rounds_to_nearest_even() {
    for fmt in FORMATS {
        let table = fmt.table();
        let mut samples: Vec<u32> = (0..=u32::MAX).step_by(3_989).collect();
        // Exact halfway points and their neighbours between consecutive values.
        for w in table.windows(2) {
            let mid = ((w[0].0 + w[1].0) / 2.0) as f32;
            if f64::from(mid) == (w[0].0 + w[1].0) / 2.0 {
                samples.extend([mid.to_bits() - 1, mid.to_bits(), mid.to_bits() + 1]);
            }
        }
        samples.extend([0, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7f7f_ffff, 0x0000_0001, 0x477f_efff, 0x477f_f000]);
        for u in samples {
            let x = f32::from_bits(u);
            let got = fmt.narrow(x);
            if x.is_nan() {
                assert!(fmt.is_nan(got), "{fmt:?} {u:#010x}");
                continue;
            }
            assert_eq!(got, round_fast(fmt, &table, x), "{fmt:?} of {x:e} ({u:#010x})");
        }
        // The slice helpers are the scalar functions.
        let xs = [1.0f32, -0.0, 1e-40, 70000.0, f32::NAN];
        type Narrow = fn(&[f32]) -> Vec<u16>;
        type Widen = fn(&[u16]) -> Vec<f32>;
        let (to, from): (Narrow, Widen) = match fmt {
            Fmt::Bf16 => (half::to_bf16, half::from_bf16),
            Fmt::F16 => (half::to_f16, half::from_f16),
        };
        let bits = to(&xs);
        assert_eq!(bits, xs.iter().map(|&x| fmt.narrow(x)).collect::<Vec<_>>());
        assert_eq!(from(&bits).iter().map(|v| v.to_bits()).collect::<Vec<_>>(), bits.iter().map(|&b| fmt.widen(b).to_bits()).collect::<Vec<_>>());
    }
}

// --- kernels -------------------------------------------------------------------

/// n values of the format (as bits) spread over [-span, span], and their f32 values.
fn data(fmt: Fmt, table: &[(f64, u16)], n: usize, seed: u32, span: f32) -> (Vec<u16>, Vec<f32>) {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    let bits: Vec<u16> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let x = ((s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0) * span;
            round_fast(fmt, table, x)
        })
        .collect();
    let values = bits.iter().map(|&b| fmt.value(b) as f32).collect();
    (bits, values)
}

/// The kernel's bits equal the f32 kernel's result rounded once (here).
fn check(fmt: Fmt, table: &[(f64, u16)], what: &str, got: &[u16], f32_result: &[f32]) {
    assert_eq!(got.len(), f32_result.len());
    for (i, (&g, &w)) in got.iter().zip(f32_result).enumerate() {
        if w.is_nan() {
            assert!(fmt.is_nan(g), "{what} {fmt:?}[{i}]: want NaN, got {g:#06x}");
        } else {
            let want = round_fast(fmt, table, w);
            assert_eq!(g, want, "{what} {fmt:?}[{i}]: f32 result {w:e}");
        }
    }
}

/// ctx.<op>_bf16(args) or ctx.<op>_f16(args).
macro_rules! call {
    ($fmt:expr, $ctx:expr, $bf16:ident, $f16:ident, $($arg:expr),* $(,)?) => {
        match $fmt {
            Fmt::Bf16 => $ctx.$bf16($($arg),*),
            Fmt::F16 => $ctx.$f16($($arg),*),
        }
    };
}

#[test]
fn reduced_precision_kernels_are_the_f32_kernels_rounded_once() {
    let ctx = Context::new(Backend::Cpu, 3).unwrap();
    for fmt in FORMATS {
        let t = fmt.table();
        let t = &t[..];
        let (xh, xf) = data(fmt, t, 60, 1, 4.0);
        let (bh, bf) = data(fmt, t, 60, 2, 4.0);
        let (wh, wf) = data(fmt, t, 6, 3, 2.0);
        let (ch, cf) = data(fmt, t, 6, 4, 1.0);
        let mut yh = vec![0u16; 60];
        let mut yf = vec![0.0f32; 60];

        ctx.silu(&xf, &mut yf).unwrap();
        call!(fmt, ctx, silu_bf16, silu_f16, &xh, &mut yh).unwrap();
        check(fmt, t, "silu", &yh, &yf);
        let mut inplace = xh.clone();
        call!(fmt, ctx, silu_bf16_inplace, silu_f16_inplace, &mut inplace).unwrap();
        assert_eq!(inplace, yh, "in place");

        ctx.gelu(&xf, &mut yf).unwrap();
        call!(fmt, ctx, gelu_bf16, gelu_f16, &xh, &mut yh).unwrap();
        check(fmt, t, "gelu", &yh, &yf);

        ctx.gelu_tanh(&xf, &mut yf).unwrap();
        call!(fmt, ctx, gelu_tanh_bf16, gelu_tanh_f16, &xh, &mut yh).unwrap();
        check(fmt, t, "gelu_tanh", &yh, &yf);

        ctx.add(&xf, &bf, &mut yf).unwrap();
        call!(fmt, ctx, add_bf16, add_f16, &xh, &bh, &mut yh).unwrap();
        check(fmt, t, "add", &yh, &yf);

        ctx.mul(&xf, &bf, &mut yf).unwrap();
        call!(fmt, ctx, mul_bf16, mul_f16, &xh, &bh, &mut yh).unwrap();
        check(fmt, t, "mul", &yh, &yf);

        ctx.scale(0.3, &xf, &mut yf).unwrap();
        call!(fmt, ctx, scale_bf16, scale_f16, 0.3, &xh, &mut yh).unwrap();
        check(fmt, t, "scale", &yh, &yf);

        ctx.add_bias(10, &xf, &wf, &mut yf).unwrap();
        call!(fmt, ctx, add_bias_bf16, add_bias_f16, 10, &xh, &wh, &mut yh).unwrap();
        check(fmt, t, "add_bias", &yh, &yf);

        ctx.softmax(10, 6, &xf, &mut yf).unwrap();
        call!(fmt, ctx, softmax_bf16, softmax_f16, 10, 6, &xh, &mut yh).unwrap();
        check(fmt, t, "softmax", &yh, &yf);

        ctx.log_softmax(10, 6, &xf, &mut yf).unwrap();
        call!(fmt, ctx, log_softmax_bf16, log_softmax_f16, 10, 6, &xh, &mut yh).unwrap();
        check(fmt, t, "log_softmax", &yh, &yf);

        ctx.rmsnorm(10, &xf, &wf, 1e-5, &mut yf).unwrap();
        call!(fmt, ctx, rmsnorm_bf16, rmsnorm_f16, 10, &xh, &wh, 1e-5, &mut yh).unwrap();
        check(fmt, t, "rmsnorm", &yh, &yf);

        ctx.layernorm(10, 6, &xf, Some(&wf), Some(&cf), 1e-5, &mut yf).unwrap();
        call!(fmt, ctx, layernorm_bf16, layernorm_f16, 10, 6, &xh, Some(&wh), Some(&ch), 1e-5, &mut yh).unwrap();
        check(fmt, t, "layernorm", &yh, &yf);
        ctx.layernorm(10, 6, &xf, None, None, 1e-5, &mut yf).unwrap();
        call!(fmt, ctx, layernorm_bf16, layernorm_f16, 10, 6, &xh, None, None, 1e-5, &mut yh).unwrap();
        check(fmt, t, "layernorm without affine", &yh, &yf);

        // gemm: C = 1.5 A B + 0.5 C, A [4, 5] with row stride 6, B [5, 3], C [4, 3].
        let (c0h, c0f) = data(fmt, t, 12, 5, 2.0);
        let mut cf = c0f.clone();
        let mut chh = c0h.clone();
        ctx.gemm(false, false, 4, 3, 5, 1.5, &xf[..24], 6, &bf[..15], 3, 0.5, &mut cf, 3).unwrap();
        call!(fmt, ctx, gemm_bf16, gemm_f16, false, false, 4, 3, 5, 1.5, &xh[..24], 6, &bh[..15], 3, 0.5, &mut chh, 3).unwrap();
        check(fmt, t, "gemm", &chh, &cf);

        // attention: batch 1, heads 2, kv_heads 1, seq_q 3, seq_kv 4, head_dim 4, causal.
        let mut of = vec![0.0f32; 24];
        let mut oh = vec![0u16; 24];
        ctx.attention(1, 2, 1, 3, 4, 4, &xf[..24], &bf[..16], &bf[20..36], true, 0.0, &mut of).unwrap();
        call!(fmt, ctx, attention_bf16, attention_f16, 1, 2, 1, 3, 4, 4, &xh[..24], &bh[..16], &bh[20..36], true, 0.0, &mut oh)
            .unwrap();
        check(fmt, t, "attention", &oh, &of);
    }
}

#[test]
fn reduced_precision_special_values_and_errors() {
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    // Overflow to infinity and NaN propagation through add.
    let a = [half::f32_to_f16(60000.0), half::f32_to_f16(f32::NAN), half::f32_to_f16(1.0)];
    let b = [half::f32_to_f16(60000.0), half::f32_to_f16(1.0), half::f32_to_f16(-1.0)];
    let mut y = [0u16; 3];
    ctx.add_f16(&a, &b, &mut y).unwrap();
    assert_eq!(y[0], 0x7c00, "65504 + ... overflows to +inf");
    assert!(half::f16_to_f32(y[1]).is_nan());
    assert_eq!(y[2], 0);
    // The free function on the default context gives the same bits.
    let mut z = [0u16; 3];
    kernelbridge::add_f16(&a, &b, &mut z).unwrap();
    assert_eq!(y, z);
    // Length checks name the argument as for f32.
    let err = ctx.softmax_bf16(2, 3, &[0; 6], &mut [0; 5]).unwrap_err();
    assert_eq!(err.message(), "kb_softmax_bf16: y has 5 elements, expected 6 for shape [rows, cols] = [2, 3]");
    // The C checks too (nothing written).
    let mut out = [7u16; 2];
    let err = ctx.rmsnorm_f16(1, &[0; 2], &[0; 2], -1.0, &mut out).unwrap_err();
    assert!(err.message().starts_with("kb_rmsnorm_f16: "), "{err}");
    assert_eq!(out, [7; 2]);
}

/// The 16-bit embedding, argmax and samplers: rows copied bit for bit, and
/// the float32 kernels' index and tokens on the widened logits, for the
/// same seed.
#[test]
fn decoding_kernels_are_the_f32_kernels_on_widened_values() {
    let ctx = Context::new(Backend::Cpu, 2).unwrap();
    for fmt in FORMATS {
        let t = fmt.table();
        let t = &t[..];
        let (table, _) = data(fmt, t, 7 * 5, 11, 3.0);
        let ids = [3, 0, 6, 3];
        let mut out = vec![0u16; 4 * 5];
        call!(fmt, ctx, embedding_bf16, embedding_f16, 7, 5, &ids, &table, &mut out).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let id = id as usize;
            assert_eq!(out[i * 5..(i + 1) * 5], table[id * 5..(id + 1) * 5], "{fmt:?} row {i}");
        }
        let mut keep = vec![9u16; 4 * 5];
        let err = call!(fmt, ctx, embedding_bf16, embedding_f16, 7, 5, &[0, 7, 1, 1], &table, &mut keep).unwrap_err();
        assert!(err.message().contains("ids[1] = 7 is out of range [0, 7)"), "{err}");
        assert!(keep.iter().all(|&v| v == 9), "nothing written");

        let (rows, cols) = (6usize, 300usize);
        let (x, xf) = data(fmt, t, rows * cols, 12, 6.0);
        let (mut got, mut want) = (vec![0i32; rows], vec![0i32; rows]);
        call!(fmt, ctx, argmax_bf16, argmax_f16, cols, &x, &mut got).unwrap();
        ctx.argmax(cols, &xf, &mut want).unwrap();
        assert_eq!(got, want, "{fmt:?} argmax");
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0u64..20 {
            let temp = 0.5 + (seed % 3) as f32 * 0.6;
            call!(fmt, ctx, sample_bf16, sample_f16, cols, &x, temp, seed, &mut got).unwrap();
            ctx.sample(cols, &xf, temp, seed, &mut want).unwrap();
            assert_eq!(got, want, "{fmt:?} sample, seed {seed}");
            let k = 1 + (seed as usize * 17) % cols;
            call!(fmt, ctx, topk_sample_bf16, topk_sample_f16, cols, &x, k, temp, seed, &mut got).unwrap();
            ctx.topk_sample(cols, &xf, k, temp, seed, &mut want).unwrap();
            assert_eq!(got, want, "{fmt:?} topk_sample, seed {seed}");
            let p = 0.2 + 0.04 * seed as f32;
            call!(fmt, ctx, topp_sample_bf16, topp_sample_f16, cols, &x, p, temp, seed, &mut got).unwrap();
            ctx.topp_sample(cols, &xf, p, temp, seed, &mut want).unwrap();
            assert_eq!(got, want, "{fmt:?} topp_sample, seed {seed}");
            seen.extend(got.iter().copied());
        }
        assert!(seen.len() >= 10, "{fmt:?}: only {} distinct tokens", seen.len());
        let mut bad = x.clone();
        bad[cols + 5] = fmt.inf_bits();
        let err = call!(fmt, ctx, sample_bf16, sample_f16, cols, &bad, 1.0, 1, &mut got).unwrap_err();
        assert!(err.message().contains("logits row 1 holds +inf"), "{err}");
        let err = call!(fmt, ctx, topp_sample_bf16, topp_sample_f16, cols, &x, 0.0, 1.0, 1, &mut got).unwrap_err();
        assert!(err.message().contains("p must be in (0, 1]"), "{err}");
    }
}
