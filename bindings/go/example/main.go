// Command example calls a few kernelbridge kernels and checks the results;
// it exits with status 1 on any mismatch.  The consumer test builds it in a
// fresh module that got the package with `go get`.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"kernelbridge.dev/go/kernelbridge"
)

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fmt.Fprintf(os.Stderr, "example: "+format+"\n", args...)
		os.Exit(1)
	}
}

func main() {
	// Package-level functions use a pooled default context.
	x := []float32{-2, -1, 0, 1, 2}
	y := make([]float32, len(x))
	if err := kernelbridge.Silu(x, y); err != nil {
		check(false, "Silu: %v", err)
	}
	for i, v := range x {
		want := float64(v) / (1 + math.Exp(-float64(v)))
		check(math.Abs(float64(y[i])-want) < 1e-6, "Silu(%v) = %v, want %v", v, y[i], want)
	}

	// An explicit context: backend and threads.
	ctx, err := kernelbridge.NewContext(0, kernelbridge.BackendCPU) // host slices need a CPU context
	check(err == nil, "NewContext: %v", err)
	defer ctx.Close()

	// Softmax of a 2x3 matrix: rows are explicit, the dims cannot come from
	// a 1-D slice.
	logits := []float32{1, 2, 3, 0, 0, 0}
	probs := make([]float32, 6)
	check(ctx.Softmax(2, 3, logits, probs) == nil, "Softmax failed")
	for r := 0; r < 2; r++ {
		s := probs[3*r] + probs[3*r+1] + probs[3*r+2]
		check(math.Abs(float64(s)-1) < 1e-6, "softmax row %d sums to %v", r, s)
	}
	check(math.Abs(float64(probs[3])-1.0/3) < 1e-6, "uniform row: %v", probs[3:])

	// C = A * B for A [2, 3], B [3, 2].
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	c := make([]float32, 4)
	check(ctx.Gemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2) == nil, "Gemm failed")
	want := []float32{58, 64, 139, 154}
	for i := range c {
		check(c[i] == want[i], "Gemm: c = %v, want %v", c, want)
	}

	// Argmax per row; the row count comes from len(out).
	out := make([]int32, 2)
	check(kernelbridge.Argmax(3, logits, out) == nil, "Argmax failed")
	check(out[0] == 2 && out[1] == 0, "Argmax = %v", out)

	// Buffers: memory for kernels (host memory on a CPU context, device
	// memory on a CUDA one), used through typed views.
	xb, err := kernelbridge.NewBufferFloat32(ctx, logits)
	check(err == nil, "NewBufferFloat32: %v", err)
	defer xb.Close()
	pb, err := ctx.NewBuffer(4 * len(logits))
	check(err == nil, "NewBuffer: %v", err)
	defer pb.Close()
	check(ctx.SoftmaxBuf(2, 3, xb.Float32View(), pb.Float32View()) == nil, "SoftmaxBuf failed")
	probs2 := make([]float32, len(probs))
	check(pb.DownloadFloat32(0, probs2) == nil, "DownloadFloat32 failed")
	for i := range probs {
		check(probs2[i] == probs[i], "SoftmaxBuf = %v, Softmax = %v", probs2, probs)
	}

	// bfloat16: []uint16 bit patterns.
	h := make([]uint16, len(x))
	kernelbridge.Float32sToBF16(h, x)
	check(kernelbridge.SiluBF16(h, h) == nil, "SiluBF16 failed")
	check(math.Abs(float64(kernelbridge.BF16ToFloat32(h[4]))-float64(y[4])) < 2e-2, "SiluBF16(2) = %v",
		kernelbridge.BF16ToFloat32(h[4]))

	// Errors: codes usable with errors.Is, messages naming the argument.
	err = kernelbridge.Silu(x, y[:3])
	check(errors.Is(err, kernelbridge.ErrShapeMismatch), "short output: %v", err)
	cuda := "available"
	if n, err := kernelbridge.CUDADeviceCount(); err != nil {
		// No CUDA backend library, NVIDIA driver or device: the message says which.
		check(errors.Is(err, kernelbridge.ErrBackendUnavailable), "CUDA: %v", err)
		_, err = kernelbridge.NewCUDAContext(0)
		check(errors.Is(err, kernelbridge.ErrBackendUnavailable), "CUDA context: %v", err)
		cuda = "not available"
	} else {
		cuda = fmt.Sprintf("%d device(s)", n)
	}

	fmt.Printf("kernelbridge %s: example OK (silu %v, gemm %v, argmax %v, CUDA %s)\n", kernelbridge.VersionString(),
		y, c, out, cuda)
}
