"""Independent float64 reference for every kernelbridge kernel.

Written from the documented semantics (core/include/kernelbridge.h,
docs/kernels.md), never by calling kernelbridge.  Inputs are float32 / int32
numpy arrays exactly as a runner passes them to the library; results are
float64 (int32 for index outputs).

Reproducibility: the corpus must be byte-identical when regenerated on any
machine, so this module only uses operations whose float64 results do not
depend on the CPU or the numpy build:
  * numpy's elementwise +, -, *, / and sqrt (IEEE correctly rounded);
  * math.fsum for every reduction (correctly rounded, order independent);
  * the math module (the platform libm) for exp, log, erf, erfc, tanh, sin,
    cos and pow, one element at a time.  numpy's own SIMD transcendental
    functions are avoided because they differ between CPUs.

The storage formats of kb_dtype (GGML's Q8_0 / Q4_0 block quantization,
binary16, bfloat16) are reproduced bit for bit: the quantizers run GGML's
float32 steps as numpy float32 operations (each one IEEE, correctly
rounded), and the 16-bit roundings are computed from values, not bits.
"""

import math

import numpy as np

# ---------------------------------------------------------------------------
# Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
# SC'11; the Random123 constants).

_MASK32 = 0xFFFFFFFF
_PHILOX_M0 = 0xD2511F53
_PHILOX_M1 = 0xCD9E8D57
_PHILOX_W0 = 0x9E3779B9  # golden ratio
_PHILOX_W1 = 0xBB67AE85  # sqrt(3) - 1


def philox4x32_10(counter, key):
    """Returns the four 32-bit output words for a 4-word counter and 2-word key."""
    c0, c1, c2, c3 = (int(w) & _MASK32 for w in counter)
    k0, k1 = (int(w) & _MASK32 for w in key)
    for rnd in range(10):
        if rnd > 0:
            k0 = (k0 + _PHILOX_W0) & _MASK32
            k1 = (k1 + _PHILOX_W1) & _MASK32
        p0 = _PHILOX_M0 * c0
        p1 = _PHILOX_M1 * c2
        hi0, lo0 = p0 >> 32, p0 & _MASK32
        hi1, lo1 = p1 >> 32, p1 & _MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return (c0, c1, c2, c3)


def row_uniform(seed, row):
    """The uniform number in [0, 1) that the sampling kernels draw for `row`."""
    seed = int(seed)
    row = int(row)
    key = (seed & _MASK32, (seed >> 32) & _MASK32)
    counter = (row & _MASK32, (row >> 32) & _MASK32, 0, 0)
    word = philox4x32_10(counter, key)[0]
    return (word >> 8) * 2.0**-24


# ---------------------------------------------------------------------------
# Helpers.


def _f64(a):
    return np.asarray(a, dtype=np.float64)


def _map(fn, a):
    """Applies a scalar math-module function to every element (float64)."""
    a = _f64(a)
    out = np.empty(a.shape, dtype=np.float64)
    flat_in = a.reshape(-1)
    flat_out = out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = fn(float(flat_in[i]))
    return out


def _exp(t):
    """exp that returns inf instead of raising on overflow."""
    if t > 709.0:
        return math.inf
    return math.exp(t)


def _sigmoid(t):
    if math.isnan(t):
        return math.nan
    if t >= 0:
        return 1.0 / (1.0 + _exp(-t))
    e = _exp(t)
    return e / (1.0 + e)


def _fsum(values):
    return math.fsum(float(v) for v in values)


def ulp32(want):
    """Spacing of float32 numbers at |want| (float64 input), as in docs/conformance.md.

    2^(max(e, -126) - 23) with e the unbiased binary exponent of want (the raw
    float64 exponent field minus 1023); 2^-149 for zero and float32 subnormals.
    """
    w = _f64(want)
    bits = w.view(np.uint64)
    e = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    e = np.maximum(e, -126)
    return np.ldexp(1.0, (e - 23).astype(np.int64))


def ulp_error(got, want, tol_ulp, tol_abs):
    """Per-element error in the conformance metric (see docs/conformance.md)."""
    g = _f64(got).reshape(-1)
    w = _f64(want).reshape(-1)
    floor = tol_abs / tol_ulp if tol_ulp > 0 else 0.0
    denom = np.maximum(ulp32(w), floor)
    err = np.zeros(w.shape, dtype=np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    equal = g == w
    finite = np.isfinite(g) & np.isfinite(w)
    with np.errstate(invalid="ignore", over="ignore"):
        err[finite] = np.abs(g[finite] - w[finite]) / denom[finite]
    bad = ~(both_nan | equal | finite)
    err[bad] = math.inf
    err[equal | both_nan] = 0.0
    return err


# ---------------------------------------------------------------------------
# Elementwise kernels.


def silu(x):
    return _f64(x) * _map(_sigmoid, x)


def gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt 2)) == 0.5 * x * erfc(-x / sqrt 2); erfc keeps
    # full relative accuracy for large negative x where 1 + erf cancels.
    xs = _f64(x)
    return 0.5 * xs * _map(lambda t: math.erfc(-t / math.sqrt(2.0)), xs)


def gelu_tanh(x):
    # 0.5 * x * (1 + tanh(z)) == x * sigmoid(2 z), without cancellation.
    xs = _f64(x)
    c = math.sqrt(2.0 / math.pi)
    z = c * (xs + 0.044715 * xs * xs * xs)
    return xs * _map(lambda t: _sigmoid(2.0 * t), z)


def add(a, b):
    with np.errstate(invalid="ignore"):
        return _f64(a) + _f64(b)


def mul(a, b):
    with np.errstate(invalid="ignore"):
        return _f64(a) * _f64(b)


def scale(alpha, x):
    return float(alpha) * _f64(x)


def add_bias(x, bias):
    return _f64(x) + _f64(bias)[None, :]


# ---------------------------------------------------------------------------
# Row-wise kernels.


def _softmax_row(row, log):
    row = [float(v) for v in row]
    n = len(row)
    if any(math.isnan(v) for v in row):
        return [math.nan] * n
    m = max(row)
    if math.isinf(m):
        # All -inf (m == -inf) or a +inf present: x - m is NaN somewhere.
        return [math.nan] * n
    shifted = [v - m for v in row]
    terms = [_exp(t) for t in shifted]
    s = math.fsum(terms)
    if log:
        ls = math.log(s)
        return [t - ls for t in shifted]
    return [t / s for t in terms]


def softmax(x):
    x = _f64(x)
    return np.array([_softmax_row(r, False) for r in x], dtype=np.float64).reshape(x.shape)


def log_softmax(x):
    x = _f64(x)
    return np.array([_softmax_row(r, True) for r in x], dtype=np.float64).reshape(x.shape)


def rmsnorm(x, weight, eps):
    x = _f64(x)
    w = _f64(weight)
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        ms = math.fsum((x[r] * x[r]).tolist()) / x.shape[1]
        out[r] = x[r] / math.sqrt(ms + float(eps)) * w
    return out


def layernorm(x, weight, bias, eps):
    x = _f64(x)
    cols = x.shape[1]
    w = np.ones(cols) if weight is None else _f64(weight)
    b = np.zeros(cols) if bias is None else _f64(bias)
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        mean = math.fsum(x[r].tolist()) / cols
        d = x[r] - mean
        var = math.fsum((d * d).tolist()) / cols
        out[r] = d / math.sqrt(var + float(eps)) * w + b
    return out


# ---------------------------------------------------------------------------
# GEMM.


def gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """a, b, c are the flat buffers (float32); returns the whole c buffer (float64).

    Elements of c outside the [m, n] window (padding up to ldc) keep their value.
    When beta == 0, c is not read.
    """
    a = _f64(a).reshape(-1)
    b = _f64(b).reshape(-1)
    out = _f64(c).reshape(-1).copy()
    alpha = float(alpha)
    beta = float(beta)

    def a_at(i, p):
        return a[p * lda + i] if trans_a else a[i * lda + p]

    def b_at(p, j):
        return b[j * ldb + p] if trans_b else b[p * ldb + j]

    for i in range(m):
        for j in range(n):
            dot = math.fsum(a_at(i, p) * b_at(p, j) for p in range(k))
            v = alpha * dot
            if beta != 0.0:
                v = v + beta * out[i * ldc + j]
            out[i * ldc + j] = v
    return out


def gemm_batched(trans_a, trans_b, batch, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                 stride_c):
    """Item i is gemm on the buffers offset by i * stride (elements); a, b, c
    are the flat buffers; returns the whole c buffer (float64), elements
    outside every item's [m, n] window keeping their value."""
    a = _f64(a).reshape(-1)
    b = _f64(b).reshape(-1)
    out = _f64(c).reshape(-1).copy()
    for i in range(batch):
        ai = a[i * stride_a:] if a.size else a
        bi = b[i * stride_b:] if b.size else b
        ci = out[i * stride_c:]
        ci[:] = gemm(trans_a, trans_b, m, n, k, alpha, ai, lda, bi, ldb, beta, ci, ldc)
    return out


# Activations of kb_linear, by kb_activation value (header order).
ACTIVATIONS = {
    0: lambda x: _f64(x),
    1: lambda x: _map(lambda t: t if (t > 0 or math.isnan(t)) else 0.0, x),
    2: lambda x: gelu(x),
    3: lambda x: gelu_tanh(x),
    4: lambda x: silu(x),
}


def linear(x, weight, bias, act):
    """act(x W^T + b): x [rows, in], weight [out, in] (PyTorch's layout),
    bias [out] or None; exact dot products (fsum), then the activation."""
    x, w = _f64(x), _f64(weight)
    rows, out_f = x.shape[0], w.shape[0]
    y = np.zeros((rows, out_f), dtype=np.float64)
    for r in range(rows):
        for o in range(out_f):
            y[r, o] = math.fsum((x[r] * w[o]).tolist())
    if bias is not None:
        y = y + _f64(bias)[None, :]
    return ACTIVATIONS[int(act)](y)


# ---------------------------------------------------------------------------
# Decoder kernels.


def glu(gate, up, act):
    """kb_glu: act(gate) * up elementwise (gate and up [rows, cols], already
    cut out of their strided buffers), act a kb_activation value."""
    return ACTIVATIONS[int(act)](gate) * _f64(up)


def add_rmsnorm(x, residual, weight, eps):
    """kb_add_rmsnorm: (new residual, y).  The residual update is one IEEE
    float32 addition (correctly rounded, so numpy float32 is exact here);
    y is rmsnorm of that float32 row in float64."""
    new_res = (np.asarray(residual, dtype=np.float32) + np.asarray(x, dtype=np.float32)).astype(np.float32)
    return _f64(new_res), rmsnorm(new_res, weight, eps)


# ---------------------------------------------------------------------------
# Transformer building blocks.


def embedding(ids, table):
    return _f64(table)[np.asarray(ids, dtype=np.int64)]


def rope(x, positions, theta):
    x = _f64(x)
    seq, heads, head_dim = x.shape
    half = head_dim // 2
    out = np.empty_like(x)
    for s in range(seq):
        pos = float(positions[s])
        for i in range(half):
            angle = pos * math.pow(float(theta), -2.0 * i / head_dim)
            cs, sn = math.cos(angle), math.sin(angle)
            x1 = x[s, :, i]
            x2 = x[s, :, i + half]
            out[s, :, i] = x1 * cs - x2 * sn
            out[s, :, i + half] = x2 * cs + x1 * sn
    return out


# kb_rope_scaling values.
ROPE_SCALING_NONE, ROPE_SCALING_LINEAR, ROPE_SCALING_LLAMA3 = 0, 1, 2


def rope_inv_freq(rotary_dim, theta, scaling, factor, low_freq_factor, high_freq_factor, original_max_position):
    """inv_freq[i], i < rotary_dim / 2, in float64 (docs/kernels.md "rope_ex";
    for llama3 transformers' _compute_llama3_parameters, band by band)."""
    theta, factor = float(theta), float(factor)
    out = []
    for i in range(rotary_dim // 2):
        inv = 1.0 / theta ** (2.0 * i / rotary_dim)
        if scaling == ROPE_SCALING_LINEAR:
            inv = inv / factor
        elif scaling == ROPE_SCALING_LLAMA3:
            lo, hi, old = float(low_freq_factor), float(high_freq_factor), float(original_max_position)
            wavelen = 2.0 * math.pi / inv
            if wavelen > old / lo:          # low frequencies: interpolated by factor
                inv = inv / factor
            elif wavelen >= old / hi:       # the band between: smooth mix
                smooth = (old / wavelen - lo) / (hi - lo)
                inv = (1.0 - smooth) * inv / factor + smooth * inv
        out.append(inv)
    return out


def rope_ex(q, k, positions, rotary_dim, adjacent, theta, scaling, factor=1.0, low_freq_factor=1.0,
            high_freq_factor=4.0, original_max_position=8192):
    """q [batch, seq, q_heads, head_dim] and k (or None) rotated: token (b, s)
    by positions[b, s]; pairs (i, i + rotary_dim/2) or, adjacent, (2i, 2i+1);
    features past rotary_dim unchanged."""
    inv = rope_inv_freq(rotary_dim, theta, scaling, factor, low_freq_factor, high_freq_factor,
                        original_max_position)
    half = rotary_dim // 2
    iu = [2 * i if adjacent else i for i in range(half)]
    iv = [2 * i + 1 if adjacent else i + half for i in range(half)]

    def one(x):
        x = _f64(x)
        out = x.copy()
        batch, seq = x.shape[0], x.shape[1]
        for b in range(batch):
            for s in range(seq):
                pos = float(positions[b, s])
                for i in range(half):
                    angle = pos * inv[i]
                    cs, sn = math.cos(angle), math.sin(angle)
                    u, v = x[b, s, :, iu[i]], x[b, s, :, iv[i]]
                    out[b, s, :, iu[i]] = u * cs - v * sn
                    out[b, s, :, iv[i]] = v * cs + u * sn
        return out

    return one(q), (None if k is None else one(k))


def attention(q, k, v, causal, scale_):
    q, k, v = _f64(q), _f64(k), _f64(v)
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_kv = k.shape[1], k.shape[2]
    group = heads // kv_heads
    sc = float(scale_) if float(scale_) != 0.0 else 1.0 / math.sqrt(head_dim)
    out = np.zeros(q.shape, dtype=np.float64)
    for bi in range(batch):
        for h in range(heads):
            kh = h // group
            for i in range(seq_q):
                limit = min(i + 1, seq_kv) if causal else seq_kv
                scores = [math.fsum((q[bi, h, i] * k[bi, kh, j]).tolist()) * sc for j in range(limit)]
                probs = _softmax_row(scores, False)
                for d in range(head_dim):
                    out[bi, h, i, d] = math.fsum(probs[j] * v[bi, kh, j, d] for j in range(limit))
    return out


def attention_ex(q, k, v, kv_lengths, mask, causal, bottom_right, scale_, seq_major):
    """kb_attention_ex from the header's definition.  q, k, v in the
    layout (seq_major: [batch, seq, heads, head_dim]); mask [Bm, Hm, Qm,
    seq_kv] broadcasting over its axes of size 1, or None; kv_lengths [batch]
    or None.  Keys taking part: j < L_b and, with causal, j <= i (top-left)
    or j <= i + L_b - seq_q (bottom-right); -inf mask entries remove keys; a
    row without keys is zeros.  Returns out in q's layout."""
    q, k, v = _f64(q), _f64(k), _f64(v)
    if seq_major:  # to [batch, heads, seq, head_dim] for the loops (a view)
        q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_kv = k.shape[1], k.shape[2]
    group = heads // kv_heads
    sc = float(scale_) if float(scale_) != 0.0 else 1.0 / math.sqrt(head_dim)
    m = None if mask is None else _f64(mask)
    out = np.zeros(q.shape, dtype=np.float64)
    for bi in range(batch):
        keys = seq_kv if kv_lengths is None else int(kv_lengths[bi])
        for h in range(heads):
            kh = h // group
            for i in range(seq_q):
                limit = keys
                if causal:
                    limit = min(keys, max(0, (i + 1 + keys - seq_q) if bottom_right else i + 1))
                scores, used = [], []
                for j in range(limit):
                    s = math.fsum((q[bi, h, i] * k[bi, kh, j]).tolist()) * sc
                    if m is not None:
                        s += m[bi % m.shape[0], h % m.shape[1], i % m.shape[2], j]
                    if s == -math.inf:
                        continue  # removed by the mask
                    scores.append(s)
                    used.append(j)
                if not used:
                    continue  # no key left: zeros
                probs = _softmax_row(scores, False)
                for d in range(head_dim):
                    out[bi, h, i, d] = math.fsum(probs[t] * v[bi, kh, j, d] for t, j in enumerate(used))
    return out.transpose(0, 2, 1, 3) if seq_major else out


# ---------------------------------------------------------------------------
# Training.


def _logsumexp(row):
    row = [float(v) for v in row]
    m = max(row)
    return m + math.log(math.fsum(_exp(v - m) for v in row))


def cross_entropy(logits, targets, ignore_index):
    logits = _f64(logits)
    rows = logits.shape[0]
    losses = np.zeros(rows, dtype=np.float64)
    kept = []
    for r in range(rows):
        t = int(targets[r])
        if t == ignore_index:
            continue
        losses[r] = _logsumexp(logits[r]) - logits[r, t]
        kept.append(losses[r])
    mean = math.fsum(kept) / len(kept) if kept else math.nan
    return losses, np.array([mean], dtype=np.float64)


def cross_entropy_backward(logits, targets, ignore_index, dloss):
    logits = _f64(logits)
    rows, classes = logits.shape
    out = np.zeros(logits.shape, dtype=np.float64)
    count = sum(1 for r in range(rows) if int(targets[r]) != ignore_index)
    for r in range(rows):
        t = int(targets[r])
        if t == ignore_index:
            continue
        p = np.array(_softmax_row(logits[r], False))
        p[t] -= 1.0
        out[r] = float(dloss) * p / count
    return out


def adamw_step(params, grads, m, v, lr, beta1, beta2, eps, weight_decay, step):
    p, g, m, v = _f64(params), _f64(grads), _f64(m), _f64(v)
    lr, beta1, beta2, eps, wd = (float(t) for t in (lr, beta1, beta2, eps, weight_decay))
    p = p * (1.0 - lr * wd)
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    bc1 = 1.0 - beta1**step
    bc2_sqrt = math.sqrt(1.0 - beta2**step)
    p = p - (lr / bc1) * m / (np.sqrt(v) / bc2_sqrt + eps)
    return p, m, v


# ---------------------------------------------------------------------------
# Decoding.


def argmax(x):
    x = np.asarray(x, dtype=np.float32)
    out = np.zeros(x.shape[0], dtype=np.int32)
    for r in range(x.shape[0]):
        best = 0
        for c in range(1, x.shape[1]):
            cur, top = float(x[r, c]), float(x[r, best])
            if math.isnan(top):
                break
            if math.isnan(cur) or cur > top:
                best = c
        out[r] = best
    return out


def _order_desc(row):
    """Indices by decreasing value, ties by lower index."""
    return sorted(range(len(row)), key=lambda i: (-float(row[i]), i))


def _draw(values, candidates, temperature, u):
    """Token chosen from `candidates` (in order) with weights exp((l - max) / T).

    Returns (token, margin): margin is the relative distance between u * total
    and the nearest running-sum boundary, used by the corpus generator to keep
    only draws that no rounding difference can change.
    """
    m = max(float(values[i]) for i in candidates)
    t = float(temperature)
    weights = [math.exp((float(values[i]) - m) / t) for i in candidates]
    total = 0.0
    for w in weights:
        total += w
    threshold = u * total
    running = 0.0
    chosen = None
    margin = math.inf
    for idx, w in zip(candidates, weights):
        running += w
        margin = min(margin, abs(running - threshold) / total)
        if chosen is None and running > threshold:
            chosen = idx
    if chosen is None:  # unreachable for u < 1
        chosen = candidates[-1]
    return chosen, margin


def _nucleus(values, order, temperature, p):
    """Shortest prefix of `order` whose running weight sum reaches p * (sum of all).

    Following docs/kernels.md: S[L-1] >= p * S[cols-1] with sequential double
    sums and no division.  Returns (prefix, margin) where margin is the
    smallest relative distance |S[i] - p * S[-1]| / S[-1] seen up to the cut.
    """
    m = float(values[order[0]])
    t = float(temperature)
    weights = [math.exp((float(values[i]) - m) / t) for i in order]
    sums = []
    running = 0.0
    for w in weights:
        running += w
        sums.append(running)
    target = float(p) * sums[-1]
    size = len(order)
    margin = math.inf
    for j, s in enumerate(sums):
        margin = min(margin, abs(s - target) / sums[-1])
        if s >= target:
            size = j + 1
            break
    return order[:size], margin


def sample(logits, temperature, seed, with_margin=False):
    logits = np.asarray(logits, dtype=np.float32)
    out, margins = [], []
    for r in range(logits.shape[0]):
        tok, mg = _draw(logits[r], list(range(logits.shape[1])), temperature, row_uniform(seed, r))
        out.append(tok)
        margins.append(mg)
    out = np.array(out, dtype=np.int32)
    return (out, min(margins, default=math.inf)) if with_margin else out


def topk_sample(logits, k, temperature, seed, with_margin=False):
    logits = np.asarray(logits, dtype=np.float32)
    out, margins = [], []
    for r in range(logits.shape[0]):
        cand = _order_desc(logits[r])[:k]
        tok, mg = _draw(logits[r], cand, temperature, row_uniform(seed, r))
        out.append(tok)
        margins.append(mg)
    out = np.array(out, dtype=np.int32)
    return (out, min(margins, default=math.inf)) if with_margin else out


def topp_sample(logits, p, temperature, seed, with_margin=False):
    logits = np.asarray(logits, dtype=np.float32)
    out, margins = [], []
    for r in range(logits.shape[0]):
        cand, mg1 = _nucleus(logits[r], _order_desc(logits[r]), temperature, p)
        tok, mg2 = _draw(logits[r], cand, temperature, row_uniform(seed, r))
        out.append(tok)
        # With p == 1 the cut is where the sum reaches its own final value,
        # an exact comparison that no rounding difference can move.
        margins.append(min(mg1 if float(p) < 1.0 else math.inf, mg2))
    out = np.array(out, dtype=np.int32)
    return (out, min(margins, default=math.inf)) if with_margin else out


# ---------------------------------------------------------------------------
# Storage formats (kb_dtype; the values are GGML's type numbers) and the
# kernels that read or write them: kb_quantize, kb_dequantize, kb_linear_w,
# kb_embedding_w.  Byte layouts: core/include/kernelbridge.h (kb_dtype) and
# kernels/cpu/quant/README.md.

DTYPE_F32 = 0
DTYPE_F16 = 1
DTYPE_Q4_0 = 2
DTYPE_Q8_0 = 8
DTYPE_BF16 = 30
QK = 32  # elements per block of Q8_0 and Q4_0
BLOCK_FORMATS = (DTYPE_Q8_0, DTYPE_Q4_0)
_BLOCK_BYTES = {DTYPE_Q8_0: 34, DTYPE_Q4_0: 18}
_ELEMENT_BYTES = {DTYPE_F32: 4, DTYPE_F16: 2, DTYPE_BF16: 2}


def dtype_bytes(dtype, rows, cols):
    """Bytes of a [rows, cols] tensor stored as dtype (kb_dtype_bytes)."""
    if dtype in _BLOCK_BYTES:
        if cols % QK:
            raise ValueError("cols = %d is not a multiple of %d" % (cols, QK))
        return rows * (cols // QK) * _BLOCK_BYTES[dtype]
    return rows * cols * _ELEMENT_BYTES[dtype]


# The 16-bit formats: (fraction bits, exponent of the smallest normal,
# exponent of the largest finite value, exponent bias).
_HALF = {DTYPE_F16: (10, -14, 15, 15), DTYPE_BF16: (7, -126, 127, 127)}


def _round_half(v, dtype):
    """Bits of the float v rounded to binary16 / bfloat16, to nearest with
    ties to even, computed from the value: v is split into a multiple of the
    format's quantum at v's binade (the subnormal quantum below the smallest
    normal) plus a remainder, all exact in float64.  Values that round to
    2^(emax + 1) or beyond overflow to infinity, as IEEE rounding does.  NaN
    is refused: the header promises only that NaN stays NaN, not a payload."""
    frac, emin, emax, bias = _HALF[dtype]
    if math.isnan(v):
        raise ValueError("NaN has no documented 16-bit payload")
    sign = 0x8000 if math.copysign(1.0, v) < 0 else 0
    inf = sign | (((1 << (15 - frac)) - 1) << frac)
    a = abs(v)
    if math.isinf(a):
        return inf
    if a == 0.0:
        return sign
    e = max(math.frexp(a)[1] - 1, emin)
    quantum = math.ldexp(1.0, e - frac)
    k = a / quantum
    n = math.floor(k)
    rest = k - n
    if rest > 0.5 or (rest == 0.5 and n % 2 == 1):
        n += 1
    if n * quantum >= math.ldexp(1.0, emax + 1):
        return inf
    if n == 1 << (frac + 1):  # rounded up into the next binade
        n >>= 1
        e += 1
    if n < 1 << frac:  # subnormal (e == emin)
        return sign | n
    return sign | ((e + bias) << frac) | (n - (1 << frac))


def _widen_half(bits, dtype):
    """The value of 16-bit pattern `bits` (exact in float64)."""
    frac, emin, _, bias = _HALF[dtype]
    top = (1 << (15 - frac)) - 1
    sign = -1.0 if bits & 0x8000 else 1.0
    e = (bits >> frac) & top
    m = bits & ((1 << frac) - 1)
    if e == top:
        return math.nan if m else sign * math.inf
    if e == 0:
        return sign * math.ldexp(m, emin - frac)
    return sign * math.ldexp(m + (1 << frac), e - bias - frac)


def to_half_bits(x, dtype):
    """float32 array -> uint16 bit patterns of DTYPE_F16 or DTYPE_BF16."""
    x = np.asarray(x, dtype=np.float32)
    return np.array([_round_half(float(v), dtype) for v in x.reshape(-1)], dtype=np.uint16).reshape(x.shape)


def from_half_bits(bits, dtype):
    """uint16 bit patterns -> their values (float64)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return np.array([_widen_half(int(b), dtype) for b in bits.reshape(-1)], dtype=np.float64).reshape(bits.shape)


def _roundf(t):
    """C's roundf of a finite float: to nearest, halves away from zero (t - trunc(t) is exact)."""
    n = math.trunc(t)
    if abs(t - n) >= 0.5:
        n += 1 if t > 0 else -1
    return n


def _scale_bytes(d):
    """The block's float32 scale d as little-endian binary16 (ties to even)."""
    bits = _round_half(float(d), DTYPE_F16)
    if bits & 0x7C00 == 0x7C00:
        raise ValueError("the block's scale %r overflows binary16" % float(d))
    return bytes((bits & 0xFF, bits >> 8))


def _check_finite(block):
    if not np.isfinite(block).all():
        raise ValueError("a block holds NaN or infinity (kb_quantize rejects it)")


def _quantize_block_q8_0(b):
    """ggml's quantize_row_q8_0_ref on one block, in float32 operations:
    d = amax / 127, id = 1 / d (0 when d == 0), q = roundf(x * id).  When
    1/d overflows, x * id is +-inf or NaN, whose conversion to an integer is
    undefined in C; ggml on x86-64 stores 0 there, as kernelbridge does
    everywhere (kernels/cpu/quant/README.md); the scale then rounds to
    binary16 zero, so the block means zeros either way."""
    _check_finite(b)
    amax = np.max(np.abs(b))
    d = amax / np.float32(127.0)
    with np.errstate(over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
        t = b * inv
    qs = [(_roundf(float(v)) if math.isfinite(v) else 0) for v in t]
    assert all(-127 <= q <= 127 for q in qs)
    return _scale_bytes(d) + bytes(q & 0xFF for q in qs)


def _quantize_block_q4_0(b):
    """ggml's quantize_row_q4_0_ref on one block, in float32 operations: max
    is the first element of largest magnitude, found from +0.0 with a strict
    comparison (an all-zero block keeps +0.0, so d = -0.0); d = max / -8,
    id = 1 / d (0 when d == 0), q = min(15, trunc(x * id + 8.5)) with the
    product and the sum rounded separately (no fma); a non-finite x * id
    stores 0, as for Q8_0."""
    _check_finite(b)
    amax, mx = 0.0, np.float32(0.0)
    for v in b:
        if amax < abs(float(v)):
            amax, mx = abs(float(v)), v
    d = mx / np.float32(-8.0)
    with np.errstate(over="ignore", invalid="ignore"):
        inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
        u = b * inv + np.float32(8.5)
    codes = [(min(15, math.trunc(float(v))) if math.isfinite(v) else 0) for v in u]
    assert all(0 <= q <= 15 for q in codes)
    half = QK // 2
    return _scale_bytes(d) + bytes(codes[j] | (codes[j + half] << 4) for j in range(half))


def quantize(x, dtype):
    """kb_quantize: the [rows, cols] float32 tensor x in dtype's bytes (uint8, 1-D)."""
    x = np.asarray(x, dtype=np.float32)
    rows, cols = x.shape
    if dtype == DTYPE_F32:
        out = x.astype("<f4").tobytes()
    elif dtype in _HALF:
        out = to_half_bits(x, dtype).astype("<u2").tobytes()
    else:
        dtype_bytes(dtype, rows, cols)  # checks cols
        one = _quantize_block_q8_0 if dtype == DTYPE_Q8_0 else _quantize_block_q4_0
        out = b"".join(one(b) for b in x.reshape(-1, QK))
    assert len(out) == dtype_bytes(dtype, rows, cols)
    return np.frombuffer(out, dtype=np.uint8).copy()


def dequantize(data, dtype, rows, cols):
    """kb_dequantize: the values (float64, exact) of a [rows, cols] tensor
    stored as dtype in the bytes `data`.  Block formats: element = d * q with
    d the widened binary16 scale (IEEE: an infinite scale times 0 is NaN)."""
    raw = np.asarray(data, dtype=np.uint8).tobytes()
    if len(raw) != dtype_bytes(dtype, rows, cols):
        raise ValueError("%d bytes for a [%d, %d] tensor of type %d" % (len(raw), rows, cols, dtype))
    if dtype == DTYPE_F32:
        return np.frombuffer(raw, dtype="<f4").astype(np.float64).reshape(rows, cols)
    if dtype in _HALF:
        return from_half_bits(np.frombuffer(raw, dtype="<u2"), dtype).reshape(rows, cols)
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, _BLOCK_BYTES[dtype])
    d = from_half_bits(blocks[:, 0].astype(np.uint16) | (blocks[:, 1].astype(np.uint16) << 8), DTYPE_F16)
    if dtype == DTYPE_Q8_0:
        q = blocks[:, 2:].view(np.int8).astype(np.float64)
    else:
        qs = blocks[:, 2:]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64) - 8.0
    with np.errstate(invalid="ignore"):
        return (d[:, None] * q).reshape(rows, cols)


def linear_w(x, weight_type, weight, out_features, bias, act):
    """kb_linear_w: act(x W^T + b) with W the dequantized [out_features,
    in_features] weight, exact dot products (as `linear`).  For the block
    formats the header makes every output of a row NaN when the row of x
    holds a NaN or an infinity (x is quantized per block to int8)."""
    x = np.asarray(x, dtype=np.float32)
    w = dequantize(weight, weight_type, out_features, x.shape[1])
    if weight_type not in BLOCK_FORMATS:
        return linear(x, w, bias, act)
    bad = ~np.isfinite(x).all(axis=1)
    y = linear(np.where(bad[:, None], np.float32(0.0), x), w, bias, act)
    y[bad, :] = math.nan
    return y


def embedding_w(ids, table_type, table, vocab, dim):
    """kb_embedding_w: rows ids of the dequantized [vocab, dim] table."""
    return dequantize(table, table_type, vocab, dim)[np.asarray(ids, dtype=np.int64)]


# ---------------------------------------------------------------------------
# Mixture-of-experts routing (kb_moe_routing values).

MOE_SOFTMAX_TOPK = 0
MOE_SOFTMAX_TOPK_NORM = 1
MOE_TOPK_SOFTMAX = 2


def linear_glu_w(x, weight_type, gate, up, out_features, act):
    """kb_linear_glu_w: act(x Wg^T) * (x Wu^T) with Wg, Wu the dequantized
    [out_features, in_features] weights, exact dot products."""
    x = np.asarray(x, dtype=np.float32)
    wg = dequantize(gate, weight_type, out_features, x.shape[1])
    wu = dequantize(up, weight_type, out_features, x.shape[1])
    return glu(linear(x, wg, None, 0), linear(x, wu, None, 0), act)


def moe_experts(x, ids, weights, weight_type, gate, up, down, hidden, ffn, experts, act):
    """kb_moe_experts: y[t] = sum_j weights[t, j] * Wd_e (act(Wg_e x[t]) *
    (Wu_e x[t])), e = ids[t, j], the experts' dequantized weights stacked
    [experts, ffn, hidden] (gate, up) and [experts, hidden, ffn] (down); the
    whole evaluation in float64 with exact dot products."""
    x = np.asarray(x, dtype=np.float32)
    wg = dequantize(gate, weight_type, experts * ffn, hidden).reshape(experts, ffn, hidden)
    wu = dequantize(up, weight_type, experts * ffn, hidden).reshape(experts, ffn, hidden)
    wd = dequantize(down, weight_type, experts * hidden, ffn).reshape(experts, hidden, ffn)
    y = np.zeros((x.shape[0], hidden))
    for t in range(x.shape[0]):
        for e, w in zip(np.asarray(ids)[t], np.asarray(weights, dtype=np.float64)[t]):
            h = glu(linear(x[t:t + 1], wg[e], None, 0), linear(x[t:t + 1], wu[e], None, 0), act)[0]
            y[t] += w * np.array([math.fsum((h * wd[e][c]).tolist()) for c in range(hidden)])
    return y


def moe_route(logits, top_k, routing):
    """kb_moe_route: per row the top_k experts by decreasing logit (ties by
    lower index) and their weights: the softmax probability over all experts
    (SOFTMAX_TOPK), or exp(x - max) normalised over the k selected experts
    (SOFTMAX_TOPK_NORM and TOPK_SOFTMAX, the same real number: the full sum
    cancels).  Rows holding NaN or +inf, or all -inf, are refused by the
    kernel and have no reference."""
    x = np.asarray(logits, dtype=np.float32)
    tokens = x.shape[0]
    ids = np.zeros((tokens, top_k), dtype=np.int32)
    weights = np.zeros((tokens, top_k), dtype=np.float64)
    for t in range(tokens):
        row = [float(v) for v in x[t]]
        assert not any(math.isnan(v) or v == math.inf for v in row) and max(row) > -math.inf
        order = _order_desc(row)[:top_k]
        m = row[order[0]]
        terms = [_exp(v - m) for v in row]
        denom = math.fsum(terms) if routing == MOE_SOFTMAX_TOPK else math.fsum(terms[i] for i in order)
        for j, i in enumerate(order):
            ids[t, j] = i
            weights[t, j] = terms[i] / denom
    return ids, weights


# ---------------------------------------------------------------------------
# The decoder family.


def kv_cache_append(k_new, v_new, positions, k_cache, v_cache, seq_major):
    """kb_kv_cache_append: copies of the caches with token t of sequence b
    stored at position positions[b] + t ([b, h, p] or, seq_major, [b, p, h])."""
    k, v = _f64(k_cache).copy(), _f64(v_cache).copy()
    batch, seq_new, kv_heads, _ = np.shape(k_new)
    for b in range(batch):
        for t in range(seq_new):
            p = int(positions[b]) + t
            for h in range(kv_heads):
                at = (b, p, h) if seq_major else (b, h, p)
                k[at] = k_new[b, t, h]
                v[at] = v_new[b, t, h]
    return k, v
