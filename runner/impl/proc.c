/* phasegate runner — persistent impl processes (proc.h): spawn, handshake, one
 * request/answer exchange at a time on a private socket, per-call capture from the
 * process's log file, and a kill of the whole process group whenever the protocol
 * is broken. The socket (not a pipe) lets the plugin host receive a memory fd with a
 * request (SCM_RIGHTS) and lets a send to a dead process fail with EPIPE instead of
 * SIGPIPE (MSG_NOSIGNAL). */
#include "impl/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "impl/sandbox.h"

extern char **environ;

#define PG_PROC_MAX_LINE (4u << 20) /* a longer protocol line is a protocol error */

void pg_proc_init(struct pg_proc *p) {
  memset(p, 0, sizeof *p);
  p->sock = p->log_fd = p->pidfd = -1;
  p->next_id = 1;
}

void pg_proc_result_init(struct pg_proc_result *r) { memset(r, 0, sizeof *r); }

void pg_proc_result_reset(struct pg_proc_result *r) {
  if (!r) return;
  cJSON_Delete(r->answer);
  free(r->captured);
  memset(r, 0, sizeof *r);
}

int pg_proc_alive(struct pg_proc *p) {
  if (!p || p->pid <= 0) return 0;
  /* A process that ended between calls (or closed its socket) is not served a call: it
   * is reaped here and the caller starts a fresh one, so the next case is not blamed. */
  struct pollfd pfd = {p->sock, POLLIN, 0};
  int hup = poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR));
  if (!hup && pfd.revents & POLLIN) {
    char c;
    hup = recv(p->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  if (!hup && !p->remote_end && waitpid(p->pid, NULL, WNOHANG) == 0) return 1;
  if (!hup && p->remote_end) return 1;
  pg_proc_stop(p, 0, 0);
  return 0;
}

/* ------------------------------------------------------------------ spawning */

/* 1 when entry is PHASEGATE_DIE_WITH=…: never passed on as found (an inherited one
 * names some other process; a leased process must not die with its client). */
static int is_die_with(const char *entry) {
  size_t n = sizeof PG_DIE_WITH_ENV - 1;
  return strncmp(entry, PG_DIE_WITH_ENV, n) == 0 && entry[n] == '=';
}

/* 1 when add holds PHASEGATE_DIE_WITH=<this process> (the caller asks for it). */
static int asks_die_with(const char *const *add) {
  for (size_t j = 0; add && add[j]; j++)
    if (is_die_with(add[j]) && strtol(add[j] + sizeof PG_DIE_WITH_ENV, NULL, 10) == (long)getpid())
      return 1;
  return 0;
}

/* environ with every name of `add` replaced by its entry there, plus the tag and
 * die_with (may be NULL). */
static char **build_env(const char *const *add, const char *tag, const char *die_with) {
  size_t n_env = 0, n_add = 0;
  while (environ && environ[n_env]) n_env++;
  while (add && add[n_add]) n_add++;
  char **envp = calloc(n_env + n_add + 3, sizeof *envp);
  if (!envp) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
    int replaced = strncmp(tag, environ[i], len) == 0 || is_die_with(environ[i]);
    for (size_t j = 0; j < n_add && !replaced; j++) replaced = strncmp(add[j], environ[i], len) == 0;
    if (!replaced) envp[k++] = environ[i];
  }
  for (size_t j = 0; j < n_add; j++)
    if (!is_die_with(add[j])) envp[k++] = (char *)add[j];
  envp[k++] = (char *)tag;
  if (die_with) envp[k++] = (char *)die_with;
  return envp;
}

/* A private log file for the process's stdout and stderr. */
static int open_log(struct pg_proc *p, const struct pg_proc_spec *s, int *wfd,
                    struct pg_error *err) {
  const char *dir = s->log_dir;
  if (!dir || !*dir) dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char tag[64] = "";
  for (size_t i = 0; s->log_tag && s->log_tag[i] && i + 1 < sizeof tag; i++) {
    char c = s->log_tag[i];
    tag[i] = (c == '/' || c == ' ') ? '_' : c;
    tag[i + 1] = '\0';
  }
  p->log_path = pg_path_fmt("%s/phasegate-worker-%s%sXXXXXX", dir, tag, tag[0] ? "-" : "");
  if (!p->log_path) return pg_error_set(err, PG_ENOMEM, "out of memory");
  /* --work-dir may name a directory no case directory has made yet (a v1.1 worker's
   * calls make none): made here as the exec case directories make it */
  mkdir(dir, 0777);
  *wfd = mkostemp(p->log_path, O_CLOEXEC | O_APPEND);
  if (*wfd < 0)
    return pg_error_set(err, PG_EIO, "cannot create a worker log in %s: %s", dir, strerror(errno));
  p->log_fd = open(p->log_path, O_RDONLY | O_CLOEXEC);
  if (p->log_fd < 0)
    return pg_error_set(err, PG_EIO, "%s: %s", p->log_path, strerror(errno));
  return PG_OK;
}

/* fd moved to a number >= 10, so the dup2 actions below can never collide with it. */
static int high_fd(int fd) {
  if (fd < 0 || fd >= 10) return fd;
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return h;
}

void pg_spawn_attr_init(posix_spawnattr_t *at, short flags) {
  posix_spawnattr_init(at);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(at, &none);
  posix_spawnattr_setsigdefault(at, &defaults);
  posix_spawnattr_setflags(at, (short)(flags | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF));
}

static int spawn(struct pg_proc *p, const struct pg_proc_spec *s, int child_sock, int log_w,
                 struct pg_error *err) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log_w, 1);
  posix_spawn_file_actions_adddup2(&fa, log_w, 2);
  posix_spawn_file_actions_adddup2(&fa, child_sock, 3);
  posix_spawn_file_actions_adddup2(&fa, child_sock, 4);
  pg_spawn_attr_init(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  pg__proc_tag(p, p->tag, sizeof p->tag);
  /* Nothing outlives the runner: PHASEGATE_DIE_WITH=<this process> tells the plugin
   * host (and phasegate's Python worker) to set PR_SET_PDEATHSIG at start, and any
   * other program is started through the host's exec shim (`--exec`), which sets it,
   * checks that this process is still its parent, and execs the real argv: posix_spawn
   * runs no code of ours in the child. Without a host to be found, only the processes
   * that read the entry themselves die with us. */
  char die_with[48];
  snprintf(die_with, sizeof die_with, PG_DIE_WITH_ENV "=%ld", (long)getpid());
  int die = asks_die_with(s->env_add);
  const char *host = die ? pg_plugin_host_path() : NULL;
  int shim = host && strcmp(s->argv[0], host) != 0;
  char **envp = build_env(s->env_add, p->tag, die ? die_with : NULL);
  /* An address-space limit must be in place before the command runs (a prlimit() after
   * the spawn races with a shell that forks the command): a shell sets it, then execs
   * the real argv. */
  const char *wrapped[76];
  const char *const *argv = s->argv;
  char limit[96];
  if (s->rlimit_as || shim) {
    snprintf(limit, sizeof limit, "ulimit -v %llu || exit 126; exec \"$0\" \"$@\"",
             (unsigned long long)(s->rlimit_as / 1024));
    int n = 0;
    if (shim) wrapped[n++] = host, wrapped[n++] = "--exec";
    if (s->rlimit_as) wrapped[n++] = "/bin/sh", wrapped[n++] = "-c", wrapped[n++] = limit;
    for (int i = 0; s->argv[i] && n < 75; i++) wrapped[n++] = s->argv[i];
    wrapped[n] = NULL;
    argv = wrapped;
  }
  int rc = PG_OK;
  pid_t pid = 0;
  if (!envp) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
  else {
    int e = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, envp);
    if (e != 0) rc = pg_error_set(err, PG_EIO, "cannot start '%s': %s", argv[0], strerror(e));
  }
  free(envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != PG_OK) return rc;
  p->pid = (int)pid;
  pg__watch_add(p->pid, p->tag, NULL, 0); /* its own group (SETPGROUP 0); exec()ed: its
                                             forks carry the tag */
  struct rlimit core = {0, 0};
  prlimit(pid, RLIMIT_CORE, &core, NULL);
  return PG_OK;
}

/* ------------------------------------------------------------------ ending */

/* Reaps the process, waiting at most wait_ms for it to exit by itself, then kills its
 * group. Fills the exit fields of r (when r is not NULL). */
static void reap(struct pg_proc *p, int wait_ms, struct pg_proc_result *r) {
  if (p->pid <= 0) return;
  if (p->remote_end) {
    p->remote_end(p->remote_ctx, p, wait_ms, r);
    p->remote_end = NULL;
    p->pid = 0;
    return;
  }
  int status = 0, e;
  double until = pg_now_ms() + wait_ms;
  /* exited by itself? (not reaped yet: see pg_child_exited) */
  while ((e = pg_child_exited(p->pid, 0)) == 0 && pg_now_ms() < until) usleep(2000);
  int got = e == 1;
  if (e < 0) { /* not our child (any more): its pid is nobody we may signal */
    pg__watch_remove(p->pid);
    p->pid = 0;
    return;
  }
  /* The group (the process too, if still there, and its background children) and
   * children that left it with setsid(), all gone before the caller starts a
   * replacement (a flock they hold is released). By the tag alone, not by the log file:
   * a persistent process is exec()ed, so its descendants carry the tag, while
   * `phasegate run` clients of `phasegate serve` hold the worker's log open to read
   * their calls' output, and must not be taken for its children (serve/load_short,
   * serve/faults_short). */
  status = pg_reap_child(p->pid, p->tag, NULL, 0, 1000);
  if (r && got) {
    if (WIFEXITED(status)) r->exited = 1, r->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r->signaled = 1, r->signo = WTERMSIG(status);
  }
  p->pid = 0;
}

int pg_proc_log_has_bytes(const char *log_path) {
  struct stat st;
  return log_path && *log_path && stat(log_path, &st) == 0 && st.st_size > 0;
}

static void close_all(struct pg_proc *p, int keep_log) {
  if (p->sock >= 0) close(p->sock);
  if (p->pidfd >= 0) close(p->pidfd);
  if (p->log_fd >= 0) close(p->log_fd);
  /* an empty log is not kept: no message names it (pg_proc_log_has_bytes), and kept
   * ones pile up in $TMPDIR */
  if (p->log_path && (!keep_log || !pg_proc_log_has_bytes(p->log_path))) unlink(p->log_path);
  free(p->log_path);
  free(p->buf);
  int64_t next = p->next_id;
  pg_proc_init(p);
  p->next_id = next; /* ids stay unique across replacements */
}

void pg_proc_stop(struct pg_proc *p, double grace_s, int keep_log) {
  if (!p) return;
  if (p->sock >= 0) shutdown(p->sock, SHUT_RDWR); /* EOF: the protocol's "exit now" */
  reap(p, (int)(grace_s * 1000), NULL);
  close_all(p, keep_log);
}

/* ------------------------------------------------------------------ lines */

static uint64_t log_size(const struct pg_proc *p) {
  struct stat st;
  return (p->log_fd >= 0 && fstat(p->log_fd, &st) == 0) ? (uint64_t)st.st_size : 0;
}

/* The log bytes since the call was sent (the last PG_PROC_CAPTURE_MAX of them). */
static void capture(struct pg_proc *p, struct pg_proc_result *r) {
  uint64_t end = log_size(p), from = p->log_mark;
  if (end <= from) return;
  if (end - from > PG_PROC_CAPTURE_MAX) {
    from = end - PG_PROC_CAPTURE_MAX;
    r->captured_truncated = 1;
  }
  size_t n = (size_t)(end - from);
  r->captured = malloc(n + 1);
  if (!r->captured) return;
  ssize_t got = pread(p->log_fd, r->captured, n, (off_t)from);
  r->captured_len = got > 0 ? (size_t)got : 0;
  r->captured[r->captured_len] = '\0';
}

/* Reads until a whole line is buffered. 1: *line (malloc'ed, without '\n'); 0: EOF;
 * -1: timeout; -2: the line is too long; -3: out of memory. */
static int read_line(struct pg_proc *p, double deadline_ms, char **line) {
  for (;;) {
    char *nl = p->len ? memchr(p->buf, '\n', p->len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - p->buf);
      *line = malloc(n + 1);
      if (!*line) return -3;
      memcpy(*line, p->buf, n);
      (*line)[n] = '\0';
      memmove(p->buf, nl + 1, p->len - n - 1);
      p->len -= n + 1;
      return 1;
    }
    if (p->len >= PG_PROC_MAX_LINE) return -2;
    if (p->cap - p->len < 65536) {
      size_t cap = p->cap ? p->cap * 2 : 131072;
      char *b = realloc(p->buf, cap);
      if (!b) return -3;
      p->buf = b, p->cap = cap;
    }
    int wait = -1;
    if (deadline_ms > 0) {
      double left = deadline_ms - pg_now_ms();
      if (left <= 0) return -1;
      wait = (int)left + 1;
    }
    struct pollfd pfd = {p->sock, POLLIN, 0};
    int pr = poll(&pfd, 1, wait);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return -1;
    ssize_t got = recv(p->sock, p->buf + p->len, p->cap - p->len, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return 0;
    p->len += (size_t)got;
  }
}

/* Quotes the start of a bad line for a message (printable ASCII only), through the
 * impl's barrier when it has one: the line is the process's text, not ours. */
static void excerpt(const struct pg_proc *p, const char *line, char *buf, size_t size) {
  size_t n = 0;
  for (; line && *line && n + 4 < size && n < 80; line++)
    buf[n++] = (*line >= 32 && *line < 127) ? *line : '?';
  if (line && *line && n + 4 < size) buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
  buf[n] = '\0';
  if (p->quote) {
    char *safe = p->quote(buf);
    snprintf(buf, size, "%s", safe ? safe : "(withheld)");
    free(safe);
  }
}

/* The end of a call that got no proper answer: kill, reap, capture. */
static void end_call(struct pg_proc *p, enum pg_proc_end end, struct pg_proc_result *r) {
  r->end = end;
  reap(p, end == PG_PROC_EXITED ? 1000 : 0, r);
  capture(p, r);
  r->wall_ms = pg_now_ms() - p->sent_ms;
}

/* ------------------------------------------------------------------ API */

int pg_proc_spawn(struct pg_proc *p, const struct pg_proc_spec *s, struct pg_error *err) {
  pg_proc_init(p);
  int sv[2], log_w = -1;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return pg_error_set(err, PG_EIO, "socketpair: %s", strerror(errno));
  p->sock = sv[0];
  int child = high_fd(sv[1]);
  int rc = open_log(p, s, &log_w, err);
  if (rc == PG_OK) {
    log_w = high_fd(log_w);
    rc = spawn(p, s, child, log_w, err);
  }
  if (child >= 0) close(child);
  if (log_w >= 0) close(log_w);
  if (rc != PG_OK) {
    close_all(p, 0);
    return rc;
  }
  const char *what = s->argv[s->argv[1] && strcmp(s->argv[1], "-c") == 0 ? 2 : 0];
  if (what != s->argv[0] && strncmp(what, "exec ", 5) == 0) what += 5; /* as the user wrote it */
  snprintf(p->what, sizeof p->what, "%s", what);
  p->handshake_timeout_s = s->start_timeout_s > 0 ? s->start_timeout_s : 120;
  p->handshake_pending = 1;
  p->sent_ms = pg_now_ms();
  p->log_mark = 0;
  return PG_OK;
}

int pg_proc_handshake(struct pg_proc *p, struct pg_proc_result *r, struct pg_error *err) {
  if (!p->handshake_pending) return PG_OK;
  p->handshake_pending = 0;
  char *line = NULL;
  int got = read_line(p, p->sent_ms + p->handshake_timeout_s * 1000, &line);
  cJSON *hello = got == 1 ? cJSON_Parse(line) : NULL;
  cJSON *v = cJSON_GetObjectItemCaseSensitive(hello, "phasegate_worker");
  int ok = cJSON_IsNumber(v) && v->valuedouble == 1, rc = PG_OK;
  if (!ok) {
    char ex[100];
    excerpt(p, line, ex, sizeof ex);
    if (got == 1)
      snprintf(r->protocol, sizeof r->protocol, "its first line was '%s', not the handshake "
               "{\"phasegate_worker\": 1}", ex);
    end_call(p, got == 0 ? PG_PROC_EXITED : got == -1 ? PG_PROC_TIMEOUT : PG_PROC_PROTOCOL, r);
    /* how it ended tells a crash at import from a kill from outside (OOM killer, a
     * stray kill -9) */
    char how[64] = "";
    if (got == 0 && r->signaled) snprintf(how, sizeof how, " (killed by signal %d)", r->signo);
    else if (got == 0 && r->exited) snprintf(how, sizeof how, " (exit status %d)", r->exit_code);
    int logged = pg_proc_log_has_bytes(p->log_path);
    rc = pg_error_set(err, PG_EIMPL, "'%s' %s%s (worker protocol: the first line on fd 4 must "
                      "be {\"phasegate_worker\": 1}; %s%s)", p->what,
                      got == 0 ? "ended before its handshake"
                      : got == -1 ? "sent no handshake in time" : "did not start with the handshake",
                      how, logged ? "its log: " : "it wrote nothing to stdout or stderr",
                      logged ? p->log_path : "");
  } else {
    p->start_ms = pg_now_ms() - p->sent_ms;
    /* v1.1 is offered by exactly "shm": 1; anything else is a v1 worker (which must
     * serve file requests anyway) */
    const cJSON *shm = cJSON_GetObjectItemCaseSensitive(hello, "shm");
    p->shm = cJSON_IsNumber(shm) && shm->valuedouble == 1;
  }
  cJSON_Delete(hello);
  free(line);
  if (!ok) close_all(p, 1);
  return rc;
}

int pg_proc_start(struct pg_proc *p, const struct pg_proc_spec *s, struct pg_proc_result *r,
                  struct pg_error *err) {
  PG_RETURN_IF_ERROR(pg_proc_spawn(p, s, err));
  return pg_proc_handshake(p, r, err);
}

ssize_t pg__send_with_fd(int sock, const void *buf, size_t n, int attach_fd) {
  struct iovec iov = {(void *)buf, n};
  char ctl[CMSG_SPACE(sizeof(int))];
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (attach_fd >= 0) {
    memset(ctl, 0, sizeof ctl);
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &attach_fd, sizeof(int));
  }
  return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

int pg_proc_send_line(int fd, const cJSON *o, int attach_fd, int timeout_ms) {
  char *text = cJSON_PrintUnformatted(o);
  if (!text) return -1;
  size_t n = strlen(text);
  text[n] = '\n'; /* replaces the NUL: the buffer is not used as a string below */
  size_t off = 0;
  int rc = 0;
  while (off < n + 1) {
    ssize_t w = pg__send_with_fd(fd, text + off, n + 1 - off, off == 0 ? attach_fd : -1);
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

int pg_proc_send(struct pg_proc *p, cJSON *request, int attach_fd, int64_t *id,
                 struct pg_error *err) {
  *id = p->next_id++;
  cJSON_DeleteItemFromObjectCaseSensitive(request, "id");
  if (!cJSON_AddNumberToObject(request, "id", (double)*id))
    return pg_error_set(err, PG_ENOMEM, "out of memory");
  p->log_mark = log_size(p);
  p->sent_ms = pg_now_ms();
  /* a process that is gone is not an error here: the wait reports how it ended */
  if (p->sock >= 0) pg_proc_send_line(p->sock, request, attach_fd, -1);
  return PG_OK;
}

int pg_proc_wait(struct pg_proc *p, int64_t id, double timeout_s, struct pg_proc_result *r,
                 struct pg_error *err) {
  if (p->pid <= 0) return pg_error_set(err, PG_EINTERNAL, "no worker process to wait for");
  double deadline = timeout_s > 0 ? p->sent_ms + timeout_s * 1000 : 0;
  char *line = NULL;
  int got = read_line(p, deadline, &line);
  if (got == -3) return pg_error_set(err, PG_ENOMEM, "out of memory");
  if (got != 1) {
    if (got == -2)
      snprintf(r->protocol, sizeof r->protocol, "an answer line longer than %u bytes",
               PG_PROC_MAX_LINE);
    end_call(p, got == 0 ? PG_PROC_EXITED : got == -1 ? PG_PROC_TIMEOUT : PG_PROC_PROTOCOL, r);
    return PG_OK;
  }
  cJSON *a = cJSON_Parse(line);
  cJSON *aid = cJSON_GetObjectItemCaseSensitive(a, "id");
  char ex[100];
  excerpt(p, line, ex, sizeof ex);
  free(line);
  if (!cJSON_IsObject(a)) {
    snprintf(r->protocol, sizeof r->protocol, "a line that is not a JSON object: '%s'", ex);
  } else if (!cJSON_IsNumber(aid) || aid->valuedouble != (double)id) {
    snprintf(r->protocol, sizeof r->protocol, "an answer for id %s while request %lld was "
             "waiting: '%s'", cJSON_IsNumber(aid) ? "other" : "(none)", (long long)id, ex);
  } else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "status"))) {
    snprintf(r->protocol, sizeof r->protocol, "an answer without a \"status\" string: '%s'", ex);
  } else {
    r->end = PG_PROC_ANSWERED;
    r->answer = a;
    p->calls++;
    capture(p, r);
    r->wall_ms = pg_now_ms() - p->sent_ms;
    return PG_OK;
  }
  cJSON_Delete(a);
  end_call(p, PG_PROC_PROTOCOL, r);
  return PG_OK;
}

/* ------------------------------------------------------------------ impl specs */

const char *pg_plugin_host_path(void) {
  static __thread char path[4096];
  const char *env = getenv("PHASEGATE_PLUGIN_HOST");
  if (env && *env) return env;
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n > 0) {
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (slash) {
      snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "phasegate-plugin-host");
      if (access(path, X_OK) == 0) return path;
    }
  }
#ifdef PG_PLUGIN_HOST_BUILD_PATH
  if (access(PG_PLUGIN_HOST_BUILD_PATH, X_OK) == 0) return PG_PLUGIN_HOST_BUILD_PATH;
#endif
  return NULL;
}

void pg_proc_argv_reset(struct pg_proc_argv *a) {
  for (int i = 0; i < 8; i++) free(a->strings[i]);
  memset(a, 0, sizeof *a);
}

/* 1 when COMMAND is one plain external command with arguments (no shell syntax, no
 * assignment or builtin first): `exec` can then replace the shell by it. */
static int simple_command(const char *cmd) {
  static const char *const builtins[] = {"exec", "cd", "eval", ".", "time", "command",
                                         "builtin", "ulimit", "umask", "set", "trap", "export",
                                         "readonly", "unset", "alias", "source", "wait", "exit",
                                         "return", "shift", ":", "!"};
  cmd += strspn(cmd, " \t");
  size_t first = strcspn(cmd, " \t");
  if (first == 0 || memchr(cmd, '=', first)) return 0;
  for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
    if (strlen(builtins[i]) == first && strncmp(cmd, builtins[i], first) == 0) return 0;
  for (const char *c = cmd; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          strchr(" \t/._-+=,:@%^", *c)))
      return 0;
  return 1;
}

void pg_proc_program_reset(struct pg_proc_program *prog) {
  free(prog->target);
  memset(prog, 0, sizeof *prog);
}

const char *pg_proc_kind_name(enum pg_proc_kind kind) {
  switch (kind) {
    case PG_PROC_COMMAND: return "worker";
    case PG_PROC_PLUGIN: return "plugin";
  }
  return "none";
}

int pg_proc_kind_from_name(const char *name, enum pg_proc_kind *kind) {
  if (name && strcmp(name, "worker") == 0) *kind = PG_PROC_COMMAND;
  else if (name && strcmp(name, "plugin") == 0) *kind = PG_PROC_PLUGIN;
  else return PG_EINVAL;
  return PG_OK;
}

int pg_proc_argv_build(const struct pg_proc_program *prog, const char *host, const char *mode,
                       int device_id, struct pg_proc_argv *a, struct pg_error *err) {
  memset(a, 0, sizeof *a);
  int n = 0;
  if (prog->kind == PG_PROC_COMMAND) {
    /* A shell that waits for the command would hold the protocol fds too: the worker
     * closing them would not end the protocol, and one more process would have to die.
     * A plain command replaces the shell (what bash -c does by itself; dash does not). */
    const char *cmd = prog->target;
    a->strings[n++] = simple_command(cmd) ? pg_path_fmt("exec %s", cmd) : pg_strdup(cmd);
    a->argv[0] = "/bin/sh", a->argv[1] = "-c", a->argv[2] = a->strings[0];
  } else if (prog->kind == PG_PROC_PLUGIN) {
    if (!host) host = pg_plugin_host_path();
    if (!host)
      return pg_error_set(err, PG_ENOENT, "phasegate-plugin-host was not found next to the "
                          "phasegate executable (set PHASEGATE_PLUGIN_HOST, or use "
                          "--fresh-process)");
    a->strings[n++] = pg_strdup(host);
    a->strings[n++] = pg_strdup(prog->target);
    a->argv[0] = a->strings[0], a->argv[1] = a->strings[1];
  } else {
    return pg_error_set(err, PG_EINTERNAL, "a persistent process of no known kind (%d)",
                        (int)prog->kind);
  }
  a->strings[n] = pg_path_fmt("PHASEGATE_MODE=%s", mode);
  a->strings[n + 1] = pg_path_fmt("PHASEGATE_DEVICE_ID=%d", device_id);
  a->env[0] = "PHASEGATE_WORKER=1";
  a->env[1] = "PHASEGATE_WORKER_FDS=" PG_PROC_FDS;
  a->env[2] = a->strings[n];
  a->env[3] = a->strings[n + 1];
  for (int i = 0; i < n + 2; i++)
    if (!a->strings[i]) {
      pg_proc_argv_reset(a);
      return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
  return PG_OK;
}

void pg__proc_to_sandbox(const struct pg_proc_result *r, struct pg_sandbox_result *sr) {
  sr->timed_out = r->end == PG_PROC_TIMEOUT;
  sr->exited = r->exited;
  sr->exit_code = r->exit_code;
  sr->signaled = r->signaled && !sr->timed_out;
  sr->signo = r->signo;
  sr->wall_ms = r->wall_ms;
  free(sr->err);
  sr->err = r->captured ? pg_strdup(r->captured) : NULL;
  sr->err_len = r->captured ? r->captured_len : 0;
  sr->err_truncated = r->captured_truncated;
  pg_sandbox_result_scan(sr);
}
