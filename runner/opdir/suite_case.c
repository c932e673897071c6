/* phasegate runner — one case of adversarial_suite.json (docs/design.md §4): id, level,
 * precision, seed, shape, dtype and fill maps, tolerances (per output: suite_tolerance.c),
 * compare rule and
 * cancellation_stress, each checked (against the contract when one is given: inputs,
 * dims and dtypes exist) with a finding at the value's line:col; the case object kept
 * as compact JSON for exec requests and the report. Unknown keys are knobs, kept. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/suite_internal.h"
#include "tensors/tensors.h"

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

/* 0..5, "L0".."L5" or "l0".."l5" (level 0: the seed's smallest-shape smoke level). */
static int parse_level(const struct pg__sload *x, int n, int *level) {
  if (is_str(x, n)) {
    const char *s = sval(x, n);
    if ((s[0] == 'L' || s[0] == 'l') && s[1] >= '0' && s[1] <= '5' && s[2] == '\0') {
      *level = s[1] - '0';
      return 1;
    }
    return 0;
  }
  if (is_num(x, n)) {
    int neg;
    uint64_t m;
    if (pg__sexact_int(x, n, &neg, &m) && !neg && m <= 5) {
      *level = (int)m;
      return 1;
    }
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
  char *n = pg_strdup(name), *v = pg_strdup(value);
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
  char *n = pg_strdup(name);
  if (!n) return PG_ENOMEM;
  p[b->count++] = (struct pg_dim_value){n, value, mark};
  return PG_OK;
}

static void load_shape(struct pg__sload *x, int on, const char *path,
                       struct pg_case *cs) {
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    if (node_at(x, n)->dup_of >= 0) continue;
    const char *dim = kstr(x, n);
    if (dim[0] == '_') continue; /* a comment */
    int neg;
    uint64_t m;
    if (!is_num(x, n) || !pg__sexact_int(x, n, &neg, &m) || neg ||
        m > (uint64_t)INT64_MAX) {
      pg__snot_count(x, n, "%s.shape.%s", path, dim);
      continue;
    }
    if (!is_identifier(dim)) {
      int l, c;
      pg__skey_pos(x, n, &l, &c);
      pg__sfind(x, PG_SEV_ERROR, l, c, "dim",
                "%s.shape: \"%.64s\" is not a dim name (letters, digits, '_'; not starting "
                "with a digit)",
                path, dim);
      continue;
    }
    if (x->contract && !is_known_dim(x->contract, dim)) {
      int l, c;
      pg__skey_pos(x, n, &l, &c);
      pg__sfind(x, PG_SEV_ERROR, l, c, "dim",
                "%s.shape: unknown dim \"%s\" (not in the contract's dims or any shape)", path,
                dim);
      continue;
    }
    struct pg_mark mk = {node_at(x, n)->line, node_at(x, n)->col};
    if (binding_add(&cs->shape, node_at(x, on)->n_children, dim, (int64_t)m, mk) != PG_OK) x->oom = 1;
  }
}

static int known_good_fill(const struct pg__sload *x, const char *spec) {
  unsigned n = x->n_good_fills < GOOD_FILLS ? x->n_good_fills : GOOD_FILLS;
  for (unsigned i = 0; i < n; i++)
    if (strcmp(x->good_fills[i], spec) == 0) return 1;
  return 0;
}

/* A dtype for every floating primary input the case does not name (the "default" of
 * a dtype map, or a dtype given as one string), checked, at node n. */
static void load_default_dtype(struct pg__sload *x, int n, const char *path, const char *what,
                               struct pg_case *cs) {
  const struct pg_json_node *nd = node_at(x, n);
  if (!is_str(x, n)) {
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type", "%s.%s: expected a string, found %s",
              path, what, pg__skind(x, n));
    return;
  }
  if (pg_dtype_parse(sval(x, n)) == PG_DTYPE_INVALID) {
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "dtype",
              "%s.%s: unknown dtype \"%s\" (float32, float16, bfloat16, float64, int8, uint8, "
              "int32, int64, bool, int)",
              path, what, sval(x, n));
    return;
  }
  if (!x->contract) return; /* which inputs are floating is the contract's to say */
  const struct pg_contract *c = x->contract;
  struct pg_mark mk = {nd->line, nd->col};
  for (int i = 0; i < c->n_primary; i++) {
    const struct pg_tensor_decl *d = &c->primary_inputs[i];
    if (!d->name || !pg_dtype_is_float(d->dtype)) continue;
    int named = 0;
    for (int j = 0; j < cs->n_dtypes && !named; j++) named = strcmp(cs->dtypes[j].name, d->name) == 0;
    if (!named &&
        /* cap = count: the array grows by one (it was sized by the map's members) */
        name_value_add(&cs->dtypes, &cs->n_dtypes, cs->n_dtypes, d->name, sval(x, n), mk) != PG_OK)
      x->oom = 1;
  }
}

static void load_name_map(struct pg__sload *x, int on, const char *path,
                          const char *key, struct pg_case *cs) {
  int is_fill = strcmp(key, "fill") == 0;
  int default_node = -1; /* dtype: {"default": …} */
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    if (node_at(x, n)->dup_of >= 0) continue;
    const struct pg_json_node *nd = node_at(x, n);
    const char *name = kstr(x, n);
    int ok = 1;
    if (name[0] == '_') continue; /* a comment */
    if (!is_fill && strcmp(name, "default") == 0 &&
        !(x->contract && is_any_tensor(x->contract, name))) {
      default_node = n;
      continue;
    }
    if (!is_str(x, n)) {
      pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                "%s.%s.%s: expected a string, found %s", path, key, name, pg__skind(x, n));
      continue;
    }
    if (x->contract) {
      int l, c;
      pg__skey_pos(x, n, &l, &c);
      if (is_fill && !is_primary(x->contract, name)) {
        char names[256];
        primary_names(x->contract, names, sizeof names);
        pg__sfind(x, PG_SEV_ERROR, l, c, "input",
                  "%s.fill: \"%s\" is not a primary input of the contract (primary inputs: %s)",
                  path, name, names);
        ok = 0;
      } else if (!is_fill && !is_primary(x->contract, name) &&
                 !is_module_output(x->contract, name)) {
        pg__sfind(x, PG_SEV_ERROR, l, c, "input",
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
          pg__sfind(x, PG_SEV_ERROR, nd->line, col, "fill", "%s.fill.%s: %s", path, name,
                    ferr.message[0] ? ferr.message : "invalid fill spec");
          ok = 0;
        }
      }
    } else if (pg_dtype_parse(sval(x, n)) == PG_DTYPE_INVALID) {
      pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "dtype",
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
  if (default_node >= 0) load_default_dtype(x, default_node, path, "dtype.default", cs);
}

static void load_cancellation(struct pg__sload *x, int on, const char *path,
                              struct pg_case *cs) {
  struct pg_cancellation_stress *cx = &cs->cancellation;
  int have_target = 0;
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, n);
    if (k[0] == '_') continue; /* a comment */
    if (KEY_IS("target") || KEY_IS("expression")) {
      if (!is_str(x, n) || !sval(x, n)[0]) {
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                  "%s.cancellation_stress.%s: expected a non-empty string, found %s", path, k,
                  is_str(x, n) ? "an empty string" : pg__skind(x, n));
        continue;
      }
      char **dst = k[0] == 't' ? &cx->target : &cx->expression;
      if (k[0] == 't') {
        have_target = 1;
        if (x->contract && !is_any_tensor(x->contract, sval(x, n))) {
          pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "cancellation",
                    "%s.cancellation_stress.target: \"%s\" names no tensor of the contract", path,
                    sval(x, n));
          continue;
        }
      }
      free(*dst);
      *dst = pg_strdup(sval(x, n));
      if (!*dst) x->oom = 1;
    } else if (KEY_IS("relative_gap")) {
      double g;
      if (pg__sread_tolerance(x, n, path, "cancellation_stress.relative_gap", &g)) {
        if (g <= 0 || g >= 1)
          pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "cancellation",
                    "%s.cancellation_stress.relative_gap: must be in (0, 1), got %g", path, g);
        else
          cx->relative_gap = g;
      }
    } else if (KEY_IS("seed")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !pg__sexact_int(x, n, &neg, &m) || neg)
        pg__snot_count(x, n, "%s.cancellation_stress.seed", path);
      else
        cx->seed = m;
    } else {
      int l, c;
      pg__skey_pos(x, n, &l, &c);
      pg__sfind(x, PG_SEV_WARNING, l, c, "unknown-key",
                "%s.cancellation_stress: unknown key \"%s\" (ignored)", path, k);
    }
  }
  if (!have_target && !cx->target)
    pg__sfind(x, PG_SEV_ERROR, node_at(x, on)->line, node_at(x, on)->col, "required",
              "%s.cancellation_stress: missing required key \"target\"", path);
  cx->present = 1;
}

/* The value of node n as compact JSON: its source text without insignificant
 * whitespace. Unlike re-printing a parsed tree, numbers keep their exact spelling
 * (a 64-bit seed stays exact for exec impls) and it costs one pass over the bytes. */
static char *compact_json(const struct pg__sload *x, int n) {
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
void pg__sload_case(struct pg__sload *x, int on, int index, struct pg_case *cs,
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
        pg__stype_error(x, n, "a string", "%s.id", path);
      } else if (!valid_id(sval(x, n))) {
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "id",
                  "%s.id: \"%.*s\" is not a valid case id (use only letters, digits, '_', '.', "
                  "'-')",
                  path, 64, sval(x, n));
      } else if (strlen(sval(x, n)) > CASE_ID_MAX) {
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "id",
                  "%s.id: longer than %d characters", path, CASE_ID_MAX);
      } else {
        cs->id = pg_strdup(sval(x, n));
        *id_mark = (struct pg_mark){nd->line, nd->col};
        if (!cs->id) x->oom = 1;
      }
    } else if (KEY_IS("level")) {
      have_level = 1;
      if (!parse_level(x, n, &cs->level)) {
        if (is_str(x, n) || is_num(x, n))
          pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "level",
                    "%s.level: expected 0..5 or \"L0\"..\"L5\", got %.*s", path,
                    (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
        else
          pg__stype_error(x, n, "0..5 or \"L0\"..\"L5\"", "%s.level", path);
      }
    } else if (KEY_IS("precision") || KEY_IS("equal_nan")) {
      if (!is_bool(x, n)) {
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                  "%s.%s: expected true or false, found %s", path, k, pg__skind(x, n));
      } else if (k[0] == 'p') {
        have_precision = 1;
        cs->precision = (jtype(x, n) == PG_JSON_TRUE);
      } else {
        cs->equal_nan = (jtype(x, n) == PG_JSON_TRUE);
      }
    } else if (KEY_IS("seed")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !pg__sexact_int(x, n, &neg, &m) || neg) {
        pg__snot_count(x, n, "%s.seed", path);
      } else {
        cs->has_seed = 1;
        cs->seed = m;
      }
    } else if (KEY_IS("dtype") && is_str(x, n)) {
      load_default_dtype(x, n, path, "dtype", cs); /* one dtype, every floating input */
    } else if (KEY_IS("shape") || KEY_IS("dtype") || KEY_IS("fill") ||
               KEY_IS("cancellation_stress")) {
      if (!is_obj(x, n)) {
        pg__stype_error(x, n, "an object", "%s.%s", path, k);
        continue;
      }
      if (k[0] == 's') load_shape(x, n, path, cs);
      else if (k[0] == 'c') load_cancellation(x, n, path, cs);
      else load_name_map(x, n, path, k, cs);
    } else if (KEY_IS("modes")) {
      char mp[64];
      snprintf(mp, sizeof mp, "%s.modes", path);
      if (!cs->mode_policies) pg__sload_mode_policies(x, n, mp, &cs->mode_policies, &cs->n_mode_policies);
    } else if (KEY_IS("atol")) {
      cs->has_atol = pg__sread_tolerance(x, n, path, k, &cs->atol);
    } else if (KEY_IS("rtol")) {
      cs->has_rtol = pg__sread_tolerance(x, n, path, k, &cs->rtol);
    } else if (KEY_IS("rule")) {
      if (pg__scheck_rule(x, n, path)) {
        cs->rule = pg_strdup(sval(x, n));
        if (!cs->rule) x->oom = 1;
      }
    } else if (KEY_IS("tolerance")) {
      pg__sload_tolerance(x, n, path, cs);
    }
    /* Any other key is a knob for exec impls: kept in cs->json, not an error. */
  }
  const struct pg_json_node *cn = node_at(x, on);
  if (pg_json_pos_member(&x->pos, on, "id") < 0)
    pg__sfind(x, PG_SEV_ERROR, cn->line, cn->col, "required", "%s: missing required key \"id\"",
              path);
  if (!have_level) {
    pg__sfind(x, PG_SEV_ERROR, cn->line, cn->col, "required",
              "%s: missing required key \"level\" (0..5 or \"L0\"..\"L5\")", path);
  }
  /* L1 is structural (values not compared) unless it says otherwise; L0 smoke and
   * L2..L5 compare values, as the seed's runner does. */
  cs->has_precision = have_precision;
  if (!have_precision) cs->precision = cs->level != 1;
  cs->json = compact_json(x, on);
  if (!cs->json) x->oom = 1;
}
