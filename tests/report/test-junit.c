/* Unit tests for runner/report/junit.c: the failure messages of a hand-written
 * `ctest --output-junit` file filled from reports (category, boundary, hints, repro),
 * XML escaping, tests that are no phasegate case and messages ctest wrote itself left
 * unchanged, a missing report or check named in the message, the atomic file rewrite
 * through pg_report_set_load. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "pg_test.h"
#include "report/report.h"

static const char *const JUNIT =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<testsuite name=\"(empty)\"\n\ttests=\"7\"\n\tfailures=\"6\"\n\t>\n"
    "\t<testcase name=\"toy/M2/L2/bug&amp;x\" classname=\"toy/M2/L2/bug&amp;x\" time=\"0.1\" "
    "status=\"fail\">\n\t\t<failure message=\"\"/>\n\t\t<system-out>[FAIL] toy M2 &lt;x&gt;\n"
    "</system-out>\n\t</testcase>\n"
    "\t<testcase name=\"toy/M2/L1/ok\" classname=\"toy/M2/L1/ok\" time=\"0.1\" status=\"run\">\n"
    "\t\t<system-out>[PASS]\n</system-out>\n\t</testcase>\n"
    "\t<testcase name=\"toy/M1/gate\" classname=\"toy/M1/gate\" time=\"0\" status=\"fail\">\n"
    "\t\t<failure message=\"\"/>\n\t\t<system-out></system-out>\n\t</testcase>\n"
    "\t<testcase name=\"other/test\" classname=\"other/test\" time=\"0\" status=\"fail\">\n"
    "\t\t<failure message=\"\"/>\n\t\t<system-out></system-out>\n\t</testcase>\n"
    "\t<testcase name=\"toy/M3/L1/gone\" classname=\"toy/M3/L1/gone\" time=\"0\" status=\"fail\">\n"
    "\t\t<failure message=\"\"/>\n\t\t<system-out></system-out>\n\t</testcase>\n"
    "\t<testcase name=\"toy/M2/L1/absent\" classname=\"toy/M2/L1/absent\" status=\"fail\">\n"
    "\t\t<failure message=\"\"/>\n\t</testcase>\n"
    "\t<testcase name=\"toy/M2/L2/own\" classname=\"toy/M2/L2/own\" status=\"fail\">\n"
    "\t\t<failure message=\"Required regular expression not found\"/>\n\t</testcase>\n"
    "\t<testcase name=\"attn/M2/L2/bug&amp;x\" classname=\"x\" status=\"fail\">\n"
    "\t\t<failure/>\n\t</testcase>\n"
    "</testsuite>";

static const char *const REPORT =
    "{\"op_name\": \"toy\", \"up_to_module\": 2, \"status\": \"FAIL\", \"checks\": ["
    " {\"id\": \"ok\", \"status\": \"PASS\", \"failure\": null, \"repro\": \"\"},"
    " {\"id\": \"own\", \"status\": \"FAIL\", \"failure\": null},"
    " {\"id\": \"bug&x\", \"status\": \"FAIL\","
    "  \"failure\": {\"failing_module_boundary\": 2, \"earliest_failing_boundary\": 1,"
    "   \"failure_category\": \"precision\", \"divergence_fingerprint\": \"all_fail\","
    "   \"summary\": \"out: 12 of 64 mismatch\\nmax_abs 0.5\"},"
    "  \"per_tensor\": ["
    "   {\"name\": \"out\", \"mode\": \"sim\", \"hints\": ["
    "     {\"kind\": \"scaled\", \"confidence\": 0.6, \"detail\": \"x\"},"
    "     {\"kind\": \"transposed\", \"confidence\": 0.95, \"detail\": \"y\"}]},"
    "   {\"name\": \"aux\", \"mode\": \"sim\", \"hints\": ["
    "     {\"kind\": \"scaled\", \"confidence\": 0.7, \"detail\": \"x\"},"
    "     {\"kind\": \"zeros\", \"confidence\": 0.3, \"detail\": \"x\"},"
    "     {\"kind\": \"sign_flip\", \"confidence\": 0.1, \"detail\": \"x\"}]}],"
    "  \"repro\": \"phasegate run --case 'bug&x' --impl \\\"exec:a<b\\\"\"}]}";

/* `text` with the value of every failure message blanked: what must equal the input. */
static char *blank_messages(const char *text) {
  char *out = pg_strdup(text), *w = out;
  const char *key = "<failure message=\"";
  for (const char *p = text; *p;) {
    if (strncmp(p, key, strlen(key)) == 0) {
      memcpy(w, key, strlen(key));
      w += strlen(key);
      p = strchr(p + strlen(key), '"');
    } else {
      *w++ = *p++;
    }
  }
  *w = '\0';
  return out;
}

/* The message of test `name` in text (malloc'ed), or NULL when its failure has none. */
static char *message_of(const char *text, const char *name) {
  char tag[256];
  snprintf(tag, sizeof tag, "<testcase name=\"%s\"", name);
  const char *t = strstr(text, tag);
  if (!t) return NULL;
  const char *m = strstr(t, "<failure message=\"");
  const char *close = strstr(t, "</testcase>");
  if (!m || m > close) return NULL;
  m += strlen("<failure message=\"");
  const char *e = strchr(m, '"');
  char *s = malloc((size_t)(e - m) + 1);
  memcpy(s, m, (size_t)(e - m));
  s[e - m] = '\0';
  return s;
}

static struct pg_report_set one_report(void) {
  struct pg_report_set set;
  pg_report_set_init(&set);
  set.files = calloc(1, sizeof *set.files);
  set.files[0].path = pg_strdup("/r/toy/M2/evaluation_report.json");
  set.files[0].json = cJSON_Parse(REPORT);
  set.n = set.cap = 1;
  return set;
}

PG_TEST(junit_messages) {
  struct pg_report_set set = one_report();
  PG_CHECK(set.files[0].json != NULL);
  int n = -1;
  char *out = pg_report_junit_text(JUNIT, &set, &n);
  PG_CHECK(out != NULL);
  PG_CHECK_EQ_INT(4, n); /* bug&x, gone, absent, attn's bug&x */
  char *m = message_of(out, "toy/M2/L2/bug&amp;x");
  PG_CHECK(m != NULL);
  PG_CHECK_MSG(strstr(m, "category: precision; boundary: M2 (earliest failing: M1)") != NULL, "%s", m);
  PG_CHECK_MSG(strstr(m, "fingerprint: all_fail") != NULL, "%s", m);
  PG_CHECK_MSG(strstr(m, "summary: out: 12 of 64 mismatch&#10;max_abs 0.5") != NULL, "%s", m);
  /* strongest first, one per kind (scaled's best is aux's 0.70), three at most */
  PG_CHECK_MSG(strstr(m, "hints: transposed (confidence 0.95, out), scaled (confidence 0.70, "
                         "aux), zeros (confidence 0.30, aux); ") != NULL, "%s", m);
  PG_CHECK_MSG(strstr(m, "sign_flip") == NULL, "%s", m);
  PG_CHECK_MSG(strstr(m, "repro: phasegate run --case &apos;bug&amp;x&apos; --impl "
                         "&quot;exec:a&lt;b&quot;") != NULL, "%s", m);
  PG_CHECK(strchr(m, '<') == NULL && strchr(m, '"') == NULL && strchr(m, '\n') == NULL);
  free(m);
  m = message_of(out, "toy/M3/L1/gone");
  PG_CHECK_MSG(m && strstr(m, "no evaluation_report.json of op toy phase M3") && strstr(m, "gone"),
               "%s", m ? m : "(none)");
  free(m);
  m = message_of(out, "toy/M2/L1/absent");
  PG_CHECK_MSG(m && strstr(m, "/r/toy/M2/evaluation_report.json has no check for case absent"),
               "%s", m ? m : "(none)");
  free(m);
  /* ctest's own message, the gate and a test of another project: unchanged */
  m = message_of(out, "toy/M2/L2/own");
  PG_CHECK_EQ_STR("Required regular expression not found", m);
  free(m);
  m = message_of(out, "toy/M1/gate");
  PG_CHECK_EQ_STR("", m);
  free(m);
  m = message_of(out, "other/test");
  PG_CHECK_EQ_STR("", m);
  free(m);
  /* a CMake op name unlike the contract's op_name: the one report of M2 with the case;
   * a <failure/> without a message attribute gets one */
  PG_CHECK(strstr(out, "<testcase name=\"attn/M2/L2/bug&amp;x\" classname=\"x\" status=\"fail\">"
                       "\n\t\t<failure message=\"category: precision;") != NULL);
  /* everything but the messages is byte for byte the input */
  char *a = blank_messages(out), *b = blank_messages(JUNIT);
  char *fixed = pg_strdup(a); /* the attribute added to <failure/> */
  char *at = strstr(fixed, "<failure message=\"\"/>\n\t</testcase>\n</testsuite>");
  PG_CHECK(at != NULL);
  if (at) memmove(at + 8, at + 8 + strlen(" message=\"\""), strlen(at + 8 + strlen(" message=\"\"")) + 1);
  PG_CHECK_EQ_STR(b, fixed);
  free(fixed);
  free(a);
  free(b);
  /* idempotent: a second pass finds no empty message of a case left */
  char *again = pg_report_junit_text(out, &set, &n);
  PG_CHECK_EQ_INT(0, n);
  PG_CHECK_EQ_STR(out, again);
  free(again);
  free(out);
  pg_report_set_reset(&set);
}

PG_TEST(junit_not_xml_unchanged) {
  struct pg_report_set set = one_report();
  const char *odd[] = {"", "no xml at all", "<testcase name=\"toy/M2/L2/bug&amp;x\"",
                       "<testcase name=\"toy/M2/L2/bug&amp;x\"><failure message=\"\"/>",
                       "<testcase name=\"toy/M2/L2/b&bogus;\"><failure message=\"\"/></testcase>",
                       "<testcase name=\"toy/M2/L2/bug&amp;x\"/><failure message=\"\"/>",
                       "<testcases name=\"toy/M2/L2/bug&amp;x\"><failure message=\"\"/></testcases>"};
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
    int n = -1;
    char *out = pg_report_junit_text(odd[i], &set, &n);
    PG_CHECK_EQ_STR(odd[i], out);
    PG_CHECK_EQ_INT(0, n);
    free(out);
  }
  pg_report_set_reset(&set);
}

PG_TEST(junit_file_rewrite) {
  char dir[] = "/tmp/pg_junit_XXXXXX";
  PG_CHECK(mkdtemp(dir) != NULL);
  char *rdir = pg_path_fmt("%s/reports/toy/M2", dir);
  PG_CHECK_EQ_INT(0, pg_mkdir_p(rdir));
  char *rpath = pg_path_fmt("%s/evaluation_report.json", rdir);
  char *jpath = pg_path_fmt("%s/verify_all.xml", dir);
  FILE *f = fopen(rpath, "w");
  fputs(REPORT, f);
  fclose(f);
  f = fopen(jpath, "w");
  fputs(JUNIT, f);
  fclose(f);
  char *top = pg_path_fmt("%s/reports", dir);
  const char *paths[] = {top};
  struct pg_report_set set;
  pg_report_set_init(&set);
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_OK(pg_report_set_load(paths, 1, &set, &err));
  PG_CHECK_EQ_INT(1, set.n);
  int n = -1;
  PG_CHECK_OK(pg_report_junit_rewrite(jpath, &set, &n, &err));
  PG_CHECK_EQ_INT(4, n);
  char buf[16384];
  f = fopen(jpath, "r");
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[got] = '\0';
  char *m = message_of(buf, "toy/M2/L2/bug&amp;x");
  PG_CHECK_MSG(m && strstr(m, "category: precision") && strstr(m, "repro: "), "%s", buf);
  free(m);
  char *tmp = pg_path_fmt("%s.tmp.%ld", jpath, (long)getpid());
  PG_CHECK(access(tmp, F_OK) != 0); /* no temporary left behind */
  /* a JUnit file that is not there: an error naming it, nothing created */
  char *none = pg_path_fmt("%s/none.xml", dir);
  PG_CHECK(pg_report_junit_rewrite(none, &set, &n, &err) == PG_ENOENT);
  PG_CHECK(strstr(err.message, "none.xml") != NULL);
  pg_report_set_reset(&set);
  /* a report that is no report: the load says which file */
  f = fopen(rpath, "w");
  fputs("{\"op_name\": 3}", f);
  fclose(f);
  pg_report_set_init(&set);
  PG_CHECK(pg_report_set_load(paths, 1, &set, &err) != PG_OK);
  PG_CHECK_MSG(strstr(err.message, "evaluation_report.json") != NULL, "%s", err.message);
  pg_report_set_reset(&set);
  pg_remove_tree(dir);
  free(none);
  free(tmp);
  free(top);
  free(rdir);
  free(rpath);
  free(jpath);
}

/* Where each case ran, as <properties>: host, "kind:index", run id, and the device's
 * name only where the impl said one (a plugin's pg_call_device_name). */
PG_TEST(junit_properties_device_name) {
  static const char *const xml =
      "<testsuite>\n"
      "\t<testcase name=\"toy/M2/L1/named\" classname=\"a\" status=\"run\">\n\t</testcase>\n"
      "\t<testcase name=\"toy/M2/L1/unnamed\" classname=\"b\" status=\"run\">\n\t</testcase>\n"
      "</testsuite>";
  static const char *const report =
      "{\"op_name\": \"toy\", \"up_to_module\": 2, \"status\": \"PASS\", \"checks\": ["
      " {\"id\": \"named\", \"status\": \"PASS\", \"run\": {\"id\": \"r1\", \"host\": \"h&1\","
      "  \"device\": {\"kind\": \"gpus\", \"index\": 3, \"name\": \"NVIDIA <H200>\"}}},"
      " {\"id\": \"unnamed\", \"status\": \"PASS\", \"run\": {\"id\": \"r1\", \"host\": \"h&1\","
      "  \"device\": {\"kind\": \"gpus\", \"index\": 1, \"name\": null}}}]}";
  struct pg_report_set set;
  pg_report_set_init(&set);
  set.files = calloc(1, sizeof *set.files);
  set.files[0].path = pg_strdup("/r/toy/M2/evaluation_report.json");
  set.files[0].json = cJSON_Parse(report);
  set.n = set.cap = 1;
  int n = -1;
  char *out = pg_report_junit_text(xml, &set, &n);
  PG_CHECK(out != NULL);
  const char *named = out ? strstr(out, "toy/M2/L1/named") : NULL;
  const char *unnamed = out ? strstr(out, "toy/M2/L1/unnamed") : NULL;
  PG_CHECK_MSG(named && unnamed, "%s", out ? out : "(null)");
  if (named && unnamed) {
    const char *props = strstr(named, "<property name=\"device\" value=\"gpus:3\"/><property "
                                      "name=\"run_id\" value=\"r1\"/><property name=\"device_name\" "
                                      "value=\"NVIDIA &lt;H200&gt;\"/></properties>");
    PG_CHECK_MSG(props != NULL && props < unnamed, "%s", out);
    PG_CHECK_MSG(strstr(unnamed, "<property name=\"host\" value=\"h&amp;1\"/><property "
                                 "name=\"device\" value=\"gpus:1\"/><property name=\"run_id\" "
                                 "value=\"r1\"/></properties>") != NULL, "%s", out);
  }
  free(out);
  pg_report_set_reset(&set);
}
