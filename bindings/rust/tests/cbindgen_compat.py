#!/usr/bin/env python3
"""cbindgen compatibility test of kernelbridge.h.

1. kbgen's test-time mirror (kbgen/emitters/rust_cbindgen.py) writes a scratch
   Rust crate with a #[repr(C)] mirror of every enum, an opaque struct per
   handle and a #[no_mangle] extern "C" stub per function.
2. rustc checks that the crate compiles; cbindgen turns it into a C header.
3. Both headers are preprocessed and parsed with pycparser; each declaration
   (enum with its values, opaque handle typedef, function prototype with
   parameter names and types, version number) is printed in one canonical
   form, and any difference fails the test.

  cbindgen_compat.py [--root REPO] [--keep DIR] [--selftest]

--selftest also checks that a changed mirror (one pointer's const dropped)
is reported, so a comparison that sees nothing cannot pass silently.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from pycparser import c_ast, c_generator, c_parser

FAKE = {
    "stdint.h": "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;"
    " typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;"
    " typedef unsigned long long uint64_t;\n",
    "stddef.h": "typedef unsigned long size_t;\n",
    "stdbool.h": "#define bool _Bool\n",
}
FAKE_TYPES = {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t"}


def preprocess(path, prelude=""):
    with tempfile.TemporaryDirectory() as inc:
        for name, text in FAKE.items():
            with open(os.path.join(inc, name), "w") as f:
                f.write(text)
        src = os.path.join(inc, "input.h")
        with open(path) as f, open(src, "w") as out:
            out.write(prelude + f.read())
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        cmd = [cc, "-E", "-P", "-x", "c", "-std=c99", "-nostdinc", "-I", inc, "-DKB_STATIC_DEFINE", "-U__GNUC__", src]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def defines(path):
    with open(path) as f:
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(KB_VERSION_(?:MAJOR|MINOR|PATCH))\s+(\d+)", f.read(), re.M)}


def canonical(path, prelude=""):
    """{declaration name: canonical text} for a header."""
    ast = c_parser.CParser().parse(preprocess(path, prelude), path)
    gen = c_generator.CGenerator()
    out = {}
    for node in ast.ext:
        name = getattr(node, "name", None)
        if name in FAKE_TYPES:
            continue
        if isinstance(node, c_ast.Typedef):
            inner = node.type.type
            if isinstance(inner, c_ast.Enum) and inner.values is not None:
                vals = ", ".join(f"{e.name} = {gen.visit(e.value)}" for e in inner.values.enumerators)
                out["type " + name] = f"typedef enum {inner.name} {{ {vals} }} {name}"
            else:
                out["type " + name] = re.sub(r"\s+", " ", gen.visit(node)).strip()
        elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl):
            out["function " + name] = re.sub(r"\s+", " ", gen.visit(node)).strip()
        elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.Enum):
            continue  # `enum X { ... };` before a typedef: its values are compared via the typedef
        else:
            out["other " + (name or type(node).__name__)] = re.sub(r"\s+", " ", gen.visit(node)).strip()
    # `enum kb_status` and `kb_status` name the same type when the header has
    # `typedef enum kb_status {...} kb_status;` (cbindgen's style "both"
    # writes the tagged form in prototypes).
    typedefs = {k[len("type "):] for k in out if k.startswith("type ")}
    for key in [k for k in out if k.startswith("function ")]:
        out[key] = re.sub(r"\b(?:enum|struct) (\w+)\b", lambda m: m.group(1) if m.group(1) in typedefs else m.group(0), out[key])
    for k, v in defines(path).items():
        out["define " + k] = f"#define {k} {v}"
    return out


def compare(a, b, a_name, b_name):
    diffs = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            diffs.append(f"{key}:\n  {a_name}: {a.get(key, '(missing)')}\n  {b_name}: {b.get(key, '(missing)')}")
    return diffs


def run_cbindgen(files, work):
    crate = os.path.join(work, "mirror")
    os.makedirs(os.path.join(crate, "src"), exist_ok=True)
    for rel, text in files.items():
        with open(os.path.join(crate, rel), "w") as f:
            f.write(text)
    lib = os.path.join(crate, "src", "lib.rs")
    subprocess.run(
        ["rustc", "--edition", "2021", "--crate-type", "lib", "--emit", "metadata", "-o", os.path.join(work, "mirror.rmeta"), lib],
        check=True,
    )
    out = os.path.join(work, "cbindgen.h")
    subprocess.run(["cbindgen", "--quiet", "--config", os.path.join(crate, "cbindgen.toml"), "--lang", "c", "-o", out, lib], check=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")))
    ap.add_argument("--keep", help="write the scratch crate and cbindgen's header here")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.root, "tools", "kbgen"))
    from kbgen.emitters.rust_cbindgen import mirror_crate
    from kbgen.parse import parse_header

    header = os.path.join(args.root, "core", "include", "kernelbridge.h")
    api = parse_header(header, "core/include/kernelbridge.h")
    files = mirror_crate(api)
    work = args.keep or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    # cbindgen's header has no includes (no_includes): give it the ones C needs.
    prelude = "#include <stdbool.h>\n#include <stdint.h>\n"
    want = canonical(header)
    got = canonical(run_cbindgen(files, work), prelude)
    diffs = compare(want, got, "kernelbridge.h", "cbindgen")
    n_fn = sum(1 for k in want if k.startswith("function "))
    n_ty = sum(1 for k in want if k.startswith("type "))
    if diffs:
        print("cbindgen_compat: cbindgen's header differs from kernelbridge.h:\n" + "\n".join(diffs), file=sys.stderr)
        return 1
    print(f"cbindgen_compat: {n_fn} functions, {n_ty} types and the version agree")

    if args.selftest:
        lib = files["src/lib.rs"]
        mutated = re.sub(r"x: \*const f32", "x: *mut f32", lib, count=1)
        assert mutated != lib, "selftest: nothing to mutate"
        got2 = canonical(run_cbindgen(dict(files, **{"src/lib.rs": mutated}), os.path.join(work, "selftest")), prelude)
        diffs = compare(want, got2, "kernelbridge.h", "cbindgen")
        if len(diffs) != 1:
            print(f"cbindgen_compat: selftest expected 1 difference, got {len(diffs)}", file=sys.stderr)
            return 1
        print("cbindgen_compat: selftest: a dropped const is reported:\n" + diffs[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
