"""Go binding: bindings/go/kernelbridge_gen.go.

The generated file holds everything that follows from the header:
  * the version constants;
  * one Go type per C enum (Status, Backend) with String(); the status enum
    also gives the sentinel errors ErrInvalidArgument, ... for errors.Is;
  * small functions without handles (VersionNumber, VersionString, ...);
  * for every kernel, a C helper in the cgo preamble that calls the kernel and,
    on failure, copies the context's message into the Context's message buffer
    in the same cgo call (tensors are typed pointers, from Go slices or from
    Buffer memory alike), a method on *Context taking slices, a method
    <Kernel>Buf on *Context taking typed views of Buffers (Float32View,
    Int32View, BF16View, F16View, ByteView), and a package-level function
    that runs the method on a pooled default context.  u8 tensors (void * in
    C: a tensor in a storage format) are []byte slices, declared uint8_t *
    in the C helpers; their byte counts are derived like any 1-D length;
  * one <kernel>Shapes function per shape contract, shared by the kernels
    that have it (the dtype variants, kb_add and kb_mul, ...) and by both
    methods: the size checks made before the call, with the tensors' lengths
    as arguments.
  * for every other function returning kb_status (contexts, CUDA devices,
    buffers), a C helper that copies the failure message in the same cgo call
    -- the context's for a function with a context, the calling thread's
    (kb_last_error) for one without -- and an unexported Go wrapper
    c<Name> that the hand-written code (context.go, buffer.go, cuda.go)
    builds the public API on.  Out-scalars and out-strings are returned, the
    capacity of an out-string is the generator's (a 256-byte buffer), handles
    travel as C.uintptr_t.

Functions left to hand-written code (they return no status: accessors and
destructors) are listed in HAND_WRITTEN; any other function the generator
cannot classify stops the generation.

A kernel wrapper holds only what is specific to its kernel: its signature,
documentation, size checks and C call.  The steps they share are hand-written
in bindings/go/kernel.go: the checker the checks record into (checkSlices,
checkViews, dims, ld, size, length, minLength), done (the error of a call,
keeping the Context alive), release (the views' Buffers, held open by their
checks) and optLen.  Other
hand-written code supplies Context (field h), the pool (defaultContext,
releaseDefault), Error, failure and threadDone (the error of a failed call's
kbgo_failure), the views (check, ptr, optLen, Len, buf) and the helpers named
in _GENERATED_NAMES (f32p, i32p, u16p, u8p, sizeOf, ...).

The output is gofmt-clean by construction (tabs, aligned const blocks are
avoided, one declaration per line); bindings/go's sync test runs gofmt on it.
"""

from __future__ import annotations

import re
import textwrap
from typing import Dict, List, Optional

from .. import contracts
from ..banner import banner
from ..model import Api, Cond, Const, Dim, Enum, Expr, Function, Param

NAME = "go"
OUT = "bindings/go/kernelbridge_gen.go"
PACKAGE = "kernelbridge"

# Size of the buffer passed for an out-string (device names are < 256 bytes).
STRING_CAPACITY = 256

# Functions without a status that the hand-written Go calls directly.
HAND_WRITTEN = {
    "kb_context_destroy",  # Context.Close
    "kb_context_backend",  # Context.Backend
    "kb_context_num_threads",  # Context.Threads
    "kb_context_device",  # Context.Device
    "kb_context_last_error",  # read by the C helpers (kbgo_done)
    "kb_last_error",  # read by the C helpers (kbgo_thread_done)
    "kb_buffer_destroy",  # Buffer.Close
    "kb_buffer_size",  # Buffer.Size
    "kb_buffer_device",  # Buffer.Device
    "kb_buffer_data",  # the address views hand to the <Kernel>Buf helpers
    "kb_gguf_destroy",  # Gguf.Close (gguf.go)
    "kb_tokenizer_destroy",  # Tokenizer.Close
    "kb_tokenizer_n_tokens",  # Tokenizer.NTokens
    "kb_tokenizer_bos",  # Tokenizer.BOS
    "kb_tokenizer_eos",  # Tokenizer.EOS
}

_INITIALISMS = {
    "id": "ID",
    "ids": "IDs",
    "kv": "KV",
    "cpu": "CPU",
    "cuda": "CUDA",
    "ok": "OK",
    "gpu": "GPU",
    "api": "API",
    "bf16": "BF16",
    "f16": "F16",
}

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
    "fail",
    "runtime",
    "unsafe",
    "f32p",
    "i32p",
    "u16p",
    "u8p",
    "sizeOf",
    "stridedSize",
    "batchedSize",
    "pick",
    "checkDim",
    "checkLd",
    "checkLen",
    "checkMinLen",
    "overflowError",
    "closedError",
    "defaultContext",
    "releaseDefault",
    "newThreadMessage",
    "stringCapacity",
    "chk",
    "checker",
    "optLen",
    "release",
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
# Go slice type and pointer helper of each dtype (bf16 and f16 are their bit
# patterns, as in C).
_SLICE = {"f32": "[]float32", "i32": "[]int32", "bf16": "[]uint16", "f16": "[]uint16", "u8": "[]byte"}
_PTR = {"f32": "f32p", "i32": "i32p", "bf16": "u16p", "f16": "u16p", "u8": "u8p"}
# C pointee of each dtype in the C helpers: u8 tensors (void * in the header)
# are declared uint8_t there, so that Go passes a pointer to numbers, which
# cgo does not check, rather than an unsafe.Pointer, which it would.
_C_POINTEE = {"u8": "uint8_t"}
# View type of each dtype a kernel tensor can have (bindings/go/buffer.go).
_VIEW = {"f32": "Float32View", "i32": "Int32View", "bf16": "BF16View", "f16": "F16View", "u8": "ByteView"}
# What the elements of a tensor are, for doc comments, where a slice type
# does not say it.
_BITS_DOC = {
    "bf16": "bfloat16 bit patterns (see Float32ToBF16)",
    "f16": "IEEE binary16 bit patterns (see Float32ToF16)",
    "u8": "raw bytes",
}


# --- names ---------------------------------------------------------------------


def _words(name: str) -> List[str]:
    return [w for w in name.lower().split("_") if w]


def _cap(word: str) -> str:
    return _INITIALISMS.get(word, word[:1].upper() + word[1:])


def _join(words: List[str], out: str = "") -> str:
    """out followed by the words capitalised; a word starting with a digit
    after one ending with a digit keeps its underscore (Q4_0 -> Q4_0, not
    Q40, which would read as forty)."""
    for w in words:
        if out and out[-1].isdigit() and w[:1].isdigit():
            out += "_"
        out += _cap(w)
    return out


def exported(name: str) -> str:
    """kb_gelu_tanh -> GeluTanh; KB_BACKEND_CPU with prefix removed -> CPU;
    KB_DTYPE_Q4_0 with prefix removed -> Q4_0."""
    name = name[3:] if name.lower().startswith("kb_") else name
    return _join(_words(name))


# Go's customary spellings of parameters named like a keyword.
_KEYWORD_PARAMS = {"type": "typ"}


def local(name: str) -> str:
    """trans_a -> transA, n_ids -> nIDs, type -> typ; other keywords and
    clashing names get 'Arg'."""
    words = _words(name)
    out = _join(words[1:], words[0])
    out = _KEYWORD_PARAMS.get(out, out)
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


def _c_decl(spelling: str, name: str) -> str:
    return f"{spelling}{name}" if spelling.endswith("*") else f"{spelling} {name}"


def _c_param(p: Param) -> str:
    """The declaration of p in a C helper: its header spelling, except for
    tensors whose pointee the helper declares differently (_C_POINTEE)."""
    if p.role == "tensor" and p.tensor.dtype in _C_POINTEE:
        const = "const " if p.tensor.direction == "in" else ""
        return f"{const}{_C_POINTEE[p.tensor.dtype]} *{p.name}"
    return _c_decl(p.ctype.spelling, p.name)


def _go_error_return(results: List[str]) -> str:
    """`return <zero values>, err`-style prefix for the error paths."""
    return "".join(z + ", " for z in results)


# --- calls: what kernels and the other status functions share ------------------


class _Call:
    """Argument handling of a function whose tensors are Go slices or views:
    derived sizes, size checks, length checks and the C arguments."""

    def __init__(self, api: Api, fn: Function):
        self.api = api
        self.fn = fn
        self.go_name = exported(fn.name)
        self.names = {p.name: local(p.name) for p in fn.params}
        self.ld = contracts.ld_params(fn)
        self.derived: Dict[str, Param] = {dim: fn.param(names[0]) for dim, names in contracts.length_dims(fn).items()}
        # Capacities of out-strings: the generator passes its own buffer size.
        self.capacities = {p.capacity for p in fn.params if p.role == "out_string"}

    def hidden(self, p: Param) -> bool:
        return p.role == "dim" and (p.name in self.derived or p.name in self.capacities)

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return str(e.value)
        if isinstance(e, Dim):
            return self.names[e.name]
        return f"pick({self.names[e.flag]}, {self.expr(e.then)}, {self.expr(e.otherwise)})"

    def _expr_doc(self, e: Expr) -> str:
        if isinstance(e, Cond):
            return f"{self.names[e.flag]} ? {self._expr_doc(e.then)} : {self._expr_doc(e.otherwise)}"
        return self.names[e.name] if isinstance(e, Dim) else str(e.value)

    def shape_doc(self, p: Param) -> str:
        return "[" + ", ".join(self._expr_doc(e) for e in p.tensor.shape) + "]"

    def scalar_type(self, p: Param) -> str:
        if p.ctype.kind == "enum":
            return enum_type(self.api.enum(p.ctype.name))
        return _GO_SCALAR[p.ctype.kind]

    def scalar_arg(self, p: Param) -> str:
        n = self.names[p.name]
        if p.role == "dim":
            return f"C.int64_t({n})"
        if p.role == "flag":
            return f"C.bool({n})"
        if p.ctype.kind == "enum":
            return f"C.{p.ctype.name}({n})"
        return f"{_C_SCALAR[p.ctype.kind]}({n})"

    def required(self, p: Param) -> str:
        """Go expression of the element count tensor p must hold."""
        t = p.tensor
        item_shape = t.shape[1:] if t.stride is not None else t.shape
        if t.ld is not None:
            rows, cols = (self.expr(e) for e in item_shape)
            item = f"stridedSize({rows}, {cols}, {self.names[t.ld]})"
        elif len(item_shape) == 1:
            item = self.expr(item_shape[0])
        else:
            item = "sizeOf(" + ", ".join(self.expr(e) for e in item_shape) + ")"
        if t.stride is not None:
            return f"batchedSize({self.expr(t.shape[0])}, {item}, {self.names[t.stride]})"
        return item

    def tautological(self, p: Param) -> bool:
        """Whether p is the slice a derived size is read from, so that its
        length check could never fail."""
        t = p.tensor
        e = t.shape[0]
        return (
            len(t.shape) == 1
            and isinstance(e, Dim)
            and e.name in self.derived
            and self.derived[e.name].name == p.name
        )

    def check_lines(self, length, dim_checks: bool = True) -> List[str]:
        """The size checks of the call as statements on the checker chk (see
        bindings/go/kernel.go), in the C library's order: derived sizes, then
        negative sizes, strides, size overflows (OUT_OF_MEMORY, all before
        any length mismatch) and lengths.  length(p) is the Go expression of
        tensor p's length (-1 for an absent nullable tensor)."""
        fn = self.fn
        body: List[str] = []
        dims = [self.names[p.name] for p in fn.dims if not self.hidden(p)]
        if dim_checks and dims:
            body.append(f'chk.dims("{" ".join(dims)}", {", ".join(dims)})')
        for p in fn.tensors:
            t = p.tensor
            if t.ld is not None:
                ld = self.names[t.ld]
                body.append(f'chk.ld("{ld}", {ld}, "{self.names[p.name]}", {self.expr(t.shape[-1])})')
        sizes: Dict[str, str] = {}
        for p in fn.tensors:
            size = self._size_expr(p)
            if size is not None:
                n = self.names[p.name]
                sizes[p.name] = n + "Size"
                body.append(f'{n}Size := chk.size("{n}", {size})')
        for p in fn.tensors:
            if self.tautological(p):
                continue
            t = p.tensor
            n = self.names[p.name]
            check = "minLength" if (t.ld is not None or t.stride is not None) else "length"
            want = sizes.get(p.name) or self.required(p)
            body.append(f'chk.{check}("{n}", {length(p)}, {want}, "{self.shape_doc(p)}")')
        # Derived sizes the checks use (the C call reads them from the slices).
        head = []
        for dim, t in self.derived.items():
            d = self.names[dim]
            if any(re.search(rf"\b{d}\b", line) for line in body):
                head.append(f"{d} := {length(t)}")
        return head + body

    def _size_expr(self, p: Param) -> Optional[str]:
        """The element count of p when computing it can overflow; None for a
        1-D tensor whose length is a constant or a slice length."""
        t = p.tensor
        if t.ld is not None or t.stride is not None:
            return self.required(p)
        e = t.shape[0]
        if len(t.shape) == 1 and (isinstance(e, Const) or (isinstance(e, Dim) and e.name in self.derived)):
            return None
        return "sizeOf(" + ", ".join(self.expr(e) for e in t.shape) + ")"

    def local_names(self) -> set:
        """Go names the generated bodies of this function declare."""
        return {self.names[p.name] + s for p in self.fn.tensors for s in ("Len", "Size")}


# --- kernels ---------------------------------------------------------------------


class _Kernel(_Call):
    """A kernel: a C helper, a shapes function (shared by kernels with the
    same contract), a slice method, a Buf method and a package function."""

    def __init__(self, api: Api, fn: Function):
        super().__init__(api, fn)
        for p in fn.params[1:]:
            if p.role not in ("dim", "scalar", "flag", "tensor"):
                raise NotImplementedError(f"go emitter: {fn.name}: parameter {p.name} has role {p.role}")
            if p.role == "tensor" and p.tensor.dtype not in _VIEW:
                raise NotImplementedError(f"go emitter: {fn.name}: tensor {p.name} has dtype {p.tensor.dtype}")
        clash = self.local_names() & set(self.names.values())
        if clash:
            raise NotImplementedError(f"go emitter: {fn.name}: {sorted(clash)[0]} names a parameter")
        self.shapes_name = ""  # set by emit: the shapes function this kernel calls

    def go_params(self) -> List[Param]:
        return [p for p in self.fn.params[1:] if not self.hidden(p)]

    def go_type(self, p: Param, views: bool = False) -> str:
        if p.role == "dim":
            return "int"
        if p.role == "flag":
            return "bool"
        if p.role == "tensor":
            return _VIEW[p.tensor.dtype] if views else _SLICE[p.tensor.dtype]
        return self.scalar_type(p)

    def signature(self, views: bool = False) -> str:
        return ", ".join(f"{self.names[p.name]} {self.go_type(p, views)}" for p in self.go_params())

    def call_args(self) -> str:
        return ", ".join(self.names[p.name] for p in self.go_params())

    # -- the shapes function --

    def _shape_params(self) -> List[Param]:
        """Sizes and flags the checks read, in C order (tensors as lengths)."""
        flags = set()

        def visit(e):
            if isinstance(e, Cond):
                flags.add(e.flag)
                visit(e.then)
                visit(e.otherwise)

        for p in self.fn.tensors:
            for e in p.tensor.shape:
                visit(e)
        return [
            p
            for p in self.go_params()
            if p.role == "tensor" or p.role == "dim" or (p.role == "flag" and p.name in flags)
        ]

    def shapes_signature(self) -> str:
        return ", ".join(
            f"{self.names[p.name]}Len int" if p.role == "tensor" else f"{self.names[p.name]} {self.go_type(p)}"
            for p in self._shape_params()
        )

    def shapes_body(self) -> str:
        lines = self.check_lines(lambda p: self.names[p.name] + "Len")
        return "".join(f"\t{l}\n" for l in lines) + "\treturn chk.err\n"

    def shapes_key(self):
        """Kernels with equal keys share one shapes function (the dtype
        variants of a kernel, and kernels with the same contract)."""
        return (self.shapes_signature(), self.shapes_body())

    def shapes_args(self, views: bool) -> str:
        args = []
        for p in self._shape_params():
            n = self.names[p.name]
            if p.role != "tensor":
                args.append(n)
            elif p.tensor.nullable:
                args.append(f"{n}.optLen()" if views else f"optLen({n})")
            else:
                args.append(f"{n}.Len()" if views else f"len({n})")
        return ", ".join(args)

    # -- the C helper in the preamble --

    def c_helper(self) -> str:
        fn = self.fn
        params = ", ".join(_c_param(p) for p in fn.params[1:])
        args = ", ".join([f"({fn.params[0].ctype.spelling})kbgo_ctx"] + [p.name for p in fn.params[1:]])
        # The context arrives as an integer: a pointer to the incomplete
        # struct would make cgo check it at run time (and allocate) on every
        # call, although it is C memory.  Tensors are pointers to numbers,
        # which cgo does not check, whether Go slices or Buffer memory.
        return (
            f"static kbgo_failure *kbgo_{fn.short_name}(uintptr_t kbgo_ctx, {params}) {{\n"
            f"\treturn kbgo_done(kbgo_ctx, {fn.name}({args}));\n"
            "}\n"
        )

    def c_call(self, views: bool) -> str:
        args = ["ctx.h"]
        for p in self.fn.params[1:]:
            n = self.names[p.name]
            if p.role == "tensor":
                args.append(f"{n}.ptr()" if views else f"{_PTR[p.tensor.dtype]}({n})")
            elif p.role == "dim" and p.name in self.derived:
                src = self.names[self.derived[p.name].name]
                args.append(f"C.int64_t({src}.Len())" if views else f"C.int64_t(len({src}))")
            else:
                args.append(self.scalar_arg(p))
        return f"C.kbgo_{self.fn.short_name}({', '.join(args)})"

    # -- Go --

    def doc_notes(self, views: bool = False) -> List[str]:
        notes = []
        for dim, t in self.derived.items():
            n = self.names[t.name]
            notes.append(f"{self.names[dim]} is {n + '.Len()' if views else 'len(' + n + ')'}.")
        for p in self.fn.tensors:
            t = p.tensor
            n = self.names[p.name]
            shape = self.shape_doc(p)
            what = {"in": "input", "out": "output", "inout": "input and output"}[t.direction]
            line = f"{n} ({what}) holds {shape}"
            if t.stride is not None:
                ld = self.names[t.ld] + "*(rows-1)+cols" if t.ld is not None else "the item size"
                line += (
                    f" with item stride {self.names[t.stride]}"
                    + (f" and row stride {self.names[t.ld]}" if t.ld is not None else "")
                    + f": at least ({self.expr(t.shape[0])}-1)*{self.names[t.stride]} + {ld} elements"
                )
            elif t.ld is not None:
                line += f" with row stride {self.names[t.ld]}: at least (rows-1)*{self.names[t.ld]}+cols elements"
            else:
                line += " elements" if len(t.shape) == 1 else ", row-major"
            if t.dtype in _BITS_DOC:
                line += ", " + _BITS_DOC[t.dtype]
            if t.nullable:
                line += "; " + ("a zero view" if views else "nil") + " means absent"
            if t.aliases:
                same = "view" if views else "slice"
                line += f"; it may be the same {same} as " + " or ".join(self.names[a] for a in t.aliases)
            notes.append(line + ".")
        return notes

    def method(self) -> str:
        g = self.go_name
        return (
            f"// {g} runs {self.fn.name} on ctx; see the package-level function {g}.\n"
            f"func (ctx *Context) {g}({self.signature()}) error {{\n"
            f'\tif err := {self.shapes_name}(ctx.checkSlices("{g}"), {self.shapes_args(False)}); err != nil {{\n'
            "\t\treturn err\n\t}\n"
            f"\treturn ctx.done({self.c_call(False)})\n"
            "}\n"
        )

    def buf_method(self) -> str:
        fn = self.fn
        g = self.go_name + "Buf"
        lines = [f"{g} runs {fn.name} on ctx with its tensors in Buffers; see {self.go_name}."]
        lines += [""] + self.doc_notes(views=True)
        lines += ["Views are checked before the call, as [Buffer] describes."]
        out = [_comment(lines), f"func (ctx *Context) {g}({self.signature(views=True)}) error {{\n"]
        views = "".join(f', {self.names[p.name]}.check("{g}", "{self.names[p.name]}")' for p in fn.tensors)
        # check holds each view's Buffer open (Close waits) until release.
        release = "\trelease(" + ", ".join(self.names[p.name] + ".buf" for p in fn.tensors) + ")\n"
        out.append(f'\tchk := ctx.checkViews("{g}"{views})\n')
        out.append(f"\tif err := {self.shapes_name}(chk, {self.shapes_args(True)}); err != nil {{\n")
        out.append("\t" + release + "\t\treturn err\n\t}\n")
        out.append(f"\tfail := {self.c_call(True)}\n")
        out.append(release)
        out.append("\treturn ctx.done(fail)\n}\n")
        return "".join(out)

    def function(self) -> str:
        g = self.go_name
        lines = [f"{g} wraps {self.fn.name}."]
        if self.fn.doc:
            lines += [""] + _doc_lines(self.fn.doc)
        lines += [""] + self.doc_notes()
        lines += [
            f"It runs on a pooled default context, as [Context] explains; see also [Context.{g}] and [Context.{g}Buf]."
        ]
        # The pool steps are written out rather than passed a closure: an
        # indirect call measurably adds to the cost of a small kernel.
        return (
            _comment(lines)
            + f"func {g}({self.signature()}) error {{\n"
            + "\tctx, err := defaultContext()\n"
            + "\tif err == nil {\n"
            + f"\t\terr = ctx.{g}({self.call_args()})\n"
            + "\t\treleaseDefault(ctx)\n"
            + "\t}\n"
            + "\treturn err\n"
            + "}\n"
        )


def _shapes_function(name: str, group: List[_Kernel]) -> str:
    k = group[0]
    names = [g.fn.name for g in group]
    doc = (
        f"{name} checks the sizes and tensor lengths of {', '.join(names)}"
        + (" (-1: an absent nullable tensor)." if any(p.tensor.nullable for p in k.fn.tensors) else ".")
    )
    return (
        _comment(textwrap.wrap(doc, 76, break_on_hyphens=False))
        + f"func {name}(chk checker, {k.shapes_signature()}) error {{\n"
        + k.shapes_body()
        + "}\n"
    )


# --- other functions returning kb_status -------------------------------------------


_STATUS_CALL_ROLES = (
    "context", "handle", "handle_out", "dim", "scalar", "flag", "tensor", "out_scalar", "out_string", "in_string"
)


class _StatusCall(_Call):
    """A function returning kb_status that is not a kernel: an unexported
    wrapper c<Name> (a method on *Context when the function has a context)
    returning its out-scalar, out-string or out-handle."""

    def __init__(self, api: Api, fn: Function):
        super().__init__(api, fn)
        self.ctx = fn.params[0] if fn.params and fn.params[0].role == "context" else None
        for p in fn.params:
            if p.role == "context" and p is not self.ctx:
                raise NotImplementedError(f"go emitter: {fn.name}: context {p.name} is not the first parameter")
            if p.role not in _STATUS_CALL_ROLES:
                raise NotImplementedError(f"go emitter: {fn.name}: parameter {p.name} has role {p.role}")
            if p.role == "out_scalar" and p.ctype.pointee != "int64":
                raise NotImplementedError(f"go emitter: {fn.name}: out scalar {p.name} is not an int64_t *")
        self.go_name = "c" + exported(fn.name)

    def go_params(self) -> List[Param]:
        return [
            p
            for p in self.fn.params
            if p.role in ("handle", "dim", "scalar", "flag", "tensor", "in_string") and not self.hidden(p)
        ]

    def go_type(self, p: Param) -> str:
        if p.role == "handle":
            return "C.uintptr_t"
        if p.role == "dim":
            return "int"
        if p.role == "flag":
            return "bool"
        if p.role == "tensor":
            return _SLICE[p.tensor.dtype]
        if p.role == "in_string":
            return "string"
        return self.scalar_type(p)

    def results(self) -> List[Param]:
        return [p for p in self.fn.params if p.role in ("out_scalar", "out_string", "handle_out")]

    def result_type(self, p: Param) -> str:
        if p.role == "out_scalar":
            return "int64"
        if p.role == "out_string":
            return "string"
        return f"*C.{p.handle_type}"

    def result_zero(self, p: Param) -> str:
        return {"out_scalar": "0", "out_string": '""', "handle_out": "nil"}[p.role]

    def c_helper(self) -> str:
        fn = self.fn
        decls, args = [], []
        for p in fn.params:
            if p.role == "context":
                args.append(f"({p.ctype.spelling})kbgo_ctx")
            elif p.role == "handle":
                decls.append(f"uintptr_t {p.name}")
                args.append(f"({p.ctype.spelling}){p.name}")
            else:
                decls.append(_c_param(p))
                args.append(p.name)
        call = f"{fn.name}({', '.join(args)})"
        if self.ctx is not None:
            head = ["uintptr_t kbgo_ctx"] + decls
            body = f"\treturn kbgo_done(kbgo_ctx, {call});\n"
        else:
            head = decls or ["void"]
            body = f"\treturn kbgo_thread_done({call});\n"
        return f"static kbgo_failure *kbgo_{fn.short_name}({', '.join(head)}) {{\n{body}}}\n"

    def wrapper(self) -> str:
        fn = self.fn
        g = self.go_name
        results = self.results()
        rtypes = [self.result_type(p) for p in results] + ["error"]
        ret = rtypes[0] if len(rtypes) == 1 else "(" + ", ".join(rtypes) + ")"
        zeros = _go_error_return([self.result_zero(p) for p in results])
        sig = ", ".join(f"{self.names[p.name]} {self.go_type(p)}" for p in self.go_params())
        if self.ctx is not None:
            doc = [f"{g} calls {fn.name} on ctx; its C message is copied in the same cgo call."]
            head = f"func (ctx *Context) {g}({sig}) {ret} {{\n"
        else:
            doc = [f"{g} calls {fn.name}; its C message (kb_last_error) is copied in the same cgo call."]
            head = f"func {g}({sig}) {ret} {{\n"
        out = [_comment(doc), head]
        if self.ctx is not None:
            out.append(f'\tif err := ctx.checkOpen("{fn.name}"); err != nil {{\n\t\treturn {zeros}err\n\t}}\n')
        # Only what keeps the call memory-safe is checked here (C checks and
        # reports the rest): lengths of tensors against their sizes.
        checks = self.check_lines(
            lambda p: f"optLen({self.names[p.name]})" if p.tensor.nullable else f"len({self.names[p.name]})",
            dim_checks=False,
        )
        if checks:
            out.append(f'\tchk := checker{{fn: "{fn.name}"}}\n')
            out += [f"\t{l}\n" for l in checks]
            out.append(f"\tif chk.err != nil {{\n\t\treturn {zeros}chk.err\n\t}}\n")
        # An `in string` becomes a C copy (cString refuses a NUL byte, which C
        # would read as the end), freed when the call returns.
        for p in fn.params:
            if p.role == "in_string":
                n = self.names[p.name]
                out.append(f'\tc_{n}, err := cString("{fn.name}", "{p.name}", {n})\n')
                out.append(f"\tif err != nil {{\n\t\treturn {zeros}err\n\t}}\n")
                out.append(f"\tdefer freeCString(c_{n})\n")
        args = [] if self.ctx is None else ["ctx.h"]
        for p in results:
            n = self.names[p.name]
            if p.role == "out_scalar":
                out.append(f"\tvar {n} C.int64_t\n")
            elif p.role == "out_string":
                out.append(f"\tvar {n} [stringCapacity]C.char\n")
            else:
                out.append(f"\tvar {n} *C.{p.handle_type}\n")
        for p in fn.params:
            n = self.names[p.name]
            if p.role == "context":
                continue
            if p.role == "handle":
                args.append(n)
            elif p.role == "tensor":
                args.append(f"{_PTR[p.tensor.dtype]}({n})")
            elif p.role in ("out_scalar", "handle_out"):
                args.append(f"&{n}")
            elif p.role == "out_string":
                args.append(f"&{n}[0]")
            elif p.role == "in_string":
                args.append(f"c_{n}")
            elif p.role == "dim" and p.name in self.capacities:
                owner = [q for q in fn.params if q.role == "out_string" and q.capacity == p.name][0]
                args.append(f"C.int64_t(len({self.names[owner.name]}))")
            elif p.role == "dim" and p.name in self.derived:
                args.append(f"C.int64_t(len({self.names[self.derived[p.name].name]}))")
            else:
                args.append(self.scalar_arg(p))
        call = f"C.kbgo_{fn.short_name}({', '.join(args)})"
        done = "ctx.done" if self.ctx is not None else "threadDone"
        if not results:
            out.append(f"\treturn {done}({call})\n}}\n")
            return "".join(out)
        # The results are read after the call (a separate statement: Go does
        # not order the call before them within one); nothing is written
        # when the call fails, so they are zero then.
        out.append(f"\tfail := {call}\n")
        vals = []
        for p in results:
            n = self.names[p.name]
            if p.role == "out_scalar":
                vals.append(f"int64({n})")
            elif p.role == "out_string":
                vals.append(f"C.GoString(&{n}[0])")
            else:
                vals.append(n)
        vals.append(f"{done}(fail)")
        out.append("\treturn " + ", ".join(vals) + "\n}\n")
        return "".join(out)


# --- simple functions (no handles, scalars in and out) ----------------------------


def _simple(api: Api, fn: Function) -> Optional[str]:
    if fn.is_kernel or any(p.role not in ("scalar",) for p in fn.params):
        return None
    r = fn.returns
    if r.kind == "string" and fn.returns_string == "static":
        ret, conv = "string", "C.GoString({})"
    elif r.kind in _GO_SCALAR:
        ret, conv = _GO_SCALAR[r.kind], _GO_SCALAR[r.kind] + "({})"
    elif r.kind == "enum" and r.name != "kb_status":
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


def _is_status(fn: Function) -> bool:
    return fn.returns.kind == "enum" and fn.returns.name == "kb_status"


# --- the file ----------------------------------------------------------------------


def emit(api: Api) -> Dict[str, str]:
    kernels: List[_Kernel] = []
    simple: List[str] = []
    status: List[_StatusCall] = []
    for fn in api.functions:
        if fn.is_kernel:
            kernels.append(_Kernel(api, fn))
        elif _simple(api, fn) is not None:
            simple.append(_simple(api, fn))
        elif _is_status(fn):
            status.append(_StatusCall(api, fn))
        elif fn.name not in HAND_WRITTEN:
            raise NotImplementedError(
                f"go emitter: {fn.name} is neither a kernel, a scalar function nor returns kb_status; "
                "write its Go in bindings/go and add it to HAND_WRITTEN in kbgen/emitters/go.py"
            )
    # Kernels with the same contract share one shapes function, named after
    # the first of them (kb_softmax, kb_softmax_bf16, kb_softmax_f16 ->
    # softmaxShapes).
    groups: Dict[tuple, List[_Kernel]] = {}
    for k in kernels:
        groups.setdefault(k.shapes_key(), []).append(k)
    shapes: List[str] = []
    for group in groups.values():
        name = local(group[0].fn.short_name) + "Shapes"
        for k in group:
            k.shapes_name = name
        shapes.append(_shapes_function(name, group))
    # Generated names must not collide (a kernel kb_x_buf would meet the
    # buffer method of kb_x).
    seen: Dict[str, str] = {}
    names = [(k.go_name, k.fn.name) for k in kernels] + [(k.go_name + "Buf", k.fn.name) for k in kernels]
    names += [(s.go_name, s.fn.name) for s in status]
    names += [(g[0].shapes_name, g[0].fn.name) for g in groups.values()]
    names += [("kbgo_" + k.fn.short_name, k.fn.name) for k in kernels]
    names += [("kbgo_" + s.fn.short_name, s.fn.name) for s in status]
    for name, owner in names:
        if name in seen:
            raise NotImplementedError(f"go emitter: {owner} and {seen[name]} would both generate {name}")
        seen[name] = owner

    ok = [v for v in api.status_enum.values if v.value == 0][0]
    out = [banner("//"), "\n", f"package {PACKAGE}\n\n"]

    # cgo preamble
    pre = [
        "#include <stdint.h>\n",
        "#include <stdlib.h>\n",
        "#include <string.h>\n",
        "\n",
        '#include "kbgo_failure.h"\n',
        '#include "kernelbridge.h"\n',
        "\n",
        "// The failure of a call that could not copy its message, per status.\n",
        "static kbgo_failure kbgo_no_memory[] = {"
        + ", ".join(f'{{{v}, 0, ""}}' for v in range(max(v.value for v in api.status_enum.values) + 1))
        + "};\n",
        "\n",
        "// A failure with a copy of message m (see kbgo_failure.h).\n",
        "static kbgo_failure *kbgo_fail(kb_status st, const char *m) {\n",
        "\tsize_t n = strlen(m);\n",
        "\tkbgo_failure *f = (kbgo_failure *)malloc(sizeof *f + n + 1);\n",
        "\tif (f == NULL) {\n",
        "\t\tsize_t i = (size_t)st < sizeof kbgo_no_memory / sizeof kbgo_no_memory[0] ? (size_t)st : 0;\n",
        "\t\treturn &kbgo_no_memory[i];\n",
        "\t}\n",
        "\tchar *text = (char *)(f + 1);\n",
        "\tmemcpy(text, m, n + 1);\n",
        "\tf->status = (int32_t)st;\n",
        "\tf->owned = 1;\n",
        "\tf->message = text;\n",
        "\treturn f;\n",
        "}\n",
        "\n",
        "// NULL when st is OK, else the failure with the calling thread's message\n",
        "// for context ctx (a kb_context *, passed as an integer so that cgo need\n",
        "// not check it).\n",
        "static kbgo_failure *kbgo_done(uintptr_t ctx, kb_status st) {\n",
        f"\treturn st == {ok.name} ? NULL : kbgo_fail(st, kb_context_last_error((kb_context *)ctx));\n",
        "}\n",
        "\n",
        "// The same for calls without a context (their message is kb_last_error).\n",
        "static kbgo_failure *kbgo_thread_done(kb_status st) {\n",
        f"\treturn st == {ok.name} ? NULL : kbgo_fail(st, kb_last_error());\n",
        "}\n",
    ]
    pre.append("\n// The other functions returning kb_status (see kbgo_done and kbgo_thread_done).\n")
    for s in status:
        pre.append(s.c_helper())
    pre.append("\n// The kernels, run on a context passed as an integer (see kbgo_done).\n")
    for k in kernels:
        pre.append(k.c_helper())
    out.append("/*\n" + "".join(pre) + "*/\n")
    out.append('import "C"\n\n')

    major, minor, patch = api.version
    out.append("// Version of the C header the package was generated from.\n")
    out.append("const (\n")
    out.append(f"\tVersionMajor = {major}\n")
    out.append(f"\tVersionMinor = {minor}\n")
    out.append(f"\tVersionPatch = {patch}\n")
    out.append(f"\t// Version is VersionMajor.VersionMinor.VersionPatch.\n")
    out.append(f'\tVersion = "{api.version_string}"\n')
    out.append(")\n\n")
    out.append("// stringCapacity is the size of the buffer passed for a string result.\n")
    out.append(f"const stringCapacity = {STRING_CAPACITY}\n")

    for e in api.enums:
        t = enum_type(e)
        out.append("\n")
        out.append(_comment([f"{t} mirrors {e.name}."] + ([""] + _doc_lines(e.doc) if e.doc else [])))
        out.append(f"type {t} int32\n\n")
        out.append("const (\n")
        for i, v in enumerate(e.values):
            if i:
                out.append("\n")
            doc = _doc_lines(v.doc) if v.doc else []
            first = f"{enum_value(api, e, v.name)}: {doc[0]}" if doc else enum_value(api, e, v.name)
            out.append(_comment([first] + doc[1:], "\t"))
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

    for text in simple:
        out.append("\n" + text)

    for s in status:
        out.append("\n" + s.wrapper())

    for text in shapes:
        out.append("\n" + text)

    for k in kernels:
        out.append("\n" + k.function())
        out.append("\n" + k.method())
        out.append("\n" + k.buf_method())
    return {OUT: "".join(out)}
