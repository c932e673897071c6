/* phasegate goldens — shape and float expressions (DESIGN.md §3 rule 5, §5).
 *
 * One small recursive-descent parser serves four entry points: shape expressions
 * (int64: integers, dim names, + - * //, parentheses, unary +/-) and float
 * expressions for golden step attributes (doubles, / and //, sqrt/exp/log,
 * true/false, 1e-5), each either checked (syntax only, names reported through a
 * callback) or evaluated against dim bindings. Integer arithmetic is overflow-checked,
 * `//` floors as Python does, and nesting is capped so hostile input cannot exhaust
 * the stack. Errors carry the 1-based column inside the text in err->column.
 * Not for: step syntax (`out = op(args)`), which goldens/steps parses and which calls
 * the float evaluator for attribute values.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/goldens.h"

/* Parentheses and unary signs nested deeper than this are rejected: real shapes use
 * two or three levels, and the cap bounds recursion on adversarial input. */
#define EXPR_MAX_DEPTH 64

enum tok_kind {
  T_END = 0,
  T_INT,    /* digits only */
  T_FLOAT,  /* digits with '.' or an exponent */
  T_NAME,
  T_PLUS,
  T_MINUS,
  T_STAR,
  T_SLASH,  /* '/' */
  T_DSLASH, /* '//' */
  T_POW,    /* '**', rejected with a clear message */
  T_LPAREN,
  T_RPAREN,
  T_BAD
};

struct tok {
  enum tok_kind kind;
  size_t start, len;
};

struct parser {
  const char *s;
  size_t n;
  size_t pos;          /* scan position after `cur` */
  struct tok cur;
  int is_float;        /* float grammar instead of shape grammar */
  int eval;            /* compute values (else check only) */
  const struct pg_bindings *dims;
  pg_expr_name_cb cb;
  void *user;
  struct pg_error *err;
  int depth;
};

/* A value in either grammar: `i` for shapes, `d` for floats. */
struct val {
  int64_t i;
  double d;
};

static int fail(struct parser *p, int code, size_t at, const char *fmt, const char *arg) {
  if (arg)
    pg_error_set(p->err, code, fmt, arg);
  else
    pg_error_set(p->err, code, "%s", fmt);
  if (p->err) p->err->column = (int)(at > (size_t)INT32_MAX - 1 ? INT32_MAX : at + 1);
  return code;
}

/* Fails with the token's text quoted in the message (truncated to keep it short). */
static int fail_tok(struct parser *p, int code, const struct tok *t, const char *fmt) {
  char text[48];
  size_t len = t->len < sizeof text - 1 ? t->len : sizeof text - 1;
  if (t->kind == T_END) {
    snprintf(text, sizeof text, "end of expression");
  } else {
    memcpy(text, p->s + t->start, len);
    text[len] = '\0';
  }
  return fail(p, code, t->start, fmt, text);
}

static int is_name_start(int c) { return isalpha(c) || c == '_'; }
static int is_name_char(int c) { return isalnum(c) || c == '_'; }

/* Scans the next token into p->cur. Never reads past p->n. */
static void next(struct parser *p) {
  const char *s = p->s;
  size_t i = p->pos;
  while (i < p->n && (s[i] == ' ' || s[i] == '\t')) i++;
  struct tok t = {T_END, i, 0};
  if (i >= p->n) {
    p->cur = t;
    p->pos = i;
    return;
  }
  unsigned char c = (unsigned char)s[i];
  size_t j = i + 1;
  if (isdigit(c) || (c == '.' && i + 1 < p->n && isdigit((unsigned char)s[i + 1]))) {
    int is_float = c == '.';
    while (j < p->n && isdigit((unsigned char)s[j])) j++;
    if (j < p->n && s[j] == '.' && !is_float) {
      is_float = 1;
      j++;
      while (j < p->n && isdigit((unsigned char)s[j])) j++;
    }
    if (j < p->n && (s[j] == 'e' || s[j] == 'E')) {
      size_t k = j + 1;
      if (k < p->n && (s[k] == '+' || s[k] == '-')) k++;
      if (k < p->n && isdigit((unsigned char)s[k])) {
        while (k < p->n && isdigit((unsigned char)s[k])) k++;
        j = k;
        is_float = 1;
      }
    }
    /* "12abc" is one bad token, not 12 followed by a name. */
    if (j < p->n && is_name_char((unsigned char)s[j])) {
      while (j < p->n && is_name_char((unsigned char)s[j])) j++;
      t.kind = T_BAD;
    } else {
      t.kind = is_float ? T_FLOAT : T_INT;
    }
  } else if (is_name_start(c)) {
    while (j < p->n && is_name_char((unsigned char)s[j])) j++;
    t.kind = T_NAME;
  } else {
    switch (c) {
      case '+': t.kind = T_PLUS; break;
      case '-': t.kind = T_MINUS; break;
      case '*':
        if (j < p->n && s[j] == '*') {
          j++;
          t.kind = T_POW;
        } else {
          t.kind = T_STAR;
        }
        break;
      case '/':
        if (j < p->n && s[j] == '/') {
          j++;
          t.kind = T_DSLASH;
        } else {
          t.kind = T_SLASH;
        }
        break;
      case '(': t.kind = T_LPAREN; break;
      case ')': t.kind = T_RPAREN; break;
      default:
        /* One whole UTF-8 sequence, so the message quotes a full character. */
        if (c >= 0x80)
          while (j < p->n && ((unsigned char)s[j] & 0xC0) == 0x80 && j - i < 4) j++;
        t.kind = T_BAD;
        break;
    }
  }
  t.len = j - i;
  p->cur = t;
  p->pos = j;
}

static int parse_expr(struct parser *p, struct val *out);

/* Python floor division on int64; the caller has excluded b == 0. */
static int floordiv_i64(int64_t a, int64_t b, int64_t *out) {
  if (a == INT64_MIN && b == -1) return PG_EOVERFLOW;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  *out = q;
  return PG_OK;
}

static int check_finite(struct parser *p, double v, size_t at) {
  if (isfinite(v)) return PG_OK;
  return fail(p, PG_EOVERFLOW, at, "result is not a finite number", NULL);
}

static int parse_int_literal(struct parser *p, const struct tok *t, int64_t *out) {
  int64_t v = 0;
  for (size_t k = 0; k < t->len; k++) {
    int digit = p->s[t->start + k] - '0';
    if (__builtin_mul_overflow(v, (int64_t)10, &v) || __builtin_add_overflow(v, digit, &v))
      return fail_tok(p, PG_EOVERFLOW, t, "integer '%s' is too large (the limit is 2^63-1)");
  }
  *out = v;
  return PG_OK;
}

/* Finds a binding (the last one wins, as pg_bindings_get does); kept local so goldens/
 * does not depend on runner/. */
static int binding_get(const struct pg_bindings *b, const char *name, int64_t *value) {
  if (!b) return 0;
  for (int i = b->count - 1; i >= 0; i--)
    if (b->items[i].name && strcmp(b->items[i].name, name) == 0) {
      *value = b->items[i].value;
      return 1;
    }
  return 0;
}

static int lookup_name(struct parser *p, const struct tok *t, struct val *out) {
  char name[PG_NAME_MAX];
  if (t->len >= sizeof name) return fail_tok(p, PG_EPARSE, t, "name '%s...' is too long");
  memcpy(name, p->s + t->start, t->len);
  name[t->len] = '\0';
  if (!p->eval) {
    if (p->cb) {
      int rc = p->cb(p->user, p->s + t->start, t->len, (int)t->start);
      if (rc != 0) return rc;
    }
    return PG_OK;
  }
  int64_t v;
  if (!binding_get(p->dims, name, &v))
    return fail(p, PG_ENOTFOUND, t->start, "unknown dim '%s'", name);
  out->i = v;
  out->d = (double)v;
  return PG_OK;
}

/* Float grammar only: sqrt(x), exp(x), log(x). `p->cur` is the '(' after the name. */
static int parse_call(struct parser *p, const struct tok *fn, struct val *out) {
  static const char *const fns[] = {"sqrt", "exp", "log"};
  int which = -1;
  for (int k = 0; k < 3; k++)
    if (fn->len == strlen(fns[k]) && memcmp(p->s + fn->start, fns[k], fn->len) == 0) which = k;
  if (which < 0) return fail_tok(p, PG_EPARSE, fn, "unknown function '%s' (known: sqrt, exp, log)");
  next(p); /* '(' */
  size_t arg_at = p->cur.start;
  struct val a = {0, 0};
  PG_RETURN_IF_ERROR(parse_expr(p, &a));
  if (p->cur.kind != T_RPAREN) return fail_tok(p, PG_EPARSE, &p->cur, "expected ')', found '%s'");
  next(p);
  if (!p->eval) return PG_OK;
  double r;
  if (which == 0) {
    if (a.d < 0) return fail(p, PG_EINVAL, arg_at, "sqrt of a negative number", NULL);
    r = sqrt(a.d);
  } else if (which == 1) {
    r = exp(a.d);
  } else {
    if (a.d <= 0) return fail(p, PG_EINVAL, arg_at, "log of a non-positive number", NULL);
    r = log(a.d);
  }
  PG_RETURN_IF_ERROR(check_finite(p, r, fn->start));
  out->d = r;
  return PG_OK;
}

static int enter(struct parser *p) {
  if (++p->depth > EXPR_MAX_DEPTH)
    return fail(p, PG_EPARSE, p->cur.start, "expression nested too deeply (more than 64 levels)",
                NULL);
  return PG_OK;
}

/* primary := INT | FLOAT | NAME | NAME '(' expr ')' | '(' expr ')' */
static int parse_primary(struct parser *p, struct val *out) {
  struct tok t = p->cur;
  switch (t.kind) {
    case T_INT: {
      next(p);
      if (!p->is_float) return parse_int_literal(p, &t, &out->i);
      char buf[64];
      if (t.len >= sizeof buf) return fail_tok(p, PG_EPARSE, &t, "number '%s' is too long");
      memcpy(buf, p->s + t.start, t.len);
      buf[t.len] = '\0';
      out->d = strtod(buf, NULL);
      return check_finite(p, out->d, t.start);
    }
    case T_FLOAT: {
      if (!p->is_float)
        return fail_tok(p, PG_EPARSE, &t, "'%s' is not an integer (shapes are integer expressions)");
      next(p);
      char buf[64];
      if (t.len >= sizeof buf) return fail_tok(p, PG_EPARSE, &t, "number '%s' is too long");
      memcpy(buf, p->s + t.start, t.len);
      buf[t.len] = '\0';
      out->d = strtod(buf, NULL);
      return check_finite(p, out->d, t.start);
    }
    case T_NAME: {
      next(p);
      if (p->cur.kind == T_LPAREN) {
        if (!p->is_float)
          return fail_tok(p, PG_EPARSE, &t, "function call '%s(...)' is not allowed in shapes");
        PG_RETURN_IF_ERROR(enter(p));
        int rc = parse_call(p, &t, out);
        p->depth--;
        return rc;
      }
      if (p->is_float) {
        if (t.len == 4 && memcmp(p->s + t.start, "true", 4) == 0) {
          out->d = 1.0;
          return PG_OK;
        }
        if (t.len == 5 && memcmp(p->s + t.start, "false", 5) == 0) {
          out->d = 0.0;
          return PG_OK;
        }
      }
      return lookup_name(p, &t, out);
    }
    case T_LPAREN: {
      PG_RETURN_IF_ERROR(enter(p));
      next(p);
      PG_RETURN_IF_ERROR(parse_expr(p, out));
      if (p->cur.kind != T_RPAREN)
        return fail_tok(p, PG_EPARSE, &p->cur, "expected ')', found '%s'");
      next(p);
      p->depth--;
      return PG_OK;
    }
    case T_END: return fail(p, PG_EPARSE, t.start, "expected a value at the end of the expression", NULL);
    case T_BAD: return fail_tok(p, PG_EPARSE, &t, "unexpected '%s'");
    default: return fail_tok(p, PG_EPARSE, &t, "expected a value, found '%s'");
  }
}

/* unary := ('+' | '-') unary | primary  — binds tighter than * and //, as in Python. */
static int parse_unary(struct parser *p, struct val *out) {
  if (p->cur.kind == T_PLUS || p->cur.kind == T_MINUS) {
    struct tok op = p->cur;
    PG_RETURN_IF_ERROR(enter(p));
    next(p);
    PG_RETURN_IF_ERROR(parse_unary(p, out));
    p->depth--;
    if (op.kind == T_MINUS && p->eval) {
      if (p->is_float) {
        out->d = -out->d;
      } else {
        if (out->i == INT64_MIN)
          return fail(p, PG_EOVERFLOW, op.start, "integer overflow in negation", NULL);
        out->i = -out->i;
      }
    }
    return PG_OK;
  }
  return parse_primary(p, out);
}

/* term := unary (('*' | '//' | '/') unary)* */
static int parse_term(struct parser *p, struct val *out) {
  PG_RETURN_IF_ERROR(parse_unary(p, out));
  for (;;) {
    struct tok op = p->cur;
    if (op.kind == T_POW) return fail(p, PG_EPARSE, op.start, "'**' (power) is not supported", NULL);
    if (op.kind == T_SLASH && !p->is_float)
      return fail(p, PG_EPARSE, op.start, "'/' is not allowed in shapes; use '//'", NULL);
    if (op.kind != T_STAR && op.kind != T_SLASH && op.kind != T_DSLASH) return PG_OK;
    next(p);
    struct val rhs = {0, 0};
    PG_RETURN_IF_ERROR(parse_unary(p, &rhs));
    if (!p->eval) continue;
    if (p->is_float) {
      if (op.kind == T_STAR) {
        out->d *= rhs.d;
      } else {
        if (rhs.d == 0) return fail(p, PG_EINVAL, op.start, "division by zero", NULL);
        out->d = op.kind == T_SLASH ? out->d / rhs.d : floor(out->d / rhs.d);
      }
      PG_RETURN_IF_ERROR(check_finite(p, out->d, op.start));
    } else if (op.kind == T_STAR) {
      if (__builtin_mul_overflow(out->i, rhs.i, &out->i))
        return fail(p, PG_EOVERFLOW, op.start, "integer overflow in '*'", NULL);
    } else {
      if (rhs.i == 0) return fail(p, PG_EINVAL, op.start, "division by zero", NULL);
      if (floordiv_i64(out->i, rhs.i, &out->i) != PG_OK)
        return fail(p, PG_EOVERFLOW, op.start, "integer overflow in '//'", NULL);
    }
  }
}

/* expr := term (('+' | '-') term)* */
static int parse_expr(struct parser *p, struct val *out) {
  PG_RETURN_IF_ERROR(parse_term(p, out));
  for (;;) {
    struct tok op = p->cur;
    if (op.kind != T_PLUS && op.kind != T_MINUS) return PG_OK;
    next(p);
    struct val rhs = {0, 0};
    PG_RETURN_IF_ERROR(parse_term(p, &rhs));
    if (!p->eval) continue;
    if (p->is_float) {
      out->d = op.kind == T_PLUS ? out->d + rhs.d : out->d - rhs.d;
      PG_RETURN_IF_ERROR(check_finite(p, out->d, op.start));
    } else {
      int ovf = op.kind == T_PLUS ? __builtin_add_overflow(out->i, rhs.i, &out->i)
                                  : __builtin_sub_overflow(out->i, rhs.i, &out->i);
      if (ovf)
        return fail(p, PG_EOVERFLOW, op.start,
                    op.kind == T_PLUS ? "integer overflow in '+'" : "integer overflow in '-'",
                    NULL);
    }
  }
}

/* Parses the whole text; trailing tokens are an error. */
static int run(struct parser *p, struct val *out) {
  if (!p->s) return pg_error_set(p->err, PG_EINVAL, "expression is NULL");
  p->n = strlen(p->s);
  p->pos = 0;
  next(p);
  if (p->cur.kind == T_END) return fail(p, PG_EPARSE, p->cur.start, "empty expression", NULL);
  PG_RETURN_IF_ERROR(parse_expr(p, out));
  if (p->cur.kind == T_RPAREN) return fail(p, PG_EPARSE, p->cur.start, "unmatched ')'", NULL);
  if (p->cur.kind == T_BAD) return fail_tok(p, PG_EPARSE, &p->cur, "unexpected '%s'");
  if (p->cur.kind != T_END)
    return fail_tok(p, PG_EPARSE, &p->cur, "expected an operator, found '%s'");
  return PG_OK;
}

int pg_shape_expr_check(const char *text, pg_expr_name_cb cb, void *user, struct pg_error *err) {
  struct parser p = {.s = text, .cb = cb, .user = user, .err = err};
  struct val v = {0, 0};
  return run(&p, &v);
}

int pg_shape_expr_eval(const char *text, const struct pg_bindings *dims, int64_t *out,
                       struct pg_error *err) {
  struct parser p = {.s = text, .eval = 1, .dims = dims, .err = err};
  struct val v = {0, 0};
  PG_RETURN_IF_ERROR(run(&p, &v));
  if (out) *out = v.i;
  return PG_OK;
}

int pg_float_expr_check(const char *text, pg_expr_name_cb cb, void *user, struct pg_error *err) {
  struct parser p = {.s = text, .is_float = 1, .cb = cb, .user = user, .err = err};
  struct val v = {0, 0};
  return run(&p, &v);
}

int pg_float_expr_eval(const char *text, const struct pg_bindings *dims, double *out,
                       struct pg_error *err) {
  struct parser p = {.s = text, .is_float = 1, .eval = 1, .dims = dims, .err = err};
  struct val v = {0, 0};
  PG_RETURN_IF_ERROR(run(&p, &v));
  if (out) *out = v.d;
  return PG_OK;
}
