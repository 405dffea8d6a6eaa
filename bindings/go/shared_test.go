package kernelbridge

// One Context and one Buffer shared by goroutines, and closed while they use
// them (docs/go.md, "Goroutines").  go_test.sh also runs these under -race.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// 8 goroutines x 3,000 mixed calls on one two-thread Context: every result
// is the call made alone, and a failing call reports its own goroutine's
// message.
func TestSharedContext(t *testing.T) {
	d := newStressData()
	ref, err := NewContext(1, BackendCPU)
	must(t, err)
	want := make([][]uint32, stressKinds)
	for kind := range want {
		want[kind], err = stressCall(ref, kind, d)
		must(t, err)
	}
	must(t, ref.Close())

	shared, err := NewContext(2, BackendCPU)
	must(t, err)
	defer shared.Close()
	var wg sync.WaitGroup
	errs := make(chan error, stressGoroutines)
	for g := 0; g < stressGoroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for j := 0; j < 3000; j++ {
				kind := stressKind(g, j)
				// Every 16th call is the large gemm, which uses the pool.
				if j%16 == 15 {
					kind = stressKinds - 1
				}
				got, err := stressCall(shared, kind, d)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d call %d (kind %d): %v", g, j, kind, err)
					return
				}
				for i := range got {
					if got[i] != want[kind][i] {
						errs <- fmt.Errorf("goroutine %d call %d (kind %d): element %d differs from the call made alone", g, j, kind, i)
						return
					}
				}
				if j%100 == 0 {
					// Each goroutine's own bad value: its own message.
					eps := float32(-(g + 1))
					err := shared.Rmsnorm(4, d.x64, d.w16, eps, make([]float32, 64))
					wantMsg := fmt.Sprintf("eps must be finite and > 0, got %g", eps)
					var e *Error
					if !errors.As(err, &e) || e.Code != InvalidArgument || !strings.Contains(e.Msg, fmt.Sprintf("got %g", eps)) {
						errs <- fmt.Errorf("goroutine %d: error %v, want one saying %q", g, err, wantMsg)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// isClosedError: a call on a Context (or Buffer) closed by another
// goroutine fails with InvalidArgument, from the Go check ("closed") or,
// when Close came between that check and the C call, from C ("destroyed").
func isClosedError(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == InvalidArgument &&
		(strings.Contains(e.Msg, "closed") || strings.Contains(e.Msg, "destroyed context"))
}

// Close while 8 goroutines call: every call gives the right bits or the
// closed error; nothing crashes or hangs.
func TestCloseContextWhileInUse(t *testing.T) {
	d := newStressData()
	want := make([][]uint32, stressKinds)
	for kind := range want {
		var err error
		want[kind], err = stressCall(nil, kind, d)
		must(t, err)
	}
	for round := 0; round < 5; round++ {
		ctx, err := NewContext(2, BackendCPU)
		must(t, err)
		var wg sync.WaitGroup
		var mu sync.Mutex
		done, refused := 0, 0
		errs := make(chan error, stressGoroutines)
		// Close only once every goroutine has finished a call, so that the
		// close lands among calls however slowly the goroutines start
		// (under -race on a loaded machine they can start late).
		var started sync.WaitGroup
		started.Add(stressGoroutines)
		for g := 0; g < stressGoroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				after, first := 0, true
				defer func() {
					if first { // failed before any call finished
						started.Done()
					}
				}()
				for j := 0; after < 10 && j < 1000000; j++ {
					if j > 0 && first {
						first = false
						started.Done()
					}
					kind := stressKind(g, j)
					got, err := stressCall(ctx, kind, d)
					if err != nil {
						if !isClosedError(err) {
							errs <- fmt.Errorf("goroutine %d: %v", g, err)
							return
						}
						after++
						mu.Lock()
						refused++
						mu.Unlock()
						continue
					}
					for i := range got {
						if got[i] != want[kind][i] {
							errs <- fmt.Errorf("goroutine %d call %d: wrong bits", g, j)
							return
						}
					}
					mu.Lock()
					done++
					mu.Unlock()
				}
			}(g)
		}
		started.Wait()
		time.Sleep(time.Duration(round+1) * time.Millisecond)
		must(t, ctx.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if refused < stressGoroutines*10 || done == 0 {
			t.Errorf("round %d: %d calls done, %d refused (want > 0 and >= %d)", round, done, refused, stressGoroutines*10)
		}
		must(t, ctx.Close()) // again: nothing
	}
}

// One Buffer used by 8 goroutines (kernels on views of it, transfers), then
// closed while they use it: results are right or the closed error.
func TestSharedBufferAndCloseWhileInUse(t *testing.T) {
	ctx, err := NewContext(2, BackendCPU)
	must(t, err)
	defer ctx.Close()
	xs := stressValues(1024, 21)
	want := make([]float32, 1024)
	must(t, Silu(xs, want))
	for round := 0; round < 5; round++ {
		in, err := NewBufferFloat32(ctx, xs)
		must(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, stressGoroutines)
		for g := 0; g < stressGoroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				out, err := ctx.NewBuffer(4 * 1024)
				if err != nil {
					errs <- err
					return
				}
				defer out.Close()
				got := make([]float32, 1024)
				for j, after := 0, 0; after < 10 && j < 1000000; j++ {
					err := ctx.SiluBuf(in.Float32View(), out.Float32View())
					if err == nil {
						err = out.DownloadFloat32(0, got)
					}
					if err == nil && j%7 == 0 {
						back := make([]float32, 16)
						err = in.DownloadFloat32(16*g, back)
					}
					if err != nil {
						if !isClosedError(err) {
							errs <- fmt.Errorf("goroutine %d: %v", g, err)
							return
						}
						after++
						continue
					}
					for i := range got {
						if got[i] != want[i] {
							errs <- fmt.Errorf("goroutine %d: element %d wrong", g, i)
							return
						}
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
		must(t, in.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if in.Size() != 0 {
			t.Errorf("Size of a closed Buffer: %d", in.Size())
		}
	}
}

// A Buffer closed while a long kernel call reads it: Close waits for the
// call (64 MB, so that freed memory would be unmapped and a read of it
// crash).
func TestCloseBufferDuringLongCall(t *testing.T) {
	ctx, err := NewContext(1, BackendCPU)
	must(t, err)
	defer ctx.Close()
	const n = 1 << 24
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(i%1000)/250 - 2
	}
	in, err := NewBufferFloat32(ctx, xs)
	must(t, err)
	out, err := ctx.NewBuffer(4 * n)
	must(t, err)
	defer out.Close()
	started := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		close(started)
		result <- ctx.GeluBuf(in.Float32View(), out.Float32View())
	}()
	<-started
	time.Sleep(5 * time.Millisecond)
	must(t, in.Close())
	if err := <-result; err != nil && !isClosedError(err) {
		t.Fatalf("GeluBuf: %v", err)
	} else if err == nil {
		got := make([]float32, 16)
		must(t, out.DownloadFloat32(n-16, got))
		want := make([]float32, 16)
		must(t, Gelu(xs[n-16:], want))
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
}
