/* phasegate runner — internals shared by the contract loader's two halves:
 * contract_yaml.c turns YAML text into a small position-carrying node tree (libyaml
 * events, with depth, size and alias-expansion limits), contract_schema.c walks that
 * tree into struct pg_contract and applies DESIGN.md §3 rules 1–8.
 * Not a public interface: nothing outside runner/contract_*.c includes this.
 */
#ifndef PHASEGATE_CONTRACT_INTERNAL_H
#define PHASEGATE_CONTRACT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "spec/spec.h"

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

struct pg__cctx {
  const char *path;
  struct pg__finding *items;
  int count, capacity;
  int n_errors;
  int dropped;             /* findings past PG__CONTRACT_MAX_FINDINGS */
  int oom;                 /* sticky: an allocation failed somewhere */
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

/* Walks x->root into c, adding findings. */
void pg__contract_from_tree(struct pg__cctx *x, struct pg_contract *c);

#endif
