/*
 * backend.c - the cpu-buffers and cuda modes of the runner (backend.h):
 * every call runs on a CPU context with host memory and on the tested
 * context with its tensors staged in kb_buffers, and the two are compared.
 */
#include "backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage.h"
#include "tolerance.h"

/* ------------------------------------------------------------------------ */
/* Host copies of a call's storages (one array per storage owner). */

static void free_all(void **p) {
  for (int i = 0; i < MAX_ITEMS; i++) {
    free(p[i]);
    p[i] = NULL;
  }
}

static int copy_storage(const struct call *c, const struct layout *l, void *const *src, size_t esize, void **dst) {
  for (int i = 0; i < c->ntensors; i++) {
    if (l->owner[i] != i) continue;
    size_t bytes = (size_t)c->tensors[i].alloc * esize;
    dst[i] = malloc(bytes);
    if (dst[i] == NULL) return -1;
    memcpy(dst[i], src[i], bytes);
  }
  return 0;
}

static void restore(const struct call *c, const struct layout *l, void *const *from, void *const *to, size_t esize) {
  for (int i = 0; i < c->ntensors; i++)
    if (l->owner[i] == i) memcpy(to[i], from[i], (size_t)c->tensors[i].alloc * esize);
}

/* Runs c on ctx with every storage staged in a kb_buffer (esize 4: the
 * float32 kernel; 2: the variant `dt`), contents taken from and returned to
 * host[]; the call is bound to host[] again afterwards.  msg receives the
 * call's message before the download (which clears it). */
static int run_staged(kb_context *ctx, struct call *c, const struct layout *l, void **host, size_t esize,
                      enum lowp dt, kb_status *st, char *msg, size_t msg_len, char *err, size_t err_len) {
  struct staged s;
  if (stage_up(ctx, c, l, host, esize, &s, err, err_len) != 0) {
    bind_tensors(c, l, host, esize);
    return -1;
  }
  int known = esize == 4 ? dispatch(ctx, c, st) : dispatch_lowp(ctx, c, dt, st);
  snprintf(msg, msg_len, "%s", kb_context_last_error(ctx));
  int rc = stage_down(ctx, c, l, host, esize, &s, err, err_len);
  bind_tensors(c, l, host, esize);
  if (known != 0) {
    snprintf(err, err_len, "unknown kernel %s", c->kernel);
    return -1;
  }
  if (c->missing[0] != '\0') {
    snprintf(err, err_len, "case lacks parameter %s", c->missing);
    return -1;
  }
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Parts of the GPU rules that depend on the inputs. */

static const float *input(struct call *c, const struct layout *l, void *const *init, const char *name) {
  struct tensor *t = find_tensor(c, name);
  if (t == NULL) return NULL;
  int i = (int)(t - c->tensors);
  return l->owner[i] < 0 ? NULL : (const float *)init[l->owner[i]] + l->off[i];
}

/* attention's absolute tolerances are stated for |v| <= 1; the output is a
 * convex combination of rows of v, so they scale with max |v|. */
static double v_scale(struct call *c, const struct layout *l, void *const *init) {
  const float *v = input(c, l, init, "v");
  struct tensor *t = find_tensor(c, "v");
  double m = 1.0;
  for (int64_t i = 0; v != NULL && i < t->count; i++)
    if (fabs((double)v[i]) > m) m = fabs((double)v[i]);
  return m;
}

/* The cuBLASLt rule of docs/cuda.md, per element of C's storage:
 * (k + 2) 2^-23 (|alpha| sum_p |a_ip b_pj| + |beta c_ij|); 0 in the padding,
 * which must not change.  NULL when out of memory. */
static double *gemm_extra(struct call *c, const struct layout *l, void *const *init) {
  int64_t m = call_dim(c, "m"), n = call_dim(c, "n"), k = call_dim(c, "k");
  int64_t lda = call_dim(c, "lda"), ldb = call_dim(c, "ldb"), ldc = call_dim(c, "ldc");
  bool ta = call_flag(c, "trans_a"), tb = call_flag(c, "trans_b");
  double alpha = call_scalar_f32(c, "alpha"), beta = call_scalar_f32(c, "beta");
  const float *a = input(c, l, init, "a"), *b = input(c, l, init, "b"), *c0 = input(c, l, init, "c");
  int64_t count = find_tensor(c, "c")->count;
  double *e = (double *)calloc((size_t)(count > 0 ? count : 1), sizeof *e);
  if (e == NULL) return NULL;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n && i * ldc + j < count; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p];
        double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += fabs(x * y);
      }
      s = fabs(alpha) * s + (beta != 0.0 ? fabs(beta * c0[i * ldc + j]) : 0.0);
      e[i * ldc + j] = (double)(k + 2) * ldexp(1.0, -23) * s;
    }
  }
  return e;
}

/* The rule for this call, with the gemm and attention adjustments. */
static struct tol rule_for(enum mode mode, struct call *c, const struct layout *l, void *const *init, int lowp,
                           enum lowp dt) {
  struct tol t = lowp ? gpu_tol_lowp(c->kernel, dt) : gpu_tol_f32(c->kernel);
  if (mode == MODE_CPU_BUFFERS) {
    struct tol same = {TOL_BITWISE, 0, 0, 0, "bitwise (host buffers run the CPU kernels)"};
    return same;
  }
  /* alpha == 0 and k == 0 always take the tiled kernel, which is bitwise. */
  if (!lowp && strcmp(c->kernel, "gemm") == 0 && (call_scalar_f32(c, "alpha") == 0.0f || call_dim(c, "k") == 0)) {
    struct tol tiled = {TOL_BITS_NAN, 0, 0, 0, "bitwise, any NaN matching (gemm with alpha == 0 or k == 0)"};
    return tiled;
  }
  if (strcmp(c->kernel, "attention") == 0) t.abs *= v_scale(c, l, init);
  return t;
}

/* ------------------------------------------------------------------------ */
/* Comparisons. */

/* Records the first problem of a comparison. */
static void note(struct versus *v, const char *what) {
  if (!v->ok) return;
  v->ok = false;
  snprintf(v->why, sizeof v->why, "%s", what);
}

/* Float32 outputs: got[] against cpu[] storages. */
static void compare_f32(enum mode mode, struct call *c, const struct layout *l, void *const *got, void *const *cpu,
                        void *const *init, struct versus *v) {
  struct tol t = rule_for(mode, c, l, init, 0, LOWP_BF16);
  snprintf(v->rule, sizeof v->rule, "%s", t.rule);
  for (int i = 0; i < c->ntensors; i++) {
    struct tensor *x = &c->tensors[i];
    if (x->expected[0] == '\0' || l->owner[i] < 0) continue;
    const float *g = (const float *)got[l->owner[i]] + l->off[i];
    const float *w = (const float *)cpu[l->owner[i]] + l->off[i];
    if (x->dtype == DT_U8 || x->dtype == DT_U16) {
      /* Bytes of a storage format (kb_quantize) or 16-bit patterns (the
       * 16-bit embedding's copy): exact on every backend. */
      const unsigned char *gb = (const unsigned char *)g, *wb = (const unsigned char *)w;
      for (int64_t j = 0; j < x->count * dtype_size(x->dtype); j++) {
        if (gb[j] == wb[j]) continue;
        char what[256];
        snprintf(what, sizeof what, "%s[%lld]: byte 0x%02x, CPU 0x%02x", x->name, (long long)j, gb[j], wb[j]);
        note(v, what);
        v->worst = INFINITY;
        break;
      }
      continue;
    }
    double *extra = NULL;
    if (t.kind == TOL_BOUND && strcmp(c->kernel, "gemm") == 0) extra = gemm_extra(c, l, init);
    int64_t first;
    double r = tol_compare(&t, g, w, extra, x->count, &first);
    free(extra);
    if (!(r <= v->worst)) v->worst = r;
    if (first < 0) continue;
    char what[256];
    if (x->dtype == DT_I32)
      snprintf(what, sizeof what, "%s[%lld]: %d, CPU %d", x->name, (long long)first, (int)((const int32_t *)g)[first],
               (int)((const int32_t *)w)[first]);
    else
      snprintf(what, sizeof what, "%s[%lld]: %.9g, CPU %.9g", x->name, (long long)first, (double)g[first],
               (double)w[first]);
    note(v, what);
  }
}

/* 16-bit outputs h16[] against the CPU float32 results cpu[]: in cpu-buffers
 * mode the exact rounding of the CPU result (the header's CPU contract),
 * on CUDA the docs/cuda.md row. */
static void compare_lowp(enum mode mode, struct call *c, const struct layout *l, enum lowp dt, void *const *h16,
                         void *const *cpu, void *const *init32, struct versus *v) {
  struct tol t = rule_for(mode, c, l, init32, 1, dt);
  bool exact = mode == MODE_CPU_BUFFERS;
  /* The docs/cuda.md row cannot hold where the dtype cannot represent the
   * result (subnormal in the dtype, overflow to infinity): there the CPU's
   * exactly rounded answer passes, and the absolute part has a floor of one
   * subnormal step of the dtype (docs/conformance.md, "Backends"). */
  t.abs += dt == LOWP_F16 ? ldexp(1.0, -24) : ldexp(1.0, -133);
  snprintf(v->rule, sizeof v->rule, "%s", exact ? "the CPU float32 result rounded once to the dtype" : t.rule);
  for (int i = 0; i < c->ntensors; i++) {
    struct tensor *x = &c->tensors[i];
    if (x->expected[0] == '\0' || l->owner[i] < 0) continue;
    const uint16_t *h = (const uint16_t *)h16[l->owner[i]] + l->off[i];
    const float *w = (const float *)cpu[l->owner[i]] + l->off[i];
    float *g = (float *)malloc((size_t)(x->count > 0 ? x->count : 1) * sizeof *g);
    if (g == NULL) {
      note(v, "out of memory");
      return;
    }
    for (int64_t j = 0; j < x->count; j++) g[j] = from_half(dt, h[j]);
    int64_t first = -1;
    double r = 0.0;
    if (exact) {
      for (int64_t j = 0; j < x->count; j++) {
        if (h[j] == to_half(dt, w[j]) || (isnan(g[j]) && isnan(w[j]))) continue;
        if (first < 0) first = j;
        r = INFINITY;
      }
    } else {
      /* The CPU's exactly rounded answer always passes (see above). */
      double *extra = NULL;
      if (strcmp(c->kernel, "gemm") == 0) extra = gemm_extra(c, l, init32);
      for (int64_t j = 0; j < x->count; j++) {
        if (h[j] == to_half(dt, w[j]) || (isnan(g[j]) && isnan(w[j]))) continue;
        int64_t bad;
        double e = tol_compare(&t, &g[j], &w[j], extra != NULL ? &extra[j] : NULL, 1, &bad);
        if (bad >= 0 && first < 0) first = j;
        if (!(e <= r)) r = e;
      }
      free(extra);
    }
    if (!(r <= v->worst)) v->worst = r;
    if (first >= 0) {
      char what[256];
      snprintf(what, sizeof what, "%s[%lld]: %.9g, CPU float32 %.9g", x->name, (long long)first, (double)g[first],
               (double)w[first]);
      note(v, what);
    }
    free(g);
  }
}

/* The status part of a comparison; true when both runs succeeded. */
static bool same_status(struct versus *v, kb_status cpu, const char *msg) {
  v->ok = v->status == cpu;
  if (!v->ok)
    snprintf(v->why, sizeof v->why, "status %s (%s), CPU %s", kb_status_string(v->status), msg,
             kb_status_string(cpu));
  return v->ok && cpu == KB_STATUS_OK;
}

/* ------------------------------------------------------------------------ */

/* kb_<kernel>_<dt> on inputs rounded to dt, against the float32 kernel on
 * ref with the same (widened) inputs. */
static int run_lowp(kb_context *ctx, kb_context *ref, enum mode mode, struct call *c, const struct layout *l,
                    void *const *init, void **host, enum lowp dt, struct versus *v, char *err, size_t err_len) {
  void *h16[MAX_ITEMS] = {0}, *w32[MAX_ITEMS] = {0}, *init32[MAX_ITEMS] = {0};
  int rc = -1;
  kb_status cpu_st;
  char msg[512];
  for (int i = 0; i < c->ntensors; i++) {
    if (l->owner[i] != i) continue;
    int64_t n = c->tensors[i].alloc;
    h16[i] = malloc((size_t)n * 2);
    w32[i] = malloc((size_t)n * 4);
    if (h16[i] == NULL || w32[i] == NULL) goto out;
    for (int64_t j = 0; j < n; j++) {
      ((uint16_t *)h16[i])[j] = to_half(dt, ((const float *)init[i])[j]);
      ((float *)w32[i])[j] = from_half(dt, ((uint16_t *)h16[i])[j]);
    }
  }
  if (copy_storage(c, l, w32, 4, init32) != 0) goto out;
  bind_tensors(c, l, w32, 4);
  dispatch(ref, c, &cpu_st);
  bind_tensors(c, l, host, 4);
  if (run_staged(ctx, c, l, h16, 2, dt, &v->status, msg, sizeof msg, err, err_len) != 0) goto out;
  bind_tensors(c, l, host, 4);
  if (same_status(v, cpu_st, msg)) compare_lowp(mode, c, l, dt, h16, w32, init32, v);
  rc = 0;
out:
  bind_tensors(c, l, host, 4);
  if (rc != 0 && err[0] == '\0') snprintf(err, err_len, "out of memory");
  free_all(h16);
  free_all(w32);
  free_all(init32);
  return rc;
}

int staged_golden(kb_context *ctx, kb_context *ref, enum mode mode, struct call *c, struct npy_array *want,
                  struct staged_result *r, char *err, size_t err_len) {
  struct layout l;
  void *host[MAX_ITEMS] = {0}, *init[MAX_ITEMS] = {0}, *cpu[MAX_ITEMS] = {0};
  char msg[512];
  int rc = -1;
  memset(r, 0, sizeof *r);
  err[0] = '\0';
  if (layout_of(c, &l) != 0) {
    snprintf(err, err_len, "a tensor view lies outside every storage");
    return -1;
  }
  host_bases(c, host);
  if (copy_storage(c, &l, host, 4, init) != 0) goto out;
  /* The reference: the CPU kernel on host memory, as in cpu mode. */
  if (dispatch(ref, c, &r->cpu_status) != 0 || c->missing[0] != '\0') {
    snprintf(err, err_len, "cannot call %s (missing %s)", c->kernel, c->missing);
    goto out;
  }
  r->cpu_max_ulp = r->cpu_status == KB_STATUS_OK ? golden_max_error(c, want) : INFINITY;
  if (copy_storage(c, &l, host, 4, cpu) != 0) goto out;
  restore(c, &l, init, host, 4);
  if (run_staged(ctx, c, &l, host, 4, LOWP_BF16, &r->f32.status, msg, sizeof msg, err, err_len) != 0) goto out;
  if (same_status(&r->f32, r->cpu_status, msg)) compare_f32(mode, c, &l, host, cpu, init, &r->f32);
  /* The 16-bit variants convert every tensor; a case with an int32 tensor
   * (attention_ex's kv_lengths) keeps the float32 run only. */
  bool has_i32 = false;
  for (int i = 0; i < c->ntensors; i++)
    if (c->tensors[i].dtype == DT_I32 && c->tensors[i].ptr != NULL) has_i32 = true;
  if (has_lowp_variant(c->kernel) && r->cpu_status == KB_STATUS_OK && !has_i32) {
    /* The variants run on the initial contents; the float32 outputs the
     * runner hashes are restored afterwards. */
    void *saved[MAX_ITEMS] = {0};
    if (copy_storage(c, &l, host, 4, saved) != 0) goto out;
    for (int dt = LOWP_BF16; dt <= LOWP_F16; dt++) {
      restore(c, &l, init, host, 4);
      if (run_lowp(ctx, ref, mode, c, &l, init, host, (enum lowp)dt, &r->lowp[dt], err, err_len) != 0) {
        free_all(saved);
        goto out;
      }
    }
    restore(c, &l, saved, host, 4);
    free_all(saved);
    r->nlowp = 2;
  }
  rc = 0;
out:
  if (rc != 0 && err[0] == '\0') snprintf(err, err_len, "out of memory");
  free_all(init);
  free_all(cpu);
  return rc;
}

int staged_bad(kb_context *ctx, kb_context *ref, struct call *c, kb_status *st, char *msg, size_t msg_len,
               kb_status *cpu_st, char *cpu_msg, size_t cpu_msg_len, char *err, size_t err_len) {
  struct layout l;
  void *host[MAX_ITEMS] = {0}, *init[MAX_ITEMS] = {0};
  err[0] = '\0';
  if (layout_of(c, &l) != 0) {
    snprintf(err, err_len, "a tensor view lies outside every storage");
    return -1;
  }
  host_bases(c, host);
  if (copy_storage(c, &l, host, 4, init) != 0) {
    free_all(init);
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  int rc = -1;
  if (dispatch(ref, c, cpu_st) != 0 || c->missing[0] != '\0') {
    snprintf(err, err_len, "cannot call %s (missing %s)", c->kernel, c->missing);
  } else {
    snprintf(cpu_msg, cpu_msg_len, "%s", kb_context_last_error(ref));
    restore(c, &l, init, host, 4);
    rc = run_staged(ctx, c, &l, host, 4, LOWP_BF16, st, msg, msg_len, err, err_len);
  }
  free_all(init);
  return rc;
}
