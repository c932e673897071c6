/* phasegate fuzz harness — the fleet's reading of a test listing and its plan
 * (runner/fleet/tests.c, plan.c): pg_fleet_tests_load on arbitrary text (a `ctest
 * --show-only=json-v1` listing), then, when it loads, a plan of 3 shards (per test, or
 * by op when the input's size is odd).
 *
 *   build/asan/tools/fuzz/fuzz_fleet tests/fuzz-corpus/fleet
 *
 * Besides the sanitizers, the harness traps when a promise breaks: every test balanced
 * as a case is on exactly one shard, no gate is on a per-test shard, a shard's tests are
 * in test-number order, and its -I selection names exactly its tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/fleet.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

static void check_plan(const struct pg_fleet_plan *p) {
  int *count = calloc((size_t)p->n_tests + 1, sizeof *count);
  if (!count) return;
  for (int k = 0; k < p->n_shards; k++) {
    const struct pg_fleet_shard *s = &p->shards[k];
    for (int j = 0; j < s->n; j++) {
      const struct pg_fleet_test *t = &p->tests[s->tests[j]];
      check(j == 0 || p->tests[s->tests[j - 1]].number < t->number);
      check(p->by_op || t->role != PG_FLEET_GATE);
      if (t->role == PG_FLEET_CASE) count[s->tests[j]]++;
    }
    char *sel = pg_fleet_shard_selection(p, k);
    if (sel) {
      int commas = 0;
      for (const char *c = sel; *c; c++) commas += *c == ',';
      check(strncmp(sel, "0,0,0", 5) == 0 && commas == 2 + s->n);
    }
    free(sel);
  }
  for (int i = 0; i < p->n_tests; i++)
    if (p->tests[i].role == PG_FLEET_CASE) check(count[i] == 1);
  free(count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pg_fleet_plan p;
  pg_fleet_plan_init(&p);
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_fleet_tests_load("fuzz", (const char *)data, size, &p, &err) == PG_OK) {
    check(strlen(p.fingerprint) == 16);
    if (pg_fleet_plan_balance(&p, 3, (int)(size & 1), NULL, &err) == PG_OK) check_plan(&p);
  } else {
    check(err.message[0] != '\0');
  }
  pg_fleet_plan_reset(&p);
  return 0;
}
