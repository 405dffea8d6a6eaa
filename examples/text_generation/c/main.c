/* main.c - text generation from a GGUF model, in C: the driver the other
 * languages' examples are compared with (same tokens, tokens per second).
 *
 *   generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]
 *            [--temperature T] [--top-k K | --top-p P] [--seed S] [--threads N]
 *            [--print-ids] [--print-prompt-ids] [--logits-out FILE]
 *
 * Prints the generated text as it comes (or, with --print-ids, the
 * generated ids on one line), then prefill and decode tokens per second on
 * stderr.  Sampling: temperature 0 is greedy (kb_argmax); otherwise
 * kb_topk_sample (--top-k), kb_topp_sample (--top-p) or kb_sample, with
 * seed + step as the seed of step step, so every language draws the same
 * tokens.  Generation stops at the vocabulary's end-of-sequence token or
 * after --max-tokens.  --print-prompt-ids prints the prompt's ids (BOS
 * first, the file's tokenization) on a line of their own first.  --logits-out writes the prompt's logits, float32
 * [prompt tokens, vocab], for the reference tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"

struct options {
  const char *model, *prompt, *prompt_ids, *logits_out;
  long long max_tokens, top_k, threads;
  double temperature, top_p;
  unsigned long long seed;
  int print_ids, print_prompt_ids;
};

static void usage(void) {
  fprintf(stderr,
          "usage: generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] [--temperature T]\n"
          "                [--top-k K | --top-p P] [--seed S] [--threads N] [--print-ids] [--print-prompt-ids]\n"
          "                [--logits-out FILE]\n");
}

static int parse_number(const char *flag, const char *text, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v >= lo && v <= hi)) {
    fprintf(stderr, "error: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, text);
    return 0;
  }
  *out = v;
  return 1;
}

static int parse_args(int argc, char **argv, struct options *o) {
  *o = (struct options){NULL, NULL, NULL, NULL, 32, 0, 0, 0.0, 1.0, 0, 0, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--print-ids") == 0) {
      o->print_ids = 1;
      continue;
    }
    if (strcmp(a, "--print-prompt-ids") == 0) {
      o->print_prompt_ids = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "error: %s needs a value\n", a);
      return 0;
    }
    const char *v = argv[++i];
    double d;
    if (strcmp(a, "--model") == 0) {
      o->model = v;
    } else if (strcmp(a, "--prompt") == 0) {
      o->prompt = v;
    } else if (strcmp(a, "--prompt-ids") == 0) {
      o->prompt_ids = v;
    } else if (strcmp(a, "--logits-out") == 0) {
      o->logits_out = v;
    } else if (strcmp(a, "--max-tokens") == 0) {
      if (!parse_number(a, v, 0, 1e9, &d)) return 0;
      o->max_tokens = (long long)d;
    } else if (strcmp(a, "--top-k") == 0) {
      if (!parse_number(a, v, 0, 1e9, &d)) return 0;
      o->top_k = (long long)d;
    } else if (strcmp(a, "--threads") == 0) {
      if (!parse_number(a, v, 0, 4096, &d)) return 0;
      o->threads = (long long)d;
    } else if (strcmp(a, "--temperature") == 0) {
      if (!parse_number(a, v, 0, 1e6, &o->temperature)) return 0;
    } else if (strcmp(a, "--top-p") == 0) {
      if (!parse_number(a, v, 0, 1, &o->top_p)) return 0;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_number(a, v, 0, 18446744073709551615.0, &d)) return 0;
      o->seed = strtoull(v, NULL, 10);
    } else {
      fprintf(stderr, "error: unknown option %s\n", a);
      return 0;
    }
  }
  if (o->model == NULL || (o->prompt == NULL) == (o->prompt_ids == NULL)) {
    fprintf(stderr, "error: --model and one of --prompt / --prompt-ids are required\n");
    return 0;
  }
  if (o->top_k > 0 && o->top_p < 1.0) {
    fprintf(stderr, "error: --top-k and --top-p cannot be combined (the library samples with one of them)\n");
    return 0;
  }
  return 1;
}

/* The file's vocabulary as a tokenizer (tokenizer.ggml.*). */
static kb_status make_tokenizer(kb_context *ctx, const kb_gguf *g, kb_tokenizer **tok) {
  int64_t at, n, bytes, model_at;
  kb_status st = kb_gguf_find_key(ctx, g, "tokenizer.ggml.model", &model_at);
  if (st != KB_STATUS_OK) return st;
  if (model_at >= 0) {
    char kind[32] = "";
    if ((st = kb_gguf_string_bytes(ctx, g, model_at, &bytes)) != KB_STATUS_OK) return st;
    if (bytes < (int64_t)sizeof kind && kb_gguf_get_string(ctx, g, model_at, bytes, kind) == KB_STATUS_OK &&
        strcmp(kind, "llama") != 0) {
      fprintf(stderr, "error: tokenizer '%s' is not supported (only 'llama')\n", kind);
      return KB_STATUS_UNSUPPORTED;
    }
  }
  if ((st = kb_gguf_find_key(ctx, g, "tokenizer.ggml.tokens", &at)) != KB_STATUS_OK) return st;
  if (at < 0) {
    fprintf(stderr, "error: the model has no vocabulary (tokenizer.ggml.tokens)\n");
    return KB_STATUS_INVALID_ARGUMENT;
  }
  if ((st = kb_gguf_array_length(ctx, g, at, &n)) != KB_STATUS_OK ||
      (st = kb_gguf_string_array_bytes(ctx, g, at, &bytes)) != KB_STATUS_OK)
    return st;
  char *pieces = malloc((size_t)bytes + 1);
  int32_t *offsets = malloc(sizeof(int32_t) * (size_t)(n + 1)), *types = malloc(sizeof(int32_t) * (size_t)(n + 1));
  /* Absent scores are zeros and absent types normal (1), as llama.cpp takes them. */
  float *scores = calloc((size_t)n + 1, sizeof(float));
  for (int64_t i = 0; types != NULL && i < n; i++) types[i] = 1;
  int64_t bos = -1, eos = -1, unk = -1, add_bos = 1, add_eos = 0, add_space = 1;
  st = pieces && offsets && types && scores ? KB_STATUS_OK : KB_STATUS_OUT_OF_MEMORY;
  if (st == KB_STATUS_OK) st = kb_gguf_get_string_array_data(ctx, g, at, bytes, pieces);
  if (st == KB_STATUS_OK) st = kb_gguf_get_string_array_offsets(ctx, g, at, n + 1, offsets);
  const char *keys[] = {"tokenizer.ggml.scores",          "tokenizer.ggml.token_type",       "tokenizer.ggml.bos_token_id",
                        "tokenizer.ggml.eos_token_id",    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_bos_token",
                        "tokenizer.ggml.add_eos_token",   "tokenizer.ggml.add_space_prefix"};
  int64_t *ints[] = {NULL, NULL, &bos, &eos, &unk, &add_bos, &add_eos, &add_space};
  for (int k = 0; k < 8 && st == KB_STATUS_OK; k++) {
    int64_t key;
    if ((st = kb_gguf_find_key(ctx, g, keys[k], &key)) != KB_STATUS_OK || key < 0) continue;
    if (k == 0)
      st = kb_gguf_get_f32(ctx, g, key, n, scores);
    else if (k == 1)
      st = kb_gguf_get_i32(ctx, g, key, n, types);
    else
      st = kb_gguf_get_int64(ctx, g, key, ints[k]);
  }
  if (st == KB_STATUS_OK)
    st = kb_tokenizer_create(n, bytes, pieces, n + 1, offsets, scores, types, bos, eos, unk, add_bos != 0,
                             add_eos != 0, add_space != 0, tok);
  if (st != KB_STATUS_OK) fprintf(stderr, "error: vocabulary: %s%s\n", kb_context_last_error(ctx), kb_last_error());
  free(pieces);
  free(offsets);
  free(types);
  free(scores);
  return st;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Comma-separated ids into ids (at most cap); the count, or -1. */
static long long parse_ids(const char *text, int32_t *ids, long long cap) {
  long long n = 0;
  const char *p = text;
  while (*p != '\0') {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno != 0 || v < 0 || v > INT32_MAX || (*end != ',' && *end != '\0') || n >= cap) {
      fprintf(stderr, "error: --prompt-ids expects comma-separated token ids, got '%s'\n", text);
      return -1;
    }
    ids[n++] = (int32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  struct options o;
  if (!parse_args(argc, argv, &o)) {
    usage();
    return 2;
  }
  int rc = 1;
  kb_context *ctx = NULL;
  kb_gguf *g = NULL;
  kb_tokenizer *tok = NULL;
  tg_model m;
  memset(&m, 0, sizeof m);
  int32_t *ids = NULL;
  float *logits = NULL;
  char err[512];
  if (kb_context_create(KB_BACKEND_CPU, o.threads, &ctx) != KB_STATUS_OK) {
    fprintf(stderr, "error: %s\n", kb_last_error());
    return 1;
  }
  if (kb_gguf_open(ctx, o.model, &g) != KB_STATUS_OK) {
    fprintf(stderr, "error: %s\n", kb_context_last_error(ctx));
    goto done;
  }
  if (make_tokenizer(ctx, g, &tok) != KB_STATUS_OK) goto done;
  /* The prompt: its ids, with BOS as the vocabulary says. */
  long long cap = o.prompt != NULL ? 4 * (long long)strlen(o.prompt) + 8 : (long long)strlen(o.prompt_ids) + 1;
  ids = malloc(sizeof(int32_t) * (size_t)(cap + o.max_tokens));
  if (ids == NULL) goto done;
  long long n_prompt;
  if (o.prompt != NULL) {
    int64_t count;
    if (kb_tokenize(tok, (int64_t)strlen(o.prompt), o.prompt, true, false, cap, ids, &count) != KB_STATUS_OK) {
      fprintf(stderr, "error: %s\n", kb_last_error());
      goto done;
    }
    n_prompt = count;
  } else if ((n_prompt = parse_ids(o.prompt_ids, ids, cap)) < 0) {
    goto done;
  }
  if (n_prompt == 0) {
    fprintf(stderr, "error: the prompt has no tokens\n");
    goto done;
  }
  if (o.print_prompt_ids) {
    for (long long i = 0; i < n_prompt; i++) printf("%s%d", i ? "," : "", (int)ids[i]);
    printf("\n");
  }
  if (tg_model_load(ctx, g, n_prompt, &m, err, sizeof err) != KB_STATUS_OK) {
    fprintf(stderr, "error: %s\n", err);
    goto done;
  }
  if (n_prompt + o.max_tokens > m.context) {
    fprintf(stderr, "error: %lld prompt tokens + %lld new ones exceed the model's context of %lld\n", n_prompt,
            o.max_tokens, (long long)m.context);
    goto done;
  }
  logits = malloc(sizeof(float) * (size_t)(m.vocab * (o.logits_out != NULL ? n_prompt : 1)));
  if (logits == NULL) goto done;
  double t0 = now();
  if (tg_model_forward(ctx, &m, n_prompt, ids, o.logits_out != NULL, logits, err, sizeof err) != KB_STATUS_OK) {
    fprintf(stderr, "error: %s\n", err);
    goto done;
  }
  double t_prefill = now() - t0;
  if (o.logits_out != NULL) {
    FILE *f = fopen(o.logits_out, "wb");
    if (f == NULL || fwrite(logits, sizeof(float) * (size_t)m.vocab, (size_t)n_prompt, f) != (size_t)n_prompt) {
      fprintf(stderr, "error: cannot write %s\n", o.logits_out);
      if (f != NULL) fclose(f);
      goto done;
    }
    fclose(f);
  }
  const float *last = logits + (o.logits_out != NULL ? (n_prompt - 1) * m.vocab : 0);
  int64_t eos = kb_tokenizer_eos(tok);
  long long produced = 0;
  double t_decode = 0.0;
  char piece[256];
  for (long long step = 0; step < o.max_tokens; step++) {
    int32_t next;
    kb_status st;
    uint64_t seed = (uint64_t)o.seed + (uint64_t)step;
    if (o.temperature == 0.0)
      st = kb_argmax(ctx, 1, m.vocab, last, &next);
    else if (o.top_k > 0)
      st = kb_topk_sample(ctx, 1, m.vocab, last, o.top_k, (float)o.temperature, seed, &next);
    else if (o.top_p < 1.0)
      st = kb_topp_sample(ctx, 1, m.vocab, last, (float)o.top_p, (float)o.temperature, seed, &next);
    else
      st = kb_sample(ctx, 1, m.vocab, last, (float)o.temperature, seed, &next);
    if (st != KB_STATUS_OK) {
      fprintf(stderr, "error: sampling: %s\n", kb_context_last_error(ctx));
      goto done;
    }
    ids[n_prompt + produced++] = next;
    if (next == eos) break;
    if (!o.print_ids) {
      /* A piece longer than the buffer: kb_tokenizer_piece writes nothing
       * and says how long it is; print it from a buffer of that size. */
      int64_t bytes;
      if (kb_tokenizer_piece(tok, next, false, sizeof piece, piece, &bytes) == KB_STATUS_OK) {
        if (bytes <= (int64_t)sizeof piece) {
          fwrite(piece, 1, (size_t)bytes, stdout);
        } else {
          char *big = malloc((size_t)bytes);
          if (big == NULL || kb_tokenizer_piece(tok, next, false, bytes, big, &bytes) != KB_STATUS_OK) {
            free(big);
            fprintf(stderr, "error: no memory for a piece of %lld bytes\n", (long long)bytes);
            goto done;
          }
          fwrite(big, 1, (size_t)bytes, stdout);
          free(big);
        }
        fflush(stdout);
      }
    }
    if (step + 1 == o.max_tokens) break;
    double t1 = now();
    if (tg_model_forward(ctx, &m, 1, &next, 0, logits, err, sizeof err) != KB_STATUS_OK) {
      fprintf(stderr, "error: %s\n", err);
      goto done;
    }
    t_decode += now() - t1;
    last = logits;
  }
  if (o.print_ids) {
    for (long long i = 0; i < produced; i++) printf("%s%d", i ? "," : "", (int)ids[n_prompt + i]);
  }
  printf("\n");
  fprintf(stderr, "prefill: %lld tokens, %.1f tokens/s; decode: %lld tokens, %.1f tokens/s\n", n_prompt,
          (double)n_prompt / t_prefill, produced > 1 ? produced - 1 : 0,
          produced > 1 && t_decode > 0 ? (double)(produced - 1) / t_decode : 0.0);
  rc = 0;
done:
  free(ids);
  free(logits);
  tg_model_free(&m);
  kb_tokenizer_destroy(tok);
  kb_gguf_destroy(g);
  kb_context_destroy(ctx);
  return rc;
}
