/* phasegate runner — the suite loader: adversarial_suite.json (DESIGN.md §4).
 *
 * One pass over the text: json_pos.c checks the syntax strictly, records the line:col
 * of every key and value, finds duplicate keys (which cJSON keeps silently) and
 * decodes strings; numbers convert exactly as cJSON converts them. (An earlier
 * version also parsed with cJSON and walked both trees; the second parse and its
 * 400 000 small allocations for a big suite cost more than everything else.) The
 * loader walks that tree, fills struct pg_suite, and validates every case, against
 * the contract when one is given. Every finding goes to the diagnostics list, sorted
 * by position, so one run shows them all. Not for: materialising inputs (materialize.c), listing tests (CLI).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensors/tensors.h"
#include "spec/spec.h"

#define SUITE_MAX_BYTES ((size_t)64 << 20) /* a suite is a few KiB; refuse anything absurd */
#define SUITE_MAX_DEPTH 64
#define SUITE_MAX_VALUES (1 << 20)
#define SUITE_MAX_FINDINGS 1000            /* per load; then one "too many" note */
#define CASE_ID_MAX 128

struct ctx {
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
};

#define GOOD_FILLS ((unsigned)(sizeof ((struct ctx *)0)->good_fills / sizeof(const char *)))

/* ---------------------------------------------------------------- small helpers */

/* The loader reads values from the scanner's tree alone (see json_pos.h). */
static enum pg_json_type jtype(const struct ctx *x, int n) { return x->pos.nodes[n].type; }
static int is_str(const struct ctx *x, int n) { return jtype(x, n) == PG_JSON_STRING; }
static int is_num(const struct ctx *x, int n) { return jtype(x, n) == PG_JSON_NUMBER; }
static int is_obj(const struct ctx *x, int n) { return jtype(x, n) == PG_JSON_OBJECT; }
static int is_bool(const struct ctx *x, int n) {
  return jtype(x, n) == PG_JSON_TRUE || jtype(x, n) == PG_JSON_FALSE;
}
/* Decoded string value / member key of node n (borrowed from the scanner's arena). */
static const char *sval(const struct ctx *x, int n) {
  return x->pos.keys + x->pos.nodes[n].str_off;
}
static const char *kstr(const struct ctx *x, int n) {
  return x->pos.keys + x->pos.nodes[n].key_off;
}
/* Is the key k of member node nd the literal `lit`? Lengths first (keys hold no NUL). */
#define KEY_IS(lit) (nd->key_len == sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0)

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static void finding(struct ctx *x, enum pg_severity sev, int line, int col, const char *rule,
                    const char *fmt, ...) {
  if (sev == PG_SEV_ERROR) x->n_errors++;
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

static const struct pg_json_node *node_at(const struct ctx *x, int n) { return &x->pos.nodes[n]; }

/* Position of a member's key, falling back to its value (array elements). */
static void key_pos(const struct ctx *x, int n, int *line, int *col) {
  const struct pg_json_node *nd = node_at(x, n);
  *line = nd->key_line ? nd->key_line : nd->line;
  *col = nd->key_line ? nd->key_col : nd->col;
}

static const char *kind_name(const struct ctx *x, int n) {
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
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void type_error(struct ctx *x, int n, const char *what,
                       const char *pathfmt, ...) {
  char path[256];
  va_list ap;
  va_start(ap, pathfmt);
  vsnprintf(path, sizeof path, pathfmt, ap);
  va_end(ap);
  finding(x, PG_SEV_ERROR, node_at(x, n)->line, node_at(x, n)->col, "type",
          "%s: expected %s, found %s", path, what, kind_name(x, n));
}

/* "<path>: expected a non-negative integer, got -1" (or "found a string"). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void not_count(struct ctx *x, int n, const char *pathfmt, ...) {
  char path[256];
  va_list ap;
  va_start(ap, pathfmt);
  vsnprintf(path, sizeof path, pathfmt, ap);
  va_end(ap);
  const struct pg_json_node *nd = node_at(x, n);
  if (is_num(x, n))
    finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
            "%s: expected a non-negative integer, got %.*s", path,
            (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
  else
    finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
            "%s: expected a non-negative integer, found %s", path, kind_name(x, n));
}

/* Reads a number node as an exact integer. Plain digit strings are parsed from the
 * text (so 64-bit seeds survive); other spellings must be integral doubles < 2^53.
 * Returns 1 and sets *neg / *mag on success, 0 when not an integer. */
static int exact_integer(const struct ctx *x, int n, int *neg, uint64_t *mag) {
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

static int valid_id(const char *s) {
  if (!*s) return 0;
  for (; *s; s++) {
    char c = *s;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

/* A dim name as shape expressions spell it: [A-Za-z_][A-Za-z0-9_]*. */
static int is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

/* ---------------------------------------------------------------- contract lookups */

static int decl_named(const struct pg_tensor_decl *d, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (d[i].name && strcmp(d[i].name, name) == 0) return 1;
  return 0;
}

static int is_primary(const struct pg_contract *c, const char *name) {
  return decl_named(c->primary_inputs, c->n_primary, name);
}

static int is_module_output(const struct pg_contract *c, const char *name) {
  for (int m = 0; m < c->n_modules; m++)
    if (decl_named(c->modules[m].outputs, c->modules[m].n_outputs, name)) return 1;
  return decl_named(c->final_outputs, c->n_final, name);
}

static int is_any_tensor(const struct pg_contract *c, const char *name) {
  if (is_primary(c, name) || is_module_output(c, name)) return 1;
  for (int m = 0; m < c->n_modules; m++)
    if (decl_named(c->modules[m].inputs, c->modules[m].n_inputs, name)) return 1;
  return 0;
}

/* Does identifier `name` occur in the shape expression `expr`? */
static int expr_mentions(const char *expr, const char *name) {
  size_t len = strlen(name);
  const char *s = expr;
  while (*s) {
    if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_') {
      const char *b = s;
      while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' ||
             (*s >= '0' && *s <= '9'))
        s++;
      if ((size_t)(s - b) == len && memcmp(b, name, len) == 0) return 1;
    } else {
      s++;
    }
  }
  return 0;
}

static int decls_mention(const struct pg_tensor_decl *d, int n, const char *dim) {
  for (int i = 0; i < n; i++)
    for (int a = 0; a < d[i].ndim && a < PG_MAX_NDIM; a++)
      if (d[i].dims[a] && expr_mentions(d[i].dims[a], dim)) return 1;
  return 0;
}

static int is_known_dim(const struct pg_contract *c, const char *dim) {
  if (pg_bindings_get(&c->dims, dim, NULL)) return 1;
  if (decls_mention(c->primary_inputs, c->n_primary, dim)) return 1;
  if (decls_mention(c->final_outputs, c->n_final, dim)) return 1;
  for (int m = 0; m < c->n_modules; m++)
    if (decls_mention(c->modules[m].inputs, c->modules[m].n_inputs, dim) ||
        decls_mention(c->modules[m].outputs, c->modules[m].n_outputs, dim))
      return 1;
  return 0;
}

/* "q, k, v" into buf (truncated with "…" when long). */
static void primary_names(const struct pg_contract *c, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < c->n_primary && n + 1 < size; i++) {
    int w = snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
                     c->primary_inputs[i].name ? c->primary_inputs[i].name : "?");
    if (w < 0 || (size_t)w >= size - n) break;
    n += (size_t)w;
  }
}

/* ---------------------------------------------------------------- case fields */

static int parse_level(const struct ctx *x, int n, int *level) {
  if (is_str(x, n)) {
    const char *s = sval(x, n);
    if (s[0] == 'L' && s[1] >= '1' && s[1] <= '5' && s[2] == '\0') {
      *level = s[1] - '0';
      return 1;
    }
    return 0;
  }
  if (is_num(x, n)) {
    int neg;
    uint64_t m;
    if (exact_integer(x, n, &neg, &m) && !neg && m >= 1 && m <= 5) {
      *level = (int)m;
      return 1;
    }
  }
  return 0;
}

/* allclose | exact | ulp:N | ratio:R (0 <= R <= 1). */
static int valid_compare_rule(const char *s) {
  if (strcmp(s, "allclose") == 0 || strcmp(s, "exact") == 0) return 1;
  if (strncmp(s, "ulp:", 4) == 0) {
    const char *d = s + 4;
    if (!*d || strlen(d) > 18) return 0;
    for (; *d; d++)
      if (*d < '0' || *d > '9') return 0;
    return 1;
  }
  if (strncmp(s, "ratio:", 6) == 0) {
    const char *d = s + 6;
    char *end;
    if (!*d || *d == ' ' || *d == '+' || *d == '-') return 0;
    errno = 0;
    double r = strtod(d, &end);
    return *end == '\0' && errno == 0 && isfinite(r) && r >= 0.0 && r <= 1.0;
  }
  return 0;
}

/* The array first grows straight to `cap` (the object's member count), so a map
 * costs one allocation for its array, not one per entry. */
static size_t grow_to(int count, int cap) {
  return (size_t)(count == 0 && cap > 1 ? cap : count + 1);
}

static int name_value_add(struct pg_name_value **items, int *count, int cap, const char *name,
                          const char *value, struct pg_mark mark) {
  struct pg_name_value *p = *items;
  if (*count == 0 || *count >= cap) {
    p = realloc(*items, grow_to(*count, cap) * sizeof *p);
    if (!p) return PG_ENOMEM;
    *items = p;
  }
  char *n = dup_str(name), *v = dup_str(value);
  if (!n || !v) {
    free(n);
    free(v);
    return PG_ENOMEM;
  }
  p[*count] = (struct pg_name_value){n, v, mark};
  (*count)++;
  return PG_OK;
}

static int binding_add(struct pg_bindings *b, int cap, const char *name, int64_t value,
                       struct pg_mark mark) {
  struct pg_dim_value *p = b->items;
  if (b->count == 0 || b->count >= cap) {
    p = realloc(b->items, grow_to(b->count, cap) * sizeof *p);
    if (!p) return PG_ENOMEM;
    b->items = p;
  }
  char *n = dup_str(name);
  if (!n) return PG_ENOMEM;
  p[b->count++] = (struct pg_dim_value){n, value, mark};
  return PG_OK;
}

/* Non-negative finite number (atol, rtol, relative_gap). */
static int read_tolerance(struct ctx *x, int n, const char *path, const char *key,
                          double *out) {
  if (!is_num(x, n)) {
    finding(x, PG_SEV_ERROR, node_at(x, n)->line, node_at(x, n)->col, "type",
            "%s.%s: expected a number >= 0, found %s", path, key, kind_name(x, n));
    return 0;
  }
  double v = pg_json_pos_number(&x->pos, n);
  if (!isfinite(v) || v < 0) {
    finding(x, PG_SEV_ERROR, node_at(x, n)->line, node_at(x, n)->col, "tolerance",
            "%s.%s: must be a finite number >= 0, got %.*s", path, key,
            (int)(node_at(x, n)->len > 40 ? 40 : node_at(x, n)->len),
            x->data + node_at(x, n)->off);
    return 0;
  }
  *out = v;
  return 1;
}

static void load_shape(struct ctx *x, int on, const char *path,
                       struct pg_case *cs) {
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    if (node_at(x, n)->dup_of >= 0) continue;
    const char *dim = kstr(x, n);
    int neg;
    uint64_t m;
    if (!is_num(x, n) || !exact_integer(x, n, &neg, &m) || neg ||
        m > (uint64_t)INT64_MAX) {
      not_count(x, n, "%s.shape.%s", path, dim);
      continue;
    }
    if (!is_identifier(dim)) {
      int l, c;
      key_pos(x, n, &l, &c);
      finding(x, PG_SEV_ERROR, l, c, "dim",
              "%s.shape: \"%.64s\" is not a dim name (letters, digits, '_'; not starting "
              "with a digit)",
              path, dim);
      continue;
    }
    if (x->contract && !is_known_dim(x->contract, dim)) {
      int l, c;
      key_pos(x, n, &l, &c);
      finding(x, PG_SEV_ERROR, l, c, "dim",
              "%s.shape: unknown dim \"%s\" (not in the contract's dims or any shape)", path,
              dim);
      continue;
    }
    struct pg_mark mk = {node_at(x, n)->line, node_at(x, n)->col};
    if (binding_add(&cs->shape, node_at(x, on)->n_children, dim, (int64_t)m, mk) != PG_OK) x->oom = 1;
  }
}

static int known_good_fill(const struct ctx *x, const char *spec) {
  unsigned n = x->n_good_fills < GOOD_FILLS ? x->n_good_fills : GOOD_FILLS;
  for (unsigned i = 0; i < n; i++)
    if (strcmp(x->good_fills[i], spec) == 0) return 1;
  return 0;
}

static void load_name_map(struct ctx *x, int on, const char *path,
                          const char *key, struct pg_case *cs) {
  int is_fill = strcmp(key, "fill") == 0;
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    if (node_at(x, n)->dup_of >= 0) continue;
    const struct pg_json_node *nd = node_at(x, n);
    const char *name = kstr(x, n);
    int ok = 1;
    if (!is_str(x, n)) {
      finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
              "%s.%s.%s: expected a string, found %s", path, key, name, kind_name(x, n));
      continue;
    }
    if (x->contract) {
      int l, c;
      key_pos(x, n, &l, &c);
      if (is_fill && !is_primary(x->contract, name)) {
        char names[256];
        primary_names(x->contract, names, sizeof names);
        finding(x, PG_SEV_ERROR, l, c, "input",
                "%s.fill: \"%s\" is not a primary input of the contract (primary inputs: %s)",
                path, name, names);
        ok = 0;
      } else if (!is_fill && !is_primary(x->contract, name) &&
                 !is_module_output(x->contract, name)) {
        finding(x, PG_SEV_ERROR, l, c, "input",
                "%s.dtype: \"%s\" names no primary input or module output of the contract",
                path, name);
        ok = 0;
      }
    }
    if (is_fill) {
      if (!known_good_fill(x, sval(x, n))) {
        struct pg_fill fill;
        struct pg_error ferr;
        pg_error_clear(&ferr);
        if (pg_fill_parse(sval(x, n), &fill, &ferr) == PG_OK) {
          x->good_fills[x->n_good_fills++ % GOOD_FILLS] = sval(x, n);
        } else {
          /* Point at the offending character when the string has no escapes. */
          int col = nd->col;
          if (ferr.column > 0 && !memchr(x->data + nd->off, '\\', nd->len))
            col = nd->col + ferr.column;
          finding(x, PG_SEV_ERROR, nd->line, col, "fill", "%s.fill.%s: %s", path, name,
                  ferr.message[0] ? ferr.message : "invalid fill spec");
          ok = 0;
        }
      }
    } else if (pg_dtype_parse(sval(x, n)) == PG_DTYPE_INVALID) {
      finding(x, PG_SEV_ERROR, nd->line, nd->col, "dtype",
              "%s.dtype.%s: unknown dtype \"%s\" (float32, float16, bfloat16, float64, int8, "
              "uint8, int32, int64, bool, int)",
              path, name, sval(x, n));
      ok = 0;
    }
    if (!ok) continue;
    struct pg_mark mk = {nd->line, nd->col};
    int cap = node_at(x, on)->n_children;
    int rc = is_fill ? name_value_add(&cs->fills, &cs->n_fills, cap, name, sval(x, n), mk)
                     : name_value_add(&cs->dtypes, &cs->n_dtypes, cap, name, sval(x, n), mk);
    if (rc != PG_OK) x->oom = 1;
  }
}

static void load_cancellation(struct ctx *x, int on, const char *path,
                              struct pg_case *cs) {
  struct pg_cancellation_stress *cx = &cs->cancellation;
  int have_target = 0;
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, n);
    if (KEY_IS("target") || KEY_IS("expression")) {
      if (!is_str(x, n) || !sval(x, n)[0]) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                "%s.cancellation_stress.%s: expected a non-empty string, found %s", path, k,
                is_str(x, n) ? "an empty string" : kind_name(x, n));
        continue;
      }
      char **dst = k[0] == 't' ? &cx->target : &cx->expression;
      if (k[0] == 't') {
        have_target = 1;
        if (x->contract && !is_any_tensor(x->contract, sval(x, n))) {
          finding(x, PG_SEV_ERROR, nd->line, nd->col, "cancellation",
                  "%s.cancellation_stress.target: \"%s\" names no tensor of the contract", path,
                  sval(x, n));
          continue;
        }
      }
      free(*dst);
      *dst = dup_str(sval(x, n));
      if (!*dst) x->oom = 1;
    } else if (KEY_IS("relative_gap")) {
      double g;
      if (read_tolerance(x, n, path, "cancellation_stress.relative_gap", &g)) {
        if (g <= 0 || g >= 1)
          finding(x, PG_SEV_ERROR, nd->line, nd->col, "cancellation",
                  "%s.cancellation_stress.relative_gap: must be in (0, 1), got %g", path, g);
        else
          cx->relative_gap = g;
      }
    } else if (KEY_IS("seed")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !exact_integer(x, n, &neg, &m) || neg)
        not_count(x, n, "%s.cancellation_stress.seed", path);
      else
        cx->seed = m;
    } else {
      int l, c;
      key_pos(x, n, &l, &c);
      finding(x, PG_SEV_WARNING, l, c, "unknown-key",
              "%s.cancellation_stress: unknown key \"%s\" (ignored)", path, k);
    }
  }
  if (!have_target && !cx->target)
    finding(x, PG_SEV_ERROR, node_at(x, on)->line, node_at(x, on)->col, "required",
            "%s.cancellation_stress: missing required key \"target\"", path);
  cx->present = 1;
}

/* The value of node n as compact JSON: its source text without insignificant
 * whitespace. Unlike re-printing a parsed tree, numbers keep their exact spelling
 * (a 64-bit seed stays exact for exec impls) and it costs one pass over the bytes. */
static char *compact_json(const struct ctx *x, int n) {
  const struct pg_json_node *nd = node_at(x, n);
  const char *t = x->data + nd->off;
  char *out = malloc((size_t)nd->len + 1);
  if (!out) return NULL;
  size_t k = 0, i = 0, len = nd->len;
  while (i < len) {
    /* Copy the run up to the next whitespace or string in one go. */
    size_t j = i;
    while (j < len && t[j] != ' ' && t[j] != '"' && t[j] != '\n' && t[j] != '\t' &&
           t[j] != '\r')
      j++;
    memcpy(out + k, t + i, j - i);
    k += j - i;
    i = j;
    if (i == len) break;
    if (t[i] != '"') {
      i++;
      continue;
    }
    /* A string, quotes included: the scanner checked it, so it ends inside the node. */
    j = i + 1;
    while (j < len && t[j] != '"') j += t[j] == '\\' ? 2 : 1;
    if (j < len) j++;
    memcpy(out + k, t + i, j - i);
    k += j - i;
    i = j;
  }
  out[k] = '\0';
  return out;
}

/* "cases[<index>]" into buf (>= 24 bytes): one per case, so no snprintf. */
static void case_path(char *buf, int index) {
  char digits[12];
  int nd = 0;
  unsigned v = (unsigned)index;
  do {
    digits[nd++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  memcpy(buf, "cases[", 6);
  int k = 6;
  while (nd) buf[k++] = digits[--nd];
  buf[k++] = ']';
  buf[k] = '\0';
}

/* Loads cases[index] (an object) into cs. */
static void load_case(struct ctx *x, int on, int index, struct pg_case *cs,
                      struct pg_mark *id_mark) {
  char path[48];
  case_path(path, index);
  cs->index = index;
  cs->mark = (struct pg_mark){node_at(x, on)->line, node_at(x, on)->col};
  int have_level = 0, have_precision = 0;
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, n);
    if (KEY_IS("id")) {
      if (!is_str(x, n)) {
        type_error(x, n, "a string", "%s.id", path);
      } else if (!valid_id(sval(x, n))) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "id",
                "%s.id: \"%.*s\" is not a valid case id (use only letters, digits, '_', '.', "
                "'-')",
                path, 64, sval(x, n));
      } else if (strlen(sval(x, n)) > CASE_ID_MAX) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "id",
                "%s.id: longer than %d characters", path, CASE_ID_MAX);
      } else {
        cs->id = dup_str(sval(x, n));
        *id_mark = (struct pg_mark){nd->line, nd->col};
        if (!cs->id) x->oom = 1;
      }
    } else if (KEY_IS("level")) {
      have_level = 1;
      if (!parse_level(x, n, &cs->level)) {
        if (is_str(x, n) || is_num(x, n))
          finding(x, PG_SEV_ERROR, nd->line, nd->col, "level",
                  "%s.level: expected 1..5 or \"L1\"..\"L5\", got %.*s", path,
                  (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
        else
          type_error(x, n, "1..5 or \"L1\"..\"L5\"", "%s.level", path);
      }
    } else if (KEY_IS("precision") || KEY_IS("equal_nan")) {
      if (!is_bool(x, n)) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                "%s.%s: expected true or false, found %s", path, k, kind_name(x, n));
      } else if (k[0] == 'p') {
        have_precision = 1;
        cs->precision = (jtype(x, n) == PG_JSON_TRUE);
      } else {
        cs->equal_nan = (jtype(x, n) == PG_JSON_TRUE);
      }
    } else if (KEY_IS("seed")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !exact_integer(x, n, &neg, &m) || neg) {
        not_count(x, n, "%s.seed", path);
      } else {
        cs->has_seed = 1;
        cs->seed = m;
      }
    } else if (KEY_IS("shape") || KEY_IS("dtype") || KEY_IS("fill") ||
               KEY_IS("cancellation_stress")) {
      if (!is_obj(x, n)) {
        type_error(x, n, "an object", "%s.%s", path, k);
        continue;
      }
      if (k[0] == 's') load_shape(x, n, path, cs);
      else if (k[0] == 'c') load_cancellation(x, n, path, cs);
      else load_name_map(x, n, path, k, cs);
    } else if (KEY_IS("atol")) {
      cs->has_atol = read_tolerance(x, n, path, k, &cs->atol);
    } else if (KEY_IS("rtol")) {
      cs->has_rtol = read_tolerance(x, n, path, k, &cs->rtol);
    } else if (KEY_IS("rule")) {
      if (!is_str(x, n)) {
        type_error(x, n, "a string", "%s.rule", path);
      } else if (!valid_compare_rule(sval(x, n))) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "compare-rule",
                "%s.rule: unknown compare rule \"%.*s\" (allclose, exact, ulp:N, ratio:R with "
                "0 <= R <= 1)",
                path, 64, sval(x, n));
      } else {
        cs->rule = dup_str(sval(x, n));
        if (!cs->rule) x->oom = 1;
      }
    }
    /* Any other key is a knob for exec impls: kept in cs->json, not an error. */
  }
  const struct pg_json_node *cn = node_at(x, on);
  if (pg_json_pos_member(&x->pos, on, "id") < 0)
    finding(x, PG_SEV_ERROR, cn->line, cn->col, "required", "%s: missing required key \"id\"",
            path);
  if (!have_level) {
    finding(x, PG_SEV_ERROR, cn->line, cn->col, "required",
            "%s: missing required key \"level\" (1..5 or \"L1\"..\"L5\")", path);
  }
  if (cs->level == 0) cs->level = 1;
  if (!have_precision) cs->precision = cs->level > 1;
  cs->json = compact_json(x, on);
  if (!cs->json) x->oom = 1;
}

/* Reports case ids used twice, at the later occurrence, naming the first. A hash
 * set finds them in one pass (a sort when the ids collide badly); the (rare)
 * duplicates are then reported in the order of a sort by (id, index), the order this
 * check has always used (it matters once the findings cap cuts the list). */
struct id_ref {
  const char *id;
  int index; /* the later use */
  int first; /* the first use */
};

static int id_ref_cmp(const void *a, const void *b) {
  const struct id_ref *p = a, *q = b;
  int c = strcmp(p->id, q->id);
  return c ? c : (p->index > q->index) - (p->index < q->index);
}

static uint64_t id_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

struct dup_list {
  struct id_ref *items;
  int n, cap;
};

static int dup_push(struct dup_list *d, struct id_ref r) {
  if (d->n == d->cap) {
    int c = d->cap ? d->cap * 2 : 16;
    struct id_ref *p = realloc(d->items, (size_t)c * sizeof *p);
    if (!p) return PG_ENOMEM;
    d->items = p;
    d->cap = c;
  }
  d->items[d->n++] = r;
  return PG_OK;
}

/* Hash-set pass. Returns PG_OK, PG_ENOMEM, or PG_ELIMIT when the probes run long
 * (ids crafted to collide): the caller then sorts instead, so the check stays
 * O(n log n) whatever the ids. */
static int dups_hashed(const struct pg_suite *s, struct dup_list *d) {
  size_t cap = 16;
  while (cap < (size_t)s->n_cases * 2) cap *= 2;
  int *slots = malloc(cap * sizeof *slots);
  if (!slots) return PG_ENOMEM;
  memset(slots, 0xff, cap * sizeof *slots); /* -1: empty */
  size_t probes = 0, max_probes = 16 * (size_t)s->n_cases + 1024;
  int rc = PG_OK;
  for (int i = 0; i < s->n_cases && rc == PG_OK; i++) {
    const char *id = s->cases[i].id;
    if (!id) continue;
    size_t h = (size_t)id_hash(id) & (cap - 1);
    while (slots[h] >= 0 && strcmp(s->cases[slots[h]].id, id) != 0) {
      h = (h + 1) & (cap - 1);
      if (++probes > max_probes) rc = PG_ELIMIT;
      if (rc != PG_OK) break;
    }
    if (rc != PG_OK) break;
    if (slots[h] < 0) slots[h] = i;
    else rc = dup_push(d, (struct id_ref){id, i, slots[h]});
  }
  free(slots);
  return rc;
}

/* Sorting pass: ids sorted by (id, index); each later use of an id is a duplicate
 * of the group's first. */
static int dups_sorted(const struct pg_suite *s, struct dup_list *d) {
  struct id_ref *refs = malloc((size_t)(s->n_cases ? s->n_cases : 1) * sizeof *refs);
  if (!refs) return PG_ENOMEM;
  int k = 0;
  for (int i = 0; i < s->n_cases; i++)
    if (s->cases[i].id) refs[k++] = (struct id_ref){s->cases[i].id, i, i};
  qsort(refs, (size_t)k, sizeof *refs, id_ref_cmp);
  int rc = PG_OK;
  for (int a = 0, b; a < k && rc == PG_OK; a = b)
    for (b = a + 1; b < k && rc == PG_OK && strcmp(refs[a].id, refs[b].id) == 0; b++)
      rc = dup_push(d, (struct id_ref){refs[b].id, refs[b].index, refs[a].index});
  free(refs);
  return rc;
}

static void check_unique_ids(struct ctx *x, struct pg_suite *s) {
  struct dup_list d = {NULL, 0, 0};
  int rc = dups_hashed(s, &d);
  if (rc == PG_ELIMIT) {
    d.n = 0;
    rc = dups_sorted(s, &d);
  }
  if (rc != PG_OK) {
    x->oom = 1;
    free(d.items);
    return;
  }
  if (d.n > 1) qsort(d.items, (size_t)d.n, sizeof *d.items, id_ref_cmp);
  for (int k = 0; k < d.n; k++) {
    const struct pg_case *first = &s->cases[d.items[k].first];
    const struct pg_case *dup = &s->cases[d.items[k].index];
    const struct pg_mark *at = &x->id_marks[d.items[k].index];
    finding(x, PG_SEV_ERROR, at->line, at->column, "unique-id",
            "cases[%d].id: duplicate case id \"%s\" (first used by cases[%d] at line %d)",
            dup->index, dup->id, first->index, x->id_marks[d.items[k].first].line);
  }
  free(d.items);
}

/* ---------------------------------------------------------------- top level */

static void load_top(struct ctx *x, struct pg_suite *s) {
  const struct pg_json_node *rn = node_at(x, 0);
  if (!is_obj(x, 0)) {
    finding(x, PG_SEV_ERROR, rn->line, rn->col, "type",
            "expected a JSON object with a \"cases\" array, found %s", kind_name(x, 0));
    return;
  }
  int have_cases = 0;
  int cases_node = -1;
  for (int n = rn->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, n);
    if (KEY_IS("op") || KEY_IS("op_name")) {
      if (!is_str(x, n) || !sval(x, n)[0]) {
        type_error(x, n, "a non-empty string", "%s", k);
        continue;
      }
      if (s->op) {
        finding(x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                "both \"op\" and \"op_name\" given; use one");
        continue;
      }
      s->op = dup_str(sval(x, n));
      if (!s->op) x->oom = 1;
      if (x->contract && x->contract->op && strcmp(x->contract->op, sval(x, n)) != 0)
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "op",
                "%s \"%s\" does not match the contract's op \"%s\"", k, sval(x, n),
                x->contract->op);
    } else if (KEY_IS("total_modules")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !exact_integer(x, n, &neg, &m) || neg || m < 1 ||
          m > 1000) {
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                "total_modules: expected an integer 1..1000, found %.*s",
                (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
        continue;
      }
      s->total_modules = (int)m;
      if (x->contract && x->contract->n_modules != (int)m)
        finding(x, PG_SEV_ERROR, nd->line, nd->col, "total-modules",
                "total_modules is %d but the contract has %d module%s", (int)m,
                x->contract->n_modules, x->contract->n_modules == 1 ? "" : "s");
    } else if (KEY_IS("cases") || KEY_IS("test_cases")) {
      if (have_cases) {
        finding(x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                "both \"cases\" and \"test_cases\" given; use one");
        continue;
      }
      if (!(jtype(x, n) == PG_JSON_ARRAY)) {
        type_error(x, n, "an array of case objects", "%s", k);
        have_cases = 1; /* present, so no "missing" finding */
        continue;
      }
      have_cases = 1;
      cases_node = n;
    } else if (!KEY_IS("schema_version") && !KEY_IS("description") &&
               !KEY_IS("version") && !KEY_IS("comment") &&
               !KEY_IS("notes")) {
      finding(x, PG_SEV_WARNING, nd->key_line, nd->key_col, "unknown-key",
              "unknown top-level key \"%s\" (ignored)", k);
    }
  }
  if (!have_cases) {
    finding(x, PG_SEV_ERROR, rn->line, rn->col, "required",
            "missing required key \"cases\" (or \"test_cases\")");
    return;
  }
  if (cases_node < 0) return;
  int n_cases = node_at(x, cases_node)->n_children;
  if (n_cases == 0) {
    finding(x, PG_SEV_WARNING, node_at(x, cases_node)->line, node_at(x, cases_node)->col,
            "empty", "the suite has no cases");
    return;
  }
  s->cases = calloc((size_t)n_cases, sizeof *s->cases);
  x->id_marks = calloc((size_t)n_cases, sizeof *x->id_marks);
  if (!s->cases || !x->id_marks) {
    x->oom = 1;
    return;
  }
  int index = 0;
  for (int n = node_at(x, cases_node)->first_child; n >= 0;
       n = node_at(x, n)->next_sibling, index++) {
    if (!is_obj(x, n)) {
      type_error(x, n, "a case object", "cases[%d]", index);
      continue;
    }
    load_case(x, n, index, &s->cases[s->n_cases], &x->id_marks[s->n_cases]);
    s->n_cases++;
  }
  check_unique_ids(x, s);
}

/* ---------------------------------------------------------------- public API */

void pg_suite_init(struct pg_suite *s) { memset(s, 0, sizeof *s); }

static void case_reset(struct pg_case *cs) {
  free(cs->id);
  pg_bindings_reset(&cs->shape);
  for (int i = 0; i < cs->n_dtypes; i++) {
    free(cs->dtypes[i].name);
    free(cs->dtypes[i].value);
  }
  free(cs->dtypes);
  for (int i = 0; i < cs->n_fills; i++) {
    free(cs->fills[i].name);
    free(cs->fills[i].value);
  }
  free(cs->fills);
  free(cs->rule);
  free(cs->cancellation.target);
  free(cs->cancellation.expression);
  free(cs->json);
  memset(cs, 0, sizeof *cs);
}

void pg_suite_reset(struct pg_suite *s) {
  if (!s) return;
  for (int i = 0; i < s->n_cases; i++) case_reset(&s->cases[i]);
  free(s->cases);
  free(s->path);
  free(s->op);
  memset(s, 0, sizeof *s);
}

struct diag_ref {
  struct pg_diag d;
  int line, column; /* sort key: the position, or INT_MAX for the "too many" note */
  int order;
};

static int diag_ref_cmp(const void *a, const void *b) {
  const struct diag_ref *p = a, *q = b;
  if (p->line != q->line) return p->line < q->line ? -1 : 1;
  if (p->column != q->column) return p->column < q->column ? -1 : 1;
  return (p->order > q->order) - (p->order < q->order);
}

/* Sorts this load's findings by position (stable), so they read top to bottom; the
 * "too many findings" note stays last. */
static void sort_findings(struct ctx *x) {
  struct pg_diags *d = x->diags;
  int n = d->count - x->first_diag;
  if (n < 2) return;
  struct diag_ref *refs = malloc((size_t)n * sizeof *refs);
  if (!refs) return; /* unsorted is still correct */
  for (int i = 0; i < n; i++) {
    const struct pg_diag *g = &d->items[x->first_diag + i];
    int note = g->severity == PG_SEV_NOTE && !g->rule;
    refs[i] = (struct diag_ref){*g, note ? INT_MAX : g->line, note ? INT_MAX : g->column, i};
  }
  qsort(refs, (size_t)n, sizeof *refs, diag_ref_cmp);
  for (int i = 0; i < n; i++) d->items[x->first_diag + i] = refs[i].d;
  free(refs);
}

/* err <- the first error of this load, formatted as the console prints it. */
static void first_error(struct ctx *x, int rc, struct pg_error *err) {
  if (!err) return;
  for (int i = x->first_diag; i < x->diags->count; i++) {
    const struct pg_diag *g = &x->diags->items[i];
    if (g->severity != PG_SEV_ERROR) continue;
    pg_diag_format(g, err->message, sizeof err->message);
    err->code = rc;
    err->line = g->line;
    err->column = g->column;
    return;
  }
  pg_error_set(err, rc, "%s: %s", x->path, pg_strerror(rc));
}

int pg_suite_load_buffer(const char *path, const char *data, size_t size,
                         const struct pg_contract *contract, struct pg_suite *s,
                         struct pg_diags *diags, struct pg_error *err) {
  struct pg_diags local;
  pg_diags_init(&local);
  struct ctx x;
  memset(&x, 0, sizeof x);
  x.path = path ? path : "<suite>";
  x.data = data ? data : "";
  x.size = data ? size : 0;
  x.diags = diags ? diags : &local;
  x.first_diag = x.diags->count;
  x.contract = contract;
  pg_suite_init(s);
  s->path = dup_str(x.path);
  if (!s->path) {
    pg_diags_reset(&local);
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory", x.path);
  }
  int rc = PG_OK;
  if (x.size > SUITE_MAX_BYTES) {
    finding(&x, PG_SEV_ERROR, 1, 1, "limit", "file is larger than %zu MiB (%zu bytes)",
            SUITE_MAX_BYTES >> 20, x.size);
    rc = PG_ELIMIT;
  } else {
    struct pg_json_limits lim = {SUITE_MAX_DEPTH, SUITE_MAX_VALUES};
    struct pg_json_fail fail;
    rc = pg_json_pos_scan(x.data, x.size, &lim, &x.pos, &fail);
    if (rc == PG_EPARSE || rc == PG_ELIMIT) {
      if (strncmp(fail.message, "empty input", 11) == 0)
        finding(&x, PG_SEV_ERROR, 1, 1, "syntax",
                "empty file: expected a JSON object with a \"cases\" array");
      else
        finding(&x, PG_SEV_ERROR, fail.line, fail.col,
                rc == PG_ELIMIT || fail.is_limit ? "limit" : "syntax", "%s", fail.message);
    } else if (rc == PG_OK) {
      /* Duplicate keys: cJSON would silently keep both; the first one wins below. */
      for (int n = 0; n < x.pos.n && x.pos.n_dups; n++) {
        const struct pg_json_node *nd = &x.pos.nodes[n];
        if (nd->dup_of < 0) continue;
        const struct pg_json_node *first = &x.pos.nodes[nd->dup_of];
        finding(&x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                "duplicate key \"%s\" (first at line %d, column %d)",
                pg_json_pos_key(&x.pos, n), first->key_line, first->key_col);
      }
      load_top(&x, s);
      rc = x.n_errors ? PG_EVALIDATE : PG_OK;
    }
  }
  if (x.oom) rc = PG_ENOMEM;
  pg_json_pos_reset(&x.pos);
  free(x.id_marks);
  sort_findings(&x);
  if (rc == PG_ENOMEM)
    pg_error_set(err, PG_ENOMEM, "%s: out of memory while loading the suite", x.path);
  else if (rc != PG_OK)
    first_error(&x, rc, err);
  pg_diags_reset(&local);
  return rc;
}

int pg_suite_load(const char *path, const struct pg_contract *contract, struct pg_suite *s,
                  struct pg_diags *diags, struct pg_error *err) {
  pg_suite_init(s);
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return pg_error_set(err, e == ENOENT ? PG_ENOENT : PG_EIO, "%s: cannot open: %s", path,
                        strerror(e));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return pg_error_set(err, PG_EIO, "%s: not a regular file", path);
  }
  if ((uint64_t)st.st_size > SUITE_MAX_BYTES) {
    fclose(f);
    if (diags)
      pg_diags_add(diags, PG_SEV_ERROR, path, 1, 1, "limit",
                   "file is larger than %zu MiB (%lld bytes)", SUITE_MAX_BYTES >> 20,
                   (long long)st.st_size);
    return pg_error_set_at(err, PG_ELIMIT, path, 1, 1,
                           "file is larger than %zu MiB (%lld bytes) (limit)",
                           SUITE_MAX_BYTES >> 20, (long long)st.st_size);
  }
  size_t size = (size_t)st.st_size;
  char *buf = malloc(size ? size : 1);
  if (!buf) {
    fclose(f);
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory reading %zu bytes", path, size);
  }
  size_t got = fread(buf, 1, size, f);
  int read_err = ferror(f);
  fclose(f);
  if (read_err || got != size) {
    free(buf);
    return pg_error_set(err, PG_EIO, "%s: read error", path);
  }
  int rc = pg_suite_load_buffer(path, buf, size, contract, s, diags, err);
  free(buf);
  return rc;
}
