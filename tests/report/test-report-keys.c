/* phasegate tests — the one table of report keys (runner/report/report_keys.h): every key
 * the writer puts in a report with everything in it is in the table, and the loader's
 * check is the table's: each key of each list, given a value of the wrong type (or, when
 * required, taken away), makes pg_report_parse refuse the report, naming the key. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "report/report.h"
#include "report/report_keys.h"
#include "run/run.h"

static const struct pg__report_key top[] = {PG__REPORT_KEYS_TOP(PG__RK_ENTRY)};
static const struct pg__report_key check[] = {PG__REPORT_KEYS_CHECK(PG__RK_ENTRY)};
static const struct pg__report_key failure[] = {PG__REPORT_KEYS_FAILURE(PG__RK_ENTRY)};
static const struct pg__report_key mode[] = {PG__REPORT_KEYS_MODE(PG__RK_ENTRY)};
static const struct pg__report_key tensor[] = {PG__REPORT_KEYS_TENSOR(PG__RK_ENTRY)};
static const struct pg__report_key hint[] = {PG__REPORT_KEYS_HINT(PG__RK_ENTRY)};
static const struct pg__report_key map[] = {PG__REPORT_KEYS_ERROR_MAP(PG__RK_ENTRY)};
static const struct pg__report_key hist[] = {PG__REPORT_KEYS_HISTOGRAM(PG__RK_ENTRY)};
static const struct pg__report_key bucket[] = {PG__REPORT_KEYS_BUCKET(PG__RK_ENTRY)};

/* A list, and how to reach its object in the report (a path of keys and indices). */
struct list {
  const char *name;
  const struct pg__report_key *k;
  size_t n;
  const char *path[8]; /* "#0": element 0 of an array */
};
#define LIST(name, a, ...) {name, a, sizeof a / sizeof *a, {__VA_ARGS__}}
static const struct list lists[] = {
    LIST("top", top, NULL),
    LIST("check", check, "checks", "#0", NULL),
    LIST("failure", failure, "checks", "#0", "failure", NULL),
    LIST("first_failure", failure, "first_failure", NULL),
    LIST("mode", mode, "checks", "#0", "modes", "#0", NULL),
    LIST("tensor", tensor, "checks", "#0", "per_tensor", "#0", NULL),
    LIST("hint", hint, "checks", "#0", "per_tensor", "#0", "hints", "#0", NULL),
    LIST("error_map", map, "checks", "#0", "per_tensor", "#0", "error_map", NULL),
    LIST("histogram", hist, "checks", "#0", "per_tensor", "#0", "error_histogram", NULL),
    LIST("bucket", bucket, "checks", "#0", "per_tensor", "#0", "error_histogram", "buckets",
         "#0", NULL),
};

static cJSON *object_at(cJSON *report, const struct list *l) {
  cJSON *o = report;
  for (int i = 0; o && l->path[i]; i++)
    o = l->path[i][0] == '#' ? cJSON_GetArrayItem(o, atoi(l->path[i] + 1))
                             : cJSON_GetObjectItemCaseSensitive(o, l->path[i]);
  return o;
}

/* A failing case with every part the writer can write: modes with their extras, an
 * output with metrics, mask, error map, hints, repeats, undetected mutants; probes,
 * cancellation stress, knobs. */
static void rich_case(struct pg_case_result *r, struct pg_tensor *a, struct pg_tensor *b) {
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "L2_all");
  r->index = 3;
  r->level = 2;
  r->precision_checked = 1;
  r->status = PG_VERDICT_FAIL;
  r->category = PG_CAT_PRECISION;
  r->earliest_boundary = 1;
  snprintf(r->fingerprint, sizeof r->fingerprint, "all_fail");
  snprintf(r->summary, sizeof r->summary, "y differs");
  r->repro = strdup("phasegate run --case L2_all");
  r->knobs_json = strdup("{\"a\":1}");
  r->mistrusted = r->cpu_reproducer_candidate = 1;
  snprintf(r->hint, sizeof r->hint, "look at the tail tile");
  r->cancel.present = 1;
  snprintf(r->cancel.target, sizeof r->cancel.target, "y");
  r->has_probes = 1;
  r->drift_onset_iter = 2;
  snprintf(r->drift_probe, sizeof r->drift_probe, "p");
  snprintf(r->drift_mode, sizeof r->drift_mode, "sim");
  r->n_modes = 1;
  r->modes = calloc(1, sizeof *r->modes);
  struct pg_mode_result *m = &r->modes[0];
  snprintf(m->mode, sizeof m->mode, "sim");
  m->status = PG_VERDICT_FAIL;
  m->category = PG_CAT_PRECISION;
  m->earliest_boundary = 1;
  m->startup_ms = 3;
  m->timed_out = 1;
  m->signo = 9;
  snprintf(m->policy_from, sizeof m->policy_from, "suite");
  m->captured = strdup("impl says hi\n");
  m->n_tensors = 1;
  m->tensors = calloc(1, sizeof *m->tensors);
  struct pg_tensor_check *t = &m->tensors[0];
  snprintf(t->name, sizeof t->name, "y");
  snprintf(t->rule, sizeof t->rule, "allclose");
  t->dtype = PG_DTYPE_F32;
  t->compared = t->values_checked = t->analyzed = t->strength_checked = 1;
  t->ndim = 2;
  t->shape[0] = 4, t->shape[1] = 40;
  PG_CHECK_OK(pg_tensor_alloc(a, PG_DTYPE_F32, 2, t->shape, NULL));
  PG_CHECK_OK(pg_tensor_alloc(b, PG_DTYPE_F32, 2, t->shape, NULL));
  for (int64_t i = 0; i < a->numel; i++) ((float *)a->dl.data)[i] = ((float *)b->dl.data)[i] = 2.5f;
  ((float *)a->dl.data)[3 * 40 + 39] = 3.0f;
  pg_cmp_rule_init(&t->cmp_rule, PG_DTYPE_F32);
  PG_CHECK_OK(pg_tensor_compare(&a->dl, &b->dl, &t->cmp_rule, 1, &t->cmp, NULL));
  t->cmp.mistrusted = 1;
  snprintf(t->cmp.mistrust_reason, sizeof t->cmp.mistrust_reason, "few elements");
  t->mask.worst_rel_flat = -1;
  t->error_map = malloc(sizeof *t->error_map);
  PG_CHECK_OK(pg_cmp_error_map(&a->dl, &b->dl, &t->cmp_rule, 1, t->error_map, NULL));
  pg_tensor_check_add_hint_at(t, PG_HINT_TILE_EDGE, 1, 32, 0.9, "axis 1: the last tile");
  t->repeat_calls = 1;
  t->repeat_differ = 1;
  t->repeat_worst = 2;
  t->n_undetected = 1;
  snprintf(t->undetected[0], sizeof t->undetected[0], "zeros: all outputs 0");
}

static cJSON *rich_report(struct pg_case_result *r) {
  struct pg_run_phase ph = {.op = "attention", .impl_spec = "plugin:x.so", .up_to_module = 2,
                            .total_modules = 3, .tool_version = "t", .contract_path = "c.yaml",
                            .suite_path = "s.json"};
  cJSON *checks = cJSON_CreateArray();
  cJSON_AddItemToArray(checks, pg_report_check_json(r, 2));
  return pg_report_build(&ph, checks);
}

static int in_list(const struct list *l, const char *key) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->k[i].name, key) == 0) return 1;
  return 0;
}

PG_TEST(written_keys_are_in_the_table) {
  struct pg_case_result r;
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  rich_case(&r, &a, &b);
  cJSON *rep = rich_report(&r);
  PG_CHECK(rep != NULL);
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
    cJSON *o = object_at(rep, &lists[i]), *e;
    PG_CHECK_MSG(cJSON_IsObject(o), "%s: not in the rich report", lists[i].name);
    cJSON_ArrayForEach(e, o) {
      PG_CHECK_MSG(in_list(&lists[i], e->string), "%s: the writer's key \"%s\" is in no list",
                   lists[i].name, e->string);
    }
  }
  char *text = cJSON_Print(rep);
  struct pg_error err;
  pg_error_clear(&err);
  cJSON *back = NULL;
  PG_CHECK_OK(pg_report_parse("r.json", text, strlen(text), &back, &err));
  cJSON_Delete(back);
  free(text);
  cJSON_Delete(rep);
  pg_case_result_reset(&r);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
}

/* pg_report_parse of the report with `key` of list l set to `value` (NULL: removed). */
static int parse_changed(const struct list *l, const char *key, cJSON *value,
                         struct pg_error *err) {
  struct pg_case_result r;
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  rich_case(&r, &a, &b);
  cJSON *rep = rich_report(&r), *o = object_at(rep, l);
  cJSON_DeleteItemFromObjectCaseSensitive(o, key);
  if (value) cJSON_AddItemToObject(o, key, value);
  char *text = cJSON_Print(rep);
  cJSON *back = NULL;
  pg_error_clear(err);
  int rc = pg_report_parse("r.json", text, strlen(text), &back, err);
  cJSON_Delete(back);
  free(text);
  cJSON_Delete(rep);
  pg_case_result_reset(&r);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  return rc;
}

PG_TEST(the_check_is_the_table) {
  int n = 0;
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
    for (size_t j = 0; j < lists[i].n; j++) {
      const struct pg__report_key *k = &lists[i].k[j];
      struct pg_error err;
      /* a value of a type the key does not take: a number for string keys, else a string */
      cJSON *bad = k->types & PG__J_STR ? cJSON_CreateNumber(1.5) : cJSON_CreateString("x");
      int rc = parse_changed(&lists[i], k->name, bad, &err);
      PG_CHECK_MSG(rc == PG_EVALIDATE && strstr(err.message, k->name),
                   "%s.%s of the wrong type: rc %d (%s)", lists[i].name, k->name, rc,
                   err.message);
      rc = parse_changed(&lists[i], k->name, NULL, &err);
      if (k->need == PG__RK_NEED_OPT) {
        PG_CHECK_MSG(rc == PG_OK, "%s.%s is optional: rc %d (%s)", lists[i].name, k->name, rc,
                     err.message);
      } else {
        PG_CHECK_MSG(rc == PG_EVALIDATE && strstr(err.message, k->name),
                     "%s.%s is required: rc %d (%s)", lists[i].name, k->name, rc, err.message);
      }
      n++;
    }
  }
  PG_CHECK(n > 100);
}
