/* phasegate goldens/ — cumulative composition (docs/design.md §5): runs the goldens of
 * M1..Mk in order over a table of named tensors, and the op-level golden.
 *
 * Numerics, as a device pipeline behaves: primary inputs are widened from their
 * (effective) dtype into the reference precision (fp32, or fp64 with precision_bits
 * 64); every module output is rounded to its declared (effective) dtype before the
 * next module reads it, because the device stores it in that dtype too; the boundary
 * outputs are returned in their effective dtypes. Integer and bool tensors keep their
 * dtype throughout. Which step reads what is the golden plan's (plan.c); not here:
 * running steps (steps.c), the tensor table and buffers (gtable.c), plugins
 * (plugin.c), caching (runner/run/golden_cache.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16_bulk.h"
#include "golden_private.h"
#include "kernels_internal.h"

/* ---------------------------------------------------------------- dtype helpers */

static enum pg_dtype ref_dtype(int precision_bits) {
  return precision_bits == 64 ? PG_DTYPE_F64 : PG_DTYPE_F32;
}

/* The effective dtype of a declared tensor under the case's dtype overrides. */
static enum pg_dtype effective_dtype(const struct pg_golden_env *env,
                                     const struct pg_tensor_decl *d) {
  return pg_dtype_override(env->dtype_overrides, env->n_dtype_overrides, d);
}

/* Does t have d's declared shape under dims? (No declared shape: yes.) */
static int has_declared_shape(const struct pg_tensor_decl *d, const struct pg_bindings *dims,
                              const struct pg_tensor *t) {
  if (d->ndim < 0) return 1;
  int nd;
  int64_t shape[PG_MAX_NDIM];
  if (pg_decl_shape(d, dims, &nd, shape, NULL) != PG_OK || nd != t->dl.ndim) return 0;
  for (int a = 0; a < nd; a++)
    if (shape[a] != t->shape[a]) return 0;
  return 1;
}

struct widen_job {
  const uint32_t *table;
  const uint16_t *in;
  uint32_t *out;
};

static void widen_range(void *ctx, int64_t begin, int64_t end) {
  const struct widen_job *j = ctx;
  for (int64_t i = begin; i < end; i++) j->out[i] = j->table[j->in[i]];
}

/* dst = src converted to dtype `to` (values rounded as pg_store_f64 does). */
static int convert(struct pg_tensor *dst, const struct pg_tensor *src, enum pg_dtype to,
                   int n_threads, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg__golden_alloc(dst, to, src->dl.ndim, src->shape, err));
  if (to == src->dtype) {
    memcpy(dst->dl.data, src->dl.data, src->nbytes);
    return PG_OK;
  }
  const void *in = src->dl.data;
  void *out = dst->dl.data;
  int64_t n = src->numel;
  if (src->dtype == PG_DTYPE_F32 && to == PG_DTYPE_F64) {
    for (int64_t i = 0; i < n; i++) ((double *)out)[i] = ((const float *)in)[i];
  } else if (src->dtype == PG_DTYPE_F16 && to == PG_DTYPE_F32 && n >= (1 << 18)) {
    /* big tensors (weights): a 256 KiB per-call table beats the branchy converter, and
     * the widening (and first touch of the new pages) is spread over threads */
    uint32_t *table = malloc(65536 * sizeof *table);
    if (!table) return pg_error_set(err, PG_ENOMEM, "out of memory widening '%s'", src->name);
    for (uint32_t h = 0; h < 65536; h++) table[h] = pg__f32_bits(pg_f16_to_f32((uint16_t)h));
    struct widen_job job = {table, in, out};
    pg__parallel_for(n, 1 << 16, n_threads, widen_range, &job);
    free(table);
  } else if (src->dtype == PG_DTYPE_F16 && to == PG_DTYPE_F32) {
    pg__f16_to_f32_n(in, out, n); /* F16C when available */
  } else if (src->dtype == PG_DTYPE_F32 && to == PG_DTYPE_F16) {
    pg__f32_to_f16_n(in, out, n);
  } else if (src->dtype == PG_DTYPE_BF16 && to == PG_DTYPE_F32) {
    for (int64_t i = 0; i < n; i++) ((float *)out)[i] = pg_bf16_to_f32(((const uint16_t *)in)[i]);
  } else if (src->dtype == PG_DTYPE_F32 && to == PG_DTYPE_BF16) {
    for (int64_t i = 0; i < n; i++)
      ((uint16_t *)out)[i] = pg_f32_to_bf16(((const float *)in)[i]);
  } else {
    for (int64_t i = 0; i < n; i++) pg_store_f64(out, to, (size_t)i, pg_load_f64(in, src->dtype, (size_t)i));
  }
  return PG_OK;
}

/* Rounds a reference-precision float tensor in place through dtype `to`, as storing
 * it on the device and reading it back would. */
static void round_through(struct pg_tensor *t, enum pg_dtype to) {
  if (to == t->dtype || !pg_dtype_is_float(to) || to == PG_DTYPE_F64) return;
  int64_t n = t->numel;
  if (t->dtype == PG_DTYPE_F32) {
    float *p = t->dl.data;
    if (to == PG_DTYPE_F16)
      pg__f32_round_f16_n(p, n);
    else if (to == PG_DTYPE_BF16)
      for (int64_t i = 0; i < n; i++) p[i] = pg_bf16_to_f32(pg_f32_to_bf16(p[i]));
    return;
  }
  double *p = t->dl.data; /* F64 reference */
  unsigned char tmp[8];
  for (int64_t i = 0; i < n; i++) {
    pg_store_f64(tmp, to, 0, p[i]);
    p[i] = pg_load_f64(tmp, to, 0);
  }
}

/* ---------------------------------------------------------------- module runs */

struct phase_live; /* liveness of a cumulative call, below */
static int read_later(const void *live, const struct pg__gtensor *g, int done);

/* Allocates a declared tensor under dims: floats in the reference dtype. */
static int alloc_decl(struct pg__pool *pool, struct pg_tensor *t, const struct pg_tensor_decl *d,
                      const struct pg_bindings *dims, int precision_bits, struct pg_error *err) {
  int nd;
  int64_t shape[PG_MAX_NDIM];
  if (d->ndim < 0)
    return pg_error_set(err, PG_EINVAL, "output '%s' declares no shape", d->name);
  PG_RETURN_IF_ERROR(pg_decl_shape(d, dims, &nd, shape, err));
  enum pg_dtype dt = (d->dtype == PG_DTYPE_INVALID || pg_dtype_is_float(d->dtype))
                         ? ref_dtype(precision_bits)
                         : d->dtype;
  pg_tensor_set_name(t, d->name);
  return pg__golden_alloc_from(pool, t, dt, nd, shape, err);
}

#define PLUGIN_MAX_TENSORS 64

/* What a plugin golden reads: module sp->m's declared inputs as the plan resolved
 * them, or (op level) the primary inputs. */
static int plugin_inputs(const struct pg__pspec *sp, const struct pg__gtable *tab,
                         struct pg_tensor **ins, int *n_in, const char *who,
                         struct pg_error *err) {
  const struct pg_module *m = sp->m;
  *n_in = 0;
  if (!m) {
    for (int i = 0; i < tab->count && *n_in < PLUGIN_MAX_TENSORS; i++)
      if (tab->items[i]->module == 0) ins[(*n_in)++] = &tab->items[i]->t;
    return PG_OK;
  }
  if (m->n_inputs > PLUGIN_MAX_TENSORS || m->n_outputs > PLUGIN_MAX_TENSORS)
    return pg_error_set(err, PG_ELIMIT, "module %s: too many tensors", who);
  for (int i = 0; i < m->n_inputs; i++) {
    struct pg__gtensor *t = pg__gtable_source(tab, &sp->inputs[i], m->inputs[i].name);
    if (!t || !t->t.dl.data)
      return pg_error_set(err, PG_ENOTFOUND, "module %s: input '%s' was not computed", who,
                          m->inputs[i].name);
    ins[(*n_in)++] = &t->t;
  }
  return PG_OK;
}

/* Runs the plugin golden of sp (module sp->m; NULL: op level, inputs = primaries,
 * outputs = final outputs) and adds its outputs to tab as step-locals. */
static int run_plugin(const struct pg_golden_env *env, const struct pg__pspec *sp,
                      struct pg__gtable *tab, struct pg_error *err) {
  const struct pg_op_graph *c = env->plan->graph;
  const struct pg_module *m = sp->m;
  const struct pg_golden_spec *g = sp->g;
  const char *who = m ? (m->name ? m->name : "?") : "op level";
  if (!env->golden_lib)
    return pg_error_set(err, PG_EINVAL,
                        "%s:%d:%d: error: golden of %s%s%s is plugin '%s', but no golden library "
                        "was given (pass --golden-lib)",
                        c->path ? c->path : "<contract>", g->mark.line, g->mark.column,
                        m ? "module " : "", m ? "" : who, m ? who : "", g->plugin);
  struct pg_tensor *ins[PLUGIN_MAX_TENSORS], *outs[PLUGIN_MAX_TENSORS];
  const struct pg_tensor_decl *fdecls[PG_MAX_BOUNDARY_OUTPUTS];
  int n_in = 0, nd = 0;
  PG_RETURN_IF_ERROR(plugin_inputs(sp, tab, ins, &n_in, who, err));
  if (!m) {
    nd = pg_graph_boundary(c, c->n_modules, fdecls, PG_MAX_BOUNDARY_OUTPUTS, err);
    if (nd < 0) return nd;
  }
  int count = m ? m->n_outputs : nd;
  for (int o = 0; o < count; o++) {
    const struct pg_tensor_decl *d = m ? &m->outputs[o] : fdecls[o];
    struct pg__gtensor *t;
    PG_RETURN_IF_ERROR(pg__gtable_add(tab, d->name, -1, &t, err));
    PG_RETURN_IF_ERROR(alloc_decl(tab->pool, &t->t, d, env->dims, env->precision_bits, err));
    outs[o] = &t->t;
  }
  return pg__golden_plugin_call(env->golden_lib, g->plugin, c->op, m ? m->id : 0,
                                m ? m->name : "op", env->precision_bits, env->dims, ins, n_in,
                                outs, count, err);
}

/* Module m's declared outputs after its golden ran: each present, with its declared
 * shape, rounded to its effective dtype; then they become module m's tensors. */
static int finish_module(const struct pg_golden_env *env, const struct pg_module *m,
                         struct pg__gtable *tab, struct pg_error *err) {
  const char *path = env->plan->graph->path ? env->plan->graph->path : "<contract>";
  for (int o = 0; o < m->n_outputs; o++) {
    const struct pg_tensor_decl *d = &m->outputs[o];
    struct pg__gtensor *t = pg__gtable_find(tab, -1, d->name);
    if (!t)
      return pg_error_set_at(err, PG_ENOTFOUND, path, d->mark.line, d->mark.column,
                             "module %d (%s): the golden does not produce declared output '%s'",
                             m->id, m->name ? m->name : "?", d->name);
    if (!has_declared_shape(d, env->dims, &t->t))
      return pg_error_set_at(err, PG_ESHAPE, path, d->mark.line, d->mark.column,
                             "module %d (%s): the golden computes '%s' with a shape other "
                             "than the declared one",
                             m->id, m->name ? m->name : "?", d->name);
    enum pg_dtype dt = effective_dtype(env, d);
    if (dt != PG_DTYPE_INVALID && !pg_dtype_is_float(dt) && t->t.dtype != dt) {
      struct pg_tensor conv;
      pg_tensor_init(&conv);
      pg_tensor_set_name(&conv, d->name);
      PG_RETURN_IF_ERROR(convert(&conv, &t->t, dt, env->n_threads, err));
      pg_tensor_reset(&t->t);
      pg_tensor_move(&t->t, &conv);
    } else if (dt != PG_DTYPE_INVALID && pg_dtype_is_float(t->t.dtype)) {
      round_through(&t->t, dt);
    }
  }
  pg__gtable_promote(tab, m);
  return PG_OK;
}

/* The inspection probes a cumulative call records (module k's steps of those names). */
struct probe_req {
  const struct pg_tensor_decl *const *decls;
  int n;
  struct pg_tensor *out;
};

/* Copies the probes out of module m's step-locals (before its outputs are rounded):
 * each must be computed by a step, with its declared shape; converted to its dtype. */
static int capture_probes(const struct pg_golden_env *env, const struct pg_module *m,
                          const struct probe_req *pr, struct pg__gtable *tab,
                          struct pg_error *err) {
  const char *path = env->plan->graph->path ? env->plan->graph->path : "<contract>";
  for (int i = 0; i < pr->n; i++) {
    const struct pg_tensor_decl *d = pr->decls[i];
    const struct pg__gtensor *t = pg__gtable_find(tab, -1, d->name);
    if (!t || !t->t.dl.data)
      return pg_error_set_at(err, PG_ENOTFOUND, path, d->mark.line, d->mark.column,
                             "module %d (%s): inspection probe '%s' is computed by none of "
                             "its golden steps", m->id, m->name ? m->name : "?", d->name);
    if (!has_declared_shape(d, env->dims, &t->t))
      return pg_error_set_at(err, PG_ESHAPE, path, d->mark.line, d->mark.column,
                             "module %d (%s): the golden computes inspection probe '%s' with "
                             "a shape other than the declared one", m->id,
                             m->name ? m->name : "?", d->name);
    enum pg_dtype dt = effective_dtype(env, d);
    pg_tensor_set_name(&pr->out[i], d->name);
    PG_RETURN_IF_ERROR(convert(&pr->out[i], &t->t, dt == PG_DTYPE_INVALID ? t->t.dtype : dt,
                               env->n_threads, err));
  }
  return PG_OK;
}

/* Runs module sp->m's golden and leaves its outputs in tab, rounded to their dtypes;
 * with pr, also records its inspection probes. */
static int run_module(const struct pg_golden_env *env, const struct pg__pspec *sp,
                      const struct phase_live *live, struct pg__gtable *tab,
                      const struct probe_req *pr, struct pg_error *err) {
  const struct pg_op_graph *c = env->plan->graph;
  const struct pg_module *m = sp->m;
  int rc;
  if (pr && pr->n > 0 && m->golden.kind != PG_GOLDEN_STEPS)
    return pg_error_set(err, PG_EINVAL, "module %d (%s): inspection probes need built-in "
                        "golden steps (or a Python golden's _inspect function)", m->id,
                        m->name ? m->name : "?");
  if (m->golden.kind == PG_GOLDEN_STEPS) {
    const char *keep[PG_MAX_BOUNDARY_OUTPUTS];
    int n_keep = 0;
    for (int i = 0; pr && i < pr->n && n_keep < PG_MAX_BOUNDARY_OUTPUTS; i++)
      keep[n_keep++] = pr->decls[i]->name;
    struct pg__run_ctx rcx = {c,         env->dims, env->precision_bits,         env->n_threads,
                              tab->pool, live ? read_later : NULL, live, NULL, keep, n_keep};
    rc = pg__steps_run(&rcx, sp, tab, err);
    if (rc == PG_OK && pr && pr->n > 0) rc = capture_probes(env, m, pr, tab, err);
  } else if (m->golden.kind == PG_GOLDEN_PLUGIN) {
    rc = run_plugin(env, sp, tab, err);
  } else {
    return pg_error_set_at(err, PG_ENOTFOUND, c->path ? c->path : "<contract>", m->mark.line,
                           m->mark.column,
                           "module %d (%s) has no golden: a cumulative golden through it needs "
                           "one (steps or {plugin: NAME})",
                           m->id, m->name ? m->name : "?");
  }
  return rc == PG_OK ? finish_module(env, m, tab, err) : rc;
}

static int check_env(const struct pg_golden_env *env, const struct pg_tensor *primary,
                     int n_primary, struct pg_tensor *outputs, int *n_outputs,
                     struct pg_error *err) {
  if (!env || !env->plan || !outputs || !n_outputs || (n_primary && !primary))
    return pg_error_set(err, PG_EINVAL, "golden: missing argument");
  if (env->precision_bits != 0 && env->precision_bits != 32 && env->precision_bits != 64)
    return pg_error_set(err, PG_EINVAL, "reference precision must be 32 or 64 bits, not %d",
                        env->precision_bits);
  if (n_primary != env->plan->graph->n_primary)
    return pg_error_set(err, PG_EINVAL, "golden: %d primary inputs given, the contract has %d",
                        n_primary, env->plan->graph->n_primary);
  *n_outputs = 0;
  return PG_OK;
}

/* Loads the primary inputs into tab in the reference precision. */
static int load_primaries(const struct pg_golden_env *env, const struct pg_tensor *primary,
                          int n_primary, struct pg__gtable *tab, struct pg_error *err) {
  const struct pg_op_graph *c = env->plan->graph;
  for (int i = 0; i < n_primary; i++) {
    const struct pg_tensor_decl *d = &c->primary_inputs[i];
    struct pg__gtensor *t;
    PG_RETURN_IF_ERROR(pg__gtable_add(tab, d->name, 0, &t, err));
    const struct pg_tensor *src = &primary[i];
    if (!src->dl.data && src->numel > 0)
      return pg_error_set(err, PG_EINVAL, "primary input '%s' has no data", d->name);
    /* a wrong input shape would otherwise surface as a puzzling kernel error */
    if (!has_declared_shape(d, env->dims, src))
      return pg_error_set(err, PG_ESHAPE,
                          "primary input '%s' does not have the shape the contract declares "
                          "under the bound dims",
                          d->name);
    enum pg_dtype to = pg_dtype_is_float(src->dtype) ? ref_dtype(env->precision_bits) : src->dtype;
    if (to == src->dtype) {
      /* already in the reference dtype: a read-only view (kernels never write inputs) */
      PG_RETURN_IF_ERROR(pg_tensor_describe(&t->t, src->dtype, src->dl.ndim, src->shape, err));
      t->t.dl.data = src->dl.data;
      t->t.owned = NULL;
    } else {
      int rc = convert(&t->t, src, to, env->n_threads, err);
      if (rc != PG_OK) return rc;
    }
    pg_tensor_set_name(&t->t, d->name);
  }
  return PG_OK;
}

/* Moves the entries named by decls out of tab into outputs, in effective dtypes. */
static int emit_outputs(const struct pg_golden_env *env, struct pg__gtable *tab,
                        const struct pg_tensor_decl *const *decls, const int *modules, int n,
                        struct pg_tensor *outputs, int *n_outputs, struct pg_error *err) {
  for (int i = 0; i < n; i++) {
    struct pg__gtensor *t = pg__gtable_find(tab, modules[i], decls[i]->name);
    if (!t)
      return pg_error_set(err, PG_ENOTFOUND, "golden: output '%s' was not computed",
                          decls[i]->name);
    enum pg_dtype dt = effective_dtype(env, decls[i]);
    if (dt == PG_DTYPE_INVALID) dt = t->t.dtype;
    int listed_again = 0;
    for (int j = i + 1; j < n; j++)
      listed_again |= modules[j] == modules[i] && strcmp(decls[j]->name, decls[i]->name) == 0;
    if (t->t.owned && !listed_again && t->t.dtype == PG_DTYPE_F32 &&
        (dt == PG_DTYPE_F16 || dt == PG_DTYPE_BF16)) {
      /* narrowed in place, no second buffer: element i is read before its 2 bytes at
       * offset 2i are written, and those never overlap a later element's 4 bytes at 4j */
      float *src = t->t.dl.data;
      uint16_t *dst = t->t.dl.data;
      int64_t n = t->t.numel;
      if (dt == PG_DTYPE_F16) pg__f32_to_f16_n(src, dst, n);
      else for (int64_t e = 0; e < n; e++) dst[e] = pg_f32_to_bf16(src[e]);
      int64_t shape[PG_MAX_NDIM];
      int nd = t->t.dl.ndim;
      memcpy(shape, t->t.shape, sizeof(int64_t) * (size_t)nd);
      int rc = pg_tensor_describe(&t->t, dt, nd, shape, err); /* buffer and owner kept */
      if (rc != PG_OK) {
        for (int j = 0; j < i; j++) pg_tensor_reset(&outputs[j]);
        return rc;
      }
    }
    if (dt == t->t.dtype && t->t.owned && !listed_again) {
      pg_tensor_move(&outputs[i], &t->t); /* the table entry is left empty */
      pg_tensor_set_name(&outputs[i], decls[i]->name);
      *n_outputs = i + 1;
      continue;
    }
    pg_tensor_set_name(&outputs[i], decls[i]->name);
    int rc = convert(&outputs[i], &t->t, dt, env->n_threads, err);
    if (rc != PG_OK) {
      for (int j = 0; j <= i; j++) pg_tensor_reset(&outputs[j]);
      return rc;
    }
    *n_outputs = i + 1;
  }
  return PG_OK;
}

/* The module whose outputs array holds decl. */
static int owner_module(const struct pg_op_graph *c, const struct pg_tensor_decl *d) {
  for (int i = 0; i < c->n_modules; i++) {
    const struct pg_module *m = &c->modules[i];
    if (d >= m->outputs && d < m->outputs + m->n_outputs) return m->id;
  }
  return 0;
}

/* Can module m's golden read a tensor called `name`? Its declared inputs and its
 * steps' arguments (a step that does not parse: yes, to be safe). */
static int module_reads(const struct pg_golden_plan *plan, const struct pg_module *m,
                        const char *name) {
  for (int i = 0; i < m->n_inputs; i++)
    if (m->inputs[i].name && strcmp(m->inputs[i].name, name) == 0) return 1;
  return pg__pspec_reads(pg__plan_spec(plan, m->id), -1, name);
}

/* What a phase-k golden still needs: its boundary outputs and whatever modules after
 * the current one read. */
struct phase_live {
  const struct pg_golden_plan *plan;
  int k, nd;
  const struct pg_tensor_decl *const *decls;
  const int *mods;
};

/* Is g a boundary output of the phase, or read by a module done+1..k? (For a step-
 * local, only the first: the caller checks this module's own later steps.) */
static int read_later(const void *live, const struct pg__gtensor *g, int done) {
  const struct phase_live *p = live;
  for (int b = 0; b < p->nd; b++)
    if (p->mods[b] == g->module && strcmp(p->decls[b]->name, g->name) == 0) return 1;
  for (int id = done + 1; id <= p->k; id++) {
    const struct pg_module *m = pg_graph_module(p->plan->graph, id);
    if (!m || module_reads(p->plan, m, g->name)) return 1;
  }
  return 0;
}

/* After module `done`: tensors nothing reads later go back to the pool, for the next
 * modules to reuse. */
static void release_dead(const struct phase_live *p, struct pg__gtable *tab, int done) {
  for (int i = tab->count - 1; i >= 0; i--) {
    const struct pg__gtensor *g = tab->items[i];
    if (g->module < 0 || !g->t.owned) continue;
    if (!read_later(p, g, done)) pg__gtable_remove_at(tab, i);
  }
}

static int cumulative(const struct pg_golden_env *env, int k, const struct pg_tensor *primary,
                      int n_primary, struct pg_tensor *outputs, int *n_outputs,
                      const struct probe_req *pr, struct pg_error *err) {
  PG_RETURN_IF_ERROR(check_env(env, primary, n_primary, outputs, n_outputs, err));
  const struct pg_op_graph *c = env->plan->graph;
  if (k < 1 || k > c->n_modules)
    return pg_error_set(err, PG_EINVAL, "phase %d outside 1..%d", k, c->n_modules);
  struct pg_golden_env e = *env;
  if (!e.precision_bits) e.precision_bits = 32;
  const struct pg_tensor_decl *decls[PG_MAX_BOUNDARY_OUTPUTS];
  int mods[PG_MAX_BOUNDARY_OUTPUTS];
  int nd = pg_graph_boundary(c, k, decls, PG_MAX_BOUNDARY_OUTPUTS, err);
  if (nd < 0) return nd;
  for (int i = 0; i < nd; i++) mods[i] = owner_module(c, decls[i]);
  struct pg__gtable tab;
  struct pg__pool pool = {0};
  struct phase_live live = {e.plan, k, nd, decls, mods};
  pg__gtable_init(&tab);
  tab.pool = &pool;
  int rc = load_primaries(&e, primary, n_primary, &tab, err);
  /* modules in id order; ids are 1..N in order once the contract validated */
  for (int id = 1; id <= k && rc == PG_OK; id++) {
    const struct pg__pspec *sp = pg__plan_spec(e.plan, id);
    if (!sp) rc = pg_error_set(err, PG_ENOTFOUND, "contract has no module %d", id);
    else rc = run_module(&e, sp, &live, &tab, id == k ? pr : NULL, err);
    if (rc == PG_OK && id < k) release_dead(&live, &tab, id);
  }
  if (rc == PG_OK) rc = emit_outputs(&e, &tab, decls, mods, nd, outputs, n_outputs, err);
  tab.pool = NULL;
  pg__gtable_reset(&tab);
  pg__pool_drain(&pool);
  return rc;
}

int pg_golden_cumulative(const struct pg_golden_env *env, int k, const struct pg_tensor *primary,
                         int n_primary, struct pg_tensor *outputs, int *n_outputs,
                         struct pg_error *err) {
  return cumulative(env, k, primary, n_primary, outputs, n_outputs, NULL, err);
}

int pg_golden_cumulative_probes(const struct pg_golden_env *env, int k,
                                const struct pg_tensor *primary, int n_primary,
                                const struct pg_tensor_decl *const *probes, int n_probes,
                                struct pg_tensor *outputs, int *n_outputs,
                                struct pg_tensor *probe_out, struct pg_error *err) {
  if (n_probes < 0 || n_probes > PG_MAX_BOUNDARY_OUTPUTS || (n_probes && (!probes || !probe_out)))
    return pg_error_set(err, PG_EINVAL, "golden: bad inspection probe list");
  struct probe_req pr = {probes, n_probes, probe_out};
  int rc = cumulative(env, k, primary, n_primary, outputs, n_outputs, &pr, err);
  if (rc != PG_OK)
    for (int i = 0; i < n_probes; i++) pg_tensor_reset(&probe_out[i]);
  return rc;
}

/* The op-level golden's results as its final outputs: each produced, with its
 * declared shape. */
static int check_op_level_outputs(const struct pg_golden_env *env, const struct pg__gtable *tab,
                                  const struct pg_tensor_decl *const *decls, int nd,
                                  struct pg_error *err) {
  for (int i = 0; i < nd; i++) {
    const struct pg__gtensor *t = pg__gtable_find(tab, -1, decls[i]->name);
    if (!t)
      return pg_error_set(err, PG_ENOTFOUND, "op-level golden does not produce final output '%s'",
                          decls[i]->name);
    if (!has_declared_shape(decls[i], env->dims, &t->t))
      return pg_error_set(err, PG_ESHAPE,
                          "op-level golden computes '%s' with a shape other than the declared one",
                          decls[i]->name);
  }
  return PG_OK;
}

int pg_golden_op_level(const struct pg_golden_env *env, const struct pg_tensor *primary,
                       int n_primary, struct pg_tensor *outputs, int *n_outputs,
                       struct pg_error *err) {
  PG_RETURN_IF_ERROR(check_env(env, primary, n_primary, outputs, n_outputs, err));
  const struct pg_op_graph *c = env->plan->graph;
  if (c->op_golden.kind == PG_GOLDEN_NONE)
    return pg_error_set(err, PG_ENOTFOUND, "%s: the contract has no op-level golden",
                        c->path ? c->path : "<contract>");
  struct pg_golden_env e = *env;
  if (!e.precision_bits) e.precision_bits = 32;
  const struct pg_tensor_decl *decls[PG_MAX_BOUNDARY_OUTPUTS];
  int mods[PG_MAX_BOUNDARY_OUTPUTS];
  int nd = pg_graph_boundary(c, c->n_modules, decls, PG_MAX_BOUNDARY_OUTPUTS, err);
  if (nd < 0) return nd;
  for (int i = 0; i < nd; i++) mods[i] = -1; /* op-level results stay step-locals */
  struct pg__gtable tab;
  pg__gtable_init(&tab);
  int rc = load_primaries(&e, primary, n_primary, &tab, err);
  if (rc == PG_OK && c->op_golden.kind == PG_GOLDEN_STEPS) {
    struct pg__run_ctx rcx = {c, e.dims, e.precision_bits, e.n_threads, NULL, NULL, NULL, NULL, NULL, 0};
    rc = pg__steps_run(&rcx, &e.plan->op, &tab, err);
  } else if (rc == PG_OK) {
    rc = run_plugin(&e, &e.plan->op, &tab, err);
  }
  /* the op-level golden's results get the same final rounding as the cumulative one */
  if (rc == PG_OK) rc = check_op_level_outputs(&e, &tab, decls, nd, err);
  if (rc == PG_OK) rc = emit_outputs(&e, &tab, decls, mods, nd, outputs, n_outputs, err);
  pg__gtable_reset(&tab);
  return rc;
}

/* ---------------------------------------------------------------- counterfactual prefix */

struct pg_golden_prefix {
  struct pg_golden_env env;
  int k, nd;
  const struct pg_tensor_decl *decls[PG_MAX_BOUNDARY_OUTPUTS];
  int mods[PG_MAX_BOUNDARY_OUTPUTS];
  struct pg__gtable tab; /* primaries and the outputs of modules 1..k-1, kept */
};

void pg_golden_prefix_free(struct pg_golden_prefix *p) {
  if (!p) return;
  pg__gtable_reset(&p->tab);
  free(p);
}

int pg_golden_prefix_build(const struct pg_golden_env *env, int k, const struct pg_tensor *primary,
                           int n_primary, struct pg_golden_prefix **out, struct pg_error *err) {
  struct pg_tensor dummy;
  int nd0;
  *out = NULL;
  PG_RETURN_IF_ERROR(check_env(env, primary, n_primary, &dummy, &nd0, err));
  const struct pg_op_graph *c = env->plan->graph;
  if (k < 1 || k > c->n_modules)
    return pg_error_set(err, PG_EINVAL, "phase %d outside 1..%d", k, c->n_modules);
  struct pg_golden_prefix *p = calloc(1, sizeof *p);
  if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
  p->env = *env;
  if (!p->env.precision_bits) p->env.precision_bits = 32;
  p->k = k;
  pg__gtable_init(&p->tab);
  int rc = PG_OK;
  p->nd = pg_graph_boundary(c, k, p->decls, PG_MAX_BOUNDARY_OUTPUTS, err);
  if (p->nd < 0) rc = p->nd;
  for (int i = 0; rc == PG_OK && i < p->nd; i++) p->mods[i] = owner_module(c, p->decls[i]);
  if (rc == PG_OK) rc = load_primaries(&p->env, primary, n_primary, &p->tab, err);
  for (int id = 1; id < k && rc == PG_OK; id++) {
    const struct pg__pspec *sp = pg__plan_spec(p->env.plan, id);
    rc = sp ? run_module(&p->env, sp, NULL, &p->tab, NULL, err)
            : pg_error_set(err, PG_ENOTFOUND, "contract has no module %d", id);
  }
  if (rc != PG_OK) {
    pg_golden_prefix_free(p);
    return rc;
  }
  *out = p;
  return PG_OK;
}

/* Drops module k's results (and any step-locals) so the next run starts from the
 * prefix again. */
static void prefix_restore(struct pg_golden_prefix *p) {
  for (int i = p->tab.count - 1; i >= 0; i--)
    if (p->tab.items[i]->module == p->k || p->tab.items[i]->module < 0)
      pg__gtable_remove_at(&p->tab, i);
}

int pg_golden_prefix_run(struct pg_golden_prefix *p, const struct pg_golden_mutation *mut,
                         struct pg_tensor *outputs, int *n_outputs, struct pg_error *err) {
  const struct pg__pspec *sp = pg__plan_spec(p->env.plan, p->k);
  *n_outputs = 0;
  if (!sp) return pg_error_set(err, PG_ENOTFOUND, "contract has no module %d", p->k);
  int rc;
  if (mut && mut->kind != PG_MUT_NONE && sp->m->golden.kind != PG_GOLDEN_STEPS) {
    rc = pg_error_set(err, PG_ENOTSUP, "module %d's golden has no built-in steps", p->k);
  } else if (sp->m->golden.kind == PG_GOLDEN_STEPS) {
    struct pg__run_ctx rcx = {p->env.plan->graph, p->env.dims, p->env.precision_bits,
                              p->env.n_threads, NULL, NULL, NULL, mut, NULL, 0};
    rc = pg__steps_run(&rcx, sp, &p->tab, err);
    if (rc == PG_OK) rc = finish_module(&p->env, sp->m, &p->tab, err);
  } else {
    rc = run_module(&p->env, sp, NULL, &p->tab, NULL, err);
  }
  for (int i = 0; rc == PG_OK && i < p->nd; i++) {
    struct pg__gtensor *t = pg__gtable_find(&p->tab, p->mods[i], p->decls[i]->name);
    if (!t) {
      rc = pg_error_set(err, PG_ENOTFOUND, "golden: output '%s' was not computed",
                        p->decls[i]->name);
      break;
    }
    enum pg_dtype dt = effective_dtype(&p->env, p->decls[i]);
    if (dt == PG_DTYPE_INVALID) dt = t->t.dtype;
    pg_tensor_set_name(&outputs[i], p->decls[i]->name);
    rc = convert(&outputs[i], &t->t, dt, p->env.n_threads, err); /* a copy: the prefix stays */
    if (rc == PG_OK) *n_outputs = i + 1;
  }
  if (rc != PG_OK) {
    for (int j = 0; j < *n_outputs; j++) pg_tensor_reset(&outputs[j]);
    *n_outputs = 0;
  }
  prefix_restore(p);
  return rc;
}
