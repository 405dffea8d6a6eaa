/* version_test.c - the library reports the version of the header it was built from. */
#include <stdio.h>

#include "kb_test.h"
#include "kernelbridge.h"

static void test_number_matches_macros(void) {
  CHECK(kb_version_number() == (uint32_t)KB_VERSION_NUMBER);
  CHECK(KB_VERSION_NUMBER == KB_VERSION_MAJOR * 10000 + KB_VERSION_MINOR * 100 + KB_VERSION_PATCH);
  CHECK(KB_VERSION_MINOR < 100 && KB_VERSION_PATCH < 100);
}

static void test_string_matches_macros(void) {
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", KB_VERSION_MAJOR, KB_VERSION_MINOR, KB_VERSION_PATCH);
  const char *got = kb_version_string();
  CHECK(got != NULL);
  CHECK(got != NULL && strcmp(got, want) == 0);
}

static void test_string_is_static(void) {
  /* "static": the same storage on every call, valid forever. */
  CHECK(kb_version_string() == kb_version_string());
}

static void test_string_agrees_with_number(void) {
  unsigned major = 0, minor = 0, patch = 0;
  CHECK(sscanf(kb_version_string(), "%u.%u.%u", &major, &minor, &patch) == 3);
  CHECK(major * 10000u + minor * 100u + patch == kb_version_number());
}

int main(void) {
  KB_RUN(test_number_matches_macros);
  KB_RUN(test_string_matches_macros);
  KB_RUN(test_string_is_static);
  KB_RUN(test_string_agrees_with_number);
  return kb_test_summary();
}
