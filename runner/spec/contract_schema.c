/* phasegate runner — the contract schema: walks the YAML node tree of
 * module_interfaces.yaml into struct pg_contract and applies DESIGN.md §3 rules 1–8,
 * reporting every finding with its line:column (never only the first).
 *
 * Accepts the real-world pypto schema unchanged: `op_name` for `op`, string shapes
 * "[B, T]", `phase_<j>` as the older spelling of `module_<j>`, and pypto keys phasegate
 * does not use (section, golden_steps, …) without a word; other unknown keys are
 * warnings. Not for: YAML syntax (contract_yaml.c) or golden-step semantics
 * (pg_goldens_validate in goldens/).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/contract_internal.h"
#include "tensors/tensors.h"
#include "phasegate/goldens.h"

/* Entries per list (modules, inputs, outputs, steps, …): far above any real contract,
 * low enough that the name lookups below stay fast on hostile files. */
#define MAX_LIST 1024

struct sctx {
  struct pg__cctx *x;
  struct pg_contract *c;
  int has_dims;             /* the contract has a dims: section */
  char dims_list[256];      /* "B, H, S, D" for messages */
  char **noted;             /* dim names already given the "no default" note */
  int n_noted;
  struct pg_mark *id_marks; /* per module: where its id is written */
};

#define ERR(node, rule, ...) \
  pg__cfind(s->x, PG_SEV_ERROR, (node)->line, (node)->column, (rule), __VA_ARGS__)
#define ERR_AT(line, col, rule, ...) pg__cfind(s->x, PG_SEV_ERROR, (line), (col), (rule), __VA_ARGS__)
#define WARN(node, ...) \
  pg__cfind(s->x, PG_SEV_WARNING, (node)->line, (node)->column, 0, __VA_ARGS__)

/* Keys of the pypto schema that phasegate accepts anywhere without using them. */
static const char *const pypto_keys[] = {
    "description",  "section",  "golden_steps",   "golden_stage_fn", "numerical_notes",
    "accumulator_dtype", "module_count", "is_fusion", "has_cross_core", "notes",
    "note",         "comment",  "comments",       "layout",          "semantics",
    "compute_dtype", "role",    NULL};

static const char *kind_name(const struct pg__ynode *n) {
  return n->kind == PG__Y_SCALAR ? "a scalar" : n->kind == PG__Y_SEQ ? "a sequence" : "a mapping";
}

static int is_null(const struct pg__ynode *n) {
  if (!n) return 1;
  if (n->kind != PG__Y_SCALAR || !n->plain) return 0;
  return n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0 ||
         strcmp(n->value, "Null") == 0 || strcmp(n->value, "NULL") == 0;
}

/* Column of the first character of a scalar's text (after an opening quote). */
static int text_column(const struct pg__ynode *n) { return n->column + (n->quoted ? 1 : 0); }

static const struct pg__ynode *map_get(const struct pg__ynode *map, const char *key) {
  if (!map || map->kind != PG__Y_MAP) return NULL;
  size_t len = strlen(key);
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    const struct pg__ynode *k = map->kids[i];
    if (k->kind == PG__Y_SCALAR && k->len == len && memcmp(k->value, key, len) == 0)
      return map->kids[i + 1];
  }
  return NULL;
}

static char *sdup(struct sctx *s, const char *v) {
  char *p = strdup(v ? v : "");
  if (!p) s->x->oom = 1;
  return p;
}

static void *scalloc(struct sctx *s, size_t n, size_t size) {
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
static void check_keys_skip(struct sctx *s, const struct pg__ynode *map,
                            const char *const *allowed, const char *what, int skip_from,
                            int skip_to) {
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    const struct pg__ynode *k = map->kids[i];
    if (i >= skip_from && i < skip_to) continue;
    if (k->kind != PG__Y_SCALAR) {
      ERR(k, 8, "keys of %s must be plain strings, found %s", what, kind_name(k));
      continue;
    }
    if (in_list(allowed, k->value) || in_list(pypto_keys, k->value)) continue;
    const char *guess = closest_key(allowed, k->value);
    if (guess)
      WARN(k, "unknown key '%.64s' in %s is ignored; did you mean '%s'?", k->value, what, guess);
    else
      WARN(k, "unknown key '%.64s' in %s is ignored", k->value, what);
  }
}

static void check_keys(struct sctx *s, const struct pg__ynode *map, const char *const *allowed,
                       const char *what) {
  check_keys_skip(s, map, allowed, what, 0, 0);
}

static int paren_balance(const char *v) {
  int b = 0;
  for (; *v; v++) b += *v == '(' ? 1 : *v == ')' ? -1 : 0;
  return b;
}

/* In a flow mapping, `{name: q, fill: normal(0, 1)}` reaches us as fill "normal(0" and a
 * null-valued key "1)": YAML splits flow collections at commas. DESIGN.md writes fills
 * exactly so, and the intent is unambiguous, so the pieces are joined back while the
 * parentheses are open. Returns the joined text (malloc'd) and the kid index range of
 * the consumed keys in [*from, *to); NULL when there is nothing to join. */
static char *rejoin_flow_split(struct sctx *s, const struct pg__ynode *map, const char *key,
                               int *from, int *to) {
  *from = *to = 0;
  if (!map->flow) return NULL;
  int i = 0;
  for (; i + 1 < map->n_kids; i += 2)
    if (map->kids[i]->kind == PG__Y_SCALAR && strcmp(map->kids[i]->value, key) == 0) break;
  if (i + 1 >= map->n_kids) return NULL;
  const struct pg__ynode *v = map->kids[i + 1];
  if (v->kind != PG__Y_SCALAR || !v->plain || paren_balance(v->value) <= 0) return NULL;
  size_t len = strlen(v->value) + 1;
  int j = i + 2, bal = paren_balance(v->value);
  for (; bal > 0 && j + 1 < map->n_kids; j += 2) {
    const struct pg__ynode *k = map->kids[j];
    if (k->kind != PG__Y_SCALAR || !k->plain || !is_null(map->kids[j + 1])) break;
    len += strlen(k->value) + 2;
    bal += paren_balance(k->value);
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

static int want(struct sctx *s, const struct pg__ynode *n, enum pg__ynode_kind kind,
                const char *what) {
  if (n->kind == kind) return 1;
  static const char *const names[] = {"a scalar", "a sequence", "a mapping"};
  ERR(n, 8, "%s must be %s, found %s", what, names[kind], kind_name(n));
  return 0;
}

/* A string value: any non-null scalar. */
static int get_str(struct sctx *s, const struct pg__ynode *n, const char *what, char **out) {
  if (!want(s, n, PG__Y_SCALAR, what)) return 0;
  if (is_null(n)) {
    ERR(n, 8, "%s is empty", what);
    return 0;
  }
  *out = sdup(s, n->value);
  return *out != NULL;
}

/* An integer: a plain scalar of optional sign and digits, within int64. */
static int get_int(struct sctx *s, const struct pg__ynode *n, const char *what, int64_t *out) {
  if (!want(s, n, PG__Y_SCALAR, what)) return 0;
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
      ERR(n, 8, "%s '%.40s' is out of range", what, n->value);
      return 0;
    }
  }
  if (!ok) {
    ERR(n, 8, "%s must be an integer, found '%.64s'", what, n->value);
    return 0;
  }
  *out = neg ? -v : v;
  return 1;
}

/* A finite number: a plain scalar strtod() consumes entirely ("1e-3", "0.5", "2"). */
static int get_num(struct sctx *s, const struct pg__ynode *n, const char *what, double *out) {
  if (!want(s, n, PG__Y_SCALAR, what)) return 0;
  char *end = NULL;
  double v = n->plain && n->len > 0 ? strtod(n->value, &end) : 0;
  if (!n->plain || n->len == 0 || !end || *end != '\0' || (size_t)(end - n->value) != n->len ||
      !(v == v) || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
    ERR(n, 8, "%s must be a number, found '%.64s'", what, n->value);
    return 0;
  }
  *out = v;
  return 1;
}

static int valid_name(const char *v) {
  if (!*v) return 0;
  for (const char *p = v; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '.' || *p == '-'))
      return 0;
  return 1;
}

static int valid_identifier(const char *v) {
  if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') || *v == '_')) return 0;
  for (const char *p = v; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return 1;
}

/* Rule 7: names become file and test names. */
static void check_name(struct sctx *s, const struct pg__ynode *n, const char *what,
                       const char *name) {
  if (strlen(name) >= PG_NAME_MAX)
    ERR(n, 7, "the name '%.40s...' of %s is longer than %d characters", name, what,
        PG_NAME_MAX - 1);
  else if (!valid_name(name))
    ERR(n, 7, "the name '%.64s' of %s is not valid (use only letters, digits, '_', '.', '-')",
        name, what);
}

/* Reads a required name key into *out; reports a missing key at the mapping. */
static int get_name(struct sctx *s, const struct pg__ynode *map, const char *what, char **out) {
  const struct pg__ynode *n = map_get(map, "name");
  if (!n) {
    ERR(map, 8, "%s is missing required key 'name'", what);
    return 0;
  }
  char w[512];
  snprintf(w, sizeof w, "the name of %s", what);
  if (!get_str(s, n, w, out)) return 0;
  check_name(s, n, what, *out);
  return 1;
}

/* A sequence capped at MAX_LIST entries; returns the count to walk (0 on error). */
static int list_len(struct sctx *s, const struct pg__ynode *n, const char *what) {
  if (!want(s, n, PG__Y_SEQ, what)) return 0;
  if (n->n_kids > MAX_LIST) {
    ERR(n, 8, "%s has %d entries; at most %d are supported", what, n->n_kids, MAX_LIST);
    return 0;
  }
  return n->n_kids;
}

/* ------------------------------------------------------------------ shapes */

struct axis_ctx {
  struct sctx *s;
  int line, column;  /* of the axis text */
  int all_bound;
  const char *what;
};

static int axis_name_cb(void *user, const char *name, size_t len, int offset) {
  struct axis_ctx *a = user;
  struct sctx *s = a->s;
  char buf[PG_NAME_MAX];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, name, len);
  buf[len] = '\0';
  if (pg_bindings_get(&s->c->dims, buf, NULL)) return 0;
  a->all_bound = 0;
  if (s->has_dims) {
    ERR_AT(a->line, a->column + offset, 5, "unknown dim '%s' in the shape of %s (dims: declares %s)",
           buf, a->what, s->dims_list[0] ? s->dims_list : "none");
    return 0;
  }
  for (int i = 0; i < s->n_noted; i++)
    if (strcmp(s->noted[i], buf) == 0) return 0;
  char **noted = realloc(s->noted, (size_t)(s->n_noted + 1) * sizeof *noted);
  if (!noted || !(noted[s->n_noted] = strdup(buf))) {
    if (noted) s->noted = noted;
    s->x->oom = 1;
    return 0;
  }
  s->noted = noted;
  s->n_noted++;
  pg__cfind(s->x, PG_SEV_NOTE, a->line, a->column + offset, 0,
            "dim '%s' has no default value (the contract has no dims: section); every case must "
            "bind it",
            buf);
  return 0;
}

/* Rule 5 for every axis of a declaration: syntax, dim names, and the value under the
 * contract's default dims when every name is bound. */
static void check_shape(struct sctx *s, const struct pg_tensor_decl *d, const char *what,
                        const struct pg__ynode *where) {
  int64_t total = 1;
  int all_bound = 1, total_ok = 1;
  for (int i = 0; i < d->ndim; i++) {
    if (!d->dims[i]) return; /* out of memory: already fatal */
    struct axis_ctx a = {s, d->dim_marks[i].line, d->dim_marks[i].column, 1, what};
    struct pg_error e;
    pg_error_clear(&e);
    int rc = pg_shape_expr_check(d->dims[i], axis_name_cb, &a, &e);
    if (rc != PG_OK) {
      ERR_AT(a.line, a.column + (e.column > 0 ? e.column - 1 : 0), 5, "shape of %s, axis %d: %s",
             what, i, e.message);
      all_bound = 0;
      continue;
    }
    if (!a.all_bound) {
      all_bound = 0;
      continue;
    }
    int64_t v = 0;
    rc = pg_shape_expr_eval(d->dims[i], &s->c->dims, &v, &e);
    if (rc != PG_OK) {
      ERR_AT(a.line, a.column + (e.column > 0 ? e.column - 1 : 0), 5,
             "shape of %s, axis %d: %s with the default dims", what, i, e.message);
      all_bound = 0;
    } else if (v < 0) {
      ERR_AT(a.line, a.column, 5, "shape of %s, axis %d evaluates to %" PRId64
             " with the default dims; sizes must be >= 0", what, i, v);
      all_bound = 0;
    } else if (__builtin_mul_overflow(total, v, &total)) {
      total_ok = 0;
    }
  }
  if (all_bound && !total_ok)
    ERR(where, 5, "the shape of %s has more than 2^63 elements with the default dims", what);
}

static void set_axis(struct sctx *s, struct pg_tensor_decl *d, int i, const char *text, size_t len,
                     int line, int column) {
  char *t = malloc(len + 1);
  if (!t) {
    s->x->oom = 1;
    return;
  }
  memcpy(t, text, len);
  t[len] = '\0';
  d->dims[i] = t;
  d->dim_marks[i] = (struct pg_mark){line, column};
}

/* A shape as a YAML list ([B, H, S*2]) or a string ("[B, T]", the pypto spelling). */
static void parse_shape(struct sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                        const char *what) {
  d->ndim = 0;
  if (n->kind == PG__Y_MAP) {
    ERR(n, 8, "the shape of %s must be a list like [B, S] or a string like \"[B, S]\", found a "
              "mapping", what);
    return;
  }
  if (n->kind == PG__Y_SEQ) {
    if (n->n_kids > PG_MAX_NDIM) {
      ERR(n, 5, "the shape of %s has %d axes; at most %d are supported", what, n->n_kids,
          PG_MAX_NDIM);
      return;
    }
    int bad = 0;
    for (int i = 0; i < n->n_kids; i++) {
      const struct pg__ynode *k = n->kids[i];
      if (k->kind != PG__Y_SCALAR) {
        ERR(k, 8, "axis %d of the shape of %s must be an integer or an expression, found %s", i,
            what, kind_name(k));
        bad = 1;
        continue;
      }
      set_axis(s, d, i, k->value, strlen(k->value), k->line, text_column(k));
      if (!d->dims[i]) bad = 1;
    }
    if (bad) { /* never hand out a shape with a missing axis */
      for (int i = 0; i < n->n_kids; i++) {
        free(d->dims[i]);
        d->dims[i] = NULL;
      }
      return;
    }
    d->ndim = n->n_kids;
    return;
  }
  /* String form: optional brackets around comma-separated axes. */
  const char *v = n->value;
  size_t len = strlen(v), b = 0, e = len;
  int col0 = text_column(n);
  while (b < e && (v[b] == ' ' || v[b] == '\t')) b++;
  while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
  if (b < e && v[b] == '[') {
    if (v[e - 1] != ']' || e - b < 2) {
      ERR_AT(n->line, col0 + (int)b, 5, "the shape of %s, '%.64s', has no closing ']'", what, v);
      return;
    }
    b++;
    e--;
  }
  size_t p = b;
  int ndim = 0;
  int blank = 1;
  for (size_t i = b; i < e; i++)
    if (v[i] != ' ' && v[i] != '\t') blank = 0;
  if (blank) return; /* "[]": a 0-d tensor */
  while (p <= e) {
    size_t q = p;
    while (q < e && v[q] != ',') q++;
    size_t ab = p, ae = q;
    while (ab < ae && (v[ab] == ' ' || v[ab] == '\t')) ab++;
    while (ae > ab && (v[ae - 1] == ' ' || v[ae - 1] == '\t')) ae--;
    if (ab == ae) {
      ERR_AT(n->line, col0 + (int)ab, 5, "the shape of %s, '%.64s', has an empty axis", what, v);
      for (int i = 0; i < ndim; i++) {
        free(d->dims[i]);
        d->dims[i] = NULL;
      }
      return;
    }
    if (ndim == PG_MAX_NDIM) {
      ERR(n, 5, "the shape of %s has more than %d axes", what, PG_MAX_NDIM);
      for (int i = 0; i < ndim; i++) {
        free(d->dims[i]);
        d->dims[i] = NULL;
      }
      return;
    }
    set_axis(s, d, ndim++, v + ab, ae - ab, n->line, col0 + (int)ab);
    p = q + 1;
  }
  d->ndim = ndim;
}

/* ------------------------------------------------------------------ tensors */

enum decl_kind { D_PRIMARY, D_INPUT, D_OUTPUT, D_FINAL };

static void parse_dtype(struct sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                        const char *what) {
  char w[512];
  snprintf(w, sizeof w, "the dtype of %s", what);
  if (!want(s, n, PG__Y_SCALAR, w)) return;
  d->dtype_mark = (struct pg_mark){n->line, text_column(n)};
  d->dtype = pg_dtype_parse(n->value);
  if (d->dtype == PG_DTYPE_INVALID)
    ERR(n, 6, "unknown dtype '%.64s' for %s (expected float32, float16, bfloat16, float64, int8, "
              "uint8, int32, int64, bool or int)", n->value, what);
}

/* "primary" -> 0, "module_<j>" or the older "phase_<j>" -> j >= 1, anything else -> -1. */
static int source_module(const char *v) {
  if (strcmp(v, "primary") == 0) return 0;
  const char *p = NULL;
  if (strncmp(v, "module_", 7) == 0) p = v + 7;
  else if (strncmp(v, "phase_", 6) == 0) p = v + 6;
  if (!p || !*p) return -1;
  long j = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    j = j * 10 + (*p - '0');
    if (j > 1000000) return -1;
  }
  return j >= 1 ? (int)j : -1;
}

static void parse_decl(struct sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                       enum decl_kind kind, const char *prefix, const char *suffix, int index) {
  char what_in[200];
  snprintf(what_in, sizeof what_in, "%s #%d%s", prefix, index + 1, suffix);
  static const char *const k_primary[] = {"name", "shape", "dtype", "fill", NULL};
  static const char *const k_input[] = {"name", "source", "shape", "dtype", NULL};
  static const char *const k_output[] = {"name", "shape", "dtype", "atol", "rtol", NULL};
  static const char *const k_final[] = {"name", "source", "shape", "dtype", NULL};
  d->ndim = -1;
  d->source_module = -1;
  d->mark = (struct pg_mark){n->line, n->column};
  if (!want(s, n, PG__Y_MAP, what_in)) return;
  int skip_from = 0, skip_to = 0;
  char *joined_fill = kind == D_PRIMARY ? rejoin_flow_split(s, n, "fill", &skip_from, &skip_to)
                                        : NULL;
  check_keys_skip(s, n,
                  kind == D_PRIMARY  ? k_primary
                  : kind == D_INPUT  ? k_input
                  : kind == D_OUTPUT ? k_output
                                     : k_final,
                  what_in, skip_from, skip_to);
  get_name(s, n, what_in, &d->name);
  char what[200];
  if (d->name)
    snprintf(what, sizeof what, "%s '%.64s'%s", prefix, d->name, suffix);
  else
    snprintf(what, sizeof what, "%s", what_in);

  const struct pg__ynode *shape = map_get(n, "shape"), *dtype = map_get(n, "dtype");
  int need_type = kind == D_PRIMARY || kind == D_OUTPUT;
  if (shape && !is_null(shape)) {
    parse_shape(s, d, shape, what);
    check_shape(s, d, what, shape);
  } else if (need_type) {
    ERR(n, 8, "%s is missing required key 'shape'", what);
  }
  if (dtype && !is_null(dtype))
    parse_dtype(s, d, dtype, what);
  else if (need_type)
    ERR(n, 8, "%s is missing required key 'dtype'", what);

  if (kind == D_PRIMARY) {
    const struct pg__ynode *fill = map_get(n, "fill");
    if (fill && !is_null(fill)) {
      char w[512];
      snprintf(w, sizeof w, "the fill of %s", what);
      if (joined_fill) {
        d->fill = joined_fill;
        joined_fill = NULL;
      }
      if (d->fill || get_str(s, fill, w, &d->fill)) {
        d->fill_mark = (struct pg_mark){fill->line, text_column(fill)};
        struct pg_fill f;
        struct pg_error e;
        pg_error_clear(&e);
        if (pg_fill_parse(d->fill, &f, &e) != PG_OK)
          ERR_AT(fill->line, text_column(fill) + (e.column > 0 ? e.column - 1 : 0), 8,
                 "fill of %s: %s", what, e.message);
      }
    }
  }
  free(joined_fill);
  if (kind == D_INPUT || kind == D_FINAL) {
    const struct pg__ynode *src = map_get(n, "source");
    if (!src) {
      ERR(n, 8, "%s is missing required key 'source'", what);
    } else {
      char w[512];
      snprintf(w, sizeof w, "the source of %s", what);
      if (get_str(s, src, w, &d->source)) {
        d->source_mark = (struct pg_mark){src->line, text_column(src)};
        d->source_module = source_module(d->source);
      }
    }
  }
  if (kind == D_OUTPUT) {
    const struct pg__ynode *t;
    char w[512];
    if ((t = map_get(n, "atol"))) {
      snprintf(w, sizeof w, "atol of %s", what);
      d->has_atol = get_num(s, t, w, &d->atol);
      if (d->has_atol && d->atol < 0) ERR(t, 8, "atol of %s is negative", what);
    }
    if ((t = map_get(n, "rtol"))) {
      snprintf(w, sizeof w, "rtol of %s", what);
      d->has_rtol = get_num(s, t, w, &d->rtol);
      if (d->has_rtol && d->rtol < 0) ERR(t, 8, "rtol of %s is negative", what);
    }
  }
}

/* Parses a list of declarations into a fresh array. */
static void parse_decls(struct sctx *s, const struct pg__ynode *n, enum decl_kind kind,
                        const char *list_what, const char *prefix, const char *suffix,
                        struct pg_tensor_decl **out, int *n_out) {
  int len = list_len(s, n, list_what);
  *out = scalloc(s, (size_t)len, sizeof **out);
  if (!*out) return;
  *n_out = len;
  for (int i = 0; i < len; i++) {
    parse_decl(s, &(*out)[i], n->kids[i], kind, prefix, suffix, i);
  }
}

/* ------------------------------------------------------------------ goldens */

static void parse_golden(struct sctx *s, struct pg_golden_spec *g, const struct pg__ynode *n,
                         const char *what) {
  g->mark = (struct pg_mark){n->line, n->column};
  if (is_null(n)) return;
  if (n->kind == PG__Y_MAP) {
    static const char *const keys[] = {"plugin", NULL};
    check_keys(s, n, keys, what);
    const struct pg__ynode *p = map_get(n, "plugin");
    if (!p) {
      ERR(n, 8, "%s is a mapping without 'plugin' (write {plugin: NAME} or a list of steps)", what);
      return;
    }
    char w[512];
    snprintf(w, sizeof w, "the plugin of %s", what);
    if (!get_str(s, p, w, &g->plugin)) return;
    g->kind = PG_GOLDEN_PLUGIN;
    if (!valid_identifier(g->plugin))
      ERR(p, 8, "golden plugin '%.64s' is not a C symbol name", g->plugin);
    return;
  }
  if (n->kind == PG__Y_SCALAR) { /* one step written inline */
    g->kind = PG_GOLDEN_STEPS;
    g->steps = scalloc(s, 1, sizeof *g->steps);
    if (!g->steps) return;
    g->n_steps = 1;
    g->steps[0].text = sdup(s, n->value);
    g->steps[0].mark = (struct pg_mark){n->line, text_column(n)};
    return;
  }
  int len = list_len(s, n, what);
  if (n->n_kids == 0) {
    WARN(n, "%s is an empty list of steps", what);
    return;
  }
  g->kind = PG_GOLDEN_STEPS;
  g->steps = scalloc(s, (size_t)len, sizeof *g->steps);
  if (!g->steps) return;
  int rejoined = 0;
  for (int i = 0; i < len; i++) {
    const struct pg__ynode *k = n->kids[i];
    if (k->kind != PG__Y_SCALAR || is_null(k)) {
      ERR(k, 8, "step %d of %s must be a string like 'out = op(x)', found %s", i + 1, what,
          k->kind == PG__Y_SCALAR ? "nothing" : kind_name(k));
      continue;
    }
    struct pg_golden_step *st = &g->steps[g->n_steps++];
    st->mark = (struct pg_mark){k->line, text_column(k)};
    /* A flow list [y = add(a, b)] reaches us split at the comma: join the pieces back
     * while parentheses are open, as for fills. */
    int j = i, bal = paren_balance(k->value);
    size_t size = strlen(k->value) + 1;
    while (n->flow && bal > 0 && j + 1 < len && n->kids[j + 1]->kind == PG__Y_SCALAR &&
           !is_null(n->kids[j + 1])) {
      j++;
      size += strlen(n->kids[j]->value) + 2;
      bal += paren_balance(n->kids[j]->value);
    }
    st->text = malloc(size);
    if (!st->text) {
      s->x->oom = 1;
      return;
    }
    strcpy(st->text, k->value);
    for (int m = i + 1; m <= j; m++) {
      strcat(st->text, ", ");
      strcat(st->text, n->kids[m]->value);
    }
    if (j > i) rejoined = 1;
    i = j;
  }
  if (rejoined)
    WARN(n, "%s is a flow list [...], which YAML splits at every comma (rejoined here); write "
            "one '- step' per line", what);
}

/* ------------------------------------------------------------------ sections */

static void parse_dims(struct sctx *s, const struct pg__ynode *n) {
  s->has_dims = 1;
  if (is_null(n)) return;
  if (!want(s, n, PG__Y_MAP, "'dims'")) return;
  int count = n->n_kids / 2;
  struct pg_bindings *b = &s->c->dims;
  b->items = scalloc(s, (size_t)count, sizeof *b->items);
  if (!b->items) return;
  size_t used = 0;
  for (int i = 0; i < count; i++) {
    const struct pg__ynode *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
    if (k->kind != PG__Y_SCALAR) {
      ERR(k, 8, "keys of 'dims' must be dim names, found %s", kind_name(k));
      continue;
    }
    if (!valid_identifier(k->value) || k->len >= PG_NAME_MAX) {
      ERR(k, 5, "dim name '%.64s' is not an identifier (letters, digits, '_')", k->value);
      continue;
    }
    char w[512];
    snprintf(w, sizeof w, "dim '%s'", k->value);
    int64_t val;
    if (!get_int(s, v, w, &val)) continue;
    if (val < 0) {
      ERR(v, 5, "dim '%s' is %" PRId64 "; dims must be >= 0", k->value, val);
      continue;
    }
    if (pg_bindings_get(b, k->value, NULL)) continue; /* duplicate key, reported by the parser */
    char *name = sdup(s, k->value);
    if (!name) return;
    b->items[b->count++] = (struct pg_dim_value){name, val, {k->line, k->column}};
    int w2 = snprintf(s->dims_list + used, sizeof s->dims_list - used, "%s%s", used ? ", " : "",
                      name);
    if (w2 > 0 && (size_t)w2 < sizeof s->dims_list - used) used += (size_t)w2;
  }
}

static void parse_tolerance(struct sctx *s, const struct pg__ynode *n, const char *what,
                            double *atol, double *rtol, int *has) {
  static const char *const keys[] = {"atol", "rtol", NULL};
  if (!want(s, n, PG__Y_MAP, what)) return;
  check_keys(s, n, keys, what);
  const struct pg__ynode *a = map_get(n, "atol"), *r = map_get(n, "rtol");
  int ok = 1;
  char w[512];
  snprintf(w, sizeof w, "atol in %s", what);
  if (a && get_num(s, a, w, atol) && *atol < 0) ERR(a, 8, "atol in %s is negative", what);
  snprintf(w, sizeof w, "rtol in %s", what);
  if (r && get_num(s, r, w, rtol) && *rtol < 0) ERR(r, 8, "rtol in %s is negative", what);
  if (!a && !r) {
    ERR(n, 8, "%s needs 'atol' and/or 'rtol'", what);
    ok = 0;
  }
  *has = ok;
}

static void parse_composition(struct sctx *s, const struct pg__ynode *n) {
  static const char *const keys[] = {"atol", "rtol", "seeds", "shapes", NULL};
  struct pg_contract *c = s->c;
  if (!want(s, n, PG__Y_MAP, "'composition_verification'")) return;
  check_keys(s, n, keys, "'composition_verification'");
  c->has_composition = 1;
  const struct pg__ynode *t;
  if ((t = map_get(n, "atol")) &&
      get_num(s, t, "atol in 'composition_verification'", &c->comp_atol) && c->comp_atol < 0)
    ERR(t, 8, "atol in 'composition_verification' is negative");
  if ((t = map_get(n, "rtol")) &&
      get_num(s, t, "rtol in 'composition_verification'", &c->comp_rtol) && c->comp_rtol < 0)
    ERR(t, 8, "rtol in 'composition_verification' is negative");
  if ((t = map_get(n, "seeds")) && !is_null(t)) {
    int single = t->kind == PG__Y_SCALAR;
    int len = single ? 1 : list_len(s, t, "'seeds'");
    c->comp_seeds = scalloc(s, (size_t)len, sizeof *c->comp_seeds);
    for (int i = 0; c->comp_seeds && i < len; i++) {
      int64_t v;
      if (!get_int(s, single ? t : t->kids[i], "a seed", &v)) continue;
      if (v < 0) {
        ERR(single ? t : t->kids[i], 8, "seed %" PRId64 " is negative", v);
        continue;
      }
      c->comp_seeds[c->n_comp_seeds++] = (uint64_t)v;
    }
  }
  if ((t = map_get(n, "shapes")) && !is_null(t)) {
    int len = list_len(s, t, "'shapes'");
    c->comp_shapes = scalloc(s, (size_t)len, sizeof *c->comp_shapes);
    if (!c->comp_shapes) return;
    c->n_comp_shapes = len;
    for (int i = 0; i < len; i++) {
      const struct pg__ynode *m = t->kids[i];
      if (!want(s, m, PG__Y_MAP, "a composition shape")) continue;
      struct pg_bindings *b = &c->comp_shapes[i];
      b->items = scalloc(s, (size_t)(m->n_kids / 2), sizeof *b->items);
      if (!b->items) return;
      for (int j = 0; j + 1 < m->n_kids; j += 2) {
        const struct pg__ynode *k = m->kids[j], *v = m->kids[j + 1];
        if (k->kind != PG__Y_SCALAR || !valid_identifier(k->value) || k->len >= PG_NAME_MAX) {
          ERR(k, 5, "composition shape key '%.64s' is not a dim name",
              k->kind == PG__Y_SCALAR ? k->value : "");
          continue;
        }
        if (s->has_dims && !pg_bindings_get(&c->dims, k->value, NULL))
          ERR(k, 5, "composition shape binds unknown dim '%s' (dims: declares %s)", k->value,
              s->dims_list[0] ? s->dims_list : "none");
        char w[512];
        snprintf(w, sizeof w, "dim '%s'", k->value);
        int64_t val;
        if (!get_int(s, v, w, &val)) continue;
        if (val < 0) {
          ERR(v, 5, "dim '%s' is %" PRId64 "; dims must be >= 0", k->value, val);
          continue;
        }
        char *name = sdup(s, k->value);
        if (!name) return;
        b->items[b->count++] = (struct pg_dim_value){name, val, {k->line, k->column}};
      }
    }
  }
}

static void parse_module(struct sctx *s, struct pg_module *m, const struct pg__ynode *n, int pos) {
  static const char *const keys[] = {"id", "name", "description", "inputs", "outputs", "golden",
                                     NULL};
  char what[200];
  snprintf(what, sizeof what, "module #%d", pos + 1);
  m->mark = (struct pg_mark){n->line, n->column};
  s->id_marks[pos] = m->mark;
  if (!want(s, n, PG__Y_MAP, "each entry of 'modules'")) return;
  check_keys(s, n, keys, what);
  const struct pg__ynode *t = map_get(n, "id");
  if (!t) {
    ERR(n, 8, "%s is missing required key 'id'", what);
  } else {
    int64_t id;
    s->id_marks[pos] = (struct pg_mark){t->line, t->column};
    if (get_int(s, t, "module id", &id)) {
      if (id < 1 || id > MAX_LIST)
        ERR(t, 7, "module id %" PRId64 " is out of range (ids are 1..N)", id);
      else
        m->id = (int)id;
    }
  }
  if (m->id) snprintf(what, sizeof what, "module %d", m->id);
  get_name(s, n, what, &m->name);
  if ((t = map_get(n, "description")) && t->kind == PG__Y_SCALAR && !is_null(t))
    m->description = sdup(s, t->value);

  char list_what[240], suffix[220];
  snprintf(suffix, sizeof suffix, " of %s", what);
  if ((t = map_get(n, "inputs")) && !is_null(t)) {
    snprintf(list_what, sizeof list_what, "'inputs' of %s", what);
    parse_decls(s, t, D_INPUT, list_what, "input", suffix, &m->inputs, &m->n_inputs);
  }
  t = map_get(n, "outputs");
  if (!t) {
    ERR(n, 8, "%s is missing required key 'outputs'", what);
  } else if (is_null(t) || (t->kind == PG__Y_SEQ && t->n_kids == 0)) {
    ERR(t, 8, "%s declares no outputs; every module needs at least one", what);
  } else {
    snprintf(list_what, sizeof list_what, "'outputs' of %s", what);
    parse_decls(s, t, D_OUTPUT, list_what, "output", suffix, &m->outputs, &m->n_outputs);
  }
  if ((t = map_get(n, "golden"))) {
    char w[512];
    snprintf(w, sizeof w, "the golden of %s", what);
    parse_golden(s, &m->golden, t, w);
  }
}

/* ------------------------------------------------------------------ cross rules */

static const struct pg_tensor_decl *find_decl(const struct pg_tensor_decl *d, int n,
                                              const char *name) {
  for (int i = 0; name && i < n; i++)
    if (d[i].name && strcmp(d[i].name, name) == 0) return &d[i];
  return NULL;
}

/* Rule 4: no two declarations in one list share a name. */
static void check_unique(struct sctx *s, const struct pg_tensor_decl *d, int n, const char *what,
                         const char *suffix) {
  for (int i = 1; i < n; i++) {
    const struct pg_tensor_decl *first = find_decl(d, i, d[i].name);
    if (first)
      ERR_AT(d[i].mark.line, d[i].mark.column, 4,
             "duplicate %s '%.64s'%s (first declared at line %d)", what, d[i].name, suffix,
             first->mark.line);
  }
}

/* A dtype repeated on a consumer (module input, final output) should agree with the
 * producer's; the producer's wins, so a disagreement is worth a warning. */
static void check_same_dtype(struct sctx *s, const struct pg_tensor_decl *use,
                             const struct pg_tensor_decl *def, const char *def_what) {
  if (use->dtype == PG_DTYPE_INVALID || def->dtype == PG_DTYPE_INVALID || use->dtype == def->dtype)
    return;
  pg__cfind(s->x, PG_SEV_WARNING, use->dtype_mark.line, use->dtype_mark.column, 0,
            "'%.64s' is declared %s here but %s in %s (line %d); %s is used",
            use->name, pg_dtype_name(use->dtype), pg_dtype_name(def->dtype), def_what,
            def->mark.line, pg_dtype_name(def->dtype));
}

static void check_wiring(struct sctx *s) {
  struct pg_contract *c = s->c;
  for (int i = 0; i < c->n_modules; i++) {
    const struct pg_module *m = &c->modules[i];
    /* Rule 7: ids are exactly 1..N in order. */
    if (m->id && m->id != i + 1)
      ERR_AT(s->id_marks[i].line, s->id_marks[i].column, 7,
             "module ids must be 1..N in order: expected %d here, found %d", i + 1, m->id);
    char what[64];
    snprintf(what, sizeof what, " of module %d", m->id ? m->id : i + 1);
    check_unique(s, m->outputs, m->n_outputs, "output", what);
    int self = m->id ? m->id : i + 1;
    for (int j = 0; j < m->n_inputs; j++) {
      const struct pg_tensor_decl *in = &m->inputs[j];
      if (!in->name || !in->source) continue;
      const struct pg_mark *sm = &in->source_mark;
      const struct pg_tensor_decl *o;
      if (in->source_module == 0) {
        const struct pg_tensor_decl *p = find_decl(c->primary_inputs, c->n_primary, in->name);
        if (!p)
          ERR_AT(in->mark.line, in->mark.column, 1,
                 "input '%.64s' of module %d has source: primary, but no primary input is named "
                 "'%.64s'", in->name, self, in->name);
        else
          check_same_dtype(s, in, p, "the primary input");
      } else if (in->source_module < 0) {
        ERR_AT(sm->line, sm->column, 2,
               "input '%.64s' of module %d has source '%.64s'; expected 'primary' or 'module_<j>'",
               in->name, self, in->source);
      } else if (in->source_module >= self) {
        ERR_AT(sm->line, sm->column, 2,
               "input '%.64s' of module %d comes from module_%d, which does not run before it "
               "(sources must be module_<j> with j < %d)", in->name, self, in->source_module, self);
      } else {
        const struct pg_module *src = pg_contract_module(c, in->source_module);
        if (!src)
          ERR_AT(sm->line, sm->column, 2, "input '%.64s' of module %d: no module has id %d",
                 in->name, self, in->source_module);
        else if (!(o = find_decl(src->outputs, src->n_outputs, in->name)))
          ERR_AT(sm->line, sm->column, 2,
                 "input '%.64s' of module %d: module_%d has no output named '%.64s'", in->name,
                 self, in->source_module, in->name);
        else
          check_same_dtype(s, in, o, "its source");
      }
    }
  }
  for (int i = 0; i < c->n_final; i++) {
    const struct pg_tensor_decl *f = &c->final_outputs[i];
    if (!f->name || !f->source) continue;
    const struct pg_mark *sm = &f->source_mark;
    const struct pg_tensor_decl *o;
    if (f->source_module <= 0) {
      ERR_AT(sm->line, sm->column, 3, "final output '%.64s' has source '%.64s'; expected 'module_<j>'",
             f->name, f->source);
    } else if (f->source_module > c->n_modules) {
      ERR_AT(sm->line, sm->column, 3,
             "final output '%.64s' comes from module_%d, but the contract has %d module%s",
             f->name, f->source_module, c->n_modules, c->n_modules == 1 ? "" : "s");
    } else {
      const struct pg_module *src = pg_contract_module(c, f->source_module);
      if (!src)
        ERR_AT(sm->line, sm->column, 3, "final output '%.64s': no module has id %d", f->name,
               f->source_module);
      else if (!(o = find_decl(src->outputs, src->n_outputs, f->name)))
        ERR_AT(sm->line, sm->column, 3, "final output '%.64s': module_%d has no output named '%.64s'",
               f->name, f->source_module, f->name);
      else
        check_same_dtype(s, f, o, "its source");
    }
  }
  check_unique(s, c->primary_inputs, c->n_primary, "primary input", "");
  check_unique(s, c->final_outputs, c->n_final, "final output", "");
}

/* ------------------------------------------------------------------ top level */

void pg__contract_from_tree(struct pg__cctx *x, struct pg_contract *c) {
  static const char *const keys[] = {"schema_version", "op", "op_name", "dims", "primary_inputs",
                                     "modules", "final_outputs", "golden", "tolerance",
                                     "composition_verification", NULL};
  struct sctx sc = {.x = x, .c = c};
  struct sctx *s = &sc;
  const struct pg__ynode *root = x->root, *t;
  if (!root || is_null(root)) {
    ERR_AT(1, 1, 8, "the contract is empty; expected a mapping with 'op' and 'modules'");
    return;
  }
  if (root->kind != PG__Y_MAP) {
    ERR(root, 8, "the contract must be a mapping with 'op' and 'modules', found %s",
        kind_name(root));
    return;
  }
  check_keys(s, root, keys, "the contract");

  if ((t = map_get(root, "schema_version"))) {
    int64_t v;
    if (get_int(s, t, "schema_version", &v)) {
      c->schema_version = v > 1000 || v < 0 ? 0 : (int)v;
      if (v != 1) WARN(t, "schema_version %" PRId64 " is not 1; reading it as version 1", v);
    }
  }
  const struct pg__ynode *op = map_get(root, "op"), *op_name = map_get(root, "op_name");
  if (!op && !op_name) {
    ERR(root, 8, "the contract is missing required key 'op' (or 'op_name')");
  } else {
    const struct pg__ynode *o = op ? op : op_name;
    if (get_str(s, o, "'op'", &c->op)) {
      c->op_mark = (struct pg_mark){o->line, text_column(o)};
      check_name(s, o, "the op", c->op);
      if (op && op_name && op_name->kind == PG__Y_SCALAR && strcmp(op_name->value, c->op) != 0)
        WARN(op_name, "op_name '%.64s' differs from op '%.64s'; using op", op_name->value, c->op);
    }
  }
  if ((t = map_get(root, "dims"))) parse_dims(s, t);
  if ((t = map_get(root, "primary_inputs")) && !is_null(t))
    parse_decls(s, t, D_PRIMARY, "'primary_inputs'", "primary input", "", &c->primary_inputs,
                &c->n_primary);

  t = map_get(root, "modules");
  if (!t) {
    ERR(root, 8, "the contract is missing required key 'modules'");
  } else if (is_null(t) || (t->kind == PG__Y_SEQ && t->n_kids == 0)) {
    ERR(t, 8, "'modules' is empty; a contract needs at least one module");
  } else {
    int len = list_len(s, t, "'modules'");
    c->modules = scalloc(s, (size_t)len, sizeof *c->modules);
    s->id_marks = scalloc(s, (size_t)len, sizeof *s->id_marks);
    if (c->modules && s->id_marks) {
      c->n_modules = len;
      for (int i = 0; i < len; i++) parse_module(s, &c->modules[i], t->kids[i], i);
    }
  }
  if ((t = map_get(root, "final_outputs")) && !is_null(t))
    parse_decls(s, t, D_FINAL, "'final_outputs'", "final output", "", &c->final_outputs,
                &c->n_final);
  if ((t = map_get(root, "golden"))) parse_golden(s, &c->op_golden, t, "the op-level golden");
  if ((t = map_get(root, "tolerance")))
    parse_tolerance(s, t, "'tolerance'", &c->atol, &c->rtol, &c->has_tolerance);
  if ((t = map_get(root, "composition_verification"))) parse_composition(s, t);
  if ((t = map_get(root, "module_count"))) {
    int64_t v;
    if (get_int(s, t, "module_count", &v) && c->modules && v != c->n_modules)
      ERR(t, 7, "module_count is %" PRId64 " but %d module%s declared", v, c->n_modules,
          c->n_modules == 1 ? " is" : "s are");
  }
  if (!x->oom) check_wiring(s);

  for (int i = 0; i < s->n_noted; i++) free(s->noted[i]);
  free(s->noted);
  free(s->id_marks);
}
