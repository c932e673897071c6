/* phasegate runner — one case of a phase (docs/design.md §4–§7): bind dims, generate (or
 * load) the inputs, start the first mode's impl call, compute the cumulative golden
 * meanwhile (cached), then every requested mode — never short-circuited — with its
 * captured output redacted through the barrier hook, its outputs compared, and the
 * verdicts left to classify.c. The finished case goes to the case_lines hook.
 *
 * Also the case data steps `phasegate selftest` shares (pg_case_data_*); the steps other
 * files of the room share (pg_case_compare, the comparison of outputs) are in step.c.
 * Does not format text for people (summaries of runner failures aside) and writes no
 * report.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"
#include "base/base.h"

#define PG_CAPTURE_KEEP (16u * 1024u) /* captured impl output kept per mode */

/* Below this many elements per case, worker threads cost more than they save (and
 * on a loaded machine each parallel region waits for a core). */
#define PG_SMALL_CASE_ELEMENTS (1 << 20)

void pg_case_result_reset(struct pg_case_result *r) {
  if (!r) return;
  for (int i = 0; i < r->n_modes; i++) {
    for (int t = 0; r->modes[i].tensors && t < r->modes[i].n_tensors; t++)
      free(r->modes[i].tensors[t].error_map);
    free(r->modes[i].tensors);
    free(r->modes[i].captured);
    for (int p = 0; p < r->modes[i].n_probes; p++) free(r->modes[i].probes[p].iters);
    free(r->modes[i].probes);
    free(r->modes[i].local_values);
  }
  free(r->modes);
  free(r->repro);
  free(r->knobs_json);
  memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ shared steps */

int pg_case_data_init(struct pg_case_data *d, const struct pg_contract *c, struct pg_error *err) {
  memset(d, 0, sizeof *d);
  d->inputs = calloc((size_t)(c->n_primary + 1), sizeof *d->inputs);
  if (!d->inputs) return pg_error_set(err, PG_ENOMEM, "out of memory");
  d->n_inputs = c->n_primary;
  for (int i = 0; i < d->n_inputs; i++) pg_tensor_init(&d->inputs[i]);
  return PG_OK;
}

int pg_case_data_bind(struct pg_case_data *d, const struct pg_contract *c,
                      const struct pg_case *cs, struct pg_error *err) {
  return pg_case_bind_dims(c, cs, &d->dims, err);
}

int pg_case_data_generate(struct pg_case_data *d, const struct pg_contract *c,
                          const struct pg_golden_plan *plan, const struct pg_case *cs,
                          const struct pg_materialize_opts *mo, struct pg_error *err) {
  PG_RETURN_IF_ERROR(
      pg_case_generate_inputs_plan(c, plan, cs, &d->dims, mo, d->inputs, &d->cancel, err));
  for (int i = 0; i < c->n_primary; i++)
    if (!d->inputs[i].name[0]) pg_tensor_set_name(&d->inputs[i], c->primary_inputs[i].name);
  return PG_OK;
}

void pg_case_data_reset(struct pg_case_data *d) {
  if (!d) return;
  for (int i = 0; d->inputs && i < d->n_inputs; i++) pg_tensor_reset(&d->inputs[i]);
  free(d->inputs);
  pg_bindings_reset(&d->dims);
  free(d->arguments);
  memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------------ one case */

/* What one case holds while it runs. */
struct case_run {
  struct pg__run *rc;
  const struct pg_case *cs;
  struct pg_case_result *r;
  int k;
  struct pg_case_data d;
  struct pg_tensor goldens[PG_IMPL_MAX_OUTPUTS];
  const struct pg_tensor_decl *decls[PG_IMPL_MAX_OUTPUTS];
  struct pg_impl_output_spec specs[PG_IMPL_MAX_OUTPUTS]; /* outputs, then probes */
  int n_out;
  struct pg__probes probes;   /* module k's inspection probes (specs[n_out..]) */
  struct pg_tensor probe_refs[PG_IMPL_MAX_OUTPUTS];
  /* the tensors whose values captured text must not show (inputs, then goldens) */
  const struct pg_tensor *barrier[PG_IMPL_MAX_OUTPUTS + 64];
  int n_barrier;
  /* the first mode's impl call, started before the golden */
  int pending;
  struct pg__call call0;
  struct pg_impl_pending pend;
  struct pg_impl_outcome out0;
  struct pg_error pend_err;
  int n_threads;             /* for this case's golden and comparisons (case_threads) */
  struct pg__diag_case diag; /* counterfactual goldens, once the goldens are known */
  double t_case;             /* when the case began: the diagnosis budget is relative */
};

/* A case-level error: every mode gets it, nothing more runs. Returns -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int case_error(struct case_run *c, enum pg_run_fact fact, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pg__classify_case_error(c->r, fact, msg);
  return -1;
}

/* The result's header and its modes; 0 when out of memory (r says so). */
static int case_begin(struct case_run *c) {
  struct pg__run *rc = c->rc;
  const struct pg_case *cs = c->cs;
  struct pg_case_result *r = c->r;
  memset(r, 0, sizeof *r);
  snprintf(r->id, sizeof r->id, "%s", cs->id);
  r->index = cs->index;
  r->level = cs->level;
  r->precision_checked = cs->precision;
  r->drift_onset_iter = -1;
  r->knobs_json = pg_strdup(cs->json ? cs->json : "{}");
  if (rc->o->impl_spec) /* a strength-only pass has no impl to rerun */
    r->repro = pg__repro(rc->o, c->k, rc->contract_path, rc->suite_path, cs->id, rc->modes_buf);
  r->modes = calloc((size_t)rc->n_modes + 1, sizeof *r->modes); /* 0 modes: strength only */
  if (!r->modes) {
    pg__classify_case_error(r, PG_RUN_FACT_RUNNER, "out of memory");
    return 0;
  }
  r->n_modes = rc->n_modes;
  for (int i = 0; i < rc->n_modes; i++) {
    snprintf(r->modes[i].mode, sizeof r->modes[i].mode, "%s", rc->modes[i]);
    r->modes[i].fact_output = -1;
    const char *from = "";
    r->modes[i].structure_only =
        !pg_mode_precision(&rc->contract, &rc->suite, cs, rc->modes[i], &from);
    snprintf(r->modes[i].policy_from, sizeof r->modes[i].policy_from, "%s", from);
  }
  return 1;
}

/* Threads for this case: one for small cases, all cores for big ones. */
static void case_threads(struct case_run *c) {
  const struct pg_contract *ct = &c->rc->contract;
  int64_t total = 0;
  for (int i = 0; i < c->n_out; i++) {
    int64_t n = 1;
    for (int a = 0; a < c->specs[i].ndim; a++) n *= c->specs[i].shape[a];
    total += n;
  }
  for (int i = 0; i < ct->n_primary; i++) {
    int nd;
    int64_t sh[PG_MAX_NDIM], n = 1;
    struct pg_error ie;
    if (pg_decl_shape(&ct->primary_inputs[i], &c->d.dims, &nd, sh, &ie) != PG_OK) continue;
    for (int a = 0; a < nd; a++) n *= sh[a];
    total += n;
  }
  c->n_threads = total < PG_SMALL_CASE_ELEMENTS ? 1 : 0;
}

/* Inputs: from --golden-data, or generated. */
static int case_inputs(struct case_run *c, const char *gd_dir) {
  struct pg__run *rc = c->rc;
  struct pg_error e;
  pg_error_clear(&e);
  if (gd_dir) {
    if (pg__golden_data_inputs(rc, c->cs, gd_dir, &c->d, &e) != PG_OK)
      return case_error(c, PG_RUN_FACT_RUNNER, "%s", e.message);
    return PG_OK;
  }
  if (rc->contract.test_inputs && rc->py) { /* the op's own input code wins */
    char unread[512];
    if (pg_py_make_inputs(rc->py, &rc->contract, c->cs, &c->d, unread, sizeof unread, &e) != PG_OK)
      return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': cannot make inputs: %.700s",
                        c->cs->id, e.message);
    if (unread[0])
      pg__line(rc, 1, "phasegate: warning: case '%s': knob(s) %s: make_inputs of %s never "
               "reads them, so they change nothing", c->cs->id, unread, rc->contract.test_inputs);
    return PG_OK;
  }
  struct pg_materialize_opts mo = {rc->o->max_bytes, c->n_threads};
  int r = pg_case_data_generate(&c->d, &rc->contract, rc->plan, c->cs, &mo, &e);
  c->r->cancel = c->d.cancel;
  if (r != PG_OK)
    return case_error(c, e.code == PG_ELIMIT ? PG_RUN_FACT_CASE_LIMIT : PG_RUN_FACT_RUNNER,
                      "case '%s': cannot generate inputs: %.700s", c->cs->id, e.message);
  return PG_OK;
}

/* References: from --golden-data, the cache hit found earlier, or computed. */
static int case_goldens(struct case_run *c, const char *gd_dir, int golden_hit) {
  struct pg_error e;
  pg_error_clear(&e);
  if (gd_dir) {
    if (pg__golden_data_refs(c->k, c->cs, gd_dir, c->specs, c->n_out, c->goldens, &e) != PG_OK)
      return case_error(c, PG_RUN_FACT_RUNNER, "%s", e.message);
  } else if (golden_hit) {
    c->r->golden_cached = 1;
  } else if (pg__golden(c->rc, c->k, c->cs, &c->d, c->specs, c->n_out, c->n_threads,
                        c->goldens, &c->r->golden_cached, &e) != PG_OK) {
    return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': cumulative golden M1..M%d failed: %.700s",
                      c->cs->id, c->k, e.message);
  }
  if (c->probes.n > 0 && !c->probes.pypto && /* the workflow's came before the impl */
      pg__golden_probes(c->rc, c->k, c->cs, &c->d, &c->probes, c->n_threads, c->probe_refs,
                        &e) != PG_OK)
    return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': the reference inspection probes of "
                      "M%d: %.700s", c->cs->id, c->k, e.message);
  return PG_OK;
}

/* Dims, boundary, inputs and goldens, with the first mode's call started in between:
 * it runs while this process computes the golden (the impl only needs the inputs). */
static int case_prepare(struct case_run *c) {
  struct pg__run *rc = c->rc;
  const struct pg_case *cs = c->cs;
  const char *gd = rc->o->golden_data;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg_case_data_init(&c->d, &rc->contract, &e) != PG_OK)
    return case_error(c, PG_RUN_FACT_RUNNER, "out of memory");
  if (pg_case_data_bind(&c->d, &rc->contract, cs, &e) != PG_OK)
    return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': cannot bind dims: %.700s", cs->id,
                      e.message);
  c->n_out = pg__phase_outputs(&rc->contract, c->k, cs, &c->d.dims, c->decls, c->specs, &e);
  if (c->n_out < 0) {
    c->n_out = 0;
    return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': boundary of M%d: %.700s", cs->id, c->k,
                      e.message);
  }
  if (!rc->o->e2e && /* the integrated impl owes no module's probes */
      pg__phase_probes(&rc->contract, c->k, cs, &c->d.dims, c->n_out, &c->probes,
                       c->specs + c->n_out, &e) < 0)
    return case_error(c, PG_RUN_FACT_RUNNER, "case '%s': inspection probes of M%d: %.700s",
                      cs->id, c->k, e.message);
  c->r->has_probes = c->probes.n > 0;
  case_threads(c);
  /* A cached golden is looked up first: on a miss OpenBLAS loads while the inputs are
   * generated. */
  int golden_hit = 0;
  if (!gd) {
    golden_hit = pg__golden_cached(rc, c->k, cs, &c->d.dims, c->specs, c->n_out, c->goldens);
    if (!golden_hit) pg__blas_preload_start(rc, c->k);
  }
  char *gd_dir = gd ? pg__golden_data_dir(rc, cs) : NULL;
  if (gd && !gd_dir) return case_error(c, PG_RUN_FACT_RUNNER, "out of memory");
  double t0 = pg_now_ms();
  int r = case_inputs(c, gd_dir);
  c->r->inputs_ms = pg_now_ms() - t0;
  if (r == PG_OK && rc->pypto_probe[0] && c->probes.n == 0) {
    /* the pypto workflow's probe: its shape is what module_<k>_inspect returns, so the
     * reference comes first and the impl's keyword buffer gets that shape */
    t0 = pg_now_ms();
    if (pg__pypto_probe(rc, c->k, cs, &c->d, &c->probes, c->specs + c->n_out, c->probe_refs,
                        &e) < 0)
      r = case_error(c, PG_RUN_FACT_RUNNER, "case '%s': the reference inspection probe of "
                     "M%d: %.700s", cs->id, c->k, e.message);
    c->r->has_probes = c->r->probes_pypto = c->probes.n > 0;
    c->r->golden_ms += pg_now_ms() - t0;
  }
  if (r == PG_OK) {
    pg__blas_preload_join(rc); /* before the fork */
    if (rc->n_modes > 0 && c->d.dims.count <= PG_MAX_DIMS) {
      pg__call_init(rc, c->k, cs, &c->d, c->specs, c->n_out + c->probes.n, c->r->modes[0].mode,
                    &c->call0);
      c->call0.req.n_kwarg_outputs = c->probes.pypto ? c->probes.n : 0;
      pg_error_clear(&c->pend_err);
      pg_impl_start(&rc->impl, &c->call0.req, &c->pend, &c->out0, &c->pend_err);
      c->pending = 1;
    }
    t0 = pg_now_ms();
    r = case_goldens(c, gd_dir, golden_hit);
    c->r->golden_ms += pg_now_ms() - t0;
  }
  free(gd_dir);
  if (r == PG_OK && rc->o->save_data &&
      pg__save_data(rc, cs, &c->d, c->goldens, c->n_out, &c->probes, c->probe_refs, &e) != PG_OK)
    pg__line(rc, 1, "phasegate: warning: --save-data: %s", e.message);
  return r;
}

/* The impl's captured stdout then stderr, redacted against this case's tensors and cut
 * to the last PG_CAPTURE_KEEP bytes (from a line start); NULL when there is none. */
static char *captured_text(const struct case_run *c, const struct pg_sandbox_result *sb) {
  size_t lo = sb->out ? strlen(sb->out) : 0, le = sb->err ? strlen(sb->err) : 0;
  if (!(lo + le)) return NULL;
  char *both = malloc(lo + le + 2);
  if (!both) return NULL;
  memcpy(both, sb->out ? sb->out : "", lo);
  if (lo && le && both[lo - 1] != '\n') both[lo++] = '\n';
  memcpy(both + lo, sb->err ? sb->err : "", le);
  both[lo + le] = '\0';
  char *s = c->rc->o->hooks.redact(both, c->barrier, c->n_barrier);
  free(both);
  size_t cl = s ? strlen(s) : 0;
  if (cl > PG_CAPTURE_KEEP) {
    size_t from = cl - PG_CAPTURE_KEEP;
    size_t nl = from;
    while (nl < cl && nl < from + 1024 && s[nl - 1] != '\n') nl++;
    if (nl < cl && s[nl - 1] == '\n') from = nl; /* start at a line */
    memmove(s, s + from, cl - from + 1);
  }
  return s;
}

/* --repeat N: calls 2..N of the mode on the same inputs, each compared bitwise with
 * the first call's outputs (nondeterministic is a warning: the first call's verdict
 * stands). A repeat that does not complete is a failure of the mode like any other. */
static void run_repeats(struct case_run *c, struct pg_mode_result *m,
                        const struct pg_tensor *first) {
  struct pg__run *rc = c->rc;
  for (int call = 2; call <= rc->o->repeat; call++) {
    struct pg__call rq;
    struct pg_impl_outcome again;
    struct pg_error e;
    pg_error_clear(&e);
    pg__call_init(rc, c->k, c->cs, &c->d, c->specs, c->n_out, m->mode, &rq);
    int irc = pg_impl_invoke(&rc->impl, &rq.req, &again, &e);
    if (irc != PG_OK) {
      char msg[640];
      snprintf(msg, sizeof msg, "repeat %d: runner could not call the impl: %.500s", call,
               e.message);
      pg__classify_mode_error(m, msg);
      return;
    }
    if (again.status != PG_IMPL_DONE) {
      pg__classify_impl(m, &again, c->k);
      char *red = rc->o->hooks.redact(m->summary, c->barrier, c->n_barrier);
      snprintf(m->summary, sizeof m->summary, "repeat %d of %d: %.600s", call, rc->o->repeat,
               red ? red : "(withheld)");
      free(red);
      pg_impl_outcome_reset(&again);
      return;
    }
    double t1 = pg_now_ms();
    pg__repeat_compare(first, again.outputs, c->n_out, call, m);
    c->r->diagnosis_ms += pg_now_ms() - t1;
    pg_impl_outcome_reset(&again);
  }
  for (int i = 0; i < m->n_tensors; i++) pg__classify_repeats(&m->tensors[i]);
}

/* --save-data: the mode's outputs and probes as compared, or why there are none (with
 * what the adapter kept of a rejected call). */
static void save_impl(struct case_run *c, const struct pg_mode_result *m,
                      const struct pg_impl_outcome *op) {
  int unavailable = op && op->status == PG_IMPL_UNAVAILABLE;
  const char *why = (op && op->status == PG_IMPL_DONE) || unavailable ? NULL : m->summary;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg__save_impl_data(c->rc, c->cs, m->mode, c->specs, op && !unavailable ? op->outputs : NULL,
                         c->n_out + c->probes.n, why && !*why ? "(no reason given)" : why,
                         &e) != PG_OK)
    pg__line(c->rc, 1, "phasegate: warning: --save-data: %s", e.message);
}

/* One mode: the impl call (the first one already started), then its verdict. */
static void run_mode(struct case_run *c, int mi) {
  struct pg__run *rc = c->rc;
  struct pg_mode_result *m = &c->r->modes[mi];
  struct pg_impl_outcome out, *op = &out;
  struct pg_error e;
  pg_error_clear(&e);
  int irc;
  if (mi == 0 && c->pending) {
    c->pending = 0;
    irc = pg_impl_finish(&c->pend, &c->out0, &c->pend_err);
    op = &c->out0;
    e = c->pend_err;
  } else {
    struct pg__call call;
    pg__call_init(rc, c->k, c->cs, &c->d, c->specs, c->n_out + c->probes.n, m->mode, &call);
    call.req.n_kwarg_outputs = c->probes.pypto ? c->probes.n : 0;
    irc = pg_impl_invoke(&rc->impl, &call.req, op, &e);
  }
  if (irc != PG_OK) {
    char msg[640];
    snprintf(msg, sizeof msg, "runner could not call the impl: %.500s", e.message);
    pg__classify_mode_error(m, msg);
  } else {
    m->impl_ms = op->wall_ms;
    m->startup_ms = op->startup_ms;
    memcpy(m->device_name, op->device_name, sizeof m->device_name);
    m->exit_code = op->sandbox.exit_code;
    m->signo = op->sandbox.signo;
    m->timed_out = op->sandbox.timed_out;
    m->captured = captured_text(c, &op->sandbox);
    if (op->status == PG_IMPL_DONE) {
      pg__compare_outputs(rc, c->k, c->cs, c->decls, c->specs, c->n_out, op->outputs, c->goldens,
                          c->n_threads, m);
      pg__compare_probes(rc, c->cs, &c->probes, c->specs + c->n_out, op->outputs + c->n_out,
                         c->probe_refs, m);
      pg__evidence_mode(rc, c->k, &c->d, op->outputs, c->goldens, c->n_threads, m,
                        &c->r->diagnosis_ms);
      if (rc->o->repeat > 1) run_repeats(c, m, op->outputs);
      if (m->status == PG_VERDICT_FAIL && m->category == PG_CAT_PRECISION)
        pg__diagnose_mode(&c->diag, m, op->outputs);
      pg__classify_output_words(m, op); /* a device log beside wrong outputs */
    } else {
      pg__classify_impl(m, op, c->k);
      char list[512] = "";
      /* about a probe, or about no output in particular (a count); the pypto workflow's
       * probe is a keyword buffer the worker's own words are about */
      int probe_fact = !c->probes.pypto && (op->output < 0 || op->output >= c->n_out);
      for (int i = 0; probe_fact && i < c->probes.n; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s'%s' (probe '%s')", i ? ", " : "",
                 c->probes.names[i], c->probes.decls[i]->name);
      }
      pg__classify_probe_note(m, c->k, list);
    }
  }
  /* Adapter summaries may quote the impl's stderr: same barrier as the captured
   * output. (Comparison summaries carry metrics only and stay as they are.) */
  if (op->status != PG_IMPL_DONE) {
    char *red = rc->o->hooks.redact(m->summary, c->barrier, c->n_barrier);
    if (red) {
      snprintf(m->summary, sizeof m->summary, "%s", red);
      free(red);
    }
  }
  if (rc->o->save_data) save_impl(c, m, irc == PG_OK ? op : NULL);
  pg_impl_outcome_reset(op);
}

/* Every requested mode, never short-circuited; then bisection and the case's verdict. */
static int case_modes(struct case_run *c) {
  struct pg__run *rc = c->rc;
  for (int i = 0; i < rc->contract.n_primary && c->n_barrier < 64; i++)
    c->barrier[c->n_barrier++] = &c->d.inputs[i];
  for (int i = 0; i < c->n_out; i++) c->barrier[c->n_barrier++] = &c->goldens[i];
  for (int i = 0; i < c->probes.n; i++) c->barrier[c->n_barrier++] = &c->probe_refs[i];
  if (rc->n_modes > 0 && c->d.dims.count > PG_MAX_DIMS)
    return case_error(c, PG_RUN_FACT_RUNNER, "more than 64 dims");
  c->diag = (struct pg__diag_case){.rc = rc, .k = c->k, .cs = c->cs, .d = &c->d,
                                   .decls = c->decls, .goldens = c->goldens, .n_out = c->n_out,
                                   .n_threads = c->n_threads, .case_t0_ms = c->t_case};
  for (int mi = 0; mi < rc->n_modes; mi++) run_mode(c, mi);
  pg__suite_strength(&c->diag, c->r);
  c->r->diagnosis_ms += c->diag.spent_ms;
  /* --e2e: the integrated impl has no earlier boundaries to bisect */
  int bm = rc->o->no_bisect || rc->o->e2e ? -1 : pg__classify_bisect_mode(c->r, c->k);
  if (bm >= 0) {
    int j = pg__find_earliest_boundary(rc, c->k, c->cs, &c->d, c->n_threads,
                                       c->r->modes[bm].mode);
    if (j > 0) c->r->modes[bm].earliest_boundary = j;
  }
  pg__classify_case(c->r, c->k, rc->timeout_s, rc->contract.op);
  return PG_OK;
}

void pg__run_case(struct pg__run *rc, const struct pg_case *cs, struct pg_case_result *r) {
  double t_case = pg_now_ms(), wall0 = pg_wall_ms();
  struct case_run *c = calloc(1, sizeof *c);
  if (!c) {
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", cs->id);
    pg__classify_case_error(r, PG_RUN_FACT_RUNNER, "out of memory");
    return;
  }
  c->rc = rc;
  c->cs = cs;
  c->r = r;
  c->k = rc->k;
  c->t_case = t_case;
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&c->goldens[i]);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_init(&c->probe_refs[i]);
  if (!case_begin(c)) {
    free(c);
    return;
  }
  if (rc->not_implemented) /* listed, reported, never generated, computed or called */
    pg__classify_not_implemented(r, c->k, rc->o->implemented_phases);
  else if (case_prepare(c) == PG_OK)
    case_modes(c);
  pg__blas_preload_join(rc);
  if (c->pending) { /* the case failed before the impl's result was needed */
    struct pg_error fe;
    pg_impl_finish(&c->pend, &c->out0, &fe);
    pg_impl_outcome_reset(&c->out0);
  }
  r->total_ms = pg_now_ms() - t_case;
  r->started_ms = wall0;
  r->ended_ms = pg_wall_ms();
  const struct pg_run_hooks *h = &rc->o->hooks;
  if (rc->o->strength_policy == PG_STRENGTH_ONLY) { /* no mode: only what went wrong */
    if (r->status == PG_VERDICT_ERROR) pg__line(rc, 1, "phasegate: %s: %s", r->id, r->summary);
  } else if (h->case_lines) {
    h->case_lines(&rc->phase, r, rc->o->on_line, rc->o->user);
  }
  pg_case_data_reset(&c->d);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&c->goldens[i]);
  for (int i = 0; i < PG_IMPL_MAX_OUTPUTS; i++) pg_tensor_reset(&c->probe_refs[i]);
  free(c);
}
