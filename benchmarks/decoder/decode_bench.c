/* decode_bench.c - a Llama-style decoder written on kernelbridge's C API,
 * timed as llama-bench times llama.cpp: a prompt of P tokens (prefill), then
 * N tokens generated greedily one at a time (decode), each side reporting
 * tokens per second.  Also printed: the weight bytes one decode step reads,
 * that rate as GB/s, and the machine's copy bandwidth over the same number
 * of bytes measured in this run, so a reader sees how close decoding comes
 * to memory speed.
 *
 *   decode_bench --gguf model.gguf [--threads T] [--prompt P] [--gen N] [--reps R]
 *   decode_bench --preset small|large --type f32|f16|bf16|q8_0|q4_0 [...]
 *
 * With --gguf the weights are the file's (benchmarks/decoder/make_model.py
 * writes the files llama.cpp reads too); with --preset they are random
 * (the same shapes), quantized here with kb_quantize.
 *
 * The model: token embedding; per layer RMSNorm, q/k/v projections, rotary
 * embeddings (kb_rope's half rotation: the weights are random, so only the
 * speed of llama.cpp's adjacent-pair rotation of permuted GGUF q/k matters),
 * grouped-query attention over a KV cache (kb_attention_ex, [seq, heads,
 * head_dim] layout, queries bottom-right causal), output projection and
 * residual; RMSNorm, SwiGLU FFN (gate, up, silu, mul, down) and residual;
 * final RMSNorm, the output head and argmax. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_copy.h"
#include "gguf.h"
#include "kernelbridge.h"

struct weight {
  kb_dtype type;
  const void *data;
  int64_t bytes, rows, cols; /* [rows, cols]: rows outputs of cols inputs */
};

struct layer {
  const float *attn_norm, *ffn_norm;
  struct weight q, k, v, o, gate, up, down;
};

struct model {
  int64_t n_layer, n_embd, n_head, n_kv, head_dim, n_ff, n_vocab;
  float rope_theta, eps;
  struct weight embd, output;
  const float *out_norm;
  struct layer *layers;
  void **owned; /* synthesized weights */
  int n_owned;
};

static void ok(kb_status s, kb_context *ctx, const char *what) {
  if (s != KB_STATUS_OK) {
    fprintf(stderr, "decode_bench: %s: %s: %s\n", what, kb_status_string(s),
            ctx != NULL ? kb_context_last_error(ctx) : kb_last_error());
    exit(1);
  }
}

static void *xmalloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n > 0 ? n : 1) != 0) {
    fprintf(stderr, "decode_bench: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static double median_sorted(const double *v, int n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

/* ---- weights from a GGUF file ---- */

static struct weight gguf_weight(const struct gguf_file *f, const char *name, int64_t rows, int64_t cols) {
  const struct gguf_tensor *t = gguf_find(f, name);
  if (t == NULL || t->n_dims != 2 || t->dims[0] != cols || t->dims[1] != rows || t->bytes == 0) {
    fprintf(stderr, "decode_bench: tensor %s missing or not [%lld, %lld] in a supported type\n", name, (long long)rows,
            (long long)cols);
    exit(1);
  }
  struct weight w = {(kb_dtype)t->type, t->data, (int64_t)t->bytes, rows, cols};
  return w;
}

static const float *gguf_norm(const struct gguf_file *f, const char *name, int64_t n) {
  const struct gguf_tensor *t = gguf_find(f, name);
  if (t == NULL || t->type != 0 || t->n_dims != 1 || t->dims[0] != n) {
    fprintf(stderr, "decode_bench: tensor %s missing or not F32 [%lld]\n", name, (long long)n);
    exit(1);
  }
  return (const float *)t->data;
}

static void load_gguf(struct model *m, const struct gguf_file *f) {
  if (strcmp(f->arch, "llama") != 0) {
    fprintf(stderr, "decode_bench: architecture %s is not llama\n", f->arch);
    exit(1);
  }
  m->n_layer = f->n_layer;
  m->n_embd = f->n_embd;
  m->n_head = f->n_head;
  m->n_kv = f->n_head_kv > 0 ? f->n_head_kv : f->n_head;
  m->n_ff = f->n_ff;
  m->head_dim = m->n_embd / m->n_head;
  m->rope_theta = (float)f->rope_theta;
  m->eps = (float)f->rms_eps;
  const struct gguf_tensor *e = gguf_find(f, "token_embd.weight");
  if (e == NULL || e->n_dims != 2) {
    fprintf(stderr, "decode_bench: no token_embd.weight\n");
    exit(1);
  }
  m->n_vocab = e->dims[1];
  m->embd = gguf_weight(f, "token_embd.weight", m->n_vocab, m->n_embd);
  m->output = gguf_find(f, "output.weight") != NULL ? gguf_weight(f, "output.weight", m->n_vocab, m->n_embd) : m->embd;
  m->out_norm = gguf_norm(f, "output_norm.weight", m->n_embd);
  m->layers = (struct layer *)calloc((size_t)m->n_layer, sizeof *m->layers);
  for (int64_t l = 0; l < m->n_layer; l++) {
    char n[96];
    struct layer *L = &m->layers[l];
#define W(field, suffix, rows, cols)                           \
  snprintf(n, sizeof n, "blk.%lld." suffix, (long long)l);    \
  L->field = gguf_weight(f, n, rows, cols)
    W(q, "attn_q.weight", m->n_head * m->head_dim, m->n_embd);
    W(k, "attn_k.weight", m->n_kv * m->head_dim, m->n_embd);
    W(v, "attn_v.weight", m->n_kv * m->head_dim, m->n_embd);
    W(o, "attn_output.weight", m->n_embd, m->n_head * m->head_dim);
    W(gate, "ffn_gate.weight", m->n_ff, m->n_embd);
    W(up, "ffn_up.weight", m->n_ff, m->n_embd);
    W(down, "ffn_down.weight", m->n_embd, m->n_ff);
#undef W
    snprintf(n, sizeof n, "blk.%lld.attn_norm.weight", (long long)l);
    L->attn_norm = gguf_norm(f, n, m->n_embd);
    snprintf(n, sizeof n, "blk.%lld.ffn_norm.weight", (long long)l);
    L->ffn_norm = gguf_norm(f, n, m->n_embd);
  }
}

/* ---- synthesized weights ---- */

static uint64_t rng_state = 1;

static float rnd(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 40) / 16777216.0 - 0.5) * 0.07f;
}

static struct weight synth_weight(struct model *m, kb_context *ctx, kb_dtype type, int64_t rows, int64_t cols) {
  float *f = (float *)xmalloc((size_t)(rows * cols) * sizeof(float));
  for (int64_t i = 0; i < rows * cols; i++) f[i] = rnd();
  struct weight w = {type, NULL, 0, rows, cols};
  ok(kb_dtype_bytes(type, rows, cols, &w.bytes), NULL, "kb_dtype_bytes");
  void *q = xmalloc((size_t)w.bytes);
  ok(kb_quantize(ctx, type, rows, cols, f, q, w.bytes), ctx, "kb_quantize");
  free(f);
  m->owned = (void **)realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *m->owned);
  m->owned[m->n_owned++] = q;
  w.data = q;
  return w;
}

static const float *synth_norm(struct model *m, int64_t n) {
  float *f = (float *)xmalloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) f[i] = 1.0f + rnd();
  m->owned = (void **)realloc(m->owned, (size_t)(m->n_owned + 1) * sizeof *m->owned);
  m->owned[m->n_owned++] = f;
  return f;
}

static void synthesize(struct model *m, kb_context *ctx, const char *preset, kb_dtype type) {
  bool large = strcmp(preset, "large") == 0;
  m->n_layer = large ? 14 : 8;
  m->n_embd = large ? 1280 : 512;
  m->n_head = large ? 20 : 8;
  m->n_kv = large ? 4 : 2;
  m->n_ff = large ? 3584 : 1536;
  m->n_vocab = large ? 32000 : 8000;
  m->head_dim = m->n_embd / m->n_head;
  m->rope_theta = 10000.0f;
  m->eps = 1e-5f;
  m->embd = synth_weight(m, ctx, type, m->n_vocab, m->n_embd);
  m->output = synth_weight(m, ctx, type, m->n_vocab, m->n_embd);
  m->out_norm = synth_norm(m, m->n_embd);
  m->layers = (struct layer *)calloc((size_t)m->n_layer, sizeof *m->layers);
  for (int64_t l = 0; l < m->n_layer; l++) {
    struct layer *L = &m->layers[l];
    L->attn_norm = synth_norm(m, m->n_embd);
    L->q = synth_weight(m, ctx, type, m->n_head * m->head_dim, m->n_embd);
    L->k = synth_weight(m, ctx, type, m->n_kv * m->head_dim, m->n_embd);
    L->v = synth_weight(m, ctx, type, m->n_kv * m->head_dim, m->n_embd);
    L->o = synth_weight(m, ctx, type, m->n_embd, m->n_head * m->head_dim);
    L->ffn_norm = synth_norm(m, m->n_embd);
    L->gate = synth_weight(m, ctx, type, m->n_ff, m->n_embd);
    L->up = synth_weight(m, ctx, type, m->n_ff, m->n_embd);
    L->down = synth_weight(m, ctx, type, m->n_embd, m->n_ff);
  }
}

/* ---- the forward pass ---- */

struct state {
  int64_t max_seq;
  float **kcache, **vcache; /* per layer [max_seq, n_kv, head_dim] */
  float *x, *xn, *q, *k, *v, *att, *t, *g, *u, *logits;
  int32_t *pos;
};

static void linear(kb_context *ctx, int64_t rows, const struct weight *w, const float *x, float *y) {
  ok(kb_linear_w(ctx, rows, w->cols, w->rows, x, w->type, w->data, w->bytes, NULL, KB_ACTIVATION_NONE, y), ctx,
     "kb_linear_w");
}

/* Runs `seq` tokens at positions past .. past+seq-1 through the model; the
 * argmax of the last position's logits. */
static int32_t forward(kb_context *ctx, const struct model *m, struct state *s, const int32_t *ids, int64_t seq,
                       int64_t past) {
  int64_t E = m->n_embd, hd = m->head_dim, qd = m->n_head * hd, kvd = m->n_kv * hd;
  ok(kb_embedding_w(ctx, seq, m->n_vocab, E, ids, m->embd.type, m->embd.data, m->embd.bytes, s->x), ctx,
     "kb_embedding_w");
  for (int64_t i = 0; i < seq; i++) s->pos[i] = (int32_t)(past + i);
  for (int64_t l = 0; l < m->n_layer; l++) {
    const struct layer *L = &m->layers[l];
    ok(kb_rmsnorm(ctx, seq, E, s->x, L->attn_norm, m->eps, s->xn), ctx, "kb_rmsnorm");
    linear(ctx, seq, &L->q, s->xn, s->q);
    float *kc = s->kcache[l] + past * kvd, *vc = s->vcache[l] + past * kvd;
    linear(ctx, seq, &L->k, s->xn, kc);
    linear(ctx, seq, &L->v, s->xn, vc);
    ok(kb_rope(ctx, seq, m->n_head, hd, s->q, s->pos, m->rope_theta, s->q), ctx, "kb_rope q");
    ok(kb_rope(ctx, seq, m->n_kv, hd, kc, s->pos, m->rope_theta, kc), ctx, "kb_rope k");
    ok(kb_attention_ex(ctx, 1, m->n_head, m->n_kv, seq, past + seq, hd, true, s->q, s->kcache[l], s->vcache[l], NULL,
                       0, 0, 0, NULL, true, true, 0.0f, s->att),
       ctx, "kb_attention_ex");
    linear(ctx, seq, &L->o, s->att, s->t);
    ok(kb_add(ctx, seq * E, s->x, s->t, s->x), ctx, "kb_add");
    ok(kb_rmsnorm(ctx, seq, E, s->x, L->ffn_norm, m->eps, s->xn), ctx, "kb_rmsnorm");
    linear(ctx, seq, &L->gate, s->xn, s->g);
    linear(ctx, seq, &L->up, s->xn, s->u);
    ok(kb_silu(ctx, seq * m->n_ff, s->g, s->g), ctx, "kb_silu");
    ok(kb_mul(ctx, seq * m->n_ff, s->g, s->u, s->g), ctx, "kb_mul");
    linear(ctx, seq, &L->down, s->g, s->t);
    ok(kb_add(ctx, seq * E, s->x, s->t, s->x), ctx, "kb_add");
    (void)qd;
  }
  /* Only the last position's logits are needed. */
  const float *last = s->x + (seq - 1) * E;
  ok(kb_rmsnorm(ctx, 1, E, last, m->out_norm, m->eps, s->xn), ctx, "kb_rmsnorm");
  linear(ctx, 1, &m->output, s->xn, s->logits);
  int32_t next = 0;
  ok(kb_argmax(ctx, 1, m->n_vocab, s->logits, &next), ctx, "kb_argmax");
  return next;
}

static void state_alloc(struct state *s, const struct model *m, int64_t max_seq) {
  int64_t E = m->n_embd, kvd = m->n_kv * m->head_dim, qd = m->n_head * m->head_dim;
  s->max_seq = max_seq;
  s->kcache = (float **)calloc((size_t)m->n_layer, sizeof(float *));
  s->vcache = (float **)calloc((size_t)m->n_layer, sizeof(float *));
  for (int64_t l = 0; l < m->n_layer; l++) {
    s->kcache[l] = (float *)xmalloc((size_t)(max_seq * kvd) * sizeof(float));
    s->vcache[l] = (float *)xmalloc((size_t)(max_seq * kvd) * sizeof(float));
  }
  s->x = (float *)xmalloc((size_t)(max_seq * E) * sizeof(float));
  s->xn = (float *)xmalloc((size_t)(max_seq * E) * sizeof(float));
  s->q = (float *)xmalloc((size_t)(max_seq * qd) * sizeof(float));
  s->att = (float *)xmalloc((size_t)(max_seq * qd) * sizeof(float));
  s->t = (float *)xmalloc((size_t)(max_seq * E) * sizeof(float));
  s->g = (float *)xmalloc((size_t)(max_seq * m->n_ff) * sizeof(float));
  s->u = (float *)xmalloc((size_t)(max_seq * m->n_ff) * sizeof(float));
  s->logits = (float *)xmalloc((size_t)m->n_vocab * sizeof(float));
  s->pos = (int32_t *)xmalloc((size_t)max_seq * sizeof(int32_t));
}

static int64_t weight_bytes(const struct model *m) {
  int64_t b = m->output.bytes;
  for (int64_t l = 0; l < m->n_layer; l++) {
    const struct layer *L = &m->layers[l];
    b += L->q.bytes + L->k.bytes + L->v.bytes + L->o.bytes + L->gate.bytes + L->up.bytes + L->down.bytes;
    b += 2 * m->n_embd * (int64_t)sizeof(float);
  }
  return b;
}

/* Best time of copying `bytes` bytes with `threads` threads (one slice
 * each, as the decode step's threads read the weights). */
static double copy_seconds(int64_t bytes, int64_t threads, int reps) {
  char *a = (char *)xmalloc((size_t)bytes), *b = (char *)xmalloc((size_t)bytes);
  memset(a, 1, (size_t)bytes);
  memset(b, 2, (size_t)bytes);
  double best = copy_best_seconds(b, a, (size_t)bytes, threads, reps);
  free(a);
  free(b);
  return best;
}

int main(int argc, char **argv) {
  const char *gguf_path = NULL, *preset = "small", *type_name = "f32";
  int64_t threads = 1, prompt = 64, gen = 64;
  int reps = 3;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--gguf") == 0 && i + 1 < argc) gguf_path = argv[++i];
    else if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc) preset = argv[++i];
    else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) type_name = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoll(argv[++i]);
    else if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) prompt = atoll(argv[++i]);
    else if (strcmp(argv[i], "--gen") == 0 && i + 1 < argc) gen = atoll(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr,
              "usage: decode_bench (--gguf FILE | --preset small|large --type f32|f16|bf16|q8_0|q4_0) [--threads T] "
              "[--prompt P] [--gen N] [--reps R]\n");
      return 2;
    }
  }
  if (prompt < 1 || gen < 1 || reps < 1 || threads < 0) {
    fprintf(stderr, "decode_bench: --prompt, --gen and --reps must be >= 1, --threads >= 0\n");
    return 2;
  }
  kb_context *ctx = NULL;
  ok(kb_context_create(KB_BACKEND_CPU, threads, &ctx), NULL, "kb_context_create");
  struct model m;
  memset(&m, 0, sizeof m);
  struct gguf_file f;
  const char *what;
  if (gguf_path != NULL) {
    char err[512];
    if (gguf_open(gguf_path, &f, err, sizeof err) != 0) {
      fprintf(stderr, "decode_bench: %s: %s\n", gguf_path, err);
      return 1;
    }
    load_gguf(&m, &f);
    what = gguf_path;
  } else {
    static const struct {
      const char *name;
      kb_dtype type;
    } types[] = {{"f32", KB_DTYPE_F32}, {"f16", KB_DTYPE_F16}, {"bf16", KB_DTYPE_BF16}, {"q8_0", KB_DTYPE_Q8_0},
                 {"q4_0", KB_DTYPE_Q4_0}};
    int found = -1;
    for (int t = 0; t < 5; t++)
      if (strcmp(type_name, types[t].name) == 0) found = t;
    if (found < 0) {
      fprintf(stderr, "decode_bench: unknown --type %s\n", type_name);
      return 2;
    }
    synthesize(&m, ctx, preset, types[found].type);
    what = preset;
  }
  struct state s;
  state_alloc(&s, &m, prompt + gen);
  int32_t *ids = (int32_t *)xmalloc((size_t)prompt * sizeof(int32_t));
  for (int64_t i = 0; i < prompt; i++) ids[i] = (int32_t)((i * 7919 + 13) % m.n_vocab);

  double *prefill_s = (double *)xmalloc((size_t)reps * sizeof(double));
  double *decode_s = (double *)xmalloc((size_t)reps * sizeof(double));
  int32_t first = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    int32_t next = forward(ctx, &m, &s, ids, prompt, 0);
    double t1 = now();
    first = next;
    for (int64_t g = 0; g < gen; g++) next = forward(ctx, &m, &s, &next, 1, prompt + g);
    double t2 = now();
    prefill_s[r] = t1 - t0;
    decode_s[r] = t2 - t1;
  }
  /* The median is the figure compared with llama-bench (whose samples give
   * one too): on a shared VM a neighbour's burst drags a mean, and a best
   * run flatters whichever side got the quietest moment. */
  qsort(prefill_s, (size_t)reps, sizeof(double), cmp_double);
  qsort(decode_s, (size_t)reps, sizeof(double), cmp_double);
  double med_prefill = median_sorted(prefill_s, reps), med_decode = median_sorted(decode_s, reps);
  double best_prefill = prefill_s[0], best_decode = decode_s[0];
  int64_t wb = weight_bytes(&m);
  double copy = copy_seconds(wb, kb_context_num_threads(ctx), 5);
  double decode_tps = (double)gen / med_decode, rate = (double)wb * decode_tps;
  printf("model %s: %lld layers, hidden %lld, %lld/%lld heads, ffn %lld, vocab %lld; threads %lld\n", what,
         (long long)m.n_layer, (long long)m.n_embd, (long long)m.n_head, (long long)m.n_kv, (long long)m.n_ff,
         (long long)m.n_vocab, (long long)kb_context_num_threads(ctx));
  printf("prefill %lld tokens: %.1f tokens/s (median of %d runs; best %.1f)\n", (long long)prompt,
         (double)prompt / med_prefill, reps, (double)prompt / best_prefill);
  printf("decode %lld tokens: %.1f tokens/s (median of %d runs; best %.1f)\n", (long long)gen, decode_tps, reps,
         (double)gen / best_decode);
  printf("weights read per decode step: %.2f MB; %.1f GB/s; copy of as many bytes %.1f GB/s; ratio %.2f\n",
         (double)wb / 1e6, rate / 1e9, (double)wb / copy / 1e9, rate / ((double)wb / copy));
  printf("first generated token %d\n", (int)first);
  free(prefill_s);
  free(decode_s);
  kb_context_destroy(ctx);
  if (gguf_path != NULL) gguf_close(&f);
  return 0;
}
