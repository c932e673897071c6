/* phasegate runner — the diagnostics list every loader fills (struct pg_diags): every
 * finding with its file:line:col and rule, formatted the way compilers print them,
 * and the adapter that lets goldens/ report golden-step findings into it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/opdir.h"

void pg_diags_init(struct pg_diags *d) { memset(d, 0, sizeof *d); }

void pg_diags_reset(struct pg_diags *d) {
  if (!d) return;
  for (int i = 0; i < d->count; i++) {
    free(d->items[i].file);
    free(d->items[i].message);
    free(d->items[i].rule);
  }
  free(d->items);
  memset(d, 0, sizeof *d);
}

int pg_diags_add(struct pg_diags *d, enum pg_severity sev, const char *file, int line,
                 int column, const char *rule, const char *fmt, ...) {
  if (!d) return PG_OK;
  if (pg_array_reserve(&d->items, &d->capacity, d->count, sizeof *d->items) != 0)
    return PG_ENOMEM;
  char msg[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct pg_diag *g = &d->items[d->count];
  g->severity = sev;
  g->file = pg_strdup(file ? file : "<input>");
  g->line = line;
  g->column = column;
  g->message = pg_strdup(msg);
  g->rule = pg_strdup(rule);
  if (!g->file || !g->message || (rule && !g->rule)) {
    free(g->file);
    free(g->message);
    free(g->rule);
    return PG_ENOMEM;
  }
  d->count++;
  if (sev == PG_SEV_ERROR) d->n_errors++;
  if (sev == PG_SEV_WARNING) d->n_warnings++;
  return PG_OK;
}

void pg_diag_format(const struct pg_diag *g, char *buf, size_t size) {
  static const char *const sev_names[] = {"note", "warning", "error"};
  const char *sev = sev_names[g->severity <= PG_SEV_ERROR ? g->severity : PG_SEV_ERROR];
  if (g->rule)
    snprintf(buf, size, "%s:%d:%d: %s: %s (%s)", g->file, g->line, g->column, sev,
             g->message, g->rule);
  else
    snprintf(buf, size, "%s:%d:%d: %s: %s", g->file, g->line, g->column, sev, g->message);
}

int pg_diags_add_finding(void *diags, const char *file, int line, int column, const char *rule,
                         const char *message) {
  return pg_diags_add(diags, PG_SEV_ERROR, file, line, column, rule, "%s", message);
}

int pg_spec_placeholder(const char *text, size_t len) {
  size_t b = 0, e = len;
  while (b < e && (text[b] == ' ' || text[b] == '\t' || text[b] == '\n' || text[b] == '\r')) b++;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n' ||
                   text[e - 1] == '\r'))
    e--;
  /* one layer of {TODO}, <TODO>, [TODO] */
  if (e - b >= 2 && ((text[b] == '{' && text[e - 1] == '}') || (text[b] == '<' && text[e - 1] == '>') ||
                     (text[b] == '[' && text[e - 1] == ']'))) {
    b++;
    e--;
    while (b < e && text[b] == ' ') b++;
    while (e > b && text[e - 1] == ' ') e--;
  }
  if (e - b < 4) return 0;
  static const char todo[] = "todo";
  for (int i = 0; i < 4; i++)
    if ((text[b + (size_t)i] | 0x20) != todo[i]) return 0;
  if (e - b == 4) return 1;
  char next = text[b + 4]; /* "TODO: fill in", "TODO(x)"; not "todo_list" */
  return !((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
           (next >= '0' && next <= '9') || next == '_');
}
