package kernelbridge

// #include "kernelbridge.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// Gguf is an open GGUF file (versions 2 and 3), validated by the C library
// when opened (kb_gguf_open; docs/gguf.md).  Keys and tensors are looked up
// by name.  Shapes are row-major, outermost axis first, as kernels take
// them (GGUF stores the innermost axis first).  Queries may run in several
// goroutines at once; Close must not overlap them.
type Gguf struct {
	ctx *Context
	ptr *C.kb_gguf
	h   C.uintptr_t
}

// GgufTensor describes a tensor of a GGUF file.
type GgufTensor struct {
	Name string
	// Type is the GGML type number: a Dtype for the types kernels take
	// (F32, F16, BF16, Q8_0, Q4_0), another GGML type otherwise (Q4_K is 12),
	// which ReadTensor refuses.
	Type   Dtype
	Shape  []int // row-major: Shape[len(Shape)-1] is GGUF's ne[0]
	Bytes  int   // size of the data
	Offset int   // where the data starts in the file
}

// OpenGguf maps and validates the GGUF file at path.  The Gguf's queries run
// on c, which must stay open while the Gguf is used.
func (c *Context) OpenGguf(path string) (*Gguf, error) {
	p, err := c.cGgufOpen(path)
	return newGguf(c, p, err)
}

// OpenGgufMemory validates a GGUF file held in data, which is copied.
func (c *Context) OpenGgufMemory(data []byte) (*Gguf, error) {
	p, err := c.cGgufOpenMemory(data)
	return newGguf(c, p, err)
}

func newGguf(c *Context, p *C.kb_gguf, err error) (*Gguf, error) {
	if err != nil {
		return nil, err
	}
	g := &Gguf{ctx: c, ptr: p, h: C.uintptr_t(uintptr(unsafe.Pointer(p)))}
	runtime.SetFinalizer(g, (*Gguf).Close)
	return g, nil
}

// Close releases the file.  It is idempotent and returns nil.
func (g *Gguf) Close() error {
	if g == nil || g.ptr == nil {
		return nil
	}
	runtime.SetFinalizer(g, nil)
	C.kb_gguf_destroy(g.ptr)
	g.ptr = nil
	g.h = 0
	return nil
}

func (g *Gguf) open(fn string) error {
	if g == nil || g.ptr == nil {
		return &Error{InvalidArgument, fn + ": the Gguf is nil or closed"}
	}
	return nil
}

// Version is the file's GGUF version: 2 or 3.
func (g *Gguf) Version() (int, error) {
	if err := g.open("Gguf.Version"); err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(g)
	v, err := g.ctx.cGgufVersion(g.h)
	return int(v), err
}

// Keys lists the metadata keys in file order.
func (g *Gguf) Keys() ([]string, error) {
	if err := g.open("Gguf.Keys"); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	n, err := g.ctx.cGgufKeyCount(g.h)
	if err != nil {
		return nil, err
	}
	keys := make([]string, n)
	for i := range keys {
		if keys[i], err = g.ctx.cGgufKeyName(g.h, int64(i)); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// HasKey reports whether the file has metadata key key.
func (g *Gguf) HasKey(key string) (bool, error) {
	i, err := g.key("Gguf.HasKey", key, false)
	return i >= 0, err
}

// key is the index of key; with must, an absent key is an InvalidArgument
// error naming it.
func (g *Gguf) key(fn, key string, must bool) (int64, error) {
	if err := g.open(fn); err != nil {
		return -1, err
	}
	defer runtime.KeepAlive(g)
	i, err := g.ctx.cGgufFindKey(g.h, key)
	if err == nil && i < 0 && must {
		err = &Error{InvalidArgument, fn + ": the file has no key '" + key + "'"}
	}
	return i, err
}

// KeyType is the type of key's value (GgufTypeArray for arrays).
func (g *Gguf) KeyType(key string) (GgufType, error) {
	i, err := g.key("Gguf.KeyType", key, true)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(g)
	t, err := g.ctx.cGgufKeyType(g.h, i)
	return GgufType(t), err
}

// Int is key's integer (or BOOL) value.
func (g *Gguf) Int(key string) (int64, error) {
	i, err := g.key("Gguf.Int", key, true)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(g)
	return g.ctx.cGgufGetInt64(g.h, i)
}

// count is the number of values of key i: its array length, or 1.
func (g *Gguf) count(i int64) (int64, error) {
	t, err := g.ctx.cGgufKeyType(g.h, i)
	if err != nil || GgufType(t) != GgufTypeArray {
		return 1, err
	}
	return g.ctx.cGgufArrayLength(g.h, i)
}

// Float32s is key's numbers (a scalar or an array) as float32 values.
func (g *Gguf) Float32s(key string) ([]float32, error) {
	i, err := g.key("Gguf.Float32s", key, true)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	n, err := g.count(i)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	return out, g.ctx.cGgufGetF32(g.h, i, out)
}

// Int32s is key's integers (a scalar or an array) as int32 values.
func (g *Gguf) Int32s(key string) ([]int32, error) {
	i, err := g.key("Gguf.Int32s", key, true)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	n, err := g.count(i)
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	return out, g.ctx.cGgufGetI32(g.h, i, out)
}

// String is key's STRING value (its bytes, as a Go string).
func (g *Gguf) String(key string) (string, error) {
	i, err := g.key("Gguf.String", key, true)
	if err != nil {
		return "", err
	}
	defer runtime.KeepAlive(g)
	n, err := g.ctx.cGgufStringBytes(g.h, i)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := g.ctx.cGgufGetString(g.h, i, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// StringArray is key's array of strings as one blob and offsets: string k
// is blob[offsets[k]:offsets[k+1]].
func (g *Gguf) StringArray(key string) (blob []byte, offsets []int32, err error) {
	i, err := g.key("Gguf.StringArray", key, true)
	if err != nil {
		return nil, nil, err
	}
	defer runtime.KeepAlive(g)
	nbytes, err := g.ctx.cGgufStringArrayBytes(g.h, i)
	if err != nil {
		return nil, nil, err
	}
	n, err := g.ctx.cGgufArrayLength(g.h, i)
	if err != nil {
		return nil, nil, err
	}
	blob = make([]byte, nbytes)
	offsets = make([]int32, n+1)
	if err := g.ctx.cGgufGetStringArrayData(g.h, i, blob); err != nil {
		return nil, nil, err
	}
	if err := g.ctx.cGgufGetStringArrayOffsets(g.h, i, offsets); err != nil {
		return nil, nil, err
	}
	return blob, offsets, nil
}

// Vocabulary reads tokenizer.ggml.tokens, .scores and .token_type: the
// pieces as a blob with offsets (len(offsets) = n+1), their scores and
// their token types, the arguments of a tokenizer.
func (g *Gguf) Vocabulary() (blob []byte, offsets []int32, scores []float32, types []int32, err error) {
	if blob, offsets, err = g.StringArray("tokenizer.ggml.tokens"); err != nil {
		return
	}
	if scores, err = g.Float32s("tokenizer.ggml.scores"); err != nil {
		return
	}
	types, err = g.Int32s("tokenizer.ggml.token_type")
	return
}

// TensorNames lists the tensors in file order.
func (g *Gguf) TensorNames() ([]string, error) {
	if err := g.open("Gguf.TensorNames"); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	n, err := g.ctx.cGgufTensorCount(g.h)
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		if names[i], err = g.ctx.cGgufTensorName(g.h, int64(i)); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (g *Gguf) tensor(fn, name string) (int64, error) {
	if err := g.open(fn); err != nil {
		return -1, err
	}
	defer runtime.KeepAlive(g)
	i, err := g.ctx.cGgufFindTensor(g.h, name)
	if err == nil && i < 0 {
		err = &Error{InvalidArgument, fn + ": the file has no tensor '" + name + "'"}
	}
	return i, err
}

// Tensor describes tensor name.
func (g *Gguf) Tensor(name string) (GgufTensor, error) {
	t := GgufTensor{Name: name}
	i, err := g.tensor("Gguf.Tensor", name)
	if err != nil {
		return t, err
	}
	defer runtime.KeepAlive(g)
	typ, err := g.ctx.cGgufTensorType(g.h, i)
	if err != nil {
		return t, err
	}
	t.Type = Dtype(typ)
	nd, err := g.ctx.cGgufTensorNDims(g.h, i)
	if err != nil {
		return t, err
	}
	t.Shape = make([]int, nd)
	for a := range t.Shape {
		d, err := g.ctx.cGgufTensorDim(g.h, i, int64(a))
		if err != nil {
			return t, err
		}
		t.Shape[a] = int(d)
	}
	b, err := g.ctx.cGgufTensorBytes(g.h, i)
	if err != nil {
		return t, err
	}
	o, err := g.ctx.cGgufTensorOffset(g.h, i)
	t.Bytes, t.Offset = int(b), int(o)
	return t, err
}

// ReadTensor copies tensor name's data; Code Unsupported for a type kernels
// do not take.
func (g *Gguf) ReadTensor(name string) ([]byte, error) {
	i, err := g.tensor("Gguf.ReadTensor", name)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	n, err := g.ctx.cGgufTensorBytes(g.h, i)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if err := g.ctx.cGgufTensorRead(g.h, i, out); err != nil {
		return nil, err
	}
	return out, nil
}
