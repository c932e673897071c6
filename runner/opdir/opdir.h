/* phasegate runner — the opdir room (docs/design.md §2): what an op directory holds, contract
 * (module_interfaces.yaml, §3) and suite (adversarial_suite.json, §4), as plain data;
 * their loaders (contract_yaml.c + contract_schema.c, suite_json.c), the diagnostics
 * list the loaders fill, op directory resolution, dim binding and declared shapes for
 * a case, and the strict position-recording JSON scanner (json_pos.h) the suite loader
 * and the report merger share. Never generates data.
 *
 * The module graph inside a contract is goldens/' vocabulary (phasegate/op_graph.h).
 * Every string is owned by the struct that holds it and freed by pg_contract_reset()
 * / pg_suite_reset().
 */
#ifndef PHASEGATE_RUNNER_OPDIR_H
#define PHASEGATE_RUNNER_OPDIR_H

#include <stddef.h>
#include <stdint.h>

#include "phasegate/error.h"
#include "tensors/tensors.h"
#include "phasegate/op_graph.h"
#include "phasegate/tensor.h"
#include "opdir/json_pos.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* Adds an error finding to the struct pg_diags `diags` points to: the shape of
 * goldens/' pg_golden_finding_cb, so pg_goldens_validate(g, pg_diags_add_finding, &d)
 * reports into d. Returns PG_OK or PG_ENOMEM. */
int pg_diags_add_finding(void *diags, const char *file, int line, int column, const char *rule,
                         const char *message);

/* Is `text` (len bytes) an unfilled placeholder: TODO (any case, blanks around),
 * optionally in one layer of {…}, <…> or […], or followed by a non-word character
 * ("TODO: fill in")? The contract and suite loaders report such values as
 * "… is still the placeholder TODO (placeholder)". */
int pg_spec_placeholder(const char *text, size_t len);

/* ---------------------------------------------------------------- contract */

/* A Python golden found next to the contract (docs/design.md §5, opdir/golden_files.c): a
 * self-contained function of the primary inputs (contract order) returning the
 * boundary outputs of its phase, run by the Python worker, never by the runner. */
struct pg_py_golden {
  char *file;                    /* absolute path of the .py file; NULL: none found */
  char *function;                /* the function it must export (set even when file is
                                    NULL: the name that was looked for) */
  char *expected;                /* where it was looked for first, relative to the op
                                    directory ("modules/x_module12_golden.py") */
  char *stage_fn;                /* module k's `golden_stage_fn:` as written, or NULL */
  struct pg_mark stage_fn_mark;
};

/* A per-mode policy (`modes: {sim: {precision: false}}` in the contract, the suite or a
 * case): precision 0 makes the mode structure-only, its values compared and reported
 * but not gating (a simulator whose numerics mean nothing). */
struct pg_mode_policy {
  char *mode;
  int precision;                 /* 1: values gate (the default), 0: structure only */
  struct pg_mark mark;
};

/* The contract: the module graph goldens/ composes (path as given to the loader, `op`
 * or `op_name`, `dims:` defaults, primary inputs, modules, final outputs, the op-level
 * golden), reachable member by member (c->modules) or as one struct for goldens/
 * (&c->graph), plus what only the runner uses. */
struct pg_contract {
  union {
    struct {
      PG_OP_GRAPH_MEMBERS
    };
    struct pg_op_graph graph;
  };
  int schema_version;            /* 0 when absent */
  struct pg_mark op_mark;
  int has_tolerance;
  double atol, rtol;                    /* op default tolerance */
  /* composition_verification */
  int has_composition;
  double comp_atol, comp_rtol;
  uint64_t *comp_seeds;
  int n_comp_seeds;
  struct pg_bindings *comp_shapes;
  int n_comp_shapes;
  /* Python goldens (opdir/golden_files.c, filled by pg_contract_load): [0] the op-level
   * one, [k] cumulative golden k; n_py_goldens = n_modules + 1 (0 when not allocated). */
  struct pg_py_golden *py_goldens;
  int n_py_goldens;
  char *op_dir;                  /* the op directory (the parent of eval/), absolute;
                                    NULL when the contract was not loaded from a file */
  char *test_inputs;             /* the op's own input code, eval/test_inputs.py (next to
                                    the contract, or <op dir>/eval/), absolute; NULL: none,
                                    inputs come from phasegate's generator (docs/pypto.md
                                    "Inputs from make_inputs") */
  char *op_impl;                 /* the integrated impl <op dir>/<op>_impl.py, absolute;
                                    NULL: none (docs/pypto.md "The end-to-end check") */
  struct pg_mode_policy *mode_policies; /* `modes:` (a mode never requested is harmless) */
  int n_mode_policies;
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

/* Finds the Python goldens of a contract loaded from `contract_path` (pg_contract_load
 * calls it): for phase k, module k's golden_stage_fn file (Pro workflow) or
 * modules/<op>_module<suffix>_golden.py (verifier workflow); for the op level
 * <op>_golden.py / <op>_golden_cpu.py; each looked for in <op dir>/modules, next to the
 * contract and in the op directory (the parent of eval/). Warns (into diags) about a
 * golden_stage_fn whose file is missing and about every module whose phase has no
 * golden at all. PG_OK or PG_ENOMEM. (opdir/golden_files.c) */
int pg_contract_discover_py_goldens(struct pg_contract *c, const char *contract_path,
                                    struct pg_diags *diags);

/* The module (1-based id) or NULL. */
const struct pg_module *pg_contract_module(const struct pg_contract *c, int id);

/* Phase suffix "1", "12", …, "12345678910" for phase k into buf. */
void pg_phase_suffix(int k, char *buf, size_t size);

/* How golden k (k = 0: the op-level golden, else cumulative golden k) is computed: a
 * Python golden when one was found (used directly, no composition), else the built-in
 * steps / plugins of M1..Mk (k = 0: the op-level `golden:`), else none. */
enum pg_phase_golden {
  PG_PHASE_GOLDEN_NONE = 0,
  PG_PHASE_GOLDEN_BUILTIN,
  PG_PHASE_GOLDEN_PYTHON
};
enum pg_phase_golden pg_contract_phase_golden(const struct pg_contract *c, int k);
/* 1 when golden k can be composed from built-in steps / plugins (k = 0: an op-level
 * `golden:`), whether or not a Python golden exists too. */
int pg_contract_has_builtin_golden(const struct pg_contract *c, int k);
/* The Python golden of k (0: op level) when a file was found, else NULL. */
const struct pg_py_golden *pg_contract_py_golden(const struct pg_contract *c, int k);
/* Why golden k cannot be computed (for the error `run` gives before any case):
 * "module 2 'softmax' has no golden (no `golden:` steps or plugin, no
 * modules/x_module12_golden.py)". */
void pg_contract_no_golden_reason(const struct pg_contract *c, int k, char *buf, size_t size);

/* ---------------------------------------------------------------- Python files */

/* A Python file as a line scan reads it (opdir/py_scan.c, docs/pypto.md "The golden
 * lint"): its imports, its top-level functions' parameters, the derived-file header.
 * No Python runs; code built at run time (importlib, exec) is not seen. */
#define PG_PY_MAX_PARAMS 32
struct pg_py_import {
  char module[PG_NAME_MAX];      /* "torch.nn", ".x_golden" (relative: leading dots) */
  int line, column;              /* of the module name */
};
struct pg_py_param {
  char name[64];
  int has_default;
};
struct pg_py_def {
  char name[PG_NAME_MAX];
  int line, column;              /* of the function's name */
  struct pg_py_param params[PG_PY_MAX_PARAMS]; /* positional parameters, in order */
  int n_params;
  int varargs, varkw, keyword_only; /* *args, **kw, keyword-only parameters follow (a
                                    bare `*` or *args: they are not in params) */
};
struct pg_py_scan {
  struct pg_py_import *imports;
  int n_imports, cap_imports;
  struct pg_py_def *defs;        /* top-level `def`s, in file order */
  int n_defs, cap_defs;
  int header_line;               /* the leading comment saying "Derived from
                                    module_interfaces.yaml", 0: none */
};
/* Scans path into s (reset it with pg_py_scan_reset). PG_EIO (cannot read), PG_ENOMEM. */
int pg_py_scan_file(const char *path, struct pg_py_scan *s, struct pg_error *err);
void pg_py_scan_reset(struct pg_py_scan *s);
/* The top-level function `name`, or NULL. */
const struct pg_py_def *pg_py_scan_def(const struct pg_py_scan *s, const char *name);

/* ---------------------------------------------------------------- suite */

struct pg_cancellation_stress {
  int present;
  char *target;                  /* a tensor name */
  char *expression;              /* "a - b" */
  double relative_gap;
  uint64_t seed;
};

/* One entry of a case's "tolerance" map: what the case allows for one output, at every
 * boundary where an output (or inspection probe) of that name is checked. */
struct pg_output_tolerance {
  char *name;
  struct pg_mark mark;           /* of the entry's value */
  int has_atol, has_rtol;
  double atol, rtol;
  char *rule;                    /* "ulp:4", … or NULL */
};

struct pg_case {
  char *id;
  struct pg_mark mark;           /* of the case object */
  int index;                     /* position in the cases array */
  int level;                     /* 1..5 */
  int precision;                 /* 0: structural only (L1 default), 1: compare values */
  int has_precision;             /* `precision` was written (else the level's default) */
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
  struct pg_output_tolerance *tolerances; /* the case's "tolerance" map, by output name */
  int n_tolerances;
  struct pg_cancellation_stress cancellation;
  char *json;                    /* the case object as written (compact JSON), for exec
                                    requests and the report's knobs */
  struct pg_mode_policy *mode_policies; /* the case's "modes" */
  int n_mode_policies;
};

struct pg_suite {
  char *path;
  char *op;
  int total_modules;             /* 0 when absent */
  struct pg_case *cases;
  int n_cases;
  struct pg_mode_policy *mode_policies; /* the suite's top-level "modes" */
  int n_mode_policies;
};

/* The case's own tolerance for output `name`, or NULL. */
const struct pg_output_tolerance *pg_case_output_tolerance(const struct pg_case *cs,
                                                           const char *name);
void pg_output_tolerances_free(struct pg_output_tolerance *t, int n);

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

/* Where --op-dir (pg_op_paths_resolve) finds an op directory's files. */
enum pg_op_layout {
  PG_OP_LAYOUT_NONE = -1, /* no module_interfaces.yaml in dir or dir/eval */
  PG_OP_LAYOUT_FLAT = 0,  /* dir/module_interfaces.yaml */
  PG_OP_LAYOUT_PYPTO = 1  /* dir/eval/module_interfaces.yaml: the pypto workflow's
                             custom/<op>/eval/, where its runner writes the report */
};
enum pg_op_layout pg_op_dir_layout(const char *dir);

/* The op directory a command implies when given neither --op-dir nor --contract, as the
 * seed's runner run from custom/<op>/eval/ (`--suite adversarial_suite.json`, the
 * contract in ./): the directory of `suite` (NULL: none given), else the current
 * directory, holding module_interfaces.yaml. When that directory is the eval/ of a
 * pypto op directory, `dir` gets the op directory (its parent: the layout
 * PG_OP_LAYOUT_PYPTO, the report where the seed writes it), else the directory itself.
 * PG_ENOENT naming where it looked when neither holds one; PG_ELIMIT, PG_ENOMEM. */
int pg_op_dir_implied(const char *suite, char *dir, size_t size, struct pg_error *err);

/* The CLI's `--op-dir DIR | --contract FILE [--suite FILE]` rule, shared by every
 * subcommand: an explicit --contract / --suite wins over what --op-dir finds, and the
 * suite defaults to adversarial_suite.json next to the contract. PG_EINVAL when
 * neither op_dir nor contract is given, PG_ENOENT when op_dir has no contract. The
 * suite file is not checked (it may be optional for the caller). */
int pg_op_paths_resolve(const char *op_dir, const char *contract, const char *suite,
                        char *contract_path, size_t contract_size, char *suite_path,
                        size_t suite_size, struct pg_error *err);


/* ---------------------------------------------------------------- helpers */

/* pg_graph_boundary of the contract's graph: phase k's boundary output declarations. */
int pg_contract_boundary(const struct pg_contract *c, int k,
                         const struct pg_tensor_decl **decls, int max, struct pg_error *err);

/* A case's effective dtype for a declared tensor: the suite override when present,
 * else the declared dtype. `cs` may be NULL. */
enum pg_dtype pg_case_dtype(const struct pg_case *cs, const struct pg_tensor_decl *decl);

/* Whether a case key is an op knob once the op's make_inputs makes the inputs (docs/pypto.md
 * "Inputs from make_inputs"): any key phasegate does not read itself (not `_`-prefixed,
 * not documentation such as "description"), and `seed`, `fill` and `cancellation_stress`,
 * whose meaning is then the op's input code's. */
int pg_case_key_is_knob(const char *key);

/* The seed a case uses: its "seed" or a stable hash of its id (0 when cs is NULL). */
uint64_t pg_case_seed(const struct pg_case *cs);

/* Does `mode` gate on values? The nearest policy naming it wins: the case's "modes",
 * then the suite's, then the contract's (any may be NULL); 1 when none names it. When
 * `where` is given it gets "case", "suite", "contract" or "" (no policy). */
int pg_mode_precision(const struct pg_contract *c, const struct pg_suite *s,
                      const struct pg_case *cs, const char *mode, const char **where);
void pg_mode_policies_free(struct pg_mode_policy *p, int n);

/* Binds dims: contract defaults <- case "shape" overrides (cs may be NULL). Every dim
 * that a shape uses must end up bound, else PG_EVALIDATE naming it. On PG_OK `out` is
 * owned (pg_bindings_reset); on failure it is left empty. A declaration's shape under
 * the bound dims is pg_decl_shape (phasegate/op_graph.h). */
int pg_case_bind_dims(const struct pg_contract *c, const struct pg_case *cs,
                      struct pg_bindings *out, struct pg_error *err);

#ifdef __cplusplus
}
#endif
/* ---------------------------------------------------------------- fill grammar */

/* Parses a fill spec ("normal(0, 1)", "int(-3, 3) + nan(0.01)", …; docs/tensors.md)
 * into the generator's description (struct pg_fill, tensors/materialize.h). On
 * PG_EPARSE err->column is the 1-based column in `text`. (opdir/fill_spec.c) */
int pg_fill_parse(const char *text, struct pg_fill *out, struct pg_error *err);

#endif /* PHASEGATE_RUNNER_OPDIR_H */
