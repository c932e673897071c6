/* phasegate — pieces of the spec API shared by the contract and suite loaders:
 * the diagnostics list, phase suffixes and op-directory resolution. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "phasegate/spec.h"

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

static char *dup_or_null(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int pg_diags_add(struct pg_diags *d, enum pg_severity sev, const char *file, int line,
                 int column, const char *rule, const char *fmt, ...) {
  if (!d) return PG_OK;
  if (d->count == d->capacity) {
    int cap = d->capacity ? d->capacity * 2 : 16;
    struct pg_diag *items = realloc(d->items, (size_t)cap * sizeof *items);
    if (!items) return PG_ENOMEM;
    d->items = items;
    d->capacity = cap;
  }
  char msg[PG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct pg_diag *g = &d->items[d->count];
  g->severity = sev;
  g->file = dup_or_null(file ? file : "<input>");
  g->line = line;
  g->column = column;
  g->message = dup_or_null(msg);
  g->rule = dup_or_null(rule);
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

void pg_phase_suffix(int k, char *buf, size_t size) {
  size_t n = 0;
  if (size == 0) return;
  buf[0] = '\0';
  for (int i = 1; i <= k; i++) {
    int w = snprintf(buf + n, size - n, "%d", i);
    if (w < 0 || (size_t)w >= size - n) break;
    n += (size_t)w;
  }
}

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int pg_op_dir_resolve(const char *dir, char *contract_path, size_t contract_size,
                      char *suite_path, size_t suite_size, struct pg_error *err) {
  static const char *const subdirs[] = {"", "/eval"};
  for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
    char c[4096];
    snprintf(c, sizeof c, "%s%s/module_interfaces.yaml", dir, subdirs[i]);
    if (!is_file(c)) continue;
    snprintf(contract_path, contract_size, "%s", c);
    if (suite_path) snprintf(suite_path, suite_size, "%s%s/adversarial_suite.json", dir,
                             subdirs[i]);
    return PG_OK;
  }
  return pg_error_set(err, PG_ENOENT,
                      "%s: no module_interfaces.yaml in the directory or its eval/ subdirectory",
                      dir);
}
