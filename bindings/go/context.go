package kernelbridge

/*
#include <stdlib.h>

#include "kbgo_failure.h"
#include "kernelbridge.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Context selects the backend (CPU, or a CUDA device) and the number of CPU
// threads of the calls made through it, and carries the message of its last
// failure.
//
// Every kernel is a package-level function (Silu, Softmax, ...), a Context
// method of the same name and a <Kernel>Buf Context method.  The
// package-level functions run on a pooled default context (CPU backend, one
// thread) and are safe for concurrent use; use the Context methods to choose
// the backend and thread count, and the <Kernel>Buf methods for tensors in
// Buffers (see [Buffer] for how their views are checked).  Slice lengths are
// checked before the call: a wrong length is an *Error with Code
// ShapeMismatch, a negative size one with Code InvalidArgument.
//
// A Context is safe for concurrent use by multiple goroutines.  Calls on a
// CPU context run side by side: one at a time uses its worker threads, the
// others run on their own goroutine's thread, with the same results; calls
// on a CUDA context take turns on its stream.  Each failed call's error
// carries its own message.  Close releases it; it waits for the calls in
// progress to return, and calls made after it fail with Code
// InvalidArgument.  A finalizer releases a Context that becomes unreachable
// without Close, but closing explicitly frees it promptly.
type Context struct {
	ptr *C.kb_context
	// h is ptr as an integer, the form the generated kernel calls pass it
	// in: cgo would check a pointer to the opaque struct on every call.
	// Neither changes after NewContext: a call racing with Close passes a
	// handle the C library still recognises (it refuses calls on a destroyed
	// context, and never frees a context's memory).
	h C.uintptr_t
	// closed is set once, by Close or the finalizer.
	closed atomic.Bool
}

// NewContext creates a context running on backend with the given number of
// CPU threads (0 means one per online CPU).  Results never depend on the
// thread count.
//
// BackendCUDA is NewCUDAContext(0): it fails with an error of Code
// BackendUnavailable when CUDA cannot be used, and the message says which
// part is missing (the CUDA backend library, the NVIDIA driver or a device).
// BackendAuto uses CUDA device 0 when it can and falls back to the CPU
// without an error otherwise; Backend tells which one it got.
func NewContext(threads int, backend Backend) (*Context, error) {
	if threads < 0 {
		return nil, &Error{InvalidArgument, "NewContext: threads must be >= 0, got " + strconv.Itoa(threads)}
	}
	p, err := cContextCreate(backend, threads)
	if err != nil {
		return nil, err
	}
	return wrapContext(p)
}

// NewCUDAContext creates a context on CUDA device `device` (in [0,
// CUDADeviceCount())), with its own stream.  Without a usable CUDA backend it
// fails with Code BackendUnavailable and a message saying which part is
// missing, e.g. "kb_context_create_cuda: no NVIDIA driver: libcuda.so.1
// cannot be loaded (...)"; errors.Is(err, ErrBackendUnavailable) holds.
//
// Kernels on a CUDA context take device memory: use the <Kernel>Buf methods
// with Buffers made by ctx.NewBuffer (the slice methods pass Go memory, which
// a CUDA context rejects with Code InvalidArgument naming the argument).
func NewCUDAContext(device int) (*Context, error) {
	p, err := cContextCreateCUDA(int64(device))
	if err != nil {
		return nil, err
	}
	return wrapContext(p)
}

func wrapContext(p *C.kb_context) (*Context, error) {
	c := &Context{ptr: p, h: C.uintptr_t(uintptr(unsafe.Pointer(p)))}
	runtime.SetFinalizer(c, (*Context).release)
	return c, nil
}

// Close releases the context, after the calls other goroutines are making on
// it have returned.  It is idempotent and safe to call concurrently with
// calls and with itself; calls on a closed Context fail with Code
// InvalidArgument.  Close always returns nil.
func (c *Context) Close() error {
	if c == nil || c.closed.Load() {
		return nil
	}
	runtime.SetFinalizer(c, nil)
	c.release()
	return nil
}

func (c *Context) release() {
	if c.closed.CompareAndSwap(false, true) {
		C.kb_context_destroy(c.ptr)
	}
}

// isOpen is false for a nil or closed Context.
func (c *Context) isOpen() bool { return c != nil && !c.closed.Load() }

// Backend is the backend the context runs on (never BackendAuto).
func (c *Context) Backend() Backend {
	if !c.isOpen() {
		return BackendCPU
	}
	b := Backend(C.kb_context_backend(c.ptr))
	runtime.KeepAlive(c)
	return b
}

// Threads is the number of CPU threads the context uses.
func (c *Context) Threads() int {
	if !c.isOpen() {
		return 1
	}
	n := int(C.kb_context_num_threads(c.ptr))
	runtime.KeepAlive(c)
	return n
}

// Device is the CUDA device the context runs on; -1 for a CPU context (and
// for a nil or closed one).
func (c *Context) Device() int {
	if !c.isOpen() {
		return -1
	}
	d := int(C.kb_context_device(c.ptr))
	runtime.KeepAlive(c)
	return d
}

// Synchronize waits for all work queued on the context's CUDA stream and
// reports a device error it raised.  Kernels and buffer transfers already
// wait before returning; this is for work queued on the stream by other
// code.  On a CPU context it does nothing.
func (c *Context) Synchronize() error {
	if !c.isOpen() {
		return closedError("Synchronize")
	}
	return c.cContextSynchronize()
}

// failure is the error of a failed call: its status and the copy of its C
// message that the call's C helper made (kbgo_fail in kernelbridge_gen.go),
// which it frees.  Out of line so that done, which calls it, inlines into
// every kernel call.
//
//go:noinline
func failure(f *C.kbgo_failure) error {
	code, msg := Status(f.status), C.GoString(f.message)
	if f.owned != 0 {
		C.free(unsafe.Pointer(f))
	} else {
		msg = "(the message was lost: out of memory copying it)"
	}
	if msg == "" {
		msg = "the call failed without a message"
	}
	return &Error{Code: code, Msg: msg}
}

// threadDone is the error of a call without a context: nil when f is nil.
func threadDone(f *C.kbgo_failure) error {
	if f != nil {
		return failure(f)
	}
	return nil
}

// The package-level functions run on contexts from this pool (CPU backend,
// one thread, like a NULL context in C): one shared Context would be safe
// too, but with its own context each caller keeps its own thread busy, and
// reusing them keeps calls free of allocations.  Contexts the pool drops are released by their finalizer.
var defaultPool sync.Pool

func defaultContext() (*Context, error) {
	if c, ok := defaultPool.Get().(*Context); ok {
		return c, nil
	}
	return NewContext(1, BackendCPU)
}

func releaseDefault(c *Context) {
	defaultPool.Put(c)
}

// f32p is the C pointer of a slice; nil for an empty one (never &s[0] then).
func f32p(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func i32p(s []int32) *C.int32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&s[0]))
}

// u16p is the pointer of a bf16 or f16 tensor (bit patterns).
func u16p(s []uint16) *C.uint16_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.uint16_t)(unsafe.Pointer(&s[0]))
}

// u8p is the pointer of a byte tensor (void * in C).  The generated C
// helpers declare byte tensors uint8_t *: a pointer to numbers, which cgo
// does not check (an unsafe.Pointer it would).
func u8p(s []byte) *C.uint8_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&s[0]))
}
