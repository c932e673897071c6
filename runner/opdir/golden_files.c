/* phasegate runner — Python goldens of an op directory (docs/design.md §3 "Real files load
 * unchanged", §5 "Python goldens"): the files the pypto workflows write, found next to
 * the contract, and which golden each phase uses.
 *
 *   verifier workflow  modules/<op>_module<suffix>_golden.py  exporting
 *                      <op>_module<suffix>_golden; op level <op>_golden.py / <op>_golden
 *   Pro workflow       module k's `golden_stage_fn: <op>_golden_stage<suffix>` naming
 *                      modules/<op>_golden_stage<suffix>.py; op level
 *                      <op>_golden_cpu.py / <op>_golden_cpu
 *
 * Each is a self-contained cumulative golden (primary inputs in, the phase's boundary
 * outputs out), so a phase that has one uses it directly, without composition. Files
 * are looked for in <op dir>/modules, <contract dir>/modules, next to the contract and
 * in the op directory (the directory holding eval/ when the contract is in eval/).
 * Only paths are recorded here: the Python runs in the worker (run/py_golden.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/opdir.h"

#define PG__PY_MAX_DIRS 4

/* The directories to look in, most specific first, without repeats. */
struct search {
  char *dirs[PG__PY_MAX_DIRS];
  int n;
};

static int search_add(struct search *s, char *dir) {
  if (!dir) return PG_ENOMEM;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->dirs[i], dir) == 0) {
      free(dir);
      return PG_OK;
    }
  if (s->n < PG__PY_MAX_DIRS) s->dirs[s->n++] = dir;
  else free(dir);
  return PG_OK;
}

static void search_reset(struct search *s) {
  for (int i = 0; i < s->n; i++) free(s->dirs[i]);
  s->n = 0;
}

/* The first <dir>/<name>.py that is a file, as a malloc'ed path; NULL when none (or out
 * of memory: *oom set). */
static char *find_file(const struct search *s, const char *name, int *oom) {
  for (int i = 0; i < s->n; i++) {
    char *p = pg_path_fmt("%s/%s.py", s->dirs[i], name);
    if (!p) {
      *oom = 1;
      return NULL;
    }
    if (pg_is_file(p)) return p;
    free(p);
  }
  return NULL;
}

/* Fills g from the first of names[] that has a file (function = that name); when none
 * has one, function = names[0] and file = NULL. expected = where names[0] was looked for
 * first, relative to the op directory. */
static int resolve(struct pg_py_golden *g, const struct search *s, const char *const *names,
                   int n_names, const char *expected_dir) {
  int oom = 0;
  for (int i = 0; i < n_names && !g->file && !oom; i++) {
    if (!names[i]) continue;
    g->file = find_file(s, names[i], &oom);
    if (g->file && !(g->function = pg_strdup(names[i]))) oom = 1;
  }
  if (!g->function && names[0] && !(g->function = pg_strdup(names[0]))) oom = 1;
  if (names[0] && !(g->expected = pg_path_fmt("%s%s.py", expected_dir, names[0]))) oom = 1;
  return oom ? PG_ENOMEM : PG_OK;
}

/* The contract's directory and the op directory (its parent when it is eval/), both
 * absolute; NULL when the path cannot be resolved. */
static int op_dirs(const char *contract_path, char **contract_dir, char **op_dir) {
  *contract_dir = *op_dir = NULL;
  char *abs = realpath(contract_path, NULL);
  if (!abs) return PG_OK; /* not a file we can place: no neighbours */
  char *slash = strrchr(abs, '/');
  if (slash == abs) slash[1] = '\0';
  else *slash = '\0';
  *contract_dir = abs;
  const char *base = strrchr(abs, '/');
  base = base ? base + 1 : abs;
  if (strcmp(base, "eval") == 0 && base - abs > 1)
    *op_dir = pg_path_fmt("%.*s", (int)(base - abs - 1), abs);
  else
    *op_dir = pg_strdup(abs);
  return *op_dir ? PG_OK : PG_ENOMEM;
}

static int find_phase(struct pg_contract *c, const struct search *mods, int k,
                      struct pg_diags *diags) {
  struct pg_py_golden *g = &c->py_goldens[k];
  char suffix[64], verifier[256], pro[256];
  pg_phase_suffix(k, suffix, sizeof suffix);
  snprintf(verifier, sizeof verifier, "%s_module%s_golden", c->op, suffix);
  snprintf(pro, sizeof pro, "%s_golden_stage%s", c->op, suffix);
  const char *names[3] = {g->stage_fn, verifier, pro};
  int rc = g->stage_fn ? resolve(g, mods, names, 3, "modules/")
                       : resolve(g, mods, names + 1, 2, "modules/");
  if (rc != PG_OK || !g->stage_fn) return rc;
  int found_named = g->file && strcmp(g->function, g->stage_fn) == 0;
  if (!found_named &&
      pg_diags_add(diags, PG_SEV_WARNING, c->path, g->stage_fn_mark.line, g->stage_fn_mark.column,
                   NULL, "golden_stage_fn '%.128s' of module %d: no file %s/modules/%.128s.py "
                   "(also looked next to the contract and in the op directory)%s%s",
                   g->stage_fn, k, c->op_dir, g->stage_fn, g->file ? "; using " : "",
                   g->file ? g->file : "") != PG_OK)
    return PG_ENOMEM;
  if (!found_named && !g->file) { /* the message names the file golden_stage_fn asked for */
    free(g->function);
    free(g->expected);
    g->function = pg_strdup(g->stage_fn);
    g->expected = pg_path_fmt("modules/%s.py", g->stage_fn);
    if (!g->function || !g->expected) return PG_ENOMEM;
  }
  return PG_OK;
}

/* The op-level golden: <op>_golden.py / <op>_golden_cpu.py (the Pro workflow's first
 * when the contract uses golden_stage_fn). */
static int find_op_level(struct pg_contract *c, const struct search *ops) {
  int pro = 0;
  for (int k = 1; k < c->n_py_goldens; k++) pro |= c->py_goldens[k].stage_fn != NULL;
  char verifier[256], cpu[256];
  snprintf(verifier, sizeof verifier, "%s_golden", c->op);
  snprintf(cpu, sizeof cpu, "%s_golden_cpu", c->op);
  const char *names[2] = {pro ? cpu : verifier, pro ? verifier : cpu};
  return resolve(&c->py_goldens[0], ops, names, 2, "");
}

/* The seed's L0 path (docs/pypto.md "L0 ops"): an op of one module whose only golden is
 * the op-level <op>_golden.py. That golden is phase 1's cumulative golden too (the
 * boundary of M1 is the op's final output), so phase 1 runs against it instead of being
 * refused for want of modules/<op>_module1_golden.py. */
static int l0_golden(struct pg_contract *c) {
  struct pg_py_golden *g1 = &c->py_goldens[1], *op = &c->py_goldens[0];
  if (c->n_modules != 1 || g1->file || g1->stage_fn || !op->file ||
      c->modules[0].golden.kind != PG_GOLDEN_NONE)
    return PG_OK;
  free(g1->function);
  g1->file = pg_strdup(op->file);
  g1->function = pg_strdup(op->function);
  return g1->file && g1->function ? PG_OK : PG_ENOMEM;
}

/* The op's own files besides goldens: eval/test_inputs.py (next to the contract, else
 * <op dir>/eval/) and the integrated impl <op dir>/<op>_impl.py. */
static int find_op_files(struct pg_contract *c, const char *contract_dir) {
  const char *where[2][2] = {{contract_dir, ""}, {c->op_dir, "/eval"}};
  for (int i = 0; i < 2 && !c->test_inputs; i++) {
    char *p = pg_path_fmt("%s%s/test_inputs.py", where[i][0], where[i][1]);
    if (!p) return PG_ENOMEM;
    if (pg_is_file(p)) c->test_inputs = p;
    else free(p);
  }
  char *impl = pg_path_fmt("%s/%s_impl.py", c->op_dir, c->op);
  if (!impl) return PG_ENOMEM;
  if (pg_is_file(impl)) c->op_impl = impl;
  else free(impl);
  return PG_OK;
}

/* A warning for every module whose own phase has no golden, naming the phases that
 * cannot run because of it. */
static int warn_missing(const struct pg_contract *c, struct pg_diags *diags) {
  for (int m = 1; m <= c->n_modules; m++) {
    const struct pg_module *mod = &c->modules[m - 1];
    if (mod->golden.kind != PG_GOLDEN_NONE || pg_contract_py_golden(c, m)) continue;
    char phases[256] = "";
    for (int j = m; j <= c->n_modules; j++) {
      if (pg_contract_phase_golden(c, j) != PG_PHASE_GOLDEN_NONE) continue;
      size_t l = strlen(phases);
      if (l + 16 < sizeof phases) snprintf(phases + l, sizeof phases - l, "%s%d", l ? ", " : "", j);
    }
    const struct pg_py_golden *g = m < c->n_py_goldens ? &c->py_goldens[m] : NULL;
    if (pg_diags_add(diags, PG_SEV_WARNING, c->path, mod->mark.line, mod->mark.column, NULL,
                     "module %d '%.64s' has no golden: no `golden:` steps or plugin, no %.200s; "
                     "run --up-to-module %s will fail", m, mod->name ? mod->name : "?",
                     g && g->expected ? g->expected : "Python golden", phases) != PG_OK)
      return PG_ENOMEM;
  }
  return PG_OK;
}

int pg_contract_discover_py_goldens(struct pg_contract *c, const char *contract_path,
                                    struct pg_diags *diags) {
  if (!c->py_goldens || c->n_py_goldens != c->n_modules + 1) return PG_OK;
  char *contract_dir = NULL;
  int rc = op_dirs(contract_path, &contract_dir, &c->op_dir);
  struct search mods = {{0}, 0}, ops = {{0}, 0};
  if (rc == PG_OK && c->op_dir && c->op) {
    rc = search_add(&mods, pg_path_fmt("%s/modules", c->op_dir));
    if (rc == PG_OK) rc = search_add(&mods, pg_path_fmt("%s/modules", contract_dir));
    if (rc == PG_OK) rc = search_add(&mods, pg_strdup(contract_dir));
    if (rc == PG_OK) rc = search_add(&mods, pg_strdup(c->op_dir));
    if (rc == PG_OK) rc = search_add(&ops, pg_strdup(c->op_dir));
    if (rc == PG_OK) rc = search_add(&ops, pg_strdup(contract_dir));
    for (int k = 1; rc == PG_OK && k <= c->n_modules; k++) rc = find_phase(c, &mods, k, diags);
    if (rc == PG_OK) rc = find_op_level(c, &ops);
    if (rc == PG_OK) rc = l0_golden(c);
    if (rc == PG_OK) rc = find_op_files(c, contract_dir);
  }
  if (rc == PG_OK) rc = warn_missing(c, diags);
  search_reset(&mods);
  search_reset(&ops);
  free(contract_dir);
  return rc;
}

/* ------------------------------------------------------------------ which golden */

const struct pg_py_golden *pg_contract_py_golden(const struct pg_contract *c, int k) {
  if (!c || !c->py_goldens || k < 0 || k >= c->n_py_goldens) return NULL;
  return c->py_goldens[k].file ? &c->py_goldens[k] : NULL;
}

int pg_contract_has_builtin_golden(const struct pg_contract *c, int k) {
  if (!c || k < 0 || k > c->n_modules) return 0;
  if (k == 0) return c->op_golden.kind != PG_GOLDEN_NONE;
  for (int m = 0; m < k; m++)
    if (c->modules[m].golden.kind == PG_GOLDEN_NONE) return 0;
  return 1;
}

enum pg_phase_golden pg_contract_phase_golden(const struct pg_contract *c, int k) {
  if (pg_contract_py_golden(c, k)) return PG_PHASE_GOLDEN_PYTHON;
  return pg_contract_has_builtin_golden(c, k) ? PG_PHASE_GOLDEN_BUILTIN : PG_PHASE_GOLDEN_NONE;
}

void pg_contract_no_golden_reason(const struct pg_contract *c, int k, char *buf, size_t size) {
  const struct pg_py_golden *g = c && c->py_goldens && k >= 0 && k < c->n_py_goldens
                                     ? &c->py_goldens[k] : NULL;
  const char *expected = g && g->expected ? g->expected : "Python golden";
  if (!c || k < 0 || k > c->n_modules) {
    snprintf(buf, size, "no phase %d", k);
    return;
  }
  if (k == 0) {
    snprintf(buf, size, "the op has no op-level golden: no `golden:` at top level, no %s",
             expected);
    return;
  }
  /* module k itself first: in a Python-golden op every module lacks built-in steps,
   * and what is missing for phase k is its own golden */
  int j = k;
  if (c->modules[k - 1].golden.kind != PG_GOLDEN_NONE)
    for (j = 1; j < k && c->modules[j - 1].golden.kind != PG_GOLDEN_NONE;) j++;
  const struct pg_module *m = &c->modules[j - 1];
  if (j == k)
    snprintf(buf, size, "module %d '%.64s' has no golden: no `golden:` steps or plugin, no %.200s",
             k, m->name ? m->name : "?", expected);
  else
    snprintf(buf, size, "phase %d cannot be composed: module %d '%.64s' has no `golden:` steps "
             "or plugin, and there is no Python cumulative golden %.200s", k, j,
             m->name ? m->name : "?", expected);
}
