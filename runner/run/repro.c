/* phasegate runner — the repro line: the exact command line that reruns one case of
 * the phase (docs/design.md §8, `repro` in the report, "    repro: …" on the console).
 *
 * It lives in the run room, not the report room, because it is data about the run,
 * not presentation: it is built from the run's options while the case runs (in the
 * --jobs worker that ran it), stored in the case result and the report as a value,
 * and only printed as is by report/console.c. Arguments are shell-quoted only where
 * needed, so the line can be pasted into a shell. NULL when out of memory.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* Writes s as one shell word (quoted unless plain), after a space unless first. */
static void word(FILE *f, const char *s) {
  int plain = *s != '\0';
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("_-./:=,@%+", *p))) plain = 0;
  if (ftell(f) > 0) fputc(' ', f);
  if (plain) {
    fputs(s, f);
    return;
  }
  fputc('\'', f);
  for (const char *p = s; *p; p++)
    if (*p == '\'') fputs("'\\''", f);
    else fputc(*p, f);
  fputc('\'', f);
}

static void option(FILE *f, const char *name, const char *value) {
  word(f, name);
  word(f, value);
}

char *pg__repro(const struct pg_run_opts *o, int k, const char *contract, const char *suite,
                const char *case_id, const char *modes) {
  char *line = NULL, t[64];
  size_t size = 0;
  FILE *f = open_memstream(&line, &size);
  if (!f) return NULL;
  word(f, o->self_exe ? o->self_exe : "phasegate");
  word(f, "run");
  if (o->op_dir && !o->contract_path) {
    option(f, "--op-dir", o->op_dir);
    if (o->suite_path) option(f, "--suite", o->suite_path);
  } else {
    option(f, "--contract", contract);
    option(f, "--suite", suite);
  }
  option(f, "--impl", o->impl_spec);
  if (o->python) option(f, "--python", o->python);
  snprintf(t, sizeof t, "%d", k);
  if (o->e2e) word(f, "--e2e");
  else option(f, "--up-to-module", t);
  option(f, "--case", case_id);
  option(f, "--modes", modes);
  if (o->golden_lib) option(f, "--golden-lib", o->golden_lib);
  if (o->reference_bits == 64) option(f, "--reference-precision", "fp64");
  if (o->golden_data) option(f, "--golden-data", o->golden_data);
  if (o->timeout_s > 0 && o->timeout_s != 120) {
    snprintf(t, sizeof t, "%g", o->timeout_s);
    option(f, "--timeout", t);
  }
  if (o->max_bytes) {
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->max_bytes);
    option(f, "--max-bytes", t);
  }
  if (o->rlimit_as) {
    snprintf(t, sizeof t, "%llu", (unsigned long long)o->rlimit_as);
    option(f, "--memory-limit", t);
  }
  /* the same report, so a re-run after a fix updates this case's entry */
  if (o->report_path) option(f, "--report", o->report_path);
  else if (o->report_dir) option(f, "--report-dir", o->report_dir);
  int ok = !ferror(f);
  ok &= fclose(f) == 0;
  if (!ok) {
    free(line);
    return NULL;
  }
  return line;
}
