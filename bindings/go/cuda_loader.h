/* vendored by tools/vendor_c.py from core/src/cuda_loader.h; do not edit */
/*
 * cuda_loader.h - run-time loading of the CUDA backend library
 * libkernelbridge_cuda.so (docs/cuda.md).  Internal to the core.  Plain C99 +
 * POSIX, no CUDA header: the core compiles and runs without the toolkit.
 * The rest of the core reaches the backend through core/src/cuda.c (the
 * process-wide probe), not through these functions directly.
 */
#ifndef KB_CUDA_LOADER_H
#define KB_CUDA_LOADER_H

#include <stddef.h>

#include "kbcuda_api.h"

/* Name of the environment variable holding the full path of the library. */
#define KB_CUDA_LIBRARY_ENV "KB_CUDA_LIBRARY"

/*
 * Returns the CUDA backend's function table, loading libkernelbridge_cuda.so
 * on the first call (thread-safe, once per process; the library stays loaded
 * and a failure is remembered).  Search order:
 *   1. $KB_CUDA_LIBRARY, a full path (skipped when unset or empty);
 *   2. libkernelbridge_cuda.so in the directory of the library (or program)
 *      that contains this loader, found with dladdr;
 *   3. dlopen("libkernelbridge_cuda.so"): the system search path
 *      (LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default directories).
 * The first candidate that loads, exports kbcuda_get_table and provides
 * KBCUDA_ABI_VERSION with at least the version's first table
 * (KBCUDA_TABLE_V1_SIZE; later appended entries are optional) wins.  On failure returns NULL and writes to msg (when
 * msg != NULL and cap > 0) every candidate tried and why it failed; on
 * success writes "loaded <path> (tried before: ...)".  Loading the library touches no GPU: a
 * machine without a driver gets the table, and table->device_count says why
 * CUDA cannot be used.
 */
const struct kbcuda_table *kb__cuda_load(char *msg, size_t cap);

/* The same search without the once-per-process cache, for tests.  Every call
 * may load another copy of the library; the handles are never closed. */
const struct kbcuda_table *kb__cuda_search(char *msg, size_t cap);

#endif /* KB_CUDA_LOADER_H */
