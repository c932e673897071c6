/* phasegate goldens/ — the golden step parser (docs/design.md §5): one line
 * `outs = op(arg, …, key=value)`, or the infix `out = a - b` / `out = a + b` (sub / add),
 * into struct pg__step with the 0-based offset of every token, so each finding can
 * point inside the step. Syntax only: kernels, tensor names and attribute types are
 * the plan's (plan.c). No allocation.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "golden_private.h"

int pg__is_name_start(int ch) { return isalpha(ch) || ch == '_'; }
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
int pg__scan_name(const char *s, int i, int allow_dash) {
  if (!pg__is_name_start((unsigned char)s[i])) return i;
  int j = i + 1;
  while (is_name_char((unsigned char)s[j]) || (allow_dash && s[j] == '-')) j++;
  return j;
}

int pg__copy_token(char *dst, size_t size, const char *src, int len) {
  if (len < 0 || (size_t)len >= size) return -1;
  memcpy(dst, src, (size_t)len);
  dst[len] = '\0';
  return 0;
}

/* Appends token s[i..e) to a list of names (rows of `stride` bytes at base, their
 * offsets, *count of at most max), or fails with `too_many` / `too_long`. */
static int push_token(char *base, size_t stride, int *offsets, int *count, int max,
                      const char *s, int i, int e, const char *too_many, const char *too_long,
                      struct pg_error *err) {
  if (*count == max) return parse_error(err, i, "%s", too_many);
  if (pg__copy_token(base + (size_t)*count * stride, stride, s + i, e - i))
    return parse_error(err, i, "%s", too_long);
  offsets[(*count)++] = i;
  return PG_OK;
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
    if (pg__copy_token(a->value, sizeof a->value, s + i + 1, j - i - 1))
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
      PG_RETURN_IF_ERROR(push_token(a->items[0], sizeof a->items[0], a->item_offsets,
                                    &a->n_items, PG_MAX_NDIM, s, j, end,
                                    "too many list elements (at most 8)",
                                    "list element too long", err));
      if (s[stop] == ']') return stop + 1;
      if (s[stop] != ',') return parse_error(err, stop, "expected ',' or ']' in list%s", "");
      j = stop + 1;
    }
  }
  int end, stop = scan_expr(s, i, ')', &end);
  if (stop < 0) return parse_error(err, i, "unbalanced parentheses in value%s", "");
  if (end == i) return parse_error(err, i, "expected a value after '%s='", a->key);
  a->kind = PG__VAL_EXPR;
  if (pg__copy_token(a->value, sizeof a->value, s + i, end - i))
    return parse_error(err, i, "value too long%s", "");
  return stop;
}


/* The outputs `a, b =`; returns the offset after '=' or a negative code. */
static int parse_outputs(const char *s, int i, struct pg__step *st, struct pg_error *err) {
  for (;;) {
    int e = pg__scan_name(s, i, 1);
    if (e == i) return parse_error(err, i, "expected an output tensor name%s", "");
    PG_RETURN_IF_ERROR(push_token(st->outs[0], sizeof st->outs[0], st->out_offsets, &st->n_outs,
                                  PG_KERNEL_MAX_OUTPUTS, s, i, e, "too many outputs (at most 4)",
                                  "name too long", err));
    i = skip_ws(s, e);
    if (s[i] != ',') break;
    i = skip_ws(s, i + 1);
  }
  if (s[i] != '=' || s[i + 1] == '=')
    return parse_error(err, i, "expected '=' after the output name%s", "");
  return i + 1;
}

/* Adds tensor argument s[i..e) to st. */
static int add_input(const char *s, int i, int e, struct pg__step *st, struct pg_error *err) {
  return push_token(st->inputs[0], sizeof st->inputs[0], st->input_offsets, &st->n_inputs,
                    PG_KERNEL_MAX_INPUTS, s, i, e, "too many tensor arguments (at most 8)",
                    "name too long", err);
}

/* `a - b` / `a + b` at i (the first operand's start, a name ending at e): blanks on both
 * sides of the operator, as names may hold '-'. Returns the end offset, 0 when the text
 * is not infix (the caller reports its own error), or a negative code. */
static int parse_infix(const char *s, int i, int e, struct pg__step *st, struct pg_error *err) {
  int o = skip_ws(s, e);
  if (o == e || (s[o] != '-' && s[o] != '+') || (s[o + 1] != ' ' && s[o + 1] != '\t')) return 0;
  snprintf(st->op, sizeof st->op, "%s", s[o] == '-' ? "sub" : "add");
  st->op_offset = o;
  PG_RETURN_IF_ERROR(add_input(s, i, e, st, err));
  int j = skip_ws(s, o + 1), je = pg__scan_name(s, j, 1);
  if (je == j)
    return parse_error(err, j, "expected a tensor name after '%s'", s[o] == '-' ? "-" : "+");
  PG_RETURN_IF_ERROR(add_input(s, j, je, st, err));
  return je;
}

/* One `key=value` attribute at i (key ends at ne, '=' at eq); returns the offset after
 * the value or a negative code. */
static int parse_attr(const char *s, int i, int ne, int eq, struct pg__step *st,
                      struct pg_error *err) {
  if (st->n_attrs == PG_KERNEL_MAX_ATTRS)
    return parse_error(err, i, "too many attributes (at most 8)%s", "");
  struct pg__step_attr *a = &st->attrs[st->n_attrs];
  if (pg__copy_token(a->key, sizeof a->key, s + i, ne - i))
    return parse_error(err, i, "attribute name too long%s", "");
  for (int k = 0; k < st->n_attrs; k++)
    if (strcmp(st->attrs[k].key, a->key) == 0)
      return parse_error(err, i, "attribute '%s' given twice", a->key);
  a->key_offset = i;
  int r = parse_value(s, eq + 1, a, err);
  if (r < 0) return r;
  st->n_attrs++;
  return skip_ws(s, r);
}

/* The argument list after '(' at i; returns the offset of the closing ')'. */
static int parse_args(const char *s, int i, struct pg__step *st, struct pg_error *err) {
  if (s[i] == ')') return i;
  for (;;) {
    i = skip_ws(s, i);
    int ne = pg__scan_name(s, i, 1);
    int after = skip_ws(s, ne);
    if (ne > i && s[after] == '=' && s[after + 1] != '=') { /* key=value */
      i = parse_attr(s, i, ne, after, st, err);
      if (i < 0) return i;
    } else {
      if (ne == i || (s[after] != ',' && s[after] != ')'))
        return parse_error(err, i,
                           "expected a tensor name (positional arguments are tensors; "
                           "attributes are written key=value)%s", "");
      if (st->n_attrs > 0)
        return parse_error(err, i, "positional argument after a key=value attribute%s", "");
      PG_RETURN_IF_ERROR(add_input(s, i, ne, st, err));
      i = after;
    }
    if (s[i] == ',') {
      i++;
      continue;
    }
    if (s[i] == ')') return i;
    if (s[i] == '\0')
      return parse_error(err, i, "expected ',' or ')': the step ends before its closing ')'%s", "");
    return parse_error(err, i, "expected ',' or ')'%s", "");
  }
}

int pg__step_parse(const char *text, struct pg__step *st, struct pg_error *err) {
  memset(st, 0, sizeof *st);
  const char *s = text ? text : "";
  int i = parse_outputs(s, skip_ws(s, 0), st, err);
  if (i < 0) return i;
  i = skip_ws(s, i);
  int e = pg__scan_name(s, i, 0);
  if (e == i) return parse_error(err, i, "expected an op name after '='%s", "");
  int infix = pg__scan_name(s, i, 1);
  int r = parse_infix(s, i, infix, st, err);
  if (r < 0) return r;
  if (r > 0) {
    i = skip_ws(s, r);
    if (s[i] != '\0') return parse_error(err, i, "unexpected text after '%s'", st->inputs[1]);
  } else {
    if (pg__copy_token(st->op, sizeof st->op, s + i, e - i))
      return parse_error(err, i, "op name too long%s", "");
    st->op_offset = i;
    i = skip_ws(s, e);
    if (s[i] != '(') return parse_error(err, i, "expected '(' after '%s'", st->op);
    i = parse_args(s, skip_ws(s, i + 1), st, err);
    if (i < 0) return i;
    i = skip_ws(s, i + 1);
  }
  if (s[i] != '\0') return parse_error(err, i, "unexpected text after ')'%s", "");
  return PG_OK;
}
