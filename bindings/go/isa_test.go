package kernelbridge

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// isaProbeEnv makes TestISAProbe act as the child of TestCPUISA.
const isaProbeEnv = "KB_GO_ISA_PROBE"

// TestISAProbe runs only as a child process (KB_CPU_ISA is read once per
// process): it prints the level and the bits of a gemm on a two-thread
// context, or the error of a refused context.
func TestISAProbe(t *testing.T) {
	if os.Getenv(isaProbeEnv) == "" {
		t.Skip("run by TestCPUISA in a child process")
	}
	fmt.Println("level", CPUIsa())
	c, err := NewContext(2, BackendCPU)
	if err != nil {
		fmt.Println("error", errors.Is(err, ErrInvalidArgument), err)
		return
	}
	defer c.Close()
	const m, n, k = 10, 10, 100
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(math.Sin(float64(i) * 0.37))
	}
	out := make([]float32, m*n)
	if err := c.Gemm(false, true, m, n, k, 1, a, k, a, k, 0, out, n); err != nil {
		fmt.Println("error", err)
		return
	}
	var bits uint64
	for _, v := range out {
		bits = bits*31 + uint64(math.Float32bits(v))
	}
	fmt.Println("bits", bits)
}

func probeISA(t *testing.T, level string) (string, string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestISAProbe$", "-test.v")
	cmd.Env = append(os.Environ(), isaProbeEnv+"=1", "KB_CPU_ISA="+level)
	outBytes, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe %s: %v\n%s", level, err, outBytes)
	}
	var got, result string
	for _, line := range strings.Split(string(outBytes), "\n") {
		switch {
		case strings.HasPrefix(line, "level "):
			got = strings.TrimPrefix(line, "level ")
		case strings.HasPrefix(line, "bits "), strings.HasPrefix(line, "error "):
			result = line
		}
	}
	return got, result
}

// CPUIsa names the instruction-set level; KB_CPU_ISA forces a lower one with
// the same result bits, and a value that is no level makes NewContext fail
// with InvalidArgument naming the variable.
func TestCPUISA(t *testing.T) {
	if isa := CPUIsa(); isa != "scalar" && isa != "avx2" && isa != "avx512" {
		t.Fatalf("CPUIsa() = %q", isa)
	}
	level, scalar := probeISA(t, "scalar")
	if level != "scalar" || !strings.HasPrefix(scalar, "bits ") {
		t.Fatalf("scalar probe: level %q result %q", level, scalar)
	}
	for _, want := range []string{"avx2", "avx512"} {
		level, got := probeISA(t, want)
		if strings.Contains(got, "is not supported by this CPU") {
			continue
		}
		if level != want || got != scalar {
			t.Fatalf("%s probe: level %q result %q, scalar %q", want, level, got, scalar)
		}
	}
	_, bad := probeISA(t, "sse9")
	if !strings.HasPrefix(bad, "error true ") || !strings.Contains(bad, `KB_CPU_ISA="sse9" is not an instruction-set level`) {
		t.Fatalf("bad KB_CPU_ISA: %q", bad)
	}
}
