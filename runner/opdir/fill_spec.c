/* phasegate runner — the fill grammar (opdir room, docs/design.md §2): pg_fill_parse turns
 * a fill spec such as "normal(0, 1) with nan:0.01" into a struct pg_fill (grammar in
 * docs/interfaces.md). Strict: every error names its 1-based column.
 *
 * Not here: generating data. The generator (Philox, the SIMD kernels) lives in
 * runner/tensors/fill.c and never parses text. struct pg_fill and the declaration of
 * pg_fill_parse are in runner/tensors/materialize.h (the generator's side) and
 * runner/opdir/opdir.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/error.h"
#include "opdir/opdir.h"
#include "tensors/tensors.h"

/* The text being parsed, the byte offset reached, and where errors go. */
struct cursor {
  const char *text;
  size_t pos;
  struct pg_error *err;
};

/* PG_EPARSE naming the fill and the 1-based column of byte `pos`. */
static int perr(struct cursor *c, size_t pos, const char *what) {
  int rc = pg_error_set(c->err, PG_EPARSE, "invalid fill '%s' at column %zu: %s", c->text,
                        pos + 1, what);
  if (c->err) c->err->column = (int)pos + 1;
  return rc;
}

static void skip_ws(struct cursor *c) {
  while (c->text[c->pos] == ' ' || c->text[c->pos] == '\t' || c->text[c->pos] == '\n' ||
         c->text[c->pos] == '\r')
    c->pos++;
}

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }
static int is_alpha(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* num := [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)? */
static int parse_num(struct cursor *c, double *out) {
  skip_ws(c);
  size_t start = c->pos, p = c->pos;
  const char *s = c->text;
  if (s[p] == '+' || s[p] == '-') p++;
  size_t int_digits = 0, frac_digits = 0;
  while (is_digit(s[p])) p++, int_digits++;
  if (s[p] == '.') {
    p++;
    while (is_digit(s[p])) p++, frac_digits++;
  }
  if (int_digits + frac_digits == 0) return perr(c, start, "expected a number");
  if (s[p] == 'e' || s[p] == 'E') {
    size_t q = p + 1, exp_digits = 0;
    if (s[q] == '+' || s[q] == '-') q++;
    while (is_digit(s[q])) q++, exp_digits++;
    if (exp_digits == 0) return perr(c, q, "expected exponent digits");
    p = q;
  }
  if (is_alpha(s[p]) || s[p] == '_') return perr(c, p, "unexpected character in a number");
  char buf[128];
  if (p - start >= sizeof buf) return perr(c, start, "number literal too long");
  memcpy(buf, s + start, p - start);
  buf[p - start] = '\0';
  errno = 0;
  char *end = NULL;
  double v = strtod(buf, &end);
  if (!end || *end != '\0') return perr(c, start, "expected a number");
  if (!isfinite(v)) return perr(c, start, "number out of range");
  *out = v;
  c->pos = p;
  return PG_OK;
}

/* Skips blanks, then requires `ch`; `what` is the error otherwise. */
static int expect(struct cursor *c, char ch, const char *what) {
  skip_ws(c);
  if (c->text[c->pos] != ch) return perr(c, c->pos, what);
  c->pos++;
  return PG_OK;
}

/* "(a)" or "(a, b)" after the fill name `fn`, n = 1 or 2 numbers. */
static int parse_args(struct cursor *c, int n, double *a, double *b, const char *fn) {
  char what[96];
  snprintf(what, sizeof what, "expected '(' after '%s'", fn);
  PG_RETURN_IF_ERROR(expect(c, '(', what));
  PG_RETURN_IF_ERROR(parse_num(c, a));
  if (n == 2) {
    snprintf(what, sizeof what, "expected ',' between the two parameters of %s()", fn);
    PG_RETURN_IF_ERROR(expect(c, ',', what));
    PG_RETURN_IF_ERROR(parse_num(c, b));
  }
  snprintf(what, sizeof what, "expected ')' closing %s() (it takes %d parameter%s)", fn, n,
           n == 1 ? "" : "s");
  return expect(c, ')', what);
}

/* The end of the identifier-like word starting at p (p itself when there is none). */
static size_t read_word(const struct cursor *c, size_t p) {
  while (is_alpha(c->text[p]) || is_digit(c->text[p]) || c->text[p] == '_') p++;
  return p;
}

/* Is text[start, end) exactly the word w? */
static int word_is(const struct cursor *c, size_t start, size_t end, const char *w) {
  return strlen(w) == end - start && memcmp(c->text + start, w, end - start) == 0;
}

/* The fill itself: a name and its parameters, checked for range (sigma >= 0, lo <= hi,
 * integer bounds for int, at most 2^32 int values). */
static int parse_base(struct cursor *c, struct pg_fill *f) {
  skip_ws(c);
  size_t start = c->pos, end = read_word(c, c->pos);
  if (end == start) return perr(c, start, "expected a fill name (normal, uniform, int, zeros, "
                                          "ones, arange, const)");
  c->pos = end;
  if (word_is(c, start, end, "normal")) {
    f->kind = PG_FILL_NORMAL;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "normal"));
    if (f->b < 0) return perr(c, start, "normal(mu, sigma) needs sigma >= 0");
  } else if (word_is(c, start, end, "uniform")) {
    f->kind = PG_FILL_UNIFORM;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "uniform"));
    if (!(f->a <= f->b)) return perr(c, start, "uniform(lo, hi) needs lo <= hi");
    if (!isfinite(f->b - f->a)) return perr(c, start, "uniform(lo, hi) range overflows");
  } else if (word_is(c, start, end, "int")) {
    f->kind = PG_FILL_INT;
    PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "int"));
    if (f->a != floor(f->a) || f->b != floor(f->b))
      return perr(c, start, "int(lo, hi) needs integer bounds");
    if (!(f->a <= f->b)) return perr(c, start, "int(lo, hi) needs lo <= hi");
    if (f->b - f->a >= 4294967296.0)
      return perr(c, start, "int(lo, hi) range is limited to 2^32 values");
  } else if (word_is(c, start, end, "zeros")) {
    f->kind = PG_FILL_ZEROS;
  } else if (word_is(c, start, end, "ones")) {
    f->kind = PG_FILL_ONES;
  } else if (word_is(c, start, end, "arange")) {
    f->kind = PG_FILL_ARANGE;
    f->a = 0.0;
    f->b = 1.0;
    size_t after = c->pos; /* keep the whitespace: "arange with nan:0.1" */
    skip_ws(c);
    if (c->text[c->pos] == '(') PG_RETURN_IF_ERROR(parse_args(c, 2, &f->a, &f->b, "arange"));
    else c->pos = after;
  } else if (word_is(c, start, end, "const")) {
    f->kind = PG_FILL_CONST;
    PG_RETURN_IF_ERROR(parse_args(c, 1, &f->a, NULL, "const"));
  } else {
    char what[160];
    snprintf(what, sizeof what, "unknown fill '%.*s' (expected normal, uniform, int, zeros, "
             "ones, arange, const)", (int)(end - start > 40 ? 40 : end - start), c->text + start);
    return perr(c, start, what);
  }
  return PG_OK;
}

/* One "kind:fraction" of the with-list; each kind at most once, fraction in [0, 1]. */
static int parse_special(struct cursor *c, struct pg_fill *f, int seen[PG_SPECIAL_COUNT]) {
  skip_ws(c);
  size_t start = c->pos, p = c->pos;
  int neg = 0;
  if (c->text[p] == '-') neg = 1, p++;
  size_t end = read_word(c, p);
  int kind = -1;
  if (!neg && word_is(c, p, end, "nan")) kind = PG_SPECIAL_NAN;
  else if (!neg && word_is(c, p, end, "inf")) kind = PG_SPECIAL_INF;
  else if (neg && word_is(c, p, end, "inf")) kind = PG_SPECIAL_NEG_INF;
  else if (!neg && word_is(c, p, end, "denormal")) kind = PG_SPECIAL_DENORMAL;
  else if (neg && word_is(c, p, end, "0")) kind = PG_SPECIAL_NEG_ZERO;
  if (kind < 0)
    return perr(c, start, "expected a special value (nan, inf, -inf, denormal, -0)");
  if (seen[kind]) return perr(c, start, "special value given twice");
  seen[kind] = 1;
  c->pos = end;
  PG_RETURN_IF_ERROR(expect(c, ':', "expected ':' and a fraction after the special value"));
  skip_ws(c);
  size_t numpos = c->pos;
  double frac;
  PG_RETURN_IF_ERROR(parse_num(c, &frac));
  if (!(frac >= 0.0 && frac <= 1.0)) return perr(c, numpos, "fraction must be in [0, 1]");
  f->special[kind] = frac;
  return PG_OK;
}

/* fill := base [" with " special ("," special)*], fractions adding up to at most 1. */
int pg_fill_parse(const char *text, struct pg_fill *out, struct pg_error *err) {
  struct pg_fill f;
  memset(&f, 0, sizeof f);
  if (!text) text = "";
  struct cursor c = {text, 0, err};
  PG_RETURN_IF_ERROR(parse_base(&c, &f));
  size_t after_base = c.pos;
  skip_ws(&c);
  if (c.text[c.pos] != '\0') {
    size_t end = read_word(&c, c.pos);
    if (!word_is(&c, c.pos, end, "with") || c.pos == after_base)
      return perr(&c, c.pos, "unexpected text after the fill (special values follow ' with ')");
    c.pos = end;
    int seen[PG_SPECIAL_COUNT] = {0};
    double sum = 0;
    for (;;) {
      PG_RETURN_IF_ERROR(parse_special(&c, &f, seen));
      skip_ws(&c);
      if (c.text[c.pos] == ',') {
        c.pos++;
        continue;
      }
      if (c.text[c.pos] != '\0') return perr(&c, c.pos, "expected ',' or the end of the fill");
      break;
    }
    for (int k = 0; k < PG_SPECIAL_COUNT; k++) sum += f.special[k];
    if (sum > 1.0) return perr(&c, after_base, "special-value fractions add up to more than 1");
  }
  *out = f;
  return PG_OK;
}

