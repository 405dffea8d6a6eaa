/*
 * bench_attention.c - kb_attention / kb_attention_bf16 throughput.
 *
 * FLOPs counted: 4 * batch * heads * seq^2 * head_dim (q k^T and p v, two
 * multiply-adds each), non-causal, kv_heads = heads, seq_q = seq_kv.  The
 * comparison with PyTorch's scaled_dot_product_attention is
 * attention_sdpa.py (it needs torch and the Python binding).
 */
#include <stdio.h>

#include "bench.h"

struct attn_arg {
  const struct bench *b;
  int bf16;
  int64_t batch, heads, seq, dim;
  void *q, *k, *v, *out;
};

static int attn_call(void *p, char *err, size_t err_len) {
  struct attn_arg *a = (struct attn_arg *)p;
  kb_status st;
  if (a->bf16)
    st = kb_attention_bf16(a->b->ctx, a->batch, a->heads, a->heads, a->seq, a->seq, a->dim, (const uint16_t *)a->q,
                           (const uint16_t *)a->k, (const uint16_t *)a->v, false, 0.0f, (uint16_t *)a->out);
  else
    st = kb_attention(a->b->ctx, a->batch, a->heads, a->heads, a->seq, a->seq, a->dim, (const float *)a->q,
                      (const float *)a->k, (const float *)a->v, false, 0.0f, (float *)a->out);
  return st == KB_STATUS_OK ? 0 : kb_failed(a->b, a->bf16 ? "kb_attention_bf16" : "kb_attention", st, err, err_len);
}

void bench_attention(const struct bench *b) {
  static const int64_t settings[][4] = {{1, 16, 512, 64}, {4, 16, 1024, 64}, {1, 32, 2048, 128}, {1, 8, 4096, 128}};
  int n = b->quick ? 1 : (int)(sizeof settings / sizeof settings[0]);
  printf("\n### attention (non-causal, kv_heads = heads, seq_q = seq_kv; TFLOP/s of 4 b h s^2 d)\n\n");
  printf("| batch | heads | seq | head_dim | dtype | TFLOP/s | ms/call |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < n; i++) {
    const int64_t *s = settings[i];
    int64_t elems = s[0] * s[1] * s[2] * s[3];
    double flops = 4.0 * (double)s[0] * (double)s[1] * (double)s[2] * (double)s[2] * (double)s[3];
    for (int bf16 = 0; bf16 <= 1; bf16++) {
      char err[512] = "";
      int elem = bf16 ? 2 : 4;
      kb_buffer *q = random_buffer(b, elems, elem, 1, err, sizeof err);
      kb_buffer *k = q ? random_buffer(b, elems, elem, 2, err, sizeof err) : NULL;
      kb_buffer *v = k ? random_buffer(b, elems, elem, 3, err, sizeof err) : NULL;
      kb_buffer *o = v ? random_buffer(b, elems, elem, 4, err, sizeof err) : NULL;
      printf("| %lld | %lld | %lld | %lld | %s |", (long long)s[0], (long long)s[1], (long long)s[2],
             (long long)s[3], bf16 ? "bf16" : "f32");
      double t = -1;
      if (o != NULL) {
        struct attn_arg a = {b, bf16, s[0], s[1], s[2], s[3], kb_buffer_data(q), kb_buffer_data(k),
                             kb_buffer_data(v), kb_buffer_data(o)};
        t = time_per_call(b, attn_call, &a, err, sizeof err);
      }
      if (t > 0)
        printf(" %.2f | %.3f |\n", flops / t * 1e-12, t * 1e3);
      else
        printf(" n/a | %s |\n", err);
      fflush(stdout);
      kb_buffer_destroy(q);
      kb_buffer_destroy(k);
      kb_buffer_destroy(v);
      kb_buffer_destroy(o);
    }
  }
}
