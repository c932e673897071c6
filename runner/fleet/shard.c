/* phasegate runner — one shard of a fleet run (docs/fleet.md "Running a shard"): the
 * index from the flag or the scheduler, the build's test list checked against the
 * plan, the resource spec from the devices the scheduler made visible, one ctest into
 * the shard's own report root, and the manifest the merge reads.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "fleet/fleet_internal.h"
#include "report/report.h"

/* The shard index from the first scheduler variable set; -1 when none is. */
static int index_from_env(int *index, const char **from, struct pg_error *err) {
  static const char *const vars[] = {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX",
                                     "TEST_SHARD_INDEX", "GTEST_SHARD_INDEX"};
  *index = -1;
  *from = NULL;
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (!v || !*v) continue;
    char *end;
    long k = strtol(v, &end, 10);
    *from = vars[i];
    if (*end || k < 0 || k > 1000000 || !isdigit((unsigned char)*v))
      return pg_error_set(err, PG_EINVAL, "%s=%s is not a shard index (0, 1, ...)", vars[i], v);
    *index = (int)k;
    return PG_OK;
  }
  return PG_OK;
}

/* The resource spec (JSON text) and the manifest's devices object, or NULL. */
static char *resource_spec(cJSON **devices) {
  static const char *const vars[][2] = {{"CUDA_VISIBLE_DEVICES", "gpus"},
                                        {"HIP_VISIBLE_DEVICES", "gpus"},
                                        {"ASCEND_RT_VISIBLE_DEVICES", "npus"}};
  *devices = NULL;
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i][0]);
    if (!v || !*v) continue;
    cJSON *spec = cJSON_CreateObject(), *dev = cJSON_CreateObject();
    cJSON *ver = cJSON_AddObjectToObject(spec, "version");
    cJSON_AddNumberToObject(ver, "major", 1);
    cJSON_AddNumberToObject(ver, "minor", 0);
    cJSON *local = cJSON_AddArrayToObject(spec, "local"), *types = cJSON_CreateObject();
    cJSON_AddItemToArray(local, types);
    cJSON *list = cJSON_AddArrayToObject(types, vars[i][1]);
    cJSON_AddStringToObject(dev, "kind", vars[i][1]);
    cJSON_AddStringToObject(dev, "from", vars[i][0]);
    cJSON *visible = cJSON_AddArrayToObject(dev, "visible");
    /* the runtime renumbers the visible devices 0..n-1: those are the ids a test uses */
    char *copy = pg_strdup(v), *save = NULL;
    int n = 0;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
      while (*tok == ' ') tok++;
      if (!*tok) continue;
      char id[32];
      snprintf(id, sizeof id, "%d", n++);
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "id", id);
      cJSON_AddNumberToObject(e, "slots", 1);
      cJSON_AddItemToArray(list, e);
      cJSON_AddItemToArray(visible, cJSON_CreateString(tok));
    }
    free(copy);
    char *text = cJSON_Print(spec);
    cJSON_Delete(spec);
    if (!text || !n) {
      free(text);
      cJSON_Delete(dev);
      return NULL;
    }
    *devices = dev;
    return text;
  }
  return NULL;
}

void pg_fleet_run_result_reset(struct pg_fleet_run_result *r) {
  free(r->manifest_path);
  memset(r, 0, sizeof *r);
}

/* The build's fingerprint now (a build reconfigured since the plan has other tests). */
static int build_fingerprint(const char *ctest, const char *build_dir, char fp[17], int *n_tests,
                             struct pg_error *err) {
  char *json = NULL;
  size_t len = 0;
  int rc = pg_fleet_ctest_list(ctest, build_dir, &json, &len, err);
  struct pg_fleet_plan now;
  pg_fleet_plan_init(&now);
  if (rc == PG_OK) rc = pg_fleet_tests_load("ctest --show-only=json-v1", json, len, &now, err);
  if (rc == PG_OK) {
    memcpy(fp, now.fingerprint, 17);
    *n_tests = now.n_tests;
  }
  free(json);
  pg_fleet_plan_reset(&now);
  return rc;
}

struct manifest {
  int index, n_shards, n_tests, ctest_exit;
  const char *fingerprint, *build_fingerprint, *plan, *build_dir, *status;
  cJSON *devices;
  double started, ended;
  char *const *argv;
};

static int write_manifest(const char *out, const struct manifest *m, char **path,
                          struct pg_error *err) {
  char host[256], t0[64], t1[64];
  pg__fleet_host(host, sizeof host);
  pg_wall_format(m->started, t0, sizeof t0);
  pg_wall_format(m->ended, t1, sizeof t1);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "schema_version", PG_FLEET_PLAN_SCHEMA);
  cJSON_AddStringToObject(o, "tool", "phasegate");
  cJSON_AddNumberToObject(o, "shard", m->index);
  cJSON_AddNumberToObject(o, "n_shards", m->n_shards);
  cJSON_AddStringToObject(o, "fingerprint", m->fingerprint);
  cJSON_AddStringToObject(o, "build_fingerprint", m->build_fingerprint);
  cJSON_AddStringToObject(o, "status", m->status);
  cJSON_AddStringToObject(o, "plan", m->plan);
  cJSON_AddStringToObject(o, "build_dir", m->build_dir);
  cJSON_AddNumberToObject(o, "tests", m->n_tests);
  cJSON_AddStringToObject(o, "host", host);
  if (m->devices) cJSON_AddItemReferenceToObject(o, "devices", m->devices);
  else cJSON_AddNullToObject(o, "devices");
  cJSON_AddStringToObject(o, "started_at", t0);
  cJSON_AddStringToObject(o, "ended_at", t1);
  if (m->ctest_exit >= 0) cJSON_AddNumberToObject(o, "ctest_exit_code", m->ctest_exit);
  else cJSON_AddNullToObject(o, "ctest_exit_code");
  cJSON *cmd = cJSON_AddArrayToObject(o, "ctest_command");
  for (int i = 0; m->argv && m->argv[i]; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(m->argv[i]));
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  *path = pg_path_join(out, "manifest.json");
  if (!text || !*path) {
    free(text);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  int rc = pg__fleet_write_file(*path, text, err);
  free(text);
  return rc;
}

/* The JUnit file's case tests get host, device and run id from the shard's reports
 * (the report room's renderer); a shard without reports keeps ctest's file. */
static void junit_properties(const char *junit, const char *reports) {
  struct pg_report_set set;
  struct pg_error e;
  pg_error_clear(&e);
  pg_report_set_init(&set);
  if (pg_is_dir(reports) && pg_report_set_load(&reports, 1, &set, &e) == PG_OK)
    pg_report_junit_rewrite(junit, &set, NULL, &e);
  pg_report_set_reset(&set);
}

/* ctest's argument list for the shard (NULL-terminated, malloc'ed; strings owned by
 * the caller's `keep`). */
static char **ctest_argv(const struct pg_fleet_run_opts *o, const char *build_dir, char **keep,
                         int have_spec) {
  int n = 0, cap = 16 + o->n_ctest_args;
  char **a = calloc((size_t)cap, sizeof *a);
  if (!a) return NULL;
  a[n++] = (char *)(o->ctest ? o->ctest : "ctest");
  a[n++] = "--test-dir";
  a[n++] = (char *)build_dir;
  a[n++] = "-I";
  a[n++] = keep[0];
  /* the plan lists every test the shard runs, fixture tests included: ctest must add
   * no other (it would pull in every earlier phase) */
  a[n++] = "-FA";
  a[n++] = ".*";
  a[n++] = "--output-junit";
  a[n++] = keep[1];
  a[n++] = "--no-tests=ignore";
  if (have_spec) {
    a[n++] = "--resource-spec-file";
    a[n++] = keep[2];
  }
  if (o->jobs) {
    a[n++] = "-j";
    a[n++] = (char *)o->jobs;
  }
  for (int i = 0; i < o->n_ctest_args; i++) a[n++] = (char *)o->ctest_args[i];
  return a;
}

/* Runs ctest for shard k (an empty shard: an empty JUnit file, exit 0). */
static int run_ctest(const struct pg_fleet_run_opts *o, const struct pg_fleet_plan *p, int k,
                     const char *out, const char *build_dir, const char *spec, char ***argv_out,
                     int *code, struct pg_error *err) {
  char *keep[4] = {pg_path_join(out, "selection.ctest-I"), pg_path_join(out, "junit.xml"),
                   pg_path_join(out, "resources.json"), pg_path_fmt("PHASEGATE_REPORT_ROOT=%s/reports", out)};
  char *sel = pg_fleet_shard_selection(p, k);
  int rc = keep[0] && keep[1] && keep[2] && keep[3] && sel ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) rc = pg__fleet_write_file(keep[0], sel, err);
  if (rc == PG_OK && spec) rc = pg__fleet_write_file(keep[2], spec, err);
  char **argv = rc == PG_OK ? ctest_argv(o, build_dir, keep, spec != NULL) : NULL;
  if (rc == PG_OK && !argv) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK && p->shards[k].n == 0) {
    *code = 0;
    rc = pg__fleet_write_file(keep[1], "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                       "<testsuite name=\"empty shard\" tests=\"0\" failures=\"0\">\n</testsuite>\n", err);
  } else if (rc == PG_OK) {
    const char *env[] = {keep[3]};
    rc = pg__fleet_spawn(argv, env, 1, NULL, NULL, code, err);
    if (rc == PG_OK && pg_is_file(keep[1])) {
      char *reports = pg_path_join(out, "reports");
      if (reports) junit_properties(keep[1], reports);
      free(reports);
    }
  }
  /* the manifest keeps ctest's command: copy the strings the caller does not own */
  if (argv)
    for (int i = 0; argv[i]; i++) argv[i] = pg_strdup(argv[i]);
  *argv_out = argv;
  for (int i = 0; i < 4; i++) free(keep[i]);
  free(sel);
  return rc;
}

static void free_argv(char **argv) {
  for (int i = 0; argv && argv[i]; i++) free(argv[i]);
  free(argv);
}

int pg_fleet_shard_run(const struct pg_fleet_run_opts *o, struct pg_fleet_run_result *r,
                       struct pg_error *err) {
  memset(r, 0, sizeof *r);
  r->ctest_exit = -1;
  struct pg_fleet_plan p;
  pg_fleet_plan_init(&p);
  int rc = pg_fleet_plan_read(o->plan_path, &p, err);
  const char *from = "--index";
  int index = o->index;
  if (rc == PG_OK && index < 0) rc = index_from_env(&index, &from, err);
  if (rc == PG_OK && index < 0)
    rc = pg_error_set(err, PG_EINVAL, "no shard index: give --index K, or run under a scheduler that sets "
                      "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, TEST_SHARD_INDEX or GTEST_SHARD_INDEX");
  if (rc == PG_OK && index >= p.n_shards)
    rc = pg_error_set(err, PG_EINVAL, "shard index %d (%s) is outside the plan's %d shards (0..%d)", index,
                      from, p.n_shards, p.n_shards - 1);
  r->index = index;
  r->n_shards = p.n_shards;
  const char *build_dir = o->build_dir ? o->build_dir : p.build_dir;
  if (rc == PG_OK && !build_dir) rc = pg_error_set(err, PG_EINVAL, "the plan names no build directory: give --build-dir");
  char *out = NULL;
  if (rc == PG_OK && (pg_mkdir_p(o->out_dir) != 0 || !(out = realpath(o->out_dir, NULL))))
    rc = pg_error_set(err, PG_EIO, "%s: cannot create the directory: %s", o->out_dir, strerror(errno));
  char fp[17] = "";
  int n_now = 0;
  double t0 = pg_wall_ms();
  if (rc == PG_OK) rc = build_fingerprint(o->ctest, build_dir, fp, &n_now, err);
  struct manifest m = {index, p.n_shards, p.n_tests, -1, p.fingerprint, fp, o->plan_path, build_dir,
                       "refused", NULL, t0, 0, NULL};
  if (rc == PG_OK && strcmp(fp, p.fingerprint) != 0) {
    r->mismatch = 1;
    rc = pg_error_set(err, PG_EVALIDATE, "the build's tests (%s: %d tests, fingerprint %s) are not the plan's "
                      "(%s: %d tests, fingerprint %s): nothing run; make the plan again from this build",
                      build_dir, n_now, fp, o->plan_path, p.n_tests, p.fingerprint);
  }
  char *spec = NULL;
  char **argv = NULL;
  if (rc == PG_OK) {
    spec = resource_spec(&m.devices);
    rc = run_ctest(o, &p, index, out, build_dir, spec, &argv, &r->ctest_exit, err);
    m.status = rc == PG_OK ? "ran" : "refused";
  }
  m.ended = pg_wall_ms();
  m.ctest_exit = r->ctest_exit;
  m.argv = argv;
  if (out) {
    struct pg_error e2;
    pg_error_clear(&e2);
    int mrc = write_manifest(out, &m, &r->manifest_path, rc == PG_OK ? err : &e2);
    if (rc == PG_OK) rc = mrc;
  }
  free_argv(argv);
  free(spec);
  cJSON_Delete(m.devices);
  free(out);
  pg_fleet_plan_reset(&p);
  return rc;
}
