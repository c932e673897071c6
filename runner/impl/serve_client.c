/* phasegate runner — `phasegate serve`: the client side, which leases a warm process from the daemon (serve_client.h,
 * docs/serve.md). */
#include "impl/serve_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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

/* ================================================================== client */

/* Connects and pings. 0: *conn set, *ping (may be NULL) the answer; -1: none. */
int pg_serve_connect_ping(const char *dir, int *conn, cJSON **ping, struct pg_error *err) {
  *conn = -1;
  if (ping) *ping = NULL;
  if (!dir || !*dir) return pg_error_set(err, PG_ENOTFOUND, "no control directory given");
  struct sockaddr_un sa;
  int dirfd;
  if (pg_serve_sock_addr(dir, &sa, &dirfd) != 0)
    return pg_error_set(err, PG_ENOTFOUND, "no daemon: %s: %s", dir, strerror(errno));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (dirfd >= 0) close(dirfd);
    return pg_error_set(err, PG_ENOTFOUND, "socket: %s", strerror(errno));
  }
  /* A listener whose backlog is full blocks connect(): bounded like an answer. */
  struct timeval tv = {PG_SERVE_ANSWER_MS / 1000, (PG_SERVE_ANSWER_MS % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int c = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  int e = errno;
  if (dirfd >= 0) close(dirfd);
  if (c != 0) {
    close(fd);
    return pg_error_set(err, PG_ENOTFOUND, "no daemon on %s/%s: %s", dir, PG_SERVE_SOCK,
                        strerror(e));
  }
  struct timeval none = {0, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  cJSON *req = cJSON_CreateObject(), *a = NULL;
  cJSON_AddStringToObject(req, "op", "ping");
  int ok = pg_proc_send_line(fd, req, -1, PG_SERVE_ANSWER_MS) == 0 &&
           pg_serve_recv_json(fd, PG_SERVE_ANSWER_MS, &a, NULL) == 1 && pg_serve_status_ok(a);
  cJSON_Delete(req);
  if (!ok || pg_serve_num(a, "serve_protocol", 0) != PG_SERVE_PROTOCOL) {
    int rc = pg_error_set(err, PG_ENOTFOUND, ok ? "the daemon on %s speaks serve protocol %g, "
                          "not %d" : "the daemon on %s did not answer", dir,
                          pg_serve_num(a, "serve_protocol", 0), PG_SERVE_PROTOCOL);
    cJSON_Delete(a);
    close(fd);
    return rc;
  }
  if (ping) *ping = a;
  else cJSON_Delete(a);
  *conn = fd;
  return PG_OK;
}

int pg_serve_connect(const char *control_dir, int *conn, struct pg_error *err) {
  return pg_serve_connect_ping(control_dir, conn, NULL, err);
}

void pg_serve_disconnect(int conn) {
  if (conn >= 0) close(conn);
}

int pg_serve_request(int conn, const char *op, int timeout_ms, cJSON **answer,
                     struct pg_error *err) {
  *answer = NULL;
  cJSON *req = cJSON_CreateObject();
  if (!req || !cJSON_AddStringToObject(req, "op", op)) {
    cJSON_Delete(req);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  int sent = pg_proc_send_line(conn, req, -1, PG_SERVE_ANSWER_MS) == 0;
  cJSON_Delete(req);
  if (!sent || pg_serve_recv_json(conn, timeout_ms > 0 ? timeout_ms : -1, answer, NULL) != 1 || !*answer) {
    cJSON_Delete(*answer);
    *answer = NULL;
    return pg_error_set(err, PG_ENOTFOUND, "the daemon did not answer '%s'", op);
  }
  return PG_OK;
}

/* remote_end of a leased process (proc.h): the daemon kills and reaps it and says how
 * it ended. Without a daemon the group is killed here (how it ended is then unknown). */
static void lease_end(void *ctx, struct pg_proc *p, int wait_ms, struct pg_proc_result *r) {
  int conn = (int)(intptr_t)ctx;
  cJSON *req = cJSON_CreateObject(), *a = NULL;
  cJSON_AddStringToObject(req, "op", "release");
  cJSON_AddNumberToObject(req, "pid", p->pid);
  cJSON_AddFalseToObject(req, "ok");
  cJSON_AddNumberToObject(req, "wait_ms", wait_ms > 0 ? wait_ms : 0);
  cJSON_AddNumberToObject(req, "calls", p->calls);
  cJSON_AddNumberToObject(req, "next_id", (double)p->next_id);
  int ok = pg_proc_send_line(conn, req, -1, PG_SERVE_ANSWER_MS) == 0 &&
           pg_serve_recv_json(conn, (wait_ms > 0 ? wait_ms : 0) + 10000, &a, NULL) == 1 && pg_serve_status_ok(a);
  cJSON_Delete(req);
  if (ok && r) {
    r->exited = pg_serve_is_true(a, "exited");
    r->exit_code = (int)pg_serve_int(a, "exit_code", 0, INT_MIN, INT_MAX);
    r->signaled = pg_serve_is_true(a, "signaled");
    r->signo = (int)pg_serve_int(a, "signo", 0, 0, INT_MAX);
  }
  if (!ok) pg_serve_kill_foreign(p->pid, p->pidfd);
  cJSON_Delete(a);
}

/* The process's log, read for each call's captured output: a regular file only (a FIFO
 * or a device named by the answer would block the open or the reads). */
static int open_log(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Fills the start facts of an error answer into r. */
static void start_facts(const cJSON *a, struct pg_proc_result *r) {
  if (!r) return;
  r->end = (enum pg_proc_end)pg_serve_int(a, "end", PG_PROC_EXITED, PG_PROC_TIMEOUT,
                                                PG_PROC_PROTOCOL);
  r->exited = pg_serve_is_true(a, "exited");
  r->exit_code = (int)pg_serve_int(a, "exit_code", 0, INT_MIN, INT_MAX);
  r->signaled = pg_serve_is_true(a, "signaled");
  r->signo = (int)pg_serve_int(a, "signo", 0, 0, INT_MAX);
  r->wall_ms = pg_serve_num(a, "wall_ms", 0);
  r->captured_truncated = pg_serve_is_true(a, "captured_truncated");
  const char *proto = pg_serve_str(a, "protocol");
  snprintf(r->protocol, sizeof r->protocol, "%s", proto ? proto : "");
  const char *cap = pg_serve_str(a, "captured");
  if (cap && *cap) {
    r->captured = pg_strdup(cap);
    r->captured_len = r->captured ? strlen(cap) : 0;
  }
}

int pg_serve_lease(int conn, const struct pg_proc_program *prog, const char *mode, int device,
                   uint64_t rlimit_as, double start_timeout_s, struct pg_proc *p,
                   struct pg_proc_result *start_fail, struct pg_error *err) {
  pg_proc_init(p);
  if (conn < 0) return pg_error_set(err, PG_ENOTFOUND, "no daemon connection");
  cJSON *req = cJSON_CreateObject();
  cJSON *env = cJSON_AddArrayToObject(req, "env");
  for (size_t i = 0; env && environ && environ[i]; i++)
    cJSON_AddItemToArray(env, cJSON_CreateString(environ[i]));
  char *cwd = getcwd(NULL, 0);
  cJSON_AddStringToObject(req, "op", "lease");
  cJSON_AddStringToObject(req, "kind", pg_proc_kind_name(prog->kind));
  cJSON_AddStringToObject(req, "target", prog->target);
  cJSON_AddStringToObject(req, "mode", mode);
  cJSON_AddNumberToObject(req, "device", device);
  cJSON_AddNumberToObject(req, "rlimit_as", (double)rlimit_as);
  cJSON_AddNumberToObject(req, "start_timeout_s", start_timeout_s);
  cJSON_AddStringToObject(req, "cwd", cwd ? cwd : "/");
  cJSON_AddNumberToObject(req, "umask", pg_serve_current_umask());
  if (prog->kind == PG_PROC_PLUGIN && pg_plugin_host_path())
    cJSON_AddStringToObject(req, "host", pg_plugin_host_path());
  free(cwd);
  cJSON *a = NULL;
  int fd = -1;
  int sent = pg_proc_send_line(conn, req, -1, PG_SERVE_ANSWER_MS) == 0;
  cJSON_Delete(req);
  if (!sent || pg_serve_recv_json(conn, -1, &a, &fd) != 1 || !a) {
    cJSON_Delete(a);
    if (fd >= 0) close(fd);
    return pg_error_set(err, PG_ENOTFOUND, "the phasegate serve daemon went away");
  }
  int rc = PG_OK;
  if (!pg_serve_status_ok(a)) {
    rc = (int)pg_serve_int(a, "code", PG_EIO, INT_MIN, INT_MAX);
    if (rc == PG_OK) rc = PG_EIO;
    const char *msg = pg_serve_str(a, "message");
    pg_error_set(err, rc, "%s", msg && *msg ? msg : "the daemon refused the lease");
    if (rc == PG_EIMPL) start_facts(a, start_fail);
  } else if (fd < 0) {
    rc = pg_error_set(err, PG_ENOTFOUND, "the daemon's lease came without a socket");
  } else if (pg_serve_int(a, "pid", 0, 0, INT_MAX) < 2) {
    /* the process group of pid 1 (or 0) is not a worker: ending the lease would kill
     * everything this user runs (kill(-1, SIGKILL)) */
    rc = pg_error_set(err, PG_ENOTFOUND, "the daemon's lease names no process (pid %d)",
                      (int)pg_serve_int(a, "pid", 0, INT_MIN, INT_MAX));
  } else {
    const char *log = pg_serve_str(a, "log");
    p->pid = (int)pg_serve_int(a, "pid", 0, 0, INT_MAX);
    p->pidfd = pg__pidfd_open(p->pid);
    p->sock = fd;
    p->log_path = pg_strdup(log ? log : "");
    p->log_fd = log ? open_log(log) : -1;
    p->calls = (int)pg_serve_int(a, "calls", 0, 0, INT_MAX);
    p->next_id = pg_serve_int(a, "next_id", 1, 1, INT64_MAX);
    p->start_ms = pg_serve_num(a, "start_ms", 0);
    p->shm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "shm"));
    p->remote_end = lease_end;
    p->remote_ctx = (void *)(intptr_t)conn;
    fd = -1;
  }
  if (fd >= 0) close(fd);
  cJSON_Delete(a);
  return rc;
}

int pg_serve_release(int conn, struct pg_proc *p, int ok) {
  if (!p) return PG_OK;
  int rc = PG_OK;
  /* Bytes after the last answer mean the process broke the protocol between calls. */
  if (p->pid > 0 && (!ok || p->len > 0 || p->remote_end != lease_end)) {
    pg_proc_stop(p, 0, 1);
    return PG_OK;
  }
  if (p->pid > 0) {
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "release");
    cJSON_AddNumberToObject(req, "pid", p->pid);
    cJSON_AddTrueToObject(req, "ok");
    cJSON_AddNumberToObject(req, "calls", p->calls);
    cJSON_AddNumberToObject(req, "next_id", (double)p->next_id);
    if (pg_proc_send_line(conn, req, -1, PG_SERVE_ANSWER_MS) != 0) {
      pg_serve_kill_foreign(p->pid, p->pidfd);
      rc = PG_ENOTFOUND;
    }
    cJSON_Delete(req);
  }
  /* Close our copies only: a shutdown() would end the process for the daemon too. */
  if (p->sock >= 0) close(p->sock);
  if (p->log_fd >= 0) close(p->log_fd);
  if (p->pidfd >= 0) close(p->pidfd);
  free(p->log_path);
  free(p->buf);
  pg_proc_init(p);
  return rc;
}
