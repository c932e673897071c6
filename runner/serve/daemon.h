/* phasegate runner — internals of the serve room shared by its files (serve.h for the
 * API, docs/serve.md for the protocol): the daemon's state (daemon.c: pools, leases,
 * connections; loop.c: setup, the poll loop, shutdown) and the start-stop side
 * (ctl.c). The wire helpers both ends use are the impl room's (impl/serve_client.h).
 * Internal to runner/serve/. */
#ifndef PHASEGATE_SERVE_DAEMON_H
#define PHASEGATE_SERVE_DAEMON_H

#include <pthread.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "serve/serve.h"

#define SERVE_CHECK_MS 2000      /* how often the control directory is checked */
#define SERVE_GRACE_MS 1000      /* EOF → SIGKILL for a retired or stopped worker */
#define SERVE_READY_MS 30000     /* how long a detached start waits for readiness */
#define SERVE_LOCK_MS 60000      /* how long a starter waits for serve.lock */

enum wstate { W_STARTING, W_IDLE, W_LEASED, W_DYING };

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

/* Processes of one key: (kind, target, mode, device, rlimit_as, cwd, umask, environment,
 * host). */
struct pool {
  struct pool *next;
  enum pg_proc_kind kind;
  char *target, *mode, *cwd, *host;
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
  struct pg_proc_program prog;
  char *cwd, *host, *log_dir;
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

void pg__serve_dlog(struct daemon *d, const char *fmt, ...);
void pg__serve_answer(struct daemon *d, struct conn *c, cJSON *o, int attach_fd);
void pg__serve_kill_group(struct wproc *w);
void pg__serve_w_remove(struct wproc *w);
void pg__serve_answer_end(struct daemon *d, struct conn *c, const struct wproc *w, int got);
void pg__serve_w_retire(struct daemon *d, struct wproc *w, const char *why);
int pg__serve_start_proc(struct daemon *d, struct pool *pl, double timeout_s, struct pg_error *err);
int pg__serve_pool_alive(const struct pool *pl, const struct daemon *d, enum wstate only, int any);
void pg__serve_job_done(struct daemon *d, struct job *j);
struct pool *pg__serve_pool_get(struct daemon *d, enum pg_proc_kind kind, const char *target,
                                const char *mode, int device,
                             uint64_t rlimit_as, const char *cwd, int umask_, char **env,
                             size_t n_env, const char *host);
void pg__serve_pool_refresh(struct daemon *d, struct pool *pl, uint64_t fp);
void pg__serve_conn_lines(struct daemon *d, struct conn *c);
void pg__serve_conn_close(struct daemon *d, struct conn *c);
void pg__serve_conn_read(struct daemon *d, struct conn *c);
void pg__serve_on_accept(struct daemon *d);
void pg__serve_reap_all(struct daemon *d);
void pg__serve_collect(struct daemon *d);

int pg__serve_prepare_dir(const char *dir, struct pg_error *err);

#endif
