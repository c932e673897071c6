/* phasegate fuzz harness — merging a phase's result into the evaluation_report.json
 * already on disk (runner/report/report.c, pg_report_merge_write): each input is the
 * existing report's bytes.
 *
 *   build/asan/tools/fuzz/fuzz_report_merge tests/fuzz-corpus/report_merge
 *
 * The bytes are written to <tmp>/attention/M3/evaluation_report.json, then the writer
 * merges one case (L1_small of attention, phase 3: the id of a check in the seeds, so
 * the replace-by-id path runs) into it exactly as `phasegate run` does. Promises
 * checked: the merge succeeds (a corrupt report is moved aside to .corrupt and a new
 * one started, never an error; out of memory aside); what it wrote is one JSON object
 * that `phasegate report` loads
 * (pg_report_parse), whose checks hold the merged case once, with cases_total = the
 * number of checks.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static char dir[4096], path[4200];

static void setup(void) {
  if (dir[0]) return;
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pg-fuzz-merge-XXXXXX", t && *t ? t : "/tmp");
  check(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/attention/M3/evaluation_report.json", dir);
  char *sub = pg_path_fmt("%s/attention/M3", dir);
  check(sub && pg_mkdir_p(sub) == 0);
  free(sub);
}

static void remove_dir(void) {
  if (!dir[0]) return;
  unlink(path);
  char *aside = pg_path_fmt("%s.corrupt", path);
  if (aside) unlink(aside);
  free(aside);
  char *p = pg_path_fmt("%s/attention/M3", dir);
  rmdir(p);
  free(p);
  p = pg_path_fmt("%s/attention", dir);
  rmdir(p);
  free(p);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setup();
  atexit(remove_dir);
  return 0;
}

static void the_case(struct pg_case_result *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "L1_small");
  r->level = 1;
  r->precision_checked = 1;
  r->n_modes = 1;
  r->modes = calloc(1, sizeof *r->modes);
  check(r->modes != NULL);
  snprintf(r->modes[0].mode, sizeof r->modes[0].mode, "sim");
  r->modes[0].status = PG_VERDICT_FAIL;
  r->modes[0].captured = pg_strdup("impl says hi\n");
  r->status = PG_VERDICT_FAIL;
  enum pg_verdict v[1] = {PG_VERDICT_FAIL};
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s", pg_divergence_fingerprint(v, 1));
  r->category = PG_CAT_PRECISION;
  r->earliest_boundary = 2;
  snprintf(r->summary, sizeof r->summary, "case L1_small failed");
  r->repro = pg_strdup("phasegate run --case L1_small");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  FILE *f = fopen(path, "wb");
  check(f != NULL);
  check(fwrite(data, 1, size, f) == size);
  check(fclose(f) == 0);

  struct pg_run_phase m = {.op = "attention", .impl_spec = "plugin:x.so", .up_to_module = 3,
                           .total_modules = 3, .tool_version = "0.1.0",
                           .contract_path = "c.yaml", .suite_path = "s.json", .modes = "sim"};
  struct pg_case_result c;
  the_case(&c);
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_report_merge_write(path, &m, &c, 1, &err);
  pg_case_result_reset(&c);
  check(rc == PG_OK || rc == PG_ENOMEM);
  if (rc != PG_OK) return 0;

  size_t len = 0;
  char *text = NULL;
  f = fopen(path, "rb");
  check(f != NULL);
  size_t cap = 0;
  for (;;) {
    if (cap - len < 65536) {
      cap = cap ? cap * 2 : 131072;
      text = realloc(text, cap);
      check(text != NULL);
    }
    size_t n = fread(text + len, 1, cap - len - 1, f);
    if (n == 0) break;
    len += n;
  }
  fclose(f);
  text[len] = '\0';
  cJSON *json = NULL;
  rc = pg_report_parse("merged.json", text, len, &json, &err);
  free(text);
  if (rc == PG_ENOMEM) return 0;
  if (rc != PG_OK) fprintf(stderr, "the merged report does not load: %s\n", err.message);
  check(rc == PG_OK);
  const cJSON *checks = cJSON_GetObjectItemCaseSensitive(json, "checks"), *ch;
  int mine = 0, n = 0;
  cJSON_ArrayForEach(ch, checks) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ch, "id");
    mine += cJSON_IsString(id) && strcmp(id->valuestring, "L1_small") == 0;
    n++;
  }
  check(mine == 1);
  const cJSON *total = cJSON_GetObjectItemCaseSensitive(json, "cases_total");
  check(cJSON_IsNumber(total) && total->valuedouble == n);
  cJSON_Delete(json);
  return 0;
}
