package kernelbridge

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

func TestContextLifetime(t *testing.T) {
	c, err := NewContext(2, BackendCPU)
	must(t, err)
	if c.Backend() != BackendCPU || c.Threads() != 2 {
		t.Fatalf("backend %v threads %d", c.Backend(), c.Threads())
	}
	x := []float32{1, 2}
	must(t, c.Silu(x, make([]float32, 2)))
	// The message of a failure belongs to the call that failed.
	wantErr(t, c.Softmax(1, 0, nil, nil), InvalidArgument, "kb_softmax")
	must(t, c.Silu(x, make([]float32, 2)))
	must(t, c.Close())
	must(t, c.Close()) // idempotent
	wantErr(t, c.Silu(x, make([]float32, 2)), InvalidArgument, "Silu", "closed")
	var nilCtx *Context
	wantErr(t, nilCtx.Silu(x, x), InvalidArgument, "closed")
	must(t, nilCtx.Close())

	if c.Device() != -1 || c.Backend() != BackendCPU || c.Threads() != 1 {
		t.Fatalf("closed context: device %d backend %v threads %d", c.Device(), c.Backend(), c.Threads())
	}
	wantErr(t, c.Synchronize(), InvalidArgument, "Synchronize", "closed")

	// AUTO: CUDA device 0 where it can be used, else the CPU without an error.
	auto, err := NewContext(0, BackendAuto)
	must(t, err)
	defer auto.Close()
	want, device := BackendCPU, -1
	if _, err := CUDADeviceCount(); err == nil {
		want, device = BackendCUDA, 0
	}
	if auto.Backend() != want || auto.Device() != device || auto.Threads() < 1 {
		t.Fatalf("auto: backend %v device %d threads %d", auto.Backend(), auto.Device(), auto.Threads())
	}
	// A CPU context has no device and nothing to wait for.
	cpu, err := NewContext(1, BackendCPU)
	must(t, err)
	defer cpu.Close()
	if cpu.Device() != -1 {
		t.Fatalf("CPU context on device %d", cpu.Device())
	}
	must(t, cpu.Synchronize())
}

func TestContextErrors(t *testing.T) {
	_, err := NewContext(-1, BackendCPU)
	wantErr(t, err, InvalidArgument, "NewContext: threads must be >= 0, got -1")
	// Messages of calls without a context come from the C library
	// (kb_last_error, read in the failing cgo call).
	_, err = NewContext(1, Backend(42))
	wantErr(t, err, InvalidArgument, "kb_context_create", "unknown backend 42")
	_, err = NewContext(1<<40, BackendCPU)
	wantErr(t, err, InvalidArgument, "kb_context_create", "num_threads")
}

// Contexts dropped without Close are released by their finalizer.
func TestContextFinalizer(t *testing.T) {
	for i := 0; i < 100; i++ {
		c, err := NewContext(1, BackendCPU)
		must(t, err)
		must(t, c.Silu([]float32{1}, make([]float32, 1)))
	}
	runtime.GC()
	runtime.GC()
}

func TestVersion(t *testing.T) {
	if VersionString() != Version {
		t.Fatalf("library %s, header %s", VersionString(), Version)
	}
	if VersionNumber() != VersionMajor*10000+VersionMinor*100+VersionPatch {
		t.Fatalf("VersionNumber %d", VersionNumber())
	}
}

// Package-level functions are safe for concurrent use (each call takes its
// own pooled context); so are calls on distinct contexts.
func TestConcurrency(t *testing.T) {
	const goroutines = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	x := make([]float32, 300)
	for i := range x {
		x[i] = float32(i%17) - 8
	}
	want := make([]float32, len(x))
	must(t, Softmax(3, 100, x, want))
	for g := 0; g < goroutines; g++ {
		wg.Add(2)
		go func(g int) {
			defer wg.Done()
			y := make([]float32, len(x))
			for i := 0; i < 200; i++ {
				if err := Softmax(3, 100, x, y); err != nil {
					errs <- err
					return
				}
				for j := range y {
					if y[j] != want[j] {
						errs <- errors.New("concurrent Softmax result differs")
						return
					}
				}
				// Failures interleaved with successes keep their own messages.
				err := Softmax(1, 0, nil, nil)
				var e *Error
				if !errors.As(err, &e) || e.Code != InvalidArgument || e.Msg == "" {
					errs <- errors.New("concurrent failure lost its message: " + err.Error())
					return
				}
			}
		}(g)
		go func(g int) {
			defer wg.Done()
			c, err := NewContext(1+g%3, BackendCPU)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			y := make([]float32, len(x))
			for i := 0; i < 200; i++ {
				if err := c.Softmax(3, 100, x, y); err != nil {
					errs <- err
					return
				}
				if err := c.Silu(x, make([]float32, 3)); !errors.Is(err, ErrShapeMismatch) {
					errs <- errors.New("expected a shape mismatch")
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
