/*
 * attention_decode_bench.c - decode attention (one query per sequence over a
 * long KV cache) with kb_attention_ex, against the machine's copy bandwidth
 * over the K and V bytes it reads, measured in the same run.
 *
 *   attention_decode_bench [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...] [--dtype f32|bf16|f16]
 *
 * One row per shape: batch 1, H query heads, KVH key/value heads, KEYS
 * cached keys of head_dim D in the cache layout [1, KVH, capacity, D] with
 * capacity = KEYS (kv_lengths = KEYS, causal bottom-right as a decode step
 * calls it).  Prints the median and best time per call, the K/V bytes read,
 * GB/s at the best time, and that as a fraction of the best copy of the same
 * number of bytes on the same thread count.  --dtype bf16 / f16 times
 * kb_attention_ex_bf16 / _f16 on the same values rounded to 16 bits (K and
 * V are then half the bytes).  attention_sdpa_decode.py times
 * PyTorch's scaled_dot_product_attention on the same shapes (compare in
 * separate processes: each side's threads must not steal the other's cores).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchmarks/decoder/bench_copy.h"
#include "kernelbridge.h"

/* x rounded to nearest-even bfloat16 (dtype 1) or float16 (dtype 2) bits;
 * the values below are normal numbers in both formats, or zero. */
static uint16_t to16(int dtype, float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  if (dtype == 1) return (uint16_t)((b + 0x7fffu + (b >> 16 & 1u)) >> 16);
  uint32_t sign = b >> 16 & 0x8000u, m = b & 0x7fffffu;
  if ((b & 0x7fffffffu) == 0) return (uint16_t)sign;
  uint32_t h = sign | (uint32_t)((int)(b >> 23 & 0xffu) - 127 + 15) << 10 | m >> 13, rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)h;
}

static const char *kDefaultShapes = "32/32/1024/128,32/8/4096/128,8/1/8192/128,1/1/1024/128,1/1/8192/128,8/8/8192/128";

int main(int argc, char **argv) {
  int64_t threads = 2;
  int reps = 50;
  const char *shapes = kDefaultShapes;
  int dtype = 0; /* 0 float32, 1 bfloat16, 2 float16 */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--shapes") == 0 && i + 1 < argc) {
      shapes = argv[++i];
    } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
      i++;
      dtype = strcmp(argv[i], "bf16") == 0 ? 1 : strcmp(argv[i], "f16") == 0 ? 2 : strcmp(argv[i], "f32") == 0 ? 0 : -1;
      if (dtype < 0) {
        fprintf(stderr, "--dtype must be f32, bf16 or f16\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...] [--dtype f32|bf16|f16]\n",
              argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  kb_context *ctx = NULL;
  if (kb_context_create(KB_BACKEND_CPU, threads, &ctx) != KB_STATUS_OK) {
    fprintf(stderr, "context: %s\n", kb_last_error());
    return 1;
  }
  static const char *const names[3] = {"float32", "bfloat16", "float16"};
  printf("kernelbridge %s, ISA %s, %lld threads, %s\n", kb_version_string(), kb_cpu_isa(), (long long)threads,
         names[dtype]);
  printf("| heads | kv_heads | keys | head_dim | median us | best us | K+V MB | GB/s | copy GB/s | of copy |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  char *list = strdup(shapes);
  for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
    long long h, kvh, keys, d;
    if (sscanf(tok, "%lld/%lld/%lld/%lld", &h, &kvh, &keys, &d) != 4 || h < 1 || kvh < 1 || keys < 1 || d < 1) {
      fprintf(stderr, "bad shape %s (want H/KVH/KEYS/D)\n", tok);
      return 2;
    }
    size_t kv_floats = (size_t)(kvh * keys * d);
    float *q = malloc(sizeof(float) * (size_t)(h * d)), *out = malloc(sizeof(float) * (size_t)(h * d));
    float *k = malloc(sizeof(float) * kv_floats), *v = malloc(sizeof(float) * kv_floats);
    char *dst = malloc(2 * sizeof(float) * kv_floats);
    if (!q || !out || !k || !v || !dst) {
      fprintf(stderr, "out of memory\n");
      return 1;
    }
    uint32_t s = 12345;
    for (size_t i = 0; i < kv_floats; i++) {
      s = s * 1664525u + 1013904223u;
      k[i] = (float)((int32_t)(s >> 8) % 2000) / 1000.0f;
      v[i] = (float)((int32_t)(s >> 12) % 2000) / 1000.0f;
    }
    for (long long i = 0; i < h * d; i++) q[i] = (float)(i % 7) / 7.0f;
    /* 16-bit: the same values rounded, stored over the float32 arrays' first halves. */
    size_t es = dtype == 0 ? sizeof(float) : sizeof(uint16_t);
    uint16_t *q16 = (uint16_t *)(void *)q, *k16 = (uint16_t *)(void *)k, *v16 = (uint16_t *)(void *)v;
    if (dtype != 0) {
      for (size_t i = 0; i < kv_floats; i++) k16[i] = to16(dtype, k[i]);
      for (size_t i = 0; i < kv_floats; i++) v16[i] = to16(dtype, v[i]);
      for (long long i = 0; i < h * d; i++) q16[i] = to16(dtype, q[i]);
    }
    /* The K and V read as one block of the same bytes, copied. */
    memcpy(dst, k, es * kv_floats);
    memcpy(dst + es * kv_floats, v, es * kv_floats);
    char *src = malloc(2 * es * kv_floats);
    memcpy(src, dst, 2 * es * kv_floats);
    int32_t len = (int32_t)keys;
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {
      double t0 = now();
      kb_status st = dtype == 0 ? kb_attention_ex(ctx, 1, h, kvh, 1, keys, d, false, q, k, v, &len, 0, 0, 0, NULL, true,
                                                  true, 0.0f, out)
                     : dtype == 1 ? kb_attention_ex_bf16(ctx, 1, h, kvh, 1, keys, d, false, q16, k16, v16, &len, 0, 0,
                                                         0, NULL, true, true, 0.0f, (uint16_t *)(void *)out)
                                  : kb_attention_ex_f16(ctx, 1, h, kvh, 1, keys, d, false, q16, k16, v16, &len, 0, 0, 0,
                                                        NULL, true, true, 0.0f, (uint16_t *)(void *)out);
      double dt = now() - t0;
      if (st != KB_STATUS_OK) {
        fprintf(stderr, "kb_attention_ex: %s\n", kb_context_last_error(ctx));
        return 1;
      }
      if (r >= 0) t[r] = dt;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double bytes = 2.0 * (double)es * (double)kv_floats;
    double copy = copy_best_seconds(dst, src, (size_t)bytes, threads, reps < 10 ? reps : 10);
    printf("| %lld | %lld | %lld | %lld | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", h, kvh, keys, d,
           1e6 * t[reps / 2], 1e6 * t[0], bytes / 1e6, bytes / t[0] / 1e9, bytes / copy / 1e9, copy / t[0]);
    fflush(stdout);
    free(q), free(out), free(k), free(v), free(dst), free(src), free(t);
  }
  free(list);
  kb_context_destroy(ctx);
  return 0;
}
