/* vendored by tools/vendor_c.py from core/src/version.c; do not edit */
/* version.c - the library's own version, for header/library mismatch checks. */
#include "internal.h"

#define KB_STR2(x) #x
#define KB_STR(x) KB_STR2(x)

uint32_t kb_version_number(void) { return KB_VERSION_NUMBER; }

const char *kb_version_string(void) {
  return KB_STR(KB_VERSION_MAJOR) "." KB_STR(KB_VERSION_MINOR) "." KB_STR(KB_VERSION_PATCH);
}
