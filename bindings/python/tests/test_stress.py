"""Concurrency and fork stress (docs/reliability.md).

- 8 threads make 10 000 kernel calls each, first on their default contexts
  (kernels called without ctx=: one context per thread), then each on a
  private Context with two threads; every result must be bit-identical to the
  same call made alone on one thread.
- multiprocessing children, forked while other threads of the parent are in
  the middle of kernel calls, and spawned children, make a few hundred calls
  each on the context inherited from the parent (whose workers ran there),
  on their default context and on a new multi-threaded context; their results
  must be the parent's, bit for bit.
"""

import hashlib
import multiprocessing
import threading

import numpy as np

import kernelbridge as kb

THREADS = 8
CALLS = 10_000
KINDS = 8


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


X64 = _values((4, 16), 1)
Y64 = _values((4, 16), 2)
W16 = _values(16, 3)
Q = _values((1, 2, 4, 8), 4)
K = _values((1, 1, 6, 8), 5)
V = _values((1, 1, 6, 8), 6)
LOGITS = _values((2, 16), 7)
A8 = _values((8, 8), 8)
B8 = _values((8, 8), 9)
A64 = _values((64, 64), 10)
B64 = _values((64, 64), 11)


def call(kind, ctx=None):
    """Call `kind` on ctx (None: the thread's default context); output bytes."""
    if kind == 0:
        out = kb.silu(X64, ctx=ctx)
    elif kind == 1:
        out = kb.gemm(A8, B8, trans_b=True, ctx=ctx)
    elif kind == 2:
        out = kb.softmax(X64, ctx=ctx)
    elif kind == 3:
        out = kb.rmsnorm(X64, W16, eps=1e-5, ctx=ctx)
    elif kind == 4:
        out = kb.attention(Q, K, V, causal=True, ctx=ctx)
    elif kind == 5:
        out = kb.topk_sample(LOGITS, k=5, temperature=0.8, seed=1234, ctx=ctx)
    elif kind == 6:
        out = kb.add(X64, Y64, ctx=ctx)
    else:
        # Large enough for the packed gemm path and, on two threads, a split.
        out = kb.gemm(A64, B64, ctx=ctx)
    return out.tobytes()


def kind_of(t, j):
    """The kinds spread over the calls, the large gemm one call in 64."""
    return KINDS - 1 if j % 64 == 63 else (t + j) % (KINDS - 1)


def reference():
    with kb.Context(threads=1) as one:
        return [call(kind, one) for kind in range(KINDS)]


def _round(want, private):
    failures = []

    def work(t):
        ctx = kb.Context(threads=2) if private else None
        try:
            for j in range(CALLS):
                kind = kind_of(t, j)
                if call(kind, ctx) != want[kind]:
                    failures.append("thread %d call %d (kind %d) differs from the call made alone" % (t, j, kind))
                    return
        except Exception as e:  # reported below, with the thread
            failures.append("thread %d: %r" % (t, e))
        finally:
            if ctx is not None:
                ctx.close()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, ("private" if private else "default") + " contexts: " + "; ".join(failures[:3])


def test_eight_threads_default_and_private_contexts_bit_identical():
    want = reference()
    _round(want, private=False)
    _round(want, private=True)


# ---- children ----

CHILD_CALLS = 300
_INHERITED = None  # a context made (and its workers started) in the parent


def _digest(ctx_of_call):
    h = hashlib.sha256()
    for j in range(CHILD_CALLS):
        h.update(call(kind_of(j % 3, j), ctx_of_call(j)))
    return h.hexdigest()


def _child(_task):
    """In a child: calls alternating between the inherited context (None in a
    spawned child, which makes its own in _init_spawned), the default
    context and a new two-thread context."""
    with kb.Context(threads=2) as fresh:
        choices = (_INHERITED, None, fresh)
        return _digest(lambda j: choices[j % 3])


def _init_spawned():
    global _INHERITED
    _INHERITED = kb.Context(threads=2)


def test_forked_and_spawned_children_while_parent_threads_call_kernels():
    global _INHERITED
    _INHERITED = kb.Context(threads=2)
    kb.gemm(A64, B64, ctx=_INHERITED)  # the parent's workers of this context run now
    want = _digest(lambda j: None)  # every context gives the same bits
    stop = threading.Event()
    errors = []

    def busy(seed):
        # Other threads keep calling kernels (on their own contexts) while
        # the children are forked.
        with kb.Context(threads=2) as mine:
            j = seed
            while not stop.is_set():
                kind = kind_of(seed, j)
                if call(kind, mine) != REFERENCE[kind]:
                    errors.append("parent thread %d: call %d differs" % (seed, j))
                    return
                j += 1

    busy_threads = [threading.Thread(target=busy, args=(s,)) for s in range(3)]
    for th in busy_threads:
        th.start()
    try:
        for method in ("fork", "spawn"):
            mp = multiprocessing.get_context(method)
            init = _init_spawned if method == "spawn" else None
            with mp.Pool(2, initializer=init) as pool:
                digests = pool.map(_child, range(4))
            assert digests == [want] * 4, method
    finally:
        stop.set()
        for th in busy_threads:
            th.join()
        _INHERITED.close()
    assert not errors, errors


REFERENCE = reference()
