/* phasegate goldens — shape and float expressions (docs/design.md §3 rule 5, §5).
 *
 * One small recursive-descent parser serves four entry points: shape expressions
 * (int64: integers, dim names, + - * //, parentheses, unary +/-) and float
 * expressions for golden step attributes (doubles, / and //, sqrt/exp/log,
 * true/false, 1e-5), each either checked (syntax only, names reported through a
 * callback) or evaluated against dim bindings. Integer arithmetic is overflow-checked,
 * `//` floors as Python does, and nesting is capped so hostile input cannot exhaust
 * the stack. Errors carry the 1-based column inside the text in err->column.
 * Expressions can also be compiled once (pg__expr_compile: the golden plan compiles
 * every step attribute) and evaluated per set of dims with the same semantics and
 * messages as evaluating the text.
 * Not for: step syntax (`out = op(args)`), which goldens/parse.c parses.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "golden_private.h"

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
  struct pg__expr *prog; /* compile: append the operations here (eval stays 0) */
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

/* ---------------------------------------------------------------- compiled form
 *
 * A compiled expression is its operations in postfix order, each with the offset its
 * error would point at; evaluating it applies the same semantics (below) as evaluating
 * the text, in the same order, so values, codes and messages are identical. */

enum op_kind { OP_NUM = 0, OP_DIM, OP_NEG, OP_BIN, OP_CALL };

struct expr_op {
  enum op_kind kind;
  enum tok_kind bin;  /* OP_BIN: T_PLUS, T_MINUS, T_STAR, T_SLASH or T_DSLASH */
  int fn;             /* OP_CALL: 0 sqrt, 1 exp, 2 log */
  size_t at, at2;     /* error offsets: the operator / name / function; the argument */
  size_t len;         /* OP_DIM: the name is text[at .. at + len) */
  struct val v;       /* OP_NUM */
};

/* Values pending while a program runs: nesting is capped at EXPR_MAX_DEPTH levels and
 * each level holds at most two pending operands, so this is never reached. */
#define EXPR_STACK (2 * EXPR_MAX_DEPTH + 8)

struct pg__expr {
  int is_float;
  int n, cap;
  int height, max_height; /* values on the stack after the ops so far, and the most */
  struct expr_op *ops;
  char *text;             /* a copy of the source: names and messages refer to it */
};

/* Appends an operation when compiling; a no-op otherwise. */
static int emit(struct parser *p, struct expr_op op) {
  struct pg__expr *e = p->prog;
  if (!e) return PG_OK;
  if (e->n == e->cap) {
    int cap = e->cap ? e->cap * 2 : 8;
    struct expr_op *ops = realloc(e->ops, (size_t)cap * sizeof *ops);
    if (!ops) return pg_error_set(p->err, PG_ENOMEM, "out of memory compiling an expression");
    e->ops = ops;
    e->cap = cap;
  }
  e->ops[e->n++] = op;
  e->height += op.kind == OP_NUM || op.kind == OP_DIM ? 1 : op.kind == OP_BIN ? -1 : 0;
  if (e->height > e->max_height) e->max_height = e->height;
  if (e->max_height > EXPR_STACK)
    return fail(p, PG_ELIMIT, op.at, "expression too complex to compile", NULL);
  return PG_OK;
}

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

/* The value of dim p->s[at .. at + len) (len < PG_NAME_MAX) under p->dims. */
static int ev_dim(struct parser *p, size_t at, size_t len, struct val *out) {
  char name[PG_NAME_MAX];
  memcpy(name, p->s + at, len);
  name[len] = '\0';
  int64_t v;
  if (!binding_get(p->dims, name, &v)) return fail(p, PG_ENOTFOUND, at, "unknown dim '%s'", name);
  out->i = v;
  out->d = (double)v;
  return PG_OK;
}

static int lookup_name(struct parser *p, const struct tok *t, struct val *out) {
  if (t->len >= PG_NAME_MAX) return fail_tok(p, PG_EPARSE, t, "name '%s...' is too long");
  if (p->eval) return ev_dim(p, t->start, t->len, out);
  if (p->cb) {
    int rc = p->cb(p->user, p->s + t->start, t->len, (int)t->start);
    if (rc != 0) return rc;
  }
  return emit(p, (struct expr_op){.kind = OP_DIM, .at = t->start, .len = t->len});
}

/* sqrt (fn 0), exp (1) or log (2) of *v in place; errors point at the argument
 * (domain) or the function name (overflow). */
static int ev_call(struct parser *p, int fn, size_t fn_at, size_t arg_at, struct val *v) {
  double r;
  if (fn == 0) {
    if (v->d < 0) return fail(p, PG_EINVAL, arg_at, "sqrt of a negative number", NULL);
    r = sqrt(v->d);
  } else if (fn == 1) {
    r = exp(v->d);
  } else {
    if (v->d <= 0) return fail(p, PG_EINVAL, arg_at, "log of a non-positive number", NULL);
    r = log(v->d);
  }
  PG_RETURN_IF_ERROR(check_finite(p, r, fn_at));
  v->d = r;
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
  PG_RETURN_IF_ERROR(parse_expr(p, out));
  if (p->cur.kind != T_RPAREN) return fail_tok(p, PG_EPARSE, &p->cur, "expected ')', found '%s'");
  next(p);
  if (!p->eval)
    return emit(p, (struct expr_op){.kind = OP_CALL, .fn = which, .at = fn->start, .at2 = arg_at});
  return ev_call(p, which, fn->start, arg_at, out);
}

static int enter(struct parser *p) {
  if (++p->depth > EXPR_MAX_DEPTH)
    return fail(p, PG_EPARSE, p->cur.start, "expression nested too deeply (more than 64 levels)",
                NULL);
  return PG_OK;
}

/* -x in place (int64 negation is overflow-checked). */
static int ev_neg(struct parser *p, size_t at, struct val *v) {
  if (p->is_float) {
    v->d = -v->d;
    return PG_OK;
  }
  if (v->i == INT64_MIN) return fail(p, PG_EOVERFLOW, at, "integer overflow in negation", NULL);
  v->i = -v->i;
  return PG_OK;
}

/* lhs = lhs OP rhs for OP in + - * / //, with the grammar's overflow and division
 * checks; errors point at the operator. */
static int ev_bin(struct parser *p, enum tok_kind op, size_t at, struct val *lhs,
                  const struct val *rhs) {
  if (p->is_float) {
    if (op == T_PLUS) lhs->d += rhs->d;
    else if (op == T_MINUS) lhs->d -= rhs->d;
    else if (op == T_STAR) lhs->d *= rhs->d;
    else if (rhs->d == 0) return fail(p, PG_EINVAL, at, "division by zero", NULL);
    else lhs->d = op == T_SLASH ? lhs->d / rhs->d : floor(lhs->d / rhs->d);
    return check_finite(p, lhs->d, at);
  }
  int ovf;
  const char *what;
  if (op == T_PLUS) {
    ovf = __builtin_add_overflow(lhs->i, rhs->i, &lhs->i);
    what = "integer overflow in '+'";
  } else if (op == T_MINUS) {
    ovf = __builtin_sub_overflow(lhs->i, rhs->i, &lhs->i);
    what = "integer overflow in '-'";
  } else if (op == T_STAR) {
    ovf = __builtin_mul_overflow(lhs->i, rhs->i, &lhs->i);
    what = "integer overflow in '*'";
  } else {
    if (rhs->i == 0) return fail(p, PG_EINVAL, at, "division by zero", NULL);
    ovf = floordiv_i64(lhs->i, rhs->i, &lhs->i) != PG_OK;
    what = "integer overflow in '//'";
  }
  return ovf ? fail(p, PG_EOVERFLOW, at, what, NULL) : PG_OK;
}

/* A parsed binary operation: evaluated, or appended to the program. */
static int binary(struct parser *p, struct tok op, struct val *lhs, const struct val *rhs) {
  if (p->eval) return ev_bin(p, op.kind, op.start, lhs, rhs);
  return emit(p, (struct expr_op){.kind = OP_BIN, .bin = op.kind, .at = op.start});
}

/* primary := INT | FLOAT | NAME | NAME '(' expr ')' | '(' expr ')' */
static int parse_primary(struct parser *p, struct val *out) {
  struct tok t = p->cur;
  switch (t.kind) {
    case T_INT:
    case T_FLOAT: {
      if (t.kind == T_FLOAT && !p->is_float)
        return fail_tok(p, PG_EPARSE, &t, "'%s' is not an integer (shapes are integer expressions)");
      next(p);
      if (!p->is_float) {
        PG_RETURN_IF_ERROR(parse_int_literal(p, &t, &out->i));
      } else {
        char buf[64];
        if (t.len >= sizeof buf) return fail_tok(p, PG_EPARSE, &t, "number '%s' is too long");
        memcpy(buf, p->s + t.start, t.len);
        buf[t.len] = '\0';
        out->d = strtod(buf, NULL);
        PG_RETURN_IF_ERROR(check_finite(p, out->d, t.start));
      }
      return emit(p, (struct expr_op){.kind = OP_NUM, .v = *out});
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
      if (p->is_float && ((t.len == 4 && memcmp(p->s + t.start, "true", 4) == 0) ||
                          (t.len == 5 && memcmp(p->s + t.start, "false", 5) == 0))) {
        out->d = t.len == 4 ? 1.0 : 0.0;
        return emit(p, (struct expr_op){.kind = OP_NUM, .v = *out});
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
    if (op.kind != T_MINUS) return PG_OK;
    if (!p->eval) return emit(p, (struct expr_op){.kind = OP_NEG, .at = op.start});
    return ev_neg(p, op.start, out);
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
    PG_RETURN_IF_ERROR(binary(p, op, out, &rhs));
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
    PG_RETURN_IF_ERROR(binary(p, op, out, &rhs));
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

/* ---------------------------------------------------------------- compiled form: API */

int pg__expr_compile(const char *text, int is_float, struct pg__expr **out,
                     struct pg_error *err) {
  *out = NULL;
  if (!text) return pg_error_set(err, PG_EINVAL, "expression is NULL");
  struct pg__expr *e = calloc(1, sizeof *e);
  size_t n = strlen(text) + 1;
  if (e) e->text = malloc(n);
  if (!e || !e->text) {
    free(e);
    return pg_error_set(err, PG_ENOMEM, "out of memory compiling an expression");
  }
  memcpy(e->text, text, n);
  e->is_float = is_float;
  struct parser p = {.s = e->text, .is_float = is_float, .err = err, .prog = e};
  struct val v = {0, 0};
  int rc = run(&p, &v);
  if (rc != PG_OK) {
    pg__expr_free(e);
    return rc;
  }
  *out = e;
  return PG_OK;
}

void pg__expr_free(struct pg__expr *e) {
  if (!e) return;
  free(e->ops);
  free(e->text);
  free(e);
}

const char *pg__expr_text(const struct pg__expr *e) { return e ? e->text : ""; }

/* Runs the program: the same semantics, order of evaluation and messages as
 * evaluating the text (ev_dim, ev_neg, ev_bin, ev_call). */
static int expr_run(const struct pg__expr *e, const struct pg_bindings *dims, struct val *out,
                    struct pg_error *err) {
  struct parser p = {.s = e->text, .n = strlen(e->text), .is_float = e->is_float, .eval = 1,
                     .dims = dims, .err = err};
  struct val st[EXPR_STACK];
  int h = 0;
  for (int i = 0; i < e->n; i++) {
    const struct expr_op *op = &e->ops[i];
    switch (op->kind) {
      case OP_NUM: st[h++] = op->v; break;
      case OP_DIM: PG_RETURN_IF_ERROR(ev_dim(&p, op->at, op->len, &st[h++])); break;
      case OP_NEG: PG_RETURN_IF_ERROR(ev_neg(&p, op->at, &st[h - 1])); break;
      case OP_CALL: PG_RETURN_IF_ERROR(ev_call(&p, op->fn, op->at, op->at2, &st[h - 1])); break;
      case OP_BIN:
        h--;
        PG_RETURN_IF_ERROR(ev_bin(&p, op->bin, op->at, &st[h - 1], &st[h]));
        break;
    }
  }
  *out = st[0];
  return PG_OK;
}

int pg__expr_eval_float(const struct pg__expr *e, const struct pg_bindings *dims, double *out,
                        struct pg_error *err) {
  struct val v = {0, 0};
  PG_RETURN_IF_ERROR(expr_run(e, dims, &v, err));
  if (out) *out = e->is_float ? v.d : (double)v.i;
  return PG_OK;
}
