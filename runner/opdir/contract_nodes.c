/* phasegate runner — the contract schema's node readers: YAML nodes of
 * module_interfaces.yaml read as schema values (strings, integers, numbers, names,
 * sequences with a length cap), with a finding at the node for anything else; unknown
 * keys warned about with the key a typo probably meant; pypto-only keys accepted
 * silently. Shared by contract_decls.c and contract_schema.c. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdir/contract_internal.h"

/* Keys of the pypto schema that phasegate accepts anywhere without using them. */
static const char *const pypto_keys[] = {
    "description",  "section",  "golden_steps",   "golden_stage_fn", "numerical_notes",
    "accumulator_dtype", "module_count", "is_fusion", "has_cross_core", "notes",
    "note",         "comment",  "comments",       "layout",          "semantics",
    "compute_dtype", "role",    NULL};

const struct pg__ynode *pg__ymap_get(const struct pg__ynode *map, const char *key) {
  if (!map || map->kind != PG__Y_MAP) return NULL;
  size_t len = strlen(key);
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    const struct pg__ynode *k = map->kids[i];
    if (k->kind == PG__Y_SCALAR && k->len == len && memcmp(k->value, key, len) == 0)
      return map->kids[i + 1];
  }
  return NULL;
}

char *pg__sdup(struct pg__sctx *s, const char *v) {
  char *p = strdup(v ? v : "");
  if (!p) s->x->oom = 1;
  return p;
}

void *pg__scalloc(struct pg__sctx *s, size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) s->x->oom = 1;
  return p;
}

static int in_list(const char *const *list, const char *key) {
  for (int i = 0; list[i]; i++)
    if (strcmp(list[i], key) == 0) return 1;
  return 0;
}

/* Edit distance between a and b, capped: returns cap + 1 as soon as it exceeds cap.
 * Keys are short (< 64 bytes), so one row of 64 ints is enough. */
static int edit_distance(const char *a, const char *b, int cap) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 63 || lb > 63 || abs(la - lb) > cap) return cap + 1;
  int row[64];
  for (int j = 0; j <= lb; j++) row[j] = j;
  for (int i = 1; i <= la; i++) {
    int diag = row[0], best = row[0] = i;
    for (int j = 1; j <= lb; j++) {
      int up = row[j];
      int v = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < v) v = up + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
      if (v < best) best = v;
    }
    if (best > cap) return cap + 1;
  }
  return row[lb];
}

/* The allowed key a typo most likely meant (at most 2 edits, keys of 4+ chars), or NULL. */
static const char *closest_key(const char *const *allowed, const char *key) {
  const char *best = NULL;
  int best_d = 3;
  if (strlen(key) < 4) return NULL;
  for (int i = 0; allowed[i]; i++) {
    int d = edit_distance(key, allowed[i], 2);
    if (d < best_d) best_d = d, best = allowed[i];
  }
  return best;
}

/* Warns about every key that is neither `allowed` nor a known pypto key, suggesting
 * the allowed key a typo probably meant (`primary_input` -> `primary_inputs`). */
void pg__check_keys_skip(struct pg__sctx *s, const struct pg__ynode *map,
                         const char *const *allowed, const char *what, int skip_from,
                         int skip_to) {
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    const struct pg__ynode *k = map->kids[i];
    if (i >= skip_from && i < skip_to) continue;
    if (k->kind != PG__Y_SCALAR) {
      PG__ERR(k, 8, "keys of %s must be plain strings, found %s", what, pg__ykind_name(k));
      continue;
    }
    if (in_list(allowed, k->value) || in_list(pypto_keys, k->value)) continue;
    const char *guess = closest_key(allowed, k->value);
    if (guess)
      PG__WARN(k, "unknown key '%.64s' in %s is ignored; did you mean '%s'?", k->value, what,
               guess);
    else
      PG__WARN(k, "unknown key '%.64s' in %s is ignored", k->value, what);
  }
}

void pg__check_keys(struct pg__sctx *s, const struct pg__ynode *map, const char *const *allowed,
                    const char *what) {
  pg__check_keys_skip(s, map, allowed, what, 0, 0);
}

int pg__paren_balance(const char *v) {
  int b = 0;
  for (; *v; v++) b += *v == '(' ? 1 : *v == ')' ? -1 : 0;
  return b;
}

/* In a flow mapping, `{name: q, fill: normal(0, 1)}` reaches us as fill "normal(0" and a
 * null-valued key "1)": YAML splits flow collections at commas. docs/design.md writes fills
 * exactly so, and the intent is unambiguous, so the pieces are joined back while the
 * parentheses are open. Returns the joined text (malloc'd) and the kid index range of
 * the consumed keys in [*from, *to); NULL when there is nothing to join. */
char *pg__rejoin_flow_split(struct pg__sctx *s, const struct pg__ynode *map, const char *key,
                            int *from, int *to) {
  *from = *to = 0;
  if (!map->flow) return NULL;
  int i = 0;
  for (; i + 1 < map->n_kids; i += 2)
    if (map->kids[i]->kind == PG__Y_SCALAR && strcmp(map->kids[i]->value, key) == 0) break;
  if (i + 1 >= map->n_kids) return NULL;
  const struct pg__ynode *v = map->kids[i + 1];
  if (v->kind != PG__Y_SCALAR || !v->plain || pg__paren_balance(v->value) <= 0) return NULL;
  size_t len = strlen(v->value) + 1;
  int j = i + 2, bal = pg__paren_balance(v->value);
  for (; bal > 0 && j + 1 < map->n_kids; j += 2) {
    const struct pg__ynode *k = map->kids[j];
    if (k->kind != PG__Y_SCALAR || !k->plain || !pg__ynull(map->kids[j + 1])) break;
    len += strlen(k->value) + 2;
    bal += pg__paren_balance(k->value);
  }
  if (j == i + 2) return NULL;
  char *out = malloc(len);
  if (!out) {
    s->x->oom = 1;
    return NULL;
  }
  strcpy(out, v->value);
  for (int k = i + 2; k < j; k += 2) {
    strcat(out, ", ");
    strcat(out, map->kids[k]->value);
  }
  *from = i + 2;
  *to = j;
  return out;
}

int pg__want(struct pg__sctx *s, const struct pg__ynode *n, enum pg__ynode_kind kind,
             const char *what) {
  if (n->kind == kind) return 1;
  static const char *const names[] = {"a scalar", "a sequence", "a mapping"};
  PG__ERR(n, 8, "%s must be %s, found %s", what, names[kind], pg__ykind_name(n));
  return 0;
}

/* A string value: any non-null scalar. */
int pg__get_str(struct pg__sctx *s, const struct pg__ynode *n, const char *what, char **out) {
  if (!pg__want(s, n, PG__Y_SCALAR, what)) return 0;
  if (pg__ynull(n)) {
    PG__ERR(n, 8, "%s is empty", what);
    return 0;
  }
  *out = pg__sdup(s, n->value);
  return *out != NULL;
}

/* An integer: a plain scalar of optional sign and digits, within int64. */
int pg__get_int(struct pg__sctx *s, const struct pg__ynode *n, const char *what, int64_t *out) {
  if (!pg__want(s, n, PG__Y_SCALAR, what)) return 0;
  const char *p = n->value;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  int ok = n->plain && *p != '\0' && strlen(n->value) == n->len;
  int64_t v = 0;
  for (; ok && *p; p++) {
    if (*p < '0' || *p > '9') {
      ok = 0;
      break;
    }
    if (__builtin_mul_overflow(v, (int64_t)10, &v) ||
        __builtin_add_overflow(v, (int64_t)(*p - '0'), &v)) {
      PG__ERR(n, 8, "%s '%.40s' is out of range", what, n->value);
      return 0;
    }
  }
  if (!ok) {
    PG__ERR(n, 8, "%s must be an integer, found '%.64s'", what, n->value);
    return 0;
  }
  *out = neg ? -v : v;
  return 1;
}

/* A finite number: a plain scalar strtod() consumes entirely ("1e-3", "0.5", "2"). */
int pg__get_num(struct pg__sctx *s, const struct pg__ynode *n, const char *what, double *out) {
  if (!pg__want(s, n, PG__Y_SCALAR, what)) return 0;
  char *end = NULL;
  double v = n->plain && n->len > 0 ? strtod(n->value, &end) : 0;
  if (!n->plain || n->len == 0 || !end || *end != '\0' || (size_t)(end - n->value) != n->len ||
      !(v == v) || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
    PG__ERR(n, 8, "%s must be a number, found '%.64s'", what, n->value);
    return 0;
  }
  *out = v;
  return 1;
}

int pg__valid_name(const char *v) {
  if (!*v) return 0;
  for (const char *p = v; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '.' || *p == '-'))
      return 0;
  return 1;
}

int pg__valid_identifier(const char *v) {
  if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || *v == '_')) return 0;
  for (const char *p = v; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return 1;
}

/* Rule 7: names become file and test names. */
void pg__check_name(struct pg__sctx *s, const struct pg__ynode *n, const char *what,
                    const char *name) {
  if (strlen(name) >= PG_NAME_MAX)
    PG__ERR(n, 7, "the name '%.40s...' of %s is longer than %d characters", name, what,
            PG_NAME_MAX - 1);
  else if (!pg__valid_name(name))
    PG__ERR(n, 7, "the name '%.64s' of %s is not valid (use only letters, digits, '_', '.', '-')",
            name, what);
}

/* Reads a required name key into *out; reports a missing key at the mapping. */
int pg__get_name(struct pg__sctx *s, const struct pg__ynode *map, const char *what, char **out) {
  const struct pg__ynode *n = pg__ymap_get(map, "name");
  if (!n) {
    PG__ERR(map, 8, "%s is missing required key 'name'", what);
    return 0;
  }
  char w[512];
  snprintf(w, sizeof w, "the name of %s", what);
  if (!pg__get_str(s, n, w, out)) return 0;
  pg__check_name(s, n, what, *out);
  return 1;
}

/* A sequence capped at PG__CONTRACT_MAX_LIST entries; returns the count to walk (0 on error). */
int pg__list_len(struct pg__sctx *s, const struct pg__ynode *n, const char *what) {
  if (!pg__want(s, n, PG__Y_SEQ, what)) return 0;
  if (n->n_kids > PG__CONTRACT_MAX_LIST) {
    PG__ERR(n, 8, "%s has %d entries; at most %d are supported", what, n->n_kids,
            PG__CONTRACT_MAX_LIST);
    return 0;
  }
  return n->n_kids;
}

/* The op of a contract at .../custom/<op>/module_interfaces.yaml or
 * .../custom/<op>/eval/module_interfaces.yaml (the pypto layouts), from the path
 * as given or, when that does not show it, the real path. 1 with the name in out. */
static int op_from(const char *path, char *out, size_t size) {
  const char *parts[4] = {NULL}; /* the last directories, innermost first */
  size_t lens[4] = {0};
  const char *end = strrchr(path, '/');
  for (int i = 0; end && end > path && i < 4; i++) {
    const char *b = end;
    while (b > path && b[-1] != '/') b--;
    parts[i] = b;
    lens[i] = (size_t)(end - b);
    end = b > path ? b - 1 : NULL;
  }
  int k = parts[0] && lens[0] == 4 && memcmp(parts[0], "eval", 4) == 0 ? 1 : 0;
  if (!parts[k] || !parts[k + 1] || lens[k + 1] != 6 || memcmp(parts[k + 1], "custom", 6) != 0 ||
      lens[k] == 0 || lens[k] >= size)
    return 0;
  memcpy(out, parts[k], lens[k]);
  out[lens[k]] = '\0';
  return pg__valid_name(out);
}

int pg__op_from_path(const char *path, char *out, size_t size) {
  if (!path) return 0;
  if (op_from(path, out, size)) return 1;
  char *real = realpath(path, NULL);
  int ok = real && op_from(real, out, size);
  free(real);
  return ok;
}

/* The value of a dim (an integer >= 0, rule 5): 1 with *val set, 0 after a finding. */
int pg__dim_value(struct pg__sctx *s, const char *what, const struct pg__ynode *v, int64_t *val) {
  if (!pg__get_int(s, v, what, val)) return 0;
  if (*val >= 0) return 1;
  PG__ERR(v, 5, "%s is %" PRId64 "; dims must be >= 0", what, *val);
  return 0;
}
