/*
 * stage.h - moving a corpus call's tensors into kb_buffers and back, for the
 * runner's cpu-buffers and cuda backends.
 *
 * Every tensor of a call either owns host storage or views another tensor's
 * storage (in-place aliases, overlaps of bad-input cases).  Staging copies
 * each storage into one buffer and points views at the same element offset
 * inside it, so a view stays a view on the device.  The element size is a
 * parameter because the 16-bit variants stage the same layout at 2 bytes per
 * element.
 */
#ifndef KB_CONFORMANCE_STAGE_H
#define KB_CONFORMANCE_STAGE_H

#include <stddef.h>

#include "runner.h"

struct layout {
  int owner[MAX_ITEMS];    /* tensor whose storage tensor i uses; -1 when absent */
  int64_t off[MAX_ITEMS];  /* element offset of tensor i in that storage */
};

/* Computes the layout from the host pointers (4-byte elements).  Returns -1
 * when a view points outside every storage (a runner bug). */
int layout_of(const struct call *c, struct layout *l);

/* base[i] = the host storage of tensor i (NULL for views and absent ones). */
void host_bases(const struct call *c, void **base);

/* Points every tensor at base[owner] + off * esize; NULL when absent. */
void bind_tensors(struct call *c, const struct layout *l, void *const *base, size_t esize);

struct staged {
  kb_buffer *buf[MAX_ITEMS];
};

/* For every storage i: a buffer of alloc * esize bytes on ctx, filled from
 * src[i]; then binds the call to the buffers.  Returns -1 with a message
 * (no buffer left behind). */
int stage_up(kb_context *ctx, struct call *c, const struct layout *l, void *const *src, size_t esize,
             struct staged *s, char *err, size_t err_len);

/* Copies every buffer back into dst[i] and destroys the buffers (also on
 * failure).  Does not rebind the call. */
int stage_down(kb_context *ctx, const struct call *c, const struct layout *l, void *const *dst, size_t esize,
               struct staged *s, char *err, size_t err_len);

#endif /* KB_CONFORMANCE_STAGE_H */
