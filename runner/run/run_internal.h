/* phasegate runner — what the files of the run room share; private to runner/run/
 * (other rooms include run/run.h only).
 *
 *   run.c       pg_run: options, contract + suite, case selection, checks, summary
 *   case.c      one case: inputs, golden, every mode's impl call and comparison
 *   golden.c    the cumulative golden through the cache (one key), the BLAS preload
 *   data.c      --golden-data and --save-data (a case's tensors on disk)
 *   bisect.c    the earliest failing boundary
 *   jobs.c      --jobs: cases in forked worker processes
 *   repro.c     the command line that reruns one case
 *   classify.c  every verdict: status, category, summary, fingerprint, boundary, hints
 *   diagnose.c  counterfactual goldens: the reference under each bug hypothesis
 *   evidence.c  the facts behind the hints: mismatch mask, nan origin, repeats
 *   golden_cache.c  the on-disk golden cache;  py_golden.c  Python goldens
 *   inputs.c    a case's primary inputs;  cancel.c  cancellation_stress
 *   check.c     the one validation of an op;  inspect.c  inspection probes
 *   knobs.c     validate's dry make_inputs calls: knobs it never reads
 */
#ifndef PHASEGATE_RUN_INTERNAL_H
#define PHASEGATE_RUN_INTERNAL_H

#include <pthread.h>

#include "run/run.h"

#define PG_MAX_MODES 16
#define PG_MAX_DIMS 64 /* dims passed to an impl call */

/* One pg_run: everything loaded and decided before the first case. */
/* Where a run stood when it was refused (classify.c turns it into the category). */
enum pg__refusal_stage {
  PG__STAGE_ENVIRONMENT = 0, /* the impl, the interpreter, directories: infra */
  PG__STAGE_OP_FILES = 1     /* the contract, suite, goldens, phase, case selection */
};

struct pg__run {
  const struct pg_run_opts *o; /* &own: the caller's options, --e2e's default impl filled */
  struct pg_run_opts own;
  char *default_impl;         /* --e2e without --impl: python:<op dir>/<op>_impl.py::<op>_wrapper */
  int k;                      /* the phase, checked once against the contract */
  struct pg_contract contract;
  struct pg_suite suite;
  char contract_path[4096], suite_path[4096]; /* pg_op_paths_resolve checks the length */
  struct pg_impl impl;
  struct pg_impl_probe probe; /* the impl's one-time check, started early */
  void *golden_lib;
  struct pg_golden_plan *plan; /* the contract's golden steps, compiled once */
  char modes_buf[1024];       /* the modes, comma-separated, duplicates dropped */
  char mode_store[PG_MAX_MODES][64];
  const char *modes[PG_MAX_MODES];
  int n_modes;
  int device_id;
  char *cache_dir;            /* NULL: no golden cache */
  struct pg_py_golden_worker *py; /* Python goldens' worker (NULL: the op has none) */
  char pypto_probe[PG_NAME_MAX]; /* --inspect NAME as the pypto workflow's probe (phase k's
                                 golden file has module_<k>_inspect), "" when not */
  double timeout_s;
  pthread_t preload;          /* loads OpenBLAS while inputs are generated (golden.c) */
  int preloading, blas_loaded;
  struct pg_run_phase phase;  /* what the hooks are told */
  char *report_path;
  /* provenance (pg_run_phase): this run's id, the session it belongs to, host, device */
  char run_id[40], session[72], host[256], device_kind[64];
  double started_ms;
  enum pg__refusal_stage stage; /* what a refusal before the cases is about */
  int report_unwritable;      /* the report's own place was refused: no report for it */
  char python[PG_PYTHON_ABOUT_MAX]; /* the Python interpreter the run uses (JSON), or "" */
  int not_implemented;        /* k > --implemented-phases: the cases are only reported */
};

/* One impl call's request and the storage it points into. */
struct pg__call {
  const char *dim_names[PG_MAX_DIMS];
  int64_t dim_values[PG_MAX_DIMS];
  char suffix[64];
  struct pg_impl_request req;
};

/* printf one console line through the caller's sink. */
#define pg__line(rc, to_stderr, ...) \
  pg_run_linef((rc)->o->on_line, (rc)->o->user, (to_stderr), __VA_ARGS__)

/* diagnose.c: counterfactual goldens (hints on a failing tensor of mode m, whose impl
 * outputs are impl_out), the CPU reproducer, and suite strength (undetected mutants of
 * every precision-checked output, into every mode's tensor checks). */
struct pg__diag_case {
  struct pg__run *rc;
  int k;
  const struct pg_case *cs;
  const struct pg_case_data *d;
  const struct pg_tensor_decl *const *decls;
  const struct pg_tensor *goldens;
  int n_out;
  int n_threads;              /* the case's: 1 for small cases, 0 (all cores) */
  double t0_ms;               /* when the case's diagnosis began (budget) */
  double spent_ms;
  double case_t0_ms;          /* when the case began: the default budget is a multiple
                                 of the case's own time before its diagnosis */
};
void pg__diagnose_mode(struct pg__diag_case *dc, struct pg_mode_result *m,
                       const struct pg_tensor *impl_out);
void pg__suite_strength(struct pg__diag_case *dc, struct pg_case_result *r);
/* The comparison rule of a declared tensor, an output or a probe (case > declaration >
 * contract > default). */
int pg__output_rule(const struct pg__run *rc, const struct pg_case *cs,
                    const struct pg_tensor_decl *decl, enum pg_dtype dtype,
                    struct pg_cmp_rule *rule, struct pg_error *err);

/* case.c */
void pg__run_case(struct pg__run *rc, const struct pg_case *cs, struct pg_case_result *r);
/* The boundary outputs of phase k for a case: their declarations and specs (n, or a
 * negative code). */
int pg__phase_outputs(const struct pg_contract *c, int k, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_tensor_decl **decls,
                      struct pg_impl_output_spec *specs, struct pg_error *err);
/* The request of phase k's call in `mode` (dims->count <= PG_MAX_DIMS). */
void pg__call_init(const struct pg__run *rc, int k, const struct pg_case *cs,
                   const struct pg_case_data *d, const struct pg_impl_output_spec *specs,
                   int n_out, const char *mode, struct pg__call *call);
/* Compares the impl's outputs with the goldens into m->tensors and m's verdict, on
 * n_threads threads (0: all cores). */
void pg__compare_outputs(const struct pg__run *rc, int k, const struct pg_case *cs,
                         const struct pg_tensor_decl **decls,
                         const struct pg_impl_output_spec *specs, int n_out,
                         const struct pg_tensor *impl_out, const struct pg_tensor *goldens,
                         int n_threads, struct pg_mode_result *m);

/* lint.c: warnings about the files written for the pypto workflow (docs/pypto.md "The
 * golden lint", "Suite shape"): each Python golden against step A.5.2, each layout impl
 * wrapper's signature, the suite's shape (step B.2; s NULL: not checked). PG_OK or
 * PG_ENOMEM; findings go to diags. */
int pg__lint_op(const struct pg_contract *c, const struct pg_suite *s, struct pg_diags *diags);

/* inspect.c: inspection probes (module k's `inspect:`). */
struct pg__probes {
  int n;
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  char names[PG_IMPL_MAX_OUTPUTS][PG_NAME_MAX + 16]; /* the impl's "inspection_<name>" */
  /* the pypto workflow's protocol (docs/pypto.md "Inspection probes"): one probe, its
   * reference from module_<k>_inspect before the impl runs, iterations along axis 2,
   * the impl's buffer a keyword argument of a python: impl */
  int pypto;
  int iter_axis;                 /* 0: phasegate's own probes; 2: the workflow's */
  struct pg_tensor_decl pypto_decl; /* the probe's stand-in declaration (name only) */
  char pypto_name[PG_NAME_MAX];
};
/* Phase k's probes: their declarations, and their impl output specs (inspection_<name>)
 * into specs[0..p->n). Returns p->n (0: none) or a negative code. */
int pg__phase_probes(const struct pg_contract *c, int k, const struct pg_case *cs,
                     const struct pg_bindings *dims, int n_out, struct pg__probes *p,
                     struct pg_impl_output_spec *specs, struct pg_error *err);
/* The reference probes of phase k into refs[0..p->n) (initialised by the caller): the
 * built-in steps of module k record them during a cumulative golden, a Python golden's
 * `..._inspect` function returns them, on n_threads threads. Never cached. */
int pg__golden_probes(struct pg__run *rc, int k, const struct pg_case *cs,
                      const struct pg_case_data *d, const struct pg__probes *p, int n_threads,
                      struct pg_tensor *refs, struct pg_error *err);
/* --inspect NAME under the pypto workflow's protocol: the reference probe from phase k's
 * `module_<k>_inspect` into refs[0] (a probe with the iteration on axis 2: at least 3
 * axes), and p and specs[0] for the impl's keyword buffer `inspection_<NAME>` of that
 * shape (float32). Returns 1, or a negative code (err names the golden file and
 * function). */
int pg__pypto_probe(struct pg__run *rc, int k, const struct pg_case *cs,
                    const struct pg_case_data *d, struct pg__probes *p,
                    struct pg_impl_output_spec *specs, struct pg_tensor *refs,
                    struct pg_error *err);
/* Each probe of the impl (impl[0..p->n)) against its reference, iteration by iteration,
 * into m->probes (metrics only). */
void pg__compare_probes(const struct pg__run *rc, const struct pg_case *cs,
                        const struct pg__probes *p, const struct pg_impl_output_spec *specs,
                        const struct pg_tensor *impl, const struct pg_tensor *refs,
                        struct pg_mode_result *m);

/* golden.c */
/* The cached cumulative golden k, if the cache is on and has it: 1 (goldens filled). */
/* The golden environment of a case (plan, bound dims, dtype overrides, precision,
 * golden library, threads): the one place that fills it. */
void pg__golden_env_init(struct pg_golden_env *env, const struct pg_golden_opts *g,
                         const struct pg_case *cs, const struct pg_case_data *d);
int pg__golden_cached(struct pg__run *rc, int k, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_impl_output_spec *specs,
                      int n_out, struct pg_tensor *goldens);
/* Cumulative golden k through the cache: looked up, else computed (on n_threads
 * threads) and stored. */
int pg__golden(struct pg__run *rc, int k, const struct pg_case *cs, const struct pg_case_data *d,
               const struct pg_impl_output_spec *specs, int n_out, int n_threads,
               struct pg_tensor *goldens, int *cached, struct pg_error *err);
/* Suite strength of a case's outputs (want[i]: judged) kept beside its cached golden:
 * 1 when every wanted output's undetected mutants were read into acc[i]. */
int pg__strength_cached(const struct pg__run *rc, int k, const struct pg_case *cs,
                        const struct pg_bindings *dims, const int *want, int n_out,
                        struct pg_tensor_check *acc);
void pg__strength_store(const struct pg__run *rc, int k, const struct pg_case *cs,
                        const struct pg_bindings *dims, const int *want, int n_out,
                        const struct pg_tensor_check *acc);
void pg__blas_preload_start(struct pg__run *rc, int k);
/* Joins the preload thread: called before every fork. */
void pg__blas_preload_join(struct pg__run *rc);

/* data.c */
/* The case's directory of --golden-data (DIR/<case>, or DIR itself for DIR/in + DIR/out). */
char *pg__golden_data_dir(const struct pg__run *rc, const struct pg_case *cs);
int pg__golden_data_inputs(struct pg__run *rc, const struct pg_case *cs, const char *dir,
                           struct pg_case_data *d, struct pg_error *err);
int pg__golden_data_refs(int k, const struct pg_case *cs, const char *dir,
                         const struct pg_impl_output_spec *specs, int n_out,
                         struct pg_tensor *goldens, struct pg_error *err);
/* --save-data: DIR/<case>/in/<name>.npy and DIR/<case>/out/<name>.npy (goldens, then the
 * reference probes as out/inspection_<name>.npy). */
int pg__save_data(const struct pg__run *rc, const struct pg_case *cs, const struct pg_case_data *d,
                  const struct pg_tensor *goldens, int n_out, const struct pg__probes *probes,
                  const struct pg_tensor *probe_refs, struct pg_error *err);
/* --save-data: the outputs of one mode's call as compared, DIR/<case>/impl/<mode>/<name>.npy
 * (outs[0..n), named by specs); when why_not is set (nothing was compared: a crash, a
 * structural fault) DIR/<case>/impl/<mode>/not_compared.txt saying so, next to the
 * tensors outs still holds (a wrong shape or dtype: what the impl wrote); with neither
 * (the mode is unavailable here) no directory at all, as `replay:` reads it. */
int pg__save_impl_data(const struct pg__run *rc, const struct pg_case *cs, const char *mode,
                       const struct pg_impl_output_spec *specs, const struct pg_tensor *outs,
                       int n, const char *why_not, struct pg_error *err);

/* bisect.c: the earliest boundary j < k at which the impl (in `mode`) already diverges;
 * k when none does, 0 when it cannot tell. n_threads: the case's. */
int pg__find_earliest_boundary(struct pg__run *rc, int k, const struct pg_case *cs,
                              const struct pg_case_data *d, int n_threads, const char *mode);

/* jobs.c: the selected cases in `jobs` forked workers; results get what the summary
 * needs (each worker persisted its full results). */
int pg__run_parallel(struct pg__run *rc, const int *sel, int n_sel, int jobs,
                     struct pg_case_result *results, struct pg_error *err);

/* repro.c: the command line that reruns one case (owned; NULL on allocation failure). */
char *pg__repro(const struct pg_run_opts *o, int k, const char *contract, const char *suite,
                const char *case_id, const char *modes);

/* evidence.c: the facts behind a mode's hints and PASS warnings. */
enum { PG__NAN_SAME_INDEX = 1, PG__NAN_SAME_ROW, PG__NAN_ELSEWHERE };
struct pg__nan_origin {
  int input;                  /* the closest input holding a non-finite value; -1: none */
  int relation;               /* PG__NAN_*: to the first non-finite impl element; 0: none */
  int64_t count;              /* that input's non-finite elements */
  char name[PG_NAME_MAX];
};
struct pg__diag_facts {
  struct pg__nan_origin nan;  /* for the tensor being classified */
  const char *transcendental; /* a transcendental kernel of the phase's golden, or NULL */
  const char *captured;       /* the impl's captured output (redacted), or NULL */
};
/* The mask of every failing precision check of m, the PASS checks, --show-values'
 * text; classifies each tensor (pg__classify_diagnosis). Error maps on n_threads
 * threads. Adds its time to *ms. */
void pg__evidence_mode(const struct pg__run *rc, int k, const struct pg_case_data *d,
                       const struct pg_tensor *impl_out, const struct pg_tensor *goldens,
                       int n_threads, struct pg_mode_result *m, double *ms);
/* Repeat call `call` (2..N) against the first call's outputs, bitwise, into m's
 * tensor checks (repeat_*). */
void pg__repeat_compare(const struct pg_tensor *first, const struct pg_tensor *again, int n,
                        int call, struct pg_mode_result *m);

/* classify.c: every decision about a verdict, from facts. */
/* The hints and warnings of one compared tensor from its mask, its metrics and f. */
void pg__classify_diagnosis(struct pg_tensor_check *t, const struct pg__diag_facts *f);
/* nondeterministic, from the repeat_* facts of t. */
void pg__classify_repeats(struct pg_tensor_check *t);
void pg__classify_impl(struct pg_mode_result *m, const struct pg_impl_outcome *out, int k);
/* What the impl's own words (its reported exception, its captured output) and its ending
 * add to a failing mode: the subcategory, and for an environment failure ERROR, infra
 * and the recipe (pg_classify_subcategory). pg__classify_impl applies it; a call that
 * returned outputs gets it after the comparison. */
void pg__classify_output_words(struct pg_mode_result *m, const struct pg_impl_outcome *out);
void pg__classify_output(struct pg_mode_result *m, int k, int i, enum pg_run_fact fact,
                         const char *runner_msg);
void pg__classify_mode_error(struct pg_mode_result *m, const char *msg);
/* A structural failure of a phase with inspection probes says what the impl owes:
 * `probes` lists them ("'inspection_acc' (probe 'acc')"). */
void pg__classify_probe_note(struct pg_mode_result *m, int k, const char *probes);
/* Output i's values were compared (cmp filled, layout right): whether they decide the
 * verdict — only when the case checks precision and the mode's policy gates on values
 * (pg_mode_precision) — and the mode's verdict from them. */
void pg__classify_values(struct pg_mode_result *m, int k, int i, int case_precision,
                         int mode_precision);
void pg__classify_case_error(struct pg_case_result *r, enum pg_run_fact fact, const char *msg);
/* A case of a phase after --implemented-phases: every mode SKIPPED, "M<k> not
 * implemented yet (PHASES <implemented>)". */
void pg__classify_not_implemented(struct pg_case_result *r, int k, int implemented);
/* The mode to bisect (first FAIL, precision, k > 1), or -1. */
int pg__classify_bisect_mode(const struct pg_case_result *r, int k);
/* Phase j's verdict for bisection: 1 diverges, 0 holds, -1 cannot tell. */
int pg__classify_boundary(const struct pg_mode_result *m);
/* The case's status, all_close, maxima, fingerprint, category, boundary, summary, hint. */
void pg__classify_case(struct pg_case_result *r, int k, double timeout_s, const char *op);
/* Counterfactual goldens: the impl against a mutant golden (mut, same rule) compared
 * with the impl against the reference (t->cmp): a hint of `kind` when the mutant fits
 * by orders of magnitude better, with the axis and tile the mutant names (-1: none). */
void pg__classify_mutant_fit(struct pg_tensor_check *t, enum pg_hint_kind kind, int axis,
                             int64_t tile, const char *detail, const struct pg_cmp_result *mut);
/* Suite strength: a mutant compared with the reference under the case's rule; listed
 * as undetected when it passes. */
void pg__classify_mutant_strength(struct pg_tensor_check *t, enum pg_hint_kind kind,
                                  const char *detail, const struct pg_cmp_result *mut_vs_ref);
/* The CPU reproducer: the impl's max_abs_diff against the largest difference another
 * summation order makes (spread; orders names those orders); suite_calibration when
 * within it. */
void pg__classify_reproducer(struct pg_tensor_check *t, double spread, const char *orders);
/* A Python golden rerun in another precision (rv, and the impl compared with it):
 * float64 within reach of the impl's error -> suite_calibration; the impl fitting the
 * bfloat16 rerun far better than the reference -> low_precision_inputs. */
void pg__classify_py_reproducer(struct pg_tensor_check *t, const struct pg_repro_variant *rv,
                                const struct pg_cmp_result *impl_vs_variant);
/* Before any case (run/py_golden.c): the interpreter can run the Python goldens of
 * phases 1..k (k = 0: the op-level one) and the op's test_inputs.py — numpy, and torch where a golden file imports it (pg_python_preflight):
 * PG_OK, or one error naming the interpreter, what it lacks and how to choose another. */
int pg__py_golden_preflight(const char *python, const struct pg_contract *c, int k,
                            char *about, struct pg_error *err);
/* The run's counts, status (worst case wins) and exit code; a report that could not be
 * written makes it an ERROR. */
void pg__classify_run(struct pg_run_summary *s, const struct pg_case_result *results, int n,
                      int persisted);
/* A PG_STRENGTH_ONLY run's summary: cases, where their suite strength came from, exit 2
 * when a case could not be prepared (its inputs or golden failed), else 0. */
void pg__classify_strength_run(struct pg_run_summary *s, const struct pg_case_result *results,
                               int n);
/* The category of a run refused before its cases: structural when the op's files are
 * at fault (contract, suite, goldens, the phase or case selection), infra otherwise. */
enum pg_category pg__classify_refusal(enum pg__refusal_stage stage);

#endif
