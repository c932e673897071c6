/* phasegate runner — `phasegate serve`: a daemon that owns warm impl processes across
 * CTest tests (docs/design.md §6 "Under CTest", §9, §10; docs/serve.md), and the client
 * side a `phasegate run` process uses to borrow one of them.
 *
 * Lease, never proxy. A client connects to <control>/serve.sock and asks for a process
 * for (impl spec, mode, device); the daemon hands it an idle warm one (or starts one
 * with pg_proc_start) by passing the process's protocol socket over SCM_RIGHTS. The
 * client then talks to the worker directly with pg_proc_send / pg_proc_wait, exactly
 * as it would to a process it started itself, and gives it back afterwards: healthy
 * with pg_serve_release(ok = 1), broken through pg_proc_wait / pg_proc_stop, which end
 * it through the daemon (struct pg_proc's remote_end hook) and report how it ended
 * (exit code, signal) as for a process of its own. The daemon never sees the calls.
 *
 * The process is started with the client's environment and working directory, so a
 * leased process is the process the client would have started; processes are keyed by
 * (impl spec, mode, device, address-space limit, working directory, environment) and
 * replaced when what they run changes on disk (the plugin .so and host, or any word
 * of a worker command that names a regular file).
 *
 * Not for: deciding anything about a call (the run side classifies), or talking to a
 * daemon of another user or another machine (a unix socket in a 0700 directory only).
 */
#ifndef PHASEGATE_IMPL_SERVE_CLIENT_H
#define PHASEGATE_IMPL_SERVE_CLIENT_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "impl/proc.h"
#include "phasegate/error.h"

#define PG_SERVE_PROTOCOL 2          /* version of the control protocol (docs/serve.md) */
#define PG_SERVE_SOCK "serve.sock"   /* names inside the control directory */
#define PG_SERVE_PID "serve.pid"
#define PG_SERVE_LOCK "serve.lock"
#define PG_SERVE_LOG "serve.log"
#define PG_SERVE_WORKERS "workers"   /* the warm processes' logs */
#define PG_SERVE_ANSWER_MS 1000      /* how long a ping / status / stop answer may take */

/* ------------------------------------------------------------------ client */

/* Connects to the daemon of control_dir and checks that it answers (a ping) in the
 * protocol this build speaks. PG_OK: *conn is the connection (close it with
 * pg_serve_disconnect). PG_ENOTFOUND: no daemon to use — control_dir NULL or empty, no
 * such directory, no socket, a stale socket nobody listens on (all answered at once,
 * well under 50 ms), or a daemon that does not answer within PG_SERVE_ANSWER_MS or
 * speaks another protocol; run standalone then. *conn is -1 on any failure.
 * One connection serves one thread; it may hold several leases at once. */
int pg_serve_connect(const char *control_dir, int *conn, struct pg_error *err);

/* Leases a process for (program, mode, device): a worker command or a plugin .so,
 * started (when no idle one fits) as pg_proc_start would start it here — this
 * process's environment and working directory, rlimit_as, start_timeout_s — but by the
 * daemon, which keeps it after the lease. Waits while every process of the key is
 * leased to other clients (at most --slots per key).
 * PG_OK: *p (initialised here) is the process: pg_proc_send / pg_proc_wait work on it
 *   unchanged; p->calls = calls it served before (0: it has served none, a fresh
 *   start); p->start_ms = what its start cost. End the lease with pg_serve_release
 *   (healthy) or let pg_proc_wait / pg_proc_stop end it (broken): the daemon kills and
 *   reaps it and the exit fields of the pg_proc_result say how it ended.
 * PG_ENOTFOUND: the daemon is gone (EOF): disconnect and run standalone.
 * PG_ELIMIT: this connection already holds every slot of the key (waiting would never
 *   end): run this one standalone.
 * Any other code is what pg_proc_start would have returned for the same start, with
 *   err and, for PG_EIMPL, *start_fail (end, exit fields, protocol, captured) filled
 *   as it would have filled them; the process is gone and *p stopped. */
int pg_serve_lease(int conn, const struct pg_proc_program *prog, const char *mode, int device,
                   uint64_t rlimit_as, double start_timeout_s, struct pg_proc *p,
                   struct pg_proc_result *start_fail, struct pg_error *err);

/* Ends the lease of p. ok = 1: the process answered its calls properly and goes back
 * to the daemon's idle set; ok = 0: it must not serve again (the daemon kills its
 * group at once). Either way *p is left stopped (pg_proc_stop on it is a no-op) and
 * the client's descriptors are closed; the log file stays the daemon's. Safe on a
 * process that already ended. PG_OK, or PG_ENOTFOUND when the daemon is gone: then
 * the process has been killed here (the call it served is still valid). */
int pg_serve_release(int conn, struct pg_proc *p, int ok);

/* Closes the connection. Leases still held end as if their client had died: the
 * daemon kills those processes. Safe on -1. */
void pg_serve_disconnect(int conn);

/* One control request ({"op": op}, e.g. "ping", "status", "stop") and its answer,
 * within timeout_ms (<= 0: no limit). PG_OK: *answer owned by the caller (cJSON_Delete).
 * PG_ENOTFOUND: EOF or no answer in time. */
int pg_serve_request(int conn, const char *op, int timeout_ms, cJSON **answer,
                     struct pg_error *err);

/* ------------------------------------------------------------------ the wire */

/* What both ends of the control protocol share (impl/serve_wire.c): socket addresses,
 * JSON lines with an optional fd, numbers read defensively, fingerprints of what a
 * process runs, and the environment entries that are phasegate's own. */
#define PG_SERVE_MAX_LINE (1u << 20) /* the longest control line either end accepts */
struct sockaddr_un;
uint64_t pg_serve_program_fp(enum pg_proc_kind kind, const char *target, const char *cwd,
                              const char *host);
uint64_t pg_serve_exe_fp(void);
int pg_serve_env_is_ours(const char *e);
uint64_t pg_serve_env_hash(char **env, size_t n);
void pg_serve_free_strv(char **v);
int pg_serve_current_umask(void);
int pg_serve_pid_gone(int pid);
void pg_serve_kill_foreign(int pid, int pidfd);
int pg_serve_sock_addr(const char *dir, struct sockaddr_un *sa, int *dirfd);
int pg_serve_recv_json(int fd, int timeout_ms, cJSON **out, int *got_fd);
double pg_serve_num(const cJSON *o, const char *key, double dflt);
/* The number at key as an integer in [lo, hi] (the nearest bound when outside); dflt
 * when there is no number. */
int64_t pg_serve_int(const cJSON *o, const char *key, int64_t dflt, int64_t lo, int64_t hi);
const char *pg_serve_str(const cJSON *o, const char *key);
int pg_serve_is_true(const cJSON *o, const char *key);
int pg_serve_status_ok(const cJSON *a);
int pg_serve_connect_ping(const char *dir, int *conn, cJSON **ping, struct pg_error *err);

#endif
