"""The language-neutral model of the kernelbridge API.

The parser (parse.py) builds it from the header; every emitter reads only this
model.  Nothing here knows about C syntax or about any target language.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union


# --- Shape expressions -------------------------------------------------------


@dataclass(frozen=True)
class Dim:
    """A dimension given by a size parameter."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    """A literal dimension."""

    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Cond:
    """`flag ? then : otherwise`, where flag is a bool parameter."""

    flag: str
    then: "Expr"
    otherwise: "Expr"

    def __str__(self) -> str:
        return f"{self.flag} ? {self.then} : {self.otherwise}"


Expr = Union[Dim, Const, Cond]


def expr_names(expr: Expr) -> List[str]:
    """Size-parameter names used by expr (flags excluded), in order."""
    if isinstance(expr, Dim):
        return [expr.name]
    if isinstance(expr, Cond):
        return expr_names(expr.then) + expr_names(expr.otherwise)
    return []


# --- Types --------------------------------------------------------------------

# Scalar kinds a parameter or return value can have.
SCALAR_KINDS = ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64")

# Tensor element types.  bf16 and f16 are stored as uint16 bit patterns (the
# C type is uint16_t); u8 is raw bytes (the C type is void).
DTYPES = {"f32": "float32", "i32": "int32", "bf16": "bfloat16", "f16": "float16", "u8": "uint8"}

# Size in bytes of one element of each dtype.
DTYPE_SIZES = {"f32": 4, "i32": 4, "bf16": 2, "f16": 2, "u8": 1}


@dataclass(frozen=True)
class CType:
    """A C type reduced to what bindings need.

    kind is one of SCALAR_KINDS, "void", "enum", "handle" (pointer to an
    opaque struct), "handle_out" (pointer to a pointer to one), "string"
    (const char *) or "pointer" (pointer to a scalar kind, "uint16", "char"
    or "void", see `pointee`).
    """

    kind: str
    name: Optional[str] = None  # enum or handle type name
    pointee: Optional[str] = None  # scalar kind behind a "pointer"
    const: bool = False  # pointee is const
    spelling: str = ""  # the C spelling, e.g. "const float *"


# --- Parameters ---------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    direction: str  # "in", "out" or "inout"
    dtype: str  # "f32" or "i32"
    shape: Tuple[Expr, ...]
    ld: Optional[str] = None  # row-stride parameter of the last two axes
    aliases: Tuple[str, ...] = ()  # inputs this output may be identical to
    nullable: bool = False
    # Distance in elements between consecutive indices of the first axis (a
    # batch of matrices, kb_gemm_batched); None: dense.  0 repeats one item.
    stride: Optional[str] = None

    @property
    def element_kind(self) -> str:
        return DTYPES[self.dtype]

    def shape_str(self) -> str:
        return "[" + ", ".join(str(e) for e in self.shape) + "]"


@dataclass(frozen=True)
class Param:
    name: str
    ctype: CType
    # "context", "handle", "handle_out", "dim", "scalar", "flag", "tensor",
    # "out_scalar" (pointer to an int64 the function writes on success) or
    # "out_string" (char buffer of `capacity` bytes the function fills with a
    # NUL-terminated string on success) or "in_string" (a NUL-terminated
    # const char * the function reads: a path, a name).
    role: str
    tensor: Optional[Tensor] = None
    nullable: bool = False  # for handles
    handle_type: Optional[str] = None  # for handle_out
    # For scalars and flags: the default value bindings with optional
    # arguments use, as a literal ("1", "1e-05", "-100", "true"; for an enum
    # parameter the enumerator's name, "KB_ACTIVATION_NONE"); None: none.
    default: Optional[str] = None
    # For out_string: the name of the dim parameter holding the buffer size.
    capacity: Optional[str] = None
    line: int = 0


@dataclass
class Function:
    name: str
    returns: CType
    params: List[Param]
    doc: str  # free text of the doc comment, annotation lines removed
    threadsafe: bool
    blocking: bool
    returns_string: Optional[str] = None  # "static" or "borrowed"
    # True for a function returning `void *` annotated `@returns address`: an
    # address bindings hand back to kernels (e.g. kb_buffer_data).
    returns_address: bool = False
    destroy: Optional[str] = None
    line: int = 0

    @property
    def is_kernel(self) -> bool:
        """A kernel takes a context first, returns kb_status, has at least one
        tensor and otherwise only dims, scalars and flags (so no handles:
        kb_buffer_upload is not a kernel)."""
        return (
            bool(self.params)
            and self.params[0].role == "context"
            and self.returns.kind == "enum"
            and any(p.role == "tensor" for p in self.params)
            and all(p.role in ("dim", "scalar", "flag", "tensor") for p in self.params[1:])
        )

    @property
    def has_context(self) -> bool:
        """True when the function records its message in a context; False
        means it records it per thread (kb_last_error)."""
        return any(p.role == "context" for p in self.params)

    @property
    def out_scalar(self) -> Optional[Param]:
        """The out_scalar parameter, which bindings return; None if none."""
        for p in self.params:
            if p.role == "out_scalar":
                return p
        return None

    @property
    def out_string(self) -> Optional[Param]:
        """The out_string parameter, which bindings return; None if none."""
        for p in self.params:
            if p.role == "out_string":
                return p
        return None

    @property
    def short_name(self) -> str:
        """Name without the library prefix: kb_softmax -> softmax."""
        return self.name[3:] if self.name.startswith("kb_") else self.name

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def tensors(self) -> List[Param]:
        return [p for p in self.params if p.role == "tensor"]

    @property
    def dims(self) -> List[Param]:
        return [p for p in self.params if p.role == "dim"]


@dataclass(frozen=True)
class Enumerator:
    name: str
    value: int
    doc: str


@dataclass
class Enum:
    name: str  # e.g. kb_status
    doc: str
    values: List[Enumerator]
    prefix: str  # common prefix of the enumerators, e.g. KB_STATUS_


@dataclass
class Handle:
    name: str  # e.g. kb_context
    doc: str
    destroy: Optional[str] = None


@dataclass
class Api:
    header: str  # path of the header, as given to the parser
    version: Tuple[int, int, int]
    enums: List[Enum] = field(default_factory=list)
    handles: List[Handle] = field(default_factory=list)
    functions: List[Function] = field(default_factory=list)

    @property
    def version_string(self) -> str:
        return "%d.%d.%d" % self.version

    @property
    def version_number(self) -> int:
        major, minor, patch = self.version
        return major * 10000 + minor * 100 + patch

    @property
    def kernels(self) -> List[Function]:
        return [f for f in self.functions if f.is_kernel]

    def enum(self, name: str) -> Enum:
        for e in self.enums:
            if e.name == name:
                return e
        raise KeyError(name)

    @property
    def status_enum(self) -> Enum:
        return self.enum("kb_status")

    def to_json(self) -> Dict:
        """A plain-data view of the model, for tools and debugging."""

        def conv(obj):
            if dataclasses.is_dataclass(obj):
                d = {"_type": type(obj).__name__}
                for f in dataclasses.fields(obj):
                    d[f.name] = conv(getattr(obj, f.name))
                return d
            if isinstance(obj, (list, tuple)):
                return [conv(x) for x in obj]
            return obj

        return conv(self)
