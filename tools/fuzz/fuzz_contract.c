/* phasegate fuzz harness — the contract loader (runner/opdir/contract_yaml.c,
 * contract_schema.c) and the shape/fill checks it drives.
 *
 *   build/asan/tools/fuzz/fuzz_contract tests/fuzz-corpus/contract
 *
 * Each input is loaded as module_interfaces.yaml. Besides the sanitizers, the harness
 * checks the loader's promises and traps when one is broken: PG_OK exactly when no
 * error finding was reported; a failure always has a message and a 1-based position;
 * every finding formats; and a contract that loads is consistent enough for the
 * runner (ids 1..N, every axis text set, boundary outputs resolve for every phase).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opdir/opdir.h"

static void check(int cond) {
  if (!cond) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pg_contract c;
  struct pg_diags d;
  struct pg_error err;
  pg_diags_init(&d);
  pg_error_clear(&err);
  int rc = pg_contract_load_buffer("fuzz.yaml", (const char *)data, size, &c, &d, &err);
  check(rc == PG_OK || rc == PG_EPARSE || rc == PG_EVALIDATE || rc == PG_ELIMIT ||
        rc == PG_ENOMEM);
  if (rc != PG_ENOMEM) check((rc == PG_OK) == (d.n_errors == 0));
  if (rc != PG_OK) {
    check(err.message[0] != '\0');
    if (rc != PG_ENOMEM) check(err.line >= 1 && err.column >= 1);
  }
  char line[4096];
  for (int i = 0; i < d.count; i++) {
    check(d.items[i].line >= 1 && d.items[i].column >= 1);
    pg_diag_format(&d.items[i], line, sizeof line);
    check(strstr(line, "fuzz.yaml:") == line);
  }
  if (rc == PG_OK) {
    check(c.op != NULL && c.n_modules >= 1);
    for (int i = 0; i < c.n_modules; i++) {
      const struct pg_module *m = &c.modules[i];
      check(m->id == i + 1 && m->name != NULL && m->n_outputs >= 1);
      for (int j = 0; j < m->n_outputs; j++) {
        check(m->outputs[j].ndim >= 0 && m->outputs[j].ndim <= PG_MAX_NDIM);
        check(m->outputs[j].dtype != PG_DTYPE_INVALID);
        for (int a = 0; a < m->outputs[j].ndim; a++) check(m->outputs[j].dims[a] != NULL);
      }
    }
    const struct pg_tensor_decl *b[64];
    for (int k = 1; k <= c.n_modules; k++) check(pg_contract_boundary(&c, k, b, 64, &err) >= 1);
  }
  pg_contract_reset(&c);
  pg_diags_reset(&d);
  return 0;
}
