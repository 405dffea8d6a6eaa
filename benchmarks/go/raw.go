package main

// Bare cgo calls of kb_silu, without the package: the symbol comes from the
// kernelbridge package's C objects, linked into the same binary.
//
// rawSilu calls C.kb_silu directly with a NULL context.  cgo checks the
// kb_context* argument at run time (a pointer to an incomplete struct might
// point to Go memory), so rawSiluNoCheck also times the thinnest possible
// transition: one cgo call of a static function that passes NULL itself.

/*
#cgo CFLAGS: -I${SRCDIR}/../../bindings/go
#include "kernelbridge.h"

static kb_status silu_null_ctx(int64_t n, const float *x, float *y) { return kb_silu(NULL, n, x, y); }
*/
import "C"

import "unsafe"

func rawSilu(x, y []float32) int {
	return int(C.kb_silu(nil, C.int64_t(len(x)), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&y[0]))))
}

func rawSiluNoCheck(x, y []float32) int {
	return int(C.silu_null_ctx(C.int64_t(len(x)), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&y[0]))))
}
