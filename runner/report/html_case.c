/* phasegate runner — one phase report as a section of the HTML page: its header, then
 * per case (failing cases open, the others folded) the failure, the modes with their
 * captured output, every output's metrics, the hints and figures of failing outputs,
 * and the repro line. Every report string goes through pg__html_text.
 */
#include "report/html_internal.h"
#include "report/report.h"

#include <stdio.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void badge(struct pg__html *h, const char *status) {
  pg__html_fmt(h, "<span class=\"badge %s\">", pg__html_status_class(status));
  pg__html_text(h, status ? status : "?");
  pg__html_raw(h, "</span>");
}

/* "M3" from the integer k (or the seed's "M3" string as written). */
static void boundary(struct pg__html *h, const cJSON *v) {
  if (cJSON_IsNumber(v)) pg__html_fmt(h, "M%d", (int)v->valuedouble);
  else if (cJSON_IsString(v)) pg__html_text(h, v->valuestring);
  else pg__html_raw(h, "–");
}

/* "infra / shared_library": a failure's category and, when the report has one, its
 * subcategory (docs/report.md "Failure subcategories"). */
static void category(struct pg__html *h, const cJSON *o, const char *none) {
  const char *cat = pg__html_str(o, "failure_category");
  const char *sub = pg__html_str(o, "failure_subcategory");
  pg__html_text(h, cat ? cat : none);
  if (cat && sub && *sub) {
    pg__html_raw(h, " / ");
    pg__html_text(h, sub);
  }
}

static void failure_block(struct pg__html *h, const cJSON *f) {
  pg__html_raw(h, "<p><b>failure</b>: ");
  category(h, f, "other");
  pg__html_raw(h, " &#xb7; failing boundary ");
  boundary(h, get(f, "failing_module_boundary"));
  pg__html_raw(h, " &#xb7; earliest failing boundary ");
  const cJSON *e = get(f, "earliest_failing_boundary");
  if (cJSON_IsNumber(e)) boundary(h, e);
  else pg__html_raw(h, "not bisected");
  const char *fp = pg__html_str(f, "divergence_fingerprint");
  if (fp && *fp) {
    pg__html_raw(h, " &#xb7; fingerprint <code>");
    pg__html_text(h, fp);
    pg__html_raw(h, "</code>");
  }
  pg__html_raw(h, "<br>");
  pg__html_text(h, pg__html_str(f, "summary"));
  pg__html_raw(h, "</p>\n");
}

static void modes_table(struct pg__html *h, const cJSON *c) {
  const cJSON *modes = get(c, "modes"), *mo;
  if (cJSON_GetArraySize(modes) == 0) return;
  pg__html_raw(h,
               "<table><thead><tr><th>mode</th><th>status</th><th>category</th><th>earliest "
               "boundary</th><th>impl ms</th><th>summary</th></tr></thead><tbody>\n");
  cJSON_ArrayForEach(mo, modes) {
    pg__html_raw(h, "<tr><td>");
    pg__html_text(h, pg__html_str(mo, "mode"));
    pg__html_raw(h, "</td><td>");
    badge(h, pg__html_str(mo, "status"));
    pg__html_raw(h, "</td><td>");
    category(h, mo, "–");
    pg__html_raw(h, "</td><td>");
    const cJSON *e = get(mo, "earliest_failing_boundary");
    if (cJSON_IsNumber(e)) boundary(h, e);
    else pg__html_raw(h, "–");
    pg__html_raw(h, "</td><td class=\"num\">");
    pg__html_num(h, get(mo, "duration_ms"));
    pg__html_raw(h, "</td><td>");
    pg__html_text(h, pg__html_str(mo, "summary"));
    pg__html_raw(h, "</td></tr>\n");
  }
  pg__html_raw(h, "</tbody></table>\n");
  cJSON_ArrayForEach(mo, modes) {
    const char *out = pg__html_str(mo, "stdout"), *st = pg__html_str(mo, "status");
    if (!out || !*out || (st && strcmp(st, "PASS") == 0)) continue;
    pg__html_raw(h, "<details><summary class=\"meta\">captured output of ");
    pg__html_text(h, pg__html_str(mo, "mode"));
    pg__html_raw(h, " (last 40 lines)</summary><pre>");
    pg__html_tail(h, out, 40);
    pg__html_raw(h, "</pre></details>\n");
  }
}

static void index_text(struct pg__html *h, const cJSON *idx) {
  if (!cJSON_IsArray(idx)) return;
  pg__html_raw(h, " at [");
  const cJSON *e;
  int first = 1;
  cJSON_ArrayForEach(e, idx) {
    pg__html_raw(h, first ? "" : ", ");
    pg__html_num(h, e);
    first = 0;
  }
  pg__html_raw(h, "]");
}

static void shape_text(struct pg__html *h, const cJSON *t) {
  pg__html_text(h, pg__html_str(t, "dtype"));
  pg__html_raw(h, " [");
  const cJSON *e;
  int first = 1;
  cJSON_ArrayForEach(e, get(t, "shape")) {
    pg__html_raw(h, first ? "" : ", ");
    pg__html_num(h, e);
    first = 0;
  }
  pg__html_raw(h, "]");
}

static void td_num(struct pg__html *h, const cJSON *t, const char *key) {
  pg__html_raw(h, "<td class=\"num\">");
  pg__html_num(h, get(t, key));
  pg__html_raw(h, "</td>");
}

static void output_row(struct pg__html *h, const cJSON *t) {
  pg__html_raw(h, "<tr><td>");
  pg__html_text(h, pg__html_str(t, "mode"));
  pg__html_raw(h, "</td><td>");
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_raw(h, "</td><td>");
  shape_text(h, t);
  pg__html_raw(h, "</td><td>");
  pg__html_text(h, pg__html_str(t, "rule"));
  pg__html_raw(h, " (");
  pg__html_num(h, get(t, "atol"));
  pg__html_raw(h, ", ");
  pg__html_num(h, get(t, "rtol"));
  pg__html_raw(h, ")</td><td>");
  const cJSON *p = get(t, "passed");
  const char *st = pg__html_str(t, "structural");
  badge(h, st ? "FAIL" : cJSON_IsTrue(p) ? "PASS" : cJSON_IsFalse(p) ? "FAIL" : "SKIPPED");
  if (st) {
    pg__html_raw(h, "</td><td colspan=\"8\">structural: ");
    pg__html_text(h, st);
    pg__html_raw(h, "</td></tr>\n");
    return;
  }
  if (!get(t, "n")) {
    pg__html_raw(h, "</td><td colspan=\"8\" class=\"meta\">not compared</td></tr>\n");
    return;
  }
  pg__html_raw(h, "</td><td class=\"num\">");
  pg__html_num(h, get(t, "mismatches"));
  pg__html_raw(h, " / ");
  pg__html_num(h, get(t, "n"));
  pg__html_raw(h, "</td><td class=\"num\">");
  pg__html_num(h, get(t, "max_abs_diff"));
  index_text(h, get(t, "max_abs_index"));
  pg__html_raw(h, "</td>");
  td_num(h, t, "max_rel_diff");
  td_num(h, t, "mean_abs_diff");
  td_num(h, t, "rmse");
  td_num(h, t, "cosine_similarity");
  td_num(h, t, "max_ulp");
  pg__html_raw(h, "<td class=\"num\">");
  pg__html_num(h, get(t, "nan_impl"));
  pg__html_raw(h, "/");
  pg__html_num(h, get(t, "inf_impl"));
  pg__html_raw(h, " &#xb7; ");
  pg__html_num(h, get(t, "nan_ref"));
  pg__html_raw(h, "/");
  pg__html_num(h, get(t, "inf_ref"));
  pg__html_raw(h, "</td></tr>\n");
}

static void hints_list(struct pg__html *h, const cJSON *hints) {
  if (cJSON_GetArraySize(hints) == 0) return;
  pg__html_raw(h, "<ul class=\"hints\">");
  const cJSON *x;
  cJSON_ArrayForEach(x, hints) {
    pg__html_raw(h, "<li>");
    if (cJSON_IsString(x)) { /* the case's one-line hints */
      pg__html_text(h, x->valuestring);
      pg__html_raw(h, "</li>");
      continue;
    }
    pg__html_raw(h, "<b>");
    pg__html_text(h, pg__html_str(x, "kind"));
    pg__html_raw(h, "</b> <span class=\"conf\">confidence ");
    pg__html_num(h, get(x, "confidence"));
    int axis = pg__html_int(x, "axis", -1), tile = pg__html_int(x, "tile", -1);
    if (axis >= 0) pg__html_fmt(h, " &#xb7; axis %d", axis);
    if (tile > 0) pg__html_fmt(h, " &#xb7; tile %d", tile);
    pg__html_raw(h, "</span> ");
    pg__html_text(h, pg__html_str(x, "detail"));
    pg__html_raw(h, "</li>");
  }
  pg__html_raw(h, "</ul>\n");
}

static void first_mismatches(struct pg__html *h, const cJSON *t) {
  const cJSON *fm = get(t, "first_mismatches"), *m;
  if (cJSON_GetArraySize(fm) == 0) return;
  pg__html_raw(h,
               "<details><summary class=\"meta\">first mismatches</summary><table><thead><tr>"
               "<th>index</th><th>impl value</th><th>|diff|</th><th>rel diff</th></tr></thead><tbody>");
  cJSON_ArrayForEach(m, fm) {
    pg__html_raw(h, "<tr><td>");
    index_text(h, get(m, "index"));
    pg__html_raw(h, "</td>");
    td_num(h, m, "impl_value");
    td_num(h, m, "abs_diff");
    td_num(h, m, "rel_diff");
    pg__html_raw(h, "</tr>");
  }
  pg__html_raw(h, "</tbody></table></details>\n");
}

/* What a failing output has beyond its row: hints, heatmap, histogram, first
 * mismatches. */
static void output_detail(struct pg__html *h, const cJSON *t) {
  if (cJSON_IsTrue(get(t, "passed")) || !cJSON_IsObject(t)) return;
  const cJSON *hints = get(t, "hints"), *map = get(t, "error_map"), *hist = get(t, "error_histogram");
  if (!cJSON_GetArraySize(hints) && !cJSON_IsObject(map) && !cJSON_IsObject(hist) &&
      !cJSON_GetArraySize(get(t, "first_mismatches")))
    return;
  pg__html_raw(h, "<h4>");
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_raw(h, " <span class=\"meta\">(");
  pg__html_text(h, pg__html_str(t, "mode"));
  pg__html_raw(h, ")</span></h4>\n");
  hints_list(h, hints);
  if (cJSON_IsObject(map) || cJSON_IsObject(hist)) {
    pg__html_raw(h, "<div class=\"figs\">");
    pg__html_error_map(h, t);
    pg__html_histogram(h, t);
    pg__html_raw(h, "</div>\n");
  }
  first_mismatches(h, t);
}

static void outputs(struct pg__html *h, const cJSON *c) {
  const cJSON *pt = get(c, "per_tensor"), *t;
  if (cJSON_GetArraySize(pt) == 0) return;
  pg__html_raw(h,
               "<table><thead><tr><th>mode</th><th>output</th><th>dtype shape</th><th>rule "
               "(atol, rtol)</th><th>verdict</th><th>mismatches / n</th><th>max |diff|</th>"
               "<th>max rel</th><th>mean |diff|</th><th>rmse</th><th>cosine</th><th>max ulp</th>"
               "<th>NaN/Inf impl &#xb7; ref</th></tr></thead><tbody>\n");
  cJSON_ArrayForEach(t, pt) output_row(h, t);
  pg__html_raw(h, "</tbody></table>\n");
  cJSON_ArrayForEach(t, pt) output_detail(h, t);
}

/* The summary line of a case: status, level, id, each mode's status, category and
 * boundary. */
static void case_summary(struct pg__html *h, const cJSON *c) {
  const char *status = pg__html_str(c, "status");
  pg__html_raw(h, "<summary>");
  if (cJSON_IsTrue(get(c, "not_implemented"))) pg__html_raw(h, "<span class=\"badge ni\">not implemented yet</span>");
  else badge(h, status);
  int level = pg__html_int(c, "level", -1);
  if (level >= 0) pg__html_fmt(h, " L%d", level);
  pg__html_raw(h, " <code>");
  pg__html_text(h, pg__html_str(c, "id"));
  pg__html_raw(h, "</code> <span class=\"meta\">");
  const cJSON *ms, *f = get(c, "failure");
  const char *sep = "";
  cJSON_ArrayForEach(ms, get(c, "per_mode_status")) {
    if (!cJSON_IsString(ms)) continue;
    pg__html_raw(h, sep);
    pg__html_text(h, ms->string);
    pg__html_raw(h, " ");
    pg__html_text(h, ms->valuestring);
    sep = ", ";
  }
  if (cJSON_IsObject(f)) {
    pg__html_raw(h, " &#xb7; ");
    category(h, f, "other");
    pg__html_raw(h, " at ");
    boundary(h, get(f, "failing_module_boundary"));
    if (cJSON_IsNumber(get(f, "earliest_failing_boundary"))) {
      pg__html_raw(h, " (earliest ");
      boundary(h, get(f, "earliest_failing_boundary"));
      pg__html_raw(h, ")");
    }
  }
  pg__html_raw(h, "</span></summary>\n");
}

/* A case a fleet merge found with two verdicts (docs/fleet.md "Merging"): each
 * attempt's status, where it ran and on which host. */
static void conflicts_block(struct pg__html *h, const cJSON *list) {
  if (cJSON_GetArraySize(list) == 0) return;
  pg__html_raw(h, "<p><b>conflict</b>: shards disagree on this case:</p><ul class=\"hints\">");
  const cJSON *x;
  cJSON_ArrayForEach(x, list) {
    pg__html_raw(h, "<li>");
    badge(h, pg__html_str(x, "status"));
    pg__html_raw(h, " ");
    pg__html_text(h, pg__html_str(x, "from") ? pg__html_str(x, "from") : "?");
    pg__html_raw(h, "</li>");
  }
  pg__html_raw(h, "</ul>\n");
}

static void case_block(struct pg__html *h, const cJSON *c) {
  const char *cls = pg__html_status_class(pg__html_str(c, "status"));
  int failing = strcmp(cls, "fail") == 0 || strcmp(cls, "error") == 0;
  pg__html_fmt(h, "<details class=\"case\"%s>", failing ? " open" : "");
  case_summary(h, c);
  const cJSON *f = get(c, "failure");
  if (cJSON_IsObject(f)) failure_block(h, f);
  conflicts_block(h, get(c, "conflicts"));
  hints_list(h, get(c, "hints"));
  modes_table(h, c);
  outputs(h, c);
  const char *repro = pg__html_str(c, "repro");
  if (repro && *repro) {
    pg__html_raw(h, "<div class=\"meta\">repro</div><pre class=\"repro\">");
    pg__html_text(h, repro);
    pg__html_raw(h, "</pre>\n");
  }
  pg__html_raw(h, "</details>\n");
}

static void phase_meta(struct pg__html *h, const cJSON *r, const char *path) {
  pg__html_raw(h, "<p class=\"meta\">report <code>");
  pg__html_text(h, path);
  pg__html_raw(h, "</code>");
  const char *keys[][2] = {{"impl_file", "impl"}, {"tool_version", "phasegate"}, {"updated_at", "updated"}};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const char *v = pg__html_str(r, keys[i][0]);
    if (!v || !*v) continue;
    pg__html_fmt(h, " &#xb7; %s <code>", keys[i][1]);
    pg__html_text(h, v);
    pg__html_raw(h, "</code>");
  }
  const cJSON *ms;
  const char *sep = " &#xb7; modes: ";
  cJSON_ArrayForEach(ms, get(r, "per_mode_status")) {
    if (!cJSON_IsString(ms)) continue;
    pg__html_raw(h, sep);
    pg__html_text(h, ms->string);
    pg__html_raw(h, " ");
    badge(h, ms->valuestring);
    sep = " ";
  }
  pg__html_raw(h, "</p>\n");
}

void pg__html_report_section(struct pg__html *h, const cJSON *r, const char *path, int index) {
  int ni = cJSON_IsTrue(get(r, "not_implemented"));
  const char *status = pg__html_str(r, "status");
  const cJSON *checks = get(r, "checks"), *c;
  int total = 0, passed = 0, failing = 0;
  cJSON_ArrayForEach(c, checks) {
    const char *cls = pg__html_status_class(pg__html_str(c, "status"));
    total++;
    passed += strcmp(cls, "pass") == 0;
    failing += strcmp(cls, "fail") == 0 || strcmp(cls, "error") == 0;
  }
  int k = pg__html_int(r, "up_to_module", 0), n = pg__html_int(r, "total_modules", 0);
  pg__html_fmt(h, "<details class=\"phase\" id=\"r%d\"%s><summary>", index, failing ? " open" : "");
  if (ni) pg__html_raw(h, "<span class=\"badge ni\">not implemented yet</span>");
  else badge(h, status ? status : failing ? "FAIL" : "PASS");
  pg__html_raw(h, " ");
  pg__html_text(h, pg_report_name(r));
  const char *op_name = pg__html_str(r, "op_name");
  if (op_name && strcmp(pg_report_name(r), op_name) != 0) {
    pg__html_raw(h, " (op ");
    pg__html_text(h, op_name);
    pg__html_raw(h, ")");
  }
  pg__html_fmt(h, " &#xb7; M%d", k);
  if (n > 0) pg__html_fmt(h, " of %d", n);
  pg__html_fmt(h, " &#xb7; %d/%d cases passed</summary>\n", passed, total);
  phase_meta(h, r, path);
  if (ni)
    pg__html_raw(h, "<p class=\"ni\">This phase is declared not implemented yet: its cases are "
                    "listed and skipped, not failed.</p>\n");
  cJSON_ArrayForEach(c, checks) case_block(h, c);
  pg__html_raw(h, "</details>\n");
}
