package kernelbridge

import (
	"math"
	"math/rand"
	"testing"
)

// The reduced-precision kernels are checked against the float32 kernels: on
// the CPU, kb_<op>_bf16 / _f16 is kb_<op> on the widened inputs, rounded once
// to the dtype (nearest, ties to even).  The rounding below is the test's
// own, written with float64 arithmetic (scale to units of the last place,
// math.RoundToEven), independent of the bit manipulation of half.go and of
// the C library.

// format is a 16-bit floating-point format.
type format struct {
	name     string
	fracBits int     // stored fraction bits
	minExp   int     // exponent of the smallest normal number
	overflow float64 // |x| >= overflow rounds to infinity
}

var (
	bf16 = format{"bf16", 7, -126, 0x1.ffp127} // halfway between 0x1.fep127 and 2^128
	f16  = format{"f16", 10, -14, 65520}       // halfway between 65504 and 2^16
)

// refEncode rounds the float32 value v to the format and returns its bits.
func (f format) refEncode(v float32) uint16 {
	x := float64(v)
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
		x = -x
	}
	expBits := 15 - f.fracBits // 8 or 5
	maxExp := 1<<expBits - 1   // all ones: infinity and NaN
	if math.IsNaN(x) {
		return sign | uint16(maxExp)<<f.fracBits | 1<<(f.fracBits-1)
	}
	if x >= f.overflow {
		return sign | uint16(maxExp)<<f.fracBits
	}
	// The unit in the last place at x's binade (subnormals: at minExp).
	_, e := math.Frexp(x) // x = m * 2^e, m in [0.5, 1)
	e--
	if e < f.minExp {
		e = f.minExp
	}
	ulp := math.Ldexp(1, e-f.fracBits)
	r := math.RoundToEven(x/ulp) * ulp // exact: x/ulp only rescales x
	if r == 0 {
		return sign
	}
	_, e = math.Frexp(r)
	e--
	if e < f.minExp { // subnormal: r = q * 2^(minExp - fracBits)
		return sign | uint16(r/math.Ldexp(1, f.minExp-f.fracBits))
	}
	bias := 1<<(expBits-1) - 1
	frac := r/math.Ldexp(1, e) - 1 // in [0, 1), a multiple of 2^-fracBits
	return sign | uint16(e+bias)<<f.fracBits | uint16(frac*math.Ldexp(1, f.fracBits))
}

// refDecode is the value of the bits h (NaN for every NaN).
func (f format) refDecode(h uint16) float64 {
	expBits := 15 - f.fracBits
	exp := int(h>>f.fracBits) & (1<<expBits - 1)
	frac := float64(h & (1<<f.fracBits - 1))
	bias := 1<<(expBits-1) - 1
	var v float64
	switch {
	case exp == 1<<expBits-1 && frac != 0:
		return math.NaN()
	case exp == 1<<expBits-1:
		v = math.Inf(1)
	case exp == 0:
		v = frac * math.Ldexp(1, f.minExp-f.fracBits)
	default:
		v = (1 + frac*math.Ldexp(1, -f.fracBits)) * math.Ldexp(1, exp-bias)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

func (f format) isNaN(h uint16) bool { return math.IsNaN(f.refDecode(h)) }

func (f format) round(x []float32) []uint16 {
	out := make([]uint16, len(x))
	for i, v := range x {
		out[i] = f.refEncode(v)
	}
	return out
}

func (f format) widen(h []uint16) []float32 {
	out := make([]float32, len(h))
	for i, v := range h {
		out[i] = float32(f.refDecode(v))
	}
	return out
}

// sameBits fails unless got[i] is want[i] (any NaN matching any NaN).
func (f format) sameBits(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] && !(f.isNaN(got[i]) && f.isNaN(want[i]) && got[i]&0x8000 == want[i]&0x8000) {
			t.Fatalf("%s %s[%d] = %#04x (%v), want %#04x (%v)", f.name, what, i, got[i], f.refDecode(got[i]),
				want[i], f.refDecode(want[i]))
		}
	}
}

func (f format) encode(v float32) uint16 {
	if f.name == "bf16" {
		return Float32ToBF16(v)
	}
	return Float32ToF16(v)
}

func (f format) decode(h uint16) float32 {
	if f.name == "bf16" {
		return BF16ToFloat32(h)
	}
	return F16ToFloat32(h)
}

// The package's conversions agree with the reference: every 16-bit pattern,
// ties, overflow, subnormals and random float32 values.
func TestHalfConversions(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, f := range []format{bf16, f16} {
		for h := 0; h < 1<<16; h++ {
			v := f.decode(uint16(h))
			w := f.refDecode(uint16(h))
			if math.IsNaN(w) {
				if !math.IsNaN(float64(v)) || math.Signbit(float64(v)) != (h&0x8000 != 0) {
					t.Fatalf("%s %#04x decodes to %v, want NaN", f.name, h, v)
				}
				if back := f.encode(v); !f.isNaN(back) {
					t.Fatalf("%s NaN %#04x comes back as %#04x", f.name, h, back)
				}
				continue
			}
			if float64(v) != w {
				t.Fatalf("%s %#04x decodes to %v, want %v", f.name, h, v, w)
			}
			if back := f.encode(v); back != uint16(h) {
				t.Fatalf("%s %#04x round trip gives %#04x", f.name, h, back)
			}
			// Halfway to the next value up: ties go to the even neighbour.
			if next := f.refDecode(uint16(h + 1)); !math.IsInf(next, 0) && !math.IsNaN(next) && !math.IsInf(w, 0) &&
				(h+1)&0x8000 == h&0x8000 {
				mid := float32((w + next) / 2)
				if float64(mid) == (w+next)/2 {
					if got, want := f.encode(mid), f.refEncode(mid); got != want {
						t.Fatalf("%s tie %v: %#04x, want %#04x", f.name, mid, got, want)
					}
				}
			}
		}
		specials := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.996, 65520, -65520, 1e-8, 3e-8, 5.96e-8,
			2.98e-8, 2.9802322e-08, 6.1035156e-05, 6.1e-05, math.MaxFloat32, -math.MaxFloat32, 0x1p-149,
			float32(math.Inf(1)), float32(math.Inf(-1)), 3.3895314e38, 3.3961775e38, 1.0039062, 1.0009766, 1.0029297}
		for _, v := range specials {
			if got, want := f.encode(v), f.refEncode(v); got != want {
				t.Fatalf("%s(%v) = %#04x, want %#04x", f.name, v, got, want)
			}
		}
		for i := 0; i < 300000; i++ {
			v := math.Float32frombits(r.Uint32())
			got, want := f.encode(v), f.refEncode(v)
			if got != want && !(f.isNaN(got) && f.isNaN(want)) {
				t.Fatalf("%s(%v = %#08x) = %#04x, want %#04x", f.name, v, math.Float32bits(v), got, want)
			}
		}
	}
	// The slice helpers convert min(len) elements, like copy.
	dst := make([]uint16, 2)
	if n := Float32sToF16(dst, []float32{1, 2, 3}); n != 2 || dst[1] != 0x4000 {
		t.Fatalf("Float32sToF16: %d %x", n, dst)
	}
	back := make([]float32, 3)
	if n := F16sToFloat32(back, dst); n != 2 || back[1] != 2 {
		t.Fatalf("F16sToFloat32: %d %v", n, back)
	}
	if n := Float32sToBF16(dst, []float32{-1}); n != 1 || dst[0] != 0xbf80 {
		t.Fatalf("Float32sToBF16: %d %x", n, dst)
	}
	if n := BF16sToFloat32(back, dst[:1]); n != 1 || back[0] != -1 {
		t.Fatalf("BF16sToFloat32: %d %v", n, back)
	}
}

// halfKernels are the bf16 and f16 functions of one dtype.
type halfKernels struct {
	silu, gelu, geluTanh func(x, y []uint16) error
	add, mul             func(a, b, y []uint16) error
	scale                func(alpha float32, x, y []uint16) error
	addBias              func(rows int, x, bias, y []uint16) error
	softmax, logSoftmax  func(rows, cols int, x, y []uint16) error
	rmsnorm              func(rows int, x, w []uint16, eps float32, y []uint16) error
	layernorm            func(rows, cols int, x, w, b []uint16, eps float32, y []uint16) error
	gemm                 func(ta, tb bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []uint16, ldc int) error
	attention            func(batch, heads, kvHeads, seqQ, seqKV, headDim int, q, k, v []uint16, causal bool, scale float32, out []uint16) error
	format               format
}

func TestHalfKernels(t *testing.T) {
	ctx := cpuContext(t, 2)
	dtypes := []halfKernels{
		{ctx.SiluBF16, ctx.GeluBF16, ctx.GeluTanhBF16, ctx.AddBF16, ctx.MulBF16, ctx.ScaleBF16, ctx.AddBiasBF16,
			ctx.SoftmaxBF16, ctx.LogSoftmaxBF16, ctx.RmsnormBF16, ctx.LayernormBF16, ctx.GemmBF16, ctx.AttentionBF16,
			bf16},
		{ctx.SiluF16, ctx.GeluF16, ctx.GeluTanhF16, ctx.AddF16, ctx.MulF16, ctx.ScaleF16, ctx.AddBiasF16,
			ctx.SoftmaxF16, ctx.LogSoftmaxF16, ctx.RmsnormF16, ctx.LayernormF16, ctx.GemmF16, ctx.AttentionF16,
			f16},
	}
	r := rand.New(rand.NewSource(13))
	for _, d := range dtypes {
		f := d.format
		// Inputs are values of the dtype: random, plus special values.
		in := func(n int, scale float64) []uint16 { return f.round(randn(r, n, scale)) }
		n := 301
		x := in(n, 3)
		x[0], x[1], x[2] = f.refEncode(float32(math.Inf(1))), f.refEncode(float32(math.NaN())), f.refEncode(-0.0)
		x[3] = f.refEncode(1e-6) // subnormal in f16
		b := in(n, 2)
		xw, bw := f.widen(x), f.widen(b)
		y := make([]uint16, n)
		y32 := make([]float32, n)

		unary := []struct {
			name string
			k16  func(x, y []uint16) error
			k32  func(x, y []float32) error
		}{{"Silu", d.silu, ctx.Silu}, {"Gelu", d.gelu, ctx.Gelu}, {"GeluTanh", d.geluTanh, ctx.GeluTanh}}
		for _, u := range unary {
			must(t, u.k16(x, y))
			must(t, u.k32(xw, y32))
			f.sameBits(t, u.name, y, f.round(y32))
		}
		must(t, d.add(x, b, y))
		must(t, ctx.Add(xw, bw, y32))
		f.sameBits(t, "Add", y, f.round(y32))
		must(t, d.mul(x, b, y))
		must(t, ctx.Mul(xw, bw, y32))
		f.sameBits(t, "Mul", y, f.round(y32))
		must(t, d.scale(-1.7, x, y))
		must(t, ctx.Scale(-1.7, xw, y32))
		f.sameBits(t, "Scale", y, f.round(y32))
		// In place (alias(x)).
		xc := append([]uint16(nil), x...)
		must(t, d.silu(xc, xc))
		must(t, ctx.Silu(xw, y32))
		f.sameBits(t, "in-place Silu", xc, f.round(y32))

		rows, cols := 6, 37
		m := in(rows*cols, 4)
		mw := f.widen(m)
		w, bias := in(cols, 1), in(cols, 1)
		ww, biasw := f.widen(w), f.widen(bias)
		ym := make([]uint16, rows*cols)
		ym32 := make([]float32, rows*cols)
		must(t, d.addBias(rows, m, bias, ym))
		must(t, ctx.AddBias(rows, mw, biasw, ym32))
		f.sameBits(t, "AddBias", ym, f.round(ym32))
		must(t, d.softmax(rows, cols, m, ym))
		must(t, ctx.Softmax(rows, cols, mw, ym32))
		f.sameBits(t, "Softmax", ym, f.round(ym32))
		must(t, d.logSoftmax(rows, cols, m, ym))
		must(t, ctx.LogSoftmax(rows, cols, mw, ym32))
		f.sameBits(t, "LogSoftmax", ym, f.round(ym32))
		must(t, d.rmsnorm(rows, m, w, 1e-5, ym))
		must(t, ctx.Rmsnorm(rows, mw, ww, 1e-5, ym32))
		f.sameBits(t, "Rmsnorm", ym, f.round(ym32))
		must(t, d.layernorm(rows, cols, m, w, bias, 1e-5, ym))
		must(t, ctx.Layernorm(rows, cols, mw, ww, biasw, 1e-5, ym32))
		f.sameBits(t, "Layernorm", ym, f.round(ym32))
		must(t, d.layernorm(rows, cols, m, nil, nil, 1e-5, ym))
		must(t, ctx.Layernorm(rows, cols, mw, nil, nil, 1e-5, ym32))
		f.sameBits(t, "Layernorm(nil, nil)", ym, f.round(ym32))

		// gemm: c is read (beta) and written; strided, transposed A.
		gm, gn, gk := 5, 7, 9
		lda, ldb, ldc := gm+1, gn, gn+2
		a := in((gk-1)*lda+gm, 1)
		bm := in(gk*ldb, 1)
		c := in(gm*ldc, 1)
		c32 := f.widen(c)
		must(t, d.gemm(true, false, gm, gn, gk, 0.75, a, lda, bm, ldb, -0.5, c, ldc))
		must(t, ctx.Gemm(true, false, gm, gn, gk, 0.75, f.widen(a), lda, f.widen(bm), ldb, -0.5, c32, ldc))
		f.sameBits(t, "Gemm", c, f.round(c32))

		batch, heads, kvHeads, seqQ, seqKV, headDim := 2, 4, 2, 3, 5, 8
		q := in(batch*heads*seqQ*headDim, 1)
		kk := in(batch*kvHeads*seqKV*headDim, 1)
		v := in(batch*kvHeads*seqKV*headDim, 1)
		out := make([]uint16, len(q))
		out32 := make([]float32, len(q))
		must(t, d.attention(batch, heads, kvHeads, seqQ, seqKV, headDim, q, kk, v, true, 0, out))
		must(t, ctx.Attention(batch, heads, kvHeads, seqQ, seqKV, headDim, f.widen(q), f.widen(kk), f.widen(v), true, 0,
			out32))
		f.sameBits(t, "Attention", out, f.round(out32))

		// Lengths are checked as for float32 slices.
		wantErr(t, d.silu(x, y[:3]), ShapeMismatch, "len(y) is 3")
	}
	// The package-level functions run the same kernels on the pooled context.
	x := bf16.round([]float32{-1, 0.5, 3})
	y1, y2 := make([]uint16, 3), make([]uint16, 3)
	must(t, SiluBF16(x, y1))
	must(t, ctx.SiluBF16(x, y2))
	bf16.sameBits(t, "SiluBF16 (package level)", y1, y2)
	wantErr(t, GemmF16(false, false, 2, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2), ShapeMismatch, "GemmF16", "len(a) is 0")
}

// The 16-bit embedding, argmax and samplers against the float32 kernels on
// the widened values: rows copied bit for bit, the same index, the same
// token for the same seed.
func TestHalfDecoding(t *testing.T) {
	ctx := cpuContext(t, 2)
	type decoding struct {
		embedding func(int, int, []int32, []uint16, []uint16) error
		argmax    func(int, []uint16, []int32) error
		sample    func(int, []uint16, float32, uint64, []int32) error
		topk      func(int, []uint16, int, float32, uint64, []int32) error
		topp      func(int, []uint16, float32, float32, uint64, []int32) error
		format
	}
	dtypes := []decoding{
		{ctx.EmbeddingBF16, ctx.ArgmaxBF16, ctx.SampleBF16, ctx.TopkSampleBF16, ctx.ToppSampleBF16, bf16},
		{ctx.EmbeddingF16, ctx.ArgmaxF16, ctx.SampleF16, ctx.TopkSampleF16, ctx.ToppSampleF16, f16},
	}
	r := rand.New(rand.NewSource(26))
	for _, d := range dtypes {
		f := d.format
		table := f.round(randn(r, 7*5, 1))
		ids := []int32{3, 0, 6, 3}
		out := make([]uint16, 4*5)
		must(t, d.embedding(7, 5, ids, table, out))
		for i, id := range ids {
			f.sameBits(t, "Embedding row", out[i*5:(i+1)*5], table[int(id)*5:(int(id)+1)*5])
		}
		wantErr(t, d.embedding(7, 5, []int32{0, 7, 1, 1}, table, out), InvalidArgument, "ids[1] = 7")

		rows, cols := 6, 300
		x := f.round(randn(r, rows*cols, 3))
		xw := f.widen(x)
		got, want := make([]int32, rows), make([]int32, rows)
		must(t, d.argmax(cols, x, got))
		must(t, ctx.Argmax(cols, xw, want))
		sameInts(t, f.name+" Argmax", got, want)
		distinct := map[int32]bool{}
		for seed := uint64(0); seed < 20; seed++ {
			temp := float32(0.5 + float64(seed%3)*0.6)
			must(t, d.sample(cols, x, temp, seed, got))
			must(t, ctx.Sample(cols, xw, temp, seed, want))
			sameInts(t, f.name+" Sample", got, want)
			k := 1 + int(seed*17)%cols
			must(t, d.topk(cols, x, k, temp, seed, got))
			must(t, ctx.TopkSample(cols, xw, k, temp, seed, want))
			sameInts(t, f.name+" TopkSample", got, want)
			p := float32(0.2 + 0.04*float64(seed))
			must(t, d.topp(cols, x, p, temp, seed, got))
			must(t, ctx.ToppSample(cols, xw, p, temp, seed, want))
			sameInts(t, f.name+" ToppSample", got, want)
			for _, v := range got {
				distinct[v] = true
			}
		}
		if len(distinct) < 10 {
			t.Fatalf("%s: only %d distinct tokens: the draws do not vary", f.name, len(distinct))
		}
		bad := append([]uint16{}, x...)
		bad[cols+5] = f.encode(float32(math.Inf(1)))
		wantErr(t, d.sample(cols, bad, 1, 1, got), InvalidArgument, "logits row 1 holds +inf")
		wantErr(t, d.topk(cols, x, cols+1, 1, 1, got), InvalidArgument, "k must be <= cols")
		wantErr(t, d.topp(cols, x, 0, 1, 1, got), InvalidArgument, "p must be in (0, 1]")
	}
}

func sameInts(t *testing.T, what string, got, want []int32) {
	t.Helper()
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %d, want %d (the float32 kernel on the widened values)", what, i, got[i], want[i])
		}
	}
}
