/* phasegate runner — internals shared by the suite loader's files: suite_json.c
 * (the top level, unique case ids, the public API), suite_case.c (one case
 * object: its fields checked against the contract) and suite_node.c (findings, node
 * reads), with suite_tolerance.c and mode_policy.c. All read values from the
 * position-recording scanner's tree (json_pos.h) alone.
 * Not a public interface: nothing outside runner/opdir/suite_*.c includes this.
 */
#ifndef PHASEGATE_SUITE_INTERNAL_H
#define PHASEGATE_SUITE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "opdir/opdir.h"

#define SUITE_MAX_BYTES ((size_t)64 << 20) /* a suite is a few KiB; refuse anything absurd */
#define SUITE_MAX_DEPTH 64
#define SUITE_MAX_VALUES (1 << 20)
#define SUITE_MAX_FINDINGS 1000            /* per load; then one "too many" note */
#define CASE_ID_MAX 128

/* One load: the text, its scanned tree, where findings go. */
struct pg__sload {
  const char *path;
  const char *data;
  size_t size;
  struct pg_json_pos pos;
  struct pg_diags *diags;
  int first_diag;       /* diags->count when this load started */
  int n_findings;
  int n_errors;
  int oom;
  const struct pg_contract *contract;
  struct pg_mark *id_marks; /* per loaded case: where its id is written */
  /* Fill specs already parsed without error (borrowed from the scanner's arena): big
   * suites repeat a handful of specs, and the parse only decides validity here. */
  const char *good_fills[8];
  unsigned n_good_fills;
  /* Unfilled placeholders reported ("TODO"): other findings inside them are dropped. */
  struct pg__sspan {
    int line, col, end;
  } *spans;
  int n_spans, cap_spans;
};

#define GOOD_FILLS ((unsigned)(sizeof((struct pg__sload *)0)->good_fills / sizeof(const char *)))

/* The loader reads values from the scanner's tree alone (see json_pos.h). */
static inline const struct pg_json_node *node_at(const struct pg__sload *x, int n) {
  return &x->pos.nodes[n];
}
static inline enum pg_json_type jtype(const struct pg__sload *x, int n) {
  return x->pos.nodes[n].type;
}
static inline int is_str(const struct pg__sload *x, int n) { return jtype(x, n) == PG_JSON_STRING; }
static inline int is_num(const struct pg__sload *x, int n) { return jtype(x, n) == PG_JSON_NUMBER; }
static inline int is_obj(const struct pg__sload *x, int n) { return jtype(x, n) == PG_JSON_OBJECT; }
static inline int is_bool(const struct pg__sload *x, int n) {
  return jtype(x, n) == PG_JSON_TRUE || jtype(x, n) == PG_JSON_FALSE;
}
/* Decoded string value / member key of node n (borrowed from the scanner's arena). */
static inline const char *sval(const struct pg__sload *x, int n) {
  return x->pos.keys + x->pos.nodes[n].str_off;
}
static inline const char *kstr(const struct pg__sload *x, int n) {
  return x->pos.keys + x->pos.nodes[n].key_off;
}
/* Is the key k of member node nd the literal `lit`? Lengths first (keys hold no NUL). */
#define KEY_IS(lit) (nd->key_len == sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0)

/* suite_json.c: findings, each with a rule tag, at line:col (at most
 * SUITE_MAX_FINDINGS per load, control characters shown as \xNN). */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
void pg__sfind(struct pg__sload *x, enum pg_severity sev, int line, int col, const char *rule,
               const char *fmt, ...);
/* Position of a member's key, falling back to its value (array elements). */
void pg__skey_pos(const struct pg__sload *x, int n, int *line, int *col);
/* "an object", "a string", … for node n. */
const char *pg__skind(const struct pg__sload *x, int n);
/* "<path>: expected <what>, found <kind>" at the value of node n. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void pg__stype_error(struct pg__sload *x, int n, const char *what, const char *pathfmt, ...);
/* "<path>: expected a non-negative integer, got -1" (or "found a string"). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void pg__snot_count(struct pg__sload *x, int n, const char *pathfmt, ...);
/* A number node as an exact integer (64-bit seeds survive): 1 with *neg and *mag. */
int pg__sexact_int(const struct pg__sload *x, int n, int *neg, uint64_t *mag);

/* suite_case.c: loads cases[index] (an object node) into cs; *id_mark is where its id
 * is written. */
void pg__sload_case(struct pg__sload *x, int on, int index, struct pg_case *cs,
                    struct pg_mark *id_mark);

/* suite_tolerance.c: a number >= 0 at node n (atol, rtol, relative_gap) into *out, 1; or
 * a finding naming "<path>.<key>", 0. A compare rule's text at node n: 1, or a finding. */
int pg__sread_tolerance(struct pg__sload *x, int n, const char *path, const char *key,
                        double *out);
int pg__scheck_rule(struct pg__sload *x, int n, const char *path);
/* The case's "tolerance" object (node on): output name -> {atol, rtol, rule}. */
void pg__sload_tolerance(struct pg__sload *x, int on, const char *path, struct pg_case *cs);

/* mode_policy.c: a "modes" object (node on) into a fresh array; findings name `path`. */
void pg__sload_mode_policies(struct pg__sload *x, int on, const char *path,
                             struct pg_mode_policy **out, int *n_out);

#endif
