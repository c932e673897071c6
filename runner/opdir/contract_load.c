/* phasegate runner — the contract loader's entry points (module_interfaces.yaml,
 * docs/design.md §3): read the file (64 MiB cap), build the YAML node tree
 * (contract_yaml.c), walk it with the schema (contract_schema.c), then hand every
 * finding, sorted by position, to the caller's pg_diags; the first error also goes to
 * `err`. Also pg_contract_init / pg_contract_reset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/contract_internal.h"
#include "opdir/opdir.h"

static int finding_cmp(const void *a, const void *b) {
  const struct pg__finding *p = a, *q = b;
  if (p->line != q->line) return p->line < q->line ? -1 : 1;
  if (p->column != q->column) return p->column < q->column ? -1 : 1;
  return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static void cctx_free(struct pg__cctx *x) {
  for (int i = 0; i < x->count; i++) free(x->items[i].message);
  free(x->items);
  x->items = NULL;
  x->count = x->capacity = 0;
  free(x->spans);
  x->spans = NULL;
  x->n_spans = x->cap_spans = 0;
  pg__yaml_free(x);
}

/* ------------------------------------------------------------------ contract */

void pg_contract_init(struct pg_contract *c) {
  if (c) memset(c, 0, sizeof *c);
}

static void decl_free(struct pg_tensor_decl *d) {
  free(d->name);
  for (int i = 0; i < PG_MAX_NDIM; i++) free(d->dims[i]);
  free(d->fill);
  free(d->source);
  free(d->rule);
}

static void decls_free(struct pg_tensor_decl *d, int n) {
  if (!d) return;
  for (int i = 0; i < n; i++) decl_free(&d[i]);
  free(d);
}

static void golden_free(struct pg_golden_spec *g) {
  for (int i = 0; i < g->n_steps; i++) free(g->steps[i].text);
  free(g->steps);
  free(g->plugin);
  memset(g, 0, sizeof *g);
}

void pg_contract_reset(struct pg_contract *c) {
  if (!c) return;
  free(c->path);
  free(c->op);
  pg_bindings_reset(&c->dims);
  decls_free(c->primary_inputs, c->n_primary);
  if (c->modules) {
    for (int i = 0; i < c->n_modules; i++) {
      struct pg_module *m = &c->modules[i];
      free(m->name);
      free(m->description);
      decls_free(m->inputs, m->n_inputs);
      decls_free(m->outputs, m->n_outputs);
      decls_free(m->probes, m->n_probes);
      golden_free(&m->golden);
    }
    free(c->modules);
  }
  decls_free(c->final_outputs, c->n_final);
  golden_free(&c->op_golden);
  free(c->comp_seeds);
  for (int i = 0; c->py_goldens && i < c->n_py_goldens; i++) {
    free(c->py_goldens[i].file);
    free(c->py_goldens[i].function);
    free(c->py_goldens[i].expected);
    free(c->py_goldens[i].stage_fn);
  }
  free(c->py_goldens);
  free(c->op_dir);
  free(c->test_inputs);
  free(c->op_impl);
  pg_mode_policies_free(c->mode_policies, c->n_mode_policies);
  if (c->comp_shapes) {
    for (int i = 0; i < c->n_comp_shapes; i++) pg_bindings_reset(&c->comp_shapes[i]);
    free(c->comp_shapes);
  }
  memset(c, 0, sizeof *c);
}

/* Hands the sorted findings to the caller and sets `err` from the first error. */
static int publish(struct pg__cctx *x, int rc, struct pg_diags *diags, struct pg_error *err) {
  if (x->count > 1) qsort(x->items, (size_t)x->count, sizeof *x->items, finding_cmp);
  const struct pg__finding *first_error = NULL;
  char first_rule[16] = "";
  for (int i = 0; i < x->count; i++) {
    const struct pg__finding *f = &x->items[i];
    /* one finding per placeholder: not also "unknown dtype 'TODO'" */
    if (f->rule != PG__RULE_PLACEHOLDER && pg__in_placeholder(x, f->line, f->column)) continue;
    char rule[16];
    if (f->rule == PG__RULE_PLACEHOLDER) snprintf(rule, sizeof rule, "placeholder");
    else if (f->rule) snprintf(rule, sizeof rule, "rule %d", f->rule);
    if (pg_diags_add(diags, f->severity, x->path, f->line, f->column, f->rule ? rule : NULL, "%s",
                     f->message) != PG_OK)
      x->oom = 1;
    if (f->severity == PG_SEV_ERROR && !first_error) {
      first_error = f;
      if (f->rule) snprintf(first_rule, sizeof first_rule, "%s", rule);
    }
  }
  if (x->dropped)
    pg_diags_add(diags, PG_SEV_NOTE, x->path, 1, 1, NULL,
                 "%d more findings were not reported (the limit is %d)", x->dropped,
                 PG__CONTRACT_MAX_FINDINGS);
  if (x->oom) return pg_error_set(err, PG_ENOMEM, "%s: out of memory loading the contract", x->path);
  if (rc == PG_OK && x->n_errors > 0) rc = PG_EVALIDATE;
  if (rc != PG_OK) {
    if (first_error) {
      if (first_error->rule)
        pg_error_set_at(err, rc, x->path, first_error->line, first_error->column, "%s (%s)",
                        first_error->message, first_rule);
      else
        pg_error_set_at(err, rc, x->path, first_error->line, first_error->column, "%s",
                        first_error->message);
    } else {
      pg_error_set(err, rc, "%s: %s", x->path, pg_strerror(rc));
    }
  }
  return rc;
}

static int load(const char *path, const char *data, size_t size, struct pg_contract *c,
                struct pg_diags *diags, struct pg_error *err) {
  struct pg__cctx x = {.path = path ? path : "<input>"};
  int rc = PG_OK;
  if (size > PG__CONTRACT_MAX_BYTES) {
    pg__cfind(&x, PG_SEV_ERROR, 1, 1, 8,
              "the file is %zu bytes; contracts are limited to %zu MiB", size,
              PG__CONTRACT_MAX_BYTES >> 20);
    rc = PG_ELIMIT;
  } else {
    c->path = strdup(x.path);
    if (!c->path) x.oom = 1;
    rc = pg__yaml_build(&x, data ? data : "", data ? size : 0);
    if (rc == PG_OK && !x.oom) pg__contract_from_tree(&x, c);
  }
  rc = publish(&x, rc, diags, err);
  cctx_free(&x);
  return rc;
}

int pg_contract_load_buffer(const char *path, const char *data, size_t size,
                            struct pg_contract *c, struct pg_diags *diags,
                            struct pg_error *err) {
  pg_contract_init(c);
  return load(path, data, size, c, diags, err);
}

int pg_contract_load(const char *path, struct pg_contract *c, struct pg_diags *diags,
                     struct pg_error *err) {
  pg_contract_init(c);
  if (!path) return pg_error_set(err, PG_EINVAL, "contract path is NULL");
  char *buf;
  size_t n;
  int rc = pg_read_file(path, PG__CONTRACT_MAX_BYTES, &buf, &n, err);
  /* over the limit: the finding says the size (a regular file is refused before a byte
   * is read; a pipe or another stream is read up to one byte past the limit) */
  if (rc == PG_ELIMIT) return load(path, NULL, n, c, diags, err);
  if (rc != PG_OK) return rc;
  rc = load(path, buf, n, c, diags, err);
  free(buf);
  /* Python goldens live next to the file (docs/design.md §5): only a file has neighbours. */
  if (rc == PG_OK && pg_contract_discover_py_goldens(c, path, diags) != PG_OK)
    rc = pg_error_set(err, PG_ENOMEM, "%s: out of memory looking for Python goldens", path);
  return rc;
}
