/* phasegate runner — the JUnit renderer: `ctest --output-junit` writes
 * `<failure message=""/>` for a failed test; this fills the message of every failed
 * phasegate case test (`<op>/M<k>/L<n>/<case>`) from the case's check in its phase's
 * evaluation_report.json: category, boundary, the strongest hints, the repro line.
 *
 * ctest's file is read narrowly: only the message attribute of the <failure> element
 * of a <testcase> whose name is a phasegate case is touched, and only when it is
 * empty (or missing); every other byte is copied unchanged, so a file of another
 * producer or a newer ctest stays what it was. The result replaces the file
 * atomically (temp + rename). Reads reports, never tensors (the barrier holds).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "report/report_keys.h"
#include "base/base.h"

/* A growing string; `oom` sticks. */
struct sbuf {
  char *s;
  size_t len, cap;
  int oom;
};

static void sb_add(struct sbuf *b, const char *p, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = cap;
  }
  memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_fmt(struct sbuf *b, const char *fmt, ...) {
  char tmp[1200];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* s as the value of a double-quoted XML attribute: markup characters as entities,
 * newline and tab as character references, other control characters (not allowed in
 * XML 1.0) as spaces. */
static void sb_xml_attr(struct sbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
      case '&': sb_str(b, "&amp;"); break;
      case '<': sb_str(b, "&lt;"); break;
      case '>': sb_str(b, "&gt;"); break;
      case '"': sb_str(b, "&quot;"); break;
      case '\'': sb_str(b, "&apos;"); break;
      case '\n': sb_str(b, "&#10;"); break;
      case '\t': sb_str(b, "&#9;"); break;
      default: sb_add(b, c < 0x20 || c == 0x7f ? " " : (const char *)s, 1);
    }
  }
}

/* ---- one message ---- */

struct top_hint {
  const char *kind, *tensor;
  double confidence;
};

/* The strongest hints of the case's failing outputs, one per kind, best first. */
static int top_hints(const cJSON *check, struct top_hint *top, int max) {
  int n = 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(check, PG__RK_CHECK_PER_TENSOR)) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, PG__RK_TENSOR_NAME);
    const cJSON *h;
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(t, PG__RK_TENSOR_HINTS)) {
      const cJSON *kind = cJSON_GetObjectItemCaseSensitive(h, PG__RK_HINT_KIND);
      const cJSON *conf = cJSON_GetObjectItemCaseSensitive(h, PG__RK_HINT_CONFIDENCE);
      if (!cJSON_IsString(kind)) continue;
      double c = cJSON_IsNumber(conf) ? conf->valuedouble : 0;
      int at = -1;
      for (int i = 0; i < n; i++)
        if (strcmp(top[i].kind, kind->valuestring) == 0) at = i;
      if (at >= 0 && !(c > top[at].confidence)) continue;
      if (at < 0 && n < max) at = n++;
      else if (at < 0 && c > top[n - 1].confidence) at = n - 1;
      else if (at < 0) continue;
      top[at] = (struct top_hint){kind->valuestring, cJSON_IsString(name) ? name->valuestring : "",
                                  c};
      for (int i = at; i > 0 && top[i].confidence > top[i - 1].confidence; i--) {
        struct top_hint s = top[i];
        top[i] = top[i - 1];
        top[i - 1] = s;
      }
    }
  }
  return n;
}

/* "category: precision; subcategory: aicore; boundary: M2 (earliest failing: M1); summary: …; hints:
 * transposed (confidence 0.95, out); repro: phasegate run …" */
static void check_message(struct sbuf *m, const struct pg_report_file *rf, const cJSON *check,
                          const char *case_id) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(check, PG__RK_CHECK_FAILURE);
  if (!cJSON_IsObject(f)) {
    const char *st = pg__report_str(check, PG__RK_CHECK_STATUS);
    sb_fmt(m, "phasegate: %.400s records case %.200s as %.20s (no failure to describe; the "
           "report may be from another run)", rf->path, case_id, st ? st : "without a status");
    return;
  }
  const char *cat = pg__report_str(f, PG__RK_FAILURE_FAILURE_CATEGORY);
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(f, PG__RK_FAILURE_FAILING_MODULE_BOUNDARY);
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(f, PG__RK_FAILURE_EARLIEST_FAILING_BOUNDARY);
  sb_fmt(m, "category: %.40s", cat ? cat : "other");
  const char *sub = pg__report_str(f, PG__RK_FAILURE_FAILURE_SUBCATEGORY);
  if (sub && *sub) sb_fmt(m, "; subcategory: %.40s", sub);
  if (cJSON_IsNumber(k)) sb_fmt(m, "; boundary: M%d", k->valueint);
  if (cJSON_IsNumber(j)) sb_fmt(m, " (earliest failing: M%d)", j->valueint);
  else if (cJSON_IsNumber(k)) sb_str(m, " (earliest failing: unknown)");
  const char *fp = pg__report_str(f, PG__RK_FAILURE_DIVERGENCE_FINGERPRINT);
  if (fp && *fp) sb_fmt(m, "; fingerprint: %.40s", fp);
  const char *sum = pg__report_str(f, PG__RK_FAILURE_SUMMARY);
  if (sum && *sum) sb_fmt(m, "; summary: %.600s", sum);
  struct top_hint top[3];
  int nh = top_hints(check, top, 3);
  for (int i = 0; i < nh; i++)
    sb_fmt(m, "%s%.40s (confidence %.2f%s%.100s)", i ? ", " : "; hints: ", top[i].kind,
           top[i].confidence, top[i].tensor[0] ? ", " : "", top[i].tensor);
  const char *repro = pg__report_str(check, PG__RK_CHECK_REPRO);
  if (repro && *repro) {
    sb_str(m, "; repro: ");
    sb_str(m, repro);
  }
}

static const cJSON *find_check(const struct pg_report_file *rf, const char *id) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(rf->json, PG__RK_TOP_CHECKS)) {
    const char *cid = pg__report_str(c, PG__RK_CHECK_ID);
    if (cid && strcmp(cid, id) == 0) return c;
  }
  return NULL;
}

/* The message of test <op>/M<k>/L<n>/<id>. The report is the one of op and phase k
 * holding the case; when no report is named op (the CMake name of an op may differ
 * from its contract's op_name), the one report of phase k holding the case. */
/* The report's registration (else op_name) and up_to_module (-1 when absent). */
static const char *op_of(const struct pg_report_file *rf) { return pg_report_name(rf->json); }
static int k_of(const struct pg_report_file *rf) {
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(rf->json, PG__RK_TOP_UP_TO_MODULE);
  return cJSON_IsNumber(k) ? k->valueint : -1;
}

static void case_message(struct sbuf *m, const struct pg_report_set *set, const char *op, int k,
                         const char *id) {
  const struct pg_report_file *named = NULL, *other = NULL;
  int n_other = 0;
  for (int i = 0; i < set->n; i++) {
    const struct pg_report_file *rf = &set->files[i];
    if (k_of(rf) != k) continue;
    const char *rop = op_of(rf);
    if (rop && strcmp(rop, op) == 0) {
      if (!named || (!find_check(named, id) && find_check(rf, id))) named = rf;
    } else if (find_check(rf, id)) {
      if (!other) other = rf;
      n_other++;
    }
  }
  const struct pg_report_file *rf = named ? named : n_other == 1 ? other : NULL;
  if (!rf && n_other > 1) {
    sb_fmt(m, "phasegate: no report of op %.200s phase M%d among the given paths, and %d "
           "reports of other ops hold a case %.200s", op, k, n_other, id);
    return;
  }
  if (!rf) {
    sb_fmt(m, "phasegate: no evaluation_report.json of op %.200s phase M%d among the given "
           "report paths (case %.200s)", op, k, id);
    return;
  }
  const cJSON *check = find_check(rf, id);
  if (!check) {
    sb_fmt(m, "phasegate: %.400s has no check for case %.200s", rf->path, id);
    return;
  }
  check_message(m, rf, check, id);
}

/* ---- ctest's JUnit ---- */

/* XML-unescapes [s, e) into out (the five entities and numeric ASCII references);
 * 0 when it holds anything else (an unknown entity, a non-ASCII reference). */
static int xml_unescape(const char *s, const char *e, char *out, size_t size) {
  static const char *const ent[][2] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
  size_t n = 0;
  while (s < e) {
    char c = *s;
    size_t used = 1;
    if (c == '&') {
      int known = 0;
      for (size_t i = 0; i < 5 && !known; i++) {
        size_t l = strlen(ent[i][0]);
        if ((size_t)(e - s) >= l && strncmp(s, ent[i][0], l) == 0)
          known = 1, c = ent[i][1][0], used = l;
      }
      if (!known && e - s > 3 && s[1] == '#') {
        char *end;
        int hex = s[2] == 'x';
        long v = strtol(s + 2 + hex, &end, hex ? 16 : 10);
        if (end < e && *end == ';' && v > 0 && v < 0x80) known = 1, c = (char)v, used = (size_t)(end + 1 - s);
      }
      if (!known) return 0;
    }
    if (n + 1 >= size) return 0;
    out[n++] = c;
    s += used;
  }
  out[n] = '\0';
  return 1;
}

/* The value [*vs, *ve) of attribute `name` in the tag [tag, end); 0 when absent. */
static int find_attr(const char *tag, const char *end, const char *name, const char **vs,
                     const char **ve) {
  size_t l = strlen(name);
  for (const char *p = tag + 1; p + l + 2 < end; p++) {
    if ((p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == '\r') &&
        strncmp(p, name, l) == 0 && p[l] == '=' && p[l + 1] == '"') {
      const char *q = memchr(p + l + 2, '"', (size_t)(end - (p + l + 2)));
      if (!q) return 0;
      *vs = p + l + 2;
      *ve = q;
      return 1;
    }
  }
  return 0;
}

/* The start of the element <name (followed by white space, '/' or '>') in [p, end). */
static const char *find_elem(const char *p, const char *end, const char *name) {
  size_t l = strlen(name);
  for (; p + l + 1 < end && (p = memchr(p, '<', (size_t)(end - p))); p++) {
    if (p + l + 1 >= end) return NULL;
    char c = p[l + 1];
    if (strncmp(p + 1, name, l) == 0 &&
        (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' || c == '>'))
      return p;
  }
  return NULL;
}

/* A phasegate case test name: op "/M" k "/L" n "/" id. */
static int parse_case_name(char *name, const char **op, int *k, const char **id) {
  char *s1 = strchr(name, '/');
  if (!s1 || s1 == name || s1[1] != 'M') return 0;
  char *end;
  long kk = strtol(s1 + 2, &end, 10);
  if (end == s1 + 2 || *end != '/' || end[1] != 'L' || kk < 1 || kk > 1000000) return 0;
  char *s3 = end + 2;
  long lv = strtol(s3, &end, 10);
  if (end == s3 || *end != '/' || !end[1] || lv < 0) return 0;
  *s1 = '\0';
  *op = name;
  *k = (int)kk;
  *id = end + 1;
  return 1;
}

/* The `run` of case id in the report of registration op, phase k (NULL: none). */
static const cJSON *case_run(const struct pg_report_set *set, const char *op, int k,
                             const char *id) {
  for (int i = 0; i < set->n; i++) {
    const struct pg_report_file *rf = &set->files[i];
    const char *rop = op_of(rf);
    const cJSON *c = k_of(rf) == k && rop && strcmp(rop, op) == 0 ? find_check(rf, id) : NULL;
    const cJSON *run = c ? cJSON_GetObjectItemCaseSensitive(c, PG__RK_CHECK_RUN) : NULL;
    if (cJSON_IsObject(run)) return run;
  }
  return NULL;
}

/* <properties> of a case test: where it ran (host, device "kind:index", run id, the
 * device's name when the impl said it), so a
 * JUnit consumer sees which machine and device misbehaved. */
static void properties(struct sbuf *out, const cJSON *run) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(run, PG__RK_RUN_DEVICE);
  const cJSON *idx = cJSON_GetObjectItemCaseSensitive(dev, PG__RK_DEVICE_INDEX);
  const char *kind = pg__report_str(dev, PG__RK_DEVICE_KIND);
  char device[128];
  snprintf(device, sizeof device, "%.80s:%d", kind ? kind : "host",
           cJSON_IsNumber(idx) ? idx->valueint : 0);
  const char *names[] = {"host", "device", "run_id", "device_name"};
  const char *values[] = {pg__report_str(run, PG__RK_RUN_HOST), device,
                          pg__report_str(run, PG__RK_RUN_ID), pg__report_str(dev, PG__RK_DEVICE_NAME)};
  int n = values[3] ? 4 : 3; /* a name only where the impl said one */
  sb_str(out, "<properties>");
  for (int i = 0; i < n; i++) {
    sb_str(out, "<property name=\"");
    sb_str(out, names[i]);
    sb_str(out, "\" value=\"");
    sb_xml_attr(out, values[i] ? values[i] : "");
    sb_str(out, "\"/>");
  }
  sb_str(out, "</properties>");
}

char *pg_report_junit_text(const char *xml, const struct pg_report_set *set, int *n_rewritten) {
  struct sbuf out = {0};
  int rewritten = 0;
  const char *end = xml + strlen(xml), *copied = xml, *p = xml;
  const char *tc;
  while ((tc = find_elem(p, end, "testcase"))) {
    const char *tag_end = memchr(tc, '>', (size_t)(end - tc));
    if (!tag_end) break;
    p = tag_end + 1;
    if (tag_end[-1] == '/') continue; /* <testcase …/>: nothing inside */
    const char *close = strstr(p, "</testcase>");
    if (!close) break;
    const char *vs, *ve, *fail = find_elem(p, close, "failure");
    char name[1024];
    const char *op, *id;
    int k;
    int is_case = find_attr(tc, tag_end, "name", &vs, &ve) &&
                  xml_unescape(vs, ve, name, sizeof name) && parse_case_name(name, &op, &k, &id);
    const cJSON *run = is_case && !find_elem(p, close, "properties") ? case_run(set, op, k, id) : NULL;
    if (fail && is_case) {
      const char *fend = memchr(fail, '>', (size_t)(close - fail));
      int has = fend && find_attr(fail, fend, "message", &vs, &ve);
      if (fend && (!has || vs == ve)) { /* a message of ctest's own is kept */
        struct sbuf m = {0};
        case_message(&m, set, op, k, id);
        const char *at = has ? vs : fail + strlen("<failure");
        sb_add(&out, copied, (size_t)(at - copied));
        if (!has) sb_str(&out, " message=\"");
        sb_xml_attr(&out, m.s ? m.s : "");
        if (!has) sb_str(&out, "\"");
        out.oom |= m.oom;
        free(m.s);
        copied = at;
        rewritten++;
      }
    }
    /* last in the element: readers that take the element right after <testcase> (the
     * failure, the skip) as its result still find it there */
    if (run) {
      sb_add(&out, copied, (size_t)(close - copied));
      properties(&out, run);
      copied = close;
    }
    p = close + strlen("</testcase>");
  }
  sb_add(&out, copied, (size_t)(end - copied));
  if (out.oom || !out.s) {
    free(out.s);
    return NULL;
  }
  if (n_rewritten) *n_rewritten = rewritten;
  return out.s;
}

/* The whole file (NULL: err set). */
static char *slurp(const char *path, struct pg_error *err) {
  char *text;
  size_t len;
  return pg_read_file(path, SIZE_MAX, &text, &len, err) == PG_OK ? text : NULL;
}

int pg_report_junit_rewrite(const char *junit_path, const struct pg_report_set *set,
                            int *n_rewritten, struct pg_error *err) {
  char *xml = slurp(junit_path, err);
  if (!xml) return err->code ? err->code : PG_EIO;
  int rc = PG_OK;
  char *text = pg_report_junit_text(xml, set, n_rewritten);
  free(xml);
  if (!text) return pg_error_set(err, PG_ENOMEM, "out of memory rewriting %s", junit_path);
  /* same directory, so rename() replaces the file atomically */
  char *tmp = pg_path_fmt("%s.tmp.%ld", junit_path, (long)getpid());
  FILE *f = tmp ? fopen(tmp, "wb") : NULL;
  int ok = f && fputs(text, f) >= 0;
  if (f) ok &= fclose(f) == 0;
  if (!tmp) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  else if (!ok || rename(tmp, junit_path) != 0) {
    rc = pg_error_set(err, PG_EIO, "%s: cannot write: %s", junit_path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  free(text);
  return rc;
}

/* ---- reading a JUnit file back (the fleet's merge and times) ---- */

int pg_report_junit_each(const char *xml, pg_report_junit_fn fn, void *user) {
  const char *end = xml + strlen(xml), *p = xml, *tc;
  int n = 0;
  while ((tc = find_elem(p, end, "testcase"))) {
    const char *tag_end = memchr(tc, '>', (size_t)(end - tc));
    if (!tag_end) break;
    int empty = tag_end[-1] == '/';
    const char *close = empty ? NULL : strstr(tag_end, "</testcase>");
    if (!empty && !close) break;
    const char *elem_end = empty ? tag_end + 1 : close + strlen("</testcase>");
    p = elem_end;
    const char *vs, *ve;
    char name[1024], status[32] = "", time_s[64] = "";
    if (!find_attr(tc, tag_end, "name", &vs, &ve) || !xml_unescape(vs, ve, name, sizeof name))
      continue;
    if (find_attr(tc, tag_end, "status", &vs, &ve)) xml_unescape(vs, ve, status, sizeof status);
    if (find_attr(tc, tag_end, "time", &vs, &ve)) xml_unescape(vs, ve, time_s, sizeof time_s);
    struct pg_report_junit_case c = {name, PG_REPORT_JUNIT_NOT_RUN, strtod(time_s, NULL), tc,
                                     elem_end};
    /* ctest's encoding, as the verify targets' summary reads it (docs/cmake.md): status
     * run / fail, a skip is a <skipped> whose message ctest starts with SKIP_ */
    const char *sk = empty ? NULL : find_elem(tag_end, close, "skipped");
    const char *sk_end = sk ? memchr(sk, '>', (size_t)(close - sk)) : NULL;
    if (strcmp(status, "run") == 0) c.result = PG_REPORT_JUNIT_PASSED;
    else if (strcmp(status, "fail") == 0) c.result = PG_REPORT_JUNIT_FAILED;
    else if (sk_end && find_attr(sk, sk_end, "message", &vs, &ve) && ve - vs >= 5 &&
             strncmp(vs, "SKIP_", 5) == 0)
      c.result = PG_REPORT_JUNIT_SKIPPED;
    n++;
    if (fn(&c, user) != 0) break;
  }
  return n;
}

char *pg_report_xml_attr(const char *s) {
  struct sbuf b = {0};
  sb_add(&b, "", 0);
  sb_xml_attr(&b, s ? s : "");
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
