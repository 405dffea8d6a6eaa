"""Reads kernelbridge.h and its annotations into the model (model.py).

Declarations are parsed by pycparser after the C preprocessor has run, so C
syntax is never matched with regular expressions; only the annotation lines in
doc comments (a grammar of our own, docs/annotations.md) are tokenised here.
Every problem is reported as `file:line: message`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Dict, List, Optional, Tuple

from pycparser import c_ast, c_parser

from .model import (
    DTYPES,
    Api,
    Cond,
    Const,
    CType,
    Dim,
    Enum,
    Enumerator,
    Expr,
    Function,
    Handle,
    Param,
    Tensor,
    expr_names,
)


class ParseError(Exception):
    """An error located in the header: str() is `file:line: message`."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


# Stand-ins for the standard headers: pycparser only needs to know these names
# are types.  Sizes do not matter to the model.
_FAKE_HEADERS = {
    "stdint.h": "typedef signed char int8_t; typedef short int16_t; typedef int int32_t;"
    " typedef long long int64_t; typedef unsigned char uint8_t; typedef unsigned short uint16_t;"
    " typedef unsigned int uint32_t; typedef unsigned long long uint64_t;\n",
    "stddef.h": "typedef unsigned long size_t; typedef long ptrdiff_t;\n",
    "stdbool.h": "#define bool _Bool\n#define true 1\n#define false 0\n",
}

_SCALARS = {
    ("_Bool",): "bool",
    ("int32_t",): "int32",
    ("int64_t",): "int64",
    ("uint16_t",): "uint16",
    ("uint32_t",): "uint32",
    ("uint64_t",): "uint64",
    ("float",): "float32",
    ("double",): "float64",
    ("void",): "void",
}

# C pointee type of each dtype (bf16/f16 are uint16_t bit patterns; u8 is void).
_DTYPE_CTYPE = {"f32": "float32", "i32": "int32", "bf16": "uint16", "f16": "uint16", "u8": "void"}


def _preprocess(path: str) -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cpp"
    with tempfile.TemporaryDirectory() as inc:
        for name, text in _FAKE_HEADERS.items():
            with open(os.path.join(inc, name), "w") as f:
                f.write(text)
        # KB_STATIC_DEFINE makes KB_API expand to nothing; -U__GNUC__ keeps
        # compiler extensions out of the text pycparser sees.
        cmd = [cc, "-E", "-x", "c", "-std=c99", "-nostdinc", "-I", inc, "-DKB_STATIC_DEFINE", "-U__GNUC__", path]
        res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ParseError(path, 1, "preprocessing failed: " + res.stderr.strip())
    return res.stdout


class _Comment:
    def __init__(self, start: int, end: int, lines: List[Tuple[int, str]]):
        self.start = start  # line of "/**"
        self.end = end  # line of "*/"
        self.lines = lines  # (line number, text without the leading "*")


def _doc_comments(text: str) -> Dict[int, _Comment]:
    """Doc comments (/** ... */) keyed by the line on which they end."""
    comments: Dict[int, _Comment] = {}
    for m in re.finditer(r"/\*\*(.*?)\*/", text, re.S):
        start = text.count("\n", 0, m.start()) + 1
        body = m.group(1)
        lines = []
        for i, raw in enumerate(body.split("\n")):
            s = raw.strip()
            if s.startswith("*"):
                s = s[1:].strip()
            lines.append((start + i, s))
        end = text.count("\n", 0, m.end()) + 1
        comments[end] = _Comment(start, end, lines)
    return comments


class _Tokens:
    """Tokens of a shape expression."""

    def __init__(self, text: str, where):
        self.toks = re.findall(r"[A-Za-z_]\w*|\d+|[?:]|\S", text)
        self.pos = 0
        self.where = where

    def peek(self) -> Optional[str]:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            self.where("shape expression ends early")
        self.pos += 1
        return tok


def _parse_expr(toks: _Tokens) -> Expr:
    tok = toks.take()
    if tok.isdigit():
        return Const(int(tok))
    if not re.match(r"[A-Za-z_]\w*$", tok):
        toks.where(f"unexpected '{tok}' in shape expression")
    if toks.peek() == "?":
        toks.take()
        then = _parse_expr(toks)
        if toks.take() != ":":
            toks.where("expected ':' in conditional shape expression")
        return Cond(tok, then, _parse_expr(toks))
    return Dim(tok)


def _parse_shape(text: str, where) -> Tuple[Expr, ...]:
    dims = []
    for part in _split_top(text):
        toks = _Tokens(part, where)
        if toks.peek() is None:
            where("empty dimension in shape")
        dims.append(_parse_expr(toks))
        if toks.peek() is not None:
            where(f"unexpected '{toks.peek()}' in shape expression")
    return tuple(dims)


def _split_top(text: str) -> List[str]:
    return [p.strip() for p in text.split(",")]


_TENSOR_RE = re.compile(r"^(in|out|inout)\s+([A-Za-z_]\w*)\[([^\]]*)\]\s*(.*)$")


class _Annotations:
    def __init__(self):
        self.args: Dict[str, Tuple[int, str]] = {}
        self.returns: Optional[Tuple[int, str]] = None
        self.destroy: Optional[Tuple[int, str]] = None
        self.threadsafe: Optional[bool] = None
        self.blocking: Optional[bool] = None
        self.doc: str = ""


class Parser:
    def __init__(self, path: str, display_path: Optional[str] = None):
        self.path = path
        self.display = display_path or path
        with open(path) as f:
            self.text = f.read()
        self.raw_lines = self.text.split("\n")
        self.comments = _doc_comments(self.text)

    def error(self, line: int, message: str):
        raise ParseError(self.display, line, message)

    # -- entry point --

    def parse(self) -> Api:
        ast = self._c_ast()
        api = Api(header=self.display, version=self._version())
        for node in ast.ext:
            if not self._ours(node):
                continue
            if isinstance(node, c_ast.Typedef):
                self._typedef(node, api)
            elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl):
                api.functions.append(self._function(node, api))
            else:
                self.error(node.coord.line, "unsupported top-level declaration")
        self._check_cross(api)
        return api

    def _c_ast(self):
        text = _preprocess(self.path)
        try:
            return c_parser.CParser().parse(text, self.path)
        except Exception as e:  # pycparser reports file:line:col itself
            raise ParseError(self.display, 1, f"C parse error: {e}") from None

    def _ours(self, node) -> bool:
        return node.coord is not None and os.path.abspath(node.coord.file) == os.path.abspath(self.path)

    def _version(self) -> Tuple[int, int, int]:
        parts = []
        for part in ("MAJOR", "MINOR", "PATCH"):
            m = re.search(rf"^#define\s+KB_VERSION_{part}\s+(\d+)\s*$", self.text, re.M)
            if not m:
                self.error(1, f"missing #define KB_VERSION_{part}")
            parts.append(int(m.group(1)))
        return tuple(parts)  # type: ignore[return-value]

    # -- comments --

    def _comment_before(self, line: int, what: str, required: bool = True) -> Optional[_Comment]:
        c = self.comments.get(line - 1)
        if c is None and required:
            self.error(line, f"{what} has no doc comment (/** ... */ directly above it)")
        return c

    def _free_text(self, comment: Optional[_Comment]) -> str:
        if comment is None:
            return ""
        text = [s for _, s in comment.lines if not s.startswith("@")]
        while text and not text[0]:
            text.pop(0)
        while text and not text[-1]:
            text.pop()
        return "\n".join(text)

    # -- typedefs --

    def _typedef(self, node: c_ast.Typedef, api: Api):
        inner = node.type.type if isinstance(node.type, c_ast.TypeDecl) else None
        line = node.coord.line
        if isinstance(inner, c_ast.Enum):
            comment = self._comment_before(self._decl_start(line), f"enum {node.name}")
            values = []
            for e in inner.values.enumerators:
                if e.value is None or not isinstance(e.value, c_ast.Constant):
                    self.error(e.coord.line, f"enumerator {e.name} needs an explicit integer value")
                ecomment = self._comment_before(e.coord.line, f"enumerator {e.name}")
                values.append(Enumerator(e.name, int(e.value.value, 0), self._free_text(ecomment)))
            api.enums.append(Enum(node.name, self._free_text(comment), values, _common_prefix([v.name for v in values])))
        elif isinstance(inner, c_ast.Struct) and inner.decls is None:
            comment = self._comment_before(line, f"handle {node.name}")
            api.handles.append(Handle(node.name, self._free_text(comment)))
        else:
            self.error(line, f"typedef {node.name}: only enums and opaque structs are supported")

    def _decl_start(self, line: int) -> int:
        """First line of a multi-line typedef whose name is on `line`."""
        # pycparser places a typedef's coordinate at its name, after the body;
        # walk back to the line that opens the declaration.
        for i in range(line, 0, -1):
            if self.raw_lines[i - 1].lstrip().startswith("typedef"):
                return i
        return line

    # -- types --

    def _ctype(self, node, line: int, what: str) -> CType:
        spelling = _spell(node)
        if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
            names = tuple(node.type.names)
            if names in _SCALARS:
                return CType(_SCALARS[names], spelling=spelling)
            if len(names) == 1:
                return CType("enum", name=names[0], spelling=spelling)
        if isinstance(node, c_ast.PtrDecl):
            target = node.type
            if isinstance(target, c_ast.PtrDecl) and isinstance(target.type, c_ast.TypeDecl):
                names = tuple(target.type.type.names)
                return CType("handle_out", name=names[0], spelling=spelling)
            if isinstance(target, c_ast.TypeDecl) and isinstance(target.type, c_ast.IdentifierType):
                names = tuple(target.type.names)
                const = "const" in target.quals
                if names == ("char",) and const:
                    return CType("string", const=True, spelling=spelling)
                if names == ("char",):
                    return CType("pointer", pointee="char", spelling=spelling)
                if names in _SCALARS:
                    return CType("pointer", pointee=_SCALARS[names], const=const, spelling=spelling)
                return CType("handle", name=names[0], const=const, spelling=spelling)
        self.error(line, f"{what}: unsupported C type '{spelling}'")
        raise AssertionError  # unreachable

    # -- functions --

    def _function(self, node: c_ast.Decl, api: Api) -> Function:
        line = node.coord.line
        if not self.raw_lines[line - 1].lstrip().startswith("KB_API "):
            self.error(line, f"{node.name}: public functions start with KB_API on the line of their name")
        comment = self._comment_before(line, f"function {node.name}")
        ann = self._annotations(comment, node.name)
        fdecl: c_ast.FuncDecl = node.type
        returns = self._ctype(fdecl.type, line, f"{node.name} return type")
        params: List[Param] = []
        args = fdecl.args.params if fdecl.args is not None else []
        if len(args) == 1 and isinstance(args[0], c_ast.Typename) and _spell(args[0].type) == "void":
            args = []
        for a in args:
            if isinstance(a, c_ast.EllipsisParam):
                self.error(line, f"{node.name}: variadic functions are not supported")
            if not a.name:
                self.error(line, f"{node.name}: every parameter needs a name")
            params.append(self._param(node.name, a, returns, ann, line, api))
        names = {p.name for p in params}
        for name, (aline, _) in ann.args.items():
            if name not in names:
                self.error(aline, f"{node.name}: @arg names '{name}', which is not a parameter")
        if ann.threadsafe is None:
            self.error(comment.end, f"{node.name}: missing @threadsafe yes|no")
        if ann.blocking is None:
            self.error(comment.end, f"{node.name}: missing @blocking yes|no")
        returns_string = None
        returns_address = False
        if returns.kind == "string":
            if ann.returns is None or ann.returns[1] == "address":
                self.error(comment.end, f"{node.name}: returns a string but has no '@returns string static|borrowed'")
            returns_string = ann.returns[1]
        elif returns.kind == "pointer" and returns.pointee == "void" and not returns.const:
            if ann.returns is None or ann.returns[1] != "address":
                self.error(comment.end, f"{node.name}: returns void * but has no '@returns address'")
            returns_address = True
        elif returns.kind == "pointer":
            self.error(line, f"{node.name}: functions may return void * (@returns address), not '{returns.spelling}'")
        elif ann.returns is not None:
            what = "void *" if ann.returns[1] == "address" else "const char *"
            self.error(ann.returns[0], f"{node.name}: @returns {ann.returns[1]}, but the function does not return {what}")
        out_scalars = [p for p in params if p.role == "out_scalar"]
        out_strings = [p for p in params if p.role == "out_string"]
        if len(out_scalars) + len(out_strings) > 1:
            self.error(line, f"{node.name}: at most one 'out scalar' or 'out string' parameter (bindings return it)")
        if (out_scalars or out_strings) and not (returns.kind == "enum" and returns.name == "kb_status"):
            self.error(line, f"{node.name}: functions with an out scalar/string must return kb_status")
        for p in out_strings:
            cap = next((q for q in params if q.name == p.capacity), None)
            if cap is None or cap.role != "dim":
                self.error(p.line, f"{node.name}: parameter '{p.name}': string({p.capacity}) does not name a dim parameter")
        destroy = None
        if any(p.role == "handle_out" for p in params):
            if ann.destroy is None:
                self.error(comment.end, f"{node.name}: creates a handle but has no @destroy")
            destroy = ann.destroy[1]
        fn = Function(
            name=node.name,
            returns=returns,
            params=params,
            doc=ann.doc,
            threadsafe=bool(ann.threadsafe),
            blocking=bool(ann.blocking),
            returns_string=returns_string,
            returns_address=returns_address,
            destroy=destroy,
            line=line,
        )
        self._check_tensors(fn, ann)
        return fn

    def _annotations(self, comment: _Comment, fname: str) -> _Annotations:
        ann = _Annotations()
        ann.doc = self._free_text(comment)
        for line, s in comment.lines:
            if not s.startswith("@"):
                continue
            word, _, rest = s.partition(" ")
            rest = rest.strip()
            if word == "@arg":
                name, _, role = rest.partition(" ")
                if not name or not role.strip():
                    self.error(line, f"{fname}: '@arg NAME ROLE' expected")
                if name in ann.args:
                    self.error(line, f"{fname}: parameter '{name}' annotated twice")
                ann.args[name] = (line, role.strip())
            elif word == "@returns":
                m = re.match(r"^(?:string\s+(static|borrowed)|(address))$", rest)
                if not m:
                    self.error(line, f"{fname}: '@returns string static|borrowed' or '@returns address' expected")
                ann.returns = (line, m.group(1) or m.group(2))
            elif word == "@destroy":
                if not re.match(r"^[A-Za-z_]\w*$", rest):
                    self.error(line, f"{fname}: '@destroy FUNCTION' expected")
                ann.destroy = (line, rest)
            elif word in ("@threadsafe", "@blocking"):
                if rest not in ("yes", "no"):
                    self.error(line, f"{fname}: '{word} yes|no' expected")
                setattr(ann, word[1:], rest == "yes")
            else:
                self.error(line, f"{fname}: unknown annotation '{word}'")
        return ann

    def _param(self, fname: str, a: c_ast.Decl, returns: CType, ann: _Annotations, fline: int, api: Api) -> Param:
        ctype = self._ctype(a.type, fline, f"{fname} parameter {a.name}")
        api_enums = {e.name: e for e in api.enums}
        if a.name not in ann.args:
            kind = "pointer parameter" if ctype.kind in ("pointer", "handle", "handle_out", "string") else "parameter"
            self.error(a.coord.line, f"{fname}: {kind} '{a.name}' has no @arg annotation")
        line, role = ann.args[a.name]
        where = f"{fname}: parameter '{a.name}'"
        words = role.split()
        if role == "context":
            if ctype.kind != "handle" or ctype.name != "kb_context":
                self.error(line, f"{where}: 'context' needs type kb_context *")
            return Param(a.name, ctype, "context", nullable=True, line=line)
        if words[0] == "handle" and len(words) <= 2:
            if ctype.kind != "handle":
                self.error(line, f"{where}: 'handle' needs a pointer to an opaque type")
            if len(words) == 2 and words[1] != "nullable":
                self.error(line, f"{where}: unknown handle option '{words[1]}'")
            return Param(a.name, ctype, "handle", nullable=len(words) == 2, line=line)
        if words[:2] == ["out", "handle"]:
            if len(words) != 3 or ctype.kind != "handle_out" or ctype.name != words[2]:
                self.error(line, f"{where}: 'out handle TYPE' needs type TYPE ** (got '{ctype.spelling}')")
            return Param(a.name, ctype, "handle_out", handle_type=words[2], line=line)
        if role == "out scalar":
            if ctype.kind != "pointer" or ctype.const or ctype.pointee != "int64":
                self.error(line, f"{where}: 'out scalar' needs type int64_t * (got '{ctype.spelling}')")
            return Param(a.name, ctype, "out_scalar", line=line)
        if role == "in string":
            if ctype.kind != "string":
                self.error(line, f"{where}: 'in string' needs type const char * (got '{ctype.spelling}')")
            return Param(a.name, ctype, "in_string", line=line)
        sm = re.match(r"^out\s+string\((\w+)\)$", role)
        if sm:
            if ctype.kind != "pointer" or ctype.const or ctype.pointee != "char":
                self.error(line, f"{where}: 'out string(CAPACITY)' needs type char * (got '{ctype.spelling}')")
            return Param(a.name, ctype, "out_string", capacity=sm.group(1), line=line)
        if role == "dim":
            if ctype.kind != "int64":
                self.error(line, f"{where}: dimensions are int64_t (got '{ctype.spelling}')")
            return Param(a.name, ctype, "dim", line=line)
        if words[0] in ("flag", "scalar") and len(words) <= 2:
            default = None
            if len(words) == 2:
                dm = re.match(r"^default\((.*)\)$", words[1])
                if not dm:
                    self.error(line, f"{where}: unknown {words[0]} option '{words[1]}' (expected default(VALUE))")
                default = _default_literal(
                    dm.group(1).strip(), ctype, lambda msg: self.error(line, f"{where}: {msg}"), api_enums
                )
            if words[0] == "flag" and ctype.kind != "bool":
                self.error(line, f"{where}: flags are bool (got '{ctype.spelling}')")
            if words[0] == "scalar" and ctype.kind not in ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64", "enum"):
                self.error(line, f"{where}: scalars are passed by value (got '{ctype.spelling}')")
            return Param(a.name, ctype, words[0], default=default, line=line)
        m = _TENSOR_RE.match(role)
        if not m:
            self.error(line, f"{where}: cannot read role '{role}' (see docs/annotations.md)")
        direction, dtype, shape_text, options = m.groups()
        if dtype not in DTYPES:
            self.error(line, f"{where}: unknown dtype '{dtype}' (known: {', '.join(sorted(DTYPES))})")
        if ctype.kind != "pointer":
            self.error(line, f"{where}: a tensor must be a pointer (got '{ctype.spelling}')")
        if ctype.pointee != _DTYPE_CTYPE[dtype]:
            self.error(line, f"{where}: dtype {dtype} does not match C type '{ctype.spelling}'")
        if (direction == "in") != ctype.const:
            want = "a const" if direction == "in" else "a non-const"
            self.error(line, f"{where}: '{direction}' tensors must be {want} pointer (got '{ctype.spelling}')")

        def where_fn(msg):
            self.error(line, f"{where}: {msg}")

        shape = _parse_shape(shape_text, where_fn)
        ld = None
        stride = None
        aliases: Tuple[str, ...] = ()
        nullable = False
        for opt in re.findall(r"\w+\([^)]*\)|\S+", options):
            om = re.match(r"^(ld|alias|stride)\(([^)]*)\)$", opt)
            if opt == "nullable":
                nullable = True
            elif om and om.group(1) == "ld":
                ld = om.group(2).strip()
            elif om and om.group(1) == "stride":
                stride = om.group(2).strip()
            elif om and om.group(1) == "alias":
                aliases = tuple(x.strip() for x in om.group(2).split(",") if x.strip())
            else:
                self.error(line, f"{where}: unknown tensor option '{opt}'")
        tensor = Tensor(direction, dtype, shape, ld, aliases, nullable, stride)
        return Param(a.name, ctype, "tensor", tensor=tensor, line=line)

    def _check_tensors(self, fn: Function, ann: _Annotations):
        roles = {p.name: p for p in fn.params}
        for p in fn.tensors:
            t = p.tensor
            where = f"{fn.name}: parameter '{p.name}'"
            for e in t.shape:
                self._check_expr(e, roles, where, p.line)
            if t.stride is not None:
                if t.stride not in roles or roles[t.stride].role != "dim":
                    self.error(p.line, f"{where}: stride({t.stride}) does not name a dim parameter")
                if len(t.shape) < 2:
                    self.error(p.line, f"{where}: stride() needs a tensor of at least 2 dimensions (a batch of items)")
                if t.stride in expr_names_of(t.shape) or t.stride == t.ld:
                    self.error(p.line, f"{where}: stride({t.stride}) must not also be a dimension or the ld of the tensor")
            if t.ld is not None:
                if t.ld not in roles or roles[t.ld].role != "dim":
                    self.error(p.line, f"{where}: ld({t.ld}) does not name a dim parameter")
                if len(t.shape) != (3 if t.stride is not None else 2):
                    self.error(
                        p.line,
                        f"{where}: ld() applies to 2-D tensors, or 3-D tensors with stride() (a batch of matrices)",
                    )
            for alias in t.aliases:
                other = roles.get(alias)
                if other is None or other.role != "tensor":
                    self.error(p.line, f"{where}: alias({alias}) does not name a tensor parameter")
                if t.direction == "in":
                    self.error(p.line, f"{where}: only outputs can alias")
                if other.tensor.direction != "in" or other.tensor.dtype != t.dtype or other.tensor.shape != t.shape:
                    self.error(p.line, f"{where}: alias({alias}) must name an input of the same dtype and shape")

    def _check_expr(self, e: Expr, roles: Dict[str, Param], where: str, line: int):
        if isinstance(e, Cond):
            flag = roles.get(e.flag)
            if flag is None or flag.role != "flag":
                self.error(line, f"{where}: condition '{e.flag}' is not a flag parameter")
            self._check_expr(e.then, roles, where, line)
            self._check_expr(e.otherwise, roles, where, line)
            return
        for name in expr_names(e):
            p = roles.get(name)
            if p is None:
                self.error(line, f"{where}: shape uses unknown size parameter '{name}'")
            if p.role != "dim":
                self.error(line, f"{where}: shape uses '{name}', which is not a dim parameter")

    def _check_cross(self, api: Api):
        names = {f.name: f for f in api.functions}
        handles = {h.name: h for h in api.handles}
        for f in api.functions:
            if f.destroy is not None:
                d = names.get(f.destroy)
                if d is None:
                    self.error(f.line, f"{f.name}: @destroy names unknown function '{f.destroy}'")
                for p in f.params:
                    if p.role == "handle_out" and p.handle_type in handles:
                        handles[p.handle_type].destroy = f.destroy
            for p in f.params:
                if p.ctype.kind == "enum" and p.ctype.name not in {e.name for e in api.enums}:
                    self.error(p.line, f"{f.name}: parameter '{p.name}' has unknown type '{p.ctype.name}'")
                if p.role in ("handle", "context", "handle_out"):
                    hname = p.handle_type or p.ctype.name
                    if hname not in handles:
                        self.error(p.line, f"{f.name}: parameter '{p.name}' uses unknown handle type '{hname}'")


def expr_names_of(shape) -> List[str]:
    names: List[str] = []
    for e in shape:
        names += expr_names(e)
    return names


def _default_literal(text: str, ctype: CType, fail, enums=None) -> str:
    """Checks a default(...) value against the parameter's C type; returns it
    normalised (booleans lower-case, numbers as written, an enum's value as
    the name of its enumerator, whether given by name or by number)."""
    if ctype.kind == "enum":
        e = (enums or {}).get(ctype.name)
        if e is None:
            fail(f"default of a '{ctype.name}' needs the enum declared before the function")
        for v in e.values:
            if text == v.name or (re.match(r"^-?\d+$", text) and int(text) == v.value):
                return v.name
        names = ", ".join(v.name for v in e.values)
        fail(f"default of a {ctype.name} must be one of its enumerators ({names}) or their values, got '{text}'")
    if ctype.kind == "bool":
        if text not in ("true", "false"):
            fail(f"default of a bool must be true or false, got '{text}'")
        return text
    if ctype.kind in ("int32", "int64", "uint32", "uint64"):
        if not re.match(r"^-?\d+$", text) or (ctype.kind.startswith("u") and text.startswith("-")):
            fail(f"default of a {ctype.kind} must be an integer literal, got '{text}'")
        return text
    if ctype.kind in ("float32", "float64"):
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or value != value or value in (float("inf"), float("-inf")) or not re.match(r"^[-+0-9.eE]+$", text):
            fail(f"default of a {ctype.kind} must be a finite number, got '{text}'")
        return text
    fail(f"parameters of type '{ctype.spelling}' cannot have a default")
    raise AssertionError  # unreachable


def _spell(node) -> str:
    if isinstance(node, c_ast.PtrDecl):
        return _spell(node.type) + " *" + (" const" if "const" in node.quals else "")
    if isinstance(node, c_ast.TypeDecl):
        quals = " ".join(node.quals)
        base = " ".join(node.type.names) if isinstance(node.type, c_ast.IdentifierType) else type(node.type).__name__
        if base == "_Bool":
            base = "bool"
        return (quals + " " + base).strip()
    if isinstance(node, c_ast.Typename):
        return _spell(node.type)
    return type(node).__name__


def _common_prefix(names: List[str]) -> str:
    if not names:
        return ""
    prefix = os.path.commonprefix(names)
    return prefix[: prefix.rfind("_") + 1] if "_" in prefix else ""


def parse_header(path: str, display_path: Optional[str] = None) -> Api:
    """Parses the header at `path`; errors name `display_path` (default: path)."""
    return Parser(path, display_path).parse()
