/*
 * header_compile.c - compiled (not linked) by header_compile_test as C99, C11
 * and C++17 with -Wall -Wextra -Werror -pedantic: the public header must be
 * clean in every language mode a user may choose.
 */
#include "kernelbridge.h"
#include "kernelbridge.h" /* the include guard works */

#if KB_VERSION_NUMBER != KB_VERSION_MAJOR * 10000 + KB_VERSION_MINOR * 100 + KB_VERSION_PATCH
#error "KB_VERSION_NUMBER disagrees with its parts"
#endif

typedef kb_status (*softmax_fn)(kb_context *, int64_t, int64_t, const float *, float *);
typedef kb_status (*gemm_fn)(kb_context *, bool, bool, int64_t, int64_t, int64_t, float, const float *, int64_t,
                             const float *, int64_t, float, float *, int64_t);

int main(void) {
  softmax_fn softmax = kb_softmax;
  gemm_fn gemm = kb_gemm;
  kb_status status = KB_STATUS_OK;
  kb_backend backend = KB_BACKEND_AUTO;
  kb_context *ctx = NULL;
  return (softmax != NULL && gemm != NULL && ctx == NULL && status == KB_STATUS_OK && backend == KB_BACKEND_AUTO)
             ? 0
             : 1;
}
