/*
 * attention_decode_bench.c - decode attention (one query per sequence over a
 * long KV cache) with kb_attention_ex, against the machine's copy bandwidth
 * over the K and V bytes it reads, measured in the same run.
 *
 *   attention_decode_bench [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...] [--dtype f32|bf16|f16]
 *                          [--layers N|auto]
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
 *
 * --layers N keeps N caches of each shape, as a model keeps one per layer,
 * and call r reads cache r mod N; the copy it is compared with likewise
 * copies cache r mod N (K and V, one block per cache) into a buffer of its
 * own.  With N caches larger than the last-level cache together, every
 * call reads K and V from memory, as a decode step of a model does (each
 * layer's cache was last read a whole step earlier); with one cache (the
 * default) a cache that fits the L3 is read from there, and so is the copy.
 * auto: as many caches as make 256 MB at least. */
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

enum { kMaxLayers = 4096 };
static const double kAutoBytes = 256e6; /* --layers auto: caches of this many bytes at least */

static const char *kDefaultShapes = "32/32/1024/128,32/8/4096/128,8/1/8192/128,1/1/1024/128,1/1/8192/128,8/8/8192/128";

int main(int argc, char **argv) {
  int64_t threads = 2;
  int reps = 50;
  const char *shapes = kDefaultShapes;
  int dtype = 0; /* 0 float32, 1 bfloat16, 2 float16 */
  long long layers_arg = 1; /* 0: auto */
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
    } else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc) {
      i++;
      layers_arg = strcmp(argv[i], "auto") == 0 ? 0 : atoll(argv[i]);
      if (layers_arg < 0 || layers_arg > kMaxLayers || (layers_arg == 0 && strcmp(argv[i], "auto") != 0)) {
        fprintf(stderr, "--layers must be auto or 1 to %d\n", kMaxLayers);
        return 2;
      }
    } else {
      fprintf(stderr,
              "usage: %s [--threads N] [--reps N] [--shapes H/KVH/KEYS/D,...] [--dtype f32|bf16|f16] "
              "[--layers N|auto]\n",
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
  printf("| heads | kv_heads | keys | head_dim | layers | median us | best us | K+V MB | GB/s | copy GB/s | of copy |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  char *list = strdup(shapes);
  for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
    long long h, kvh, keys, d;
    if (sscanf(tok, "%lld/%lld/%lld/%lld", &h, &kvh, &keys, &d) != 4 || h < 1 || kvh < 1 || keys < 1 || d < 1) {
      fprintf(stderr, "bad shape %s (want H/KVH/KEYS/D)\n", tok);
      return 2;
    }
    size_t kv_floats = (size_t)(kvh * keys * d);
    size_t es = dtype == 0 ? sizeof(float) : sizeof(uint16_t);
    /* One layer's K and V, one block: K at 0, V at kv_bytes. */
    size_t kv_bytes = es * kv_floats, block = 2 * kv_bytes;
    long long layers = layers_arg;
    if (layers == 0) layers = (long long)(kAutoBytes / (double)block) + 1;
    if (layers > kMaxLayers) layers = kMaxLayers;
    float *q = malloc(sizeof(float) * (size_t)(h * d)), *out = malloc(sizeof(float) * (size_t)(h * d));
    float *k = malloc(sizeof(float) * kv_floats), *v = malloc(sizeof(float) * kv_floats);
    char **kv = calloc((size_t)layers, sizeof(char *)), **dst = calloc((size_t)layers, sizeof(char *));
    if (!q || !out || !k || !v || !kv || !dst) {
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
    uint16_t *q16 = (uint16_t *)(void *)q, *k16 = (uint16_t *)(void *)k, *v16 = (uint16_t *)(void *)v;
    if (dtype != 0) {
      for (size_t i = 0; i < kv_floats; i++) k16[i] = to16(dtype, k[i]);
      for (size_t i = 0; i < kv_floats; i++) v16[i] = to16(dtype, v[i]);
      for (long long i = 0; i < h * d; i++) q16[i] = to16(dtype, q[i]);
    }
    /* Every layer holds the same values at its own addresses; the copy
     * side writes each layer's block to a buffer of its own. */
    for (long long l = 0; l < layers; l++) {
      kv[l] = malloc(block);
      dst[l] = malloc(block);
      if (!kv[l] || !dst[l]) {
        fprintf(stderr, "out of memory (%lld layers of %.1f MB of K and V, and as many for the copy)\n", layers,
                (double)block / 1e6);
        return 1;
      }
      memcpy(kv[l], k, kv_bytes);
      memcpy(kv[l] + kv_bytes, v, kv_bytes);
      memset(dst[l], 1, block); /* touched (a memset of zeros may become calloc) */
    }
    int32_t len = (int32_t)keys;
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {
      long long l = (long long)(r + 3) % layers;
      const void *kl = kv[l], *vl = kv[l] + kv_bytes;
      double t0 = now();
      kb_status st = dtype == 0 ? kb_attention_ex(ctx, 1, h, kvh, 1, keys, d, false, q, kl, vl, &len, 0, 0, 0, NULL,
                                                  true, true, 0.0f, out)
                     : dtype == 1 ? kb_attention_ex_bf16(ctx, 1, h, kvh, 1, keys, d, false, q16, kl, vl, &len, 0, 0,
                                                         0, NULL, true, true, 0.0f, (uint16_t *)(void *)out)
                                  : kb_attention_ex_f16(ctx, 1, h, kvh, 1, keys, d, false, q16, kl, vl, &len, 0, 0, 0,
                                                        NULL, true, true, 0.0f, (uint16_t *)(void *)out);
      double dt = now() - t0;
      if (st != KB_STATUS_OK) {
        fprintf(stderr, "kb_attention_ex: %s\n", kb_context_last_error(ctx));
        return 1;
      }
      if (r >= 0) t[r] = dt;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    /* The copy: as many calls as the kernel's (10 at most with one layer,
     * where they all copy the same block), each of the next layer's block. */
    int copies = layers > 1 ? (reps > layers ? reps : (int)layers) : (reps < 10 ? reps : 10);
    double copy = 1e30;
    for (int r = 0; r < copies; r++) {
      long long l = (long long)r % layers;
      double c = copy_best_seconds(dst[l], kv[l], block, threads, 1);
      if (c < copy) copy = c;
    }
    double bytes = (double)block;
    printf("| %lld | %lld | %lld | %lld | %lld | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", h, kvh, keys, d, layers,
           1e6 * t[reps / 2], 1e6 * t[0], bytes / 1e6, bytes / t[0] / 1e9, bytes / copy / 1e9, copy / t[0]);
    fflush(stdout);
    for (long long l = 0; l < layers; l++) free(kv[l]), free(dst[l]);
    free(q), free(out), free(k), free(v), free(kv), free(dst), free(t);
  }
  free(list);
  kb_context_destroy(ctx);
  return 0;
}
