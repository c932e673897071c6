/* TEMPORARY link stub written by the lead so the tree links while the owner works.
 * The owner replaces this whole file. */
#include "materialize.h"
uint64_t pg_case_seed(const struct pg_case *cs) { (void)cs; return 0; }
int pg_case_bind_dims(const struct pg_contract *c, const struct pg_case *cs, struct pg_bindings *out, struct pg_error *err) { (void)cs; return pg_bindings_merge(&c->dims, NULL, out, err); }
int pg_decl_shape(const struct pg_tensor_decl *d, const struct pg_bindings *dims, int *ndim, int64_t shape[PG_MAX_NDIM], struct pg_error *err) { (void)d; (void)dims; (void)ndim; (void)shape; return pg_error_set(err, PG_ENOTSUP, "not built"); }
int pg_case_generate_inputs(const struct pg_contract *c, const struct pg_case *cs, const struct pg_bindings *dims, const struct pg_materialize_opts *o, struct pg_tensor *in, struct pg_error *err) { (void)c; (void)cs; (void)dims; (void)o; (void)in; return pg_error_set(err, PG_ENOTSUP, "not built"); }
