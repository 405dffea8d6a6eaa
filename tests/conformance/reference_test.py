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
    for arr in (np.float32([[1, 2, 3], [4, 5, 6]]), np.float64([]), np.int32([7]), np.zeros((0, 4), np.float32)):
        data = make_corpus.npy_bytes(arr)
        assert len(data) % 64 == 0 or arr.size > 0
        back = np.load(io.BytesIO(data))
        assert back.dtype == arr.dtype and back.shape == arr.shape and (back == arr).all()
        assert (10 + int.from_bytes(data[8:10], "little")) % 64 == 0


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
