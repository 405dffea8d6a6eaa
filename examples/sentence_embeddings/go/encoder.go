package main

// The encoder: token ids of a batch -> L2-normalised mean-pooled embeddings.
// Every arithmetic operation on tensors is a kernelbridge call, in the order
// of the README's "The computation"; Go only lays out ids, lengths and the
// pooling weights.

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
func (e *encoder) embed(batch [][]int32) ([]float32, error) {
	c, w, ctx := e.c, e.w, e.ctx
	b := len(batch)
	s := 0
	lengths := make([]int32, b)
	for i, ids := range batch {
		lengths[i] = int32(len(ids))
		if len(ids) > s {
			s = len(ids)
		}
	}
	rows, h := b*s, c.hidden
	ids := make([]int32, rows) // padding: id 0 ([PAD])
	positions := make([]int32, rows)
	types := make([]int32, rows)
	for i, seq := range batch {
		copy(ids[i*s:], seq)
		for j := 0; j < s; j++ {
			positions[i*s+j] = int32(j)
		}
	}
	x := make([]float32, rows*h)
	t := make([]float32, rows*h)
	hid := make([]float32, rows*h)
	q := make([]float32, rows*h)
	k := make([]float32, rows*h)
	v := make([]float32, rows*h)
	att := make([]float32, rows*h)
	ff := make([]float32, rows*c.intermediate)

	err := seq(
		func() error { return ctx.Embedding(c.vocabSize, h, ids, w.word, x) },
		func() error { return ctx.Embedding(c.typeVocab, h, types, w.tokenType, t) },
		func() error { return ctx.Add(x, t, x) },
		func() error { return ctx.Embedding(c.maxPositions, h, positions, w.position, t) },
		func() error { return ctx.Add(x, t, x) },
		func() error { return ctx.Layernorm(rows, h, x, w.lnW, w.lnB, e.eps, hid) },
	)
	for i := 0; err == nil && i < len(w.layers); i++ {
		L := &w.layers[i]
		err = seq(
			func() error { return ctx.Linear(rows, h, h, hid, L.qW, L.qB, kb.ActivationNone, q) },
			func() error { return ctx.Linear(rows, h, h, hid, L.kW, L.kB, kb.ActivationNone, k) },
			func() error { return ctx.Linear(rows, h, h, hid, L.vW, L.vB, kb.ActivationNone, v) },
			func() error {
				return ctx.AttentionEx(b, c.heads, c.heads, s, s, c.headDim, true, q, k, v, lengths,
					1, 1, 1, nil, false, false, 0, att)
			},
			func() error { return ctx.Linear(rows, h, h, att, L.oW, L.oB, kb.ActivationNone, q) },
			func() error { return ctx.Add(q, hid, q) },
			func() error { return ctx.Layernorm(rows, h, q, L.ln1W, L.ln1B, e.eps, x) },
			func() error { return ctx.Linear(rows, h, c.intermediate, x, L.ff1W, L.ff1B, kb.ActivationGelu, ff) },
			func() error { return ctx.Linear(rows, c.intermediate, h, ff, L.ff2W, L.ff2B, kb.ActivationNone, q) },
			func() error { return ctx.Add(q, x, q) },
			func() error { return ctx.Layernorm(rows, h, q, L.ln2W, L.ln2B, e.eps, hid) },
		)
	}
	pool := poolingMatrix(lengths, s)
	mean := make([]float32, b*h)
	out := make([]float32, b*h)
	if err == nil {
		err = seq(
			func() error { return ctx.Gemm(false, false, b, h, rows, 1, pool, rows, hid, h, 0, mean, h) },
			func() error { return ctx.Rmsnorm(b, mean, e.l2Weight, e.l2Eps, out) },
		)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// poolingMatrix: [b, b*s]; row r holds float32(1 / lengths[r]) over its own
// tokens and 0 elsewhere.
func poolingMatrix(lengths []int32, s int) []float32 {
	b := len(lengths)
	p := make([]float32, b*b*s)
	for r, n := range lengths {
		inv := float32(1.0 / float64(n))
		row := p[r*b*s+r*s : r*b*s+r*s+int(n)]
		for i := range row {
			row[i] = inv
		}
	}
	return p
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
