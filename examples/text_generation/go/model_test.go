package main

import (
	"os"
	"path/filepath"
	"testing"

	kb "kernelbridge.dev/go/kernelbridge"
)

// testModel opens a test model of $KB_TG_TESTDATA (check.sh sets it to
// examples/text_generation/testdata; the test is skipped without it).
func testModel(t *testing.T, name string) (*kb.Context, *kb.Gguf) {
	dir := os.Getenv("KB_TG_TESTDATA")
	if dir == "" {
		t.Skip("KB_TG_TESTDATA is not set")
	}
	ctx, err := kb.NewContext(1, kb.BackendCPU)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	g, err := ctx.OpenGguf(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return ctx, g
}

// A decode step (forward on one token, then picking the next one) allocates
// nothing, for every sampling mode and for dense and expert models.
func TestDecodeStepAllocatesNothing(t *testing.T) {
	for _, name := range []string{"tiny-llama-q4_0.gguf", "tiny-moe-f32.gguf"} {
		ctx, g := testModel(t, name)
		m, err := loadModel(g, 4)
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, m.vocab)
		if err := m.forward(ctx, []int32{1, 2, 3}, false, logits); err != nil {
			t.Fatal(err)
		}
		input := []int32{5}
		for _, o := range []options{{temperature: 0, topP: 1}, {temperature: 0.8, topK: 40, topP: 1},
			{temperature: 0.8, topP: 0.9}, {temperature: 1, topP: 1}} {
			o := o
			s := &sampler{ctx: ctx, o: &o, vocab: m.vocab, out: make([]int32, 1)}
			step := int64(0)
			allocs := testing.AllocsPerRun(20, func() {
				m.cached = 3 // keep decoding at position 3
				if err := m.forward(ctx, input, false, logits); err != nil {
					t.Fatal(err)
				}
				if _, err := s.pick(logits, step); err != nil {
					t.Fatal(err)
				}
				step++
			})
			if allocs != 0 {
				t.Errorf("%s, %+v: %v allocations per decode step", name, o, allocs)
			}
		}
	}
}

func TestForwardErrors(t *testing.T) {
	ctx, g := testModel(t, "tiny-llama-f32.gguf")
	m, err := loadModel(g, 2)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.vocab)
	for _, c := range []struct {
		ids  []int32
		want string
	}{
		{[]int32{1, 5000}, "token id 5000 is not in [0, 1000)"},
		{[]int32{1, 2, 3}, "3 tokens in one step (1 to 2)"},
		{nil, "0 tokens in one step (1 to 2)"},
	} {
		if err := m.forward(ctx, c.ids, false, logits); err == nil || err.Error() != c.want {
			t.Errorf("forward(%v): %v, want %q", c.ids, err, c.want)
		}
	}
	m.cached = m.context - 1
	if err := m.forward(ctx, []int32{1, 2}, false, logits); err == nil ||
		err.Error() != "2 tokens after 255 do not fit in the model's context of 256" {
		t.Errorf("past the context: %v", err)
	}
}

// BenchmarkDecodeStep times one decode step (forward on one token and a
// greedy pick) of the float32 test model on one thread.
func BenchmarkDecodeStep(b *testing.B) {
	dir := os.Getenv("KB_TG_TESTDATA")
	if dir == "" {
		b.Skip("KB_TG_TESTDATA is not set")
	}
	ctx, err := kb.NewContext(1, kb.BackendCPU)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	g, err := ctx.OpenGguf(filepath.Join(dir, "tiny-llama-f32.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	m, err := loadModel(g, 8)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, m.vocab)
	s := &sampler{ctx: ctx, o: &options{topP: 1}, vocab: m.vocab, out: make([]int32, 1)}
	input := []int32{5}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.cached = 100
		if err := m.forward(ctx, input, false, logits); err != nil {
			b.Fatal(err)
		}
		if _, err := s.pick(logits, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}
