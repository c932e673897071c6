/* phasegate goldens/ — built-in golden steps (DESIGN.md §5): the parser for
 * `out = op(arg, …, key=value)` lines, attribute evaluation against a kernel's
 * declared attributes, validation of every module's steps against the contract
 * (pg_goldens_validate) and execution of a module's steps over the named-tensor table.
 *
 * Not here: the kernels themselves (kernels.h), composition across modules and dtype
 * rounding (compose.c), golden plugins (plugin.c).
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

/* ---------------------------------------------------------------- parser */

static int is_name_start(int ch) { return isalpha(ch) || ch == '_'; }
static int is_name_char(int ch) { return isalnum(ch) || ch == '_' || ch == '.'; }

static int skip_ws(const char *s, int i) {
  while (s[i] == ' ' || s[i] == '\t') i++;
  return i;
}

static int parse_error(struct pg_error *err, int offset, const char *fmt, const char *a) {
  pg_error_set(err, PG_EPARSE, fmt, a);
  if (err) err->column = offset + 1;
  return PG_EPARSE;
}

/* Scans a name at i; returns its end (== i when there is none). Tensor names also allow
 * '-' inside (contract names are [A-Za-z0-9_.-]+) but never as the first character. */
static int scan_name(const char *s, int i, int allow_dash) {
  if (!is_name_start((unsigned char)s[i])) return i;
  int j = i + 1;
  while (is_name_char((unsigned char)s[j]) || (allow_dash && s[j] == '-')) j++;
  return j;
}

static int copy_token(char *dst, size_t size, const char *src, int len) {
  if (len < 0 || (size_t)len >= size) return -1;
  memcpy(dst, src, (size_t)len);
  dst[len] = '\0';
  return 0;
}

/* Scans an expression value up to a top-level ',' or the closing ')' / ']' of the
 * enclosing list; returns the end offset (trailing blanks excluded) via *end and the
 * stop offset as the return value, or -1 on unbalanced parentheses. */
static int scan_expr(const char *s, int i, char closer, int *end) {
  int depth = 0, j = i;
  for (; s[j]; j++) {
    char ch = s[j];
    if (ch == '(') depth++;
    else if (ch == ')') {
      if (depth == 0) {
        if (closer == ')') break;
        return -1;
      }
      depth--;
    } else if (depth == 0 && (ch == ',' || ch == closer)) break;
  }
  int e = j;
  while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
  *end = e;
  return j;
}

static int parse_value(const char *s, int i, struct pg__step_attr *a, struct pg_error *err) {
  i = skip_ws(s, i);
  a->value_offset = i;
  if (s[i] == '"' || s[i] == '\'') {
    char q = s[i];
    int j = i + 1;
    while (s[j] && s[j] != q) j++;
    if (!s[j]) return parse_error(err, i, "unterminated string%s", "");
    a->kind = PG__VAL_STRING;
    if (copy_token(a->value, sizeof a->value, s + i + 1, j - i - 1))
      return parse_error(err, i, "string value too long%s", "");
    return j + 1;
  }
  if (s[i] == '[') {
    a->kind = PG__VAL_LIST;
    a->n_items = 0;
    int j = skip_ws(s, i + 1);
    if (s[j] == ']') return j + 1;
    for (;;) {
      j = skip_ws(s, j);
      int end, stop = scan_expr(s, j, ']', &end);
      if (stop < 0) return parse_error(err, j, "unbalanced ')' in list element%s", "");
      if (end == j) return parse_error(err, j, "expected a list element%s", "");
      if (a->n_items == PG_MAX_NDIM)
        return parse_error(err, j, "too many list elements (at most 8)%s", "");
      if (copy_token(a->items[a->n_items], sizeof a->items[0], s + j, end - j))
        return parse_error(err, j, "list element too long%s", "");
      a->item_offsets[a->n_items++] = j;
      if (s[stop] == ']') return stop + 1;
      if (s[stop] != ',') return parse_error(err, stop, "expected ',' or ']' in list%s", "");
      j = stop + 1;
    }
  }
  int end, stop = scan_expr(s, i, ')', &end);
  if (stop < 0) return parse_error(err, i, "unbalanced parentheses in value%s", "");
  if (end == i) return parse_error(err, i, "expected a value after '%s='", a->key);
  a->kind = PG__VAL_EXPR;
  if (copy_token(a->value, sizeof a->value, s + i, end - i))
    return parse_error(err, i, "value too long%s", "");
  return stop;
}

int pg__step_parse(const char *text, struct pg__step *st, struct pg_error *err) {
  memset(st, 0, sizeof *st);
  const char *s = text ? text : "";
  int i = skip_ws(s, 0);
  /* outputs */
  for (;;) {
    int e = scan_name(s, i, 1);
    if (e == i) return parse_error(err, i, "expected an output tensor name%s", "");
    if (st->n_outs == PG_KERNEL_MAX_OUTPUTS)
      return parse_error(err, i, "too many outputs (at most 4)%s", "");
    if (copy_token(st->outs[st->n_outs], sizeof st->outs[0], s + i, e - i))
      return parse_error(err, i, "name too long%s", "");
    st->out_offsets[st->n_outs++] = i;
    i = skip_ws(s, e);
    if (s[i] == ',') {
      i = skip_ws(s, i + 1);
      continue;
    }
    break;
  }
  if (s[i] != '=' || s[i + 1] == '=')
    return parse_error(err, i, "expected '=' after the output name%s", "");
  i = skip_ws(s, i + 1);
  int e = scan_name(s, i, 0);
  if (e == i) return parse_error(err, i, "expected an op name after '='%s", "");
  if (copy_token(st->op, sizeof st->op, s + i, e - i))
    return parse_error(err, i, "op name too long%s", "");
  st->op_offset = i;
  i = skip_ws(s, e);
  if (s[i] != '(') return parse_error(err, i, "expected '(' after '%s'", st->op);
  i = skip_ws(s, i + 1);
  if (s[i] != ')') {
    for (;;) {
      i = skip_ws(s, i);
      int ne = scan_name(s, i, 1);
      int after = skip_ws(s, ne);
      if (ne > i && s[after] == '=' && s[after + 1] != '=') {
        /* key=value; keys are plain identifiers */
        if (st->n_attrs == PG_KERNEL_MAX_ATTRS)
          return parse_error(err, i, "too many attributes (at most 8)%s", "");
        struct pg__step_attr *a = &st->attrs[st->n_attrs];
        if (copy_token(a->key, sizeof a->key, s + i, ne - i))
          return parse_error(err, i, "attribute name too long%s", "");
        for (int k = 0; k < st->n_attrs; k++)
          if (strcmp(st->attrs[k].key, a->key) == 0)
            return parse_error(err, i, "attribute '%s' given twice", a->key);
        a->key_offset = i;
        int r = parse_value(s, after + 1, a, err);
        if (r < 0) return r;
        st->n_attrs++;
        i = skip_ws(s, r);
      } else {
        if (ne == i || (s[after] != ',' && s[after] != ')'))
          return parse_error(err, i,
                             "expected a tensor name (positional arguments are tensors; "
                             "attributes are written key=value)%s", "");
        if (st->n_attrs > 0)
          return parse_error(err, i, "positional argument after a key=value attribute%s", "");
        if (st->n_inputs == PG_KERNEL_MAX_INPUTS)
          return parse_error(err, i, "too many tensor arguments (at most 8)%s", "");
        if (copy_token(st->inputs[st->n_inputs], sizeof st->inputs[0], s + i, ne - i))
          return parse_error(err, i, "name too long%s", "");
        st->input_offsets[st->n_inputs++] = i;
        i = after;
      }
      if (s[i] == ',') {
        i++;
        continue;
      }
      if (s[i] == ')') break;
      if (s[i] == '\0') return parse_error(err, i, "expected ',' or ')': the step ends before its closing ')'%s", "");
      return parse_error(err, i, "expected ',' or ')'%s", "");
    }
  }
  i = skip_ws(s, i + 1);
  if (s[i] != '\0') return parse_error(err, i, "unexpected text after ')'%s", "");
  return PG_OK;
}

/* ---------------------------------------------------------------- kernel lookup */

static const struct pg__kernel_source default_ks = {pg_kernel_find, pg_kernel_list};

static const struct pg__kernel_source *ks_or_default(const struct pg__kernel_source *ks) {
  return ks ? ks : &default_ks;
}

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int sub = prev + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
      row[j] = sub < best ? sub : best;
      prev = cur;
    }
  }
  return row[lb];
}

/* Writes ", did you mean 'x', 'y'?" (close kernel names) or a short list into buf. */
static void suggest_ops(const struct pg__kernel_source *ks, const char *name, char *buf,
                        size_t size) {
  const struct pg_kernel_def *const *defs = NULL;
  int n = ks->list ? ks->list(&defs) : 0;
  size_t used = 0;
  int found = 0;
  buf[0] = '\0';
  size_t nl = strlen(name);
  for (int i = 0; i < n && defs; i++) {
    const char *k = defs[i]->name;
    int d = edit_distance(name, k);
    int close = d <= 2 || (nl >= 3 && strstr(k, name) != NULL) ||
                (strlen(k) >= 4 && strstr(name, k) != NULL);
    if (!close) continue;
    int w = snprintf(buf + used, size - used, "%s'%s'", found ? ", " : "; did you mean ", k);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
    found++;
  }
  if (found) {
    snprintf(buf + used, size - used, "?");
    return;
  }
  if (n == 0) {
    snprintf(buf, size, "; the kernel table is empty");
    return;
  }
  used = (size_t)snprintf(buf, size, "; known ops:");
  for (int i = 0; i < n && defs && used < size; i++) {
    int w = snprintf(buf + used, size - used, " %s", defs[i]->name);
    if (w < 0 || (size_t)w >= size - used) break;
    used += (size_t)w;
  }
}

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

/* The kernel's message without a leading "<op>: " (kernels name themselves; we add
 * the op once). */
static const char *strip_op(const char *msg, const char *op) {
  size_t n = strlen(op);
  if (strncmp(msg, op, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') return msg + n + 2;
  return msg;
}

/* ---------------------------------------------------------------- attributes */

static int n_attr_decls(const struct pg_kernel_def *def) {
  int n = 0;
  while (def->attrs && def->attrs[n].name) n++;
  return n;
}

/* A problem with one step, with its 0-based offset in the step text. */
struct step_problem {
  int code;
  int offset;
  int unbound; /* PG_ENOTFOUND from an expression: a dim is not bound (validation) */
  struct pg_error err;
};

static int problem(struct step_problem *p, int code, int offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int problem(struct step_problem *p, int code, int offset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err.message, sizeof p->err.message, fmt, ap);
  va_end(ap);
  p->code = code;
  p->offset = offset;
  p->unbound = 0;
  return code;
}

static int eval_number(const char *text, int offset, const struct pg_bindings *dims,
                       double *out, struct step_problem *p) {
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg_float_expr_eval(text, dims, out, &e);
  if (rc == PG_OK) return PG_OK;
  int col = e.column > 0 ? e.column - 1 : 0;
  problem(p, rc, offset + col, "%s", e.message);
  p->unbound = rc == PG_ENOTFOUND;
  return rc;
}

static int eval_int(const char *text, int offset, const struct pg_bindings *dims, int64_t *out,
                    const char *what, struct step_problem *p) {
  double v;
  PG_RETURN_IF_ERROR(eval_number(text, offset, dims, &v, p));
  if (!(v == floor(v)) || fabs(v) > 9.0e15)
    return problem(p, PG_EINVAL, offset, "%s must be an integer, got '%s' = %g", what, text, v);
  *out = (int64_t)v;
  return PG_OK;
}

static int is_word(const char *s, const char *w) { return strcmp(s, w) == 0; }

/* Evaluates the attributes of step st for kernel def into vals (in def->attrs order).
 * With check_only, expressions are only syntax-checked (no dims). */
static int eval_attrs(const struct pg__step *st, const struct pg_kernel_def *def,
                      const struct pg_bindings *dims, struct pg_attr_value *vals,
                      struct step_problem *p) {
  int nd = n_attr_decls(def);
  if (nd > PG_KERNEL_MAX_ATTRS) nd = PG_KERNEL_MAX_ATTRS;
  for (int k = 0; k < st->n_attrs; k++) {
    int found = 0;
    for (int d = 0; d < nd; d++) found |= strcmp(def->attrs[d].name, st->attrs[k].key) == 0;
    if (!found) {
      char hint[512];
      suggest_attrs(def, hint, sizeof hint);
      return problem(p, PG_EINVAL, st->attrs[k].key_offset, "%s: unknown attribute '%s'%s",
                     def->name, st->attrs[k].key, hint);
    }
  }
  for (int d = 0; d < nd; d++) {
    const struct pg_attr_decl *decl = &def->attrs[d];
    const struct pg__step_attr *a = NULL;
    for (int k = 0; k < st->n_attrs; k++)
      if (strcmp(st->attrs[k].key, decl->name) == 0) a = &st->attrs[k];
    struct pg_attr_value *v = &vals[d];
    if (!a) {
      if (decl->required)
        return problem(p, PG_EINVAL, st->op_offset, "%s: missing required attribute '%s'",
                       def->name, decl->name);
      *v = decl->default_value;
      v->type = decl->type;
      continue;
    }
    memset(v, 0, sizeof *v);
    v->type = decl->type;
    char what[96];
    snprintf(what, sizeof what, "%s: attribute '%s'", def->name, decl->name);
    switch (decl->type) {
      case PG_ATTR_STRING:
        if (a->kind == PG__VAL_LIST)
          return problem(p, PG_EINVAL, a->value_offset, "%s: expected a word, not a list", what);
        if (copy_token(v->s, sizeof v->s, a->value, (int)strlen(a->value)))
          return problem(p, PG_EINVAL, a->value_offset, "%s: value too long", what);
        break;
      case PG_ATTR_BOOL:
        if (a->kind != PG__VAL_EXPR)
          return problem(p, PG_EINVAL, a->value_offset, "%s: expected true or false", what);
        if (is_word(a->value, "true") || is_word(a->value, "True")) v->b = 1;
        else if (is_word(a->value, "false") || is_word(a->value, "False")) v->b = 0;
        else {
          double x;
          int rc = eval_number(a->value, a->value_offset, dims, &x, p);
          if (rc != PG_OK) return rc;
          v->b = x != 0.0;
        }
        break;
      case PG_ATTR_FLOAT:
        if (a->kind != PG__VAL_EXPR)
          return problem(p, PG_EINVAL, a->value_offset, "%s: expected a number", what);
        PG_RETURN_IF_ERROR(eval_number(a->value, a->value_offset, dims, &v->f, p));
        v->i = (int64_t)v->f;
        break;
      case PG_ATTR_INT:
        if (a->kind != PG__VAL_EXPR)
          return problem(p, PG_EINVAL, a->value_offset, "%s: expected an integer", what);
        PG_RETURN_IF_ERROR(eval_int(a->value, a->value_offset, dims, &v->i, what, p));
        v->f = (double)v->i;
        break;
      case PG_ATTR_INTS:
        if (a->kind == PG__VAL_STRING)
          return problem(p, PG_EINVAL, a->value_offset, "%s: expected a list like [0, 2, 1]",
                         what);
        if (a->kind == PG__VAL_EXPR) {
          PG_RETURN_IF_ERROR(eval_int(a->value, a->value_offset, dims, &v->ints[0], what, p));
          v->n_ints = 1;
        } else {
          for (int k = 0; k < a->n_items; k++)
            PG_RETURN_IF_ERROR(
                eval_int(a->items[k], a->item_offsets[k], dims, &v->ints[k], what, p));
          v->n_ints = a->n_items;
        }
        break;
      default:
        return problem(p, PG_EINTERNAL, a->value_offset, "%s: unknown attribute type", what);
    }
  }
  return PG_OK;
}

/* Syntax-checks expression values without dims (validate, when dims are unbound). */
static int check_attr_syntax(const struct pg__step *st, struct step_problem *p) {
  for (int k = 0; k < st->n_attrs; k++) {
    const struct pg__step_attr *a = &st->attrs[k];
    struct pg_error e;
    pg_error_clear(&e);
    if (a->kind == PG__VAL_EXPR) {
      if (is_word(a->value, "true") || is_word(a->value, "false") ||
          is_word(a->value, "True") || is_word(a->value, "False"))
        continue;
      /* a bare word may be a string attribute ("tanh"): syntax is fine either way */
      int e2 = scan_name(a->value, 0, 0);
      if (e2 > 0 && a->value[e2] == '\0') continue;
      if (pg_float_expr_check(a->value, NULL, NULL, &e) != PG_OK)
        return problem(p, PG_EPARSE, a->value_offset + (e.column > 0 ? e.column - 1 : 0),
                       "attribute '%s': %s", a->key, e.message);
    } else if (a->kind == PG__VAL_LIST) {
      for (int j = 0; j < a->n_items; j++)
        if (pg_float_expr_check(a->items[j], NULL, NULL, &e) != PG_OK)
          return problem(p, PG_EPARSE,
                         a->item_offsets[j] + (e.column > 0 ? e.column - 1 : 0),
                         "attribute '%s': %s", a->key, e.message);
    }
  }
  return PG_OK;
}

/* ---------------------------------------------------------------- meta helpers */

static void format_shape(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                             (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

static enum pg_dtype ref_dtype(int precision_bits) {
  return precision_bits == 64 ? PG_DTYPE_F64 : PG_DTYPE_F32;
}

/* A declared tensor's meta under dims: floats become the reference dtype. Returns
 * PG_OK, PG_ENOTFOUND when a dim is unbound, or another error. */
static int decl_meta(const struct pg_tensor_decl *d, const struct pg_bindings *dims,
                     int precision_bits, struct pg_tensor_meta *m, struct pg_error *err) {
  memset(m, 0, sizeof *m);
  if (d->ndim < 0) return pg_error_set(err, PG_ENOTFOUND, "'%s' declares no shape", d->name);
  m->ndim = d->ndim;
  for (int i = 0; i < d->ndim; i++)
    PG_RETURN_IF_ERROR(pg_shape_expr_eval(d->dims[i], dims, &m->shape[i], err));
  m->dtype = (d->dtype == PG_DTYPE_INVALID || pg_dtype_is_float(d->dtype))
                 ? ref_dtype(precision_bits)
                 : d->dtype;
  return PG_OK;
}

/* ---------------------------------------------------------------- validation */

struct vctx {
  const struct pg_op_graph *c;
  const struct pg__kernel_source *ks;
  pg_golden_finding_cb cb;
  void *user;
  int errors;
  int failed; /* the first error code the callback returned */
  int oom;
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
  int rc = v->cb ? v->cb(v->user, v->c->path ? v->c->path : "<contract>", line, column,
                         "golden", msg)
                 : PG_OK;
  if (rc != PG_OK && v->failed == PG_OK) v->failed = rc;
  v->errors++;
}

/* Validates one golden spec (module m, or op level when m is NULL) over tab, which
 * holds metas of every tensor visible to it; adds the step-locals to tab. */
static int validate_spec(struct vctx *v, const struct pg_module *m, const struct pg_golden_spec *g,
                         struct pg__gtable *tab) {
  const struct pg_bindings *dims = &v->c->dims;
  for (int s = 0; s < g->n_steps; s++) {
    const struct pg_golden_step *gs = &g->steps[s];
    int line = gs->mark.line, col0 = gs->mark.column > 0 ? gs->mark.column : 1;
    struct pg__step st;
    struct pg_error e;
    pg_error_clear(&e);
    if (pg__step_parse(gs->text, &st, &e) != PG_OK) {
      vdiag(v, line, col0 + e.column - 1, "%s", e.message);
      v->unparsed++; /* its outputs are unknown: do not report them missing too */
      continue;
    }
    const struct pg_kernel_def *def = ks_or_default(v->ks)->find(st.op);
    int ok = 1;
    if (!def) {
      char hint[768];
      suggest_ops(ks_or_default(v->ks), st.op, hint, sizeof hint);
      vdiag(v, line, col0 + st.op_offset, "unknown op '%s'%s", st.op, hint);
      ok = 0;
    }
    struct pg_tensor_meta in_meta[PG_KERNEL_MAX_INPUTS];
    int all_known = 1;
    for (int i = 0; i < st.n_inputs; i++) {
      struct pg__gtensor *t = pg__gtable_resolve(tab, m, st.inputs[i]);
      if (!t) {
        vdiag(v, line, col0 + st.input_offsets[i],
              "unknown tensor '%s' (not a primary input, an earlier module's output or an "
              "earlier step's output)",
              st.inputs[i]);
        ok = 0;
        continue;
      }
      in_meta[i] = t->meta;
      all_known &= t->known;
    }
    if (def) {
      if (st.n_inputs < def->min_inputs || st.n_inputs > def->max_inputs) {
        if (def->min_inputs == def->max_inputs)
          vdiag(v, line, col0 + st.op_offset, "%s: takes %d tensor argument%s, got %d",
                def->name, def->min_inputs, def->min_inputs == 1 ? "" : "s", st.n_inputs);
        else
          vdiag(v, line, col0 + st.op_offset, "%s: takes %d to %d tensor arguments, got %d",
                def->name, def->min_inputs, def->max_inputs, st.n_inputs);
        ok = 0;
      }
      if (st.n_outs != def->n_outputs) {
        vdiag(v, line, col0 + st.out_offsets[0], "%s: produces %d output%s, the step names %d",
              def->name, def->n_outputs, def->n_outputs == 1 ? "" : "s", st.n_outs);
        ok = 0;
      }
    }
    struct step_problem p;
    memset(&p, 0, sizeof p);
    if (check_attr_syntax(&st, &p) != PG_OK) {
      vdiag(v, line, col0 + p.offset, "%s", p.err.message);
      ok = 0;
    }
    struct pg_tensor_meta out_meta[PG_KERNEL_MAX_OUTPUTS];
    memset(out_meta, 0, sizeof out_meta);
    int known = 0;
    if (def && ok) {
      struct pg_attr_value vals[PG_KERNEL_MAX_ATTRS];
      memset(vals, 0, sizeof vals);
      int rc = eval_attrs(&st, def, dims, vals, &p);
      if (rc != PG_OK && !p.unbound) {
        vdiag(v, line, col0 + p.offset, "%s", p.err.message);
        ok = 0;
      } else if (rc == PG_OK && all_known && def->infer) {
        pg_error_clear(&e);
        if (def->infer(in_meta, st.n_inputs, vals, out_meta, &e) != PG_OK) {
          vdiag(v, line, col0 + st.op_offset, "%s: %s", def->name, strip_op(e.message, def->name));
          ok = 0;
        } else {
          known = 1;
        }
      }
    }
    /* outputs become visible even after an error, so later steps do not cascade */
    for (int o = 0; o < st.n_outs; o++) {
      struct pg__gtensor *t;
      if (pg__gtable_add(tab, st.outs[o], -1, &t, NULL) != PG_OK) {
        v->oom = 1;
        return PG_ENOMEM;
      }
      t->known = known && ok;
      t->meta = out_meta[o < PG_KERNEL_MAX_OUTPUTS ? o : 0];
    }
  }
  return PG_OK;
}

/* A plugin golden names a C symbol: it must be an identifier. */
static void check_plugin_name(struct vctx *v, const struct pg_golden_spec *g) {
  const char *p = g->plugin ? g->plugin : "";
  int ok = is_name_start((unsigned char)p[0]);
  for (const char *q = p; ok && *q; q++) ok = isalnum((unsigned char)*q) || *q == '_';
  if (!ok)
    vdiag(v, g->mark.line, g->mark.column,
          "golden plugin '%s' is not a C identifier (the name of the exported function)", p);
}

int pg__goldens_validate_ks(const struct pg_op_graph *c, const struct pg__kernel_source *ks,
                            pg_golden_finding_cb cb, void *user) {
  if (!c) return PG_EINVAL;
  struct vctx v = {c, ks, cb, user, 0, PG_OK, 0, 0};
  struct pg__gtable tab;
  pg__gtable_init(&tab);
  int rc = PG_OK;
  /* primary inputs */
  for (int i = 0; i < c->n_primary && rc == PG_OK; i++) {
    struct pg__gtensor *t;
    rc = pg__gtable_add(&tab, c->primary_inputs[i].name, 0, &t, NULL);
    if (rc == PG_OK)
      t->known = decl_meta(&c->primary_inputs[i], &c->dims, 32, &t->meta, NULL) == PG_OK;
  }
  for (int mi = 0; mi < c->n_modules && rc == PG_OK; mi++) {
    const struct pg_module *m = &c->modules[mi];
    if (m->golden.kind == PG_GOLDEN_PLUGIN) check_plugin_name(&v, &m->golden);
    if (m->golden.kind == PG_GOLDEN_STEPS) {
      int before = v.errors;
      v.unparsed = 0;
      rc = validate_spec(&v, m, &m->golden, &tab);
      if (rc != PG_OK) break;
      for (int o = 0; o < m->n_outputs; o++) {
        const struct pg_tensor_decl *d = &m->outputs[o];
        struct pg__gtensor *t = NULL;
        for (int j = tab.count - 1; j >= 0 && !t; j--)
          if (tab.items[j]->module == -1 && strcmp(tab.items[j]->name, d->name) == 0)
            t = tab.items[j];
        int line = d->mark.line ? d->mark.line : m->golden.mark.line;
        int col = d->mark.line ? d->mark.column : m->golden.mark.column;
        if (!t) {
          if (v.unparsed) continue;
          vdiag(&v, line, col,
                "module %d (%s): no golden step produces declared output '%s'", m->id,
                m->name ? m->name : "?", d->name);
          continue;
        }
        struct pg_tensor_meta dm;
        if (t->known && v.errors == before &&
            decl_meta(d, &c->dims, 32, &dm, NULL) == PG_OK) {
          int same = dm.ndim == t->meta.ndim;
          for (int a = 0; same && a < dm.ndim; a++) same = dm.shape[a] == t->meta.shape[a];
          if (!same) {
            char got[160], want[160];
            format_shape(t->meta.shape, t->meta.ndim, got, sizeof got);
            format_shape(dm.shape, dm.ndim, want, sizeof want);
            vdiag(&v, line, col,
                  "module %d (%s): golden steps compute '%s' with shape %s, the contract "
                  "declares %s",
                  m->id, m->name ? m->name : "?", d->name, got, want);
          }
        }
      }
    }
    /* the module's outputs as later modules see them: declared shape and dtype */
    pg__gtable_promote(&tab, m);
    for (int o = 0; o < m->n_outputs; o++) {
      const struct pg_tensor_decl *d = &m->outputs[o];
      struct pg__gtensor *t = NULL;
      for (int j = tab.count - 1; j >= 0 && !t; j--)
        if (tab.items[j]->module == m->id && strcmp(tab.items[j]->name, d->name) == 0)
          t = tab.items[j];
      if (!t) {
        rc = pg__gtable_add(&tab, d->name, m->id, &t, NULL);
        if (rc != PG_OK) break;
        t->known = 0;
      }
      struct pg_tensor_meta dm;
      if (decl_meta(d, &c->dims, 32, &dm, NULL) == PG_OK) {
        t->meta = dm;
        t->known = 1;
      } else if (t->known) {
        /* keep the inferred shape, but the dtype is the declared one */
        if (d->dtype != PG_DTYPE_INVALID && !pg_dtype_is_float(d->dtype)) t->meta.dtype = d->dtype;
      }
    }
  }
  /* op-level golden: steps over the primary inputs, producing the final outputs */
  if (rc == PG_OK && c->op_golden.kind == PG_GOLDEN_PLUGIN) check_plugin_name(&v, &c->op_golden);
  if (rc == PG_OK && c->op_golden.kind == PG_GOLDEN_STEPS) {
    struct pg__gtable optab;
    pg__gtable_init(&optab);
    for (int i = 0; i < tab.count && rc == PG_OK; i++) {
      if (tab.items[i]->module != 0) continue;
      struct pg__gtensor *t;
      rc = pg__gtable_add(&optab, tab.items[i]->name, 0, &t, NULL);
      if (rc == PG_OK) {
        t->meta = tab.items[i]->meta;
        t->known = tab.items[i]->known;
      }
    }
    v.unparsed = 0;
    if (rc == PG_OK) rc = validate_spec(&v, NULL, &c->op_golden, &optab);
    /* the final outputs: final_outputs, or module N's outputs when there are none */
    const struct pg_tensor_decl *finals[PG_MAX_BOUNDARY_OUTPUTS];
    int nf = c->n_modules > 0 ? pg_graph_boundary(c, c->n_modules, finals,
                                                     PG_MAX_BOUNDARY_OUTPUTS, NULL)
                              : 0;
    for (int f = 0; f < nf && rc == PG_OK; f++) {
      const struct pg_tensor_decl *d = finals[f];
      int found = 0;
      for (int j = 0; j < optab.count; j++)
        found |= optab.items[j]->module == -1 && strcmp(optab.items[j]->name, d->name) == 0;
      if (!found && !v.unparsed)
        vdiag(&v, c->op_golden.mark.line, c->op_golden.mark.column,
              "op-level golden: no step produces final output '%s'", d->name);
    }
    pg__gtable_reset(&optab);
  }
  pg__gtable_reset(&tab);
  if (v.oom || rc == PG_ENOMEM) return PG_ENOMEM;
  if (rc != PG_OK) return rc;
  if (v.failed != PG_OK) return v.failed;
  return v.errors;
}

int pg_goldens_validate(const struct pg_op_graph *g, pg_golden_finding_cb cb, void *user) {
  return pg__goldens_validate_ks(g, NULL, cb, user);
}

/* ---------------------------------------------------------------- execution */

/* Built-in kernels that may write their output over their single input: each output
 * element (softmax: each line) is computed from input values read before it is
 * written, in disjoint ranges per thread. (identity is not: memcpy onto itself.) */
static int in_place_kernel(const struct pg_kernel_def *def) {
  static const char *const names[] = {"abs",  "cast", "exp",  "gelu",  "log",     "log_softmax",
                                      "neg",  "relu", "rsqrt", "scale", "sigmoid", "silu",
                                      "softmax", "sqrt", "tanh"};
  if (def->max_inputs != 1 || def->n_outputs != 1 || def != pg_kernel_find(def->name)) return 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(def->name, names[i]) == 0) return 1;
  return 0;
}

/* Does a step after `s` of g mention tensor `name` as an input (unparsable: yes)? */
static int later_step_reads(const struct pg_golden_spec *g, int s, const char *name) {
  for (int j = s + 1; j < g->n_steps; j++) {
    struct pg__step st;
    if (pg__step_parse(g->steps[j].text, &st, NULL) != PG_OK) return 1;
    for (int i = 0; i < st.n_inputs; i++)
      if (strcmp(st.inputs[i], name) == 0) return 1;
  }
  return 0;
}

/* The input whose buffer step s may take over for its output, or NULL: an owned
 * buffer of the output's dtype and size that nothing reads afterwards (no later step
 * of this module, no later module of the phase, not a boundary output, not a local
 * that becomes one of this module's outputs). Saves a fresh buffer (its page faults
 * or population) and keeps the data in cache. */
static struct pg__gtensor *in_place_source(const struct pg__run_ctx *rc,
                                           const struct pg_module *m,
                                           const struct pg_golden_spec *g, int s,
                                           const struct pg_kernel_def *def,
                                           struct pg__gtensor *src,
                                           const struct pg_tensor_meta *om) {
  if (!rc->read_later || !m || !src || !src->t.owned || !in_place_kernel(def)) return NULL;
  if (src->t.dtype != om->dtype || src->t.dl.ndim != om->ndim) return NULL;
  for (int a = 0; a < om->ndim; a++)
    if (src->t.shape[a] != om->shape[a]) return NULL;
  if (later_step_reads(g, s, src->name)) return NULL;
  if (src->module == -1) {
    for (int o = 0; o < m->n_outputs; o++)
      if (m->outputs[o].name && strcmp(m->outputs[o].name, src->name) == 0) return NULL;
    return src;
  }
  return rc->read_later(rc->live, src, m->id) ? NULL : src;
}

int pg__steps_run(const struct pg__run_ctx *rc, const struct pg_module *m,
                  const struct pg_golden_spec *g, struct pg__gtable *tab, struct pg_error *err) {
  const struct pg__kernel_source *ks = ks_or_default(rc->ks);
  const char *path = rc->graph && rc->graph->path ? rc->graph->path : "<contract>";
  for (int s = 0; s < g->n_steps; s++) {
    const struct pg_golden_step *gs = &g->steps[s];
    int line = gs->mark.line, col0 = gs->mark.column > 0 ? gs->mark.column : 1;
    struct pg__step st;
    struct pg_error e;
    pg_error_clear(&e);
    if (pg__step_parse(gs->text, &st, &e) != PG_OK)
      return pg_error_set_at(err, PG_EPARSE, path, line, col0 + e.column - 1, "%s (golden)",
                             e.message);
    const struct pg_kernel_def *def = ks->find(st.op);
    if (!def) {
      char hint[768];
      suggest_ops(ks, st.op, hint, sizeof hint);
      return pg_error_set_at(err, PG_ENOTFOUND, path, line, col0 + st.op_offset,
                             "unknown op '%s'%s (golden)", st.op, hint);
    }
    if (st.n_inputs < def->min_inputs || st.n_inputs > def->max_inputs ||
        st.n_outs != def->n_outputs)
      return pg_error_set_at(err, PG_EINVAL, path, line, col0 + st.op_offset,
                             "%s: wrong number of tensor arguments or outputs (golden)",
                             def->name);
    struct pg_kernel_args args;
    memset(&args, 0, sizeof args);
    args.n_inputs = st.n_inputs;
    args.n_threads = rc->n_threads;
    struct pg_tensor_meta in_meta[PG_KERNEL_MAX_INPUTS];
    struct pg__gtensor *src0 = NULL;
    for (int i = 0; i < st.n_inputs; i++) {
      struct pg__gtensor *t = pg__gtable_resolve(tab, m, st.inputs[i]);
      if (i == 0) src0 = t;
      if (!t || !t->t.dl.data)
        return pg_error_set_at(err, PG_ENOTFOUND, path, line, col0 + st.input_offsets[i],
                               "unknown tensor '%s' (golden)", st.inputs[i]);
      args.inputs[i] = &t->t;
      in_meta[i].dtype = t->t.dtype;
      in_meta[i].ndim = t->t.dl.ndim;
      for (int a = 0; a < t->t.dl.ndim; a++) in_meta[i].shape[a] = t->t.shape[a];
    }
    struct step_problem p;
    memset(&p, 0, sizeof p);
    if (eval_attrs(&st, def, rc->dims, args.attrs, &p) != PG_OK)
      return pg_error_set_at(err, p.code, path, line, col0 + p.offset, "%s (golden)",
                             p.err.message);
    args.n_attrs = n_attr_decls(def) < PG_KERNEL_MAX_ATTRS ? n_attr_decls(def) : PG_KERNEL_MAX_ATTRS;
    struct pg_tensor_meta out_meta[PG_KERNEL_MAX_OUTPUTS];
    memset(out_meta, 0, sizeof out_meta);
    pg_error_clear(&e);
    int r = def->infer ? def->infer(in_meta, st.n_inputs, args.attrs, out_meta, &e)
                       : pg_error_set(&e, PG_EINTERNAL, "kernel has no infer function");
    if (r != PG_OK)
      return pg_error_set_at(err, r, path, line, col0 + st.op_offset, "%s: %s (golden)",
                             def->name, strip_op(e.message, def->name));
    struct pg_tensor *outs[PG_KERNEL_MAX_OUTPUTS];
    struct pg__gtensor *same = in_place_source(rc, m, g, s, def, src0, &out_meta[0]);
    for (int o = 0; o < st.n_outs; o++) {
      struct pg__gtensor *t;
      PG_RETURN_IF_ERROR(pg__gtable_add(tab, st.outs[o], -1, &t, err));
      pg_tensor_set_name(&t->t, st.outs[o]);
      if (same) { /* the output takes over the input's buffer; the input entry is empty */
        r = pg_tensor_describe(&t->t, out_meta[o].dtype, out_meta[o].ndim, out_meta[o].shape, &e);
        if (r == PG_OK) {
          t->t.owned = same->t.owned;
          t->t.release = same->t.release;
          t->t.release_ctx = same->t.release_ctx;
          t->t.dl.data = same->t.dl.data;
          same->t.owned = NULL;
          same->t.release = NULL;
          same->t.release_ctx = NULL;
          /* the input stays readable through args.inputs[0] (same pointer) */
        }
      } else {
        r = pg__golden_alloc_from(rc->pool, &t->t, out_meta[o].dtype, out_meta[o].ndim,
                                  out_meta[o].shape, &e);
      }
      if (r != PG_OK)
        return pg_error_set_at(err, r, path, line, col0 + st.out_offsets[o], "%s: %s (golden)",
                               def->name, strip_op(e.message, def->name));
      t->meta = out_meta[o];
      t->known = 1;
      outs[o] = &t->t;
    }
    pg_error_clear(&e);
    r = def->run(&args, outs, &e);
    if (same) same->t.dl.data = NULL; /* its buffer is the output's now */
    if (r != PG_OK)
      return pg_error_set_at(err, r, path, line, col0 + st.op_offset, "%s: %s (golden)",
                             def->name, strip_op(e.message, def->name));
  }
  return PG_OK;
}
