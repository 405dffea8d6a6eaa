/*
 * stage.c - kb_buffer staging of a call's tensors (see stage.h).
 */
#include "stage.h"

#include <stdio.h>
#include <string.h>

int layout_of(const struct call *c, struct layout *l) {
  for (int i = 0; i < c->ntensors; i++) {
    const struct tensor *t = &c->tensors[i];
    l->owner[i] = -1;
    l->off[i] = 0;
    if (t->owned != NULL) {
      l->owner[i] = i;
      continue;
    }
    if (t->ptr == NULL) continue;
    const char *p = (const char *)t->ptr;
    for (int j = 0; j < c->ntensors; j++) {
      const struct tensor *o = &c->tensors[j];
      const char *base = (const char *)o->owned;
      /* Views start at whole 4-byte units (runner.h): the offset is one. */
      if (base != NULL && p >= base && p < base + o->alloc * 4 && (p - base) % 4 == 0) {
        l->owner[i] = j;
        l->off[i] = (int64_t)(p - base) / 4;
        break;
      }
    }
    if (l->owner[i] < 0) return -1;
  }
  return 0;
}

void host_bases(const struct call *c, void **base) {
  for (int i = 0; i < c->ntensors; i++) base[i] = c->tensors[i].owned;
}

void bind_tensors(struct call *c, const struct layout *l, void *const *base, size_t esize) {
  for (int i = 0; i < c->ntensors; i++) {
    int o = l->owner[i];
    c->tensors[i].ptr = o < 0 ? NULL : (char *)base[o] + (size_t)l->off[i] * esize;
  }
}

/* Records "fn: STATUS: message" of a failed buffer call. */
static int fail(kb_context *ctx, const char *fn, kb_status st, char *err, size_t err_len) {
  snprintf(err, err_len, "%s: %s: %s", fn, kb_status_string(st), kb_context_last_error(ctx));
  return -1;
}

static void destroy_all(struct staged *s) {
  for (int i = 0; i < MAX_ITEMS; i++) {
    kb_buffer_destroy(s->buf[i]);
    s->buf[i] = NULL;
  }
}

int stage_up(kb_context *ctx, struct call *c, const struct layout *l, void *const *src, size_t esize,
             struct staged *s, char *err, size_t err_len) {
  void *base[MAX_ITEMS] = {0};
  memset(s, 0, sizeof *s);
  for (int i = 0; i < c->ntensors; i++) {
    if (l->owner[i] != i) continue;
    /* alloc >= 1, so no buffer address is NULL: the host path never passes
     * NULL for a tensor the case does not list as null either. */
    int64_t bytes = c->tensors[i].alloc * (int64_t)esize;
    kb_status st = kb_buffer_create(ctx, bytes, &s->buf[i]);
    const char *fn = "kb_buffer_create";
    if (st == KB_STATUS_OK) {
      st = kb_buffer_upload(ctx, s->buf[i], 0, bytes, src[i]);
      fn = "kb_buffer_upload";
    }
    if (st != KB_STATUS_OK) {
      fail(ctx, fn, st, err, err_len);
      destroy_all(s);
      return -1;
    }
    base[i] = kb_buffer_data(s->buf[i]);
  }
  bind_tensors(c, l, base, esize);
  return 0;
}

int stage_down(kb_context *ctx, const struct call *c, const struct layout *l, void *const *dst, size_t esize,
               struct staged *s, char *err, size_t err_len) {
  int rc = 0;
  for (int i = 0; i < c->ntensors; i++) {
    if (l->owner[i] != i || s->buf[i] == NULL) continue;
    kb_status st = kb_buffer_download(ctx, s->buf[i], 0, c->tensors[i].alloc * (int64_t)esize, dst[i]);
    if (st != KB_STATUS_OK && rc == 0) rc = fail(ctx, "kb_buffer_download", st, err, err_len);
  }
  destroy_all(s);
  return rc;
}
