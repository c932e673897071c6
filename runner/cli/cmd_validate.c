/* phasegate validate — checks a contract (and its suite, when there is one) and
 * prints every finding, one per line, "FILE:LINE:COL: error: what (rule N)", on
 * stderr; on success a one-line summary on stdout. Exit 0 when nothing is an error,
 * 2 otherwise (docs/design.md §3, §9). `--format json` prints the findings as JSON on
 * stdout instead, for tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "cli.h"
#include "report/report.h"
#include "run/run.h"
#include "opdir/opdir.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate validate (--op-dir DIR | --contract FILE) [--suite FILE]\n"
          "                          [--format text|json]\n"
          "\n"
          "Loads module_interfaces.yaml (and adversarial_suite.json when present) and\n"
          "reports every finding as FILE:LINE:COL: error: what (rule N) on stderr.\n"
          "\n"
          "  --op-dir DIR     find both files in DIR or DIR/eval\n"
          "  --contract FILE  the contract (module_interfaces.yaml); wins over --op-dir\n"
          "  --suite FILE     the suite (default: adversarial_suite.json next to the\n"
          "                   contract, checked when it exists)\n"
          "  --format json    print {status, op, findings: [...]} on stdout\n"
          "  --python PATH    interpreter of eval/test_inputs.py, whose make_inputs(case)\n"
          "                   is called dry per case: a knob it never reads is a warning\n"
          "                   (default $PHASEGATE_PYTHON, else python3)\n"
          "\n"
          "Exit: 0 valid (warnings allowed), 2 any error.\n");
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *sev_name(enum pg_severity s) {
  return s == PG_SEV_ERROR ? "error" : s == PG_SEV_WARNING ? "warning" : "note";
}

static void print_json(const struct pg_diags *d, const struct pg_contract *c, int ok,
                       const char *extra_error) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return;
  cJSON_AddStringToObject(root, "status", ok ? "OK" : "ERROR");
  if (c->op) cJSON_AddStringToObject(root, "op", c->op);
  cJSON_AddNumberToObject(root, "modules", c->n_modules);
  cJSON_AddNumberToObject(root, "errors", d->n_errors + (extra_error ? 1 : 0));
  cJSON_AddNumberToObject(root, "warnings", d->n_warnings);
  cJSON *arr = cJSON_AddArrayToObject(root, "findings");
  for (int i = 0; arr && i < d->count; i++) {
    const struct pg_diag *g = &d->items[i];
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddStringToObject(o, "file", g->file);
    cJSON_AddNumberToObject(o, "line", g->line);
    cJSON_AddNumberToObject(o, "column", g->column);
    cJSON_AddStringToObject(o, "severity", sev_name(g->severity));
    cJSON_AddStringToObject(o, "message", g->message);
    if (g->rule) cJSON_AddStringToObject(o, "rule", g->rule);
    cJSON_AddItemToArray(arr, o);
  }
  if (extra_error && arr) {
    cJSON *o = cJSON_CreateObject();
    if (o) {
      cJSON_AddStringToObject(o, "severity", "error");
      cJSON_AddStringToObject(o, "message", extra_error);
      cJSON_AddItemToArray(arr, o);
    }
  }
  char *text = cJSON_Print(root);
  if (text) printf("%s\n", text);
  free(text);
  cJSON_Delete(root);
}

int pg_cmd_validate(int argc, char **argv) {
  const char *op_dir = NULL, *contract_arg = NULL, *suite_arg = NULL, *format = "text";
  const char *python = NULL;
  const struct pg_cli_opt opts[] = {{"--op-dir", &op_dir},
                                    {"--python", &python},
                                    {"--contract", &contract_arg},
                                    {"--suite", &suite_arg},
                                    {"--format", &format},
                                    {NULL, NULL}};
  int parsed = pg_cli_parse_opts("validate", argc, argv, opts, usage);
  if (parsed) return parsed < 0 ? PG_EXIT_PASS : parsed;
  if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
    return pg_cli_usage_error("validate", "--format must be text or json, not '%s'", format);
  char implied[4096];
  int bad = pg_cli_op_dir("validate", &op_dir, contract_arg, suite_arg, implied, sizeof implied);
  if (bad) return bad;
  int json = strcmp(format, "json") == 0;

  char contract_path[4096], suite_path[4096];
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_op_paths_resolve(op_dir, contract_arg, suite_arg, contract_path, sizeof contract_path,
                          suite_path, sizeof suite_path, &err) != PG_OK)
    return pg_cli_usage_error("validate", "%s", err.message);
  /* The suite is optional here unless named explicitly. */
  if (!suite_arg && !file_exists(suite_path)) suite_path[0] = '\0';

  struct pg_diags diags;
  pg_diags_init(&diags);
  struct pg_contract c;
  pg_contract_init(&c);
  const char *fatal = NULL; /* an error that has no finding (file missing, …) */
  char fatal_buf[PG_ERROR_MESSAGE_MAX + 32];
  int n_cases = -1;

  struct pg_suite suite;
  pg_suite_init(&suite);
  /* The one validation list, gen and run share (run/check.c). */
  int rc = pg_op_load(contract_path, suite_path[0] ? suite_path : NULL, &c, &suite, &diags, &err);
  if (rc != PG_OK && diags.n_errors == 0) {
    snprintf(fatal_buf, sizeof fatal_buf, "%s", err.message);
    fatal = fatal_buf;
  }
  if (rc == PG_OK && suite_path[0]) n_cases = suite.n_cases;
  /* an op with eval/test_inputs.py: which knobs make_inputs never reads */
  if (rc == PG_OK && suite_path[0] &&
      pg_suite_check_knobs(&c, &suite, python, pg_redact_numbers, &diags) != PG_OK) {
    snprintf(fatal_buf, sizeof fatal_buf, "out of memory");
    fatal = fatal_buf;
  }
  pg_suite_reset(&suite);

  int ok = diags.n_errors == 0 && !fatal;
  if (json) {
    print_json(&diags, &c, ok, fatal);
  } else {
    pg_cli_print_diags(&diags, PG_SEV_NOTE);
    if (fatal) fprintf(stderr, "phasegate validate: error: %s\n", fatal);
    if (ok) {
      char cases[48] = ", no suite checked";
      if (n_cases >= 0) snprintf(cases, sizeof cases, ", %d case%s", n_cases, n_cases == 1 ? "" : "s");
      char warn[48] = "";
      if (diags.n_warnings)
        snprintf(warn, sizeof warn, " (%d warning%s)", diags.n_warnings,
                 diags.n_warnings == 1 ? "" : "s");
      printf("%s: %d module%s, %d primary input%s%s \xE2\x80\x94 OK%s\n", c.op ? c.op : "?",
             c.n_modules, c.n_modules == 1 ? "" : "s", c.n_primary, c.n_primary == 1 ? "" : "s",
             cases, warn);
    } else if (diags.n_errors > 0) {
      fprintf(stderr, "phasegate validate: %d error%s, %d warning%s\n", diags.n_errors,
              diags.n_errors == 1 ? "" : "s", diags.n_warnings, diags.n_warnings == 1 ? "" : "s");
    }
  }
  pg_contract_reset(&c);
  pg_diags_reset(&diags);
  return ok ? PG_EXIT_PASS : PG_EXIT_ERROR;
}
