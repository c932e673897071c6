/* phasegate goldens/ — the I/O-free helpers over the module graph (phasegate/op_graph.h):
 * dim bindings, module lookup, phase boundaries, dtype overrides and declared shapes.
 * They live with the graph vocabulary because composition needs them and goldens/
 * must not depend on runner/; the contract loader that builds the graph is runner's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/goldens.h"

int pg_bindings_get(const struct pg_bindings *b, const char *name, int64_t *value) {
  if (!b || !name) return 0;
  for (int i = b->count - 1; i >= 0; i--)
    if (b->items[i].name && strcmp(b->items[i].name, name) == 0) {
      if (value) *value = b->items[i].value;
      return 1;
    }
  return 0;
}

void pg_bindings_reset(struct pg_bindings *b) {
  if (!b) return;
  for (int i = 0; i < b->count; i++) free(b->items[i].name);
  free(b->items);
  b->items = NULL;
  b->count = 0;
}

static int bindings_set(struct pg_bindings *b, const struct pg_dim_value *v) {
  for (int i = 0; i < b->count; i++)
    if (strcmp(b->items[i].name, v->name) == 0) {
      b->items[i].value = v->value;
      b->items[i].mark = v->mark;
      return PG_OK;
    }
  struct pg_dim_value *items = realloc(b->items, (size_t)(b->count + 1) * sizeof *items);
  if (!items) return PG_ENOMEM;
  b->items = items;
  size_t n = strlen(v->name) + 1;
  char *name = malloc(n);
  if (!name) return PG_ENOMEM;
  memcpy(name, v->name, n);
  b->items[b->count++] = (struct pg_dim_value){name, v->value, v->mark};
  return PG_OK;
}

int pg_bindings_merge(const struct pg_bindings *base, const struct pg_bindings *over,
                      struct pg_bindings *out, struct pg_error *err) {
  out->items = NULL;
  out->count = 0;
  const struct pg_bindings *parts[2] = {base, over};
  for (int p = 0; p < 2; p++) {
    if (!parts[p]) continue;
    for (int i = 0; i < parts[p]->count; i++) {
      if (!parts[p]->items[i].name) continue;
      if (bindings_set(out, &parts[p]->items[i]) != PG_OK) {
        pg_bindings_reset(out);
        return pg_error_set(err, PG_ENOMEM, "out of memory binding dims");
      }
    }
  }
  return PG_OK;
}

const struct pg_module *pg_graph_module(const struct pg_op_graph *g, int id) {
  if (!g) return NULL;
  for (int i = 0; i < g->n_modules; i++)
    if (g->modules[i].id == id) return &g->modules[i];
  return NULL;
}

static const struct pg_tensor_decl *module_output(const struct pg_op_graph *g, int module_id,
                                                  const char *name) {
  const struct pg_module *m = pg_graph_module(g, module_id);
  if (!m) return NULL;
  for (int i = 0; i < m->n_outputs; i++)
    if (m->outputs[i].name && strcmp(m->outputs[i].name, name) == 0) return &m->outputs[i];
  return NULL;
}

int pg_graph_boundary(const struct pg_op_graph *g, int k, const struct pg_tensor_decl **decls,
                      int max, struct pg_error *err) {
  if (k < 1 || k > g->n_modules)
    return pg_error_set(err, PG_EINVAL, "phase %d outside 1..%d", k, g->n_modules);
  int n = 0;
  if (k == g->n_modules && g->n_final > 0) {
    for (int i = 0; i < g->n_final; i++) {
      const struct pg_tensor_decl *f = &g->final_outputs[i];
      const struct pg_tensor_decl *d = module_output(g, f->source_module, f->name);
      if (!d)
        return pg_error_set(err, PG_ENOTFOUND, "final output '%s' names no output of module %d",
                            f->name, f->source_module);
      if (n == max) return pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", max);
      decls[n++] = d;
    }
    return n;
  }
  const struct pg_module *m = pg_graph_module(g, k);
  if (!m) return pg_error_set(err, PG_ENOTFOUND, "no module %d", k);
  for (int i = 0; i < m->n_outputs; i++) {
    if (n == max) return pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", max);
    decls[n++] = &m->outputs[i];
  }
  return n;
}

enum pg_dtype pg_dtype_override(const struct pg_name_value *ov, int n_ov,
                                const struct pg_tensor_decl *decl) {
  for (int i = 0; ov && i < n_ov; i++)
    if (ov[i].name && decl->name && strcmp(ov[i].name, decl->name) == 0) {
      enum pg_dtype t = pg_dtype_parse(ov[i].value);
      if (t != PG_DTYPE_INVALID) return t;
    }
  return decl->dtype;
}

/* A plain non-negative integer literal (blanks around allowed): the common axis. */
static int parse_int_literal(const char *s, int64_t *out) {
  while (*s == ' ') s++;
  if (!*s) return 0;
  int64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (INT64_MAX - (*p - '0')) / 10) return 0;
    v = v * 10 + (*p - '0');
  }
  while (*p == ' ') p++;
  if (*p) return 0;
  *out = v;
  return 1;
}

int pg_decl_shape(const struct pg_tensor_decl *decl, const struct pg_bindings *dims, int *ndim,
                  int64_t shape[PG_MAX_NDIM], struct pg_error *err) {
  const char *name = decl->name ? decl->name : "?";
  if (decl->ndim < 0)
    return pg_error_set(err, PG_EVALIDATE, "tensor '%s' declares no shape", name);
  if (decl->ndim > PG_MAX_NDIM)
    return pg_error_set(err, PG_ELIMIT, "tensor '%s' has %d dimensions, at most %d", name,
                        decl->ndim, PG_MAX_NDIM);
  for (int a = 0; a < decl->ndim; a++) {
    const char *text = decl->dims[a] ? decl->dims[a] : "";
    if (parse_int_literal(text, &shape[a])) continue;
    struct pg_error sub;
    pg_error_clear(&sub);
    int rc = pg_shape_expr_eval(text, dims, &shape[a], &sub);
    if (rc != PG_OK)
      return pg_error_set(err, rc, "shape of '%s', axis %d ('%s'): %s", name, a, text,
                          sub.message);
    if (shape[a] < 0)
      return pg_error_set(err, PG_EVALIDATE, "shape of '%s', axis %d ('%s') evaluates to %lld "
                          "(must be >= 0)", name, a, text, (long long)shape[a]);
  }
  *ndim = decl->ndim;
  return PG_OK;
}
