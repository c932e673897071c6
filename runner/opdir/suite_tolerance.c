/* phasegate runner — a case's per-output tolerances in adversarial_suite.json:
 *
 *   "tolerance": {"scores": {"atol": 1e-2, "rtol": 1e-2}, "out": {"rule": "ulp:4"}}
 *
 * Output name → {atol, rtol, rule}, each checked like the case-wide keys, the name
 * against the contract's module outputs, final outputs and inspection probes (a
 * finding at the key's line:col listing them). A rule's text is checked by compare/'s
 * one parser (pg_cmp_rule_parse), as the contract's and the runner's are, so a rule the
 * suite accepts is one the run can use. Which level wins is decided in run/case.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "phasegate/compare.h"
#include "opdir/suite_internal.h"

int pg__sread_tolerance(struct pg__sload *x, int n, const char *path, const char *key,
                        double *out) {
  const struct pg_json_node *nd = node_at(x, n);
  if (!is_num(x, n)) {
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "type",
              "%s.%s: expected a number >= 0, found %s", path, key, pg__skind(x, n));
    return 0;
  }
  double v = pg_json_pos_number(&x->pos, n);
  if (!isfinite(v) || v < 0) {
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "tolerance",
              "%s.%s: must be a finite number >= 0, got %.*s", path, key,
              (int)(nd->len > 40 ? 40 : nd->len), x->data + nd->off);
    return 0;
  }
  *out = v;
  return 1;
}

int pg__scheck_rule(struct pg__sload *x, int n, const char *path) {
  const struct pg_json_node *nd = node_at(x, n);
  if (!is_str(x, n)) {
    pg__stype_error(x, n, "a string", "%s.rule", path);
    return 0;
  }
  struct pg_cmp_rule rule;
  if (pg_cmp_rule_parse(sval(x, n), &rule, NULL) != PG_OK) {
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "compare-rule",
              "%s.rule: unknown compare rule \"%.*s\" (allclose, exact, ulp:N, ratio:R with "
              "0 <= R <= 1; no whitespace)", path, 64, sval(x, n));
    return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------- output names */

static int in_decls(const struct pg_tensor_decl *d, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (d[i].name && strcmp(d[i].name, name) == 0) return 1;
  return 0;
}

/* A module output, final output or inspection probe of the contract. */
static int is_checked_output(const struct pg_contract *c, const char *name) {
  for (int m = 0; m < c->n_modules; m++)
    if (in_decls(c->modules[m].outputs, c->modules[m].n_outputs, name) ||
        in_decls(c->modules[m].probes, c->modules[m].n_probes, name))
      return 1;
  return in_decls(c->final_outputs, c->n_final, name);
}

static void add_names(const struct pg_tensor_decl *d, int n, const char *tag, char *buf,
                      size_t size) {
  for (int i = 0; i < n; i++) {
    size_t at = strlen(buf);
    if (!d[i].name || at + 8 >= size) continue;
    char first[160], later[168];
    snprintf(first, sizeof first, "%s (", d[i].name);
    snprintf(later, sizeof later, ", %s (", d[i].name);
    /* the same name at two boundaries (M3's out, the final out): listed once */
    if (strncmp(buf, first, strlen(first)) == 0 || strstr(buf, later)) continue;
    snprintf(buf + at, size - at, "%s%s%s", at ? ", " : "", d[i].name, tag);
  }
}

/* "scores (M1), out (M3), p (M2 probe)" */
static void checked_names(const struct pg_contract *c, char *buf, size_t size) {
  buf[0] = '\0';
  for (int m = 0; m < c->n_modules; m++) {
    char tag[40];
    snprintf(tag, sizeof tag, " (M%d)", m + 1);
    add_names(c->modules[m].outputs, c->modules[m].n_outputs, tag, buf, size);
    snprintf(tag, sizeof tag, " (M%d probe)", m + 1);
    add_names(c->modules[m].probes, c->modules[m].n_probes, tag, buf, size);
  }
  add_names(c->final_outputs, c->n_final, " (final)", buf, size);
}

/* ---------------------------------------------------------------- the map */

/* One "<name>": {atol, rtol, rule} member (node n) into t; 0 after a finding. */
static int load_entry(struct pg__sload *x, int n, const char *path,
                      struct pg_output_tolerance *t) {
  const char *name = kstr(x, n);
  char ep[200];
  snprintf(ep, sizeof ep, "%s.tolerance.%.64s", path, name);
  if (!is_obj(x, n)) {
    pg__stype_error(x, n, "an object ({\"atol\", \"rtol\", \"rule\"})", "%s", ep);
    return 0;
  }
  int ok = 1, any = 0;
  for (int m = node_at(x, n)->first_child; m >= 0; m = node_at(x, m)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, m);
    if (nd->dup_of >= 0) continue;
    const char *k = kstr(x, m);
    if (k[0] == '_') continue; /* a comment */
    any = 1;
    if (KEY_IS("atol")) {
      ok &= t->has_atol = pg__sread_tolerance(x, m, ep, k, &t->atol);
    } else if (KEY_IS("rtol")) {
      ok &= t->has_rtol = pg__sread_tolerance(x, m, ep, k, &t->rtol);
    } else if (KEY_IS("rule")) {
      if (!pg__scheck_rule(x, m, ep)) {
        ok = 0;
      } else if (!(t->rule = pg_strdup(sval(x, m)))) {
        x->oom = 1;
      }
    } else {
      int l, c;
      pg__skey_pos(x, m, &l, &c);
      pg__sfind(x, PG_SEV_ERROR, l, c, "tolerance",
                "%s: unknown key \"%.64s\" (atol, rtol, rule)", ep, k);
      ok = 0;
    }
  }
  if (!any) {
    const struct pg_json_node *nd = node_at(x, n);
    pg__sfind(x, PG_SEV_ERROR, nd->line, nd->col, "tolerance",
              "%s: empty: give atol, rtol and/or rule", ep);
    ok = 0;
  }
  return ok;
}

void pg__sload_tolerance(struct pg__sload *x, int on, const char *path, struct pg_case *cs) {
  if (!is_obj(x, on)) {
    pg__stype_error(x, on, "an object by output name ({\"scores\": {\"atol\": 1e-2}})",
                    "%s.tolerance", path);
    return;
  }
  int cap = node_at(x, on)->n_children;
  if (cap == 0) return;
  struct pg_output_tolerance *list = calloc((size_t)cap, sizeof *list);
  if (!list) {
    x->oom = 1;
    return;
  }
  int count = 0;
  for (int n = node_at(x, on)->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *name = kstr(x, n);
    if (name[0] == '_') continue; /* a comment */
    if (x->contract && !is_checked_output(x->contract, name)) {
      char known[700];
      checked_names(x->contract, known, sizeof known);
      int l, c;
      pg__skey_pos(x, n, &l, &c);
      int casewide = strcmp(name, "atol") == 0 || strcmp(name, "rtol") == 0 ||
                     strcmp(name, "rule") == 0;
      pg__sfind(x, PG_SEV_ERROR, l, c, "tolerance",
                "%s.tolerance: \"%.64s\" is no output of the contract%s (outputs: %s)", path,
                name, casewide ? "; a tolerance for every output is the case's own \"atol\", "
                "\"rtol\", \"rule\"" : "", known[0] ? known : "none");
      continue;
    }
    struct pg_output_tolerance t = {0};
    if (!load_entry(x, n, path, &t)) {
      free(t.rule);
      continue;
    }
    t.name = pg_strdup(name);
    if (!t.name) {
      free(t.rule);
      x->oom = 1;
      continue;
    }
    t.mark = (struct pg_mark){nd->line, nd->col};
    list[count++] = t;
  }
  pg_output_tolerances_free(cs->tolerances, cs->n_tolerances); /* a second "tolerance" */
  cs->tolerances = list;
  cs->n_tolerances = count;
}

void pg_output_tolerances_free(struct pg_output_tolerance *t, int n) {
  for (int i = 0; t && i < n; i++) {
    free(t[i].name);
    free(t[i].rule);
  }
  free(t);
}

const struct pg_output_tolerance *pg_case_output_tolerance(const struct pg_case *cs,
                                                           const char *name) {
  for (int i = 0; i < cs->n_tolerances; i++)
    if (strcmp(cs->tolerances[i].name, name) == 0) return &cs->tolerances[i];
  return NULL;
}
