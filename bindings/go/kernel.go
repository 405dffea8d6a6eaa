package kernelbridge

// Hand-written: the steps every generated kernel wrapper (kernelbridge_gen.go)
// shares, so that the generated code holds only what is specific to a
// kernel: its signature, its documentation, its size checks and its C call.
//
// A kernel call, e.g. ctx.Softmax(rows, cols, x, y), goes
//
//	softmaxShapes(ctx.checkSlices("Softmax"), rows, cols, len(x), len(y))  // checks, no C call
//	ctx.done(C.kbgo_softmax(ctx.h, ...))                                   // the call, its error
//
// and its Buf form checks its views first (ctx.checkViews).  The
// <kernel>Shapes functions are generated once per shape contract and shared
// by the dtype variants (Softmax, SoftmaxBF16, SoftmaxF16) and by the slice
// and Buf methods: the checker says which function the messages name and
// whether tensors may be longer than their shapes.

/*
#include "kbgo_failure.h"
#include "kernelbridge.h"
*/
import "C"

import (
	"runtime"
	"strings"
)

// checker records the first failed argument check of a kernel call.  Every
// check is a no-op once one has failed, so the error is the one the first
// failing check reports, in the order the generated code makes them (as the
// C library: negative sizes, strides, size overflows, then lengths).
type checker struct {
	fn string // the Go function named in messages ("Softmax", "SoftmaxBuf")
	// atLeast: tensors are Buffer views, which may hold more elements than
	// their shape needs (the kernel uses the first ones).
	atLeast bool
	err     error
}

// checkSlices starts the checks of a slice method (exact lengths); a nil or
// closed Context is the first error.
func (ctx *Context) checkSlices(fn string) checker {
	return checker{fn: fn, err: ctx.checkOpen(fn)}
}

// checkViews starts the checks of a <Kernel>Buf method (views at least as
// long as their shapes) with the results of its views' own checks (closed
// Buffers, ranges outside them), which come after the Context's.
func (ctx *Context) checkViews(fn string, views ...error) checker {
	k := checker{fn: fn, atLeast: true, err: ctx.checkOpen(fn)}
	for _, err := range views {
		if k.err == nil {
			k.err = err
		}
	}
	return k
}

func (ctx *Context) checkOpen(fn string) error {
	if !ctx.isOpen() {
		return closedError(fn)
	}
	return nil
}

// dims checks that sizes are >= 0; names are the sizes' names separated by
// spaces, in the order of values.
func (k *checker) dims(names string, values ...int) {
	for i, v := range values {
		if v < 0 && k.err == nil {
			k.dimNegative(names, i, v)
		}
	}
}

//go:noinline
func (k *checker) dimNegative(names string, i, v int) {
	k.err = checkDim(k.fn, strings.Fields(names)[i], v)
}

// ld checks row stride ld of tensor against the row length cols.
func (k *checker) ld(name string, ld int, tensor string, cols int) {
	if (ld < cols || ld < 1) && k.err == nil {
		k.err = checkLd(k.fn, name, ld, tensor, cols)
	}
}

// size checks that a tensor's element count did not overflow (-1) and
// returns it.
func (k *checker) size(tensor string, n int) int {
	if n < 0 && k.err == nil {
		k.err = overflowError(k.fn, tensor)
	}
	return n
}

// length checks that a tensor of have elements holds want, its shape's
// count: exactly for a slice, at least for a view.  have is -1 for an absent
// nullable tensor, which is not checked.
func (k *checker) length(tensor string, have, want int, shape string) {
	if have != want {
		k.lengthDiffers(tensor, have, want, shape, k.atLeast)
	}
}

// minLength is length for strided tensors, whose slice may extend past the
// last element used.
func (k *checker) minLength(tensor string, have, want int, shape string) {
	if have < want {
		k.lengthDiffers(tensor, have, want, shape, true)
	}
}

// lengthDiffers is the rest of length and minLength, out of line so that
// they inline into the generated checks.
//
//go:noinline
func (k *checker) lengthDiffers(tensor string, have, want int, shape string, atLeast bool) {
	switch {
	case k.err != nil: // an earlier check failed
	case have < 0: // absent
	case want < 0:
		k.err = overflowError(k.fn, tensor)
	case !atLeast:
		k.err = checkLen(k.fn, tensor, have, want, shape)
	case have < want:
		k.err = checkMinLen(k.fn, tensor, have, want, shape)
	}
}

// optLen is the length the checks see of a nullable tensor: -1 when absent.
func optLen[T any](s []T) int {
	if s == nil {
		return -1
	}
	return len(s)
}

// done is the error of a kernel call whose C helper returned f (nil: it
// succeeded; else its status and message, see failure).  It keeps ctx alive
// (its finalizer would free the C context) until the call has returned.
func (ctx *Context) done(f *C.kbgo_failure) error {
	runtime.KeepAlive(ctx)
	if f != nil {
		return failure(f)
	}
	return nil
}

// release ends the use of the Buffers of a call's views, which their checks
// began (see Buffer.acquire): Close waits for it, and the finalizer cannot
// run before it.
func release(bufs ...*Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.users.Add(-1)
		}
	}
}
