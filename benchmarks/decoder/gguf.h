/* gguf.h - a small reader of GGUF files (version 2 and 3) for the decoder
 * benchmark: the metadata it needs and the tensors, in place (the file is
 * memory-mapped).  The file is untrusted input: every length, count and
 * offset is checked against the file's size before it is used, and a
 * malformed file is an error with a message, never a read out of bounds. */
#ifndef KB_BENCH_GGUF_H
#define KB_BENCH_GGUF_H

#include <stddef.h>
#include <stdint.h>

struct gguf_tensor {
  char name[96];
  uint32_t type;       /* ggml_type: the kb_dtype values for the types kernelbridge reads */
  int n_dims;
  int64_t dims[4];     /* GGUF order: dims[0] is the contiguous one */
  const void *data;    /* inside the mapping */
  uint64_t bytes;      /* as the type and dims give it; 0 for a type this reader does not size */
};

struct gguf_file {
  void *map;
  size_t size;
  uint32_t version;
  int64_t n_tensors;
  struct gguf_tensor *tensors;
  /* The llama metadata the benchmark needs (-1 / 0 when absent). */
  char arch[32];
  int64_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_ctx, n_vocab;
  double rope_theta, rms_eps;
};

/* Opens and checks path; 0 on success, else -1 with a message in err. */
int gguf_open(const char *path, struct gguf_file *f, char *err, size_t err_cap);

/* The tensor named name, or NULL. */
const struct gguf_tensor *gguf_find(const struct gguf_file *f, const char *name);

void gguf_close(struct gguf_file *f);

#endif /* KB_BENCH_GGUF_H */
