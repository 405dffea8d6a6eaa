/* fake_cuda_test.c - the core's CUDA paths against the fake backend
 * (testing/fake_cuda.h) installed with kb__cuda_use_table_for_testing:
 * device queries, CUDA contexts, device buffers, kb__check_memory,
 * kb__cuda_finish (message copying, DEVICE_LOST latching), buffers outliving
 * their context, and a library from before dev_free_on_device.  Its own
 * binary because the probe's outcome is per process. */
#include <stdlib.h>

#include "fake_cuda.h"
#include "internal.h"
#include "kb_test.h"

static int message_is(const char *got, const char *want) {
  if (strcmp(got, want) == 0) return 1;
  fprintf(stderr, "  message: \"%s\"\n  expected: \"%s\"\n", got, want);
  return 0;
}

static int64_t free_memory(void) {
  int64_t f = -1;
  CHECK_OK(kb_cuda_device_free_memory(0, &f));
  return f;
}

static void test_device_queries(void) {
  int64_t v = -1;
  CHECK_OK(kb_cuda_device_count(&v));
  CHECK(v == 1);
  char name[32];
  CHECK_OK(kb_cuda_device_name(0, name, (int64_t)sizeof name));
  CHECK(strcmp(name, "Fake GPU") == 0);
  /* Truncated to capacity - 1 bytes, always terminated. */
  CHECK_OK(kb_cuda_device_name(0, name, 5));
  CHECK(strcmp(name, "Fake") == 0);
  CHECK_OK(kb_cuda_device_name(0, name, 1));
  CHECK(strcmp(name, "") == 0);
  CHECK_OK(kb_cuda_device_compute_capability(0, &v));
  CHECK(v == 90);
  CHECK_OK(kb_cuda_device_total_memory(0, &v));
  CHECK(v == (int64_t)1 << 30);
  CHECK(free_memory() <= (int64_t)1 << 30);
  CHECK(strcmp(kb_last_error(), "") == 0);
  v = -1;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_compute_capability(1, &v));
  CHECK(message_is(kb_last_error(), "kb_cuda_device_compute_capability: device must be in [0, 1), got 1"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_cuda_device_name(-1, name, 8));
  CHECK(message_is(kb_last_error(), "kb_cuda_device_name: device must be in [0, 1), got -1"));
  CHECK(v == -1);
}

static void test_contexts(void) {
  kb_context *ctx = NULL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_context_create_cuda(5, &ctx));
  CHECK(message_is(kb_last_error(), "kb_context_create_cuda: device must be in [0, 1), got 5"));
  CHECK(ctx == NULL);
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  CHECK(strcmp(kb_last_error(), "") == 0);
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CUDA);
  CHECK(kb_context_device(ctx) == 0);
  CHECK(kb__on_cuda(ctx));
  CHECK_OK(kb_context_synchronize(ctx));
  kb_context_destroy(ctx);
  ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CUDA, 2, &ctx));
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CUDA && kb_context_num_threads(ctx) == 2);
  kb_context_destroy(ctx);
  ctx = NULL;
  /* AUTO picks the device now that one is there. */
  CHECK_OK(kb_context_create(KB_BACKEND_AUTO, 1, &ctx));
  CHECK(kb_context_backend(ctx) == KB_BACKEND_CUDA);
  kb_context_destroy(ctx);
}

static void test_device_buffers(void) {
  kb_context *gpu = NULL, *cpu = NULL;
  CHECK_OK(kb_context_create_cuda(0, &gpu));
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &cpu));
  int64_t before = free_memory();
  kb_buffer *d = NULL, *d2 = NULL, *h = NULL;
  CHECK_OK(kb_buffer_create(gpu, 256, &d));
  CHECK_OK(kb_buffer_create(gpu, 256, &d2));
  CHECK_OK(kb_buffer_create(cpu, 256, &h));
  CHECK(free_memory() == before - 512);
  CHECK(kb_buffer_device(d) == 0 && kb_buffer_device(h) == -1);
  kbcuda_ptr_kind kind = -1;
  int32_t dev = -2;
  CHECK(kb_fake_cuda_table()->pointer_kind(kb_buffer_data(d), &kind, &dev, NULL, 0) == KBCUDA_STATUS_OK);
  CHECK(kind == KBCUDA_PTR_DEVICE && dev == 0);

  unsigned char in[256], out[256];
  for (int i = 0; i < 256; i++) in[i] = (unsigned char)(255 - i);
  CHECK_OK(kb_buffer_upload(gpu, d, 0, 256, in));
  CHECK_OK(kb_buffer_fill(gpu, d, 100, 10, 0x11));
  CHECK_OK(kb_buffer_copy(gpu, d2, 0, d, 0, 256));
  memset(out, 0, sizeof out);
  CHECK_OK(kb_buffer_download(gpu, d2, 0, 256, out));
  for (int i = 0; i < 256; i++) CHECK(out[i] == ((i >= 100 && i < 110) ? 0x11 : 255 - i));
  CHECK_OK(kb_buffer_download(gpu, d, 250, 6, out));
  for (int i = 0; i < 6; i++) CHECK(out[i] == 5 - i);
  /* A host buffer works with the CUDA context too. */
  CHECK_OK(kb_buffer_upload(gpu, h, 0, 4, in));
  CHECK(((unsigned char *)kb_buffer_data(h))[3] == 252);

  /* Mixed kinds: every error names the argument and changes nothing. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_upload(cpu, d, 0, 4, in));
  CHECK(message_is(kb_context_last_error(cpu), "kb_buffer_upload: buf is memory of CUDA device 0; ctx is a CPU context"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_download(NULL, d, 0, 4, out));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_fill(cpu, d, 0, 4, 0));
  CHECK(message_is(kb_context_last_error(cpu), "kb_buffer_fill: buf is memory of CUDA device 0; ctx is a CPU context"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_copy(gpu, h, 0, d, 0, 4));
  CHECK(message_is(kb_context_last_error(gpu),
                   "kb_buffer_copy: dst is host memory but src is memory of CUDA device 0; both must be of the same "
                   "kind"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_copy(cpu, d2, 0, d, 0, 4));
  CHECK(message_is(kb_context_last_error(cpu), "kb_buffer_copy: dst is memory of CUDA device 0; ctx is a CPU context"));
  /* Device memory where host memory is needed. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_upload(gpu, d2, 0, 4, kb_buffer_data(d)));
  CHECK(message_is(kb_context_last_error(gpu),
                   "kb_buffer_upload: src is memory of CUDA device 0; kb_buffer_upload copies from host memory "
                   "(kb_buffer_copy copies between buffers)"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_download(cpu, h, 0, 4, kb_buffer_data(d)));
  CHECK_STR_CONTAINS(kb_context_last_error(cpu), "kb_buffer_download: dst is memory of CUDA device 0");
  CHECK_OK(kb_buffer_download(gpu, d2, 0, 256, out));
  for (int i = 0; i < 256; i++) CHECK(out[i] == ((i >= 100 && i < 110) ? 0x11 : 255 - i));
  kb_buffer *zero = NULL;
  CHECK_OK(kb_buffer_create(gpu, 0, &zero));
  CHECK(kb_buffer_data(zero) == NULL && kb_buffer_device(zero) == 0);
  kb_buffer_destroy(zero);

  kb_buffer_destroy(d);
  kb_buffer_destroy(d2);
  kb_buffer_destroy(h);
  CHECK(free_memory() == before);
  kb_context_destroy(gpu);
  kb_context_destroy(cpu);
}

static void test_check_memory(void) {
  kb_context *gpu = NULL, *cpu = NULL;
  CHECK_OK(kb_context_create_cuda(0, &gpu));
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &cpu));
  kb_buffer *d = NULL;
  CHECK_OK(kb_buffer_create(gpu, 64, &d));
  float host[16];
  const void *dp = kb_buffer_data(d);
  struct kb_mem_ref ok[] = {{"x", dp, 64}, {"y", (const char *)dp + 32, 32}, {"z", host, 0}};
  CHECK_OK(kb__check_memory(gpu, "kb_silu", 3, ok));
  struct kb_mem_ref bad_host[] = {{"x", dp, 64}, {"y", host, 64}};
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb__check_memory(gpu, "kb_silu", 2, bad_host));
  CHECK(message_is(kb_context_last_error(gpu),
                   "kb_silu: y is host memory; a CUDA context needs memory of its device 0 (a kb_buffer, cudaMalloc "
                   "or managed memory)"));
  struct kb_mem_ref past_end[] = {{"x", (const char *)dp + 8, 64}};
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb__check_memory(gpu, "kb_silu", 1, past_end));
  CHECK(message_is(kb_context_last_error(gpu), "kb_silu: x (64 bytes) runs past the end of its block of device memory"));
  /* The other direction: device memory given to a CPU context (or NULL). */
  struct kb_mem_ref on_cpu[] = {{"a", host, 64}, {"b", dp, 4}};
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb__check_memory(cpu, "kb_add", 2, on_cpu));
  CHECK(message_is(kb_context_last_error(cpu),
                   "kb_add: b is memory of CUDA device 0; a CPU context needs host (or managed) memory"));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb__check_memory(NULL, "kb_add", 2, on_cpu));
  CHECK_OK(kb__check_memory(cpu, "kb_add", 1, on_cpu));
  kb_buffer_destroy(d);
  kb_context_destroy(gpu);
  kb_context_destroy(cpu);
}

static void test_cuda_finish(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  const struct kbcuda_table *t = ctx->cuda;
  float x[4] = {0};
  kb_fake_cuda_reset();
  CHECK_OK(kb__cuda_finish(ctx, "kb_silu", t->silu(ctx->cuda_ctx, "kb_silu", 4, x, x)));
  CHECK(strcmp(kb_fake_cuda_last_entry(), "silu") == 0 && kb_fake_cuda_calls() == 1);
  CHECK(kb_fake_cuda_last_dtype() == -1 && kb_fake_cuda_last_op() == -1);
  CHECK_OK(kb__cuda_finish(ctx, "kb_gelu_bf16",
                           t->unary_dt(ctx->cuda_ctx, "kb_gelu_bf16", KBCUDA_OP_GELU, KBCUDA_BF16, 4, x, x)));
  CHECK(strcmp(kb_fake_cuda_last_entry(), "unary_dt") == 0 && kb_fake_cuda_calls() == 2);
  CHECK(kb_fake_cuda_last_dtype() == KBCUDA_BF16 && kb_fake_cuda_last_op() == KBCUDA_OP_GELU);

  /* A kernel entry fails: its message ("fn: ...") is copied once-prefixed. */
  kb_fake_cuda_fail_next(KBCUDA_STATUS_DEVICE_ERROR, "CUDA error in the kernel launch: cudaErrorX");
  CHECK_STATUS(KB_STATUS_DEVICE_ERROR, kb__cuda_finish(ctx, "kb_silu", t->silu(ctx->cuda_ctx, "kb_silu", 4, x, x)));
  CHECK(message_is(kb_context_last_error(ctx), "kb_silu: CUDA error in the kernel launch: cudaErrorX"));
  CHECK(!ctx->lost);
  /* The stream synchronise fails: the backend's own prefix is replaced. */
  kb_fake_cuda_fail_next(KBCUDA_STATUS_OUT_OF_MEMORY, "out of device memory in cudaMallocAsync");
  CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, kb__cuda_finish(ctx, "kb_softmax", KBCUDA_STATUS_OK));
  CHECK(message_is(kb_context_last_error(ctx), "kb_softmax: out of device memory in cudaMallocAsync"));
  /* A status outside the ABI is an internal error. */
  kb_fake_cuda_fail_next(42, "what");
  CHECK_STATUS(KB_STATUS_INTERNAL, kb__cuda_finish(ctx, "kb_mul", KBCUDA_STATUS_OK));
  CHECK(!ctx->lost);
  CHECK_OK(kb_context_synchronize(ctx));

  /* A lost device latches: every later call fails fast, without reaching
   * the backend. */
  kb_buffer *d = NULL;
  CHECK_OK(kb_buffer_create(ctx, 16, &d));
  kb_fake_cuda_fail_next(KBCUDA_STATUS_DEVICE_LOST, "device lost: cudaErrorIllegalAddress");
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb__cuda_finish(ctx, "kb_gemm", t->gemm(ctx->cuda_ctx, "kb_gemm", 0, 0, 1, 1, 1,
                                                                             1.0f, x, 1, x, 1, 0.0f, x, 1)));
  CHECK(message_is(kb_context_last_error(ctx), "kb_gemm: device lost: cudaErrorIllegalAddress"));
  CHECK(ctx->lost);
  int calls = kb_fake_cuda_calls();
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb_context_synchronize(ctx));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_context_synchronize: the CUDA device was lost earlier");
  unsigned char bytes[16] = {0};
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb_buffer_upload(ctx, d, 0, 16, bytes));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_buffer_upload: the CUDA device was lost");
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb_buffer_download(ctx, d, 0, 16, bytes));
  kb_buffer *more = NULL;
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb_buffer_create(ctx, 16, &more));
  CHECK(more == NULL);
  struct kb_mem_ref refs[] = {{"x", kb_buffer_data(d), 16}};
  CHECK_STATUS(KB_STATUS_DEVICE_LOST, kb__check_memory(ctx, "kb_silu", 1, refs));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_silu: the CUDA device was lost");
  CHECK(kb_fake_cuda_calls() == calls);
  /* Argument errors still come first. */
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_upload(ctx, d, -1, 16, bytes));
  kb_context_destroy(ctx);
  kb_buffer_destroy(d); /* the buffer outlived its (lost) context */
  kb_fake_cuda_reset();
}

static void test_buffer_outlives_context(void) {
  int64_t before = free_memory();
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  kb_buffer *d = NULL;
  CHECK_OK(kb_buffer_create(ctx, 4096, &d));
  unsigned char in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
  CHECK_OK(kb_buffer_upload(ctx, d, 4088, 8, in));
  kb_context_destroy(ctx);
  CHECK(free_memory() == before - 4096);
  /* Another context on the same device uses it. */
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  CHECK_OK(kb_buffer_download(ctx, d, 4088, 8, out));
  CHECK(memcmp(in, out, 8) == 0);
  kb_context_destroy(ctx);
  kb_buffer_destroy(d); /* no context left: freed through dev_free_on_device */
  CHECK(free_memory() == before);
}

/* A library from before dev_free_on_device (struct_size of the first v1
 * table): buffers are freed through a temporary context instead.  Also shows
 * that the testing hook starts the probe over. */
static void test_table_without_dev_free_on_device(void) {
  static struct kbcuda_table old;
  old = *kb_fake_cuda_table();
  old.struct_size = (uint32_t)KBCUDA_TABLE_V1_SIZE;
  old.dev_free_on_device = NULL; /* must not be called */
  CHECK(!KBCUDA_TABLE_HAS(&old, dev_free_on_device));
  CHECK(KBCUDA_TABLE_HAS(kb_fake_cuda_table(), dev_free_on_device));
  kb__cuda_use_table_for_testing(&old);
  CHECK(kb__cuda_usable() == NULL); /* not probed yet */
  int64_t before = free_memory();
  CHECK(kb__cuda_usable() == &old);
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create_cuda(0, &ctx));
  kb_buffer *d = NULL;
  CHECK_OK(kb_buffer_create(ctx, 100, &d));
  kb_context_destroy(ctx);
  CHECK(free_memory() == before - 100);
  kb_buffer_destroy(d);
  CHECK(free_memory() == before);
  kb__cuda_use_table_for_testing(kb_fake_cuda_table());
}

int main(void) {
  /* Before the hook nothing has probed, so the CPU path checks nothing. */
  CHECK(kb__cuda_usable() == NULL);
  kb__cuda_use_table_for_testing(kb_fake_cuda_table());
  KB_RUN(test_device_queries);
  KB_RUN(test_contexts);
  KB_RUN(test_device_buffers);
  KB_RUN(test_check_memory);
  KB_RUN(test_cuda_finish);
  KB_RUN(test_buffer_outlives_context);
  KB_RUN(test_table_without_dev_free_on_device);
  return kb_test_summary();
}
