/* phasegate runner — the merge of a fleet run (docs/fleet.md "Merging"): the shard
 * directories' manifests checked against the plan, each planned test's verdict from
 * the shards' JUnit files (a test no shard ran is "not run", two differing verdicts a
 * conflict, gates judged on the merged result for a per-test plan), and one tree in
 * today's layout: reports/ (combined by the report room), junit.xml (a suite per shard),
 * report.html, times.json for the next plan, merge.json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"
#include "report/report.h"

enum verdict { V_PASSED, V_FAILED, V_SKIPPED, V_NOT_RUN };
static const char *const verdict_names[] = {"passed", "failed", "skipped", "not run"};

/* One shard directory. */
struct shard {
  const char *dir;
  cJSON *manifest;
  int index;
  const char *host;
  const char *rejected; /* why its results are not used, or NULL */
  char *junit;          /* its JUnit text */
};

/* One <testcase> of a shard's JUnit. */
struct record {
  int shard; /* into shards[] */
  enum verdict v;
  double time_s;
  const char *elem, *elem_end;
  int next; /* the next record of the same test, -1 */
  int emit; /* written into the shard's suite */
  int conflict;
  int test; /* into tests[] */
};

/* One test of the merge. */
struct mtest {
  const char *name;
  int plan_i; /* its index in the plan's tests, -1 without a plan */
  int role; /* enum pg_fleet_role; CASE without a plan */
  int first; /* its first record, -1 */
  enum verdict v;
  const char *why; /* why not run / the conflict, or NULL */
  char why_buf[300];
  int conflict, missing;
};

struct merge {
  struct pg_fleet_plan plan;
  int have_plan, n_shards;
  const char *fingerprint;
  struct shard *shards;
  int n;
  struct record *recs;
  int n_recs, cap_recs;
  struct mtest *tests;
  int n_tests, cap_tests;
  struct pg__fleet_map by_name; /* name -> index into tests */
  char **owned; /* names of tests known only from the shards (no plan) */
  int n_owned, cap_owned;
  int cur; /* the shard whose JUnit is being read */
  int oom;
};

static int add_test(struct merge *m, const char *name, int role, int plan_i) {
  if (pg_array_reserve(&m->tests, &m->cap_tests, m->n_tests + 1, sizeof *m->tests) != 0 ||
      pg__fleet_map_put(&m->by_name, name, m->n_tests) != 0)
    return -1;
  memset(&m->tests[m->n_tests], 0, sizeof *m->tests);
  m->tests[m->n_tests].name = name;
  m->tests[m->n_tests].role = role;
  m->tests[m->n_tests].first = -1;
  m->tests[m->n_tests].plan_i = plan_i;
  m->n_tests++;
  return 0;
}

static enum verdict of_junit(enum pg_report_junit_result r) {
  return r == PG_REPORT_JUNIT_PASSED   ? V_PASSED
         : r == PG_REPORT_JUNIT_FAILED ? V_FAILED
         : r == PG_REPORT_JUNIT_SKIPPED ? V_SKIPPED
                                        : V_NOT_RUN;
}

static int on_case(const struct pg_report_junit_case *c, void *user) {
  struct merge *m = user;
  double at;
  if (!pg__fleet_map_get(&m->by_name, c->name, &at)) {
    /* without a plan every test a shard ran is the merge's; with one, a test the plan
     * does not know cannot be (the fingerprints matched) and is ignored */
    if (m->have_plan) return 0;
    char *name = pg_strdup(c->name);
    if (!name || pg_array_reserve(&m->owned, &m->cap_owned, m->n_owned + 1, sizeof *m->owned) != 0) {
      free(name);
      return m->oom = 1;
    }
    m->owned[m->n_owned++] = name;
    if (add_test(m, name, PG_FLEET_CASE, -1) != 0) return m->oom = 1;
    at = m->n_tests - 1;
  }
  if (pg_array_reserve(&m->recs, &m->cap_recs, m->n_recs + 1, sizeof *m->recs) != 0) return m->oom = 1;
  struct mtest *t = &m->tests[(int)at];
  m->recs[m->n_recs] = (struct record){m->cur, of_junit(c->result), c->time_s, c->elem, c->elem_end, -1, 0, 0, (int)at};
  int *tail = &t->first;
  while (*tail >= 0) tail = &m->recs[*tail].next;
  *tail = m->n_recs++;
  return 0;
}

/* Reads shard directory d's manifest and JUnit; a shard that cannot be used says why. */
static int load_shard(struct merge *m, struct shard *s, struct pg_error *err) {
  char *path = pg_path_join(s->dir, "manifest.json"), *text = NULL;
  size_t len;
  struct pg_error e;
  pg_error_clear(&e);
  s->index = -1;
  if (!path) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (pg_read_file(path, (size_t)1 << 26, &text, &len, &e) != PG_OK) s->rejected = "no manifest.json (the shard did not run or its files are missing)";
  else if (!(s->manifest = cJSON_ParseWithLength(text, len))) s->rejected = "manifest.json is not JSON";
  free(text);
  free(path);
  const cJSON *mf = s->manifest;
  const char *fp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mf, "fingerprint"));
  const char *bfp = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mf, "build_fingerprint"));
  const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mf, "status"));
  const cJSON *idx = cJSON_GetObjectItemCaseSensitive(mf, "shard");
  const cJSON *ns = cJSON_GetObjectItemCaseSensitive(mf, "n_shards");
  s->host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mf, "host"));
  if (!s->host) s->host = "";
  if (s->rejected) return PG_OK;
  if (!fp || !cJSON_IsNumber(idx) || !cJSON_IsNumber(ns)) s->rejected = "manifest.json lacks fingerprint, shard or n_shards";
  else if (!m->fingerprint) m->fingerprint = fp, m->n_shards = ns->valueint;
  if (s->rejected) return PG_OK;
  s->index = idx->valueint;
  if (strcmp(fp, m->fingerprint) != 0) s->rejected = "fingerprint mismatch: planned from another test list";
  else if (!bfp || strcmp(bfp, fp) != 0 || !status || strcmp(status, "ran") != 0)
    s->rejected = "fingerprint mismatch: its build's tests were not the plan's (refused to run)";
  else if (s->index < 0 || s->index >= m->n_shards) s->rejected = "shard index outside the plan";
  if (s->rejected) return PG_OK;
  path = pg_path_join(s->dir, "junit.xml");
  if (!path) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (pg_read_file(path, (size_t)1 << 30, &s->junit, &len, &e) != PG_OK) s->rejected = "no junit.xml (ctest did not finish)";
  free(path);
  if (s->rejected) return PG_OK;
  m->cur = (int)(s - m->shards);
  pg_report_junit_each(s->junit, on_case, m);
  return m->oom ? pg_error_set(err, PG_ENOMEM, "out of memory") : PG_OK;
}

/* The verdict of a test from its records: one, the same several times, or a conflict
 * (two shards disagree; a fixture test every shard ran takes the worst instead). */
static void judge_records(struct merge *m, struct mtest *t) {
  if (t->first < 0) {
    t->v = V_NOT_RUN;
    if (t->role == PG_FLEET_GATE && m->have_plan && !m->plan.by_op) return; /* judged below */
    t->missing = 1;
    t->why = "not run: no shard ran it (a missing or rejected shard)";
    return;
  }
  struct record *r0 = &m->recs[t->first];
  t->v = r0->v;
  r0->emit = 1;
  for (int i = r0->next; i >= 0; i = m->recs[i].next) {
    struct record *r = &m->recs[i];
    if (r->v == r0->v) continue;
    if (t->role == PG_FLEET_FIXTURE) { /* set up on every shard: one failure is the verdict */
      if (r->v == V_FAILED) t->v = V_FAILED;
      continue;
    }
    t->conflict = 1;
  }
  if (!t->conflict) return;
  t->v = V_FAILED;
  int n = snprintf(t->why_buf, sizeof t->why_buf, "conflict:");
  for (int i = t->first; i >= 0; i = m->recs[i].next) {
    struct record *r = &m->recs[i];
    const struct shard *s = &m->shards[r->shard];
    r->emit = r->conflict = 1;
    if (n < (int)sizeof t->why_buf)
      n += snprintf(t->why_buf + n, sizeof t->why_buf - (size_t)n, " %s on shard %d (%s, %s);",
                    verdict_names[r->v], s->index, s->host, s->dir);
  }
  t->why = t->why_buf;
}

/* fixture -> its setup tests (any role), sorted rows and a map to the first. */
struct setup_row {
  const char *fixture;
  int test;
};
static int setup_cmp(const void *a, const void *b) {
  const struct setup_row *x = a, *y = b;
  int c = strcmp(x->fixture, y->fixture);
  return c ? c : x->test - y->test;
}

/* 1 when every setup test of fixture f has a verdict in `ok_mask` (1 << verdict); `gate`
 * set: looks only at gates' verdicts (a test is blocked by a gate that did not pass). */
static int setups_ok(const struct merge *m, const struct setup_row *rows, int n_rows,
                     const struct pg__fleet_map *first, const char *f, int gates_only,
                     const char **culprit) {
  double at;
  if (!pg__fleet_map_get(first, f, &at)) return 1;
  for (int r = (int)at; r < n_rows && strcmp(rows[r].fixture, f) == 0; r++) {
    const struct mtest *s = &m->tests[rows[r].test];
    if (gates_only && s->role != PG_FLEET_GATE) continue;
    int ok = gates_only ? s->v == V_PASSED : s->v == V_PASSED || s->v == V_SKIPPED;
    if (!ok) {
      *culprit = s->name;
      return 0;
    }
  }
  return 1;
}

/* Gates of a per-test plan, judged on the merged verdicts as ctest judges them in one
 * run (docs/fleet.md "Phase gates and fixtures"): a gate passes when every test that
 * sets up a fixture it requires passed or was skipped; a test that requires a fixture
 * a gate that did not pass sets up is "not run". Verdicts only fall, so it settles. */
static int judge_gates(struct merge *m) {
  int n_rows = 0, cap = 0;
  struct setup_row *rows = NULL;
  struct pg__fleet_map first = {0};
  for (int i = 0; i < m->n_tests; i++) {
    const struct pg_fleet_test *t = &m->plan.tests[m->tests[i].plan_i];
    for (int k = 0; k < t->n_setup; k++) {
      if (pg_array_reserve(&rows, &cap, n_rows + 1, sizeof *rows) != 0) goto oom;
      rows[n_rows++] = (struct setup_row){t->setup[k], i};
    }
    if (m->tests[i].role == PG_FLEET_GATE) m->tests[i].v = V_PASSED;
  }
  if (n_rows) qsort(rows, (size_t)n_rows, sizeof *rows, setup_cmp);
  for (int i = n_rows - 1; i >= 0; i--)
    if (pg__fleet_map_put(&first, rows[i].fixture, i) != 0) goto oom;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < m->n_tests; i++) {
      struct mtest *t = &m->tests[i];
      const struct pg_fleet_test *pt = &m->plan.tests[t->plan_i];
      if (t->v == V_NOT_RUN && t->role != PG_FLEET_GATE) continue;
      const char *culprit = NULL;
      int ok = 1;
      for (int k = 0; k < pt->n_required && ok; k++)
        ok = setups_ok(m, rows, n_rows, &first, pt->required[k], t->role != PG_FLEET_GATE, &culprit);
      if (ok || t->v == V_NOT_RUN) continue;
      t->v = V_NOT_RUN;
      for (int r = t->first; r >= 0; r = m->recs[r].next) m->recs[r].emit = 0;
      snprintf(t->why_buf, sizeof t->why_buf,
               t->role == PG_FLEET_GATE ? "not run: %s did not pass (gate judged on the merged result)"
                                        : "not run: gate %s did not pass in the merged result",
               culprit ? culprit : "?");
      t->why = t->why_buf;
      changed = 1;
    }
  }
  free(rows);
  pg__fleet_map_reset(&first);
  return 0;
oom:
  free(rows);
  pg__fleet_map_reset(&first);
  return -1;
}

/* A <testcase> of the merge's own suite: a verdict no shard's record carries. */
static void merge_case(FILE *f, const struct mtest *t) {
  char *name = pg_report_xml_attr(t->name), *why = pg_report_xml_attr(t->why ? t->why : "");
  fprintf(f, "\t<testcase name=\"%s\" classname=\"%s\" time=\"0\" status=\"%s\">\n", name ? name : "",
          name ? name : "", t->v == V_PASSED ? "run" : t->v == V_FAILED ? "fail" : "notrun");
  if (t->v == V_FAILED) fprintf(f, "\t\t<failure message=\"%s\"/>\n", why ? why : "");
  else if (t->v != V_PASSED) fprintf(f, "\t\t<skipped message=\"%s\"/>\n", why ? why : "");
  /* ctest's shape: readers (the verify targets' summary) expect an element inside */
  fprintf(f, "\t\t<system-out>phasegate merge: %s</system-out>\n\t</testcase>\n",
          t->v == V_PASSED ? "every test it requires passed (a gate judged on the merged result)"
                           : why ? why : "");
  free(name);
  free(why);
}

/* A record copied into its shard's suite; a conflict gets a property that says so. */
static void shard_case(FILE *f, const struct record *r, const char *why) {
  const char *props = NULL, *close = NULL;
  for (const char *p = r->elem; p < r->elem_end; p++) {
    size_t left = (size_t)(r->elem_end - p);
    if (!props && left >= 12 && strncmp(p, "<properties>", 12) == 0) props = p + 12;
    if (left >= 11 && strncmp(p, "</testcase>", 11) == 0) close = p;
  }
  const char *at = !r->conflict ? NULL : props ? props : close;
  if (!at) {
    fprintf(f, "\t%.*s\n", (int)(r->elem_end - r->elem), r->elem);
    return;
  }
  char *w = pg_report_xml_attr(why);
  fprintf(f, "\t%.*s%s<property name=\"phasegate.conflict\" value=\"%s\"/>%s%.*s\n",
          (int)(at - r->elem), r->elem, props ? "" : "<properties>", w ? w : "",
          props ? "" : "</properties>", (int)(r->elem_end - at), at);
  free(w);
}

static void count(const struct merge *m, int shard, int *tests, int *failures, int *skipped) {
  *tests = *failures = *skipped = 0;
  for (int i = 0; i < m->n_tests; i++) {
    const struct mtest *t = &m->tests[i];
    int in = 0;
    for (int r = t->first; r >= 0; r = m->recs[r].next)
      if (m->recs[r].emit && m->recs[r].shard == shard) {
        in = 1;
        *failures += m->recs[r].v == V_FAILED;
        *skipped += m->recs[r].v == V_SKIPPED || m->recs[r].v == V_NOT_RUN;
      }
    if (shard < 0 && !in) {
      int emitted = 0;
      for (int r = t->first; r >= 0; r = m->recs[r].next) emitted |= m->recs[r].emit;
      if (emitted) continue;
      in = 1;
      *failures += t->v == V_FAILED;
      *skipped += t->v == V_SKIPPED || t->v == V_NOT_RUN;
    }
    *tests += in;
  }
}

static char *junit_text(const struct merge *m, const char *host) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  int tests, failures, skipped;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"phasegate merge\">\n");
  for (int s = 0; s < m->n; s++) {
    const struct shard *sh = &m->shards[s];
    if (sh->rejected) continue;
    count(m, s, &tests, &failures, &skipped);
    char *h = pg_report_xml_attr(sh->host), *dir = pg_report_xml_attr(sh->dir);
    const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sh->manifest, "started_at"));
    fprintf(f, "<testsuite name=\"shard %d (%s)\" hostname=\"%s\" tests=\"%d\" failures=\"%d\" "
            "skipped=\"%d\" disabled=\"0\" timestamp=\"%s\">\n", sh->index, dir ? dir : "", h ? h : "",
            tests, failures, skipped, ts ? ts : "");
    free(h);
    free(dir);
    for (int r = 0; r < m->n_recs; r++) {
      const struct record *rc = &m->recs[r];
      if (rc->shard != s || !rc->emit) continue;
      const struct mtest *t = &m->tests[rc->test];
      shard_case(f, rc, t->why ? t->why : "");
    }
    fprintf(f, "</testsuite>\n");
  }
  count(m, -1, &tests, &failures, &skipped);
  char *h = pg_report_xml_attr(host);
  fprintf(f, "<testsuite name=\"merge\" hostname=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" disabled=\"0\">\n",
          h ? h : "", tests, failures, skipped);
  free(h);
  for (int i = 0; i < m->n_tests; i++) {
    const struct mtest *t = &m->tests[i];
    int emitted = 0;
    for (int r = t->first; r >= 0; r = m->recs[r].next) emitted |= m->recs[r].emit;
    if (!emitted) merge_case(f, t);
  }
  fprintf(f, "</testsuite>\n</testsuites>\n");
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* The shard a report file was found under (its reports/ directory), or -1. */
static int shard_of_path(const struct merge *m, const char *path) {
  for (int s = 0; s < m->n; s++) {
    size_t l = strlen(m->shards[s].dir);
    if (!m->shards[s].rejected && strncmp(path, m->shards[s].dir, l) == 0 &&
        strncmp(path + l + (m->shards[s].dir[l - 1] != '/'), "reports/", 8) == 0)
      return s;
  }
  return -1;
}

/* out/reports/<registration>/M<k>/evaluation_report.json of one group of parts. */
static int write_group(const char *out, cJSON *const *parts, const char *const *labels, int n,
                       int *conflicts, struct pg_error *err) {
  int nc = 0;
  cJSON *r = pg_report_combine((const cJSON *const *)parts, labels, n, &nc);
  if (!r) return pg_error_set(err, PG_ENOMEM, "out of memory combining reports");
  *conflicts += nc;
  pg_report_sanitize(r);
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "up_to_module");
  char *dir = pg_path_fmt("%s/reports/%s/M%d", out, pg_report_name(r), cJSON_IsNumber(k) ? k->valueint : 0);
  char *path = dir ? pg_path_join(dir, "evaluation_report.json") : NULL;
  char *text = cJSON_Print(r);
  int rc = dir && path && text ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK && pg_mkdir_p(dir) != 0) rc = pg_error_set(err, PG_EIO, "%s: cannot create the directory", dir);
  if (rc == PG_OK) rc = pg__fleet_write_file(path, text, err);
  free(dir);
  free(path);
  free(text);
  cJSON_Delete(r);
  return rc;
}

/* The shards' reports, one per registration and phase (pg_report_combine), then the
 * HTML page of the merged tree. */
static int merge_reports(const struct merge *m, const char *out, int *conflicts, struct pg_error *err) {
  char **paths = calloc((size_t)m->n + 1, sizeof *paths);
  int np = 0, rc = PG_OK;
  for (int s = 0; paths && s < m->n; s++) {
    char *p = m->shards[s].rejected ? NULL : pg_path_join(m->shards[s].dir, "reports");
    if (p && pg_is_dir(p)) paths[np++] = p;
    else free(p);
  }
  struct pg_report_set set;
  pg_report_set_init(&set);
  struct pg_error e;
  pg_error_clear(&e);
  if (!paths) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  else if (np && pg_report_set_load((const char *const *)paths, np, &set, &e) != PG_OK && e.code != PG_ENOTFOUND)
    rc = pg_error_set(err, e.code, "%s", e.message);
  cJSON **parts = calloc((size_t)set.n + 1, sizeof *parts);
  const char **labels = calloc((size_t)set.n + 1, sizeof *labels);
  char (*label_buf)[300] = calloc((size_t)set.n + 1, sizeof *label_buf);
  int *done = calloc((size_t)set.n + 1, sizeof *done);
  if (rc == PG_OK && (!parts || !labels || !label_buf || !done)) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (int i = 0; rc == PG_OK && i < set.n; i++) {
    if (done[i]) continue;
    const cJSON *a = set.files[i].json;
    const cJSON *ka = cJSON_GetObjectItemCaseSensitive(a, "up_to_module");
    int n = 0;
    for (int j = i; j < set.n; j++) {
      const cJSON *b = set.files[j].json, *kb = cJSON_GetObjectItemCaseSensitive(b, "up_to_module");
      if (done[j] || strcmp(pg_report_name(a), pg_report_name(b)) != 0 || ka->valueint != kb->valueint) continue;
      done[j] = 1;
      int s = shard_of_path(m, set.files[j].path);
      snprintf(label_buf[n], sizeof label_buf[n], "shard %d (%s, %s)", s >= 0 ? m->shards[s].index : -1,
               s >= 0 ? m->shards[s].host : "?", s >= 0 ? m->shards[s].dir : set.files[j].path);
      labels[n] = label_buf[n];
      parts[n++] = set.files[j].json;
    }
    rc = write_group(out, parts, labels, n, conflicts, err);
  }
  free(parts);
  free(labels);
  free(label_buf);
  free(done);
  pg_report_set_reset(&set);
  for (int i = 0; i < np; i++) free(paths[i]);
  free(paths);
  return rc;
}

/* report.html of the merged tree (no reports: no page). */
static int write_html(const char *out, struct pg_error *err) {
  char *reports = pg_path_join(out, "reports"), *page = pg_path_join(out, "report.html");
  int rc = reports && page ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
  struct pg_report_set set;
  pg_report_set_init(&set);
  struct pg_error e;
  pg_error_clear(&e);
  if (rc == PG_OK && pg_is_dir(reports) && pg_report_set_load((const char *const *)&reports, 1, &set, &e) == PG_OK) {
    char *html = pg_report_html(&set);
    rc = html ? pg__fleet_write_file(page, html, err) : pg_error_set(err, PG_ENOMEM, "out of memory");
    free(html);
  } else if (rc == PG_OK && e.code && e.code != PG_ENOTFOUND)
    rc = pg_error_set(err, e.code, "merged reports: %s", e.message);
  pg_report_set_reset(&set);
  free(reports);
  free(page);
  return rc;
}

/* times.json (the next plan's first source) and merge.json (every verdict and why). */
static int write_json(const struct merge *m, const char *out, const struct pg_fleet_merge_result *r,
                      const int *present, struct pg_error *err) {
  cJSON *times = cJSON_CreateObject(), *mj = cJSON_CreateObject();
  cJSON *tt = cJSON_AddObjectToObject(times, "tests");
  cJSON_AddNumberToObject(times, "schema_version", 1);
  cJSON_AddNumberToObject(mj, "schema_version", PG_FLEET_PLAN_SCHEMA);
  cJSON_AddStringToObject(mj, "fingerprint", m->fingerprint ? m->fingerprint : "");
  cJSON_AddNumberToObject(mj, "n_shards", m->n_shards);
  cJSON_AddBoolToObject(mj, "complete", !r->incomplete);
  cJSON_AddNumberToObject(mj, "exit_code", r->exit_code);
  const char *keys[] = {"tests", "passed", "failed", "skipped", "not_run", "conflicts"};
  const int vals[] = {r->tests, r->passed, r->failed, r->skipped, r->not_run, r->conflicts};
  for (int i = 0; i < 6; i++) cJSON_AddNumberToObject(mj, keys[i], vals[i]);
  cJSON *sh = cJSON_AddArrayToObject(mj, "shards"), *missing = cJSON_AddArrayToObject(mj, "missing_shards");
  for (int s = 0; s < m->n; s++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToArray(sh, e);
    cJSON_AddStringToObject(e, "dir", m->shards[s].dir);
    cJSON_AddNumberToObject(e, "index", m->shards[s].index);
    cJSON_AddStringToObject(e, "host", m->shards[s].host);
    if (m->shards[s].rejected) cJSON_AddStringToObject(e, "rejected", m->shards[s].rejected);
  }
  for (int k = 0; k < m->n_shards; k++)
    if (!present[k]) cJSON_AddItemToArray(missing, cJSON_CreateNumber(k));
  cJSON *tests = cJSON_AddArrayToObject(mj, "results");
  for (int i = 0; i < m->n_tests; i++) {
    const struct mtest *t = &m->tests[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToArray(tests, e);
    cJSON_AddStringToObject(e, "name", t->name);
    cJSON_AddStringToObject(e, "verdict", verdict_names[t->v]);
    if (t->conflict) cJSON_AddBoolToObject(e, "conflict", 1);
    if (t->why) cJSON_AddStringToObject(e, "why", t->why);
    cJSON *on = cJSON_AddArrayToObject(e, "shards");
    for (int rr = t->first; rr >= 0; rr = m->recs[rr].next) {
      const struct record *rec = &m->recs[rr];
      cJSON_AddItemToArray(on, cJSON_CreateNumber(m->shards[rec->shard].index));
      if (rr == t->first && rec->v != V_NOT_RUN) cJSON_AddNumberToObject(tt, t->name, rec->time_s);
    }
  }
  char *a = cJSON_Print(times), *b = cJSON_Print(mj);
  cJSON_Delete(times);
  cJSON_Delete(mj);
  char *pa = pg_path_join(out, "times.json"), *pb = pg_path_join(out, "merge.json");
  int rc = a && b && pa && pb ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) rc = pg__fleet_write_file(pa, a, err);
  if (rc == PG_OK) rc = pg__fleet_write_file(pb, b, err);
  free(a);
  free(b);
  free(pa);
  free(pb);
  return rc;
}

static void merge_reset(struct merge *m) {
  for (int s = 0; s < m->n; s++) {
    cJSON_Delete(m->shards[s].manifest);
    free(m->shards[s].junit);
  }
  free(m->shards);
  free(m->recs);
  free(m->tests);
  for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  pg__fleet_map_reset(&m->by_name);
  pg_fleet_plan_reset(&m->plan);
}

/* Counts, completeness and the exit code. */
static void tally(const struct merge *m, const int *present, struct pg_fleet_merge_result *r) {
  for (int k = 0; k < m->n_shards; k++) r->missing_shards += !present[k];
  for (int s = 0; s < m->n; s++) r->rejected_shards += m->shards[s].rejected != NULL;
  for (int i = 0; i < m->n_tests; i++) {
    const struct mtest *t = &m->tests[i];
    r->tests++;
    r->passed += t->v == V_PASSED;
    r->failed += t->v == V_FAILED;
    r->skipped += t->v == V_SKIPPED;
    r->not_run += t->v == V_NOT_RUN;
    r->conflicts += t->conflict;
    r->incomplete |= t->missing;
  }
  r->incomplete |= r->missing_shards > 0 || r->rejected_shards > 0 || !m->fingerprint;
  r->exit_code = r->incomplete ? 2 : r->failed || r->not_run ? 1 : 0;
}

int pg_fleet_merge(const char *plan_path, const char *out_dir, const char *const *shard_dirs,
                   int n, struct pg_fleet_merge_result *r, struct pg_error *err) {
  memset(r, 0, sizeof *r);
  struct merge m;
  memset(&m, 0, sizeof m);
  pg_fleet_plan_init(&m.plan);
  int rc = PG_OK;
  if (plan_path) {
    rc = pg_fleet_plan_read(plan_path, &m.plan, err);
    m.have_plan = rc == PG_OK;
    m.fingerprint = m.plan.fingerprint;
    m.n_shards = m.plan.n_shards;
    for (int i = 0; rc == PG_OK && i < m.plan.n_tests; i++)
      if (m.plan.tests[i].role != PG_FLEET_OUT && add_test(&m, m.plan.tests[i].name, (int)m.plan.tests[i].role, i) != 0)
        rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  if (rc == PG_OK && !(m.shards = calloc((size_t)(n ? n : 1), sizeof *m.shards))) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (int s = 0; rc == PG_OK && s < n; s++) {
    m.shards[s].dir = shard_dirs[s];
    m.n = s + 1;
    rc = load_shard(&m, &m.shards[s], err);
  }
  int *present = rc == PG_OK ? calloc((size_t)(m.n_shards > 0 ? m.n_shards : 1), sizeof *present) : NULL;
  if (rc == PG_OK && !present) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (int s = 0; rc == PG_OK && s < m.n; s++)
    if (!m.shards[s].rejected) present[m.shards[s].index] = 1;
  for (int i = 0; rc == PG_OK && i < m.n_tests; i++) judge_records(&m, &m.tests[i]);
  if (rc == PG_OK && m.have_plan && !m.plan.by_op && judge_gates(&m) != 0) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK && pg_mkdir_p(out_dir) != 0) rc = pg_error_set(err, PG_EIO, "%s: cannot create the directory", out_dir);
  int report_conflicts = 0;
  if (rc == PG_OK) rc = merge_reports(&m, out_dir, &report_conflicts, err);
  if (rc == PG_OK) rc = write_html(out_dir, err);
  if (rc == PG_OK) {
    tally(&m, present, r);
    char host[256];
    pg__fleet_host(host, sizeof host);
    char *junit = junit_text(&m, host), *path = pg_path_join(out_dir, "junit.xml");
    rc = junit && path ? pg__fleet_write_file(path, junit, err) : pg_error_set(err, PG_ENOMEM, "out of memory");
    free(junit);
    free(path);
  }
  if (rc == PG_OK) rc = write_json(&m, out_dir, r, present, err);
  free(present);
  merge_reset(&m);
  return rc;
}
