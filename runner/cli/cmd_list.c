/* phasegate list — every (phase, case) test the CMake layer registers, in the stable
 * formats of docs/interfaces.md: JSON for discovery (parsed with string(JSON)), one
 * line per test for humans, and `name;phase;level;case` lines for old consumers.
 *
 * Tests are phase-major (M1 cases, then M2 cases, …), cases in suite order. Names are
 * `<op>/M<k>/L<n>/<case>` and only use [A-Za-z0-9_.-/]: case ids and module names are
 * restricted by the loaders, and the op name is checked here.
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "phasegate/spec.h"

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

/* "L1,L3" or "1,3" -> bit mask of levels (bit n = level n). Returns 0 when malformed. */
static unsigned parse_levels(const char *s) {
  unsigned mask = 0;
  while (*s) {
    if (*s == 'L' || *s == 'l') s++;
    if (*s < '1' || *s > '5') return 0;
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

static int add_str(cJSON *obj, const char *key, const char *val) {
  return cJSON_AddStringToObject(obj, key, val) != NULL;
}
static int add_num(cJSON *obj, const char *key, double val) {
  return cJSON_AddNumberToObject(obj, key, val) != NULL;
}

/* Builds the JSON listing; NULL on out of memory. */
static cJSON *build_json(const char *op, const struct pg_contract *c, const struct pg_suite *s,
                         const char *contract_abs, const char *suite_abs, unsigned levels) {
  cJSON *root = cJSON_CreateObject();
  int ok = root != NULL;
  ok = ok && add_num(root, "schema_version", 1) && add_str(root, "op", op) &&
       add_num(root, "module_count", c->n_modules) && add_str(root, "contract", contract_abs) &&
       add_str(root, "suite", suite_abs);
  cJSON *mods = ok ? cJSON_AddArrayToObject(root, "modules") : NULL;
  ok = ok && mods;
  for (int k = 1; ok && k <= c->n_modules; k++) {
    const struct pg_module *m = &c->modules[k - 1];
    char suffix[64];
    pg_phase_suffix(k, suffix, sizeof suffix);
    cJSON *jm = cJSON_CreateObject();
    ok = jm && cJSON_AddItemToArray(mods, jm);
    ok = ok && add_num(jm, "id", m->id) && add_str(jm, "name", m->name ? m->name : "") &&
         add_str(jm, "suffix", suffix);
  }
  cJSON *tests = ok ? cJSON_AddArrayToObject(root, "tests") : NULL;
  ok = ok && tests;
  for (int k = 1; ok && k <= c->n_modules; k++) {
    char suffix[64];
    pg_phase_suffix(k, suffix, sizeof suffix);
    for (int i = 0; ok && i < s->n_cases; i++) {
      const struct pg_case *cs = &s->cases[i];
      if (!(levels & (1u << cs->level))) continue;
      char name[512], phase_label[32], level_label[32], op_label[256];
      snprintf(name, sizeof name, "%s/M%d/L%d/%s", op, k, cs->level, cs->id);
      snprintf(op_label, sizeof op_label, "op_%s", op);
      snprintf(phase_label, sizeof phase_label, "phase_M%d", k);
      snprintf(level_label, sizeof level_label, "level_L%d", cs->level);
      const char *labels[] = {"phasegate", op_label, phase_label, level_label};
      cJSON *t = cJSON_CreateObject();
      ok = t && cJSON_AddItemToArray(tests, t);
      ok = ok && add_str(t, "name", name) && add_str(t, "op", op) && add_num(t, "phase", k) &&
           add_str(t, "suffix", suffix) && add_num(t, "level", cs->level) &&
           add_str(t, "case", cs->id);
      cJSON *jl = ok ? cJSON_CreateStringArray(labels, 4) : NULL;
      ok = ok && jl && cJSON_AddItemToObject(t, "labels", jl);
      ok = ok && add_str(t, "file", suite_abs) && add_num(t, "line", cs->mark.line) &&
           cJSON_AddBoolToObject(t, "precision", cs->precision) != NULL;
    }
  }
  if (!ok) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

int pg_cmd_list(int argc, char **argv) {
  const char *op_dir = NULL, *contract_arg = NULL, *suite_arg = NULL;
  enum list_format format = FORMAT_TEXT;
  unsigned levels = 0x3e; /* L1..L5 */
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
        return pg_cli_usage_error("list", "--levels takes L1..L5 separated by commas, not '%s'",
                                  val);
    }
#undef IS_OPT
  }

  char contract_path[4096] = "", suite_path[4096] = "";
  struct pg_error err;
  pg_error_clear(&err);
  if (!op_dir && !contract_arg)
    return pg_cli_usage_error("list", "give --op-dir DIR or --contract FILE (see --help)");
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
    cJSON *root = build_json(op, &contract, &suite, contract_abs, suite_abs, levels);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
      fprintf(stderr, "phasegate list: error: out of memory\n");
      goto done;
    }
    fputs(text, stdout);
    fputc('\n', stdout);
    cJSON_free(text);
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
