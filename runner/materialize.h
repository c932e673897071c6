/* phasegate runner — case materialisation: bind dims, evaluate shapes, allocate within
 * a byte budget, and generate primary inputs deterministically (DESIGN.md §4). */
#ifndef PHASEGATE_MATERIALIZE_H
#define PHASEGATE_MATERIALIZE_H

#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/spec.h"
#include "phasegate/tensor.h"

struct pg_materialize_opts {
  uint64_t max_bytes;   /* total bytes a case may allocate for inputs; 0 = no limit */
  int n_threads;        /* 0 = all cores */
};

/* The seed a case uses: its "seed" or a stable hash of its id. */
uint64_t pg_case_seed(const struct pg_case *cs);

/* Binds dims: contract defaults <- case "shape" overrides (cs may be NULL). Every dim
 * that a shape uses must end up bound, else PG_EVALIDATE naming it. */
int pg_case_bind_dims(const struct pg_contract *c, const struct pg_case *cs,
                      struct pg_bindings *out, struct pg_error *err);

/* Evaluates a declaration's shape under dims. */
int pg_decl_shape(const struct pg_tensor_decl *decl, const struct pg_bindings *dims, int *ndim,
                  int64_t shape[PG_MAX_NDIM], struct pg_error *err);

/* Allocates and fills the primary inputs (contract order) for a case: fill from the
 * case override, the contract, or normal(0, 1); dtype per pg_case_dtype; generation
 * keyed by (seed, input name, element index), identical for any thread count.
 * `inputs` is an array of c->n_primary initialised tensors, reset by the caller. */
int pg_case_generate_inputs(const struct pg_contract *c, const struct pg_case *cs,
                            const struct pg_bindings *dims,
                            const struct pg_materialize_opts *opts, struct pg_tensor *inputs,
                            struct pg_error *err);


/* ---- fill specs (DESIGN.md §4; grammar in docs/interfaces.md) ---- */

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
int pg_fill_parse(const char *text, struct pg_fill *out, struct pg_error *err);

#endif
