/* phasegate runner — `phasegate serve`: the detached start and the stop (serve.h, daemon.h,
 * docs/serve.md). */
#include "serve/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

extern char **environ;

/* ================================================================== start / stop */

/* A ping answer, if a daemon answers on dir. */
static cJSON *ping_dir(const char *dir) {
  int conn;
  cJSON *a = NULL;
  if (pg_serve_connect_ping(dir, &conn, &a, NULL) != PG_OK) return NULL;
  close(conn);
  return a;
}

/* Holds <dir>/serve.lock (exclusive) for a starter or stopper: -1 on failure. */
static int take_lock(const char *dir, struct pg_error *err) {
  char *path = pg_path_join(dir, PG_SERVE_LOCK);
  int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
  /* a read-only control directory: its existing lock file still locks read-only */
  if (fd < 0 && path && (errno == EROFS || errno == EACCES))
    fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    pg_error_set(err, PG_EIO, "%s: %s", path ? path : dir, strerror(errno));
    free(path);
    return -1;
  }
  double until = pg_now_ms() + SERVE_LOCK_MS;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (pg_now_ms() > until) {
      pg_error_set(err, PG_ETIMEOUT, "%s stayed locked for %d s", path, SERVE_LOCK_MS / 1000);
      close(fd);
      free(path);
      return -1;
    }
    usleep(10000);
  }
  free(path);
  return fd;
}

/* 1 when the lock on fd was taken within ms. */
static int lock_within(int fd, int ms) {
  for (double until = pg_now_ms() + ms;; usleep(10000)) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 1;
    if (pg_now_ms() > until) return 0;
  }
}

/* Removes a dead daemon's socket and pidfile. A pidfile whose lock is still held by a
 * daemon that does not answer is either exiting (its socket is closed first: it gets a
 * few seconds to end its workers) or hung, and then gets SIGKILL. */
static void reclaim(const char *dir) {
  char *pid_path = pg_path_join(dir, PG_SERVE_PID), *sock = pg_path_join(dir, PG_SERVE_SOCK);
  int fd = pid_path ? open(pid_path, O_RDWR | O_CLOEXEC) : -1;
  if (fd >= 0 && !lock_within(fd, 3 * SERVE_GRACE_MS)) {
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    int pid = atoi(buf);
    if (pid > 1 && pid != getpid()) kill(pid, SIGKILL);
    lock_within(fd, 5000);
  }
  if (sock) unlink(sock);
  if (pid_path && fd >= 0) unlink(pid_path);
  if (fd >= 0) close(fd);
  free(pid_path);
  free(sock);
}

/* The last lines of the daemon's log, for a start that failed. */
static void log_tail(const char *dir, char *buf, size_t size) {
  buf[0] = '\0';
  char *path = pg_path_join(dir, PG_SERVE_LOG);
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  free(path);
  if (fd < 0) return;
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
  ssize_t n = pread(fd, buf, size - 1, from);
  buf[n > 0 ? n : 0] = '\0';
  close(fd);
}

static int stop_locked(const char *dir, double timeout_s, int *pid, struct pg_error *err) {
  int conn;
  cJSON *ping = NULL;
  *pid = 0;
  if (pg_serve_connect_ping(dir, &conn, &ping, NULL) != PG_OK) {
    reclaim(dir);
    return PG_OK;
  }
  *pid = (int)pg_serve_int(ping, "pid", 0, 0, INT_MAX);
  cJSON_Delete(ping);
  cJSON *a = NULL;
  int ms = (int)(timeout_s * 1000);
  int rc = pg_serve_request(conn, "stop", ms > 0 ? ms : 10000, &a, NULL);
  cJSON_Delete(a);
  if (rc == PG_OK) { /* answered after its workers were gone: wait for its exit */
    char b;
    struct pollfd p = {conn, POLLIN, 0};
    if (poll(&p, 1, ms > 0 ? ms : 10000) > 0 && recv(conn, &b, 1, 0) < 0) {
    }
  }
  close(conn);
  double until = pg_now_ms() + (timeout_s > 0 ? timeout_s * 1000 : 10000);
  while (!pg_serve_pid_gone(*pid) && pg_now_ms() < until) usleep(5000);
  if (!pg_serve_pid_gone(*pid)) {
    kill(*pid, SIGKILL);
    reclaim(dir);
    return pg_error_set(err, PG_ETIMEOUT, "phasegate serve (pid %d) did not stop within %g s: "
                        "killed", *pid, timeout_s);
  }
  reclaim(dir);
  return PG_OK;
}

int pg_serve_stop(const char *control_dir, double timeout_s, int *pid, struct pg_error *err) {
  *pid = 0;
  if (!control_dir || !*control_dir) return pg_error_set(err, PG_EINVAL, "no control directory");
  struct stat st;
  if (stat(control_dir, &st) != 0) return PG_OK; /* nothing was ever started there */
  struct pg_error lock_err;
  pg_error_clear(&lock_err);
  int lock = take_lock(control_dir, &lock_err);
  /* No lock file and none can be made (a read-only directory): no starter can take it
   * either, so stop without it rather than leave a daemon nobody can stop. */
  if (lock < 0 && lock_err.code == PG_ETIMEOUT) {
    if (err) *err = lock_err;
    return lock_err.code;
  }
  int rc = stop_locked(control_dir, timeout_s, pid, err);
  if (lock >= 0) close(lock);
  return rc;
}

int pg_serve_start(const struct pg_serve_options *o, const char *const *daemon_argv, int *pid,
                   int *already, struct pg_error *err) {
  *pid = 0, *already = 0;
  if (!o || !o->control_dir || !*o->control_dir)
    return pg_error_set(err, PG_EINVAL, "serve needs a control directory");
  const char *dir = o->control_dir;
  PG_RETURN_IF_ERROR(pg__serve_prepare_dir(dir, err));
  int lock = take_lock(dir, err);
  if (lock < 0) return err ? err->code : PG_EIO;
  int rc = PG_OK;
  cJSON *ping = ping_dir(dir);
  if (ping) {
    char exe[32];
    snprintf(exe, sizeof exe, "%016" PRIx64, pg_serve_exe_fp());
    const char *theirs = pg_serve_str(ping, "exe");
    int same = theirs && strcmp(theirs, exe) == 0;
    *pid = (int)pg_serve_int(ping, "pid", 0, 0, INT_MAX);
    cJSON_Delete(ping);
    if (same) {
      *already = 1;
      close(lock);
      return PG_OK;
    }
    int old;
    stop_locked(dir, 10, &old, NULL); /* another build of phasegate: replace it */
  }
  reclaim(dir);

  char *log_path = pg_path_join(dir, PG_SERVE_LOG);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  pg_spawn_attr_init(&at, POSIX_SPAWN_SETSID);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path ? log_path : "/dev/null",
                                   O_WRONLY | O_APPEND | O_CREAT, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  pid_t child = 0;
  int e = posix_spawn(&child, daemon_argv[0], &fa, &at, (char *const *)daemon_argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  free(log_path);
  if (e != 0) {
    close(lock);
    return pg_error_set(err, PG_EIO, "cannot start '%s': %s", daemon_argv[0], strerror(e));
  }
  double until = pg_now_ms() + SERVE_READY_MS;
  for (;;) {
    int st;
    if (waitpid(child, &st, WNOHANG) == child) {
      char tail[768];
      log_tail(dir, tail, sizeof tail);
      rc = pg_error_set(err, PG_EIO, "phasegate serve exited before it was ready (%s %d); "
                        "the end of %s/%s:\n%s", WIFEXITED(st) ? "exit" : "signal",
                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), dir, PG_SERVE_LOG, tail);
      break;
    }
    ping = ping_dir(dir);
    int ready = ping && pg_serve_int(ping, "pid", 0, 0, INT_MAX) == (int64_t)child;
    cJSON_Delete(ping);
    if (ready) {
      *pid = (int)child;
      break;
    }
    if (pg_now_ms() > until) {
      kill(child, SIGKILL);
      waitpid(child, &st, 0);
      rc = pg_error_set(err, PG_ETIMEOUT, "phasegate serve did not answer within %d s (see "
                        "%s/%s)", SERVE_READY_MS / 1000, dir, PG_SERVE_LOG);
      break;
    }
    usleep(5000);
  }
  close(lock);
  return rc;
}
