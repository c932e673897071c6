/* phasegate runner — the report room (docs/design.md §2, §8): evaluation_report.json (built
 * from case results, merged atomically under a lock so one report per phase stays
 * correct when the cases of a phase run as separate concurrent processes), the
 * information barrier (report/barrier.c: redaction of impl text and the sanitize step
 * on every write), and the console lines of `phasegate run` (report/console.c).
 *
 * It sits above the run room and implements the hooks pg_run calls; pg_report_hooks()
 * returns the standard set so no caller can forget the barrier. Runs nothing. Schema:
 * docs/runner.md.
 */
#ifndef PHASEGATE_REPORT_H
#define PHASEGATE_REPORT_H

#include <cjson/cJSON.h>
#include <pthread.h>

#include "phasegate/error.h"
#include "run/run.h"

/* 2: failing_module_boundary is the integer k (1 spelled the bisected boundary "M<j>") */
#define PG_REPORT_SCHEMA_VERSION 2

/* What a report says about its phase is the run's struct pg_run_phase (run/run.h): op,
 * impl, k, N, tool version, contract and suite paths, modes. */

/* pg_run's hooks as the report room implements them: persist = pg_report_persist,
 * case_lines = pg_report_case_lines, summary_lines = pg_report_summary_lines,
 * redact = pg_redact_text. */
struct pg_run_hooks pg_report_hooks(void);

/* ---- evaluation_report.json (report/report.c) ---- */

/* One entry of checks[] for a case of phase k (its failure's failing_module_boundary). */
cJSON *pg_report_check_json(const struct pg_case_result *r, int k);
/* Adds the metrics of one comparison to `o` (report and `phasegate diff --json` keys). */
void pg_report_add_metrics(cJSON *o, const struct pg_cmp_result *c);

/* Builds the whole report around `checks` (an array it takes ownership of), computing
 * cases_total/passed, status, per_mode_status, first_failure and stdout. */
cJSON *pg_report_build(const struct pg_run_phase *m, cJSON *checks);

/* Locks the report's directory (flock), reads an existing report for the same op and phase, replaces or
 * adds the checks of `cases` by case id, rebuilds the aggregates, sanitizes, writes
 * <path> atomically (temp + rename). Creates parent directories. An existing report
 * that cannot be read is moved to <path>.corrupt: PG_OK with err->message saying so
 * (a warning for the console). */
int pg_report_merge_write(const char *path, const struct pg_run_phase *m,
                          const struct pg_case_result *cases, int n, struct pg_error *err);

/* The persist hook: pg_report_merge_write with the phase as the report's header. */
int pg_report_persist(const char *path, const struct pg_run_phase *ph,
                      const struct pg_case_result *cases, int n, struct pg_error *err);

/* ---- the information barrier (report/barrier.c) ---- */

/* Replaces numeric tokens in `text` that spell a value of any of the given tensors
 * (4 or more significant digits) with "<redacted>": the barrier for captured impl
 * output. Returns a new malloc'ed string (NULL on allocation failure). */
char *pg_redact_text(const char *text, const struct pg_tensor *const *tensors, int n);

/* The barrier for text from a Python golden's worker (an exception message, a crash
 * line), whose values are no case tensor we hold: every number becomes "<redacted>",
 * except inside a path (a token starting with '/' after a space, quote, '(' or the
 * start), so the file names in the message stay usable. malloc'ed; NULL when out of
 * memory. */
char *pg_redact_numbers(const char *text);

/* Applied on every write: drops keys that could carry reference or input contents
 * (golden, reference, expected, ref_value, data, values, …), replaces numeric arrays
 * longer than 16 elements (tensor dumps) and truncates strings longer than 64 KiB.
 * Returns the number of items removed or changed, or -1 when out of memory (the item
 * that could not be replaced was removed: the barrier holds either way). */
int pg_report_sanitize(cJSON *node);

/* ---- the console of `phasegate run` (report/console.c) ---- */

/* A finished case: a status line per mode (with --inspect's metrics), the captured
 * tail of failing modes, repro and hint lines, the cancellation-stress note. */
void pg_report_case_lines(const struct pg_run_phase *ph, const struct pg_case_result *r,
                          pg_run_line_fn line, void *user);
/* After the last case: the SKIPPED marker line when every case was skipped, the
 * summary line, the first failure. */
void pg_report_summary_lines(const struct pg_run_phase *ph, const struct pg_run_summary *s,
                             const struct pg_case_result *cases, int n, pg_run_line_fn line,
                             void *user);

/* The live progress line of `phasegate run` on a terminal: "[phasegate] progress:
 * 12/48 case-modes, 2 failed, 0:14 elapsed, ETA 0:42", redrawn in place (\r, erase to
 * the end of the line) after each finished case and every second in between (a ticker
 * thread: a long case must not look hung), erased before every console line (so the
 * lines stay exactly what a pipe gets) and at the end. Drawn only once the run has
 * taken `delay_ms`, so short runs do not flicker. The caller owns the state; the
 * functions below may be called from any thread. Not for a process that forks workers
 * which print (`--jobs`): pass no terminal there. */
struct pg_report_progress {
  FILE *out;      /* the terminal; NULL: never drawn (and no ticker) */
  double t0_ms;   /* pg_report_progress_init's time */
  double delay_ms;
  int shown;      /* a line is on the terminal now */
  /* the ticker */
  pthread_mutex_t mu;           /* guards everything here, and the terminal */
  pthread_cond_t wake;
  pthread_t tid;
  int ticking, stop;
  struct pg_run_progress last;  /* the last update, and when it came */
  double last_ms;
  int have_last;
};

/* Whether a progress line belongs on this process's output: stdout and stderr are
 * terminals, TERM is set and not "dumb", the run is no CTest test (CTest sets
 * CTEST_INTERACTIVE_DEBUG_MODE or DASHBOARD_TEST_FROM_CTEST in its tests'
 * environment), and `off` (--no-progress) is 0. */
int pg_report_progress_wanted(int off);
/* out: where to draw (NULL: nowhere); delay_ms: how long a run must have taken.
 * Starts the ticker when out is set; pg_report_progress_end stops it. */
void pg_report_progress_init(struct pg_report_progress *p, FILE *out, double delay_ms);
/* Draws (or redraws) the line for `r`; nothing before the delay. */
void pg_report_progress_update(struct pg_report_progress *p, const struct pg_run_progress *r);
/* Erases the line and writes `line` + "\n" to f, with no redraw in between. */
void pg_report_progress_line(struct pg_report_progress *p, FILE *f, const char *line);
/* Stops the ticker and erases the line. */
void pg_report_progress_end(struct pg_report_progress *p);

/* ---- reading reports back: `phasegate report` (report/load.c) ---- */

/* One evaluation_report.json, parsed and checked against the keys the readers use
 * (report/html*.c, report/junit.c): the root is an object with op_name (string),
 * up_to_module (integer >= 1) and checks[] (objects with a string id and status);
 * the optional blocks they read (failure, modes[], per_tensor[] with hints[],
 * error_map, error_histogram) have the types docs/report.md gives. */
/* The name a report is shown and matched under: its registration (the CMake name,
 * what the test names use) when it has one, else its op_name. */
const char *pg_report_name(const cJSON *report);

struct pg_report_file {
  char *path;  /* as given, or as found under a directory argument */
  cJSON *json; /* the whole report */
};

/* Reports sorted by op_name, then up_to_module, then path; and the reports found
 * under a directory argument that could not be used, each with its error message
 * ("file:line:col: error: ..."), in the order found. */
struct pg_report_set {
  struct pg_report_file *files;
  int n, cap;
  char **skipped;
  int n_skipped, cap_skipped;
};

void pg_report_set_init(struct pg_report_set *set);
void pg_report_set_reset(struct pg_report_set *set);

/* Loads paths[0..n) into `set` (init'ed by the caller; reset it either way): a
 * file is one report whatever its name; a directory is searched recursively for
 * files named evaluation_report.json (symlinked directories are not followed). A
 * file reached twice (same device and inode) is loaded once. Errors name the file:
 * unreadable (PG_EIO / PG_ENOENT), JSON syntax (PG_EPARSE, "file:line:col: error:
 * ..."), a key of the wrong type or missing (PG_EVALIDATE, "file:line:col: error:
 * checks[2].status: ..."), a directory without any report (PG_ENOTFOUND). A file
 * named in `paths` that fails is an error; one found under a directory is added to
 * set->skipped instead (one stray file must not hide a build tree's page), unless
 * no report at all could be loaded: then the first such message is the error. */
int pg_report_set_load(const char *const *paths, int n, struct pg_report_set *set,
                       struct pg_error *err);

/* One report's text (len bytes, `name` for messages) parsed and checked as above:
 * PG_OK with *out set (the caller cJSON_Deletes it), or PG_EPARSE / PG_EVALIDATE /
 * PG_ENOMEM with a "name:line:col: error: ..." message. pg_report_set_load's step for
 * each file; the fuzz harness drives it directly. */
int pg_report_parse(const char *name, const char *text, size_t len, cJSON **out,
                    struct pg_error *err);
/* Room-internal: the key check of pg_report_parse on an already parsed report (`text`
 * its source, for positions). The merge (report.c) keeps an existing report only when
 * it passes, so a merge never writes a report `phasegate report` would refuse. */
int pg__report_validate(const char *name, const char *text, size_t len, const cJSON *json,
                        struct pg_error *err);

/* ---- the HTML page of `phasegate report` (report/html*.c) ---- */

/* The whole page for `set`: one static, self-contained HTML document (inline CSS and
 * SVG, no script, no external resource). malloc'ed; NULL when out of memory. */
char *pg_report_html(const struct pg_report_set *set);

/* ---- JUnit (report/junit.c) ---- */

/* ctest's --output-junit text with the empty <failure message=""/> of every failed
 * phasegate case test (<op>/M<k>/L<n>/<case>) filled from the case's check in the
 * report of op and phase k in `set` (when no report is named op, the one report of
 * phase k holding the case: a CMake op name may differ from the contract's op_name):
 * category, boundary (failing and earliest failing), summary, the three strongest
 * hints (kind, confidence), the repro line; a case no report holds says so. A message
 * ctest wrote itself, other tests and everything else are copied byte for byte.
 * Returns a malloc'ed text (NULL: out of memory); *n_rewritten = messages written. */
char *pg_report_junit_text(const char *xml, const struct pg_report_set *set, int *n_rewritten);

/* pg_report_junit_text on the file junit_path, replaced atomically (temp + rename in
 * its directory). */
int pg_report_junit_rewrite(const char *junit_path, const struct pg_report_set *set,
                            int *n_rewritten, struct pg_error *err);

/* One <testcase> of a JUnit file (ctest's --output-junit, or a merged one): its name,
 * result as the verify targets' summary reads it (status "run": passed, "fail": failed,
 * a <skipped> whose message starts with SKIP_: skipped, anything else: not run), time
 * attribute in seconds, and the element's bytes [elem, elem_end) in the text. */
enum pg_report_junit_result {
  PG_REPORT_JUNIT_PASSED,
  PG_REPORT_JUNIT_FAILED,
  PG_REPORT_JUNIT_SKIPPED,
  PG_REPORT_JUNIT_NOT_RUN,
};
struct pg_report_junit_case {
  const char *name;
  enum pg_report_junit_result result;
  double time_s;
  const char *elem, *elem_end;
};
/* Returns nonzero to stop. */
typedef int (*pg_report_junit_fn)(const struct pg_report_junit_case *c, void *user);
/* Calls fn for every <testcase> of `xml` with a name, in file order; returns how many. */
int pg_report_junit_each(const char *xml, pg_report_junit_fn fn, void *user);

/* s as the value of a double-quoted XML attribute (entities, no control character):
 * how the JUnit writers spell names and messages. malloc'ed; NULL when out of memory. */
char *pg_report_xml_attr(const char *s);

/* ---- reports of one phase from several runs (report/combine.c) ---- */

/* One report of registration and phase combined from `parts[0..n)` (reports of the same
 * registration and up_to_module, e.g. written by the shards of a fleet run,
 * docs/fleet.md): checks[] holds each case once, sorted in suite order, and the
 * aggregates (status, counts, first_failure, selection) are computed from them as for a
 * run. A case that two parts hold with different statuses is a conflict: the worse
 * status is kept and the check's `conflicts` lists every part's status and run, each
 * labelled with labels[i]. `run` is parts[0]'s with the earliest start and latest end.
 * *n_conflicts = cases in conflict. NULL: out of memory. */
cJSON *pg_report_combine(const cJSON *const *parts, const char *const *labels, int n,
                         int *n_conflicts);

#endif
