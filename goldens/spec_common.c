/* phasegate — the I/O-free helpers of the spec API (include/phasegate/spec.h): the
 * diagnostics list, phase suffixes, dim bindings, phase boundaries, effective dtypes.
 * They live in goldens/ because composition needs them and goldens must not depend on
 * runner/; the loaders themselves stay in runner/. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/spec.h"

void pg_diags_init(struct pg_diags *d) { memset(d, 0, sizeof *d); }

void pg_diags_reset(struct pg_diags *d) {
  if (!d) return;
  for (int i = 0; i < d->count; i++) {
    free(d->items[i].file);
    free(d->items[i].message);
    free(d->items[i].rule);
  }
  free(d->items);
  memset(d, 0, sizeof *d);
}

static char *dup_or_null(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int pg_diags_add(struct pg_diags *d, enum pg_severity sev, const char *file, int line,
                 int column, const char *rule, const char *fmt, ...) {
  if (!d) return PG_OK;
  if (d->count == d->capacity) {
    int cap = d->capacity ? d->capacity * 2 : 16;
    struct pg_diag *items = realloc(d->items, (size_t)cap * sizeof *items);
    if (!items) return PG_ENOMEM;
    d->items = items;
    d->capacity = cap;
  }
  char msg[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct pg_diag *g = &d->items[d->count];
  g->severity = sev;
  g->file = dup_or_null(file ? file : "<input>");
  g->line = line;
  g->column = column;
  g->message = dup_or_null(msg);
  g->rule = dup_or_null(rule);
  if (!g->file || !g->message || (rule && !g->rule)) {
    free(g->file);
    free(g->message);
    free(g->rule);
    return PG_ENOMEM;
  }
  d->count++;
  if (sev == PG_SEV_ERROR) d->n_errors++;
  if (sev == PG_SEV_WARNING) d->n_warnings++;
  return PG_OK;
}

void pg_diag_format(const struct pg_diag *g, char *buf, size_t size) {
  static const char *const sev_names[] = {"note", "warning", "error"};
  const char *sev = sev_names[g->severity <= PG_SEV_ERROR ? g->severity : PG_SEV_ERROR];
  if (g->rule)
    snprintf(buf, size, "%s:%d:%d: %s: %s (%s)", g->file, g->line, g->column, sev,
             g->message, g->rule);
  else
    snprintf(buf, size, "%s:%d:%d: %s: %s", g->file, g->line, g->column, sev, g->message);
}

void pg_phase_suffix(int k, char *buf, size_t size) {
  size_t n = 0;
  if (size == 0) return;
  buf[0] = '\0';
  for (int i = 1; i <= k; i++) {
    int w = snprintf(buf + n, size - n, "%d", i);
    if (w < 0 || (size_t)w >= size - n) break;
    n += (size_t)w;
  }
}

int pg_bindings_get(const struct pg_bindings *b, const char *name, int64_t *value) {
  if (!b) return 0;
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
  char *name = dup_or_null(v->name);
  if (!name) return PG_ENOMEM;
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

static const struct pg_tensor_decl *module_output(const struct pg_contract *c, int module_id,
                                                  const char *name) {
  const struct pg_module *m = pg_contract_module(c, module_id);
  if (!m) return NULL;
  for (int i = 0; i < m->n_outputs; i++)
    if (m->outputs[i].name && strcmp(m->outputs[i].name, name) == 0) return &m->outputs[i];
  return NULL;
}

const struct pg_module *pg_contract_module(const struct pg_contract *c, int id) {
  if (!c) return NULL;
  for (int i = 0; i < c->n_modules; i++)
    if (c->modules[i].id == id) return &c->modules[i];
  return NULL;
}

int pg_contract_boundary(const struct pg_contract *c, int k,
                         const struct pg_tensor_decl **decls, int max, struct pg_error *err) {
  if (k < 1 || k > c->n_modules)
    return pg_error_set(err, PG_EINVAL, "phase %d outside 1..%d", k, c->n_modules);
  int n = 0;
  if (k == c->n_modules && c->n_final > 0) {
    for (int i = 0; i < c->n_final; i++) {
      const struct pg_tensor_decl *f = &c->final_outputs[i];
      const struct pg_tensor_decl *d = module_output(c, f->source_module, f->name);
      if (!d)
        return pg_error_set(err, PG_ENOTFOUND, "final output '%s' names no output of module %d",
                            f->name, f->source_module);
      if (n == max) return pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", max);
      decls[n++] = d;
    }
    return n;
  }
  const struct pg_module *m = pg_contract_module(c, k);
  if (!m) return pg_error_set(err, PG_ENOTFOUND, "no module %d", k);
  for (int i = 0; i < m->n_outputs; i++) {
    if (n == max) return pg_error_set(err, PG_ELIMIT, "more than %d boundary outputs", max);
    decls[n++] = &m->outputs[i];
  }
  return n;
}

enum pg_dtype pg_case_dtype(const struct pg_case *cs, const struct pg_tensor_decl *decl) {
  if (cs)
    for (int i = 0; i < cs->n_dtypes; i++)
      if (cs->dtypes[i].name && decl->name && strcmp(cs->dtypes[i].name, decl->name) == 0) {
        enum pg_dtype t = pg_dtype_parse(cs->dtypes[i].value);
        if (t != PG_DTYPE_INVALID) return t;
      }
  return decl->dtype;
}
