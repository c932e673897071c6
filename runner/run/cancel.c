/* phasegate runner — cancellation_stress (docs/design.md §4): for a case that names a target
 * tensor, reshape the generated primary inputs so that the golden step computing it
 * cancels. See the section comment below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/inputs.h"
#include "tensors/tensors.h"

/* ------------------------------------------------------------------ cancellation_stress
 *
 * The case names a target tensor (docs/design.md §4). We find the built-in golden step that
 * computes it, `t = op(args, key=value)` (or the infix `t = x - y` / `t = x + y`), and
 * read cancellation for that kernel as "the result is much smaller than its terms":
 *
 *   sub, add          r = |a -/+ b| / max(|a|, |b|)   (the operands within gap of each
 *                                                      other: `expression: "a - b"`)
 *   matmul            r = |sum_i a_i b_i| / sum_i |a_i b_i|
 *   sum, mean, cumsum r = |sum_i x_i| / sum_i |x_i|
 *
 * The denominator is the same kernel on |operands| (|alpha|, |beta| for matmul; the
 * elementwise maximum for sub/add), so broadcasting, transposes and axes follow the
 * step. The generator maximises the share of target elements with r <= relative_gap:
 *
 * - construct (exact, when the operands are primary inputs):
 *   sub/add of two inputs: y = x (1 + 0.9 g u), or -x (1 + 0.9 g u) for add, u uniform
 *     in (-1, 1) from the case's search stream, so r <= 0.9 g elementwise;
 *   matmul of two inputs: pair contraction index k with k + K/2, a[k + K/2] = a[k] and
 *     b[k + K/2] = -b[k] (1 + g u) (b's last slice zeroed when K is odd), so every term
 *     pair cancels up to g and r <= g / 2 for every element of every row and column,
 *     while the partial sums over the first half keep their plain magnitude;
 *   sum/mean of an input: centre each reduced slice and shift it by c = g u mean|x| / 2,
 *     so r ~ g |u| / 2 per slice.
 * - search (operands from earlier modules, or no construction applies): restart 0 is
 *   the unchanged inputs; restart r draws per floating primary input a scale 2^k
 *   (k in -4..4), an offset from {0, +-1, +-4, +-16} and a sign pattern (none, random,
 *   or alternating along one axis), applies x' = sign (offset + scale x), evaluates the
 *   operands with the cumulative goldens and scores the share (ties: lower median r,
 *   then the earlier restart). A search that finds no cancelling element is an error.
 *
 * Everything is scored single-threaded in double precision, so the chosen inputs are
 * the same for any thread count. Operands computed by earlier steps inside the target's
 * own module are not visible outside that module's golden: the module's earlier steps
 * are replayed (each must be a built-in kernel call that can run, else PG_ENOTSUP).
 * How the target and its operands are computed is read from the golden plan, never
 * from the step text. */

enum cx_kind { CX_SUB = 0, CX_ADD, CX_MATMUL, CX_SUM, CX_MEAN, CX_CUMSUM };
static const char *const cx_kernel_names[] = {"sub", "add", "matmul", "sum", "mean", "cumsum"};

#define CX_MAX_ARGS PG_KERNEL_MAX_INPUTS
#define CX_MAX_LOCALS 64
#define PG_STRESS_RESTARTS 32

/* How the target is computed: step `step` of module `module` in the golden plan. */
struct cx_plan {
  const struct pg_golden_plan *gp;
  const struct pg_module *mod;
  int module, step;
  const struct pg_golden_plan_step *st;
  enum cx_kind kind;
  int n_args;
  int primary[CX_MAX_ARGS];      /* the primary input an operand is, or -1 */
  int has_local;                 /* an operand is a step-local: replay mod's earlier steps */
};

/* Why step st cannot be replayed or stressed, into why. */
static void step_why(const struct pg_golden_plan_step *st, char *why, size_t why_n) {
  if (!st->parsed)
    snprintf(why, why_n, "cannot read \"%s\": %s", st->text, st->problem);
  else if (!st->kernel)
    snprintf(why, why_n, "\"%s\" calls '%s', which is no built-in kernel", st->text, st->op);
  else
    snprintf(why, why_n, "\"%s\": %s", st->text, st->problem ? st->problem : "");
}

/* The target is no step's output: say what it is instead. */
static int cx_not_computed(const struct pg_op_graph *c, const char *id, const char *target,
                           struct pg_error *err) {
  for (int i = 0; i < c->n_primary; i++)
    if (c->primary_inputs[i].name && strcmp(c->primary_inputs[i].name, target) == 0)
      return pg_error_set(err, PG_EVALIDATE, "case %s: cancellation_stress: target '%s' is a "
                          "primary input; name a tensor that a module's golden computes", id,
                          target);
  for (int m = 0; m < c->n_modules; m++)
    for (int i = 0; i < c->modules[m].n_outputs; i++)
      if (c->modules[m].outputs[i].name && strcmp(c->modules[m].outputs[i].name, target) == 0) {
        const struct pg_golden_spec *g = &c->modules[m].golden;
        if (g->kind == PG_GOLDEN_PLUGIN)
          return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' is computed "
                              "by golden plugin '%s' (module %d); cancellation_stress needs "
                              "built-in golden steps to see how it is computed", id, target,
                              g->plugin ? g->plugin : "?", c->modules[m].id);
        return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: no golden step of "
                            "module %d computes '%s'", id, c->modules[m].id, target);
      }
  return pg_error_set(err, PG_EVALIDATE, "case %s: cancellation_stress: no module's golden "
                      "computes target '%s'", id, target);
}

/* The target step's operands: where they come from, and whether the module's earlier
 * steps must be replayed (each then a built-in kernel call that can run). */
static int cx_operands(struct cx_plan *p, const char *id, const char *target,
                       struct pg_error *err) {
  const struct pg_golden_plan_step *st = p->st;
  p->n_args = st->n_inputs;
  for (int i = 0; i < st->n_inputs; i++) {
    const struct pg_golden_source *src = &st->sources[i];
    if (src->kind == PG_GOLDEN_SRC_NONE)
      return pg_error_set(err, PG_EVALIDATE, "case %s: cancellation_stress: operand '%s' of '%s' "
                          "is neither computed earlier in module %d, nor its input, nor a primary "
                          "input", id, st->inputs[i], target, p->module);
    p->primary[i] = src->kind == PG_GOLDEN_SRC_PRIMARY ? src->index : -1;
    p->has_local |= src->kind == PG_GOLDEN_SRC_STEP;
  }
  if (p->has_local && p->step > CX_MAX_LOCALS / PG_KERNEL_MAX_OUTPUTS)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' is step %d of module "
                        "%d; at most %d earlier steps are replayed", id, target, p->step + 1,
                        p->module, CX_MAX_LOCALS / PG_KERNEL_MAX_OUTPUTS);
  for (int s = 0; p->has_local && s < p->step; s++) {
    const struct pg_golden_plan_step *e = pg_golden_plan_step(p->gp, p->module, s);
    if (e->kernel && !e->problem) continue;
    char why[600];
    step_why(e, why, sizeof why);
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: an operand of '%s' is "
                        "computed inside module %d, whose earlier step cannot be replayed: %s",
                        id, target, p->module, why);
  }
  return PG_OK;
}

/* Finds how the target is computed. PG_OK fills p; otherwise an error naming why. */
static int cx_plan_make(const struct pg_golden_plan *gp, const struct pg_case *cs,
                        struct cx_plan *p, struct pg_error *err) {
  const struct pg_cancellation_stress *cx = &cs->cancellation;
  const char *target = cx->target ? cx->target : "";
  const char *id = cs->id ? cs->id : "?";
  const struct pg_op_graph *c = pg_golden_plan_graph(gp);
  memset(p, 0, sizeof *p);
  p->gp = gp;
  if (!pg_golden_plan_find(gp, target, &p->module, &p->step))
    return cx_not_computed(c, id, target, err);
  p->mod = pg_graph_module(c, p->module);
  const struct pg_golden_plan_step *st = p->st = pg_golden_plan_step(gp, p->module, p->step);
  if (st->n_outputs != 1)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' is one of "
                        "%d outputs of a golden step; only single-output steps (sub, add, "
                        "matmul, sum, mean, cumsum) are supported", id, target, st->n_outputs);
  char why[600];
  if (!st->parsed) {
    step_why(st, why, sizeof why);
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d): "
                        "%s", id, target, p->module, why);
  }
  int kind = -1;
  for (int k = 0; k < (int)(sizeof cx_kernel_names / sizeof *cx_kernel_names); k++)
    if (strcmp(st->op, cx_kernel_names[k]) == 0) kind = k;
  if (kind < 0)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d) "
                        "is computed by '%s'; cancellation_stress supports sub, add, matmul, sum, "
                        "mean and cumsum (the kernels whose result is a signed sum of terms)", id,
                        target, p->module, st->op);
  p->kind = (enum cx_kind)kind;
  PG_RETURN_IF_ERROR(cx_operands(p, id, target, err));
  if (st->kernel && !st->problem) return PG_OK;
  step_why(st, why, sizeof why);
  return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d): "
                      "%s", id, target, p->module, why);
}

/* A plan for the call when the caller has none: *own is set to it (free it). */
static int plan_for(const struct pg_contract *c, const struct pg_golden_plan **gp,
                    struct pg_golden_plan **own, struct pg_error *err) {
  *own = NULL;
  if (*gp) return PG_OK;
  PG_RETURN_IF_ERROR(pg_golden_plan_build(&c->graph, own, err));
  *gp = *own;
  return PG_OK;
}

int pg_cancellation_check(const struct pg_contract *c, const struct pg_case *cs,
                          struct pg_error *err) {
  if (!cs || !cs->cancellation.present) return PG_OK;
  const struct pg_golden_plan *gp = NULL;
  struct pg_golden_plan *own;
  PG_RETURN_IF_ERROR(plan_for(c, &gp, &own, err));
  struct cx_plan p;
  int rc = cx_plan_make(gp, cs, &p, err);
  pg_golden_plan_free(own);
  return rc;
}

int pg_suite_check_cancellation(const struct pg_contract *c, const struct pg_suite *s,
                                struct pg_diags *diags) {
  const struct pg_golden_plan *gp = NULL;
  struct pg_golden_plan *own = NULL;
  int n = 0;
  for (int i = 0; i < s->n_cases && n >= 0; i++) {
    /* a target the suite loader refused has its own finding already */
    if (!s->cases[i].cancellation.present || !s->cases[i].cancellation.target) continue;
    struct pg_error e;
    pg_error_clear(&e);
    if (!gp && plan_for(c, &gp, &own, &e) != PG_OK) n = PG_ENOMEM;
    struct cx_plan p;
    if (n < 0 || cx_plan_make(gp, &s->cases[i], &p, &e) == PG_OK) continue;
    if (pg_diags_add(diags, PG_SEV_ERROR, s->path ? s->path : "", s->cases[i].mark.line,
                     s->cases[i].mark.column, "cancellation", "%s", e.message) != PG_OK)
      n = PG_ENOMEM;
    else
      n++;
  }
  pg_golden_plan_free(own);
  return n;
}

/* The target step's attributes for kernel def (its own, or the denominator's: the
 * same attributes for the same kernel, defaults for another), under dims; with
 * `absval`, float attributes made non-negative. */
static int cx_attrs(const struct cx_plan *p, int step, const struct pg_kernel_def *def,
                    const struct pg_bindings *dims, int absval,
                    struct pg_attr_value vals[PG_KERNEL_MAX_ATTRS], int *n, struct pg_error *err) {
  const struct pg_golden_plan_step *st = pg_golden_plan_step(p->gp, p->module, step);
  if (def == st->kernel)
    PG_RETURN_IF_ERROR(pg_golden_plan_step_attrs(p->gp, p->module, step, dims, vals, n, err));
  else
    *n = pg_kernel_attrs_default(def, vals);
  if (absval)
    for (int d = 0; d < *n; d++)
      if (vals[d].type == PG_ATTR_FLOAT) vals[d].f = fabs(vals[d].f);
  return PG_OK;
}

static const struct pg_attr_value *attr_named(const struct pg_kernel_def *def,
                                              const struct pg_attr_value *vals, const char *name) {
  int i = pg_kernel_attr_index(def, name);
  return i >= 0 && i < PG_KERNEL_MAX_ATTRS ? &vals[i] : NULL;
}

/* Copies src into out as float64 (out owned). */
static int widen(const struct pg_tensor *src, struct pg_tensor *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_tensor_alloc(out, PG_DTYPE_F64, src->dl.ndim, src->shape, err));
  for (int64_t e = 0; e < src->numel; e++)
    ((double *)out->dl.data)[e] = pg_load_f64(src->dl.data, src->dtype, (size_t)e);
  return PG_OK;
}

/* Evaluates a primary input or an earlier module's output `name` into `out` (float64). */
static int eval_operand(const struct pg_golden_env *env, const struct pg_golden_source *src,
                        const char *name, const struct pg_tensor *inputs, int n_primary,
                        struct pg_tensor *out, struct pg_error *err) {
  if (src->kind == PG_GOLDEN_SRC_PRIMARY) return widen(&inputs[src->index], out, err);
  const struct pg_op_graph *c = pg_golden_plan_graph(env->plan);
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&outs[i]);
  int n_out = 0, found = -1;
  int rc = pg_golden_cumulative(env, src->index, inputs, n_primary, outs, &n_out, err);
  const struct pg_module *mod = pg_graph_module(c, src->index);
  /* module k's outputs in declared order (phase N: final_outputs, matched by name) */
  for (int i = 0; rc == PG_OK && mod && i < n_out; i++) {
    const char *nm = src->index == c->n_modules && i < c->n_final ? c->final_outputs[i].name
                     : i < mod->n_outputs                         ? mod->outputs[i].name
                                                                  : NULL;
    if (nm && strcmp(nm, name) == 0) found = i;
  }
  if (rc == PG_OK && found < 0)
    rc = pg_error_set(err, PG_ENOTSUP, "module %d's boundary outputs do not include '%s'",
                      src->index, name);
  if (rc == PG_OK) rc = widen(&outs[found], out, err);
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&outs[i]);
  return rc;
}

/* Named float64 tensors seen while replaying a module's steps: step-locals, and the
 * inputs / earlier outputs they used (cached so each is evaluated once). */
struct cx_table {
  int n;
  char names[CX_MAX_LOCALS * 2][PG_NAME_MAX];
  int local[CX_MAX_LOCALS * 2];
  struct pg_tensor t[CX_MAX_LOCALS * 2];
};

static void table_reset(struct cx_table *tab) {
  for (int i = 0; i < tab->n; i++) pg_tensor_reset(&tab->t[i]);
  tab->n = 0;
}

/* The f64 value of argument `name` coming from `src`, as module p->module sees it
 * (a view into tab): the latest step-local of that name, or the input / earlier
 * module output, evaluated once. */
static int table_get(const struct pg_golden_env *env, const struct cx_plan *p,
                     struct cx_table *tab, const char *name, const struct pg_golden_source *src,
                     const struct pg_tensor *inputs, int n_primary,
                     const struct pg_tensor **out, struct pg_error *err) {
  int local = src->kind == PG_GOLDEN_SRC_STEP;
  for (int i = tab->n - 1; i >= 0; i--)
    if (tab->local[i] == local && strcmp(tab->names[i], name) == 0) {
      *out = &tab->t[i];
      return PG_OK;
    }
  if (local || src->kind == PG_GOLDEN_SRC_NONE)
    return pg_error_set(err, PG_ENOTFOUND, "module %d: no tensor '%s'", p->module, name);
  if (tab->n == CX_MAX_LOCALS * 2)
    return pg_error_set(err, PG_ELIMIT, "module %d: too many tensors to replay", p->module);
  struct pg_tensor *t = &tab->t[tab->n];
  pg_tensor_init(t);
  PG_RETURN_IF_ERROR(eval_operand(env, src, name, inputs, n_primary, t, err));
  snprintf(tab->names[tab->n], PG_NAME_MAX, "%s", name);
  tab->local[tab->n] = 0;
  *out = &tab->t[tab->n++];
  return PG_OK;
}

/* The f64 operands of step s of the target's module, from tab. */
static int step_operands(const struct pg_golden_env *env, const struct cx_plan *p, int s,
                         struct cx_table *tab, const struct pg_tensor *inputs, int n_primary,
                         const struct pg_tensor **in, struct pg_error *err) {
  const struct pg_golden_plan_step *st = pg_golden_plan_step(p->gp, p->module, s);
  for (int i = 0; i < st->n_inputs; i++)
    PG_RETURN_IF_ERROR(table_get(env, p, tab, st->inputs[i], &st->sources[i], inputs, n_primary,
                                 &in[i], err));
  return PG_OK;
}

/* Replays steps 0 .. p->step - 1 of the target's module in float64 into tab. */
static int replay_steps(const struct pg_golden_env *env, const struct cx_plan *p,
                        struct cx_table *tab, const struct pg_tensor *inputs, int n_primary,
                        struct pg_error *err) {
  for (int s = 0; s < p->step; s++) {
    const struct pg_golden_plan_step *st = pg_golden_plan_step(p->gp, p->module, s);
    const struct pg_kernel_def *def = st->kernel;
    if (!def || st->problem) return pg_error_set(err, PG_ENOTSUP, "%s", st->problem);
    const struct pg_tensor *in[CX_MAX_ARGS];
    PG_RETURN_IF_ERROR(step_operands(env, p, s, tab, inputs, n_primary, in, err));
    struct pg_attr_value av[PG_KERNEL_MAX_ATTRS];
    int na;
    PG_RETURN_IF_ERROR(cx_attrs(p, s, def, env->dims, 0, av, &na, err));
    if (tab->n + st->n_outputs > CX_MAX_LOCALS * 2)
      return pg_error_set(err, PG_ELIMIT, "module %d: too many tensors to replay", p->module);
    struct pg_tensor *outs = &tab->t[tab->n];
    for (int i = 0; i < st->n_outputs; i++) pg_tensor_init(&outs[i]);
    struct pg_error sub;
    pg_error_clear(&sub);
    int rc = pg_kernel_invoke(def, in, st->n_inputs, av, na, 1, outs, &sub);
    if (rc != PG_OK)
      return pg_error_set(err, rc, "replaying \"%s\" (module %d): %s", st->text, p->module,
                          sub.message);
    for (int i = 0; i < st->n_outputs; i++) {
      tab->local[tab->n] = 1;
      snprintf(tab->names[tab->n++], PG_NAME_MAX, "%s", st->outputs[i]);
    }
  }
  return PG_OK;
}

struct cx_eval {
  int64_t n, hits, zeros;
  double median;
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* r per element from the target t and its magnitude d: share within gap, median. */
static int cx_ratios(const struct pg_tensor *t, const struct pg_tensor *d, double gap,
                     struct cx_eval *ev, struct pg_error *err) {
  if (t->numel != d->numel)
    return pg_error_set(err, PG_EINTERNAL, "result and magnitude shapes differ");
  double *r = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *r);
  if (!r) return pg_error_set(err, PG_ENOMEM, "out of memory");
  memset(ev, 0, sizeof *ev);
  ev->n = t->numel;
  const double *tv = t->dl.data, *dd = d->dl.data;
  for (int64_t e = 0; e < t->numel; e++) {
    double x = fabs(tv[e]), m = dd[e];
    r[e] = isfinite(x) && isfinite(m) && m > 0 ? x / m : INFINITY;
    ev->hits += r[e] <= gap;
    ev->zeros += r[e] == 0;
  }
  qsort(r, (size_t)t->numel, sizeof *r, cmp_double);
  ev->median = t->numel ? r[t->numel / 2] : INFINITY;
  free(r);
  return PG_OK;
}

/* Scores the target on given inputs: r per element, share within gap, median. */
static int cx_score(const struct cx_plan *p, const struct pg_golden_env *env,
                    const struct pg_tensor *inputs, int n_primary, double gap,
                    struct cx_eval *ev, struct pg_error *err) {
  const struct pg_kernel_def *def = pg_kernel_find(cx_kernel_names[p->kind]);
  const struct pg_kernel_def *den = p->kind <= CX_ADD ? pg_kernel_find("maximum") : def;
  if (!def || !den) return pg_error_set(err, PG_EINTERNAL, "kernel '%s' is not built",
                                        cx_kernel_names[p->kind]);
  struct cx_table *tab = calloc(1, sizeof *tab);
  if (!tab) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int n_args = p->n_args;
  struct pg_tensor abs_ops[CX_MAX_ARGS], t, d;
  for (int i = 0; i < CX_MAX_ARGS; i++) pg_tensor_init(&abs_ops[i]);
  pg_tensor_init(&t);
  pg_tensor_init(&d);
  int rc = p->has_local ? replay_steps(env, p, tab, inputs, n_primary, err) : PG_OK;
  const struct pg_tensor *in[CX_MAX_ARGS], *ain[CX_MAX_ARGS];
  if (rc == PG_OK) rc = step_operands(env, p, p->step, tab, inputs, n_primary, in, err);
  for (int i = 0; rc == PG_OK && i < n_args; i++) {
    ain[i] = &abs_ops[i];
    rc = pg_tensor_alloc(&abs_ops[i], PG_DTYPE_F64, in[i]->dl.ndim, in[i]->shape, err);
    for (int64_t e = 0; rc == PG_OK && e < in[i]->numel; e++)
      ((double *)abs_ops[i].dl.data)[e] = fabs(((const double *)in[i]->dl.data)[e]);
  }
  struct pg_attr_value av[PG_KERNEL_MAX_ATTRS], dv[PG_KERNEL_MAX_ATTRS];
  int na = 0, nd = 0;
  if (rc == PG_OK) rc = cx_attrs(p, p->step, def, env->dims, 0, av, &na, err);
  if (rc == PG_OK) rc = cx_attrs(p, p->step, den, env->dims, 1, dv, &nd, err);
  if (rc == PG_OK) rc = pg_kernel_invoke(def, in, n_args, av, na, 1, &t, err);
  if (rc == PG_OK) rc = pg_kernel_invoke(den, ain, n_args, dv, nd, 1, &d, err);
  if (rc == PG_OK) rc = cx_ratios(&t, &d, gap, ev, err);
  for (int i = 0; i < CX_MAX_ARGS; i++) pg_tensor_reset(&abs_ops[i]);
  pg_tensor_reset(&t);
  pg_tensor_reset(&d);
  table_reset(tab);
  free(tab);
  return rc;
}

/* u uniform in (-1, 1): word i of the stream. */
static double stream_u(const struct pg_rng_stream *s, uint64_t i) {
  uint32_t w[4];
  pg_rng_block(s, i / 4, w);
  return 2.0 * pg_rng_u01(w[i % 4]) - 1.0;
}

/* (outer, K, inner) view of a tensor around axis. */
static void split_axis(const struct pg_tensor *t, int axis, int64_t *outer, int64_t *k,
                       int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int a = 0; a < axis; a++) *outer *= t->shape[a];
  for (int a = axis + 1; a < t->dl.ndim; a++) *inner *= t->shape[a];
  *k = t->dl.ndim ? t->shape[axis] : 1;
}

/* Exact constructions (see the section comment). Returns 1 when one applied, 0 when
 * the step does not allow one (the caller searches), negative on error. */
static int cx_construct(const struct cx_plan *p, const struct pg_case *cs,
                        const struct pg_bindings *dims, struct pg_tensor *inputs,
                        struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  double gap = st->relative_gap > 0 ? st->relative_gap : 1e-5;
  uint64_t seed = st->seed ? st->seed : pg_case_seed(cs);
  for (int i = 0; i < p->n_args; i++)
    if (p->primary[i] < 0 || !pg_dtype_is_float(inputs[p->primary[i]].dtype)) return 0;
  struct pg_rng_stream rs;
  if (p->kind == CX_SUB || p->kind == CX_ADD) {
    struct pg_tensor *tx = &inputs[p->primary[0]], *ty = &inputs[p->primary[1]];
    if (p->primary[0] == p->primary[1] || tx->numel != ty->numel) return 0;
    pg_rng_stream_init(&rs, seed, ty->name, PG_RNG_SEARCH);
    /* Inside the gap, not on it: y rounded to its dtype may move by half an ulp. */
    double g = 0.9 * gap, sign = p->kind == CX_SUB ? 1.0 : -1.0;
    uint32_t w[4];
    for (int64_t i = 0; i < ty->numel; i++) {
      if (i % 4 == 0) pg_rng_block(&rs, (uint64_t)i / 4, w);
      double u = 2.0 * pg_rng_u01(w[i % 4]) - 1.0;
      double xv = pg_load_f64(tx->dl.data, tx->dtype, (size_t)i);
      pg_store_f64(ty->dl.data, ty->dtype, (size_t)i, sign * xv * (1.0 + g * u));
    }
    return 1;
  }
  const struct pg_kernel_def *def = pg_kernel_find(cx_kernel_names[p->kind]);
  struct pg_attr_value av[PG_KERNEL_MAX_ATTRS];
  int na;
  if (!def) return 0;
  PG_RETURN_IF_ERROR(cx_attrs(p, p->step, def, dims, 0, av, &na, err));
  if (p->kind == CX_MATMUL) {
    if (p->n_args != 2 || p->primary[0] == p->primary[1]) return 0;
    struct pg_tensor *ta = &inputs[p->primary[0]], *tb = &inputs[p->primary[1]];
    const struct pg_attr_value *tra = attr_named(def, av, "trans_a"),
                               *trb = attr_named(def, av, "trans_b");
    int nda = ta->dl.ndim, ndb = tb->dl.ndim;
    if (nda < 1 || ndb < 1) return 0;
    int ka = nda == 1 ? 0 : (tra && tra->b) ? nda - 2 : nda - 1;
    int kb = ndb == 1 ? 0 : (trb && trb->b) ? ndb - 1 : ndb - 2;
    int64_t ao, ak, ai, bo, bk, bi;
    split_axis(ta, ka, &ao, &ak, &ai);
    split_axis(tb, kb, &bo, &bk, &bi);
    if (ak != bk) return 0; /* the kernel reports the mismatch itself */
    if (ak < 2)
      return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' contracts over "
                          "%lld element%s; a single product cannot cancel", cs->id,
                          st->target, (long long)ak, ak == 1 ? "" : "s");
    /* Index k pairs with k + h (h = K/2), not with k + 1: the partial sums over the
     * first half stay as large as plain inputs' and cancel only against the second
     * half, so a tiled or lane-split accumulator carries them at full magnitude (pairs
     * of neighbours would cancel inside every tile and hide a narrow accumulator). */
    int64_t h = ak / 2;
    for (int64_t o = 0; o < ao; o++) /* a[k + h] = a[k] */
      for (int64_t k = 0; k < h; k++)
        for (int64_t i = 0; i < ai; i++) {
          size_t src = (size_t)((o * ak + k) * ai + i), dst = src + (size_t)(h * ai);
          pg_store_f64(ta->dl.data, ta->dtype, dst, pg_load_f64(ta->dl.data, ta->dtype, src));
        }
    pg_rng_stream_init(&rs, seed, tb->name, PG_RNG_SEARCH);
    for (int64_t o = 0; o < bo; o++) { /* b[k + h] = -b[k] (1 + g u); odd K: last slice 0 */
      for (int64_t k = 0; k < h; k++)
        for (int64_t i = 0; i < bi; i++) {
          size_t src = (size_t)((o * bk + k) * bi + i), dst = src + (size_t)(h * bi);
          double v = pg_load_f64(tb->dl.data, tb->dtype, src);
          pg_store_f64(tb->dl.data, tb->dtype, dst, -v * (1.0 + gap * stream_u(&rs, dst)));
        }
      for (int64_t i = 0; bk % 2 && i < bi; i++)
        pg_store_f64(tb->dl.data, tb->dtype, (size_t)((o * bk + bk - 1) * bi + i), 0.0);
    }
    return 1;
  }
  if (p->kind == CX_SUM || p->kind == CX_MEAN) {
    struct pg_tensor *tx = &inputs[p->primary[0]];
    const struct pg_attr_value *ax = attr_named(def, av, "axis");
    int axis = ax ? (int)ax->i : -1;
    if (tx->dl.ndim < 1) return 0;
    if (axis < 0) axis += tx->dl.ndim;
    if (axis < 0 || axis >= tx->dl.ndim) return 0; /* the kernel reports it */
    int64_t xo, xk, xi;
    split_axis(tx, axis, &xo, &xk, &xi);
    if (xk < 2)
      return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' reduces over "
                          "%lld element%s; nothing can cancel", cs->id, st->target,
                          (long long)xk, xk == 1 ? "" : "s");
    pg_rng_stream_init(&rs, seed, tx->name, PG_RNG_SEARCH);
    for (int64_t o = 0; o < xo; o++)
      for (int64_t i = 0; i < xi; i++) {
        double mean = 0, mabs = 0;
        for (int64_t k = 0; k < xk; k++)
          mean += pg_load_f64(tx->dl.data, tx->dtype, (size_t)((o * xk + k) * xi + i));
        mean /= (double)xk;
        for (int64_t k = 0; k < xk; k++)
          mabs += fabs(pg_load_f64(tx->dl.data, tx->dtype, (size_t)((o * xk + k) * xi + i)) - mean);
        mabs /= (double)xk;
        double shift = 0.5 * gap * stream_u(&rs, (uint64_t)(o * xi + i)) * mabs;
        for (int64_t k = 0; k < xk; k++) {
          size_t e = (size_t)((o * xk + k) * xi + i);
          pg_store_f64(tx->dl.data, tx->dtype, e,
                       pg_load_f64(tx->dl.data, tx->dtype, e) - mean + shift);
        }
      }
    return 1;
  }
  return 0;
}

/* x' = sign (offset + scale x) per floating input; sign: 0 none, 1 random, 2+a
 * alternating along axis a. */
static void apply_knobs(const struct pg_tensor *src, struct pg_tensor *dst, int n,
                        const double *scale, const double *offset, const int *sign,
                        uint64_t sign_seed) {
  for (int i = 0; i < n; i++) {
    memcpy(dst[i].dl.data, src[i].dl.data, src[i].nbytes);
    if (!pg_dtype_is_float(src[i].dtype) ||
        (scale[i] == 1.0 && offset[i] == 0.0 && sign[i] == 0))
      continue;
    struct pg_rng_stream rs;
    pg_rng_stream_init(&rs, sign_seed, src[i].name, PG_RNG_SEARCH);
    int64_t stride = 1, len = 1;
    if (sign[i] >= 2) {
      int a = sign[i] - 2;
      for (int b = a + 1; b < src[i].dl.ndim; b++) stride *= src[i].shape[b];
      len = src[i].shape[a];
    }
    for (int64_t e = 0; e < src[i].numel; e++) {
      double v = offset[i] + scale[i] * pg_load_f64(src[i].dl.data, src[i].dtype, (size_t)e);
      if (sign[i] == 1 && stream_u(&rs, (uint64_t)e) < 0) v = -v;
      if (sign[i] >= 2 && ((e / stride) % len) % 2 == 1) v = -v;
      pg_store_f64(dst[i].dl.data, dst[i].dtype, (size_t)e, v);
    }
  }
}

/* Better: a larger share, then a lower median r. */
static int cx_better(const struct cx_eval *a, const struct cx_eval *b) {
  if (a->hits != b->hits) return a->hits > b->hits;
  return a->median < b->median;
}

static int cx_search(const struct cx_plan *p, const struct pg_op_graph *c,
                     const struct pg_case *cs, const struct pg_golden_env *env, double gap,
                     struct pg_tensor *inputs, struct cx_eval *plain, struct cx_eval *best_ev,
                     struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  int n = c->n_primary, rc = PG_OK;
  size_t nn = (size_t)(n ? n : 1);
  struct pg_tensor *work = calloc(nn, sizeof *work);
  double *knobs = calloc(nn * 4, sizeof *knobs);
  int *signs = calloc(nn * 2, sizeof *signs);
  if (!work || !knobs || !signs) {
    free(work);
    free(knobs);
    free(signs);
    return pg_error_set(err, PG_ENOMEM, "case %s: out of memory", cs->id);
  }
  double *scale = knobs, *offset = knobs + n, *best_scale = knobs + 2 * n,
         *best_offset = knobs + 3 * n;
  int *sign = signs, *best_sign = signs + n;
  for (int i = 0; i < n; i++) pg_tensor_init(&work[i]);
  for (int i = 0; i < n && rc == PG_OK; i++) {
    pg_tensor_set_name(&work[i], inputs[i].name);
    rc = pg_tensor_alloc(&work[i], inputs[i].dtype, inputs[i].dl.ndim, inputs[i].shape, err);
  }
  uint64_t seed = st->seed ? st->seed : pg_case_seed(cs);
  struct pg_rng_stream rs;
  pg_rng_stream_init(&rs, seed, st->target, PG_RNG_SEARCH);
  static const double offsets[] = {0, 1, -1, 4, -4, 16, -16, 0};
  int best_r = -1;
  for (int r = 0; rc == PG_OK && r < PG_STRESS_RESTARTS; r++) {
    for (int i = 0; i < n; i++) {
      uint32_t w[4];
      pg_rng_block(&rs, (uint64_t)r * 4096u + (uint64_t)i, w);
      scale[i] = r == 0 ? 1.0 : ldexp(1.0, (int)(w[0] % 9u) - 6);
      offset[i] = r == 0 ? 0.0 : offsets[w[1] % 8u];
      sign[i] = r == 0 ? 0 : (int)(w[2] % (uint32_t)(2 + inputs[i].dl.ndim));
    }
    apply_knobs(inputs, work, n, scale, offset, sign, seed + (uint64_t)r);
    struct cx_eval ev;
    struct pg_error sub;
    pg_error_clear(&sub);
    rc = cx_score(p, env, work, n, gap, &ev, &sub);
    if (rc != PG_OK) {
      pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s': %s", cs->id,
                   st->target, sub.message);
      break;
    }
    if (r == 0) *plain = ev;
    if (best_r < 0 || cx_better(&ev, best_ev)) {
      best_r = r;
      *best_ev = ev;
      memcpy(best_scale, scale, (size_t)n * sizeof *scale);
      memcpy(best_offset, offset, (size_t)n * sizeof *offset);
      memcpy(best_sign, sign, (size_t)n * sizeof *sign);
    }
  }
  if (rc == PG_OK && best_ev->hits == 0)
    rc = pg_error_set(err, PG_EVALIDATE,
                      "case %s: cancellation_stress: %d restarts found no element of '%s' with "
                      "cancellation ratio r <= relative_gap %g (best median r %.3g)", cs->id,
                      PG_STRESS_RESTARTS, st->target, gap, best_ev->median);
  if (rc == PG_OK && best_r > 0) { /* keep the best restart's inputs */
    apply_knobs(inputs, work, n, best_scale, best_offset, best_sign, seed + (uint64_t)best_r);
    for (int i = 0; i < n; i++) memcpy(inputs[i].dl.data, work[i].dl.data, inputs[i].nbytes);
  }
  for (int i = 0; i < n; i++) pg_tensor_reset(&work[i]);
  free(work);
  free(knobs);
  free(signs);
  return rc;
}

static void fmt_share(char *buf, size_t n, int64_t hits, int64_t total) {
  snprintf(buf, n, "%.1f%%", total ? 100.0 * (double)hits / (double)total : 0.0);
}

/* What the stress achieved, for the report and the console. */
static void fill_result(const struct cx_plan *p, const struct pg_cancellation_stress *st,
                        double gap, const struct cx_eval *plain, const struct cx_eval *done,
                        int constructed, struct pg_cancel_result *res) {
  memset(res, 0, sizeof *res);
  res->present = 1;
  snprintf(res->target, sizeof res->target, "%s", st->target);
  snprintf(res->kernel, sizeof res->kernel, "%s", cx_kernel_names[p->kind]);
  snprintf(res->method, sizeof res->method, "%s", constructed ? "construct" : "search");
  res->relative_gap = gap;
  res->n = done->n;
  res->share = done->n ? (double)done->hits / (double)done->n : 0;
  res->share_plain = plain->n ? (double)plain->hits / (double)plain->n : 0;
  res->median_r = done->median;
  res->median_r_plain = plain->median;
  res->restarts = constructed ? 0 : PG_STRESS_RESTARTS;
  char a[32], b[32], z[64] = "";
  fmt_share(a, sizeof a, done->hits, done->n);
  fmt_share(b, sizeof b, plain->hits, plain->n);
  if (done->zeros * 10 >= done->n && done->n)
    snprintf(z, sizeof z, "; %.1f%% cancel to exactly 0 (gap below the dtype's resolution?)",
             100.0 * (double)done->zeros / (double)done->n);
  snprintf(res->note, sizeof res->note,
           "cancellation_stress %s (%s, %s): %s of %lld elements with r <= %g (plain inputs "
           "%s), median r %.3g (plain %.3g)%s", st->target, cx_kernel_names[p->kind],
           res->method, a, (long long)done->n, gap, b, done->median, plain->median, z);
}

/* Scores the plain inputs, then constructs or searches stressed ones in place. */
static int stress(const struct cx_plan *p, const struct pg_contract *c, const struct pg_case *cs,
                  const struct pg_golden_env *env, struct pg_tensor *inputs,
                  struct pg_cancel_result *res, struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  double gap = st->relative_gap > 0 ? st->relative_gap : 1e-5;
  struct cx_eval plain, done;
  memset(&plain, 0, sizeof plain);
  memset(&done, 0, sizeof done);
  struct pg_error sub;
  pg_error_clear(&sub);
  int rc = cx_score(p, env, inputs, c->n_primary, gap, &plain, &sub);
  if (rc != PG_OK)
    return pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s': %s", cs->id,
                        st->target, sub.message);
  int constructed = cx_construct(p, cs, env->dims, inputs, err);
  if (constructed < 0) return constructed;
  if (constructed) {
    rc = cx_score(p, env, inputs, c->n_primary, gap, &done, &sub);
    if (rc != PG_OK)
      return pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s': %s", cs->id,
                          st->target, sub.message);
  } else {
    PG_RETURN_IF_ERROR(cx_search(p, &c->graph, cs, env, gap, inputs, &plain, &done, err));
  }
  if (res) fill_result(p, st, gap, &plain, &done, constructed, res);
  return PG_OK;
}

int pg__cancel_stress(const struct pg_contract *c, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_golden_plan *plan,
                      struct pg_tensor *inputs, struct pg_cancel_result *res,
                      struct pg_error *err) {
  struct pg_golden_plan *own;
  PG_RETURN_IF_ERROR(plan_for(c, &plan, &own, err));
  struct cx_plan p;
  int rc = cx_plan_make(plan, cs, &p, err);
  /* single-threaded scoring: the chosen inputs must not depend on the thread count */
  struct pg_golden_env env = {plan, dims, cs->dtypes, cs->n_dtypes, 32, NULL, 1};
  if (rc == PG_OK) rc = stress(&p, c, cs, &env, inputs, res, err);
  pg_golden_plan_free(own);
  return rc;
}
