// Command runner is the Go conformance runner (docs/conformance.md): it runs
// every golden and bad-input case of the corpus through the public Go
// binding, kernelbridge.dev/go/kernelbridge, and writes the result JSON.
//
//	runner --corpus DIR --out FILE [--threads N] [--backend cpu|cpu-buffers]
//
// --backend cpu-buffers runs every golden case a second time through the
// Buffer methods (Context.<Kernel>Buf), every tensor staged in a host
// kernelbridge.Buffer, and fails a case whose outputs differ in any bit from
// the slice run (bad-input cases run through the slices either way).
//
// The runner is table-driven: it finds each kernel's Go method by name
// (kb_gelu_tanh -> Context.GeluTanh) and builds the arguments from the
// manifest's signatures with the binding's documented rule (docs/go.md): a
// size is not an argument when a non-nullable tensor is 1-D with exactly
// that size (it is the slice's length).
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"kernelbridge.dev/go/kernelbridge"
)

type param struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Dtype    string   `json:"dtype"`
	Shape    []string `json:"shape"`
	Ld       string   `json:"ld"`
	Nullable bool     `json:"nullable"`
	Type     string   `json:"type"`
}

type tolerance struct {
	Ulp float64 `json:"ulp"`
	Abs float64 `json:"abs"`
}

type goldenCase struct {
	Name     string                     `json:"name"`
	Kernel   string                     `json:"kernel"`
	Dims     map[string]int64           `json:"dims"`
	Flags    map[string]bool            `json:"flags"`
	Scalars  map[string]json.RawMessage `json:"scalars"`
	Inputs   map[string]string          `json:"inputs"`
	Expected map[string]string          `json:"expected"`
	Alias    map[string]string          `json:"alias"`
	Null     []string                   `json:"null"`
	// Tolerance, where present, replaces the kernel's (a bound that
	// depends on the case's data: linear_w with block-quantized weights).
	Tolerance *tolerance `json:"tolerance"`
}

type manifest struct {
	Signatures map[string][]param   `json:"signatures"`
	Tolerances map[string]tolerance `json:"tolerances"`
	Cases      []goldenCase         `json:"cases"`
}

type badTensor struct {
	Len    int               `json:"len"`
	Shape  []int             `json:"shape"`
	Values []json.RawMessage `json:"values"`
}

type badCase struct {
	Name    string                     `json:"name"`
	Kernel  string                     `json:"kernel"`
	Dims    map[string]int64           `json:"dims"`
	Flags   map[string]bool            `json:"flags"`
	Scalars map[string]json.RawMessage `json:"scalars"`
	Tensors map[string]badTensor       `json:"tensors"`
	Null    []string                   `json:"null"`
	Overlap map[string]struct {
		With   string `json:"with"`
		Offset int    `json:"offset"`
	} `json:"overlap"`
	Requires []string `json:"requires"`
	Expected string   `json:"expected"`
}

type badInput struct {
	Signatures map[string][]param `json:"signatures"`
	Cases      []badCase          `json:"cases"`
}

type caseResult struct {
	Name   string            `json:"name"`
	Kernel string            `json:"kernel"`
	Status string            `json:"status"`
	Hashes map[string]string `json:"hashes"`
	MaxUlp interface{}       `json:"max_ulp"`
	Passed bool              `json:"passed"`
	Error  string            `json:"error,omitempty"`
}

type badResult struct {
	Name      string `json:"name"`
	Kernel    string `json:"kernel"`
	Expected  string `json:"expected"`
	Got       string `json:"got"`
	Untouched *bool  `json:"untouched,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
}

// The generator's initialisms (tools/kbgen/kbgen/emitters/go.py):
// kb_softmax_bf16 -> SoftmaxBF16.
var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "kv": "KV", "cpu": "CPU", "cuda": "CUDA", "ok": "OK", "gpu": "GPU", "api": "API",
	"bf16": "BF16", "f16": "F16",
}

// goName is the binding's name of a kernel: kb_gelu_tanh -> GeluTanh.
func goName(kernel string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.TrimPrefix(kernel, "kb_"), "_") {
		if w == "" {
			continue
		}
		if s, ok := initialisms[w]; ok {
			b.WriteString(s)
		} else {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// npyDescr is the .npy descr of the inputs of each signature dtype.
var npyDescr = map[string]string{"f32": "<f4", "i32": "<i4", "u8": "|u1", "bf16": "<u2", "f16": "<u2"}

// is16 says whether a signature dtype is a 16-bit float (bit patterns in a
// []uint16).
func is16(dtype string) bool { return dtype == "bf16" || dtype == "f16" }

func isTensor(p param) bool { return p.Role == "in" || p.Role == "out" || p.Role == "inout" }

// derived maps each size that the Go binding reads from a slice length to
// the tensor it reads it from.
func derived(sig []param) map[string]string {
	out := map[string]string{}
	for _, p := range sig {
		if p.Role != "dim" {
			continue
		}
		// inputs first, as the generator does
		for _, pass := range []bool{true, false} {
			for _, t := range sig {
				if !isTensor(t) || (t.Role == "in") != pass || t.Nullable || len(t.Shape) != 1 || t.Shape[0] != p.Name {
					continue
				}
				if _, done := out[p.Name]; !done {
					out[p.Name] = t.Name
				}
			}
		}
	}
	return out
}

// scalarValue converts a manifest scalar (a number, "nan"/"inf"/"-inf", or a
// decimal string for u64) to the Go type of the binding.
func scalarValue(raw json.RawMessage, typ string) (reflect.Value, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	switch typ {
	case "f32", "f64":
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return reflect.Value{}, err
		}
		if typ == "f64" {
			return reflect.ValueOf(v), nil
		}
		return reflect.ValueOf(float32(v)), nil
	case "i32":
		v, err := strconv.ParseInt(s, 10, 32)
		return reflect.ValueOf(int32(v)), err
	case "i64":
		v, err := strconv.ParseInt(s, 10, 64)
		return reflect.ValueOf(v), err
	case "u64":
		v, err := strconv.ParseUint(s, 10, 64)
		return reflect.ValueOf(v), err
	case "u32":
		v, err := strconv.ParseUint(s, 10, 32)
		return reflect.ValueOf(uint32(v)), err
	case "bool":
		return reflect.ValueOf(s == "true" || s == "1"), nil
	}
	return reflect.Value{}, fmt.Errorf("unsupported scalar type %q", typ)
}

// buffer is one tensor argument: a []float32, []int32 or []byte after the
// signature's dtype (f32, i32, or u8: the bytes of a tensor in a storage
// format); nil for NULL.
type buffer struct {
	dtype string
	f32   []float32
	i32   []int32
	u8    []byte
	u16   []uint16 // bf16 / f16 bit patterns
	null  bool
}

// newBuffer is a buffer of n elements of dtype, each f (a float32 for f32,
// else an integer).
func newBuffer(dtype string, n int, f float64) buffer {
	b := buffer{dtype: dtype}
	switch dtype {
	case "i32":
		b.i32 = make([]int32, n)
		for i := range b.i32 {
			b.i32[i] = int32(f)
		}
	case "u8":
		b.u8 = make([]byte, n)
		for i := range b.u8 {
			b.u8[i] = byte(f)
		}
	case "bf16", "f16":
		b.u16 = make([]uint16, n)
		for i := range b.u16 {
			b.u16[i] = uint16(f)
		}
	default:
		b.f32 = make([]float32, n)
		for i := range b.f32 {
			b.f32[i] = float32(f)
		}
	}
	return b
}

// set stores element i from a manifest value (scalarValue's encoding).
func (b buffer) set(i int, raw json.RawMessage) error {
	typ := map[string]string{"i32": "i32", "u8": "i32", "bf16": "i32", "f16": "i32"}[b.dtype]
	if typ == "" {
		typ = "f32"
	}
	v, err := scalarValue(raw, typ)
	if err != nil {
		return err
	}
	switch b.dtype {
	case "i32":
		b.i32[i] = v.Interface().(int32)
	case "u8":
		n := v.Interface().(int32)
		if n < 0 || n > 255 {
			return fmt.Errorf("byte value %d", n)
		}
		b.u8[i] = byte(n)
	case "bf16", "f16":
		n := v.Interface().(int32)
		if n < 0 || n > 0xffff {
			return fmt.Errorf("16-bit pattern %d", n)
		}
		b.u16[i] = uint16(n)
	default:
		b.f32[i] = v.Interface().(float32)
	}
	return nil
}

// slice is elements [i, j) of b, which may lie past its length (within its
// capacity: an overlap target's room); with no room after them when view.
func (b buffer) slice(i, j int, view bool) buffer {
	return buffer{dtype: b.dtype, f32: sub(b.f32, i, j, view), i32: sub(b.i32, i, j, view),
		u8: sub(b.u8, i, j, view), u16: sub(b.u16, i, j, view)}
}

func sub[T any](s []T, i, j int, view bool) []T {
	switch {
	case s == nil:
		return nil
	case view:
		return s[i:j:j]
	}
	return s[i:j]
}

func (b buffer) value() reflect.Value {
	switch b.dtype {
	case "i32":
		return reflect.ValueOf(b.i32)
	case "u8":
		return reflect.ValueOf(b.u8)
	case "bf16", "f16":
		return reflect.ValueOf(b.u16)
	}
	return reflect.ValueOf(b.f32)
}

// goType is the Go slice type of a signature dtype, for messages.
func goType(dtype string) string {
	switch dtype {
	case "i32":
		return "[]int32"
	case "u8":
		return "[]byte"
	case "bf16", "f16":
		return "[]uint16"
	}
	return "[]float32"
}

func (b buffer) bytes() []byte {
	var out bytes.Buffer
	switch b.dtype {
	case "i32":
		_ = binary.Write(&out, binary.LittleEndian, b.i32)
	case "u8":
		out.Write(b.u8)
	case "bf16", "f16":
		_ = binary.Write(&out, binary.LittleEndian, b.u16)
	default:
		_ = binary.Write(&out, binary.LittleEndian, b.f32)
	}
	return out.Bytes()
}

func fnv1a(b []byte) string {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return fmt.Sprintf("%016x", h)
}

// stage is the tensors of one call in Buffers (buffer mode): tensors that
// share a slice (aliases) share a Buffer; after the call, finish copies every
// Buffer back into its slice and frees it.
type stage struct {
	ctx   *kernelbridge.Context
	views map[string]reflect.Value
	bufs  []*kernelbridge.Buffer
	back  []func() error
}

func (s *stage) view(b buffer) (reflect.Value, error) {
	if b.null {
		switch b.dtype {
		case "i32":
			return reflect.ValueOf(kernelbridge.Int32View{}), nil
		case "u8":
			return reflect.ValueOf(kernelbridge.ByteView{}), nil
		case "bf16":
			return reflect.ValueOf(kernelbridge.BF16View{}), nil
		case "f16":
			return reflect.ValueOf(kernelbridge.F16View{}), nil
		}
		return reflect.ValueOf(kernelbridge.Float32View{}), nil
	}
	key := ""
	if b.len() > 0 {
		switch b.dtype {
		case "i32":
			key = fmt.Sprintf("i%p/%d", &b.i32[0], len(b.i32))
		case "u8":
			key = fmt.Sprintf("u%p/%d", &b.u8[0], len(b.u8))
		case "bf16", "f16":
			key = fmt.Sprintf("h%p/%d", &b.u16[0], len(b.u16))
		default:
			key = fmt.Sprintf("f%p/%d", &b.f32[0], len(b.f32))
		}
		if v, ok := s.views[key]; ok {
			return v, nil
		}
	}
	var buf *kernelbridge.Buffer
	var v reflect.Value
	var err error
	switch b.dtype {
	case "i32":
		buf, err = kernelbridge.NewBufferInt32(s.ctx, b.i32)
		if err == nil {
			v = reflect.ValueOf(buf.Int32View())
			s.back = append(s.back, func() error { return buf.DownloadInt32(0, b.i32) })
		}
	case "u8":
		buf, err = kernelbridge.NewBufferBytes(s.ctx, b.u8)
		if err == nil {
			v = reflect.ValueOf(buf.ByteView())
			s.back = append(s.back, func() error { return buf.Download(0, b.u8) })
		}
	case "bf16", "f16":
		buf, err = kernelbridge.NewBufferUint16(s.ctx, b.u16)
		if err == nil {
			if b.dtype == "bf16" {
				v = reflect.ValueOf(buf.BF16View())
			} else {
				v = reflect.ValueOf(buf.F16View())
			}
			s.back = append(s.back, func() error { return buf.DownloadUint16(0, b.u16) })
		}
	default:
		buf, err = kernelbridge.NewBufferFloat32(s.ctx, b.f32)
		if err == nil {
			v = reflect.ValueOf(buf.Float32View())
			s.back = append(s.back, func() error { return buf.DownloadFloat32(0, b.f32) })
		}
	}
	if err != nil {
		return reflect.Value{}, err
	}
	s.bufs = append(s.bufs, buf)
	if key != "" {
		s.views[key] = v
	}
	return v, nil
}

func (s *stage) finish(ok bool) error {
	var err error
	for i, b := range s.bufs {
		if ok && err == nil {
			err = s.back[i]()
		}
		b.Close()
	}
	return err
}

// call runs kernel on ctx with the arguments in C order (without ctx),
// leaving out the derived sizes; with bufs, through Context.<Kernel>Buf with
// every tensor staged in a Buffer.
func call(ctx *kernelbridge.Context, kernel string, sig []param, dims map[string]int64, flags map[string]bool,
	scalars map[string]json.RawMessage, tensors map[string]buffer, bufs bool) (err error) {
	name := goName(kernel)
	if bufs {
		name += "Buf"
	}
	m := reflect.ValueOf(ctx).MethodByName(name)
	if !m.IsValid() {
		return fmt.Errorf("the binding has no method Context.%s", name)
	}
	st := &stage{ctx: ctx, views: map[string]reflect.Value{}}
	der := derived(sig)
	var args []reflect.Value
	for _, p := range sig {
		switch {
		case p.Role == "dim":
			if _, ok := der[p.Name]; ok {
				continue
			}
			args = append(args, reflect.ValueOf(int(dims[p.Name])))
		case p.Role == "flag":
			args = append(args, reflect.ValueOf(flags[p.Name]))
		case p.Role == "scalar":
			v, err := scalarValue(scalars[p.Name], p.Type)
			if err != nil {
				return fmt.Errorf("scalar %s: %v", p.Name, err)
			}
			args = append(args, v)
		case isTensor(p):
			b, ok := tensors[p.Name]
			if !ok {
				return fmt.Errorf("no buffer for %s", p.Name)
			}
			if !bufs {
				args = append(args, b.value())
				continue
			}
			v, err := st.view(b)
			if err != nil {
				st.finish(false)
				return fmt.Errorf("staging %s in a Buffer: %v", p.Name, err)
			}
			args = append(args, v)
		default:
			return fmt.Errorf("parameter %s: unknown role %s", p.Name, p.Role)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
		if ferr := st.finish(err == nil); err == nil && ferr != nil {
			err = fmt.Errorf("copying the outputs back: %v", ferr)
		}
	}()
	if m.Type().NumIn() != len(args) {
		return fmt.Errorf("Context.%s takes %d arguments, the signature gives %d", name, m.Type().NumIn(), len(args))
	}
	for i, a := range args {
		if want := m.Type().In(i); a.Type() != want {
			if !a.Type().ConvertibleTo(want) {
				return fmt.Errorf("argument %d of Context.%s: %s, want %s", i, name, a.Type(), want)
			}
			args[i] = a.Convert(want)
		}
	}
	out := m.Call(args)
	if e := out[0].Interface(); e != nil {
		return e.(error)
	}
	return nil
}

func statusOf(err error) string {
	if err == nil {
		return "OK"
	}
	var e *kernelbridge.Error
	if errors.As(err, &e) {
		return e.Code.String()
	}
	return "RUNNER_ERROR"
}

func ulp32(w float64) float64 {
	e := int((math.Float64bits(w)>>52)&0x7ff) - 1023
	if e < -126 {
		e = -126
	}
	return math.Ldexp(1, e-23)
}

// metric is the error of one output against its expected values
// (docs/conformance.md, "Error metric").
func metric(b buffer, want *array, tol tolerance) float64 {
	worst := 0.0
	if b.dtype == "u8" {
		// Bytes of a storage format: exact, as integers.
		for i, g := range b.u8 {
			if want.u8 == nil {
				return math.Inf(1)
			}
			if float64(g) != float64(want.u8[i]) {
				return math.Inf(1)
			}
		}
		return worst
	}
	if is16(b.dtype) {
		// bfloat16 / float16 bit patterns (a copied row): exact.
		for i, g := range b.u16 {
			if want.u16 == nil || g != want.u16[i] {
				return math.Inf(1)
			}
		}
		return worst
	}
	if b.dtype == "i32" {
		for i, g := range b.i32 {
			var w float64
			if want.i32 != nil {
				w = float64(want.i32[i])
			} else {
				w = want.f64[i]
			}
			// Integers are exact whatever the tolerance (kb_moe_route's
			// ids sit beside float weights with a tolerance of ulps).
			if float64(g) != w {
				return math.Inf(1)
			}
		}
		return worst
	}
	floor := 0.0
	if tol.Ulp != 0 {
		floor = tol.Abs / tol.Ulp
	}
	for i, gf := range b.f32 {
		g := float64(gf)
		var w float64
		if want.f64 != nil {
			w = want.f64[i]
		} else if want.f32 != nil {
			w = float64(want.f32[i])
		} else {
			w = float64(want.i32[i])
		}
		var err float64
		switch {
		case (math.IsNaN(g) && math.IsNaN(w)) || g == w:
			err = 0
		case math.IsNaN(g) || math.IsNaN(w) || math.IsInf(g, 0) || math.IsInf(w, 0):
			err = math.Inf(1)
		default:
			err = math.Abs(g-w) / math.Max(ulp32(w), floor)
		}
		if err > worst || math.IsInf(err, 1) {
			worst = err
		}
	}
	return worst
}

func runGolden(ctx *kernelbridge.Context, dir string, m *manifest, c goldenCase, bufs bool) (r caseResult) {
	r = caseResult{Name: c.Name, Kernel: c.Kernel, Status: "RUNNER_ERROR", Hashes: map[string]string{}, MaxUlp: "inf"}
	sig, ok := m.Signatures[c.Kernel]
	if !ok {
		r.Error = "no signature"
		return r
	}
	null := map[string]bool{}
	for _, n := range c.Null {
		null[n] = true
	}
	tensors := map[string]buffer{}
	expected := map[string]*array{}
	for name, file := range c.Expected {
		a, err := readNpy(filepath.Join(dir, file))
		if err != nil {
			r.Error = err.Error()
			return r
		}
		expected[name] = a
	}
	for _, p := range sig {
		if !isTensor(p) {
			continue
		}
		switch {
		case null[p.Name]:
			tensors[p.Name] = buffer{dtype: p.Dtype, null: true}
		case c.Alias[p.Name] != "":
			continue // after the inputs
		case c.Inputs[p.Name] != "":
			a, err := readNpy(filepath.Join(dir, c.Inputs[p.Name]))
			if err == nil && a.descr != npyDescr[p.Dtype] {
				err = fmt.Errorf("%s: %s holds %s, want %s for %s", c.Inputs[p.Name], p.Name, a.descr,
					npyDescr[p.Dtype], p.Dtype)
			}
			if err != nil {
				r.Error = err.Error()
				return r
			}
			tensors[p.Name] = buffer{dtype: p.Dtype, f32: a.f32, i32: a.i32, u8: a.u8, u16: a.u16}
		default:
			want, ok := expected[p.Name]
			if !ok {
				r.Error = "no input or expected file for " + p.Name
				return r
			}
			// Prefilled so that an element left unwritten fails: quiet NaN,
			// -1, or 0x80 (-128, a code the Q8_0 quantizer never writes).
			b := newBuffer(p.Dtype, want.len(), -1)
			if p.Dtype == "u8" {
				b = newBuffer(p.Dtype, want.len(), 0x80)
			}
			if is16(p.Dtype) {
				b = newBuffer(p.Dtype, want.len(), 0xffff) // a NaN pattern in both formats
			}
			for i := range b.f32 {
				b.f32[i] = math.Float32frombits(0x7FC00000)
			}
			tensors[p.Name] = b
		}
	}
	for out, in := range c.Alias {
		tensors[out] = tensors[in]
	}
	err := call(ctx, c.Kernel, sig, c.Dims, c.Flags, c.Scalars, tensors, bufs)
	r.Status = statusOf(err)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	tol := m.Tolerances[c.Kernel]
	if c.Tolerance != nil {
		tol = *c.Tolerance
	}
	worst := 0.0
	names := make([]string, 0, len(expected))
	for n := range expected {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := tensors[n]
		if b.len() != expected[n].len() {
			r.Error = fmt.Sprintf("%s has %d elements, expected file %d", n, b.len(), expected[n].len())
			return r
		}
		r.Hashes[n] = fnv1a(b.bytes())
		e := metric(b, expected[n], tol)
		if e > worst || math.IsInf(e, 1) {
			worst = e
		}
	}
	if math.IsInf(worst, 1) || math.IsNaN(worst) {
		r.MaxUlp = "inf"
	} else {
		r.MaxUlp = worst
		r.Passed = worst <= tol.Ulp
	}
	return r
}

func (b buffer) len() int { return len(b.f32) + len(b.i32) + len(b.u8) + len(b.u16) }

func runBad(ctx *kernelbridge.Context, bi *badInput, c badCase) (r badResult) {
	r = badResult{Name: c.Name, Kernel: c.Kernel, Expected: c.Expected, Got: "n/a"}
	defer func() {
		if p := recover(); p != nil {
			r.Got = "RUNNER_ERROR"
			r.Error = fmt.Sprint("panic: ", p)
		}
	}()
	sig := bi.Signatures[c.Kernel]
	for _, req := range c.Requires {
		if req == "null" {
			r.Reason = "a Go slice carries its length: nil is an empty slice (checked against the sizes, " +
				"SHAPE_MISMATCH), so a NULL pointer with a non-zero size cannot be passed"
			return r
		}
	}
	null := map[string]bool{}
	for _, n := range c.Null {
		null[n] = true
	}
	// Build the buffers: overlapping ones share their base buffer.
	// A slice has the case's logical shape when it gives one (what a binding
	// that checks lengths must get; strided tensors take "len", which
	// covers the stride), else "len" elements; "values" when given.
	sizes := map[string]int{}
	for _, p := range sig {
		if t, ok := c.Tensors[p.Name]; ok && isTensor(p) {
			sizes[p.Name] = t.Len
			if t.Shape != nil && p.Ld == "" {
				n := 1
				for _, d := range t.Shape {
					n *= d
				}
				sizes[p.Name] = n
			}
			if len(t.Values) > 0 {
				sizes[p.Name] = len(t.Values)
			}
		}
	}
	for name, ov := range c.Overlap {
		var a, b string
		for _, p := range sig {
			if p.Name == name {
				a = p.Dtype
			}
			if p.Name == ov.With {
				b = p.Dtype
			}
		}
		if a != b {
			r.Reason = fmt.Sprintf("%s and %s have different element types: a Go %s cannot view a %s "+
				"buffer without package unsafe", name, ov.With, goType(a), goType(b))
			return r
		}
	}
	for name, ov := range c.Overlap {
		if need := ov.Offset + sizes[name]; need > sizes[ov.With] {
			sizes[ov.With+"\x00base"] = need
		}
	}
	tensors := map[string]buffer{}
	for _, p := range sig {
		if !isTensor(p) || c.Overlap[p.Name].With != "" {
			continue
		}
		if null[p.Name] {
			tensors[p.Name] = buffer{dtype: p.Dtype, null: true}
			continue
		}
		t := c.Tensors[p.Name]
		n := sizes[p.Name]
		base := n
		if s, ok := sizes[p.Name+"\x00base"]; ok {
			base = s
		}
		// 1.0 (f32) or 0 (i32, u8: zero bytes are zeros in every storage
		// format) unless values are given.
		b := newBuffer(p.Dtype, base, 0)
		for i := range b.f32 {
			b.f32[i] = 1
		}
		for i, raw := range t.Values {
			if err := b.set(i, raw); err != nil {
				r.Got = "RUNNER_ERROR"
				r.Error = fmt.Sprintf("%s[%d]: %v", p.Name, i, err)
				return r
			}
		}
		tensors[p.Name] = b.slice(0, n, false) // room for overlaps after n
	}
	for name, ov := range c.Overlap {
		tensors[name] = tensors[ov.With].slice(ov.Offset, ov.Offset+sizes[name], true)
	}
	// A derived size is the length of its slice: a case needing another
	// value cannot be expressed.
	for dim, t := range derived(sig) {
		if got := tensors[t].len(); int64(got) != c.Dims[dim] {
			r.Reason = fmt.Sprintf("in Go %s is len(%s), so %s = %d cannot be passed with a %d-element %s",
				dim, t, dim, c.Dims[dim], got, t)
			return r
		}
	}
	before := map[string][]byte{}
	for _, p := range sig {
		if (p.Role == "out" || p.Role == "inout") && !null[p.Name] {
			before[p.Name] = tensors[p.Name].bytes()
		}
	}
	err := call(ctx, c.Kernel, sig, c.Dims, c.Flags, c.Scalars, tensors, false)
	r.Got = statusOf(err)
	if err != nil {
		if r.Got == "RUNNER_ERROR" {
			r.Error = err.Error()
		}
		untouched := true
		for name, b := range before {
			if !bytes.Equal(b, tensors[name].bytes()) {
				untouched = false
			}
		}
		r.Untouched = &untouched
	}
	return r
}

func readJSON(path string, v interface{}) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func main() {
	corpus := flag.String("corpus", "", "corpus directory (manifest.json, bad_input.json, *.npy)")
	outPath := flag.String("out", "", "result JSON to write")
	threads := flag.Int("threads", 4, "CPU threads of the context (results must not depend on it)")
	backend := flag.String("backend", "cpu", "cpu, or cpu-buffers: golden cases also through Context.<Kernel>Buf")
	flag.Parse()
	if *backend != "cpu" && *backend != "cpu-buffers" {
		fmt.Fprintln(os.Stderr, "runner: --backend must be cpu or cpu-buffers, got", *backend)
		os.Exit(2)
	}
	if *corpus == "" || *outPath == "" {
		fmt.Fprintln(os.Stderr, "usage: runner --corpus DIR --out FILE [--threads N]")
		os.Exit(2)
	}
	var m manifest
	var bi badInput
	if err := readJSON(filepath.Join(*corpus, "manifest.json"), &m); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(2)
	}
	if err := readJSON(filepath.Join(*corpus, "bad_input.json"), &bi); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(2)
	}
	ctx, err := kernelbridge.NewContext(*threads, kernelbridge.BackendCPU)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(2)
	}
	defer ctx.Close()

	ok := true
	result := map[string]interface{}{
		"format": 1, "language": "go", "backend": *backend, "version": kernelbridge.VersionString(),
		"threads": ctx.Threads(),
	}
	cases := []caseResult{}
	for _, c := range m.Cases {
		r := runGolden(ctx, *corpus, &m, c, false)
		if *backend == "cpu-buffers" {
			rb := runGolden(ctx, *corpus, &m, c, true)
			if rb.Passed && !reflect.DeepEqual(rb.Hashes, r.Hashes) {
				rb.Passed = false
				rb.Error = "the outputs through Buffers differ from those through slices"
			}
			if !rb.Passed {
				fmt.Fprintf(os.Stderr, "runner: %s through Buffers: %s %s\n", c.Name, rb.Status, rb.Error)
			}
			r = rb
		}
		ok = ok && r.Passed
		cases = append(cases, r)
	}
	bad := []badResult{}
	for _, c := range bi.Cases {
		r := runBad(ctx, &bi, c)
		if r.Got != "n/a" && (r.Got != r.Expected || (r.Untouched != nil && !*r.Untouched)) {
			ok = false
		}
		bad = append(bad, r)
	}
	result["cases"] = cases
	result["bad_input"] = bad
	b, err := json.MarshalIndent(result, "", " ")
	if err == nil {
		err = os.WriteFile(*outPath, append(b, '\n'), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
