/* tests/compare/test-compare.c — unit tests of compare/: every rule and metric with
 * hand-computed expectations, structural mismatches, mistrust, the CPU-reproducer
 * flag, first-mismatch ordering across chunks, and thread-count / SIMD-variant
 * invariance. In-memory tensors only (no I/O).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"
#include "phasegate/compare.h"
#include "rule_edges.h"

/* A tensor of `dtype` and shape filled from doubles (pg_store_f64 rounding). */
static void make(struct pg_tensor *t, enum pg_dtype dtype, int ndim, const int64_t *shape,
                 const double *v) {
  pg_tensor_init(t);
  PG_CHECK_OK(pg_tensor_alloc(t, dtype, ndim, shape, NULL));
  if (v)
    for (int64_t i = 0; i < t->numel; i++) pg_store_f64(t->dl.data, dtype, (size_t)i, v[i]);
}

static struct pg_cmp_rule rule_close(double atol, double rtol) {
  struct pg_cmp_rule r;
  memset(&r, 0, sizeof r);
  r.kind = PG_RULE_ALLCLOSE;
  r.atol = atol;
  r.rtol = rtol;
  return r;
}

static void cmp(const struct pg_tensor *a, const struct pg_tensor *b, const struct pg_cmp_rule *r,
                int threads, struct pg_cmp_result *out) {
  struct pg_error err;
  pg_error_clear(&err);
  int rc = pg_tensor_compare(&a->dl, &b->dl, r, threads, out, &err);
  PG_CHECK_MSG(rc == PG_OK, "compare failed: %s", err.message);
}

/* The same 1-D pair in a given dtype. */
static void cmp1(enum pg_dtype t, int n, const double *a, const double *b,
                 const struct pg_cmp_rule *r, struct pg_cmp_result *out) {
  struct pg_tensor ta, tb;
  int64_t shape[1] = {n};
  make(&ta, t, 1, shape, a);
  make(&tb, t, 1, shape, b);
  cmp(&ta, &tb, r, 1, out);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

/* The seed's atol = rtol = 1e-3 for every float dtype (docs/design.md §7), not a per-dtype
 * table; integers and bool compare exactly. */
PG_TEST(default_tolerances) {
  double a, r;
  enum pg_dtype floats[] = {PG_DTYPE_F16, PG_DTYPE_BF16, PG_DTYPE_F32, PG_DTYPE_F64};
  for (int i = 0; i < 4; i++) {
    pg_cmp_default_tolerance(floats[i], &a, &r);
    PG_CHECK_MSG(a == 1e-3 && r == 1e-3, "%s: atol %g rtol %g", pg_dtype_name(floats[i]), a, r);
  }
  pg_cmp_default_tolerance(PG_DTYPE_I32, &a, &r);
  PG_CHECK(a == 0 && r == 0);
  pg_cmp_default_tolerance(PG_DTYPE_BOOL, &a, &r);
  PG_CHECK(a == 0 && r == 0);
  struct pg_cmp_rule rule;
  pg_cmp_rule_init(&rule, PG_DTYPE_F32);
  PG_CHECK(rule.kind == PG_RULE_ALLCLOSE && rule.atol == 1e-3 && rule.rtol == 1e-3);
}

PG_TEST(rule_parse) {
  struct pg_cmp_rule r = rule_close(0.5, 0.25);
  struct pg_error err;
  PG_CHECK_OK(pg_cmp_rule_parse("ulp:3", &r, &err));
  PG_CHECK(r.kind == PG_RULE_ULP && r.ulp == 3 && r.atol == 0.5 && r.rtol == 0.25);
  PG_CHECK_OK(pg_cmp_rule_parse("ratio:0.01", &r, &err));
  PG_CHECK(r.kind == PG_RULE_RATIO && r.ratio == 0.01);
  PG_CHECK_OK(pg_cmp_rule_parse("exact", &r, &err));
  PG_CHECK(r.kind == PG_RULE_EXACT);
  PG_CHECK_OK(pg_cmp_rule_parse("allclose", &r, &err));
  PG_CHECK(r.kind == PG_RULE_ALLCLOSE);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ulp:-1", &r, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ulp:", &r, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ulp:2x", &r, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ratio:1.5", &r, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ratio:nan", &r, &err));
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("close", &r, &err));
  PG_CHECK(strstr(err.message, "'close'") != NULL);
  char buf[128];
  r = rule_close(1e-3, 1e-3);
  pg_cmp_rule_format(&r, PG_RULE_FORM_FULL, buf, sizeof buf);
  PG_CHECK_EQ_STR("allclose(atol=0.001, rtol=0.001)", buf);
}

/* The edge forms (rule_edges.h, shared with the suite loader's test): accepted or
 * refused as listed; whitespace refused with its own reason. */
PG_TEST(rule_parse_edges) {
  for (size_t i = 0; i < sizeof pg_rule_edges / sizeof *pg_rule_edges; i++) {
    struct pg_cmp_rule r = rule_close(0.5, 0.25);
    struct pg_error err;
    pg_error_clear(&err);
    int rc = pg_cmp_rule_parse(pg_rule_edges[i].text, &r, &err);
    PG_CHECK_MSG((rc == PG_OK) == pg_rule_edges[i].ok, "'%s': rc %d (%s)", pg_rule_edges[i].text,
                 rc, err.message);
    PG_CHECK(rc == PG_OK || rc == PG_EINVAL);
    PG_CHECK(pg_cmp_rule_parse(pg_rule_edges[i].text, &r, NULL) == rc); /* err may be NULL */
  }
  struct pg_cmp_rule r;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_EINVAL, pg_cmp_rule_parse("ratio: 0.5", &r, &err));
  PG_CHECK_MSG(strstr(err.message, "no whitespace") != NULL, "%s", err.message);
  PG_CHECK_OK(pg_cmp_rule_parse("ulp:9223372036854775807", &r, &err));
  PG_CHECK(r.ulp == INT64_MAX);
  PG_CHECK_OK(pg_cmp_rule_parse("ratio:5e-1", &r, &err));
  PG_CHECK(r.ratio == 0.5);
}

/* One formatter, two forms: the name reads back through the parser to the same rule;
 * the full form adds what else decides the verdict. */
PG_TEST(rule_format_forms) {
  static const struct {
    const char *text, *full, *full_nan;
  } forms[] = {
      {"allclose", "allclose(atol=0.5, rtol=0.25)", "allclose(atol=0.5, rtol=0.25, equal_nan)"},
      {"exact", "exact", "exact(equal_nan)"},
      {"ulp:4", "ulp:4", "ulp:4(equal_nan)"},
      {"ratio:0.01", "ratio:0.01(atol=0.5, rtol=0.25)",
       "ratio:0.01(atol=0.5, rtol=0.25, equal_nan)"},
  };
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    struct pg_cmp_rule r = rule_close(0.5, 0.25), back = r;
    char buf[128];
    PG_CHECK_OK(pg_cmp_rule_parse(forms[i].text, &r, NULL));
    pg_cmp_rule_format(&r, PG_RULE_FORM_NAME, buf, sizeof buf);
    PG_CHECK_EQ_STR(forms[i].text, buf);
    PG_CHECK_OK(pg_cmp_rule_parse(buf, &back, NULL));
    PG_CHECK(back.kind == r.kind && back.ulp == r.ulp && back.ratio == r.ratio);
    pg_cmp_rule_format(&r, PG_RULE_FORM_FULL, buf, sizeof buf);
    PG_CHECK_EQ_STR(forms[i].full, buf);
    r.equal_nan = 1;
    pg_cmp_rule_format(&r, PG_RULE_FORM_FULL, buf, sizeof buf);
    PG_CHECK_EQ_STR(forms[i].full_nan, buf);
    pg_cmp_rule_format(&r, PG_RULE_FORM_NAME, buf, sizeof buf);
    PG_CHECK_EQ_STR(forms[i].text, buf); /* the name never carries equal_nan */
  }
  char small[4];
  struct pg_cmp_rule r = rule_close(0.5, 0.25);
  pg_cmp_rule_format(&r, PG_RULE_FORM_NAME, small, sizeof small);
  PG_CHECK_EQ_STR("all", small);
  pg_cmp_rule_format(NULL, PG_RULE_FORM_NAME, small, sizeof small);
  PG_CHECK_EQ_STR("(no", small);
}

PG_TEST(allclose_basic_and_multi_index) {
  double b[4] = {1, 2, 3, 4}, a[4] = {1, 2.002, 3, 5};
  int64_t shape[2] = {2, 2};
  struct pg_tensor ta, tb;
  make(&ta, PG_DTYPE_F64, 2, shape, a);
  make(&tb, PG_DTYPE_F64, 2, shape, b);
  struct pg_cmp_rule r = rule_close(0, 1e-3);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK(!res.passed && !res.structural);
  PG_CHECK_EQ_INT(4, res.n);
  PG_CHECK_EQ_INT(1, res.mismatches); /* 0.002 <= 1e-3*2 passes; 1 > 4e-3 fails */
  PG_CHECK(res.mismatch_ratio == 0.25);
  PG_CHECK(res.max_abs_diff == 1.0);
  PG_CHECK_EQ_INT(1, res.max_abs_index[0]);
  PG_CHECK_EQ_INT(1, res.max_abs_index[1]);
  PG_CHECK_EQ_INT(3, res.max_abs_flat);
  PG_CHECK(res.max_rel_diff == 1.0 / (4 + 1e-8));
  PG_CHECK_EQ_INT(1, res.n_first);
  PG_CHECK_EQ_INT(1, res.first[0].index[0]);
  PG_CHECK_EQ_INT(1, res.first[0].index[1]);
  PG_CHECK(res.first[0].impl_value == 5.0 && res.first[0].abs_diff == 1.0);
  PG_CHECK(res.first[0].rel_diff == 1.0 / (4 + 1e-8));
  r.rtol = 0.25; /* 1 <= 0.25*4 */
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK(res.passed && res.mismatches == 0 && res.n_first == 0);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(allclose_boundary_is_inclusive) {
  /* |a-b| == atol + rtol*|b| passes (numpy's less_equal) */
  double b[2] = {2, 0}, a[2] = {2.5, 0.25};
  struct pg_cmp_rule r = rule_close(0.25, 0.125);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 2, a, b, &r, &res);
  PG_CHECK(res.passed);
  a[1] = 0.2500001;
  cmp1(PG_DTYPE_F64, 2, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.mismatches);
}

PG_TEST(infinities) {
  double b[5] = {INFINITY, -INFINITY, INFINITY, 1, 2};
  double a[5] = {INFINITY, -INFINITY, -INFINITY, INFINITY, 2};
  struct pg_cmp_rule r = rule_close(1e300, 1e300 * 0 + 1); /* huge tolerance: inf still fails */
  r.atol = 1e300;
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 5, a, b, &r, &res);
  PG_CHECK_EQ_INT(2, res.mismatches);
  PG_CHECK_EQ_INT(2, res.first_flat[0]);
  PG_CHECK_EQ_INT(3, res.first_flat[1]);
  PG_CHECK_EQ_INT(2, res.mismatches_nonfinite);
  PG_CHECK_EQ_INT(4, res.inf_impl);
  PG_CHECK_EQ_INT(3, res.inf_ref);
  PG_CHECK_EQ_INT(1, res.n_finite);
  PG_CHECK(res.max_abs_diff == 0.0);
  PG_CHECK_EQ_INT(4, res.max_abs_flat);
  PG_CHECK(isinf(res.first[1].impl_value) && isinf(res.first[1].abs_diff));
}

PG_TEST(nans_and_equal_nan) {
  double b[4] = {NAN, 1, NAN, 1}, a[4] = {NAN, NAN, 1, 1};
  struct pg_cmp_rule r = rule_close(1, 1);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F32, 4, a, b, &r, &res);
  PG_CHECK_EQ_INT(3, res.mismatches);
  PG_CHECK_EQ_INT(2, res.nan_impl);
  PG_CHECK_EQ_INT(2, res.nan_ref);
  PG_CHECK_EQ_INT(0, res.inf_impl);
  r.equal_nan = 1;
  cmp1(PG_DTYPE_F32, 4, a, b, &r, &res);
  PG_CHECK_EQ_INT(2, res.mismatches);
  PG_CHECK_EQ_INT(1, res.first_flat[0]);
  PG_CHECK_EQ_INT(2, res.first_flat[1]);
  PG_CHECK_EQ_INT(1, res.n_finite);
  r.kind = PG_RULE_EXACT;
  cmp1(PG_DTYPE_F32, 4, a, b, &r, &res);
  PG_CHECK_EQ_INT(2, res.mismatches);
  r.equal_nan = 0;
  cmp1(PG_DTYPE_F32, 4, a, b, &r, &res);
  PG_CHECK_EQ_INT(3, res.mismatches);
}

PG_TEST(exact_rule) {
  double b[3] = {0.0, 1.0, -2.5}, a[3] = {-0.0, nextafter(1.0, 2.0), -2.5};
  struct pg_cmp_rule r = rule_close(1, 1);
  r.kind = PG_RULE_EXACT;
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 3, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.mismatches); /* -0 == +0 as numbers */
  PG_CHECK_EQ_INT(1, res.first_flat[0]);
}

PG_TEST(ulp_rule_every_float_dtype) {
  struct pg_cmp_rule r = rule_close(0, 0);
  r.kind = PG_RULE_ULP;
  r.ulp = 1;
  struct pg_cmp_result res;
  /* fp32: 1 ulp, 0 ulp (+-0), 2 ulp (-denorm_min vs +denorm_min), 3 ulp */
  {
    double b[4] = {1.0, 0.0, FLT_TRUE_MIN, 2.0};
    double a[4] = {nextafterf(1.0f, 2.0f), -0.0, -FLT_TRUE_MIN,
                   nextafterf(nextafterf(nextafterf(2.0f, 0.0f), 0.0f), 0.0f)};
    cmp1(PG_DTYPE_F32, 4, a, b, &r, &res);
    PG_CHECK_EQ_INT(2, res.mismatches);
    PG_CHECK_EQ_INT(2, res.first_flat[0]);
    PG_CHECK_EQ_INT(3, res.first_flat[1]);
    PG_CHECK(res.max_ulp == 3.0);
  }
  {
    double b[2] = {1.0, -1.0}, a[2] = {nextafter(1.0, 0.0), nextafter(-1.0, 0.0)};
    cmp1(PG_DTYPE_F64, 2, a, b, &r, &res);
    PG_CHECK(res.passed && res.max_ulp == 1.0);
    /* -DBL_MAX vs DBL_MAX: distance overflows int64, fits uint64 */
    double c[2] = {DBL_MAX, 0}, d[2] = {-DBL_MAX, 0};
    cmp1(PG_DTYPE_F64, 2, c, d, &r, &res);
    PG_CHECK(res.max_ulp == 2.0 * (double)0x7fefffffffffffffULL);
  }
  {
    /* fp16: 1.0 = 0x3c00; 1 + 2^-10 is 1 ulp, 1 + 2^-9 is 2 ulp; 65504 vs inf fails */
    double b[3] = {1.0, 1.0, 65504.0}, a[3] = {1.0 + 0x1p-10, 1.0 + 0x1p-9, INFINITY};
    cmp1(PG_DTYPE_F16, 3, a, b, &r, &res);
    PG_CHECK_EQ_INT(2, res.mismatches);
    PG_CHECK(res.max_ulp == 2.0);
    /* bf16: 1 + 2^-7 is 1 ulp */
    double e[2] = {1.0 + 0x1p-7, -0.0}, f[2] = {1.0, 0x1p-133}; /* denorm_min of bf16 */
    cmp1(PG_DTYPE_BF16, 2, e, f, &r, &res);
    PG_CHECK(res.passed && res.max_ulp == 1.0);
  }
}

PG_TEST(ratio_rule) {
  double b[10], a[10];
  for (int i = 0; i < 10; i++) b[i] = a[i] = i + 1;
  a[3] = 100;
  a[7] = -100;
  struct pg_cmp_rule r = rule_close(1e-6, 1e-6);
  r.kind = PG_RULE_RATIO;
  r.ratio = 0.2;
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(res.passed && res.mismatches == 2);
  r.ratio = 0.1;
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(!res.passed && res.mismatches == 2);
}

PG_TEST(integers_and_bool_compare_exactly) {
  struct pg_cmp_rule r = rule_close(10, 10); /* tolerance is ignored for integers */
  struct pg_cmp_result res;
  double b[3] = {1, 2, 3}, a[3] = {1, 2, 4};
  cmp1(PG_DTYPE_I32, 3, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.mismatches);
  PG_CHECK(res.max_abs_diff == 1.0 && res.max_ulp == 1.0);
  cmp1(PG_DTYPE_I8, 3, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.mismatches);
  cmp1(PG_DTYPE_U8, 3, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.mismatches);
  /* int64 beyond 2^53: equal as doubles, still a mismatch */
  struct pg_tensor ta, tb;
  int64_t shape[1] = {2};
  make(&ta, PG_DTYPE_I64, 1, shape, NULL);
  make(&tb, PG_DTYPE_I64, 1, shape, NULL);
  int64_t *pa = ta.dl.data, *pb = tb.dl.data;
  pa[0] = (INT64_C(1) << 60) + 1;
  pb[0] = INT64_C(1) << 60;
  pa[1] = INT64_MIN;
  pb[1] = INT64_MAX;
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK_EQ_INT(2, res.mismatches);
  PG_CHECK(res.max_ulp == 18446744073709551615.0);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
  /* bool: any non-zero byte is true */
  make(&ta, PG_DTYPE_BOOL, 1, shape, NULL);
  make(&tb, PG_DTYPE_BOOL, 1, shape, NULL);
  ((uint8_t *)ta.dl.data)[0] = 2;
  ((uint8_t *)tb.dl.data)[0] = 1;
  ((uint8_t *)ta.dl.data)[1] = 0;
  ((uint8_t *)tb.dl.data)[1] = 1;
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK_EQ_INT(1, res.mismatches);
  PG_CHECK_EQ_INT(1, res.first_flat[0]);
  PG_CHECK(res.first[0].impl_value == 0.0);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(metrics_hand_computed) {
  double b[4] = {1, 2, 3, 4}, a[4] = {1.5, 2, 2, 4};
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 4, a, b, &r, &res);
  PG_CHECK_EQ_INT(2, res.mismatches);
  PG_CHECK(res.mean_abs_diff == 1.5 / 4);
  PG_CHECK(res.rmse == sqrt(1.25 / 4));
  PG_CHECK_NEAR(27.5 / sqrt(26.25 * 30), res.cosine_similarity, 1e-15);
  PG_CHECK(res.error_balance == 0.0);
  PG_CHECK(res.share_within_1e3 == 0.5 && res.share_within_5e3 == 0.5);
  PG_CHECK(res.max_rel_diff == 0.5 / (1 + 1e-8));
  PG_CHECK_EQ_INT(0, res.max_rel_flat);
  PG_CHECK(res.max_abs_diff == 1.0);
  PG_CHECK_EQ_INT(2, res.max_abs_flat);
  PG_CHECK(res.zero_share_ref == 0.0 && !res.mistrusted);
  /* sign bias: all above */
  double c[4] = {1.1, 2.1, 3.1, 4};
  cmp1(PG_DTYPE_F64, 4, c, b, &r, &res);
  PG_CHECK(res.error_balance == 0.75);
  /* within 1e-3 relative: 1.0005 vs 1 yes, 1.004 within 5e-3 only */
  double d[4] = {1.0005, 2.008, 3, 4.1};
  cmp1(PG_DTYPE_F64, 4, d, b, &r, &res);
  PG_CHECK(res.share_within_1e3 == 0.5 && res.share_within_5e3 == 0.75);
  /* cosine: opposite vectors */
  double e[4] = {-1, -2, -3, -4};
  cmp1(PG_DTYPE_F64, 4, e, b, &r, &res);
  PG_CHECK_NEAR(-1.0, res.cosine_similarity, 1e-15);
}

PG_TEST(max_index_ties_take_first) {
  double b[6] = {0, 0, 0, 0, 0, 0}, a[6] = {0, 2, -2, 1, 2, 0};
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F32, 6, a, b, &r, &res);
  PG_CHECK_EQ_INT(1, res.max_abs_flat);
  PG_CHECK_EQ_INT(1, res.max_rel_flat);
}

PG_TEST(structural_mismatch_is_a_result) {
  struct pg_tensor ta, tb;
  int64_t s1[2] = {2, 3}, s2[2] = {3, 2};
  make(&ta, PG_DTYPE_F32, 2, s1, NULL);
  make(&tb, PG_DTYPE_F32, 2, s2, NULL);
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK(res.structural && !res.passed);
  PG_CHECK_EQ_STR("shape mismatch: impl [2, 3], reference [3, 2]", res.structural_reason);
  PG_CHECK_EQ_INT(2, res.impl_ndim);
  PG_CHECK_EQ_INT(3, res.ref_shape[0]);
  pg_tensor_reset(&ta);
  make(&ta, PG_DTYPE_F16, 2, s2, NULL);
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK(res.structural);
  PG_CHECK_EQ_STR("dtype mismatch: impl float16, reference float32", res.structural_reason);
  pg_tensor_reset(&ta);
  int64_t s3[1] = {6};
  make(&ta, PG_DTYPE_F32, 1, s3, NULL);
  cmp(&ta, &tb, &r, 1, &res);
  PG_CHECK(res.structural && strstr(res.structural_reason, "impl [6], reference [3, 2]"));
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(bad_arguments_are_errors) {
  struct pg_tensor ta, tb;
  int64_t s[1] = {4};
  make(&ta, PG_DTYPE_F32, 1, s, NULL);
  make(&tb, PG_DTYPE_F32, 1, s, NULL);
  struct pg_cmp_rule r = rule_close(-1, 0);
  struct pg_cmp_result res;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_EINVAL, pg_tensor_compare(&ta.dl, &tb.dl, &r, 1, &res, &err));
  r = rule_close(NAN, 0);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_tensor_compare(&ta.dl, &tb.dl, &r, 1, &res, &err));
  r = rule_close(0, 0);
  PG_CHECK_EQ_INT(PG_EINVAL, pg_tensor_compare(NULL, &tb.dl, &r, 1, &res, &err));
  ta.dl.dtype.bits = 24;
  PG_CHECK_EQ_INT(PG_EDTYPE, pg_tensor_compare(&ta.dl, &tb.dl, &r, 1, &res, &err));
  ta.dl.dtype.bits = 32;
  int64_t strides[1] = {2};
  ta.dl.strides = strides;
  PG_CHECK_EQ_INT(PG_ENOTSUP, pg_tensor_compare(&ta.dl, &tb.dl, &r, 1, &res, &err));
  ta.dl.strides = NULL;
  ta.shape[0] = -1;
  PG_CHECK(pg_tensor_compare(&ta.dl, &tb.dl, &r, 1, &res, &err) < 0);
  ta.shape[0] = 4;
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(empty_and_scalar_tensors) {
  struct pg_tensor ta, tb;
  int64_t s[2] = {0, 5};
  make(&ta, PG_DTYPE_F32, 2, s, NULL);
  make(&tb, PG_DTYPE_F32, 2, s, NULL);
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 0, &res);
  PG_CHECK(res.passed && res.n == 0 && res.max_abs_flat == -1);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
  double a = 1.5, b = 1.0;
  make(&ta, PG_DTYPE_F32, 0, NULL, &a);
  make(&tb, PG_DTYPE_F32, 0, NULL, &b);
  cmp(&ta, &tb, &r, 0, &res);
  PG_CHECK(!res.passed && res.n == 1 && res.max_abs_diff == 0.5 && res.n_first == 1);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(mistrusted) {
  double b[10] = {0, 0, 0, 1, 2, 3, 4, 5, 6, 7}, a[10];
  memcpy(a, b, sizeof a);
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(res.passed && res.mistrusted);
  PG_CHECK(res.zero_share_ref == 0.3 && res.zeros_ref == 3);
  PG_CHECK(strstr(res.mistrust_reason, "30.0%") != NULL);
  b[2] = a[2] = -1; /* 20 % zeros */
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(!res.mistrusted);
  cmp1(PG_DTYPE_F32, 9, a + 1, b + 1, &r, &res); /* n < 10 never mistrusted */
  PG_CHECK(!res.mistrusted);
  for (int i = 0; i < 10; i++) b[i] = 5, a[i] = i;
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(res.mistrusted && strstr(res.mistrust_reason, "equal"));
  b[9] = NAN;
  cmp1(PG_DTYPE_F32, 10, a, b, &r, &res);
  PG_CHECK(!res.mistrusted);
  double z[10] = {0}; /* -0 counts as zero */
  z[0] = -0.0;
  cmp1(PG_DTYPE_F32, 10, z, z, &r, &res);
  PG_CHECK(res.mistrusted && res.zeros_ref == 10);
}

PG_TEST(cpu_reproducer_candidate) {
  /* atol 1e-5, rtol 1e-3: cells with |b| >= 0.01 are governed by rtol */
  double b[5] = {100, 200, -50, 1e-6, 3}, a[5];
  for (int i = 0; i < 5; i++) a[i] = b[i] * (1 + 1e-7);
  a[3] = 5e-5; /* small |golden| cell trips atol */
  struct pg_cmp_rule r = rule_close(1e-5, 1e-3);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 5, a, b, &r, &res);
  PG_CHECK(!res.passed && res.mismatches == 1);
  PG_CHECK(res.cpu_reproducer_candidate);
  a[1] = 200 * (1 + 1e-4); /* passes, but only 10x inside rtol */
  cmp1(PG_DTYPE_F64, 5, a, b, &r, &res);
  PG_CHECK(!res.passed && !res.cpu_reproducer_candidate);
  a[1] = 200 * (1 + 1e-7);
  a[4] = NAN; /* a NaN failure is never the golden's fault */
  cmp1(PG_DTYPE_F64, 5, a, b, &r, &res);
  PG_CHECK(!res.cpu_reproducer_candidate);
  a[4] = 3;
  a[3] = 1e-6; /* passing: not flagged */
  cmp1(PG_DTYPE_F64, 5, a, b, &r, &res);
  PG_CHECK(res.passed && !res.cpu_reproducer_candidate);
}

/* Issue 13: the flag fired on a case whose max_rel_diff was 3.55 at rtol 1e-3 (a real
 * error at near-zero cells of a unit-scale tensor). A difference above rtol x the
 * golden's RMS is never accumulation noise: not flagged, so "the relative error is far
 * below rtol where rtol governs" and the printed numbers never disagree. */
PG_TEST(cpu_reproducer_not_on_real_error) {
  double b[8] = {1.5, -2.0, 0.8, 1e-3, 3.0, -1.2, 2.2, 0.9}, a[8];
  for (int i = 0; i < 8; i++) a[i] = b[i] * (1 + 1e-7);
  a[3] = 1e-3 + 3.55e-3; /* rel diff 3.55, abs diff 3.55e-3 > atol */
  struct pg_cmp_rule r = rule_close(1e-3, 1e-3);
  struct pg_cmp_result res;
  cmp1(PG_DTYPE_F64, 8, a, b, &r, &res);
  PG_CHECK(!res.passed && res.mismatches == 1);
  PG_CHECK(fabs(res.max_rel_diff - 3.55) < 1e-3);
  PG_CHECK(!res.cpu_reproducer_candidate);
  /* the same cell off by noise-sized 1.1e-3 (under rtol x RMS ~ 1.8e-3): flagged */
  a[3] = 1e-3 + 1.1e-3;
  cmp1(PG_DTYPE_F64, 8, a, b, &r, &res);
  PG_CHECK(!res.passed && res.cpu_reproducer_candidate);
}

/* A 3 x 100 000 fp32 pair (several chunks) with mismatches scattered over chunks. */
static void big_pair(struct pg_tensor *ta, struct pg_tensor *tb, enum pg_dtype t) {
  int64_t shape[2] = {3, 100000};
  make(ta, t, 2, shape, NULL);
  make(tb, t, 2, shape, NULL);
  uint64_t s = 12345;
  for (int64_t i = 0; i < ta->numel; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    double v = (double)(int64_t)(s >> 11) / 9007199254740992.0 * 4 - 2; /* [-2, 2) */
    double noise = ((s >> 3) & 0xff) * 1e-9;
    pg_store_f64(tb->dl.data, t, (size_t)i, v);
    pg_store_f64(ta->dl.data, t, (size_t)i, v + noise);
  }
}

static const int64_t scatter[15] = {299999, 7, 65535, 65536, 70000, 131072, 1,
                                    200001, 250000, 9, 1023, 1024, 150000, 299998, 3};

PG_TEST(first_mismatches_in_index_order_across_chunks) {
  struct pg_tensor ta, tb;
  big_pair(&ta, &tb, PG_DTYPE_F32);
  float *pa = ta.dl.data;
  for (int i = 0; i < 15; i++) pa[scatter[i]] += 1.0f + (float)i;
  struct pg_cmp_rule r = rule_close(1e-5, 1e-5);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 3, &res);
  PG_CHECK_EQ_INT(15, res.mismatches);
  PG_CHECK_EQ_INT(10, res.n_first);
  const int64_t expect[10] = {1, 3, 7, 9, 1023, 1024, 65535, 65536, 70000, 131072};
  for (int i = 0; i < 10; i++) {
    PG_CHECK_EQ_INT(expect[i], res.first_flat[i]);
    PG_CHECK_EQ_INT(expect[i] / 100000, res.first[i].index[0]);
    PG_CHECK_EQ_INT(expect[i] % 100000, res.first[i].index[1]);
    PG_CHECK(res.first[i].impl_value == (double)pa[expect[i]]);
  }
  /* the largest injected error (+15 at 3) is the max abs diff */
  PG_CHECK_EQ_INT(3, res.max_abs_flat);
  PG_CHECK_EQ_INT(0, res.max_abs_index[0]);
  PG_CHECK_EQ_INT(3, res.max_abs_index[1]);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

static void check_same(const struct pg_cmp_result *x, const struct pg_cmp_result *y) {
  PG_CHECK(memcmp(x, y, sizeof *x) == 0);
  PG_CHECK_EQ_INT(x->mismatches, y->mismatches);
  PG_CHECK(x->mean_abs_diff == y->mean_abs_diff && x->rmse == y->rmse);
  PG_CHECK(x->cosine_similarity == y->cosine_similarity);
  PG_CHECK(x->max_rel_flat == y->max_rel_flat && x->max_abs_flat == y->max_abs_flat);
}

PG_TEST(thread_count_invariance) {
  enum pg_dtype types[4] = {PG_DTYPE_F32, PG_DTYPE_F16, PG_DTYPE_BF16, PG_DTYPE_F64};
  for (int k = 0; k < 4; k++) {
    struct pg_tensor ta, tb;
    big_pair(&ta, &tb, types[k]);
    for (int i = 0; i < 15; i++)
      pg_store_f64(ta.dl.data, types[k], (size_t)scatter[i], i % 3 ? NAN : 3.0 + i);
    struct pg_cmp_rule r = rule_close(1e-6, 1e-6);
    struct pg_cmp_result r1, r2, r7;
    cmp(&ta, &tb, &r, 1, &r1);
    cmp(&ta, &tb, &r, 2, &r2);
    cmp(&ta, &tb, &r, 7, &r7);
    PG_CHECK(r1.mismatches >= 15 && r1.n_first == 10);
    check_same(&r1, &r2);
    check_same(&r1, &r7);
    pg_tensor_reset(&ta);
    pg_tensor_reset(&tb);
  }
}

/* Counts, maxima and indices are identical for every SIMD variant; sums are added
 * in a lane-width-dependent order, so they agree to rounding only. */
static void check_close(const struct pg_cmp_result *x, const struct pg_cmp_result *y) {
  PG_CHECK_EQ_INT(x->mismatches, y->mismatches);
  PG_CHECK_EQ_INT(x->n_finite, y->n_finite);
  PG_CHECK_EQ_INT(x->nan_impl + 7 * x->inf_impl, y->nan_impl + 7 * y->inf_impl);
  PG_CHECK(x->max_abs_diff == y->max_abs_diff && x->max_abs_flat == y->max_abs_flat);
  PG_CHECK(x->max_rel_diff == y->max_rel_diff && x->max_rel_flat == y->max_rel_flat);
  PG_CHECK(x->max_ulp == y->max_ulp && x->error_balance == y->error_balance);
  PG_CHECK(x->share_within_1e3 == y->share_within_1e3 && x->zeros_ref == y->zeros_ref);
  PG_CHECK(x->cpu_reproducer_candidate == y->cpu_reproducer_candidate);
  PG_CHECK(x->mistrusted == y->mistrusted && x->passed == y->passed);
  PG_CHECK_EQ_INT(x->n_first, y->n_first);
  for (int i = 0; i < x->n_first; i++) PG_CHECK_EQ_INT(x->first_flat[i], y->first_flat[i]);
  PG_CHECK_NEAR(x->mean_abs_diff, y->mean_abs_diff, 1e-12 * x->mean_abs_diff);
  PG_CHECK_NEAR(x->rmse, y->rmse, 1e-12 * x->rmse);
  PG_CHECK_NEAR(x->cosine_similarity, y->cosine_similarity, 1e-12);
}

PG_TEST(simd_variants_agree) {
  enum pg_dtype types[4] = {PG_DTYPE_F32, PG_DTYPE_F16, PG_DTYPE_BF16, PG_DTYPE_F64};
  const char *caps[3] = {"base", "avx2", "avx512"};
  for (int k = 0; k < 4; k++) {
    for (int nan = 0; nan < 2; nan++) {
      struct pg_tensor ta, tb;
      big_pair(&ta, &tb, types[k]);
      if (nan) /* some blocks take the general (masked) loop */
        for (int i = 0; i < 15; i++)
          pg_store_f64(ta.dl.data, types[k], (size_t)scatter[i], i % 2 ? NAN : -INFINITY);
      struct pg_cmp_rule r = rule_close(1e-4, 1e-3);
      struct pg_cmp_result x[3];
      for (int v = 0; v < 3; v++) { /* this test runs in its own process */
        setenv("PHASEGATE_SIMD", caps[v], 1);
        cmp(&ta, &tb, &r, 2, &x[v]);
      }
      unsetenv("PHASEGATE_SIMD");
      check_close(&x[0], &x[1]);
      check_close(&x[0], &x[2]);
      pg_tensor_reset(&ta);
      pg_tensor_reset(&tb);
    }
  }
}

/* Every fp16 / bf16 bit pattern against its successor pattern: the vector
 * conversion in the kernel must agree with the scalar reference conversion. */
static void all_patterns(enum pg_dtype t) {
  struct pg_tensor ta, tb;
  int64_t shape[1] = {65536};
  make(&ta, t, 1, shape, NULL);
  make(&tb, t, 1, shape, NULL);
  uint16_t *pa = ta.dl.data, *pb = tb.dl.data;
  for (int i = 0; i < 65536; i++) pb[i] = (uint16_t)i, pa[i] = (uint16_t)(i * 7 + 1);
  struct pg_cmp_rule r = rule_close(0, 0);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 2, &res);
  int64_t mism = 0, nan_a = 0, inf_a = 0, fin = 0, first = -1;
  double maxabs = -1, maxrel = -1;
  for (int i = 0; i < 65536; i++) {
    double a = t == PG_DTYPE_F16 ? pg_f16_to_f32(pa[i]) : pg_bf16_to_f32(pa[i]);
    double b = t == PG_DTYPE_F16 ? pg_f16_to_f32(pb[i]) : pg_bf16_to_f32(pb[i]);
    if (!(a == b)) mism++, first = first < 0 ? i : first;
    nan_a += isnan(a) != 0;
    inf_a += isinf(a) != 0;
    if (isfinite(a) && isfinite(b)) {
      fin++;
      if (fabs(a - b) > maxabs) maxabs = fabs(a - b);
      if (fabs(a - b) / (fabs(b) + 1e-8) > maxrel) maxrel = fabs(a - b) / (fabs(b) + 1e-8);
    }
  }
  PG_CHECK_EQ_INT(mism, res.mismatches);
  PG_CHECK_EQ_INT(nan_a, res.nan_impl);
  PG_CHECK_EQ_INT(inf_a, res.inf_impl);
  PG_CHECK_EQ_INT(fin, res.n_finite);
  PG_CHECK_EQ_INT(first, res.first_flat[0]);
  PG_CHECK(maxabs == res.max_abs_diff);
  PG_CHECK(maxrel == res.max_rel_diff);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

PG_TEST(f16_all_patterns) { all_patterns(PG_DTYPE_F16); }
PG_TEST(bf16_all_patterns) { all_patterns(PG_DTYPE_BF16); }

/* max_rel when (almost) every pair is equal: 0 at the first finite pair, or the one
 * tiny difference, even below 2^-900 where the re-scan threshold is clamped. */
PG_TEST(max_rel_of_equal_and_tiny_differences) {
  struct pg_tensor ta, tb;
  int64_t shape[1] = {200000};
  make(&ta, PG_DTYPE_F64, 1, shape, NULL);
  make(&tb, PG_DTYPE_F64, 1, shape, NULL);
  double *pa = ta.dl.data, *pb = tb.dl.data;
  for (int i = 0; i < 200000; i++) pa[i] = pb[i] = (i % 7) - 3.0;
  pa[0] = pb[0] = NAN;
  pa[1] = pb[1] = INFINITY;
  struct pg_cmp_rule r = rule_close(0, 0);
  r.equal_nan = 1;
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 2, &res);
  PG_CHECK(res.passed && res.max_rel_diff == 0.0 && res.max_abs_diff == 0.0);
  PG_CHECK_EQ_INT(2, res.max_rel_flat);
  PG_CHECK_EQ_INT(2, res.max_abs_flat);
  pb[150001] = 0.0;
  pa[150001] = 4.9406564584124654e-324; /* rel = denorm_min / 1e-8, far below 2^-900 */
  cmp(&ta, &tb, &r, 2, &res);
  PG_CHECK_EQ_INT(150001, res.max_rel_flat);
  PG_CHECK(res.max_rel_diff == 4.9406564584124654e-324 / 1e-8);
  pa[70000] = pb[70000] * (1 + 0x1p-52); /* a larger relative difference, earlier */
  cmp(&ta, &tb, &r, 7, &res);
  PG_CHECK_EQ_INT(70000, res.max_rel_flat);
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}

/* An impl that never wrote its output leaves the runner's NaN pre-fill. */
PG_TEST(all_nan_impl) {
  struct pg_tensor ta, tb;
  big_pair(&ta, &tb, PG_DTYPE_F16);
  for (int64_t i = 0; i < ta.numel; i++) ((uint16_t *)ta.dl.data)[i] = 0x7e00;
  struct pg_cmp_rule r = rule_close(1e-3, 1e-3);
  struct pg_cmp_result res;
  cmp(&ta, &tb, &r, 2, &res);
  PG_CHECK(!res.passed);
  PG_CHECK_EQ_INT(ta.numel, res.mismatches);
  PG_CHECK_EQ_INT(ta.numel, res.mismatches_nonfinite);
  PG_CHECK_EQ_INT(ta.numel, res.nan_impl);
  PG_CHECK_EQ_INT(0, res.n_finite);
  PG_CHECK_EQ_INT(-1, res.max_abs_flat);
  PG_CHECK_EQ_INT(-1, res.max_rel_flat);
  PG_CHECK(res.share_within_1e3 == 0.0 && res.error_balance == 0.0 && !res.cpu_reproducer_candidate);
  for (int i = 0; i < 10; i++) PG_CHECK_EQ_INT(i, res.first_flat[i]);
  PG_CHECK(isnan(res.first[0].impl_value) && isnan(res.first[0].abs_diff));
  pg_tensor_reset(&ta);
  pg_tensor_reset(&tb);
}
