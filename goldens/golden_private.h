/* phasegate goldens/ — internal interfaces shared by steps.c (step parser, validator,
 * step execution), compose.c (the named-tensor table, cumulative and op-level goldens)
 * and plugin.c (golden libraries). Not installed; tests include it to reach the parser
 * and to run composition with their own mini-kernels.
 */
#ifndef PHASEGATE_GOLDEN_PRIVATE_H
#define PHASEGATE_GOLDEN_PRIVATE_H

#include "phasegate/goldens.h"

/* ---------------------------------------------------------------- step parser */

#define PG__STEP_VALUE_MAX 256
#define PG__STEP_OP_MAX 64

enum pg__value_kind {
  PG__VAL_EXPR = 1, /* bare text: an expression, or a bare word (true, tanh) */
  PG__VAL_STRING,   /* "quoted" or 'quoted' */
  PG__VAL_LIST      /* [a, b, c]: each element an expression */
};

struct pg__step_attr {
  char key[PG__STEP_OP_MAX];
  int key_offset;                      /* 0-based offsets into the step text */
  enum pg__value_kind kind;
  char value[PG__STEP_VALUE_MAX];      /* EXPR/STRING: the text; LIST: unused */
  int value_offset;
  int n_items;                         /* LIST */
  char items[PG_MAX_NDIM][PG__STEP_OP_MAX];
  int item_offsets[PG_MAX_NDIM];
};

/* One parsed step `a, b = op(x, y, key=value)`. */
struct pg__step {
  int n_outs;
  char outs[PG_KERNEL_MAX_OUTPUTS][PG_NAME_MAX];
  int out_offsets[PG_KERNEL_MAX_OUTPUTS];
  char op[PG__STEP_OP_MAX];
  int op_offset;
  int n_inputs;
  char inputs[PG_KERNEL_MAX_INPUTS][PG_NAME_MAX];
  int input_offsets[PG_KERNEL_MAX_INPUTS];
  int n_attrs;
  struct pg__step_attr attrs[PG_KERNEL_MAX_ATTRS];
};

/* Parses one step. On PG_EPARSE, err->column is the 1-based column inside `text`
 * and the message says what was expected (no position prefix). */
int pg__step_parse(const char *text, struct pg__step *out, struct pg_error *err);

/* ---------------------------------------------------------------- kernel source */

/* Where kernels come from: the built-in table by default; tests pass their own. */
struct pg__kernel_source {
  const struct pg_kernel_def *(*find)(const char *name);
  int (*list)(const struct pg_kernel_def *const **defs);
};

/* ---------------------------------------------------------------- tensor table */

/* A named tensor visible to goldens. module: 0 = primary input, j = output of module j,
 * -1 = step-local of the module being computed. */
struct pg__gtensor {
  char name[PG_NAME_MAX];
  int module;
  struct pg_tensor t;          /* execution: the value, reference precision for floats */
  struct pg_tensor_meta meta;  /* validation: shape and dtype */
  int known;                   /* validation: meta is known (every dim bound) */
};

/* Buffers released during one composition call, handed out again to later
 * allocations of a similar size (each keeps its own release function), so a
 * multi-module golden touches fresh pages only for its peak working set. */
#define PG__POOL_MAX 16
struct pg__pool {
  int n;
  struct {
    void *p;
    size_t cap;
    void (*release)(struct pg_tensor *);
    void *release_ctx;
  } items[PG__POOL_MAX];
};

/* Gives t's buffer to the pool (or frees it when the pool is full or t is a view)
 * and leaves t empty. pool NULL: pg_tensor_reset. */
void pg__pool_put(struct pg__pool *pool, struct pg_tensor *t);
/* Frees every pooled buffer. */
void pg__pool_drain(struct pg__pool *pool);

struct pg__gtable {
  struct pg__gtensor **items;
  int count, cap;
  struct pg__pool *pool; /* NULL: dropped entries are freed at once */
};

void pg__gtable_init(struct pg__gtable *tab);
void pg__gtable_reset(struct pg__gtable *tab);
/* Appends a new (initialised, empty) entry; *out points to it. */
int pg__gtable_add(struct pg__gtable *tab, const char *name, int module,
                   struct pg__gtensor **out, struct pg_error *err);
/* Removes the step-locals (module == -1). */
void pg__gtable_drop_locals(struct pg__gtable *tab);
/* Makes the step-locals named by module m's outputs into module m's outputs and drops
 * the rest. */
void pg__gtable_promote(struct pg__gtable *tab, const struct pg_module *m);
/* Resolves a name as a step of module m sees it (m NULL: the op-level golden):
 * step-locals (latest first), then m's declared input of that name through its
 * source, then a primary input, then the latest earlier module's output. */
struct pg__gtensor *pg__gtable_resolve(const struct pg__gtable *tab, const struct pg_module *m,
                                       const char *name);

/* pg_tensor_alloc, but buffers of 2 MiB and more are 2 MiB-aligned and advised as
 * transparent huge pages: first-touch page faults of fresh multi-MB goldens otherwise
 * cost as much as a good part of the matmul. Freed by pg_tensor_reset as usual. */
int pg__golden_alloc(struct pg_tensor *t, enum pg_dtype dtype, int ndim, const int64_t *shape,
                     struct pg_error *err);
/* pg__golden_alloc, taking a pooled buffer of between the size and twice it (plus a
 * page) when pool has one. Contents are unspecified either way. */
int pg__golden_alloc_from(struct pg__pool *pool, struct pg_tensor *t, enum pg_dtype dtype,
                          int ndim, const int64_t *shape, struct pg_error *err);

/* ---------------------------------------------------------------- step execution */

struct pg__run_ctx {
  const struct pg_op_graph *graph;
  const struct pg_bindings *dims;
  int precision_bits;
  int n_threads;
  const struct pg__kernel_source *ks;
  struct pg__pool *pool; /* step outputs are allocated from it (NULL: none) */
  /* Liveness across the phase, for steps that may write over their input (NULL:
   * never): does a module after `module` (up to the phase) read g, or is g a
   * boundary output? */
  int (*read_later)(const void *live, const struct pg__gtensor *g, int module);
  const void *live;
};

/* Runs golden steps g for module m (NULL: op level), adding step-locals to tab.
 * Errors carry the step's file:line:col. */
int pg__steps_run(const struct pg__run_ctx *rc, const struct pg_module *m,
                  const struct pg_golden_spec *g, struct pg__gtable *tab, struct pg_error *err);

/* The same checks as pg_goldens_validate with an explicit kernel source. */
int pg__goldens_validate_ks(const struct pg_op_graph *c, const struct pg__kernel_source *ks,
                            pg_golden_finding_cb cb, void *user);

/* Cumulative and op-level goldens with an explicit kernel source (NULL = built-in). */
int pg__golden_cumulative_ks(const struct pg_golden_env *env, const struct pg__kernel_source *ks,
                             int k, const struct pg_tensor *primary, int n_primary,
                             struct pg_tensor *outputs, int *n_outputs, struct pg_error *err);
int pg__golden_op_level_ks(const struct pg_golden_env *env, const struct pg__kernel_source *ks,
                           const struct pg_tensor *primary, int n_primary,
                           struct pg_tensor *outputs, int *n_outputs, struct pg_error *err);

/* ---------------------------------------------------------------- plugins */

/* Calls golden plugin `symbol` from `lib` (pg_golden_lib_open) on tensors the caller
 * allocated (floats in the reference precision). Floating outputs are prefilled with a
 * canary NaN; an element still holding it afterwards, a changed shape/dtype/data
 * pointer or a non-zero return is an error naming the symbol. */
int pg__golden_plugin_call(void *lib, const char *symbol, const char *op, int module_id,
                           const char *module_name, int precision_bits,
                           const struct pg_bindings *dims, struct pg_tensor *const *inputs,
                           int n_inputs, struct pg_tensor *const *outputs, int n_outputs,
                           struct pg_error *err);
/* The path a library was opened from (for messages). */
const char *pg__golden_lib_path(const void *lib);

#endif
