/* runtime.cu - error translation, devices, per-context streams and device
 * memory of the CUDA backend (host code only, plus a probe kernel).
 *
 * Error translation (kbcuda_translate):
 *   no driver, driver too old, stub driver, no device, devices busy, no code
 *   for the device                     -> BACKEND_UNAVAILABLE, message says which
 *   cudaErrorMemoryAllocation          -> OUT_OF_MEMORY
 *   sticky errors (illegal address, launch failure, ...)
 *                                      -> DEVICE_LOST (the ctx latches it)
 *   cudaErrorNotSupported              -> UNSUPPORTED
 *   anything else                      -> DEVICE_ERROR */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kbcuda_runtime.cuh"

void kbcuda_msg(char *msg, size_t cap, const char *fmt, ...) {
  if (msg == NULL || cap == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, cap, fmt, ap);
  va_end(ap);
}

bool kbcuda_is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

static bool is_unavailable(cudaError_t e) {
  switch (e) {
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidDevice:
      return true;
    default:
      return false;
  }
}

/* Says why CUDA cannot be used: no driver at all, a driver too old for this
 * runtime, no device, ... */
static void describe_unavailable(cudaError_t e, char *buf, size_t cap) {
  int runtime = CUDART_VERSION, driver = 0;
  cudaDriverGetVersion(&driver); /* 0 without a usable driver */
  if (e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError || e == cudaErrorStubLibrary ||
      e == cudaErrorSystemDriverMismatch) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h == NULL) {
      const char *why = dlerror();
      kbcuda_msg(buf, cap, "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)", why != NULL ? why : "not found");
      return;
    }
    dlclose(h);
    if (e == cudaErrorStubLibrary) {
      kbcuda_msg(buf, cap, "libcuda.so.1 is the CUDA toolkit's stub library, not an NVIDIA driver");
      return;
    }
    if (driver > 0 && driver < runtime) {
      kbcuda_msg(buf, cap, "the NVIDIA driver supports CUDA %d.%d but the CUDA backend needs CUDA %d.%d; update the driver",
                 driver / 1000, (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
      return;
    }
    kbcuda_msg(buf, cap, "the NVIDIA driver could not be initialised: %s (%s)", cudaGetErrorName(e),
               cudaGetErrorString(e));
    return;
  }
  if (e == cudaErrorNoDevice) {
    kbcuda_msg(buf, cap, "no CUDA device (NVIDIA driver for CUDA %d.%d present; check CUDA_VISIBLE_DEVICES)",
               driver / 1000, (driver % 1000) / 10);
    return;
  }
  if (e == cudaErrorDevicesUnavailable) {
    kbcuda_msg(buf, cap, "every CUDA device is busy or unavailable (compute mode exclusive or prohibited)");
    return;
  }
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
    kbcuda_msg(buf, cap, "the CUDA backend has no code for this device (built for sm_80, sm_90 and compute_90 PTX): %s",
               cudaGetErrorName(e));
    return;
  }
  kbcuda_msg(buf, cap, "CUDA is not available: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
}

kbcuda_status kbcuda_translate(cudaError_t e, const char *fn, const char *what, char *msg, size_t cap) {
  if (e == cudaSuccess) return KBCUDA_STATUS_OK;
  char detail[200];
  const char *pre = fn != NULL ? fn : "", *sep = fn != NULL ? ": " : "";
  if (is_unavailable(e)) {
    describe_unavailable(e, detail, sizeof detail);
    kbcuda_msg(msg, cap, "%s%s%s", pre, sep, detail);
    return KBCUDA_STATUS_BACKEND_UNAVAILABLE;
  }
  if (e == cudaErrorMemoryAllocation) {
    kbcuda_msg(msg, cap, "%s%sout of device memory in %s", pre, sep, what);
    return KBCUDA_STATUS_OUT_OF_MEMORY;
  }
  if (kbcuda_is_sticky(e)) {
    kbcuda_msg(msg, cap, "%s%sdevice lost: %s (%s) in %s; the CUDA context of this process is unusable", pre, sep,
               cudaGetErrorName(e), cudaGetErrorString(e), what);
    return KBCUDA_STATUS_DEVICE_LOST;
  }
  if (e == cudaErrorNotSupported) {
    kbcuda_msg(msg, cap, "%s%s%s is not supported on this device: %s", pre, sep, what, cudaGetErrorString(e));
    return KBCUDA_STATUS_UNSUPPORTED;
  }
  kbcuda_msg(msg, cap, "%s%sCUDA error in %s: %s (%s)", pre, sep, what, cudaGetErrorName(e), cudaGetErrorString(e));
  return KBCUDA_STATUS_DEVICE_ERROR;
}

/* ---- per-context plumbing used by every entry ---- */

kbcuda_status kbcuda_enter(kbcuda_ctx *c, const char *fn) {
  c->message[0] = '\0';
  if (c->lost) {
    kbcuda_msg(c->message, sizeof c->message,
               "%s: device lost earlier on this context; destroy it (and restart the process to use CUDA again)",
               fn != NULL ? fn : "kbcuda");
    return KBCUDA_STATUS_DEVICE_LOST;
  }
  cudaError_t e = cudaSetDevice(c->device);
  if (e != cudaSuccess) return kbcuda_leave(c, fn, "cudaSetDevice", e);
  return KBCUDA_STATUS_OK;
}

kbcuda_status kbcuda_leave(kbcuda_ctx *c, const char *fn, const char *what, cudaError_t e) {
  if (e == cudaSuccess) return KBCUDA_STATUS_OK;
  kbcuda_status s = kbcuda_translate(e, fn, what, c->message, sizeof c->message);
  if (s == KBCUDA_STATUS_DEVICE_LOST) c->lost = 1;
  return s;
}

/* ---- devices ---- */

kbcuda_status kbcuda_device_count(int32_t *count, char *msg, size_t cap) {
  int n = 0;
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return kbcuda_translate(e, NULL, "cudaGetDeviceCount", msg, cap);
  }
  if (n == 0) return kbcuda_translate(cudaErrorNoDevice, NULL, "cudaGetDeviceCount", msg, cap);
  *count = n;
  return KBCUDA_STATUS_OK;
}

static kbcuda_status check_device(int32_t device, char *msg, size_t cap) {
  int32_t n;
  kbcuda_status s = kbcuda_device_count(&n, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  if (device < 0 || device >= n) {
    kbcuda_msg(msg, cap, "device %d does not exist (%d CUDA device%s)", (int)device, (int)n, n == 1 ? "" : "s");
    return KBCUDA_STATUS_INVALID_ARGUMENT;
  }
  return KBCUDA_STATUS_OK;
}

kbcuda_status kbcuda_device_info(int32_t device, struct kbcuda_device_info *info, char *msg, size_t cap) {
  memset(info, 0, sizeof *info);
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) return kbcuda_translate(e, NULL, "cudaGetDeviceProperties", msg, cap);
  snprintf(info->name, sizeof info->name, "%s", p.name);
  info->major = p.major;
  info->minor = p.minor;
  info->multiprocessors = p.multiProcessorCount;
  info->pci_bus_id = p.pciBusID;
  info->total_memory = (uint64_t)p.totalGlobalMem;
  return KBCUDA_STATUS_OK;
}

kbcuda_status kbcuda_device_memory(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes, char *msg,
                                   size_t cap) {
  *free_bytes = *total_bytes = 0;
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  int previous = 0;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess) e = cudaSetDevice(device);
  size_t f = 0, t = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&f, &t);
  cudaSetDevice(previous); /* leave the caller's current device as it was */
  if (e != cudaSuccess) return kbcuda_translate(e, NULL, "cudaMemGetInfo", msg, cap);
  *free_bytes = f;
  *total_bytes = t;
  return KBCUDA_STATUS_OK;
}

kbcuda_status kbcuda_versions(int32_t *driver, int32_t *runtime, char *msg, size_t cap) {
  int d = 0, r = 0;
  *driver = *runtime = 0;
  cudaError_t e = cudaRuntimeGetVersion(&r);
  if (e != cudaSuccess) return kbcuda_translate(e, NULL, "cudaRuntimeGetVersion", msg, cap);
  cudaDriverGetVersion(&d);
  *driver = d;
  *runtime = r;
  return KBCUDA_STATUS_OK;
}

/* ---- contexts ---- */

__global__ void probe_kernel(int *flag) {
  if (flag != NULL) *flag = 1;
}

kbcuda_status kbcuda_ctx_create(int32_t device, kbcuda_ctx **out, char *msg, size_t cap) {
  *out = NULL;
  kbcuda_status s = check_device(device, msg, cap);
  if (s != KBCUDA_STATUS_OK) return s;
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) return kbcuda_translate(e, NULL, "cudaGetDeviceProperties", msg, cap);
  if (p.major < 8) {
    kbcuda_msg(msg, cap,
               "device %d (%s) has compute capability %d.%d; the CUDA backend needs 8.0 or newer (built for sm_80, "
               "sm_90 and compute_90 PTX)",
               (int)device, p.name, p.major, p.minor);
    return KBCUDA_STATUS_BACKEND_UNAVAILABLE;
  }
  kbcuda_ctx *c = (kbcuda_ctx *)calloc(1, sizeof *c);
  if (c == NULL) {
    kbcuda_msg(msg, cap, "out of host memory");
    return KBCUDA_STATUS_OUT_OF_MEMORY;
  }
  c->device = device;
  c->gemm_impl = KBCUDA_GEMM_AUTO;
  c->last_gemm_impl = KBCUDA_GEMM_AUTO;
  e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) {
    /* A first launch proves that the device runs this library's code (cubin
     * for sm_8x/sm_90, PTX JIT for newer) before any real kernel is queued. */
    probe_kernel<<<1, 1, 0, c->stream>>>(NULL);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
  }
  if (e != cudaSuccess) {
    s = kbcuda_translate(e, NULL, "creating the context", msg, cap);
    if (c->stream != NULL) cudaStreamDestroy(c->stream);
    free(c);
    return s;
  }
  *out = c;
  return KBCUDA_STATUS_OK;
}

void kbcuda_ctx_destroy(kbcuda_ctx *c) {
  if (c == NULL) return;
  if (cudaSetDevice(c->device) == cudaSuccess) {
    if (!c->lost) cudaStreamSynchronize(c->stream);
    kbcuda_gemm_release(c->lt_handle, c->lt_workspace);
    if (c->stream != NULL) cudaStreamDestroy(c->stream);
  }
  (void)cudaGetLastError();
  free(c);
}

kbcuda_status kbcuda_ctx_synchronize(kbcuda_ctx *c) {
  kbcuda_status s = kbcuda_enter(c, "kbcuda_ctx_synchronize");
  if (s != KBCUDA_STATUS_OK) return s;
  return kbcuda_leave(c, NULL, "the queued kernels (stream synchronize)", cudaStreamSynchronize(c->stream));
}

/* ---- memory ---- */

kbcuda_status kbcuda_dev_malloc(kbcuda_ctx *c, size_t bytes, void **out) {
  *out = NULL;
  kbcuda_status s = kbcuda_enter(c, "kbcuda_malloc");
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  cudaError_t e = cudaMalloc(out, bytes);
  if (e != cudaSuccess) {
    *out = NULL;
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      kbcuda_msg(c->message, sizeof c->message, "out of device memory allocating %zu bytes on device %d", bytes,
                 c->device);
      return KBCUDA_STATUS_OUT_OF_MEMORY;
    }
  }
  return kbcuda_leave(c, NULL, "cudaMalloc", e);
}

kbcuda_status kbcuda_dev_free(kbcuda_ctx *c, void *ptr) {
  if (ptr == NULL) return KBCUDA_STATUS_OK;
  kbcuda_status s = kbcuda_enter(c, "kbcuda_free");
  if (s != KBCUDA_STATUS_OK) return s;
  cudaError_t e = cudaStreamSynchronize(c->stream);
  if (e == cudaSuccess) e = cudaFree(ptr);
  return kbcuda_leave(c, NULL, "cudaFree", e);
}

static kbcuda_status copy(kbcuda_ctx *c, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, bool sync,
                          const char *what) {
  kbcuda_status s = kbcuda_enter(c, what);
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, c->stream);
  if (e == cudaSuccess && sync) e = cudaStreamSynchronize(c->stream);
  return kbcuda_leave(c, NULL, what, e);
}

kbcuda_status kbcuda_memcpy_h2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  /* Synchronous: the host buffer may be reused (or freed) on return. */
  return copy(c, dst, src, bytes, cudaMemcpyHostToDevice, true, "memcpy host to device");
}
kbcuda_status kbcuda_memcpy_d2h(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  return copy(c, dst, src, bytes, cudaMemcpyDeviceToHost, true, "memcpy device to host");
}
kbcuda_status kbcuda_memcpy_d2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes) {
  return copy(c, dst, src, bytes, cudaMemcpyDeviceToDevice, false, "memcpy device to device");
}

kbcuda_status kbcuda_dev_memset(kbcuda_ctx *c, void *dst, int32_t byte, size_t bytes) {
  kbcuda_status s = kbcuda_enter(c, "kbcuda_memset");
  if (s != KBCUDA_STATUS_OK || bytes == 0) return s;
  return kbcuda_leave(c, NULL, "cudaMemsetAsync", cudaMemsetAsync(dst, byte, bytes, c->stream));
}

kbcuda_status kbcuda_dev_free_on_device(int32_t device, void *ptr, char *msg, size_t cap) {
  if (ptr == NULL) return KBCUDA_STATUS_OK;
  /* Called from whatever thread destroys a kb_buffer, possibly after its
   * context is gone: switch to the memory's device for cudaFree (which waits
   * for the device) and give the caller its current device back. */
  int previous = -1;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess) e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaFree(ptr);
  if (previous >= 0) cudaSetDevice(previous);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* a non-sticky error must not leak into the next call */
    return kbcuda_translate(e, NULL, "cudaFree", msg, cap);
  }
  return KBCUDA_STATUS_OK;
}

kbcuda_status kbcuda_pointer_kind(const void *ptr, kbcuda_ptr_kind *kind, int32_t *device, char *msg, size_t cap) {
  *kind = KBCUDA_PTR_HOST;
  *device = -1;
  if (ptr == NULL) return KBCUDA_STATUS_OK;
  cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  if (e == cudaErrorInvalidValue) { /* some drivers report unregistered host memory this way */
    (void)cudaGetLastError();
    return KBCUDA_STATUS_OK;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return kbcuda_translate(e, NULL, "cudaPointerGetAttributes", msg, cap);
  }
  switch (a.type) {
    case cudaMemoryTypeHost:
      *kind = KBCUDA_PTR_HOST_PINNED;
      break;
    case cudaMemoryTypeDevice:
      *kind = KBCUDA_PTR_DEVICE;
      break;
    case cudaMemoryTypeManaged:
      *kind = KBCUDA_PTR_MANAGED;
      break;
    default:
      *kind = KBCUDA_PTR_HOST;
      return KBCUDA_STATUS_OK;
  }
  *device = a.device;
  return KBCUDA_STATUS_OK;
}
