/*
 * tokenizer.h - the vocabulary behind a kb_tokenizer, shared by the files
 * that build it (tokenizer.c), tokenize with it (tokenizer_spm.c) and decode
 * with it (tokenizer_decode.c).  Internal.
 */
#ifndef KB_TOKENIZER_H
#define KB_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelbridge.h"

/* tokenizer.ggml.token_type values (the GGUF convention). */
enum {
  KB_TOKEN_UNDEFINED = 0,
  KB_TOKEN_NORMAL = 1,
  KB_TOKEN_UNKNOWN = 2,
  KB_TOKEN_CONTROL = 3,
  KB_TOKEN_USER_DEFINED = 4,
  KB_TOKEN_UNUSED = 5,
  KB_TOKEN_BYTE = 6
};

/* Immutable once kb_tokenizer_create returns, so every reader may share it
 * without locks. */
struct kb_tokenizer {
  int64_t n_tokens;
  /* Every piece, concatenated; token i is text[start[i], start[i + 1]).
   * An empty piece i of the caller is stored as "[EMPTY_i]" (llama.cpp's
   * name for it), so no piece is empty. */
  char *text;
  int64_t *start; /* n_tokens + 1 */
  float *scores;
  uint8_t *types;
  int64_t max_piece; /* longest piece in bytes: longer text is no token */
  /* Open-addressing table from a piece to its id: slots[h] is an id or -1;
   * its size (mask + 1) is a power of two at least twice n_tokens. */
  int32_t *slots;
  uint64_t mask;
  /* The token byte b falls back to: <0xBB>, else the one-byte piece, else -1. */
  int32_t byte_token[256];
  /* Unknown, control and user-defined tokens, longest piece first (ties by
   * id): the tokens kb_tokenize finds in the text before splitting it. */
  int32_t *specials;
  int64_t n_specials;
  int32_t bos, eos, unk; /* -1: none */
  bool add_bos, add_eos, add_space_prefix;
};

/* Id of the token whose piece is s[0, n), or -1. */
int32_t kb__tok_find(const kb_tokenizer *tok, const char *s, int64_t n);

/* Bytes of token id's decoded piece (kb_tokenizer_piece's rules); with
 * lstrip one leading space is left out.  Writes them to dst unless NULL. */
int64_t kb__tok_piece(const kb_tokenizer *tok, int32_t id, bool special, bool lstrip, char *dst);

#endif /* KB_TOKENIZER_H */
