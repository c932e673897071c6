/* phasegate goldens/ — a step's attributes in the golden plan: checked against its
 * kernel's declared attributes (unknown, missing, ill-typed), constant values kept,
 * expressions compiled once (expr.c), and evaluated per set of dims into the values
 * the kernel receives. Float and int attributes are float expressions over the bound
 * dims (ints must evaluate to integers), bools are true/false or an expression, strings
 * a bare word or a quoted string, int lists [a, b, …] of expressions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

static int is_bool_word(const char *s) {
  return strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "false") == 0 ||
         strcmp(s, "False") == 0;
}

/* Writes "; 'op' takes a, b" (or "takes no attributes") into buf. */
static void suggest_attrs(const struct pg_kernel_def *def, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "; '%s' takes", def->name);
  int n = 0;
  for (const struct pg_attr_decl *a = def->attrs; a && a->name && used < size; a++, n++) {
    int w = snprintf(buf + used, size - used, "%s%s", n ? ", " : " ", a->name);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
  }
  if (n == 0) snprintf(buf, size, "; '%s' takes no attributes", def->name);
}

/* Expression syntax, whatever the kernel: every bare value that is not true/false or a
 * single word, and every list element, must parse as a float expression. */
static int check_syntax(struct pg__pstep *ps, const struct pg__step *st) {
  for (int k = 0; k < st->n_attrs; k++) {
    const struct pg__step_attr *a = &st->attrs[k];
    int n = a->kind == PG__VAL_LIST ? a->n_items : a->kind == PG__VAL_EXPR ? 1 : 0;
    for (int j = 0; j < n; j++) {
      const char *text = a->kind == PG__VAL_LIST ? a->items[j] : a->value;
      int at = a->kind == PG__VAL_LIST ? a->item_offsets[j] : a->value_offset;
      if (a->kind == PG__VAL_EXPR) {
        int e = pg__scan_name(text, 0, 0); /* a word may be a string attribute ("tanh") */
        if (is_bool_word(text) || (e > 0 && text[e] == '\0')) continue;
      }
      struct pg_error err;
      pg_error_clear(&err);
      if (pg_float_expr_check(text, NULL, NULL, &err) != PG_OK)
        return pg__problem_set(&ps->problem[PG__P_SYNTAX], PG_EPARSE,
                               at + (err.column > 0 ? err.column - 1 : 0), "attribute '%s': %s",
                               a->key, err.message);
    }
  }
  return PG_OK;
}

/* Compiles text (at offset `at` in the step) as item i of attribute v. A text that
 * does not compile (a word that is no expression) is an attrs problem. */
static int compile_expr(struct pg__pstep *ps, struct pg__attr_plan *v, int i, const char *text,
                        int at) {
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg__expr_compile(text, 1, &v->expr[i], &err);
  if (rc == PG_ENOMEM) return rc;
  v->offset[i] = at;
  if (rc != PG_OK)
    return pg__problem_set(&ps->problem[PG__P_ATTRS], rc,
                           at + (err.column > 0 ? err.column - 1 : 0), "%s",
                           err.message);
  v->n = i + 1;
  return PG_OK;
}

/* Attribute a (given) for declaration decl into v: a constant or compiled
 * expression(s), or an attrs problem. */
static int compile_given(struct pg__pstep *ps, const struct pg_attr_decl *decl,
                         const struct pg__step_attr *a, struct pg__attr_plan *v) {
  const char *op = ps->pub.kernel->name;
  int at = a->value_offset;
  v->value.type = decl->type;
  switch (decl->type) {
    case PG_ATTR_STRING:
      if (a->kind == PG__VAL_LIST)
        return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, at,
                               "%s: attribute '%s': expected a word, not a list", op, decl->name);
      if (pg__copy_token(v->value.s, sizeof v->value.s, a->value, (int)strlen(a->value)))
        return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, at,
                               "%s: attribute '%s': value too long",
                               op, decl->name);
      return PG_OK;
    case PG_ATTR_BOOL:
      if (a->kind != PG__VAL_EXPR)
        return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, at,
                               "%s: attribute '%s': expected true or false", op, decl->name);
      if (is_bool_word(a->value)) {
        v->value.b = a->value[0] == 't' || a->value[0] == 'T';
        return PG_OK;
      }
      break;
    case PG_ATTR_FLOAT:
    case PG_ATTR_INT:
      if (a->kind != PG__VAL_EXPR)
        return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, at,
                               "%s: attribute '%s': expected %s", op,
                               decl->name, decl->type == PG_ATTR_INT ? "an integer" : "a number");
      break;
    case PG_ATTR_INTS:
      if (a->kind == PG__VAL_STRING)
        return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, at,
                               "%s: attribute '%s': expected a list like [0, 2, 1]", op,
                               decl->name);
      if (a->kind == PG__VAL_LIST) {
        v->how = PG__ATTR_LIST;
        for (int k = 0; k < a->n_items && !ps->problem[PG__P_ATTRS].code; k++)
          PG_RETURN_IF_ERROR(compile_expr(ps, v, k, a->items[k], a->item_offsets[k]));
        return PG_OK;
      }
      break;
    default:
      return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINTERNAL, at,
                             "%s: attribute '%s': unknown attribute type", op, decl->name);
  }
  v->how = PG__ATTR_EXPR;
  return compile_expr(ps, v, 0, a->value, at);
}

/* The attributes against the kernel's declarations, in declaration order. */
static int compile_typed(struct pg__pstep *ps, const struct pg__step *st) {
  const struct pg_kernel_def *def = ps->pub.kernel;
  int nd = 0;
  while (def->attrs && def->attrs[nd].name && nd < PG_KERNEL_MAX_ATTRS) nd++;
  ps->attr = calloc((size_t)(nd ? nd : 1), sizeof *ps->attr);
  if (!ps->attr) return PG_ENOMEM;
  ps->n_attrs = nd;
  for (int k = 0; k < st->n_attrs; k++)
    if (pg_kernel_attr_index(def, st->attrs[k].key) < 0) {
      char hint[512];
      suggest_attrs(def, hint, sizeof hint);
      return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, st->attrs[k].key_offset,
                             "%s: unknown attribute '%s'%s", def->name, st->attrs[k].key, hint);
    }
  for (int d = 0; d < nd && !ps->problem[PG__P_ATTRS].code; d++) {
    const struct pg_attr_decl *decl = &def->attrs[d];
    const struct pg__step_attr *a = NULL;
    for (int k = 0; k < st->n_attrs; k++)
      if (strcmp(st->attrs[k].key, decl->name) == 0) a = &st->attrs[k];
    struct pg__attr_plan *v = &ps->attr[d];
    if (a) {
      PG_RETURN_IF_ERROR(compile_given(ps, decl, a, v));
    } else if (decl->required) {
      return pg__problem_set(&ps->problem[PG__P_ATTRS], PG_EINVAL, st->op_offset,
                             "%s: missing required attribute '%s'", def->name, decl->name);
    } else {
      v->value = decl->default_value;
      v->value.type = decl->type;
    }
  }
  return PG_OK;
}

int pg__pstep_compile_attrs(struct pg__pstep *ps, const struct pg__step *st) {
  PG_RETURN_IF_ERROR(check_syntax(ps, st));
  return ps->pub.kernel ? compile_typed(ps, st) : PG_OK;
}

void pg__pstep_free_attrs(struct pg__pstep *ps) {
  for (int d = 0; ps->attr && d < ps->n_attrs; d++)
    for (int i = 0; i < PG_MAX_NDIM; i++) pg__expr_free(ps->attr[d].expr[i]);
  free(ps->attr);
  ps->attr = NULL;
  ps->n_attrs = 0;
}

/* ---------------------------------------------------------------- evaluation */

/* Expression i of v under dims, as an integer when `what` is set (then it must
 * evaluate to one: "<what> must be an integer, got '<text>' = 2.5"). */
static int eval_item(const struct pg__attr_plan *v, int i, const struct pg_bindings *dims,
                     const char *what, double *x, int *offset, int *unbound,
                     struct pg_error *err) {
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg__expr_eval_float(v->expr[i], dims, x, &e);
  if (rc != PG_OK) {
    *offset = v->offset[i] + (e.column > 0 ? e.column - 1 : 0);
    if (unbound) *unbound = rc == PG_ENOTFOUND;
    return pg_error_set(err, rc, "%s", e.message);
  }
  if (what && (!(*x == floor(*x)) || fabs(*x) > 9.0e15)) {
    *offset = v->offset[i];
    return pg_error_set(err, PG_EINVAL, "%s must be an integer, got '%s' = %g", what,
                        pg__expr_text(v->expr[i]), *x);
  }
  return PG_OK;
}

int pg__pstep_eval_attrs(const struct pg__pstep *ps, const struct pg_bindings *dims,
                         struct pg_attr_value *vals, int *offset, int *unbound,
                         struct pg_error *err) {
  if (unbound) *unbound = 0;
  for (int d = 0; d < ps->n_attrs; d++) {
    const struct pg__attr_plan *a = &ps->attr[d];
    struct pg_attr_value *v = &vals[d];
    if (a->how == PG__ATTR_VALUE) {
      *v = a->value;
      continue;
    }
    memset(v, 0, sizeof *v);
    enum pg_attr_type type = v->type = a->value.type;
    char what[96];
    snprintf(what, sizeof what, "%s: attribute '%s'", ps->pub.kernel->name,
             ps->pub.kernel->attrs[d].name);
    const char *as_int = type == PG_ATTR_INT || type == PG_ATTR_INTS ? what : NULL;
    for (int i = 0; i < a->n; i++) {
      double x = 0;
      PG_RETURN_IF_ERROR(eval_item(a, i, dims, as_int, &x, offset, unbound, err));
      if (type == PG_ATTR_BOOL) v->b = x != 0.0;
      if (type == PG_ATTR_FLOAT) v->f = x, v->i = (int64_t)x;
      if (type == PG_ATTR_INT) v->i = (int64_t)x, v->f = (double)v->i;
      if (type == PG_ATTR_INTS) v->ints[v->n_ints++] = (int64_t)x;
    }
  }
  return PG_OK;
}
