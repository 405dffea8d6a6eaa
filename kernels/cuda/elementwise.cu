/* elementwise.cu - silu, gelu, gelu_tanh, add, mul, scale, add_bias.
 *
 * float32: activations are evaluated in double with the formulas of
 * kernels/cpu/elementwise.c (x / (1 + exp(-x)), 0.5 x erfc(-x / sqrt 2),
 * x / (1 + exp(-2u))) and rounded once, so results differ from the CPU only
 * where CUDA's and the C library's double exp/erfc differ by an ulp of
 * double, which almost never changes the float.  add, mul, scale and
 * add_bias are one IEEE float operation each: bitwise equal to the CPU.
 * bf16/f16: the same formulas in float, rounded once to the dtype. */
#include "kbcuda_internal.cuh"

#define EW_THREADS 256

__device__ __forceinline__ double silu_d(double x) { return x / (1.0 + exp(-x)); }
__device__ __forceinline__ double gelu_d(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }
__device__ __forceinline__ double gelu_tanh_d(double x) {
  /* Intrinsics keep nvcc from contracting into FMAs: the CPU rounds every
   * product and sum (-ffp-contract=off). */
  double x3 = __dmul_rn(__dmul_rn(__dmul_rn(0.044715, x), x), x);
  double u = __dmul_rn(0.79788456080286535588, __dadd_rn(x, x3));
  return x / (1.0 + exp(-2.0 * u));
}
__device__ __forceinline__ float silu_f(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float gelu_f(float x) { return 0.5f * x * erfcf(-x * 0.70710678118654752440f); }
__device__ __forceinline__ float gelu_tanh_f(float x) {
  float u = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}

template <int OP>
__device__ __forceinline__ float act(float x) {
  /* float32 in, float32 out: the double formulas (CPU semantics). */
  double d = (double)x;
  return (float)(OP == KBCUDA_OP_SILU ? silu_d(d) : OP == KBCUDA_OP_GELU ? gelu_d(d) : gelu_tanh_d(d));
}
template <int OP>
__device__ __forceinline__ float act_lowp(float x) {
  return OP == KBCUDA_OP_SILU ? silu_f(x) : OP == KBCUDA_OP_GELU ? gelu_f(x) : gelu_tanh_f(x);
}

template <int OP, typename T>
__global__ void unary_kernel(int64_t n, const T *__restrict__ x, T *y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float v = kb_dt<T>::load(x + i);
    kb_dt<T>::store(y + i, sizeof(T) == 4 ? act<OP>(v) : act_lowp<OP>(v));
  }
}

/* Packs of four elements: when every pointer of a call is aligned to four
 * elements, each thread step moves one 16-byte (float) or 8-byte (16-bit)
 * word per tensor instead of four scalars, which a 16-bit kernel needs to
 * come near copy bandwidth.  Each element still gets exactly the scalar
 * kernel's arithmetic (same bits); the last n % 4 elements go to the first
 * threads of block 0.  In place (y == x) works as in the scalar kernels: a
 * thread reads its elements before it writes them. */
template <typename T>
struct alignas(4 * sizeof(T)) pack4 {
  T e[4];
};
template <typename T>
static bool aligned4(const void *p) {
  return (uintptr_t)p % (4 * sizeof(T)) == 0;
}

template <int OP, typename T>
__global__ void unary_kernel4(int64_t n, const T *x, T *y) {
  const int64_t packs = n / 4;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (int64_t)gridDim.x * blockDim.x) {
    pack4<T> v = ((const pack4<T> *)x)[i], r;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      float f = kb_dt<T>::load(&v.e[k]);
      kb_dt<T>::store(&r.e[k], sizeof(T) == 4 ? act<OP>(f) : act_lowp<OP>(f));
    }
    ((pack4<T> *)y)[i] = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
    int64_t i = packs * 4 + threadIdx.x;
    float f = kb_dt<T>::load(x + i);
    kb_dt<T>::store(y + i, sizeof(T) == 4 ? act<OP>(f) : act_lowp<OP>(f));
  }
}

template <int OP, typename T>
__device__ __forceinline__ float binary_op(float a, float b) {
  return OP == KBCUDA_OP_ADD ? __fadd_rn(a, b) : __fmul_rn(a, b);
}

template <int OP, typename T>
__global__ void binary_kernel4(int64_t n, const T *a, const T *b, T *y) {
  const int64_t packs = n / 4;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (int64_t)gridDim.x * blockDim.x) {
    pack4<T> va = ((const pack4<T> *)a)[i], vb = ((const pack4<T> *)b)[i], r;
#pragma unroll
    for (int k = 0; k < 4; k++)
      kb_dt<T>::store(&r.e[k], binary_op<OP, T>(kb_dt<T>::load(&va.e[k]), kb_dt<T>::load(&vb.e[k])));
    ((pack4<T> *)y)[i] = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
    int64_t i = packs * 4 + threadIdx.x;
    kb_dt<T>::store(y + i, binary_op<OP, T>(kb_dt<T>::load(a + i), kb_dt<T>::load(b + i)));
  }
}

template <typename T>
__global__ void scale_kernel4(int64_t n, float alpha, const T *x, T *y) {
  const int64_t packs = n / 4;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < packs; i += (int64_t)gridDim.x * blockDim.x) {
    pack4<T> v = ((const pack4<T> *)x)[i], r;
#pragma unroll
    for (int k = 0; k < 4; k++) kb_dt<T>::store(&r.e[k], __fmul_rn(alpha, kb_dt<T>::load(&v.e[k])));
    ((pack4<T> *)y)[i] = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
    int64_t i = packs * 4 + threadIdx.x;
    kb_dt<T>::store(y + i, __fmul_rn(alpha, kb_dt<T>::load(x + i)));
  }
}

/* y may alias a or b exactly: each element is read before it is written by
 * the same thread. */
template <int OP, typename T>
__global__ void binary_kernel(int64_t n, const T *a, const T *b, T *y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float va = kb_dt<T>::load(a + i), vb = kb_dt<T>::load(b + i);
    kb_dt<T>::store(y + i, OP == KBCUDA_OP_ADD ? __fadd_rn(va, vb) : __fmul_rn(va, vb));
  }
}

template <typename T>
__global__ void scale_kernel(int64_t n, float alpha, const T *x, T *y) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    kb_dt<T>::store(y + i, __fmul_rn(alpha, kb_dt<T>::load(x + i)));
}

template <typename T>
__global__ void add_bias_kernel(int64_t rows, int64_t cols, const T *x, const T *__restrict__ bias, T *y) {
  int64_t n = rows * cols;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    kb_dt<T>::store(y + i, __fadd_rn(kb_dt<T>::load(x + i), kb_dt<T>::load(bias + i % cols)));
}

template <int OP, typename T>
static cudaError_t unary_launch(int64_t n, const void *x, void *y, cudaStream_t stream) {
  if (n >= 4 && aligned4<T>(x) && aligned4<T>(y))
    unary_kernel4<OP, T><<<kbcuda_blocks(n / 4, EW_THREADS), EW_THREADS, 0, stream>>>(n, (const T *)x, (T *)y);
  else
    unary_kernel<OP, T><<<kbcuda_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(n, (const T *)x, (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

template <typename T>
static cudaError_t unary_dt(int op, int64_t n, const void *x, void *y, cudaStream_t stream) {
  switch (op) {
    case KBCUDA_OP_SILU:
      return unary_launch<KBCUDA_OP_SILU, T>(n, x, y, stream);
    case KBCUDA_OP_GELU:
      return unary_launch<KBCUDA_OP_GELU, T>(n, x, y, stream);
    case KBCUDA_OP_GELU_TANH:
      return unary_launch<KBCUDA_OP_GELU_TANH, T>(n, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t kbcuda_unary(int op, int dt, int64_t n, const void *x, void *y, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return unary_dt<float>(op, n, x, y, stream);
    case KBCUDA_BF16:
      return unary_dt<__nv_bfloat16>(op, n, x, y, stream);
    case KBCUDA_F16:
      return unary_dt<__half>(op, n, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
static cudaError_t binary_dt(int op, int64_t n, const void *a, const void *b, void *y, cudaStream_t stream) {
  if (op != KBCUDA_OP_ADD && op != KBCUDA_OP_MUL) return cudaErrorInvalidValue;
  if (n >= 4 && aligned4<T>(a) && aligned4<T>(b) && aligned4<T>(y)) {
    unsigned grid = kbcuda_blocks(n / 4, EW_THREADS);
    if (op == KBCUDA_OP_ADD)
      binary_kernel4<KBCUDA_OP_ADD, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
    else
      binary_kernel4<KBCUDA_OP_MUL, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
  } else {
    unsigned grid = kbcuda_blocks(n, EW_THREADS);
    if (op == KBCUDA_OP_ADD)
      binary_kernel<KBCUDA_OP_ADD, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
    else
      binary_kernel<KBCUDA_OP_MUL, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
  }
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_binary(int op, int dt, int64_t n, const void *a, const void *b, void *y, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return binary_dt<float>(op, n, a, b, y, stream);
    case KBCUDA_BF16:
      return binary_dt<__nv_bfloat16>(op, n, a, b, y, stream);
    case KBCUDA_F16:
      return binary_dt<__half>(op, n, a, b, y, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
static cudaError_t scale_dt(int64_t n, float alpha, const void *x, void *y, cudaStream_t stream) {
  if (n >= 4 && aligned4<T>(x) && aligned4<T>(y))
    scale_kernel4<T><<<kbcuda_blocks(n / 4, EW_THREADS), EW_THREADS, 0, stream>>>(n, alpha, (const T *)x, (T *)y);
  else
    scale_kernel<T><<<kbcuda_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(n, alpha, (const T *)x, (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_scale(int dt, int64_t n, float alpha, const void *x, void *y, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return scale_dt<float>(n, alpha, x, y, stream);
    case KBCUDA_BF16:
      return scale_dt<__nv_bfloat16>(n, alpha, x, y, stream);
    case KBCUDA_F16:
      return scale_dt<__half>(n, alpha, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
static cudaError_t add_bias_dt(int64_t rows, int64_t cols, const void *x, const void *bias, void *y,
                               cudaStream_t stream) {
  add_bias_kernel<T><<<kbcuda_blocks(rows * cols, EW_THREADS), EW_THREADS, 0, stream>>>(
      rows, cols, (const T *)x, (const T *)bias, (T *)y);
  KBCUDA_CHECK_LAUNCH();
  return cudaSuccess;
}

cudaError_t kbcuda_add_bias(int dt, int64_t rows, int64_t cols, const void *x, const void *bias, void *y,
                            cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dt) {
    case KBCUDA_F32:
      return add_bias_dt<float>(rows, cols, x, bias, y, stream);
    case KBCUDA_BF16:
      return add_bias_dt<__nv_bfloat16>(rows, cols, x, bias, y, stream);
    case KBCUDA_F16:
      return add_bias_dt<__half>(rows, cols, x, bias, y, stream);
  }
  return cudaErrorInvalidValue;
}
