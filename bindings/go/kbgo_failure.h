/* kbgo_failure.h - the outcome of a failed C call as the Go package's C
 * helpers return it (kbgo_fail in kernelbridge_gen.go), shared by the cgo
 * preambles that read it (context.go, kernel.go). */
#ifndef KBGO_FAILURE_H
#define KBGO_FAILURE_H

#include <stdint.h>

/* A failed call's status and a copy of its C message, made inside the cgo
 * call that failed: the library keeps messages per OS thread, and a
 * goroutine may run its next cgo call on another one.  Each failed call has
 * its own (malloc'd, owned = 1, freed by Go), so goroutines sharing a
 * Context never see each other's messages; when malloc fails, a static one
 * without a message (owned = 0). */
typedef struct kbgo_failure {
  int32_t status;
  int32_t owned;
  const char *message;
} kbgo_failure;

#endif /* KBGO_FAILURE_H */
