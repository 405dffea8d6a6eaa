package kernelbridge

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// The model-ready kernels against float64 references written here from the
// header (core/include/kernelbridge.h), and the options form against the
// generated call it wraps.

// attentionRef is kb_attention_ex in float64, head-major [b, h, s, d]
// indexing through at(); rows without keys are zeros.
func attentionRef(o *AttentionOptions, q, k, v []float64) []float64 {
	out := make([]float64, len(q))
	qi := func(b, h, i int) int {
		if o.SeqMajor {
			return ((b*o.SeqQ+i)*o.Heads + h) * o.HeadDim
		}
		return ((b*o.Heads+h)*o.SeqQ + i) * o.HeadDim
	}
	ki := func(b, h, j int) int {
		if o.SeqMajor {
			return ((b*o.SeqKV+j)*o.KVHeads + h) * o.HeadDim
		}
		return ((b*o.KVHeads+h)*o.SeqKV + j) * o.HeadDim
	}
	scale := float64(o.Scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(o.HeadDim))
	}
	mb, mh, mq := o.maskDims()
	for b := 0; b < o.Batch; b++ {
		n := o.SeqKV
		if o.KVLengths != nil {
			n = int(o.KVLengths[b])
		}
		for h := 0; h < o.Heads; h++ {
			kh := h / (o.Heads / o.KVHeads)
			for i := 0; i < o.SeqQ; i++ {
				lim := n
				if o.Causal {
					lim = i + 1
					if o.CausalBottomRight {
						lim = i + 1 + n - o.SeqQ
					}
					if lim < 0 {
						lim = 0
					}
					if lim > n {
						lim = n
					}
				}
				var s []float64
				var keys []int
				for j := 0; j < lim; j++ {
					dot := 0.0
					for d := 0; d < o.HeadDim; d++ {
						dot += q[qi(b, h, i)+d] * k[ki(b, kh, j)+d]
					}
					sc := dot * scale
					if o.Mask != nil {
						sc += float64(o.Mask[(((b%mb)*mh+h%mh)*mq+i%mq)*o.SeqKV+j])
					}
					if math.IsInf(sc, -1) {
						continue
					}
					s = append(s, sc)
					keys = append(keys, j)
				}
				if len(keys) == 0 {
					continue
				}
				m := math.Inf(-1)
				for _, x := range s {
					m = math.Max(m, x)
				}
				sum := 0.0
				for t := range s {
					s[t] = math.Exp(s[t] - m)
					sum += s[t]
				}
				for d := 0; d < o.HeadDim; d++ {
					acc := 0.0
					for t, j := range keys {
						acc += s[t] / sum * v[ki(b, kh, j)+d]
					}
					out[qi(b, h, i)+d] = acc
				}
			}
		}
	}
	return out
}

func TestAttentionWithOptions(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	negInf := float32(math.Inf(-1))
	cases := map[string]AttentionOptions{
		"plain":        {Batch: 2, Heads: 2, KVHeads: 1, SeqQ: 3, SeqKV: 5, HeadDim: 8},
		"seq major":    {Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 3, SeqKV: 4, HeadDim: 8, SeqMajor: true},
		"lengths":      {Batch: 3, Heads: 2, KVHeads: 2, SeqQ: 2, SeqKV: 5, HeadDim: 4, KVLengths: []int32{5, 2, 0}},
		"bottom right": {Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 3, SeqKV: 6, HeadDim: 4, Causal: true, CausalBottomRight: true, KVLengths: []int32{6, 2}},
		"top left":     {Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 3, SeqKV: 6, HeadDim: 4, Causal: true, Scale: 0.25},
		"padding mask": {Batch: 2, Heads: 2, KVHeads: 2, SeqQ: 3, SeqKV: 4, HeadDim: 4, SeqMajor: true, MaskBatch: 2, Mask: []float32{0, 0, 0, 0, 0, 0, negInf, negInf}},
	}
	for name, o := range cases {
		o := o
		nq := o.Batch * o.Heads * o.SeqQ * o.HeadDim
		nk := o.Batch * o.KVHeads * o.SeqKV * o.HeadDim
		q, k, v := randn(r, nq, 1), randn(r, nk, 1), randn(r, nk, 1)
		out := make([]float32, nq)
		if err := AttentionWith(&o, q, k, v, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		near(t, name, out, attentionRef(&o, f64(q), f64(k), f64(v)), 1e-5, 1e-6)
		// The options form is exactly the generated call.
		mb, mh, mq := o.maskDims()
		direct := make([]float32, nq)
		if err := AttentionEx(o.Batch, o.Heads, o.KVHeads, o.SeqQ, o.SeqKV, o.HeadDim, o.SeqMajor, q, k, v,
			o.KVLengths, mb, mh, mq, o.Mask, o.Causal, o.CausalBottomRight, o.Scale, direct); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if math.Float32bits(out[i]) != math.Float32bits(direct[i]) {
				t.Fatalf("%s: element %d differs from AttentionEx", name, i)
			}
		}
	}
}

func TestAttentionWithErrors(t *testing.T) {
	o := AttentionOptions{Batch: 2, Heads: 2, KVHeads: 1, SeqQ: 2, SeqKV: 3, HeadDim: 4}
	q, k, out := make([]float32, 32), make([]float32, 24), make([]float32, 32)
	for i := range out {
		out[i] = 7
	}
	check := func(what string, o AttentionOptions, code error, text string) {
		t.Helper()
		err := AttentionWith(&o, q, k, k, out)
		var e *Error
		if !errors.Is(err, code) || !errors.As(err, &e) || !strings.Contains(e.Msg, text) {
			t.Fatalf("%s: got %v, want %v containing %q", what, err, code, text)
		}
		for i := range out {
			if out[i] != 7 {
				t.Fatalf("%s: out written", what)
			}
		}
	}
	bad := o
	bad.Mask, bad.MaskBatch = make([]float32, 9), 3
	check("mask batch", bad, ErrShapeMismatch, "mask_batch must be 1 or batch (2), got 3")
	bad = o
	bad.Mask = make([]float32, 2)
	check("mask length", bad, ErrShapeMismatch, "len(mask) is 2, want 3")
	bad = o
	bad.KVLengths = []int32{3, 4}
	check("lengths range", bad, ErrInvalidArgument, "kv_lengths[1] = 4 is out of range [0, 3]")
	bad = o
	bad.KVLengths = []int32{3}
	check("lengths length", bad, ErrShapeMismatch, "len(kvLengths) is 1, want 2")
	bad = o
	bad.CausalBottomRight = true
	check("bottom right alone", bad, ErrInvalidArgument, "causal_bottom_right needs causal")
}

func TestLinearActivations(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	rows, in, outF := 4, 6, 3
	x, w, b := randn(r, rows*in, 1), randn(r, outF*in, 0.5), randn(r, outF, 1)
	acts := map[Activation]func(float64) float64{
		ActivationNone:     func(y float64) float64 { return y },
		ActivationRelu:     func(y float64) float64 { return math.Max(y, 0) },
		ActivationGelu:     func(y float64) float64 { return 0.5 * y * (1 + math.Erf(y/math.Sqrt2)) },
		ActivationGeluTanh: func(y float64) float64 { return 0.5 * y * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(y+0.044715*y*y*y))) },
		ActivationSilu:     func(y float64) float64 { return y / (1 + math.Exp(-y)) },
	}
	for act, f := range acts {
		for _, bias := range [][]float32{b, nil} {
			y := make([]float32, rows*outF)
			if err := Linear(rows, in, outF, x, w, bias, act, y); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, rows*outF)
			for i := 0; i < rows; i++ {
				for o := 0; o < outF; o++ {
					s := 0.0
					for p := 0; p < in; p++ {
						s += float64(x[i*in+p]) * float64(w[o*in+p])
					}
					if bias != nil {
						s += float64(bias[o])
					}
					want[i*outF+o] = f(s)
				}
			}
			near(t, act.String(), y, want, 2e-5, 2e-6)
		}
	}
	y := make([]float32, rows*outF)
	if err := Linear(rows, in, outF, x, w, b, Activation(9), y); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("act 9: %v", err)
	}
}

func TestGemmBatchedStrides(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	batch, m, n, k := 3, 2, 4, 5
	a := randn(r, batch*m*k, 1)
	w := randn(r, k*n, 1) // stride 0: one B for every item
	ldc, strideC := n+1, m*(n+1)+2
	c := make([]float32, (batch-1)*strideC+(m-1)*ldc+n+2)
	for i := range c {
		c[i] = -5
	}
	if err := GemmBatched(false, false, batch, m, n, k, 1, a, k, m*k, w, n, 0, 0, c, ldc, strideC); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < batch; i++ {
		got := make([]float32, 0, m*n)
		want := make([]float64, 0, m*n)
		for row := 0; row < m; row++ {
			for col := 0; col < n; col++ {
				got = append(got, c[i*strideC+row*ldc+col])
				s := 0.0
				for p := 0; p < k; p++ {
					s += float64(a[i*m*k+row*k+p]) * float64(w[p*n+col])
				}
				want = append(want, s)
			}
		}
		near(t, "item", got, want, 1e-5, 1e-5)
	}
	written := 0
	for i := range c {
		if c[i] != -5 {
			written++
		}
	}
	if written != batch*m*n {
		t.Fatalf("%d elements written, want %d (padding and gaps must stay)", written, batch*m*n)
	}
	short := make([]float32, len(c)-3)
	if err := GemmBatched(false, false, batch, m, n, k, 1, a, k, m*k, w, n, 0, 0, short, ldc, strideC); !errors.Is(err, ErrShapeMismatch) {
		t.Fatalf("short c: %v", err)
	}
	if err := GemmBatched(false, false, batch, m, n, k, 1, a, k, m*k, w, n, 0, 0, c, ldc, 3); !errors.Is(err, ErrShapeMismatch) {
		t.Fatalf("overlapping items of c: %v", err)
	}
	if err := GemmBatched(false, false, batch, m, n, k, 1, a, k, -1, w, n, 0, 0, c, ldc, strideC); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative stride: %v", err)
	}
}

// encoderParams and encoderLayer are the transformer block of docs/go.md.
type encoderParams struct {
	Wq, Bq, Wk, Bk, Wv, Bv, Wo, Bo, G1, N1, W1, B1, W2, B2, G2, N2 []float32
}

func encoderLayer(ctx *Context, x []float32, lengths []int32, p *encoderParams, b, s, d, heads int) ([]float32, error) {
	rows, f := b*s, len(p.B1)
	q, k, v := make([]float32, rows*d), make([]float32, rows*d), make([]float32, rows*d)
	for _, l := range []struct{ w, b, y []float32 }{{p.Wq, p.Bq, q}, {p.Wk, p.Bk, k}, {p.Wv, p.Bv, v}} {
		if err := ctx.Linear(rows, d, d, x, l.w, l.b, ActivationNone, l.y); err != nil {
			return nil, err
		}
	}
	a := make([]float32, rows*d)
	opts := &AttentionOptions{Batch: b, Heads: heads, KVHeads: heads, SeqQ: s, SeqKV: s,
		HeadDim: d / heads, SeqMajor: true, KVLengths: lengths}
	if err := ctx.AttentionWith(opts, q, k, v, a); err != nil {
		return nil, err
	}
	h := make([]float32, rows*d)
	if err := ctx.Linear(rows, d, d, a, p.Wo, p.Bo, ActivationNone, h); err != nil {
		return nil, err
	}
	if err := ctx.Add(h, x, h); err != nil {
		return nil, err
	}
	if err := ctx.Layernorm(rows, d, h, p.G1, p.N1, 1e-12, h); err != nil {
		return nil, err
	}
	ff, out := make([]float32, rows*f), make([]float32, rows*d)
	if err := ctx.Linear(rows, d, f, h, p.W1, p.B1, ActivationGelu, ff); err != nil {
		return nil, err
	}
	if err := ctx.Linear(rows, f, d, ff, p.W2, p.B2, ActivationNone, out); err != nil {
		return nil, err
	}
	if err := ctx.Add(out, h, out); err != nil {
		return nil, err
	}
	return out, ctx.Layernorm(rows, d, out, p.G2, p.N2, 1e-12, out)
}

// The block of the docs runs, and padding is invisible: changing the padded
// tokens of a sentence changes nothing in its real tokens' outputs.
func TestEncoderLayerDocExample(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	b, s, d, f, heads := 2, 4, 8, 16, 2
	p := &encoderParams{
		Wq: randn(r, d*d, 0.3), Bq: randn(r, d, 0.3), Wk: randn(r, d*d, 0.3), Bk: randn(r, d, 0.3),
		Wv: randn(r, d*d, 0.3), Bv: randn(r, d, 0.3), Wo: randn(r, d*d, 0.3), Bo: randn(r, d, 0.3),
		G1: randn(r, d, 1), N1: randn(r, d, 1), W1: randn(r, f*d, 0.3), B1: randn(r, f, 0.3),
		W2: randn(r, d*f, 0.3), B2: randn(r, d, 0.3), G2: randn(r, d, 1), N2: randn(r, d, 1),
	}
	ctx, err := NewContext(2, BackendCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	lengths := []int32{4, 2}
	x := randn(r, b*s*d, 1)
	out1, err := encoderLayer(ctx, x, lengths, p, b, s, d, heads)
	if err != nil {
		t.Fatal(err)
	}
	x2 := append([]float32(nil), x...)
	for i := (1*s + 2) * d; i < b*s*d; i++ { // sentence 1's two padding tokens
		x2[i] += 5
	}
	out2, err := encoderLayer(ctx, x2, lengths, p, b, s, d, heads)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < (1*s+2)*d; i++ {
		if math.Float32bits(out1[i]) != math.Float32bits(out2[i]) {
			t.Fatalf("element %d of a real token changed with the padding", i)
		}
		if math.IsNaN(float64(out1[i])) {
			t.Fatalf("element %d is NaN", i)
		}
	}
}
