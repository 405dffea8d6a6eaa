/*
 * kb_test.h - a tiny assertion header for kernelbridge's C tests.
 *
 * Usage: write `static void test_x(void) {...}` functions using the CHECK
 * macros, list them in main() with KB_RUN(test_x), and `return kb_test_summary();`.
 * A failed check prints file:line and the values, marks the test failed and
 * continues with the next check.  The summary line is "N passed, N failed".
 */
#ifndef KB_TEST_H
#define KB_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int kb_test_failed_checks;
static int kb_test_passed_tests;
static int kb_test_failed_tests;

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      kb_test_failed_checks++;                                         \
    }                                                                  \
  } while (0)

#define CHECK_STATUS(expected, expr)                                                          \
  do {                                                                                        \
    kb_status kb_got_ = (expr);                                                               \
    if (kb_got_ != (expected)) {                                                              \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #expr,       \
              kb_status_string(kb_got_), kb_status_string(expected));                         \
      kb_test_failed_checks++;                                                                \
    }                                                                                         \
  } while (0)

#define CHECK_OK(expr) CHECK_STATUS(KB_STATUS_OK, expr)

/* |got - want| <= atol + rtol * |want|; NaN matches NaN. */
#define CHECK_CLOSE(got, want, atol, rtol)                                                        \
  do {                                                                                            \
    double kb_g_ = (double)(got), kb_w_ = (double)(want);                                         \
    int kb_ok_ = (isnan(kb_g_) && isnan(kb_w_)) || (kb_g_ == kb_w_) ||                            \
                 fabs(kb_g_ - kb_w_) <= (atol) + (rtol) * fabs(kb_w_);                            \
    if (!kb_ok_) {                                                                                \
      fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g\n", __FILE__, __LINE__, #got, kb_g_, kb_w_); \
      kb_test_failed_checks++;                                                                    \
    }                                                                                             \
  } while (0)

#define CHECK_STR_CONTAINS(haystack, needle)                                                          \
  do {                                                                                                \
    const char *kb_h_ = (haystack);                                                                   \
    if (kb_h_ == NULL || strstr(kb_h_, (needle)) == NULL) {                                           \
      fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, kb_h_ ? kb_h_ : "(null)", \
              (needle));                                                                              \
      kb_test_failed_checks++;                                                                        \
    }                                                                                                 \
  } while (0)

#define KB_RUN(test)                                   \
  do {                                                 \
    int kb_before_ = kb_test_failed_checks;            \
    test();                                            \
    if (kb_test_failed_checks == kb_before_) {         \
      kb_test_passed_tests++;                          \
    } else {                                           \
      kb_test_failed_tests++;                          \
      fprintf(stderr, "FAILED: %s\n", #test);          \
    }                                                  \
  } while (0)

/* A float's bit pattern, and the float of a bit pattern (bit-exact checks
 * and golden tables stored as bits). */
static inline uint32_t kb_test_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float kb_test_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline int kb_test_summary(void) {
  printf("%d passed, %d failed\n", kb_test_passed_tests, kb_test_failed_tests);
  return kb_test_failed_tests == 0 ? 0 : 1;
}

#endif /* KB_TEST_H */
