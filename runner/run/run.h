/* phasegate runner — the run room (docs/design.md §2, §6, §8; `phasegate run`): one phase of
 * one op against an impl, every selected case in every requested mode.
 *
 * pg_run() loads the contract and suite, selects cases, and for each case binds dims,
 * generates (or loads) inputs, computes the cumulative golden (cached), calls the impl
 * in each mode through its adapter, compares every boundary output, classifies what
 * happened (run/classify.c: status, category, fingerprint, boundary, hints) and hands
 * the finished cases to the caller's hooks. It never formats text for people and never
 * writes the report itself: the report room implements the hooks (pg_report_hooks()),
 * the CLI wires them in. The impl-free steps of a case (inputs, goldens, compare) are
 * exposed at the end for `phasegate selftest`.
 */
#ifndef PHASEGATE_RUN_H
#define PHASEGATE_RUN_H

#include <stdint.h>

#include "impl/impl.h"
#include "phasegate/compare.h"
#include "phasegate/error.h"
#include "run/golden_cache.h" /* the on-disk golden cache, for `phasegate cache` */
#include "run/inputs.h"
#include "opdir/opdir.h"
#include "tensors/tensors.h"

/* Ordered by severity: worst wins when aggregating (ERROR > FAIL > PASS > SKIPPED). */
enum pg_verdict { PG_VERDICT_SKIPPED = 0, PG_VERDICT_PASS, PG_VERDICT_FAIL, PG_VERDICT_ERROR };
const char *pg_verdict_name(enum pg_verdict v); /* "PASS", … */
enum pg_verdict pg_verdict_parse(const char *s);  /* SKIPPED for unknown text */

/* failure_category of the report (docs/design.md §8). Decided in run/classify.c only. */
enum pg_category {
  PG_CAT_NONE = 0,
  PG_CAT_PRECISION,
  PG_CAT_STRUCTURAL,
  PG_CAT_RUNTIME,
  PG_CAT_INFRA,
  PG_CAT_OTHER
};
const char *pg_category_name(enum pg_category c); /* "precision", …; NULL for NONE */

/* What decided a mode's verdict: the impl's own fact, or what the runner found. */
enum pg_run_fact {
  PG_RUN_FACT_NONE = 0,   /* nothing wrong */
  PG_RUN_FACT_IMPL,       /* the impl call's fact (pg_mode_result.impl_fact) */
  PG_RUN_FACT_VALUES,     /* an output's values are outside its tolerance */
  PG_RUN_FACT_LAYOUT,     /* compare found an output's shape or dtype wrong */
  PG_RUN_FACT_RUNNER,     /* the runner could not do its part (memory, I/O, rule, golden) */
  PG_RUN_FACT_CASE_LIMIT, /* the case is over a limit (--max-bytes) */
  PG_RUN_FACT_NOT_IMPLEMENTED, /* the phase is after --implemented-phases: nothing ran */
  PG_RUN_FACT_COUNT
};

/* The category run/classify.c gives an impl call's outcome (PG_CAT_NONE for OK and
 * UNAVAILABLE). */
enum pg_category pg_classify_category(const struct pg_impl_outcome *out);

/* The failure subcategory run/classify.c reads from an impl call's outcome (its table of
 * captured-output patterns, docs/report.md "Failure subcategories"), or NULL: an
 * environment failure ("shared_library", "undefined_symbol", "missing_module",
 * "pto_enum", "cann_env"; *recipe, if recipe is given, is then its fix and the mode an
 * infra ERROR) or a device label ("aicore", "tile_shape", "workspace_overlap", "oom",
 * "host_crash"; *recipe NULL). Static strings. */
const char *pg_classify_subcategory(const struct pg_impl_outcome *out, const char **recipe);

/* Diagnosis hints (docs/design.md §8 "Hints"): what kind of bug a failing tensor looks like,
 * each backed by a check that could have come out the other way (a counterfactual
 * golden the impl matches, a pattern in the mismatch mask). The kinds and their report
 * names live in run/classify.c (pg_hint_kind_name); adding a kind is one enum value + one
 * name there. */
enum pg_hint_kind {
  PG_HINT_TRANSPOSED = 0,
  PG_HINT_SCALED,                   /* detail: the factor, e.g. 1/sqrt(D) */
  PG_HINT_WRONG_AXIS,               /* softmax / norm / reduction over another axis */
  PG_HINT_REDUCTION_TAIL_DROPPED,   /* the last partial tile of a reduction axis ignored */
  PG_HINT_TILE_EDGE,                /* mismatches confined to the last partial tile of an axis */
  PG_HINT_PERIODIC,                 /* mismatches repeat with a period along an axis */
  PG_HINT_SHIFTED,                  /* off by one along an axis */
  PG_HINT_SIGN_FLIP,
  PG_HINT_ZEROS,
  PG_HINT_UNWRITTEN,                /* the NaN prefill survived */
  PG_HINT_INPUT_ECHO,               /* an input, or a slice of one, copied out */
  PG_HINT_LOW_PRECISION_INPUTS,     /* matches a golden fed fp16/bf16/tf32-rounded inputs */
  PG_HINT_LOW_PRECISION_ACCUMULATION,
  PG_HINT_NAN_ORIGIN,               /* where the first non-finite value appears, from which input */
  PG_HINT_SUITE_CALIBRATION,        /* within what another summation order gives */
  PG_HINT_GOLDEN_FALLBACK,          /* bit-exact on a transcendental output */
  PG_HINT_NONDETERMINISTIC,         /* two runs differ bitwise */
  PG_HINT_APPROXIMATION,            /* another formula of the same function */
  PG_HINT_KIND_COUNT
};

#define PG_MAX_HINTS 8              /* per tensor check, strongest first */

struct pg_hint {
  enum pg_hint_kind kind;
  double confidence;                /* 0..1: how much better the hypothesis fits */
  char detail[256];                 /* metrics and indices only: never a value */
  /* The geometry the hint names, so a renderer need not parse `detail` (-1: none):
   * the tensor axis (tile_edge, periodic, shifted: of the output; wrong_axis: the
   * axis the impl appears to use) and the tile size or period (tile_edge, periodic,
   * reduction_tail_dropped). */
  int axis;
  int64_t tile;
};

/* The report name of a hint kind ("transposed", "reduction_tail_dropped", …). */
const char *pg_hint_kind_name(enum pg_hint_kind kind);

struct pg_tensor_check;
/* Adds a hint to t, keeping t->hints sorted by confidence (strongest first) and at most
 * PG_MAX_HINTS (the weakest dropped); a kind already present keeps the stronger one.
 * No geometry (axis = tile = -1). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void pg_tensor_check_add_hint(struct pg_tensor_check *t, enum pg_hint_kind kind,
                              double confidence, const char *fmt, ...);
/* The same with the geometry the hint names (struct pg_hint: axis, tile; -1: none). */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
void pg_tensor_check_add_hint_at(struct pg_tensor_check *t, enum pg_hint_kind kind, int axis,
                                 int64_t tile, double confidence, const char *fmt, ...);

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
  struct pg_hint hints[PG_MAX_HINTS]; /* strongest first (pg_tensor_check_add_hint) */
  int n_hints;
  /* Suite strength (docs/design.md §8): counterfactual goldens that would pass this case's
   * tolerance, as "<kind>: <detail>" (no values). */
#define PG_MAX_UNDETECTED 8
  char undetected[PG_MAX_UNDETECTED][160];
  int n_undetected;
  int strength_checked;      /* the suite-strength check ran for this output */
  /* The CPU reproducer of a Python golden (run/diagnose.c): the golden rerun with its
   * floating inputs in another precision, compared with the reference and the impl. */
#define PG_MAX_REPRO_VARIANTS 2
  struct pg_repro_variant {
    const char *precision;   /* "float64", "bfloat16" (static strings) */
    double vs_reference;     /* max_abs_diff of the variant from the reference */
    double impl_max_abs_diff, impl_rmse;
    int64_t impl_mismatches; /* of the impl against the variant, under the output's rule */
  } repro[PG_MAX_REPRO_VARIANTS];
  int n_repro;
  int repro_closest;         /* 1 + the index of the variant the impl fits (rmse) 10x
                                better than the reference and the other variants; 0:
                                none (the reference itself is as close as any) */
  struct pg_cmp_rule cmp_rule; /* the rule cmp used (the mask analysis re-applies it) */
  /* The mismatch mask of a failing precision check (run/diagnose.c): marginals,
   * evidence, sentinel, first non-finite value. */
  int analyzed;
  struct pg_cmp_mask mask;
  char nan_input[PG_NAME_MAX]; /* the input holding non-finite values when the impl's
                                  are non-finite too (nan_origin), "" if none does */
  /* ... and its error map and |golden| histogram (pg_cmp_error_map); owned, NULL when
   * not made (a passing or structure-only check, out of memory) */
  struct pg_cmp_error_map *error_map;
  /* PASS warnings (docs/design.md §8 "Suite strength"; thresholds in run/classify.c) */
  int one_sided;             /* error balance far from 0 over many elements */
  /* --repeat N: the calls after the first, compared bitwise with the first */
  int repeat_calls;          /* repeats compared (0: not repeated) */
  int64_t repeat_differ;     /* elements of the worst repeat that differ bitwise */
  int64_t repeat_first_flat; /* its first differing element (-1: none) */
  int64_t repeat_first_index[PG_MAX_NDIM];
  int repeat_worst;          /* the repeat (2..N) with the most differing elements */
};

/* One inspection probe of a mode (docs/design.md §8, docs/diagnosis.md "Inspection probes"):
 * the impl's `inspection_<name>` output against the reference probe, iteration by
 * iteration along its leading axis. Metrics only: probe values are golden values. */
struct pg_probe_iter {
  int64_t n, mismatches;
  double max_abs_diff, max_rel_diff;
  int passed;
};
struct pg_probe_check {
  char name[PG_NAME_MAX];     /* as declared in `inspect:` (the impl's output is
                                 inspection_<name>) */
  enum pg_dtype dtype;
  int ndim;
  int64_t shape[PG_MAX_NDIM];
  char rule[32];
  double atol, rtol;
  int compared;               /* iters is filled */
  char problem[256];          /* why it was not compared ("" when it was) */
  struct pg_probe_iter *iters; /* shape[0] of them; owned */
  int n_iters;
  int drift_onset_iter;       /* the first iteration outside the tolerance; -1: none */
  int iter_axis;              /* the iteration axis: 0 (phasegate's probes), 2 (the pypto
                                 workflow's, docs/pypto.md "Inspection probes") */
};

struct pg_mode_result {
  char mode[64];
  enum pg_verdict status;
  enum pg_category category;  /* when FAIL / ERROR */
  /* when FAIL / ERROR, what the impl's output or ending says more precisely (classify.c's
   * table, docs/report.md "Failure subcategories"): an environment failure ("shared_library",
   * "missing_module", …) or a device label ("aicore", "host_crash", "workspace_overlap",
   * "oom", "tile_shape"); static strings, NULL when none */
  const char *subcategory;
  const char *recipe;         /* an environment failure's fix (the case's hint), or NULL */
  char summary[640];
  struct pg_tensor_check *tensors;
  int n_tensors;
  double impl_ms;
  double startup_ms;          /* persistent impls: the process start this call paid */
  char device_name[128];      /* the device the impl said it ran on, or "" */
  int exit_code, signo, timed_out;
  char *captured;             /* impl stdout + stderr tail, redacted; owned */
  int earliest_boundary;      /* FAIL: the earliest failing boundary j <= k (0 = unknown) */
  enum pg_run_fact fact;      /* what decided status (classify.c) */
  enum pg_impl_fact impl_fact; /* fact == PG_RUN_FACT_IMPL: the impl's fact */
  int fact_output;            /* the output the fact is about, -1 when none */
  int structure_only;         /* a `modes:` policy made the mode structure-only: values
                                 compared and reported, not gating (0: they gate) */
  char policy_from[16];       /* where that policy was declared: "contract", "suite",
                                 "case"; "" when no policy names the mode */
  struct pg_probe_check *probes; /* module k's inspection probes, when it declares any */
  int n_probes;
  /* --show-values: impl and golden values at the worst and first mismatching
   * elements, for the console only (never the report: the information barrier is
   * broken on the user's own terminal, on request); owned, NULL when not asked. */
  char *local_values;
};

/* Suite strength of a case (docs/runner.md "Suite strength"): not applicable (not a
 * precision case, no float output small enough, turned off), read from the golden
 * cache, computed by this run, or not computed (a cold cache and no --suite-strength). */
enum pg_strength_source {
  PG_STRENGTH_NA = 0,
  PG_STRENGTH_CACHED,
  PG_STRENGTH_COMPUTED,
  PG_STRENGTH_NOT_COMPUTED
};

/* When a run computes suite strength: PG_STRENGTH_FROM_CACHE shows it only from the
 * cache (a phase run never spends time on it); PG_STRENGTH_COMPUTE computes it on a
 * miss and stores it (--suite-strength); PG_STRENGTH_ONLY computes it for every
 * selected case and does nothing else: no impl, no modes, no report (`phasegate
 * selftest --suite-strength`, the op's composition test). */
enum pg_strength_policy {
  PG_STRENGTH_FROM_CACHE = 0,
  PG_STRENGTH_COMPUTE,
  PG_STRENGTH_ONLY
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
  const char *subcategory;    /* the failing mode's (static; NULL when none) */
  char summary[640];
  int earliest_boundary;      /* the failing mode's earliest_boundary (0 = unknown) */
  char fingerprint[32];       /* "" when no mode failed */
  char *repro;                /* owned */
  char *knobs_json;           /* owned */
  double inputs_ms, golden_ms, total_ms;
  double diagnosis_ms;        /* counterfactual goldens, CPU reproducer, suite strength,
                                 mask analysis, PASS warnings, repeat comparisons */
  int golden_cached;
  /* Where this case's suite strength came from (docs/runner.md "Suite strength"), and
   * how many undetected mutants it lists over every output. */
  enum pg_strength_source strength;
  int strength_undetected;
  int mistrusted, cpu_reproducer_candidate;
  char hint[512];
  struct pg_cancel_result cancel; /* what cancellation_stress achieved (cancel.present) */
  int has_probes;             /* the phase's module declares inspection probes */
  int probes_pypto;           /* they are the pypto workflow's (--inspect NAME): the report
                                 writes checks[].inspection as its object with per_iter */
  int drift_onset_iter;       /* the failing mode's (else the first mode's) first probe
                                 iteration outside the tolerance; -1: none */
  char drift_probe[PG_NAME_MAX]; /* the probe it is about */
  char drift_mode[64];
  int not_implemented;        /* the phase is after --implemented-phases: every mode
                                 SKIPPED, nothing was generated, computed or called */
  double started_ms, ended_ms; /* wall clock of the case, ms since the epoch */
};

void pg_case_result_reset(struct pg_case_result *r);

/* Divergence fingerprint over the modes in requested order, ignoring SKIPPED ones:
 * "" (none failed), "all_fail", "kernel_ok_npu_only" (first passes, last fails),
 * "ir_divergence" (first fails, last passes), "mixed" (first and last pass, a middle
 * mode fails). */
const char *pg_divergence_fingerprint(const enum pg_verdict *modes, int n);

/* Where console lines go (the CLI prints them). */
typedef void (*pg_run_line_fn)(void *user, int to_stderr, const char *line);
/* printf into one line of at most 2047 bytes, then fn(user, to_stderr, line); nothing
 * when fn is NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void pg_run_linef(pg_run_line_fn fn, void *user, int to_stderr, const char *fmt, ...);

/* How far a run is, after each finished case: what a live progress line shows. */
struct pg_run_progress {
  int done, total;       /* (case, mode) runs finished / selected */
  int failed;            /* of the finished ones: FAIL or ERROR */
  double elapsed_ms;     /* since the first case started */
};
typedef void (*pg_run_progress_fn)(void *user, const struct pg_run_progress *p);

/* The phase being run: what the report's header and the console lines name. */
struct pg_run_phase {
  const char *op;
  const char *impl_spec;
  int up_to_module, total_modules;
  const char *tool_version;
  const char *contract_path, *suite_path;
  const char *modes;          /* comma-separated, as run (duplicates dropped) */
  const char *inspect;        /* --inspect NAME, or NULL */
  /* Which run wrote it (docs/report.md "One run, one verdict"): a report holds the
   * cases of one run id, or of one session (one ctest invocation); a report of another
   * run is moved to the history, never merged into. */
  const char *registration;   /* the CMake registration (--report-name), or NULL */
  const char *run_id;         /* unique per pg_run */
  const char *session;        /* the ctest invocation's id (--report-session), or NULL */
  double started_ms, ended_ms; /* wall clock, ms since the epoch */
  const char *host;
  const char *device_kind;    /* the CTest resource type that gave the device, or "host" */
  int device_index;
  int suite_cases;            /* cases in the suite (selection.complete) */
  const char *python;         /* the Python interpreter of python: impls and Python goldens,
                                 a JSON object text (pg_python_preflight), or NULL */
  /* A refused run (exit 2 before any case): the category (structural: the op's files;
   * infra: the environment), the sentence and the findings. NULL refusal: it ran. */
  const char *refusal;
  const char *refusal_category;
  const struct pg_diags *findings;
};

struct pg_run_summary {
  int cases_total, passed, failed, errors, skipped;
  /* cases by where their suite strength came from (enum pg_strength_source), and the
   * cases that list at least one undetected mutant */
  int strength[4], strength_weak;
  enum pg_verdict status;
  int exit_code;              /* 0 PASS, 1 FAIL, 2 ERROR, 77 all SKIPPED */
  char *report_path;          /* owned; release with pg_run_summary_reset */
  int diagnosed;              /* the error's findings already went to on_line, one per
                                 line: the caller should not print the error again */
};
void pg_run_summary_reset(struct pg_run_summary *s);

/* What pg_run needs from the rooms above it (dependency inversion: the report room
 * implements these, pg_report_hooks() returns the standard set, the CLI passes it). */
struct pg_run_hooks {
  /* Makes the finished cases durable: merges them into the phase's report at `path`
   * (locked, so --jobs workers may call it concurrently). NULL: nothing is written.
   * PG_OK with err->message set: written, and the message is a warning to show. */
  int (*persist)(const char *path, const struct pg_run_phase *ph,
                 const struct pg_case_result *cases, int n, struct pg_error *err);
  /* The console lines of one finished case, sent to line(user, …). NULL: none. */
  void (*case_lines)(const struct pg_run_phase *ph, const struct pg_case_result *r,
                     pg_run_line_fn line, void *user);
  /* The lines after the last case. NULL: none. */
  void (*summary_lines)(const struct pg_run_phase *ph, const struct pg_run_summary *s,
                        const struct pg_case_result *cases, int n, pg_run_line_fn line,
                        void *user);
  /* The information barrier for text the impl wrote: a malloc'ed copy of text in which
   * every number that spells a value of tensors[0..n) is replaced (NULL: out of
   * memory). Required: pg_run refuses to run without it. */
  char *(*redact)(const char *text, const struct pg_tensor *const *tensors, int n);
  /* The barrier for text a Python golden's worker wrote (an exception message may
   * print any intermediate tensor): a malloc'ed copy with every number replaced.
   * NULL: such text is withheld. */
  char *(*redact_numbers)(const char *text);
};

struct pg_run_opts {
  const char *op_dir, *contract_path, *suite_path;
  const char *impl_spec;
  int up_to_module;           /* 0: not given; < 0: not a number (see up_to_module_arg) */
  const char *up_to_module_arg; /* the text given, for the message naming the valid range */
  int implemented_phases;     /* --implemented-phases K (the CMake PHASES): phases after K
                                 are listed but not implemented yet, so a run of one is
                                 SKIPPED without touching the impl; 0: all implemented */
  const char *case_ids;       /* comma-separated ids, NULL = all */
  unsigned levels_mask;       /* bit n set = level Ln selected; 0 = all */
  const char *modes;          /* comma-separated, NULL = "sim" */
  const char *report_path;    /* explicit file */
  const char *report_dir;     /* else <dir>/<name>/M<k>/evaluation_report.json */
  const char *report_name;    /* <name> above: the CMake registration; NULL: the op */
  const char *report_session; /* a file holding the ctest invocation's id (written by
                                 the registration's report/session test), or NULL */
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
  const char *python;         /* the interpreter of python: impls and Python goldens
                                 (NULL: $PHASEGATE_PYTHON, python3) */
  int no_bisect;              /* do not search earlier boundaries on failure */
  int e2e;                    /* --e2e: the integrated impl (default python:<op dir>/<op>_impl.py)
                                 against the op-level golden on the final outputs, as phase N
                                 (docs/pypto.md "The end-to-end check") */
  int jobs;                   /* > 1: run cases in that many worker processes */
  const char *self_exe;       /* for repro lines; NULL = "phasegate" */
  const char *tool_version;
  const char *inspect;        /* print every metric of this output per case and mode */
  /* Diagnosis bounds (docs/diagnosis.md): counterfactual goldens of a failing output
   * only up to diagnose_max_mib MiB per output (0: 512) and diagnose_budget_s seconds
   * per case (0: 4x the case's own time, 2..30 s; < 0: no diagnosis); suite strength
   * for outputs of at most strength_max_elems elements (0: 65536; < 0: off). */
  double diagnose_max_mib, diagnose_budget_s;
  int64_t strength_max_elems;
  enum pg_strength_policy strength_policy;
  int repeat;                 /* > 1: call the impl that many times per (case, mode) and
                                 compare the outputs bitwise (nondeterministic) */
  int show_values;            /* --show-values: values at mismatches on the console */
  pg_run_line_fn on_line;
  /* After each finished case (and its lines), serial runs only: with --jobs the
   * worker processes print their case lines themselves. NULL: none. */
  pg_run_progress_fn on_progress;
  void *user;                 /* of on_line and on_progress */
  struct pg_run_hooks hooks;  /* pg_report_hooks() */
};

/* Runs one phase. Returns PG_OK when it ran (whatever the verdicts; see summary),
 * a negative code for usage/contract/suite errors (exit 2), all found before any case
 * runs: no redact hook, --up-to-module or --implemented-phases outside 1..N, an
 * --inspect name that is no tensor of the op, empty --modes, an impl that cannot be
 * loaded (pg_impl_check), a report, --report-dir or --save-data location that cannot be
 * created or written, a single-case --golden-data layout with several cases selected.
 * A phase after --implemented-phases is not run: every selected case is SKIPPED as not
 * implemented yet (no impl check, no inputs, no golden, no impl call), and reported.
 * Contract and suite findings go to on_line (then summary->diagnosed is set); err holds
 * the message otherwise. Release `s` with pg_run_summary_reset either way. */
int pg_run(const struct pg_run_opts *o, struct pg_run_summary *s, struct pg_error *err);

/* The one validation `validate`, `list`, `gen` and `run` share (run/check.c): loads the
 * contract, checks its golden steps, loads the suite (suite_path may be NULL) against
 * it and checks every cancellation_stress target, every finding into `d`. Returns
 * PG_OK (warnings allowed), PG_EVALIDATE / PG_EPARSE when there is an error finding
 * (err: the first), or PG_ENOENT / PG_EIO / PG_ENOMEM with err only. The caller inits
 * and resets c, s and d. */
int pg_op_load(const char *contract_path, const char *suite_path, struct pg_contract *c,
               struct pg_suite *s, struct pg_diags *d, struct pg_error *err);

/* The knobs check of an op with eval/test_inputs.py (run/knobs.c, docs/pypto.md "Inputs
 * from make_inputs"), for `validate`: make_inputs(case) of every case, dry, through a
 * Python worker of `python` (its messages through `redact`, the number barrier); a
 * warning per (case, knob) never read, an error per case make_inputs cannot make, a
 * warning when the interpreter cannot run the file. PG_OK (findings in d) or PG_ENOMEM. */
int pg_suite_check_knobs(const struct pg_contract *c, const struct pg_suite *s,
                         const char *python, char *(*redact)(const char *text),
                         struct pg_diags *d);

/* Device id from CTEST_RESOURCE_GROUP_0 / CTEST_RESOURCE_GROUP_0_<TYPE>, else -1. */
int pg_run_device_from_env(void);

/* ---- the impl-free steps of one case, shared by pg_run and `phasegate selftest` ---- */

/* A case's bound dims and primary inputs. */
struct pg_case_data {
  struct pg_bindings dims;
  struct pg_tensor *inputs;   /* n_inputs, contract order, named after generation */
  int n_inputs;
  struct pg_cancel_result cancel;
  char *arguments;            /* make_inputs's argument order and non-tensor inputs, the
                                 request's "arguments" (JSON, owned); NULL: contract order */
};
/* Allocates the inputs of the contract's primary inputs (PG_ENOMEM); reset it with
 * pg_case_data_reset whatever this returns. */
int pg_case_data_init(struct pg_case_data *d, const struct pg_contract *c, struct pg_error *err);
/* Binds the case's dims (pg_case_bind_dims). */
int pg_case_data_bind(struct pg_case_data *d, const struct pg_contract *c,
                      const struct pg_case *cs, struct pg_error *err);
/* Generates the primary inputs deterministically (and the cancellation stress, if the
 * case asks for it); PG_ELIMIT when the case is over mo->max_bytes. */
int pg_case_data_generate(struct pg_case_data *d, const struct pg_contract *c,
                          const struct pg_golden_plan *plan, const struct pg_case *cs, const struct pg_materialize_opts *mo,
                          struct pg_error *err);
void pg_case_data_reset(struct pg_case_data *d);

/* ---- Python goldens (run/py_golden.c, docs/design.md §5) ---- */

/* The persistent Python worker that computes Python goldens: one process, started on
 * the first call, reused for every later one, ended by close. */
struct pg_py_golden_worker;
struct pg_py_golden_worker_opts {
  const char *python;         /* the interpreter (NULL: $PHASEGATE_PYTHON, else python3) */
  const char *log_dir;        /* the worker's log (NULL: $TMPDIR) */
  const char *work_dir;       /* call directories (NULL: $TMPDIR) */
  double timeout_s;           /* per call, and for the start (<= 0: 120) */
  const char *serve_control;  /* lease from this `phasegate serve` (NULL: as an impl's,
                                 $PHASEGATE_SERVE_CONTROL; "": never) */
  /* The number barrier (pg_redact_numbers) every message of the worker passes before
   * it is returned; NULL: the messages are withheld. */
  char *(*redact)(const char *text);
};
#define PG_PY_GOLDEN_MAX_DIMS 64
int pg_py_golden_worker_open(const struct pg_py_golden_worker_opts *o,
                             struct pg_py_golden_worker **w, struct pg_error *err);
void pg_py_golden_worker_close(struct pg_py_golden_worker *w); /* NULL is fine */

struct pg_case_data;
/* The case's inputs from the op's own input code, `make_inputs(case)` of c->test_inputs
 * (docs/pypto.md "Inputs from make_inputs"), through the worker: d->inputs (bound dims
 * in d->dims) in contract order, d->arguments when make_inputs gives another argument
 * order or non-tensor inputs. `unread` (size bytes, may be NULL) gets the case's knobs
 * (pg_case_key_is_knob) that make_inputs never read, comma-separated ("" when none). A
 * test_inputs.py that does not import, a make_inputs that raises or returns the wrong
 * kind, count, shape or dtype is PG_EIMPL with a message naming the file and case. */
int pg_py_make_inputs(struct pg_py_golden_worker *w, const struct pg_contract *c,
                      const struct pg_case *cs, struct pg_case_data *d, char *unread,
                      size_t size, struct pg_error *err);
/* Python golden k of the contract (k = 0: the op level; outputs: the final outputs)
 * on the case's primary inputs, into out[0..*n_out) named after the outputs. A golden
 * that fails (an exception, a crash, a timeout, a missing function) is PG_EIMPL with a
 * message naming its file and function, the worker's words behind the barrier. */
int pg_py_golden_call(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                      const struct pg_case *cs, const struct pg_case_data *d,
                      struct pg_tensor *out, int *n_out, struct pg_error *err);
/* The same, with the floating primary inputs cast to `precision` ("float64",
 * "bfloat16") inside the worker before the call, so the golden computes in it (the CPU
 * reproducer, docs/diagnosis.md); the outputs still cast to their declared dtypes. */
int pg_py_golden_call_precision(struct pg_py_golden_worker *w, const struct pg_contract *c,
                                int k, const struct pg_case *cs, const struct pg_case_data *d,
                                const char *precision, struct pg_tensor *out, int *n_out,
                                struct pg_error *err);

/* The reference inspection probes of phase k from the Python golden's companion
 * `<golden function>_inspect` (a trailing `_golden` replaced: `x_module12_golden` ->
 * `x_module12_inspect`, `x_golden_stage12` -> `x_golden_stage12_inspect`), same file,
 * same inputs, returning the probes in declared order (or a dict by probe name). */
int pg_py_golden_inspect(struct pg_py_golden_worker *w, const struct pg_contract *c, int k,
                         const struct pg_case *cs, const struct pg_case_data *d,
                         const struct pg_tensor_decl *const *probes, int n_probes,
                         struct pg_tensor *out, struct pg_error *err);
/* The pypto workflow's companion (docs/pypto.md "Inspection probes"): phase k's golden
 * file's `module_<k>_inspect(*primary_inputs)` returns a dict of probes; its entry
 * `probe` (or `inspection_<probe>`) into *out, cast to float32, in the shape it has. */
int pg_py_golden_inspect_pypto(struct pg_py_golden_worker *w, const struct pg_contract *c,
                               int k, const struct pg_case *cs, const struct pg_case_data *d,
                               const char *probe, struct pg_tensor *out, struct pg_error *err);

struct pg_golden_opts {
  const struct pg_golden_plan *plan; /* the contract's compiled golden steps */
  int precision_bits;         /* 32 or 64 */
  void *golden_lib;           /* pg_golden_lib_open, or NULL */
  int n_threads;              /* 0: all cores */
  struct pg_py_golden_worker *py; /* computes Python goldens; NULL: none can run */
  enum pg_phase_golden source;  /* NONE: the contract's choice (pg_contract_phase_golden);
                                   BUILTIN / PYTHON: that one (selftest compares both) */
};
/* Golden k of the case (k = 0: the op-level golden, else cumulative golden k) into
 * out[0..*n_out) (initialised by the caller, PG_MAX_BOUNDARY_OUTPUTS of them): a Python
 * golden through g->py, else composed from the built-in steps / plugins. PG_ENOTFOUND
 * with the reason when the phase has no golden. */
int pg_case_golden(const struct pg_case_data *d, const struct pg_contract *c,
                   const struct pg_case *cs, const struct pg_golden_opts *g, int k,
                   struct pg_tensor *out, int *n_out, struct pg_error *err);
/* One output against its reference under `rule` (pg_tensor_compare). */
int pg_case_compare(const struct pg_tensor *impl, const struct pg_tensor *ref,
                    const struct pg_cmp_rule *rule, int n_threads, struct pg_cmp_result *res,
                    struct pg_error *err);

#endif
