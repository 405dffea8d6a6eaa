/* tokenizer_decode.c - from token ids back to bytes: kb_tokenizer_piece
 * (one token, llama.cpp's llama_token_to_piece) and kb_detokenize (a
 * sequence, llama.cpp's llama_detokenize for SPM vocabularies, which do not
 * clean up spaces).  Both measure first and write only when the result fits,
 * so a too-small buffer is never touched. */
#include <string.h>

#include "internal.h"
#include "tokenizer.h"

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return c - 'a' + 10; /* validated at creation: a hex digit */
}

int64_t kb__tok_piece(const kb_tokenizer *tok, int32_t id, bool special, bool lstrip, char *dst) {
  const char *s = tok->text + tok->start[id];
  int64_t len = tok->start[id + 1] - tok->start[id];
  switch (tok->types[id]) {
    case KB_TOKEN_BYTE: {
      char b = (char)(hex_value(s[3]) * 16 + hex_value(s[4]));
      if (lstrip && b == ' ') return 0;
      if (dst != NULL) dst[0] = b;
      return 1;
    }
    case KB_TOKEN_UNKNOWN:
    case KB_TOKEN_CONTROL:
      if (!special) return 0;
      /* with special: the piece as it is */
      /* fall through */
    case KB_TOKEN_USER_DEFINED:
      if (lstrip && len > 0 && s[0] == ' ') s++, len--;
      if (dst != NULL) memcpy(dst, s, (size_t)len);
      return len;
    case KB_TOKEN_NORMAL: {
      /* U+2581 (E2 96 81) stands for a space. */
      int64_t n = 0;
      for (int64_t i = 0; i < len;) {
        bool space = i + 2 < len && s[i] == (char)0xE2 && s[i + 1] == (char)0x96 && s[i + 2] == (char)0x81;
        char c = space ? ' ' : s[i];
        i += space ? 3 : 1;
        if (lstrip && n == 0 && c == ' ') {
          lstrip = false;
          continue;
        }
        lstrip = false;
        if (dst != NULL) dst[n] = c;
        n++;
      }
      return n;
    }
    default: /* undefined and unused tokens stand for nothing */
      return 0;
  }
}

kb_status kb_tokenizer_piece(const kb_tokenizer *tok, int64_t id, bool special, int64_t capacity, void *piece,
                             int64_t *bytes) {
  static const char *const FN = "kb_tokenizer_piece";
  kb__begin_thread();
  if (tok == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "tok must not be NULL");
  if (id < 0 || id >= tok->n_tokens)
    return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "id must be a token id in [0, %lld), got %lld",
                           (long long)tok->n_tokens, (long long)id);
  if (capacity < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "capacity must be >= 0, got %lld", (long long)capacity);
  if (piece == NULL && capacity > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "piece must not be NULL");
  if (bytes == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "bytes must not be NULL");
  int64_t n = kb__tok_piece(tok, (int32_t)id, special, false, NULL);
  if (n <= capacity) kb__tok_piece(tok, (int32_t)id, special, false, piece);
  *bytes = n;
  return KB_STATUS_OK;
}

kb_status kb_detokenize(const kb_tokenizer *tok, int64_t n_ids, const int32_t *ids, bool remove_special,
                        bool unparse_special, int64_t capacity, void *text, int64_t *bytes) {
  static const char *const FN = "kb_detokenize";
  kb__begin_thread();
  if (tok == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "tok must not be NULL");
  if (n_ids < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "n_ids must be >= 0, got %lld", (long long)n_ids);
  if (capacity < 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "capacity must be >= 0, got %lld", (long long)capacity);
  if (ids == NULL && n_ids > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "ids must not be NULL");
  if (text == NULL && capacity > 0) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "text must not be NULL");
  if (bytes == NULL) return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "bytes must not be NULL");
  for (int64_t i = 0; i < n_ids; i++) {
    if (ids[i] < 0 || ids[i] >= tok->n_tokens)
      return kb__fail_thread(KB_STATUS_INVALID_ARGUMENT, FN, "ids[%lld] = %d is not a token id in [0, %lld)", (long long)i,
                             ids[i], (long long)tok->n_tokens);
  }
  /* llama.cpp strips the space prefix from the first token, unless a BOS
   * that remove_special drops came first (then the space stays). */
  bool lstrip = tok->add_space_prefix;
  int64_t first = 0, end = n_ids;
  if (remove_special && tok->add_bos && end > 0 && ids[0] == tok->bos) {
    lstrip = false;
    first = 1;
  }
  if (remove_special && tok->add_eos && end > first && ids[end - 1] == tok->eos) end--;
  /* A piece is at most 2^31 bytes and there are at most 2^63 / 4 ids, so
   * the sum is checked against INT64_MAX term by term. */
  int64_t total = 0;
  for (int64_t i = first; i < end; i++) {
    int64_t n = kb__tok_piece(tok, ids[i], unparse_special, lstrip && i == first, NULL);
    if (n > INT64_MAX - total) return kb__fail_thread(KB_STATUS_OUT_OF_MEMORY, FN, "size of the text overflows");
    total += n;
  }
  if (total <= capacity && total > 0) { /* text may be NULL when total is 0 */
    char *dst = text;
    for (int64_t i = first; i < end; i++) dst += kb__tok_piece(tok, ids[i], unparse_special, lstrip && i == first, dst);
  }
  *bytes = total;
  return KB_STATUS_OK;
}
