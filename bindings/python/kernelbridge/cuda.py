"""CUDA devices: kernelbridge.cuda.

The CUDA kernels live in an optional library, libkernelbridge_cuda.so,
loaded the first time CUDA is asked for ($KB_CUDA_LIBRARY, then the
directory of kernelbridge's extension module, then the system search path).
It needs an NVIDIA driver for CUDA 13 and a device of compute capability 8.0
or newer.  When any part is missing, device_count() is 0, is_available() is
False and unavailable_reason() says what is missing; the other functions
(and Context("cuda")) raise BackendUnavailableError with that message.

    import kernelbridge as kb
    if kb.cuda.is_available():
        with kb.Context("cuda", 0) as ctx:
            x = kb.Buffer.from_numpy(ctx, host_array)
            y = kb.softmax(x, ctx=ctx)        # a Buffer on device 0
            print(kb.cuda.device_name(0), y.numpy())
"""

from typing import Optional, Tuple

from . import _capi
from ._interop import ArgumentTypeError
from ._model import BackendUnavailableError

__all__ = [
    "compute_capability",
    "device_count",
    "device_name",
    "free_memory",
    "is_available",
    "total_memory",
    "unavailable_reason",
]


def _device(device) -> int:
    if isinstance(device, bool) or not (isinstance(device, int) or hasattr(device, "__index__")):
        raise ArgumentTypeError(f"kernelbridge.cuda: device must be an int, got {type(device).__name__}")
    return int(device.__index__())


def device_count() -> int:
    """Number of CUDA devices kernelbridge can use; 0 when CUDA cannot be used
    (see unavailable_reason())."""
    try:
        return _capi.cuda_device_count()
    except BackendUnavailableError:
        return 0


def is_available() -> bool:
    """True when a CUDA context can be made on device 0."""
    return device_count() > 0


def unavailable_reason() -> Optional[str]:
    """None when CUDA is usable, else the library's message saying which part
    is missing (backend library, NVIDIA driver, device)."""
    try:
        _capi.cuda_device_count()
    except BackendUnavailableError as e:
        return e.message
    return None


def device_name(device: int = 0) -> str:
    """Name of a CUDA device, such as "NVIDIA H100 80GB HBM3"."""
    return _capi.cuda_device_name(_device(device))


def compute_capability(device: int = 0) -> Tuple[int, int]:
    """Compute capability of a CUDA device as (major, minor), e.g. (9, 0)."""
    cc = _capi.cuda_device_compute_capability(_device(device))
    return (cc // 10, cc % 10)


def total_memory(device: int = 0) -> int:
    """Total memory of a CUDA device in bytes."""
    return _capi.cuda_device_total_memory(_device(device))


def free_memory(device: int = 0) -> int:
    """Memory of a CUDA device that is free now, in bytes."""
    return _capi.cuda_device_free_memory(_device(device))
