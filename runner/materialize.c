/* phasegate runner — case materialisation: the case seed, dim binding (contract
 * defaults <- case "shape"), shape evaluation, the byte budget, and deterministic
 * generation of the primary inputs (fill per case override, contract, or normal(0, 1);
 * dtype per pg_case_dtype). Also `cancellation_stress` (DESIGN.md §4), see below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "materialize.h"
#include "phasegate/goldens.h"
#include "rng.h"

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
    if (parse_int_literal(text, &shape[a])) continue; /* the common literal case */
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

/* ------------------------------------------------------------------ generation */

static void human_bytes(uint64_t b, char *buf, size_t n) {
  const char *units[] = {"GiB", "MiB", "KiB"};
  double scale[] = {1073741824.0, 1048576.0, 1024.0};
  for (int i = 0; i < 3; i++)
    if ((double)b >= scale[i]) {
      double v = (double)b / scale[i];
      if (v == floor(v)) snprintf(buf, n, "%.0f %s", v, units[i]);
      else snprintf(buf, n, "%.1f %s", v, units[i]);
      return;
    }
  snprintf(buf, n, "%llu bytes", (unsigned long long)b);
}

static const char *fill_text(const struct pg_case *cs, const struct pg_tensor_decl *d) {
  if (cs)
    for (int i = 0; i < cs->n_fills; i++)
      if (cs->fills[i].name && d->name && strcmp(cs->fills[i].name, d->name) == 0)
        return cs->fills[i].value;
  return d->fill ? d->fill : "normal(0, 1)";
}

static int stress_cancellation(const struct pg_contract *c, const struct pg_case *cs,
                               struct pg_tensor *inputs, struct pg_error *err);

int pg_case_generate_inputs(const struct pg_contract *c, const struct pg_case *cs,
                            const struct pg_bindings *dims,
                            const struct pg_materialize_opts *opts, struct pg_tensor *inputs,
                            struct pg_error *err) {
  const char *id = cs && cs->id ? cs->id : "(default)";
  uint64_t seed = pg_case_seed(cs);
  int n = c->n_primary;
  struct pg_fill *fills = calloc((size_t)(n ? n : 1), sizeof *fills);
  if (!fills) return pg_error_set(err, PG_ENOMEM, "case %s: out of memory", id);
  int rc = PG_OK;
  uint64_t total = 0;
  /* First pass: shapes, dtypes, fills and the budget, before allocating anything. */
  for (int i = 0; rc == PG_OK && i < n; i++) {
    const struct pg_tensor_decl *d = &c->primary_inputs[i];
    enum pg_dtype dt = pg_case_dtype(cs, d);
    int ndim;
    int64_t shape[PG_MAX_NDIM];
    struct pg_error sub;
    pg_error_clear(&sub);
    if (dt == PG_DTYPE_INVALID) {
      rc = pg_error_set(err, PG_EDTYPE, "case %s: input '%s' has no dtype", id, d->name);
      break;
    }
    if ((rc = pg_decl_shape(d, dims, &ndim, shape, &sub)) != PG_OK) {
      pg_error_set(err, rc, "case %s: %s", id, sub.message);
      break;
    }
    const char *ft = fill_text(cs, d);
    if ((rc = pg_fill_parse(ft, &fills[i], &sub)) != PG_OK) {
      pg_error_set(err, rc, "case %s: input '%s': %s", id, d->name, sub.message);
      break;
    }
    pg_tensor_set_name(&inputs[i], d->name);
    if ((rc = pg_tensor_describe(&inputs[i], dt, ndim, shape, &sub)) != PG_OK) {
      pg_error_set(err, rc, "case %s: input '%s': %s", id, d->name, sub.message);
      break;
    }
    uint64_t nb = inputs[i].nbytes;
    total = total + nb < total ? UINT64_MAX : total + nb;
  }
  if (rc == PG_OK && opts && opts->max_bytes && total > opts->max_bytes) {
    char need[32], lim[32];
    human_bytes(total, need, sizeof need);
    human_bytes(opts->max_bytes, lim, sizeof lim);
    rc = pg_error_set(err, PG_ELIMIT, "case %s needs %s for inputs, over --max-bytes %s", id,
                      need, lim);
  }
  for (int i = 0; rc == PG_OK && i < n; i++) {
    struct pg_tensor *t = &inputs[i];
    int64_t shape[PG_MAX_NDIM];
    memcpy(shape, t->shape, sizeof shape);
    struct pg_error sub;
    if ((rc = pg_tensor_alloc(t, t->dtype, t->dl.ndim, shape, &sub)) != PG_OK) {
      pg_error_set(err, rc, "case %s: input '%s': %s", id, t->name, sub.message);
      break;
    }
    rc = pg_fill_generate(t, &fills[i], seed, t->name, opts ? opts->n_threads : 0, &sub);
    if (rc != PG_OK) pg_error_set(err, rc, "case %s: %s", id, sub.message);
  }
  if (rc == PG_OK && cs && cs->cancellation.present)
    rc = stress_cancellation(c, cs, inputs, err);
  free(fills);
  if (rc != PG_OK)
    for (int i = 0; i < n; i++) pg_tensor_reset(&inputs[i]);
  return rc;
}

/* ------------------------------------------------------------------ cancellation_stress
 *
 * The case names a target tensor and an expression "a - b" (DESIGN.md §4). We find the
 * golden step that produces the target; when it is `sub(x, y)` / `x - y` (the two
 * operands named by the expression), and an operand traces back to primary inputs
 * through the same shapes, we make the operands nearly equal: y's primary input is
 * rewritten as x * (1 + g * u) with u uniform in (-1, 1) from the case's search
 * stream, so |x - y| <= g |x| elementwise and the golden's subtraction cancels
 * catastrophically. The construction is exact, so no search is needed; when the gap is
 * below the dtype's resolution, y rounds to x (the difference is then exactly 0, still
 * "within the gap"). Anything else (operands computed deeper inside a module) is left
 * to normal fills and reported as unsupported so the case does not silently pass as
 * "stressed". */

static int find_primary(const struct pg_contract *c, const char *name) {
  for (int i = 0; i < c->n_primary; i++)
    if (c->primary_inputs[i].name && strcmp(c->primary_inputs[i].name, name) == 0) return i;
  return -1;
}

/* Parses "<target> = sub(x, y)" or "<target> = x - y"; returns 1 on a match. */
static int sub_operands(const char *step, const char *target, char *x, char *y, size_t n) {
  const char *eq = strchr(step, '=');
  if (!eq) return 0;
  char lhs[PG_NAME_MAX];
  size_t ll = 0;
  for (const char *p = step; p < eq && ll + 1 < sizeof lhs; p++)
    if (*p != ' ') lhs[ll++] = *p;
  lhs[ll] = '\0';
  if (strcmp(lhs, target) != 0) return 0;
  char rhs[512];
  size_t rl = 0;
  for (const char *p = eq + 1; *p && rl + 1 < sizeof rhs; p++)
    if (*p != ' ') rhs[rl++] = *p;
  rhs[rl] = '\0';
  char *a = rhs, *b = NULL;
  if (strncmp(rhs, "sub(", 4) == 0 && rl > 5 && rhs[rl - 1] == ')') {
    rhs[rl - 1] = '\0';
    a = rhs + 4;
    b = strchr(a, ',');
  } else {
    b = strchr(rhs, '-');
    if (b == rhs) return 0;
  }
  if (!b) return 0;
  *b++ = '\0';
  if (!*a || !*b || strchr(b, ',') || strchr(b, '-') || strchr(a, '(') || strchr(b, '('))
    return 0;
  if (strlen(a) >= n || strlen(b) >= n) return 0; /* not tensor names */
  memcpy(x, a, strlen(a) + 1);
  memcpy(y, b, strlen(b) + 1);
  return 1;
}

static int stress_cancellation(const struct pg_contract *c, const struct pg_case *cs,
                               struct pg_tensor *inputs, struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  const char *target = st->target ? st->target : "";
  char x[PG_NAME_MAX] = "", y[PG_NAME_MAX] = "";
  int found = 0;
  for (int m = 0; !found && m < c->n_modules; m++)
    for (int s = 0; !found && s < c->modules[m].golden.n_steps; s++)
      found = sub_operands(c->modules[m].golden.steps[s].text, target, x, y, sizeof x);
  if (!found && find_primary(c, target) < 0)
    return pg_error_set(err, PG_ENOTSUP,
                        "case %s: cancellation_stress: no golden step computes '%s' as a "
                        "subtraction (sub(a, b) or a - b)", cs->id, target);
  int ix = found ? find_primary(c, x) : -1, iy = found ? find_primary(c, y) : -1;
  if (ix < 0 || iy < 0 || ix == iy)
    return pg_error_set(err, PG_ENOTSUP,
                        "case %s: cancellation_stress: the operands of '%s' must be two primary "
                        "inputs (found '%s' and '%s'); deeper operands are not supported yet",
                        cs->id, target, x, y);
  struct pg_tensor *tx = &inputs[ix], *ty = &inputs[iy];
  if (tx->numel != ty->numel || !pg_dtype_is_float(ty->dtype))
    return pg_error_set(err, PG_ENOTSUP,
                        "case %s: cancellation_stress: '%s' and '%s' need the same element count "
                        "and a floating dtype", cs->id, x, y);
  struct pg_rng_stream rs;
  pg_rng_stream_init(&rs, st->seed ? st->seed : pg_case_seed(cs), y, PG_RNG_SEARCH);
  /* Inside the gap, not on it: u in (-1, 1) and y rounded to its dtype may move by half
   * an ulp, so the construction aims at 0.9 of the gap. */
  double gap = 0.9 * (st->relative_gap > 0 ? st->relative_gap : 1e-5);
  uint32_t w[4];
  for (int64_t i = 0; i < ty->numel; i++) {
    if (i % 4 == 0) pg_rng_block(&rs, (uint64_t)i / 4, w);
    double u = 2.0 * pg_rng_u01(w[i % 4]) - 1.0;
    double xv = pg_load_f64(tx->dl.data, tx->dtype, (size_t)i);
    pg_store_f64(ty->dl.data, ty->dtype, (size_t)i, xv * (1.0 + gap * u));
  }
  return PG_OK;
}
