"""Support code of the generated kernel wrappers: arrays, contexts, errors.

Hand-written; the wrappers in _kernels.py are generated from the header.
Each generated wrapper handles the common case (a C-contiguous, aligned
numpy array of the right dtype) inline and calls the functions here only for
everything else, so the fast path does no per-call introspection.
"""

import threading
import weakref

import numpy as np

from . import _model
from ._model import Backend, Error, ERRORS, InvalidArgumentError, ShapeMismatchError, Status
from ._native import ffi, lib

nd = np.ndarray
F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
FA = ffi.typeof("float[]")
IA = ffi.typeof("int32_t[]")
NULL = ffi.NULL
from_buffer = ffi.from_buffer
empty = np.empty
zeros = np.zeros
copyto = np.copyto


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An array argument has the wrong dtype (a TypeError and an InvalidArgumentError)."""


# --- arrays -----------------------------------------------------------------------


def _as_array(obj, name, fn):
    """A numpy view of obj (numpy array, buffer protocol or __array_interface__)."""
    if isinstance(obj, nd):
        return obj
    if obj is None:
        raise ArgumentTypeError(f"{fn}: {name} must be an array, got None")
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    try:
        memoryview(obj).release()
    except TypeError:
        raise ArgumentTypeError(
            f"{fn}: {name} must be an array (numpy array, buffer or __array_interface__), got {type(obj).__name__}"
        ) from None
    return np.asarray(obj)


def _check_dtype(arr, dtype, name, fn):
    if arr.dtype != dtype or not arr.dtype.isnative:
        raise ArgumentTypeError(f"{fn}: {name} must have dtype {dtype.name}, got {arr.dtype.str} ({arr.dtype.name})")


def _check_ndim(arr, ndim, name, fn):
    if ndim >= 0 and arr.ndim != ndim:
        raise ShapeMismatchError(f"{fn}: {name} must have {ndim} dimensions, got shape {arr.shape}")


def to_input(obj, dtype, name, fn, ndim):
    """An input array for C: the right dtype (else TypeError), C-contiguous and
    aligned (a copy when it is not)."""
    arr = _as_array(obj, name, fn)
    _check_dtype(arr, dtype, name, fn)
    _check_ndim(arr, ndim, name, fn)
    flags = arr.flags
    if not (flags.c_contiguous and flags.aligned):
        arr = np.array(arr, dtype=dtype, order="C", copy=True)
    return arr


def _writable(obj, dtype, name, fn, what):
    arr = _as_array(obj, name, fn)
    _check_dtype(arr, dtype, name, fn)
    if not arr.flags.writeable:
        raise InvalidArgumentError(f"{fn}: {name} is read-only; {what} arrays must be writable")
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{fn}: {name} must be C-contiguous ({what} arrays are written in place); "
            "pass numpy.ascontiguousarray(...) and use the result"
        )
    return arr


def inout(obj, dtype, name, fn, ndim):
    """An inout array: (array for C, array to copy the result back into or None)."""
    arr = _writable(obj, dtype, name, fn, "inout")
    _check_ndim(arr, ndim, name, fn)
    if arr.flags.aligned:
        return arr, None
    return np.array(arr, dtype=dtype, order="C", copy=True), arr


def out(obj, dtype, name, fn, shape):
    """An out= array of the given shape: (array for C, copy-back target or None)."""
    arr = _writable(obj, dtype, name, fn, "out")
    if arr.shape != shape:
        shape_error(fn, name, arr.shape, shape)
    if arr.flags.aligned:
        return arr, None
    return np.empty(shape, dtype), arr


def out_tuple_error(fn, count, value):
    raise ArgumentTypeError(f"{fn}: out must be None or a tuple of {count} arrays (or None), got {type(value).__name__}")


def shape_error(fn, name, got, want):
    raise ShapeMismatchError(f"{fn}: {name} has shape {tuple(got)}, expected {tuple(want)}")


def _same_view(a, b):
    ia, ib = a.__array_interface__, b.__array_interface__
    return ia["data"][0] == ib["data"][0] and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype


def overlaps(fn, items):
    """Overlap rules of the header for arrays the library cannot see directly.

    items: (name, object, written, aliases).  A written array may be the very
    same array as an input named in its aliases; any other overlap fails.
    """
    arrays = [(name, np.asarray(obj), written, aliases) for name, obj, written, aliases in items if obj is not None]
    for i, (name, arr, written, aliases) in enumerate(arrays):
        if not written or arr.size == 0:
            continue
        for j, (other, oarr, _, _) in enumerate(arrays):
            if i == j or oarr.size == 0:
                continue
            try:
                shared = np.shares_memory(arr, oarr, max_work=1 << 16)
            except np.exceptions.TooHardError if hasattr(np, "exceptions") else Exception:
                shared = np.may_share_memory(arr, oarr)
            if not shared:
                continue
            if other in aliases and _same_view(arr, oarr):
                continue
            if other in aliases:
                raise InvalidArgumentError(
                    f"{fn}: {name} partially overlaps {other} (only the exact same array is allowed)"
                )
            raise InvalidArgumentError(f"{fn}: {name} must not overlap {other}")


# --- errors -------------------------------------------------------------------------


def error_for(status, message):
    cls = ERRORS.get(status, Error)
    return cls(message, status)


def fail(status, ctxp, fn):
    """Raises the error for a failed call; reads the context's message first."""
    message = ffi.string(lib.kb_context_last_error(ctxp)).decode("utf-8", "replace") if ctxp else ""
    if not message:
        message = f"{fn}: {ffi.string(lib.kb_status_string(status)).decode()}"
    raise error_for(status, message)


def check(status, message):
    """Raises the error for status (no-op for OK)."""
    if status:
        raise error_for(status, message)


# --- contexts ---------------------------------------------------------------------------

_BACKENDS = {"cpu": Backend.CPU, "cuda": Backend.CUDA, "auto": Backend.AUTO}


class Context:
    """Backend, CPU thread count and last error message for kernel calls.

    Context(threads=0, backend="cpu"): threads is the number of CPU threads a
    kernel may use (0: one per online CPU); backend is "cpu", "cuda" or
    "auto" (CUDA when available, else CPU).  Results never depend on threads.
    A context must be used by one thread at a time; kernels called without
    ctx= use the calling thread's default context.  Use it as a context
    manager or call close(); the handle is also freed when the object is
    garbage-collected.
    """

    def __init__(self, threads=0, backend="cpu"):
        self._ptr = None
        if isinstance(backend, str):
            try:
                backend = _BACKENDS[backend.lower()]
            except KeyError:
                raise InvalidArgumentError(f"Context: backend must be 'cpu', 'cuda' or 'auto', got {backend!r}") from None
        else:
            backend = Backend(backend)
        if isinstance(threads, bool) or not isinstance(threads, int) and not hasattr(threads, "__index__"):
            raise ArgumentTypeError(f"Context: threads must be an int, got {type(threads).__name__}")
        threads = int(threads)
        if threads < 0:
            raise InvalidArgumentError(f"Context: threads must be >= 0, got {threads}")
        pp = ffi.new("kb_context **")
        st = lib.kb_context_create(backend, threads, pp)
        if st == Status.BACKEND_UNAVAILABLE:
            check(st, f"Context: the {backend.name} backend is not available in this build of kernelbridge")
        check(st, f"Context: kb_context_create failed ({ffi.string(lib.kb_status_string(st)).decode()}) "
                  f"for backend {backend.name}, threads={threads}")
        self._ptr = pp[0]
        # Frees the handle exactly once: on close(), on garbage collection or at exit.
        self._finalizer = weakref.finalize(self, lib.kb_context_destroy, self._ptr)

    def close(self):
        """Frees the context; calling it again does nothing."""
        if self._ptr is not None:
            self._ptr = None
            self._finalizer()

    @property
    def closed(self):
        return self._ptr is None

    def _handle(self):
        if self._ptr is None:
            closed("Context")
        return self._ptr

    @property
    def backend(self):
        """The Backend the context runs on (never AUTO)."""
        return Backend(lib.kb_context_backend(self._handle()))

    @property
    def threads(self):
        """Number of CPU threads kernels on this context may use."""
        return lib.kb_context_num_threads(self._handle())

    @property
    def last_error(self):
        """Message of the last failed call on this context ("" after a success)."""
        return ffi.string(lib.kb_context_last_error(self._handle())).decode("utf-8", "replace")

    def __enter__(self):
        self._handle()
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self._ptr is None:
            return "<kernelbridge.Context closed>"
        return f"<kernelbridge.Context backend={self.backend.name.lower()} threads={self.threads}>"


def closed(fn):
    raise InvalidArgumentError(f"{fn}: the context is closed")


# Per-thread default contexts: a kb_context is a single-thread object, so each
# thread that calls a kernel without ctx= gets its own, freed with the thread.
tls = threading.local()


def default_context():
    """The calling thread's default Context (created on first use)."""
    ctx = getattr(tls, "ctx", None)
    if ctx is None or ctx.closed:
        ctx = Context()
        tls.ctx = ctx
    return ctx


def default_ptr():
    return default_context()._ptr
