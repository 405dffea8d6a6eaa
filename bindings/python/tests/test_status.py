"""Status codes become typed exceptions in one place (the generated
_capi.check), for kernels and for calls without a context alike.
DEVICE_LOST cannot happen without a GPU, so it is simulated."""

import numpy as np
import pytest

import kernelbridge as kb
from kernelbridge import _capi, _kernels, _runtime


def test_every_status_has_its_class():
    assert kb.Status.DEVICE_LOST == 8
    assert kb.status_string(8) == "DEVICE_LOST"
    assert kb._model.ERRORS[8] is kb.DeviceLostError
    assert issubclass(kb.DeviceLostError, kb.Error)
    assert not issubclass(kb.DeviceLostError, ValueError)
    assert kb.DeviceLostError.status is kb.Status.DEVICE_LOST
    for status in kb.Status:
        if status:
            assert kb._model.ERRORS[status].status is status
            assert kb.status_string(status) == status.name


def test_check_maps_status_8_with_context_message():
    ctx = kb.Context()
    _capi.check(0, "kb_x", ctx._ptr)  # OK: nothing
    with pytest.raises(kb.DeviceLostError) as e:
        _capi.check(8, "kb_x", ctx._ptr)
    # A fresh context has no message: the fallback names the call and the status.
    assert e.value.message == "kb_x: DEVICE_LOST"
    assert e.value.status is kb.Status.DEVICE_LOST
    with pytest.raises(kb.Error) as e:
        _capi.check(99, "kb_x", None)  # a status this version does not know
    assert type(e.value) is kb.Error and e.value.status == 99 and "UNKNOWN" in e.value.message


def test_check_without_context_reads_the_thread_message():
    if kb.cuda.is_available():
        pytest.skip("needs a machine where CUDA is unavailable")
    with pytest.raises(kb.BackendUnavailableError):
        kb.cuda.device_name(0)
    with pytest.raises(kb.DeviceLostError) as e:
        _capi.check(8, "kb_cuda_device_name", _capi.THREAD)
    assert e.value.message == kb.last_error() and e.value.message.startswith("kb_cuda_device_name: ")


@pytest.mark.parametrize("slow", [False, True])
def test_kernel_status_8_raises_device_lost(monkeypatch, slow):
    """The generated Python path (numpy and Buffer arguments) turns status 8
    into DeviceLostError and writes nothing.  The C fast path is off here: it
    hands every failed status to this path (test_fastcall.py)."""
    monkeypatch.setattr(_kernels, "_V_softmax", _kernels._V_softmax._replace(c=lambda *args: 8))
    ctx = kb.Context()
    x = np.ones((2, 3), np.float32)
    out = np.full((2, 3), 7, np.float32)
    arg = kb.Buffer.from_numpy(ctx, x) if slow else x
    was = _runtime.fast_enabled(False)
    try:
        with pytest.raises(kb.DeviceLostError, match="softmax: DEVICE_LOST"):
            kb.softmax(arg, out=out, ctx=ctx)
    finally:
        _runtime.fast_enabled(was)
    assert (out == 7).all()


def test_every_c_function_is_wrapped():
    """Each kb_ function of the header is a generated function: a kernel in
    _kernels or a thin wrapper in _capi (74 in version 0.2.0)."""
    from kernelbridge._native import lib

    names = sorted(n for n in dir(lib) if n.startswith("kb_"))
    assert len(names) >= 74
    missing = [n for n in names if not (hasattr(_kernels, n[3:]) or hasattr(_capi, n[3:]))]
    assert not missing
    for n in names:
        fn = getattr(_kernels, n[3:], None) or getattr(_capi, n[3:])
        assert f"C function: {n}." in fn.__doc__


def test_capi_wrappers_none_is_null_and_out_values_are_returned():
    assert _capi.context_num_threads(None) == 1
    assert _capi.context_device(None) == -1
    assert _capi.context_last_error(None) == ""
    _capi.context_destroy(None)
    _capi.context_synchronize(None)
    ctx = _capi.context_create(kb.Backend.CPU, 1)
    try:
        buf = _capi.buffer_create(ctx, 8)
        assert _capi.buffer_size(buf) == 8 and _capi.buffer_device(buf) == -1
        assert isinstance(_capi.buffer_data(buf), int) and _capi.buffer_data(buf) % 64 == 0
        _capi.buffer_fill(ctx, buf, 0, 8, 0xAB)
        got = bytearray(8)
        _capi.buffer_download(ctx, buf, 0, 8, got)
        assert got == b"\xab" * 8
        with pytest.raises(kb.InvalidArgumentError) as e:
            _capi.buffer_fill(ctx, buf, 4, 8, 0)
        assert e.value.message.startswith("kb_buffer_fill: ") and e.value.message == _capi.context_last_error(ctx)
        _capi.buffer_destroy(buf)
        _capi.buffer_destroy(None)
    finally:
        _capi.context_destroy(ctx)
