"""The fuzz targets cover the whole API, as the header declares it.

- Every kernel of core/include/kernelbridge.h (a kb_status function taking
  a context) has a spec in specs.c, and the spec's parameters are the
  header's: the same names in the same order, sizes where the header
  annotates `dim`, flags, scalars of the C type, tensors of the annotated
  element type and role, `nullable` and `alias(...)` as annotated.
- The contexts-and-buffers target calls every context, buffer and CUDA
  device function of the header, and every other function that returns a
  kb_status without being a kernel (the context-free ones: kb_dtype_bytes).
- The GGUF target calls every kb_gguf_* function but kb_gguf_open (whose
  parser is kb_gguf_open_memory's).
- The tokenizer target calls every tokenizer function of the header (the
  buffers target leaves them to it).
- The committed seed inputs (with the reproducers of fixed defects) are what
  make_seeds.py writes.
"""
import filecmp
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_seeds  # noqa: E402

ROOT = make_seeds.ROOT
HEADER = os.path.join(ROOT, "core", "include", "kernelbridge.h")

# Entry points the library defines outside the header (kernels/cpu/gemm_engine.h)
# that have specs too.
NOT_IN_HEADER = {"kb_gemm_batched", "kb_gemm_batched_bf16", "kb_gemm_batched_f16"}

# kb_dtype is an int32 like kb_activation, decoded with a palette of its
# (non-contiguous) values: the spec scalar type "dtype" (fuzz.h).
C_SCALARS = {"float": "f32", "int32_t": "i32", "int64_t": "i64", "uint64_t": "u64", "kb_activation": "i32",
             "kb_dtype": "dtype", "kb_rope_style": "i32", "kb_rope_scaling": "i32", "kb_moe_routing": "i32"}


def header_functions():
    """{name: (doc, [(c_type, param_name)])} for every KB_API function."""
    with open(HEADER) as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"/\*\*((?:(?!\*/).)*)\*/\s*KB_API\s+([\w\s\*]+?)\b(kb_\w+)\(([^)]*)\);", text, re.S):
        doc, ret, name, args = m.group(1), m.group(2).strip(), m.group(3), m.group(4)
        params = []
        for a in args.split(","):
            a = " ".join(a.split())
            if a in ("", "void"):
                continue
            pm = re.match(r"(.*?)(\w+)$", a)
            params.append((pm.group(1).replace(" ", "").replace("const", ""), pm.group(2)))
        out[name] = (ret, doc, params)
    return out


def expected_params(name, doc, params):
    """The spec parameters the header implies (as make_seeds.parse_sig gives them)."""
    notes = dict(re.findall(r"@arg (\w+) ([^\n]*)", doc))
    want = []
    for ctype, pname in params[1:]:  # after ctx
        note = notes[pname].split()
        kind = note[0]
        if kind == "dim":
            want.append(("d", pname, None, None, False, []))
        elif kind == "flag":
            want.append(("f", pname, None, None, False, []))
        elif kind == "scalar":
            want.append(("s", pname, C_SCALARS[ctype], None, False, []))
        elif kind in ("in", "out", "inout"):
            dtype = note[1].split("[")[0]
            aliases = []
            am = re.search(r"alias\(([^)]*)\)", notes[pname])
            if am:
                aliases = [a.strip() for a in am.group(1).split(",")]
            want.append(("t", pname, dtype, kind, "nullable" in note, aliases))
        else:
            raise AssertionError("%s: unexpected annotation of %s: %s" % (name, pname, notes[pname]))
    return want


def is_tokenizer(name):
    return name.startswith(("kb_tokenizer_", "kb_tokenize", "kb_detokenize"))


def is_kernel(name, ret, params):
    return (ret == "kb_status" and params and params[0] == ("kb_context*", "ctx")
            and not name.startswith(("kb_context_", "kb_buffer_", "kb_cuda_", "kb_gguf_")))


class CoverageTest(unittest.TestCase):
    def test_every_kernel_has_a_matching_spec(self):
        functions = header_functions()
        kernels = {n for n, (ret, doc, params) in functions.items() if is_kernel(n, ret, params)}
        self.assertGreater(len(kernels), 50)
        specs = {fn: params for fam, fn, dtype, params in make_seeds.parse_specs()}
        self.assertEqual(sorted(kernels - set(specs)), [], "kernels of the header without a fuzz spec")
        self.assertEqual(sorted(set(specs) - kernels - NOT_IN_HEADER), [], "specs of functions not in the header")
        for name in sorted(kernels):
            ret, doc, params = functions[name]
            self.assertEqual(specs[name], expected_params(name, doc, params), name)

    def test_buffers_target_calls_every_context_and_buffer_function(self):
        functions = header_functions()
        wanted = sorted(n for n, (ret, doc, params) in functions.items()
                        if n.startswith(("kb_context_create", "kb_buffer_", "kb_cuda_device"))
                        or n in ("kb_context_destroy", "kb_status_string", "kb_last_error")
                        or (ret == "kb_status" and not is_kernel(n, ret, params)
                            and not n.startswith("kb_gguf_") and not is_tokenizer(n)))
        self.assertIn("kb_dtype_bytes", wanted)
        with open(os.path.join(HERE, "buffers_fuzz.c")) as f:
            source = f.read()
        missing = [n for n in wanted if not re.search(r"\b%s\(" % n, source)]
        self.assertEqual(missing, [])

    def test_gguf_target_calls_every_gguf_function(self):
        # kb_gguf_open reads a file into memory and hands it to the same
        # parser as kb_gguf_open_memory, which the target calls.
        wanted = sorted(n for n in header_functions() if n.startswith("kb_gguf_") and n != "kb_gguf_open")
        self.assertIn("kb_gguf_tensor_read", wanted)
        with open(os.path.join(HERE, "gguf_fuzz.c")) as f:
            source = f.read()
        missing = [n for n in wanted if not re.search(r"\b%s\(" % n, source)]
        self.assertEqual(missing, [])

    def test_tokenizer_target_calls_every_tokenizer_function(self):
        wanted = sorted(n for n in header_functions() if is_tokenizer(n))
        self.assertIn("kb_tokenize", wanted)
        with open(os.path.join(HERE, "tokenizer_fuzz.c")) as f:
            source = f.read()
        missing = [n for n in wanted if not re.search(r"\b%s\(" % n, source)]
        self.assertEqual(missing, [])

    def test_seeds_are_what_make_seeds_writes(self):
        with tempfile.TemporaryDirectory() as tmp:
            written = make_seeds.build(tmp)
            self.assertGreater(len(written), 300)
            for top in ("corpus",):
                for fam in sorted(os.listdir(os.path.join(tmp, top))):
                    fresh = os.path.join(tmp, top, fam)
                    committed = os.path.join(HERE, top, fam)
                    names = sorted(os.listdir(fresh))
                    have = sorted(n for n in os.listdir(committed) if n.startswith("seed-"))
                    self.assertEqual(names, have, "%s/%s: run tests/fuzz/make_seeds.py" % (top, fam))
                    match, mismatch, errors = filecmp.cmpfiles(fresh, committed, names, shallow=False)
                    self.assertEqual(mismatch + errors, [], "%s/%s: run tests/fuzz/make_seeds.py" % (top, fam))


if __name__ == "__main__":
    unittest.main()
