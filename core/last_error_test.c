/* last_error_test.c - kb_last_error is per thread: two threads fail
 * differently at the same time and each reads its own message; a success
 * clears only the caller's message. */
#include <pthread.h>

#include "kb_test.h"
#include "kernelbridge.h"

static pthread_barrier_t barrier;

struct result {
  kb_backend backend;
  int64_t threads;
  kb_status status;
  char message[256];
};

static void *worker(void *arg) {
  struct result *r = (struct result *)arg;
  kb_context *ctx = NULL;
  r->status = kb_context_create(r->backend, r->threads, &ctx);
  /* Both threads have failed before either reads its message. */
  pthread_barrier_wait(&barrier);
  snprintf(r->message, sizeof r->message, "%s", kb_last_error());
  return NULL;
}

static void test_messages_are_per_thread(void) {
  CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0);
  struct result a = {KB_BACKEND_CPU, -1, KB_STATUS_OK, ""};
  struct result b = {(kb_backend)99, 1, KB_STATUS_OK, ""};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, worker, &a) == 0);
  CHECK(pthread_create(&tb, NULL, worker, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, a.status);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, b.status);
  CHECK(strcmp(a.message, "kb_context_create: num_threads must be in [0, 256], got -1") == 0);
  CHECK_STR_CONTAINS(b.message, "kb_context_create: unknown backend 99");
  /* This thread made no failing call. */
  CHECK(strcmp(kb_last_error(), "") == 0);
}

static void test_success_clears(void) {
  kb_context *ctx = NULL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_count(NULL));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_count: count must not be NULL") == 0);
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  CHECK(strcmp(kb_last_error(), "") == 0);
  kb_context_destroy(ctx);
}

/* Context-free argument errors of the device queries come before any probe,
 * so they read the same with or without CUDA. */
static void test_device_query_arguments(void) {
  int64_t v = 12345;
  char name[8] = "unset";
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_name(0, NULL, 8));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_name: name must not be NULL") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_name(0, name, 0));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_name: name_capacity must be > 0, got 0") == 0);
  CHECK(strcmp(name, "unset") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_compute_capability(0, NULL));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_compute_capability: capability must not be NULL") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_total_memory(0, NULL));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_total_memory: bytes must not be NULL") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_free_memory(0, NULL));
  CHECK(strcmp(kb_last_error(), "kb_cuda_device_free_memory: bytes must not be NULL") == 0);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create_cuda(0, NULL));
  CHECK(strcmp(kb_last_error(), "kb_context_create_cuda: out must not be NULL") == 0);
  CHECK(v == 12345);
}

int main(void) {
  KB_RUN(test_messages_are_per_thread);
  KB_RUN(test_success_clears);
  KB_RUN(test_device_query_arguments);
  return kb_test_summary();
}
