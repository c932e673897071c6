/* phasegate runner — classification: the one place that decides what happened means
 * (docs/design.md §2, §8). From FACTS — what the impl adapter saw (enum pg_impl_fact), what
 * the comparison found (enum pg_run_fact), what the runner itself could not do — it
 * decides each mode's status (PASS/FAIL/ERROR/SKIPPED), failure_category and summary,
 * the failure subcategory (the table of what the impl's own output says: environment
 * failures, device labels), the earliest failing boundary, the case's aggregate, the
 * divergence fingerprint, the case's hint, and the run's status and exit code. The names
 * of these values are run/names.c's; the per-tensor bug-kind hints are run/hints.c's.
 *
 * Adding a category is one enum row (run.h) and one rule row below; adding a fact is
 * one rule row (and, if it earns one, a hint row). Nothing here runs anything, reads
 * files or prints; the sentences of impl facts are the adapters', the ones of
 * comparison facts are written here.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "run/run_internal.h"

/* ------------------------------------------------------------------ the rules */

/* The hints: a next step for the common failure shapes (the summary says what, the
 * hint says how). Each is backed by the fact it is keyed by, never by summary text. */
enum hint {
  HINT_NONE = 0,
  HINT_EXPORT,    /* missing wrapper symbol: the signature to export */
  HINT_TIMEOUT,
  HINT_OVERRUN,   /* a canary was hit */
  HINT_UNWRITTEN,
  HINT_OOM,
  HINT_DEBUGGER,  /* killed by a signal */
  HINT_LAYOUT,    /* outputs not as the contract declares them */
  HINT_VALUES,    /* values outside the tolerance: HINT_NAN or HINT_INSPECT */
  HINT_NAN,       /* … with NaN where the reference has none */
  HINT_NAN_INPUT, /* … and an input holds non-finite values (nan_origin names it) */
  HINT_INSPECT,
  HINT_PROTOCOL,  /* a persistent process broke the worker protocol */
  HINT_PY_EXPORT, /* a worker found the impl malformed (python: no such function, …) */
  HINT_OUT_FILES, /* an output that is a link, a FIFO, …: never read */
  HINT_IMPORT     /* the impl module raised while being imported */
};

static const char *const hint_text[] = {
    [HINT_OVERRUN] = "the impl writes beyond the declared output size: check the tail tile and "
                     "the shape arithmetic of the last block",
    [HINT_UNWRITTEN] = "the wrapper returned 0 without writing the output: check it writes "
                       "outputs[i].data",
    [HINT_OOM] = "the impl ran out of memory: check its workspace size (or raise "
                 "--memory-limit)",
    [HINT_DEBUGGER] = "rerun the repro line under a debugger (the impl runs in a child process: "
                      "use 'set follow-fork-mode child' in gdb) or with ASan",
    [HINT_LAYOUT] = "the outputs must match the contract's boundary exactly (count, names, "
                    "shapes, dtypes)",
    [HINT_NAN] = "the impl produces NaN where the reference has none: look for exp overflow "
                 "(missing max subtraction), 0/0, or uninitialised memory",
    [HINT_NAN_INPUT] = "the impl produces NaN where the reference has none, and an input holds "
                       "NaN/Inf: check how the kernel treats non-finite inputs (see the "
                       "nan_origin hint)",
    [HINT_PROTOCOL] = "the worker must write the handshake, then exactly one answer line per "
                      "request with its id, on the fd pair of PHASEGATE_WORKER_FDS (never "
                      "stdout): see docs/worker_protocol.md, and the worker log if the line "
                      "names one",
    [HINT_OUT_FILES] = "write each output as a regular file of its own in out/ (no symlink, "
                       "hard link or FIFO, and keep out/ itself): phasegate never reads "
                       "outside the case directory",
    [HINT_PY_EXPORT] = "a python: impl module defines the function named above; it takes the "
                       "primary inputs in contract order and returns the boundary outputs in "
                       "declared order (a tensor, a tuple or list, or a dict by output name)",
    [HINT_INSPECT] = "use --inspect <output> for every metric and the first mismatching "
                     "indices, --save-data DIR to get the case's tensors",
    [HINT_IMPORT] = "the impl module raises while it is imported (a syntax error, an import "
                    "of a name that does not exist): the traceback is in the call's captured "
                    "output; `python -c 'import <module>'` from the module's directory shows "
                    "the same",
};

struct rule {
  enum pg_run_fact fact;
  enum pg_impl_fact impl;    /* PG_RUN_FACT_IMPL rows: the impl's fact */
  enum pg_verdict verdict;   /* FAIL: the failure is at the phase's boundary */
  enum pg_category category;
  int trumps;                /* replaces an earlier failure of another category of the
                                same mode (a wrong layout explains any value mismatch) */
  enum hint hint;
};

#define IMPL(f) PG_RUN_FACT_IMPL, PG_IMPL_FACT_##f
#define RUN(f) PG_RUN_FACT_##f, PG_IMPL_FACT_OK
static const struct rule rules[] = {
    /* what the comparison and the runner found */
    {RUN(NONE), PG_VERDICT_PASS, PG_CAT_NONE, 0, HINT_NONE},
    {RUN(VALUES), PG_VERDICT_FAIL, PG_CAT_PRECISION, 0, HINT_VALUES},
    {RUN(LAYOUT), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 1, HINT_LAYOUT},
    {RUN(RUNNER), PG_VERDICT_ERROR, PG_CAT_INFRA, 0, HINT_NONE},
    {RUN(CASE_LIMIT), PG_VERDICT_ERROR, PG_CAT_OTHER, 0, HINT_NONE},
    {RUN(NOT_IMPLEMENTED), PG_VERDICT_SKIPPED, PG_CAT_NONE, 0, HINT_NONE},
    /* what the impl adapter saw */
    {IMPL(OK), PG_VERDICT_PASS, PG_CAT_NONE, 0, HINT_NONE},
    {IMPL(UNAVAILABLE), PG_VERDICT_SKIPPED, PG_CAT_NONE, 0, HINT_NONE},
    {IMPL(NOT_FOUND), PG_VERDICT_ERROR, PG_CAT_INFRA, 0, HINT_NONE},
    {IMPL(LOAD_FAILED), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    /* an impl without the phase's entry point is the workspace's problem, not a kernel
     * that computes wrong: ERROR, as the pypto workflow routes a missing module symbol */
    {IMPL(MISSING_SYMBOL), PG_VERDICT_ERROR, PG_CAT_STRUCTURAL, 0, HINT_EXPORT},
    {IMPL(TIMEOUT), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_TIMEOUT},
    {IMPL(SIGNAL), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_DEBUGGER},
    {IMPL(SANITIZER_REPORT), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_NONE},
    {IMPL(OOM), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_OOM},
    {IMPL(EXIT_NONZERO), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_NONE},
    {IMPL(RETURNED_ERROR), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_NONE},
    {IMPL(CANARY_HIT), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_OVERRUN},
    {IMPL(UNWRITTEN_OUTPUT), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_UNWRITTEN},
    {IMPL(WRONG_OUTPUT_COUNT), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    {IMPL(WRONG_OUTPUT_NAME), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    {IMPL(WRONG_OUTPUT_SHAPE), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    {IMPL(WRONG_OUTPUT_DTYPE), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    {IMPL(PROTOCOL_ERROR), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_LAYOUT},
    {IMPL(RUNNER_FAILURE), PG_VERDICT_ERROR, PG_CAT_INFRA, 0, HINT_NONE},
    {IMPL(WORKER_PROTOCOL), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_PROTOCOL},
    {IMPL(WORKER_ERROR), PG_VERDICT_FAIL, PG_CAT_RUNTIME, 0, HINT_NONE},
    {IMPL(WORKER_STRUCTURAL), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_PY_EXPORT},
    {IMPL(UNSAFE_OUTPUT), PG_VERDICT_FAIL, PG_CAT_STRUCTURAL, 0, HINT_OUT_FILES},
    /* an impl module that cannot be imported (unless the environment is to blame: the
     * table of environment failures below makes that infra) */
    {IMPL(IMPORT_FAILED), PG_VERDICT_ERROR, PG_CAT_STRUCTURAL, 0, HINT_IMPORT},
    {IMPL(MISSING_FUNCTION), PG_VERDICT_ERROR, PG_CAT_STRUCTURAL, 0, HINT_PY_EXPORT},
};
#undef IMPL
#undef RUN
/* Every fact has its rule: a new fact without one does not build. */
_Static_assert(sizeof rules / sizeof *rules == PG_RUN_FACT_COUNT - 1 + PG_IMPL_FACT_COUNT,
               "one rule per run fact (but IMPL) and per impl fact");

/* The rule of a fact; an unknown fact is the runner's problem (never a silent PASS). */
static const struct rule *rule_for(enum pg_run_fact fact, enum pg_impl_fact impl) {
  for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
    if (rules[i].fact == fact && (fact != PG_RUN_FACT_IMPL || rules[i].impl == impl))
      return &rules[i];
  return rule_for(PG_RUN_FACT_RUNNER, PG_IMPL_FACT_OK);
}

static const struct rule *mode_rule(const struct pg_mode_result *m) {
  return rule_for(m->fact, m->impl_fact);
}

/* ------------------------------------------------------------------ one mode */

/* Sets m's verdict from `ru`; the summary is the caller's. */
static void apply(struct pg_mode_result *m, const struct rule *ru, int k, int output) {
  m->status = ru->verdict;
  m->category = ru->category;
  m->subcategory = NULL;
  m->recipe = NULL;
  m->fact = ru->fact;
  m->impl_fact = ru->impl;
  m->fact_output = output;
  /* At the first boundary nothing earlier can fail; later ones need bisection. */
  m->earliest_boundary = ru->verdict == PG_VERDICT_FAIL && k == 1 ? 1 : 0;
}

enum pg_category pg_classify_category(const struct pg_impl_outcome *out) {
  return rule_for(PG_RUN_FACT_IMPL, out->fact)->category;
}

/* ------------------------------------------------------------------ what the output says */

/* The table of what an impl's own words mean (docs/report.md "Failure subcategories",
 * docs/pypto.md "Environment failures"): rows of captured-output patterns, each giving
 * a subcategory and, for the environment's failures, the recipe. Matched against facts,
 * never against phasegate's sentences: the exception a worker reports as data
 * (exc_type, exc_message) when there is one, else the call's captured stderr and stdout.
 * Patterns are case-insensitive substrings; a row matches when `needle` and `also` (if
 * any) both occur. The first matching row wins. */
struct text_row {
  const char *exc_type;     /* only an exception of this type (reported as data), or NULL */
  const char *needle, *also;
  const char *subcategory;
  const char *recipe;       /* environment rows: the fix (NULL: a device label) */
};

#define RECIPE_CANN "source <CANN>/set_env.sh (e.g. source /usr/local/Ascend/ascend-toolkit/" \
  "set_env.sh) in the shell that runs phasegate, or in the CTest environment"
static const char recipe_library[] =
    "environment: a shared library the impl loads is not on the loader path: " RECIPE_CANN
    ", or add the library's directory to LD_LIBRARY_PATH; then rerun the repro line";
static const char recipe_symbol[] =
    "environment: a shared library does not match the one the impl (or torch_npu / pypto) was "
    "built against (an undefined symbol): use one CANN / torch / torch_npu / pypto release "
    "throughout — " RECIPE_CANN " of the matching toolkit, or rebuild the extension";
static const char recipe_module[] =
    "environment: the interpreter lacks a module the impl imports (the message names it): "
    "install it into that interpreter, put its directory on PYTHONPATH, or choose the "
    "interpreter that has it (--python, PHASEGATE_PYTHON); pypto and torch_npu also need "
    "the CANN environment (" RECIPE_CANN ")";
static const char recipe_pto[] =
    "environment: the pypto Python package and its compiled library disagree (an enum or "
    "binding the other does not have): reinstall pypto for the CANN toolkit in use, then "
    RECIPE_CANN;
static const char recipe_cann[] =
    "environment: the CANN toolkit's environment is not set in the process that ran the "
    "impl: " RECIPE_CANN;

static const struct text_row env_rows[] = {
    {NULL, "cannot open shared object file", NULL, "shared_library", recipe_library},
    {NULL, "undefined symbol", NULL, "undefined_symbol", recipe_symbol},
    {"ModuleNotFoundError", "", NULL, "missing_module", recipe_module},
    {NULL, "No module named", NULL, "missing_module", recipe_module},
    {NULL, "incompatible function arguments", "pypto", "pto_enum", recipe_pto},
    {"AttributeError", "has no attribute 'DT_", NULL, "pto_enum", recipe_pto},
    {"AttributeError", "RunMode", "has no attribute", "pto_enum", recipe_pto},
    {NULL, "ASCEND_HOME_PATH", NULL, "cann_env", recipe_cann},
    {NULL, "ASCEND_OPP_PATH", NULL, "cann_env", recipe_cann},
    {NULL, "set_env.sh", NULL, "cann_env", recipe_cann},
};

/* The verifier's device labels (the pypto workflow's failure table): what the device
 * log says went wrong, for a kernel failure (the verdict stays; the label refines it). */
static const struct text_row device_rows[] = {
    {NULL, "aicore exception", NULL, "aicore", NULL},
    {NULL, "aicore error", NULL, "aicore", NULL},
    {NULL, "aicore execution", NULL, "aicore", NULL},
    {NULL, ".cce:", NULL, "aicore", NULL},
    {NULL, "L0A", "exceed", "tile_shape", NULL},
    {NULL, "L0B", "exceed", "tile_shape", NULL},
    {NULL, "L0C", "exceed", "tile_shape", NULL},
    {NULL, "L1 size", "exceed", "tile_shape", NULL},
    {NULL, "tile align", NULL, "tile_shape", NULL},
    {NULL, "tile shape not set", NULL, "tile_shape", NULL},
    {NULL, "enable_split_k", NULL, "tile_shape", NULL},
    {NULL, "workspace", "overlap", "workspace_overlap", NULL},
    {NULL, "rtMalloc", NULL, "oom", NULL},
    {NULL, "out of memory", NULL, "oom", NULL},
};

/* haystack contains needle, ASCII case-insensitively ("" is in everything). */
static int has_ci(const char *hay, const char *needle) {
  if (!hay) return 0;
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return 1;
  }
  return n == 0;
}

static int row_in(const struct text_row *r, const char *text) {
  return has_ci(text, r->needle) && (!r->also || has_ci(text, r->also));
}

/* The first row of `rows` the outcome's words match, or NULL. A structured exception is
 * the whole story when there is one (a warning the impl printed earlier is not why it
 * failed); `text_too` adds the captured output to it (device logs precede the
 * exception). */
static const struct text_row *match(const struct text_row *rows, size_t n,
                                    const struct pg_impl_outcome *out, int text_too) {
  int structured = out->exc_type[0] != '\0';
  for (size_t i = 0; i < n; i++) {
    const struct text_row *r = &rows[i];
    if (r->exc_type && !(structured && strcmp(r->exc_type, out->exc_type) == 0)) continue;
    if (structured && row_in(r, out->exc_message)) return r;
    if (r->exc_type || (structured && !text_too)) continue;
    if (row_in(r, out->sandbox.err) || row_in(r, out->sandbox.out)) return r;
  }
  return NULL;
}

/* Facts whose failure the environment may explain: the impl did not get to compute
 * (an import, a load, an exception, a process that ended) — never an output that came
 * back wrong. */
static int environment_may_explain(enum pg_impl_fact f) {
  return f == PG_IMPL_FACT_IMPORT_FAILED || f == PG_IMPL_FACT_WORKER_ERROR ||
         f == PG_IMPL_FACT_EXIT_NONZERO || f == PG_IMPL_FACT_RETURNED_ERROR ||
         f == PG_IMPL_FACT_LOAD_FAILED || f == PG_IMPL_FACT_WORKER_PROTOCOL;
}

const char *pg_classify_subcategory(const struct pg_impl_outcome *out, const char **recipe) {
  const struct text_row *r = NULL;
  if (recipe) *recipe = NULL;
  if (environment_may_explain(out->fact) &&
      (r = match(env_rows, sizeof env_rows / sizeof *env_rows, out, 0)) != NULL) {
    if (recipe) *recipe = r->recipe;
    return r->subcategory;
  }
  if (out->fact == PG_IMPL_FACT_UNAVAILABLE) return NULL; /* a skip has no failure to label */
  if ((r = match(device_rows, sizeof device_rows / sizeof *device_rows, out, 1)) != NULL)
    return r->subcategory;
  /* the ending itself: the host process died by a signal, or ran out of memory */
  if (out->fact == PG_IMPL_FACT_SIGNAL || out->fact == PG_IMPL_FACT_SANITIZER_REPORT)
    return "host_crash";
  if (out->fact == PG_IMPL_FACT_OOM) return "oom";
  return NULL;
}

void pg__classify_output_words(struct pg_mode_result *m, const struct pg_impl_outcome *out) {
  if (m->status != PG_VERDICT_FAIL && m->status != PG_VERDICT_ERROR) return;
  const char *recipe;
  const char *sub = pg_classify_subcategory(out, &recipe);
  if (!sub) return;
  m->subcategory = sub;
  if (!recipe) return;
  /* the environment, not the kernel: an ERROR for environment recovery */
  m->status = PG_VERDICT_ERROR;
  m->category = PG_CAT_INFRA;
  m->recipe = recipe;
  m->earliest_boundary = 0;
}

void pg__classify_impl(struct pg_mode_result *m, const struct pg_impl_outcome *out, int k) {
  apply(m, rule_for(PG_RUN_FACT_IMPL, out->fact), k, out->output);
  snprintf(m->summary, sizeof m->summary, "%s", out->summary);
  pg__classify_output_words(m, out);
}

void pg__classify_probe_note(struct pg_mode_result *m, int k, const char *probes) {
  if (m->category != PG_CAT_STRUCTURAL || !probes || !*probes) return;
  size_t l = strlen(m->summary);
  snprintf(m->summary + l, sizeof m->summary - l, "; module %d declares inspection probes: "
           "the impl returns %s after the boundary outputs", k, probes);
}

void pg__classify_mode_error(struct pg_mode_result *m, const char *msg) {
  apply(m, rule_for(PG_RUN_FACT_RUNNER, PG_IMPL_FACT_OK), 0, -1);
  snprintf(m->summary, sizeof m->summary, "%s", msg);
}

/* The sentence of a comparison fact about output t (runner facts bring their own). */
static void output_summary(struct pg_mode_result *m, int k, const struct pg_tensor_check *t,
                           enum pg_run_fact fact, const char *runner_msg) {
  const struct pg_cmp_result *c = &t->cmp;
  if (fact == PG_RUN_FACT_LAYOUT) {
    snprintf(m->summary, sizeof m->summary, "output '%s' at the M%d boundary: %.400s", t->name,
             k, c->structural_reason);
    return;
  }
  if (fact != PG_RUN_FACT_VALUES) {
    snprintf(m->summary, sizeof m->summary, "%s", runner_msg ? runner_msg : "");
    return;
  }
  char idx[160], nan_note[96] = "";
  pg_shape_format(c->ndim, c->max_abs_index, idx, sizeof idx);
  if (c->nan_impl > c->nan_ref)
    snprintf(nan_note, sizeof nan_note, "; %lld NaN in the impl vs %lld in the reference",
             (long long)c->nan_impl, (long long)c->nan_ref);
  else if (c->inf_impl > c->inf_ref)
    snprintf(nan_note, sizeof nan_note, "; %lld Inf in the impl vs %lld in the reference",
             (long long)c->inf_impl, (long long)c->inf_ref);
  char atol[40], rtol[40];
  pg_num_short(t->atol, atol, sizeof atol);
  pg_num_short(t->rtol, rtol, sizeof rtol);
  snprintf(m->summary, sizeof m->summary,
           "output '%s' at the M%d boundary: %lld of %lld elements outside %s atol %s "
           "rtol %s (max_abs_diff %.3g at %s, max_rel_diff %.3g%s)",
           t->name, k, (long long)c->mismatches, (long long)c->n, t->rule, atol, rtol,
           c->max_abs_diff, idx, c->max_rel_diff, nan_note);
}

void pg__classify_output(struct pg_mode_result *m, int k, int i, enum pg_run_fact fact,
                         const char *runner_msg) {
  const struct rule *ru = rule_for(fact, PG_IMPL_FACT_OK);
  /* The first failure of the worst kind stands, except that a trumping one replaces
   * an earlier failure of another category. */
  if (!(ru->verdict > m->status || (ru->trumps && m->category != ru->category))) return;
  apply(m, ru, k, i);
  output_summary(m, k, &m->tensors[i], fact, runner_msg);
}

void pg__classify_values(struct pg_mode_result *m, int k, int i, int case_precision,
                         int mode_precision) {
  struct pg_tensor_check *t = &m->tensors[i];
  /* A structure-only mode (the seed's simulator lesson) is told apart from a
   * structural case: its values were meant to be seen, just not to gate. */
  m->structure_only = !mode_precision;
  t->values_checked = case_precision && mode_precision;
  t->passed = t->values_checked ? t->cmp.passed : 1;
  if (!t->passed) pg__classify_output(m, k, i, PG_RUN_FACT_VALUES, NULL);
}

/* ------------------------------------------------------------------ one case */

static void aggregate(struct pg_case_result *r);

void pg__classify_case_error(struct pg_case_result *r, enum pg_run_fact fact, const char *msg) {
  const struct rule *ru = rule_for(fact, PG_IMPL_FACT_OK);
  r->status = ru->verdict;
  r->category = ru->category;
  r->subcategory = NULL;
  r->drift_onset_iter = -1;
  snprintf(r->summary, sizeof r->summary, "%.600s", msg);
  enum pg_verdict verdicts[PG_MAX_MODES];
  int n = r->n_modes < PG_MAX_MODES ? r->n_modes : PG_MAX_MODES;
  for (int i = 0; i < r->n_modes; i++) {
    apply(&r->modes[i], ru, 0, -1);
    snprintf(r->modes[i].summary, sizeof r->modes[i].summary, "%.600s", msg);
    if (i < n) verdicts[i] = r->modes[i].status;
  }
  /* every mode got the error: the seed's first_failure always has a fingerprint */
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s", pg_divergence_fingerprint(verdicts, n));
}

void pg__classify_not_implemented(struct pg_case_result *r, int k, int implemented) {
  char msg[96];
  snprintf(msg, sizeof msg, "M%d not implemented yet (PHASES %d)", k, implemented);
  pg__classify_case_error(r, PG_RUN_FACT_NOT_IMPLEMENTED, msg);
  aggregate(r); /* SKIPPED, all_close as for any skip */
  r->not_implemented = 1;
}

int pg__classify_bisect_mode(const struct pg_case_result *r, int k) {
  for (int mi = 0; mi < r->n_modes; mi++) {
    const struct pg_mode_result *m = &r->modes[mi];
    if (m->status != PG_VERDICT_FAIL) continue;
    return k > 1 && m->category == PG_CAT_PRECISION ? mi : -1;
  }
  return -1;
}

int pg__classify_boundary(const struct pg_mode_result *m) {
  if (m->fact == PG_RUN_FACT_IMPL) /* the impl failed at phase j (e.g. no wrapper yet, or
                                      an environment that cannot run it) */
    return m->status == PG_VERDICT_SKIPPED || m->category == PG_CAT_STRUCTURAL ||
                   m->category == PG_CAT_INFRA ? -1 : 1;
  return m->status == PG_VERDICT_FAIL ? 1 : m->status == PG_VERDICT_PASS ? 0 : -1;
}

const char *pg_divergence_fingerprint(const enum pg_verdict *modes, int n) {
  int first = -1, last = -1, any_fail = 0, all_fail = 1;
  for (int i = 0; i < n; i++) {
    if (modes[i] == PG_VERDICT_SKIPPED) continue;
    if (first < 0) first = i;
    last = i;
    int f = modes[i] == PG_VERDICT_FAIL || modes[i] == PG_VERDICT_ERROR;
    any_fail |= f;
    all_fail &= f;
  }
  if (first < 0 || !any_fail) return "";
  if (all_fail) return "all_fail";
  int ff = modes[first] == PG_VERDICT_FAIL || modes[first] == PG_VERDICT_ERROR;
  int lf = modes[last] == PG_VERDICT_FAIL || modes[last] == PG_VERDICT_ERROR;
  if (!ff && lf) return "kernel_ok_npu_only";
  if (ff && !lf) return "ir_divergence";
  return "mixed";
}

/* Worst status, all_close and the largest differences over every mode. all_close is
 * the seed's: every mode PASS or SKIPPED (a precision: false case whose values are off
 * still passes; per_tensor[].passed says what the values did). */
static void aggregate(struct pg_case_result *r) {
  r->status = PG_VERDICT_SKIPPED;
  r->all_close = 1;
  for (int mi = 0; mi < r->n_modes; mi++) {
    const struct pg_mode_result *m = &r->modes[mi];
    if (m->status > r->status) r->status = m->status;
    if (m->status == PG_VERDICT_FAIL || m->status == PG_VERDICT_ERROR) r->all_close = 0;
    for (int i = 0; i < m->n_tensors; i++) {
      const struct pg_tensor_check *t = &m->tensors[i];
      if (!t->compared || t->cmp.structural) continue;
      if (t->cmp.max_abs_diff > r->max_abs_diff || isnan(t->cmp.max_abs_diff))
        r->max_abs_diff = t->cmp.max_abs_diff;
      if (t->cmp.max_rel_diff > r->max_rel_diff || isnan(t->cmp.max_rel_diff))
        r->max_rel_diff = t->cmp.max_rel_diff;
      r->mistrusted |= t->cmp.mistrusted;
      r->cpu_reproducer_candidate |= t->cmp.cpu_reproducer_candidate && !t->cmp.passed;
    }
  }
}

/* The hint of a failing mode's fact (the case's first failing mode). */
static void fact_hint(struct pg_case_result *r, const struct pg_mode_result *m, int k,
                      double timeout_s, const char *op) {
  const struct pg_tensor_check *t =
      m->fact_output >= 0 && m->fact_output < m->n_tensors ? &m->tensors[m->fact_output] : NULL;
  enum hint h = mode_rule(m)->hint;
  if (h == HINT_VALUES)
    h = t && t->cmp.nan_impl > t->cmp.nan_ref ? (t->nan_input[0] ? HINT_NAN_INPUT : HINT_NAN)
        : r->precision_checked                ? HINT_INSPECT
                                              : HINT_NONE;
  if (h == HINT_EXPORT) {
    char sym[160], suffix[64];
    pg_phase_suffix(k, suffix, sizeof suffix);
    pg_impl_symbol(op, suffix, sym, sizeof sym);
    snprintf(r->hint, sizeof r->hint, "export int %s(const DLTensor *, int32_t, DLTensor *, "
             "int32_t, const pg_call *) (extern \"C\", default visibility), or run an earlier "
             "phase", sym);
  } else if (h == HINT_TIMEOUT) {
    snprintf(r->hint, sizeof r->hint, "raise --timeout (now %g s) if the kernel is only slow; "
             "otherwise look for a wait that never completes", timeout_s);
  } else if (hint_text[h]) {
    snprintf(r->hint, sizeof r->hint, "%s", hint_text[h]);
  }
}

/* drift_onset_iter: the first probe iteration outside the tolerance, of the failing mode
 * when it has one, else of the first mode that drifts (a PASS can drift inside). */
static void drift_onset(struct pg_case_result *r, const struct pg_mode_result *failed) {
  r->drift_onset_iter = -1;
  for (int pass = 0; pass < 2 && r->drift_onset_iter < 0; pass++)
    for (int mi = 0; mi < r->n_modes && r->drift_onset_iter < 0; mi++) {
      const struct pg_mode_result *m = &r->modes[mi];
      if (pass == 0 && m != failed) continue;
      for (int p = 0; p < m->n_probes; p++) {
        if (m->probes[p].drift_onset_iter < 0) continue;
        r->drift_onset_iter = m->probes[p].drift_onset_iter;
        snprintf(r->drift_probe, sizeof r->drift_probe, "%s", m->probes[p].name);
        snprintf(r->drift_mode, sizeof r->drift_mode, "%s", m->mode);
        break;
      }
    }
}

void pg__classify_case(struct pg_case_result *r, int k, double timeout_s, const char *op) {
  aggregate(r);
  enum pg_verdict verdicts[PG_MAX_MODES];
  for (int mi = 0; mi < r->n_modes && mi < PG_MAX_MODES; mi++) verdicts[mi] = r->modes[mi].status;
  snprintf(r->fingerprint, sizeof r->fingerprint, "%s",
           pg_divergence_fingerprint(verdicts, r->n_modes < PG_MAX_MODES ? r->n_modes : PG_MAX_MODES));
  const struct pg_mode_result *failed = NULL;
  for (int mi = 0; mi < r->n_modes && !failed; mi++)
    if (r->modes[mi].status == PG_VERDICT_FAIL || r->modes[mi].status == PG_VERDICT_ERROR)
      failed = &r->modes[mi];
  if (failed) {
    r->category = failed->category;
    r->subcategory = failed->subcategory;
    r->earliest_boundary = failed->earliest_boundary;
    if (failed->earliest_boundary && failed->earliest_boundary < k)
      snprintf(r->summary, sizeof r->summary, "[%.60s] %.480s; the impl already diverges at the "
               "M%d boundary", failed->mode, failed->summary, failed->earliest_boundary);
    else
      snprintf(r->summary, sizeof r->summary, "[%.60s] %.560s", failed->mode, failed->summary);
  }
  drift_onset(r, failed);
  /* A weak golden makes a PASS meaningless; on a failure the failure is the news. An
   * environment failure's recipe comes before anything about the kernel. */
  if (failed && failed->recipe)
    snprintf(r->hint, sizeof r->hint, "%s", failed->recipe);
  else if (r->mistrusted && !failed)
    snprintf(r->hint, sizeof r->hint, "the golden is mostly exact zeros: this case is too weak "
             "to trust a PASS; change its fill or shape");
  else if (r->cpu_reproducer_candidate)
    snprintf(r->hint, sizeof r->hint, "where rtol governs (|golden| >= atol/rtol) every cell is "
             "100x inside rtol, and only near-zero cells trip atol, each off by less than rtol "
             "x the golden's RMS: likely accumulation-order noise; reproduce on CPU before "
             "blaming the kernel");
  else if (r->earliest_boundary && r->earliest_boundary < k)
    snprintf(r->hint, sizeof r->hint, "the impl already diverges at the M%d boundary: fix "
             "module %d first", r->earliest_boundary, r->earliest_boundary);
  else if (r->status == PG_VERDICT_FAIL && failed && r->category == PG_CAT_PRECISION &&
           r->drift_onset_iter >= 0)
    snprintf(r->hint, sizeof r->hint, "inspection probe '%.100s' first leaves the tolerance at "
             "iteration %d: look at what the loop does differently from there (--inspect %.100s "
             "prints every iteration)", r->drift_probe, r->drift_onset_iter, r->drift_probe);
  else if ((r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR) && failed)
    fact_hint(r, failed, k, timeout_s, op); /* an ERROR's too: a missing wrapper's export */
}

enum pg_category pg__classify_refusal(enum pg__refusal_stage stage) {
  return stage == PG__STAGE_OP_FILES ? PG_CAT_STRUCTURAL : PG_CAT_INFRA;
}

/* Where each case's suite strength came from, and the cases with undetected mutants. */
static void count_strength(struct pg_run_summary *s,
                                        const struct pg_case_result *results, int n) {
  for (int i = 0; i < n; i++) {
    s->strength[results[i].strength]++;
    s->strength_weak += results[i].strength_undetected > 0;
  }
}

/* A suite-strength-only run (PG_STRENGTH_ONLY): no verdict of an impl, only whether
 * every case's inputs and golden could be made (a case error is exit 2). */
void pg__classify_strength_run(struct pg_run_summary *s, const struct pg_case_result *results,
                               int n) {
  s->cases_total = n;
  count_strength(s, results, n);
  for (int i = 0; i < n; i++) s->errors += results[i].status == PG_VERDICT_ERROR;
  s->status = s->errors ? PG_VERDICT_ERROR : PG_VERDICT_PASS;
  s->exit_code = s->errors ? 2 : 0;
}

void pg__classify_run(struct pg_run_summary *s, const struct pg_case_result *results, int n,
                      int persisted) {
  s->cases_total = n;
  enum pg_verdict worst = PG_VERDICT_SKIPPED;
  for (int i = 0; i < n; i++) {
    enum pg_verdict v = results[i].status;
    if (v > worst) worst = v;
    s->passed += v == PG_VERDICT_PASS;
    s->failed += v == PG_VERDICT_FAIL;
    s->errors += v == PG_VERDICT_ERROR;
    s->skipped += v == PG_VERDICT_SKIPPED;
  }
  count_strength(s, results, n);
  s->status = persisted ? worst : PG_VERDICT_ERROR;
  s->exit_code = s->status == PG_VERDICT_ERROR  ? 2
                 : s->status == PG_VERDICT_FAIL ? 1
                 : s->status == PG_VERDICT_PASS ? 0
                                                : 77;
}

