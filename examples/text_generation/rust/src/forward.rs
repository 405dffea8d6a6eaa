//! The forward pass, as ../c/model.c's tg_model_forward: the same kernels in
//! the same order with the same arguments, on the model's preallocated cache
//! and scratch (slices of them: nothing is allocated per call).
//!
//! The layer, as llama.cpp runs LLM_ARCH_LLAMA:
//!   h = rmsnorm(x) * attn_norm
//!   q, k, v = h Wq^T, h Wk^T, h Wv^T; rope on q and k, adjacent pairs (GGUF's
//!     permuted Wq and Wk pair dimensions (2i, 2i + 1))
//!   append k, v to the cache; a = attention of q over the cache (causal,
//!     bottom-right aligned: query i sees the keys up to its own position)
//!   x += a Wo^T; h = rmsnorm(x) * ffn_norm                 (kb_add_rmsnorm)
//!   dense:   f = (silu(h Wg^T) * (h Wu^T)) Wd^T            (kb_linear_glu_w, kb_linear_w)
//!   experts: the experts_used best of softmax(h Wr^T), renormalised; f = the
//!            weighted sum of their SwiGLU blocks           (kb_moe_route, kb_moe_experts)
//!   x += f, fused into the next layer's (or the output) norm.
//! Logits = (rmsnorm(x) * output_norm) Wout^T, Wout = token_embd when the
//! file has no output.weight.

use kernelbridge::{Activation, Context, MoeRouting, RopeScaling, RopeStyle};

use crate::error::{fail, lib, Result};
use crate::model::{Model, Weight};

/// y = x W^T for `rows` rows (kb_linear_w, no bias, no activation).
fn linear(ctx: &Context, rows: usize, x: &[f32], w: &Weight, y: &mut [f32]) -> kernelbridge::Result<()> {
    ctx.linear_w(
        rows,
        w.cols,
        w.rows,
        &x[..rows * w.cols],
        w.dtype,
        &w.data,
        None,
        Activation::None,
        &mut y[..rows * w.rows],
    )
}

impl Model {
    /// Runs `tokens` at positions cached .. cached + n - 1, appends them to
    /// the cache and writes the logits of the last one (`all_logits`: of
    /// every one, [n, vocab]) to the start of `out`.
    pub fn forward(&mut self, ctx: &Context, tokens: &[i32], all_logits: bool, out: &mut [f32]) -> Result<()> {
        let n = tokens.len();
        if n == 0 || n > self.s.rows {
            fail!("{n} tokens in one step (1 to {})", self.s.rows);
        }
        if self.cached + n > self.context {
            fail!(
                "{n} tokens after {} do not fit in the model's context of {}",
                self.cached,
                self.context
            );
        }
        let s = &mut self.s;
        for (t, &id) in tokens.iter().enumerate() {
            if id < 0 || id as usize >= self.vocab {
                fail!("token id {id} is not in [0, {})", self.vocab);
            }
            s.pos[t] = (self.cached + t) as i32;
        }
        let (hd, kvd) = (self.hidden, self.kv_heads * self.head_dim);
        let (ctx_len, eps) = (self.context, self.eps);
        let x = &mut s.x[..n * hd];
        let h = &mut s.h[..n * hd];
        let q = &mut s.q[..n * hd];
        let k = &mut s.k[..n * kvd];
        let v = &mut s.v[..n * kvd];
        let attn = &mut s.attn[..n * hd];
        let o = &mut s.o[..n * hd];
        let pos = &s.pos[..n];
        let e = &self.embed;
        ctx.embedding_w(self.vocab, hd, tokens, e.dtype, &e.data, x)
            .map_err(lib("token embedding"))?;
        ctx.rmsnorm(n, x, &self.layer[0].attn_norm, eps, h)
            .map_err(lib("attn_norm"))?;
        // kb_attention_ex's kv_lengths: the cache's length after this call.
        let len = [(self.cached + n) as i32];
        let at = [self.cached as i32];
        for l in 0..self.layers {
            let y = &self.layer[l];
            let layer_cache = l * ctx_len * kvd..(l + 1) * ctx_len * kvd;
            let kc = &mut self.k_cache[layer_cache.clone()];
            let vc = &mut self.v_cache[layer_cache];
            linear(ctx, n, h, &y.wq, q).map_err(lib("attn_q"))?;
            linear(ctx, n, h, &y.wk, k).map_err(lib("attn_k"))?;
            linear(ctx, n, h, &y.wv, v).map_err(lib("attn_v"))?;
            ctx.rope_ex(
                1,
                n,
                self.heads,
                self.kv_heads,
                self.head_dim,
                self.rotary_dim,
                RopeStyle::Adjacent,
                pos,
                self.rope_theta,
                RopeScaling::None,
                1.0,
                1.0,
                4.0,
                8192,
                q,
                Some(&mut *k),
            )
            .map_err(lib("rope"))?;
            ctx.kv_cache_append(self.kv_heads, n, ctx_len, self.head_dim, true, k, v, &at, kc, vc)
                .map_err(lib("kv cache"))?;
            ctx.attention_ex(
                1,
                self.heads,
                self.kv_heads,
                n,
                ctx_len,
                self.head_dim,
                true,
                q,
                kc,
                vc,
                Some(&len),
                1,
                1,
                1,
                None,
                true,
                true,
                0.0,
                attn,
            )
            .map_err(lib("attention"))?;
            linear(ctx, n, attn, &y.wo, o).map_err(lib("attn_output"))?;
            ctx.add_rmsnorm(n, o, x, &y.ffn_norm, eps, h).map_err(lib("ffn_norm"))?;
            if let Some(router) = &y.router {
                let (ne, nu) = (self.experts, self.experts_used);
                let logits = &mut s.route_logits[..n * ne];
                let ids = &mut s.route_ids[..n * nu];
                let w = &mut s.route_w[..n * nu];
                linear(ctx, n, h, router, logits).map_err(lib("ffn_gate_inp"))?;
                ctx.moe_route(n, ne, nu, MoeRouting::SoftmaxTopkNorm, logits, ids, w)
                    .map_err(lib("router"))?;
                ctx.moe_experts(
                    n,
                    hd,
                    self.ffn,
                    ne,
                    nu,
                    h,
                    ids,
                    w,
                    y.gate.dtype,
                    &y.gate.data,
                    &y.up.data,
                    &y.down.data,
                    Activation::Silu,
                    o,
                )
                .map_err(lib("experts"))?;
            } else {
                let g = &mut s.g[..n * self.ffn];
                ctx.linear_glu_w(
                    n,
                    hd,
                    self.ffn,
                    h,
                    y.gate.dtype,
                    &y.gate.data,
                    &y.up.data,
                    Activation::Silu,
                    g,
                )
                .map_err(lib("ffn_gate / ffn_up"))?;
                linear(ctx, n, g, &y.down, o).map_err(lib("ffn_down"))?;
            }
            // x += f, and the next norm (or the output norm) of it.
            let next = if l + 1 < self.layers {
                &self.layer[l + 1].attn_norm
            } else {
                &self.out_norm
            };
            ctx.add_rmsnorm(n, o, x, next, eps, h).map_err(lib("norm"))?;
        }
        self.cached += n;
        let head = self.output.as_ref().unwrap_or(&self.embed);
        let first = if all_logits { 0 } else { n - 1 };
        linear(ctx, n - first, &h[first * hd..], head, out).map_err(lib("output"))?;
        Ok(())
    }
}
