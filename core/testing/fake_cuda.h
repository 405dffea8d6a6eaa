/*
 * fake_cuda.h - a fake CUDA backend for tests of the core's CUDA dispatch on
 * machines without a GPU.  Install it once per test process, before any CUDA
 * call:
 *
 *     kb__cuda_use_table_for_testing(kb_fake_cuda_table());   (internal.h)
 *
 * Not thread-safe against concurrent fake calls beyond what its one mutex
 * gives: the call log is global, so tests that read it run one thread.
 */
#ifndef KB_FAKE_CUDA_H
#define KB_FAKE_CUDA_H

#include <stdint.h>

#include "kbcuda_api.h"

/* A host-memory imitation of the CUDA backend table (struct kbcuda_table) for
 * testing the core's CUDA dispatch on machines without a GPU.  One fake
 * device "Fake GPU" (compute capability 9.0, 1 GiB).  "Device memory" is host
 * memory from the fake dev_malloc, tracked so pointer_kind reports
 * KBCUDA_PTR_DEVICE (device 0) for any pointer inside a live block and
 * KBCUDA_PTR_HOST otherwise.  memcpy/memset entries really copy.
 * validate_index / validate_logits really compute (on the host).  Every other
 * kernel entry (silu ... attention_dt) only records the call and returns OK
 * (or the injected failure); it writes nothing. */
const struct kbcuda_table *kb_fake_cuda_table(void);

/* Forgets calls and injected failures; memory blocks stay. */
void kb_fake_cuda_reset(void);

/* The next kernel entry (or ctx_synchronize) returns status, and ctx_message
 * gives "fn: message".  A KBCUDA_STATUS_DEVICE_LOST latches the ctx like the
 * real backend: ctx_lost returns 1 and every later entry on it fails. */
void kb_fake_cuda_fail_next(kbcuda_status status, const char *message);

/* Table field name of the last kernel/validate entry called, e.g. "silu",
 * "unary_dt", "validate_index"; "" if none since reset. */
const char *kb_fake_cuda_last_entry(void);

/* Kernel + validate entries called since reset. */
int kb_fake_cuda_calls(void);

/* dt argument of the last *_dt entry (KBCUDA_BF16...), -1 otherwise. */
int32_t kb_fake_cuda_last_dtype(void);

/* op argument of unary_dt/binary_dt, log flag of softmax_dt; -1 otherwise. */
int32_t kb_fake_cuda_last_op(void);

/* Entries (kernel, validate or synchronize) that started while another
 * entry was inside the same ctx, since the process started: two threads
 * using one ctx at once.  The core serialises calls per context, so 0. */
int kb_fake_cuda_overlaps(void);

#endif /* KB_FAKE_CUDA_H */
