//! The model-ready kernels in Rust's idiom: attention options as a builder,
//! a linear layer value, and one generic entry point per kernel for the
//! element types [`f32`], [`Bf16`] and [`F16`].
//!
//! Hand-written on top of the generated API (`Context::attention_ex`,
//! `Context::linear`, their `_bf16` / `_f16` variants): every check and
//! every error is theirs, so the results are bit for bit those of the
//! generated functions (and of C).
//!
//! ```
//! use kernelbridge::{Activation, AttentionOptions, Context, Linear};
//!
//! let ctx = Context::new(kernelbridge::Backend::Cpu, 1)?;
//! // A padded batch of 2 sequences of 3 tokens, 2 heads of 4 dims, in the
//! // [batch, seq, heads, head_dim] layout a linear layer writes.
//! let (batch, seq, heads, head_dim) = (2, 3, 2, 4);
//! let hidden = heads * head_dim;
//! let x = vec![0.5f32; batch * seq * hidden];
//! let w = vec![0.01f32; hidden * hidden];
//! let (mut q, mut out) = (vec![0.0f32; x.len()], vec![0.0f32; x.len()]);
//! Linear::new(&w, hidden, hidden).act(Activation::None).forward(&ctx, &x, &mut q)?;
//! let lengths = [3, 2]; // the second sequence has one padding token
//! let opts = AttentionOptions::new(batch, heads, heads, seq, seq, head_dim)
//!     .seq_major(true)
//!     .kv_lengths(&lengths);
//! ctx.attention_with(&opts, &q, &q, &q, &mut out)?;
//! # Ok::<(), kernelbridge::Error>(())
//! ```

use crate::{Activation, Context, Error, Result, Status};

mod private {
    pub trait Sealed {}
}

/// bfloat16 bits (the upper half of an `f32`); see [`crate::half`] for
/// conversions.  `#[repr(transparent)]`: a `&[Bf16]` is a `&[u16]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);

/// IEEE binary16 bits; see [`crate::half`] for conversions.
/// `#[repr(transparent)]`: a `&[F16]` is a `&[u16]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(pub u16);

impl Bf16 {
    /// `x` rounded to bfloat16 as the library rounds.
    pub fn from_f32(x: f32) -> Bf16 {
        Bf16(crate::half::f32_to_bf16(x))
    }
    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        crate::half::bf16_to_f32(self.0)
    }
}

impl F16 {
    /// `x` rounded to float16 as the library rounds.
    pub fn from_f32(x: f32) -> F16 {
        F16(crate::half::f32_to_f16(x))
    }
    /// The exact `f32` value.
    pub fn to_f32(self) -> f32 {
        crate::half::f16_to_f32(self.0)
    }
}

fn bits<T: Copy>(s: &[T]) -> &[u16] {
    debug_assert_eq!(std::mem::size_of::<T>(), 2);
    // Safety: only called for Bf16 / F16, #[repr(transparent)] over u16, so
    // the slice has the same layout as a [u16] of the same length; the borrow
    // keeps the lifetime.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u16>(), s.len()) }
}

fn bits_mut<T: Copy>(s: &mut [T]) -> &mut [u16] {
    debug_assert_eq!(std::mem::size_of::<T>(), 2);
    // Safety: as in `bits`; the exclusive borrow is handed on, and every u16
    // bit pattern is a valid Bf16 / F16.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u16>(), s.len()) }
}

/// Element types of the generic kernels: [`f32`], [`Bf16`], [`F16`].
/// Sealed; each type calls the matching C variant (`kb_x`, `kb_x_bf16`,
/// `kb_x_f16`).
pub trait Float: private::Sealed + Copy + 'static {
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn linear(
        ctx: &Context, rows: usize, inf: usize, outf: usize, x: &[Self], w: &[Self], b: Option<&[Self]>, act: Activation,
        y: &mut [Self],
    ) -> Result<()>;
    #[doc(hidden)]
    fn attention(ctx: &Context, o: &AttentionOptions<'_, Self>, q: &[Self], k: &[Self], v: &[Self], out: &mut [Self])
        -> Result<()>;
}

impl private::Sealed for f32 {}
impl private::Sealed for Bf16 {}
impl private::Sealed for F16 {}

impl Float for f32 {
    fn linear(
        ctx: &Context, rows: usize, inf: usize, outf: usize, x: &[f32], w: &[f32], b: Option<&[f32]>, act: Activation,
        y: &mut [f32],
    ) -> Result<()> {
        ctx.linear(rows, inf, outf, x, w, b, act, y)
    }
    fn attention(ctx: &Context, o: &AttentionOptions<'_, f32>, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) -> Result<()> {
        let [mb, mh, mq] = o.mask_dims;
        ctx.attention_ex(o.batch, o.heads, o.kv_heads, o.seq_q, o.seq_kv, o.head_dim, o.seq_major, q, k, v,
            o.kv_lengths, mb, mh, mq, o.mask, o.causal, o.bottom_right, o.scale, out)
    }
}

macro_rules! half_float {
    ($t:ty, $linear:ident, $attention:ident) => {
        impl Float for $t {
            fn linear(
                ctx: &Context, rows: usize, inf: usize, outf: usize, x: &[$t], w: &[$t], b: Option<&[$t]>,
                act: Activation, y: &mut [$t],
            ) -> Result<()> {
                ctx.$linear(rows, inf, outf, bits(x), bits(w), b.map(bits), act, bits_mut(y))
            }
            fn attention(ctx: &Context, o: &AttentionOptions<'_, $t>, q: &[$t], k: &[$t], v: &[$t], out: &mut [$t])
                -> Result<()> {
                let [mb, mh, mq] = o.mask_dims;
                ctx.$attention(o.batch, o.heads, o.kv_heads, o.seq_q, o.seq_kv, o.head_dim, o.seq_major, bits(q),
                    bits(k), bits(v), o.kv_lengths, mb, mh, mq, o.mask.map(bits), o.causal, o.bottom_right, o.scale,
                    bits_mut(out))
            }
        }
    };
}

half_float!(Bf16, linear_bf16, attention_ex_bf16);
half_float!(F16, linear_f16, attention_ex_f16);

/// The options of [`Context::attention_with`] (`kb_attention_ex`): shapes,
/// layout, key lengths, additive mask and causal alignment, as a builder.
/// Defaults: head-major layout (`[batch, heads, seq, head_dim]`), every key
/// taking part, no mask, not causal, scale `1 / sqrt(head_dim)`.
#[derive(Clone, Copy, Debug)]
pub struct AttentionOptions<'a, T: Float = f32> {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    seq_q: usize,
    seq_kv: usize,
    head_dim: usize,
    seq_major: bool,
    kv_lengths: Option<&'a [i32]>,
    mask: Option<&'a [T]>,
    mask_dims: [usize; 3],
    causal: bool,
    bottom_right: bool,
    scale: f32,
}

impl<'a, T: Float> AttentionOptions<'a, T> {
    /// Shapes: query heads `heads` read key/value head `h / (heads / kv_heads)`.
    pub fn new(batch: usize, heads: usize, kv_heads: usize, seq_q: usize, seq_kv: usize, head_dim: usize) -> Self {
        AttentionOptions {
            batch, heads, kv_heads, seq_q, seq_kv, head_dim,
            seq_major: false,
            kv_lengths: None,
            mask: None,
            mask_dims: [1, 1, 1],
            causal: false,
            bottom_right: false,
            scale: 0.0,
        }
    }

    /// `true`: q, k, v and out are `[batch, seq, heads, head_dim]` (what a
    /// linear layer's `[batch, seq, heads * head_dim]` output is).
    pub fn seq_major(mut self, on: bool) -> Self {
        self.seq_major = on;
        self
    }

    /// Keys `j < kv_lengths[b]` take part for batch row `b` (a padded batch);
    /// each length in `[0, seq_kv]`, one per batch row.
    pub fn kv_lengths(mut self, lengths: &'a [i32]) -> Self {
        self.kv_lengths = Some(lengths);
        self
    }

    /// An additive mask `[dims[0], dims[1], dims[2], seq_kv]`, broadcast over
    /// its axes of size 1 (`dims` are 1 or batch, 1 or heads, 1 or seq_q);
    /// `-inf` removes a key.
    pub fn mask(mut self, mask: &'a [T], dims: [usize; 3]) -> Self {
        self.mask = Some(mask);
        self.mask_dims = dims;
        self
    }

    /// The mask dims passed without a mask (C ignores them then; for tests of
    /// the C contract).
    pub fn mask_dims(mut self, dims: [usize; 3]) -> Self {
        self.mask_dims = dims;
        self
    }

    /// Causal masking, top-left aligned (PyTorch's `is_causal`): query `i`
    /// sees keys `j <= i`.
    pub fn causal(mut self, on: bool) -> Self {
        self.causal = on;
        self
    }

    /// With [`causal`](Self::causal): align to the bottom right (the KV-cache
    /// case, FlashAttention's convention): the last query sees every key of
    /// its row.  Without causal the call fails with `InvalidArgument`.
    pub fn causal_bottom_right(mut self, on: bool) -> Self {
        self.bottom_right = on;
        self
    }

    /// The score scale; 0 (the default) means `1 / sqrt(head_dim)`.
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = scale;
        self
    }
}

impl Context {
    /// `kb_attention_ex` (or its `_bf16` / `_f16` variant, by element type)
    /// with the given options.  A query row left without keys gives zeros.
    /// Lengths are checked before the call (`ShapeMismatch` naming the
    /// argument), everything else by C; nothing is written on error.
    pub fn attention_with<T: Float>(
        &self, opts: &AttentionOptions<'_, T>, q: &[T], k: &[T], v: &[T], out: &mut [T],
    ) -> Result<()> {
        T::attention(self, opts, q, k, v, out)
    }
}

/// A fused linear layer, PyTorch's weight layout: `y = act(x Wᵀ + b)` with
/// `weight` `[out_features, in_features]` (`kb_linear`, or its 16-bit
/// variant by element type).  `x` holds any number of rows of
/// `in_features`, so `[batch, seq, hidden]` data needs no reshaping.
#[derive(Clone, Copy, Debug)]
pub struct Linear<'a, T: Float = f32> {
    weight: &'a [T],
    bias: Option<&'a [T]>,
    in_features: usize,
    out_features: usize,
    act: Activation,
}

impl<'a, T: Float> Linear<'a, T> {
    /// A layer without bias or activation.
    pub fn new(weight: &'a [T], in_features: usize, out_features: usize) -> Self {
        Linear { weight, bias: None, in_features, out_features, act: Activation::None }
    }

    /// Adds `bias` (`out_features` values) before the activation.
    pub fn bias(mut self, bias: &'a [T]) -> Self {
        self.bias = Some(bias);
        self
    }

    /// The activation applied last (default [`Activation::None`]).
    pub fn act(mut self, act: Activation) -> Self {
        self.act = act;
        self
    }

    /// `y = act(x Wᵀ + b)` for every row of `x`: the row count is
    /// `x.len() / in_features` (or `y.len() / out_features` when
    /// `in_features` is 0); a length that is not a whole number of rows is
    /// `ShapeMismatch` naming it.
    pub fn forward(&self, ctx: &Context, x: &[T], y: &mut [T]) -> Result<()> {
        let rows = if self.in_features > 0 {
            whole_rows(x.len(), self.in_features, "x")?
        } else if self.out_features > 0 {
            whole_rows(y.len(), self.out_features, "y")?
        } else {
            0
        };
        T::linear(ctx, rows, self.in_features, self.out_features, x, self.weight, self.bias, self.act, y)
    }
}

fn whole_rows(len: usize, row: usize, name: &str) -> Result<usize> {
    if len % row != 0 {
        return Err(Error::new(
            Status::ShapeMismatch,
            format!("kb_linear: {name} has {len} elements, which is not a whole number of rows of {row}"),
        ));
    }
    Ok(len / row)
}
