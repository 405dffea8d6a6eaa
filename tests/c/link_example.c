/*
 * link_example.c - a minimal user of the distributed C library, built by
 * dist_link_test against the static archive and against the shared library.
 */
#include <stdio.h>
#include <string.h>

#include "kernelbridge.h"

int main(void) {
  if (kb_version_number() != KB_VERSION_NUMBER) {
    printf("version mismatch: header %d, library %u\n", KB_VERSION_NUMBER, (unsigned)kb_version_number());
    return 1;
  }
  printf("kernelbridge %s\n", kb_version_string());

  kb_context *ctx = NULL;
  /* CPU explicitly: the arrays below are host memory, which a CUDA context
   * (what AUTO picks on a GPU machine) refuses. */
  kb_status st = kb_context_create(KB_BACKEND_CPU, 2, &ctx);
  printf("context: %s backend=%d threads=%lld\n", kb_status_string(st), (int)kb_context_backend(ctx),
         (long long)kb_context_num_threads(ctx));
  if (st != KB_STATUS_OK) return 1;

  const float a[3] = {1.0f, 2.0f, 3.0f}, b[3] = {4.0f, 5.0f, 6.0f};
  float y[3] = {0.0f, 0.0f, 0.0f};
  st = kb_add(ctx, 3, a, b, y);
  printf("kb_add: %s %g %g %g\n", kb_status_string(st), y[0], y[1], y[2]);

  const float x[4] = {0.0f, 0.0f, 7.0f, 7.0f};
  float s[4];
  st = kb_softmax(ctx, 2, 2, x, s);
  printf("kb_softmax: %s %g %g %g %g\n", kb_status_string(st), s[0], s[1], s[2], s[3]);

  st = kb_add(ctx, -1, a, b, y);
  printf("kb_add(n=-1): %s, message names kb_add: %s\n", kb_status_string(st),
         strncmp(kb_context_last_error(ctx), "kb_add: ", 8) == 0 ? "yes" : "no");

  kb_context_destroy(ctx);
  return 0;
}
