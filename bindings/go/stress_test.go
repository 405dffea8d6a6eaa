package kernelbridge

// Concurrency stress (docs/reliability.md): 8 goroutines make 10 000 kernel
// calls each, first through the package-level functions (which share a pool
// of contexts between goroutines), then each on a private Context with two
// threads; every result must be bit-identical to the same call made alone on
// one thread.  go_test.sh also runs it under -race.

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

const (
	stressGoroutines = 8
	stressCalls      = 10000
	stressKinds      = 8
)

type stressData struct {
	x64, y64, w16, q, k, v []float32
	logits                 []float32
	a8, b8                 []float32
	a64, b64               []float32
}

func stressValues(n int, seed uint32) []float32 {
	s := seed
	out := make([]float32, n)
	for i := range out {
		s = s*1664525 + 1013904223
		out[i] = float32(int32(s>>8)%2000) / 500
	}
	return out
}

func newStressData() *stressData {
	return &stressData{
		x64: stressValues(64, 1), y64: stressValues(64, 2), w16: stressValues(16, 3),
		q: stressValues(2*4*8, 4), k: stressValues(6*8, 5), v: stressValues(6*8, 6),
		logits: stressValues(2*16, 7),
		a8:     stressValues(64, 8), b8: stressValues(64, 9),
		a64: stressValues(64*64, 10), b64: stressValues(64*64, 11),
	}
}

// stressCall makes call kind on ctx (nil: the package-level function) and
// returns its output's bits.
func stressCall(ctx *Context, kind int, d *stressData) ([]uint32, error) {
	var out []float32
	var tokens []int32
	var err error
	switch kind {
	case 0:
		out = make([]float32, 64)
		if ctx == nil {
			err = Silu(d.x64, out)
		} else {
			err = ctx.Silu(d.x64, out)
		}
	case 1:
		out = make([]float32, 64)
		if ctx == nil {
			err = Gemm(false, true, 8, 8, 8, 1, d.a8, 8, d.b8, 8, 0, out, 8)
		} else {
			err = ctx.Gemm(false, true, 8, 8, 8, 1, d.a8, 8, d.b8, 8, 0, out, 8)
		}
	case 2:
		out = make([]float32, 64)
		if ctx == nil {
			err = Softmax(4, 16, d.x64, out)
		} else {
			err = ctx.Softmax(4, 16, d.x64, out)
		}
	case 3:
		out = make([]float32, 64)
		if ctx == nil {
			err = Rmsnorm(4, d.x64, d.w16, 1e-5, out)
		} else {
			err = ctx.Rmsnorm(4, d.x64, d.w16, 1e-5, out)
		}
	case 4:
		out = make([]float32, 2*4*8)
		if ctx == nil {
			err = Attention(1, 2, 1, 4, 6, 8, d.q, d.k, d.v, true, 0, out)
		} else {
			err = ctx.Attention(1, 2, 1, 4, 6, 8, d.q, d.k, d.v, true, 0, out)
		}
	case 5:
		tokens = make([]int32, 2)
		if ctx == nil {
			err = TopkSample(16, d.logits, 5, 0.8, 1234, tokens)
		} else {
			err = ctx.TopkSample(16, d.logits, 5, 0.8, 1234, tokens)
		}
	case 6:
		out = make([]float32, 64)
		if ctx == nil {
			err = Add(d.x64, d.y64, out)
		} else {
			err = ctx.Add(d.x64, d.y64, out)
		}
	default:
		// Large enough for the packed path and, on two threads, a split.
		out = make([]float32, 64*64)
		if ctx == nil {
			err = Gemm(false, false, 64, 64, 64, 1, d.a64, 64, d.b64, 64, 0, out, 64)
		} else {
			err = ctx.Gemm(false, false, 64, 64, 64, 1, d.a64, 64, d.b64, 64, 0, out, 64)
		}
	}
	bits := make([]uint32, len(out)+len(tokens))
	for i, f := range out {
		bits[i] = math.Float32bits(f)
	}
	for i, t := range tokens {
		bits[len(out)+i] = uint32(t)
	}
	return bits, err
}

// stressKind spreads the kinds over the calls, the large gemm one call in 64.
func stressKind(g, j int) int {
	if j%64 == 63 {
		return stressKinds - 1
	}
	return (g + j) % (stressKinds - 1)
}

func TestStressSharedAndPrivateContexts(t *testing.T) {
	d := newStressData()
	ref, err := NewContext(1, BackendCPU)
	must(t, err)
	want := make([][]uint32, stressKinds)
	for kind := range want {
		want[kind], err = stressCall(ref, kind, d)
		must(t, err)
	}
	must(t, ref.Close())

	for _, private := range []bool{false, true} {
		var wg sync.WaitGroup
		errs := make(chan error, stressGoroutines)
		for g := 0; g < stressGoroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				var ctx *Context
				if private {
					c, err := NewContext(2, BackendCPU)
					if err != nil {
						errs <- err
						return
					}
					defer c.Close()
					ctx = c
				}
				for j := 0; j < stressCalls; j++ {
					kind := stressKind(g, j)
					got, err := stressCall(ctx, kind, d)
					if err != nil {
						errs <- fmt.Errorf("goroutine %d call %d (kind %d): %v", g, j, kind, err)
						return
					}
					for i := range got {
						if got[i] != want[kind][i] {
							errs <- fmt.Errorf("goroutine %d call %d (kind %d): element %d is %#x, alone it is %#x",
								g, j, kind, i, got[i], want[kind][i])
							return
						}
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("private contexts %v: %v", private, err)
		}
	}
}
