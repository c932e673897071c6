/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include <stdlib.h>
#include <string.h>
#include "phasegate/spec.h"
void pg_contract_init(struct pg_contract *c) { memset(c, 0, sizeof *c); }
void pg_contract_reset(struct pg_contract *c) { (void)c; }
int pg_contract_load(const char *path, struct pg_contract *c, struct pg_diags *d, struct pg_error *err) {
  (void)c; (void)d; return pg_error_set(err, PG_ENOTSUP, "%s: contract loader not built", path); }
int pg_contract_load_buffer(const char *path, const char *data, size_t size, struct pg_contract *c,
                            struct pg_diags *d, struct pg_error *err) {
  (void)data; (void)size; return pg_contract_load(path, c, d, err); }
