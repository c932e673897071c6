/* phasegate diff — compares two dumped tensors (.npy or safetensors) with the
 * comparison library and prints a human report or JSON (docs/compare.md).
 *
 *   phasegate diff A B [--rule R] [--atol X] [--rtol Y] [--equal-nan] [--json | --format F]
 *                      [--name T] [--threads N]
 *
 * A is the impl's tensor, B the reference. Exit 0 pass, 1 fail (including shape or
 * dtype mismatch), 2 error. Reference values are never printed: only metrics, the
 * impl's values and indices (docs/design.md §8 information barrier).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/report.h"
#include "phasegate/compare.h"
#include "tensors/tensors.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate diff A B [options]\n"
          "\n"
          "Compares tensor A (the impl's output) with tensor B (the reference). A and B are\n"
          ".npy or .safetensors files (bfloat16 travels as '<u2', see docs/tensors.md).\n"
          "\n"
          "options:\n"
          "  --rule R       allclose (default), exact, ulp:N, ratio:R\n"
          "  --atol X       absolute tolerance (default 1e-3, the seed's)\n"
          "  --rtol Y       relative tolerance (default 1e-3)\n"
          "  --equal-nan    NaN in A matches NaN in B\n"
          "  --json         machine-readable output on stdout (= --format json)\n"
          "  --format F     text (default) or json, as in validate and list\n"
          "  --name T       tensor name inside .safetensors files (needed when a file holds\n"
          "                 several tensors)\n"
          "  --threads N    worker threads (default: all cores)\n"
          "\n"
          "Per element (b = B): allclose passes iff |a-b| <= atol + rtol*|b| (numpy.isclose);\n"
          "integers and bool compare exactly.\n"
          "Exit codes: 0 pass, 1 fail (values, shape or dtype), 2 error.\n");
}

static cJSON *index_json(const int64_t *idx, int ndim) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < ndim; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)idx[i]));
  return a;
}

static void print_json(const char *pa, const char *pb, const char *rule_text,
                       const struct pg_cmp_rule *rule, const struct pg_cmp_result *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "impl", pa);
  cJSON_AddStringToObject(o, "reference", pb);
  cJSON_AddStringToObject(o, "verdict", r->passed ? "PASS" : "FAIL");
  cJSON_AddBoolToObject(o, "passed", r->passed);
  cJSON_AddStringToObject(o, "rule", rule_text);
  cJSON_AddNumberToObject(o, "atol", rule->atol);
  cJSON_AddNumberToObject(o, "rtol", rule->rtol);
  cJSON_AddBoolToObject(o, "equal_nan", rule->equal_nan);
  cJSON_AddBoolToObject(o, "structural", r->structural);
  cJSON_AddItemToObject(o, "impl_shape", index_json(r->impl_shape, r->impl_ndim));
  cJSON_AddItemToObject(o, "ref_shape", index_json(r->ref_shape, r->ndim));
  cJSON_AddStringToObject(o, "impl_dtype", pg_dtype_name(r->impl_dtype));
  cJSON_AddStringToObject(o, "ref_dtype", pg_dtype_name(r->ref_dtype));
  if (r->structural) {
    cJSON_AddStringToObject(o, "structural_reason", r->structural_reason);
  } else {
    pg_report_add_metrics(o, r);
    cJSON_AddNumberToObject(o, "n_finite", (double)r->n_finite);
  }
  char *s = cJSON_Print(o);
  if (s) printf("%s\n", s);
  cJSON_free(s);
  cJSON_Delete(o);
}

static void print_human(const char *pa, const char *pb, const char *rule_text,
                        const struct pg_cmp_result *r) {
  char idx[200], shape[200];
  printf("impl:      %s\nreference: %s\n", pa, pb);
  if (r->structural) {
    printf("structural mismatch: %s\nverdict: FAIL\n", r->structural_reason);
    return;
  }
  pg_cmp_format_index(r->ref_shape, r->ndim, shape, sizeof shape);
  printf("tensor:    %s %s, %lld elements\nrule:      %s\n", pg_dtype_name(r->ref_dtype), shape,
         (long long)r->n, rule_text);
  printf("mismatches: %lld of %lld (%.4g%%)", (long long)r->mismatches, (long long)r->n,
         100.0 * r->mismatch_ratio);
  if (r->mismatches_nonfinite)
    printf(", %lld involving NaN/Inf", (long long)r->mismatches_nonfinite);
  printf("\n");
  if (r->max_abs_flat >= 0) {
    pg_cmp_format_index(r->max_abs_index, r->ndim, idx, sizeof idx);
    printf("max abs diff: %.6g at %s\n", r->max_abs_diff, idx);
    pg_cmp_format_index(r->max_rel_index, r->ndim, idx, sizeof idx);
    printf("max rel diff: %.6g at %s   (|a-b| / (|b| + 1e-8))\n", r->max_rel_diff, idx);
    printf("mean abs diff: %.6g   rmse: %.6g   cosine similarity: %.9g\n", r->mean_abs_diff,
           r->rmse, r->cosine_similarity);
  } else {
    printf("max abs diff: - (no element pair where both values are finite)\n");
  }
  if (pg_dtype_is_float(r->ref_dtype)) printf("max ulp distance: %.0f\n", r->max_ulp);
  else printf("max integer difference: %.0f\n", r->max_ulp);
  printf("NaN: impl %lld, reference %lld   Inf: impl %lld, reference %lld\n",
         (long long)r->nan_impl, (long long)r->nan_ref, (long long)r->inf_impl,
         (long long)r->inf_ref);
  printf("within 1e-3 relative: %.4g%%   within 5e-3: %.4g%%   error balance: %+.4f\n",
         100.0 * r->share_within_1e3, 100.0 * r->share_within_5e3, r->error_balance);
  printf("zeros in reference: %.4g%%\n", 100.0 * r->zero_share_ref);
  if (r->n_first > 0) {
    printf("first mismatches (index: impl value, abs diff, rel diff):\n");
    for (int i = 0; i < r->n_first; i++) {
      pg_cmp_format_index(r->first[i].index, r->ndim, idx, sizeof idx);
      printf("  %s: %.9g, %.6g, %.6g\n", idx, r->first[i].impl_value, r->first[i].abs_diff,
             r->first[i].rel_diff);
    }
  }
  if (r->mistrusted) printf("MISTRUSTED: %s: the comparison is too weak to trust\n", r->mistrust_reason);
  if (r->cpu_reproducer_candidate)
    printf("CPU REPRODUCER CANDIDATE: only cells with small |reference| fail (atol), while every\n"
           "  other cell is within rtol/100: check the reference itself (e.g. cancellation)\n");
  printf("verdict: %s\n", r->passed ? "PASS" : "FAIL");
}

int pg_cmd_diff(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *rule_s = "allclose", *name = NULL;
  double atol = -1, rtol = -1;
  int equal_nan = 0, json = 0, npaths = 0, threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return PG_EXIT_PASS;
    } else if (strcmp(a, "--rule") == 0) {
      if (!v) return pg_cli_usage_error("diff", "--rule needs a value");
      rule_s = v, i++;
    } else if (strcmp(a, "--atol") == 0) {
      if (pg_cli_parse_number("diff", a, v, 0, &atol)) return PG_EXIT_ERROR;
      i++;
    } else if (strcmp(a, "--rtol") == 0) {
      if (pg_cli_parse_number("diff", a, v, 0, &rtol)) return PG_EXIT_ERROR;
      i++;
    } else if (strcmp(a, "--threads") == 0) {
      char *end = NULL;
      long t = v ? strtol(v, &end, 10) : -1;
      if (!v || end == v || *end || t < 0 || t > 1024)
        return pg_cli_usage_error("diff", "--threads needs an integer 0..1024, got '%s'",
                                  v ? v : "(nothing)");
      threads = (int)t, i++;
    } else if (strcmp(a, "--name") == 0) {
      if (!v) return pg_cli_usage_error("diff", "--name needs a value");
      name = v, i++;
    } else if (strcmp(a, "--equal-nan") == 0) {
      equal_nan = 1;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--format") == 0) { /* the spelling of validate and list */
      if (!v || (strcmp(v, "json") != 0 && strcmp(v, "text") != 0))
        return pg_cli_usage_error("diff", "--format must be text or json, not '%s'",
                                  v ? v : "(nothing)");
      json = strcmp(v, "json") == 0, i++;
    } else if (a[0] == '-' && a[1] == '-') {
      return pg_cli_usage_error("diff", "unknown option '%s' (see phasegate diff --help)", a);
    } else if (npaths < 2) {
      paths[npaths++] = a;
    } else {
      return pg_cli_usage_error("diff", "too many arguments: '%s' (expected A and B)", a);
    }
  }
  if (npaths != 2) return pg_cli_usage_error("diff", "expected two tensor files, A (impl) and B (reference)");

  struct pg_cmp_rule rule;
  memset(&rule, 0, sizeof rule);
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_cmp_rule_parse(rule_s, &rule, &err) != PG_OK)
    return pg_cli_usage_error("diff", "%s", err.message);

  struct pg_tensor ta, tb;
  pg_tensor_init(&ta);
  pg_tensor_init(&tb);
  if (pg_tensor_file_read(paths[0], name, &ta, &err) != PG_OK ||
      pg_tensor_file_read(paths[1], name, &tb, &err) != PG_OK) {
    pg_tensor_reset(&ta);
    fprintf(stderr, "phasegate diff: error: %s\n", err.message);
    return PG_EXIT_ERROR;
  }
  double datol, drtol;
  pg_cmp_default_tolerance(tb.dtype, &datol, &drtol);
  rule.atol = atol >= 0 ? atol : datol;
  rule.rtol = rtol >= 0 ? rtol : drtol;
  rule.equal_nan = equal_nan;

  struct pg_cmp_result res;
  int rc = pg_tensor_compare(&ta.dl, &tb.dl, &rule, threads, &res, &err);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
  if (rc != PG_OK) {
    fprintf(stderr, "phasegate diff: error: %s\n", err.message);
    return PG_EXIT_ERROR;
  }
  char rule_text[160];
  if (!res.structural && !pg_dtype_is_float(res.ref_dtype))
    snprintf(rule_text, sizeof rule_text, "exact (integer and bool outputs compare exactly)");
  else
    pg_cmp_rule_format(&rule, PG_RULE_FORM_FULL, rule_text, sizeof rule_text);
  if (json) print_json(paths[0], paths[1], rule_text, &rule, &res);
  else print_human(paths[0], paths[1], rule_text, &res);
  return res.passed ? PG_EXIT_PASS : PG_EXIT_FAIL;
}
