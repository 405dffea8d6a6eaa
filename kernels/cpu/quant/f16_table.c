/* f16_table.c - the binary16 -> float32 table of the quantized products
 * (qdot.h): built once per process, read-only afterwards. */
#include <pthread.h>

#include "../half.h"
#include "qdot.h"

static float table[65536];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build(void) {
  for (uint32_t h = 0; h < 65536; h++) table[h] = kb_f16_to_f32((uint16_t)h);
}

const float *kb__f16_to_f32_table(void) {
  pthread_once(&table_once, build);
  return table;
}
