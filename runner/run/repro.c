/* phasegate runner — the repro line: the exact command line that reruns one case of
 * the phase (DESIGN.md §8, `repro` in the report, "    repro: …" on the console).
 *
 * It lives in the run room, not the report room, because it is data about the run,
 * not presentation: it is built from the run's options while the case runs (in the
 * --jobs worker that ran it), stored in the case result and the report as a value,
 * and only printed as is by report/console.c. Arguments are shell-quoted only where
 * needed, so the line can be pasted into a shell.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* A growing string; any allocation failure makes the whole line NULL. */
struct line {
  char *b;
  size_t len, cap;
  int oom;
};

static void append(struct line *l, const char *s) {
  size_t n = strlen(s);
  if (l->oom) return;
  if (l->len + n + 1 > l->cap) {
    size_t nc = (l->cap ? l->cap * 2 : 256) + n;
    char *nb = realloc(l->b, nc);
    if (!nb) {
      l->oom = 1;
      return;
    }
    l->b = nb;
    l->cap = nc;
  }
  memcpy(l->b + l->len, s, n + 1);
  l->len += n;
}

/* Appends s as one shell word (quoted unless plain), after a space unless first. */
static void word(struct line *l, const char *s) {
  int plain = *s != '\0';
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("_-./:=,@%+", *p))) plain = 0;
  if (l->len) append(l, " ");
  if (plain) {
    append(l, s);
    return;
  }
  append(l, "'");
  for (const char *p = s; *p; p++) {
    char one[2] = {*p, 0};
    append(l, *p == '\'' ? "'\\''" : one);
  }
  append(l, "'");
}

static void option(struct line *l, const char *name, const char *value) {
  word(l, name);
  word(l, value);
}

char *pg__repro(const struct pg_run_opts *o, int k, const char *contract, const char *suite,
                const char *case_id, const char *modes) {
  struct line l = {NULL, 0, 0, 0};
  char t[64];
  word(&l, o->self_exe ? o->self_exe : "phasegate");
  word(&l, "run");
  if (o->op_dir && !o->contract_path) {
    option(&l, "--op-dir", o->op_dir);
    if (o->suite_path) option(&l, "--suite", o->suite_path);
  } else {
    option(&l, "--contract", contract);
    option(&l, "--suite", suite);
  }
  option(&l, "--impl", o->impl_spec);
  snprintf(t, sizeof t, "%d", k);
  option(&l, "--up-to-module", t);
  option(&l, "--case", case_id);
  option(&l, "--modes", modes);
  if (o->golden_lib) option(&l, "--golden-lib", o->golden_lib);
  if (o->reference_bits == 64) option(&l, "--reference-precision", "fp64");
  if (o->golden_data) option(&l, "--golden-data", o->golden_data);
  if (o->timeout_s > 0 && o->timeout_s != 120) {
    snprintf(t, sizeof t, "%g", o->timeout_s);
    option(&l, "--timeout", t);
  }
  if (o->max_bytes) {
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->max_bytes);
    option(&l, "--max-bytes", t);
  }
  if (o->rlimit_as) {
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->rlimit_as);
    option(&l, "--memory-limit", t);
  }
  /* the same report, so a re-run after a fix updates this case's entry */
  if (o->report_path) option(&l, "--report", o->report_path);
  else if (o->report_dir) option(&l, "--report-dir", o->report_dir);
  if (l.oom) {
    free(l.b);
    return NULL;
  }
  return l.b;
}
