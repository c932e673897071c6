/* phasegate runner — small helpers over the loaded spec: phase suffixes, the contract's
 * modules and phase boundaries (goldens/' graph helpers on the embedded graph), and a
 * case's view of the contract: its effective dtypes, its seed and its bound dims (the
 * contract's defaults <- the case's "shape", every dim a shape uses checked bound).
 * Pure functions of the model: no I/O, no data generation. */
#include <stdio.h>
#include <string.h>

#include "phasegate/goldens.h"
#include "opdir/opdir.h"
#include "tensors/tensors.h"

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

const struct pg_module *pg_contract_module(const struct pg_contract *c, int id) {
  return c ? pg_graph_module(&c->graph, id) : NULL;
}

int pg_contract_boundary(const struct pg_contract *c, int k,
                         const struct pg_tensor_decl **decls, int max, struct pg_error *err) {
  return pg_graph_boundary(&c->graph, k, decls, max, err);
}

enum pg_dtype pg_case_dtype(const struct pg_case *cs, const struct pg_tensor_decl *decl) {
  return cs ? pg_dtype_override(cs->dtypes, cs->n_dtypes, decl) : decl->dtype;
}

uint64_t pg_case_seed(const struct pg_case *cs) {
  if (!cs) return 0;
  if (cs->has_seed) return cs->seed;
  return pg_fnv1a64(cs->id ? cs->id : "");
}

/* ------------------------------------------------------------------ dims */

struct unbound_ctx {
  const struct pg_bindings *dims;
  char name[PG_NAME_MAX];
};

static int check_name(void *user, const char *name, size_t len, int offset) {
  (void)offset;
  struct unbound_ctx *u = user;
  char buf[PG_NAME_MAX];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, name, len);
  buf[len] = '\0';
  if (pg_bindings_get(u->dims, buf, NULL)) return 0;
  memcpy(u->name, buf, len + 1);
  return 1; /* stop: returned by the parser */
}

static int check_decl(const struct pg_tensor_decl *d, const char *where,
                      const struct pg_case *cs, const struct pg_bindings *dims,
                      struct pg_error *err) {
  for (int a = 0; a < d->ndim; a++) {
    struct unbound_ctx u = {dims, {0}};
    struct pg_error sub;
    int rc = pg_shape_expr_check(d->dims[a], check_name, &u, &sub);
    if (rc == 1)
      return pg_error_set(err, PG_EVALIDATE,
                          "%s%s%sdim '%s' used by the shape of %s '%s' is not bound (give it in "
                          "the contract's dims: or the case's \"shape\")",
                          cs ? "case " : "", cs && cs->id ? cs->id : "", cs ? ": " : "", u.name,
                          where, d->name ? d->name : "?");
    if (rc != PG_OK)
      return pg_error_set(err, PG_EVALIDATE, "shape of %s '%s', axis %d ('%s'): %s", where,
                          d->name ? d->name : "?", a, d->dims[a], sub.message);
  }
  return PG_OK;
}

int pg_case_bind_dims(const struct pg_contract *c, const struct pg_case *cs,
                      struct pg_bindings *out, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_bindings_merge(&c->dims, cs ? &cs->shape : NULL, out, err));
  int rc = PG_OK;
  for (int i = 0; rc == PG_OK && i < c->n_primary; i++)
    rc = check_decl(&c->primary_inputs[i], "primary input", cs, out, err);
  for (int m = 0; rc == PG_OK && m < c->n_modules; m++) {
    char where[64];
    snprintf(where, sizeof where, "module %d output", c->modules[m].id);
    for (int i = 0; rc == PG_OK && i < c->modules[m].n_outputs; i++)
      rc = check_decl(&c->modules[m].outputs[i], where, cs, out, err);
    snprintf(where, sizeof where, "module %d input", c->modules[m].id);
    for (int i = 0; rc == PG_OK && i < c->modules[m].n_inputs; i++)
      rc = check_decl(&c->modules[m].inputs[i], where, cs, out, err);
  }
  if (rc != PG_OK) pg_bindings_reset(out);
  return rc;
}

int pg_case_key_is_knob(const char *key) {
  /* the keys the suite loader reads (opdir/suite_case.c), and documentation */
  static const char *const phasegates[] = {
      "id", "level", "precision", "equal_nan", "dtype", "shape", "modes", "atol",
      "rtol", "rule", "tolerance", "description", "desc", "name", "note", "notes",
      "comment", "purpose", "rationale", "tags"};
  if (!key || !key[0] || key[0] == '_') return 0;
  for (size_t i = 0; i < sizeof phasegates / sizeof *phasegates; i++)
    if (strcmp(key, phasegates[i]) == 0) return 0;
  return 1;
}
