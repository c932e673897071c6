/* phasegate runner — hints: the one place that decides which bug kinds a failing (or
 * suspiciously passing) output's evidence points to (docs/diagnosis.md). From the facts
 * diagnose.c and evidence.c gathered — counterfactual goldens that matched the impl's
 * output, the mismatch mask's shape, the values at the mismatches, a passing output's
 * oddities, the captured output of the call — it ranks hints per tensor, strongest
 * first, one per kind. classify.c decides status, category and the case's one-line hint;
 * this file the per-tensor bug-kind hints. Nothing here runs anything, reads files or
 * prints.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "run/run_internal.h"


static void add_hint(struct pg_tensor_check *t, enum pg_hint_kind kind, int axis, int64_t tile,
                     double confidence, const char *fmt, va_list ap) {
  struct pg_hint h = {kind, confidence, "", axis >= 0 ? axis : -1, tile > 0 ? tile : -1};
  vsnprintf(h.detail, sizeof h.detail, fmt, ap);
  for (int i = 0; i < t->n_hints; i++) {
    if (t->hints[i].kind != kind) continue;
    if (t->hints[i].confidence >= confidence) return;
    memmove(&t->hints[i], &t->hints[i + 1], (size_t)(t->n_hints - i - 1) * sizeof h);
    t->n_hints--;
    break;
  }
  int at = t->n_hints;
  while (at > 0 && t->hints[at - 1].confidence < confidence) at--;
  if (at >= PG_MAX_HINTS) return;
  int n = t->n_hints < PG_MAX_HINTS ? t->n_hints : PG_MAX_HINTS - 1;
  memmove(&t->hints[at + 1], &t->hints[at], (size_t)(n - at) * sizeof h);
  t->hints[at] = h;
  t->n_hints = n + 1;
}

void pg_tensor_check_add_hint(struct pg_tensor_check *t, enum pg_hint_kind kind,
                              double confidence, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_hint(t, kind, -1, -1, confidence, fmt, ap);
  va_end(ap);
}

void pg_tensor_check_add_hint_at(struct pg_tensor_check *t, enum pg_hint_kind kind, int axis,
                                 int64_t tile, double confidence, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_hint(t, kind, axis, tile, confidence, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------------ the rules */

/* ------------------------------------------------------------------ counterfactual goldens */

void pg__classify_mutant_fit(struct pg_tensor_check *t, enum pg_hint_kind kind, int axis,
                             int64_t tile, const char *detail, const struct pg_cmp_result *mut) {
  const struct pg_cmp_result *ref = &t->cmp;
  if (ref->passed || ref->n_finite == 0 || mut->nan_impl + mut->inf_impl > ref->nan_impl + ref->inf_impl)
    return;
  /* orders of magnitude by which the mutant explains the impl better than the
   * reference: at least one, with at most a tenth of the mismatches */
  double orders = log10((ref->rmse + 1e-300) / (mut->rmse + 1e-300));
  double fewer = log10((double)(ref->mismatches + 1) / (double)(mut->mismatches + 1));
  if (fewer > orders && mut->rmse < ref->rmse) orders = fewer; /* e.g. a shift: one edge row off */
  if (!(orders >= 1.0) || mut->mismatches * 10 > ref->mismatches) return;
  double conf = 0.5 + 0.5 * fmin(1.0, (orders - 1.0) / 3.0);
  if (ref->mismatches > 0) conf *= 1.0 - (double)mut->mismatches / (double)ref->mismatches;
  pg_tensor_check_add_hint_at(t, kind, axis, tile, conf,
                           "%s: against it %lld of %lld elements mismatch (%lld against the "
                           "reference), rmse %.3g (%.3g)",
                           detail, (long long)mut->mismatches, (long long)mut->n,
                           (long long)ref->mismatches, mut->rmse, ref->rmse);
}

void pg__classify_mutant_strength(struct pg_tensor_check *t, enum pg_hint_kind kind,
                                  const char *detail, const struct pg_cmp_result *mut_vs_ref) {
  if (!mut_vs_ref->passed || t->n_undetected >= PG_MAX_UNDETECTED) return;
  char line[sizeof t->undetected[0]];
  snprintf(line, sizeof line, "%s: %s", pg_hint_kind_name(kind), detail);
  for (int i = 0; i < t->n_undetected; i++)
    if (strcmp(t->undetected[i], line) == 0) return;
  snprintf(t->undetected[t->n_undetected++], sizeof t->undetected[0], "%s", line);
}

void pg__classify_reproducer(struct pg_tensor_check *t, double spread, const char *orders) {
  /* the impl's error within what another summation order of the same maths gives:
   * the kernel is probably innocent, the tolerance (or input scale) is not */
  if (!(spread > 0) || t->cmp.max_abs_diff > 1.5 * spread) return;
  pg_tensor_check_add_hint(t, PG_HINT_SUITE_CALIBRATION, 0.8,
                           "max_abs_diff %.3g is within the %.3g that other summation orders "
                           "(%s) differ from the reference by",
                           t->cmp.max_abs_diff, spread, orders);
}

void pg__classify_py_reproducer(struct pg_tensor_check *t, const struct pg_repro_variant *rv,
                                const struct pg_cmp_result *impl_vs_variant) {
  int at = (int)(rv - t->repro);
  double best = t->repro_closest > 0 ? t->repro[t->repro_closest - 1].impl_rmse : t->cmp.rmse;
  if (rv->impl_rmse * 10.0 <= best) t->repro_closest = at + 1;
  if (strcmp(rv->precision, "float64") == 0) {
    /* the golden's own maths in float64 differs from the reference by the spread:
     * rounding and summation order, not a bug; the same rule as the built-in one */
    if (t->cmp.cpu_reproducer_candidate || impl_vs_variant->passed)
      pg__classify_reproducer(t, rv->vs_reference, "the Python golden rerun in float64");
    return;
  }
  char detail[128];
  snprintf(detail, sizeof detail, "the Python golden rerun with its inputs in %s", rv->precision);
  pg__classify_mutant_fit(t, PG_HINT_LOW_PRECISION_INPUTS, -1, -1, detail, impl_vs_variant);
}

/* ------------------------------------------------------------------ diagnosis */

/* The thresholds of the mask hints and PASS warnings (docs/diagnosis.md). */
#define PG_MASK_MIN_MISMATCHES 4   /* fewer mismatches show no pattern */
#define PG_MASK_MIN_SHARE 0.9      /* a pattern explains at least this share of them */
#define PG_ONE_SIDED_MIN_N 1024    /* a PASS's error balance means something from here */
#define PG_ONE_SIDED_BALANCE 0.1   /* |error_balance| at or above: one-sided (> 3 sigma of
                                      a fair sign at 1024 elements) */
#define PG_FALLBACK_MIN_N 1024     /* bit-exact float32 / float64 transcendental outputs */
#define PG_FALLBACK_MIN_N_16 65536 /* float16 / bfloat16: rounding makes exact matches common */

/* "32", "32 or 64", "32, 64 or 72" */
static void tiles_text(const struct pg_cmp_axis_marginal *ax, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < ax->n_tiles && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%d",
                           i == 0 ? "" : i == ax->n_tiles - 1 ? " or " : ", ", ax->tiles[i]);
}

/* periodic and tile_edge from the axis marginals; the axis explaining most wins. */
static void mask_pattern_hints(struct pg_tensor_check *t) {
  const struct pg_cmp_mask *mk = &t->mask;
  if (mk->mismatches < PG_MASK_MIN_MISMATCHES) return;
  for (int d = 0; d < mk->ndim; d++) {
    const struct pg_cmp_axis_marginal *ax = &mk->axes[d];
    if (ax->tail_start >= 0 && ax->tail_share >= PG_MASK_MIN_SHARE) {
      char tiles[64];
      tiles_text(ax, tiles, sizeof tiles);
      pg_tensor_check_add_hint_at(
          t, PG_HINT_TILE_EDGE, d, ax->tiles[0], 0.5 + 0.45 * ax->tail_share,
          "axis %d (length %lld): %.0f%% of the mismatches at indices %lld..%lld, the last "
          "partial tile of a tile size %s (%lld %% %d = %lld)", d, (long long)ax->length,
          100.0 * ax->tail_share, (long long)ax->tail_start, (long long)ax->length - 1, tiles,
          (long long)ax->length, ax->tiles[0], (long long)(ax->length % ax->tiles[0]));
    }
    if (ax->period > 0 && ax->period_share >= PG_MASK_MIN_SHARE)
      pg_tensor_check_add_hint_at(
          t, PG_HINT_PERIODIC, d, ax->period, 0.4 + 0.5 * ax->period_share,
          "axis %d (length %lld): the mismatches repeat with period %lld (%lld of every %lld "
          "indices, %.0f%% of the mismatches): a tile of %lld", d, (long long)ax->length,
          (long long)ax->period, (long long)ax->period_hot, (long long)ax->period,
          100.0 * ax->period_share, (long long)ax->period);
  }
}

/* unwritten and nan_origin from the sentinel and the first non-finite value. */
static void mask_value_hints(struct pg_tensor_check *t, const struct pg__diag_facts *f) {
  const struct pg_cmp_mask *mk = &t->mask;
  if (mk->sentinel_count > 0) {
    char lo[160], hi[160], first[160];
    int64_t idx[PG_MAX_NDIM], flat = mk->sentinel_first_flat, box = 1;
    for (int a = t->ndim - 1; a >= 0; a--) {
      idx[a] = t->shape[a] > 0 ? flat % t->shape[a] : 0;
      flat = t->shape[a] > 0 ? flat / t->shape[a] : 0;
      box *= mk->sentinel_hi[a] - mk->sentinel_lo[a] + 1;
    }
    pg_shape_format(t->ndim, mk->sentinel_lo, lo, sizeof lo);
    pg_shape_format(t->ndim, mk->sentinel_hi, hi, sizeof hi);
    pg_shape_format(t->ndim, idx, first, sizeof first);
    pg_tensor_check_add_hint(t, PG_HINT_UNWRITTEN, 0.97,
                             "%lld of %lld elements still hold the runner's prefill (never "
                             "written), first at %s, all within %s..%s (%s)",
                             (long long)mk->sentinel_count, (long long)mk->n, first, lo, hi,
                             box == mk->sentinel_count ? "that whole block" : "part of that box");
  }
  if (mk->nonfinite_first_flat < 0) return;
  char at[160];
  pg_shape_format(t->ndim, mk->nonfinite_first_index, at, sizeof at);
  static const char *const rel[] = {"", "at the same index", "in the same row",
                                    "none of them at a related position"};
  static const double conf[] = {0.7, 0.9, 0.8, 0.6};
  int r = f->nan.relation >= 0 && f->nan.relation <= 3 ? f->nan.relation : 0;
  if (r) snprintf(t->nan_input, sizeof t->nan_input, "%s", f->nan.name);
  if (r)
    pg_tensor_check_add_hint(t, PG_HINT_NAN_ORIGIN, conf[r],
                             "the first non-finite impl value (%s) is at %s (%lld in all); "
                             "input '%s' holds %lld non-finite value(s), %s",
                             mk->nonfinite_first_nan ? "NaN" : "Inf", at,
                             (long long)mk->nonfinite_count, f->nan.name, (long long)f->nan.count,
                             rel[r]);
  else
    pg_tensor_check_add_hint(t, PG_HINT_NAN_ORIGIN, conf[0],
                             "the first non-finite impl value (%s) is at %s (%lld in all); no "
                             "input holds one: the impl makes it (exp overflow, 0/0, a zero "
                             "sum, uninitialised memory)",
                             mk->nonfinite_first_nan ? "NaN" : "Inf", at,
                             (long long)mk->nonfinite_count);
}

/* The warnings of a PASS: one-sided errors, a bit-exact transcendental output. */
static void pass_hints(struct pg_tensor_check *t, const struct pg__diag_facts *f) {
  const struct pg_cmp_result *c = &t->cmp;
  t->one_sided = c->n >= PG_ONE_SIDED_MIN_N && fabs(c->error_balance) >= PG_ONE_SIDED_BALANCE;
  int is16 = t->dtype == PG_DTYPE_F16 || t->dtype == PG_DTYPE_BF16;
  int64_t min_n = is16 ? PG_FALLBACK_MIN_N_16 : PG_FALLBACK_MIN_N;
  if (f->transcendental && pg_dtype_is_float(t->dtype) && t->cmp_rule.kind != PG_RULE_EXACT &&
      t->cmp_rule.kind != PG_RULE_ULP && c->n >= min_n && c->n_finite == c->n &&
      c->max_abs_diff == 0.0 && c->max_ulp == 0.0)
    pg_tensor_check_add_hint(t, PG_HINT_GOLDEN_FALLBACK, is16 ? 0.5 : 0.6,
                             "bit-exact on all %lld elements of an output whose golden uses "
                             "%s: an independent kernel rarely is; the impl may be returning a "
                             "reference (check it computes the output itself)",
                             (long long)c->n, f->transcendental);
}

/* What an impl prints when its kernel did not run and a fallback (the reference, a CPU
 * path) produced the outputs instead: pypto's JIT failing, a device runtime's error
 * code (docs/diagnosis.md "Passing runs that deserve a second look"). Matched against
 * the captured impl output of the call, any golden kind, PASS or FAIL. */
static const struct {
  const char *pattern;
  const char *means;
} fallback_patterns[] = {
    {"JIT execution failed", "pypto's JIT could not run the kernel"},
    {"Errcode:", "the device runtime reported an error code"},
};

static void captured_fallback(struct pg_tensor_check *t, const char *captured) {
  for (size_t i = 0; captured && i < sizeof fallback_patterns / sizeof *fallback_patterns; i++)
    if (strstr(captured, fallback_patterns[i].pattern)) {
      pg_tensor_check_add_hint(t, PG_HINT_GOLDEN_FALLBACK, 0.9,
                               "the impl's captured output holds '%s' (%s): its outputs may "
                               "come from a fallback, not from the kernel (check the call "
                               "ran on the device)",
                               fallback_patterns[i].pattern, fallback_patterns[i].means);
      return;
    }
}

void pg__classify_diagnosis(struct pg_tensor_check *t, const struct pg__diag_facts *f) {
  if (!t->compared || t->cmp.structural) return;
  captured_fallback(t, f->captured);
  if (t->analyzed) {
    mask_pattern_hints(t);
    mask_value_hints(t, f);
  }
  if (t->values_checked && t->cmp.passed) pass_hints(t, f);
}

void pg__classify_repeats(struct pg_tensor_check *t) {
  if (t->repeat_calls <= 0 || t->repeat_differ <= 0) return;
  char at[160];
  pg_shape_format(t->ndim, t->repeat_first_index, at, sizeof at);
  pg_tensor_check_add_hint(t, PG_HINT_NONDETERMINISTIC, 0.9,
                           "call %d of %d differs bitwise from the first in %lld of %lld "
                           "elements, first at %s (same inputs)",
                           t->repeat_worst, t->repeat_calls + 1, (long long)t->repeat_differ,
                           (long long)t->cmp.n, at);
}
