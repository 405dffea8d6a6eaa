"""One Context and one Buffer shared by threads, and closed while they use
them (docs/python.md, "Threads").

- 8 threads x 2,000 mixed calls on one two-thread Context: every result is
  the call made alone, and a failing call raises with its own thread's
  message (each thread passes its own bad value).
- Context.close() while 8 threads call: each call gives the right bits or
  raises InvalidArgumentError saying the context is closed; no crash, no
  hang, and the calls that started before close() finish first.
- One Buffer used by 8 threads (kernels, transfers), closed while they use
  it: right results or InvalidArgumentError, never freed memory read.

The C library serialises nothing here that would hide a bug: on the old
library (one thread at a time per context) these crashed or hung.
"""

import threading
import time

import numpy as np
import pytest

import kernelbridge as kb
from test_stress import KINDS, call, kind_of, reference

THREADS = 8


def _run(threads, work):
    failures = []

    def guarded(t):
        try:
            work(t)
        except Exception as e:  # reported below, with the thread
            failures.append("thread %d: %r" % (t, e))

    ts = [threading.Thread(target=guarded, args=(t,)) for t in range(threads)]
    for th in ts:
        th.start()
    return ts, failures


def test_eight_threads_share_one_context():
    want = reference()
    shared = kb.Context(threads=2)

    def work(t):
        for j in range(2000):
            # Every 16th call the large gemm, which uses the context's pool.
            kind = KINDS - 1 if j % 16 == 15 else kind_of(t, j)
            assert call(kind, shared) == want[kind], "call %d (kind %d) differs from the call made alone" % (j, kind)
            if j % 100 == 0:
                eps = -float(t + 1)
                with pytest.raises(kb.InvalidArgumentError, match="got %g" % eps):
                    kb.rmsnorm(np.ones((2, 4), np.float32), np.ones(4, np.float32), eps=eps, ctx=shared)
                # The C message is the thread's own too.
                assert ("got %g" % eps) in shared.last_error

    ts, failures = _run(THREADS, work)
    for th in ts:
        th.join()
    shared.close()
    assert not failures, "; ".join(failures[:3])


def _closed(e):
    return isinstance(e, kb.InvalidArgumentError) and ("closed" in str(e) or "destroyed" in str(e))


@pytest.mark.parametrize("fast", [True, False])
def test_close_context_while_threads_use_it(fast):
    want = reference()
    previous = kb._runtime.fast_enabled(fast)
    try:
        for round_ in range(3):
            ctx = kb.Context(threads=2)
            counts = {"done": 0, "refused": 0}
            lock = threading.Lock()
            go = threading.Event()

            def work(t):
                go.wait()
                after = 0
                j = 0
                while after < 5 and j < 200_000:
                    kind = kind_of(t, j)
                    j += 1
                    try:
                        got = call(kind, ctx)
                    except kb.Error as e:
                        assert _closed(e), repr(e)
                        after += 1
                        with lock:
                            counts["refused"] += 1
                        continue
                    assert got == want[kind]
                    with lock:
                        counts["done"] += 1

            ts, failures = _run(THREADS, work)
            go.set()
            # Close once the threads have finished calls (one each, on
            # average), so that the close lands among calls however late the
            # threads start on a loaded machine.
            deadline = time.monotonic() + 60
            while counts["done"] < THREADS and not failures and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.005 * (round_ + 1))
            ctx.close()
            for th in ts:
                th.join()
            assert not failures, "; ".join(failures[:3])
            assert counts["refused"] >= THREADS * 5 and counts["done"] > 0, counts
            ctx.close()  # again: nothing
    finally:
        kb._runtime.fast_enabled(previous)


def test_close_buffer_while_threads_use_it():
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    want = kb.silu(x)
    with kb.Context(threads=2) as ctx:
        for round_ in range(3):
            buf = kb.Buffer.from_numpy(ctx, x)
            go = threading.Event()

            def work(t):
                go.wait()
                after = 0
                out = kb.Buffer(ctx, x.shape)
                back = np.empty(16, np.float32)
                j = 0
                while after < 5 and j < 100_000:
                    j += 1
                    try:
                        kb.silu(buf, out=out, ctx=ctx)
                        if j % 3 == 0:
                            buf.download(back, offset=64 * t)
                            assert np.array_equal(back, x[16 * t:16 * t + 16])
                        if j % 5 == 0:
                            buf.fill(0, nbytes=0)  # a transfer on the shared buffer
                    except kb.Error as e:
                        assert _closed(e), repr(e)
                        after += 1
                        continue
                    assert np.array_equal(out.numpy(), want)
                out.close()

            ts, failures = _run(THREADS, work)
            go.set()
            time.sleep(0.005 * (round_ + 1))
            buf.close()
            for th in ts:
                th.join()
            assert not failures, "; ".join(failures[:3])


_CLOSE_DURING_CALL = r"""
import threading, time, numpy as np, kernelbridge as kb
n = 1 << 24  # 64 MB: malloc maps it on its own, so freed memory is unmapped
x = np.linspace(-3, 3, n, dtype=np.float32)
with kb.Context(threads=1) as ctx:
    buf = kb.Buffer.from_numpy(ctx, x)
    out = np.empty(n, np.float32)
    started = threading.Event()
    def work():
        started.set()
        kb.gelu(buf, out=out, ctx=ctx)  # tens of milliseconds
    t = threading.Thread(target=work)
    t.start()
    started.wait()
    time.sleep(0.005)
    buf.close()  # while the call reads it: the call holds the memory
    t.join()
    assert buf.closed
    assert np.array_equal(out[::4096], kb.gelu(x[::4096])), "wrong result"
print("ok")
"""


def test_buffer_closed_during_a_long_call_keeps_its_memory():
    """A Buffer closed by one thread while a kernel in another reads it: the
    memory (64 MB, so that freeing unmaps it) stays until the call returns.
    In a child process, so that a crash is a failure, not the end of pytest."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _CLOSE_DURING_CALL], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout[-500:], r.stderr[-2000:])
