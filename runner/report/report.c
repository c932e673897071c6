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
  add_bool(o, "all_close", c->passed);
  add_number(o, "n", (double)c->n);
  add_number(o, "mismatches", (double)c->mismatches);
  add_num(o, "mismatch_ratio", c->mismatch_ratio);
  add_num(o, "max_abs_diff", c->max_abs_diff);
  if (c->max_abs_flat >= 0)
    add_item(o, "max_abs_index", index_json(c->ndim, c->max_abs_index));
  else
    add_item(o, "max_abs_index", new_null());
  add_num(o, "max_rel_diff", c->max_rel_diff);
  if (c->max_rel_flat >= 0)
    add_item(o, "max_rel_index", index_json(c->ndim, c->max_rel_index));
  else
    add_item(o, "max_rel_index", new_null());
  add_num(o, "mean_abs_diff", c->mean_abs_diff);
  add_num(o, "rmse", c->rmse);
  add_num(o, "cosine_similarity", c->cosine_similarity);
  add_number(o, "nan_impl", (double)c->nan_impl);
  add_number(o, "nan_ref", (double)c->nan_ref);
  add_number(o, "inf_impl", (double)c->inf_impl);
  add_number(o, "inf_ref", (double)c->inf_ref);
  add_num(o, "max_ulp", c->max_ulp);
  add_num(o, "error_balance", c->error_balance);
  add_num(o, "max_signed_diff", c->max_signed_diff);
  add_num(o, "share_within_1e-3", c->share_within_1e3);
  add_num(o, "share_within_5e-3", c->share_within_5e3);
  add_num(o, "zero_share_ref", c->zero_share_ref);
  add_bool(o, "mistrusted", c->mistrusted);
  if (c->mistrusted) add_str(o, "mistrust_reason", c->mistrust_reason);
  add_bool(o, "cpu_reproducer_candidate", c->cpu_reproducer_candidate);
  /* First mismatches: index, the impl's value, and the differences; never the
   * reference value (information barrier). */
  cJSON *fm = add_array(o, "first_mismatches");
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
  cJSON *ev = add_object(o, "evidence");
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
  cJSON *axes = add_array(add_object(o, "mismatch_mask"), "axes");
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
  cJSON *m = add_object(o, "error_map");
  if (!m) return;
  int64_t shape[2] = {em->rows, em->cols}, rows[PG_MAX_NDIM];
  add_item(m, "shape", index_json(2, shape));
  for (int d = 0; d < em->n_row_axes && d < PG_MAX_NDIM; d++) rows[d] = d;
  add_item(m, "row_axes", index_json(em->n_row_axes, rows));
  add_number(m, "col_axis", em->col_axis);
  add_number(m, "rows_per_cell", (double)em->rows_per_cell);
  add_number(m, "cols_per_cell", (double)em->cols_per_cell);
  add_number(m, "rows_total", (double)em->rows_total);
  add_number(m, "cols_total", (double)em->cols_total);
  add_str(m, "metric", "max_err_over_tol");
  cJSON *cells = add_array(m, "cells");
  cJSON *mis = add_array(m, "mismatch_cells");
  for (int r = 0; cells && mis && r < em->rows; r++) {
    cJSON *cr = new_array(), *mr = new_array();
    for (int c = 0; cr && mr && c < em->cols; c++) {
      push_item(cr, num_or_null(sig3(em->cells[r * em->cols + c])));
      push_item(mr, new_number((double)em->mismatch_cells[r * em->cols + c]));
    }
    push_item(cells, cr);
    push_item(mis, mr);
  }
  cJSON *b = add_array(add_object(o, "error_histogram"), "buckets");
  for (int i = 0; b && i < PG_CMP_HIST_BUCKETS; i++) {
    const struct pg_cmp_hist_bucket *h = &em->hist[i];
    if (h->n == 0) continue;
    cJSON *e = new_object();
    if (!e) break;
    add_num(e, "golden_abs_lo", pg_cmp_hist_lo(i));
    add_num(e, "golden_abs_hi", pg_cmp_hist_hi(i)); /* the last: inf, null */
    add_number(e, "n", (double)h->n);
    add_number(e, "mismatches", (double)h->mismatches);
    add_num(e, "max_abs_diff", sig3(h->max_abs_diff));
    add_num(e, "max_err_over_tol", sig3(h->max_err_over_tol));
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
  add_str(o, "name", name);
  add_str(o, "mode", mode);
  add_str(o, "dtype", pg_dtype_name(dtype));
  add_item(o, "shape", index_json(ndim, shape));
  add_str(o, "rule", rule);
  add_num(o, "atol", atol);
  add_num(o, "rtol", rtol);
  return o;
}

static cJSON *tensor_json(const struct pg_tensor_check *t, const char *mode) {
  cJSON *o = check_head_json(t->name, mode, t->dtype, t->ndim, t->shape, t->rule, t->atol,
                             t->rtol);
  if (!o) return NULL;
  const struct pg_cmp_result *c = &t->cmp;
  add_bool(o, "values_checked", t->values_checked);
  add_bool(o, "passed", t->passed);
  if (!t->compared) return o;
  if (c->structural) {
    add_str(o, "structural", c->structural_reason);
    return o;
  }
  pg_report_add_metrics(o, c);
  if (t->analyzed) add_mask(o, t);
  if (t->error_map) add_error_map(o, t);
  if (t->values_checked && t->passed) add_bool(o, "one_sided_errors", t->one_sided);
  if (t->repeat_calls > 0) {
    cJSON *rp = add_object(o, "repeat");
    add_number(rp, "calls", t->repeat_calls + 1);
    add_number(rp, "differing_elements", (double)t->repeat_differ);
    if (t->repeat_differ > 0) {
      add_number(rp, "worst_call", t->repeat_worst);
      add_item(rp, "first_differing_index", index_json(t->ndim, t->repeat_first_index));
    }
  }
  cJSON *hints = add_array(o, "hints");
  for (int i = 0; hints && i < t->n_hints; i++) {
    cJSON *h = new_object();
    if (!h) break;
    add_str(h, "kind", pg_hint_kind_name(t->hints[i].kind));
    add_number(h, "confidence", t->hints[i].confidence);
    add_str(h, "detail", t->hints[i].detail);
    if (t->hints[i].axis >= 0) add_number(h, "axis", t->hints[i].axis);
    if (t->hints[i].tile > 0) add_number(h, "tile", (double)t->hints[i].tile);
    push_item(hints, h);
  }
  if (t->strength_checked) {
    cJSON *um = add_array(o, "undetected_mutants");
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
    cJSON *e = new_object();
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

/* earliest_failing_boundary: the integer j when known, else null (docs/design.md §8). */
static void add_earliest(cJSON *o, int j) {
  if (j > 0) add_number(o, "earliest_failing_boundary", j);
  else add_null(o, "earliest_failing_boundary");
}

cJSON *pg_report_check_json(const struct pg_case_result *r, int k) {
  cJSON *o = new_object();
  if (!o) return NULL;
  add_str(o, "id", r->id);
  add_number(o, "level", r->level);
  add_number(o, "suite_index", r->index);
  add_str(o, "status", pg_verdict_name(r->status));
  if (r->not_implemented) add_bool(o, "not_implemented", 1); /* --implemented-phases */
  add_bool(o, "precision_checked", r->precision_checked);
  add_bool(o, "all_close", r->all_close);
  add_num(o, "max_abs_diff", r->max_abs_diff);
  add_num(o, "max_rel_diff", r->max_rel_diff);
  cJSON *pms = add_object(o, "per_mode_status");
  for (int i = 0; pms && i < r->n_modes; i++)
    add_str(pms, r->modes[i].mode, pg_verdict_name(r->modes[i].status));
  cJSON *pt = add_array(o, "per_tensor");
  for (int i = 0; pt && i < r->n_modes; i++)
    for (int j = 0; j < r->modes[i].n_tensors; j++)
      push_item(pt, tensor_json(&r->modes[i].tensors[j], r->modes[i].mode));
  if (r->has_probes) {
    cJSON *ins = add_array(o, "inspection");
    for (int i = 0; ins && i < r->n_modes; i++)
      for (int j = 0; j < r->modes[i].n_probes; j++)
        push_item(ins, probe_json(&r->modes[i].probes[j], r->modes[i].mode));
  }
  if (r->status == PG_VERDICT_FAIL || r->status == PG_VERDICT_ERROR) {
    cJSON *f = add_object(o, "failure");
    /* the seed's type: the integer k of the phase that was run, whatever bisection found */
    add_number(f, "failing_module_boundary", k);
    add_earliest(f, r->earliest_boundary);
    const char *cat = pg_category_name(r->category);
    add_str(f, "failure_category", cat ? cat : "other");
    add_str(f, "divergence_fingerprint", r->fingerprint); /* a str, as the seed */
    add_str(f, "summary", r->summary);
    if (r->has_probes) { /* the first iteration whose probe fails the tolerance */
      if (r->drift_onset_iter >= 0) {
        add_number(f, "drift_onset_iter", r->drift_onset_iter);
        add_str(f, "drift_probe", r->drift_probe);
        add_str(f, "drift_mode", r->drift_mode);
      } else {
        add_null(f, "drift_onset_iter");
      }
    }
  } else {
    add_null(o, "failure");
  }
  cJSON *modes = add_array(o, "modes");
  for (int i = 0; modes && i < r->n_modes; i++) {
    const struct pg_mode_result *m = &r->modes[i];
    cJSON *mo = new_object();
    add_str(mo, "mode", m->mode);
    add_str(mo, "status", pg_verdict_name(m->status));
    const char *cat = pg_category_name(m->category);
    if (cat && m->status != PG_VERDICT_PASS && m->status != PG_VERDICT_SKIPPED)
      add_str(mo, "failure_category", cat);
    else add_null(mo, "failure_category");
    if (m->status == PG_VERDICT_FAIL) add_earliest(mo, m->earliest_boundary);
    /* a structure-only mode (`modes: {<mode>: {precision: false}}`): values not gating */
    add_bool(mo, "precision_gating", !m->structure_only);
    if (m->policy_from[0]) add_str(mo, "precision_policy", m->policy_from);
    add_str(mo, "summary", m->summary);
    add_num(mo, "duration_ms", m->impl_ms);
    if (m->startup_ms > 0) add_num(mo, "startup_ms", m->startup_ms); /* apart from the call */
    if (m->timed_out) add_bool(mo, "timed_out", 1);
    if (m->signo) add_number(mo, "signal", m->signo);
    add_number(mo, "exit_code", m->exit_code);
    add_str(mo, "stdout", m->captured ? m->captured : "");
    push_item(modes, mo);
  }
  add_str(o, "repro", r->repro ? r->repro : "");
  cJSON *d = add_object(o, "durations_ms");
  add_num(d, "inputs", r->inputs_ms);
  add_num(d, "reference_compute", r->golden_ms);
  add_num(d, "diagnosis", r->diagnosis_ms);
  add_num(d, "total", r->total_ms);
  add_bool(o, "golden_cached", r->golden_cached);
  add_bool(o, "cpu_reproducer_candidate", r->cpu_reproducer_candidate);
  add_bool(o, "mistrusted", r->mistrusted);
  cJSON *hints = add_array(o, "hints");
  if (hints && r->hint[0]) push_item(hints, new_string(r->hint));
  if (r->cancel.present) {
    cJSON *cn = add_object(o, "cancellation_stress");
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
  add_item(o, "knobs", knobs ? knobs : new_object());
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
  for (int i = 0; i < n; i++) push_item(checks, items[i]);
  free(items);
}

cJSON *pg_report_build(const struct pg_run_phase *m, cJSON *checks) {
  cJSON *r = new_object();
  if (!r) {
    cJSON_Delete(checks);
    return NULL;
  }
  sort_checks(checks);
  add_number(r, "schema_version", PG_REPORT_SCHEMA_VERSION);
  add_str(r, "tool", "phasegate");
  add_str(r, "tool_version", m->tool_version ? m->tool_version : "unknown");
  add_str(r, "op_name", m->op);
  add_str(r, "impl_file", m->impl_spec ? m->impl_spec : "");
  add_number(r, "up_to_module", m->up_to_module);
  add_number(r, "total_modules", m->total_modules);
  char suffix[64];
  pg_phase_suffix(m->up_to_module, suffix, sizeof suffix);
  add_str(r, "suffix", suffix);
  if (m->contract_path) add_str(r, "contract", m->contract_path);
  if (m->suite_path) add_str(r, "suite", m->suite_path);

  int total = 0, passed = 0, failed = 0, errors = 0, skipped = 0, not_impl = 0;
  enum pg_verdict worst = PG_VERDICT_SKIPPED;
  cJSON *pms = new_object();
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
      if (!cur) add_str(pms, e->string, pg_verdict_name(mv));
      else if (mv > pg_verdict_parse(cur->valuestring))
        replace_item(pms, e->string,
                                               new_string(pg_verdict_name(mv)));
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(chk, "failure");
    if (!first_failure && cJSON_IsObject(f)) {
      first_failure = duplicate(f);
      const char *id = get_str(chk, "id");
      add_item(first_failure, "case_id", new_string(id ? id : ""));
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
  add_str(r, "status", pg_verdict_name(total ? worst : PG_VERDICT_SKIPPED));
  /* the phase is after --implemented-phases (CMake PHASES): every case listed, none run */
  if (total > 0 && not_impl == total) add_bool(r, "not_implemented", 1);
  add_item(r, "checks", checks);
  add_number(r, "cases_total", total);
  add_number(r, "cases_passed", passed);
  add_number(r, "cases_failed", failed);
  add_number(r, "cases_error", errors);
  add_number(r, "cases_skipped", skipped);
  add_item(r, "per_mode_status", pms);
  if (first_failure) add_item(r, "first_failure", first_failure);
  else add_null(r, "first_failure");
  add_str(r, "stdout", out ? out : "");
  free(out);
  char ts[64];
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  add_str(r, "updated_at", ts);
  return r;
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
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "failing_module_boundary");
  if (!cJSON_IsString(v)) return;
  int j = v->valuestring[0] == 'M' ? atoi(v->valuestring + 1) : 0;
  if (!cJSON_GetObjectItemCaseSensitive(o, "earliest_failing_boundary"))
    add_earliest(o, j > 0 && j < k ? j : 0);
  if (keep) replace_item(o, "failing_module_boundary", new_number(k));
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
          cJSON *dup = duplicate(c);
          if (dup) push_item(checks, upgrade_check(dup, m->up_to_module));
        }
      }
    }
    cJSON_Delete(prev);
  }
  for (int i = 0; i < n; i++)
    push_item(checks, pg_report_check_json(&cases[i], m->up_to_module));
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
