package main

// Loading a Llama-architecture model from a GGUF file: hyperparameters
// (llama.* keys) and weights, with the checks and messages of c/model.c's
// tg_model_load, and the KV cache and scratch the forward pass reuses.

import (
	"encoding/binary"
	"fmt"
	"math"

	kb "kernelbridge.dev/go/kernelbridge"
)

// weight is a tensor as the weight kernels take it: its type, its bytes (a
// copy read from the file) and its shape.  Experts' 3-D tensors have rows =
// experts * per-expert rows.
type weight struct {
	typ        kb.Dtype
	data       []byte
	rows, cols int
	f32        []float32 // the values of a float32 norm weight (rmsnorm takes []float32)
}

type layer struct {
	attnNorm, wq, wk, wv, wo, ffnNorm weight
	gate, up, down                    weight // dense, or the experts' [experts, ...] tensors
	router                            weight // with experts: ffn_gate_inp, [experts, hidden]
}

type model struct {
	vocab, hidden, layers, heads, kvHeads, headDim, ffn, context int
	rotaryDim, experts, expertsUsed                              int
	eps, ropeTheta                                               float32
	embed, outNorm, output                                       weight
	hasOutput                                                    bool
	layer                                                        []layer

	// The KV cache, float32, [context, kvHeads, headDim] per layer
	// (kb_attention_ex's seq-major layout, one sequence): kCache[l] and
	// vCache[l] are views of one allocation each.
	kCache, vCache [][]float32
	cached         int // tokens in the cache

	// Scratch for up to scratchRows tokens per forward call, allocated once;
	// a call on n tokens passes the first n rows (slices of these, no copy).
	scratchRows                                int
	x, h, q, k, v, attn, o, g, routeLogits, rw []float32
	routeIDs, pos                              []int32
	at, length                                 []int32 // kv_cache_append's position, attention's key count (batch 1)
}

// tensorSpec is a layer tensor to load: blk.N.<suffix>, its shape (as
// loadWeight takes it) and where it goes.
type tensorSpec struct {
	suffix     string
	d0, d1, d2 int
	f32Only    bool
	dst        *weight
}

// keyInt is an integer key, def when absent (def < 0: required).
func keyInt(g *kb.Gguf, key string, def int64) (int64, error) {
	has, err := g.HasKey(key)
	if err != nil {
		return 0, libFail(key, err)
	}
	if !has {
		if def < 0 {
			return 0, fmt.Errorf("the model has no key '%s'", key)
		}
		return def, nil
	}
	v, err := g.Int(key)
	if err != nil {
		return 0, libFail(key, err)
	}
	return v, nil
}

// keyFloat is a float key (its first value, as kb_gguf_get_f32 with count
// 1 reads it), def when absent.
func keyFloat(g *kb.Gguf, key string, def float32) (float32, error) {
	has, err := g.HasKey(key)
	if err != nil {
		return 0, libFail(key, err)
	}
	if !has {
		return def, nil
	}
	v, err := g.Float32s(key)
	if err != nil {
		return 0, libFail(key, err)
	}
	if len(v) != 1 {
		return 0, fmt.Errorf("%s: expected one number, the file has %d", key, len(v))
	}
	return v[0], nil
}

// loadWeight reads tensor name of shape [d0, d1] ([d0, d1, d2] when d2 > 0,
// the experts' tensors; [d0] when d1 == 0), checking its shape and that its
// type is one the weight kernels take (float32 only when f32Only: norms and
// the router).
func loadWeight(g *kb.Gguf, name string, d0, d1, d2 int, f32Only bool) (weight, error) {
	var w weight
	t, err := g.Tensor(name)
	if err != nil {
		if !hasTensor(g, name) {
			return w, fmt.Errorf("the model has no tensor '%s'", name)
		}
		return w, libFail(name, err)
	}
	want := []int{d0, d1, d2}
	wantDims := 1
	if d2 > 0 {
		wantDims = 3
	} else if d1 > 0 {
		wantDims = 2
	}
	if len(t.Shape) != wantDims {
		return w, fmt.Errorf("tensor '%s' has %d dimensions, expected %d", name, len(t.Shape), wantDims)
	}
	for a, size := range t.Shape {
		if size != want[a] {
			return w, fmt.Errorf("tensor '%s' has size %d on axis %d, expected %d", name, size, a, want[a])
		}
	}
	ok := t.Type == kb.DtypeF32 || (!f32Only && (t.Type == kb.DtypeF16 || t.Type == kb.DtypeBF16 ||
		t.Type == kb.DtypeQ8_0 || t.Type == kb.DtypeQ4_0))
	if !ok {
		what := "does not run (F32, F16, BF16, Q8_0 and Q4_0 it does)"
		if f32Only {
			what = "needs as F32"
		}
		return w, fmt.Errorf("tensor '%s' has GGML type %d, which this example %s", name, int(t.Type), what)
	}
	if w.data, err = g.ReadTensor(name); err != nil {
		return w, libFail(name, err)
	}
	w.typ = t.Type
	w.rows, w.cols = d0, d1
	if d2 > 0 {
		w.rows, w.cols = d0*d1, d2
	}
	if f32Only {
		w.f32 = make([]float32, len(w.data)/4)
		for i := range w.f32 {
			w.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.data[4*i:]))
		}
	}
	return w, nil
}

// hasTensor: whether the file has tensor name (a failed query counts as
// absent, as in C).
func hasTensor(g *kb.Gguf, name string) bool {
	names, err := g.TensorNames()
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// loadModel reads the hyperparameters and every weight of an open GGUF
// file of architecture "llama", and allocates the cache and the scratch for
// forward calls of up to maxRows tokens.
func loadModel(g *kb.Gguf, maxRows int) (*model, error) {
	m := &model{}
	has, err := g.HasKey("general.architecture")
	if err != nil {
		return nil, libFail("general.architecture", err)
	}
	if !has {
		return nil, fmt.Errorf("the model has no key 'general.architecture'")
	}
	arch, err := g.String("general.architecture")
	if err != nil {
		return nil, libFail("general.architecture", err)
	}
	if len(arch) >= 64 {
		return nil, fmt.Errorf("architecture name of %d bytes is not 'llama'", len(arch))
	}
	if cString(arch) != "llama" { // C compares the NUL-terminated buffer
		return nil, fmt.Errorf("architecture '%s' is not supported (only 'llama')", cString(arch))
	}
	ints := []struct {
		key string
		def int64
		dst *int
	}{
		{"llama.embedding_length", -1, &m.hidden},
		{"llama.block_count", -1, &m.layers},
		{"llama.feed_forward_length", -1, &m.ffn},
		{"llama.attention.head_count", -1, &m.heads},
		{"llama.attention.head_count_kv", -2, &m.kvHeads}, // -2: default heads
		{"llama.context_length", -1, &m.context},
		{"llama.expert_count", 0, &m.experts},
		{"llama.expert_used_count", 0, &m.expertsUsed},
	}
	var raw [8]int64
	for i, k := range ints {
		def := k.def
		if def == -2 {
			def = raw[3]
		}
		if raw[i], err = keyInt(g, k.key, def); err != nil {
			return nil, err
		}
		// Out-of-range values fail the consistency checks below as in C
		// (which keeps them as int64); clamp so that they stay so on int.
		*k.dst = clampInt(raw[i])
	}
	if m.eps, err = keyFloat(g, "llama.attention.layer_norm_rms_epsilon", 1e-5); err != nil {
		return nil, err
	}
	if m.ropeTheta, err = keyFloat(g, "llama.rope.freq_base", 10000); err != nil {
		return nil, err
	}
	if m.heads <= 0 || m.kvHeads <= 0 || m.hidden <= 0 || m.hidden%m.heads != 0 || m.heads%m.kvHeads != 0 ||
		m.layers <= 0 || m.ffn <= 0 || m.context <= 0 || m.layers > 4096 {
		return nil, fmt.Errorf("inconsistent hyperparameters: hidden %d, heads %d, kv heads %d, layers %d, ffn %d, context %d",
			raw[0], raw[3], raw[4], raw[1], raw[2], raw[5])
	}
	if m.experts < 0 || (m.experts > 0 && (m.expertsUsed <= 0 || m.expertsUsed > m.experts)) {
		return nil, fmt.Errorf("expert_used_count %d of expert_count %d", raw[7], raw[6])
	}
	m.headDim = m.hidden / m.heads
	rot, err := keyInt(g, "llama.rope.dimension_count", int64(m.headDim))
	if err != nil {
		return nil, err
	}
	m.rotaryDim = clampInt(rot)
	// The vocabulary size is the embedding's row count.
	embed, err := g.Tensor("token_embd.weight")
	if err != nil {
		if !hasTensor(g, "token_embd.weight") {
			return nil, fmt.Errorf("the model has no tensor 'token_embd.weight'")
		}
		return nil, libFail("token_embd.weight", err)
	}
	if len(embed.Shape) == 0 {
		return nil, fmt.Errorf("token_embd.weight: the tensor has no axis 0")
	}
	m.vocab = embed.Shape[0]

	kvd := m.kvHeads * m.headDim
	if m.embed, err = loadWeight(g, "token_embd.weight", m.vocab, m.hidden, 0, false); err != nil {
		return nil, err
	}
	if m.outNorm, err = loadWeight(g, "output_norm.weight", m.hidden, 0, 0, true); err != nil {
		return nil, err
	}
	if hasTensor(g, "output.weight") {
		if m.output, err = loadWeight(g, "output.weight", m.vocab, m.hidden, 0, false); err != nil {
			return nil, err
		}
		m.hasOutput = true
	}
	m.layer = make([]layer, m.layers)
	for l := range m.layer {
		y := &m.layer[l]
		specs := []tensorSpec{
			{"attn_norm.weight", m.hidden, 0, 0, true, &y.attnNorm},
			{"attn_q.weight", m.hidden, m.hidden, 0, false, &y.wq},
			{"attn_k.weight", kvd, m.hidden, 0, false, &y.wk},
			{"attn_v.weight", kvd, m.hidden, 0, false, &y.wv},
			{"attn_output.weight", m.hidden, m.hidden, 0, false, &y.wo},
			{"ffn_norm.weight", m.hidden, 0, 0, true, &y.ffnNorm},
		}
		if m.experts > 0 {
			specs = append(specs,
				tensorSpec{"ffn_gate_inp.weight", m.experts, m.hidden, 0, true, &y.router},
				tensorSpec{"ffn_gate_exps.weight", m.experts, m.ffn, m.hidden, false, &y.gate},
				tensorSpec{"ffn_up_exps.weight", m.experts, m.ffn, m.hidden, false, &y.up},
				tensorSpec{"ffn_down_exps.weight", m.experts, m.hidden, m.ffn, false, &y.down})
		} else {
			specs = append(specs,
				tensorSpec{"ffn_gate.weight", m.ffn, m.hidden, 0, false, &y.gate},
				tensorSpec{"ffn_up.weight", m.ffn, m.hidden, 0, false, &y.up},
				tensorSpec{"ffn_down.weight", m.hidden, m.ffn, 0, false, &y.down})
		}
		for _, s := range specs {
			if *s.dst, err = loadWeight(g, fmt.Sprintf("blk.%d.%s", l, s.suffix), s.d0, s.d1, s.d2, s.f32Only); err != nil {
				return nil, err
			}
		}
		if m.experts > 0 && (y.gate.typ != y.up.typ || y.gate.typ != y.down.typ) {
			return nil, fmt.Errorf("layer %d: the experts' tensors differ in type", l)
		}
		if m.experts == 0 && y.gate.typ != y.up.typ {
			return nil, fmt.Errorf("layer %d: ffn_gate and ffn_up differ in type", l)
		}
	}
	if err := m.allocate(maxRows); err != nil {
		return nil, err
	}
	return m, nil
}

// allocate makes the KV cache and the scratch of forward calls of up to r
// tokens (the sizes of c/model.c).  Sizes a file's hyperparameters make too
// large for a slice are an error, as C's failed calloc is.
func (m *model) allocate(r int) (err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("no memory for the cache and scratch")
		}
	}()
	kvd := m.kvHeads * m.headDim
	per := m.context * kvd
	kc, vc := make([]float32, m.layers*per), make([]float32, m.layers*per)
	m.kCache, m.vCache = make([][]float32, m.layers), make([][]float32, m.layers)
	for l := 0; l < m.layers; l++ {
		m.kCache[l] = kc[l*per : (l+1)*per : (l+1)*per]
		m.vCache[l] = vc[l*per : (l+1)*per : (l+1)*per]
	}
	wide := m.hidden
	if m.ffn > wide {
		wide = m.ffn
	}
	m.scratchRows = r
	m.x = make([]float32, r*m.hidden)
	m.h = make([]float32, r*m.hidden)
	m.q = make([]float32, r*m.hidden)
	m.k = make([]float32, r*kvd)
	m.v = make([]float32, r*kvd)
	m.attn = make([]float32, r*m.hidden)
	m.o = make([]float32, r*m.hidden)
	m.g = make([]float32, r*wide)
	m.routeLogits = make([]float32, r*max1(m.experts))
	m.rw = make([]float32, r*max1(m.expertsUsed))
	m.routeIDs = make([]int32, r*max1(m.expertsUsed))
	m.pos = make([]int32, r)
	m.at = make([]int32, 1)
	m.length = make([]int32, 1)
	return nil
}

func max1(v int) int {
	if v > 0 {
		return v
	}
	return 1
}

// clampInt keeps an int64 key's value on int (64-bit on the platforms cgo
// builds for, so this only guards 32-bit ones).
func clampInt(v int64) int {
	if v > math.MaxInt {
		return math.MaxInt
	}
	if v < math.MinInt {
		return math.MinInt
	}
	return int(v)
}

// cString is s as C's "%s" prints a char buffer: up to its first NUL.
func cString(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i]
		}
	}
	return s
}
