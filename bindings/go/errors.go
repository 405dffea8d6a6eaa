package kernelbridge

import (
	"strconv"
)

// Error is the error every function of the package returns: the status code
// of the failed call and a message naming the function and the argument at
// fault.  Messages of checks done in Go name the Go function ("Softmax:
// ..."); messages from the C library name the C function ("kb_softmax: ...").
//
// errors.Is(err, ErrShapeMismatch) (and the other sentinels) compares codes.
type Error struct {
	Code Status
	Msg  string
}

// Error returns "kernelbridge: CODE: message".
func (e *Error) Error() string {
	if e.Msg == "" {
		return "kernelbridge: " + e.Code.String()
	}
	return "kernelbridge: " + e.Code.String() + ": " + e.Msg
}

// Is reports whether target is an *Error with the same Code, which makes the
// sentinels (ErrInvalidArgument, ...) work with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && t.Code == e.Code
}

// maxElements is the largest element count whose byte size (4-byte elements)
// fits in an int, the limit the C library applies with int64_t/size_t.
const maxElements = int(^uint(0)>>1) / 4

// sizeOf is the element count of a dense tensor of the given shape, or -1
// when it overflows (as kb__count: a zero dimension gives 0 first).
func sizeOf(dims ...int) int {
	for _, d := range dims {
		if d == 0 {
			return 0
		}
	}
	n := 1
	for _, d := range dims {
		if d < 0 || n > maxElements/d {
			return -1
		}
		n *= d
	}
	return n
}

// stridedSize is the element count a [rows, cols] matrix with row stride ld
// spans: (rows-1)*ld + cols, 0 when it is empty, -1 when rows*ld overflows.
func stridedSize(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	if sizeOf(rows, ld) < 0 {
		return -1
	}
	return (rows-1)*ld + cols
}

// batchedSize is the element count a batch of count items spans when each
// item spans item elements and consecutive items start stride elements
// apart (stride 0: one item repeated): (count-1)*stride + item, 0 when the
// batch is empty, -1 when that overflows (or item is already -1).
func batchedSize(count, item, stride int) int {
	if count == 0 || item == 0 {
		return 0
	}
	if item < 0 {
		return -1
	}
	gap := sizeOf(count-1, stride)
	if gap < 0 || gap > maxElements-item {
		return -1
	}
	return gap + item
}

// pick is the conditional of a shape expression (flag ? a : b).
func pick(flag bool, a, b int) int {
	if flag {
		return a
	}
	return b
}

func checkDim(fn, name string, v int) error {
	if v < 0 {
		return &Error{InvalidArgument, fn + ": " + name + " must be >= 0, got " + strconv.Itoa(v)}
	}
	return nil
}

// checkLd checks a row stride (already known to be >= 0): at least the
// stored row length, and >= 1.  Like the C library, a stride that is valid
// on its own but too small for the shape is a ShapeMismatch.
func checkLd(fn, name string, ld int, tensor string, cols int) error {
	min := cols
	if min < 1 {
		min = 1
	}
	if ld < min {
		return &Error{ShapeMismatch, fn + ": " + name + " must be >= max(1, " + strconv.Itoa(cols) +
			") (the row length of " + tensor + "), got " + strconv.Itoa(ld)}
	}
	return nil
}

func checkLen(fn, name string, have, want int, shape string) error {
	if want < 0 {
		return overflowError(fn, name)
	}
	if have != want {
		return lengthError(fn, name, have, want, shape, "")
	}
	return nil
}

// checkMinLen is checkLen for strided tensors, whose slice may extend past
// the last element used.
func checkMinLen(fn, name string, have, want int, shape string) error {
	if want < 0 {
		return overflowError(fn, name)
	}
	if have < want {
		return lengthError(fn, name, have, want, shape, "at least ")
	}
	return nil
}

func lengthError(fn, name string, have, want int, shape, qualifier string) error {
	return &Error{ShapeMismatch, fn + ": len(" + name + ") is " + strconv.Itoa(have) + ", want " + qualifier +
		strconv.Itoa(want) + " for shape " + shape}
}

func overflowError(fn, name string) error {
	return &Error{OutOfMemory, fn + ": size of " + name + " overflows"}
}

func closedError(fn string) error {
	return &Error{InvalidArgument, fn + ": the Context is nil or closed"}
}
