/* phasegate runner — the steps of one case that other files of the room share
 * (docs/architecture.md "The path of one case"): the boundary outputs a phase declares,
 * one impl request filled in, the comparison rule of one output, and the comparison of
 * every boundary output. case.c (a case), bisect.c (earlier phases), diagnose.c
 * (counterfactual goldens), inspect.c (probes) and py_golden.c (Python goldens) call
 * these; this file calls nothing above it in the room but classify.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

int pg_case_compare(const struct pg_tensor *impl, const struct pg_tensor *ref,
                    const struct pg_cmp_rule *rule, int n_threads, struct pg_cmp_result *res,
                    struct pg_error *err) {
  DLTensor a = pg_tensor_dl(impl), b = pg_tensor_dl(ref);
  return pg_tensor_compare(&a, &b, rule, n_threads, res, err);
}

/* ------------------------------------------------------------------ calls and compare */

int pg__phase_outputs(const struct pg_contract *c, int k, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_tensor_decl **decls,
                      struct pg_impl_output_spec *specs, struct pg_error *err) {
  int n = pg_contract_boundary(c, k, decls, PG_IMPL_MAX_OUTPUTS, err);
  if (n < 0) return n;
  for (int i = 0; i < n; i++) {
    specs[i].name = decls[i]->name;
    specs[i].dtype = pg_case_dtype(cs, decls[i]);
    int rcode = pg_decl_shape(decls[i], dims, &specs[i].ndim, specs[i].shape, err);
    if (rcode != PG_OK) {
      pg_error_prefix(err, "output '%s': ", decls[i]->name);
      return rcode;
    }
  }
  return n;
}

void pg__call_init(const struct pg__run *rc, int k, const struct pg_case *cs,
                   const struct pg_case_data *d, const struct pg_impl_output_spec *specs,
                   int n_out, const char *mode, struct pg__call *call) {
  struct pg_impl_request *req = &call->req;
  memset(req, 0, sizeof *req);
  pg_phase_suffix(k, call->suffix, sizeof call->suffix);
  for (int i = 0; i < d->dims.count && i < PG_MAX_DIMS; i++) {
    call->dim_names[i] = d->dims.items[i].name;
    call->dim_values[i] = d->dims.items[i].value;
  }
  req->op = rc->contract.op;
  req->suffix = call->suffix;
  req->up_to_module = k;
  req->total_modules = rc->contract.n_modules;
  req->mode = mode;
  req->device_id = rc->device_id;
  req->case_id = cs->id;
  req->n_dims = d->dims.count;
  req->dim_names = call->dim_names;
  req->dim_values = call->dim_values;
  req->knobs_json = cs->json ? cs->json : "{}";
  req->inputs = d->inputs;
  req->n_inputs = rc->contract.n_primary;
  req->arguments_json = d->arguments; /* make_inputs's order and non-tensor inputs */
  req->outputs = specs;
  req->n_outputs = n_out;
  req->timeout_s = rc->timeout_s;
  req->rlimit_as = rc->o->rlimit_as;
  req->work_dir = rc->o->work_dir;
  req->keep_work = rc->o->keep_work;
}

/* Comparison rule for one output (or probe), each of atol, rtol and the rule from the
 * most specific level that sets it: the case's entry for this output name > the case >
 * the output's declaration > the contract > the default (atol = rtol = 1e-3 for
 * floats, pg_cmp_default_tolerance; allclose). */
int pg__output_rule(const struct pg__run *rc, const struct pg_case *cs,
                    const struct pg_tensor_decl *decl, enum pg_dtype dtype,
                    struct pg_cmp_rule *rule, struct pg_error *err) {
  memset(rule, 0, sizeof *rule);
  rule->kind = PG_RULE_ALLCLOSE;
  pg_cmp_default_tolerance(dtype, &rule->atol, &rule->rtol);
  if (rc->contract.has_tolerance) {
    rule->atol = rc->contract.atol;
    rule->rtol = rc->contract.rtol;
  }
  const char *text = decl->rule;
  if (decl->has_atol) rule->atol = decl->atol;
  if (decl->has_rtol) rule->rtol = decl->rtol;
  if (cs->has_atol) rule->atol = cs->atol;
  if (cs->has_rtol) rule->rtol = cs->rtol;
  if (cs->rule && *cs->rule) text = cs->rule;
  const struct pg_output_tolerance *ot = decl->name ? pg_case_output_tolerance(cs, decl->name)
                                                    : NULL;
  if (ot && ot->has_atol) rule->atol = ot->atol;
  if (ot && ot->has_rtol) rule->rtol = ot->rtol;
  if (ot && ot->rule) text = ot->rule;
  rule->equal_nan = cs->equal_nan;
  if (text && *text) return pg_cmp_rule_parse(text, rule, err);
  return PG_OK;
}

void pg__compare_outputs(const struct pg__run *rc, int k, const struct pg_case *cs,
                         const struct pg_tensor_decl **decls,
                         const struct pg_impl_output_spec *specs, int n_out,
                         const struct pg_tensor *impl_out, const struct pg_tensor *goldens,
                         int n_threads, struct pg_mode_result *m) {
  m->tensors = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *m->tensors);
  if (!m->tensors) {
    pg__classify_mode_error(m, "out of memory comparing outputs");
    return;
  }
  m->n_tensors = n_out;
  m->status = PG_VERDICT_PASS;
  m->fact = PG_RUN_FACT_NONE;
  m->fact_output = -1;
  const char *from = "";
  int mode_precision = pg_mode_precision(&rc->contract, &rc->suite, cs, m->mode, &from);
  m->structure_only = !mode_precision;
  snprintf(m->policy_from, sizeof m->policy_from, "%s", from);
  for (int i = 0; i < n_out; i++) {
    struct pg_tensor_check *t = &m->tensors[i];
    snprintf(t->name, sizeof t->name, "%s", specs[i].name);
    t->dtype = specs[i].dtype;
    t->ndim = specs[i].ndim;
    memcpy(t->shape, specs[i].shape, sizeof t->shape);
    struct pg_cmp_rule rule;
    struct pg_error e;
    char msg[640];
    pg_error_clear(&e);
    if (pg__output_rule(rc, cs, decls[i], specs[i].dtype, &rule, &e) != PG_OK) {
      snprintf(msg, sizeof msg, "case '%s': bad compare rule: %.500s", cs->id, e.message);
      pg__classify_output(m, k, i, PG_RUN_FACT_RUNNER, msg);
      continue;
    }
    pg_cmp_rule_format(&rule, PG_RULE_FORM_NAME, t->rule, sizeof t->rule);
    t->atol = rule.atol;
    t->rtol = rule.rtol;
    t->cmp_rule = rule;
    if (pg_case_compare(&impl_out[i], &goldens[i], &rule, n_threads, &t->cmp, &e) != PG_OK) {
      snprintf(msg, sizeof msg, "cannot compare output '%s': %.400s", t->name, e.message);
      pg__classify_output(m, k, i, PG_RUN_FACT_RUNNER, msg);
      continue;
    }
    t->compared = 1;
    if (t->cmp.structural) {
      t->passed = 0;
      pg__classify_output(m, k, i, PG_RUN_FACT_LAYOUT, NULL);
      continue;
    }
    pg__classify_values(m, k, i, cs->precision, mode_precision);
  }
}
