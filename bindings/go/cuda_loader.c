/* vendored by tools/vendor_c.py from core/src/cuda_loader.c; do not edit */
/* cuda_loader.c - finds and loads libkernelbridge_cuda.so (see
 * cuda_loader.h). */
/* dladdr is a GNU extension: ask for it here, in this file only, so that the
 * rest of the library stays C99 + POSIX and vendored builds (Go, Rust,
 * Python) need no extra flag. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for three candidates with their dlerror() texts. */
#define KB_LOADER_MESSAGE 1536

/* Any object of the library containing this file: dladdr on its address
 * names that library (or the program, when linked statically). */
static const char kb_loader_anchor = 0;

struct trylog {
  char *buf;
  size_t cap, used;
};

static void note(struct trylog *log, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void note(struct trylog *log, const char *fmt, ...) {
  if (log->buf == NULL || log->used + 1 >= log->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(log->buf + log->used, log->cap - log->used, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  log->used += (size_t)n;
  if (log->used >= log->cap) log->used = log->cap - 1;
}

/* Loads one candidate; on failure records "label: reason; ". */
static const struct kbcuda_table *try_candidate(const char *label, const char *path, struct trylog *log) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *why = dlerror();
    note(log, "%s: %s; ", label, why != NULL ? why : "cannot be loaded");
    return NULL;
  }
  void *sym = dlsym(h, KBCUDA_GET_TABLE_SYMBOL);
  if (sym == NULL) {
    note(log, "%s: loaded but has no symbol %s; ", label, KBCUDA_GET_TABLE_SYMBOL);
    dlclose(h);
    return NULL;
  }
  kbcuda_get_table_fn get;
  memcpy(&get, &sym, sizeof get); /* object pointer to function pointer, as POSIX allows */
  const struct kbcuda_table *t = get(KBCUDA_ABI_VERSION);
  if (t == NULL || t->abi_version != KBCUDA_ABI_VERSION || t->struct_size < KBCUDA_TABLE_V1_SIZE) {
    note(log, "%s: does not provide CUDA backend ABI version %u; ", label, (unsigned)KBCUDA_ABI_VERSION);
    dlclose(h);
    return NULL;
  }
  /* Never dlclose'd: the table's functions and the CUDA runtime inside the
   * library live as long as the process. */
  return t;
}

const struct kbcuda_table *kb__cuda_search(char *msg, size_t cap) {
  char buf[KB_LOADER_MESSAGE];
  char label[KB_LOADER_MESSAGE / 2];
  struct trylog log = {buf, sizeof buf, 0};
  buf[0] = '\0';
  const struct kbcuda_table *t = NULL;
  const char *chosen = NULL;

  /* 1. The environment variable. */
  const char *env = getenv(KB_CUDA_LIBRARY_ENV);
  if (env != NULL && env[0] != '\0') {
    snprintf(label, sizeof label, "%s=%s", KB_CUDA_LIBRARY_ENV, env);
    t = try_candidate(label, env, &log);
    if (t != NULL) chosen = env;
  } else {
    note(&log, "%s: not set; ", KB_CUDA_LIBRARY_ENV);
  }

  /* 2. Next to the library that contains this loader. */
  char beside[KB_LOADER_MESSAGE / 2];
  if (t == NULL) {
    Dl_info info;
    const char *slash = NULL;
    if (dladdr(&kb_loader_anchor, &info) != 0 && info.dli_fname != NULL) slash = strrchr(info.dli_fname, '/');
    if (slash != NULL) {
      int n = snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                       KBCUDA_LIBRARY_NAME);
      if (n > 0 && (size_t)n < sizeof beside) {
        t = try_candidate(beside, beside, &log);
        if (t != NULL) chosen = beside;
      } else {
        note(&log, "directory of the core library: path too long; ");
      }
    } else {
      note(&log, "directory of the core library: unknown (dladdr gave no path); ");
    }
  }

  /* 3. The system search path. */
  if (t == NULL) {
    t = try_candidate(KBCUDA_LIBRARY_NAME " (system search path)", KBCUDA_LIBRARY_NAME, &log);
    if (t != NULL) chosen = KBCUDA_LIBRARY_NAME " (system search path)";
  }

  if (msg != NULL && cap > 0) {
    if (t != NULL) {
      if (log.used >= 2 && buf[log.used - 2] == ';') buf[log.used - 2] = '\0';
      snprintf(msg, cap, "loaded %s (tried before: %s)", chosen, log.used > 0 ? buf : "nothing");
    } else {
      if (log.used >= 2 && buf[log.used - 2] == ';') buf[log.used - 2] = '\0'; /* drop the last "; " */
      snprintf(msg, cap, "cannot load the CUDA backend (%s); tried: %s", KBCUDA_LIBRARY_NAME, buf);
    }
  }
  return t;
}

static pthread_once_t kb_cuda_once = PTHREAD_ONCE_INIT;
static const struct kbcuda_table *kb_cuda_table;
static char kb_cuda_message[KB_LOADER_MESSAGE];

static void load_once(void) { kb_cuda_table = kb__cuda_search(kb_cuda_message, sizeof kb_cuda_message); }

const struct kbcuda_table *kb__cuda_load(char *msg, size_t cap) {
  pthread_once(&kb_cuda_once, load_once);
  if (msg != NULL && cap > 0) snprintf(msg, cap, "%.*s", (int)(cap - 1), kb_cuda_message);
  return kb_cuda_table;
}
