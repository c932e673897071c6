/* phasegate tests — unit tests for the JSON position scanner (runner/opdir/json_pos.c) and
 * the suite loader (runner/opdir/suite_json.c): positions, every pg_case field, defaults,
 * caps, duplicate keys, findings order, and loading without a contract. The
 * data-driven bad/good fixtures are separate CTest tests (suite_check.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_contract.h"
#include "pg_test.h"
#include "opdir/opdir.h"
#include "phasegate/compare.h"
#include "../compare/rule_edges.h"

/* ---------------------------------------------------------------- scanner */

PG_TEST(pos_members_and_elements) {
  const char *t =
      "{\"a\": 1,\n"
      "  \"cases\": [\n"
      "    {\"id\": \"x\", \"shape\": {\"S\": 17}},\n"
      "    {\"id\": \"y\"}\n"
      "  ]}";
  struct pg_json_pos p;
  struct pg_json_fail f;
  PG_CHECK_OK(pg_json_pos_scan(t, strlen(t), NULL, &p, &f));
  PG_CHECK_EQ_INT(PG_JSON_OBJECT, p.nodes[0].type);
  PG_CHECK_EQ_INT(1, p.nodes[0].line);
  PG_CHECK_EQ_INT(1, p.nodes[0].col);
  int a = pg_json_pos_find(&p, "a");
  PG_CHECK(a > 0);
  PG_CHECK_EQ_INT(1, p.nodes[a].key_line);
  PG_CHECK_EQ_INT(2, p.nodes[a].key_col);
  PG_CHECK_EQ_INT(7, p.nodes[a].col);
  PG_CHECK_EQ_INT(PG_JSON_NUMBER, p.nodes[a].type);
  int s = pg_json_pos_find(&p, "cases[0].shape.S");
  PG_CHECK(s > 0);
  PG_CHECK_EQ_INT(3, p.nodes[s].line);
  PG_CHECK_EQ_INT(32, p.nodes[s].col);
  PG_CHECK_EQ_INT(3, p.nodes[s].key_line);
  PG_CHECK_EQ_INT(27, p.nodes[s].key_col);
  PG_CHECK_EQ_INT(2, (int)p.nodes[s].len);
  PG_CHECK(memcmp(t + p.nodes[s].off, "17", 2) == 0);
  int c1 = pg_json_pos_find(&p, ".cases[1]");
  PG_CHECK(c1 > 0);
  PG_CHECK_EQ_INT(4, p.nodes[c1].line);
  PG_CHECK_EQ_INT(5, p.nodes[c1].col);
  PG_CHECK_EQ_INT(PG_JSON_OBJECT, p.nodes[c1].type);
  PG_CHECK_EQ_STR("id", pg_json_pos_key(&p, p.nodes[c1].first_child));
  PG_CHECK_EQ_INT(2, p.nodes[pg_json_pos_find(&p, "cases")].n_children);
  PG_CHECK_EQ_INT(-1, pg_json_pos_find(&p, "cases[2]"));
  PG_CHECK_EQ_INT(-1, pg_json_pos_find(&p, "cases.x"));
  PG_CHECK_EQ_INT(-1, pg_json_pos_find(&p, "a[0]"));
  PG_CHECK_EQ_INT(-1, pg_json_pos_find(&p, "cases[x]"));
  PG_CHECK_EQ_INT(0, pg_json_pos_find(&p, ""));
  pg_json_pos_reset(&p);
  pg_json_pos_reset(&p); /* twice is harmless */
}

PG_TEST(pos_escaped_keys_and_utf8) {
  const char *t = "{\"caf\\u00e9\": [true, false, null], \"\\ud83d\\ude00\": \"\xc3\xa9\"}";
  struct pg_json_pos p;
  PG_CHECK_OK(pg_json_pos_scan(t, strlen(t), NULL, &p, NULL));
  int k = pg_json_pos_find(&p, "caf\xc3\xa9");
  PG_CHECK(k > 0);
  PG_CHECK_EQ_INT(PG_JSON_ARRAY, p.nodes[k].type);
  PG_CHECK_EQ_INT(PG_JSON_TRUE, p.nodes[pg_json_pos_element(&p, k, 0)].type);
  PG_CHECK_EQ_INT(PG_JSON_FALSE, p.nodes[pg_json_pos_element(&p, k, 1)].type);
  PG_CHECK_EQ_INT(PG_JSON_NULL, p.nodes[pg_json_pos_element(&p, k, 2)].type);
  PG_CHECK(pg_json_pos_member(&p, 0, "\xf0\x9f\x98\x80") > 0);
  pg_json_pos_reset(&p);
}

struct syntax_case {
  const char *text;
  int line, col;
  const char *message;
};

PG_TEST(pos_syntax_errors_have_positions) {
  static const struct syntax_case cases[] = {
      {"", 1, 1, "empty input: expected a JSON value"},
      {"{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}' after an object member, found '\"'"},
      {"{\"a\": [1, 2,]}", 1, 12, "trailing comma before ']' (not allowed in JSON)"},
      {"{\"a\": 1,\n}", 1, 8, "trailing comma before '}' (not allowed in JSON)"},
      {"{\"a\" 1}", 1, 6, "expected ':' after the key \"a\", found '1'"},
      {"{\n  \"a\": 01}", 2, 8, "invalid number '01'"},
      {"[1.]", 1, 2, "invalid number '1.'"},
      {"[-]", 1, 2, "invalid number '-'"},
      {"[1e+]", 1, 2, "invalid number '1e+'"},
      {"[+1]", 1, 2, "expected a value, found '+'"},
      {"[.5]", 1, 2, "expected a value, found '.'"},
      {"[Infinity]", 1, 2, "unknown literal 'Infinity' (JSON literals are true, false and null)"},
      {"[True]", 1, 2, "unknown literal 'True' (JSON literals are true, false and null)"},
      {"{'a': 1}", 1, 2, "expected a key in double quotes, found ''' (strings need double quotes)"},
      {"[1] x", 1, 5, "unexpected 'x' after the end of the JSON document"},
      {"[\"abc", 1, 2, "unterminated string"},
      {"[\"a\nb\"]", 1, 2,
       "unterminated string (a line break inside a string must be written \\n)"},
      {"[\"a\tb\"]", 1, 4, "control character 0x09 inside a string (escape it as \\u0009)"},
      {"[\"\\x\"]", 1, 3, "invalid escape '\\x' in string"},
      {"[\"\\u12\"]", 1, 3, "invalid \\u escape (needs 4 hex digits)"},
      {"[\"\\ud800\"]", 1, 3, "high surrogate \\uD800 not followed by a low surrogate"},
      {"[\"\\udc00\"]", 1, 3, "lone low surrogate \\uDC00 in string"},
      {"[\"\\u0000\"]", 1, 3, "\\u0000 is not allowed in strings"},
      {"[\"\xff\"]", 1, 3, "invalid UTF-8 byte 0xFF in string"},
      {"[\"\xe0\x80\x80\"]", 1, 3, "invalid UTF-8 byte 0xE0 in string"},
      {"[1,\n  // c\n 2]", 2, 3, "expected a value, found '/' (comments are not allowed in JSON)"},
      {"{\"a\": [1, {\"b\": }]}", 1, 17, "expected a value, found '}'"},
      {"{\"a\": [1, 2", 1, 12, "expected ',' or ']' after an array element, found end of file"},
      {"\x01", 1, 1, "expected a value, found byte 0x01"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct pg_json_pos p;
    struct pg_json_fail f;
    int rc = pg_json_pos_scan(cases[i].text, strlen(cases[i].text), NULL, &p, &f);
    PG_CHECK_MSG(rc == PG_EPARSE, "case %zu: rc %d", i, rc);
    PG_CHECK_MSG(f.line == cases[i].line && f.col == cases[i].col,
                 "case %zu (%s): at %d:%d, expected %d:%d", i, f.message, f.line, f.col,
                 cases[i].line, cases[i].col);
    PG_CHECK_EQ_STR(cases[i].message, f.message);
    PG_CHECK(p.nodes == NULL && p.n == 0); /* reset on failure */
  }
}

PG_TEST(pos_limits) {
  char deep[300];
  for (int i = 0; i < 150; i++) deep[i] = '[', deep[299 - i] = ']';
  struct pg_json_pos p;
  struct pg_json_fail f;
  PG_CHECK_EQ_INT(PG_EPARSE, pg_json_pos_scan(deep, sizeof deep, NULL, &p, &f));
  PG_CHECK_EQ_STR("nesting deeper than 64 levels", f.message);
  PG_CHECK_EQ_INT(65, f.col);
  struct pg_json_limits lim = {200, 0};
  PG_CHECK_OK(pg_json_pos_scan(deep, sizeof deep, &lim, &p, &f));
  PG_CHECK_EQ_INT(150, p.n);
  pg_json_pos_reset(&p);
  lim = (struct pg_json_limits){0, 10};
  const char *many = "[1,2,3,4,5,6,7,8,9,10,11]";
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_json_pos_scan(many, strlen(many), &lim, &p, &f));
  PG_CHECK_EQ_STR("more than 10 JSON values", f.message);
  char longnum[80];
  memset(longnum, '1', sizeof longnum);
  longnum[0] = '[';
  longnum[79] = ']';
  PG_CHECK_EQ_INT(PG_EPARSE, pg_json_pos_scan(longnum, sizeof longnum, NULL, &p, &f));
  PG_CHECK_EQ_STR("number longer than 63 characters", f.message);
}

PG_TEST(pos_duplicates_small_and_large_objects) {
  const char *t = "{\"a\": 1, \"b\": 2, \"a\": 3, \"a\": 4}";
  struct pg_json_pos p;
  PG_CHECK_OK(pg_json_pos_scan(t, strlen(t), NULL, &p, NULL));
  PG_CHECK_EQ_INT(2, p.n_dups);
  int third = pg_json_pos_element(&p, 0, 2), fourth = pg_json_pos_element(&p, 0, 3);
  PG_CHECK_EQ_INT(pg_json_pos_element(&p, 0, 0), p.nodes[third].dup_of);
  PG_CHECK_EQ_INT(pg_json_pos_element(&p, 0, 0), p.nodes[fourth].dup_of);
  pg_json_pos_reset(&p);
  /* > 16 members takes the sorting path */
  char big[1024];
  size_t n = 0;
  big[n++] = '{';
  for (int i = 0; i < 40; i++)
    n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\": %d", i ? "," : "", i % 30, i);
  big[n++] = '}';
  PG_CHECK_OK(pg_json_pos_scan(big, n, NULL, &p, NULL));
  PG_CHECK_EQ_INT(10, p.n_dups);
  int k30 = pg_json_pos_element(&p, 0, 30); /* "k0" again */
  PG_CHECK_EQ_INT(pg_json_pos_element(&p, 0, 0), p.nodes[k30].dup_of);
  PG_CHECK_EQ_INT(-1, p.nodes[pg_json_pos_element(&p, 0, 29)].dup_of);
  pg_json_pos_reset(&p);
}

PG_TEST(pos_linecol) {
  const char *t = "ab\ncd\n\nx";
  int l, c;
  pg_json_linecol(t, strlen(t), 0, &l, &c);
  PG_CHECK(l == 1 && c == 1);
  pg_json_linecol(t, strlen(t), 4, &l, &c);
  PG_CHECK(l == 2 && c == 2);
  pg_json_linecol(t, strlen(t), 7, &l, &c);
  PG_CHECK(l == 4 && c == 1);
  pg_json_linecol(t, strlen(t), 99, &l, &c);
  PG_CHECK(l == 4 && c == 2);
}

/* ---------------------------------------------------------------- loader */

static int load(const char *text, const struct pg_contract *c, struct pg_suite *s,
                struct pg_diags *d, struct pg_error *err) {
  pg_diags_init(d);
  pg_error_clear(err);
  return pg_suite_load_buffer("s.json", text, strlen(text), c, s, d, err);
}

PG_TEST(load_fields) {
  const char *t =
      "{\"op\": \"attention\", \"total_modules\": 3,\n"
      " \"cases\": [\n"
      "  {\"id\": \"L1_canonical\", \"level\": 1, \"shape\": {\"B\": 1, \"S\": 64}},\n"
      "  {\"id\": \"L2_fp32\", \"level\": \"L2\", \"dtype\": {\"q\": \"float32\", \"out\": "
      "\"float32\"},\n"
      "   \"atol\": 1e-4, \"rtol\": 2.5e-4, \"seed\": 18446744073709551615, \"rule\": \"ulp:4\","
      " \"equal_nan\": true, \"my_knob\": {\"x\": [1, 2]}},\n"
      "  {\"id\": \"L5_cancel\", \"level\": 5, \"precision\": false,\n"
      "   \"fill\": {\"q\": \"normal(0, 1e3)\"},\n"
      "   \"cancellation_stress\": {\"target\": \"scores\", \"expression\": \"a - b\",\n"
      "                           \"relative_gap\": 1e-5, \"seed\": 42}}\n"
      " ]}\n";
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  PG_CHECK_OK(load(t, pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(0, d.count);
  PG_CHECK_EQ_STR("s.json", s.path);
  PG_CHECK_EQ_STR("attention", s.op);
  PG_CHECK_EQ_INT(3, s.total_modules);
  PG_CHECK_EQ_INT(3, s.n_cases);

  const struct pg_case *c0 = &s.cases[0];
  PG_CHECK_EQ_STR("L1_canonical", c0->id);
  PG_CHECK_EQ_INT(0, c0->index);
  PG_CHECK_EQ_INT(3, c0->mark.line);
  PG_CHECK_EQ_INT(3, c0->mark.column);
  PG_CHECK_EQ_INT(1, c0->level);
  PG_CHECK_EQ_INT(0, c0->precision); /* L1 default */
  PG_CHECK_EQ_INT(0, c0->has_seed);
  PG_CHECK_EQ_INT(2, c0->shape.count);
  int64_t v = 0;
  PG_CHECK(pg_bindings_get(&c0->shape, "S", &v) && v == 64);
  PG_CHECK(pg_bindings_get(&c0->shape, "B", &v) && v == 1);
  PG_CHECK_EQ_INT(3, c0->shape.items[0].mark.line);
  PG_CHECK_EQ_STR("{\"id\":\"L1_canonical\",\"level\":1,\"shape\":{\"B\":1,\"S\":64}}", c0->json);

  const struct pg_case *c1 = &s.cases[1];
  PG_CHECK_EQ_INT(2, c1->level);
  PG_CHECK_EQ_INT(1, c1->precision); /* L2+ default */
  PG_CHECK_EQ_INT(2, c1->n_dtypes);
  PG_CHECK_EQ_STR("q", c1->dtypes[0].name);
  PG_CHECK_EQ_STR("float32", c1->dtypes[0].value);
  PG_CHECK_EQ_STR("out", c1->dtypes[1].name);
  PG_CHECK(c1->has_atol && c1->has_rtol);
  PG_CHECK_NEAR(1e-4, c1->atol, 0);
  PG_CHECK_NEAR(2.5e-4, c1->rtol, 0);
  PG_CHECK(c1->has_seed && c1->seed == UINT64_MAX);
  PG_CHECK(strstr(c1->json, "\"seed\":18446744073709551615,\"rule\":\"ulp:4\"") != NULL);
  PG_CHECK(strstr(c1->json, "\"atol\":1e-4,\"rtol\":2.5e-4") != NULL);
  PG_CHECK_EQ_STR("ulp:4", c1->rule);
  PG_CHECK_EQ_INT(1, c1->equal_nan);
  PG_CHECK(strstr(c1->json, "\"my_knob\":{\"x\":[1,2]}") != NULL);
  PG_CHECK_EQ_INT(0, c1->cancellation.present);
  PG_CHECK_EQ_INT(PG_DTYPE_F32, pg_case_dtype(c1, &pg_test_attention_contract()->primary_inputs[0]));
  PG_CHECK_EQ_INT(PG_DTYPE_F16, pg_case_dtype(c1, &pg_test_attention_contract()->primary_inputs[1]));

  const struct pg_case *c2 = &s.cases[2];
  PG_CHECK_EQ_INT(5, c2->level);
  PG_CHECK_EQ_INT(0, c2->precision); /* explicit */
  PG_CHECK_EQ_INT(1, c2->n_fills);
  PG_CHECK_EQ_STR("normal(0, 1e3)", c2->fills[0].value);
  PG_CHECK_EQ_INT(7, c2->fills[0].mark.line);
  PG_CHECK_EQ_INT(1, c2->cancellation.present);
  PG_CHECK_EQ_STR("scores", c2->cancellation.target);
  PG_CHECK_EQ_STR("a - b", c2->cancellation.expression);
  PG_CHECK_NEAR(1e-5, c2->cancellation.relative_gap, 0);
  PG_CHECK(c2->cancellation.seed == 42);
  pg_suite_reset(&s);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_without_contract_skips_contract_checks) {
  const char *t = "{\"op\": \"other\", \"total_modules\": 9, \"cases\": [{\"id\": \"a\", "
                  "\"level\": 3, \"shape\": {\"Z\": 5}, \"fill\": {\"nope\": \"zeros\"}, "
                  "\"dtype\": {\"w\": \"int8\"}}]}";
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  PG_CHECK_OK(load(t, NULL, &s, &d, &err));
  PG_CHECK_EQ_INT(0, d.count);
  PG_CHECK_EQ_INT(9, s.total_modules);
  PG_CHECK_EQ_INT(1, s.cases[0].shape.count);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
  /* the same text against the contract: every finding, in file order */
  PG_CHECK_EQ_INT(PG_EVALIDATE, load(t, pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(5, d.n_errors);
  for (int i = 1; i < d.count; i++)
    PG_CHECK(d.items[i - 1].line < d.items[i].line ||
             (d.items[i - 1].line == d.items[i].line &&
              d.items[i - 1].column <= d.items[i].column));
  PG_CHECK_EQ_STR("op", d.items[0].rule);
  PG_CHECK_EQ_STR("total-modules", d.items[1].rule);
  PG_CHECK_EQ_STR("dim", d.items[2].rule);
  PG_CHECK_EQ_STR("input", d.items[3].rule);
  PG_CHECK_EQ_STR("input", d.items[4].rule);
  PG_CHECK(strstr(err.message, "s.json:1:8: error: op \"other\" does not match") == err.message);
  PG_CHECK_EQ_INT(1, err.line);
  PG_CHECK_EQ_INT(8, err.column);
  PG_CHECK_EQ_INT(PG_EVALIDATE, err.code);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_reports_every_finding) {
  const char *t = "{\"cases\": [\n"
                  " {\"id\": \"a b\", \"level\": 9, \"atol\": -1, \"rtol\": \"x\"},\n"
                  " {\"level\": 1, \"level\": 2},\n"
                  " 7\n"
                  "], \"extra\": 1}";
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load(t, NULL, &s, &d, &err));
  /* id, level, atol, rtol, duplicate level, missing id, case not an object */
  PG_CHECK_EQ_INT(7, d.n_errors);
  PG_CHECK_EQ_INT(1, d.n_warnings); /* unknown top-level key */
  PG_CHECK_EQ_INT(2, s.n_cases);
  PG_CHECK_EQ_INT(1, s.cases[1].level); /* first of the duplicates wins */
  char line[2048];
  pg_diag_format(&d.items[d.count - 1], line, sizeof line);
  PG_CHECK_EQ_STR("s.json:5:4: warning: unknown top-level key \"extra\" (ignored) (unknown-key)",
                  line);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_null_diags_and_err) {
  struct pg_suite s;
  const char *t = "{\"cases\": [{\"id\": \"a\"}]}";
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_suite_load_buffer(NULL, t, strlen(t), NULL, &s, NULL, NULL));
  pg_suite_reset(&s);
  PG_CHECK_EQ_INT(PG_EPARSE, pg_suite_load_buffer("x", NULL, 0, NULL, &s, NULL, NULL));
  pg_suite_reset(&s);
}

PG_TEST(load_size_cap) {
  size_t size = ((size_t)64 << 20) + 1;
  char *big = malloc(size);
  PG_CHECK(big != NULL);
  memset(big, ' ', size);
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_suite_load_buffer("big.json", big, size, NULL, &s, &d, &err));
  free(big);
  PG_CHECK_EQ_STR("big.json:1:1: error: file is larger than 64 MiB (67108865 bytes) (limit)",
                  err.message);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_value_cap) {
  /* 1<<20 values fit in ~2 MiB of text: the loader refuses more */
  size_t n = (size_t)(1 << 20) + 8, size = 2 * n + 16;
  char *t = malloc(size);
  PG_CHECK(t != NULL);
  size_t k = 0;
  t[k++] = '[';
  for (size_t i = 0; i < n; i++) {
    t[k++] = '0';
    t[k++] = ',';
  }
  t[k - 1] = ']';
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_ELIMIT, pg_suite_load_buffer("many.json", t, k, NULL, &s, &d, &err));
  free(t);
  PG_CHECK(strstr(err.message, "more than 1048576 JSON values (limit)") != NULL);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_file_errors) {
  struct pg_suite s;
  struct pg_error err;
  pg_error_clear(&err);
  PG_CHECK_EQ_INT(PG_ENOENT, pg_suite_load("/nonexistent/suite.json", NULL, &s, NULL, &err));
  PG_CHECK(strstr(err.message, "/nonexistent/suite.json: cannot open") == err.message);
  pg_suite_reset(&s);
  PG_CHECK_EQ_INT(PG_EIO, pg_suite_load(pg_test_tmpdir(), NULL, &s, NULL, &err));
  PG_CHECK(strstr(err.message, "not a regular file") != NULL);
  pg_suite_reset(&s);
  PG_CHECK_OK(pg_suite_load(pg_test_data("good/suite/knobs.json"), pg_test_attention_contract(),
                            &s, NULL, &err));
  PG_CHECK_EQ_INT(2, s.n_cases);
  PG_CHECK_EQ_STR("L4.long-seq_1", s.cases[0].id);
  PG_CHECK_EQ_INT(6, s.cases[0].mark.line);
  PG_CHECK_EQ_INT(5, s.cases[0].mark.column);
  PG_CHECK(strstr(s.cases[0].json, "\"block_size\":128") != NULL);
  pg_suite_reset(&s);
}

PG_TEST(load_many_findings_are_capped) {
  /* 3000 bad cases -> 1000 findings and a note, not 3000 lines */
  size_t size = 3000 * 32 + 32;
  char *t = malloc(size);
  PG_CHECK(t != NULL);
  size_t k = (size_t)snprintf(t, size, "{\"cases\": [");
  for (int i = 0; i < 3000; i++)
    k += (size_t)snprintf(t + k, size - k, "%s{\"id\": \"c%d\", \"level\": 9}", i ? "," : "", i);
  k += (size_t)snprintf(t + k, size - k, "]}");
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_suite_load_buffer("m.json", t, k, NULL, &s, &d, &err));
  free(t);
  PG_CHECK_EQ_INT(1001, d.count);
  PG_CHECK_EQ_INT(1000, d.n_errors);
  PG_CHECK_EQ_INT(PG_SEV_NOTE, d.items[1000].severity); /* the note comes last */
  PG_CHECK_EQ_STR("too many findings; the rest are not shown", d.items[1000].message);
  PG_CHECK_EQ_STR("m.json:1:34: error: cases[0].level: expected 0..5 or \"L0\"..\"L5\", got 9 "
                  "(level)",
                  err.message);
  PG_CHECK_EQ_INT(3000, s.n_cases);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_bom_before_a_short_document) {
  /* found by fuzz_suite: cJSON skips a BOM only when more than one byte follows it */
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_EVALIDATE, load("\xEF\xBB\xBF" "1", NULL, &s, &d, &err));
  PG_CHECK_EQ_STR("s.json:1:4: error: expected a JSON object with a \"cases\" array, found a "
                  "number (type)",
                  err.message);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(load_messages_escape_control_characters) {
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  PG_CHECK_EQ_INT(PG_EVALIDATE,
                  load("{\"cases\": [{\"id\": \"a\\u001b[31mb\", \"level\": 1}]}", NULL, &s,
                       &d, &err));
  PG_CHECK_EQ_STR("s.json:1:19: error: cases[0].id: \"a\\x1B[31mb\" is not a valid case id (use "
                  "only letters, digits, '_', '.', '-') (id)",
                  err.message);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

/* ---------------------------------------------------------------- real files */

static const char *dtype_of(const struct pg_case *cs, const char *name) {
  for (int i = 0; i < cs->n_dtypes; i++)
    if (strcmp(cs->dtypes[i].name, name) == 0) return cs->dtypes[i].value;
  return NULL;
}

/* docs/design.md §4: level 1 / "L1" / "l1" / 0, dtype maps with "default" or one string,
 * _comment keys anywhere, test_cases. */
PG_TEST(real_suite_forms_load) {
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_OK(pg_suite_load(pg_test_data("good/suite/real_forms.json"),
                            pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(0, d.count); /* no warning about the _ keys either */
  PG_CHECK_EQ_INT(6, s.n_cases);
  PG_CHECK_EQ_INT(0, s.cases[0].level);
  PG_CHECK_EQ_INT(1, s.cases[0].precision); /* L0 smoke compares values */
  PG_CHECK_EQ_INT(1, s.cases[0].shape.count);
  PG_CHECK_EQ_INT(1, s.cases[1].level);
  PG_CHECK_EQ_INT(0, s.cases[1].precision);
  const struct pg_case *c2 = &s.cases[2]; /* {"default": "fp32", "k": "bf16"} */
  PG_CHECK_EQ_INT(2, c2->level);
  PG_CHECK_EQ_INT(3, c2->n_dtypes);
  PG_CHECK_EQ_STR("bf16", dtype_of(c2, "k"));
  PG_CHECK_EQ_STR("fp32", dtype_of(c2, "q"));
  PG_CHECK_EQ_STR("fp32", dtype_of(c2, "v"));
  PG_CHECK_EQ_INT(PG_DTYPE_BF16, pg_case_dtype(c2, &pg_test_attention_contract()->primary_inputs[1]));
  const struct pg_case *c3 = &s.cases[3]; /* "half": every floating input */
  PG_CHECK_EQ_INT(3, c3->n_dtypes);
  PG_CHECK_EQ_INT(PG_DTYPE_F16, pg_case_dtype(c3, &pg_test_attention_contract()->primary_inputs[2]));
  PG_CHECK_EQ_INT(PG_DTYPE_F64, pg_case_dtype(&s.cases[4],
                                              &pg_test_attention_contract()->final_outputs[0]));
  PG_CHECK_EQ_STR("scores", s.cases[5].cancellation.target);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

PG_TEST(every_suite_placeholder_is_reported) {
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_EQ_INT(PG_EVALIDATE, pg_suite_load(pg_test_data("bad/suite/placeholder_values.json"),
                                              pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(4, d.count); /* one finding each: not also "unknown dtype" */
  PG_CHECK_EQ_STR("cases[0].id is still the placeholder TODO", d.items[0].message);
  PG_CHECK_EQ_STR("cases[0].level is still the placeholder TODO", d.items[1].message);
  PG_CHECK_EQ_STR("cases[0].dtype is still the placeholder TODO", d.items[2].message);
  PG_CHECK_EQ_STR("cases[1].fill.q is still the placeholder TODO", d.items[3].message);
  PG_CHECK_EQ_STR("placeholder", d.items[3].rule);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

/* Per-output tolerances: every field kept by output name; `_` comments skipped; all
 * findings of one bad map reported (each error path has a bad/suite/tolerance_* fixture
 * with its exact message). */
PG_TEST(load_per_output_tolerances) {
  struct pg_suite s;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  PG_CHECK_OK(pg_suite_load(pg_test_data("good/suite/tolerance_per_output.json"),
                            pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(0, d.count);
  const struct pg_case *c = &s.cases[0];
  PG_CHECK_EQ_INT(3, c->n_tolerances);
  const struct pg_output_tolerance *out = pg_case_output_tolerance(c, "out");
  const struct pg_output_tolerance *sc = pg_case_output_tolerance(c, "scores");
  const struct pg_output_tolerance *pr = pg_case_output_tolerance(c, "probs");
  PG_CHECK(out && sc && pr && !pg_case_output_tolerance(c, "_note"));
  PG_CHECK(out->has_atol && out->has_rtol && !out->rule);
  PG_CHECK_NEAR(1e-2, out->atol, 0);
  PG_CHECK_NEAR(1e-2, out->rtol, 0);
  PG_CHECK_EQ_INT(5, out->mark.line);
  PG_CHECK(!sc->has_atol && !sc->has_rtol);
  PG_CHECK_EQ_STR("ulp:4", sc->rule);
  PG_CHECK(pr->has_atol && pr->has_rtol && pr->atol == 0 && pr->rtol == 0);
  PG_CHECK_EQ_STR("ratio:0.01", pr->rule);
  PG_CHECK(c->has_atol && !c->has_rtol); /* the case-wide keys are separate */
  PG_CHECK_EQ_INT(0, s.cases[1].n_tolerances);
  PG_CHECK(!pg_case_output_tolerance(&s.cases[1], "out"));
  pg_suite_reset(&s);
  pg_diags_reset(&d);

  const char *t = "{\"cases\": [{\"id\": \"a\", \"level\": 2, \"tolerance\": {\n"
                  "  \"scores\": {\"atol\": -1, \"rule\": \"fuzzy\", \"x\": 1},\n"
                  "  \"nope\": {\"atol\": 1}, \"out\": [], \"probs\": {}}}]}";
  PG_CHECK_EQ_INT(PG_EVALIDATE, load(t, pg_test_attention_contract(), &s, &d, &err));
  PG_CHECK_EQ_INT(6, d.n_errors); /* atol, rule, x, nope, out, probs */
  PG_CHECK_EQ_INT(0, s.cases[0].n_tolerances);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
  /* without a contract the names cannot be checked: kept as written */
  t = "{\"cases\": [{\"id\": \"a\", \"level\": 2, \"tolerance\": {\"zz\": {\"rtol\": 0.5}}}]}";
  PG_CHECK_OK(load(t, NULL, &s, &d, &err));
  PG_CHECK(pg_case_output_tolerance(&s.cases[0], "zz") &&
           pg_case_output_tolerance(&s.cases[0], "zz")->rtol == 0.5);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
}

/* A rule's text as a JSON string body (the edge forms hold a tab and a newline). */
static void json_escape(const char *s, char *out, size_t size) {
  size_t n = 0;
  for (; *s && n + 7 < size; s++) {
    if (*s == '\t') n += (size_t)snprintf(out + n, size - n, "\\t");
    else if (*s == '\n') n += (size_t)snprintf(out + n, size - n, "\\n");
    else if (*s == '"' || *s == '\\') n += (size_t)snprintf(out + n, size - n, "\\%c", *s);
    else out[n++] = *s;
  }
  out[n] = '\0';
}

/* The suite loader checks a rule with compare/'s parser: every edge form of
 * rule_edges.h (shared with the compare unit test) is accepted or refused alike, as the
 * case-wide "rule" and as a per-output one ("ratio: 0.5" refused by both). */
PG_TEST(rule_edges_agree_with_compare) {
  for (size_t i = 0; i < sizeof pg_rule_edges / sizeof *pg_rule_edges; i++) {
    const char *text = pg_rule_edges[i].text;
    char esc[128], t[512];
    json_escape(text, esc, sizeof esc);
    snprintf(t, sizeof t,
             "{\"cases\": [{\"id\": \"a\", \"level\": 2, \"rule\": \"%s\",\n"
             "  \"tolerance\": {\"scores\": {\"rule\": \"%s\"}}}]}", esc, esc);
    struct pg_suite s;
    struct pg_diags d;
    struct pg_error err;
    struct pg_cmp_rule r;
    int parser_ok = pg_cmp_rule_parse(text, &r, NULL) == PG_OK;
    int rc = load(t, pg_test_attention_contract(), &s, &d, &err);
    PG_CHECK_MSG(parser_ok == pg_rule_edges[i].ok, "'%s': compare says %d", text, parser_ok);
    PG_CHECK_MSG((rc == PG_OK) == pg_rule_edges[i].ok, "'%s': suite loader rc %d (%s)", text,
                 rc, err.message);
    if (rc == PG_OK) {
      PG_CHECK_EQ_STR(text, s.cases[0].rule);
      PG_CHECK_EQ_INT(1, s.cases[0].n_tolerances);
      PG_CHECK_EQ_STR(text, s.cases[0].tolerances[0].rule);
    } else {
      PG_CHECK_EQ_INT(PG_EVALIDATE, rc);
      PG_CHECK_EQ_INT(2, d.n_errors); /* the case's rule and the output's */
      for (int k = 0; k < d.count && k < 2; k++) {
        PG_CHECK_EQ_STR("compare-rule", d.items[k].rule);
        PG_CHECK(strstr(d.items[k].message, "unknown compare rule") != NULL);
      }
      if (d.count == 2) { /* at each string: line 1 col 44, line 2 col 36 */
        PG_CHECK_EQ_INT(1, d.items[0].line);
        PG_CHECK_EQ_INT(44, d.items[0].column);
        PG_CHECK_EQ_INT(2, d.items[1].line);
        PG_CHECK_EQ_INT(36, d.items[1].column);
      }
    }
    pg_suite_reset(&s);
    pg_diags_reset(&d);
  }
}
