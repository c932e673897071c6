/* contract-check — the driver behind the malformed-contract catalogue
 * (tests/data/bad/contract/NAME.yaml + NAME.expected) and the good contracts.
 *
 *   contract-check [--cli PHASEGATE] FILE.yaml EXPECTED   bad: the first error line
 *   contract-check [--cli PHASEGATE] --good FILE.yaml     good: loads, no errors
 *
 * For a bad file it checks, through the API, that loading fails, that the first
 * error finding formats to exactly the line in EXPECTED, and that err (message,
 * line, column) agrees with it; with --cli it also runs `phasegate validate
 * --contract FILE` and requires exit status 2 and that same line first on stderr.
 * Paths are used as given, so the expected line holds the relative path the test
 * passes. Exit 0 = as expected, 1 = not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opdir/opdir.h"

static int fail(const char *file, const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "FAIL %s: ", file);
  fprintf(stderr, fmt, a ? a : "", b ? b : "");
  fprintf(stderr, "\n");
  return 1;
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
}

/* Runs `phasegate validate --contract file`; returns the exit status and the first
 * stderr line in first_line. */
static int run_cli(const char *exe, const char *file, char *first_line, size_t size) {
  int fds[2];
  first_line[0] = '\0';
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execl(exe, exe, "validate", "--contract", file, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  if (f) {
    if (fgets(first_line, (int)size, f)) chomp(first_line);
    char sink[4096];
    while (fgets(sink, sizeof sink, f)) {
    }
    fclose(f);
  } else {
    close(fds[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv) {
  const char *cli = NULL;
  int good = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--cli") == 0 && i + 1 < argc) cli = argv[++i];
    else if (strcmp(argv[i], "--good") == 0) good = 1;
    else break;
  }
  if (argc - i != (good ? 1 : 2)) {
    fprintf(stderr, "usage: contract-check [--cli PHASEGATE] FILE EXPECTED | --good FILE\n");
    return 2;
  }
  const char *file = argv[i];
  char expected[2048] = "";
  if (!good) {
    FILE *f = fopen(argv[i + 1], "r");
    if (!f || !fgets(expected, sizeof expected, f)) return fail(argv[i + 1], "cannot read %s%s", "", "");
    fclose(f);
    chomp(expected);
  }

  struct pg_contract c;
  struct pg_diags d;
  struct pg_error err;
  pg_contract_init(&c);
  pg_diags_init(&d);
  pg_error_clear(&err);
  int rc = pg_contract_load(file, &c, &d, &err);
  int bad = 0;
  const struct pg_diag *first = NULL;
  for (int k = 0; k < d.count && !first; k++)
    if (d.items[k].severity == PG_SEV_ERROR) first = &d.items[k];
  char line[4096] = "";
  if (first) pg_diag_format(first, line, sizeof line);

  if (good) {
    if (rc != PG_OK || d.n_errors != 0) bad = fail(file, "expected to load, got: %s%s", line[0] ? line : err.message, "");
  } else if (rc == PG_OK) {
    bad = fail(file, "loaded without an error%s%s", "", "");
  } else if (!first) {
    bad = fail(file, "failed (%s) without an error finding%s", err.message, "");
  } else if (strcmp(line, expected) != 0) {
    bad = fail(file, "first error\n  expected: %s\n  actual:   %s", expected, line);
  } else if (strcmp(err.message, line) != 0 || err.line != first->line ||
             err.column != first->column) {
    bad = fail(file, "err disagrees with the first finding: %s%s", err.message, "");
  }
  pg_contract_reset(&c);
  pg_diags_reset(&d);

  if (cli && !bad) {
    char cli_line[4096];
    int status = run_cli(cli, file, cli_line, sizeof cli_line);
    if (good && status != 0) {
      bad = fail(file, "phasegate validate failed: %s%s", cli_line, "");
    } else if (!good && status != 2) {
      char st[32];
      snprintf(st, sizeof st, "%d", status);
      bad = fail(file, "phasegate validate exited %s, expected 2 (%s)", st, cli_line);
    } else if (!good && strcmp(cli_line, expected) != 0) {
      bad = fail(file, "phasegate validate's first line\n  expected: %s\n  actual:   %s", expected,
                 cli_line);
    }
  }
  if (!bad) printf("ok %s\n", file);
  return bad;
}
