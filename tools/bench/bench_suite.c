/* tools/bench/bench_suite.c — suite loading speed against cJSON alone, measured in the
 * same run (driven by bench_suite.sh, which adds Python's json.loads as a peer).
 *
 *   bench_suite [cases (20000)] [repeats (5)] [scan|cjson|load]
 *
 * Builds a synthetic suite of N cases in memory (every knob the loader validates, plus
 * an unknown knob) and times, best of repeats (one peer after another, or only the
 * named one: the script runs each in its own process):
 *   scan   — the strict position scanner alone (runner/opdir/json_pos.c)
 *   cjson  — cJSON_ParseWithLength + cJSON_Delete (a plain parse of the same text)
 *   load   — pg_suite_load_buffer + pg_suite_reset: scan + validation + filling (and
 *            freeing) struct pg_suite
 * One line each: "<name> <seconds> <MB/s>". Then "ratio load/cjson <x>".
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opdir/opdir.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *make_suite(int n, size_t *size) {
  size_t cap = (size_t)n * 320 + 64, k = 0;
  char *t = malloc(cap);
  if (!t) return NULL;
  k += (size_t)snprintf(t + k, cap - k, "{\"op\": \"attention\", \"total_modules\": 3,\n \"cases\": [\n");
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(t + k, cap - k,
                          "  {\"id\": \"case_%d\", \"level\": %d, \"shape\": {\"S\": %d, \"B\": 1}, "
                          "\"dtype\": {\"q\": \"float32\"}, \"fill\": {\"k\": \"normal(0, 1)\"}, "
                          "\"atol\": 1e-4, \"rtol\": 1e-3, \"seed\": %d, \"rule\": \"allclose\", "
                          "\"knob\": [1, 2, {\"x\": true}]}%s\n",
                          i, 1 + i % 5, 16 + i % 100, i, i + 1 < n ? "," : "");
  k += (size_t)snprintf(t + k, cap - k, " ]}\n");
  *size = k;
  return t;
}

/* Best-of-reps seconds for one peer (0 scan, 1 cjson, 2 load); -1 on failure. */
static double measure(int which, const char *text, size_t size, int n, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    if (which == 0) {
      struct pg_json_pos p;
      struct pg_json_fail f;
      if (pg_json_pos_scan(text, size, NULL, &p, &f) != PG_OK) {
        fprintf(stderr, "scan failed: %s\n", f.message);
        return -1;
      }
      pg_json_pos_reset(&p);
    } else if (which == 1) {
      cJSON *root = cJSON_ParseWithLength(text, size);
      if (!root) return -1;
      cJSON_Delete(root);
    } else {
      struct pg_suite s;
      struct pg_error err;
      if (pg_suite_load_buffer("bench.json", text, size, NULL, &s, NULL, &err) != PG_OK) {
        fprintf(stderr, "load failed: %s\n", err.message);
        return -1;
      }
      int got = s.n_cases;
      pg_suite_reset(&s);
      if (got != n) return -1;
    }
    double d = now() - t0;
    if (d < best) best = d;
  }
  return best;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  const char *only = argc > 3 ? argv[3] : NULL;
  const char *names[3] = {"scan", "cjson", "load"};
  int which = -1;
  for (int i = 0; only && i < 3; i++)
    if (strcmp(only, names[i]) == 0) which = i;
  if (n < 1 || reps < 1 || (only && which < 0)) {
    fprintf(stderr, "usage: bench_suite [cases] [repeats] [scan|cjson|load]\n");
    return 2;
  }
  size_t size = 0;
  char *text = make_suite(n, &size);
  if (!text) return 1;
  if (which >= 0) {
    /* One peer per process: the loader then starts from the same fresh heap a
     * `phasegate list` starts from, not from the one cJSON's frees left behind. */
    double t = measure(which, text, size, n, reps);
    free(text);
    if (t < 0) return 1;
    printf("%s %.6f %.1f\n", names[which], t, (double)size / 1e6 / t);
    return 0;
  }
  double best[3];
  for (int i = 0; i < 3; i++) {
    best[i] = measure(i, text, size, n, reps);
    if (best[i] < 0) return 1;
  }
  printf("# %d cases, %.2f MB, best of %d\n", n, (double)size / 1e6, reps);
  for (int i = 0; i < 3; i++)
    printf("%s %.6f %.1f\n", names[i], best[i], (double)size / 1e6 / best[i]);
  printf("ratio load/cjson %.2f\n", best[2] / best[1]);
  printf("ratio scan/cjson %.2f\n", best[0] / best[1]);
  free(text);
  return 0;
}
