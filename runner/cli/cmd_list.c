/* phasegate list — every (phase, case) test the CMake layer registers, in the stable
 * formats of docs/interfaces.md: JSON for discovery (parsed with string(JSON)), one
 * line per test for humans, and `name;phase;level;case` lines for old consumers.
 *
 * Tests are phase-major (M1 cases, then M2 cases, …), cases in suite order. Names are
 * `<op>/M<k>/L<n>/<case>` and only use [A-Za-z0-9_.-/]: case ids and module names are
 * restricted by the loaders, and the op name is checked here.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opdir/opdir.h"

enum list_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_CMAKE };

static void list_usage(FILE *out) {
  fprintf(out,
          "usage: phasegate list --op-dir DIR [--contract FILE] [--suite FILE]\n"
          "                      [--format text|json|cmake] [--levels L1,L2,...]\n"
          "\n"
          "Lists every (phase, case) test: <op>/M<k>/L<n>/<case>, phase-major, cases in\n"
          "suite order. --op-dir finds module_interfaces.yaml and adversarial_suite.json\n"
          "in DIR or DIR/eval; --contract/--suite name them explicitly (the suite\n"
          "defaults to adversarial_suite.json next to the contract).\n"
          "Exit 0, or 2 with findings on stderr when the contract or suite is invalid.\n");
}

/* "L1,L3" or "1,3" (L0..L5) -> bit mask of levels (bit n = level n). Returns 0 when malformed. */
static unsigned parse_levels(const char *s) {
  unsigned mask = 0;
  while (*s) {
    if (*s == 'L' || *s == 'l') s++;
    if (*s < '0' || *s > '5') return 0;
    mask |= 1u << (*s - '0');
    s++;
    if (*s == ',') {
      s++;
      if (!*s) return 0;
    } else if (*s) {
      return 0;
    }
  }
  return mask;
}

static int valid_name(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return 0;
  return 1;
}

/* Absolute path for the output (realpath), or the path as given if that fails. */
static void absolute(const char *path, char *out, size_t size) {
  char buf[PATH_MAX];
  if (realpath(path, buf)) snprintf(out, size, "%s", buf);
  else snprintf(out, size, "%s", path);
}

/* The JSON listing is written straight to the stream through a small buffer, byte
 * for byte what cJSON_Print of the equivalent tree gives (tabs, "key":\tvalue, ", "
 * between array elements; strings escaped as cJSON escapes them). Building that tree
 * cost ~17 allocations per test and printing it another copy of the text; this is
 * linear in the output and allocation-free. */
struct jw {
  FILE *out;
  size_t n;
  char buf[16384]; /* written out whenever full: no allocation, any listing size */
};

static void jw_raw(struct jw *w, const char *s, size_t len) {
  while (len) {
    if (w->n == sizeof w->buf) {
      fwrite(w->buf, 1, w->n, w->out);
      w->n = 0;
    }
    size_t k = sizeof w->buf - w->n;
    if (k > len) k = len;
    memcpy(w->buf + w->n, s, k);
    w->n += k;
    s += k;
    len -= k;
  }
}

static void jw_lit(struct jw *w, const char *s) { jw_raw(w, s, strlen(s)); }

static void jw_int(struct jw *w, int v) {
  char digits[16];
  int k = (int)sizeof digits;
  unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
  do {
    digits[--k] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) digits[--k] = '-';
  jw_raw(w, digits + k, sizeof digits - (size_t)k);
}

/* A JSON string as cJSON escapes it: the two specials, the five short escapes,
 * \u00xx for other control bytes; everything else (UTF-8 too) as is. */
static void jw_str(struct jw *w, const char *s) {
  jw_raw(w, "\"", 1);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char *run = p;
    while (*p >= 0x20 && *p != '"' && *p != '\\') p++;
    jw_raw(w, (const char *)run, (size_t)(p - run));
    if (!*p) break;
    char esc[8];
    switch (*p) {
      case '"': jw_raw(w, "\\\"", 2); break;
      case '\\': jw_raw(w, "\\\\", 2); break;
      case '\b': jw_raw(w, "\\b", 2); break;
      case '\f': jw_raw(w, "\\f", 2); break;
      case '\n': jw_raw(w, "\\n", 2); break;
      case '\r': jw_raw(w, "\\r", 2); break;
      case '\t': jw_raw(w, "\\t", 2); break;
      default:
        snprintf(esc, sizeof esc, "\\u%04x", *p);
        jw_raw(w, esc, 6);
    }
    p++;
  }
  jw_raw(w, "\"", 1);
}

/* `indent` tabs, "key":<tab> (keys here need no escaping). */
static void jw_key(struct jw *w, int indent, const char *key) {
  jw_raw(w, "\t\t\t", (size_t)indent);
  jw_raw(w, "\"", 1);
  jw_lit(w, key);
  jw_raw(w, "\":\t", 3);
}

static void jw_str_member(struct jw *w, int indent, const char *key, const char *val,
                          int last) {
  jw_key(w, indent, key);
  jw_str(w, val);
  jw_lit(w, last ? "\n" : ",\n");
}

static void jw_int_member(struct jw *w, int indent, const char *key, int val, int last) {
  jw_key(w, indent, key);
  jw_int(w, val);
  jw_lit(w, last ? "\n" : ",\n");
}

/* Writes the JSON listing (without the final newline). */
static void write_json(FILE *out, const char *op, const struct pg_contract *c,
                       const struct pg_suite *s, const char *contract_abs,
                       const char *suite_abs, unsigned levels) {
  struct jw jw = {out, 0, {0}};
  struct jw *w = &jw;
  jw_lit(w, "{\n");
  jw_int_member(w, 1, "schema_version", 1, 0);
  jw_str_member(w, 1, "op", op, 0);
  jw_int_member(w, 1, "module_count", c->n_modules, 0);
  jw_str_member(w, 1, "contract", contract_abs, 0);
  jw_str_member(w, 1, "suite", suite_abs, 0);
  jw_key(w, 1, "modules");
  jw_lit(w, "[");
  for (int k = 1; k <= c->n_modules; k++) {
    const struct pg_module *m = &c->modules[k - 1];
    char suffix[64];
    pg_phase_suffix(k, suffix, sizeof suffix);
    jw_lit(w, k > 1 ? ", {\n" : "{\n");
    jw_int_member(w, 3, "id", m->id, 0);
    jw_str_member(w, 3, "name", m->name ? m->name : "", 0);
    jw_str_member(w, 3, "suffix", suffix, 1);
    jw_lit(w, "\t\t}");
  }
  jw_lit(w, "],\n");
  jw_key(w, 1, "tests");
  jw_lit(w, "[");
  int first = 1;
  for (int k = 1; k <= c->n_modules; k++) {
    char suffix[64];
    pg_phase_suffix(k, suffix, sizeof suffix);
    for (int i = 0; i < s->n_cases; i++) {
      const struct pg_case *cs = &s->cases[i];
      if (!(levels & (1u << cs->level))) continue;
      jw_lit(w, first ? "{\n" : ", {\n");
      first = 0;
      /* The name's parts are [A-Za-z0-9_.-] (checked by the loaders and above), so
       * they need no escaping; the rest goes through jw_str like any string. */
      jw_key(w, 3, "name");
      jw_raw(w, "\"", 1);
      jw_lit(w, op);
      jw_raw(w, "/M", 2);
      jw_int(w, k);
      jw_raw(w, "/L", 2);
      jw_int(w, cs->level);
      jw_raw(w, "/", 1);
      jw_lit(w, cs->id);
      jw_raw(w, "\",\n", 3);
      jw_str_member(w, 3, "op", op, 0);
      jw_int_member(w, 3, "phase", k, 0);
      jw_str_member(w, 3, "suffix", suffix, 0);
      jw_int_member(w, 3, "level", cs->level, 0);
      jw_str_member(w, 3, "case", cs->id, 0);
      jw_key(w, 3, "labels");
      jw_lit(w, "[\"phasegate\", \"op_");
      jw_lit(w, op);
      jw_lit(w, "\", \"phase_M");
      jw_int(w, k);
      jw_lit(w, "\", \"level_L");
      jw_int(w, cs->level);
      jw_lit(w, "\"],\n");
      jw_str_member(w, 3, "file", suite_abs, 0);
      jw_int_member(w, 3, "line", cs->mark.line, 0);
      jw_key(w, 3, "precision");
      jw_lit(w, cs->precision ? "true\n" : "false\n");
      jw_lit(w, "\t\t}");
    }
  }
  jw_lit(w, "]\n}");
  fwrite(w->buf, 1, w->n, out);
}

int pg_cmd_list(int argc, char **argv) {
  const char *op_dir = NULL, *contract_arg = NULL, *suite_arg = NULL;
  enum list_format format = FORMAT_TEXT;
  unsigned levels = 0x3f; /* L0..L5 */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      list_usage(stdout);
      return PG_EXIT_PASS;
    }
    const char *val = NULL;
    if (strncmp(a, "--", 2) == 0 && strchr(a, '=')) {
      val = strchr(a, '=') + 1;
    } else if (i + 1 < argc) {
      val = argv[i + 1];
    }
    size_t klen = strchr(a, '=') ? (size_t)(strchr(a, '=') - a) : strlen(a);
#define IS_OPT(name) (klen == strlen(name) && strncmp(a, name, klen) == 0)
    if (!(IS_OPT("--op-dir") || IS_OPT("--contract") || IS_OPT("--suite") ||
          IS_OPT("--format") || IS_OPT("--levels")))
      return pg_cli_usage_error("list", "unknown option '%s' (see phasegate list --help)", a);
    if (!val) return pg_cli_usage_error("list", "%s needs a value", a);
    if (!strchr(a, '=')) i++;
    if (IS_OPT("--op-dir")) op_dir = val;
    else if (IS_OPT("--contract")) contract_arg = val;
    else if (IS_OPT("--suite")) suite_arg = val;
    else if (IS_OPT("--format")) {
      if (strcmp(val, "text") == 0) format = FORMAT_TEXT;
      else if (strcmp(val, "json") == 0) format = FORMAT_JSON;
      else if (strcmp(val, "cmake") == 0) format = FORMAT_CMAKE;
      else return pg_cli_usage_error("list", "--format must be text, json or cmake, not '%s'",
                                     val);
    } else {
      levels = parse_levels(val);
      if (!levels)
        return pg_cli_usage_error("list", "--levels takes L0..L5 separated by commas, not '%s'",
                                  val);
    }
#undef IS_OPT
  }

  char contract_path[4096] = "", suite_path[4096] = "";
  struct pg_error err;
  pg_error_clear(&err);
  char implied[4096];
  int bad = pg_cli_op_dir("list", &op_dir, contract_arg, suite_arg, implied, sizeof implied);
  if (bad) return bad;
  if (pg_op_paths_resolve(op_dir, contract_arg, suite_arg, contract_path, sizeof contract_path,
                          suite_path, sizeof suite_path, &err) != PG_OK) {
    fprintf(stderr, "phasegate list: error: %s\n", err.message);
    return PG_EXIT_ERROR;
  }

  struct pg_contract contract;
  struct pg_suite suite;
  struct pg_diags diags;
  pg_contract_init(&contract);
  pg_suite_init(&suite);
  pg_diags_init(&diags);
  int exit_code = PG_EXIT_ERROR;

  if (pg_cli_load_op("list", contract_path, suite_path, &contract, &suite, &diags) != PG_EXIT_PASS)
    goto done;
  const char *op = contract.op ? contract.op : suite.op;
  if (!valid_name(op)) {
    fprintf(stderr,
            "phasegate list: error: op name '%s' cannot be used in test names "
            "(use letters, digits, '_', '.', '-')\n",
            op ? op : "");
    goto done;
  }
  for (int k = 0; k < contract.n_modules; k++)
    if (contract.modules[k].id != k + 1) {
      fprintf(stderr, "phasegate list: error: module ids are not 1..%d in order\n",
              contract.n_modules);
      goto done;
    }

  char contract_abs[PATH_MAX], suite_abs[PATH_MAX];
  absolute(contract_path, contract_abs, sizeof contract_abs);
  absolute(suite_path, suite_abs, sizeof suite_abs);

  if (format == FORMAT_JSON) {
    write_json(stdout, op, &contract, &suite, contract_abs, suite_abs, levels);
    fputc('\n', stdout);
  } else {
    for (int k = 1; k <= contract.n_modules; k++)
      for (int i = 0; i < suite.n_cases; i++) {
        const struct pg_case *cs = &suite.cases[i];
        if (!(levels & (1u << cs->level))) continue;
        if (format == FORMAT_TEXT)
          printf("%s/M%d/L%d/%s  [phasegate;op_%s;phase_M%d;level_L%d]\n", op, k, cs->level,
                 cs->id, op, k, cs->level);
        else
          printf("%s/M%d/L%d/%s;%d;%d;%s\n", op, k, cs->level, cs->id, k, cs->level, cs->id);
      }
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "phasegate list: error: cannot write the listing\n");
    goto done;
  }
  exit_code = PG_EXIT_PASS;
done:
  pg_suite_reset(&suite);
  pg_contract_reset(&contract);
  pg_diags_reset(&diags);
  return exit_code;
}
