package kernelbridge

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// wantErr fails unless err is an *Error with the given code whose message
// contains every fragment.
func wantErr(t *testing.T, err error, code Status, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", code)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("code %v (%v), want %v", e.Code, err, code)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("message %q does not mention %q", err.Error(), f)
		}
	}
}

func TestLengthChecks(t *testing.T) {
	x := make([]float32, 4)
	wantErr(t, Silu(x, make([]float32, 3)), ShapeMismatch, "Silu", "len(y) is 3", "want 4", "[n]")
	wantErr(t, Add(x, make([]float32, 5), x), ShapeMismatch, "len(b) is 5")
	wantErr(t, Softmax(2, 3, make([]float32, 5), make([]float32, 6)), ShapeMismatch, "len(x) is 5", "want 6",
		"[rows, cols]")
	wantErr(t, Rmsnorm(2, make([]float32, 6), make([]float32, 3), 1e-5, make([]float32, 7)), ShapeMismatch,
		"len(y) is 7")
	wantErr(t, Layernorm(2, 3, make([]float32, 6), make([]float32, 2), nil, 1e-5, make([]float32, 6)),
		ShapeMismatch, "len(weight) is 2")
	wantErr(t, CrossEntropy(3, make([]float32, 6), []int32{0, 1}, -1, make([]float32, 2), nil), ShapeMismatch,
		"len(meanLoss) is 0", "want 1")
	// Strided: the slice may be longer, not shorter.
	a := make([]float32, 2*4+3)
	wantErr(t, Gemm(false, false, 3, 2, 3, 1, a[:10], 4, make([]float32, 6), 2, 0, make([]float32, 6), 2),
		ShapeMismatch, "len(a) is 10", "at least 11")
	must(t, Gemm(false, false, 3, 2, 3, 1, a, 4, make([]float32, 6), 2, 0, make([]float32, 6), 2))
	must(t, Gemm(false, false, 3, 2, 3, 1, make([]float32, 12), 4, make([]float32, 6), 2, 0, make([]float32, 6), 2))
	wantErr(t, Gemm(false, false, 3, 2, 3, 1, a, 2, make([]float32, 6), 2, 0, make([]float32, 6), 2),
		ShapeMismatch, "lda must be >= max(1, 3)", "got 2")
	wantErr(t, Gemm(false, false, 3, 2, 3, 1, a, -1, make([]float32, 6), 2, 0, make([]float32, 6), 2),
		InvalidArgument, "lda must be >= 0, got -1")
	// Sizes whose product overflows: OUT_OF_MEMORY, as the C library.
	big := math.MaxInt64 / 2
	wantErr(t, Softmax(big, big, nil, nil), OutOfMemory, "size of x overflows")
}

func TestInvalidArguments(t *testing.T) {
	wantErr(t, Softmax(-1, 3, nil, nil), InvalidArgument, "Softmax: rows must be >= 0, got -1")
	wantErr(t, Gemm(false, false, 1, -2, 1, 1, nil, 1, nil, 1, 0, nil, 1), InvalidArgument, "n must be >= 0")
	// Checks made by the C library come back with its message, copied in the
	// call that failed.
	wantErr(t, Scale(float32(math.Inf(1)), []float32{1}, []float32{0}), InvalidArgument, "kb_scale", "alpha")
	wantErr(t, Softmax(2, 0, nil, nil), InvalidArgument, "kb_softmax", "cols must be > 0 when rows > 0")
	wantErr(t, TopkSample(4, make([]float32, 4), 5, 1, 0, make([]int32, 1)), InvalidArgument, "kb_topk_sample", "k")
}

func TestErrorsIs(t *testing.T) {
	err := Silu(make([]float32, 2), make([]float32, 1))
	if !errors.Is(err, ErrShapeMismatch) || errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("errors.Is mapping wrong for %v", err)
	}
	wrapped := fmt.Errorf("layer 3: %w", err)
	if !errors.Is(wrapped, ErrShapeMismatch) {
		t.Fatal("errors.Is through a wrapper")
	}
	var e *Error
	if !errors.As(wrapped, &e) || e.Code != ShapeMismatch {
		t.Fatal("errors.As through a wrapper")
	}
	if !errors.Is(Softmax(-1, 1, nil, nil), ErrInvalidArgument) {
		t.Fatal("negative dim is not ErrInvalidArgument")
	}
	sentinels := map[Status]error{
		InvalidArgument: ErrInvalidArgument, ShapeMismatch: ErrShapeMismatch, Unsupported: ErrUnsupported,
		OutOfMemory: ErrOutOfMemory, BackendUnavailable: ErrBackendUnavailable, DeviceError: ErrDeviceError,
		Internal: ErrInternal, DeviceLost: ErrDeviceLost,
	}
	for code, s := range sentinels {
		if !errors.Is(&Error{Code: code, Msg: "x"}, s) {
			t.Fatalf("%v does not match its sentinel", code)
		}
		// Go's names agree with the C library's.
		if code.String() != StatusString(code) {
			t.Fatalf("%v.String() = %q, C says %q", code, code.String(), StatusString(code))
		}
	}
	// DEVICE_LOST (8): a CUDA context whose device failed for good.
	lost := fmt.Errorf("step 12: %w", &Error{Code: DeviceLost, Msg: "kb_gemm: device lost: cudaErrorIllegalAddress"})
	if !errors.Is(lost, ErrDeviceLost) || errors.Is(lost, ErrDeviceError) || DeviceLost != 8 ||
		DeviceLost.String() != "DEVICE_LOST" || StatusString(DeviceLost) != "DEVICE_LOST" {
		t.Fatalf("DeviceLost mapping: %v", lost)
	}
	var e2 *Error
	if !errors.As(lost, &e2) || e2.Code != DeviceLost {
		t.Fatal("errors.As of a DeviceLost error")
	}
	if Status(99).String() != "UNKNOWN" || StatusString(99) != "UNKNOWN" {
		t.Fatal("unknown status name")
	}
	if got := (&Error{Code: ShapeMismatch, Msg: "m"}).Error(); got != "kernelbridge: SHAPE_MISMATCH: m" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestEmptySlices(t *testing.T) {
	// n = 0: nil and empty non-nil slices both go to C as NULL.
	must(t, Silu(nil, nil))
	must(t, Silu([]float32{}, make([]float32, 0, 8)))
	must(t, Add(nil, []float32{}, nil))
	must(t, Softmax(0, 5, nil, nil))
	must(t, Softmax(0, 0, nil, nil))
	must(t, Argmax(7, nil, nil))
	must(t, Gemm(false, false, 0, 0, 0, 1, nil, 1, nil, 1, 0, nil, 1))
	// k = 0: C = beta * C.
	c := []float32{1, 2}
	must(t, Gemm(false, false, 1, 2, 0, 1, nil, 1, nil, 2, 3, c, 2))
	if c[0] != 3 || c[1] != 6 {
		t.Fatalf("Gemm with k = 0: %v", c)
	}
	must(t, Embedding(3, 2, nil, make([]float32, 6), nil))
}

func TestAliasing(t *testing.T) {
	x := []float32{-1, 0, 1, 2}
	want := make([]float32, 4)
	must(t, Silu(x, want))
	must(t, Silu(x, x)) // alias(x): the same slice is allowed
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("in-place Silu[%d] = %v, want %v", i, x[i], want[i])
		}
	}
	buf := make([]float32, 5)
	// Partial overlap is detected by the C library.
	wantErr(t, Silu(buf[:4], buf[1:]), InvalidArgument, "kb_silu", "overlap")
	// Outputs without alias() must not overlap inputs at all.
	table := make([]float32, 8)
	wantErr(t, Embedding(4, 2, []int32{0}, table, table[:2]), InvalidArgument, "kb_embedding", "overlap")
	// dlogits has alias(logits): in place is fine.
	logits := []float32{1, 2, 3, 4}
	must(t, CrossEntropyBackward(2, logits, []int32{0, 1}, -1, 1, logits))
}
