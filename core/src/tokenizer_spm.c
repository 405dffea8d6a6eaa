/* tokenizer_spm.c - kb_tokenize: llama.cpp's SPM tokenization (the
 * algorithm is described in docs/tokenizer.md).  In short: special tokens
 * are cut out of the text first; each remaining fragment gets its space
 * prefix, has its spaces replaced by U+2581 and is split into UTF-8
 * characters, and adjacent symbols whose concatenation is a token are merged,
 * best score first, until no pair is a token; symbols that are no token
 * become byte tokens.
 *
 * Memory is O(text): the fragments, the escaped fragment, its symbols, the
 * queue of candidate pairs (at most three per symbol: one per initial pair,
 * two per merge) and the output.  Time is O(n log n) for the merges plus the
 * search for special tokens (text length times their number, as llama.cpp). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tokenizer.h"

static const char *const FN = "kb_tokenize";

/* A growable array of ids (the output). */
struct ids {
  int32_t *v;
  int64_t n, cap;
};

static bool push_id(struct ids *out, int32_t id) {
  if (out->n == out->cap) {
    int64_t cap = out->cap < 64 ? 64 : out->cap * 2;
    if ((uint64_t)cap > SIZE_MAX / sizeof *out->v) return false;
    int32_t *v = realloc(out->v, (size_t)cap * sizeof *v);
    if (v == NULL) return false;
    out->v = v;
    out->cap = cap;
  }
  out->v[out->n++] = id;
  return true;
}

/* A piece of the input: raw text [start, start + len) or a special token. */
struct fragment {
  int64_t start, len;
  int32_t token; /* -1: raw text */
};

/* A symbol of the fragment being merged: text [start, start + len) of the
 * escaped fragment; len 0 once merged into its left neighbour.  prev / next
 * link the live symbols (-1 at the ends). */
struct symbol {
  int64_t start, len, prev, next;
};

/* A candidate merge of symbols left and right, whose concatenation (size
 * bytes) is a token of score `score`.  It is stale once either symbol changed
 * (their lengths no longer add up to size). */
struct pair {
  float score;
  int64_t left, right, size;
};

/* Scratch of one kb_tokenize call. */
struct work {
  const kb_tokenizer *tok;
  char *esc; /* the escaped fragment */
  struct symbol *sym;
  int64_t sym_cap;
  struct pair *heap; /* max-heap: best score first, then leftmost */
  int64_t heap_n, heap_cap;
  struct ids out;
};

static bool pair_before(const struct pair *a, const struct pair *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static bool heap_push(struct work *w, struct pair p) {
  if (w->heap_n == w->heap_cap) {
    int64_t cap = w->heap_cap < 64 ? 64 : w->heap_cap * 2;
    if ((uint64_t)cap > SIZE_MAX / sizeof *w->heap) return false;
    struct pair *h = realloc(w->heap, (size_t)cap * sizeof *h);
    if (h == NULL) return false;
    w->heap = h;
    w->heap_cap = cap;
  }
  int64_t i = w->heap_n++;
  while (i > 0) {
    int64_t parent = (i - 1) / 2;
    if (!pair_before(&p, &w->heap[parent])) break;
    w->heap[i] = w->heap[parent];
    i = parent;
  }
  w->heap[i] = p;
  return true;
}

static struct pair heap_pop(struct work *w) {
  struct pair top = w->heap[0];
  struct pair last = w->heap[--w->heap_n];
  int64_t i = 0, n = w->heap_n;
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && pair_before(&w->heap[c + 1], &w->heap[c])) c++;
    if (!pair_before(&w->heap[c], &last)) break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  if (n > 0) w->heap[i] = last;
  return top;
}

/* Queues the merge of symbols left and right when their concatenation is a
 * token.  False only when out of memory. */
static bool try_pair(struct work *w, int64_t left, int64_t right) {
  if (left < 0 || right < 0) return true;
  int64_t size = w->sym[left].len + w->sym[right].len;
  int32_t id = kb__tok_find(w->tok, w->esc + w->sym[left].start, size);
  if (id < 0) return true;
  struct pair p = {w->tok->scores[id], left, right, size};
  return heap_push(w, p);
}

/* Bytes of the UTF-8 sequence a lead byte starts (continuation and invalid
 * bytes count as one), as llama.cpp splits text. */
static int64_t lead_length(unsigned char c) {
  static const int8_t by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return by_high_nibble[c >> 4];
}

/* Emits the tokens of symbol s: its token, or one byte token per byte. */
static kb_status emit_symbol(struct work *w, const struct symbol *s) {
  const kb_tokenizer *tok = w->tok;
  int32_t id = kb__tok_find(tok, w->esc + s->start, s->len);
  if (id >= 0) return push_id(&w->out, id) ? KB_STATUS_OK : KB_STATUS_OUT_OF_MEMORY;
  for (int64_t i = 0; i < s->len; i++) {
    unsigned char b = (unsigned char)w->esc[s->start + i];
    int32_t t = tok->byte_token[b] >= 0 ? tok->byte_token[b] : tok->unk;
    if (t < 0)
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN,
                             "text byte 0x%02X has no token: the vocabulary has neither <0x%02X> nor an unknown token", b, b);
    if (!push_id(&w->out, t)) return KB_STATUS_OUT_OF_MEMORY;
  }
  return KB_STATUS_OK;
}

/* Tokenizes the escaped fragment esc[0, n) (n > 0) onto w->out. */
static kb_status merge_fragment(struct work *w, int64_t n) {
  int64_t count = 0;
  for (int64_t at = 0; at < n; count++) {
    int64_t len = lead_length((unsigned char)w->esc[at]);
    at += len < n - at ? len : n - at;
  }
  if (count > w->sym_cap) {
    if ((uint64_t)count > SIZE_MAX / sizeof *w->sym) return KB_STATUS_OUT_OF_MEMORY;
    struct symbol *s = realloc(w->sym, (size_t)count * sizeof *s);
    if (s == NULL) return KB_STATUS_OUT_OF_MEMORY;
    w->sym = s;
    w->sym_cap = count;
  }
  int64_t at = 0;
  for (int64_t i = 0; i < count; i++) {
    int64_t len = lead_length((unsigned char)w->esc[at]);
    if (len > n - at) len = n - at;
    struct symbol s = {at, len, i - 1, i + 1 < count ? i + 1 : -1};
    w->sym[i] = s;
    at += len;
  }
  w->heap_n = 0;
  for (int64_t i = 1; i < count; i++)
    if (!try_pair(w, i - 1, i)) return KB_STATUS_OUT_OF_MEMORY;
  while (w->heap_n > 0) {
    struct pair p = heap_pop(w);
    struct symbol *l = &w->sym[p.left], *r = &w->sym[p.right];
    if (l->len == 0 || r->len == 0 || l->len + r->len != p.size) continue; /* stale */
    l->len += r->len;
    r->len = 0;
    l->next = r->next;
    if (r->next >= 0) w->sym[r->next].prev = p.left;
    if (!try_pair(w, l->prev, p.left) || !try_pair(w, p.left, l->next)) return KB_STATUS_OUT_OF_MEMORY;
  }
  /* A merged symbol is always a token; only single characters can miss. */
  for (int64_t i = 0; i >= 0; i = w->sym[i].next) {
    kb_status st = emit_symbol(w, &w->sym[i]);
    if (st != KB_STATUS_OK) return st;
  }
  return KB_STATUS_OK;
}

/* Writes the fragment text[f] to w->esc with its space prefix and every
 * space as U+2581 (3 bytes); returns its length. */
static int64_t escape(struct work *w, const char *text, const struct fragment *f, bool prefix) {
  int64_t n = 0;
  for (int64_t i = -(int64_t)prefix; i < f->len; i++) {
    char c = i < 0 ? ' ' : text[f->start + i];
    if (c == ' ') {
      w->esc[n++] = (char)0xE2;
      w->esc[n++] = (char)0x96;
      w->esc[n++] = (char)0x81;
    } else {
      w->esc[n++] = c;
    }
  }
  return n;
}

/* First occurrence of needle[0, m) in hay[0, n), or -1. */
static int64_t find_bytes(const char *hay, int64_t n, const char *needle, int64_t m) {
  for (int64_t i = 0; i + m <= n; i++) {
    const char *p = memchr(hay + i, needle[0], (size_t)(n - m - i + 1));
    if (p == NULL) return -1;
    i = p - hay;
    if (memcmp(p, needle, (size_t)m) == 0) return i;
  }
  return -1;
}

/* Cuts every occurrence of the special tokens out of the raw fragments, the
 * longest token first, each left to right (llama.cpp's order, which decides
 * between overlapping matches).  frags / spare hold 2 * text_bytes + 1
 * fragments; returns the number of fragments in *frags. */
static int64_t cut_specials(const kb_tokenizer *tok, const char *text, bool parse_special, struct fragment **frags,
                            struct fragment **spare, int64_t n) {
  for (int64_t k = 0; k < tok->n_specials; k++) {
    int32_t id = tok->specials[k];
    uint8_t ty = tok->types[id];
    if (!parse_special && ty != KB_TOKEN_USER_DEFINED) continue;
    const char *piece = tok->text + tok->start[id];
    int64_t m = tok->start[id + 1] - tok->start[id];
    struct fragment *in = *frags, *out = *spare;
    int64_t n_out = 0;
    bool found = false;
    for (int64_t f = 0; f < n; f++) {
      if (in[f].token >= 0) {
        out[n_out++] = in[f];
        continue;
      }
      int64_t at = in[f].start, end = in[f].start + in[f].len;
      for (;;) {
        int64_t hit = find_bytes(text + at, end - at, piece, m);
        if (hit < 0) break;
        found = true;
        if (hit > 0) out[n_out++] = (struct fragment){at, hit, -1};
        out[n_out++] = (struct fragment){at + hit, m, id};
        at += hit + m;
      }
      if (at < end) out[n_out++] = (struct fragment){at, end - at, -1};
    }
    if (found) {
      *frags = out;
      *spare = in;
      n = n_out;
    }
  }
  return n;
}

/* The body of kb_tokenize after validation: the tokens, in w->out. */
static kb_status tokenize(struct work *w, const char *text, int64_t text_bytes, bool add_special, bool parse_special) {
  const kb_tokenizer *tok = w->tok;
  if (add_special && tok->add_bos && !push_id(&w->out, tok->bos)) return KB_STATUS_OUT_OF_MEMORY;
  if (text_bytes > 0) {
    /* Fragments: one, unless some special token may be cut out. */
    struct fragment one = {0, text_bytes, -1}, *frags = &one, *spare = NULL;
    struct fragment *a = NULL, *b = NULL;
    int64_t n = 1;
    if (tok->n_specials > 0) {
      int64_t cap = 2 * text_bytes + 1;
      if ((uint64_t)cap > SIZE_MAX / sizeof *a) return KB_STATUS_OUT_OF_MEMORY;
      a = malloc((size_t)cap * sizeof *a);
      b = malloc((size_t)cap * sizeof *b);
      if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return KB_STATUS_OUT_OF_MEMORY;
      }
      a[0] = one;
      frags = a;
      spare = b;
      n = cut_specials(tok, text, parse_special, &frags, &spare, 1);
    }
    kb_status st = KB_STATUS_OK;
    bool after_special = true; /* the first fragment gets the prefix too */
    for (int64_t f = 0; f < n && st == KB_STATUS_OK; f++) {
      if (frags[f].token >= 0) {
        if (!push_id(&w->out, frags[f].token)) st = KB_STATUS_OUT_OF_MEMORY;
        after_special = true;
        continue;
      }
      int64_t len = escape(w, text, &frags[f], tok->add_space_prefix && after_special);
      st = merge_fragment(w, len);
      after_special = false;
    }
    free(a);
    free(b);
    if (st != KB_STATUS_OK) return st;
  }
  if (add_special && tok->add_eos && !push_id(&w->out, tok->eos)) return KB_STATUS_OUT_OF_MEMORY;
  return KB_STATUS_OK;
}

kb_status kb_tokenize(const kb_tokenizer *tok, int64_t text_bytes, const void *text, bool add_special,
                      bool parse_special, int64_t capacity, int32_t *ids, int64_t *count) {
  kb__begin_thread();
  if (tok == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "tok must not be NULL");
  if (text_bytes < 0)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "text_bytes must be >= 0, got %lld", (long long)text_bytes);
  if (capacity < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "capacity must be >= 0, got %lld", (long long)capacity);
  if (text == NULL && text_bytes > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "text must not be NULL");
  if (ids == NULL && capacity > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "ids must not be NULL");
  if (count == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "count must not be NULL");
  /* The escaped text takes up to 3 bytes per byte plus the prefix; the
   * fragments (2 * text_bytes + 1) are checked where they are made. */
  if (text_bytes > (INT64_MAX - 3) / 4 || (uint64_t)text_bytes > (SIZE_MAX - 3) / 3)
    return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "size of the text overflows");
  struct work w = {tok, NULL, NULL, 0, NULL, 0, 0, {NULL, 0, 0}};
  kb_status st = KB_STATUS_OK;
  if (text_bytes > 0) {
    w.esc = malloc((size_t)(3 * text_bytes + 3));
    if (w.esc == NULL) st = KB_STATUS_OUT_OF_MEMORY;
  }
  if (st == KB_STATUS_OK) st = tokenize(&w, text, text_bytes, add_special, parse_special);
  if (st == KB_STATUS_OK) {
    *count = w.out.n;
    if (w.out.n <= capacity && w.out.n > 0) memcpy(ids, w.out.v, (size_t)w.out.n * sizeof *ids);
  } else if (st == KB_STATUS_OUT_OF_MEMORY) {
    st = kb__fail_thread(st, FN, "out of memory tokenizing %lld bytes", (long long)text_bytes);
  }
  free(w.esc);
  free(w.sym);
  free(w.heap);
  free(w.out.v);
  return st;
}
