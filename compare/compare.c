/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "phasegate/compare.h"
int pg_cmp_rule_parse(const char *text, struct pg_cmp_rule *r, struct pg_error *err) { (void)r; return pg_error_set(err, PG_ENOTSUP, "%s: not built", text); }
void pg_cmp_default_tolerance(enum pg_dtype d, double *atol, double *rtol) { (void)d; *atol = 1e-5; *rtol = 1.3e-6; }
int pg_tensor_compare(const DLTensor *a, const DLTensor *b, const struct pg_cmp_rule *r, int n, struct pg_cmp_result *o, struct pg_error *err) { (void)a; (void)b; (void)r; (void)n; (void)o; return pg_error_set(err, PG_ENOTSUP, "not built"); }
