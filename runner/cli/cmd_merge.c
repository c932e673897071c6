/* phasegate merge — the shards of a fleet run into one tree (docs/fleet.md "Merging").
 *
 *   phasegate merge [--plan P] --out M SHARD_DIR...
 *
 * The merge is the fleet room's (runner/fleet/merge.c); this file parses options and
 * prints. Exit 0 every test passed, 1 failures (or a conflict), 2 incomplete (a missing
 * or rejected shard, a planned test no shard ran) or an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fleet/fleet.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate merge [--plan DIR/plan.json] --out M SHARD_DIR...\n"
          "\n"
          "Merges the directories `phasegate shard run --out` wrote into M: reports/ (one\n"
          "evaluation_report.json per registration and phase, the layout `phasegate report`\n"
          "reads), junit.xml (a <testsuite> per shard with its hostname, and the merge's\n"
          "own verdicts), report.html, times.json (for the next `shard plan --times`) and\n"
          "merge.json (every test's verdict and why).\n"
          "A planned test no shard ran, a missing shard or a shard of another test list\n"
          "(fingerprint mismatch) is \"not run\" and the merge incomplete. A test two shards\n"
          "disagree on (a retried shard) keeps both verdicts, marked as a conflict.\n"
          "Exit codes: 0 all passed, 1 failures or conflicts, 2 incomplete or error.\n");
}

int pg_cmd_merge(int argc, char **argv) {
  const char *plan = NULL, *out = NULL;
  const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  int n = 0;
  if (!dirs) return pg_cli_usage_error("merge", "out of memory");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(dirs);
      return PG_EXIT_PASS;
    }
    const char **slot = strcmp(a, "--plan") == 0 ? &plan : strcmp(a, "--out") == 0 ? &out : NULL;
    if (slot && i + 1 < argc) *slot = argv[++i];
    else if (a[0] != '-') dirs[n++] = a;
    else {
      free(dirs);
      return pg_cli_usage_error("merge", slot ? "%s needs a value" : "unknown option '%s' (see --help)", a);
    }
  }
  if (!out || n == 0) {
    free(dirs);
    return pg_cli_usage_error("merge", "--out M and at least one shard directory are required");
  }
  struct pg_fleet_merge_result r;
  struct pg_error err;
  pg_error_clear(&err);
  int st = pg_fleet_merge(plan, out, dirs, n, &r, &err);
  free(dirs);
  if (st != PG_OK) {
    fprintf(stderr, "phasegate merge: error: %s\n", err.message);
    return PG_EXIT_ERROR;
  }
  printf("phasegate merge: %d tests: %d passed, %d failed, %d skipped, %d not run; %d conflict%s; "
         "%d shard%s missing, %d rejected -> %s (%s)\n",
         r.tests, r.passed, r.failed, r.skipped, r.not_run, r.conflicts, r.conflicts == 1 ? "" : "s",
         r.missing_shards, r.missing_shards == 1 ? "" : "s", r.rejected_shards, out,
         r.incomplete ? "incomplete" : r.exit_code ? "failures" : "all passed");
  return r.exit_code;
}
