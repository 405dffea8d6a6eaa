/* tokenizer.c - kb_tokenizer_create: validates a GGUF-style vocabulary and
 * builds the tables kb_tokenize and the decoders read (tokenizer.h); the
 * destructor and accessors.  Every argument is checked before the first
 * allocation, so a bad vocabulary costs nothing; only a repeated piece is
 * found while the lookup table is filled (and everything is freed then). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tokenizer.h"

static const char *const FN = "kb_tokenizer_create";

/* Length of the valid UTF-8 sequence at s[0, n), or 0 when there is none
 * (overlong forms, surrogates and values past U+10FFFF are invalid). */
static int utf8_sequence(const unsigned char *s, int64_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  int len;
  unsigned min;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (n < len) return 0;
  unsigned cp = c & (0x7Fu >> len);
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

static bool valid_utf8(const unsigned char *s, int64_t n) {
  for (int64_t i = 0; i < n;) {
    int len = utf8_sequence(s + i, n - i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

static int hex_digit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* True when s[0, n) is "<0xHH>", the piece of a byte token. */
static bool is_byte_piece(const unsigned char *s, int64_t n) {
  return n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && hex_digit(s[3]) >= 0 && hex_digit(s[4]) >= 0 &&
         s[5] == '>';
}

/* FNV-1a: a good spread for short strings at one multiply per byte. */
static uint64_t hash_bytes(const char *s, int64_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (int64_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
  return h;
}

int32_t kb__tok_find(const kb_tokenizer *tok, const char *s, int64_t n) {
  if (n <= 0 || n > tok->max_piece) return -1;
  for (uint64_t h = hash_bytes(s, n) & tok->mask;; h = (h + 1) & tok->mask) {
    int32_t id = tok->slots[h];
    if (id < 0) return -1;
    int64_t len = tok->start[id + 1] - tok->start[id];
    if (len == n && memcmp(tok->text + tok->start[id], s, (size_t)n) == 0) return id;
  }
}

/* Length of "[EMPTY_<i>]", the text llama.cpp gives the empty piece of token i. */
static int64_t empty_name(int64_t i, char *dst, size_t cap) {
  return snprintf(dst, cap, "[EMPTY_%lld]", (long long)i);
}

/* The checks that need no memory: sizes, pointers, offsets, scores, types,
 * the pieces' UTF-8 and the special ids. */
static kb_status check_vocabulary(int64_t n_tokens, int64_t pieces_bytes, const unsigned char *pieces,
                                  int64_t n_offsets, const int32_t *offsets, const float *scores,
                                  const int32_t *types, const int64_t ids[3], bool add_bos, bool add_eos,
                                  kb_tokenizer **out) {
  if (out == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "out must not be NULL");
  if (n_tokens <= 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "n_tokens must be > 0, got %lld", (long long)n_tokens);
  if (n_tokens > INT32_MAX)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "n_tokens must be <= %d (ids are int32), got %lld", INT32_MAX,
                           (long long)n_tokens);
  if (pieces_bytes < 0)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "pieces_bytes must be >= 0, got %lld", (long long)pieces_bytes);
  if (n_offsets < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "n_offsets must be >= 0, got %lld", (long long)n_offsets);
  if (n_offsets != n_tokens + 1)
    return kb__fail_thread(KB_STATUS_SHAPE_MISMATCH, FN, "n_offsets must be n_tokens + 1 = %lld, got %lld",
                           (long long)(n_tokens + 1), (long long)n_offsets);
  if (pieces == NULL && pieces_bytes > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "pieces must not be NULL");
  if (offsets == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "offsets must not be NULL");
  if (scores == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "scores must not be NULL");
  if (types == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "types must not be NULL");
  if (offsets[0] < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "offsets[0] must be >= 0, got %d", offsets[0]);
  if (pieces == NULL) pieces = (const unsigned char *)""; /* all pieces empty: no arithmetic on NULL */
  for (int64_t i = 0; i < n_tokens; i++) {
    if (offsets[i + 1] < offsets[i])
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "offsets must not decrease: offsets[%lld] = %d < offsets[%lld] = %d",
                             (long long)(i + 1), offsets[i + 1], (long long)i, offsets[i]);
  }
  if (offsets[n_tokens] > pieces_bytes)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "offsets[%lld] = %d is beyond the end of pieces (pieces_bytes = %lld)",
                           (long long)n_tokens, offsets[n_tokens], (long long)pieces_bytes);
  for (int64_t i = 0; i < n_tokens; i++) {
    if (isnan(scores[i])) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "scores[%lld] is NaN", (long long)i);
    if (types[i] < KB_TOKEN_UNDEFINED || types[i] > KB_TOKEN_BYTE)
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "types[%lld] = %d is not a token type (0 .. 6)", (long long)i,
                             types[i]);
    const unsigned char *p = pieces + offsets[i];
    int64_t n = offsets[i + 1] - offsets[i];
    if (!valid_utf8(p, n))
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "pieces: the piece of token %lld is not valid UTF-8",
                             (long long)i);
    if (types[i] == KB_TOKEN_BYTE && !is_byte_piece(p, n))
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "pieces: token %lld has type 6 (byte) but its piece is not <0xNN>",
                             (long long)i);
  }
  static const char *const names[3] = {"bos_id", "eos_id", "unk_id"};
  for (int k = 0; k < 3; k++) {
    if (ids[k] < -1 || ids[k] >= n_tokens)
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "%s must be -1 (none) or a token id in [0, %lld), got %lld",
                             names[k], (long long)n_tokens, (long long)ids[k]);
  }
  if (add_bos && ids[0] < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "add_bos needs a bos_id, got -1");
  if (add_eos && ids[1] < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "add_eos needs an eos_id, got -1");
  return KB_STATUS_OK;
}

void kb_tokenizer_destroy(kb_tokenizer *tok) {
  if (tok == NULL) return;
  free(tok->text);
  free(tok->start);
  free(tok->scores);
  free(tok->types);
  free(tok->slots);
  free(tok->specials);
  free(tok);
}

/* Allocates n items of `size` bytes, or NULL when that overflows or fails. */
static void *alloc_array(int64_t n, size_t size) {
  if (n < 0 || (uint64_t)n > SIZE_MAX / size || (uint64_t)n * size > (uint64_t)INT64_MAX) return NULL;
  return malloc(n == 0 ? 1 : (size_t)n * size);
}

/* Copies the pieces (empty ones renamed), scores and types. */
static bool copy_vocabulary(kb_tokenizer *t, const unsigned char *pieces, const int32_t *offsets, const float *scores,
                            const int32_t *types) {
  int64_t n = t->n_tokens;
  char name[32];
  /* Text size: the pieces plus the names of the empty ones; each term is
   * at most 2^31 and there are at most 2^31 of them, so no overflow. */
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = offsets[i + 1] - offsets[i];
    total += len > 0 ? len : empty_name(i, name, sizeof name);
  }
  t->text = alloc_array(total, 1);
  t->start = alloc_array(n + 1, sizeof *t->start);
  t->scores = alloc_array(n, sizeof *t->scores);
  t->types = alloc_array(n, sizeof *t->types);
  if (t->text == NULL || t->start == NULL || t->scores == NULL || t->types == NULL) return false;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = offsets[i + 1] - offsets[i];
    t->start[i] = at;
    if (len > 0) {
      memcpy(t->text + at, pieces + offsets[i], (size_t)len);
    } else {
      len = empty_name(i, name, sizeof name);
      memcpy(t->text + at, name, (size_t)len);
    }
    at += len;
    if (len > t->max_piece) t->max_piece = len;
    t->scores[i] = scores[i];
    t->types[i] = (uint8_t)types[i];
  }
  t->start[n] = at;
  return true;
}

/* Fills the lookup table; fails with INVALID_ARGUMENT when two tokens have
 * the same piece (llama.cpp refuses such a vocabulary too). */
static kb_status build_table(kb_tokenizer *t) {
  uint64_t size = 16;
  while (size < 2 * (uint64_t)t->n_tokens) size *= 2;
  t->slots = alloc_array((int64_t)size, sizeof *t->slots);
  if (t->slots == NULL) return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "out of memory for the lookup table");
  memset(t->slots, 0xFF, (size_t)size * sizeof *t->slots);
  t->mask = size - 1;
  for (int64_t i = 0; i < t->n_tokens; i++) {
    const char *s = t->text + t->start[i];
    int64_t n = t->start[i + 1] - t->start[i];
    int32_t same = kb__tok_find(t, s, n);
    if (same >= 0)
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "pieces: tokens %d and %lld have the same piece", same,
                             (long long)i);
    uint64_t h = hash_bytes(s, n) & t->mask;
    while (t->slots[h] >= 0) h = (h + 1) & t->mask;
    t->slots[h] = (int32_t)i;
  }
  return KB_STATUS_OK;
}

/* byte_token: "<0xHH>" with upper-case digits, else the one-byte piece. */
static void find_byte_tokens(kb_tokenizer *t) {
  static const char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; b++) {
    char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    char one = (char)b;
    int32_t id = kb__tok_find(t, name, 6);
    t->byte_token[b] = id >= 0 ? id : kb__tok_find(t, &one, 1);
  }
}

/* True when special token a goes after b: shorter piece, or same length and
 * larger id.  The order in which kb_tokenize looks for them. */
static bool goes_after(const kb_tokenizer *t, int32_t a, int32_t b) {
  int64_t la = t->start[a + 1] - t->start[a], lb = t->start[b + 1] - t->start[b];
  return la < lb || (la == lb && a > b);
}

/* Restores the heap property of ids[root, n) (the "largest", the one that
 * goes last, on top). */
static void sift_down(const kb_tokenizer *t, int32_t *ids, int64_t root, int64_t n) {
  for (;;) {
    int64_t best = root;
    for (int64_t c = 2 * root + 1; c <= 2 * root + 2 && c < n; c++)
      if (goes_after(t, ids[c], ids[best])) best = c;
    if (best == root) return;
    int32_t tmp = ids[root];
    ids[root] = ids[best];
    ids[best] = tmp;
    root = best;
  }
}

/* Heap sort: in place, O(n log n), no comparator context needed (qsort's
 * would need a global). */
static void sort_specials(const kb_tokenizer *t, int32_t *ids, int64_t n) {
  for (int64_t i = n / 2; i-- > 0;) sift_down(t, ids, i, n);
  for (int64_t end = n; end-- > 1;) {
    int32_t tmp = ids[0];
    ids[0] = ids[end];
    ids[end] = tmp;
    sift_down(t, ids, 0, end);
  }
}

static bool find_specials(kb_tokenizer *t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t->n_tokens; i++) {
    uint8_t ty = t->types[i];
    n += ty == KB_TOKEN_UNKNOWN || ty == KB_TOKEN_CONTROL || ty == KB_TOKEN_USER_DEFINED;
  }
  t->specials = alloc_array(n, sizeof *t->specials);
  if (t->specials == NULL) return false;
  t->n_specials = 0;
  for (int64_t i = 0; i < t->n_tokens; i++) {
    uint8_t ty = t->types[i];
    if (ty == KB_TOKEN_UNKNOWN || ty == KB_TOKEN_CONTROL || ty == KB_TOKEN_USER_DEFINED) t->specials[t->n_specials++] = (int32_t)i;
  }
  sort_specials(t, t->specials, t->n_specials);
  return true;
}

kb_status kb_tokenizer_create(int64_t n_tokens, int64_t pieces_bytes, const void *pieces, int64_t n_offsets,
                              const int32_t *offsets, const float *scores, const int32_t *types, int64_t bos_id,
                              int64_t eos_id, int64_t unk_id, bool add_bos, bool add_eos, bool add_space_prefix,
                              kb_tokenizer **out) {
  kb__begin_thread();
  const int64_t ids[3] = {bos_id, eos_id, unk_id};
  kb_status st = check_vocabulary(n_tokens, pieces_bytes, pieces, n_offsets, offsets, scores, types, ids, add_bos,
                                  add_eos, out);
  if (st != KB_STATUS_OK) return st;
  if (pieces == NULL) pieces = ""; /* pieces_bytes is 0 (checked) */
  kb_tokenizer *t = calloc(1, sizeof *t);
  if (t == NULL) return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "out of memory");
  t->n_tokens = n_tokens;
  t->bos = (int32_t)bos_id;
  t->eos = (int32_t)eos_id;
  t->unk = (int32_t)unk_id;
  t->add_bos = add_bos;
  t->add_eos = add_eos;
  t->add_space_prefix = add_space_prefix;
  if (!copy_vocabulary(t, pieces, offsets, scores, types)) {
    kb_tokenizer_destroy(t);
    return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "out of memory for %lld tokens", (long long)n_tokens);
  }
  st = build_table(t);
  if (st == KB_STATUS_OK && !find_specials(t)) st = kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "out of memory");
  if (st != KB_STATUS_OK) {
    kb_tokenizer_destroy(t);
    return st;
  }
  find_byte_tokens(t);
  *out = t;
  return KB_STATUS_OK;
}

int64_t kb_tokenizer_n_tokens(const kb_tokenizer *tok) { return tok == NULL ? 0 : tok->n_tokens; }

int64_t kb_tokenizer_bos(const kb_tokenizer *tok) { return tok == NULL ? -1 : tok->bos; }

int64_t kb_tokenizer_eos(const kb_tokenizer *tok) { return tok == NULL ? -1 : tok->eos; }
