/* Fuzz target: the tokenizer.  An input builds a vocabulary (a few fixed
 * tokens, optionally the 256 byte tokens, then up to 63 pieces made from a
 * small alphabet, so that pieces meet in merges), maybe corrupts one of its
 * arrays, and tokenizes the rest of the input as text.  Checked:
 *   - creation fails exactly when the vocabulary is invalid (a corruption, or
 *     two equal pieces), with a message naming an argument, and leaves the
 *     output handle alone;
 *   - tokenizing never fails when byte tokens or an unknown token exist, the
 *     count is within the documented bound, every id is in range, the
 *     count-only and too-small calls agree and write nothing;
 *   - decoding token by token gives what kb_detokenize gives;
 *   - the round trip: for valid UTF-8 text without U+2581 whose tokens are
 *     all normal or byte tokens, kb_detokenize gives the text back. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

#define SP "\xE2\x96\x81"
#define MAX_EXTRA 63
#define MAX_TOKENS (4 + 256 + MAX_EXTRA)

typedef struct in_t {
  const uint8_t *d;
  size_t n, pos;
} in_t;

static uint8_t rd8(in_t *in) { return in->pos < in->n ? in->d[in->pos++] : 0; }

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void fail(const char *fmt, ...) {
  fprintf(stderr, "\nFUZZ CHECK FAILED in tokenizer: ");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  abort();
}

typedef struct vocab {
  char pieces[MAX_TOKENS * 8 + 256 * 6 + 64];
  int32_t offsets[MAX_TOKENS + 1];
  float scores[MAX_TOKENS];
  int32_t types[MAX_TOKENS];
  int n;
} vocab;

static void add(vocab *v, const char *piece, size_t len, float score, int32_t type) {
  int32_t at = v->offsets[v->n];
  memcpy(v->pieces + at, piece, len);
  v->scores[v->n] = score;
  v->types[v->n] = type;
  v->offsets[++v->n] = at + (int32_t)len;
}

/* Pieces are made of these, so that merges find them in fuzzed text. */
static const char *const alphabet[8] = {"a", "b", "c", SP, "<", ">", "\xC3\xA9", "\xE4\xB8\xAD"};
static const int32_t extra_types[8] = {1, 1, 1, 1, 4, 3, 5, 0};

static int is_valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || i + len > n) return 0;
    unsigned cp = c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (len > 1 && (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
    i += len;
  }
  return 1;
}

static int has_sp(const unsigned char *s, size_t n) {
  for (size_t i = 0; i + 2 < n; i++)
    if (s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) return 1;
  return 0;
}

static int names_argument(const char *msg) {
  static const char *const names[] = {"n_tokens", "pieces", "offsets", "scores", "types", "bos_id", "eos_id",
                                      "unk_id", "add_bos", "add_eos", "n_offsets"};
  if (strncmp(msg, "kb_tokenizer_create: ", 21) != 0) return 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strstr(msg, names[i]) != NULL) return 1;
  return 0;
}

static void check_tokens(const kb_tokenizer *tok, const vocab *v, const uint8_t *text, size_t len, unsigned flags) {
  const bool add_special = flags & 8, parse_special = flags & 16;
  int64_t cap = 4 * (int64_t)len + 5, count = -1, again = -1;
  int32_t *ids = malloc((size_t)cap * sizeof *ids), *ids2 = malloc((size_t)cap * sizeof *ids2);
  if (ids == NULL || ids2 == NULL) abort();
  kb_status st = kb_tokenize(tok, (int64_t)len, text, add_special, parse_special, cap, ids, &count);
  /* Every byte has a token (byte tokens) or falls back to <unk> (id 0). */
  if (st != KB_STATUS_OK) fail("kb_tokenize failed: %s", kb_last_error());
  if (count < 0 || count > cap) fail("count %lld outside [0, %lld]", (long long)count, (long long)cap);
  for (int64_t i = 0; i < count; i++)
    if (ids[i] < 0 || ids[i] >= v->n) fail("id %d out of range", ids[i]);
  if (kb_tokenize(tok, (int64_t)len, text, add_special, parse_special, 0, NULL, &again) != KB_STATUS_OK || again != count)
    fail("count-only call disagrees: %lld vs %lld", (long long)again, (long long)count);
  if (count > 0) {
    for (int64_t i = 0; i < count; i++) ids2[i] = -5;
    if (kb_tokenize(tok, (int64_t)len, text, add_special, parse_special, count - 1, ids2, &again) != KB_STATUS_OK ||
        again != count)
      fail("too-small call disagrees");
    for (int64_t i = 0; i < count; i++)
      if (ids2[i] != -5) fail("too-small call wrote ids[%lld]", (long long)i);
    if (kb_tokenize(tok, (int64_t)len, text, add_special, parse_special, count, ids2, &again) != KB_STATUS_OK ||
        memcmp(ids, ids2, (size_t)count * sizeof *ids) != 0)
      fail("tokenizing twice differs");
  }
  /* Pieces one by one == kb_detokenize (one leading space less with the
   * space prefix: llama.cpp strips it from the first token). */
  int64_t total = -1;
  if (kb_detokenize(tok, count, ids, false, false, 0, NULL, &total) != KB_STATUS_OK) fail("detokenize count");
  char *whole = malloc((size_t)total + 1), *pieces = malloc((size_t)total + 64 * (size_t)count + 1);
  if (whole == NULL || pieces == NULL) abort();
  int64_t got = -1;
  if (kb_detokenize(tok, count, ids, false, false, total, whole, &got) != KB_STATUS_OK || got != total) fail("detokenize");
  int64_t at = 0, skip = 0;
  for (int64_t i = 0; i < count; i++) {
    int64_t n = -1;
    if (kb_tokenizer_piece(tok, ids[i], false, 64, pieces + at, &n) != KB_STATUS_OK || n > 64) fail("piece");
    if (i == 0 && (flags & 4) && n > 0 && pieces[0] == ' ') skip = 1; /* only the first piece's own space */
    at += n;
  }
  const char *p = pieces + skip;
  at -= skip;
  if (at != total || memcmp(p, whole, (size_t)total) != 0) fail("pieces and kb_detokenize differ");
  /* The round trip, where SentencePiece promises it. */
  int normal = !add_special;
  for (int64_t i = 0; i < count && normal; i++) normal = v->types[ids[i]] == 1 || v->types[ids[i]] == 6;
  if (normal && is_valid_utf8(text, len) && !has_sp(text, len) &&
      (total != (int64_t)len || memcmp(whole, text, len) != 0))
    fail("round trip: %lld bytes back for %zu", (long long)total, len);
  free(whole);
  free(pieces);
  free(ids);
  free(ids2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  in_t in = {data, size, 0};
  unsigned flags = rd8(&in);
  unsigned n_extra = rd8(&in) % (MAX_EXTRA + 1);
  unsigned corrupt = rd8(&in) % 10;
  vocab *v = calloc(1, sizeof *v);
  if (v == NULL) abort();
  add(v, "<unk>", 5, 0, 2);
  add(v, "<s>", 3, 0, 3);
  add(v, "</s>", 4, 0, 3);
  add(v, SP, 3, -1, 1);
  if (flags & 32) {
    for (int b = 0; b < 256; b++) {
      char name[8];
      snprintf(name, sizeof name, "<0x%02X>", b);
      add(v, name, 6, 0, 6);
    }
  }
  for (unsigned i = 0; i < n_extra; i++) {
    uint8_t shape = rd8(&in);
    char piece[64];
    size_t len = 0;
    for (unsigned k = 0; k < 1u + (shape & 3); k++) {
      const char *a = alphabet[rd8(&in) & 7];
      memcpy(piece + len, a, strlen(a));
      len += strlen(a);
    }
    add(v, piece, len, (float)(int8_t)rd8(&in) / 4, extra_types[(shape >> 2) & 7]);
  }
  int64_t n_offsets = v->n + 1, bos = 1, pieces_bytes = v->offsets[v->n];
  /* The token to corrupt: an extra one, or "▁" (never a byte token, whose
   * piece would stay valid under corruption 6). */
  int first_extra = (flags & 32) ? 4 + 256 : 4;
  uint8_t pick = rd8(&in);
  int k = v->n > first_extra ? first_extra + (int)(pick % (unsigned)(v->n - first_extra)) : 3;
  switch (corrupt) {
    case 1: v->offsets[k] = v->offsets[k + 1] + 1; break;
    case 2: v->scores[k] = NAN; break;
    case 3: v->types[k] = 7; break;
    case 4: bos = v->n; break;
    case 5: n_offsets = v->n; break;
    case 6: v->types[k] = 6; break; /* never a <0xNN> piece here: only extras and "▁" */
    case 7: v->pieces[v->offsets[k]] = (char)0xFF; break;
    default: break;
  }
  kb_tokenizer *const sentinel = (kb_tokenizer *)v;
  kb_tokenizer *tok = sentinel;
  kb_status st = kb_tokenizer_create(v->n, pieces_bytes, v->pieces, n_offsets, v->offsets, v->scores, v->types, bos, 2,
                                     0, flags & 1, flags & 2, flags & 4, &tok);
  if (st != KB_STATUS_OK) {
    if (tok != sentinel) fail("failed create wrote the handle");
    if (st != KB_STATUS_INVALID_ARGUMENT && st != KB_STATUS_SHAPE_MISMATCH) fail("create status %d", (int)st);
    if (!names_argument(kb_last_error())) fail("create message names no argument: %s", kb_last_error());
    /* Uncorrupted vocabularies fail only on a repeated piece. */
    if (corrupt == 0 || corrupt > 7) {
      if (strstr(kb_last_error(), "same piece") == NULL) fail("valid vocabulary refused: %s", kb_last_error());
    }
    free(v);
    return 0;
  }
  if (corrupt >= 1 && corrupt <= 7) fail("corruption %u accepted", corrupt);
  if (kb_tokenizer_n_tokens(tok) != v->n || kb_tokenizer_bos(tok) != 1 || kb_tokenizer_eos(tok) != 2) fail("accessors");
  check_tokens(tok, v, data + in.pos, size - in.pos, flags);
  kb_tokenizer_destroy(tok);
  free(v);
  return 0;
}
