/* phasegate report — renders evaluation_report.json files into one static HTML page
 * (docs/report.md).
 *
 *   phasegate report [--out FILE.html] PATH...
 *   phasegate report --junit FILE.xml [--out FILE.html] PATH...
 *
 * PATH: a report file, or a directory searched recursively for evaluation_report.json
 * (a phase, an op, a whole build tree). Loading is the report room's
 * (pg_report_set_load), so other readers of reports share it; the page is
 * pg_report_html. --junit fills the failure messages of a `ctest --output-junit` file
 * from the reports (report/junit.c; the verify_* targets run it), and writes a page
 * only when --out is given too. Exit 0 when done (whatever the reports say), 2 on a
 * usage error, an unreadable or malformed report named as an argument, or a directory
 * without a usable report. A bad report found under a directory is a warning (and a
 * note on the page): one stray file must not hide a build tree's page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cli.h"
#include "report/report.h"

#define DEFAULT_OUT "phasegate-report.html"

static void usage(FILE *out) {
  fprintf(out,
          "usage: phasegate report [--out FILE.html] PATH...\n"
          "\n"
          "Renders phase reports into one self-contained HTML page (no script, no network):\n"
          "an op x phase x level matrix, then per phase and case the status, failure\n"
          "category, boundary, the metrics of every output, hints, the repro line, and for\n"
          "failing outputs an error heatmap and a histogram by |golden| magnitude\n"
          "(docs/report.md).\n"
          "\n"
          "PATH is an evaluation_report.json, or a directory searched recursively for them\n"
          "(a phase, an op's report directory, a whole build tree). Several may be given.\n"
          "\n"
          "options:\n"
          "  --out FILE   where to write the page (default: ./" DEFAULT_OUT "; '-' for\n"
          "               stdout); parent directories are created; the path is printed\n"
          "  --junit FILE.xml  fill the empty failure message of every failed phasegate case\n"
          "               test (<op>/M<k>/L<n>/<case>) in FILE.xml, as `ctest --output-junit`\n"
          "               wrote it, from the case's report: category, boundary, summary,\n"
          "               strongest hints, repro line; other tests and everything else in\n"
          "               the file are left unchanged, the file is replaced atomically.\n"
          "               No page is written unless --out is given as well\n"
          "  --           every argument after it is a PATH\n"
          "\n"
          "A report found under a directory that cannot be read or is not a phasegate\n"
          "report is skipped with a warning (and listed on the page).\n"
          "Exit codes: 0 page written (whatever the reports say), 2 error (usage, a report\n"
          "named as PATH that cannot be read or is not a phasegate report, a directory\n"
          "without a usable report).\n");
}

/* text into a path that is not a regular file: a symlink (its target is written), a
 * FIFO, /dev/null or /dev/stdout. A rename would replace the node itself. */
static int write_through(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  int ok = f && fputs(text, f) >= 0;
  int e = errno;
  if (f && fclose(f) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (!ok) pg_cli_usage_error("report", "%s: cannot write: %s", path, strerror(e));
  return ok ? PG_EXIT_PASS : PG_EXIT_ERROR;
}

/* text into path through <path>.tmp.<pid> and rename(), so a reader never sees half a
 * page; parent directories created. */
static int write_page(const char *path, const char *text) {
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return write_through(path, text);
  const char *slash = strrchr(path, '/');
  if (slash && slash != path) {
    char *dir = pg_path_fmt("%.*s", (int)(slash - path), path);
    if (!dir) return pg_cli_usage_error("report", "out of memory");
    int rc = pg_is_dir(dir) || pg_mkdir_p(dir) == 0;
    int e = errno;
    if (!rc) pg_cli_usage_error("report", "%s: cannot create directory: %s", dir, strerror(e));
    free(dir);
    if (!rc) return PG_EXIT_ERROR;
  }
  if (pg_is_dir(path)) return pg_cli_usage_error("report", "--out %s: is a directory", path);
  char *tmp = pg_path_fmt("%s.tmp.%ld", path, (long)getpid());
  if (!tmp) return pg_cli_usage_error("report", "out of memory");
  FILE *f = fopen(tmp, "w");
  int ok = f && fputs(text, f) >= 0;
  int e = errno;
  if (f && fclose(f) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = 0;
    e = errno;
  }
  if (!ok) {
    unlink(tmp);
    pg_cli_usage_error("report", "%s: cannot write: %s", path, strerror(e));
  }
  free(tmp);
  return ok ? PG_EXIT_PASS : PG_EXIT_ERROR;
}

int pg_cmd_report(int argc, char **argv) {
  const char *out = DEFAULT_OUT, *junit = NULL;
  int out_given = 0;
  const char **paths = calloc((size_t)argc + 1, sizeof *paths);
  if (!paths) return pg_cli_usage_error("report", "out of memory");
  int n = 0, rc = PG_EXIT_PASS, only_paths = 0;
  for (int i = 1; i < argc && rc == PG_EXIT_PASS; i++) {
    const char *a = argv[i];
    if (only_paths || a[0] != '-' || strcmp(a, "-") == 0) {
      paths[n++] = a;
    } else if (strcmp(a, "--") == 0) {
      only_paths = 1;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(paths);
      return PG_EXIT_PASS;
    } else if (strcmp(a, "--out") == 0) {
      if (i + 1 >= argc || !argv[i + 1][0]) rc = pg_cli_usage_error("report", "--out needs a value");
      else out = argv[++i], out_given = 1;
    } else if (strcmp(a, "--junit") == 0) {
      if (i + 1 >= argc || !argv[i + 1][0]) rc = pg_cli_usage_error("report", "--junit needs a value");
      else junit = argv[++i];
    } else {
      rc = pg_cli_usage_error("report", "unknown option '%s' (see phasegate report --help)", a);
    }
  }
  if (rc == PG_EXIT_PASS && n == 0)
    rc = pg_cli_usage_error("report", "give one or more reports or directories (see phasegate report --help)");
  struct pg_report_set set;
  pg_report_set_init(&set);
  struct pg_error err;
  pg_error_clear(&err);
  if (rc == PG_EXIT_PASS && pg_report_set_load(paths, n, &set, &err) != PG_OK)
    rc = pg_cli_usage_error("report", "%s", err.message);
  for (int i = 0; rc == PG_EXIT_PASS && i < set.n_skipped; i++)
    fprintf(stderr, "phasegate report: warning: %s (skipped)\n", set.skipped[i]);
  int filled = 0;
  if (rc == PG_EXIT_PASS && junit) {
    if (pg_report_junit_rewrite(junit, &set, &filled, &err) != PG_OK)
      rc = pg_cli_usage_error("report", "%s", err.message);
    else
      printf("phasegate report: %s: %d failure message%s filled from %d phase report%s\n", junit,
             filled, filled == 1 ? "" : "s", set.n, set.n == 1 ? "" : "s");
    if (rc == PG_EXIT_PASS && !out_given) {
      pg_report_set_reset(&set);
      free(paths);
      return rc;
    }
  }
  char *page = rc == PG_EXIT_PASS ? pg_report_html(&set) : NULL;
  if (rc == PG_EXIT_PASS && !page) rc = pg_cli_usage_error("report", "out of memory");
  if (rc == PG_EXIT_PASS && strcmp(out, "-") == 0) {
    if (fputs(page, stdout) < 0 || fflush(stdout) != 0)
      rc = pg_cli_usage_error("report", "cannot write to stdout: %s", strerror(errno));
  } else if (rc == PG_EXIT_PASS && (rc = write_page(out, page)) == PG_EXIT_PASS) {
    char *abs = realpath(out, NULL);
    printf("phasegate report: %d phase report%s -> %s\n", set.n, set.n == 1 ? "" : "s", abs ? abs : out);
    free(abs);
  }
  free(page);
  pg_report_set_reset(&set);
  free(paths);
  return rc;
}
