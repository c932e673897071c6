/* phasegate tests — the data-driven suite checker behind the suite/bad/NAME and
 * suite/good/NAME tests.
 *
 *   suite_check --bad  NAME.json NAME.expected   # must fail; first error line must match
 *   suite_check --good NAME.json                 # must load with no error
 *
 * Run from the data directory so messages carry the bare file name. Loads against the
 * hand-built attention contract. The expected file holds the exact first error line
 * ("NAME.json:LINE:COL: error: message (rule)"); the numeric err.line / err.column
 * must agree with it too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_contract.h"
#include "opdir/opdir.h"

static int read_first_line(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  if (!fgets(buf, (int)size, f)) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
  return 0;
}

int main(int argc, char **argv) {
  int bad = argc == 4 && strcmp(argv[1], "--bad") == 0;
  int good = argc == 3 && strcmp(argv[1], "--good") == 0;
  if (!bad && !good) {
    fprintf(stderr, "usage: suite_check --bad F.json F.expected | --good F.json\n");
    return 2;
  }
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  pg_error_clear(&err);
  int rc = pg_suite_load(argv[2], pg_test_attention_contract(), &s, &d, &err);
  char line[PG_ERROR_MESSAGE_MAX + 512];
  for (int i = 0; i < d.count; i++) {
    pg_diag_format(&d.items[i], line, sizeof line);
    printf("%s\n", line);
  }
  printf("rc = %s, n_cases = %d\n", pg_err_name(rc), s.n_cases);
  int status = 0;
  if (good) {
    if (rc != 0 || d.n_errors) {
      fprintf(stderr, "FAIL: expected a clean load, got %s: %s\n", pg_err_name(rc), err.message);
      status = 1;
    }
  } else {
    char expected[PG_ERROR_MESSAGE_MAX + 512];
    if (read_first_line(argv[3], expected, sizeof expected) != 0) {
      fprintf(stderr, "FAIL: cannot read %s\n", argv[3]);
      status = 1;
    } else if (rc >= 0) {
      fprintf(stderr, "FAIL: expected a failure, got %s\n", pg_err_name(rc));
      status = 1;
    } else if (strcmp(expected, err.message) != 0) {
      fprintf(stderr, "FAIL: first error line differs\n  expected: %s\n  actual:   %s\n", expected,
              err.message);
      status = 1;
    } else {
      int el = 0, ec = 0;
      const char *p = strstr(expected, ".json:");
      if (!p || sscanf(p + 6, "%d:%d", &el, &ec) != 2 || el != err.line || ec != err.column) {
        fprintf(stderr, "FAIL: err.line/column %d:%d disagree with the expected line\n", err.line,
                err.column);
        status = 1;
      }
    }
  }
  pg_suite_reset(&s);
  pg_diags_reset(&d);
  return status;
}
