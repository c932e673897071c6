/* phasegate runner — one phase's report combined from the reports several runs wrote
 * for it: the shards of a fleet run (docs/fleet.md "Merging"). Each case once, the
 * aggregates computed by the writer's own pg_report_build, a case two parts disagree on
 * kept with both verdicts under `conflicts`. Reads reports, never tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/report_keys.h"

static int int_of(const cJSON *o, const char *key, int dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valueint : dflt;
}

/* "sim,npu" from selection.modes (the phase's modes as run), into buf. */
static const char *modes_of(const cJSON *report, char *buf, size_t size) {
  const cJSON *sel = cJSON_GetObjectItemCaseSensitive(report, PG__RK_TOP_SELECTION);
  const cJSON *m;
  size_t n = 0;
  buf[0] = '\0';
  cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(sel, PG__RK_SELECTION_MODES)) {
    if (!cJSON_IsString(m) || n + strlen(m->valuestring) + 2 >= size) continue;
    n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", m->valuestring);
  }
  return n ? buf : NULL;
}

/* One entry of a check's `conflicts`: the part's status, its label and its run. */
static int add_conflict(cJSON *check, const cJSON *from, const char *label) {
  cJSON *list = cJSON_GetObjectItemCaseSensitive(check, PG__RK_CHECK_CONFLICTS);
  if (!list && !(list = cJSON_AddArrayToObject(check, PG__RK_CHECK_CONFLICTS))) return -1;
  cJSON *e = cJSON_CreateObject();
  if (!e || !cJSON_AddItemToArray(list, e)) {
    cJSON_Delete(e);
    return -1;
  }
  const char *st = pg__report_str(from, PG__RK_CHECK_STATUS);
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(from, PG__RK_CHECK_RUN);
  int bad = !cJSON_AddStringToObject(e, "status", st ? st : "");
  bad |= !cJSON_AddStringToObject(e, "from", label ? label : "");
  if (run) bad |= !cJSON_AddItemToObject(e, "run", cJSON_Duplicate(run, 1));
  return bad ? -1 : 0;
}

/* One check of one part; sorted by id (then part) to find a case's checks, then the
 * kept ones by suite order (the order pg_report_build keeps: its sort is then linear). */
struct item {
  const char *id;
  double suite_index;
  int part;
  const cJSON *check;
  cJSON *kept; /* the first item of an id: the check written */
};

static int by_id(const void *a, const void *b) {
  const struct item *x = a, *y = b;
  int c = strcmp(x->id, y->id);
  return c ? c : x->part - y->part;
}
static int by_suite_order(const void *a, const void *b) {
  const struct item *x = *(const struct item *const *)a, *y = *(const struct item *const *)b;
  if (x->suite_index != y->suite_index) return x->suite_index < y->suite_index ? -1 : 1;
  return strcmp(x->id, y->id);
}

/* The checks of one case (items[0..n), the same id, parts in order): the first, or on
 * a conflict the worse, with `conflicts` listing every part's status and run. */
static cJSON *one_case(const struct item *it, int n, const char *const *labels, int *n_conflicts) {
  int worst = 0, conflict = 0;
  for (int i = 1; i < n; i++) {
    enum pg_verdict v = pg_verdict_parse(pg__report_str(it[i].check, PG__RK_CHECK_STATUS));
    enum pg_verdict w = pg_verdict_parse(pg__report_str(it[worst].check, PG__RK_CHECK_STATUS));
    conflict |= v != pg_verdict_parse(pg__report_str(it[0].check, PG__RK_CHECK_STATUS));
    if (v > w) worst = i;
  }
  cJSON *d = cJSON_Duplicate(it[conflict ? worst : 0].check, 1);
  if (!d) return NULL;
  cJSON_DeleteItemFromObjectCaseSensitive(d, PG__RK_CHECK_CONFLICTS);
  if (!conflict) return d; /* the same verdict twice: a rerun that agreed */
  (*n_conflicts)++;
  for (int i = 0; i < n; i++)
    if (add_conflict(d, it[i].check, labels ? labels[it[i].part] : NULL) != 0) {
      cJSON_Delete(d);
      return NULL;
    }
  return d;
}

/* checks[] of the combined report (NULL: out of memory). */
static cJSON *combined_checks(const cJSON *const *parts, const char *const *labels, int n,
                              int *n_conflicts) {
  int total = 0, k = 0, n_kept = 0;
  for (int i = 0; i < n; i++) total += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(parts[i], PG__RK_TOP_CHECKS));
  struct item *it = calloc((size_t)total + 1, sizeof *it);
  struct item **kept = calloc((size_t)total + 1, sizeof *kept);
  cJSON *checks = cJSON_CreateArray();
  int bad = !it || !kept || !checks;
  for (int i = 0; !bad && i < n; i++) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(parts[i], PG__RK_TOP_CHECKS)) {
      const cJSON *si = cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_SUITE_INDEX);
      const char *id = pg__report_str(c, PG__RK_CHECK_ID);
      it[k++] = (struct item){id ? id : "", cJSON_IsNumber(si) ? si->valuedouble : 1e18, i, c, NULL};
    }
  }
  if (!bad) qsort(it, (size_t)k, sizeof *it, by_id);
  for (int g = 0; !bad && g < k;) {
    int e = g + 1;
    while (e < k && strcmp(it[e].id, it[g].id) == 0) e++;
    it[g].kept = one_case(&it[g], e - g, labels, n_conflicts);
    bad = !it[g].kept;
    kept[n_kept++] = &it[g];
    g = e;
  }
  if (!bad) qsort(kept, (size_t)n_kept, sizeof *kept, by_suite_order);
  for (int i = 0; i < n_kept; i++) {
    if (!bad && kept[i]->kept && cJSON_AddItemToArray(checks, kept[i]->kept)) continue;
    cJSON_Delete(kept[i]->kept);
    bad = 1;
  }
  free(it);
  free(kept);
  if (bad) {
    cJSON_Delete(checks);
    return NULL;
  }
  return checks;
}

cJSON *pg_report_combine(const cJSON *const *parts, const char *const *labels, int n,
                         int *n_conflicts) {
  if (n_conflicts) *n_conflicts = 0;
  if (n < 1) return NULL;
  const cJSON *h = parts[0];
  int conflicts = 0, suite_cases = 0;
  for (int i = 0; i < n; i++) {
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(parts[i], PG__RK_TOP_SELECTION);
    int sc = int_of(sel, PG__RK_SELECTION_SUITE_CASES, 0);
    if (sc > suite_cases) suite_cases = sc;
  }
  cJSON *checks = combined_checks(parts, labels, n, &conflicts);
  if (!checks) return NULL;
  char modes[512];
  struct pg_run_phase m = {
      .op = pg__report_str(h, PG__RK_TOP_OP_NAME),
      .impl_spec = pg__report_str(h, PG__RK_TOP_IMPL_FILE),
      .up_to_module = int_of(h, PG__RK_TOP_UP_TO_MODULE, 1),
      .total_modules = int_of(h, PG__RK_TOP_TOTAL_MODULES, 0),
      .tool_version = pg__report_str(h, PG__RK_TOP_TOOL_VERSION),
      .contract_path = pg__report_str(h, PG__RK_TOP_CONTRACT),
      .suite_path = pg__report_str(h, PG__RK_TOP_SUITE),
      .modes = modes_of(h, modes, sizeof modes),
      .registration = pg__report_str(h, PG__RK_TOP_REGISTRATION),
      .suite_cases = suite_cases,
  };
  cJSON *r = pg_report_build(&m, checks);
  if (!r) return NULL;
  /* the run: the first part's, spanning every part's start and end */
  const cJSON *run0 = cJSON_GetObjectItemCaseSensitive(h, PG__RK_TOP_RUN);
  if (cJSON_IsObject(run0)) {
    cJSON *run = cJSON_Duplicate(run0, 1);
    for (int i = 1; run && i < n; i++) {
      const cJSON *ri = cJSON_GetObjectItemCaseSensitive(parts[i], PG__RK_TOP_RUN);
      const char *keys[2] = {PG__RK_RUN_STARTED_AT, PG__RK_RUN_ENDED_AT};
      for (int k = 0; k < 2; k++) {
        const char *a = pg__report_str(run, keys[k]), *b = pg__report_str(ri, keys[k]);
        if (b && (!a || (k == 0 ? strcmp(b, a) < 0 : strcmp(b, a) > 0)))
          cJSON_ReplaceItemInObjectCaseSensitive(run, keys[k], cJSON_CreateString(b));
      }
    }
    if (!run || !cJSON_AddItemToObject(r, PG__RK_TOP_RUN, run)) {
      cJSON_Delete(run);
      cJSON_Delete(r);
      return NULL;
    }
  }
  if (n_conflicts) *n_conflicts = conflicts;
  return r;
}
