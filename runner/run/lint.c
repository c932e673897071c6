/* phasegate runner — warnings about files written for the pypto workflow (docs/pypto.md
 * "The golden lint", "Suite shape"), part of the one validation (run/check.c), so
 * `validate` and every run print them:
 *
 *   - each Python golden against the workflow's step A.5.2: a module golden starts with
 *     the derived-file header, imports no other golden (self-contained), imports only
 *     torch and the few standard modules math needs, and takes the contract's
 *     primary_inputs in order;
 *   - in the workflow's layout (DIR/eval/), each phase's impl wrapper
 *     (modules/<op>_module<suffix>_impl.py) takes the primary inputs in order too, and
 *     the suite has at least 2 cases per level L1..L5, each stating precision, atol and
 *     rtol (step B.2).
 *
 * Everything here is a warning with the file's position: the runner can still run what
 * it warns about. Python files are read by opdir/py_scan.c's line scan, never run: the
 * runner needs no Python to validate an op. A plugin impl's parameters are its C ABI,
 * not the workflow's, so there is nothing of this kind to check for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "run/run_internal.h"

/* What a golden may import besides torch: the standard modules plain math code uses. */
static const char *const golden_allowed[] = {
    "torch", "math", "typing", "__future__", "functools", "itertools", "operator",
    "collections", "dataclasses", "enum", "numbers", "os", "sys", NULL};

/* The module name's first component ("torch" of "torch.nn"), relative dots dropped. */
static void top_name(const char *module, char *buf, size_t size) {
  while (*module == '.') module++;
  size_t n = strcspn(module, ".");
  snprintf(buf, size, "%.*s", (int)n, module);
}

/* Its last component ("x_module1_golden" of "pkg.x_module1_golden"). */
static const char *last_name(const char *module) {
  const char *dot = strrchr(module, '.');
  return dot ? dot + 1 : module;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The file's stem ("x_module1_golden" of ".../x_module1_golden.py") into buf. */
static void stem(const char *path, char *buf, size_t size) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (ends_with(base, ".py")) n -= 3;
  snprintf(buf, size, "%.*s", (int)n, base);
}

/* Is `name` a golden module (the verifier's or the Pro workflow's naming)? */
static int is_golden_module(const char *name) {
  return ends_with(name, "_golden") || strstr(name, "_golden_stage") != NULL ||
         ends_with(name, "_golden_cpu");
}

/* "a, b, c" of the contract's primary inputs into buf. */
static void primary_list(const struct pg_contract *c, char *buf, size_t size) {
  buf[0] = '\0';
  for (int i = 0; i < c->n_primary; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, size - l, "%s%s", i ? ", " : "", c->primary_inputs[i].name);
  }
}

/* Does def d take the contract's primary inputs, in order? Parameters with a default
 * that start with inspection_ are the workflow's probe buffers (step B.5): allowed.
 * `*args` alone takes anything. Else a warning at the def saying what differs. */
static int check_signature(const struct pg_contract *c, const char *file,
                           const struct pg_py_def *d, const char *what, struct pg_diags *diags) {
  if (d->n_params == 0 && d->varargs) return PG_OK;
  char want[1024], got[1024] = "", extra[512] = "", missing[512] = "";
  primary_list(c, want, sizeof want);
  int n = 0, same_order = 1;
  for (int i = 0; i < d->n_params; i++) {
    const struct pg_py_param *p = &d->params[i];
    size_t l = strlen(got);
    snprintf(got + l, sizeof got - l, "%s%s", i ? ", " : "", p->name);
    if (p->has_default && strncmp(p->name, "inspection_", 11) == 0) continue;
    int found = 0;
    for (int j = 0; j < c->n_primary; j++) found |= strcmp(c->primary_inputs[j].name, p->name) == 0;
    if (!found) {
      l = strlen(extra);
      snprintf(extra + l, sizeof extra - l, "%s'%s'", l ? ", " : "", p->name);
      continue;
    }
    if (n >= c->n_primary || strcmp(c->primary_inputs[n].name, p->name) != 0) same_order = 0;
    n++;
  }
  for (int j = 0; j < c->n_primary; j++) {
    int found = 0;
    for (int i = 0; i < d->n_params; i++) found |= strcmp(c->primary_inputs[j].name, d->params[i].name) == 0;
    if (!found && !d->varargs) {
      size_t l = strlen(missing);
      snprintf(missing + l, sizeof missing - l, "%s'%s'", l ? ", " : "", c->primary_inputs[j].name);
    }
  }
  if (!extra[0] && !missing[0] && same_order) return PG_OK;
  char why[1200];
  if (!extra[0] && !missing[0])
    snprintf(why, sizeof why, "takes the primary inputs in another order");
  else
    snprintf(why, sizeof why, "%s%s%s%s%s", extra[0] ? "has parameter(s) " : "", extra,
             extra[0] ? " that are not primary inputs" : "", extra[0] && missing[0] ? "; " : "",
             missing[0] ? "lacks " : "");
  if (missing[0]) {
    size_t l = strlen(why);
    snprintf(why + l, sizeof why - l, "%s", missing);
  }
  return pg_diags_add(diags, PG_SEV_WARNING, file, d->line, d->column, "signature",
                      "%s %s(%s) %s: the contract's primary_inputs are (%s), passed in that "
                      "order", what, d->name, got, why, want);
}

/* One Python golden file: header (module goldens), imports, the function's signature. */
static int lint_golden(const struct pg_contract *c, const struct pg_py_golden *g, int module_golden,
                       struct pg_diags *diags) {
  struct pg_py_scan s;
  struct pg_error e;
  pg_error_clear(&e);
  if (pg_py_scan_file(g->file, &s, &e) != PG_OK)
    return e.code == PG_ENOMEM ? PG_ENOMEM
                               : pg_diags_add(diags, PG_SEV_WARNING, g->file, 0, 0, "golden-lint",
                                              "cannot read the golden to lint it: %s", e.message);
  int rc = PG_OK;
  if (module_golden && !s.header_line)
    rc = pg_diags_add(diags, PG_SEV_WARNING, g->file, 1, 1, "golden-lint",
                      "no derived-file header: a module golden starts with the comment '# "
                      "Derived from module_interfaces.yaml — do not hand-edit. On YAML changes, "
                      "regenerate.' (workflow step A.5.2)");
  char own[PG_NAME_MAX], top[PG_NAME_MAX];
  stem(g->file, own, sizeof own);
  for (int i = 0; rc == PG_OK && i < s.n_imports; i++) {
    const struct pg_py_import *im = &s.imports[i];
    top_name(im->module, top, sizeof top);
    const char *last = last_name(im->module);
    if ((is_golden_module(last) && strcmp(last, own) != 0) ||
        (is_golden_module(top) && strcmp(top, own) != 0)) {
      rc = pg_diags_add(diags, PG_SEV_WARNING, g->file, im->line, im->column, "golden-lint",
                        "imports '%s', another golden: each golden is self-contained, its "
                        "modules' math inline (workflow step A.5.2)", im->module);
      continue;
    }
    int allowed = 0;
    for (int a = 0; golden_allowed[a]; a++) allowed |= strcmp(top, golden_allowed[a]) == 0;
    if (allowed || !top[0]) continue;
    if (strcmp(top, "numpy") == 0)
      rc = pg_diags_add(diags, PG_SEV_WARNING, g->file, im->line, im->column, "golden-lint",
                        "imports numpy: a golden is torch code (workflow step A.5.2); numpy "
                        "has no bfloat16 and rounds through other dtypes than the kernel's "
                        "torch reference");
    else if (strncmp(top, "pypto", 5) == 0 || strcmp(top, "torch_npu") == 0)
      rc = pg_diags_add(diags, PG_SEV_WARNING, g->file, im->line, im->column, "golden-lint",
                        "imports '%s': a golden uses only torch, no PyPTO or device package "
                        "(workflow step A.5.2): it is the reference the kernel is checked "
                        "against", im->module);
    else
      rc = pg_diags_add(diags, PG_SEV_WARNING, g->file, im->line, im->column, "golden-lint",
                        "imports '%s': a golden uses only torch (and math, typing, functools, "
                        "itertools, operator, collections, dataclasses, enum, numbers, os, "
                        "sys) (workflow step A.5.2)", im->module);
  }
  const struct pg_py_def *d = g->function ? pg_py_scan_def(&s, g->function) : NULL;
  if (rc == PG_OK && d) rc = check_signature(c, g->file, d, "golden", diags);
  pg_py_scan_reset(&s);
  return rc;
}

/* Is the contract at DIR/eval/ (the workflow's layout), however its path was spelled
 * (`./module_interfaces.yaml` from eval/ included)? */
static int pypto_layout(const struct pg_contract *c) {
  char *abs = c->path && c->op_dir && c->op ? realpath(c->path, NULL) : NULL;
  if (!abs) return 0;
  char *slash = strrchr(abs, '/');
  *slash = '\0';
  const char *base = strrchr(abs, '/');
  int yes = base && strcmp(base + 1, "eval") == 0;
  free(abs);
  return yes;
}

/* modules/<op>_module<suffix>_impl.py of each phase: its wrapper's signature. */
static int lint_impls(const struct pg_contract *c, struct pg_diags *diags) {
  int rc = PG_OK;
  for (int k = 1; rc == PG_OK && k <= c->n_modules; k++) {
    char suffix[64], fn[PG_NAME_MAX + 96];
    pg_phase_suffix(k, suffix, sizeof suffix);
    char *path = pg_path_fmt("%s/modules/%s_module%s_impl.py", c->op_dir, c->op, suffix);
    if (!path) return PG_ENOMEM;
    if (pg_is_file(path)) {
      struct pg_py_scan s;
      struct pg_error e;
      pg_error_clear(&e);
      if (pg_py_scan_file(path, &s, &e) == PG_OK) {
        snprintf(fn, sizeof fn, "%s_module%s_wrapper", c->op, suffix);
        const struct pg_py_def *d = pg_py_scan_def(&s, fn);
        if (d) rc = check_signature(c, path, d, "impl wrapper", diags);
        pg_py_scan_reset(&s);
      } else if (e.code == PG_ENOMEM) {
        rc = PG_ENOMEM;
      }
    }
    free(path);
  }
  return rc;
}

/* Step B.2: at least 2 cases per level L1..L5, each with precision, atol and rtol. */
static int lint_suite(const struct pg_suite *s, struct pg_diags *diags) {
  int rc = PG_OK;
  for (int level = 1; rc == PG_OK && level <= 5; level++) {
    int n = 0, line = 0, col = 0;
    for (int i = 0; i < s->n_cases; i++)
      if (s->cases[i].level == level && n++ == 0) {
        line = s->cases[i].mark.line;
        col = s->cases[i].mark.column;
      }
    if (n < 2)
      rc = pg_diags_add(diags, PG_SEV_WARNING, s->path, line ? line : 1, line ? col : 1,
                        "suite-shape", "level L%d has %d case%s%s: the workflow's suites have "
                        "at least 2 per level L1..L5 (step B.2)", level, n, n == 1 ? "" : "s",
                        n == 1 ? " (this one)" : "");
  }
  for (int i = 0; rc == PG_OK && i < s->n_cases; i++) {
    const struct pg_case *cs = &s->cases[i];
    char missing[64] = "";
    const char *keys[3] = {cs->has_precision ? NULL : "precision", cs->has_atol ? NULL : "atol",
                           cs->has_rtol ? NULL : "rtol"};
    for (int j = 0; j < 3; j++)
      if (keys[j]) {
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "", keys[j]);
      }
    if (missing[0])
      rc = pg_diags_add(diags, PG_SEV_WARNING, s->path, cs->mark.line, cs->mark.column,
                        "suite-shape", "case '%s' has no %s: every case of the workflow's "
                        "suites states precision, atol and rtol (step B.2)",
                        cs->id ? cs->id : "?", missing);
  }
  return rc;
}

int pg__lint_op(const struct pg_contract *c, const struct pg_suite *s, struct pg_diags *diags) {
  int rc = PG_OK;
  /* each golden file once: [0] the op-level golden, [k] cumulative golden k */
  for (int k = 0; rc == PG_OK && k < c->n_py_goldens; k++) {
    const struct pg_py_golden *g = &c->py_goldens[k];
    if (!g->file) continue;
    int seen = 0;
    for (int j = 0; j < k; j++)
      seen |= c->py_goldens[j].file && strcmp(c->py_goldens[j].file, g->file) == 0;
    if (!seen) rc = lint_golden(c, g, k > 0 && !g->stage_fn, diags);
  }
  if (rc != PG_OK || !pypto_layout(c)) return rc;
  rc = lint_impls(c, diags);
  if (rc == PG_OK && s && s->path) rc = lint_suite(s, diags);
  return rc;
}
