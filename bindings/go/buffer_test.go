package kernelbridge

import (
	"bytes"
	"math"
	"math/rand"
	"runtime"
	"sync"
	"testing"
)

func cpuContext(t *testing.T, threads int) *Context {
	t.Helper()
	ctx, err := NewContext(threads, BackendCPU)
	must(t, err)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

func newBuf(t *testing.T, ctx *Context, bytes int) *Buffer {
	t.Helper()
	b, err := ctx.NewBuffer(bytes)
	must(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// contents downloads the whole buffer.
func contents(t *testing.T, b *Buffer) []byte {
	t.Helper()
	out := make([]byte, b.Size())
	must(t, b.Download(0, out))
	return out
}

func TestBufferRoundTrip(t *testing.T) {
	ctx := cpuContext(t, 1)
	f := []float32{1.5, -2, float32(math.Inf(1)), 0x1p-140}
	b, err := NewBufferFloat32(ctx, f)
	must(t, err)
	defer b.Close()
	if b.Size() != 16 || b.Device() != -1 || b.Float32View().Len() != 4 || b.BF16View().Len() != 8 {
		t.Fatalf("size %d device %d", b.Size(), b.Device())
	}
	got := make([]float32, 4)
	must(t, b.DownloadFloat32(0, got))
	for i := range f {
		if math.Float32bits(got[i]) != math.Float32bits(f[i]) {
			t.Fatalf("float32 round trip: %v, want %v", got, f)
		}
	}
	// Element offsets of the typed methods, byte offsets of the others.
	must(t, b.UploadFloat32(2, []float32{7, 8}))
	must(t, b.DownloadFloat32(1, got[:3]))
	if got[0] != -2 || got[1] != 7 || got[2] != 8 {
		t.Fatalf("offset upload: %v", got[:3])
	}
	must(t, b.UploadInt32(1, []int32{-5}))
	i32 := make([]int32, 2)
	must(t, b.DownloadInt32(0, i32))
	if math.Float32frombits(uint32(i32[0])) != 1.5 || i32[1] != -5 {
		t.Fatalf("int32: %v", i32)
	}
	must(t, b.UploadUint16(1, []uint16{0xabcd, 0x1234}))
	u16 := make([]uint16, 3)
	must(t, b.DownloadUint16(0, u16))
	if u16[1] != 0xabcd || u16[2] != 0x1234 {
		t.Fatalf("uint16: %x", u16)
	}
	must(t, b.Upload(15, []byte{0x42}))
	raw := contents(t, b)
	if raw[15] != 0x42 || raw[2] != 0xcd || raw[3] != 0xab {
		t.Fatalf("bytes: % x", raw)
	}

	for _, mk := range []func() (*Buffer, error){
		func() (*Buffer, error) { return NewBufferInt32(ctx, []int32{1, 2, 3}) },
		func() (*Buffer, error) { return NewBufferUint16(ctx, []uint16{1, 2, 3}) },
		func() (*Buffer, error) { return NewBufferBytes(ctx, []byte{1, 2, 3}) },
	} {
		b, err := mk()
		must(t, err)
		if b.Size() == 0 {
			t.Fatal("empty typed buffer")
		}
		must(t, b.Close())
	}
}

func TestBufferEmpty(t *testing.T) {
	ctx := cpuContext(t, 1)
	b := newBuf(t, ctx, 0)
	if b.Size() != 0 || b.Float32View().Len() != 0 {
		t.Fatalf("empty buffer: size %d", b.Size())
	}
	// Empty slices (nil or not) are fine, at offset 0 only.
	must(t, b.Upload(0, nil))
	must(t, b.UploadFloat32(0, []float32{}))
	must(t, b.DownloadFloat32(0, nil))
	must(t, b.Fill(0, 0, 1))
	must(t, b.CopyFrom(0, b, 0, 0))
	wantErr(t, b.UploadFloat32(1, nil), InvalidArgument, "offset 1 + len(src) 0 exceeds")
	// Kernels on empty views, and on the zero view.
	must(t, ctx.SiluBuf(b.Float32View(), b.Float32View()))
	must(t, ctx.SiluBuf(Float32View{}, Float32View{}))
	must(t, ctx.SoftmaxBuf(0, 5, b.Float32View(), Float32View{}))
	e, err := NewBufferFloat32(ctx, nil)
	must(t, err)
	must(t, e.Close())
}

func TestBufferFillCopy(t *testing.T) {
	ctx := cpuContext(t, 1)
	b := newBuf(t, ctx, 16)
	must(t, b.Fill(0, 16, 0))
	must(t, b.Fill(4, 8, 0xff))
	want := []byte{0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0}
	if got := contents(t, b); !bytes.Equal(got, want) {
		t.Fatalf("fill: % x", got)
	}
	c := newBuf(t, ctx, 8)
	must(t, c.Fill(0, 8, 7))
	must(t, b.CopyFrom(12, c, 4, 4))
	want[12], want[13], want[14], want[15] = 7, 7, 7, 7
	if got := contents(t, b); !bytes.Equal(got, want) {
		t.Fatalf("copy: % x", got)
	}
	// Within one buffer: disjoint or identical ranges.
	must(t, b.CopyFrom(0, b, 8, 8))
	must(t, b.CopyFrom(4, b, 4, 4))
	copy(want[0:8], want[8:16])
	if got := contents(t, b); !bytes.Equal(got, want) {
		t.Fatalf("self copy: % x", got)
	}
	wantErr(t, b.CopyFrom(0, b, 2, 4), InvalidArgument, "kb_buffer_copy", "overlaps")
	if got := contents(t, b); !bytes.Equal(got, want) {
		t.Fatal("a failed copy changed the buffer")
	}
}

// Range errors name the argument, and nothing is written.
func TestBufferRangeErrors(t *testing.T) {
	ctx := cpuContext(t, 1)
	b := newBuf(t, ctx, 16)
	must(t, b.Fill(0, 16, 0x11))
	before := contents(t, b)
	src := []float32{1, 2}
	wantErr(t, b.UploadFloat32(3, src), InvalidArgument,
		"Buffer.UploadFloat32: offset 3 + len(src) 2 exceeds the size of the buffer (4 float32 elements, 16 bytes)")
	wantErr(t, b.UploadFloat32(-1, src), InvalidArgument, "Buffer.UploadFloat32: offset must be >= 0, got -1")
	wantErr(t, b.UploadInt32(4, []int32{1}), InvalidArgument, "offset 4 + len(src) 1")
	wantErr(t, b.UploadUint16(0, make([]uint16, 9)), InvalidArgument, "len(src) 9", "8 uint16 elements")
	wantErr(t, b.Upload(math.MaxInt64, []byte{1}), InvalidArgument, "Buffer.Upload: offset", "(16 bytes)")
	wantErr(t, b.Fill(10, 7, 0), InvalidArgument, "Buffer.Fill: offset 10 + n 7 exceeds")
	wantErr(t, b.Fill(0, -1, 0), InvalidArgument, "Buffer.Fill: n must be >= 0")
	c := newBuf(t, ctx, 4)
	wantErr(t, b.CopyFrom(14, c, 0, 4), InvalidArgument, "Buffer.CopyFrom: dstOffset 14 + n 4 exceeds")
	wantErr(t, b.CopyFrom(0, c, 1, 4), InvalidArgument, "Buffer.CopyFrom: srcOffset 1 + n 4 exceeds the size of src")
	wantErr(t, b.CopyFrom(0, nil, 0, 0), InvalidArgument, "src is nil or closed")
	if got := contents(t, b); !bytes.Equal(got, before) {
		t.Fatalf("a failed call changed the buffer: % x", got)
	}
	dst := []float32{9, 9, 9}
	wantErr(t, b.DownloadFloat32(2, dst), InvalidArgument,
		"Buffer.DownloadFloat32: offset 2 + len(dst) 3 exceeds")
	if dst[0] != 9 || dst[1] != 9 || dst[2] != 9 {
		t.Fatalf("a failed download wrote %v", dst)
	}
	wantErr(t, b.Download(-3, make([]byte, 1)), InvalidArgument, "offset must be >= 0, got -3")
}

func TestBufferClosed(t *testing.T) {
	ctx := cpuContext(t, 1)
	b, err := NewBufferFloat32(ctx, []float32{1, 2, 3, 4})
	must(t, err)
	x := b.Float32View()
	y := newBuf(t, ctx, 16)
	must(t, ctx.SiluBuf(x, y.Float32View()))
	must(t, b.Close())
	must(t, b.Close()) // idempotent
	if b.Size() != 0 {
		t.Fatalf("closed buffer: size %d", b.Size())
	}
	wantErr(t, b.UploadFloat32(0, []float32{1}), InvalidArgument, "Buffer.UploadFloat32: the Buffer is nil or closed")
	wantErr(t, b.DownloadFloat32(0, nil), InvalidArgument, "closed")
	wantErr(t, b.Fill(0, 0, 0), InvalidArgument, "closed")
	wantErr(t, y.CopyFrom(0, b, 0, 4), InvalidArgument, "Buffer.CopyFrom: src is nil or closed")
	wantErr(t, b.CopyFrom(0, y, 0, 4), InvalidArgument, "closed")
	// A view made before Close does not reach freed memory.
	wantErr(t, ctx.SiluBuf(x, y.Float32View()), InvalidArgument, "SiluBuf: the Buffer of x is closed")
	wantErr(t, ctx.SiluBuf(y.Float32View(), x), InvalidArgument, "SiluBuf: the Buffer of y is closed")
	var nilBuf *Buffer
	must(t, nilBuf.Close())
	wantErr(t, nilBuf.UploadFloat32(0, nil), InvalidArgument, "nil or closed")
	if nilBuf.Size() != 0 || nilBuf.Device() != -1 || nilBuf.Float32View().Buffer() != nil {
		t.Fatal("nil buffer")
	}
	// A closed or nil Context.
	ctx2, err := NewContext(1, BackendCPU)
	must(t, err)
	ctx2.Close()
	_, err = ctx2.NewBuffer(4)
	wantErr(t, err, InvalidArgument, "NewBuffer: the Context is nil or closed")
	_, err = NewBufferFloat32(nil, []float32{1})
	wantErr(t, err, InvalidArgument, "NewBufferFloat32: the Context is nil or closed")
	wantErr(t, ctx2.SiluBuf(y.Float32View(), y.Float32View()), InvalidArgument, "SiluBuf: the Context is nil or closed")
	_, err = ctx.NewBuffer(-1)
	wantErr(t, err, InvalidArgument, "NewBuffer: bytes must be >= 0, got -1")
}

// A host buffer outlives its Context: transfers move to a pooled CPU
// context, kernels run on any context.
func TestBufferOutlivesContext(t *testing.T) {
	ctx, err := NewContext(1, BackendCPU)
	must(t, err)
	b, err := NewBufferFloat32(ctx, []float32{-1, 0, 1, 2})
	must(t, err)
	defer b.Close()
	must(t, ctx.Close())
	got := make([]float32, 4)
	must(t, b.DownloadFloat32(0, got))
	must(t, b.UploadFloat32(0, []float32{3}))
	other := cpuContext(t, 2)
	must(t, other.SiluBuf(b.Float32View(), b.Float32View()))
	b.SetContext(other)
	must(t, b.DownloadFloat32(0, got))
	want := make([]float32, 4)
	must(t, Silu([]float32{3, 0, 1, 2}, want))
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("kernel on a buffer of a closed context: %v, want %v", got, want)
		}
	}
}

// Buffers dropped without Close are freed by their finalizer.
func TestBufferFinalizer(t *testing.T) {
	ctx := cpuContext(t, 1)
	for i := 0; i < 200; i++ {
		b, err := ctx.NewBuffer(1 << 16)
		must(t, err)
		must(t, b.Fill(0, 1<<16, 1))
	}
	runtime.GC()
	runtime.GC()
}

// --- kernels on buffers: bit for bit what the slice methods compute ---------------

func f32Buf(t *testing.T, ctx *Context, s []float32) *Buffer {
	t.Helper()
	b, err := NewBufferFloat32(ctx, s)
	must(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func sameF32(t *testing.T, what string, b *Buffer, off int, want []float32) {
	t.Helper()
	got := make([]float32, len(want))
	must(t, b.DownloadFloat32(off, got))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v through buffers, %v through slices", what, i, got[i], want[i])
		}
	}
}

func TestKernelsOnBuffers(t *testing.T) {
	ctx := cpuContext(t, 3)
	r := rand.New(rand.NewSource(11))
	rows, cols := 7, 33
	x := randn(r, rows*cols, 3)
	w, bias := randn(r, cols, 1), randn(r, cols, 1)
	xb, wb, bb := f32Buf(t, ctx, x), f32Buf(t, ctx, w), f32Buf(t, ctx, bias)
	y := newBuf(t, ctx, 4*len(x))
	want := make([]float32, len(x))

	must(t, ctx.Silu(x, want))
	must(t, ctx.SiluBuf(xb.Float32View(), y.Float32View()))
	sameF32(t, "Silu", y, 0, want)
	must(t, ctx.GeluTanh(x, want))
	must(t, ctx.GeluTanhBuf(xb.Float32View(), y.Float32View()))
	sameF32(t, "GeluTanh", y, 0, want)
	must(t, ctx.Softmax(rows, cols, x, want))
	must(t, ctx.SoftmaxBuf(rows, cols, xb.Float32View(), y.Float32View()))
	sameF32(t, "Softmax", y, 0, want)
	must(t, ctx.Rmsnorm(rows, x, w, 1e-5, want))
	must(t, ctx.RmsnormBuf(rows, xb.Float32View(), wb.Float32View(), 1e-5, y.Float32View()))
	sameF32(t, "Rmsnorm", y, 0, want)
	// Nullable tensors: the zero view is absent, like nil.
	must(t, ctx.Layernorm(rows, cols, x, nil, bias, 1e-5, want))
	must(t, ctx.LayernormBuf(rows, cols, xb.Float32View(), Float32View{}, bb.Float32View(), 1e-5, y.Float32View()))
	sameF32(t, "Layernorm(nil, bias)", y, 0, want)
	must(t, ctx.Layernorm(rows, cols, x, w, bias, 1e-5, want))
	must(t, ctx.LayernormBuf(rows, cols, xb.Float32View(), wb.Float32View(), bb.Float32View(), 1e-5, y.Float32View()))
	sameF32(t, "Layernorm", y, 0, want)

	// Sub-views: rows 2..4 of x into the middle of y; a view may be longer
	// than the shape needs (y's tail is untouched).
	must(t, y.Fill(0, y.Size(), 0))
	sub := x[2*cols : 5*cols]
	must(t, ctx.Softmax(3, cols, sub, want[:3*cols]))
	must(t, ctx.SoftmaxBuf(3, cols, xb.Float32View().Slice(2*cols, 5*cols), y.Float32View().Slice(cols, len(x))))
	sameF32(t, "Softmax on sub-views", y, cols, want[:3*cols])
	sameF32(t, "untouched head", y, 0, make([]float32, cols))
	sameF32(t, "untouched tail", y, 4*cols, make([]float32, len(x)-4*cols))

	// In place: the same view as input and output (alias(x)).
	xs := append([]float32(nil), x...)
	must(t, ctx.Silu(xs, xs))
	xc := f32Buf(t, ctx, x)
	must(t, ctx.SiluBuf(xc.Float32View(), xc.Float32View()))
	sameF32(t, "in-place Silu", xc, 0, xs)
	// Partial overlap is detected by the C library.
	wantErr(t, ctx.SiluBuf(xc.Float32View().Slice(0, 10), xc.Float32View().Slice(1, 11)), InvalidArgument,
		"kb_silu", "overlap")

	// Strided gemm with transposes, c an inout view at an offset.
	m, n, k := 5, 6, 7
	for _, tr := range [][2]bool{{false, false}, {true, true}, {true, false}} {
		ar, ac, br, bc := m, k, k, n
		if tr[0] {
			ar, ac = k, m
		}
		if tr[1] {
			br, bc = n, k
		}
		lda, ldb, ldc := ac+1, bc+2, n+3
		a, bm := randn(r, (ar-1)*lda+ac, 1), randn(r, (br-1)*ldb+bc, 1)
		c := randn(r, m*ldc, 1)
		cb := f32Buf(t, ctx, append(make([]float32, 5), c...))
		must(t, ctx.Gemm(tr[0], tr[1], m, n, k, 0.5, a, lda, bm, ldb, -1, c, ldc))
		must(t, ctx.GemmBuf(tr[0], tr[1], m, n, k, 0.5, f32Buf(t, ctx, a).Float32View(), lda,
			f32Buf(t, ctx, bm).Float32View(), ldb, -1, cb.Float32View().Slice(5, 5+len(c)), ldc))
		sameF32(t, "Gemm", cb, 5, c)
	}

	// i32 tensors: ids in, indices out.
	vocab, dim := 10, 4
	table := randn(r, vocab*dim, 1)
	ids := []int32{3, 0, 9, 3, 5}
	idsb, err := NewBufferInt32(ctx, ids)
	must(t, err)
	defer idsb.Close()
	emb := make([]float32, len(ids)*dim)
	must(t, ctx.Embedding(vocab, dim, ids, table, emb))
	eb := newBuf(t, ctx, 4*len(emb))
	must(t, ctx.EmbeddingBuf(vocab, dim, idsb.Int32View(), f32Buf(t, ctx, table).Float32View(), eb.Float32View()))
	sameF32(t, "Embedding", eb, 0, emb)
	am := make([]int32, rows)
	must(t, ctx.Argmax(cols, x, am))
	ab := newBuf(t, ctx, 4*rows)
	must(t, ctx.ArgmaxBuf(cols, xb.Float32View(), ab.Int32View()))
	gotAm := make([]int32, rows)
	must(t, ab.DownloadInt32(0, gotAm))
	for i := range am {
		if gotAm[i] != am[i] {
			t.Fatalf("Argmax[%d] = %d through buffers, %d through slices", i, gotAm[i], am[i])
		}
	}
	// A C error keeps the C library's message (id out of range).
	must(t, idsb.UploadInt32(1, []int32{int32(vocab)}))
	wantErr(t, ctx.EmbeddingBuf(vocab, dim, idsb.Int32View(), f32Buf(t, ctx, table).Float32View(), eb.Float32View()),
		InvalidArgument, "kb_embedding")
	sameF32(t, "Embedding after a failure", eb, 0, emb)

	// Reduced precision.
	x16 := make([]uint16, len(x))
	Float32sToBF16(x16, x)
	x16b, err := NewBufferUint16(ctx, x16)
	must(t, err)
	defer x16b.Close()
	y16 := make([]uint16, len(x))
	must(t, ctx.SoftmaxBF16(rows, cols, x16, y16))
	y16b := newBuf(t, ctx, 2*len(x))
	must(t, ctx.SoftmaxBF16Buf(rows, cols, x16b.BF16View(), y16b.BF16View()))
	got16 := make([]uint16, len(x))
	must(t, y16b.DownloadUint16(0, got16))
	for i := range got16 {
		if got16[i] != y16[i] {
			t.Fatalf("SoftmaxBF16[%d] = %#x through buffers, %#x through slices", i, got16[i], y16[i])
		}
	}
	Float32sToF16(x16, x)
	must(t, x16b.UploadUint16(0, x16))
	must(t, ctx.GeluF16(x16, y16))
	must(t, ctx.GeluF16Buf(x16b.F16View(), y16b.F16View()))
	must(t, y16b.DownloadUint16(0, got16))
	for i := range got16 {
		if got16[i] != y16[i] {
			t.Fatalf("GeluF16[%d] = %#x through buffers, %#x through slices", i, got16[i], y16[i])
		}
	}
}

// View errors name the argument, come before any C call and write nothing.
func TestKernelBufferErrors(t *testing.T) {
	ctx := cpuContext(t, 1)
	x := f32Buf(t, ctx, []float32{1, 2, 3, 4, 5, 6})
	y := newBuf(t, ctx, 24)
	must(t, y.Fill(0, 24, 0x33))
	before := contents(t, y)
	yv := y.Float32View()
	wantErr(t, ctx.SoftmaxBuf(2, 3, x.Float32View(), yv.Slice(0, 5)), ShapeMismatch,
		"SoftmaxBuf: len(y) is 5, want at least 6 for shape [rows, cols]")
	wantErr(t, ctx.SoftmaxBuf(2, 3, x.Float32View().Slice(2, 8), yv), InvalidArgument,
		"SoftmaxBuf: x is elements [2, 8) of a Buffer of 6 float32 elements")
	wantErr(t, ctx.SoftmaxBuf(2, 3, x.Float32View().Slice(-1, 3), yv), InvalidArgument, "x is elements [-1, 3)")
	wantErr(t, ctx.SoftmaxBuf(2, 3, x.Float32View().Slice(4, 3), yv), InvalidArgument, "x is elements [4, 3)")
	wantErr(t, ctx.SoftmaxBuf(-2, 3, x.Float32View(), yv), InvalidArgument, "SoftmaxBuf: rows must be >= 0, got -2")
	wantErr(t, ctx.SoftmaxBuf(2, 3, Float32View{}, yv), ShapeMismatch, "len(x) is 0, want at least 6")
	wantErr(t, ctx.GemmBuf(false, false, 2, 2, 3, 1, x.Float32View(), 2, x.Float32View(), 2, 0, yv, 2),
		ShapeMismatch, "GemmBuf: lda must be >= max(1, 3)")
	wantErr(t, ctx.SoftmaxBuf(1<<40, 1<<40, x.Float32View(), yv), OutOfMemory, "SoftmaxBuf: size of x overflows")
	// The C library's checks come back with its message.
	wantErr(t, ctx.SoftmaxBuf(2, 0, Float32View{}, Float32View{}), InvalidArgument, "kb_softmax", "cols")
	if got := contents(t, y); !bytes.Equal(got, before) {
		t.Fatalf("a failed kernel changed its output: % x", got)
	}
	// A bf16 buffer seen as f16 is the caller's choice; the view types keep
	// the dtypes apart at compile time (SiluBF16Buf takes BF16View).
	h := newBuf(t, ctx, 6)
	wantErr(t, ctx.SiluBF16Buf(h.BF16View().Slice(0, 4), h.BF16View()), InvalidArgument, "x is elements [0, 4)")
}

// Buffers and their contexts from several goroutines (under -race too).
func TestBufferConcurrency(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ctx, err := NewContext(1+g%2, BackendCPU)
			if err != nil {
				errs <- err
				return
			}
			defer ctx.Close()
			x := make([]float32, 64)
			for i := range x {
				x[i] = float32(i*g) / 10
			}
			want := make([]float32, 64)
			if err := ctx.Softmax(4, 16, x, want); err != nil {
				errs <- err
				return
			}
			for i := 0; i < 100; i++ {
				b, err := NewBufferFloat32(ctx, x)
				if err != nil {
					errs <- err
					return
				}
				if err := ctx.SoftmaxBuf(4, 16, b.Float32View(), b.Float32View()); err != nil {
					errs <- err
					return
				}
				got := make([]float32, 64)
				if err := b.DownloadFloat32(0, got); err != nil {
					errs <- err
					return
				}
				b.Close()
				for j := range got {
					if got[j] != want[j] {
						errs <- &Error{Internal, "concurrent buffer result differs"}
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
