/* phasegate runner — `composition_verification` of module_interfaces.yaml: atol,
 * rtol, seeds and shapes, each shape turned into dim bindings (struct pg_bindings)
 * whatever real-world form it is written in (docs/design.md §3 "Real files load
 * unchanged"):
 *
 *   {B: 1, S: 64}               a dim map
 *   {x: "[1, 128]"}             a per-input shape map (list or string shapes): each
 *   {x: [1, 64], scale: [1]}    axis whose symbolic shape is a bare dim name binds
 *                               that dim (two inputs binding it differently is an
 *                               error naming both); any other axis (a literal, S*2)
 *                               must evaluate to the given size; ranks must agree
 *   [1, 128]                    a bare list of ints, in the order in which dims first
 *                               appear in the primary inputs' shapes
 *
 * `shapes` is a list of these, or one of them. Not for: running the verification
 * (cmd_selftest.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/goldens.h"
#include "opdir/contract_internal.h"

/* ------------------------------------------------------------------ helpers */

static const struct pg_tensor_decl *primary_named(const struct pg_contract *c, const char *n) {
  for (int i = 0; i < c->n_primary; i++)
    if (c->primary_inputs[i].name && strcmp(c->primary_inputs[i].name, n) == 0)
      return &c->primary_inputs[i];
  return NULL;
}

/* Adds name = v to b (the caller sized b->items). */
static int bind(struct pg__sctx *s, struct pg_bindings *b, const char *name, int64_t v,
                struct pg_mark mark) {
  char *copy = pg__sdup(s, name);
  if (!copy) return 0;
  b->items[b->count++] = (struct pg_dim_value){copy, v, mark};
  return 1;
}

/* The dims of the primary inputs' shapes that are bare names, in order of first
 * appearance (the order of a bare list of ints). */
static int dims_in_order(const struct pg_contract *c, const char **out, int max) {
  int n = 0;
  for (int i = 0; i < c->n_primary; i++)
    for (int a = 0; a < c->primary_inputs[i].ndim; a++) {
      const char *d = c->primary_inputs[i].dims[a];
      if (!d || !pg__valid_identifier(d)) continue;
      int seen = 0;
      for (int k = 0; k < n && !seen; k++) seen = strcmp(out[k], d) == 0;
      if (!seen && n < max) out[n++] = d;
    }
  return n;
}

/* A shape given as ints: a YAML list of ints or a string "[1, 128]" into v[]; the
 * axis count through *n. 0 after a finding. */
static int int_shape(struct pg__sctx *s, const struct pg__ynode *n, const char *what,
                     int64_t *v, int *nv) {
  *nv = 0;
  if (n->kind == PG__Y_SEQ) {
    if (n->n_kids > PG_MAX_NDIM) {
      PG__ERR(n, 5, "%s has %d axes; at most %d are supported", what, n->n_kids, PG_MAX_NDIM);
      return 0;
    }
    for (int i = 0; i < n->n_kids; i++) {
      if (!pg__dim_value(s, what, n->kids[i], &v[i])) return 0;
    }
    *nv = n->n_kids;
    return 1;
  }
  if (n->kind == PG__Y_SCALAR && n->plain) { /* {scale: 1}: a 1-D shape */
    if (!pg__dim_value(s, what, n, &v[0])) return 0;
    *nv = 1;
    return 1;
  }
  if (n->kind != PG__Y_SCALAR) {
    PG__ERR(n, 5, "%s must be a list of sizes like [1, 128] or a string like \"[1, 128]\"", what);
    return 0;
  }
  const char *p = n->value;
  while (*p == ' ') p++;
  int bracket = *p == '[';
  if (bracket) p++;
  while (*p && *p != ']') {
    char *end;
    while (*p == ' ') p++;
    long long x = strtoll(p, &end, 10);
    if (end == p || x < 0 || *nv == PG_MAX_NDIM) {
      PG__ERR(n, 5, "%s, '%.64s', is not a list of sizes like \"[1, 128]\"", what, n->value);
      return 0;
    }
    v[(*nv)++] = x;
    p = end;
    while (*p == ' ') p++;
    if (*p == ',') p++;
    else if (*p && *p != ']') p = "!"; /* garbage: the next round reports it */
  }
  if (bracket != (*p == ']')) {
    PG__ERR(n, 5, "%s, '%.64s', is not a list of sizes like \"[1, 128]\"", what, n->value);
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ the forms */

/* {B: 1, S: 64} */
static void dim_map(struct pg__sctx *s, const struct pg__ynode *m, struct pg_bindings *b) {
  struct pg_contract *c = s->c;
  for (int j = 0; j + 1 < m->n_kids; j += 2) {
    const struct pg__ynode *k = m->kids[j], *v = m->kids[j + 1];
    if (k->kind != PG__Y_SCALAR || !pg__valid_identifier(k->value) || k->len >= PG_NAME_MAX) {
      PG__ERR(k, 5, "composition shape key '%.64s' is not a dim name",
              k->kind == PG__Y_SCALAR ? k->value : "");
      continue;
    }
    if (s->has_dims && !pg_bindings_get(&c->dims, k->value, NULL))
      PG__ERR(k, 5, "composition shape binds unknown dim '%s' (dims: declares %s)", k->value,
              s->dims_list[0] ? s->dims_list : "none");
    char w[128];
    snprintf(w, sizeof w, "dim '%s'", k->value);
    int64_t val;
    if (pg__dim_value(s, w, v, &val)) bind(s, b, k->value, val, (struct pg_mark){k->line, k->column});
  }
}

/* Checks an axis that is not a bare dim name once the bare ones are bound. */
static void check_expr_axis(struct pg__sctx *s, const struct pg_bindings *b,
                            const struct pg_tensor_decl *d, int a, int64_t want,
                            const struct pg__ynode *at) {
  struct pg_bindings all = {0};
  struct pg_error e;
  pg_error_clear(&e);
  int64_t got = 0;
  if (pg_bindings_merge(&s->c->dims, b, &all, &e) != PG_OK) {
    s->x->oom = 1;
    return;
  }
  int rc = pg_shape_expr_eval(d->dims[a], &all, &got, &e);
  pg_bindings_reset(&all);
  if (rc != PG_OK)
    PG__ERR(at, 5, "composition shape of '%s', axis %d ('%s'): %s", d->name, a, d->dims[a],
            e.message);
  else if (got != want)
    PG__ERR(at, 5,
            "composition shape of '%s', axis %d is %" PRId64 ", but its shape '%s' evaluates to "
            "%" PRId64 " here",
            d->name, a, want, d->dims[a], got);
}

/* Binds the bare-name axes of input d (shape vals) into b; a dim already bound to
 * another size is an error naming both inputs. owner[i]: the input binding i. */
static void bind_axes(struct pg__sctx *s, const struct pg_tensor_decl *d, const int64_t *vals,
                      const struct pg__ynode *v, struct pg_bindings *b, const char **owner) {
  for (int a = 0; a < d->ndim; a++) {
    const char *dim = d->dims[a];
    if (!dim || !pg__valid_identifier(dim)) continue;
    int i = 0;
    while (i < b->count && strcmp(b->items[i].name, dim) != 0) i++;
    if (i == b->count) {
      if (bind(s, b, dim, vals[a], (struct pg_mark){v->line, v->column})) owner[i] = d->name;
    } else if (b->items[i].value != vals[a]) {
      PG__ERR(v, 5,
              "composition shape: dim '%s' is %" PRId64 " in '%s' but %" PRId64
              " in '%s' (line %d)",
              dim, vals[a], d->name, b->items[i].value, owner[i], b->items[i].mark.line);
    }
  }
}

/* {x: [1, 64], scale: [1]}: every given input's shape matched against its symbolic
 * one: bare dim names bind first, then every other axis is checked. */
static void input_map(struct pg__sctx *s, const struct pg__ynode *m, struct pg_bindings *b,
                      int cap) {
  int n = m->n_kids / 2;
  int64_t(*vals)[PG_MAX_NDIM] = pg__scalloc(s, (size_t)n, sizeof *vals);
  const struct pg_tensor_decl **decl = pg__scalloc(s, (size_t)n, sizeof *decl);
  const char **owner = pg__scalloc(s, (size_t)cap, sizeof *owner);
  for (int j = 0; vals && decl && owner && j < n; j++) {
    const struct pg__ynode *k = m->kids[2 * j], *v = m->kids[2 * j + 1];
    const struct pg_tensor_decl *d = primary_named(s->c, k->value);
    if (!d || d->ndim < 0) continue; /* the input's own finding was reported */
    char what[128];
    snprintf(what, sizeof what, "the composition shape of '%s'", d->name);
    int nv;
    if (!int_shape(s, v, what, vals[j], &nv)) continue;
    if (nv != d->ndim) {
      PG__ERR(v, 5, "%s has %d ax%s, but '%s' is declared with %d", what, nv,
              nv == 1 ? "is" : "es", d->name, d->ndim);
      continue;
    }
    decl[j] = d;
    bind_axes(s, d, vals[j], v, b, owner);
  }
  for (int j = 0; vals && decl && owner && j < n; j++)
    for (int a = 0; decl[j] && a < decl[j]->ndim; a++)
      if (decl[j]->dims[a] && !pg__valid_identifier(decl[j]->dims[a]))
        check_expr_axis(s, b, decl[j], a, vals[j][a], m->kids[2 * j + 1]);
  free(vals);
  free(decl);
  free(owner);
}

/* [1, 128]: the dims in order of first appearance in the primary inputs' shapes. */
static void int_list(struct pg__sctx *s, const struct pg__ynode *m, struct pg_bindings *b) {
  const char *order[PG__CONTRACT_MAX_LIST];
  int n = dims_in_order(s->c, order, PG__CONTRACT_MAX_LIST);
  if (m->n_kids != n) {
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && used + 1 < sizeof list; i++) {
      int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", order[i]);
      if (w < 0) break;
      used += (size_t)w;
    }
    PG__ERR(m, 5,
            "a composition shape written as a list gives dims in the order they first appear in "
            "the primary inputs' shapes (%s): %d value%s expected, found %d",
            n ? list : "none", n, n == 1 ? "" : "s", m->n_kids);
    return;
  }
  for (int i = 0; i < n; i++) {
    char w[128];
    snprintf(w, sizeof w, "dim '%s'", order[i]);
    int64_t val;
    if (pg__dim_value(s, w, m->kids[i], &val))
      bind(s, b, order[i], val, (struct pg_mark){m->kids[i]->line, m->kids[i]->column});
  }
}

/* One shape in any form into b. */
static void comp_shape(struct pg__sctx *s, const struct pg__ynode *m, struct pg_bindings *b) {
  int n_items = m->kind == PG__Y_MAP ? m->n_kids / 2 : m->n_kids;
  if (m->kind == PG__Y_MAP) { /* room for every axis of every input named */
    for (int j = 0; j + 1 < m->n_kids; j += 2) n_items += PG_MAX_NDIM;
  }
  if (m->kind == PG__Y_SCALAR) {
    PG__ERR(m, 5, "a composition shape must be a dim map {B: 1}, an input shape map "
                  "{x: [1, 64]} or a list of sizes, found a scalar");
    return;
  }
  b->items = pg__scalloc(s, (size_t)n_items, sizeof *b->items);
  if (!b->items) return;
  if (m->kind == PG__Y_SEQ) return int_list(s, m, b);
  /* A mapping: input shapes when a key names a primary input and its value is a
   * shape (a list or a quoted string), dims otherwise; one form per mapping. */
  int inputs = 0, dims = 0;
  for (int j = 0; j + 1 < m->n_kids; j += 2) {
    const struct pg__ynode *k = m->kids[j], *v = m->kids[j + 1];
    int is_input = k->kind == PG__Y_SCALAR && primary_named(s->c, k->value) &&
                   (v->kind == PG__Y_SEQ || (v->kind == PG__Y_SCALAR && !v->plain) ||
                    !pg_bindings_get(&s->c->dims, k->value, NULL));
    inputs += is_input;
    dims += !is_input;
  }
  if (inputs && dims) {
    PG__ERR(m, 5, "a composition shape mixes input shapes and dims; write {x: [1, 64]} or "
                  "{B: 1, S: 64}");
    return;
  }
  if (inputs) input_map(s, m, b, n_items);
  else dim_map(s, m, b);
}

void pg__parse_composition(struct pg__sctx *s, const struct pg__ynode *n) {
  static const char *const keys[] = {"atol", "rtol", "seeds", "shapes", NULL};
  struct pg_contract *c = s->c;
  if (!pg__want(s, n, PG__Y_MAP, "'composition_verification'")) return;
  pg__check_keys(s, n, keys, "'composition_verification'");
  c->has_composition = 1;
  const struct pg__ynode *t;
  if ((t = pg__ymap_get(n, "atol")) &&
      pg__get_num(s, t, "atol in 'composition_verification'", &c->comp_atol) && c->comp_atol < 0)
    PG__ERR(t, 8, "atol in 'composition_verification' is negative");
  if ((t = pg__ymap_get(n, "rtol")) &&
      pg__get_num(s, t, "rtol in 'composition_verification'", &c->comp_rtol) && c->comp_rtol < 0)
    PG__ERR(t, 8, "rtol in 'composition_verification' is negative");
  if ((t = pg__ymap_get(n, "seeds")) && !pg__ynull(t)) {
    int single = t->kind == PG__Y_SCALAR;
    int len = single ? 1 : pg__list_len(s, t, "'seeds'");
    c->comp_seeds = pg__scalloc(s, (size_t)len, sizeof *c->comp_seeds);
    for (int i = 0; c->comp_seeds && i < len; i++) {
      int64_t v;
      if (!pg__get_int(s, single ? t : t->kids[i], "a seed", &v)) continue;
      if (v < 0) {
        PG__ERR(single ? t : t->kids[i], 8, "seed %" PRId64 " is negative", v);
        continue;
      }
      c->comp_seeds[c->n_comp_seeds++] = (uint64_t)v;
    }
  }
  if (!(t = pg__ymap_get(n, "shapes")) || pg__ynull(t)) return;
  /* One shape (a mapping, or a list of sizes) or a list of shapes. */
  int one = t->kind == PG__Y_MAP;
  if (t->kind == PG__Y_SEQ && t->n_kids > 0) {
    one = 1;
    for (int i = 0; i < t->n_kids; i++) one &= t->kids[i]->kind == PG__Y_SCALAR;
  }
  int len = one ? 1 : pg__list_len(s, t, "'shapes'");
  c->comp_shapes = pg__scalloc(s, (size_t)len, sizeof *c->comp_shapes);
  if (!c->comp_shapes) return;
  c->n_comp_shapes = len;
  for (int i = 0; i < len && !s->x->oom; i++)
    comp_shape(s, one ? t : t->kids[i], &c->comp_shapes[i]);
}
