package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// array is a loaded .npy file: float32, int32, float64 or byte data (the
// bytes of a tensor in a storage format), or uint16 (bfloat16 / float16 bit
// patterns).
type array struct {
	descr string
	shape []int
	f32   []float32
	i32   []int32
	f64   []float64
	u8    []byte
	u16   []uint16
}

var (
	descrRe = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	shapeRe = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
	orderRe = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
)

// readNpy reads NumPy format 1.0/2.0 files of little-endian <f4, <i4 or <f8,
// or of bytes, |u1 (byte order does not apply).
func readNpy(path string) (*array, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("%s: not a .npy file", path)
	}
	var hlen, start int
	switch b[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, fmt.Errorf("%s: truncated", path)
		}
		hlen, start = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return nil, fmt.Errorf("%s: npy version %d", path, b[6])
	}
	if start+hlen > len(b) {
		return nil, fmt.Errorf("%s: truncated header", path)
	}
	header := string(b[start : start+hlen])
	data := b[start+hlen:]
	a := &array{}
	if m := descrRe.FindStringSubmatch(header); m != nil {
		a.descr = m[1]
	} else {
		return nil, fmt.Errorf("%s: no descr", path)
	}
	if m := orderRe.FindStringSubmatch(header); m != nil && m[1] == "True" {
		return nil, fmt.Errorf("%s: fortran order", path)
	}
	m := shapeRe.FindStringSubmatch(header)
	if m == nil {
		return nil, fmt.Errorf("%s: no shape", path)
	}
	count := 1
	for _, f := range strings.Split(m[1], ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: shape %q", path, m[1])
		}
		a.shape = append(a.shape, d)
		count *= d
	}
	size := map[string]int{"<f4": 4, "<i4": 4, "<f8": 8, "|u1": 1, "<u2": 2}[a.descr]
	if size == 0 {
		return nil, fmt.Errorf("%s: unsupported dtype %s", path, a.descr)
	}
	if len(data) != count*size {
		return nil, fmt.Errorf("%s: %d data bytes, want %d", path, len(data), count*size)
	}
	switch a.descr {
	case "<f4":
		a.f32 = make([]float32, count)
		for i := range a.f32 {
			a.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case "<i4":
		a.i32 = make([]int32, count)
		for i := range a.i32 {
			a.i32[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case "<f8":
		a.f64 = make([]float64, count)
		for i := range a.f64 {
			a.f64[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		}
	case "|u1":
		a.u8 = append([]byte{}, data...)
	case "<u2":
		a.u16 = make([]uint16, count)
		for i := range a.u16 {
			a.u16[i] = binary.LittleEndian.Uint16(data[2*i:])
		}
	}
	return a, nil
}

func (a *array) len() int {
	return len(a.f32) + len(a.i32) + len(a.f64) + len(a.u8) + len(a.u16)
}
