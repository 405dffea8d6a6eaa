package main

// The GPU mode (-cuda): the 16-element silu on device buffers of a CUDA
// context, through the package's public API (Context.SiluBuf on views).
// benchmarks/cuda/overhead/run.sh compares it with a bare CUDA launch +
// synchronize timed by bare_launch.cu, so the output is one machine-readable
// line, "overhead SIDE MIN_NS MEDIAN_NS", or "SKIPPED: reason" without a GPU.

import (
	"fmt"
	"os"
	"sort"
	"time"

	"kernelbridge.dev/go/kernelbridge"
)

const cudaSide = "go-Context.SiluBuf"

func runCUDA(runs, iters int) {
	if n, err := kernelbridge.CUDADeviceCount(); err != nil || n < 1 {
		why := "kb_cuda_device_count found no device"
		if err != nil {
			why = err.Error()
		}
		fmt.Printf("SKIPPED: %s: no usable CUDA device (%s)\n", cudaSide, why)
		return
	}
	ctx, err := kernelbridge.NewCUDAContext(0)
	if err != nil {
		fmt.Printf("SKIPPED: %s: %v\n", cudaSide, err)
		return
	}
	defer ctx.Close()
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i)/2 - 4
	}
	xb, err := kernelbridge.NewBufferFloat32(ctx, x)
	fail(err)
	defer xb.Close()
	yb, err := ctx.NewBuffer(4 * len(x))
	fail(err)
	defer yb.Close()
	// Views made once: they are values describing the buffers, the way a
	// caller keeps them next to the buffers it reuses.
	xv, yv := xb.Float32View(), yb.Float32View()
	timeOnce := func(n int) float64 {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if err := ctx.SiluBuf(xv, yv); err != nil {
				fail(err)
			}
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(n)
	}
	timeOnce(iters/4 + 1) // warm-up: backend loading, first launches
	ns := make([]float64, runs)
	for r := range ns {
		ns[r] = timeOnce(iters)
	}
	sort.Float64s(ns)
	fmt.Printf("overhead %s %.1f %.1f\n", cudaSide, ns[0], ns[len(ns)/2])
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}
