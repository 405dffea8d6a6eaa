"""Test-time companion of the Rust emitter: a scratch crate mirroring the C API.

Not an emitter (no NAME/emit): nothing here is written into the repository or
shipped.  bindings/rust/tests/cbindgen_compat.py calls mirror_crate(api),
runs cbindgen on the result and compares the header cbindgen writes with
core/include/kernelbridge.h.  That proves the header's types and signatures
are expressible by cbindgen, i.e. the API could be implemented in Rust with
the same ABI, and that the Rust view of each C type (as used by the emitter)
round-trips to the same C declaration.
"""

from __future__ import annotations

from typing import Dict

from ..model import Api, CType
from .rust import _SCALAR_TYPES as _SCALARS
from .rust import ident


def rust_type(t: CType) -> str:
    """The Rust FFI type with exactly the C type's ABI and spelling."""
    if t.kind in _SCALARS:
        return _SCALARS[t.kind]
    if t.kind == "enum":
        return t.name
    if t.kind == "handle":
        return f"*{'const' if t.const else 'mut'} {t.name}"
    if t.kind == "handle_out":
        return f"*mut *mut {t.name}"
    if t.kind == "string":
        return "*const c_char"
    if t.kind == "pointer":
        # uint16_t (bf16/f16 tensors) is a scalar kind; char (out strings) and
        # void (raw bytes, addresses) are the C types of std::os::raw.
        pointee = {"char": "c_char", "void": "c_void"}.get(t.pointee) or _SCALARS[t.pointee]
        return f"*{'const' if t.const else 'mut'} {pointee}"
    raise ValueError(f"no Rust mirror for C type {t.spelling!r}")


def mirror_crate(api: Api) -> Dict[str, str]:
    """{path inside the scratch crate: text}: src/lib.rs and cbindgen.toml."""
    lines = [
        "//! Scratch mirror of kernelbridge.h for the cbindgen compatibility test; never built into anything.",
        "#![allow(non_camel_case_types, unused_variables, clippy::missing_safety_doc)]",
        "",
        "use std::os::raw::{c_char, c_void};",
        "",
    ]
    major, minor, patch = api.version
    for part, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        lines.append(f"pub const KB_VERSION_{part}: u32 = {value};")
    lines.append("")
    for e in api.enums:
        lines.append("#[repr(C)]")
        lines.append("#[derive(Clone, Copy)]")
        lines.append(f"pub enum {e.name} {{")
        for v in e.values:
            lines.append(f"    {v.name} = {v.value},")
        lines.append("}")
        lines.append("")
    for h in api.handles:
        # Not repr(C): cbindgen writes an opaque `typedef struct NAME NAME;`.
        lines.append(f"pub struct {h.name} {{")
        lines.append("    _private: [u8; 0],")
        lines.append("}")
        lines.append("")
    for f in api.functions:
        # A C name that is a Rust keyword (kb_dtype_bytes' `type`) is a raw
        # identifier, which cbindgen writes without its r#.
        params = ", ".join(f"{ident(p.name)}: {rust_type(p.ctype)}" for p in f.params)
        ret = "" if f.returns.kind == "void" else f" -> {rust_type(f.returns)}"
        lines.append("#[no_mangle]")
        lines.append(f"pub unsafe extern \"C\" fn {f.name}({params}){ret} {{")
        lines.append("    unreachable!()")
        lines.append("}")
        lines.append("")
    types = [e.name for e in api.enums] + [h.name for h in api.handles]
    toml = "\n".join(
        [
            'language = "C"',
            'style = "both"',
            "no_includes = true",
            "cpp_compat = false",
            'documentation = false',
            "",
            "[export]",
            "include = [" + ", ".join(f'"{t}"' for t in types) + "]",
            "",
            "[enum]",
            'rename_variants = "None"',
            "",
        ]
    )
    return {"src/lib.rs": "\n".join(lines), "cbindgen.toml": toml}
