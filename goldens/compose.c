/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "phasegate/goldens.h"
int pg_golden_lib_open(const char *p, void **h, struct pg_error *err) { (void)h; return pg_error_set(err, PG_ENOTSUP, "%s: not built", p); }
void pg_golden_lib_close(void *h) { (void)h; }
int pg_goldens_validate(const struct pg_contract *c, struct pg_diags *d) { (void)c; (void)d; return 0; }
int pg_golden_cumulative(const struct pg_golden_env *e, int k, const struct pg_tensor *p, int np, struct pg_tensor *o, int *no, struct pg_error *err) { (void)e; (void)k; (void)p; (void)np; (void)o; (void)no; return pg_error_set(err, PG_ENOTSUP, "not built"); }
int pg_golden_op_level(const struct pg_golden_env *e, const struct pg_tensor *p, int np, struct pg_tensor *o, int *no, struct pg_error *err) { (void)e; (void)p; (void)np; (void)o; (void)no; return pg_error_set(err, PG_ENOTSUP, "not built"); }
