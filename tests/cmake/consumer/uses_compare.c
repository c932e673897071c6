/* phasegate tests — links phasegate::compare from the installed package to prove the
 * exported static library and its dependencies resolve. */
#include <stdio.h>

#include "phasegate/compare.h"

int main(void) {
  struct pg_cmp_rule rule;
  struct pg_error err;
  int rc = pg_cmp_rule_parse("allclose", &rule, &err);
  if (rc != PG_OK) {
    fprintf(stderr, "pg_cmp_rule_parse: %s\n", err.message);
    return 1;
  }
  return 0;
}
