"""Kernels release the GIL: calls on different threads run inside the C
library at the same time.

No timing is asserted.  Overlap is observed directly: an elementwise kernel
writes its output front to back (one thread per context here), so while the
call is running its output is "partial": the first element written, the last
one not yet.  The main thread (which needs the GIL to look) repeatedly checks
both workers' outputs; seeing both partial at one moment proves both calls
were inside C simultaneously while a third thread ran Python.  Were the GIL
held during a call, no other thread could run until it returned, and no
partial state could ever be seen.  Each attempt is a proof on its own; the
test retries a few times only in case the OS did not schedule the threads
together.
"""

import threading

import numpy as np

import kernelbridge as kb

# Large enough that one call lasts tens of milliseconds (gelu on one thread),
# so that the poller below sees two calls half done at once.
N = 1 << 24


def partial(y):
    return not np.isnan(y[0]) and np.isnan(y[-1])


def test_two_threads_inside_c_at_once():
    x = np.linspace(-4, 4, N, dtype=np.float32)
    want = kb.gelu(x)
    contexts = [kb.Context(threads=1), kb.Context(threads=1)]
    seen = False
    for _attempt in range(10):
        outs = [np.full(N, np.nan, np.float32) for _ in range(2)]
        start = threading.Barrier(3)

        def work(i):
            start.wait()
            kb.gelu(x, out=outs[i], ctx=contexts[i])

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        start.wait()
        while any(t.is_alive() for t in threads):
            if partial(outs[0]) and partial(outs[1]):
                seen = True
                break
        for t in threads:
            t.join()
        for y in outs:
            assert np.array_equal(y, want)
        if seen:
            break
    assert seen, "never observed two kernel calls running at the same time"


def test_concurrent_gemm_results():
    rng = np.random.default_rng(7)
    mats = [(rng.standard_normal((256, 192)).astype(np.float32), rng.standard_normal((192, 160)).astype(np.float32))
            for _ in range(4)]
    want = [kb.gemm(a, b, alpha=1.0, beta=0.0, ctx=kb.Context(threads=1)) for a, b in mats]
    results = [None] * 4
    defaults = [None] * 4

    def work(i):
        with kb.Context(threads=2) as ctx:
            for _ in range(3):
                results[i] = kb.gemm(*mats[i], alpha=1.0, beta=0.0, ctx=ctx)
        # The default context of this thread as well.
        defaults[i] = kb.gemm(*mats[i], alpha=1.0, beta=0.0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, w in zip(defaults, want):
        assert np.array_equal(got, w)
    for got, w, (a, b) in zip(results, want, mats):
        # Bit-identical whatever the thread count; close to a float64 product.
        assert np.array_equal(got, w)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def _child_gemm(args):
    a, b = args
    return kb.gemm(a, b, ctx=_FORK_CTX)


_FORK_CTX = None


def test_multiprocessing_children_after_parent_used_threads():
    """A context whose worker threads ran in the parent keeps working in
    children made by fork (multiprocessing's fork start method), and spawned
    children (a fresh interpreter) work too; every child's result is the
    parent's, bit for bit."""
    import multiprocessing

    global _FORK_CTX
    rng = np.random.default_rng(3)
    a = rng.standard_normal((96, 80), dtype=np.float32)
    b = rng.standard_normal((80, 70), dtype=np.float32)
    _FORK_CTX = kb.Context(threads=2)
    want = kb.gemm(a, b, ctx=_FORK_CTX)  # the parent's pool is running now
    for method in ("fork", "spawn"):
        mp = multiprocessing.get_context(method)
        if method == "spawn":
            # A spawned child re-imports this module: it gets a context of its own.
            with mp.Pool(2, initializer=_init_spawned) as pool:
                outs = pool.map(_child_gemm, [(a, b)] * 4)
        else:
            with mp.Pool(2) as pool:
                outs = pool.map(_child_gemm, [(a, b)] * 4)
        for got in outs:
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), method
    _FORK_CTX.close()


def _init_spawned():
    global _FORK_CTX
    _FORK_CTX = kb.Context(threads=2)
