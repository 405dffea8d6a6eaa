package kernelbridge

// #include <stdlib.h>
import "C"

import (
	"strings"
	"unsafe"
)

// cString is s as a C string for an `in string` parameter of C function fn
// (the generated wrappers free it with freeCString), or an InvalidArgument
// error naming the parameter when s holds a NUL byte, which C would take for
// the end of the string.
func cString(fn, name, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{InvalidArgument, fn + ": " + name + " holds a NUL byte"}
	}
	return C.CString(s), nil
}

// freeCString frees what cString returned.
func freeCString(p *C.char) { C.free(unsafe.Pointer(p)) }
