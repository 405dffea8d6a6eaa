/* quant_test.c - the Q8_0 / Q4_0 code (quant_ref.c) against golden data from
 * the gguf package's numpy implementation of GGML's formats
 * (quant_goldens.h, written by make_quant_goldens.py), bit for bit; plus
 * round trips, kb__quant_check_row, and a self-check that the goldens can
 * tell the reference's rounding from plausible wrong ones.
 *
 * One place where numpy is not ggml's C is known and handled explicitly: Q4_0
 * of an all-zero block led by -0.0 (kb_qg_q4_numpy_zero_sign; README.md). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kb_test.h"
#include "quant.h"
#include "quant_goldens.h"
#include "../half.h"

/* KB_RUN, plus one line per group on stdout whatever the outcome. */
#define RUN_GROUP(test)                                                               \
  do {                                                                                \
    int failed_before_ = kb_test_failed_tests;                                        \
    KB_RUN(test);                                                                     \
    printf("%-28s %s\n", #test, kb_test_failed_tests == failed_before_ ? "ok" : "FAILED"); \
  } while (0)

#define QG_N (KB_QG_NBLOCKS * KB_QK)

static void golden_block(int b, float *x) {
  for (int j = 0; j < KB_QK; j++) x[j] = kb_test_float(kb_qg_input[b * KB_QK + j]);
}

/* Index of the first differing byte, or -1. */
static int first_diff(const uint8_t *a, const uint8_t *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* Index of the first float whose bit pattern differs from want[], or -1. */
static int first_diff_bits(const float *got, const uint32_t *want, int n) {
  for (int i = 0; i < n; i++)
    if (kb_test_bits(got[i]) != want[i]) return i;
  return -1;
}

/* Reports a mismatch of block b of a golden table, counting it as a failure. */
static void report(const char *what, int b, int at, uint32_t got, uint32_t want) {
  fprintf(stderr, "  %s, block %d (%s): element/byte %d is 0x%x, want 0x%x\n", what, b,
          b < KB_QG_NBLOCKS ? kb_qg_labels[b] : "raw", at, (unsigned)got, (unsigned)want);
  kb_test_failed_checks++;
}

/* The expected Q4_0 bytes of golden block b: numpy's, except for the known
 * divergence, where ggml's C stores d = -0.0 (0x8000) and numpy +0.0. */
static void q4_expected(int b, uint8_t *want) {
  memcpy(want, kb_qg_q4_bytes + b * KB_Q4_0_BLOCK_BYTES, KB_Q4_0_BLOCK_BYTES);
  if (kb_qg_q4_numpy_zero_sign[b]) {
    CHECK(want[0] == 0x00 && want[1] == 0x00); /* numpy's +0.0, as the generator documents */
    want[1] = 0x80;
  }
}

/* ---- quantization against the goldens ---- */

static void test_q8_0_quantize_goldens(void) {
  int checked = 0;
  for (int b = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & 1)) continue;
    float x[KB_QK];
    uint8_t got[KB_Q8_0_BLOCK_BYTES];
    const uint8_t *want = kb_qg_q8_bytes + b * KB_Q8_0_BLOCK_BYTES;
    golden_block(b, x);
    kb__quantize_row_q8_0(x, got, KB_QK);
    int at = first_diff(got, want, KB_Q8_0_BLOCK_BYTES);
    if (at >= 0) report("q8_0 quantize", b, at, got[at], want[at]);
    checked++;
  }
  CHECK(checked >= KB_QG_NBLOCKS - 2);
}

static void test_q4_0_quantize_goldens(void) {
  int checked = 0, diverging = 0;
  for (int b = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & 2)) continue;
    float x[KB_QK];
    uint8_t got[KB_Q4_0_BLOCK_BYTES], want[KB_Q4_0_BLOCK_BYTES];
    golden_block(b, x);
    q4_expected(b, want);
    kb__quantize_row_q4_0(x, got, KB_QK);
    int at = first_diff(got, want, KB_Q4_0_BLOCK_BYTES);
    if (at >= 0) report("q4_0 quantize", b, at, got[at], want[at]);
    checked++;
    diverging += kb_qg_q4_numpy_zero_sign[b];
  }
  CHECK(checked >= KB_QG_NBLOCKS - 2);
  CHECK(diverging >= 1); /* the goldens do exercise the -0.0 case */
}

/* Every valid golden block in one row: the per-block offsets (34 and 18
 * bytes, so unaligned) and n > 32.  Output and input at odd addresses. */
static void test_whole_rows_unaligned(void) {
  static float x[QG_N], y[QG_N];
  static uint8_t q8[1 + KB_QG_NBLOCKS * KB_Q8_0_BLOCK_BYTES + 8], q4[1 + KB_QG_NBLOCKS * KB_Q4_0_BLOCK_BYTES + 8];
  uint8_t want[KB_Q4_0_BLOCK_BYTES];

  /* Q8_0: the blocks it accepts, back to back. */
  int nb = 0;
  for (int b = 0; b < KB_QG_NBLOCKS; b++)
    if (kb_qg_types[b] & 1) golden_block(b, x + KB_QK * nb++);
  memset(q8, 0xa5, sizeof q8);
  kb__quantize_row_q8_0(x, q8 + 1, (int64_t)nb * KB_QK);
  CHECK(q8[0] == 0xa5 && q8[1 + nb * KB_Q8_0_BLOCK_BYTES] == 0xa5); /* nothing outside the row */
  for (int b = 0, k = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & 1)) continue;
    int at = first_diff(q8 + 1 + k * KB_Q8_0_BLOCK_BYTES, kb_qg_q8_bytes + b * KB_Q8_0_BLOCK_BYTES, KB_Q8_0_BLOCK_BYTES);
    if (at >= 0) report("q8_0 row", b, at, q8[1 + k * KB_Q8_0_BLOCK_BYTES + at], kb_qg_q8_bytes[b * KB_Q8_0_BLOCK_BYTES + at]);
    k++;
  }
  kb__dequantize_row_q8_0(q8 + 1, y, (int64_t)nb * KB_QK);
  for (int b = 0, k = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & 1)) continue;
    int at = first_diff_bits(y + k * KB_QK, kb_qg_q8_dequant + b * KB_QK, KB_QK);
    if (at >= 0) report("q8_0 row dequantize", b, at, kb_test_bits(y[k * KB_QK + at]), kb_qg_q8_dequant[b * KB_QK + at]);
    k++;
  }

  /* Q4_0 likewise. */
  nb = 0;
  for (int b = 0; b < KB_QG_NBLOCKS; b++)
    if (kb_qg_types[b] & 2) golden_block(b, x + KB_QK * nb++);
  memset(q4, 0xa5, sizeof q4);
  kb__quantize_row_q4_0(x, q4 + 1, (int64_t)nb * KB_QK);
  CHECK(q4[0] == 0xa5 && q4[1 + nb * KB_Q4_0_BLOCK_BYTES] == 0xa5);
  for (int b = 0, k = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & 2)) continue;
    q4_expected(b, want);
    int at = first_diff(q4 + 1 + k * KB_Q4_0_BLOCK_BYTES, want, KB_Q4_0_BLOCK_BYTES);
    if (at >= 0) report("q4_0 row", b, at, q4[1 + k * KB_Q4_0_BLOCK_BYTES + at], want[at]);
    k++;
  }

  /* A partial trailing block is neither read nor written. */
  memset(q8, 0xa5, sizeof q8);
  kb__quantize_row_q8_0(x, q8, KB_QK + 5);
  CHECK(q8[KB_Q8_0_BLOCK_BYTES] == 0xa5);
  memset(q4, 0xa5, sizeof q4);
  kb__quantize_row_q4_0(x, q4, KB_QK - 1);
  CHECK(q4[0] == 0xa5);
}

/* ---- dequantization against the goldens ---- */

static void test_dequantize_goldens(void) {
  float y[KB_QK];
  for (int b = 0; b < KB_QG_NBLOCKS; b++) {
    if (kb_qg_types[b] & 1) {
      kb__dequantize_row_q8_0(kb_qg_q8_bytes + b * KB_Q8_0_BLOCK_BYTES, y, KB_QK);
      int at = first_diff_bits(y, kb_qg_q8_dequant + b * KB_QK, KB_QK);
      if (at >= 0) report("q8_0 dequantize", b, at, kb_test_bits(y[at]), kb_qg_q8_dequant[b * KB_QK + at]);
    }
    if (kb_qg_types[b] & 2) {
      /* numpy's bytes, divergence included: dequantization agrees on them. */
      kb__dequantize_row_q4_0(kb_qg_q4_bytes + b * KB_Q4_0_BLOCK_BYTES, y, KB_QK);
      int at = first_diff_bits(y, kb_qg_q4_dequant + b * KB_QK, KB_QK);
      if (at >= 0) report("q4_0 dequantize", b, at, kb_test_bits(y[at]), kb_qg_q4_dequant[b * KB_QK + at]);
      if (kb_qg_q4_numpy_zero_sign[b]) {
        /* ggml's bytes (d = -0.0) give -0.0 everywhere: -0.0 * (8 - 8). */
        uint8_t want[KB_Q4_0_BLOCK_BYTES];
        q4_expected(b, want);
        kb__dequantize_row_q4_0(want, y, KB_QK);
        for (int j = 0; j < KB_QK; j++) CHECK(kb_test_bits(y[j]) == 0x80000000u);
      }
    }
  }
  for (int r = 0; r < KB_QG_NRAW; r++) {
    kb__dequantize_row_q8_0(kb_qg_q8_raw + r * KB_Q8_0_BLOCK_BYTES, y, KB_QK);
    int at = first_diff_bits(y, kb_qg_q8_raw_dequant + r * KB_QK, KB_QK);
    if (at >= 0) report("q8_0 raw dequantize", KB_QG_NBLOCKS + r, at, kb_test_bits(y[at]), kb_qg_q8_raw_dequant[r * KB_QK + at]);
    kb__dequantize_row_q4_0(kb_qg_q4_raw + r * KB_Q4_0_BLOCK_BYTES, y, KB_QK);
    at = first_diff_bits(y, kb_qg_q4_raw_dequant + r * KB_QK, KB_QK);
    if (at >= 0) report("q4_0 raw dequantize", KB_QG_NBLOCKS + r, at, kb_test_bits(y[at]), kb_qg_q4_raw_dequant[r * KB_QK + at]);
  }
  /* Scales the goldens avoid (the NaN's sign is the platform's): still NaN / inf. */
  uint8_t blk[KB_Q8_0_BLOCK_BYTES] = {0x00, 0x7c, 0x00, 0x01, 0xff};
  kb__dequantize_row_q8_0(blk, y, KB_QK);
  CHECK(isnan(y[0]) && y[1] == INFINITY && y[2] == -INFINITY);
  blk[1] = 0x7e;
  kb__dequantize_row_q4_0(blk, y, KB_QK);
  CHECK(isnan(y[0]) && isnan(y[31]));
}

/* ---- round trips ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* splitmix64 */
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Uniform in [-1, 1) times 2^e, e in [-30, 16): blocks of very different
 * scales, all below binary16 overflow of d for both formats. */
static void random_block(float *x) {
  float scale = ldexpf(1.0f, (int)(rng_next() % 46) - 30);
  for (int j = 0; j < KB_QK; j++) x[j] = (float)((int64_t)(rng_next() >> 40) - (1 << 23)) / 8388608.0f * scale;
}

/* quantize -> dequantize -> quantize reproduces the bytes (the dequantized
 * block's max is exactly 127 d or -8 d, whose scale comes back exactly), and
 * the first dequantization is within half a step plus the scale's binary16
 * rounding of the input. */
static void test_round_trips(void) {
  float x[KB_QK], y[KB_QK];
  uint8_t q8[KB_Q8_0_BLOCK_BYTES], q8b[KB_Q8_0_BLOCK_BYTES], q4[KB_Q4_0_BLOCK_BYTES], q4b[KB_Q4_0_BLOCK_BYTES];
  int bad8 = 0, bad4 = 0, err8 = 0, err4 = 0;
  for (int it = 0; it < 20000; it++) {
    random_block(x);
    float amax = 0.0f;
    for (int j = 0; j < KB_QK; j++) amax = fmaxf(amax, fabsf(x[j]));

    kb__quantize_row_q8_0(x, q8, KB_QK);
    kb__dequantize_row_q8_0(q8, y, KB_QK);
    float d = amax / 127.0f, dq = kb_f16_to_f32((uint16_t)(q8[0] | q8[1] << 8));
    for (int j = 0; j < KB_QK; j++)
      if (!(fabsf(y[j] - x[j]) <= 0.5f * d * 1.0001f + 127.0f * fabsf(dq - d))) err8++;
    kb__quantize_row_q8_0(y, q8b, KB_QK);
    if (dq != 0.0f && memcmp(q8, q8b, sizeof q8) != 0) bad8++;

    kb__quantize_row_q4_0(x, q4, KB_QK);
    kb__dequantize_row_q4_0(q4, y, KB_QK);
    d = amax / 8.0f;
    dq = fabsf(kb_f16_to_f32((uint16_t)(q4[0] | q4[1] << 8)));
    for (int j = 0; j < KB_QK; j++) {
      /* Code 15 may be a clamped 16 (an element near +amax when max < 0): up to a whole step. */
      int code = j < KB_QK / 2 ? q4[2 + j] & 15 : q4[2 + j - KB_QK / 2] >> 4;
      float step = code == 15 ? d : 0.5f * d;
      if (!(fabsf(y[j] - x[j]) <= step * 1.0001f + 8.0f * fabsf(dq - d))) err4++;
    }
    kb__quantize_row_q4_0(y, q4b, KB_QK);
    if (dq != 0.0f && memcmp(q4, q4b, sizeof q4) != 0) bad4++;
  }
  if (bad8 || bad4 || err8 || err4) printf("  round trips: %d %d bytes, %d %d errors\n", bad8, bad4, err8, err4);
  CHECK(bad8 == 0);
  CHECK(bad4 == 0);
  CHECK(err8 == 0);
  CHECK(err4 == 0);
}

/* ---- kb__quant_check_row ---- */

static void test_check_row(void) {
  static const int types[2] = {KB_QTYPE_Q8_0, KB_QTYPE_Q4_0};
  float x[4 * KB_QK];
  for (int t = 0; t < 2; t++) {
    int type = types[t];
    float lim = type == KB_QTYPE_Q8_0 ? 65520.0f * 127.0f : 65520.0f * 8.0f; /* smallest max with f16(d) = inf */
    for (int i = 0; i < 4 * KB_QK; i++) x[i] = (float)(i % 7) - 3.0f;
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == -1);
    CHECK(kb__quant_check_row(type, x, 0) == -1);

    /* NaN / inf anywhere, both signs; the first one wins. */
    static const int where[] = {0, 31, 32, 77, 127};
    for (int w = 0; w < 5; w++) {
      float saved = x[where[w]];
      x[where[w]] = NAN;
      CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == where[w]);
      x[where[w]] = -INFINITY;
      CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == where[w]);
      x[where[w]] = INFINITY;
      CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == where[w]);
      x[where[w]] = saved;
    }
    x[100] = -NAN;
    x[70] = INFINITY;
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 70);
    CHECK(kb__quant_check_row(type, x, 2 * KB_QK) == -1); /* not read beyond n */
    x[100] = x[70] = 0.0f;

    /* The binary16 overflow threshold of the scale, in the third block. */
    x[70] = nextafterf(lim, 0.0f);
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == -1);
    x[70] = -nextafterf(lim, 0.0f);
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == -1);
    x[70] = lim;
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 70);
    x[70] = -FLT_MAX;
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 70);
    x[66] = FLT_MAX; /* a tie of magnitudes: the first element, the scale's source */
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 66);
    x[90] = NAN; /* a NaN in the block outranks its overflow */
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 90);
    x[20] = -lim; /* an earlier block comes first */
    CHECK(kb__quant_check_row(type, x, 4 * KB_QK) == 20);
    x[20] = x[66] = x[70] = x[90] = 0.0f;

    /* Tiny and zero blocks are fine. */
    for (int i = 0; i < KB_QK; i++) x[i] = (i & 1) ? -0.0f : 1e-45f;
    for (int i = KB_QK; i < 2 * KB_QK; i++) x[i] = 0.0f;
    CHECK(kb__quant_check_row(type, x, 2 * KB_QK) == -1);

    /* Agrees with the goldens' own verdicts (numpy's f16(d) overflow). */
    for (int b = 0; b < KB_QG_NBLOCKS; b++) {
      float blk[KB_QK];
      golden_block(b, blk);
      int ok = (kb_qg_types[b] & (type == KB_QTYPE_Q8_0 ? 1 : 2)) != 0;
      int64_t r = kb__quant_check_row(type, blk, KB_QK);
      if (ok) {
        CHECK(r == -1);
      } else {
        CHECK(r >= 0 && r < KB_QK);
        if (r >= 0 && r < KB_QK) {
          for (int j = 0; j < KB_QK; j++) CHECK(fabsf(blk[j]) <= fabsf(blk[r]));
        }
      }
    }
  }
  CHECK(kb__quant_check_row(3, x, KB_QK) == 0); /* not a supported type */
  CHECK(kb__quant_check_row(0, x, 0) == 0);
}

/* Rows check_row rejects still quantize deterministically, without touching
 * more than the row (run under -fsanitize=undefined this also shows the
 * float->int conversions stay defined). */
static void test_rejected_rows_are_defined(void) {
  float x[2 * KB_QK];
  uint8_t a[2 * KB_Q8_0_BLOCK_BYTES + 1], b[2 * KB_Q8_0_BLOCK_BYTES + 1];
  for (int i = 0; i < 2 * KB_QK; i++) x[i] = (float)i - 20.0f;
  x[3] = NAN;
  x[40] = INFINITY;
  x[41] = -INFINITY;
  for (int rep = 0; rep < 2; rep++) {
    uint8_t *o = rep ? b : a;
    memset(o, 0x5a, sizeof a);
    kb__quantize_row_q8_0(x, o, 2 * KB_QK);
    CHECK(o[2 * KB_Q8_0_BLOCK_BYTES] == 0x5a);
  }
  CHECK(memcmp(a, b, sizeof a) == 0);
  /* The infinite block: d = inf, id = 0, so finite elements give 0 and the
   * infinities NaN -> 0 (numpy on x86-64 gives the same). */
  CHECK(a[34] == 0x00 && a[35] == 0x7c);
  for (int j = 0; j < KB_QK; j++) CHECK(a[34 + 2 + j] == 0);
  for (int rep = 0; rep < 2; rep++) {
    uint8_t *o = rep ? b : a;
    memset(o, 0x5a, sizeof a);
    kb__quantize_row_q4_0(x, o, 2 * KB_QK);
    CHECK(o[2 * KB_Q4_0_BLOCK_BYTES] == 0x5a);
  }
  CHECK(memcmp(a, b, 2 * KB_Q4_0_BLOCK_BYTES) == 0);
  x[3] = 0.0f;
  x[0] = FLT_MAX; /* finite, f16(d) = inf: codes are still the usual ones */
  kb__quantize_row_q8_0(x, a, KB_QK);
  CHECK(a[0] == 0x00 && a[1] == 0x7c && a[2] == 127);
}

/* ---- the goldens can fail a wrong implementation ---- */

enum mutant { M_NONE, M_RINT, M_Q4_ROUND, M_Q4_F16_ID, M_Q4_LAST_MAX, M_F16_TRUNC, M_DIV, M_MUL127 };

/* Rounds d to binary16 toward zero: plausible-looking, wrong on f16 ties. */
static uint16_t f16_trunc(float d) {
  uint16_t h = kb_f32_to_f16(d);
  if (fabsf(kb_f16_to_f32(h)) > fabsf(d)) h--; /* one step back toward zero */
  return h;
}

/* v as an int, 0 where the cast would be undefined (the 1/d = inf block). */
static int to_int(float v) { return fabsf(v) < 1000.0f ? (int)v : 0; }

/* A quantizer with one deliberate deviation from the reference. */
static void mutant_quantize(enum mutant m, int q4, const float *x, uint8_t *out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < KB_QK; j++) {
    int take = m == M_Q4_LAST_MAX ? fabsf(x[j]) >= amax : fabsf(x[j]) > amax;
    if (take && fabsf(x[j]) != 0.0f) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  float d = q4 ? max / -8.0f : m == M_MUL127 ? amax * (1.0f / 127.0f) : amax / 127.0f;
  uint16_t h = m == M_F16_TRUNC ? f16_trunc(d) : kb_f32_to_f16(d);
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (m == M_Q4_F16_ID) id = kb_f16_to_f32(h) != 0.0f ? 1.0f / kb_f16_to_f32(h) : 0.0f;
  out[0] = (uint8_t)(h & 0xff);
  out[1] = (uint8_t)(h >> 8);
  if (!q4) {
    for (int j = 0; j < KB_QK; j++) {
      float t = m == M_DIV ? x[j] / d : x[j] * id;
      out[2 + j] = (uint8_t)to_int(m == M_RINT ? rintf(t) : roundf(t));
    }
    return;
  }
  for (int j = 0; j < KB_QK / 2; j++) {
    int c[2];
    for (int k = 0; k < 2; k++) {
      float t = m == M_DIV ? x[j + k * KB_QK / 2] / d : x[j + k * KB_QK / 2] * id;
      c[k] = m == M_Q4_ROUND ? to_int(roundf(t)) + 8 : to_int(t + 8.5f);
      c[k] = c[k] < 0 ? 0 : c[k] > 15 ? 15 : c[k];
    }
    out[2 + j] = (uint8_t)(c[0] | c[1] << 4);
  }
}

/* Blocks of the goldens on which the mutant's bytes differ from the expected. */
static int mutant_hits(enum mutant m, int q4, const char *label_part) {
  int hits = 0;
  for (int b = 0; b < KB_QG_NBLOCKS; b++) {
    if (!(kb_qg_types[b] & (q4 ? 2 : 1)) || (label_part && !strstr(kb_qg_labels[b], label_part))) continue;
    float x[KB_QK];
    uint8_t got[KB_Q8_0_BLOCK_BYTES], want[KB_Q8_0_BLOCK_BYTES];
    int nbytes = q4 ? KB_Q4_0_BLOCK_BYTES : KB_Q8_0_BLOCK_BYTES;
    golden_block(b, x);
    mutant_quantize(m, q4, x, got);
    if (q4) {
      q4_expected(b, want);
    } else {
      memcpy(want, kb_qg_q8_bytes + b * KB_Q8_0_BLOCK_BYTES, KB_Q8_0_BLOCK_BYTES);
    }
    hits += first_diff(got, want, nbytes) >= 0;
  }
  return hits;
}

static void test_goldens_discriminate(void) {
  /* rintf (ties to even) instead of roundf: every Q8_0 tie block catches it. */
  CHECK(mutant_hits(M_RINT, 0, "q8 ties") == 3);
  CHECK(mutant_hits(M_RINT, 0, "q8 near ties") == 0); /* one ulp off a half: no tie, both agree */
  /* roundf(x * id) + 8 instead of trunc(x * id + 8.5f): the Q4_0 tie blocks. */
  CHECK(mutant_hits(M_Q4_ROUND, 1, "q4 ties") == 3);
  /* 1 / f16(d) instead of 1 / d. */
  CHECK(mutant_hits(M_Q4_F16_ID, 1, NULL) >= 3);
  /* The last element of largest magnitude instead of the first. */
  CHECK(mutant_hits(M_Q4_LAST_MAX, 1, "repeated max") == 3);
  /* d rounded to binary16 toward zero instead of to nearest even. */
  CHECK(mutant_hits(M_F16_TRUNC, 0, "f16 tie") >= 1);
  CHECK(mutant_hits(M_F16_TRUNC, 1, "f16 subnormal tie") >= 1);
  /* amax * (1/127) instead of amax / 127; x / d instead of x * id. */
  CHECK(mutant_hits(M_MUL127, 0, "sensitive to amax / 127") == 1);
  CHECK(mutant_hits(M_DIV, 0, "q8 sensitive to x * id") == 1);
  CHECK(mutant_hits(M_DIV, 1, "q4 sensitive to x * id") == 1);
  /* And the unmodified mutant is the reference on the ordinary blocks. */
  CHECK(mutant_hits(M_NONE, 0, "normal") == 0);
  CHECK(mutant_hits(M_NONE, 1, "normal") == 0);
}

int main(void) {
  RUN_GROUP(test_q8_0_quantize_goldens);
  RUN_GROUP(test_q4_0_quantize_goldens);
  RUN_GROUP(test_dequantize_goldens);
  RUN_GROUP(test_whole_rows_unaligned);
  RUN_GROUP(test_round_trips);
  RUN_GROUP(test_check_row);
  RUN_GROUP(test_rejected_rows_are_defined);
  RUN_GROUP(test_goldens_discriminate);
  return kb_test_summary();
}
