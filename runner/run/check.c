/* phasegate runner — the one validation of an op (DESIGN.md §3 "Validation"):
 * `validate`, `list`, `gen` and `run` all load the contract and suite through
 * pg_op_load, so a file one of them accepts none of them refuses, and every finding
 * is reported, not only the first: the contract's rules, its golden steps (type and
 * shape checks), the suite's rules (against the contract when that loaded), and each
 * cancellation_stress target the input generator could not stress — also when the
 * suite has other errors. */
#include <stdio.h>

#include "phasegate/goldens.h"
#include "run/run.h"

/* err <- the first error finding of d from index `from`, as the console prints it. */
static void first_finding(const struct pg_diags *d, int from, int rc, struct pg_error *err) {
  for (int i = from; err && i < d->count; i++) {
    if (d->items[i].severity != PG_SEV_ERROR) continue;
    pg_diag_format(&d->items[i], err->message, sizeof err->message);
    err->code = rc;
    err->line = d->items[i].line;
    err->column = d->items[i].column;
    return;
  }
}

int pg_op_load(const char *contract_path, const char *suite_path, struct pg_contract *c,
               struct pg_suite *s, struct pg_diags *d, struct pg_error *err) {
  int from = d->count;
  int crc = pg_contract_load(contract_path, c, d, err);
  if (crc != PG_OK && d->n_errors == 0) return crc; /* unreadable: no finding to show */
  int sound = crc == PG_OK; /* its structure: the suite and the plan can use it */
  if (sound) {
    int g = pg_goldens_validate(&c->graph, pg_diags_add_finding, d);
    if (g < 0)
      return pg_error_set(err, g, "%s: checking the golden steps: %s", contract_path,
                          pg_strerror(g));
    if (g > 0) crc = PG_EVALIDATE;
  }
  int src = PG_OK;
  if (suite_path) {
    struct pg_error serr;
    pg_error_clear(&serr);
    src = pg_suite_load(suite_path, sound ? c : NULL, s, d, &serr);
    if (src != PG_OK && src != PG_EVALIDATE && src != PG_EPARSE && src != PG_ELIMIT) {
      if (err) *err = serr;
      return src; /* cannot read it (or out of memory): nothing more to say */
    }
    /* Cancellation targets need the contract's golden plan, not a sound suite: a bad
     * level elsewhere must not hide them. */
    int n = sound ? pg_suite_check_cancellation(c, s, d) : 0;
    if (n < 0) return pg_error_set(err, n, "%s: checking cancellation_stress: %s", suite_path,
                                   pg_strerror(n));
    if (n > 0 && src == PG_OK) src = PG_EVALIDATE;
    if (src != PG_OK && crc == PG_OK && d->n_errors == 0 && err) *err = serr;
  }
  int rc = crc != PG_OK ? crc : src;
  if (rc != PG_OK) first_finding(d, from, rc, err);
  return rc;
}
