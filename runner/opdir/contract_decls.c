/* phasegate runner — tensor declarations in module_interfaces.yaml: primary inputs,
 * module inputs and outputs, final outputs (name, shape, dtype, fill, source,
 * tolerance), and their shapes, written as a list or as a string "[B, T]", each axis
 * a shape expression (docs/design.md §3 rules 5, 6, 7). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/compare.h"
#include "phasegate/goldens.h"
#include "opdir/contract_internal.h"
#include "tensors/tensors.h"

/* ------------------------------------------------------------------ shapes */

struct axis_ctx {
  struct pg__sctx *s;
  int line, column;  /* of the axis text */
  int all_bound;
  const char *what;
};

static int axis_name_cb(void *user, const char *name, size_t len, int offset) {
  struct axis_ctx *a = user;
  struct pg__sctx *s = a->s;
  char buf[PG_NAME_MAX];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, name, len);
  buf[len] = '\0';
  if (pg_bindings_get(&s->c->dims, buf, NULL)) return 0;
  a->all_bound = 0;
  if (s->has_dims) {
    PG__ERR_AT(a->line, a->column + offset, 5,
               "unknown dim '%s' in the shape of %s (dims: declares %s)",
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
static void check_shape(struct pg__sctx *s, const struct pg_tensor_decl *d, const char *what,
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
      PG__ERR_AT(a.line, a.column + (e.column > 0 ? e.column - 1 : 0), 5,
                 "shape of %s, axis %d: %s",
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
      PG__ERR_AT(a.line, a.column + (e.column > 0 ? e.column - 1 : 0), 5,
                 "shape of %s, axis %d: %s with the default dims", what, i, e.message);
      all_bound = 0;
    } else if (v < 0) {
      PG__ERR_AT(a.line, a.column, 5, "shape of %s, axis %d evaluates to %" PRId64
                 " with the default dims; sizes must be >= 0", what, i, v);
      all_bound = 0;
    } else if (__builtin_mul_overflow(total, v, &total)) {
      total_ok = 0;
    }
  }
  if (all_bound && !total_ok)
    PG__ERR(where, 5, "the shape of %s has more than 2^63 elements with the default dims", what);
}

static void set_axis(struct pg__sctx *s, struct pg_tensor_decl *d, int i, const char *text,
                     size_t len,
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
static void parse_shape(struct pg__sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                        const char *what) {
  d->ndim = 0;
  if (n->kind == PG__Y_MAP) {
    PG__ERR(n, 8, "the shape of %s must be a list like [B, S] or a string like \"[B, S]\", found a "
              "mapping", what);
    return;
  }
  if (n->kind == PG__Y_SEQ) {
    if (n->n_kids > PG_MAX_NDIM) {
      PG__ERR(n, 5, "the shape of %s has %d axes; at most %d are supported", what, n->n_kids,
              PG_MAX_NDIM);
      return;
    }
    int bad = 0;
    for (int i = 0; i < n->n_kids; i++) {
      const struct pg__ynode *k = n->kids[i];
      if (k->kind != PG__Y_SCALAR) {
        PG__ERR(k, 8, "axis %d of the shape of %s must be an integer or an expression, found %s", i,
                what, pg__ykind_name(k));
        bad = 1;
        continue;
      }
      set_axis(s, d, i, k->value, strlen(k->value), k->line, pg__ytext_column(k));
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
  int col0 = pg__ytext_column(n);
  while (b < e && (v[b] == ' ' || v[b] == '\t')) b++;
  while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
  if (b < e && v[b] == '[') {
    if (v[e - 1] != ']' || e - b < 2) {
      PG__ERR_AT(n->line, col0 + (int)b, 5, "the shape of %s, '%.64s', has no closing ']'", what,
                 v);
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
      PG__ERR_AT(n->line, col0 + (int)ab, 5, "the shape of %s, '%.64s', has an empty axis", what,
                 v);
      for (int i = 0; i < ndim; i++) {
        free(d->dims[i]);
        d->dims[i] = NULL;
      }
      return;
    }
    if (ndim == PG_MAX_NDIM) {
      PG__ERR(n, 5, "the shape of %s has more than %d axes", what, PG_MAX_NDIM);
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

static void parse_dtype(struct pg__sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                        const char *what) {
  char w[512];
  snprintf(w, sizeof w, "the dtype of %s", what);
  if (!pg__want(s, n, PG__Y_SCALAR, w)) return;
  d->dtype_mark = (struct pg_mark){n->line, pg__ytext_column(n)};
  d->dtype = pg_dtype_parse(n->value);
  if (d->dtype == PG_DTYPE_INVALID)
    PG__ERR(n, 6,
            "unknown dtype '%.64s' for %s (expected float32, float16, bfloat16, float64, int8, "
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

static void parse_decl(struct pg__sctx *s, struct pg_tensor_decl *d, const struct pg__ynode *n,
                       enum pg__decl_kind kind, const char *prefix, const char *suffix, int index) {
  char what_in[200];
  snprintf(what_in, sizeof what_in, "%s #%d%s", prefix, index + 1, suffix);
  static const char *const k_primary[] = {"name", "shape", "dtype", "fill", NULL};
  static const char *const k_input[] = {"name", "source", "shape", "dtype", NULL};
  static const char *const k_output[] = {"name", "shape", "dtype", "atol", "rtol", "rule", NULL};
  static const char *const k_final[] = {"name", "source", "shape", "dtype", NULL};
  d->ndim = -1;
  d->source_module = -1;
  d->mark = (struct pg_mark){n->line, n->column};
  if (!pg__want(s, n, PG__Y_MAP, what_in)) return;
  int skip_from = 0, skip_to = 0;
  char *joined_fill = kind == PG__D_PRIMARY ? pg__rejoin_flow_split(s, n, "fill", &skip_from,
                                                                    &skip_to)
                                        : NULL;
  pg__check_keys_skip(s, n,
                      kind == PG__D_PRIMARY  ? k_primary
                      : kind == PG__D_INPUT  ? k_input
                      : kind == PG__D_OUTPUT ? k_output
                                     : k_final,
                  what_in, skip_from, skip_to);
  pg__get_name(s, n, what_in, &d->name);
  char what[200];
  if (d->name)
    snprintf(what, sizeof what, "%s '%.64s'%s", prefix, d->name, suffix);
  else
    snprintf(what, sizeof what, "%s", what_in);

  const struct pg__ynode *shape = pg__ymap_get(n, "shape"), *dtype = pg__ymap_get(n, "dtype");
  int need_type = kind == PG__D_PRIMARY || kind == PG__D_OUTPUT;
  if (shape && !pg__ynull(shape)) {
    parse_shape(s, d, shape, what);
    check_shape(s, d, what, shape);
  } else if (need_type) {
    PG__ERR(n, 8, "%s is missing required key 'shape'", what);
  }
  if (dtype && !pg__ynull(dtype))
    parse_dtype(s, d, dtype, what);
  else if (need_type)
    PG__ERR(n, 8, "%s is missing required key 'dtype'", what);

  if (kind == PG__D_PRIMARY) {
    const struct pg__ynode *fill = pg__ymap_get(n, "fill");
    if (fill && !pg__ynull(fill)) {
      char w[512];
      snprintf(w, sizeof w, "the fill of %s", what);
      if (joined_fill) {
        d->fill = joined_fill;
        joined_fill = NULL;
      }
      if (d->fill || pg__get_str(s, fill, w, &d->fill)) {
        d->fill_mark = (struct pg_mark){fill->line, pg__ytext_column(fill)};
        struct pg_fill f;
        struct pg_error e;
        pg_error_clear(&e);
        if (pg_fill_parse(d->fill, &f, &e) != PG_OK)
          PG__ERR_AT(fill->line, pg__ytext_column(fill) + (e.column > 0 ? e.column - 1 : 0), 8,
                     "fill of %s: %s", what, e.message);
      }
    }
  }
  free(joined_fill);
  if (kind == PG__D_INPUT || kind == PG__D_FINAL) {
    const struct pg__ynode *src = pg__ymap_get(n, "source");
    if (!src) {
      PG__ERR(n, 8, "%s is missing required key 'source'", what);
    } else {
      char w[512];
      snprintf(w, sizeof w, "the source of %s", what);
      if (pg__get_str(s, src, w, &d->source)) {
        d->source_mark = (struct pg_mark){src->line, pg__ytext_column(src)};
        d->source_module = source_module(d->source);
      }
    }
  }
  if (kind == PG__D_OUTPUT) {
    const struct pg__ynode *t;
    char w[512];
    if ((t = pg__ymap_get(n, "atol"))) {
      snprintf(w, sizeof w, "atol of %s", what);
      d->has_atol = pg__get_num(s, t, w, &d->atol);
      if (d->has_atol && d->atol < 0) PG__ERR(t, 8, "atol of %s is negative", what);
    }
    if ((t = pg__ymap_get(n, "rtol"))) {
      snprintf(w, sizeof w, "rtol of %s", what);
      d->has_rtol = pg__get_num(s, t, w, &d->rtol);
      if (d->has_rtol && d->rtol < 0) PG__ERR(t, 8, "rtol of %s is negative", what);
    }
    if ((t = pg__ymap_get(n, "rule"))) {
      snprintf(w, sizeof w, "the compare rule of %s", what);
      if (pg__get_str(s, t, w, &d->rule)) {
        d->rule_mark = (struct pg_mark){t->line, pg__ytext_column(t)};
        struct pg_cmp_rule rule; /* compare/'s one parser, as the suite and the run use */
        if (pg_cmp_rule_parse(d->rule, &rule, NULL) != PG_OK)
          PG__ERR(t, 8, "the compare rule of %s: unknown rule \"%.64s\" (allclose, exact, "
                  "ulp:N, ratio:R with 0 <= R <= 1; no whitespace)", what, d->rule);
      }
    }
  }
}

/* Parses a list of declarations into a fresh array. */
void pg__parse_decls(struct pg__sctx *s, const struct pg__ynode *n, enum pg__decl_kind kind,
                     const char *list_what, const char *prefix, const char *suffix,
                     struct pg_tensor_decl **out, int *n_out) {
  int len = pg__list_len(s, n, list_what);
  *out = pg__scalloc(s, (size_t)len, sizeof **out);
  if (!*out) return;
  *n_out = len;
  for (int i = 0; i < len; i++) {
    parse_decl(s, &(*out)[i], n->kids[i], kind, prefix, suffix, i);
  }
}
