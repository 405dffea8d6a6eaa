/* tokenizer_test.c - kb_tokenizer on a small hand-built vocabulary whose
 * token ids can be worked out by hand: score order and ties, byte fallback,
 * spaces and the space prefix, BOS / EOS, special tokens in the text,
 * decoding, the capacity protocol and every validation error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb_test.h"
#include "kernelbridge.h"

#define SP "\xE2\x96\x81" /* U+2581, the piece's space */

/* The vocabulary: ids 0-2 special, 3-258 the byte tokens <0x00>..<0xFF>,
 * then the normal and user-defined tokens below. */
enum { UNK = 0, BOS = 1, EOS = 2, BYTE0 = 3 };
enum {
  T_SPACE = 259, /* "▁" */
  T_A,           /* "a" */
  T_B,           /* "b" */
  T_C,           /* "c" */
  T_AB,          /* "ab", score -3 */
  T_BC,          /* "bc", score -3: ties with "ab" */
  T_SPACE_A,     /* "▁a" */
  T_SPACE2,      /* "▁▁" */
  T_X,           /* "x" */
  T_Y,           /* "y" */
  T_Z,           /* "z" */
  T_XY,          /* "xy", score -6 */
  T_YZ,          /* "yz", score -5: beats "xy" */
  T_UD,          /* "<ud>", user-defined */
  T_UNUSED,      /* "zz", unused */
  N_TOKENS
};

struct vocab {
  char pieces[4096];
  int32_t offsets[N_TOKENS + 1];
  float scores[N_TOKENS];
  int32_t types[N_TOKENS];
  int n;
};

static void add(struct vocab *v, const char *piece, float score, int type) {
  int at = v->offsets[v->n];
  memcpy(v->pieces + at, piece, strlen(piece));
  v->scores[v->n] = score;
  v->types[v->n] = type;
  v->offsets[++v->n] = at + (int32_t)strlen(piece);
}

static void make_vocab(struct vocab *v) {
  memset(v, 0, sizeof *v);
  add(v, "<unk>", 0, 2);
  add(v, "<s>", 0, 3);
  add(v, "</s>", 0, 3);
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    add(v, name, 0, 6);
  }
  add(v, SP, -1, 1);
  add(v, "a", -2, 1);
  add(v, "b", -2, 1);
  add(v, "c", -2, 1);
  add(v, "ab", -3, 1);
  add(v, "bc", -3, 1);
  add(v, SP "a", -4, 1);
  add(v, SP SP, -1.5f, 1);
  add(v, "x", -2, 1);
  add(v, "y", -2, 1);
  add(v, "z", -2, 1);
  add(v, "xy", -6, 1);
  add(v, "yz", -5, 1);
  add(v, "<ud>", 0, 4);
  add(v, "zz", 0, 5);
  CHECK(v->n == N_TOKENS);
}

static kb_tokenizer *make(bool add_bos, bool add_space_prefix) {
  struct vocab v;
  make_vocab(&v);
  kb_tokenizer *tok = NULL;
  CHECK_OK(kb_tokenizer_create(v.n, v.offsets[v.n], v.pieces, v.n + 1, v.offsets, v.scores, v.types, BOS, EOS, UNK,
                               add_bos, false, add_space_prefix, &tok));
  return tok;
}

/* Tokenizes text (NUL-terminated) and compares with want[0, n). */
static void expect(const kb_tokenizer *tok, const char *text, bool parse_special, const int32_t *want, int64_t n) {
  int32_t got[64];
  int64_t count = -1;
  CHECK_OK(kb_tokenize(tok, (int64_t)strlen(text), text, true, parse_special, 64, got, &count));
  CHECK(count == n);
  for (int64_t i = 0; i < n && i < count; i++) {
    if (got[i] != want[i]) fprintf(stderr, "  text \"%s\": token %lld is %d, want %d\n", text, (long long)i, got[i], want[i]);
    CHECK(got[i] == want[i]);
  }
}

#define EXPECT(tok, text, special, ...)                                    \
  do {                                                                     \
    const int32_t want_[] = {__VA_ARGS__};                                 \
    expect(tok, text, special, want_, (int64_t)(sizeof want_ / sizeof want_[0])); \
  } while (0)

static void test_merges_by_score_then_leftmost(void) {
  kb_tokenizer *tok = make(false, false);
  EXPECT(tok, "abc", false, T_AB, T_C); /* "ab" and "bc" tie: the leftmost pair merges */
  EXPECT(tok, "bc", false, T_BC);
  EXPECT(tok, "xyz", false, T_X, T_YZ); /* "yz" scores higher than "xy" */
  EXPECT(tok, "xy", false, T_XY);
  EXPECT(tok, "abab", false, T_AB, T_AB);
  kb_tokenizer_destroy(tok);
}

static void test_spaces_and_prefix(void) {
  kb_tokenizer *tok = make(false, true);
  EXPECT(tok, "a b", false, T_SPACE_A, T_SPACE, T_B);
  /* " a " -> "▁▁a▁": "▁▁" (-1.5) merges before "▁a" (-4), which then cannot. */
  EXPECT(tok, " a ", false, T_SPACE2, T_A, T_SPACE);
  EXPECT(tok, "a", false, T_SPACE_A);
  kb_tokenizer_destroy(tok);
  tok = make(false, false);
  EXPECT(tok, "a  b", false, T_A, T_SPACE2, T_B);
  EXPECT(tok, "a", false, T_A);
  EXPECT(tok, " ", false, T_SPACE);
  kb_tokenizer_destroy(tok);
}

static void test_byte_fallback(void) {
  kb_tokenizer *tok = make(false, false);
  EXPECT(tok, "\xF0\x9F\x98\x80", false, BYTE0 + 0xF0, BYTE0 + 0x9F, BYTE0 + 0x98, BYTE0 + 0x80); /* U+1F600 */
  EXPECT(tok, "a\xE4\xB8\xAD", false, T_A, BYTE0 + 0xE4, BYTE0 + 0xB8, BYTE0 + 0xAD);       /* U+4E2D */
  EXPECT(tok, "\n", false, BYTE0 + 0x0A);
  /* Not UTF-8: split by lead bytes as llama.cpp does, then bytes. */
  EXPECT(tok, "a\xFF", false, T_A, BYTE0 + 0xFF);
  EXPECT(tok, "\xFF" "a", false, BYTE0 + 0xFF, BYTE0 + 'a'); /* 0xFF leads a 4-byte "character", cut at the end */
  /* "\xE4ab" is one 3-byte "character" and no token: all three are bytes. */
  EXPECT(tok, "\xE4" "ab", false, BYTE0 + 0xE4, BYTE0 + 'a', BYTE0 + 'b');
  kb_tokenizer_destroy(tok);
}

static void test_bos_eos_and_empty_text(void) {
  kb_tokenizer *tok = make(true, true);
  int64_t count = -1;
  int32_t ids[4] = {-7, -7, -7, -7};
  CHECK_OK(kb_tokenize(tok, 0, NULL, true, false, 4, ids, &count));
  CHECK(count == 1 && ids[0] == BOS); /* no space prefix for empty text */
  CHECK_OK(kb_tokenize(tok, 0, NULL, false, false, 4, ids, &count));
  CHECK(count == 0);
  EXPECT(tok, "a", false, BOS, T_SPACE_A);
  CHECK(kb_tokenizer_bos(tok) == BOS && kb_tokenizer_eos(tok) == EOS && kb_tokenizer_n_tokens(tok) == N_TOKENS);
  kb_tokenizer_destroy(tok);

  struct vocab v;
  make_vocab(&v);
  CHECK_OK(kb_tokenizer_create(v.n, v.offsets[v.n], v.pieces, v.n + 1, v.offsets, v.scores, v.types, BOS, EOS, UNK,
                               true, true, false, &tok));
  EXPECT(tok, "ab", false, BOS, T_AB, EOS);
  CHECK_OK(kb_tokenize(tok, 2, "ab", false, false, 4, ids, &count));
  CHECK(count == 1 && ids[0] == T_AB);
  kb_tokenizer_destroy(tok);
}

static void test_special_tokens_in_text(void) {
  kb_tokenizer *tok = make(false, true);
  /* User-defined tokens are always cut out; the text after one gets the
   * space prefix again. */
  EXPECT(tok, "x<ud>y", false, T_SPACE, T_X, T_UD, T_SPACE, T_Y);
  EXPECT(tok, "<ud><ud>", false, T_UD, T_UD);
  /* Control tokens only with parse_special. */
  EXPECT(tok, "<s>a", true, BOS, T_SPACE_A);
  EXPECT(tok, "<s>a", false, T_SPACE, BYTE0 + '<', BYTE0 + 's', BYTE0 + '>', T_A);
  EXPECT(tok, "a</s>", true, T_SPACE_A, EOS);
  kb_tokenizer_destroy(tok);
}

static void test_capacity_protocol(void) {
  kb_tokenizer *tok = make(true, true);
  int32_t ids[2] = {-7, -7};
  int64_t count = -1;
  CHECK_OK(kb_tokenize(tok, 3, "a b", true, false, 2, ids, &count));
  CHECK(count == 4);                  /* BOS ▁a ▁ b */
  CHECK(ids[0] == -7 && ids[1] == -7); /* too small: untouched */
  CHECK_OK(kb_tokenize(tok, 3, "a b", true, false, 0, NULL, &count));
  CHECK(count == 4);
  char piece[2] = {'#', '#'};
  int64_t bytes = -1;
  CHECK_OK(kb_tokenizer_piece(tok, T_SPACE_A, false, 1, piece, &bytes));
  CHECK(bytes == 2 && piece[0] == '#');
  CHECK_OK(kb_tokenizer_piece(tok, T_SPACE_A, false, 2, piece, &bytes));
  CHECK(bytes == 2 && memcmp(piece, " a", 2) == 0);
  kb_tokenizer_destroy(tok);
}

static void test_pieces(void) {
  kb_tokenizer *tok = make(true, true);
  char buf[16];
  int64_t n = -1;
  CHECK_OK(kb_tokenizer_piece(tok, BYTE0 + 'A', false, 16, buf, &n));
  CHECK(n == 1 && buf[0] == 'A');
  CHECK_OK(kb_tokenizer_piece(tok, BYTE0 + 0xF0, false, 16, buf, &n));
  CHECK(n == 1 && (unsigned char)buf[0] == 0xF0);
  CHECK_OK(kb_tokenizer_piece(tok, BOS, false, 16, buf, &n));
  CHECK(n == 0);
  CHECK_OK(kb_tokenizer_piece(tok, BOS, true, 16, buf, &n));
  CHECK(n == 3 && memcmp(buf, "<s>", 3) == 0);
  CHECK_OK(kb_tokenizer_piece(tok, UNK, false, 16, buf, &n));
  CHECK(n == 0);
  CHECK_OK(kb_tokenizer_piece(tok, T_UD, false, 16, buf, &n));
  CHECK(n == 4 && memcmp(buf, "<ud>", 4) == 0);
  CHECK_OK(kb_tokenizer_piece(tok, T_UNUSED, true, 16, buf, &n));
  CHECK(n == 0);
  CHECK_OK(kb_tokenizer_piece(tok, T_SPACE2, false, 16, buf, &n));
  CHECK(n == 2 && memcmp(buf, "  ", 2) == 0);
  kb_tokenizer_destroy(tok);
}

/* decode(tokenize(t)): t without BOS; " " + t with a BOS first (llama.cpp
 * strips the prefix space from the first token only, and a BOS is first). */
static void round_trip(const kb_tokenizer *tok, const char *t) {
  int32_t ids[256];
  int64_t count = -1, n = -1;
  char out[512];
  size_t len = strlen(t);
  CHECK_OK(kb_tokenize(tok, (int64_t)len, t, false, false, 256, ids, &count));
  CHECK_OK(kb_detokenize(tok, count, ids, false, false, sizeof out, out, &n));
  CHECK(n == (int64_t)len && memcmp(out, t, len) == 0);
  CHECK_OK(kb_tokenize(tok, (int64_t)len, t, true, false, 256, ids, &count));
  CHECK(count >= 1 && ids[0] == BOS);
  for (int remove = 0; remove < 2; remove++) {
    CHECK_OK(kb_detokenize(tok, count, ids, remove, false, sizeof out, out, &n));
    CHECK(n == (int64_t)len + 1 && out[0] == ' ' && memcmp(out + 1, t, len) == 0);
  }
}

static void test_round_trips(void) {
  kb_tokenizer *tok = make(true, true);
  const char *texts[] = {"a b", " a ", "abc  xyz", "\xF0\x9F\x98\x80 \xE4\xB8\xAD", "\xFF\xFE", "   ", "a\n\tb"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) round_trip(tok, texts[i]);
  /* A control token shows only with unparse_special. */
  const int32_t ids[] = {BOS, T_SPACE_A, EOS};
  char out[32];
  int64_t n = -1;
  CHECK_OK(kb_detokenize(tok, 3, ids, false, true, sizeof out, out, &n));
  CHECK(n == 9 && memcmp(out, "<s> a</s>", 9) == 0);
  CHECK_OK(kb_detokenize(tok, 3, ids, false, false, 1, out, &n));
  CHECK(n == 2); /* " a" does not fit in 1 byte: nothing written */
  kb_tokenizer_destroy(tok);
}

static void test_empty_piece_and_no_byte_tokens(void) {
  /* Three tokens: "a", "" (named "[EMPTY_1]" as in llama.cpp), "<unk>". */
  const char pieces[] = "a<unk>";
  const int32_t offsets[] = {0, 1, 1, 6};
  const float scores[] = {0, 0, 0};
  const int32_t types[] = {1, 1, 2};
  kb_tokenizer *tok = NULL;
  CHECK_OK(kb_tokenizer_create(3, 6, pieces, 4, offsets, scores, types, -1, -1, 2, false, false, false, &tok));
  char buf[16];
  int64_t n = -1;
  CHECK_OK(kb_tokenizer_piece(tok, 1, false, 16, buf, &n));
  CHECK(n == 9 && memcmp(buf, "[EMPTY_1]", 9) == 0);
  EXPECT(tok, "ab", false, 0, 2); /* no byte tokens: "b" is unknown */
  kb_tokenizer_destroy(tok);
  CHECK_OK(kb_tokenizer_create(3, 6, pieces, 4, offsets, scores, types, -1, -1, -1, false, false, false, &tok));
  int32_t ids[4];
  kb_tokenizer *all_empty = NULL; /* no bytes at all: pieces may be NULL */
  const int32_t zero[] = {0, 0};
  CHECK_OK(kb_tokenizer_create(1, 0, NULL, 2, zero, scores, types, -1, -1, 0, false, false, true, &all_empty));
  CHECK_OK(kb_tokenizer_piece(all_empty, 0, false, 16, buf, &n));
  CHECK(n == 9 && memcmp(buf, "[EMPTY_0]", 9) == 0);
  EXPECT(all_empty, "a", false, 0, 0, 0, 0); /* "▁a": 4 bytes, each unknown */
  kb_tokenizer_destroy(all_empty);
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, 2, "ab", false, false, 4, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "0x62");
  kb_tokenizer_destroy(tok);
}

/* Creation fails with `status` and a message containing `name`. */
static void expect_create_error(const struct vocab *v, int64_t n_offsets, int64_t bos, bool add_bos, kb_status status,
                                const char *name) {
  kb_tokenizer *tok = (kb_tokenizer *)&tok; /* must stay as it is */
  kb_tokenizer *const before = tok;
  CHECK_STATUS(status, kb_tokenizer_create(v->n, v->offsets[v->n], v->pieces, n_offsets, v->offsets, v->scores,
                                           v->types, bos, EOS, UNK, add_bos, false, true, &tok));
  CHECK(tok == before);
  CHECK_STR_CONTAINS(kb_last_error(), name);
}

static void test_create_errors(void) {
  struct vocab v;
  make_vocab(&v);
  kb_tokenizer *tok = NULL;
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT,
               kb_tokenizer_create(0, 0, NULL, 1, v.offsets, v.scores, v.types, -1, -1, -1, false, false, true, &tok));
  CHECK_STR_CONTAINS(kb_last_error(), "n_tokens");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_create(v.n, v.offsets[v.n], v.pieces, v.n + 1, v.offsets, v.scores,
                                                               v.types, BOS, EOS, UNK, true, false, true, NULL));
  CHECK_STR_CONTAINS(kb_last_error(), "out");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_create(v.n, v.offsets[v.n], NULL, v.n + 1, v.offsets, v.scores,
                                                               v.types, BOS, EOS, UNK, true, false, true, &tok));
  CHECK_STR_CONTAINS(kb_last_error(), "pieces must not be NULL");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_create(v.n, -1, v.pieces, v.n + 1, v.offsets, v.scores, v.types,
                                                               BOS, EOS, UNK, true, false, true, &tok));
  CHECK_STR_CONTAINS(kb_last_error(), "pieces_bytes");
  expect_create_error(&v, v.n, BOS, true, KB_STATUS_SHAPE_MISMATCH, "n_offsets");
  expect_create_error(&v, v.n + 1, v.n, true, KB_STATUS_INVALID_ARGUMENT, "bos_id");
  expect_create_error(&v, v.n + 1, -1, true, KB_STATUS_INVALID_ARGUMENT, "add_bos");

  struct vocab bad = v;
  bad.offsets[5] = bad.offsets[4] - 1;
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "offsets");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_create(v.n, v.offsets[v.n] - 1, v.pieces, v.n + 1, v.offsets,
                                                               v.scores, v.types, BOS, EOS, UNK, true, false, true, &tok));
  CHECK_STR_CONTAINS(kb_last_error(), "beyond the end of pieces");
  bad = v;
  bad.offsets[0] = -1;
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "offsets[0]");
  bad = v;
  bad.scores[7] = NAN;
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "scores[7]");
  bad = v;
  bad.types[9] = 7;
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "types[9]");
  bad = v;
  bad.types[T_A] = 6; /* "a" is no <0xNN> */
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "<0xNN>");
  bad = v;
  bad.pieces[bad.offsets[T_A]] = (char)0xC3; /* a lone lead byte */
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "UTF-8");
  bad = v;
  bad.pieces[bad.offsets[T_B]] = 'a'; /* "b" becomes a second "a" */
  expect_create_error(&bad, v.n + 1, BOS, true, KB_STATUS_INVALID_ARGUMENT, "same piece");
}

static void test_call_errors(void) {
  kb_tokenizer *tok = make(true, true);
  int32_t ids[4];
  int64_t n = -1;
  char buf[4];
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(NULL, 1, "a", true, false, 4, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "tok");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, -1, "a", true, false, 4, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "text_bytes");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, 1, NULL, true, false, 4, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "text must not be NULL");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, 1, "a", true, false, -1, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "capacity");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, 1, "a", true, false, 4, NULL, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "ids");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenize(tok, 1, "a", true, false, 4, ids, NULL));
  CHECK_STR_CONTAINS(kb_last_error(), "count");
  CHECK_STATUS(KB_STATUS_OUT_OF_MEMORY, kb_tokenize(tok, INT64_MAX, "a", true, false, 4, ids, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "overflows");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_piece(tok, N_TOKENS, false, 4, buf, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "id");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_piece(tok, -1, false, 4, buf, &n));
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_piece(tok, 0, false, 4, NULL, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "piece");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_tokenizer_piece(tok, 0, false, 4, buf, NULL));
  CHECK_STR_CONTAINS(kb_last_error(), "bytes");
  const int32_t bad[] = {T_A, N_TOKENS};
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_detokenize(tok, 2, bad, false, false, 4, buf, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "ids[1]");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_detokenize(tok, -1, bad, false, false, 4, buf, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "n_ids");
  CHECK_STATUS(KB_STATUS_INVALID_ARGUMENT, kb_detokenize(tok, 1, bad, false, false, 4, NULL, &n));
  CHECK_STR_CONTAINS(kb_last_error(), "text");
  /* A success clears the message. */
  CHECK_OK(kb_tokenize(tok, 1, "a", true, false, 4, ids, &n));
  CHECK(strcmp(kb_last_error(), "") == 0);
  kb_tokenizer_destroy(tok);
  kb_tokenizer_destroy(NULL);
}

/* Long runs: the merge queue and output grow; every "ab" pair merges. */
static void test_long_text(void) {
  kb_tokenizer *tok = make(false, false);
  enum { N = 100000 };
  char *text = malloc(2 * N);
  int32_t *ids = malloc(sizeof *ids * N);
  CHECK(text != NULL && ids != NULL);
  for (int i = 0; i < N; i++) text[2 * i] = 'a', text[2 * i + 1] = 'b';
  int64_t count = -1;
  CHECK_OK(kb_tokenize(tok, 2 * N, text, false, false, N, ids, &count));
  CHECK(count == N);
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= ids[i] == T_AB;
  CHECK(ok);
  free(text);
  free(ids);
  kb_tokenizer_destroy(tok);
}

int main(void) {
  KB_RUN(test_merges_by_score_then_leftmost);
  KB_RUN(test_spaces_and_prefix);
  KB_RUN(test_byte_fallback);
  KB_RUN(test_bos_eos_and_empty_text);
  KB_RUN(test_special_tokens_in_text);
  KB_RUN(test_capacity_protocol);
  KB_RUN(test_pieces);
  KB_RUN(test_round_trips);
  KB_RUN(test_empty_piece_and_no_byte_tokens);
  KB_RUN(test_create_errors);
  KB_RUN(test_call_errors);
  KB_RUN(test_long_text);
  return kb_test_summary();
}
