package main

// The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.
// Every arithmetic operation on tensors is a kernelbridge call, in the order
// of the README's "The computation"; Go only lays out ids, lengths, row
// indices and the pooling weights (layout.go).

import (
	"math"

	kb "kernelbridge.dev/go/kernelbridge"
)

type encoder struct {
	c        *config
	w        *weights
	ctx      *kb.Context
	eps      float32
	l2Weight []float32
	l2Eps    float32
}

func newEncoder(c *config, w *weights, ctx *kb.Context) *encoder {
	l2w := make([]float32, c.hidden)
	for i := range l2w {
		l2w[i] = float32(1.0 / math.Sqrt(float64(c.hidden)))
	}
	return &encoder{c: c, w: w, ctx: ctx, eps: float32(c.layerNormEps), l2Weight: l2w,
		l2Eps: float32(1e-24 / float64(c.hidden))}
}

// embed returns len(batch) rows of hidden floats, each of unit length.
// Rows hold real tokens only ("packed", n rows), except around attention,
// which reads the padded batch [b, s, heads, headDim].
func (e *encoder) embed(batch [][]int32) ([]float32, error) {
	c, w, ctx := e.c, e.w, e.ctx
	l := newLayout(batch)
	b, s, n, h := l.b, l.s, l.n, c.hidden
	types := make([]int32, n)
	x := make([]float32, n*h)
	t := make([]float32, n*h)
	hid := make([]float32, n*h)
	q := make([]float32, n*h)
	k := make([]float32, n*h)
	v := make([]float32, n*h)
	a := make([]float32, n*h)
	ff := make([]float32, n*c.intermediate)
	qp := make([]float32, b*s*h)
	kp := make([]float32, b*s*h)
	vp := make([]float32, b*s*h)
	ap := make([]float32, b*s*h)

	err := seq(
		func() error { return ctx.Embedding(c.vocabSize, h, l.ids, w.word, x) },
		func() error { return ctx.Embedding(c.typeVocab, h, types, w.tokenType, t) },
		func() error { return ctx.Add(x, t, x) },
		func() error { return ctx.Embedding(c.maxPositions, h, l.positions, w.position, t) },
		func() error { return ctx.Add(x, t, x) },
		func() error { return ctx.Layernorm(n, h, x, w.lnW, w.lnB, e.eps, hid) },
	)
	for i := 0; err == nil && i < len(w.layers); i++ {
		L := &w.layers[i]
		err = seq(
			func() error { return ctx.Linear(n, h, h, hid, L.qW, L.qB, kb.ActivationNone, q) },
			func() error { return ctx.Linear(n, h, h, hid, L.kW, L.kB, kb.ActivationNone, k) },
			func() error { return ctx.Linear(n, h, h, hid, L.vW, L.vB, kb.ActivationNone, v) },
			func() error { return ctx.Embedding(n, h, l.toPadded, q, qp) },
			func() error { return ctx.Embedding(n, h, l.toPadded, k, kp) },
			func() error { return ctx.Embedding(n, h, l.toPadded, v, vp) },
			func() error {
				return ctx.AttentionEx(b, c.heads, c.heads, s, s, c.headDim, true, qp, kp, vp, l.lengths,
					1, 1, 1, nil, false, false, 0, ap)
			},
			func() error { return ctx.Embedding(b*s, h, l.toPacked, ap, a) },
			func() error { return ctx.Linear(n, h, h, a, L.oW, L.oB, kb.ActivationNone, q) },
			func() error { return ctx.Add(q, hid, q) },
			func() error { return ctx.Layernorm(n, h, q, L.ln1W, L.ln1B, e.eps, x) },
			func() error { return ctx.Linear(n, h, c.intermediate, x, L.ff1W, L.ff1B, kb.ActivationGelu, ff) },
			func() error { return ctx.Linear(n, c.intermediate, h, ff, L.ff2W, L.ff2B, kb.ActivationNone, q) },
			func() error { return ctx.Add(q, x, q) },
			func() error { return ctx.Layernorm(n, h, q, L.ln2W, L.ln2B, e.eps, hid) },
		)
	}
	mean := make([]float32, b*h)
	out := make([]float32, b*h)
	if err == nil {
		pool := l.pooling()
		err = seq(
			func() error { return ctx.Gemm(false, false, b, h, n, 1, pool, n, hid, h, 0, mean, h) },
			func() error { return ctx.Rmsnorm(b, mean, e.l2Weight, e.l2Eps, out) },
		)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// seq runs the calls in order and stops at the first error.
func seq(calls ...func() error) error {
	for _, call := range calls {
		if err := call(); err != nil {
			return err
		}
	}
	return nil
}
