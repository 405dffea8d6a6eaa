"""Go binding: bindings/go/kernelbridge_gen.go.

The generated file holds everything that follows from the header:
  * the version constants;
  * one Go type per C enum (Status, Backend) with String(); the status enum
    also gives the sentinel errors ErrInvalidArgument, ... for errors.Is;
  * small functions without handles (VersionNumber, VersionString, ...);
  * for every kernel, a C helper in the cgo preamble that calls the kernel and,
    on failure, copies the context's message into the Context's message buffer
    in the same cgo call, a method on *Context that checks slice lengths
    against the contract before calling it, and a package-level function that
    runs the method on a pooled default context.

Hand-written code in bindings/go supplies Context (fields h and msg, method
fail), Error and the helpers named below (f32p, i32p, sizeOf, stridedSize,
pick, checkDim, checkLd, checkLen, checkMinLen, overflowError, closedError,
defaultContext, releaseDefault).

The output is gofmt-clean by construction (tabs, aligned const blocks are
avoided, one declaration per line); bindings/go's sync test runs gofmt on it.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from .. import contracts
from ..banner import banner
from ..model import Api, Cond, Const, Dim, Enum, Expr, Function, Param

NAME = "go"
OUT = "bindings/go/kernelbridge_gen.go"
PACKAGE = "kernelbridge"

# Longest message a context keeps, terminator included (core/src/internal.h).
MESSAGE_CAPACITY = 256

_INITIALISMS = {"id": "ID", "ids": "IDs", "kv": "KV", "cpu": "CPU", "cuda": "CUDA", "ok": "OK", "gpu": "GPU", "api": "API"}

_GO_KEYWORDS = set(
    "break case chan const continue default defer else fallthrough for func go goto if import interface map package "
    "range return select struct switch type var".split()
)
_GO_PREDECLARED = set(
    "any append bool byte cap close comparable complex complex64 complex128 copy delete error false float32 float64 "
    "imag int int8 int16 int32 int64 iota len make new nil panic print println real recover rune string true uint "
    "uint8 uint16 uint32 uint64 uintptr".split()
)
# Identifiers the generated bodies use besides the parameters.
_GENERATED_NAMES = {
    "C",
    "ctx",
    "err",
    "st",
    "runtime",
    "unsafe",
    "f32p",
    "i32p",
    "sizeOf",
    "stridedSize",
    "pick",
    "checkDim",
    "checkLd",
    "checkLen",
    "checkMinLen",
    "overflowError",
    "closedError",
    "defaultContext",
    "releaseDefault",
}

_GO_SCALAR = {
    "bool": "bool",
    "int32": "int32",
    "int64": "int64",
    "uint32": "uint32",
    "uint64": "uint64",
    "float32": "float32",
    "float64": "float64",
}
_C_SCALAR = {
    "bool": "C.bool",
    "int32": "C.int32_t",
    "int64": "C.int64_t",
    "uint32": "C.uint32_t",
    "uint64": "C.uint64_t",
    "float32": "C.float",
    "float64": "C.double",
}
_SLICE = {"f32": "[]float32", "i32": "[]int32"}
_PTR = {"f32": "f32p", "i32": "i32p"}


# --- names ---------------------------------------------------------------------


def _words(name: str) -> List[str]:
    return [w for w in name.lower().split("_") if w]


def _cap(word: str) -> str:
    return _INITIALISMS.get(word, word[:1].upper() + word[1:])


def exported(name: str) -> str:
    """kb_gelu_tanh -> GeluTanh; KB_BACKEND_CPU with prefix removed -> CPU."""
    name = name[3:] if name.lower().startswith("kb_") else name
    return "".join(_cap(w) for w in _words(name))


def local(name: str) -> str:
    """trans_a -> transA, n_ids -> nIDs; keywords and clashing names get 'Arg'."""
    words = _words(name)
    out = words[0] + "".join(_cap(w) for w in words[1:])
    if out in _GO_KEYWORDS or out in _GO_PREDECLARED or out in _GENERATED_NAMES:
        out += "Arg"
    return out


def enum_type(e: Enum) -> str:
    return exported(e.name)


def enum_value(api: Api, e: Enum, value_name: str) -> str:
    """Status values are bare (ShapeMismatch: they are the error codes);
    others carry their type (BackendCPU)."""
    short = exported(value_name[len(e.prefix) :] if value_name.startswith(e.prefix) else value_name)
    return short if e is api.status_enum else enum_type(e) + short


def value_string(e: Enum, value_name: str) -> str:
    return value_name[len(e.prefix) :] if value_name.startswith(e.prefix) else value_name


# --- doc comments ---------------------------------------------------------------


def _doc_lines(text: str) -> List[str]:
    """Free text as Go comment lines.  Lines are left-aligned: an indented
    line would start a code block, which gofmt re-indents.  (Unindented list
    markers and "#" lines inside a paragraph are plain text to gofmt.)"""
    return [line.strip() for line in text.split("\n")]


def _comment(lines: List[str], indent: str = "") -> str:
    return "".join(f"{indent}//{' ' + l if l else ''}\n" for l in lines)


# --- kernels ---------------------------------------------------------------------


class _Kernel:
    def __init__(self, api: Api, fn: Function):
        self.api = api
        self.fn = fn
        self.go_name = exported(fn.name)
        self.names = {p.name: local(p.name) for p in fn.params}
        self.ld = contracts.ld_params(fn)
        self.derived: Dict[str, Param] = {dim: fn.param(names[0]) for dim, names in contracts.length_dims(fn).items()}
        for p in fn.params[1:]:
            if p.role not in ("dim", "scalar", "flag", "tensor"):
                raise NotImplementedError(f"go emitter: {fn.name}: parameter {p.name} has role {p.role}")

    def go_params(self) -> List[Param]:
        return [p for p in self.fn.params[1:] if not (p.role == "dim" and p.name in self.derived)]

    def go_type(self, p: Param) -> str:
        if p.role == "dim":
            return "int"
        if p.role == "flag":
            return "bool"
        if p.role == "tensor":
            return _SLICE[p.tensor.dtype]
        if p.ctype.kind == "enum":
            return enum_type(self.api.enum(p.ctype.name))
        return _GO_SCALAR[p.ctype.kind]

    def signature(self) -> str:
        return ", ".join(f"{self.names[p.name]} {self.go_type(p)}" for p in self.go_params())

    def call_args(self) -> str:
        return ", ".join(self.names[p.name] for p in self.go_params())

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return str(e.value)
        if isinstance(e, Dim):
            return self.names[e.name]
        return f"pick({self.names[e.flag]}, {self.expr(e.then)}, {self.expr(e.otherwise)})"

    def c_arg(self, p: Param) -> str:
        n = self.names[p.name]
        if p.role == "dim":
            return f"C.int64_t({n})"
        if p.role == "flag":
            return f"C.bool({n})"
        if p.role == "tensor":
            return f"{_PTR[p.tensor.dtype]}({n})"
        if p.ctype.kind == "enum":
            return f"C.{p.ctype.name}({n})"
        return f"{_C_SCALAR[p.ctype.kind]}({n})"

    # -- C helper in the preamble --

    def c_helper(self) -> str:
        fn = self.fn
        params = ", ".join(_c_decl(p.ctype.spelling, p.name) for p in fn.params[1:])
        args = ", ".join(p.name for p in fn.params)
        ctx = fn.params[0].name
        # The context arrives as an integer: a pointer to the incomplete
        # struct would make cgo check it at run time (and allocate) on every
        # call, although it is C memory.
        return (
            f"static kb_status kbgo_{fn.short_name}(uintptr_t kbgo_ctx, char *kbgo_msg"
            + (f", {params}" if params else "")
            + ") {\n"
            + f"\t{_c_decl(fn.params[0].ctype.spelling, ctx)} = ({fn.params[0].ctype.spelling})kbgo_ctx;\n"
            + f"\treturn kbgo_done({ctx}, kbgo_msg, {fn.name}({args}));\n"
            + "}\n"
        )

    # -- Go method --

    def doc_notes(self) -> List[str]:
        notes = []
        for dim, t in self.derived.items():
            notes.append(f"{self.names[dim]} is len({self.names[t.name]}).")
        for p in self.fn.tensors:
            t = p.tensor
            n = self.names[p.name]
            shape = "[" + ", ".join(self._expr_doc(e) for e in t.shape) + "]"
            what = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            line = f"{n} ({what}) holds {shape}"
            if t.ld is not None:
                line += f" with row stride {self.names[t.ld]}: at least (rows-1)*{self.names[t.ld]}+cols elements"
            else:
                line += " elements" if len(t.shape) == 1 else ", row-major"
            if t.nullable:
                line += "; nil means absent"
            if t.aliases:
                line += "; it may be the same slice as " + " or ".join(self.names[a] for a in t.aliases)
            notes.append(line + ".")
        return notes

    def _expr_doc(self, e: Expr) -> str:
        if isinstance(e, Cond):
            return f"{self.names[e.flag]} ? {self._expr_doc(e.then)} : {self._expr_doc(e.otherwise)}"
        return self.names[e.name] if isinstance(e, Dim) else str(e.value)

    def method(self) -> str:
        fn = self.fn
        g = self.go_name
        out = []
        out.append(f"// {g} runs {fn.name} on ctx; see the package-level function {g}.\n")
        out.append(f"func (ctx *Context) {g}({self.signature()}) error {{\n")
        out.append("\tif ctx == nil || ctx.h == 0 {\n")
        out.append(f'\t\treturn closedError("{g}")\n')
        out.append("\t}\n")
        for dim, t in self.derived.items():
            out.append(f"\t{self.names[dim]} := len({self.names[t.name]})\n")
        for p in fn.dims:
            if p.name in self.derived:
                continue
            n = self.names[p.name]
            out.append(f'\tif err := checkDim("{g}", "{n}", {n}); err != nil {{\n\t\treturn err\n\t}}\n')
        for p in fn.tensors:
            t = p.tensor
            if t.ld is None:
                continue
            ld = self.names[t.ld]
            out.append(
                f'\tif err := checkLd("{g}", "{ld}", {ld}, "{self.names[p.name]}", {self.expr(t.shape[1])}); err != nil {{\n'
                "\t\treturn err\n\t}\n"
            )
        # As the C library: every size overflow (OUT_OF_MEMORY) is reported
        # before any length mismatch.
        for p in fn.tensors:
            size = self._size_expr(p)
            if size is not None:
                out.append(f'\tif {size} < 0 {{\n\t\treturn overflowError("{self.go_name}", "{self.names[p.name]}")\n\t}}\n')
        for p in fn.tensors:
            out.extend(self._length_check(p))
        args = ", ".join(["ctx.h", "ctx.msg"] + [self.c_arg(p) for p in fn.params[1:]])
        out.append(f"\tst := C.kbgo_{fn.short_name}({args})\n")
        out.append("\truntime.KeepAlive(ctx)\n")
        out.append("\tif st != 0 {\n\t\treturn ctx.fail(st)\n\t}\n")
        out.append("\treturn nil\n}\n")
        return "".join(out)

    def _size_expr(self, p: Param) -> Optional[str]:
        """The element count of p when computing it can overflow; None for a
        1-D tensor whose length is a constant or a slice length."""
        t = p.tensor
        if t.ld is not None:
            rows, cols = (self.expr(e) for e in t.shape)
            return f"stridedSize({rows}, {cols}, {self.names[t.ld]})"
        e = t.shape[0]
        if len(t.shape) == 1 and (isinstance(e, Const) or (isinstance(e, Dim) and e.name in self.derived)):
            return None
        return "sizeOf(" + ", ".join(self.expr(e) for e in t.shape) + ")"

    def _length_check(self, p: Param) -> List[str]:
        t = p.tensor
        g = self.go_name
        n = self.names[p.name]
        shape = "[" + ", ".join(self._expr_doc(e) for e in t.shape) + "]"
        if t.ld is not None:
            rows, cols = (self.expr(e) for e in t.shape)
            want = f"stridedSize({rows}, {cols}, {self.names[t.ld]})"
            check = "checkMinLen"
        elif len(t.shape) == 1:
            want = self.expr(t.shape[0])
            check = "checkLen"
        else:
            want = "sizeOf(" + ", ".join(self.expr(e) for e in t.shape) + ")"
            check = "checkLen"
        body = f'if err := {check}("{g}", "{n}", len({n}), {want}, "{shape}"); err != nil {{\n'
        if t.nullable:
            return [f"\tif {n} != nil {{\n", "\t\t" + body, "\t\t\treturn err\n\t\t}\n", "\t}\n"]
        return ["\t" + body, "\t\treturn err\n\t}\n"]

    def function(self) -> str:
        g = self.go_name
        lines = [f"{g} wraps {self.fn.name}."]
        if self.fn.doc:
            lines += [""] + _doc_lines(self.fn.doc)
        lines += [""] + self.doc_notes()
        lines += [
            "",
            "It runs on a pooled default context (CPU backend, one thread) and is",
            f"safe for concurrent use; use [Context.{g}] to choose the backend and",
            "thread count.  Slice lengths are checked before the call: a wrong length",
            "is an *Error with Code ShapeMismatch, a negative size one with Code",
            "InvalidArgument.",
        ]
        return (
            _comment(lines)
            + f"func {g}({self.signature()}) error {{\n"
            + "\tctx, err := defaultContext()\n"
            + "\tif err != nil {\n\t\treturn err\n\t}\n"
            + f"\terr = ctx.{g}({self.call_args()})\n"
            + "\treleaseDefault(ctx)\n"
            + "\treturn err\n"
            + "}\n"
        )


def _c_decl(spelling: str, name: str) -> str:
    return f"{spelling}{name}" if spelling.endswith("*") else f"{spelling} {name}"


# --- simple functions (no handles, scalars in and out) ----------------------------


def _simple(api: Api, fn: Function) -> Optional[str]:
    if fn.is_kernel or any(p.role not in ("scalar",) for p in fn.params):
        return None
    r = fn.returns
    if r.kind == "string" and fn.returns_string == "static":
        ret, conv = "string", "C.GoString({})"
    elif r.kind in _GO_SCALAR:
        ret, conv = _GO_SCALAR[r.kind], _GO_SCALAR[r.kind] + "({})"
    elif r.kind == "enum":
        ret = enum_type(api.enum(r.name))
        conv = ret + "({})"
    else:
        return None
    names = {p.name: local(p.name) for p in fn.params}

    def gtype(p):
        return enum_type(api.enum(p.ctype.name)) if p.ctype.kind == "enum" else _GO_SCALAR[p.ctype.kind]

    def carg(p):
        if p.ctype.kind == "enum":
            return f"C.{p.ctype.name}({names[p.name]})"
        return f"{_C_SCALAR[p.ctype.kind]}({names[p.name]})"

    g = exported(fn.name)
    sig = ", ".join(f"{names[p.name]} {gtype(p)}" for p in fn.params)
    call = f"C.{fn.name}(" + ", ".join(carg(p) for p in fn.params) + ")"
    doc = [f"{g} wraps {fn.name}."] + ([""] + _doc_lines(fn.doc) if fn.doc else [])
    return _comment(doc) + f"func {g}({sig}) {ret} {{\n\treturn {conv.format(call)}\n}}\n"


# --- the file ----------------------------------------------------------------------


def emit(api: Api) -> Dict[str, str]:
    kernels = [_Kernel(api, fn) for fn in api.kernels]
    ok = [v for v in api.status_enum.values if v.value == 0][0]
    out = [banner("//"), "\n", f"package {PACKAGE}\n\n"]

    # cgo preamble
    pre = [
        "#include <stdint.h>\n",
        "#include <string.h>\n",
        "\n",
        '#include "kernelbridge.h"\n',
        "\n",
        f"#define KBGO_MSG_CAP {MESSAGE_CAPACITY}\n",
        "\n",
        "// Copies the context's message into msg (KBGO_MSG_CAP bytes) when st is\n",
        "// a failure, so that the message is read in the cgo call that failed.\n",
        "static kb_status kbgo_done(kb_context *ctx, char *msg, kb_status st) {\n",
        f"\tif (st != {ok.name} && msg != NULL) {{\n",
        "\t\tconst char *m = kb_context_last_error(ctx);\n",
        "\t\tsize_t n = strlen(m);\n",
        "\t\tif (n > KBGO_MSG_CAP - 1) n = KBGO_MSG_CAP - 1;\n",
        "\t\tmemcpy(msg, m, n);\n",
        "\t\tmsg[n] = 0;\n",
        "\t}\n",
        "\treturn st;\n",
        "}\n",
    ]
    for k in kernels:
        pre += ["\n", k.c_helper()]
    out.append("/*\n" + "".join(pre) + "*/\n")
    out.append('import "C"\n\n')
    out.append('import "runtime"\n\n')

    major, minor, patch = api.version
    out.append("// Version of the C header the package was generated from.\n")
    out.append("const (\n")
    out.append(f"\tVersionMajor = {major}\n")
    out.append(f"\tVersionMinor = {minor}\n")
    out.append(f"\tVersionPatch = {patch}\n")
    out.append(f"\t// Version is VersionMajor.VersionMinor.VersionPatch.\n")
    out.append(f'\tVersion = "{api.version_string}"\n')
    out.append(")\n\n")
    out.append("// messageCapacity is the size of a Context's message buffer.\n")
    out.append(f"const messageCapacity = {MESSAGE_CAPACITY}\n")

    for e in api.enums:
        t = enum_type(e)
        out.append("\n")
        out.append(_comment([f"{t} mirrors {e.name}."] + ([""] + _doc_lines(e.doc) if e.doc else [])))
        out.append(f"type {t} int32\n\n")
        out.append("const (\n")
        for i, v in enumerate(e.values):
            if i:
                out.append("\n")
            out.append(_comment([f"{enum_value(api, e, v.name)}: {v.doc}" if v.doc else enum_value(api, e, v.name)], "\t"))
            out.append(f"\t{enum_value(api, e, v.name)} {t} = {v.value}\n")
        out.append(")\n\n")
        out.append(f'// String returns the C name without its prefix, e.g. "{value_string(e, e.values[-1].name)}",\n')
        out.append('// or "UNKNOWN".\n')
        out.append(f"func (v {t}) String() string {{\n\tswitch v {{\n")
        for v in e.values:
            out.append(f'\tcase {enum_value(api, e, v.name)}:\n\t\treturn "{value_string(e, v.name)}"\n')
        out.append('\t}\n\treturn "UNKNOWN"\n}\n')
        if e is api.status_enum:
            out.append("\n// Sentinel errors, one per failure code, for errors.Is: an *Error matches\n")
            out.append("// the sentinel of its Code whatever its message.\n")
            out.append("var (\n")
            for i, v in enumerate(x for x in e.values if x.value != 0):
                if i:
                    out.append("\n")
                name = enum_value(api, e, v.name)
                out.append(f"\t// Err{name} matches errors with Code {name}.\n")
                out.append(f"\tErr{name} error = &Error{{Code: {name}}}\n")
            out.append(")\n")

    for fn in api.functions:
        text = _simple(api, fn)
        if text:
            out.append("\n" + text)

    for k in kernels:
        out.append("\n" + k.function())
        out.append("\n" + k.method())
    return {OUT: "".join(out)}
