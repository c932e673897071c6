/* tools/bench/bench_errmap.c — what the error map of a failing tensor costs
 * (pg_cmp_error_map, docs/compare.md "The error map") next to the passes a failure
 * already pays: the streaming comparison (pg_tensor_compare) and the mismatch mask
 * (pg_cmp_mask_analyze), on the same two tensors in the same run.
 *
 *   bench_errmap [MiB per tensor (256)] [repeats (3)] [threads (0 = all cores)] [all]
 *
 * Data: a [rows, 8192] fp32 reference ~ U(-2, 2), the impl equal but for the last 32
 * columns of every row (off by 0.25) and a block of 64 rows scaled by 1.01: a failure
 * with a pattern, as a diagnosis sees it. `all`: the impl is 2 x the reference, every
 * element mismatches (bench_diagnosis.sh's y = 4x against 2x).
 * Prints "<name> <seconds (best of repeats)>" per pass: wall time with `threads`
 * threads, and CPU time with one thread (steady on a shared machine), then the ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phasegate/compare.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the process (all threads): on a shared machine it says what a pass costs
 * when wall time says how busy the neighbours are. */
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  int threads = argc > 3 ? atoi(argv[3]) : 0;
  int all = argc > 4 && strcmp(argv[4], "all") == 0;
  if (mib == 0 || reps <= 0) {
    fprintf(stderr, "usage: bench_errmap [MiB] [repeats] [threads]\n");
    return 2;
  }
  int64_t cols = 8192, rows = (int64_t)((mib << 20) / 4 / (size_t)cols);
  int64_t shape[2] = {rows, cols};
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  if (rows < 1 || pg_tensor_alloc(&a, PG_DTYPE_F32, 2, shape, NULL) ||
      pg_tensor_alloc(&b, PG_DTYPE_F32, 2, shape, NULL)) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  float *pa = a.dl.data, *pb = b.dl.data;
  uint64_t s = 42;
  for (int64_t i = 0; i < a.numel; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    float v = (float)((double)(s >> 11) * 0x1p-53 * 4 - 2);
    int64_t r = i / cols, c = i % cols;
    pb[i] = v;
    pa[i] = all                                     ? 2 * v
            : c >= cols - 32                        ? v - 0.25f
            : r >= rows / 3 && r < rows / 3 + 64 ? v * 1.01f
                                                 : v;
  }
  struct pg_cmp_rule rule;
  pg_cmp_rule_init(&rule, PG_DTYPE_F32);
  struct pg_cmp_result res;
  struct pg_cmp_mask *mask = malloc(sizeof *mask);
  struct pg_cmp_error_map *map = malloc(sizeof *map);
  if (!mask || !map) return 2;
  /* wall (threads), then CPU seconds of one thread: compare, mask, error map */
  double best[6] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
  for (int k = 0; k < reps; k++) {
    double t0 = now();
    if (pg_tensor_compare(&a.dl, &b.dl, &rule, threads, &res, NULL) != PG_OK) return 2;
    double t1 = now();
    if (pg_cmp_error_map(&a.dl, &b.dl, &rule, threads, map, NULL) != PG_OK) return 2;
    double t2 = now(), c0 = cpu();
    if (pg_tensor_compare(&a.dl, &b.dl, &rule, 1, &res, NULL) != PG_OK) return 2;
    double c1 = cpu();
    if (pg_cmp_mask_analyze(&a.dl, &b.dl, &rule, NULL, mask, NULL) != PG_OK) return 2;
    double c2 = cpu();
    if (pg_cmp_error_map(&a.dl, &b.dl, &rule, 1, map, NULL) != PG_OK) return 2;
    double c3 = cpu();
    double d[6] = {t1 - t0, t2 - t1, c1 - c0, c2 - c1, c3 - c2, 0};
    for (int i = 0; i < 5; i++)
      if (d[i] < best[i]) best[i] = d[i];
  }
  int nt = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  printf("# fp32 [%lld, %lld], 2 x %zu MiB, %d threads, best of %d; mismatches %lld\n",
         (long long)rows, (long long)cols, mib, nt, reps, (long long)res.mismatches);
  printf("wall_compare_%dthreads %.4f\n", nt, best[0]);
  printf("wall_error_map_%dthreads %.4f\n", nt, best[1]);
  printf("cpu_compare_1thread %.4f\n", best[2]);
  printf("cpu_mask_1thread %.4f\n", best[3]);
  printf("cpu_error_map_1thread %.4f\n", best[4]);
  printf("error_map / compare (cpu, 1 thread): %.2f\n", best[4] / best[2]);
  printf("error_map / mask (cpu, 1 thread): %.2f\n", best[4] / best[3]);
  free(mask);
  free(map);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  return 0;
}
