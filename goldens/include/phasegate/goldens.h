/* phasegate — goldens/: expressions, golden steps, golden plugins and cumulative
 * composition (DESIGN.md §3 rule 5, §5) over the module graph of op_graph.h. The
 * reference kernels are in kernels.h.
 *
 * No file I/O here except dlopen() of a golden library; the disk cache is runner/'s.
 * goldens/ sits below runner/: it knows the graph, never the contract file, the suite
 * or the runner's diagnostics list (findings go through a callback).
 */
#ifndef PHASEGATE_GOLDENS_H
#define PHASEGATE_GOLDENS_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/golden.h"
#include "phasegate/kernels.h"
#include "phasegate/op_graph.h"
#include "phasegate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- expressions */

/* Called for every dim name an expression uses; `offset` is 0-based in the text.
 * Return non-zero to stop (that value is returned by the parser). */
typedef int (*pg_expr_name_cb)(void *user, const char *name, size_t len, int offset);

/* Shape expressions: integers, dim names, + - * //, parentheses, unary +/-; `/` is an
 * error. Checks syntax only and reports each name through `cb` (may be NULL).
 * On PG_EPARSE, err->column is the 1-based column inside `text`. */
int pg_shape_expr_check(const char *text, pg_expr_name_cb cb, void *user, struct pg_error *err);

/* Evaluates a shape expression with overflow checks (PG_EOVERFLOW), unknown names
 * (PG_ENOTFOUND), division by zero (PG_EINVAL). `//` floors, as Python does. */
int pg_shape_expr_eval(const char *text, const struct pg_bindings *dims, int64_t *out,
                       struct pg_error *err);

/* Float expressions for golden step attributes: numbers (1e-5, 0.5), dim names,
 * + - * / //, unary +/-, parentheses, sqrt(x), exp(x), log(x), true/false (1/0). */
int pg_float_expr_check(const char *text, pg_expr_name_cb cb, void *user, struct pg_error *err);
int pg_float_expr_eval(const char *text, const struct pg_bindings *dims, double *out,
                       struct pg_error *err);

/* ---------------------------------------------------------------- composition */

struct pg_golden_plan;

/* Everything a golden computation needs besides the input tensors. */
struct pg_golden_env {
  const struct pg_op_graph *graph;
  const struct pg_bindings *dims;             /* every dim bound */
  const struct pg_name_value *dtype_overrides; /* a case's "dtype" map (may be NULL) */
  int n_dtype_overrides;
  int precision_bits;                          /* 32 (default) or 64 */
  void *golden_lib;                            /* from pg_golden_lib_open, or NULL */
  int n_threads;                               /* 0 = default */
};

/* dlopen()s a golden library. On PG_OK *handle must be closed with pg_golden_lib_close. */
int pg_golden_lib_open(const char *path, void **handle, struct pg_error *err);
void pg_golden_lib_close(void *handle);

/* Receives one finding: an error at file:line:column (1-based) breaking `rule`
 * ("golden"); `message` has no position prefix. Return PG_OK, or a PG_E* code (e.g.
 * PG_ENOMEM when it could not record the finding) that the caller returns at the end. */
typedef int (*pg_golden_finding_cb)(void *user, const char *file, int line, int column,
                                    const char *rule, const char *message);

/* Type- and shape-checks every golden step of every module (and the op-level golden)
 * against the graph (shapes under its default dims), reporting each finding through
 * `cb`. Returns the number of findings (0 = all good) or a negative PG_E* code: the
 * first non-zero code `cb` returned, PG_ENOMEM, PG_EINVAL. */
int pg_goldens_validate(const struct pg_op_graph *g, pg_golden_finding_cb cb, void *user);

/* Cumulative golden k: runs the goldens of M1..Mk in order over the primary inputs
 * (contract order, effective dtypes), wiring named tensors. On PG_OK, outputs[0..n)
 * hold the Mk boundary outputs (phase N: final_outputs) in declared order, rounded
 * to their effective dtype; the caller passes an array of at least
 * PG_MAX_BOUNDARY_OUTPUTS initialised tensors and resets them afterwards. */
#define PG_MAX_BOUNDARY_OUTPUTS 32
int pg_golden_cumulative(const struct pg_golden_env *env, int k,
                         const struct pg_tensor *primary, int n_primary,
                         struct pg_tensor *outputs, int *n_outputs, struct pg_error *err);

/* The op-level golden (contract `golden:` at op level), same conventions, outputs are
 * the final_outputs. PG_ENOTFOUND when the contract has none. */
int pg_golden_op_level(const struct pg_golden_env *env, const struct pg_tensor *primary,
                       int n_primary, struct pg_tensor *outputs, int *n_outputs,
                       struct pg_error *err);

/* Loads the BLAS behind the `matmul` kernel now (it is dlopen()ed on first use, ~1.5 ms),
 * so a caller that knows a matmul is coming can take that cost off its critical path,
 * e.g. on a helper thread while it generates inputs. Thread-safe and idempotent;
 * PG_ENOSYM when no OpenBLAS can be loaded (matmul then fails the same way). */
int pg_goldens_preload_blas(struct pg_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_GOLDENS_H */
