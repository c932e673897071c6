/* phasegate runner — the figures of a failing output, as inline SVG: the heatmap of
 * its error_map (error over tolerance per cell of the tensor folded to 2-D, a log
 * colour scale with a legend, the folded axes and extents named, the tile grid of a
 * hint that names an axis and a tile) and the bar chart of its error_histogram (by
 * |golden| decade). Both draw only what the report holds: metrics, never values.
 * Schema: docs/report.md.
 */
#include "report/html_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NF_VALUE 1e29   /* the map's stand-in for NaN/Inf mismatches is 1e30 */
#define MAX_TITLED 1024 /* cells with a tooltip; above, runs of one colour merge */
#define MAX_LINES 256   /* tile lines drawn at most */

static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* The colour steps: 0..7 within tolerance (white to blue, log10 from 1e-4 to 1),
 * 8..15 over it (yellow to dark red, 1 to 1e4 and beyond), 16 non-finite, 17 none. */
enum { STEPS_OK = 8, STEPS_BAD = 8, STEP_NF = 16, STEP_NONE = 17 };
static const char *const step_colour[] = {
    "#ffffff", "#eef5fb", "#dcebf6", "#c6dbef", "#aecfe6", "#95c0de", "#7bafd4", "#5e9bc9",
    "#fee08b", "#fdc36a", "#fca050", "#f7773d", "#e7502e", "#cb2a23", "#a3101f", "#730a1a",
    "#1b1b1b", "#d9dce1"};

static int step_of(const cJSON *v) {
  if (!cJSON_IsNumber(v) || isnan(v->valuedouble)) return STEP_NONE;
  double x = v->valuedouble;
  if (x >= NF_VALUE) return STEP_NF;
  if (x <= 1) {
    if (x <= 1e-4) return 0;
    int s = (int)floor((log10(x) + 4) / 4 * STEPS_OK);
    return s < 0 ? 0 : s >= STEPS_OK ? STEPS_OK - 1 : s;
  }
  int s = (int)floor(log10(x) / 4 * STEPS_BAD);
  return STEPS_OK + (s < 0 ? 0 : s >= STEPS_BAD ? STEPS_BAD - 1 : s);
}

/* A cell's step; a null error that mismatches is a non-finite one (a writer that
 * kept inf rather than the schema's 1e30). */
static int cell_step(const cJSON *v, const cJSON *mism) {
  int s = step_of(v);
  return s == STEP_NONE && cJSON_IsNumber(mism) && mism->valuedouble > 0 ? STEP_NF : s;
}

/* 1e-6, 0.001, 1000 as people read decades: "1e-6", "1e-3", "1000". */
static void decade(char *buf, size_t n, double v) {
  if (v > 0) {
    double e = round(log10(v));
    if (fabs(v - pow(10, e)) <= 1e-9 * v) {
      if (e >= 0 && e <= 3) snprintf(buf, n, "%.0f", pow(10, e));
      else snprintf(buf, n, "1e%d", (int)e);
      return;
    }
  }
  snprintf(buf, n, "%.3g", v);
}

struct geom {
  int R, C;
  double cw, ch;   /* cell width, height in px */
  double x0, y0;   /* top left of the cells */
  double rpc, cpc; /* tensor rows / cols per cell */
  double rows, cols;
  const cJSON *row_axes;
  int col_axis;
  int64_t ext[16]; /* the tensor's shape, when the report gives it */
  int ndim;
};

/* One row of cells: runs of one colour merge, except cells that mismatch (each keeps
 * its tooltip while there are few enough). */
static void map_row(struct pg__html *h, const struct geom *g, int r, const cJSON *row,
                    const cJSON *mrow, int titled) {
  for (int c = 0; c < g->C;) {
    const cJSON *v = cJSON_GetArrayItem(row, c);
    const cJSON *mm = mrow ? cJSON_GetArrayItem(mrow, c) : NULL;
    int s = cell_step(v, mm);
    int bad = s >= STEPS_OK && s != STEP_NONE;
    int run = 1;
    if (!(bad && titled))
      while (c + run < g->C &&
             cell_step(cJSON_GetArrayItem(row, c + run), mrow ? cJSON_GetArrayItem(mrow, c + run) : NULL) == s)
        run++;
    pg__html_fmt(h, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">",
                 g->x0 + c * g->cw, g->y0 + r * g->ch, run * g->cw, g->ch, step_colour[s]);
    if (bad && titled) {
      pg__html_fmt(h, "<title>rows %.0f-%.0f, cols %.0f-%.0f: error/tolerance ", r * g->rpc,
                   fmin((r + 1) * g->rpc, g->rows) - 1, c * g->cpc, fmin((c + 1) * g->cpc, g->cols) - 1);
      if (s == STEP_NF) pg__html_raw(h, "NaN/Inf");
      else pg__html_num(h, v);
      if (cJSON_IsNumber(mm)) {
        pg__html_raw(h, ", ");
        pg__html_num(h, mm);
        pg__html_raw(h, " mismatching");
      }
      pg__html_raw(h, "</title>");
    }
    pg__html_raw(h, "</rect>");
    c += run;
  }
  pg__html_raw(h, "\n");
}

static void extent_text(char *buf, size_t n, const struct geom *g, int axis) {
  if (axis >= 0 && axis < g->ndim) snprintf(buf, n, "axis %d (%lld)", axis, (long long)g->ext[axis]);
  else snprintf(buf, n, "axis %d", axis);
}

/* "rows: axes 0 (2) × 1 (4) × 2 (128) = 1024, 16 per cell" */
static void axis_labels(struct pg__html *h, const struct geom *g) {
  double W = g->C * g->cw, H = g->R * g->ch;
  char buf[64];
  pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", g->x0 + W / 2, g->y0 + H + 30);
  if (g->col_axis < 0) pg__html_raw(h, "a scalar (0-D)");
  else {
    extent_text(buf, sizeof buf, g, g->col_axis);
    pg__html_fmt(h, "cols: %s, %.0f per cell", buf, g->cpc);
  }
  pg__html_raw(h, "</text>\n");
  pg__html_fmt(h, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">",
               g->x0 - 30, g->y0 + H / 2);
  if (cJSON_GetArraySize(g->row_axes) == 0) pg__html_raw(h, g->col_axis < 0 ? "" : "1 row");
  else {
    pg__html_raw(h, "rows: ");
    const cJSON *a;
    const char *sep = "";
    cJSON_ArrayForEach(a, g->row_axes) {
      extent_text(buf, sizeof buf, g, (int)a->valuedouble);
      pg__html_fmt(h, "%s%s", sep, buf);
      sep = " &#xd7; ";
    }
    pg__html_fmt(h, " = %.0f, %.0f per cell", g->rows, g->rpc);
  }
  pg__html_raw(h, "</text>\n");
  /* ticks: element index at cell edges, spaced to stay readable */
  int every = (int)ceil(48 / g->cw);
  for (int c = 0; g->col_axis >= 0 && c <= g->C; c += every > 0 ? every : 1) {
    double x = g->x0 + c * g->cw;
    pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>", x,
                 g->y0 + H + 13, fmin(c * g->cpc, g->cols));
  }
  every = (int)ceil(20 / g->ch);
  for (int r = 0; cJSON_GetArraySize(g->row_axes) && r <= g->R; r += every > 0 ? every : 1)
    pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>", g->x0 - 4,
                 g->y0 + r * g->ch + 4, fmin(r * g->rpc, g->rows));
  pg__html_raw(h, "\n");
}

/* A dashed dark line on a light halo: visible on every colour of the scale. */
static void tile_line(struct pg__html *h, double x1, double y1, double x2, double y2) {
  for (int i = 0; i < 2; i++)
    pg__html_fmt(h, "<line class=\"%s\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>",
                 i ? "tile" : "tile-halo", x1, y1, x2, y2);
}

/* Tile boundaries along `axis` every `tile` elements, as dashed lines; 0 when drawn,
 * else why not (a note for the caption). */
static const char *tile_lines(struct pg__html *h, const struct geom *g, int axis, int tile) {
  if (axis >= g->ndim) return "the tensor's shape is not in the report";
  double E = (double)g->ext[axis];
  if (!(E >= 1)) return "the axis is empty";
  if (axis == g->col_axis) {
    if (E / tile > MAX_LINES || tile / g->cpc * g->cw < 3) return "too fine to draw at this size";
    for (double j = tile; j < E; j += tile)
      tile_line(h, g->x0 + j / g->cpc * g->cw, g->y0, g->x0 + j / g->cpc * g->cw, g->y0 + g->R * g->ch);
    return NULL;
  }
  double stride = 1;
  int found = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, g->row_axes) {
    int ax = (int)a->valuedouble;
    if (found && ax >= 0 && ax < g->ndim) stride *= (double)g->ext[ax];
    found |= ax == axis;
  }
  if (!found) return "the axis is not folded into this map";
  double outer = floor(g->rows / (E * stride));
  if (!(stride >= 1) || !(outer >= 1) || outer * ceil(E / tile) > MAX_LINES ||
      tile * stride / g->rpc * g->ch < 3)
    return "too fine to draw at this size, or the map's extents disagree with the shape";
  for (double o = 0; o < outer; o++)
    for (double j = tile; j < E; j += tile) {
      double y = g->y0 + (o * E + j) * stride / g->rpc * g->ch;
      tile_line(h, g->x0, y, g->x0 + g->C * g->cw, y);
    }
  return NULL;
}

static void legend(struct pg__html *h, double x, double y) {
  static const char *const marks[] = {"1e-4", "1e-2", "1 = tolerance", "100", "&#x2265;1e4"};
  const double bw = 16;
  for (int s = 0; s < STEPS_OK + STEPS_BAD; s++)
    pg__html_fmt(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"10\" fill=\"%s\" stroke=\"#c0c4cc\" stroke-width=\"0.5\"/>",
                 x + s * bw, y, bw, step_colour[s]);
  for (int i = 0; i < 5; i++)
    pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", x + i * 4 * bw, y + 22,
                 marks[i]);
  double nx = x + (STEPS_OK + STEPS_BAD) * bw + 40;
  pg__html_fmt(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"10\" fill=\"%s\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\">NaN/Inf</text>",
               nx, y, bw, step_colour[STEP_NF], nx + bw + 4, y + 9);
  pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\">max |diff| / (atol + rtol&#xb7;|golden|) per cell</text>\n", x,
               y + 36);
}

static int geometry(const cJSON *t, const cJSON *map, struct geom *g) {
  const cJSON *sh = get(map, "shape");
  memset(g, 0, sizeof *g);
  g->R = (int)cJSON_GetArrayItem(sh, 0)->valuedouble;
  g->C = (int)cJSON_GetArrayItem(sh, 1)->valuedouble;
  g->row_axes = get(map, "row_axes");
  g->col_axis = pg__html_int(map, "col_axis", -1);
  g->rpc = pg__html_dbl(map, "rows_per_cell", 1);
  g->cpc = pg__html_dbl(map, "cols_per_cell", 1);
  g->rows = pg__html_dbl(map, "rows_total", g->R * g->rpc);
  g->cols = pg__html_dbl(map, "cols_total", g->C * g->cpc);
  if (g->rpc <= 0) g->rpc = 1;
  if (g->cpc <= 0) g->cpc = 1;
  const cJSON *e;
  cJSON_ArrayForEach(e, get(t, "shape")) if (g->ndim < 16) g->ext[g->ndim++] = (int64_t)e->valuedouble;
  g->cw = fmax(3, fmin(28, floor(512.0 / g->C)));
  g->ch = g->R == 1 ? 28 : fmax(3, fmin(28, floor(384.0 / g->R)));
  g->x0 = 64;
  g->y0 = 8;
  return g->R > 0 && g->C > 0;
}

void pg__html_error_map(struct pg__html *h, const cJSON *t) {
  const cJSON *map = get(t, "error_map");
  struct geom g;
  if (!cJSON_IsObject(map) || !geometry(t, map, &g)) return;
  const cJSON *cells = get(map, "cells"), *mism = get(map, "mismatch_cells"), *row;
  int nbad = 0, r = 0;
  cJSON_ArrayForEach(row, cells) {
    const cJSON *v;
    cJSON_ArrayForEach(v, row) nbad += step_of(v) >= STEPS_OK && step_of(v) != STEP_NONE;
  }
  double W = g.x0 + fmax(g.C * g.cw, 16 * 16 + 120) + 16, H = g.y0 + g.R * g.ch + 92;
  pg__html_fmt(h,
               "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>error map of ",
               W, H, W, H);
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_raw(h, "</title>\n");
  cJSON_ArrayForEach(row, cells) {
    map_row(h, &g, r, row, cJSON_GetArrayItem(mism, r), nbad <= MAX_TITLED);
    r++;
  }
  pg__html_fmt(h, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#8a919e\"/>\n",
               g.x0, g.y0, g.C * g.cw, g.R * g.ch);
  /* the tile grid of the first hint that names an axis and a tile */
  const cJSON *hint, *grid = NULL;
  const char *why = NULL;
  cJSON_ArrayForEach(hint, get(t, "hints")) {
    int axis = pg__html_int(hint, "axis", -1), tile = pg__html_int(hint, "tile", -1);
    if (grid || axis < 0 || tile <= 0) continue;
    grid = hint;
    why = tile_lines(h, &g, axis, tile);
  }
  axis_labels(h, &g);
  legend(h, g.x0, g.y0 + g.R * g.ch + 44);
  pg__html_raw(h, "</svg><figcaption>Error map of <b>");
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_fmt(h, "</b>: %d &#xd7; %d cells", g.R, g.C);
  if (grid) {
    pg__html_fmt(h, "; dashed: tiles of %d along axis %d (hint <i>", pg__html_int(grid, "tile", 0),
                 pg__html_int(grid, "axis", 0));
    pg__html_text(h, pg__html_str(grid, "kind"));
    pg__html_raw(h, "</i>)");
    if (why) pg__html_fmt(h, ", not drawn: %s", why);
  }
  pg__html_raw(h, ".</figcaption></figure>\n");
}

static void bucket_label(char *buf, size_t n, const cJSON *b) {
  char lo[32], hi[32];
  const cJSON *h = get(b, "golden_abs_hi");
  decade(lo, sizeof lo, pg__html_dbl(b, "golden_abs_lo", 0));
  if (!cJSON_IsNumber(h)) snprintf(buf, n, "&#x2265;%s", lo);
  else if (pg__html_dbl(b, "golden_abs_lo", 0) <= 0) {
    decade(hi, sizeof hi, h->valuedouble);
    snprintf(buf, n, "&lt;%s", hi);
  } else snprintf(buf, n, "%s", lo);
}

static void hist_bar(struct pg__html *h, const cJSON *b, double x, double bw, double y0, double PH,
                     double lmax) {
  double n = fmax(0, pg__html_dbl(b, "n", 0)), m = fmin(n, fmax(0, pg__html_dbl(b, "mismatches", 0)));
  double hn = lmax > 0 ? log10(n + 1) / lmax * PH : 0, hm = lmax > 0 ? log10(m + 1) / lmax * PH : 0;
  char label[48], lo[32], hi[32];
  bucket_label(label, sizeof label, b);
  decade(lo, sizeof lo, pg__html_dbl(b, "golden_abs_lo", 0));
  const cJSON *hv = get(b, "golden_abs_hi");
  if (cJSON_IsNumber(hv)) decade(hi, sizeof hi, hv->valuedouble);
  else snprintf(hi, sizeof hi, "inf");
  pg__html_fmt(h, "<g><title>|golden| in [%s, %s): %.0f elements, %.0f mismatching, max |diff| ", lo, hi, n, m);
  pg__html_num(h, get(b, "max_abs_diff"));
  pg__html_raw(h, ", max error/tolerance ");
  pg__html_num(h, get(b, "max_err_over_tol"));
  pg__html_fmt(h,
               "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#b9c0cc\"/>"
               "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#d7301f\"/>",
               x + 5, y0 + PH - hn, bw - 10, hn, x + 9, y0 + PH - hm, bw - 18, hm);
  if (m > 0)
    pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#a3101f\">%.0f</text>", x + bw / 2,
                 y0 + PH - hn - 4, m);
  pg__html_fmt(h, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text></g>\n", x + bw / 2, y0 + PH + 14,
               label);
}

void pg__html_histogram(struct pg__html *h, const cJSON *t) {
  const cJSON *hist = get(t, "error_histogram");
  const cJSON *buckets = get(hist, "buckets"), *b;
  int nb = cJSON_GetArraySize(buckets);
  if (!cJSON_IsObject(hist) || nb == 0) return;
  double nmax = 0;
  cJSON_ArrayForEach(b, buckets) nmax = fmax(nmax, pg__html_dbl(b, "n", 0)); /* finite: load.c */
  const double bw = 46, PH = 150, x0 = 56, y0 = 20;
  double lmax = log10(nmax + 1), W = x0 + fmax(nb * bw, 220) + 12, H = y0 + PH + 62;
  pg__html_fmt(h,
               "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>error histogram of ",
               W, H, W, H);
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_raw(h, "</title>\n");
  for (double p = 1; p <= nmax + 1 && lmax > 0; p *= 10) {
    double y = y0 + PH - log10(p + 1) / lmax * PH;
    char lab[32];
    decade(lab, sizeof lab, p);
    pg__html_fmt(h,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6eb\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                 x0, y, x0 + nb * bw, y, x0 - 4, y + 4, lab);
  }
  int i = 0;
  cJSON_ArrayForEach(b, buckets) hist_bar(h, b, x0 + bw * i++, bw, y0, PH, lmax);
  pg__html_fmt(h,
               "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#8a919e\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">|golden| bucket (decades)</text>"
               "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">elements (log)</text>\n",
               x0, y0 + PH, x0 + nb * bw, y0 + PH, x0 + nb * bw / 2, y0 + PH + 32, y0 + PH / 2);
  pg__html_fmt(h,
               "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"#b9c0cc\"/><text x=\"%.1f\" "
               "y=\"%.1f\">elements</text><rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" "
               "fill=\"#d7301f\"/><text x=\"%.1f\" y=\"%.1f\">mismatching</text>\n",
               x0, y0 + PH + 42, x0 + 14, y0 + PH + 51, x0 + 90, y0 + PH + 42, x0 + 104, y0 + PH + 51);
  pg__html_raw(h, "</svg><figcaption>Elements and mismatches of <b>");
  pg__html_text(h, pg__html_str(t, "name"));
  pg__html_raw(h, "</b> by |golden| magnitude (hover a bar for max |diff| and error/tolerance).</figcaption></figure>\n");
}
