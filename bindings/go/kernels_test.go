package kernelbridge

import (
	"math"
	"math/rand"
	"testing"
)

// Every kernel is checked against a float64 reference written here from the
// header's documentation, never by calling the library.

func randn(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func f64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// near fails unless |got - want| <= atol + rtol*|want| for every element.
func near(t *testing.T, what string, got []float32, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(w) {
			if !math.IsNaN(g) {
				t.Fatalf("%s[%d] = %v, want NaN", what, i, g)
			}
			continue
		}
		if math.Abs(g-w) > atol+rtol*math.Abs(w) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g, w)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestActivations(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	x := randn(r, 1000, 3)
	x = append(x, 0, -0.5, 20, -20, 88, -88)
	cases := []struct {
		name string
		f    func(x, y []float32) error
		ref  func(float64) float64
	}{
		{"Silu", Silu, func(v float64) float64 { return v / (1 + math.Exp(-v)) }},
		{"Gelu", Gelu, func(v float64) float64 { return 0.5 * v * math.Erfc(-v/math.Sqrt2) }},
		{"GeluTanh", GeluTanh, func(v float64) float64 {
			// 0.5*v*(1 + tanh(u)) without the cancellation of 1 + tanh(u) < 0.
			u := math.Sqrt(2/math.Pi) * (v + 0.044715*v*v*v)
			return v / (1 + math.Exp(-2*u))
		}},
	}
	for _, c := range cases {
		y := make([]float32, len(x))
		must(t, c.f(x, y))
		want := make([]float64, len(x))
		for i, v := range x {
			want[i] = c.ref(float64(v))
		}
		near(t, c.name, y, want, 2e-7, 1e-30)
	}
}

func TestArithmetic(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	n := 257
	a, b := randn(r, n, 1), randn(r, n, 1)
	y := make([]float32, n)
	must(t, Add(a, b, y))
	for i := range y {
		if y[i] != a[i]+b[i] { // one float32 rounding: exact
			t.Fatalf("Add[%d] = %v, want %v", i, y[i], a[i]+b[i])
		}
	}
	must(t, Mul(a, b, y))
	for i := range y {
		if y[i] != a[i]*b[i] {
			t.Fatalf("Mul[%d] = %v, want %v", i, y[i], a[i]*b[i])
		}
	}
	must(t, Scale(-2.5, a, y))
	for i := range y {
		if y[i] != float32(float64(-2.5)*float64(a[i])) {
			t.Fatalf("Scale[%d] = %v", i, y[i])
		}
	}
	// In place (alias(a, b)).
	c := append([]float32(nil), a...)
	must(t, Add(c, b, c))
	for i := range c {
		if c[i] != a[i]+b[i] {
			t.Fatalf("in-place Add[%d] = %v", i, c[i])
		}
	}
}

func TestAddBias(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	rows, cols := 5, 7
	x, bias := randn(r, rows*cols, 1), randn(r, cols, 1)
	y := make([]float32, rows*cols)
	must(t, AddBias(rows, x, bias, y))
	for i := range y {
		if y[i] != x[i]+bias[i%cols] {
			t.Fatalf("AddBias[%d] = %v", i, y[i])
		}
	}
}

func refSoftmax(x []float64, cols int, log bool) []float64 {
	out := make([]float64, len(x))
	for r := 0; r*cols < len(x); r++ {
		row := x[r*cols : (r+1)*cols]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for c, v := range row {
			if log {
				out[r*cols+c] = v - m - math.Log(s)
			} else {
				out[r*cols+c] = math.Exp(v-m) / s
			}
		}
	}
	return out
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	rows, cols := 6, 33
	x := randn(r, rows*cols, 4)
	x[5] = 1e4 // stability: magnitude 1e4
	y := make([]float32, len(x))
	must(t, Softmax(rows, cols, x, y))
	near(t, "Softmax", y, refSoftmax(f64(x), cols, false), 1e-5, 1e-12)
	must(t, LogSoftmax(rows, cols, x, y))
	near(t, "LogSoftmax", y, refSoftmax(f64(x), cols, true), 1e-5, 1e-5)
	// NaN propagates to its row only.
	x[cols+3] = float32(math.NaN())
	must(t, Softmax(rows, cols, x, y))
	for c := 0; c < cols; c++ {
		if !math.IsNaN(float64(y[cols+c])) || math.IsNaN(float64(y[c])) {
			t.Fatalf("NaN row: y[0,%d] = %v, y[1,%d] = %v", c, y[c], c, y[cols+c])
		}
	}
}

func TestNorms(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	rows, cols := 4, 19
	x, w, b := randn(r, rows*cols, 2), randn(r, cols, 1), randn(r, cols, 1)
	eps := float32(1e-5)
	y := make([]float32, len(x))
	must(t, Rmsnorm(rows, x, w, eps, y))
	want := make([]float64, len(x))
	for i := 0; i < rows; i++ {
		ss := 0.0
		for c := 0; c < cols; c++ {
			v := float64(x[i*cols+c])
			ss += v * v
		}
		d := math.Sqrt(ss/float64(cols) + float64(eps))
		for c := 0; c < cols; c++ {
			want[i*cols+c] = float64(x[i*cols+c]) / d * float64(w[c])
		}
	}
	near(t, "Rmsnorm", y, want, 1e-5, 1e-6)

	layer := func(w, b []float32) []float64 {
		out := make([]float64, len(x))
		for i := 0; i < rows; i++ {
			mean, vr := 0.0, 0.0
			for c := 0; c < cols; c++ {
				mean += float64(x[i*cols+c])
			}
			mean /= float64(cols)
			for c := 0; c < cols; c++ {
				d := float64(x[i*cols+c]) - mean
				vr += d * d
			}
			vr /= float64(cols)
			for c := 0; c < cols; c++ {
				v := (float64(x[i*cols+c]) - mean) / math.Sqrt(vr+float64(eps))
				if w != nil {
					v *= float64(w[c])
				}
				if b != nil {
					v += float64(b[c])
				}
				out[i*cols+c] = v
			}
		}
		return out
	}
	must(t, Layernorm(rows, cols, x, w, b, eps, y))
	near(t, "Layernorm", y, layer(w, b), 1e-5, 1e-5)
	must(t, Layernorm(rows, cols, x, nil, nil, eps, y)) // nil weight and bias: 1 and 0
	near(t, "Layernorm(nil, nil)", y, layer(nil, nil), 1e-5, 1e-5)
	must(t, Layernorm(rows, cols, x, nil, b, eps, y))
	near(t, "Layernorm(nil, b)", y, layer(nil, b), 1e-5, 1e-5)
}

func TestGemm(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	m, n, k := 5, 6, 7
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		ta, tb := tr[0], tr[1]
		ar, ac := m, k
		if ta {
			ar, ac = k, m
		}
		br, bc := k, n
		if tb {
			br, bc = n, k
		}
		lda, ldb, ldc := ac+2, bc+1, n+3
		a := randn(r, (ar-1)*lda+ac, 1)
		b := randn(r, (br-1)*ldb+bc, 1)
		c := randn(r, m*ldc, 1) // longer than needed: allowed for strided tensors
		c0 := append([]float32(nil), c...)
		alpha, beta := float32(0.75), float32(-0.5)
		must(t, Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
		want := f64(c0)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for p := 0; p < k; p++ {
					var av, bv float32
					if ta {
						av = a[p*lda+i]
					} else {
						av = a[i*lda+p]
					}
					if tb {
						bv = b[j*ldb+p]
					} else {
						bv = b[p*ldb+j]
					}
					s += float64(av) * float64(bv)
				}
				want[i*ldc+j] = float64(alpha)*s + float64(beta)*float64(c0[i*ldc+j])
			}
		}
		near(t, "Gemm", c, want, 1e-5, 1e-5)
	}
	// beta == 0: C is not read, NaN in it does not leak.
	a, b := randn(r, m*k, 1), randn(r, k*n, 1)
	c := make([]float32, m*n)
	for i := range c {
		c[i] = float32(math.NaN())
	}
	must(t, Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n))
	for i, v := range c {
		if math.IsNaN(float64(v)) {
			t.Fatalf("Gemm beta=0: c[%d] is NaN", i)
		}
	}
}

func TestEmbedding(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	vocab, dim := 10, 4
	table := randn(r, vocab*dim, 1)
	ids := []int32{3, 0, 9, 3}
	out := make([]float32, len(ids)*dim)
	must(t, Embedding(vocab, dim, ids, table, out))
	for i, id := range ids {
		for d := 0; d < dim; d++ {
			if out[i*dim+d] != table[int(id)*dim+d] {
				t.Fatalf("Embedding out[%d,%d]", i, d)
			}
		}
	}
	err := Embedding(vocab, dim, []int32{1, 10, 2, 0}, table, out)
	wantErr(t, err, InvalidArgument, "kb_embedding")
}

func TestRope(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	heads, headDim := 3, 8
	positions := []int32{0, 1, 5, 100}
	seq := len(positions)
	theta := float32(10000)
	x := randn(r, seq*heads*headDim, 1)
	y := make([]float32, len(x))
	must(t, Rope(heads, headDim, x, positions, theta, y))
	h := headDim / 2
	want := make([]float64, len(x))
	for s := 0; s < seq; s++ {
		for hd := 0; hd < heads; hd++ {
			base := (s*heads + hd) * headDim
			for i := 0; i < h; i++ {
				ang := float64(positions[s]) * math.Pow(float64(theta), -2*float64(i)/float64(headDim))
				x0, x1 := float64(x[base+i]), float64(x[base+i+h])
				want[base+i] = x0*math.Cos(ang) - x1*math.Sin(ang)
				want[base+i+h] = x1*math.Cos(ang) + x0*math.Sin(ang)
			}
		}
	}
	near(t, "Rope", y, want, 1e-5, 1e-6)
	// In place.
	must(t, Rope(heads, headDim, x, positions, theta, x))
	near(t, "Rope in place", x, want, 1e-5, 1e-6)
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	batch, heads, kvHeads, seqQ, seqKV, headDim := 2, 4, 2, 3, 5, 8
	q := randn(r, batch*heads*seqQ*headDim, 1)
	k := randn(r, batch*kvHeads*seqKV*headDim, 1)
	v := randn(r, batch*kvHeads*seqKV*headDim, 1)
	for _, causal := range []bool{false, true} {
		for _, scale := range []float32{0, 0.3} {
			out := make([]float32, len(q))
			must(t, Attention(batch, heads, kvHeads, seqQ, seqKV, headDim, q, k, v, causal, scale, out))
			sc := float64(scale)
			if sc == 0 {
				sc = 1 / math.Sqrt(float64(headDim))
			}
			want := make([]float64, len(q))
			for b := 0; b < batch; b++ {
				for h := 0; h < heads; h++ {
					kh := h / (heads / kvHeads)
					for i := 0; i < seqQ; i++ {
						qi := ((b*heads+h)*seqQ + i) * headDim
						nk := seqKV
						if causal && i+1 < nk {
							nk = i + 1
						}
						s := make([]float64, nk)
						m := math.Inf(-1)
						for j := 0; j < nk; j++ {
							kj := ((b*kvHeads+kh)*seqKV + j) * headDim
							d := 0.0
							for e := 0; e < headDim; e++ {
								d += float64(q[qi+e]) * float64(k[kj+e])
							}
							s[j] = d * sc
							m = math.Max(m, s[j])
						}
						tot := 0.0
						for j := range s {
							s[j] = math.Exp(s[j] - m)
							tot += s[j]
						}
						for e := 0; e < headDim; e++ {
							acc := 0.0
							for j := 0; j < nk; j++ {
								acc += s[j] / tot * float64(v[((b*kvHeads+kh)*seqKV+j)*headDim+e])
							}
							want[qi+e] = acc
						}
					}
				}
			}
			near(t, "Attention", out, want, 1e-5, 1e-6)
		}
	}
}

func TestCrossEntropy(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	classes := 9
	targets := []int32{1, -100, 8, 0, 4}
	rows := len(targets)
	logits := randn(r, rows*classes, 2)
	losses := make([]float32, rows)
	mean := make([]float32, 1)
	must(t, CrossEntropy(classes, logits, targets, -100, losses, mean))
	want := make([]float64, rows)
	sum, cnt := 0.0, 0
	lsm := refSoftmax(f64(logits), classes, true)
	for i, tg := range targets {
		if tg == -100 {
			continue
		}
		want[i] = -lsm[i*classes+int(tg)]
		sum += want[i]
		cnt++
	}
	near(t, "CrossEntropy losses", losses, want, 1e-5, 1e-6)
	near(t, "CrossEntropy mean", mean, []float64{sum / float64(cnt)}, 1e-5, 1e-6)

	dlogits := make([]float32, len(logits))
	dloss := float32(2)
	must(t, CrossEntropyBackward(classes, logits, targets, -100, dloss, dlogits))
	sm := refSoftmax(f64(logits), classes, false)
	wantG := make([]float64, len(logits))
	for i, tg := range targets {
		if tg == -100 {
			continue
		}
		for c := 0; c < classes; c++ {
			g := sm[i*classes+c]
			if c == int(tg) {
				g--
			}
			wantG[i*classes+c] = float64(dloss) * g / float64(cnt)
		}
	}
	near(t, "CrossEntropyBackward", dlogits, wantG, 1e-5, 1e-6)

	// Every row ignored: mean is NaN.
	must(t, CrossEntropy(classes, logits[:classes], []int32{-100}, -100, losses[:1], mean))
	if !math.IsNaN(float64(mean[0])) {
		t.Fatalf("mean over no rows = %v, want NaN", mean[0])
	}
}

func TestAdamwStep(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	n := 50
	params, grads := randn(r, n, 1), randn(r, n, 1)
	m, v := randn(r, n, 0.1), make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64() * 0.01)
	}
	p0, m0, v0 := f64(params), f64(m), f64(v)
	lr, b1, b2, eps, wd := float32(1e-3), float32(0.9), float32(0.999), float32(1e-8), float32(0.01)
	step := int64(3)
	must(t, AdamwStep(params, grads, m, v, lr, b1, b2, eps, wd, step))
	wp, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		g := float64(grads[i])
		p := p0[i] * (1 - float64(lr)*float64(wd))
		wm[i] = float64(b1)*m0[i] + (1-float64(b1))*g
		wv[i] = float64(b2)*v0[i] + (1-float64(b2))*g*g
		bc1 := 1 - math.Pow(float64(b1), float64(step))
		bc2 := 1 - math.Pow(float64(b2), float64(step))
		wp[i] = p - (float64(lr)/bc1)*wm[i]/(math.Sqrt(wv[i])/math.Sqrt(bc2)+float64(eps))
	}
	near(t, "AdamW m", m, wm, 1e-5, 1e-7)
	near(t, "AdamW v", v, wv, 1e-5, 1e-9)
	near(t, "AdamW params", params, wp, 1e-5, 1e-6)
}

func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	x := []float32{
		1, 3, 3, 2, // tie: first
		-1, -5, -0.5, -2,
		0, nan, 9, nan, // NaN is larger than everything
	}
	out := make([]int32, 3)
	must(t, Argmax(4, x, out))
	want := []int32{1, 2, 1}
	for i := range out {
		if out[i] != want[i] {
			t.Fatalf("Argmax = %v, want %v", out, want)
		}
	}
}

// --- sampling ---------------------------------------------------------------

func philox(c [4]uint32, k [2]uint32) [4]uint32 {
	for round := 0; round < 10; round++ {
		if round > 0 {
			k[0] += 0x9E3779B9
			k[1] += 0xBB67AE85
		}
		p0 := uint64(0xD2511F53) * uint64(c[0])
		p1 := uint64(0xCD9E8D57) * uint64(c[2])
		hi0, lo0 := uint32(p0>>32), uint32(p0)
		hi1, lo1 := uint32(p1>>32), uint32(p1)
		c = [4]uint32{hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0}
	}
	return c
}

func TestPhiloxKnownAnswers(t *testing.T) {
	got := philox([4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0})
	if got != [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1} {
		t.Fatalf("philox reference: %x", got)
	}
}

func sampleRef(x []float32, row int, seed uint64, kind string, k int, p, temp float64) int32 {
	w := philox([4]uint32{uint32(row), uint32(uint64(row) >> 32), 0, 0}, [2]uint32{uint32(seed), uint32(seed >> 32)})
	u := float64(w[0]>>8) * (1.0 / (1 << 24))
	cand := make([]int, len(x))
	for i := range cand {
		cand[i] = i
	}
	if kind != "sample" {
		// stable sort by decreasing logit
		for i := 1; i < len(cand); i++ {
			for j := i; j > 0 && x[cand[j]] > x[cand[j-1]]; j-- {
				cand[j], cand[j-1] = cand[j-1], cand[j]
			}
		}
		if kind == "topk" {
			cand = cand[:k]
		}
	}
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	S := make([]float64, len(cand))
	s := 0.0
	for i, c := range cand {
		s += math.Exp((float64(x[c]) - m) / temp)
		S[i] = s
	}
	L := len(cand)
	if kind == "topp" {
		for i := range S {
			if S[i] >= p*S[len(S)-1] {
				L = i + 1
				break
			}
		}
	}
	th := u * S[L-1]
	for i := 0; i < L; i++ {
		if S[i] > th {
			return int32(cand[i])
		}
	}
	return -1
}

func TestSampling(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	rows, cols := 64, 12
	logits := randn(r, rows*cols, 2)
	logits[3] = float32(math.Inf(-1))
	out := make([]int32, rows)
	seed := uint64(0x123456789abcdef)
	temp := float32(0.8)
	check := func(kind string, k int, p float32) {
		t.Helper()
		for i := 0; i < rows; i++ {
			want := sampleRef(logits[i*cols:(i+1)*cols], i, seed, kind, k, float64(p), float64(temp))
			if out[i] != want {
				t.Fatalf("%s row %d: token %d, want %d", kind, i, out[i], want)
			}
		}
	}
	must(t, Sample(cols, logits, temp, seed, out))
	check("sample", 0, 0)
	must(t, TopkSample(cols, logits, 3, temp, seed, out))
	check("topk", 3, 0)
	must(t, ToppSample(cols, logits, 0.7, temp, seed, out))
	check("topp", 0, 0.7)
	err := Sample(cols, append([]float32{float32(math.NaN())}, logits[1:]...), temp, seed, out)
	wantErr(t, err, InvalidArgument, "row 0")
}

// Results do not depend on the thread count (bit-identical).
func TestThreadCountIndependence(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	rows, cols := 512, 300
	x := randn(r, rows*cols, 3)
	c4, err := NewContext(4, BackendCPU)
	must(t, err)
	defer c4.Close()
	y1, y4 := make([]float32, len(x)), make([]float32, len(x))
	must(t, Softmax(rows, cols, x, y1))
	must(t, c4.Softmax(rows, cols, x, y4))
	for i := range y1 {
		if y1[i] != y4[i] {
			t.Fatalf("softmax differs at %d with 4 threads", i)
		}
	}
	z1, z4 := make([]float32, 40000), make([]float32, 40000)
	big := randn(r, 40000, 3)
	must(t, Silu(big, z1))
	must(t, c4.Silu(big, z4))
	for i := range z1 {
		if z1[i] != z4[i] {
			t.Fatalf("silu differs at %d with 4 threads", i)
		}
	}
}
