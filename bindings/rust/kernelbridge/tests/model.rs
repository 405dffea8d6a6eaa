//! The model-ready layer (`src/model.rs`): AttentionOptions and
//! `Context::attention_with`, `Linear`, and the generic element types,
//! against a float64 reference written here from the header and against the
//! generated calls they wrap (bit for bit).

use kernelbridge::{Activation, AttentionOptions, Backend, Bf16, Context, Linear, Status, F16};

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
}

fn ctx() -> Context {
    Context::new(Backend::Cpu, 2).unwrap()
}

/// kb_attention_ex in float64 ([b, h, s, d] indexing, head-major) with key
/// lengths, a [batch, 1, 1, seq_kv] mask and bottom-right causal alignment.
#[allow(clippy::too_many_arguments)]
fn reference(
    b: usize, h: usize, kvh: usize, sq: usize, skv: usize, d: usize, q: &[f32], k: &[f32], v: &[f32],
    lengths: &[i32], mask: &[f32], bottom_right: bool,
) -> Vec<f64> {
    let mut out = vec![0.0f64; q.len()];
    let scale = 1.0 / (d as f64).sqrt();
    for bi in 0..b {
        let n = lengths[bi] as i64;
        for hi in 0..h {
            let kh = hi / (h / kvh);
            for i in 0..sq {
                let lim = if bottom_right { (i as i64 + 1 + n - sq as i64).clamp(0, n) } else { n } as usize;
                let mut s = Vec::new();
                let mut keys = Vec::new();
                for j in 0..lim {
                    let dot: f64 = (0..d)
                        .map(|x| q[((bi * h + hi) * sq + i) * d + x] as f64 * k[((bi * kvh + kh) * skv + j) * d + x] as f64)
                        .sum();
                    let sc = dot * scale + mask[bi * skv + j] as f64;
                    if sc == f64::NEG_INFINITY {
                        continue;
                    }
                    s.push(sc);
                    keys.push(j);
                }
                if keys.is_empty() {
                    continue;
                }
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                for x in 0..d {
                    out[((bi * h + hi) * sq + i) * d + x] =
                        keys.iter().zip(&e).map(|(&j, w)| w / sum * v[((bi * kvh + kh) * skv + j) * d + x] as f64).sum();
                }
            }
        }
    }
    out
}

#[test]
fn attention_options_match_the_reference_and_the_generated_call() {
    let (b, h, kvh, sq, skv, d) = (2, 4, 2, 3, 6, 8);
    let mut r = Lcg(11);
    let (q, k, v) = (r.vec(b * h * sq * d), r.vec(b * kvh * skv * d), r.vec(b * kvh * skv * d));
    let lengths = [6, 4];
    let mut mask = vec![0.0f32; b * skv];
    mask[1] = f32::NEG_INFINITY; // batch row 0 never sees key 1
    let ctx = ctx();
    let opts = AttentionOptions::new(b, h, kvh, sq, skv, d)
        .kv_lengths(&lengths)
        .mask(&mask, [b, 1, 1])
        .causal(true)
        .causal_bottom_right(true);
    let mut out = vec![0.0f32; q.len()];
    ctx.attention_with(&opts, &q, &k, &v, &mut out).unwrap();
    let want = reference(b, h, kvh, sq, skv, d, &q, &k, &v, &lengths, &mask, true);
    for (g, w) in out.iter().zip(&want) {
        assert!((*g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-6, "{g} vs {w}");
    }
    let mut direct = vec![0.0f32; q.len()];
    ctx.attention_ex(b, h, kvh, sq, skv, d, false, &q, &k, &v, Some(&lengths), b, 1, 1, Some(&mask), true, true, 0.0, &mut direct)
        .unwrap();
    assert_eq!(out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), direct.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
}

#[test]
fn attention_options_errors_name_the_argument_and_write_nothing() {
    let ctx = ctx();
    let (q, k) = (vec![1.0f32; 2 * 2 * 2 * 4], vec![1.0f32; 2 * 3 * 4]);
    let mut out = vec![9.0f32; q.len()];
    let mask = vec![0.0f32; 9];
    let cases: Vec<(AttentionOptions<'_, f32>, Status, &str)> = vec![
        (AttentionOptions::new(2, 2, 1, 2, 3, 4).mask(&mask, [3, 1, 1]), Status::ShapeMismatch, "mask_batch must be 1 or batch"),
        (AttentionOptions::new(2, 2, 1, 2, 3, 4).mask(&mask[..2], [1, 1, 1]), Status::ShapeMismatch, "mask"),
        (AttentionOptions::new(2, 2, 1, 2, 3, 4).kv_lengths(&[3, 7]), Status::InvalidArgument, "kv_lengths[1] = 7"),
        (AttentionOptions::new(2, 2, 1, 2, 3, 4).causal_bottom_right(true), Status::InvalidArgument, "needs causal"),
        (AttentionOptions::new(2, 2, 1, 2, 3, 4).scale(-1.0), Status::InvalidArgument, "scale"),
    ];
    for (opts, status, text) in cases {
        let err = ctx.attention_with(&opts, &q, &k, &k, &mut out).unwrap_err();
        assert_eq!(err.status(), status, "{err}");
        assert!(err.message().contains(text), "{err}");
        assert!(out.iter().all(|&x| x == 9.0));
    }
}

#[test]
fn linear_layer_over_rows_of_any_count() {
    let (rows, inf, outf) = (6, 5, 3);
    let mut r = Lcg(5);
    let (x, w, b) = (r.vec(rows * inf), r.vec(outf * inf), r.vec(outf));
    let ctx = ctx();
    for act in Activation::ALL.iter().copied() {
        let mut y = vec![0.0f32; rows * outf];
        Linear::new(&w, inf, outf).bias(&b).act(act).forward(&ctx, &x, &mut y).unwrap();
        let mut direct = vec![0.0f32; rows * outf];
        ctx.linear(rows, inf, outf, &x, &w, Some(&b), act, &mut direct).unwrap();
        assert_eq!(y, direct);
        for i in 0..rows {
            for o in 0..outf {
                let s: f64 = (0..inf).map(|p| x[i * inf + p] as f64 * w[o * inf + p] as f64).sum::<f64>() + b[o] as f64;
                let want = match act {
                    Activation::None => s,
                    Activation::Relu => s.max(0.0),
                    Activation::Silu => s / (1.0 + (-s).exp()),
                    // gelu and its tanh form agree to ~1e-3 here; both are
                    // checked bit for bit against the generated call above.
                    _ => 0.5 * s * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (s + 0.044715 * s * s * s)).tanh()),
                };
                let tol = if matches!(act, Activation::Gelu) { 2e-3 } else { 1e-5 };
                assert!((y[i * outf + o] as f64 - want).abs() <= tol, "{act:?}: {} vs {want}", y[i * outf + o]);
            }
        }
    }
    let mut y = vec![0.0f32; 7];
    let err = Linear::new(&w, inf, outf).forward(&ctx, &x[..7], &mut y).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert!(err.message().contains("x has 7 elements"), "{err}");
}

#[test]
fn generic_element_types_call_the_matching_variant() {
    let (rows, inf, outf) = (3, 4, 2);
    let mut r = Lcg(9);
    let (x, w) = (r.vec(rows * inf), r.vec(outf * inf));
    let ctx = ctx();
    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let wb: Vec<Bf16> = w.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut yb = vec![Bf16::default(); rows * outf];
    Linear::new(&wb, inf, outf).act(Activation::Silu).forward(&ctx, &xb, &mut yb).unwrap();
    let mut bits = vec![0u16; rows * outf];
    ctx.linear_bf16(rows, inf, outf, &xb.iter().map(|v| v.0).collect::<Vec<_>>(),
        &wb.iter().map(|v| v.0).collect::<Vec<_>>(), None, Activation::Silu, &mut bits).unwrap();
    assert_eq!(yb.iter().map(|v| v.0).collect::<Vec<_>>(), bits);

    let xh: Vec<F16> = x.iter().map(|&v| F16::from_f32(v)).collect();
    let wh: Vec<F16> = w.iter().map(|&v| F16::from_f32(v)).collect();
    let mut yh = vec![F16::default(); rows * outf];
    Linear::new(&wh, inf, outf).forward(&ctx, &xh, &mut yh).unwrap();
    // float16: the float32 kernel on the widened inputs, rounded once.
    let xw: Vec<f32> = xh.iter().map(|v| v.to_f32()).collect();
    let ww: Vec<f32> = wh.iter().map(|v| v.to_f32()).collect();
    let mut y32 = vec![0.0f32; rows * outf];
    Linear::new(&ww, inf, outf).forward(&ctx, &xw, &mut y32).unwrap();
    assert_eq!(yh, y32.iter().map(|&v| F16::from_f32(v)).collect::<Vec<_>>());

    let (b, h, sq, skv, d) = (1, 2, 2, 3, 4);
    let q: Vec<F16> = r.vec(b * h * sq * d).into_iter().map(F16::from_f32).collect();
    let kv: Vec<F16> = r.vec(b * h * skv * d).into_iter().map(F16::from_f32).collect();
    let mut out = vec![F16::default(); q.len()];
    ctx.attention_with(&AttentionOptions::new(b, h, h, sq, skv, d).causal(true), &q, &kv, &kv, &mut out).unwrap();
    let wide = |s: &[F16]| s.iter().map(|v| v.to_f32()).collect::<Vec<_>>();
    let mut out32 = vec![0.0f32; q.len()];
    ctx.attention_with(&AttentionOptions::new(b, h, h, sq, skv, d).causal(true), &wide(&q), &wide(&kv), &wide(&kv), &mut out32)
        .unwrap();
    assert_eq!(out, out32.iter().map(|&v| F16::from_f32(v)).collect::<Vec<_>>());
}

#[test]
fn gemm_batched_shares_one_b_with_stride_zero() {
    let (batch, m, n, k) = (3, 2, 3, 4);
    let mut r = Lcg(13);
    let (a, w) = (r.vec(batch * m * k), r.vec(k * n));
    let mut c = vec![0.0f32; batch * m * n];
    let ctx = ctx();
    ctx.gemm_batched(false, false, batch, m, n, k, 1.0, &a, k, m * k, &w, n, 0, 0.0, &mut c, n, m * n).unwrap();
    for i in 0..batch {
        let mut item = vec![0.0f32; m * n];
        ctx.gemm(false, false, m, n, k, 1.0, &a[i * m * k..(i + 1) * m * k], k, &w, n, 0.0, &mut item, n).unwrap();
        assert_eq!(&c[i * m * n..(i + 1) * m * n], &item[..]);
    }
    let err = ctx.gemm_batched(false, false, batch, m, n, k, 1.0, &a, k, m * k, &w, n, 0, 0.0, &mut c, n, 2).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert!(err.message().contains("stride_c"), "{err}");
}
