/* phasegate runner — inspection probes (docs/design.md §8, docs/diagnosis.md "Inspection
 * probes", the seed's step B.5): an iterative op (a loop over chunks, a scan) declares
 * per-iteration intermediates in module k's `inspect:`; the impl returns each as an extra
 * output `inspection_<name>` after the boundary outputs, the reference comes from module
 * k's golden step of that name (or a Python golden's `..._inspect`), and the two are
 * compared slice by slice along the leading (iteration) axis, so a drifting accumulation
 * says in which iteration it started.
 *
 * The pypto workflow's protocol runs beside it (docs/pypto.md "Inspection probes"): with
 * --inspect NAME and a `module_<k>_inspect` in phase k's golden file, the reference
 * comes first from that companion (its shape is the probe's), the python: impl gets a
 * buffer of that shape as the keyword `inspection_<NAME>`, and iterations run along
 * axis 2. Both end in the same per-iteration comparison.
 *
 * Probe values are golden values: only metrics leave this file (the report and the
 * console never see a probe's reference). Whether a probe failure gates nothing here: a
 * probe is diagnosis, the boundary outputs decide the verdict (run/classify.c), and a
 * probe the impl does not return is the adapter's structural fact like any output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "phasegate/goldens.h"
#include "run/run_internal.h"

int pg__phase_probes(const struct pg_contract *c, int k, const struct pg_case *cs,
                     const struct pg_bindings *dims, int n_out, struct pg__probes *p,
                     struct pg_impl_output_spec *specs, struct pg_error *err) {
  p->n = 0;
  p->pypto = 0;
  p->iter_axis = 0;
  const struct pg_module *m = pg_contract_module(c, k);
  if (!m || m->n_probes == 0) return 0;
  if (n_out + m->n_probes > PG_IMPL_MAX_OUTPUTS)
    return pg_error_set(err, PG_ELIMIT, "module %d: %d outputs and %d inspection probes are "
                        "more than %d", k, n_out, m->n_probes, PG_IMPL_MAX_OUTPUTS);
  for (int i = 0; i < m->n_probes; i++) {
    const struct pg_tensor_decl *d = &m->probes[i];
    p->decls[i] = d;
    snprintf(p->names[i], sizeof p->names[i], "inspection_%s", d->name);
    specs[i].name = p->names[i];
    specs[i].dtype = pg_case_dtype(cs, d);
    int rc = pg_decl_shape(d, dims, &specs[i].ndim, specs[i].shape, err);
    if (rc != PG_OK) {
      pg_error_prefix(err, "inspection probe '%s': ", d->name);
      return rc;
    }
    if (specs[i].ndim < 1)
      return pg_error_set(err, PG_EVALIDATE, "inspection probe '%s' has no leading "
                          "(iteration) axis", d->name);
  }
  p->n = m->n_probes;
  return p->n;
}

int pg__golden_probes(struct pg__run *rc, int k, const struct pg_case *cs,
                      const struct pg_case_data *d, const struct pg__probes *p, int n_threads,
                      struct pg_tensor *refs, struct pg_error *err) {
  const struct pg_contract *c = &rc->contract;
  if (pg_contract_phase_golden(c, k) == PG_PHASE_GOLDEN_PYTHON) {
    if (!rc->py) return pg_error_set(err, PG_EINVAL, "no Python worker for the probes");
    return pg_py_golden_inspect(rc->py, c, k, cs, d, p->decls, p->n, refs, err);
  }
  struct pg_golden_env env;
  struct pg_golden_opts g = {rc->plan, rc->o->reference_bits, rc->golden_lib, n_threads,
                             NULL, PG_PHASE_GOLDEN_NONE};
  pg__golden_env_init(&env, &g, cs, d);
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&outs[i]);
  int n = 0;
  /* the boundary outputs come again (the cached ones are what the verdict used) */
  int r = pg_golden_cumulative_probes(&env, k, d->inputs, c->n_primary, p->decls, p->n, outs,
                                      &n, refs, err);
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&outs[i]);
  return r;
}

int pg__pypto_probe(struct pg__run *rc, int k, const struct pg_case *cs,
                    const struct pg_case_data *d, struct pg__probes *p,
                    struct pg_impl_output_spec *specs, struct pg_tensor *refs,
                    struct pg_error *err) {
  const char *name = rc->pypto_probe;
  if (!rc->py) return pg_error_set(err, PG_EINVAL, "no Python worker for the probes");
  PG_RETURN_IF_ERROR(pg_py_golden_inspect_pypto(rc->py, &rc->contract, k, cs, d, name, &refs[0],
                                                err));
  const struct pg_tensor *r = &refs[0];
  if (r->dl.ndim < 3) {
    char got[160];
    pg_shape_format(r->dl.ndim, r->shape, got, sizeof got);
    const struct pg_py_golden *g = pg_contract_py_golden(&rc->contract, k);
    return pg_error_set(err, PG_EVALIDATE, "Python golden %.1500s::module_%d_inspect: probe "
                        "'%s' has shape %s: the workflow's probes are [B, H, NT, ...], the "
                        "iterations on axis 2, so a probe needs at least 3 axes",
                        g && g->file ? g->file : "?", k, name, got);
  }
  memset(&p->pypto_decl, 0, sizeof p->pypto_decl);
  snprintf(p->pypto_name, sizeof p->pypto_name, "%s", name);
  p->pypto_decl.name = p->pypto_name;
  p->pypto_decl.ndim = r->dl.ndim;
  p->pypto_decl.dtype = r->dtype;
  p->decls[0] = &p->pypto_decl;
  snprintf(p->names[0], sizeof p->names[0], "inspection_%s", name);
  specs[0].name = p->names[0];
  specs[0].dtype = r->dtype;
  specs[0].ndim = r->dl.ndim;
  memcpy(specs[0].shape, r->shape, sizeof(int64_t) * (size_t)r->dl.ndim);
  p->n = 1;
  p->pypto = 1;
  p->iter_axis = 2;
  return 1;
}

/* Iteration `it` of t along axis a > 0, gathered into a new buffer (*buf, the caller
 * frees it) as a tensor of the remaining axes; NULL data when out of memory. */
static DLTensor gather(const struct pg_tensor *t, int a, int64_t it, int64_t shape1[PG_MAX_NDIM],
                       void **buf) {
  DLTensor dl = pg_tensor_dl(t);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++) outer *= t->shape[i];
  for (int i = a + 1; i < t->dl.ndim; i++) inner *= t->shape[i];
  size_t esz = pg_dtype_size(t->dtype), row = (size_t)inner * esz;
  size_t bytes = (size_t)outer * row;
  char *out = malloc(bytes ? bytes : 1);
  *buf = out;
  for (int64_t o = 0; out && o < outer; o++)
    memcpy(out + (size_t)o * row,
           (const char *)dl.data + (size_t)((o * t->shape[a] + it) * inner) * esz, row);
  int n = 0;
  for (int i = 0; i < t->dl.ndim; i++)
    if (i != a) shape1[n++] = t->shape[i];
  dl.data = out;
  dl.ndim = n;
  dl.shape = shape1;
  dl.strides = NULL;
  dl.byte_offset = 0;
  return dl;
}

/* Iteration `it` of t (its leading axis) as a tensor of the remaining axes. */
static DLTensor slice(const struct pg_tensor *t, int64_t it, int64_t shape1[PG_MAX_NDIM]) {
  DLTensor dl = pg_tensor_dl(t);
  int64_t per = t->shape[0] > 0 ? t->numel / t->shape[0] : 0;
  size_t esz = pg_dtype_size(t->dtype);
  dl.data = (char *)dl.data + (size_t)(it * per) * esz;
  if (t->dl.ndim == 1) { /* a scalar per iteration: one element */
    shape1[0] = 1;
    dl.ndim = 1;
  } else {
    for (int a = 1; a < t->dl.ndim; a++) shape1[a - 1] = t->shape[a];
    dl.ndim = t->dl.ndim - 1;
  }
  dl.shape = shape1;
  dl.strides = NULL;
  return dl;
}

static void compare_one(const struct pg__run *rc, const struct pg_case *cs, int axis,
                        const struct pg_tensor_decl *decl, const struct pg_impl_output_spec *spec,
                        const struct pg_tensor *impl, const struct pg_tensor *ref,
                        struct pg_probe_check *pc) {
  snprintf(pc->name, sizeof pc->name, "%s", decl->name);
  pc->dtype = spec->dtype;
  pc->ndim = spec->ndim;
  memcpy(pc->shape, spec->shape, sizeof pc->shape);
  pc->drift_onset_iter = -1;
  pc->iter_axis = axis;
  struct pg_cmp_rule rule;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg__output_rule(rc, cs, decl, spec->dtype, &rule, &e) != PG_OK) {
    snprintf(pc->problem, sizeof pc->problem, "bad compare rule: %.200s", e.message);
    return;
  }
  pg_cmp_rule_format(&rule, PG_RULE_FORM_NAME, pc->rule, sizeof pc->rule);
  pc->atol = rule.atol;
  pc->rtol = rule.rtol;
  /* the whole probe first: a shape or dtype the impl got wrong is said once */
  struct pg_cmp_result *cr = malloc(sizeof *cr);
  if (!cr) {
    snprintf(pc->problem, sizeof pc->problem, "out of memory");
    return;
  }
  DLTensor a = pg_tensor_dl(impl), b = pg_tensor_dl(ref);
  if (pg_tensor_compare(&a, &b, &rule, 1, cr, &e) != PG_OK) {
    snprintf(pc->problem, sizeof pc->problem, "cannot compare: %.200s", e.message);
  } else if (cr->structural) {
    snprintf(pc->problem, sizeof pc->problem, "%.250s", cr->structural_reason);
  } else if (ref->dl.ndim <= axis || ref->shape[axis] < 1) {
    snprintf(pc->problem, sizeof pc->problem, "no iterations (axis %d empty)", axis);
  } else if (!(pc->iters = calloc((size_t)ref->shape[axis], sizeof *pc->iters))) {
    snprintf(pc->problem, sizeof pc->problem, "out of memory");
  } else {
    pc->n_iters = (int)ref->shape[axis];
    for (int it = 0; it < pc->n_iters; it++) {
      int64_t sa[PG_MAX_NDIM], sb[PG_MAX_NDIM];
      void *ba = NULL, *bb = NULL;
      DLTensor ia = axis ? gather(impl, axis, it, sa, &ba) : slice(impl, it, sa);
      DLTensor ib = axis ? gather(ref, axis, it, sb, &bb) : slice(ref, it, sb);
      struct pg_probe_iter *pi = &pc->iters[it];
      int crc = axis && (!ba || !bb) ? pg_error_set(&e, PG_ENOMEM, "out of memory")
                                     : pg_tensor_compare(&ia, &ib, &rule, 1, cr, &e);
      free(ba);
      free(bb);
      if (crc != PG_OK) {
        snprintf(pc->problem, sizeof pc->problem, "iteration %d: %.200s", it, e.message);
        free(pc->iters);
        pc->iters = NULL;
        pc->n_iters = 0;
        break;
      }
      pi->n = cr->n;
      pi->mismatches = cr->mismatches;
      pi->max_abs_diff = cr->max_abs_diff;
      pi->max_rel_diff = cr->max_rel_diff;
      pi->passed = cr->passed;
      if (!pi->passed && pc->drift_onset_iter < 0) pc->drift_onset_iter = it;
    }
    pc->compared = pc->n_iters > 0;
  }
  free(cr);
}

void pg__compare_probes(const struct pg__run *rc, const struct pg_case *cs,
                        const struct pg__probes *p, const struct pg_impl_output_spec *specs,
                        const struct pg_tensor *impl, const struct pg_tensor *refs,
                        struct pg_mode_result *m) {
  if (p->n == 0) return;
  m->probes = calloc((size_t)p->n, sizeof *m->probes);
  if (!m->probes) return;
  m->n_probes = p->n;
  for (int i = 0; i < p->n; i++)
    compare_one(rc, cs, p->iter_axis, p->decls[i], &specs[i], &impl[i], &refs[i],
                &m->probes[i]);
}
