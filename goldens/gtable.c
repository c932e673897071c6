/* phasegate goldens/ — the named-tensor table a golden computation works in (primary
 * inputs, module outputs, step-locals), and its buffers: huge-page-aligned or
 * pre-populated allocations for big tensors, and the per-call pool that hands released
 * buffers to later allocations of a similar size.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "golden_private.h"

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

void pg__gtable_remove_at(struct pg__gtable *tab, int i) {
  pg__pool_put(tab->pool, &tab->items[i]->t);
  free(tab->items[i]);
  memmove(&tab->items[i], &tab->items[i + 1], (size_t)(tab->count - i - 1) * sizeof *tab->items);
  tab->count--;
}

/* Removes the step-locals (module == -1). */
static void drop_locals(struct pg__gtable *tab) {
  for (int i = tab->count - 1; i >= 0; i--)
    if (tab->items[i]->module == -1) pg__gtable_remove_at(tab, i);
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
  drop_locals(tab);
}

struct pg__gtensor *pg__gtable_find(const struct pg__gtable *tab, int module, const char *name) {
  for (int i = tab->count - 1; i >= 0; i--)
    if (tab->items[i]->module == module && strcmp(tab->items[i]->name, name) == 0)
      return tab->items[i];
  return NULL;
}

struct pg__gtensor *pg__gtable_source(const struct pg__gtable *tab,
                                      const struct pg_golden_source *src, const char *name) {
  switch (src->kind) {
    case PG_GOLDEN_SRC_STEP: return pg__gtable_find(tab, -1, name);
    case PG_GOLDEN_SRC_PRIMARY: return pg__gtable_find(tab, 0, name);
    case PG_GOLDEN_SRC_MODULE: return pg__gtable_find(tab, src->index, name);
    default: return NULL;
  }
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

