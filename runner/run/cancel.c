/* phasegate runner — cancellation_stress (DESIGN.md §4): for a case that names a target
 * tensor, reshape the generated primary inputs so that the golden step computing it
 * cancels. See the section comment below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/inputs.h"
#include "tensors/rng.h"
#include "tensors/tensors.h"

/* ------------------------------------------------------------------ cancellation_stress
 *
 * The case names a target tensor (DESIGN.md §4). We find the built-in golden step that
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
 * own module are not visible outside that module's golden: PG_ENOTSUP naming them. */

enum cx_kind { CX_SUB = 0, CX_ADD, CX_MATMUL, CX_SUM, CX_MEAN, CX_CUMSUM };
static const char *const cx_kernel_names[] = {"sub", "add", "matmul", "sum", "mean", "cumsum"};

#define CX_MAX_ARGS PG_KERNEL_MAX_INPUTS
#define CX_MAX_ATTRS PG_KERNEL_MAX_ATTRS
#define CX_TEXT 128
#define CX_MAX_LOCALS 64
#define PG_STRESS_RESTARTS 32

/* One golden step, split: `outs = op(args, key=value)`. */
struct cx_call {
  int n_outs;
  char outs[PG_KERNEL_MAX_OUTPUTS][PG_NAME_MAX];
  char op[64];
  int n_args;
  char args[CX_MAX_ARGS][PG_NAME_MAX];
  int n_attrs;
  char attr_key[CX_MAX_ATTRS][64];
  char attr_val[CX_MAX_ATTRS][CX_TEXT];
};

/* Where an operand of the target's step comes from: primary input `primary` (>= 0),
 * output `name` of module `module` (> 0), or (local) an earlier step of the module. */
struct operand {
  int primary;
  int module;
  int local;
  char name[PG_NAME_MAX];
};

struct cx_plan {
  const struct pg_module *mod;
  int step;                      /* the target's step in mod->golden */
  enum cx_kind kind;
  struct cx_call call;
  struct operand args[CX_MAX_ARGS];
  int has_local;                 /* an operand is a step-local: replay mod's earlier steps */
};

static int find_primary(const struct pg_op_graph *c, const char *name) {
  for (int i = 0; i < c->n_primary; i++)
    if (c->primary_inputs[i].name && strcmp(c->primary_inputs[i].name, name) == 0) return i;
  return -1;
}

/* Copies text[0..len) without blanks into dst (size n); 0 when empty or too long. */
static int strip_copy(char *dst, size_t n, const char *text, size_t len) {
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ' || text[i] == '\t') continue;
    if (k + 1 >= n) return 0;
    dst[k++] = text[i];
  }
  dst[k] = '\0';
  return k > 0;
}

static int is_tensor_name(const char *s) {
  if (!*s || *s == '-' || (*s >= '0' && *s <= '9')) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

/* Does the left-hand side of `step` (outputs before '=') name `target`? Sets *n_outs. */
static int step_defines(const char *step, const char *target, int *n_outs) {
  const char *eq = step ? strchr(step, '=') : NULL;
  *n_outs = 0;
  if (!eq) return 0;
  int hit = 0;
  const char *p = step;
  while (p < eq) {
    const char *comma = memchr(p, ',', (size_t)(eq - p));
    const char *end = comma ? comma : eq;
    char name[PG_NAME_MAX];
    if (strip_copy(name, sizeof name, p, (size_t)(end - p))) {
      (*n_outs)++;
      hit |= strcmp(name, target) == 0;
    }
    p = end + 1;
  }
  return hit;
}

/* Splits a step into cl. Returns PG_OK, or PG_ENOTSUP with `why` filled. */
static int parse_call(const char *step, struct cx_call *cl, char *why, size_t why_n) {
  memset(cl, 0, sizeof *cl);
  if (!step) step = "";
  const char *eq = strchr(step, '=');
  if (!eq) {
    snprintf(why, why_n, "the step \"%s\" has no '='", step);
    return PG_ENOTSUP;
  }
  for (const char *p = step; p < eq;) {
    const char *comma = memchr(p, ',', (size_t)(eq - p));
    const char *end = comma ? comma : eq;
    if (cl->n_outs == PG_KERNEL_MAX_OUTPUTS ||
        !strip_copy(cl->outs[cl->n_outs], PG_NAME_MAX, p, (size_t)(end - p)) ||
        !is_tensor_name(cl->outs[cl->n_outs])) {
      snprintf(why, why_n, "cannot read the outputs of \"%s\"", step);
      return PG_ENOTSUP;
    }
    cl->n_outs++;
    p = end + 1;
  }
  const char *r = eq + 1;
  while (*r == ' ' || *r == '\t') r++;
  const char *open = strchr(r, '(');
  int fn = open && (size_t)(open - r) < sizeof cl->op &&
           strip_copy(cl->op, sizeof cl->op, r, (size_t)(open - r)) && is_tensor_name(cl->op) &&
           !strchr(cl->op, '-');
  if (!fn) { /* infix: "x - y" / "x + y", blanks around the operator (names may hold '-') */
    const char *sep = strstr(r, " - ");
    if (!sep) sep = strstr(r, " + ");
    if (!sep || !strip_copy(cl->args[0], PG_NAME_MAX, r, (size_t)(sep - r)) ||
        !strip_copy(cl->args[1], PG_NAME_MAX, sep + 3, strlen(sep + 3)) ||
        !is_tensor_name(cl->args[0]) || !is_tensor_name(cl->args[1])) {
      snprintf(why, why_n, "the step \"%s\" is neither op(args) nor 'x - y' / 'x + y'", step);
      return PG_ENOTSUP;
    }
    snprintf(cl->op, sizeof cl->op, "%s", sep[1] == '-' ? "sub" : "add");
    cl->n_args = 2;
    return PG_OK;
  }
  const char *close = strrchr(open, ')');
  if (!close) {
    snprintf(why, why_n, "the step \"%s\" has no closing ')'", step);
    return PG_ENOTSUP;
  }
  /* split the argument list at top-level commas */
  const char *a = open + 1;
  int depth = 0;
  for (const char *q = a; q <= close; q++) {
    if (*q == '(' || *q == '[') depth++;
    else if ((*q == ')' || *q == ']') && q < close) depth--;
    if (q < close && (depth > 0 || *q != ',')) continue;
    const char *aeq = NULL;
    for (const char *t = a; t < q; t++)
      if (*t == '=' && t[1] != '=') {
        aeq = t;
        break;
      }
    if (aeq) {
      if (cl->n_attrs == CX_MAX_ATTRS ||
          !strip_copy(cl->attr_key[cl->n_attrs], sizeof cl->attr_key[0], a, (size_t)(aeq - a))) {
        snprintf(why, why_n, "cannot read the attributes of \"%s\"", step);
        return PG_ENOTSUP;
      }
      const char *v = aeq + 1;
      while (*v == ' ' || *v == '\t') v++;
      size_t len = (size_t)(q - v);
      while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
      if (len >= CX_TEXT) len = CX_TEXT - 1;
      memcpy(cl->attr_val[cl->n_attrs], v, len);
      cl->attr_val[cl->n_attrs][len] = '\0';
      cl->n_attrs++;
    } else if (q > a || *q == ',') {
      if (cl->n_args == CX_MAX_ARGS ||
          !strip_copy(cl->args[cl->n_args], PG_NAME_MAX, a, (size_t)(q - a)) ||
          !is_tensor_name(cl->args[cl->n_args])) {
        snprintf(why, why_n, "cannot read the tensor arguments of \"%s\"", step);
        return PG_ENOTSUP;
      }
      cl->n_args++;
    }
    a = q + 1;
  }
  return PG_OK;
}

/* Checks that a parsed step names a built-in kernel with fitting arguments and known
 * attributes of types we can evaluate. */
static int check_kernel_call(const struct cx_call *cl, const char *step, char *why, size_t why_n) {
  const struct pg_kernel_def *def = pg_kernel_find(cl->op);
  if (!def) {
    snprintf(why, why_n, "\"%s\" calls '%s', which is no built-in kernel", step, cl->op);
    return PG_ENOTSUP;
  }
  if (cl->n_args < def->min_inputs || cl->n_args > def->max_inputs || cl->n_outs != def->n_outputs) {
    snprintf(why, why_n, "\"%s\" does not match '%s' (%d..%d inputs, %d output%s)", step,
             cl->op, def->min_inputs, def->max_inputs, def->n_outputs,
             def->n_outputs == 1 ? "" : "s");
    return PG_ENOTSUP;
  }
  for (int k = 0; k < cl->n_attrs; k++)
    if (pg_kernel_attr_index(def, cl->attr_key[k]) < 0) {
      snprintf(why, why_n, "\"%s\": '%s' has no attribute '%s'", step, cl->op, cl->attr_key[k]);
      return PG_ENOTSUP;
    }
  return PG_OK;
}

/* Resolves an argument of step `s` of module m as the golden engine does (step-locals,
 * then m's declared inputs, then primary inputs, then the latest earlier module's
 * output). 0: resolved; 2: unknown. */
static int resolve_arg(const struct pg_op_graph *c, const struct pg_module *m, int s,
                       const char *name, struct operand *o) {
  o->primary = -1;
  o->module = 0;
  o->local = 0;
  snprintf(o->name, sizeof o->name, "%s", name);
  for (int k = 0; k < s; k++) {
    int n_outs;
    if (step_defines(m->golden.steps[k].text, name, &n_outs)) {
      o->local = 1;
      return 0;
    }
  }
  for (int i = 0; i < m->n_inputs; i++)
    if (m->inputs[i].name && strcmp(m->inputs[i].name, name) == 0) {
      if (m->inputs[i].source_module == 0) {
        o->primary = find_primary(c, name);
        return o->primary >= 0 ? 0 : 2;
      }
      o->module = m->inputs[i].source_module;
      return o->module > 0 && o->module < m->id ? 0 : 2;
    }
  if ((o->primary = find_primary(c, name)) >= 0) return 0;
  for (int j = m->id - 1; j >= 1; j--) {
    const struct pg_module *mj = pg_graph_module(c, j);
    for (int i = 0; mj && i < mj->n_outputs; i++)
      if (mj->outputs[i].name && strcmp(mj->outputs[i].name, name) == 0) {
        o->module = j;
        return 0;
      }
  }
  return 2;
}

/* Finds how the target is computed. PG_OK fills p; otherwise an error naming why. */
static int cx_plan_make(const struct pg_op_graph *c, const struct pg_case *cs,
                        struct cx_plan *p, struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  const char *target = st->target ? st->target : "";
  const char *id = cs->id ? cs->id : "?";
  memset(p, 0, sizeof *p);
  for (int m = 0; !p->mod && m < c->n_modules; m++)
    for (int s = 0; !p->mod && s < c->modules[m].golden.n_steps; s++) {
      int n_outs;
      if (c->modules[m].golden.kind == PG_GOLDEN_STEPS &&
          step_defines(c->modules[m].golden.steps[s].text, target, &n_outs)) {
        p->mod = &c->modules[m];
        p->step = s;
        if (n_outs != 1)
          return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' is one of "
                              "%d outputs of a golden step; only single-output steps (sub, add, "
                              "matmul, sum, mean, cumsum) are supported", id, target, n_outs);
      }
    }
  if (!p->mod) {
    if (find_primary(c, target) >= 0)
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
  char why[600] = "";
  const char *text = p->mod->golden.steps[p->step].text;
  if (parse_call(text, &p->call, why, sizeof why) != PG_OK)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d): "
                        "%s", id, target, p->mod->id, why);
  int kind = -1;
  for (int k = 0; k < (int)(sizeof cx_kernel_names / sizeof *cx_kernel_names); k++)
    if (strcmp(p->call.op, cx_kernel_names[k]) == 0) kind = k;
  if (kind < 0)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d) "
                        "is computed by '%s'; cancellation_stress supports sub, add, matmul, sum, "
                        "mean and cumsum (the kernels whose result is a signed sum of terms)", id,
                        target, p->mod->id, p->call.op);
  p->kind = (enum cx_kind)kind;
  if (check_kernel_call(&p->call, text, why, sizeof why) != PG_OK)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: target '%s' (module %d): "
                        "%s", id, target, p->mod->id, why);
  for (int i = 0; i < p->call.n_args; i++) {
    if (resolve_arg(c, p->mod, p->step, p->call.args[i], &p->args[i]) != 0)
      return pg_error_set(err, PG_EVALIDATE, "case %s: cancellation_stress: operand '%s' of '%s' "
                          "is neither computed earlier in module %d, nor its input, nor a primary "
                          "input", id, p->call.args[i], target, p->mod->id);
    p->has_local |= p->args[i].local;
  }
  /* a step-local operand: the module's earlier steps are replayed, so each must be a
   * built-in kernel call we can read */
  if (p->has_local && p->step > CX_MAX_LOCALS / PG_KERNEL_MAX_OUTPUTS)
    return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: '%s' is step %d of module "
                        "%d; at most %d earlier steps are replayed", id, target, p->step + 1,
                        p->mod->id, CX_MAX_LOCALS / PG_KERNEL_MAX_OUTPUTS);
  for (int s = 0; p->has_local && s < p->step; s++) {
    struct cx_call cl;
    const char *t = p->mod->golden.steps[s].text;
    if (parse_call(t, &cl, why, sizeof why) != PG_OK || check_kernel_call(&cl, t, why, sizeof why) != PG_OK)
      return pg_error_set(err, PG_ENOTSUP, "case %s: cancellation_stress: an operand of '%s' is "
                          "computed inside module %d, whose earlier step cannot be replayed: %s",
                          id, target, p->mod->id, why);
  }
  return PG_OK;
}

int pg_cancellation_check(const struct pg_contract *c, const struct pg_case *cs,
                          struct pg_error *err) {
  if (!cs || !cs->cancellation.present) return PG_OK;
  struct cx_plan p;
  return cx_plan_make(&c->graph, cs, &p, err);
}

int pg_suite_check_cancellation(const struct pg_contract *c, const struct pg_suite *s,
                                struct pg_diags *diags) {
  int n = 0;
  for (int i = 0; i < s->n_cases; i++) {
    struct pg_error e;
    pg_error_clear(&e);
    if (pg_cancellation_check(c, &s->cases[i], &e) == PG_OK) continue;
    if (pg_diags_add(diags, PG_SEV_ERROR, s->path ? s->path : "", s->cases[i].mark.line,
                     s->cases[i].mark.column, "cancellation", "%s", e.message) != PG_OK)
      return PG_ENOMEM;
    n++;
  }
  return n;
}

/* A step's attributes evaluated for def (bound dims); absolute values when `absval`. */
static int cx_attrs(const struct cx_call *cl, const struct pg_kernel_def *def,
                    const struct pg_bindings *dims, int absval,
                    struct pg_attr_value vals[PG_KERNEL_MAX_ATTRS], int *n, struct pg_error *err) {
  *n = pg_kernel_attrs_default(def, vals);
  for (int k = 0; k < cl->n_attrs; k++) {
    int idx = pg_kernel_attr_index(def, cl->attr_key[k]);
    if (idx < 0 || idx >= PG_KERNEL_MAX_ATTRS)
      return pg_error_set(err, PG_EINVAL, "%s: unknown attribute '%s'", def->name, cl->attr_key[k]);
    struct pg_attr_value *v = &vals[idx];
    const char *text = cl->attr_val[k];
    enum pg_attr_type type = def->attrs[idx].type;
    memset(v, 0, sizeof *v);
    v->type = type;
    struct pg_error sub;
    pg_error_clear(&sub);
    int rc = PG_OK;
    if (type == PG_ATTR_STRING) {
      size_t len = strlen(text);
      if (len >= 2 && (text[0] == '"' || text[0] == '\'') && text[len - 1] == text[0]) {
        text++;
        len -= 2;
      }
      if (len >= sizeof v->s) len = sizeof v->s - 1;
      memcpy(v->s, text, len);
      v->s[len] = '\0';
      continue;
    }
    if (type == PG_ATTR_INTS) { /* [a, b, c] or one expression */
      char item[CX_TEXT];
      const char *q = text[0] == '[' ? text + 1 : text;
      while (rc == PG_OK && *q && *q != ']') {
        size_t len = strcspn(q, ",]");
        double x = 0;
        if (len >= sizeof item || v->n_ints == PG_MAX_NDIM) rc = PG_EINVAL;
        if (rc == PG_OK) {
          memcpy(item, q, len);
          item[len] = '\0';
          rc = pg_float_expr_eval(item, dims, &x, &sub);
        }
        if (rc == PG_OK) v->ints[v->n_ints++] = (int64_t)llround(x);
        q += len;
        if (*q == ',') q++;
      }
    } else {
      double x = 0;
      if (type == PG_ATTR_BOOL && (!strcmp(text, "true") || !strcmp(text, "True"))) x = 1;
      else if (type == PG_ATTR_BOOL && (!strcmp(text, "false") || !strcmp(text, "False"))) x = 0;
      else rc = pg_float_expr_eval(text, dims, &x, &sub);
      v->b = x != 0;
      v->f = x;
      v->i = (int64_t)llround(x);
    }
    if (rc != PG_OK)
      return pg_error_set(err, rc, "%s: attribute '%s' = '%s': %s", def->name, cl->attr_key[k],
                          text, sub.message[0] ? sub.message : "cannot evaluate");
  }
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

/* Evaluates a primary input or an earlier module's output into `out` (float64). */
static int eval_operand(const struct pg_golden_env *env, const struct operand *o,
                        const struct pg_tensor *inputs, int n_primary, struct pg_tensor *out,
                        struct pg_error *err) {
  if (o->primary >= 0) return widen(&inputs[o->primary], out, err);
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&outs[i]);
  int n_out = 0, found = -1;
  int rc = pg_golden_cumulative(env, o->module, inputs, n_primary, outs, &n_out, err);
  const struct pg_module *mod = pg_graph_module(env->graph, o->module);
  /* module k's outputs in declared order (phase N: final_outputs, matched by name) */
  for (int i = 0; rc == PG_OK && mod && i < n_out; i++) {
    const char *nm = o->module == env->graph->n_modules && i < env->graph->n_final
                         ? env->graph->final_outputs[i].name
                         : i < mod->n_outputs ? mod->outputs[i].name : NULL;
    if (nm && strcmp(nm, o->name) == 0) found = i;
  }
  if (rc == PG_OK && found < 0)
    rc = pg_error_set(err, PG_ENOTSUP, "module %d's boundary outputs do not include '%s'",
                      o->module, o->name);
  if (rc == PG_OK) rc = widen(&outs[found], out, err);
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&outs[i]);
  return rc;
}

/* Named float64 tensors seen while replaying a module's steps: step-locals, and the
 * inputs / earlier outputs they used (cached so each is evaluated once). Lookups go
 * from the newest entry, so a step-local shadows an input of the same name as it does
 * in the golden engine. */
struct cx_table {
  int n;
  char names[CX_MAX_LOCALS * 2][PG_NAME_MAX];
  struct pg_tensor t[CX_MAX_LOCALS * 2];
};

static void table_reset(struct cx_table *tab) {
  for (int i = 0; i < tab->n; i++) pg_tensor_reset(&tab->t[i]);
  tab->n = 0;
}

/* The f64 value of `name` as module plan->mod sees it before step `s` (a view into tab). */
static int table_get(const struct pg_golden_env *env, const struct cx_plan *p,
                     struct cx_table *tab, const char *name, const struct pg_tensor *inputs,
                     int n_primary, const struct pg_tensor **out, struct pg_error *err) {
  for (int i = tab->n - 1; i >= 0; i--)
    if (strcmp(tab->names[i], name) == 0) {
      *out = &tab->t[i];
      return PG_OK;
    }
  struct operand o;
  if (resolve_arg(env->graph, p->mod, 0, name, &o) != 0)
    return pg_error_set(err, PG_ENOTFOUND, "module %d: no tensor '%s'", p->mod->id, name);
  if (tab->n == CX_MAX_LOCALS * 2)
    return pg_error_set(err, PG_ELIMIT, "module %d: too many tensors to replay", p->mod->id);
  struct pg_tensor *t = &tab->t[tab->n];
  pg_tensor_init(t);
  PG_RETURN_IF_ERROR(eval_operand(env, &o, inputs, n_primary, t, err));
  snprintf(tab->names[tab->n], PG_NAME_MAX, "%s", name);
  *out = &tab->t[tab->n++];
  return PG_OK;
}

/* Replays steps 0 .. p->step - 1 of the target's module in float64 into tab. */
static int replay_steps(const struct pg_golden_env *env, const struct cx_plan *p,
                        struct cx_table *tab, const struct pg_tensor *inputs, int n_primary,
                        struct pg_error *err) {
  char why[600];
  for (int s = 0; s < p->step; s++) {
    struct cx_call cl;
    const char *text = p->mod->golden.steps[s].text;
    if (parse_call(text, &cl, why, sizeof why) != PG_OK)
      return pg_error_set(err, PG_ENOTSUP, "%s", why);
    const struct pg_kernel_def *def = pg_kernel_find(cl.op);
    if (!def) return pg_error_set(err, PG_ENOTSUP, "no kernel '%s'", cl.op);
    const struct pg_tensor *in[CX_MAX_ARGS];
    for (int i = 0; i < cl.n_args; i++)
      PG_RETURN_IF_ERROR(table_get(env, p, tab, cl.args[i], inputs, n_primary, &in[i], err));
    struct pg_attr_value av[PG_KERNEL_MAX_ATTRS];
    int na;
    PG_RETURN_IF_ERROR(cx_attrs(&cl, def, env->dims, 0, av, &na, err));
    if (tab->n + cl.n_outs > CX_MAX_LOCALS * 2)
      return pg_error_set(err, PG_ELIMIT, "module %d: too many tensors to replay", p->mod->id);
    struct pg_tensor *outs = &tab->t[tab->n];
    for (int i = 0; i < cl.n_outs; i++) pg_tensor_init(&outs[i]);
    struct pg_error sub;
    pg_error_clear(&sub);
    int rc = pg_kernel_invoke(def, in, cl.n_args, av, na, 1, outs, &sub);
    if (rc != PG_OK)
      return pg_error_set(err, rc, "replaying \"%s\" (module %d): %s", text, p->mod->id,
                          sub.message);
    for (int i = 0; i < cl.n_outs; i++)
      snprintf(tab->names[tab->n++], PG_NAME_MAX, "%s", cl.outs[i]);
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
  int n_args = p->call.n_args;
  struct pg_tensor abs_ops[CX_MAX_ARGS], t, d;
  for (int i = 0; i < CX_MAX_ARGS; i++) pg_tensor_init(&abs_ops[i]);
  pg_tensor_init(&t);
  pg_tensor_init(&d);
  int rc = p->has_local ? replay_steps(env, p, tab, inputs, n_primary, err) : PG_OK;
  const struct pg_tensor *in[CX_MAX_ARGS], *ain[CX_MAX_ARGS];
  for (int i = 0; rc == PG_OK && i < n_args; i++)
    rc = table_get(env, p, tab, p->call.args[i], inputs, n_primary, &in[i], err);
  for (int i = 0; rc == PG_OK && i < n_args; i++) {
    ain[i] = &abs_ops[i];
    rc = pg_tensor_alloc(&abs_ops[i], PG_DTYPE_F64, in[i]->dl.ndim, in[i]->shape, err);
    for (int64_t e = 0; rc == PG_OK && e < in[i]->numel; e++)
      ((double *)abs_ops[i].dl.data)[e] = fabs(((const double *)in[i]->dl.data)[e]);
  }
  struct pg_attr_value av[PG_KERNEL_MAX_ATTRS], dv[PG_KERNEL_MAX_ATTRS];
  int na = 0, nd = 0;
  if (rc == PG_OK) rc = cx_attrs(&p->call, def, env->dims, 0, av, &na, err);
  if (rc == PG_OK) rc = cx_attrs(&p->call, den, env->dims, 1, dv, &nd, err);
  if (rc == PG_OK) rc = pg_kernel_invoke(def, in, n_args, av, na, 1, &t, err);
  if (rc == PG_OK) rc = pg_kernel_invoke(den, ain, n_args, dv, nd, 1, &d, err);
  if (rc == PG_OK && t.numel != d.numel)
    rc = pg_error_set(err, PG_EINTERNAL, "result and magnitude shapes differ");
  double *r = NULL;
  if (rc == PG_OK && !(r = malloc((size_t)(t.numel ? t.numel : 1) * sizeof *r)))
    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    memset(ev, 0, sizeof *ev);
    ev->n = t.numel;
    const double *tv = t.dl.data, *dd = d.dl.data;
    for (int64_t e = 0; e < t.numel; e++) {
      double x = fabs(tv[e]), m = dd[e];
      r[e] = isfinite(x) && isfinite(m) && m > 0 ? x / m : INFINITY;
      ev->hits += r[e] <= gap;
      ev->zeros += r[e] == 0;
    }
    qsort(r, (size_t)t.numel, sizeof *r, cmp_double);
    ev->median = t.numel ? r[t.numel / 2] : INFINITY;
  }
  free(r);
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
  for (int i = 0; i < p->call.n_args; i++)
    if (p->args[i].primary < 0 || !pg_dtype_is_float(inputs[p->args[i].primary].dtype)) return 0;
  struct pg_rng_stream rs;
  if (p->kind == CX_SUB || p->kind == CX_ADD) {
    struct pg_tensor *tx = &inputs[p->args[0].primary], *ty = &inputs[p->args[1].primary];
    if (p->args[0].primary == p->args[1].primary || tx->numel != ty->numel) return 0;
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
  PG_RETURN_IF_ERROR(cx_attrs(&p->call, def, dims, 0, av, &na, err));
  if (p->kind == CX_MATMUL) {
    if (p->call.n_args != 2 || p->args[0].primary == p->args[1].primary) return 0;
    struct pg_tensor *ta = &inputs[p->args[0].primary], *tb = &inputs[p->args[1].primary];
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
    struct pg_tensor *tx = &inputs[p->args[0].primary];
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

int pg__cancel_stress(const struct pg_contract *c, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_golden_plan *plan,
                      struct pg_tensor *inputs, struct pg_cancel_result *res,
                      struct pg_error *err) {
  (void)plan;
  const struct pg_cancellation_stress *st = &cs->cancellation;
  struct cx_plan p;
  PG_RETURN_IF_ERROR(cx_plan_make(&c->graph, cs, &p, err));
  double gap = st->relative_gap > 0 ? st->relative_gap : 1e-5;
  /* single-threaded scoring: the chosen inputs must not depend on the thread count */
  struct pg_golden_env env = {&c->graph, dims, cs->dtypes, cs->n_dtypes, 32, NULL, 1};
  struct cx_eval plain, done;
  memset(&plain, 0, sizeof plain);
  memset(&done, 0, sizeof done);
  struct pg_error sub;
  pg_error_clear(&sub);
  int rc = cx_score(&p, &env, inputs, c->n_primary, gap, &plain, &sub);
  if (rc != PG_OK)
    return pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s': %s", cs->id,
                        st->target, sub.message);
  int constructed = cx_construct(&p, cs, dims, inputs, err);
  if (constructed < 0) return constructed;
  int restarts = 0;
  if (constructed) {
    rc = cx_score(&p, &env, inputs, c->n_primary, gap, &done, &sub);
    if (rc != PG_OK)
      return pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s': %s", cs->id,
                          st->target, sub.message);
  } else {
    PG_RETURN_IF_ERROR(cx_search(&p, &c->graph, cs, &env, gap, inputs, &plain, &done, err));
    restarts = PG_STRESS_RESTARTS;
  }
  if (res) {
    memset(res, 0, sizeof *res);
    res->present = 1;
    snprintf(res->target, sizeof res->target, "%s", st->target);
    snprintf(res->kernel, sizeof res->kernel, "%s", cx_kernel_names[p.kind]);
    snprintf(res->method, sizeof res->method, "%s", constructed ? "construct" : "search");
    res->relative_gap = gap;
    res->n = done.n;
    res->share = done.n ? (double)done.hits / (double)done.n : 0;
    res->share_plain = plain.n ? (double)plain.hits / (double)plain.n : 0;
    res->median_r = done.median;
    res->median_r_plain = plain.median;
    res->restarts = restarts;
    char a[32], b[32], z[64] = "";
    fmt_share(a, sizeof a, done.hits, done.n);
    fmt_share(b, sizeof b, plain.hits, plain.n);
    if (done.zeros * 10 >= done.n && done.n)
      snprintf(z, sizeof z, "; %.1f%% cancel to exactly 0 (gap below the dtype's resolution?)",
               100.0 * (double)done.zeros / (double)done.n);
    snprintf(res->note, sizeof res->note,
             "cancellation_stress %s (%s, %s): %s of %lld elements with r <= %g (plain inputs "
             "%s), median r %.3g (plain %.3g)%s", st->target, cx_kernel_names[p.kind],
             res->method, a, (long long)done.n, gap, b, done.median, plain.median, z);
  }
  return PG_OK;
}
