/* buffer_test.c - kb_buffer on the CPU (NULL and CPU contexts): allocation,
 * round trips, fill, copy, and every validation error (it names the argument
 * and modifies nothing). */
#include <stdint.h>
#include <stdlib.h>

#include "kb_test.h"
#include "kernelbridge.h"

#define SENTINEL_BUF ((kb_buffer *)(uintptr_t)0x5a5a5a50u)

/* A 64-byte buffer holding 0, 1, ..., 63. */
static kb_buffer *counting_buffer(kb_context *ctx) {
  kb_buffer *buf = NULL;
  CHECK_OK(kb_buffer_create(ctx, 64, &buf));
  unsigned char bytes[64];
  for (int i = 0; i < 64; i++) bytes[i] = (unsigned char)i;
  if (buf != NULL) CHECK_OK(kb_buffer_upload(ctx, buf, 0, 64, bytes));
  return buf;
}

/* Does buf still hold 0, 1, ..., 63? */
static int still_counting(kb_buffer *buf) {
  unsigned char got[64];
  memset(got, 0xEE, sizeof got);
  if (kb_buffer_download(NULL, buf, 0, 64, got) != KB_STATUS_OK) return 0;
  for (int i = 0; i < 64; i++)
    if (got[i] != (unsigned char)i) return 0;
  return 1;
}

static void test_create_host(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  kb_context *ctxs[2] = {NULL, ctx};
  for (int i = 0; i < 2; i++) {
    kb_buffer *buf = NULL;
    CHECK_OK(kb_buffer_create(ctxs[i], 1000, &buf));
    CHECK(buf != NULL);
    CHECK(kb_buffer_size(buf) == 1000);
    CHECK(kb_buffer_device(buf) == -1);
    CHECK(kb_buffer_data(buf) != NULL);
    CHECK(((uintptr_t)kb_buffer_data(buf) % 64) == 0);
    /* Host memory the caller may use directly. */
    memset(kb_buffer_data(buf), 7, 1000);
    kb_buffer_destroy(buf);
  }
  kb_buffer *empty = NULL;
  CHECK_OK(kb_buffer_create(ctx, 0, &empty));
  CHECK(empty != NULL);
  CHECK(kb_buffer_size(empty) == 0);
  CHECK(kb_buffer_data(empty) == NULL);
  CHECK_OK(kb_buffer_upload(ctx, empty, 0, 0, NULL));
  CHECK_OK(kb_buffer_download(ctx, empty, 0, 0, NULL));
  CHECK_OK(kb_buffer_fill(ctx, empty, 0, 0, 1));
  CHECK_OK(kb_buffer_copy(ctx, empty, 0, empty, 0, 0));
  kb_buffer_destroy(empty);
  kb_buffer_destroy(NULL);
  kb_context_destroy(ctx);
}

static void test_create_errors(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  kb_buffer *buf = SENTINEL_BUF;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_create(ctx, -1, &buf));
  CHECK(strcmp(kb_context_last_error(ctx), "kb_buffer_create: bytes must be >= 0, got -1") == 0);
  CHECK(buf == SENTINEL_BUF);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_buffer_create(ctx, 8, NULL));
  CHECK(strcmp(kb_context_last_error(ctx), "kb_buffer_create: out must not be NULL") == 0);
  /* More than any machine has: OUT_OF_MEMORY, not a crash. */
  CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, kb_buffer_create(ctx, INT64_MAX, &buf));
  CHECK_STR_CONTAINS(kb_context_last_error(ctx), "kb_buffer_create: ");
  CHECK(buf == SENTINEL_BUF);
  CHECK_OK(kb_buffer_create(ctx, 1, &buf));
  CHECK(strcmp(kb_context_last_error(ctx), "") == 0);
  kb_buffer_destroy(buf);
  kb_context_destroy(ctx);
}

static void test_round_trip(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  kb_buffer *buf = counting_buffer(ctx);
  CHECK(still_counting(buf));
  unsigned char part[10], patch[3] = {200, 201, 202};
  CHECK_OK(kb_buffer_upload(ctx, buf, 61, 3, patch));
  CHECK_OK(kb_buffer_download(ctx, buf, 55, 9, part));
  for (int i = 0; i < 6; i++) CHECK(part[i] == 55 + i);
  CHECK(part[6] == 200 && part[7] == 201 && part[8] == 202);
  /* The data pointer sees the same bytes. */
  CHECK(((unsigned char *)kb_buffer_data(buf))[62] == 201);
  kb_buffer_destroy(buf);
  kb_context_destroy(ctx);
}

static void test_fill(void) {
  kb_buffer *buf = counting_buffer(NULL);
  CHECK_OK(kb_buffer_fill(NULL, buf, 10, 5, 255));
  CHECK_OK(kb_buffer_fill(NULL, buf, 63, 1, 0));
  unsigned char got[64];
  CHECK_OK(kb_buffer_download(NULL, buf, 0, 64, got));
  for (int i = 0; i < 64; i++) {
    int want = (i >= 10 && i < 15) ? 255 : i == 63 ? 0 : i;
    CHECK(got[i] == want);
  }
  kb_buffer_destroy(buf);
}

static void test_copy(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  kb_buffer *a = counting_buffer(ctx), *b = NULL;
  CHECK_OK(kb_buffer_create(ctx, 16, &b));
  CHECK_OK(kb_buffer_fill(ctx, b, 0, 16, 9));
  CHECK_OK(kb_buffer_copy(ctx, b, 4, a, 40, 8));
  unsigned char got[16];
  CHECK_OK(kb_buffer_download(ctx, b, 0, 16, got));
  for (int i = 0; i < 16; i++) CHECK(got[i] == ((i >= 4 && i < 12) ? 36 + i : 9));
  /* Disjoint ranges of one buffer, then identical ranges (a no-op). */
  CHECK_OK(kb_buffer_copy(ctx, a, 0, a, 32, 32));
  unsigned char all[64];
  CHECK_OK(kb_buffer_download(ctx, a, 0, 64, all));
  for (int i = 0; i < 64; i++) CHECK(all[i] == (i < 32 ? 32 + i : i));
  CHECK_OK(kb_buffer_copy(ctx, a, 8, a, 8, 16));
  CHECK_OK(kb_buffer_download(ctx, a, 0, 64, all));
  for (int i = 0; i < 64; i++) CHECK(all[i] == (i < 32 ? 32 + i : i));
  kb_buffer_destroy(a);
  kb_buffer_destroy(b);
  kb_context_destroy(ctx);
}

/* The context's message is exactly `want`; prints both when not. */
static int message_is(const kb_context *ctx, const char *want) {
  if (strcmp(kb_context_last_error(ctx), want) == 0) return 1;
  fprintf(stderr, "  message: \"%s\"\n  expected: \"%s\"\n", kb_context_last_error(ctx), want);
  return 0;
}

/* Fails with INVALID_ARGUMENT and exactly this message. */
#define CHECK_INVALID(call, want)                     \
  do {                                                \
    CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, (call)); \
    CHECK(message_is(ctx, (want)));                   \
  } while (0)

/* Each failing call: status, exact message; and afterwards neither buffer
 * nor the host memory has changed. */
static void test_validation(void) {
  kb_context *ctx = NULL;
  CHECK_OK(kb_context_create(KB_BACKEND_CPU, 1, &ctx));
  kb_buffer *buf = counting_buffer(ctx);
  kb_buffer *other = counting_buffer(ctx);
  unsigned char host[64];
  memset(host, 0xAB, sizeof host);

  CHECK_INVALID(kb_buffer_upload(ctx, NULL, 0, 1, host), "kb_buffer_upload: buf must not be NULL");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, -1, 1, host), "kb_buffer_upload: offset must be >= 0, got -1");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, 0, -2, host), "kb_buffer_upload: bytes must be >= 0, got -2");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, 60, 5, host),
                "kb_buffer_upload: offset 60 + bytes 5 exceeds the size of buf (64 bytes)");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, 65, 0, host),
                "kb_buffer_upload: offset 65 + bytes 0 exceeds the size of buf (64 bytes)");
  /* offset + bytes would overflow int64_t. */
  CHECK_INVALID(kb_buffer_upload(ctx, buf, 1, INT64_MAX, host),
                "kb_buffer_upload: offset 1 + bytes 9223372036854775807 exceeds the size of buf (64 bytes)");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, INT64_MAX, 1, host),
                "kb_buffer_upload: offset 9223372036854775807 + bytes 1 exceeds the size of buf (64 bytes)");
  CHECK_INVALID(kb_buffer_upload(ctx, buf, 0, 4, NULL), "kb_buffer_upload: src must not be NULL");

  CHECK_INVALID(kb_buffer_download(ctx, NULL, 0, 1, host), "kb_buffer_download: buf must not be NULL");
  CHECK_INVALID(kb_buffer_download(ctx, buf, 63, 2, host),
                "kb_buffer_download: offset 63 + bytes 2 exceeds the size of buf (64 bytes)");
  CHECK_INVALID(kb_buffer_download(ctx, buf, 0, 1, NULL), "kb_buffer_download: dst must not be NULL");

  CHECK_INVALID(kb_buffer_fill(ctx, NULL, 0, 1, 0), "kb_buffer_fill: buf must not be NULL");
  CHECK_INVALID(kb_buffer_fill(ctx, buf, 0, 65, 0),
                "kb_buffer_fill: offset 0 + bytes 65 exceeds the size of buf (64 bytes)");
  CHECK_INVALID(kb_buffer_fill(ctx, buf, 0, 1, 256), "kb_buffer_fill: value must be in [0, 255], got 256");
  CHECK_INVALID(kb_buffer_fill(ctx, buf, 0, 1, -1), "kb_buffer_fill: value must be in [0, 255], got -1");

  CHECK_INVALID(kb_buffer_copy(ctx, NULL, 0, buf, 0, 1), "kb_buffer_copy: dst must not be NULL");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 0, NULL, 0, 1), "kb_buffer_copy: src must not be NULL");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, -4, other, 0, 1), "kb_buffer_copy: dst_offset must be >= 0, got -4");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 0, other, -5, 1), "kb_buffer_copy: src_offset must be >= 0, got -5");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 0, other, 0, -6), "kb_buffer_copy: bytes must be >= 0, got -6");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 60, other, 0, 8),
                "kb_buffer_copy: dst_offset 60 + bytes 8 exceeds the size of dst (64 bytes)");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 0, other, 57, 8),
                "kb_buffer_copy: src_offset 57 + bytes 8 exceeds the size of src (64 bytes)");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 0, buf, 4, 8),
                "kb_buffer_copy: dst range [0, 8) overlaps src range [4, 12) of the same buffer (only identical "
                "ranges are allowed)");
  CHECK_INVALID(kb_buffer_copy(ctx, buf, 11, buf, 4, 8),
                "kb_buffer_copy: dst range [11, 19) overlaps src range [4, 12) of the same buffer (only identical "
                "ranges are allowed)");

  CHECK(still_counting(buf));
  CHECK(still_counting(other));
  for (int i = 0; i < 64; i++) CHECK(host[i] == 0xAB);
  /* The next successful call clears the message. */
  CHECK_OK(kb_buffer_fill(ctx, other, 0, 0, 0));
  CHECK(message_is(ctx, ""));
  kb_buffer_destroy(buf);
  kb_buffer_destroy(other);
  kb_context_destroy(ctx);
}

int main(void) {
  KB_RUN(test_create_host);
  KB_RUN(test_create_errors);
  KB_RUN(test_round_trip);
  KB_RUN(test_fill);
  KB_RUN(test_copy);
  KB_RUN(test_validation);
  return kb_test_summary();
}
