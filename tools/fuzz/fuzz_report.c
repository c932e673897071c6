/* phasegate fuzz harness — reading a report back and rendering it
 * (runner/report/load.c, html*.c): pg_report_parse, then pg_report_html on what loads.
 *
 *   build/asan/tools/fuzz/fuzz_report tests/fuzz-corpus/report
 *
 * Each input is one evaluation_report.json. Besides the sanitizers, the harness traps
 * when a promise breaks: a refusal always has a message and a 1-based position (or is
 * out of memory); a report that loads renders into a whole page (ends with </html>)
 * with no <script> element, whatever its strings hold.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pg_error err;
  pg_error_clear(&err);
  cJSON *json = NULL;
  int rc = pg_report_parse("fuzz.json", (const char *)data, size, &json, &err);
  check(rc == PG_OK || rc == PG_EPARSE || rc == PG_EVALIDATE || rc == PG_ENOMEM);
  if (rc != PG_OK) {
    check(json == NULL && err.message[0] != '\0');
    if (rc != PG_ENOMEM) check(err.line >= 1 && err.column >= 1);
    return 0;
  }
  struct pg_report_file f = {(char *)"fuzz.json", json};
  struct pg_report_set set = {.files = &f, .n = 1, .cap = 1};
  char *page = pg_report_html(&set);
  if (page) {
    size_t n = strlen(page);
    check(n > 8 && strcmp(page + n - 8, "</html>\n") == 0);
    check(strstr(page, "<script") == NULL);
  }
  free(page);
  cJSON_Delete(json);
  return 0;
}
