/* phasegate runner — the suite loader's shared steps (docs/design.md §4): recording a
 * finding at a node's position, and reading a node's kind, key position and exact
 * integer value. suite_json.c (the top level), suite_case.c (one case),
 * suite_tolerance.c and mode_policy.c all call these; this file calls none of them.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdir/suite_internal.h"

/* ---------------------------------------------------------------- findings */

void pg__sfind(struct pg__sload *x, enum pg_severity sev, int line, int col, const char *rule,
               const char *fmt, ...) {
  if (sev == PG_SEV_ERROR) x->n_errors++;
  /* one finding per placeholder: not also "unknown dtype \"TODO\"" */
  for (int i = 0; i < x->n_spans && !(rule && strcmp(rule, "placeholder") == 0); i++)
    if (x->spans[i].line == line && col >= x->spans[i].col && col <= x->spans[i].end) return;
  if (x->n_findings > SUITE_MAX_FINDINGS) return;
  char msg[PG_ERROR_MESSAGE_MAX];
  if (x->n_findings == SUITE_MAX_FINDINGS) {
    snprintf(msg, sizeof msg, "too many findings; the rest are not shown");
    sev = PG_SEV_NOTE;
    rule = NULL;
  } else {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
  }
  /* Quoted keys and values may hold control characters (written as \u escapes):
   * show them as \xNN so a message can never drive the terminal. */
  char safe[PG_ERROR_MESSAGE_MAX];
  size_t k = 0;
  for (const unsigned char *m = (const unsigned char *)msg; *m && k + 5 < sizeof safe; m++) {
    if (*m < 0x20 || *m == 0x7f)
      k += (size_t)snprintf(safe + k, sizeof safe - k, "\\x%02X", *m);
    else
      safe[k++] = (char)*m;
  }
  safe[k] = '\0';
  x->n_findings++;
  if (pg_diags_add(x->diags, sev, x->path, line, col, rule, "%s", safe) != PG_OK) x->oom = 1;
}

/* Position of a member's key, falling back to its value (array elements). */
void pg__skey_pos(const struct pg__sload *x, int n, int *line, int *col) {
  const struct pg_json_node *nd = node_at(x, n);
  *line = nd->key_line ? nd->key_line : nd->line;
  *col = nd->key_line ? nd->key_col : nd->col;
}

const char *pg__skind(const struct pg__sload *x, int n) {
  switch (jtype(x, n)) {
    case PG_JSON_OBJECT: return "an object";
    case PG_JSON_ARRAY: return "an array";
    case PG_JSON_STRING: return "a string";
    case PG_JSON_NUMBER: return "a number";
    case PG_JSON_TRUE:
    case PG_JSON_FALSE: return "a boolean";
    case PG_JSON_NULL: return "null";
  }
  return "an invalid value";
}

/* "<path>: expected <what>, found <kind>" at the value of node n. */
void pg__stype_error(struct pg__sload *x, int n, const char *what,
                     const char *pathfmt, ...) {
  char path[256];
  va_list ap;
  va_start(ap, pathfmt);
  vsnprintf(path, sizeof path, pathfmt, ap);
  va_end(ap);
  pg__sfind(x, PG_SEV_ERROR, node_at(x, n)->line, node_at(x, n)->col, "type",
            "%s: expected %s, found %s", path, what, pg__skind(x, n));
}

/* "<path>: expected a non-negative integer, got -1" (or "found a string"). */
void pg__snot_count(struct pg__sload *x, int n, const char *pathfmt, ...) {
  char path[256];
  va_list ap;
  va_start(ap, pathfmt);
  vsnprintf(path, sizeof path, pathfmt, ap);
  va_end(ap);
  const struct pg_json_node *nd = node_at(x, n);
  if (is_num(x, n))
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
              "%s: expected a non-negative integer, got %.*s", path,
              (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
  else
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
              "%s: expected a non-negative integer, found %s", path, pg__skind(x, n));
}

/* Reads a number node as an exact integer. Plain digit strings are parsed from the
 * text (so 64-bit seeds survive); other spellings must be integral doubles < 2^53.
 * Returns 1 and sets *neg / *mag on success, 0 when not an integer. */
int pg__sexact_int(const struct pg__sload *x, int n, int *neg, uint64_t *mag) {
  const struct pg_json_node *nd = node_at(x, n);
  const char *t = x->data + nd->off;
  size_t len = nd->len, i = 0;
  *neg = 0;
  if (len && t[0] == '-') {
    *neg = 1;
    i = 1;
  }
  int plain = i < len;
  for (size_t k = i; k < len; k++)
    if (t[k] < '0' || t[k] > '9') plain = 0;
  if (plain) {
    uint64_t m = 0;
    for (size_t k = i; k < len; k++) {
      uint64_t d = (uint64_t)(t[k] - '0');
      if (m > (UINT64_MAX - d) / 10) return 0;
      m = m * 10 + d;
    }
    *mag = m;
    if (m == 0) *neg = 0;
    return 1;
  }
  double d = pg_json_pos_number(&x->pos, n);
  if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0) return 0;
  *neg = d < 0;
  *mag = (uint64_t)fabs(d);
  return 1;
}
