/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include <string.h>
#include "phasegate/spec.h"
void pg_suite_init(struct pg_suite *s) { memset(s, 0, sizeof *s); }
void pg_suite_reset(struct pg_suite *s) { (void)s; }
int pg_suite_load(const char *path, const struct pg_contract *c, struct pg_suite *s, struct pg_diags *d, struct pg_error *err) {
  (void)c; (void)s; (void)d; return pg_error_set(err, PG_ENOTSUP, "%s: suite loader not built", path); }
int pg_suite_load_buffer(const char *path, const char *data, size_t size, const struct pg_contract *c,
                         struct pg_suite *s, struct pg_diags *d, struct pg_error *err) {
  (void)data; (void)size; return pg_suite_load(path, c, s, d, err); }
