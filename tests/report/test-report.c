/* Unit tests for runner/report/ and the pure parts of runner/run/: verdict
 * aggregation, divergence fingerprints, device ids from CTest resource groups, the
 * redaction of captured output, the sanitize step, and the locked read-merge-write of
 * a phase report (including concurrent writers). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "pg_test.h"
#include "report/report.h"
#include "run/run.h"

PG_TEST(fingerprints) {
  enum pg_verdict pf[] = {PG_VERDICT_PASS, PG_VERDICT_FAIL};
  enum pg_verdict fp[] = {PG_VERDICT_FAIL, PG_VERDICT_PASS};
  enum pg_verdict ff[] = {PG_VERDICT_FAIL, PG_VERDICT_ERROR};
  enum pg_verdict pp[] = {PG_VERDICT_PASS, PG_VERDICT_PASS};
  enum pg_verdict psf[] = {PG_VERDICT_PASS, PG_VERDICT_SKIPPED, PG_VERDICT_FAIL};
  enum pg_verdict pfp[] = {PG_VERDICT_PASS, PG_VERDICT_FAIL, PG_VERDICT_PASS};
  enum pg_verdict fs[] = {PG_VERDICT_FAIL, PG_VERDICT_SKIPPED};
  enum pg_verdict ss[] = {PG_VERDICT_SKIPPED, PG_VERDICT_SKIPPED};
  PG_CHECK_EQ_STR("kernel_ok_npu_only", pg_divergence_fingerprint(pf, 2));
  PG_CHECK_EQ_STR("ir_divergence", pg_divergence_fingerprint(fp, 2));
  PG_CHECK_EQ_STR("all_fail", pg_divergence_fingerprint(ff, 2));
  PG_CHECK_EQ_STR("", pg_divergence_fingerprint(pp, 2));
  PG_CHECK_EQ_STR("kernel_ok_npu_only", pg_divergence_fingerprint(psf, 3));
  PG_CHECK_EQ_STR("mixed", pg_divergence_fingerprint(pfp, 3));
  PG_CHECK_EQ_STR("all_fail", pg_divergence_fingerprint(fs, 2)); /* one mode ran: it failed */
  PG_CHECK_EQ_STR("", pg_divergence_fingerprint(ss, 2));
  PG_CHECK(PG_VERDICT_ERROR > PG_VERDICT_FAIL && PG_VERDICT_FAIL > PG_VERDICT_PASS &&
           PG_VERDICT_PASS > PG_VERDICT_SKIPPED);
  PG_CHECK_EQ_INT(PG_VERDICT_FAIL, pg_verdict_parse("FAIL"));
  PG_CHECK_EQ_STR("SKIPPED", pg_verdict_name(pg_verdict_parse("bogus")));
}

PG_TEST(short_numbers) {
  struct { double v; const char *want; } t[] = {
      {1e-3, "1e-3"}, {2e-3, "2e-3"}, {1e-5, "1e-5"}, {1.3e-6, "1.3e-6"}, {0.5, "0.5"},
      {0.016, "0.016"}, {0, "0"}, {3, "3"}, {1e6, "1e6"}, {2.5e-4, "2.5e-4"}, {123.5, "123.5"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char b[40];
    pg_num_short(t[i].v, b, sizeof b);
    PG_CHECK_EQ_STR(t[i].want, b);
  }
}

/* Every result line with compared values names the tolerance its verdict used. */
static char lines_buf[8192];
static void collect_line(void *user, int to_stderr, const char *line) {
  (void)user;
  (void)to_stderr;
  strncat(lines_buf, line, sizeof lines_buf - strlen(lines_buf) - 2);
  strcat(lines_buf, "\n");
}

PG_TEST(console_prints_tolerance) {
  struct pg_run_phase ph = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 2,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = NULL,
                           .suite_path = NULL, .modes = "sim,npu"};
  struct pg_case_result r;
  memset(&r, 0, sizeof r);
  snprintf(r.id, sizeof r.id, "L2_a");
  r.precision_checked = 1;
  r.n_modes = 2;
  r.modes = calloc(2, sizeof *r.modes);
  for (int i = 0; i < 2; i++) {
    struct pg_mode_result *m = &r.modes[i];
    snprintf(m->mode, sizeof m->mode, "%s", i ? "npu" : "sim");
    m->status = i ? PG_VERDICT_FAIL : PG_VERDICT_PASS;
    m->category = i ? PG_CAT_PRECISION : PG_CAT_NONE;
    m->fact_output = i ? 0 : -1;
    snprintf(m->summary, sizeof m->summary, "bad");
    m->n_tensors = 1;
    m->tensors = calloc(1, sizeof *m->tensors);
    struct pg_tensor_check *t = &m->tensors[0];
    snprintf(t->name, sizeof t->name, "y");
    snprintf(t->rule, sizeof t->rule, "allclose");
    t->atol = t->rtol = 1e-3;
    t->compared = t->values_checked = 1;
    t->cmp.max_abs_diff = i ? 0.5 : 1e-4;
  }
  r.status = PG_VERDICT_FAIL;
  lines_buf[0] = 0;
  pg_report_case_lines(&ph, &r, collect_line, NULL);
  PG_CHECK_MSG(strstr(lines_buf, "[PASS] op M2 L2_a sim  max_abs 0.0001  max_rel 0  "
                                 "(atol 1e-3 rtol 1e-3)  0.0 ms\n") != NULL, "%s", lines_buf);
  PG_CHECK_MSG(strstr(lines_buf, "[FAIL] op M2 L2_a npu  precision: bad  (atol 1e-3 rtol 1e-3)"
                                 "  0.0 ms\n") != NULL, "%s", lines_buf);
  /* a rule without tolerances says so; a crash (nothing compared) shows none */
  snprintf(r.modes[0].tensors[0].rule, sizeof r.modes[0].tensors[0].rule, "ulp:2");
  r.modes[1].tensors[0].compared = 0;
  lines_buf[0] = 0;
  pg_report_case_lines(&ph, &r, collect_line, NULL);
  PG_CHECK_MSG(strstr(lines_buf, "max_rel 0  (ulp:2)  0.0 ms\n") != NULL, "%s", lines_buf);
  PG_CHECK_MSG(strstr(lines_buf, "precision: bad  0.0 ms\n") != NULL, "%s", lines_buf);
  pg_case_result_reset(&r);
}

PG_TEST(device_from_ctest_resource_groups) {
  unsetenv("CTEST_RESOURCE_GROUP_0");
  PG_CHECK_EQ_INT(-1, pg_run_device_from_env());
  setenv("CTEST_RESOURCE_GROUP_0", "gpus,npus", 1);
  setenv("CTEST_RESOURCE_GROUP_0_NPUS", "id:3,slots:1", 1);
  unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
  PG_CHECK_EQ_INT(3, pg_run_device_from_env());
  setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:gpu7,slots:2;id:8,slots:1", 1);
  PG_CHECK_EQ_INT(7, pg_run_device_from_env());
  unsetenv("CTEST_RESOURCE_GROUP_0");
}

PG_TEST(redaction) {
  struct pg_tensor t;
  pg_tensor_init(&t);
  int64_t shape[1] = {4};
  PG_CHECK_OK(pg_tensor_alloc(&t, PG_DTYPE_F32, 1, shape, NULL));
  float *d = t.dl.data;
  d[0] = 123456.789f;
  d[1] = -0.0012345678f;
  d[2] = 1.0f;
  d[3] = 3.14159265f;
  const struct pg_tensor *ts[1] = {&t};
  char *r = pg_redact_text("a=123456.789 b=1.2345679e+05 c=-0.0012345678 d=1 e=3.14 "
                           "f=3.1416 g=2.71828 h=x86_64 i=12.5 ms\n", ts, 1);
  PG_CHECK(r != NULL);
  PG_CHECK_MSG(strstr(r, "123456") == NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "1.2345679") == NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "0.0012345678") == NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "f=<redacted>") != NULL, "%s", r);  /* 5 significant digits */
  PG_CHECK_MSG(strstr(r, "d=1 ") != NULL, "%s", r);          /* too short to mean anything */
  PG_CHECK_MSG(strstr(r, "e=3.14 ") != NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "g=2.71828") != NULL, "%s", r);     /* not a tensor value */
  PG_CHECK_MSG(strstr(r, "x86_64") != NULL, "%s", r);
  free(r);
  pg_tensor_reset(&t);
}

/* A Python golden's message: every number goes, names and paths stay. */
PG_TEST(redaction_of_golden_messages) {
  char *r = pg_redact_numbers("ValueError: tensor([[ 1.2345, -0.5678],\n [3, 4e-05]]) in "
                              "x_module123_golden (float16) at /tmp/pg-12/x_module12_golden.py:7 "
                              "(worker log: /tmp/log-3)");
  PG_CHECK(r != NULL);
  PG_CHECK_MSG(strstr(r, "tensor([[ <redacted>, -<redacted>],\n [<redacted>, <redacted>]])") != NULL,
               "%s", r);
  PG_CHECK_MSG(strstr(r, "x_module123_golden (float16)") != NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "/tmp/pg-12/x_module12_golden.py:7 ") != NULL, "%s", r);
  PG_CHECK_MSG(strstr(r, "(worker log: /tmp/log-3)") != NULL, "%s", r);
  free(r);
  r = pg_redact_numbers("");
  PG_CHECK(r && !*r);
  free(r);
  PG_CHECK(pg_redact_numbers(NULL) == NULL);
}

/* Only captured text passes here, one piece at a time (the impl room quotes it through
 * struct pg_impl's quote, finding 21/7): no phrase of phasegate's protects a number in
 * it — a worker that prints "exit status 0.5" or "fd 3" is printing values. phasegate's
 * sentence around the piece never passes (run/python_golden/interpreter checks it keeps
 * "exit status 1" and "fd 4" end to end). */
PG_TEST(redaction_of_captured_pieces_spares_no_phrase) {
  char *r = pg_redact_numbers("ValueError: got 0.8421 at row 17, exit status 0.5, fd 3, "
                              "{\"phasegate_worker\": 1}, killed by signal 9");
  PG_CHECK(r != NULL);
  PG_CHECK_MSG(strcmp(r, "ValueError: got <redacted> at row <redacted>, exit status <redacted>, "
                         "fd <redacted>, {\"phasegate_worker\": <redacted>}, killed by signal "
                         "<redacted>") == 0, "%s", r);
  free(r);
}

PG_TEST(sanitize_drops_tensor_contents) {
  cJSON *r = cJSON_Parse("{\"checks\":[{\"id\":\"a\",\"golden\":[1,2,3],\"expected\":5,"
                         "\"shape\":[1,2,3],\"dump\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"
                         "\"nested\":{\"reference\":\"x\",\"ok\":1}}]}");
  PG_CHECK(r != NULL);
  int n = pg_report_sanitize(r);
  PG_CHECK_EQ_INT(4, n);
  char *s = cJSON_PrintUnformatted(r);
  PG_CHECK_EQ_STR("{\"checks\":[{\"id\":\"a\",\"shape\":[1,2,3],"
                  "\"dump\":\"<removed: tensor-sized array>\",\"nested\":{\"ok\":1}}]}", s);
  free(s);
  cJSON_Delete(r);
}

/* An error map's rows of cells (up to 64 metrics) pass the barrier; a longer numeric
 * array inside error_map, or one of 17 numbers anywhere else, does not. */
PG_TEST(sanitize_keeps_error_map_rows) {
  /* row65 has room for row64 and 3 more bytes: -O1 builds (memcheck preset) check that */
  char row64[512] = "[", row65[520], other[128] = "[";
  for (int i = 0; i < 64; i++) snprintf(row64 + strlen(row64), 8, "%s%d", i ? "," : "", i % 7);
  snprintf(row65, sizeof row65, "%s,1]", row64);
  strcat(row64, "]");
  for (int i = 0; i < 17; i++) snprintf(other + strlen(other), 8, "%s%d", i ? "," : "", i);
  strcat(other, "]");
  char json[2048];
  snprintf(json, sizeof json,
           "{\"error_map\":{\"cells\":[%s],\"mismatch_cells\":[%s],\"golden\":1},"
           "\"x\":{\"cells\":[%s]},\"y\":%s}", row64, row65, row64, other);
  cJSON *r = cJSON_Parse(json);
  PG_CHECK(r != NULL);
  PG_CHECK_EQ_INT(4, pg_report_sanitize(r)); /* row65, golden, x's row, y */
  cJSON *m = cJSON_GetObjectItem(r, "error_map");
  PG_CHECK_EQ_INT(64, cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "cells"), 0)));
  PG_CHECK(cJSON_IsString(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "mismatch_cells"), 0)));
  PG_CHECK(cJSON_GetObjectItem(m, "golden") == NULL);
  PG_CHECK(cJSON_IsString(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "x"), "cells"), 0)));
  PG_CHECK(cJSON_IsString(cJSON_GetObjectItem(r, "y")));
  cJSON_Delete(r);
}

/* A failing tensor's error map, histogram and hint geometry as the report writes them,
 * through the barrier. */
PG_TEST(report_error_map_and_hint_geometry) {
  struct pg_case_result r;
  memset(&r, 0, sizeof r);
  snprintf(r.id, sizeof r.id, "L2_map");
  r.status = PG_VERDICT_FAIL;
  r.n_modes = 1;
  r.modes = calloc(1, sizeof *r.modes);
  snprintf(r.modes[0].mode, sizeof r.modes[0].mode, "sim");
  r.modes[0].status = PG_VERDICT_FAIL;
  r.modes[0].n_tensors = 1;
  r.modes[0].tensors = calloc(1, sizeof *r.modes[0].tensors);
  struct pg_tensor_check *t = &r.modes[0].tensors[0];
  snprintf(t->name, sizeof t->name, "y");
  t->compared = t->values_checked = 1;
  t->ndim = 3;
  t->shape[0] = 2, t->shape[1] = 40, t->shape[2] = 100;
  struct pg_tensor a, b;
  pg_tensor_init(&a);
  pg_tensor_init(&b);
  PG_CHECK_OK(pg_tensor_alloc(&a, PG_DTYPE_F32, 3, t->shape, NULL));
  PG_CHECK_OK(pg_tensor_alloc(&b, PG_DTYPE_F32, 3, t->shape, NULL));
  for (int64_t i = 0; i < a.numel; i++) ((float *)a.dl.data)[i] = ((float *)b.dl.data)[i] = 2.5f;
  for (int64_t c = 96; c < 100; c++) ((float *)a.dl.data)[(40 + 7) * 100 + c] = 3.0f;
  pg_cmp_rule_init(&t->cmp_rule, PG_DTYPE_F32);
  t->error_map = malloc(sizeof *t->error_map);
  PG_CHECK_OK(pg_cmp_error_map(&a.dl, &b.dl, &t->cmp_rule, 1, t->error_map, NULL));
  pg_tensor_check_add_hint_at(t, PG_HINT_TILE_EDGE, 2, 32, 0.9, "axis 2: the last tile");
  pg_tensor_check_add_hint(t, PG_HINT_ZEROS, 0.5, "no geometry");
  cJSON *o = pg_report_check_json(&r, 1);
  PG_CHECK(o != NULL);
  PG_CHECK(pg_report_sanitize(o) >= 0);
  char *s = cJSON_PrintUnformatted(o);
  cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "per_tensor"), 0);
  cJSON *m = cJSON_GetObjectItem(pt, "error_map");
  PG_CHECK(m != NULL);
  char *ms = cJSON_PrintUnformatted(cJSON_GetObjectItem(m, "shape"));
  PG_CHECK_EQ_STR("[40,50]", ms); /* 80 rows, 2 per cell; 100 columns, 2 per cell */
  free(ms);
  ms = cJSON_PrintUnformatted(cJSON_GetObjectItem(m, "row_axes"));
  PG_CHECK_EQ_STR("[0,1]", ms);
  free(ms);
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(m, "col_axis")->valueint);
  PG_CHECK_EQ_INT(80, cJSON_GetObjectItem(m, "rows_total")->valueint);
  PG_CHECK_EQ_STR("max_err_over_tol", cJSON_GetObjectItem(m, "metric")->valuestring);
  cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "cells"), 23); /* folded row 47 */
  PG_CHECK_EQ_INT(50, cJSON_GetArraySize(row));
  /* 0.5 / (1e-3 + 1e-3 * 2.5) = 142.857..., 3 significant digits */
  PG_CHECK(cJSON_GetArrayItem(row, 48)->valuedouble == 143.0);
  PG_CHECK(cJSON_GetArrayItem(row, 47)->valuedouble == 0.0);
  row = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "mismatch_cells"), 23);
  PG_CHECK_EQ_INT(2, cJSON_GetArrayItem(row, 49)->valueint);
  cJSON *bk = cJSON_GetObjectItem(cJSON_GetObjectItem(pt, "error_histogram"), "buckets");
  PG_CHECK_EQ_INT(1, cJSON_GetArraySize(bk)); /* only [1, 10) holds elements */
  cJSON *b0 = cJSON_GetArrayItem(bk, 0);
  PG_CHECK(cJSON_GetObjectItem(b0, "golden_abs_lo")->valuedouble == 1.0);
  PG_CHECK(cJSON_GetObjectItem(b0, "golden_abs_hi")->valuedouble == 10.0);
  PG_CHECK_EQ_INT(8000, cJSON_GetObjectItem(b0, "n")->valueint);
  PG_CHECK_EQ_INT(4, cJSON_GetObjectItem(b0, "mismatches")->valueint);
  PG_CHECK(cJSON_GetObjectItem(b0, "max_abs_diff")->valuedouble == 0.5);
  cJSON *hints = cJSON_GetObjectItem(pt, "hints");
  cJSON *h0 = cJSON_GetArrayItem(hints, 0), *h1 = cJSON_GetArrayItem(hints, 1);
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(h0, "axis")->valueint);
  PG_CHECK_EQ_INT(32, cJSON_GetObjectItem(h0, "tile")->valueint);
  PG_CHECK(!cJSON_HasObjectItem(h1, "axis") && !cJSON_HasObjectItem(h1, "tile"));
  PG_CHECK_MSG(strstr(s, "2.5") == NULL, "no golden value in %s", s);
  free(s);
  cJSON_Delete(o);
  pg_tensor_reset(&a);
  pg_tensor_reset(&b);
  pg_case_result_reset(&r);
}

static void fake_case(struct pg_case_result *r, const char *id, int index,
                      enum pg_verdict sim, enum pg_verdict npu) {
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "%s", id);
  r->index = index;
  r->level = 2;
  r->precision_checked = 1;
  r->n_modes = 2;
  r->modes = calloc(2, sizeof *r->modes);
  snprintf(r->modes[0].mode, sizeof r->modes[0].mode, "sim");
  snprintf(r->modes[1].mode, sizeof r->modes[1].mode, "npu");
  r->modes[0].status = sim;
  r->modes[1].status = npu;
  r->modes[0].captured = strdup("impl says hi\n");
  r->status = sim > npu ? sim : npu;
  enum pg_verdict v[2] = {sim, npu};
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s", pg_divergence_fingerprint(v, 2));
  if (r->status == PG_VERDICT_FAIL) {
    r->category = PG_CAT_PRECISION;
    r->earliest_boundary = 2; /* bisection: already wrong at M2 */
    snprintf(r->summary, sizeof r->summary, "case %s failed", id);
  }
  r->repro = strdup("phasegate run --case x");
}

static cJSON *load(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return cJSON_Parse(buf);
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "<none>";
}

PG_TEST(report_merge_by_case_id) {
  char path[4096];
  snprintf(path, sizeof path, "%s/attention/M3/evaluation_report.json", pg_test_tmpdir());
  struct pg_run_phase m = {.op = "attention", .impl_spec = "plugin:x.so", .up_to_module = 3,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = "c.yaml",
                           .suite_path = "s.json", .modes = "sim,npu"};
  struct pg_case_result a, b;
  fake_case(&a, "L2_b", 1, PG_VERDICT_PASS, PG_VERDICT_FAIL);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL));
  fake_case(&b, "L1_a", 0, PG_VERDICT_PASS, PG_VERDICT_SKIPPED);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &b, 1, NULL));
  cJSON *r = load(path);
  PG_CHECK(r != NULL);
  PG_CHECK_EQ_STR("FAIL", str(r, "status"));
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(r, "cases_total")->valueint);
  PG_CHECK_EQ_INT(1, cJSON_GetObjectItem(r, "cases_passed")->valueint);
  const cJSON *checks = cJSON_GetObjectItem(r, "checks");
  PG_CHECK_EQ_STR("L1_a", str(cJSON_GetArrayItem(checks, 0), "id")); /* suite order */
  const cJSON *ff = cJSON_GetObjectItem(r, "first_failure");
  PG_CHECK_EQ_STR("L2_b", str(ff, "case_id"));
  /* the seed's type: the integer k of the phase run; bisection's j apart */
  const cJSON *fmb = cJSON_GetObjectItem(ff, "failing_module_boundary");
  PG_CHECK(cJSON_IsNumber(fmb) && fmb->valuedouble == 3);
  const cJSON *efb = cJSON_GetObjectItem(ff, "earliest_failing_boundary");
  PG_CHECK(cJSON_IsNumber(efb) && efb->valuedouble == 2);
  PG_CHECK_EQ_STR("precision", str(ff, "failure_category"));
  PG_CHECK_EQ_STR("kernel_ok_npu_only", str(ff, "divergence_fingerprint"));
  const cJSON *pms = cJSON_GetObjectItem(r, "per_mode_status");
  PG_CHECK_EQ_STR("PASS", str(pms, "sim"));
  PG_CHECK_EQ_STR("FAIL", str(pms, "npu"));
  PG_CHECK(strstr(str(r, "stdout"), "impl says hi") != NULL);
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(r, "schema_version")->valueint);
  cJSON_Delete(r);
  /* re-running the failing case with a fix replaces its entry */
  pg_case_result_reset(&a);
  fake_case(&a, "L2_b", 1, PG_VERDICT_PASS, PG_VERDICT_PASS);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL));
  r = load(path);
  PG_CHECK_EQ_STR("PASS", str(r, "status"));
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(r, "cases_total")->valueint);
  PG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "first_failure")));
  cJSON_Delete(r);
  /* a report of another phase at the same path is not merged */
  m.up_to_module = 2;
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL));
  r = load(path);
  PG_CHECK_EQ_INT(1, cJSON_GetObjectItem(r, "cases_total")->valueint);
  cJSON_Delete(r);
  pg_case_result_reset(&a);
  pg_case_result_reset(&b);
}

/* A failure whose earliest boundary is unknown (no bisection) still has the integer k;
 * earliest_failing_boundary is null. */
PG_TEST(report_boundary_without_bisection) {
  char path[4096];
  snprintf(path, sizeof path, "%s/nobisect/evaluation_report.json", pg_test_tmpdir());
  struct pg_run_phase m = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 2,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = NULL,
                           .suite_path = NULL, .modes = "sim,npu"};
  struct pg_case_result a;
  fake_case(&a, "L2_b", 1, PG_VERDICT_FAIL, PG_VERDICT_FAIL);
  a.earliest_boundary = 0;
  a.category = PG_CAT_RUNTIME;
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL));
  cJSON *r = load(path);
  PG_CHECK(r != NULL);
  const cJSON *ff = cJSON_GetObjectItem(r, "first_failure");
  const cJSON *fmb = cJSON_GetObjectItem(ff, "failing_module_boundary");
  PG_CHECK(cJSON_IsNumber(fmb) && fmb->valuedouble == 2);
  PG_CHECK(cJSON_IsNull(cJSON_GetObjectItem(ff, "earliest_failing_boundary")));
  PG_CHECK_EQ_STR("runtime", str(ff, "failure_category"));
  cJSON_Delete(r);
  pg_case_result_reset(&a);
}

/* A report written by schema 1 ("failing_module_boundary": "M1" = bisection's j) that
 * a new writer merges into: its checks come back with the integer k and j apart. */
PG_TEST(report_merge_upgrades_schema_1_boundary) {
  char path[4096];
  snprintf(path, sizeof path, "%s/old/evaluation_report.json", pg_test_tmpdir());
  struct pg_run_phase m = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 3,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = NULL,
                           .suite_path = NULL, .modes = "sim"};
  char *dir = strdup(path);
  *strrchr(dir, '/') = 0;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  PG_CHECK(system(cmd) == 0);
  free(dir);
  FILE *f = fopen(path, "w");
  PG_CHECK(f != NULL);
  fputs("{\"schema_version\":1,\"op_name\":\"op\",\"up_to_module\":3,\"checks\":["
        "{\"id\":\"L1_old\",\"suite_index\":0,\"status\":\"FAIL\",\"per_mode_status\":"
        "{\"sim\":\"FAIL\"},\"failure\":{\"failing_module_boundary\":\"M1\","
        "\"failure_category\":\"precision\",\"summary\":\"s\"},\"modes\":[{\"mode\":"
        "\"sim\",\"status\":\"FAIL\",\"failing_module_boundary\":\"M1\"}]}]}", f);
  fclose(f);
  struct pg_case_result a;
  fake_case(&a, "L2_new", 1, PG_VERDICT_PASS, PG_VERDICT_PASS);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL));
  cJSON *r = load(path);
  PG_CHECK(r != NULL);
  PG_CHECK_EQ_INT(2, cJSON_GetObjectItem(r, "cases_total")->valueint);
  const cJSON *ff = cJSON_GetObjectItem(r, "first_failure");
  PG_CHECK_EQ_STR("L1_old", str(ff, "case_id"));
  const cJSON *fmb = cJSON_GetObjectItem(ff, "failing_module_boundary");
  PG_CHECK(cJSON_IsNumber(fmb) && fmb->valuedouble == 3);
  const cJSON *efb = cJSON_GetObjectItem(ff, "earliest_failing_boundary");
  PG_CHECK(cJSON_IsNumber(efb) && efb->valuedouble == 1);
  const cJSON *mo = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
      cJSON_GetObjectItem(r, "checks"), 0), "modes"), 0);
  PG_CHECK(cJSON_GetObjectItem(mo, "failing_module_boundary") == NULL);
  efb = cJSON_GetObjectItem(mo, "earliest_failing_boundary");
  PG_CHECK(cJSON_IsNumber(efb) && efb->valuedouble == 1);
  cJSON_Delete(r);
  pg_case_result_reset(&a);
}

/* An existing report whose text cJSON accepts but JSON does not (a byte that is no
 * UTF-8 in a check's string), whose check lacks a key the loader wants, or that is no
 * JSON at all, is corrupt: a new report is started, so the written report loads in
 * `phasegate report` (fuzz_report_merge's regressions,
 * tests/fuzz-corpus/report_merge/regress-*), and the old bytes are kept beside it in
 * <report>.corrupt, named by the merge's warning (`why`: what the warning says of it). */
static void merge_into_corrupt(const char *name, const char *old, const char *why) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s/evaluation_report.json", pg_test_tmpdir(), name);
  struct pg_run_phase m = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 3,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = NULL,
                           .suite_path = NULL, .modes = "sim"};
  char *dir = strdup(path);
  *strrchr(dir, '/') = 0;
  PG_CHECK(pg_mkdir_p(dir) == 0);
  free(dir);
  FILE *f = fopen(path, "w");
  PG_CHECK(f != NULL);
  fputs(old, f);
  fclose(f);
  struct pg_case_result a;
  fake_case(&a, "L2_new", 1, PG_VERDICT_PASS, PG_VERDICT_PASS);
  struct pg_error note;
  pg_error_clear(&note);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, &note));
  PG_CHECK_MSG(strstr(note.message, "moved to") && strstr(note.message, ".corrupt") &&
               strstr(note.message, why), "%s: warning '%s'", name, note.message);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &a, 1, NULL)); /* no warning channel: fine */
  pg_case_result_reset(&a);
  f = fopen(path, "r");
  PG_CHECK(f != NULL);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  cJSON *r = NULL;
  struct pg_error err;
  PG_CHECK_OK(pg_report_parse("merged.json", text, n, &r, &err));
  PG_CHECK_EQ_INT(1, cJSON_GetObjectItem(r, "cases_total")->valueint);
  PG_CHECK_EQ_STR("L2_new", str(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 0), "id"));
  cJSON_Delete(r);
  /* the old bytes, unchanged */
  char aside[4200];
  snprintf(aside, sizeof aside, "%s.corrupt", path);
  f = fopen(aside, "r");
  PG_CHECK_MSG(f != NULL, "%s: no %s", name, aside);
  n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  PG_CHECK_EQ_STR(old, text);
}

PG_TEST(report_merge_replaces_corrupt_reports) {
  merge_into_corrupt("utf8", "{\"schema_version\":2,\"op_name\":\"op\",\"up_to_module\":3,"
                     "\"checks\":[{\"id\":\"L1_\xAA\",\"suite_index\":0,\"status\":\"PASS\"}]}",
                     "evaluation_report.json:1:");
  merge_into_corrupt("nostatus", "{\"schema_version\":2,\"op_name\":\"op\",\"up_to_module\":3,"
                     "\"checks\":[{\"id\":\"L1_a\",\"status\":\"PASS\",\"modes\":[{\"mode\":"
                     "\"sim\"}]}]}", "evaluation_report.json:1:");
  merge_into_corrupt("truncated", "{\"schema_version\":2,\"op_name\":\"op\",\n\"up_to",
                     "evaluation_report.json:2:");
}

PG_TEST(report_concurrent_writers) {
  char path[4096];
  snprintf(path, sizeof path, "%s/r/evaluation_report.json", pg_test_tmpdir());
  struct pg_run_phase m = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 1,
                           .total_modules = 2, .tool_version = "0.1.0", .contract_path = NULL,
                           .suite_path = NULL, .modes = "sim,npu"};
  enum { N = 8 };
  pid_t pids[N];
  for (int i = 0; i < N; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      char id[32];
      snprintf(id, sizeof id, "case_%d", i);
      struct pg_case_result c;
      fake_case(&c, id, i, PG_VERDICT_PASS, PG_VERDICT_PASS);
      int rc = pg_report_merge_write(path, &m, &c, 1, NULL);
      pg_case_result_reset(&c);
      _exit(rc == PG_OK ? 0 : 1);
    }
  }
  for (int i = 0; i < N; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    PG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  cJSON *r = load(path);
  PG_CHECK(r != NULL);
  PG_CHECK_EQ_INT(N, cJSON_GetObjectItem(r, "cases_total")->valueint);
  PG_CHECK_EQ_INT(N, cJSON_GetObjectItem(r, "cases_passed")->valueint);
  cJSON_Delete(r);
}

/* A phase after --implemented-phases (CMake PHASES): the cases are reported SKIPPED,
 * each marked not_implemented, and the report says "not_implemented": true while every
 * case of the phase is so; a real result merged in (the phase landed) drops the mark.
 * The console has one line per case, and the skip marker. */
PG_TEST(report_not_implemented) {
  char path[4096];
  snprintf(path, sizeof path, "%s/notimpl/evaluation_report.json", pg_test_tmpdir());
  struct pg_run_phase m = {.op = "op", .impl_spec = "plugin:x.so", .up_to_module = 2,
                           .total_modules = 3, .tool_version = "0.1.0", .modes = "sim,npu"};
  struct pg_case_result c[2];
  for (int i = 0; i < 2; i++) {
    fake_case(&c[i], i ? "L2_b" : "L1_a", i, PG_VERDICT_SKIPPED, PG_VERDICT_SKIPPED);
    c[i].not_implemented = 1;
    snprintf(c[i].summary, sizeof c[i].summary, "M2 not implemented yet (PHASES 1)");
  }
  PG_CHECK_OK(pg_report_merge_write(path, &m, c, 2, NULL));
  cJSON *r = load(path);
  PG_CHECK(r != NULL);
  PG_CHECK_EQ_STR("SKIPPED", str(r, "status"));
  PG_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "not_implemented")));
  PG_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "checks"), 1),
                                            "not_implemented")));
  cJSON_Delete(r);

  struct pg_run_summary s = {.cases_total = 2, .skipped = 2, .status = PG_VERDICT_SKIPPED,
                             .exit_code = 77, .report_path = path};
  lines_buf[0] = 0;
  pg_report_case_lines(&m, &c[0], collect_line, NULL);
  pg_report_summary_lines(&m, &s, c, 2, collect_line, NULL);
  PG_CHECK_MSG(strstr(lines_buf, "[SKIP] op M2 L1_a  M2 not implemented yet (PHASES 1): the impl "
                                 "was not called\n[phasegate] SKIPPED op M2: M2 not implemented "
                                 "yet (PHASES 1); 2 case(s) listed, not run\n") == lines_buf,
               "%s", lines_buf);

  pg_case_result_reset(&c[1]);
  fake_case(&c[1], "L2_b", 1, PG_VERDICT_PASS, PG_VERDICT_PASS);
  PG_CHECK_OK(pg_report_merge_write(path, &m, &c[1], 1, NULL));
  r = load(path);
  PG_CHECK_EQ_STR("PASS", str(r, "status"));
  PG_CHECK(cJSON_GetObjectItem(r, "not_implemented") == NULL);
  cJSON_Delete(r);
  for (int i = 0; i < 2; i++) pg_case_result_reset(&c[i]);
}
