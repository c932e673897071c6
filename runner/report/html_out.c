/* phasegate runner — the text buffer every part of the HTML page writes through
 * (html.c, html_case.c, html_svg.c): growth, escaping, numbers, and the report values
 * the page reads. Below the page's files, so none of them is both an entry and a helper.
 */
#include "report/html_internal.h"
#include "report/report_keys.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the buffer ---- */

static int grow(struct pg__html *h, size_t more) {
  if (h->oom) return 0;
  if (h->len + more + 1 <= h->cap) return 1;
  size_t cap = h->cap ? h->cap : 1 << 16;
  while (cap < h->len + more + 1) cap *= 2;
  char *nb = realloc(h->buf, cap);
  if (!nb) {
    h->oom = 1;
    return 0;
  }
  h->buf = nb;
  h->cap = cap;
  return 1;
}

static void append(struct pg__html *h, const char *s, size_t n) {
  if (!grow(h, n)) return;
  memcpy(h->buf + h->len, s, n);
  h->len += n;
  h->buf[h->len] = '\0';
}

void pg__html_raw(struct pg__html *h, const char *s) { append(h, s, strlen(s)); }

void pg__html_fmt(struct pg__html *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !grow(h, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(h->buf + h->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  h->len += (size_t)n;
}

void pg__html_text_n(struct pg__html *h, const char *s, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep = NULL;
    unsigned char ch = (unsigned char)s[i];
    switch (ch) {
      case '&': rep = "&amp;"; break;
      case '<': rep = "&lt;"; break;
      case '>': rep = "&gt;"; break;
      case '"': rep = "&quot;"; break;
      case '\'': rep = "&#39;"; break;
      default:
        /* control characters other than tab/newline: a visible replacement */
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') rep = "\xEF\xBF\xBD";
        else if (ch == 0x7f) rep = "\xEF\xBF\xBD";
    }
    if (!rep) continue;
    append(h, s + run, i - run);
    pg__html_raw(h, rep);
    run = i + 1;
  }
  append(h, s + run, n - run);
}

void pg__html_text(struct pg__html *h, const char *s) {
  if (s) pg__html_text_n(h, s, strlen(s));
}

void pg__html_tail(struct pg__html *h, const char *s, int max_lines) {
  if (!s) return;
  size_t n = strlen(s);
  while (n && s[n - 1] == '\n') n--;
  size_t start = n;
  int lines = 0;
  while (start > 0 && lines < max_lines) {
    start--;
    if (s[start] == '\n' && ++lines == max_lines) {
      start++;
      break;
    }
  }
  if (start > 0) pg__html_fmt(h, "[… %zu bytes before]\n", start);
  pg__html_text_n(h, s + start, n - start);
}

void pg__html_num(struct pg__html *h, const cJSON *v) {
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
    pg__html_raw(h, "–");
    return;
  }
  double x = v->valuedouble;
  if (x == floor(x) && fabs(x) < 1e9) pg__html_fmt(h, "%.0f", x);
  else pg__html_fmt(h, "%.4g", x);
}

const char *pg__html_str(const cJSON *o, const char *key) { return pg__report_str(o, key); }

double pg__html_dbl(const cJSON *o, const char *key, double dflt) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

int pg__html_int(const cJSON *o, const char *key, int dflt) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) && fabs(x->valuedouble) < 2e9 ? (int)x->valuedouble : dflt;
}

const char *pg__html_status_class(const char *s) {
  if (!s) return "skip";
  if (strcmp(s, "PASS") == 0) return "pass";
  if (strcmp(s, "FAIL") == 0) return "fail";
  if (strcmp(s, "ERROR") == 0) return "error";
  return "skip";
}
