#!/usr/bin/env python3
"""kernelbridge's kernels through the Python binding beside numpy's
equivalent expression, and beside PyTorch when `import torch` works (an
optional peer, never required).  Part of benchmarks/cpu (benchmarks/README.md,
"CPU"); run by benchmarks/cpu/run.sh.

  PYTHONPATH=bindings/python python3 benchmarks/cpu/bench_py.py [--quick] [--smoke] [--threads N]

Needs an importable kernelbridge (an in-place build: cd bindings/python &&
python3 setup.py build_ext --inplace).  Every row times kernelbridge and its
peers in the same interleaved rounds; × columns are peer time ÷ kernelbridge
time (> 1: kernelbridge faster).  Each kernelbridge result is also checked
against numpy's (and torch's) once per row, so a wrong baseline or a wrong
argument shows up as a failure (exit status 1), not as a figure.
"""

import argparse
import math
import os
import platform
import statistics
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, shorter rounds")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one call per side: checks only")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="threads for kernelbridge, numpy's BLAS and torch (default: all CPUs)")
    ap.add_argument("--rounds", type=int, default=0, help="timing rounds (default 5; --quick 3)")
    ap.add_argument("--min-round", type=float, default=0.0, help="seconds per side and round (default 0.05; --quick 0.005)")
    ap.add_argument("--only", choices=["gemm", "attention", "memory"], help="one section only")
    args = ap.parse_args()
    if args.smoke:
        args.quick = True
    args.rounds = args.rounds or (1 if args.smoke else 3 if args.quick else 5)
    args.min_round = args.min_round or (0.005 if args.quick else 0.05)
    return args


ARGS = parse_args()
# The BLAS thread count is read when numpy's OpenBLAS is loaded: set it first.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(ARGS.threads)

import numpy as np  # noqa: E402

import kernelbridge as kb  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402

    torch.set_num_threads(ARGS.threads)
    TORCH_NOTE = f"PyTorch {torch.__version__}, torch.get_num_threads() = {torch.get_num_threads()}"
except Exception as exc:  # any failure to import means: no peer
    torch = None
    F = None
    TORCH_NOTE = f"PyTorch not importable ({type(exc).__name__}: {exc})"

FAILURES = []


def failed(msg):
    FAILURES.append(msg)
    print(f"FAILED: {msg}", file=sys.stderr)


# ---------------------------------------------------------------------------
# Timing: interleaved rounds, as the C benchmark.


def measure(sides):
    """sides: list of (label, fn) or None.  Returns median seconds per call per
    side (None for a missing or failed side)."""
    live = [(i, s) for i, s in enumerate(sides) if s is not None]
    calls = {}
    slowest = 0.0
    for i, (label, fn) in list(live):
        try:
            t0 = time.perf_counter()
            fn()  # warm-up
            warm = time.perf_counter() - t0
            slowest = max(slowest, warm)
            n = 1
            # A call that lasts a round already needs no calibration.
            if not ARGS.smoke and warm < ARGS.min_round:
                while True:
                    t0 = time.perf_counter()
                    for _ in range(n):
                        fn()
                    dt = time.perf_counter() - t0
                    if dt >= ARGS.min_round / 4 or n >= 1 << 22:
                        n = max(1, int(ARGS.min_round / (dt / n)))
                        break
                    n *= 2
            calls[i] = n
        except Exception as exc:
            failed(f"{label}: {type(exc).__name__}: {exc}")
            live.remove((i, (label, fn)))
    per = {i: [] for i, _ in live}
    # Calls of a quarter second and more: three rounds are enough for a median.
    rounds = min(ARGS.rounds, 3) if slowest >= 5 * ARGS.min_round else ARGS.rounds
    for r in range(rounds):
        order = live if r % 2 == 0 else live[::-1]
        for i, (label, fn) in order:
            if i not in per:
                continue
            try:
                n = calls[i]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                per[i].append((time.perf_counter() - t0) / n)
            except Exception as exc:
                failed(f"{label}: {type(exc).__name__}: {exc}")
                del per[i]
    out = [None] * len(sides)
    for i, ts in per.items():
        out[i] = statistics.median(ts)
    return out


def fmt(v, digits=1, suffix=""):
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.{digits}f}{suffix}"


def ratio(peer, mine):
    return fmt(peer / mine, 2) if peer and mine else "n/a"


def close(label, got, want, rtol, atol):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failed(f"{label}: shape {got.shape}, expected {want.shape}")
        return
    err = np.abs(got - want) - (atol + rtol * np.abs(want))
    if not np.all(err <= 0):
        i = int(np.nanargmax(np.where(np.isnan(err), np.inf, err)))
        failed(f"{label}: differs at flat index {i}: {got.flat[i]!r} vs {want.flat[i]!r}")


def to_np(t):
    """A torch result as a float64 numpy array (bf16 / f16 widened)."""
    return t.detach().to(torch.float64).cpu().numpy()


RNG = np.random.default_rng(1234)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (finite inputs)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def torch_of(a):
    """A torch view of a numpy array (bf16 for uint16 bit patterns)."""
    if a.dtype == np.uint16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


# ---------------------------------------------------------------------------


def header(ctx):
    print("## kernelbridge CPU benchmark, Python binding"
          + (" (smoke: tiny sizes, figures meaningless)" if ARGS.smoke else " (quick)" if ARGS.quick else ""))
    print()
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception:
        blas = "unknown"
    print("| | |\n|---|---|")
    print(f"| Python | {platform.python_version()} |")
    print(f"| kernelbridge | {kb.__version__}, ISA level `{kb.cpu_isa()}`, Context(threads={ctx.threads}) |")
    print(f"| numpy | {np.__version__} with {blas}; OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = {ARGS.threads} "
          "(set before numpy is imported); elementwise ufuncs run on one thread |")
    print(f"| PyTorch | {TORCH_NOTE} |")
    print(f"| method | median of {ARGS.rounds} interleaved rounds (3 when a call takes >= {ARGS.min_round * 5e3:.0f} ms), "
          f"each side >= {ARGS.min_round * 1e3:.0f} ms per round, after a warm-up call; "
          "× = peer time ÷ kernelbridge time (> 1: kernelbridge faster) |")
    print()


# ---------------------------------------------------------------------------


def bench_gemm(ctx):
    if ARGS.smoke:
        shapes = [(5, 7, 9, False), (5, 7, 9, True), (1, 33, 17, False), (1, 33, 17, True), (64, 64, 64, False)]
    else:
        shapes = [(s, s, s, False) for s in (64, 128, 256, 512)]
        if not ARGS.quick:
            shapes += [(1024, 1024, 1024, False), (2048, 2048, 2048, False)]
        shapes += [(512, 384, 1536, False), (512, 384, 1536, True), (1, 4096, 4096, False), (1, 4096, 4096, True)]
        if not ARGS.quick:
            shapes += [(64, 4096, 11008, True)]
    print("### gemm: kernelbridge.gemm vs numpy matmul"
          + (" and torch.matmul" if torch is not None else ""))
    print()
    print("`kb.gemm(a, b, c, trans_b=...)` into a preallocated c; numpy `np.matmul(a, b, out=c)` "
          "(`b.T` for a [n, k] weight: a view, BLAS transposes); torch the same on `torch.from_numpy` views.  "
          "m = 1 rows also give GB/s of the weight matrix.")
    print()
    print("| m×n×k | B stored | kb ms | kb GFLOP/s | numpy GFLOP/s | × numpy | torch GFLOP/s | × torch | kb GB/s of B (m = 1) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m, n, k, tb in shapes:
        a = rand(m, k)
        b = rand(n, k) if tb else rand(k, n)
        bop = b.T if tb else b
        c_kb = np.zeros((m, n), np.float32)
        c_np = np.zeros((m, n), np.float32)
        sides = [("kb.gemm", lambda: kb.gemm(a, b, c_kb, trans_b=tb, ctx=ctx)),
                 ("numpy matmul", lambda: np.matmul(a, bop, out=c_np))]
        if torch is not None:
            ta, tbop = torch.from_numpy(a), torch_of(b).T if tb else torch_of(b)
            c_t = torch.zeros((m, n), dtype=torch.float32)
            sides.append(("torch.matmul", lambda: torch.matmul(ta, tbop, out=c_t)))
        else:
            sides.append(None)
        t = measure(sides)
        tol = 1e-5 * math.sqrt(k) * (1 + float(np.abs(c_np).max()))
        close(f"gemm {m}x{n}x{k} trans_b={tb}: kb vs numpy", c_kb, c_np, 0, tol)
        if torch is not None:
            close(f"gemm {m}x{n}x{k} trans_b={tb}: kb vs torch", c_kb, c_t.numpy(), 0, tol)
        flop = 2.0 * m * n * k
        gf = [flop / x * 1e-9 if x else None for x in t]
        gbs = fmt(n * k * 4 / t[0] * 1e-9) if m == 1 and t[0] else "–"
        print(f"| {m}×{n}×{k} | {'[n, k] (trans_b)' if tb else '[k, n]'} | {fmt(t[0] * 1e3 if t[0] else None, 3)} | "
              f"{fmt(gf[0])} | {fmt(gf[1])} | {ratio(t[1], t[0])} | {fmt(gf[2])} | {ratio(t[2], t[0])} | {gbs} |",
              flush=True)
    print()


def bench_attention(ctx):
    if ARGS.smoke:
        cases = [("prefill", 3, 9, 9, 8, False), ("prefill, causal", 3, 9, 9, 8, True), ("decode", 3, 1, 33, 8, False)]
    else:
        cases = [("prefill", 12, 512, 512, 64, False), ("prefill, causal", 12, 512, 512, 64, True),
                 ("decode", 12, 1, 4096, 64, False)]
    print("### attention: kernelbridge.attention vs a numpy composition"
          + (" and torch scaled_dot_product_attention" if torch is not None else ""))
    print()
    print("batch 1, kv_heads = heads.  numpy: `s = q @ kᵀ · scale` (+ a -inf mask when causal), "
          "`exp(s - max)`, divide by the row sum, `@ v`.")
    print()
    print("| case | heads × seq_q × seq_kv × d | kb ms | numpy ms | × numpy | torch SDPA ms | × torch |")
    print("|---|---|---|---|---|---|---|")
    for label, h, sq, skv, d, causal in cases:
        q, k, v = rand(1, h, sq, d), rand(1, h, skv, d), rand(1, h, skv, d)
        out = np.empty_like(q)
        scale = np.float32(1 / math.sqrt(d))
        mask = np.triu(np.full((sq, skv), -np.inf, np.float32), 1) if causal else None
        kt = k.swapaxes(-1, -2)

        def naive():
            s = np.matmul(q, kt)
            s *= scale
            if mask is not None:
                s += mask
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            return np.matmul(s, v)

        sides = [("kb.attention", lambda: kb.attention(q, k, v, out, causal=causal, ctx=ctx)), ("numpy attention", naive)]
        if torch is not None:
            tq, tk, tv = torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)

            def sdpa():
                with torch.no_grad():
                    return F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

            sides.append(("torch SDPA", sdpa))
        else:
            sides.append(None)
        t = measure(sides)
        close(f"attention {label}: kb vs numpy", out, naive(), 0, 1e-4)
        if torch is not None:
            close(f"attention {label}: kb vs torch", out, to_np(sdpa()), 0, 1e-4)
        ms = [x * 1e3 if x else None for x in t]
        print(f"| {label} | {h} × {sq} × {skv} × {d} | {fmt(ms[0], 3)} | {fmt(ms[1], 3)} | {ratio(t[1], t[0])} | "
              f"{fmt(ms[2], 3)} | {ratio(t[2], t[0])} |", flush=True)
    print()


# ---------------------------------------------------------------------------
# Memory-bound kernels.  Each case builds its inputs and returns the three
# calls (kernelbridge, numpy, torch; the last two may be None) plus the bytes
# the kernel must move and how to compare the results.


def sizes(kind, large):
    q, s = ARGS.quick, ARGS.smoke
    if kind == "n":
        return (1031 if s else (1 << 20) if q else (16 << 20)) if large else 16
    if kind == "rows":
        return ((3, 37) if s else (256, 1024) if q else (4096, 1024)) if large else (4, 64)
    if kind == "logits":
        return ((3, 101) if s else (8, 32000) if q else (64, 32000)) if large else (4, 64)
    if kind == "rope":
        return ((3, 2, 10) if s else (256, 16, 64) if q else (4096, 16, 64)) if large else (4, 1, 64)
    if kind == "embed":
        return ((5, 50, 12) if s else (256, 8000, 1024) if q else (4096, 32000, 1024)) if large else (4, 64, 64)
    raise ValueError(kind)


def np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def make_inputs(dt, *shape, lo=-4.0, hi=4.0):
    """(kernel input, float32 value) for dtype dt in f32 / bf16 / f16."""
    x = rand(*shape, lo=lo, hi=hi)
    if dt == "bf16":
        bits = bf16_bits(x)
        return bits, bf16_value(bits)
    if dt == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32)
    return x, x


def elementwise_case(name, dt, large):
    n = sizes("n", large)
    e = 4 if dt == "f32" else 2
    suffix = "" if dt == "f32" else "_" + dt
    fn = getattr(kb, name + suffix)
    binary = name in ("add", "mul")
    x, xv = make_inputs(dt, n)
    b, bv = make_inputs(dt, n, lo=-1, hi=1)
    y = np.empty_like(x)
    ctx = CTX
    if binary:
        kcall = lambda: fn(x, b, y, ctx=ctx)  # noqa: E731
    elif name == "scale":
        kcall = lambda: fn(x, y, alpha=0.5, ctx=ctx)  # noqa: E731
    else:
        kcall = lambda: fn(x, y, ctx=ctx)  # noqa: E731
    c = 0.7978845608028654
    npx = None if dt == "bf16" else x  # numpy has no bfloat16: float16 rows use numpy's float16
    ny = None if npx is None else np.empty_like(npx)
    exprs = {
        "silu": lambda: npx / (1 + np.exp(-npx)),
        "gelu": None,  # numpy has no erf
        "gelu_tanh": lambda: 0.5 * npx * (1 + np.tanh(c * (npx + 0.044715 * npx * npx * npx))),
        "add": lambda: np.add(npx, b, out=ny),
        "mul": lambda: np.multiply(npx, b, out=ny),
        "scale": lambda: np.multiply(npx, npx.dtype.type(0.5), out=ny),
    }
    ncall = exprs[name] if npx is not None else None
    tcall = None
    if torch is not None:
        tx, tb = torch_of(x), torch_of(b)
        ty = torch.empty_like(tx)
        texprs = {
            "silu": lambda: F.silu(tx),
            "gelu": lambda: F.gelu(tx),
            "gelu_tanh": lambda: F.gelu(tx, approximate="tanh"),
            "add": lambda: torch.add(tx, tb, out=ty),
            "mul": lambda: torch.mul(tx, tb, out=ty),
            "scale": lambda: torch.mul(tx, 0.5, out=ty),
        }
        tcall = texprs[name]
    return dict(kb=kcall, np=ncall, torch=tcall, bytes=(3 if binary else 2) * n * e, out=y,
                shape=f"{n >> 20}M" if n >= 1 << 20 else str(n))


def row_case(name, dt, large):
    r, cols = sizes("rows", large)
    e = 4 if dt == "f32" else 2
    suffix = "" if dt == "f32" else "_" + dt
    fn = getattr(kb, name + suffix)
    x, xv = make_inputs(dt, r, cols)
    w, wv = make_inputs(dt, cols, lo=0.5, hi=1.5)
    bias, biasv = make_inputs(dt, cols, lo=-0.5, hi=0.5)
    y = np.empty_like(x)
    ctx, eps = CTX, 1e-5
    kcalls = {
        "add_bias": lambda: fn(x, bias, y, ctx=ctx),
        "softmax": lambda: fn(x, y, ctx=ctx),
        "log_softmax": lambda: fn(x, y, ctx=ctx),
        "rmsnorm": lambda: fn(x, w, y, eps=eps, ctx=ctx),
        "layernorm": lambda: fn(x, w, bias, y, eps=eps, ctx=ctx),
    }
    npx = None if dt == "bf16" else x
    nw = None if npx is None else w
    nb = None if npx is None else bias
    ny = None if npx is None else np.empty_like(npx)

    def np_log_softmax():
        s = npx - npx.max(axis=1, keepdims=True)
        return s - np.log(np.exp(s).sum(axis=1, keepdims=True))

    def np_layernorm():
        d = npx - npx.mean(axis=1, keepdims=True)
        return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps) * nw + nb

    ncalls = {
        "add_bias": lambda: np.add(npx, nb, out=ny),
        "softmax": lambda: np_softmax(npx),
        "log_softmax": np_log_softmax,
        "rmsnorm": lambda: npx / np.sqrt(np.mean(npx * npx, axis=1, keepdims=True) + eps) * nw,
        "layernorm": np_layernorm,
    }
    tcall = None
    if torch is not None:
        tx, tw, tbias = torch_of(x), torch_of(w), torch_of(bias)
        ty = torch.empty_like(tx)

        def t_rmsnorm():
            if hasattr(F, "rms_norm"):
                return F.rms_norm(tx, (cols,), tw, eps)
            return tx * torch.rsqrt(tx.pow(2).mean(dim=1, keepdim=True) + eps) * tw

        tcalls = {
            "add_bias": lambda: torch.add(tx, tbias, out=ty),
            "softmax": lambda: torch.softmax(tx, dim=1),
            "log_softmax": lambda: torch.log_softmax(tx, dim=1),
            "rmsnorm": t_rmsnorm,
            "layernorm": lambda: F.layer_norm(tx, (cols,), tw, tbias, eps),
        }
        tcall = tcalls[name]
    extra = {"add_bias": cols, "rmsnorm": cols, "layernorm": 2 * cols}.get(name, 0)
    return dict(kb=kcalls[name], np=ncalls[name] if npx is not None else None, torch=tcall,
                bytes=(2 * r * cols + extra) * e, out=y, shape=f"{r}×{cols}")


def logits_case(name, large):
    r, cols = sizes("logits", large)
    x = rand(r, cols, lo=-4, hi=4)
    t = RNG.integers(0, cols, size=r).astype(np.int32)
    ar = np.arange(r)
    ctx = CTX
    losses, mean = np.empty(r, np.float32), np.empty(1, np.float32)
    dl = np.empty_like(x)
    ids = np.empty(r, np.int32)
    ids64 = np.empty(r, np.int64)

    def np_ce():
        m = x.max(axis=1)
        lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
        ls = lse - x[ar, t]
        return ls, ls.mean()

    def np_ce_bwd():
        p = np_softmax(x)
        p[ar, t] -= 1
        p /= r
        return p

    if name == "cross_entropy":
        kcall, ncall, out, nbytes = lambda: kb.cross_entropy(x, t, (losses, mean), ctx=ctx), np_ce, losses, 4 * r * cols + 8 * r + 4
    elif name == "cross_entropy_backward":
        kcall, ncall, out, nbytes = lambda: kb.cross_entropy_backward(x, t, dl, ctx=ctx), np_ce_bwd, dl, 8 * r * cols + 4 * r
    else:
        kcall, ncall, out, nbytes = lambda: kb.argmax(x, ids, ctx=ctx), lambda: np.argmax(x, axis=1, out=ids64), ids, 4 * r * cols + 4 * r
    tcall = None
    if torch is not None:
        tx, tt = torch.from_numpy(x), torch.from_numpy(t.astype(np.int64))
        tar = torch.arange(r)

        def t_ce():
            ls = F.cross_entropy(tx, tt, reduction="none")
            return ls, ls.mean()

        def t_ce_bwd():
            p = torch.softmax(tx, dim=1)
            p[tar, tt] -= 1
            return p.div_(r)

        tcall = {"cross_entropy": t_ce, "cross_entropy_backward": t_ce_bwd,
                 "argmax": lambda: torch.argmax(tx, dim=1)}[name]
    return dict(kb=kcall, np=ncall, torch=tcall, bytes=nbytes, out=out, shape=f"{r}×{cols}")


def adamw_case(large):
    n = sizes("n", large)
    lr, b1, b2, eps, wd, step = 1e-3, 0.9, 0.999, 1e-8, 0.01, 1
    bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
    g = rand(n)
    state0 = (rand(n), rand(n, lo=-0.01, hi=0.01), rand(n, lo=0, hi=1e-4))
    kp, km, kv = (a.copy() for a in state0)
    np_p, np_m, np_v = (a.copy() for a in state0)
    ctx = CTX

    def kcall():
        kb.adamw_step(kp, g, km, kv, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd, step=step, ctx=ctx)

    # The operations of torch.optim.AdamW's single-tensor path, in numpy.
    def ncall():
        nonlocal np_p, np_m, np_v
        np_p *= np.float32(1 - lr * wd)
        np_m *= np.float32(b1)
        np_m += np.float32(1 - b1) * g
        np_v *= np.float32(b2)
        np_v += np.float32(1 - b2) * g * g
        denom = np.sqrt(np_v) / np.float32(math.sqrt(bc2)) + np.float32(eps)
        np_p -= np.float32(lr / bc1) * np_m / denom

    tcall = None
    if torch is not None:
        tp, tm, tv = (torch.from_numpy(a.copy()) for a in state0)
        tg = torch.from_numpy(g)

        def tcall():
            tp.mul_(1 - lr * wd)
            tm.mul_(b1).add_(tg, alpha=1 - b1)
            tv.mul_(b2).addcmul_(tg, tg, value=1 - b2)
            denom = (tv.sqrt() / math.sqrt(bc2)).add_(eps)
            tp.addcdiv_(tm, denom, value=-lr / bc1)

    def check():
        # One step of each from the same state.
        p1, m1, v1 = (a.copy() for a in state0)
        kb.adamw_step(p1, g, m1, v1, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd, step=step, ctx=ctx)
        p2 = state0[0] * np.float32(1 - lr * wd)
        m2 = np.float32(b1) * state0[1] + np.float32(1 - b1) * g
        v2 = np.float32(b2) * state0[2] + np.float32(1 - b2) * g * g
        p2 = p2 - np.float32(lr / bc1) * m2 / (np.sqrt(v2) / np.float32(math.sqrt(bc2)) + np.float32(eps))
        close("adamw_step: kb vs numpy", p1, p2, 1e-5, 1e-6)

    return dict(kb=kcall, np=ncall, torch=tcall, bytes=28 * n, out=None, check=check,
                shape=f"{n >> 20}M" if n >= 1 << 20 else str(n))


def rope_case(large):
    s, h, d = sizes("rope", large)
    half = d // 2
    x = rand(s, h, d)
    pos = np.arange(s, dtype=np.int32)
    y = np.empty_like(x)
    theta, ctx = 10000.0, CTX
    # Angles in double precision, as the kernel's contract says.
    inv = theta ** (-np.arange(half, dtype=np.float64) * 2 / d)

    def ncall():
        ang = pos[:, None] * inv
        cos, sin = np.cos(ang).astype(np.float32)[:, None, :], np.sin(ang).astype(np.float32)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    tcall = None
    if torch is not None:
        tx, tpos, tinv = torch.from_numpy(x), torch.from_numpy(pos), torch.from_numpy(inv)

        def tcall():
            ang = tpos[:, None].double() * tinv
            cos, sin = ang.cos().float()[:, None, :], ang.sin().float()[:, None, :]
            x1, x2 = tx[..., :half], tx[..., half:]
            return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    return dict(kb=lambda: kb.rope(x, pos, y, theta=theta, ctx=ctx), np=ncall, torch=tcall,
                bytes=8 * s * h * d + 4 * s, out=y, shape=f"{s}×{h}×{d}", tol=(1e-4, 1e-4))


def embedding_case(large):
    n_ids, vocab, dim = sizes("embed", large)
    table = rand(vocab, dim)
    ids = RNG.integers(0, vocab, size=n_ids).astype(np.int32)
    out, nout = np.empty((n_ids, dim), np.float32), np.empty((n_ids, dim), np.float32)
    ctx = CTX
    tcall = None
    if torch is not None:
        tt, tids = torch.from_numpy(table), torch.from_numpy(ids.astype(np.int64))
        tcall = lambda: F.embedding(tids, tt)  # noqa: E731
    return dict(kb=lambda: kb.embedding(ids, table, out, ctx=ctx), np=lambda: np.take(table, ids, axis=0, out=nout),
                torch=tcall, bytes=4 * n_ids + 8 * n_ids * dim, out=out, shape=f"{n_ids} ids × {dim} of {vocab}")


def as_float(a):
    a = a[0] if isinstance(a, tuple) else a
    if torch is not None and isinstance(a, torch.Tensor):
        return to_np(a)
    a = np.asarray(a)
    if a.dtype == np.uint16:
        return bf16_value(a).astype(np.float64)
    return a.astype(np.float64)


def memory_cases():
    names16 = ["silu", "gelu", "gelu_tanh", "add", "mul", "scale", "add_bias", "softmax", "log_softmax", "rmsnorm",
               "layernorm"]
    for name in names16:
        for dt in ("f32", "bf16", "f16"):
            if name in ("silu", "gelu", "gelu_tanh", "add", "mul", "scale"):
                yield name, dt, lambda large, name=name, dt=dt: elementwise_case(name, dt, large)
            else:
                yield name, dt, lambda large, name=name, dt=dt: row_case(name, dt, large)
    for name in ("cross_entropy", "cross_entropy_backward", "argmax"):
        yield name, "f32", lambda large, name=name: logits_case(name, large)
    yield "adamw_step", "f32", adamw_case
    yield "rope", "f32", rope_case
    yield "embedding", "f32", embedding_case


def run_case(name, dt, case):
    sides = [(f"kb.{name} {dt}", case["kb"]),
             (f"numpy {name} {dt}", case["np"]) if case["np"] is not None else None,
             (f"torch {name} {dt}", case["torch"]) if case["torch"] is not None else None]
    t = measure(sides)
    # The results must agree: checked once, after timing.
    if "check" in case:
        case["check"]()
    elif case["out"] is not None:
        case["kb"]()
        got = as_float(case["out"])
        rtol, atol = case.get("tol", (2e-2, 2e-2) if dt != "f32" else (1e-4, 1e-5))
        for peer in ("np", "torch"):
            if case[peer] is not None:
                try:
                    close(f"{name} {dt}: kb vs {'numpy' if peer == 'np' else 'torch'}", got, as_float(case[peer]()), rtol, atol)
                except Exception as exc:
                    failed(f"{name} {dt}: {peer} result: {type(exc).__name__}: {exc}")
    return t


def bench_memory():
    print("### memory-bound kernels through Python, large sizes")
    print()
    print("kernelbridge writes into preallocated outputs; numpy is the natural expression (temporaries included; "
          "`out=` where one ufunc suffices; float16 rows use numpy float16, bfloat16 rows have no numpy peer; "
          "numpy has no erf, so gelu has none); torch the functional call.  GB/s: the bytes the kernel must move "
          "(as in the C tables).")
    print()
    print("| kernel | dtype | shape | kb ms | kb GB/s | numpy ms | × numpy | torch ms | × torch |")
    print("|---|---|---|---|---|---|---|---|---|")
    small_rows = []
    for name, dt, make in memory_cases():
        case = make(True)
        t = run_case(name, dt, case)
        ms = [x * 1e3 if x else None for x in t]
        gbs = case["bytes"] / t[0] * 1e-9 if t[0] else None
        print(f"| {name} | {dt} | {case['shape']} | {fmt(ms[0], 3)} | {fmt(gbs)} | {fmt(ms[1], 3)} | "
              f"{ratio(t[1], t[0])} | {fmt(ms[2], 3)} | {ratio(t[2], t[0])} |", flush=True)
        del case
        case = make(False)
        t = run_case(name, dt, case)
        ns = [x * 1e9 if x else None for x in t]
        small_rows.append(f"| {name} | {dt} | {case['shape']} | {fmt(ns[0], 0)} | {fmt(ns[1], 0)} | "
                          f"{ratio(t[1], t[0])} | {fmt(ns[2], 0)} | {ratio(t[2], t[0])} |")
    print()
    print("### memory-bound kernels through Python, small sizes (ns per call, binding overhead included)")
    print()
    print("| kernel | dtype | shape | kb ns | numpy ns | × numpy | torch ns | × torch |")
    print("|---|---|---|---|---|---|---|---|")
    for row in small_rows:
        print(row)
    print()


CTX = None


def main():
    global CTX
    CTX = kb.Context(threads=ARGS.threads)
    header(CTX)
    if ARGS.only in (None, "gemm"):
        bench_gemm(CTX)
    if ARGS.only in (None, "attention"):
        bench_attention(CTX)
    if ARGS.only in (None, "memory"):
        bench_memory()
    CTX.close()
    if FAILURES:
        print(f"bench_py.py: {len(FAILURES)} failure(s); see the messages above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
