/* phasegate runner — the fleet room (docs/fleet.md): one suite spread over many hosts
 * by the schedulers teams already run (CI matrices, Slurm arrays, Kubernetes Indexed
 * Jobs, CDash). The plan is made once upstream (`phasegate shard plan`), each host runs
 * one ctest for its shard index into its own report root (`phasegate shard run`), and
 * the merge happens once downstream (`phasegate merge`). No scheduler, queue, lock or
 * dashboard of its own.
 *
 * It sits between report/ (whose readers and writers it uses: one parser of reports)
 * and cli/. Runs ctest as a child process; prints nothing.
 */
#ifndef PHASEGATE_FLEET_H
#define PHASEGATE_FLEET_H

#include <cjson/cJSON.h>

#include "phasegate/error.h"

#define PG_FLEET_PLAN_SCHEMA 1

/* What a registered test is to the plan (docs/fleet.md "Phase gates and fixtures"). */
enum pg_fleet_role {
  PG_FLEET_CASE,    /* balanced onto one shard (a case test, or any other test) */
  PG_FLEET_FIXTURE, /* sets up or cleans up a fixture and requires none (a report session,
                       the workers, the contract check): run by every shard that needs it */
  PG_FLEET_GATE,    /* labelled `gate`: judged on the merged result (per-test plans) */
  PG_FLEET_OUT,     /* not selected (--label): in no shard, not merged */
};

struct pg_fleet_test {
  char *name;
  int number; /* ctest's test number, 1-based (`ctest -I`) */
  enum pg_fleet_role role;
  char **setup, **cleanup, **required; /* FIXTURES_SETUP / _CLEANUP / _REQUIRED */
  int n_setup, n_cleanup, n_required;
  char **labels;
  int n_labels;
  double seconds; /* predicted */
  int known;      /* seconds came from a times source (else the median) */
  int shard;      /* CASE (and every test of a by-op plan): its shard; else -1 */
};

struct pg_fleet_shard {
  int *tests; /* indexes into plan.tests, in test-number order */
  int n, cap;
  double seconds; /* predicted: the sum of its tests' */
};

struct pg_fleet_plan {
  char fingerprint[17]; /* of the test list: names in ctest's order */
  int by_op;            /* units are whole ops (the name up to its first '/') */
  char *build_dir;      /* as planned (absolute) */
  struct pg_fleet_test *tests;
  int n_tests, cap_tests;
  struct pg_fleet_shard *shards;
  int n_shards;
};

void pg_fleet_plan_init(struct pg_fleet_plan *p);
void pg_fleet_plan_reset(struct pg_fleet_plan *p);

/* `ctest --show-only=json-v1` in build_dir (ctest: the program, NULL: "ctest" on PATH):
 * its output, malloc'ed, in *json. */
int pg_fleet_ctest_list(const char *ctest, const char *build_dir, char **json, size_t *len,
                        struct pg_error *err);

/* The tests of a json-v1 listing (`name` for messages) into p (init'ed, empty): names,
 * numbers, fixtures, roles, the fingerprint. */
int pg_fleet_tests_load(const char *name, const char *json, size_t len,
                        struct pg_fleet_plan *p, struct pg_error *err);

/* Predicted seconds from recorded times (docs/fleet.md "The plan"): each of paths is a
 * merged tree or shard directory (its times.json, else its junit.xml), a times.json,
 * a JUnit file or a CTestCostData.txt; build_dir's Testing/Temporary/CTestCostData.txt
 * is read last when present. A test takes its time from the best kind of source that
 * has it (times.json, then JUnit, then cost data); unknown tests take the median of
 * the known. *n_known = tests with a recorded time. */
int pg_fleet_times_apply(struct pg_fleet_plan *p, const char *const *paths, int n,
                         const char *build_dir, int *n_known, struct pg_error *err);

/* Longest first onto the least-loaded shard (ties: the lower test number first, the
 * lower shard index), n_shards >= 1; by_op: the units are whole ops; label (NULL: all):
 * only the tests with that label (and the fixture tests they need) are planned, the
 * others are OUT. Fills p->shards. */
int pg_fleet_plan_balance(struct pg_fleet_plan *p, int n_shards, int by_op, const char *label,
                          struct pg_error *err);

/* Writes DIR/plan.json and per shard DIR/shard-<k>.ctest-I (`ctest -I`) and
 * DIR/shard-<k>.tests (`ctest --tests-from-file`, CMake 3.29+). */
int pg_fleet_plan_write(const struct pg_fleet_plan *p, const char *dir, struct pg_error *err);
/* Reads a plan.json back (p init'ed, empty). */
int pg_fleet_plan_read(const char *path, struct pg_fleet_plan *p, struct pg_error *err);
/* `ctest -I` text of shard k ("0,0,0,<n>,<n>,…"), malloc'ed. */
char *pg_fleet_shard_selection(const struct pg_fleet_plan *p, int k);

/* ---- one shard (fleet/shard.c) ---- */

struct pg_fleet_run_opts {
  const char *plan_path;
  int index;              /* < 0: from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX,
                             TEST_SHARD_INDEX or GTEST_SHARD_INDEX (the first set) */
  const char *out_dir;
  const char *build_dir;  /* NULL: the plan's */
  const char *ctest;      /* NULL: "ctest" */
  const char *jobs;       /* ctest -j, or NULL */
  const char *const *ctest_args; /* more ctest arguments */
  int n_ctest_args;
};

struct pg_fleet_run_result {
  int index, n_shards;
  int ctest_exit;      /* ctest's exit code (-1: it did not run) */
  int mismatch;        /* the build's tests are not the plan's: refused */
  char *manifest_path; /* malloc'ed */
};

/* Runs shard index of the plan: checks the build's test list against the plan's
 * fingerprint (mismatch: PG_EVALIDATE, r->mismatch set, nothing run), runs ctest on the
 * shard's selection with the report root OUT/reports (PHASEGATE_REPORT_ROOT), JUnit
 * OUT/junit.xml, the CTest resource spec OUT/resources.json of the devices the
 * scheduler made visible (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES: `gpus`;
 * ASCEND_RT_VISIBLE_DEVICES: `npus`), and writes OUT/manifest.json. */
int pg_fleet_shard_run(const struct pg_fleet_run_opts *o, struct pg_fleet_run_result *r,
                       struct pg_error *err);
void pg_fleet_run_result_reset(struct pg_fleet_run_result *r);

/* ---- the merge (fleet/merge.c) ---- */

struct pg_fleet_merge_result {
  int tests;       /* tests with a merged verdict */
  int passed, failed, skipped, not_run;
  int conflicts;   /* tests (and report cases) with two verdicts */
  int missing_shards, rejected_shards; /* absent indexes; shards of another test list */
  int incomplete;  /* something planned did not run: exit 2 */
  int exit_code;   /* 0 all passed, 1 failures, 2 incomplete */
};

/* Merges shard directories into out_dir: reports/ (one report per registration and
 * phase, pg_report_combine), junit.xml (a suite per shard, hostname set, plus the
 * merge's own verdicts), report.html, times.json (for the next plan), merge.json. */
int pg_fleet_merge(const char *plan_path, const char *out_dir, const char *const *shard_dirs,
                   int n, struct pg_fleet_merge_result *r, struct pg_error *err);

#endif
