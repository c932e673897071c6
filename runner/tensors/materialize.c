/* phasegate runner — tensor materialisation (tensors/materialize.h): allocate one tensor
 * and fill it deterministically from (seed, name, element index) with the fill kernels
 * of fill.c. Which tensors a case needs, with which fills and dtypes, is run/'s. */
#include "tensors/rng.h"
#include "tensors/tensors.h"

int pg_tensor_generate(struct pg_tensor *t, const char *name, enum pg_dtype dtype, int ndim,
                       const int64_t *shape, const struct pg_fill *fill, uint64_t seed,
                       int n_threads, struct pg_error *err) {
  struct pg_error sub;
  pg_error_clear(&sub);
  if (name != t->name) pg_tensor_set_name(t, name);
  int rc = pg_tensor_alloc(t, dtype, ndim, shape, &sub);
  if (rc != PG_OK)
    /* the fill kernels name the tensor the same way in their own messages */
    return pg_error_set(err, rc, "input '%s': %s", t->name, sub.message);
  rc = pg_fill_generate(t, fill, seed, t->name, n_threads, err);
  if (rc != PG_OK) pg_tensor_reset(t);
  return rc;
}
