//! Tensors in storage formats (`src/qtensor.rs`): QTensor, quantize_q,
//! dequantize, linear_q and embedding_q, against a decoder of the formats
//! written here from the header's definition of kb_dtype, a float64
//! reference of the linear layer, and the generated calls they wrap (bit
//! for bit); and bad inputs, which name the argument and write nothing.

use std::borrow::Cow;

use kernelbridge::half::{f16_to_f32, f32_to_f16};
use kernelbridge::{Activation, Backend, Context, Dtype, QTensor, Status};

struct Lcg(u64);

impl Lcg {
    /// Uniform in [-1, 1).
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next().to_bits() >> 8) as u8).collect()
    }
}

fn ctx() -> Context {
    Context::new(Backend::Cpu, 3).unwrap()
}

const FORMATS: [Dtype; 5] = [Dtype::F32, Dtype::F16, Dtype::Bf16, Dtype::Q8_0, Dtype::Q4_0];

/// Bytes per row of `cols` elements, from the header's description of each
/// format.
fn row_bytes(dtype: Dtype, cols: usize) -> usize {
    match dtype {
        Dtype::F32 => cols * 4,
        Dtype::F16 | Dtype::Bf16 => cols * 2,
        Dtype::Q8_0 => cols / 32 * 34,
        Dtype::Q4_0 => cols / 32 * 18,
        other => panic!("no size for {other}"),
    }
}

/// The header's definition of each format, decoded element by element.
fn decode(dtype: Dtype, rows: usize, cols: usize, data: &[u8]) -> Vec<f32> {
    assert_eq!(data.len(), rows * row_bytes(dtype, cols));
    let mut out = Vec::with_capacity(rows * cols);
    for row in data.chunks_exact(row_bytes(dtype, cols).max(1)).take(rows) {
        match dtype {
            Dtype::F32 => out.extend(row.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
            Dtype::F16 => out.extend(row.chunks_exact(2).map(|b| f16_to_f32(u16::from_ne_bytes([b[0], b[1]])))),
            Dtype::Bf16 => {
                out.extend(row.chunks_exact(2).map(|b| f32::from_bits(u32::from(u16::from_ne_bytes([b[0], b[1]])) << 16)))
            }
            Dtype::Q8_0 => {
                for block in row.chunks_exact(34) {
                    let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
                    out.extend(block[2..].iter().map(|&q| d * f32::from(q as i8)));
                }
            }
            Dtype::Q4_0 => {
                for block in row.chunks_exact(18) {
                    let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
                    let q = &block[2..];
                    out.extend(q.iter().map(|&b| d * (f32::from(b & 15) - 8.0)));
                    out.extend(q.iter().map(|&b| d * (f32::from(b >> 4) - 8.0)));
                }
            }
            other => panic!("no decoder for {other}"),
        }
    }
    out
}

/// Random bytes of a [rows, cols] tensor whose block scales are finite.
fn random_tensor(rng: &mut Lcg, dtype: Dtype, rows: usize, cols: usize) -> Vec<u8> {
    let mut data = rng.bytes(rows * row_bytes(dtype, cols));
    let block = match dtype {
        Dtype::Q8_0 => 34,
        Dtype::Q4_0 => 18,
        _ => return data,
    };
    for b in data.chunks_exact_mut(block) {
        b[..2].copy_from_slice(&f32_to_f16(rng.next() * 0.1).to_le_bytes());
    }
    data
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn same_values(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn sizes_follow_the_formats() {
    for dtype in FORMATS {
        for (rows, cols) in [(0, 0), (1, 32), (3, 64), (5, 96)] {
            let want = rows * row_bytes(dtype, cols);
            assert_eq!(kernelbridge::dtype_bytes(dtype, rows, cols).unwrap(), want as i64, "{dtype} [{rows}, {cols}]");
            let t = QTensor::new(dtype, rows, cols, vec![0u8; want]).unwrap();
            assert_eq!((t.dtype(), t.rows(), t.cols(), t.data().len()), (dtype, rows, cols, want));
        }
    }
    // GGML's type numbers, which a GGUF file's tensor info holds.
    let codes: Vec<(i32, Dtype)> = FORMATS.iter().map(|&d| (d.code(), d)).collect();
    for (code, d) in [(0, Dtype::F32), (1, Dtype::F16), (2, Dtype::Q4_0), (8, Dtype::Q8_0), (30, Dtype::Bf16)] {
        assert!(codes.contains(&(code, d)));
        assert_eq!(Dtype::from_code(code), Some(d));
    }
    assert_eq!((Dtype::Q4_0.name(), Dtype::Q8_0.to_string()), ("Q4_0", "Q8_0".to_string()));
}

#[test]
fn unknown_type_numbers_are_not_dtypes() {
    // The safe API takes a Dtype, so a type number the library does not know
    // cannot reach it: the conversion from a GGUF file's number fails.
    for code in -1..64 {
        let known = [0, 1, 2, 8, 30].contains(&code);
        assert_eq!(Dtype::from_code(code).is_some(), known, "{code}");
    }
}

#[test]
fn dequantize_decodes_every_format() {
    let ctx = ctx();
    let mut rng = Lcg(11);
    for dtype in FORMATS {
        let (rows, cols) = (4, 96);
        let data = random_tensor(&mut rng, dtype, rows, cols);
        let t = QTensor::new(dtype, rows, cols, &data[..]).unwrap();
        let want = decode(dtype, rows, cols, &data);
        let got = ctx.dequantize_q(&t).unwrap();
        assert!(same_values(&got, &want), "{dtype}");
        assert!(same_values(&t.dequantize().unwrap(), &want), "{dtype} on the default context");
    }
}

#[test]
fn quantize_round_trip_is_within_the_step() {
    let ctx = ctx();
    let mut rng = Lcg(5);
    let (rows, cols) = (6, 128);
    for dtype in FORMATS {
        // Rows of different magnitudes, one with a zero block.
        let mut x: Vec<f32> = (0..rows).flat_map(|r| rng.vec(cols, 10f32.powi(r as i32 - 3))).collect();
        x[2 * cols..2 * cols + 32].iter_mut().for_each(|v| *v = 0.0);
        let t = ctx.quantize_q(dtype, rows, cols, &x).unwrap();
        assert!(!t.is_borrowed());
        assert_eq!(t.data().len(), rows * row_bytes(dtype, cols));
        let back = t.dequantize().unwrap();
        assert!(same_bits(&back, &decode(dtype, rows, cols, t.data())), "{dtype}");
        for (b, (xs, ys)) in x.chunks(32).zip(back.chunks(32)).enumerate() {
            let amax = xs.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
            for (e, (&v, &w)) in xs.iter().zip(ys).enumerate() {
                let (v, w) = (v as f64, w as f64);
                // Half a step of each format (Q4_0: a whole one, q being
                // clamped to 15); the block formats also round their scale d
                // to binary16, which moves an element by |q| <= 127 (Q8_0) or
                // 8 (Q4_0) times half a binary16 ulp of d.
                let half_ulp16 = |d: f64| (d * 2f64.powi(-11)).max(2f64.powi(-25));
                let bound = match dtype {
                    Dtype::F32 => 0.0,
                    Dtype::F16 => half_ulp16(v.abs()),
                    Dtype::Bf16 => v.abs() * 2f64.powi(-8),
                    Dtype::Q8_0 => amax / 127.0 / 2.0 + 127.0 * half_ulp16(amax / 127.0) + amax * 1e-6,
                    _ => amax / 8.0 + 8.0 * half_ulp16(amax / 8.0) + amax * 1e-6,
                };
                assert!((v - w).abs() <= bound, "{dtype} block {b} element {e}: {v} -> {w}, bound {bound}");
            }
        }
        // The free function gives the same bytes.
        assert_eq!(kernelbridge::quantize_q(dtype, rows, cols, &x).unwrap(), t, "{dtype}");
    }
}

#[test]
fn borrowed_bytes_are_used_in_place_at_any_alignment() {
    let ctx = ctx();
    let mut rng = Lcg(3);
    let (inf, outf) = (64, 5);
    let w = rng.vec(inf * outf, 0.5);
    let owned = ctx.quantize_q(Dtype::Q8_0, outf, inf, &w).unwrap();
    let mut file = vec![0u8; 3];
    file.extend_from_slice(owned.data());
    let view = QTensor::new(Dtype::Q8_0, outf, inf, &file[3..]).unwrap();
    assert!(view.is_borrowed());
    assert_eq!(view.data().as_ptr(), file[3..].as_ptr(), "no copy");
    assert_eq!(view, owned);
    let x = rng.vec(2 * inf, 1.0);
    let (mut a, mut b) = (vec![0.0f32; 2 * outf], vec![0.0f32; 2 * outf]);
    ctx.linear_q(&x, &owned, None, Activation::None, &mut a).unwrap();
    ctx.linear_q(&x, &view, None, Activation::None, &mut b).unwrap();
    assert!(same_bits(&a, &b));
    let copy = view.clone().into_owned();
    assert!(!copy.is_borrowed() && copy == owned);
    assert!(matches!(QTensor::new(Dtype::F16, 1, 2, Cow::Borrowed(&file[..4])).unwrap().into_data(), Cow::Borrowed(_)));
}

#[test]
fn float_weights_off_their_element_alignment_are_refused() {
    // A block format may start at any byte; F32 / F16 bytes are an array
    // of elements and must be aligned as one (a typed error, y untouched).
    let ctx = ctx();
    let mut rng = Lcg(5);
    let (inf, outf) = (64, 3);
    let x = rng.vec(inf, 1.0);
    for (dtype, align) in [(Dtype::F32, 4usize), (Dtype::F16, 2)] {
        let owned = ctx.quantize_q(dtype, outf, inf, &rng.vec(inf * outf, 0.5)).unwrap();
        let mut file = vec![0u8; owned.data().len() + 8];
        let base = file.as_ptr() as usize;
        let start = (align - base % align) % align + 1; // one byte past an aligned address
        file[start..start + owned.data().len()].copy_from_slice(owned.data());
        let view = QTensor::new(dtype, outf, inf, &file[start..start + owned.data().len()]).unwrap();
        let mut y = vec![7.0f32; outf];
        let err = ctx.linear_q(&x, &view, None, Activation::None, &mut y).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{dtype}");
        assert!(err.message().contains(&format!("weight must be aligned to {align} bytes")), "{dtype}: {}", err.message());
        assert!(y.iter().all(|&v| v == 7.0), "{dtype}: y written after the error");
    }
}

#[test]
fn linear_q_is_linear_w_bit_for_bit() {
    let ctx = ctx();
    let mut rng = Lcg(21);
    let (rows, inf, outf) = (3, 96, 7);
    let x = rng.vec(rows * inf, 2.0);
    let bias = rng.vec(outf, 1.0);
    for dtype in FORMATS {
        let w = ctx.quantize_q(dtype, outf, inf, &rng.vec(outf * inf, 0.5)).unwrap();
        for act in [Activation::None, Activation::Gelu, Activation::Silu] {
            for b in [None, Some(&bias[..])] {
                let mut want = vec![0.0f32; rows * outf];
                ctx.linear_w(rows, inf, outf, &x, dtype, w.data(), b, act, &mut want).unwrap();
                let mut got = vec![f32::NAN; rows * outf];
                ctx.linear_q(&x, &w, b, act, &mut got).unwrap();
                assert!(same_bits(&got, &want), "{dtype} {act}");
                let mut free = vec![f32::NAN; rows * outf];
                kernelbridge::linear_q(&x, &w, b, act, &mut free).unwrap();
                assert!(same_bits(&free, &want), "{dtype} {act} on the default context (one thread)");
            }
        }
    }
}

#[test]
fn f32_and_16_bit_weights_are_linear_on_the_widened_weights() {
    // The header: for F32, F16 and BF16 every sum is kb_linear's on the
    // exactly widened weights.
    let ctx = ctx();
    let mut rng = Lcg(8);
    let (rows, inf, outf) = (4, 40, 6);
    let x = rng.vec(rows * inf, 1.5);
    let w = rng.vec(outf * inf, 0.5);
    let bias = rng.vec(outf, 0.25);
    for dtype in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
        let q = ctx.quantize_q(dtype, outf, inf, &w).unwrap();
        let widened = q.dequantize().unwrap();
        for act in [Activation::None, Activation::Relu, Activation::GeluTanh] {
            let mut want = vec![0.0f32; rows * outf];
            ctx.linear(rows, inf, outf, &x, &widened, Some(&bias), act, &mut want).unwrap();
            let mut got = vec![0.0f32; rows * outf];
            ctx.linear_q(&x, &q, Some(&bias), act, &mut got).unwrap();
            assert!(same_bits(&got, &want), "{dtype} {act}");
        }
    }
    // F32 weights made from the caller's floats, no quantize call.
    let bytes: Vec<u8> = w.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let q = QTensor::new(Dtype::F32, outf, inf, bytes).unwrap();
    let mut want = vec![0.0f32; rows * outf];
    ctx.linear(rows, inf, outf, &x, &w, None, Activation::Silu, &mut want).unwrap();
    let mut got = vec![0.0f32; rows * outf];
    ctx.linear_q(&x, &q, None, Activation::Silu, &mut got).unwrap();
    assert!(same_bits(&got, &want));
}

#[test]
fn no_input_features_give_the_activated_bias() {
    // in_features == 0: every sum is empty, y = act(bias); the rows are
    // counted from y.  Block formats too (no block is read).
    let ctx = ctx();
    let bias = [-1.0f32, 0.5, 2.0];
    for dtype in [Dtype::F32, Dtype::F16, Dtype::Bf16, Dtype::Q8_0, Dtype::Q4_0] {
        let w = QTensor::new(dtype, 3, 0, Vec::new()).unwrap();
        let mut y = vec![f32::NAN; 2 * 3];
        ctx.linear_q(&[], &w, Some(&bias), Activation::Relu, &mut y).unwrap();
        assert_eq!(y, [0.0, 0.5, 2.0, 0.0, 0.5, 2.0], "{dtype}");
        let mut odd = vec![f32::NAN; 4];
        let err = ctx.linear_q(&[], &w, Some(&bias), Activation::Relu, &mut odd).unwrap_err();
        assert_eq!(err.message(), "kb_linear_w: y has 4 elements, which is not a whole number of rows of 3");
        assert!(odd.iter().all(|v| v.is_nan()));
    }
}

#[test]
fn block_formats_are_within_the_documented_bound() {
    // kb_linear_w's bound against the float64 product of the dequantized
    // weights and x: half a step of each block of x (quantized to int8 with
    // scale max|x| / 127) times the weights, plus the float32 roundings of
    // the block sums.
    let ctx = ctx();
    let mut rng = Lcg(99);
    let (rows, inf, outf) = (3, 256, 9);
    let x = rng.vec(rows * inf, 2.0);
    for dtype in [Dtype::Q8_0, Dtype::Q4_0] {
        let q = ctx.quantize_q(dtype, outf, inf, &rng.vec(outf * inf, 0.5)).unwrap();
        let wd = q.dequantize().unwrap();
        let mut y = vec![0.0f32; rows * outf];
        ctx.linear_q(&x, &q, None, Activation::None, &mut y).unwrap();
        for i in 0..rows {
            for j in 0..outf {
                let (mut exact, mut quant, mut mag) = (0.0f64, 0.0f64, 0.0f64);
                for b in 0..inf / 32 {
                    let xs = &x[i * inf + b * 32..i * inf + b * 32 + 32];
                    let ws = &wd[j * inf + b * 32..j * inf + b * 32 + 32];
                    let dx = xs.iter().fold(0.0f64, |m, v| m.max(v.abs() as f64)) / 127.0;
                    let mut wsum = 0.0;
                    for (&xe, &we) in xs.iter().zip(ws) {
                        exact += we as f64 * xe as f64;
                        wsum += (we as f64).abs();
                        mag += (we as f64).abs() * ((xe as f64).abs() + dx);
                    }
                    quant += dx / 2.0 * (1.0 + 2f64.powi(-20)) * wsum;
                }
                let bound = quant + ((inf / 32) as f64 / 8.0 + 5.0) * 2f64.powi(-23) * mag;
                let err = (y[i * outf + j] as f64 - exact).abs();
                assert!(err <= bound, "{dtype} ({i}, {j}): {} vs {exact}, error {err} > {bound}", y[i * outf + j]);
            }
        }
    }
}

#[test]
fn embedding_q_rows_are_dequantized_rows() {
    let ctx = ctx();
    let mut rng = Lcg(4);
    let (vocab, dim) = (10, 64);
    let ids = [7, 0, 9, 7, 3];
    for dtype in FORMATS {
        let table = ctx.quantize_q(dtype, vocab, dim, &rng.vec(vocab * dim, 3.0)).unwrap();
        let all = table.dequantize().unwrap();
        let mut out = vec![f32::NAN; ids.len() * dim];
        ctx.embedding_q(&ids, &table, &mut out).unwrap();
        for (i, &id) in ids.iter().enumerate() {
            let id = id as usize;
            assert!(same_bits(&out[i * dim..(i + 1) * dim], &all[id * dim..(id + 1) * dim]), "{dtype} ids[{i}]");
        }
        let mut free = vec![0.0f32; ids.len() * dim];
        kernelbridge::embedding_q(&ids, &table, &mut free).unwrap();
        assert!(same_bits(&free, &out), "{dtype}");
    }
}

// --- bad inputs: an error naming the argument, nothing written ---------------

#[test]
fn wrong_byte_counts_are_rejected() {
    for (dtype, rows, cols, want) in [(Dtype::Q4_0, 3, 64, 108), (Dtype::Q8_0, 2, 32, 68), (Dtype::F16, 3, 5, 30)] {
        for len in [want - 1, want + 1, 0] {
            let err = QTensor::new(dtype, rows, cols, vec![0u8; len]).unwrap_err();
            assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
            assert_eq!(
                err.message(),
                format!("QTensor::new: data has {len} bytes, expected {want} for [{rows}, {cols}] as {dtype}")
            );
        }
    }
    // The generated form takes any byte count; C checks it against the shape.
    let ctx = ctx();
    let x = vec![1.0f32; 2 * 64];
    let mut y = vec![5.0f32; 2 * 3];
    let err = ctx.linear_w(2, 64, 3, &x, Dtype::Q4_0, &[0u8; 107], None, Activation::None, &mut y).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert!(err.message().contains("weight_bytes must be 108"), "{err}");
    assert_eq!(y, vec![5.0f32; 6], "y written on error");
}

#[test]
fn cols_must_be_whole_blocks_for_block_formats() {
    for dtype in [Dtype::Q8_0, Dtype::Q4_0] {
        let err = QTensor::new(dtype, 2, 48, vec![0u8; 2 * 48]).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{err}");
        assert!(err.message().contains("cols must be a multiple of 32"), "{err}");
        let err = kernelbridge::quantize_q(dtype, 1, 33, &[1.0; 33]).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{err}");
        assert!(err.message().contains("cols must be a multiple of 32"), "{err}");
    }
    let ctx = ctx();
    let (x, mut y) = (vec![1.0f32; 40], vec![7.0f32; 2]);
    let err = ctx.linear_w(1, 40, 2, &x, Dtype::Q8_0, &[0u8; 68], None, Activation::None, &mut y).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    assert!(err.message().contains("in_features must be a multiple of 32"), "{err}");
    assert_eq!(y, vec![7.0f32; 2]);
}

#[test]
fn quantize_rejects_what_a_format_cannot_hold() {
    let ctx = ctx();
    let err = ctx.quantize_q(Dtype::Q8_0, 2, 32, &[0.5; 63]).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert!(err.message().starts_with("kb_quantize: x has 63 elements"), "{err}");
    for (bad, what) in [(f32::NAN, "NaN"), (f32::INFINITY, "inf"), (1e30, "too large")] {
        let mut x = vec![0.5f32; 64];
        x[32 + 5] = bad;
        for dtype in [Dtype::Q8_0, Dtype::Q4_0] {
            let err = ctx.quantize_q(dtype, 2, 32, &x).unwrap_err();
            assert_eq!(err.status(), Status::InvalidArgument, "{what}: {err}");
            assert!(err.message().contains("x[1, 5]"), "{what}: {err}");
            let mut y = vec![0xabu8; 2 * row_bytes(dtype, 32)];
            assert!(ctx.quantize(dtype, 2, 32, &x, &mut y).is_err());
            assert!(y.iter().all(|&b| b == 0xab), "{dtype}: y written on error");
        }
    }
}

#[test]
fn linear_q_rejects_bad_lengths_and_writes_nothing() {
    let ctx = ctx();
    let (inf, outf) = (64, 3);
    let w = ctx.quantize_q(Dtype::Q4_0, outf, inf, &vec![0.25f32; inf * outf]).unwrap();
    let mut y = vec![9.0f32; 2 * outf];
    let err = ctx.linear_q(&[1.0; 2 * 64 + 1], &w, None, Activation::None, &mut y).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert_eq!(err.message(), "kb_linear_w: x has 129 elements, which is not a whole number of rows of 64");
    let err = ctx.linear_q(&[1.0; 2 * 64], &w, None, Activation::None, &mut y[..5]).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert!(err.message().starts_with("kb_linear_w: y has 5 elements"), "{err}");
    let err = kernelbridge::linear_q(&[1.0; 2 * 64], &w, Some(&[0.0; 2]), Activation::None, &mut y).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert!(err.message().starts_with("kb_linear_w: bias has 2 elements"), "{err}");
    assert_eq!(y, vec![9.0f32; 2 * outf], "y written on error");
}

#[test]
fn embedding_q_rejects_ids_out_of_range_and_writes_nothing() {
    let ctx = ctx();
    let table = ctx.quantize_q(Dtype::Q8_0, 4, 32, &[1.0; 4 * 32]).unwrap();
    for (ids, named) in [([0, 4, 1], "ids[1] = 4 is out of range [0, 4)"), ([2, 3, -1], "ids[2] = -1 is out of range [0, 4)")] {
        let mut out = vec![3.0f32; 3 * 32];
        let err = ctx.embedding_q(&ids, &table, &mut out).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{err}");
        assert!(err.message().contains(named), "{err}");
        assert_eq!(out, vec![3.0f32; 3 * 32], "out written on error");
    }
    let mut short = vec![3.0f32; 2 * 32];
    let err = ctx.embedding_q(&[0, 1, 2], &table, &mut short).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    assert!(err.message().starts_with("kb_embedding_w: out has 64 elements"), "{err}");
    assert_eq!(short, vec![3.0f32; 2 * 32]);
}
