/* phasegate runner — the registered tests of a build, as the plan sees them: read from
 * `ctest --show-only=json-v1` (names, numbers, labels, fixtures), each given its role
 * (docs/fleet.md "Phase gates and fixtures") and the list its fingerprint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"

void pg_fleet_plan_init(struct pg_fleet_plan *p) { memset(p, 0, sizeof *p); }

static void free_list(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}

void pg_fleet_plan_reset(struct pg_fleet_plan *p) {
  for (int i = 0; i < p->n_tests; i++) {
    struct pg_fleet_test *t = &p->tests[i];
    free(t->name);
    free_list(t->setup, t->n_setup);
    free_list(t->cleanup, t->n_cleanup);
    free_list(t->required, t->n_required);
    free_list(t->labels, t->n_labels);
  }
  free(p->tests);
  for (int i = 0; i < p->n_shards; i++) free(p->shards[i].tests);
  free(p->shards);
  free(p->build_dir);
  pg_fleet_plan_init(p);
}

int pg_fleet_ctest_list(const char *ctest, const char *build_dir, char **json, size_t *len,
                        struct pg_error *err) {
  char *argv[] = {(char *)(ctest ? ctest : "ctest"), "--test-dir", (char *)build_dir,
                  "--show-only=json-v1", NULL};
  int code = 0;
  int rc = pg__fleet_spawn(argv, NULL, 0, json, len, &code, err);
  if (rc != PG_OK) return rc;
  if (code != 0) {
    free(*json);
    *json = NULL;
    return pg_error_set(err, PG_EIO, "%s --test-dir %s --show-only=json-v1 exited with %d",
                        argv[0], build_dir, code);
  }
  return PG_OK;
}

/* The strings of a JSON array (or one string) into a malloc'ed list; a list the
 * property set before (given twice: the last wins) is freed. */
static int str_list(const cJSON *v, char ***out, int *n) {
  int cnt = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : cJSON_IsString(v) ? 1 : 0;
  free_list(*out, *n);
  *out = NULL;
  *n = 0;
  if (!cnt) return 0;
  char **l = calloc((size_t)cnt, sizeof *l);
  if (!l) return -1;
  const cJSON *e;
  int k = 0;
  if (cJSON_IsString(v)) l[k++] = pg_strdup(v->valuestring);
  else
    cJSON_ArrayForEach(e, v) if (cJSON_IsString(e)) l[k++] = pg_strdup(e->valuestring);
  for (int i = 0; i < k; i++)
    if (!l[i]) {
      free_list(l, k);
      return -1;
    }
  *out = l;
  *n = k;
  return 0;
}

static int has(char **l, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (strcmp(l[i], s) == 0) return 1;
  return 0;
}

/* One test's properties: fixtures and labels; whether it is labelled `gate`. */
static int read_props(const cJSON *props, struct pg_fleet_test *t, int *gate) {
  const cJSON *pr;
  *gate = 0;
  cJSON_ArrayForEach(pr, props) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(pr, "name");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pr, "value");
    if (!cJSON_IsString(nm)) continue;
    int bad = 0;
    if (strcmp(nm->valuestring, "FIXTURES_SETUP") == 0) bad = str_list(v, &t->setup, &t->n_setup);
    else if (strcmp(nm->valuestring, "FIXTURES_CLEANUP") == 0)
      bad = str_list(v, &t->cleanup, &t->n_cleanup);
    else if (strcmp(nm->valuestring, "FIXTURES_REQUIRED") == 0)
      bad = str_list(v, &t->required, &t->n_required);
    else if (strcmp(nm->valuestring, "LABELS") == 0) {
      if (str_list(v, &t->labels, &t->n_labels) != 0) return -1;
      *gate = has(t->labels, t->n_labels, "gate");
    }
    if (bad) return -1;
  }
  return 0;
}

/* FNV-1a over the names in order, each ended by '\n': the list and its numbering. */
static void fingerprint(struct pg_fleet_plan *p) {
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < p->n_tests; i++) {
    for (const char *s = p->tests[i].name; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  snprintf(p->fingerprint, sizeof p->fingerprint, "%016llx", h);
}

int pg_fleet_tests_load(const char *name, const char *json, size_t len,
                        struct pg_fleet_plan *p, struct pg_error *err) {
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) return pg_error_set(err, PG_EPARSE, "%s: not a ctest --show-only=json-v1 listing (JSON syntax)", name);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
  const cJSON *tests = cJSON_GetObjectItemCaseSensitive(root, "tests");
  if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "ctestInfo") != 0 || !cJSON_IsArray(tests)) {
    cJSON_Delete(root);
    return pg_error_set(err, PG_EPARSE, "%s: not a ctest --show-only=json-v1 listing (no kind \"ctestInfo\" with tests[])", name);
  }
  int n = cJSON_GetArraySize(tests), rc = PG_OK;
  p->tests = calloc((size_t)(n ? n : 1), sizeof *p->tests);
  if (!p->tests) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  const cJSON *t;
  int i = 0, *gate = calloc((size_t)(n ? n : 1), sizeof *gate);
  if (!gate && rc == PG_OK) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  cJSON_ArrayForEach(t, tests) {
    if (rc != PG_OK) break;
    const cJSON *tn = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (!cJSON_IsString(tn) || !tn->valuestring[0]) {
      rc = pg_error_set(err, PG_EPARSE, "%s: tests[%d] has no name", name, i);
      break;
    }
    struct pg_fleet_test *ft = &p->tests[i];
    ft->number = i + 1;
    ft->shard = -1;
    p->n_tests = i + 1;
    if (!(ft->name = pg_strdup(tn->valuestring)) ||
        read_props(cJSON_GetObjectItemCaseSensitive(t, "properties"), ft, &gate[i]) != 0)
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    i++;
  }
  cJSON_Delete(root);
  if (rc == PG_OK) {
    for (int k = 0; k < p->n_tests; k++) {
      struct pg_fleet_test *ft = &p->tests[k];
      ft->role = gate[k] ? PG_FLEET_GATE
                 : (ft->n_setup || ft->n_cleanup) && !ft->n_required ? PG_FLEET_FIXTURE
                                                                     : PG_FLEET_CASE;
    }
    fingerprint(p);
  }
  free(gate);
  return rc;
}
