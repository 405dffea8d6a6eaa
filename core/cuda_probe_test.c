/* cuda_probe_test.c - the public CUDA entry points with the real backend
 * library on whatever machine runs the test.
 *
 *   cuda_probe_test PATH/TO/libkernelbridge_cuda.so
 *       Without a driver or device (the build machine): every CUDA entry
 *       returns BACKEND_UNAVAILABLE and kb_last_error says which part is
 *       missing; AUTO falls back to the CPU silently.  With a GPU: device
 *       queries, a context, synchronize and a buffer round trip work.
 *   cuda_probe_test --missing-library
 *       KB_CUDA_LIBRARY names no file and no library is beside the test: the
 *       message lists the candidates the loader tried. */
#include <stdlib.h>

#include "kb_test.h"
#include "kernelbridge.h"

static const char *mode;

/* Every context-free CUDA entry fails the same way; messages carry each
 * function's own name. */
static void check_unavailable(const char *why) {
  int64_t v = -7;
  char name[64] = "unset";
  kb_context *ctx = NULL;
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_count(&v));
  CHECK_STR_CONTAINS(kb_last_error(), "kb_cuda_device_count: ");
  CHECK_STR_CONTAINS(kb_last_error(), why);
  CHECK(v == -7);
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_name(0, name, (int64_t)sizeof name));
  CHECK_STR_CONTAINS(kb_last_error(), "kb_cuda_device_name: ");
  CHECK(strcmp(name, "unset") == 0);
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_compute_capability(0, &v));
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_total_memory(0, &v));
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_free_memory(0, &v));
  CHECK(v == -7);
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_context_create_cuda(0, &ctx));
  CHECK_STR_CONTAINS(kb_last_error(), "kb_context_create_cuda: ");
  CHECK_STR_CONTAINS(kb_last_error(), why);
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_context_create(KB_BACKEND_CUDA, 0, &ctx));
  CHECK_STR_CONTAINS(kb_last_error(), "kb_context_create: ");
  CHECK_STR_CONTAINS(kb_last_error(), why);
  CHECK(ctx == NULL);
  printf("  %s\n", kb_last_error());
  CHECK_OK(kb_context_create(KB_BACKEND_AUTO, 1, &ctx));
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CPU);
  CHECK(kb_context_device(ctx) == -1);
  CHECK(strcmp(kb_last_error(), "") == 0);
  kb_context_destroy(ctx);
}

static void test_missing_library(void) {
  int64_t v = -7;
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, kb_cuda_device_count(&v));
  /* Every candidate the loader tried, with why it failed: the variable, the
   * directory of the library (here: of the program), the system path. */
  CHECK_STR_CONTAINS(kb_last_error(), "KB_CUDA_LIBRARY=/nonexistent/libkernelbridge_cuda.so: ");
  CHECK_STR_CONTAINS(kb_last_error(), "/libkernelbridge_cuda.so: ");
  CHECK_STR_CONTAINS(kb_last_error(), "libkernelbridge_cuda.so (system search path): ");
  check_unavailable("cannot load the CUDA backend (libkernelbridge_cuda.so); tried: KB_CUDA_LIBRARY=/nonexistent/");
}

static void test_with_library(void) {
  int64_t count = -1;
  kb_status s = kb_cuda_device_count(&count);
  if (s != KB_STATUS_OK) {
    /* The library loaded; the driver or a device is what is missing, and
     * the backend's message says which. */
    CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, s);
    const char *m = kb_last_error();
    CHECK(strstr(m, "driver") != NULL || strstr(m, "device") != NULL);
    CHECK(strstr(m, "cannot load the CUDA backend") == NULL);
    char why[64];
    /* Every later call reports the same remembered reason. */
    snprintf(why, sizeof why, "%s", m + strlen("kb_cuda_device_count: "));
    check_unavailable(why);
    return;
  }
  /* A GPU machine. */
  printf("  %lld CUDA device(s)\n", (long long)count);
  CHECK(count > 0);
  char name[256];
  CHECK_OK(kb_cuda_device_name(0, name, (int64_t)sizeof name));
  CHECK(name[0] != '\0');
  int64_t cc = 0, total = 0, free_bytes = 0;
  CHECK_OK(kb_cuda_device_compute_capability(0, &cc));
  CHECK_OK(kb_cuda_device_total_memory(0, &total));
  CHECK_OK(kb_cuda_device_free_memory(0, &free_bytes));
  printf("  device 0: %s, compute capability %lld, %lld bytes (%lld free)\n", name, (long long)cc,
         (long long)total, (long long)free_bytes);
  CHECK(cc >= 50 && total > 0 && free_bytes > 0 && free_bytes <= total);
  kb_context *ctx = NULL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create_cuda(count, &ctx));
  CHECK(ctx == NULL);
  if (cc < 80) return; /* the backend needs sm_80+ for contexts */
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  if (ctx == NULL) return;
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CUDA);
  CHECK(kb_context_device(ctx) == 0);
  CHECK_OK(kb_context_synchronize(ctx));
  kb_buffer *buf = NULL;
  CHECK_OK(kb_buffer_create(ctx, 1000, &buf));
  CHECK(kb_buffer_device(buf) == 0);
  unsigned char in[1000], out[1000];
  for (int i = 0; i < 1000; i++) in[i] = (unsigned char)(i * 7);
  CHECK_OK(kb_buffer_upload(ctx, buf, 0, 1000, in));
  CHECK_OK(kb_buffer_fill(ctx, buf, 10, 20, 3));
  CHECK_OK(kb_buffer_download(ctx, buf, 0, 1000, out));
  for (int i = 0; i < 1000; i++) CHECK(out[i] == ((i >= 10 && i < 30) ? 3 : (unsigned char)(i * 7)));
  /* Device memory on a CPU context is refused. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_download(NULL, buf, 0, 1, out));
  kb_context_destroy(ctx);
  kb_buffer_destroy(buf); /* after its context */
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH/TO/libkernelbridge_cuda.so | --missing-library\n", argv[0]);
    return 2;
  }
  mode = argv[1];
  if (strcmp(mode, "--missing-library") == 0) {
    setenv("KB_CUDA_LIBRARY", "/nonexistent/libkernelbridge_cuda.so", 1);
    KB_RUN(test_missing_library);
  } else {
    setenv("KB_CUDA_LIBRARY", mode, 1);
    KB_RUN(test_with_library);
  }
  return kb_test_summary();
}
