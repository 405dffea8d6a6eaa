/* status_test.c - kb_status_string names every status code. */
#include "kb_test.h"
#include "kernelbridge.h"

static void test_every_code_has_its_name(void) {
  CHECK(strcmp(kb_status_string(KB_STATUS_OK), "OK") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_SHAPE_MISMATCH), "SHAPE_MISMATCH") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_UNSUPPORTED), "UNSUPPORTED") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_OUT_OF_MEMORY), "OUT_OF_MEMORY") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_BACKEND_UNAVAILABLE), "BACKEND_UNAVAILABLE") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_DEVICE_ERROR), "DEVICE_ERROR") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_INTERNAL), "INTERNAL") == 0);
  CHECK(strcmp(kb_status_string(KB_STATUS_DEVICE_LOST), "DEVICE_LOST") == 0);
}

static void test_codes_are_stable(void) {
  /* The values are part of the ABI and of every binding. */
  CHECK(KB_STATUS_OK == 0);
  CHECK(KB_STATUS_INVALID_ARGUMENT == 1);
  CHECK(KB_STATUS_SHAPE_MISMATCH == 2);
  CHECK(KB_STATUS_UNSUPPORTED == 3);
  CHECK(KB_STATUS_OUT_OF_MEMORY == 4);
  CHECK(KB_STATUS_BACKEND_UNAVAILABLE == 5);
  CHECK(KB_STATUS_DEVICE_ERROR == 6);
  CHECK(KB_STATUS_INTERNAL == 7);
  CHECK(KB_STATUS_DEVICE_LOST == 8);
}

static void test_unknown_codes(void) {
  const int unknown[] = {-1, 9, 10, 100, 1 << 20};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    const char *name = kb_status_string((kb_status)unknown[i]);
    CHECK(name != NULL);
    CHECK(name != NULL && strcmp(name, "UNKNOWN") == 0);
  }
}

static void test_names_are_distinct_upper_case(void) {
  for (int a = KB_STATUS_OK; a <= KB_STATUS_DEVICE_LOST; a++) {
    const char *name = kb_status_string((kb_status)a);
    CHECK(strcmp(name, "UNKNOWN") != 0);
    for (const char *p = name; *p != '\0'; p++) CHECK((*p >= 'A' && *p <= 'Z') || *p == '_');
    for (int b = a + 1; b <= KB_STATUS_DEVICE_LOST; b++) CHECK(strcmp(name, kb_status_string((kb_status)b)) != 0);
  }
}

int main(void) {
  KB_RUN(test_every_code_has_its_name);
  KB_RUN(test_codes_are_stable);
  KB_RUN(test_unknown_codes);
  KB_RUN(test_names_are_distinct_upper_case);
  return kb_test_summary();
}
