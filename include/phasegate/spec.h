/* phasegate — the op specification: contract (module_interfaces.yaml, DESIGN.md §3)
 * and suite (adversarial_suite.json, §4) as plain data, plus their loaders and the
 * diagnostics list the loaders fill.
 *
 * The data structs are what goldens/ and runner/ consume; the loaders live in
 * runner/ (contract_yaml.c, suite_json.c). Every string is owned by the struct that
 * holds it and freed by pg_contract_reset() / pg_suite_reset().
 */
#ifndef PHASEGATE_SPEC_H
#define PHASEGATE_SPEC_H

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

/* ---------------------------------------------------------------- diagnostics */

enum pg_severity { PG_SEV_NOTE = 0, PG_SEV_WARNING = 1, PG_SEV_ERROR = 2 };

struct pg_diag {
  enum pg_severity severity;
  char *file;    /* owned */
  int line, column;
  char *message; /* owned; without the "file:line:col: error: " prefix */
  char *rule;    /* owned or NULL: "rule 2", "syntax", … printed as " (rule 2)" */
};

/* An append-only list of findings: loaders report every finding, not only the first. */
struct pg_diags {
  struct pg_diag *items;
  int count, capacity;
  int n_errors, n_warnings;
};

void pg_diags_init(struct pg_diags *d);
void pg_diags_reset(struct pg_diags *d);
/* Appends a finding. Returns PG_OK or PG_ENOMEM (the list then stays valid). */
#if defined(__GNUC__)
__attribute__((format(printf, 7, 8)))
#endif
int pg_diags_add(struct pg_diags *d, enum pg_severity sev, const char *file, int line,
                 int column, const char *rule, const char *fmt, ...);
/* Formats one finding as "file:line:col: error: message (rule)" into buf. */
void pg_diag_format(const struct pg_diag *diag, char *buf, size_t size);

/* ---------------------------------------------------------------- contract */

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

struct pg_contract {
  char *path;                    /* as given to the loader */
  int schema_version;            /* 0 when absent */
  char *op;                      /* `op` or `op_name` */
  struct pg_mark op_mark;
  struct pg_bindings dims;       /* `dims:` defaults (may be empty) */
  struct pg_tensor_decl *primary_inputs;
  int n_primary;
  struct pg_module *modules;
  int n_modules;
  struct pg_tensor_decl *final_outputs; /* name + source_module */
  int n_final;
  struct pg_golden_spec op_golden;      /* op-level golden for composition verification */
  int has_tolerance;
  double atol, rtol;                    /* op default tolerance */
  /* composition_verification */
  int has_composition;
  double comp_atol, comp_rtol;
  uint64_t *comp_seeds;
  int n_comp_seeds;
  struct pg_bindings *comp_shapes;
  int n_comp_shapes;
};

void pg_contract_init(struct pg_contract *c);
void pg_contract_reset(struct pg_contract *c);

/* Loads and validates a contract. Every finding goes to `diags` (which may already
 * hold findings). Returns PG_OK when no error was found (warnings allowed),
 * PG_EVALIDATE when the file loaded but broke a rule, PG_EPARSE on YAML syntax errors,
 * PG_ENOENT/PG_EIO when it cannot be read, PG_ENOMEM. `err` gets the first error line.
 * On any return, `c` is reset-safe. */
int pg_contract_load(const char *path, struct pg_contract *c, struct pg_diags *diags,
                     struct pg_error *err);
/* Same, from memory; `path` is used in messages only. */
int pg_contract_load_buffer(const char *path, const char *data, size_t size,
                            struct pg_contract *c, struct pg_diags *diags,
                            struct pg_error *err);

/* The module (1-based id) or NULL. */
const struct pg_module *pg_contract_module(const struct pg_contract *c, int id);

/* Phase suffix "1", "12", …, "12345678910" for phase k into buf. */
void pg_phase_suffix(int k, char *buf, size_t size);

/* ---------------------------------------------------------------- suite */

struct pg_name_value {           /* per-input override: dtype or fill */
  char *name;
  char *value;
  struct pg_mark mark;
};

struct pg_cancellation_stress {
  int present;
  char *target;                  /* a tensor name */
  char *expression;              /* "a - b" */
  double relative_gap;
  uint64_t seed;
};

struct pg_case {
  char *id;
  struct pg_mark mark;           /* of the case object */
  int index;                     /* position in the cases array */
  int level;                     /* 1..5 */
  int precision;                 /* 0: structural only (L1 default), 1: compare values */
  int has_seed;
  uint64_t seed;
  struct pg_bindings shape;      /* dim overrides */
  struct pg_name_value *dtypes;  /* input/output dtype overrides */
  int n_dtypes;
  struct pg_name_value *fills;   /* input fill overrides */
  int n_fills;
  int has_atol, has_rtol;
  double atol, rtol;
  char *rule;                    /* compare rule override ("allclose", "ulp:2", …) or NULL */
  int equal_nan;
  struct pg_cancellation_stress cancellation;
  char *json;                    /* the case object as written (compact JSON), for exec
                                    requests and the report's knobs */
};

struct pg_suite {
  char *path;
  char *op;
  int total_modules;             /* 0 when absent */
  struct pg_case *cases;
  int n_cases;
};

void pg_suite_init(struct pg_suite *s);
void pg_suite_reset(struct pg_suite *s);

/* Loads a suite and validates it, against `contract` when non-NULL (dims, dtypes,
 * input names exist; op name and module count agree). Same return and diagnostics
 * conventions as pg_contract_load. Positions are line:col where the JSON text gives
 * them; otherwise the message names the JSON path (cases[3].level). */
int pg_suite_load(const char *path, const struct pg_contract *contract, struct pg_suite *s,
                  struct pg_diags *diags, struct pg_error *err);
int pg_suite_load_buffer(const char *path, const char *data, size_t size,
                         const struct pg_contract *contract, struct pg_suite *s,
                         struct pg_diags *diags, struct pg_error *err);

/* Finds module_interfaces.yaml and adversarial_suite.json in dir or dir/eval.
 * Writes absolute-or-as-given paths into the buffers (suite_path may be NULL). */
int pg_op_dir_resolve(const char *dir, char *contract_path, size_t contract_size,
                      char *suite_path, size_t suite_size, struct pg_error *err);

/* The CLI's `--op-dir DIR | --contract FILE [--suite FILE]` rule, shared by every
 * subcommand: an explicit --contract / --suite wins over what --op-dir finds, and the
 * suite defaults to adversarial_suite.json next to the contract. PG_EINVAL when
 * neither op_dir nor contract is given, PG_ENOENT when op_dir has no contract. The
 * suite file is not checked (it may be optional for the caller). */
int pg_op_paths_resolve(const char *op_dir, const char *contract, const char *suite,
                        char *contract_path, size_t contract_size, char *suite_path,
                        size_t suite_size, struct pg_error *err);


/* ---------------------------------------------------------------- helpers */

/* Looks up a dim; returns 1 and sets *value when bound, else 0. */
int pg_bindings_get(const struct pg_bindings *b, const char *name, int64_t *value);
/* out = base with every binding of `over` replacing or adding (either may be NULL).
 * On PG_OK `out` is owned: release with pg_bindings_reset. */
int pg_bindings_merge(const struct pg_bindings *base, const struct pg_bindings *over,
                      struct pg_bindings *out, struct pg_error *err);
void pg_bindings_reset(struct pg_bindings *b);

/* The declarations of phase k's boundary outputs: module k's outputs, or for k == N
 * the final_outputs resolved to the module outputs they name (so shape and dtype are
 * set). Returns the count (<= max) or a negative PG_E* code. */
int pg_contract_boundary(const struct pg_contract *c, int k,
                         const struct pg_tensor_decl **decls, int max, struct pg_error *err);

/* A case's effective dtype for a declared tensor: the suite override when present,
 * else the declared dtype. `cs` may be NULL. */
enum pg_dtype pg_case_dtype(const struct pg_case *cs, const struct pg_tensor_decl *decl);

#ifdef __cplusplus
}
#endif
#endif /* PHASEGATE_SPEC_H */
