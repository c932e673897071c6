/* phasegate runner — a report's lifetime (lifetime.h, docs/report.md "One run, one
 * verdict").
 *
 * A report holds the cases of one run: pg_run's --jobs workers share its run id, and
 * the case tests of one ctest invocation share the session id the registration's
 * report/session test wrote. Anything else found at the report's path is another run's
 * verdict: it moves to the history beside the report, so a subset run, a fixed impl or
 * a refused run never inherits old cases, and the old verdict is still there to read.
 */
#include "report/lifetime.h"
#include "report/report_keys.h"
#include "base/base.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pg__report_same_run(const cJSON *prev, const struct pg_run_phase *m) {
  if (!m->run_id && !m->session) return 1;
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_RUN);
  const char *id = pg__report_str(run, PG__RK_RUN_ID), *session = pg__report_str(run, PG__RK_RUN_SESSION);
  if (m->session) return session && strcmp(session, m->session) == 0;
  return id && m->run_id && strcmp(id, m->run_id) == 0;
}

/* A file name's part from report text: [A-Za-z0-9.-] kept, anything else '-'. */
static void name_part(const char *s, char *out, size_t size) {
  size_t n = 0;
  for (; s && *s && n + 1 < size; s++)
    out[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                       *s == '.' || *s == '-'
                   ? *s
                   : '-';
  out[n] = '\0';
}

static int by_name_desc(const void *a, const void *b) {
  return strcmp(*(char *const *)b, *(char *const *)a);
}

/* Keeps the newest `keep` files of dir whose names start with prefix (the names sort
 * by time: they begin with the UTC start). */
static void prune(const char *dir, const char *prefix, int keep) {
  DIR *d = opendir(dir);
  if (!d) return;
  char **names = NULL;
  int n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    if (pg_array_reserve(&names, &cap, n, sizeof *names) != 0) break;
    if (!(names[n] = pg_strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (n > 1) qsort(names, (size_t)n, sizeof *names, by_name_desc);
  for (int i = 0; i < n; i++) {
    if (i >= keep) {
      char *p = pg_path_fmt("%s/%s", dir, names[i]);
      if (p) unlink(p);
      free(p);
    }
    free(names[i]);
  }
  free(names);
}

int pg__report_to_history(const char *path, const cJSON *prev, struct pg_error *err) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t stem = strlen(base);
  if (stem > 5 && strcmp(base + stem - 5, ".json") == 0) stem -= 5;
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_RUN);
  const char *when = pg__report_str(run, PG__RK_RUN_STARTED_AT);
  if (!when) when = pg__report_str(prev, PG__RK_TOP_UPDATED_AT);
  char w[64], id[64];
  name_part(when ? when : "unknown", w, sizeof w);
  name_part(pg__report_str(run, PG__RK_RUN_ID) ? pg__report_str(run, PG__RK_RUN_ID) : "unknown", id, sizeof id);
  char *dir = slash ? pg_path_fmt("%.*s/history", (int)(slash - path), path)
                    : pg_strdup("history");
  char *prefix = pg_path_fmt("%.*s.", (int)stem, base);
  char *to = dir && prefix ? pg_path_fmt("%s/%s%s.%s.json", dir, prefix, w, id) : NULL;
  int rc = PG_OK;
  if (!to) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  else if (pg_mkdir_p(dir) != 0 || rename(path, to) != 0)
    rc = pg_error_set(err, PG_EIO, "the previous report could not be kept in %s (%s): it is "
                      "replaced", dir, strerror(errno));
  else
    prune(dir, prefix, PG__REPORT_HISTORY_KEEP);
  free(to);
  free(prefix);
  free(dir);
  return rc;
}

/* cJSON's adders fail quietly: the builders below count a failure in *oom. */
static void add_s(cJSON *o, const char *k, const char *v, int *oom) {
  if (!cJSON_AddStringToObject(o, k, v ? v : "")) (*oom)++;
}

static void add_time(cJSON *o, const char *k, double t, int *oom) {
  if (t <= 0) return;
  char buf[64];
  pg_wall_format(t, buf, sizeof buf);
  add_s(o, k, buf, oom);
}

/* The comma-separated modes as an array of names. */
static void add_modes(cJSON *o, const char *k, const char *modes, int *oom) {
  cJSON *a = cJSON_AddArrayToObject(o, k);
  if (!a) (*oom)++;
  for (const char *p = modes; p && *p && a;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char mode[64];
    snprintf(mode, sizeof mode, "%.*s", (int)(len < 63 ? len : 63), p);
    if (!cJSON_AddItemToArray(a, cJSON_CreateString(mode))) (*oom)++;
    p = e ? e + 1 : p + len;
  }
}

/* name: what the impl said it ran on, or NULL: null says "not known", not "none" */
static void add_device(cJSON *o, const struct pg_run_phase *m, const char *name, int *oom) {
  cJSON *d = cJSON_AddObjectToObject(o, PG__RK_RUN_DEVICE);
  if (!d) {
    (*oom)++;
    return;
  }
  add_s(d, PG__RK_DEVICE_KIND, m->device_kind ? m->device_kind : "host", oom);
  if (!cJSON_AddNumberToObject(d, PG__RK_DEVICE_INDEX, m->device_index)) (*oom)++;
  if (name && *name) add_s(d, PG__RK_DEVICE_NAME, name, oom);
  else if (!cJSON_AddNullToObject(d, PG__RK_DEVICE_NAME)) (*oom)++;
}

/* id, session, host, device: what a check's run and the report's run share. */
static cJSON *run_head(const struct pg_run_phase *m, const char *device_name, int *oom) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  add_s(o, PG__RK_RUN_ID, m->run_id, oom);
  if (m->session) add_s(o, PG__RK_RUN_SESSION, m->session, oom);
  add_s(o, PG__RK_RUN_HOST, m->host, oom);
  add_device(o, m, device_name, oom);
  /* python: impls and goldens: the interpreter and the torch / torch_npu / pypto
   * versions it has (what a result depends on besides the kernel) */
  cJSON *py = m->python ? cJSON_Parse(m->python) : NULL;
  if (py && !cJSON_AddItemToObject(o, PG__RK_RUN_PYTHON, py)) {
    cJSON_Delete(py);
    (*oom)++;
  }
  return o;
}

static cJSON *done(cJSON *o, int oom) {
  if (o && !oom) return o;
  cJSON_Delete(o);
  return NULL;
}

/* The device name the checks' runs agree on: the first one known (one run has one
 * device; a session's per-case tests got theirs from the same resource). */
static const char *checks_device_name(const cJSON *checks) {
  const cJSON *c;
  cJSON_ArrayForEach(c, checks) {
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_RUN);
    const char *name =
        pg__report_str(cJSON_GetObjectItemCaseSensitive(run, PG__RK_RUN_DEVICE), PG__RK_DEVICE_NAME);
    if (name && *name) return name;
  }
  return NULL;
}

cJSON *pg__report_run_json(const struct pg_run_phase *m, const cJSON *prev_run,
                           const cJSON *checks) {
  int oom = 0;
  cJSON *o = run_head(m, checks_device_name(checks), &oom);
  if (!o) return NULL;
  /* a session's report began with its first run */
  const char *first = pg__report_str(prev_run, PG__RK_RUN_STARTED_AT);
  char now[64] = "";
  if (m->started_ms > 0) pg_wall_format(m->started_ms, now, sizeof now);
  add_s(o, PG__RK_RUN_STARTED_AT, first && (!now[0] || strcmp(first, now) < 0) ? first : now,
        &oom);
  add_time(o, PG__RK_RUN_ENDED_AT, m->ended_ms > 0 ? m->ended_ms : pg_wall_ms(), &oom);
  add_s(o, PG__RK_RUN_IMPL, m->impl_spec, &oom);
  add_modes(o, PG__RK_RUN_MODES, m->modes, &oom);
  add_s(o, PG__RK_RUN_TOOL_VERSION, m->tool_version ? m->tool_version : "unknown", &oom);
  return done(o, oom);
}

cJSON *pg__report_case_run_json(const struct pg_run_phase *m, const struct pg_case_result *r) {
  int oom = 0;
  const char *name = NULL;
  for (int i = 0; i < r->n_modes && !name; i++)
    if (r->modes[i].device_name[0]) name = r->modes[i].device_name;
  cJSON *o = run_head(m, name, &oom);
  if (!o) return NULL;
  add_time(o, PG__RK_RUN_STARTED_AT, r->started_ms, &oom);
  add_time(o, PG__RK_RUN_ENDED_AT, r->ended_ms, &oom);
  return done(o, oom);
}

static int int_cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

cJSON *pg__report_selection_json(const struct pg_run_phase *m, const cJSON *checks) {
  int oom = 0, seen[64] = {0}, levels[64], n_levels = 0, total = 0;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON *lv = cJSON_AddArrayToObject(o, PG__RK_SELECTION_LEVELS);
  cJSON *ids = cJSON_AddArrayToObject(o, PG__RK_SELECTION_CASES);
  if (!lv || !ids) oom++;
  const cJSON *c;
  cJSON_ArrayForEach(c, checks) {
    total++;
    const char *id = pg__report_str(c, PG__RK_CHECK_ID);
    if (id && ids && !cJSON_AddItemToArray(ids, cJSON_CreateString(id))) oom++;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_LEVEL);
    int level = cJSON_IsNumber(l) ? l->valueint : -1;
    if (level >= 0 && level < 64 && !seen[level]) seen[level] = 1, levels[n_levels++] = level;
  }
  qsort(levels, (size_t)n_levels, sizeof *levels, int_cmp);
  for (int i = 0; i < n_levels && lv; i++)
    if (!cJSON_AddItemToArray(lv, cJSON_CreateNumber(levels[i]))) oom++;
  add_modes(o, PG__RK_SELECTION_MODES, m->modes, &oom);
  if (m->suite_cases > 0) {
    if (!cJSON_AddBoolToObject(o, PG__RK_SELECTION_COMPLETE, total == m->suite_cases)) oom++;
    if (!cJSON_AddNumberToObject(o, PG__RK_SELECTION_SUITE_CASES, m->suite_cases)) oom++;
  }
  return done(o, oom);
}

cJSON *pg__report_findings_json(const struct pg_diags *d) {
  static const char *const sev[] = {"note", "warning", "error"};
  int oom = 0;
  cJSON *a = cJSON_CreateArray();
  if (!a) return NULL;
  for (int i = 0; d && i < d->count; i++) {
    const struct pg_diag *g = &d->items[i];
    if (g->severity == PG_SEV_NOTE) continue;
    cJSON *f = cJSON_CreateObject();
    if (!f || !cJSON_AddItemToArray(a, f)) {
      cJSON_Delete(f);
      oom++;
      break;
    }
    add_s(f, PG__RK_FINDING_SEVERITY, sev[g->severity], &oom);
    add_s(f, PG__RK_FINDING_MESSAGE, g->message, &oom);
    if (g->file) add_s(f, PG__RK_FINDING_FILE, g->file, &oom);
    if (g->line > 0 && !cJSON_AddNumberToObject(f, PG__RK_FINDING_LINE, g->line)) oom++;
    if (g->column > 0 && !cJSON_AddNumberToObject(f, PG__RK_FINDING_COLUMN, g->column)) oom++;
    if (g->rule) add_s(f, PG__RK_FINDING_RULE, g->rule, &oom);
  }
  return done(a, oom);
}

static int check_order(const cJSON *a, const cJSON *b) {
  const cJSON *ia = cJSON_GetObjectItemCaseSensitive(a, PG__RK_CHECK_SUITE_INDEX);
  const cJSON *ib = cJSON_GetObjectItemCaseSensitive(b, PG__RK_CHECK_SUITE_INDEX);
  double x = cJSON_IsNumber(ia) ? ia->valuedouble : 1e18, y = cJSON_IsNumber(ib) ? ib->valuedouble : 1e18;
  if (x != y) return x < y ? -1 : 1;
  const char *sa = pg__report_str(a, PG__RK_CHECK_ID), *sb = pg__report_str(b, PG__RK_CHECK_ID);
  return strcmp(sa ? sa : "", sb ? sb : "");
}

int pg__report_sort_checks(cJSON *checks) {
  int n = cJSON_GetArraySize(checks);
  cJSON **items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
  if (!items) return -1;
  for (int i = 0; i < n; i++) items[i] = cJSON_DetachItemFromArray(checks, 0);
  for (int i = 1; i < n; i++) { /* stable insertion sort: a few hundred entries at most */
    cJSON *x = items[i];
    int j = i - 1;
    while (j >= 0 && check_order(items[j], x) > 0) {
      items[j + 1] = items[j];
      j--;
    }
    items[j + 1] = x;
  }
  int lost = 0;
  for (int i = 0; i < n; i++)
    if (!cJSON_AddItemToArray(checks, items[i])) {
      cJSON_Delete(items[i]);
      lost++;
    }
  free(items);
  return lost ? -1 : 0;
}
