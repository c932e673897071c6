/* phasegate runner — per-mode policies (`modes: {sim: {precision: false}}`): a mode
 * declared structure-only in the contract, the suite or one case has its values compared
 * and reported but not gating (the seed's lesson that a simulator's precision can mean
 * nothing). Loaded here from both file kinds, looked up by pg_mode_precision; what a
 * policy does to a verdict is run/classify.c's.
 *
 * A policy naming a mode that is never requested is harmless (modes are chosen per
 * run). Unknown keys under a mode are warnings; a precision that is not a boolean is an
 * error naming file:line:col.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/contract_internal.h"
#include "opdir/suite_internal.h"

void pg_mode_policies_free(struct pg_mode_policy *p, int n) {
  for (int i = 0; p && i < n; i++) free(p[i].mode);
  free(p);
}

static const struct pg_mode_policy *find(const struct pg_mode_policy *p, int n, const char *mode) {
  for (int i = 0; p && i < n; i++)
    if (p[i].mode && strcmp(p[i].mode, mode) == 0) return &p[i];
  return NULL;
}

int pg_mode_precision(const struct pg_contract *c, const struct pg_suite *s,
                      const struct pg_case *cs, const char *mode, const char **where) {
  const struct pg_mode_policy *p = NULL;
  const char *w = "";
  if (cs && (p = find(cs->mode_policies, cs->n_mode_policies, mode))) w = "case";
  else if (s && (p = find(s->mode_policies, s->n_mode_policies, mode))) w = "suite";
  else if (c && (p = find(c->mode_policies, c->n_mode_policies, mode))) w = "contract";
  if (where) *where = w;
  return p ? p->precision : 1;
}

/* ------------------------------------------------------------------ the contract */

/* A YAML 1.1 boolean as PyYAML reads one (plain scalars only): 1/0, -1 when it is none. */
static int yaml_bool(const struct pg__ynode *n) {
  static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const f[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  if (n->kind != PG__Y_SCALAR || !n->plain) return -1;
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    if (strcmp(n->value, t[i]) == 0) return 1;
    if (strcmp(n->value, f[i]) == 0) return 0;
  }
  return -1;
}

void pg__parse_mode_policies(struct pg__sctx *s, const struct pg__ynode *n) {
  static const char *const keys[] = {"precision", NULL};
  struct pg_contract *c = s->c;
  if (pg__ynull(n)) return;
  if (!pg__want(s, n, PG__Y_MAP, "'modes'")) return;
  int count = n->n_kids / 2;
  if (count == 0) return;
  c->mode_policies = pg__scalloc(s, (size_t)count, sizeof *c->mode_policies);
  if (!c->mode_policies) return;
  for (int i = 0; i + 1 < n->n_kids; i += 2) {
    const struct pg__ynode *k = n->kids[i], *v = n->kids[i + 1];
    if (k->kind != PG__Y_SCALAR || !pg__valid_name(k->value)) {
      PG__ERR(k, 8, "'modes': a mode name is made of letters, digits, '_', '.', '-'");
      continue;
    }
    char what[160];
    snprintf(what, sizeof what, "mode '%.64s' in 'modes'", k->value);
    if (!pg__want(s, v, PG__Y_MAP, what)) continue;
    pg__check_keys(s, v, keys, what);
    struct pg_mode_policy p = {NULL, 1, {k->line, k->column}};
    const struct pg__ynode *pr = pg__ymap_get(v, "precision");
    if (pr) {
      int b = yaml_bool(pr);
      if (b < 0) {
        PG__ERR(pr, 8, "precision of %s must be true or false, found '%.40s'", what,
                pr->kind == PG__Y_SCALAR ? pr->value : pg__ykind_name(pr));
        continue;
      }
      p.precision = b;
    }
    p.mode = pg__sdup(s, k->value);
    if (!p.mode) return;
    c->mode_policies[c->n_mode_policies++] = p;
  }
}

/* ------------------------------------------------------------------ the suite */

void pg__sload_mode_policies(struct pg__sload *x, int on, const char *path,
                             struct pg_mode_policy **out, int *n_out) {
  const struct pg_json_node *o = node_at(x, on);
  if (!is_obj(x, on)) {
    pg__stype_error(x, on, "an object of mode policies ({\"sim\": {\"precision\": false}})",
                    "%s", path);
    return;
  }
  if (o->n_children == 0) return;
  *out = calloc((size_t)o->n_children, sizeof **out);
  if (!*out) {
    x->oom = 1;
    return;
  }
  for (int n = o->first_child; n >= 0; n = node_at(x, n)->next_sibling) {
    const struct pg_json_node *nd = node_at(x, n);
    if (nd->dup_of >= 0) continue;
    const char *mode = kstr(x, n);
    if (mode[0] == '_') continue; /* a comment */
    if (!mode[0] || strspn(mode, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789_.-") != strlen(mode)) {
      pg__sfind(x, PG_SEV_ERROR, nd->key_line, nd->key_col, "mode-policy",
                "%s: \"%.64s\" is not a mode name (letters, digits, '_', '.', '-')", path, mode);
      continue;
    }
    if (!is_obj(x, n)) {
      pg__stype_error(x, n, "an object ({\"precision\": false})", "%s.%s", path, mode);
      continue;
    }
    struct pg_mode_policy p = {NULL, 1, {nd->key_line, nd->key_col}};
    int bad = 0;
    for (int m = nd->first_child; m >= 0; m = node_at(x, m)->next_sibling) {
      const struct pg_json_node *md = node_at(x, m);
      const char *k = kstr(x, m);
      if (md->dup_of >= 0 || k[0] == '_') continue;
      if (strcmp(k, "precision") != 0) {
        pg__sfind(x, PG_SEV_WARNING, md->key_line, md->key_col, "unknown-key",
                  "%s.%s: unknown key \"%.64s\" (ignored; a mode policy knows \"precision\")",
                  path, mode, k);
      } else if (!is_bool(x, m)) {
        pg__sfind(x, PG_SEV_ERROR, md->line, md->col, "mode-policy",
                  "%s.%s.precision: expected true or false, found %s", path, mode,
                  pg__skind(x, m));
        bad = 1;
      } else {
        p.precision = jtype(x, m) == PG_JSON_TRUE;
      }
    }
    if (bad) continue;
    p.mode = pg_strdup(mode);
    if (!p.mode) {
      x->oom = 1;
      return;
    }
    (*out)[(*n_out)++] = p;
  }
}
