/* phasegate runner — a Python file read line by line, without Python (docs/pypto.md
 * "The golden lint"): what a pypto op directory's goldens and impls import, the
 * parameters of their top-level functions, and whether the derived-file header is
 * there. The runner never needs Python to validate an op, so this is an honest scan of
 * the lines that matter (`import`, `from … import`, `def`, leading comments), not a
 * parser: it skips triple-quoted strings and follows a `def` over several lines, and
 * it does not see what code builds at run time (importlib, exec). Positions are 1-based,
 * columns in bytes, as every finding's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "opdir/opdir.h"

#define PY_LINE_MAX 4096

static int grow(void **items, int *cap, int n, size_t size) {
  if (n < *cap) return 1;
  int nc = *cap ? *cap * 2 : 8;
  void *p = realloc(*items, (size_t)nc * size);
  if (!p) return 0;
  *items = p;
  *cap = nc;
  return 1;
}

static const char *skip_blank(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Is p at `word` followed by a blank? */
static int keyword(const char *p, const char *word) {
  size_t l = strlen(word);
  return strncmp(p, word, l) == 0 && (p[l] == ' ' || p[l] == '\t');
}

/* A dotted name (or leading dots of a relative import) at p into buf; its length. */
static size_t dotted(const char *p, char *buf, size_t size) {
  size_t n = 0;
  while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.')) n++;
  snprintf(buf, size, "%.*s", (int)n, p);
  return n;
}

static int add_import(struct pg_py_scan *s, const char *name, int line, int col) {
  if (!grow((void **)&s->imports, &s->cap_imports, s->n_imports, sizeof *s->imports)) return 0;
  struct pg_py_import *im = &s->imports[s->n_imports++];
  snprintf(im->module, sizeof im->module, "%s", name);
  im->line = line;
  im->column = col;
  return 1;
}

/* `import a, pkg.mod as d` (p after "import"): one import per module. */
static int scan_import(struct pg_py_scan *s, const char *line, const char *p, int lineno) {
  for (;;) {
    p = skip_blank(p);
    char name[PG_NAME_MAX];
    size_t n = dotted(p, name, sizeof name);
    if (n == 0) return 1;
    if (!add_import(s, name, lineno, (int)(p - line) + 1)) return 0;
    p += n;
    while (*p && *p != ',' && *p != '#') p++; /* "as d" */
    if (*p != ',') return 1;
    p++;
  }
}

/* The parameters of a def whose text (from after the name's "(") is in `params`. */
static void split_params(struct pg_py_def *d, const char *params) {
  int depth = 0;
  const char *start = params;
  for (const char *p = params;; p++) {
    if (*p == '(' || *p == '[' || *p == '{') depth++;
    if (*p == ']' || *p == '}') depth--;
    if (*p == ')' && depth > 0) {
      depth--;
      continue;
    }
    if (!*p || (depth == 0 && (*p == ',' || *p == ')'))) {
      const char *a = skip_blank(start);
      size_t n = 0;
      int stars = 0;
      while (a[0] == '*') a++, stars++;
      while (a[n] && (isalnum((unsigned char)a[n]) || a[n] == '_')) n++;
      const char *rest = skip_blank(a + n);
      if (stars == 1 && n == 0) d->keyword_only = 1;        /* a bare `*` */
      else if (stars == 1) d->varargs = d->keyword_only = 1; /* what follows is keyword-only */
      else if (stars == 2) d->varkw = 1;
      else if (n > 0 && !d->keyword_only && d->n_params < PG_PY_MAX_PARAMS) {
        struct pg_py_param *pp = &d->params[d->n_params++];
        snprintf(pp->name, sizeof pp->name, "%.*s", (int)n, a);
        const char *eq = rest;
        if (*eq == ':') /* an annotation: its default follows a top-level '=' */
          while (*eq && *eq != '=' && *eq != ',' && *eq != ')') eq++;
        pp->has_default = *eq == '=';
      }
      if (!*p || *p == ')') return;
      start = p + 1;
    }
  }
}

int pg_py_scan_file(const char *path, struct pg_py_scan *s, struct pg_error *err) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen(path, "r");
  if (!f) return pg_error_set(err, PG_EIO, "%s: %s", path, strerror(errno));
  char line[PY_LINE_MAX];
  char *def_text = NULL; /* a def spanning lines: its text so far */
  size_t def_len = 0;
  int lineno = 0, in_string = 0, leading = 1, rc = PG_OK;
  char quote[4] = "";
  while (rc == PG_OK && fgets(line, sizeof line, f)) {
    lineno++;
    line[strcspn(line, "\r\n")] = '\0';
    const char *p = skip_blank(line);
    if (def_text) { /* the rest of a def's parameters */
      size_t l = strlen(p);
      char *t = realloc(def_text, def_len + l + 2);
      if (!t) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        break;
      }
      def_text = t;
      def_text[def_len++] = ' ';
      memcpy(def_text + def_len, p, l + 1);
      def_len += l;
    } else if (in_string) { /* inside a triple-quoted string: only its end matters */
      if (strstr(p, quote)) in_string = 0;
      continue;
    } else {
      if (leading && *p == '#') {
        if (!s->header_line && strstr(p, "Derived from module_interfaces.yaml"))
          s->header_line = lineno;
        continue;
      }
      if (!*p) continue;
      leading = 0;
      /* a string statement that opens a triple-quoted block (a docstring) */
      if (strncmp(p, "\"\"\"", 3) == 0 || strncmp(p, "'''", 3) == 0 ||
          ((p[0] == 'r' || p[0] == 'b' || p[0] == 'f') &&
           (strncmp(p + 1, "\"\"\"", 3) == 0 || strncmp(p + 1, "'''", 3) == 0))) {
        const char *q = p[0] == '"' || p[0] == '\'' ? p : p + 1;
        snprintf(quote, sizeof quote, "%.3s", q);
        if (!strstr(q + 3, quote)) in_string = 1;
        continue;
      }
      if (keyword(p, "import")) {
        if (!scan_import(s, line, p + 6, lineno)) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        continue;
      }
      if (keyword(p, "from")) {
        const char *m = skip_blank(p + 4);
        char name[PG_NAME_MAX];
        if (dotted(m, name, sizeof name) > 0 && !add_import(s, name, lineno, (int)(m - line) + 1))
          rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        continue;
      }
      if (p != line || !keyword(p, "def")) continue; /* top-level functions only */
      if (!grow((void **)&s->defs, &s->cap_defs, s->n_defs, sizeof *s->defs)) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        break;
      }
      struct pg_py_def *d = &s->defs[s->n_defs];
      memset(d, 0, sizeof *d);
      const char *n = skip_blank(p + 3);
      size_t nl = 0;
      while (n[nl] && (isalnum((unsigned char)n[nl]) || n[nl] == '_')) nl++;
      snprintf(d->name, sizeof d->name, "%.*s", (int)nl, n);
      d->line = lineno;
      d->column = (int)(n - line) + 1;
      s->n_defs++;
      const char *open = strchr(n + nl, '(');
      if (!open) continue;
      def_len = strlen(open + 1);
      def_text = malloc(def_len + 1);
      if (!def_text) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        break;
      }
      memcpy(def_text, open + 1, def_len + 1);
    }
    /* a def is complete when its parentheses close */
    int depth = 1;
    const char *q = def_text;
    for (; *q && depth > 0; q++) depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
    if (depth == 0) {
      split_params(&s->defs[s->n_defs - 1], def_text);
      free(def_text);
      def_text = NULL;
    }
  }
  if (def_text) { /* a def whose ')' never came: what was read */
    split_params(&s->defs[s->n_defs - 1], def_text);
    free(def_text);
  }
  if (rc == PG_OK && ferror(f)) rc = pg_error_set(err, PG_EIO, "%s: read error", path);
  fclose(f);
  if (rc != PG_OK) pg_py_scan_reset(s);
  return rc;
}

void pg_py_scan_reset(struct pg_py_scan *s) {
  if (!s) return;
  free(s->imports);
  free(s->defs);
  memset(s, 0, sizeof *s);
}

const struct pg_py_def *pg_py_scan_def(const struct pg_py_scan *s, const char *name) {
  for (int i = 0; i < s->n_defs; i++)
    if (strcmp(s->defs[i].name, name) == 0) return &s->defs[i];
  return NULL;
}
