"""Questions every emitter asks of a kernel's tensor contracts.

Derived from the model only; no language knowledge here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .model import Cond, Const, Dim, Expr, Function, Param


@dataclass(frozen=True)
class Source:
    """Where a size parameter can be read: axis `axis` of tensor `tensor`,
    possibly only when flag `when` has value `value` (for conditional shapes)."""

    tensor: str
    axis: int
    when: Optional[str] = None
    value: Optional[bool] = None


def dim_sources(fn: Function) -> Dict[str, List[Source]]:
    """For each dim parameter, the tensor axes that equal it.

    Inputs come before outputs so that bindings derive sizes from what the
    caller passes in; ld parameters are not dimensions of any axis and get
    no source here (see ld_params).
    """
    out: Dict[str, List[Source]] = {p.name: [] for p in fn.dims}
    ordered = sorted(fn.tensors, key=lambda p: 0 if p.tensor.direction == "in" else 1)
    for p in ordered:
        for axis, e in enumerate(p.tensor.shape):
            if isinstance(e, Dim):
                out[e.name].append(Source(p.name, axis))
            elif isinstance(e, Cond):
                for value, branch in ((True, e.then), (False, e.otherwise)):
                    if isinstance(branch, Dim):
                        out[branch.name].append(Source(p.name, axis, e.flag, value))
    return out


def ld_params(fn: Function) -> Dict[str, str]:
    """Map from an ld parameter to the tensor whose row stride it is."""
    return {p.tensor.ld: p.name for p in fn.tensors if p.tensor.ld is not None}


def stride_params(fn: Function) -> Dict[str, str]:
    """Map from a stride parameter to the tensor whose batch stride it is."""
    return {p.tensor.stride: p.name for p in fn.tensors if p.tensor.stride is not None}


def layout_params(fn: Function) -> Dict[str, str]:
    """ld and stride parameters: sizes that describe a tensor's layout in
    memory, not one of its axes (no array shape gives them)."""
    out = ld_params(fn)
    out.update(stride_params(fn))
    return out


def inputs(fn: Function) -> List[Param]:
    return [p for p in fn.tensors if p.tensor.direction == "in"]


def outputs(fn: Function) -> List[Param]:
    """Tensors the kernel writes but does not read."""
    return [p for p in fn.tensors if p.tensor.direction == "out"]


def inouts(fn: Function) -> List[Param]:
    return [p for p in fn.tensors if p.tensor.direction == "inout"]


def eval_expr(e: Expr, dims: Dict[str, int], flags: Dict[str, bool]) -> int:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Dim):
        return dims[e.name]
    return eval_expr(e.then if flags[e.flag] else e.otherwise, dims, flags)


def shape_of(p: Param, dims: Dict[str, int], flags: Dict[str, bool]) -> Tuple[int, ...]:
    return tuple(eval_expr(e, dims, flags) for e in p.tensor.shape)


def required_len(p: Param, dims: Dict[str, int], flags: Dict[str, bool]) -> int:
    """Elements the buffer of tensor p must hold (see docs/annotations.md):
    0 when any axis is 0; else the extent of one item (the last two axes
    with ld: (rows - 1) * ld + cols; otherwise the product of the axes after
    the first when there is a stride, of all axes when there is none), and
    with stride(s) (count - 1) * s + item for the count of the first axis."""
    shape = shape_of(p, dims, flags)
    total = 1
    for d in shape:
        total *= d
    if total == 0:
        return 0
    t = p.tensor
    item_shape = shape[1:] if t.stride is not None else shape
    if t.ld is not None:
        rows, cols = item_shape
        item = (rows - 1) * dims[t.ld] + cols
    else:
        item = 1
        for d in item_shape:
            item *= d
    if t.stride is None:
        return item
    return (shape[0] - 1) * dims[t.stride] + item


def length_dims(fn: Function) -> Dict[str, List[str]]:
    """Dims a binding with 1-D arrays (Go slices, Rust slices, Java arrays)
    reads from an array's length: dim -> the tensors it can be read from,
    inputs first.

    The rule, shared by those bindings: a dim is derived when a tensor that is
    not nullable is 1-D with exactly that dim (not conditional).  The first
    tensor is the usual source; the others serve bindings that accept a null
    array for an empty tensor.
    """
    out: Dict[str, List[str]] = {}
    for dim, sources in dim_sources(fn).items():
        for s in sources:
            t = fn.param(s.tensor).tensor
            if s.when is None and len(t.shape) == 1 and not t.nullable:
                out.setdefault(dim, []).append(s.tensor)
    return out
