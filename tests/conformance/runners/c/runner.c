/*
 * runner.c - the C conformance runner.
 *
 *   runner --corpus DIR --out FILE [--threads N]
 *
 * Reads DIR/manifest.tsv and DIR/bad_input.tsv (the flat forms of
 * manifest.json and bad_input.json, see docs/conformance.md), calls every
 * kernel through the public C API on a real kb_context, and writes the
 * result JSON that tests/conformance/report.py reads.  Exit status: 0 when
 * every golden case passed its tolerance and every bad-input case returned
 * the expected status, 1 otherwise, 2 on a usage or corpus error.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelbridge.h"
#include "npy.h"

#define MAX_ITEMS 24
#define NAME_LEN 64
#define LINE_LEN 65536

enum dtype { DT_F32 = 0, DT_I32 = 1 };

struct tensor {
  char name[NAME_LEN];
  enum dtype dtype;
  void *ptr;          /* what the kernel gets (NULL for a null tensor) */
  void *owned;        /* storage to free */
  int64_t count;      /* elements visible through ptr */
  void *before;       /* copy of the contents before the call (bad inputs) */
  char expected[512]; /* golden: expected file, "" when the tensor is not an output */
};

struct call {
  char name[256];
  char kernel[NAME_LEN];
  double tol_ulp, tol_abs;
  char expected_status[NAME_LEN];
  char requires[256];
  int ndims, nflags, nscalars, ntensors;
  char dim_names[MAX_ITEMS][NAME_LEN];
  int64_t dims[MAX_ITEMS];
  char flag_names[MAX_ITEMS][NAME_LEN];
  int flags[MAX_ITEMS];
  char scalar_names[MAX_ITEMS][NAME_LEN];
  char scalars[MAX_ITEMS][NAME_LEN];
  struct tensor tensors[MAX_ITEMS];
  char missing[NAME_LEN]; /* first parameter the dispatcher could not find */
};

/* ------------------------------------------------------------------------ */
/* Argument lookup. */

static int64_t D(struct call *c, const char *name) {
  for (int i = 0; i < c->ndims; i++)
    if (strcmp(c->dim_names[i], name) == 0) return c->dims[i];
  if (c->missing[0] == '\0') snprintf(c->missing, sizeof c->missing, "%s", name);
  return 0;
}

static bool F(struct call *c, const char *name) {
  for (int i = 0; i < c->nflags; i++)
    if (strcmp(c->flag_names[i], name) == 0) return c->flags[i] != 0;
  if (c->missing[0] == '\0') snprintf(c->missing, sizeof c->missing, "%s", name);
  return false;
}

static const char *S(struct call *c, const char *name) {
  for (int i = 0; i < c->nscalars; i++)
    if (strcmp(c->scalar_names[i], name) == 0) return c->scalars[i];
  if (c->missing[0] == '\0') snprintf(c->missing, sizeof c->missing, "%s", name);
  return "0";
}

static float SF(struct call *c, const char *name) { return (float)strtod(S(c, name), NULL); }
static int64_t SI(struct call *c, const char *name) { return (int64_t)strtoll(S(c, name), NULL, 10); }
static uint64_t SU(struct call *c, const char *name) { return (uint64_t)strtoull(S(c, name), NULL, 10); }

static struct tensor *find_tensor(struct call *c, const char *name) {
  for (int i = 0; i < c->ntensors; i++)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

static struct tensor *add_tensor(struct call *c, const char *name) {
  struct tensor *t = find_tensor(c, name);
  if (t != NULL) return t;
  if (c->ntensors >= MAX_ITEMS) return NULL;
  t = &c->tensors[c->ntensors++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  return t;
}

/* A tensor absent from the case is passed as NULL (the "null" list). */
static void *T(struct call *c, const char *name) {
  struct tensor *t = find_tensor(c, name);
  return t == NULL ? NULL : t->ptr;
}
#define TF(c, name) ((float *)T(c, name))
#define TI(c, name) ((int32_t *)T(c, name))

/* Calls c->kernel with the arguments in c.  Returns 0 and the status, or -1
 * for an unknown kernel. */
static int dispatch(kb_context *ctx, struct call *c, kb_status *st) {
  const char *k = c->kernel;
  if (strcmp(k, "silu") == 0) {
    *st = kb_silu(ctx, D(c, "n"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "gelu") == 0) {
    *st = kb_gelu(ctx, D(c, "n"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "gelu_tanh") == 0) {
    *st = kb_gelu_tanh(ctx, D(c, "n"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "add") == 0) {
    *st = kb_add(ctx, D(c, "n"), TF(c, "a"), TF(c, "b"), TF(c, "y"));
  } else if (strcmp(k, "mul") == 0) {
    *st = kb_mul(ctx, D(c, "n"), TF(c, "a"), TF(c, "b"), TF(c, "y"));
  } else if (strcmp(k, "scale") == 0) {
    *st = kb_scale(ctx, D(c, "n"), SF(c, "alpha"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "add_bias") == 0) {
    *st = kb_add_bias(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "bias"), TF(c, "y"));
  } else if (strcmp(k, "softmax") == 0) {
    *st = kb_softmax(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "log_softmax") == 0) {
    *st = kb_log_softmax(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "y"));
  } else if (strcmp(k, "rmsnorm") == 0) {
    *st = kb_rmsnorm(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "weight"), SF(c, "eps"), TF(c, "y"));
  } else if (strcmp(k, "layernorm") == 0) {
    *st = kb_layernorm(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "weight"), TF(c, "bias"), SF(c, "eps"),
                       TF(c, "y"));
  } else if (strcmp(k, "gemm") == 0) {
    *st = kb_gemm(ctx, F(c, "trans_a"), F(c, "trans_b"), D(c, "m"), D(c, "n"), D(c, "k"), SF(c, "alpha"), TF(c, "a"),
                  D(c, "lda"), TF(c, "b"), D(c, "ldb"), SF(c, "beta"), TF(c, "c"), D(c, "ldc"));
  } else if (strcmp(k, "embedding") == 0) {
    *st = kb_embedding(ctx, D(c, "n_ids"), D(c, "vocab"), D(c, "dim"), TI(c, "ids"), TF(c, "table"), TF(c, "out"));
  } else if (strcmp(k, "rope") == 0) {
    *st = kb_rope(ctx, D(c, "seq"), D(c, "heads"), D(c, "head_dim"), TF(c, "x"), TI(c, "positions"), SF(c, "theta"),
                  TF(c, "y"));
  } else if (strcmp(k, "attention") == 0) {
    *st = kb_attention(ctx, D(c, "batch"), D(c, "heads"), D(c, "kv_heads"), D(c, "seq_q"), D(c, "seq_kv"),
                       D(c, "head_dim"), TF(c, "q"), TF(c, "k"), TF(c, "v"), F(c, "causal"), SF(c, "scale"),
                       TF(c, "out"));
  } else if (strcmp(k, "cross_entropy") == 0) {
    *st = kb_cross_entropy(ctx, D(c, "rows"), D(c, "classes"), TF(c, "logits"), TI(c, "targets"),
                           (int32_t)SI(c, "ignore_index"), TF(c, "losses"), TF(c, "mean_loss"));
  } else if (strcmp(k, "cross_entropy_backward") == 0) {
    *st = kb_cross_entropy_backward(ctx, D(c, "rows"), D(c, "classes"), TF(c, "logits"), TI(c, "targets"),
                                    (int32_t)SI(c, "ignore_index"), SF(c, "dloss"), TF(c, "dlogits"));
  } else if (strcmp(k, "adamw_step") == 0) {
    *st = kb_adamw_step(ctx, D(c, "n"), TF(c, "params"), TF(c, "grads"), TF(c, "m"), TF(c, "v"), SF(c, "lr"),
                        SF(c, "beta1"), SF(c, "beta2"), SF(c, "eps"), SF(c, "weight_decay"), SI(c, "step"));
  } else if (strcmp(k, "argmax") == 0) {
    *st = kb_argmax(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TI(c, "out"));
  } else if (strcmp(k, "sample") == 0) {
    *st = kb_sample(ctx, D(c, "rows"), D(c, "cols"), TF(c, "logits"), SF(c, "temperature"), SU(c, "seed"),
                    TI(c, "out"));
  } else if (strcmp(k, "topk_sample") == 0) {
    *st = kb_topk_sample(ctx, D(c, "rows"), D(c, "cols"), TF(c, "logits"), D(c, "k"), SF(c, "temperature"),
                         SU(c, "seed"), TI(c, "out"));
  } else if (strcmp(k, "topp_sample") == 0) {
    *st = kb_topp_sample(ctx, D(c, "rows"), D(c, "cols"), TF(c, "logits"), SF(c, "p"), SF(c, "temperature"),
                         SU(c, "seed"), TI(c, "out"));
  } else {
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Error metric and hash (docs/conformance.md). */

static double ulp32(double want) {
  uint64_t bits;
  memcpy(&bits, &want, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  if (e < -126) e = -126;
  return ldexp(1.0, e - 23);
}

static double element_error(double got, double want, double floor_) {
  if (isnan(got) && isnan(want)) return 0.0;
  if (got == want) return 0.0;
  if (!isfinite(got) || !isfinite(want)) return INFINITY;
  double denom = ulp32(want);
  if (floor_ > denom) denom = floor_;
  return fabs(got - want) / denom;
}

static uint64_t fnv1a64(const void *data, size_t len) {
  const unsigned char *p = (const unsigned char *)data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ------------------------------------------------------------------------ */
/* Output. */

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void json_number(FILE *f, double v) {
  if (isinf(v) || isnan(v))
    fputs("\"inf\"", f);
  else
    fprintf(f, "%.17g", v);
}

/* ------------------------------------------------------------------------ */
/* Corpus reading. */

struct reader {
  FILE *f;
  char line[LINE_LEN];
  int lineno;
  const char *path;
};

/* Splits line in place at tabs; returns the number of fields. */
static int split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  size_t len = strlen(p);
  while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r')) p[--len] = '\0';
  while (n < max) {
    fields[n++] = p;
    char *tab = strchr(p, '\t');
    if (tab == NULL) break;
    *tab = '\0';
    p = tab + 1;
  }
  return n;
}

static void free_call(struct call *c) {
  for (int i = 0; i < c->ntensors; i++) {
    free(c->tensors[i].owned);
    free(c->tensors[i].before);
  }
  c->ntensors = 0;
}

/* Handles the dim/flag/scalar lines shared by both files; 1 if handled. */
static int common_line(struct call *c, char **fld, int nf) {
  if (strcmp(fld[0], "dim") == 0 && nf >= 3 && c->ndims < MAX_ITEMS) {
    snprintf(c->dim_names[c->ndims], NAME_LEN, "%s", fld[1]);
    c->dims[c->ndims++] = (int64_t)strtoll(fld[2], NULL, 10);
    return 1;
  }
  if (strcmp(fld[0], "flag") == 0 && nf >= 3 && c->nflags < MAX_ITEMS) {
    snprintf(c->flag_names[c->nflags], NAME_LEN, "%s", fld[1]);
    c->flags[c->nflags++] = atoi(fld[2]);
    return 1;
  }
  if (strcmp(fld[0], "scalar") == 0 && nf >= 3 && c->nscalars < MAX_ITEMS) {
    snprintf(c->scalar_names[c->nscalars], NAME_LEN, "%s", fld[1]);
    snprintf(c->scalars[c->nscalars++], NAME_LEN, "%s", fld[2]);
    return 1;
  }
  return 0;
}

static int join_path(char *buf, size_t len, const char *dir, const char *file) {
  int n = snprintf(buf, len, "%s/%s", dir, file);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Golden cases. */

struct tally {
  int golden, golden_failed, bad, bad_failed;
};

/* Loads an input .npy into a tensor. */
static int load_input(struct tensor *t, const char *dir, const char *file, char *err, int err_len) {
  char path[1024];
  if (join_path(path, sizeof path, dir, file) != 0) {
    snprintf(err, (size_t)err_len, "path too long");
    return -1;
  }
  struct npy_array a;
  if (npy_read(path, &a, err, err_len) != 0) return -1;
  if (a.dtype == NPY_F64) {
    npy_free(&a);
    snprintf(err, (size_t)err_len, "%s: inputs must be <f4 or <i4", file);
    return -1;
  }
  t->dtype = a.dtype == NPY_F32 ? DT_F32 : DT_I32;
  t->owned = a.data;
  t->ptr = a.data;
  t->count = a.count;
  return 0;
}

static void run_golden(kb_context *ctx, struct call *c, const char *dir, FILE *out, int *first, struct tally *tl) {
  char err[1024] = "";
  kb_status st = KB_STATUS_OK;
  int ok = 1;
  struct npy_array want[MAX_ITEMS];
  int nwant = 0;

  /* Outputs that are not inputs (nor aliases of inputs) get fresh buffers
   * prefilled with quiet NaN (f32) or -1 (i32), sized from the expected file. */
  for (int i = 0; ok && i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    if (t->expected[0] == '\0') continue;
    char path[1024];
    if (join_path(path, sizeof path, dir, t->expected) != 0 || npy_read(path, &want[nwant], err, sizeof err) != 0) {
      ok = 0;
      break;
    }
    struct npy_array *w = &want[nwant++];
    if (t->ptr == NULL && t->owned == NULL) {
      t->dtype = w->dtype == NPY_I32 ? DT_I32 : DT_F32;
      t->count = w->count;
      t->owned = malloc((size_t)(w->count > 0 ? w->count : 1) * 4);
      if (t->owned == NULL) {
        snprintf(err, sizeof err, "out of memory");
        ok = 0;
        break;
      }
      t->ptr = t->owned;
      for (int64_t j = 0; j < t->count; j++) {
        if (t->dtype == DT_F32) {
          uint32_t qnan = 0x7fc00000u;
          memcpy((float *)t->ptr + j, &qnan, 4);
        } else {
          ((int32_t *)t->ptr)[j] = -1;
        }
      }
    }
    if (t->count != w->count) {
      snprintf(err, sizeof err, "%s: expected %lld elements, buffer has %lld", t->name, (long long)w->count,
               (long long)t->count);
      ok = 0;
    }
  }

  if (ok) {
    if (dispatch(ctx, c, &st) != 0) {
      snprintf(err, sizeof err, "unknown kernel %s", c->kernel);
      ok = 0;
    } else if (c->missing[0] != '\0') {
      snprintf(err, sizeof err, "case lacks parameter %s", c->missing);
      ok = 0;
    } else if (st != KB_STATUS_OK) {
      snprintf(err, sizeof err, "%s: %s", kb_status_string(st), kb_context_last_error(ctx));
      ok = 0;
    }
  }

  double max_err = 0.0;
  double floor_ = c->tol_ulp > 0 ? c->tol_abs / c->tol_ulp : 0.0;
  fprintf(out, "%s\n  {\"name\": ", *first ? "" : ",");
  *first = 0;
  json_string(out, c->name);
  fprintf(out, ", \"kernel\": ");
  json_string(out, c->kernel);
  fprintf(out, ", \"status\": ");
  json_string(out, ok ? "OK" : kb_status_string(st));
  fprintf(out, ", \"hashes\": {");
  int w_index = 0, nh = 0;
  for (int i = 0; ok && i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    if (t->expected[0] == '\0') continue;
    struct npy_array *w = &want[w_index++];
    for (int64_t j = 0; j < t->count; j++) {
      double e;
      if (t->dtype == DT_I32) {
        double g = (double)((int32_t *)t->ptr)[j];
        double x = w->dtype == NPY_I32 ? (double)((int32_t *)w->data)[j] : ((double *)w->data)[j];
        e = fabs(g - x);
      } else {
        double x = w->dtype == NPY_F64 ? ((double *)w->data)[j] : (double)((float *)w->data)[j];
        e = element_error((double)((float *)t->ptr)[j], x, floor_);
      }
      if (!(e <= max_err)) max_err = e;
    }
    fprintf(out, "%s", nh++ ? ", " : "");
    json_string(out, t->name);
    fprintf(out, ": \"%016llx\"", (unsigned long long)fnv1a64(t->ptr, (size_t)t->count * 4));
  }
  int passed = ok && max_err <= c->tol_ulp;
  fprintf(out, "}, \"max_ulp\": ");
  if (ok)
    json_number(out, max_err);
  else
    fputs("\"inf\"", out);
  fprintf(out, ", \"passed\": %s", passed ? "true" : "false");
  if (!ok) {
    fprintf(out, ", \"error\": ");
    json_string(out, err);
  }
  fprintf(out, "}");
  for (int i = 0; i < nwant; i++) npy_free(&want[i]);
  tl->golden++;
  if (!passed) {
    tl->golden_failed++;
    fprintf(stderr, "FAIL %s: %s (max_ulp %g, tolerance %g)\n", c->name, ok ? "out of tolerance" : err, max_err,
            c->tol_ulp);
  }
}

static int run_manifest(kb_context *ctx, const char *dir, FILE *out, struct tally *tl) {
  char path[1024];
  if (join_path(path, sizeof path, dir, "manifest.tsv") != 0) return -1;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  static char line[LINE_LEN];
  static struct call c;
  int in_case = 0, first = 1, lineno = 0, bad = 0;
  char err[1024];
  fprintf(out, "  \"cases\": [");
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char *fld[8];
    int nf = split(line, fld, 8);
    if (strcmp(fld[0], "case") == 0 && nf >= 5) {
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "%s", fld[1]);
      snprintf(c.kernel, sizeof c.kernel, "%s", fld[2]);
      c.tol_ulp = strtod(fld[3], NULL);
      c.tol_abs = strtod(fld[4], NULL);
      in_case = 1;
      bad = 0;
    } else if (!in_case) {
      fprintf(stderr, "%s:%d: expected a case line\n", path, lineno);
      fclose(f);
      return -1;
    } else if (common_line(&c, fld, nf)) {
    } else if (strcmp(fld[0], "in") == 0 && nf >= 3) {
      struct tensor *t = add_tensor(&c, fld[1]);
      if (t == NULL || load_input(t, dir, fld[2], err, sizeof err) != 0) {
        fprintf(stderr, "%s:%d: %s\n", path, lineno, err);
        bad = 1;
      }
    } else if (strcmp(fld[0], "null") == 0 && nf >= 2) {
      /* Absent tensors are passed as NULL. */
    } else if (strcmp(fld[0], "alias") == 0 && nf >= 3) {
      struct tensor *src = find_tensor(&c, fld[2]);
      struct tensor *t = add_tensor(&c, fld[1]);
      if (src == NULL || t == NULL) {
        fprintf(stderr, "%s:%d: alias of unknown input %s\n", path, lineno, fld[2]);
        bad = 1;
      } else {
        t->dtype = src->dtype;
        t->ptr = src->ptr; /* same buffer; owned stays NULL */
        t->count = src->count;
      }
    } else if (strcmp(fld[0], "out") == 0 && nf >= 3) {
      struct tensor *t = add_tensor(&c, fld[1]);
      if (t != NULL) snprintf(t->expected, sizeof t->expected, "%s", fld[2]);
    } else if (strcmp(fld[0], "end") == 0) {
      if (bad) {
        fclose(f);
        free_call(&c);
        return -1;
      }
      run_golden(ctx, &c, dir, out, &first, tl);
      free_call(&c);
      in_case = 0;
    } else {
      fprintf(stderr, "%s:%d: unknown line %s\n", path, lineno, fld[0]);
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  fprintf(out, "\n  ],\n");
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Bad-input cases. */

/* Features the C API cannot express (docs/conformance.md, "requires"). */
static const char *c_cannot(const char *requires) {
  if (strstr(requires, "length_mismatch") != NULL)
    return "C pointers carry no length: a buffer shorter or longer than the sizes say cannot be detected";
  return NULL;
}

static int setup_bad(struct call *c, char *err, size_t err_len, char (*fills)[LINE_LEN / 4], int nfill,
                     char (*fill_names)[NAME_LEN], char (*ov_names)[NAME_LEN], char (*ov_with)[NAME_LEN],
                     int64_t *ov_offset, int nov) {
  /* Plain tensors: len elements (at least one allocated so the pointer is
   * not NULL), filled with 1.0 / 0 unless values are given. */
  for (int i = 0; i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    int is_overlapped = 0;
    for (int j = 0; j < nov; j++)
      if (strcmp(ov_names[j], t->name) == 0) is_overlapped = 1;
    if (is_overlapped) continue;
    /* An overlap target gets room for the tensors placed inside it. */
    int64_t room = t->count;
    for (int j = 0; j < nov; j++) {
      if (strcmp(ov_with[j], t->name) != 0) continue;
      struct tensor *o = find_tensor(c, ov_names[j]);
      if (o != NULL && ov_offset[j] + o->count > room) room = ov_offset[j] + o->count;
    }
    t->owned = calloc((size_t)(room > 0 ? room : 1), 4);
    if (t->owned == NULL) {
      snprintf(err, err_len, "out of memory");
      return -1;
    }
    t->ptr = t->owned;
    for (int64_t j = 0; j < room; j++) {
      if (t->dtype == DT_F32)
        ((float *)t->ptr)[j] = 1.0f;
      else
        ((int32_t *)t->ptr)[j] = 0;
    }
    for (int j = 0; j < nfill; j++) {
      if (strcmp(fill_names[j], t->name) != 0) continue;
      char *p = fills[j];
      for (int64_t e = 0; e < t->count && *p; e++) {
        char *end;
        if (t->dtype == DT_F32)
          ((float *)t->ptr)[e] = (float)strtod(p, &end);
        else
          ((int32_t *)t->ptr)[e] = (int32_t)strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
      }
    }
  }
  for (int j = 0; j < nov; j++) {
    struct tensor *o = find_tensor(c, ov_names[j]);
    struct tensor *w = find_tensor(c, ov_with[j]);
    if (o == NULL || w == NULL || w->ptr == NULL) {
      snprintf(err, err_len, "bad overlap %.60s/%.60s", ov_names[j], ov_with[j]);
      return -1;
    }
    o->ptr = (char *)w->ptr + ov_offset[j] * 4;
  }
  return 0;
}

/* Dtype of each tensor parameter, from the kernel's signature. */
static enum dtype param_dtype(const char *kernel, const char *name) {
  static const char *const i32_params[][2] = {{"embedding", "ids"},       {"rope", "positions"},
                                              {"cross_entropy", "targets"}, {"cross_entropy_backward", "targets"},
                                              {"argmax", "out"},          {"sample", "out"},
                                              {"topk_sample", "out"},     {"topp_sample", "out"}};
  for (size_t i = 0; i < sizeof i32_params / sizeof i32_params[0]; i++)
    if (strcmp(i32_params[i][0], kernel) == 0 && strcmp(i32_params[i][1], name) == 0) return DT_I32;
  return DT_F32;
}

static void run_bad_case(kb_context *ctx, struct call *c, char (*fills)[LINE_LEN / 4], int nfill,
                         char (*fill_names)[NAME_LEN], char (*ov_names)[NAME_LEN], char (*ov_with)[NAME_LEN],
                         int64_t *ov_offset, int nov, FILE *out, int *first, struct tally *tl) {
  char err[512] = "";
  const char *na = c_cannot(c->requires);
  const char *got = "n/a";
  int ok = 0;
  int untouched = 1;
  if (na == NULL) {
    if (setup_bad(c, err, sizeof err, fills, nfill, fill_names, ov_names, ov_with, ov_offset, nov) != 0) {
      got = "RUNNER_ERROR";
    } else {
      for (int i = 0; i < c->ntensors; i++) {
        struct tensor *t = &c->tensors[i];
        if (t->ptr == NULL) continue;
        t->before = malloc((size_t)(t->count > 0 ? t->count : 1) * 4);
        if (t->before != NULL) memcpy(t->before, t->ptr, (size_t)t->count * 4);
      }
      kb_status st;
      if (dispatch(ctx, c, &st) != 0 || c->missing[0] != '\0') {
        got = "RUNNER_ERROR";
        snprintf(err, sizeof err, "cannot call %s (missing %s)", c->kernel, c->missing);
      } else {
        got = kb_status_string(st);
        if (st != KB_STATUS_OK) {
          for (int i = 0; i < c->ntensors; i++) {
            struct tensor *t = &c->tensors[i];
            if (t->ptr != NULL && t->before != NULL && memcmp(t->before, t->ptr, (size_t)t->count * 4) != 0)
              untouched = 0;
          }
        }
        ok = strcmp(got, c->expected_status) == 0 && untouched;
      }
    }
  }
  fprintf(out, "%s\n  {\"name\": ", *first ? "" : ",");
  *first = 0;
  json_string(out, c->name);
  fprintf(out, ", \"kernel\": ");
  json_string(out, c->kernel);
  fprintf(out, ", \"expected\": ");
  json_string(out, c->expected_status);
  fprintf(out, ", \"got\": ");
  json_string(out, got);
  if (na != NULL) {
    fprintf(out, ", \"reason\": ");
    json_string(out, na);
  } else {
    fprintf(out, ", \"untouched\": %s", untouched ? "true" : "false");
    if (err[0] != '\0') {
      fprintf(out, ", \"reason\": ");
      json_string(out, err);
    }
  }
  fprintf(out, "}");
  tl->bad++;
  if (na == NULL && !ok) {
    tl->bad_failed++;
    fprintf(stderr, "FAIL %s: expected %s, got %s%s %s\n", c->name, c->expected_status, got,
            untouched ? "" : " and an output was modified", err);
  }
}

static int run_bad(kb_context *ctx, const char *dir, FILE *out, struct tally *tl) {
  char path[1024];
  if (join_path(path, sizeof path, dir, "bad_input.tsv") != 0) return -1;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  static char line[LINE_LEN];
  static struct call c;
  static char fills[MAX_ITEMS][LINE_LEN / 4];
  static char fill_names[MAX_ITEMS][NAME_LEN];
  static char ov_names[MAX_ITEMS][NAME_LEN], ov_with[MAX_ITEMS][NAME_LEN];
  static int64_t ov_offset[MAX_ITEMS];
  int nfill = 0, nov = 0, first = 1, lineno = 0, in_case = 0;
  fprintf(out, "  \"bad_input\": [");
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n') continue;
    char *fld[8];
    int nf = split(line, fld, 8);
    if (strcmp(fld[0], "bad") == 0 && nf >= 5) {
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "%s", fld[1]);
      snprintf(c.kernel, sizeof c.kernel, "%s", fld[2]);
      snprintf(c.expected_status, sizeof c.expected_status, "%s", fld[3]);
      snprintf(c.requires, sizeof c.requires, "%s", fld[4]);
      nfill = nov = 0;
      in_case = 1;
    } else if (!in_case) {
      fprintf(stderr, "%s:%d: expected a bad line\n", path, lineno);
      fclose(f);
      return -1;
    } else if (common_line(&c, fld, nf)) {
    } else if (strcmp(fld[0], "tensor") == 0 && nf >= 3) {
      struct tensor *t = add_tensor(&c, fld[1]);
      if (t != NULL) {
        t->count = (int64_t)strtoll(fld[2], NULL, 10);
        t->dtype = param_dtype(c.kernel, fld[1]);
      }
    } else if (strcmp(fld[0], "values") == 0 && nf >= 3 && nfill < MAX_ITEMS) {
      snprintf(fill_names[nfill], NAME_LEN, "%s", fld[1]);
      snprintf(fills[nfill++], sizeof fills[0], "%s", fld[2]);
    } else if (strcmp(fld[0], "null") == 0) {
      /* Absent tensors are passed as NULL. */
    } else if (strcmp(fld[0], "overlap") == 0 && nf >= 4 && nov < MAX_ITEMS) {
      snprintf(ov_names[nov], NAME_LEN, "%s", fld[1]);
      snprintf(ov_with[nov], NAME_LEN, "%s", fld[2]);
      ov_offset[nov++] = (int64_t)strtoll(fld[3], NULL, 10);
    } else if (strcmp(fld[0], "end") == 0) {
      run_bad_case(ctx, &c, fills, nfill, fill_names, ov_names, ov_with, ov_offset, nov, out, &first, tl);
      free_call(&c);
      in_case = 0;
    } else {
      fprintf(stderr, "%s:%d: unknown line %s\n", path, lineno, fld[0]);
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  fprintf(out, "\n  ]\n");
  return 0;
}

/* ------------------------------------------------------------------------ */

static void usage(void) { fprintf(stderr, "usage: runner --corpus DIR --out FILE [--threads N]\n"); }

int main(int argc, char **argv) {
  const char *dir = NULL, *out_path = NULL;
  int64_t threads = 4;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_path = argv[++i];
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = (int64_t)strtoll(argv[++i], NULL, 10);
    } else {
      usage();
      return 2;
    }
  }
  if (dir == NULL || out_path == NULL) {
    usage();
    return 2;
  }
  kb_context *ctx = NULL;
  kb_status st = kb_context_create(KB_BACKEND_CPU, threads, &ctx);
  if (st != KB_STATUS_OK) {
    fprintf(stderr, "kb_context_create: %s\n", kb_status_string(st));
    return 2;
  }
  FILE *out = fopen(out_path, "w");
  if (out == NULL) {
    fprintf(stderr, "cannot write %s: %s\n", out_path, strerror(errno));
    kb_context_destroy(ctx);
    return 2;
  }
  struct tally tl = {0, 0, 0, 0};
  fprintf(out, "{\n  \"format\": 1,\n  \"language\": \"c\",\n  \"backend\": \"cpu\",\n  \"version\": ");
  json_string(out, kb_version_string());
  fprintf(out, ",\n  \"threads\": %lld,\n", (long long)kb_context_num_threads(ctx));
  int rc = run_manifest(ctx, dir, out, &tl);
  if (rc == 0) rc = run_bad(ctx, dir, out, &tl);
  fprintf(out, "}\n");
  fclose(out);
  kb_context_destroy(ctx);
  if (rc != 0) return 2;
  printf("c runner: %d/%d golden cases passed, %d/%d bad-input cases as expected (threads %lld)\n",
         tl.golden - tl.golden_failed, tl.golden, tl.bad - tl.bad_failed, tl.bad, (long long)threads);
  return tl.golden_failed == 0 && tl.bad_failed == 0 ? 0 : 1;
}
