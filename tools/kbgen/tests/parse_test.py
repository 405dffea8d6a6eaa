"""Tests of the header parser: the real header, and small bad headers whose
errors must name the file and line of the problem."""

import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from kbgen import contracts  # noqa: E402
from kbgen.model import Cond, Dim  # noqa: E402
from kbgen.parse import ParseError, parse_header  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEADER = os.path.join(REPO, "core", "include", "kernelbridge.h")

PRELUDE = """\
#include <stdint.h>
#include <stdbool.h>
#define KB_VERSION_MAJOR 1
#define KB_VERSION_MINOR 2
#define KB_VERSION_PATCH 3
#define KB_API
/** Status. */
typedef enum kb_status {
  /** ok */
  KB_STATUS_OK = 0,
  /** bad */
  KB_STATUS_INVALID_ARGUMENT = 1
} kb_status;
/** Context. */
typedef struct kb_context kb_context;
"""
PRELUDE_LINES = PRELUDE.count("\n")


def parse_text(tmp_path, body):
    path = tmp_path / "bad.h"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return parse_header(str(path), "bad.h")


def error_of(tmp_path, body):
    with pytest.raises(ParseError) as info:
        parse_text(tmp_path, body)
    return info.value


GOOD = """\
/**
 * Doc line.
 * @arg ctx context
 * @arg n dim
 * @arg x in f32[n]
 * @arg y out f32[n] alias(x)
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y);
"""


def test_good_small_header(tmp_path):
    api = parse_text(tmp_path, GOOD)
    assert api.version == (1, 2, 3)
    (fn,) = api.functions
    assert fn.name == "kb_f" and fn.short_name == "f" and fn.is_kernel
    assert fn.doc == "Doc line."
    assert fn.param("y").tensor.aliases == ("x",)
    assert [v.name for v in api.status_enum.values] == ["KB_STATUS_OK", "KB_STATUS_INVALID_ARGUMENT"]
    assert api.status_enum.prefix == "KB_STATUS_"


def test_unannotated_pointer(tmp_path):
    err = error_of(tmp_path, GOOD.replace(" * @arg x in f32[n]\n", ""))
    assert err.path == "bad.h"
    assert err.line == PRELUDE_LINES + 9  # the declaration line (one comment line fewer)
    assert "pointer parameter 'x' has no @arg annotation" in str(err)
    assert str(err).startswith(f"bad.h:{err.line}: ")


def test_annotation_names_missing_parameter(tmp_path):
    err = error_of(tmp_path, GOOD.replace(" * @arg n dim\n", " * @arg n dim\n * @arg q dim\n"))
    assert err.line == PRELUDE_LINES + 5
    assert "@arg names 'q', which is not a parameter" in err.message


def test_shape_uses_unknown_size_parameter(tmp_path):
    err = error_of(tmp_path, GOOD.replace("in f32[n]", "in f32[rows]"))
    assert err.line == PRELUDE_LINES + 5
    assert "unknown size parameter 'rows'" in err.message


def test_unknown_dtype(tmp_path):
    err = error_of(tmp_path, GOOD.replace("in f32[n]", "in f64[n]"))
    assert err.line == PRELUDE_LINES + 5
    assert "unknown dtype 'f64'" in err.message


def test_half_dtypes_are_uint16(tmp_path):
    body = GOOD.replace("f32[n]", "bf16[n]").replace("const float *x, float *y", "const uint16_t *x, uint16_t *y")
    api = parse_text(tmp_path, body)
    assert [p.tensor.dtype for p in api.functions[0].tensors] == ["bf16", "bf16"]
    err = error_of(tmp_path, GOOD.replace("in f32[n]", "in f16[n]"))
    assert "dtype f16 does not match C type 'const float *'" in err.message


def test_bytes_dtype_is_void(tmp_path):
    body = GOOD.replace("f32[n]", "u8[n]").replace("const float *x, float *y", "const void *x, void *y")
    api = parse_text(tmp_path, body)
    assert api.functions[0].tensors[0].tensor.dtype == "u8"


OUT_SCALAR = """\
/**
 * Count.
 * @arg count out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_count(int64_t *count);
"""


def test_out_scalar(tmp_path):
    fn = parse_text(tmp_path, OUT_SCALAR).functions[0]
    assert fn.out_scalar.name == "count" and not fn.has_context and not fn.is_kernel
    err = error_of(tmp_path, OUT_SCALAR.replace("int64_t *count", "int32_t *count"))
    assert "'out scalar' needs type int64_t *" in err.message
    err = error_of(tmp_path, OUT_SCALAR.replace("kb_status kb_count", "int64_t kb_count"))
    assert "must return kb_status" in err.message


OUT_STRING = """\
/**
 * Name.
 * @arg name out string(cap)
 * @arg cap dim
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_name(char *name, int64_t cap);
"""


def test_out_string(tmp_path):
    fn = parse_text(tmp_path, OUT_STRING).functions[0]
    assert fn.out_string.name == "name" and fn.out_string.capacity == "cap"
    err = error_of(tmp_path, OUT_STRING.replace("out string(cap)", "out string(size)"))
    assert "string(size) does not name a dim parameter" in err.message
    err = error_of(tmp_path, OUT_STRING.replace("char *name", "const char *name"))
    assert "needs type char *" in err.message


IN_STRING = """\
/**
 * Lookup.
 * @arg ctx context
 * @arg key in string
 * @arg index out scalar
 * @threadsafe yes
 * @blocking no
 */
KB_API kb_status kb_lookup(kb_context *ctx, const char *key, int64_t *index);
"""


def test_in_string(tmp_path):
    fn = parse_text(tmp_path, IN_STRING).functions[0]
    assert fn.param("key").role == "in_string" and fn.param("key").ctype.kind == "string"
    assert not fn.is_kernel and fn.has_context
    err = error_of(tmp_path, IN_STRING.replace("const char *key", "char *key"))
    assert "'in string' needs type const char *" in err.message
    err = error_of(tmp_path, IN_STRING.replace(" * @arg key in string\n", ""))
    assert "pointer parameter 'key' has no @arg annotation" in err.message


RETURNS_ADDRESS = """\
/**
 * Address.
 * @returns address
 * @threadsafe yes
 * @blocking no
 */
KB_API void *kb_address(void);
"""


def test_returns_address(tmp_path):
    assert parse_text(tmp_path, RETURNS_ADDRESS).functions[0].returns_address
    err = error_of(tmp_path, RETURNS_ADDRESS.replace(" * @returns address\n", ""))
    assert "returns void * but has no '@returns address'" in err.message
    err = error_of(tmp_path, RETURNS_ADDRESS.replace("void *kb_address", "float *kb_address"))
    assert "functions may return void *" in err.message


def test_dtype_must_match_c_type(tmp_path):
    err = error_of(tmp_path, GOOD.replace("in f32[n]", "in i32[n]"))
    assert "dtype i32 does not match C type 'const float *'" in err.message


def test_input_must_be_const(tmp_path):
    err = error_of(tmp_path, GOOD.replace("const float *x", "float *x"))
    assert "'in' tensors must be a const pointer" in err.message


def test_missing_threadsafe(tmp_path):
    err = error_of(tmp_path, GOOD.replace(" * @threadsafe yes\n", ""))
    assert "missing @threadsafe" in err.message


def test_missing_doc_comment(tmp_path):
    err = error_of(tmp_path, "KB_API kb_status kb_g(kb_context *ctx);\n")
    assert err.line == PRELUDE_LINES + 1
    assert "function kb_g has no doc comment" in err.message


def test_alias_must_name_matching_input(tmp_path):
    err = error_of(tmp_path, GOOD.replace("alias(x)", "alias(z)"))
    assert "alias(z) does not name a tensor parameter" in err.message


def test_enum_needs_explicit_values(tmp_path):
    body = "/** E. */\ntypedef enum kb_e {\n  /** a */\n  KB_E_A\n} kb_e;\n"
    err = error_of(tmp_path, body)
    assert err.line == PRELUDE_LINES + 4
    assert "needs an explicit integer value" in err.message


def test_unknown_annotation(tmp_path):
    err = error_of(tmp_path, GOOD.replace(" * @blocking yes\n", " * @blocking yes\n * @fast yes\n"))
    assert "unknown annotation '@fast'" in err.message


def test_conditional_shape_needs_flag(tmp_path):
    err = error_of(tmp_path, GOOD.replace("in f32[n]", "in f32[n ? n : n]"))
    assert "condition 'n' is not a flag parameter" in err.message


def test_real_header_is_fully_annotated():
    api = parse_header(HEADER, "core/include/kernelbridge.h")
    names = {f.name for f in api.functions}
    assert {"kb_softmax", "kb_gemm", "kb_context_create", "kb_status_string"} <= names
    for fn in api.functions:
        assert fn.doc, fn.name
        for p in fn.params:
            if p.ctype.kind in ("pointer", "handle", "handle_out"):
                assert p.role in ("tensor", "context", "handle", "handle_out", "out_scalar", "out_string"), (
                    fn.name,
                    p.name,
                )


def test_real_header_reduced_precision_mirrors_float32():
    """Every kb_<op>_bf16/_f16 has kb_<op>'s parameters and annotations, with
    the float tensors in the dtype (integer tensors keep theirs)."""
    api = parse_header(HEADER)
    by_name = {f.name: f for f in api.functions}
    # A float32 model over a 16-bit KV cache: the base kernel's parameters
    # with only the cache tensors in the dtype.
    mixed = {"kb_kv_cache_append_to": ("kb_kv_cache_append", {"k_cache", "v_cache"}),
             "kb_attention_ex_kv": ("kb_attention_ex", {"k", "v"})}
    variants = [f for f in api.functions if f.name.endswith(("_bf16", "_f16"))]
    # Two for each of 16 model kernels, the decoder kernels glu,
    # add_rmsnorm, rope_ex, kv_cache_append and moe_route, embedding,
    # argmax and the three samplers, and the two cache kernels of mixed.
    assert len(variants) == 56
    # The router's weights are float32 whatever its logits are.
    stay_f32 = {("kb_moe_route", "weights")}
    for v in variants:
        base_name, _, dt = v.name.rpartition("_")
        keep = stay_f32
        if base_name in mixed:
            base_name, in_dt = mixed[base_name]
            keep = {(base_name, p.name) for p in by_name[base_name].params if p.name not in in_dt}
        base = by_name[base_name]
        assert v.is_kernel and [p.name for p in v.params] == [p.name for p in base.params]
        for p, q in zip(v.params, base.params):
            assert (p.role, p.default) == (q.role, q.default), (v.name, p.name)
            if p.role == "tensor":
                # Float tensors take the dtype; integer ones (kv_lengths) stay.
                want = dt if q.tensor.dtype == "f32" and (base_name, p.name) not in keep else q.tensor.dtype
                assert p.tensor.dtype == want and p.tensor.shape == q.tensor.shape, (v.name, p.name)
                assert (p.tensor.ld, p.tensor.stride, p.tensor.aliases, p.tensor.nullable) == (
                    q.tensor.ld,
                    q.tensor.stride,
                    q.tensor.aliases,
                    q.tensor.nullable,
                )


def test_gemm_contract_from_real_header():
    api = parse_header(HEADER)
    gemm = next(f for f in api.functions if f.name == "kb_gemm")
    a = gemm.param("a").tensor
    assert a.ld == "lda" and isinstance(a.shape[0], Cond) and a.shape[0].flag == "trans_a"
    sources = contracts.dim_sources(gemm)
    assert contracts.Source("a", 0, "trans_a", False) in sources["m"]
    assert contracts.Source("c", 0) in sources["m"]
    assert contracts.ld_params(gemm) == {"lda": "a", "ldb": "b", "ldc": "c"}
    # A [k, m] stored with row stride 7: (k - 1) * 7 + m elements.
    dims = {"m": 3, "n": 4, "k": 5, "lda": 7, "ldb": 4, "ldc": 4}
    assert contracts.required_len(gemm.param("a"), dims, {"trans_a": True, "trans_b": False}) == 4 * 7 + 3
    assert contracts.shape_of(gemm.param("b"), dims, {"trans_a": True, "trans_b": True}) == (4, 5)


def test_softmax_dims_derive_from_input():
    api = parse_header(HEADER)
    sm = next(f for f in api.functions if f.name == "kb_softmax")
    sources = contracts.dim_sources(sm)
    assert sources["rows"][0] == contracts.Source("x", 0)
    assert sources["cols"][0] == contracts.Source("x", 1)
    assert sm.param("x").tensor.shape == (Dim("rows"), Dim("cols"))


def test_length_dims_rule():
    api = parse_header(HEADER)
    by_name = {f.name: f for f in api.functions}
    # n from the first 1-D input; rows/cols of a 2-D tensor are not lengths.
    assert contracts.length_dims(by_name["kb_silu"]) == {"n": ["x", "y"]}
    assert contracts.length_dims(by_name["kb_rmsnorm"]) == {"cols": ["weight"]}
    # Nullable tensors never give a dim (layernorm's weight and bias).
    assert contracts.length_dims(by_name["kb_layernorm"]) == {}
    # Conditional shapes are not plain lengths.
    assert "m" not in contracts.length_dims(by_name["kb_gemm"])


def test_scalar_and_flag_defaults(tmp_path):
    body = GOOD.replace(
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y);",
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y, float eps, bool fast, int32_t k);",
    ).replace(
        " * @threadsafe yes\n",
        " * @arg eps scalar default(1e-05)\n * @arg fast flag default(true)\n * @arg k scalar default(-100)\n"
        " * @threadsafe yes\n",
    )
    (fn,) = parse_text(tmp_path, body).functions
    assert (fn.param("eps").default, fn.param("fast").default, fn.param("k").default) == ("1e-05", "true", "-100")
    assert fn.param("n").default is None


@pytest.mark.parametrize(
    "role, message",
    [
        ("scalar default(abc)", "default of a float32 must be a finite number, got 'abc'"),
        ("scalar default(nan)", "default of a float32 must be a finite number"),
        ("scalar fast", "unknown scalar option 'fast'"),
    ],
)
def test_bad_defaults(tmp_path, role, message):
    body = GOOD.replace(
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y);",
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y, float eps);",
    ).replace(" * @threadsafe yes\n", f" * @arg eps {role}\n * @threadsafe yes\n")
    err = error_of(tmp_path, body)
    assert err.line == PRELUDE_LINES + 7  # the @arg eps line
    assert message in err.message


def test_real_header_defaults_follow_pytorch():
    api = parse_header(HEADER)
    by_name = {f.name: f for f in api.functions}
    assert by_name["kb_gemm"].param("alpha").default == "1"
    assert by_name["kb_gemm"].param("beta").default == "0"
    assert by_name["kb_cross_entropy"].param("ignore_index").default == "-100"
    assert by_name["kb_layernorm"].param("eps").default == "1e-05"
    assert by_name["kb_scale"].param("alpha").default is None


# --- enum defaults --------------------------------------------------------------

ENUM_PRELUDE = """\
/** Mode. */
typedef enum kb_mode {
  /** a */
  KB_MODE_PLAIN = 0,
  /** b */
  KB_MODE_FAST = 4
} kb_mode;
"""


def _enum_fn(default):
    return ENUM_PRELUDE + GOOD.replace(
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y);",
        "KB_API kb_status kb_f(kb_context *ctx, int64_t n, const float *x, float *y, kb_mode mode);",
    ).replace(" * @threadsafe yes\n", f" * @arg mode scalar default({default})\n * @threadsafe yes\n")


@pytest.mark.parametrize("default", ["KB_MODE_FAST", "4"])
def test_enum_default_by_name_or_value(tmp_path, default):
    (fn,) = parse_text(tmp_path, _enum_fn(default)).functions
    # Normalised to the enumerator's name, whichever way it was written.
    assert fn.param("mode").default == "KB_MODE_FAST"


@pytest.mark.parametrize("default", ["KB_MODE_SLOW", "3", "fast"])
def test_enum_default_must_be_an_enumerator(tmp_path, default):
    err = error_of(tmp_path, _enum_fn(default))
    assert "default of a kb_mode must be one of its enumerators (KB_MODE_PLAIN, KB_MODE_FAST)" in err.message
    assert f"got '{default}'" in err.message


def test_real_header_linear_act_defaults_to_none():
    api = parse_header(HEADER)
    for name in ("kb_linear", "kb_linear_bf16", "kb_linear_f16"):
        fn = next(f for f in api.functions if f.name == name)
        assert fn.param("act").default == "KB_ACTIVATION_NONE"


# --- stride(...) ----------------------------------------------------------------

BATCHED = """\
/**
 * Batched.
 * @arg ctx context
 * @arg batch dim
 * @arg r dim
 * @arg c dim
 * @arg ld dim
 * @arg s dim
 * @arg x in f32[batch, r, c] ld(ld) stride(s)
 * @arg y out f32[batch, r, c]
 * @threadsafe yes
 * @blocking yes
 */
KB_API kb_status kb_b(kb_context *ctx, int64_t batch, int64_t r, int64_t c, int64_t ld, int64_t s, const float *x,
                      float *y);
"""


def test_stride_option(tmp_path):
    (fn,) = parse_text(tmp_path, BATCHED).functions
    x = fn.param("x").tensor
    assert (x.stride, x.ld) == ("s", "ld")
    assert contracts.stride_params(fn) == {"s": "x"}
    assert contracts.layout_params(fn) == {"ld": "x", "s": "x"}
    flags = {}
    # (batch - 1) * s + (r - 1) * ld + c
    assert contracts.required_len(fn.param("x"), {"batch": 3, "r": 2, "c": 4, "ld": 6, "s": 20}, flags) == 2 * 20 + 6 + 4
    # stride 0: one item for the whole batch
    assert contracts.required_len(fn.param("x"), {"batch": 5, "r": 2, "c": 4, "ld": 4, "s": 0}, flags) == 8
    # an empty batch or item needs nothing
    assert contracts.required_len(fn.param("x"), {"batch": 0, "r": 2, "c": 4, "ld": 4, "s": 8}, flags) == 0
    assert contracts.required_len(fn.param("x"), {"batch": 3, "r": 0, "c": 4, "ld": 4, "s": 8}, flags) == 0
    # dense tensors are unchanged
    assert contracts.required_len(fn.param("y"), {"batch": 3, "r": 2, "c": 4, "ld": 4, "s": 8}, flags) == 24


@pytest.mark.parametrize(
    "role, message",
    [
        ("in f32[batch, r, c] ld(ld) stride(q)", "stride(q) does not name a dim parameter"),
        ("in f32[batch, r, c] ld(ld) stride(x)", "stride(x) does not name a dim parameter"),
        ("in f32[batch, r, c] ld(ld)", "ld() applies to 2-D tensors, or 3-D tensors with stride()"),
        ("in f32[batch] stride(s)", "stride() needs a tensor of at least 2 dimensions"),
        ("in f32[batch, r, c] ld(ld) stride(ld)", "must not also be a dimension or the ld of the tensor"),
        ("in f32[batch, r, c] ld(ld) stride(r)", "must not also be a dimension or the ld of the tensor"),
        ("in f32[batch, r, c] ld(ld) strides(s)", "unknown tensor option 'strides(s)'"),
    ],
)
def test_bad_stride(tmp_path, role, message):
    err = error_of(tmp_path, BATCHED.replace("in f32[batch, r, c] ld(ld) stride(s)", role))
    assert err.line == PRELUDE_LINES + 9  # the @arg x line
    assert message in err.message


def test_gemm_batched_contract_from_real_header():
    api = parse_header(HEADER)
    fn = next(f for f in api.functions if f.name == "kb_gemm_batched")
    assert contracts.layout_params(fn) == {
        "lda": "a", "ldb": "b", "ldc": "c", "stride_a": "a", "stride_b": "b", "stride_c": "c"}
    dims = {"batch": 4, "m": 3, "n": 5, "k": 2, "lda": 3, "ldb": 6, "ldc": 7, "stride_a": 0, "stride_b": 13,
            "stride_c": 30}
    flags = {"trans_a": True, "trans_b": False}
    assert contracts.required_len(fn.param("a"), dims, flags) == (2 - 1) * 3 + 3  # shared A^T [2, 3]
    assert contracts.required_len(fn.param("b"), dims, flags) == 3 * 13 + (2 - 1) * 6 + 5
    assert contracts.required_len(fn.param("c"), dims, flags) == 3 * 30 + (3 - 1) * 7 + 5
