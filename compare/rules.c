/* compare/rules.c — comparison rules as text and their defaults.
 *
 * Parses the rule names a suite, the runner or `phasegate diff --rule` use
 * ("allclose", "exact", "ulp:N", "ratio:R"), formats them back for reports, and
 * holds the default tolerance (atol = rtol = 1e-3, the seed's; docs/compare.md).
 * No I/O; the comparison itself lives in compare.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/compare.h"

void pg_cmp_default_tolerance(enum pg_dtype dtype, double *atol, double *rtol) {
  /* The seed's runner and detailed_tensor_compare: one tolerance for every float dtype,
   * so a pypto suite gets the verdicts it got there (docs/design.md §7). */
  int floating = dtype == PG_DTYPE_F16 || dtype == PG_DTYPE_BF16 || dtype == PG_DTYPE_F32 ||
                 dtype == PG_DTYPE_F64;
  if (atol) *atol = floating ? PG_CMP_DEFAULT_ATOL : 0.0; /* integers and bool: exact */
  if (rtol) *rtol = floating ? PG_CMP_DEFAULT_RTOL : 0.0;
}

void pg_cmp_rule_init(struct pg_cmp_rule *rule, enum pg_dtype dtype) {
  memset(rule, 0, sizeof *rule);
  rule->kind = PG_RULE_ALLCLOSE;
  pg_cmp_default_tolerance(dtype, &rule->atol, &rule->rtol);
}

/* Parses a whole string as a finite double (no trailing garbage). */
static int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int pg_cmp_rule_parse(const char *text, struct pg_cmp_rule *rule, struct pg_error *err) {
  if (!text || !rule) return pg_error_set(err, PG_EINVAL, "comparison rule: NULL argument");
  if (strcmp(text, "allclose") == 0) {
    rule->kind = PG_RULE_ALLCLOSE;
    return PG_OK;
  }
  if (strcmp(text, "exact") == 0) {
    rule->kind = PG_RULE_EXACT;
    return PG_OK;
  }
  if (strncmp(text, "ulp:", 4) == 0) {
    const char *s = text + 4;
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || n < 0 || *s == '-' || *s == '+')
      return pg_error_set(err, PG_EINVAL,
                          "comparison rule '%s': ulp:N needs a non-negative integer N", text);
    rule->kind = PG_RULE_ULP;
    rule->ulp = (int64_t)n;
    return PG_OK;
  }
  if (strncmp(text, "ratio:", 6) == 0) {
    double r;
    if (!parse_double(text + 6, &r) || r < 0.0 || r > 1.0)
      return pg_error_set(err, PG_EINVAL,
                          "comparison rule '%s': ratio:R needs a number R in [0, 1]", text);
    rule->kind = PG_RULE_RATIO;
    rule->ratio = r;
    return PG_OK;
  }
  return pg_error_set(err, PG_EINVAL,
                      "unknown comparison rule '%s' (expected allclose, exact, ulp:N or ratio:R)",
                      text);
}

void pg_cmp_rule_format(const struct pg_cmp_rule *rule, char *buf, size_t size) {
  if (!buf || size == 0) return;
  if (!rule) {
    snprintf(buf, size, "(none)");
    return;
  }
  const char *nan = rule->equal_nan ? ", equal_nan" : "";
  switch (rule->kind) {
    case PG_RULE_ALLCLOSE:
      snprintf(buf, size, "allclose(atol=%g, rtol=%g%s)", rule->atol, rule->rtol, nan);
      break;
    case PG_RULE_EXACT: snprintf(buf, size, "exact%s", rule->equal_nan ? "(equal_nan)" : ""); break;
    case PG_RULE_ULP:
      snprintf(buf, size, "ulp:%lld%s", (long long)rule->ulp, rule->equal_nan ? "(equal_nan)" : "");
      break;
    case PG_RULE_RATIO:
      snprintf(buf, size, "ratio:%g(atol=%g, rtol=%g%s)", rule->ratio, rule->atol, rule->rtol, nan);
      break;
    default: snprintf(buf, size, "invalid rule %d", (int)rule->kind); break;
  }
}

void pg_cmp_format_index(const int64_t *index, int ndim, char *buf, size_t size) {
  if (!buf || size == 0) return;
  size_t used = 0;
  buf[0] = '\0';
  int n = snprintf(buf, size, "[");
  if (n < 0 || (size_t)n >= size) return;
  used = (size_t)n;
  for (int i = 0; i < ndim && i < PG_MAX_NDIM; i++) {
    n = snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)index[i]);
    if (n < 0 || (size_t)n >= size - used) return;
    used += (size_t)n;
  }
  snprintf(buf + used, size - used, "]");
}
