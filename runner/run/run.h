/* phasegate runner — run orchestration: one phase of one op against an impl, every
 * selected case in every requested mode (DESIGN.md §6, §8; `phasegate run`).
 *
 * pg_run() loads the contract and suite, selects cases, and for each case binds dims,
 * generates (or loads) inputs, computes the cumulative golden, calls the impl in each
 * mode through an adapter, compares every boundary output, and merges the results
 * into the phase's evaluation_report.json. It never prints: console lines go to the
 * caller's `on_line` callback (the CLI prints them).
 */
#ifndef PHASEGATE_RUN_H
#define PHASEGATE_RUN_H

#include <stdint.h>

#include "impl/impl.h"
#include "phasegate/compare.h"
#include "phasegate/error.h"
#include "tensors/tensors.h"

/* Ordered by severity: worst wins when aggregating (ERROR > FAIL > PASS > SKIPPED). */
enum pg_verdict { PG_VERDICT_SKIPPED = 0, PG_VERDICT_PASS, PG_VERDICT_FAIL, PG_VERDICT_ERROR };
const char *pg_verdict_name(enum pg_verdict v); /* "PASS", … */
enum pg_verdict pg_verdict_parse(const char *s);  /* SKIPPED for unknown text */

struct pg_tensor_check {
  char name[PG_NAME_MAX];
  enum pg_dtype dtype;
  int ndim;
  int64_t shape[PG_MAX_NDIM];
  int compared;              /* cmp is filled */
  int values_checked;        /* the verdict used values (precision case) */
  int passed;
  char rule[32];
  double atol, rtol;
  struct pg_cmp_result cmp;
};

struct pg_mode_result {
  char mode[64];
  enum pg_verdict status;
  enum pg_category category;  /* when FAIL / ERROR */
  char summary[640];
  struct pg_tensor_check *tensors;
  int n_tensors;
  double impl_ms;
  int exit_code, signo, timed_out;
  char *captured;             /* impl stdout + stderr tail, redacted; owned */
  int failing_boundary;       /* earliest failing module boundary found (0 = unknown) */
};

struct pg_case_result {
  char id[PG_NAME_MAX];
  int index;                  /* position in the suite */
  int level;
  int precision_checked;
  enum pg_verdict status;
  struct pg_mode_result *modes;
  int n_modes;
  int all_close;
  double max_abs_diff, max_rel_diff;
  /* failure (status FAIL / ERROR) */
  enum pg_category category;
  char summary[640];
  int failing_boundary;
  char fingerprint[32];       /* "" when no mode failed */
  char *repro;                /* owned */
  char *knobs_json;           /* owned */
  double inputs_ms, golden_ms, total_ms;
  int golden_cached;
  int mistrusted, cpu_reproducer_candidate;
  char hint[512];
  struct pg_cancel_result cancel; /* what cancellation_stress achieved (cancel.present) */
};

void pg_case_result_reset(struct pg_case_result *r);

/* Divergence fingerprint over the modes in requested order, ignoring SKIPPED ones:
 * "" (none failed), "all_fail", "kernel_ok_npu_only" (first passes, last fails),
 * "ir_divergence" (first fails, last passes), "mixed" (first and last pass, a middle
 * mode fails). */
const char *pg_divergence_fingerprint(const enum pg_verdict *modes, int n);

typedef void (*pg_run_line_fn)(void *user, int to_stderr, const char *line);

struct pg_run_opts {
  const char *op_dir, *contract_path, *suite_path;
  const char *impl_spec;
  int up_to_module;           /* 0: not given; < 0: not a number (see up_to_module_arg) */
  const char *up_to_module_arg; /* the text given, for the message naming the valid range */
  const char *case_ids;       /* comma-separated ids, NULL = all */
  unsigned levels_mask;       /* bit n set = level Ln selected; 0 = all */
  const char *modes;          /* comma-separated, NULL = "sim" */
  const char *report_path;    /* explicit file */
  const char *report_dir;     /* else <dir>/<op>/M<k>/evaluation_report.json */
  double timeout_s;           /* <= 0: 120 */
  const char *save_data, *golden_data;
  int reference_bits;         /* 32 or 64 */
  const char *golden_lib;
  int no_golden_cache;
  uint64_t max_bytes;
  int device_id;              /* < 0: from CTEST_RESOURCE_GROUP_0_<TYPE>, else 0 */
  uint64_t rlimit_as;         /* 0 = inherited */
  const char *work_dir;
  int keep_work;
  int fresh_process;          /* one impl process per call (plugin: forked child) */
  int worker_max_calls;       /* recycle a persistent process after N calls; 0 = never */
  const char *serve_control;  /* `phasegate serve` control directory to lease from */
  int no_bisect;              /* do not search earlier boundaries on failure */
  int jobs;                   /* > 1: run cases in that many worker processes */
  const char *self_exe;       /* for repro lines; NULL = "phasegate" */
  const char *tool_version;
  const char *inspect;        /* print every metric of this output per case and mode */
  pg_run_line_fn on_line;
  void *user;
};

struct pg_run_summary {
  int cases_total, passed, failed, errors, skipped;
  enum pg_verdict status;
  int exit_code;              /* 0 PASS, 1 FAIL, 2 ERROR, 77 all SKIPPED */
  char report_path[4096];
  int diagnosed;              /* the error's findings already went to on_line, one per
                                 line: the caller should not print the error again */
};

/* Runs one phase. Returns PG_OK when it ran (whatever the verdicts; see summary),
 * a negative code for usage/contract/suite errors (exit 2), all found before any case
 * runs: --up-to-module outside 1..N, an --inspect name that is no tensor of the op,
 * empty --modes, an impl that cannot be loaded (pg_impl_check), a report, --report-dir
 * or --save-data location that cannot be created or written, a single-case
 * --golden-data layout with several cases selected. Contract and suite findings go to
 * on_line (then summary->diagnosed is set); err holds the message otherwise. */
int pg_run(const struct pg_run_opts *o, struct pg_run_summary *s, struct pg_error *err);

/* Device id from CTEST_RESOURCE_GROUP_0 / CTEST_RESOURCE_GROUP_0_<TYPE>, else -1. */
int pg_run_device_from_env(void);

/* Replaces numeric tokens in `text` (in place) that spell a value of any of the given
 * tensors with "<redacted>"; the information barrier for captured impl output.
 * Returns a new malloc'ed string (NULL on allocation failure). */
char *pg_redact_text(const char *text, const struct pg_tensor *const *tensors, int n);

#endif
