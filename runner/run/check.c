/* phasegate runner — the one validation of an op (docs/design.md §3 "Validation"):
 * `validate`, `list`, `gen` and `run` all load the contract and suite through
 * pg_op_load, so a file one of them accepts none of them refuses, and every finding
 * is reported, not only the first: the contract's rules, its golden steps (type and
 * shape checks), the suite's rules (against the contract when that loaded), and each
 * cancellation_stress target the input generator could not stress — also when the
 * suite has other errors. */
#include <stdio.h>
#include <string.h>

#include "phasegate/goldens.h"
#include "run/run.h"
#include "run/run_internal.h"

/* err <- the first error finding of d from index `from`, as the console prints it. */
static void first_finding(const struct pg_diags *d, int from, int rc, struct pg_error *err) {
  for (int i = from; err && i < d->count; i++) {
    if (d->items[i].severity != PG_SEV_ERROR) continue;
    pg_diag_format(&d->items[i], err->message, sizeof err->message);
    err->code = rc;
    err->line = d->items[i].line;
    err->column = d->items[i].column;
    return;
  }
}

/* Does a step of module id's golden compute `name`? */
static int step_computes(const struct pg_golden_plan *p, int id, const char *name) {
  int n = pg_golden_plan_n_steps(p, id);
  for (int s = 0; s < n; s++) {
    const struct pg_golden_plan_step *st = pg_golden_plan_step(p, id, s);
    for (int o = 0; st && o < st->n_outputs; o++)
      if (st->outputs[o] && strcmp(st->outputs[o], name) == 0) return 1;
  }
  return 0;
}

/* Inspection probes (`inspect:`): unique names, a leading (iteration) axis, and a
 * reference: a step of the module's built-in golden of that name, or a Python golden
 * (its `..._inspect` function is looked up when it runs). Returns the error count, or
 * a negative code. */
static int check_probes(const struct pg_contract *c, struct pg_diags *d) {
  int errors = 0, any = 0;
  for (int m = 0; m < c->n_modules; m++) any |= c->modules[m].n_probes > 0;
  if (!any) return 0;
  struct pg_golden_plan *plan = NULL;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg_golden_plan_build(&c->graph, &plan, &e) != PG_OK) return e.code < 0 ? e.code : PG_ENOMEM;
  for (int mi = 0; mi < c->n_modules; mi++) {
    const struct pg_module *m = &c->modules[mi];
    for (int i = 0; i < m->n_probes; i++) {
      const struct pg_tensor_decl *p = &m->probes[i];
      if (!p->name) continue;
      const char *msg = NULL;
      char buf[512];
      for (int j = 0; j < i && !msg; j++)
        if (m->probes[j].name && strcmp(m->probes[j].name, p->name) == 0)
          msg = "is declared twice";
      if (!msg && p->ndim == 0)
        msg = "needs a leading (iteration) axis: its shape is [ITERS, ...]";
      if (!msg && m->golden.kind == PG_GOLDEN_STEPS && !step_computes(plan, m->id, p->name)) {
        snprintf(buf, sizeof buf, "is computed by none of the module's golden steps (a probe "
                 "names a step's tensor, e.g. `%s = cumsum(x, axis=0)`)", p->name);
        msg = buf;
      }
      if (!msg && m->golden.kind == PG_GOLDEN_PLUGIN &&
          pg_contract_phase_golden(c, m->id) != PG_PHASE_GOLDEN_PYTHON)
        msg = "has no reference: a plugin golden cannot record probes (use built-in steps, or "
              "a Python golden with an _inspect function)";
      if (!msg) continue;
      errors++;
      if (pg_diags_add(d, PG_SEV_ERROR, c->path, p->mark.line, p->mark.column, "inspect",
                       "inspection probe '%s' of module %d %s", p->name, m->id, msg) != PG_OK) {
        pg_golden_plan_free(plan);
        return PG_ENOMEM;
      }
    }
  }
  pg_golden_plan_free(plan);
  return errors;
}

int pg_op_load(const char *contract_path, const char *suite_path, struct pg_contract *c,
               struct pg_suite *s, struct pg_diags *d, struct pg_error *err) {
  int from = d->count;
  int crc = pg_contract_load(contract_path, c, d, err);
  if (crc != PG_OK && d->n_errors == 0) return crc; /* unreadable: no finding to show */
  int sound = crc == PG_OK; /* its structure: the suite and the plan can use it */
  if (sound) {
    int g = pg_goldens_validate(&c->graph, pg_diags_add_finding, d);
    if (g < 0)
      return pg_error_set(err, g, "%s: checking the golden steps: %s", contract_path,
                          pg_strerror(g));
    if (g > 0) crc = PG_EVALIDATE;
    int pr = check_probes(c, d);
    if (pr < 0)
      return pg_error_set(err, pr, "%s: checking inspection probes: %s", contract_path,
                          pg_strerror(pr));
    if (pr > 0) crc = PG_EVALIDATE;
  }
  int src = PG_OK;
  if (suite_path) {
    struct pg_error serr;
    pg_error_clear(&serr);
    src = pg_suite_load(suite_path, sound ? c : NULL, s, d, &serr);
    if (src != PG_OK && src != PG_EVALIDATE && src != PG_EPARSE && src != PG_ELIMIT) {
      if (err) *err = serr;
      return src; /* cannot read it (or out of memory): nothing more to say */
    }
    /* Cancellation targets need the contract's golden plan, not a sound suite: a bad
     * level elsewhere must not hide them. */
    /* (make_inputs owns cancellation_stress when the op has test_inputs.py) */
    int n = sound && !c->test_inputs ? pg_suite_check_cancellation(c, s, d) : 0;
    if (n < 0) return pg_error_set(err, n, "%s: checking cancellation_stress: %s", suite_path,
                                   pg_strerror(n));
    if (n > 0 && src == PG_OK) src = PG_EVALIDATE;
    if (src != PG_OK && crc == PG_OK && d->n_errors == 0 && err) *err = serr;
  }
  /* the workflow's own rules for its files: warnings, never a refusal (run/lint.c) */
  if (sound) {
    int lr = pg__lint_op(c, suite_path && src == PG_OK ? s : NULL, d);
    if (lr < 0) return pg_error_set(err, lr, "%s: linting the pypto files: %s", contract_path,
                                    pg_strerror(lr));
  }
  int rc = crc != PG_OK ? crc : src;
  if (rc != PG_OK) first_finding(d, from, rc, err);
  return rc;
}
