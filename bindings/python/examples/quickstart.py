"""A first use of kernelbridge: run it with the package installed, from anywhere."""

import numpy as np

import kernelbridge as kb

x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
print("kernelbridge", kb.__version__, "from", kb.__file__)
print("softmax rows sum to", kb.softmax(x).sum(axis=1))
w = np.ones(4, np.float32)
print("rmsnorm", kb.rmsnorm(x, w, eps=1e-6)[0])
a = np.arange(6, dtype=np.float32).reshape(2, 3)
print("gemm", kb.gemm(a, a, trans_b=True, alpha=1.0, beta=0.0).tolist())
with kb.Context(threads=2) as ctx:
    y = kb.silu(x, ctx=ctx)
    kb.silu(x, out=x, ctx=ctx)  # in place: the header allows alias(x)
    assert np.array_equal(x, y)
# Buffers: memory kernels use without copies (host here; device memory on a CUDA context).
buf = kb.Buffer.from_numpy(None, x)
y = kb.softmax(buf)  # a Buffer, like its input
print("softmax of a Buffer", y.numpy()[0])
h = kb.gelu_f16(x.astype(np.float16))  # float16 kernels take float16 (or uint16 bits)
print("gelu_f16", h.dtype, h[0])
if kb.cuda.is_available():
    print("CUDA device 0:", kb.cuda.device_name(0), kb.cuda.compute_capability(0))
else:
    print("CUDA not available:", kb.cuda.unavailable_reason())
try:
    kb.add(np.ones(3, np.float32), np.ones(4, np.float32))
except kb.ShapeMismatchError as e:
    print("caught:", e)
print("ok")
