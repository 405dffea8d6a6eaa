"""Gguf: a GGUF file (kb_gguf) read by the C library's validating parser.

Keys and tensors are addressed by name; values come back as Python and
numpy values.  Tensor data is copied out of the file as bytes (read_tensor)
or as a QTensor ready for the weight kernels (qtensor).  Shapes are
row-major, outermost axis first, as kernels take them (GGUF stores ne[0],
the innermost axis, first).  See docs/gguf.md.
"""

import os
import weakref

import numpy as np

from . import _capi
from ._interop import ArgumentTypeError
from ._model import Dtype, GgufType, InvalidArgumentError
from ._runtime import _ctx_ptr

# Integer value types (get() returns int; BOOL returns bool).
_INTEGERS = {
    GgufType.UINT8, GgufType.INT8, GgufType.UINT16, GgufType.INT16, GgufType.UINT32, GgufType.INT32,
    GgufType.UINT64, GgufType.INT64,
}
_FLOATS = {GgufType.FLOAT32, GgufType.FLOAT64}


class Gguf:
    """An open GGUF file (versions 2 and 3), validated when opened.

    Gguf(path) maps the file; Gguf(data) takes the bytes of one (bytes,
    bytearray, memoryview, uint8 numpy array), which are copied.  Calls use
    ctx= when given, else the calling thread's default context.  close() (or
    leaving a with block) releases the file.
    """

    def __init__(self, source, *, ctx=None):
        self._ctx = ctx
        ctxp = _ctx_ptr(ctx, "Gguf")
        if isinstance(source, (str, os.PathLike)):
            handle = _capi.gguf_open(ctxp, os.fsdecode(source))
        elif isinstance(source, (bytes, bytearray, memoryview, np.ndarray)):
            data = np.frombuffer(source, np.uint8) if not isinstance(source, np.ndarray) else source
            data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
            handle = _capi.gguf_open_memory(ctxp, data.nbytes, data)
        else:
            raise ArgumentTypeError(f"Gguf: source must be a path or bytes, got {type(source).__name__}")
        self._handle = handle
        self._finalizer = weakref.finalize(self, _capi.gguf_destroy, handle)

    def close(self):
        """Releases the file; later calls raise InvalidArgumentError."""
        if self._handle is not None:
            self._handle = None
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _g(self, what):
        if self._handle is None:
            raise InvalidArgumentError(f"Gguf.{what}: the file is closed")
        return _ctx_ptr(self._ctx, f"Gguf.{what}"), self._handle

    @property
    def version(self):
        """The GGUF version of the file: 2 or 3."""
        return _capi.gguf_version(*self._g("version"))

    # --- metadata ------------------------------------------------------------------

    def keys(self):
        """The metadata keys, in file order."""
        ctxp, g = self._g("keys")
        return [_capi.gguf_key_name(ctxp, g, i) for i in range(_capi.gguf_key_count(ctxp, g))]

    def _key(self, key, what):
        ctxp, g = self._g(what)
        index = _capi.gguf_find_key(ctxp, g, key)
        if index < 0:
            raise KeyError(key)
        return ctxp, g, index

    def __contains__(self, key):
        ctxp, g = self._g("__contains__")
        return _capi.gguf_find_key(ctxp, g, key) >= 0

    def key_type(self, key):
        """The GgufType of key's value (ARRAY for arrays, see array_type)."""
        return GgufType(_capi.gguf_key_type(*self._key(key, "key_type")))

    def array_type(self, key):
        """The GgufType of the elements of the array of key."""
        return GgufType(_capi.gguf_array_type(*self._key(key, "array_type")))

    def get(self, key, default=None):
        """key's value: int, float, bool or str for a scalar; for an array a
        numpy array of numbers (int64, float32 or bool) or a list of str
        (undecodable UTF-8 replaced).  default when the file has no such key.
        Floats come as float32 values; a UINT64 above 2^63 - 1 and arrays of
        integers outside the int32 range raise InvalidArgumentError."""
        if key not in self:
            return default
        ctxp, g, i = self._key(key, "get")
        t = GgufType(_capi.gguf_key_type(ctxp, g, i))
        if t == GgufType.STRING:
            return self.get_bytes(key).decode("utf-8", "replace")
        if t == GgufType.BOOL:
            return bool(_capi.gguf_get_int64(ctxp, g, i))
        if t in _FLOATS:
            return float(self._f32(ctxp, g, i, 1)[0])
        if t in _INTEGERS:
            return _capi.gguf_get_int64(ctxp, g, i)
        et = GgufType(_capi.gguf_array_type(ctxp, g, i))
        if et == GgufType.STRING:
            blob, offsets = self.string_array(key)
            return [blob[offsets[k]:offsets[k + 1]].decode("utf-8", "replace") for k in range(len(offsets) - 1)]
        n = _capi.gguf_array_length(ctxp, g, i)
        if et in _FLOATS:
            return self._f32(ctxp, g, i, n)
        values = np.empty(n, np.int32)
        _capi.gguf_get_i32(ctxp, g, i, n, values)
        return values.astype(bool) if et == GgufType.BOOL else values.astype(np.int64)

    def _f32(self, ctxp, g, i, n):
        out = np.empty(n, np.float32)
        _capi.gguf_get_f32(ctxp, g, i, n, out)
        return out

    def get_int(self, key):
        """key's integer (or BOOL) value; InvalidArgumentError naming the key
        for other types."""
        return _capi.gguf_get_int64(*self._key(key, "get_int"))

    def get_float(self, key):
        """key's number as a float32 value (InvalidArgumentError for strings)."""
        ctxp, g, i = self._key(key, "get_float")
        return float(self._f32(ctxp, g, i, 1)[0])

    def get_bytes(self, key):
        """The bytes of key's STRING value."""
        ctxp, g, i = self._key(key, "get_bytes")
        n = _capi.gguf_string_bytes(ctxp, g, i)
        out = bytearray(n)
        _capi.gguf_get_string(ctxp, g, i, n, out)
        return bytes(out)

    def get_str(self, key):
        """key's STRING value, decoded as UTF-8."""
        return self.get_bytes(key).decode("utf-8")

    def get_f32(self, key):
        """key's numbers (a scalar or an array) as a float32 numpy array."""
        ctxp, g, i = self._key(key, "get_f32")
        n = _capi.gguf_array_length(ctxp, g, i) if _capi.gguf_key_type(ctxp, g, i) == GgufType.ARRAY else 1
        return self._f32(ctxp, g, i, n)

    def get_i32(self, key):
        """key's integers (a scalar or an array) as an int32 numpy array."""
        ctxp, g, i = self._key(key, "get_i32")
        n = _capi.gguf_array_length(ctxp, g, i) if _capi.gguf_key_type(ctxp, g, i) == GgufType.ARRAY else 1
        out = np.empty(n, np.int32)
        _capi.gguf_get_i32(ctxp, g, i, n, out)
        return out

    def string_array(self, key):
        """The array of strings of key as (blob: bytes, offsets: int32 numpy
        array of length + 1): string k is blob[offsets[k]:offsets[k + 1]]."""
        ctxp, g, i = self._key(key, "string_array")
        nbytes = _capi.gguf_string_array_bytes(ctxp, g, i)
        n = _capi.gguf_array_length(ctxp, g, i)
        blob = bytearray(nbytes)
        offsets = np.empty(n + 1, np.int32)
        _capi.gguf_get_string_array_data(ctxp, g, i, nbytes, blob)
        _capi.gguf_get_string_array_offsets(ctxp, g, i, n + 1, offsets)
        return bytes(blob), offsets

    def vocabulary(self, prefix="tokenizer.ggml"):
        """(pieces blob, offsets int32[n + 1], scores float32[n], token types
        int32[n]) from <prefix>.tokens, .scores and .token_type: the arguments
        of a tokenizer.  Scores default to 0 and types to 1 (normal) when the
        file has no such key."""
        blob, offsets = self.string_array(prefix + ".tokens")
        n = len(offsets) - 1
        scores = self.get_f32(prefix + ".scores") if prefix + ".scores" in self else np.zeros(n, np.float32)
        types = self.get_i32(prefix + ".token_type") if prefix + ".token_type" in self else np.ones(n, np.int32)
        return blob, offsets, scores, types

    # --- tensors -------------------------------------------------------------------

    def tensor_names(self):
        """The tensor names, in file order."""
        ctxp, g = self._g("tensor_names")
        return [_capi.gguf_tensor_name(ctxp, g, i) for i in range(_capi.gguf_tensor_count(ctxp, g))]

    def _tensor(self, name, what):
        ctxp, g = self._g(what)
        index = _capi.gguf_find_tensor(ctxp, g, name)
        if index < 0:
            raise KeyError(name)
        return ctxp, g, index

    def tensor_type(self, name):
        """The GGML type number of tensor name: a Dtype for the types kernels
        take, else the plain int (Q4_K is 12, ...)."""
        t = _capi.gguf_tensor_type(*self._tensor(name, "tensor_type"))
        try:
            return Dtype(t)
        except ValueError:
            return t

    def tensor_shape(self, name):
        """The shape of tensor name, row-major (outermost axis first)."""
        ctxp, g, i = self._tensor(name, "tensor_shape")
        return tuple(_capi.gguf_tensor_dim(ctxp, g, i, a) for a in range(_capi.gguf_tensor_n_dims(ctxp, g, i)))

    def tensor_nbytes(self, name):
        """The size in bytes of tensor name's data."""
        return _capi.gguf_tensor_bytes(*self._tensor(name, "tensor_nbytes"))

    def tensor_offset(self, name):
        """Where tensor name's data starts in the file (for mapping it yourself)."""
        return _capi.gguf_tensor_offset(*self._tensor(name, "tensor_offset"))

    def read_tensor(self, name):
        """The bytes of tensor name as a uint8 numpy array (a copy);
        NotImplementedError for a type kernels do not take."""
        ctxp, g, i = self._tensor(name, "read_tensor")
        out = np.empty(_capi.gguf_tensor_bytes(ctxp, g, i), np.uint8)
        _capi.gguf_tensor_read(ctxp, g, i, out.nbytes, out)
        return out

    def tensor(self, name):
        """Tensor name as a numpy array of its shape: float32, float16, or
        uint16 bfloat16 bits; NotImplementedError for block formats (use
        read_tensor / qtensor) and types kernels do not take."""
        t = self.tensor_type(name)
        dtypes = {Dtype.F32: np.float32, Dtype.F16: np.float16, Dtype.BF16: np.uint16}
        if t not in dtypes:
            raise NotImplementedError(f"Gguf.tensor: tensor '{name}' is {getattr(t, 'name', t)}: use read_tensor")
        return self.read_tensor(name).view(dtypes[t]).reshape(self.tensor_shape(name))

    def __repr__(self):
        state = "closed" if self._handle is None else f"version {self.version}"
        return f"<kernelbridge.Gguf {state}>"
