/* npy.c - see npy.h.  The format: "\x93NUMPY", major, minor, a little-endian
 * header length (uint16 for v1, uint32 for v2), a Python dict literal with
 * 'descr', 'fortran_order' and 'shape', then the raw data. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, int err_len, const char *path, const char *what) {
  snprintf(err, (size_t)err_len, "%s: %s", path, what);
  return -1;
}

static int little_endian_host(void) {
  uint16_t probe = 1;
  unsigned char first;
  memcpy(&first, &probe, 1);
  return first == 1;
}

static void byteswap(void *data, int64_t count, int size) {
  unsigned char *p = (unsigned char *)data;
  for (int64_t i = 0; i < count; i++, p += size) {
    for (int j = 0; j < size / 2; j++) {
      unsigned char t = p[j];
      p[j] = p[size - 1 - j];
      p[size - 1 - j] = t;
    }
  }
}

int npy_read(const char *path, struct npy_array *out, char *err, int err_len) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (f == NULL) return fail(err, err_len, path, "cannot open");
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fail(err, err_len, path, "not a .npy file");
  }
  size_t header_len;
  if (pre[6] == 1) {
    header_len = (size_t)pre[8] | ((size_t)pre[9] << 8);
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      fclose(f);
      return fail(err, err_len, path, "truncated header");
    }
    header_len = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
  } else {
    fclose(f);
    return fail(err, err_len, path, "unsupported .npy version");
  }
  char *header = (char *)malloc(header_len + 1);
  if (header == NULL || fread(header, 1, header_len, f) != header_len) {
    free(header);
    fclose(f);
    return fail(err, err_len, path, "truncated header");
  }
  header[header_len] = '\0';

  const char *descr = strstr(header, "'descr'");
  const char *fortran = strstr(header, "'fortran_order'");
  const char *shape = strstr(header, "'shape'");
  int ok = descr != NULL && fortran != NULL && shape != NULL;
  int size = 0;
  int swap = 0;
  if (ok) {
    descr = strchr(descr + 7, '\'');
    ok = descr != NULL;
  }
  if (ok) {
    char order = descr[1];
    const char *code = descr + 2;
    if (order == '|' || order == '=') order = little_endian_host() ? '<' : '>';
    swap = (order == '<') != little_endian_host();
    if (strncmp(code, "f4'", 3) == 0) {
      out->dtype = NPY_F32;
      size = 4;
    } else if (strncmp(code, "f8'", 3) == 0) {
      out->dtype = NPY_F64;
      size = 8;
    } else if (strncmp(code, "i4'", 3) == 0) {
      out->dtype = NPY_I32;
      size = 4;
    } else if (strncmp(code, "u1'", 3) == 0) {
      out->dtype = NPY_U8;
      size = 1;
    } else if (strncmp(code, "u2'", 3) == 0) {
      out->dtype = NPY_U16;
      size = 2;
    } else {
      ok = 0;
    }
  }
  if (ok) {
    const char *v = strchr(fortran + 15, ':');
    while (v != NULL && (*v == ':' || *v == ' ')) v++;
    ok = v != NULL && strncmp(v, "False", 5) == 0;
  }
  if (ok) {
    const char *p = strchr(shape + 7, '(');
    ok = p != NULL;
    out->count = 1;
    while (ok) {
      p++;
      while (*p == ' ' || *p == ',') p++;
      if (*p == ')') break;
      char *end;
      long long d = strtoll(p, &end, 10);
      if (end == p || d < 0 || out->ndim >= 8) {
        ok = 0;
        break;
      }
      out->shape[out->ndim++] = (int64_t)d;
      out->count *= (int64_t)d;
      p = end - 1;
      if (p[1] == ')') break;
    }
  }
  free(header);
  if (!ok) {
    fclose(f);
    return fail(err, err_len, path, "unsupported header (need <f4, <f8, <i4, <u2 or |u1, C order)");
  }
  size_t bytes = (size_t)out->count * (size_t)size;
  size_t room = bytes > 0 ? (bytes + 3) / 4 * 4 : 8;
  out->data = calloc(room, 1);
  if (out->data == NULL || fread(out->data, 1, bytes, f) != bytes) {
    fclose(f);
    npy_free(out);
    return fail(err, err_len, path, "truncated data");
  }
  fclose(f);
  if (swap) byteswap(out->data, out->count, size);
  return 0;
}

void npy_free(struct npy_array *a) {
  free(a->data);
  a->data = NULL;
}
