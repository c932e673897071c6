/* phasegate runner — evaluation_report.json: JSON building and the locked atomic
 * read-merge-write (see report.h), which runs the barrier's sanitize step
 * (report/barrier.c) on every write; and pg_report_hooks, the set pg_run is given.
 *
 * Aggregates (status, per_mode_status, cases_*, first_failure, stdout) are always
 * recomputed from the merged checks[], so the report is the same whether the cases of
 * a phase ran in one process or in many concurrent ones.
 */
#include "report/report.h"
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
 * call in this file goes through the macros below: a failure sets a per-thread sticky
 * flag (so concurrent writers do not interfere) that pg_report_merge_write turns into
 * PG_ENOMEM instead of writing, and an item that could not be attached is freed. */
static _Thread_local int report_oom;
static void *oom_ptr(void *p) {
  if (!p) report_oom = 1;
  return p;
}
static cJSON_bool add_to_array(cJSON *a, cJSON *item) {
  if ((cJSON_AddItemToArray)(a, item)) return 1;
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
static cJSON_bool add_to_object(cJSON *o, const char *k, cJSON *item) {
  if ((cJSON_AddItemToObject)(o, k, item)) return 1;
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
static cJSON_bool replace_in_object(cJSON *o, const char *k, cJSON *item) {
  /* cJSON 1.7.15 links the item even when copying its key failed: check the key */
  if ((cJSON_ReplaceItemInObjectCaseSensitive)(o, k, item)) {
    if (!item->string) report_oom = 1;
    return 1;
  }
  report_oom = 1;
  cJSON_Delete(item);
  return 0;
}
#define cJSON_AddItemToArray(a, item) add_to_array(a, item)
#define cJSON_AddItemToObject(o, k, item) add_to_object(o, k, item)
#define cJSON_ReplaceItemInObjectCaseSensitive(o, k, item) replace_in_object(o, k, item)
#define cJSON_CreateObject() ((cJSON *)oom_ptr(cJSON_CreateObject()))
#define cJSON_CreateArray() ((cJSON *)oom_ptr(cJSON_CreateArray()))
#define cJSON_CreateNumber(v) ((cJSON *)oom_ptr(cJSON_CreateNumber(v)))
#define cJSON_CreateNull() ((cJSON *)oom_ptr(cJSON_CreateNull()))
#define cJSON_CreateString(v) ((cJSON *)oom_ptr(cJSON_CreateString(v)))
#define cJSON_Duplicate(v, r) ((cJSON *)oom_ptr(cJSON_Duplicate(v, r)))
#define cJSON_AddStringToObject(o, k, v) ((cJSON *)oom_ptr(cJSON_AddStringToObject(o, k, v)))
#define cJSON_AddNumberToObject(o, k, v) ((cJSON *)oom_ptr(cJSON_AddNumberToObject(o, k, v)))
#define cJSON_AddBoolToObject(o, k, v) ((cJSON *)oom_ptr(cJSON_AddBoolToObject(o, k, v)))
#define cJSON_AddNullToObject(o, k) ((cJSON *)oom_ptr(cJSON_AddNullToObject(o, k)))
#define cJSON_AddArrayToObject(o, k) ((cJSON *)oom_ptr(cJSON_AddArrayToObject(o, k)))
#define cJSON_AddObjectToObject(o, k) ((cJSON *)oom_ptr(cJSON_AddObjectToObject(o, k)))

#define PG_REPORT_STDOUT_MAX (64 * 1024)

static cJSON *num_or_null(double v) {
  return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *index_json(int ndim, const int64_t *idx) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < ndim && i < PG_MAX_NDIM; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)idx[i]));
  return a;
}

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, num_or_null(v)); }

/* The metrics of one comparison (docs/design.md §7) as keys of `o`: shared by the report
 * and `phasegate diff --json`, so both spell every metric the same way. Indices are
 * null when no finite pair exists. */
void pg_report_add_metrics(cJSON *o, const struct pg_cmp_result *c) {
  cJSON_AddBoolToObject(o, "all_close", c->passed);
  cJSON_AddNumberToObject(o, "n", (double)c->n);
  cJSON_AddNumberToObject(o, "mismatches", (double)c->mismatches);
  add_num(o, "mismatch_ratio", c->mismatch_ratio);
  add_num(o, "max_abs_diff", c->max_abs_diff);
  if (c->max_abs_flat >= 0)
    cJSON_AddItemToObject(o, "max_abs_index", index_json(c->ndim, c->max_abs_index));
  else
    cJSON_AddItemToObject(o, "max_abs_index", cJSON_CreateNull());
  add_num(o, "max_rel_diff", c->max_rel_diff);
  if (c->max_rel_flat >= 0)
    cJSON_AddItemToObject(o, "max_rel_index", index_json(c->ndim, c->max_rel_index));
  else
    cJSON_AddItemToObject(o, "max_rel_index", cJSON_CreateNull());
  add_num(o, "mean_abs_diff", c->mean_abs_diff);
  add_num(o, "rmse", c->rmse);
  add_num(o, "cosine_similarity", c->cosine_similarity);
  cJSON_AddNumberToObject(o, "nan_impl", (double)c->nan_impl);
  cJSON_AddNumberToObject(o, "nan_ref", (double)c->nan_ref);
  cJSON_AddNumberToObject(o, "inf_impl", (double)c->inf_impl);
  cJSON_AddNumberToObject(o, "inf_ref", (double)c->inf_ref);
  add_num(o, "max_ulp", c->max_ulp);
  add_num(o, "error_balance", c->error_balance);
  add_num(o, "max_signed_diff", c->max_signed_diff);
  add_num(o, "share_within_1e-3", c->share_within_1e3);
  add_num(o, "share_within_5e-3", c->share_within_5e3);
  add_num(o, "zero_share_ref", c->zero_share_ref);
  cJSON_AddBoolToObject(o, "mistrusted", c->mistrusted);
  if (c->mistrusted) cJSON_AddStringToObject(o, "mistrust_reason", c->mistrust_reason);
  cJSON_AddBoolToObject(o, "cpu_reproducer_candidate", c->cpu_reproducer_candidate);
  /* First mismatches: index, the impl's value, and the differences; never the
   * reference value (information barrier). */
  cJSON *fm = cJSON_AddArrayToObject(o, "first_mismatches");
  for (int i = 0; fm && i < c->n_first && i < PG_CMP_FIRST_MISMATCHES; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddItemToObject(m, "index", index_json(c->ndim, c->first[i].index));
    add_num(m, "impl_value", c->first[i].impl_value);
    add_num(m, "abs_diff", c->first[i].abs_diff);
    add_num(m, "rel_diff", c->first[i].rel_diff);
    cJSON_AddItemToArray(fm, m);
  }
}

/* The evidence and the mismatch mask of a failing tensor: differences and indices,
 * never a value. */
static void add_mask(cJSON *o, const struct pg_tensor_check *t) {
  const struct pg_cmp_mask *mk = &t->mask;
  cJSON *ev = cJSON_AddObjectToObject(o, "evidence");
  add_num(ev, "mean_signed_diff", mk->mean_signed_diff);
  cJSON_AddNumberToObject(ev, "mismatches_above", (double)mk->above);
  cJSON_AddNumberToObject(ev, "mismatches_below", (double)mk->below);
  add_num(ev, "rel_floor", mk->rel_floor);
  if (mk->worst_rel_flat >= 0) {
    cJSON *w = cJSON_AddObjectToObject(ev, "worst_rel_above_floor");
    cJSON_AddItemToObject(w, "index", index_json(t->ndim, mk->worst_rel_index));
    add_num(w, "rel_diff", mk->worst_rel);
    add_num(w, "abs_diff", mk->worst_rel_abs);
    add_num(w, "signed_diff", mk->worst_rel_signed);
  } else {
    cJSON_AddNullToObject(ev, "worst_rel_above_floor");
  }
  cJSON *axes = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "mismatch_mask"), "axes");
  for (int d = 0; axes && d < mk->ndim; d++) {
    const struct pg_cmp_axis_marginal *ax = &mk->axes[d];
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "axis", d);
    cJSON_AddNumberToObject(a, "length", (double)ax->length);
    if (ax->analyzed) {
      cJSON_AddNumberToObject(a, "indices_hit", (double)ax->hit);
      cJSON_AddNumberToObject(a, "first", (double)ax->first);
      cJSON_AddNumberToObject(a, "last", (double)ax->last);
      cJSON_AddNumberToObject(a, "busiest", (double)ax->top);
      add_num(a, "busiest_share", ax->top_share);
    }
    cJSON_AddItemToArray(axes, a);
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
  cJSON *m = cJSON_AddObjectToObject(o, "error_map");
  if (!m) return;
  int64_t shape[2] = {em->rows, em->cols}, rows[PG_MAX_NDIM];
  cJSON_AddItemToObject(m, "shape", index_json(2, shape));
  for (int d = 0; d < em->n_row_axes && d < PG_MAX_NDIM; d++) rows[d] = d;
  cJSON_AddItemToObject(m, "row_axes", index_json(em->n_row_axes, rows));
  cJSON_AddNumberToObject(m, "col_axis", em->col_axis);
  cJSON_AddNumberToObject(m, "rows_per_cell", (double)em->rows_per_cell);
  cJSON_AddNumberToObject(m, "cols_per_cell", (double)em->cols_per_cell);
  cJSON_AddNumberToObject(m, "rows_total", (double)em->rows_total);
  cJSON_AddNumberToObject(m, "cols_total", (double)em->cols_total);
  cJSON_AddStringToObject(m, "metric", "max_err_over_tol");
  cJSON *cells = cJSON_AddArrayToObject(m, "cells");
  cJSON *mis = cJSON_AddArrayToObject(m, "mismatch_cells");
  for (int r = 0; cells && mis && r < em->rows; r++) {
    cJSON *cr = cJSON_CreateArray(), *mr = cJSON_CreateArray();
    for (int c = 0; cr && mr && c < em->cols; c++) {
      cJSON_AddItemToArray(cr, num_or_null(sig3(em->cells[r * em->cols + c])));
      cJSON_AddItemToArray(mr, cJSON_CreateNumber((double)em->mismatch_cells[r * em->cols + c]));
    }
    cJSON_AddItemToArray(cells, cr);
    cJSON_AddItemToArray(mis, mr);
  }
  cJSON *b = cJSON_AddArrayToObject(cJSON_AddObjectToObject(o, "error_histogram"), "buckets");
  for (int i = 0; b && i < PG_CMP_HIST_BUCKETS; i++) {
    const struct pg_cmp_hist_bucket *h = &em->hist[i];
    if (h->n == 0) continue;
    cJSON *e = cJSON_CreateObject();
    if (!e) break;
    add_num(e, "golden_abs_lo", pg_cmp_hist_lo(i));
    add_num(e, "golden_abs_hi", pg_cmp_hist_hi(i)); /* the last: inf, null */
    cJSON_AddNumberToObject(e, "n", (double)h->n);
    cJSON_AddNumberToObject(e, "mismatches", (double)h->mismatches);
    add_num(e, "max_abs_diff", sig3(h->max_abs_diff));
    add_num(e, "max_err_over_tol", sig3(h->max_err_over_tol));
    cJSON_AddItemToArray(b, e);
  }
}

/* What an output check and a probe check both start with: the tensor compared, in
 * which mode, under which rule. */
static cJSON *check_head_json(const char *name, const char *mode, enum pg_dtype dtype,
                              int ndim, const int64_t *shape, const char *rule, double atol,
                              double rtol) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "mode", mode);
  cJSON_AddStringToObject(o, "dtype", pg_dtype_name(dtype));
  cJSON_AddItemToObject(o, "shape", index_json(ndim, shape));
  cJSON_AddStringToObject(o, "rule", rule);
  add_num(o, "atol", atol);
  add_num(o, "rtol", rtol);
  return o;
}

static cJSON *tensor_json(const struct pg_tensor_check *t, const char *mode) {
  cJSON *o = check_head_json(t->name, mode, t->dtype, t->ndim, t->shape, t->rule, t->atol,
                             t->rtol);
  if (!o) return NULL;
  const struct pg_cmp_result *c = &t->cmp;
  cJSON_AddBoolToObject(o, "values_checked", t->values_checked);
  cJSON_AddBoolToObject(o, "passed", t->passed);
  if (!t->compared) return o;
  if (c->structural) {
    cJSON_AddStringToObject(o, "structural", c->structural_reason);
    return o;
  }
  pg_report_add_metrics(o, c);
  if (t->analyzed) add_mask(o, t);
  if (t->error_map) add_error_map(o, t);
  if (t->values_checked && t->passed) cJSON_AddBoolToObject(o, "one_sided_errors", t->one_sided);
  if (t->repeat_calls > 0) {
    cJSON *rp = cJSON_AddObjectToObject(o, "repeat");
    cJSON_AddNumberToObject(rp, "calls", t->repeat_calls + 1);
    cJSON_AddNumberToObject(rp, "differing_elements", (double)t->repeat_differ);
    if (t->repeat_differ > 0) {
      cJSON_AddNumberToObject(rp, "worst_call", t->repeat_worst);
      cJSON_AddItemToObject(rp, "first_differing_index", index_json(t->ndim, t->repeat_first_index));
    }
  }
  cJSON *hints = cJSON_AddArrayToObject(o, "hints");
  for (int i = 0; hints && i < t->n_hints; i++) {
    cJSON *h = cJSON_CreateObject();
    if (!h) break;
    cJSON_AddStringToObject(h, "kind", pg_hint_kind_name(t->hints[i].kind));
    cJSON_AddNumberToObject(h, "confidence", t->hints[i].confidence);
    cJSON_AddStringToObject(h, "detail", t->hints[i].detail);
    if (t->hints[i].axis >= 0) cJSON_AddNumberToObject(h, "axis", t->hints[i].axis);
    if (t->hints[i].tile > 0) cJSON_AddNumberToObject(h, "tile", (double)t->hints[i].tile);
    cJSON_AddItemToArray(hints, h);
  }
  if (t->strength_checked) {
    cJSON *um = cJSON_AddArrayToObject(o, "undetected_mutants");
    for (int i = 0; um && i < t->n_undetected; i++)
      cJSON_AddItemToArray(um, cJSON_CreateString(t->undetected[i]));
  }
  return o;
}

/* One inspection probe of a mode: per-iteration metrics, never a value. */
static cJSON *probe_json(const struct pg_probe_check *p, const char *mode) {
  cJSON *o = check_head_json(p->name, mode, p->dtype, p->ndim, p->shape, p->rule, p->atol,
                             p->rtol);
  if (!o) return NULL;
  cJSON_AddBoolToObject(o, "compared", p->compared);
  if (p->problem[0]) cJSON_AddStringToObject(o, "problem", p->problem);
  cJSON_AddNumberToObject(o, "iterations", p->n_iters);
  if (p->drift_onset_iter >= 0) cJSON_AddNumberToObject(o, "drift_onset_iter", p->drift_onset_iter);
  else cJSON_AddNullToObject(o, "drift_onset_iter");
  cJSON *its = cJSON_AddArrayToObject(o, "per_iteration");
  for (int i = 0; its && i < p->n_iters; i++) {
    const struct pg_probe_iter *it = &p->iters[i];
    cJSON *e = cJSON_CreateObject();
    if (!e) break;
    cJSON_AddNumberToObject(e, "iter", i);
    cJSON_AddNumberToObject(e, "n", (double)it->n);
    cJSON_AddNumberToObject(e, "mismatches", (double)it->mismatches);
    add_num(e, "max_abs_diff", it->max_abs_diff);
    add_num(e, "max_rel_diff", it->max_rel_diff);
    cJSON_AddBoolToObject(e, "passed", it->passed);
    cJSON_AddItemToArray(its, e);
  }
  return o;
}

/* earliest_failing_boundary: the integer j when known, else null (docs/design.md §8). */
static void add_earliest(cJSON *o, int j) {
  if (j > 0) cJSON_AddNumberToObject(o, "earliest_failing_boundary", j);
  else cJSON_AddNullToObject(o, "earliest_failing_boundary");
}

cJSON *pg_report_check_json(const struct pg_case_result *r, int k) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "id", r->id);
  cJSON_AddNumberToObject(o, "level", r->level);
  cJSON_AddNumberToObject(o, "suite_index", r->index);
  cJSON_AddStringToObject(o, "status", pg_verdict_name(r->status));
  if (r->not_implemented) cJSON_AddBoolToObject(o, "not_implemented", 1); /* --implemented-phases */
  cJSON_AddBoolToObject(o, "precision_checked", r->precision_checked);
  cJSON_AddBoolToObject(o, "all_close", r->all_close);
  add_num(o, "max_abs_diff", r->max_abs_diff);
  add_num(o, "max_rel_diff", r->max_rel_diff);
  cJSON *pms = cJSON_AddObjectToObject(o, "per_mode_status");
  for (int i = 0; pms && i < r->n_modes; i++)
    cJSON_AddStringToObject(pms, r->modes[i].mode, pg_verdict_name(r->modes[i].status));
  cJSON *pt = cJSON_AddArrayToObject(o, "per_tensor");
  for (int i = 0; pt && i < r->n_modes; i++)
    for (int j = 0; j < r->modes[i].n_tensors; j++)
      cJSON_AddItemToArray(pt, tensor_json(&r->modes[i].tensors[j], r->modes[i].mode));
  if (r->has_probes) {
    cJSON *ins = cJSON_AddArrayToObject(o, "inspection");
    for (int i = 0; ins && i < r->n_modes; i++)
      for (int j = 0; j < r->modes[i].n_probes; j++)
        cJSON_AddItemToArray(ins, probe_json(&r->modes[i].probes[j], r->modes[i].mode));
  }
  if (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR) {
    cJSON *f = cJSON_AddObjectToObject(o, "failure");
    /* the seed's type: the integer k of the phase that was run, whatever bisection found */
    cJSON_AddNumberToObject(f, "failing_module_boundary", k);
    add_earliest(f, r->earliest_boundary);
    const char *cat = pg_category_name(r->category);
    cJSON_AddStringToObject(f, "failure_category", cat ? cat : "other");
    cJSON_AddStringToObject(f, "divergence_fingerprint", r->fingerprint); /* a str, as the seed */
    cJSON_AddStringToObject(f, "summary", r->summary);
    if (r->has_probes) { /* the first iteration whose probe fails the tolerance */
      if (r->drift_onset_iter >= 0) {
        cJSON_AddNumberToObject(f, "drift_onset_iter", r->drift_onset_iter);
        cJSON_AddStringToObject(f, "drift_probe", r->drift_probe);
        cJSON_AddStringToObject(f, "drift_mode", r->drift_mode);
      } else {
        cJSON_AddNullToObject(f, "drift_onset_iter");
      }
    }
  } else {
    cJSON_AddNullToObject(o, "failure");
  }
  cJSON *modes = cJSON_AddArrayToObject(o, "modes");
  for (int i = 0; modes && i < r->n_modes; i++) {
    const struct pg_mode_result *m = &r->modes[i];
    cJSON *mo = cJSON_CreateObject();
    cJSON_AddStringToObject(mo, "mode", m->mode);
    cJSON_AddStringToObject(mo, "status", pg_verdict_name(m->status));
    const char *cat = pg_category_name(m->category);
    if (cat && m->status != PG_VERDICT_PASS && m->status != PG_VERDICT_SKIPPED)
      cJSON_AddStringToObject(mo, "failure_category", cat);
    else cJSON_AddNullToObject(mo, "failure_category");
    if (m->status == PG_VERDICT_FAIL) add_earliest(mo, m->earliest_boundary);
    /* a structure-only mode (`modes: {<mode>: {precision: false}}`): values not gating */
    cJSON_AddBoolToObject(mo, "precision_gating", !m->structure_only);
    if (m->policy_from[0]) cJSON_AddStringToObject(mo, "precision_policy", m->policy_from);
    cJSON_AddStringToObject(mo, "summary", m->summary);
    add_num(mo, "duration_ms", m->impl_ms);
    if (m->startup_ms > 0) add_num(mo, "startup_ms", m->startup_ms); /* apart from the call */
    if (m->timed_out) cJSON_AddBoolToObject(mo, "timed_out", 1);
    if (m->signo) cJSON_AddNumberToObject(mo, "signal", m->signo);
    cJSON_AddNumberToObject(mo, "exit_code", m->exit_code);
    cJSON_AddStringToObject(mo, "stdout", m->captured ? m->captured : "");
    cJSON_AddItemToArray(modes, mo);
  }
  cJSON_AddStringToObject(o, "repro", r->repro ? r->repro : "");
  cJSON *d = cJSON_AddObjectToObject(o, "durations_ms");
  add_num(d, "inputs", r->inputs_ms);
  add_num(d, "reference_compute", r->golden_ms);
  add_num(d, "diagnosis", r->diagnosis_ms);
  add_num(d, "total", r->total_ms);
  cJSON_AddBoolToObject(o, "golden_cached", r->golden_cached);
  cJSON_AddBoolToObject(o, "cpu_reproducer_candidate", r->cpu_reproducer_candidate);
  cJSON_AddBoolToObject(o, "mistrusted", r->mistrusted);
  cJSON *hints = cJSON_AddArrayToObject(o, "hints");
  if (hints && r->hint[0]) cJSON_AddItemToArray(hints, cJSON_CreateString(r->hint));
  if (r->cancel.present) {
    cJSON *cn = cJSON_AddObjectToObject(o, "cancellation_stress");
    cJSON_AddStringToObject(cn, "target", r->cancel.target);
    cJSON_AddStringToObject(cn, "kernel", r->cancel.kernel);
    cJSON_AddStringToObject(cn, "method", r->cancel.method);
    add_num(cn, "relative_gap", r->cancel.relative_gap);
    add_num(cn, "elements", (double)r->cancel.n);
    add_num(cn, "share_within_gap", r->cancel.share);
    add_num(cn, "share_within_gap_plain_inputs", r->cancel.share_plain);
    add_num(cn, "median_ratio", r->cancel.median_r);
    cJSON_AddStringToObject(cn, "note", r->cancel.note);
  }
  /* knobs_json is cJSON's own compact print of the case: a parse failure is memory */
  cJSON *knobs = r->knobs_json ? oom_ptr(cJSON_Parse(r->knobs_json)) : NULL;
  cJSON_AddItemToObject(o, "knobs", knobs ? knobs : cJSON_CreateObject());
  return o;
}

static const char *get_str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int check_order(const cJSON *a, const cJSON *b) {
  const cJSON *ia = cJSON_GetObjectItemCaseSensitive(a, "suite_index");
  const cJSON *ib = cJSON_GetObjectItemCaseSensitive(b, "suite_index");
  double x = cJSON_IsNumber(ia) ? ia->valuedouble : 1e18, y = cJSON_IsNumber(ib) ? ib->valuedouble : 1e18;
  if (x != y) return x < y ? -1 : 1;
  const char *sa = get_str(a, "id"), *sb = get_str(b, "id");
  return strcmp(sa ? sa : "", sb ? sb : "");
}

/* Stable insertion sort of checks[] by suite order (a few hundred entries at most). */
static void sort_checks(cJSON *checks) {
  int n = cJSON_GetArraySize(checks);
  cJSON **items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
  if (!items) {
    report_oom = 1;
    return;
  }
  for (int i = 0; i < n; i++) items[i] = cJSON_DetachItemFromArray(checks, 0);
  for (int i = 1; i < n; i++) {
    cJSON *x = items[i];
    int j = i - 1;
    while (j >= 0 && check_order(items[j], x) > 0) {
      items[j + 1] = items[j];
      j--;
    }
    items[j + 1] = x;
  }
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(checks, items[i]);
  free(items);
}

cJSON *pg_report_build(const struct pg_run_phase *m, cJSON *checks) {
  cJSON *r = cJSON_CreateObject();
  if (!r) {
    cJSON_Delete(checks);
    return NULL;
  }
  sort_checks(checks);
  cJSON_AddNumberToObject(r, "schema_version", PG_REPORT_SCHEMA_VERSION);
  cJSON_AddStringToObject(r, "tool", "phasegate");
  cJSON_AddStringToObject(r, "tool_version", m->tool_version ? m->tool_version : "unknown");
  cJSON_AddStringToObject(r, "op_name", m->op);
  cJSON_AddStringToObject(r, "impl_file", m->impl_spec ? m->impl_spec : "");
  cJSON_AddNumberToObject(r, "up_to_module", m->up_to_module);
  cJSON_AddNumberToObject(r, "total_modules", m->total_modules);
  char suffix[64];
  pg_phase_suffix(m->up_to_module, suffix, sizeof suffix);
  cJSON_AddStringToObject(r, "suffix", suffix);
  if (m->contract_path) cJSON_AddStringToObject(r, "contract", m->contract_path);
  if (m->suite_path) cJSON_AddStringToObject(r, "suite", m->suite_path);

  int total = 0, passed = 0, failed = 0, errors = 0, skipped = 0, not_impl = 0;
  enum pg_verdict worst = PG_VERDICT_SKIPPED;
  cJSON *pms = cJSON_CreateObject();
  cJSON *first_failure = NULL;
  char *out = oom_ptr(calloc(1, PG_REPORT_STDOUT_MAX + 1));
  size_t out_len = 0;
  const cJSON *chk;
  cJSON_ArrayForEach(chk, checks) {
    total++;
    enum pg_verdict v = pg_verdict_parse(get_str(chk, "status"));
    if (v > worst) worst = v;
    if (v == PG_VERDICT_PASS) passed++;
    else if (v == PG_VERDICT_FAIL) failed++;
    else if (v == PG_VERDICT_ERROR) errors++;
    else skipped++;
    not_impl += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(chk, "not_implemented"));
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(chk, "per_mode_status");
    const cJSON *e;
    cJSON_ArrayForEach(e, cm) {
      if (!cJSON_IsString(e) || !e->string) continue;
      enum pg_verdict mv = pg_verdict_parse(e->valuestring);
      cJSON *cur = cJSON_GetObjectItemCaseSensitive(pms, e->string);
      if (!cur) cJSON_AddStringToObject(pms, e->string, pg_verdict_name(mv));
      else if (mv > pg_verdict_parse(cur->valuestring))
        cJSON_ReplaceItemInObjectCaseSensitive(pms, e->string,
                                               cJSON_CreateString(pg_verdict_name(mv)));
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(chk, "failure");
    if (!first_failure && cJSON_IsObject(f)) {
      first_failure = cJSON_Duplicate(f, 1);
      const char *id = get_str(chk, "id");
      cJSON_AddItemToObject(first_failure, "case_id", cJSON_CreateString(id ? id : ""));
    }
    /* stdout: the captured impl output of every mode, bounded. */
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(chk, "modes"), *mo;
    cJSON_ArrayForEach(mo, modes) {
      const char *s = get_str(mo, "stdout");
      if (!out || !s || !*s) continue;
      char head[300];
      int hn = snprintf(head, sizeof head, "--- %s / %s ---\n", get_str(chk, "id") ? get_str(chk, "id") : "?",
                        get_str(mo, "mode") ? get_str(mo, "mode") : "?");
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
  cJSON_AddStringToObject(r, "status", pg_verdict_name(total ? worst : PG_VERDICT_SKIPPED));
  /* the phase is after --implemented-phases (CMake PHASES): every case listed, none run */
  if (total > 0 && not_impl == total) cJSON_AddBoolToObject(r, "not_implemented", 1);
  cJSON_AddItemToObject(r, "checks", checks);
  cJSON_AddNumberToObject(r, "cases_total", total);
  cJSON_AddNumberToObject(r, "cases_passed", passed);
  cJSON_AddNumberToObject(r, "cases_failed", failed);
  cJSON_AddNumberToObject(r, "cases_error", errors);
  cJSON_AddNumberToObject(r, "cases_skipped", skipped);
  cJSON_AddItemToObject(r, "per_mode_status", pms);
  if (first_failure) cJSON_AddItemToObject(r, "first_failure", first_failure);
  else cJSON_AddNullToObject(r, "first_failure");
  cJSON_AddStringToObject(r, "stdout", out ? out : "");
  free(out);
  char ts[64];
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  cJSON_AddStringToObject(r, "updated_at", ts);
  return r;
}

/* The whole file, or NULL: missing or unreadable, or (*oom set) out of memory. */
static char *read_file(const char *path, int *oom) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      cap = cap ? cap * 2 : 65536 * 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        *oom = 1;
        return NULL;
      }
      buf = nb;
    }
    size_t n = fread(buf + len, 1, 65536, f);
    len += n;
    if (n == 0) break;
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
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
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "failing_module_boundary");
  if (!cJSON_IsString(v)) return;
  int j = v->valuestring[0] == 'M' ? atoi(v->valuestring + 1) : 0;
  if (!cJSON_GetObjectItemCaseSensitive(o, "earliest_failing_boundary"))
    add_earliest(o, j > 0 && j < k ? j : 0);
  if (keep) cJSON_ReplaceItemInObjectCaseSensitive(o, "failing_module_boundary", cJSON_CreateNumber(k));
  else cJSON_DeleteItemFromObjectCaseSensitive(o, "failing_module_boundary");
}

static cJSON *upgrade_check(cJSON *c, int k) {
  cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "failure"), *mo;
  if (cJSON_IsObject(f)) upgrade_boundary(f, k, 1);
  cJSON_ArrayForEach(mo, cJSON_GetObjectItemCaseSensitive(c, "modes")) upgrade_boundary(mo, k, 0);
  return c;
}

/* The checks of an existing report at path for the same op and phase, except those of
 * `cases` (which replace them), then those of `cases`. */
static cJSON *merged_checks(const char *path, const struct pg_run_phase *m,
                            const struct pg_case_result *cases, int n, struct pg_error *note) {
  cJSON *checks = cJSON_CreateArray();
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
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(prev, "op_name");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(prev, "up_to_module");
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(prev, "checks");
    if (cJSON_IsString(op) && strcmp(op->valuestring, m->op) == 0 && cJSON_IsNumber(k) &&
        k->valueint == m->up_to_module && cJSON_IsArray(pc)) {
      const cJSON *c;
      cJSON_ArrayForEach(c, pc) {
        const char *id = get_str(c, "id");
        int replaced = 0;
        for (int i = 0; id && i < n; i++) replaced |= strcmp(cases[i].id, id) == 0;
        if (id && !replaced) {
          cJSON *dup = cJSON_Duplicate(c, 1);
          if (dup) cJSON_AddItemToArray(checks, upgrade_check(dup, m->up_to_module));
        }
      }
    }
    cJSON_Delete(prev);
  }
  for (int i = 0; i < n; i++)
    cJSON_AddItemToArray(checks, pg_report_check_json(&cases[i], m->up_to_module));
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
  cJSON *report = pg_report_build(m, merged_checks(path, m, cases, n, err));
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
