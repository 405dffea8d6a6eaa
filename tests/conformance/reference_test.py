"""Self-test of the conformance reference (tests/conformance/reference.py).

Checks the reference against hand-computed values and published known
answers, independently of kernelbridge.  Runs under pytest or directly.
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus  # noqa: E402
import reference as ref  # noqa: E402


def close(got, want, tol=1e-15):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    with np.errstate(invalid="ignore"):
        near = np.abs(got - want) <= tol * np.maximum(1, np.abs(want))
        same = (got == want) | (np.isnan(got) & np.isnan(want)) | near
    assert same.all(), (got, want)


# --- Philox4x32-10 and the per-row uniform -----------------------------------


def test_philox_known_answers():
    # Random123 tests/kat_vectors, philox4x32_10.
    assert ref.philox4x32_10([0, 0, 0, 0], [0, 0]) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert ref.philox4x32_10([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    assert ref.philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == (
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def test_row_uniform_layout():
    seed, row = 0x0123456789ABCDEF, (7 << 32) | 5
    word = ref.philox4x32_10([5, 7, 0, 0], [0x89ABCDEF, 0x01234567])[0]
    assert ref.row_uniform(seed, row) == (word >> 8) / 16777216.0
    assert ref.row_uniform(0, 0) == (0x6627E8D5 >> 8) * 2.0**-24
    for r in range(200):
        u = ref.row_uniform(99, r)
        assert 0.0 <= u < 1.0 and (u * 2**24).is_integer()


# --- sampling -----------------------------------------------------------------


def doc_sample_row(x, u, kind, k=None, p=None, T=1.0):
    """The numpy one-row sketch given in docs/kernels.md, used as a cross-check."""
    x = x.astype(np.float64)
    if kind == "sample":
        cand = np.arange(len(x))
    else:
        cand = np.argsort(-x, kind="stable")
        if kind == "topk":
            cand = cand[:k]
    w = np.exp((x[cand] - x.max()) / T)
    S = np.cumsum(w)
    L = len(cand)
    if kind == "topp":
        L = int(np.argmax(S >= p * S[-1])) + 1
    t = u * S[L - 1]
    return int(cand[int(np.argmax(S[:L] > t))])


def test_sampling_matches_documented_sketch():
    g = np.random.Generator(np.random.PCG64(1234))
    for trial in range(40):
        cols = int(g.integers(1, 60))
        x = np.float32(g.standard_normal((6, cols)) * 2)
        if trial % 3 == 0:
            x = np.float32(np.round(x))  # ties
        T = float(np.float32(g.uniform(0.3, 2.0)))
        seed = int(g.integers(0, 2**63)) * 2 + 1
        k = int(g.integers(1, cols + 1))
        p = float(np.float32(g.uniform(0.05, 1.0)))
        us = [ref.row_uniform(seed, r) for r in range(6)]
        got = ref.sample(x, T, seed)
        assert list(got) == [doc_sample_row(x[r], us[r], "sample", T=T) for r in range(6)]
        got = ref.topk_sample(x, k, T, seed)
        assert list(got) == [doc_sample_row(x[r], us[r], "topk", k=k, T=T) for r in range(6)]
        got = ref.topp_sample(x, p, T, seed)
        assert list(got) == [doc_sample_row(x[r], us[r], "topp", p=p, T=T) for r in range(6)]


def test_sampling_hand_cases():
    # One column: always 0.  A single finite logit among -inf: always it.
    assert list(ref.sample(np.float32([[3.0]] * 4), 1.0, 5)) == [0, 0, 0, 0]
    x = np.float32([[-math.inf, 2.0, -math.inf]] * 8)
    assert list(ref.sample(x, 0.5, 77)) == [1] * 8
    # top-1 is argmax (first of ties); a tiny p keeps only the top candidate.
    x = np.float32([[0.0, 5.0, 5.0, 1.0]] * 8)
    assert list(ref.topk_sample(x, 1, 1.0, 3)) == [1] * 8
    assert list(ref.topp_sample(x, 1e-6, 1.0, 3)) == [1] * 8
    # Two equal weights: u < 0.5 picks the first candidate, else the second.
    x = np.float32([[0.0, 0.0]] * 16)
    got = ref.sample(x, 1.0, 2024)
    want = [0 if ref.row_uniform(2024, r) < 0.5 else 1 for r in range(16)]
    assert list(got) == want


def test_argmax():
    x = np.float32([[1, 3, 3, 2], [1, math.nan, 5, math.nan], [-math.inf] * 4, [-0.0, 0.0, -1, 0.0]])
    assert list(ref.argmax(x)) == [1, 1, 0, 0]


# --- elementwise --------------------------------------------------------------


def test_activations():
    close(ref.silu(np.float32([0, 1, -1])), [0, 1 / (1 + math.exp(-1)), -1 / (1 + math.exp(1))])
    close(ref.gelu(np.float32([0, 1, -1])), [0, 0.8413447460685429, -0.15865525393145707])
    # PyTorch gelu(approximate='tanh') at 1 and -1.
    close(ref.gelu_tanh(np.float32([0, 1, -1])), [0, 0.8411919906082768, -0.15880800939172324])
    # Deep negative tails stay accurate (no 1 + erf / 1 + tanh cancellation).
    close(ref.gelu(np.float32([-10])), [-10 * 0.5 * math.erfc(10 / math.sqrt(2))], 1e-14)
    assert ref.silu(np.float32([-80]))[0] < 0 and abs(ref.silu(np.float32([-80]))[0] - (-80 * math.exp(-80))) < 1e-45
    assert ref.gelu(np.float32([80]))[0] == 80.0


def test_arithmetic():
    close(ref.add(np.float32([1, 2]), np.float32([0.5, -2])), [1.5, 0])
    close(ref.mul(np.float32([3, -2]), np.float32([0.5, 4])), [1.5, -8])
    close(ref.scale(np.float32(2), np.float32([1.5, -3])), [3, -6])
    close(ref.add_bias(np.float32([[1, 2], [3, 4]]), np.float32([10, 20])), [[11, 22], [13, 24]])


# --- row-wise -----------------------------------------------------------------


def test_softmax():
    close(ref.softmax(np.float32([[0, math.log(3)]])), [[0.25, 0.75]], 1e-7)  # log(3) rounded to float32
    y = ref.softmax(np.float32([[1e4, -1e4, 1e4]]))
    close(y, [[0.5, 0, 0.5]])
    y = ref.softmax(np.float32([[0, math.nan], [-math.inf, -math.inf], [0, -math.inf]]))
    assert np.isnan(y[0]).all() and np.isnan(y[1]).all()
    close(y[2], [1, 0])
    close(ref.log_softmax(np.float32([[0, 0, 0, 0]])), [[-math.log(4)] * 4])
    close(ref.log_softmax(np.float32([[0, -math.inf]])), [[0, -math.inf]])


def test_norms():
    close(ref.rmsnorm(np.float32([[3, 4]]), np.float32([1, 2]), 0.0), [[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)]])

    close(ref.layernorm(np.float32([[1, 2, 3]]), None, None, 0.0), [[-1 / math.sqrt(2 / 3), 0, 1 / math.sqrt(2 / 3)]])
    close(ref.layernorm(np.float32([[1, 3]]), np.float32([2, 2]), np.float32([1, -1]), 0.0), [[-1, 1]])
    close(ref.layernorm(np.float32([[5, 5]]), np.float32([1, 1]), np.float32([0.5, 2]), 1e-5), [[0.5, 2]])



# --- gemm ---------------------------------------------------------------------


def test_gemm():
    A = np.float32([[1, 2, 3], [4, 5, 6]])  # [m=2, k=3]
    B = np.float32([[1, 0], [0, 1], [1, 1]])  # [k=3, n=2]
    C = np.float32([[1, 1], [1, 1]])
    want = 2 * (A.astype(np.float64) @ B) + 0.5 * C
    for ta in (False, True):
        for tb in (False, True):
            a = A.T.copy() if ta else A
            b = B.T.copy() if tb else B
            got = ref.gemm(ta, tb, 2, 2, 3, 2.0, a, a.shape[1], b, b.shape[1], 0.5, C, 2)
            close(got.reshape(2, 2), want)
    # Padded strides; beta == 0 ignores NaN in C; padding of C is kept.
    a = np.float32([[1, 2, 3, np.nan], [4, 5, 6, np.nan]])
    c = np.float32([[np.nan, np.nan, -7], [np.nan, np.nan, -7]])
    got = ref.gemm(False, False, 2, 2, 3, 1.0, a, 4, B, 2, 0.0, c, 3).reshape(2, 3)
    close(got, [[4, 5, -7], [10, 11, -7]])
    # k == 0: C = beta * C.
    close(ref.gemm(False, False, 1, 2, 0, 1.0, np.float32([]), 1, np.float32([]), 2, 3.0, np.float32([1, 2]), 2),
          [3, 6])


# --- transformer blocks ---------------------------------------------------------


def test_embedding_and_rope():
    table = np.float32([[0, 1], [2, 3], [4, 5]])
    close(ref.embedding(np.int32([2, 0, 2]), table), [[4, 5], [0, 1], [4, 5]])
    x = np.float32([[[1, 0]], [[1, 0]], [[0.5, 2]]])  # seq 3, heads 1, head_dim 2
    y = ref.rope(x, np.int32([0, 1, 0]), 10000.0)
    close(y[0, 0], [1, 0])
    close(y[1, 0], [math.cos(1), math.sin(1)])
    close(y[2, 0], [0.5, 2])
    # head_dim 4: the second pair rotates with theta^(-1/2).
    x = np.float32([[[0, 1, 0, 0]]])
    y = ref.rope(x, np.int32([2]), 100.0)
    ang = 2 * 100.0**-0.5
    close(y[0, 0], [0, math.cos(ang), 0, math.sin(ang)])


def test_attention():
    q = np.float32(np.ones((1, 2, 2, 4)))
    k = np.float32(np.ones((1, 1, 3, 4)))  # equal scores: uniform weights
    v = np.float32(np.arange(12).reshape(1, 1, 3, 4))
    out = ref.attention(q, k, v, False, 0.0)
    close(out[0, 0, 0], v[0, 0].astype(np.float64).mean(axis=0))
    close(out[0, 1], out[0, 0])  # both query heads read kv head 0
    out = ref.attention(q, k, v, True, 0.0)
    close(out[0, 0, 0], v[0, 0, 0])  # causal: query 0 sees key 0 only
    close(out[0, 0, 1], v[0, 0, :2].astype(np.float64).mean(axis=0))
    # scale: two keys with scores 0 and s * 1.
    q = np.float32([[[[1.0]]]])
    k = np.float32([[[[0.0], [1.0]]]])
    v = np.float32([[[[0.0], [1.0]]]])
    out = ref.attention(q, k, v, False, np.float32(0.5))
    close(out[0, 0, 0], [math.exp(0.5) / (1 + math.exp(0.5))])


# --- training -------------------------------------------------------------------


def test_linear_is_gemm_plus_bias_then_activation():
    g = np.random.default_rng(3)
    x, w, b = g.standard_normal((3, 4)), g.standard_normal((2, 4)), g.standard_normal(2)
    y = x @ w.T + b
    close(ref.linear(x, w, b, 0), y, 1e-14)
    close(ref.linear(x, w, b, 1), np.maximum(y, 0), 1e-14)
    close(ref.linear(x, w, None, 4), ref.silu(x @ w.T), 1e-14)
    # relu: NaN stays NaN, -0 gives +0
    r = ref.linear(np.array([[math.nan], [-0.0]]), np.array([[1.0]]), None, 1)
    assert math.isnan(r[0, 0]) and r[1, 0] == 0.0 and math.copysign(1, r[1, 0]) == 1.0


def test_attention_ex_reduces_to_attention_and_hand_cases():
    g = np.random.default_rng(5)
    q, k, v = g.standard_normal((2, 4, 3, 5)), g.standard_normal((2, 2, 6, 5)), g.standard_normal((2, 2, 6, 5))
    plain = ref.attention(q, k, v, True, 0.0)
    close(ref.attention_ex(q, k, v, None, None, True, False, 0.0, False), plain, 1e-14)
    # seq_major is a transposed layout of the same computation
    t = lambda a: np.ascontiguousarray(a.transpose(0, 2, 1, 3))  # noqa: E731
    close(t(ref.attention_ex(t(q), t(k), t(v), None, None, True, True, 0.0, True)),
          ref.attention_ex(q, k, v, None, None, True, True, 0.0, False), 1e-14)
    # lengths are a -inf mask on the keys past them
    mask = np.zeros((2, 1, 1, 6))
    mask[1, :, :, 2:] = -math.inf
    close(ref.attention_ex(q, k, v, [6, 2], None, False, False, 0.0, False),
          ref.attention_ex(q, k, v, None, mask, False, False, 0.0, False), 1e-14)
    # one key: the output is its value row; no key: zeros
    out = ref.attention_ex(q, k, v, [1, 0], None, False, False, 0.0, False)
    close(out[0, 1, 2], v[0, 0, 0], 1e-15)
    assert (out[1] == 0).all()
    # bottom-right with 3 queries and 6 keys: query i sees keys j <= i + 3
    m = np.full((1, 1, 3, 6), -math.inf)
    for i in range(3):
        m[0, 0, i, :i + 4] = 0
    close(ref.attention_ex(q, k, v, None, None, True, True, 0.0, False),
          ref.attention_ex(q, k, v, None, m, False, False, 0.0, False), 1e-14)


def test_gemm_batched_items_and_broadcast():
    g = np.random.default_rng(7)
    a = g.standard_normal(2 * 6)  # two [2, 3] items, stride 6
    b = g.standard_normal(3 * 4)  # one [3, 4] matrix, stride 0
    c = np.full(2 * 10, -777.0)   # [2, 4] items with ldc 4, stride 10: gaps of 2
    out = ref.gemm_batched(False, False, 2, 2, 4, 3, 1.0, a, 3, 6, b, 4, 0, 0.0, c, 4, 10)
    for i in range(2):
        close(out[i * 10:i * 10 + 8].reshape(2, 4), a[i * 6:i * 6 + 6].reshape(2, 3) @ b.reshape(3, 4), 1e-14)
    assert (out[8:10] == -777).all() and (out[18:] == -777).all()


def test_cross_entropy():
    logits = np.float32([[0, 0, 0], [0, 0, 0]])
    losses, mean = ref.cross_entropy(logits, np.int32([1, -100]), -100)
    close(losses, [math.log(3), 0])
    close(mean, [math.log(3)])
    _, mean = ref.cross_entropy(logits, np.int32([-100, -100]), -100)
    assert math.isnan(mean[0])
    d = ref.cross_entropy_backward(logits, np.int32([1, -100]), -100, 2.0)
    close(d, [[2 / 3, -4 / 3, 2 / 3], [0, 0, 0]])
    d = ref.cross_entropy_backward(np.float32([[1, 2, 3], [0, 5, 1]]), np.int32([0, 2]), -100, 1.0)
    close(d.sum(axis=1), [0, 0], 1e-15)


def test_adamw_first_step():
    p, g = np.float32([1.0, -2.0]), np.float32([0.5, -0.25])
    z = np.zeros(2, dtype=np.float32)
    p2, m2, v2 = ref.adamw_step(p, g, z, z, 0.1, 0.9, 0.999, 0.0, 0.0, 1)
    close(p2, [0.9, -1.9], 1e-12)  # step 1, eps 0: moves lr * sign(g)
    close(m2, [0.05, -0.025], 1e-12)
    close(v2, [0.25 * 0.001, 0.0625 * 0.001], 1e-12)
    p2, _, _ = ref.adamw_step(p, np.float32([0, 0]), z, z, 0.1, 0.9, 0.999, 1e-8, 0.5, 1)
    close(p2, [0.95, -1.9], 1e-12)  # pure decoupled weight decay


# --- the error metric -------------------------------------------------------------


def test_ulp32_and_metric():
    close(ref.ulp32(np.array([1.0, 1.5, 2.0, 0.0, 2.0**-130, 3e38, -1.0])),
          [2.0**-23, 2.0**-23, 2.0**-22, 2.0**-149, 2.0**-149, 2.0**104, 2.0**-23])
    e = ref.ulp_error(np.float32([1 + 2**-23, math.nan, math.inf, 0.0, 1e-9]),
                      np.array([1.0, math.nan, math.inf, -0.0, 0.0]), 2, 0.0)
    close(e[:4], [1, 0, 0, 0])
    assert e[4] > 1e20
    # The absolute floor: |d| <= abs passes at exactly `ulp`.
    e = ref.ulp_error(np.float32([1e-6]), np.array([0.0]), 4, 1e-6)
    close(e, [4 * float(np.float32(1e-6)) / 1e-6], 1e-12)
    assert ref.ulp_error(np.float32([1.0]), np.array([math.nan]), 2, 0)[0] == math.inf


def test_npy_writer_matches_numpy_reader():
    import io
    for arr in (np.float32([[1, 2, 3], [4, 5, 6]]), np.float64([]), np.int32([7]), np.zeros((0, 4), np.float32),
                np.uint8([0, 255, 128]), np.zeros(0, np.uint8)):
        data = make_corpus.npy_bytes(arr)
        assert len(data) % 64 == 0 or arr.size > 0
        back = np.load(io.BytesIO(data))
        assert back.dtype == arr.dtype and back.shape == arr.shape and (back == arr).all()
        assert (10 + int.from_bytes(data[8:10], "little")) % 64 == 0

    assert b"'descr': '|u1'" in make_corpus.npy_bytes(np.uint8([1]))


# --- storage formats (kb_dtype) ------------------------------------------------

F16, BF16, Q8, Q4 = ref.DTYPE_F16, ref.DTYPE_BF16, ref.DTYPE_Q8_0, ref.DTYPE_Q4_0


def test_dtype_bytes():
    assert ref.dtype_bytes(Q4, 3, 64) == 108 and ref.dtype_bytes(Q8, 3, 64) == 204
    assert ref.dtype_bytes(ref.DTYPE_F32, 2, 3) == 24 and ref.dtype_bytes(F16, 2, 5) == 20
    assert ref.dtype_bytes(BF16, 0, 7) == 0 and ref.dtype_bytes(Q8, 5, 0) == 0
    for t in (Q8, Q4):
        try:
            ref.dtype_bytes(t, 1, 48)
        except ValueError:
            continue
        raise AssertionError("cols 48 accepted for a block format")


def test_half_rounding_hand_values():
    f16 = {65504.0: 0x7BFF, 65519.99: 0x7BFF, 65520.0: 0x7C00, 2.0**-24: 0x0001, 2.0**-25: 0x0000,
           3 * 2.0**-25: 0x0002, 2.0**-14 - 2.0**-25: 0x0400, 1 + 2.0**-11: 0x3C00, 1 + 3 * 2.0**-11: 0x3C02,
           -0.0: 0x8000, -math.inf: 0xFC00, -2.5: 0xC100, 1e-10: 0x0000, -1e-10: 0x8000}
    bf16 = {1.0: 0x3F80, 1 + 2.0**-8: 0x3F80, 1 + 3 * 2.0**-8: 0x3F82, 3.4028235e38: 0x7F80, 3.3895314e38: 0x7F7F,
            2.0**-133: 0x0001, 2.0**-134: 0x0000, 3 * 2.0**-134: 0x0002, -0.0: 0x8000, -3.0: 0xC040}
    for dt, table in ((F16, f16), (BF16, bf16)):
        got = ref.to_half_bits(np.float32(list(table)), dt)
        assert [int(v) for v in got] == list(table.values()), (dt, [hex(v) for v in got])
    close(ref.from_half_bits(np.uint16([0x3C00, 0x0001, 0x7BFF, 0xFC00, 0x8000]), F16),
          [1, 2.0**-24, 65504, -math.inf, -0.0])
    assert math.copysign(1, ref.from_half_bits(np.uint16([0x8000]), F16)[0]) == -1
    assert np.isnan(ref.from_half_bits(np.uint16([0x7E00, 0x7C01, 0x7F81]), F16)[:2]).all()
    close(ref.from_half_bits(np.uint16([0x3F80, 0x0001, 0xC040]), BF16), [1, 2.0**-133, -3])


def nearest_by_search(x, dt):
    """Round each float to the nearest finite value of the 16-bit format by
    searching the sorted list of all of them (ties to the even pattern,
    beyond the largest finite value by IEEE's overflow threshold): a
    brute-force counterpart of reference._round_half."""
    pats = np.arange(0x7C00 if dt == F16 else 0x7F80, dtype=np.uint16)  # +0 .. largest finite
    vals = ref.from_half_bits(pats, dt)
    limit = vals[-1] + (vals[-1] - vals[-2]) / 2  # halfway to 2^(emax + 1): a tie, to even (infinity)
    out = []
    for v in np.asarray(x, np.float64):
        a, sign = abs(v), 0x8000 if math.copysign(1, v) < 0 else 0
        if a >= limit:
            out.append(sign | (0x7C00 if dt == F16 else 0x7F80))
            continue
        i = int(np.searchsorted(vals, a))
        cands = [j for j in (i - 1, i) if 0 <= j < len(vals)]
        best = min(cands, key=lambda j: (abs(vals[j] - a), int(pats[j]) & 1))
        out.append(sign | int(pats[best]))
    return out


def test_half_rounding_against_search_and_numpy():
    g = np.random.default_rng(11)
    bits = g.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[~np.isnan(x)]
    # Values near the 16-bit formats' ranges, where rounding is interesting.
    near = np.float32(g.standard_normal(3000) * np.exp2(g.integers(-30, 17, 3000)))
    for dt in (F16, BF16):
        for xs in (x, near):
            assert [int(v) for v in ref.to_half_bits(xs, dt)] == nearest_by_search(xs, dt)
    with np.errstate(over="ignore"):
        want = near.astype(np.float16).view(np.uint16)
    assert (ref.to_half_bits(near, F16) == want).all()


def block_bytes(scale_bits, codes):
    return np.uint8([scale_bits & 0xFF, scale_bits >> 8] + [c & 0xFF for c in codes])


def test_q8_0_hand_blocks():
    # d = 127 / 127 = 1: the codes are x rounded, halves away from zero.
    x = [127.0, 0.5, -0.5, 1.5, -2.5, 126.5] + [0.0] * 26
    got = ref.quantize(np.float32([x]), Q8)
    assert (got == block_bytes(0x3C00, [127, 1, -1, 2, -3, 127] + [0] * 26)).all()
    # Zeros: d = 0, id = 0; and a max whose 1/d overflows: codes 0, scale 0.
    assert (ref.quantize(np.zeros((1, 32), np.float32), Q8) == 0).all()
    assert (ref.quantize(np.float32([[1e-40] + [5e-41] * 31]), Q8) == 0).all()
    # d = 1 + 2^-11 is an f16 tie: stored as 1.0 (even), the codes use the float d.
    x = np.float32([[127 * (1 + 2.0**-11), 63.5] + [0.0] * 30])
    got = ref.quantize(x, Q8)
    assert list(got[:4]) == [0x00, 0x3C, 127, 63]  # 63.5 / (1 + 2^-11) = 63.47: 63
    # The largest scale that fits: 65519 rounds to 65504; 65520 does not fit.
    assert list(ref.quantize(np.float32([[65519.0 * 127] + [0.0] * 31]), Q8)[:3]) == [0xFF, 0x7B, 127]
    for bad in ([65520.0 * 127] + [0.0] * 31, [1.0, math.nan] + [0.0] * 30):
        try:
            ref.quantize(np.float32([bad]), Q8)
        except ValueError:
            continue
        raise AssertionError("accepted %r" % bad[:2])


def test_q4_0_hand_blocks():
    # max = -8: d = 1, code = min(15, trunc(x + 8.5)).
    x = np.float32([[k / 2 for k in range(-16, 16)]])
    low = [(j + 1) // 2 for j in range(16)]
    high = [min(15, 8 + (j + 1) // 2) for j in range(16)]
    want = block_bytes(0x3C00, [lo | (hi << 4) for lo, hi in zip(low, high)])
    assert (ref.quantize(x, Q4) == want).all()
    # All zeros, also with a leading -0.0: max stays +0.0, so d = -0.0 (ggml's C).
    for first in (0.0, -0.0):
        got = ref.quantize(np.float32([[first] + [0.0] * 31]), Q4)
        assert (got == block_bytes(0x8000, [0x88] * 16)).all()
    # Repeated maxima of opposite signs: the first one sets the sign of d.
    # Codes: 3 -> 0, -3 -> 15 (16 clipped), the zeros (elements 16, 17, ...) 8.
    got = ref.quantize(np.float32([[3.0, -3.0] + [0.0] * 30]), Q4)
    assert (got == block_bytes(0xB600, [0x80, 0x8F] + [0x88] * 14)).all()  # d = -0.375
    got = ref.quantize(np.float32([[-3.0, 3.0] + [0.0] * 30]), Q4)
    assert (got == block_bytes(0x3600, [0x80, 0x8F] + [0x88] * 14)).all()  # d = +0.375


def test_dequantize_hand_blocks():
    data = np.concatenate([block_bytes(0x3C00, [1, -1, -128, 127] + [0] * 28),
                           block_bytes(0x7C00, [0, 2, -2] + [0] * 29),
                           block_bytes(0x8000, [5] + [0] * 31)])
    y = ref.dequantize(data, Q8, 3, 32)
    close(y[0, :5], [1, -1, -128, 127, 0])
    assert np.isnan(y[1, 0]) and y[1, 1] == math.inf and y[1, 2] == -math.inf
    assert y[2, 0] == 0 and math.copysign(1, y[2, 0]) == -1
    y = ref.dequantize(block_bytes(0x4000, [0x1F] + [0x88] * 15), Q4, 1, 32)  # d = 2
    assert y[0, 0] == 14 and y[0, 16] == -14 and (y[0, 1:16] == 0).all() and (y[0, 17:] == 0).all()
    close(ref.dequantize(np.uint8([0, 0x3C, 0, 0xC0]), F16, 1, 2), [[1, -2]])
    close(ref.dequantize(np.uint8([0x80, 0x3F, 0x40, 0xC0]), BF16, 2, 1), [[1], [-3]])
    close(ref.dequantize(np.float32([1.5, -0.25]).view(np.uint8), ref.DTYPE_F32, 1, 2), [[1.5, -0.25]])


def test_round_trips():
    # Quantizing what a format holds gives the same bytes (block scales kept
    # binary16 normals); the error of one round trip is within half a step
    # (Q4_0: a whole step, where the code 16 is clipped to 15), plus the
    # rounding of the scale for the block formats.
    g = np.random.default_rng(12)
    x = np.float32(g.standard_normal((8, 96)) * np.exp2(g.integers(-4, 10, (8, 1))))
    amax = np.abs(x).reshape(-1, 32).max(axis=1).repeat(32).reshape(8, 96).astype(np.float64)
    bounds = {Q8: amax / 127 / 2 + amax * 2.0**-10, Q4: amax / 8 + amax * 2.0**-10,
              F16: np.maximum(np.abs(x) * 2.0**-11, 2.0**-25), BF16: np.abs(x) * 2.0**-8}
    for dt, bound in bounds.items():
        q = ref.quantize(x, dt)
        back = np.float32(ref.dequantize(q, dt, 8, 96))
        assert (ref.quantize(back, dt) == q).all(), dt
        assert (np.abs(back.astype(np.float64) - x) <= bound).all(), dt


def test_linear_w_and_embedding_w():
    g = np.random.default_rng(13)
    x, w = np.float32(g.standard_normal((3, 64))), np.float32(g.standard_normal((5, 64)))
    b = np.float32([1, 2, 3, 4, 5])
    for dt in (ref.DTYPE_F32, F16, BF16, Q8, Q4):
        q = ref.quantize(w, dt)
        close(ref.linear_w(x, dt, q, 5, b, 4), ref.linear(x, ref.dequantize(q, dt, 5, 64), b, 4))
    assert (ref.dequantize(ref.quantize(w, ref.DTYPE_F32), ref.DTYPE_F32, 5, 64) == w).all()
    # Block formats: a row of x holding NaN or infinity is NaN; the others are untouched.
    x[1, 7] = math.inf
    y = ref.linear_w(x, Q8, ref.quantize(w, Q8), 5, None, 1)
    assert np.isnan(y[1]).all() and not np.isnan(y[[0, 2]]).any()
    table = ref.quantize(w, Q4)
    close(ref.embedding_w(np.int32([4, 0, 4]), Q4, table, 5, 64), ref.dequantize(table, Q4, 5, 64)[[4, 0, 4]])


def test_linear_w_quant_tolerance():
    # The bound's first term covers replacing x by its int8 quantization
    # (scale max|x| / 127 per block, round to nearest): compare it with that
    # error computed exactly, for random rows.
    g = np.random.default_rng(14)
    x = np.float32(g.standard_normal((6, 96)))
    w = ref.dequantize(ref.quantize(np.float32(g.standard_normal((7, 96)) / 10), Q8), Q8, 7, 96)
    blocks = x.astype(np.float64).reshape(6, 3, 32)
    dx = np.abs(blocks).max(axis=2, keepdims=True) / 127
    xq = (np.round(blocks / dx) * dx).reshape(6, 96)
    quant_err = np.abs(xq @ w.T - x.astype(np.float64) @ w.T).max()
    tol = make_corpus.linear_w_quant_tolerance(x, w, None, 0)
    assert tol["ulp"] == make_corpus.TOLERANCES["linear_w"]["ulp"]
    assert quant_err <= tol["abs"] <= 20 * quant_err, (quant_err, tol)
    # Bias and activation widen it; rows with NaN do not count.
    assert make_corpus.linear_w_quant_tolerance(x, w, np.float32(np.full(7, 100)), 2)["abs"] > tol["abs"]
    x[0] = np.nan
    assert make_corpus.linear_w_quant_tolerance(x, w, None, 0)["abs"] <= tol["abs"]
    for v, want in ((0.0123, 0.013), (0.013, 0.013), (7.81e-9, 7.9e-9), (120.0, 120.0), (0.0, 0.0)):
        assert make_corpus.ceil_2_digits(v) == want and make_corpus.ceil_2_digits(v) >= v


def test_quantizers_match_gguf_when_installed():
    """The gguf package's numpy port of ggml (what kernels/cpu/quant's goldens
    come from) is an implementation independent of this reference; it is not
    a dependency of the suite, so the comparison runs where it is installed."""
    try:
        from gguf import GGMLQuantizationType as T
        from gguf import quants
    except ImportError:
        print("  (gguf not installed: comparison skipped)")
        return
    g = np.random.default_rng(15)
    x = np.float32(g.standard_normal((40, 64)) * np.exp2(g.integers(-40, 12, (40, 1))))
    x[0, :32] = 0.0
    x[0, 0] = -0.0  # gguf's max is this -0.0, ggml's C keeps +0.0 (kernels/cpu/quant/README.md)
    x[1, :32] = [k / 2 for k in range(-16, 16)]
    x[2, :32] = [127.0] + [k + 0.5 for k in range(-15, 16)]
    for dt, gt in ((Q8, T.Q8_0), (Q4, T.Q4_0)):
        mine, theirs = ref.quantize(x, dt), quants.quantize(x, gt).reshape(-1)
        if dt == Q4:  # so gguf stores d = +0.0 there, ggml's C (and this reference) -0.0
            assert list(mine[:2]) == [0x00, 0x80] and list(theirs[:2]) == [0x00, 0x00]
            theirs = theirs.copy()
            theirs[1] = 0x80
        assert (mine == theirs).all(), dt
        raw = make_corpus.raw_blocks(g, dt, 4, 64)
        want = quants.dequantize(raw.reshape(4, -1), gt).astype(np.float64)
        got = ref.dequantize(raw, dt, 4, 64)
        assert ((got == want) | (np.isnan(got) & np.isnan(want))).all(), dt


if __name__ == "__main__":
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("PASS", name)
            except Exception as e:  # noqa: BLE001
                failed += 1
                print("FAIL", name, repr(e))
    sys.exit(1 if failed else 0)


def test_moe_route_hand_values():
    # Ties by lower index, -inf never outranks a finite logit, -0 == +0.
    x = np.array([[1, 2, 0, 2, 2], [-math.inf, 0, -math.inf, 0.5, -math.inf], [-0.0, -math.inf, 0.0, 3, 3]],
                 dtype=np.float32)
    ids, w = ref.moe_route(x, 3, ref.MOE_SOFTMAX_TOPK)
    assert ids.tolist() == [[1, 3, 4], [3, 1, 0], [3, 4, 0]]
    s = math.exp(-1) + 3 + math.exp(-2)
    assert np.allclose(w[0], [1 / s] * 3, rtol=1e-15, atol=0)
    assert w[1, 2] == 0.0
    for routing in (ref.MOE_SOFTMAX_TOPK_NORM, ref.MOE_TOPK_SOFTMAX):
        ids2, w2 = ref.moe_route(x, 3, routing)
        assert (ids2 == ids).all()
        assert np.allclose(w2[0], [1 / 3] * 3, rtol=1e-15, atol=0)
        assert abs(w2[1, 0] - 1 / (1 + math.exp(-0.5))) < 1e-15 and w2[1, 2] == 0.0
        assert abs(w2[2].sum() - 1.0) < 1e-15
    # k = 1 with renormalisation: weight 1.
    _, w1 = ref.moe_route(x, 1, ref.MOE_TOPK_SOFTMAX)
    assert (w1 == 1.0).all()
