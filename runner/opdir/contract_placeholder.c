/* phasegate runner — unfilled placeholders in module_interfaces.yaml (docs/design.md §3): an
 * empty file, a file that is only `TODO` or `{TODO}`, and values (or keys) left as
 * TODO (`module_count: TODO`, `shape: TODO`, `dtype: TODO`, a name `TODO`) are errors
 * that say so, every one of them. The schema still walks the tree, but its findings
 * about a placeholder's own text ("unknown dtype 'TODO'") are dropped when the
 * findings are published: one clear finding per placeholder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdir/contract_internal.h"

static int is_placeholder(const struct pg__ynode *n) {
  return n && n->kind == PG__Y_SCALAR && pg_spec_placeholder(n->value, n->len);
}

/* Remembers where a placeholder's text is; 0 when it was already reported (a node
 * reached again through an alias). */
static int add_span(struct pg__cctx *x, const struct pg__ynode *n) {
  int end = n->column + (int)(n->len > 1000 ? 1000 : n->len) + 2 * n->quoted;
  for (int i = 0; i < x->n_spans; i++)
    if (x->spans[i].line == n->line && x->spans[i].column == n->column) return 0;
  if (x->n_spans == x->cap_spans) {
    int cap = x->cap_spans ? x->cap_spans * 2 : 8;
    if (cap > PG__CONTRACT_MAX_FINDINGS) return 0; /* findings are capped there anyway */
    struct pg__span *s = realloc(x->spans, (size_t)cap * sizeof *s);
    if (!s) {
      x->oom = 1;
      return 0;
    }
    x->spans = s;
    x->cap_spans = cap;
  }
  x->spans[x->n_spans++] = (struct pg__span){n->line, n->column, end};
  return 1;
}

/* The placeholder's text for messages ("TODO", "{TODO}"), trimmed and bounded. */
static void shown(const struct pg__ynode *n, char *buf, size_t size) {
  const char *v = n->value;
  size_t len = n->len;
  while (len && (*v == ' ' || *v == '\t')) v++, len--;
  while (len && (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\n')) len--;
  snprintf(buf, size, "%.*s", (int)(len > 40 ? 40 : len), v);
}

static void report(struct pg__cctx *x, const struct pg__ynode *n, const char *what) {
  if (!add_span(x, n)) return;
  char text[48];
  shown(n, text, sizeof text);
  pg__cfind(x, PG_SEV_ERROR, n->line, n->column, PG__RULE_PLACEHOLDER,
            "%s is still the placeholder %s", what, text);
}

/* Every placeholder under n; `key` names n for messages. */
static void walk(struct pg__cctx *x, const struct pg__ynode *n, const char *key, int depth) {
  char what[128];
  if (depth > PG__YAML_MAX_DEPTH || x->count >= PG__CONTRACT_MAX_FINDINGS) return;
  if (n->kind == PG__Y_SCALAR) {
    if (!is_placeholder(n)) return;
    snprintf(what, sizeof what, "'%.64s'", key);
    report(x, n, what);
  } else if (n->kind == PG__Y_SEQ) {
    snprintf(what, sizeof what, "an entry of '%.64s'", key);
    for (int i = 0; i < n->n_kids; i++) {
      if (is_placeholder(n->kids[i])) report(x, n->kids[i], what);
      else walk(x, n->kids[i], key, depth + 1);
    }
  } else {
    for (int i = 0; i + 1 < n->n_kids; i += 2) {
      const struct pg__ynode *k = n->kids[i];
      if (is_placeholder(k)) {
        snprintf(what, sizeof what, "a key in '%.64s'", key);
        report(x, k, what);
        continue;
      }
      walk(x, n->kids[i + 1], k->kind == PG__Y_SCALAR ? k->value : key, depth + 1);
    }
  }
}

int pg__contract_placeholders(struct pg__cctx *x) {
  const struct pg__ynode *root = x->root;
  if (!root || pg__ynull(root)) {
    pg__cfind(x, PG_SEV_ERROR, 1, 1, PG__RULE_PLACEHOLDER,
              "the contract is empty, an unfilled placeholder; expected a mapping with 'op' and "
              "'modules'");
    return 1;
  }
  int whole = is_placeholder(root);
  if (root->kind == PG__Y_MAP) { /* {TODO}: only placeholder keys without values */
    whole = root->n_kids > 0;
    for (int i = 0; whole && i + 1 < root->n_kids; i += 2)
      whole = is_placeholder(root->kids[i]) && pg__ynull(root->kids[i + 1]);
  }
  if (whole) {
    char text[48] = "{TODO}";
    if (root->kind == PG__Y_SCALAR) shown(root, text, sizeof text);
    pg__cfind(x, PG_SEV_ERROR, root->line, root->column, PG__RULE_PLACEHOLDER,
              "the contract is only the placeholder %s; expected a mapping with 'op' and "
              "'modules'", text);
    return 1;
  }
  walk(x, root, "the contract", 0);
  return 0;
}

int pg__in_placeholder(const struct pg__cctx *x, int line, int column) {
  for (int i = 0; i < x->n_spans; i++)
    if (x->spans[i].line == line && column >= x->spans[i].column && column <= x->spans[i].end)
      return 1;
  return 0;
}
