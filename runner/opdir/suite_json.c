/* phasegate runner — the suite loader: adversarial_suite.json (docs/design.md §4).
 *
 * One pass over the text: json_pos.c checks the syntax strictly, records the line:col
 * of every key and value, finds duplicate keys (which cJSON keeps silently) and
 * decodes strings; numbers convert exactly as cJSON converts them. (An earlier
 * version also parsed with cJSON and walked both trees; the second parse and its
 * 400 000 small allocations for a big suite cost more than everything else.) The
 * loader walks that tree, fills struct pg_suite, and validates every case, against
 * the contract when one is given (one case at a time: suite_case.c). Every finding goes
 * to the diagnostics list, sorted by position, so one run shows them all. Not for:
 * materialising inputs (run/inputs.c), listing tests (CLI).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "opdir/suite_internal.h"
#include "tensors/tensors.h"

/* Reports case ids used twice, at the later occurrence, naming the first. A hash
 * set finds them in one pass (a sort when the ids collide badly); the (rare)
 * duplicates are then reported in the order of a sort by (id, index), the order this
 * check has always used (it matters once the findings cap cuts the list). */
struct id_ref {
  const char *id;
  int index; /* the later use */
  int first; /* the first use */
};

static int id_ref_cmp(const void *a, const void *b) {
  const struct id_ref *p = a, *q = b;
  int c = strcmp(p->id, q->id);
  return c ? c : (p->index > q->index) - (p->index < q->index);
}

static uint64_t id_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

struct dup_list {
  struct id_ref *items;
  int n, cap;
};

static int dup_push(struct dup_list *d, struct id_ref r) {
  if (d->n == d->cap) {
    int c = d->cap ? d->cap * 2 : 16;
    struct id_ref *p = realloc(d->items, (size_t)c * sizeof *p);
    if (!p) return PG_ENOMEM;
    d->items = p;
    d->cap = c;
  }
  d->items[d->n++] = r;
  return PG_OK;
}

/* Hash-set pass. Returns PG_OK, PG_ENOMEM, or PG_ELIMIT when the probes run long
 * (ids crafted to collide): the caller then sorts instead, so the check stays
 * O(n log n) whatever the ids. */
static int dups_hashed(const struct pg_suite *s, struct dup_list *d) {
  size_t cap = 16;
  while (cap < (size_t)s->n_cases * 2) cap *= 2;
  int *slots = malloc(cap * sizeof *slots);
  if (!slots) return PG_ENOMEM;
  memset(slots, 0xff, cap * sizeof *slots); /* -1: empty */
  size_t probes = 0, max_probes = 16 * (size_t)s->n_cases + 1024;
  int rc = PG_OK;
  for (int i = 0; i < s->n_cases && rc == PG_OK; i++) {
    const char *id = s->cases[i].id;
    if (!id) continue;
    size_t h = (size_t)id_hash(id) & (cap - 1);
    while (slots[h] >= 0 && strcmp(s->cases[slots[h]].id, id) != 0) {
      h = (h + 1) & (cap - 1);
      if (++probes > max_probes) rc = PG_ELIMIT;
      if (rc != PG_OK) break;
    }
    if (rc != PG_OK) break;
    if (slots[h] < 0) slots[h] = i;
    else rc = dup_push(d, (struct id_ref){id, i, slots[h]});
  }
  free(slots);
  return rc;
}

/* Sorting pass: ids sorted by (id, index); each later use of an id is a duplicate
 * of the group's first. */
static int dups_sorted(const struct pg_suite *s, struct dup_list *d) {
  struct id_ref *refs = malloc((size_t)(s->n_cases ? s->n_cases : 1) * sizeof *refs);
  if (!refs) return PG_ENOMEM;
  int k = 0;
  for (int i = 0; i < s->n_cases; i++)
    if (s->cases[i].id) refs[k++] = (struct id_ref){s->cases[i].id, i, i};
  qsort(refs, (size_t)k, sizeof *refs, id_ref_cmp);
  int rc = PG_OK;
  for (int a = 0, b; a < k && rc == PG_OK; a = b)
    for (b = a + 1; b < k && rc == PG_OK && strcmp(refs[a].id, refs[b].id) == 0; b++)
      rc = dup_push(d, (struct id_ref){refs[b].id, refs[b].index, refs[a].index});
  free(refs);
  return rc;
}

static void check_unique_ids(struct pg__sload *x, struct pg_suite *s) {
  struct dup_list d = {NULL, 0, 0};
  int rc = dups_hashed(s, &d);
  if (rc == PG_ELIMIT) {
    d.n = 0;
    rc = dups_sorted(s, &d);
  }
  if (rc != PG_OK) {
    x->oom = 1;
    free(d.items);
    return;
  }
  if (d.n > 1) qsort(d.items, (size_t)d.n, sizeof *d.items, id_ref_cmp);
  for (int k = 0; k < d.n; k++) {
    const struct pg_case *first = &s->cases[d.items[k].first];
    const struct pg_case *dup = &s->cases[d.items[k].index];
    const struct pg_mark *at = &x->id_marks[d.items[k].index];
    pg__sfind(x, PG_SEV_ERROR, at->line, at->column, "unique-id",
              "cases[%d].id: duplicate case id \"%s\" (first used by cases[%d] at line %d)",
              dup->index, dup->id, first->index, x->id_marks[d.items[k].first].line);
  }
  free(d.items);
}

/* ---------------------------------------------------------------- placeholders */

/* JSON path of node n ("cases[0].level") into buf. */
static void node_path(const struct pg__sload *x, int n, char *buf, size_t size) {
  const struct pg_json_node *nd = node_at(x, n);
  if (nd->parent < 0) {
    snprintf(buf, size, "the suite");
    return;
  }
  char up[256] = "";
  if (node_at(x, nd->parent)->parent >= 0) node_path(x, nd->parent, up, sizeof up);
  if (is_obj(x, nd->parent)) {
    snprintf(buf, size, "%s%s%.64s", up, up[0] ? "." : "", kstr(x, n));
  } else {
    int i = 0;
    for (int k = node_at(x, nd->parent)->first_child; k >= 0 && k != n; k = node_at(x, k)->next_sibling)
      i++;
    snprintf(buf, size, "%s[%d]", up[0] ? up : "the suite", i);
  }
}

static void placeholder_at(struct pg__sload *x, int line, int col, int len, const char *what,
                           const char *text) {
  if (x->n_spans == x->cap_spans) {
    int cap = x->cap_spans ? x->cap_spans * 2 : 8;
    if (cap > 2 * SUITE_MAX_FINDINGS) return; /* findings are capped there anyway */
    struct pg__sspan *sp = realloc(x->spans, (size_t)cap * sizeof *sp);
    if (!sp) {
      x->oom = 1;
      return;
    }
    x->spans = sp;
    x->cap_spans = cap;
  }
  pg__sfind(x, PG_SEV_ERROR, line, col, "placeholder", "%s is still the placeholder %.40s", what,
            text);
  x->spans[x->n_spans++] = (struct pg__sspan){line, col, col + len};
}

/* Every string value or key left as TODO, with its JSON path. */
static void find_placeholders(struct pg__sload *x) {
  for (int n = 1; n < x->pos.n; n++) {
    const struct pg_json_node *nd = node_at(x, n);
    char path[320];
    if (nd->key_line && pg_spec_placeholder(kstr(x, n), nd->key_len)) {
      node_path(x, nd->parent, path, sizeof path);
      char what[400];
      snprintf(what, sizeof what, "a key in %s", path);
      placeholder_at(x, nd->key_line, nd->key_col, (int)nd->key_len + 1, what, kstr(x, n));
    } else if (is_str(x, n) && pg_spec_placeholder(sval(x, n), strlen(sval(x, n)))) {
      node_path(x, n, path, sizeof path);
      placeholder_at(x, nd->line, nd->col, (int)nd->len, path, sval(x, n));
    }
  }
}

/* ---------------------------------------------------------------- top level */

static void load_top(struct pg__sload *x, struct pg_suite *s) {
  const struct pg_json_node *rn = node_at(x, 0);
  if (!is_obj(x, 0)) {
    pg__sfind(x, PG_SEV_ERROR, rn->line, rn->col, "type",
              "expected a JSON object with a \"cases\" array, found %s", pg__skind(x, 0));
    return;
  }
  int have_cases = 0;
  int cases_node = -1;
  for (int n = rn->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, n);
    if (k[0] == '_') continue; /* a comment */
    if (KEY_IS("op") || KEY_IS("op_name")) {
      if (!is_str(x, n) || !sval(x, n)[0]) {
        pg__stype_error(x, n, "a non-empty string", "%s", k);
        continue;
      }
      if (s->op) {
        pg__sfind(x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                  "both \"op\" and \"op_name\" given; use one");
        continue;
      }
      s->op = pg_strdup(sval(x, n));
      if (!s->op) x->oom = 1;
      if (x->contract && x->contract->op && strcmp(x->contract->op, sval(x, n)) != 0)
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "op",
                  "%s \"%s\" does not match the contract's op \"%s\"", k, sval(x, n),
                  x->contract->op);
    } else if (KEY_IS("total_modules")) {
      int neg;
      uint64_t m;
      if (!is_num(x, n) || !pg__sexact_int(x, n, &neg, &m) || neg || m < 1 ||
          m > 1000) {
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
                  "total_modules: expected an integer 1..1000, found %.*s",
                  (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
        continue;
      }
      s->total_modules = (int)m;
      if (x->contract && x->contract->n_modules != (int)m)
        pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "total-modules",
                  "total_modules is %d but the contract has %d module%s", (int)m,
                  x->contract->n_modules, x->contract->n_modules == 1 ? "" : "s");
    } else if (KEY_IS("cases") || KEY_IS("test_cases")) {
      if (have_cases) {
        pg__sfind(x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                  "both \"cases\" and \"test_cases\" given; use one");
        continue;
      }
      if (!(jtype(x, n) == PG_JSON_ARRAY)) {
        pg__stype_error(x, n, "an array of case objects", "%s", k);
        have_cases = 1; /* present, so no "missing" pg__sfind */
        continue;
      }
      have_cases = 1;
      cases_node = n;
    } else if (KEY_IS("modes")) {
      if (s->mode_policies) continue;
      pg__sload_mode_policies(x, n, "modes", &s->mode_policies, &s->n_mode_policies);
    } else if (!KEY_IS("schema_version") && !KEY_IS("description") &&
               !KEY_IS("version") && !KEY_IS("comment") &&
               !KEY_IS("notes")) {
      pg__sfind(x, PG_SEV_WARNING, nd->key_line, nd->key_col, "unknown-key",
                "unknown top-level key \"%s\" (ignored)", k);
    }
  }
  if (!have_cases) {
    pg__sfind(x, PG_SEV_ERROR, rn->line, rn->col, "required",
              "missing required key \"cases\" (or \"test_cases\")");
    return;
  }
  if (cases_node < 0) return;
  int n_cases = node_at(x, cases_node)->n_children;
  if (n_cases == 0) {
    pg__sfind(x, PG_SEV_WARNING, node_at(x, cases_node)->line, node_at(x, cases_node)->col,
              "empty", "the suite has no cases");
    return;
  }
  s->cases = calloc((size_t)n_cases, sizeof *s->cases);
  x->id_marks = calloc((size_t)n_cases, sizeof *x->id_marks);
  if (!s->cases || !x->id_marks) {
    x->oom = 1;
    return;
  }
  int index = 0;
  for (int n = node_at(x, cases_node)->first_child; n >= 0;
       n = node_at(x, n)->next_sibling, index++) {
    if (!is_obj(x, n)) {
      pg__stype_error(x, n, "a case object", "cases[%d]", index);
      continue;
    }
    pg__sload_case(x, n, index, &s->cases[s->n_cases], &x->id_marks[s->n_cases]);
    s->n_cases++;
  }
  check_unique_ids(x, s);
}

/* ---------------------------------------------------------------- public API */

void pg_suite_init(struct pg_suite *s) { memset(s, 0, sizeof *s); }

static void case_reset(struct pg_case *cs) {
  free(cs->id);
  pg_bindings_reset(&cs->shape);
  for (int i = 0; i < cs->n_dtypes; i++) {
    free(cs->dtypes[i].name);
    free(cs->dtypes[i].value);
  }
  free(cs->dtypes);
  for (int i = 0; i < cs->n_fills; i++) {
    free(cs->fills[i].name);
    free(cs->fills[i].value);
  }
  free(cs->fills);
  free(cs->rule);
  pg_output_tolerances_free(cs->tolerances, cs->n_tolerances);
  free(cs->cancellation.target);
  free(cs->cancellation.expression);
  free(cs->json);
  pg_mode_policies_free(cs->mode_policies, cs->n_mode_policies);
  memset(cs, 0, sizeof *cs);
}

void pg_suite_reset(struct pg_suite *s) {
  if (!s) return;
  for (int i = 0; i < s->n_cases; i++) case_reset(&s->cases[i]);
  free(s->cases);
  free(s->path);
  free(s->op);
  pg_mode_policies_free(s->mode_policies, s->n_mode_policies);
  memset(s, 0, sizeof *s);
}

struct diag_ref {
  struct pg_diag d;
  int line, column; /* sort key: the position, or INT_MAX for the "too many" note */
  int order;
};

static int diag_ref_cmp(const void *a, const void *b) {
  const struct diag_ref *p = a, *q = b;
  if (p->line != q->line) return p->line < q->line ? -1 : 1;
  if (p->column != q->column) return p->column < q->column ? -1 : 1;
  return (p->order > q->order) - (p->order < q->order);
}

/* Sorts this load's findings by position (stable), so they read top to bottom; the
 * "too many findings" note stays last. */
static void sort_findings(struct pg__sload *x) {
  struct pg_diags *d = x->diags;
  int n = d->count - x->first_diag;
  if (n < 2) return;
  struct diag_ref *refs = malloc((size_t)n * sizeof *refs);
  if (!refs) return; /* unsorted is still correct */
  for (int i = 0; i < n; i++) {
    const struct pg_diag *g = &d->items[x->first_diag + i];
    int note = g->severity == PG_SEV_NOTE && !g->rule;
    refs[i] = (struct diag_ref){*g, note ? INT_MAX : g->line, note ? INT_MAX : g->column, i};
  }
  qsort(refs, (size_t)n, sizeof *refs, diag_ref_cmp);
  for (int i = 0; i < n; i++) d->items[x->first_diag + i] = refs[i].d;
  free(refs);
}

/* err <- the first error of this load, formatted as the console prints it. */
static void first_error(struct pg__sload *x, int rc, struct pg_error *err) {
  if (!err) return;
  for (int i = x->first_diag; i < x->diags->count; i++) {
    const struct pg_diag *g = &x->diags->items[i];
    if (g->severity != PG_SEV_ERROR) continue;
    pg_diag_format(g, err->message, sizeof err->message);
    err->code = rc;
    err->line = g->line;
    err->column = g->column;
    return;
  }
  pg_error_set(err, rc, "%s: %s", x->path, pg_strerror(rc));
}

int pg_suite_load_buffer(const char *path, const char *data, size_t size,
                         const struct pg_contract *contract, struct pg_suite *s,
                         struct pg_diags *diags, struct pg_error *err) {
  struct pg_diags local;
  pg_diags_init(&local);
  struct pg__sload x;
  memset(&x, 0, sizeof x);
  x.path = path ? path : "<suite>";
  x.data = data ? data : "";
  x.size = data ? size : 0;
  x.diags = diags ? diags : &local;
  x.first_diag = x.diags->count;
  x.contract = contract;
  pg_suite_init(s);
  s->path = pg_strdup(x.path);
  if (!s->path) {
    pg_diags_reset(&local);
    return pg_error_set(err, PG_ENOMEM, "%s: out of memory", x.path);
  }
  int rc = PG_OK;
  if (x.size > SUITE_MAX_BYTES) {
    pg__sfind(&x, PG_SEV_ERROR, 1, 1, "limit", "file is larger than %zu MiB (%zu bytes)",
              SUITE_MAX_BYTES >> 20, x.size);
    rc = PG_ELIMIT;
  } else {
    struct pg_json_limits lim = {SUITE_MAX_DEPTH, SUITE_MAX_VALUES};
    struct pg_json_fail fail;
    rc = pg_json_pos_scan(x.data, x.size, &lim, &x.pos, &fail);
    if (rc == PG_EPARSE || rc == PG_ELIMIT) {
      if (strncmp(fail.message, "empty input", 11) == 0)
        pg__sfind(&x, PG_SEV_ERROR, 1, 1, "placeholder",
                  "the suite is empty, an unfilled placeholder; expected a JSON object with a "
                  "\"cases\" array");
      else if (pg_spec_placeholder(x.data, x.size))
        pg__sfind(&x, PG_SEV_ERROR, 1, 1, "placeholder",
                  "the suite is only a placeholder (%s); expected a JSON object with a "
                  "\"cases\" array", memchr(x.data, '{', x.size) ? "{TODO}" : "TODO");
      else
        pg__sfind(&x, PG_SEV_ERROR, fail.line, fail.col,
                  rc == PG_ELIMIT || fail.is_limit ? "limit" : "syntax", "%s", fail.message);
    } else if (rc == PG_OK) {
      /* Duplicate keys: cJSON would silently keep both; the first one wins below. */
      for (int n = 0; n < x.pos.n && x.pos.n_dups; n++) {
        const struct pg_json_node *nd = &x.pos.nodes[n];
        if (nd->dup_of < 0 || pg_json_pos_key(&x.pos, n)[0] == '_') continue; /* comments */
        const struct pg_json_node *first = &x.pos.nodes[nd->dup_of];
        pg__sfind(&x, PG_SEV_ERROR, nd->key_line, nd->key_col, "duplicate-key",
                  "duplicate key \"%s\" (first at line %d, column %d)",
                  pg_json_pos_key(&x.pos, n), first->key_line, first->key_col);
      }
      find_placeholders(&x);
      load_top(&x, s);
      rc = x.n_errors ? PG_EVALIDATE : PG_OK;
    }
  }
  if (x.oom) rc = PG_ENOMEM;
  pg_json_pos_reset(&x.pos);
  free(x.id_marks);
  free(x.spans);
  sort_findings(&x);
  if (rc == PG_ENOMEM)
    pg_error_set(err, PG_ENOMEM, "%s: out of memory while loading the suite", x.path);
  else if (rc != PG_OK)
    first_error(&x, rc, err);
  pg_diags_reset(&local);
  return rc;
}

int pg_suite_load(const char *path, const struct pg_contract *contract, struct pg_suite *s,
                  struct pg_diags *diags, struct pg_error *err) {
  pg_suite_init(s);
  /* a regular file only: a FIFO would block (stat, not open, looks first) */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return pg_error_set(err, PG_EIO, "%s: not a regular file", path);
  char *buf;
  size_t size;
  int read_rc = pg_read_file(path, SUITE_MAX_BYTES, &buf, &size, err);
  if (read_rc == PG_ELIMIT) {
    if (diags)
      pg_diags_add(diags, PG_SEV_ERROR, path, 1, 1, "limit",
                   "file is larger than %zu MiB (%zu bytes)", SUITE_MAX_BYTES >> 20, size);
    return pg_error_set_at(err, PG_ELIMIT, path, 1, 1,
                           "file is larger than %zu MiB (%zu bytes) (limit)",
                           SUITE_MAX_BYTES >> 20, size);
  }
  if (read_rc != PG_OK) return read_rc;
  int rc = pg_suite_load_buffer(path, buf, size, contract, s, diags, err);
  free(buf);
  return rc;
}

