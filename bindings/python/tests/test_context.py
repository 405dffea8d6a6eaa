"""Contexts, per-thread default contexts, the import-time version check and
the generated files' basic properties."""

import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import kernelbridge as kb


def test_context_basics():
    with kb.Context(threads=3) as ctx:
        assert ctx.threads == 3
        assert ctx.backend is kb.Backend.CPU
        assert ctx.last_error == ""
        x = np.ones((2, 3), np.float32)
        assert np.allclose(kb.softmax(x, ctx=ctx), 1 / 3)
    assert ctx.closed
    assert kb.Context().threads >= 1  # 0: one per online CPU
    if not kb.cuda.is_available():
        assert kb.Context(backend="auto").backend is kb.Backend.CPU
    assert kb.Context(backend=kb.Backend.CPU).backend is kb.Backend.CPU


def test_last_error_is_recorded_and_cleared():
    ctx = kb.Context(threads=1)
    with pytest.raises(kb.InvalidArgumentError):
        kb.scale(np.ones(2, np.float32), alpha=float("inf"), ctx=ctx)
    assert "kb_scale" in ctx.last_error and "alpha" in ctx.last_error
    kb.scale(np.ones(2, np.float32), alpha=2.0, ctx=ctx)
    assert ctx.last_error == ""


# What a missing CUDA part is called in the library's messages (core/src/cuda.c,
# docs/cuda.md): the backend library, the NVIDIA driver or a device.
MISSING = ("libkernelbridge_cuda.so", "NVIDIA driver", "CUDA device", "compute capability", "CUDA 13")


def test_cuda_backend_unavailable_or_usable():
    """Without a usable CUDA backend (this build machine: no backend library
    next to the extension, no driver), Context("cuda") raises
    BackendUnavailableError whose message says what is missing.  With one,
    the context is made (the GPU tests are tests/test_gpu.py)."""
    if kb.cuda.is_available():
        with kb.Context("cuda") as ctx:
            assert ctx.backend is kb.Backend.CUDA and ctx.device == 0 and ctx.is_cuda
        return
    reason = kb.cuda.unavailable_reason()
    assert reason and any(m in reason for m in MISSING), reason
    for args, kwargs, fn in [
        (("cuda",), {}, "kb_context_create"),
        ((), {"backend": "cuda"}, "kb_context_create"),
        ((kb.Backend.CUDA,), {}, "kb_context_create"),
        (("cuda", 0), {}, "kb_context_create_cuda"),
        (("cuda:0",), {}, "kb_context_create_cuda"),
    ]:
        with pytest.raises(kb.BackendUnavailableError) as e:
            kb.Context(*args, **kwargs)
        err = e.value
        assert err.status is kb.Status.BACKEND_UNAVAILABLE
        assert err.message.startswith(fn + ": "), err.message
        assert any(m in err.message for m in MISSING), err.message
        # The message is the calling thread's kb_last_error(), read right after the call.
        assert kb.last_error() == err.message
    assert kb.cuda.device_count() == 0
    with pytest.raises(kb.BackendUnavailableError, match="kb_cuda_device_name: "):
        kb.cuda.device_name(0)
    for query in (kb.cuda.compute_capability, kb.cuda.total_memory, kb.cuda.free_memory):
        with pytest.raises(kb.BackendUnavailableError):
            query(0)


def test_auto_falls_back_to_cpu_silently():
    ctx = kb.Context("auto", threads=2)
    if not kb.cuda.is_available():
        assert ctx.backend is kb.Backend.CPU and ctx.device is None and not ctx.is_cuda and ctx.threads == 2
    # A successful context-free call clears the thread's message.
    kb.Context()
    assert kb.last_error() == ""


def test_thread_message_is_per_thread():
    if kb.cuda.is_available():
        pytest.skip("needs a machine where CUDA is unavailable")
    with pytest.raises(kb.BackendUnavailableError):
        kb.Context("cuda")
    mine = kb.last_error()
    seen = []
    t = threading.Thread(target=lambda: seen.append(kb.last_error()))
    t.start()
    t.join()
    assert mine and seen == [""]


def test_context_device_and_synchronize_on_cpu():
    with kb.Context() as ctx:
        assert ctx.device is None and not ctx.is_cuda and ctx.backend is kb.Backend.CPU
        ctx.synchronize()  # nothing to wait for
        assert "backend=cpu" in repr(ctx)


def test_bad_context_arguments():
    with pytest.raises(ValueError, match="backend must be"):
        kb.Context(backend="tpu")
    with pytest.raises(ValueError, match="threads must be >= 0"):
        kb.Context(threads=-1)
    with pytest.raises(TypeError):
        kb.Context(threads=1.5)
    # The first positional argument is the backend; a thread count is threads=.
    with pytest.raises(TypeError, match="threads="):
        kb.Context(4)
    with pytest.raises(ValueError, match="device= needs backend 'cuda'"):
        kb.Context("cpu", 0)
    with pytest.raises(ValueError, match="device must be >= 0"):
        kb.Context("cuda", -1)
    with pytest.raises(ValueError, match="bad CUDA device"):
        kb.Context("cuda:x")
    with pytest.raises(ValueError, match="disagree"):
        kb.Context("cuda:1", device=0)
    with pytest.raises(ValueError, match="threads= cannot be combined"):
        kb.Context("cuda", 0, threads=2)
    with pytest.raises(TypeError):
        kb.Context("cuda", device="0")


def test_close_is_idempotent_and_use_after_close_fails():
    ctx = kb.Context()
    ctx.close()
    ctx.close()
    with pytest.raises(ValueError, match="silu: the context is closed"):
        kb.silu(np.ones(2, np.float32), ctx=ctx)
    with pytest.raises(ValueError, match="closed"):
        ctx.threads
    with pytest.raises(ValueError, match="closed"):
        with ctx:
            pass
    assert "closed" in repr(ctx)


def test_finalizer_frees_handle():
    ctx = kb.Context()
    fin = ctx._finalizer
    assert fin.alive
    del ctx
    gc.collect()
    assert not fin.alive


def test_default_context_is_per_thread():
    main = kb.default_context()
    assert kb.default_context() is main
    seen = []

    def worker():
        seen.append(kb.default_context())
        kb.silu(np.ones(4, np.float32))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen[0] is not main
    # A closed default context is replaced on the next call.
    kb.default_context().close()
    assert kb.silu(np.ones(2, np.float32)).shape == (2,)
    assert not kb.default_context().closed


def test_default_context_records_errors():
    with pytest.raises(kb.InvalidArgumentError):
        kb.softmax(np.ones((2, 0), np.float32))
    assert "kb_softmax" in kb.default_context().last_error


def test_version_check_simulated_mismatch(tmp_path):
    """Imports the package with a stand-in for the compiled extension that
    reports another library version: the import must fail naming both."""
    pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(kb.__file__)))
    script = textwrap.dedent(
        f"""
        import sys, types
        fake = types.ModuleType("kernelbridge._native")
        class Lib:
            @staticmethod
            def kb_version_number():
                return 99999
        fake.lib = Lib()
        fake.ffi = None
        sys.modules["kernelbridge._native"] = fake
        sys.path.insert(0, {pkg_dir!r})
        try:
            import kernelbridge
        except ImportError as e:
            print("ImportError:", e)
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(tmp_path))
    assert "ImportError:" in res.stdout, res.stdout + res.stderr
    assert "99999" in res.stdout and str(kb.VERSION_NUMBER) in res.stdout


def test_version_constants():
    assert kb.VERSION_NUMBER == kb.VERSION[0] * 10000 + kb.VERSION[1] * 100 + kb.VERSION[2]
    assert kb.__version__ == "%d.%d.%d" % kb.VERSION
    from kernelbridge._native import lib

    assert lib.KB_VERSION_NUMBER == kb.VERSION_NUMBER == lib.kb_version_number()


def test_generated_files_have_banner():
    here = os.path.dirname(os.path.abspath(kb.__file__))
    for name in ("__init__.py", "_capi.py", "_kernels.py", "_model.py", "__init__.pyi"):
        with open(os.path.join(here, name)) as f:
            assert f.readline().startswith("# generated by tools/kbgen from core/include/kernelbridge.h; do not edit")


def test_extension_is_self_contained():
    """The extension links the library statically: no kb_ symbol is exported,
    no kernelbridge shared library is needed, and nothing of CUDA is linked
    (the CUDA backend is dlopened only when asked for)."""
    from kernelbridge import _native

    if not sys.platform.startswith("linux"):
        pytest.skip("ldd/nm are Linux tools")
    so = _native.__file__
    try:
        ldd = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
        nm = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True).stdout
        undefined = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True, text=True).stdout
    except FileNotFoundError:
        pytest.skip("ldd/nm not installed")
    assert "kernelbridge" not in ldd
    for lib in ("cuda", "cublas", "nvrtc"):
        assert lib not in ldd.lower(), ldd
    exported = [line.split()[-1] for line in nm.splitlines() if line.strip()]
    assert not [s for s in exported if s.startswith("kb_")], exported
    assert not [s for s in undefined.split() if s.startswith("cuda") or s.startswith("cu")], undefined


def test_cpu_isa_level():
    """kb.cpu_isa() names the instruction-set level of the CPU kernels; a
    lower level can be forced with KB_CPU_ISA (read once per process, so in
    a child process), and a value that is no level makes Context() fail with
    a typed error naming the variable."""
    assert kb.cpu_isa() in ("scalar", "avx2", "avx512")
    pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(kb.__file__)))
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {pkg_dir!r})
        import numpy as np, kernelbridge as kb
        print(kb.cpu_isa())
        try:
            ctx = kb.Context(threads=2)
            x = np.linspace(-3, 3, 1000, dtype=np.float32).reshape(10, 100)
            y = kb.gemm(x, x.T, ctx=ctx)
            print(y.view(np.uint32).sum(dtype=np.uint64))
        except kb.Error as e:
            print(type(e).__name__, e)
        """
    )

    def run(level):
        env = dict(os.environ, KB_CPU_ISA=level)
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        return res.stdout.split("\n", 1)

    isa, out = run("scalar")
    assert isa == "scalar"
    scalar_bits = out.strip()
    assert scalar_bits.isdigit()
    # Every level the CPU has gives the scalar level's bits.
    for level in ("avx2", "avx512"):
        isa, out = run(level)
        if out.startswith("UnsupportedError"):
            assert f"KB_CPU_ISA={level} is not supported" in out
            continue
        assert isa == level and out.strip() == scalar_bits
    isa, out = run("sse9")
    assert out.startswith("InvalidArgumentError")
    assert 'KB_CPU_ISA="sse9" is not an instruction-set level' in out
