package kernelbridge

import (
	"errors"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The CUDA tests take one of two paths.  Where CUDA cannot be used (no
// backend library, no NVIDIA driver or no device, as on the build machine)
// TestCUDAQueries checks the errors and their messages, and the TestGPU*
// tests skip with "no CUDA device: <why>" (bazel/go_test.sh turns that into
// a "SKIPPED: ..." line of the test log).  Where a device of compute
// capability 8.0 or newer is present, they run the kernels on it.

// gpuReason is why the GPU tests cannot run here; "" when they can.
func gpuReason() string {
	n, err := CUDADeviceCount()
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e.Msg
		}
		return err.Error()
	}
	if n < 1 {
		return "kb_cuda_device_count found no device"
	}
	major, minor, err := CUDAComputeCapability(0)
	if err != nil {
		return err.Error()
	}
	if major < 8 {
		return "device 0 has compute capability " + strconv.Itoa(major) + "." + strconv.Itoa(minor) +
			"; the CUDA kernels need 8.0 or newer"
	}
	return ""
}

// needGPU skips the test unless CUDA device 0 can run kernels, and returns a
// context on it.
func needGPU(t *testing.T) *Context {
	t.Helper()
	if why := gpuReason(); why != "" {
		t.Skip("no CUDA device: " + why)
	}
	ctx, err := NewCUDAContext(0)
	must(t, err)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// What a message about unusable CUDA must name: the part that is missing.
var cudaMissing = []string{"CUDA backend", "NVIDIA driver", "no CUDA device", "libcuda"}

func mentionsMissingPart(msg string) bool {
	for _, s := range cudaMissing {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func TestCUDAQueries(t *testing.T) {
	n, err := CUDADeviceCount()
	if err == nil {
		// A machine with CUDA: the queries answer for every device and
		// reject the others.
		if n < 1 {
			t.Fatalf("CUDADeviceCount = %d without an error", n)
		}
		for d := 0; d < n; d++ {
			name, err := CUDADeviceName(d)
			must(t, err)
			major, minor, err := CUDAComputeCapability(d)
			must(t, err)
			total, err := CUDATotalMemory(d)
			must(t, err)
			free, err := CUDAFreeMemory(d)
			must(t, err)
			if name == "" || major < 1 || minor < 0 || minor > 9 || total <= 0 || free < 0 || free > total {
				t.Fatalf("device %d: %q sm_%d%d total %d free %d", d, name, major, minor, total, free)
			}
			t.Logf("CUDA device %d: %s, compute capability %d.%d, %d of %d bytes free", d, name, major, minor,
				free, total)
		}
		_, err = CUDADeviceName(n)
		wantErr(t, err, InvalidArgument, "kb_cuda_device_name")
		_, err = NewCUDAContext(n)
		wantErr(t, err, InvalidArgument, "kb_context_create_cuda")
		_, err = NewCUDAContext(-1)
		wantErr(t, err, InvalidArgument, "kb_context_create_cuda")
		return
	}

	// No usable CUDA: every entry point says so, with the same clear message
	// naming the C function that was called.
	wantErr(t, err, BackendUnavailable, "kb_cuda_device_count: ")
	if !errors.Is(err, ErrBackendUnavailable) {
		t.Fatalf("%v is not ErrBackendUnavailable", err)
	}
	if !mentionsMissingPart(err.Error()) {
		t.Fatalf("the message does not say what is missing: %v", err)
	}
	t.Logf("CUDA is not usable here: %v", err)
	type call struct {
		fn  string
		err error
	}
	var checks []call
	_, err = CUDADeviceName(0)
	checks = append(checks, call{"kb_cuda_device_name", err})
	_, _, err = CUDAComputeCapability(0)
	checks = append(checks, call{"kb_cuda_device_compute_capability", err})
	_, err = CUDATotalMemory(0)
	checks = append(checks, call{"kb_cuda_device_total_memory", err})
	_, err = CUDAFreeMemory(0)
	checks = append(checks, call{"kb_cuda_device_free_memory", err})
	ctx, err := NewCUDAContext(0)
	if ctx != nil {
		t.Fatal("NewCUDAContext returned a context with an error")
	}
	checks = append(checks, call{"kb_context_create_cuda", err})
	ctx, err = NewContext(1, BackendCUDA)
	if ctx != nil {
		t.Fatal("NewContext(BackendCUDA) returned a context with an error")
	}
	checks = append(checks, call{"kb_context_create", err})
	for _, c := range checks {
		wantErr(t, c.err, BackendUnavailable, c.fn+": ")
		if !mentionsMissingPart(c.err.Error()) {
			t.Fatalf("%s: the message does not say what is missing: %v", c.fn, c.err)
		}
	}
	// AUTO falls back to the CPU without an error.
	auto, err := NewContext(1, BackendAuto)
	must(t, err)
	defer auto.Close()
	if auto.Backend() != BackendCPU || auto.Device() != -1 {
		t.Fatalf("AUTO without CUDA: %v on device %d", auto.Backend(), auto.Device())
	}
}

// The per-thread message of calls without a context is read inside the cgo
// call that failed, so it belongs to that call even when goroutines
// interleave and move between OS threads.
func TestThreadMessages(t *testing.T) {
	_, cudaErr := CUDADeviceCount()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				_, err := NewContext(1, Backend(40+g))
				var e *Error
				if !errors.As(err, &e) || e.Code != InvalidArgument ||
					!strings.Contains(e.Msg, "unknown backend "+strconv.Itoa(40+g)) {
					errs <- errors.New("unknown backend: got " + errString(err))
					return
				}
				if cudaErr == nil {
					continue
				}
				_, err = CUDADeviceCount()
				if !errors.As(err, &e) || e.Code != BackendUnavailable ||
					!strings.HasPrefix(e.Msg, "kb_cuda_device_count: ") {
					errs <- errors.New("device count: got " + errString(err))
					return
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

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// --- GPU tests (skipped without a device) ---------------------------------------

// ulpDiff is the distance in units in the last place of float32 between a
// and b (0 for NaN against NaN).
func ulpDiff(a, b float32) float64 {
	if math.IsNaN(float64(a)) && math.IsNaN(float64(b)) {
		return 0
	}
	if a == b {
		return 0
	}
	e := math.Abs(float64(a) - float64(b))
	_, exp := math.Frexp(math.Max(math.Abs(float64(a)), math.Abs(float64(b))))
	ulp := math.Ldexp(1, exp-24)
	if ulp < 0x1p-149 {
		ulp = 0x1p-149
	}
	return e / ulp
}

func TestGPUContext(t *testing.T) {
	ctx := needGPU(t)
	if ctx.Backend() != BackendCUDA || ctx.Device() != 0 {
		t.Fatalf("CUDA context: backend %v device %d", ctx.Backend(), ctx.Device())
	}
	must(t, ctx.Synchronize())
	// NewContext(BackendCUDA) is device 0.
	c2, err := NewContext(1, BackendCUDA)
	must(t, err)
	defer c2.Close()
	if c2.Backend() != BackendCUDA || c2.Device() != 0 {
		t.Fatalf("NewContext(BackendCUDA): backend %v device %d", c2.Backend(), c2.Device())
	}
	// Go memory (the slice methods) is rejected by a CUDA context, naming
	// the argument.
	x := []float32{1, 2, 3}
	wantErr(t, ctx.Silu(x, make([]float32, 3)), InvalidArgument, "kb_silu", "x")
}

func TestGPUBuffers(t *testing.T) {
	ctx := needGPU(t)
	src := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	b, err := NewBufferFloat32(ctx, src)
	must(t, err)
	defer b.Close()
	if b.Device() != 0 || b.Size() != 32 {
		t.Fatalf("device buffer: device %d size %d", b.Device(), b.Size())
	}
	got := make([]float32, 8)
	must(t, b.DownloadFloat32(0, got))
	for i := range got {
		if got[i] != src[i] {
			t.Fatalf("round trip: %v", got)
		}
	}
	must(t, b.Fill(4, 8, 0))
	must(t, b.DownloadFloat32(0, got))
	if got[0] != 1 || got[1] != 0 || got[2] != 0 || got[3] != 4 {
		t.Fatalf("fill: %v", got)
	}
	c, err := ctx.NewBuffer(32)
	must(t, err)
	defer c.Close()
	must(t, c.CopyFrom(0, b, 0, 32))
	must(t, c.DownloadFloat32(0, got))
	if got[7] != 8 {
		t.Fatalf("copy: %v", got)
	}
	wantErr(t, b.UploadFloat32(7, src[:2]), InvalidArgument, "offset 7 + len(src) 2")

	// A device buffer on a CPU context: the C library names the argument.
	cpu, err := NewContext(1, BackendCPU)
	must(t, err)
	defer cpu.Close()
	y, err := cpu.NewBuffer(32)
	must(t, err)
	defer y.Close()
	wantErr(t, cpu.SiluBuf(b.Float32View(), y.Float32View()), InvalidArgument, "kb_silu", "x")
	wantErr(t, c.CopyFrom(0, y, 0, 32), InvalidArgument, "kb_buffer_copy")

	// The buffer outlives its context; transfers need another CUDA context.
	ctx2, err := NewCUDAContext(0)
	must(t, err)
	d, err := NewBufferFloat32(ctx2, src)
	must(t, err)
	defer d.Close()
	ctx2.Close()
	wantErr(t, d.DownloadFloat32(0, got), InvalidArgument, "closed", "SetContext")
	d.SetContext(ctx)
	must(t, d.DownloadFloat32(0, got))
	if got[5] != 6 {
		t.Fatalf("after SetContext: %v", got)
	}
}

func TestGPUKernels(t *testing.T) {
	ctx := needGPU(t)
	r := rand.New(rand.NewSource(42))
	rows, cols := 17, 300
	x := randn(r, rows*cols, 3)
	dev := func(s []float32) *Buffer {
		b, err := NewBufferFloat32(ctx, s)
		must(t, err)
		t.Cleanup(func() { b.Close() })
		return b
	}
	out := func(n int) *Buffer {
		b, err := ctx.NewBuffer(4 * n)
		must(t, err)
		t.Cleanup(func() { b.Close() })
		return b
	}
	compare := func(name string, b *Buffer, want []float32, maxUlp float64) {
		t.Helper()
		got := make([]float32, len(want))
		must(t, b.DownloadFloat32(0, got))
		for i := range got {
			if d := ulpDiff(got[i], want[i]); d > maxUlp && math.Abs(float64(got[i]-want[i])) > 1e-37 {
				t.Fatalf("%s[%d] = %v on the GPU, %v on the CPU (%v ulp)", name, i, got[i], want[i], d)
			}
		}
	}
	xb := dev(x)
	y := out(len(x))
	want := make([]float32, len(x))
	must(t, ctx.SiluBuf(xb.Float32View(), y.Float32View()))
	must(t, Silu(x, want))
	compare("Silu", y, want, 1)
	must(t, ctx.AddBuf(xb.Float32View(), xb.Float32View(), y.Float32View()))
	must(t, Add(x, x, want))
	compare("Add", y, want, 0)
	must(t, ctx.SoftmaxBuf(rows, cols, xb.Float32View(), y.Float32View()))
	must(t, Softmax(rows, cols, x, want))
	compare("Softmax", y, want, 2)

	// Argmax: identical indices.
	idx, err := ctx.NewBuffer(4 * rows)
	must(t, err)
	defer idx.Close()
	must(t, ctx.ArgmaxBuf(cols, xb.Float32View(), idx.Int32View()))
	gotIdx, wantIdx := make([]int32, rows), make([]int32, rows)
	must(t, idx.DownloadInt32(0, gotIdx))
	must(t, Argmax(cols, x, wantIdx))
	for i := range gotIdx {
		if gotIdx[i] != wantIdx[i] {
			t.Fatalf("Argmax[%d] = %d on the GPU, %d on the CPU", i, gotIdx[i], wantIdx[i])
		}
	}

	// bf16 softmax against the CPU float32 kernel on the rounded inputs:
	// |diff| <= 1e-6 + 1.6e-2*|cpu| (docs/cuda.md).
	x16 := make([]uint16, len(x))
	Float32sToBF16(x16, x)
	xw := make([]float32, len(x))
	BF16sToFloat32(xw, x16)
	xb16, err := NewBufferUint16(ctx, x16)
	must(t, err)
	defer xb16.Close()
	y16, err := ctx.NewBuffer(2 * len(x))
	must(t, err)
	defer y16.Close()
	must(t, ctx.SoftmaxBF16Buf(rows, cols, xb16.BF16View(), y16.BF16View()))
	must(t, Softmax(rows, cols, xw, want))
	got16 := make([]uint16, len(x))
	must(t, y16.DownloadUint16(0, got16))
	for i, h := range got16 {
		g := float64(BF16ToFloat32(h))
		if math.Abs(g-float64(want[i])) > 1e-6+1.6e-2*math.Abs(float64(want[i])) {
			t.Fatalf("SoftmaxBF16[%d] = %v on the GPU, CPU float32 %v", i, g, want[i])
		}
	}
	must(t, ctx.Synchronize())
}
