"""Tensors in storage formats (kb_dtype): QTensor, and the functions that make
or take one.

Hand-written.  A QTensor is a [rows, cols] matrix stored as a Dtype (float32,
float16, bfloat16, or one of GGML's block quantizations Q8_0 and Q4_0) the way
a GGUF file holds it: its bytes, used in place, plus the format and shape that
give them meaning.  The generated kernels take such bytes with the format and
sizes as separate arguments (linear_w, embedding_w, quantize, dequantize in
_kernels); this module keeps the three together, checked once, so that
`kernelbridge.linear(x, q)` reads like `kernelbridge.linear(x, w)`.

The package's quantize, dequantize, linear and embedding are the functions
here (the generated ones of those names stay in kernelbridge._kernels):
linear and embedding run the generated float kernels unchanged for anything
but a QTensor.
"""

import numpy as np

from . import _capi, _kernels
from ._interop import ArgumentTypeError
from ._model import Activation, Dtype, Error, InvalidArgumentError, OutOfMemoryError, ShapeMismatchError
from ._runtime import K_F32, SLOW, Buffer, always_slow, enum_arg, to_input

_INT64_MAX = (1 << 63) - 1
_CHOICES = ", ".join(f"{m.name} = {m.value}" for m in Dtype)


def _dtype(value, name, fn):
    """A Dtype from a member, its value or its name ("q8_0")."""
    if type(value) is Dtype:
        return value
    if isinstance(value, np.integer):  # a GGUF reader's raw type field
        value = int(value)
    n = enum_arg(Dtype, value, name, fn)
    try:
        return Dtype(n)
    except ValueError:
        # The values are GGML's type numbers, with gaps: 3 is no format here.
        raise InvalidArgumentError(f"{fn}: {name} must be a kernelbridge.Dtype ({_CHOICES}), got {n}") from None


def _size(value, name, fn):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{fn}: {name} must be an int, got {type(value).__name__}")
    value = int(value)
    if value < 0:
        raise InvalidArgumentError(f"{fn}: {name} must be >= 0, got {value}")
    return value


def _nbytes(dtype, rows, cols, fn, what):
    """kb_dtype_bytes, its error raised again for fn, about what (the
    argument whose shape it is)."""
    if rows > _INT64_MAX or cols > _INT64_MAX:
        raise OutOfMemoryError(f"{fn}: the size of {what} ([{rows}, {cols}] as {dtype.name}) overflows")
    try:
        return _capi.dtype_bytes(dtype, rows, cols)
    except Error as e:
        reason = e.message.split(": ", 1)[-1]  # without "kb_dtype_bytes: "
        raise type(e)(f"{fn}: {what} [{rows}, {cols}] as {dtype.name}: {reason}", e.status) from None


def dtype_bytes(dtype, rows, cols):
    """Bytes of a [rows, cols] tensor stored as dtype (kb_dtype_bytes):
    rows * cols * 4 (F32), * 2 (F16, BF16), rows * cols / 32 * 34 (Q8_0) or
    * 18 (Q4_0).  dtype: a Dtype, its value or its name ("q4_0").  Raises
    InvalidArgumentError for an unknown dtype, a negative size or, for a
    block format, cols not a multiple of 32; OutOfMemoryError when the count
    overflows.
    """
    dtype = _dtype(dtype, "dtype", "dtype_bytes")
    rows, cols = _size(rows, "rows", "dtype_bytes"), _size(cols, "cols", "dtype_bytes")
    return _nbytes(dtype, rows, cols, "dtype_bytes", "the tensor")


def _byte_view(data, fn):
    """A read-only 1-D uint8 numpy view of data's bytes (never a copy)."""
    if isinstance(data, Buffer):
        if data.is_cuda:
            raise InvalidArgumentError(f"{fn}: data is memory of CUDA device {data.device}; a QTensor holds host memory")
        arr = np.asarray(data)  # a view of a host Buffer
    elif isinstance(data, np.ndarray):
        arr = data
    elif hasattr(data, "__array_interface__") or hasattr(data, "__array__"):
        arr = np.asarray(data)
    else:
        try:
            with memoryview(data) as view:
                contiguous = view.c_contiguous
        except TypeError:
            raise ArgumentTypeError(
                f"{fn}: data must be a numpy array or an object exposing the buffer protocol (bytes, bytearray, "
                f"memoryview, mmap), got {type(data).__name__}"
            ) from None
        if not contiguous:
            raise InvalidArgumentError(f"{fn}: data is a non-contiguous buffer; its bytes are used in place")
        arr = np.frombuffer(data, np.uint8)
    if not arr.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{fn}: data must be C-contiguous: its bytes are used in place (numpy.ascontiguousarray(data) copies)"
        )
    if arr.dtype.hasobject:
        raise ArgumentTypeError(f"{fn}: data must hold bytes, not Python objects (dtype {arr.dtype})")
    view = arr.reshape(-1).view(np.uint8)  # a new view object: the caller's array keeps its flags
    view.flags.writeable = False
    return view


class QTensor:
    """A [rows, cols] matrix in a storage format: QTensor(dtype, shape, data).

    dtype  the format: a kernelbridge.Dtype (F32, F16, BF16, Q8_0, Q4_0; the
           values are GGML's type numbers, so a GGUF tensor's type field
           passes as it is), its value or its name ("q4_0");
    shape  (rows, cols): for a weight, (out_features, in_features), PyTorch's
           and GGUF's layout; the block formats need cols a multiple of 32;
    data   the bytes: a numpy array of any dtype and shape (e.g. a slice of
           numpy.memmap of a GGUF file), bytes, bytearray, memoryview, mmap
           or a host Buffer, C-contiguous; used in place, never copied, and
           exactly dtype_bytes(dtype, rows, cols) bytes long.
    Bad arguments raise the typed errors of the package naming the argument
    (InvalidArgumentError for dtype and shape, ShapeMismatchError for a
    byte count that does not match).

    A QTensor is immutable: `data` is a read-only 1-D uint8 view of the bytes
    (whoever owns them may still change them).  kernelbridge.linear(x, q) and
    kernelbridge.embedding(ids, q) take it as their weight / table;
    kernelbridge.quantize(x, dtype) makes one from float32 rows, and
    q.dequantize() widens it back to float32.
    """

    __slots__ = ("_dtype", "_shape", "_data")

    def __init__(self, dtype, shape, data):
        fn = "QTensor"
        dtype = _dtype(dtype, "dtype", fn)
        try:
            rows, cols = shape
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"{fn}: shape must be (rows, cols), got {shape!r}") from None
        rows, cols = _size(rows, "shape[0] (rows)", fn), _size(cols, "shape[1] (cols)", fn)
        nbytes = _nbytes(dtype, rows, cols, fn, "shape")
        view = _byte_view(data, fn)
        if view.size != nbytes:
            raise ShapeMismatchError(
                f"{fn}: data has {view.size} bytes, expected {nbytes} (shape ({rows}, {cols}) as {dtype.name})"
            )
        self._init(dtype, (rows, cols), view)

    def _init(self, dtype, shape, view):
        object.__setattr__(self, "_dtype", dtype)
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_data", view)

    @classmethod
    def _checked(cls, dtype, shape, view):
        """A QTensor of parts this module has already checked."""
        q = cls.__new__(cls)
        q._init(dtype, shape, view)
        return q

    def __setattr__(self, name, value):
        raise AttributeError("QTensor is immutable")

    @property
    def dtype(self):
        """The storage format (a Dtype)."""
        return self._dtype

    @property
    def shape(self):
        """(rows, cols)."""
        return self._shape

    @property
    def data(self):
        """The bytes: a read-only 1-D uint8 numpy view (no copy)."""
        return self._data

    @property
    def nbytes(self):
        return self._data.size

    def dequantize(self, *, out=None, ctx=None):
        """The matrix widened to float32, [rows, cols]: exactly (every value of
        every format is a float32), as GGML's dequantize_row_q8_0 / _q4_0 for
        the block formats.  out: a float32 array of that shape to write
        instead of a new one (returned)."""
        rows, cols = self._shape
        return _kernels.dequantize(self._data, out, type=self._dtype, rows=rows, cols=cols, ctx=ctx)

    def __repr__(self):
        return f"QTensor({self._dtype.name}, shape={self._shape}, {self._data.size} bytes)"

    def __reduce__(self):
        # copy and pickle rebuild it through the constructor (the default
        # would set the slots, which an immutable object refuses).
        return (QTensor, (self._dtype, self._shape, self._data))


def quantize(x, dtype, *, out=None, ctx=None):
    """Converts float32 rows to a storage format: a QTensor of x.

    x: float32 [rows, cols] (leading axes are rows, as in every row-wise
    kernel: [a, b, cols] is a*b rows; a 1-D x is one row); dtype: a Dtype,
    its value or its name.  Q8_0 and Q4_0 are GGML's reference quantization,
    bit for bit (quantize_row_q8_0_ref / _q4_0_ref); they need cols a
    multiple of 32 and finite values.  F16 and BF16 round to nearest even;
    F32 copies.  out: a writable C-contiguous uint8 array (or bytearray, ...)
    of exactly dtype_bytes(dtype, rows, cols) bytes to fill, else a new
    uint8 array; the QTensor's data is a view of it.
    Runs the generated kernelbridge._kernels.quantize (kb_quantize).
    """
    fn = "quantize"
    dtype = _dtype(dtype, "dtype", fn)
    t = to_input(x, K_F32, "x", fn, (1,))
    cols = t.shape[-1]
    rows = 1
    for d in t.shape[:-1]:
        rows *= d
    nbytes = _nbytes(dtype, rows, cols, fn, "x")
    data = _kernels.quantize(t, out, type=dtype, y_bytes=nbytes, ctx=ctx)
    return QTensor._checked(dtype, (rows, cols), _byte_view(data, fn))


def dequantize(x, out=None, *, type=None, rows=None, cols=None, ctx=None):
    """Widens a tensor in a storage format to float32 [rows, cols]: x is a
    QTensor (x.dequantize()), or its bytes with type= (a Dtype, its value
    or its name) and rows= / cols= (taken from out when it is given): the
    generated kernelbridge._kernels.dequantize (kb_dequantize)."""
    if isinstance(x, QTensor):
        if type is not None or rows is not None or cols is not None:
            raise ArgumentTypeError("dequantize: x is a QTensor: its dtype and shape are the format and sizes "
                                    "(type=, rows= and cols= go with bytes)")
        return x.dequantize(out=out, ctx=ctx)
    if type is None:
        raise ArgumentTypeError("dequantize: type= must be given when x is bytes (or pass a QTensor)")
    return _kernels.dequantize(x, out, type=type, rows=rows, cols=cols, ctx=ctx)


# The generated functions, and their fast paths: an array weight goes
# straight to the fast path, so that the QTensor test is all linear and
# embedding add to the common case (a call through the generated function
# costs about 0.3 us more).
_linear = _kernels.linear
_embedding = _kernels.embedding
_fast_linear = getattr(_kernels, "_fast_linear", always_slow)
_fast_embedding = getattr(_kernels, "_fast_embedding", always_slow)


def _check_features(x, weight):
    """x's last axis against a QTensor weight's cols, when x has a shape:
    the library would otherwise report weight_bytes, a size the caller
    never passed."""
    shape = getattr(x, "shape", None)
    cols = weight._shape[1]
    if shape is not None and len(shape) >= 1 and shape[-1] != cols:
        raise ShapeMismatchError(f"linear: x has shape {tuple(shape)}, expected (..., {cols}) for weight {weight!r}")


def linear(x, weight, bias=None, out=None, *, act=Activation.NONE, ctx=None):
    """y = act(x @ weight.T + bias): kernelbridge._kernels.linear (kb_linear
    and its float16 / bfloat16 variants) for array weights, linear_w
    (kb_linear_w) for a QTensor weight of shape (out_features, in_features)
    in any storage format; x: float32 [..., in_features] then (leading axes
    are rows), y: float32 [..., out_features].  With an F32 QTensor the
    result is kb_linear's, bit for bit.  The arguments and the rest are
    linear's; see kernelbridge._kernels.linear for the details.
    """
    if not isinstance(weight, QTensor):
        r = _fast_linear(ctx, x, weight, bias, out, act)
        return _linear(x, weight, bias, out, act=act, ctx=ctx) if r is SLOW else r
    _check_features(x, weight)
    return _kernels.linear_w(x, weight._data, bias, out, out_features=weight._shape[0], weight_type=weight._dtype,
                             act=act, ctx=ctx)


def embedding(ids, table, out=None, *, ctx=None):
    """out[i, :] = table[ids[i], :]: kernelbridge._kernels.embedding
    (kb_embedding) for an array table, embedding_w (kb_embedding_w) for a
    QTensor table of shape (vocab, dim) in any storage format, whose rows
    are widened to float32 exactly (as dequantize).  ids: int32 [n_ids],
    each in [0, vocab) (all checked before anything is written); out:
    float32 [n_ids, dim].
    """
    if not isinstance(table, QTensor):
        r = _fast_embedding(ctx, ids, table, out)
        return _embedding(ids, table, out, ctx=ctx) if r is SLOW else r
    vocab, dim = table._shape
    return _kernels.embedding_w(ids, table._data, out, vocab=vocab, dim=dim, table_type=table._dtype, ctx=ctx)
