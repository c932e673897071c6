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
/* (The parser lives in runner/spec/fill_spec.c; declared here until the spec headers move.) */
int pg_fill_parse(const char *text, struct pg_fill *out, struct pg_error *err);

/* ---- cancellation_stress (DESIGN.md §4; docs/tensors.md "cancellation_stress") ---- */

/* What the cancellation_stress generator achieved for a case. r is the cancellation
 * ratio of a target element: |T| / sum|terms| for matmul, sum, mean and cumsum (terms:
 * the products or addends that make up T), |a - b| / max(|a|, |b|) for sub (and
 * |a + b| / max(|a|, |b|) for add). Only metrics: no tensor values. */
struct pg_cancel_result {
  int present;           /* 1 when the case has cancellation_stress and it ran */
  char target[PG_NAME_MAX];
  char kernel[16];       /* "sub", "add", "matmul", "sum", "mean", "cumsum" */
  char method[16];       /* "construct" (exact construction) or "search" (restarts) */
  double relative_gap;   /* the gap used (the suite's, or 1e-5) */
  int64_t n;             /* target elements scored */
  double share;          /* share of elements with r <= relative_gap, stressed inputs */
  double share_plain;    /* the same on the unstressed inputs */
  double median_r, median_r_plain;
  int restarts;          /* search: restarts evaluated (0 for a construction) */
  char note[320];        /* one line for the report / console, e.g.
                            "cancellation_stress scores = matmul(q, k): construct, 96.1% of
                            32768 elements with r <= 0.001 (plain inputs 0.2%), median r ..." */
};

/* pg_case_generate_inputs, plus what cancellation_stress achieved in *cancel (may be
 * NULL; zeroed when the case has no cancellation_stress). */
int pg_case_generate_inputs_ex(const struct pg_contract *c, const struct pg_case *cs,
                               const struct pg_bindings *dims,
                               const struct pg_materialize_opts *opts, struct pg_tensor *inputs,
                               struct pg_cancel_result *cancel, struct pg_error *err);

/* Checks, without dims or tensors, that a case's cancellation_stress can run: the
 * target is computed by a built-in golden step of a supported kernel (sub, add,
 * matmul, sum, mean, cumsum) whose operands are visible outside that module (primary
 * inputs or earlier modules' outputs). PG_OK when it can (or cs has none), else
 * PG_ENOTSUP / PG_EVALIDATE with a message naming the case, target and reason. */
int pg_cancellation_check(const struct pg_contract *c, const struct pg_case *cs,
                          struct pg_error *err);

/* pg_cancellation_check over every case of a suite: one error finding per failing case
 * (file s->path, the case's line:col, rule "cancellation"). Returns the number of
 * findings added, or PG_ENOMEM. For `phasegate validate` / suite validation. */
int pg_suite_check_cancellation(const struct pg_contract *c, const struct pg_suite *s,
                                struct pg_diags *diags);

#endif
