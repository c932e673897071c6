/* phasegate tests — out-of-memory sweep of the contract loader (docs/testing.md "Out-of-memory sweeps").
 *
 * Uses the shared harness (tests/harness/pg_oom.h): every allocation the runner
 * library makes (contract_yaml.c, contract_schema.c and the diagnostics list) is
 * counted; libyaml's own allocations, made inside the shared library, are not. For
 * k = 1, 2, … the k-th allocation fails, once (transient) or from then on
 * (persistent), until a load completes without a fault firing. Each faulted load must
 * return its normal status or PG_ENOMEM with an "out of memory" message, never crash,
 * and never leak (LSan checks after each mode in the ASan build).
 *
 *   test-contract-oom FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_oom.h"
#include "opdir/opdir.h"

struct load_ctx {
  const char *name, *text;
  size_t size;
};

/* One load + reset: everything allocated is released before returning. */
static int load_once(void *vctx, int reference, struct pg_error *err) {
  (void)reference;
  struct load_ctx *lc = vctx;
  struct pg_contract c;
  struct pg_diags d;
  pg_diags_init(&d);
  int rc = pg_contract_load_buffer(lc->name, lc->text, lc->size, &c, &d, err);
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  return rc;
}

int main(int argc, char **argv) {
  int bad = 0;
  struct pg_oom_opts o = {.must_say = "out of memory"};
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
    struct load_ctx lc = {base, buf, n};
    bad |= pg_oom_sweep_ex(base, load_once, &lc, &o);
  }
  return bad;
}
