/* tests/serve: helpers shared by the daemon tests and the throughput bench — running
 * the phasegate CLI, finding processes, leasing and calling. Header-only (static). */
#ifndef PG_TESTS_SERVE_UTIL_H
#define PG_TESTS_SERVE_UTIL_H

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/impl.h"
#include "impl/proc.h"
#include "serve/serve.h"
#include "serve/daemon.h"

extern char **environ;

/* The program of a worker:/plugin: spec, as the impl adapter's hook gives it (the tests
 * write specs as a user would). Free it with pg_proc_program_reset. */
static inline int su_program(const char *spec, struct pg_proc_program *prog,
                             struct pg_error *err) {
  struct pg_impl impl;
  memset(prog, 0, sizeof *prog);
  int rc = pg_impl_parse(spec, &impl, err);
  return rc == PG_OK ? pg_impl_process(&impl, prog, err) : rc;
}

/* pg_serve_lease of a spec's program. */
static inline int su_lease(int conn, const char *spec, const char *mode, int device,
                           uint64_t rlimit_as, double start_timeout_s, struct pg_proc *p,
                           struct pg_proc_result *start_fail, struct pg_error *err) {
  struct pg_proc_program prog;
  int rc = su_program(spec, &prog, err);
  if (rc == PG_OK)
    rc = pg_serve_lease(conn, &prog, mode, device, rlimit_as, start_timeout_s, p, start_fail,
                        err);
  pg_proc_program_reset(&prog);
  return rc;
}

/* pg_proc_argv_build of a spec's program. */
static inline int su_argv(const char *spec, const char *mode, int device, struct pg_proc_argv *a,
                          struct pg_error *err) {
  struct pg_proc_program prog;
  int rc = su_program(spec, &prog, err);
  if (rc == PG_OK) rc = pg_proc_argv_build(&prog, NULL, mode, device, a, err);
  pg_proc_program_reset(&prog);
  return rc;
}

static inline double su_now_ms(void) { return pg_now_ms(); }

/* Runs argv (NULL-ended), its stdout+stderr into out (NUL-terminated). Reading to EOF
 * proves a detached daemon kept none of the pipe. Exit code, or -1 when the output did
 * not end within 30 s. */
static inline int su_run(const char *const *argv, char *out, size_t size) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
  pid_t pid;
  int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (e != 0) {
    close(pfd[0]);
    return -1;
  }
  size_t len = 0;
  double until = su_now_ms() + 30000;
  int eof = 0;
  while (!eof && su_now_ms() < until) {
    struct pollfd p = {pfd[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char tmp[4096];
    ssize_t got = read(pfd[0], tmp, sizeof tmp);
    if (got <= 0) {
      eof = 1;
      break;
    }
    size_t k = (size_t)got < size - 1 - len ? (size_t)got : size - 1 - len;
    memcpy(out + len, tmp, k);
    len += k;
  }
  out[len] = '\0';
  close(pfd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!eof) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* `exe ARGS…` (NULL-ended) through su_run. */
static inline int su_cli_exe(const char *exe, char *out, size_t size, ...) {
  const char *argv[32];
  int n = 0;
  argv[n++] = exe;
  va_list ap;
  va_start(ap, size);
  for (const char *a; n < 31 && (a = va_arg(ap, const char *)) != NULL;) argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  return su_run(argv, out, size);
}

/* `phasegate ARGS…` (NULL-ended) through su_run. */
#define su_cli(out, size, ...) su_cli_exe(PG_PHASEGATE, out, size, __VA_ARGS__)

/* 1 when pid no longer runs (gone or a zombie): the daemon's own check. */
static inline int su_gone(int pid) { return pg_serve_pid_gone(pid); }

static inline int su_wait_gone(int pid, int ms) {
  double until = su_now_ms() + ms;
  while (!su_gone(pid) && su_now_ms() < until) usleep(5000);
  return su_gone(pid);
}

/* Processes (not zombies, not this one) whose command line contains every needle;
 * with one needle, daemons (whose --impl may name it) are not counted. */
static inline int su_count_procs(const char *needle, const char *needle2) {
  DIR *d = opendir("/proc");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    int pid = atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < len; i++)
      if (buf[i] == '\0') buf[i] = ' ';
    buf[len] = '\0';
    if (!len || !strstr(buf, needle) || (needle2 && !strstr(buf, needle2)) || su_gone(pid))
      continue;
    /* a worker's tag is also on the command line of a daemon prestarting it */
    if (!needle2 && strstr(buf, " serve --foreground")) continue;
    n++;
  }
  if (d) closedir(d);
  return n;
}

static inline int su_wait_count(const char *needle, const char *needle2, int want, int ms) {
  double until = su_now_ms() + ms;
  int n;
  while ((n = su_count_procs(needle, needle2)) != want && su_now_ms() < until) usleep(10000);
  return n;
}

/* The pid in DIR/serve.pid (0 if none). */
static inline int su_pidfile(const char *dir) {
  char path[4200], buf[32] = "";
  snprintf(path, sizeof path, "%s/%s", dir, PG_SERVE_PID);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
  fclose(f);
  return atoi(buf);
}

/* One request with "action" (and extra fields of `extra`, consumed) on p; fills r. */
static inline void su_call(struct pg_proc *p, const char *action, cJSON *extra, double timeout_s,
                           struct pg_proc_result *r) {
  cJSON *req = extra ? extra : cJSON_CreateObject();
  cJSON_AddStringToObject(req, "action", action);
  int64_t id;
  struct pg_error err;
  pg_proc_result_init(r);
  pg_proc_send(p, req, -1, &id, &err);
  pg_proc_wait(p, id, timeout_s, r, &err);
  cJSON_Delete(req);
}

/* The "message" of an answered call ("" otherwise). */
static inline const char *su_msg(const struct pg_proc_result *r) {
  const char *m = r->end == PG_PROC_ANSWERED
                      ? cJSON_GetStringValue(cJSON_GetObjectItem(r->answer, "message"))
                      : NULL;
  return m ? m : "";
}

#endif
