/* phasegate — goldens/: expressions, golden steps, golden plugins and cumulative
 * composition (docs/design.md §3 rule 5, §5) over the module graph of op_graph.h. The
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

/* ---------------------------------------------------------------- the golden plan */

/* A graph's golden steps compiled once (docs/design.md §5): for every module, and the op
 * level, each step parsed, its kernel looked up, each tensor argument resolved to where
 * it comes from, and its attributes compiled to expressions evaluated per set of dims.
 * Composition, validation, cancellation_stress and anything else that needs the steps
 * read the plan, never the step text. Read-only once built (threads may share it);
 * the graph must outlive it unchanged. */
struct pg_golden_plan;

/* Builds the plan of `g`. PG_OK also when steps have problems: each is recorded with
 * its step, reported by pg_golden_plan_validate and returned by whatever runs that
 * step. PG_ENOMEM, PG_EINVAL. On PG_OK *out is owned: pg_golden_plan_free. */
int pg_golden_plan_build(const struct pg_op_graph *g, struct pg_golden_plan **out,
                         struct pg_error *err);
void pg_golden_plan_free(struct pg_golden_plan *p); /* NULL is fine */
/* The graph the plan was built from. */
const struct pg_op_graph *pg_golden_plan_graph(const struct pg_golden_plan *p);

/* Receives one finding: an error at file:line:column (1-based) breaking `rule`
 * ("golden"); `message` has no position prefix. Return PG_OK, or a PG_E* code (e.g.
 * PG_ENOMEM when it could not record the finding) that the caller returns at the end. */
typedef int (*pg_golden_finding_cb)(void *user, const char *file, int line, int column,
                                    const char *rule, const char *message);

/* Type- and shape-checks every golden step of every module (and the op-level golden)
 * against the graph (shapes under its default dims), reporting each finding through
 * `cb` in step order. Returns the number of findings (0 = all good) or a negative
 * PG_E* code: the first non-zero code `cb` returned, PG_ENOMEM, PG_EINVAL. */
int pg_golden_plan_validate(const struct pg_golden_plan *p, pg_golden_finding_cb cb,
                            void *user);
/* pg_golden_plan_validate on a plan built for the call. */
int pg_goldens_validate(const struct pg_op_graph *g, pg_golden_finding_cb cb, void *user);

/* 1 when a built-in step of modules 1..k (k <= 0: every module and the op level)
 * calls `kernel` (e.g. "matmul", to load its BLAS early), else 0. */
int pg_golden_plan_uses_kernel(const struct pg_golden_plan *p, int k, const char *kernel);

/* Where a step's tensor argument comes from, resolved as the golden engine resolves
 * names: an earlier step of the same module (the latest to define it), the module's
 * declared input through its source, a primary input, the latest earlier module's
 * output. The op level sees its own steps and the primary inputs only. */
enum pg_golden_source_kind {
  PG_GOLDEN_SRC_NONE = 0, /* unknown: the step cannot run */
  PG_GOLDEN_SRC_STEP,     /* index: the step (0-based, same module) that computes it */
  PG_GOLDEN_SRC_PRIMARY,  /* index: the primary input (0-based) */
  PG_GOLDEN_SRC_MODULE    /* index: the id of the earlier module whose output it is */
};

struct pg_golden_source {
  enum pg_golden_source_kind kind;
  int index;
};

/* One compiled step, read-only; every pointer is owned by the plan. */
struct pg_golden_plan_step {
  const char *text;                    /* as written */
  struct pg_mark mark;                 /* of its first character */
  int parsed;                          /* 0: a syntax error (problem says which) */
  const char *problem;                 /* NULL when the step can run; else the first
                                          reason it cannot (syntax, unknown op or tensor,
                                          argument count, attributes) */
  const char *op;                      /* as written; "sub" / "add" for `a - b` / `a + b`;
                                          "" when the step did not parse that far */
  const struct pg_kernel_def *kernel;  /* NULL: unknown op (or no parse) */
  int n_outputs;
  const char *outputs[PG_KERNEL_MAX_OUTPUTS];
  int n_inputs;
  const char *inputs[PG_KERNEL_MAX_INPUTS];
  struct pg_golden_source sources[PG_KERNEL_MAX_INPUTS];
};

/* Steps of module `module_id` (0: the op level): the count, 0 when its golden is a
 * plugin or missing, -1 when there is no such module. */
int pg_golden_plan_n_steps(const struct pg_golden_plan *p, int module_id);
/* Step s (0-based) of module `module_id` (0: the op level), or NULL. */
const struct pg_golden_plan_step *pg_golden_plan_step(const struct pg_golden_plan *p,
                                                      int module_id, int s);
/* The first step, in module order then step order, that names `tensor` among its
 * outputs: 1 with *module_id and *step set, else 0. The op level is not searched. */
int pg_golden_plan_find(const struct pg_golden_plan *p, const char *tensor, int *module_id,
                        int *step);
/* The attributes of a step with a known kernel, evaluated under dims, in the order of
 * kernel->attrs (absent ones at their defaults); *n_attrs = their count. PG_EINVAL when
 * the step's attributes have a problem, else an expression's error (PG_ENOTFOUND for
 * an unbound dim), each message naming the kernel and attribute. */
int pg_golden_plan_step_attrs(const struct pg_golden_plan *p, int module_id, int s,
                              const struct pg_bindings *dims,
                              struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS], int *n_attrs,
                              struct pg_error *err);

/* ---------------------------------------------------------------- composition */

/* Everything a golden computation needs besides the input tensors. */
struct pg_golden_env {
  const struct pg_golden_plan *plan;          /* pg_golden_plan_build of the graph */
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

/* Cumulative golden k: runs the goldens of M1..Mk in order over the primary inputs
 * (contract order, effective dtypes), wiring named tensors as the plan resolved them.
 * On PG_OK, outputs[0..n) hold the Mk boundary outputs (phase N: final_outputs) in
 * declared order, rounded to their effective dtype; the caller passes an array of at
 * least PG_MAX_BOUNDARY_OUTPUTS initialised tensors and resets them afterwards. */
#define PG_MAX_BOUNDARY_OUTPUTS 32
int pg_golden_cumulative(const struct pg_golden_env *env, int k,
                         const struct pg_tensor *primary, int n_primary,
                         struct pg_tensor *outputs, int *n_outputs, struct pg_error *err);

/* Cumulative golden k as above, plus inspection probes: for each probes[i] (a
 * declaration of module k's `inspect:`), the value of module k's golden step of that
 * name (the latest to define it) as that step computed it, checked against the declared
 * shape and converted to the declared (effective) dtype into probe_out[i] (initialised
 * by the caller, reset by the caller; reset here on failure). A probe no step computes,
 * or a module k whose golden is a plugin, is an error naming it. */
int pg_golden_cumulative_probes(const struct pg_golden_env *env, int k,
                                const struct pg_tensor *primary, int n_primary,
                                const struct pg_tensor_decl *const *probes, int n_probes,
                                struct pg_tensor *outputs, int *n_outputs,
                                struct pg_tensor *probe_out, struct pg_error *err);

/* The op-level golden (contract `golden:` at op level), same conventions, outputs are
 * the final_outputs. PG_ENOTFOUND when the contract has none. */
int pg_golden_op_level(const struct pg_golden_env *env, const struct pg_tensor *primary,
                       int n_primary, struct pg_tensor *outputs, int *n_outputs,
                       struct pg_error *err);

/* ---------------------------------------------------------------- counterfactual goldens */

/* A bug hypothesis applied to one built-in step while a golden runs (docs/design.md §8
 * "Hints"): the step's attributes, inputs or kernel changed as a buggy kernel would
 * have them. The diagnosis compares the impl with such a mutant golden; suite strength
 * compares the mutant with the reference. Enumerated by pg_golden_mutations, executed
 * by pg_golden_prefix_run (never from step text). */
enum pg_golden_mutation_kind {
  PG_MUT_NONE = 0,
  PG_MUT_FLIP_BOOL,    /* bool attribute `attr` negated (matmul trans_a / trans_b) */
  PG_MUT_SCALE_ATTR,   /* float attribute `attr` multiplied by `param` */
  PG_MUT_SET_AXIS,     /* int attribute `attr` (an axis) set to `iparam` (absolute) */
  PG_MUT_SET_STRING,   /* string attribute `attr` set to `sparam` (gelu approximate) */
  PG_MUT_ROUND_INPUTS, /* float inputs rounded through `iparam`: PG_DTYPE_F16, _BF16, or
                          0 for tf32 (10 mantissa bits) */
  PG_MUT_TAIL_DROP,    /* the last tile (size `iparam`, partial or full) of a reduction
                          ignored, as a loop that stops one tile early: matmul's K;
                          softmax's axis (`attr`: its axis attribute), those inputs
                          masked out as a flash-attention KV loop leaves them */
  PG_MUT_ACCUMULATE,   /* matmul recomputed with summation order `iparam`
                          (enum pg_golden_sum_order), tile `param` for BLOCKED and the
                          chunked low-precision accumulators */
  PG_MUT_FAST_EXP      /* exp / sigmoid / silu / softmax (`iparam`: which, enum in
                          mutate.c) recomputed with a fast exp (Schraudolph's exponent-bit
                          trick, up to ~4 % off); `attr`: softmax's axis attribute */
};

/* Summation orders of PG_MUT_ACCUMULATE: the CPU reproducer's spread and
 * low-precision accumulation. */
enum pg_golden_sum_order {
  PG_SUM_FORWARD = 0, PG_SUM_REVERSED, PG_SUM_BLOCKED, PG_SUM_PAIRWISE, PG_SUM_KAHAN,
  PG_SUM_FP64, PG_SUM_FP16_ACC, PG_SUM_BF16_ACC,
  PG_SUM_BF16_CHUNK_ACC /* each K chunk of `param` summed in fp32, the running
                           accumulator rounded to bf16 after each chunk's add */
};

/* Which hint a mutant stands for (the runner maps it to its hint kind). */
enum pg_mutation_family {
  PG_MUTF_TRANSPOSED = 0, PG_MUTF_SCALED, PG_MUTF_WRONG_AXIS, PG_MUTF_TAIL_DROPPED,
  PG_MUTF_LOW_PRECISION_INPUTS, PG_MUTF_LOW_PRECISION_ACCUMULATION, PG_MUTF_APPROXIMATION,
  PG_MUTF_SUMMATION_ORDER
};

struct pg_golden_mutation {
  int module_id;                       /* the module whose step is changed */
  int step;                            /* 0-based step of that module */
  enum pg_golden_mutation_kind kind;
  int attr;                            /* index in the step kernel's attrs */
  double param;
  int64_t iparam;
  char sparam[16];
  enum pg_mutation_family family;
  char detail[128];                    /* "matmul trans_b flipped (step 2)": no values */
};

/* The mutations that apply to the built-in steps of module `module_id`, at most `max`
 * into out; returns the count (0 when its golden is no steps). Whether one really
 * applies (an axis the tensor has, a K with a partial tile) is known only when it
 * runs: pg_golden_prefix_run then returns PG_ENOTSUP. */
int pg_golden_mutations(const struct pg_golden_plan *p, int module_id,
                        struct pg_golden_mutation *out, int max);

/* Cumulative golden k computed up to module k-1 once, then module k's steps run any
 * number of times, each with one mutation (or none), over that shared prefix: the
 * counterfactual goldens of boundary k cost module k's steps only. The env (and its
 * dims) and the primary inputs must outlive the prefix. */
struct pg_golden_prefix;
int pg_golden_prefix_build(const struct pg_golden_env *env, int k,
                           const struct pg_tensor *primary, int n_primary,
                           struct pg_golden_prefix **out, struct pg_error *err);
/* Module k under `mut` (NULL: as written): outputs as pg_golden_cumulative's.
 * PG_ENOTSUP when the mutation does not apply to these shapes or to a plugin golden. */
int pg_golden_prefix_run(struct pg_golden_prefix *p, const struct pg_golden_mutation *mut,
                         struct pg_tensor *outputs, int *n_outputs, struct pg_error *err);
void pg_golden_prefix_free(struct pg_golden_prefix *p); /* NULL is fine */

/* Loads the BLAS behind the `matmul` kernel now (it is dlopen()ed on first use, ~1.5 ms),
 * so a caller that knows a matmul is coming can take that cost off its critical path,
 * e.g. on a helper thread while it generates inputs. Thread-safe and idempotent;
 * PG_ENOSYM when no OpenBLAS can be loaded (matmul then fails the same way). */
int pg_goldens_preload_blas(struct pg_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_GOLDENS_H */
