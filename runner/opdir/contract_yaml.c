/* phasegate runner — the contract loader's YAML layer (module_interfaces.yaml,
 * docs/design.md §3): runs libyaml's event parser and builds a small node tree that
 * keeps every node's 1-based line:column, rejecting what would make a hostile file
 * hang or blow memory: nesting deeper than 64, more than 1M nodes, alias expansion
 * beyond 4M nodes, several documents. Duplicate mapping keys are found here too.
 * contract_load.c calls it, then contract_schema.c walks the tree. Not for: the schema
 * rules themselves (contract_schema.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "opdir/contract_internal.h"
#include "opdir/opdir.h"

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
