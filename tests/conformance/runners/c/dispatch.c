/*
 * dispatch.c - turns a corpus call (runner.h) into a call of the public C
 * API: the float32 kernels, the kernels on weights in storage formats (u8
 * bytes with a kb_dtype), and the bfloat16 / float16 variants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

int64_t call_dim(struct call *c, const char *name) {
  for (int i = 0; i < c->ndims; i++)
    if (strcmp(c->dim_names[i], name) == 0) return c->dims[i];
  if (c->missing[0] == '\0') snprintf(c->missing, sizeof c->missing, "%s", name);
  return 0;
}

bool call_flag(struct call *c, const char *name) {
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

float call_scalar_f32(struct call *c, const char *name) { return (float)strtod(S(c, name), NULL); }
static int64_t SI(struct call *c, const char *name) { return (int64_t)strtoll(S(c, name), NULL, 10); }
static uint64_t SU(struct call *c, const char *name) { return (uint64_t)strtoull(S(c, name), NULL, 10); }

struct tensor *find_tensor(struct call *c, const char *name) {
  for (int i = 0; i < c->ntensors; i++)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

/* A tensor absent from the case is passed as NULL (the "null" list). */
static void *T(struct call *c, const char *name) {
  struct tensor *t = find_tensor(c, name);
  return t == NULL ? NULL : t->ptr;
}

#define D(c, name) call_dim(c, name)
#define F(c, name) call_flag(c, name)
#define SF(c, name) call_scalar_f32(c, name)
#define TF(c, name) ((float *)T(c, name))
#define TI(c, name) ((int32_t *)T(c, name))
#define TH(c, name) ((uint16_t *)T(c, name))
#define TU(c, name) T(c, name)
/* kb_dtype scalars are plain integers in the corpus, as kb_activation. */
#define DT(c, name) ((kb_dtype)SI(c, name))

int dispatch(kb_context *ctx, struct call *c, kb_status *st) {
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
  } else if (strcmp(k, "linear") == 0) {
    *st = kb_linear(ctx, D(c, "rows"), D(c, "in_features"), D(c, "out_features"), TF(c, "x"), TF(c, "weight"),
                    TF(c, "bias"), (kb_activation)SI(c, "act"), TF(c, "y"));
  } else if (strcmp(k, "attention_ex") == 0) {
    *st = kb_attention_ex(ctx, D(c, "batch"), D(c, "heads"), D(c, "kv_heads"), D(c, "seq_q"), D(c, "seq_kv"),
                          D(c, "head_dim"), F(c, "seq_major"), TF(c, "q"), TF(c, "k"), TF(c, "v"), TI(c, "kv_lengths"),
                          D(c, "mask_batch"), D(c, "mask_heads"), D(c, "mask_q"), TF(c, "mask"), F(c, "causal"),
                          F(c, "causal_bottom_right"), SF(c, "scale"), TF(c, "out"));
  } else if (strcmp(k, "gemm_batched") == 0) {
    *st = kb_gemm_batched(ctx, F(c, "trans_a"), F(c, "trans_b"), D(c, "batch"), D(c, "m"), D(c, "n"), D(c, "k"),
                          SF(c, "alpha"), TF(c, "a"), D(c, "lda"), D(c, "stride_a"), TF(c, "b"), D(c, "ldb"),
                          D(c, "stride_b"), SF(c, "beta"), TF(c, "c"), D(c, "ldc"), D(c, "stride_c"));
  } else if (strcmp(k, "quantize") == 0) {
    *st = kb_quantize(ctx, DT(c, "type"), D(c, "rows"), D(c, "cols"), TF(c, "x"), TU(c, "y"), D(c, "y_bytes"));
  } else if (strcmp(k, "dequantize") == 0) {
    *st = kb_dequantize(ctx, DT(c, "type"), D(c, "rows"), D(c, "cols"), TU(c, "x"), D(c, "x_bytes"), TF(c, "y"));
  } else if (strcmp(k, "linear_w") == 0) {
    *st = kb_linear_w(ctx, D(c, "rows"), D(c, "in_features"), D(c, "out_features"), TF(c, "x"), DT(c, "weight_type"),
                      TU(c, "weight"), D(c, "weight_bytes"), TF(c, "bias"), (kb_activation)SI(c, "act"), TF(c, "y"));
  } else if (strcmp(k, "linear_glu_w") == 0) {
    *st = kb_linear_glu_w(ctx, D(c, "rows"), D(c, "in_features"), D(c, "out_features"), TF(c, "x"),
                          DT(c, "weight_type"), TU(c, "gate_weight"), D(c, "gate_bytes"), TU(c, "up_weight"),
                          D(c, "up_bytes"), (kb_activation)SI(c, "act"), TF(c, "y"));
  } else if (strcmp(k, "moe_experts") == 0) {
    *st = kb_moe_experts(ctx, D(c, "tokens"), D(c, "hidden"), D(c, "ffn"), D(c, "experts"), D(c, "top_k"),
                         TF(c, "x"), TI(c, "ids"), TF(c, "weights"), DT(c, "weight_type"), TU(c, "gate_weight"),
                         D(c, "gate_bytes"), TU(c, "up_weight"), D(c, "up_bytes"), TU(c, "down_weight"),
                         D(c, "down_bytes"), (kb_activation)SI(c, "act"), TF(c, "y"));
  } else if (strcmp(k, "embedding_w") == 0) {
    *st = kb_embedding_w(ctx, D(c, "n_ids"), D(c, "vocab"), D(c, "dim"), TI(c, "ids"), DT(c, "table_type"),
                         TU(c, "table"), D(c, "table_bytes"), TF(c, "out"));
  } else if (strcmp(k, "moe_route") == 0) {
    *st = kb_moe_route(ctx, D(c, "tokens"), D(c, "experts"), D(c, "top_k"), (kb_moe_routing)SI(c, "routing"),
                       TF(c, "logits"), TI(c, "ids"), TF(c, "weights"));
  } else if (strcmp(k, "rope_ex") == 0) {
    *st = kb_rope_ex(ctx, D(c, "batch"), D(c, "seq"), D(c, "q_heads"), D(c, "kv_heads"), D(c, "head_dim"),
                     D(c, "rotary_dim"), (kb_rope_style)SI(c, "style"), TI(c, "positions"), SF(c, "theta"),
                     (kb_rope_scaling)SI(c, "scaling"), SF(c, "factor"), SF(c, "low_freq_factor"),
                     SF(c, "high_freq_factor"), SI(c, "original_max_position"), TF(c, "q"), TF(c, "k"));
  } else if (strcmp(k, "glu") == 0) {
    *st = kb_glu(ctx, D(c, "rows"), D(c, "cols"), TF(c, "gate"), D(c, "ld_gate"), TF(c, "up"), D(c, "ld_up"),
                 (kb_activation)SI(c, "act"), TF(c, "y"));
  } else if (strcmp(k, "add_rmsnorm") == 0) {
    *st = kb_add_rmsnorm(ctx, D(c, "rows"), D(c, "cols"), TF(c, "x"), TF(c, "residual"), TF(c, "weight"),
                         SF(c, "eps"), TF(c, "y"));
  } else if (strcmp(k, "kv_cache_append") == 0) {
    *st = kb_kv_cache_append(ctx, D(c, "batch"), D(c, "kv_heads"), D(c, "seq_new"), D(c, "capacity"), D(c, "head_dim"),
                             F(c, "seq_major"), TF(c, "k_new"), TF(c, "v_new"), TI(c, "positions"), TF(c, "k_cache"),
                             TF(c, "v_cache"));
  } else if (strcmp(k, "kv_cache_append_to_bf16") == 0 || strcmp(k, "kv_cache_append_to_f16") == 0) {
    /* float32 rows into a 16-bit cache (bit patterns, DT_U16). */
    *st = (k[19] == 'b' ? kb_kv_cache_append_to_bf16 : kb_kv_cache_append_to_f16)(
        ctx, D(c, "batch"), D(c, "kv_heads"), D(c, "seq_new"), D(c, "capacity"), D(c, "head_dim"), F(c, "seq_major"),
        TF(c, "k_new"), TF(c, "v_new"), TI(c, "positions"), TH(c, "k_cache"), TH(c, "v_cache"));
  } else if (strcmp(k, "attention_ex_kv_bf16") == 0 || strcmp(k, "attention_ex_kv_f16") == 0) {
    *st = (k[16] == 'b' ? kb_attention_ex_kv_bf16 : kb_attention_ex_kv_f16)(
        ctx, D(c, "batch"), D(c, "heads"), D(c, "kv_heads"), D(c, "seq_q"), D(c, "seq_kv"), D(c, "head_dim"),
        F(c, "seq_major"), TF(c, "q"), TH(c, "k"), TH(c, "v"), TI(c, "kv_lengths"), D(c, "mask_batch"),
        D(c, "mask_heads"), D(c, "mask_q"), TF(c, "mask"), F(c, "causal"), F(c, "causal_bottom_right"),
        SF(c, "scale"), TF(c, "out"));
  } else if (strcmp(k, "embedding_bf16") == 0 || strcmp(k, "embedding_f16") == 0) {
    /* The 16-bit embedding, argmax and samplers: their float tensors are
     * the corpus' bit patterns (DT_U16). */
    *st = (k[10] == 'b' ? kb_embedding_bf16 : kb_embedding_f16)(ctx, D(c, "n_ids"), D(c, "vocab"), D(c, "dim"),
                                                               TI(c, "ids"), TH(c, "table"), TH(c, "out"));
  } else if (strcmp(k, "argmax_bf16") == 0 || strcmp(k, "argmax_f16") == 0) {
    *st = (k[7] == 'b' ? kb_argmax_bf16 : kb_argmax_f16)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TI(c, "out"));
  } else if (strcmp(k, "sample_bf16") == 0 || strcmp(k, "sample_f16") == 0) {
    *st = (k[7] == 'b' ? kb_sample_bf16 : kb_sample_f16)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "logits"),
                                                         SF(c, "temperature"), SU(c, "seed"), TI(c, "out"));
  } else if (strcmp(k, "topk_sample_bf16") == 0 || strcmp(k, "topk_sample_f16") == 0) {
    *st = (k[12] == 'b' ? kb_topk_sample_bf16 : kb_topk_sample_f16)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "logits"),
                                                                    D(c, "k"), SF(c, "temperature"), SU(c, "seed"),
                                                                    TI(c, "out"));
  } else if (strcmp(k, "topp_sample_bf16") == 0 || strcmp(k, "topp_sample_f16") == 0) {
    *st = (k[12] == 'b' ? kb_topp_sample_bf16 : kb_topp_sample_f16)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "logits"),
                                                                    SF(c, "p"), SF(c, "temperature"), SU(c, "seed"),
                                                                    TI(c, "out"));
  } else {
    return -1;
  }
  return 0;
}

static const char *const lowp_kernels[] = {"silu",    "gelu",        "gelu_tanh", "add",       "mul",
                                           "scale",   "add_bias",    "softmax",   "log_softmax", "rmsnorm",
                                           "layernorm", "gemm",      "attention", "linear",    "attention_ex",
                                           "gemm_batched", "glu"};

/* Not listed: add_rmsnorm, whose 16-bit variants round the residual to the
 * dtype before the norm reads it (kb_add_<t> then kb_rmsnorm_<t>, as the
 * header says), so their y is not the float32 call rounded once, the rule
 * run_lowp checks.  kernels/cpu/decoder/add_rmsnorm_test.c checks them
 * against the two-call sequence bit for bit. */

bool has_lowp_variant(const char *kernel) {
  for (size_t i = 0; i < sizeof lowp_kernels / sizeof lowp_kernels[0]; i++)
    if (strcmp(lowp_kernels[i], kernel) == 0) return true;
  return false;
}

const char *lowp_name(enum lowp dt) { return dt == LOWP_F16 ? "f16" : "bf16"; }

/* Picks kb_<op>_bf16 or kb_<op>_f16; both have the same signature. */
#define PICK(op) (dt == LOWP_F16 ? kb_##op##_f16 : kb_##op##_bf16)

int dispatch_lowp(kb_context *ctx, struct call *c, enum lowp dt, kb_status *st) {
  const char *k = c->kernel;
  if (strcmp(k, "silu") == 0) {
    *st = PICK(silu)(ctx, D(c, "n"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "gelu") == 0) {
    *st = PICK(gelu)(ctx, D(c, "n"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "gelu_tanh") == 0) {
    *st = PICK(gelu_tanh)(ctx, D(c, "n"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "add") == 0) {
    *st = PICK(add)(ctx, D(c, "n"), TH(c, "a"), TH(c, "b"), TH(c, "y"));
  } else if (strcmp(k, "mul") == 0) {
    *st = PICK(mul)(ctx, D(c, "n"), TH(c, "a"), TH(c, "b"), TH(c, "y"));
  } else if (strcmp(k, "scale") == 0) {
    *st = PICK(scale)(ctx, D(c, "n"), SF(c, "alpha"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "add_bias") == 0) {
    *st = PICK(add_bias)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "bias"), TH(c, "y"));
  } else if (strcmp(k, "softmax") == 0) {
    *st = PICK(softmax)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "log_softmax") == 0) {
    *st = PICK(log_softmax)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "y"));
  } else if (strcmp(k, "rmsnorm") == 0) {
    *st = PICK(rmsnorm)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "weight"), SF(c, "eps"), TH(c, "y"));
  } else if (strcmp(k, "layernorm") == 0) {
    *st = PICK(layernorm)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "weight"), TH(c, "bias"), SF(c, "eps"),
                          TH(c, "y"));
  } else if (strcmp(k, "gemm") == 0) {
    *st = PICK(gemm)(ctx, F(c, "trans_a"), F(c, "trans_b"), D(c, "m"), D(c, "n"), D(c, "k"), SF(c, "alpha"),
                     TH(c, "a"), D(c, "lda"), TH(c, "b"), D(c, "ldb"), SF(c, "beta"), TH(c, "c"), D(c, "ldc"));
  } else if (strcmp(k, "attention") == 0) {
    *st = PICK(attention)(ctx, D(c, "batch"), D(c, "heads"), D(c, "kv_heads"), D(c, "seq_q"), D(c, "seq_kv"),
                          D(c, "head_dim"), TH(c, "q"), TH(c, "k"), TH(c, "v"), F(c, "causal"), SF(c, "scale"),
                          TH(c, "out"));
  } else if (strcmp(k, "linear") == 0) {
    *st = PICK(linear)(ctx, D(c, "rows"), D(c, "in_features"), D(c, "out_features"), TH(c, "x"), TH(c, "weight"),
                       TH(c, "bias"), (kb_activation)SI(c, "act"), TH(c, "y"));
  } else if (strcmp(k, "attention_ex") == 0) {
    /* kv_lengths stays int32 (the runner runs 16-bit variants only on
     * cases without it, see backend.c). */
    *st = PICK(attention_ex)(ctx, D(c, "batch"), D(c, "heads"), D(c, "kv_heads"), D(c, "seq_q"), D(c, "seq_kv"),
                             D(c, "head_dim"), F(c, "seq_major"), TH(c, "q"), TH(c, "k"), TH(c, "v"),
                             TI(c, "kv_lengths"), D(c, "mask_batch"), D(c, "mask_heads"), D(c, "mask_q"), TH(c, "mask"),
                             F(c, "causal"), F(c, "causal_bottom_right"), SF(c, "scale"), TH(c, "out"));
  } else if (strcmp(k, "gemm_batched") == 0) {
    *st = PICK(gemm_batched)(ctx, F(c, "trans_a"), F(c, "trans_b"), D(c, "batch"), D(c, "m"), D(c, "n"), D(c, "k"),
                             SF(c, "alpha"), TH(c, "a"), D(c, "lda"), D(c, "stride_a"), TH(c, "b"), D(c, "ldb"),
                             D(c, "stride_b"), SF(c, "beta"), TH(c, "c"), D(c, "ldc"), D(c, "stride_c"));
  } else if (strcmp(k, "glu") == 0) {
    *st = PICK(glu)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "gate"), D(c, "ld_gate"), TH(c, "up"), D(c, "ld_up"),
                    (kb_activation)SI(c, "act"), TH(c, "y"));
  } else if (strcmp(k, "add_rmsnorm") == 0) {
    *st = PICK(add_rmsnorm)(ctx, D(c, "rows"), D(c, "cols"), TH(c, "x"), TH(c, "residual"), TH(c, "weight"),
                            SF(c, "eps"), TH(c, "y"));
  } else {
    return -1;
  }
  return 0;
}
