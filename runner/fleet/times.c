/* phasegate runner — recorded test durations for the plan (docs/fleet.md "The plan"): a
 * previous merge's times.json, JUnit files (ctest's, a shard's, a merge's), CTest's
 * own CTestCostData.txt. JUnit is read by the report room's reader.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"
#include "report/report.h"

enum { SRC_TIMES, SRC_JUNIT, SRC_COST, N_SRC };

#define TIMES_FILE_MAX ((size_t)1 << 30)

static int put_first(struct pg__fleet_map *m, const char *name, double s) {
  if (!(s >= 0) || !isfinite(s) || pg__fleet_map_get(m, name, NULL)) return 0;
  return pg__fleet_map_put(m, name, s);
}

static int junit_case(const struct pg_report_junit_case *c, void *user) {
  /* a test that did not run has no duration worth planning on */
  if (c->result == PG_REPORT_JUNIT_NOT_RUN) return 0;
  return put_first(user, c->name, c->time_s) != 0;
}

static int read_times_json(const char *path, const char *text, struct pg__fleet_map *m,
                           struct pg_error *err) {
  cJSON *root = cJSON_Parse(text);
  const cJSON *tests = cJSON_GetObjectItemCaseSensitive(root, "tests");
  if (!cJSON_IsObject(tests)) {
    cJSON_Delete(root);
    return pg_error_set(err, PG_EPARSE, "%s: not a times file (an object with \"tests\": {name: seconds})", path);
  }
  const cJSON *t;
  int rc = PG_OK;
  cJSON_ArrayForEach(t, tests)
    if (cJSON_IsNumber(t) && put_first(m, t->string, t->valuedouble) != 0)
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  cJSON_Delete(root);
  return rc;
}

/* CTestCostData.txt: "<name> <runs> <average seconds>" lines, then "---" and the names
 * of the tests that failed last. A name may hold spaces: the numbers are the last two. */
static int read_cost(char *text, struct pg__fleet_map *m, struct pg_error *err) {
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "---", 3) == 0) break;
    char *sp2 = strrchr(line, ' ');
    if (!sp2) continue;
    *sp2 = '\0';
    char *sp1 = strrchr(line, ' ');
    if (!sp1) continue;
    *sp1 = '\0';
    char *end;
    double cost = strtod(sp2 + 1, &end);
    if (*end && *end != '\r') continue;
    if (put_first(m, line, cost) != 0) return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  return PG_OK;
}

/* One source file, by what it holds. */
static int read_source(const char *path, struct pg__fleet_map *maps, struct pg_error *err) {
  char *text;
  size_t len;
  int rc = pg_read_file(path, TIMES_FILE_MAX, &text, &len, err);
  if (rc != PG_OK) return rc;
  const char *s = text + strspn(text, " \t\r\n");
  if (*s == '{') rc = read_times_json(path, text, &maps[SRC_TIMES], err);
  else if (*s == '<') {
    if (pg_report_junit_each(text, junit_case, &maps[SRC_JUNIT]) < 0)
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  } else rc = read_cost(text, &maps[SRC_COST], err);
  free(text);
  return rc;
}

/* A directory: a merge's times.json, else a shard's junit.xml. */
static int read_dir(const char *dir, struct pg__fleet_map *maps, struct pg_error *err) {
  static const char *const names[] = {"times.json", "junit.xml"};
  for (int i = 0; i < 2; i++) {
    char *p = pg_path_join(dir, names[i]);
    if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
    int found = pg_is_file(p), rc = found ? read_source(p, maps, err) : PG_OK;
    free(p);
    if (found) return rc;
  }
  return pg_error_set(err, PG_ENOENT, "%s: no times.json or junit.xml in this directory", dir);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int pg_fleet_times_apply(struct pg_fleet_plan *p, const char *const *paths, int n,
                         const char *build_dir, int *n_known, struct pg_error *err) {
  struct pg__fleet_map maps[N_SRC] = {{0}};
  int rc = PG_OK;
  for (int i = 0; i < n && rc == PG_OK; i++)
    rc = pg_is_dir(paths[i]) ? read_dir(paths[i], maps, err) : read_source(paths[i], maps, err);
  char *cost = build_dir ? pg_path_join(build_dir, "Testing/Temporary/CTestCostData.txt") : NULL;
  if (rc == PG_OK && cost && pg_is_file(cost)) rc = read_source(cost, maps, err);
  free(cost);
  double *known = rc == PG_OK ? malloc((size_t)(p->n_tests ? p->n_tests : 1) * sizeof *known) : NULL;
  if (rc == PG_OK && !known) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  int nk = 0;
  for (int i = 0; rc == PG_OK && i < p->n_tests; i++) {
    struct pg_fleet_test *t = &p->tests[i];
    t->known = 0;
    for (int s = 0; s < N_SRC && !t->known; s++) t->known = pg__fleet_map_get(&maps[s], t->name, &t->seconds);
    if (t->known) known[nk++] = t->seconds;
  }
  if (rc == PG_OK) {
    double median = 1.0; /* nothing recorded: every test weighs the same */
    if (nk) {
      qsort(known, (size_t)nk, sizeof *known, cmp_double);
      median = nk % 2 ? known[nk / 2] : (known[nk / 2 - 1] + known[nk / 2]) / 2;
    }
    for (int i = 0; i < p->n_tests; i++)
      if (!p->tests[i].known) p->tests[i].seconds = median;
    if (n_known) *n_known = nk;
  }
  free(known);
  for (int s = 0; s < N_SRC; s++) pg__fleet_map_reset(&maps[s]);
  return rc;
}
