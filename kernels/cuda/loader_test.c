/* loader_test.c - the core's loader (core/src/cuda_loader.c, linked from the
 * core's archive) and the table of libkernelbridge_cuda.so on any machine,
 * GPU or not: search order and messages, ABI version, a complete table
 * (appended entries included), and error translation of the device queries
 * (BACKEND_UNAVAILABLE with a message saying why when there is no driver or
 * no device).
 * Usage: loader_test PATH/TO/libkernelbridge_cuda.so */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_loader.h"

static int failures;

#define CHECK(cond, ...)                                       \
  do {                                                         \
    if (!(cond)) {                                             \
      failures++;                                              \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
      printf(__VA_ARGS__);                                     \
      printf("\n");                                            \
    }                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH/TO/libkernelbridge_cuda.so\n", argv[0]);
    return 2;
  }
  const char *lib = argv[1];
  char msg[2048];

  /* A bad $KB_CUDA_LIBRARY is reported, then the search goes on (the library
   * sits next to this program in the runfiles, or on the system path). */
  setenv(KB_CUDA_LIBRARY_ENV, "/nonexistent/libkernelbridge_cuda.so", 1);
  const struct kbcuda_table *t = kb__cuda_search(msg, sizeof msg);
  printf("bad env: %s\n", msg);
  CHECK(strstr(msg, "KB_CUDA_LIBRARY=/nonexistent/libkernelbridge_cuda.so") != NULL, "message: %s", msg);
  if (t != NULL) CHECK(strncmp(msg, "loaded ", 7) == 0, "message: %s", msg);

  /* A library without the symbol. */
  setenv(KB_CUDA_LIBRARY_ENV, "libm.so.6", 1);
  (void)kb__cuda_search(msg, sizeof msg);
  printf("wrong library: %s\n", msg);
  CHECK(strstr(msg, "no symbol kbcuda_get_table") != NULL, "message: %s", msg);

  /* The real path, once per process. */
  setenv(KB_CUDA_LIBRARY_ENV, lib, 1);
  t = kb__cuda_load(msg, sizeof msg);
  printf("load: %s\n", msg);
  CHECK(t != NULL, "kb__cuda_load failed: %s", msg);
  if (t == NULL) return 1;
  CHECK(strstr(msg, lib) != NULL && strstr(msg, "tried before: nothing") != NULL, "message: %s", msg);
  CHECK(kb__cuda_load(NULL, 0) == t, "second load returned another table");

  CHECK(t->abi_version == KBCUDA_ABI_VERSION, "abi_version %u", (unsigned)t->abi_version);
  CHECK(t->struct_size == sizeof *t, "struct_size %u, header says %zu", (unsigned)t->struct_size, sizeof *t);
  CHECK(KBCUDA_TABLE_HAS(t, dev_free_on_device), "no dev_free_on_device");
  CHECK(t->dev_free_on_device(0, NULL, msg, sizeof msg) == KBCUDA_STATUS_OK, "dev_free_on_device(NULL)");
  /* Every field after the two version words is a function pointer. */
  size_t first = offsetof(struct kbcuda_table, build_info);
  size_t nptr = (sizeof *t - first) / sizeof(void (*)(void));
  for (size_t i = 0; i < nptr; i++) {
    void (*fp)(void);
    memcpy(&fp, (const char *)t + first + i * sizeof fp, sizeof fp);
    CHECK(fp != NULL, "table entry %zu is NULL", i);
  }
  printf("build: %s\n", t->build_info());
  CHECK(strstr(t->build_info(), "sm_90") != NULL, "build_info: %s", t->build_info());

  int32_t driver = -1, runtime = -1;
  kbcuda_status s = t->versions(&driver, &runtime, msg, sizeof msg);
  CHECK(s == KBCUDA_STATUS_OK && runtime >= 13000, "versions: status %d runtime %d", (int)s, (int)runtime);
  printf("driver %d, runtime %d\n", (int)driver, (int)runtime);

  int32_t count = -1;
  msg[0] = '\0';
  s = t->device_count(&count, msg, sizeof msg);
  if (s == KBCUDA_STATUS_OK) {
    CHECK(count > 0, "count %d", (int)count);
    struct kbcuda_device_info info;
    s = t->device_info(0, &info, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_OK, "device_info: %s", msg);
    printf("device 0: %s, compute capability %d.%d, %llu bytes\n", info.name, (int)info.major, (int)info.minor,
           (unsigned long long)info.total_memory);
    kbcuda_ptr_kind kind;
    int32_t dev;
    s = t->pointer_kind(msg, &kind, &dev, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_OK && kind == KBCUDA_PTR_HOST, "pointer_kind of a stack buffer: %d %d", (int)s,
          (int)kind);
    s = t->device_info(count, &info, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_INVALID_ARGUMENT, "device_info(%d): status %d", (int)count, (int)s);
    /* Memory freed without its ctx, after the ctx is gone (kb_buffer). */
    kbcuda_ctx *ctx = NULL;
    if (info.major >= 8 && t->ctx_create(0, &ctx, msg, sizeof msg) == KBCUDA_STATUS_OK) {
      void *p = NULL;
      s = t->dev_malloc(ctx, 4096, &p);
      CHECK(s == KBCUDA_STATUS_OK && p != NULL, "dev_malloc: %s", t->ctx_message(ctx));
      t->ctx_destroy(ctx);
      s = t->dev_free_on_device(0, p, msg, sizeof msg);
      CHECK(s == KBCUDA_STATUS_OK, "dev_free_on_device: %s", msg);
    }
  } else {
    /* No GPU here: the status and a message that says why. */
    printf("no CUDA: %s\n", msg);
    CHECK(s == KBCUDA_STATUS_BACKEND_UNAVAILABLE, "device_count status %d: %s", (int)s, msg);
    CHECK(count == 0, "count %d", (int)count);
    CHECK(strstr(msg, "driver") != NULL || strstr(msg, "device") != NULL, "message: %s", msg);
    kbcuda_ctx *ctx = NULL;
    s = t->ctx_create(0, &ctx, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_BACKEND_UNAVAILABLE && ctx == NULL, "ctx_create status %d", (int)s);
    kbcuda_ptr_kind kind;
    int32_t dev;
    s = t->pointer_kind(msg, &kind, &dev, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_BACKEND_UNAVAILABLE || (s == KBCUDA_STATUS_OK && kind == KBCUDA_PTR_HOST),
          "pointer_kind status %d kind %d", (int)s, (int)kind);
    t->ctx_destroy(NULL);
    msg[0] = '\0';
    s = t->dev_free_on_device(0, msg, msg, sizeof msg);
    CHECK(s == KBCUDA_STATUS_BACKEND_UNAVAILABLE, "dev_free_on_device without a driver: status %d (%s)", (int)s, msg);
  }
  printf("%s\n", failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
