/* phasegate shard — one suite over many hosts (docs/fleet.md).
 *
 *   phasegate shard plan --build-dir B --shards N [--times PATH]... [--by-op] --out DIR
 *   phasegate shard run --plan P [--index K] --out DIR [--build-dir B] [-j N] [-- CTEST-ARGS]
 *
 * The plan and the run are the fleet room's (runner/fleet/); this file parses options,
 * prints and picks the exit code: plan 0 / 2; run: ctest's exit code, 2 when refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"
#include "fleet/fleet.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate shard plan --build-dir B --shards N [--times PATH]... [--by-op]\n"
          "                            [--label L] [--tests-json FILE] [--ctest PROGRAM] --out DIR\n"
          "       phasegate shard run --plan DIR/plan.json [--index K] --out DIR\n"
          "                           [--build-dir B] [--ctest PROGRAM] [-j N | --parallel N]\n"
          "                           [-- CTEST-ARGS...]\n"
          "\n"
          "plan: reads the build's tests (`ctest --show-only=json-v1`, or --tests-json FILE\n"
          "saved from it), balances them over N shards by recorded durations (longest first\n"
          "onto the least-loaded shard) and writes DIR/plan.json with per shard\n"
          "DIR/shard-K.ctest-I (`ctest -I`) and DIR/shard-K.tests (`ctest --tests-from-file`).\n"
          "  --times PATH   a merged tree or shard directory, times.json, JUnit file or\n"
          "                 CTestCostData.txt (repeatable); B/Testing/Temporary/CTestCostData.txt\n"
          "                 is read too; a test with no recorded time weighs the median\n"
          "  --by-op        keep each op's tests (every phase, its gates) on one shard: gates\n"
          "                 judged by ctest in the shard; default: per test, gates judged on\n"
          "                 the merged result\n"
          "  --label L      plan only the tests labelled L (e.g. phasegate: the ops' tests)\n"
          "                 and the fixture tests they need; the others run on no shard\n"
          "\n"
          "run: runs shard K of the plan with ctest in the build directory (the plan's, or\n"
          "--build-dir), reports under DIR/reports, JUnit DIR/junit.xml, manifest\n"
          "DIR/manifest.json. K is --index, else SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX,\n"
          "TEST_SHARD_INDEX or GTEST_SHARD_INDEX. A CTest resource spec is made from\n"
          "CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or ASCEND_RT_VISIBLE_DEVICES.\n"
          "Exit code: ctest's; 2 when refused (the build's tests are not the plan's:\n"
          "fingerprint mismatch, or no index).\n");
}

static int parse_shards(const char *s, int *n) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < 1 || v > 100000) return -1;
  *n = (int)v;
  return 0;
}

static int cmd_plan(int argc, char **argv) {
  const char *build = NULL, *out = NULL, *shards = NULL, *tests_json = NULL, *ctest = NULL, *label = NULL;
  const char **times = calloc((size_t)argc + 1, sizeof *times);
  int n_times = 0, by_op = 0;
  if (!times) return pg_cli_usage_error("shard plan", "out of memory");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = strcmp(a, "--build-dir") == 0    ? &build
                        : strcmp(a, "--out") == 0        ? &out
                        : strcmp(a, "--shards") == 0     ? &shards
                        : strcmp(a, "--tests-json") == 0 ? &tests_json
                        : strcmp(a, "--ctest") == 0      ? &ctest
                        : strcmp(a, "--label") == 0      ? &label
                        : strcmp(a, "--times") == 0      ? &times[n_times]
                                                         : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(times);
      return PG_EXIT_PASS;
    }
    if (strcmp(a, "--by-op") == 0) {
      by_op = 1;
      continue;
    }
    if (!slot || i + 1 >= argc) {
      free(times);
      return pg_cli_usage_error("shard plan", slot ? "%s needs a value" : "unknown option '%s' (see --help)", a);
    }
    *slot = argv[++i];
    if (slot == &times[n_times]) n_times++;
  }
  int n = 0, rc = PG_EXIT_PASS;
  if (!build || !out || !shards) rc = pg_cli_usage_error("shard plan", "--build-dir, --shards and --out are required");
  else if (parse_shards(shards, &n) != 0) rc = pg_cli_usage_error("shard plan", "--shards: expected 1..100000, got '%s'", shards);
  struct pg_fleet_plan p;
  pg_fleet_plan_init(&p);
  struct pg_error err;
  pg_error_clear(&err);
  char *json = NULL;
  size_t len = 0;
  int known = 0, st = PG_OK;
  if (rc == PG_EXIT_PASS) {
    st = tests_json ? pg_read_file(tests_json, (size_t)1 << 30, &json, &len, &err)
                    : pg_fleet_ctest_list(ctest, build, &json, &len, &err);
    if (st == PG_OK) st = pg_fleet_tests_load(tests_json ? tests_json : "ctest --show-only=json-v1", json, len, &p, &err);
    char *abs = st == PG_OK ? realpath(build, NULL) : NULL;
    p.build_dir = abs ? abs : pg_strdup(build);
    if (st == PG_OK) st = pg_fleet_times_apply(&p, times, n_times, build, &known, &err);
    if (st == PG_OK) st = pg_fleet_plan_balance(&p, n, by_op, label, &err);
    if (st == PG_OK) st = pg_fleet_plan_write(&p, out, &err);
    if (st != PG_OK) rc = pg_cli_usage_error("shard plan", "%s", err.message);
  }
  if (rc == PG_EXIT_PASS) {
    double longest = 0, sum = 0;
    for (int k = 0; k < p.n_shards; k++) {
      sum += p.shards[k].seconds;
      if (p.shards[k].seconds > longest) longest = p.shards[k].seconds;
    }
    printf("phasegate shard plan: %d tests (%d with a recorded time), %d shards (%s), fingerprint %s\n",
           p.n_tests, known, p.n_shards, by_op ? "by op" : "per test", p.fingerprint);
    printf("phasegate shard plan: predicted longest shard %.1f s, mean %.1f s -> %s/plan.json\n", longest,
           sum / p.n_shards, out);
  }
  free(json);
  free(times);
  pg_fleet_plan_reset(&p);
  return rc;
}

static int cmd_run(int argc, char **argv) {
  struct pg_fleet_run_opts o = {.index = -1};
  const char *index = NULL;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return PG_EXIT_PASS;
    }
    if (strncmp(a, "-j", 2) == 0 && a[2]) { /* -j8, as ctest spells it */
      o.jobs = a + 2;
      continue;
    }
    const char **slot = strcmp(a, "--plan") == 0        ? &o.plan_path
                        : strcmp(a, "--index") == 0     ? &index
                        : strcmp(a, "--out") == 0       ? &o.out_dir
                        : strcmp(a, "--build-dir") == 0 ? &o.build_dir
                        : strcmp(a, "--ctest") == 0     ? &o.ctest
                        : strcmp(a, "-j") == 0 || strcmp(a, "--parallel") == 0 ? &o.jobs
                                                        : NULL;
    if (!slot || i + 1 >= argc)
      return pg_cli_usage_error("shard run", slot ? "%s needs a value" : "unknown option '%s' (see --help)", a);
    *slot = argv[++i];
  }
  o.ctest_args = (const char *const *)argv + i;
  o.n_ctest_args = argc - i;
  if (!o.plan_path || !o.out_dir) return pg_cli_usage_error("shard run", "--plan and --out are required");
  if (index && (parse_shards(index, &o.index) != 0 && strcmp(index, "0") != 0))
    return pg_cli_usage_error("shard run", "--index: expected a shard index, got '%s'", index);
  if (index && strcmp(index, "0") == 0) o.index = 0;
  struct pg_fleet_run_result r;
  struct pg_error err;
  pg_error_clear(&err);
  int st = pg_fleet_shard_run(&o, &r, &err);
  int rc = st == PG_OK ? r.ctest_exit : PG_EXIT_ERROR;
  if (st != PG_OK) fprintf(stderr, "phasegate shard run: error: %s\n", err.message);
  else
    printf("phasegate shard run: shard %d of %d: ctest exited %d -> %s\n", r.index, r.n_shards, r.ctest_exit,
           r.manifest_path ? r.manifest_path : "?");
  pg_fleet_run_result_reset(&r);
  return rc;
}

int pg_cmd_shard(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "plan") == 0) return cmd_plan(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "run") == 0) return cmd_run(argc - 1, argv + 1);
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return PG_EXIT_PASS;
  }
  return pg_cli_usage_error("shard", "expected 'plan' or 'run' (see phasegate shard --help)");
}
