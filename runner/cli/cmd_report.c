/* phasegate report — reads evaluation reports back (files, or directories searched
 * recursively for evaluation_report.json). This build handles
 *   phasegate report --junit FILE.xml PATH...
 * which fills the failure messages of the phasegate case tests in a JUnit file that
 * `ctest --output-junit` wrote (runner/report/junit.c; the verify_* targets run it).
 * Exit 0 done, 2 error (usage, a report or the JUnit file unreadable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/report.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate report --junit FILE.xml PATH...\n"
          "\n"
          "Reads evaluation_report.json files (PATH: a report file, or a directory searched\n"
          "recursively: a phase, an op, a whole build tree).\n"
          "\n"
          "  --junit FILE.xml   fill the empty failure message of every failed phasegate case\n"
          "                     test (<op>/M<k>/L<n>/<case>) in FILE.xml, as `ctest\n"
          "                     --output-junit` wrote it, from the case's report: category,\n"
          "                     boundary, summary, strongest hints, repro line. Other tests\n"
          "                     and everything else in the file are left unchanged; the file\n"
          "                     is replaced atomically.\n"
          "\n"
          "Exit codes: 0 done, 2 error.\n");
}

int pg_cmd_report(int argc, char **argv) {
  const char *junit = NULL;
  const char **paths = calloc((size_t)argc + 1, sizeof *paths);
  int n = 0;
  if (!paths) return pg_cli_usage_error("report", "out of memory");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(paths);
      return PG_EXIT_PASS;
    }
    if (strcmp(a, "--junit") == 0 || strncmp(a, "--junit=", 8) == 0) {
      if (a[7] == '=') junit = a + 8;
      else if (i + 1 < argc) junit = argv[++i];
      else {
        free(paths);
        return pg_cli_usage_error("report", "--junit needs a value");
      }
    } else if (strncmp(a, "--", 2) == 0 && a[2]) {
      free(paths);
      return pg_cli_usage_error("report", "unknown option '%s' (see --help)", a);
    } else {
      paths[n++] = a;
    }
  }
  int rc = PG_EXIT_PASS;
  if (!junit) rc = pg_cli_usage_error("report", "--junit FILE.xml is required");
  else if (n == 0) rc = pg_cli_usage_error("report", "no report PATH given");
  if (rc != PG_EXIT_PASS) {
    free(paths);
    return rc;
  }
  struct pg_report_set set;
  pg_report_set_init(&set);
  struct pg_error err;
  pg_error_clear(&err);
  int written = 0;
  int ret = pg_report_set_load(paths, n, &set, &err);
  if (ret == PG_OK) ret = pg_report_junit_rewrite(junit, &set, &written, &err);
  if (ret == PG_OK)
    printf("phasegate report: %s: %d failure message(s) filled from %d report(s)\n", junit,
           written, set.n);
  else
    fprintf(stderr, "phasegate report: error: %s\n", err.message[0] ? err.message : pg_strerror(ret));
  pg_report_set_reset(&set);
  free(paths);
  return ret == PG_OK ? PG_EXIT_PASS : PG_EXIT_ERROR;
}
