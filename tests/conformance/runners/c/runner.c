/*
 * runner.c - the C conformance runner.
 *
 *   runner --corpus DIR --out FILE [--threads N] [--backend cpu|cpu-buffers|cuda]
 *
 * Reads DIR/manifest.tsv and DIR/bad_input.tsv (the flat forms of
 * manifest.json and bad_input.json, see docs/conformance.md), calls every
 * kernel through the public C API on a real kb_context, and writes the
 * result JSON that tests/conformance/report.py reads.  Exit status: 0 when
 * every golden case passed its tolerance and every bad-input case returned
 * the expected status, 1 otherwise, 2 on a usage or corpus error.
 *
 * --backend (default cpu) chooses where the kernels run: cpu passes host
 * memory to a CPU context; cpu-buffers and cuda stage every tensor in
 * kb_buffers of a CPU or CUDA context and compare with a CPU run of the same
 * call (backend.h).  Without a usable CUDA backend, cuda prints
 * "SKIPPED: <reason>" and exits 0 without writing FILE.  --cuda-rules (with
 * cpu-buffers) applies the cuda backend's comparison rules instead of
 * bitwise equality, so that code runs where there is no GPU.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernelbridge.h"
#include "npy.h"
#include "runner.h"

#define LINE_LEN 65536

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

int64_t dtype_size(enum dtype dt) { return dt == DT_U8 ? 1 : dt == DT_U16 ? 2 : 4; }

static enum dtype dtype_of_npy(enum npy_dtype d) {
  return d == NPY_I32 ? DT_I32 : d == NPY_U8 ? DT_U8 : d == NPY_U16 ? DT_U16 : DT_F32;
}

/* 4-byte units of storage for count elements of dt (at least one, so that
 * no storage address is NULL). */
static int64_t units_for(enum dtype dt, int64_t count) {
  int64_t bytes = count * dtype_size(dt);
  return bytes > 0 ? (bytes + 3) / 4 : 1;
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

static struct tensor *add_tensor(struct call *c, const char *name) {
  struct tensor *t = find_tensor(c, name);
  if (t != NULL) return t;
  if (c->ntensors >= MAX_ITEMS) return NULL;
  t = &c->tensors[c->ntensors++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  return t;
}

/* ------------------------------------------------------------------------ */
/* State of one run. */

struct kernel_stats {
  char kernel[NAME_LEN];
  int cases, passed, lowp_cases, lowp_passed;
  double max_ulp, worst, lowp_worst; /* golden metric; ratios to the rule against the CPU */
};

struct run {
  enum mode mode;
  enum mode rules; /* whose comparison rules apply: mode, or cuda for --cuda-rules */
  kb_context *ctx; /* the tested context */
  kb_context *ref; /* buffer modes: a CPU context the same calls run on with host memory */
  int golden, golden_failed, bad, bad_failed, lowp, lowp_failed;
  /* cuda: cases of kernels the CUDA backend does not implement */
  int golden_unimplemented, bad_unimplemented;
  FILE *lowp_json; /* "lowp_cases" entries, written after "cases" */
  int lowp_first;
  int nstats;
  struct kernel_stats stats[128];
};

/* The CUDA backend implements a subset of the kernels (docs/cuda.md); the
 * others answer UNSUPPORTED with this message before looking at their
 * arguments (//kernels/cpu:cuda_dispatch_test checks which).  Their cases are
 * counted apart, not as failures. */
static int cuda_unimplemented(const struct run *r, const char *status, const char *msg) {
  return r->mode == MODE_CUDA && strcmp(status, "UNSUPPORTED") == 0 &&
         strstr(msg, "not implemented by the CUDA backend") != NULL;
}

static struct kernel_stats *stats_for(struct run *r, const char *kernel) {
  for (int i = 0; i < r->nstats; i++)
    if (strcmp(r->stats[i].kernel, kernel) == 0) return &r->stats[i];
  if (r->nstats == (int)(sizeof r->stats / sizeof r->stats[0])) return &r->stats[r->nstats - 1];
  struct kernel_stats *k = &r->stats[r->nstats++];
  memset(k, 0, sizeof *k);
  snprintf(k->kernel, sizeof k->kernel, "%s", kernel);
  return k;
}

static void keep_max(double *m, double v) {
  if (!(v <= *m)) *m = v;
}

static const char *mode_name(enum mode m) {
  return m == MODE_CUDA ? "cuda" : m == MODE_CPU_BUFFERS ? "cpu-buffers" : "cpu";
}

/* ------------------------------------------------------------------------ */
/* Golden cases. */

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
    snprintf(err, (size_t)err_len, "%s: inputs must be <f4, <i4, <u2 or |u1", file);
    return -1;
  }
  t->dtype = dtype_of_npy(a.dtype);
  t->owned = a.data;
  t->ptr = a.data;
  t->count = a.count;
  t->alloc = units_for(t->dtype, a.count); /* npy_read allocates whole 4-byte units, at least one */
  return 0;
}

double golden_max_error(struct call *c, const struct npy_array *want) {
  double max_err = 0.0;
  double floor_ = c->tol_ulp > 0 ? c->tol_abs / c->tol_ulp : 0.0;
  int w_index = 0;
  for (int i = 0; i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    if (t->expected[0] == '\0') continue;
    const struct npy_array *w = &want[w_index++];
    for (int64_t j = 0; j < t->count; j++) {
      double e;
      if (t->dtype == DT_U8) {
        /* Bytes of a storage format: exact, like integers. */
        double g = (double)((uint8_t *)t->ptr)[j];
        double x = w->dtype == NPY_U8 ? (double)((uint8_t *)w->data)[j] : INFINITY;
        e = g == x ? 0.0 : INFINITY;
      } else if (t->dtype == DT_U16) {
        /* 16-bit patterns (a copied bfloat16 / float16 row): exact. */
        double g = (double)((uint16_t *)t->ptr)[j];
        double x = w->dtype == NPY_U16 ? (double)((uint16_t *)w->data)[j] : INFINITY;
        e = g == x ? 0.0 : INFINITY;
      } else if (t->dtype == DT_I32) {
        double g = (double)((int32_t *)t->ptr)[j];
        double x = w->dtype == NPY_I32 ? (double)((int32_t *)w->data)[j] : ((double *)w->data)[j];
        /* Integers are exact whatever the tolerance (kb_moe_route's ids sit
           beside float weights with a tolerance of ulps). */
        e = g == x ? 0.0 : INFINITY;
      } else {
        double x = w->dtype == NPY_F64 ? ((double *)w->data)[j] : (double)((float *)w->data)[j];
        e = element_error((double)((float *)t->ptr)[j], x, floor_);
      }
      if (!(e <= max_err)) max_err = e;
    }
  }
  return max_err;
}

/* One "lowp_cases" entry: a reduced-precision variant of a golden case. */
static void write_lowp(struct run *r, const struct call *c, enum lowp dt, const struct versus *v) {
  FILE *f = r->lowp_json;
  char kernel[NAME_LEN + 8];
  snprintf(kernel, sizeof kernel, "%s_%s", c->kernel, lowp_name(dt));
  fprintf(f, "%s\n  {\"name\": ", r->lowp_first ? "" : ",");
  r->lowp_first = 0;
  json_string(f, c->name);
  fprintf(f, ", \"kernel\": ");
  json_string(f, kernel);
  fprintf(f, ", \"status\": ");
  json_string(f, kb_status_string(v->status));
  fprintf(f, ", \"rule\": ");
  json_string(f, v->rule);
  fprintf(f, ", \"worst\": ");
  json_number(f, v->worst);
  fprintf(f, ", \"passed\": %s", v->ok ? "true" : "false");
  if (!v->ok) {
    fprintf(f, ", \"error\": ");
    json_string(f, v->why);
  }
  fprintf(f, "}");
  struct kernel_stats *k = stats_for(r, c->kernel);
  k->lowp_cases++;
  k->lowp_passed += v->ok;
  keep_max(&k->lowp_worst, v->worst);
  r->lowp++;
  if (!v->ok) {
    r->lowp_failed++;
    fprintf(stderr, "FAIL %s (%s): %s\n", c->name, kernel, v->why);
  }
}

static void run_golden(struct run *r, struct call *c, const char *dir, FILE *out, int *first) {
  char err[1024] = "";
  kb_status st = KB_STATUS_OK;
  int ok = 1;
  struct npy_array want[MAX_ITEMS];
  int nwant = 0;
  struct staged_result sr;
  int staged = r->mode != MODE_CPU;

  /* Outputs that are not inputs (nor aliases of inputs) get fresh buffers
   * prefilled with quiet NaN (f32), -1 (i32) or 0x80 (u8: -128, a code the
   * Q8_0 quantizer never writes), sized from the expected file. */
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
      t->dtype = dtype_of_npy(w->dtype);
      t->count = w->count;
      t->alloc = units_for(t->dtype, w->count);
      t->owned = malloc((size_t)t->alloc * 4);
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
        } else if (t->dtype == DT_I32) {
          ((int32_t *)t->ptr)[j] = -1;
        } else if (t->dtype == DT_U16) {
          ((uint16_t *)t->ptr)[j] = 0xffff; /* a NaN pattern in both formats */
        } else {
          ((uint8_t *)t->ptr)[j] = 0x80;
        }
      }
    }
    if (t->count != w->count) {
      snprintf(err, sizeof err, "%s: expected %lld elements, buffer has %lld", t->name, (long long)w->count,
               (long long)t->count);
      ok = 0;
    }
  }

  if (ok && staged) {
    /* Leaves the tested backend's outputs in host storage. */
    if (staged_golden(r->ctx, r->ref, r->rules, c, want, &sr, err, sizeof err) != 0) {
      ok = 0;
      st = KB_STATUS_INTERNAL;
    } else {
      st = sr.f32.status;
      if (st != KB_STATUS_OK) {
        snprintf(err, sizeof err, "%s", sr.f32.why);
        ok = 0;
      }
    }
  } else if (ok) {
    if (dispatch(r->ctx, c, &st) != 0) {
      snprintf(err, sizeof err, "unknown kernel %s", c->kernel);
      ok = 0;
    } else if (c->missing[0] != '\0') {
      snprintf(err, sizeof err, "case lacks parameter %s", c->missing);
      ok = 0;
    } else if (st != KB_STATUS_OK) {
      snprintf(err, sizeof err, "%s: %s", kb_status_string(st), kb_context_last_error(r->ctx));
      ok = 0;
    }
  }

  double max_err = ok ? golden_max_error(c, want) : INFINITY;
  fprintf(out, "%s\n  {\"name\": ", *first ? "" : ",");
  *first = 0;
  json_string(out, c->name);
  fprintf(out, ", \"kernel\": ");
  json_string(out, c->kernel);
  fprintf(out, ", \"status\": ");
  json_string(out, ok ? "OK" : kb_status_string(st));
  fprintf(out, ", \"hashes\": {");
  int nh = 0;
  for (int i = 0; ok && i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    if (t->expected[0] == '\0') continue;
    fprintf(out, "%s", nh++ ? ", " : "");
    json_string(out, t->name);
    fprintf(out, ": \"%016llx\"", (unsigned long long)fnv1a64(t->ptr, (size_t)(t->count * dtype_size(t->dtype))));
  }
  /* cpu and cpu-buffers: within the manifest tolerance of the golden values
   * (cpu-buffers also bit-identical to the CPU run).  cuda: docs/cuda.md
   * defines its tolerances against the CPU kernel, so the CPU run must pass
   * the manifest tolerance and the GPU the docs/cuda.md rule against it;
   * max_ulp is then the GPU's golden metric, for information. */
  int passed = ok && max_err <= c->tol_ulp;
  if (ok && staged) {
    passed = sr.f32.ok && sr.cpu_max_ulp <= c->tol_ulp && (r->rules == MODE_CUDA || max_err <= c->tol_ulp);
    if (!sr.f32.ok)
      snprintf(err, sizeof err, "against the CPU run (%s): %s", sr.f32.rule, sr.f32.why);
    else if (!(sr.cpu_max_ulp <= c->tol_ulp))
      snprintf(err, sizeof err, "the CPU run itself is out of tolerance (max_ulp %g)", sr.cpu_max_ulp);
  }
  fprintf(out, "}, \"max_ulp\": ");
  if (ok)
    json_number(out, max_err);
  else
    fputs("\"inf\"", out);
  if (ok && staged) {
    fprintf(out, ", \"cpu_max_ulp\": ");
    json_number(out, sr.cpu_max_ulp);
    fprintf(out, ", \"vs_cpu\": ");
    json_string(out, sr.f32.rule);
    fprintf(out, ", \"vs_cpu_worst\": ");
    json_number(out, sr.f32.worst);
  }
  fprintf(out, ", \"passed\": %s", passed ? "true" : "false");
  if (!passed && err[0] != '\0') {
    fprintf(out, ", \"error\": ");
    json_string(out, err);
  }
  fprintf(out, "}");
  for (int i = 0; i < nwant; i++) npy_free(&want[i]);
  struct kernel_stats *k = stats_for(r, c->kernel);
  k->cases++;
  k->passed += passed;
  keep_max(&k->max_ulp, max_err);
  if (ok && staged) keep_max(&k->worst, sr.f32.worst);
  r->golden++;
  if (!passed && cuda_unimplemented(r, kb_status_string(st), err)) {
    r->golden_unimplemented++;
  } else if (!passed) {
    r->golden_failed++;
    fprintf(stderr, "FAIL %s: %s (max_ulp %g, tolerance %g)\n", c->name, err[0] ? err : "out of tolerance", max_err,
            c->tol_ulp);
  }
  if (ok && staged)
    for (int dt = 0; dt < sr.nlowp; dt++) write_lowp(r, c, (enum lowp)dt, &sr.lowp[dt]);
}

/* KB_RUNNER_TRACE=1: each case's name on stderr (unbuffered) before it
 * runs, so a crash names the case that caused it. */
static void trace_case(const char *kind, const char *name) {
  static int on = -1;
  if (on < 0) on = getenv("KB_RUNNER_TRACE") != NULL && strcmp(getenv("KB_RUNNER_TRACE"), "0") != 0;
  if (on) fprintf(stderr, "runner: %s case %s\n", kind, name);
}

static int run_manifest(struct run *r, const char *dir, FILE *out) {
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
      trace_case("golden", c.name);
      run_golden(r, &c, dir, out, &first);
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
  /* Plain tensors: len elements (at least one 4-byte unit allocated so the
   * pointer is not NULL), filled with 1.0 (f32) / 0 (i32, u8) unless values
   * are given. */
  for (int i = 0; i < c->ntensors; i++) {
    struct tensor *t = &c->tensors[i];
    int is_overlapped = 0;
    for (int j = 0; j < nov; j++)
      if (strcmp(ov_names[j], t->name) == 0) is_overlapped = 1;
    if (is_overlapped) continue;
    /* An overlap target gets room for the tensors placed inside it (the
     * offset counts the target's elements; the tensors may differ in dtype). */
    int64_t size = dtype_size(t->dtype), room = t->count * size;
    for (int j = 0; j < nov; j++) {
      if (strcmp(ov_with[j], t->name) != 0) continue;
      struct tensor *o = find_tensor(c, ov_names[j]);
      if (o != NULL && ov_offset[j] * size + o->count * dtype_size(o->dtype) > room)
        room = ov_offset[j] * size + o->count * dtype_size(o->dtype);
    }
    t->alloc = room > 0 ? (room + 3) / 4 : 1;
    t->owned = calloc((size_t)t->alloc, 4);
    if (t->owned == NULL) {
      snprintf(err, err_len, "out of memory");
      return -1;
    }
    t->ptr = t->owned;
    if (t->dtype == DT_F32)
      for (int64_t j = 0; j < room / size; j++) ((float *)t->ptr)[j] = 1.0f;
    for (int j = 0; j < nfill; j++) {
      if (strcmp(fill_names[j], t->name) != 0) continue;
      char *p = fills[j];
      for (int64_t e = 0; e < t->count && *p; e++) {
        char *end;
        if (t->dtype == DT_F32)
          ((float *)t->ptr)[e] = (float)strtod(p, &end);
        else if (t->dtype == DT_I32)
          ((int32_t *)t->ptr)[e] = (int32_t)strtol(p, &end, 10);
        else if (t->dtype == DT_U16)
          ((uint16_t *)t->ptr)[e] = (uint16_t)strtol(p, &end, 10);
        else
          ((uint8_t *)t->ptr)[e] = (uint8_t)strtol(p, &end, 10);
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
    o->ptr = (char *)w->ptr + ov_offset[j] * dtype_size(w->dtype);
  }
  return 0;
}

/* Dtype of each tensor parameter, from the kernel's signature. */
static enum dtype param_dtype(const char *kernel, const char *name) {
  static const char *const i32_params[][2] = {{"embedding", "ids"},       {"rope", "positions"},
                                              {"cross_entropy", "targets"}, {"cross_entropy_backward", "targets"},
                                              {"argmax", "out"},          {"sample", "out"},
                                              {"topk_sample", "out"},     {"topp_sample", "out"},
                                              {"attention_ex", "kv_lengths"}, {"embedding_w", "ids"},
                                              {"rope_ex", "positions"},       {"kv_cache_append", "positions"},
                                              {"moe_route", "ids"},           {"moe_experts", "ids"},
                                              {"kv_cache_append_to", "positions"}, {"attention_ex_kv", "kv_lengths"}};
  /* Float32 kernels over a 16-bit cache (kb_kv_cache_append_to_<t>,
   * kb_attention_ex_kv_<t>): only these tensors are 16-bit. */
  static const char *const mixed_u16_params[][2] = {{"kv_cache_append_to", "k_cache"},
                                                    {"kv_cache_append_to", "v_cache"},
                                                    {"attention_ex_kv", "k"},
                                                    {"attention_ex_kv", "v"}};
  static const char *const u8_params[][2] = {
      {"quantize", "y"},           {"dequantize", "x"},         {"linear_w", "weight"},
      {"embedding_w", "table"},    {"linear_glu_w", "gate_weight"}, {"linear_glu_w", "up_weight"},
      {"moe_experts", "gate_weight"}, {"moe_experts", "up_weight"}, {"moe_experts", "down_weight"}};
  /* kb_<op>_bf16 / _f16 (embedding, argmax, samplers): <op>'s int32
   * tensors, every other one 16-bit. */
  size_t len = strlen(kernel);
  size_t cut = len > 5 && strcmp(kernel + len - 5, "_bf16") == 0  ? 5
               : len > 4 && strcmp(kernel + len - 4, "_f16") == 0 ? 4
                                                                  : 0;
  bool half = cut > 0;
  size_t base_len = len - cut;
  for (size_t i = 0; i < sizeof i32_params / sizeof i32_params[0]; i++)
    if (strlen(i32_params[i][0]) == base_len && strncmp(i32_params[i][0], kernel, base_len) == 0 &&
        strcmp(i32_params[i][1], name) == 0)
      return DT_I32;
  bool mixed = false;
  for (size_t i = 0; i < sizeof mixed_u16_params / sizeof mixed_u16_params[0]; i++) {
    if (strlen(mixed_u16_params[i][0]) != base_len || strncmp(mixed_u16_params[i][0], kernel, base_len) != 0)
      continue;
    mixed = true;
    if (strcmp(mixed_u16_params[i][1], name) == 0) return DT_U16;
  }
  if (mixed) return DT_F32;
  if (half) return DT_U16;
  for (size_t i = 0; i < sizeof u8_params / sizeof u8_params[0]; i++)
    if (strcmp(u8_params[i][0], kernel) == 0 && strcmp(u8_params[i][1], name) == 0) return DT_U8;
  return DT_F32;
}

static void run_bad_case(struct run *r, struct call *c, char (*fills)[LINE_LEN / 4], int nfill,
                         char (*fill_names)[NAME_LEN], char (*ov_names)[NAME_LEN], char (*ov_with)[NAME_LEN],
                         int64_t *ov_offset, int nov, FILE *out, int *first) {
  char err[512] = "";
  /* Buffer modes: the tested context's message, and the CPU run's status
   * and message, which it must reproduce (validation is the same code). */
  char msg[512] = "", cpu_msg[512] = "";
  kb_status cpu_st = KB_STATUS_OK;
  int same_as_cpu = 1;
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
        size_t bytes = (size_t)(t->count * dtype_size(t->dtype));
        t->before = malloc(bytes > 0 ? bytes : 1);
        if (t->before != NULL) memcpy(t->before, t->ptr, bytes);
      }
      kb_status st;
      if (r->mode != MODE_CPU) {
        if (staged_bad(r->ctx, r->ref, c, &st, msg, sizeof msg, &cpu_st, cpu_msg, sizeof cpu_msg, err, sizeof err) !=
            0)
          got = "RUNNER_ERROR";
        else
          same_as_cpu = st == cpu_st && strcmp(msg, cpu_msg) == 0;
      } else if (dispatch(r->ctx, c, &st) != 0 || c->missing[0] != '\0') {
        got = "RUNNER_ERROR";
        snprintf(err, sizeof err, "cannot call %s (missing %s)", c->kernel, c->missing);
      }
      if (strcmp(got, "RUNNER_ERROR") != 0) {
        got = kb_status_string(st);
        if (st != KB_STATUS_OK) {
          for (int i = 0; i < c->ntensors; i++) {
            struct tensor *t = &c->tensors[i];
            if (t->ptr != NULL && t->before != NULL &&
                memcmp(t->before, t->ptr, (size_t)(t->count * dtype_size(t->dtype))) != 0)
              untouched = 0;
          }
        }
        ok = strcmp(got, c->expected_status) == 0 && untouched && same_as_cpu;
        if (!same_as_cpu)
          snprintf(err, sizeof err, "the CPU gives %s \"%.200s\", this backend %s \"%.200s\"",
                   kb_status_string(cpu_st), cpu_msg, got, msg);
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
    if (r->mode != MODE_CPU && strcmp(got, "RUNNER_ERROR") != 0) {
      fprintf(out, ", \"message\": ");
      json_string(out, msg);
      fprintf(out, ", \"same_as_cpu\": %s", same_as_cpu ? "true" : "false");
    }
    if (err[0] != '\0') {
      fprintf(out, ", \"reason\": ");
      json_string(out, err);
    }
  }
  fprintf(out, "}");
  r->bad++;
  if (na == NULL && !ok && cuda_unimplemented(r, got, msg)) {
    r->bad_unimplemented++;
  } else if (na == NULL && !ok) {
    r->bad_failed++;
    fprintf(stderr, "FAIL %s: expected %s, got %s%s %s\n", c->name, c->expected_status, got,
            untouched ? "" : " and an output was modified", err);
  }
}

static int run_bad(struct run *r, const char *dir, FILE *out) {
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
      trace_case("bad", c.name);
      run_bad_case(r, &c, fills, nfill, fill_names, ov_names, ov_with, ov_offset, nov, out, &first);
      free_call(&c);
      in_case = 0;
    } else {
      fprintf(stderr, "%s:%d: unknown line %s\n", path, lineno, fld[0]);
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  fprintf(out, "\n  ]");
  return 0;
}

/* ------------------------------------------------------------------------ */


static void usage(void) {
  fprintf(stderr,
          "usage: runner --corpus DIR --out FILE [--threads N] [--backend cpu|cpu-buffers|cuda] [--cuda-rules]\n");
}

/* Buffer modes: one line per kernel, for logs (the JSON has the details). */
static void print_stats(const struct run *r) {
  printf("%-24s %9s %9s %12s %12s %11s %10s\n", "kernel", "cases", "passed", "max_ulp", "vs_cpu", "16-bit", "vs_cpu");
  for (int i = 0; i < r->nstats; i++) {
    const struct kernel_stats *k = &r->stats[i];
    printf("%-24s %9d %9d %12.3g %12.3g ", k->kernel, k->cases, k->passed, k->max_ulp, k->worst);
    if (k->lowp_cases > 0)
      printf("%5d/%-5d %10.3g\n", k->lowp_passed, k->lowp_cases, k->lowp_worst);
    else
      printf("%11s %10s\n", "-", "-");
  }
  printf("(max_ulp: golden metric of the tested backend; vs_cpu: largest difference from the CPU run relative to "
         "the rule, 0 = identical, <= 1 passes; 16-bit: bf16 and f16 variants passed/cases)\n");
}

/* Creates the contexts of mode m.  Returns 0, 1 when CUDA is unavailable
 * (SKIPPED), 2 on another failure. */
static int open_contexts(struct run *r, int64_t threads) {
  kb_status st = kb_context_create(KB_BACKEND_CPU, threads, r->mode == MODE_CPU ? &r->ctx : &r->ref);
  if (st != KB_STATUS_OK) {
    fprintf(stderr, "kb_context_create: %s: %s\n", kb_status_string(st), kb_last_error());
    return 2;
  }
  if (r->mode == MODE_CPU) return 0;
  if (r->mode == MODE_CPU_BUFFERS)
    st = kb_context_create(KB_BACKEND_CPU, threads, &r->ctx);
  else
    st = kb_context_create_cuda(0, &r->ctx);
  if (st == KB_STATUS_BACKEND_UNAVAILABLE && r->mode == MODE_CUDA) {
    printf("SKIPPED: %s\n", kb_last_error());
    return 1;
  }
  if (st != KB_STATUS_OK) {
    fprintf(stderr, "creating the %s context: %s: %s\n", mode_name(r->mode), kb_status_string(st), kb_last_error());
    return 2;
  }
  return 0;
}

/* "device": the CUDA device's name and compute capability, for the result. */
static void write_device(FILE *out, const struct run *r) {
  if (r->mode != MODE_CUDA) return;
  char name[256] = "?";
  int64_t cc = 0, dev = kb_context_device(r->ctx);
  (void)kb_cuda_device_name(dev, name, sizeof name);
  (void)kb_cuda_device_compute_capability(dev, &cc);
  fprintf(out, "  \"device\": ");
  json_string(out, name);
  fprintf(out, ",\n  \"compute_capability\": %lld,\n", (long long)cc);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *out_path = NULL;
  int64_t threads = 4;
  static struct run r;
  int cuda_rules = 0;
  r.mode = MODE_CPU;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_path = argv[++i];
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = (int64_t)strtoll(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      const char *b = argv[++i];
      if (strcmp(b, "cpu") == 0) {
        r.mode = MODE_CPU;
      } else if (strcmp(b, "cpu-buffers") == 0) {
        r.mode = MODE_CPU_BUFFERS;
      } else if (strcmp(b, "cuda") == 0) {
        r.mode = MODE_CUDA;
      } else {
        usage();
        return 2;
      }
    } else if (strcmp(argv[i], "--cuda-rules") == 0) {
      /* A test aid: cpu-buffers compared with the cuda backend's rules, so
       * the GPU comparison code runs on machines without a GPU. */
      cuda_rules = 1;
    } else {
      usage();
      return 2;
    }
  }
  r.rules = cuda_rules ? MODE_CUDA : r.mode;
  if (dir == NULL || out_path == NULL || (cuda_rules && r.mode != MODE_CPU_BUFFERS)) {
    usage();
    return 2;
  }
  int rc = open_contexts(&r, threads);
  if (rc != 0) {
    kb_context_destroy(r.ctx);
    kb_context_destroy(r.ref);
    return rc == 1 ? 0 : 2;
  }
  FILE *out = fopen(out_path, "w");
  char *lowp_text = NULL;
  size_t lowp_len = 0;
  if (out != NULL && r.mode != MODE_CPU) {
    r.lowp_json = open_memstream(&lowp_text, &lowp_len);
    r.lowp_first = 1;
  }
  if (out == NULL || (r.mode != MODE_CPU && r.lowp_json == NULL)) {
    fprintf(stderr, "cannot write %s: %s\n", out_path, strerror(errno));
    if (out != NULL) fclose(out);
    kb_context_destroy(r.ctx);
    kb_context_destroy(r.ref);
    return 2;
  }
  fprintf(out, "{\n  \"format\": 1,\n  \"language\": \"c\",\n  \"backend\": \"%s\",\n  \"version\": ",
          mode_name(r.mode));
  json_string(out, kb_version_string());
  fprintf(out, ",\n  \"threads\": %lld,\n", (long long)kb_context_num_threads(r.mode == MODE_CPU ? r.ctx : r.ref));
  if (cuda_rules) fprintf(out, "  \"rules\": \"cuda\",\n");
  write_device(out, &r);
  rc = run_manifest(&r, dir, out);
  if (rc == 0) rc = run_bad(&r, dir, out);
  if (r.lowp_json != NULL) {
    fclose(r.lowp_json);
    fprintf(out, ",\n  \"lowp_cases\": [%s\n  ]", lowp_text != NULL ? lowp_text : "");
    free(lowp_text);
  }
  fprintf(out, "\n}\n");
  fclose(out);
  if (r.mode != MODE_CPU && rc == 0) print_stats(&r);
  kb_context_destroy(r.ctx);
  kb_context_destroy(r.ref);
  if (rc != 0) return 2;
  if (r.mode == MODE_CPU) {
    printf("c runner: %d/%d golden cases passed, %d/%d bad-input cases as expected (threads %lld)\n",
           r.golden - r.golden_failed, r.golden, r.bad - r.bad_failed, r.bad, (long long)threads);
  } else {
    printf("c runner (%s): %d/%d golden cases passed, %d/%d bad-input cases as expected, %d/%d bf16/f16 cases "
           "passed",
           mode_name(r.mode), r.golden - r.golden_failed - r.golden_unimplemented, r.golden,
           r.bad - r.bad_failed - r.bad_unimplemented, r.bad, r.lowp - r.lowp_failed, r.lowp);
    if (r.mode == MODE_CUDA)
      printf(", %d golden and %d bad-input cases of kernels the CUDA backend does not implement (UNSUPPORTED)",
             r.golden_unimplemented, r.bad_unimplemented);
    printf(" (threads %lld)\n", (long long)threads);
  }
  return r.golden_failed == 0 && r.bad_failed == 0 && r.lowp_failed == 0 ? 0 : 1;
}
