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

#endif
