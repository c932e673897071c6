/* phasegate runner — tensor materialisation: one tensor generated deterministically
 * from its name, dtype, shape, a parsed fill spec and a seed (docs/design.md §4). Knows
 * nothing about contracts or cases: the case-level generation (which tensors, which
 * fill and dtype per case, the byte budget, cancellation_stress) is run/inputs.h's. */
#ifndef PHASEGATE_MATERIALIZE_H
#define PHASEGATE_MATERIALIZE_H

#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/tensor.h"

/* ---- fill specs (docs/design.md §4; grammar in docs/interfaces.md) ---- */

enum pg_fill_kind {
  PG_FILL_NORMAL = 0, /* normal(mu, sigma) */
  PG_FILL_UNIFORM,    /* uniform(lo, hi) */
  PG_FILL_INT,        /* int(lo, hi): exact small integers, both ends inclusive */
  PG_FILL_ZEROS,
  PG_FILL_ONES,
  PG_FILL_ARANGE,     /* arange or arange(start, step) */
  PG_FILL_CONST       /* const(x) */
};

enum pg_special { PG_SPECIAL_NAN = 0, PG_SPECIAL_INF, PG_SPECIAL_NEG_INF, PG_SPECIAL_DENORMAL,
                  PG_SPECIAL_NEG_ZERO, PG_SPECIAL_COUNT };

struct pg_fill {
  enum pg_fill_kind kind;
  double a, b;                       /* parameters in the order written */
  double special[PG_SPECIAL_COUNT];  /* fraction of elements replaced by each value */
};

/* Parses a fill spec. On PG_EPARSE err->column is the 1-based column in `text`. */
/* The fill grammar (text -> struct pg_fill) is the opdir room's: pg_fill_parse,
 * runner/opdir/opdir.h. */

/* ---- generation ---- */

/* Allocates `t` (pg_tensor_init'ed) as `name` with dtype and shape and fills it per
 * `fill`, element i a function of (seed, name, i) only: identical for any thread count
 * (n_threads: 0 = all cores). On PG_OK `t` owns its buffer; on error it is reset.
 * PG_ENOMEM, PG_EDTYPE (the fill cannot be represented in dtype), PG_EINVAL. */
int pg_tensor_generate(struct pg_tensor *t, const char *name, enum pg_dtype dtype, int ndim,
                       const int64_t *shape, const struct pg_fill *fill, uint64_t seed,
                       int n_threads, struct pg_error *err);

#endif
