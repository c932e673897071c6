/* phasegate tests — out-of-memory sweep of the suite loader (STYLE.md §6 row 2).
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc so every allocation the
 * runner library makes goes through the counters below; cJSON's allocations go through
 * the same counters via cJSON_InitHooks. For k = 1, 2, … the k-th allocation fails,
 * once (transient) or from then on (persistent), until a load completes without a
 * fault firing. Each faulted load must return PG_OK (the failure was absorbed, e.g.
 * findings left unsorted) or PG_ENOMEM with an "out of memory" message, never crash,
 * and never leak (run under ASan/LSan: this is a plain main() that exits normally). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_contract.h"
#include "phasegate/spec.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

/* Test-only global state: the fault schedule. */
static long alloc_count, fail_at, fired;
static int persistent;

static int should_fail(void) {
  alloc_count++;
  if (fail_at > 0 && (alloc_count == fail_at || (persistent && alloc_count > fail_at))) {
    fired++;
    return 1;
  }
  return 0;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
static void *hook_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }

static const char suite_text[] =
    "{\"op\": \"attention\", \"total_modules\": 3, \"extra\": 1,\n"
    " \"cases\": [\n"
    "  {\"id\": \"L1_a\", \"level\": 1, \"shape\": {\"B\": 1, \"S\": 64}},\n"
    "  {\"id\": \"L2_b\", \"level\": \"L2\", \"dtype\": {\"q\": \"float32\"}, \"rule\": \"ulp:2\",\n"
    "   \"fill\": {\"k\": \"int(-3, 3)\"}, \"knob\": [1, {\"x\": null}]},\n"
    "  {\"id\": \"L5_c\", \"level\": 5, \"cancellation_stress\": {\"target\": \"scores\",\n"
    "   \"expression\": \"a - b\", \"relative_gap\": 1e-5, \"seed\": 1}}\n"
    " ]}\n";

/* A second text whose load produces error findings (diagnostic allocations). */
static const char bad_text[] =
    "{\"cases\": [{\"id\": \"a b\", \"level\": 9, \"shape\": {\"Q\": 1}},"
    " {\"id\": \"x\", \"level\": 1, \"level\": 2}, {\"id\": \"x\", \"level\": 1}]}";

static int sweep(const char *text, int expect_rc, int persistent_mode) {
  persistent = persistent_mode;
  for (long k = 1;; k++) {
    struct pg_suite s;
    struct pg_diags d;
    struct pg_error err;
    pg_diags_init(&d);
    pg_error_clear(&err);
    alloc_count = 0;
    fired = 0;
    fail_at = k;
    int rc = pg_suite_load_buffer("oom.json", text, strlen(text), pg_test_attention_contract(),
                                  &s, &d, &err);
    fail_at = 0;
    long fired_now = fired;
    if (rc == PG_ENOMEM) {
      if (!strstr(err.message, "out of memory")) {
        fprintf(stderr, "k=%ld: PG_ENOMEM without an out-of-memory message: %s\n", k,
                err.message);
        return 1;
      }
    } else if (rc != expect_rc) {
      fprintf(stderr, "k=%ld (%s): rc %s, expected %s or PG_ENOMEM: %s\n", k,
              persistent_mode ? "persistent" : "transient", pg_err_name(rc),
              pg_err_name(expect_rc), err.message);
      return 1;
    }
    pg_suite_reset(&s);
    pg_diags_reset(&d);
    if (fired_now == 0) {
      printf("ok - %s %s: %ld allocation sites swept\n", expect_rc ? "invalid" : "valid",
             persistent_mode ? "persistent" : "transient", k - 1);
      return k > 5 ? 0 : 1; /* a sweep that faulted nothing tested nothing */
    }
  }
}

int main(void) {
  cJSON_Hooks hooks = {hook_malloc, free};
  cJSON_InitHooks(&hooks);
  int bad = 0;
  bad |= sweep(suite_text, PG_OK, 0);
  bad |= sweep(suite_text, PG_OK, 1);
  bad |= sweep(bad_text, PG_EVALIDATE, 0);
  bad |= sweep(bad_text, PG_EVALIDATE, 1);
  return bad;
}
