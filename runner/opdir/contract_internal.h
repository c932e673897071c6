/* phasegate runner — internals shared by the contract loader: contract_yaml.c turns
 * YAML text into a small position-carrying node tree (libyaml events, with depth, size
 * and alias-expansion limits); the schema walks that tree into struct pg_contract and
 * applies docs/design.md §3 rules 1–8: contract_nodes.c reads nodes as schema values (keys,
 * strings, numbers, names), contract_decls.c tensor declarations and their shapes,
 * contract_schema.c the sections, goldens and cross-module rules.
 * Not a public interface: nothing outside runner/opdir/contract_*.c includes this.
 */
#ifndef PHASEGATE_CONTRACT_INTERNAL_H
#define PHASEGATE_CONTRACT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opdir/opdir.h"

/* Limits that keep hostile files from hanging the loader or exhausting memory. */
#define PG__CONTRACT_MAX_BYTES ((size_t)64 << 20) /* 64 MiB */
#define PG__YAML_MAX_DEPTH 64                     /* nested sequences/mappings */
#define PG__YAML_MAX_NODES 1000000                /* nodes as written */
#define PG__YAML_MAX_EXPANDED 4000000             /* nodes after alias expansion */
#define PG__CONTRACT_MAX_FINDINGS 1000            /* further findings are dropped */

enum pg__ynode_kind { PG__Y_SCALAR = 0, PG__Y_SEQ, PG__Y_MAP };

struct pg__ynode {
  enum pg__ynode_kind kind;
  int line, column;        /* 1-based start of the node (of the quote for quoted scalars) */
  int plain;               /* scalar: plain style and no explicit tag (so 1 is an int) */
  int quoted;              /* scalar: single- or double-quoted (text starts one column on) */
  int flow;                /* sequence/mapping: written in flow style ([...] or {...}) */
  int single_line;         /* scalar: starts and ends on the same line */
  char *value;             /* scalar text, NUL-terminated (may contain NULs via escapes) */
  size_t len;
  struct pg__ynode **kids; /* sequence items; mapping keys and values alternating */
  int n_kids, cap_kids;
  uint64_t weight;         /* nodes in the subtree once aliases are expanded */
};

/* Findings collected by both halves, sorted by position before they reach the caller. */
struct pg__finding {
  enum pg_severity severity;
  int line, column;
  int rule;                /* 1..8, or 0 for none */
  int seq;                 /* insertion order, the sort tie-breaker */
  char *message;
};

struct pg__arena;

/* The `rule` of a placeholder finding: printed "(placeholder)", not "(rule N)". */
#define PG__RULE_PLACEHOLDER 100

/* Where a placeholder's text is: other findings inside it are dropped. */
struct pg__span {
  int line, column, end;
};

struct pg__cctx {
  const char *path;
  struct pg__finding *items;
  int count, capacity;
  int n_errors;
  int dropped;             /* findings past PG__CONTRACT_MAX_FINDINGS */
  int oom;                 /* sticky: an allocation failed somewhere */
  struct pg__span *spans;  /* placeholders reported (contract_placeholder.c) */
  int n_spans, cap_spans;
  /* the node tree */
  struct pg__arena *arena; /* every node, scalar text and child array, freed at once */
  int n_nodes;
  struct pg__ynode *root;
};

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
void pg__cfind(struct pg__cctx *x, enum pg_severity sev, int line, int column, int rule,
               const char *fmt, ...);

/* Builds x->root from YAML text. Returns PG_OK, PG_EPARSE (syntax error or a limit,
 * reported as a rule 8 finding) or PG_ENOMEM. An empty stream leaves root NULL. */
int pg__yaml_build(struct pg__cctx *x, const char *data, size_t size);
void pg__yaml_free(struct pg__cctx *x);
/* Memory from the tree's arena (freed with the tree); NULL when out of memory. */
void *pg__yarena_alloc(struct pg__cctx *x, size_t size);
/* contract_merge.c: a closed mapping as PyYAML constructs it: `_` comment keys
 * dropped, duplicate explicit keys reported, merge keys (<<) expanded. PG_OK,
 * PG_EPARSE (a limit) or PG_ENOMEM. */
int pg__ymap_finish(struct pg__cctx *x, struct pg__ynode *map);

/* contract_placeholder.c: reports every unfilled placeholder (an empty document,
 * TODO, {TODO}, values and keys left TODO); 1 when the whole document is one (the
 * schema then has nothing to read). */
int pg__contract_placeholders(struct pg__cctx *x);
/* Is line:column inside a reported placeholder's text? */
int pg__in_placeholder(const struct pg__cctx *x, int line, int column);

/* Walks x->root into c, adding findings. */
void pg__contract_from_tree(struct pg__cctx *x, struct pg_contract *c);

/* ------------------------------------------------------------------ the schema walk */

/* Entries per list (modules, inputs, outputs, steps, …): far above any real contract,
 * low enough that the name lookups stay fast on hostile files. */
#define PG__CONTRACT_MAX_LIST 1024

struct pg__sctx {
  struct pg__cctx *x;
  struct pg_contract *c;
  int has_dims;             /* the contract has a dims: section */
  char dims_list[256];      /* "B, H, S, D" for messages */
  char **noted;             /* dim names already given the "no default" note */
  int n_noted;
  struct pg_mark *id_marks; /* per module: where its id is written */
};

/* Findings at a node or position, in a function with `struct pg__sctx *s` in scope. */
#define PG__ERR(node, rule, ...) \
  pg__cfind(s->x, PG_SEV_ERROR, (node)->line, (node)->column, (rule), __VA_ARGS__)
#define PG__ERR_AT(line, col, rule, ...) \
  pg__cfind(s->x, PG_SEV_ERROR, (line), (col), (rule), __VA_ARGS__)
#define PG__WARN(node, ...) \
  pg__cfind(s->x, PG_SEV_WARNING, (node)->line, (node)->column, 0, __VA_ARGS__)

static inline const char *pg__ykind_name(const struct pg__ynode *n) {
  return n->kind == PG__Y_SCALAR ? "a scalar" : n->kind == PG__Y_SEQ ? "a sequence" : "a mapping";
}

/* A YAML null: absent, empty, ~ or null. */
static inline int pg__ynull(const struct pg__ynode *n) {
  if (!n) return 1;
  if (n->kind != PG__Y_SCALAR || !n->plain) return 0;
  return n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
         strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0;
}

/* Column of the first character of a scalar's text (after an opening quote). */
static inline int pg__ytext_column(const struct pg__ynode *n) {
  return n->column + (n->quoted ? 1 : 0);
}

/* contract_nodes.c: reading nodes. Each reports its own finding and returns 0 (or
 * NULL) when the node is not what the schema wants; allocation failures set
 * s->x->oom. `what` names the node in messages ("the dtype of input 'q'"). */
const struct pg__ynode *pg__ymap_get(const struct pg__ynode *map, const char *key);
char *pg__sdup(struct pg__sctx *s, const char *v);
void *pg__scalloc(struct pg__sctx *s, size_t n, size_t size);
/* Warns about every key of map that is neither allowed nor a known pypto key (kid
 * indexes [skip_from, skip_to) excepted), suggesting the allowed key a typo meant. */
void pg__check_keys_skip(struct pg__sctx *s, const struct pg__ynode *map,
                         const char *const *allowed, const char *what, int skip_from,
                         int skip_to);
void pg__check_keys(struct pg__sctx *s, const struct pg__ynode *map,
                    const char *const *allowed, const char *what);
/* '(' minus ')' in v. */
int pg__paren_balance(const char *v);
/* A flow mapping value YAML split at commas inside parentheses, joined back (owned),
 * with the consumed kid range in [*from, *to); NULL when there is nothing to join. */
char *pg__rejoin_flow_split(struct pg__sctx *s, const struct pg__ynode *map, const char *key,
                            int *from, int *to);
int pg__want(struct pg__sctx *s, const struct pg__ynode *n, enum pg__ynode_kind kind,
             const char *what);
int pg__get_str(struct pg__sctx *s, const struct pg__ynode *n, const char *what, char **out);
int pg__get_int(struct pg__sctx *s, const struct pg__ynode *n, const char *what, int64_t *out);
int pg__get_num(struct pg__sctx *s, const struct pg__ynode *n, const char *what, double *out);
int pg__valid_name(const char *v);       /* [A-Za-z0-9_.-]+ */
int pg__valid_identifier(const char *v); /* a C identifier */
/* Rule 7: names become file and test names. */
void pg__check_name(struct pg__sctx *s, const struct pg__ynode *n, const char *what,
                    const char *name);
/* The required `name` key of map into *out (owned), checked. */
int pg__get_name(struct pg__sctx *s, const struct pg__ynode *map, const char *what, char **out);
/* The op named by the contract's directory, custom/<op>/ or custom/<op>/eval/ (the
 * pypto layouts): 1 with the name in out, else 0. */
int pg__op_from_path(const char *path, char *out, size_t size);
/* A sequence's entry count, capped at PG__CONTRACT_MAX_LIST (0 on a finding). */
int pg__list_len(struct pg__sctx *s, const struct pg__ynode *n, const char *what);

/* The value of a dim (an integer >= 0, rule 5) named `what` ("dim 'B'"): 1 with
 * *val, 0 after a finding. (contract_schema.c) */
int pg__dim_value(struct pg__sctx *s, const char *what, const struct pg__ynode *v, int64_t *val);
/* contract_comp.c: the composition_verification section, shapes in every real form. */
void pg__parse_composition(struct pg__sctx *s, const struct pg__ynode *n);
/* mode_policy.c: the top-level `modes:` (per-mode policies) into s->c. */
void pg__parse_mode_policies(struct pg__sctx *s, const struct pg__ynode *n);

/* contract_decls.c: a list of tensor declarations of one kind, with their shapes. */
enum pg__decl_kind { PG__D_PRIMARY, PG__D_INPUT, PG__D_OUTPUT, PG__D_FINAL };
void pg__parse_decls(struct pg__sctx *s, const struct pg__ynode *n, enum pg__decl_kind kind,
                     const char *list_what, const char *prefix, const char *suffix,
                     struct pg_tensor_decl **out, int *n_out);

#endif
