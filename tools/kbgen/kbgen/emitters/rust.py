"""Rust emitter: the safe crate `kernelbridge` (bindings/rust/kernelbridge).

The raw declarations live in the `kernelbridge-sys` crate, produced by bindgen
(bindings/rust/kernelbridge-sys/regen.sh), not by this emitter; this emitter
writes the -sys crate's Cargo.toml only, so that both crates carry the
header's version.  The safe crate calls the -sys declarations by their C
names (sys::kb_silu, sys::kb_status_KB_STATUS_OK, ...), which is bindgen's
naming for functions and for enum constants in its default "consts" style.

Rules, all derived from the model (no per-kernel knowledge here):

- A tensor becomes `&[f32]` / `&[i32]` (in), `&mut [f32]` / `&mut [i32]`
  (out, inout); a nullable one is wrapped in `Option`.
- A dim parameter is derived from a slice length when some non-nullable
  tensor is 1-D with exactly that dim (inputs preferred, see
  contracts.dim_sources); every other dim is an explicit `usize` argument.
- Every tensor that is not the source of a derived dim has its length checked
  against the contract before the call (`==` for dense tensors, `>=` for
  tensors with a row stride); a mismatch is an Error with status
  ShapeMismatch naming the argument.  The C library checks everything else
  (value ranges, strides, overlaps) and its message is copied into the Error.
- An output with `alias(x)` gets an in-place variant per aliased input, where
  the output and `x` are one `&mut` slice: Rust does not allow the same
  memory to be borrowed as `&` and `&mut` at once.
- A function with a context parameter becomes a method of Context and a free
  function running on the calling thread's default context; a function whose
  first parameter is a handle becomes a method of that handle's type; one
  with an out handle becomes its constructor; the @destroy function is Drop.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .. import contracts
from ..banner import banner
from ..model import Api, Const, Dim, Enum, Expr, Function, Param

NAME = "rust"

SAFE_DIR = "bindings/rust/kernelbridge"
SYS_DIR = "bindings/rust/kernelbridge-sys"
SAFE_CRATE = "kernelbridge"
SYS_CRATE = "kernelbridge-sys"
RUST_VERSION = "1.70"

_SCALAR_TYPES = {
    "bool": "bool",
    "int32": "i32",
    "int64": "i64",
    "uint32": "u32",
    "uint64": "u64",
    "float32": "f32",
    "float64": "f64",
}
_ELEM_TYPES = {"f32": "f32", "i32": "i32"}

_KEYWORDS = set(
    """as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod
    move mut pub ref return self Self static struct super trait true type unsafe use where while abstract become box
    do final macro override priv try typeof unsized virtual yield gen""".split()
)

# Names the generated bodies use for their own locals; parameters must not
# take them.
_RESERVED = {"raw_status", "FUNC", "ctx", "out_handle"}


class EmitError(Exception):
    pass


# --- naming -------------------------------------------------------------------


def _strip_prefix(name: str) -> str:
    return name[3:] if name.lower().startswith("kb_") else name


def camel(name: str) -> str:
    return "".join(w[:1].upper() + w[1:].lower() for w in name.split("_") if w)


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


def _expr_rust(e: Expr) -> str:
    if isinstance(e, Const):
        return f"{e.value}usize"
    if isinstance(e, Dim):
        return ident(e.name)
    return f"if {ident(e.flag)} {{ {_expr_rust(e.then)} }} else {{ {_expr_rust(e.otherwise)} }}"


class _Body:
    """Builds the parameter list, checks and the FFI call of a variant."""

    def __init__(self, api: Api, v: Variant, ctx_expr: Optional[str], skip_first: bool):
        self.v = v
        self.fn = v.fn
        self.ctx_expr = ctx_expr
        self.params: List[str] = []  # "name: Type"
        self.pre: List[str] = []  # statements before the call
        self.args: List[str] = []  # C call arguments
        self.docs: List[str] = []  # argument notes for rustdoc
        self.tensor_lines: List[str] = []
        self._build(skip_first)

    def _build(self, skip_first: bool):
        fn, v = self.fn, self.v
        for p in fn.params:
            if p.name in _RESERVED and p.role not in ("context", "handle", "handle_out"):
                raise EmitError(f"{fn.name}: parameter name '{p.name}' is reserved by the Rust emitter")
        derived = derived_dims(fn)
        params = fn.params[1:] if skip_first else fn.params
        if skip_first:
            first = fn.params[0]
            self.args.append(self.ctx_expr if first.role in ("context", "handle") else "")
        # Slice names as they appear in the Rust signature.
        slice_of = {p.name: p.name for p in fn.tensors}
        if v.is_inplace():
            slice_of[v.merged_out] = v.merged_in

        # Rust parameters, in C order.
        for p in params:
            name = ident(p.name)
            if p.role == "dim":
                if p.name in derived:
                    continue
                self.params.append(f"{name}: usize")
            elif p.role in ("scalar", "flag"):
                self.params.append(f"{name}: {self.scalar_type(p)}")
            elif p.role == "tensor":
                if v.is_inplace() and p.name == v.merged_out:
                    continue
                elem = _ELEM_TYPES[p.tensor.dtype]
                mutable = p.tensor.direction != "in" or (v.is_inplace() and p.name == v.merged_in)
                ty = f"&mut [{elem}]" if mutable else f"&[{elem}]"
                if p.tensor.nullable:
                    ty = f"Option<{ty}>"
                self.params.append(f"{name}: {ty}")
            elif p.role in ("context", "handle", "handle_out"):
                pass
            else:
                raise EmitError(f"{fn.name}: parameter '{p.name}' has role {p.role}, unknown to the Rust emitter")

        # Derived dims first, so that every size is known before the checks.
        for dim, src in derived.items():
            self.pre.append(f"let {ident(dim)} = {ident(slice_of[src])}.len();")
            self.docs.append(f"`{dim}` is `{slice_of[src]}.len()`.")

        # Length checks.
        sources = set(derived.values())
        for p in fn.tensors:
            if p.name in sources:
                continue
            if v.is_inplace() and p.name == v.merged_out:
                continue  # the same slice as merged_in, checked as that
            t = p.tensor
            sname = ident(slice_of[p.name])
            shape_var = f"{p.name}_shape"
            shape_text = t.shape_str() + (f" with row stride {t.ld}" if t.ld else "")
            stmts = [f"let {shape_var} = [{', '.join(_expr_rust(e) for e in t.shape)}];"]
            if t.ld:
                want = f"strided_len(FUNC, {_rust_str(p.name)}, {shape_var}[0], {shape_var}[1], {ident(t.ld)})?"
                check = "check_len_at_least"
            else:
                want = f"dense_len(FUNC, {_rust_str(p.name)}, &{shape_var})?"
                check = "check_len"
            stmts.append(f"let {p.name}_len = {want};")
            stmts.append(
                f"{check}(FUNC, {_rust_str(slice_of[p.name])}, {sname}.len(), {p.name}_len, {_rust_str(shape_text)}, &{shape_var})?;"
            )
            if t.nullable:
                stmts = [f"if let Some({sname}) = &{sname} {{"] + ["    " + x for x in stmts] + ["}"]
            self.pre.extend(stmts)

        # C arguments, in C order.
        for p in params:
            name = ident(p.name)
            if p.role == "dim":
                self.pre.append(f"let c_{p.name} = to_c_dim(FUNC, {_rust_str(p.name)}, {name})?;")
                self.args.append(f"c_{p.name}")
            elif p.role in ("scalar", "flag"):
                self.args.append(self.scalar_arg(p))
            elif p.role == "tensor":
                sname = ident(slice_of[p.name])
                mutable = p.tensor.direction != "in"
                if v.is_inplace() and p.name in (v.merged_in, v.merged_out):
                    # One pointer for both: the C function gets exactly the same address.
                    if not any(s.startswith(f"let {v.merged_in}_ptr ") for s in self.pre):
                        self.pre.append(f"let {v.merged_in}_ptr = {sname}.as_mut_ptr();")
                    expr = f"{v.merged_in}_ptr"
                    if p.name == v.merged_in:
                        expr = f"{v.merged_in}_ptr.cast_const()"
                elif p.tensor.nullable:
                    if mutable:
                        expr = f"{sname}.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr())"
                    else:
                        expr = f"{sname}.map_or(std::ptr::null(), |s| s.as_ptr())"
                else:
                    expr = f"{sname}.as_mut_ptr()" if mutable else f"{sname}.as_ptr()"
                self.args.append(expr)
            elif p.role == "handle_out":
                self.args.append("&mut out_handle")
            elif p.role in ("context", "handle"):
                raise EmitError(f"{fn.name}: only the first parameter may be a context or handle")

        # Tensor notes for rustdoc.
        for p in fn.tensors:
            t = p.tensor
            if v.is_inplace() and p.name == v.merged_out:
                continue
            role = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            if v.is_inplace() and p.name == v.merged_in:
                role = f"input, overwritten with the output `{v.merged_out}`"
            extra = ""
            if t.ld:
                extra += f", row stride `{t.ld}`"
            if t.nullable:
                extra += ", optional (`None` is NULL in C)"
            shape = ", ".join(str(e) for e in t.shape)
            self.tensor_lines.append(f"- `{slice_of[p.name]}`: {role}, `{t.dtype}[{shape}]`{extra}")

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


# --- emit ---------------------------------------------------------------------


def _kernel_safety(fn: Function, v: Variant) -> str:
    notes = [
        "the context pointer is live (owned by `self`) and used by this thread only\n//   (Context is not Sync)",
        "every slice length was checked above against the header's contract, so C reads\n//   and writes only inside the slices",
    ]
    if v.is_inplace():
        notes.append(f"`{v.merged_out}` is exactly `{v.merged_in}`, which the header allows (alias({v.merged_in}))")
    else:
        notes.append("outputs are `&mut` borrows, so they cannot overlap any other argument")
    if any(p.tensor.nullable for p in fn.tensors):
        notes.append("a `None` tensor is passed as NULL, which the header allows (nullable)")
    notes.append("the C function keeps no pointer after it returns")
    lines = ["// Safety:"]
    for n in notes:
        first, *rest = n.split("\n//   ")
        lines.append(f"// - {first}")
        lines.extend(f"//   {r}" for r in rest)
    return lines


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
        self.methods: Dict[str, List[Function]] = {h: [] for h in handles_by_name}
        self.ctors: Dict[str, List[Function]] = {h: [] for h in handles_by_name}
        self.free: List[Function] = []
        self.context_handle: Optional[str] = None
        for f in api.functions:
            if f.name in self.destroyers:
                continue
            if any(p.role == "handle_out" for p in f.params):
                hout = [p for p in f.params if p.role == "handle_out"]
                if len(hout) != 1 or f.returns.kind != "enum" or f.returns.name != self.status.name:
                    raise EmitError(f"{f.name}: a constructor must return {self.status.name} and create one handle")
                self.ctors[hout[0].handle_type].append(f)
            elif f.params and f.params[0].role == "context":
                if not f.is_kernel or f.returns.name != self.status.name:
                    raise EmitError(f"{f.name}: a function taking a context must return {self.status.name}")
                self.kernels.append(f)
                self.context_handle = f.params[0].ctype.name
            elif f.params and f.params[0].role == "handle":
                self.methods[f.params[0].ctype.name].append(f)
            else:
                self.free.append(f)
        for f in api.functions:
            for p in f.params[1:]:
                if p.role in ("context", "handle"):
                    raise EmitError(f"{f.name}: '{p.name}' must be the first parameter")
        if self.context_handle is None and self.kernels:
            raise EmitError("kernels without a context type")
        self._check_names()

    def _check_names(self):
        names: Dict[str, str] = {}
        for f in self.kernels:
            for v in variants(f):
                if v.rust_name in names:
                    raise EmitError(f"{f.name}: Rust name {v.rust_name} is also used by {names[v.rust_name]}")
                names[v.rust_name] = f.name
        for f in self.free:
            n = fn_rust_name(f)
            if n in names:
                raise EmitError(f"{f.name}: Rust name {n} is also used by {names[n]}")
            names[n] = f.name

    # -- top level --

    def lib_rs(self) -> str:
        api = self.api
        parts = [banner("//"), _CRATE_DOC.format(version=api.version_string, ctx=type_name(self.context_handle or "kb_context"))]
        parts.append(_PRELUDE)
        parts.append(self.version_consts())
        for e in api.enums:
            parts.append(self.enum(e))
        parts.append(self.error())
        parts.append(_HELPERS.format(ok=f"{self.status.name}_{self.ok.name}", status=self.status.name))
        for h in api.handles:
            parts.append(self.handle(h))
        parts.append(self.default_context())
        for f in self.free:
            parts.append(self.free_fn(f))
        for f in self.kernels:
            for v in variants(f):
                parts.append(self.free_kernel(v))
        return "\n".join(p.rstrip("\n") + "\n" for p in parts)

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
        out.append(f"pub struct {tn} {{\n    raw: NonNull<sys::{h.name}>,\n")
        out.append("    // Not Sync: the C object must be used by one thread at a time.\n")
        out.append("    _not_sync: PhantomData<Cell<()>>,\n}\n\n")
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
        for f in self.methods[h.name]:
            out.append(self.handle_method(f, prefix))
        if is_ctx:
            for f in self.kernels:
                for v in variants(f):
                    out.append(self.kernel_method(v))
        out.append("}\n")
        return "".join(out)

    def ctor(self, f: Function, h, tn: str, prefix: str) -> str:
        name = fn_rust_name(f)
        if name.startswith(prefix):
            name = name[len(prefix):]
        if name == "create":
            name = "new"
        b = _Body(self.api, Variant(f), None, skip_first=False)
        out = [rustdoc(f.doc, "    ")]
        out.append(doc_lines(["", "# Errors", "", "The status of the C call, with the C function's name as message."], "    "))
        out.append(f"    pub fn {name}({', '.join(b.params)}) -> Result<{tn}> {{\n")
        out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre:
            out.append(f"        {s}\n")
        out.append(f"        let mut out_handle: *mut sys::{h.name} = std::ptr::null_mut();\n")
        out.append(
            "        // Safety: every argument is a value or a pointer to a local that outlives\n"
            "        // the call; the C function writes the new handle there on success only.\n"
        )
        out.append(f"        let raw_status = unsafe {{ {b.call()} }};\n")
        out.append("        check_status(FUNC, raw_status, std::ptr::null())?;\n")
        out.append("        match NonNull::new(out_handle) {\n")
        out.append(f"            Some(raw) => Ok({tn} {{ raw, _not_sync: PhantomData }}),\n")
        out.append("            None => Err(Error::internal(FUNC, \"returned success but no handle\")),\n        }\n    }\n\n")
        return "".join(out)

    def _returns(self, f: Function, call: str, indent: str, ctx: str, safety: str) -> Tuple[str, List[str]]:
        """Rust return type and the statements computing it from `call`;
        `safety` justifies the call itself."""
        r = f.returns
        if r.kind == "void":
            return "()", [fsafety, f"unsafe {{ {call} }}"]
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
                "// The string is valid until the next call on the same object; it is\n"
                + indent
                + "// copied at once, before any other call.",
                f"unsafe {{ CStr::from_ptr({call}) }}.to_string_lossy().into_owned()",
            ]
        if r.kind == "enum" and r.name == self.status.name:
            return "Result<()>", [
                safety,
                f"let raw_status = unsafe {{ {call} }};",
                f"check_status(FUNC, raw_status, {ctx})",
            ]
        if r.kind == "enum":
            tn = type_name(r.name)
            return f"Result<{tn}>", [
                safety,
                f"let raw = unsafe {{ {call} }};",
                f"{tn}::from_raw(raw).ok_or_else(|| Error::internal(FUNC, \"returned a value unknown to this binding\"))",
            ]
        if r.kind in _SCALAR_TYPES:
            return _SCALAR_TYPES[r.kind], [safety, f"unsafe {{ {call} }}"]
        raise EmitError(f"{f.name}: return type {r.spelling} is unknown to the Rust emitter")

    def handle_method(self, f: Function, prefix: str) -> str:
        name = fn_rust_name(f)
        if name.startswith(prefix):
            name = name[len(prefix):]
        b = _Body(self.api, Variant(f), "self.raw.as_ptr()", skip_first=True)
        ret, stmts = self._returns(
            f,
            b.call(),
            "        ",
            "self.raw.as_ptr()",
            "// Safety: the pointer is owned by `self` and live; the type is not Sync, so\n"
            "        // no other thread uses it; the other arguments are plain values.",
        )
        out = [rustdoc(f.doc, "    ")]
        params = ", ".join(["&self"] + b.params)
        out.append(f"    pub fn {ident(name)}({params}) -> {ret} {{\n")
        if any("FUNC" in s for s in stmts) or any("FUNC" in s for s in b.pre):
            out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre + stmts:
            out.append(f"        {s}\n")
        out.append("    }\n\n")
        return "".join(out)

    def _kernel_doc(self, v: Variant, b: _Body, free: bool) -> List[str]:
        lines: List[str] = []
        if v.is_inplace():
            base = v.fn
            lines.append(
                f"In-place form of [`{('' if free else 'Context::')}{fn_rust_name(base)}`]: "
                f"`{v.merged_out}` is written over `{v.merged_in}`."
            )
            lines.append("")
        lines.append("# Arguments")
        lines.append("")
        lines.extend(b.tensor_lines)
        if b.docs:
            lines.append("")
            lines.extend(b.docs)
        lines.append("")
        lines.append("# Errors")
        lines.append("")
        lines.append(
            "[`Status::ShapeMismatch`] naming the argument when a slice length does not match the shape; "
            "otherwise the status and message of the C library (for example [`Status::InvalidArgument`] "
            "for an out-of-range scalar).  Nothing is written on error."
        )
        if free:
            lines.append("")
            lines.append(
                "Runs on the calling thread's default context (CPU, one thread; see [`with_default_context`])."
            )
        return lines

    def kernel_method(self, v: Variant) -> str:
        f = v.fn
        b = _Body(self.api, v, "self.raw.as_ptr()", skip_first=True)
        out = [rustdoc(f.doc, "    "), doc_lines([""] + self._kernel_doc(v, b, free=False), "    ")]
        params = ", ".join(["&self"] + b.params)
        out.append(f"    pub fn {v.rust_name}({params}) -> Result<()> {{\n")
        out.append(f"        const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre:
            out.append(f"        {s}\n")
        out.extend(f"        {line}\n" for line in _kernel_safety(f, v))
        out.append(f"        let raw_status = unsafe {{ {b.call()} }};\n")
        out.append("        check_status(FUNC, raw_status, self.raw.as_ptr())\n    }\n\n")
        return "".join(out)

    def free_kernel(self, v: Variant) -> str:
        f = v.fn
        b = _Body(self.api, v, "ctx", skip_first=True)
        names = [p.split(":")[0] for p in b.params]
        out = [rustdoc(f.doc), doc_lines([""] + self._kernel_doc(v, b, free=True))]
        out.append(f"pub fn {v.rust_name}({', '.join(b.params)}) -> Result<()> {{\n")
        out.append(f"    with_default_context(|ctx| ctx.{v.rust_name}({', '.join(names)}))\n}}\n")
        return "".join(out)

    def free_fn(self, f: Function) -> str:
        b = _Body(self.api, Variant(f), None, skip_first=False)
        ret, stmts = self._returns(
            f, b.call(), "    ", "std::ptr::null()", "// Safety: the arguments are plain values; the function has no preconditions."
        )
        out = [rustdoc(f.doc)]
        out.append(f"pub fn {ident(fn_rust_name(f))}({', '.join(b.params)}) -> {ret} {{\n")
        if any("FUNC" in s for s in stmts + b.pre):
            out.append(f"    const FUNC: &str = {_rust_str(f.name)};\n")
        for s in b.pre + stmts:
            out.append(f"    {s}\n")
        out.append("}\n")
        return "".join(out)

    def default_context(self) -> str:
        return _DEFAULT_CONTEXT.format(ctx=type_name(self.context_handle))

    # -- generated tests --

    def contract_tests(self) -> str:
        """A test per (kernel variant, checked tensor): a buffer one element
        short fails with ShapeMismatch naming it, before C is called."""
        out = [banner("//"), _TEST_PRELUDE]
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
                    out.append(self._contract_test(f, v, target.name, slice_of))
        return "".join(out)

    def _contract_test(self, f: Function, v: Variant, target: str, slice_of: Dict[str, str]) -> str:
        dims = {p.name: 2 for p in f.dims}
        flags = {p.name: False for p in f.params if p.role == "flag"}
        lets = []
        args = []
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
                zero = "0.0f32" if elem == "f32" else "0i32"
                mutable = p.tensor.direction != "in" or (v.is_inplace() and p.name == v.merged_in)
                lets.append(f"    let {'mut ' if mutable else ''}{name} = vec![{zero}; {n}];\n")
                ref = f"&mut {name}" if mutable else f"&{name}"
                args.append(f"Some({ref})" if p.tensor.nullable else ref)
        test_name = f"{v.rust_name}_rejects_short_{slice_of[target]}"
        return (
            f"\n#[test]\nfn {test_name}() {{\n"
            "    let ctx = Context::new(Backend::Cpu, 1).unwrap();\n"
            + "".join(lets)
            + f"    let err = ctx.{v.rust_name}({', '.join(args)}).unwrap_err();\n"
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
//! A [`{ctx}`] may move to another thread but never be shared by two:
//!
//! ```compile_fail
//! fn shared<T: Sync>() {{}}
//! shared::<kernelbridge::{ctx}>();
//! ```
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

use std::cell::{Cell, OnceCell};
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

_HELPERS = """
/// Turns a C status into a Result, copying the context's message on failure.
#[inline]
fn check_status(func: &'static str, raw: sys::{status}, ctx: *const sys::kb_context) -> Result<()> {{
    if raw == sys::{ok} {{
        Ok(())
    }} else {{
        Err(failure(func, raw, ctx))
    }}
}}

#[cold]
#[inline(never)]
fn failure(func: &'static str, raw: sys::{status}, ctx: *const sys::kb_context) -> Error {{
    let message = if ctx.is_null() {{
        String::new()
    }} else {{
        // Safety: ctx is the live context the failing call used, on this
        // thread; the message is valid until the next call and copied at once.
        unsafe {{ CStr::from_ptr(sys::kb_context_last_error(ctx)) }}.to_string_lossy().into_owned()
    }};
    let status = match Status::from_raw(raw) {{
        Some(status) => status,
        None => return Error::internal(func, &format!("returned unknown status {{raw}}")),
    }};
    if message.is_empty() {{
        Error::new(status, format!("{{func}} failed"))
    }} else {{
        Error::new(status, message)
    }}
}}

/// A size as C's int64_t.
#[inline]
fn to_c_dim(func: &str, name: &str, value: usize) -> Result<i64> {{
    match i64::try_from(value) {{
        Ok(v) => Ok(v),
        Err(_) => Err(too_large(func, name, value)),
    }}
}}

#[cold]
#[inline(never)]
fn too_large(func: &str, name: &str, value: usize) -> Error {{
    Error::new(Status::InvalidArgument, format!("{{func}}: {{name}} must be <= {{}}, got {{value}}", i64::MAX))
}}

/// Elements of a dense tensor of this shape.
#[inline]
fn dense_len(func: &str, what: &str, dims: &[usize]) -> Result<usize> {{
    let mut n: usize = 1;
    for &d in dims {{
        n = match n.checked_mul(d) {{
            Some(n) => n,
            None => return Err(overflow(func, what, dims)),
        }};
    }}
    Ok(n)
}}

/// Elements spanned by a [rows, cols] matrix with row stride ld.
#[inline]
fn strided_len(func: &str, what: &str, rows: usize, cols: usize, ld: usize) -> Result<usize> {{
    if rows == 0 || cols == 0 {{
        return Ok(0);
    }}
    (rows - 1)
        .checked_mul(ld)
        .and_then(|n| n.checked_add(cols))
        .ok_or_else(|| overflow(func, what, &[rows, cols]))
}}

#[cold]
#[inline(never)]
fn overflow(func: &str, what: &str, dims: &[usize]) -> Error {{
    Error::new(Status::OutOfMemory, format!("{{func}}: size of {{what}} overflows (shape {{dims:?}})"))
}}

#[inline]
fn check_len(func: &str, name: &str, len: usize, want: usize, shape: &str, dims: &[usize]) -> Result<()> {{
    if len == want {{
        Ok(())
    }} else {{
        Err(mismatch(func, name, len, want, "", shape, dims))
    }}
}}

#[inline]
fn check_len_at_least(func: &str, name: &str, len: usize, want: usize, shape: &str, dims: &[usize]) -> Result<()> {{
    if len >= want {{
        Ok(())
    }} else {{
        Err(mismatch(func, name, len, want, "at least ", shape, dims))
    }}
}}

#[cold]
#[inline(never)]
fn mismatch(func: &str, name: &str, len: usize, want: usize, qualifier: &str, shape: &str, dims: &[usize]) -> Error {{
    Error::new(
        Status::ShapeMismatch,
        format!("{{func}}: {{name}} has {{len}} elements, expected {{qualifier}}{{want}} for shape {{shape}} = {{dims:?}}"),
    )
}}
"""

_CONTEXT_DOC = """A context selects the backend and the CPU thread count, and keeps the
message of its last failure, which [`Error`] copies.  It is `Send` but not
`Sync`: one thread at a time, as the C library requires.  Results never
depend on the thread count.  Dropping it destroys the C context."""

_DEFAULT_CONTEXT = """
thread_local! {{
    static DEFAULT_CONTEXT: OnceCell<{ctx}> = const {{ OnceCell::new() }};
}}

/// Runs `f` with the calling thread's default context, created on first use
/// with [`Backend::Cpu`] and one thread (the C library's defaults for a NULL
/// context).  The free kernel functions of this crate use it.
///
/// # Errors
///
/// The error of creating the context, or of `f`; [`Status::Internal`] when
/// called while the thread's locals are being destroyed.
pub fn with_default_context<R>(f: impl FnOnce(&{ctx}) -> Result<R>) -> Result<R> {{
    let run = |cell: &OnceCell<{ctx}>| -> Result<R> {{
        if let Some(ctx) = cell.get() {{
            return f(ctx);
        }}
        let created = {ctx}::new(Backend::Cpu, 1)?;
        f(cell.get_or_init(|| created))
    }};
    match DEFAULT_CONTEXT.try_with(run) {{
        Ok(result) => result,
        Err(_) => Err(Error::internal("kernelbridge", "the thread's default context is gone (thread exiting)")),
    }}
}}
"""

_TEST_PRELUDE = """//! Every length check of the generated API: a slice one element short fails
//! with ShapeMismatch naming it, before C is called.
#![allow(clippy::all)]

use kernelbridge::*;

fn expect_mismatch(err: &Error, func: &str, name: &str) {
    assert_eq!(err.status(), Status::ShapeMismatch, "{err}");
    let prefix = format!("{func}: {name} has ");
    assert!(err.message().starts_with(&prefix), "message {:?} should start with {:?}", err.message(), prefix);
}
"""
