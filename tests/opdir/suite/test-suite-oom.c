/* phasegate tests — out-of-memory sweep of the suite loader (docs/testing.md "Out-of-memory sweeps").
 *
 * Uses the shared harness (tests/harness/pg_oom.h): every allocation the runner
 * library makes is counted, and cJSON's allocations go through the same counter via
 * cJSON_InitHooks. For k = 1, 2, … the k-th allocation fails, once (transient) or
 * from then on (persistent), until a load completes without a fault firing. Each
 * faulted load must return its normal status (PG_OK when the failure was absorbed,
 * e.g. findings left unsorted; PG_EVALIDATE for the invalid text) or PG_ENOMEM with
 * an "out of memory" message, never crash, and never leak (LSan checks after each
 * mode in the ASan build). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_contract.h"
#include "pg_oom.h"
#include "opdir/opdir.h"

static const char suite_text[] =
    "{\"op\": \"attention\", \"total_modules\": 3, \"extra\": 1,\n"
    " \"cases\": [\n"
    "  {\"id\": \"L1_a\", \"level\": 1, \"shape\": {\"B\": 1, \"S\": 64}},\n"
    "  {\"id\": \"L2_b\", \"level\": \"L2\", \"dtype\": {\"q\": \"float32\"}, \"rule\": \"ulp:2\",\n"
    "   \"fill\": {\"k\": \"int(-3, 3)\"}, \"knob\": [1, {\"x\": null}],\n"
    "   \"tolerance\": {\"out\": {\"atol\": 1e-2, \"rule\": \"ulp:3\"}, \"scores\": {\"rtol\": 0}}},\n"
    "  {\"id\": \"L5_c\", \"level\": 5, \"cancellation_stress\": {\"target\": \"scores\",\n"
    "   \"expression\": \"a - b\", \"relative_gap\": 1e-5, \"seed\": 1}}\n"
    " ]}\n";

/* A second text whose load produces error findings (diagnostic allocations). */
static const char bad_text[] =
    "{\"cases\": [{\"id\": \"a b\", \"level\": 9, \"shape\": {\"Q\": 1}},"
    " {\"id\": \"x\", \"level\": 1, \"level\": 2}, {\"id\": \"x\", \"level\": 1,"
    " \"tolerance\": {\"nope\": {\"atol\": 1}, \"out\": {\"x\": 1}}}]}";

struct load_ctx {
  const char *text;
  int expect;
};

/* One load + reset; the reference status must be the one the text is known to have. */
static int load_once(void *vctx, int reference, struct pg_error *err) {
  struct load_ctx *lc = vctx;
  struct pg_suite s;
  struct pg_diags d;
  pg_diags_init(&d);
  int rc = pg_suite_load_buffer("oom.json", lc->text, strlen(lc->text),
                                pg_test_attention_contract(), &s, &d, err);
  pg_suite_reset(&s);
  pg_diags_reset(&d);
  if (reference && rc != lc->expect)
    return pg_error_set(err, PG_EINTERNAL, "reference load returned %s, expected %s",
                        pg_err_name(rc), pg_err_name(lc->expect));
  return rc;
}

/* The real-file forms: a dtype default and string, comment keys, placeholders. */
static const char real_text[] =
    "{\"op\": \"attention\", \"_c\": 1, \"test_cases\": [\n"
    "  {\"id\": \"a\", \"level\": \"l0\", \"dtype\": {\"default\": \"fp32\", \"k\": \"bf16\"}},\n"
    "  {\"id\": \"b\", \"level\": 2, \"dtype\": \"half\", \"_why\": \"x\"},\n"
    "  {\"id\": \"TODO\", \"level\": \"TODO\", \"fill\": {\"q\": \"TODO\"}}]}\n";

int main(void) {
  cJSON_Hooks hooks = {pg_oom_malloc, free};
  cJSON_InitHooks(&hooks);
  struct pg_oom_opts o = {.must_say = "out of memory"};
  struct load_ctx valid = {suite_text, PG_OK}, invalid = {bad_text, PG_EVALIDATE};
  int bad = 0;
  bad |= pg_oom_sweep_ex("valid", load_once, &valid, &o);
  bad |= pg_oom_sweep_ex("invalid", load_once, &invalid, &o);
  struct load_ctx real = {real_text, PG_EVALIDATE};
  bad |= pg_oom_sweep_ex("real", load_once, &real, &o);
  return bad;
}
