/* phasegate goldens/ — cumulative composition (DESIGN.md §5): runs the goldens of
 * M1..Mk in order over a table of named tensors, and the op-level golden.
 *
 * Numerics, as a device pipeline behaves: primary inputs are widened from their
 * (effective) dtype into the reference precision (fp32, or fp64 with precision_bits
 * 64); every module output is rounded to its declared (effective) dtype before the
 * next module reads it, because the device stores it in that dtype too; the boundary
 * outputs are returned in their effective dtypes. Integer and bool tensors keep their
 * dtype throughout. Not here: step parsing (steps.c), plugins (plugin.c), caching
 * (runner/golden_cache.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "f16_bulk.h"
#include "golden_private.h"
#include "kernels_internal.h"

/* ---------------------------------------------------------------- tensor table */

void pg__gtable_init(struct pg__gtable *tab) { memset(tab, 0, sizeof *tab); }

void pg__gtable_reset(struct pg__gtable *tab) {
  if (!tab) return;
  for (int i = 0; i < tab->count; i++) {
    pg_tensor_reset(&tab->items[i]->t);
    free(tab->items[i]);
  }
  free(tab->items);
  memset(tab, 0, sizeof *tab);
}

int pg__gtable_add(struct pg__gtable *tab, const char *name, int module,
                   struct pg__gtensor **out, struct pg_error *err) {
  if (tab->count == tab->cap) {
    int cap = tab->cap ? tab->cap * 2 : 16;
    struct pg__gtensor **items = realloc(tab->items, (size_t)cap * sizeof *items);
    if (!items) return pg_error_set(err, PG_ENOMEM, "out of memory in the golden tensor table");
    tab->items = items;
    tab->cap = cap;
  }
  struct pg__gtensor *g = calloc(1, sizeof *g);
  if (!g) return pg_error_set(err, PG_ENOMEM, "out of memory in the golden tensor table");
  snprintf(g->name, sizeof g->name, "%s", name ? name : "");
  g->module = module;
  pg_tensor_init(&g->t);
  pg_tensor_set_name(&g->t, name);
  tab->items[tab->count++] = g;
  *out = g;
  return PG_OK;
}

static void gtable_remove_at(struct pg__gtable *tab, int i) {
  pg__pool_put(tab->pool, &tab->items[i]->t);
  free(tab->items[i]);
  memmove(&tab->items[i], &tab->items[i + 1], (size_t)(tab->count - i - 1) * sizeof *tab->items);
  tab->count--;
}

void pg__gtable_drop_locals(struct pg__gtable *tab) {
  for (int i = tab->count - 1; i >= 0; i--)
    if (tab->items[i]->module == -1) gtable_remove_at(tab, i);
}

void pg__gtable_promote(struct pg__gtable *tab, const struct pg_module *m) {
  /* the latest local of each output name wins; earlier redefinitions are dropped */
  for (int o = 0; o < m->n_outputs; o++) {
    const char *name = m->outputs[o].name;
    for (int i = tab->count - 1; i >= 0; i--)
      if (tab->items[i]->module == -1 && strcmp(tab->items[i]->name, name) == 0) {
        tab->items[i]->module = m->id;
        break;
      }
  }
  pg__gtable_drop_locals(tab);
}

static struct pg__gtensor *find_entry(const struct pg__gtable *tab, int module,
                                      const char *name) {
  for (int i = tab->count - 1; i >= 0; i--)
    if (tab->items[i]->module == module && strcmp(tab->items[i]->name, name) == 0)
      return tab->items[i];
  return NULL;
}

struct pg__gtensor *pg__gtable_resolve(const struct pg__gtable *tab, const struct pg_module *m,
                                       const char *name) {
  struct pg__gtensor *t = find_entry(tab, -1, name);
  if (t) return t;
  if (m)
    for (int i = 0; i < m->n_inputs; i++)
      if (m->inputs[i].name && strcmp(m->inputs[i].name, name) == 0) {
        t = find_entry(tab, m->inputs[i].source_module, name);
        if (t) return t;
      }
  t = find_entry(tab, 0, name);
  if (t) return t;
  struct pg__gtensor *best = NULL;
  for (int i = 0; i < tab->count; i++) {
    struct pg__gtensor *g = tab->items[i];
    if (g->module > 0 && (!m || g->module < m->id) && strcmp(g->name, name) == 0 &&
        (!best || g->module > best->module))
      best = g;
  }
  return best;
}

/* ---------------------------------------------------------------- allocation */

#define HUGE_PAGE ((size_t)2 << 20)

/* Mid-size buffers (64 KiB .. 2 MiB) are mapped with MAP_POPULATE: the kernel fills
 * the page table in one call instead of one page fault per 4 KiB on first touch
 * (about 600 faults per attention phase-3 golden otherwise). */
#define POPULATE_MIN ((size_t)64 << 10)

static void unmap_release(struct pg_tensor *t) {
  munmap(t->owned, (size_t)(uintptr_t)t->release_ctx);
}

int pg__golden_alloc(struct pg_tensor *t, enum pg_dtype dtype, int ndim, const int64_t *shape,
                     struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_tensor_describe(t, dtype, ndim, shape, err));
#ifdef MAP_POPULATE
  if (t->nbytes >= POPULATE_MIN && t->nbytes < HUGE_PAGE) {
    void *p = mmap(NULL, t->nbytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) {
      t->owned = p;
      t->release = unmap_release;
      t->release_ctx = (void *)(uintptr_t)t->nbytes;
      t->dl.data = p;
      return PG_OK;
    }
    /* fall through to malloc: it reports the failure if memory is really short */
  }
#endif
  if (t->nbytes < HUGE_PAGE) return pg_tensor_alloc(t, dtype, ndim, shape, err);
  size_t bytes = (t->nbytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  void *p = aligned_alloc(HUGE_PAGE, bytes);
  if (!p)
    return pg_error_set(err, PG_ENOMEM, "cannot allocate %zu bytes for tensor '%s'", bytes,
                        t->name);
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
  t->owned = p;
  t->release = NULL;
  t->dl.data = p;
  return PG_OK;
}

/* ---------------------------------------------------------------- buffer pool */

void pg__pool_put(struct pg__pool *pool, struct pg_tensor *t) {
  if (pool && t->owned && pool->n < PG__POOL_MAX &&
      (t->release == NULL || t->release == unmap_release)) {
    pool->items[pool->n].p = t->owned;
    pool->items[pool->n].cap =
        t->release == unmap_release ? (size_t)(uintptr_t)t->release_ctx : t->nbytes;
    pool->items[pool->n].release = t->release;
    pool->items[pool->n].release_ctx = t->release_ctx;
    pool->n++;
    t->owned = NULL; /* the buffer now belongs to the pool */
    t->release = NULL;
    t->release_ctx = NULL;
  }
  pg_tensor_reset(t);
}

void pg__pool_drain(struct pg__pool *pool) {
  if (!pool) return;
  for (int i = 0; i < pool->n; i++) {
    struct pg_tensor t;
    pg_tensor_init(&t);
    t.owned = pool->items[i].p;
    t.release = pool->items[i].release;
    t.release_ctx = pool->items[i].release_ctx;
    pg_tensor_reset(&t);
  }
  pool->n = 0;
}

int pg__golden_alloc_from(struct pg__pool *pool, struct pg_tensor *t, enum pg_dtype dtype,
                          int ndim, const int64_t *shape, struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_tensor_describe(t, dtype, ndim, shape, err));
  int best = -1;
  size_t need = t->nbytes;
  for (int i = 0; pool && need > 0 && i < pool->n; i++) {
    size_t cap = pool->items[i].cap;
    /* not much larger: a big buffer is better kept for a big tensor */
    if (cap >= need && cap <= 2 * need + 4096 && (best < 0 || cap < pool->items[best].cap))
      best = i;
  }
  if (best < 0) return pg__golden_alloc(t, dtype, ndim, shape, err);
  t->owned = pool->items[best].p;
  t->release = pool->items[best].release;
  t->release_ctx = pool->items[best].release_ctx;
  t->dl.data = t->owned;
  pool->items[best] = pool->items[--pool->n];
  return PG_OK;
}

/* ---------------------------------------------------------------- dtype helpers */

static enum pg_dtype ref_dtype(int precision_bits) {
  return precision_bits == 64 ? PG_DTYPE_F64 : PG_DTYPE_F32;
}

/* The effective dtype of a declared tensor under the case's dtype overrides. */
static enum pg_dtype effective_dtype(const struct pg_golden_env *env,
                                     const struct pg_tensor_decl *d) {
  for (int i = 0; i < env->n_dtype_overrides; i++) {
    const struct pg_name_value *nv = &env->dtype_overrides[i];
    if (nv->name && d->name && strcmp(nv->name, d->name) == 0) {
      enum pg_dtype t = pg_dtype_parse(nv->value);
      if (t != PG_DTYPE_INVALID) return t;
    }
  }
  return d->dtype;
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
  int64_t shape[PG_MAX_NDIM];
  if (d->ndim < 0)
    return pg_error_set(err, PG_EINVAL, "output '%s' declares no shape", d->name);
  for (int i = 0; i < d->ndim; i++) {
    int rc = pg_shape_expr_eval(d->dims[i], dims, &shape[i], err);
    if (rc != PG_OK) {
      pg_error_prefix(err, "shape of '%s': ", d->name);
      return rc;
    }
  }
  enum pg_dtype dt = (d->dtype == PG_DTYPE_INVALID || pg_dtype_is_float(d->dtype))
                         ? ref_dtype(precision_bits)
                         : d->dtype;
  pg_tensor_set_name(t, d->name);
  return pg__golden_alloc_from(pool, t, dt, d->ndim, shape, err);
}

/* Runs a plugin golden for module m (NULL: op level, inputs = primaries, outputs =
 * final outputs) and adds its outputs to tab as step-locals. */
static int run_plugin(const struct pg_golden_env *env, const struct pg_module *m,
                      const struct pg_golden_spec *g, struct pg__gtable *tab,
                      struct pg_error *err) {
  const struct pg_op_graph *c = env->graph;
  const char *who = m ? (m->name ? m->name : "?") : "op level";
  if (!env->golden_lib)
    return pg_error_set(err, PG_EINVAL,
                        "%s:%d:%d: error: golden of %s%s%s is plugin '%s', but no golden library "
                        "was given (pass --golden-lib)",
                        c->path ? c->path : "<contract>", g->mark.line, g->mark.column,
                        m ? "module " : "", m ? "" : who, m ? who : "", g->plugin);
  struct pg_tensor *ins[64], *outs[64];
  const struct pg_tensor_decl *fdecls[PG_MAX_BOUNDARY_OUTPUTS];
  int n_in = 0, n_out = 0;
  if (m) {
    if (m->n_inputs > 64 || m->n_outputs > 64)
      return pg_error_set(err, PG_ELIMIT, "module %s: too many tensors", who);
    for (int i = 0; i < m->n_inputs; i++) {
      struct pg__gtensor *t = pg__gtable_resolve(tab, m, m->inputs[i].name);
      if (!t || !t->t.dl.data)
        return pg_error_set(err, PG_ENOTFOUND, "module %s: input '%s' was not computed", who,
                            m->inputs[i].name);
      ins[n_in++] = &t->t;
    }
  } else {
    for (int i = 0; i < tab->count && n_in < 64; i++)
      if (tab->items[i]->module == 0) ins[n_in++] = &tab->items[i]->t;
  }
  int nd = 0;
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
    outs[n_out++] = &t->t;
  }
  return pg__golden_plugin_call(env->golden_lib, g->plugin, c->op, m ? m->id : 0,
                                m ? m->name : "op", env->precision_bits, env->dims, ins, n_in,
                                outs, n_out, err);
}

/* Runs module m's golden and leaves its outputs in tab, rounded to their dtypes. */
static int run_module(const struct pg_golden_env *env, const struct pg__kernel_source *ks,
                      const struct pg_module *m, const struct phase_live *live,
                      struct pg__gtable *tab, struct pg_error *err) {
  const struct pg_op_graph *c = env->graph;
  const char *path = c->path ? c->path : "<contract>";
  int rc;
  if (m->golden.kind == PG_GOLDEN_STEPS) {
    struct pg__run_ctx rcx = {c,  env->dims, env->precision_bits, env->n_threads, ks,
                              tab->pool, live ? read_later : NULL, live};
    rc = pg__steps_run(&rcx, m, &m->golden, tab, err);
  } else if (m->golden.kind == PG_GOLDEN_PLUGIN) {
    rc = run_plugin(env, m, &m->golden, tab, err);
  } else {
    return pg_error_set_at(err, PG_ENOTFOUND, path, m->mark.line, m->mark.column,
                           "module %d (%s) has no golden: a cumulative golden through it needs "
                           "one (steps or {plugin: NAME})",
                           m->id, m->name ? m->name : "?");
  }
  if (rc != PG_OK) return rc;
  /* every declared output: present, declared shape, rounded to its effective dtype */
  for (int o = 0; o < m->n_outputs; o++) {
    const struct pg_tensor_decl *d = &m->outputs[o];
    struct pg__gtensor *t = find_entry(tab, -1, d->name);
    if (!t)
      return pg_error_set_at(err, PG_ENOTFOUND, path, d->mark.line, d->mark.column,
                             "module %d (%s): the golden does not produce declared output '%s'",
                             m->id, m->name ? m->name : "?", d->name);
    if (d->ndim >= 0) {
      int same = d->ndim == t->t.dl.ndim;
      for (int a = 0; same && a < d->ndim; a++) {
        int64_t v;
        if (pg_shape_expr_eval(d->dims[a], env->dims, &v, NULL) != PG_OK || v != t->t.shape[a])
          same = 0;
      }
      if (!same)
        return pg_error_set_at(err, PG_ESHAPE, path, d->mark.line, d->mark.column,
                               "module %d (%s): the golden computes '%s' with a shape other "
                               "than the declared one",
                               m->id, m->name ? m->name : "?", d->name);
    }
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

static int check_env(const struct pg_golden_env *env, const struct pg_tensor *primary,
                     int n_primary, struct pg_tensor *outputs, int *n_outputs,
                     struct pg_error *err) {
  if (!env || !env->graph || !outputs || !n_outputs || (n_primary && !primary))
    return pg_error_set(err, PG_EINVAL, "golden: missing argument");
  if (env->precision_bits != 0 && env->precision_bits != 32 && env->precision_bits != 64)
    return pg_error_set(err, PG_EINVAL, "reference precision must be 32 or 64 bits, not %d",
                        env->precision_bits);
  if (n_primary != env->graph->n_primary)
    return pg_error_set(err, PG_EINVAL, "golden: %d primary inputs given, the contract has %d",
                        n_primary, env->graph->n_primary);
  *n_outputs = 0;
  return PG_OK;
}

/* Loads the primary inputs into tab in the reference precision. */
static int load_primaries(const struct pg_golden_env *env, const struct pg_tensor *primary,
                          int n_primary, struct pg__gtable *tab, struct pg_error *err) {
  const struct pg_op_graph *c = env->graph;
  for (int i = 0; i < n_primary; i++) {
    const struct pg_tensor_decl *d = &c->primary_inputs[i];
    struct pg__gtensor *t;
    PG_RETURN_IF_ERROR(pg__gtable_add(tab, d->name, 0, &t, err));
    const struct pg_tensor *src = &primary[i];
    if (!src->dl.data && src->numel > 0)
      return pg_error_set(err, PG_EINVAL, "primary input '%s' has no data", d->name);
    if (d->ndim >= 0) {
      /* a wrong input shape would otherwise surface as a puzzling kernel error */
      int same = d->ndim == src->dl.ndim;
      for (int a = 0; same && a < d->ndim; a++) {
        int64_t v;
        same = pg_shape_expr_eval(d->dims[a], env->dims, &v, NULL) == PG_OK && v == src->shape[a];
      }
      if (!same)
        return pg_error_set(err, PG_ESHAPE,
                            "primary input '%s' does not have the shape the contract declares "
                            "under the bound dims",
                            d->name);
    }
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
    struct pg__gtensor *t = find_entry(tab, modules[i], decls[i]->name);
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

/* Can module m's golden read a tensor called `name`? Declared inputs and the inputs
 * of its steps (a step that does not parse: yes, to be safe). */
static int module_reads(const struct pg_module *m, const char *name) {
  for (int i = 0; i < m->n_inputs; i++)
    if (m->inputs[i].name && strcmp(m->inputs[i].name, name) == 0) return 1;
  if (m->golden.kind != PG_GOLDEN_STEPS) return 0;
  for (int s = 0; s < m->golden.n_steps; s++) {
    struct pg__step st;
    if (pg__step_parse(m->golden.steps[s].text, &st, NULL) != PG_OK) return 1;
    for (int i = 0; i < st.n_inputs; i++)
      if (strcmp(st.inputs[i], name) == 0) return 1;
  }
  return 0;
}

/* What a phase-k golden still needs: its boundary outputs and whatever modules after
 * the current one read. */
struct phase_live {
  const struct pg_op_graph *c;
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
    const struct pg_module *m = pg_graph_module(p->c, id);
    if (!m || module_reads(m, g->name)) return 1;
  }
  return 0;
}

/* After module `done`: tensors nothing reads later go back to the pool, for the next
 * modules to reuse. */
static void release_dead(const struct phase_live *p, struct pg__gtable *tab, int done) {
  for (int i = tab->count - 1; i >= 0; i--) {
    const struct pg__gtensor *g = tab->items[i];
    if (g->module < 0 || !g->t.owned) continue;
    if (!read_later(p, g, done)) gtable_remove_at(tab, i);
  }
}

int pg__golden_cumulative_ks(const struct pg_golden_env *env, const struct pg__kernel_source *ks,
                             int k, const struct pg_tensor *primary, int n_primary,
                             struct pg_tensor *outputs, int *n_outputs, struct pg_error *err) {
  PG_RETURN_IF_ERROR(check_env(env, primary, n_primary, outputs, n_outputs, err));
  const struct pg_op_graph *c = env->graph;
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
  struct phase_live live = {c, k, nd, decls, mods};
  pg__gtable_init(&tab);
  tab.pool = &pool;
  int rc = load_primaries(&e, primary, n_primary, &tab, err);
  /* modules in id order; ids are 1..N in order once the contract validated */
  for (int id = 1; id <= k && rc == PG_OK; id++) {
    const struct pg_module *m = pg_graph_module(c, id);
    if (!m) rc = pg_error_set(err, PG_ENOTFOUND, "contract has no module %d", id);
    else rc = run_module(&e, ks, m, &live, &tab, err);
    if (rc == PG_OK && id < k) release_dead(&live, &tab, id);
  }
  if (rc == PG_OK) rc = emit_outputs(&e, &tab, decls, mods, nd, outputs, n_outputs, err);
  tab.pool = NULL;
  pg__gtable_reset(&tab);
  pg__pool_drain(&pool);
  return rc;
}

int pg__golden_op_level_ks(const struct pg_golden_env *env, const struct pg__kernel_source *ks,
                           const struct pg_tensor *primary, int n_primary,
                           struct pg_tensor *outputs, int *n_outputs, struct pg_error *err) {
  PG_RETURN_IF_ERROR(check_env(env, primary, n_primary, outputs, n_outputs, err));
  const struct pg_op_graph *c = env->graph;
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
  if (rc == PG_OK) {
    if (c->op_golden.kind == PG_GOLDEN_STEPS) {
      struct pg__run_ctx rcx = {c, e.dims, e.precision_bits, e.n_threads, ks, NULL, NULL, NULL};
      rc = pg__steps_run(&rcx, NULL, &c->op_golden, &tab, err);
    } else {
      rc = run_plugin(&e, NULL, &c->op_golden, &tab, err);
    }
  }
  /* the op-level golden's results get the same final rounding as the cumulative one */
  for (int i = 0; i < nd && rc == PG_OK; i++) {
    struct pg__gtensor *t = find_entry(&tab, -1, decls[i]->name);
    if (!t) {
      rc = pg_error_set(err, PG_ENOTFOUND, "op-level golden does not produce final output '%s'",
                        decls[i]->name);
      break;
    }
    int same = decls[i]->ndim < 0 || decls[i]->ndim == t->t.dl.ndim;
    for (int a = 0; same && decls[i]->ndim >= 0 && a < decls[i]->ndim; a++) {
      int64_t v;
      same = pg_shape_expr_eval(decls[i]->dims[a], e.dims, &v, NULL) == PG_OK &&
             v == t->t.shape[a];
    }
    if (!same)
      rc = pg_error_set(err, PG_ESHAPE,
                        "op-level golden computes '%s' with a shape other than the declared one",
                        decls[i]->name);
  }
  if (rc == PG_OK) rc = emit_outputs(&e, &tab, decls, mods, nd, outputs, n_outputs, err);
  pg__gtable_reset(&tab);
  return rc;
}

int pg_golden_cumulative(const struct pg_golden_env *env, int k, const struct pg_tensor *primary,
                         int n_primary, struct pg_tensor *outputs, int *n_outputs,
                         struct pg_error *err) {
  return pg__golden_cumulative_ks(env, NULL, k, primary, n_primary, outputs, n_outputs, err);
}

int pg_golden_op_level(const struct pg_golden_env *env, const struct pg_tensor *primary,
                       int n_primary, struct pg_tensor *outputs, int *n_outputs,
                       struct pg_error *err) {
  return pg__golden_op_level_ks(env, NULL, primary, n_primary, outputs, n_outputs, err);
}
