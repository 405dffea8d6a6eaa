"""scaled_dot_product_attention: PyTorch's calling conventions over
kb_attention_ex (and its float16 / bfloat16 variants).

Hand-written on the generated attention_ex* functions, which do the calls
and report the library's errors; this module turns PyTorch's arguments into
theirs: a boolean attn_mask into an additive one, masks of fewer than four
axes into [B|1, H|1, Sq|1, Skv], broadcast (zero-stride) axes into axes of
size 1, `scale=None` into the library's 0, and the dtype of `query` into the
variant to call.  Arguments it cannot express raise a typed error naming
them before anything runs.
"""

import numpy as np

from . import _kernels
from ._interop import BF16, F16, F32, U16, ArgumentTypeError
from ._model import InvalidArgumentError, ShapeMismatchError, UnsupportedError
from ._runtime import Buffer, half_kind

_FN = "scaled_dot_product_attention"
_I32 = np.dtype(np.int32)


def _shape(obj, name):
    shape = getattr(obj, "shape", None)
    if shape is None:
        obj = np.asarray(obj)
        shape = obj.shape
    if len(shape) != 4:
        raise ShapeMismatchError(
            f"{_FN}: {name} must have 4 dimensions ([batch, heads, seq, head_dim], or [batch, seq, heads, head_dim] "
            f"with seq_major=True), got shape {tuple(shape)}"
        )
    return tuple(shape)


def _variant(query):
    """(the attention_ex function for query's dtype, the numpy dtype of its
    tensors, or None when query is not host memory numpy can see)."""
    kind = half_kind(query)
    if kind == "f16":
        return _kernels.attention_ex_f16, F16
    if kind == "bf16":
        return _kernels.attention_ex_bf16, BF16
    dtype = getattr(query, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype == U16:
        raise ArgumentTypeError(
            f"{_FN}: query is uint16, which could hold float16 or bfloat16 bits; pass float16 or "
            "ml_dtypes.bfloat16 arrays, or call attention_ex_f16 / attention_ex_bf16 with the bits"
        )
    return _kernels.attention_ex, F32


def _mask(attn_mask, dtype, full):
    """attn_mask as the library's additive [Bm, Hm, Qm, Skv] mask of dtype."""
    if isinstance(attn_mask, Buffer) or hasattr(attn_mask, "__cuda_array_interface__"):
        # Device memory (or a Buffer) is never copied: it must already be the
        # library's form, which attention_ex checks.
        return attn_mask
    m = np.asarray(attn_mask)
    if m.dtype == np.bool_:
        # PyTorch: True means the key takes part.
        additive = np.zeros(m.shape, dtype=np.float32)
        additive[~m] = -np.inf
        m = additive.astype(dtype) if dtype != F32 else additive
    elif m.dtype != dtype:
        raise ArgumentTypeError(
            f"{_FN}: attn_mask must be bool or have query's dtype ({dtype.name}), got {m.dtype.name}"
        )
    if not 1 <= m.ndim <= 4:
        raise ShapeMismatchError(
            f"{_FN}: attn_mask must have 1 to 4 dimensions broadcasting to [batch, heads, seq_q, seq_kv] = "
            f"{list(full)}, got shape {m.shape}"
        )
    m = m.reshape((1,) * (4 - m.ndim) + m.shape)
    for axis, (got, want) in enumerate(zip(m.shape, full)):
        if got not in (1, want):
            raise ShapeMismatchError(
                f"{_FN}: attn_mask of shape {m.shape} does not broadcast to [batch, heads, seq_q, seq_kv] = "
                f"{list(full)} (axis {axis} is {got}; the library takes 1 or {want})"
            )
    # Axes numpy broadcast with stride 0 become axes of length 1 (no copy of
    # the repeats); the library needs the key axis in full.
    m = m[tuple(slice(0, 1) if s == 0 and n > 1 and a < 3 else slice(None)
                for a, (s, n) in enumerate(zip(m.strides, m.shape)))]
    if m.shape[3] != full[3]:
        m = np.broadcast_to(m, m.shape[:3] + (full[3],))
    return np.ascontiguousarray(m)


def _lengths(kv_lengths, batch):
    if kv_lengths is None or isinstance(kv_lengths, Buffer) or hasattr(kv_lengths, "__cuda_array_interface__"):
        return kv_lengths
    a = np.asarray(kv_lengths)
    if a.dtype.kind not in "iu":
        raise ArgumentTypeError(f"{_FN}: kv_lengths must hold integers, got {a.dtype.name}")
    if a.dtype != _I32:
        if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
            raise InvalidArgumentError(f"{_FN}: kv_lengths holds values outside int32")
        a = a.astype(np.int32)
    if a.shape != (batch,):
        raise ShapeMismatchError(f"{_FN}: kv_lengths must have shape ({batch},) (one per batch row), got {a.shape}")
    return np.ascontiguousarray(a)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=True, *, kv_lengths=None, bottom_right=False, seq_major=False,
                                 out=None, ctx=None):
    """Attention with PyTorch's arguments (torch.nn.functional.scaled_dot_product_attention),
    computed by kb_attention_ex.

    query [B, H, Sq, E], key and value [B, Hkv, Skv, E] (with seq_major=True:
    [B, Sq, H, E] and [B, Skv, Hkv, E], the layout of a linear layer's output
    viewed as heads: no transposed copy).  Grouped-query attention (H a
    multiple of Hkv) always works; enable_gqa is accepted for compatibility.
    float32, float16 and bfloat16 (ml_dtypes) arrays run the matching kernel;
    the result has query's dtype and layout.

    attn_mask: bool (True: the key takes part) or additive of query's dtype
    (-inf removes a key), of any shape broadcasting to [B, H, Sq, Skv] with
    1 to 4 axes (PyTorch's rules: missing leading axes are 1).  Axes of size
    1 (or broadcast with stride 0) are not copied; a key axis of size 1 is
    expanded (a copy of the mask).  Other shapes raise ShapeMismatchError.
    is_causal: top-left aligned (PyTorch); with bottom_right=True the
    KV-cache alignment (FlashAttention's): query i sees keys j <= i + L - Sq.
    kv_lengths: int per batch row; keys j < kv_lengths[b] take part.
    scale: None means 1/sqrt(E); 0 is refused (the library reads 0 as None).
    dropout_p must be 0 (no dropout).  A query row left without any key
    gives zeros (PyTorch gives NaN there).
    """
    if dropout_p != 0.0:
        raise UnsupportedError(f"{_FN}: dropout_p must be 0 (kernelbridge has no dropout), got {dropout_p!r}")
    if scale is None:
        scale = 0.0
    elif float(scale) == 0.0:
        raise InvalidArgumentError(
            f"{_FN}: scale=0 is not supported (the library reads 0 as 1/sqrt(head_dim)); pass scale=None for that"
        )
    qs, ks = _shape(query, "query"), _shape(key, "key")
    vs = _shape(value, "value")
    if vs != ks:
        raise ShapeMismatchError(f"{_FN}: value has shape {vs}, expected key's shape {ks}")
    batch, head_dim = qs[0], qs[3]
    heads, seq_q = (qs[2], qs[1]) if seq_major else (qs[1], qs[2])
    seq_kv = ks[1] if seq_major else ks[2]
    if ks[0] != batch or ks[3] != head_dim:
        raise ShapeMismatchError(
            f"{_FN}: key has shape {ks}; batch and head_dim must be query's ({batch}, {head_dim})"
        )
    fn, dtype = _variant(query)
    mask = None if attn_mask is None else _mask(attn_mask, dtype, (batch, heads, seq_q, seq_kv))
    return fn(query, key, value, _lengths(kv_lengths, batch), mask, out, seq_major=bool(seq_major),
              causal=bool(is_causal), causal_bottom_right=bool(bottom_right), scale=float(scale), ctx=ctx)
