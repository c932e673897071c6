/* phasegate runner — the keys of evaluation_report.json, once (docs/report.md "The keys
 * it reads"). Each list is an X-macro of X(ID, "key", TYPE, NEED, ELEMS):
 *
 *   TYPE   the JSON types a reader accepts (STR, INT_NULL, ...: PG__J_<TYPE> below)
 *   NEED   REQ (always present), OPT, or UNLESS_NOT_IMPL (present unless the report
 *          says "not_implemented": true)
 *   ELEMS  the type of every element of an array (NONE: not checked)
 *
 * The writer (report.c) spells every key through PG__RK_<LIST>_<ID>; the loader
 * (load.c) checks a report against the lists, so what is written and what is checked
 * cannot drift apart, and tests/repo/report_keys.py checks docs/report.md lists every
 * key. Lists are in the order the writer writes; a key's order in the output is the
 * writer's, not this file's. Included only inside the report room.
 */
#ifndef PHASEGATE_REPORT_KEYS_H
#define PHASEGATE_REPORT_KEYS_H

#include <cjson/cJSON.h>

/* The string at key of object o, or NULL (absent, or not a string): how the room's
 * files read a key back (writer, merge, lifetime, JUnit, HTML). */
static inline const char *pg__report_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The JSON types of a key (a set). INT: a number with no fraction, |x| < 9e15. */
enum {
  PG__J_NONE = 0,
  PG__J_NULL = 1,
  PG__J_BOOL = 2,
  PG__J_NUM = 4,
  PG__J_INT = 8,
  PG__J_STR = 16,
  PG__J_ARR = 32,
  PG__J_OBJ = 64,
  PG__J_NUM_NULL = PG__J_NUM | PG__J_NULL,
  PG__J_INT_NULL = PG__J_INT | PG__J_NULL,
  PG__J_STR_NULL = PG__J_STR | PG__J_NULL,
  PG__J_ARR_NULL = PG__J_ARR | PG__J_NULL,
  PG__J_OBJ_NULL = PG__J_OBJ | PG__J_NULL,
  PG__J_INT_STR = PG__J_INT | PG__J_STR, /* the seed's failing_module_boundary "M<k>" */
  PG__J_STR_OBJ = PG__J_STR | PG__J_OBJ,
  PG__J_ARR_OBJ = PG__J_ARR | PG__J_OBJ /* checks[].inspection: phasegate's, the workflow's */
};

enum { PG__RK_NEED_OPT = 0, PG__RK_NEED_REQ = 1, PG__RK_NEED_UNLESS_NOT_IMPL = 2 };

/* The report (one phase of one op). */
#define PG__REPORT_KEYS_TOP(X)                                   \
  X(SCHEMA_VERSION, "schema_version", INT, OPT, NONE)            \
  X(TOOL, "tool", STR, OPT, NONE)                                \
  X(TOOL_VERSION, "tool_version", STR, OPT, NONE)                \
  X(OP_NAME, "op_name", STR, REQ, NONE)                          \
  X(IMPL_FILE, "impl_file", STR, OPT, NONE)                      \
  X(UP_TO_MODULE, "up_to_module", INT, REQ, NONE)                \
  X(TOTAL_MODULES, "total_modules", INT, OPT, NONE)              \
  X(SUFFIX, "suffix", STR, OPT, NONE)                            \
  X(CONTRACT, "contract", STR, OPT, NONE)                        \
  X(SUITE, "suite", STR, OPT, NONE)                              \
  X(STATUS, "status", STR, OPT, NONE)                            \
  X(NOT_IMPLEMENTED, "not_implemented", BOOL, OPT, NONE)         \
  X(CHECKS, "checks", ARR, UNLESS_NOT_IMPL, NONE)                \
  X(CASES_TOTAL, "cases_total", INT, OPT, NONE)                  \
  X(CASES_PASSED, "cases_passed", INT, OPT, NONE)                \
  X(CASES_FAILED, "cases_failed", INT, OPT, NONE)                \
  X(CASES_ERROR, "cases_error", INT, OPT, NONE)                  \
  X(CASES_SKIPPED, "cases_skipped", INT, OPT, NONE)              \
  X(PER_MODE_STATUS, "per_mode_status", OBJ, OPT, NONE)          \
  X(FIRST_FAILURE, "first_failure", OBJ_NULL, OPT, NONE)         \
  X(STDOUT, "stdout", STR, OPT, NONE)                            \
  X(UPDATED_AT, "updated_at", STR, OPT, NONE)                    \
  X(REGISTRATION, "registration", STR, OPT, NONE)                \
  X(RUN, "run", OBJ, OPT, NONE)                                  \
  X(SELECTION, "selection", OBJ, OPT, NONE)                      \
  X(FINDINGS, "findings", ARR, OPT, OBJ)

/* checks[]: one case. */
#define PG__REPORT_KEYS_CHECK(X)                                           \
  X(ID, "id", STR, REQ, NONE)                                              \
  X(LEVEL, "level", INT, OPT, NONE)                                        \
  X(SUITE_INDEX, "suite_index", INT, OPT, NONE)                            \
  X(STATUS, "status", STR, REQ, NONE)                                      \
  X(NOT_IMPLEMENTED, "not_implemented", BOOL, OPT, NONE)                   \
  X(PRECISION_CHECKED, "precision_checked", BOOL, OPT, NONE)               \
  X(ALL_CLOSE, "all_close", BOOL, OPT, NONE)                               \
  X(MAX_ABS_DIFF, "max_abs_diff", NUM_NULL, OPT, NONE)                     \
  X(MAX_REL_DIFF, "max_rel_diff", NUM_NULL, OPT, NONE)                     \
  X(PER_MODE_STATUS, "per_mode_status", OBJ, OPT, NONE)                    \
  X(PER_TENSOR, "per_tensor", ARR, OPT, OBJ)                               \
  X(INSPECTION, "inspection", ARR_OBJ, OPT, OBJ)                           \
  X(FAILURE, "failure", OBJ_NULL, OPT, NONE)                               \
  X(MODES, "modes", ARR, OPT, OBJ)                                         \
  X(REPRO, "repro", STR, OPT, NONE)                                        \
  X(DURATIONS_MS, "durations_ms", OBJ, OPT, NONE)                          \
  X(GOLDEN_CACHED, "golden_cached", BOOL, OPT, NONE)                       \
  X(SUITE_STRENGTH, "suite_strength", STR, OPT, NONE)                      \
  X(CPU_REPRODUCER_CANDIDATE, "cpu_reproducer_candidate", BOOL, OPT, NONE) \
  X(MISTRUSTED, "mistrusted", BOOL, OPT, NONE)                             \
  X(HINTS, "hints", ARR, OPT, STR_OBJ)                                     \
  X(CANCELLATION_STRESS, "cancellation_stress", OBJ, OPT, NONE)            \
  X(KNOBS, "knobs", OBJ, OPT, NONE)                                        \
  X(RUN, "run", OBJ, OPT, NONE)                                            \
  X(CONFLICTS, "conflicts", ARR, OPT, OBJ)

/* checks[].failure, and the report's first_failure (the same, plus case_id). */
#define PG__REPORT_KEYS_FAILURE(X)                                              \
  X(FAILING_MODULE_BOUNDARY, "failing_module_boundary", INT_STR, OPT, NONE)     \
  X(EARLIEST_FAILING_BOUNDARY, "earliest_failing_boundary", INT_NULL, OPT, NONE) \
  X(FAILURE_CATEGORY, "failure_category", STR, OPT, NONE)                       \
  X(FAILURE_SUBCATEGORY, "failure_subcategory", STR, OPT, NONE)                 \
  X(DIVERGENCE_FINGERPRINT, "divergence_fingerprint", STR, OPT, NONE)           \
  X(SUMMARY, "summary", STR, OPT, NONE)                                         \
  X(DRIFT_ONSET_ITER, "drift_onset_iter", INT_NULL, OPT, NONE)                  \
  X(DRIFT_PROBE, "drift_probe", STR, OPT, NONE)                                 \
  X(DRIFT_MODE, "drift_mode", STR, OPT, NONE)                                   \
  X(CASE_ID, "case_id", STR, OPT, NONE)

/* checks[].modes[]: one mode of a case. */
#define PG__REPORT_KEYS_MODE(X)                                                 \
  X(MODE, "mode", STR, REQ, NONE)                                               \
  X(STATUS, "status", STR, REQ, NONE)                                           \
  X(FAILURE_CATEGORY, "failure_category", STR_NULL, OPT, NONE)                  \
  X(FAILURE_SUBCATEGORY, "failure_subcategory", STR, OPT, NONE)                 \
  X(EARLIEST_FAILING_BOUNDARY, "earliest_failing_boundary", INT_NULL, OPT, NONE) \
  X(PRECISION_GATING, "precision_gating", BOOL, OPT, NONE)                      \
  X(PRECISION_POLICY, "precision_policy", STR, OPT, NONE)                       \
  X(SUMMARY, "summary", STR, OPT, NONE)                                         \
  X(DURATION_MS, "duration_ms", NUM_NULL, OPT, NONE)                            \
  X(STARTUP_MS, "startup_ms", NUM_NULL, OPT, NONE)                              \
  X(TIMED_OUT, "timed_out", BOOL, OPT, NONE)                                    \
  X(SIGNAL, "signal", INT, OPT, NONE)                                           \
  X(EXIT_CODE, "exit_code", INT, OPT, NONE)                                     \
  X(STDOUT, "stdout", STR, OPT, NONE)

/* checks[].per_tensor[]: one output of one mode; its head (name .. rtol) is also an
 * inspection probe's, its metrics (all_close .. first_mismatches) also
 * `phasegate diff --json`'s (pg_report_add_metrics). */
#define PG__REPORT_KEYS_TENSOR(X)                                              \
  X(NAME, "name", STR, REQ, NONE)                                              \
  X(MODE, "mode", STR, OPT, NONE)                                              \
  X(DTYPE, "dtype", STR, OPT, NONE)                                            \
  X(SHAPE, "shape", ARR, OPT, INT)                                             \
  X(RULE, "rule", STR, OPT, NONE)                                              \
  X(ATOL, "atol", NUM_NULL, OPT, NONE)                                         \
  X(RTOL, "rtol", NUM_NULL, OPT, NONE)                                         \
  X(VALUES_CHECKED, "values_checked", BOOL, OPT, NONE)                         \
  X(PASSED, "passed", BOOL, OPT, NONE)                                         \
  X(STRUCTURAL, "structural", STR, OPT, NONE)                                  \
  X(ALL_CLOSE, "all_close", BOOL, OPT, NONE)                                   \
  X(N, "n", NUM_NULL, OPT, NONE)                                               \
  X(MISMATCHES, "mismatches", NUM_NULL, OPT, NONE)                             \
  X(MISMATCH_RATIO, "mismatch_ratio", NUM_NULL, OPT, NONE)                     \
  X(MAX_ABS_DIFF, "max_abs_diff", NUM_NULL, OPT, NONE)                         \
  X(MAX_ABS_INDEX, "max_abs_index", ARR_NULL, OPT, INT)                        \
  X(MAX_REL_DIFF, "max_rel_diff", NUM_NULL, OPT, NONE)                         \
  X(MAX_REL_INDEX, "max_rel_index", ARR_NULL, OPT, INT)                        \
  X(MEAN_ABS_DIFF, "mean_abs_diff", NUM_NULL, OPT, NONE)                       \
  X(RMSE, "rmse", NUM_NULL, OPT, NONE)                                         \
  X(COSINE_SIMILARITY, "cosine_similarity", NUM_NULL, OPT, NONE)               \
  X(NAN_IMPL, "nan_impl", NUM_NULL, OPT, NONE)                                 \
  X(NAN_REF, "nan_ref", NUM_NULL, OPT, NONE)                                   \
  X(INF_IMPL, "inf_impl", NUM_NULL, OPT, NONE)                                 \
  X(INF_REF, "inf_ref", NUM_NULL, OPT, NONE)                                   \
  X(MAX_ULP, "max_ulp", NUM_NULL, OPT, NONE)                                   \
  X(ERROR_BALANCE, "error_balance", NUM_NULL, OPT, NONE)                       \
  X(MAX_SIGNED_DIFF, "max_signed_diff", NUM_NULL, OPT, NONE)                   \
  X(SHARE_WITHIN_1E3, "share_within_1e-3", NUM_NULL, OPT, NONE)                \
  X(SHARE_WITHIN_5E3, "share_within_5e-3", NUM_NULL, OPT, NONE)                \
  X(ZERO_SHARE_REF, "zero_share_ref", NUM_NULL, OPT, NONE)                     \
  X(MISTRUSTED, "mistrusted", BOOL, OPT, NONE)                                 \
  X(MISTRUST_REASON, "mistrust_reason", STR, OPT, NONE)                        \
  X(CPU_REPRODUCER_CANDIDATE, "cpu_reproducer_candidate", BOOL, OPT, NONE)     \
  X(FIRST_MISMATCHES, "first_mismatches", ARR, OPT, OBJ)                       \
  X(EVIDENCE, "evidence", OBJ, OPT, NONE)                                      \
  X(MISMATCH_MASK, "mismatch_mask", OBJ, OPT, NONE)                            \
  X(ERROR_MAP, "error_map", OBJ_NULL, OPT, NONE)                               \
  X(ERROR_HISTOGRAM, "error_histogram", OBJ_NULL, OPT, NONE)                   \
  X(ONE_SIDED_ERRORS, "one_sided_errors", BOOL, OPT, NONE)                     \
  X(REPEAT, "repeat", OBJ, OPT, NONE)                                          \
  X(CPU_REPRODUCER, "cpu_reproducer", OBJ, OPT, NONE)                          \
  X(HINTS, "hints", ARR, OPT, OBJ)                                             \
  X(UNDETECTED_MUTANTS, "undetected_mutants", ARR, OPT, STR)

/* checks[].per_tensor[].hints[]: one diagnosis hint of an output. */
#define PG__REPORT_KEYS_HINT(X)                   \
  X(KIND, "kind", STR, REQ, NONE)                 \
  X(CONFIDENCE, "confidence", NUM, OPT, NONE)     \
  X(DETAIL, "detail", STR, OPT, NONE)             \
  X(AXIS, "axis", INT_NULL, OPT, NONE)            \
  X(TILE, "tile", INT_NULL, OPT, NONE)

/* checks[].per_tensor[].error_map (docs/report.md: shape [R, C], cells R rows of C). */
#define PG__REPORT_KEYS_ERROR_MAP(X)                   \
  X(SHAPE, "shape", ARR, REQ, INT)                     \
  X(ROW_AXES, "row_axes", ARR, OPT, INT)               \
  X(COL_AXIS, "col_axis", INT, OPT, NONE)              \
  X(ROWS_PER_CELL, "rows_per_cell", NUM, OPT, NONE)    \
  X(COLS_PER_CELL, "cols_per_cell", NUM, OPT, NONE)    \
  X(ROWS_TOTAL, "rows_total", NUM, OPT, NONE)          \
  X(COLS_TOTAL, "cols_total", NUM, OPT, NONE)          \
  X(METRIC, "metric", STR, OPT, NONE)                  \
  X(CELLS, "cells", ARR, REQ, NONE)                    \
  X(MISMATCH_CELLS, "mismatch_cells", ARR, OPT, NONE)

/* checks[].per_tensor[].error_histogram, and each of its buckets[]. */
#define PG__REPORT_KEYS_HISTOGRAM(X) X(BUCKETS, "buckets", ARR, REQ, OBJ)

#define PG__REPORT_KEYS_BUCKET(X)                            \
  X(GOLDEN_ABS_LO, "golden_abs_lo", NUM, REQ, NONE)          \
  X(GOLDEN_ABS_HI, "golden_abs_hi", NUM_NULL, OPT, NONE)     \
  X(N, "n", NUM, REQ, NONE)                                  \
  X(MISMATCHES, "mismatches", NUM, OPT, NONE)                \
  X(MAX_ABS_DIFF, "max_abs_diff", NUM_NULL, OPT, NONE)       \
  X(MAX_ERR_OVER_TOL, "max_err_over_tol", NUM_NULL, OPT, NONE)

/* checks[].inspection under the pypto workflow's protocol (docs/pypto.md "Inspection
 * probes"): one probe (--inspect NAME), iterations along axis 2; per_iter is the mode's
 * that decided first_failure.drift_onset_iter (else the first mode's), modes[] every
 * mode's probe as phasegate writes its own. */
#define PG__REPORT_KEYS_INSPECTION(X)                        \
  X(PROTOCOL, "protocol", STR, REQ, NONE)                    \
  X(NAME, "name", STR, REQ, NONE)                            \
  X(MODE, "mode", STR, OPT, NONE)                            \
  X(AXIS, "axis", INT, OPT, NONE)                            \
  X(ITERATIONS, "iterations", INT, OPT, NONE)                \
  X(DRIFT_ONSET_ITER, "drift_onset_iter", INT_NULL, OPT, NONE) \
  X(PER_ITER, "per_iter", ARR, REQ, OBJ)                     \
  X(MODES, "modes", ARR, OPT, OBJ)

/* checks[].inspection.per_iter[]: one iteration, as the workflow names its metrics. */
#define PG__REPORT_KEYS_PER_ITER(X)                          \
  X(ITER, "iter", INT, REQ, NONE)                            \
  X(MAX_ABS_DIFF, "max_abs_diff", NUM_NULL, OPT, NONE)       \
  X(MAX_REL_DIFF, "max_rel_diff", NUM_NULL, OPT, NONE)       \
  X(ALL_CLOSE, "all_close", BOOL, REQ, NONE)

/* The report's run and every check's run (docs/report.md "Provenance"): which run wrote
 * it, where, on which device, when. A check's run has id, session, host, device and its
 * own started_at / ended_at; the report's has them all. */
#define PG__REPORT_KEYS_RUN(X)                         \
  X(ID, "id", STR, REQ, NONE)                          \
  X(SESSION, "session", STR_NULL, OPT, NONE)           \
  X(STARTED_AT, "started_at", STR, OPT, NONE)          \
  X(ENDED_AT, "ended_at", STR, OPT, NONE)              \
  X(HOST, "host", STR, OPT, NONE)                      \
  X(DEVICE, "device", OBJ, OPT, NONE)                  \
  X(IMPL, "impl", STR, OPT, NONE)                      \
  X(MODES, "modes", ARR, OPT, STR)                     \
  X(TOOL_VERSION, "tool_version", STR, OPT, NONE)       \
  X(PYTHON, "python", OBJ, OPT, NONE)

/* run.device: the device the run was given. */
#define PG__REPORT_KEYS_DEVICE(X)                \
  X(KIND, "kind", STR, OPT, NONE)                \
  X(INDEX, "index", INT, OPT, NONE)              \
  X(NAME, "name", STR_NULL, OPT, NONE)

/* selection: what the report holds (a subset run says so). */
#define PG__REPORT_KEYS_SELECTION(X)             \
  X(LEVELS, "levels", ARR, REQ, INT)             \
  X(CASES, "cases", ARR, REQ, STR)               \
  X(MODES, "modes", ARR, OPT, STR)               \
  X(COMPLETE, "complete", BOOL, OPT, NONE)       \
  X(SUITE_CASES, "suite_cases", INT, OPT, NONE)

/* findings[]: what a refused run found wrong (contract, suite, golden, environment). */
#define PG__REPORT_KEYS_FINDING(X)               \
  X(SEVERITY, "severity", STR, REQ, NONE)        \
  X(MESSAGE, "message", STR, REQ, NONE)          \
  X(FILE, "file", STR_NULL, OPT, NONE)           \
  X(LINE, "line", INT, OPT, NONE)                \
  X(COLUMN, "column", INT, OPT, NONE)            \
  X(RULE, "rule", STR_NULL, OPT, NONE)

/* The names: PG__RK_TOP_OP_NAME is "op_name", PG__RK_CHECK_STATUS "status", ... */
#define PG__RK_NAME_(LIST, ID, key) static const char PG__RK_##LIST##_##ID[] = key;
#define PG__RK_TOP_(ID, key, t, n, e) PG__RK_NAME_(TOP, ID, key)
#define PG__RK_CHECK_(ID, key, t, n, e) PG__RK_NAME_(CHECK, ID, key)
#define PG__RK_FAILURE_(ID, key, t, n, e) PG__RK_NAME_(FAILURE, ID, key)
#define PG__RK_MODE_(ID, key, t, n, e) PG__RK_NAME_(MODE, ID, key)
#define PG__RK_TENSOR_(ID, key, t, n, e) PG__RK_NAME_(TENSOR, ID, key)
#define PG__RK_HINT_(ID, key, t, n, e) PG__RK_NAME_(HINT, ID, key)
#define PG__RK_ERROR_MAP_(ID, key, t, n, e) PG__RK_NAME_(ERROR_MAP, ID, key)
#define PG__RK_HISTOGRAM_(ID, key, t, n, e) PG__RK_NAME_(HISTOGRAM, ID, key)
#define PG__RK_BUCKET_(ID, key, t, n, e) PG__RK_NAME_(BUCKET, ID, key)
#define PG__RK_RUN_(ID, key, t, n, e) PG__RK_NAME_(RUN, ID, key)
#define PG__RK_DEVICE_(ID, key, t, n, e) PG__RK_NAME_(DEVICE, ID, key)
#define PG__RK_SELECTION_(ID, key, t, n, e) PG__RK_NAME_(SELECTION, ID, key)
#define PG__RK_FINDING_(ID, key, t, n, e) PG__RK_NAME_(FINDING, ID, key)
#define PG__RK_INSPECTION_(ID, key, t, n, e) PG__RK_NAME_(INSPECTION, ID, key)
#define PG__RK_PER_ITER_(ID, key, t, n, e) PG__RK_NAME_(PER_ITER, ID, key)
PG__REPORT_KEYS_TOP(PG__RK_TOP_)
PG__REPORT_KEYS_CHECK(PG__RK_CHECK_)
PG__REPORT_KEYS_FAILURE(PG__RK_FAILURE_)
PG__REPORT_KEYS_MODE(PG__RK_MODE_)
PG__REPORT_KEYS_TENSOR(PG__RK_TENSOR_)
PG__REPORT_KEYS_HINT(PG__RK_HINT_)
PG__REPORT_KEYS_ERROR_MAP(PG__RK_ERROR_MAP_)
PG__REPORT_KEYS_HISTOGRAM(PG__RK_HISTOGRAM_)
PG__REPORT_KEYS_BUCKET(PG__RK_BUCKET_)
PG__REPORT_KEYS_RUN(PG__RK_RUN_)
PG__REPORT_KEYS_DEVICE(PG__RK_DEVICE_)
PG__REPORT_KEYS_SELECTION(PG__RK_SELECTION_)
PG__REPORT_KEYS_FINDING(PG__RK_FINDING_)
PG__REPORT_KEYS_INSPECTION(PG__RK_INSPECTION_)
PG__REPORT_KEYS_PER_ITER(PG__RK_PER_ITER_)

/* One key of a list as data, for the loader's check. */
struct pg__report_key {
  const char *name;
  int types, need, elems;
};
#define PG__RK_ENTRY(ID, key, t, n, e) {key, PG__J_##t, PG__RK_NEED_##n, PG__J_##e},

#endif
