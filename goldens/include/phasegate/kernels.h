/* phasegate — the reference kernel library (goldens/): the built-in ops that golden
 * steps (`out = op(args, key=value)`) call, docs/design.md §5.
 *
 * Every kernel is described by a struct pg_kernel_def found by name. The step engine
 * (goldens/steps.c) only talks to kernels through this table: it type- and
 * shape-checks a step with `infer` at validate time and computes it with `run`.
 * Kernels compute on float32 or float64 tensors (the reference precision); integer
 * inputs are accepted where noted and widened. No I/O, no printing; OpenBLAS stays
 * behind goldens/kernels_blas.c.
 */
#ifndef PHASEGATE_KERNELS_H
#define PHASEGATE_KERNELS_H

#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PG_KERNEL_MAX_INPUTS 8
#define PG_KERNEL_MAX_OUTPUTS 4
#define PG_KERNEL_MAX_ATTRS 8

enum pg_attr_type { PG_ATTR_FLOAT = 1, PG_ATTR_INT, PG_ATTR_BOOL, PG_ATTR_INTS, PG_ATTR_STRING };

/* An attribute value after evaluation (floats and ints come from expressions over the
 * bound dims; ints: an axis, a permutation, a shape for reshape). */
struct pg_attr_value {
  enum pg_attr_type type;
  double f;
  int64_t i;
  int b;
  int64_t ints[PG_MAX_NDIM];
  int n_ints;
  char s[64];
};

struct pg_attr_decl {
  const char *name;
  enum pg_attr_type type;
  int required;
  struct pg_attr_value default_value;  /* used when !required and absent */
};

/* The shape and dtype of a tensor without data: what `infer` reasons about. */
struct pg_tensor_meta {
  enum pg_dtype dtype;
  int ndim;
  int64_t shape[PG_MAX_NDIM];
};

struct pg_kernel_args {
  int n_inputs;
  const struct pg_tensor *inputs[PG_KERNEL_MAX_INPUTS];
  int n_attrs;                         /* attrs are in the order of def->attrs */
  struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS];
  int n_threads;                       /* 0 = library default */
};

struct pg_kernel_def {
  const char *name;                    /* "matmul", "softmax", … */
  int min_inputs, max_inputs;
  int n_outputs;                       /* 1 for almost every kernel */
  const struct pg_attr_decl *attrs;    /* terminated by {NULL} */
  const char *summary;                 /* one line, for `phasegate` help and docs */
  /* Output metas from input metas and attrs. Errors name the offending argument. */
  int (*infer)(const struct pg_tensor_meta *inputs, int n_inputs,
               const struct pg_attr_value *attrs, struct pg_tensor_meta *outputs,
               struct pg_error *err);
  /* Computes into outputs that the caller allocated from `infer`'s metas. Inputs and
   * outputs share one float dtype (F32 or F64); integer inputs only where infer
   * accepted them. */
  int (*run)(const struct pg_kernel_args *args, struct pg_tensor *const *outputs,
             struct pg_error *err);
};

/* The kernel named `name`, or NULL. Thread-safe (the table is constant). */
const struct pg_kernel_def *pg_kernel_find(const char *name);
/* All kernels, for listings: returns the count and sets *defs. */
int pg_kernel_list(const struct pg_kernel_def *const **defs);


/* ---- conveniences (additive; the step engine may use them or not) ---- */

/* Index of the attribute called `name` in def->attrs, or -1. */
int pg_kernel_attr_index(const struct pg_kernel_def *def, const char *name);

/* Fills attrs[0..n) with def's defaults and returns n, the number of declared
 * attributes. Required attrs are left absent: an attr whose `type` is 0 is treated as
 * absent by every kernel, which then uses the declared default, or reports
 * "<op>: missing required attribute <name>" for a required one. */
int pg_kernel_attrs_default(const struct pg_kernel_def *def,
                            struct pg_attr_value attrs[PG_KERNEL_MAX_ATTRS]);

/* infer + allocate + run: outputs[0..def->n_outputs) must be pg_tensor_init'ed; on
 * PG_OK they own freshly allocated results (release with pg_tensor_reset), on error
 * they are left reset. `attrs` may be NULL (all defaults) and is in def->attrs order. */
int pg_kernel_invoke(const struct pg_kernel_def *def, const struct pg_tensor *const *inputs,
                     int n_inputs, const struct pg_attr_value *attrs, int n_attrs,
                     int n_threads, struct pg_tensor *outputs, struct pg_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_KERNELS_H */
