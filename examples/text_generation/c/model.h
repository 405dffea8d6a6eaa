/* model.h - a Llama-architecture decoder (dense or with experts) read from a
 * GGUF file and run on kernelbridge's kernels: the C driver of the text
 * generation example, and the reference the other languages' examples are
 * timed against. */
#ifndef TG_MODEL_H
#define TG_MODEL_H

#include <stdint.h>

#include "kernelbridge.h"

/* A weight tensor as the kernels take it: its kb_dtype, bytes and shape
 * (outermost first). */
typedef struct {
  kb_dtype type;
  void *data;
  int64_t bytes;
  int64_t rows, cols; /* [rows, cols]; 3-D expert tensors: rows = experts * per-expert rows */
} tg_weight;

typedef struct {
  tg_weight attn_norm, wq, wk, wv, wo, ffn_norm;
  tg_weight gate, up, down;  /* dense feed-forward */
  tg_weight router;          /* with experts: ffn_gate_inp, [experts, hidden] */
} tg_layer;

typedef struct {
  /* Hyperparameters (GGUF keys llama.*). */
  int64_t vocab, hidden, layers, heads, kv_heads, head_dim, ffn, context;
  int64_t rotary_dim, experts, experts_used;
  float eps, rope_theta;
  tg_weight embed, out_norm, output;
  tg_layer *layer;
  /* The KV cache, float32, [context, kv_heads, head_dim] per layer
   * (kb_attention_ex's seq_major layout, one sequence). */
  float *k_cache, *v_cache;
  int64_t cached; /* tokens in the cache */
  /* Scratch for up to `scratch_rows` tokens per forward call. */
  int64_t scratch_rows;
  float *x, *h, *q, *k, *v, *attn, *o, *g, *logits, *route_logits, *route_w;
  int32_t *route_ids, *pos;
} tg_model;

/* Reads the hyperparameters and every weight of an open GGUF file of
 * architecture "llama".  On failure writes a message naming the problem
 * into err and returns a non-OK status. */
kb_status tg_model_load(kb_context *ctx, const kb_gguf *g, int64_t max_rows, tg_model *m, char *err, size_t err_len);
void tg_model_free(tg_model *m);

/* Runs n tokens (n <= scratch_rows) at positions cached .. cached + n - 1,
 * appends them to the cache and writes the logits of the last one
 * (all_logits: of every one, [n, vocab]) to out. */
kb_status tg_model_forward(kb_context *ctx, tg_model *m, int64_t n, const int32_t *tokens, int all_logits,
                           float *out, char *err, size_t err_len);

#endif /* TG_MODEL_H */
