/* phasegate runner — a case's primary inputs (docs/design.md §4): which tensors, with which
 * dtype, shape and fill (case override, contract, or normal(0, 1)), within a byte
 * budget, generated deterministically per (case seed, input name); and
 * `cancellation_stress`, which reshapes them so that a named golden step cancels
 * (run/cancel.c). The single-tensor generator underneath is tensors/'s. */
#ifndef PHASEGATE_RUN_INPUTS_H
#define PHASEGATE_RUN_INPUTS_H

#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/goldens.h"
#include "phasegate/tensor.h"
#include "opdir/opdir.h"

struct pg_materialize_opts {
  uint64_t max_bytes;   /* total bytes a case may allocate for inputs; 0 = no limit */
  int n_threads;        /* 0 = all cores */
};

/* Allocates and fills the primary inputs (contract order) for a case: fill from the
 * case override, the contract, or normal(0, 1); dtype per pg_case_dtype; generation
 * keyed by (seed, input name, element index), identical for any thread count.
 * `inputs` is an array of c->n_primary initialised tensors, reset by the caller. */
int pg_case_generate_inputs(const struct pg_contract *c, const struct pg_case *cs,
                            const struct pg_bindings *dims,
                            const struct pg_materialize_opts *opts, struct pg_tensor *inputs,
                            struct pg_error *err);

/* ---- cancellation_stress (docs/design.md §4; docs/tensors.md "cancellation_stress") ---- */

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

/* pg_case_generate_inputs_ex with the contract's golden plan (pg_golden_plan_build of
 * &c->graph), which cancellation_stress reads; NULL: one is built when the case needs
 * it. The runner builds the plan once per run and passes it here. */
int pg_case_generate_inputs_plan(const struct pg_contract *c, const struct pg_golden_plan *plan,
                                 const struct pg_case *cs, const struct pg_bindings *dims,
                                 const struct pg_materialize_opts *opts,
                                 struct pg_tensor *inputs, struct pg_cancel_result *cancel,
                                 struct pg_error *err);

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

/* Internal to run/: stresses the generated inputs of a case with cancellation_stress
 * (cs->cancellation.present) in place, filling *res (may be NULL). */
int pg__cancel_stress(const struct pg_contract *c, const struct pg_case *cs,
                      const struct pg_bindings *dims, const struct pg_golden_plan *plan,
                      struct pg_tensor *inputs, struct pg_cancel_result *res,
                      struct pg_error *err);

#endif
