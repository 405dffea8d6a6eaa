/* replay_main.c - runs a fuzz target over saved inputs without libFuzzer:
 * every file named on the command line, and every file in every directory
 * named there (sorted by name), is passed to LLVMFuzzerTestOneInput once.
 * Built with the normal compiler for `bazel test` (and with sanitizers under
 * --config=asan); a failed check aborts, which fails the test.  An empty
 * corpus is an error, so a misplaced directory cannot pass silently. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return 0;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = (uint8_t *)malloc(cap);
  if (buf == NULL) abort();
  for (;;) {
    if (n == cap) {
      cap *= 2;
      uint8_t *bigger = (uint8_t *)realloc(buf, cap);
      if (bigger == NULL) abort();
      buf = bigger;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    if (got == 0) break;
    n += got;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (count == cap) {
      cap = cap ? 2 * cap : 64;
      char **more = (char **)realloc(names, cap * sizeof *names);
      if (more == NULL) abort();
      names = more;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[count] = (char *)malloc(len);
    if (names[count] == NULL) abort();
    snprintf(names[count], len, "%s/%s", dir, e->d_name);
    count++;
  }
  closedir(d);
  if (count > 0) qsort(names, count, sizeof *names, by_name);
  int done = 0;
  for (size_t i = 0; i < count; i++) {
    done += replay_file(names[i]);
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    int n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
    if (n <= 0) {
      fprintf(stderr, "replay: no input in %s\n", argv[i]);
      return 1;
    }
    printf("replayed %d inputs from %s\n", n, argv[i]);
    total += n;
  }
  if (total == 0) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 1;
  }
  printf("replayed %d inputs, every check passed\n", total);
  return 0;
}
