/* kbcuda_runtime.cuh - host-side helpers shared by runtime.cu and table.cu:
 * message formatting, CUDA error translation and the per-context entry and
 * exit of every table function.  Internal to kernels/cuda. */
#ifndef KBCUDA_RUNTIME_CUH
#define KBCUDA_RUNTIME_CUH

#include "kbcuda_internal.cuh"

#define KBCUDA_STR_(x) #x
#define KBCUDA_STR(x) KBCUDA_STR_(x)

void kbcuda_msg(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool kbcuda_is_sticky(cudaError_t e);
/* Maps e to a kbcuda_status and writes "<fn>: <explanation>" to msg. */
kbcuda_status kbcuda_translate(cudaError_t e, const char *fn, const char *what, char *msg, size_t cap);
/* Clears the message, refuses a lost ctx, makes its device current. */
kbcuda_status kbcuda_enter(kbcuda_ctx *c, const char *fn);
/* Translates e into c's message; latches lost after a sticky error. */
kbcuda_status kbcuda_leave(kbcuda_ctx *c, const char *fn, const char *what, cudaError_t e);

kbcuda_status kbcuda_device_count(int32_t *count, char *msg, size_t cap);
kbcuda_status kbcuda_device_info(int32_t device, struct kbcuda_device_info *info, char *msg, size_t cap);
kbcuda_status kbcuda_device_memory(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes, char *msg,
                                   size_t cap);
kbcuda_status kbcuda_versions(int32_t *driver, int32_t *runtime, char *msg, size_t cap);
kbcuda_status kbcuda_ctx_create(int32_t device, kbcuda_ctx **out, char *msg, size_t cap);
void kbcuda_ctx_destroy(kbcuda_ctx *c);
kbcuda_status kbcuda_ctx_synchronize(kbcuda_ctx *c);
kbcuda_status kbcuda_dev_malloc(kbcuda_ctx *c, size_t bytes, void **out);
kbcuda_status kbcuda_dev_free(kbcuda_ctx *c, void *ptr);
/* Frees ptr on `device` without a ctx (table entry dev_free_on_device). */
kbcuda_status kbcuda_dev_free_on_device(int32_t device, void *ptr, char *msg, size_t cap);
kbcuda_status kbcuda_memcpy_h2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes);
kbcuda_status kbcuda_memcpy_d2h(kbcuda_ctx *c, void *dst, const void *src, size_t bytes);
kbcuda_status kbcuda_memcpy_d2d(kbcuda_ctx *c, void *dst, const void *src, size_t bytes);
kbcuda_status kbcuda_dev_memset(kbcuda_ctx *c, void *dst, int32_t byte, size_t bytes);
kbcuda_status kbcuda_pointer_kind(const void *ptr, kbcuda_ptr_kind *kind, int32_t *device, char *msg, size_t cap);

#endif /* KBCUDA_RUNTIME_CUH */
