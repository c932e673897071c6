/* phasegate runner — the contract loader's context, below every other contract_*.c:
 * findings recorded with their position (sorted and published by contract_load.c),
 * and the bump arena the YAML node tree lives in (built by contract_yaml.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/contract_internal.h"

/* ------------------------------------------------------------------ findings */

void pg__cfind(struct pg__cctx *x, enum pg_severity sev, int line, int column, int rule,
               const char *fmt, ...) {
  if (sev == PG_SEV_ERROR) x->n_errors++;
  if (x->count >= PG__CONTRACT_MAX_FINDINGS) {
    x->dropped++;
    return;
  }
  if (pg_array_reserve(&x->items, &x->capacity, x->count, sizeof *x->items) != 0) {
    x->oom = 1;
    return;
  }
  char buf[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char *msg = strdup(buf);
  if (!msg) {
    x->oom = 1;
    return;
  }
  x->items[x->count] = (struct pg__finding){sev, line, column, rule, x->count, msg};
  x->count++;
}

/* ------------------------------------------------------------------ node tree */

/* A bump allocator for the tree: one free() per 64 KiB instead of one per node keeps
 * million-node documents fast (and cheap under sanitizers). */
struct pg__arena {
  struct pg__arena *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK ((size_t)64 << 10)

void *pg__yarena_alloc(struct pg__cctx *x, size_t size) {
  size = (size + 15) & ~(size_t)15;
  struct pg__arena *a = x->arena;
  if (!a || a->cap - a->used < size) {
    size_t cap = size > ARENA_CHUNK / 4 ? size : ARENA_CHUNK;
    struct pg__arena *n = malloc(sizeof *n + cap);
    if (!n) return NULL;
    n->used = 0;
    n->cap = cap;
    if (a && size > ARENA_CHUNK / 4) { /* a big block: keep filling the current chunk */
      n->next = a->next;
      a->next = n;
    } else {
      n->next = a;
      x->arena = n;
    }
    a = n;
  }
  void *p = a->data + a->used;
  a->used += size;
  return p;
}

void pg__yaml_free(struct pg__cctx *x) {
  while (x->arena) {
    struct pg__arena *next = x->arena->next;
    free(x->arena);
    x->arena = next;
  }
  x->n_nodes = 0;
  x->root = NULL;
}
