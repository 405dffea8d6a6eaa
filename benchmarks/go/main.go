// Command benchmarks times a 16-element kb_silu call three ways, RUNS times
// each (interleaved): through the public package-level function
// (kernelbridge.Silu, pooled context), through a Context method, and through
// bare cgo calls of kb_silu (raw.go).  It prints ns/call for every run, then the
// min and median, and allocations per call.  run.sh adds the C baseline.
// With -cuda it times the same call on device buffers instead (cuda.go).
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"

	"kernelbridge.dev/go/kernelbridge"
)

func main() {
	runs := flag.Int("runs", 5, "runs of each benchmark")
	cuda := flag.Bool("cuda", false, "time silu on CUDA device buffers (benchmarks/cuda/overhead)")
	iters := flag.Int("iters", 20000, "calls per run with -cuda")
	flag.Parse()
	if *cuda {
		runCUDA(*runs, *iters)
		return
	}
	x := make([]float32, 16)
	y := make([]float32, 16)
	for i := range x {
		x[i] = float32(i)/2 - 4
	}
	ctx, err := kernelbridge.NewContext(1, kernelbridge.BackendCPU)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer ctx.Close()
	benches := []struct {
		name string
		fn   func(b *testing.B)
	}{
		{"go public kernelbridge.Silu", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if kernelbridge.Silu(x, y) != nil {
					b.Fatal("Silu failed")
				}
			}
		}},
		{"go Context.Silu", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if ctx.Silu(x, y) != nil {
					b.Fatal("Silu failed")
				}
			}
		}},
		{"go bare cgo C.kb_silu", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if rawSilu(x, y) != 0 {
					b.Fatal("kb_silu failed")
				}
			}
		}},
		{"go bare cgo, no pointer check", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if rawSiluNoCheck(x, y) != 0 {
					b.Fatal("kb_silu failed")
				}
			}
		}},
	}
	ns := make([][]float64, len(benches))
	allocs := make([]int64, len(benches))
	for r := 0; r < *runs; r++ {
		for i, bm := range benches {
			res := testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); bm.fn(b) })
			v := float64(res.T.Nanoseconds()) / float64(res.N)
			ns[i] = append(ns[i], v)
			allocs[i] += res.AllocsPerOp()
			fmt.Printf("run %d  %-30s %8.1f ns/call  %d allocs/call\n", r+1, bm.name, v, res.AllocsPerOp())
		}
	}
	fmt.Println()
	med := make([]float64, len(benches))
	for i, bm := range benches {
		s := append([]float64(nil), ns[i]...)
		sort.Float64s(s)
		med[i] = s[len(s)/2]
		fmt.Printf("%-30s min %8.1f  median %8.1f ns/call  allocs/call %d\n", bm.name, s[0], med[i], allocs[i]/int64(*runs))
	}
	fmt.Printf("\nmedian ratios: public / bare cgo %.2fx, public / bare cgo without check %.2fx; "+
		"Context / bare cgo %.2fx, Context / bare cgo without check %.2fx\n",
		med[0]/med[2], med[0]/med[3], med[1]/med[2], med[1]/med[3])
}
