//! The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.
//! Every arithmetic operation on tensors is a kernelbridge call, in the order
//! of the README's "The computation"; Rust only lays out ids, lengths, row
//! indices and the pooling weights (layout.rs).

use kernelbridge::{Activation, Context};

use crate::config::Config;
use crate::error::Result;
use crate::layout::Layout;
use crate::weights::Weights;

pub struct Encoder {
    pub c: Config,
    w: Weights,
    ctx: Context,
    eps: f32,
    l2_weight: Vec<f32>,
    l2_eps: f32,
}

impl Encoder {
    pub fn new(c: Config, w: Weights, ctx: Context) -> Encoder {
        let eps = c.layer_norm_eps as f32;
        let l2_weight = vec![(1.0 / (c.hidden as f64).sqrt()) as f32; c.hidden];
        let l2_eps = (1e-24 / c.hidden as f64) as f32;
        Encoder {
            c,
            w,
            ctx,
            eps,
            l2_weight,
            l2_eps,
        }
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// `batch.len()` rows of `hidden` floats, each of unit length.  Rows hold
    /// real tokens only ("packed", `n` rows), except around attention, which
    /// reads the padded batch `[b, s, heads, head_dim]`.
    pub fn embed(&self, batch: &[Vec<i32>]) -> Result<Vec<f32>> {
        let (c, w, ctx) = (&self.c, &self.w, &self.ctx);
        let l = Layout::new(batch);
        let (b, s, n, h, inter) = (l.b, l.s, l.n, c.hidden, c.intermediate);
        let types = vec![0i32; n];
        let [mut x, mut t, mut hid, mut q, mut k, mut v, mut a] = std::array::from_fn(|_| vec![0f32; n * h]);
        let mut ff = vec![0f32; n * inter];
        let [mut qp, mut kp, mut vp, mut ap] = std::array::from_fn(|_| vec![0f32; b * s * h]);
        let none = Activation::None;

        ctx.embedding(c.vocab_size, h, &l.ids, w.get(&w.word), &mut x)?;
        ctx.embedding(c.type_vocab, h, &types, w.get(&w.token_type), &mut t)?;
        ctx.add_inplace(&mut x, &t)?;
        ctx.embedding(c.max_positions, h, &l.positions, w.get(&w.position), &mut t)?;
        ctx.add_inplace(&mut x, &t)?;
        ctx.layernorm(n, h, &x, Some(w.get(&w.ln_w)), Some(w.get(&w.ln_b)), self.eps, &mut hid)?;
        for y in &w.layers {
            ctx.linear(n, h, h, &hid, w.get(&y.q_w), Some(w.get(&y.q_b)), none, &mut q)?;
            ctx.linear(n, h, h, &hid, w.get(&y.k_w), Some(w.get(&y.k_b)), none, &mut k)?;
            ctx.linear(n, h, h, &hid, w.get(&y.v_w), Some(w.get(&y.v_b)), none, &mut v)?;
            ctx.embedding(n, h, &l.to_padded, &q, &mut qp)?;
            ctx.embedding(n, h, &l.to_padded, &k, &mut kp)?;
            ctx.embedding(n, h, &l.to_padded, &v, &mut vp)?;
            let (heads, d) = (c.heads, c.head_dim);
            ctx.attention_ex(
                b,
                heads,
                heads,
                s,
                s,
                d,
                true,
                &qp,
                &kp,
                &vp,
                Some(&l.lengths),
                1,
                1,
                1,
                None,
                false,
                false,
                0.0,
                &mut ap,
            )?;
            ctx.embedding(b * s, h, &l.to_packed, &ap, &mut a)?;
            ctx.linear(n, h, h, &a, w.get(&y.o_w), Some(w.get(&y.o_b)), none, &mut q)?;
            ctx.add_inplace(&mut q, &hid)?;
            ctx.layernorm(n, h, &q, Some(w.get(&y.ln1_w)), Some(w.get(&y.ln1_b)), self.eps, &mut x)?;
            ctx.linear(
                n,
                h,
                inter,
                &x,
                w.get(&y.ff1_w),
                Some(w.get(&y.ff1_b)),
                Activation::Gelu,
                &mut ff,
            )?;
            ctx.linear(n, inter, h, &ff, w.get(&y.ff2_w), Some(w.get(&y.ff2_b)), none, &mut q)?;
            ctx.add_inplace(&mut q, &x)?;
            ctx.layernorm(
                n,
                h,
                &q,
                Some(w.get(&y.ln2_w)),
                Some(w.get(&y.ln2_b)),
                self.eps,
                &mut hid,
            )?;
        }
        let mut mean = vec![0f32; b * h];
        ctx.gemm(false, false, b, h, n, 1.0, &l.pooling(), n, &hid, h, 0.0, &mut mean, h)?;
        let mut out = vec![0f32; b * h];
        ctx.rmsnorm(b, &mean, &self.l2_weight, self.l2_eps, &mut out)?;
        Ok(out)
    }
}
