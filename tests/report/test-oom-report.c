/* phasegate tests — out-of-memory sweep of the report writer (runner/report/report.c):
 * pg_report_merge_write into a temp dir, both a fresh report and a merge into an
 * existing one (the other case's checks must survive). cJSON's allocations are
 * counted too (cJSON_InitHooks), so a dropped key or check is caught: every run that
 * returns PG_OK must have written the reference report (the timestamp aside). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_oom.h"
#include "report/report.h"
#include "run/run.h"

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
  for (int m = 0; m < 2; m++) {
    r->modes[m].n_tensors = 1;
    r->modes[m].tensors = calloc(1, sizeof *r->modes[m].tensors);
    struct pg_tensor_check *t = r->modes[m].tensors;
    snprintf(t->name, sizeof t->name, "out");
    t->dtype = PG_DTYPE_F16;
    t->ndim = 2;
    t->shape[0] = 4;
    t->shape[1] = 8;
    t->compared = t->values_checked = 1;
    t->passed = r->modes[m].status == PG_VERDICT_PASS;
    snprintf(t->rule, sizeof t->rule, "allclose");
    t->atol = t->rtol = 1e-3;
    t->cmp.n = 32;
    t->cmp.mismatches = t->passed ? 0 : 3;
    t->cmp.max_abs_diff = t->passed ? 1e-4 : 0.5;
    t->cmp.n_first = t->passed ? 0 : 1;
  }
  r->status = sim > npu ? sim : npu;
  enum pg_verdict v[2] = {sim, npu};
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s", pg_divergence_fingerprint(v, 2));
  if (r->status == PG_VERDICT_FAIL) {
    r->category = PG_CAT_PRECISION;
    r->earliest_boundary = 2;
    snprintf(r->summary, sizeof r->summary, "case %s failed", id);
  }
  r->repro = strdup("phasegate run --case x");
  r->knobs_json = strdup("{\"id\":\"x\",\"level\":2,\"knob\":[1,2]}");
}

struct report_ctx {
  char path[512];
  const char *base;             /* an existing report to merge into, or NULL */
  const struct pg_case_result *cases;
  int n;
  unsigned long long ref;
};

/* The written report without its timestamp, fingerprinted (counting held). */
static unsigned long long report_hash(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *r = cJSON_Parse(buf);
  if (!r) return 1;
  cJSON_DeleteItemFromObjectCaseSensitive(r, "updated_at");
  char *s = cJSON_PrintUnformatted(r);
  unsigned long long h = s ? pg_oom_hash(0, s, strlen(s)) : 2;
  free(s);
  cJSON_Delete(r);
  return h;
}

static int report_once(void *vctx, int reference, struct pg_error *err) {
  struct report_ctx *c = vctx;
  pg_oom_hold(1); /* set the stage: no report, or the base one */
  unlink(c->path);
  if (c->base) {
    FILE *f = fopen(c->path, "w");
    if (!f || fputs(c->base, f) < 0 || fclose(f) != 0)
      return pg_error_set(err, PG_EINTERNAL, "cannot write the base report");
  }
  pg_oom_hold(0);
  struct pg_run_phase m = {.op = "attention", .impl_spec = "plugin:x.so", .up_to_module = 3,
                           .total_modules = 3, .tool_version = "0.1.0", .contract_path = "c.yaml",
                           .suite_path = "s.json", .modes = "sim,npu"};
  int rc = pg_report_merge_write(c->path, &m, c->cases, c->n, err);
  pg_oom_hold(1);
  if (rc == PG_OK) rc = pg_oom_same(&c->ref, reference, report_hash(c->path), "report", err);
  pg_oom_hold(0);
  return rc;
}

int main(void) {
  cJSON_Hooks hooks = {pg_oom_malloc, free};
  cJSON_InitHooks(&hooks);
  char dir[] = "/tmp/pg-oom-report-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  struct pg_case_result cases[2];
  fake_case(&cases[0], "L1_a", 0, PG_VERDICT_PASS, PG_VERDICT_SKIPPED);
  fake_case(&cases[1], "L2_b", 1, PG_VERDICT_PASS, PG_VERDICT_FAIL);
  int bad = 0;
  struct report_ctx fresh = {"", NULL, cases, 2, 0};
  snprintf(fresh.path, sizeof fresh.path, "%s/attention/M3/evaluation_report.json", dir);
  bad |= pg_oom_sweep("report fresh", report_once, &fresh);

  /* merge: a report holding L1_a, then L2_b is added */
  struct report_ctx one = {"", NULL, cases, 1, 0};
  snprintf(one.path, sizeof one.path, "%s/base.json", dir);
  struct pg_error err;
  if (report_once(&one, 1, &err) != PG_OK) {
    printf("not ok - base report: %s\n", err.message);
    return 1;
  }
  static char base[1 << 16];
  FILE *f = fopen(one.path, "rb");
  size_t n = f ? fread(base, 1, sizeof base - 1, f) : 0;
  if (f) fclose(f);
  base[n] = '\0';
  struct report_ctx merge = {"", base, &cases[1], 1, 0};
  snprintf(merge.path, sizeof merge.path, "%s/attention/M3/evaluation_report.json", dir);
  bad |= pg_oom_sweep("report merge", report_once, &merge);
  /* the merged report equals the fresh one (same cases) */
  if (!bad && merge.ref != fresh.ref) {
    printf("not ok - the merged report differs from the fresh one\n");
    bad = 1;
  }

  for (int i = 0; i < 2; i++) pg_case_result_reset(&cases[i]);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!bad && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return bad;
}
