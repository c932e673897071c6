/* phasegate tests — a fake `phasegate` CLI for testing cmake/PhaseGate.cmake without
 * the real runner (the idea of CMake's fake_gtest): the module only depends on the
 * CLI's behaviour, so this program imitates it under control of files and env vars.
 *
 *   list --op-dir D ...   prints D/fake_list.json (exit 2 with a message when
 *                         D/fake_list_fail exists)
 *   validate --op-dir D   exit 2 when D/fake_invalid exists, else 0
 *   selftest              exit 0
 *   run ... --case C --up-to-module K
 *       --implemented-phases P        with K > P: the real runner's "not implemented yet"
 *                                     lines, exit 77, nothing else (no lock, no lease)
 *       PHASEGATE_FAKE_FAIL=C1,C2@K   these cases fail (exit 1), optionally only at K
 *       PHASEGATE_FAKE_SKIP=...       these cases print "[phasegate] SKIPPED" (exit 77)
 *       PHASEGATE_FAKE_DEVLOCK=DIR    hold DIR/dev<id> for 300 ms; exit 1 if another
 *                                     test holds the same device id (resource test)
 *       --serve-control DIR           prints "fake phasegate: leased from DIR" when a fake
 *                                     daemon runs there (DIR/fake_serve_running), else
 *                                     "fake phasegate: standalone"; the result is the same
 *   serve --control DIR [--impl S ...]  the daemon's start: creates DIR/fake_serve_running,
 *                                     exit 0 ("running on DIR"); exit 2 without --control
 *                                     or with a non-persistent --impl (as the real one);
 *   serve --control DIR --stop    removes the marker, exit 0 (also when none runs)
 *       PHASEGATE_FAKE_SERVE_FAIL=start|stop  that one exits 1 with "phasegate serve:
 *                                     error: ..." (a start that fails leaves no daemon)
 *   run ... --report-dir D        creates D (the real runner writes its reports there)
 *   report --junit F PATH...      exit 0, F unchanged; report --out F PATH... writes F
 *       PHASEGATE_FAKE_REPORT_FAIL=1  both exit 2 with "phasegate report: error: ..."
 *   PHASEGATE_FAKE_LOG=FILE      every invocation appends one JSON array of its argv
 *                                (plus "device=<id>" and "cwd=<dir>") so tests can check
 *                                quoting and where each command ran.
 * Not part of phasegate; built only for tests/cmake. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Appends S as a JSON string to BUF (bounded). */
static void json_str(char *buf, size_t cap, const char *s) {
  size_t n = strlen(buf);
  if (n + 2 >= cap) return;
  buf[n++] = '"';
  for (; *s && n + 8 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[n++] = '\\';
      buf[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", c);
    } else {
      buf[n++] = (char)c;
    }
  }
  buf[n++] = '"';
  buf[n] = '\0';
}

static const char *opt(int argc, char **argv, const char *name) {
  for (int i = 2; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static int file_exists(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
  return access(path, F_OK) == 0;
}

/* Device id the way the real runner finds it: CTEST_RESOURCE_GROUP_0 names the
 * types, CTEST_RESOURCE_GROUP_0_<TYPE> holds "id:<id>,slots:<n>". */
static int device_id(void) {
  const char *types = getenv("CTEST_RESOURCE_GROUP_0");
  if (!types || !*types) return 0;
  char type[64], var[128];
  size_t i = 0;
  for (; types[i] && types[i] != ',' && i + 1 < sizeof type; i++)
    type[i] = (char)(types[i] >= 'a' && types[i] <= 'z' ? types[i] - 32 : types[i]);
  type[i] = '\0';
  snprintf(var, sizeof var, "CTEST_RESOURCE_GROUP_0_%s", type);
  const char *v = getenv(var);
  if (!v || strncmp(v, "id:", 3) != 0) return -1;
  return atoi(v + 3);
}

/* True when LIST (comma separated) holds CASE or CASE@K. */
static int listed(const char *list, const char *case_id, const char *k) {
  if (!list || !case_id) return 0;
  char item[512];
  while (*list) {
    size_t n = strcspn(list, ",");
    if (n < sizeof item) {
      memcpy(item, list, n);
      item[n] = '\0';
      char *at = strchr(item, '@');
      if (at) *at = '\0';
      if (strcmp(item, case_id) == 0 && (!at || (k && strcmp(at + 1, k) == 0))) return 1;
    }
    list += n;
    if (*list == ',') list++;
  }
  return 0;
}

static void log_call(int argc, char **argv, int dev) {
  const char *path = getenv("PHASEGATE_FAKE_LOG");
  if (!path) return;
  static char buf[65536];
  strcpy(buf, "[");
  for (int i = 1; i < argc; i++) {
    json_str(buf, sizeof buf - 64, argv[i]);
    strcat(buf, ",");
  }
  char d[32];
  snprintf(d, sizeof d, "device=%d", dev);
  json_str(buf, sizeof buf - 64, d);
  strcat(buf, ",");
  char cwd[4096], c[4200];
  snprintf(c, sizeof c, "cwd=%s", getcwd(cwd, sizeof cwd) ? cwd : "?");
  json_str(buf, sizeof buf - 8, c);
  strcat(buf, "]\n");
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, buf, strlen(buf)); /* one write: whole lines under -j */
  (void)w;
  close(fd);
}

static int cmd_list(const char *dir) {
  if (file_exists(dir, "fake_list_fail")) {
    fprintf(stderr, "fake phasegate: %s/module_interfaces.yaml:3:1: error: broken on purpose\n",
            dir);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/fake_list.json", dir ? dir : ".");
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fake phasegate: cannot open %s\n", path);
    return 2;
  }
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, stdout);
  fclose(f);
  return 0;
}

static int cmd_run(int argc, char **argv, int dev) {
  const char *case_id = opt(argc, argv, "--case");
  const char *k = opt(argc, argv, "--up-to-module");
  const char *lockdir = getenv("PHASEGATE_FAKE_DEVLOCK");
  const char *implemented = opt(argc, argv, "--implemented-phases");
  int rc = 0;
  if (implemented && k && atoi(k) > atoi(implemented)) {
    printf("[SKIP] fake M%s %s  M%s not implemented yet (PHASES %s): the impl was not called\n",
           k, case_id ? case_id : "?", k, implemented);
    printf("[phasegate] SKIPPED fake M%s: M%s not implemented yet (PHASES %s); 1 case(s) "
           "listed, not run\n", k, k, implemented);
    return 77;
  }
  if (lockdir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/dev%d", lockdir, dev);
    if (mkdir(path, 0755) != 0) {
      printf("fake phasegate: device %d is in use by another test (%s)\n", dev,
             strerror(errno));
      return 1;
    }
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    rmdir(path);
  }
  const char *report_dir = opt(argc, argv, "--report-dir");
  if (report_dir) mkdir(report_dir, 0755);
  const char *serve = opt(argc, argv, "--serve-control");
  if (serve) {
    if (file_exists(serve, "fake_serve_running"))
      printf("fake phasegate: leased from %s\n", serve);
    else
      printf("fake phasegate: standalone\n");
  }
  if (listed(getenv("PHASEGATE_FAKE_FAIL"), case_id, k)) {
    printf("fake phasegate: case %s FAIL at M%s\n", case_id, k ? k : "?");
    rc = 1;
  } else if (listed(getenv("PHASEGATE_FAKE_SKIP"), case_id, k)) {
    printf("[phasegate] SKIPPED case %s: every mode unavailable\n", case_id);
    rc = 77;
  } else {
    printf("fake phasegate: case %s PASS at M%s (device %d)\n", case_id ? case_id : "?",
           k ? k : "?", dev);
  }
  return rc;
}

/* The fake `phasegate report`: --out F writes a page, --junit F leaves F alone. */
static int cmd_report(int argc, char **argv) {
  if (getenv("PHASEGATE_FAKE_REPORT_FAIL")) {
    fprintf(stderr, "phasegate report: error: fake failure\n");
    return 2;
  }
  const char *out = opt(argc, argv, "--out");
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f) return 2;
    fputs("<!doctype html><title>fake</title>\n", f);
    fclose(f);
  }
  return 0;
}

/* The fake `phasegate serve`: a marker file stands for the daemon. */
static int cmd_serve(int argc, char **argv) {
  const char *control = opt(argc, argv, "--control");
  const char *impl = opt(argc, argv, "--impl");
  int stop = 0;
  for (int i = 2; i < argc; i++) stop |= strcmp(argv[i], "--stop") == 0;
  if (!control || !*control) {
    fprintf(stderr, "phasegate serve: usage error: --control DIR is required\n");
    return 2;
  }
  char marker[4096];
  snprintf(marker, sizeof marker, "%s/fake_serve_running", control);
  const char *fail = getenv("PHASEGATE_FAKE_SERVE_FAIL");
  if (fail && strcmp(fail, stop ? "stop" : "start") == 0) {
    fprintf(stderr, "phasegate serve: error: fake %s failure on %s\n", fail, control);
    return 1;
  }
  if (stop) {
    if (unlink(marker) == 0) printf("phasegate serve: stopped (pid 0)\n");
    else printf("phasegate serve: not running on %s\n", control);
    return 0;
  }
  if (impl && strncmp(impl, "worker:", 7) != 0 && strncmp(impl, "plugin:", 7) != 0) {
    fprintf(stderr, "phasegate serve: usage error: --impl: '%s' is not a persistent impl\n",
            impl);
    return 2;
  }
  if (mkdir(control, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "phasegate serve: error: cannot create %s: %s\n", control, strerror(errno));
    return 1;
  }
  int fd = open(marker, O_WRONLY | O_CREAT, 0600);
  if (fd < 0) {
    fprintf(stderr, "phasegate serve: error: cannot create %s: %s\n", marker, strerror(errno));
    return 1;
  }
  close(fd);
  printf("phasegate serve: running on %s (pid 0)\n", control);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fake_phasegate list|run|validate|selftest|serve ...\n");
    return 2;
  }
  int dev = device_id();
  log_call(argc, argv, dev);
  const char *dir = opt(argc, argv, "--op-dir");
  if (strcmp(argv[1], "list") == 0) return cmd_list(dir);
  if (strcmp(argv[1], "run") == 0) return cmd_run(argc, argv, dev);
  if (strcmp(argv[1], "validate") == 0) {
    if (file_exists(dir, "fake_invalid")) {
      printf("fake phasegate: contract invalid\n");
      return 2;
    }
    return 0;
  }
  if (strcmp(argv[1], "selftest") == 0) return 0;
  if (strcmp(argv[1], "serve") == 0) return cmd_serve(argc, argv);
  if (strcmp(argv[1], "report") == 0) return cmd_report(argc, argv);
  fprintf(stderr, "fake phasegate: unknown command %s\n", argv[1]);
  return 2;
}
