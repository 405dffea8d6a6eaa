/*
 * cpu_benchmark - kernelbridge's CPU kernels against OpenBLAS, a naive
 * attention and the machine's own limits, all measured in one run and
 * printed as markdown tables (benchmarks/README.md, "CPU").
 *
 *   cpu_benchmark [--quick] [--smoke] [--threads N] [--rounds N]
 *                 [--min-round SECONDS] [--only limits|gemm|attention|model|memory]
 *
 * Exit status: 0 when every call succeeded and every result check passed,
 * 1 otherwise (the reasons on stderr), 2 for bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "bench.h"

kb_context *ctx_one, *ctx_all;

static void usage(FILE *f) {
  fprintf(f,
          "usage: cpu_benchmark [--quick] [--smoke] [--threads N] [--rounds N] [--min-round SECONDS]\n"
          "                     [--only limits|gemm|attention|model|memory]\n"
          "  --quick      smaller sizes (the large memory-bound sizes / 16) and shorter rounds\n"
          "  --smoke      tiny sizes, one call per side: checks every call and result, no timing value\n"
          "  --threads N  the 'all threads' count (default: online CPUs)\n"
          "  --rounds N   timing rounds (default 5; --quick 3)\n"
          "  --min-round  seconds per side and round (default 0.05; --quick 0.005)\n");
}

static int section_on(const char *name) { return bench_opt.only == NULL || strcmp(bench_opt.only, name) == 0; }

int main(int argc, char **argv) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int rounds = 0;
  double min_round = 0;
  bench_opt.threads = online > 0 ? (int)online : 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) {
      bench_opt.quick = 1;
    } else if (strcmp(a, "--smoke") == 0) {
      bench_opt.smoke = 1;
      bench_opt.quick = 1;
    } else if (strcmp(a, "--threads") == 0 && v != NULL) {
      bench_opt.threads = atoi(v);
      i++;
    } else if (strcmp(a, "--rounds") == 0 && v != NULL) {
      rounds = atoi(v);
      i++;
    } else if (strcmp(a, "--min-round") == 0 && v != NULL) {
      min_round = atof(v);
      i++;
    } else if (strcmp(a, "--only") == 0 && v != NULL) {
      bench_opt.only = v;
      i++;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (bench_opt.threads < 1 || bench_opt.threads > 64 || rounds < 0 || rounds > BENCH_MAX_ROUNDS || min_round < 0) {
    fprintf(stderr, "cpu_benchmark: --threads must be 1..64, --rounds 1..%d, --min-round >= 0\n", BENCH_MAX_ROUNDS);
    return 2;
  }
  if (bench_opt.only != NULL && !section_on("limits") + !section_on("gemm") + !section_on("attention") +
                                        !section_on("model") + !section_on("memory") != 4) {
    fprintf(stderr, "cpu_benchmark: --only takes limits, gemm, attention, model or memory\n");
    return 2;
  }
  bench_opt.rounds = rounds > 0 ? rounds : bench_opt.quick ? 3 : 5;
  bench_opt.min_round = min_round > 0 ? min_round : bench_opt.quick ? 0.005 : 0.05;

  kb_status st = kb_context_create(KB_BACKEND_CPU, 1, &ctx_one);
  if (st == KB_STATUS_OK) st = kb_context_create(KB_BACKEND_CPU, bench_opt.threads, &ctx_all);
  if (st != KB_STATUS_OK) {
    fprintf(stderr, "cpu_benchmark: kb_context_create: %s: %s\n", kb_status_string(st), kb_last_error());
    return 1;
  }
  openblas_set_num_threads(bench_opt.threads);

  print_machine();
  fflush(stdout);
  /* The limits are the denominators of the later tables: measured whenever
   * a later section needs them. */
  if (section_on("limits") || section_on("gemm")) bench_limits();
  fflush(stdout);
  if (section_on("gemm")) bench_gemm();
  fflush(stdout);
  if (section_on("attention")) bench_attention();
  fflush(stdout);
  if (section_on("model")) bench_model();
  fflush(stdout);
  if (section_on("memory")) bench_memory();
  fflush(stdout);

  kb_context_destroy(ctx_one);
  kb_context_destroy(ctx_all);
  pool_shutdown();
  if (bench_failures > 0) {
    fprintf(stderr, "cpu_benchmark: %d failed call(s) or check(s); see the messages above\n", bench_failures);
    return 1;
  }
  return 0;
}
