/* Unit tests for goldens/expr.c: shape expressions (int64, Python floor division,
 * overflow, '/' rejected) and float expressions (sqrt/exp/log, true/false, 1e-5),
 * with error codes and 1-based columns. */
#include <stdint.h>

#include "pg_test.h"
#include "phasegate/goldens.h"

static struct pg_dim_value dim_items[] = {
    {"B", 2, {0, 0}}, {"S", 128, {0, 0}}, {"D", 64, {0, 0}}, {"BIG", INT64_MAX, {0, 0}},
    {"NEG", -7, {0, 0}}, {"ZERO", 0, {0, 0}}};
static const struct pg_bindings dims = {dim_items, 6};

static int64_t ev(const char *text) {
  int64_t v = -12345;
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg_shape_expr_eval(text, &dims, &v, &e);
  PG_CHECK_MSG(rc == PG_OK, "'%s': %s", text, e.message);
  return v;
}

static int ev_err(const char *text, int *column, char *msg, size_t size) {
  int64_t v;
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg_shape_expr_eval(text, &dims, &v, &e);
  *column = e.column;
  if (msg) snprintf(msg, size, "%s", e.message);
  return rc;
}

static double fev(const char *text) {
  double v = -1;
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg_float_expr_eval(text, &dims, &v, &e);
  PG_CHECK_MSG(rc == PG_OK, "'%s': %s", text, e.message);
  return v;
}

PG_TEST(shape_precedence) {
  PG_CHECK_EQ_INT(14, ev("2 + 3 * 4"));
  PG_CHECK_EQ_INT(20, ev("(2 + 3) * 4"));
  PG_CHECK_EQ_INT(-2, ev("2 - 4"));
  PG_CHECK_EQ_INT(1, ev("10 - 4 - 5")); /* left associative */
  PG_CHECK_EQ_INT(5, ev("100 // 10 // 2"));
  PG_CHECK_EQ_INT(256, ev("S * B"));
  PG_CHECK_EQ_INT(64, ev("S // B"));
  PG_CHECK_EQ_INT(130, ev("S+B"));
  PG_CHECK_EQ_INT(-6, ev("-B * 3"));
  PG_CHECK_EQ_INT(2, ev("--B"));
  PG_CHECK_EQ_INT(2, ev("+B"));
  PG_CHECK_EQ_INT(64, ev("  D  "));
  PG_CHECK_EQ_INT(0, ev("ZERO"));
  PG_CHECK_EQ_INT(3, ev("((((3))))"));
}

PG_TEST(shape_floor_division_like_python) {
  PG_CHECK_EQ_INT(3, ev("7 // 2"));
  PG_CHECK_EQ_INT(-4, ev("-7 // 2")); /* (-7) // 2 in Python is -4 */
  PG_CHECK_EQ_INT(-4, ev("7 // -2"));
  PG_CHECK_EQ_INT(3, ev("-7 // -2"));
  PG_CHECK_EQ_INT(-3, ev("-6 // 2"));
  PG_CHECK_EQ_INT(-1, ev("NEG // 7"));
  PG_CHECK_EQ_INT(-2, ev("NEG // 4"));
  PG_CHECK_EQ_INT(-3, ev("-(7 // 2)"));
}

PG_TEST(shape_overflow) {
  int col;
  char msg[256];
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("BIG + 1", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(5, col);
  PG_CHECK_EQ_STR("integer overflow in '+'", msg);
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("BIG * 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("-BIG - 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(6, col);
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("(-BIG - 1) // -1", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("-(-BIG - 1)", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(PG_EOVERFLOW, ev_err("B * 99999999999999999999", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(5, col);
  PG_CHECK_EQ_STR("integer '99999999999999999999' is too large (the limit is 2^63-1)", msg);
  PG_CHECK_EQ_INT(INT64_MAX, ev("9223372036854775807"));
  PG_CHECK_EQ_INT(INT64_MIN, ev("-BIG - 1"));
  PG_CHECK_EQ_INT(PG_EINVAL, ev_err("S // ZERO", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("division by zero", msg);
  PG_CHECK_EQ_INT(3, col);
}

PG_TEST(shape_errors_with_columns) {
  int col;
  char msg[256];
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("S / 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("'/' is not allowed in shapes; use '//'", msg);
  PG_CHECK_EQ_INT(3, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("B +* 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("expected a value, found '*'", msg);
  PG_CHECK_EQ_INT(4, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("(B + 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("expected ')', found 'end of expression'", msg);
  PG_CHECK_EQ_INT(7, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("B + 2)", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("unmatched ')'", msg);
  PG_CHECK_EQ_INT(6, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("empty expression", msg);
  PG_CHECK_EQ_INT(1, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("S ** 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(3, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("1.5 * S", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(1, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("S B", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("expected an operator, found 'B'", msg);
  PG_CHECK_EQ_INT(3, col);
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("2S", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("sqrt(S)", &col, msg, sizeof msg));
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err("S % 2", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("unexpected '%'", msg);
  PG_CHECK_EQ_INT(3, col);
  PG_CHECK_EQ_INT(PG_ENOTFOUND, ev_err("S * T", &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("unknown dim 'T'", msg);
  PG_CHECK_EQ_INT(5, col);
}

PG_TEST(shape_depth_is_capped) {
  char deep[400];
  memset(deep, '(', 200);
  deep[200] = '1';
  memset(deep + 201, ')', 198);
  deep[399] = '\0';
  int col;
  char msg[256];
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err(deep, &col, msg, sizeof msg));
  PG_CHECK_EQ_STR("expression nested too deeply (more than 64 levels)", msg);
  char minus[300];
  memset(minus, '-', 299);
  minus[299] = '\0';
  PG_CHECK_EQ_INT(PG_EPARSE, ev_err(minus, &col, msg, sizeof msg));
  /* 60 levels are fine */
  char ok[200];
  memset(ok, '(', 60);
  ok[60] = '5';
  memset(ok + 61, ')', 60);
  ok[121] = '\0';
  PG_CHECK_EQ_INT(5, ev(ok));
}

struct names {
  char seen[8][16];
  int offsets[8];
  int n;
};

static int collect(void *user, const char *name, size_t len, int offset) {
  struct names *n = user;
  if (n->n < 8 && len < 16) {
    memcpy(n->seen[n->n], name, len);
    n->seen[n->n][len] = '\0';
    n->offsets[n->n++] = offset;
  }
  return 0;
}

static int stop_at_x(void *user, const char *name, size_t len, int offset) {
  (void)user;
  (void)offset;
  return len == 1 && name[0] == 'X' ? 42 : 0;
}

PG_TEST(shape_check_reports_names) {
  struct names n = {0};
  struct pg_error e;
  PG_CHECK_OK(pg_shape_expr_check("B * (S + KV_LEN) // 2", collect, &n, &e));
  PG_CHECK_EQ_INT(3, n.n);
  PG_CHECK_EQ_STR("B", n.seen[0]);
  PG_CHECK_EQ_STR("S", n.seen[1]);
  PG_CHECK_EQ_STR("KV_LEN", n.seen[2]);
  PG_CHECK_EQ_INT(9, n.offsets[2]);
  /* the callback's non-zero value stops the parse and is returned */
  PG_CHECK_EQ_INT(42, pg_shape_expr_check("B + X + C", stop_at_x, NULL, &e));
  /* check does not evaluate: unknown names and x//0 are fine syntactically */
  PG_CHECK_OK(pg_shape_expr_check("UNKNOWN // 0", NULL, NULL, &e));
  PG_CHECK_EQ_INT(PG_EPARSE, pg_shape_expr_check("B / 2", NULL, NULL, &e));
  PG_CHECK_EQ_INT(3, e.column);
  PG_CHECK_EQ_INT(PG_EOVERFLOW, pg_shape_expr_check("123456789012345678901", NULL, NULL, &e));
  PG_CHECK_EQ_INT(PG_EPARSE, pg_shape_expr_check("B + \xc3\xa9", NULL, NULL, &e));
  PG_CHECK_EQ_STR("unexpected '\xc3\xa9'", e.message);
  PG_CHECK_EQ_INT(5, e.column);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_shape_expr_check(NULL, NULL, NULL, NULL));
}

PG_TEST(float_expressions) {
  PG_CHECK_NEAR(0.125, fev("1/sqrt(D)"), 1e-15);
  PG_CHECK_NEAR(1e-5, fev("1e-5"), 1e-20);
  PG_CHECK_NEAR(2.5e3, fev("2.5E3"), 1e-9);
  PG_CHECK_NEAR(0.5, fev(".5"), 0);
  PG_CHECK_NEAR(3.5, fev("7 / 2"), 0);
  PG_CHECK_NEAR(-4.0, fev("-7 // 2"), 0);
  PG_CHECK_NEAR(1.0, fev("true"), 0);
  PG_CHECK_NEAR(0.0, fev("false"), 0);
  PG_CHECK_NEAR(1.0, fev("exp(0)"), 0);
  PG_CHECK_NEAR(1.0, fev("log(exp(1))"), 1e-15);
  PG_CHECK_NEAR(-0.5, fev("-(1/2)"), 0);
  PG_CHECK_NEAR(0.0078125, fev("1 / (B * 64)"), 0);
  PG_CHECK_NEAR(11.0, fev("sqrt(S - 7) * 1"), 1e-12);

  double v;
  struct pg_error e;
  PG_CHECK_EQ_INT(PG_EINVAL, pg_float_expr_eval("1 / 0", &dims, &v, &e));
  PG_CHECK_EQ_INT(3, e.column);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_float_expr_eval("sqrt(-1)", &dims, &v, &e));
  PG_CHECK_EQ_INT(6, e.column);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_float_expr_eval("log(0)", &dims, &v, &e));
  PG_CHECK_EQ_INT(PG_EOVERFLOW, pg_float_expr_eval("exp(1000)", &dims, &v, &e));
  PG_CHECK_EQ_INT(PG_EPARSE, pg_float_expr_eval("pow(2, 3)", &dims, &v, &e));
  PG_CHECK_EQ_STR("unknown function 'pow' (known: sqrt, exp, log)", e.message);
  PG_CHECK_EQ_INT(PG_EPARSE, pg_float_expr_eval("sqrt(2", &dims, &v, &e));
  PG_CHECK_EQ_INT(PG_ENOTFOUND, pg_float_expr_eval("1/sqrt(HEAD_DIM)", &dims, &v, &e));
  PG_CHECK_EQ_INT(8, e.column);
  PG_CHECK_EQ_INT(PG_EPARSE, pg_float_expr_eval("1e", &dims, &v, &e));

  struct names n = {0};
  PG_CHECK_OK(pg_float_expr_check("alpha * sqrt(D) + true", collect, &n, &e));
  PG_CHECK_EQ_INT(2, n.n); /* sqrt and true are not dim names */
  PG_CHECK_EQ_STR("alpha", n.seen[0]);
  PG_CHECK_EQ_STR("D", n.seen[1]);
}
