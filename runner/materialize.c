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
                               const struct pg_bindings *dims, int n_threads,
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
    rc = stress_cancellation(c, cs, dims, opts ? opts->n_threads : 0, inputs, err);
  free(fills);
  if (rc != PG_OK)
    for (int i = 0; i < n; i++) pg_tensor_reset(&inputs[i]);
  return rc;
}

/* ------------------------------------------------------------------ cancellation_stress
 *
 * The case names a target tensor and an expression "a - b" (DESIGN.md §4). We find the
 * golden step that produces the target as a subtraction, `t = sub(x, y)` or `t = x - y`,
 * and make its two operands nearly equal:
 *
 * - both operands primary inputs: exact construction. y is rewritten as
 *   x * (1 + 0.9 g u), u uniform in (-1, 1) from the case's search stream, so
 *   |x - y| <= g |x| elementwise (when g is below the dtype's resolution y rounds to x).
 * - operands that are module inputs coming from earlier modules (or one of each):
 *   a deterministic search. Restart r (r = 0 is the unchanged inputs) draws, per
 *   floating primary input, a scale 2^k (k in -4..4) and an offset in {0, +-1, +-4,
 *   +-16}, applies x' = offset + scale * x, runs the cumulative goldens that produce
 *   the operands, and scores the share of elements with |a - b| <= g max(|a|, |b|).
 *   The best restart's inputs are kept (ties: the earlier restart). A search that
 *   finds no such element at all is an error, not a silent pass.
 * - operands computed by earlier steps inside the same module cannot be reached from
 *   outside the module's golden: PG_ENOTSUP naming them. */

static int find_primary(const struct pg_contract *c, const char *name) {
  for (int i = 0; i < c->n_primary; i++)
    if (c->primary_inputs[i].name && strcmp(c->primary_inputs[i].name, name) == 0) return i;
  return -1;
}

/* Copies text[0..len) without spaces into dst (size n); 0 when it does not fit. */
static int strip_copy(char *dst, size_t n, const char *text, size_t len) {
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ' || text[i] == '\t') continue;
    if (k + 1 >= n) return 0;
    dst[k++] = text[i];
  }
  dst[k] = '\0';
  return k > 0;
}

/* Parses "<target> = sub(x, y)" or "<target> = x - y" (spaces around '-' required:
 * names may contain '-'); returns 1 on a match. */
static int sub_operands(const char *step, const char *target, char *x, char *y, size_t n) {
  const char *eq = strchr(step, '=');
  char lhs[PG_NAME_MAX];
  if (!eq || !strip_copy(lhs, sizeof lhs, step, (size_t)(eq - step)) || strcmp(lhs, target) != 0)
    return 0;
  const char *r = eq + 1;
  while (*r == ' ' || *r == '\t') r++;
  const char *sep, *end;
  if (strncmp(r, "sub", 3) == 0 && strchr(r, '(')) {
    const char *open = strchr(r, '(');
    for (const char *p = r + 3; p < open; p++)
      if (*p != ' ' && *p != '\t') return 0; /* "subtract(" or similar */
    r = open + 1;
    sep = strchr(r, ',');
    end = strrchr(r, ')');
    if (!sep || !end || end < sep || strchr(sep + 1, ',')) return 0;
  } else {
    sep = strstr(r, " - ");
    end = r + strlen(r);
    if (!sep) return 0;
  }
  const char *b = sep + (*sep == ',' ? 1 : 3);
  if (!strip_copy(x, n, r, (size_t)(sep - r)) || !strip_copy(y, n, b, (size_t)(end - b)))
    return 0;
  if (strpbrk(x, "()=") || strpbrk(y, "()=") || y[0] == '-') return 0;
  return 1;
}

/* Where an operand of module m's step comes from: primary input `primary` (>= 0), or
 * output `name` of module `module` (> 0). */
struct operand {
  int primary;
  int module;
  const char *name;
};

static int resolve_operand(const struct pg_contract *c, const struct pg_module *m,
                           const char *name, struct operand *o) {
  o->primary = -1;
  o->module = 0;
  o->name = name;
  for (int i = 0; i < m->n_inputs; i++)
    if (m->inputs[i].name && strcmp(m->inputs[i].name, name) == 0) {
      if (m->inputs[i].source_module == 0) {
        o->primary = find_primary(c, name);
        return o->primary >= 0;
      }
      o->module = m->inputs[i].source_module;
      return o->module < m->id;
    }
  return 0;
}

/* Evaluates an operand into `out` (a view for primaries, owned for module outputs). */
static int eval_operand(const struct pg_golden_env *env, const struct operand *o,
                        struct pg_tensor *inputs, int n_primary, struct pg_tensor *out,
                        struct pg_error *err) {
  if (o->primary >= 0) {
    const struct pg_tensor *src = &inputs[o->primary];
    pg_tensor_describe(out, src->dtype, src->dl.ndim, src->shape, NULL);
    out->dl.data = src->dl.data; /* a view: owned stays NULL */
    return PG_OK;
  }
  struct pg_tensor outs[PG_MAX_BOUNDARY_OUTPUTS];
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_init(&outs[i]);
  int n_out = 0;
  int rc = pg_golden_cumulative(env, o->module, inputs, n_primary, outs, &n_out, err);
  int found = -1;
  const struct pg_module *mod = pg_contract_module(env->contract, o->module);
  for (int i = 0; rc == PG_OK && mod && i < n_out && i < mod->n_outputs; i++)
    if (mod->outputs[i].name && strcmp(mod->outputs[i].name, o->name) == 0) found = i;
  if (rc == PG_OK && found < 0)
    rc = pg_error_set(err, PG_ENOTFOUND, "module %d has no output '%s'", o->module, o->name);
  if (rc == PG_OK) pg_tensor_move(out, &outs[found]);
  for (int i = 0; i < PG_MAX_BOUNDARY_OUTPUTS; i++) pg_tensor_reset(&outs[i]);
  return rc;
}

static double score_pair(const struct pg_tensor *a, const struct pg_tensor *b, double gap) {
  int64_t n = a->numel < b->numel ? a->numel : b->numel, hits = 0;
  if (n == 0) return 0;
  for (int64_t i = 0; i < n; i++) {
    double x = pg_load_f64(a->dl.data, a->dtype, (size_t)i);
    double y = pg_load_f64(b->dl.data, b->dtype, (size_t)i);
    double m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    if (isfinite(x) && isfinite(y) && m > 0 && fabs(x - y) <= gap * m) hits++;
  }
  return (double)hits / (double)n;
}

static void apply_knobs(const struct pg_tensor *src, struct pg_tensor *dst, int n,
                        const double *scale, const double *offset) {
  for (int i = 0; i < n; i++) {
    memcpy(dst[i].dl.data, src[i].dl.data, src[i].nbytes);
    if (!pg_dtype_is_float(src[i].dtype) || (scale[i] == 1.0 && offset[i] == 0.0)) continue;
    for (int64_t e = 0; e < src[i].numel; e++)
      pg_store_f64(dst[i].dl.data, dst[i].dtype, (size_t)e,
                   offset[i] + scale[i] * pg_load_f64(src[i].dl.data, src[i].dtype, (size_t)e));
  }
}

#define PG_STRESS_RESTARTS 16

static int search_cancellation(const struct pg_contract *c, const struct pg_case *cs,
                               const struct pg_bindings *dims, int n_threads,
                               const struct operand *oa, const struct operand *ob,
                               struct pg_tensor *inputs, struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  int n = c->n_primary, rc = PG_OK;
  double gap = st->relative_gap > 0 ? st->relative_gap : 1e-5;
  struct pg_golden_env env = {c, dims, cs->dtypes, cs->n_dtypes, 32, NULL, n_threads};
  struct pg_tensor *work = calloc((size_t)(n ? n : 1), sizeof *work);
  double *scale = calloc((size_t)(n ? n : 1) * 4, sizeof *scale);
  if (!work || !scale) {
    free(work);
    free(scale);
    return pg_error_set(err, PG_ENOMEM, "case %s: out of memory", cs->id);
  }
  double *offset = scale + n, *best_scale = scale + 2 * n, *best_offset = scale + 3 * n;
  for (int i = 0; i < n && rc == PG_OK; i++) {
    pg_tensor_init(&work[i]);
    pg_tensor_set_name(&work[i], inputs[i].name);
    rc = pg_tensor_alloc(&work[i], inputs[i].dtype, inputs[i].dl.ndim, inputs[i].shape, err);
  }
  struct pg_rng_stream rs;
  pg_rng_stream_init(&rs, st->seed ? st->seed : pg_case_seed(cs), st->target, PG_RNG_SEARCH);
  static const double offsets[] = {0, 1, -1, 4, -4, 16, -16, 0};
  double best = -1;
  for (int r = 0; rc == PG_OK && r < PG_STRESS_RESTARTS; r++) {
    for (int i = 0; i < n; i++) {
      uint32_t w[4];
      pg_rng_block(&rs, (uint64_t)r * 4096u + (uint64_t)i, w);
      scale[i] = r == 0 ? 1.0 : ldexp(1.0, (int)(w[0] % 9u) - 4);
      offset[i] = r == 0 ? 0.0 : offsets[w[1] % 8u];
    }
    apply_knobs(inputs, work, n, scale, offset);
    struct pg_tensor a, b;
    pg_tensor_init(&a);
    pg_tensor_init(&b);
    struct pg_error sub;
    pg_error_clear(&sub);
    rc = eval_operand(&env, oa, work, n, &a, &sub);
    if (rc == PG_OK) rc = eval_operand(&env, ob, work, n, &b, &sub);
    if (rc == PG_OK) {
      double sc = score_pair(&a, &b, gap);
      if (sc > best) {
        best = sc;
        memcpy(best_scale, scale, (size_t)n * sizeof *scale);
        memcpy(best_offset, offset, (size_t)n * sizeof *offset);
      }
    } else {
      pg_error_set(err, rc, "case %s: cancellation_stress: evaluating '%s' and '%s': %s",
                   cs->id, oa->name, ob->name, sub.message);
    }
    pg_tensor_reset(&a);
    pg_tensor_reset(&b);
  }
  if (rc == PG_OK && best <= 0)
    rc = pg_error_set(err, PG_EVALIDATE,
                      "case %s: cancellation_stress: %d restarts found no element where '%s' "
                      "and '%s' are within relative_gap %g", cs->id, PG_STRESS_RESTARTS,
                      oa->name, ob->name, gap);
  if (rc == PG_OK) { /* keep the best restart's inputs */
    apply_knobs(inputs, work, n, best_scale, best_offset);
    for (int i = 0; i < n; i++) memcpy(inputs[i].dl.data, work[i].dl.data, inputs[i].nbytes);
  }
  for (int i = 0; i < n; i++) pg_tensor_reset(&work[i]);
  free(work);
  free(scale);
  return rc;
}

static int stress_cancellation(const struct pg_contract *c, const struct pg_case *cs,
                               const struct pg_bindings *dims, int n_threads,
                               struct pg_tensor *inputs, struct pg_error *err) {
  const struct pg_cancellation_stress *st = &cs->cancellation;
  const char *target = st->target ? st->target : "";
  char x[PG_NAME_MAX] = "", y[PG_NAME_MAX] = "";
  const struct pg_module *mod = NULL;
  for (int m = 0; !mod && m < c->n_modules; m++)
    for (int s = 0; !mod && s < c->modules[m].golden.n_steps; s++)
      if (sub_operands(c->modules[m].golden.steps[s].text, target, x, y, sizeof x))
        mod = &c->modules[m];
  if (!mod)
    return pg_error_set(err, PG_ENOTSUP,
                        "case %s: cancellation_stress: no golden step computes '%s' as a "
                        "subtraction (sub(a, b) or a - b)", cs->id, target);
  struct operand oa, ob;
  if (!resolve_operand(c, mod, x, &oa) || !resolve_operand(c, mod, y, &ob))
    return pg_error_set(err, PG_ENOTSUP,
                        "case %s: cancellation_stress: the operands of '%s' ('%s', '%s') must be "
                        "inputs of module %d (primary inputs or earlier modules' outputs); "
                        "values computed inside the module are not reachable", cs->id, target,
                        x, y, mod->id);
  if (oa.primary < 0 || ob.primary < 0 || oa.primary == ob.primary)
    return search_cancellation(c, cs, dims, n_threads, &oa, &ob, inputs, err);
  struct pg_tensor *tx = &inputs[oa.primary], *ty = &inputs[ob.primary];
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
