/* phasegate — the unit-test runner behind pg_test.h: registry, fork-per-test, TAP. */
#include "pg_test.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG_TEST_MAX 1024
#define PG_TEST_SKIP_STATUS 77

struct pg_test_entry {
  const char *name;
  pg_test_fn fn;
  const char *file;
  int line;
};

/* The registry is the one piece of global state: constructors fill it before main. */
static struct pg_test_entry registry[PG_TEST_MAX];
static int registry_count;
static char tmpdir[4096];

void pg_test_register(const char *name, pg_test_fn fn, const char *file, int line) {
  if (registry_count == PG_TEST_MAX) {
    fprintf(stderr, "pg_test: too many tests (max %d)\n", PG_TEST_MAX);
    abort();
  }
  registry[registry_count++] = (struct pg_test_entry){name, fn, file, line};
}

void pg_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "# %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fflush(stderr);
  exit(1);
}

void pg_test_skip(const char *reason) {
  printf("# SKIP %s\n", reason);
  fflush(stdout);
  exit(PG_TEST_SKIP_STATUS);
}

const char *pg_test_data(const char *relative) {
  static _Thread_local char buf[4096];
#ifdef PG_TEST_DATA_DIR
  snprintf(buf, sizeof buf, "%s/%s", PG_TEST_DATA_DIR, relative);
#else
  snprintf(buf, sizeof buf, "tests/data/%s", relative);
#endif
  return buf;
}

const char *pg_test_tmpdir(void) {
  if (!tmpdir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/pg_test_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) pg_test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
  }
  return tmpdir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int run_one(const struct pg_test_entry *t, int timeout_s, int fork_tests) {
  if (!fork_tests) {
    t->fn();
    return 0;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    alarm((unsigned)timeout_s);
    t->fn();
    if (tmpdir[0]) nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    fprintf(stderr, "# %s: killed by signal %d%s\n", t->name, sig,
            sig == SIGALRM ? " (timeout)" : "");
  }
  return 1;
}

int main(int argc, char **argv) {
  int timeout_s = 120, fork_tests = 1, list = 0;
  const char *only[256];
  int n_only = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--list") == 0) list = 1;
    else if (strcmp(argv[i], "--no-fork") == 0) fork_tests = 0;
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) timeout_s = atoi(argv[++i]);
    else if (n_only < 256) only[n_only++] = argv[i];
  }
  if (list) {
    for (int i = 0; i < registry_count; i++) printf("%s\n", registry[i].name);
    return 0;
  }
  int selected = 0;
  for (int i = 0; i < registry_count; i++) {
    int keep = n_only == 0;
    for (int j = 0; j < n_only; j++) keep |= strcmp(only[j], registry[i].name) == 0;
    selected += keep;
  }
  printf("1..%d\n", selected);
  int n = 0, failed = 0, skipped = 0;
  for (int i = 0; i < registry_count; i++) {
    int keep = n_only == 0;
    for (int j = 0; j < n_only; j++) keep |= strcmp(only[j], registry[i].name) == 0;
    if (!keep) continue;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = run_one(&registry[i], timeout_s, fork_tests);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    n++;
    if (rc == 0) printf("ok %d - %s (%.1f ms)\n", n, registry[i].name, ms);
    else if (rc == PG_TEST_SKIP_STATUS) {
      printf("ok %d - %s # SKIP\n", n, registry[i].name);
      skipped++;
    } else {
      printf("not ok %d - %s (%s:%d)\n", n, registry[i].name, registry[i].file, registry[i].line);
      failed++;
    }
    fflush(stdout);
  }
  if (n_only && selected == 0) {
    fprintf(stderr, "pg_test: no test matched\n");
    return 1;
  }
  printf("# %d passed, %d failed, %d skipped\n", n - failed - skipped, failed, skipped);
  return failed ? 1 : 0;
}
