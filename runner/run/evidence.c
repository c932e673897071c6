/* phasegate runner — the facts behind the diagnosis of one (case, mode) (docs/design.md §8
 * "Hints", "Suite strength"): the mismatch mask of every failing precision check
 * (pg_cmp_mask_analyze, with the impl's prefill as the sentinel), which input the
 * first non-finite impl value relates to, whether the phase's golden uses a
 * transcendental kernel (for a PASS that is bit-exact), the bitwise comparison of
 * --repeat calls, --show-values' local text, and the error map with its |golden|
 * histogram (pg_cmp_error_map) for the report's picture. Facts only: run/classify.c turns them
 * into hints and warnings. The time spent goes to the case's diagnosis_ms.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "run/run_internal.h"

/* Kernels whose results depend on a libm / hardware approximation: an independent
 * impl is rarely bit-exact with them over many elements. */
static const char *const transcendental[] = {"exp",     "log",         "tanh",    "gelu",
                                             "silu",    "sigmoid",     "softmax", "log_softmax",
                                             "rsqrt",   "rmsnorm",     "layernorm", "rope"};

/* The first transcendental kernel (exp, tanh, softmax, …) the built-in golden steps of
 * modules 1..k use, or NULL. */
static const char *transcendental_kernel(const struct pg_golden_plan *plan, int k) {
  for (size_t i = 0; plan && i < sizeof transcendental / sizeof *transcendental; i++)
    if (pg_golden_plan_uses_kernel(plan, k, transcendental[i])) return transcendental[i];
  return NULL;
}

/* The transcendental function a Python golden of phase k calls (asked of the
 * interpreter: nothing imported), into buf; NULL when none, or not a Python golden. Asked
 * only when an output of m is bit-exact: that is when it matters, and it is rare. */
static const char *py_golden_transcendental(const struct pg__run *rc, int k,
                                            const struct pg_mode_result *m, char *buf,
                                            size_t size) {
  const struct pg_py_golden *g = pg_contract_phase_golden(&rc->contract, k) == PG_PHASE_GOLDEN_PYTHON
                                     ? pg_contract_py_golden(&rc->contract, k) : NULL;
  int exact = 0;
  for (int i = 0; g && g->file && i < m->n_tensors; i++) {
    const struct pg_cmp_result *c = &m->tensors[i].cmp;
    exact |= m->tensors[i].compared && !c->structural && c->n > 0 && c->n_finite == c->n &&
             c->max_abs_diff == 0.0;
  }
  struct pg_error e;
  pg_error_clear(&e);
  if (!exact || pg_python_golden_uses(rc->o->python, g->file, buf, size, &e) != PG_OK || !buf[0])
    return NULL;
  /* which function the golden's source calls is golden source: the barrier keeps it out
   * of the report (docs/runner.md "Information barrier"); the hint only says that
   * it calls one */
  return "a transcendental function";
}

/* Non-finite elements of a float tensor, and whether one lies at `flat` (same index)
 * or in the row (all but the last axis) of `idx`. */
static void input_nonfinite(const struct pg_tensor *in, const struct pg_tensor_check *t,
                            const int64_t *idx, int64_t flat, struct pg__nan_origin *o, int i) {
  if (!pg_dtype_is_float(in->dtype) || !in->dl.data) return;
  int same_shape = in->dl.ndim == t->ndim, same_rows = same_shape && t->ndim >= 1;
  for (int a = 0; a < t->ndim && same_shape; a++) {
    if (in->dl.shape[a] != t->shape[a]) same_shape = 0;
    if (a < t->ndim - 1 && in->dl.shape[a] != t->shape[a]) same_rows = 0;
  }
  if (in->dl.ndim != t->ndim) same_rows = 0;
  int64_t count = 0, row_start = -1, cols = same_rows ? in->dl.shape[t->ndim - 1] : 0;
  if (same_rows) {
    row_start = 0;
    for (int a = 0; a < t->ndim - 1; a++) row_start = row_start * t->shape[a] + idx[a];
    row_start *= cols;
  }
  int rel = 0; /* the closest relation of any non-finite element (1 is closest) */
  for (int64_t e = 0; e < in->numel; e++) {
    if (isfinite(pg_load_f64(in->dl.data, in->dtype, (size_t)e))) continue;
    count++;
    int r = same_shape && e == flat                                       ? PG__NAN_SAME_INDEX
            : same_rows && e >= row_start && e < row_start + cols ? PG__NAN_SAME_ROW
                                                                  : PG__NAN_ELSEWHERE;
    if (!rel || r < rel) rel = r;
  }
  if (!count || (o->relation && o->relation <= rel)) return; /* an earlier input is closer */
  o->relation = rel;
  o->input = i;
  o->count = count;
  snprintf(o->name, sizeof o->name, "%s", in->name);
}

/* Appends one line to *text (malloc'd, grown). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void append_line(char **text, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t had = *text ? strlen(*text) : 0, add = strlen(line);
  char *p = realloc(*text, had + add + 2);
  if (!p) return;
  memcpy(p + had, line, add);
  p[had + add] = '\n';
  p[had + add + 1] = '\0';
  *text = p;
}

/* --show-values: impl and golden values at the worst elements and the first
 * mismatches of a failing tensor, for the console only. */
static void local_values(struct pg_mode_result *m, const struct pg_tensor_check *t,
                         const struct pg_tensor *impl, const struct pg_tensor *ref) {
  const struct pg_cmp_result *c = &t->cmp;
  char ix[160];
  append_line(&m->local_values, "    %s: values (--show-values: local only, never in the report)",
              t->name);
  struct {
    const char *what;
    int64_t flat;
    const int64_t *index;
  } at[2] = {{"worst abs", c->max_abs_flat, c->max_abs_index},
             {"worst rel above the floor", t->mask.worst_rel_flat, t->mask.worst_rel_index}};
  for (int i = 0; i < 2; i++) {
    if (at[i].flat < 0) continue;
    pg_shape_format(c->ndim, at[i].index, ix, sizeof ix);
    append_line(&m->local_values, "      %s %s: impl %.9g golden %.9g", at[i].what, ix,
                pg_load_f64(impl->dl.data, impl->dtype, (size_t)at[i].flat),
                pg_load_f64(ref->dl.data, ref->dtype, (size_t)at[i].flat));
  }
  for (int j = 0; j < c->n_first; j++) {
    pg_shape_format(c->ndim, c->first[j].index, ix, sizeof ix);
    append_line(&m->local_values, "      mismatch %s: impl %.9g golden %.9g", ix,
                pg_load_f64(impl->dl.data, impl->dtype, (size_t)c->first_flat[j]),
                pg_load_f64(ref->dl.data, ref->dtype, (size_t)c->first_flat[j]));
  }
}

/* The error map and |golden| histogram of a failing tensor, for the report's picture
 * (none when it cannot be made: the report then simply has no map). */
static void error_map(struct pg_tensor_check *t, const struct pg_tensor *impl,
                      const struct pg_tensor *ref, int n_threads) {
  free(t->error_map);
  t->error_map = malloc(sizeof *t->error_map);
  struct pg_error e;
  pg_error_clear(&e);
  if (t->error_map &&
      pg_cmp_error_map(&impl->dl, &ref->dl, &t->cmp_rule, n_threads, t->error_map, &e) != PG_OK) {
    free(t->error_map);
    t->error_map = NULL;
  }
}

void pg__evidence_mode(const struct pg__run *rc, int k, const struct pg_case_data *d,
                       const struct pg_tensor *impl_out, const struct pg_tensor *goldens,
                       int n_threads, struct pg_mode_result *m, double *ms) {
  double t0 = pg_now_ms();
  struct pg__diag_facts f;
  memset(&f, 0, sizeof f);
  char py_uses[32];
  f.transcendental = transcendental_kernel(rc->plan, k);
  if (!f.transcendental) f.transcendental = py_golden_transcendental(rc, k, m, py_uses, sizeof py_uses);
  f.captured = m->captured;
  for (int i = 0; i < m->n_tensors; i++) {
    struct pg_tensor_check *t = &m->tensors[i];
    memset(&f.nan, 0, sizeof f.nan);
    f.nan.input = -1;
    if (!t->compared || t->cmp.structural) continue;
    if (t->values_checked && !t->cmp.passed) {
      struct pg_cmp_mask_opts mo = {0, 0};
      mo.has_sentinel = pg_impl_prefill_bits(&rc->impl, t->dtype, &mo.sentinel_bits);
      struct pg_error e;
      pg_error_clear(&e);
      t->analyzed = pg_cmp_mask_analyze(&impl_out[i].dl, &goldens[i].dl, &t->cmp_rule, &mo,
                                        &t->mask, &e) == PG_OK;
      if (t->analyzed && t->mask.nonfinite_first_flat >= 0)
        for (int j = 0; j < d->n_inputs; j++)
          input_nonfinite(&d->inputs[j], t, t->mask.nonfinite_first_index,
                          t->mask.nonfinite_first_flat, &f.nan, j);
      if (t->analyzed && rc->o->show_values) local_values(m, t, &impl_out[i], &goldens[i]);
      error_map(t, &impl_out[i], &goldens[i], n_threads);
    }
    pg__classify_diagnosis(t, &f);
  }
  *ms += pg_now_ms() - t0;
}

/* Compares a repeat call's outputs bitwise with the first call's. */
void pg__repeat_compare(const struct pg_tensor *first, const struct pg_tensor *again, int n,
                        int call, struct pg_mode_result *m) {
  for (int i = 0; i < n && i < m->n_tensors; i++) {
    struct pg_tensor_check *t = &m->tensors[i];
    if (!t->compared || t->cmp.structural) continue;
    t->repeat_calls++;
    if (first[i].nbytes != again[i].nbytes || !first[i].dl.data || !again[i].dl.data) continue;
    size_t es = pg_dtype_size(first[i].dtype);
    int64_t differ = 0, at = -1;
    const char *a = first[i].dl.data, *b = again[i].dl.data;
    for (int64_t e = 0; es && e < first[i].numel; e++)
      if (memcmp(a + (size_t)e * es, b + (size_t)e * es, es) != 0 && differ++ == 0) at = e;
    if (differ <= t->repeat_differ) continue;
    t->repeat_differ = differ;
    t->repeat_worst = call;
    t->repeat_first_flat = at;
    int64_t flat = at;
    for (int ax = t->ndim - 1; ax >= 0; ax--) {
      t->repeat_first_index[ax] = t->shape[ax] > 0 ? flat % t->shape[ax] : 0;
      flat = t->shape[ax] > 0 ? flat / t->shape[ax] : 0;
    }
  }
}
