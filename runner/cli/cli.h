/* phasegate CLI — the subcommand table and helpers shared by the subcommands.
 * Only code under runner/cli/ prints and exits. */
#ifndef PHASEGATE_CLI_H
#define PHASEGATE_CLI_H

#include <stdio.h>

#include "opdir/opdir.h"

/* Exit codes, docs/design.md §8. */
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
int pg_cmd_cache(int argc, char **argv);
int pg_cmd_serve(int argc, char **argv);
int pg_cmd_report(int argc, char **argv);
int pg_cmd_shard(int argc, char **argv);
int pg_cmd_merge(int argc, char **argv);

/* "phasegate: error: <msg>" on stderr; returns PG_EXIT_ERROR. */
int pg_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

extern const char *const pg_cli_version;

/* One `--name VALUE` option of a subcommand (main splits --name=VALUE beforehand). */
struct pg_cli_opt {
  const char *name;   /* "--op-dir" */
  const char **value; /* set to the value; the last one given wins */
};

/* Parses argv[1..] against `opts` (terminated by {NULL, NULL}); --help / -h prints
 * usage(stdout). Returns 0 when parsed, -1 after printing help (the caller exits 0),
 * PG_EXIT_ERROR after printing a usage error naming the option. */
int pg_cli_parse_opts(const char *cmd, int argc, char **argv, const struct pg_cli_opt *opts,
                      void (*usage)(FILE *out));

/* A byte count as the options spell it: 1073741824, 512M, 1.5G, 64KiB, 2GB (K/M/G are
 * powers of 1024). 0, or -1 when `s` is not one. */
int pg_cli_parse_bytes(const char *s, uint64_t *out);

/* A finite number >= 0 (positive: > 0) for option `opt` of subcommand `cmd`:
 * PG_EXIT_PASS, or PG_EXIT_ERROR after printing a usage error naming the option. */
int pg_cli_parse_number(const char *cmd, const char *opt, const char *s, int positive,
                        double *out);

/* Neither --op-dir nor --contract given: the op directory that the current directory, or
 * --suite's (`suite`, may be NULL), implies (pg_op_dir_implied: the seed's runner run
 * from custom/<op>/eval/), written to buf and *op_dir pointed at it; nothing done when
 * either is given. PG_EXIT_PASS, or PG_EXIT_ERROR after "--op-dir DIR or --contract
 * FILE is required (no module_interfaces.yaml in …)". */
int pg_cli_op_dir(const char *cmd, const char **op_dir, const char *contract, const char *suite,
                  char *buf, size_t size);

/* The findings of `d` of severity >= min, formatted, one per line on stderr. Notes
 * (e.g. a dim without a default, normal in real pypto contracts) are `validate`'s;
 * the other commands print warnings and errors. */
void pg_cli_print_diags(const struct pg_diags *d, enum pg_severity min);

/* Loads the contract, then the suite against it when suite_path is non-NULL, and
 * prints the findings (warnings too); when a load fails without a finding (missing
 * file, a directory, …) prints "phasegate <cmd>: error: <what>". Returns PG_EXIT_PASS
 * or PG_EXIT_ERROR. The caller inits and resets c, s and d. */
int pg_cli_load_op(const char *cmd, const char *contract_path, const char *suite_path,
                   struct pg_contract *c, struct pg_suite *s, struct pg_diags *d);

#endif
