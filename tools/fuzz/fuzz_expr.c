/* phasegate fuzz harness — shape and float expressions (goldens/expr.c).
 *
 *   build/asan/tools/fuzz/fuzz_expr tests/fuzz-corpus/expr
 *
 * The input is one expression (bytes up to the first NUL). It is checked and
 * evaluated in both grammars against a few bindings, including extreme values, and
 * the harness traps when a promise breaks: a parse error carries a column inside the
 * text (1..len+1); check and eval agree on syntax (eval never reports PG_EPARSE for
 * text check accepted, and never succeeds on text check rejected); a float evaluation that succeeds is finite; evaluation is
 * deterministic.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/goldens.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static int count_names(void *user, const char *name, size_t len, int offset) {
  (void)name;
  check(len > 0 && offset >= 0);
  ++*(int *)user;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  int len = (int)strlen(text);

  static struct pg_dim_value items[] = {{"B", 2, {0, 0}},         {"S", 128, {0, 0}},
                                        {"D", 64, {0, 0}},        {"N", -3, {0, 0}},
                                        {"BIG", INT64_MAX, {0, 0}}, {"MIN", INT64_MIN, {0, 0}},
                                        {"Z", 0, {0, 0}}};
  static const struct pg_bindings dims = {items, 7};
  struct pg_error e;
  int names = 0;

  int rc = pg_shape_expr_check(text, count_names, &names, &e);
  if (rc == PG_EPARSE || rc == PG_EOVERFLOW) check(e.column >= 1 && e.column <= len + 1);
  int64_t v1 = 0, v2 = 0;
  int r1 = pg_shape_expr_eval(text, &dims, &v1, &e);
  if (r1 != PG_OK) check(e.message[0] != '\0' && e.column >= 1 && e.column <= len + 1);
  if (rc == PG_OK) check(r1 == PG_OK || r1 == PG_ENOTFOUND || r1 == PG_EOVERFLOW || r1 == PG_EINVAL);
  else check(r1 != PG_OK); /* eval may stop earlier (an unknown name), never succeed */
  int r2 = pg_shape_expr_eval(text, &dims, &v2, &e);
  check(r1 == r2 && (r1 != PG_OK || v1 == v2));

  rc = pg_float_expr_check(text, count_names, &names, &e);
  if (rc == PG_EPARSE) check(e.column >= 1 && e.column <= len + 1);
  double f = 0;
  r1 = pg_float_expr_eval(text, &dims, &f, &e);
  if (rc == PG_OK) check(r1 == PG_OK || r1 == PG_ENOTFOUND || r1 == PG_EOVERFLOW || r1 == PG_EINVAL);
  if (r1 == PG_OK) check(isfinite(f));
  free(text);
  return 0;
}
