/*
 * npy.h - minimal reader for the .npy v1.0/v2.0 files of the conformance
 * corpus (little-endian '<f4', '<f8', '<i4' and '<u2', and bytes '|u1'; C order).
 */
#ifndef KB_CONFORMANCE_NPY_H
#define KB_CONFORMANCE_NPY_H

#include <stdint.h>

/* NPY_U16: '<u2', the bit patterns of bfloat16 / float16 tensors. */
enum npy_dtype { NPY_F32 = 0, NPY_F64 = 1, NPY_I32 = 2, NPY_U8 = 3, NPY_U16 = 4 };

struct npy_array {
  enum npy_dtype dtype;
  int ndim;
  int64_t shape[8];
  int64_t count; /* product of shape (1 for ndim == 0) */
  void *data;    /* count elements, malloc'ed: at least 1 element, and whole 4-byte
                    units (the tail zeroed), so that the runner's storages,
                    counted in 4-byte units, can hold u8 data too */
};

/* Reads path; returns 0 on success, otherwise -1 with a message in err. */
int npy_read(const char *path, struct npy_array *out, char *err, int err_len);

void npy_free(struct npy_array *a);

#endif /* KB_CONFORMANCE_NPY_H */
