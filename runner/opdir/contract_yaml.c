/* phasegate runner — the contract loader's entry points and its YAML layer
 * (module_interfaces.yaml, docs/design.md §3).
 *
 * Reads the file (64 MiB cap), runs libyaml's event parser and builds a small node
 * tree that keeps every node's 1-based line:column, rejecting what would make a
 * hostile file hang or blow memory: nesting deeper than 64, more than 1M nodes, alias
 * expansion beyond 4M nodes, several documents. Duplicate mapping keys are found
 * here too. contract_schema.c then walks the tree. All findings of both halves are
 * sorted by position and handed to the caller's pg_diags; the first error also goes
 * to `err`. Not for: the schema rules themselves (contract_schema.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/base.h"
#include "opdir/contract_internal.h"
#include "opdir/opdir.h"

/* ------------------------------------------------------------------ findings */

void pg__cfind(struct pg__cctx *x, enum pg_severity sev, int line, int column, int rule,
               const char *fmt, ...) {
  if (sev == PG_SEV_ERROR) x->n_errors++;
  if (x->count >= PG__CONTRACT_MAX_FINDINGS) {
    x->dropped++;
    return;
  }
  if (x->count == x->capacity) {
    int cap = x->capacity ? x->capacity * 2 : 16;
    struct pg__finding *items = realloc(x->items, (size_t)cap * sizeof *items);
    if (!items) {
      x->oom = 1;
      return;
    }
    x->items = items;
    x->capacity = cap;
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

static struct pg__ynode *node_new(struct pg__cctx *x, enum pg__ynode_kind kind,
                                  yaml_mark_t mark) {
  struct pg__ynode *n = pg__yarena_alloc(x, sizeof *n);
  if (!n) return NULL;
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->line = (int)mark.line + 1;
  n->column = (int)mark.column + 1;
  n->weight = 1;
  x->n_nodes++;
  return n;
}

static int node_add_kid(struct pg__cctx *x, struct pg__ynode *parent, struct pg__ynode *kid) {
  if (parent->n_kids == parent->cap_kids) {
    int cap = parent->cap_kids ? parent->cap_kids * 2 : 8;
    struct pg__ynode **kids = pg__yarena_alloc(x, (size_t)cap * sizeof *kids);
    if (!kids) return PG_ENOMEM;
    if (parent->n_kids) memcpy(kids, parent->kids, (size_t)parent->n_kids * sizeof *kids);
    parent->kids = kids;
    parent->cap_kids = cap;
  }
  parent->kids[parent->n_kids++] = kid;
  return PG_OK;
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

struct anchor {
  char *name;
  struct pg__ynode *node;
};

#define MAX_ANCHORS 10000

/* Line and column (1-based, in bytes) of a byte offset, for reader errors, which
 * libyaml reports as an offset only. */
static void offset_to_position(const char *data, size_t size, size_t offset, int *line,
                               int *column) {
  int l = 1;
  size_t line_start = 0;
  if (offset > size) offset = size;
  for (size_t i = 0; i < offset; i++)
    if (data[i] == '\n') {
      l++;
      line_start = i + 1;
    }
  *line = l;
  *column = (int)(offset - line_start) + 1;
}

static void syntax_error(struct pg__cctx *x, const yaml_parser_t *p, const char *data,
                         size_t size) {
  const char *problem = p->problem ? p->problem : "unknown error";
  if (p->error == YAML_MEMORY_ERROR) {
    x->oom = 1;
    return;
  }
  if (p->error == YAML_READER_ERROR) {
    int line, column;
    offset_to_position(data, size, p->problem_offset, &line, &column);
    if (p->problem_value >= 0)
      pg__cfind(x, PG_SEV_ERROR, line, column, 8,
                "not valid YAML text: %s (byte 0x%02X; the contract must be UTF-8 text)", problem,
                (unsigned)p->problem_value);
    else
      pg__cfind(x, PG_SEV_ERROR, line, column, 8,
                "not valid YAML text: %s (the contract must be UTF-8 text)", problem);
    return;
  }
  int line = (int)p->problem_mark.line + 1, column = (int)p->problem_mark.column + 1;
  if (p->context)
    pg__cfind(x, PG_SEV_ERROR, line, column, 8, "YAML syntax error: %s (%s at line %d, column %d)",
              problem, p->context, (int)p->context_mark.line + 1,
              (int)p->context_mark.column + 1);
  else
    pg__cfind(x, PG_SEV_ERROR, line, column, 8, "YAML syntax error: %s", problem);
}

static int is_default_tag(const yaml_char_t *tag) {
  return !tag || strcmp((const char *)tag, "!") == 0;
}

/* The tree being built from parser events: the open containers (with the anchors
 * they will register when they close) and the anchors registered so far. */
struct ybuild {
  struct pg__cctx *x;
  struct pg__ynode *stack[PG__YAML_MAX_DEPTH];
  char *stack_anchor[PG__YAML_MAX_DEPTH];
  int depth, docs;
  struct anchor *anchors;
  int n_anchors, cap_anchors;
};

/* A new scalar, sequence or mapping node from its start event; *anchor is its anchor. */
static int new_node(struct ybuild *b, const yaml_event_t *ev, int line, int column,
                    struct pg__ynode **out, const yaml_char_t **anchor) {
  struct pg__cctx *x = b->x;
  if (x->n_nodes >= PG__YAML_MAX_NODES) {
    pg__cfind(x, PG_SEV_ERROR, line, column, 8,
              "the document has more than %d nodes; a contract is far smaller",
              PG__YAML_MAX_NODES);
    return PG_EPARSE;
  }
  enum pg__ynode_kind kind = ev->type == YAML_SCALAR_EVENT         ? PG__Y_SCALAR
                             : ev->type == YAML_SEQUENCE_START_EVENT ? PG__Y_SEQ
                                                                     : PG__Y_MAP;
  struct pg__ynode *node = *out = node_new(x, kind, ev->start_mark);
  if (!node) return PG_ENOMEM;
  if (kind == PG__Y_SCALAR) {
    node->len = ev->data.scalar.length;
    node->value = pg__yarena_alloc(x, node->len + 1);
    if (!node->value) return PG_ENOMEM;
    memcpy(node->value, ev->data.scalar.value, node->len);
    node->value[node->len] = '\0';
    node->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                  is_default_tag(ev->data.scalar.tag);
    node->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                   ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    node->single_line = ev->start_mark.line == ev->end_mark.line;
    *anchor = ev->data.scalar.anchor;
  } else if (kind == PG__Y_SEQ) {
    node->flow = ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
    *anchor = ev->data.sequence_start.anchor;
  } else {
    node->flow = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
    *anchor = ev->data.mapping_start.anchor;
  }
  return PG_OK;
}

/* A node event (scalar, alias, or the start of a container): the node, attached to the
 * open container (or made the root); a container is pushed, its anchor kept until it
 * closes (no self-reference). */
static int on_node(struct ybuild *b, const yaml_event_t *ev, int line, int column,
                   struct pg__ynode **node, const yaml_char_t **anchor) {
  struct pg__cctx *x = b->x;
  if (ev->type == YAML_ALIAS_EVENT) {
    for (int i = b->n_anchors - 1; i >= 0 && !*node; i--)
      if (strcmp(b->anchors[i].name, (const char *)ev->data.alias.anchor) == 0)
        *node = b->anchors[i].node;
    if (!*node) {
      pg__cfind(x, PG_SEV_ERROR, line, column, 8, "alias '*%s' names no earlier complete anchor",
                ev->data.alias.anchor);
      return PG_EPARSE;
    }
  } else {
    PG_RETURN_IF_ERROR(new_node(b, ev, line, column, node, anchor));
  }
  if (b->depth > 0) {
    if (node_add_kid(x, b->stack[b->depth - 1], *node) != PG_OK) return PG_ENOMEM;
  } else {
    x->root = *node;
  }
  if (ev->type != YAML_SEQUENCE_START_EVENT && ev->type != YAML_MAPPING_START_EVENT) return PG_OK;
  if (b->depth == PG__YAML_MAX_DEPTH) {
    pg__cfind(x, PG_SEV_ERROR, line, column, 8, "the document is nested more than %d levels deep",
              PG__YAML_MAX_DEPTH);
    return PG_EPARSE;
  }
  b->stack_anchor[b->depth] = NULL;
  if (*anchor && !(b->stack_anchor[b->depth] = strdup((const char *)*anchor))) return PG_ENOMEM;
  b->stack[b->depth++] = *node;
  *anchor = NULL; /* registered when the container closes: no self-reference */
  return PG_OK;
}

/* The end of a container: a mapping finished (comment keys, duplicates, merge keys),
 * then its expanded weight (alias bombs). */
static int on_close(struct ybuild *b, struct pg__ynode **out, const yaml_char_t **anchor) {
  struct pg__ynode *node = *out = b->stack[--b->depth];
  *anchor = (const yaml_char_t *)b->stack_anchor[b->depth];
  if (node->kind == PG__Y_MAP) PG_RETURN_IF_ERROR(pg__ymap_finish(b->x, node));
  uint64_t w = 1;
  for (int i = 0; i < node->n_kids; i++) {
    w += node->kids[i]->weight;
    if (w > PG__YAML_MAX_EXPANDED) break;
  }
  node->weight = w;
  if (w > PG__YAML_MAX_EXPANDED) {
    pg__cfind(b->x, PG_SEV_ERROR, node->line, node->column, 8,
              "aliases expand the document to more than %d nodes", PG__YAML_MAX_EXPANDED);
    return PG_EPARSE;
  }
  return PG_OK;
}

/* A completed node with an anchor becomes referable. */
static int add_anchor(struct ybuild *b, int line, int column, const yaml_char_t *anchor,
                      struct pg__ynode *node) {
  if (b->n_anchors == MAX_ANCHORS) {
    pg__cfind(b->x, PG_SEV_ERROR, line, column, 8, "more than %d YAML anchors", MAX_ANCHORS);
    return PG_EPARSE;
  }
  if (b->n_anchors == b->cap_anchors) {
    int cap = b->cap_anchors ? b->cap_anchors * 2 : 8;
    struct anchor *a = realloc(b->anchors, (size_t)cap * sizeof *a);
    if (!a) return PG_ENOMEM;
    b->anchors = a;
    b->cap_anchors = cap;
  }
  char *name = strdup((const char *)anchor);
  if (!name) return PG_ENOMEM;
  b->anchors[b->n_anchors++] = (struct anchor){name, node};
  return PG_OK;
}

/* One parser event into the tree; *done at the end of the stream. */
static int on_event(struct ybuild *b, const yaml_event_t *ev, int *done) {
  int line = (int)ev->start_mark.line + 1, column = (int)ev->start_mark.column + 1;
  struct pg__ynode *node = NULL;
  const yaml_char_t *anchor = NULL;
  int rc = PG_OK;
  switch (ev->type) {
    case YAML_STREAM_END_EVENT: *done = 1; break;
    case YAML_DOCUMENT_START_EVENT:
      if (++b->docs > 1) {
        pg__cfind(b->x, PG_SEV_ERROR, line, column, 8,
                  "a second YAML document; the contract must be a single document");
        rc = PG_EPARSE;
      }
      break;
    case YAML_SCALAR_EVENT:
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
    case YAML_ALIAS_EVENT: rc = on_node(b, ev, line, column, &node, &anchor); break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: rc = on_close(b, &node, &anchor); break;
    default: break;
  }
  if (rc == PG_OK && anchor && node) rc = add_anchor(b, line, column, anchor, node);
  if (ev->type == YAML_SEQUENCE_END_EVENT || ev->type == YAML_MAPPING_END_EVENT)
    free(b->stack_anchor[b->depth]);
  return rc;
}

int pg__yaml_build(struct pg__cctx *x, const char *data, size_t size) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    x->oom = 1;
    return PG_ENOMEM;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)data, size);
  struct ybuild bs, *b = &bs;
  memset(b, 0, sizeof *b);
  b->x = x;
  int done = 0, rc = PG_OK;
  while (!done && rc == PG_OK) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      syntax_error(x, &parser, data, size);
      rc = x->oom ? PG_ENOMEM : PG_EPARSE;
      break;
    }
    rc = on_event(b, &ev, &done);
    yaml_event_delete(&ev);
  }
  for (int i = 0; i < b->depth; i++) free(b->stack_anchor[i]);
  for (int i = 0; i < b->n_anchors; i++) free(b->anchors[i].name);
  free(b->anchors);
  yaml_parser_delete(&parser);
  if (rc == PG_ENOMEM) x->oom = 1;
  if (rc != PG_OK) x->root = NULL;
  return rc;
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
