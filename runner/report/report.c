/* phasegate runner — evaluation_report.json: JSON building and the locked atomic
 * read-merge-write (see report.h), which runs the barrier's sanitize step
 * (report/barrier.c) on every write; and pg_report_hooks, the set pg_run is given.
 *
 * Aggregates (status, per_mode_status, cases_*, first_failure, stdout) are always
 * recomputed from the merged checks[], so the report is the same whether the cases of
 * a phase ran in one process or in many concurrent ones. Every key is spelled through
 * report_keys.h (PG__RK_<LIST>_<KEY>), the lists the loader checks a report against;
 * only the insides of the objects those lists do not break down (evidence, repeat, ...)
 * are literals here.
 */
#include "report/report.h"
#include "report/lifetime.h"
#include "report/report_keys.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opdir/opdir.h"

/* Out of memory while building: cJSON's creators return NULL and its adders fail
 * quietly, which would write a report with keys or whole checks missing. Every such
 * call in this file goes through the helpers below: a failure sets a per-thread sticky
 * flag (so concurrent writers do not interfere) that pg_report_merge_write turns into
 * PG_ENOMEM instead of writing, and an item that could not be attached is freed. */
static _Thread_local int report_oom;
static void *oom_ptr(void *p) {
  if (!p) report_oom = 1;
  return p;
}
static cJSON_bool push_item(cJSON *a, cJSON *item) {
  if (cJSON_AddItemToArray(a, item)) return 1;
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
static cJSON_bool add_item(cJSON *o, const char *k, cJSON *item) {
  if (cJSON_AddItemToObject(o, k, item)) return 1;
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
static cJSON_bool replace_item(cJSON *o, const char *k, cJSON *item) {
  /* cJSON 1.7.15 links the item even when copying its key failed: check the key */
  if (cJSON_ReplaceItemInObjectCaseSensitive(o, k, item)) {
    if (!item->string) report_oom = 1;
    return 1;
  }
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
static cJSON *new_object(void) { return oom_ptr(cJSON_CreateObject()); }
static cJSON *new_array(void) { return oom_ptr(cJSON_CreateArray()); }
static cJSON *new_number(double v) { return oom_ptr(cJSON_CreateNumber(v)); }
static cJSON *new_null(void) { return oom_ptr(cJSON_CreateNull()); }
static cJSON *new_string(const char *v) { return oom_ptr(cJSON_CreateString(v)); }
static cJSON *duplicate(const cJSON *v) { return oom_ptr(cJSON_Duplicate(v, 1)); }
static cJSON *add_str(cJSON *o, const char *k, const char *v) {
  return oom_ptr(cJSON_AddStringToObject(o, k, v));
}
static cJSON *add_number(cJSON *o, const char *k, double v) {
  return oom_ptr(cJSON_AddNumberToObject(o, k, v));
}
static cJSON *add_bool(cJSON *o, const char *k, int v) {
  return oom_ptr(cJSON_AddBoolToObject(o, k, v));
}
static cJSON *add_null(cJSON *o, const char *k) { return oom_ptr(cJSON_AddNullToObject(o, k)); }
static cJSON *add_array(cJSON *o, const char *k) { return oom_ptr(cJSON_AddArrayToObject(o, k)); }
static cJSON *add_object(cJSON *o, const char *k) {
  return oom_ptr(cJSON_AddObjectToObject(o, k));
}

#define PG_REPORT_STDOUT_MAX (64 * 1024)

static cJSON *num_or_null(double v) {
  return isfinite(v) ? new_number(v) : new_null();
}

static cJSON *index_json(int ndim, const int64_t *idx) {
  cJSON *a = new_array();
  for (int i = 0; a && i < ndim && i < PG_MAX_NDIM; i++)
    push_item(a, new_number((double)idx[i]));
  return a;
}

static void add_num(cJSON *o, const char *k, double v) { add_item(o, k, num_or_null(v)); }

/* The metrics of one comparison (docs/design.md §7) as keys of `o`: shared by the report
 * and `phasegate diff --json`, so both spell every metric the same way. Indices are
 * null when no finite pair exists. */
void pg_report_add_metrics(cJSON *o, const struct pg_cmp_result *c) {
  add_bool(o, PG__RK_TENSOR_ALL_CLOSE, c->passed);
  add_number(o, PG__RK_TENSOR_N, (double)c->n);
  add_number(o, PG__RK_TENSOR_MISMATCHES, (double)c->mismatches);
  add_num(o, PG__RK_TENSOR_MISMATCH_RATIO, c->mismatch_ratio);
  add_num(o, PG__RK_TENSOR_MAX_ABS_DIFF, c->max_abs_diff);
  if (c->max_abs_flat >= 0)
    add_item(o, PG__RK_TENSOR_MAX_ABS_INDEX, index_json(c->ndim, c->max_abs_index));
  else
    add_item(o, PG__RK_TENSOR_MAX_ABS_INDEX, new_null());
  add_num(o, PG__RK_TENSOR_MAX_REL_DIFF, c->max_rel_diff);
  if (c->max_rel_flat >= 0)
    add_item(o, PG__RK_TENSOR_MAX_REL_INDEX, index_json(c->ndim, c->max_rel_index));
  else
    add_item(o, PG__RK_TENSOR_MAX_REL_INDEX, new_null());
  add_num(o, PG__RK_TENSOR_MEAN_ABS_DIFF, c->mean_abs_diff);
  add_num(o, PG__RK_TENSOR_RMSE, c->rmse);
  add_num(o, PG__RK_TENSOR_COSINE_SIMILARITY, c->cosine_similarity);
  add_number(o, PG__RK_TENSOR_NAN_IMPL, (double)c->nan_impl);
  add_number(o, PG__RK_TENSOR_NAN_REF, (double)c->nan_ref);
  add_number(o, PG__RK_TENSOR_INF_IMPL, (double)c->inf_impl);
  add_number(o, PG__RK_TENSOR_INF_REF, (double)c->inf_ref);
  add_num(o, PG__RK_TENSOR_MAX_ULP, c->max_ulp);
  add_num(o, PG__RK_TENSOR_ERROR_BALANCE, c->error_balance);
  add_num(o, PG__RK_TENSOR_MAX_SIGNED_DIFF, c->max_signed_diff);
  add_num(o, PG__RK_TENSOR_SHARE_WITHIN_1E3, c->share_within_1e3);
  add_num(o, PG__RK_TENSOR_SHARE_WITHIN_5E3, c->share_within_5e3);
  add_num(o, PG__RK_TENSOR_ZERO_SHARE_REF, c->zero_share_ref);
  add_bool(o, PG__RK_TENSOR_MISTRUSTED, c->mistrusted);
  if (c->mistrusted) add_str(o, PG__RK_TENSOR_MISTRUST_REASON, c->mistrust_reason);
  add_bool(o, PG__RK_TENSOR_CPU_REPRODUCER_CANDIDATE, c->cpu_reproducer_candidate);
  /* First mismatches: index, the impl's value, and the differences; never the
   * reference value (information barrier). */
  cJSON *fm = add_array(o, PG__RK_TENSOR_FIRST_MISMATCHES);
  for (int i = 0; fm && i < c->n_first && i < PG_CMP_FIRST_MISMATCHES; i++) {
    cJSON *m = new_object();
    add_item(m, "index", index_json(c->ndim, c->first[i].index));
    add_num(m, "impl_value", c->first[i].impl_value);
    add_num(m, "abs_diff", c->first[i].abs_diff);
    add_num(m, "rel_diff", c->first[i].rel_diff);
    push_item(fm, m);
  }
}

/* The evidence and the mismatch mask of a failing tensor: differences and indices,
 * never a value. */
static void add_mask(cJSON *o, const struct pg_tensor_check *t) {
  const struct pg_cmp_mask *mk = &t->mask;
  cJSON *ev = add_object(o, PG__RK_TENSOR_EVIDENCE);
  add_num(ev, "mean_signed_diff", mk->mean_signed_diff);
  add_number(ev, "mismatches_above", (double)mk->above);
  add_number(ev, "mismatches_below", (double)mk->below);
  add_num(ev, "rel_floor", mk->rel_floor);
  if (mk->worst_rel_flat >= 0) {
    cJSON *w = add_object(ev, "worst_rel_above_floor");
    add_item(w, "index", index_json(t->ndim, mk->worst_rel_index));
    add_num(w, "rel_diff", mk->worst_rel);
    add_num(w, "abs_diff", mk->worst_rel_abs);
    add_num(w, "signed_diff", mk->worst_rel_signed);
  } else {
    add_null(ev, "worst_rel_above_floor");
  }
  cJSON *axes = add_array(add_object(o, PG__RK_TENSOR_MISMATCH_MASK), "axes");
  for (int d = 0; axes && d < mk->ndim; d++) {
    const struct pg_cmp_axis_marginal *ax = &mk->axes[d];
    cJSON *a = new_object();
    add_number(a, "axis", d);
    add_number(a, "length", (double)ax->length);
    if (ax->analyzed) {
      add_number(a, "indices_hit", (double)ax->hit);
      add_number(a, "first", (double)ax->first);
      add_number(a, "last", (double)ax->last);
      add_number(a, "busiest", (double)ax->top);
      add_num(a, "busiest_share", ax->top_share);
    }
    push_item(axes, a);
  }
}

/* v rounded to 3 significant digits: the picture needs no more, and the report's
 * numbers stay metrics, not something that spells a value. */
static double sig3(double v) {
  if (v == 0 || !isfinite(v)) return v;
  char b[32];
  snprintf(b, sizeof b, "%.3g", v);
  return strtod(b, NULL);
}

/* The error map of a failing tensor (docs/diagnosis.md "The error map"): per cell the
 * largest error over tolerance and the mismatch count; never a value. */
static void add_error_map(cJSON *o, const struct pg_tensor_check *t) {
  const struct pg_cmp_error_map *em = t->error_map;
  cJSON *m = add_object(o, PG__RK_TENSOR_ERROR_MAP);
  if (!m) return;
  int64_t shape[2] = {em->rows, em->cols}, rows[PG_MAX_NDIM];
  add_item(m, PG__RK_ERROR_MAP_SHAPE, index_json(2, shape));
  for (int d = 0; d < em->n_row_axes && d < PG_MAX_NDIM; d++) rows[d] = d;
  add_item(m, PG__RK_ERROR_MAP_ROW_AXES, index_json(em->n_row_axes, rows));
  add_number(m, PG__RK_ERROR_MAP_COL_AXIS, em->col_axis);
  add_number(m, PG__RK_ERROR_MAP_ROWS_PER_CELL, (double)em->rows_per_cell);
  add_number(m, PG__RK_ERROR_MAP_COLS_PER_CELL, (double)em->cols_per_cell);
  add_number(m, PG__RK_ERROR_MAP_ROWS_TOTAL, (double)em->rows_total);
  add_number(m, PG__RK_ERROR_MAP_COLS_TOTAL, (double)em->cols_total);
  add_str(m, PG__RK_ERROR_MAP_METRIC, "max_err_over_tol");
  cJSON *cells = add_array(m, PG__RK_ERROR_MAP_CELLS);
  cJSON *mis = add_array(m, PG__RK_ERROR_MAP_MISMATCH_CELLS);
  for (int r = 0; cells && mis && r < em->rows; r++) {
    cJSON *cr = new_array(), *mr = new_array();
    for (int c = 0; cr && mr && c < em->cols; c++) {
      push_item(cr, num_or_null(sig3(em->cells[r * em->cols + c])));
      push_item(mr, new_number((double)em->mismatch_cells[r * em->cols + c]));
    }
    push_item(cells, cr);
    push_item(mis, mr);
  }
  cJSON *b = add_array(add_object(o, PG__RK_TENSOR_ERROR_HISTOGRAM), PG__RK_HISTOGRAM_BUCKETS);
  for (int i = 0; b && i < PG_CMP_HIST_BUCKETS; i++) {
    const struct pg_cmp_hist_bucket *h = &em->hist[i];
    if (h->n == 0) continue;
    cJSON *e = new_object();
    if (!e) break;
    add_num(e, PG__RK_BUCKET_GOLDEN_ABS_LO, pg_cmp_hist_lo(i));
    add_num(e, PG__RK_BUCKET_GOLDEN_ABS_HI, pg_cmp_hist_hi(i)); /* the last: inf, null */
    add_number(e, PG__RK_BUCKET_N, (double)h->n);
    add_number(e, PG__RK_BUCKET_MISMATCHES, (double)h->mismatches);
    add_num(e, PG__RK_BUCKET_MAX_ABS_DIFF, sig3(h->max_abs_diff));
    add_num(e, PG__RK_BUCKET_MAX_ERR_OVER_TOL, sig3(h->max_err_over_tol));
    push_item(b, e);
  }
}

/* What an output check and a probe check both start with: the tensor compared, in
 * which mode, under which rule. */
static cJSON *check_head_json(const char *name, const char *mode, enum pg_dtype dtype,
                              int ndim, const int64_t *shape, const char *rule, double atol,
                              double rtol) {
  cJSON *o = new_object();
  if (!o) return NULL;
  add_str(o, PG__RK_TENSOR_NAME, name);
  add_str(o, PG__RK_TENSOR_MODE, mode);
  add_str(o, PG__RK_TENSOR_DTYPE, pg_dtype_name(dtype));
  add_item(o, PG__RK_TENSOR_SHAPE, index_json(ndim, shape));
  add_str(o, PG__RK_TENSOR_RULE, rule);
  add_num(o, PG__RK_TENSOR_ATOL, atol);
  add_num(o, PG__RK_TENSOR_RTOL, rtol);
  return o;
}

static cJSON *tensor_json(const struct pg_tensor_check *t, const char *mode) {
  cJSON *o = check_head_json(t->name, mode, t->dtype, t->ndim, t->shape, t->rule, t->atol,
                             t->rtol);
  if (!o) return NULL;
  const struct pg_cmp_result *c = &t->cmp;
  add_bool(o, PG__RK_TENSOR_VALUES_CHECKED, t->values_checked);
  add_bool(o, PG__RK_TENSOR_PASSED, t->passed);
  if (!t->compared) return o;
  if (c->structural) {
    add_str(o, PG__RK_TENSOR_STRUCTURAL, c->structural_reason);
    return o;
  }
  pg_report_add_metrics(o, c);
  if (t->analyzed) add_mask(o, t);
  if (t->error_map) add_error_map(o, t);
  if (t->values_checked && t->passed) add_bool(o, PG__RK_TENSOR_ONE_SIDED_ERRORS, t->one_sided);
  if (t->repeat_calls > 0) {
    cJSON *rp = add_object(o, PG__RK_TENSOR_REPEAT);
    add_number(rp, "calls", t->repeat_calls + 1);
    add_number(rp, "differing_elements", (double)t->repeat_differ);
    if (t->repeat_differ > 0) {
      add_number(rp, "worst_call", t->repeat_worst);
      add_item(rp, "first_differing_index", index_json(t->ndim, t->repeat_first_index));
    }
  }
  if (t->n_repro > 0) { /* a Python golden's CPU reproducer (docs/diagnosis.md) */
    cJSON *cr = add_object(o, PG__RK_TENSOR_CPU_REPRODUCER);
    cJSON *vs = cr ? add_array(cr, "variants") : NULL;
    for (int i = 0; vs && i < t->n_repro; i++) {
      const struct pg_repro_variant *rv = &t->repro[i];
      cJSON *v = new_object();
      if (!v) break;
      add_str(v, "precision", rv->precision);
      add_num(v, "max_abs_diff_vs_reference", rv->vs_reference);
      add_num(v, "impl_max_abs_diff", rv->impl_max_abs_diff);
      add_num(v, "impl_rmse", rv->impl_rmse);
      add_number(v, "impl_mismatches", (double)rv->impl_mismatches);
      push_item(vs, v);
    }
    if (cr)
      add_str(cr, "impl_closest_to",
              t->repro_closest > 0 ? t->repro[t->repro_closest - 1].precision : "reference");
  }
  cJSON *hints = add_array(o, PG__RK_TENSOR_HINTS);
  for (int i = 0; hints && i < t->n_hints; i++) {
    cJSON *h = new_object();
    if (!h) break;
    add_str(h, PG__RK_HINT_KIND, pg_hint_kind_name(t->hints[i].kind));
    add_number(h, PG__RK_HINT_CONFIDENCE, t->hints[i].confidence);
    add_str(h, PG__RK_HINT_DETAIL, t->hints[i].detail);
    if (t->hints[i].axis >= 0) add_number(h, PG__RK_HINT_AXIS, t->hints[i].axis);
    if (t->hints[i].tile > 0) add_number(h, PG__RK_HINT_TILE, (double)t->hints[i].tile);
    push_item(hints, h);
  }
  if (t->strength_checked) {
    cJSON *um = add_array(o, PG__RK_TENSOR_UNDETECTED_MUTANTS);
    for (int i = 0; um && i < t->n_undetected; i++)
      push_item(um, new_string(t->undetected[i]));
  }
  return o;
}

/* One inspection probe of a mode: per-iteration metrics, never a value. */
static cJSON *probe_json(const struct pg_probe_check *p, const char *mode) {
  cJSON *o = check_head_json(p->name, mode, p->dtype, p->ndim, p->shape, p->rule, p->atol,
                             p->rtol);
  if (!o) return NULL;
  add_bool(o, "compared", p->compared);
  if (p->problem[0]) add_str(o, "problem", p->problem);
  add_number(o, "iterations", p->n_iters);
  if (p->drift_onset_iter >= 0) add_number(o, "drift_onset_iter", p->drift_onset_iter);
  else add_null(o, "drift_onset_iter");
  cJSON *its = add_array(o, "per_iteration");
  for (int i = 0; its && i < p->n_iters; i++) {
    const struct pg_probe_iter *it = &p->iters[i];
    cJSON *e = new_object(); /* the workflow's metrics (modes[] has phasegate's counts) */
    if (!e) break;
    add_number(e, "iter", i);
    add_number(e, "n", (double)it->n);
    add_number(e, "mismatches", (double)it->mismatches);
    add_num(e, "max_abs_diff", it->max_abs_diff);
    add_num(e, "max_rel_diff", it->max_rel_diff);
    add_bool(e, "passed", it->passed);
    push_item(its, e);
  }
  return o;
}

static void add_probes(cJSON *o, const char *key, const struct pg_case_result *r) { /* all */
  cJSON *ins = add_array(o, key);
  for (int i = 0; ins && i < r->n_modes; i++)
    for (int j = 0; j < r->modes[i].n_probes; j++)
      push_item(ins, probe_json(&r->modes[i].probes[j], r->modes[i].mode));
}

/* checks[].inspection of the pypto workflow's probe (report_keys.h, docs/pypto.md). */
static cJSON *pypto_inspection_json(const struct pg_case_result *r) {
  const struct pg_probe_check *p = NULL; /* and its mode: */
  const char *mode = NULL;
  for (int i = 0; i < r->n_modes; i++)
    if (r->modes[i].n_probes > 0 && (!p || strcmp(r->drift_mode, r->modes[i].mode) == 0))
      p = &r->modes[i].probes[0], mode = r->modes[i].mode;
  cJSON *o = new_object(); /* NULL (out of memory, said): every add below is a no-op */
  add_str(o, PG__RK_INSPECTION_PROTOCOL, "pypto");
  add_str(o, PG__RK_INSPECTION_NAME, p ? p->name : r->drift_probe);
  if (mode) add_str(o, PG__RK_INSPECTION_MODE, mode);
  add_number(o, PG__RK_INSPECTION_AXIS, 2);
  add_number(o, PG__RK_INSPECTION_ITERATIONS, p ? p->n_iters : 0);
  add_num(o, PG__RK_INSPECTION_DRIFT_ONSET_ITER, /* null: no drift */
          p && p->drift_onset_iter >= 0 ? p->drift_onset_iter : NAN);
  cJSON *its = add_array(o, PG__RK_INSPECTION_PER_ITER);
  for (int i = 0; p && its && i < p->n_iters; i++) {
    const struct pg_probe_iter *it = &p->iters[i];
    cJSON *e = new_object(); /* the workflow's metrics (modes[] has phasegate's counts) */
    if (!e || !push_item(its, e)) break;
    add_number(e, PG__RK_PER_ITER_ITER, i);
    add_num(e, PG__RK_PER_ITER_MAX_ABS_DIFF, it->max_abs_diff);
    add_num(e, PG__RK_PER_ITER_MAX_REL_DIFF, it->max_rel_diff);
    add_bool(e, PG__RK_PER_ITER_ALL_CLOSE, it->passed);
  }
  add_probes(o, PG__RK_INSPECTION_MODES, r);
  return o;
}

/* earliest_failing_boundary: the integer j when known, else null (docs/design.md §8). */
static void add_earliest(cJSON *o, const char *key, int j) {
  if (j > 0) add_number(o, key, j);
  else add_null(o, key);
}

cJSON *pg_report_check_json(const struct pg_case_result *r, int k) {
  cJSON *o = new_object();
  if (!o) return NULL;
  add_str(o, PG__RK_CHECK_ID, r->id);
  add_number(o, PG__RK_CHECK_LEVEL, r->level);
  add_number(o, PG__RK_CHECK_SUITE_INDEX, r->index);
  add_str(o, PG__RK_CHECK_STATUS, pg_verdict_name(r->status));
  if (r->not_implemented) add_bool(o, PG__RK_CHECK_NOT_IMPLEMENTED, 1); /* --implemented-phases */
  add_bool(o, PG__RK_CHECK_PRECISION_CHECKED, r->precision_checked);
  add_bool(o, PG__RK_CHECK_ALL_CLOSE, r->all_close);
  add_num(o, PG__RK_CHECK_MAX_ABS_DIFF, r->max_abs_diff);
  add_num(o, PG__RK_CHECK_MAX_REL_DIFF, r->max_rel_diff);
  cJSON *pms = add_object(o, PG__RK_CHECK_PER_MODE_STATUS);
  for (int i = 0; pms && i < r->n_modes; i++)
    add_str(pms, r->modes[i].mode, pg_verdict_name(r->modes[i].status));
  cJSON *pt = add_array(o, PG__RK_CHECK_PER_TENSOR);
  for (int i = 0; pt && i < r->n_modes; i++)
    for (int j = 0; j < r->modes[i].n_tensors; j++)
      push_item(pt, tensor_json(&r->modes[i].tensors[j], r->modes[i].mode));
  if (r->has_probes && r->probes_pypto) add_item(o, PG__RK_CHECK_INSPECTION, pypto_inspection_json(r));
  else if (r->has_probes) add_probes(o, PG__RK_CHECK_INSPECTION, r);
  if (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR) {
    cJSON *f = add_object(o, PG__RK_CHECK_FAILURE);
    /* the seed's type: the integer k of the phase that was run, whatever bisection found */
    add_number(f, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY, k);
    add_earliest(f, PG__RK_FAILURE_EARLIEST_FAILING_BOUNDARY, r->earliest_boundary);
    const char *cat = pg_category_name(r->category);
    add_str(f, PG__RK_FAILURE_FAILURE_CATEGORY, cat ? cat : "other");
    if (r->subcategory) add_str(f, PG__RK_FAILURE_FAILURE_SUBCATEGORY, r->subcategory);
    add_str(f, PG__RK_FAILURE_DIVERGENCE_FINGERPRINT, r->fingerprint); /* a str, as the seed */
    add_str(f, PG__RK_FAILURE_SUMMARY, r->summary);
    if (r->has_probes) { /* the first iteration whose probe fails the tolerance */
      if (r->drift_onset_iter >= 0) {
        add_number(f, PG__RK_FAILURE_DRIFT_ONSET_ITER, r->drift_onset_iter);
        add_str(f, PG__RK_FAILURE_DRIFT_PROBE, r->drift_probe);
        add_str(f, PG__RK_FAILURE_DRIFT_MODE, r->drift_mode);
      } else {
        add_null(f, PG__RK_FAILURE_DRIFT_ONSET_ITER);
      }
    }
  } else {
    add_null(o, PG__RK_CHECK_FAILURE);
  }
  cJSON *modes = add_array(o, PG__RK_CHECK_MODES);
  for (int i = 0; modes && i < r->n_modes; i++) {
    const struct pg_mode_result *m = &r->modes[i];
    cJSON *mo = new_object();
    add_str(mo, PG__RK_MODE_MODE, m->mode);
    add_str(mo, PG__RK_MODE_STATUS, pg_verdict_name(m->status));
    const char *cat = pg_category_name(m->category);
    if (cat && m->status != PG_VERDICT_PASS && m->status != PG_VERDICT_SKIPPED)
      add_str(mo, PG__RK_MODE_FAILURE_CATEGORY, cat);
    else add_null(mo, PG__RK_MODE_FAILURE_CATEGORY);
    if (m->subcategory && (m->status == PG_VERDICT_FAIL || m->status == PG_VERDICT_ERROR))
      add_str(mo, PG__RK_MODE_FAILURE_SUBCATEGORY, m->subcategory);
    if (m->status == PG_VERDICT_FAIL)
      add_earliest(mo, PG__RK_MODE_EARLIEST_FAILING_BOUNDARY, m->earliest_boundary);
    /* a structure-only mode (`modes: {<mode>: {precision: false}}`): values not gating */
    add_bool(mo, PG__RK_MODE_PRECISION_GATING, !m->structure_only);
    if (m->policy_from[0]) add_str(mo, PG__RK_MODE_PRECISION_POLICY, m->policy_from);
    add_str(mo, PG__RK_MODE_SUMMARY, m->summary);
    add_num(mo, PG__RK_MODE_DURATION_MS, m->impl_ms);
    if (m->startup_ms > 0) /* apart from the call */
      add_num(mo, PG__RK_MODE_STARTUP_MS, m->startup_ms);
    if (m->timed_out) add_bool(mo, PG__RK_MODE_TIMED_OUT, 1);
    if (m->signo) add_number(mo, PG__RK_MODE_SIGNAL, m->signo);
    add_number(mo, PG__RK_MODE_EXIT_CODE, m->exit_code);
    add_str(mo, PG__RK_MODE_STDOUT, m->captured ? m->captured : "");
    push_item(modes, mo);
  }
  add_str(o, PG__RK_CHECK_REPRO, r->repro ? r->repro : "");
  cJSON *d = add_object(o, PG__RK_CHECK_DURATIONS_MS);
  add_num(d, "inputs", r->inputs_ms);
  add_num(d, "reference_compute", r->golden_ms);
  add_num(d, "diagnosis", r->diagnosis_ms);
  add_num(d, "total", r->total_ms);
  add_bool(o, PG__RK_CHECK_GOLDEN_CACHED, r->golden_cached);
  /* where the undetected_mutants lists came from (docs/runner.md "Suite strength") */
  static const char *const strength_names[] = {NULL, "cached", "computed", "not_computed"};
  if (r->strength > PG_STRENGTH_NA && r->strength <= PG_STRENGTH_NOT_COMPUTED)
    add_str(o, PG__RK_CHECK_SUITE_STRENGTH, strength_names[r->strength]);
  add_bool(o, PG__RK_CHECK_CPU_REPRODUCER_CANDIDATE, r->cpu_reproducer_candidate);
  add_bool(o, PG__RK_CHECK_MISTRUSTED, r->mistrusted);
  cJSON *hints = add_array(o, PG__RK_CHECK_HINTS);
  if (hints && r->hint[0]) push_item(hints, new_string(r->hint));
  if (r->cancel.present) {
    cJSON *cn = add_object(o, PG__RK_CHECK_CANCELLATION_STRESS);
    add_str(cn, "target", r->cancel.target);
    add_str(cn, "kernel", r->cancel.kernel);
    add_str(cn, "method", r->cancel.method);
    add_num(cn, "relative_gap", r->cancel.relative_gap);
    add_num(cn, "elements", (double)r->cancel.n);
    add_num(cn, "share_within_gap", r->cancel.share);
    add_num(cn, "share_within_gap_plain_inputs", r->cancel.share_plain);
    add_num(cn, "median_ratio", r->cancel.median_r);
    add_str(cn, "note", r->cancel.note);
  }
  /* knobs_json is cJSON's own compact print of the case: a parse failure is memory */
  cJSON *knobs = r->knobs_json ? oom_ptr(cJSON_Parse(r->knobs_json)) : NULL;
  add_item(o, PG__RK_CHECK_KNOBS, knobs ? knobs : new_object());
  return o;
}

/* The report around checks; prev_run: the run object of the same session's report it
 * merged into (NULL: none). */
static cJSON *build(const struct pg_run_phase *m, cJSON *checks, const cJSON *prev_run) {
  cJSON *r = new_object();
  if (!r) {
    cJSON_Delete(checks);
    return NULL;
  }
  if (pg__report_sort_checks(checks) != 0) report_oom = 1;
  add_number(r, PG__RK_TOP_SCHEMA_VERSION, PG_REPORT_SCHEMA_VERSION);
  add_str(r, PG__RK_TOP_TOOL, "phasegate");
  add_str(r, PG__RK_TOP_TOOL_VERSION, m->tool_version ? m->tool_version : "unknown");
  add_str(r, PG__RK_TOP_OP_NAME, m->op);
  add_str(r, PG__RK_TOP_IMPL_FILE, m->impl_spec ? m->impl_spec : "");
  add_number(r, PG__RK_TOP_UP_TO_MODULE, m->up_to_module);
  add_number(r, PG__RK_TOP_TOTAL_MODULES, m->total_modules);
  char suffix[64];
  pg_phase_suffix(m->up_to_module, suffix, sizeof suffix);
  add_str(r, PG__RK_TOP_SUFFIX, suffix);
  if (m->contract_path) add_str(r, PG__RK_TOP_CONTRACT, m->contract_path);
  if (m->suite_path) add_str(r, PG__RK_TOP_SUITE, m->suite_path);

  int total = 0, passed = 0, failed = 0, errors = 0, skipped = 0, not_impl = 0;
  enum pg_verdict worst = PG_VERDICT_SKIPPED;
  cJSON *pms = new_object();
  cJSON *first_failure = NULL;
  char *out = oom_ptr(calloc(1, PG_REPORT_STDOUT_MAX + 1));
  size_t out_len = 0;
  const cJSON *chk;
  cJSON_ArrayForEach(chk, checks) {
    total++;
    enum pg_verdict v = pg_verdict_parse(pg__report_str(chk, PG__RK_CHECK_STATUS));
    if (v > worst) worst = v;
    if (v == PG_VERDICT_PASS) passed++;
    else if (v == PG_VERDICT_FAIL) failed++;
    else if (v == PG_VERDICT_ERROR) errors++;
    else skipped++;
    not_impl += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(chk, PG__RK_CHECK_NOT_IMPLEMENTED));
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(chk, PG__RK_CHECK_PER_MODE_STATUS);
    const cJSON *e;
    cJSON_ArrayForEach(e, cm) {
      if (!cJSON_IsString(e) || !e->string) continue;
      enum pg_verdict mv = pg_verdict_parse(e->valuestring);
      cJSON *cur = cJSON_GetObjectItemCaseSensitive(pms, e->string);
      if (!cur) add_str(pms, e->string, pg_verdict_name(mv));
      else if (mv > pg_verdict_parse(cur->valuestring))
        replace_item(pms, e->string,
                                               new_string(pg_verdict_name(mv)));
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(chk, PG__RK_CHECK_FAILURE);
    if (!first_failure && cJSON_IsObject(f)) {
      first_failure = duplicate(f);
      const char *id = pg__report_str(chk, PG__RK_CHECK_ID);
      add_item(first_failure, PG__RK_FAILURE_CASE_ID, new_string(id ? id : ""));
    }
    /* stdout: the captured impl output of every mode, bounded. */
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(chk, PG__RK_CHECK_MODES), *mo;
    cJSON_ArrayForEach(mo, modes) {
      const char *s = pg__report_str(mo, PG__RK_MODE_STDOUT);
      if (!out || !s || !*s) continue;
      char head[300];
      const char *id = pg__report_str(chk, PG__RK_CHECK_ID), *mode = pg__report_str(mo, PG__RK_MODE_MODE);
      int hn = snprintf(head, sizeof head, "--- %s / %s ---\n", id ? id : "?", mode ? mode : "?");
      size_t sl = strlen(s);
      if (hn > 0 && out_len + (size_t)hn + sl + 1 <= PG_REPORT_STDOUT_MAX) {
        memcpy(out + out_len, head, (size_t)hn);
        out_len += (size_t)hn;
        memcpy(out + out_len, s, sl);
        out_len += sl;
        if (sl && s[sl - 1] != '\n') out[out_len++] = '\n';
      }
    }
  }
  /* a refused run is an ERROR whatever the checks say: it is the run's verdict */
  if (m->refusal) {
    worst = PG_VERDICT_ERROR;
    cJSON_Delete(first_failure);
    first_failure = new_object();
    add_str(first_failure, PG__RK_FAILURE_CASE_ID, "");
    add_item(first_failure, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY, new_number(m->up_to_module));
    add_str(first_failure, PG__RK_FAILURE_FAILURE_CATEGORY,
            m->refusal_category ? m->refusal_category : "infra");
    add_str(first_failure, PG__RK_FAILURE_SUMMARY, m->refusal);
  }
  add_str(r, PG__RK_TOP_STATUS,
          pg_verdict_name(total || m->refusal ? worst : PG_VERDICT_SKIPPED));
  /* the phase is after --implemented-phases (CMake PHASES): every case listed, none run */
  if (total > 0 && not_impl == total) add_bool(r, PG__RK_TOP_NOT_IMPLEMENTED, 1);
  /* from checks while they are ours: add_item frees them when it cannot attach them */
  cJSON *selection = oom_ptr(pg__report_selection_json(m, checks));
  cJSON *run = m->run_id ? oom_ptr(pg__report_run_json(m, prev_run, checks)) : NULL;
  add_item(r, PG__RK_TOP_CHECKS, checks);
  add_number(r, PG__RK_TOP_CASES_TOTAL, total);
  add_number(r, PG__RK_TOP_CASES_PASSED, passed);
  add_number(r, PG__RK_TOP_CASES_FAILED, failed);
  add_number(r, PG__RK_TOP_CASES_ERROR, errors);
  add_number(r, PG__RK_TOP_CASES_SKIPPED, skipped);
  add_item(r, PG__RK_TOP_PER_MODE_STATUS, pms);
  if (first_failure) add_item(r, PG__RK_TOP_FIRST_FAILURE, first_failure);
  else add_null(r, PG__RK_TOP_FIRST_FAILURE);
  add_str(r, PG__RK_TOP_STDOUT, out ? out : "");
  free(out);
  char ts[64];
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  add_str(r, PG__RK_TOP_UPDATED_AT, ts);
  if (m->registration) add_str(r, PG__RK_TOP_REGISTRATION, m->registration);
  if (run) add_item(r, PG__RK_TOP_RUN, run);
  add_item(r, PG__RK_TOP_SELECTION, selection);
  if (m->refusal) add_item(r, PG__RK_TOP_FINDINGS, oom_ptr(pg__report_findings_json(m->findings)));
  return r;
}

cJSON *pg_report_build(const struct pg_run_phase *m, cJSON *checks) {
  return build(m, checks, NULL);
}

/* The whole file, or NULL: missing or unreadable, or (*oom set) out of memory. */
static char *read_file(const char *path, int *oom) {
  char *text;
  size_t len;
  struct pg_error e;
  pg_error_clear(&e);
  int rc = pg_read_file(path, SIZE_MAX, &text, &len, &e);
  if (rc == PG_ENOMEM) *oom = 1;
  return rc == PG_OK ? text : NULL;
}

/* Creates the report's directory and takes an exclusive flock on the directory itself
 * into *lfd: concurrent writers of one phase serialise there, and no lock file is left
 * beside the report (a pypto op's eval/ directory stays as the user wrote it). */
static int lock_report(const char *path, int *lfd, struct pg_error *err) {
  *lfd = -1;
  const char *slash = strrchr(path, '/');
  char *dir = slash ? pg_path_fmt("%.*s", slash == path ? 1 : (int)(slash - path), path)
                    : pg_strdup(".");
  if (!dir) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int rc = PG_OK, fd = -1;
  if (pg_mkdir_p(dir) != 0)
    rc = pg_error_set(err, errno == ENOMEM ? PG_ENOMEM : PG_EIO,
                      "%s: cannot create directory: %s", dir, strerror(errno));
  if (rc == PG_OK && (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    rc = pg_error_set(err, PG_EIO, "%s: %s", dir, strerror(errno));
  while (rc == PG_OK && flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) rc = pg_error_set(err, PG_EIO, "%s: flock: %s", dir, strerror(errno));
  free(dir);
  if (rc != PG_OK && fd >= 0) close(fd);
  if (rc == PG_OK) *lfd = fd;
  return rc;
}

/* A check read back from an existing report, in this schema's types. Schema 1 spelled
 * the boundary "M<j>" with j from bisection; every check of the report ran phase k, so
 * failing_module_boundary becomes k and a j < k earliest_failing_boundary. */
static void upgrade_boundary(cJSON *o, int k, int keep) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY);
  if (!cJSON_IsString(v)) return;
  int j = v->valuestring[0] == 'M' ? atoi(v->valuestring + 1) : 0;
  if (!cJSON_GetObjectItemCaseSensitive(o, PG__RK_FAILURE_EARLIEST_FAILING_BOUNDARY))
    add_earliest(o, PG__RK_FAILURE_EARLIEST_FAILING_BOUNDARY, j > 0 && j < k ? j : 0);
  if (keep) replace_item(o, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY, new_number(k));
  else cJSON_DeleteItemFromObjectCaseSensitive(o, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY);
}

static cJSON *upgrade_check(cJSON *c, int k) {
  cJSON *f = cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_FAILURE), *mo;
  if (cJSON_IsObject(f)) upgrade_boundary(f, k, 1);
  cJSON_ArrayForEach(mo, cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_MODES))
    upgrade_boundary(mo, k, 0);
  return c;
}

/* The checks of an existing report at path for the same op and phase, except those of
 * `cases` (which replace them), then those of `cases`. */
static cJSON *merged_checks(const char *path, const struct pg_run_phase *m,
                            const struct pg_case_result *cases, int n, cJSON **prev_run,
                            struct pg_error *note) {
  cJSON *checks = new_array();
  char *old = read_file(path, &report_oom);
  if (old) {
    /* A corrupt report is replaced; a valid one cJSON could not hold is OOM. Valid as
     * the report loader (load.c) reads it: cJSON alone lets bytes through that are no
     * JSON (invalid UTF-8, text after the value), and a merge that kept them would
     * write a report `phasegate report` refuses (found by fuzz_report_merge). */
    struct pg_json_pos pos;
    struct pg_json_fail fail;
    pg_json_pos_init(&pos);
    int src = pg_json_pos_scan(old, strlen(old), NULL, &pos, &fail);
    pg_json_pos_reset(&pos);
    cJSON *prev = src == PG_OK || src == PG_ELIMIT ? cJSON_Parse(old) : NULL;
    if ((!prev && src == PG_OK) || src == PG_ENOMEM) report_oom = 1;
    /* ... and with the keys the loader wants (a check without its status is corrupt) */
    struct pg_error verr;
    pg_error_clear(&verr);
    if (src != PG_OK && src != PG_ELIMIT && src != PG_ENOMEM)
      pg_error_set_at(&verr, PG_EPARSE, path, fail.line, fail.col, "%s", fail.message);
    if (prev && pg__report_validate(path, old, strlen(old), prev, &verr) != PG_OK) {
      cJSON_Delete(prev);
      prev = NULL;
    }
    free(old);
    /* Refused, not out of memory: the other cases' results in it cannot be merged, but
     * are not thrown away either; the run says where they went. */
    if (!prev && !report_oom && note) {
      char *aside = pg_path_fmt("%s.corrupt", path);
      if (aside && rename(path, aside) == 0)
        snprintf(note->message, sizeof note->message,
                 "the existing report could not be merged into (%s): moved to %s, a new "
                 "report started", verr.message[0] ? verr.message : "not a phasegate report",
                 aside);
      free(aside);
    }
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_OP_NAME);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_UP_TO_MODULE);
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_CHECKS);
    int same_phase = cJSON_IsString(op) && strcmp(op->valuestring, m->op) == 0 &&
                     cJSON_IsNumber(k) && k->valueint == m->up_to_module && cJSON_IsArray(pc);
    /* another run's verdict never counts: it goes to the history, kept for reading */
    if (prev && !(same_phase && pg__report_same_run(prev, m))) {
      struct pg_error he;
      pg_error_clear(&he);
      if (pg__report_to_history(path, prev, &he) != PG_OK && note && !note->message[0])
        snprintf(note->message, sizeof note->message, "%s", he.message);
      same_phase = 0;
    } else if (prev && prev_run && cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_RUN)) {
      *prev_run = duplicate(cJSON_GetObjectItemCaseSensitive(prev, PG__RK_TOP_RUN));
    }
    if (same_phase) {
      const cJSON *c;
      cJSON_ArrayForEach(c, pc) {
        const char *id = pg__report_str(c, PG__RK_CHECK_ID);
        int replaced = 0;
        for (int i = 0; id && i < n; i++) replaced |= strcmp(cases[i].id, id) == 0;
        if (id && !replaced) {
          cJSON *dup = duplicate(c);
          if (dup) push_item(checks, upgrade_check(dup, m->up_to_module));
        }
      }
    }
    cJSON_Delete(prev);
  }
  for (int i = 0; i < n; i++) {
    cJSON *c = pg_report_check_json(&cases[i], m->up_to_module);
    if (c && m->run_id) add_item(c, PG__RK_CHECK_RUN, oom_ptr(pg__report_case_run_json(m, &cases[i])));
    push_item(checks, c);
  }
  return checks;
}

/* text + "\n" into path through <path>.tmp.<pid> and rename(). */
static int write_atomic(const char *path, const char *text, struct pg_error *err) {
  char *tmp = pg_path_fmt("%s.tmp.%ld", path, (long)getpid());
  if (!tmp) return pg_error_set(err, PG_ENOMEM, "out of memory");
  int rc = PG_OK;
  FILE *f = fopen(tmp, "w");
  if (!f) {
    rc = pg_error_set(err, PG_EIO, "%s: %s", tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  /* No fsync: the rename alone makes the update atomic for every reader (old or new
   * report, never a partial one); surviving a power cut is not worth the ~1 ms per
   * write (a third of a small case's run) for a report the next run rewrites. */
  ok &= fflush(f) == 0;
  ok &= fclose(f) == 0;
  if (!ok || rename(tmp, path) != 0) {
    rc = pg_error_set(err, PG_EIO, "%s: cannot write the report: %s", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return rc;
}

int pg_report_merge_write(const char *path, const struct pg_run_phase *m,
                          const struct pg_case_result *cases, int n, struct pg_error *err) {
  int lfd;
  PG_RETURN_IF_ERROR(lock_report(path, &lfd, err));
  report_oom = 0;
  cJSON *prev_run = NULL;
  cJSON *report = build(m, merged_checks(path, m, cases, n, &prev_run, err), prev_run);
  cJSON_Delete(prev_run);
  int rc = PG_OK;
  char *text = NULL;
  if (report && pg_report_sanitize(report) < 0) report_oom = 1;
  if (!report || report_oom)
    rc = pg_error_set(err, PG_ENOMEM, "out of memory building the report");
  else if (!(text = cJSON_Print(report)))
    rc = pg_error_set(err, PG_ENOMEM, "out of memory printing the report");
  else
    rc = write_atomic(path, text, err);
  free(text);
  cJSON_Delete(report);
  flock(lfd, LOCK_UN);
  close(lfd);
  return rc;
}

int pg_report_persist(const char *path, const struct pg_run_phase *ph,
                      const struct pg_case_result *cases, int n, struct pg_error *err) {
  return pg_report_merge_write(path, ph, cases, n, err);
}

struct pg_run_hooks pg_report_hooks(void) {
  struct pg_run_hooks h = {pg_report_persist, pg_report_case_lines, pg_report_summary_lines,
                           pg_redact_text, pg_redact_numbers};
  return h;
}
