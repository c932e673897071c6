/* phasegate CLI — the subcommand table and helpers shared by the subcommands.
 * Only code under runner/cli/ prints and exits. */
#ifndef PHASEGATE_CLI_H
#define PHASEGATE_CLI_H

#include <stdio.h>

/* Exit codes, DESIGN.md §8. */
enum {
  PG_EXIT_PASS = 0,
  PG_EXIT_FAIL = 1,
  PG_EXIT_ERROR = 2,
  PG_EXIT_SKIPPED = 77,
};

/* Each subcommand: argv[0] is the subcommand name; returns the process exit code. */
int pg_cmd_validate(int argc, char **argv);
int pg_cmd_list(int argc, char **argv);
int pg_cmd_run(int argc, char **argv);
int pg_cmd_selftest(int argc, char **argv);
int pg_cmd_diff(int argc, char **argv);
int pg_cmd_gen(int argc, char **argv);

/* "phasegate: error: <msg>" on stderr; returns PG_EXIT_ERROR. */
int pg_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

extern const char *const pg_cli_version;

#endif
