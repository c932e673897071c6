/* phasegate goldens/ — validation of a golden plan (pg_golden_plan_validate,
 * `phasegate validate`): every problem the plan recorded per step, plus what needs
 * shapes: the kernels' type and shape inference over the graph's default dims, and
 * every declared module output produced with its declared shape. Every finding goes
 * to the caller's callback at file:line:col inside the step, in step order; a step
 * whose dims are not bound by the defaults gets the syntax and name checks only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "golden_private.h"

struct vctx {
  const struct pg_op_graph *g;
  pg_golden_finding_cb cb;
  void *user;
  int errors;
  int failed;   /* the first error code the callback returned */
  int unparsed; /* steps of the current spec that did not parse */
};

static void vdiag(struct vctx *v, int line, int column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void vdiag(struct vctx *v, int line, int column, const char *fmt, ...) {
  char msg[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int rc = v->cb ? v->cb(v->user, v->g->path ? v->g->path : "<contract>", line, column,
                         "golden", msg)
                 : PG_OK;
  if (rc != PG_OK && v->failed == PG_OK) v->failed = rc;
  v->errors++;
}

static void format_shape(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                             (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* A declared tensor's meta under the default dims, floats in float32: PG_OK, or not
 * (a dim unbound, no shape) and the meta is unknown. */
static int decl_meta(const struct pg_op_graph *g, const struct pg_tensor_decl *d,
                     struct pg_tensor_meta *m) {
  memset(m, 0, sizeof *m);
  PG_RETURN_IF_ERROR(pg_decl_shape(d, &g->dims, &m->ndim, m->shape, NULL));
  m->dtype = d->dtype == PG_DTYPE_INVALID || pg_dtype_is_float(d->dtype) ? PG_DTYPE_F32 : d->dtype;
  return PG_OK;
}

/* Reports the step's problem of kind k, if it has one: 1 when it did. */
static int report(struct vctx *v, const struct pg__pstep *ps, enum pg__problem_kind k) {
  const struct pg__problem *pr = &ps->problem[k];
  if (!pr->code) return 0;
  int col0 = ps->src->mark.column > 0 ? ps->src->mark.column : 1;
  vdiag(v, ps->src->mark.line, col0 + pr->offset, "%s", pr->message);
  return 1;
}

/* Attributes under the default dims and the kernel's inference; 1 when the outputs'
 * metas are known. */
static int infer_step(struct vctx *v, const struct pg__pstep *ps, const struct pg_tensor_meta *in,
                      int all_known, struct pg_tensor_meta *out) {
  const struct pg_kernel_def *def = ps->pub.kernel;
  int line = ps->src->mark.line, col0 = ps->src->mark.column > 0 ? ps->src->mark.column : 1;
  struct pg_attr_value vals[PG_KERNEL_MAX_ATTRS];
  memset(vals, 0, sizeof vals);
  struct pg_error e;
  pg_error_clear(&e);
  int offset = 0, unbound = 0;
  int rc = pg__pstep_eval_attrs(ps, &v->g->dims, vals, &offset, &unbound, &e);
  if (rc != PG_OK) {
    if (!unbound) vdiag(v, line, col0 + offset, "%s", e.message);
    return 0;
  }
  if (!all_known || !def->infer) return 0;
  pg_error_clear(&e);
  if (def->infer(in, ps->pub.n_inputs, vals, out, &e) != PG_OK) {
    vdiag(v, line, col0 + ps->op_offset, "%s: %s", def->name, pg__strip_op(e.message, def->name));
    return -1;
  }
  return 1;
}

/* One step: its recorded problems, then inference; adds its outputs to tab (after an
 * error too, so later steps do not cascade). */
static int validate_step(struct vctx *v, const struct pg__pstep *ps, struct pg__gtable *tab) {
  int col0 = ps->src->mark.column > 0 ? ps->src->mark.column : 1;
  if (report(v, ps, PG__P_PARSE)) {
    v->unparsed++; /* its outputs are unknown: do not report them missing too */
    return PG_OK;
  }
  int ok = !report(v, ps, PG__P_OP), all_known = 1;
  struct pg_tensor_meta in[PG_KERNEL_MAX_INPUTS], out[PG_KERNEL_MAX_OUTPUTS];
  memset(out, 0, sizeof out);
  for (int i = 0; i < ps->pub.n_inputs; i++) {
    const struct pg__gtensor *t = pg__gtable_source(tab, &ps->pub.sources[i], ps->pub.inputs[i]);
    if (!t) {
      vdiag(v, ps->src->mark.line, col0 + ps->input_offsets[i], PG__UNKNOWN_TENSOR_FMT,
            ps->pub.inputs[i]);
      ok = 0;
      continue;
    }
    in[i] = t->meta;
    all_known &= t->known;
  }
  ok &= !report(v, ps, PG__P_N_IN);
  ok &= !report(v, ps, PG__P_N_OUT);
  ok &= !report(v, ps, PG__P_SYNTAX);
  int known = 0;
  if (ps->pub.kernel && ok) {
    if (report(v, ps, PG__P_ATTRS)) ok = 0;
    else known = infer_step(v, ps, in, all_known, out);
    if (known < 0) ok = 0;
  }
  for (int o = 0; o < ps->pub.n_outputs; o++) {
    struct pg__gtensor *t;
    PG_RETURN_IF_ERROR(pg__gtable_add(tab, ps->pub.outputs[o], -1, &t, NULL));
    t->known = known > 0 && ok;
    t->meta = out[o];
  }
  return PG_OK;
}

static int validate_spec(struct vctx *v, const struct pg__pspec *sp, struct pg__gtable *tab) {
  v->unparsed = 0;
  for (int s = 0; s < sp->n_steps; s++) PG_RETURN_IF_ERROR(validate_step(v, &sp->steps[s], tab));
  return PG_OK;
}

/* A plugin golden names a C symbol: it must be an identifier. */
static void check_plugin_name(struct vctx *v, const struct pg_golden_spec *g) {
  const char *p = g->plugin ? g->plugin : "";
  int ok = pg__is_name_start((unsigned char)p[0]);
  for (const char *q = p; ok && *q; q++) ok = (*q >= '0' && *q <= '9') || pg__is_name_start(*q);
  if (!ok)
    vdiag(v, g->mark.line, g->mark.column,
          "golden plugin '%s' is not a C identifier (the name of the exported function)", p);
}

/* After module m's steps: each declared output produced, with its declared shape. */
static void check_outputs(struct vctx *v, const struct pg_module *m, const struct pg__gtable *tab,
                          int errors_before) {
  for (int o = 0; o < m->n_outputs; o++) {
    const struct pg_tensor_decl *d = &m->outputs[o];
    const struct pg__gtensor *t = pg__gtable_find(tab, -1, d->name);
    int line = d->mark.line ? d->mark.line : m->golden.mark.line;
    int col = d->mark.line ? d->mark.column : m->golden.mark.column;
    if (!t) {
      if (!v->unparsed)
        vdiag(v, line, col, "module %d (%s): no golden step produces declared output '%s'",
              m->id, m->name ? m->name : "?", d->name);
      continue;
    }
    struct pg_tensor_meta dm;
    if (!t->known || v->errors != errors_before || decl_meta(v->g, d, &dm) != PG_OK) continue;
    int same = dm.ndim == t->meta.ndim;
    for (int a = 0; same && a < dm.ndim; a++) same = dm.shape[a] == t->meta.shape[a];
    if (same) continue;
    char got[160], want[160];
    format_shape(t->meta.shape, t->meta.ndim, got, sizeof got);
    format_shape(dm.shape, dm.ndim, want, sizeof want);
    vdiag(v, line, col,
          "module %d (%s): golden steps compute '%s' with shape %s, the contract declares %s",
          m->id, m->name ? m->name : "?", d->name, got, want);
  }
}

/* The module's outputs as later modules see them: declared shape and dtype. */
static int promote_outputs(struct vctx *v, const struct pg_module *m, struct pg__gtable *tab) {
  pg__gtable_promote(tab, m);
  for (int o = 0; o < m->n_outputs; o++) {
    const struct pg_tensor_decl *d = &m->outputs[o];
    struct pg__gtensor *t = pg__gtable_find(tab, m->id, d->name);
    if (!t) {
      PG_RETURN_IF_ERROR(pg__gtable_add(tab, d->name, m->id, &t, NULL));
      t->known = 0;
    }
    struct pg_tensor_meta dm;
    if (decl_meta(v->g, d, &dm) == PG_OK) {
      t->meta = dm;
      t->known = 1;
    } else if (t->known && d->dtype != PG_DTYPE_INVALID && !pg_dtype_is_float(d->dtype)) {
      t->meta.dtype = d->dtype; /* keep the inferred shape, but the dtype is declared */
    }
  }
  return PG_OK;
}

/* The op-level golden: steps over the primary inputs (tab's module-0 entries),
 * producing the final outputs. */
static int validate_op_level(struct vctx *v, const struct pg_golden_plan *p,
                             const struct pg__gtable *tab) {
  const struct pg_op_graph *g = v->g;
  struct pg__gtable optab;
  pg__gtable_init(&optab);
  int rc = PG_OK;
  for (int i = 0; i < tab->count && rc == PG_OK; i++) {
    if (tab->items[i]->module != 0) continue;
    struct pg__gtensor *t;
    rc = pg__gtable_add(&optab, tab->items[i]->name, 0, &t, NULL);
    if (rc == PG_OK) {
      t->meta = tab->items[i]->meta;
      t->known = tab->items[i]->known;
    }
  }
  if (rc == PG_OK) rc = validate_spec(v, &p->op, &optab);
  /* the final outputs: final_outputs, or module N's outputs when there are none */
  const struct pg_tensor_decl *finals[PG_MAX_BOUNDARY_OUTPUTS];
  int nf = g->n_modules > 0
               ? pg_graph_boundary(g, g->n_modules, finals, PG_MAX_BOUNDARY_OUTPUTS, NULL)
               : 0;
  for (int f = 0; f < nf && rc == PG_OK; f++)
    if (!pg__gtable_find(&optab, -1, finals[f]->name) && !v->unparsed)
      vdiag(v, g->op_golden.mark.line, g->op_golden.mark.column,
            "op-level golden: no step produces final output '%s'", finals[f]->name);
  pg__gtable_reset(&optab);
  return rc;
}

int pg_golden_plan_validate(const struct pg_golden_plan *p, pg_golden_finding_cb cb,
                            void *user) {
  if (!p) return PG_EINVAL;
  const struct pg_op_graph *g = p->graph;
  struct vctx v = {g, cb, user, 0, PG_OK, 0};
  struct pg__gtable tab;
  pg__gtable_init(&tab);
  int rc = PG_OK;
  for (int i = 0; i < g->n_primary && rc == PG_OK; i++) {
    struct pg__gtensor *t;
    rc = pg__gtable_add(&tab, g->primary_inputs[i].name, 0, &t, NULL);
    if (rc == PG_OK) t->known = decl_meta(g, &g->primary_inputs[i], &t->meta) == PG_OK;
  }
  for (int mi = 0; mi < g->n_modules && rc == PG_OK; mi++) {
    const struct pg_module *m = &g->modules[mi];
    if (m->golden.kind == PG_GOLDEN_PLUGIN) check_plugin_name(&v, &m->golden);
    if (m->golden.kind == PG_GOLDEN_STEPS) {
      int before = v.errors;
      rc = validate_spec(&v, &p->mods[mi], &tab);
      if (rc == PG_OK) check_outputs(&v, m, &tab, before);
    }
    if (rc == PG_OK) rc = promote_outputs(&v, m, &tab);
  }
  if (rc == PG_OK && g->op_golden.kind == PG_GOLDEN_PLUGIN) check_plugin_name(&v, &g->op_golden);
  if (rc == PG_OK && g->op_golden.kind == PG_GOLDEN_STEPS) rc = validate_op_level(&v, p, &tab);
  pg__gtable_reset(&tab);
  if (rc != PG_OK) return rc;
  if (v.failed != PG_OK) return v.failed;
  return v.errors;
}

int pg__goldens_validate_ks(const struct pg_op_graph *g, const struct pg__kernel_source *ks,
                            pg_golden_finding_cb cb, void *user) {
  struct pg_golden_plan *p = NULL;
  PG_RETURN_IF_ERROR(pg__golden_plan_build_ks(g, ks, &p, NULL));
  int rc = pg_golden_plan_validate(p, cb, user);
  pg_golden_plan_free(p);
  return rc;
}

int pg_goldens_validate(const struct pg_op_graph *g, pg_golden_finding_cb cb, void *user) {
  return pg__goldens_validate_ks(g, NULL, cb, user);
}
