package kernelbridge

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"testing"
)

// QTensor and the kernels on storage formats.  Expectations come from the
// formats as the header documents them, decoded here (the binary16 scales
// with half_test.go's float64 decoder), from the float32 kernels, and from
// kb_linear_w's documented error bound; never from the call under test.

// decodeRef widens a [rows, cols] tensor of type typ from its documented
// layout: little-endian elements for the float formats; for Q8_0 and Q4_0
// blocks of 32 elements, a binary16 scale d then the quants (Q8_0: 32 int8,
// element d*q; Q4_0: 16 bytes, byte e holding element e in its low nibble and
// e+16 in its high one, element d*(q-8)).
func decodeRef(t *testing.T, typ Dtype, rows, cols int, data []byte) []float32 {
	t.Helper()
	out := make([]float32, 0, rows*cols)
	le := binary.LittleEndian
	switch typ {
	case DtypeF32:
		for i := 0; i+4 <= len(data); i += 4 {
			out = append(out, math.Float32frombits(le.Uint32(data[i:])))
		}
	case DtypeF16, DtypeBF16:
		f := map[Dtype]format{DtypeF16: f16, DtypeBF16: bf16}[typ]
		for i := 0; i+2 <= len(data); i += 2 {
			out = append(out, float32(f.refDecode(le.Uint16(data[i:]))))
		}
	case DtypeQ8_0:
		for b := 0; b+34 <= len(data); b += 34 {
			d := float32(f16.refDecode(le.Uint16(data[b:])))
			for e := 0; e < 32; e++ {
				out = append(out, d*float32(int8(data[b+2+e])))
			}
		}
	case DtypeQ4_0:
		for b := 0; b+18 <= len(data); b += 18 {
			d := float32(f16.refDecode(le.Uint16(data[b:])))
			var q [32]int
			for e := 0; e < 16; e++ {
				q[e], q[e+16] = int(data[b+2+e]&15), int(data[b+2+e]>>4)
			}
			for e := 0; e < 32; e++ {
				out = append(out, d*float32(q[e]-8))
			}
		}
	default:
		t.Fatalf("no decoder for %v", typ)
	}
	if len(out) != rows*cols {
		t.Fatalf("%v [%d, %d]: %d bytes decode to %d elements", typ, rows, cols, len(data), len(out))
	}
	return out
}

// blockMax is max |x| over each block of 32 elements of each row.
func blockMax(x []float32, cols int) []float64 {
	m := make([]float64, len(x)/32)
	for i, v := range x {
		blk := i/cols*(cols/32) + i%cols/32
		m[blk] = math.Max(m[blk], math.Abs(float64(v)))
	}
	return m
}

func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#08x), want %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i],
				math.Float32bits(want[i]))
		}
	}
}

var allDtypes = []Dtype{DtypeF32, DtypeF16, DtypeBF16, DtypeQ8_0, DtypeQ4_0}

func TestDtype(t *testing.T) {
	// GGML's type numbers, which GGUF files store.
	for typ, want := range map[Dtype]int32{DtypeF32: 0, DtypeF16: 1, DtypeQ4_0: 2, DtypeQ8_0: 8, DtypeBF16: 30} {
		if int32(typ) != want {
			t.Errorf("%v = %d, want %d", typ, int32(typ), want)
		}
	}
	if s := Dtype(3).String(); s != "UNKNOWN" {
		t.Errorf("Dtype(3) is %q", s)
	}
	// Bytes per row of 64 elements, from the layouts.
	for typ, want := range map[Dtype]int{DtypeF32: 256, DtypeF16: 128, DtypeBF16: 128, DtypeQ8_0: 68, DtypeQ4_0: 36} {
		n, err := DtypeBytes(typ, 3, 64)
		must(t, err)
		if n != 3*want {
			t.Errorf("DtypeBytes(%v, 3, 64) = %d, want %d", typ, n, 3*want)
		}
	}
	_, err := DtypeBytes(Dtype(3), 1, 32)
	wantErr(t, err, InvalidArgument, "DtypeBytes: type must be a kb_dtype", "got 3")
	_, err = DtypeBytes(DtypeQ8_0, 1, 33)
	wantErr(t, err, InvalidArgument, "DtypeBytes: cols must be a multiple of 32", "got 33")
	_, err = DtypeBytes(DtypeF32, -1, 4)
	wantErr(t, err, InvalidArgument, "DtypeBytes: rows must be >= 0, got -1")
	_, err = DtypeBytes(DtypeF32, math.MaxInt64/2, 3)
	wantErr(t, err, OutOfMemory, "DtypeBytes")
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(40))
	rows, cols := 5, 96
	x := randn(r, rows*cols, 2)
	x[7], x[40] = 0, -30 // a zero, and a block with one large element
	for i := 64; i < 96; i++ {
		x[i] = 0 // an all-zero block
	}
	for _, typ := range allDtypes {
		q, err := QuantizeQ(typ, rows, cols, x)
		must(t, err)
		n, err := DtypeBytes(typ, rows, cols)
		must(t, err)
		if q.Type != typ || q.Rows != rows || q.Cols != cols || len(q.Data) != n {
			t.Fatalf("%v: QuantizeQ gave %v [%d, %d] with %d bytes, want %d", typ, q.Type, q.Rows, q.Cols,
				len(q.Data), n)
		}
		y, err := q.Dequantize()
		must(t, err)
		// Dequantize is the documented layout, exactly.
		sameBits32(t, typ.String()+" Dequantize", y, decodeRef(t, typ, rows, cols, q.Data))
		// And within the format's step of x: rounding to nearest for the
		// float formats; for the blocks, half a step d = max|x|/127 (Q8_0)
		// or a step d = max|x|/8 (Q4_0: the element opposite the largest
		// clamps to 7d), plus the binary16 rounding of d (2^-11 relative)
		// over up to 8 or 127 steps.
		switch typ {
		case DtypeF32:
			sameBits32(t, "F32", y, x)
			if !bytes.Equal(q.Data, f32Bytes(x)) {
				t.Fatal("F32 bytes are not x's")
			}
		case DtypeF16, DtypeBF16:
			f := map[Dtype]format{DtypeF16: f16, DtypeBF16: bf16}[typ]
			want := f.round(x)
			for i := range want {
				if got := binary.LittleEndian.Uint16(q.Data[2*i:]); got != want[i] {
					t.Fatalf("%v: element %d is %#04x, want %#04x (nearest even of %v)", typ, i, got, want[i], x[i])
				}
			}
		case DtypeQ8_0, DtypeQ4_0:
			m := blockMax(x, cols)
			for i := range x {
				d := m[i/cols*(cols/32)+i%cols/32] / 127
				tol := d/2 + 127*d*0x1p-11
				if typ == DtypeQ4_0 {
					d = m[i/cols*(cols/32)+i%cols/32] / 8
					tol = d + 8*d*0x1p-11
				}
				if diff := math.Abs(float64(y[i]) - float64(x[i])); diff > tol*(1+1e-6) {
					t.Fatalf("%v: element %d is %v, x is %v: off by %g, more than %g", typ, i, y[i], x[i], diff, tol)
				}
			}
		}
	}
}

func TestNewQTensor(t *testing.T) {
	data := make([]byte, 3*36+1)
	for i := range data {
		data[i] = byte(i)
	}
	q, err := NewQTensor(DtypeQ4_0, 3, 64, data[:108])
	must(t, err)
	if q.Type != DtypeQ4_0 || q.Rows != 3 || q.Cols != 64 || &q.Data[0] != &data[0] || len(q.Data) != 108 {
		t.Fatalf("NewQTensor gave %+v", q)
	}
	// Any alignment: the bytes of a file are used where they lie.
	_, err = NewQTensor(DtypeQ4_0, 3, 64, data[1:])
	must(t, err)
	_, err = NewQTensor(DtypeQ4_0, 3, 64, data[:107])
	wantErr(t, err, ShapeMismatch, "NewQTensor: len(data) is 107, want 108 for [3, 64] as Q4_0")
	_, err = NewQTensor(Dtype(7), 3, 64, data[:108])
	wantErr(t, err, InvalidArgument, "NewQTensor: type must be a kb_dtype", "got 7")
	_, err = NewQTensor(DtypeQ8_0, 2, 48, data[:102])
	wantErr(t, err, InvalidArgument, "NewQTensor: cols must be a multiple of 32", "Q8_0", "got 48")
	_, err = NewQTensor(DtypeF16, 2, -1, nil)
	wantErr(t, err, InvalidArgument, "NewQTensor: cols must be >= 0, got -1")
	// Empty tensors.
	_, err = NewQTensor(DtypeQ8_0, 0, 64, nil)
	must(t, err)
	_, err = NewQTensor(DtypeF32, 4, 0, []byte{})
	must(t, err)
}

// quantized is x as a QTensor of type typ (failing the test on error).
func quantized(t *testing.T, typ Dtype, rows, cols int, x []float32) QTensor {
	t.Helper()
	q, err := QuantizeQ(typ, rows, cols, x)
	must(t, err)
	return q
}

func TestLinearQ(t *testing.T) {
	r := rand.New(rand.NewSource(41))
	rows, in, outF := 7, 96, 5
	x, bias := randn(r, rows*in, 1), randn(r, outF, 1)
	wf := randn(r, outF*in, 0.5)
	ctx := cpuContext(t, 3)
	for _, typ := range allDtypes {
		w := quantized(t, typ, outF, in, wf)
		for _, act := range []Activation{ActivationNone, ActivationGelu} {
			for _, b := range [][]float32{bias, nil} {
				y := make([]float32, rows*outF)
				must(t, ctx.LinearQ(x, w, b, act, y))
				// The generated call with the sizes written out.
				want := make([]float32, rows*outF)
				must(t, LinearW(rows, in, outF, x, typ, w.Data, b, act, want))
				sameBits32(t, "LinearQ "+typ.String(), y, want)
				y2 := make([]float32, rows*outF)
				must(t, LinearQ(x, w, b, act, y2))
				sameBits32(t, "package-level LinearQ "+typ.String(), y2, want)
				// Float weights: kb_linear on the weights widened (exactly),
				// bit for bit (F32: kb_linear itself).
				if typ == DtypeF32 || typ == DtypeF16 || typ == DtypeBF16 {
					widened := decodeRef(t, typ, outF, in, w.Data)
					must(t, Linear(rows, in, outF, x, widened, b, act, want))
					sameBits32(t, "LinearQ "+typ.String()+" vs Linear", y, want)
				}
			}
		}
		if typ == DtypeQ8_0 || typ == DtypeQ4_0 {
			linearQBound(t, typ, x, w, rows, in, outF)
		}
	}
}

// linearQBound checks LinearQ of a block-format weight against the float64
// product of the dequantized weight and x, within kb_linear_w's documented
// bound: Σ_b (dx_b/2)(1 + 2^-20) Σ_{e∈b} |W_e| + (nb/8 + 5) 2^-23 Σ_e |W_e| (|x_e| + dx_b),
// dx_b = max|x| over block b of the row / 127.
func linearQBound(t *testing.T, typ Dtype, x []float32, w QTensor, rows, in, outF int) {
	t.Helper()
	y := make([]float32, rows*outF)
	must(t, LinearQ(x, w, nil, ActivationNone, y))
	wd := decodeRef(t, typ, outF, in, w.Data)
	dx := blockMax(x, in)
	nb := float64(in / 32)
	for i := 0; i < rows; i++ {
		for o := 0; o < outF; o++ {
			exact, bound := 0.0, 0.0
			for e := 0; e < in; e++ {
				we, xe, d := math.Abs(float64(wd[o*in+e])), float64(x[i*in+e]), dx[i*(in/32)+e/32]/127
				exact += float64(wd[o*in+e]) * xe
				bound += d/2*(1+0x1p-20)*we + (nb/8+5)*0x1p-23*we*(math.Abs(xe)+d)
			}
			if diff := math.Abs(float64(y[i*outF+o]) - exact); diff > bound {
				t.Fatalf("%v: y[%d, %d] = %v, exact %v: off by %g, bound %g", typ, i, o, y[i*outF+o], exact, diff, bound)
			}
		}
	}
}

func TestEmbeddingQ(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	vocab, dim := 11, 64
	table := randn(r, vocab*dim, 1)
	ids := []int32{3, 0, 10, 3, 7}
	ctx := cpuContext(t, 2)
	for _, typ := range allDtypes {
		q := quantized(t, typ, vocab, dim, table)
		rowsF, err := q.Dequantize()
		must(t, err)
		out := make([]float32, len(ids)*dim)
		must(t, ctx.EmbeddingQ(ids, q, out))
		for i, id := range ids {
			sameBits32(t, "EmbeddingQ "+typ.String(), out[i*dim:(i+1)*dim], rowsF[int(id)*dim:int(id+1)*dim])
		}
		out2 := make([]float32, len(ids)*dim)
		must(t, EmbeddingQ(ids, q, out2))
		sameBits32(t, "package-level EmbeddingQ "+typ.String(), out2, out)
		viaCtx, err := ctx.DequantizeQ(q)
		must(t, err)
		sameBits32(t, "DequantizeQ "+typ.String(), viaCtx, rowsF)
	}
	must(t, EmbeddingQ(nil, quantized(t, DtypeQ8_0, vocab, dim, table), nil))
}

// unchanged fails if a failed call wrote to y (filled with a marker).
func unchanged(t *testing.T, what string, y []float32) {
	t.Helper()
	for i, v := range y {
		if math.Float32bits(v) != 0x7fc00bad {
			t.Fatalf("%s: a failed call wrote %v at %d", what, v, i)
		}
	}
}

func marked(n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = math.Float32frombits(0x7fc00bad)
	}
	return y
}

func TestQTensorErrors(t *testing.T) {
	r := rand.New(rand.NewSource(43))
	rows, in, outF := 2, 64, 3
	x, bias := randn(r, rows*in, 1), randn(r, outF, 1)
	w := quantized(t, DtypeQ4_0, outF, in, randn(r, outF*in, 1))
	y := marked(rows * outF)
	ctx := cpuContext(t, 1)

	// The weight's bytes against its shape, naming w and the field.
	short := w
	short.Data = w.Data[:len(w.Data)-1]
	wantErr(t, ctx.LinearQ(x, short, bias, ActivationNone, y), ShapeMismatch,
		"LinearQ: len(w.Data) is 107, want 108 for [3, 64] as Q4_0")
	unknown := w
	unknown.Type = Dtype(3)
	wantErr(t, LinearQ(x, unknown, bias, ActivationNone, y), InvalidArgument, "LinearQ: w: type must be a kb_dtype",
		"got 3")
	odd := QTensor{Type: DtypeQ8_0, Rows: 3, Cols: 48, Data: make([]byte, 3*34*2)}
	wantErr(t, ctx.LinearQ(make([]float32, rows*48), odd, bias, ActivationNone, y), InvalidArgument,
		"LinearQ: w: cols must be a multiple of 32", "got 48")
	// Activation lengths.
	wantErr(t, ctx.LinearQ(x[:in+1], w, bias, ActivationNone, y), ShapeMismatch, "LinearQ: len(x) is 65",
		"multiple of w.Cols = 64")
	wantErr(t, ctx.LinearQ(x, w, bias[:2], ActivationNone, y), ShapeMismatch, "LinearQ: len(bias) is 2, want 3")
	wantErr(t, ctx.LinearQ(x, w, bias, ActivationNone, y[:5]), ShapeMismatch,
		"LinearQ: len(y) is 5, want 6 for shape [rows, w.Rows]")
	// Checked by C, reported with its message.
	wantErr(t, ctx.LinearQ(x, w, bias, Activation(9), y), InvalidArgument, "kb_linear_w", "act")
	unchanged(t, "LinearQ", y)
	closed, err := NewContext(1, BackendCPU)
	must(t, err)
	closed.Close()
	wantErr(t, closed.LinearQ(x, w, bias, ActivationNone, y), InvalidArgument, "LinearQ: the Context is nil or closed")
	unchanged(t, "LinearQ on a closed Context", y)

	// EmbeddingQ: every id is checked before anything is written.
	vocab, dim := 4, 32
	table := quantized(t, DtypeQ8_0, vocab, dim, randn(r, vocab*dim, 1))
	out := marked(3 * dim)
	wantErr(t, ctx.EmbeddingQ([]int32{1, 4, 0}, table, out), InvalidArgument, "ids[1] = 4 is out of range [0, 4)")
	wantErr(t, EmbeddingQ([]int32{-1, 0, 0}, table, out), InvalidArgument, "ids[0] = -1")
	wantErr(t, ctx.EmbeddingQ([]int32{1, 2, 0}, table, out[:dim]), ShapeMismatch,
		"EmbeddingQ: len(out) is 32, want 96 for shape [len(ids), table.Cols]")
	badTable := table
	badTable.Data = append(table.Data[:len(table.Data):len(table.Data)], 0)
	wantErr(t, ctx.EmbeddingQ([]int32{1, 2, 0}, badTable, out), ShapeMismatch,
		"EmbeddingQ: len(table.Data) is 137, want 136 for [4, 32] as Q8_0")
	unchanged(t, "EmbeddingQ", out)

	// Quantize: lengths, and elements a block format cannot hold.
	xs := randn(r, 2*64, 1)
	_, err = QuantizeQ(DtypeQ8_0, 2, 64, xs[:127])
	wantErr(t, err, ShapeMismatch, "QuantizeQ: len(x) is 127, want 128 for shape [rows, cols]")
	_, err = ctx.QuantizeQ(DtypeQ4_0, 2, 40, xs[:80])
	wantErr(t, err, InvalidArgument, "QuantizeQ: cols must be a multiple of 32", "got 40")
	_, err = QuantizeQ(Dtype(31), 2, 64, xs)
	wantErr(t, err, InvalidArgument, "QuantizeQ: type must be a kb_dtype", "got 31")
	xs[64+37] = float32(math.NaN())
	_, err = QuantizeQ(DtypeQ8_0, 2, 64, xs)
	wantErr(t, err, InvalidArgument, "kb_quantize", "x[1, 37] is nan")

	// Dequantize checks the tensor as NewQTensor does.
	_, err = short.Dequantize()
	wantErr(t, err, ShapeMismatch, "QTensor.Dequantize: len(q.Data) is 107, want 108")
	_, err = ctx.DequantizeQ(unknown)
	wantErr(t, err, InvalidArgument, "DequantizeQ: q: type must be a kb_dtype")

	// The generated kernels derive the byte counts from the slices; C
	// checks them against the shape.
	wantErr(t, LinearW(rows, in, outF, x, DtypeQ4_0, short.Data, bias, ActivationNone, y), ShapeMismatch,
		"kb_linear_w: weight_bytes must be 108 (weight [3, 64] as Q4_0), got 107")
	wantErr(t, LinearW(rows, 48, outF, make([]float32, rows*48), DtypeQ8_0, odd.Data, bias, ActivationNone, y),
		InvalidArgument, "in_features must be a multiple of 32")
	// F32 / F16 bytes are an array of elements: one byte past an aligned
	// address is refused (a block format may start at any byte). Go's
	// allocator aligns a []byte of this size to at least 8 bytes.
	for _, c := range []struct {
		dt    Dtype
		align string
	}{{DtypeF32, "4 bytes"}, {DtypeF16, "2 bytes"}} {
		fw := quantized(t, c.dt, outF, in, randn(r, outF*in, 1))
		buf := make([]byte, len(fw.Data)+8)
		copy(buf[1:], fw.Data)
		off := fw
		off.Data = buf[1 : 1+len(fw.Data)]
		wantErr(t, ctx.LinearQ(x, off, bias, ActivationNone, y), InvalidArgument,
			"kb_linear_w: weight must be aligned to "+c.align)
	}
	unchanged(t, "LinearW", y)
}

func TestQuantizedBuffers(t *testing.T) {
	r := rand.New(rand.NewSource(44))
	rows, in, outF := 3, 64, 4
	x, bias := randn(r, rows*in, 1), randn(r, outF, 1)
	w := quantized(t, DtypeQ8_0, outF, in, randn(r, outF*in, 1))
	ctx := cpuContext(t, 1)
	want := make([]float32, rows*outF)
	must(t, ctx.LinearQ(x, w, bias, ActivationSilu, want))

	// The weight one byte into its Buffer: any alignment works.
	wb, err := NewBufferBytes(ctx, append([]byte{0xee}, w.Data...))
	must(t, err)
	defer wb.Close()
	xb, bb, yb := f32Buf(t, ctx, x), f32Buf(t, ctx, bias), newBuf(t, ctx, 4*rows*outF)
	wv := wb.ByteView().Slice(1, 1+len(w.Data))
	must(t, ctx.LinearWBuf(rows, in, outF, xb.Float32View(), DtypeQ8_0, wv, bb.Float32View(), ActivationSilu,
		yb.Float32View()))
	sameF32(t, "LinearWBuf", yb, 0, want)
	wantErr(t, ctx.LinearWBuf(rows, in, outF, xb.Float32View(), DtypeQ8_0, wb.ByteView().Slice(1, 2+len(w.Data)),
		bb.Float32View(), ActivationSilu, yb.Float32View()), InvalidArgument,
		"LinearWBuf: weight is elements [1, 274) of a Buffer of 273 byte elements")

	// Quantize and dequantize between Buffers give the slice results.
	qb := newBuf(t, ctx, len(w.Data))
	wf := randn(r, outF*in, 1)
	must(t, ctx.QuantizeBuf(DtypeQ4_0, 2, in, f32Buf(t, ctx, wf[:2*in]).Float32View(), qb.ByteView().Slice(0, 72)))
	q := quantized(t, DtypeQ4_0, 2, in, wf[:2*in])
	if got := contents(t, qb)[:72]; !bytes.Equal(got, q.Data) {
		t.Fatalf("QuantizeBuf wrote % x, want % x", got, q.Data)
	}
	db := newBuf(t, ctx, 4*2*in)
	must(t, ctx.DequantizeBuf(DtypeQ4_0, 2, in, qb.ByteView().Slice(0, 72), db.Float32View()))
	deq, err := q.Dequantize()
	must(t, err)
	sameF32(t, "DequantizeBuf", db, 0, deq)

	ids := []int32{1, 3}
	out := make([]float32, len(ids)*in)
	must(t, ctx.EmbeddingQ(ids, w, out))
	ob := newBuf(t, ctx, 4*len(out))
	ib, err := NewBufferInt32(ctx, ids)
	must(t, err)
	defer ib.Close()
	must(t, ctx.EmbeddingWBuf(outF, in, ib.Int32View(), DtypeQ8_0, wv, ob.Float32View()))
	sameF32(t, "EmbeddingWBuf", ob, 0, out)
}
