/* phasegate goldens/ — internal interfaces between the step parser (parse.c), the
 * compiled expressions (expr.c), the golden plan (plan.c, plan_attrs.c), validation
 * (validate.c), step execution (steps.c), the named-tensor table and buffers
 * (gtable.c), composition (compose.c) and golden libraries (plugin.c). Not installed;
 * tests include it to reach the parser and to run composition with their own
 * mini-kernels.
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

/* One parsed step `a, b = op(x, y, key=value)` (or `a = x - y`: op "sub"). */
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
 * and the message says what was expected (no position prefix); what was read before
 * the error (the outputs, say) is left in *out. */
int pg__step_parse(const char *text, struct pg__step *out, struct pg_error *err);

/* Lexical helpers shared with the plan: a name start ([A-Za-z_]); the end of a name at
 * i (== i when none; tensor names may hold '-' inside); a bounded copy (-1 when len
 * does not fit in size). */
int pg__is_name_start(int ch);
int pg__scan_name(const char *s, int i, int allow_dash);
int pg__copy_token(char *dst, size_t size, const char *src, int len);

/* ---------------------------------------------------------------- compiled expressions */

/* A float (is_float) or shape expression compiled once and evaluated per set of dims
 * with exactly the semantics and messages of pg_float_expr_eval / pg_shape_expr_eval.
 * Compile errors are those of the check functions (err->column inside the text). */
struct pg__expr;
int pg__expr_compile(const char *text, int is_float, struct pg__expr **out,
                     struct pg_error *err);
int pg__expr_eval_float(const struct pg__expr *e, const struct pg_bindings *dims, double *out,
                        struct pg_error *err);
const char *pg__expr_text(const struct pg__expr *e);
void pg__expr_free(struct pg__expr *e);

/* ---------------------------------------------------------------- kernel source */

/* Where kernels come from: the built-in table by default; tests pass their own. */
struct pg__kernel_source {
  const struct pg_kernel_def *(*find)(const char *name);
  int (*list)(const struct pg_kernel_def *const **defs);
};

/* ---------------------------------------------------------------- the plan */

/* A problem with a step: code (0 = none), 0-based offset in the step text, message
 * without position (owned). */
struct pg__problem {
  int code;
  int offset;
  char *message;
};

/* One declared attribute of a step's kernel, compiled. */
enum pg__attr_how {
  PG__ATTR_VALUE = 0, /* value holds it: a default, a word, true/false */
  PG__ATTR_EXPR,      /* expr[0], converted to the declared type at evaluation */
  PG__ATTR_LIST       /* expr[0..n): an int list */
};

struct pg__attr_plan {
  enum pg__attr_how how;
  struct pg_attr_value value;          /* VALUE: the value; else only its type */
  int n;
  struct pg__expr *expr[PG_MAX_NDIM];
  int offset[PG_MAX_NDIM];             /* of each expression in the step text */
};

/* What can be wrong with a step, in the order it is checked (and reported). */
enum pg__problem_kind {
  PG__P_PARSE = 0, /* the step does not parse (nothing else is set) */
  PG__P_OP,        /* unknown op, with close names */
  PG__P_N_IN,      /* tensor argument count */
  PG__P_N_OUT,     /* output count */
  PG__P_INPUT,     /* the first argument that resolves to nothing */
  PG__P_SYNTAX,    /* an attribute expression does not parse */
  PG__P_ATTRS,     /* unknown, missing or ill-typed attributes */
  PG__P_COUNT
};

/* One compiled step. */
struct pg__pstep {
  struct pg_golden_plan_step pub;      /* first: what pg_golden_plan_step returns; its
                                          problem is the first recorded one */
  const struct pg_golden_step *src;
  int op_offset;
  int out_offsets[PG_KERNEL_MAX_OUTPUTS];
  int input_offsets[PG_KERNEL_MAX_INPUTS];
  char *names;                         /* op, outputs and inputs, NUL-separated (owned) */
  struct pg__problem problem[PG__P_COUNT];
  int n_attrs;                         /* declared attributes of pub.kernel */
  struct pg__attr_plan *attr;          /* n_attrs of them, in declaration order */
};

/* The first problem recorded for a step, or NULL when it can run. */
const struct pg__problem *pg__pstep_problem(const struct pg__pstep *ps);

/* A module's golden (or the op level's), compiled. */
struct pg__pspec {
  const struct pg_module *m;           /* NULL: the op level */
  const struct pg_golden_spec *g;
  struct pg__pstep *steps;
  int n_steps;                         /* 0 unless g->kind == PG_GOLDEN_STEPS */
  struct pg_golden_source *inputs;     /* m's declared inputs, resolved (plugins) */
};

struct pg_golden_plan {
  const struct pg_op_graph *graph;
  const struct pg__kernel_source *ks;
  struct pg__pspec *mods;              /* graph->n_modules, in graph order */
  struct pg__pspec op;                 /* the op-level golden */
};

/* pg_goldens_validate with an explicit kernel source (NULL = built-in). */
int pg__goldens_validate_ks(const struct pg_op_graph *g, const struct pg__kernel_source *ks,
                            pg_golden_finding_cb cb, void *user);
/* pg_golden_plan_build with an explicit kernel source (NULL = built-in). */
int pg__golden_plan_build_ks(const struct pg_op_graph *g, const struct pg__kernel_source *ks,
                             struct pg_golden_plan **out, struct pg_error *err);
/* Compiles golden g of module m (NULL: op level) of graph into *out (zeroed first);
 * PG_OK or PG_ENOMEM. Release with pg__pspec_reset. */
int pg__pspec_build(const struct pg_op_graph *graph, const struct pg__kernel_source *ks,
                    const struct pg_module *m, const struct pg_golden_spec *g,
                    struct pg__pspec *out, struct pg_error *err);
void pg__pspec_reset(struct pg__pspec *ps);
/* The compiled golden of module id (0: op level), or NULL. */
const struct pg__pspec *pg__plan_spec(const struct pg_golden_plan *p, int module_id);

/* Compiles step st's attributes for its kernel into ps (plan_attrs.c): sets
 * ps->syntax (any expression that does not parse, kernel or not) and, with a kernel,
 * ps->n_attrs, ps->attr and ps->attrs. PG_OK or PG_ENOMEM. */
int pg__pstep_compile_attrs(struct pg__pstep *ps, const struct pg__step *st);
void pg__pstep_free_attrs(struct pg__pstep *ps);
/* Evaluates the compiled attributes under dims into vals (declaration order; the
 * step has no attrs problem). On failure err says why (no position) and *offset where
 * (0-based in the step text); *unbound (may be NULL) is set when an expression used an
 * unbound dim (PG_ENOTFOUND; validation skips those). */
int pg__pstep_eval_attrs(const struct pg__pstep *ps, const struct pg_bindings *dims,
                         struct pg_attr_value *vals, int *offset, int *unbound,
                         struct pg_error *err);

/* What a step argument that resolves to nothing is called (validation reports every
 * such argument; running a step stops at the first). */
#define PG__UNKNOWN_TENSOR_FMT                                                             \
  "unknown tensor '%s' (not a primary input, an earlier module's output or an earlier "  \
  "step's output)"

/* Sets problem pr (code, offset, a formatted message); PG_OK or PG_ENOMEM. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int pg__problem_set(struct pg__problem *pr, int code, int offset, const char *fmt, ...);

/* The kernel's message without a leading "<op>: " (kernels name themselves; callers
 * add the op once). */
const char *pg__strip_op(const char *msg, const char *op);

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
/* Removes entry i (its buffer goes to the pool). */
void pg__gtable_remove_at(struct pg__gtable *tab, int i);
/* Makes the step-locals named by module m's outputs into module m's outputs and drops
 * the rest. */
void pg__gtable_promote(struct pg__gtable *tab, const struct pg_module *m);
/* The latest entry of `module` (-1: step-locals) called name, or NULL. */
struct pg__gtensor *pg__gtable_find(const struct pg__gtable *tab, int module, const char *name);
/* The entry a resolved argument names: a step-local, a primary input or module output. */
struct pg__gtensor *pg__gtable_source(const struct pg__gtable *tab,
                                      const struct pg_golden_source *src, const char *name);

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
  struct pg__pool *pool; /* step outputs are allocated from it (NULL: none) */
  /* Liveness across the phase, for steps that may write over their input (NULL:
   * never): does a module after `module` (up to the phase) read g, or is g a
   * boundary output? */
  int (*read_later)(const void *live, const struct pg__gtensor *g, int module);
  const void *live;
  const struct pg_golden_mutation *mut; /* applied to its step of this module (NULL: none) */
  /* Step-locals whose values must survive the module (inspection probes): never
   * overwritten in place by a later step. */
  const char *const *keep;
  int n_keep;
};

/* Applies mut to the arguments of step ps (mutate.c): attributes changed in args, or
 * inputs replaced by modified copies held in tmp[0..PG_KERNEL_MAX_INPUTS) (the caller
 * resets them after the kernel ran); *run_override set when the kernel itself is
 * replaced (PG_MUT_ACCUMULATE, PG_MUT_FAST_EXP: call pg__mutation_run instead).
 * PG_ENOTSUP when it does not apply to these shapes. */
int pg__mutation_apply(const struct pg_golden_mutation *mut, const struct pg__pstep *ps,
                       struct pg_kernel_args *args, struct pg_tensor *tmp, int *run_override,
                       struct pg_error *err);
/* The replaced kernel of PG_MUT_ACCUMULATE (a plain matmul with that summation order)
 * or PG_MUT_FAST_EXP (exp / sigmoid / silu / softmax with a fast exp). */
int pg__mutation_run(const struct pg_golden_mutation *mut, const struct pg_kernel_args *args,
                     struct pg_tensor *const *outs, struct pg_error *err);

/* Runs the compiled steps of ps (module ps->m, NULL: op level), adding step-locals to
 * tab. Errors carry the step's file:line:col. */
int pg__steps_run(const struct pg__run_ctx *rc, const struct pg__pspec *ps,
                  struct pg__gtable *tab, struct pg_error *err);
/* Does a step of ps after step s read a tensor called `name` (a step that did not
 * parse: yes, to be safe)? s = -1: any step. */
int pg__pspec_reads(const struct pg__pspec *ps, int s, const char *name);

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

#endif
