/* buffer.c - kb_buffer: host memory (CPU contexts, NULL) or device memory of
 * a CUDA device (CUDA contexts), with bounds-checked upload, download, fill
 * and copy.  A buffer remembers its device and the backend table, not its
 * context, so it may outlive the context that made it. */
/* posix_memalign is POSIX.1-2008: ask for it here too, so that vendored builds
 * with a strict -std and no -D_POSIX_C_SOURCE still compile. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Alignment of host buffers: a cache line, and enough for any vector load. */
#define KB_HOST_ALIGNMENT 64

struct kb_buffer {
  int64_t device;                  /* CUDA device ordinal, -1 for host memory */
  int64_t bytes;                   /* size requested */
  void *data;                      /* NULL for 0 bytes */
  const struct kbcuda_table *cuda; /* device buffers: the table that allocated data */
};

/* "CUDA device 0" / "host memory", for messages. */
static const char *kind_of(const kb_buffer *buf, char *text, size_t cap) {
  if (buf->device < 0) return "host memory";
  snprintf(text, cap, "memory of CUDA device %lld", (long long)buf->device);
  return text;
}

/* What ctx is, for messages: "a CPU context", "NULL (a CPU context)" or "on
 * CUDA device 1". */
static const char *ctx_kind(const kb_context *ctx, char *text, size_t cap) {
  if (ctx == NULL) return "NULL (a CPU context)";
  if (!kb__on_cuda(ctx)) return "a CPU context";
  snprintf(text, cap, "a context on CUDA device %lld", (long long)ctx->device);
  return text;
}

/* A device buffer needs a CUDA context on its device; a host buffer works
 * with any context. */
static kb_status check_ctx(kb_context *ctx, const char *fn, const char *name, const kb_buffer *buf) {
  if (buf->device < 0) return KB_STATUS_OK;
  if (kb__on_cuda(ctx) && ctx->device == buf->device) return KB_STATUS_OK;
  char a[48], b[64];
  return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s is %s; ctx is %s", name, kind_of(buf, a, sizeof a),
                  ctx_kind(ctx, b, sizeof b));
}

/* offset >= 0, bytes >= 0 and [offset, offset + bytes) inside the buffer,
 * without computing offset + bytes (it may overflow). */
static kb_status check_range(kb_context *ctx, const char *fn, const char *buf_name, const kb_buffer *buf,
                             const char *offset_name, int64_t offset, int64_t bytes) {
  KB_TRY(kb__check_dim(ctx, fn, offset_name, offset));
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  if (offset > buf->bytes || bytes > buf->bytes - offset)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                    "%s %lld + bytes %lld exceeds the size of %s (%lld bytes)", offset_name, (long long)offset,
                    (long long)bytes, buf_name, (long long)buf->bytes);
  return KB_STATUS_OK;
}

/* A host pointer for upload/download: never device memory (a memcpy would
 * crash on it, a host-to-device copy would fail); managed memory is fine. */
static kb_status check_host_ptr(kb_context *ctx, const char *fn, const char *name, const void *ptr, int64_t bytes,
                                const char *instead) {
  KB_TRY(kb__check_ptr(ctx, fn, name, ptr, bytes));
  if (bytes == 0) return KB_STATUS_OK;
  int32_t dev = kb__device_memory_of(ptr);
  if (dev >= 0)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "%s is memory of CUDA device %d; %s", name, (int)dev,
                    instead);
  return KB_STATUS_OK;
}

kb_status kb_buffer_create(kb_context *ctx, int64_t bytes, kb_buffer **out) {
  static const char fn[] = "kb_buffer_create";
  KB_BEGIN(ctx, fn);
  if (out == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "out must not be NULL");
  KB_TRY(kb__check_dim(ctx, fn, "bytes", bytes));
  if ((uint64_t)bytes > (uint64_t)SIZE_MAX)
    return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "bytes %lld does not fit in size_t", (long long)bytes);
  KB_TRY(kb__check_lost(ctx, fn));
  kb_buffer *buf = (kb_buffer *)calloc(1, sizeof *buf);
  if (buf == NULL) return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "out of memory allocating the buffer handle");
  buf->bytes = bytes;
  buf->device = -1;
  if (kb__on_cuda(ctx)) {
    void *p = NULL;
    kb_status s = kb__cuda_fail(ctx, fn, ctx->cuda->dev_malloc(ctx->cuda_ctx, (size_t)bytes, &p));
    if (s != KB_STATUS_OK) {
      free(buf);
      return s;
    }
    buf->device = ctx->device;
    buf->cuda = ctx->cuda;
    buf->data = p;
  } else if (bytes > 0) {
    void *p = NULL;
    if (posix_memalign(&p, KB_HOST_ALIGNMENT, (size_t)bytes) != 0) {
      free(buf);
      return kb__fail(ctx, KB_STATUS_OUT_OF_MEMORY, fn, "out of memory allocating %lld bytes of host memory",
                      (long long)bytes);
    }
    buf->data = p;
  }
  *out = buf;
  return KB_STATUS_OK;
}

void kb_buffer_destroy(kb_buffer *buf) {
  if (buf == NULL) return;
  if (buf->device < 0) {
    free(buf->data);
  } else if (buf->data != NULL) {
    /* No context here (it may be gone); errors cannot be reported by a void
     * function and leave nothing to recover, so they are ignored. */
    const struct kbcuda_table *t = buf->cuda;
    if (KBCUDA_TABLE_HAS(t, dev_free_on_device)) {
      (void)t->dev_free_on_device((int32_t)buf->device, buf->data, NULL, 0);
    } else {
      /* A library from before dev_free_on_device: borrow a temporary
       * context on the buffer's device. */
      kbcuda_ctx *c = NULL;
      if (t->ctx_create((int32_t)buf->device, &c, NULL, 0) == KBCUDA_STATUS_OK && c != NULL) {
        (void)t->dev_free(c, buf->data);
        t->ctx_destroy(c);
      }
    }
  }
  free(buf);
}

int64_t kb_buffer_size(const kb_buffer *buf) { return buf == NULL ? 0 : buf->bytes; }

int64_t kb_buffer_device(const kb_buffer *buf) { return buf == NULL ? -1 : buf->device; }

void *kb_buffer_data(kb_buffer *buf) { return buf == NULL ? NULL : buf->data; }

kb_status kb_buffer_upload(kb_context *ctx, kb_buffer *buf, int64_t offset, int64_t bytes, const void *src) {
  static const char fn[] = "kb_buffer_upload";
  KB_BEGIN(ctx, fn);
  if (buf == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "buf must not be NULL");
  KB_TRY(check_range(ctx, fn, "buf", buf, "offset", offset, bytes));
  KB_TRY(check_host_ptr(ctx, fn, "src", src, bytes, "kb_buffer_upload copies from host memory (kb_buffer_copy copies between buffers)"));
  KB_TRY(check_ctx(ctx, fn, "buf", buf));
  KB_TRY(kb__check_lost(ctx, fn));
  if (bytes == 0) return KB_STATUS_OK;
  char *dst = (char *)buf->data + offset;
  if (buf->device < 0) {
    memmove(dst, src, (size_t)bytes); /* src may lie inside the buffer itself */
    return KB_STATUS_OK;
  }
  return kb__cuda_finish(ctx, fn, ctx->cuda->memcpy_h2d(ctx->cuda_ctx, dst, src, (size_t)bytes));
}

kb_status kb_buffer_download(kb_context *ctx, const kb_buffer *buf, int64_t offset, int64_t bytes, void *dst) {
  static const char fn[] = "kb_buffer_download";
  KB_BEGIN(ctx, fn);
  if (buf == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "buf must not be NULL");
  KB_TRY(check_range(ctx, fn, "buf", buf, "offset", offset, bytes));
  KB_TRY(check_host_ptr(ctx, fn, "dst", dst, bytes, "kb_buffer_download copies into host memory (kb_buffer_copy copies between buffers)"));
  KB_TRY(check_ctx(ctx, fn, "buf", buf));
  KB_TRY(kb__check_lost(ctx, fn));
  if (bytes == 0) return KB_STATUS_OK;
  const char *src = (const char *)buf->data + offset;
  if (buf->device < 0) {
    memmove(dst, src, (size_t)bytes); /* dst may lie inside the buffer itself */
    return KB_STATUS_OK;
  }
  return kb__cuda_finish(ctx, fn, ctx->cuda->memcpy_d2h(ctx->cuda_ctx, dst, src, (size_t)bytes));
}

kb_status kb_buffer_fill(kb_context *ctx, kb_buffer *buf, int64_t offset, int64_t bytes, int32_t value) {
  static const char fn[] = "kb_buffer_fill";
  KB_BEGIN(ctx, fn);
  if (buf == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "buf must not be NULL");
  KB_TRY(check_range(ctx, fn, "buf", buf, "offset", offset, bytes));
  if (value < 0 || value > 255)
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "value must be in [0, 255], got %d", (int)value);
  KB_TRY(check_ctx(ctx, fn, "buf", buf));
  KB_TRY(kb__check_lost(ctx, fn));
  if (bytes == 0) return KB_STATUS_OK;
  char *dst = (char *)buf->data + offset;
  if (buf->device < 0) {
    memset(dst, value, (size_t)bytes);
    return KB_STATUS_OK;
  }
  return kb__cuda_finish(ctx, fn, ctx->cuda->dev_memset(ctx->cuda_ctx, dst, value, (size_t)bytes));
}

kb_status kb_buffer_copy(kb_context *ctx, kb_buffer *dst, int64_t dst_offset, const kb_buffer *src,
                         int64_t src_offset, int64_t bytes) {
  static const char fn[] = "kb_buffer_copy";
  KB_BEGIN(ctx, fn);
  if (dst == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "dst must not be NULL");
  if (src == NULL) return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "src must not be NULL");
  KB_TRY(check_range(ctx, fn, "dst", dst, "dst_offset", dst_offset, bytes));
  KB_TRY(check_range(ctx, fn, "src", src, "src_offset", src_offset, bytes));
  if (dst->device != src->device) {
    char a[48], b[48];
    return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn, "dst is %s but src is %s; both must be of the same kind",
                    kind_of(dst, a, sizeof a), kind_of(src, b, sizeof b));
  }
  bool identical = false;
  if (dst == src && bytes > 0) {
    /* Both ranges are inside one buffer, so no overflow below. */
    if (dst_offset == src_offset) {
      identical = true;
    } else if (dst_offset < src_offset + bytes && src_offset < dst_offset + bytes) {
      return kb__fail(ctx, KB_STATUS_INVALID_ARGUMENT, fn,
                      "dst range [%lld, %lld) overlaps src range [%lld, %lld) of the same buffer (only identical "
                      "ranges are allowed)",
                      (long long)dst_offset, (long long)(dst_offset + bytes), (long long)src_offset,
                      (long long)(src_offset + bytes));
    }
  }
  KB_TRY(check_ctx(ctx, fn, "dst", dst));
  KB_TRY(kb__check_lost(ctx, fn));
  if (bytes == 0 || identical) return KB_STATUS_OK;
  char *to = (char *)dst->data + dst_offset;
  const char *from = (const char *)src->data + src_offset;
  if (dst->device < 0) {
    memcpy(to, from, (size_t)bytes);
    return KB_STATUS_OK;
  }
  return kb__cuda_finish(ctx, fn, ctx->cuda->memcpy_d2d(ctx->cuda_ctx, to, from, (size_t)bytes));
}
