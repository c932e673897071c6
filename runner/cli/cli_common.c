/* phasegate CLI — helpers every subcommand shares (main.c and the cmd_*.c files sit above
 * this file): usage errors, option parsing, printing loader
 * findings and
 * loading an op's contract (and suite) with the one error convention of the CLI: the
 * findings, "FILE:LINE:COL: error: …", one per line on stderr, or — when the loader
 * failed before it could produce a finding (file missing, a directory, unreadable) —
 * one "phasegate <cmd>: error: FILE: …" line. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run/run.h"

int pg_cli_parse_opts(const char *cmd, int argc, char **argv, const struct pg_cli_opt *opts,
                      void (*usage)(FILE *out)) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return -1;
    }
    const struct pg_cli_opt *o = opts;
    while (o->name && strcmp(o->name, a) != 0) o++;
    if (!o->name) return pg_cli_usage_error(cmd, "unknown option '%s' (see --help)", a);
    if (i + 1 >= argc) return pg_cli_usage_error(cmd, "%s needs a value", a);
    *o->value = argv[++i];
  }
  return 0;
}

int pg_cli_op_dir(const char *cmd, const char **op_dir, const char *contract, const char *suite,
                  char *buf, size_t size) {
  if (*op_dir || contract) return PG_EXIT_PASS;
  struct pg_error err;
  pg_error_clear(&err);
  if (pg_op_dir_implied(suite, buf, size, &err) != PG_OK)
    return pg_cli_usage_error(cmd, "--op-dir DIR or --contract FILE is required (%s; see --help)",
                              err.message);
  *op_dir = buf;
  return PG_EXIT_PASS;
}

void pg_cli_print_diags(const struct pg_diags *d, enum pg_severity min) {
  char line[2 * PG_ERROR_MESSAGE_MAX];
  for (int i = 0; i < d->count; i++) {
    if (d->items[i].severity < min) continue;
    pg_diag_format(&d->items[i], line, sizeof line);
    fprintf(stderr, "%s\n", line);
  }
}

int pg_cli_load_op(const char *cmd, const char *contract_path, const char *suite_path,
                   struct pg_contract *c, struct pg_suite *s, struct pg_diags *d) {
  struct pg_error err;
  pg_error_clear(&err);
  /* the one validation `validate` runs too: list, gen and validate never disagree */
  int rc = pg_op_load(contract_path, suite_path, c, s, d, &err);
  pg_cli_print_diags(d, PG_SEV_WARNING); /* warnings of a valid pair, or every finding */
  if (rc == PG_OK) return PG_EXIT_PASS;
  if (d->n_errors == 0)
    fprintf(stderr, "phasegate %s: error: %s\n", cmd,
            err.message[0] ? err.message : pg_strerror(rc));
  return PG_EXIT_ERROR;
}

int pg_cli_parse_bytes(const char *s, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 0) || s[0] == '-') return -1;
  double mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
  else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024.0, end++;
  else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024.0 * 1024.0, end++;
  if (*end == 'i' && end[1] == 'B') end += 2;
  else if (*end == 'B' || *end == 'b') end++;
  if (*end || v * mul >= 18446744073709551616.0) return -1;
  *out = (uint64_t)(v * mul);
  return 0;
}

int pg_cli_parse_number(const char *cmd, const char *opt, const char *s, int positive,
                        double *out) {
  char *end;
  errno = 0;
  double v = s ? strtod(s, &end) : 0.0;
  if (!s || end == s || *end || errno == ERANGE || !isfinite(v) || v < 0 || (positive && v == 0))
    return positive ? pg_cli_usage_error(cmd, "%s needs a number > 0, got '%s'", opt, s ? s : "")
                    : pg_cli_usage_error(cmd, "%s needs a finite number >= 0, got '%s'", opt,
                                         s ? s : "(nothing)");
  *out = v;
  return PG_EXIT_PASS;
}

int pg_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "phasegate%s%s: error: ", cmd ? " " : "", cmd ? cmd : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  return PG_EXIT_ERROR;
}
