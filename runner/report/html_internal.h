/* phasegate runner — the HTML page's private parts, within the report room only:
 * a growable text buffer that escapes every string taken from a report (html_out.c), the
 * page (html.c: skeleton, style, the op x phase x level matrix), the per-phase
 * sections (html_case.c: cases, modes, outputs, hints, repro) and the figures
 * (html_svg.c: error-map heatmap, |golden| histogram), all inline.
 *
 * Everything a report says is text from a user (case ids, messages, captured
 * output): it goes through pg__html_text, never into markup raw.
 */
#ifndef PHASEGATE_REPORT_HTML_INTERNAL_H
#define PHASEGATE_REPORT_HTML_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct pg__html {
  char *buf;
  size_t len, cap;
  int oom; /* sticky: an append failed, the page is incomplete */
};

/* Markup of our own, appended as is. */
void pg__html_raw(struct pg__html *h, const char *s);
void pg__html_fmt(struct pg__html *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text from a report, escaped for element content and attribute values. */
void pg__html_text(struct pg__html *h, const char *s);
void pg__html_text_n(struct pg__html *h, const char *s, size_t n); /* the first n bytes */
/* The last `max_lines` lines of s, escaped (captured output). */
void pg__html_tail(struct pg__html *h, const char *s, int max_lines);
/* A number for people: %.4g, "–" for null/absent, "NaN/Inf" never occurs in JSON. */
void pg__html_num(struct pg__html *h, const cJSON *v);

/* Member `key` of o as a string (NULL when absent or not one), number, integer. */
const char *pg__html_str(const cJSON *o, const char *key);
double pg__html_dbl(const cJSON *o, const char *key, double dflt);
int pg__html_int(const cJSON *o, const char *key, int dflt);

/* CSS class of a status: "pass", "fail", "error", "skip", "ni" (not implemented). */
const char *pg__html_status_class(const char *status);

/* The section of report `index` (html_case.c). */
void pg__html_report_section(struct pg__html *h, const cJSON *report, const char *path, int index);

/* Figures of one failing output (html_svg.c): the heatmap of its error_map and the bar
 * chart of its error_histogram, each when present. */
void pg__html_error_map(struct pg__html *h, const cJSON *tensor);
void pg__html_histogram(struct pg__html *h, const cJSON *tensor);

#endif
