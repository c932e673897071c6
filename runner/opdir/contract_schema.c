/* phasegate runner — the contract schema: walks the YAML node tree of
 * module_interfaces.yaml into struct pg_contract and applies docs/design.md §3 rules 1–8,
 * reporting every finding with its line:column (never only the first).
 *
 * Accepts the real-world pypto schema unchanged: `op_name` for `op`, string shapes
 * "[B, T]", `phase_<j>` as the older spelling of `module_<j>`, and pypto keys phasegate
 * does not use (section, golden_steps, …) without a word; other unknown keys are
 * warnings. Here: the sections, module goldens, the cross-module rules and the top
 * level; reading nodes as values is contract_nodes.c's, tensor declarations
 * contract_decls.c's. Not for: YAML syntax (contract_yaml.c) or golden-step semantics
 * (the golden plan in goldens/).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "phasegate/goldens.h"
#include "opdir/contract_internal.h"

/* ------------------------------------------------------------------ goldens */

static void parse_golden(struct pg__sctx *s, struct pg_golden_spec *g, const struct pg__ynode *n,
                         const char *what) {
  g->mark = (struct pg_mark){n->line, n->column};
  if (pg__ynull(n)) return;
  if (n->kind == PG__Y_MAP) {
    static const char *const keys[] = {"plugin", NULL};
    pg__check_keys(s, n, keys, what);
    const struct pg__ynode *p = pg__ymap_get(n, "plugin");
    if (!p) {
      PG__ERR(n, 8, "%s is a mapping without 'plugin' (write {plugin: NAME} or a list of steps)",
              what);
      return;
    }
    char w[512];
    snprintf(w, sizeof w, "the plugin of %s", what);
    if (!pg__get_str(s, p, w, &g->plugin)) return;
    g->kind = PG_GOLDEN_PLUGIN;
    if (!pg__valid_identifier(g->plugin))
      PG__ERR(p, 8, "golden plugin '%.64s' is not a C symbol name", g->plugin);
    return;
  }
  if (n->kind == PG__Y_SCALAR) { /* one step written inline */
    g->kind = PG_GOLDEN_STEPS;
    g->steps = pg__scalloc(s, 1, sizeof *g->steps);
    if (!g->steps) return;
    g->n_steps = 1;
    g->steps[0].text = pg__sdup(s, n->value);
    g->steps[0].mark = (struct pg_mark){n->line, pg__ytext_column(n)};
    return;
  }
  int len = pg__list_len(s, n, what);
  if (n->n_kids == 0) {
    PG__WARN(n, "%s is an empty list of steps", what);
    return;
  }
  g->kind = PG_GOLDEN_STEPS;
  g->steps = pg__scalloc(s, (size_t)len, sizeof *g->steps);
  if (!g->steps) return;
  int rejoined = 0;
  for (int i = 0; i < len; i++) {
    const struct pg__ynode *k = n->kids[i];
    if (k->kind != PG__Y_SCALAR || pg__ynull(k)) {
      PG__ERR(k, 8, "step %d of %s must be a string like 'out = op(x)', found %s", i + 1, what,
              k->kind == PG__Y_SCALAR ? "nothing" : pg__ykind_name(k));
      continue;
    }
    struct pg_golden_step *st = &g->steps[g->n_steps++];
    st->mark = (struct pg_mark){k->line, pg__ytext_column(k)};
    /* A flow list [y = add(a, b)] reaches us split at the comma: join the pieces back
     * while parentheses are open, as for fills. */
    int j = i, bal = pg__paren_balance(k->value);
    size_t size = strlen(k->value) + 1;
    while (n->flow && bal > 0 && j + 1 < len && n->kids[j + 1]->kind == PG__Y_SCALAR &&
           !pg__ynull(n->kids[j + 1])) {
      j++;
      size += strlen(n->kids[j]->value) + 2;
      bal += pg__paren_balance(n->kids[j]->value);
    }
    st->text = malloc(size);
    if (!st->text) {
      s->x->oom = 1;
      return;
    }
    strcpy(st->text, k->value);
    for (int m = i + 1; m <= j; m++) {
      strcat(st->text, ", ");
      strcat(st->text, n->kids[m]->value);
    }
    if (j > i) rejoined = 1;
    i = j;
  }
  if (rejoined)
    PG__WARN(n, "%s is a flow list [...], which YAML splits at every comma (rejoined here); write "
            "one '- step' per line", what);
}

/* ------------------------------------------------------------------ sections */

static void parse_dims(struct pg__sctx *s, const struct pg__ynode *n) {
  s->has_dims = 1;
  if (pg__ynull(n)) return;
  if (!pg__want(s, n, PG__Y_MAP, "'dims'")) return;
  int count = n->n_kids / 2;
  struct pg_bindings *b = &s->c->dims;
  b->items = pg__scalloc(s, (size_t)count, sizeof *b->items);
  if (!b->items) return;
  size_t used = 0;
  for (int i = 0; i < count; i++) {
    const struct pg__ynode *k = n->kids[2 * i], *v = n->kids[2 * i + 1];
    if (k->kind != PG__Y_SCALAR) {
      PG__ERR(k, 8, "keys of 'dims' must be dim names, found %s", pg__ykind_name(k));
      continue;
    }
    if (!pg__valid_identifier(k->value) || k->len >= PG_NAME_MAX) {
      PG__ERR(k, 5, "dim name '%.64s' is not an identifier (letters, digits, '_')", k->value);
      continue;
    }
    int64_t val;
    char w[128];
    snprintf(w, sizeof w, "dim '%s'", k->value);
    if (!pg__dim_value(s, w, v, &val)) continue;
    if (pg_bindings_get(b, k->value, NULL)) continue; /* duplicate key, reported by the parser */
    char *name = pg__sdup(s, k->value);
    if (!name) return;
    b->items[b->count++] = (struct pg_dim_value){name, val, {k->line, k->column}};
    int w2 = snprintf(s->dims_list + used, sizeof s->dims_list - used, "%s%s", used ? ", " : "",
                      name);
    if (w2 > 0 && (size_t)w2 < sizeof s->dims_list - used) used += (size_t)w2;
  }
}

static void parse_tolerance(struct pg__sctx *s, const struct pg__ynode *n, const char *what,
                            double *atol, double *rtol, int *has) {
  static const char *const keys[] = {"atol", "rtol", NULL};
  if (!pg__want(s, n, PG__Y_MAP, what)) return;
  pg__check_keys(s, n, keys, what);
  const struct pg__ynode *a = pg__ymap_get(n, "atol"), *r = pg__ymap_get(n, "rtol");
  int ok = 1;
  char w[512];
  snprintf(w, sizeof w, "atol in %s", what);
  if (a && pg__get_num(s, a, w, atol) && *atol < 0) PG__ERR(a, 8, "atol in %s is negative", what);
  snprintf(w, sizeof w, "rtol in %s", what);
  if (r && pg__get_num(s, r, w, rtol) && *rtol < 0) PG__ERR(r, 8, "rtol in %s is negative", what);
  if (!a && !r) {
    PG__ERR(n, 8, "%s needs 'atol' and/or 'rtol'", what);
    ok = 0;
  }
  *has = ok;
}

/* The Pro workflow's `golden_stage_fn: <op>_golden_stage<suffix>` (docs/design.md §5): kept
 * for opdir/golden_files.c, which looks for the file of that name. */
static void parse_stage_fn(struct pg__sctx *s, const struct pg__ynode *t, int pos,
                           const char *what) {
  struct pg_contract *c = s->c;
  if (!c->py_goldens || pos + 1 >= c->n_py_goldens) return;
  int ok = t->kind == PG__Y_SCALAR && t->len > 0 &&
           (isalpha((unsigned char)t->value[0]) || t->value[0] == '_');
  for (size_t i = 0; ok && i < t->len; i++)
    ok = isalnum((unsigned char)t->value[i]) || t->value[i] == '_';
  if (!ok) {
    PG__WARN(t, "golden_stage_fn of %s is not a Python function name; ignored", what);
    return;
  }
  struct pg_py_golden *g = &c->py_goldens[pos + 1];
  g->stage_fn = pg__sdup(s, t->value);
  g->stage_fn_mark = (struct pg_mark){t->line, pg__ytext_column(t)};
}

static void parse_module(struct pg__sctx *s, struct pg_module *m, const struct pg__ynode *n,
                         int pos) {
  static const char *const keys[] = {"id", "name", "description", "inputs", "outputs", "golden",
                                     "inspect", NULL};
  char what[200];
  snprintf(what, sizeof what, "module #%d", pos + 1);
  m->mark = (struct pg_mark){n->line, n->column};
  s->id_marks[pos] = m->mark;
  if (!pg__want(s, n, PG__Y_MAP, "each entry of 'modules'")) return;
  pg__check_keys(s, n, keys, what);
  const struct pg__ynode *t = pg__ymap_get(n, "id");
  if (!t) {
    PG__ERR(n, 8, "%s is missing required key 'id'", what);
  } else {
    int64_t id;
    s->id_marks[pos] = (struct pg_mark){t->line, t->column};
    if (pg__get_int(s, t, "module id", &id)) {
      if (id < 1 || id > PG__CONTRACT_MAX_LIST)
        PG__ERR(t, 7, "module id %" PRId64 " is out of range (ids are 1..N)", id);
      else
        m->id = (int)id;
    }
  }
  if (m->id) snprintf(what, sizeof what, "module %d", m->id);
  if (pg__ymap_get(n, "name")) {
    pg__get_name(s, n, what, &m->name);
  } else { /* real files leave it out: named after its position, as test names need one */
    char name[32];
    snprintf(name, sizeof name, "module%d", m->id ? m->id : pos + 1);
    m->name = pg__sdup(s, name);
    PG__WARN(n, "%s has no 'name'; it is named '%s'", what, name);
  }
  if ((t = pg__ymap_get(n, "description")) && t->kind == PG__Y_SCALAR && !pg__ynull(t))
    m->description = pg__sdup(s, t->value);

  char list_what[240], suffix[220];
  snprintf(suffix, sizeof suffix, " of %s", what);
  if ((t = pg__ymap_get(n, "inputs")) && !pg__ynull(t)) {
    snprintf(list_what, sizeof list_what, "'inputs' of %s", what);
    pg__parse_decls(s, t, PG__D_INPUT, list_what, "input", suffix, &m->inputs, &m->n_inputs);
  }
  t = pg__ymap_get(n, "outputs");
  if (!t) {
    PG__ERR(n, 8, "%s is missing required key 'outputs'", what);
  } else if (pg__ynull(t) || (t->kind == PG__Y_SEQ && t->n_kids == 0)) {
    PG__ERR(t, 8, "%s declares no outputs; every module needs at least one", what);
  } else {
    snprintf(list_what, sizeof list_what, "'outputs' of %s", what);
    pg__parse_decls(s, t, PG__D_OUTPUT, list_what, "output", suffix, &m->outputs, &m->n_outputs);
  }
  if ((t = pg__ymap_get(n, "inspect")) && !pg__ynull(t)) {
    snprintf(list_what, sizeof list_what, "'inspect' of %s", what);
    pg__parse_decls(s, t, PG__D_OUTPUT, list_what, "probe", suffix, &m->probes, &m->n_probes);
  }
  if ((t = pg__ymap_get(n, "golden"))) {
    char w[512];
    snprintf(w, sizeof w, "the golden of %s", what);
    parse_golden(s, &m->golden, t, w);
  }
  if ((t = pg__ymap_get(n, "golden_stage_fn")) && !pg__ynull(t)) parse_stage_fn(s, t, pos, what);
}

/* ------------------------------------------------------------------ cross rules */

static const struct pg_tensor_decl *find_decl(const struct pg_tensor_decl *d, int n,
                                              const char *name) {
  for (int i = 0; name && i < n; i++)
    if (d[i].name && strcmp(d[i].name, name) == 0) return &d[i];
  return NULL;
}

/* Rule 4: no two declarations in one list share a name. */
static void check_unique(struct pg__sctx *s, const struct pg_tensor_decl *d, int n,
                         const char *what,
                         const char *suffix) {
  for (int i = 1; i < n; i++) {
    const struct pg_tensor_decl *first = find_decl(d, i, d[i].name);
    if (first)
      PG__ERR_AT(d[i].mark.line, d[i].mark.column, 4,
                 "duplicate %s '%.64s'%s (first declared at line %d)", what, d[i].name, suffix,
                 first->mark.line);
  }
}

/* A dtype repeated on a consumer (module input, final output) should agree with the
 * producer's; the producer's wins, so a disagreement is worth a warning. */
static void check_same_dtype(struct pg__sctx *s, const struct pg_tensor_decl *use,
                             const struct pg_tensor_decl *def, const char *def_what) {
  if (use->dtype == PG_DTYPE_INVALID || def->dtype == PG_DTYPE_INVALID || use->dtype == def->dtype)
    return;
  pg__cfind(s->x, PG_SEV_WARNING, use->dtype_mark.line, use->dtype_mark.column, 0,
            "'%.64s' is declared %s here but %s in %s (line %d); %s is used",
            use->name, pg_dtype_name(use->dtype), pg_dtype_name(def->dtype), def_what,
            def->mark.line, pg_dtype_name(def->dtype));
}

static void check_wiring(struct pg__sctx *s) {
  struct pg_contract *c = s->c;
  for (int i = 0; i < c->n_modules; i++) {
    const struct pg_module *m = &c->modules[i];
    /* Rule 7: ids are exactly 1..N in order. */
    if (m->id && m->id != i + 1)
      PG__ERR_AT(s->id_marks[i].line, s->id_marks[i].column, 7,
                 "module ids must be 1..N in order: expected %d here, found %d", i + 1, m->id);
    char what[64];
    snprintf(what, sizeof what, " of module %d", m->id ? m->id : i + 1);
    check_unique(s, m->outputs, m->n_outputs, "output", what);
    int self = m->id ? m->id : i + 1;
    for (int j = 0; j < m->n_inputs; j++) {
      const struct pg_tensor_decl *in = &m->inputs[j];
      if (!in->name || !in->source) continue;
      const struct pg_mark *sm = &in->source_mark;
      const struct pg_tensor_decl *o;
      if (in->source_module == 0) {
        const struct pg_tensor_decl *p = find_decl(c->primary_inputs, c->n_primary, in->name);
        if (!p)
          PG__ERR_AT(in->mark.line, in->mark.column, 1,
                     "input '%.64s' of module %d has source: primary, but no primary input is named "
                     "'%.64s'", in->name, self, in->name);
        else
          check_same_dtype(s, in, p, "the primary input");
      } else if (in->source_module < 0) {
        PG__ERR_AT(sm->line, sm->column, 2,
                   "input '%.64s' of module %d has source '%.64s'; expected 'primary' or 'module_<j>'",
                   in->name, self, in->source);
      } else if (in->source_module >= self) {
        PG__ERR_AT(sm->line, sm->column, 2,
                   "input '%.64s' of module %d comes from module_%d, which does not run before it "
                   "(sources must be module_<j> with j < %d)", in->name, self, in->source_module, self);
      } else {
        const struct pg_module *src = pg_contract_module(c, in->source_module);
        if (!src)
          PG__ERR_AT(sm->line, sm->column, 2, "input '%.64s' of module %d: no module has id %d",
                     in->name, self, in->source_module);
        else if (!(o = find_decl(src->outputs, src->n_outputs, in->name)))
          PG__ERR_AT(sm->line, sm->column, 2,
                     "input '%.64s' of module %d: module_%d has no output named '%.64s'", in->name,
                     self, in->source_module, in->name);
        else
          check_same_dtype(s, in, o, "its source");
      }
    }
  }
  for (int i = 0; i < c->n_final; i++) {
    const struct pg_tensor_decl *f = &c->final_outputs[i];
    if (!f->name || !f->source) continue;
    const struct pg_mark *sm = &f->source_mark;
    const struct pg_tensor_decl *o;
    if (f->source_module <= 0) {
      PG__ERR_AT(sm->line, sm->column, 3,
                 "final output '%.64s' has source '%.64s'; expected 'module_<j>'",
                 f->name, f->source);
    } else if (f->source_module > c->n_modules) {
      PG__ERR_AT(sm->line, sm->column, 3,
                 "final output '%.64s' comes from module_%d, but the contract has %d module%s",
                 f->name, f->source_module, c->n_modules, c->n_modules == 1 ? "" : "s");
    } else {
      const struct pg_module *src = pg_contract_module(c, f->source_module);
      if (!src)
        PG__ERR_AT(sm->line, sm->column, 3, "final output '%.64s': no module has id %d", f->name,
                   f->source_module);
      else if (!(o = find_decl(src->outputs, src->n_outputs, f->name)))
        PG__ERR_AT(sm->line, sm->column, 3,
                   "final output '%.64s': module_%d has no output named '%.64s'",
                   f->name, f->source_module, f->name);
      else
        check_same_dtype(s, f, o, "its source");
    }
  }
  check_unique(s, c->primary_inputs, c->n_primary, "primary input", "");
  check_unique(s, c->final_outputs, c->n_final, "final output", "");
}

/* ------------------------------------------------------------------ top level */

/* schema_version and op (or op_name). */
static void parse_header(struct pg__sctx *s, const struct pg__ynode *root) {
  struct pg_contract *c = s->c;
  const struct pg__ynode *t;
  if ((t = pg__ymap_get(root, "schema_version"))) {
    int64_t v;
    if (pg__get_int(s, t, "schema_version", &v)) {
      c->schema_version = v > 1000 || v < 0 ? 0 : (int)v;
      if (v != 1) PG__WARN(t, "schema_version %" PRId64 " is not 1; reading it as version 1", v);
    }
  }
  const struct pg__ynode *op = pg__ymap_get(root, "op"), *op_name = pg__ymap_get(root, "op_name");
  if (!op && !op_name) {
    char dir_op[PG_NAME_MAX];
    if (pg__op_from_path(s->x->path, dir_op, sizeof dir_op)) {
      PG__WARN(root, "the contract has no 'op' (or 'op_name'); using '%s' from its directory "
               "custom/%s/", dir_op, dir_op);
      c->op = pg__sdup(s, dir_op);
      c->op_mark = (struct pg_mark){root->line, root->column};
      return;
    }
    PG__ERR(root, 8, "the contract is missing required key 'op' (or 'op_name')");
    return;
  }
  const struct pg__ynode *o = op ? op : op_name;
  if (!pg__get_str(s, o, "'op'", &c->op)) return;
  c->op_mark = (struct pg_mark){o->line, pg__ytext_column(o)};
  pg__check_name(s, o, "the op", c->op);
  if (op && op_name && op_name->kind == PG__Y_SCALAR && strcmp(op_name->value, c->op) != 0)
    PG__WARN(op_name, "op_name '%.64s' differs from op '%.64s'; using op", op_name->value, c->op);
}

/* The modules list (required, not empty). */
static void parse_modules(struct pg__sctx *s, const struct pg__ynode *root) {
  struct pg_contract *c = s->c;
  const struct pg__ynode *t = pg__ymap_get(root, "modules");
  if (!t) {
    PG__ERR(root, 8, "the contract is missing required key 'modules'");
  } else if (pg__ynull(t) || (t->kind == PG__Y_SEQ && t->n_kids == 0)) {
    PG__ERR(t, 8, "'modules' is empty; a contract needs at least one module");
  } else {
    int len = pg__list_len(s, t, "'modules'");
    c->modules = pg__scalloc(s, (size_t)len, sizeof *c->modules);
    c->py_goldens = pg__scalloc(s, (size_t)len + 1, sizeof *c->py_goldens);
    if (c->py_goldens) c->n_py_goldens = len + 1;
    s->id_marks = pg__scalloc(s, (size_t)len, sizeof *s->id_marks);
    if (c->modules && s->id_marks) {
      c->n_modules = len;
      for (int i = 0; i < len; i++) parse_module(s, &c->modules[i], t->kids[i], i);
    }
  }
}

void pg__contract_from_tree(struct pg__cctx *x, struct pg_contract *c) {
  static const char *const keys[] = {"schema_version", "op", "op_name", "dims", "primary_inputs",
                                     "modules", "final_outputs", "golden", "tolerance",
                                     "composition_verification", "modes", NULL};
  struct pg__sctx sc = {.x = x, .c = c};
  struct pg__sctx *s = &sc;
  const struct pg__ynode *root = x->root, *t;
  if (pg__contract_placeholders(x)) return; /* empty, TODO, {TODO}: nothing to read */
  if (root->kind != PG__Y_MAP) {
    PG__ERR(root, 8, "the contract must be a mapping with 'op' and 'modules', found %s",
            pg__ykind_name(root));
    return;
  }
  pg__check_keys(s, root, keys, "the contract");
  parse_header(s, root);
  if ((t = pg__ymap_get(root, "dims"))) parse_dims(s, t);
  if ((t = pg__ymap_get(root, "primary_inputs")) && !pg__ynull(t))
    pg__parse_decls(s, t, PG__D_PRIMARY, "'primary_inputs'", "primary input", "",
                    &c->primary_inputs, &c->n_primary);
  parse_modules(s, root);
  if ((t = pg__ymap_get(root, "final_outputs")) && !pg__ynull(t))
    pg__parse_decls(s, t, PG__D_FINAL, "'final_outputs'", "final output", "", &c->final_outputs,
                    &c->n_final);
  if ((t = pg__ymap_get(root, "golden"))) parse_golden(s, &c->op_golden, t, "the op-level golden");
  if ((t = pg__ymap_get(root, "tolerance")))
    parse_tolerance(s, t, "'tolerance'", &c->atol, &c->rtol, &c->has_tolerance);
  if ((t = pg__ymap_get(root, "composition_verification"))) pg__parse_composition(s, t);
  if ((t = pg__ymap_get(root, "modes"))) pg__parse_mode_policies(s, t);
  if ((t = pg__ymap_get(root, "module_count"))) {
    int64_t v;
    if (pg__get_int(s, t, "module_count", &v) && c->modules && v != c->n_modules)
      PG__ERR(t, 7, "module_count is %" PRId64 " but %d module%s declared", v, c->n_modules,
              c->n_modules == 1 ? " is" : "s are");
  }
  if (!x->oom) check_wiring(s);

  for (int i = 0; i < s->n_noted; i++) free(s->noted[i]);
  free(s->noted);
  free(s->id_marks);
}
