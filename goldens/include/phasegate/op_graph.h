/* phasegate goldens/ — the module graph a golden computation composes (docs/design.md §3, §5):
 * tensor declarations, modules with their golden specs, dim bindings and per-tensor
 * name/value overrides, as plain data, plus the I/O-free helpers over them.
 *
 * goldens/ owns this vocabulary because it composes it; runner/opdir/ builds it (the
 * contract loader) and embeds it in struct pg_contract (see PG_OP_GRAPH_MEMBERS).
 * Every string is owned by whoever built the graph; nothing here allocates except
 * pg_bindings_merge.
 */
#ifndef PHASEGATE_OP_GRAPH_H
#define PHASEGATE_OP_GRAPH_H

#include <stdint.h>

#include "phasegate/error.h"
#include "phasegate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1-based position in a source file; 0 = unknown. */
struct pg_mark {
  int line, column;
};

/* A tensor as the contract declares it: a primary input, a module input or output,
 * or a final output. Fields that do not apply to a kind are zero/NULL. */
struct pg_tensor_decl {
  char *name;
  struct pg_mark mark;           /* of the mapping that declares it */
  int ndim;                      /* -1 when the declaration has no shape (module inputs
                                    may omit it: it is the source tensor's shape) */
  char *dims[PG_MAX_NDIM];       /* one expression text per axis: "B", "S*2", "64" */
  struct pg_mark dim_marks[PG_MAX_NDIM];
  enum pg_dtype dtype;           /* PG_DTYPE_INVALID when not given */
  struct pg_mark dtype_mark;
  char *fill;                    /* primary inputs: fill spec or NULL (default normal(0,1)) */
  struct pg_mark fill_mark;
  int source_module;             /* module inputs / final outputs: 0 = primary, j = module_j */
  char *source;                  /* the source text as written ("primary", "module_1") */
  struct pg_mark source_mark;
  int has_atol, has_rtol;        /* per-output tolerance override */
  double atol, rtol;
  char *rule;                    /* per-output compare rule ("ulp:4", …) or NULL */
  struct pg_mark rule_mark;
};

enum pg_golden_kind { PG_GOLDEN_NONE = 0, PG_GOLDEN_STEPS, PG_GOLDEN_PLUGIN };

struct pg_golden_step {
  char *text;                    /* "scores = matmul(q, k, trans_b=true)" */
  struct pg_mark mark;           /* of the first character of text */
};

struct pg_golden_spec {
  enum pg_golden_kind kind;
  struct pg_golden_step *steps;
  int n_steps;
  char *plugin;                  /* symbol name for PG_GOLDEN_PLUGIN */
  struct pg_mark mark;
};

struct pg_module {
  int id;                        /* 1..N */
  char *name;
  char *description;             /* may be NULL */
  struct pg_mark mark;
  struct pg_tensor_decl *inputs;
  int n_inputs;
  struct pg_tensor_decl *outputs;
  int n_outputs;
  struct pg_golden_spec golden;
  /* Inspection probes (`inspect:`): intermediate tensors whose leading axis is the
   * iteration axis of an iterative op; the impl returns them as extra outputs
   * `inspection_<name>` after the boundary outputs, the golden computes them as the
   * module's step of that name (or a Python golden's `..._inspect`). */
  struct pg_tensor_decl *probes;
  int n_probes;
};

struct pg_dim_value {
  char *name;
  int64_t value;
  struct pg_mark mark;
};

/* A set of dim bindings (contract defaults, a case's "shape", a composition shape). */
struct pg_bindings {
  struct pg_dim_value *items;
  int count;
};

/* A per-tensor override by name (a case's dtype or fill map). */
struct pg_name_value {
  char *name;
  char *value;
  struct pg_mark mark;
};

/* The members of the module graph. struct pg_op_graph holds exactly these; a struct
 * that embeds the graph (struct pg_contract) lists them once more inside an anonymous
 * union with a struct pg_op_graph member, so c->modules and c->graph.modules are the
 * same object (the "tagged struct group" idiom, Linux's struct_group_tagged). */
#define PG_OP_GRAPH_MEMBERS                                                             \
  char *path;                            /* where it was declared, for messages */       \
  char *op;                              /* the op name */                              \
  struct pg_bindings dims;               /* default dim values (may be empty) */        \
  struct pg_tensor_decl *primary_inputs; /* in declared order */                        \
  int n_primary;                                                                        \
  struct pg_module *modules;             /* ids 1..N in order once validated */         \
  int n_modules;                                                                        \
  struct pg_tensor_decl *final_outputs;  /* name + source_module */                     \
  int n_final;                                                                          \
  struct pg_golden_spec op_golden;       /* op-level golden (composition verification) */

struct pg_op_graph {
  PG_OP_GRAPH_MEMBERS
};

/* ---------------------------------------------------------------- helpers */

/* Looks up a dim (the last binding of a name wins); returns 1 and sets *value (may be
 * NULL) when bound, else 0. `b` may be NULL. */
int pg_bindings_get(const struct pg_bindings *b, const char *name, int64_t *value);
/* out = base with every binding of `over` replacing or adding (either may be NULL).
 * On PG_OK `out` is owned: release with pg_bindings_reset. PG_ENOMEM leaves it empty. */
int pg_bindings_merge(const struct pg_bindings *base, const struct pg_bindings *over,
                      struct pg_bindings *out, struct pg_error *err);
void pg_bindings_reset(struct pg_bindings *b);

/* The module with (1-based) id, or NULL. `g` may be NULL. */
const struct pg_module *pg_graph_module(const struct pg_op_graph *g, int id);

/* The declarations of phase k's boundary outputs: module k's outputs, or for k == N
 * the final_outputs resolved to the module outputs they name (so shape and dtype are
 * set). Returns the count (<= max) or PG_EINVAL / PG_ENOTFOUND / PG_ELIMIT. */
int pg_graph_boundary(const struct pg_op_graph *g, int k, const struct pg_tensor_decl **decls,
                      int max, struct pg_error *err);

/* The dtype `decl` has under per-tensor overrides (a case's "dtype" map; `ov` may be
 * NULL): the override's dtype when one names it and parses, else the declared one. */
enum pg_dtype pg_dtype_override(const struct pg_name_value *ov, int n_ov,
                                const struct pg_tensor_decl *decl);

/* Evaluates a declaration's shape under dims. PG_EVALIDATE when it declares no shape
 * or an axis is negative, PG_ELIMIT past PG_MAX_NDIM, else the expression's error
 * ("shape of 'x', axis 1 ('S*2'): unknown dim 'S'"). */
int pg_decl_shape(const struct pg_tensor_decl *decl, const struct pg_bindings *dims, int *ndim,
                  int64_t shape[PG_MAX_NDIM], struct pg_error *err);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_OP_GRAPH_H */
