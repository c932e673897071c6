/* phasegate tests — `phasegate list` end to end on the toy op in
 * tests/data/good/suite/listop: the JSON listing parses (cJSON) and has the documented
 * schema, names, labels, lines and order; the text and cmake formats; --levels;
 * exit 2 with positioned findings for a bad suite; usage errors. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "pg_test.h"

#ifndef PG_PHASEGATE_EXE
#define PG_PHASEGATE_EXE "phasegate"
#endif

struct run {
  int status;
  char *out, *err;
};

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return calloc(1, 1);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  fclose(f);
  return buf;
}

/* Runs `phasegate <sub> <args>` with stdout/stderr captured. */
static struct run cli(const char *sub, const char *args) {
  char cmd[8192], out[1024], err[1024];
  snprintf(out, sizeof out, "%s/out.txt", pg_test_tmpdir());
  snprintf(err, sizeof err, "%s/err.txt", pg_test_tmpdir());
  snprintf(cmd, sizeof cmd, "'%s' %s %s >'%s' 2>'%s'", PG_PHASEGATE_EXE, sub, args, out, err);
  int st = system(cmd);
  struct run r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
  return r;
}

static struct run list(const char *args) { return cli("list", args); }

static void run_free(struct run *r) {
  free(r->out);
  free(r->err);
}

static const char *op_dir(void) {
  static char buf[1024];
  snprintf(buf, sizeof buf, "%s", pg_test_data("good/suite/listop"));
  return buf;
}

static const char *json_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double json_num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

PG_TEST(list_json_schema_and_order) {
  char args[4096];
  snprintf(args, sizeof args, "--op-dir '%s' --format json", op_dir());
  struct run r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  cJSON *root = cJSON_Parse(r.out);
  PG_CHECK_MSG(root != NULL, "output is not JSON: %s", r.out);
  PG_CHECK_EQ_INT(1, json_num(root, "schema_version"));
  PG_CHECK_EQ_STR("toy", json_str(root, "op"));
  PG_CHECK_EQ_INT(2, json_num(root, "module_count"));
  const char *contract = json_str(root, "contract"), *suite = json_str(root, "suite");
  PG_CHECK(contract && contract[0] == '/' &&
           ends_with(contract, "/good/suite/listop/module_interfaces.yaml"));
  PG_CHECK(suite && suite[0] == '/' && ends_with(suite, "/good/suite/listop/adversarial_suite.json"));
  PG_CHECK(strstr(suite, "/./") == NULL && strstr(suite, "//") == NULL);

  const cJSON *mods = cJSON_GetObjectItemCaseSensitive(root, "modules");
  PG_CHECK_EQ_INT(2, cJSON_GetArraySize(mods));
  PG_CHECK_EQ_INT(1, json_num(cJSON_GetArrayItem(mods, 0), "id"));
  PG_CHECK_EQ_STR("act", json_str(cJSON_GetArrayItem(mods, 0), "name"));
  PG_CHECK_EQ_STR("1", json_str(cJSON_GetArrayItem(mods, 0), "suffix"));
  PG_CHECK_EQ_STR("squash", json_str(cJSON_GetArrayItem(mods, 1), "name"));
  PG_CHECK_EQ_STR("12", json_str(cJSON_GetArrayItem(mods, 1), "suffix"));

  static const struct {
    const char *name, *suffix, *cs, *level_label;
    int phase, level, line, precision;
  } want[] = {
      {"toy/M1/L1/L1_smoke", "1", "L1_smoke", "level_L1", 1, 1, 3, 0},
      {"toy/M1/L2/L2_basic", "1", "L2_basic", "level_L2", 1, 2, 4, 1},
      {"toy/M1/L5/L5.edge-case_x", "1", "L5.edge-case_x", "level_L5", 1, 5, 6, 0},
      {"toy/M2/L1/L1_smoke", "12", "L1_smoke", "level_L1", 2, 1, 3, 0},
      {"toy/M2/L2/L2_basic", "12", "L2_basic", "level_L2", 2, 2, 4, 1},
      {"toy/M2/L5/L5.edge-case_x", "12", "L5.edge-case_x", "level_L5", 2, 5, 6, 0},
  };
  const cJSON *tests = cJSON_GetObjectItemCaseSensitive(root, "tests");
  PG_CHECK_EQ_INT(6, cJSON_GetArraySize(tests));
  for (int i = 0; i < 6; i++) {
    const cJSON *t = cJSON_GetArrayItem(tests, i);
    PG_CHECK_EQ_STR(want[i].name, json_str(t, "name"));
    PG_CHECK_EQ_STR("toy", json_str(t, "op"));
    PG_CHECK_EQ_INT(want[i].phase, json_num(t, "phase"));
    PG_CHECK_EQ_STR(want[i].suffix, json_str(t, "suffix"));
    PG_CHECK_EQ_INT(want[i].level, json_num(t, "level"));
    PG_CHECK_EQ_STR(want[i].cs, json_str(t, "case"));
    PG_CHECK_EQ_STR(suite, json_str(t, "file"));
    PG_CHECK_EQ_INT(want[i].line, json_num(t, "line"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "precision");
    PG_CHECK(cJSON_IsBool(p) && cJSON_IsTrue(p) == want[i].precision);
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(t, "labels");
    PG_CHECK_EQ_INT(4, cJSON_GetArraySize(labels));
    char phase_label[16];
    snprintf(phase_label, sizeof phase_label, "phase_M%d", want[i].phase);
    PG_CHECK_EQ_STR("phasegate", cJSON_GetArrayItem(labels, 0)->valuestring);
    PG_CHECK_EQ_STR("op_toy", cJSON_GetArrayItem(labels, 1)->valuestring);
    PG_CHECK_EQ_STR(phase_label, cJSON_GetArrayItem(labels, 2)->valuestring);
    PG_CHECK_EQ_STR(want[i].level_label, cJSON_GetArrayItem(labels, 3)->valuestring);
  }
  cJSON_Delete(root);
  run_free(&r);
}

PG_TEST(list_levels_filter) {
  char args[4096];
  snprintf(args, sizeof args, "--op-dir '%s' --format json --levels L1,5", op_dir());
  struct run r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  cJSON *root = cJSON_Parse(r.out);
  PG_CHECK(root != NULL);
  const cJSON *tests = cJSON_GetObjectItemCaseSensitive(root, "tests");
  PG_CHECK_EQ_INT(4, cJSON_GetArraySize(tests));
  PG_CHECK_EQ_STR("toy/M1/L5/L5.edge-case_x", json_str(cJSON_GetArrayItem(tests, 1), "name"));
  PG_CHECK_EQ_STR("toy/M2/L1/L1_smoke", json_str(cJSON_GetArrayItem(tests, 2), "name"));
  cJSON_Delete(root);
  run_free(&r);
}

PG_TEST(list_text_and_cmake_formats) {
  char args[4096];
  snprintf(args, sizeof args, "--op-dir '%s' --levels L2", op_dir());
  struct run r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  PG_CHECK_EQ_STR("toy/M1/L2/L2_basic  [phasegate;op_toy;phase_M1;level_L2]\n"
                  "toy/M2/L2/L2_basic  [phasegate;op_toy;phase_M2;level_L2]\n",
                  r.out);
  run_free(&r);
  snprintf(args, sizeof args, "--contract '%s/module_interfaces.yaml' --format=cmake", op_dir());
  r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  PG_CHECK_EQ_STR("toy/M1/L1/L1_smoke;1;1;L1_smoke\n"
                  "toy/M1/L2/L2_basic;1;2;L2_basic\n"
                  "toy/M1/L5/L5.edge-case_x;1;5;L5.edge-case_x\n"
                  "toy/M2/L1/L1_smoke;2;1;L1_smoke\n"
                  "toy/M2/L2/L2_basic;2;2;L2_basic\n"
                  "toy/M2/L5/L5.edge-case_x;2;5;L5.edge-case_x\n",
                  r.out);
  run_free(&r);
}

PG_TEST(list_bad_suite_exits_2_with_findings) {
  char args[4096];
  snprintf(args, sizeof args, "--op-dir '%s' --suite '%s/bad_suite.json' --format json",
           op_dir(), op_dir());
  struct run r = list(args);
  PG_CHECK_EQ_INT(2, r.status);
  PG_CHECK_EQ_STR("", r.out);
  PG_CHECK_MSG(strstr(r.err, "/bad_suite.json:3:44: error: cases[0].shape: unknown dim \"K\"") !=
                   NULL,
               "stderr: %s", r.err);
  run_free(&r);
}

PG_TEST(list_usage_errors) {
  static const char *const bad[] = {
      "--format xml --op-dir X", "--levels L9 --op-dir X", "--levels '' --op-dir X",
      "--levels L1,,L2 --op-dir X", "--bogus", "--op-dir", "", "--op-dir /nonexistent/dir",
      "--contract /nonexistent/c.yaml"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct run r = list(bad[i]);
    PG_CHECK_MSG(r.status == 2, "'%s': exit %d", bad[i], r.status);
    PG_CHECK_MSG(strstr(r.err, "error") != NULL, "'%s': stderr: %s", bad[i], r.err);
    PG_CHECK_EQ_STR("", r.out);
    run_free(&r);
  }
  struct run r = list("--help");
  PG_CHECK_EQ_INT(0, r.status);
  PG_CHECK(strstr(r.out, "usage: phasegate list") != NULL);
  run_free(&r);
}

/* validate and list share one validation (run/check.c): a bad level does not hide a
 * cancellation_stress target no golden step computes, and list refuses what validate
 * refuses, with the same findings. */
PG_TEST(list_and_validate_report_every_finding_alike) {
  char args[4096];
  snprintf(args, sizeof args, "--contract '%s/../../suites/attention/module_interfaces.yaml' "
           "--suite '%s'", PG_TEST_DATA_DIR, pg_test_data("bad/cancel/level_and_target.json"));
  struct run v = cli("validate", args), l = cli("list", args);
  PG_CHECK_EQ_INT(2, v.status);
  PG_CHECK_EQ_INT(2, l.status);
  PG_CHECK_EQ_STR("", l.out); /* no test is registered */
  const char *level = "level_and_target.json:3:35: error: cases[0].level: expected 0..5";
  const char *cancel = "level_and_target.json:4:3: error: case L5_cancel_q: cancellation_stress: "
                       "target 'q' is a primary input";
  PG_CHECK_MSG(strstr(v.err, level) && strstr(v.err, cancel), "validate: %s", v.err);
  PG_CHECK_MSG(strstr(l.err, level) && strstr(l.err, cancel), "list: %s", l.err);
  /* the same findings, line for line (validate adds its summary line) */
  PG_CHECK_MSG(strncmp(v.err, l.err, strlen(l.err)) == 0, "validate:\n%s\nlist:\n%s", v.err,
               l.err);
  run_free(&v);
  run_free(&l);
}

/* Level 0 (the seed's smoke level) is listed with L0 test names; "l1" reads as L1. */
PG_TEST(list_level_zero_and_lowercase_levels) {
  char args[4096];
  snprintf(args, sizeof args, "--contract '%s/../../suites/attention/module_interfaces.yaml' "
           "--suite '%s' --format cmake", PG_TEST_DATA_DIR,
           pg_test_data("good/suite/real_forms.json"));
  struct run r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  PG_CHECK(strncmp(r.out, "attention/M1/L0/L0_smoke;1;0;L0_smoke\n"
                          "attention/M1/L1/l1_lower;1;1;l1_lower\n", 76) == 0);
  run_free(&r);
  snprintf(args, sizeof args, "--contract '%s/../../suites/attention/module_interfaces.yaml' "
           "--suite '%s' --format cmake --levels L0", PG_TEST_DATA_DIR,
           pg_test_data("good/suite/real_forms.json"));
  r = list(args);
  PG_CHECK_MSG(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
  PG_CHECK(strstr(r.out, "/L1/") == NULL && strstr(r.out, "attention/M3/L0/L0_smoke") != NULL);
  run_free(&r);
}
