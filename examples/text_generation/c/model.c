/* model.c - loading a Llama-architecture GGUF model and its forward pass.
 *
 * The layer, as llama.cpp runs LLM_ARCH_LLAMA (and transformers'
 * LlamaForCausalLM / MixtralForCausalLM on the unpermuted weights):
 *   h = rmsnorm(x) * attn_norm
 *   q, k, v = h Wq^T, h Wk^T, h Wv^T; rope on q and k, adjacent pairs (the
 *     converter permutes Wq and Wk so that GGUF's pairs are (2i, 2i + 1))
 *   append k, v to the cache; a = attention of q over the cache (causal,
 *     aligned bottom-right: query i sees the keys up to its own position)
 *   x += a Wo^T; h = rmsnorm(x) * ffn_norm          (kb_add_rmsnorm)
 *   dense:   f = (silu(h Wg^T) * (h Wu^T)) Wd^T     (kb_linear_glu_w, kb_linear_w)
 *   experts: softmax of h Wr^T, top experts_used, renormalised; f = the
 *            weighted sum of those experts' SwiGLU blocks (kb_moe_route,
 *            kb_moe_experts)
 *   x += f (fused into the next layer's, or the output, norm).
 * Logits = (rmsnorm(x) * output_norm) Wout^T, Wout = token_embd when the
 * file has no output.weight (tied embeddings). */
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kb_status fail(char *err, size_t len, kb_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return st;
}

/* The library's message after a failed call, prefixed with what was done. */
static kb_status lib_fail(kb_context *ctx, char *err, size_t len, kb_status st, const char *what) {
  return fail(err, len, st, "%s: %s", what, kb_context_last_error(ctx));
}

#define TRY(call, what)                                          \
  do {                                                           \
    kb_status st_ = (call);                                      \
    if (st_ != KB_STATUS_OK) return lib_fail(ctx, err, err_len, st_, what); \
  } while (0)

/* An integer key, or def when the file has none (def < 0: required). */
static kb_status key_int(kb_context *ctx, const kb_gguf *g, const char *key, int64_t def, int64_t *v, char *err,
                         size_t err_len) {
  int64_t at;
  TRY(kb_gguf_find_key(ctx, g, key, &at), key);
  if (at < 0) {
    if (def < 0) return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "the model has no key '%s'", key);
    *v = def;
    return KB_STATUS_OK;
  }
  TRY(kb_gguf_get_int64(ctx, g, at, v), key);
  return KB_STATUS_OK;
}

static kb_status key_float(kb_context *ctx, const kb_gguf *g, const char *key, float def, float *v, char *err,
                           size_t err_len) {
  int64_t at;
  TRY(kb_gguf_find_key(ctx, g, key, &at), key);
  if (at < 0) {
    *v = def;
    return KB_STATUS_OK;
  }
  TRY(kb_gguf_get_f32(ctx, g, at, 1, v), key);
  return KB_STATUS_OK;
}

/* Reads tensor `name` of shape [d0, d1] (or [d0, d1, d2] when d2 > 0, the
 * experts' tensors; [d0] when d1 == 0), checking its shape and that its type
 * is one the weight kernels take (any kb_dtype; float32 only when
 * f32_only: the norms). */
static kb_status load_weight(kb_context *ctx, const kb_gguf *g, const char *name, int64_t d0, int64_t d1, int64_t d2,
                             int f32_only, tg_weight *w, char *err, size_t err_len) {
  int64_t at, n_dims, type;
  TRY(kb_gguf_find_tensor(ctx, g, name, &at), name);
  if (at < 0) return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "the model has no tensor '%s'", name);
  TRY(kb_gguf_tensor_n_dims(ctx, g, at, &n_dims), name);
  int64_t want[3] = {d0, d1, d2}, want_dims = d2 > 0 ? 3 : d1 > 0 ? 2 : 1;
  if (n_dims != want_dims)
    return fail(err, err_len, KB_STATUS_SHAPE_MISMATCH, "tensor '%s' has %lld dimensions, expected %lld", name,
                (long long)n_dims, (long long)want_dims);
  for (int64_t a = 0; a < n_dims; a++) {
    int64_t size;
    TRY(kb_gguf_tensor_dim(ctx, g, at, a, &size), name);
    if (size != want[a])
      return fail(err, err_len, KB_STATUS_SHAPE_MISMATCH, "tensor '%s' has size %lld on axis %lld, expected %lld",
                  name, (long long)size, (long long)a, (long long)want[a]);
  }
  TRY(kb_gguf_tensor_type(ctx, g, at, &type), name);
  int ok = type == KB_DTYPE_F32 || (!f32_only && (type == KB_DTYPE_F16 || type == KB_DTYPE_BF16 ||
                                                   type == KB_DTYPE_Q8_0 || type == KB_DTYPE_Q4_0));
  if (!ok)
    return fail(err, err_len, KB_STATUS_UNSUPPORTED, "tensor '%s' has GGML type %lld, which this example %s", name,
                (long long)type, f32_only ? "needs as F32" : "does not run (F32, F16, BF16, Q8_0 and Q4_0 it does)");
  TRY(kb_gguf_tensor_bytes(ctx, g, at, &w->bytes), name);
  w->data = malloc(w->bytes > 0 ? (size_t)w->bytes : 1);
  if (w->data == NULL) return fail(err, err_len, KB_STATUS_OUT_OF_MEMORY, "no memory for tensor '%s'", name);
  TRY(kb_gguf_tensor_read(ctx, g, at, w->bytes, w->data), name);
  w->type = (kb_dtype)type;
  w->rows = d2 > 0 ? d0 * d1 : d0;
  w->cols = d2 > 0 ? d2 : d1;
  return KB_STATUS_OK;
}

static void free_weight(tg_weight *w) {
  free(w->data);
  w->data = NULL;
}

static int has_tensor(kb_context *ctx, const kb_gguf *g, const char *name) {
  int64_t at = -1;
  return kb_gguf_find_tensor(ctx, g, name, &at) == KB_STATUS_OK && at >= 0;
}

static float *alloc_f(int64_t n) { return (float *)calloc((size_t)(n > 0 ? n : 1), sizeof(float)); }

kb_status tg_model_load(kb_context *ctx, const kb_gguf *g, int64_t max_rows, tg_model *m, char *err, size_t err_len) {
  memset(m, 0, sizeof *m);
  int64_t at, bytes;
  TRY(kb_gguf_find_key(ctx, g, "general.architecture", &at), "general.architecture");
  if (at < 0) return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "the model has no key 'general.architecture'");
  char arch[64] = "";
  TRY(kb_gguf_string_bytes(ctx, g, at, &bytes), "general.architecture");
  if (bytes >= (int64_t)sizeof arch)
    return fail(err, err_len, KB_STATUS_UNSUPPORTED, "architecture name of %lld bytes is not 'llama'",
                (long long)bytes);
  TRY(kb_gguf_get_string(ctx, g, at, bytes, arch), "general.architecture");
  if (strcmp(arch, "llama") != 0)
    return fail(err, err_len, KB_STATUS_UNSUPPORTED, "architecture '%s' is not supported (only 'llama')", arch);
  kb_status st;
#define KEY_INT(key, def, dst) \
  if ((st = key_int(ctx, g, key, def, dst, err, err_len)) != KB_STATUS_OK) return st
  KEY_INT("llama.embedding_length", -1, &m->hidden);
  KEY_INT("llama.block_count", -1, &m->layers);
  KEY_INT("llama.feed_forward_length", -1, &m->ffn);
  KEY_INT("llama.attention.head_count", -1, &m->heads);
  KEY_INT("llama.attention.head_count_kv", m->heads, &m->kv_heads);
  KEY_INT("llama.context_length", -1, &m->context);
  KEY_INT("llama.expert_count", 0, &m->experts);
  KEY_INT("llama.expert_used_count", 0, &m->experts_used);
#undef KEY_INT
  if ((st = key_float(ctx, g, "llama.attention.layer_norm_rms_epsilon", 1e-5f, &m->eps, err, err_len)) != KB_STATUS_OK)
    return st;
  if ((st = key_float(ctx, g, "llama.rope.freq_base", 10000.0f, &m->rope_theta, err, err_len)) != KB_STATUS_OK)
    return st;
  if (m->heads <= 0 || m->kv_heads <= 0 || m->hidden <= 0 || m->hidden % m->heads != 0 || m->heads % m->kv_heads != 0 ||
      m->layers <= 0 || m->ffn <= 0 || m->context <= 0 || m->layers > 4096)
    return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT,
                "inconsistent hyperparameters: hidden %lld, heads %lld, kv heads %lld, layers %lld, ffn %lld, "
                "context %lld",
                (long long)m->hidden, (long long)m->heads, (long long)m->kv_heads, (long long)m->layers,
                (long long)m->ffn, (long long)m->context);
  if (m->experts < 0 || (m->experts > 0 && (m->experts_used <= 0 || m->experts_used > m->experts)))
    return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "expert_used_count %lld of expert_count %lld",
                (long long)m->experts_used, (long long)m->experts);
  m->head_dim = m->hidden / m->heads;
  int64_t rot;
  if ((st = key_int(ctx, g, "llama.rope.dimension_count", m->head_dim, &rot, err, err_len)) != KB_STATUS_OK) return st;
  m->rotary_dim = rot;
  /* The vocabulary size is the embedding's row count. */
  TRY(kb_gguf_find_tensor(ctx, g, "token_embd.weight", &at), "token_embd.weight");
  if (at < 0) return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "the model has no tensor 'token_embd.weight'");
  TRY(kb_gguf_tensor_dim(ctx, g, at, 0, &m->vocab), "token_embd.weight");

  int64_t kvd = m->kv_heads * m->head_dim;
#define W(name, d0, d1, d2, f32only, dst) \
  if ((st = load_weight(ctx, g, name, d0, d1, d2, f32only, dst, err, err_len)) != KB_STATUS_OK) return st
  W("token_embd.weight", m->vocab, m->hidden, 0, 0, &m->embed);
  W("output_norm.weight", m->hidden, 0, 0, 1, &m->out_norm);
  if (has_tensor(ctx, g, "output.weight")) {
    W("output.weight", m->vocab, m->hidden, 0, 0, &m->output);
  }
  m->layer = (tg_layer *)calloc((size_t)m->layers, sizeof(tg_layer));
  if (m->layer == NULL) return fail(err, err_len, KB_STATUS_OUT_OF_MEMORY, "no memory for the layers");
  char name[96];
  for (int64_t l = 0; l < m->layers; l++) {
    tg_layer *y = &m->layer[l];
#define LW(suffix, d0, d1, d2, f32only, dst)                               \
  snprintf(name, sizeof name, "blk.%lld.%s", (long long)l, suffix); \
  W(name, d0, d1, d2, f32only, dst)
    LW("attn_norm.weight", m->hidden, 0, 0, 1, &y->attn_norm);
    LW("attn_q.weight", m->hidden, m->hidden, 0, 0, &y->wq);
    LW("attn_k.weight", kvd, m->hidden, 0, 0, &y->wk);
    LW("attn_v.weight", kvd, m->hidden, 0, 0, &y->wv);
    LW("attn_output.weight", m->hidden, m->hidden, 0, 0, &y->wo);
    LW("ffn_norm.weight", m->hidden, 0, 0, 1, &y->ffn_norm);
    if (m->experts > 0) {
      LW("ffn_gate_inp.weight", m->experts, m->hidden, 0, 1, &y->router);
      LW("ffn_gate_exps.weight", m->experts, m->ffn, m->hidden, 0, &y->gate);
      LW("ffn_up_exps.weight", m->experts, m->ffn, m->hidden, 0, &y->up);
      LW("ffn_down_exps.weight", m->experts, m->hidden, m->ffn, 0, &y->down);
      if (y->gate.type != y->up.type || y->gate.type != y->down.type)
        return fail(err, err_len, KB_STATUS_UNSUPPORTED, "layer %lld: the experts' tensors differ in type",
                    (long long)l);
    } else {
      LW("ffn_gate.weight", m->ffn, m->hidden, 0, 0, &y->gate);
      LW("ffn_up.weight", m->ffn, m->hidden, 0, 0, &y->up);
      LW("ffn_down.weight", m->hidden, m->ffn, 0, 0, &y->down);
      if (y->gate.type != y->up.type)
        return fail(err, err_len, KB_STATUS_UNSUPPORTED, "layer %lld: ffn_gate and ffn_up differ in type",
                    (long long)l);
    }
#undef LW
  }
#undef W
  m->k_cache = alloc_f(m->layers * m->context * kvd);
  m->v_cache = alloc_f(m->layers * m->context * kvd);
  int64_t r = max_rows, wide = m->ffn > m->hidden ? m->ffn : m->hidden;
  m->scratch_rows = r;
  m->x = alloc_f(r * m->hidden);
  m->h = alloc_f(r * m->hidden);
  m->q = alloc_f(r * m->hidden);
  m->k = alloc_f(r * kvd);
  m->v = alloc_f(r * kvd);
  m->attn = alloc_f(r * m->hidden);
  m->o = alloc_f(r * m->hidden);
  m->g = alloc_f(r * wide);
  m->route_logits = alloc_f(r * (m->experts > 0 ? m->experts : 1));
  m->route_w = alloc_f(r * (m->experts_used > 0 ? m->experts_used : 1));
  m->route_ids = (int32_t *)calloc((size_t)(r * (m->experts_used > 0 ? m->experts_used : 1)), sizeof(int32_t));
  m->pos = (int32_t *)calloc((size_t)r, sizeof(int32_t));
  if (m->k_cache == NULL || m->v_cache == NULL || m->x == NULL || m->h == NULL || m->q == NULL || m->k == NULL ||
      m->v == NULL || m->attn == NULL || m->o == NULL || m->g == NULL || m->route_logits == NULL ||
      m->route_w == NULL || m->route_ids == NULL || m->pos == NULL)
    return fail(err, err_len, KB_STATUS_OUT_OF_MEMORY, "no memory for the cache and scratch");
  return KB_STATUS_OK;
}

void tg_model_free(tg_model *m) {
  free_weight(&m->embed);
  free_weight(&m->out_norm);
  free_weight(&m->output);
  for (int64_t l = 0; m->layer != NULL && l < m->layers; l++) {
    tg_layer *y = &m->layer[l];
    tg_weight *ws[] = {&y->attn_norm, &y->wq, &y->wk, &y->wv, &y->wo, &y->ffn_norm,
                       &y->gate,      &y->up, &y->down, &y->router};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) free_weight(ws[i]);
  }
  free(m->layer);
  float *fs[] = {m->k_cache, m->v_cache, m->x, m->h, m->q, m->k, m->v, m->attn, m->o, m->g, m->route_logits, m->route_w};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) free(fs[i]);
  free(m->route_ids);
  free(m->pos);
  memset(m, 0, sizeof *m);
}

static kb_status linear(kb_context *ctx, int64_t rows, const float *x, const tg_weight *w, float *y) {
  return kb_linear_w(ctx, rows, w->cols, w->rows, x, w->type, w->data, w->bytes, NULL, KB_ACTIVATION_NONE, y);
}

kb_status tg_model_forward(kb_context *ctx, tg_model *m, int64_t n, const int32_t *tokens, int all_logits,
                           float *out, char *err, size_t err_len) {
  if (n <= 0 || n > m->scratch_rows)
    return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "%lld tokens in one step (1 to %lld)", (long long)n,
                (long long)m->scratch_rows);
  if (m->cached + n > m->context)
    return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT,
                "%lld tokens after %lld do not fit in the model's context of %lld", (long long)n,
                (long long)m->cached, (long long)m->context);
  for (int64_t t = 0; t < n; t++) {
    if (tokens[t] < 0 || tokens[t] >= m->vocab)
      return fail(err, err_len, KB_STATUS_INVALID_ARGUMENT, "token id %d is not in [0, %lld)", (int)tokens[t],
                  (long long)m->vocab);
    m->pos[t] = (int32_t)(m->cached + t);
  }
  int64_t hd = m->hidden, kvd = m->kv_heads * m->head_dim;
  TRY(kb_embedding_w(ctx, n, m->vocab, hd, tokens, m->embed.type, m->embed.data, m->embed.bytes, m->x),
      "token embedding");
  TRY(kb_rmsnorm(ctx, n, hd, m->x, (const float *)m->layer[0].attn_norm.data, m->eps, m->h), "attn_norm");
  int32_t len = (int32_t)(m->cached + n);
  for (int64_t l = 0; l < m->layers; l++) {
    tg_layer *y = &m->layer[l];
    float *kc = m->k_cache + l * m->context * kvd, *vc = m->v_cache + l * m->context * kvd;
    TRY(linear(ctx, n, m->h, &y->wq, m->q), "attn_q");
    TRY(linear(ctx, n, m->h, &y->wk, m->k), "attn_k");
    TRY(linear(ctx, n, m->h, &y->wv, m->v), "attn_v");
    TRY(kb_rope_ex(ctx, 1, n, m->heads, m->kv_heads, m->head_dim, m->rotary_dim, KB_ROPE_STYLE_ADJACENT, m->pos,
                   m->rope_theta, KB_ROPE_SCALING_NONE, 1.0f, 1.0f, 4.0f, 8192, m->q, m->k),
        "rope");
    int32_t at = (int32_t)m->cached;
    TRY(kb_kv_cache_append(ctx, 1, m->kv_heads, n, m->context, m->head_dim, true, m->k, m->v, &at, kc, vc),
        "kv cache");
    TRY(kb_attention_ex(ctx, 1, m->heads, m->kv_heads, n, m->context, m->head_dim, true, m->q, kc, vc, &len, 1, 1, 1,
                        NULL, true, true, 0.0f, m->attn),
        "attention");
    TRY(linear(ctx, n, m->attn, &y->wo, m->o), "attn_output");
    TRY(kb_add_rmsnorm(ctx, n, hd, m->o, m->x, (const float *)y->ffn_norm.data, m->eps, m->h), "ffn_norm");
    if (m->experts > 0) {
      TRY(linear(ctx, n, m->h, &y->router, m->route_logits), "ffn_gate_inp");
      TRY(kb_moe_route(ctx, n, m->experts, m->experts_used, KB_MOE_ROUTING_SOFTMAX_TOPK_NORM, m->route_logits,
                       m->route_ids, m->route_w),
          "router");
      TRY(kb_moe_experts(ctx, n, hd, m->ffn, m->experts, m->experts_used, m->h, m->route_ids, m->route_w,
                         y->gate.type, y->gate.data, y->gate.bytes, y->up.data, y->up.bytes, y->down.data,
                         y->down.bytes, KB_ACTIVATION_SILU, m->o),
          "experts");
    } else {
      TRY(kb_linear_glu_w(ctx, n, hd, m->ffn, m->h, y->gate.type, y->gate.data, y->gate.bytes, y->up.data,
                          y->up.bytes, KB_ACTIVATION_SILU, m->g),
          "ffn_gate / ffn_up");
      TRY(linear(ctx, n, m->g, &y->down, m->o), "ffn_down");
    }
    /* x += f, and the next norm (or the output norm) of it. */
    const tg_weight *next = l + 1 < m->layers ? &m->layer[l + 1].attn_norm : &m->out_norm;
    TRY(kb_add_rmsnorm(ctx, n, hd, m->o, m->x, (const float *)next->data, m->eps, m->h), "norm");
  }
  m->cached += n;
  const tg_weight *head = m->output.data != NULL ? &m->output : &m->embed;
  int64_t first = all_logits ? 0 : n - 1;
  TRY(linear(ctx, n - first, m->h + first * hd, head, out), "output");
  return KB_STATUS_OK;
}
