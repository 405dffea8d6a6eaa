package main

// The forward pass of c/model.c's tg_model_forward: the same kernels, in
// the same order, with the same arguments, so that every language's
// example computes bit-identical logits.  The layer (llama.cpp's
// LLM_ARCH_LLAMA):
//
//	h = rmsnorm(x) * attn_norm
//	q, k, v = h Wq^T, h Wk^T, h Wv^T; rope on q and k, adjacent pairs
//	append k, v to the cache; a = attention of q over the cache (causal,
//	  bottom-right aligned)
//	x += a Wo^T; h = rmsnorm(x) * ffn_norm          (kb_add_rmsnorm)
//	dense:   f = (silu(h Wg^T) * (h Wu^T)) Wd^T     (kb_linear_glu_w, kb_linear_w)
//	experts: kb_moe_route (softmax, top k, renormalised), kb_moe_experts
//	x += f, fused into the next layer's (or the output) norm.
//
// Every tensor is a slice of the model's preallocated scratch, passed to
// the binding's slice methods, which hand Go's memory to C without a copy:
// a call allocates nothing.

import (
	"fmt"
	"runtime"

	kb "kernelbridge.dev/go/kernelbridge"
)

func (m *model) linear(ctx *kb.Context, rows int, x []float32, w *weight, y []float32) error {
	return ctx.LinearW(rows, w.cols, w.rows, x, w.typ, w.data, nil, kb.ActivationNone, y)
}

// forward runs the n tokens at positions cached .. cached+n-1, appends them
// to the cache and writes the logits of the last one (allLogits: of every
// one, [n, vocab]) to out, which holds exactly those rows.
func (m *model) forward(ctx *kb.Context, tokens []int32, allLogits bool, out []float32) error {
	n := len(tokens)
	if n <= 0 || n > m.scratchRows {
		return fmt.Errorf("%d tokens in one step (1 to %d)", n, m.scratchRows)
	}
	if m.cached+n > m.context {
		return fmt.Errorf("%d tokens after %d do not fit in the model's context of %d", n, m.cached, m.context)
	}
	for t, id := range tokens {
		if id < 0 || int(id) >= m.vocab {
			return fmt.Errorf("token id %d is not in [0, %d)", id, m.vocab)
		}
		m.pos[t] = int32(m.cached + t)
	}
	hd, kvd := m.hidden, m.kvHeads*m.headDim
	// This call's rows of the scratch.
	x, h, q, k, v := m.x[:n*hd], m.h[:n*hd], m.q[:n*hd], m.k[:n*kvd], m.v[:n*kvd]
	attn, o, g := m.attn[:n*hd], m.o[:n*hd], m.g[:n*m.ffn]
	pos := m.pos[:n]
	if err := ctx.EmbeddingW(m.vocab, hd, tokens, m.embed.typ, m.embed.data, x); err != nil {
		return libFail("token embedding", err)
	}
	if err := ctx.Rmsnorm(n, x, m.layer[0].attnNorm.f32, m.eps, h); err != nil {
		return libFail("attn_norm", err)
	}
	m.length[0] = int32(m.cached + n)
	for l := range m.layer {
		// A scheduling point per layer.  The goroutine otherwise never
		// passes through Go's scheduler while it decodes (it is always in
		// a cgo call or about to make one), so after 10 ms the runtime's
		// monitor thread takes it for a goroutine running too long and
		// keeps waking to take its P back mid-call: thousands of wake-ups
		// per second, each stealing a core from one of the kernels'
		// threads (docs/performance.md, "Text generation").
		runtime.Gosched()
		y := &m.layer[l]
		kc, vc := m.kCache[l], m.vCache[l]
		if err := m.linear(ctx, n, h, &y.wq, q); err != nil {
			return libFail("attn_q", err)
		}
		if err := m.linear(ctx, n, h, &y.wk, k); err != nil {
			return libFail("attn_k", err)
		}
		if err := m.linear(ctx, n, h, &y.wv, v); err != nil {
			return libFail("attn_v", err)
		}
		if err := ctx.RopeEx(1, n, m.heads, m.kvHeads, m.headDim, m.rotaryDim, kb.RopeStyleAdjacent, pos,
			m.ropeTheta, kb.RopeScalingNone, 1, 1, 4, 8192, q, k); err != nil {
			return libFail("rope", err)
		}
		m.at[0] = int32(m.cached)
		if err := ctx.KVCacheAppend(m.kvHeads, n, m.context, m.headDim, true, k, v, m.at, kc, vc); err != nil {
			return libFail("kv cache", err)
		}
		if err := ctx.AttentionEx(1, m.heads, m.kvHeads, n, m.context, m.headDim, true, q, kc, vc, m.length,
			1, 1, 1, nil, true, true, 0, attn); err != nil {
			return libFail("attention", err)
		}
		if err := m.linear(ctx, n, attn, &y.wo, o); err != nil {
			return libFail("attn_output", err)
		}
		if err := ctx.AddRmsnorm(n, o, x, y.ffnNorm.f32, m.eps, h); err != nil {
			return libFail("ffn_norm", err)
		}
		if m.experts > 0 {
			rl := m.routeLogits[:n*m.experts]
			ids, rw := m.routeIDs[:n*m.expertsUsed], m.rw[:n*m.expertsUsed]
			if err := m.linear(ctx, n, h, &y.router, rl); err != nil {
				return libFail("ffn_gate_inp", err)
			}
			if err := ctx.MoeRoute(n, m.experts, m.expertsUsed, kb.MoeRoutingSoftmaxTopkNorm, rl, ids, rw); err != nil {
				return libFail("router", err)
			}
			if err := ctx.MoeExperts(n, hd, m.ffn, m.experts, m.expertsUsed, h, ids, rw, y.gate.typ, y.gate.data,
				y.up.data, y.down.data, kb.ActivationSilu, o); err != nil {
				return libFail("experts", err)
			}
		} else {
			if err := ctx.LinearGluW(n, hd, m.ffn, h, y.gate.typ, y.gate.data, y.up.data, kb.ActivationSilu, g); err != nil {
				return libFail("ffn_gate / ffn_up", err)
			}
			if err := m.linear(ctx, n, g, &y.down, o); err != nil {
				return libFail("ffn_down", err)
			}
		}
		// x += f, and the next norm (or the output norm) of it.
		next := m.outNorm.f32
		if l+1 < len(m.layer) {
			next = m.layer[l+1].attnNorm.f32
		}
		if err := ctx.AddRmsnorm(n, o, x, next, m.eps, h); err != nil {
			return libFail("norm", err)
		}
	}
	m.cached += n
	head := &m.embed
	if m.hasOutput {
		head = &m.output
	}
	first := n - 1
	if allLogits {
		first = 0
	}
	if err := m.linear(ctx, n-first, h[first*hd:], head, out); err != nil {
		return libFail("output", err)
	}
	return nil
}
