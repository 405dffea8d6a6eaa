package kernelbridge

import "testing"

// The success path of a kernel call allocates nothing: slices are passed to
// C directly, the default context comes from a pool and the message buffer
// is C memory owned by the context.
func TestZeroAllocs(t *testing.T) {
	x := make([]float32, 16)
	y := make([]float32, 16)
	for i := range x {
		x[i] = float32(i) - 8
	}
	must(t, Silu(x, y)) // warm the pool
	if n := testing.AllocsPerRun(1000, func() { _ = Silu(x, y) }); n != 0 {
		t.Errorf("Silu allocates %v times per call, want 0", n)
	}
	c, err := NewContext(1, BackendCPU)
	must(t, err)
	defer c.Close()
	if n := testing.AllocsPerRun(1000, func() { _ = c.Silu(x, y) }); n != 0 {
		t.Errorf("Context.Silu allocates %v times per call, want 0", n)
	}
	a := make([]float32, 6)
	if n := testing.AllocsPerRun(1000, func() { _ = c.Gemm(false, true, 2, 2, 3, 1, a, 3, a, 3, 0, y[:4], 2) }); n != 0 {
		t.Errorf("Context.Gemm allocates %v times per call, want 0", n)
	}
	h := make([]uint16, 16)
	if n := testing.AllocsPerRun(1000, func() { _ = c.SiluBF16(h, h) }); n != 0 {
		t.Errorf("Context.SiluBF16 allocates %v times per call, want 0", n)
	}
	// Buffers: kernels on views and transfers allocate nothing either.
	xb, err := NewBufferFloat32(c, x)
	must(t, err)
	defer xb.Close()
	yb, err := c.NewBuffer(64)
	must(t, err)
	defer yb.Close()
	if n := testing.AllocsPerRun(1000, func() { _ = c.SiluBuf(xb.Float32View(), yb.Float32View()) }); n != 0 {
		t.Errorf("Context.SiluBuf allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		_ = xb.UploadFloat32(0, x)
		_ = yb.DownloadFloat32(0, y)
	}); n != 0 {
		t.Errorf("Buffer transfers allocate %v times per call, want 0", n)
	}
}

func BenchmarkSilu16(b *testing.B) {
	x := make([]float32, 16)
	y := make([]float32, 16)
	for i := range x {
		x[i] = float32(i) - 8
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := Silu(x, y); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkContextSiluBuf16(b *testing.B) {
	c, err := NewContext(1, BackendCPU)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	x, err := c.NewBuffer(64)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	if err := x.Fill(0, 64, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.SiluBuf(x.Float32View(), x.Float32View()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkContextSilu16(b *testing.B) {
	x := make([]float32, 16)
	y := make([]float32, 16)
	c, err := NewContext(1, BackendCPU)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := c.Silu(x, y); err != nil {
			b.Fatal(err)
		}
	}
}
