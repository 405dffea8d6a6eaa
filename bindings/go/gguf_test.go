package kernelbridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ggufWriter writes a GGUF file byte by byte (little-endian), independently
// of the C reader.
type ggufWriter struct{ bytes.Buffer }

func (w *ggufWriter) u32(v uint32) { binary.Write(&w.Buffer, binary.LittleEndian, v) }
func (w *ggufWriter) u64(v uint64) { binary.Write(&w.Buffer, binary.LittleEndian, v) }
func (w *ggufWriter) str(s string) { w.u64(uint64(len(s))); w.WriteString(s) }
func (w *ggufWriter) key(name string, typ uint32) {
	w.str(name)
	w.u32(typ)
}
func (w *ggufWriter) pad() {
	for w.Len()%32 != 0 {
		w.WriteByte(0)
	}
}

var ggufTokens = []string{"<unk>", "<s>", "</s>", "\u2581hi"}

func tinyGguf() []byte {
	var w ggufWriter
	w.WriteString("GGUF")
	w.u32(3)
	w.u64(2) // tensors
	w.u64(5) // keys
	w.key("general.architecture", 8)
	w.str("llama")
	w.key("llama.block_count", 4)
	w.u32(2)
	w.key("tokenizer.ggml.tokens", 9)
	w.u32(8)
	w.u64(uint64(len(ggufTokens)))
	for _, t := range ggufTokens {
		w.str(t)
	}
	w.key("tokenizer.ggml.scores", 9)
	w.u32(6)
	w.u64(4)
	for i := 0; i < 4; i++ {
		w.u32(math.Float32bits(-float32(i)))
	}
	w.key("tokenizer.ggml.token_type", 9)
	w.u32(5)
	w.u64(4)
	for _, t := range []uint32{2, 3, 3, 1} {
		w.u32(t)
	}
	w.str("token_embd.weight") // F32, ne = [2, 3]: shape [3, 2]
	w.u32(2)
	w.u64(2)
	w.u64(3)
	w.u32(0)
	w.u64(0)
	w.str("blk.0.ffn_down.weight") // Q4_K, ne = [256]
	w.u32(1)
	w.u64(256)
	w.u32(12)
	w.u64(32)
	w.pad()
	for i := 0; i < 6; i++ {
		w.u32(math.Float32bits(float32(i) / 2))
	}
	w.pad()
	w.Write(make([]byte, 144))
	return w.Bytes()
}

func checkTinyGguf(t *testing.T, g *Gguf) {
	t.Helper()
	if v, err := g.Version(); err != nil || v != 3 {
		t.Fatalf("Version = %d, %v", v, err)
	}
	keys, err := g.Keys()
	must(t, err)
	if len(keys) != 5 || keys[0] != "general.architecture" {
		t.Fatalf("Keys = %q", keys)
	}
	if s, err := g.String("general.architecture"); err != nil || s != "llama" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if n, err := g.Int("llama.block_count"); err != nil || n != 2 {
		t.Fatalf("Int = %d, %v", n, err)
	}
	if ok, err := g.HasKey("no.such.key"); err != nil || ok {
		t.Fatalf("HasKey = %v, %v", ok, err)
	}
	if typ, err := g.KeyType("tokenizer.ggml.tokens"); err != nil || typ != GgufTypeArray {
		t.Fatalf("KeyType = %v, %v", typ, err)
	}
	blob, offsets, scores, types, err := g.Vocabulary()
	must(t, err)
	for i, tok := range ggufTokens {
		if got := string(blob[offsets[i]:offsets[i+1]]); got != tok {
			t.Fatalf("token %d = %q, want %q", i, got, tok)
		}
	}
	if !reflect.DeepEqual(scores, []float32{0, -1, -2, -3}) || !reflect.DeepEqual(types, []int32{2, 3, 3, 1}) {
		t.Fatalf("scores %v, types %v", scores, types)
	}
	names, err := g.TensorNames()
	must(t, err)
	if !reflect.DeepEqual(names, []string{"token_embd.weight", "blk.0.ffn_down.weight"}) {
		t.Fatalf("TensorNames = %q", names)
	}
	info, err := g.Tensor("token_embd.weight")
	must(t, err)
	if info.Type != DtypeF32 || !reflect.DeepEqual(info.Shape, []int{3, 2}) || info.Bytes != 24 || info.Offset%32 != 0 {
		t.Fatalf("Tensor = %+v", info)
	}
	data, err := g.ReadTensor("token_embd.weight")
	must(t, err)
	if got := math.Float32frombits(binary.LittleEndian.Uint32(data[20:])); got != 2.5 {
		t.Fatalf("element 5 = %v", got)
	}
	if _, err := g.ReadTensor("blk.0.ffn_down.weight"); !errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), "tensor 'blk.0.ffn_down.weight' has GGML type Q4_K") {
		t.Fatalf("ReadTensor(Q4_K) = %v", err)
	}
	if _, err := g.Int("general.architecture"); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "key 'general.architecture' is a STRING, not an integer") {
		t.Fatalf("Int(string) = %v", err)
	}
	if _, err := g.Int("a\x00b"); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "holds a NUL byte") {
		t.Fatalf("Int(NUL) = %v", err)
	}
}

func TestGgufMemoryAndFile(t *testing.T) {
	ctx := cpuContext(t, 1)
	data := tinyGguf()
	g, err := ctx.OpenGgufMemory(data)
	must(t, err)
	checkTinyGguf(t, g)
	must(t, g.Close())
	must(t, g.Close())
	if _, err := g.Keys(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Keys after Close = %v", err)
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	must(t, os.WriteFile(path, data, 0o644))
	g, err = ctx.OpenGguf(path)
	must(t, err)
	defer g.Close()
	checkTinyGguf(t, g)
}

func TestGgufBadFiles(t *testing.T) {
	ctx := cpuContext(t, 1)
	data := tinyGguf()
	if _, err := ctx.OpenGgufMemory(data[:len(data)-10]); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "lies past the end of the file") {
		t.Fatalf("truncated file: %v", err)
	}
	if _, err := ctx.OpenGgufMemory([]byte("GGML")); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad magic: %v", err)
	}
	if _, err := ctx.OpenGguf("/no/such/file.gguf"); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "cannot open") {
		t.Fatalf("missing file: %v", err)
	}
}
