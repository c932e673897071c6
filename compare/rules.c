/* compare/rules.c — comparison rules as text and their defaults.
 *
 * The one parser and the one formatter of a rule's text ("allclose", "exact", "ulp:N",
 * "ratio:R"): the suite and contract loaders, the runner, the report and `phasegate
 * diff --rule` all come here, so they cannot disagree on what a rule is. Also the
 * default tolerance (atol = rtol = 1e-3, the seed's; docs/compare.md).
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

/* N of "ulp:N": ASCII digits only (strtoll alone would skip spaces and read a sign),
 * within int64. */
static int parse_ulp(const char *s, int64_t *out) {
  if (!*s) return 0;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  char *end;
  errno = 0;
  long long n = strtoll(s, &end, 10);
  if (*end != '\0' || errno == ERANGE) return 0;
  *out = (int64_t)n;
  return 1;
}

/* R of "ratio:R": a decimal number ("0.5", ".5", "5e-1") and nothing else; strtod alone
 * would also skip spaces and read signs, hex and "inf" (docs/compare.md "Rule text"). */
static int parse_ratio(const char *s, double *out) {
  if (!((*s >= '0' && *s <= '9') || *s == '.')) return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
          *p == '-'))
      return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end != '\0' || errno == ERANGE || !isfinite(v) || v < 0.0 || v > 1.0) return 0;
  *out = v;
  return 1;
}

int pg_cmp_rule_parse(const char *text, struct pg_cmp_rule *rule, struct pg_error *err) {
  if (!text || !rule) return pg_error_set(err, PG_EINVAL, "comparison rule: NULL argument");
  for (const char *p = text; *p; p++)
    if (*p == ' ' || (*p >= '\t' && *p <= '\r'))
      return pg_error_set(err, PG_EINVAL,
                          "comparison rule '%s': a rule has no whitespace (\"ulp:4\", "
                          "\"ratio:0.5\")", text);
  if (strcmp(text, "allclose") == 0) {
    rule->kind = PG_RULE_ALLCLOSE;
    return PG_OK;
  }
  if (strcmp(text, "exact") == 0) {
    rule->kind = PG_RULE_EXACT;
    return PG_OK;
  }
  if (strncmp(text, "ulp:", 4) == 0) {
    int64_t n;
    if (!parse_ulp(text + 4, &n))
      return pg_error_set(err, PG_EINVAL,
                          "comparison rule '%s': ulp:N needs a non-negative integer N", text);
    rule->kind = PG_RULE_ULP;
    rule->ulp = n;
    return PG_OK;
  }
  if (strncmp(text, "ratio:", 6) == 0) {
    double r;
    if (!parse_ratio(text + 6, &r))
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

void pg_cmp_rule_format(const struct pg_cmp_rule *rule, enum pg_cmp_rule_form form, char *buf,
                        size_t size) {
  if (!buf || size == 0) return;
  if (!rule) {
    snprintf(buf, size, "(none)");
    return;
  }
  char name[64];
  switch (rule->kind) {
    case PG_RULE_ALLCLOSE: snprintf(name, sizeof name, "allclose"); break;
    case PG_RULE_EXACT: snprintf(name, sizeof name, "exact"); break;
    case PG_RULE_ULP: snprintf(name, sizeof name, "ulp:%lld", (long long)rule->ulp); break;
    case PG_RULE_RATIO: snprintf(name, sizeof name, "ratio:%g", rule->ratio); break;
    default: snprintf(name, sizeof name, "invalid rule %d", (int)rule->kind); break;
  }
  /* the full form adds what else decides the verdict: atol/rtol where the rule uses them */
  const char *nan = rule->equal_nan ? ", equal_nan" : "";
  if (form == PG_RULE_FORM_NAME) snprintf(buf, size, "%s", name);
  else if (rule->kind == PG_RULE_ALLCLOSE || rule->kind == PG_RULE_RATIO)
    snprintf(buf, size, "%s(atol=%g, rtol=%g%s)", name, rule->atol, rule->rtol, nan);
  else if (rule->kind == PG_RULE_EXACT || rule->kind == PG_RULE_ULP)
    snprintf(buf, size, "%s%s", name, rule->equal_nan ? "(equal_nan)" : "");
  else snprintf(buf, size, "%s", name);
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
