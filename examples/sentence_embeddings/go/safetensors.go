package main

// A minimal safetensors reader: 8 bytes little-endian header length N, N
// bytes of JSON ({"name": {"dtype", "shape", "data_offsets"}, ...}), then the
// data.  The data is read once into a []float32 (one copy); tensors are
// subslices of it.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"unsafe"
)

const maxHeaderBytes = 100 << 20

type safeTensors struct {
	path   string
	header map[string]json.RawMessage
	data   []float32 // the bytes after the header, as little-endian float32
	start  int64     // the file offset of the data
	nbytes int64     // its size in bytes
}

type tensorEntry struct {
	Dtype       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

func openSafeTensors(path string) (*safeTensors, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errorf("%s: missing", path)
	}
	if err != nil {
		return nil, errorf("%s: cannot read: %v", path, unwrapPathError(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errorf("%s: cannot read: %v", path, unwrapPathError(err))
	}
	size := st.Size()
	if size < 8 {
		return nil, errorf("%s: truncated: %d bytes, a safetensors file starts with an 8-byte header length", path, size)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, errorf("%s: cannot read: %v", path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes || int64(n)+8 > size {
		return nil, errorf("%s: truncated or corrupt: header length %d but the file has %d bytes", path, n, size)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, errorf("%s: cannot read: %v", path, err)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw, &header); err != nil {
		return nil, errorf("%s: the header is not a valid JSON object: %v", path, err)
	}
	nbytes := size - 8 - int64(n)
	data := make([]float32, (nbytes+3)/4)
	if len(data) > 0 {
		bytes := unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), nbytes)
		if _, err := io.ReadFull(f, bytes); err != nil {
			return nil, errorf("%s: cannot read: %v", path, err)
		}
		if !littleEndianHost() {
			for i := int64(0); i+4 <= nbytes; i += 4 {
				bytes[i], bytes[i+1], bytes[i+2], bytes[i+3] = bytes[i+3], bytes[i+2], bytes[i+1], bytes[i]
			}
		}
	}
	return &safeTensors{path: path, header: header, data: data, start: 8 + int64(n), nbytes: nbytes}, nil
}

func littleEndianHost() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// float32 returns the tensor name, which must be F32 with the given shape.
func (s *safeTensors) float32(name string, shape ...int64) ([]float32, error) {
	raw, ok := s.header[name]
	if !ok || name == "__metadata__" {
		return nil, errorf("%s: tensor %s is missing", s.path, name)
	}
	where := s.path + ": tensor " + name
	var e tensorEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, errorf("%s: header entry is not valid: %v", where, err)
	}
	if e.Dtype != "F32" {
		return nil, errorf("%s: dtype is %s, expected F32", where, e.Dtype)
	}
	if !equalShape(e.Shape, shape) {
		return nil, errorf("%s: shape is %s, expected %s", where, shapeString(e.Shape), shapeString(shape))
	}
	if len(e.DataOffsets) != 2 || e.DataOffsets[0] < 0 || e.DataOffsets[0] > e.DataOffsets[1] {
		return nil, errorf("%s: data_offsets %v are not [begin, end]", where, e.DataOffsets)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	count := int64(1)
	for _, d := range shape {
		count *= d
	}
	if end-begin != 4*count {
		return nil, errorf("%s: data_offsets %v hold %d bytes, shape %s needs %d", where, e.DataOffsets, end-begin, shapeString(shape), 4*count)
	}
	if end > s.nbytes {
		return nil, errorf("%s: data ends at byte %d but the file has %d bytes (truncated?)", where, s.start+end, s.start+s.nbytes)
	}
	if begin%4 != 0 {
		return nil, errorf("%s: data_offsets begin %d is not a multiple of 4", where, begin)
	}
	return s.data[begin/4 : end/4 : end/4], nil
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
