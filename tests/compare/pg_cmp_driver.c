/* tests/compare/pg_cmp_driver.c — test driver for compare/: runs pg_tensor_compare on
 * .npy pairs and prints the results as JSON lines (hex floats for exactness), and
 * writes small .npy fixtures for the CLI tests. .npy I/O is the test harness's own
 * (tests/harness/pg_npy_mini.c) so compare/ stays free of I/O and the tests do not
 * depend on runner/.
 *
 *   pg_cmp_driver batch LIST        each line: DTYPE A.npy B.npy RULE ATOL RTOL EQUAL_NAN THREADS
 *                                   (DTYPE bfloat16 reads A/B stored as '<u2')
 *   pg_cmp_driver write OUT.npy DTYPE D0xD1x.. V0,V1,...   (values as C doubles, nan/inf ok)
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_npy_mini.h"
#include "phasegate/compare.h"

static void print_result(const struct pg_cmp_result *r) {
  printf("{\"structural\": %d, \"passed\": %d, \"n\": %lld, \"mismatches\": %lld, "
         "\"n_finite\": %lld, \"max_abs\": \"%a\", \"max_abs_flat\": %lld, \"max_rel\": \"%a\", "
         "\"max_rel_flat\": %lld, \"nan_impl\": %lld, \"nan_ref\": %lld, \"inf_impl\": %lld, "
         "\"inf_ref\": %lld, \"max_ulp\": \"%a\", \"zeros_ref\": %lld, \"within3\": \"%a\", "
         "\"within53\": \"%a\", \"balance\": \"%a\", \"mean_abs\": \"%a\", \"rmse\": \"%a\", "
         "\"cosine\": \"%a\", \"first\": [",
         r->structural, r->passed, (long long)r->n, (long long)r->mismatches,
         (long long)r->n_finite, r->max_abs_diff, (long long)r->max_abs_flat, r->max_rel_diff,
         (long long)r->max_rel_flat, (long long)r->nan_impl, (long long)r->nan_ref,
         (long long)r->inf_impl, (long long)r->inf_ref, r->max_ulp, (long long)r->zeros_ref,
         r->share_within_1e3, r->share_within_5e3, r->error_balance, r->mean_abs_diff, r->rmse,
         r->cosine_similarity);
  for (int i = 0; i < r->n_first; i++)
    printf("%s%lld", i ? ", " : "", (long long)r->first_flat[i]);
  printf("]}\n");
}

/* Reads a .npy whose dtype must be `want`. */
static int read_as(const char *path, enum pg_dtype want, struct pg_tensor *t) {
  char why[1200];
  if (pg_test_npy_read(path, t, why, sizeof why) != 0) return fprintf(stderr, "%s\n", why), -1;
  if (t->dtype != want) {
    fprintf(stderr, "%s: dtype %s, expected %s\n", path, pg_dtype_name(t->dtype),
            pg_dtype_name(want));
    pg_tensor_reset(t);
    return -1;
  }
  return 0;
}

static int batch(const char *list) {
  FILE *f = fopen(list, "r");
  if (!f) return perror(list), 2;
  char line[4096];
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    char dt[32], pa[1024], pb[1024], rule[64];
    double atol, rtol;
    int eqn, threads;
    if (sscanf(line, "%31s %1023s %1023s %63s %lf %lf %d %d", dt, pa, pb, rule, &atol, &rtol,
               &eqn, &threads) != 8) {
      fprintf(stderr, "bad line: %s", line);
      rc = 2;
      break;
    }
    enum pg_dtype t = pg_dtype_parse(dt);
    struct pg_tensor a, b;
    if (read_as(pa, t, &a) != 0) { rc = 2; break; }
    if (read_as(pb, t, &b) != 0) { pg_tensor_reset(&a); rc = 2; break; }
    struct pg_cmp_rule r = {PG_RULE_ALLCLOSE, atol, rtol, eqn, 0, 0};
    struct pg_error err;
    struct pg_cmp_result res;
    if (pg_cmp_rule_parse(rule, &r, &err) != PG_OK ||
        pg_tensor_compare(&a.dl, &b.dl, &r, threads, &res, &err) != PG_OK) {
      fprintf(stderr, "%s\n", err.message);
      rc = 2;
    } else {
      print_result(&res);
    }
    pg_tensor_reset(&a);
    pg_tensor_reset(&b);
    if (rc) break;
  }
  fclose(f);
  return rc;
}

static int write_cmd(const char *out, const char *dt, const char *dims, const char *vals) {
  enum pg_dtype t = pg_dtype_parse(dt);
  int64_t shape[PG_MAX_NDIM];
  int nd = 0;
  const char *p = dims;
  while (*p && strcmp(dims, "scalar") != 0 && nd < PG_MAX_NDIM) {
    shape[nd++] = strtoll(p, (char **)&p, 10);
    if (*p == 'x') p++;
  }
  struct pg_tensor tt;
  pg_tensor_init(&tt);
  if (pg_tensor_alloc(&tt, t, nd, shape, NULL) != PG_OK) return 2;
  p = vals;
  for (int64_t i = 0; i < tt.numel; i++) {
    char *end;
    double v = strtod(p, &end);
    if (end == p) return fprintf(stderr, "too few values\n"), pg_tensor_reset(&tt), 2;
    if (t == PG_DTYPE_BF16) ((uint16_t *)tt.dl.data)[i] = pg_f64_to_bf16(v);
    else pg_store_f64(tt.dl.data, t, (size_t)i, v);
    p = *end == ',' ? end + 1 : end;
  }
  int rc = pg_test_npy_write(out, &tt) == 0 ? 0 : 2;
  pg_tensor_reset(&tt);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "batch") == 0) return batch(argv[2]);
  if (argc == 6 && strcmp(argv[1], "write") == 0) return write_cmd(argv[2], argv[3], argv[4], argv[5]);
  fprintf(stderr, "usage: pg_cmp_driver batch LIST | write OUT DTYPE DIMS VALUES\n");
  return 2;
}
