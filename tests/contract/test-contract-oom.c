/* phasegate tests — out-of-memory sweep of the contract loader (STYLE.md §6 row 2).
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup so every
 * allocation the runner library makes (contract_yaml.c, contract_schema.c and the
 * diagnostics list) goes through the counters below; libyaml's own allocations, made
 * inside the shared library, are not counted. For k = 1, 2, … the k-th allocation
 * fails, once (transient) or from then on (persistent), until a load completes
 * without a fault firing. Each faulted load must return its normal status or
 * PG_ENOMEM with an "out of memory" message, never crash, and never leak (run under
 * ASan/LSan: this is a plain main() that exits normally).
 *
 *   test-contract-oom FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/spec.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

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

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return should_fail() ? NULL : __real_strdup(s); }

static int sweep(const char *name, const char *text, size_t size, int persistent_mode) {
  persistent = persistent_mode;
  int expect = -1;
  for (long k = 0;; k++) { /* k = 0: the reference run, no fault */
    struct pg_contract c;
    struct pg_diags d;
    struct pg_error err;
    pg_diags_init(&d);
    pg_error_clear(&err);
    alloc_count = 0;
    fired = 0;
    fail_at = k;
    int rc = pg_contract_load_buffer(name, text, size, &c, &d, &err);
    fail_at = 0;
    long fired_now = fired;
    pg_contract_reset(&c);
    pg_diags_reset(&d);
    if (k == 0) {
      expect = rc;
      continue;
    }
    if (rc == PG_ENOMEM) {
      if (!strstr(err.message, "out of memory")) {
        fprintf(stderr, "%s k=%ld: PG_ENOMEM without an out-of-memory message: %s\n", name, k,
                err.message);
        return 1;
      }
    } else if (rc != expect) {
      fprintf(stderr, "%s k=%ld (%s): rc %s, expected %s or PG_ENOMEM: %s\n", name, k,
              persistent_mode ? "persistent" : "transient", pg_err_name(rc), pg_err_name(expect),
              err.message);
      return 1;
    }
    if (fired_now == 0) {
      printf("ok - %s %s (%s): %ld allocation sites swept\n", name,
             persistent_mode ? "persistent" : "transient", pg_err_name(expect), k - 1);
      return k > 5 ? 0 : 1; /* a sweep that faulted nothing tested nothing */
    }
  }
}

int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 1;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *base = strrchr(argv[i], '/');
    base = base ? base + 1 : argv[i];
    bad |= sweep(base, buf, n, 0);
    bad |= sweep(base, buf, n, 1);
  }
  return bad;
}
