/* phasegate runner — the plan of a fleet run (docs/fleet.md "The plan"): longest
 * processing time first over the registered tests (or whole ops), the fixture tests
 * each shard needs added to it, plan.json and the per-shard selection files written,
 * and read back by `shard run` and `merge`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"

static const char *const role_names[] = {"case", "fixture", "gate", "out"};

/* The op of a test: its name up to the first '/' (the CMake registration). */
static size_t group_len(const char *name) { return strcspn(name, "/"); }

struct unit {
  double seconds;
  int first;   /* the lowest test number in it: the tie-break */
  int test;    /* per-test: the test; by-op: the first test of the group */
};

static int unit_cmp(const void *a, const void *b) {
  const struct unit *x = a, *y = b;
  if (x->seconds != y->seconds) return x->seconds > y->seconds ? -1 : 1;
  return x->first - y->first;
}

static int shard_add(struct pg_fleet_shard *s, int t) {
  if (pg_array_reserve(&s->tests, &s->cap, s->n + 1, sizeof *s->tests) != 0) return -1;
  s->tests[s->n++] = t;
  return 0;
}

static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* fixture name -> the FIXTURE-role tests that set it up or clean it up, as a map from
 * the name to the first of its rows in `rows` (sorted by fixture). */
struct fx_row {
  const char *fixture;
  int test;
};
static int fx_cmp(const void *a, const void *b) {
  const struct fx_row *x = a, *y = b;
  int c = strcmp(x->fixture, y->fixture);
  return c ? c : x->test - y->test;
}

static int fixture_rows(const struct pg_fleet_plan *p, struct fx_row **rows, int *n,
                        struct pg__fleet_map *first) {
  int cnt = 0, cap = 0;
  *rows = NULL;
  for (int i = 0; i < p->n_tests; i++) {
    const struct pg_fleet_test *t = &p->tests[i];
    if (t->role != PG_FLEET_FIXTURE) continue;
    for (int k = 0; k < t->n_setup + t->n_cleanup; k++) {
      if (pg_array_reserve(rows, &cap, cnt + 1, sizeof **rows) != 0) return -1;
      (*rows)[cnt++] = (struct fx_row){k < t->n_setup ? t->setup[k] : t->cleanup[k - t->n_setup], i};
    }
  }
  if (cnt) qsort(*rows, (size_t)cnt, sizeof **rows, fx_cmp);
  for (int i = cnt - 1; i >= 0; i--)
    if (pg__fleet_map_put(first, (*rows)[i].fixture, i) != 0) return -1;
  *n = cnt;
  return 0;
}

static int has_label(const struct pg_fleet_test *t, const char *label) {
  for (int i = 0; label && i < t->n_labels; i++)
    if (strcmp(t->labels[i], label) == 0) return 1;
  return !label;
}

/* --label: the other tests are OUT (fixture tests stay, for now). A FIXTURE-role test
 * whose fixtures no planned test requires would never run: it is a case (or OUT). */
static int select_tests(struct pg_fleet_plan *p, const char *label) {
  for (int i = 0; i < p->n_tests; i++)
    if (p->tests[i].role != PG_FLEET_FIXTURE && !has_label(&p->tests[i], label))
      p->tests[i].role = PG_FLEET_OUT;
  struct pg__fleet_map req = {0};
  for (int i = 0; i < p->n_tests; i++)
    for (int k = 0; p->tests[i].role != PG_FLEET_OUT && k < p->tests[i].n_required; k++)
      if (pg__fleet_map_put(&req, p->tests[i].required[k], 1) != 0) return -1;
  for (int i = 0; i < p->n_tests; i++) {
    struct pg_fleet_test *t = &p->tests[i];
    int used = 0;
    for (int k = 0; k < t->n_setup; k++) used |= pg__fleet_map_get(&req, t->setup[k], NULL);
    for (int k = 0; k < t->n_cleanup; k++) used |= pg__fleet_map_get(&req, t->cleanup[k], NULL);
    if (t->role == PG_FLEET_FIXTURE && !used) t->role = has_label(t, label) ? PG_FLEET_CASE : PG_FLEET_OUT;
  }
  pg__fleet_map_reset(&req);
  return 0;
}

/* The units, sorted longest first. */
static struct unit *make_units(const struct pg_fleet_plan *p, int by_op, int *n) {
  struct unit *u = calloc((size_t)(p->n_tests ? p->n_tests : 1), sizeof *u);
  if (!u) return NULL;
  int cnt = 0;
  struct pg__fleet_map groups = {0};
  for (int i = 0; i < p->n_tests; i++) {
    const struct pg_fleet_test *t = &p->tests[i];
    if (t->role == PG_FLEET_OUT) continue;
    if (!by_op) {
      if (t->role == PG_FLEET_CASE) u[cnt++] = (struct unit){t->seconds, t->number, i};
      continue;
    }
    char g[512];
    snprintf(g, sizeof g, "%.*s", (int)group_len(t->name), t->name);
    double at;
    if (pg__fleet_map_get(&groups, g, &at)) {
      u[(int)at].seconds += t->seconds;
      continue;
    }
    if (pg__fleet_map_put(&groups, g, cnt) != 0) {
      free(u);
      pg__fleet_map_reset(&groups);
      return NULL;
    }
    u[cnt++] = (struct unit){t->seconds, t->number, i};
  }
  pg__fleet_map_reset(&groups);
  qsort(u, (size_t)cnt, sizeof *u, unit_cmp);
  *n = cnt;
  return u;
}

/* Adds to shard s the light fixture tests its tests require (stamp: tests already in). */
static int add_fixtures(const struct pg_fleet_plan *p, struct pg_fleet_shard *s,
                        const struct fx_row *rows, int n_rows, const struct pg__fleet_map *first,
                        int *stamp, int mark) {
  for (int j = 0; j < s->n; j++) stamp[s->tests[j]] = mark;
  for (int j = 0; j < s->n; j++) { /* s->n grows: a fixture's own requirements too */
    const struct pg_fleet_test *t = &p->tests[s->tests[j]];
    for (int k = 0; k < t->n_required; k++) {
      double at;
      if (!pg__fleet_map_get(first, t->required[k], &at)) continue;
      for (int r = (int)at; r < n_rows && strcmp(rows[r].fixture, t->required[k]) == 0; r++) {
        if (stamp[rows[r].test] == mark) continue;
        stamp[rows[r].test] = mark;
        if (shard_add(s, rows[r].test) != 0) return -1;
      }
    }
  }
  return 0;
}

int pg_fleet_plan_balance(struct pg_fleet_plan *p, int n_shards, int by_op, const char *label,
                          struct pg_error *err) {
  if (n_shards < 1) return pg_error_set(err, PG_EINVAL, "--shards: at least 1");
  if (select_tests(p, label) != 0) return pg_error_set(err, PG_ENOMEM, "out of memory");
  p->by_op = by_op;
  p->n_shards = n_shards;
  p->shards = calloc((size_t)n_shards, sizeof *p->shards);
  int n_units = 0, n_rows = 0, rc = PG_OK;
  struct unit *u = p->shards ? make_units(p, by_op, &n_units) : NULL;
  struct fx_row *rows = NULL;
  struct pg__fleet_map first = {0};
  int *stamp = calloc((size_t)(p->n_tests ? p->n_tests : 1), sizeof *stamp);
  if (!u || !stamp || fixture_rows(p, &rows, &n_rows, &first) != 0) rc = PG_ENOMEM;
  double *load = rc == PG_OK ? calloc((size_t)n_shards, sizeof *load) : NULL;
  if (rc == PG_OK && !load) rc = PG_ENOMEM;
  for (int i = 0; rc == PG_OK && i < n_units; i++) {
    int best = 0;
    for (int k = 1; k < n_shards; k++)
      if (load[k] < load[best]) best = k;
    load[best] += u[i].seconds;
    const char *g = p->tests[u[i].test].name;
    size_t gl = group_len(g);
    for (int t = u[i].test; t < p->n_tests; t++) {
      struct pg_fleet_test *ft = &p->tests[t];
      int member = by_op ? group_len(ft->name) == gl && strncmp(ft->name, g, gl) == 0 && ft->role != PG_FLEET_OUT
                         : t == u[i].test;
      if (!member || ft->shard >= 0) continue;
      ft->shard = best;
      if (shard_add(&p->shards[best], t) != 0) rc = PG_ENOMEM;
      if (!by_op) break;
    }
  }
  for (int k = 0; rc == PG_OK && k < n_shards; k++) {
    struct pg_fleet_shard *s = &p->shards[k];
    if (add_fixtures(p, s, rows, n_rows, &first, stamp, k + 1) != 0) rc = PG_ENOMEM;
    if (s->n) qsort(s->tests, (size_t)s->n, sizeof *s->tests, int_cmp);
    s->seconds = 0;
    for (int j = 0; j < s->n; j++) s->seconds += p->tests[s->tests[j]].seconds;
  }
  free(u);
  free(rows);
  free(stamp);
  free(load);
  pg__fleet_map_reset(&first);
  return rc == PG_OK ? PG_OK : pg_error_set(err, rc, "out of memory");
}

char *pg_fleet_shard_selection(const struct pg_fleet_plan *p, int k) {
  const struct pg_fleet_shard *s = &p->shards[k];
  size_t cap = 16 + (size_t)s->n * 12;
  char *out = malloc(cap);
  if (!out) return NULL;
  size_t n = (size_t)snprintf(out, cap, "0,0,0");
  for (int j = 0; j < s->n; j++) n += (size_t)snprintf(out + n, cap - n, ",%d", p->tests[s->tests[j]].number);
  snprintf(out + n, cap - n, "\n");
  return out;
}

static cJSON *str_array(char **l, int n) {
  return cJSON_CreateStringArray((const char *const *)l, n);
}

static cJSON *plan_json(const struct pg_fleet_plan *p) {
  cJSON *o = cJSON_CreateObject(), *tests = cJSON_CreateArray(), *shards = cJSON_CreateArray();
  int bad = !o || !tests || !shards;
  if (bad) {
    cJSON_Delete(tests);
    cJSON_Delete(shards);
    cJSON_Delete(o);
    return NULL;
  }
  cJSON_AddNumberToObject(o, "schema_version", PG_FLEET_PLAN_SCHEMA);
  cJSON_AddStringToObject(o, "tool", "phasegate");
  cJSON_AddStringToObject(o, "fingerprint", p->fingerprint);
  cJSON_AddNumberToObject(o, "n_tests", p->n_tests);
  cJSON_AddStringToObject(o, "build_dir", p->build_dir ? p->build_dir : "");
  cJSON_AddStringToObject(o, "mode", p->by_op ? "by-op" : "per-test");
  cJSON_AddStringToObject(o, "gates", p->by_op ? "in-shard" : "merged");
  cJSON_AddNumberToObject(o, "n_shards", p->n_shards);
  for (int i = 0; i < p->n_tests; i++) {
    const struct pg_fleet_test *t = &p->tests[i];
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddItemToArray(tests, e)) {
      cJSON_Delete(e);
      bad = 1;
      break;
    }
    cJSON_AddStringToObject(e, "name", t->name);
    cJSON_AddNumberToObject(e, "number", t->number);
    cJSON_AddStringToObject(e, "role", role_names[t->role]);
    cJSON_AddNumberToObject(e, "seconds", t->seconds);
    cJSON_AddBoolToObject(e, "recorded", t->known);
    if (t->shard >= 0) cJSON_AddNumberToObject(e, "shard", t->shard);
    else cJSON_AddNullToObject(e, "shard");
    if (t->n_setup) cJSON_AddItemToObject(e, "fixtures_setup", str_array(t->setup, t->n_setup));
    if (t->n_cleanup) cJSON_AddItemToObject(e, "fixtures_cleanup", str_array(t->cleanup, t->n_cleanup));
    if (t->n_required) cJSON_AddItemToObject(e, "fixtures_required", str_array(t->required, t->n_required));
  }
  for (int k = 0; !bad && k < p->n_shards; k++) {
    const struct pg_fleet_shard *s = &p->shards[k];
    cJSON *e = cJSON_CreateObject(), *names = cJSON_CreateArray(), *nums = cJSON_CreateArray();
    if (!e || !names || !nums || !cJSON_AddItemToArray(shards, e)) {
      cJSON_Delete(e);
      cJSON_Delete(names);
      cJSON_Delete(nums);
      bad = 1;
      break;
    }
    cJSON_AddNumberToObject(e, "index", k);
    cJSON_AddNumberToObject(e, "predicted_seconds", s->seconds);
    cJSON_AddItemToObject(e, "names", names);
    cJSON_AddItemToObject(e, "numbers", nums);
    for (int j = 0; j < s->n; j++) {
      cJSON_AddItemToArray(names, cJSON_CreateString(p->tests[s->tests[j]].name));
      cJSON_AddItemToArray(nums, cJSON_CreateNumber(p->tests[s->tests[j]].number));
    }
  }
  cJSON_AddItemToObject(o, "tests", tests);
  cJSON_AddItemToObject(o, "shards", shards);
  if (bad) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* Writes name under dir from text (NULL text: out of memory). */
static int write_in(const char *dir, const char *name, char *text, struct pg_error *err) {
  char *path = pg_path_join(dir, name);
  int rc = path && text ? pg__fleet_write_file(path, text, err) : pg_error_set(err, PG_ENOMEM, "out of memory");
  free(path);
  free(text);
  return rc;
}

int pg_fleet_plan_write(const struct pg_fleet_plan *p, const char *dir, struct pg_error *err) {
  if (pg_mkdir_p(dir) != 0) return pg_error_set(err, PG_EIO, "%s: cannot create the directory", dir);
  cJSON *o = plan_json(p);
  char *text = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  int rc = write_in(dir, "plan.json", text, err);
  for (int k = 0; rc == PG_OK && k < p->n_shards; k++) {
    char name[64];
    snprintf(name, sizeof name, "shard-%d.ctest-I", k);
    rc = write_in(dir, name, pg_fleet_shard_selection(p, k), err);
    const struct pg_fleet_shard *s = &p->shards[k];
    size_t cap = 1;
    for (int j = 0; j < s->n; j++) cap += strlen(p->tests[s->tests[j]].name) + 1;
    char *names = rc == PG_OK ? malloc(cap) : NULL;
    size_t n = 0;
    for (int j = 0; names && j < s->n; j++)
      n += (size_t)sprintf(names + n, "%s\n", p->tests[s->tests[j]].name);
    if (names) names[n] = '\0';
    snprintf(name, sizeof name, "shard-%d.tests", k);
    if (rc == PG_OK) rc = write_in(dir, name, names, err);
  }
  return rc;
}

static int role_of(const char *s) {
  for (int r = 0; r < 4; r++)
    if (s && strcmp(s, role_names[r]) == 0) return r;
  return -1;
}

static int read_list(const cJSON *o, const char *key, char ***l, int *n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  int cnt = cJSON_GetArraySize(a), k = 0;
  *l = NULL;
  *n = 0;
  if (!cnt) return 0;
  if (!(*l = calloc((size_t)cnt, sizeof **l))) return -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) if (cJSON_IsString(e) && !((*l)[k++] = pg_strdup(e->valuestring))) return -1;
  *n = k;
  return 0;
}

/* The tests[] of a plan.json. */
static int read_tests(const char *path, const cJSON *tests, struct pg_fleet_plan *p,
                      struct pg_error *err) {
  int n = cJSON_GetArraySize(tests);
  if (!(p->tests = calloc((size_t)(n ? n : 1), sizeof *p->tests))) return pg_error_set(err, PG_ENOMEM, "out of memory");
  const cJSON *t;
  cJSON_ArrayForEach(t, tests) {
    struct pg_fleet_test *ft = &p->tests[p->n_tests];
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(t, "number");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(t, "seconds");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shard");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    int role = role_of(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "role")));
    if (!cJSON_IsString(name) || !cJSON_IsNumber(num) || num->valueint != p->n_tests + 1 || role < 0)
      return pg_error_set(err, PG_EPARSE, "%s: tests[%d]: expected name, number %d and role", path,
                          p->n_tests, p->n_tests + 1);
    p->n_tests++;
    ft->number = num->valueint;
    ft->role = (enum pg_fleet_role)role;
    ft->seconds = cJSON_IsNumber(sec) ? sec->valuedouble : 0;
    ft->shard = cJSON_IsNumber(sh) ? sh->valueint : -1;
    if (!(ft->name = pg_strdup(name->valuestring)) ||
        read_list(t, "fixtures_setup", &ft->setup, &ft->n_setup) != 0 ||
        read_list(t, "fixtures_cleanup", &ft->cleanup, &ft->n_cleanup) != 0 ||
        read_list(t, "fixtures_required", &ft->required, &ft->n_required) != 0)
      return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  return PG_OK;
}

/* The shards[] of a plan.json. */
static int read_shards(const char *path, const cJSON *shards, struct pg_fleet_plan *p,
                       struct pg_error *err) {
  p->n_shards = cJSON_GetArraySize(shards);
  if (p->n_shards < 1) return pg_error_set(err, PG_EPARSE, "%s: no shards", path);
  if (!(p->shards = calloc((size_t)p->n_shards, sizeof *p->shards))) return pg_error_set(err, PG_ENOMEM, "out of memory");
  const cJSON *s;
  int k = 0;
  cJSON_ArrayForEach(s, shards) {
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(s, "predicted_seconds"), *num;
    p->shards[k].seconds = cJSON_IsNumber(sec) ? sec->valuedouble : 0;
    cJSON_ArrayForEach(num, cJSON_GetObjectItemCaseSensitive(s, "numbers")) {
      if (!cJSON_IsNumber(num) || num->valueint < 1 || num->valueint > p->n_tests)
        return pg_error_set(err, PG_EPARSE, "%s: shards[%d].numbers: a test number outside 1..%d", path, k, p->n_tests);
      if (shard_add(&p->shards[k], num->valueint - 1) != 0) return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    k++;
  }
  return PG_OK;
}

int pg_fleet_plan_read(const char *path, struct pg_fleet_plan *p, struct pg_error *err) {
  char *text;
  size_t len;
  int rc = pg_read_file(path, (size_t)1 << 30, &text, &len, err);
  if (rc != PG_OK) return rc;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *fp = cJSON_GetObjectItemCaseSensitive(root, "fingerprint");
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "mode"));
  if (!root || !cJSON_IsString(fp) || strlen(fp->valuestring) != 16 || !cJSON_IsNumber(sv) || !mode)
    rc = pg_error_set(err, PG_EPARSE, "%s: not a phasegate plan (plan.json of `phasegate shard plan`)", path);
  else if (sv->valueint != PG_FLEET_PLAN_SCHEMA)
    rc = pg_error_set(err, PG_EPARSE, "%s: plan schema_version %d, this phasegate reads %d", path,
                      sv->valueint, PG_FLEET_PLAN_SCHEMA);
  if (rc == PG_OK) {
    snprintf(p->fingerprint, sizeof p->fingerprint, "%s", fp->valuestring);
    p->by_op = strcmp(mode, "by-op") == 0;
    const char *bd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "build_dir"));
    if (bd && *bd && !(p->build_dir = pg_strdup(bd))) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  if (rc == PG_OK) rc = read_tests(path, cJSON_GetObjectItemCaseSensitive(root, "tests"), p, err);
  if (rc == PG_OK) rc = read_shards(path, cJSON_GetObjectItemCaseSensitive(root, "shards"), p, err);
  cJSON_Delete(root);
  return rc;
}
