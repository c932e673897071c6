/* phasegate fuzz harness — filling ctest's JUnit failure messages (runner/report/junit.c):
 * pg_report_junit_text on arbitrary text, with one fixed report; and reading the same
 * text back (pg_report_junit_each, the fleet's merge and times).
 *
 *   build/asan/tools/fuzz/fuzz_junit tests/fuzz-corpus/junit
 *
 * Each input is one JUnit file. Besides the sanitizers, the harness traps when a
 * promise breaks: a text with nothing to fill comes back byte for byte; a filled text
 * only grew, keeps the input's first bytes up to the first message, and has nothing
 * left to fill (a second pass returns it unchanged). Each <testcase> read back lies
 * inside the text, in order, with a name and a time that is a number.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static const char REPORT[] =
    "{\"op_name\": \"toy\", \"up_to_module\": 2, \"checks\": ["
    " {\"id\": \"bug\", \"status\": \"FAIL\", \"failure\": {\"failing_module_boundary\": 2,"
    "  \"earliest_failing_boundary\": 1, \"failure_category\": \"precision\","
    "  \"summary\": \"a <b> & \\\"c\\\"\\n\\u0001\"}, \"per_tensor\": [{\"name\": \"out\","
    "  \"hints\": [{\"kind\": \"transposed\", \"confidence\": 0.9}]}], \"repro\": \"x '&' y\"},"
    " {\"id\": \"ok\", \"status\": \"PASS\", \"failure\": null}]}";

struct seen {
  const char *text, *end, *last;
};

static int on_case(const struct pg_report_junit_case *c, void *user) {
  struct seen *s = user;
  check(c->name != NULL && c->elem >= s->last && c->elem < c->elem_end && c->elem_end <= s->end);
  check(c->time_s == c->time_s && (int)c->result >= 0 && c->result <= PG_REPORT_JUNIT_NOT_RUN);
  s->last = c->elem_end;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *xml = malloc(size + 1);
  if (!xml) return 0;
  memcpy(xml, data, size);
  xml[size] = '\0'; /* the text up to the first NUL: what a file read as text holds */
  struct pg_report_file f = {(char *)"toy/M2/evaluation_report.json", cJSON_Parse(REPORT)};
  struct pg_report_set set = {.files = &f, .n = 1, .cap = 1};
  check(f.json != NULL);
  struct seen seen = {xml, xml + strlen(xml), xml};
  check(pg_report_junit_each(xml, on_case, &seen) >= 0);
  int n = -1, n2 = -1;
  char *out = pg_report_junit_text(xml, &set, &n);
  if (out) {
    size_t in_len = strlen(xml), out_len = strlen(out);
    check(n >= 0);
    if (n == 0) check(strcmp(out, xml) == 0);
    else check(out_len > in_len);
    char *again = pg_report_junit_text(out, &set, &n2);
    if (again) check(n2 == 0 && strcmp(again, out) == 0);
    free(again);
  }
  free(out);
  cJSON_Delete(f.json);
  free(xml);
  return 0;
}
