/* phasegate CLI entry point: dispatches to a subcommand (docs/design.md §9). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef PG_VERSION
#define PG_VERSION "0.0.0"
#endif
const char *const pg_cli_version = PG_VERSION;

struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
  int parses_eq; /* handles --opt=value itself (and can say "--flag takes no value") */
};

static const struct command commands[] = {
    {"validate", pg_cmd_validate, "check a contract (and suite), reporting every finding", 0},
    {"list", pg_cmd_list, "list every (phase, case) test the CMake layer registers", 1},
    {"run", pg_cmd_run, "run an impl against cumulative goldens for one phase", 1},
    {"selftest", pg_cmd_selftest, "composition verification: cumulative golden N vs op golden", 0},
    {"diff", pg_cmd_diff, "compare two dumped tensors (.npy / safetensors)", 0},
    {"gen", pg_cmd_gen, "write a case's generated primary inputs as .npy", 0},
    {"cache", pg_cmd_cache, "show, prune or clear the on-disk golden cache", 0},
    {"report", pg_cmd_report, "render evaluation reports (files or trees) into one HTML page", 0},
    {"serve", pg_cmd_serve, "keep plugin/worker impls warm across CTest tests (a daemon)", 0},
    {"shard", pg_cmd_shard, "plan or run one shard of the suite over many hosts (docs/fleet.md)", 0},
    {"merge", pg_cmd_merge, "merge shard results into one tree, JUnit and verdict", 0},
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate <command> [options]\n"
          "\n"
          "Per-phase verification of accelerator kernels built module by module.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "'phasegate <command> --help' (or 'phasegate help <command>') describes a\n"
          "command's options; every option that takes a value accepts --option=value\n"
          "as well as --option value.\n"
          "\n"
          "The seed runner's spellings are accepted as well:\n"
          "  phasegate --self-test --op-dir DIR [...]      = phasegate selftest --op-dir DIR [...]\n"
          "  phasegate --op-dir DIR --impl SPEC --up-to-module K [--inspect NAME] [...]\n"
          "                                                = phasegate run ...\n"
          "  (--inspect NAME prints every metric of output NAME per case and mode)\n"
          "  cd custom/<op>/eval && phasegate --suite adversarial_suite.json \\\n"
          "      --impl ../modules/<op>_module1_impl.py --up-to-module 1\n"
          "                                                = phasegate run, the op in ../ (no --op-dir;\n"
          "                                                  a bare PATH.py is python:PATH.py)\n"
          "\n"
          "Exit codes: 0 pass, 1 fail, 2 error (usage, contract, suite), 77 all skipped.\n"
          "'phasegate --version' prints the version.\n");
}

/* Every subcommand takes `--opt=value` as `--opt value`: split such arguments before
 * the subcommand parses them. `args` has room for 2 * argc + 1 pointers; the split
 * names live in `names` (argc slots of 64 bytes). */
static int split_eq(int argc, char **argv, char **args, char (*names)[64]) {
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *eq = strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
    if (i == 0 || !eq || eq - argv[i] >= 64) {
      args[n++] = argv[i];
      continue;
    }
    snprintf(names[i], 64, "%.*s", (int)(eq - argv[i]), argv[i]);
    args[n++] = names[i];
    args[n++] = (char *)eq + 1;
  }
  args[n] = NULL;
  return n;
}

static int dispatch(int (*run)(int, char **), int argc, char **argv) {
  char **args = calloc((size_t)argc * 2 + 1, sizeof *args);
  char (*names)[64] = calloc((size_t)argc, sizeof *names);
  if (!args || !names) {
    free(args);
    free(names);
    return pg_cli_usage_error(NULL, "out of memory");
  }
  int rc = run(split_eq(argc, argv, args, names), args);
  free(args);
  free(names);
  return rc;
}

/* `phasegate --op-dir D [--self-test] ...`: argv[0] is replaced by the subcommand name
 * and --self-test is dropped, so the subcommand parses the rest unchanged. */
static int seed_style(int argc, char **argv) {
  int self_test = 0, n = 1;
  for (int i = 1; i < argc; i++) self_test |= strcmp(argv[i], "--self-test") == 0;
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return pg_cli_usage_error(NULL, "out of memory");
  args[0] = self_test ? "selftest" : "run";
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--self-test") != 0) args[n++] = argv[i];
  int rc = self_test ? dispatch(pg_cmd_selftest, n, args) : pg_cmd_run(n, args);
  free(args);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return PG_EXIT_ERROR;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
    /* `phasegate help run` is `phasegate run --help` */
    for (size_t i = 0; argc > 2 && i < sizeof commands / sizeof *commands; i++)
      if (strcmp(argv[2], commands[i].name) == 0) {
        char *args[] = {argv[2], "--help", NULL};
        return commands[i].run(2, args);
      }
    if (argc > 2) {
      fprintf(stderr, "phasegate: error: unknown command '%s'\n\n", argv[2]);
      usage(stderr);
      return PG_EXIT_ERROR;
    }
    usage(stdout);
    return PG_EXIT_PASS;
  }
  if (strcmp(name, "--version") == 0) {
    printf("phasegate %s\n", pg_cli_version);
    return PG_EXIT_PASS;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(name, commands[i].name) == 0)
      return commands[i].parses_eq ? commands[i].run(argc - 1, argv + 1)
                                   : dispatch(commands[i].run, argc - 1, argv + 1);
  /* The seed runner has no subcommands: `--self-test` anywhere means selftest, any
   * other leading option means run (where --inspect NAME lives). */
  if (strncmp(name, "--", 2) == 0) return seed_style(argc, argv);
  fprintf(stderr, "phasegate: error: unknown command '%s'\n\n", name);
  usage(stderr);
  return PG_EXIT_ERROR;
}
