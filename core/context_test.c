/* context_test.c - creation, queries and destruction of kb_context. */
#include <unistd.h>

#include "kb_test.h"
#include "kernelbridge.h"

/* A pointer value no allocation returns: checks that failures leave *out alone. */
#define SENTINEL ((kb_context *)(uintptr_t)0x5a5a5a50u)

static int64_t online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int64_t)n : 1;
}

static void test_create_cpu_and_destroy(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 3, &ctx));
  CHECK(ctx != NULL);
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CPU);
  CHECK(kb_context_num_threads(ctx) == 3);
  kb_context_destroy(ctx);
}

static void test_one_thread(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  CHECK(kb_context_num_threads(ctx) == 1);
  kb_context_destroy(ctx);
}

static void test_destroy_null(void) { kb_context_destroy(NULL); }

static void test_null_context_queries(void) {
  CHECK(kb_context_backend(NULL) == KB_BACKEND_CPU);
  CHECK(kb_context_num_threads(NULL) == 1);
  CHECK(kb_context_last_error(NULL) != NULL);
  CHECK(strcmp(kb_context_last_error(NULL), "") == 0);
}

/* This test has no libkernelbridge_cuda.so beside it (cuda_probe_test has),
 * so CUDA is normally unavailable; a machine with the library installed on
 * the system search path and a GPU must give a working CUDA context. */
static void test_cuda_context(void) {
  kb_context *ctx = SENTINEL;
  kb_status s = kb_context_create(KB_BACKEND_CUDA, 1, &ctx);
  if (s == KB_STATUS_OK) {
    CHECK(kb_context_backend(ctx) == KB_BACKEND_CUDA);
    CHECK(kb_context_device(ctx) == 0);
    CHECK(strcmp(kb_last_error(), "") == 0);
    kb_context_destroy(ctx);
    return;
  }
  CHECK_STATUS(KB_STATUS_BACKEND_UNAVAILABLE, s);
  CHECK(ctx == SENTINEL);
  /* The message names the call and what is missing: the library (with every
   * place the loader looked) or the driver/device. */
  CHECK_STR_CONTAINS(kb_last_error(), "kb_context_create: ");
  printf("  CUDA unavailable: %s\n", kb_last_error());
}

static void test_auto_falls_back_to_cpu(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_AUTO, 2, &ctx));
  CHECK(ctx != NULL);
  /* Never reported as AUTO; the fallback is silent. */
  kb_backend b = kb_context_backend(ctx);
  CHECK(b == KB_BACKEND_CPU || b == KB_BACKEND_CUDA);
  CHECK(strcmp(kb_last_error(), "") == 0);
  if (b == KB_BACKEND_CPU) CHECK(kb_context_device(ctx) == -1);
  CHECK(kb_context_num_threads(ctx) == 2);
  kb_context_destroy(ctx);
}

/* Every failure of kb_context_create says why, per thread, prefixed with the
 * function name; a success clears the message. */
static void test_create_messages(void) {
  kb_context *ctx = SENTINEL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_CPU, 1, NULL));
  CHECK(strcmp(kb_last_error(), "kb_context_create: out must not be NULL") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_CPU, -3, &ctx));
  CHECK(strcmp(kb_last_error(), "kb_context_create: num_threads must be in [0, 256], got -3") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_CPU, 257, &ctx));
  CHECK_STR_CONTAINS(kb_last_error(), "got 257");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create((kb_backend)7, 1, &ctx));
  CHECK_STR_CONTAINS(kb_last_error(), "kb_context_create: unknown backend 7");
  CHECK(ctx == SENTINEL);
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  CHECK(strcmp(kb_last_error(), "") == 0);
  kb_context_destroy(ctx);
}

static void test_cpu_device_and_synchronize(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  CHECK(kb_context_device(ctx) == -1);
  CHECK(kb_context_device(NULL) == -1);
  CHECK_OK(kb_context_synchronize(ctx));
  CHECK_OK(kb_context_synchronize(NULL));
  CHECK(strcmp(kb_context_last_error(ctx), "") == 0);
  kb_context_destroy(ctx);
}

static void test_zero_threads_means_online_cpus(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 0, &ctx));
  int64_t want = online_cpus();
  if (want > 256) want = 256; /* the library's upper bound on threads */
  CHECK(kb_context_num_threads(ctx) == want);
  CHECK(kb_context_num_threads(ctx) >= 1);
  kb_context_destroy(ctx);
}

static void test_bad_thread_counts(void) {
  const int64_t bad[] = {-1, -2, INT64_MIN, (int64_t)1 << 40, INT64_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kb_context *ctx = SENTINEL;
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_CPU, bad[i], &ctx));
    CHECK(ctx == SENTINEL);
  }
}

static void test_bad_backend(void) {
  kb_context *ctx = SENTINEL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create((kb_backend)42, 1, &ctx));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create((kb_backend)-1, 1, &ctx));
  CHECK(ctx == SENTINEL);
}

static void test_out_null(void) {
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_CPU, 1, NULL));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create(KB_BACKEND_AUTO, 0, NULL));
}

static void test_last_error_empty_after_success(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  const char *msg = kb_context_last_error(ctx);
  CHECK(msg != NULL);
  CHECK(msg != NULL && strcmp(msg, "") == 0);
  kb_context_destroy(ctx);
}

static void test_contexts_are_independent(void) {
  kb_context *a = NULL, *b = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &a));
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 4, &b));
  CHECK(a != b);
  CHECK(kb_context_num_threads(a) == 1);
  CHECK(kb_context_num_threads(b) == 4);
  kb_context_destroy(b);
  CHECK(kb_context_num_threads(a) == 1);
  kb_context_destroy(a);
}

int main(void) {
  KB_RUN(test_create_cpu_and_destroy);
  KB_RUN(test_one_thread);
  KB_RUN(test_destroy_null);
  KB_RUN(test_null_context_queries);
  KB_RUN(test_cuda_context);
  KB_RUN(test_auto_falls_back_to_cpu);
  KB_RUN(test_create_messages);
  KB_RUN(test_cpu_device_and_synchronize);
  KB_RUN(test_zero_threads_means_online_cpus);
  KB_RUN(test_bad_thread_counts);
  KB_RUN(test_bad_backend);
  KB_RUN(test_out_null);
  KB_RUN(test_last_error_empty_after_success);
  KB_RUN(test_contexts_are_independent);
  return kb_test_summary();
}
