/* phasegate runner — persistent impl processes: start once, serve many calls
 * (docs/design.md §6 "Persistent by default", "Worker protocol, version 1").
 *
 * One struct pg_proc is one process (a `worker:` command, or the plugin host) that
 * speaks the worker protocol on a private socket: the runner's end is `sock`, the
 * process sees the other end as fds 3 and 4 (PHASEGATE_WORKER_FDS=3,4), one JSON
 * object per line each way. Its stdout and stderr go to a log file, never to the
 * protocol, and the bytes a call added to that log are the call's captured output.
 *
 * The process is started with posix_spawn (an exec, never a plain fork of the
 * threaded runner: no device context or lock is ever inherited), in its own process
 * group, stdin from /dev/null. Anything but a well-formed answer with the expected
 * id — a timeout, EOF, a line that is not JSON, a wrong id — ends the process: its
 * whole group is killed and reaped, and the caller starts a fresh one for the next
 * call. Not for: deciding what a failure means (run/ classifies the facts here).
 */
#ifndef PHASEGATE_IMPL_PROC_H
#define PHASEGATE_IMPL_PROC_H

#include <cjson/cJSON.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>

#include "impl/sandbox.h"
#include "phasegate/error.h"

#define PG_PROC_FDS "3,4"          /* PHASEGATE_WORKER_FDS as the process sees it */
#define PG_PROC_CAPTURE_MAX (64u * 1024u) /* captured log bytes kept per call (the tail) */

struct pg_proc_result;

struct pg_proc_spec {
  const char *const *argv;     /* argv[0] is executed as given (a path) */
  const char *const *env_add;  /* "NAME=value" entries set in the process (NULL-ended) */
  const char *log_dir;         /* where the log file goes; NULL: $TMPDIR or /tmp */
  const char *log_tag;         /* part of the log file's name ("sim-0"), may be NULL */
  uint64_t rlimit_as;          /* address-space limit in bytes; 0 = inherited */
  double start_timeout_s;      /* how long the handshake may take; <= 0: 120 s */
};
/* An env_add entry PHASEGATE_DIE_WITH=<pid of the caller> makes the process die with the
 * caller, kill -9 included (PR_SET_PDEATHSIG: the plugin host sets it itself, any other
 * program is started through the host's exec shim; docs/runner.md "Nothing outlives
 * the runner"). It fires when the spawning *thread* ends: the pool spawns from the
 * run's main thread. The pool adds the entry; `phasegate serve` does not (its processes are
 * started from short-lived threads, and the daemon ends them itself). Any other
 * PHASEGATE_DIE_WITH entry, inherited or added, is dropped. */

struct pg_proc {
  int pid;                     /* 0: no process */
  char *(*quote)(const char *captured); /* the impl's barrier for a line it wrote that a
                                 message quotes (struct pg_impl's quote), or NULL */
  int sock;                    /* the runner's end of the protocol socket */
  int log_fd;                  /* read end of the log file */
  char *log_path;              /* owned */
  char *buf;                   /* bytes read but not yet consumed (after a line) */
  size_t len, cap;
  int64_t next_id;
  int calls;                   /* calls answered since the start */
  double start_ms;             /* how long start-up + handshake took */
  uint64_t log_mark;           /* log size when the current call was sent */
  double sent_ms;
  int handshake_pending;       /* spawned, handshake not read yet (pg_proc_spawn) */
  int shm;                     /* its handshake offered protocol v1.1 ("shm": 1): calls
                                  may pass their tensors in call memory
                                  (docs/worker_protocol.md "Version 1.1") */
  double handshake_timeout_s;
  char what[256];              /* the command, for messages */
  char tag[PG_PROC_TAG_MAX];   /* its PHASEGATE_PROC_TAG entry (sandbox.h): found and killed
                                  with the group when it ends, setsid() or not */
  /* A process this runner did not start (leased from `phasegate serve`) cannot be
   * waited for here: when set, ending it calls this instead of waitpid(). It must
   * kill the process group, fill the exit fields of r (when r is not NULL) with how the
   * process ended, and is called at most once per process. */
  void (*remote_end)(void *ctx, struct pg_proc *p, int wait_ms, struct pg_proc_result *r);
  void *remote_ctx;
  int pidfd;                   /* a leased process: its pidfd (sandbox.h), -1 if none; tells
                                  whether pid is still its own before a kill */
};

/* How a wait (or a start) ended. */
enum pg_proc_end {
  PG_PROC_ANSWERED = 0, /* a line with the expected id arrived: see answer */
  PG_PROC_TIMEOUT,      /* nothing within the timeout: the group was killed */
  PG_PROC_EXITED,       /* EOF on the socket: the process ended (see exit fields) */
  PG_PROC_PROTOCOL      /* a line that broke the protocol: the group was killed */
};

struct pg_proc_result {
  enum pg_proc_end end;
  cJSON *answer;               /* ANSWERED: the parsed line (owned) */
  int exited, exit_code;       /* how the process ended (EXITED, TIMEOUT, PROTOCOL) */
  int signaled, signo;         /* signaled by something other than our kill */
  char protocol[384];          /* PROTOCOL: what was wrong, with an excerpt of the line */
  char *captured;              /* the log bytes written during the call (tail), owned */
  size_t captured_len;
  int captured_truncated;
  double wall_ms;              /* from send to answer (or to the end) */
};

void pg_proc_init(struct pg_proc *p);

/* 1 when the log at log_path exists and holds bytes: only then is it kept when a
 * process is stopped with keep_log, and named in messages. */
int pg_proc_log_has_bytes(const char *log_path);
void pg_proc_result_init(struct pg_proc_result *r);
void pg_proc_result_reset(struct pg_proc_result *r);

/* Starts the process and waits for its handshake line {"phasegate_worker": 1} (with
 * "shm": 1 when it offers protocol v1.1: p->shm).
 * PG_OK: running, p->start_ms set. A process that ends, times out or writes anything
 * else first is killed and reported in `r` (end, exit fields, captured log) with
 * PG_EIMPL and err naming the command and the protocol. PG_EIO/PG_ENOMEM (err):
 * the runner could not set it up. On any failure p is left stopped. */
int pg_proc_start(struct pg_proc *p, const struct pg_proc_spec *s, struct pg_proc_result *r,
                  struct pg_error *err);

/* pg_proc_start in two steps, so a process can start while the runner does other
 * work: spawn returns at once (PG_OK, or PG_EIO/PG_ENOMEM), handshake waits for the
 * handshake line (same results as pg_proc_start; a no-op when it was read already). */
int pg_proc_spawn(struct pg_proc *p, const struct pg_proc_spec *s, struct pg_error *err);
int pg_proc_handshake(struct pg_proc *p, struct pg_proc_result *r, struct pg_error *err);

/* Sends one request: `request` gets "id" added (its id is returned in *id) and goes
 * out as one line; `attach_fd` >= 0 is passed along with it (SCM_RIGHTS). A process
 * that is gone is not an error here: the following wait reports it. */
int pg_proc_send(struct pg_proc *p, cJSON *request, int attach_fd, int64_t *id,
                 struct pg_error *err);

/* posix_spawnattr_init with the signal state a fresh process must start with (nothing
 * blocked, every signal at its default) plus `flags` (POSIX_SPAWN_SETPGROUP, …). */
void pg_spawn_attr_init(posix_spawnattr_t *at, short flags);

/* recv() that also takes the descriptors passed with the bytes (SCM_RIGHTS, at most 4
 * per call; MSG_CMSG_CLOEXEC): each goes to keep_fd(ctx, fd), which owns it. Returns
 * what recvmsg returns. Header-only: the plugin host uses it too. */
static inline ssize_t pg__recv_fds(int fd, char *buf, size_t n, void (*keep_fd)(void *, int),
                                   void *ctx) {
  struct iovec iov = {buf, n};
  char ctl[CMSG_SPACE(sizeof(int) * 4)];
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof ctl;
  ssize_t got = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
  if (got < 0) return got;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < nfd; i++) {
      int r;
      memcpy(&r, CMSG_DATA(c) + i * sizeof(int), sizeof r);
      keep_fd(ctx, r);
    }
  }
  return got;
}

/* Facts of a call that got no proper answer, as a sandbox result (timeout, signal,
 * exit code, captured log), so the adapters classify it as they classify a child. */
void pg__proc_to_sandbox(const struct pg_proc_result *r, struct pg_sandbox_result *sr);

/* Writes o as one line on a socket (attach_fd >= 0 rides along with SCM_RIGHTS, with
 * the first byte); a socket that stays full for timeout_ms (< 0: forever) counts as
 * failed. 0 or -1 (the peer is gone, out of memory). Never raises SIGPIPE. */
int pg_proc_send_line(int fd, const cJSON *o, int attach_fd, int timeout_ms);
/* One sendmsg() of n bytes on sock, with attach_fd passed along (SCM_RIGHTS) when >= 0;
 * MSG_NOSIGNAL. What sendmsg returns. */
ssize_t pg__send_with_fd(int sock, const void *buf, size_t n, int attach_fd);

/* Waits for the answer to `id` (at most timeout_s; <= 0: no limit) and fills r.
 * Whenever r->end is not ANSWERED the process has been killed and reaped. */
int pg_proc_wait(struct pg_proc *p, int64_t id, double timeout_s, struct pg_proc_result *r,
                 struct pg_error *err);

/* Ends the process: EOF on its socket, up to grace_s for it to exit, then SIGKILL to
 * its whole group (background children included), reaped. keep_log: leave the log
 * file on disk (its path was shown to the user). Safe on a stopped process. */
void pg_proc_stop(struct pg_proc *p, double grace_s, int keep_log);

/* What a persistent process runs: the adapter's ops-table hook (adapter.h `process`)
 * says it once, as data, and the pool, `phasegate serve` and its wire carry it so. */
enum pg_proc_kind {
  PG_PROC_COMMAND = 1, /* /bin/sh -c TARGET: a `worker:` command (python: builds one) */
  PG_PROC_PLUGIN = 2   /* the plugin host (pg_plugin_host_path) on the .so TARGET */
};
struct pg_proc_program {
  enum pg_proc_kind kind;
  char *target; /* owned: pg_proc_program_reset */
};
void pg_proc_program_reset(struct pg_proc_program *prog);
/* "worker" / "plugin": the kind's name on the serve wire and in messages ("none" for a
 * value of no kind). */
const char *pg_proc_kind_name(enum pg_proc_kind kind);
/* The kind a wire name stands for: PG_OK, or PG_EINVAL for any other name. */
int pg_proc_kind_from_name(const char *name, enum pg_proc_kind *kind);

/* Builds the argv and environment of a program: a command runs as /bin/sh -c COMMAND,
 * a plugin runs the plugin host (`host`, or pg_plugin_host_path() when NULL) on the
 * .so; both with PHASEGATE_WORKER=1, PHASEGATE_WORKER_FDS, PHASEGATE_MODE and
 * PHASEGATE_DEVICE_ID. Every string is a copy that lives in `a` until
 * pg_proc_argv_reset. */
struct pg_proc_argv {
  const char *argv[8];
  const char *env[8];
  char *strings[8];
};
int pg_proc_argv_build(const struct pg_proc_program *prog, const char *host, const char *mode,
                       int device_id, struct pg_proc_argv *a, struct pg_error *err);
void pg_proc_argv_reset(struct pg_proc_argv *a);

/* Where phasegate-plugin-host is: $PHASEGATE_PLUGIN_HOST, else next to the running
 * executable, else the build tree's copy (compile-time path). NULL when none exists. */
const char *pg_plugin_host_path(void);

/* 1 while the process can take a call; one that ended or hung up since its last
 * call is reaped (and 0 returned). */
int pg_proc_alive(struct pg_proc *p);

#endif
