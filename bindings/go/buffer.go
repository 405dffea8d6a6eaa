package kernelbridge

/*
#include "kernelbridge.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"
)

// Buffer is a block of memory for kernels (kb_buffer): device memory of the
// CUDA device of the Context that made it, or 64-byte aligned host (C)
// memory for a CPU Context.  Kernels take Buffers through typed views
// (Float32View, Int32View, BF16View, F16View, ByteView) in their
// <Kernel>Buf methods:
//
//	x, _ := kernelbridge.NewBufferFloat32(ctx, xs) // allocate and upload
//	y, _ := ctx.NewBuffer(4 * len(xs))
//	err := ctx.SiluBuf(x.Float32View(), y.Float32View())
//	err = y.DownloadFloat32(0, ys)
//
// The <Kernel>Buf methods check views before the call: a closed Buffer or a
// range outside its Buffer is an *Error with Code InvalidArgument naming the
// argument, a view shorter than its shape one with Code ShapeMismatch; a view
// may be longer (its first elements are used).  On a CUDA context every
// Buffer must be memory of the context's device.
//
// Upload, download, fill and copy run on the Buffer's Context (the one that
// made it, or the one given to SetContext).  A Buffer is safe for concurrent
// use by multiple goroutines (what they write to the same bytes at the same
// time is unspecified, as for any memory).  Offsets of the typed methods
// (UploadFloat32, ...) are in elements of that type; those of Upload,
// Download, Fill and CopyFrom in bytes.  Ranges are checked before any C
// call; an error leaves the buffer and the slice unchanged.
//
// Close frees the memory, after the calls using the Buffer (transfers, and
// kernels given a view of it) have returned; it is idempotent, and every
// later use of the Buffer fails with Code InvalidArgument.  A Buffer that becomes unreachable without Close is freed
// by a finalizer, a safety net only: device memory is scarce, close Buffers
// you make.  A Buffer may outlive its Context (the memory stays valid); a
// host buffer then transfers on a pooled CPU context, a device buffer needs
// SetContext with an open CUDA context on its device.
type Buffer struct {
	ptr *C.kb_buffer
	// h is ptr as an integer, as the generated C helpers take handles.
	h C.uintptr_t
	// data is the address of the first byte (kb_buffer_data), C or device
	// memory, never dereferenced by Go; nil for an empty buffer.  As an
	// unsafe.Pointer (memory the Go heap does not own, which the GC ignores)
	// it goes to C as a typed pointer to numbers, which cgo need not check.
	// ptr, h, data, size and device never change after NewBuffer.
	data   unsafe.Pointer
	size   int
	device int
	ctx    atomic.Pointer[Context]
	// users counts the calls using the memory (acquire ... release); closed
	// is set once.  A user adds itself, then checks closed; Close sets closed,
	// then waits for users to drop to 0 before it frees the memory.  (Go's
	// atomics are sequentially consistent: one of them sees the other.)
	users  atomic.Int32
	closed atomic.Bool
}

// NewBuffer allocates a Buffer of the given size in bytes (contents
// undefined): device memory on a CUDA context's device, host memory on a CPU
// context.  0 bytes is allowed.  Failing to allocate is Code OutOfMemory.
func (c *Context) NewBuffer(bytes int) (*Buffer, error) {
	if !c.isOpen() {
		return nil, closedError("NewBuffer")
	}
	if err := checkDim("NewBuffer", "bytes", bytes); err != nil {
		return nil, err
	}
	p, err := c.cBufferCreate(bytes)
	if err != nil {
		return nil, err
	}
	b := &Buffer{
		ptr:    p,
		h:      C.uintptr_t(uintptr(unsafe.Pointer(p))),
		data:   C.kb_buffer_data(p),
		size:   int(C.kb_buffer_size(p)),
		device: int(C.kb_buffer_device(p)),
	}
	b.ctx.Store(c)
	runtime.SetFinalizer(b, (*Buffer).free)
	return b, nil
}

// NewBufferFloat32 makes a Buffer on ctx holding a copy of src.
func NewBufferFloat32(ctx *Context, src []float32) (*Buffer, error) {
	return newBufferFrom(ctx, "NewBufferFloat32", f32Bytes(src))
}

// NewBufferInt32 makes a Buffer on ctx holding a copy of src.
func NewBufferInt32(ctx *Context, src []int32) (*Buffer, error) {
	return newBufferFrom(ctx, "NewBufferInt32", i32Bytes(src))
}

// NewBufferUint16 makes a Buffer on ctx holding a copy of src (bfloat16 or
// float16 bit patterns).
func NewBufferUint16(ctx *Context, src []uint16) (*Buffer, error) {
	return newBufferFrom(ctx, "NewBufferUint16", u16Bytes(src))
}

// NewBufferBytes makes a Buffer on ctx holding a copy of src.
func NewBufferBytes(ctx *Context, src []byte) (*Buffer, error) {
	return newBufferFrom(ctx, "NewBufferBytes", src)
}

func newBufferFrom(ctx *Context, fn string, src []byte) (*Buffer, error) {
	if !ctx.isOpen() {
		return nil, closedError(fn)
	}
	b, err := ctx.NewBuffer(len(src))
	if err != nil {
		return nil, err
	}
	if err := b.upload(fn, "offset", 0, src, "src", 1, "bytes"); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close frees the buffer's memory once the calls using it (in other
// goroutines) have returned.  It is idempotent, safe to call concurrently
// with those calls and with itself, and always returns nil.
func (b *Buffer) Close() error {
	if b == nil || !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	runtime.SetFinalizer(b, nil)
	// Users that came before closed was set finish; later ones see it and
	// back out.  Calls take microseconds: poll with a growing sleep.
	for wait := time.Microsecond; b.users.Load() != 0; {
		time.Sleep(wait)
		if wait < time.Millisecond {
			wait *= 2
		}
	}
	b.free()
	return nil
}

// free releases the C buffer (Close, or the finalizer of a Buffer nothing
// references: no call can be using it then).
func (b *Buffer) free() {
	b.closed.Store(true)
	C.kb_buffer_destroy(b.ptr)
	b.ctx.Store(nil)
}

// acquire begins a use of the buffer's memory: false (and nothing to
// release) when b is nil or closed.
func (b *Buffer) acquire() bool {
	if b == nil {
		return false
	}
	b.users.Add(1)
	if b.closed.Load() {
		b.users.Add(-1)
		return false
	}
	return true
}

// Size is the size of the buffer in bytes; 0 once closed.
func (b *Buffer) Size() int {
	if b == nil || b.closed.Load() {
		return 0
	}
	return b.size
}

// Device is the CUDA device holding the buffer; -1 for host memory.
func (b *Buffer) Device() int {
	if b == nil {
		return -1
	}
	return b.device
}

// SetContext makes the buffer's transfers (Upload, Download, Fill, CopyFrom,
// ...) run on ctx from now on.  A device buffer needs a CUDA context on its
// device; a host buffer works with any context.
func (b *Buffer) SetContext(ctx *Context) {
	if b != nil && !b.closed.Load() {
		b.ctx.Store(ctx)
	}
}

// Upload copies src into the buffer, starting at byte offset.
func (b *Buffer) Upload(offset int, src []byte) error {
	return b.upload("Buffer.Upload", "offset", offset, src, "src", 1, "bytes")
}

// UploadFloat32 copies src into the buffer, starting at element offset
// (byte 4*offset).
func (b *Buffer) UploadFloat32(offset int, src []float32) error {
	return b.upload("Buffer.UploadFloat32", "offset", offset, f32Bytes(src), "src", 4, "float32 elements")
}

// UploadInt32 copies src into the buffer, starting at element offset (byte
// 4*offset).
func (b *Buffer) UploadInt32(offset int, src []int32) error {
	return b.upload("Buffer.UploadInt32", "offset", offset, i32Bytes(src), "src", 4, "int32 elements")
}

// UploadUint16 copies src (bfloat16 or float16 bit patterns) into the
// buffer, starting at element offset (byte 2*offset).
func (b *Buffer) UploadUint16(offset int, src []uint16) error {
	return b.upload("Buffer.UploadUint16", "offset", offset, u16Bytes(src), "src", 2, "uint16 elements")
}

// Download copies len(dst) bytes of the buffer, starting at byte offset,
// into dst.
func (b *Buffer) Download(offset int, dst []byte) error {
	return b.download("Buffer.Download", offset, dst, 1, "bytes")
}

// DownloadFloat32 copies len(dst) elements of the buffer, starting at
// element offset (byte 4*offset), into dst.
func (b *Buffer) DownloadFloat32(offset int, dst []float32) error {
	return b.download("Buffer.DownloadFloat32", offset, f32Bytes(dst), 4, "float32 elements")
}

// DownloadInt32 copies len(dst) elements of the buffer, starting at element
// offset (byte 4*offset), into dst.
func (b *Buffer) DownloadInt32(offset int, dst []int32) error {
	return b.download("Buffer.DownloadInt32", offset, i32Bytes(dst), 4, "int32 elements")
}

// DownloadUint16 copies len(dst) elements of the buffer, starting at element
// offset (byte 2*offset), into dst.
func (b *Buffer) DownloadUint16(offset int, dst []uint16) error {
	return b.download("Buffer.DownloadUint16", offset, u16Bytes(dst), 2, "uint16 elements")
}

// Fill sets n bytes of the buffer, starting at byte offset, to value (as
// memset).  b.Fill(0, b.Size(), 0) zeroes it.
func (b *Buffer) Fill(offset, n int, value byte) error {
	const fn = "Buffer.Fill"
	if err := b.open(fn, "the Buffer"); err != nil {
		return err
	}
	defer release(b)
	if err := checkDim(fn, "n", n); err != nil {
		return err
	}
	if err := b.checkRange(fn, "offset", offset, "n", n, 1, "bytes"); err != nil {
		return err
	}
	ctx, pooled, err := b.context(fn)
	if err != nil {
		return err
	}
	err = ctx.cBufferFill(b.h, offset, n, int32(value))
	if pooled {
		releaseDefault(ctx)
	}
	return err
}

// CopyFrom copies n bytes of src, starting at byte srcOffset, into the
// buffer at byte dstOffset.  Both buffers must be of the same kind (host, or
// the same CUDA device); src may be the buffer itself when the ranges are
// identical or do not overlap.
func (b *Buffer) CopyFrom(dstOffset int, src *Buffer, srcOffset, n int) error {
	const fn = "Buffer.CopyFrom"
	if err := b.open(fn, "the Buffer"); err != nil {
		return err
	}
	defer release(b)
	if err := src.open(fn, "src"); err != nil {
		return err
	}
	defer release(src)
	if err := checkDim(fn, "n", n); err != nil {
		return err
	}
	if err := b.checkRange(fn, "dstOffset", dstOffset, "n", n, 1, "bytes"); err != nil {
		return err
	}
	if err := src.checkRangeOf(fn, "src", "srcOffset", srcOffset, "n", n, 1, "bytes"); err != nil {
		return err
	}
	ctx, pooled, err := b.context(fn)
	if err != nil {
		return err
	}
	err = ctx.cBufferCopy(b.h, dstOffset, src.h, srcOffset, n)
	if pooled {
		releaseDefault(ctx)
	}
	return err
}

func (b *Buffer) upload(fn, offsetName string, offset int, src []byte, srcName string, esize int, unit string) error {
	if err := b.open(fn, "the Buffer"); err != nil {
		return err
	}
	defer release(b)
	if err := b.checkRange(fn, offsetName, offset, "len("+srcName+")", len(src)/esize, esize, unit); err != nil {
		return err
	}
	ctx, pooled, err := b.context(fn)
	if err != nil {
		return err
	}
	err = ctx.cBufferUpload(b.h, offset*esize, src)
	if pooled {
		releaseDefault(ctx)
	}
	return err
}

func (b *Buffer) download(fn string, offset int, dst []byte, esize int, unit string) error {
	if err := b.open(fn, "the Buffer"); err != nil {
		return err
	}
	defer release(b)
	if err := b.checkRange(fn, "offset", offset, "len(dst)", len(dst)/esize, esize, unit); err != nil {
		return err
	}
	ctx, pooled, err := b.context(fn)
	if err != nil {
		return err
	}
	err = ctx.cBufferDownload(b.h, offset*esize, dst)
	if pooled {
		releaseDefault(ctx)
	}
	return err
}

// open begins a use of b (acquire; the caller releases it) and fails
// unless b is an open Buffer; name is how messages call it.
func (b *Buffer) open(fn, name string) error {
	if !b.acquire() {
		return &Error{InvalidArgument, fn + ": " + name + " is nil or closed"}
	}
	return nil
}

// checkRange checks that n elements of esize bytes from element offset lie
// inside the buffer (offset and n known to be >= 0 except offset).
func (b *Buffer) checkRange(fn, offsetName string, offset int, nName string, n, esize int, unit string) error {
	return b.checkRangeOf(fn, "the buffer", offsetName, offset, nName, n, esize, unit)
}

func (b *Buffer) checkRangeOf(fn, bufName, offsetName string, offset int, nName string, n, esize int, unit string) error {
	if err := checkDim(fn, offsetName, offset); err != nil {
		return err
	}
	elems := b.size / esize
	if offset > elems || n > elems-offset {
		size := strconv.Itoa(elems) + " " + unit
		if esize != 1 {
			size += ", " + strconv.Itoa(b.size) + " bytes"
		}
		return &Error{InvalidArgument, fn + ": " + offsetName + " " + strconv.Itoa(offset) + " + " + nName + " " +
			strconv.Itoa(n) + " exceeds the size of " + bufName + " (" + size + ")"}
	}
	return nil
}

// context is the Context a transfer runs on: the buffer's own, else (host
// buffers) a pooled CPU context, which the caller hands back when pooled.
func (b *Buffer) context(fn string) (ctx *Context, pooled bool, err error) {
	if c := b.ctx.Load(); c.isOpen() {
		return c, false, nil
	}
	if b.device < 0 {
		ctx, err = defaultContext()
		return ctx, err == nil, err
	}
	return nil, false, &Error{InvalidArgument, fn + ": the Context of this buffer (memory of CUDA device " +
		strconv.Itoa(b.device) + ") is closed; give it an open CUDA context on that device with SetContext"}
}

// Byte views of typed slices (nil when empty: &s[0] is never taken then).

func f32Bytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

func i32Bytes(s []int32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

func u16Bytes(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}

// --- views ----------------------------------------------------------------------

// view is n elements of a Buffer from element off; the element type is the
// embedding type's.  Ranges are checked when a kernel uses the view.
type view struct {
	buf *Buffer
	off int
	n   int
}

// Len is the number of elements of the view.
func (v view) Len() int { return v.n }

// Offset is the index of the view's first element in its Buffer.
func (v view) Offset() int { return v.off }

// Buffer is the Buffer the view is of; nil for the zero view.
func (v view) Buffer() *Buffer { return v.buf }

func (v view) isNil() bool { return v.buf == nil }

func (v view) keepAlive() { runtime.KeepAlive(v.buf) }

func (v view) slice(i, j int) view { return view{v.buf, v.off + i, j - i} }

func whole(b *Buffer, esize int) view {
	if b == nil {
		return view{}
	}
	return view{b, 0, b.size / esize}
}

// optLen is the length the kernel checks see: -1 for the zero view, which
// is absent where the kernel allows it.
func (v view) optLen() int {
	if v.buf == nil {
		return -1
	}
	return v.n
}

// checkView fails when the view's Buffer is closed or the view's range is
// not inside it; the zero view (no Buffer) is empty, or absent where a
// kernel allows it.
func (v view) checkView(fn, name string, esize int, unit string) error {
	if v.buf == nil {
		if v.off != 0 || v.n != 0 {
			return &Error{InvalidArgument, fn + ": " + name + " has elements but no Buffer"}
		}
		return nil
	}
	// Held open until the kernel call's release (generated code): counted
	// even when closed, so that release is unconditional.
	v.buf.users.Add(1)
	if v.buf.closed.Load() {
		return &Error{InvalidArgument, fn + ": the Buffer of " + name + " is closed"}
	}
	elems := v.buf.size / esize
	if v.off < 0 || v.n < 0 || v.off > elems || v.n > elems-v.off {
		return &Error{InvalidArgument, fn + ": " + name + " is elements [" + strconv.Itoa(v.off) + ", " +
			strconv.Itoa(v.off+v.n) + ") of a Buffer of " + strconv.Itoa(elems) + " " + unit + " elements"}
	}
	return nil
}

// address is the C address of the view's first element; nil for an empty
// view (empty tensors go to C as NULL, as empty slices do).
func (v view) address(esize int) unsafe.Pointer {
	if v.buf == nil || v.n == 0 {
		return nil
	}
	return unsafe.Add(v.buf.data, v.off*esize)
}

// Float32View is a range of a Buffer as float32 elements, the argument type
// of f32 tensors in the <Kernel>Buf methods.  The zero value has no Buffer: an
// empty tensor, or an absent one where the kernel allows it (nil in the slice
// methods).
type Float32View struct{ view }

// Float32View is the whole buffer as Size()/4 float32 elements.
func (b *Buffer) Float32View() Float32View { return Float32View{whole(b, 4)} }

// Slice is elements [i, j) of v, like v[i:j] of a slice; the range is
// checked against the Buffer when a kernel uses the view.
func (v Float32View) Slice(i, j int) Float32View { return Float32View{v.slice(i, j)} }

func (v Float32View) check(fn, name string) error { return v.checkView(fn, name, 4, "float32") }

func (v Float32View) ptr() *C.float { return (*C.float)(v.address(4)) }

// Int32View is a range of a Buffer as int32 elements (i32 tensors).
type Int32View struct{ view }

// Int32View is the whole buffer as Size()/4 int32 elements.
func (b *Buffer) Int32View() Int32View { return Int32View{whole(b, 4)} }

// Slice is elements [i, j) of v (see Float32View.Slice).
func (v Int32View) Slice(i, j int) Int32View { return Int32View{v.slice(i, j)} }

func (v Int32View) check(fn, name string) error { return v.checkView(fn, name, 4, "int32") }

func (v Int32View) ptr() *C.int32_t { return (*C.int32_t)(v.address(4)) }

// BF16View is a range of a Buffer as bfloat16 elements (bf16 tensors; the
// memory holds their bit patterns, see Float32ToBF16).
type BF16View struct{ view }

// BF16View is the whole buffer as Size()/2 bfloat16 elements.
func (b *Buffer) BF16View() BF16View { return BF16View{whole(b, 2)} }

// Slice is elements [i, j) of v (see Float32View.Slice).
func (v BF16View) Slice(i, j int) BF16View { return BF16View{v.slice(i, j)} }

func (v BF16View) check(fn, name string) error { return v.checkView(fn, name, 2, "bfloat16") }

func (v BF16View) ptr() *C.uint16_t { return (*C.uint16_t)(v.address(2)) }

// F16View is a range of a Buffer as IEEE binary16 elements (f16 tensors; the
// memory holds their bit patterns, see Float32ToF16).
type F16View struct{ view }

// F16View is the whole buffer as Size()/2 float16 elements.
func (b *Buffer) F16View() F16View { return F16View{whole(b, 2)} }

// Slice is elements [i, j) of v (see Float32View.Slice).
func (v F16View) Slice(i, j int) F16View { return F16View{v.slice(i, j)} }

func (v F16View) check(fn, name string) error { return v.checkView(fn, name, 2, "float16") }

func (v F16View) ptr() *C.uint16_t { return (*C.uint16_t)(v.address(2)) }

// ByteView is a range of a Buffer as bytes (u8 tensors: a tensor in a
// storage format such as a quantized weight, see Dtype and QTensor).
type ByteView struct{ view }

// ByteView is the whole buffer as Size() bytes.
func (b *Buffer) ByteView() ByteView { return ByteView{whole(b, 1)} }

// Slice is bytes [i, j) of v (see Float32View.Slice).
func (v ByteView) Slice(i, j int) ByteView { return ByteView{v.slice(i, j)} }

func (v ByteView) check(fn, name string) error { return v.checkView(fn, name, 1, "byte") }

func (v ByteView) ptr() *C.uint8_t { return (*C.uint8_t)(v.address(1)) }
