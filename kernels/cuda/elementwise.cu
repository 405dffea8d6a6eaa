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
  unsigned grid = kbcuda_blocks(n, EW_THREADS);
  if (op == KBCUDA_OP_ADD)
    binary_kernel<KBCUDA_OP_ADD, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
  else if (op == KBCUDA_OP_MUL)
    binary_kernel<KBCUDA_OP_MUL, T><<<grid, EW_THREADS, 0, stream>>>(n, (const T *)a, (const T *)b, (T *)y);
  else
    return cudaErrorInvalidValue;
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
