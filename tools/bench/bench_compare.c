/* tools/bench/bench_compare.c — throughput of pg_tensor_compare on two large fp32
 * tensors against memcpy of the same bytes, measured in the same run (driven by
 * bench_compare.sh, which adds the numpy peer).
 *
 *   bench_compare [MiB per tensor (256)] [repeats (5)] [threads (0 = all cores)] [dtype]
 *                 [data: quiet | mixed (quiet)]
 *
 * quiet: reference ~ U(-2, 2), impl = ref * (1 + 1e-7 noise): max_rel stays tiny, so
 *        the hot kernels run their tight modes (docs/compare.md).
 * mixed: reference ~ U(-2, 2) with 1 % of the values scaled to ~1e-9 and 0.1 % exact
 *        zeros, impl = ref * (1 + 1e-7 noise) + 1e-9 absolute noise: max_rel is large
 *        (near-zero references), so every block runs the full kernel; still passes.
 *
 * Prints one line per measurement: "<name> <seconds (best of repeats)> <GB/s>", where
 * GB/s counts the bytes of both input tensors (10^9 bytes per GB).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "phasegate/compare.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct copy_job {
  char *dst;
  const char *src;
  size_t n;
};

static void *copy_part(void *arg) {
  struct copy_job *j = arg;
  memcpy(j->dst, j->src, j->n);
  return NULL;
}

/* memcpy of both tensors, split over `nt` threads (nt = 1: plain memcpy). */
static void copy_both(char *d1, const char *s1, char *d2, const char *s2, size_t bytes, int nt) {
  if (nt <= 1) {
    memcpy(d1, s1, bytes);
    memcpy(d2, s2, bytes);
    return;
  }
  pthread_t tid[64];
  struct copy_job jobs[64];
  size_t per = (bytes + (size_t)nt - 1) / (size_t)nt;
  int k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int t = 0; t < nt && k < 64; t++) {
      size_t off = (size_t)t * per;
      if (off >= bytes) break;
      jobs[k] = (struct copy_job){(pass ? d2 : d1) + off, (pass ? s2 : s1) + off,
                                  off + per > bytes ? bytes - off : per};
      pthread_create(&tid[k], NULL, copy_part, &jobs[k]);
      k++;
    }
  for (int i = 0; i < k; i++) pthread_join(tid[i], NULL);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  int threads = argc > 3 ? atoi(argv[3]) : 0;
  enum pg_dtype dt = argc > 4 ? pg_dtype_parse(argv[4]) : PG_DTYPE_F32;
  const char *data = argc > 5 ? argv[5] : "quiet";
  int mixed = strcmp(data, "mixed") == 0;
  if (mib == 0 || reps <= 0 || dt == PG_DTYPE_INVALID || !pg_dtype_is_float(dt) ||
      (!mixed && strcmp(data, "quiet") != 0)) {
    fprintf(stderr, "usage: bench_compare [MiB] [repeats] [threads] [float dtype] [quiet|mixed]\n");
    return 2;
  }
  int nt = threads > 0 ? threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  size_t bytes = mib << 20;
  int64_t n = (int64_t)(bytes / pg_dtype_size(dt));
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  if (pg_tensor_alloc(&a, dt, 1, &n, NULL) || pg_tensor_alloc(&b, dt, 1, &n, NULL)) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  char *d1 = malloc(bytes), *d2 = malloc(bytes);
  if (!d1 || !d2) return 2;
  uint64_t s = 42;
  for (int64_t i = 0; i < n; i++) { /* reference ~ U(-2, 2), impl = ref * (1 + 1e-7 noise) */
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    double v = (double)(s >> 11) * 0x1p-53 * 4 - 2;
    double e = ((double)((s >> 20) & 0xffff) - 32768) * 3e-12;
    double add = 0;
    if (mixed) {
      unsigned k = (unsigned)(s >> 40) & 1023;
      if (k < 10) v *= 1e-9;
      else if (k == 10) v = 0;
      add = ((double)((s >> 4) & 0xffff) - 32768) * 3e-14;
    }
    pg_store_f64(b.dl.data, dt, (size_t)i, v);
    pg_store_f64(a.dl.data, dt, (size_t)i, v * (1 + e) + add);
  }
  memset(d1, 1, bytes); /* fault the destination pages in before timing */
  memset(d2, 1, bytes);

  struct pg_cmp_rule rule;
  pg_cmp_rule_init(&rule, dt);
  double best_cmp = 1e30, best_cmp1 = 1e30, best_cpy = 1e30, best_cpyn = 1e30;
  struct pg_cmp_result res;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    copy_both(d1, a.dl.data, d2, b.dl.data, bytes, 1);
    double t1 = now();
    copy_both(d1, a.dl.data, d2, b.dl.data, bytes, nt);
    double t2 = now();
    if (pg_tensor_compare(&a.dl, &b.dl, &rule, threads, &res, NULL) != PG_OK) return 2;
    double t3 = now();
    if (pg_tensor_compare(&a.dl, &b.dl, &rule, 1, &res, NULL) != PG_OK) return 2;
    double t4 = now();
    if (t1 - t0 < best_cpy) best_cpy = t1 - t0;
    if (t2 - t1 < best_cpyn) best_cpyn = t2 - t1;
    if (t3 - t2 < best_cmp) best_cmp = t3 - t2;
    if (t4 - t3 < best_cmp1) best_cmp1 = t4 - t3;
  }
  double gb = 2.0 * (double)bytes / 1e9;
  printf("# %s, %s data, 2 x %zu MiB, %d threads, best of %d; mismatches %lld max_abs %g max_rel %g\n",
         pg_dtype_name(dt), data, mib, nt, reps, (long long)res.mismatches, res.max_abs_diff,
         res.max_rel_diff);
  printf("memcpy_1thread %.4f %.2f\n", best_cpy, gb / best_cpy);
  printf("memcpy_%dthreads %.4f %.2f\n", nt, best_cpyn, gb / best_cpyn);
  printf("compare_%dthreads %.4f %.2f\n", nt, best_cmp, gb / best_cmp);
  printf("compare_1thread %.4f %.2f\n", best_cmp1, gb / best_cmp1);
  free(d1);
  free(d2);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  return 0;
}
