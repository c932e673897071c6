/* tools/bench/bench_golden_cache.c — what the golden cache's size cap costs a store.
 * Peers measured in the same run, on the same directory kind, N entries of 1 KiB:
 *   unlimited  store with cap 0 (no bookkeeping: the cost before the cap existed)
 *   capped     store with a cap far above the total (estimate update under flock)
 *   rescan     store followed by a full scan each time (what a store would cost
 *              without the estimate: the design this replaces)
 * and one eviction pass (prune to half). Prints µs per store (best of 3 interleaved
 * rounds) and ratios.
 *
 *   bench_golden_cache DIR [N (500)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/golden_cache.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double fill(const char *dir, int n, uint64_t cap, int rescan, struct pg_tensor *t) {
  struct pg_error err;
  char hex[65];
  pg_golden_cache_clear(dir, NULL, &err);
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    snprintf(hex, sizeof hex, "%064x", (unsigned)i);
    if (pg_golden_cache_store_capped(dir, hex, t, 1, cap, &err) != PG_OK) {
      fprintf(stderr, "store: %s\n", err.message);
      exit(1);
    }
    if (rescan) pg_golden_cache_prune(dir, UINT64_MAX, NULL, &err);
  }
  return (now_s() - t0) / n * 1e6;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_golden_cache DIR [N]\n");
    return 2;
  }
  const char *dir = argv[1];
  int n = argc > 2 ? atoi(argv[2]) : 500;
  if (n < 2) n = 2;
  struct pg_tensor t;
  int64_t shape[1] = {256};
  pg_tensor_init(&t);
  pg_tensor_set_name(&t, "out");
  if (pg_tensor_alloc(&t, PG_DTYPE_F32, 1, shape, NULL) != PG_OK) return 1;
  memset(t.dl.data, 0, 1024);
  /* interleaved rounds, best of 3: the machine is shared and noisy */
  double unl = 1e30, cap = 1e30, res = 1e30;
  for (int r = 0; r < 3; r++) {
    double u = fill(dir, n, 0, 0, &t), c = fill(dir, n, UINT64_C(1) << 40, 0, &t),
           x = fill(dir, n, UINT64_C(1) << 40, 1, &t);
    unl = u < unl ? u : unl;
    cap = c < cap ? c : cap;
    res = x < res ? x : res;
  }
  struct pg_golden_cache_stats st;
  struct pg_error err;
  pg_golden_cache_info(dir, &st, &err);
  double t0 = now_s();
  pg_golden_cache_prune(dir, st.bytes / 2, &st, &err);
  double ev = (now_s() - t0) * 1e3;
  printf("golden cache, %d entries of 1 KiB in %s\n", n, dir);
  printf("  store, unlimited (no bookkeeping)   %8.1f us\n", unl);
  printf("  store, capped (estimate under flock) %8.1f us   %.2fx unlimited\n", cap, cap / unl);
  printf("  store + full rescan (peer)           %8.1f us   %.2fx capped\n", res, res / cap);
  printf("  evict half (%llu entries)            %8.2f ms\n", (unsigned long long)st.evicted, ev);
  pg_golden_cache_clear(dir, NULL, &err);
  pg_tensor_reset(&t);
  return 0;
}
