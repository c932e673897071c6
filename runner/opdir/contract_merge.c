/* phasegate runner — finishing a YAML mapping of module_interfaces.yaml as PyYAML
 * would construct it (docs/design.md §3 "Real files load unchanged"):
 *
 * - `_`-prefixed keys are comments: dropped, so no rule and no unknown-key warning
 *   ever sees them;
 * - explicit keys written twice are an error (rule 8), reported at the later one;
 * - merge keys (`<<: *base`, `<<: [*a, *b]`, a plain `<<` only) are expanded in
 *   PyYAML's order: the merged pairs come first (for a list, the later mapping's
 *   first), then the explicit ones; a key keeps the position of its first
 *   occurrence and the value of its last, so explicit keys override merged ones and
 *   `*a` overrides `*b`. A merged key overridden explicitly is not a duplicate.
 *
 * Runs when a mapping closes, before it can be aliased, so a merged mapping is
 * already finished (nested merges work). Not for: the event loop (contract_yaml.c).
 */
#include <stdlib.h>
#include <string.h>

#include "opdir/contract_internal.h"

static int is_merge_key(const struct pg__ynode *k) {
  return k->kind == PG__Y_SCALAR && k->plain && k->len == 2 && memcmp(k->value, "<<", 2) == 0;
}

static int is_comment_key(const struct pg__ynode *k) {
  return k->kind == PG__Y_SCALAR && k->len > 0 && k->value[0] == '_';
}

struct pair_ref {
  const struct pg__ynode *key, *value;
  int order;
};

static int pair_ref_cmp(const void *a, const void *b) {
  const struct pair_ref *p = a, *q = b;
  size_t n = p->key->len < q->key->len ? p->key->len : q->key->len;
  int c = memcmp(p->key->value, q->key->value, n);
  if (c) return c;
  if (p->key->len != q->key->len) return p->key->len < q->key->len ? -1 : 1;
  return (p->order > q->order) - (p->order < q->order);
}

static int key_eq(const struct pg__ynode *a, const struct pg__ynode *b) {
  return a->len == b->len && memcmp(a->value, b->value, a->len) == 0;
}

static int order_cmp(const void *a, const void *b) {
  const struct pair_ref *p = a, *q = b;
  return (p->order > q->order) - (p->order < q->order);
}

/* Reports every repeated scalar key among the explicit pairs, at the later one.
 * Sorting keeps this O(k log k) for huge mappings. */
static int check_duplicate_keys(struct pg__cctx *x, const struct pg__ynode *map) {
  int n = map->n_kids / 2, m = 0;
  if (n < 2) return PG_OK;
  struct pair_ref *refs = malloc((size_t)n * sizeof *refs);
  if (!refs) return PG_ENOMEM;
  for (int i = 0; i < n; i++) {
    const struct pg__ynode *k = map->kids[2 * i];
    if (k->kind == PG__Y_SCALAR && !is_merge_key(k)) refs[m++] = (struct pair_ref){k, NULL, i};
  }
  qsort(refs, (size_t)m, sizeof *refs, pair_ref_cmp);
  int group = 0; /* index in refs of the first occurrence of the current key */
  for (int i = 1; i < m; i++) {
    const struct pg__ynode *a = refs[group].key, *b = refs[i].key;
    if (key_eq(a, b))
      pg__cfind(x, PG_SEV_ERROR, b->line, b->column, 8, "duplicate key '%.*s' (first at line %d)",
                (int)(b->len > 64 ? 64 : b->len), b->value, a->line);
    else
      group = i;
  }
  free(refs);
  return PG_OK;
}

/* Drops `_`-prefixed keys (comments) in place. */
static void drop_comment_keys(struct pg__ynode *map) {
  int w = 0;
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    if (is_comment_key(map->kids[i])) continue;
    map->kids[w++] = map->kids[i];
    map->kids[w++] = map->kids[i + 1];
  }
  map->n_kids = w;
}

/* The mappings one `<<` value merges, PyYAML's order (a list's later mapping first),
 * appended to refs; the pair count through *n. A value that is neither a mapping nor
 * a list of mappings is a finding (and merges nothing). */
static int collect_merged(struct pg__cctx *x, const struct pg__ynode *at,
                          const struct pg__ynode *v, struct pair_ref *refs, int *n) {
  if (v->kind == PG__Y_MAP) {
    for (int i = 0; i + 1 < v->n_kids; i += 2) {
      refs[*n] = (struct pair_ref){v->kids[i], v->kids[i + 1], *n};
      (*n)++;
    }
    return PG_OK;
  }
  for (int j = v->kind == PG__Y_SEQ ? v->n_kids - 1 : -1; j >= 0; j--) {
    if (v->kids[j]->kind != PG__Y_MAP) {
      pg__cfind(x, PG_SEV_ERROR, at->line, at->column, 8,
                "a merge key '<<' takes mappings (anchors like *base), found %s",
                pg__ykind_name(v->kids[j]));
      continue;
    }
    PG_RETURN_IF_ERROR(collect_merged(x, at, v->kids[j], refs, n));
  }
  if (v->kind == PG__Y_SCALAR)
    pg__cfind(x, PG_SEV_ERROR, at->line, at->column, 8,
              "a merge key '<<' takes a mapping or a list of mappings (like *base or [*a, *b]), "
              "found a scalar");
  return PG_OK;
}

/* Pairs the `<<` values of map would merge (an upper bound, for the allocation). */
static uint64_t merged_pairs(const struct pg__ynode *map) {
  uint64_t total = 0;
  for (int i = 0; i + 1 < map->n_kids; i += 2) {
    if (!is_merge_key(map->kids[i])) continue;
    const struct pg__ynode *v = map->kids[i + 1];
    if (v->kind == PG__Y_MAP) total += (uint64_t)v->n_kids / 2;
    for (int j = 0; v->kind == PG__Y_SEQ && j < v->n_kids; j++)
      if (v->kids[j]->kind == PG__Y_MAP) total += (uint64_t)v->kids[j]->n_kids / 2;
  }
  return total;
}

/* Expands the merge keys of map (see the file comment). */
static int expand_merges(struct pg__cctx *x, struct pg__ynode *map) {
  uint64_t bound = merged_pairs(map) + (uint64_t)map->n_kids / 2;
  if (bound > PG__YAML_MAX_EXPANDED) {
    pg__cfind(x, PG_SEV_ERROR, map->line, map->column, 8,
              "merge keys expand this mapping to more than %d entries", PG__YAML_MAX_EXPANDED);
    return PG_EPARSE;
  }
  struct pair_ref *refs = malloc((size_t)(bound ? bound : 1) * sizeof *refs);
  if (!refs) return PG_ENOMEM;
  int n = 0, rc = PG_OK;
  for (int i = 0; rc == PG_OK && i + 1 < map->n_kids; i += 2)
    if (is_merge_key(map->kids[i])) rc = collect_merged(x, map->kids[i], map->kids[i + 1], refs, &n);
  for (int i = 0; rc == PG_OK && i + 1 < map->n_kids; i += 2)
    if (!is_merge_key(map->kids[i]))
      refs[n] = (struct pair_ref){map->kids[i], map->kids[i + 1], n}, n++;
  if (rc != PG_OK) {
    free(refs);
    return rc;
  }
  /* Non-scalar keys (rule 8 findings later) are never equal to anything: keep them. */
  int m = 0;
  struct pair_ref *scalars = refs;
  for (int i = 0; i < n; i++)
    if (refs[i].key->kind == PG__Y_SCALAR) {
      struct pair_ref t = refs[m];
      refs[m++] = refs[i];
      refs[i] = t;
    }
  qsort(scalars, (size_t)m, sizeof *refs, pair_ref_cmp);
  int w = 0;
  for (int a = 0, b; a < m; a = b) {
    for (b = a + 1; b < m && key_eq(refs[a].key, refs[b].key); b++) {
    }
    /* first position, last value */
    refs[w++] = (struct pair_ref){refs[a].key, refs[b - 1].value, refs[a].order};
  }
  for (int i = m; i < n; i++) refs[w++] = refs[i];
  qsort(refs, (size_t)w, sizeof *refs, order_cmp);
  struct pg__ynode **kids = pg__yarena_alloc(x, (size_t)(w > 0 ? 2 * w : 1) * sizeof *kids);
  if (!kids) {
    free(refs);
    return PG_ENOMEM;
  }
  for (int i = 0; i < w; i++) {
    kids[2 * i] = (struct pg__ynode *)refs[i].key;
    kids[2 * i + 1] = (struct pg__ynode *)refs[i].value;
  }
  map->kids = kids;
  map->n_kids = map->cap_kids = 2 * w;
  free(refs);
  return PG_OK;
}

int pg__ymap_finish(struct pg__cctx *x, struct pg__ynode *map) {
  drop_comment_keys(map);
  PG_RETURN_IF_ERROR(check_duplicate_keys(x, map));
  for (int i = 0; i + 1 < map->n_kids; i += 2)
    if (is_merge_key(map->kids[i])) return expand_merges(x, map);
  return PG_OK;
}
