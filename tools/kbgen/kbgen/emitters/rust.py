"""Rust emitter: the safe crate `kernelbridge` (bindings/rust/kernelbridge).

The raw declarations live in the `kernelbridge-sys` crate, produced by bindgen
(bindings/rust/kernelbridge-sys/regen.sh), not by this emitter; this emitter
writes the -sys crate's Cargo.toml only, so that both crates carry the
header's version.  The safe crate calls the -sys declarations by their C
names (sys::kb_silu, sys::kb_status_KB_STATUS_OK, ...), which is bindgen's
naming for functions and for enum constants in its default "consts" style.

Rules, all derived from the model (no per-kernel knowledge here):

- A tensor becomes `&[f32]` / `&[i32]` / `&[u16]` (in; bf16 and f16 are their
  bit patterns in u16), `&mut [..]` (out, inout); a nullable one is wrapped in
  `Option`.  A `u8` tensor (raw bytes, `void *`) is `&[u8]` / `&mut [u8]`
  in a kernel (`DeviceSlice<u8>` in its `_buf` form: both forms share one
  body), and a slice of any `Element` type, its length counted in bytes,
  elsewhere (the host side of Buffer::upload/download).
- A dim parameter is derived from a slice length when some non-nullable
  tensor is 1-D with exactly that dim (contracts.length_dims); every other
  dim is an explicit `usize` argument.
- Every tensor that is not the source of a derived dim has its length checked
  against the contract before the call (`==` for dense tensors, `>=` for
  tensors with a row stride); a mismatch is an Error with status
  ShapeMismatch naming the argument.  The C library checks everything else
  (value ranges, strides, overlaps) and its message is copied into the Error:
  from the context for functions taking one, from the calling thread's
  kb_last_error() for the others.
- An output with `alias(x)` gets an in-place variant per aliased input, where
  the output and `x` are one `&mut` slice: Rust does not allow the same
  memory to be borrowed as `&` and `&mut` at once.
- Kernels (Function.is_kernel) become methods of Context and free functions
  running on the calling thread's default context, and every kernel form
  also gets a `<name>_buf` method of Context taking buffer views
  (`&DeviceSlice<T>` for inputs, `&mut DeviceSliceMut<T>` for outputs; the
  API must have a memory handle, one with a `@returns address` function,
  kb_buffer) instead of slices, with the same checks.  Only what is specific
  to the kernel is generated: one entry of the `kernels!` macro per variant
  (its documentation, the two method signatures and the body they share:
  checks, sizes, the FFI call).  The hand-written runtime (src/runtime.rs)
  defines `kernels!`, which makes the three public forms and appends the
  documentation every form shares, and the helpers every generated body
  calls (length checks, size conversion, status to Error, out strings, the
  default context).
- A function whose first parameter is a handle, or whose first parameter is
  a context and second a handle, is a method of that handle's type (the
  context, if any, becomes a `ctx: &Context` argument); `&mut self` when the
  C handle is not const (the function writes the object), except for
  `@returns address`.  A receiver named `dst` gives `<name>_from`.  Other
  functions taking a context are methods of Context.
- A function with an out handle is a constructor of the handle's type
  (`create` -> `new`, `create_X` -> `X`); the @destroy function is Drop.
- An `out scalar` is returned (`Result<i64>`); an `out string` is returned as
  `Result<String>`, read through a local buffer of OUT_STRING_CAPACITY bytes
  (runtime.rs) whose size is passed as the (hidden) capacity dim.
- The hand-written modules of SUPPORT_MODULES (bindings/rust/kernelbridge/src)
  build idiomatic layers on the generated API (buffer views, CUDA device
  queries, bf16/f16 conversions, model layers, tensors in storage formats);
  lib.rs declares them.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .. import contracts
from ..banner import banner
from ..model import DTYPE_SIZES, Api, Const, Dim, Enum, Expr, Function, Param

NAME = "rust"

SAFE_DIR = "bindings/rust/kernelbridge"
SYS_DIR = "bindings/rust/kernelbridge-sys"
SAFE_CRATE = "kernelbridge"
SYS_CRATE = "kernelbridge-sys"
RUST_VERSION = "1.70"

# The hand-written runtime module (src/runtime.rs) the generated code calls:
# the `kernels!` macro, checks, size conversion, statuses, the default context.
RUNTIME_MODULE = "runtime"

# Hand-written modules of the safe crate (src/<name>.rs): (name, public, items
# re-exported at the crate root).
SUPPORT_MODULES = [
    ("views", False, ["DeviceSlice", "DeviceSliceMut", "Element"]),
    ("cuda", True, []),
    ("half", True, []),
    ("model", False, ["AttentionOptions", "Bf16", "F16", "Float", "Linear"]),
    ("qtensor", False, ["QTensor", "quantize_q", "linear_q", "embedding_q"]),
    # Methods of the generated Tokenizer returning whole Vecs.
    ("tokenizer", False, []),
]

_SCALAR_TYPES = {
    "bool": "bool",
    "int32": "i32",
    "int64": "i64",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float32": "f32",
    "float64": "f64",
}
# Rust element type of each dtype; u8 (raw bytes) takes any Element in slices.
_ELEM_TYPES = {"f32": "f32", "i32": "i32", "bf16": "u16", "f16": "u16", "u8": "u8"}
_ZEROS = {"f32": "0.0f32", "i32": "0i32", "u16": "0u16", "u8": "0u8"}

_KEYWORDS = set(
    """as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod
    move mut pub ref return self Self static struct super trait true type unsafe use where while abstract become box
    do final macro override priv try typeof unsized virtual yield gen""".split()
)

# Names the generated bodies use for their own locals; parameters must not
# take them.
_RESERVED = {"raw_status", "FUNC", "ctx", "out_handle", "out_value", "out_string"}


class EmitError(Exception):
    pass


# --- naming -------------------------------------------------------------------


def _strip_prefix(name: str) -> str:
    return name[3:] if name.lower().startswith("kb_") else name


def camel(name: str) -> str:
    """GELU_TANH -> GeluTanh.  An underscore between two digits stays
    (Q4_0 -> Q4_0, not Q40, which would read as another number); rustc's
    camel-case lint accepts it, since neither neighbour has a case."""
    out = ""
    for w in (w for w in name.split("_") if w):
        if out[-1:].isdigit() and w[0].isdigit():
            out += "_"
        out += w[:1].upper() + w[1:].lower()
    return out


def type_name(c_name: str) -> str:
    """kb_status -> Status, kb_context -> Context."""
    return camel(_strip_prefix(c_name))


def ident(name: str) -> str:
    return "r#" + name if name in _KEYWORDS else name


def rustdoc(text: str, indent: str = "") -> str:
    """Header prose as /// lines.  Markdown-active characters are escaped so
    that formulas such as y[i] = a * b render as written (and `[i]` is not
    read as an intra-doc link)."""
    out = []
    for line in text.split("\n"):
        line = re.sub(r"([\[\]<>*`_\\])", r"\\\1", line) if line else line
        # Keep intra-word underscores readable: they never start emphasis.
        line = re.sub(r"(?<=\w)\\_(?=\w)", "_", line)
        # A line must not start a list, heading, quote or table.
        line = re.sub(r"^([-+#=|])", r"\\\1", line)
        line = re.sub(r"^(\d+)([.)])", r"\1\\\2", line)
        out.append(f"{indent}///{' ' + line if line else ''}\n")
    return "".join(out)


def doc_lines(lines: List[str], indent: str = "") -> str:
    """Lines written for rustdoc by this emitter (already markdown)."""
    return "".join(f"{indent}///{' ' + s if s else ''}\n" for s in lines)


def _rust_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _safety(notes: List[str], indent: str = "") -> List[str]:
    """A `// Safety:` comment, one bullet per note (notes may hold newlines)."""
    lines = ["// Safety:"]
    for n in notes:
        first, *rest = n.split("\n")
        lines.append(f"// - {first}")
        lines.extend(f"//   {r}" for r in rest)
    return [indent + line for line in lines]


# --- the shape of one Rust entry point ---------------------------------------


class Variant:
    """One Rust signature for a C function: the plain form, or an in-place form
    in which output `merged_out` shares the slice of input `merged_in`."""

    def __init__(self, fn: Function, suffix: str = "", merged_out: Optional[str] = None, merged_in: Optional[str] = None):
        self.fn = fn
        self.suffix = suffix
        self.merged_out = merged_out
        self.merged_in = merged_in

    @property
    def rust_name(self) -> str:
        name = fn_rust_name(self.fn)
        return name + self.suffix

    def is_inplace(self) -> bool:
        return self.merged_out is not None


def fn_rust_name(fn: Function) -> str:
    return _strip_prefix(fn.name)


def variants(fn: Function) -> List[Variant]:
    out = [Variant(fn)]
    pairs = [(p.name, a) for p in fn.tensors for a in p.tensor.aliases]
    aliasing_outputs = {o for o, _ in pairs}
    for i, (o, a) in enumerate(pairs):
        if i == 0:
            suffix = "_inplace"
        elif len(aliasing_outputs) == 1:
            suffix = f"_inplace_{a}"
        else:
            suffix = f"_{o}_inplace_{a}"
        out.append(Variant(fn, suffix, o, a))
    return out


def derived_dims(fn: Function) -> Dict[str, str]:
    """dim name -> tensor whose length gives it (contracts.length_dims)."""
    return {dim: names[0] for dim, names in contracts.length_dims(fn).items()}


def hidden_dims(fn: Function) -> Dict[str, str]:
    """Capacity dims of out strings (not Rust arguments) -> the string."""
    return {p.capacity: p.name for p in fn.params if p.role == "out_string"}


def _expr_rust(e: Expr) -> str:
    if isinstance(e, Const):
        return f"{e.value}usize"
    if isinstance(e, Dim):
        return ident(e.name)
    return f"if {ident(e.flag)} {{ {_expr_rust(e.then)} }} else {{ {_expr_rust(e.otherwise)} }}"


class _Body:
    """Builds the parameter list, checks and the FFI call of one Rust entry
    point of a C function.

    receiver: the C parameter that is `self` (a context or a handle), or None;
    self_expr: the C argument for it.  views: tensors are buffer views (the
    `_buf` forms of kernels) instead of slices.
    """

    def __init__(self, api: Api, v: Variant, receiver: Optional[str], self_expr: str, views: bool = False):
        self.api = api
        self.v = v
        self.fn = v.fn
        self.receiver = receiver
        self.self_expr = self_expr
        self.views = views
        self.params: List[str] = []  # "name: Type"
        self.generics: List[str] = []  # "E: Element"
        self.pre: List[str] = []  # statements before the call
        self.args: List[str] = []  # C call arguments
        self.docs: List[str] = []  # argument notes for rustdoc
        self.tensor_lines: List[str] = []
        self.elem: Dict[str, str] = {}  # tensor -> Rust element type in the signature
        self.msg_ctx = "std::ptr::null()"  # where the message of a failure is read
        self.out: Optional[Param] = None  # out_scalar / out_string parameter
        self._build()

    def generic_bytes(self, p: Param) -> bool:
        """A u8 tensor taking a slice of any Element (Buffer::upload's host
        side): only outside kernels, whose slice and view forms share one
        body (kernels! has no generics); a kernel's u8 tensor is `[u8]`."""
        return p.tensor.dtype == "u8" and not self.views and not self.fn.is_kernel

    # Rust expression of the length of tensor slice/view `sname` (elements,
    # bytes for u8).
    def len_expr(self, p: Param, sname: str) -> str:
        if self.generic_bytes(p):
            return f"std::mem::size_of_val::<[{self.elem[p.name]}]>({sname})"
        return f"{sname}.len()"

    def _build(self):
        fn, v = self.fn, self.v
        for p in fn.params:
            if p.name in _RESERVED and p.role not in ("context", "handle", "handle_out"):
                raise EmitError(f"{fn.name}: parameter name '{p.name}' is reserved by the Rust emitter")
        derived = derived_dims(fn)
        hidden = hidden_dims(fn)
        # Slice names as they appear in the Rust signature.
        slice_of = {p.name: p.name for p in fn.tensors}
        if v.is_inplace():
            slice_of[v.merged_out] = v.merged_in
        for p in fn.params:
            if p.role == "context":
                self.msg_ctx = self.self_expr if p.name == self.receiver else f"{ident(p.name)}.raw.as_ptr()"
            if p.role in ("out_scalar", "out_string"):
                self.out = p

        # Rust parameters, in C order.
        for p in fn.params:
            name = ident(p.name)
            if p.name == self.receiver:
                continue
            if p.role == "dim":
                if p.name in derived or p.name in hidden:
                    continue
                self.params.append(f"{name}: usize")
            elif p.role in ("scalar", "flag"):
                self.params.append(f"{name}: {self.scalar_type(p)}")
            elif p.role == "tensor":
                t = p.tensor
                if self.generic_bytes(p):
                    g = "E" if not self.generics else f"E{len(self.generics) + 1}"
                    self.generics.append(f"{g}: Element")
                    self.elem[p.name] = g
                else:
                    self.elem[p.name] = _ELEM_TYPES[t.dtype]
                if v.is_inplace() and p.name == v.merged_out:
                    continue
                mutable = t.direction != "in" or (v.is_inplace() and p.name == v.merged_in)
                elem = self.elem[p.name]
                if self.views:
                    ty = f"&mut DeviceSliceMut<'_, {elem}>" if mutable else f"&DeviceSlice<'_, {elem}>"
                else:
                    ty = f"&mut [{elem}]" if mutable else f"&[{elem}]"
                if t.nullable:
                    ty = f"Option<{ty}>"
                self.params.append(f"{name}: {ty}")
            elif p.role == "context":
                self.params.append(f"{name}: &{type_name(p.ctype.name)}")
            elif p.role == "handle":
                ty = f"&{'' if p.ctype.const else 'mut '}{type_name(p.ctype.name)}"
                self.params.append(f"{name}: {f'Option<{ty}>' if p.nullable else ty}")
            elif p.role == "in_string":
                self.params.append(f"{name}: &str")
            elif p.role in ("handle_out", "out_scalar", "out_string"):
                pass
            else:
                raise EmitError(f"{fn.name}: parameter '{p.name}' has role {p.role}, unknown to the Rust emitter")

        # Locals written by C.
        if self.out is not None:
            if self.out.role == "out_scalar":
                self.pre.append(f"let mut out_value: {_SCALAR_TYPES[self.out.ctype.pointee]} = 0;")
            else:
                self.pre.append(
                    "let mut out_string: [std::ffi::c_char; OUT_STRING_CAPACITY] = [0; OUT_STRING_CAPACITY];"
                )

        # `in string` parameters as C strings (c_string refuses a NUL byte).
        for p in fn.params:
            if p.role == "in_string":
                self.pre.append(f"let c_{p.name} = c_string(FUNC, {_rust_str(p.name)}, {ident(p.name)})?;")

        # Derived dims first, so that every size is known before the checks.
        for dim, src in derived.items():
            self.pre.append(f"let {ident(dim)} = {self.len_expr(fn.param(src), ident(slice_of[src]))};")
            unit = " in bytes" if self.generic_bytes(fn.param(src)) else ""
            self.docs.append(f"`{dim}` is the length of `{slice_of[src]}`{unit}.")

        # Length checks.
        sources = set(derived.values())
        for p in fn.tensors:
            if p.name in sources:
                continue
            if v.is_inplace() and p.name == v.merged_out:
                continue  # the same slice as merged_in, checked as that
            t = p.tensor
            sname = ident(slice_of[p.name])
            shape_text = (
                t.shape_str()
                + (f" with item stride {t.stride}" if t.stride else "")
                + (f" with row stride {t.ld}" if t.ld else "")
            )
            dims = f"&[{', '.join(_expr_rust(e) for e in t.shape)}]"
            args = f"FUNC, {_rust_str(p.name)}, {self.len_expr(p, sname)}, {_rust_str(shape_text)}, {dims}"
            if t.stride:
                # A batch of items: (count - 1) * stride + the extent of one.
                ld = f"Some({ident(t.ld)})" if t.ld else "None"
                check = f"check_batched({args}, {ld}, {ident(t.stride)})?;"
            elif t.ld:
                check = f"check_strided({args}, {ident(t.ld)})?;"
            else:
                check = f"check_dense({args})?;"
            if t.nullable:
                self.pre.extend([f"if let Some({sname}) = &{sname} {{", f"    {check}", "}"])
            else:
                self.pre.append(check)

        # Sizes as C's int64_t, converted in C order in one statement.
        c_dims = [(p.name, "out_string.len()" if p.name in hidden else ident(p.name)) for p in fn.params if p.role == "dim"]
        if c_dims:
            names = ", ".join(f"c_{d}" for d, _ in c_dims)
            pairs = ", ".join(f"({_rust_str(d)}, {value})" for d, value in c_dims)
            self.pre.append(f"let [{names}] = c_dims(FUNC, [{pairs}])?;")

        # C arguments, in C order.
        for p in fn.params:
            name = ident(p.name)
            if p.name == self.receiver:
                self.args.append(self.self_expr)
            elif p.role == "dim":
                self.args.append(f"c_{p.name}")
            elif p.role in ("scalar", "flag"):
                self.args.append(self.scalar_arg(p))
            elif p.role == "tensor":
                self.args.append(self.tensor_arg(p, ident(slice_of[p.name])))
            elif p.role == "handle_out":
                self.args.append("&mut out_handle")
            elif p.role == "out_scalar":
                self.args.append("&mut out_value")
            elif p.role == "out_string":
                self.args.append("out_string.as_mut_ptr()")
            elif p.role == "in_string":
                self.args.append(f"c_{p.name}.as_ptr()")
            elif p.role in ("context", "handle"):
                if p.role == "handle" and p.nullable:
                    self.args.append(f"{name}.map_or(std::ptr::null_mut(), |h| h.raw.as_ptr())")
                else:
                    self.args.append(f"{name}.raw.as_ptr()")

        # Tensor notes for rustdoc.
        for p in fn.tensors:
            t = p.tensor
            if v.is_inplace() and p.name == v.merged_out:
                continue
            role = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            if v.is_inplace() and p.name == v.merged_in:
                role = f"input, overwritten with the output `{v.merged_out}`"
            extra = ""
            if t.stride:
                extra += f", item stride `{t.stride}` (0: one item for all)"
            if t.ld:
                extra += f", row stride `{t.ld}`"
            if t.nullable:
                extra += ", optional (`None` is NULL in C)"
            if t.dtype in ("bf16", "f16"):
                extra += f", {t.dtype} bits in `u16` (see [`half`])"
            if self.generic_bytes(p):
                extra += ", any [`Element`] type, its length counted in bytes"
            elif t.dtype == "u8":
                extra += ", raw bytes"
            shape = ", ".join(str(e) for e in t.shape)
            self.tensor_lines.append(f"- `{slice_of[p.name]}`: {role}, `{t.dtype}[{shape}]`{extra}")

    def tensor_arg(self, p: Param, sname: str) -> str:
        v = self.v
        mutable = p.tensor.direction != "in"
        # u8 is `void *` in C: the pointer of a u8 (or generic Element) slice or view is cast.
        cast = ".cast()" if p.tensor.dtype == "u8" else ""
        if v.is_inplace() and p.name in (v.merged_in, v.merged_out):
            # One pointer for both: the C function gets exactly the same address.
            if not any(s.startswith(f"let {v.merged_in}_ptr ") for s in self.pre):
                self.pre.append(f"let {v.merged_in}_ptr = {sname}.as_mut_ptr(){cast};")
            return f"{v.merged_in}_ptr" + (".cast_const()" if p.name == v.merged_in else "")
        if p.tensor.nullable:
            if mutable:
                return f"{sname}.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr(){cast})"
            return f"{sname}.map_or(std::ptr::null(), |s| s.as_ptr(){cast})"
        return f"{sname}.as_mut_ptr(){cast}" if mutable else f"{sname}.as_ptr(){cast}"

    def scalar_type(self, p: Param) -> str:
        k = p.ctype.kind
        if k == "enum":
            return type_name(p.ctype.name)
        return _SCALAR_TYPES[k]

    def scalar_arg(self, p: Param) -> str:
        if p.ctype.kind == "enum":
            return f"{ident(p.name)}.to_raw()"
        return ident(p.name)

    def call(self) -> str:
        args = ", ".join(a for a in self.args if a)
        return f"sys::{self.fn.name}({args})"

    def generic_params(self) -> str:
        return f"<{', '.join(self.generics)}>" if self.generics else ""

    def safety_notes(self) -> List[str]:
        """What makes the call of a non-kernel function sound, from its parameters."""
        fn = self.fn
        notes: List[str] = []
        for p in fn.params:
            if p.name == self.receiver:
                notes.append(
                    "the pointer of `self` is owned by it and live"
                    + (
                        " (other threads may be calling on it too,\nwhich the C library allows for a context)"
                        if p.role == "context"
                        else "; the type is not Sync, so no\nother thread uses it during the call"
                    )
                )
            elif p.role == "context":
                notes.append(f"`{p.name}` is a live context borrowed for the call (a context may be used\nby several threads at once)")
            elif p.role == "handle":
                notes.append(
                    f"`{p.name}` is a live {type_name(p.ctype.name)} borrowed for the call"
                    + ("" if p.ctype.const else " mutably, so no other argument is the same object")
                )
        if fn.tensors:
            notes.append(
                "every slice length was checked above against the header's contract, so C reads\n"
                "and writes only inside the slices" + (" (u8 tensors: their size in bytes; every\n"
                "`Element` type is plain data, valid for any bit pattern)" if any(
                    p.tensor.dtype == "u8" for p in fn.tensors) else "")
            )
        for p in fn.params:
            if p.role == "in_string":
                notes.append(f"`c_{p.name}` is a NUL-terminated copy of `{p.name}` that outlives the call; C only reads it")
        if any(p.role == "handle_out" for p in fn.params):
            notes.append("`out_handle` is a local that outlives the call; C writes the new handle there on success only")
        if self.out is not None and self.out.role == "out_scalar":
            notes.append("`out_value` is a local that outlives the call; C writes it on success only")
        if self.out is not None and self.out.role == "out_string":
            notes.append(
                f"`out_string` is a local buffer whose size is passed as `{self.out.capacity}`; C writes\n"
                "at most that many bytes"
            )
        if any(p.role in ("tensor", "handle", "context", "out_scalar", "out_string", "handle_out") for p in fn.params):
            notes.append("the C function keeps no pointer to the arguments after it returns")
        if not notes:
            notes.append("the arguments are plain values; the function has no preconditions")
        return notes


# --- emit ---------------------------------------------------------------------


class Emitter:
    def __init__(self, api: Api):
        self.api = api
        self.status = api.status_enum
        ok = [e for e in self.status.values if e.value == 0]
        if not ok:
            raise EmitError(f"{self.status.name} has no enumerator with value 0 (success)")
        self.ok = ok[0]
        handles_by_name = {h.name: h for h in api.handles}
        self.handles = handles_by_name
        self.destroyers = {h.destroy for h in api.handles if h.destroy}
        # Classify functions.
        self.kernels: List[Function] = []
        # handle -> [(function, name of the receiver parameter)]
        self.methods: Dict[str, List[Tuple[Function, str]]] = {h: [] for h in handles_by_name}
        self.ctors: Dict[str, List[Function]] = {h: [] for h in handles_by_name}
        self.free: List[Function] = []
        self.context_handle: Optional[str] = None
        for f in api.functions:
            contexts = [p for p in f.params if p.role == "context"]
            if len(contexts) > 1:
                raise EmitError(f"{f.name}: more than one context parameter")
            for p in contexts:
                if self.context_handle not in (None, p.ctype.name):
                    raise EmitError(f"{f.name}: a second context type {p.ctype.name}")
                self.context_handle = p.ctype.name
        for f in api.functions:
            if f.name in self.destroyers:
                continue
            first = f.params[0] if f.params else None
            second = f.params[1] if len(f.params) > 1 else None
            if any(p.role == "handle_out" for p in f.params):
                hout = [p for p in f.params if p.role == "handle_out"]
                if len(hout) != 1 or f.returns.kind != "enum" or f.returns.name != self.status.name:
                    raise EmitError(f"{f.name}: a constructor must return {self.status.name} and create one handle")
                self.ctors[hout[0].handle_type].append(f)
            elif f.is_kernel:
                if f.returns.name != self.status.name:
                    raise EmitError(f"{f.name}: a kernel must return {self.status.name}")
                self.kernels.append(f)
            elif first is not None and first.role == "handle":
                self.methods[first.ctype.name].append((f, first.name))
            elif first is not None and first.role == "context":
                if second is not None and second.role == "handle":
                    self.methods[second.ctype.name].append((f, second.name))
                else:
                    self.methods[first.ctype.name].append((f, first.name))
            else:
                if any(p.role in ("context", "handle") for p in f.params):
                    raise EmitError(f"{f.name}: a context or handle must be the first parameter (or a handle the second, after a context)")
                self.free.append(f)
        if self.context_handle is None and self.kernels:
            raise EmitError("kernels without a context type")
        # The memory handle: the one whose address kernels take (kb_buffer).
        memory = {f.params[0].ctype.name for f in api.functions if f.returns_address and f.params and f.params[0].role == "handle"}
        if len(memory) > 1:
            raise EmitError(f"more than one handle type with a @returns address function: {sorted(memory)}")
        self.memory_handle = memory.pop() if memory else None
        if self.kernels and self.memory_handle is None:
            # kernels! (runtime.rs) defines a `_buf` form of every kernel.
            raise EmitError("kernels without a memory handle (a @returns address function) for their _buf forms")
        self._check_names()

    def _check_names(self):
        names: Dict[str, str] = {}
        for f in self.kernels:
            for v in variants(f):
                for name in (v.rust_name, v.rust_name + "_buf"):
                    if name in names:
                        raise EmitError(f"{f.name}: Rust name {name} is also used by {names[name]}")
                    names[name] = f.name
        for f, receiver in self.methods.get(self.context_handle, []):
            n = self.method_name(f, receiver)
            if n in names:
                raise EmitError(f"{f.name}: Rust name {n} is also used by {names[n]}")
            names[n] = f.name
        free: Dict[str, str] = {v.rust_name: f.name for f in self.kernels for v in variants(f)}
        for f in self.free:
            n = fn_rust_name(f)
            if n in free:
                raise EmitError(f"{f.name}: Rust name {n} is also used by {free[n]}")
            free[n] = f.name

    # -- top level --

    def lib_rs(self) -> str:
        api = self.api
        parts = [banner("//"), _CRATE_DOC.format(version=api.version_string, ctx=type_name(self.context_handle or "kb_context"))]
        parts.append(_PRELUDE)
        parts.append(self.support_modules())
        parts.append(self.version_consts())
        for e in api.enums:
            parts.append(self.enum(e))
        parts.append(self.error())
        for h in api.handles:
            parts.append(self.handle(h))
        for f in self.free:
            parts.append(self.free_fn(f))
        if self.kernels:
            parts.append(self.kernels_block())
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)

    def support_modules(self) -> str:
        out = [
            f"// The hand-written runtime (src/{RUNTIME_MODULE}.rs) that the generated code below calls:",
            "// the `kernels!` macro, length checks, sizes, statuses, the default context.",
            "#[macro_use]",
            f"mod {RUNTIME_MODULE};",
            f"use {RUNTIME_MODULE}::*;",
            f"pub use {RUNTIME_MODULE}::with_default_context;",
            "",
            "// Hand-written modules (src/<name>.rs), built on the generated API below.",
        ]
        for name, public, items in SUPPORT_MODULES:
            out.append(f"{'pub ' if public else ''}mod {name};")
        for name, public, items in SUPPORT_MODULES:
            if items:
                out.append(f"pub use {name}::{{{', '.join(items)}}};")
        return "\n".join(out) + "\n"

    def version_consts(self) -> str:
        a = self.api
        major, minor, patch = a.version
        return (
            "/// Major version of the C API this crate was generated from.\n"
            f"pub const VERSION_MAJOR: u32 = {major};\n"
            "/// Minor version of the C API this crate was generated from.\n"
            f"pub const VERSION_MINOR: u32 = {minor};\n"
            "/// Patch version of the C API this crate was generated from.\n"
            f"pub const VERSION_PATCH: u32 = {patch};\n"
            "/// `MAJOR * 10000 + MINOR * 100 + PATCH`; compare with [`version_number`].\n"
            f"pub const VERSION_NUMBER: u32 = {a.version_number};\n"
            "/// `\"MAJOR.MINOR.PATCH\"`; compare with [`version_string`].\n"
            f"pub const VERSION_STRING: &str = {_rust_str(a.version_string)};\n"
        )

    def enum(self, e: Enum) -> str:
        tn = type_name(e.name)
        lines = [rustdoc(e.doc)]
        lines.append("///\n/// Generated from the C enum `" + e.name + "`; new values may be added, so matches need a `_` arm.\n")
        lines.append("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\n#[non_exhaustive]\n")
        lines.append(f"pub enum {tn} {{\n")
        for v in e.values:
            lines.append(rustdoc(v.doc, "    ") if v.doc else "")
            lines.append(f"    {camel(v.name[len(e.prefix):])},\n")
        lines.append("}\n\n")
        lines.append(f"impl {tn} {{\n")
        lines.append(f"    /// Every value, in declaration order.\n    pub const ALL: &'static [{tn}] = &[\n")
        for v in e.values:
            lines.append(f"        {tn}::{camel(v.name[len(e.prefix):])},\n")
        lines.append("    ];\n\n")
        lines.append("    /// The numeric value of the C enumerator.\n    pub const fn code(self) -> i32 {\n        match self {\n")
        for v in e.values:
            lines.append(f"            {tn}::{camel(v.name[len(e.prefix):])} => {v.value},\n")
        lines.append("        }\n    }\n\n")
        lines.append("    /// The value with this numeric code, if this version knows it.\n")
        lines.append(f"    pub const fn from_code(code: i32) -> Option<{tn}> {{\n        match code {{\n")
        for v in e.values:
            lines.append(f"            {v.value} => Some({tn}::{camel(v.name[len(e.prefix):])}),\n")
        lines.append("            _ => None,\n        }\n    }\n\n")
        lines.append(
            f"    /// The C enumerator's name without its prefix, e.g. `{e.values[0].name[len(e.prefix):]}`.\n"
            "    pub const fn name(self) -> &'static str {\n        match self {\n"
        )
        for v in e.values:
            lines.append(f"            {tn}::{camel(v.name[len(e.prefix):])} => {_rust_str(v.name[len(e.prefix):])},\n")
        lines.append("        }\n    }\n\n")
        lines.append(f"    /// The raw value passed to C.\n    #[inline]\n    pub const fn to_raw(self) -> sys::{e.name} {{\n        match self {{\n")
        for v in e.values:
            lines.append(f"            {tn}::{camel(v.name[len(e.prefix):])} => sys::{e.name}_{v.name},\n")
        lines.append("        }\n    }\n\n")
        lines.append(f"    /// The value for a raw C value, if this version knows it.\n    #[inline]\n")
        lines.append(f"    pub const fn from_raw(raw: sys::{e.name}) -> Option<{tn}> {{\n        match raw {{\n")
        for v in e.values:
            lines.append(f"            sys::{e.name}_{v.name} => Some({tn}::{camel(v.name[len(e.prefix):])}),\n")
        lines.append("            _ => None,\n        }\n    }\n}\n\n")
        lines.append(f"impl fmt::Display for {tn} {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n")
        lines.append("        f.write_str(self.name())\n    }\n}\n")
        return "".join(lines)

    def error(self) -> str:
        return _ERROR.format(status=type_name(self.status.name), ok=camel(self.ok.name[len(self.status.prefix):]))

    # -- handles --

    def handle(self, h) -> str:
        tn = type_name(h.name)
        prefix = _strip_prefix(h.name) + "_"
        is_ctx = h.name == self.context_handle
        out = [rustdoc(h.doc)]
        if is_ctx:
            out.append(doc_lines([""] + _CONTEXT_DOC.split("\n")))
        elif h.name == self.memory_handle:
            out.append(doc_lines([""] + _MEMORY_DOC.format(tn=tn, ctx=type_name(self.context_handle)).split("\n")))
        out.append(f"pub struct {tn} {{\n    raw: NonNull<sys::{h.name}>,\n")
        if is_ctx:
            out.append("    // Sync: the C library lets threads share a context (see the impls below).\n")
            out.append("    _marker: PhantomData<sys::" + h.name + ">,\n}\n\n")
            out.append(
                f"// Safety: the C object may move between threads (it holds no thread-local\n"
                f"// state), and the C library makes every call on it safe from several\n"
                f"// threads at once (kernelbridge.h, \"Contexts and errors\": the worker pool\n"
                f"// serves one call at a time, messages are per thread, CUDA calls take\n"
                f"// turns); Drop, which destroys it, needs ownership, so no call is in flight.\n"
                f"unsafe impl Send for {tn} {{}}\n"
                f"unsafe impl Sync for {tn} {{}}\n\n"
            )
        else:
            out.append("    // Not Sync: mutation goes through &mut self; share it behind a Mutex.\n")
            out.append("    _marker: PhantomData<Cell<()>>,\n}\n\n")
            out.append(
                f"// Safety: the C object may move between threads (it holds no thread-local\n"
                f"// state); it is only never used by two threads at once, which !Sync ensures.\n"
                f"unsafe impl Send for {tn} {{}}\n\n"
            )
        if h.destroy:
            out.append(
                f"impl Drop for {tn} {{\n    fn drop(&mut self) {{\n"
                f"        // Safety: the pointer came from the C constructor, is owned by self\n"
                f"        // and is released exactly once, here.\n"
                f"        unsafe {{ sys::{h.destroy}(self.raw.as_ptr()) }}\n    }}\n}}\n\n"
            )
        out.append(
            f"impl fmt::Debug for {tn} {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n"
            f"        f.debug_struct({_rust_str(tn)}).field(\"raw\", &self.raw).finish()\n    }}\n}}\n\n"
        )
        out.append(f"impl {tn} {{\n")
        for f in self.ctors[h.name]:
            out.append(self.ctor(f, h, tn, prefix))
        out.append(
            f"    /// The C pointer, for use with the raw `sys` declarations.  It stays\n"
            f"    /// owned by `self`: do not destroy it, and do not use it after `self` is dropped.\n"
            f"    #[inline]\n    pub fn as_raw(&self) -> *mut sys::{h.name} {{\n        self.raw.as_ptr()\n    }}\n\n"
        )
        for f, receiver in self.methods[h.name]:
            out.append(self.handle_method(f, receiver))
        out.append("}\n")
        return "".join(out)

    def ctor(self, f: Function, h, tn: str, prefix: str) -> str:
        name = fn_rust_name(f)
        if name.startswith(prefix):
            name = name[len(prefix):]
        if name == "create":
            name = "new"
        elif name.startswith("create_"):
            name = name[len("create_"):]
        b = _Body(self.api, Variant(f), None, "")
        where = "the context" if f.has_context else "the calling thread's [`last_error`]"
        out = [rustdoc(f.doc, "    ")]
        out.append(doc_lines(["", "# Errors", "", f"The status of the C call, with its message (read from {where})."], "    "))
        out.append(f"    pub fn {ident(name)}{b.generic_params()}({', '.join(b.params)}) -> Result<{tn}> {{\n")
        out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre:
            out.append(f"        {s}\n")
        out.append(f"        let mut out_handle: *mut sys::{h.name} = std::ptr::null_mut();\n")
        out.extend(f"{line}\n" for line in _safety(b.safety_notes(), "        "))
        out.append(f"        let raw_status = unsafe {{ {b.call()} }};\n")
        out.append(f"        check_status(FUNC, raw_status, {b.msg_ctx})?;\n")
        out.append("        match NonNull::new(out_handle) {\n")
        out.append(f"            Some(raw) => Ok({tn} {{ raw, _marker: PhantomData }}),\n")
        out.append("            None => Err(Error::internal(FUNC, \"returned success but no handle\")),\n        }\n    }\n\n")
        return "".join(out)

    def _returns(self, f: Function, b: _Body, indent: str) -> Tuple[str, List[str]]:
        """Rust return type and the statements computing it (the call included,
        with its Safety comment)."""
        r = f.returns
        call = b.call()
        safety = [s.strip() for s in _safety(b.safety_notes())]
        safety = ("\n" + indent).join(safety)
        if r.kind == "void":
            return "()", [safety, f"unsafe {{ {call} }}"]
        if r.kind == "string":
            if f.returns_string == "static":
                return "&'static str", [
                    safety,
                    "// The header documents the string as static (never freed, never changed);\n"
                    + indent
                    + "// it is NUL-terminated.",
                    f"let s = unsafe {{ CStr::from_ptr({call}) }};",
                    "s.to_str().unwrap_or(\"\")",
                ]
            return "String", [
                safety,
                "// The string is valid until the next call on the same object (or, without\n"
                + indent
                + "// one, the thread's next such call); it is copied at once, before any other call.",
                f"unsafe {{ CStr::from_ptr({call}) }}.to_string_lossy().into_owned()",
            ]
        if r.kind == "enum" and r.name == self.status.name:
            stmts = [safety, f"let raw_status = unsafe {{ {call} }};"]
            if b.out is None:
                return "Result<()>", stmts + [f"check_status(FUNC, raw_status, {b.msg_ctx})"]
            stmts.append(f"check_status(FUNC, raw_status, {b.msg_ctx})?;")
            if b.out.role == "out_scalar":
                return f"Result<{_SCALAR_TYPES[b.out.ctype.pointee]}>", stmts + ["Ok(out_value)"]
            return "Result<String>", stmts + ["Ok(string_from_c_buffer(&out_string))"]
        if r.kind == "enum":
            tn = type_name(r.name)
            return f"Result<{tn}>", [
                safety,
                f"let raw = unsafe {{ {call} }};",
                f"{tn}::from_raw(raw).ok_or_else(|| Error::internal(FUNC, \"returned a value unknown to this binding\"))",
            ]
        if r.kind in _SCALAR_TYPES:
            return _SCALAR_TYPES[r.kind], [safety, f"unsafe {{ {call} }}"]
        if f.returns_address:
            return "*mut std::ffi::c_void", [safety, f"unsafe {{ {call} }}"]
        raise EmitError(f"{f.name}: return type {r.spelling} is unknown to the Rust emitter")

    def method_name(self, f: Function, receiver: str) -> str:
        rp = f.param(receiver)
        prefix = _strip_prefix(rp.ctype.name) + "_"
        name = fn_rust_name(f)
        if name.startswith(prefix):
            name = name[len(prefix):]
        if receiver == "dst":
            name += "_from"
        return name

    def handle_method(self, f: Function, receiver: str) -> str:
        name = self.method_name(f, receiver)
        rp = f.param(receiver)
        mut_self = rp.role == "handle" and not rp.ctype.const and not f.returns_address
        b = _Body(self.api, Variant(f), receiver, "self.raw.as_ptr()")
        ret, stmts = self._returns(f, b, "        ")
        out = [rustdoc(f.doc, "    ")]
        extra: List[str] = []
        if b.tensor_lines:
            extra += ["", "# Arguments", ""] + b.tensor_lines
            if b.docs:
                extra += [""] + b.docs
        if f.returns.kind == "enum" and f.returns.name == self.status.name:
            where = "the context" if f.has_context else "the calling thread's [`last_error`]"
            extra += ["", "# Errors", "", f"The status of the C call, with its message (read from {where})."]
        elif ret.startswith("Result<"):
            extra += ["", "# Errors", "", "[`Status::Internal`] when C returns a value this binding does not know."]
        if f.returns_address:
            extra += ["", "An address to pass to kernels, never dereferenced by this crate (device memory",
                      "for a CUDA buffer)."]
        out.append(doc_lines(extra, "    "))
        params = ", ".join(["&mut self" if mut_self else "&self"] + b.params)
        out.append(f"    pub fn {ident(name)}{b.generic_params()}({params}) -> {ret} {{\n")
        if any("FUNC" in s for s in stmts) or any("FUNC" in s for s in b.pre):
            out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre + stmts:
            out.append(f"        {s}\n")
        out.append("    }\n\n")
        return "".join(out)

    def kernels_block(self) -> str:
        """Every kernel variant as an entry of the runtime's `kernels!` macro,
        which makes of each the Context method, its `_buf` form and the free
        function (runtime.rs)."""
        out = [
            "// Every kernel: its documentation, the signatures of its slice and buffer-view\n"
            "// methods, and the body they share.  `kernels!` (runtime.rs) defines the two\n"
            "// methods of Context and a free function on the thread's default context.\n"
            "kernels! {\n"
        ]
        entries = [self.kernel_entry(v) for f in self.kernels for v in variants(f)]
        out.append("\n".join(entries))
        out.append("}\n")
        return "".join(out)

    def kernel_entry(self, v: Variant) -> str:
        f = v.fn
        ctx = f.params[0].name
        b = _Body(self.api, v, ctx, "self.raw.as_ptr()")
        bv = _Body(self.api, v, ctx, "self.raw.as_ptr()", views=True)
        if b.generics or b.pre != bv.pre or b.call() != bv.call():
            raise EmitError(f"{f.name}: the slice and view forms need different bodies, which kernels! cannot share")
        lines: List[str] = []
        if v.is_inplace():
            lines += ["", f"In-place form of [`Context::{fn_rust_name(f)}`]: `{v.merged_out}` is written over `{v.merged_in}`."]
        lines += ["", "# Arguments", ""] + b.tensor_lines
        if b.docs:
            lines += [""] + b.docs
        out = [rustdoc(f.doc, "    "), doc_lines(lines, "    ")]
        out.append(f"    pub fn {v.rust_name}({', '.join(['&self'] + b.params)}) -> Result<()>;\n")
        out.append(f"    pub fn {v.rust_name}_buf({', '.join(['&self'] + bv.params)}) -> Result<()> {{\n")
        out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        out.extend(f"        {s}\n" for s in b.pre)
        if v.is_inplace():
            out.append(
                f"        // Safety: lengths checked above; `{v.merged_out}` is exactly `{v.merged_in}`, which the header\n"
                f"        // allows (alias({v.merged_in})); the rest holds for every kernel (runtime.rs, `kernels!`).\n"
            )
        else:
            out.append("        // Safety: lengths checked above; the rest holds for every kernel (runtime.rs, `kernels!`).\n")
        out.append(f"        let raw_status = unsafe {{ {b.call()} }};\n")
        out.append("        check_status(FUNC, raw_status, self.raw.as_ptr())\n    }\n")
        return "".join(out)

    def free_fn(self, f: Function) -> str:
        b = _Body(self.api, Variant(f), None, "")
        ret, stmts = self._returns(f, b, "    ")
        out = [rustdoc(f.doc)]
        if ret.startswith("Result<") and f.returns.kind == "enum" and f.returns.name == self.status.name:
            out.append(doc_lines(["", "# Errors", "", "The status of the C call, with its message (read from the "
                                  "calling thread's [`last_error`] right after the call)."]))
        out.append(f"pub fn {ident(fn_rust_name(f))}{b.generic_params()}({', '.join(b.params)}) -> {ret} {{\n")
        if any("FUNC" in s for s in stmts + b.pre):
            out.append(f"    const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre + stmts:
            out.append(f"    {s}\n")
        out.append("}\n")
        return "".join(out)

    # -- generated tests --

    def contract_tests(self) -> str:
        """A test per (kernel variant, checked tensor, slices or views): a
        tensor one element short fails with ShapeMismatch naming it, before C
        is called."""
        out = [banner("//"), _TEST_PRELUDE]
        forms = [False, True] if self.memory_handle else [False]
        for views in forms:
            for f in self.kernels:
                derived = derived_dims(f)
                sources = set(derived.values())
                for v in variants(f):
                    slice_of = {p.name: p.name for p in f.tensors}
                    if v.is_inplace():
                        slice_of[v.merged_out] = v.merged_in
                    checked = [
                        p
                        for p in f.tensors
                        if p.name not in sources and not (v.is_inplace() and p.name == v.merged_out)
                    ]
                    for target in checked:
                        out.append(self._contract_test(f, v, target.name, slice_of, views))
        return "".join(out)

    def _contract_test(self, f: Function, v: Variant, target: str, slice_of: Dict[str, str], views: bool) -> str:
        dims = {p.name: 2 for p in f.dims}
        flags = {p.name: False for p in f.params if p.role == "flag"}
        lets = []
        args = []
        mem = type_name(self.memory_handle) if views else None
        for p in f.params[1:]:
            name = ident(p.name)
            if p.role == "dim":
                if p.name not in derived_dims(f):
                    args.append("2")
            elif p.role == "flag":
                args.append("false")
            elif p.role == "scalar":
                k = p.ctype.kind
                if k == "enum":
                    args.append(f"{type_name(p.ctype.name)}::ALL[0]")
                else:
                    args.append({"bool": "false", "float32": "0.0", "float64": "0.0"}.get(k, "0"))
            elif p.role == "tensor":
                if v.is_inplace() and p.name == v.merged_out:
                    continue
                n = contracts.required_len(p, dims, flags)
                if p.name == target:
                    n -= 1
                elem = _ELEM_TYPES[p.tensor.dtype]
                mutable = p.tensor.direction != "in" or (v.is_inplace() and p.name == v.merged_in)
                mut = "mut " if mutable else ""
                if views:
                    nbytes = n * DTYPE_SIZES[p.tensor.dtype]
                    view = "view_mut" if mutable else "view"
                    lets.append(f"    let {mut}{p.name}_mem = {mem}::new(&ctx, {nbytes}).unwrap();\n")
                    lets.append(f"    let {mut}{name} = {p.name}_mem.{view}::<{elem}>().unwrap();\n")
                else:
                    lets.append(f"    let {mut}{name} = vec![{_ZEROS[elem]}; {n}];\n")
                ref = f"&mut {name}" if mutable else f"&{name}"
                args.append(f"Some({ref})" if p.tensor.nullable else ref)
        suffix = "_buf" if views else ""
        test_name = f"{v.rust_name}{suffix}_rejects_short_{slice_of[target]}"
        return (
            f"\n#[test]\nfn {test_name}() {{\n"
            "    let ctx = Context::new(Backend::Cpu, 1).unwrap();\n"
            + "".join(lets)
            + f"    let err = ctx.{v.rust_name}{suffix}({', '.join(args)}).unwrap_err();\n"
            f"    expect_mismatch(&err, {_rust_str(f.name)}, {_rust_str(slice_of[target])});\n}}\n"
        )

    # -- manifests --

    def safe_cargo_toml(self) -> str:
        return _SAFE_CARGO.format(banner=banner("#"), version=self.api.version_string, rust_version=RUST_VERSION)

    def sys_cargo_toml(self) -> str:
        return _SYS_CARGO.format(banner=banner("#"), version=self.api.version_string, rust_version=RUST_VERSION)


def emit(api: Api) -> Dict[str, str]:
    e = Emitter(api)
    return {
        f"{SAFE_DIR}/Cargo.toml": e.safe_cargo_toml(),
        f"{SAFE_DIR}/src/lib.rs": e.lib_rs(),
        f"{SAFE_DIR}/tests/contracts.rs": e.contract_tests(),
        f"{SYS_DIR}/Cargo.toml": e.sys_cargo_toml(),
    }


# --- templates ----------------------------------------------------------------

_SAFE_CARGO = """{banner}
[package]
name = "kernelbridge"
version = "{version}"
edition = "2021"
rust-version = "{rust_version}"
description = "Safe Rust API of kernelbridge, a C library of neural-network kernels (softmax, norms, GEMM, attention, sampling)."
license = "MIT"
readme = false
keywords = ["neural-network", "kernels", "ffi", "softmax", "gemm"]
categories = ["api-bindings", "science"]
include = ["Cargo.toml", "src/**/*.rs", "tests/**/*.rs", "examples/**/*.rs"]

[dependencies]
# Always the -sys crate generated from the same header, hence the exact version.
kernelbridge-sys = {{ version = "={version}", path = "../kernelbridge-sys" }}
"""

_SYS_CARGO = """{banner}
[package]
name = "kernelbridge-sys"
version = "{version}"
edition = "2021"
rust-version = "{rust_version}"
description = "Raw FFI declarations of kernelbridge (bindgen), with its C sources built by cc."
license = "MIT"
readme = false
links = "kernelbridge"
build = "build.rs"
keywords = ["ffi", "sys", "neural-network", "kernels"]
categories = ["external-ffi-bindings"]
# The C sources compiled by build.rs travel with the package.
include = ["Cargo.toml", "build.rs", "src/**/*.rs", "csrc/*.c", "csrc/*.h"]

[build-dependencies]
cc = "1.0.73"
"""

_CRATE_DOC = """//! Safe Rust API of kernelbridge {version}, a C library of neural-network kernels.
//!
//! Every kernel of the C header is a method of [`{ctx}`] and a free function
//! running on a per-thread default context:
//!
//! ```
//! # fn main() -> Result<(), kernelbridge::Error> {{
//! let x = [-1.0f32, 0.0, 1.0, 2.0];
//! let mut y = [0.0f32; 4];
//! kernelbridge::silu(&x, &mut y)?;                    // default context
//!
//! let ctx = kernelbridge::{ctx}::new(kernelbridge::Backend::Cpu, 2)?;
//! let mut probs = [0.0f32; 4];
//! ctx.softmax(2, 2, &x, &mut probs)?;                 // rows = 2, cols = 2
//! assert!((probs[0] + probs[1] - 1.0).abs() < 1e-6);
//! # Ok(())
//! # }}
//! ```
//!
//! Tensors are dense row-major slices.  A size that equals the length of a
//! one-dimensional argument is taken from that slice; the others are explicit
//! `usize` arguments.  Lengths are checked against the header's contracts
//! before C is called: a mismatch is an [`Error`] with
//! [`Status::ShapeMismatch`] naming the argument.  Outputs that the C API lets
//! alias an input have `*_inplace` forms taking one `&mut` slice.
//!
//! A [`{ctx}`] is `Send` and `Sync`: threads may share one (`&Context`,
//! `Arc<Context>`), with the same results as alone; on the CPU one call at a
//! time uses its worker threads and the others run on their calling thread.
//! A [`Buffer`] is `Send` but not `Sync` (its writes take `&mut self`):
//!
//! ```compile_fail
//! fn shared<T: Sync>() {{}}
//! shared::<kernelbridge::Buffer>();
//! ```
//!
//! # Buffers and CUDA
//!
//! A [`Buffer`] is memory the kernels can use: host memory for a CPU context,
//! device memory for a CUDA context ([`{ctx}::cuda`], [`cuda`] for device
//! queries).  Typed views of it ([`DeviceSlice`], [`DeviceSliceMut`]) go to
//! the `<kernel>_buf` form of every kernel method, which checks their lengths
//! as the slice form does:
//!
//! ```
//! # fn main() -> Result<(), kernelbridge::Error> {{
//! use kernelbridge::{{Backend, Buffer, {ctx}}};
//! let ctx = match {ctx}::cuda(0) {{
//!     Ok(gpu) => gpu,
//!     Err(_) => {ctx}::new(Backend::Cpu, 1)?, // no CUDA here: host buffers
//! }};
//! let x = Buffer::from_slice(&ctx, &[-1.0f32, 0.0, 1.0, 2.0])?;
//! let mut y = Buffer::new(&ctx, x.len())?;
//! ctx.silu_buf(&x.view::<f32>()?, &mut y.view_mut::<f32>()?)?;
//! let host: Vec<f32> = y.to_vec(&ctx)?;
//! assert!((host[2] - 0.731_058_6).abs() < 1e-6);
//! # Ok(())
//! # }}
//! ```
//!
//! # bfloat16 and float16
//!
//! The `<kernel>_bf16` and `<kernel>_f16` functions take the bit patterns of
//! those formats as `u16` (bfloat16: the upper half of an `f32`; float16: IEEE
//! binary16); [`half`] converts.  Their result is the `f32` kernel on the
//! widened inputs, rounded once to nearest even.
//!
//! # Storage formats
//!
//! Weights as GGUF files store them ([`Dtype`]: float16, bfloat16, GGML's
//! Q8_0 and Q4_0 blocks) are [`QTensor`]s, whose bytes are borrowed where
//! they lie (a memory-mapped file) or owned; [`{ctx}::linear_q`] and
//! [`{ctx}::embedding_q`] compute on them, [`{ctx}::quantize_q`] makes them.
//!
//! This crate is generated by tools/kbgen from core/include/kernelbridge.h;
//! the raw declarations are in [`sys`] (the `kernelbridge-sys` crate, which
//! compiles the C sources with `cc`).  The C library calls back into nothing,
//! so no Rust panic can unwind through C.
"""

_PRELUDE = """#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// Signatures mirror the C API, whose kernels take many sizes and scalars.
#![allow(clippy::too_many_arguments)]

use std::cell::Cell;
use std::ffi::CStr;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The raw declarations (the `kernelbridge-sys` crate).
pub use kernelbridge_sys as sys;
"""

_ERROR = """/// A failed call: the status code and the message describing it.
///
/// The message is copied from the context in the same call (C keeps only
/// the last one), or written by this crate for a contract it checks itself,
/// e.g. `"kb_silu: y has 3 elements, expected 4 for shape [n] = [4]"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {{
    status: {status},
    message: String,
}}

impl Error {{
    /// An error with this status and message.
    pub fn new(status: {status}, message: impl Into<String>) -> Error {{
        Error {{ status, message: message.into() }}
    }}

    /// The status code (never [`{status}::{ok}`]).
    pub fn status(&self) -> {status} {{
        self.status
    }}

    /// The numeric status code, as C returned it.
    pub fn code(&self) -> i32 {{
        self.status.code()
    }}

    /// The message, e.g. `"kb_softmax: cols must be > 0 when rows > 0"`.
    pub fn message(&self) -> &str {{
        &self.message
    }}

    #[cold]
    fn internal(func: &str, what: &str) -> Error {{
        Error::new({status}::Internal, format!("{{func}}: {{what}}"))
    }}
}}

impl fmt::Display for Error {{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{
        write!(f, "{{}} ({{}})", self.message, self.status)
    }}
}}

impl std::error::Error for Error {{}}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
"""

_MEMORY_DOC = """Owned by this value, freed on `Drop`; `Send` but not `Sync`.  Sizes and
offsets of its methods are in bytes; [`{tn}::view`], [`{tn}::slice`] and their
`_mut` forms give typed views ([`DeviceSlice`], [`DeviceSliceMut`]) that the
`<kernel>_buf` methods of [`{ctx}`] take.  Every operation takes a context:
a CUDA context on the buffer's device for device memory, any context for host
memory."""

_CONTEXT_DOC = """A context selects the backend and the CPU thread count; the message of a
failed call, which [`Error`] copies, is kept per thread.  It is `Send` and
`Sync`: threads may call kernels on one context at once (share it as
`&Context` or `Arc<Context>`).  Results never depend on the thread count or
on sharing.  Dropping it destroys the C context."""

_TEST_PRELUDE = """//! Every length check of the generated API: a slice, or a buffer view (the
//! `_buf` forms), one element short fails with ShapeMismatch naming it,
//! before C is called.
#![allow(clippy::all)]

use kernelbridge::*;

fn expect_mismatch(err: &Error, func: &str, name: &str) {
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    let prefix = format!("{func}: {name} has ");
    assert!(err.message().starts_with(&prefix), "message {:?} should start with {:?}", err.message(), prefix);
}
"""
