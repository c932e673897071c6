/* phasegate runner — the HTML page of `phasegate report` (see report.h): the page
 * skeleton with its inline style, and the op x phase x level matrix (the buffer it
 * writes through is html_out.c). The per-phase sections are in
 * html_case.c, the figures in html_svg.c. No script, no external resource: the page
 * is one file that opens anywhere, offline.
 */
#include "report/html_internal.h"
#include "report/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the page ---- */

static const char style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "margin:0;color:#1d2330;background:#f6f7f9}"
    "header{background:#1d2330;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
    "header p{margin:4px 0 0;color:#c9d1e0}main{padding:16px 24px;max-width:1400px}"
    "h2{font-size:17px;margin:22px 0 8px}h3{font-size:15px;margin:14px 0 6px}"
    "table{border-collapse:collapse;background:#fff;margin:6px 0}"
    "th,td{border:1px solid #d5d9e0;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef0f4;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "table.matrix td{text-align:center;min-width:90px}table.matrix td a{color:inherit;text-decoration:none}"
    ".pass{background:#d8f0dc;color:#14521f}.fail{background:#f9d3d0;color:#8a1610}"
    ".error{background:#f3c4e2;color:#6d0f4f}.skip{background:#eceef1;color:#59606d}"
    ".ni{background:#f4efe1;color:#6b5a22;font-style:italic}.none{color:#aab0bb}"
    ".badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600}"
    "details.phase{background:#fff;border:1px solid #d5d9e0;border-radius:6px;margin:10px 0;padding:0 12px}"
    "details.phase>summary{cursor:pointer;padding:8px 0;font-size:15px;font-weight:600}"
    "details.case{border-top:1px solid #e3e6eb;padding:4px 0}details.case>summary{cursor:pointer}"
    ".meta{color:#59606d;font-size:12.5px}code,pre{font:12.5px/1.4 ui-monospace,'DejaVu Sans Mono',monospace}"
    "pre{background:#f1f3f6;border:1px solid #dde1e7;padding:6px 8px;overflow:auto;max-height:320px;"
    "white-space:pre-wrap;word-break:break-all}"
    ".repro{background:#eef5ff;border-color:#c9dcf5}"
    ".hints li{margin:2px 0}.conf{color:#59606d;font-size:12px}"
    ".figs{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start;margin:6px 0 10px}"
    "figure{margin:0;display:table}"
    "figcaption{display:table-caption;caption-side:bottom;font-size:12.5px;color:#3b4252}"
    "line.tile{stroke:#10131a;stroke-width:1.4;stroke-dasharray:5 3}"
    "line.tile-halo{stroke:#fff;stroke-width:3.4;stroke-opacity:.85}"
    "svg text{font:11px system-ui,'DejaVu Sans',sans-serif;fill:#1d2330}"
    ".legend span{margin-right:12px}"
    ".skipped{background:#fff4e5;border-bottom:1px solid #f0c48a;padding:8px 24px;color:#6b3d00}"
    ".skipped ul{margin:4px 0}";

/* Where report `i` sits in the matrix: op rows, one per op name (a second report for
 * an (op, phase) already taken opens another row for that op). */
struct mrow {
  const char *op;
  int *at; /* report index per phase 1..P, -1 when none */
  unsigned levels; /* bit L set when some case has level L (0..31) */
};

struct counts {
  int pass, fail, error, skip;
};

static struct counts count(const cJSON *report, int level) {
  struct counts c = {0};
  const cJSON *chk;
  cJSON_ArrayForEach(chk, cJSON_GetObjectItemCaseSensitive(report, "checks")) {
    if (level >= 0 && pg__html_int(chk, "level", -1) != level) continue;
    const char *cls = pg__html_status_class(pg__html_str(chk, "status"));
    if (strcmp(cls, "pass") == 0) c.pass++;
    else if (strcmp(cls, "fail") == 0) c.fail++;
    else if (strcmp(cls, "error") == 0) c.error++;
    else c.skip++;
  }
  return c;
}

static void cell(struct pg__html *h, const struct pg_report_set *set, int ri, int level) {
  if (ri < 0) {
    pg__html_raw(h, "<td class=\"none\" title=\"no report\">·</td>");
    return;
  }
  const cJSON *r = set->files[ri].json;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "not_implemented"))) {
    pg__html_fmt(h, "<td class=\"ni\"><a href=\"#r%d\">%s</a></td>", ri,
                 level < 0 ? "not implemented yet" : "·");
    return;
  }
  struct counts c = count(r, level);
  if (c.pass + c.fail + c.error + c.skip == 0) {
    pg__html_raw(h, "<td class=\"none\">·</td>");
    return;
  }
  const char *cls = c.error ? "error" : c.fail ? "fail" : c.pass ? "pass" : "skip";
  pg__html_fmt(h,
               "<td class=\"%s\" title=\"%d passed, %d failed, %d errors, %d skipped\">"
               "<a href=\"#r%d\">",
               cls, c.pass, c.fail, c.error, c.skip, ri);
  const char *sep = "";
  if (c.pass) pg__html_fmt(h, "%s%d&#x2713;", sep, c.pass), sep = " ";
  if (c.fail + c.error) pg__html_fmt(h, "%s%d&#x2717;", sep, c.fail + c.error), sep = " ";
  if (c.skip) pg__html_fmt(h, "%s%d&#x21B7;", sep, c.skip);
  pg__html_raw(h, "</a></td>");
}

/* Where a row's reports are, for ops with several rows: the first report's directory
 * without its M<k> level. */
static void row_origin(struct pg__html *h, const struct pg_report_set *set, const struct mrow *row, int P) {
  int ri = -1;
  for (int k = 1; k <= P && ri < 0; k++) ri = row->at[k];
  if (ri < 0) return;
  const char *p = set->files[ri].path, *end = strrchr(p, '/');
  if (!end) return;
  const char *prev = end;
  while (prev > p && prev[-1] != '/') prev--;
  if (prev[0] == 'M' && prev + 1 < end && strspn(prev + 1, "0123456789") == (size_t)(end - prev - 1))
    end = prev > p ? prev - 1 : prev;
  pg__html_raw(h, "<br><span class=\"meta\">");
  pg__html_text_n(h, p, (size_t)(end - p));
  pg__html_raw(h, "</span>");
}

static void matrix_rows(struct pg__html *h, const struct pg_report_set *set,
                        const struct mrow *rows, int nrows, int P) {
  for (int i = 0; i < nrows; i++) {
    int nl = 0;
    for (int l = 0; l < 32; l++) nl += (rows[i].levels >> l) & 1;
    pg__html_fmt(h, "<tr><th rowspan=\"%d\">", 1 + nl);
    pg__html_text(h, rows[i].op);
    int twin = 0;
    for (int j = 0; j < nrows; j++) twin |= j != i && strcmp(rows[j].op, rows[i].op) == 0;
    if (twin) row_origin(h, set, &rows[i], P);
    pg__html_raw(h, "</th><th>all</th>");
    for (int k = 1; k <= P; k++) cell(h, set, rows[i].at[k], -1);
    pg__html_raw(h, "</tr>\n");
    for (int l = 0; l < 32; l++) {
      if (!((rows[i].levels >> l) & 1)) continue;
      pg__html_fmt(h, "<tr><th>L%d</th>", l);
      for (int k = 1; k <= P; k++) cell(h, set, rows[i].at[k], l);
      pg__html_raw(h, "</tr>\n");
    }
  }
}

static void matrix(struct pg__html *h, const struct pg_report_set *set) {
  int P = 1;
  for (int i = 0; i < set->n; i++) {
    const cJSON *r = set->files[i].json;
    int k = pg__html_int(r, "up_to_module", 1), t = pg__html_int(r, "total_modules", k);
    if (k > P) P = k;
    if (t > P) P = t; /* both <= 1000: load.c */
  }
  struct mrow *rows = calloc((size_t)set->n, sizeof *rows);
  int *at = malloc((size_t)set->n * (size_t)(P + 1) * sizeof *at);
  if (!rows || !at) {
    h->oom = 1;
    free(rows);
    free(at);
    return;
  }
  for (int i = 0; i < set->n * (P + 1); i++) at[i] = -1;
  int nrows = 0;
  for (int i = 0; i < set->n; i++) {
    const cJSON *r = set->files[i].json;
    const char *op = pg_report_name(r); /* two registrations of one op: two rows */
    int k = pg__html_int(r, "up_to_module", 1), row = -1;
    for (int j = 0; j < nrows && row < 0; j++)
      if (strcmp(rows[j].op, op) == 0 && rows[j].at[k] < 0) row = j;
    if (row < 0) {
      row = nrows++;
      rows[row].op = op;
      rows[row].at = at + (size_t)row * (size_t)(P + 1);
    }
    rows[row].at[k] = i;
    const cJSON *chk;
    cJSON_ArrayForEach(chk, cJSON_GetObjectItemCaseSensitive(r, "checks")) {
      int l = pg__html_int(chk, "level", -1);
      if (l >= 0 && l < 32) rows[row].levels |= 1u << l;
    }
  }
  pg__html_raw(h, "<h2>Matrix: op &#xd7; phase &#xd7; level</h2>\n<table class=\"matrix\"><thead><tr>"
                  "<th>op</th><th>level</th>");
  for (int k = 1; k <= P; k++) pg__html_fmt(h, "<th>M%d</th>", k);
  pg__html_raw(h, "</tr></thead><tbody>\n");
  matrix_rows(h, set, rows, nrows, P);
  pg__html_raw(h,
               "</tbody></table>\n<p class=\"meta legend\"><span>&#x2713; passed</span>"
               "<span>&#x2717; failed or error</span><span>&#x21B7; skipped</span>"
               "<span>· no case / no report</span><span>a cell links to its phase below</span></p>\n");
  free(rows);
  free(at);
}

static void header(struct pg__html *h, const struct pg_report_set *set) {
  struct counts all = {0};
  int failing = 0, ni = 0;
  const char *newest = NULL;
  for (int i = 0; i < set->n; i++) {
    const cJSON *r = set->files[i].json;
    struct counts c = count(r, -1);
    all.pass += c.pass, all.fail += c.fail, all.error += c.error, all.skip += c.skip;
    failing += c.fail + c.error > 0;
    ni += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "not_implemented"));
    const char *u = pg__html_str(r, "updated_at");
    if (u && (!newest || strcmp(u, newest) > 0)) newest = u;
  }
  pg__html_fmt(h,
               "<header><h1>phasegate report</h1><p>%d phase report%s: %d failing, %d not "
               "implemented yet &#xb7; cases: %d passed, %d failed, %d errors, %d skipped",
               set->n, set->n == 1 ? "" : "s", failing, ni, all.pass, all.fail, all.error, all.skip);
  if (newest) {
    pg__html_raw(h, " &#xb7; newest report ");
    pg__html_text(h, newest);
  }
  pg__html_raw(h, "</p></header>\n");
  if (set->n_skipped == 0) return;
  pg__html_fmt(h, "<div class=\"skipped\"><b>%d report%s skipped</b> (not readable as a phasegate "
                  "report; the matrix lacks them):<ul>",
               set->n_skipped, set->n_skipped == 1 ? "" : "s");
  for (int i = 0; i < set->n_skipped; i++) {
    pg__html_raw(h, "<li><code>");
    pg__html_text(h, set->skipped[i]);
    pg__html_raw(h, "</code></li>");
  }
  pg__html_raw(h, "</ul></div>\n");
}

char *pg_report_html(const struct pg_report_set *set) {
  struct pg__html h = {0};
  pg__html_raw(&h,
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<title>phasegate report</title><style>");
  pg__html_raw(&h, style);
  pg__html_raw(&h, "</style></head><body>\n");
  header(&h, set);
  pg__html_raw(&h, "<main>\n");
  matrix(&h, set);
  pg__html_raw(&h, "<h2>Phases</h2>\n");
  for (int i = 0; i < set->n; i++)
    pg__html_report_section(&h, set->files[i].json, set->files[i].path, i);
  pg__html_raw(&h,
               "<p class=\"meta\">Made by <code>phasegate report</code> from evaluation_report.json "
               "files: metrics and indices only, never a reference or input value "
               "(docs/report.md).</p>\n</main></body></html>\n");
  if (h.oom) {
    free(h.buf);
    return NULL;
  }
  return h.buf;
}
