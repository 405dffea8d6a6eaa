//! The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.
//! Every arithmetic operation on tensors is a kernelbridge call, in the order
//! of the README's "The computation"; Rust only lays out ids, lengths and
//! the pooling weights.

use kernelbridge::{Activation, Context};

use crate::config::Config;
use crate::error::Result;
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

    /// `batch.len()` rows of `hidden` floats, each of unit length.
    pub fn embed(&self, batch: &[Vec<i32>]) -> Result<Vec<f32>> {
        let (c, w, ctx) = (&self.c, &self.w, &self.ctx);
        let b = batch.len();
        let s = batch.iter().map(Vec::len).max().unwrap_or(0);
        let lengths: Vec<i32> = batch.iter().map(|ids| ids.len() as i32).collect();
        let (rows, h, inter) = (b * s, c.hidden, c.intermediate);
        let mut ids = vec![0i32; rows]; // padding: id 0 ([PAD])
        let mut positions = vec![0i32; rows];
        for (r, seq) in batch.iter().enumerate() {
            ids[r * s..r * s + seq.len()].copy_from_slice(seq);
            for (j, p) in positions[r * s..(r + 1) * s].iter_mut().enumerate() {
                *p = j as i32;
            }
        }
        let types = vec![0i32; rows];
        let mut x = vec![0f32; rows * h];
        let mut t = vec![0f32; rows * h];
        let mut hid = vec![0f32; rows * h];
        let (mut q, mut k, mut v, mut att) = (
            vec![0f32; rows * h],
            vec![0f32; rows * h],
            vec![0f32; rows * h],
            vec![0f32; rows * h],
        );
        let mut ff = vec![0f32; rows * inter];
        let none = Activation::None;

        ctx.embedding(c.vocab_size, h, &ids, w.get(&w.word), &mut x)?;
        ctx.embedding(c.type_vocab, h, &types, w.get(&w.token_type), &mut t)?;
        ctx.add_inplace(&mut x, &t)?;
        ctx.embedding(c.max_positions, h, &positions, w.get(&w.position), &mut t)?;
        ctx.add_inplace(&mut x, &t)?;
        ctx.layernorm(
            rows,
            h,
            &x,
            Some(w.get(&w.ln_w)),
            Some(w.get(&w.ln_b)),
            self.eps,
            &mut hid,
        )?;
        for l in &w.layers {
            ctx.linear(rows, h, h, &hid, w.get(&l.q_w), Some(w.get(&l.q_b)), none, &mut q)?;
            ctx.linear(rows, h, h, &hid, w.get(&l.k_w), Some(w.get(&l.k_b)), none, &mut k)?;
            ctx.linear(rows, h, h, &hid, w.get(&l.v_w), Some(w.get(&l.v_b)), none, &mut v)?;
            ctx.attention_ex(
                b,
                c.heads,
                c.heads,
                s,
                s,
                c.head_dim,
                true,
                &q,
                &k,
                &v,
                Some(&lengths),
                1,
                1,
                1,
                None,
                false,
                false,
                0.0,
                &mut att,
            )?;
            ctx.linear(rows, h, h, &att, w.get(&l.o_w), Some(w.get(&l.o_b)), none, &mut q)?;
            ctx.add_inplace(&mut q, &hid)?;
            ctx.layernorm(
                rows,
                h,
                &q,
                Some(w.get(&l.ln1_w)),
                Some(w.get(&l.ln1_b)),
                self.eps,
                &mut x,
            )?;
            ctx.linear(
                rows,
                h,
                inter,
                &x,
                w.get(&l.ff1_w),
                Some(w.get(&l.ff1_b)),
                Activation::Gelu,
                &mut ff,
            )?;
            ctx.linear(
                rows,
                inter,
                h,
                &ff,
                w.get(&l.ff2_w),
                Some(w.get(&l.ff2_b)),
                none,
                &mut q,
            )?;
            ctx.add_inplace(&mut q, &x)?;
            ctx.layernorm(
                rows,
                h,
                &q,
                Some(w.get(&l.ln2_w)),
                Some(w.get(&l.ln2_b)),
                self.eps,
                &mut hid,
            )?;
        }
        let pool = pooling_matrix(&lengths, s);
        let mut mean = vec![0f32; b * h];
        ctx.gemm(false, false, b, h, rows, 1.0, &pool, rows, &hid, h, 0.0, &mut mean, h)?;
        let mut out = vec![0f32; b * h];
        ctx.rmsnorm(b, &mean, &self.l2_weight, self.l2_eps, &mut out)?;
        Ok(out)
    }
}

/// [b, b*s]: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere.
fn pooling_matrix(lengths: &[i32], s: usize) -> Vec<f32> {
    let b = lengths.len();
    let mut p = vec![0f32; b * b * s];
    for (r, &n) in lengths.iter().enumerate() {
        let inv = (1.0 / f64::from(n)) as f32;
        let start = r * b * s + r * s;
        p[start..start + n as usize].fill(inv);
    }
    p
}
