package kernelbridge

/*
#include <stdlib.h>

#include "kernelbridge.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Context selects the backend and the number of CPU threads of the calls
// made through it, and carries the message of its last failure.
//
// A Context must be used by one goroutine at a time (calls on different
// contexts run in parallel).  Close releases it; a finalizer releases a
// Context that becomes unreachable without Close, but closing explicitly
// frees the C memory promptly.
type Context struct {
	ptr *C.kb_context
	// h is ptr as an integer, the form the generated kernel calls pass it
	// in: cgo would check a pointer to the opaque struct on every call.
	h C.uintptr_t
	// msg receives the C message of a failed call inside that same cgo call
	// (see kbgo_done in kernelbridge_gen.go): a goroutine may move to another
	// OS thread between two cgo calls, and the Context may be reused.
	msg *C.char
}

// NewContext creates a context running on backend with the given number of
// CPU threads (0 means one per online CPU).  Results never depend on the
// thread count.  BackendCUDA fails with an error of Code BackendUnavailable
// when CUDA cannot be used; BackendAuto then falls back to the CPU.
func NewContext(threads int, backend Backend) (*Context, error) {
	if threads < 0 {
		return nil, &Error{InvalidArgument, "NewContext: threads must be >= 0, got " + strconv.Itoa(threads)}
	}
	var p *C.kb_context
	st := Status(C.kb_context_create(C.kb_backend(backend), C.int64_t(threads), &p))
	switch st {
	case OK:
	case BackendUnavailable:
		return nil, &Error{st, "NewContext: the " + backend.String() +
			" backend is not available (this build has the CPU kernels only; BackendAuto falls back to the CPU)"}
	case InvalidArgument:
		return nil, &Error{st, "NewContext: invalid arguments: threads " + strconv.Itoa(threads) + ", backend " +
			backend.String()}
	default:
		return nil, &Error{st, "NewContext: kb_context_create failed"}
	}
	msg := (*C.char)(C.calloc(messageCapacity, 1))
	if msg == nil {
		C.kb_context_destroy(p)
		return nil, &Error{OutOfMemory, "NewContext: out of memory"}
	}
	c := &Context{ptr: p, h: C.uintptr_t(uintptr(unsafe.Pointer(p))), msg: msg}
	runtime.SetFinalizer(c, (*Context).release)
	return c, nil
}

// Close releases the context.  It is idempotent; calls on a closed Context
// fail with Code InvalidArgument.  Close always returns nil.
func (c *Context) Close() error {
	if c == nil || c.ptr == nil {
		return nil
	}
	runtime.SetFinalizer(c, nil)
	c.release()
	return nil
}

func (c *Context) release() {
	C.kb_context_destroy(c.ptr)
	C.free(unsafe.Pointer(c.msg))
	c.ptr = nil
	c.h = 0
	c.msg = nil
}

// Backend is the backend the context runs on (never BackendAuto).
func (c *Context) Backend() Backend {
	if c == nil {
		return BackendCPU
	}
	b := Backend(C.kb_context_backend(c.ptr))
	runtime.KeepAlive(c)
	return b
}

// Threads is the number of CPU threads the context uses.
func (c *Context) Threads() int {
	if c == nil {
		return 1
	}
	n := int(C.kb_context_num_threads(c.ptr))
	runtime.KeepAlive(c)
	return n
}

// fail builds the error of a failed kernel call; the C message was copied
// into c.msg by the call itself.
func (c *Context) fail(st C.kb_status) error {
	return &Error{Code: Status(st), Msg: C.GoString(c.msg)}
}

// The package-level functions run on contexts from this pool (CPU backend,
// one thread, like a NULL context in C): a Context is single-goroutine, the
// pool hands each caller its own, and reusing them keeps calls free of
// allocations.  Contexts the pool drops are released by their finalizer.
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
