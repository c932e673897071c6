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

/* Adds the checks of `part` to `checks`, each case once (see pg_report_combine). */
static int add_part(cJSON *checks, const cJSON *part, const char *label, const char *first_label,
                    int *n_conflicts) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(part, PG__RK_TOP_CHECKS)) {
    const char *id = pg__report_str(c, PG__RK_CHECK_ID);
    cJSON *have = NULL, *h;
    cJSON_ArrayForEach(h, checks) {
      const char *hid = pg__report_str(h, PG__RK_CHECK_ID);
      if (id && hid && strcmp(id, hid) == 0) have = h;
    }
    if (!have) {
      cJSON *d = cJSON_Duplicate(c, 1);
      if (!d || !cJSON_AddItemToArray(checks, d)) return -1;
      if (label) cJSON_DeleteItemFromObjectCaseSensitive(d, PG__RK_CHECK_CONFLICTS);
      continue;
    }
    enum pg_verdict a = pg_verdict_parse(pg__report_str(have, PG__RK_CHECK_STATUS));
    enum pg_verdict b = pg_verdict_parse(pg__report_str(c, PG__RK_CHECK_STATUS));
    if (a == b) continue; /* the same verdict twice (a rerun that agreed) */
    int first = !cJSON_GetObjectItemCaseSensitive(have, PG__RK_CHECK_CONFLICTS);
    if (first) {
      (*n_conflicts)++;
      cJSON *self = cJSON_Duplicate(have, 1);
      int bad = !self || add_conflict(have, self, first_label) != 0;
      cJSON_Delete(self);
      if (bad) return -1;
    }
    if (add_conflict(have, c, label) != 0) return -1;
    if (b > a) { /* the worse verdict is the case's: swap the fields in, keep the list */
      cJSON *list = cJSON_DetachItemFromObjectCaseSensitive(have, PG__RK_CHECK_CONFLICTS);
      cJSON *d = cJSON_Duplicate(c, 1);
      if (!d) {
        cJSON_Delete(list);
        return -1;
      }
      cJSON_DeleteItemFromObjectCaseSensitive(d, PG__RK_CHECK_CONFLICTS);
      cJSON_AddItemToObject(d, PG__RK_CHECK_CONFLICTS, list);
      cJSON_ReplaceItemViaPointer(checks, have, d);
    }
  }
  return 0;
}

cJSON *pg_report_combine(const cJSON *const *parts, const char *const *labels, int n,
                         int *n_conflicts) {
  if (n_conflicts) *n_conflicts = 0;
  if (n < 1) return NULL;
  const cJSON *h = parts[0];
  int conflicts = 0, suite_cases = 0;
  cJSON *checks = cJSON_CreateArray();
  if (!checks) return NULL;
  for (int i = 0; i < n; i++) {
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(parts[i], PG__RK_TOP_SELECTION);
    int sc = int_of(sel, PG__RK_SELECTION_SUITE_CASES, 0);
    if (sc > suite_cases) suite_cases = sc;
    if (add_part(checks, parts[i], labels ? labels[i] : NULL, labels ? labels[0] : NULL,
                 &conflicts) != 0) {
      cJSON_Delete(checks);
      return NULL;
    }
  }
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
