/* small_linear_bench.c - kb_linear_w at m = 1 (one decode step's matrix-
 * vector product) against the machine's copy bandwidth over the same
 * number of bytes, per weight format and matrix size, in one run.
 *
 *   small_linear_bench [--threads T] [--reps R] [--rows M]
 *
 * For each format (F32, BF16, F16, Q8_0, Q4_0) and weight size (0.25 to 64
 * MB, [out, in] with in = out rounded to 32), prints the best-of-R time of
 * kb_linear_w on a T-thread context, the weight bytes read per second, the
 * rate of a T-thread memcpy of as many bytes (best of R, same buffers
 * sizes: in cache when the weight is), and their ratio; then, per size, how
 * much faster the 16-bit formats are than float32.  Not a test: timings
 * depend on the machine (docs/performance.md records them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_copy.h"
#include "kernelbridge.h"

static void ok(kb_status s, const char *what) {
  if (s != KB_STATUS_OK) {
    fprintf(stderr, "%s: %s (%s)\n", what, kb_status_string(s), kb_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  int threads = 1, reps = 20;
  int64_t rows = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) rows = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--threads T] [--reps R] [--rows M]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1 || threads > 64 || reps < 1 || rows < 1 || rows > 64) {
    fprintf(stderr, "threads 1..64, reps >= 1, rows 1..64\n");
    return 2;
  }
  static const double sizes_mb[] = {0.25, 1, 4, 16, 64};
  static const struct {
    kb_dtype type;
    const char *name;
  } formats[] = {{KB_DTYPE_F32, "F32"}, {KB_DTYPE_BF16, "BF16"}, {KB_DTYPE_F16, "F16"},
                 {KB_DTYPE_Q8_0, "Q8_0"}, {KB_DTYPE_Q4_0, "Q4_0"}};
  kb_context *ctx = NULL;
  ok(kb_context_create(KB_BACKEND_CPU, threads, &ctx), "kb_context_create");
  printf("kb_linear_w, rows %lld, %d thread(s), best of %d; GB/s = weight bytes read per second\n", (long long)rows,
         threads, reps);
  printf("%-5s %8s %12s %10s %9s %9s %7s\n", "type", "MB", "[out, in]", "us", "GB/s", "copy GB/s", "ratio");
  double us_of[5][5];
  for (int s = 0; s < 5; s++) {
    for (int f = 0; f < 5; f++) {
      /* bytes per element of the format (Q8_0 34/32, Q4_0 18/32) */
      double per = formats[f].type == KB_DTYPE_F32 ? 4.0 : formats[f].type == KB_DTYPE_Q8_0 ? 34.0 / 32
                                                       : formats[f].type == KB_DTYPE_Q4_0 ? 18.0 / 32 : 2.0;
      int64_t side = (int64_t)sqrt(sizes_mb[s] * 1048576.0 / per);
      side = (side + 31) / 32 * 32;
      int64_t out = side, in = side, bytes = 0;
      ok(kb_dtype_bytes(formats[f].type, out, in, &bytes), "kb_dtype_bytes");
      float *wf = (float *)malloc((size_t)(out * in) * sizeof(float));
      float *x = (float *)malloc((size_t)(rows * in) * sizeof(float));
      float *y = (float *)malloc((size_t)(rows * out) * sizeof(float));
      void *w = NULL, *copy_dst = NULL;
      if (wf == NULL || x == NULL || y == NULL || posix_memalign(&w, 64, (size_t)bytes) != 0 ||
          posix_memalign(&copy_dst, 64, (size_t)bytes) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
      }
      uint64_t r = 0x9e3779b97f4a7c15ull + (uint64_t)s * 31 + (uint64_t)f;
      for (int64_t i = 0; i < out * in; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        wf[i] = (float)((double)(r >> 40) / 16777216.0 - 0.5);
      }
      for (int64_t i = 0; i < rows * in; i++) x[i] = (float)((i % 17) - 8) / 8.0f;
      ok(kb_quantize(ctx, formats[f].type, out, in, wf, w, bytes), "kb_quantize");
      free(wf);
      double best = 1e30;
      for (int rep = 0; rep < reps + 2; rep++) { /* two warm-up calls */
        double t0 = now();
        ok(kb_linear_w(ctx, rows, in, out, x, formats[f].type, w, bytes, NULL, KB_ACTIVATION_NONE, y), "kb_linear_w");
        double dt = now() - t0;
        if (rep >= 2 && dt < best) best = dt;
      }
      double copy = copy_best_seconds((char *)copy_dst, (const char *)w, (size_t)bytes, threads, reps);
      double gbs = (double)bytes / best * 1e-9, cgbs = (double)bytes / copy * 1e-9;
      us_of[s][f] = best * 1e6;
      printf("%-5s %8.2f %5lldx%-6lld %10.1f %9.1f %9.1f %7.2f\n", formats[f].name, (double)bytes / 1048576.0,
             (long long)out, (long long)in, best * 1e6, gbs, cgbs, gbs / cgbs);
      fflush(stdout);
      free(w);
      free(copy_dst);
      free(x);
      free(y);
    }
  }
  /* Time per weight (element), F32's over the format's: how much faster a
   * product of the same shape runs with the weights stored in that format
   * (sizes within a class scale with the bytes, so per-weight times of
   * equal-byte matrices compare). */
  printf("\ntime per weight, F32 / format (the same matrix, stored in the format):\n");
  for (int s = 0; s < 5; s++)
    printf("%6.2f MB: BF16 %.2fx, F16 %.2fx, Q8_0 %.2fx, Q4_0 %.2fx\n", sizes_mb[s], 2.0 * us_of[s][0] / us_of[s][1],
           2.0 * us_of[s][0] / us_of[s][2], us_of[s][0] / us_of[s][3] * 4 / (34.0 / 32),
           us_of[s][0] / us_of[s][4] * 4 / (18.0 / 32));
  kb_context_destroy(ctx);
  return 0;
}
