/*
 * What the fast path (fastcall.c) and the shims generated into the cffi
 * module kernelbridge._native (kernelbridge_build.py) agree on.
 * Hand-written.
 */
#ifndef KERNELBRIDGE_PYTHON_FASTCALL_H
#define KERNELBRIDGE_PYTHON_FASTCALL_H

#include <stdint.h>

/* One C argument of a kernel; a shim reads the member its parameter's type names. */
typedef union {
  void *p;     /* context, tensors */
  int64_t i;   /* sizes, int64 scalars */
  uint64_t u;  /* uint64 scalars (seeds) */
  double d;    /* double scalars */
  float f;     /* float scalars */
  int32_t i32; /* int32 scalars, bool flags, enums */
} kbpy_arg;

/* Calls one kernel with args[0..] in its parameter order; returns its kb_status. */
typedef int (*kbpy_shim)(const kbpy_arg *args);

#endif
