"""Python binding: a cffi API-mode extension plus generated wrappers.

Files (all under bindings/python, see docs/python.md):
  kernelbridge_build.py    cffi build script: the cdef (from the model) and
                           set_source compiling the library's C sources into
                           the extension kernelbridge._native, with one
                           fast-path shim per kernel (fast_shims)
  kernelbridge/_model.py   version, enums (Status, Backend), error classes
  kernelbridge/_capi.py    one thin function per non-kernel C function
                           (contexts, buffers, CUDA devices, versions) and
                           check(), the one place a failed status becomes a
                           typed exception with the library's message
  kernelbridge/_kernels.py one public function per kernel (its fast-path
                           spec, then its family's Python path)
  kernelbridge/__init__.py the package: version check, public names
  kernelbridge/__init__.pyi type stubs

Hand-written support code: src/fastcall.c (the fast path, the extension
kernelbridge._fastcall), kernelbridge/_runtime.py (argument coercion,
Context, Buffer), kernelbridge/_interop.py (__cuda_array_interface__ and
DLPack), kernelbridge/cuda.py (device queries), kernelbridge/_qtensor.py
(QTensor, the weights in storage formats; its quantize, dequantize, linear
and embedding replace the generated ones in the package, QTENSOR_NAMES).
The rules that turn a C kernel into a Python function are generic; they use
only the model and contracts.py:
  * in / inout tensors are positional, in C order; the single `out` tensor is
    the `out=` argument (several: `out=` takes a tuple);
  * size parameters come from the arrays' shapes (contracts.dim_sources), ld
    parameters from the row length of the contiguous array; a size no tensor
    determines is a required keyword argument; a size only an output or an
    optional input gives (linear_w's out_features, quantize's y_bytes) is a
    keyword argument that may be omitted when one of them is passed;
  * a u8 tensor (raw bytes) is a uint8 array of any shape or any buffer
    object (bytes, bytearray, memoryview, mmap); its size is the byte count
    its one annotated axis names;
  * flags and scalars are keyword arguments; their default is the header's
    default(...) annotation (a flag without one defaults to False, a scalar
    without one is required);
  * a nullable tensor is Optional; None passes NULL;
  * the only inout tensor of a kernel without outputs (gemm's C) may be
    omitted: a zero-filled array is allocated and returned;
  * a kernel whose tensors are all 1-D of one size is elementwise: arrays of
    any shape are accepted (all of the same shape) and results keep it;
  * a row-wise kernel (a dim named ROWS_DIM first in its tensors) takes any
    number of leading axes as rows; results keep them;
  * ld and stride parameters come from the numpy array's strides (views
    are passed as they are when the C API can describe them);
  * a dim only an optional tensor determines is its size, or 0 without it;
  * enum scalars take a member, an int or a member's name (a parameter may
    be named like a builtin, `type`: the generated code calls the builtin
    as _type);
  * a float32 kernel with _f16 / _bf16 variants of the same Python
    signature runs them for float16 / bfloat16 first tensors;
  * a tensor is a numpy array, a kernelbridge.Buffer or foreign memory
    (__cuda_array_interface__, __dlpack__); the common case (C-contiguous
    numpy arrays of the right dtypes on a CPU context) runs in C (fast_path,
    docs/python.md "Two paths per call"), every other case in the kernel
    family's generated Python path, which calls _runtime and also checks
    that memory and context are of the same kind;
  * a new output is a Buffer on the call's context when any tensor argument
    is a Buffer or foreign memory, a numpy array otherwise.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .. import contracts
from ..banner import banner
from ..model import Api, Cond, Const, Dim, Enum, Expr, Function, Param

NAME = "python"

ROOT = "bindings/python"
PKG = ROOT + "/kernelbridge"

# Compiler flags of the library sources: the same code generation as the
# Bazel build (tools/bazel/copts.bzl, KB_LIB_COPTS without the warnings), so
# results are bit-identical.  KB_STATIC_DEFINE keeps every kb_ symbol hidden
# inside the extension.
CFLAGS = [
    "-std=c99",
    "-D_POSIX_C_SOURCE=200809L",
    "-O2",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    "-ffp-contract=off",
    "-DKB_STATIC_DEFINE",
]

# Builtin exception each status error also derives from, so that ordinary
# `except ValueError` code catches bad arguments.  Statuses not listed derive
# from Error only.
BUILTIN_BASES = {
    "INVALID_ARGUMENT": "ValueError",
    "SHAPE_MISMATCH": "ValueError",
    "UNSUPPORTED": "NotImplementedError",
    "OUT_OF_MEMORY": "MemoryError",
}

# Libraries the extension links: libm for the kernels, libdl for the CUDA
# backend loader (core/src/cuda_loader.c dlopens libkernelbridge_cuda.so; the
# extension never links against CUDA).
LIBRARIES = ["m", "dl"]

# Per model dtype: the numpy dtype(s) the inline fast path accepts, the
# runtime's Kind (what the slow path accepts), the cffi array type of the C
# pointer and the dtype of a new output when no input tells.
_FAST_DTYPES = {
    "f32": ("_F32",),
    "i32": ("_I32",),
    "f16": ("_F16", "_U16"),
    "bf16": ("_U16", "_BF16"),
    "u8": ("_U8",),
}
_KIND = {"f32": "_K_F32", "i32": "_K_I32", "f16": "_K_F16", "bf16": "_K_BF16", "u8": "_K_U8"}
_DEFAULT_DTYPE = {"f32": "_F32", "i32": "_I32", "f16": "_F16", "bf16": "_U16", "u8": "_U8"}
_CFFI_ARRAY = {"f32": "_FA", "i32": "_IA", "f16": "_HA", "bf16": "_HA", "u8": "_BA"}
# Element types in docstrings, and the note a kernel with such tensors gets.
_DOC_DTYPE = {"f32": "float32", "i32": "int32", "f16": "float16", "bf16": "bfloat16", "u8": "uint8"}
_DOC_NOTE = {
    "f16": "float16 tensors: numpy float16 arrays, or uint16 arrays holding the bits.",
    "bf16": "bfloat16 tensors: uint16 arrays holding the bits (the upper half of a float32),\n"
    "or ml_dtypes.bfloat16 arrays when ml_dtypes is installed.",
    "u8": "Byte tensors: uint8 arrays of any shape (C-contiguous to be written), or any object\n"
    "exposing the buffer protocol (bytes, bytearray, memoryview, mmap), used in place;\n"
    "their size is the byte count.",
}
# Numpy scalar types of the stubs.
_STUB_DTYPE = {
    "f32": "np.float32",
    "i32": "np.int32",
    "f16": "Union[np.float16, np.uint16]",
    "bf16": "np.uint16",
    "u8": "np.uint8",
}

# Size of the buffer a binding passes for an `out string` parameter.
STRING_CAPACITY = 256
_PY_SCALAR = {
    "bool": "bool",
    "int32": "int",
    "int64": "int",
    "uint32": "int",
    "uint64": "int",
    "float32": "float",
    "float64": "float",
}


# --- names ----------------------------------------------------------------------


def _camel(words: str) -> str:
    return "".join(w.capitalize() for w in words.lower().split("_") if w)


def enum_class_name(e: Enum) -> str:
    """kb_status -> Status."""
    name = e.name[3:] if e.name.startswith("kb_") else e.name
    return _camel(name)


def member_name(e: Enum, value_name: str) -> str:
    """KB_STATUS_SHAPE_MISMATCH -> SHAPE_MISMATCH."""
    return value_name[len(e.prefix):]


def error_class_name(member: str) -> str:
    """SHAPE_MISMATCH -> ShapeMismatchError; DEVICE_ERROR -> DeviceError."""
    camel = _camel(member)
    return camel if camel.endswith("Error") else camel + "Error"


def py_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def _q(text: str) -> str:
    return repr(text)


def _docstring(text: str, indent: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.split("\n")
    body = "\n".join((indent + l) if l else "" for l in lines)
    return f'{indent}"""{body.lstrip()}\n{indent}"""\n'


# --- cdef ----------------------------------------------------------------------------


def cdef(api: Api) -> str:
    """The declarations cffi needs, from the model (never copied by hand)."""
    out = [f"#define KB_VERSION_NUMBER {api.version_number}"]
    for e in api.enums:
        vals = ",\n".join(f"  {v.name} = {v.value}" for v in e.values)
        out.append(f"typedef enum {e.name} {{\n{vals}\n}} {e.name};")
    for h in api.handles:
        out.append(f"typedef struct {h.name} {h.name};")
    for f in api.functions:
        params = ", ".join(f"{_c_decl(p.ctype.spelling, p.name)}" for p in f.params) or "void"
        out.append(f"{_c_decl(f.returns.spelling, f.name)}({params});")
    return "\n".join(out) + "\n"


def _py_literal(value: str) -> str:
    """A default(...) literal of the header as Python source."""
    return {"true": "True", "false": "False"}.get(value, value)


def _c_decl(spelling: str, name: str) -> str:
    spelling = spelling.replace("* *", "**")
    return f"{spelling}{name}" if spelling.endswith("*") else f"{spelling} {name}"


# --- build script ---------------------------------------------------------------


def build_script(api: Api) -> str:
    flags = "".join(f"    {_q(f)},\n" for f in CFLAGS)
    libs = ", ".join(_q(l) for l in LIBRARIES)
    return (
        banner("#")
        + f'''"""cffi build script of kernelbridge._native (API mode, out of line).

The extension compiles the C sources of the library into itself (static
linking): `import kernelbridge` needs no other shared library.  The sources
are the copies in csrc/ (made by tools/vendor_c.py; setup.py refreshes them
when it runs inside the kernelbridge repository).  KERNELBRIDGE_CSRC names
another directory holding them.  The CUDA backend (libkernelbridge_cuda.so)
is optional and loaded with dlopen when a CUDA context is asked for
($KB_CUDA_LIBRARY, the extension's directory, the system search path).
"""

import glob
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))

# The library's declarations, generated from {api.header} (version {api.version_string}).
CDEF = """
{cdef(api)}"""

# The fast path's shims (bindings/python/src/fastcall.c calls kernels through
# them): one per kernel whose contract fastcall.c covers.
FAST_CDEF = "uintptr_t kbpy_fast_shim(const char *key);"
FAST_SOURCE = """
#include <stdint.h>
#include <string.h>
#include "fastcall.h"
{fast_shims(api)}"""

# Same code generation as the Bazel build of the C library (bit-identical results).
CFLAGS = [
{flags}]


def csrc_dir():
    return os.environ.get("KERNELBRIDGE_CSRC") or os.path.join(HERE, "csrc")


def c_sources(csrc=None):
    csrc = csrc or csrc_dir()
    sources = sorted(glob.glob(os.path.join(csrc, "*.c")))
    if not sources:
        raise RuntimeError(
            "kernelbridge: no C sources in %s; run: python3 tools/vendor_c.py sync bindings/python/csrc" % csrc
        )
    # setuptools prefers paths relative to the setup directory.
    return [os.path.relpath(s) if not os.path.relpath(s).startswith("..") else s for s in sources]


def make_ffibuilder(csrc=None):
    csrc = csrc or csrc_dir()
    ffi = FFI()
    ffi.cdef(CDEF + FAST_CDEF)
    ffi.set_source(
        "kernelbridge._native",
        '#include "kernelbridge.h"\\n' + FAST_SOURCE,
        sources=c_sources(csrc),
        include_dirs=[csrc, os.path.join(HERE, "src")],
        extra_compile_args=CFLAGS,
        # libdl: the CUDA backend is loaded with dlopen at run time; the
        # extension itself never links against CUDA.
        libraries=[{libs}],
        extra_link_args=["-pthread"],
    )
    return ffi


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
'''
    )


# --- _model.py -----------------------------------------------------------------


def model_module(api: Api) -> str:
    st = api.status_enum
    lines = [
        banner("#"),
        '"""Version, enums and error classes of kernelbridge."""\n\n',
        "import enum\n\n",
        f"__version__ = {_q(api.version_string)}\n",
        "# KB_VERSION_NUMBER of the header this package was generated from.\n",
        f"VERSION_NUMBER = {api.version_number}\n",
        f"VERSION = {tuple(api.version)!r}\n\n",
    ]
    for e in api.enums:
        lines.append(f"\nclass {enum_class_name(e)}(enum.IntEnum):\n")
        lines.append(_docstring(e.doc, "    "))
        for v in e.values:
            lines.append(f"\n    {member_name(e, v.name)} = {v.value}\n")
            if v.doc:
                lines.append(_docstring(v.doc, "    "))
        lines.append("\n")
    lines.append(
        '''
class Error(Exception):
    """A kernelbridge call failed.

    `status` is the Status code, `message` the library's description.  Each
    status code has its own subclass (see ERRORS); errors about arguments are
    also ValueError (TypeError for a wrong dtype).
    """

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            try:
                self.status = Status(status)
            except ValueError:
                self.status = status

'''
    )
    names = []
    for v in st.values:
        member = member_name(st, v.name)
        if v.value == 0:
            continue
        cls = error_class_name(member)
        names.append((v.value, member, cls))
        bases = "Error" + (", " + BUILTIN_BASES[member] if member in BUILTIN_BASES else "")
        lines.append(f"\nclass {cls}({bases}):\n")
        lines.append(_docstring(f"Status.{member}: {v.doc}", "    "))
        lines.append(f"\n    status = Status.{member}\n\n")
    lines.append("\n# Error class of each failing status code.\nERRORS = {\n")
    for value, member, cls in names:
        lines.append(f"    {value}: {cls},\n")
    lines.append("}\n\n__all__ = [\n")
    exported = ["VERSION", "VERSION_NUMBER", "Error"] + [enum_class_name(e) for e in api.enums] + [c for _, _, c in names]
    for n in exported:
        lines.append(f"    {_q(n)},\n")
    lines.append("]\n")
    return "".join(lines)


def error_names(api: Api) -> List[str]:
    st = api.status_enum
    return [error_class_name(member_name(st, v.name)) for v in st.values if v.value != 0]


# --- kernels --------------------------------------------------------------------


class _Kernel:
    """The Python shape of one C kernel (see the module docstring)."""

    def __init__(self, fn: Function, half: Optional[Dict[str, str]] = None, api: Optional[Api] = None):
        self.fn = fn
        self.api = api
        self.name = fn.short_name
        self.tensors = fn.tensors
        self.outs = contracts.outputs(fn)
        self.inouts = contracts.inouts(fn)
        self.dims = [p.name for p in fn.dims]
        # ld and stride parameters come from the arrays' layouts (numpy strides).
        self.lds = contracts.layout_params(fn)
        self.strided = {p.name for p in self.tensors if p.tensor.ld is not None or p.tensor.stride is not None}
        # dtype -> Python name of the 16-bit variant this kernel dispatches to.
        self.half = dict(half or {})
        # u8 tensors (raw bytes): any shape or buffer object, its size the one
        # annotated axis (a byte count).
        self.bytes = {p.name for p in self.tensors if p.tensor.dtype == "u8"}
        for p in self.tensors:
            t = p.tensor
            if p.name in self.bytes and (len(t.shape) != 1 or t.direction == "inout" or t.ld or t.stride):
                raise SystemExit(f"kbgen python: {fn.name}: u8 tensor {p.name} must be a 1-D in or out tensor")
        shapes = {p.tensor.shape for p in self.tensors}
        self.elementwise = (
            len(shapes) == 1
            and all(len(p.tensor.shape) == 1 and isinstance(p.tensor.shape[0], Dim) for p in self.tensors)
            and not self.lds
            and not self.bytes
        )
        # Row-wise kernels: tensors whose first axis is the dim ROWS_DIM take
        # any number of leading axes (docs/annotations.md, "rows").
        self.row_tensors: Dict[str, int] = {}  # tensor -> annotated rank
        self.lead: Optional[str] = None  # the input whose leading axes decide them
        if not self.elementwise:
            self._find_rows()
        self.optional_inout: Optional[str] = None
        if not self.outs and len(self.inouts) == 1 and self.inouts[0] is self.tensors[-1]:
            p = self.inouts[0]
            if all(self._derivable(d, exclude=p.name) for d in _expr_dims(p.tensor.shape)):
                self.optional_inout = p.name
        # Python names of the out tensors.
        if len(self.outs) == 1:
            self.out_names = {self.outs[0].name: "out"}
        else:
            self.out_names = {p.name: p.name for p in self.outs}
        self.dim_expr: Dict[str, Optional[str]] = {}
        self.trivial: set = set()  # (tensor, axis) used as an unconditional source
        # Sizes only an output or an optional input gives (linear_w's
        # out_features, quantize's y_bytes): keyword arguments that may be
        # omitted when one of those is given.  dim -> its sources.
        self.optional_dims: Dict[str, List[contracts.Source]] = {}
        self._resolve_dims()
        # Every dim in some tensor's shape (a size keyword used in one is checked).
        self.shape_dims = {d for p in self.tensors for d in _expr_dims(p.tensor.shape)}

    def _find_rows(self):
        fn = self.fn
        if ROWS_DIM not in self.dims:
            return
        users = [p for p in self.tensors if ROWS_DIM in _expr_dims(p.tensor.shape)]
        for p in users:
            t = p.tensor
            first = t.shape[0]
            if not (isinstance(first, Dim) and first.name == ROWS_DIM) or ROWS_DIM in _expr_dims(t.shape[1:]):
                return  # rows used otherwise: no leading-axes rule
            if t.ld is not None or t.stride is not None:
                return
        lead = [p for p in users if len(p.tensor.shape) >= 2 and p.tensor.direction != "out" and not p.tensor.nullable]
        if not lead:
            return
        self.lead = lead[0].name
        self.row_tensors = {p.name: len(p.tensor.shape) for p in users}

    # Tensors always given by the caller, usable as size sources.
    def _available(self, name: str, exclude: Optional[str] = None) -> bool:
        p = self.fn.param(name)
        t = p.tensor
        if name == exclude or t.nullable or t.direction == "out":
            return False
        return name != self.optional_inout

    def _derivable(self, dim: str, exclude: Optional[str] = None) -> bool:
        for s in contracts.dim_sources(self.fn).get(dim, []):
            if self._available(s.tensor, exclude):
                return True
        return False

    def _axis_ref(self, tensor: str, axis: int) -> str:
        """Python expression of axis `axis` of tensor `tensor` as annotated."""
        n = self.row_tensors.get(tensor)
        if n is not None:
            if axis == 0:
                return "_rows"
            return f"_t_{tensor}.shape[{axis - n}]"
        return f"_t_{tensor}.shape[{axis}]"

    def _resolve_dims(self):
        sources = contracts.dim_sources(self.fn)
        for d in self.dims:
            if d in self.lds:
                continue
            expr = None
            if self.elementwise:
                first = next(p for p in self.tensors if self._available(p.name))
                expr = f"_t_{first.name}.size"
            else:
                branch: Dict[str, Dict[bool, str]] = {}
                for s in sources.get(d, []):
                    if not self._available(s.tensor):
                        continue
                    ref = self._axis_ref(s.tensor, s.axis)
                    if s.when is None:
                        expr = ref
                        self.trivial.add((s.tensor, s.axis))
                        break
                    b = branch.setdefault(s.when, {})
                    b.setdefault(bool(s.value), ref)
                    if len(b) == 2:
                        expr = f"({b[True]} if {py_name(s.when)} else {b[False]})"
                        break
                uncond = [s for s in sources.get(d, []) if s.when is None]
                optional_in = [s for s in uncond if self.fn.param(s.tensor).tensor.nullable
                               and self.fn.param(s.tensor).tensor.direction != "out"]
                outs = [s for s in uncond if self.fn.param(s.tensor).tensor.direction == "out"]
                uncond = optional_in + outs
                if expr is None and optional_in and not outs:
                    # Only optional inputs have it (attention_ex's mask
                    # dims): their shape when given, else 0 (C ignores the
                    # sizes of an absent tensor).
                    s = optional_in[0]
                    expr = f"({self._axis_ref(s.tensor, s.axis)} if _t_{s.tensor} is not None else 0)"
                elif expr is None and uncond:
                    # An output has it too: the size is real even when the
                    # optional inputs are absent (linear_w's out_features).
                    self.optional_dims[d] = uncond
            self.dim_expr[d] = expr

    @property
    def arg_dims(self) -> List[str]:
        """Size parameters the caller passes (no tensor determines them)."""
        return [d for d in self.dims if d not in self.lds and self.dim_expr[d] is None]

    def shape_code(self, p: Param) -> str:
        if self.elementwise:
            return "_shape"
        shape = p.tensor.shape
        if p.name in self.row_tensors:
            parts = [_expr_code(e) for e in shape[1:]]
            if not parts:
                return "_lead"
            return "_lead + (" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        parts = [_expr_code(e) for e in shape]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def forward_args(self) -> str:
        """The arguments of this call, passed on to a variant with the same
        Python signature (the 16-bit kernels)."""
        args = [name for name, _ in self.positional()]
        args += [f"{py_name(p.name)}={py_name(p.name)}" for p, _ in self.keywords()]
        args.append("ctx=ctx")
        return ", ".join(args)

    def ndim_code(self, p: Param):
        """What the inline test and the runtime accept as the number of
        dimensions: an exact count, -1 (any: elementwise, or a row tensor
        checked by its shape), or (k,) for at least k (the lead tensor)."""
        if self.elementwise:
            return -1
        if p.name in self.bytes:
            return 1  # the runtime makes byte tensors one axis of bytes
        if p.name == self.lead:
            return (len(p.tensor.shape) - 1,)
        if p.name in self.row_tensors:
            return -1
        return len(p.tensor.shape)

    def positional(self) -> List[Tuple[str, Optional[str]]]:
        """(python name, default or None) of the positional parameters."""
        params = [p for p in self.tensors if p.tensor.direction != "out"]
        res: List[Tuple[str, Optional[str]]] = []
        for p in params:
            optional = p.tensor.nullable or p.name == self.optional_inout
            res.append((py_name(p.name), "None" if optional else None))
        # A default is only possible when every later parameter has one.
        seen_required = False
        for i in range(len(res) - 1, -1, -1):
            if res[i][1] is None:
                seen_required = True
            elif seen_required:
                res[i] = (res[i][0], None)
        if self.outs:
            res.append(("out", "None"))
        return res

    def keywords(self) -> List[Tuple[Param, Optional[str]]]:
        res = []
        for p in self.fn.params:
            if p.role == "flag":
                res.append((p, _py_literal(p.default or "false")))
            elif p.role == "scalar" and p.ctype.kind == "enum":
                res.append((p, None if p.default is None else _enum_default(self.api, p)))
            elif p.role == "scalar":
                res.append((p, None if p.default is None else _py_literal(p.default)))
            elif p.role == "dim" and p.name in self.arg_dims:
                res.append((p, "None" if p.name in self.optional_dims else None))
        # Required keywords first is not needed for keyword-only arguments.
        return res

    def optional_sources(self, d: str) -> List[Tuple[str, str, int, object]]:
        """(label in messages, tensor, axis, ndim_code) of the tensors an
        omitted size d is read from, optional inputs first.  Row tensors
        count their axes from the end (their leading axes vary)."""
        res = []
        for s in self.optional_dims[d]:
            p = self.fn.param(s.tensor)
            label = py_name(p.name)
            if p.tensor.direction == "out":
                label = self.out_names[p.name] if len(self.outs) == 1 else f"out[{self.outs.index(p)}]"
            n = self.row_tensors.get(p.name)
            if n is not None:
                res.append((label, p.name, s.axis - n, (n - 1,)))
            else:
                res.append((label, p.name, s.axis, self.ndim_code(p)))
        return res

    @property
    def early_outs(self) -> bool:
        """True when an omitted size is read from a given output: outputs
        are then resolved before the sizes and checked after them."""
        return any(self.fn.param(s.tensor).tensor.direction == "out" for v in self.optional_dims.values() for s in v)


# The dim of row-wise kernels: a tensor whose first axis is `rows` (and that
# uses it nowhere else) accepts any number of leading axes, whose product is
# rows (docs/annotations.md).
ROWS_DIM = "rows"


def _enum_default(api: Api, p: Param) -> str:
    """Python source of an enum parameter's default: _model.Activation.NONE."""
    e = api.enum(p.ctype.name)
    return f"_model.{enum_class_name(e)}.{member_name(e, p.default)}"


def _expr_dims(shape) -> List[str]:
    names = []
    for e in shape:
        if isinstance(e, Dim):
            names.append(e.name)
        elif isinstance(e, Cond):
            names += _expr_dims((e.then, e.otherwise))
    return names


def _expr_code(e: Expr) -> str:
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Dim):
        return e.name
    return f"({_expr_code(e.then)} if {py_name(e.flag)} else {_expr_code(e.otherwise)})"


def _shape_doc(p: Param, elementwise: bool, rows: bool = False) -> str:
    t = p.tensor
    if t.dtype == "u8":
        return f"bytes ({t.shape[0]}: their count)"
    if elementwise:
        return f"{_DOC_DTYPE[t.dtype]} array of any shape"
    if rows:
        rest = [str(e) for e in t.shape[1:]]
        return f"{_DOC_DTYPE[t.dtype]}[" + ", ".join(["..."] + rest) + f"] (leading axes: the {ROWS_DIM})"
    if t.ld is not None or t.stride is not None:
        return f"{_DOC_DTYPE[t.dtype]}{t.shape_str()} (any layout with unit stride along the last axis)"
    return f"{_DOC_DTYPE[t.dtype]}{t.shape_str()}"


def kernel_doc(k: _Kernel) -> str:
    fn = k.fn
    lines = [fn.doc, "", "Arguments (sizes are taken from the arrays' shapes):"]
    for p in fn.params:
        if p.role == "context":
            continue
        name = py_name(p.name)
        if p.role == "tensor":
            t = p.tensor
            extra = []
            if t.direction == "inout":
                extra.append("read and updated in place")
            if t.nullable:
                extra.append("may be None")
            if p.name == k.optional_inout:
                extra.append("None: a new zero-filled array")
            if t.direction == "out":
                name = k.out_names[p.name]
                if len(k.outs) > 1:
                    name = f"out[{k.outs.index(p)}] ({p.name})"
                elif name != p.name:
                    name = f"out ({p.name})"
                extra.append("new array when None")
            if t.aliases:
                extra.append("may be the same array as " + " or ".join(py_name(a) for a in t.aliases))
            shape_doc = _shape_doc(p, k.elementwise, p.name in k.row_tensors)
            lines.append(f"  {name}: {t.direction} {shape_doc}" + ("; " + "; ".join(extra) if extra else ""))
        elif p.role == "flag":
            lines.append(f"  {name}: bool, default {_py_literal(p.default or 'false')}")
        elif p.role == "scalar" and p.ctype.kind == "enum" and k.api is not None:
            e = k.api.enum(p.ctype.name)
            names = ", ".join(repr(member_name(e, v.name).lower()) for v in e.values)
            default = "" if p.default is None else f", default {enum_class_name(e)}.{member_name(e, p.default)}"
            lines.append(f"  {name}: {enum_class_name(e)}, its value, or its name ({names}){default}")
        elif p.role == "scalar":
            default = "" if p.default is None else f", default {_py_literal(p.default)}"
            lines.append(f"  {name}: {_scalar_type(p)}{default}")
        elif p.role == "dim" and p.name in k.optional_dims:
            given = " or ".join(label for label, _, _, _ in k.optional_sources(p.name))
            lines.append(f"  {name}: int (size), default None: taken from {given} (no other array determines it)")
        elif p.role == "dim" and p.name in k.arg_dims:
            lines.append(f"  {name}: int (size; no array determines it)")
    lines.append("  ctx: Context, default: the calling thread's default (CPU) context")
    if k.half:
        variants = " and ".join(f"{'float16' if dt == 'f16' else 'bfloat16'} arrays run {n}" for dt, n in sorted(k.half.items()))
        # Only float outputs follow the input's dtype (argmax and the
        # samplers return int32 whatever the logits).
        if any(p.tensor.dtype == "f32" for p in k.outs + k.inouts):
            lines.append(f"Dtypes: float32 arrays run this kernel; {variants} (the result has their dtype).")
        else:
            lines.append(f"Dtypes: float32 arrays run this kernel; {variants}.")
    for dtype in sorted({p.tensor.dtype for p in k.tensors}):
        if dtype in _DOC_NOTE:
            lines.append(_DOC_NOTE[dtype])
    lines.append("Arrays: numpy arrays, kernelbridge.Buffer objects, or objects exposing")
    lines.append("__cuda_array_interface__ or __dlpack__, in memory of the context's kind.")
    new = "a Buffer on ctx when a tensor argument\nis a Buffer or foreign memory, else a numpy array"
    if k.outs:
        what = " and ".join(k.out_names[p.name] if len(k.outs) == 1 else p.name for p in k.outs)
        lines.append(
            f"Returns {'the tuple ' if len(k.outs) > 1 else ''}{what}: the objects passed as out, "
            f"or new ones ({new})."
        )
    elif k.optional_inout:
        lines.append(f"Returns {k.optional_inout} (when omitted, a new zero-filled one: {new}).")
    else:
        lines.append("Returns None; the inout arrays hold the results.")
    lines.append(f"C function: {fn.name}.")
    return "\n".join(lines)


def _scalar_type(p: Param) -> str:
    if p.ctype.kind == "enum":
        return "int"
    return _PY_SCALAR[p.ctype.kind]


# --- the fast path (bindings/python/src/fastcall.c) ------------------------------

# Codes of the spec fastcall.c reads (its header comment has the format).
_FAST_KIND = {"f32": 0, "i32": 1, "f16": 2, "bf16": 3, "u8": 4}
_FAST_DIRECTION = {"in": 0, "out": 1, "inout": 2}
_FAST_SCALAR = {"float32": "f", "float64": "d", "int32": "i", "int64": "l", "uint64": "u", "bool": "b", "enum": "e"}
# The kbpy_arg member a shim reads for each parameter type code.
_SHIM_MEMBER = {"c": "p", "n": "i", "t": "p", "f": "f", "d": "d", "i": "i32", "l": "i", "u": "u", "b": "i32", "e": "i32"}


@dataclass
class FastPath:
    key: str  # C function name / parameter type codes: a stale extension finds no shim
    spec: str  # Python literal of the spec tuple
    shim: str  # C function name of the shim


def _scalar_code(p: Param) -> Optional[str]:
    if p.role == "flag":
        return "b"
    return _FAST_SCALAR.get("enum" if p.ctype.kind == "enum" else p.ctype.kind)


def fast_path(k: "_Kernel") -> Optional[FastPath]:
    """The fast-path spec of kernel k, or None when fastcall.c's rules do not
    cover its contract (a scalar type it has no code for): such kernels
    always take the Python path."""
    fn = k.fn
    sources = contracts.dim_sources(fn)
    argdims = k.arg_dims
    absent_zero = []
    for d in k.dims:
        if d in k.lds or d in argdims or any(k._available(s.tensor) for s in sources.get(d, [])):
            continue
        if any(s.when is None and fn.param(s.tensor).tensor.nullable for s in sources.get(d, [])):
            absent_zero.append(d)  # only an omitted tensor has it: 0, as in the Python path
            continue
        return None
    dim_index = {d: i for i, d in enumerate(k.dims)}
    order = [p for p in k.tensors if p.tensor.direction != "out"] + list(k.outs)
    tensor_index = {p.name: i for i, p in enumerate(order)}
    keywords = [p for p, _ in k.keywords()]
    scalar_index = {p.name: i for i, p in enumerate(keywords)}

    def item(e):
        if isinstance(e, Dim):
            return dim_index[e.name]
        if isinstance(e, Const):
            return -1 - e.value
        return (scalar_index[e.flag], item(e.then), item(e.otherwise))

    tensors = []
    for p in order:
        t = p.tensor
        axes = tuple(item(e) for e in t.shape)
        if k.elementwise:
            rule = 1
        elif p.name in k.bytes:
            rule = 4  # any shape, axes[0] its size
        elif p.name == k.lead:
            rule = 2
        elif p.name in k.row_tensors:
            rule = 3
            if order.index(p) < order.index(fn.param(k.lead)):
                return None  # fastcall.c needs the lead tensor first
        else:
            rule = 0
        nullable = 2 if p.name == k.optional_inout else int(t.nullable)
        source = -1
        if (t.direction == "out" or nullable == 2) and len(_FAST_DTYPES[t.dtype]) > 1:
            for q in order:
                if q is not p and q.tensor.dtype == t.dtype and q.tensor.direction != "out" and k._available(q.name):
                    source = tensor_index[q.name]
                    break
        tensors.append((_FAST_KIND[t.dtype], _FAST_DIRECTION[t.direction], nullable, rule, axes, source))
    lds = contracts.ld_params(fn)
    strides = contracts.stride_params(fn)
    params = []
    codes = ""
    for p in fn.params:
        if p.role == "context":
            params.append((0, 0, "c"))
        elif p.role == "dim" and p.name in lds:
            params.append((4, tensor_index[lds[p.name]], "n"))
        elif p.role == "dim" and p.name in strides:
            params.append((5, tensor_index[strides[p.name]], "n"))
        elif p.role == "dim":
            params.append((1, dim_index[p.name], "n"))
        elif p.role == "tensor":
            params.append((2, tensor_index[p.name], "t"))
        else:
            code = _scalar_code(p)
            if code is None:
                return None
            params.append((3, scalar_index[p.name], code))
        codes += params[-1][2]
    seeds = tuple((scalar_index[d], dim_index[d]) for d in argdims)
    packed = len(k.outs) if len(k.outs) > 1 else 0  # passed as one tuple, `out`
    if packed:
        result = -1
    elif k.outs:
        result = tensor_index[k.outs[0].name]
    elif k.optional_inout:
        result = tensor_index[k.optional_inout]
    else:
        result = -1
    spec = repr((fn.short_name, tuple(tensors), tuple(params), len(k.dims), len(keywords), seeds, result,
                 tuple(dim_index[d] for d in absent_zero), packed))
    # An enum parameter takes a plain int or a member of its own class (the
    # Python path converts and checks anything else).
    for p in fn.params:
        if p.role == "scalar" and p.ctype.kind == "enum" and k.api is not None:
            cls = enum_class_name(k.api.enum(p.ctype.name))
            spec = spec.replace(f"(3, {scalar_index[p.name]}, 'e')", f"(3, {scalar_index[p.name]}, _model.{cls})")
    return FastPath(f"{fn.name}/{codes}", spec, f"kbpy_fast_{fn.name}")


def fast_shims(api: Api) -> str:
    """C of the shims: one per kernel with a fast path, all of type kbpy_shim,
    and kbpy_fast_shim(key) that finds one (0 for an unknown key)."""
    half = _half_variants(api)
    lines = []
    table = []
    for fn in api.kernels:
        fp = fast_path(_Kernel(fn, half.get(fn.name), api))
        if fp is None:
            continue
        codes = fp.key.split("/")[1]
        args = ", ".join(f"a[{i}].{_SHIM_MEMBER[c]}" for i, c in enumerate(codes))
        lines.append(f"static int {fp.shim}(const kbpy_arg *a) {{ return (int){fn.name}({args}); }}")
        table.append(f'    {{"{fp.key}", {fp.shim}}},')
    return (
        "\n".join(lines)
        + "\nstatic const struct { const char *key; kbpy_shim shim; } kbpy_fast_shims[] = {\n"
        + "\n".join(table)
        + "\n};\n"
        + "uintptr_t kbpy_fast_shim(const char *key) {\n"
        + "  for (size_t i = 0; i < sizeof kbpy_fast_shims / sizeof kbpy_fast_shims[0]; i++)\n"
        + "    if (strcmp(kbpy_fast_shims[i].key, key) == 0) return (uintptr_t)kbpy_fast_shims[i].shim;\n"
        + "  return 0;\n}\n"
    )


def _varying(k: _Kernel, variants: List[_Kernel]) -> set:
    """Tensors of k whose dtype differs in some 16-bit variant (the rest, such
    as int32 ids, are the same in the whole family)."""
    out = set()
    for v in variants:
        for p, q in zip(k.tensors, v.tensors):
            if p.tensor.dtype != q.tensor.dtype:
                out.add(p.name)
    return out


def variant_record(k: _Kernel, half: Dict[str, str]) -> str:
    """The _Variant a public function hands its Python path: its name, C
    function, the kind / cffi array / new-array dtype of its varying tensors,
    and (float32 only) the 16-bit functions other dtypes go to."""
    dt = next((p.tensor.dtype for p in k.tensors if p.tensor.dtype not in ("i32",)), "f32")
    pairs = ", ".join(f"{_q(d)}: {_q(n)}" for d, n in sorted(half.items()))
    return (
        f"_Variant({_q(k.name)}, _lib.{k.fn.name}, {_KIND[dt]}, {_CFFI_ARRAY[dt]}, {_DEFAULT_DTYPE[dt]}, "
        f"{{{pairs}}})"
    )


def path_code(k: _Kernel, path: str, varying: set, what: str) -> str:
    """The Python path of kernel k and its variants: every kind of argument
    (numpy arrays of any layout, Buffers, foreign memory), every error.  The
    kernel-specific parts of a variant come from _v (a _Variant)."""
    fn = k.fn
    w = []
    add = w.append
    pos = k.positional()
    kws = k.keywords()
    params = ["_v"] + [n for n, _ in pos] + [py_name(p.name) for p, _ in kws] + ["ctx"]

    def kind(p):
        return "_kind" if p.name in varying else _KIND[p.tensor.dtype]

    def array(p):
        return "_array" if p.name in varying else _CFFI_ARRAY[p.tensor.dtype]

    add("_name, _c, _kind, _array, _dtype, _halfs = _v")
    add("if ctx is None:")
    add("    _ctxp = _default_ptr()")
    add("else:")
    add("    _ctxp = ctx._ptr")
    add("    if _ctxp is None:")
    add("        _closed(_name)")
    for p in fn.params:
        if p.role == "flag":
            add(f"{py_name(p.name)} = bool({py_name(p.name)})")
        elif p.role == "scalar" and p.ctype.kind == "enum" and k.api is not None:
            # An enum member, its value, or its name as a string ("gelu").
            n = py_name(p.name)
            cls = enum_class_name(k.api.enum(p.ctype.name))
            # Ints the C enum cannot hold (cffi would raise OverflowError) too:
            # an enum without negative values is unsigned in cffi.
            lo = "0" if min(v.value for v in k.api.enum(p.ctype.name).values) >= 0 else "-0x80000000"
            add(f"if _type({n}) is not int or not {lo} <= {n} <= 0x7FFFFFFF:")
            add(f"    {n} = _enum_arg(_model.{cls}, {n}, {_q(n)}, _name)")
    forward = k.forward_args()
    given = []  # _t_ names of the tensors the caller passes (they decide a new output's kind)
    # The array whose dtype picks the 16-bit variant: the first input whose
    # dtype varies (rope_ex's int32 positions come before q).
    first_input = next((p.name for p in k.tensors if p.tensor.direction != "out" and p.name in varying),
                       next((p.name for p in k.tensors if p.tensor.direction != "out"), None))
    for p in k.tensors:
        t = p.tensor
        if t.direction == "out":
            continue
        name = py_name(p.name)
        ndim = k.ndim_code(p)
        ind = ""
        if t.nullable or p.name == k.optional_inout:
            add(f"if {name} is None:")
            add(f"    _t_{p.name} = None")
            if t.nullable and t.direction == "inout" and p.name != k.optional_inout and p.name not in k.strided:
                add(f"    _b_{p.name} = None")  # nothing to copy back (a nullable inout: rope_ex's k)
            add("else:")
            ind = "    "
        if p.name == first_input and varying:
            # float16 / bfloat16 arrays run the 16-bit variant (same dtype out).
            add(f"{ind}if _halfs:")
            add(f"{ind}    _h = _half({name})")
            add(f"{ind}    if _h in _halfs:")
            add(f"{ind}        return _PUBLIC[_halfs[_h]]({forward})")
        if p.name in k.strided:
            # Row and batch strides come from the array's layout.
            if t.direction == "in":
                add(f"{ind}_t_{p.name}, _ld_{p.name}, _st_{p.name}, _ = _strided_in({name}, {kind(p)}, {_q(name)}, _name, {ndim})")
            else:
                add(f"{ind}_t_{p.name}, _b_{p.name}, _ld_{p.name}, _st_{p.name}, _ = _strided_inout({name}, {kind(p)}, {_q(name)}, _name, {ndim})")
        elif p.name in k.bytes:
            add(f"{ind}_t_{p.name} = _bytes_in({name}, {_q(name)}, _name)")
        elif t.direction == "in":
            add(f"{ind}_t_{p.name} = _in({name}, {kind(p)}, {_q(name)}, _name, {ndim!r})")
        else:
            add(f"{ind}_t_{p.name}, _b_{p.name} = _inout({name}, {kind(p)}, {_q(name)}, _name, {ndim!r})")
        given.append(f"_t_{p.name}")
    given_tuple = "(" + ", ".join(given) + ("," if len(given) == 1 else "") + ")"

    def new_dtype(p):
        """A new output's (or omitted inout's) dtype: a given input's of the
        same dtype when the dtype has several numpy spellings."""
        dtype = p.tensor.dtype
        if p.name in varying or len(_FAST_DTYPES[dtype]) > 1:
            for q in k.tensors:
                if q is p or q.tensor.dtype != dtype or q.tensor.direction == "out" or not k._available(q.name):
                    continue
                return f"_t_{q.name}.dtype"
            return "_dtype" if p.name in varying else _DEFAULT_DTYPE[dtype]
        return _DEFAULT_DTYPE[dtype]

    # Sizes.
    if k.elementwise:
        first = next(p for p in k.tensors if k._available(p.name))
        add(f"_shape = _t_{first.name}.shape")
    if k.lead is not None:
        inner = k.row_tensors[k.lead] - 1
        add(f"_lead = _t_{k.lead}.shape[:len(_t_{k.lead}.shape) - {inner}]")
        add("_rows = _prod(_lead)")
    for d in k.dims:
        if d in k.lds or k.dim_expr[d] is None:
            continue
        add(f"{d} = {k.dim_expr[d]}")
    multi = len(k.outs) > 1
    labels: Dict[str, str] = {}  # tensor -> its name in messages
    for i, p in enumerate(k.outs):
        labels[p.name] = f"out[{i}]" if multi else "out"

    def out_tuple():
        add("if out is None:")
        add(f"    out = (None,) * {len(k.outs)}")
        add(f"elif _type(out) is not tuple or len(out) != {len(k.outs)}:")
        add(f"    _out_tuple_error(_name, {len(k.outs)}, out)")

    if k.early_outs:
        # Given outputs first: an omitted size is read from them.
        if multi:
            out_tuple()
        for p in k.outs:
            src = labels[p.name]
            add(f"if {src} is None:")
            add(f"    _t_{p.name} = _b_{p.name} = None")
            add("else:")
            if p.name in k.bytes:
                add(f"    _t_{p.name}, _b_{p.name} = _bytes_out({src}, {_q(src)}, _name, None)")
            else:
                add(f"    _t_{p.name}, _b_{p.name} = _out({src}, {kind(p)}, {_q(src)}, _name, None)")
    for d in k.arg_dims:
        if d in k.optional_dims:
            srcs = "".join(f"({_q(l)}, _t_{t}, {a}, {n!r}), " for l, t, a, n in k.optional_sources(d))
            add(f"if {d} is None:")
            add(f"    {d} = _given_size(_name, {_q(d)}, ({srcs.rstrip()}))")
            add("else:")
            add(f"    {d} = _size_arg({d}, {_q(d)}, _name)")
        elif d in k.shape_dims:
            add(f"{d} = _size_arg({d}, {_q(d)}, _name)")
    # Shape checks of the given tensors.
    for p in k.tensors:
        t = p.tensor
        if t.direction == "out":
            continue
        if not k.elementwise and all(
            isinstance(e, Dim) and (p.name, i) in k.trivial for i, e in enumerate(t.shape)
        ):
            continue
        if k.elementwise and p is next(q for q in k.tensors if k._available(q.name)):
            continue
        guard = ""
        if t.nullable or p.name == k.optional_inout:
            guard = f"_t_{p.name} is not None and "
        add(f"if {guard}_t_{p.name}.shape != {k.shape_code(p)}:")
        add(f"    _shape_error(_name, {_q(py_name(p.name))}, _t_{p.name}.shape, {k.shape_code(p)})")
    if k.optional_inout:
        p = fn.param(k.optional_inout)
        add(f"if _t_{p.name} is None:")
        add(f"    _t_{p.name} = _new(ctx, {k.shape_code(p)}, {new_dtype(p)}, {given_tuple}, True)")
        add(f"    _b_{p.name} = None")
        if p.name in k.strided:
            add(f"    _ld_{p.name}, _st_{p.name} = _dense_layout(_t_{p.name}.shape)")
    # Outputs.
    if k.early_outs:
        for p in k.outs:
            src, shape = labels[p.name], k.shape_code(p)
            add(f"if _t_{p.name} is None:")
            add(f"    _t_{p.name} = _new(ctx, {shape}, {new_dtype(p)}, {given_tuple})")
            if p.name in k.bytes:
                count = _expr_code(p.tensor.shape[0])
                add(f"elif _t_{p.name}.shape[0] != {count}:")
                add(f"    _bytes_error(_name, {_q(src)}, _t_{p.name}.shape[0], {count})")
            else:
                add(f"elif _t_{p.name}.shape != {shape}:")
                add(f"    _shape_error(_name, {_q(src)}, _t_{p.name}.shape, {shape})")
    elif k.outs:
        if multi:
            out_tuple()
        for p in k.outs:
            src, shape = labels[p.name], k.shape_code(p)
            add(f"if {src} is None:")
            add(f"    _t_{p.name}, _b_{p.name} = _new(ctx, {shape}, {new_dtype(p)}, {given_tuple}), None")
            add("else:")
            if p.name in k.bytes:
                count = _expr_code(p.tensor.shape[0])
                add(f"    _t_{p.name}, _b_{p.name} = _bytes_out({src}, {_q(src)}, _name, {count})")
            else:
                add(f"    _t_{p.name}, _b_{p.name} = _out({src}, {kind(p)}, {_q(src)}, _name, {shape})")
    # ld and stride parameters: the layouts the arrays have.
    for p in k.tensors:
        if p.name not in k.strided:
            continue
        if p.tensor.ld is not None:
            add(f"{p.tensor.ld} = _ld_{p.name}")
        if p.tensor.stride is not None:
            add(f"{p.tensor.stride} = _st_{p.name}")
    # The call: every pointer is checked against the context's kind, and
    # overlap of arrays Python copied (which the library cannot see) is
    # checked on the caller's arrays.
    add("_dev = -1 if ctx is None else ctx._device")
    args = []
    for p in fn.params:
        if p.role == "context":
            args.append("_ctxp")
        elif p.role == "tensor":
            t = p.tensor
            label = labels.get(p.name, py_name(p.name))
            ptr = f"_ptr(_t_{p.name}, {array(p)}, {t.direction != 'in'}, {_q(label)}, _name, _dev)"
            if t.nullable or p.name == k.optional_inout:
                ptr = f"_NULL if _t_{p.name} is None else {ptr}"
            add(f"_p_{p.name} = {ptr}")
            args.append(f"_p_{p.name}")
        else:
            args.append(py_name(p.name))
    if any(p.tensor.direction != "in" for p in k.tensors):
        items = []
        for p in k.tensors:
            t = p.tensor
            obj = labels.get(p.name, py_name(p.name))
            items.append(f"({_q(obj)}, {obj}, _t_{p.name}, {t.direction != 'in'}, {tuple(py_name(a) for a in t.aliases)!r})")
        add(f"_overlaps(_name, ({', '.join(items)},))")
    add(f"_st = _c({', '.join(args)})")
    add("if _st:")
    add("    _check(_st, _name, _ctxp)")
    for p in k.tensors:
        if p.tensor.direction == "in":
            continue
        add(f"if _b_{p.name} is not None:")
        add(f"    _copyto(_b_{p.name}, _t_{p.name})")
    if k.outs:
        if multi:
            parts = [f"_t_{p.name} if out[{i}] is None else out[{i}]" for i, p in enumerate(k.outs)]
            add("return (" + ", ".join(f"({x})" for x in parts) + ")")
        else:
            add(f"return _t_{k.outs[0].name} if out is None else out")
    elif k.optional_inout:
        name = py_name(k.optional_inout)
        add(f"return _t_{k.optional_inout} if {name} is None else {name}")
    else:
        add("return None")
    head = f"def {path}({', '.join(params)}):\n"
    doc = f'    """The Python path of {what}: any kind of array, every check."""\n'
    return head + doc + "".join("    " + l + "\n" for l in w)


def variant_doc(k: _Kernel, root: _Kernel) -> str:
    """A 16-bit variant's docstring: the float32 function documents the arguments."""
    dt = "bfloat16" if k.name.endswith("_bf16") else "float16"
    spell = _DOC_NOTE["bf16" if dt == "bfloat16" else "f16"]
    return "\n".join(
        [
            f"{k.fn.doc}",
            "",
            f"The arguments, shapes and result of {root.name} (see its help), with {dt} arrays",
            f"where {root.name} takes float32 ones.  {spell}",
            f"C function: {k.fn.name}.",
        ]
    )


def kernel_code(k: _Kernel, path: str, record: str, doc: Optional[str] = None) -> str:
    """The public function of kernel k: the fast path, then its Python path."""
    fname = k.name
    pos = k.positional()
    sig = [n if d is None else f"{n}={d}" for n, d in pos]
    kw = [py_name(p.name) if d is None else f"{py_name(p.name)}={d}" for p, d in k.keywords()]
    sig.append("*")
    sig += kw
    sig.append("ctx=None")
    names = [n for n, _ in pos] + [py_name(p.name) for p, _ in k.keywords()]
    out = [f"_V_{fname} = {record}\n"]
    fp = fast_path(k)
    if fp is not None:
        out.append(f"_fast_{fname} = _fast({_q(fp.key)}, {fp.spec})\n")
    out += ["\n\n", f"def {fname}({', '.join(sig)}):\n", _docstring(doc or kernel_doc(k), "    ")]
    call = f"{path}(_V_{fname}, {', '.join(names + ['ctx'])})"
    if fp is not None:
        # The common case, in C (bindings/python/src/fastcall.c); SLOW when
        # anything needs the Python path, which also raises every error.
        out.append(f"    _r = _fast_{fname}({', '.join(['ctx'] + names)})\n")
        out.append(f"    return {call} if _r is _SLOW else _r\n")
    else:
        out.append(f"    return {call}\n")
    return "".join(out)


def _returns_status(f: Function) -> bool:
    return f.returns.kind == "enum" and f.returns.name == "kb_status"


def free_functions(api: Api) -> List[Function]:
    """Non-kernel functions exported at the package level: no handles, no
    context, no out parameters, no status (versions, status names, the
    thread's last message).  Every other non-kernel function is used through
    Context, Buffer and kernelbridge.cuda."""
    return [
        f
        for f in api.functions
        if not f.is_kernel
        and all(p.role in ("scalar", "dim", "flag") for p in f.params)
        and not _returns_status(f)
    ]


KERNEL_IMPORTS = [
    "BF16 as _BF16",
    "F16 as _F16",
    "F32 as _F32",
    "I32 as _I32",
    "U16 as _U16",
    "U8 as _U8",
    "K_BF16 as _K_BF16",
    "K_F16 as _K_F16",
    "K_F32 as _K_F32",
    "K_I32 as _K_I32",
    "K_U8 as _K_U8",
    "BA as _BA",
    "FA as _FA",
    "HA as _HA",
    "IA as _IA",
    "NULL as _NULL",
    "bytes_error as _bytes_error",
    "bytes_in as _bytes_in",
    "bytes_out as _bytes_out",
    "given_size as _given_size",
    "size_arg as _size_arg",
    "closed as _closed",
    "copyto as _copyto",
    "default_ptr as _default_ptr",
    "dense_layout as _dense_layout",
    "enum_arg as _enum_arg",
    "fast as _fast",
    "fast_dtypes as _fast_dtypes",
    "SLOW as _SLOW",
    "half_kind as _half",
    "strided_in as _strided_in",
    "strided_inout as _strided_inout",
    "inout as _inout",
    "lib as _lib",
    "new_output as _new",
    "out as _out",
    "out_tuple_error as _out_tuple_error",
    "overlaps as _overlaps",
    "pointer as _ptr",
    "shape_error as _shape_error",
    "to_input as _in",
    "Variant as _Variant",
]


def _half_variants(api: Api) -> Dict[str, Dict[str, str]]:
    """kernel -> {"f16": "x_f16", "bf16": "x_bf16"} for every float32 kernel
    whose 16-bit variants exist with the same Python signature: the float32
    function dispatches float16 and bfloat16 arrays to them."""
    by_name = {f.name: f for f in api.kernels}
    out: Dict[str, Dict[str, str]] = {}
    for fn in api.kernels:
        if not all(p.tensor.dtype in ("f32", "i32") for p in fn.tensors):
            continue
        variants = {}
        base = _Kernel(fn, api=api)
        for dt in ("f16", "bf16"):
            other = by_name.get(f"{fn.name}_{dt}")
            if other is None:
                continue
            ok = _Kernel(other, api=api)
            if [n for n, _ in ok.positional()] == [n for n, _ in base.positional()] and [
                p.name for p, _ in ok.keywords()
            ] == [p.name for p, _ in base.keywords()]:
                variants[dt] = other.short_name
        if variants:
            out[fn.name] = variants
    return out


def kernels_module(api: Api) -> str:
    parts = [
        banner("#"),
        '"""The kernels of kernelbridge, one function per C kernel (see docs/python.md)."""\n\n',
        "from math import prod as _prod\n\n",
        "# The builtin: a kernel parameter may be named type (quantize's), hiding it.\n",
        "_type = type\n\n",
        "from . import _model\n",
        "from ._capi import check as _check\n",
        "from ._capi import (  # noqa: F401 (public)\n",
    ]
    parts += [f"    {f.short_name},\n" for f in free_functions(api)]
    parts.append(")\n")
    imports_at = len(parts)
    # The numpy dtypes each kind of the fast-path specs accepts, in _FAST_KIND
    # order (the first: a new array's), the same as the Python path's.
    rows = ", ".join("(" + ", ".join(_FAST_DTYPES[d]) + ("," if len(_FAST_DTYPES[d]) == 1 else "") + ")"
                     for d in sorted(_FAST_KIND, key=_FAST_KIND.get))
    parts.append(f"\n_fast_dtypes(({rows}))\n")
    public = [f.short_name for f in free_functions(api)]
    half = _half_variants(api)
    by_name = {f.name: f for f in api.kernels}
    variant_of = {}  # C name of a 16-bit variant -> its float32 kernel
    for root, vs in half.items():
        for dt in vs:
            variant_of[f"{root}_{dt}"] = root
    # Families: a float32 kernel and its 16-bit variants, which share one
    # Python path (one set of parameters, in one order).
    families = []
    for fn in api.kernels:
        if fn.name in variant_of:
            continue
        k = _Kernel(fn, half.get(fn.name), api)
        members = [k] + [_Kernel(by_name[f"{fn.name}_{dt}"], api=api) for dt in sorted(k.half)]
        for m in members[1:]:
            assert [(p.name, p.role) for p in m.fn.params] == [(p.name, p.role) for p in fn.params], m.name
        families.append((k, members, _varying(k, members[1:])))
    # Families whose paths read the same (silu and gelu, add and mul, ...: the
    # kernel itself comes from _v) share one: the first one's, written once.
    groups: Dict[str, List[_Kernel]] = {}  # path text without its name and doc -> the float32 kernels
    for k, members, varying in families:
        groups.setdefault(path_code(k, "_", varying, "").split("\n", 2)[2], []).append(k)
    path_of = {k.name: f"_{g[0].name}_path" for g in groups.values() for k in g}
    for k, members, varying in families:
        path = path_of[k.name]
        group = next((g for g in groups.values() if g[0] is k), None)
        if group is not None:  # the first family of its group writes the path
            what = ", ".join(g.name for g in group[:-1]) + (" and " if len(group) > 1 else "") + group[-1].name
            if any(g.half for g in group):
                what += " (and the 16-bit variants)"
            parts.append("\n\n" + path_code(k, path, varying, what))
        for m in members:
            doc = None if m is k else variant_doc(m, k)
            parts.append("\n\n" + kernel_code(m, path, variant_record(m, k.half if m is k else {}), doc))
    public += [fn.short_name for fn in api.kernels]
    parts.append("\n\n# The public kernels by name (the float32 kernels hand 16-bit arrays to theirs).\n")
    parts.append("_PUBLIC = {\n" + "".join(f"    {_q(fn.short_name)}: {fn.short_name},\n" for fn in api.kernels) + "}\n")
    parts.append("\n__all__ = [\n" + "".join(f"    {_q(n)},\n" for n in public) + "]\n")
    body = "".join(parts[imports_at:])
    used = [n for n in KERNEL_IMPORTS if re.search(r"\b%s\b" % re.escape(n.split(" as ")[1]), body)]
    parts.insert(imports_at, "from ._runtime import (\n" + "".join(f"    {n},\n" for n in used) + ")\n")
    return "".join(parts)


# --- _capi.py: the non-kernel functions -----------------------------------------------

# The functions check() reads messages with.
_THREAD_MESSAGE = "kb_last_error"
_CONTEXT_MESSAGE = "kb_context_last_error"
_STATUS_NAME = "kb_status_string"

CAPI_PROLOGUE = '''"""The non-kernel functions of the C API, one thin function each (contexts,
buffers, CUDA devices, versions), and check(): the one place where a failed
kb_status becomes a typed exception.

Handles are cffi pointers; Context, Buffer and kernelbridge.cuda wrap these
functions in the public API.  A failed call raises the Error subclass of its
status (_model.ERRORS) with the library's message: the context's for calls
taking one, the calling thread's (kb_last_error) for calls without one, read
right after the call on the same OS thread (a cffi call never changes
threads).
"""

from . import _model
from ._native import ffi as _ffi, lib as _lib

# check()'s ctxp for calls without a context: their message is per thread.
THREAD = object()

_CData = _ffi.CData
_NULL = _ffi.NULL


def check(status, fn, ctxp):
    """Raises the Error subclass of status (nothing for OK).

    fn names the call in the fallback message; ctxp is the kb_context * of
    the call (its message is used), THREAD for a call without a context
    (the calling thread's message), or None / NULL (no message).  Without a
    message the text is "fn: STATUS_NAME".
    """
    if not status:
        return
    if ctxp is THREAD:
        message = _ffi.string(_lib.@THREAD@()).decode("utf-8", "replace")
    elif ctxp:
        message = _ffi.string(_lib.@CONTEXT@(ctxp)).decode("utf-8", "replace")
    else:
        message = ""
    if not message:
        message = "%s: %s" % (fn, _ffi.string(_lib.@STATUS@(status)).decode("utf-8", "replace"))
    raise _model.ERRORS.get(status, _model.Error)(message, status)


def _mem(obj, writable, cdecl="char[]"):
    """A pointer argument: a cdata pointer as is, else the memory of a
    contiguous buffer object (numpy array, bytes, bytearray, memoryview),
    as an array of cdecl (the parameter's element type)."""
    if isinstance(obj, _CData):
        return obj
    return _ffi.from_buffer(cdecl, obj, require_writable=writable)


def _cstr(obj, fn, name):
    """An `in string` argument: a str (as UTF-8) or bytes, without a NUL
    (C would read it as the end of the string)."""
    data = obj.encode("utf-8") if isinstance(obj, str) else bytes(obj)
    if b"\\0" in data:
        raise _model.ERRORS[@INVALID@]("%s: %s holds a NUL character" % (fn, name), @INVALID@)
    return data
'''


def _capi_params(fn: Function) -> List[Param]:
    """Parameters the Python function takes: all but what it makes itself
    (out handles, out scalars, out strings and their capacity)."""
    hidden = {p.capacity for p in fn.params if p.role == "out_string"}
    return [p for p in fn.params if p.role not in ("handle_out", "out_scalar", "out_string") and p.name not in hidden]


def _capi_doc(fn: Function, api: Api) -> str:
    lines = [fn.doc, ""]
    args = []
    for p in _capi_params(fn):
        name = py_name(p.name)
        if p.role == "context":
            args.append(f"  {name}: kb_context * (cdata); None passes NULL")
        elif p.role == "handle":
            typ = p.ctype.spelling.replace("const ", "").strip()
            args.append(f"  {name}: {typ} (cdata)" + ("; None passes NULL" if p.nullable else ""))
        elif p.role == "in_string":
            args.append(f"  {name}: str (UTF-8) or bytes, without NUL characters")
        elif p.role == "tensor":
            what = "writable buffer" if p.tensor.direction != "in" else "buffer"
            elems = "bytes" if p.tensor.dtype == "u8" else _CAPI_ELEMENT[p.tensor.dtype] + " elements"
            args.append(f"  {name}: {p.tensor.direction} {elems}: a cdata pointer or a contiguous {what} (numpy array, bytearray, ...)")
        else:
            args.append(f"  {name}: {_scalar_type(p)}")
    if args:
        lines.append("Arguments:")
        lines += args
    ret = []
    for p in fn.params:
        if p.role == "handle_out":
            ret.append(f"the new {p.handle_type} * (cdata; free it with {fn.destroy})")
        elif p.role == "out_scalar":
            ret.append(f"{p.name} (int)")
        elif p.role == "out_string":
            ret.append(f"{p.name} (str; at most {STRING_CAPACITY - 1} bytes)")
    if fn.returns_address:
        ret.append("the address (int; 0 for NULL)")
    elif fn.returns.kind == "string":
        ret.append("str")
    elif fn.returns.kind == "enum" and not _returns_status(fn):
        ret.append(enum_class_name(api.enum(fn.returns.name)))
    elif fn.returns.kind in _PY_SCALAR:
        ret.append(_PY_SCALAR[fn.returns.kind])
    if ret:
        lines.append("Returns " + ", ".join(ret) + ".")
    if _returns_status(fn):
        where = "the context's message" if fn.has_context else "the calling thread's message (kb_last_error)"
        lines.append(f"A failed status raises its Error subclass with {where}.")
    lines.append(f"C function: {fn.name}.")
    return "\n".join(lines)


# C element type of a typed tensor of a non-kernel function (u8 is void *).
_CAPI_ELEMENT = {"f32": "float", "i32": "int32_t", "bf16": "uint16_t", "f16": "uint16_t"}


def capi_function_code(fn: Function, api: Api) -> str:
    params = [py_name(p.name) for p in _capi_params(fn)]
    lines = [f"def {fn.short_name}({', '.join(params)}):\n", _docstring(_capi_doc(fn, api), "    ")]
    body = []
    args = []
    result = None
    ctx_arg = None
    capacities = {p.capacity for p in fn.params if p.role == "out_string"}
    for p in fn.params:
        name = py_name(p.name)
        if p.role == "handle_out":
            body.append(f"_r = _ffi.new({_q(p.handle_type + ' **')})")
            args.append("_r")
            result = "_r[0]"
        elif p.role == "out_scalar":
            body.append(f"_r = _ffi.new({_q(p.ctype.spelling.replace('const ', '').strip())})")
            args.append("_r")
            result = "_r[0]"
        elif p.role == "out_string":
            body.append(f"_r = _ffi.new('char[]', {STRING_CAPACITY})")
            args.append("_r")
            result = "_ffi.string(_r).decode('utf-8', 'replace')"
        elif p.name in capacities:
            args.append(str(STRING_CAPACITY))
        elif p.role == "in_string":
            args.append(f"_cstr({name}, {_q(fn.name)}, {_q(p.name)})")
        elif p.role == "tensor" and p.tensor.dtype != "u8":
            # A typed pointer: cffi passes no char * for a float * or int32_t *.
            cdecl = _CAPI_ELEMENT[p.tensor.dtype] + "[]"
            args.append(f"_mem({name}, {p.tensor.direction != 'in'}, {_q(cdecl)})")
        elif p.role == "tensor":
            args.append(f"_mem({name}, {p.tensor.direction != 'in'})")
        elif p.role == "context" or (p.role == "handle" and p.nullable):
            if p.role == "context":
                ctx_arg = name
            args.append(f"(_NULL if {name} is None else {name})")
        else:
            args.append(name)
    call = f"_lib.{fn.name}({', '.join(args)})"
    if _returns_status(fn):
        body.append(f"_st = {call}")
        body.append("if _st:")
        body.append(f"    check(_st, {_q(fn.name)}, {ctx_arg if fn.has_context else 'THREAD'})")
        body.append(f"return {result}" if result else "return None")
    elif fn.returns_address:
        body.append(f"return int(_ffi.cast('uintptr_t', {call}))")
    elif fn.returns.kind == "string":
        body.append(f"return _ffi.string({call}).decode('utf-8', 'replace')")
    elif fn.returns.kind == "enum":
        body.append(f"return _model.{enum_class_name(api.enum(fn.returns.name))}({call})")
    elif fn.returns.kind == "void":
        body.append(call)
    else:
        body.append(f"return {call}")
    return "".join(lines) + "".join("    " + l + "\n" for l in body)


def _status_value(api: Api, suffix: str) -> int:
    """The value of the kb_status enumerator named *_<suffix>."""
    for v in api.status_enum.values:
        if v.name.endswith("_" + suffix):
            return v.value
    raise SystemExit(f"kbgen python: kb_status has no {suffix}")


def capi_module(api: Api) -> str:
    names = {f.name for f in api.functions}
    for needed in (_THREAD_MESSAGE, _CONTEXT_MESSAGE, _STATUS_NAME):
        if needed not in names:
            raise SystemExit(f"kbgen python: the header has no {needed}, which check() needs")
    prologue = (
        CAPI_PROLOGUE.replace("@THREAD@", _THREAD_MESSAGE)
        .replace("@CONTEXT@", _CONTEXT_MESSAGE)
        .replace("@STATUS@", _STATUS_NAME)
        .replace("@INVALID@", str(_status_value(api, "INVALID_ARGUMENT")))
    )
    parts = [banner("#"), prologue]
    for f in api.functions:
        if not f.is_kernel:
            parts.append("\n\n" + capi_function_code(f, api))
    return "".join(parts)


# --- __init__.py ---------------------------------------------------------------------

# Public names of the hand-written modules.
RUNTIME_NAMES = ["Buffer", "Context", "default_context"]
# kernelbridge/_nn.py: PyTorch-style entry points over the generated kernels.
NN_NAMES = ["scaled_dot_product_attention"]
# kernelbridge/_qtensor.py: tensors in storage formats (kb_dtype).  Its
# quantize, dequantize, linear and embedding replace the generated functions
# of those names in the package (they take QTensor weights and dispatch to
# the _w kernels); the generated ones stay in kernelbridge._kernels.
QTENSOR_NAMES = ["QTensor", "dequantize", "dtype_bytes", "embedding", "linear", "quantize"]
# kernelbridge/_tokenizer.py: the tokenizer (kb_tokenizer) as a class.
TOKENIZER_NAMES = ["TokenStream", "Tokenizer"]
# kernelbridge/_gguf.py: GGUF files (kb_gguf).
GGUF_NAMES = ["Gguf"]

INIT_TEMPLATE = '''"""kernelbridge: neural-network kernels in C, for Python.

Kernels take numpy arrays (float32 / int32; the float16 and bfloat16
variants take 16-bit arrays), kernelbridge.Buffer objects (host memory, or
device memory of a CUDA Context) and foreign memory exposing
__cuda_array_interface__ or __dlpack__; sizes come from the shapes.  See
docs/python.md for the rules on dtypes, contiguity, in-place use, memory
kinds, errors, threads and contexts; kernelbridge.cuda lists CUDA devices.

Generated from @HEADER@, version @VERSION@.
"""

from ._model import (
@IMPORTS@)

from ._native import lib as _lib

# The extension is compiled from the library's sources, so the two versions
# can only differ when a build mixed files of different releases.
if _lib.kb_version_number() != VERSION_NUMBER:
    raise ImportError(
        "kernelbridge: the compiled library is version %d (kb_version_number()) but this Python package "
        "was generated from header version %d; rebuild the package" % (_lib.kb_version_number(), VERSION_NUMBER)
    )

from ._runtime import @RUNTIME@  # noqa: E402
from ._kernels import *  # noqa: E402,F401,F403
from ._nn import @NN@  # noqa: E402
from ._qtensor import @QTENSOR@  # noqa: E402
from ._tokenizer import @TOKENIZER@  # noqa: E402
from ._gguf import @GGUF@  # noqa: E402
from . import cuda  # noqa: E402

__all__ = [
@PUBLIC@]
'''


def init_module(api: Api) -> str:
    errors = error_names(api)
    enums = [enum_class_name(e) for e in api.enums]
    model_names = ["VERSION", "VERSION_NUMBER", "Error"] + enums + errors
    public = sorted(
        set(
            ["__version__", "cuda"]
            + RUNTIME_NAMES
            + NN_NAMES
            + QTENSOR_NAMES
            + TOKENIZER_NAMES
            + GGUF_NAMES
            + model_names
            + [f.short_name for f in free_functions(api)]
            + [f.short_name for f in api.kernels]
        )
    )
    imports = "".join(f"    {n},\n" for n in ["__version__"] + model_names)
    text = (
        INIT_TEMPLATE.replace("@HEADER@", api.header)
        .replace("@VERSION@", api.version_string)
        .replace("@IMPORTS@", imports)
        .replace("@RUNTIME@", ", ".join(RUNTIME_NAMES))
        .replace("@NN@", ", ".join(NN_NAMES))
        .replace("@QTENSOR@", ", ".join(QTENSOR_NAMES))
        .replace("@TOKENIZER@", ", ".join(TOKENIZER_NAMES))
        .replace("@GGUF@", ", ".join(GGUF_NAMES))
        .replace("@PUBLIC@", "".join(f"    {_q(n)},\n" for n in public))
    )
    return banner("#") + text


# --- stubs -------------------------------------------------------------------------


def _stub_array(dtype: str) -> str:
    return f"NDArray[{_STUB_DTYPE[dtype]}]"


def _stub_out(dtype: str) -> str:
    return f"Union[{_stub_array(dtype)}, Buffer]"


STUB_CLASSES = '''
ERRORS: Dict[int, Type[Error]]

class Tokenizer:
    add_space_prefix: bool
    def __init__(self, pieces: Sequence[Union[str, bytes]], scores: ArrayLike, types: ArrayLike, *, bos_id: int = ..., eos_id: int = ..., unk_id: int = ..., add_bos: bool = ..., add_eos: bool = ..., add_space_prefix: bool = ...) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> 'Tokenizer': ...
    def __exit__(self, *exc: object) -> None: ...
    @property
    def n_tokens(self) -> int: ...
    @property
    def bos(self) -> int: ...
    @property
    def eos(self) -> int: ...
    def tokenize(self, text: Union[str, bytes], add_special: bool = ..., parse_special: bool = ...) -> List[int]: ...
    def piece(self, token_id: int, special: bool = ...) -> bytes: ...
    def detokenize(self, ids: Iterable[int], remove_special: bool = ..., unparse_special: bool = ...) -> bytes: ...
    def decode(self, ids: Iterable[int], remove_special: bool = ..., unparse_special: bool = ...) -> str: ...
    def stream(self, special: bool = ...) -> 'TokenStream': ...

class TokenStream:
    def __init__(self, tokenizer: Tokenizer, special: bool = ...) -> None: ...
    def feed(self, token_id: int) -> str: ...
    def flush(self) -> str: ...

class Context:
    def __init__(self, backend: Union[str, Backend] = 'cpu', device: Optional[int] = ..., *, threads: int = 0) -> None: ...
    def close(self) -> None: ...
    def synchronize(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def device(self) -> Optional[int]: ...
    @property
    def is_cuda(self) -> bool: ...
    @property
    def threads(self) -> int: ...
    @property
    def last_error(self) -> str: ...
    def __enter__(self) -> 'Context': ...
    def __exit__(self, *exc: object) -> None: ...

def default_context() -> Context: ...

class Buffer:
    shape: Tuple[int, ...]
    dtype: np.dtype
    def __init__(self, ctx: Optional[Context], shape: Union[int, Sequence[int]], dtype: DTypeLike = ...) -> None: ...
    @classmethod
    def empty(cls, ctx: Optional[Context], shape: Union[int, Sequence[int]], dtype: DTypeLike = ...) -> 'Buffer': ...
    @classmethod
    def zeros(cls, ctx: Optional[Context], shape: Union[int, Sequence[int]], dtype: DTypeLike = ...) -> 'Buffer': ...
    @classmethod
    def from_numpy(cls, ctx: Optional[Context], array: ArrayLike) -> 'Buffer': ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> Optional[int]: ...
    @property
    def is_cuda(self) -> bool: ...
    @property
    def address(self) -> int: ...
    @property
    def context(self) -> Optional[Context]: ...
    @property
    def closed(self) -> bool: ...
    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]: ...
    def __array__(self, dtype: Any = ..., copy: Optional[bool] = ...) -> NDArray[Any]: ...
    def numpy(self) -> NDArray[Any]: ...
    def upload(self, src: Any, *, offset: int = 0, ctx: Optional[Context] = ...) -> None: ...
    def download(self, out: Any, *, offset: int = 0, ctx: Optional[Context] = ...) -> Any: ...
    def fill(self, value: int, *, offset: int = 0, nbytes: Optional[int] = ..., ctx: Optional[Context] = ...) -> None: ...
    def copy_from(self, src: 'Buffer', *, offset: int = 0, src_offset: int = 0, nbytes: Optional[int] = ..., ctx: Optional[Context] = ...) -> None: ...
    def copy(self, *, ctx: Optional[Context] = ...) -> 'Buffer': ...
    def reshape(self, *shape: Union[int, Sequence[int]]) -> 'Buffer': ...
    def view(self, dtype: DTypeLike) -> 'Buffer': ...
    def close(self) -> None: ...
    def __enter__(self) -> 'Buffer': ...
    def __exit__(self, *exc: object) -> None: ...

# A tensor argument: a numpy array (or array-like / buffer object), a Buffer,
# or an object exposing __cuda_array_interface__ or __dlpack__.
ArrayIn = Union[ArrayLike, Buffer, Any]

def scaled_dot_product_attention(query: ArrayIn, key: ArrayIn, value: ArrayIn, attn_mask: Optional[ArrayIn] = ..., dropout_p: float = ..., is_causal: bool = ..., scale: Optional[float] = ..., enable_gqa: bool = ..., *, kv_lengths: Optional[ArrayIn] = ..., bottom_right: bool = ..., seq_major: bool = ..., out: Optional[Union[NDArray[Any], Buffer]] = ..., ctx: Optional[Context] = ...) -> Union[NDArray[Any], Buffer]: ...

DtypeArg = Union[Dtype, int, str]

class QTensor:
    def __init__(self, dtype: DtypeArg, shape: Sequence[int], data: Any) -> None: ...
    @property
    def dtype(self) -> Dtype: ...
    @property
    def shape(self) -> Tuple[int, int]: ...
    @property
    def data(self) -> NDArray[np.uint8]: ...
    @property
    def nbytes(self) -> int: ...
    def dequantize(self, *, out: Optional[NDArray[np.float32]] = ..., ctx: Optional[Context] = ...) -> NDArray[np.float32]: ...

def dtype_bytes(dtype: DtypeArg, rows: int, cols: int) -> int: ...
class Gguf:
    def __init__(self, source: Union[str, os.PathLike, bytes, bytearray, memoryview, NDArray[np.uint8]], *, ctx: Optional[Context] = ...) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Gguf: ...
    def __exit__(self, *exc: Any) -> None: ...
    @property
    def version(self) -> int: ...
    def keys(self) -> List[str]: ...
    def __contains__(self, key: str) -> bool: ...
    def key_type(self, key: str) -> GgufType: ...
    def array_type(self, key: str) -> GgufType: ...
    def get(self, key: str, default: Any = ...) -> Any: ...
    def get_int(self, key: str) -> int: ...
    def get_float(self, key: str) -> float: ...
    def get_bytes(self, key: str) -> bytes: ...
    def get_str(self, key: str) -> str: ...
    def get_f32(self, key: str) -> NDArray[np.float32]: ...
    def get_i32(self, key: str) -> NDArray[np.int32]: ...
    def string_array(self, key: str) -> Tuple[bytes, NDArray[np.int32]]: ...
    def vocabulary(self, prefix: str = ...) -> Tuple[bytes, NDArray[np.int32], NDArray[np.float32], NDArray[np.int32]]: ...
    def tensor_names(self) -> List[str]: ...
    def tensor_type(self, name: str) -> Union[Dtype, int]: ...
    def tensor_shape(self, name: str) -> Tuple[int, ...]: ...
    def tensor_nbytes(self, name: str) -> int: ...
    def tensor_offset(self, name: str) -> int: ...
    def read_tensor(self, name: str) -> NDArray[np.uint8]: ...
    def tensor(self, name: str) -> NDArray[Any]: ...

def quantize(x: ArrayIn, dtype: DtypeArg, *, out: Optional[Any] = ..., ctx: Optional[Context] = ...) -> QTensor: ...
def dequantize(x: Union[QTensor, ArrayIn], out: Optional[Union[NDArray[np.float32], Buffer]] = ..., *, type: Optional[DtypeArg] = ..., rows: Optional[int] = ..., cols: Optional[int] = ..., ctx: Optional[Context] = ...) -> Union[NDArray[np.float32], Buffer]: ...
def linear(x: ArrayIn, weight: Union[QTensor, ArrayIn], bias: Optional[ArrayIn] = ..., out: Optional[Union[NDArray[Any], Buffer]] = ..., *, act: Union[Activation, int, str] = ..., ctx: Optional[Context] = ...) -> Union[NDArray[Any], Buffer]: ...
def embedding(ids: ArrayIn, table: Union[QTensor, ArrayIn], out: Optional[Union[NDArray[Any], Buffer]] = ..., *, ctx: Optional[Context] = ...) -> Union[NDArray[Any], Buffer]: ...
'''


def stubs(api: Api) -> str:
    lines = [
        banner("#"),
        "import enum\n",
        "import os\n",
        "from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union\n\n",
        "import numpy as np\n",
        "from numpy.typing import ArrayLike, DTypeLike, NDArray\n\n",
        "from . import cuda as cuda\n\n",
        f"__version__: str\nVERSION: Tuple[int, int, int]\nVERSION_NUMBER: int\n",
    ]
    for e in api.enums:
        lines.append(f"\nclass {enum_class_name(e)}(enum.IntEnum):\n")
        for v in e.values:
            lines.append(f"    {member_name(e, v.name)} = {v.value}\n")
    lines.append(
        "\nclass Error(Exception):\n"
        "    status: Optional[Status]\n"
        "    message: str\n"
        "    def __init__(self, message: str, status: Optional[int] = ...) -> None: ...\n"
    )
    st = api.status_enum
    for v in st.values:
        if v.value == 0:
            continue
        member = member_name(st, v.name)
        bases = "Error" + (", " + BUILTIN_BASES[member] if member in BUILTIN_BASES else "")
        lines.append(f"\nclass {error_class_name(member)}({bases}): ...\n")
    lines.append(STUB_CLASSES)
    for f in free_functions(api):
        params = ", ".join(f"{py_name(p.name)}: int" if p.ctype.kind == "enum" else f"{py_name(p.name)}: {_PY_SCALAR.get(p.ctype.kind, 'int')}" for p in f.params)
        ret = {"string": "str", "void": "None"}.get(f.returns.kind)
        if ret is None:
            ret = enum_class_name(api.enum(f.returns.name)) if f.returns.kind == "enum" else _PY_SCALAR[f.returns.kind]
        lines.append(f"\ndef {f.short_name}({params}) -> {ret}: ...\n")
    for fn in api.kernels:
        if fn.short_name in QTENSOR_NAMES:
            continue  # hand-written in _qtensor (STUB_CLASSES)
        k = _Kernel(fn, api=api)
        sig = []
        for name, default in k.positional():
            if name == "out":
                if len(k.outs) == 1:
                    typ = f"Optional[{_stub_out(k.outs[0].tensor.dtype)}]"
                else:
                    typ = "Optional[Tuple[" + ", ".join(f"Optional[{_stub_out(p.tensor.dtype)}]" for p in k.outs) + "]]"
            else:
                p = fn.param(name.rstrip("_") if name.rstrip("_") in [q.name for q in fn.params] else name)
                typ = "ArrayIn" if p.tensor.direction == "in" else _stub_out(p.tensor.dtype)
                if p.tensor.nullable or p.name == k.optional_inout:
                    typ = f"Optional[{typ}]"
            sig.append(f"{name}: {typ}" + (" = ..." if default is not None else ""))
        sig.append("*")
        for p, default in k.keywords():
            typ = "bool" if p.role == "flag" else ("int" if p.role == "dim" else _scalar_type(p))
            if p.name in k.optional_dims:
                typ = "Optional[int]"
            if p.role == "scalar" and p.ctype.kind == "enum":
                typ = f"Union[{enum_class_name(api.enum(p.ctype.name))}, int, str]"
            sig.append(f"{py_name(p.name)}: {typ}" + (" = ..." if default is not None else ""))
        sig.append("ctx: Optional[Context] = ...")
        if len(k.outs) == 1:
            ret = _stub_out(k.outs[0].tensor.dtype)
        elif k.outs:
            ret = "Tuple[" + ", ".join(_stub_out(p.tensor.dtype) for p in k.outs) + "]"
        elif k.optional_inout:
            ret = _stub_out(fn.param(k.optional_inout).tensor.dtype)
        else:
            ret = "None"
        lines.append(f"\ndef {fn.short_name}({', '.join(sig)}) -> {ret}: ...\n")
    return "".join(lines)


def emit(api: Api) -> Dict[str, str]:
    return {
        f"{ROOT}/kernelbridge_build.py": build_script(api),
        f"{PKG}/_model.py": model_module(api),
        f"{PKG}/_capi.py": capi_module(api),
        f"{PKG}/_kernels.py": kernels_module(api),
        f"{PKG}/__init__.py": init_module(api),
        f"{PKG}/__init__.pyi": stubs(api),
    }
