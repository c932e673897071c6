/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "phasegate/goldens.h"
int pg_shape_expr_check(const char *t, pg_expr_name_cb cb, void *u, struct pg_error *err) { (void)t; (void)cb; (void)u; return pg_error_set(err, PG_ENOTSUP, "not built"); }
int pg_shape_expr_eval(const char *t, const struct pg_bindings *d, int64_t *o, struct pg_error *err) { (void)t; (void)d; (void)o; return pg_error_set(err, PG_ENOTSUP, "not built"); }
int pg_float_expr_check(const char *t, pg_expr_name_cb cb, void *u, struct pg_error *err) { (void)t; (void)cb; (void)u; return pg_error_set(err, PG_ENOTSUP, "not built"); }
int pg_float_expr_eval(const char *t, const struct pg_bindings *d, double *o, struct pg_error *err) { (void)t; (void)d; (void)o; return pg_error_set(err, PG_ENOTSUP, "not built"); }
