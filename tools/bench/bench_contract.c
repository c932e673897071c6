/* bench_contract — times the contract loader (read + libyaml parse + all rule checks)
 * on one file: best of R runs, in MB/s and ms. Driven by bench_contract.sh, which
 * measures PyYAML on the same file in the same run.
 *
 *   bench_contract FILE [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "opdir/opdir.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_contract FILE [RUNS]\n");
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  struct stat st;
  if (stat(argv[1], &st) != 0) {
    perror(argv[1]);
    return 2;
  }
  double best = 1e30;
  int errors = 0, modules = 0;
  for (int r = 0; r < runs; r++) {
    struct pg_contract c;
    struct pg_diags d;
    struct pg_error e;
    pg_diags_init(&d);
    double t0 = now();
    int rc = pg_contract_load(argv[1], &c, &d, &e);
    double t = now() - t0;
    if (rc != PG_OK && rc != PG_EVALIDATE) {
      fprintf(stderr, "%s\n", e.message);
      return 1;
    }
    errors = d.n_errors;
    modules = c.n_modules;
    pg_contract_reset(&c);
    pg_diags_reset(&d);
    if (t < best) best = t;
  }
  printf("%.3f %.2f %d %d\n", best * 1e3, (double)st.st_size / best / 1e6, modules, errors);
  return 0;
}
