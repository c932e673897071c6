/* phasegate runner — `phasegate serve` (serve.h, docs/serve.md): the daemon that owns
 * warm impl processes across CTest tests, its detached start / stop, and the client
 * side that leases a process from it.
 *
 * The daemon is one poll() loop (listening socket, client connections, idle workers'
 * sockets, a signalfd for SIGCHLD/SIGTERM, a pipe from start threads). Starting a
 * process can take seconds (Python + torch), so each start runs pg_proc_start in a
 * short-lived thread that first gives itself a private cwd/umask (unshare(CLONE_FS))
 * and enters the client's working directory; the finished start comes back to the
 * loop through the pipe, and everything else — pools, processes, connections,
 * counters — belongs to the loop alone. Processes are reaped with waitpid(pid) on the
 * loop's own pids only (never waitpid(-1): a start thread reaps a process whose
 * handshake failed).
 *
 * Control protocol (one JSON object per line each way, on <control>/serve.sock):
 *   {"op":"ping"}                 → {"status":"ok","serve_protocol":1,"pid":P,"exe":"…"}
 *   {"op":"status"}               → {"status":"ok", pid, uptime, counters, processes:[…]}
 *   {"op":"stop"}                 → {"status":"ok","pid":P} once every worker is gone
 *   {"op":"lease", impl, mode, device, rlimit_as, start_timeout_s, cwd, umask, env:[…],
 *    host}                        → {"status":"ok", pid, log, start_ms, calls, next_id,
 *                                    fresh} + the worker's socket (SCM_RIGHTS), or
 *                                   {"status":"error", code, message, start facts…}
 *   {"op":"release", pid, ok:true, calls, next_id}          → (no answer)
 *   {"op":"release", pid, ok:false, wait_ms, calls, next_id} → {"status":"ok", exited,
 *                                    exit_code, signaled, signo, killed}
 */
#include "impl/serve.h"

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

#define SERVE_CHECK_MS 2000      /* how often the control directory is checked */
#define SERVE_GRACE_MS 1000      /* EOF → SIGKILL for a retired or stopped worker */
#define SERVE_READY_MS 30000     /* how long a detached start waits for readiness */
#define SERVE_LOCK_MS 60000      /* how long a starter waits for serve.lock */
#define SERVE_MAX_LINE (1u << 20)

/* ================================================================== shared helpers */

/* FNV-1a, for fingerprints and environment hashes (equality only, never security). */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
#define FNV_INIT 14695981039346656037ull

/* Mixes (dev, ino, size, mtime) of path into h when it names a regular file. */
static uint64_t file_fp(uint64_t h, const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return h;
  int64_t f[6] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size,
                  (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec,
                  (int64_t)st.st_ctim.tv_sec};
  h = fnv(h, path, strlen(path));
  return fnv(h, f, sizeof f);
}

/* What the process runs, as it is on disk now: the plugin .so and the host for
 * plugin:, every word of a worker command that names a regular file (relative words
 * from cwd; quotes around a word are ignored). */
static uint64_t spec_fp(const char *spec, const char *cwd, const char *host) {
  uint64_t h = FNV_INIT;
  if (strncmp(spec, "plugin:", 7) == 0) {
    const char *so = spec + 7;
    char *path = so[0] == '/' ? pg_strdup(so) : pg_path_fmt("%s/%s", cwd, so);
    h = file_fp(h, path);
    free(path);
    return file_fp(h, host);
  }
  const char *s = strncmp(spec, "worker:", 7) == 0 ? spec + 7 : spec;
  while (*s) {
    while (*s == ' ' || *s == '\t' || *s == '\n') s++;
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
    size_t n = (size_t)(e - s);
    if (n && (*s == '\'' || *s == '"')) s++, n--;
    if (n && (s[n - 1] == '\'' || s[n - 1] == '"')) n--;
    if (n) {
      char *path = s[0] == '/' ? pg_path_fmt("%.*s", (int)n, s)
                               : pg_path_fmt("%s/%.*s", cwd, (int)n, s);
      h = file_fp(h, path);
      free(path);
    }
    s = e;
  }
  return h;
}

/* The executable running now (a rebuilt phasegate is another daemon). */
static uint64_t exe_fp(void) { return file_fp(FNV_INIT, "/proc/self/exe"); }

/* Environment entries set by pg_proc_argv_build for every process: never copied from
 * a client (they would shadow the process's own). */
static int env_is_ours(const char *e) {
  static const char *const names[] = {"PHASEGATE_WORKER=", "PHASEGATE_WORKER_FDS=",
                                      "PHASEGATE_MODE=", "PHASEGATE_DEVICE_ID=", NULL};
  for (int i = 0; names[i]; i++)
    if (strncmp(e, names[i], strlen(names[i])) == 0) return 1;
  return 0;
}

/* Entries that differ between tests (or shells) without changing what a process does:
 * left out of the key. CTest sets CTEST_RESOURCE_GROUP_* per test (the device id they
 * carry is a key field of its own); PHASEGATE_SERVE* tells a case test where the
 * daemon is, and the start fixture that prestarts need not set it. */
static int env_is_volatile(const char *e) {
  return strncmp(e, "CTEST_RESOURCE_GROUP_", 21) == 0 || strncmp(e, "_=", 2) == 0 ||
         strncmp(e, "PWD=", 4) == 0 || strncmp(e, "OLDPWD=", 7) == 0 ||
         strncmp(e, "SHLVL=", 6) == 0 || strncmp(e, "PHASEGATE_SERVE", 15) == 0 ||
         env_is_ours(e);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Hash of the environment without volatile entries, in sorted order. */
static uint64_t env_hash(char **env, size_t n) {
  char **sorted = malloc((n ? n : 1) * sizeof *sorted);
  uint64_t h = FNV_INIT;
  if (!sorted) return h;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!env_is_volatile(env[i])) sorted[k++] = env[i];
  qsort(sorted, k, sizeof *sorted, cmp_str);
  for (size_t i = 0; i < k; i++) h = fnv(h, sorted[i], strlen(sorted[i]) + 1);
  free(sorted);
  return h;
}

static void free_strv(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

/* This process's umask, without changing it (other threads may be creating files). */
static int current_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  int mask = -1;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Umask:", 6) == 0) mask = (int)strtol(line + 6, NULL, 8);
  if (f) fclose(f);
  if (mask < 0) {
    mask = (int)umask(022);
    umask((mode_t)mask);
  }
  return mask;
}

/* 1 when pid is gone (or a zombie nobody reaps: it no longer runs anything). */
static int pid_gone(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 1;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "re");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* SIGKILL to the group of a process that is not our child, and a wait (<= 1 s) until
 * it has gone. */
static void kill_foreign(int pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  for (int i = 0; i < 200 && !pid_gone(pid); i++) usleep(5000);
}

/* ------------------------------------------------------------------ the socket address */

/* The address of <dir>/serve.sock. sun_path holds 107 bytes: a longer path is reached
 * through /proc/self/fd/<fd of dir>/serve.sock (*dirfd >= 0 then: close it after the
 * bind or connect). ENOENT etc. in errno when the directory cannot be opened. */
static int sock_addr(const char *dir, struct sockaddr_un *sa, int *dirfd) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  *dirfd = -1;
  size_t n = strlen(dir);
  if (n + 1 + strlen(PG_SERVE_SOCK) < sizeof sa->sun_path) {
    snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", dir, PG_SERVE_SOCK);
    return 0;
  }
  *dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (*dirfd < 0) return -1;
  snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/%s", *dirfd, PG_SERVE_SOCK);
  return 0;
}

/* ------------------------------------------------------------------ lines */

/* Sends o as one line (attach_fd >= 0 rides along with SCM_RIGHTS). A non-blocking
 * socket that stays full for timeout_ms counts as failed. 0 or -1. */
static int send_json(int fd, const cJSON *o, int attach_fd, int timeout_ms) {
  char *text = cJSON_PrintUnformatted(o);
  if (!text) return -1;
  size_t n = strlen(text);
  text[n] = '\n';
  size_t off = 0;
  int rc = 0;
  while (off < n + 1) {
    struct iovec iov = {text + off, n + 1 - off};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (off == 0 && attach_fd >= 0) {
      memset(ctl, 0, sizeof ctl);
      mh.msg_control = ctl;
      mh.msg_controllen = sizeof ctl;
      struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &attach_fd, sizeof(int));
    }
    ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      if (poll(&pfd, 1, timeout_ms) > 0) continue;
    }
    if (w <= 0) {
      rc = -1;
      break;
    }
    off += (size_t)w;
  }
  free(text);
  return rc;
}

/* Reads one answer line from the daemon (who sends nothing unasked, so no byte of a
 * later line can arrive with it). A descriptor passed with it lands in *got_fd (when
 * got_fd is not NULL; else it is closed). 1: *out parsed (NULL if not JSON); 0: EOF or
 * an error; -1: nothing within timeout_ms (< 0: no limit). */
static int recv_json(int fd, int timeout_ms, cJSON **out, int *got_fd) {
  *out = NULL;
  if (got_fd) *got_fd = -1;
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  if (!buf) return 0;
  double deadline = timeout_ms >= 0 ? pg_now_ms() + timeout_ms : 0;
  int rc = 0;
  for (;;) {
    int wait = -1;
    if (timeout_ms >= 0) {
      double left = deadline - pg_now_ms();
      if (left <= 0) {
        rc = -1;
        break;
      }
      wait = (int)left + 1;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, wait);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      rc = -1;
      break;
    }
    if (pr < 0) break;
    if (cap - len < 1024) {
      if (cap >= SERVE_MAX_LINE) break;
      char *b = realloc(buf, cap * 2);
      if (!b) break;
      buf = b, cap *= 2;
    }
    char ctl[CMSG_SPACE(sizeof(int) * 4)];
    struct iovec iov = {buf + len, cap - len - 1};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    ssize_t got = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < nfd; i++) {
        int r;
        memcpy(&r, CMSG_DATA(c) + i * sizeof(int), sizeof r);
        if (got_fd && *got_fd < 0) *got_fd = r;
        else close(r);
      }
    }
    len += (size_t)got;
    buf[len] = '\0';
    if (memchr(buf, '\n', len)) {
      *out = cJSON_Parse(buf);
      rc = 1;
      break;
    }
  }
  free(buf);
  if (rc != 1 && got_fd && *got_fd >= 0) {
    close(*got_fd);
    *got_fd = -1;
  }
  return rc;
}

static double num(const cJSON *o, const char *key, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int is_true(const cJSON *o, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int status_ok(const cJSON *a) {
  const char *s = str(a, "status");
  return s && strcmp(s, "ok") == 0;
}

/* ================================================================== client */

/* Connects and pings. 0: *conn set, *ping (may be NULL) the answer; -1: none. */
static int connect_ping(const char *dir, int *conn, cJSON **ping, struct pg_error *err) {
  *conn = -1;
  if (ping) *ping = NULL;
  if (!dir || !*dir) return pg_error_set(err, PG_ENOTFOUND, "no control directory given");
  struct sockaddr_un sa;
  int dirfd;
  if (sock_addr(dir, &sa, &dirfd) != 0)
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
  int ok = send_json(fd, req, -1, PG_SERVE_ANSWER_MS) == 0 &&
           recv_json(fd, PG_SERVE_ANSWER_MS, &a, NULL) == 1 && status_ok(a);
  cJSON_Delete(req);
  if (!ok || num(a, "serve_protocol", 0) != PG_SERVE_PROTOCOL) {
    int rc = pg_error_set(err, PG_ENOTFOUND, ok ? "the daemon on %s speaks serve protocol %g, "
                          "not %d" : "the daemon on %s did not answer", dir,
                          num(a, "serve_protocol", 0), PG_SERVE_PROTOCOL);
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
  return connect_ping(control_dir, conn, NULL, err);
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
  int sent = send_json(conn, req, -1, PG_SERVE_ANSWER_MS) == 0;
  cJSON_Delete(req);
  if (!sent || recv_json(conn, timeout_ms > 0 ? timeout_ms : -1, answer, NULL) != 1 || !*answer) {
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
  int ok = send_json(conn, req, -1, PG_SERVE_ANSWER_MS) == 0 &&
           recv_json(conn, (wait_ms > 0 ? wait_ms : 0) + 10000, &a, NULL) == 1 && status_ok(a);
  cJSON_Delete(req);
  if (ok && r) {
    r->exited = is_true(a, "exited");
    r->exit_code = (int)num(a, "exit_code", 0);
    r->signaled = is_true(a, "signaled");
    r->signo = (int)num(a, "signo", 0);
  }
  if (!ok) kill_foreign(p->pid);
  cJSON_Delete(a);
}

/* Fills the start facts of an error answer into r. */
static void start_facts(const cJSON *a, struct pg_proc_result *r) {
  if (!r) return;
  r->end = (enum pg_proc_end)(int)num(a, "end", PG_PROC_EXITED);
  r->exited = is_true(a, "exited");
  r->exit_code = (int)num(a, "exit_code", 0);
  r->signaled = is_true(a, "signaled");
  r->signo = (int)num(a, "signo", 0);
  r->wall_ms = num(a, "wall_ms", 0);
  r->captured_truncated = is_true(a, "captured_truncated");
  const char *proto = str(a, "protocol");
  snprintf(r->protocol, sizeof r->protocol, "%s", proto ? proto : "");
  const char *cap = str(a, "captured");
  if (cap && *cap) {
    r->captured = pg_strdup(cap);
    r->captured_len = r->captured ? strlen(cap) : 0;
  }
}

int pg_serve_lease(int conn, const char *impl_spec, const char *mode, int device,
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
  cJSON_AddStringToObject(req, "impl", impl_spec);
  cJSON_AddStringToObject(req, "mode", mode);
  cJSON_AddNumberToObject(req, "device", device);
  cJSON_AddNumberToObject(req, "rlimit_as", (double)rlimit_as);
  cJSON_AddNumberToObject(req, "start_timeout_s", start_timeout_s);
  cJSON_AddStringToObject(req, "cwd", cwd ? cwd : "/");
  cJSON_AddNumberToObject(req, "umask", current_umask());
  if (strncmp(impl_spec, "plugin:", 7) == 0 && pg_plugin_host_path())
    cJSON_AddStringToObject(req, "host", pg_plugin_host_path());
  free(cwd);
  cJSON *a = NULL;
  int fd = -1;
  int sent = send_json(conn, req, -1, PG_SERVE_ANSWER_MS) == 0;
  cJSON_Delete(req);
  if (!sent || recv_json(conn, -1, &a, &fd) != 1 || !a) {
    cJSON_Delete(a);
    if (fd >= 0) close(fd);
    return pg_error_set(err, PG_ENOTFOUND, "the phasegate serve daemon went away");
  }
  int rc = PG_OK;
  if (!status_ok(a)) {
    rc = (int)num(a, "code", PG_EIO);
    if (rc == PG_OK) rc = PG_EIO;
    const char *msg = str(a, "message");
    pg_error_set(err, rc, "%s", msg ? msg : "the daemon refused the lease");
    if (rc == PG_EIMPL) start_facts(a, start_fail);
  } else if (fd < 0) {
    rc = pg_error_set(err, PG_ENOTFOUND, "the daemon's lease came without a socket");
  } else {
    const char *log = str(a, "log");
    p->pid = (int)num(a, "pid", 0);
    p->sock = fd;
    p->log_path = pg_strdup(log ? log : "");
    p->log_fd = log ? open(log, O_RDONLY | O_CLOEXEC) : -1;
    p->calls = (int)num(a, "calls", 0);
    p->next_id = (int64_t)num(a, "next_id", 1);
    if (p->next_id < 1) p->next_id = 1;
    p->start_ms = num(a, "start_ms", 0);
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
    if (send_json(conn, req, -1, PG_SERVE_ANSWER_MS) != 0) {
      kill_foreign(p->pid);
      rc = PG_ENOTFOUND;
    }
    cJSON_Delete(req);
  }
  /* Close our copies only: a shutdown() would end the process for the daemon too. */
  if (p->sock >= 0) close(p->sock);
  if (p->log_fd >= 0) close(p->log_fd);
  free(p->log_path);
  free(p->buf);
  pg_proc_init(p);
  return rc;
}

/* ================================================================== daemon */

enum wstate { W_STARTING, W_IDLE, W_LEASED, W_DYING };
static const char *const wstate_name[] = {"starting", "idle", "leased", "ending"};

struct conn {
  struct conn *next;
  int fd, id;
  char *buf;
  size_t len, cap;
  int waiting; /* a lease or an end is pending: its next line waits */
  int closed;
};

struct waiter {
  struct waiter *next;
  struct conn *c;
  double start_timeout_s;
};

/* Processes of one key: (impl, mode, device, rlimit_as, cwd, umask, environment, host). */
struct pool {
  struct pool *next;
  char *impl, *mode, *cwd, *host;
  int device, umask;
  uint64_t rlimit_as, env_hash;
  uint64_t fp;   /* what the newest request saw on disk */
  char **env;    /* for starts: the first requester's, without env_is_ours entries */
  struct waiter *queue;
};

struct job;

struct wproc {
  struct wproc *next;
  struct pool *pool;
  enum wstate state;
  struct pg_proc p;    /* STARTING: still the job's */
  int pid;
  struct job *job;
  struct conn *holder; /* LEASED */
  struct conn *end_to; /* DYING: who waits for how it ended */
  double deadline;     /* DYING: SIGKILL after this */
  int killed, reaped, status, keep_log, gone;
  uint64_t fp;
  int calls, leases;
  int64_t next_id;
  double start_ms;
};

/* One start, run by a thread: its inputs and results are the thread's until it writes
 * the job's address to the loop's pipe. */
struct job {
  pthread_t th;
  int done_fd;
  struct wproc *w;
  char *impl, *cwd, *host, *log_dir;
  char tag[64];
  int umask;
  char **envp; /* owned strings (first n_own) + the argv's env */
  size_t n_own;
  struct pg_proc_argv a;
  uint64_t rlimit_as;
  double timeout_s;
  int rc;
  struct pg_proc p;
  struct pg_proc_result r;
  struct pg_error err;
};

struct daemon {
  const struct pg_serve_options *o;
  FILE *log;
  char *dir, *sock_path, *pid_path, *workers;
  int lsock, sigfd, jobs_r, jobs_w, pid_fd;
  dev_t dir_dev, sock_dev;
  ino_t dir_ino, sock_ino;
  struct conn *conns;
  struct pool *pools;
  struct wproc *procs;
  int n_conns, next_conn_id, n_jobs;
  double started_ms, last_active_ms, next_check_ms;
  int exiting;
  const char *exit_reason;
  struct conn *stop_conn;
  uint64_t exe;
  char **start_env; /* prestart: the daemon's own environment and directory */
  char *start_cwd, *host;
  long leases, calls, starts, start_failures, retired, clients;
};

static void dlog(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dlog(struct daemon *d, const char *fmt, ...) {
  if (!d->log) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%H:%M:%S", &tm);
  fprintf(d->log, "[phasegate serve %d %s.%03ld] ", (int)getpid(), when, ts.tv_nsec / 1000000);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(d->log, fmt, ap);
  va_end(ap);
  fputc('\n', d->log);
  fflush(d->log);
}

static void answer(struct daemon *d, struct conn *c, cJSON *o, int attach_fd) {
  if (!c || c->closed) return;
  if (send_json(c->fd, o, attach_fd, 1000) != 0)
    dlog(d, "client %d: an answer could not be sent (%s)", c->id, strerror(errno));
}

static void answer_error(struct daemon *d, struct conn *c, int code, const char *msg) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "error");
  cJSON_AddNumberToObject(o, "code", code);
  cJSON_AddStringToObject(o, "message", msg);
  answer(d, c, o, -1);
  cJSON_Delete(o);
}

/* ------------------------------------------------------------------ process states */

static void kill_group(struct wproc *w) {
  if (w->pid > 0) kill(-w->pid, SIGKILL);
  w->killed = 1;
}

/* Forgets a process whose pid is reaped (or that never started): closes the daemon's
 * descriptors, removes its log unless a message may name it. Freed by collect(). */
static void w_remove(struct wproc *w) {
  if (w->gone) return;
  w->gone = 1;
  w->p.pid = 0; /* reaped already: pg_proc_stop only closes */
  pg_proc_stop(&w->p, 0, w->keep_log);
}

/* The end of a process as the client's remote_end expects it: got = it ended by itself
 * within the wait (exit fields filled), else it was killed (fields unknown). */
static void answer_end(struct daemon *d, struct conn *c, const struct wproc *w, int got) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  int st = w->status;
  cJSON_AddBoolToObject(o, "exited", got && WIFEXITED(st));
  cJSON_AddNumberToObject(o, "exit_code", got && WIFEXITED(st) ? WEXITSTATUS(st) : 0);
  cJSON_AddBoolToObject(o, "signaled", got && WIFSIGNALED(st));
  cJSON_AddNumberToObject(o, "signo", got && WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  cJSON_AddBoolToObject(o, "killed", !got);
  answer(d, c, o, -1);
  cJSON_Delete(o);
  if (c) c->waiting = 0;
}

/* An idle process that must go (stale fingerprint, unsolicited bytes, shutdown): EOF
 * first ("exit now"), SIGKILL after the grace. */
static void w_retire(struct daemon *d, struct wproc *w, const char *why) {
  dlog(d, "pid %d (%s %s dev %d): ending, %s", w->pid, w->pool->impl, w->pool->mode,
       w->pool->device, why);
  w->state = W_DYING;
  w->end_to = NULL;
  w->deadline = pg_now_ms() + SERVE_GRACE_MS;
  if (w->p.sock >= 0) shutdown(w->p.sock, SHUT_RDWR);
  d->retired++;
}

static int reap_one(struct wproc *w);
static void on_reaped(struct daemon *d, struct wproc *w);

/* ------------------------------------------------------------------ starts */

static void job_free(struct job *j) {
  if (!j) return;
  for (size_t i = 0; i < j->n_own; i++) free(j->envp[i]);
  free(j->envp);
  pg_proc_argv_reset(&j->a);
  pg_proc_result_reset(&j->r);
  free(j->impl);
  free(j->cwd);
  free(j->host);
  free(j->log_dir);
  free(j);
}

static void *job_main(void *arg) {
  struct job *j = arg;
  /* A private cwd and umask for this thread (and so for what it spawns). */
  if (unshare(CLONE_FS) != 0) {
    j->rc = pg_error_set(&j->err, PG_EIO, "unshare(CLONE_FS): %s", strerror(errno));
  } else if (chdir(j->cwd) != 0) {
    j->rc = pg_error_set(&j->err, PG_EIO, "cannot enter %s: %s", j->cwd, strerror(errno));
  } else {
    umask((mode_t)j->umask);
    struct pg_proc_spec s = {j->a.argv, (const char *const *)j->envp, j->log_dir, j->tag,
                             j->rlimit_as, j->timeout_s};
    j->rc = pg_proc_start(&j->p, &s, &j->r, &j->err);
  }
  while (write(j->done_fd, &j, sizeof j) < 0 && errno == EINTR) {
  }
  return NULL;
}

/* Starts a process for pool in a thread; the wproc is STARTING until job_done. */
static int start_proc(struct daemon *d, struct pool *pl, double timeout_s, struct pg_error *err) {
  struct job *j = calloc(1, sizeof *j);
  struct wproc *w = calloc(1, sizeof *w);
  if (!j || !w) {
    free(j);
    free(w);
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  }
  pg_proc_init(&w->p);
  pg_proc_init(&j->p);
  j->impl = pg_strdup(pl->impl);
  j->cwd = pg_strdup(pl->cwd);
  j->host = pg_strdup(pl->host);
  j->log_dir = pg_strdup(d->workers);
  snprintf(j->tag, sizeof j->tag, "%s-%d", pl->mode, pl->device);
  j->umask = pl->umask;
  j->rlimit_as = pl->rlimit_as;
  j->timeout_s = timeout_s > 0 ? timeout_s : 120;
  j->done_fd = d->jobs_w;
  j->w = w;
  /* plugin: runs the client's host on the .so; the environment is built as for any
   * process (pg_proc_argv_build of a worker, whose argv is then replaced). */
  int plugin = strncmp(pl->impl, "plugin:", 7) == 0 && pl->host;
  const char *spec = plugin ? "worker:" : j->impl;
  int rc = j->impl && j->cwd && j->log_dir && (j->host || !pl->host)
               ? pg_proc_argv_build(spec, pl->mode, pl->device, &j->a, err)
               : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK && plugin) {
    j->a.argv[0] = j->host;
    j->a.argv[1] = j->impl + 7;
    j->a.argv[2] = NULL;
  }
  size_t n_env = 0, n_add = 0;
  while (pl->env && pl->env[n_env]) n_env++;
  while (j->a.env[n_add]) n_add++;
  if (rc == PG_OK && !(j->envp = calloc(n_env + n_add + 1, sizeof *j->envp)))
    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (size_t i = 0; rc == PG_OK && i < n_env; i++)
    if (!(j->envp[j->n_own++] = pg_strdup(pl->env[i])))
      rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  for (size_t i = 0; rc == PG_OK && i < n_add; i++) j->envp[n_env + i] = (char *)j->a.env[i];
  if (rc == PG_OK && (errno = pthread_create(&j->th, NULL, job_main, j)) != 0)
    rc = pg_error_set(err, PG_EIO, "cannot start a thread: %s", strerror(errno));
  if (rc != PG_OK) {
    job_free(j);
    free(w);
    return rc;
  }
  w->pool = pl;
  w->state = W_STARTING;
  w->job = j;
  w->fp = pl->fp;
  w->next = d->procs;
  d->procs = w;
  d->n_jobs++;
  dlog(d, "starting %s (%s, device %d)", pl->impl, pl->mode, pl->device);
  return PG_OK;
}

/* ------------------------------------------------------------------ leases */

static void grant(struct daemon *d, struct wproc *w, struct conn *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "pid", w->pid);
  cJSON_AddStringToObject(o, "log", w->p.log_path ? w->p.log_path : "");
  cJSON_AddNumberToObject(o, "start_ms", w->start_ms);
  cJSON_AddNumberToObject(o, "calls", w->calls);
  cJSON_AddNumberToObject(o, "next_id", (double)w->next_id);
  cJSON_AddBoolToObject(o, "fresh", w->leases == 0);
  answer(d, c, o, w->p.sock);
  cJSON_Delete(o);
  w->state = W_LEASED;
  w->holder = c;
  w->leases++;
  c->waiting = 0;
  d->leases++;
}

static int pool_alive(const struct pool *pl, const struct daemon *d, enum wstate only, int any) {
  int n = 0;
  for (const struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone && (any || w->state == only)) n++;
  return n;
}

/* Serves the queue of pl: idle processes to the first waiters, then as many starts as
 * waiters still need, up to --slots processes (ending ones included: a device context
 * is free only once its process is gone). */
static void dispatch(struct daemon *d, struct pool *pl) {
  while (pl->queue && !d->exiting) {
    struct wproc *idle = NULL;
    for (struct wproc *w = d->procs; w && !idle; w = w->next)
      if (w->pool == pl && !w->gone && w->state == W_IDLE && w->fp == pl->fp) idle = w;
    if (!idle) break;
    struct waiter *h = pl->queue;
    pl->queue = h->next;
    grant(d, idle, h->c);
    free(h);
  }
  int waiting = 0;
  for (struct waiter *q = pl->queue; q; q = q->next) waiting++;
  int starting = pool_alive(pl, d, W_STARTING, 0), alive = pool_alive(pl, d, 0, 1);
  struct waiter **q = &pl->queue;
  for (int i = 0; i < starting && *q; i++) q = &(*q)->next;
  while (*q && !d->exiting && starting < waiting && alive < d->o->slots) {
    struct pg_error err;
    if (start_proc(d, pl, (*q)->start_timeout_s, &err) != PG_OK) {
      /* could not even try (a spec the host cannot run, out of memory): this waiter
       * gets what pg_proc_start's caller would have got */
      dlog(d, "cannot start: %s", err.message);
      struct waiter *x = *q;
      *q = x->next;
      waiting--;
      answer_error(d, x->c, err.code, err.message);
      x->c->waiting = 0;
      free(x);
      continue;
    }
    starting++, alive++;
    q = &(*q)->next;
  }
}

static void job_done(struct daemon *d, struct job *j) {
  pthread_join(j->th, NULL);
  d->n_jobs--;
  struct wproc *w = j->w;
  struct pool *pl = w->pool;
  w->job = NULL;
  if (j->rc == PG_OK) {
    w->p = j->p;
    pg_proc_init(&j->p);
    w->pid = w->p.pid;
    w->start_ms = w->p.start_ms;
    w->next_id = 1;
    w->state = W_IDLE;
    d->starts++;
    dlog(d, "pid %d ready in %.0f ms: %s (%s, device %d), log %s", w->pid, w->start_ms,
         pl->impl, pl->mode, pl->device, w->p.log_path);
    if (reap_one(w)) on_reaped(d, w); /* died right after its handshake */
    else if (w->fp != pl->fp) w_retire(d, w, "what it runs changed while it started");
  } else {
    d->start_failures++;
    dlog(d, "start failed: %s", j->err.message);
    w->state = W_DYING;
    w_remove(w);
    struct waiter *h = d->exiting ? NULL : pl->queue; /* stopping: waiters just see EOF */
    if (h) {
      pl->queue = h->next;
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "status", "error");
      cJSON_AddNumberToObject(o, "code", j->rc);
      cJSON_AddStringToObject(o, "message", j->err.message);
      if (j->rc == PG_EIMPL) {
        cJSON_AddNumberToObject(o, "end", j->r.end);
        cJSON_AddBoolToObject(o, "exited", j->r.exited);
        cJSON_AddNumberToObject(o, "exit_code", j->r.exit_code);
        cJSON_AddBoolToObject(o, "signaled", j->r.signaled);
        cJSON_AddNumberToObject(o, "signo", j->r.signo);
        cJSON_AddStringToObject(o, "protocol", j->r.protocol);
        cJSON_AddStringToObject(o, "captured", j->r.captured ? j->r.captured : "");
        cJSON_AddBoolToObject(o, "captured_truncated", j->r.captured_truncated);
        cJSON_AddNumberToObject(o, "wall_ms", j->r.wall_ms);
      }
      answer(d, h->c, o, -1);
      cJSON_Delete(o);
      h->c->waiting = 0;
      free(h);
    }
  }
  job_free(j);
  dispatch(d, pl);
}

static struct pool *pool_get(struct daemon *d, const char *impl, const char *mode, int device,
                             uint64_t rlimit_as, const char *cwd, int umask_, char **env,
                             size_t n_env, const char *host) {
  uint64_t eh = env_hash(env, n_env);
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    if (strcmp(pl->impl, impl) == 0 && strcmp(pl->mode, mode) == 0 && pl->device == device &&
        pl->rlimit_as == rlimit_as && strcmp(pl->cwd, cwd) == 0 && pl->umask == umask_ &&
        pl->env_hash == eh && ((!pl->host && !host) || (pl->host && host &&
                                                        strcmp(pl->host, host) == 0)))
      return pl;
  struct pool *pl = calloc(1, sizeof *pl);
  if (!pl) return NULL;
  pl->impl = pg_strdup(impl);
  pl->mode = pg_strdup(mode);
  pl->cwd = pg_strdup(cwd);
  pl->host = pg_strdup(host);
  pl->device = device;
  pl->umask = umask_;
  pl->rlimit_as = rlimit_as;
  pl->env_hash = eh;
  pl->env = calloc(n_env + 1, sizeof *pl->env);
  int ok = pl->impl && pl->mode && pl->cwd && (pl->host || !host) && pl->env;
  for (size_t i = 0, k = 0; ok && i < n_env; i++)
    if (!env_is_ours(env[i]) && !(pl->env[k++] = pg_strdup(env[i]))) ok = 0;
  if (!ok) {
    free(pl->impl), free(pl->mode), free(pl->cwd), free(pl->host), free_strv(pl->env);
    free(pl);
    return NULL;
  }
  pl->next = d->pools;
  d->pools = pl;
  return pl;
}

/* A new fingerprint for pl: idle processes that run the old files go. */
static void pool_refresh(struct daemon *d, struct pool *pl, uint64_t fp) {
  if (pl->fp == fp) return;
  pl->fp = fp;
  for (struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone && w->state == W_IDLE && w->fp != fp)
      w_retire(d, w, "what it runs changed on disk");
}

static void on_lease(struct daemon *d, struct conn *c, const cJSON *req) {
  const char *impl = str(req, "impl"), *mode = str(req, "mode"), *cwd = str(req, "cwd");
  const char *host = str(req, "host");
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
  if (!impl || !mode || !cwd || !cJSON_IsArray(env)) {
    answer_error(d, c, PG_EINVAL, "a lease needs impl, mode, cwd and env");
    return;
  }
  if (strncmp(impl, "worker:", 7) != 0 && strncmp(impl, "plugin:", 7) != 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "'%s' is not a persistent impl (worker: or plugin:)", impl);
    answer_error(d, c, PG_EINVAL, msg);
    return;
  }
  if (strncmp(impl, "plugin:", 7) != 0) host = NULL;
  else if (!host) host = d->host;
  size_t n_env = (size_t)cJSON_GetArraySize(env), k = 0;
  char **ev = calloc(n_env + 1, sizeof *ev);
  const cJSON *e;
  cJSON_ArrayForEach(e, env) if (ev && cJSON_IsString(e)) ev[k++] = e->valuestring;
  struct pool *pl = ev ? pool_get(d, impl, mode, (int)num(req, "device", 0),
                                  (uint64_t)num(req, "rlimit_as", 0), cwd,
                                  (int)num(req, "umask", 022), ev, k, host)
                       : NULL;
  free(ev);
  if (!pl) {
    answer_error(d, c, PG_ENOMEM, "out of memory");
    return;
  }
  pool_refresh(d, pl, spec_fp(impl, cwd, host));
  /* Waiting would never end when this client holds every slot itself. */
  int mine = 0, others = 0;
  for (struct wproc *w = d->procs; w; w = w->next)
    if (w->pool == pl && !w->gone) {
      if (w->state == W_LEASED && w->holder == c) mine++;
      else others++;
    }
  if (mine && !others && mine >= d->o->slots) {
    answer_error(d, c, PG_ELIMIT, "this connection already holds every process of its key "
                 "(phasegate serve --slots)");
    return;
  }
  struct waiter *q = calloc(1, sizeof *q), **tail = &pl->queue;
  if (!q) {
    answer_error(d, c, PG_ENOMEM, "out of memory");
    return;
  }
  q->c = c;
  q->start_timeout_s = num(req, "start_timeout_s", 120);
  while (*tail) tail = &(*tail)->next;
  *tail = q;
  c->waiting = 1;
  dispatch(d, pl);
}

static struct wproc *held(struct daemon *d, struct conn *c, int pid) {
  for (struct wproc *w = d->procs; w; w = w->next)
    if (!w->gone && w->state == W_LEASED && w->holder == c && w->pid == pid) return w;
  return NULL;
}

static void on_release(struct daemon *d, struct conn *c, const cJSON *req) {
  int ok = is_true(req, "ok");
  struct wproc *w = held(d, c, (int)num(req, "pid", 0));
  if (!w) {
    if (!ok) answer_error(d, c, PG_EINVAL, "no such lease on this connection");
    return;
  }
  int calls = (int)num(req, "calls", w->calls);
  if (calls > w->calls) d->calls += calls - w->calls;
  w->calls = calls;
  w->next_id = (int64_t)num(req, "next_id", (double)w->next_id);
  w->holder = NULL;
  struct pool *pl = w->pool;
  if (ok) {
    if (w->reaped) {
      w->keep_log = 1;
      w_remove(w);
    } else if (w->fp != pl->fp) {
      w_retire(d, w, "what it runs changed on disk");
    } else {
      w->state = W_IDLE;
    }
    dispatch(d, pl);
    return;
  }
  w->keep_log = 1; /* its end may be shown to a user, naming the log */
  reap_one(w);
  if (w->reaped) {
    answer_end(d, c, w, !w->killed);
    w_remove(w);
    dispatch(d, pl);
    return;
  }
  int wait_ms = (int)num(req, "wait_ms", 0);
  w->state = W_DYING;
  w->end_to = c;
  w->deadline = pg_now_ms() + wait_ms;
  c->waiting = 1;
  if (wait_ms <= 0) kill_group(w);
}

static cJSON *status_json(struct daemon *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "serve_protocol", PG_SERVE_PROTOCOL);
  cJSON_AddNumberToObject(o, "pid", getpid());
  cJSON_AddStringToObject(o, "control", d->dir);
  if (d->o->op_dir) cJSON_AddStringToObject(o, "op_dir", d->o->op_dir);
  cJSON_AddNumberToObject(o, "uptime_s", (pg_now_ms() - d->started_ms) / 1000);
  cJSON_AddNumberToObject(o, "slots", d->o->slots);
  cJSON_AddNumberToObject(o, "idle_timeout_s", d->o->idle_timeout_s);
  cJSON_AddNumberToObject(o, "clients", d->n_conns);
  cJSON_AddNumberToObject(o, "clients_total", (double)d->clients);
  cJSON_AddNumberToObject(o, "leases", (double)d->leases);
  cJSON_AddNumberToObject(o, "calls", (double)d->calls);
  cJSON_AddNumberToObject(o, "starts", (double)d->starts);
  cJSON_AddNumberToObject(o, "start_failures", (double)d->start_failures);
  cJSON_AddNumberToObject(o, "ended", (double)d->retired);
  int waiting = 0;
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    for (struct waiter *q = pl->queue; q; q = q->next) waiting++;
  cJSON_AddNumberToObject(o, "waiting", waiting);
  cJSON *procs = cJSON_AddArrayToObject(o, "processes");
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone) continue;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "pid", w->pid);
    cJSON_AddStringToObject(p, "state", wstate_name[w->state]);
    cJSON_AddStringToObject(p, "impl", w->pool->impl);
    cJSON_AddStringToObject(p, "mode", w->pool->mode);
    cJSON_AddNumberToObject(p, "device", w->pool->device);
    cJSON_AddNumberToObject(p, "calls", w->calls);
    cJSON_AddNumberToObject(p, "leases", w->leases);
    cJSON_AddNumberToObject(p, "start_ms", w->start_ms);
    if (w->p.log_path) cJSON_AddStringToObject(p, "log", w->p.log_path);
    cJSON_AddItemToArray(procs, p);
  }
  return o;
}

/* One request line of c. */
static void on_line(struct daemon *d, struct conn *c, const char *line) {
  cJSON *req = cJSON_Parse(line);
  const char *op = str(req, "op");
  if (!op) {
    answer_error(d, c, PG_EINVAL, "not a request: expected {\"op\": ...}");
  } else if (strcmp(op, "ping") == 0) {
    cJSON *o = cJSON_CreateObject();
    char exe[32];
    snprintf(exe, sizeof exe, "%016" PRIx64, d->exe);
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "serve_protocol", PG_SERVE_PROTOCOL);
    cJSON_AddNumberToObject(o, "pid", getpid());
    cJSON_AddStringToObject(o, "exe", exe);
    answer(d, c, o, -1);
    cJSON_Delete(o);
  } else if (strcmp(op, "lease") == 0) {
    on_lease(d, c, req);
  } else if (strcmp(op, "release") == 0) {
    on_release(d, c, req);
  } else if (strcmp(op, "status") == 0) {
    cJSON *o = status_json(d);
    answer(d, c, o, -1);
    cJSON_Delete(o);
  } else if (strcmp(op, "stop") == 0) {
    d->exiting = 1;
    d->exit_reason = "stop requested";
    d->stop_conn = c;
    c->waiting = 1;
  } else {
    answer_error(d, c, PG_EINVAL, "unknown op");
  }
  cJSON_Delete(req);
}

/* The lines c has sent, while nothing of it is pending. */
static void conn_lines(struct daemon *d, struct conn *c) {
  while (!c->closed && !c->waiting && c->len) {
    char *nl = memchr(c->buf, '\n', c->len);
    if (!nl) break;
    *nl = '\0';
    size_t n = (size_t)(nl - c->buf) + 1;
    on_line(d, c, c->buf);
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
  }
}

/* A client went away: its place in queues goes, and the processes it held die with it
 * (their state is unknown: it may have died mid-call). */
static void conn_close(struct daemon *d, struct conn *c) {
  if (c->closed) return;
  for (struct pool *pl = d->pools; pl; pl = pl->next)
    for (struct waiter **q = &pl->queue; *q;) {
      if ((*q)->c == c) {
        struct waiter *x = *q;
        *q = x->next;
        free(x);
      } else {
        q = &(*q)->next;
      }
    }
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone) continue;
    if (w->end_to == c) w->end_to = NULL;
    if (w->state == W_LEASED && w->holder == c) {
      dlog(d, "client %d left holding pid %d: killing it", c->id, w->pid);
      w->holder = NULL;
      w->keep_log = 1;
      w->state = W_DYING;
      kill_group(w);
      if (w->reaped) w_remove(w);
    }
  }
  if (d->stop_conn == c) d->stop_conn = NULL;
  close(c->fd);
  c->closed = 1;
  d->n_conns--;
  d->last_active_ms = pg_now_ms();
}

static void conn_read(struct daemon *d, struct conn *c) {
  if (c->closed) return;
  for (;;) {
    if (c->cap - c->len < 4096) {
      size_t cap = c->cap ? c->cap * 2 : 8192;
      char *b = cap <= SERVE_MAX_LINE * 2 ? realloc(c->buf, cap) : NULL;
      if (!b) {
        dlog(d, "client %d: request too long or out of memory", c->id);
        conn_close(d, c);
        return;
      }
      c->buf = b, c->cap = cap;
    }
    ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got <= 0) {
      conn_lines(d, c); /* a release sent just before the exit still counts */
      conn_close(d, c);
      return;
    }
    c->len += (size_t)got;
  }
  d->last_active_ms = pg_now_ms();
  conn_lines(d, c);
}

static void on_accept(struct daemon *d) {
  for (;;) {
    int fd = accept4(d->lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    c->id = ++d->next_conn_id;
    c->next = d->conns;
    d->conns = c;
    d->n_conns++;
    d->clients++;
    d->last_active_ms = pg_now_ms();
  }
}

/* ------------------------------------------------------------------ reaping */

static void on_reaped(struct daemon *d, struct wproc *w) {
  struct pool *pl = w->pool;
  switch (w->state) {
    case W_IDLE:
      dlog(d, "pid %d died while idle (status 0x%x)", w->pid, (unsigned)w->status);
      w->keep_log = 1;
      w_remove(w);
      dispatch(d, pl);
      break;
    case W_LEASED: /* its client learns it by EOF and asks how it ended */
      break;
    case W_DYING:
      if (w->end_to) answer_end(d, w->end_to, w, !w->killed);
      w_remove(w);
      dispatch(d, pl);
      break;
    case W_STARTING:
      break;
  }
}

/* 1 when w's pid has been reaped now (its status kept in w). */
static int reap_one(struct wproc *w) {
  if (w->gone || w->reaped || w->state == W_STARTING || w->pid <= 0) return 0;
  int st;
  if (waitpid(w->pid, &st, WNOHANG) != w->pid) return 0;
  w->reaped = 1;
  w->status = st;
  kill(-w->pid, SIGKILL); /* what it left behind in its group */
  return 1;
}

static void reap_all(struct daemon *d) {
  for (struct wproc *w = d->procs; w; w = w->next)
    if (reap_one(w)) on_reaped(d, w);
}

/* Frees what is gone (closed connections, forgotten processes). */
static void collect(struct daemon *d) {
  for (struct conn **c = &d->conns; *c;) {
    if ((*c)->closed) {
      struct conn *x = *c;
      *c = x->next;
      free(x->buf);
      free(x);
    } else {
      c = &(*c)->next;
    }
  }
  for (struct wproc **w = &d->procs; *w;) {
    if ((*w)->gone) {
      struct wproc *x = *w;
      *w = x->next;
      free(x);
    } else {
      w = &(*w)->next;
    }
  }
}

/* ------------------------------------------------------------------ setup */

/* mkdir -p DIR, the last component mode 0700; an existing one must be ours and gets
 * 0700. */
static int prepare_dir(const char *dir, struct pg_error *err) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    char *parent = pg_strdup(dir);
    if (!parent) return pg_error_set(err, PG_ENOMEM, "out of memory");
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
      *slash = '\0';
      if (pg_mkdir_p(parent) != 0) {
        int rc = pg_error_set(err, PG_EIO, "cannot create %s: %s", parent, strerror(errno));
        free(parent);
        return rc;
      }
    }
    free(parent);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
      return pg_error_set(err, PG_EIO, "cannot create %s: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0)
      return pg_error_set(err, PG_EIO, "%s: %s", dir, strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    return pg_error_set(err, PG_EINVAL, "control directory %s is not a directory", dir);
  if (st.st_uid != geteuid())
    return pg_error_set(err, PG_EINVAL, "control directory %s belongs to uid %d, not to us "
                        "(%d)", dir, (int)st.st_uid, (int)geteuid());
  if ((st.st_mode & 0777) != 0700 && chmod(dir, 0700) != 0)
    return pg_error_set(err, PG_EIO, "chmod 0700 %s: %s", dir, strerror(errno));
  return PG_OK;
}

/* An absolute form of dir (the daemon's threads change directory). */
static char *absolute(const char *dir) {
  if (dir[0] == '/') return pg_strdup(dir);
  char *cwd = getcwd(NULL, 0);
  char *abs = cwd ? pg_path_join(cwd, dir) : NULL;
  free(cwd);
  return abs;
}

/* Takes the pidfile's lock (held for the daemon's life: a live holder is a live
 * daemon, whatever the file says). */
static int lock_pidfile(struct daemon *d, struct pg_error *err) {
  for (int tries = 0; tries < 50; tries++) {
    int fd = open(d->pid_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return pg_error_set(err, PG_EIO, "%s: %s", d->pid_path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = "";
      ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
      buf[n > 0 ? n : 0] = '\0';
      close(fd);
      return pg_error_set(err, PG_EINVAL, "another phasegate serve (pid %d) owns %s",
                          atoi(buf), d->dir);
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(d->pid_path, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      d->pid_fd = fd;
      return PG_OK;
    }
    close(fd); /* unlinked by a daemon that was exiting: take the new file */
  }
  return pg_error_set(err, PG_EIO, "%s keeps changing", d->pid_path);
}

static int daemon_setup(struct daemon *d, struct pg_error *err) {
  d->lsock = d->sigfd = d->jobs_r = d->jobs_w = d->pid_fd = -1;
  d->started_ms = d->last_active_ms = pg_now_ms();
  d->next_check_ms = d->started_ms + SERVE_CHECK_MS;
  d->exe = exe_fp();
  if (!(d->dir = absolute(d->o->control_dir)))
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  PG_RETURN_IF_ERROR(prepare_dir(d->dir, err));
  d->sock_path = pg_path_join(d->dir, PG_SERVE_SOCK);
  d->pid_path = pg_path_join(d->dir, PG_SERVE_PID);
  d->workers = pg_path_join(d->dir, PG_SERVE_WORKERS);
  if (!d->sock_path || !d->pid_path || !d->workers)
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (mkdir(d->workers, 0700) != 0 && errno != EEXIST)
    return pg_error_set(err, PG_EIO, "cannot create %s: %s", d->workers, strerror(errno));
  PG_RETURN_IF_ERROR(lock_pidfile(d, err));

  unlink(d->sock_path); /* stale: its daemon no longer holds the pidfile */
  struct sockaddr_un sa;
  int dirfd;
  if (sock_addr(d->dir, &sa, &dirfd) != 0)
    return pg_error_set(err, PG_EIO, "%s: %s", d->dir, strerror(errno));
  d->lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  mode_t old = umask(077);
  int b = d->lsock >= 0 ? bind(d->lsock, (struct sockaddr *)&sa, sizeof sa) : -1;
  int e = errno;
  umask(old);
  if (dirfd >= 0) close(dirfd);
  if (b != 0 || listen(d->lsock, 128) != 0)
    return pg_error_set(err, PG_EIO, "cannot listen on %s: %s", d->sock_path,
                        strerror(b != 0 ? e : errno));
  struct stat st;
  if (stat(d->dir, &st) != 0) return pg_error_set(err, PG_EIO, "%s: %s", d->dir, strerror(errno));
  d->dir_dev = st.st_dev, d->dir_ino = st.st_ino;
  if (stat(d->sock_path, &st) != 0)
    return pg_error_set(err, PG_EIO, "%s: %s", d->sock_path, strerror(errno));
  d->sock_dev = st.st_dev, d->sock_ino = st.st_ino;

  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return pg_error_set(err, PG_EIO, "pipe: %s", strerror(errno));
  d->jobs_r = p[0], d->jobs_w = p[1];
  fcntl(d->jobs_r, F_SETFL, O_NONBLOCK); /* the loop drains it; the threads' writes block */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  d->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (d->sigfd < 0) return pg_error_set(err, PG_EIO, "signalfd: %s", strerror(errno));

  char pid[32];
  int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  if (ftruncate(d->pid_fd, 0) != 0 || pwrite(d->pid_fd, pid, (size_t)n, 0) != n)
    return pg_error_set(err, PG_EIO, "%s: %s", d->pid_path, strerror(errno));
  return PG_OK;
}

/* Prestart: one process per (mode, device) of --impl, with the daemon's own
 * environment and directory (the start fixture's), concurrently with serving. */
static void prestart(struct daemon *d) {
  const char *impl = d->o->impl_spec;
  if (!impl || !*impl) return;
  const char *modes = d->o->modes && *d->o->modes ? d->o->modes : "sim";
  const char *devices = d->o->devices && *d->o->devices ? d->o->devices : "0";
  size_t n_env = 0;
  while (d->start_env && d->start_env[n_env]) n_env++;
  const char *host = strncmp(impl, "plugin:", 7) == 0 ? d->host : NULL;
  for (const char *m = modes; m && *m;) {
    const char *me = strchr(m, ',');
    char mode[64];
    snprintf(mode, sizeof mode, "%.*s", (int)(me ? (size_t)(me - m) : strlen(m)), m);
    for (const char *v = devices; v && *v;) {
      int device = atoi(v);
      struct pool *pl = pool_get(d, impl, mode, device, d->o->rlimit_as, d->start_cwd,
                                 current_umask(), d->start_env, n_env, host);
      struct pg_error err;
      if (pl) {
        pool_refresh(d, pl, spec_fp(impl, d->start_cwd, host));
        if (pool_alive(pl, d, 0, 1) == 0 && start_proc(d, pl, d->o->start_timeout_s, &err) != PG_OK)
          dlog(d, "prestart: %s", err.message);
      }
      v = strchr(v, ',');
      v = v ? v + 1 : NULL;
    }
    m = me ? me + 1 : NULL;
  }
}

/* ------------------------------------------------------------------ the loop */

static void check_dir(struct daemon *d) {
  struct stat st;
  if (stat(d->dir, &st) != 0 || st.st_ino != d->dir_ino || st.st_dev != d->dir_dev) {
    d->exiting = 1;
    d->exit_reason = "its control directory is gone";
  } else if (stat(d->sock_path, &st) != 0 || st.st_ino != d->sock_ino ||
             st.st_dev != d->sock_dev) {
    d->exiting = 1;
    d->exit_reason = "its socket is gone";
  }
}

static void on_signals(struct daemon *d) {
  struct signalfd_siginfo si;
  int chld = 0;
  while (read(d->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGCHLD) chld = 1;
    else if (!d->exiting) {
      d->exiting = 1;
      d->exit_reason = si.ssi_signo == SIGTERM ? "SIGTERM" : si.ssi_signo == SIGINT ? "SIGINT"
                                                                                  : "SIGHUP";
    }
  }
  if (chld) reap_all(d);
}

static void on_jobs(struct daemon *d) {
  struct job *j;
  while (read(d->jobs_r, &j, sizeof j) == (ssize_t)sizeof j) job_done(d, j);
}

static void loop(struct daemon *d) {
  size_t cap = 0;
  struct pollfd *pfd = NULL;
  void **obj = NULL;
  while (!d->exiting) {
    size_t need = 3 + (size_t)d->n_conns;
    for (struct wproc *w = d->procs; w; w = w->next) need++;
    if (need > cap) {
      cap = need * 2;
      struct pollfd *np = realloc(pfd, cap * sizeof *pfd);
      if (np) pfd = np;
      void **no = realloc(obj, cap * sizeof *obj);
      if (no) obj = no;
      if (!np || !no) {
        d->exiting = 1;
        d->exit_reason = "out of memory";
        break;
      }
    }
    size_t n = 0, first_conn, first_proc;
    pfd[n++] = (struct pollfd){d->lsock, POLLIN, 0};
    pfd[n++] = (struct pollfd){d->sigfd, POLLIN, 0};
    pfd[n++] = (struct pollfd){d->jobs_r, POLLIN, 0};
    first_conn = n;
    for (struct conn *c = d->conns; c; c = c->next)
      if (!c->closed) obj[n] = c, pfd[n++] = (struct pollfd){c->fd, POLLIN, 0};
    first_proc = n;
    double now = pg_now_ms(), wake = d->next_check_ms;
    for (struct wproc *w = d->procs; w; w = w->next) {
      if (w->gone) continue;
      if (w->state == W_IDLE && w->p.sock >= 0)
        obj[n] = w, pfd[n++] = (struct pollfd){w->p.sock, POLLIN, 0};
      if (w->state == W_DYING && !w->killed && w->deadline < wake) wake = w->deadline;
      /* killed after its SIGCHLD was taken (it died unseen): look again soon */
      if (w->state == W_DYING && w->killed && now + 20 < wake) wake = now + 20;
    }
    double idle_at = d->last_active_ms + d->o->idle_timeout_s * 1000;
    if (d->n_conns == 0 && idle_at < wake) wake = idle_at;
    int timeout = wake > now ? (int)(wake - now) + 1 : 0;
    int pr = poll(pfd, n, timeout);
    if (pr < 0 && errno != EINTR) {
      d->exiting = 1;
      d->exit_reason = "poll failed";
      break;
    }
    if (pr > 0) {
      if (pfd[1].revents) on_signals(d);
      if (pfd[2].revents) on_jobs(d);
      if (pfd[0].revents) on_accept(d);
      for (size_t i = first_conn; i < first_proc; i++)
        if (pfd[i].revents) conn_read(d, obj[i]);
      for (size_t i = first_proc; i < n; i++) {
        struct wproc *w = obj[i];
        if (pfd[i].revents && !w->gone && w->state == W_IDLE)
          w_retire(d, w, "it wrote or closed its socket while idle");
      }
    }
    now = pg_now_ms();
    int dying = 0;
    for (struct wproc *w = d->procs; w; w = w->next) {
      if (w->gone || w->state != W_DYING) continue;
      if (!w->killed && now >= w->deadline) kill_group(w);
      dying |= w->killed;
    }
    if (dying) reap_all(d);
    if (now >= d->next_check_ms) {
      d->next_check_ms = now + SERVE_CHECK_MS;
      reap_all(d);
      check_dir(d);
    }
    if (!d->exiting && d->n_conns == 0 && now >= d->last_active_ms + d->o->idle_timeout_s * 1000) {
      d->exiting = 1;
      d->exit_reason = "idle";
    }
    for (struct conn *c = d->conns; c; c = c->next) conn_lines(d, c);
    collect(d);
  }
  free(pfd);
  free(obj);
}

/* Ends every process: starts in flight are cut short (their process killed), idle ones
 * get EOF and a grace, then every group is killed and every pid reaped. */
static void shutdown_all(struct daemon *d) {
  while (d->n_jobs > 0) {
    for (struct wproc *w = d->procs; w; w = w->next)
      if (!w->gone && w->state == W_STARTING && w->job) {
        int pid = __atomic_load_n(&w->job->p.pid, __ATOMIC_RELAXED);
        if (pid > 0) kill(-pid, SIGKILL);
      }
    struct pollfd p = {d->jobs_r, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) on_jobs(d);
  }
  for (struct wproc *w = d->procs; w; w = w->next)
    if (!w->gone && !w->reaped && w->p.sock >= 0) shutdown(w->p.sock, SHUT_RDWR);
  double until = pg_now_ms() + SERVE_GRACE_MS;
  for (;;) {
    int left = 0;
    for (struct wproc *w = d->procs; w; w = w->next) {
      if (w->gone || w->reaped || w->pid <= 0) continue;
      int st;
      if (waitpid(w->pid, &st, WNOHANG) == w->pid) w->reaped = 1, w->status = st;
      else left++;
    }
    if (!left || pg_now_ms() >= until) break;
    usleep(5000);
  }
  for (struct wproc *w = d->procs; w; w = w->next) {
    if (w->gone || w->pid <= 0) continue;
    kill(-w->pid, SIGKILL);
    if (!w->reaped) {
      int st;
      while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
      }
      w->reaped = 1, w->status = st;
    }
    if (w->end_to) answer_end(d, w->end_to, w, 0);
    w_remove(w);
  }
  collect(d);
}

static void daemon_free(struct daemon *d) {
  for (struct conn *c = d->conns; c; c = c->next)
    if (!c->closed) conn_close(d, c);
  collect(d);
  for (struct pool *pl = d->pools, *next; pl; pl = next) {
    next = pl->next;
    for (struct waiter *q = pl->queue, *qn; q; q = qn) qn = q->next, free(q);
    free(pl->impl), free(pl->mode), free(pl->cwd), free(pl->host);
    free_strv(pl->env);
    free(pl);
  }
  if (d->lsock >= 0) close(d->lsock);
  if (d->sigfd >= 0) close(d->sigfd);
  if (d->jobs_r >= 0) close(d->jobs_r);
  if (d->jobs_w >= 0) close(d->jobs_w);
  if (d->pid_fd >= 0) close(d->pid_fd);
  free(d->dir), free(d->sock_path), free(d->pid_path), free(d->workers);
  free_strv(d->start_env);
  free(d->start_cwd);
  free(d->host);
}

void pg_serve_options_init(struct pg_serve_options *o) {
  memset(o, 0, sizeof *o);
  o->slots = 1;
  o->idle_timeout_s = 600;
  o->start_timeout_s = 120;
}

int pg_serve_daemon(const struct pg_serve_options *o, FILE *log, struct pg_error *err) {
  if (!o || !o->control_dir || !*o->control_dir)
    return pg_error_set(err, PG_EINVAL, "serve needs a control directory");
  if (o->detached) { /* nothing inherited from the starter's parent (CTest's pipes…) */
    int keep = log ? fileno(log) : -1;
    if (keep >= 3) {
      if (keep > 3) close_range(3, (unsigned)keep - 1, 0);
      close_range((unsigned)keep + 1, ~0u, 0);
    } else {
      close_range(3, ~0u, 0);
    }
  }
  struct daemon d;
  memset(&d, 0, sizeof d);
  struct pg_serve_options opts = *o;
  if (opts.slots < 1) opts.slots = 1;
  if (opts.idle_timeout_s <= 0) opts.idle_timeout_s = 600;
  d.o = &opts;
  d.log = log;

  /* The environment goes to workers only as their clients' (prestart: this one). */
  size_t n_env = 0;
  while (environ && environ[n_env]) n_env++;
  d.start_env = calloc(n_env + 1, sizeof *d.start_env);
  for (size_t i = 0; d.start_env && i < n_env; i++) d.start_env[i] = pg_strdup(environ[i]);
  d.start_cwd = getcwd(NULL, 0);
  d.host = pg_strdup(pg_plugin_host_path());

  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe);

  int rc = d.start_env && d.start_cwd ? daemon_setup(&d, err)
                                      : pg_error_set(err, PG_ENOMEM, "out of memory");
  if (rc == PG_OK) {
    clearenv();
    if (chdir("/") != 0) {
    }
    dlog(&d, "serving %s (pid %d, slots %d, idle timeout %g s)", d.dir, (int)getpid(),
         opts.slots, opts.idle_timeout_s);
    prestart(&d);
    loop(&d);
    dlog(&d, "exiting: %s", d.exit_reason ? d.exit_reason : "?");
    /* Nobody can connect any more; then every process goes. */
    close(d.lsock);
    d.lsock = -1;
    struct stat st;
    if (stat(d.sock_path, &st) == 0 && st.st_ino == d.sock_ino && st.st_dev == d.sock_dev)
      unlink(d.sock_path);
    shutdown_all(&d);
    if (fstat(d.pid_fd, &st) == 0) {
      struct stat now;
      if (stat(d.pid_path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
        unlink(d.pid_path);
    }
    if (d.stop_conn) {
      cJSON *a = cJSON_CreateObject();
      cJSON_AddStringToObject(a, "status", "ok");
      cJSON_AddNumberToObject(a, "pid", getpid());
      answer(&d, d.stop_conn, a, -1);
      cJSON_Delete(a);
    }
    dlog(&d, "stopped");
  }
  daemon_free(&d);
  sigaction(SIGPIPE, &old_pipe, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* ================================================================== start / stop */

/* A ping answer, if a daemon answers on dir. */
static cJSON *ping_dir(const char *dir) {
  int conn;
  cJSON *a = NULL;
  if (connect_ping(dir, &conn, &a, NULL) != PG_OK) return NULL;
  close(conn);
  return a;
}

/* Holds <dir>/serve.lock (exclusive) for a starter or stopper: -1 on failure. */
static int take_lock(const char *dir, struct pg_error *err) {
  char *path = pg_path_join(dir, PG_SERVE_LOCK);
  int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
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
  if (connect_ping(dir, &conn, &ping, NULL) != PG_OK) {
    reclaim(dir);
    return PG_OK;
  }
  *pid = (int)num(ping, "pid", 0);
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
  while (!pid_gone(*pid) && pg_now_ms() < until) usleep(5000);
  if (!pid_gone(*pid)) {
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
  int lock = take_lock(control_dir, err);
  if (lock < 0) return err ? err->code : PG_EIO;
  int rc = stop_locked(control_dir, timeout_s, pid, err);
  close(lock);
  return rc;
}

int pg_serve_start(const struct pg_serve_options *o, const char *const *daemon_argv, int *pid,
                   int *already, struct pg_error *err) {
  *pid = 0, *already = 0;
  if (!o || !o->control_dir || !*o->control_dir)
    return pg_error_set(err, PG_EINVAL, "serve needs a control directory");
  const char *dir = o->control_dir;
  PG_RETURN_IF_ERROR(prepare_dir(dir, err));
  int lock = take_lock(dir, err);
  if (lock < 0) return err ? err->code : PG_EIO;
  int rc = PG_OK;
  cJSON *ping = ping_dir(dir);
  if (ping) {
    char exe[32];
    snprintf(exe, sizeof exe, "%016" PRIx64, exe_fp());
    const char *theirs = str(ping, "exe");
    int same = theirs && strcmp(theirs, exe) == 0;
    *pid = (int)num(ping, "pid", 0);
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
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path ? log_path : "/dev/null",
                                   O_WRONLY | O_APPEND | O_CREAT, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &defaults);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);
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
    int ready = ping && (int)num(ping, "pid", 0) == (int)child;
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
